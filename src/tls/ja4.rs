//! JA4, as FoxIO's specification defines it (`technical_details/JA4.md` of
//! FoxIO-LLC/ja4):
//!
//! ```text
//! t13d1516h2_8daaf6152771_e5627efa2ab1
//! │││ │ │ │  │            └ sha256 of the sorted extensions (SNI and ALPN left
//! │││ │ │ │  │              out), "_", the signature algorithms in order; 12 hex
//! │││ │ │ │  └ sha256 of the sorted cipher suites, 12 hex
//! │││ │ │ └ first and last character of the first ALPN value ("00": none)
//! │││ │ └ number of extensions (SNI and ALPN included), at most 99
//! │││ └ number of cipher suites, at most 99
//! ││└ "d": SNI present, "i": absent
//! │└ version: the highest of supported_versions, else legacy_version
//! └ "t": TLS over TCP (nginx's stream; QUIC and DTLS never reach it)
//! ```
//!
//! GREASE values are ignored everywhere, as the specification says ("ignore
//! GREASE values anywhere it sees them"), signature algorithms included.
//! FoxIO's own implementations keep GREASE in the signature algorithms; no
//! published example has one there, and browsers do not send any.
//!
//! Sorting needs room for the lists. [`SortRoom`] holds it once, sized for
//! the largest lists a ClientHello can carry (its cipher_suites vector is at
//! most 65 534 bytes, its extensions block at most 65 535), so any
//! ClientHello is fingerprinted exactly and none allocates.

use sha2::{Digest, Sha256};

use super::client_hello::ClientHello;
use super::codepoints::{ext, is_grease};
use super::family::Family;

/// Length of a JA4 string.
pub const JA4_LEN: usize = 36;

/// At most this many cipher suites fit in a ClientHello.
pub const MAX_CIPHERS: usize = 65_534 / 2;

/// At most this many extensions fit in a ClientHello (4 bytes each, at
/// least). Longer lists from elsewhere are cut here.
pub const MAX_EXTENSIONS: usize = 65_535 / 4;

/// The longest ALPN value kept as a raw part; longer ones are cut.
pub const ALPN_MAX: usize = 16;

