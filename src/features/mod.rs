//! Request features for bot scoring.
//!
//! [`extract`] turns one [`Request`] (nginx's own bytes, borrowed) into a
//! fixed-size [`FeatureVector`]: float values, and categorical values as byte
//! strings borrowed from the request or written into small buffers inside the
//! vector. Extraction allocates nothing and never fails: every input, however
//! malformed, gives a vector.
//!
//! Models map their inputs to this schema by feature name ([`FLOAT_FEATURES`],
//! [`CAT_FEATURES`]); the scorer hashes each categorical value once and shares
//! the hash across models. `edgeguard features` prints the same vectors for
//! JSON Lines requests, so training and serving run this code.
//!
//! Headers are looked at in arrival order; names compare case-insensitively.
//! When a header is repeated, the first one counts (except `cookie`, where
//! every header's cookies are counted, since HTTP/2 splits them). A flag is
//! 1 or 0; NaN means "the request has nothing to measure" (no User-Agent, no
//! `accept`, ...), which CatBoost treats as its own value.
//!
//! A request a trusted L7 hop relayed ([`Request::relayed`], `src/hop/`)
//! is read as the client sent it to the hop: the hop's headers are not in
//! it, the evidence that reads the HTTP version (`connection` over
//! HTTP/1, Firefox's `te` over HTTP/2) is off ([`Kept::version`]), and
//! where the hop reorders headers ([`Kept::order`]) the order features are
//! 0: nothing seen, never evidence.
//!
//! # Float features
//!
//! | name | how it is computed |
//! |---|---|
//! | `http_version` | HTTP version as nginx reports it, divided by 10: 1.0, 1.1, 2, 3 |
//! | `uri_len` | bytes in the request target as sent |
//! | `path_depth` | non-empty path segments (`/` is 0, `/a/b/` is 2); an absolute-form target is reduced to its path |
//! | `query_arg_count` | non-empty `&`-separated query arguments |
//! | `header_count` | request headers, repeats included |
//! | `ua_len` | bytes in the User-Agent; NaN without one |
//! | `ua_major` | major version of the claimed family (the branded browser's, e.g. `OPR/110`; the library's, e.g. `curl/8`); NaN if none |
//! | `ua_mobile` | 1 if the UA says `Mobile`; NaN without a UA |
//! | `has_accept`, `accept_len` | `accept` present; its length (NaN if absent). Every browser sends it on navigation |
//! | `has_accept_language`, `accept_language_count` | present; comma-separated items (NaN if absent) |
//! | `has_accept_encoding`, `accept_encoding_count` | present; comma-separated items (NaN if absent) |
//! | `client_hint_count` | `sec-ch-ua` and `sec-ch-ua-*` headers |
//! | `fetch_metadata_count` | `sec-fetch-*` headers |
//! | `has_upgrade_insecure_requests`, `has_referer`, `has_connection`, `has_host` | presence flags |
//! | `has_cookie`, `cookie_count` | any `cookie` header; `;`-separated cookies over all of them |
//! | `client_ipv6` | 1 for an IPv6 client address, 0 for IPv4, NaN otherwise (unix socket) |
//! | `ch_ua_major` | Chromium version `sec-ch-ua` claims (the `Chromium` brand, else the highest non-GREASE brand); NaN without one |
//!
//! Consistency checks, each 1 when the request contradicts itself:
//!
//! | name | 1 when |
//! |---|---|
//! | `ch_missing` | (schema 1) the UA claims a Chromium engine >= 90 off iOS (client hints are on by default since 90) and `sec-ch-ua` is absent. Chromium sends no hints to plain-HTTP origins: behind TLS termination this is what is wanted |
//! | `ch_version_mismatch` | `sec-ch-ua` comes with a Chromium UA and its Chromium version differs from the UA's `Chrome/` version, or names none |
//! | `ch_non_chromium` | client hints come with a UA that is not Chromium (Firefox and Safari send none) |
//! | `ch_platform_mismatch` | `sec-ch-ua-platform` names another OS than the UA |
//! | `ch_mobile_mismatch` | `sec-ch-ua-mobile` disagrees with the UA's `Mobile`, or is not `?0`/`?1` |
//! | `fetch_non_browser` | `sec-fetch-*` headers come with a UA that claims no browser |
//! | `fetch_incoherent` | the `sec-fetch-*` values form a combination no browser sends (see [`fetch_metadata`]) |
//! | `order_inversions` | (schema 1, a count) pairs of headers that arrived in the opposite of a hand-written order of the claimed browser (see [`header_order`]); NaN when the UA claims no browser |
//! | `ch_missing_secure` | (schema 2) the UA claims a Chromium engine >= 90 off iOS, `sec-ch-ua` is absent, and `sec-fetch-*` headers are present. Chromium sends both to secure contexts (HTTPS, `localhost`, `127.0.0.1`) and neither to plain-HTTP hostnames, so only the first shape contradicts itself |
//! | `order_reversed_pairs` | (schema 2, a count) distinct pairs of known headers that arrived as `a` before `b` where people's browsers of the claimed engine, in the training data, sent `b` before `a` and never `a` before `b`: the table is learnt by `models/train.py` and shipped in the model metadata (see [`orders`]); NaN when the UA claims no browser or no table is given |
//!
//! TLS features (schema 3), from the connection's JA4 and the TLS library
//! family its cipher list suggests (see [`tls`]); NaN for every float
//! without TLS facts (plain HTTP, no `ssl_client_hello_by_lua`, TLS ended in
//! front of nginx):
//!
//! | name | how it is computed |
//! |---|---|
//! | `tls13` | 1 if the client offered TLS 1.3, else 0 |
//! | `tls_cipher_count`, `tls_extension_count` | JA4's counts (GREASE left out, at most 99) |
//! | `tls_alpn_h2` | 1 if the first ALPN value offered is `h2`, else 0 |
//! | `tls_family_mismatch` | 1 if the UA claims a browser engine and the ClientHello is not its library's (Chromium, Safari on macOS and iOS: BoringSSL-like GREASE; Firefox: NSS; WebKit elsewhere, WebKitGTK's GnuTLS: none expected), else 0 |
//! | `tls_browser_no_h2` | 1 if the UA claims a browser and the first ALPN value is not `h2` (browsers always offer HTTP/2 first), else 0 |
//!
//! Software evidence (schema 4, see [`evidence`]): counts of things no
//! browser of the claimed engine does, each 0 on every request a real
//! browser sends.
//!
//! | name | how it is computed |
//! |---|---|
//! | `engine_headers_missing` | headers the claimed engine always sends on this kind of request that are missing: `accept` (not on a WebSocket handshake), `accept-language`; `accept-encoding`, and `connection` over HTTP/1, from Chromium, Firefox and Apple's Safari (WebKitGTK's media requests, made by GStreamer, send neither); for Chromium >= 95 in a secure context (TLS facts, fetch metadata, or `br`), not on a CORS preflight nor from Android's WebView, the three client hints when one or two of them are sent (Chromium sends all or none: none with JavaScript off); fetch metadata (`site`, `mode`, `dest`) in a secure context from Chromium >= 80, Firefox >= 90, Safari >= 17 on macOS and iOS; `upgrade-insecure-requests` on Chromium's and Firefox's navigations; Firefox's `te` over HTTP/2. 0 for UAs that claim no browser |
//! | `accept_non_browser` | a browser UA's `accept` asks for no `text/html` on a navigation (fetch mode or destination, or `upgrade-insecure-requests`), no `text/css` for a stylesheet, no `image/` type for an image (these two from Chromium, Firefox and Apple's Safari only: WebKitGTK asks for a favicon with `*/*`), or writes `q=.2` |
//! | `encoding_non_browser` | a browser UA's `accept-encoding` lacks `gzip` (wget's and urllib's `identity`); requests with `range` (media) aside. Not `br`: people behind TLS-inspecting antivirus software send `gzip, deflate` over HTTPS |
//! | `connection_non_browser` | a Chromium, Firefox or Apple Safari UA sends a `connection` over HTTP/1 other than `keep-alive` or an upgrade |
//! | `ch_brand_mismatch` | a Chromium UA's `sec-ch-ua` has no GREASE brand (+1), no `Chromium` brand (+1), or another product's brand (`Google Chrome` under Edge, `Microsoft Edge` under Chrome, ...: +1) |
//! | `headless_tokens` | `HeadlessChrome` in the User-Agent (+1) and as the `sec-ch-ua` brand of a Chromium UA (+1) |
//! | `tls_browser_no_tls13` | the UA claims a browser and the ClientHello offers no TLS 1.3; NaN without TLS facts |
//! | `fetch_contradiction` | `fetch_incoherent`, except that a destination token it does not know (`websocket`, `speculationrules`, ...) is taken as one a browser may send and the lone `sec-fetch-mode: cors` Chromium sends on a CORS preflight (`OPTIONS`) to a plain-HTTP origin is none |
//!
//! Schema versions (which of these a model may read) are described in the
//! `schema` module: `edgeguard.schema` in a model's metadata.
//!
//! # Categorical features
//!
//! | name | value |
//! |---|---|
//! | `method` | request method as sent |
//! | `uri_ext` | extension of the last path segment, lower-cased; `~` if longer than 8 or not alphanumeric; empty if none |
//! | `header_order` | header-order fingerprint: one code per known header name in arrival order, runs collapsed, unknown names skipped, at most 32 bytes (`+` marks truncation). Chrome over HTTP/2 gives `hCMPiuaSOUDel` |
//! | `ua_family` | `chrome`, `headless-chrome`, `edge`, `opera`, `samsung`, `firefox`, `safari`, `other-browser`, `curl`, `wget`, `python-requests`, `python-aiohttp`, `python-httpx`, `python-urllib`, `go`, `java`, `okhttp`, `node`, `axios`, `bot` (declares itself a crawler), `other`, `none` |
//! | `ua_os` | `windows`, `macos`, `linux`, `android`, `ios`, `chromeos`, `other`, `none` |
//! | `ch_brand` | first `sec-ch-ua` brand that is neither GREASE nor `Chromium` (`Google Chrome`, `Microsoft Edge`, `Brave`, `HeadlessChrome`), as sent; empty if none |
//! | `accept_language_primary` | primary subtag of the first `accept-language` item, lower-cased (`en`); `*`; `~` if malformed; empty if absent |
//! | `accept`, `accept_encoding`, `fetch_site`, `fetch_mode`, `connection` | the header's value as sent (first occurrence); empty if absent |
//! | `tls_ja4` | (schema 3) the connection's JA4; empty without TLS facts |
//! | `tls_ja4_a` | (schema 3) its first part (`t13d1516h2`); empty without TLS facts |
//! | `tls_family` | (schema 3) `boringssl`, `nss`, `openssl`, `go`, `unknown`; `none` without TLS facts |
//! | `ua_claim` | (schema 4) `browser` for every User-Agent that claims a browser (whatever the product: Chrome, Edge, Safari, an in-app browser, `HeadlessChrome`), which takes a product's version or an engine's (`AppleWebKit/N`, `Gecko/N`): `Mozilla/5.0` alone is `other`; else the family's value, a bot word counted as a whole word and not in an Android UA's device name (`CUBOT`) |
//!
//! An absent header and a header with an empty value give the same empty
//! categorical value: browsers send neither, so the difference carries little.

