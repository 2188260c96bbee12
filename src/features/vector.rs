//! The request the features read and the vector they fill: the leaf that
//! extraction (`mod.rs`) and its parts (`evidence.rs`, `tls.rs`) all
//! import, so that no part imports the module that runs them.

use super::bytes;
use super::fetch_metadata::FetchMetadata;
use super::header_order::{self, Fingerprint};
use super::language;
use super::schema::{Cat, Float, CAT_COUNT, FLOAT_COUNT};
use super::uri;
use crate::headers::Header;
use crate::tls::ja4::is_ja4;
use crate::tls::Family;

/// Longest `header_order` fingerprint, in bytes.
pub const HEADER_ORDER_CAP: usize = 32;

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

/// Where a categorical value lives.
#[derive(Clone, Copy, Debug)]
pub(super) enum CatValue<'a> {
    Borrowed(&'a [u8]),
    HeaderOrder,
    UriExt,
    Language,
}

/// The features of one request. Reusable: [`extract`] overwrites all of it.
#[derive(Clone, Debug)]
pub struct FeatureVector<'a> {
    pub(super) floats: [f32; FLOAT_COUNT],
    pub(super) cats: [CatValue<'a>; CAT_COUNT],
    pub(super) order: Fingerprint<HEADER_ORDER_CAP>,
    pub(super) ext: [u8; uri::MAX_EXT],
    pub(super) ext_len: usize,
    pub(super) language: [u8; language::MAX_PRIMARY],
    pub(super) language_len: usize,
}

impl<'a> FeatureVector<'a> {
    /// A vector of NaNs and empty categorical values.
    pub fn new() -> Self {
        FeatureVector {
            floats: [f32::NAN; FLOAT_COUNT],
            cats: [CatValue::Borrowed(b""); CAT_COUNT],
            order: Fingerprint::new(),
            ext: [0; uri::MAX_EXT],
            ext_len: 0,
            language: [0; language::MAX_PRIMARY],
            language_len: 0,
        }
    }

    /// The float features in [`FLOAT_FEATURES`] order.
    pub fn floats(&self) -> &[f32; FLOAT_COUNT] {
        &self.floats
    }

    /// One float feature.
    pub fn float(&self, f: Float) -> f32 {
        self.floats[f.index()]
    }

    /// One categorical feature's bytes.
    pub fn cat(&self, c: Cat) -> &[u8] {
        match self.cats[c.index()] {
            CatValue::Borrowed(b) => b,
            CatValue::HeaderOrder => self.order.as_bytes(),
            CatValue::UriExt => &self.ext[..self.ext_len],
            CatValue::Language => &self.language[..self.language_len],
        }
    }

    /// The `i`-th categorical feature in [`CAT_FEATURES`] order, `None` past
    /// the end.
    pub fn cat_at(&self, i: usize) -> Option<&[u8]> {
        Cat::ALL.get(i).map(|&c| self.cat(c))
    }

    /// The categorical features in [`CAT_FEATURES`] order.
    pub fn cats(&self) -> impl Iterator<Item = &[u8]> + '_ {
        Cat::ALL.iter().map(|&c| self.cat(c))
    }

    pub(super) fn set(&mut self, f: Float, v: f32) {
        self.floats[f.index()] = v;
    }

    pub(super) fn set_flag(&mut self, f: Float, v: bool) {
        self.set(f, if v { 1.0 } else { 0.0 });
    }

    pub(super) fn set_cat(&mut self, c: Cat, v: &'a [u8]) {
        self.cats[c.index()] = CatValue::Borrowed(v);
    }
}

