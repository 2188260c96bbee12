//! The signed token behind the clearance cookie, the challenge nonce, the
//! no-JavaScript ticket and the return after a solve: a fixed 78-byte
//! record, HMAC-SHA256 over its first 46 bytes, written as 104 base64url
//! characters (no padding, so the text is canonical: one record, one text).
//!
//! | bytes | field |
//! |---|---|
//! | 0 | kind: `C` clearance cookie, `N` nonce, `T` no-JS ticket, `R` return |
//! | 1 | proof: `W` work (the page's script), `S` wait (no JavaScript); 0 in `R` |
//! | 2 | level: the difficulty in leading zero bits (work) or the wait in seconds |
//! | 3 | attempts: solves so far that came back without the cookie |
//! | 4..12 | a cookie's expiry, the others' issue time: Unix seconds, big-endian |
//! | 12 | the client prefix length, counted in IPv6 bits (an IPv4 /24 is 120); 255: no address |
//! | 13..29 | the client prefix: the address as IPv6 (IPv4 mapped), host bits zeroed |
//! | 29..37 | the first 8 bytes of SHA-256 of the User-Agent |
//! | 37..45 | the first 8 bytes of SHA-256 of the TLS client's stable JA4 parts |
//! | 45 | flags: bit 0, bound to a TLS client (bytes 37..45 hold its hash) |
//! | 46..78 | HMAC-SHA256 under one of the keys, of a domain tag and bytes 0..46 |
//!
//! The binding is carried in the clear (and covered by the MAC) so that a
//! rejection can say why: another address, another User-Agent, another TLS
//! stack. Eight bytes of a hash are enough to tell two clients apart: the
//! MAC, not the hash, is what a forger has to beat, and finding another
//! User-Agent with the same 64-bit prefix costs 2^64 hashes. Nothing here
//! allocates.

use std::net::IpAddr;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::Mac;
use sha2::{Digest, Sha256};

use super::keys::{HmacSha256, Key, Keys};
use crate::features::TlsFacts;
use crate::net::canonical;

/// Bytes of a token record.
pub(crate) const TOKEN_BYTES: usize = 78;
/// Characters of a token's text.
pub const TOKEN_TEXT: usize = 104;
const SIGNED: usize = 46;
/// Keeps a token's MAC from ever equalling some other protocol's MAC under
/// the same key, or a version 1 token's (which had another layout).
const DOMAIN: &[u8] = b"edgeguard-token-v2\0";
const NO_ADDRESS: u8 = 255;
const FLAG_TLS: u8 = 1;

/// The kind of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The clearance cookie.
    Cookie = b'C' as isize,
    /// The proof of work's nonce, in the page.
    Nonce = b'N' as isize,
    /// The no-JavaScript ticket: redeemable after its wait.
    Ticket = b'T' as isize,
    /// The return after a solve, carrying the attempt count.
    Return = b'R' as isize,
}

/// How a clearance was earned: what the cookie proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proof {
    /// The page's proof of work, solved by its script.
    Work,
    /// The no-JavaScript fallback: a signed, server-timed wait. Weaker:
    /// any client that follows a refresh after a few seconds earns it, so
    /// it gets its own, shorter lifetime.
    Wait,
}

impl Proof {
    /// The name in logs, metrics and replay's output.
    pub fn as_str(self) -> &'static str {
        match self {
            Proof::Work => "work",
            Proof::Wait => "wait",
        }
    }

    fn byte(self) -> u8 {
        match self {
            Proof::Work => b'W',
            Proof::Wait => b'S',
        }
    }

    fn from_byte(b: u8) -> Option<Proof> {
        match b {
            b'W' => Some(Proof::Work),
            b'S' => Some(Proof::Wait),
            _ => None,
        }
    }
}

/// What binds a token to one client: its address prefix, a hash of its
/// User-Agent and, on TLS, a hash of its TLS stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    prefix_len: u8,
    prefix: [u8; 16],
    ua: [u8; 8],
    tls: Option<[u8; 8]>,
}

