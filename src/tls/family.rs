//! A coarse guess of the TLS library behind a ClientHello, from its cipher
//! list alone.
//!
//! Only the cipher list is read because it is the one part both sources see
//! whole: nginx's OpenSSL 3.0 lists only the extension types it implements
//! (GREASE, ALPS, compress_certificate, record_size_limit and ECH are
//! invisible to `SSL_client_hello_get1_extensions_present`), while the
//! cipher bytes it hands out are the client's, GREASE included.
//!
//! The markers, each a library's default that a caller rarely changes:
//!
//! | family | marker | seen in |
//! |---|---|---|
//! | BoringSSL | GREASE among the ciphers (RFC 8701 came from BoringSSL) | Chromium 156 here; every Chrome connection of FoxIO's test captures |
//! | NSS | TLS 1.3 suites first, in the order 1301, 1303, 1302 | Firefox (FoxIO's `tls12.pcap`, to contile.services.mozilla.com) |
//! | OpenSSL | TLS 1.3 suites first, in the order 1302, 1303, 1301 | curl 7.88, Python 3.11 `ssl` and requests, Node 20 (all on OpenSSL 3.0 here) |
//! | Go | TLS 1.3 suites last, 1301, 1302, 1303, after every TLS 1.2 one | Go 1.19 `crypto/tls` here |
//!
//! A client restricted to TLS 1.2 (no TLS 1.3 suites) is [`Family::Unknown`]
//! unless it sends GREASE, as is anything else. `tests/tls_ja4.rs` checks
//! each row against ClientHellos recorded from those clients
//! (`tests/fixtures/tls/`).

use std::ffi::CStr;

use super::client_hello::ClientHello;
use super::codepoints::is_grease;

/// The TLS library family a ClientHello most likely comes from.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// None of the markers.
    Unknown = 0,
    /// BoringSSL, or a stack that sends GREASE as it does (Chromium-based
    /// browsers among the clients checked).
    Boringssl = 1,
    /// NSS: Firefox.
    Nss = 2,
    /// OpenSSL: curl, Python, Node, nginx itself, most scripts on Linux.
    Openssl = 3,
    /// Go's crypto/tls.
    Go = 4,
}

const TLS13: [u16; 3] = [0x1301, 0x1302, 0x1303];

impl Family {
    /// The guess for `hello`; `grease` says whether it carried GREASE in its
    /// ciphers or extensions.
    pub fn guess(hello: &ClientHello<'_>, grease_anywhere: bool) -> Self {
        if hello.ciphers.iter().any(is_grease) {
            return Self::Boringssl;
        }
        let first3 = Vec3::from(&mut hello.ciphers.iter());
        match first3.0 {
            [0x1301, 0x1303, 0x1302] if !grease_anywhere => return Self::Nss,
            [0x1302, 0x1303, 0x1301] if !grease_anywhere => return Self::Openssl,
            _ => {}
        }
        // Go lists the TLS 1.3 suites after every TLS 1.2 one.
        let n = hello.ciphers.len();
        if n > 3 && !grease_anywhere {
            let last3 = Vec3::from(&mut hello.ciphers.iter().skip(n - 3));
            let tls13_before = hello.ciphers.iter().take(n - 3).any(|c| TLS13.contains(&c));
            if last3.0 == TLS13 && !tls13_before {
                return Self::Go;
            }
        }
        Self::Unknown
    }

    /// The family of a client known by its JA4 alone (a trusted hop's
    /// report): JA4's second part hashes the *sorted* cipher list, so the
    /// order [`Family::guess`] reads is gone, but a library's default
    /// cipher set has one hash. Only the sets recorded here from real
    /// clients ([`CIPHER_SETS`]); `None` for any other.
    pub fn of_ja4(ja4: &[u8]) -> Option<Self> {
        let hash = ja4.get(11..23)?;
        CIPHER_SETS
            .iter()
            .find(|(h, _)| h.as_bytes() == hash)
            .map(|&(_, f)| f)
    }

    /// The family's name as logged and listed (`"boringssl"`, ...).
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or("unknown")
    }

    /// [`Family::name`], NUL-terminated.
    pub fn c_name(self) -> &'static CStr {
        match self {
            Self::Unknown => c"unknown",
            Self::Boringssl => c"boringssl",
            Self::Nss => c"nss",
            Self::Openssl => c"openssl",
            Self::Go => c"go",
        }
    }

    /// The family named `name` ([`Family::name`]), as a log line carries
    /// it; `None` for any other text.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        [
            Self::Unknown,
            Self::Boringssl,
            Self::Nss,
            Self::Openssl,
            Self::Go,
        ]
        .into_iter()
        .find(|f| f.name().as_bytes() == name)
    }

    /// The family of a number as the C ABI carries it; unknown numbers are
    /// [`Family::Unknown`].
    pub fn from_number(n: i32) -> Self {
        [Self::Boringssl, Self::Nss, Self::Openssl, Self::Go]
            .into_iter()
            .find(|f| *f as i32 == n)
            .unwrap_or(Self::Unknown)
    }
}

/// JA4 cipher hashes (its second part) of the clients whose ClientHellos
/// `tests/fixtures/tls/` records, with the family [`Family::guess`] gives
/// their ClientHellos (`tests/tls_ja4.rs` checks each against them).
pub const CIPHER_SETS: &[(&str, Family)] = &[
    // Chromium 156 here; Chrome in FoxIO's captures.
    ("8daaf6152771", Family::Boringssl),
    // Firefox (FoxIO's tls12.pcap).
    ("5b57614c22b0", Family::Nss),
    // Python 3.11 ssl and requests, Node 20, curl 7.88 (OpenSSL 3.0).
    ("85036bcba153", Family::Openssl),
    ("a33745022dd6", Family::Openssl),
    ("e8f1e7e78f70", Family::Openssl),
    // Go 1.19 crypto/tls.
    ("9dc949149365", Family::Go),
];

/// Up to three values, zero-padded: a fixed-size prefix of an iterator.
struct Vec3([u16; 3]);

impl Vec3 {
    fn from(it: &mut impl Iterator<Item = u16>) -> Self {
        let mut v = [0u16; 3];
        for slot in &mut v {
            match it.next() {
                Some(x) => *slot = x,
                None => break,
            }
        }
        Self(v)
    }
}
