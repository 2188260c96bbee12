//! The feature schema: names, docs and positions of every float and
//! categorical feature. Models map their inputs to these by name.
//!
//! The vector holds every feature of every schema version the scorer reads;
//! a version is the subset of names a model may be trained on
//! ([`FeatureSpec::in_schema`]). A model says its version in its metadata
//! ([`SCHEMA_KEY`]); a model without the key predates versions and is
//! schema 1. Features are only ever appended, and a name keeps its meaning
//! in every version, so a version-1 model reads the same values it was
//! trained on.
//!
//! - **1** (legacy, frozen): the first models, which the pure-Lua engine
//!   reads. Its `order_inversions` counts inversions against hand-written
//!   browser orders, and its `ch_missing` fires for Chromium on plain-HTTP
//!   origins.
//! - **2**: drops those two; adds `order_reversed_pairs` (header
//!   pairs in the reverse of the only order people's browsers of the
//!   claimed engine were seen to send them in, from a table learnt at
//!   training time, see
//!   [`orders`](super::orders)) and `ch_missing_secure` (client hints missing
//!   where the request shows the secure context Chromium sends them in).
//! - **3**: version 2 plus the connection's TLS facts
//!   ([`tls`](super::tls)): `tls_ja4`, `tls_ja4_a`, `tls_family`, `tls13`,
//!   the counts, `tls_alpn_h2` and two checks against the User-Agent.
//!   Version 2 models still load and read what they were trained on.
//! - **4** (current): judges the software, not the page or the visit: a
//!   subset of the features above (no request target, cookies, referer,
//!   language, raw values or fingerprints) plus the software evidence
//!   counts ([`evidence`](super::evidence)); see [`SCHEMA_4_CLAIM`]. Versions 1
//!   to 3 still load and read what they were trained on.

/// The metadata key holding the schema version a model was trained on.
pub const SCHEMA_KEY: &str = "edgeguard.schema";

/// The schema version `models/train.py` trains on.
pub const SCHEMA_VERSION: u32 = 4;

/// The versions this build reads.
pub const SCHEMA_VERSIONS: [u32; 4] = [1, 2, 3, 4];

/// Features of version 1 that later versions dropped.
const DROPPED_IN_2: &[&str] = &["order_inversions", "ch_missing"];

/// Features added in version 2.
const ADDED_IN_2: &[&str] = &["order_reversed_pairs", "ch_missing_secure"];

/// Features added in version 3: the connection's TLS facts.
const ADDED_IN_3: &[&str] = &[
    "tls13",
    "tls_cipher_count",
    "tls_extension_count",
    "tls_alpn_h2",
    "tls_family_mismatch",
    "tls_browser_no_h2",
    "tls_ja4",
    "tls_ja4_a",
    "tls_family",
];

/// Features added in version 4: the software evidence counts
/// ([`evidence`](super::evidence)).
const ADDED_IN_4: &[&str] = &[
    "engine_headers_missing",
    "accept_non_browser",
    "encoding_non_browser",
    "connection_non_browser",
    "ch_brand_mismatch",
    "headless_tokens",
    "tls_browser_no_tls13",
    "fetch_contradiction",
    "ua_claim",
];

/// What a version-4 model may read ([`SCHEMA_4_CLAIM`] and [`EVIDENCE`]):
/// what the request says about the software that sent it, and nothing
/// about the page or the visit.
///
/// - the claim and the protocol: `ua_claim` (a browser, or which library,
///   crawler or nothing), `http_version`;
/// - evidence, each 0 on every request a real browser sends and one more
///   for each thing no browser of the claimed engine does (trained with a
///   monotone constraint): the client-hint checks, the fetch-metadata
///   checks, `order_reversed_pairs` (against a table of the engines whose
///   orders are known, without the visit's headers: `models/train.py`),
///   the TLS checks and the counts of version 4.
///
/// Left out on purpose: the request target (`uri_len`, `path_depth`,
/// `query_arg_count`, `uri_ext`) is the page; cookies, `referer` and
/// `fetch_site` are the visit; `accept_language_primary` is the person;
/// `client_ipv6` is the network; `method` is what the page asked for;
/// `ua_family` names the product, and a product with few people in the
/// training data (Edge, Opera, an in-app browser) would be judged by the
/// spoofers that claim it (held out, Edge's people scored 0.997 with it);
/// `fetch_incoherent` calls Chromium's own preflights incoherent
/// (`fetch_contradiction` replaces it); `ch_missing_secure` is one case of
/// `engine_headers_missing`;
/// the raw values, counts and fingerprints (`header_order`, `accept`,
/// `header_count`, `ua_major`, `tls_ja4`, ...) let a model learn one
/// build's bytes, and an unseen browser's would be evidence against it.
/// (Schema 4 is these two and every feature of [`EVIDENCE`]: the
/// evidence list is written once, here below.)
const SCHEMA_4_CLAIM: &[&str] = &["http_version", "ua_claim"];