#![forbid(unsafe_code)]

mod bytes;
pub mod client_hints;
#[cfg(test)]
mod corpus;
mod evidence;
pub mod fetch_metadata;
pub mod header_order;
pub mod language;
mod needs;
pub mod orders;
pub mod reasons;
mod request;
mod schema;
pub mod tls;
pub mod uri;
pub mod user_agent;
mod vector;

pub use needs::Needs;
pub use reasons::{Grade, Reasons};
pub use schema::{
    Cat, FeatureSpec, Float, CAT_COUNT, CAT_FEATURES, EVIDENCE, FLOAT_COUNT, FLOAT_FEATURES,
    SCHEMA_KEY, SCHEMA_VERSION, SCHEMA_VERSIONS,
};

use orders::{Engine, OrderTable};
pub use request::{Kept, Request, TlsFacts};
use user_agent::{Family, UserAgent};
use vector::{flag, CatValue, HeaderWalk};
pub use vector::{FeatureVector, HEADER_ORDER_CAP};

/// Fills `out` with the features of `req`, without a learnt order table
/// (`order_reversed_pairs` is NaN). Allocates nothing.
pub fn extract<'a>(req: &Request<'a>, out: &mut FeatureVector<'a>) {
    extract_with(req, None, out);
}

/// Fills `out` with the features of `req`; `orders` is the learnt order
/// table the models were trained with (see [`orders`]). Allocates nothing.
///
/// One pass over the headers, then one phase per group of features; each
/// phase writes its own features and reads only the walk's result (and the
/// parsed User-Agent), so a new group is one more line here.
pub fn extract_with<'a>(
    req: &Request<'a>,
    orders: Option<&OrderTable>,
    out: &mut FeatureVector<'a>,
) {
    extract_needed(req, orders, Needs::ALL, out);
}

