//! Detection IDs: the named reasons a request was flagged for, each with a
//! strength, read from the features extraction already computed.
//!
//! One table ([`DETECTIONS`]) names every ID, its strength and what fires
//! it; docs/detections.md is checked against it (`make lint`). A request's
//! reasons are a [`Reasons`] bit mask: reading them allocates nothing.
//!
//! The strength says what a person can trip (models/README.md and
//! docs/detections.md give the counts behind each):
//! - **certain**: nothing a person's browser sends, whatever sits between
//!   it and nginx: a library's or a crawler's User-Agent, none at all, a
//!   `Headless` token, client hints or fetch metadata no browser combines,
//!   a browser claim missing several of its engine's headers, a library's
//!   `Accept`;
//! - **ambiguous**: what a hop rewrites under a person's perfect browser
//!   head: TLS-inspecting proxies and antivirus re-make the ClientHello
//!   (another library, no TLS 1.3, no `h2`), proxies and privacy
//!   extensions remove one header, middleboxes rewrite `Accept-Encoding`
//!   and `Connection` or reorder headers.

use super::schema::{Cat, Float};
use super::vector::FeatureVector;

/// How much one reason says about the software that sent the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(C)]
pub enum Grade {
    /// Not flagged: no grade.
    None = 0,
    /// Only reasons a hop in front of a person can cause.
    Ambiguous = 1,
    /// At least one reason no person's browser gives.
    Certain = 2,
}

impl Grade {
    /// The name in the decision line and `$edgeguard_grade`.
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::None => "",
            Grade::Ambiguous => "ambiguous",
            Grade::Certain => "certain",
        }
    }
}

/// One detection ID of [`DETECTIONS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detection {
    /// The ID, as logged and labelled.
    pub name: &'static str,
    /// [`Grade::Certain`] or [`Grade::Ambiguous`].
    pub grade: Grade,
    /// What fires it, in one line (docs/detections.md's).
    pub doc: &'static str,
    /// [`Detection::name`], NUL-terminated (for the C ABI).
    pub c_name: &'static std::ffi::CStr,
}

