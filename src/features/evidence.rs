//! Software evidence (schema 4): what one request says about the software
//! that sent it, as counts of things no browser does.
//!
//! Every feature here is 0 on every request a real browser sends (the
//! rules below are what the captured browsers, curl-impersonate's and
//! browserforge's real-traffic header sets agree on, and no more), and
//! grows by one with each thing no browser of the claimed engine does: a
//! header the engine always sends for this kind of request that is
//! missing, a library's value where the browser has its own, a brand list
//! that contradicts the User-Agent, a `Headless` token, a TLS hello no
//! browser sends. The models that read them are trained with a monotone
//! constraint on each (`models/train.py`): one more contradiction never
//! makes a request look more like a person.
//!
//! Nothing here reads the page (path, query, extension) or the visit
//! (cookies, referer, `sec-fetch-site`): a person may open any URL, arrive
//! from anywhere and come back any number of times.
//!
//! Where a browser's behaviour depends on its version (fetch metadata,
//! client hints), the rule only applies from a version every browser of
//! that engine has shipped the behaviour in, and where it depends on the
//! context (client hints and fetch metadata go to secure contexts only;
//! CORS preflights carry no client hints), the context must be shown by
//! the request itself: TLS facts nginx saw, fetch metadata, or Chromium's
//! and Firefox's `br`, which they only offer to secure contexts.
//!
//! Where a browser sends a group of headers all or none, only a partial
//! group counts: Chromium sends its three low-entropy client hints to every
//! secure context, but none of them when JavaScript is off for the site
//! (captured), and that head is a person's.

use super::bytes::find;
use super::client_hints::BrandList;
use super::orders::Engine;
use super::request::Request;
use super::schema::Float;
use super::user_agent::{Family, Os, UserAgent};
use super::vector::{flag, FeatureVector, HeaderWalk};

/// Chromium sends `sec-ch-ua`, `-mobile` and `-platform` to secure contexts
/// by default from 89 (`-platform` from 93); with a margin. It sends the
/// three or none: none when JavaScript is off for the site.
const CHROMIUM_HINTS_SINCE: u32 = 95;
/// Chromium sends fetch metadata to secure contexts since 76; with a margin.
const CHROMIUM_FETCH_SINCE: u32 = 80;
/// Firefox sends fetch metadata to secure contexts since 90.
const FIREFOX_FETCH_SINCE: u32 = 90;
/// Safari sends fetch metadata since 16.4 (`Version/16.4`); with a margin,
/// from 17 (curl-impersonate's capture of Safari 17.0 has it).
const SAFARI_FETCH_SINCE: u32 = 17;

/// What the request shows about its own kind and context.
struct Kind {
    /// The claimed engine's network stack is one whose HTTP/1 behaviour is
    /// known: Chromium's, Firefox's, and Apple's (Safari and every iOS
    /// browser). WebKitGTK, QtWebKit and unknown engines send their own
    /// `Connection`, or none.
    known_stack: bool,
    /// HTTP/1.x: browsers send `Connection: keep-alive` there.
    h1: bool,
    /// A CORS preflight (`OPTIONS`): Chromium sends no client hints on it,
    /// and fetch metadata even to plain-HTTP origins (captured).
    preflight: bool,
    /// A WebSocket handshake (`Connection: Upgrade`): no `Accept`.
    websocket: bool,
    /// The browser's context is secure, shown by the request: TLS facts,
    /// fetch metadata (not on a preflight), or, for Chromium and Firefox,
    /// `br` (neither offers it to plain-HTTP origins, captured).
    secure: bool,
    /// A navigation, by its fetch metadata (`sec-fetch-mode: navigate`) or,
    /// without fetch metadata, by its `Accept` (only navigations ask for
    /// `text/html`): browsers send `Upgrade-Insecure-Requests` on them.
    navigation: bool,
    /// A navigation by any sign of one, `Accept` aside: fetch mode or
    /// destination, or `Upgrade-Insecure-Requests` (sent on navigations
    /// only). Its `Accept` asks for `text/html`.
    declared_navigation: bool,
}

