//! Deployment profiles: a request that reached nginx through a trusted L7
//! hop (a load balancer, a CDN) is judged without what the hop owns.
//!
//! A hop re-makes the connection: nginx sees the hop's HTTP version, its
//! hop-by-hop headers (`Connection`, `Keep-Alive`, `TE`, `Upgrade`,
//! `Proxy-*`, `Transfer-Encoding`: RFC 9110 §7.6.1), the headers it adds
//! (`X-Forwarded-*`, `Via`, `CF-*`, ...), its header order where it sorts
//! them, and its own TLS ClientHello. None of that is the client's, so none
//! of it may count as evidence that the client is automation. [`Hop::relay`]
//! builds the request the features read: the client's headers only (in a
//! reused buffer: nothing is allocated per request), what the hop kept
//! ([`crate::features::Kept`]: the version never, the order where the
//! profile says so), and the client's TLS facts from the JA4 the hop
//! reports in a header, if it does.
//!
//! Whom to believe is the operator's word: `trusted_proxies` (the peers
//! whose requests are relayed) and `proxy_profile` (what they do,
//! [`profiles::PROFILES`]). The peer is the connection's address, nginx's
//! `$realip_remote_addr`; the client address stays `$remote_addr`, which
//! nginx's realip module sets to the client's. A request from any other
//! peer is judged as it was sent ("direct"), and the fingerprint header is
//! stripped from it like every internal header.

#![forbid(unsafe_code)]

mod profiles;

use std::net::IpAddr;

pub use profiles::{Profile, Spec, HOP_BY_HOP, HOP_BY_HOP_PREFIXES, PROFILES};

use crate::features::{self, Kept, TlsFacts};
use crate::headers::{Header, HeaderBuf};
use crate::net::{addr_from_text, Cidr};

/// The warning for a trusted peer whose client address is its own while
/// it says whom it forwards for: nginx's realip module is not set up.
pub const REALIP_WARNING: &str = "edgeguard: a request from a trusted_proxies peer has \
    X-Forwarded-For but $remote_addr is the peer's own address: nginx's realip module is not \
    set up, so allow, verified bots, rules and the challenge read the proxy's address; add \
    `set_real_ip_from <the proxy's CIDR>; real_ip_header X-Forwarded-For;` \
    (docs/deployment.md)";

/// A location's hop: the profile, the peers trusted to relay, the header
/// they report the client's JA4 in.
#[derive(Clone, Debug, PartialEq)]
pub struct Hop {
    spec: &'static Spec,
    trusted: Box<[Cidr]>,
    ja4_header: Option<Box<str>>,
}

/// A request as a trusted hop relayed it.
#[derive(Clone, Copy, Debug)]
pub struct Relayed<'a> {
    /// What the features read: the client's headers, TLS facts and what
    /// the hop kept.
    pub http: features::Request<'a>,
    /// The peer is trusted, yet the client address is the peer's and the
    /// request says whom it is forwarded for ([`REALIP_WARNING`]).
    pub realip_missing: bool,
}

impl Hop {
    /// The hop of a location: `None` for the `direct` profile (nothing is
    /// relayed) and for an empty trust list. `ja4_header` overrides the
    /// profile's default header.
    pub fn new(profile: Profile, trusted: &[Cidr], ja4_header: Option<&str>) -> Option<Hop> {
        if profile == Profile::Direct || trusted.is_empty() {
            return None;
        }
        let spec = profile.spec();
        Some(Hop {
            spec,
            trusted: trusted.into(),
            ja4_header: ja4_header
                .or(spec.ja4_header)
                .map(|h| h.to_ascii_lowercase().into()),
        })
    }

    /// The profile.
    pub fn profile(&self) -> Profile {
        self.spec.profile
    }

    /// The header a trusted peer reports the client's JA4 in (lower
    /// case), if any.
    pub fn ja4_header(&self) -> Option<&str> {
        self.ja4_header.as_deref()
    }

    /// Whether `peer` is one of the trusted proxies.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(peer))
    }

    /// The request as the client sent it to the hop, when `peer` (the
    /// connection's address; empty: the client address, nginx without
    /// realip) is trusted; `None` otherwise: judged as sent. `headers`
    /// are `http`'s, in arrival order; the client's are copied into
    /// `buf` (views, no bytes), which keeps its capacity.
    pub fn relay<'b>(
        &self,
        http: &features::Request<'b>,
        headers: &'b [Header<'b>],
        peer: &[u8],
        buf: &'b mut HeaderBuf,
    ) -> Option<Relayed<'b>> {
        let peer = if peer.is_empty() {
            http.client_addr()
        } else {
            peer
        };
        if !addr_from_text(peer).is_some_and(|a| self.trusts(a)) {
            return None;
        }
        let upgrade = headers.iter().any(|h| is(h.name(), "upgrade"));
        let mut forwarded_for = false;
        let mut ja4 = None;
        let mut ja4_count = 0;
        let own = buf.fill(headers.iter().filter_map(|h| {
            let name = h.name();
            if is(name, "x-forwarded-for") {
                forwarded_for = true;
            }
            if self.ja4_header.as_deref().is_some_and(|j| is(name, j)) {
                ja4_count += 1;
                ja4 = Some(h.value().trim_ascii());
                return None;
            }
            // An upgrade (a WebSocket) is the client's request: the hop
            // had to pass it on, and `Connection: upgrade` says which.
            let keep = upgrade && (is(name, "connection") || is(name, "upgrade"));
            (keep || !self.owns(name)).then_some((name, h.value()))
        }));
        // Two reports are one the client sent and one the hop appended:
        // neither is believed.
        let tls = ja4.filter(|_| ja4_count == 1).and_then(TlsFacts::reported);
        let kept = Kept {
            version: false,
            order: self.spec.keeps_order,
        };
        Some(Relayed {
            http: http.relayed(own, tls, kept),
            realip_missing: forwarded_for && peer == http.client_addr(),
        })
    }

    /// Whether a header named `name` is the hop's: hop-by-hop, or one the
    /// profile adds.
    fn owns(&self, name: &[u8]) -> bool {
        let s = self.spec;
        HOP_BY_HOP.iter().chain(s.adds).any(|a| is(name, a))
            || HOP_BY_HOP_PREFIXES
                .iter()
                .chain(s.prefixes)
                .any(|p| name.len() >= p.len() && is(&name[..p.len()], p))
    }
}

/// `name` is `lower` (lower case), in any letter case.
fn is(name: &[u8], lower: &str) -> bool {
    name.eq_ignore_ascii_case(lower.as_bytes())
}

#[cfg(test)]
mod tests;
