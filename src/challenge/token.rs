//! The signed token behind both the clearance cookie and the challenge
//! nonce: a fixed 75-byte record, HMAC-SHA256 over its first 43 bytes,
//! written as 100 base64url characters (no padding, so the text is
//! canonical: one record, one text).
//!
//! | bytes | field |
//! |---|---|
//! | 0 | kind and version: `C` a clearance cookie, `N` a nonce (version 1) |
//! | 1 | the nonce's difficulty in leading zero bits (0 in a cookie) |
//! | 2..10 | a cookie's expiry, a nonce's issue time: Unix seconds, big-endian |
//! | 10 | the client prefix length, counted in IPv6 bits (an IPv4 /24 is 120); 255: no address |
//! | 11..27 | the client prefix: the address as IPv6 (IPv4 mapped), host bits zeroed |
//! | 27..43 | the first 16 bytes of SHA-256 of the User-Agent |
//! | 43..75 | HMAC-SHA256 under one of the keys, of a domain tag and bytes 0..43 |
//!
//! The prefix and the User-Agent hash are carried in the clear (and
//! covered by the MAC) so that a rejection can say why: another address,
//! another User-Agent. Nothing here allocates.

use std::net::IpAddr;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::Mac;
use sha2::{Digest, Sha256};

use super::keys::{HmacSha256, Key, Keys};
use crate::net::canonical;

/// Bytes of a token record.
pub(crate) const TOKEN_BYTES: usize = 75;
/// Characters of a token's text.
pub const TOKEN_TEXT: usize = 100;
const SIGNED: usize = 43;
/// Keeps a token's MAC from ever equalling some other protocol's MAC under
/// the same key.
const DOMAIN: &[u8] = b"edgeguard-token-v1\0";
const NO_ADDRESS: u8 = 255;

/// The kind of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Cookie = b'C' as isize,
    Nonce = b'N' as isize,
}

/// What binds a token to one client: its address prefix and a hash of its
/// User-Agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    prefix_len: u8,
    prefix: [u8; 16],
    ua: [u8; 16],
}

impl Binding {
    /// The binding of a client at `addr` (none: a unix socket) sending
    /// `user_agent`, with IPv4 addresses cut to `v4_bits` and IPv6 to
    /// `v6_bits`. An IPv4-mapped IPv6 address counts as the IPv4 one.
    pub fn new(addr: Option<IpAddr>, user_agent: &[u8], v4_bits: u8, v6_bits: u8) -> Binding {
        let (prefix_len, prefix) = match addr.map(canonical) {
            None => (NO_ADDRESS, [0; 16]),
            Some(IpAddr::V4(a)) => {
                let bits = 96 + v4_bits.min(32);
                (bits, mask(a.to_ipv6_mapped().octets(), bits))
            }
            Some(IpAddr::V6(a)) => {
                let bits = v6_bits.min(128);
                (bits, mask(a.octets(), bits))
            }
        };
        let digest = Sha256::digest(user_agent);
        let mut ua = [0; 16];
        ua.copy_from_slice(&digest[..16]);
        Binding {
            prefix_len,
            prefix,
            ua,
        }
    }
}

fn mask(octets: [u8; 16], bits: u8) -> [u8; 16] {
    let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    (u128::from_be_bytes(octets) & m).to_be_bytes()
}

/// Why a token was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rejection {
    /// Not a token's text: wrong length, not base64url, another kind.
    Malformed,
    /// The MAC matches none of the keys: forged, tampered with, or signed
    /// by a key no longer listed.
    Mac,
    /// Past its expiry (a cookie) or its validity (a nonce), or expiring
    /// later than the lifetime in force allows.
    Expired,
    /// Issued to another address prefix.
    Address,
    /// Issued to another User-Agent.
    UserAgent,
    /// A nonce whose answer does not have the leading zero bits asked for.
    Work,
}

impl Rejection {
    /// Every reason, in the order of [`Rejection::index`].
    pub const ALL: [Rejection; 6] = [
        Rejection::Malformed,
        Rejection::Mac,
        Rejection::Expired,
        Rejection::Address,
        Rejection::UserAgent,
        Rejection::Work,
    ];

    /// The name in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Malformed => "malformed",
            Rejection::Mac => "mac",
            Rejection::Expired => "expired",
            Rejection::Address => "address",
            Rejection::UserAgent => "user_agent",
            Rejection::Work => "work",
        }
    }

    /// A dense index, for tables of counts.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A token whose MAC verified.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opened {
    pub(crate) difficulty: u8,
    pub(crate) time: u64,
    binding: Binding,
}

impl Opened {
    /// Whether the token was issued to this client; why not otherwise.
    pub(crate) fn check_binding(&self, client: &Binding) -> Result<(), Rejection> {
        if self.binding.prefix_len != client.prefix_len || self.binding.prefix != client.prefix {
            return Err(Rejection::Address);
        }
        if self.binding.ua != client.ua {
            return Err(Rejection::UserAgent);
        }
        Ok(())
    }
}

