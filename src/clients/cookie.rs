//! The memory's cookie, `edgeguard_v`: set on answers to navigations,
//! counted when it comes back.
//!
//! A browser keeps the cookies a site sets and sends them back; a crawler
//! that copied a browser's head usually does not. The cookie carries no
//! identity: its value is the second it was issued and a keyed MAC of
//! that second (the memory's [`cookie_key`](super::ClientMemory::cookie_key)),
//! so a client cannot make one up, and every client gets the same kind of
//! value. It is not a credential: nothing is allowed because of it, it
//! only counts as "returned" in the client's record. Never logged by
//! value: the request recorder logs every cookie's value as its length.

use std::hash::Hasher;

use siphasher::sip::SipHasher13;

use super::key::HashKey;

/// The cookie's name.
pub const NAME: &str = "edgeguard_v";
/// Its lifetime, seconds (30 days): long enough that a returning browser
/// still has it, short enough that it is not a lasting identifier.
pub const MAX_AGE: u32 = 30 * 86_400;
/// The longest `Set-Cookie` value [`set_cookie`] writes.
pub const SET_COOKIE_ROOM: usize = 128;

/// The MAC of an issue time, as 16 hex digits.
fn mac(key: &HashKey, issued_s: u64) -> [u8; 16] {
    let mut h = SipHasher13::new_with_keys(key.0[0], key.0[1]);
    h.write(NAME.as_bytes());
    h.write_u64(issued_s);
    let m = h.finish();
    std::array::from_fn(|i| b"0123456789abcdef"[((m >> (60 - 4 * i)) & 15) as usize])
}

/// Writes the `Set-Cookie` value of a cookie issued at `now_s` into `out`
/// (`Secure` on a request that came over TLS) and returns its length.
pub fn set_cookie(
    key: &HashKey,
    now_s: u64,
    secure: bool,
    out: &mut [u8; SET_COOKIE_ROOM],
) -> usize {
    let mut digits = [0u8; 20];
    let mut n = now_s;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let parts: [&[u8]; 6] = [
        NAME.as_bytes(),
        b"=",
        &digits[at..],
        b".",
        &mac(key, now_s),
        if secure {
            b"; Max-Age=2592000; Path=/; HttpOnly; SameSite=Lax; Secure"
        } else {
            b"; Max-Age=2592000; Path=/; HttpOnly; SameSite=Lax"
        },
    ];
    let mut len = 0;
    for p in parts {
        out[len..len + p.len()].copy_from_slice(p);
        len += p.len();
    }
    len
}

/// What the request recorder logs in place of a cookie that checked
/// ([`valid`]) when the request was recorded: the log keeps no value, and
/// replay counts this one as returned, any other as not.
pub const RECORDED_VALID: &[u8] = b"[client cookie ok]";

/// Whether `value` (one `edgeguard_v` value a request sent) is a cookie
/// this memory issued within [`MAX_AGE`] of `now_s`.
pub fn valid(key: &HashKey, value: &[u8], now_s: u64) -> bool {
    let Some(dot) = value.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (t, m) = (&value[..dot], &value[dot + 1..]);
    if t.is_empty() || t.len() > 19 || !t.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let issued = t.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0'));
    issued <= now_s.saturating_add(60)
        && now_s.saturating_sub(issued) <= u64::from(MAX_AGE)
        && m == mac(key, issued)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_cookies_verify_and_others_do_not() {
        let key = HashKey([1, 2]);
        let mut out = [0u8; SET_COOKIE_ROOM];
        let len = set_cookie(&key, 1_765_000_000, true, &mut out);
        let text = std::str::from_utf8(&out[..len]).unwrap();
        assert!(text.starts_with("edgeguard_v=1765000000."), "{text}");
        assert!(
            text.ends_with("; Path=/; HttpOnly; SameSite=Lax; Secure"),
            "{text}"
        );
        let value = text["edgeguard_v=".len()..]
            .split(';')
            .next()
            .unwrap()
            .as_bytes();
        assert!(valid(&key, value, 1_765_000_000));
        assert!(valid(&key, value, 1_765_000_000 + u64::from(MAX_AGE)));
        assert!(!valid(&key, value, 1_765_000_001 + u64::from(MAX_AGE)));
        assert!(!valid(&key, value, 1_764_999_000), "issued in the future");
        assert!(
            !valid(&HashKey([1, 3]), value, 1_765_000_000),
            "another key"
        );
        let mut forged = value.to_vec();
        forged[3] = b'9';
        assert!(!valid(&key, &forged, 1_765_000_000));
        for bad in [&b""[..], b"1765000000", b".abc", b"x.0123456789abcdef"] {
            assert!(!valid(&key, bad, 1_765_000_000), "{bad:?}");
        }
        let plain = set_cookie(&key, 5, false, &mut out);
        assert!(std::str::from_utf8(&out[..plain])
            .unwrap()
            .ends_with("SameSite=Lax"));
        assert!(len <= SET_COOKIE_ROOM);
    }
}