impl Kind {
    fn of(req: &Request<'_>, seen: &HeaderWalk<'_>, ua: &UserAgent, engine: Engine) -> Kind {
        let apple = matches!(ua.os, Os::MacOs | Os::Ios);
        let preflight = req.method() == b"OPTIONS";
        // Looked for only when nothing else shows the context.
        let br_secure = || {
            matches!(engine, Engine::Chromium | Engine::Gecko)
                && !preflight
                && seen
                    .accept_encoding
                    .is_some_and(|e| find(e, b"br").is_some() || find(e, b"zstd").is_some())
        };
        let mode = seen.fetch.mode.map(<[u8]>::trim_ascii);
        let dest = seen.fetch.dest.map(<[u8]>::trim_ascii);
        let by_fetch =
            mode == Some(b"navigate") || matches!(dest, Some(b"document" | b"iframe" | b"frame"));
        Kind {
            known_stack: match engine {
                Engine::Chromium | Engine::Gecko => true,
                Engine::WebKit => apple,
                Engine::Other => false,
            },
            h1: req.client_version().is_some_and(|v| v < 20),
            preflight,
            websocket: seen.connection.is_some_and(has_upgrade),
            secure: req.tls().is_some() || (seen.fetch.any() && !preflight) || br_secure(),
            navigation: if seen.fetch.any() {
                mode == Some(b"navigate")
            } else {
                matches!(req.method(), b"GET" | b"POST")
                    && seen.accept.is_some_and(|a| find(a, b"text/html").is_some())
            },
            declared_navigation: by_fetch || seen.upgrade_insecure_requests.is_some(),
        }
    }
}

/// Whether a `Connection` value asks for an upgrade (`Upgrade`, Firefox's
/// `keep-alive, Upgrade`).
fn has_upgrade(value: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"upgrade"))
}

/// Sets the schema-4 evidence features of `out`.
pub(super) fn extract<'a>(
    req: &Request<'a>,
    seen: &HeaderWalk<'a>,
    ua: &UserAgent,
    brands: Option<&BrandList<'_>>,
    out: &mut FeatureVector<'a>,
) {
    let engine = Engine::of(ua);
    let (missing, accept, encoding, connection) = match engine {
        Some(engine) => {
            let kind = Kind::of(req, seen, ua, engine);
            (
                missing_headers(req, seen, ua, engine, &kind),
                accept_non_browser(seen, &kind),
                encoding_non_browser(seen),
                kind.h1
                    && kind.known_stack
                    && seen.connection.is_some_and(|c| !browser_connection(c)),
            )
        }
        None => (0, false, false, false),
    };
    out.set(Float::EngineHeadersMissing, missing as f32);
    out.set_flag(Float::AcceptNonBrowser, accept);
    out.set_flag(Float::EncodingNonBrowser, encoding);
    out.set_flag(Float::ConnectionNonBrowser, connection);
    // The brand list of a Chromium UA (another engine's hints are
    // `ch_non_chromium` already).
    let brands = brands.filter(|_| engine == Some(Engine::Chromium));
    out.set(
        Float::ChBrandMismatch,
        brands.map_or(0, |b| brand_mismatch(ua, b)) as f32,
    );
    let headless = u32::from(ua.family == Family::HeadlessChrome)
        + u32::from(brands.is_some_and(|b| b.named.headless));
    out.set(Float::HeadlessTokens, headless as f32);
    out.set_flag(
        Float::FetchContradiction,
        seen.fetch.contradicts(req.method() == b"OPTIONS"),
    );
    out.set(
        Float::TlsBrowserNoTls13,
        req.tls()
            .map_or(f32::NAN, |t| flag(engine.is_some() && !t.tls13())),
    );
}