/// Whether `v` has the shape of a JA4 string as [`Fingerprint::compute`]
/// writes it: 36 bytes; `t`, `q` or `d`; two version characters; `d` or
/// `i`; two digits of cipher count and two of extension count; two ALPN
/// characters (ASCII alphanumerics, in the client's letter case); `_`;
/// 12 lower-case hex; `_`; 12 lower-case hex. The one check of a JA4 that
/// comes from elsewhere (a log line, a C caller), so that its parts can be
/// read by position.
pub fn is_ja4(v: &[u8]) -> bool {
    v.len() == JA4_LEN
        && v.iter().enumerate().all(|(i, &b)| match i {
            0 => matches!(b, b't' | b'q' | b'd'),
            1 | 2 => b.is_ascii_digit() || b.is_ascii_lowercase(),
            3 => matches!(b, b'd' | b'i'),
            4..=7 => b.is_ascii_digit(),
            8 | 9 => b.is_ascii_alphanumeric(),
            10 | 23 => b == b'_',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// Reusable sorting room; one per thread that fingerprints.
#[derive(Debug)]
pub struct SortRoom {
    ciphers: Box<[u16]>,
    extensions: Box<[u16]>,
}

impl Default for SortRoom {
    fn default() -> Self {
        Self {
            ciphers: vec![0; MAX_CIPHERS].into_boxed_slice(),
            extensions: vec![0; MAX_EXTENSIONS].into_boxed_slice(),
        }
    }
}

/// The JA4 of one ClientHello and the raw facts it is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    ja4: [u8; JA4_LEN],
    /// The version JA4 reports (highest supported_versions value, else
    /// legacy_version).
    pub version: u16,
    /// Cipher suites, GREASE left out (not capped at 99).
    pub ciphers: u16,
    /// Extensions, GREASE left out (not capped at 99).
    pub extensions: u16,
    /// Whether the client sent GREASE among its ciphers or extensions.
    pub grease: bool,
    alpn: [u8; ALPN_MAX],
    alpn_len: u8,
    /// A coarse guess of the TLS library that built the ClientHello.
    pub family: Family,
}

/// Where the text of a JA4 part goes: a digest, or a string (raw output).
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl Sink for String {
    fn put(&mut self, bytes: &[u8]) {
        // Only ASCII hex, commas and underscores are ever put.
        self.push_str(std::str::from_utf8(bytes).unwrap_or_default());
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex4(v: u16) -> [u8; 4] {
    let n = |s: u16| HEX[usize::from(v >> s & 0xf)];
    [n(12), n(8), n(4), n(0)]
}

fn put_list(sink: &mut impl Sink, values: impl Iterator<Item = u16>) {
    for (i, v) in values.enumerate() {
        if i > 0 {
            sink.put(b",");
        }
        sink.put(&hex4(v));
    }
}

/// The two lists JA4 sorts, in `scratch`.
struct Sorted<'s> {
    ciphers: &'s [u16],
    /// Extensions other than SNI and ALPN.
    extensions: &'s [u16],
    cipher_count: usize,
    extension_count: usize,
    grease: bool,
}

fn sorted<'s>(hello: &ClientHello<'_>, scratch: &'s mut SortRoom) -> Sorted<'s> {
    let mut grease = false;
    let mut nc = 0;
    for c in hello.ciphers.iter() {
        if is_grease(c) {
            grease = true;
        } else if nc < scratch.ciphers.len() {
            scratch.ciphers[nc] = c;
            nc += 1;
        }
    }
    let (mut ne, mut kept) = (0, 0);
    for t in hello.extensions.iter() {
        if is_grease(t) {
            grease = true;
            continue;
        }
        ne += 1;
        if t != ext::SERVER_NAME && t != ext::ALPN && kept < scratch.extensions.len() {
            scratch.extensions[kept] = t;
            kept += 1;
        }
    }
    let ciphers = &mut scratch.ciphers[..nc];
    ciphers.sort_unstable();
    let extensions = &mut scratch.extensions[..kept];
    extensions.sort_unstable();
    Sorted {
        ciphers,
        extensions,
        cipher_count: nc,
        extension_count: ne,
        grease,
    }
}

fn version_text(v: u16) -> &'static [u8; 2] {
    match v {
        0x0304 => b"13",
        0x0303 => b"12",
        0x0302 => b"11",
        0x0301 => b"10",
        0x0300 => b"s3",
        0x0002 => b"s2",
        0xfeff => b"d1",
        0xfefd => b"d2",
        0xfefc => b"d3",
        _ => b"00",
    }
}

/// The version JA4 reports: the highest non-GREASE supported_versions value
/// when the extension is there and lists one, else legacy_version.
fn version(hello: &ClientHello<'_>) -> u16 {
    hello
        .supported_versions
        .and_then(|l| l.iter().filter(|&v| !is_grease(v)).max())
        .unwrap_or(hello.legacy_version)
}

/// The ALPN characters: first and last of the first value if both are
/// ASCII alphanumeric, else the first and last hex digit of its bytes.
fn alpn_chars(alpn: Option<&[u8]>) -> [u8; 2] {
    match alpn {
        Some(&[first, .., last]) | Some(&[first @ last]) => {
            if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() {
                [first, last]
            } else {
                [HEX[usize::from(first >> 4)], HEX[usize::from(last & 0xf)]]
            }
        }
        _ => *b"00",
    }
}

fn count2(n: usize) -> [u8; 2] {
    let n = n.min(99) as u8;
    [b'0' + n / 10, b'0' + n % 10]
}

/// The 10 characters before the first underscore.
fn part_a(hello: &ClientHello<'_>, s: &Sorted<'_>) -> [u8; 10] {
    let mut a = [0u8; 10];
    a[0] = b't';
    a[1..3].copy_from_slice(version_text(version(hello)));
    a[3] = if hello.sni { b'd' } else { b'i' };
    a[4..6].copy_from_slice(&count2(s.cipher_count));
    a[6..8].copy_from_slice(&count2(s.extension_count));
    a[8..10].copy_from_slice(&alpn_chars(hello.alpn));
    a
}

/// Part c's text: sorted extensions, then "_" and the signature algorithms
/// in order when there are any.
fn put_c(sink: &mut impl Sink, hello: &ClientHello<'_>, s: &Sorted<'_>) {
    put_list(sink, s.extensions.iter().copied());
    let mut sigs = hello
        .signature_algorithms
        .iter()
        .filter(|&v| !is_grease(v))
        .peekable();
    if sigs.peek().is_some() {
        sink.put(b"_");
        put_list(sink, sigs);
    }
}

/// The first 12 hex digits of a digest.
fn hash12(h: Sha256) -> [u8; 12] {
    let d = h.finalize();
    let mut out = [0u8; 12];
    for (i, b) in d.iter().take(6).enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0xf)];
    }
    out
}