/// The features of schema 4 that are evidence: a version-4 model must
/// never score lower with more of any of them (`models/train.py` sets a
/// monotone constraint on each; the metamorphic test checks the result).
pub const EVIDENCE: &[&str] = &[
    "ch_version_mismatch",
    "ch_non_chromium",
    "ch_platform_mismatch",
    "ch_mobile_mismatch",
    "fetch_non_browser",
    "fetch_contradiction",
    "order_reversed_pairs",
    "tls_family_mismatch",
    "tls_browser_no_h2",
    "engine_headers_missing",
    "accept_non_browser",
    "encoding_non_browser",
    "connection_non_browser",
    "ch_brand_mismatch",
    "headless_tokens",
    "tls_browser_no_tls13",
];

impl FeatureSpec {
    /// Whether a model of schema `version` may read this feature.
    pub fn in_schema(&self, version: u32) -> bool {
        let name = &self.name;
        match version {
            1 => {
                !ADDED_IN_2.contains(name)
                    && !ADDED_IN_3.contains(name)
                    && !ADDED_IN_4.contains(name)
            }
            2 => {
                !DROPPED_IN_2.contains(name)
                    && !ADDED_IN_3.contains(name)
                    && !ADDED_IN_4.contains(name)
            }
            3 => !DROPPED_IN_2.contains(name) && !ADDED_IN_4.contains(name),
            4 => SCHEMA_4_CLAIM.contains(name) || EVIDENCE.contains(name),
            _ => false,
        }
    }

    /// Whether this feature is evidence of automation in schema 4 (see
    /// [`EVIDENCE`]).
    pub fn is_evidence(&self) -> bool {
        EVIDENCE.contains(&self.name)
    }
}

/// One feature of the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureSpec {
    /// The name models use for this feature (a CatBoost feature id).
    pub name: &'static str,
    /// How the value is computed, in one line.
    pub doc: &'static str,
}

