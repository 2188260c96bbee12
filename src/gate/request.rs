//! What the gate is asked: one request ([`Incoming`]: what the client sent,
//! what its connection showed, another engine's work on it) and the job
//! ([`Job`]); and the caller's mistakes it refuses ([`Misuse`]).

use crate::features::{self, TlsFacts};
use crate::headers::Header;

/// One request as the gate reads it: what the client sent (method, URI,
/// client address, headers), what its connection showed (TLS, and the
/// fingerprint when nginx has one), and another engine's work on it when
/// that engine stripped and scored it.
#[derive(Clone, Copy, Debug)]
pub struct Incoming<'a> {
    http: features::Request<'a>,
    headers: &'a [Header<'a>],
    secure: bool,
    given: Option<Given<'a>>,
    request_id: &'a [u8],
    peer: &'a [u8],
    time_ms: u64,
}

impl<'a> Incoming<'a> {
    /// A request viewing the caller's bytes (as [`features::Request::new`]
    /// reads them), with its connection's TLS facts (none: plain HTTP, or
    /// no fingerprint).
    pub fn new(
        method: &'a [u8],
        uri: &'a [u8],
        http_version: u16,
        client_addr: &'a [u8],
        headers: &'a [Header<'a>],
        tls: Option<TlsFacts<'a>>,
    ) -> Incoming<'a> {
        Incoming {
            http: features::Request::new(method, uri, http_version, client_addr, headers)
                .with_tls(tls),
            headers,
            secure: false,
            given: None,
            request_id: &[],
            peer: &[],
            time_ms: 0,
        }
    }

    /// The same request with its connection's peer address (nginx's
    /// `$realip_remote_addr`; empty: the client address, nginx without
    /// the realip module): whom `trusted_proxies` is asked about.
    pub fn with_peer(mut self, peer: &'a [u8]) -> Incoming<'a> {
        self.peer = peer;
        self
    }

    /// Its peer ([`Incoming::with_peer`]; empty: the client address).
    pub fn peer(&self) -> &'a [u8] {
        self.peer
    }

    /// The same request, judged as `http` (what a trusted hop relayed:
    /// `crate::hop`); the headers nginx strips stay its own. A client
    /// whose TLS the hop reported came over TLS: its clearance cookie is
    /// `Secure`, whatever the hop's connection to nginx.
    pub fn judged(mut self, http: features::Request<'a>) -> Incoming<'a> {
        self.secure |= http.tls().is_some();
        self.http = http;
        self
    }

    /// The same request, read back from a log (`edgeguard replay`):
    /// [`features::Request::from_log`].
    pub fn from_log(mut self) -> Incoming<'a> {
        self.http = self.http.from_log(true);
        self
    }

    /// The same request, over TLS or not (a clearance cookie is then
    /// `Secure`).
    pub fn secure(mut self, secure: bool) -> Incoming<'a> {
        self.secure = secure;
        self
    }

    /// The same request with another engine's work on it (the legacy Lua
    /// engine's strip and scores): the location neither strips the
    /// internal headers nor scores it then.
    pub fn given(mut self, given: Given<'a>) -> Incoming<'a> {
        self.given = Some(given);
        self
    }

    /// The same request with its id (nginx's `$request_id`): the
    /// reference a challenge page or a problem document shows, for
    /// support to find the request in the logs.
    pub fn with_request_id(mut self, id: &'a [u8]) -> Incoming<'a> {
        self.request_id = id;
        self
    }

    /// The same request with its arrival time in milliseconds since the
    /// Unix epoch (0: unknown), which the client memory's gaps between
    /// navigations read; used only within the second of the run's `now`.
    pub fn with_time_ms(mut self, ms: u64) -> Incoming<'a> {
        self.time_ms = ms;
        self
    }

    /// Its time in milliseconds at `now` (Unix seconds): its own
    /// ([`Incoming::with_time_ms`]) when within that second, else the
    /// second's start.
    pub fn time_ms(&self, now: u64) -> u64 {
        if self.time_ms / 1000 == now {
            self.time_ms
        } else {
            now.saturating_mul(1000)
        }
    }

    /// Its id ([`Incoming::with_request_id`]; empty: none).
    pub fn request_id(&self) -> &'a [u8] {
        self.request_id
    }

    /// Another engine's work on it ([`Incoming::given`]).
    pub fn work(&self) -> Option<Given<'a>> {
        self.given
    }

    /// Whether it came over TLS ([`Incoming::secure`]).
    pub fn is_secure(&self) -> bool {
        self.secure
    }

    /// What the features are extracted from.
    pub fn http(&self) -> &features::Request<'a> {
        &self.http
    }

    /// The headers, in arrival order.
    pub fn headers(&self) -> &'a [Header<'a>] {
        self.headers
    }
}

/// What another engine made of a request before handing it to the gate.
#[derive(Clone, Copy, Debug, Default)]
pub struct Given<'a> {
    /// Its scores, in the location's model order; none: not scored.
    pub scores: Option<&'a [f64]>,
    /// Internal entries it removed.
    pub removed: usize,
    /// Internal entries it could not remove (the request is then refused).
    pub unremovable: usize,
}

c_enum! {
    /// What the caller wants done (`edgeguard_location_run`'s job, passed
    /// as a plain int).
    pub enum Job as "edgeguard_job" {
        /// The whole pipeline: strip, score, decide, respond (`access()`).
        Access = 0 => "access",
        /// Only strip: the internal headers and the score header's
        /// spellings (`clear_internal_headers()`).
        Strip = 1 => "strip",
        /// Only strip the internal headers, keeping the score header (a
        /// subrequest, whose score header its parent's run set).
        StripList = 2 => "strip_list",
        /// Nothing stripped or decided: the request head recorded for
        /// replay, as `$edgeguard_request_headers` (`record.capture()`;
        /// the caller writes the text: see [`super::Effects::with_recorded`]).
        Record = 3 => "record",
        /// Only score, as the client sent the request: nothing stripped
        /// or decided; the effects' scores (`score()`).
        Score = 4 => "score",
    }
}

/// Why [`super::run`] refused a request: the caller's mistake, nothing done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misuse {
    /// Given scores whose count is not the location's model count.
    ScoreCount,
}
