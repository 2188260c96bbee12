//! Fingerprint keys: the two ways one request names the software that sent
//! it, as text that the aggregator, the snapshot and the lookup share.
//!
//! - `ja4`: the connection's JA4 (36 bytes, `t13d1516h2_8daaf6152771_...`),
//!   on TLS only. It names the TLS stack.
//! - `headers`: the User-Agent family the request claims, `:`, and the
//!   `header_order` fingerprint (known header names as one-letter codes in
//!   arrival order, src/features/header_order.rs), e.g.
//!   `chrome:hCMPiuaSOUDel`. It names the HTTP stack behind the claim, on
//!   plain HTTP too. Values are not part of it: a browser's key is shared
//!   by everyone who runs that browser.

use crate::features::user_agent::Family;
use crate::features::{Cat, FeatureVector, HEADER_ORDER_CAP};

/// The longest key text: a family name (at most 15 bytes), `:`, and a full
/// header-order fingerprint. A stack buffer of this size holds any key.
pub const KEY_CAP: usize = 16 + HEADER_ORDER_CAP;

/// JA4's length: `t13d1516h2_8daaf6152771_02713d6af862`.
pub const JA4_LEN: usize = 36;

/// What a key is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The connection's JA4.
    Ja4,
    /// The claimed User-Agent family and the header order.
    Headers,
}

impl Kind {
    /// Every kind, in the order snapshots list them.
    pub const ALL: [Kind; 2] = [Kind::Ja4, Kind::Headers];

    /// The name in snapshot files and the `kind` of rule conditions.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Ja4 => "ja4",
            Kind::Headers => "headers",
        }
    }

    /// The kind named `s`.
    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Writes the `headers` key of a request claiming `family` whose header
/// order is `order` into `buf`, and returns it. `order` longer than
/// [`HEADER_ORDER_CAP`] is cut (the features never make one).
pub fn headers_key<'b>(family: Family, order: &[u8], buf: &'b mut [u8; KEY_CAP]) -> &'b [u8] {
    let name = family.name().as_bytes();
    let order = &order[..order.len().min(HEADER_ORDER_CAP)];
    let n = name.len() + 1 + order.len();
    buf[..name.len()].copy_from_slice(name);
    buf[name.len()] = b':';
    buf[name.len() + 1..n].copy_from_slice(order);
    &buf[..n]
}

/// The `headers` key of the request whose features are `v` (after
/// [`crate::features::extract`]): the same text as [`headers_key`] gives
/// for its family and order, so the aggregator and the lookup agree.
pub fn headers_key_of<'b>(v: &FeatureVector<'_>, buf: &'b mut [u8; KEY_CAP]) -> &'b [u8] {
    let family = v.cat(Cat::UaFamily);
    let order = v.cat(Cat::HeaderOrder);
    let family = &family[..family.len().min(KEY_CAP - 1)];
    let order = &order[..order.len().min(KEY_CAP - 1 - family.len())];
    let n = family.len() + 1 + order.len();
    buf[..family.len()].copy_from_slice(family);
    buf[family.len()] = b':';
    buf[family.len() + 1..n].copy_from_slice(order);
    &buf[..n]
}

/// Why `key` is not a well-formed key of `kind`, if it is not.
pub fn check(kind: Kind, key: &str) -> Result<(), String> {
    match kind {
        Kind::Ja4 => check_ja4(key),
        Kind::Headers => check_headers(key),
    }
}

fn check_ja4(key: &str) -> Result<(), String> {
    let b = key.as_bytes();
    let ok = b.len() == JA4_LEN
        && b[10] == b'_'
        && b[23] == b'_'
        && b[..10].iter().all(|c| c.is_ascii_alphanumeric())
        && b[11..23].iter().chain(&b[24..]).all(u8::is_ascii_hexdigit);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{key:?} is not a JA4 (36 characters: 10 alphanumerics, `_`, 12 hex digits, `_`, 12 hex digits)"
        ))
    }
}

fn check_headers(key: &str) -> Result<(), String> {
    let Some((family, order)) = key.split_once(':') else {
        return Err(format!("{key:?} is not FAMILY:ORDER"));
    };
    if !FAMILIES.iter().any(|f| f.name() == family) {
        return Err(format!(
            "{family:?} is not a User-Agent family (one of {})",
            FAMILIES.map(Family::name).join(", ")
        ));
    }
    if order.len() > HEADER_ORDER_CAP {
        return Err(format!(
            "header order {order:?} is longer than {HEADER_ORDER_CAP} codes"
        ));
    }
    if let Some(c) = order.bytes().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "header order {order:?} has byte {c:#04x}, not a header code"
        ));
    }
    Ok(())
}

/// Every family, for [`check`]'s message and test.
const FAMILIES: [Family; 22] = [
    Family::None,
    Family::Chrome,
    Family::HeadlessChrome,
    Family::Edge,
    Family::Opera,
    Family::Samsung,
    Family::Firefox,
    Family::Safari,
    Family::OtherBrowser,
    Family::Curl,
    Family::Wget,
    Family::PythonRequests,
    Family::Aiohttp,
    Family::Httpx,
    Family::PythonUrllib,
    Family::Go,
    Family::Java,
    Family::Okhttp,
    Family::Node,
    Family::Axios,
    Family::Bot,
    Family::Other,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_keys_round_trip_through_check() {
        let mut buf = [0; KEY_CAP];
        for f in FAMILIES {
            let full = [b'a'; HEADER_ORDER_CAP];
            let k = headers_key(f, &full, &mut buf);
            check(Kind::Headers, std::str::from_utf8(k).unwrap()).unwrap();
        }
        assert_eq!(
            headers_key(Family::Chrome, b"hCMPiu", &mut buf),
            b"chrome:hCMPiu"
        );
        assert_eq!(headers_key(Family::None, b"", &mut buf), b"none:");
    }

    #[test]
    fn a_requests_key_is_its_family_and_order() {
        use crate::features::{extract, Request};
        use crate::headers::Header;
        let headers = [
            Header::new(b"Host", b"example.com"),
            Header::new(b"User-Agent", b"curl/8.5.0"),
            Header::new(b"Accept", b"*/*"),
        ];
        let req = Request::new(b"GET", b"/", 11, b"203.0.113.7", &headers);
        let mut v = FeatureVector::new();
        extract(&req, &mut v);
        let mut a = [0; KEY_CAP];
        let mut b = [0; KEY_CAP];
        let of = headers_key_of(&v, &mut a);
        assert_eq!(of, b"curl:hua");
        assert_eq!(of, headers_key(Family::Curl, b"hua", &mut b));
    }

    #[test]
    fn refuses_malformed_keys() {
        check(Kind::Ja4, "t13d1516h2_8daaf6152771_02713d6af862").unwrap();
        for bad in [
            "",
            "t13d1516h2_8daaf6152771_02713d6af86",
            "t13d1516h2-8daaf6152771_02713d6af862",
            "t13d1516h2_8daaf615277g_02713d6af862",
        ] {
            assert!(check(Kind::Ja4, bad).is_err(), "{bad}");
        }
        for bad in [
            "chrome",
            "chromium:hu",
            "chrome:h u",
            &format!("chrome:{}", "a".repeat(33)),
        ] {
            assert!(check(Kind::Headers, bad).is_err(), "{bad}");
        }
        assert_eq!(Kind::from_name("ja4"), Some(Kind::Ja4));
        assert_eq!(Kind::from_name("JA4"), None);
    }
}