impl Fingerprint {
    /// Fingerprints one ClientHello. Allocates nothing.
    pub fn compute(hello: &ClientHello<'_>, scratch: &mut SortRoom) -> Self {
        let s = sorted(hello, scratch);
        let mut ja4 = [b'_'; JA4_LEN];
        ja4[..10].copy_from_slice(&part_a(hello, &s));
        // "When a list is empty, its hash is twelve zeros": the
        // specification's way of telling "nothing" from a hash.
        ja4[11..23].copy_from_slice(&if s.ciphers.is_empty() {
            *b"000000000000"
        } else {
            let mut h = Sha256::new();
            put_list(&mut h, s.ciphers.iter().copied());
            hash12(h)
        });
        ja4[24..36].copy_from_slice(&if s.extensions.is_empty() {
            *b"000000000000"
        } else {
            let mut h = Sha256::new();
            put_c(&mut h, hello, &s);
            hash12(h)
        });
        let mut alpn = [0u8; ALPN_MAX];
        let alpn_value = hello.alpn.unwrap_or_default();
        let alpn_len = alpn_value.len().min(ALPN_MAX);
        alpn[..alpn_len].copy_from_slice(&alpn_value[..alpn_len]);
        let family = Family::guess(hello, s.grease);
        Self {
            ja4,
            version: version(hello),
            ciphers: u16::try_from(s.cipher_count).unwrap_or(u16::MAX),
            extensions: u16::try_from(s.extension_count).unwrap_or(u16::MAX),
            grease: s.grease,
            alpn,
            alpn_len: alpn_len as u8,
            family,
        }
    }

    /// The JA4 string, e.g. `t13d1516h2_8daaf6152771_e5627efa2ab1`.
    pub fn ja4(&self) -> &str {
        // Built only from ASCII above.
        std::str::from_utf8(&self.ja4).unwrap_or_default()
    }

    /// The JA4 bytes.
    pub fn ja4_bytes(&self) -> &[u8; JA4_LEN] {
        &self.ja4
    }

    /// The first ALPN value the client offered (at most [`ALPN_MAX`] bytes;
    /// empty when it offered none).
    pub fn alpn(&self) -> &[u8] {
        &self.alpn[..usize::from(self.alpn_len)]
    }

    /// JA4_r, the specification's raw form: part a, then the sorted cipher
    /// list and part c's text unhashed. Allocates; for tools and tests.
    pub fn raw(hello: &ClientHello<'_>, scratch: &mut SortRoom) -> String {
        let s = sorted(hello, scratch);
        let mut out = String::new();
        out.push_str(std::str::from_utf8(&part_a(hello, &s)).unwrap_or_default());
        out.push('_');
        put_list(&mut out, s.ciphers.iter().copied());
        out.push('_');
        put_c(&mut out, hello, &s);
        out
    }
}