impl Binding {
    /// The binding of a client at `addr` (none: a unix socket) sending
    /// `user_agent` over a connection whose ClientHello showed `tls` (none:
    /// plain HTTP, or no ClientHello seen), with IPv4 addresses cut to
    /// `v4_bits` and IPv6 to `v6_bits`. An IPv4-mapped IPv6 address counts
    /// as the IPv4 one.
    pub fn new(
        addr: Option<IpAddr>,
        user_agent: &[u8],
        tls: Option<TlsFacts<'_>>,
        v4_bits: u8,
        v6_bits: u8,
    ) -> Binding {
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
        Binding {
            prefix_len,
            prefix,
            ua: hash8(&[b"ua\0", user_agent]),
            tls: tls.map(|t| tls_hash(t.ja4())),
        }
    }

    /// Whether the client's TLS stack is part of the binding.
    pub fn has_tls(&self) -> bool {
        self.tls.is_some()
    }
}

fn hash8(parts: &[&[u8]]) -> [u8; 8] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let mut out = [0; 8];
    out.copy_from_slice(&h.finalize()[..8]);
    out
}

/// The hash of the parts of a JA4 that one TLS stack sends on every
/// connection: protocol, version, SNI or not, cipher count, ALPN and the
/// sorted cipher suites (`t13d15..h2_8daaf6152771`). The extension count
/// and the extension hash are left out: a resumed session adds
/// `pre_shared_key` (Chromium's `t13d1516h2` becomes `t13d1517h2` or
/// `t13d1518h2`, with another third part), and a browser's cookie must
/// survive its own resumptions. Another library (Python's `ssl`, curl's
/// OpenSSL, Go) offers other ciphers in another order, which is what
/// tells a replayed cookie apart.
fn tls_hash(ja4: &[u8]) -> [u8; 8] {
    // TlsFacts holds a JA4 of the checked shape (36 bytes).
    hash8(&[b"tls\0", &ja4[0..6], &ja4[8..10], &ja4[11..23]])
}

fn mask(octets: [u8; 16], bits: u8) -> [u8; 16] {
    let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    (u128::from_be_bytes(octets) & m).to_be_bytes()
}

/// Why a token was not accepted. The names ([`Rejection::as_str`]) are
/// stable: metrics labels, the decision line and replay's output use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rejection {
    /// Not a token's text: wrong length, not base64url, another kind.
    Malformed,
    /// The MAC matches none of the keys: forged, tampered with, or signed
    /// by a key no longer listed.
    Mac,
    /// Past its expiry (a cookie) or its validity (a nonce, a ticket, a
    /// return), or expiring later than the lifetime in force allows.
    Expired,
    /// Issued to another address prefix.
    Address,
    /// Issued to another User-Agent.
    UserAgent,
    /// A nonce whose answer does not have the leading zero bits asked for.
    Work,
    /// Issued to a client with another TLS stack (another JA4 cipher
    /// list), or over TLS and presented without it: a browser's cookie
    /// replayed by a script.
    Tls,
    /// A no-JavaScript ticket redeemed before its wait was over.
    Early,
}

impl Rejection {
    /// Every reason, in the order of [`Rejection::index`].
    pub const ALL: [Rejection; 8] = [
        Rejection::Malformed,
        Rejection::Mac,
        Rejection::Expired,
        Rejection::Address,
        Rejection::UserAgent,
        Rejection::Work,
        Rejection::Tls,
        Rejection::Early,
    ];

    /// The name in metrics, logs and replay's output.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Malformed => "malformed",
            Rejection::Mac => "mac",
            Rejection::Expired => "expired",
            Rejection::Address => "address",
            Rejection::UserAgent => "user_agent",
            Rejection::Work => "work",
            Rejection::Tls => "tls",
            Rejection::Early => "early",
        }
    }

    /// The reason named as [`Rejection::as_str`] names it.
    pub fn from_name(name: &[u8]) -> Option<Rejection> {
        Rejection::ALL
            .into_iter()
            .find(|r| r.as_str().as_bytes() == name)
    }

    /// A dense index, for tables of counts.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A token whose MAC verified.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opened {
    pub(crate) proof: Option<Proof>,
    pub(crate) level: u8,
    pub(crate) attempts: u8,
    pub(crate) time: u64,
    binding: Binding,
}