/// `name` and its NUL as a C string, at compile time.
const fn c_str(with_nul: &'static str) -> &'static std::ffi::CStr {
    match std::ffi::CStr::from_bytes_with_nul(with_nul.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a detection ID has a NUL"),
    }
}

/// Declares the detection IDs once: the [`Id`] enum (bit positions) and
/// the [`DETECTIONS`] table in the same order.
macro_rules! detections {
    ($($variant:ident = $name:literal, $grade:ident, $doc:literal;)*) => {
        /// A detection ID: its bit in [`Reasons`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Id {
            $(#[doc = $doc] $variant,)*
        }

        /// Every detection ID, in bit order.
        pub const DETECTIONS: &[Detection] = &[$(Detection {
            name: $name,
            grade: Grade::$grade,
            doc: $doc,
            c_name: c_str(concat!($name, "\0")),
        },)*];

        impl Id {
            /// Every ID, in bit order.
            pub const ALL: [Id; DETECTIONS.len()] = [$(Id::$variant,)*];
        }
    };
}

detections! {
    UaMissing = "ua_missing", Certain,
        "no `User-Agent`, or an empty one: every browser sends one";
    UaLibrary = "ua_library", Certain,
        "an HTTP library's `User-Agent` (curl, Wget, python-requests, aiohttp, httpx, urllib, Go, Java, OkHttp, Node, axios)";
    UaBot = "ua_bot", Certain,
        "a `User-Agent` that declares a crawler (`bot` ending a word, `crawl`, `spider`, `slurp`, `scrapy`, a contact URL), an Android device name aside";
    UaUnknown = "ua_unknown", Certain,
        "a `User-Agent` that claims no browser (no product or engine with a version: `Mozilla/5.0` alone) and no known library";
    HeadlessTokens = "headless_tokens", Certain,
        "`HeadlessChrome` in the `User-Agent` or as a `sec-ch-ua` brand";
    ChVersionMismatch = "ch_version_mismatch", Certain,
        "`sec-ch-ua`'s Chromium version differs from the `User-Agent`'s";
    ChNonChromium = "ch_non_chromium", Certain,
        "client hints under a `User-Agent` that is not Chromium (Firefox, Safari and iOS browsers send none)";
    ChPlatformMismatch = "ch_platform_mismatch", Certain,
        "`sec-ch-ua-platform` names another OS than the `User-Agent`";
    ChMobileMismatch = "ch_mobile_mismatch", Certain,
        "`sec-ch-ua-mobile` disagrees with the `User-Agent`, or is not `?0`/`?1`";
    ChBrandMismatch = "ch_brand_mismatch", Certain,
        "`sec-ch-ua` without GREASE, without `Chromium`, or naming another product";
    FetchNonBrowser = "fetch_non_browser", Certain,
        "`sec-fetch-*` headers under a `User-Agent` that claims no browser";
    FetchContradiction = "fetch_contradiction", Certain,
        "`sec-fetch-*` values no browser combines";
    EngineHeadersMissing = "engine_headers_missing", Certain,
        "two or more of the headers the claimed engine always sends on this kind of request are missing (client hints only when some are sent: Chromium sends none of them when JavaScript is off)";
    AcceptNonBrowser = "accept_non_browser", Certain,
        "an `Accept` no browser sends on this kind of request (a library's `*/*` on a navigation, Java's `q=.2`)";
    BotClaimFake = "bot_claim_fake", Certain,
        "the `User-Agent` claims a verified bot from outside its published prefixes";
    ModelOnly = "model_only", Certain,
        "a model flagged the request and no other ID fired (a model reading more than the evidence: schema 1-3, `spoof`)";
    EngineHeaderMissing = "engine_header_missing", Ambiguous,
        "one header the claimed engine always sends is missing (proxies and privacy extensions remove one)";
    TlsFamilyMismatch = "tls_family_mismatch", Ambiguous,
        "the ClientHello is not the claimed browser's TLS library (TLS-inspecting proxies and antivirus re-make it)";
    TlsBrowserNoTls13 = "tls_browser_no_tls13", Ambiguous,
        "a browser claim over a ClientHello without TLS 1.3 (an old inspecting proxy)";
    TlsBrowserNoH2 = "tls_browser_no_h2", Ambiguous,
        "a browser claim over a ClientHello that does not offer `h2` first (an HTTP/1.1-only proxy)";
    EncodingNonBrowser = "encoding_non_browser", Ambiguous,
        "an `Accept-Encoding` without `gzip` (a middlebox may rewrite it)";
    ConnectionNonBrowser = "connection_non_browser", Ambiguous,
        "a `Connection` other than `keep-alive` or an upgrade over HTTP/1 (a hop-by-hop header a proxy rewrites)";
    OrderReversedPairs = "order_reversed_pairs", Ambiguous,
        "header pairs in an order people's browsers of the engine never sent (a hop may reorder)";
    BehaviourCrawl = "behaviour_crawl", Ambiguous,
        "the client (address prefix × head fingerprint, in the client memory) navigated `behaviour_navigations` pages in the window (twice as many when it sent the memory's cookie back) without fetching a sub-resource or solving a challenge (a person with a warm cache can look so: challenged, never blocked on it alone)";
}

/// How many detection IDs there are (at most 32: a [`Reasons`] mask).
pub const DETECTION_COUNT: usize = DETECTIONS.len();
const _: () = assert!(DETECTION_COUNT <= 32);

/// The certain IDs' bits.
const CERTAIN: u32 = {
    let mut m = 0;
    let mut i = 0;
    while i < DETECTION_COUNT {
        if matches!(DETECTIONS[i].grade, Grade::Certain) {
            m |= 1 << i;
        }
        i += 1;
    }
    m
};

impl Id {
    /// Its entry of [`DETECTIONS`].
    pub fn detection(self) -> Detection {
        DETECTIONS[self as usize]
    }

    /// The ID named `name`.
    pub fn from_name(name: &str) -> Option<Id> {
        Id::ALL.into_iter().find(|i| i.detection().name == name)
    }
}

/// The detection IDs that fired for one request: a bit per [`Id`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reasons(pub u32);

impl Reasons {
    /// No reasons.
    pub const NONE: Reasons = Reasons(0);

    /// Whether `id` fired.
    pub fn has(self, id: Id) -> bool {
        self.0 & (1 << id as u32) != 0
    }

    /// These reasons and `id`.
    #[must_use]
    pub fn with(self, id: Id) -> Reasons {
        Reasons(self.0 | 1 << id as u32)
    }

    /// Whether none fired.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The strongest strength among them: [`Grade::Certain`] if any is
    /// certain, [`Grade::Ambiguous`] if only ambiguous ones fired,
    /// [`Grade::None`] without any.
    pub fn grade(self) -> Grade {
        if self.0 & CERTAIN != 0 {
            Grade::Certain
        } else if self.0 != 0 {
            Grade::Ambiguous
        } else {
            Grade::None
        }
    }

    /// The IDs that fired, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Id> {
        Id::ALL.into_iter().filter(move |&i| self.has(i))
    }

    /// The reasons a request's features show (without the policy's own:
    /// [`Id::BotClaimFake`], [`Id::ModelOnly`]).
    pub fn of(v: &FeatureVector<'_>) -> Reasons {
        let mut r = Reasons::NONE;
        let mut set = |id: Id, on: bool| {
            if on {
                r = r.with(id);
            }
        };
        match v.cat(Cat::UaClaim) {
            b"browser" => {}
            b"none" => set(Id::UaMissing, true),
            b"bot" => set(Id::UaBot, true),
            b"other" => set(Id::UaUnknown, true),
            _ => set(Id::UaLibrary, true),
        }
        // A count or a flag: NaN (nothing to measure) is no reason.
        let on = |f: Float| v.float(f) > 0.0;
        set(Id::HeadlessTokens, on(Float::HeadlessTokens));
        set(Id::ChVersionMismatch, on(Float::ChVersionMismatch));
        set(Id::ChNonChromium, on(Float::ChNonChromium));
        set(Id::ChPlatformMismatch, on(Float::ChPlatformMismatch));
        set(Id::ChMobileMismatch, on(Float::ChMobileMismatch));
        set(Id::ChBrandMismatch, on(Float::ChBrandMismatch));
        set(Id::FetchNonBrowser, on(Float::FetchNonBrowser));
        set(Id::FetchContradiction, on(Float::FetchContradiction));
        let missing = v.float(Float::EngineHeadersMissing);
        set(Id::EngineHeadersMissing, missing >= 2.0);
        set(Id::EngineHeaderMissing, missing == 1.0);
        set(Id::AcceptNonBrowser, on(Float::AcceptNonBrowser));
        set(Id::TlsFamilyMismatch, on(Float::TlsFamilyMismatch));
        set(Id::TlsBrowserNoTls13, on(Float::TlsBrowserNoTls13));
        set(Id::TlsBrowserNoH2, on(Float::TlsBrowserNoH2));
        set(Id::EncodingNonBrowser, on(Float::EncodingNonBrowser));
        set(Id::ConnectionNonBrowser, on(Float::ConnectionNonBrowser));
        set(Id::OrderReversedPairs, on(Float::OrderReversedPairs));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::Header;

    #[test]
    fn ids_are_plain_unique_and_in_bit_order() {
        for (i, id) in Id::ALL.iter().enumerate() {
            assert_eq!(*id as usize, i);
            let name = id.detection().name;
            assert!(name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
            assert_eq!(Id::from_name(name), Some(*id));
            assert_ne!(id.detection().grade, Grade::None);
        }
        assert_eq!(Id::from_name("nope"), None);
    }

    #[test]
    fn grades_take_the_strongest_reason() {
        let r = Reasons::NONE;
        assert_eq!(r.grade(), Grade::None);
        assert_eq!(r.with(Id::TlsFamilyMismatch).grade(), Grade::Ambiguous);
        assert_eq!(
            r.with(Id::TlsFamilyMismatch)
                .with(Id::EncodingNonBrowser)
                .grade(),
            Grade::Ambiguous
        );
        assert_eq!(
            r.with(Id::TlsFamilyMismatch).with(Id::UaLibrary).grade(),
            Grade::Certain
        );
        assert_eq!(r.with(Id::ModelOnly).grade(), Grade::Certain);
        let both = r.with(Id::OrderReversedPairs).with(Id::UaMissing);
        assert_eq!(
            both.iter().collect::<Vec<_>>(),
            [Id::UaMissing, Id::OrderReversedPairs]
        );
    }

    const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36";
    /// Chrome 147's navigation over HTTP/2, as captured.
    const CHROME_HEAD: &[(&str, &str)] = &[
        ("host", "shop.test"),
        (
            "sec-ch-ua",
            "\"Google Chrome\";v=\"147\", \"Not.A/Brand\";v=\"8\", \"Chromium\";v=\"147\"",
        ),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Windows\""),
        ("upgrade-insecure-requests", "1"),
        ("user-agent", CHROME),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"),
        ("sec-fetch-site", "none"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-user", "?1"),
        ("sec-fetch-dest", "document"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-US,en;q=0.9"),
    ];
    const BORINGSSL: &str = "t13d1516h2_8daaf6152771_d8a2da3f94cd";
    const OPENSSL: &str = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac";

    fn reasons(
        head: &[(&str, &str)],
        version: u16,
        tls: Option<(&str, crate::tls::Family)>,
    ) -> Reasons {
        let headers: Vec<Header<'_>> = head
            .iter()
            .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
            .collect();
        let tls = tls.and_then(|(ja4, f)| super::super::TlsFacts::new(ja4.as_bytes(), f));
        let req =
            super::super::Request::new(b"GET", b"/", version, b"192.0.2.1", &headers).with_tls(tls);
        let mut v = FeatureVector::new();
        super::super::extract(&req, &mut v);
        Reasons::of(&v)
    }

    fn without(
        head: &[(&'static str, &'static str)],
        names: &[&str],
    ) -> Vec<(&'static str, &'static str)> {
        head.iter()
            .filter(|(k, _)| !names.contains(k))
            .copied()
            .collect()
    }

    fn replace(
        head: &[(&'static str, &'static str)],
        name: &str,
        value: &'static str,
    ) -> Vec<(&'static str, &'static str)> {
        head.iter()
            .map(|&(k, v)| (k, if k == name { value } else { v }))
            .collect()
    }

    /// What fires, and how strongly, on variations of one real head: the
    /// hops' rewrites are ambiguous, the scripts' heads certain.
    #[test]
    fn a_real_head_and_its_variations() {
        use crate::tls::Family::{Boringssl, Openssl};
        use Id::*;
        let h2 = 20;
        /// What, the head, the HTTP version, the TLS facts, the IDs.
        type Case<'a> = (
            &'a str,
            Vec<(&'a str, &'a str)>,
            u16,
            Option<(&'a str, crate::tls::Family)>,
            Vec<Id>,
        );
        let cases: Vec<Case<'_>> = vec![
            ("real", CHROME_HEAD.to_vec(), h2, Some((BORINGSSL, Boringssl)), vec![]),
            ("no connection", CHROME_HEAD.to_vec(), 11, None, vec![EngineHeaderMissing]),
            ("tls proxy", CHROME_HEAD.to_vec(), h2, Some((OPENSSL, Openssl)), vec![TlsFamilyMismatch]),
            (
                "privacy extension",
                without(CHROME_HEAD, &["accept-language"]),
                h2,
                Some((BORINGSSL, Boringssl)),
                vec![EngineHeaderMissing],
            ),
            (
                // Chromium with JavaScript off sends no client hints: a
                // browser's own head, so no evidence.
                "no hints",
                without(CHROME_HEAD, &["sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform"]),
                h2,
                Some((BORINGSSL, Boringssl)),
                vec![],
            ),
            (
                // A partial set is no browser's.
                "one hint gone",
                without(CHROME_HEAD, &["sec-ch-ua-platform"]),
                h2,
                Some((BORINGSSL, Boringssl)),
                vec![EngineHeaderMissing],
            ),
            (
                "two hints gone",
                without(CHROME_HEAD, &["sec-ch-ua", "sec-ch-ua-mobile"]),
                h2,
                Some((BORINGSSL, Boringssl)),
                vec![EngineHeadersMissing],
            ),
            (
                "no hints, no fetch metadata",
                without(
                    CHROME_HEAD,
                    &["sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-user"],
                ),
                h2,
                Some((BORINGSSL, Boringssl)),
                vec![EngineHeadersMissing],
            ),
            (
                "curl's head",
                vec![("host", "shop.test"), ("user-agent", "curl/8.5.0"), ("accept", "*/*")],
                h2,
                Some((OPENSSL, Openssl)),
                vec![UaLibrary],
            ),
            ("no ua", without(CHROME_HEAD, &["user-agent"]), h2, None, vec![UaMissing, ChNonChromium, FetchNonBrowser]),
            (
                "bare mozilla",
                replace(&without(CHROME_HEAD, &["sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform"]), "user-agent", "Mozilla/5.0"),
                h2,
                None,
                // `fetch_non_browser` keeps schema 1's reading of the UA
                // (any `Mozilla/` claims a browser): `ua_claim` says `other`.
                vec![UaUnknown],
            ),
            (
                "headless",
                replace(CHROME_HEAD, "user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/147.0.0.0 Safari/537.36"),
                h2,
                Some((BORINGSSL, Boringssl)),
                vec![HeadlessTokens],
            ),
        ];
        for (what, head, version, tls, want) in cases {
            let got = reasons(&head, version, tls);
            assert_eq!(got.iter().collect::<Vec<_>>(), want, "{what}");
        }
        let tls_proxy = reasons(CHROME_HEAD, h2, Some((OPENSSL, Openssl)));
        assert_eq!(tls_proxy.grade(), Grade::Ambiguous);
        let curl = reasons(
            &[
                ("host", "x"),
                ("user-agent", "curl/8.5.0"),
                ("accept", "*/*"),
            ],
            11,
            None,
        );
        assert_eq!(curl.grade(), Grade::Certain);
    }
}