/// [`extract_with`] computing only the optional groups `needs` names (a
/// scorer's models' [`Needs`]); the features left out keep a fresh
/// vector's values. Allocates nothing.
pub fn extract_needed<'a>(
    req: &Request<'a>,
    orders: Option<&OrderTable>,
    needs: Needs,
    out: &mut FeatureVector<'a>,
) {
    // Filled in place: returned from the walk, the 330 bytes were copied.
    let mut seen = HeaderWalk::new();
    walk_headers(req, &mut seen, needs, out);
    request_line(req, needs, out);
    let ua = user_agent_features(&seen, out);
    header_presence(&seen, needs, out);
    // One pass over `sec-ch-ua` for both readings (schemas 1-3, 4).
    let brands = seen.ch_ua.map(client_hints::BrandList::read);
    client_hint_checks(&seen, &ua, brands.as_ref(), out);
    order_features(&seen, &ua, req.kept().order.then_some(orders), needs, out);
    header_values(&seen, needs, out);
    tls::extract(req.tls(), &ua, out);
    evidence::extract(req, &seen, &ua, brands.as_ref(), out);
}

/// Headers whose [`header_order::candidate`] lookups the walk issues
/// together before confirming them.
const RUN: usize = 16;

/// The one pass over the headers: the `header_order` fingerprint, and what
/// the other phases read.
fn walk_headers<'a>(
    req: &Request<'a>,
    seen: &mut HeaderWalk<'a>,
    needs: Needs,
    out: &mut FeatureVector<'a>,
) {
    out.order.clear();
    for run in req.headers.chunks(RUN) {
        let mut entries = [0u8; RUN];
        for (entry, h) in entries.iter_mut().zip(run) {
            *entry = header_order::candidate(h.name());
        }
        for (&entry, h) in entries.iter().zip(run) {
            let code = header_order::confirm(h.name(), entry);
            out.order.push(code);
            seen.header(code, h.value());
        }
    }
    out.cats[Cat::HeaderOrder.index()] = CatValue::HeaderOrder;
    out.set(Float::HeaderCount, seen.headers as f32);
    let family = if needs.address {
        ip_family(req.client_addr())
    } else {
        f32::NAN
    };
    out.set(Float::ClientIpv6, family);
}