/// The headers the claimed engine always sends on a request of this kind
/// that are missing.
fn missing_headers(
    req: &Request<'_>,
    seen: &HeaderWalk<'_>,
    ua: &UserAgent,
    engine: Engine,
    kind: &Kind,
) -> u32 {
    let absent = |h: Option<&[u8]>| u32::from(h.is_none());
    let fetch = || absent(seen.fetch.site) + absent(seen.fetch.mode) + absent(seen.fetch.dest);
    let mut n = absent(seen.accept_language);
    // Only the known stacks send `Accept-Encoding` on every request:
    // WebKitGTK's media element fetches through GStreamer's HTTP source,
    // which sends none (captured: Epiphany's audio and video, with
    // `Icy-Metadata`, and over plain HTTP with no fetch metadata to show
    // it is media).
    if kind.known_stack {
        n += absent(seen.accept_encoding);
    }
    if !kind.websocket {
        n += absent(seen.accept);
    }
    if kind.h1 && kind.known_stack {
        n += absent(seen.connection);
    }
    match engine {
        Engine::Chromium => {
            let v = ua.chromium.unwrap_or(0);
            if kind.secure && !kind.preflight && !ua.webview && v >= CHROMIUM_HINTS_SINCE {
                n += partial_hints(seen);
            }
            if kind.secure && v >= CHROMIUM_FETCH_SINCE {
                n += fetch();
            }
            if kind.navigation {
                n += absent(seen.upgrade_insecure_requests);
            }
        }
        Engine::Gecko => {
            if kind.secure && ua.major.unwrap_or(0) >= FIREFOX_FETCH_SINCE {
                n += fetch();
            }
            if kind.navigation {
                n += absent(seen.upgrade_insecure_requests);
            }
            // `TE: trailers` on every HTTP/2 request (captured: Firefox 153,
            // and every browserforge Firefox set).
            if req.client_version() == Some(20) && !seen.te {
                n += 1;
            }
        }
        Engine::WebKit => {
            // Apple's Safari only: WebKitGTK's releases follow their own
            // numbering, and other iOS browsers do not say which Safari.
            if kind.secure
                && kind.known_stack
                && ua.claim == Family::Safari
                && ua.major.unwrap_or(0) >= SAFARI_FETCH_SINCE
            {
                n += fetch();
            }
        }
        Engine::Other => {}
    }
    n
}

/// How many of Chromium's three low-entropy client hints are missing from
/// a set that has the others: 1 or 2. All three missing is 0: Chromium with
/// JavaScript off for the site sends none, its head otherwise byte for byte
/// the same (captured: Chromium 156, tests/e2e/data/behaviour/), so only a
/// partial set is something no browser sends.
fn partial_hints(seen: &HeaderWalk<'_>) -> u32 {
    let absent = |h: Option<&[u8]>| u32::from(h.is_none());
    match absent(seen.ch_ua) + absent(seen.ch_mobile) + absent(seen.ch_platform) {
        3 => 0,
        n => n,
    }
}

/// An `Accept` no browser sends on this kind of request: a navigation that
/// does not ask for `text/html`, a stylesheet that does not ask for
/// `text/css`, an image that asks for no `image/` type, or q-values
/// without their leading zero (`q=.2`, Java's default).
fn accept_non_browser(seen: &HeaderWalk<'_>, kind: &Kind) -> bool {
    let Some(accept) = seen.accept else {
        return false;
    };
    if find(accept, b"q=.").is_some() {
        return true;
    }
    if kind.declared_navigation && find(accept, b"text/html").is_none() {
        return true;
    }
    // The sub-resource rules are the known stacks' (WebKitGTK asks for a
    // favicon with `*/*`, captured).
    if !kind.known_stack {
        return false;
    }
    match seen.fetch.dest.map(<[u8]>::trim_ascii) {
        Some(b"style") => find(accept, b"text/css").is_none(),
        Some(b"image") => find(accept, b"image/").is_none(),
        _ => false,
    }
}

