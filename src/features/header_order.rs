//! Header names as one-letter codes, the `header_order` fingerprint built from
//! them, and how far an order is from the one the claimed browser uses.
//!
//! Browsers emit headers in a fixed order per engine (Chromium puts the client
//! hints first and `accept-language` last, Firefox puts `user-agent` first and
//! the `sec-fetch-*` block near the end); HTTP libraries have their own.
//! Clients that spoof a browser usually keep their library's order.

use super::bytes::starts_with_ci;
use super::user_agent::Family;

/// Code of a header name that is not in [`CODES`]; never in fingerprints.
pub const UNKNOWN: u8 = 0;
/// Code of any `sec-ch-ua-*` header without its own code.
pub const OTHER_CLIENT_HINT: u8 = b'X';
/// Code of any `sec-fetch-*` header without its own code.
pub const OTHER_FETCH: u8 = b'F';

/// Known header names and their codes. Letters are mnemonic where possible;
/// every code is a distinct printable ASCII byte.
pub const CODES: &[(&str, u8)] = &[
    ("host", b'h'),
    ("connection", b'c'),
    ("user-agent", b'u'),
    ("accept", b'a'),
    ("accept-language", b'l'),
    ("accept-encoding", b'e'),
    ("cookie", b'k'),
    ("referer", b'r'),
    ("upgrade-insecure-requests", b'i'),
    ("sec-ch-ua", b'C'),
    ("sec-ch-ua-mobile", b'M'),
    ("sec-ch-ua-platform", b'P'),
    ("sec-fetch-site", b'S'),
    ("sec-fetch-mode", b'O'),
    ("sec-fetch-user", b'U'),
    ("sec-fetch-dest", b'D'),
    ("te", b't'),
    ("priority", b'p'),
    ("cache-control", b'y'),
    ("pragma", b'g'),
    ("dnt", b'n'),
    ("sec-gpc", b'G'),
    ("origin", b'o'),
    ("content-type", b'T'),
    ("content-length", b'L'),
    ("x-requested-with", b'w'),
    ("if-none-match", b'm'),
    ("if-modified-since", b'm'),
    ("range", b'R'),
    ("authorization", b'z'),
    ("keep-alive", b'K'),
    ("accept-charset", b'A'),
    ("x-forwarded-for", b'f'),
    ("purpose", b'Q'),
    ("sec-purpose", b'Q'),
];

/// Longest name in [`CODES`].
const LONGEST: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < CODES.len() {
        if CODES[i].0.len() > longest {
            longest = CODES[i].0.len();
        }
        i += 1;
    }
    longest
};

/// Most names of [`CODES`] that share one length.
const BUCKET: usize = 8;

/// `BY_LEN[n]`: 1 + the indices in [`CODES`] of the names of length `n`,
/// 0-terminated. A lookup compares a name with at most [`BUCKET`] others
/// instead of all of them; building it fails to compile if a bucket overflows.
const BY_LEN: [[u8; BUCKET]; LONGEST + 1] = {
    let mut table = [[0u8; BUCKET]; LONGEST + 1];
    assert!(CODES.len() < u8::MAX as usize, "indices must fit in u8");
    let mut i = 0;
    while i < CODES.len() {
        let len = CODES[i].0.len();
        let mut slot = 0;
        while table[len][slot] != 0 {
            slot += 1;
        }
        assert!(slot < BUCKET, "too many header names of one length");
        table[len][slot] = i as u8 + 1;
        i += 1;
    }
    table
};

/// The code of a header name (case-insensitive), [`UNKNOWN`] if none.
pub fn code(name: &[u8]) -> u8 {
    if let Some(bucket) = BY_LEN.get(name.len()) {
        for &entry in bucket.iter().take_while(|&&e| e != 0) {
            let (known, c) = CODES[usize::from(entry - 1)];
            if known.as_bytes().eq_ignore_ascii_case(name) {
                return c;
            }
        }
    }
    if starts_with_ci(name, b"sec-ch-ua-") {
        OTHER_CLIENT_HINT
    } else if starts_with_ci(name, b"sec-fetch-") {
        OTHER_FETCH
    } else {
        UNKNOWN
    }
}

/// Chromium (Chrome, Edge, Opera, Samsung, headless), HTTP/1.1 and HTTP/2.
const CHROMIUM_ORDER: &[u8] = b"cyCMPXiuaSOUDFrelkp";
/// Firefox, desktop and Android.
const FIREFOX_ORDER: &[u8] = b"ualerckiDOSUFpgyt";
/// Safari, macOS and iOS.
const SAFARI_ORDER: &[u8] = b"aSDOurelkc";

/// The canonical order of the browser a family claims; `None` for clients
/// with no browser order to compare with.
pub fn canonical_order(family: Family) -> Option<&'static [u8]> {
    match family {
        Family::Chrome
        | Family::HeadlessChrome
        | Family::Edge
        | Family::Opera
        | Family::Samsung => Some(CHROMIUM_ORDER),
        Family::Firefox => Some(FIREFOX_ORDER),
        Family::Safari => Some(SAFARI_ORDER),
        _ => None,
    }
}

/// Most headers a request can have for [`inversions`] to look at; the rest
/// are ignored (no browser sends that many ranked headers).
pub const MAX_RANKED: usize = 64;