/// What the User-Agent claims; returns the parse for the checks that
/// compare it with the other headers.
fn user_agent_features(seen: &HeaderWalk<'_>, out: &mut FeatureVector<'_>) -> UserAgent {
    let ua_bytes = seen.user_agent.unwrap_or(b"");
    let ua = user_agent::parse(ua_bytes);
    let has_ua = ua.family != Family::None;
    out.set(
        Float::UaLen,
        if seen.user_agent.is_some() {
            ua_bytes.len() as f32
        } else {
            f32::NAN
        },
    );
    out.set(Float::UaMajor, ua.major.map_or(f32::NAN, |v| v as f32));
    out.set(
        Float::UaMobile,
        if has_ua { flag(ua.mobile) } else { f32::NAN },
    );
    out.set_cat(Cat::UaFamily, ua.family.name().as_bytes());
    out.set_cat(
        Cat::UaClaim,
        if ua.claim.is_browser() {
            b"browser"
        } else {
            ua.claim.name().as_bytes()
        },
    );
    out.set_cat(Cat::UaOs, ua.os.name().as_bytes());
    ua
}

/// Presence flags, lengths and counts of the headers themselves.
fn header_presence(seen: &HeaderWalk<'_>, needs: Needs, out: &mut FeatureVector<'_>) {
    out.set_flag(Float::HasAccept, seen.accept.is_some());
    out.set(
        Float::AcceptLen,
        seen.accept.map_or(f32::NAN, |v| v.len() as f32),
    );
    out.set_flag(Float::HasAcceptLanguage, seen.accept_language.is_some());
    out.set_flag(Float::HasAcceptEncoding, seen.accept_encoding.is_some());
    let lists = |v| if needs.lists { list_len(v) } else { f32::NAN };
    out.set(Float::AcceptLanguageCount, lists(seen.accept_language));
    out.set(Float::AcceptEncodingCount, lists(seen.accept_encoding));
    out.set(Float::ClientHintCount, seen.client_hints as f32);
    out.set(Float::FetchMetadataCount, seen.fetch_headers as f32);
    out.set_flag(
        Float::HasUpgradeInsecureRequests,
        seen.upgrade_insecure_requests.is_some(),
    );
    out.set_flag(Float::HasCookie, seen.cookie_headers > 0);
    out.set(Float::CookieCount, seen.cookies as f32);
    out.set_flag(Float::HasReferer, seen.referer.is_some());
    out.set_flag(Float::HasConnection, seen.connection.is_some());
    out.set_flag(Float::HasHost, seen.host.is_some());
}