/// An `Accept-Encoding` no browser sends: without `gzip` (wget's and
/// urllib's `identity`); media requests (`Range`) ask for `identity` only.
///
/// Not `br`: people behind TLS-inspecting antivirus software and corporate
/// proxies send `gzip, deflate` (with or without `zstd`) over HTTPS
/// (browserforge's real-traffic sets: 15 % of Chrome on Windows over
/// HTTP/1.1).
fn encoding_non_browser(seen: &HeaderWalk<'_>) -> bool {
    seen.accept_encoding
        .is_some_and(|e| !seen.range && find(e, b"gzip").is_none())
}

/// Browsers send `Connection: keep-alive` (lower case) over HTTP/1.1, and
/// `Upgrade` (with `keep-alive` in Firefox) for a WebSocket.
fn browser_connection(value: &[u8]) -> bool {
    value == b"keep-alive" || has_upgrade(value)
}

/// Contradictions between a Chromium User-Agent and its `sec-ch-ua`: no
/// GREASE brand, no `Chromium` brand, another product's brand.
fn brand_mismatch(ua: &UserAgent, list: &BrandList<'_>) -> u32 {
    let named = list.named;
    let family = ua.family;
    let other_product = (named.google_chrome
        && !matches!(family, Family::Chrome | Family::HeadlessChrome))
        || (named.edge && family != Family::Edge)
        || (named.opera && family != Family::Opera)
        || (named.samsung && family != Family::Samsung);
    u32::from(!list.grease) + u32::from(!list.chromium) + u32::from(other_product)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_values() {
        assert!(browser_connection(b"keep-alive"));
        assert!(browser_connection(b"Upgrade"));
        assert!(browser_connection(b"keep-alive, Upgrade"));
        assert!(!browser_connection(b"Keep-Alive"));
        assert!(!browser_connection(b"close"));
        assert!(!browser_connection(b""));
    }

    const CHROMIUM: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
    const HINTS: [&str; 3] = ["sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform"];

    /// Chromium 156's stylesheet request over HTTP/1.1 (captured, in
    /// tests/e2e/data/behaviour/chromium-cold.json) without the hints in
    /// `dropped`: with JavaScript off it sends it with none of them.
    fn chromium_style(dropped: &[&str]) -> Vec<crate::headers::Header<'static>> {
        let all = [
            ("Connection", "keep-alive"),
            ("sec-ch-ua-platform", "\"Linux\""),
            (
                "sec-ch-ua",
                "\"Not:A-Brand\";v=\"8\", \"Chromium\";v=\"156\"",
            ),
            ("sec-ch-ua-mobile", "?0"),
            ("Accept", "text/css,*/*;q=0.1"),
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Sec-Fetch-Dest", "style"),
            ("Accept-Encoding", "gzip, deflate, br, zstd"),
        ];
        let kept: Vec<_> = all
            .into_iter()
            .filter(|(k, _)| !dropped.contains(k))
            .collect();
        head(CHROMIUM, &kept)
    }

    /// Chromium sends its three low-entropy hints all or none: none is a
    /// browser's head (JavaScript off), one or two missing is evidence, one
    /// per header.
    #[test]
    fn client_hints_are_all_or_none() {
        let cases: [(&[&str], f32); 8] = [
            (&[], 0.0),
            (&HINTS, 0.0),
            (&HINTS[..1], 1.0),
            (&HINTS[1..2], 1.0),
            (&HINTS[2..], 1.0),
            (&HINTS[..2], 2.0),
            (&HINTS[1..], 2.0),
            (&[HINTS[0], HINTS[2]], 2.0),
        ];
        for (dropped, want) in cases {
            let headers = chromium_style(dropped);
            let v = vector(&headers, None);
            assert_eq!(v.float(Float::EngineHeadersMissing), want, "{dropped:?}");
        }
        // The other headers still count beside no hints at all.
        let mut headers = chromium_style(&HINTS);
        headers.retain(|h| !h.name().eq_ignore_ascii_case(b"accept-language"));
        let v = vector(&headers, None);
        assert_eq!(v.float(Float::EngineHeadersMissing), 1.0);
    }

    const WEBKITGTK: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
    const SAFARI: &[u8] = b"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15";
    /// Epiphany's ClientHello (GnuTLS), captured.
    const GNUTLS: &[u8] = b"t13d2914h2_723694b0fccc_067a5f92fbdb";

    fn vector<'a>(
        headers: &'a [crate::headers::Header<'a>],
        family: Option<crate::tls::Family>,
    ) -> FeatureVector<'a> {
        let tls = family.and_then(|f| super::super::TlsFacts::new(GNUTLS, f));
        let req = Request::new(b"GET", b"/", 11, b"127.0.0.1", headers).with_tls(tls);
        let mut v = FeatureVector::new();
        super::super::extract(&req, &mut v);
        v
    }

    fn head<'a>(ua: &'a [u8], rest: &[(&'a str, &'a str)]) -> Vec<crate::headers::Header<'a>> {
        let mut h = vec![
            crate::headers::Header::new(b"Host", b"shop.test"),
            crate::headers::Header::new(b"User-Agent", ua),
            crate::headers::Header::new(b"Accept-Language", b"en-US,en;q=0.90"),
        ];
        h.extend(
            rest.iter()
                .map(|(k, v)| crate::headers::Header::new(k.as_bytes(), v.as_bytes())),
        );
        h
    }

    /// What Epiphany (WebKitGTK) sends, captured: GStreamer's media request
    /// without `Accept-Encoding`, a favicon asked for with `*/*`, GnuTLS's
    /// hello. No evidence; the same from Safari on macOS is.
    #[test]
    fn webkitgtk_is_not_held_to_apples_stack() {
        let media = [
            ("Connection", "close"),
            ("Accept", "*/*"),
            ("Icy-Metadata", "1"),
        ];
        let favicon = [
            ("Accept", "*/*"),
            ("Accept-Encoding", "gzip, deflate"),
            ("Connection", "keep-alive"),
            ("Sec-Fetch-Dest", "image"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Sec-Fetch-Site", "same-origin"),
        ];
        let nav = [
            (
                "Accept",
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            ),
            ("Accept-Encoding", "gzip, deflate, br"),
            ("Connection", "keep-alive"),
            ("Sec-Fetch-Dest", "document"),
            ("Sec-Fetch-Mode", "navigate"),
            ("Sec-Fetch-Site", "none"),
        ];
        let openssl = Some(crate::tls::Family::Openssl);
        let (gtk_media, gtk_favicon, gtk_nav) = (
            head(WEBKITGTK, &media),
            head(WEBKITGTK, &favicon),
            head(WEBKITGTK, &nav),
        );
        let v = vector(&gtk_media, None);
        assert_eq!(v.float(Float::EngineHeadersMissing), 0.0);
        let v = vector(&gtk_favicon, None);
        assert_eq!(v.float(Float::AcceptNonBrowser), 0.0);
        let v = vector(&gtk_nav, openssl);
        assert_eq!(v.float(Float::TlsFamilyMismatch), 0.0);
        // Apple's Safari: every one of them is evidence.
        let (safari_media, safari_favicon, safari_nav) = (
            head(SAFARI, &media),
            head(SAFARI, &favicon),
            head(SAFARI, &nav),
        );
        let v = vector(&safari_media, None);
        assert!(v.float(Float::EngineHeadersMissing) >= 1.0);
        let v = vector(&safari_favicon, None);
        assert_eq!(v.float(Float::AcceptNonBrowser), 1.0);
        let v = vector(&safari_nav, openssl);
        assert_eq!(v.float(Float::TlsFamilyMismatch), 1.0);
    }
}