impl Default for FeatureVector<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// What the header walk keeps: the first value of each header the features
/// read, counts, and the codes of the known headers in arrival order.
pub(super) struct Seen<'a> {
    pub(super) host: Option<&'a [u8]>,
    pub(super) connection: Option<&'a [u8]>,
    pub(super) user_agent: Option<&'a [u8]>,
    pub(super) accept: Option<&'a [u8]>,
    pub(super) accept_language: Option<&'a [u8]>,
    pub(super) accept_encoding: Option<&'a [u8]>,
    pub(super) referer: Option<&'a [u8]>,
    pub(super) upgrade_insecure_requests: Option<&'a [u8]>,
    pub(super) ch_ua: Option<&'a [u8]>,
    pub(super) ch_mobile: Option<&'a [u8]>,
    pub(super) ch_platform: Option<&'a [u8]>,
    pub(super) fetch: FetchMetadata<'a>,
    /// `te` is present (Firefox sends `TE: trailers` over HTTP/2).
    pub(super) te: bool,
    /// `range` is present (media requests).
    pub(super) range: bool,
    pub(super) headers: u32,
    pub(super) client_hints: u32,
    pub(super) fetch_headers: u32,
    pub(super) cookie_headers: u32,
    pub(super) cookies: u32,
    /// Codes of the known headers (not [`header_order::UNKNOWN`]), the
    /// first [`header_order::MAX_RANKED`] of them.
    pub(super) codes: [u8; header_order::MAX_RANKED],
    pub(super) n_codes: usize,
}

impl<'a> Seen<'a> {
    pub(super) fn new() -> Self {
        Seen {
            host: None,
            connection: None,
            user_agent: None,
            accept: None,
            accept_language: None,
            accept_encoding: None,
            referer: None,
            upgrade_insecure_requests: None,
            ch_ua: None,
            ch_mobile: None,
            ch_platform: None,
            fetch: FetchMetadata::default(),
            te: false,
            range: false,
            headers: 0,
            client_hints: 0,
            fetch_headers: 0,
            cookie_headers: 0,
            cookies: 0,
            codes: [header_order::UNKNOWN; header_order::MAX_RANKED],
            n_codes: 0,
        }
    }

    pub(super) fn codes(&self) -> &[u8] {
        &self.codes[..self.n_codes]
    }

    /// Notes one header, `code` being its [`header_order::code`].
    pub(super) fn header(&mut self, code: u8, value: &'a [u8]) {
        self.headers += 1;
        if code == header_order::UNKNOWN {
            return;
        }
        if self.n_codes < self.codes.len() {
            self.codes[self.n_codes] = code;
            self.n_codes += 1;
        }
        match code {
            b'h' => first(&mut self.host, value),
            b'c' => first(&mut self.connection, value),
            b'u' => first(&mut self.user_agent, value),
            b'a' => first(&mut self.accept, value),
            b'l' => first(&mut self.accept_language, value),
            b'e' => first(&mut self.accept_encoding, value),
            b'r' => first(&mut self.referer, value),
            b'i' => first(&mut self.upgrade_insecure_requests, value),
            b't' => self.te = true,
            b'R' => self.range = true,
            b'k' => {
                self.cookie_headers += 1;
                self.cookies += bytes::count_items(value, b';') as u32;
            }
            b'C' | b'M' | b'P' | header_order::OTHER_CLIENT_HINT => {
                self.client_hints += 1;
                match code {
                    b'C' => first(&mut self.ch_ua, value),
                    b'M' => first(&mut self.ch_mobile, value),
                    b'P' => first(&mut self.ch_platform, value),
                    _ => {}
                }
            }
            b'S' | b'O' | b'U' | b'D' | header_order::OTHER_FETCH => {
                self.fetch_headers += 1;
                match code {
                    b'S' => first(&mut self.fetch.site, value),
                    b'O' => first(&mut self.fetch.mode, value),
                    b'U' => first(&mut self.fetch.user, value),
                    b'D' => first(&mut self.fetch.dest, value),
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

pub(super) fn first<'a>(slot: &mut Option<&'a [u8]>, value: &'a [u8]) {
    slot.get_or_insert(value);
}

pub(super) fn flag(v: bool) -> f32 {
    if v {
        1.0
    } else {
        0.0
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
