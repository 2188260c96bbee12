//! Feature extraction on real browser and client header sets: every feature
//! of the schema is asserted on at least one request (checked at the end).

use std::collections::BTreeSet;

use edgeguard::features::TlsFacts;
use edgeguard::features::{extract, FeatureVector, Request, CAT_FEATURES, FLOAT_FEATURES};
use edgeguard::headers::Header;
use edgeguard::tls::Family;

/// An expected value: a float (NaN allowed) or categorical bytes.
#[derive(Clone, Copy, Debug)]
enum Want {
    F(f32),
    C(&'static str),
}
use Want::{C, F};

const NAN: f32 = f32::NAN;

struct Case {
    name: &'static str,
    method: &'static str,
    uri: &'static str,
    version: u16,
    client: &'static str,
    headers: &'static [(&'static str, &'static str)],
    /// The connection's JA4 and TLS family, when the request came over TLS
    /// that edgeguard saw.
    tls: Option<(&'static str, Family)>,
    want: &'static [(&'static str, Want)],
}

const CHROME_UA: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const CHROME_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const CHROMIUM_156_UA: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const CHROME_CH_UA: &str = r#""Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24""#;

const CASES: &[Case] = &[
    Case {
        name: "Chrome 131 desktop, HTTP/2 navigation",
        method: "GET",
        uri: "/products/42?ref=home&utm=x",
        version: 20,
        client: "203.0.113.7",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("sec-ch-ua", CHROME_CH_UA),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", "\"Windows\""),
            ("upgrade-insecure-requests", "1"),
            ("user-agent", CHROME_UA),
            ("accept", CHROME_ACCEPT),
            ("sec-fetch-site", "none"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-user", "?1"),
            ("sec-fetch-dest", "document"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("accept-language", "en-US,en;q=0.9"),
            ("cookie", "_ga=GA1.1.1; session=abc"),
            ("priority", "u=0, i"),
        ],
        want: &[
            ("http_version", F(2.0)),
            ("uri_len", F(27.0)),
            ("path_depth", F(2.0)),
            ("query_arg_count", F(2.0)),
            ("header_count", F(15.0)),
            ("ua_len", F(111.0)),
            ("ua_major", F(131.0)),
            ("ua_mobile", F(0.0)),
            ("has_accept", F(1.0)),
            ("accept_len", F(135.0)),
            ("has_accept_language", F(1.0)),
            ("accept_language_count", F(2.0)),
            ("has_accept_encoding", F(1.0)),
            ("accept_encoding_count", F(4.0)),
            ("client_hint_count", F(3.0)),
            ("fetch_metadata_count", F(4.0)),
            ("has_upgrade_insecure_requests", F(1.0)),
            ("has_cookie", F(1.0)),
            ("cookie_count", F(2.0)),
            ("has_referer", F(0.0)),
            ("has_connection", F(0.0)),
            ("has_host", F(1.0)),
            // Schema 2: without a learnt table (plain `extract`) there is
            // no order to compare with.
            ("order_reversed_pairs", F(NAN)),
            ("ch_missing_secure", F(0.0)),
            ("client_ipv6", F(0.0)),
            ("ch_ua_major", F(131.0)),
            ("ch_missing", F(0.0)),
            ("ch_version_mismatch", F(0.0)),
            ("ch_non_chromium", F(0.0)),
            ("ch_platform_mismatch", F(0.0)),
            ("ch_mobile_mismatch", F(0.0)),
            ("fetch_non_browser", F(0.0)),
            ("fetch_incoherent", F(0.0)),
            ("order_inversions", F(0.0)),
            ("method", C("GET")),
            ("uri_ext", C("")),
            ("header_order", C("hCMPiuaSOUDelkp")),
            ("ua_family", C("chrome")),
            ("ua_os", C("windows")),
            ("ch_brand", C("Google Chrome")),
            ("accept_language_primary", C("en")),
            ("accept", C(CHROME_ACCEPT)),
            ("accept_encoding", C("gzip, deflate, br, zstd")),
            ("fetch_site", C("none")),
            ("fetch_mode", C("navigate")),
            ("connection", C("")),
            // No TLS facts (here: TLS ended in front of nginx): missing.
            ("tls13", F(NAN)),
            ("tls_cipher_count", F(NAN)),
            ("tls_extension_count", F(NAN)),
            ("tls_alpn_h2", F(NAN)),
            ("tls_family_mismatch", F(NAN)),
            ("tls_browser_no_h2", F(NAN)),
            ("tls_ja4", C("")),
            ("tls_ja4_a", C("")),
            ("tls_family", C("none")),
            // Schema 4: a browser's own head shows nothing.
            ("ua_claim", C("browser")),
            ("engine_headers_missing", F(0.0)),
            ("accept_non_browser", F(0.0)),
            ("encoding_non_browser", F(0.0)),
            ("connection_non_browser", F(0.0)),
            ("ch_brand_mismatch", F(0.0)),
            ("headless_tokens", F(0.0)),
            ("tls_browser_no_tls13", F(NAN)),
            ("fetch_contradiction", F(0.0)),
        ],
    },
    Case {
        name: "Chromium 156 over TLS: its own BoringSSL hello",
        method: "GET",
        uri: "/",
        version: 20,
        client: "127.0.0.1",
        headers: &[
            ("host", "shop.test"),
            ("user-agent", CHROMIUM_156_UA),
            ("accept", CHROME_ACCEPT),
        ],
        tls: Some(("t13d1516h2_8daaf6152771_e5627efa2ab1", Family::Boringssl)),
        want: &[
            // A TLS connection is a secure context: Chromium would have
            // sent Accept-Language, Accept-Encoding, three fetch metadata
            // headers and, on this navigation (its Accept asks for HTML),
            // Upgrade-Insecure-Requests. Not the client hints: it sends
            // none of them with JavaScript off, so none missing is no
            // evidence.
            ("engine_headers_missing", F(6.0)),
            ("tls_browser_no_tls13", F(0.0)),
            ("tls13", F(1.0)),
            ("tls_cipher_count", F(15.0)),
            ("tls_extension_count", F(16.0)),
            ("tls_alpn_h2", F(1.0)),
            ("tls_family_mismatch", F(0.0)),
            ("tls_browser_no_h2", F(0.0)),
            ("tls_ja4", C("t13d1516h2_8daaf6152771_e5627efa2ab1")),
            ("tls_ja4_a", C("t13d1516h2")),
            ("tls_family", C("boringssl")),
        ],
    },
    Case {
        // Captured (curl-chrome-headers, python-requests-chrome-headers):
        // Chromium's head, Python's OpenSSL hello offering http/1.1 only.
        name: "python requests with Chromium's headers over TLS",
        method: "GET",
        uri: "/",
        version: 11,
        client: "127.0.0.1",
        headers: &[
            ("Host", "shop-h1.test"),
            ("Connection", "keep-alive"),
            ("User-Agent", CHROMIUM_156_UA),
            ("Accept", CHROME_ACCEPT),
        ],
        tls: Some(("t13d1812h1_85036bcba153_b26ce05bbdd6", Family::Openssl)),
        want: &[
            ("tls13", F(1.0)),
            ("tls_cipher_count", F(18.0)),
            ("tls_extension_count", F(12.0)),
            ("tls_alpn_h2", F(0.0)),
            ("tls_family_mismatch", F(1.0)),
            ("tls_browser_no_h2", F(1.0)),
            ("tls_ja4_a", C("t13d1812h1")),
            ("tls_family", C("openssl")),
        ],
    },
    Case {
        name: "curl over TLS: no browser claimed, nothing to contradict",
        method: "GET",
        uri: "/",
        version: 20,
        client: "127.0.0.1",
        headers: &[
            ("host", "shop.test"),
            ("user-agent", "curl/7.88.1"),
            ("accept", "*/*"),
        ],
        tls: Some(("t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", Family::Openssl)),
        want: &[
            ("tls_cipher_count", F(31.0)),
            ("tls_alpn_h2", F(1.0)),
            ("tls_family_mismatch", F(0.0)),
            ("tls_browser_no_h2", F(0.0)),
            ("tls_family", C("openssl")),
        ],
    },
    Case {
        name: "Firefox UA on a BoringSSL hello, TLS 1.2 only",
        method: "GET",
        uri: "/",
        version: 11,
        client: "127.0.0.1",
        headers: &[
            ("host", "shop.test"),
            (
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0",
            ),
        ],
        tls: Some(("t12d1516h2_8daaf6152771_e5627efa2ab1", Family::Boringssl)),
        want: &[
            ("tls13", F(0.0)),
            ("tls_browser_no_tls13", F(1.0)),
            ("tls_family_mismatch", F(1.0)),
            ("tls_browser_no_h2", F(0.0)),
        ],
    },
    Case {
        name: "Chrome Android, HTTP/1.1 same-origin navigation",
        method: "GET",
        uri: "/blog/2024/best-lamps",
        version: 11,
        client: "2001:db8:85a3::8a2e:370:7334",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("connection", "keep-alive"),
            ("sec-ch-ua", r#""Chromium";v="130", "Google Chrome";v="130", "Not?A_Brand";v="99""#),
            ("sec-ch-ua-mobile", "?1"),
            ("sec-ch-ua-platform", "\"Android\""),
            ("upgrade-insecure-requests", "1"),
            (
                "user-agent",
                "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36",
            ),
            ("accept", CHROME_ACCEPT),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-user", "?1"),
            ("sec-fetch-dest", "document"),
            ("referer", "https://shop.example/blog"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("accept-language", "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7"),
        ],
        want: &[
            ("http_version", F(1.1)),
            ("path_depth", F(3.0)),
            ("query_arg_count", F(0.0)),
            ("ua_mobile", F(1.0)),
            ("ua_os", C("android")),
            ("client_ipv6", F(1.0)),
            ("has_connection", F(1.0)),
            ("connection", C("keep-alive")),
            ("has_referer", F(1.0)),
            ("accept_language_count", F(4.0)),
            ("accept_language_primary", C("de")),
            ("ch_ua_major", F(130.0)),
            ("ch_brand", C("Google Chrome")),
            ("ch_mobile_mismatch", F(0.0)),
            ("ch_platform_mismatch", F(0.0)),
            ("header_order", C("hcCMPiuaSOUDrel")),
            ("order_inversions", F(0.0)),
            ("has_cookie", F(0.0)),
            ("cookie_count", F(0.0)),
        ],
    },
    Case {
        name: "Firefox 133 desktop, HTTP/2",
        method: "GET",
        uri: "/",
        version: 20,
        client: "198.51.100.23",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"),
            ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            ("accept-language", "en-US,en;q=0.5"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("upgrade-insecure-requests", "1"),
            ("sec-fetch-dest", "document"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-site", "none"),
            ("sec-fetch-user", "?1"),
            ("priority", "u=0, i"),
            ("te", "trailers"),
        ],
        want: &[
            ("ua_family", C("firefox")),
            ("ua_major", F(133.0)),
            ("ua_os", C("linux")),
            ("path_depth", F(0.0)),
            ("client_hint_count", F(0.0)),
            ("ch_ua_major", F(NAN)),
            ("ch_brand", C("")),
            ("ch_missing", F(0.0)),
            ("ch_non_chromium", F(0.0)),
            ("header_order", C("hualeiDOSUpt")),
            ("order_inversions", F(0.0)),
            ("fetch_incoherent", F(0.0)),
        ],
    },
    Case {
        name: "Safari 18 macOS, HTTP/2",
        method: "GET",
        uri: "/img/logo.SVG",
        version: 20,
        client: "192.0.2.44",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            ("sec-fetch-site", "none"),
            ("sec-fetch-dest", "document"),
            ("sec-fetch-mode", "navigate"),
            (
                "user-agent",
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
            ),
            ("accept-encoding", "gzip, deflate, br"),
            ("accept-language", "fr-FR,fr;q=0.9"),
        ],
        want: &[
            ("ua_family", C("safari")),
            ("ua_major", F(18.0)),
            ("ua_os", C("macos")),
            ("uri_ext", C("svg")),
            ("order_inversions", F(0.0)),
            ("ch_missing", F(0.0)),
            ("fetch_metadata_count", F(3.0)),
            ("fetch_incoherent", F(0.0)),
            ("accept_encoding_count", F(3.0)),
            ("header_order", C("haSDOuel")),
        ],
    },
    Case {
        name: "curl 8.5 defaults",
        method: "HEAD",
        uri: "/api/v1/products?page=2",
        version: 11,
        client: "192.0.2.9",
        tls: None,
        headers: &[("host", "shop.example"), ("user-agent", "curl/8.5.0"), ("accept", "*/*")],
        want: &[
            ("method", C("HEAD")),
            ("ua_family", C("curl")),
            ("ua_major", F(8.0)),
            ("ua_os", C("other")),
            ("ua_len", F(10.0)),
            ("accept", C("*/*")),
            ("has_accept_language", F(0.0)),
            ("accept_language_count", F(NAN)),
            ("accept_language_primary", C("")),
            ("has_accept_encoding", F(0.0)),
            ("accept_encoding_count", F(NAN)),
            ("accept_encoding", C("")),
            ("order_inversions", F(NAN)),
            ("header_order", C("hua")),
            ("ch_missing", F(0.0)),
            ("fetch_site", C("")),
        ],
    },
    Case {
        name: "python-requests defaults",
        method: "GET",
        uri: "/wp-login.php",
        version: 11,
        client: "192.0.2.10",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("user-agent", "python-requests/2.32.3"),
            ("accept-encoding", "gzip, deflate"),
            ("accept", "*/*"),
            ("connection", "keep-alive"),
        ],
        want: &[
            ("ua_family", C("python-requests")),
            ("uri_ext", C("php")),
            ("header_order", C("hueac")),
            ("accept_encoding_count", F(2.0)),
            ("order_inversions", F(NAN)),
        ],
    },
    Case {
        name: "Go net/http, HTTP/1.1",
        method: "GET",
        uri: "/api/session",
        version: 11,
        client: "192.0.2.11",
        tls: None,
        headers: &[("host", "shop.example"), ("user-agent", "Go-http-client/1.1"), ("accept-encoding", "gzip")],
        want: &[
            ("ua_family", C("go")),
            ("ua_major", F(1.0)),
            ("has_accept", F(0.0)),
            ("accept_len", F(NAN)),
            ("accept", C("")),
            ("header_order", C("hue")),
        ],
    },
    Case {
        name: "wget: Host after its own headers",
        method: "GET",
        uri: "/backup.zip",
        version: 11,
        client: "192.0.2.12",
        tls: None,
        headers: &[
            ("user-agent", "Wget/1.21.4"),
            ("accept", "*/*"),
            ("accept-encoding", "identity"),
            ("host", "shop.example"),
            ("connection", "Keep-Alive"),
        ],
        want: &[("ua_family", C("wget")), ("header_order", C("uaehc")), ("uri_ext", C("zip"))],
    },
    Case {
        name: "Node fetch (undici) sends sec-fetch-mode alone",
        method: "GET",
        uri: "/api/v1/stock/7",
        version: 11,
        client: "192.0.2.13",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("connection", "keep-alive"),
            ("accept", "*/*"),
            ("accept-language", "*"),
            ("sec-fetch-mode", "cors"),
            ("user-agent", "node"),
            ("accept-encoding", "gzip, deflate"),
        ],
        want: &[
            ("ua_family", C("node")),
            ("ua_claim", C("node")),
            ("engine_headers_missing", F(0.0)),
            ("ua_major", F(NAN)),
            ("fetch_non_browser", F(1.0)),
            ("fetch_incoherent", F(1.0)),
            ("fetch_contradiction", F(1.0)),
            ("fetch_mode", C("cors")),
            ("fetch_metadata_count", F(1.0)),
            ("accept_language_primary", C("*")),
        ],
    },
    Case {
        name: "Googlebot smartphone: a Chrome UA that declares itself",
        method: "GET",
        uri: "/robots.txt",
        version: 11,
        client: "66.249.66.1",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("connection", "keep-alive"),
            ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            ("from", "googlebot(at)googlebot.com"),
            (
                "user-agent",
                "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            ),
            ("accept-encoding", "gzip, deflate, br"),
        ],
        want: &[
            ("ua_family", C("bot")),
            ("ua_major", F(NAN)),
            ("ua_os", C("android")),
            ("ch_missing", F(0.0)),
            ("uri_ext", C("txt")),
            ("header_count", F(6.0)),
            ("header_order", C("hcaue")),
        ],
    },
    Case {
        name: "HeadlessChrome says so in UA and brands",
        method: "GET",
        uri: "/",
        version: 20,
        client: "192.0.2.14",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("sec-ch-ua", r#""Chromium";v="131", "Not_A Brand";v="24", "HeadlessChrome";v="131""#),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", "\"Linux\""),
            ("upgrade-insecure-requests", "1"),
            (
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
            ),
            ("accept", CHROME_ACCEPT),
            ("sec-fetch-site", "none"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-user", "?1"),
            ("sec-fetch-dest", "document"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
        ],
        want: &[
            ("ua_family", C("headless-chrome")),
            ("ua_claim", C("browser")),
            ("headless_tokens", F(2.0)),
            // Accept-Language missing: the old headless mode sent none.
            ("engine_headers_missing", F(1.0)),
            ("ch_brand_mismatch", F(0.0)),
            ("ch_brand", C("HeadlessChrome")),
            ("ch_version_mismatch", F(0.0)),
            ("has_accept_language", F(0.0)),
            ("order_inversions", F(0.0)),
        ],
    },
    Case {
        name: "scraper: Chrome UA through python-requests",
        method: "GET",
        uri: "/products?sort=price&page=7",
        version: 11,
        client: "192.0.2.15",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("user-agent", CHROME_UA),
            ("accept-encoding", "gzip, deflate"),
            ("accept", "*/*"),
            ("connection", "keep-alive"),
        ],
        want: &[
            ("ua_family", C("chrome")),
            ("ch_missing", F(1.0)),
            // Chromium order c < u < a < e: (u,c) (e,a) (e,c) (a,c) are reversed.
            ("order_inversions", F(4.0)),
            ("header_order", C("hueac")),
            ("fetch_non_browser", F(0.0)),
            // Plain HTTP for all it shows: Accept-Language is the one
            // header every browser sends that is missing.
            ("engine_headers_missing", F(1.0)),
        ],
    },
    Case {
        name: "scraper: stale client hints, wrong platform, mobile flag contradicts",
        method: "GET",
        uri: "/",
        version: 20,
        client: "192.0.2.16",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("sec-ch-ua", r#""Chromium";v="120", "Google Chrome";v="120", "Not-A.Brand";v="99""#),
            ("sec-ch-ua-mobile", "?1"),
            ("sec-ch-ua-platform", "\"macOS\""),
            ("user-agent", CHROME_UA),
            ("accept", CHROME_ACCEPT),
        ],
        want: &[
            ("ch_ua_major", F(120.0)),
            ("ch_version_mismatch", F(1.0)),
            ("ch_platform_mismatch", F(1.0)),
            ("ch_mobile_mismatch", F(1.0)),
            ("ch_missing", F(0.0)),
            ("ch_brand_mismatch", F(0.0)),
        ],
    },
    Case {
        name: "scraper: Firefox UA on Chrome's headers, Go-sorted",
        method: "GET",
        uri: "/",
        version: 11,
        client: "192.0.2.17",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"),
            ("accept", CHROME_ACCEPT),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("accept-language", "en-US,en;q=0.9"),
            ("sec-ch-ua", CHROME_CH_UA),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-fetch-dest", "document"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-site", "none"),
            ("sec-fetch-user", "?1"),
        ],
        want: &[
            ("ua_family", C("firefox")),
            ("ch_non_chromium", F(1.0)),
            ("ch_version_mismatch", F(0.0)),
            // Firefox order u a l e ... : "e" before "l" is 1 pair.
            ("order_inversions", F(1.0)),
            ("fetch_incoherent", F(0.0)),
        ],
    },
    Case {
        name: "scraper: browserforge's shifted sec-fetch values",
        method: "GET",
        uri: "/",
        version: 20,
        client: "192.0.2.18",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("sec-ch-ua", CHROME_CH_UA),
            ("user-agent", CHROME_UA),
            ("accept", CHROME_ACCEPT),
            ("sec-fetch-site", "?1"),
            ("sec-fetch-mode", "same-site"),
            ("sec-fetch-user", "document"),
            ("sec-fetch-dest", "navigate"),
        ],
        want: &[
            ("fetch_incoherent", F(1.0)),
            ("fetch_contradiction", F(1.0)),
            ("fetch_site", C("?1")),
            ("fetch_mode", C("same-site")),
        ],
    },
    Case {
        name: "no headers at all, unix socket client, absolute-form target",
        method: "POST",
        uri: "http://shop.example/a/b.tar.gz?x",
        version: 10,
        client: "unix:",
        tls: None,
        headers: &[],
        want: &[
            ("http_version", F(1.0)),
            ("path_depth", F(2.0)),
            ("query_arg_count", F(1.0)),
            ("uri_ext", C("gz")),
            ("header_count", F(0.0)),
            ("ua_len", F(NAN)),
            ("ua_major", F(NAN)),
            ("ua_mobile", F(NAN)),
            ("ua_family", C("none")),
            ("ua_os", C("none")),
            ("client_ipv6", F(NAN)),
            ("has_host", F(0.0)),
            ("header_order", C("")),
            ("order_inversions", F(NAN)),
            ("ch_mobile_mismatch", F(0.0)),
        ],
    },
    Case {
        name: "mixed-case names, split cookies, repeated UA (first wins), unknown headers skipped",
        method: "GET",
        uri: "/x.bak~1",
        version: 30,
        client: "192.0.2.19",
        tls: None,
        headers: &[
            ("Host", "shop.example"),
            ("User-Agent", "curl/7.88.1"),
            ("X-Custom", "1"),
            ("Cookie", "a=1"),
            ("cookie", "b=2; c=3"),
            ("user-agent", "Wget/1.0"),
            ("Sec-CH-UA-Mobile", "yes"),
            ("Accept-Language", "12"),
        ],
        want: &[
            ("http_version", F(3.0)),
            ("uri_ext", C("~")),
            ("ua_family", C("curl")),
            ("header_count", F(8.0)),
            ("cookie_count", F(3.0)),
            ("has_cookie", F(1.0)),
            ("header_order", C("hukuMl")),
            ("client_hint_count", F(1.0)),
            ("ch_non_chromium", F(1.0)),
            ("ch_mobile_mismatch", F(1.0)),
            ("accept_language_primary", C("~")),
        ],
    },
    Case {
        // Captured: Chromium 156's CORS preflight from a plain-HTTP page to
        // a plain-HTTP API sends `sec-fetch-mode: cors` alone.
        name: "Chromium's preflight to a plain-HTTP origin",
        method: "OPTIONS",
        uri: "/api/events",
        version: 11,
        client: "127.0.0.1",
        tls: None,
        headers: &[
            ("Host", "api.test"),
            ("Connection", "keep-alive"),
            ("Accept", "*/*"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
            ("Origin", "http://shop.test"),
            ("User-Agent", CHROMIUM_156_UA),
            ("Sec-Fetch-Mode", "cors"),
            ("Referer", "http://shop.test/"),
            ("Accept-Encoding", "gzip, deflate"),
            ("Accept-Language", "en-US,en;q=0.9"),
        ],
        want: &[
            ("fetch_incoherent", F(1.0)),
            ("fetch_contradiction", F(0.0)),
            ("engine_headers_missing", F(0.0)),
        ],
    },
    Case {
        name: "library values under a Chrome UA: Accept, Accept-Encoding, Connection",
        method: "GET",
        uri: "/",
        version: 11,
        client: "192.0.2.30",
        tls: None,
        headers: &[
            ("Host", "shop.example"),
            ("Connection", "Keep-Alive"),
            ("Upgrade-Insecure-Requests", "1"),
            ("User-Agent", CHROME_UA),
            ("Accept", "*/*"),
            ("Accept-Encoding", "identity"),
            ("Accept-Language", "en-US,en;q=0.9"),
        ],
        want: &[
            ("accept_non_browser", F(1.0)),
            ("encoding_non_browser", F(1.0)),
            ("connection_non_browser", F(1.0)),
            ("engine_headers_missing", F(0.0)),
        ],
    },
    Case {
        name: "hand-written client hints: no GREASE, Edge's brand under Chrome's UA",
        method: "GET",
        uri: "/",
        version: 20,
        client: "192.0.2.31",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("sec-ch-ua", r#""Chromium";v="131", "Microsoft Edge";v="131""#),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", "\"Windows\""),
            ("upgrade-insecure-requests", "1"),
            ("user-agent", CHROME_UA),
            ("accept", CHROME_ACCEPT),
            ("sec-fetch-site", "none"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-user", "?1"),
            ("sec-fetch-dest", "document"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("accept-language", "en-US,en;q=0.9"),
        ],
        want: &[
            ("ch_brand_mismatch", F(2.0)),
            ("ch_version_mismatch", F(0.0)),
            ("engine_headers_missing", F(0.0)),
        ],
    },
    Case {
        name: "Chrome's media range request: identity only, nothing missing",
        method: "GET",
        uri: "/media/intro.mp4",
        version: 11,
        client: "192.0.2.32",
        tls: None,
        headers: &[
            ("Host", "shop.example"),
            ("Connection", "keep-alive"),
            ("sec-ch-ua-platform", "\"Windows\""),
            ("User-Agent", CHROME_UA),
            ("sec-ch-ua", CHROME_CH_UA),
            ("sec-ch-ua-mobile", "?0"),
            ("Accept-Encoding", "identity;q=1, *;q=0"),
            ("Accept", "*/*"),
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Sec-Fetch-Dest", "video"),
            ("Referer", "https://shop.example/"),
            ("Accept-Language", "en-US,en;q=0.9"),
            ("Range", "bytes=0-"),
        ],
        want: &[
            ("encoding_non_browser", F(0.0)),
            ("engine_headers_missing", F(0.0)),
            ("fetch_contradiction", F(0.0)),
        ],
    },
    Case {
        name: "Firefox over HTTP/2 without TE: trailers",
        method: "GET",
        uri: "/",
        version: 20,
        client: "192.0.2.33",
        tls: None,
        headers: &[
            ("host", "shop.example"),
            ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"),
            ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            ("accept-language", "en-US,en;q=0.5"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("upgrade-insecure-requests", "1"),
            ("sec-fetch-dest", "document"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-site", "none"),
            ("sec-fetch-user", "?1"),
        ],
        want: &[("engine_headers_missing", F(1.0)), ("fetch_contradiction", F(0.0))],
    },
];

fn index(names: &[edgeguard::features::FeatureSpec], name: &str) -> Option<usize> {
    names.iter().position(|s| s.name == name)
}

fn tls_of(case: &Case) -> Option<TlsFacts<'static>> {
    case.tls
        .map(|(ja4, family)| TlsFacts::new(ja4.as_bytes(), family).expect("a JA4"))
}

fn run(case: &Case, checked: &mut BTreeSet<&'static str>) {
    let headers: Vec<Header<'_>> = case
        .headers
        .iter()
        .map(|(k, val)| Header::new(k.as_bytes(), val.as_bytes()))
        .collect();
    let req = Request::new(
        case.method.as_bytes(),
        case.uri.as_bytes(),
        case.version,
        case.client.as_bytes(),
        &headers,
    )
    .with_tls(tls_of(case));
    let mut fresh = FeatureVector::new();
    extract(&req, &mut fresh);
    for &(name, want) in case.want {
        checked.insert(name);
        match want {
            F(x) => {
                let i = index(FLOAT_FEATURES, name)
                    .unwrap_or_else(|| panic!("{}: no float {name}", case.name));
                let got = fresh.floats()[i];
                assert!(
                    got == x || (got.is_nan() && x.is_nan()),
                    "{}: {name} = {got}, want {x}",
                    case.name
                );
            }
            C(s) => {
                let i = index(CAT_FEATURES, name)
                    .unwrap_or_else(|| panic!("{}: no cat {name}", case.name));
                let got = fresh.cat_at(i).unwrap();
                assert_eq!(String::from_utf8_lossy(got), s, "{}: {name}", case.name);
            }
        }
    }
}

#[test]
fn real_header_sets() {
    let mut checked = BTreeSet::new();
    for case in CASES {
        run(case, &mut checked);
    }
    let all: BTreeSet<&str> = FLOAT_FEATURES
        .iter()
        .chain(CAT_FEATURES)
        .map(|s| s.name)
        .collect();
    let missing: Vec<_> = all.difference(&checked).collect();
    assert!(missing.is_empty(), "features no case asserts: {missing:?}");
}

/// A reused vector gives exactly what a fresh one gives: nothing of the
/// previous request leaks into the next.
#[test]
fn reused_vector_matches_fresh() {
    let mut reused = FeatureVector::new();
    let mut owned: Vec<Vec<Header<'_>>> = Vec::new();
    for case in CASES {
        owned.push(
            case.headers
                .iter()
                .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
                .collect(),
        );
    }
    for order in [
        CASES.iter().enumerate().collect::<Vec<_>>(),
        CASES.iter().enumerate().rev().collect(),
    ] {
        for (i, case) in order {
            let req = Request::new(
                case.method.as_bytes(),
                case.uri.as_bytes(),
                case.version,
                case.client.as_bytes(),
                &owned[i],
            )
            .with_tls(tls_of(case));
            let mut fresh = FeatureVector::new();
            extract(&req, &mut fresh);
            extract(&req, &mut reused);
            for (a, b) in fresh.floats().iter().zip(reused.floats()) {
                assert!(a == b || (a.is_nan() && b.is_nan()), "{}", case.name);
            }
            assert!(fresh.cats().eq(reused.cats()), "{}", case.name);
        }
    }
}

#[test]
fn header_order_is_bounded() {
    let names: Vec<String> = (0..100)
        .map(|i| ["accept", "user-agent", "cookie", "te"][i % 4].to_string())
        .collect();
    let headers: Vec<Header<'_>> = names
        .iter()
        .map(|n| Header::new(n.as_bytes(), b"x"))
        .collect();
    let req = Request::new(b"GET", b"/", 11, b"192.0.2.1", &headers);
    let mut v = FeatureVector::new();
    extract(&req, &mut v);
    let order = v.cat(edgeguard::features::Cat::HeaderOrder);
    assert_eq!(order.len(), edgeguard::features::HEADER_ORDER_CAP);
    assert!(order.starts_with(b"aukt") && order.ends_with(b"+"));
    assert_eq!(v.float(edgeguard::features::Float::HeaderCount), 100.0);
    assert_eq!(v.cat_at(CAT_FEATURES.len()), None);
}

/// Non-UTF-8 bytes and absurd values never panic and keep every value in place.
#[test]
fn hostile_bytes() {
    let junk: &[u8] = &[0xff, 0xfe, b'"', b';', b',', 0, b'v', b'=', b'"'];
    let headers = [
        Header::new(b"user-agent", b"Mozilla/5.0 Chrome/99999999999999999999"),
        Header::new(b"sec-ch-ua", junk),
        Header::new(b"sec-ch-ua-platform", junk),
        Header::new(b"accept-language", junk),
        Header::new(junk, junk),
        Header::new(b"", b""),
    ];
    let req = Request::new(junk, junk, 0, junk, &headers);
    let mut v = FeatureVector::new();
    extract(&req, &mut v);
    assert_eq!(
        v.float(edgeguard::features::Float::UaMajor),
        u32::MAX as f32
    );
    assert_eq!(v.float(edgeguard::features::Float::ChVersionMismatch), 1.0);
    assert_eq!(v.cats().count(), CAT_FEATURES.len());
}