/// Client hints and fetch metadata against the UA's claims, and the brand
/// `sec-ch-ua` names (read in the same pass as its version).
fn client_hint_checks<'a>(
    seen: &HeaderWalk<'a>,
    ua: &UserAgent,
    brands: Option<&client_hints::BrandList<'a>>,
    out: &mut FeatureVector<'a>,
) {
    let has_ua = ua.family != Family::None;
    let engine = ua.chromium;
    let hints_expected = ua.os != user_agent::Os::Ios
        && engine.is_some_and(|v| v >= client_hints::CLIENT_HINTS_SINCE);
    // Schemas 1 to 3 read the brand list as they were trained (see
    // `client_hints::read`); schema 4's evidence reads its own
    // `BrandList`, every GREASE spelling recognized.
    let (ch_major, ch_brand) = brands.map_or((None, &b""[..]), |b| b.legacy);
    out.set_cat(Cat::ChBrand, ch_brand);
    out.set(Float::ChUaMajor, ch_major.map_or(f32::NAN, |v| v as f32));
    out.set_flag(Float::ChMissing, seen.ch_ua.is_none() && hints_expected);
    out.set_flag(
        Float::ChVersionMismatch,
        seen.ch_ua.is_some() && engine.is_some() && ch_major != engine,
    );
    out.set_flag(
        Float::ChNonChromium,
        seen.client_hints > 0 && !ua.family.is_chromium(),
    );
    out.set_flag(
        Float::ChPlatformMismatch,
        seen.ch_platform
            .and_then(|p| client_hints::platform_matches(p, ua.os))
            == Some(false),
    );
    out.set_flag(
        Float::ChMobileMismatch,
        match seen.ch_mobile {
            Some(v) => match client_hints::mobile_flag(v) {
                Some(m) => has_ua && m != ua.mobile,
                None => true,
            },
            None => false,
        },
    );
    // Chromium sends client hints and fetch metadata to secure contexts
    // only (HTTPS, localhost): with neither, the origin is plain HTTP and
    // the missing hints are what a real browser sends.
    out.set_flag(
        Float::ChMissingSecure,
        seen.ch_ua.is_none() && seen.fetch_headers > 0 && hints_expected,
    );
    out.set_flag(
        Float::FetchNonBrowser,
        seen.fetch.any() && !ua.family.is_browser(),
    );
    out.set_flag(Float::FetchIncoherent, seen.fetch.incoherent());
}

/// The header order against the claimed browser's: the hand-written order
/// (schema 1) and the learnt table (schema 2).
/// `orders` is `None` when the headers did not arrive in the client's
/// order (a hop that sorts them): then no pair counts against it.
fn order_features(
    seen: &HeaderWalk<'_>,
    ua: &UserAgent,
    orders: Option<Option<&OrderTable>>,
    needs: Needs,
    out: &mut FeatureVector<'_>,
) {
    let Some(orders) = orders else {
        let claim = |known: bool| if known { 0.0 } else { f32::NAN };
        let inversions = match needs.inversions {
            true => claim(header_order::canonical_order(ua.family).is_some()),
            false => f32::NAN,
        };
        out.set(Float::OrderInversions, inversions);
        out.set(Float::OrderReversedPairs, claim(Engine::of(ua).is_some()));
        return;
    };
    let order = needs
        .inversions
        .then(|| header_order::canonical_order(ua.family))
        .flatten();
    out.set(
        Float::OrderInversions,
        order.map_or(f32::NAN, |order| {
            header_order::inversions(seen.codes().iter().copied(), order) as f32
        }),
    );
    out.set(
        Float::OrderReversedPairs,
        match (orders, Engine::of(ua)) {
            (Some(table), Some(engine)) => table.reversed_pairs(engine, seen.codes()) as f32,
            _ => f32::NAN,
        },
    );
}

/// Categorical values taken from the headers as sent (or reduced to a
/// small buffer: the primary language).
fn header_values<'a>(seen: &HeaderWalk<'a>, needs: Needs, out: &mut FeatureVector<'a>) {
    if needs.language {
        out.language_len =
            language::write_primary(seen.accept_language.unwrap_or(b""), &mut out.language);
        out.cats[Cat::AcceptLanguagePrimary.index()] = CatValue::Language;
    } else {
        out.set_cat(Cat::AcceptLanguagePrimary, b"");
    }
    out.set_cat(Cat::Accept, seen.accept.unwrap_or(b""));
    out.set_cat(Cat::AcceptEncoding, seen.accept_encoding.unwrap_or(b""));
    out.set_cat(Cat::FetchSite, seen.fetch.site.unwrap_or(b""));
    out.set_cat(Cat::FetchMode, seen.fetch.mode.unwrap_or(b""));
    out.set_cat(Cat::Connection, seen.connection.unwrap_or(b""));
}

/// Features of the request line: method, version, target.
fn request_line<'a>(req: &Request<'a>, needs: Needs, out: &mut FeatureVector<'a>) {
    out.set(Float::HttpVersion, f32::from(req.http_version()) / 10.0);
    out.set(Float::UriLen, req.uri().len() as f32);
    out.set_cat(Cat::Method, req.method());
    if needs.target {
        let target = uri::split(req.uri());
        out.set(Float::PathDepth, uri::depth(target.path) as f32);
        out.set(Float::QueryArgCount, uri::arg_count(target.query) as f32);
        out.ext_len = uri::write_ext(uri::extension(target.path), &mut out.ext);
        out.cats[Cat::UriExt.index()] = CatValue::UriExt;
    } else {
        out.set(Float::PathDepth, f32::NAN);
        out.set(Float::QueryArgCount, f32::NAN);
        out.set_cat(Cat::UriExt, b"");
    }
}

