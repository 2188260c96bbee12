//! What rules read of a request: a small borrowed view, filled by the
//! caller (the gate, replay, `edgeguard rules eval`) from what it already
//! has, without copying a byte.

use std::net::IpAddr;

use crate::clients::ClientView;
use crate::features::{Request, TlsFacts};
use crate::headers::Header;
use crate::signals::live::Lookup;
use crate::verified::{Category, Verdict, VerifiedBots};

/// A verified-bot claim, as [`VerifiedBots::judge`] decided it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BotView<'a> {
    /// From one of the bot's published prefixes (else: a fake claim).
    pub verified: bool,
    /// The claimed bot's category.
    pub category: Category,
    /// The claimed bot's name.
    pub name: &'a str,
}

impl<'a> BotView<'a> {
    /// The view of `verdict` on `bots`' list.
    pub fn of(bots: &'a VerifiedBots, verdict: Verdict) -> Option<BotView<'a>> {
        let i = verdict.bot();
        Some(BotView {
            verified: matches!(verdict, Verdict::Verified(_)),
            category: bots.category(i)?,
            name: bots.name(i)?,
        })
    }
}

/// One request as rules see it.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// The method as sent (`GET`).
    pub method: &'a [u8],
    /// The host the request names (nginx's `Host`, or HTTP/2's
    /// `:authority`), as sent: a port and a trailing dot are ignored when
    /// rules compare it.
    pub host: &'a [u8],
    /// The path as sent, before the query (`/a%20b`); rules compare its
    /// normalized form (see [`super`]).
    pub path: &'a [u8],
    /// The query as sent, without the `?` (`a=1&b=2`); empty if none.
    pub query: &'a [u8],
    /// Every header field line, in arrival order.
    pub headers: &'a [Header<'a>],
    /// The User-Agent the model and the verified-bot judge read (the
    /// first `User-Agent` line); empty if none.
    pub user_agent: &'a [u8],
    /// The client's address; `None` for a unix socket.
    pub client: Option<IpAddr>,
    /// The verified-bot verdict, if the User-Agent claims a listed bot.
    pub bot: Option<BotView<'a>>,
    /// The connection's JA4 and TLS family, if it came over TLS.
    pub tls: Option<TlsFacts<'a>>,
    /// The scores, in the location's model order; empty before scoring
    /// (then no score condition holds).
    pub scores: &'a [f64],
    /// What the fleet's signals snapshot knows of the request's keys;
    /// none without a snapshot in force (then no signal condition holds).
    pub fleet: Option<Lookup>,
    /// What the client memory holds of the client (its host record,
    /// after this request); none without a memory (then no `client.*`
    /// condition holds).
    pub clients: Option<ClientView>,
}

/// Splits a request target into its path and query, as sent: `?` starts
/// the query and `#` ends both (a fragment is not part of a request, but a
/// raw log line may hold one). An absolute-form target
/// (`http://example.com/a?b`) gives the path after its authority; an
/// authority-less one (`*`) gives itself, which no path condition takes.
pub fn split_target(target: &[u8]) -> (&[u8], &[u8]) {
    let target = match memchr::memchr(b'#', target) {
        Some(i) => &target[..i],
        None => target,
    };
    let (path, query) = match memchr::memchr(b'?', target) {
        Some(i) => (&target[..i], &target[i + 1..]),
        None => (target, &b""[..]),
    };
    (absolute_path(path).unwrap_or(path), query)
}

/// The path of an absolute-form target's part before `?`
/// (`http://example.com/a` -> `/a`, `http://example.com` -> `/`), `None`
/// if it is not one.
fn absolute_path(target: &[u8]) -> Option<&[u8]> {
    let scheme_end = target.windows(3).position(|w| w == b"://")?;
    let scheme = &target[..scheme_end];
    if scheme.is_empty() || !scheme.iter().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let rest = &target[scheme_end + 3..];
    Some(match memchr::memchr(b'/', rest) {
        Some(i) => &rest[i..],
        None => b"/",
    })
}

/// The first value of header `name` (lower-case), or empty.
fn first<'a>(headers: &'a [Header<'a>], name: &[u8]) -> &'a [u8] {
    headers
        .iter()
        .find(|h| h.name().eq_ignore_ascii_case(name))
        .map_or(b"", |h| h.value())
}

impl<'a> View<'a> {
    /// The view of a parsed request (replay's and the CLI's lines; the
    /// gate fills the same fields from its own request): host and
    /// User-Agent from the first such header, the client from the textual
    /// address, no bot verdict and no scores yet.
    pub fn of(req: &Request<'a>, headers: &'a [Header<'a>]) -> View<'a> {
        let client = super::lists::addr_from_text(req.client_addr());
        View::with_client(req, headers, client)
    }

    /// [`View::of`] with the client's address as the caller parsed it
    /// (the gate parses it only when a rule or the policy reads it).
    pub fn with_client(
        req: &Request<'a>,
        headers: &'a [Header<'a>],
        client: Option<IpAddr>,
    ) -> View<'a> {
        let (path, query) = split_target(req.uri());
        View {
            method: req.method(),
            host: first(headers, b"host"),
            path,
            query,
            headers,
            user_agent: first(headers, b"user-agent"),
            client,
            bot: None,
            tls: req.tls(),
            scores: &[],
            fleet: None,
            clients: None,
        }
    }
}

/// The host without a port and a trailing dot: `Example.COM.:8080` ->
/// `Example.COM`, `[2001:db8::1]:443` -> `[2001:db8::1]`.
pub(crate) fn bare_host(host: &[u8]) -> &[u8] {
    let host = if host.first() == Some(&b'[') {
        match memchr::memchr(b']', host) {
            Some(i) => &host[..=i],
            None => host,
        }
    } else {
        match memchr::memrchr(b':', host) {
            Some(i) => &host[..i],
            None => host,
        }
    };
    host.strip_suffix(b".").unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_path_and_query() {
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"/", b"/", b""),
            (b"/a?b=1&c", b"/a", b"b=1&c"),
            (b"/a?", b"/a", b""),
            (b"/a?b?c", b"/a", b"b?c"),
            (b"/a#frag?x", b"/a", b""),
            (b"/a?x#frag", b"/a", b"x"),
            (b"http://example.com/feed?x=1", b"/feed", b"x=1"),
            (b"HTTPS://example.com", b"/", b""),
            (b"http://example.com?q", b"/", b"q"),
            (b"*", b"*", b""),
            (b"", b"", b""),
            (b"/redirect?to=http://x/y", b"/redirect", b"to=http://x/y"),
        ];
        for (target, path, query) in cases {
            assert_eq!(
                split_target(target),
                (*path, *query),
                "{}",
                String::from_utf8_lossy(target)
            );
        }
    }

    #[test]
    fn hosts_lose_port_and_trailing_dot() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"example.com", b"example.com"),
            (b"Example.COM.:8080", b"Example.COM"),
            (b"example.com.", b"example.com"),
            (b"[2001:db8::1]:443", b"[2001:db8::1]"),
            (b"[2001:db8::1]", b"[2001:db8::1]"),
            (b"192.0.2.1:80", b"192.0.2.1"),
            (b"", b""),
        ];
        for (host, bare) in cases {
            assert_eq!(bare_host(host), *bare, "{}", String::from_utf8_lossy(host));
        }
    }
}
