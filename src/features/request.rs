//! The crate's HTTP request: what the client sent (method, URI, version,
//! address, headers, in nginx's memory) and what its connection showed
//! ([`TlsFacts`]). Every stage reads it: features, rules, the challenge,
//! signals, the gate (which wraps it as [`crate::gate::Incoming`]).

use crate::headers::Header;
use crate::tls::ja4::is_ja4;
use crate::tls::Family;

/// One request, borrowed from nginx for the duration of a call.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub(super) method: &'a [u8],
    pub(super) uri: &'a [u8],
    pub(super) http_version: u16,
    pub(super) client_addr: &'a [u8],
    pub(super) headers: &'a [Header<'a>],
    pub(super) tls: Option<TlsFacts<'a>>,
    pub(super) kept: Kept,
    pub(super) from_log: bool,
}

/// What of the client's own request reached nginx: all of it when the
/// client connected to nginx; behind an L7 hop (a load balancer, a CDN)
/// that re-made the connection, neither its HTTP version nor (for some
/// hops) its header order. Evidence that reads what was not kept is not
/// evidence (`src/hop/` says what each hop keeps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kept {
    /// The HTTP version nginx reports is the client's.
    pub version: bool,
    /// The headers arrived in the client's order.
    pub order: bool,
}

impl Kept {
    /// Everything: the client connected to nginx itself.
    pub const ALL: Kept = Kept {
        version: true,
        order: true,
    };
}

impl<'a> Request<'a> {
    /// A request viewing the caller's bytes.
    ///
    /// `uri` is the request target as sent (path and query), `http_version`
    /// is nginx's `r->http_version` scaled to 10, 11, 20 or 30,
    /// `client_addr` is the textual address (`$remote_addr`), `headers` are in
    /// arrival order as `ngx_http_lua_ffi_req_get_headers` fills them.
    pub fn new(
        method: &'a [u8],
        uri: &'a [u8],
        http_version: u16,
        client_addr: &'a [u8],
        headers: &'a [Header<'a>],
    ) -> Self {
        Request {
            method,
            uri,
            http_version,
            client_addr,
            headers,
            tls: None,
            kept: Kept::ALL,
            from_log: false,
        }
    }

    /// The same request as a trusted hop delivered it: `headers` (the
    /// client's, the hop's own left out), `tls` (the client's TLS facts as
    /// the hop reported them, if it did) and what the hop `kept`.
    pub fn relayed(
        mut self,
        headers: &'a [Header<'a>],
        tls: Option<TlsFacts<'a>>,
        kept: Kept,
    ) -> Self {
        self.headers = headers;
        self.tls = tls;
        self.kept = kept;
        self
    }

    /// What of the client's own request reached nginx ([`Kept::ALL`]
    /// unless [`Request::relayed`]).
    pub fn kept(&self) -> Kept {
        self.kept
    }

    /// The client's HTTP version times 10; `None` behind a hop that made
    /// its own connection to nginx (its version is the hop's).
    pub fn client_version(&self) -> Option<u16> {
        self.kept.version.then_some(self.http_version)
    }

    /// The same request, read back from a log (`edgeguard replay`) or not
    /// (nginx). Only a request from a log has its clearance cookie judged
    /// from the verdict the recorder logged in its place
    /// (`challenge::Recorded`): a client that sends that text gets no such
    /// reading.
    pub fn from_log(mut self, from_log: bool) -> Self {
        self.from_log = from_log;
        self
    }

    /// Whether it was read back from a log ([`Request::from_log`]).
    pub fn is_from_log(&self) -> bool {
        self.from_log
    }

    /// The same request with its connection's TLS facts (`None`: none
    /// seen, e.g. plain HTTP).
    pub fn with_tls(mut self, tls: Option<TlsFacts<'a>>) -> Self {
        self.tls = tls;
        self
    }

    /// The connection's TLS facts, if any.
    pub fn tls(&self) -> Option<TlsFacts<'a>> {
        self.tls
    }

    /// The method as sent.
    pub fn method(&self) -> &'a [u8] {
        self.method
    }

    /// The request target as sent.
    pub fn uri(&self) -> &'a [u8] {
        self.uri
    }

    /// The HTTP version times 10.
    pub fn http_version(&self) -> u16 {
        self.http_version
    }

    /// The textual client address.
    pub fn client_addr(&self) -> &'a [u8] {
        self.client_addr
    }

    /// The headers as `(name, value)` pairs in arrival order.
    pub fn headers(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        self.headers.iter().map(|h| (h.name(), h.value()))
    }
}

/// The TLS facts of a request's connection, as the features read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsFacts<'a> {
    ja4: &'a [u8],
    family: Family,
    /// The family was seen (in the ClientHello's cipher order), not
    /// looked up from a JA4 that does not show it.
    family_seen: bool,
}

impl<'a> TlsFacts<'a> {
    /// The facts of a connection whose JA4 is `ja4`; `None` unless `ja4`
    /// has the shape of one ([`is_ja4`]), so that its parts can be read.
    pub fn new(ja4: &'a [u8], family: Family) -> Option<Self> {
        is_ja4(ja4).then_some(TlsFacts {
            ja4,
            family,
            family_seen: true,
        })
    }

    /// The facts of a client whose JA4 a trusted hop reported: the family
    /// is the one [`Family::of_ja4`] knows for its cipher set, else
    /// unknown, and an unknown family is no evidence
    /// ([`TlsFacts::family_is_evidence`]): JA4 sorts the ciphers, so the
    /// order the family guess reads is gone.
    pub fn reported(ja4: &'a [u8]) -> Option<Self> {
        let family = Family::of_ja4(ja4);
        is_ja4(ja4).then_some(TlsFacts {
            ja4,
            family: family.unwrap_or(Family::Unknown),
            family_seen: family.is_some(),
        })
    }

    /// Whether the family may count against the client: seen in its
    /// ClientHello, or known for its JA4's cipher set.
    pub fn family_is_evidence(&self) -> bool {
        self.family_seen
    }

    /// The JA4 string.
    pub fn ja4(&self) -> &'a [u8] {
        self.ja4
    }

    /// JA4's first part (`t13d1516h2`): protocol, version, SNI, counts,
    /// ALPN, without the hashes.
    pub fn ja4_a(&self) -> &'a [u8] {
        &self.ja4[..10]
    }

    /// The library family guessed from the cipher list.
    pub fn family(&self) -> Family {
        self.family
    }

    /// Whether the client offered TLS 1.3 (its highest version is 1.3).
    pub fn tls13(&self) -> bool {
        &self.ja4[1..3] == b"13"
    }

    /// Cipher suites, GREASE left out, at most 99.
    pub fn cipher_count(&self) -> u8 {
        two_digits(&self.ja4[4..6])
    }

    /// Extensions, GREASE left out, at most 99.
    pub fn extension_count(&self) -> u8 {
        two_digits(&self.ja4[6..8])
    }

    /// Whether the first ALPN value offered is `h2`: every browser lists
    /// HTTP/2 first, whatever the server then picks.
    pub fn alpn_h2(&self) -> bool {
        &self.ja4[8..10] == b"h2"
    }
}

fn two_digits(d: &[u8]) -> u8 {
    (d[0] - b'0') * 10 + (d[1] - b'0')
}