fn list_len(value: Option<&[u8]>) -> f32 {
    value.map_or(f32::NAN, |v| bytes::count_items(v, b',') as f32)
}

/// 1 for IPv6, 0 for IPv4, NaN for anything else: an IPv6 address has a
/// `:` and, up to a zone (`fe80::1%eth0`), only hex digits, `:` and `.`;
/// an IPv4 one is digits and three dots.
///
/// The address is classified 16 bytes at a time ([`addr_classes`]), as the
/// UA scan does: masks of the bytes IPv6 or IPv4 text may not have, of the
/// dots, the colons and the `%`. A byte-at-a-time pass with a class table
/// (which replaced the definition's five passes) cost 320 instructions per
/// request on the traffic fixture. Out of line, so that its loop keeps to
/// registers.
#[inline(never)]
fn ip_family(addr: &[u8]) -> f32 {
    let addr = addr.trim_ascii();
    if addr.starts_with(b"unix:") {
        return f32::NAN;
    }
    // Over the bytes before the zone: a byte IPv6 (IPv4) text may not
    // have, and the dots; over all of them: a colon.
    let (mut not_v6, mut not_v4, mut dots) = (false, false, 0);
    let mut colon = false;
    let mut zone = false;
    for chunk in addr.chunks(ADDR_CHUNK) {
        let classes = match <&[u8; ADDR_CHUNK]>::try_from(chunk) {
            Ok(window) => addr_classes(window),
            Err(_) => {
                // The last bytes, padded with `0`: a digit, which both
                // families allow, and no dot, colon or `%`.
                addr_classes(&bytes::padded(chunk, b'0'))
            }
        };
        colon |= classes.colon != 0;
        if !zone {
            // The bits of the bytes before the first `%`.
            let before = match classes.zone {
                0 => u32::MAX,
                z => (1 << z.trailing_zeros()) - 1,
            };
            zone = classes.zone != 0;
            not_v6 |= classes.not_v6 & before != 0;
            not_v4 |= classes.not_v4 & before != 0;
            dots += (classes.dot & before).count_ones();
        }
    }
    if colon && !not_v6 {
        1.0
    } else if !zone && dots == 3 && !not_v4 {
        0.0
    } else {
        f32::NAN
    }
}

/// Bytes [`ip_family`] classifies at a time.
const ADDR_CHUNK: usize = 16;

/// Bit masks over one chunk of an address (bit `j` for byte `j`).
struct AddrClasses {
    /// Not a hex digit, `:` or `.`.
    not_v6: u32,
    /// Not a digit or `.`.
    not_v4: u32,
    dot: u32,
    colon: u32,
    /// `%`, which starts an IPv6 zone.
    zone: u32,
}