fn mac_of(key: &Key, record: &[u8]) -> HmacSha256 {
    let mut mac = key.mac();
    mac.update(DOMAIN);
    mac.update(&record[..SIGNED]);
    mac
}

/// Signs a token with the signing key and writes its text.
pub(crate) fn seal(
    kind: Kind,
    difficulty: u8,
    time: u64,
    binding: &Binding,
    keys: &Keys,
) -> [u8; TOKEN_TEXT] {
    let mut record = [0u8; TOKEN_BYTES];
    record[0] = kind as u8;
    record[1] = difficulty;
    record[2..10].copy_from_slice(&time.to_be_bytes());
    record[10] = binding.prefix_len;
    record[11..27].copy_from_slice(&binding.prefix);
    record[27..43].copy_from_slice(&binding.ua);
    let tag = mac_of(keys.signing(), &record).finalize().into_bytes();
    record[SIGNED..].copy_from_slice(&tag);
    let mut text = [0u8; TOKEN_TEXT];
    let n = URL_SAFE_NO_PAD
        .encode_slice(record, &mut text)
        .expect("75 bytes are 100 characters");
    debug_assert_eq!(n, TOKEN_TEXT);
    text
}

/// Decodes a token's text and verifies its MAC against every key, in
/// constant time per key (`verify_slice`).
pub(crate) fn open(text: &[u8], kind: Kind, keys: &Keys) -> Result<Opened, Rejection> {
    if text.len() != TOKEN_TEXT {
        return Err(Rejection::Malformed);
    }
    let mut record = [0u8; TOKEN_BYTES];
    match URL_SAFE_NO_PAD.decode_slice(text, &mut record) {
        Ok(TOKEN_BYTES) => {}
        _ => return Err(Rejection::Malformed),
    }
    if record[0] != kind as u8 {
        return Err(Rejection::Malformed);
    }
    let tag = &record[SIGNED..];
    if !keys
        .all()
        .iter()
        .any(|k| mac_of(k, &record).verify_slice(tag).is_ok())
    {
        return Err(Rejection::Mac);
    }
    let mut time = [0u8; 8];
    time.copy_from_slice(&record[2..10]);
    let mut binding = Binding {
        prefix_len: record[10],
        prefix: [0; 16],
        ua: [0; 16],
    };
    binding.prefix.copy_from_slice(&record[11..27]);
    binding.ua.copy_from_slice(&record[27..43]);
    Ok(Opened {
        difficulty: record[1],
        time: u64::from_be_bytes(time),
        binding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    pub(crate) fn keys(lines: &[&str]) -> Keys {
        Keys::parse(Path::new("secret"), lines.join("\n").as_bytes()).unwrap()
    }

    #[test]
    fn seal_then_open_round_trips_and_any_byte_flip_is_refused() {
        let k = keys(&[&"ab".repeat(32)]);
        let b = Binding::new(Some("192.0.2.77".parse().unwrap()), b"UA", 24, 64);
        let text = seal(Kind::Cookie, 0, 1_800_000_000, &b, &k);
        let o = open(&text, Kind::Cookie, &k).unwrap();
        assert_eq!(o.time, 1_800_000_000);
        assert_eq!(o.check_binding(&b), Ok(()));
        assert_eq!(
            open(&text, Kind::Nonce, &k).unwrap_err(),
            Rejection::Malformed
        );
        for i in 0..TOKEN_TEXT {
            let mut t = text;
            t[i] = if t[i] == b'A' { b'B' } else { b'A' };
            let e = open(&t, Kind::Cookie, &k).unwrap_err();
            assert!(
                matches!(e, Rejection::Mac | Rejection::Malformed),
                "{i}: {e:?}"
            );
        }
    }

    #[test]
    fn bindings_cut_addresses_to_their_prefix() {
        let b = |a: &str, ua: &[u8]| Binding::new(Some(a.parse().unwrap()), ua, 24, 64);
        assert_eq!(b("192.0.2.1", b"x"), b("192.0.2.254", b"x"));
        assert_ne!(b("192.0.2.1", b"x"), b("192.0.3.1", b"x"));
        assert_eq!(b("::ffff:192.0.2.1", b"x"), b("192.0.2.9", b"x"));
        assert_eq!(b("2001:db8:1:2::1", b"x"), b("2001:db8:1:2:ffff::9", b"x"));
        assert_ne!(b("2001:db8:1:2::1", b"x"), b("2001:db8:1:3::1", b"x"));
        assert_ne!(b("192.0.2.1", b"x"), b("192.0.2.1", b"y"));
        // An IPv6 /0 is not an IPv4 /0: families stay apart.
        let v4 = Binding::new(Some("192.0.2.1".parse().unwrap()), b"x", 0, 0);
        let v6 = Binding::new(Some("2001:db8::1".parse().unwrap()), b"x", 0, 0);
        assert_ne!(v4, v6);
        assert_ne!(Binding::new(None, b"x", 24, 64), v6);
    }
}