impl Opened {
    /// Whether the token was issued to this client; why not otherwise. A
    /// token issued without a TLS binding (plain HTTP, or no ClientHello
    /// seen) is not checked against one.
    pub(crate) fn check_binding(&self, client: &Binding) -> Result<(), Rejection> {
        if self.binding.prefix_len != client.prefix_len || self.binding.prefix != client.prefix {
            return Err(Rejection::Address);
        }
        if self.binding.ua != client.ua {
            return Err(Rejection::UserAgent);
        }
        match self.binding.tls {
            Some(t) if client.tls != Some(t) => Err(Rejection::Tls),
            _ => Ok(()),
        }
    }
}

/// The fields of a token besides its kind and binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) proof: Option<Proof>,
    pub(crate) level: u8,
    pub(crate) attempts: u8,
    pub(crate) time: u64,
}

fn mac_of(key: &Key, record: &[u8]) -> HmacSha256 {
    let mut mac = key.mac();
    mac.update(DOMAIN);
    mac.update(&record[..SIGNED]);
    mac
}

/// Signs a token with the signing key and writes its text.
pub(crate) fn seal(kind: Kind, f: Fields, binding: &Binding, keys: &Keys) -> [u8; TOKEN_TEXT] {
    let mut record = [0u8; TOKEN_BYTES];
    record[0] = kind as u8;
    record[1] = f.proof.map_or(0, Proof::byte);
    record[2] = f.level;
    record[3] = f.attempts;
    record[4..12].copy_from_slice(&f.time.to_be_bytes());
    record[12] = binding.prefix_len;
    record[13..29].copy_from_slice(&binding.prefix);
    record[29..37].copy_from_slice(&binding.ua);
    if let Some(t) = binding.tls {
        record[37..45].copy_from_slice(&t);
        record[45] = FLAG_TLS;
    }
    let tag = mac_of(keys.signing(), &record).finalize().into_bytes();
    record[SIGNED..].copy_from_slice(&tag);
    let mut text = [0u8; TOKEN_TEXT];
    let n = URL_SAFE_NO_PAD
        .encode_slice(record, &mut text)
        .expect("78 bytes are 104 characters");
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
    // Signed by us, so well formed unless a future version wrote it.
    let proof = Proof::from_byte(record[1]);
    if (record[1] != 0 && proof.is_none()) || record[45] & !FLAG_TLS != 0 {
        return Err(Rejection::Malformed);
    }
    let mut time = [0u8; 8];
    time.copy_from_slice(&record[4..12]);
    let mut binding = Binding {
        prefix_len: record[12],
        prefix: [0; 16],
        ua: [0; 8],
        tls: None,
    };
    binding.prefix.copy_from_slice(&record[13..29]);
    binding.ua.copy_from_slice(&record[29..37]);
    if record[45] & FLAG_TLS != 0 {
        let mut t = [0; 8];
        t.copy_from_slice(&record[37..45]);
        binding.tls = Some(t);
    }
    Ok(Opened {
        proof,
        level: record[2],
        attempts: record[3],
        time: u64::from_be_bytes(time),
        binding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::Family;
    use std::path::Path;

    pub(crate) fn keys(lines: &[&str]) -> Keys {
        Keys::parse(Path::new("secret"), lines.join("\n").as_bytes()).unwrap()
    }

    const CHROME: &[u8] = b"t13d1516h2_8daaf6152771_02713d6af862";
    const CHROME_RESUMED: &[u8] = b"t13d1517h2_8daaf6152771_b6f405a00624";
    const CHROME_PSK: &[u8] = b"t13d1518h2_8daaf6152771_e2d80978ab2e";
    const FIREFOX: &[u8] = b"t13d1717h2_5b57614c22b0_3cbfd9057e0d";
    const PYTHON: &[u8] = b"t13d5911h1_a33745022dd6_dd5ea6d2a4c8";
    const CURL: &[u8] = b"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6";

    fn tls(ja4: &[u8]) -> Option<TlsFacts<'_>> {
        Some(TlsFacts::new(ja4, Family::Boringssl).unwrap())
    }

    fn fields(time: u64) -> Fields {
        Fields {
            proof: Some(Proof::Work),
            level: 16,
            attempts: 1,
            time,
        }
    }

    #[test]
    fn seal_then_open_round_trips_and_any_byte_flip_is_refused() {
        let k = keys(&[&"ab".repeat(32)]);
        let b = Binding::new(Some("192.0.2.77".parse().unwrap()), b"UA", None, 24, 64);
        let text = seal(Kind::Cookie, fields(1_800_000_000), &b, &k);
        let o = open(&text, Kind::Cookie, &k).unwrap();
        assert_eq!(
            (o.time, o.proof, o.level, o.attempts),
            (1_800_000_000, Some(Proof::Work), 16, 1)
        );
        assert_eq!(o.check_binding(&b), Ok(()));
        for other in [Kind::Nonce, Kind::Ticket, Kind::Return] {
            assert_eq!(open(&text, other, &k).unwrap_err(), Rejection::Malformed);
        }
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
        let b = |a: &str, ua: &[u8]| Binding::new(Some(a.parse().unwrap()), ua, None, 24, 64);
        assert_eq!(b("192.0.2.1", b"x"), b("192.0.2.254", b"x"));
        assert_ne!(b("192.0.2.1", b"x"), b("192.0.3.1", b"x"));
        assert_eq!(b("::ffff:192.0.2.1", b"x"), b("192.0.2.9", b"x"));
        assert_eq!(b("2001:db8:1:2::1", b"x"), b("2001:db8:1:2:ffff::9", b"x"));
        assert_ne!(b("2001:db8:1:2::1", b"x"), b("2001:db8:1:3::1", b"x"));
        assert_ne!(b("192.0.2.1", b"x"), b("192.0.2.1", b"y"));
        // An IPv6 /0 is not an IPv4 /0: families stay apart.
        let v4 = Binding::new(Some("192.0.2.1".parse().unwrap()), b"x", None, 0, 0);
        let v6 = Binding::new(Some("2001:db8::1".parse().unwrap()), b"x", None, 0, 0);
        assert_ne!(v4, v6);
        assert_ne!(Binding::new(None, b"x", None, 24, 64), v6);
    }

    /// A browser's own resumed handshakes keep its cookie; another TLS
    /// library with the same address and User-Agent does not.
    #[test]
    fn tls_binding_survives_resumption_and_refuses_other_stacks() {
        let k = keys(&[&"cd".repeat(32)]);
        let addr = Some("198.51.100.7".parse().unwrap());
        let at = |ja4: Option<&'static [u8]>| Binding::new(addr, b"UA", ja4.and_then(tls), 24, 64);
        let minted = at(Some(CHROME));
        assert!(minted.has_tls());
        let o = open(
            &seal(Kind::Cookie, fields(9), &minted, &k),
            Kind::Cookie,
            &k,
        )
        .unwrap();
        for same in [CHROME, CHROME_RESUMED, CHROME_PSK] {
            assert_eq!(o.check_binding(&at(Some(same))), Ok(()));
        }
        for other in [FIREFOX, PYTHON, CURL] {
            assert_eq!(o.check_binding(&at(Some(other))), Err(Rejection::Tls));
        }
        // Presented without TLS (a script over plain HTTP, or TLS ended
        // in front of nginx): refused too.
        assert_eq!(o.check_binding(&at(None)), Err(Rejection::Tls));
        // A token minted without a TLS binding checks none.
        let plain = open(
            &seal(Kind::Cookie, fields(9), &at(None), &k),
            Kind::Cookie,
            &k,
        )
        .unwrap();
        assert_eq!(plain.check_binding(&at(Some(PYTHON))), Ok(()));
        // Address and User-Agent are still checked first.
        let elsewhere = Binding::new(
            Some("203.0.113.1".parse().unwrap()),
            b"UA",
            tls(CHROME),
            24,
            64,
        );
        assert_eq!(o.check_binding(&elsewhere), Err(Rejection::Address));
    }

    #[test]
    fn rejection_names_are_stable_and_round_trip() {
        // Metrics labels, decision lines and replay's output: a rename is
        // a breaking change, so the names are spelt out here.
        let names: Vec<&str> = Rejection::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "malformed",
                "mac",
                "expired",
                "address",
                "user_agent",
                "work",
                "tls",
                "early"
            ]
        );
        for (i, r) in Rejection::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
            assert_eq!(Rejection::from_name(r.as_str().as_bytes()), Some(r));
        }
        assert_eq!(Rejection::from_name(b"accepted"), None);
        assert_eq!(
            (Proof::Work.as_str(), Proof::Wait.as_str()),
            ("work", "wait")
        );
    }
}