/// Comparisons of every byte with constants in a loop of fixed length and
/// no branches, which the compiler turns into vector compares; [`bits16`]
/// gathers each kind into a mask.
///
/// [`bits16`]: bytes::bits16
#[inline(always)]
fn addr_classes(window: &[u8; ADDR_CHUNK]) -> AddrClasses {
    let mut not_v6 = [0u8; ADDR_CHUNK];
    let mut not_v4 = [0u8; ADDR_CHUNK];
    let mut dot = [0u8; ADDR_CHUNK];
    let mut colon = [0u8; ADDR_CHUNK];
    let mut zone = [0u8; ADDR_CHUNK];
    for j in 0..ADDR_CHUNK {
        let b = window[j];
        let digit = b.wrapping_sub(b'0') < 10;
        let hex_letter = (b | 0x20).wrapping_sub(b'a') < 6;
        let is_dot = b == b'.';
        let is_colon = b == b':';
        not_v6[j] = u8::from(!(digit | hex_letter | is_dot | is_colon));
        not_v4[j] = u8::from(!(digit | is_dot));
        dot[j] = u8::from(is_dot);
        colon[j] = u8::from(is_colon);
        zone[j] = u8::from(b == b'%');
    }
    AddrClasses {
        not_v6: bytes::bits16(not_v6),
        not_v4: bytes::bits16(not_v4),
        dot: bytes::bits16(dot),
        colon: bytes::bits16(colon),
        zone: bytes::bits16(zone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::Header;

    #[test]
    fn ip_families() {
        assert_eq!(ip_family(b"203.0.113.7"), 0.0);
        assert_eq!(ip_family(b"2001:db8::1"), 1.0);
        assert_eq!(ip_family(b"::ffff:192.0.2.1"), 1.0);
        assert_eq!(ip_family(b"fe80::1%eth0"), 1.0);
        assert!(ip_family(b"unix:").is_nan());
        assert!(ip_family(b"").is_nan());
        assert!(ip_family(b"example.com").is_nan());
        assert!(ip_family(b"1.2.3").is_nan());
        assert_eq!(ip_family(b"fe80::1%e:th0"), 1.0);
        assert_eq!(ip_family(b"%fe80::1"), 1.0);
    }

    /// The several-pass definition the one-pass [`ip_family`] replaced.
    fn ip_family_oracle(addr: &[u8]) -> f32 {
        let addr = addr.trim_ascii();
        if addr.starts_with(b"unix:") {
            return f32::NAN;
        }
        let without_zone = addr.split(|&b| b == b'%').next().unwrap_or(addr);
        if addr.contains(&b':')
            && without_zone
                .iter()
                .all(|b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.'))
        {
            return 1.0;
        }
        let dots = addr.iter().filter(|&&b| b == b'.').count();
        if dots == 3 && addr.iter().all(|b| b.is_ascii_digit() || *b == b'.') {
            return 0.0;
        }
        f32::NAN
    }

    /// On every client address of the fixtures and on strings glued from
    /// address pieces.
    #[test]
    fn ip_family_agrees_with_the_several_pass_definition() {
        let same = |a: &[u8]| {
            let (new, old) = (ip_family(a), ip_family_oracle(a));
            assert!(
                new == old || (new.is_nan() && old.is_nan()),
                "{:?}: {new} {old}",
                String::from_utf8_lossy(a)
            );
        };
        let clients: Vec<Vec<u8>> = corpus::requests().into_iter().map(|r| r.client).collect();
        assert!(clients.iter().filter(|c| c.contains(&b':')).count() > 10);
        for c in &clients {
            same(c);
        }
        let pieces: &[&[u8]] = &[
            b"1", b"203", b".", b":", b"::", b"%", b"eth0", b"fe80", b"ffff", b"g", b" ", b"unix:",
            b"\t", b"A", b"0.0.0.0",
        ];
        let mut rng = corpus::Rng::new(0x1f_fa41);
        for _ in 0..100_000 {
            same(&rng.glue(pieces, 8));
        }
    }

    /// The chunked [`ip_family`] against the definition on what the glued
    /// pieces rarely give: random bytes, bytes that differ from a class by
    /// bit 5 only (`G`/`g`, `@`, `` ` ``, `/`, `;`), every length around
    /// the chunk size, and a `%` or a `:` at every offset of long IPv6 and
    /// IPv4-looking texts.
    #[test]
    fn ip_family_agrees_on_hostile_bytes() {
        let same = |a: &[u8]| {
            let (new, old) = (ip_family(a), ip_family_oracle(a));
            assert!(
                new == old || (new.is_nan() && old.is_nan()),
                "{a:?}: {new} {old}"
            );
        };
        let alphabet = b"0123456789abcdefABCDEF.:%gG@`/;\x00\x80\xff \t\x0b";
        let mut rng = corpus::Rng::new(0x1b_6a7e);
        for len in 0..60 {
            for _ in 0..400 {
                let any: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                same(&any);
                let biased: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect();
                same(&biased);
            }
        }
        for base in [
            &b"2001:0db8:85a3:0000:0000:8a2e:0370:7334"[..],
            b"::ffff:192.168.100.200",
            b"192.168.100.200",
            b"1.2.3.4.5.6.7.8.9.10.11.12",
        ] {
            for at in 0..=base.len() {
                for b in [b'%', b':', b'.', b'x', b'0'] {
                    let mut a = base.to_vec();
                    a.insert(at, b);
                    same(&a);
                    a.extend_from_slice(b"%eth0:1");
                    same(&a);
                }
                same(&base[..at]);
                same(&base[at..]);
            }
        }
    }

    /// The header walk against the plain definition of what it keeps: the first value of each header by name (ASCII
    /// case-insensitive), the client-hint and fetch-metadata headers by
    /// prefix, every cookie header's items. On the fixtures' requests and
    /// on random header lists of known names (in random case, repeated),
    /// near-misses and random bytes.
    #[test]
    fn walk_keeps_what_the_plain_definition_says() {
        fn check(pairs: &[(Vec<u8>, Vec<u8>)]) {
            let headers: Vec<Header<'_>> = pairs.iter().map(|(n, v)| Header::new(n, v)).collect();
            let req = Request::new(b"GET", b"/", 11, b"", &headers);
            let mut out = FeatureVector::new();
            let mut seen = HeaderWalk::new();
            walk_headers(&req, &mut seen, Needs::ALL, &mut out);
            let firstv = |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
                    .map(|(_, v)| &v[..])
            };
            let prefixed = |p: &str| {
                pairs
                    .iter()
                    .filter(|(n, _)| {
                        n.len() >= p.len() && n[..p.len()].eq_ignore_ascii_case(p.as_bytes())
                    })
                    .count() as u32
            };
            let show = || format!("{pairs:?}");
            assert_eq!(seen.host, firstv("host"), "{}", show());
            assert_eq!(seen.connection, firstv("connection"), "{}", show());
            assert_eq!(seen.user_agent, firstv("user-agent"), "{}", show());
            assert_eq!(seen.accept, firstv("accept"), "{}", show());
            assert_eq!(
                seen.accept_language,
                firstv("accept-language"),
                "{}",
                show()
            );
            assert_eq!(
                seen.accept_encoding,
                firstv("accept-encoding"),
                "{}",
                show()
            );
            assert_eq!(seen.referer, firstv("referer"), "{}", show());
            assert_eq!(
                seen.upgrade_insecure_requests,
                firstv("upgrade-insecure-requests"),
                "{}",
                show()
            );
            assert_eq!(seen.ch_ua, firstv("sec-ch-ua"), "{}", show());
            assert_eq!(seen.ch_mobile, firstv("sec-ch-ua-mobile"), "{}", show());
            assert_eq!(seen.ch_platform, firstv("sec-ch-ua-platform"), "{}", show());
            assert_eq!(seen.fetch.site, firstv("sec-fetch-site"), "{}", show());
            assert_eq!(seen.fetch.mode, firstv("sec-fetch-mode"), "{}", show());
            assert_eq!(seen.fetch.user, firstv("sec-fetch-user"), "{}", show());
            assert_eq!(seen.fetch.dest, firstv("sec-fetch-dest"), "{}", show());
            assert_eq!(seen.headers as usize, pairs.len());
            let hints = prefixed("sec-ch-ua-")
                + pairs
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(b"sec-ch-ua"))
                    .count() as u32;
            assert_eq!(seen.client_hints, hints, "{}", show());
            assert_eq!(seen.fetch_headers, prefixed("sec-fetch-"), "{}", show());
            let cookies: Vec<&(Vec<u8>, Vec<u8>)> = pairs
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(b"cookie"))
                .collect();
            assert_eq!(seen.cookie_headers as usize, cookies.len(), "{}", show());
            let items: usize = cookies
                .iter()
                .map(|(_, v)| bytes::items(v, b';').count())
                .sum();
            assert_eq!(seen.cookies as usize, items, "{}", show());
        }
        for r in corpus::requests() {
            check(&r.headers);
        }
        let mut names: Vec<Vec<u8>> = header_order::CODES
            .iter()
            .map(|(n, _)| n.as_bytes().to_vec())
            .collect();
        names.extend(
            [
                &b"sec-ch-ua-"[..],
                b"sec-ch-ua-full-version",
                b"sec-fetch-",
                b"sec-fetch-storage-access",
                b"sec-ch-u",
                b"x-custom",
                b"",
                b"h",
                b"\xffost",
            ]
            .map(<[u8]>::to_vec),
        );
        let values: [&[u8]; 6] = [b"", b"a", b"a=1; b=2", b" ; ;", b"\xff", b"v;"];
        let mut rng = corpus::Rng::new(0x3a1c_0de5);
        for _ in 0..20_000 {
            // Past one and two runs of the walk's candidate lookups.
            let n = rng.below(2 * RUN + 8);
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                .map(|_| {
                    let mut name = names[rng.below(names.len())].clone();
                    match rng.below(4) {
                        0 => name.make_ascii_uppercase(),
                        1 if !name.is_empty() => {
                            let i = rng.below(name.len());
                            name[i] = rng.next() as u8;
                        }
                        _ => {}
                    }
                    let value = values[rng.below(values.len())].to_vec();
                    (name, value)
                })
                .collect();
            check(&pairs);
        }
    }

    #[test]
    fn every_feature_is_documented_in_the_module_docs() {
        let docs = include_str!("mod.rs");
        for spec in FLOAT_FEATURES.iter().chain(CAT_FEATURES) {
            assert!(
                docs.contains(&format!("`{}`", spec.name)),
                "{} is not in the module docs",
                spec.name
            );
        }
    }

    #[test]
    fn schema_names_are_unique_and_plain() {
        let all: Vec<&str> = FLOAT_FEATURES
            .iter()
            .chain(CAT_FEATURES)
            .map(|s| s.name)
            .collect();
        for (i, a) in all.iter().enumerate() {
            assert!(
                a.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{a}"
            );
            assert!(!all[i + 1..].contains(a), "{a} twice");
        }
        for (i, f) in Float::ALL.iter().enumerate() {
            assert_eq!(f.index(), i);
            assert_eq!(f.spec(), FLOAT_FEATURES[i]);
        }
        for (i, c) in Cat::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.spec(), CAT_FEATURES[i]);
        }
    }
}
