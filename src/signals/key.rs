//! Fingerprint keys: the two ways one request names the software that sent
//! it, as text that the aggregator, the snapshot and the lookup share.
//!
//! - `ja4`: the connection's JA4 (36 bytes, `t13d1516h2_8daaf6152771_...`),
//!   on TLS only. It names the TLS stack.
//! - `headers`: the User-Agent family the request claims, `:`, and the
//!   `header_order` fingerprint (known header names as one-letter codes in
//!   arrival order, src/features/header_order.rs), e.g.
//!   `chrome:hCMPuaSODel`. It names the HTTP stack behind the claim, on
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

/// The header codes left out of the `headers` key
/// (src/features/header_order.rs): headers that say what this visit is,
/// not what software sent it. A person's challenged navigation, the answer
/// to the challenge and the cleared navigations after it differ in exactly
/// these (a cookie, a referer, an origin and a body, a reload, a user's
/// click), and the key must be the same for all three, or the solves and
/// clearances land on keys the challenges never did and a browser's
/// navigation key shows challenges and no solves. Left out: cookie (`k`),
/// referer (`r`), origin (`o`), content-type (`T`), content-length (`L`),
/// range (`R`), the conditional headers (`m`), authorization (`z`),
/// cache-control (`y`), pragma (`g`), sec-fetch-user (`U`),
/// upgrade-insecure-requests (`i`, navigations only), purpose and
/// sec-purpose (`Q`, prefetches), and x-forwarded-for (`f`, added by
/// proxies, not the client).
pub const VISIT_CODES: &[u8] = b"kroTLRmzygUiQf";

/// Writes the `headers` key of a request claiming the family named
/// `family` whose `header_order` fingerprint is `order` into `buf`: the
/// name, `:`, and the order without [`VISIT_CODES`] (runs that their
/// removal brings together collapsed, as the fingerprint collapses them).
fn write_key<'b>(family: &[u8], order: &[u8], buf: &'b mut [u8; KEY_CAP]) -> &'b [u8] {
    let family = &family[..family.len().min(KEY_CAP - 1 - HEADER_ORDER_CAP)];
    buf[..family.len()].copy_from_slice(family);
    buf[family.len()] = b':';
    let mut n = family.len() + 1;
    let mut last = 0;
    for &c in order.iter().take(HEADER_ORDER_CAP) {
        if VISIT_CODES.contains(&c) || c == last {
            continue;
        }
        buf[n] = c;
        n += 1;
        last = c;
    }
    &buf[..n]
}

/// Writes the `headers` key of a request claiming `family` whose
/// `header_order` fingerprint is `order` into `buf`, and returns it.
pub fn headers_key<'b>(family: Family, order: &[u8], buf: &'b mut [u8; KEY_CAP]) -> &'b [u8] {
    write_key(family.name().as_bytes(), order, buf)
}

/// The `headers` key of the request whose features are `v` (after
/// [`crate::features::extract`]): the same text as [`headers_key`] gives
/// for its family and order, so the aggregator and the lookup agree.
pub fn headers_key_of<'b>(v: &FeatureVector<'_>, buf: &'b mut [u8; KEY_CAP]) -> &'b [u8] {
    write_key(v.cat(Cat::UaFamily), v.cat(Cat::HeaderOrder), buf)
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
    if let Some(c) = order.bytes().find(|c| VISIT_CODES.contains(c)) {
        return Err(format!(
            "header order {order:?} has {:?}, a code keys leave out (the visit's headers): no request has this key",
            c as char
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
            b"chrome:hCMPu"
        );
        assert_eq!(headers_key(Family::None, b"", &mut buf), b"none:");
        // The visit's headers are not the software's.
        assert_eq!(
            headers_key(Family::Chrome, b"hCMPiuaSOUDrelkpTLo", &mut buf),
            b"chrome:hCMPuaSODelp"
        );
        assert_eq!(
            headers_key(Family::Chrome, b"hCMPuaSODelp", &mut buf),
            b"chrome:hCMPuaSODelp"
        );
        assert_eq!(headers_key(Family::Curl, b"huakab", &mut buf), b"curl:huab");
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
