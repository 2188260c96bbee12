//! The extractor on request heads captured from real browsers through nginx
//! (tests/fixtures/real_clients/, `make capture`): Chromium 156 and Firefox
//! 153 as Debian ships them, names in the case and order nginx saw them.
//! These are the shapes the first schema got wrong: Chromium's sub-resource
//! order, Firefox's Connection and Referer, first visits, plain-HTTP
//! hostnames and HTTP/2's lower-case names.

mod scorer_support;

use edgeguard::features::orders::{Engine, OrderCounts, OrderTable};
use edgeguard::features::{extract_with, header_order, Cat, FeatureVector, Float, Request};
use edgeguard::headers::Header;
use edgeguard::scorer::Scorer;

type Head = &'static [(&'static str, &'static str)];

const CHROMIUM_UA: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const CHROMIUM_CH_UA: &str = r#""Not:A-Brand";v="8", "Chromium";v="156""#;
const FIREFOX_UA: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
const HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// Chromium 156, headful, http://127.0.0.1: a typed URL (first visit).
const CHROMIUM_TYPED: Head = &[
    ("Host", "127.0.0.1:28480"),
    ("Connection", "keep-alive"),
    ("sec-ch-ua", CHROMIUM_CH_UA),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("Upgrade-Insecure-Requests", "1"),
    ("User-Agent", CHROMIUM_UA),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
    ("Sec-Fetch-Site", "none"),
    ("Sec-Fetch-Mode", "navigate"),
    ("Sec-Fetch-User", "?1"),
    ("Sec-Fetch-Dest", "document"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Accept-Language", "en-US,en;q=0.9"),
];

/// The same session's stylesheet: platform hint and User-Agent first.
const CHROMIUM_STYLE: Head = &[
    ("Host", "127.0.0.1:28480"),
    ("Connection", "keep-alive"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("User-Agent", CHROMIUM_UA),
    ("sec-ch-ua", CHROMIUM_CH_UA),
    ("sec-ch-ua-mobile", "?0"),
    ("Accept", "text/css,*/*;q=0.1"),
    ("Sec-Fetch-Site", "same-origin"),
    ("Sec-Fetch-Mode", "no-cors"),
    ("Sec-Fetch-Dest", "style"),
    ("Referer", "http://127.0.0.1:28480/"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Accept-Language", "en-US,en;q=0.9"),
    ("Cookie", "sid=c0ffee42"),
];

/// Firefox 153, headful, http://127.0.0.1: a typed URL (first visit).
const FIREFOX_TYPED: Head = &[
    ("Host", "127.0.0.1:28480"),
    ("User-Agent", FIREFOX_UA),
    ("Accept", HTML),
    ("Accept-Language", "en-US,en;q=0.9"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Connection", "keep-alive"),
    ("Upgrade-Insecure-Requests", "1"),
    ("Sec-Fetch-Dest", "document"),
    ("Sec-Fetch-Mode", "navigate"),
    ("Sec-Fetch-Site", "none"),
    ("Sec-Fetch-User", "?1"),
    ("Priority", "u=0, i"),
];

/// The same session's stylesheet: Connection before Referer.
const FIREFOX_STYLE: Head = &[
    ("Host", "127.0.0.1:28480"),
    ("User-Agent", FIREFOX_UA),
    ("Accept", "text/css,*/*;q=0.1"),
    ("Accept-Language", "en-US,en;q=0.9"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Connection", "keep-alive"),
    ("Referer", "http://127.0.0.1:28480/"),
    ("Cookie", "sid=c0ffee42"),
    ("Sec-Fetch-Dest", "style"),
    ("Sec-Fetch-Mode", "no-cors"),
    ("Sec-Fetch-Site", "same-origin"),
    ("Priority", "u=2"),
];

/// The same session's fetch(): Referer before Connection.
const FIREFOX_FETCH: Head = &[
    ("Host", "127.0.0.1:28480"),
    ("User-Agent", FIREFOX_UA),
    ("Accept", "*/*"),
    ("Accept-Language", "en-US,en;q=0.9"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Referer", "http://127.0.0.1:28480/"),
    ("Connection", "keep-alive"),
    ("Cookie", "sid=c0ffee42; consent=1"),
    ("Sec-Fetch-Dest", "empty"),
    ("Sec-Fetch-Mode", "cors"),
    ("Sec-Fetch-Site", "same-origin"),
    ("Priority", "u=4"),
];

/// Firefox 153 on http://shop.test (a plain-HTTP hostname): no fetch
/// metadata, no br or zstd.
const FIREFOX_PLAIN_HTTP: Head = &[
    ("Host", "shop.test:28481"),
    ("User-Agent", FIREFOX_UA),
    ("Accept", HTML),
    ("Accept-Language", "en-US,en;q=0.9"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Connection", "keep-alive"),
    ("Upgrade-Insecure-Requests", "1"),
    ("Priority", "u=0, i"),
];

/// Firefox 153 on https://shop.test over HTTP/2: lower-case names, no
/// Connection, `te: trailers` last.
const FIREFOX_H2_TYPED: Head = &[
    ("host", "shop.test:28483"),
    ("user-agent", FIREFOX_UA),
    ("accept", HTML),
    ("accept-language", "en-US,en;q=0.9"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("upgrade-insecure-requests", "1"),
    ("sec-fetch-dest", "document"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-site", "none"),
    ("sec-fetch-user", "?1"),
    ("priority", "u=0, i"),
    ("te", "trailers"),
];

fn extracted(head: Head, version: u16, orders: Option<&OrderTable>) -> FeatureVector<'static> {
    let headers: Vec<Header<'static>> = head
        .iter()
        .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
        .collect();
    // The vector borrows the header array for 'static: leak the test's copy.
    let headers: &'static [Header<'static>] = Box::leak(headers.into_boxed_slice());
    let req = Request::new(b"GET", b"/", version, b"127.0.0.1", headers);
    let mut v = FeatureVector::new();
    extract_with(&req, orders, &mut v);
    v
}

fn codes(head: Head) -> Vec<u8> {
    head.iter()
        .map(|(n, _)| header_order::code(n.as_bytes()))
        .collect()
}

fn learnt(engine: Engine, heads: &[Head]) -> OrderTable {
    let mut counts = OrderCounts::default();
    for head in heads {
        counts.add(engine, &codes(head));
    }
    counts.table(1)
}

#[test]
fn chromium_sub_resource_order_is_four_reversed_pairs_to_a_navigation_only_table() {
    // What the hand-written order of schema 1 said: 4 inversions.
    let nav_only = learnt(Engine::Chromium, &[CHROMIUM_TYPED]);
    let v = extracted(CHROMIUM_STYLE, 11, Some(&nav_only));
    // (User-Agent, sec-ch-ua), (User-Agent, sec-ch-ua-mobile),
    // (platform, sec-ch-ua), (platform, sec-ch-ua-mobile).
    assert_eq!(v.float(Float::OrderReversedPairs), 4.0);
    // Learnt from both request types, neither has anything reversed.
    let both = learnt(Engine::Chromium, &[CHROMIUM_TYPED, CHROMIUM_STYLE]);
    for head in [CHROMIUM_TYPED, CHROMIUM_STYLE] {
        assert_eq!(
            extracted(head, 11, Some(&both)).float(Float::OrderReversedPairs),
            0.0
        );
    }
    assert_eq!(v.cat(Cat::HeaderOrder), b"hcPuCMaSODrelk");
    // Chromium's table says nothing about Firefox.
    assert_eq!(
        extracted(FIREFOX_TYPED, 11, Some(&both)).float(Float::OrderReversedPairs),
        0.0
    );
}

#[test]
fn firefox_sends_connection_and_referer_both_ways() {
    let table = learnt(
        Engine::Gecko,
        &[FIREFOX_TYPED, FIREFOX_STYLE, FIREFOX_FETCH],
    );
    for head in [FIREFOX_TYPED, FIREFOX_STYLE, FIREFOX_FETCH] {
        assert_eq!(
            extracted(head, 11, Some(&table)).float(Float::OrderReversedPairs),
            0.0
        );
    }
    // Learnt from the stylesheet alone, the fetch() has one pair reversed.
    let style_only = learnt(Engine::Gecko, &[FIREFOX_STYLE]);
    let v = extracted(FIREFOX_FETCH, 11, Some(&style_only));
    assert_eq!(v.float(Float::OrderReversedPairs), 1.0);
}

#[test]
fn first_visits_are_coherent_navigations() {
    for (head, family) in [
        (CHROMIUM_TYPED, &b"chrome"[..]),
        (FIREFOX_TYPED, b"firefox"),
        (FIREFOX_H2_TYPED, b"firefox"),
    ] {
        let v = extracted(head, 11, None);
        assert_eq!(v.cat(Cat::UaFamily), family);
        assert_eq!(v.cat(Cat::FetchSite), b"none");
        assert_eq!(v.cat(Cat::FetchMode), b"navigate");
        assert_eq!(v.float(Float::HasReferer), 0.0);
        assert_eq!(v.float(Float::HasCookie), 0.0);
        assert_eq!(v.float(Float::CookieCount), 0.0);
        assert_eq!(v.float(Float::FetchIncoherent), 0.0);
        assert_eq!(v.float(Float::FetchNonBrowser), 0.0);
        assert_eq!(v.float(Float::ChMissingSecure), 0.0);
        assert_eq!(v.float(Float::ChNonChromium), 0.0);
    }
    assert_eq!(
        extracted(CHROMIUM_TYPED, 11, None).float(Float::ChVersionMismatch),
        0.0
    );
    assert_eq!(
        extracted(CHROMIUM_TYPED, 11, None).float(Float::ChUaMajor),
        156.0
    );
}

#[test]
fn plain_http_hostnames_lack_hints_and_fetch_metadata_and_that_is_no_contradiction() {
    let v = extracted(FIREFOX_PLAIN_HTTP, 11, None);
    assert_eq!(v.float(Float::FetchMetadataCount), 0.0);
    assert_eq!(v.float(Float::ClientHintCount), 0.0);
    assert_eq!(v.cat(Cat::AcceptEncoding), b"gzip, deflate");
    assert_eq!(v.float(Float::ChMissingSecure), 0.0);
    // Chromium drops both on a plain-HTTP hostname: schema 1's `ch_missing`
    // called that a contradiction, schema 2's `ch_missing_secure` does not...
    let chromium_plain: Vec<(&str, &str)> = CHROMIUM_TYPED
        .iter()
        .copied()
        .filter(|(n, _)| !n.starts_with("sec-ch-") && !n.starts_with("Sec-Fetch-"))
        .collect();
    let chromium_plain: Head = Box::leak(chromium_plain.into_boxed_slice());
    let v = extracted(chromium_plain, 11, None);
    assert_eq!(v.float(Float::ChMissing), 1.0);
    assert_eq!(v.float(Float::ChMissingSecure), 0.0);
    // ... while hints stripped where fetch metadata shows a secure context are.
    let stripped: Vec<(&str, &str)> = CHROMIUM_TYPED
        .iter()
        .copied()
        .filter(|(n, _)| !n.starts_with("sec-ch-"))
        .collect();
    let v = extracted(Box::leak(stripped.into_boxed_slice()), 11, None);
    assert_eq!(v.float(Float::ChMissingSecure), 1.0);
}

#[test]
fn http2_lower_case_names_read_as_http1_names_do() {
    let h1 = extracted(FIREFOX_TYPED, 11, None);
    let h2 = extracted(FIREFOX_H2_TYPED, 20, None);
    assert_eq!(h2.float(Float::HttpVersion), 2.0);
    assert_eq!(h2.float(Float::HasConnection), 0.0);
    assert_eq!(h1.cat(Cat::HeaderOrder), b"hualeciDOSUp");
    assert_eq!(h2.cat(Cat::HeaderOrder), b"hualeiDOSUpt");
    for f in [
        Float::FetchMetadataCount,
        Float::HasAcceptLanguage,
        Float::AcceptEncodingCount,
        Float::UaMajor,
    ] {
        assert_eq!(h1.float(f), h2.float(f), "{f:?}");
    }
    // One table, both protocols: nothing reversed either way.
    let table = learnt(Engine::Gecko, &[FIREFOX_TYPED, FIREFOX_H2_TYPED]);
    assert_eq!(
        extracted(FIREFOX_H2_TYPED, 20, Some(&table)).float(Float::OrderReversedPairs),
        0.0
    );
}

#[test]
fn the_shipped_table_knows_the_captured_browsers_and_not_a_library_order() {
    let root = scorer_support::root("models/bot.json");
    let scorer = Scorer::load(&[("bot", &root)]).unwrap();
    let table = scorer
        .orders()
        .expect("the shipped models carry an order table");
    for (name, head, version) in [
        ("chromium typed", CHROMIUM_TYPED, 11),
        ("chromium style", CHROMIUM_STYLE, 11),
        ("firefox typed", FIREFOX_TYPED, 11),
        ("firefox style", FIREFOX_STYLE, 11),
        ("firefox fetch", FIREFOX_FETCH, 11),
        ("firefox plain http", FIREFOX_PLAIN_HTTP, 11),
        ("firefox h2", FIREFOX_H2_TYPED, 20),
    ] {
        let v = extracted(head, version, Some(table));
        assert_eq!(v.float(Float::OrderReversedPairs), 0.0, "{name}");
    }
    // python-requests' order (Host, User-Agent, Accept-Encoding, Accept,
    // Connection) under Chromium 156's User-Agent.
    let requests: Head = &[
        ("Host", "127.0.0.1:28480"),
        ("User-Agent", CHROMIUM_UA),
        ("Accept-Encoding", "gzip, deflate"),
        ("Accept", "*/*"),
        ("Connection", "keep-alive"),
    ];
    let v = extracted(requests, 11, Some(table));
    assert!(
        v.float(Float::OrderReversedPairs) >= 2.0,
        "{}",
        v.float(Float::OrderReversedPairs)
    );
}

/// One TLS row of the captured corpus: class, client, head, JA4, family.
type TlsRow = (String, String, Vec<(String, String)>, String, String);

/// Every TLS row of the captured corpus with its logged TLS facts.
fn captured_tls_rows() -> Vec<TlsRow> {
    let text = std::fs::read_to_string(scorer_support::root(
        "tests/fixtures/real_clients/corpus.jsonl",
    ))
    .unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["edgeguard_ja4"].is_string())
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            let headers = r["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
                .collect();
            (
                s("class"),
                s("client_name"),
                headers,
                s("edgeguard_ja4"),
                s("edgeguard_tls_family"),
            )
        })
        .collect()
}

#[test]
fn captured_browsers_hellos_fit_their_user_agents_and_copied_headers_do_not() {
    use edgeguard::features::TlsFacts;
    use edgeguard::tls::Family;
    let rows = captured_tls_rows();
    let mut seen = std::collections::BTreeMap::new();
    for (class, client, headers, ja4, family) in &rows {
        let family = Family::from_name(family.as_bytes()).expect("a logged family");
        let h: Vec<Header<'_>> = headers
            .iter()
            .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
            .collect();
        let tls = TlsFacts::new(ja4.as_bytes(), family).expect("a logged JA4");
        let req = Request::new(b"GET", b"/", 11, b"127.0.0.1", &h).with_tls(Some(tls));
        let mut v = FeatureVector::new();
        extract_with(&req, None, &mut v);
        let (mismatch, no_h2) = (
            v.float(Float::TlsFamilyMismatch),
            v.float(Float::TlsBrowserNoH2),
        );
        match (class.as_str(), client.as_str()) {
            // Epiphany (WebKitGTK) sends GLib's GnuTLS hello, which the
            // family guess reads as OpenSSL: no contradiction off Apple's
            // systems, and h2 offered first.
            ("human", "epiphany") => {
                assert_eq!((mismatch, no_h2), (0.0, 0.0), "{client} {ja4}");
                assert_eq!(v.cat(Cat::TlsFamily), b"openssl");
            }
            // People's Chromium (BoringSSL), QtWebEngine (Chromium's) and
            // Firefox (NSS), headless Chromium too: the hello is the
            // engine's, h2 offered first.
            ("human" | "headless" | "byte-identical", _) => {
                assert_eq!((mismatch, no_h2), (0.0, 0.0), "{client} {ja4}");
                let want = if client.contains("firefox") {
                    "nss"
                } else {
                    "boringssl"
                };
                assert_eq!(v.cat(Cat::TlsFamily), want.as_bytes());
            }
            // Chromium's head on OpenSSL: a contradiction the head cannot show.
            ("copied-headers", _) => assert_eq!(mismatch, 1.0, "{client} {ja4}"),
            // No browser claimed: nothing to contradict.
            ("scripted", _) => assert_eq!((mismatch, no_h2), (0.0, 0.0), "{client}"),
            _ => {}
        }
        *seen.entry(class.clone()).or_insert(0) += 1;
    }
    for class in ["human", "headless", "copied-headers", "scripted"] {
        assert!(
            seen.get(class).copied().unwrap_or(0) > 0,
            "no TLS rows of {class}: {seen:?}"
        );
    }
}
