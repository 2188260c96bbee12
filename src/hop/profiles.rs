//! The deployment profiles as data: what each kind of L7 hop adds to a
//! request, what it keeps of the client's, and where it reports the
//! client's TLS fingerprint. docs/deployment.md shows each with its
//! nginx.conf lines; the vendors' rows come from their documentation and
//! are untested against the real services.

/// The kind of hop between the client and nginx (`proxy_profile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// No L7 hop: the client connected to nginx (or through an L4
    /// balancer with the PROXY protocol). The default.
    Direct,
    /// An nginx load balancer (`proxy_pass`, `proxy_http_version 1.1`).
    Nginx,
    /// HAProxy in `mode http`.
    Haproxy,
    /// Caddy's `reverse_proxy` (Go's net/http).
    Caddy,
    /// An AWS Application Load Balancer.
    AwsAlb,
    /// Amazon CloudFront.
    Cloudfront,
    /// Cloudflare's proxy.
    Cloudflare,
    /// Fastly.
    Fastly,
    /// Any other L7 hop: every header any profile adds is the hop's, and
    /// neither letter case nor order is the client's.
    Generic,
}

/// What one kind of hop does to the requests it forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The profile's name in `proxy_profile`.
    pub name: &'static str,
    /// The profile it describes.
    pub profile: Profile,
    /// Header names (lower case) the hop adds or rewrites.
    pub adds: &'static [&'static str],
    /// Name prefixes (lower case) of headers the hop adds.
    pub prefixes: &'static [&'static str],
    /// The hop forwards the client's headers in the client's order (its
    /// own may come first or last; they are left out).
    pub keeps_order: bool,
    /// The hop folds header-name letter case (HTTP/2's lower case, Go's
    /// canonical `Accept-Language`). The features compare names without
    /// case, so nothing needs undoing; said for the docs.
    pub folds_case: bool,
    /// The header the hop reports the client's JA4 in by default (none:
    /// the vendor has none; `tls_fingerprint_header` names one).
    pub ja4_header: Option<&'static str>,
}

/// Hop-by-hop fields (RFC 9110 §7.6.1: `Connection`, `Keep-Alive`,
/// `TE`, `Transfer-Encoding`, `Upgrade`, `Proxy-Connection`): each hop
/// makes its own, so none is the client's. Every L7 profile leaves them
/// out.
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "te",
    "upgrade",
    "transfer-encoding",
];

/// Prefixes of hop-by-hop fields (`Proxy-Connection`,
/// `Proxy-Authorization`: meant for a proxy).
pub const HOP_BY_HOP_PREFIXES: &[&str] = &["proxy-"];

/// The `X-Forwarded-*` family and its standard form, what most hops set.
const FORWARDED: &[&str] = &[
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-forwarded-server",
    "x-forwarded-ssl",
    "x-real-ip",
    "forwarded",
    "via",
];

/// Every profile, in `proxy_profile`'s order.
pub const PROFILES: &[Spec] = &[
    Spec {
        name: "direct",
        profile: Profile::Direct,
        adds: &[],
        prefixes: &[],
        keeps_order: true,
        folds_case: false,
        ja4_header: None,
    },
    Spec {
        // proxy_set_header's headers come first, then the client's in
        // its order (Host moved first, where browsers send it).
        name: "nginx",
        profile: Profile::Nginx,
        adds: FORWARDED,
        prefixes: &[],
        keeps_order: true,
        folds_case: false,
        ja4_header: None,
    },
    Spec {
        // HTX lower-cases names; `option forwardfor` appends
        // X-Forwarded-For last (measured: HAProxy 2.6.12).
        name: "haproxy",
        profile: Profile::Haproxy,
        adds: FORWARDED,
        prefixes: &[],
        keeps_order: true,
        folds_case: true,
        ja4_header: None,
    },
    Spec {
        // Go's net/http keeps headers in a map and writes them sorted,
        // names canonicalized.
        name: "caddy",
        profile: Profile::Caddy,
        adds: FORWARDED,
        prefixes: &[],
        keeps_order: false,
        folds_case: true,
        ja4_header: None,
    },
    Spec {
        name: "aws-alb",
        profile: Profile::AwsAlb,
        adds: &[
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-forwarded-port",
            "x-amzn-trace-id",
        ],
        prefixes: &["x-amzn-"],
        keeps_order: false,
        folds_case: true,
        ja4_header: None,
    },
    Spec {
        name: "cloudfront",
        profile: Profile::Cloudfront,
        adds: &["x-forwarded-for", "via", "x-amz-cf-id", "x-amzn-trace-id"],
        prefixes: &["cloudfront-", "x-amz-cf-"],
        keeps_order: false,
        folds_case: true,
        ja4_header: Some("cloudfront-viewer-ja4-fingerprint"),
    },
    Spec {
        name: "cloudflare",
        profile: Profile::Cloudflare,
        adds: &[
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-real-ip",
            "cdn-loop",
            "true-client-ip",
        ],
        prefixes: &["cf-"],
        keeps_order: false,
        folds_case: true,
        ja4_header: None,
    },
    Spec {
        name: "fastly",
        profile: Profile::Fastly,
        adds: &[
            "x-forwarded-for",
            "x-forwarded-host",
            "x-forwarded-server",
            "x-varnish",
            "x-timer",
            "cdn-loop",
            "via",
        ],
        prefixes: &["fastly-"],
        keeps_order: false,
        folds_case: true,
        ja4_header: None,
    },
    Spec {
        name: "generic",
        profile: Profile::Generic,
        adds: &[
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-forwarded-host",
            "x-forwarded-port",
            "x-forwarded-server",
            "x-forwarded-ssl",
            "x-real-ip",
            "forwarded",
            "via",
            "x-amz-cf-id",
            "x-varnish",
            "x-timer",
            "cdn-loop",
            "true-client-ip",
        ],
        prefixes: &["x-amzn-", "cloudfront-", "x-amz-cf-", "cf-", "fastly-"],
        keeps_order: false,
        folds_case: true,
        ja4_header: None,
    },
];

impl Profile {
    /// The profile named `name` (`proxy_profile`'s value).
    pub fn from_name(name: &str) -> Option<Profile> {
        PROFILES.iter().find(|s| s.name == name).map(|s| s.profile)
    }

    /// Its row of [`PROFILES`].
    pub fn spec(self) -> &'static Spec {
        PROFILES
            .iter()
            .find(|s| s.profile == self)
            .unwrap_or(&PROFILES[0])
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The names of every profile, for errors and docs.
    pub fn names() -> impl Iterator<Item = &'static str> {
        PROFILES.iter().map(|s| s.name)
    }
}