/// Declares a feature kind: an enum of positions, the spec table in the same
/// order, and its length, from one list so they cannot drift apart.
macro_rules! schema {
    (
        $(#[$enum_doc:meta])* enum $kind:ident;
        $(#[$specs_doc:meta])* specs $specs:ident;
        $(#[$count_doc:meta])* count $count:ident;
        $($variant:ident = $name:literal : $doc:literal,)*
    ) => {
        $(#[$enum_doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum $kind {
            $(#[doc = $doc] $variant,)*
        }

        $(#[$specs_doc])*
        pub const $specs: &[FeatureSpec] = &[$(FeatureSpec { name: $name, doc: $doc },)*];

        $(#[$count_doc])*
        pub const $count: usize = $specs.len();

        impl $kind {
            /// Every feature of this kind, in schema order.
            pub const ALL: [$kind; $count] = [$($kind::$variant,)*];

            /// Position in the vector.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The spec of this feature.
            pub const fn spec(self) -> FeatureSpec {
                $specs[self as usize]
            }
        }
    };
}

schema! {
    /// Positions of the float features.
    enum Float;
    /// The float features, in vector order.
    specs FLOAT_FEATURES;
    /// How many float features a vector holds.
    count FLOAT_COUNT;

    HttpVersion = "http_version": "HTTP version as nginx reports it divided by 10: 1.0, 1.1, 2, 3",
    UriLen = "uri_len": "bytes in the request target as sent",
    PathDepth = "path_depth": "non-empty path segments (`/` is 0, `/a/b/` is 2)",
    QueryArgCount = "query_arg_count": "non-empty `&`-separated query arguments",
    HeaderCount = "header_count": "request headers, repeats included",
    UaLen = "ua_len": "bytes in the User-Agent; NaN without one",
    UaMajor = "ua_major": "major version of the claimed family (`ua_family`); NaN if none is spelled",
    UaMobile = "ua_mobile": "1 if the User-Agent says `Mobile`, else 0; NaN without one",
    HasAccept = "has_accept": "1 if `accept` is present (every browser sends it), else 0",
    AcceptLen = "accept_len": "bytes in `accept`; NaN without it",
    HasAcceptLanguage = "has_accept_language": "1 if `accept-language` is present, else 0",
    AcceptLanguageCount = "accept_language_count": "comma-separated items of `accept-language`; NaN without it",
    HasAcceptEncoding = "has_accept_encoding": "1 if `accept-encoding` is present, else 0",
    AcceptEncodingCount = "accept_encoding_count": "comma-separated items of `accept-encoding`; NaN without it",
    ClientHintCount = "client_hint_count": "`sec-ch-ua` and `sec-ch-ua-*` headers",
    FetchMetadataCount = "fetch_metadata_count": "`sec-fetch-*` headers",
    HasUpgradeInsecureRequests = "has_upgrade_insecure_requests": "1 if `upgrade-insecure-requests` is present, else 0",
    HasCookie = "has_cookie": "1 if any `cookie` header is present, else 0",
    CookieCount = "cookie_count": "`;`-separated cookies over every `cookie` header",
    HasReferer = "has_referer": "1 if `referer` is present, else 0",
    HasConnection = "has_connection": "1 if `connection` is present (HTTP/1 only), else 0",
    HasHost = "has_host": "1 if `host` is present, else 0",
    ClientIpv6 = "client_ipv6": "1 for an IPv6 client address, 0 for IPv4, NaN for anything else (unix socket)",
    ChUaMajor = "ch_ua_major": "Chromium major version claimed by `sec-ch-ua`; NaN without one",
    ChMissing = "ch_missing": "(schema 1) 1 if the UA claims Chromium >= 90 off iOS but `sec-ch-ua` is absent, else 0",
    ChVersionMismatch = "ch_version_mismatch": "1 if `sec-ch-ua` is present with a Chromium UA and its version differs from the UA's (or is unreadable), else 0",
    ChNonChromium = "ch_non_chromium": "1 if client hints are present but the UA does not claim Chromium, else 0",
    ChPlatformMismatch = "ch_platform_mismatch": "1 if `sec-ch-ua-platform` contradicts the UA's OS, else 0",
    ChMobileMismatch = "ch_mobile_mismatch": "1 if `sec-ch-ua-mobile` contradicts the UA's `Mobile` (or is malformed), else 0",
    FetchNonBrowser = "fetch_non_browser": "1 if `sec-fetch-*` headers come with a UA that claims no browser, else 0",
    FetchIncoherent = "fetch_incoherent": "1 if the `sec-fetch-*` values form a combination no browser sends, else 0",
    OrderInversions = "order_inversions": "(schema 1) pairs of headers in the opposite of a hand-written order of the claimed browser; NaN for non-browser UAs",
    OrderReversedPairs = "order_reversed_pairs": "(schema 2) header pairs in the reverse of the only order people's browsers of the claimed engine sent them in training (learnt table); NaN for non-browser UAs or without a table",
    ChMissingSecure = "ch_missing_secure": "(schema 2) 1 if the UA claims Chromium >= 90 off iOS, `sec-ch-ua` is absent and `sec-fetch-*` is present (a secure context), else 0",
    Tls13 = "tls13": "(schema 3) 1 if the ClientHello offers TLS 1.3, else 0; NaN without TLS facts",
    TlsCipherCount = "tls_cipher_count": "(schema 3) cipher suites of the ClientHello as JA4 counts them (no GREASE, at most 99); NaN without TLS facts",
    TlsExtensionCount = "tls_extension_count": "(schema 3) extensions of the ClientHello as JA4 counts them (no GREASE, at most 99); NaN without TLS facts",
    TlsAlpnH2 = "tls_alpn_h2": "(schema 3) 1 if the first ALPN value offered is `h2`, else 0; NaN without TLS facts",
    TlsFamilyMismatch = "tls_family_mismatch": "(schema 3) 1 if the UA claims a browser engine and the ClientHello is not its TLS library's, else 0; NaN without TLS facts",
    TlsBrowserNoH2 = "tls_browser_no_h2": "(schema 3) 1 if the UA claims a browser and the first ALPN value is not `h2`, else 0; NaN without TLS facts",
    EngineHeadersMissing = "engine_headers_missing": "(schema 4) headers the claimed browser engine always sends on this kind of request that are missing (`accept`, `accept-language`; `accept-encoding` and `connection` over HTTP/1 from Chromium, Firefox and Apple's Safari; client hints and fetch metadata in secure contexts, `upgrade-insecure-requests` on navigations, Firefox's `te` over HTTP/2); 0 for UAs that claim no browser",
    AcceptNonBrowser = "accept_non_browser": "(schema 4) 1 if a browser UA's `accept` is one no browser sends for the request's kind (a navigation without `text/html`, a stylesheet without `text/css`, an image without `image/`, `q=.2`), else 0",
    EncodingNonBrowser = "encoding_non_browser": "(schema 4) 1 if a browser UA's `accept-encoding` lacks `gzip` (media `range` requests aside), else 0",
    ConnectionNonBrowser = "connection_non_browser": "(schema 4) 1 if a Chromium, Firefox or Apple Safari UA sends over HTTP/1 a `connection` other than `keep-alive` or an upgrade, else 0",
    ChBrandMismatch = "ch_brand_mismatch": "(schema 4) contradictions of a Chromium UA's `sec-ch-ua`: no GREASE brand, no `Chromium` brand, another product's brand (0 to 3)",
    HeadlessTokens = "headless_tokens": "(schema 4) `HeadlessChrome` in the User-Agent and in a Chromium UA's `sec-ch-ua` (0 to 2)",
    TlsBrowserNoTls13 = "tls_browser_no_tls13": "(schema 4) 1 if the UA claims a browser and the ClientHello does not offer TLS 1.3, else 0; NaN without TLS facts",
    FetchContradiction = "fetch_contradiction": "(schema 4) `fetch_incoherent`, except for destinations it does not know and the lone `sec-fetch-mode: cors` of Chromium's CORS preflights to plain-HTTP origins",
}

schema! {
    /// Positions of the categorical features.
    enum Cat;
    /// The categorical features, in vector order.
    specs CAT_FEATURES;
    /// How many categorical features a vector holds.
    count CAT_COUNT;

    Method = "method": "request method as sent",
    UriExt = "uri_ext": "extension of the last path segment, lower-cased; `~` if longer than 8 or not alphanumeric; empty if none",
    HeaderOrder = "header_order": "one code per known header name in arrival order, repeats collapsed (see `header_order::CODES`)",
    UaFamily = "ua_family": "client family the User-Agent claims (`chrome`, `curl`, `bot`, ...; `none` without one)",
    UaOs = "ua_os": "OS the User-Agent claims (`windows`, `macos`, `linux`, `android`, `ios`, `chromeos`, `other`, `none`)",
    ChBrand = "ch_brand": "first `sec-ch-ua` brand that is neither GREASE nor `Chromium` (`Google Chrome`, `HeadlessChrome`, ...), as sent; empty if none",
    AcceptLanguagePrimary = "accept_language_primary": "primary subtag of the first `accept-language` item, lower-cased; `~` if malformed; empty if absent",
    Accept = "accept": "`accept` value as sent; empty if absent",
    AcceptEncoding = "accept_encoding": "`accept-encoding` value as sent; empty if absent",
    FetchSite = "fetch_site": "`sec-fetch-site` value as sent; empty if absent",
    FetchMode = "fetch_mode": "`sec-fetch-mode` value as sent; empty if absent",
    Connection = "connection": "`connection` value as sent; empty if absent",
    TlsJa4 = "tls_ja4": "(schema 3) the connection's JA4; empty without TLS facts",
    TlsJa4A = "tls_ja4_a": "(schema 3) the first part of the JA4 (`t13d1516h2`); empty without TLS facts",
    TlsFamily = "tls_family": "(schema 3) TLS library family guessed from the cipher list (`boringssl`, `nss`, `openssl`, `go`, `unknown`); `none` without TLS facts",
    UaClaim = "ua_claim": "(schema 4) `browser` for every User-Agent that claims a browser (any product, engine or version, `HeadlessChrome` too), else `ua_family`'s value (`curl`, `bot`, `other`, `none`, ...)",
}