/// Counts pairs of headers (both in `order`) that arrived in the opposite of
/// the canonical order. Codes not in `order` are ignored; repeated headers
/// (split cookies) are equal and never count.
pub fn inversions(codes: impl Iterator<Item = u8>, order: &[u8]) -> u32 {
    let mut ranks = [0u8; MAX_RANKED];
    let mut n = 0;
    for c in codes {
        if n == MAX_RANKED {
            break;
        }
        if let Some(rank) = order.iter().position(|&o| o == c) {
            // `order` is far shorter than 256.
            ranks[n] = rank as u8;
            n += 1;
        }
    }
    let ranks = &ranks[..n];
    let mut count = 0;
    for (i, &a) in ranks.iter().enumerate() {
        count += ranks[i + 1..].iter().filter(|&&b| b < a).count() as u32;
    }
    count
}

/// Builds the `header_order` fingerprint in a fixed buffer: the codes of
/// known headers in arrival order, runs of the same code collapsed (HTTP/2
/// splits `cookie` into one header per crumb). When the buffer is full the
/// last byte becomes `+`.
#[derive(Clone, Copy, Debug)]
pub struct Fingerprint<const N: usize> {
    buf: [u8; N],
    len: usize,
    truncated: bool,
}

impl<const N: usize> Fingerprint<N> {
    /// An empty fingerprint.
    pub const fn new() -> Self {
        Fingerprint {
            buf: [0; N],
            len: 0,
            truncated: false,
        }
    }

    /// Forgets every code pushed so far.
    pub fn clear(&mut self) {
        self.len = 0;
        self.truncated = false;
    }

    /// Appends one header's code.
    pub fn push(&mut self, code: u8) {
        if code == UNKNOWN || self.truncated || (self.len > 0 && self.buf[self.len - 1] == code) {
            return;
        }
        if self.len == N {
            self.buf[N - 1] = b'+';
            self.truncated = true;
            return;
        }
        self.buf[self.len] = code;
        self.len += 1;
    }

    /// The fingerprint so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for Fingerprint<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_per_name_and_printable() {
        for (i, &(a, ca)) in CODES.iter().enumerate() {
            assert!(ca.is_ascii_graphic() && ca != b'+', "{a}");
            assert_eq!(a, a.to_ascii_lowercase());
            for &(b, cb) in &CODES[i + 1..] {
                assert_ne!(a, b);
                // The conditional-request pair and the prefetch pair share on purpose.
                if ca == cb {
                    assert!(matches!(ca, b'm' | b'Q'), "{a} and {b} share a code");
                }
            }
            assert_ne!(ca, OTHER_CLIENT_HINT);
            assert_ne!(ca, OTHER_FETCH);
        }
    }

    #[test]
    fn every_name_is_found() {
        for &(name, c) in CODES {
            assert_eq!(code(name.as_bytes()), c, "{name}");
            assert_eq!(code(name.to_ascii_uppercase().as_bytes()), c, "{name}");
        }
        assert_eq!(code(&[b'a'; 300]), UNKNOWN);
    }

    #[test]
    fn looks_up_case_insensitively() {
        assert_eq!(code(b"User-Agent"), b'u');
        assert_eq!(code(b"sec-ch-ua"), b'C');
        assert_eq!(code(b"Sec-CH-UA-Full-Version-List"), OTHER_CLIENT_HINT);
        assert_eq!(code(b"sec-fetch-storage-access"), OTHER_FETCH);
        assert_eq!(code(b"x-custom"), UNKNOWN);
        assert_eq!(code(b""), UNKNOWN);
    }

    #[test]
    fn canonical_orders_have_no_repeats() {
        for order in [CHROMIUM_ORDER, FIREFOX_ORDER, SAFARI_ORDER] {
            for (i, c) in order.iter().enumerate() {
                assert!(!order[i + 1..].contains(c));
                assert!(
                    CODES.iter().any(|&(_, k)| k == *c)
                        || *c == OTHER_CLIENT_HINT
                        || *c == OTHER_FETCH
                );
            }
        }
    }

    #[test]
    fn counts_inversions() {
        let order = CHROMIUM_ORDER;
        assert_eq!(inversions(b"CMPiuaSOUDelk".iter().copied(), order), 0);
        // python-requests order with a Chrome UA: u e a c
        assert_eq!(inversions(b"ueac".iter().copied(), order), 4);
        assert_eq!(inversions(b"lu".iter().copied(), order), 1);
        assert_eq!(inversions(b"kkk".iter().copied(), order), 0);
        assert_eq!(inversions(b"hQ".iter().copied(), order), 0);
        assert_eq!(inversions(std::iter::repeat_n(b'k', 500), order), 0);
        assert_eq!(canonical_order(Family::Curl), None);
    }

    #[test]
    fn fingerprint_collapses_and_truncates() {
        let mut f = Fingerprint::<4>::new();
        for c in [b'h', UNKNOWN, b'u', b'k', b'k', b'a'] {
            f.push(c);
        }
        assert_eq!(f.as_bytes(), b"huka");
        f.push(b'e');
        f.push(b'l');
        assert_eq!(f.as_bytes(), b"huk+");
        f.clear();
        assert_eq!(f.as_bytes(), b"");
    }
}
