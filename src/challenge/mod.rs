//! `mode = "challenge"`: a proof-of-work page for flagged navigations and a
//! signed clearance cookie for the browsers that solved it.
//!
//! # Flow
//!
//! ```text
//! flagged GET (navigation) ──► page (challenge_status, no-store) with a signed nonce
//!        page's script: SHA-256(nonce ":" counter) until `difficulty` leading zero bits
//!   GET /.edgeguard/challenge?n=NONCE&c=COUNTER&r=/original?path
//!        nonce MAC, age, address prefix, User-Agent, TLS stack and work checked
//!   ──► 303 + Set-Cookie: clearance (HttpOnly; SameSite=Lax, or on TLS
//!        SameSite=None; Secure: a cross-site form POST keeps it)
//!        to /original?path, or through the return hop that counts attempts:
//!   GET /.edgeguard/challenge?a=RETURN&r=/original?path
//!        cookie back ──► 303 to /original?path
//!        no cookie, 2nd time ──► the "cookies are needed" page, not a 3rd solve
//! next requests: cookie verified (no allocation) ──► `cleared` instead of challenged
//! ```
//!
//! Without JavaScript (opt-in, `challenge_nojs_wait`), the page's
//! `<noscript>` refreshes after a few seconds to a signed, server-timed
//! ticket (`?t=`), redeemable only once its wait is over, for a weaker
//! clearance ([`Proof::Wait`], its own shorter lifetime).
//!
//! Stateless: every token ([`token`]: the nonce, the ticket, the return
//! and the cookie) is signed with the `challenge_secret` keys and bound to
//! the client (address prefix, User-Agent hash, TLS stack hash), so any
//! worker of any server holding the keys checks it without shared state.
//! Every check takes the current time from the caller (nginx's
//! `ngx.time()`, replay's recorded time), so a replayed request is judged
//! as nginx judged it.
//!
//! The proof of work ([`work`]) costs a browser a second or so once per
//! cookie lifetime and a scraper the same for every address prefix,
//! User-Agent and TLS stack it rotates through; it does not stop a
//! scraper that runs a browser or solves natively (`docs/challenge.md`
//! has the measured numbers).
//!
//! The pieces a request pipeline calls, none of which allocates:
//! [`Challenge::clearance`] (the cookie), [`Challenge::page`] (the page,
//! localized, into a caller's buffer), [`Challenge::problem`] (RFC 9457
//! `application/problem+json` for requests that must not get HTML),
//! [`Endpoint::parse`] then [`Challenge::answer`] (an answer or a ticket)
//! or [`Challenge::returning`] (the return hop).

#![forbid(unsafe_code)]

mod endpoint;
mod keys;
pub mod page;
mod problem;
mod recorded;
mod token;
mod types;
pub mod work;

use std::io::Write as _;
use std::net::IpAddr;
use std::sync::Arc;

pub use endpoint::{
    is_endpoint, is_return_path, return_or_root, return_path, Endpoint, MAX_RETURN,
};
pub use keys::{KeyError, Keys, MAX_KEYS, MAX_KEY_BYTES, MIN_KEY_BYTES};
pub use page::{is_request_id, PageError, PageInput, Pages, State, MAX_SITE, PAGE_CAP};
pub use problem::{
    is_problem_base, render as render_problem, status_phrase, Problem, ProblemInput, MAX_BASE,
    PROBLEM_CAP,
};
pub use recorded::Recorded;
pub use token::{Binding, Proof, Rejection, TOKEN_TEXT};
pub use types::{header, user_agent, AnswerResult, Clearance, TooSmall, ENDPOINT};
pub use work::{leading_zero_bits, MAX_DIFFICULTY};

use endpoint::{http_date, write_token_url};
use token::{Fields, Kind, Opened};

use crate::features::Request;

/// Seconds a nonce or a ticket stays valid: time to solve the page.
pub const NONCE_TTL: u64 = 600;
/// Seconds a return token stays valid: it is followed by a redirect.
pub const RETURN_TTL: u64 = 120;
/// Room for a `Set-Cookie` value: the name (at most [`MAX_COOKIE_NAME`]),
/// the token and the attributes.
pub const SET_COOKIE_CAP: usize = 512;
/// Room for an answer's `Location`: a return path ([`MAX_RETURN`] bytes),
/// or the return hop carrying it percent-encoded with a token.
pub const LOCATION_CAP: usize = 8192;
/// The longest cookie name accepted.
pub const MAX_COOKIE_NAME: usize = 64;
/// At most this many cookies of the configured name are checked per
/// request: the count bounds the HMACs one request can make us compute.
pub const MAX_CANDIDATES: usize = 4;
/// After this many solves that came back without the cookie, the return
/// hop serves the "cookies are needed" page instead of another challenge.
pub const COOKIES_NEEDED_AFTER: u8 = 2;
/// The longest no-JavaScript wait, in seconds.
pub const MAX_NOJS_WAIT: u8 = 60;

/// The defaults of the `challenge_*` options.
pub mod defaults {
    /// `challenge_difficulty`: leading zero bits at the threshold.
    pub const DIFFICULTY: u8 = 16;
    /// `challenge_difficulty_max`: leading zero bits at score 1.0.
    pub const DIFFICULTY_MAX: u8 = 18;
    /// `challenge_status`: the page's status.
    pub const STATUS: u16 = 403;
    /// `challenge_ttl`: the cookie's lifetime in seconds (one day).
    pub const TTL: u32 = 86_400;
    /// `challenge_cookie`.
    pub const COOKIE: &str = "edgeguard_clearance";
    /// `challenge_prefix_v4`.
    pub const PREFIX_V4: u8 = 24;
    /// `challenge_prefix_v6`.
    pub const PREFIX_V6: u8 = 64;
    /// `challenge_nojs_wait` when turned on without a number (`true`).
    pub const NOJS_WAIT: u8 = 5;
    /// `challenge_nojs_ttl`: the no-JavaScript clearance's lifetime (one hour).
    pub const NOJS_TTL: u32 = 3600;
}

/// What a flagged request that a challenge applies to gets
/// (`challenge_response`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Response {
    /// The page for navigations ([`is_navigation`]); problem+json for the
    /// rest (a body, a `fetch()`, an API call).
    #[default]
    Auto,
    /// The page for every `GET` and `HEAD` (clients that send neither
    /// `Sec-Fetch-Mode` nor an `Accept` naming HTML); problem+json for
    /// requests with bodies.
    Page,
    /// Never the page: problem+json for every request (an API location).
    Problem,
}

impl Response {
    /// Every value, as `challenge_response` names them.
    pub const ALL: [Response; 3] = [Response::Auto, Response::Page, Response::Problem];

    /// The name in `challenge_response`.
    pub fn as_str(self) -> &'static str {
        match self {
            Response::Auto => "auto",
            Response::Page => "page",
            Response::Problem => "problem",
        }
    }

    /// Whether `req` gets the page (else a problem document). A request
    /// with a body never does: the page's redirect would lose it.
    pub fn wants_page(self, req: &Request<'_>) -> bool {
        match self {
            Response::Auto => is_navigation(req),
            Response::Page => matches!(req.method(), b"GET" | b"HEAD"),
            Response::Problem => false,
        }
    }
}

/// The challenge's settings, keys and pages, shared by every policy of one
/// configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Challenge {
    keys: Arc<Keys>,
    pages: Arc<Pages>,
    /// Leading zero bits a nonce asks for at the threshold.
    pub difficulty: u8,
    /// Leading zero bits a nonce asks for at score 1.0 ([`work::scaled`]).
    pub difficulty_max: u8,
    /// The page's status.
    pub status: u16,
    /// The cookie's lifetime in seconds.
    pub ttl: u32,
    /// The cookie's name.
    pub cookie: String,
    /// IPv4 prefix length a cookie is bound to.
    pub prefix_v4: u8,
    /// IPv6 prefix length a cookie is bound to.
    pub prefix_v6: u8,
    /// The no-JavaScript fallback's wait in seconds; `None`: no fallback.
    pub nojs_wait: Option<u8>,
    /// The no-JavaScript clearance's lifetime in seconds.
    pub nojs_ttl: u32,
    /// The site's name on the page; `None`: the request's `Host`.
    pub site: Option<String>,
    /// Page or problem document for a flagged request.
    pub response: Response,
    /// `challenge_problem_base`: the URI problem types are documented
    /// under; empty: `about:blank`.
    pub problem_base: String,
}

/// The outcome of an answer or a ticket ([`Challenge::answer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Passed: the `Set-Cookie` value and the `Location` (303) are
    /// written, their lengths here.
    Solved {
        /// Bytes of the `Set-Cookie` value.
        cookie: usize,
        /// Bytes of the `Location`.
        location: usize,
        /// What the cookie proves.
        proof: Proof,
        /// The attempt count the return hop carries (1 for a first solve).
        attempts: u8,
    },
    /// A no-JavaScript ticket whose wait is not over: serve the
    /// [`State::Wait`] page with the same ticket and these seconds.
    TooEarly {
        /// Seconds still to wait (at least 1).
        seconds: u8,
    },
    /// Refused, but the token is genuine (its MAC verified) and the
    /// reason is one a person's browser meets: it outlived [`NONCE_TTL`]
    /// (a tab left open, a laptop asleep, a slow phone at a high
    /// difficulty, a clock step between servers; `Expired`), or the same
    /// browser (User-Agent, TLS stack) answers from another address prefix
    /// (it moved between networks; `Address`). Serve a fresh page carrying
    /// one more attempt; count it as failed, with `reason`.
    Again {
        /// The attempt count the token carried.
        attempts: u8,
        /// Why it was refused: [`Rejection::Expired`] or
        /// [`Rejection::Address`].
        reason: Rejection,
    },
    /// Refused.
    Failed(Rejection),
}

impl Answer {
    /// Why it was refused, as metrics and the decision line name it
    /// ([`Answer::Again`] its reason, [`Answer::TooEarly`] `early`);
    /// `None` when solved.
    pub fn rejection(self) -> Option<Rejection> {
        match self {
            Answer::Solved { .. } => None,
            Answer::TooEarly { .. } => Some(Rejection::Early),
            Answer::Again { reason, .. } => Some(reason),
            Answer::Failed(r) => Some(r),
        }
    }
}

/// The outcome of a return hop ([`Challenge::returning`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returned {
    /// A valid return token: the same-site path it returns to is written
    /// (its length here). Cleared (the cookie came back): 303 there.
    /// Otherwise [`Returned::cookies_needed`] says which page to serve.
    Back {
        /// Solves so far that came back without the cookie.
        attempts: u8,
        /// Bytes of the return path.
        location: usize,
    },
    /// A refused return token (serve the page as for a start).
    Failed(Rejection),
}

impl Returned {
    /// Whether a request coming back without its cookie gets the
    /// "cookies are needed" page ([`State::CookiesNeeded`]) rather than
    /// another challenge: after [`COOKIES_NEEDED_AFTER`] solves.
    pub fn cookies_needed(self) -> bool {
        matches!(self, Returned::Back { attempts, .. } if attempts >= COOKIES_NEEDED_AFTER)
    }
}

impl Challenge {
    /// The challenge under `keys` with the default settings and the
    /// bundled page and locales.
    pub fn new(keys: Arc<Keys>) -> Challenge {
        Challenge::with_pages(keys, Pages::bundled())
    }

    /// The challenge under `keys` with the default settings and `pages`
    /// (`challenge_template`, `challenge_locales`).
    pub fn with_pages(keys: Arc<Keys>, pages: Arc<Pages>) -> Challenge {
        Challenge {
            keys,
            pages,
            difficulty: defaults::DIFFICULTY,
            difficulty_max: defaults::DIFFICULTY_MAX,
            status: defaults::STATUS,
            ttl: defaults::TTL,
            cookie: defaults::COOKIE.to_owned(),
            prefix_v4: defaults::PREFIX_V4,
            prefix_v6: defaults::PREFIX_V6,
            nojs_wait: None,
            nojs_ttl: defaults::NOJS_TTL,
            site: None,
            response: Response::Auto,
            problem_base: String::new(),
        }
    }

    /// The keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The pages.
    pub fn pages(&self) -> &Pages {
        &self.pages
    }

    /// What binds a token to this client: address prefix, User-Agent and
    /// (from the connection's ClientHello, when there is one) TLS stack.
    pub fn binding(
        &self,
        addr: Option<IpAddr>,
        user_agent: &[u8],
        tls: Option<crate::features::TlsFacts<'_>>,
    ) -> Binding {
        Binding::new(addr, user_agent, tls, self.prefix_v4, self.prefix_v6)
    }

    /// The binding of a request: its User-Agent and TLS facts.
    pub fn binding_of(&self, req: &Request<'_>, addr: Option<IpAddr>) -> Binding {
        self.binding(addr, user_agent(req), req.tls())
    }

    /// The leading zero bits asked of a request flagged with `score` at
    /// `threshold` (`None`: flagged without a score), [`work::scaled`]
    /// between `difficulty` and `difficulty_max`.
    pub fn difficulty_for(&self, score: Option<f64>, threshold: f64) -> u8 {
        work::scaled(self.difficulty, self.difficulty_max, score, threshold)
    }

    /// The lifetime in force for a clearance of this proof: 0 for a
    /// no-JavaScript one while that fallback is off.
    fn ttl_of(&self, proof: Proof) -> u32 {
        match proof {
            Proof::Work => self.ttl,
            Proof::Wait if self.nojs_wait.is_some() => self.nojs_ttl,
            Proof::Wait => 0,
        }
    }

    /// The text of a clearance cookie for `client` proving `proof` (at
    /// `level`: the difficulty solved, or the seconds waited), valid for
    /// that proof's lifetime from `now`.
    pub fn mint_cookie(
        &self,
        client: &Binding,
        proof: Proof,
        level: u8,
        now: u64,
    ) -> [u8; TOKEN_TEXT] {
        let fields = Fields {
            proof: Some(proof),
            level,
            attempts: 0,
            time: now.saturating_add(u64::from(self.ttl_of(proof))),
        };
        token::seal(Kind::Cookie, fields, client, &self.keys)
    }

    /// Checks one cookie value; what it proves. A cookie expiring later
    /// than the lifetime in force allows (the ttl was shortened, or the
    /// no-JavaScript fallback turned off) counts as expired.
    pub fn verify_cookie(
        &self,
        value: &[u8],
        client: &Binding,
        now: u64,
    ) -> Result<Proof, Rejection> {
        self.record_cookie(value, client)
            .judge(now, |p| self.ttl_of(p))
    }

    /// What checking one cookie value with the keys finds, before the
    /// time is looked at: what the request recorder logs instead of the
    /// token ([`Recorded`]), and the first half of [`Challenge::verify_cookie`].
    pub fn record_cookie(&self, value: &[u8], client: &Binding) -> Recorded {
        let opened = match token::open(value, Kind::Cookie, &self.keys) {
            Ok(o) => o,
            Err(r) => return Recorded::Refused(r),
        };
        let Some(proof) = opened.proof else {
            return Recorded::Refused(Rejection::Malformed);
        };
        Recorded::Opened {
            proof,
            expires: opened.time,
            binding: opened.check_binding(client),
        }
    }

    /// The clearance of a request: its cookies of the configured name (at
    /// most [`MAX_CANDIDATES`], from every `Cookie` header), checked until
    /// one is valid. The binding (a SHA-256 of the User-Agent, one of the
    /// TLS facts) is computed only when there is a cookie. A request read
    /// back from a log ([`Request::is_from_log`]) has the verdicts the
    /// recorder logged in place of its tokens judged instead
    /// ([`Recorded`]). Allocates nothing.
    pub fn clearance(&self, req: &Request<'_>, addr: Option<IpAddr>, now: u64) -> Clearance {
        let mut binding = None;
        self.clearance_bound(req, now, || {
            *binding.get_or_insert_with(|| self.binding_of(req, addr))
        })
    }

    /// [`Challenge::clearance`] with the request's binding given by the
    /// caller, asked for only when there is a cookie: the gate computes it
    /// once per request and shares it with the page it may write.
    pub fn clearance_bound(
        &self,
        req: &Request<'_>,
        now: u64,
        mut binding: impl FnMut() -> Binding,
    ) -> Clearance {
        let mut result = Clearance::Absent;
        let mut checked = 0;
        for (name, value) in req.headers() {
            if !name.eq_ignore_ascii_case(b"cookie") {
                continue;
            }
            for v in cookie_values(value, self.cookie.as_bytes()) {
                let b = binding();
                let logged = req.is_from_log().then(|| Recorded::parse(v)).flatten();
                let verdict = match logged {
                    Some(r) => r.judge(now, |p| self.ttl_of(p)),
                    None => self.verify_cookie(v, &b, now),
                };
                match verdict {
                    Ok(proof) => return Clearance::Accepted(proof),
                    Err(r) => result = Clearance::Rejected(r),
                }
                checked += 1;
                if checked == MAX_CANDIDATES {
                    return result;
                }
            }
        }
        result
    }

    /// A fresh nonce for `client` asking for `difficulty` bits, the
    /// `attempts`-th challenge of this return (0: the first).
    pub fn nonce(
        &self,
        client: &Binding,
        difficulty: u8,
        attempts: u8,
        now: u64,
    ) -> [u8; TOKEN_TEXT] {
        let fields = Fields {
            proof: Some(Proof::Work),
            level: difficulty.min(MAX_DIFFICULTY),
            attempts,
            time: now,
        };
        token::seal(Kind::Nonce, fields, client, &self.keys)
    }

    /// A fresh no-JavaScript ticket for `client`, redeemable from `now +
    /// nojs_wait`; `None` while that fallback is off.
    pub fn ticket(&self, client: &Binding, attempts: u8, now: u64) -> Option<[u8; TOKEN_TEXT]> {
        let wait = self.nojs_wait?;
        let fields = Fields {
            proof: Some(Proof::Wait),
            level: wait,
            attempts,
            time: now,
        };
        Some(token::seal(Kind::Ticket, fields, client, &self.keys))
    }

    /// Checks an answer: the nonce's MAC, age and binding, then the work.
    /// An expired nonce is [`Answer::Expired`] when it is this client's,
    /// `Failed(Expired)` when it is not.
    fn check_answer(
        &self,
        nonce: &[u8],
        counter: &[u8],
        client: &Binding,
        now: u64,
    ) -> Result<Opened, Answer> {
        let failed = Answer::Failed;
        let opened = token::open(nonce, Kind::Nonce, &self.keys).map_err(failed)?;
        // A nonce from the future (clocks of two servers apart) is given
        // the same slack as one from the past.
        let again = |reason| Answer::Again {
            attempts: opened.attempts,
            reason,
        };
        if now.abs_diff(opened.time) > NONCE_TTL {
            return Err(match opened.check_binding(client) {
                Ok(()) => again(Rejection::Expired),
                Err(Rejection::Address) if opened.moved_only(client) => again(Rejection::Expired),
                Err(_) => failed(Rejection::Expired),
            });
        }
        match opened.check_binding(client) {
            Ok(()) => {}
            Err(Rejection::Address) if opened.moved_only(client) => {
                return Err(again(Rejection::Address))
            }
            Err(r) => return Err(failed(r)),
        }
        if !work::is_counter(counter) {
            return Err(failed(Rejection::Malformed));
        }
        if leading_zero_bits(nonce, counter) < u32::from(opened.level) {
            return Err(failed(Rejection::Work));
        }
        Ok(opened)
    }

    /// Checks a no-JavaScript ticket: MAC, binding, then its time: not
    /// before its wait is over, not after [`NONCE_TTL`] more seconds.
    fn check_ticket(&self, ticket: &[u8], client: &Binding, now: u64) -> Result<Opened, Answer> {
        let failed = Answer::Failed;
        let opened = token::open(ticket, Kind::Ticket, &self.keys).map_err(failed)?;
        // A ticket from while the fallback was on is no way in once it is off.
        if self.nojs_wait.is_none() {
            return Err(failed(Rejection::Malformed));
        }
        let again = |reason| Answer::Again {
            attempts: opened.attempts,
            reason,
        };
        match opened.check_binding(client) {
            Ok(()) => {}
            Err(Rejection::Address) if opened.moved_only(client) => {
                return Err(again(Rejection::Address))
            }
            Err(r) => return Err(failed(r)),
        }
        let ready = opened.time.saturating_add(u64::from(opened.level));
        if now < ready {
            // The refresh comes at the wait; a second's early follow (the
            // clock ticked between page and refresh) is told to wait one.
            let seconds = (ready - now).min(u64::from(MAX_NOJS_WAIT)) as u8;
            return Err(Answer::TooEarly { seconds });
        }
        if now - ready > NONCE_TTL {
            return Err(again(Rejection::Expired));
        }
        Ok(opened)
    }

    /// Handles an answer or a ticket at [`ENDPOINT`]: `uri` is its
    /// request target ([`Endpoint::parse`]). Passed: writes the
    /// clearance's `Set-Cookie` value (with `Secure` when `tls`) into
    /// `set_cookie` and the `Location` into `location`: with `hop`, the
    /// return hop carrying the attempt count ([`Challenge::returning`]),
    /// else the same-site path itself. A return or a start is no answer
    /// (`Failed(Malformed)`).
    #[allow(clippy::too_many_arguments)]
    pub fn answer(
        &self,
        uri: &[u8],
        client: &Binding,
        now: u64,
        tls: bool,
        hop: bool,
        set_cookie: &mut [u8],
        location: &mut [u8],
    ) -> Result<Answer, TooSmall> {
        let (opened, ret, proof) = match Endpoint::parse(uri) {
            Endpoint::Answer {
                nonce,
                counter,
                ret,
            } => match self.check_answer(nonce, counter, client, now) {
                Ok(o) => (o, ret, Proof::Work),
                Err(a) => return Ok(a),
            },
            Endpoint::Ticket { ticket, ret } => match self.check_ticket(ticket, client, now) {
                Ok(o) => (o, ret, Proof::Wait),
                Err(a) => return Ok(a),
            },
            Endpoint::Return { .. } | Endpoint::Start { .. } => {
                return Ok(Answer::Failed(Rejection::Malformed))
            }
        };
        let attempts = opened.attempts.saturating_add(1);
        let location_len = if hop {
            let mut path = [0u8; MAX_RETURN];
            let n = return_path(ret, &mut path)?;
            let token = token::seal(
                Kind::Return,
                Fields {
                    proof: None,
                    level: 0,
                    attempts,
                    time: now,
                },
                client,
                &self.keys,
            );
            let cap = location.len();
            let mut w = &mut location[..];
            write_token_url(&mut w, b'a', &token, &path[..n], b"&").map_err(|_| TooSmall)?;
            cap - w.len()
        } else {
            return_path(ret, location)?
        };
        let token = self.mint_cookie(client, proof, opened.level, now);
        let cookie_len = self.set_cookie(&token, proof, now, tls, set_cookie)?;
        Ok(Answer::Solved {
            cookie: cookie_len,
            location: location_len,
            proof,
            attempts,
        })
    }

    /// Handles a return hop at [`ENDPOINT`] (`a=`): checks the return
    /// token (MAC, [`RETURN_TTL`], binding) and writes the same-site path
    /// it returns to into `location` ([`MAX_RETURN`] bytes are enough).
    /// The caller then looks at the request's clearance: cleared, 303
    /// there; else [`Returned::cookies_needed`] decides the page.
    pub fn returning(
        &self,
        uri: &[u8],
        client: &Binding,
        now: u64,
        location: &mut [u8],
    ) -> Result<Returned, TooSmall> {
        let Endpoint::Return { token, ret } = Endpoint::parse(uri) else {
            return Ok(Returned::Failed(Rejection::Malformed));
        };
        let opened = match token::open(token, Kind::Return, &self.keys) {
            Ok(o) => o,
            Err(r) => return Ok(Returned::Failed(r)),
        };
        if now.abs_diff(opened.time) > RETURN_TTL {
            return Ok(Returned::Failed(Rejection::Expired));
        }
        if let Err(r) = opened.check_binding(client) {
            return Ok(Returned::Failed(r));
        }
        Ok(Returned::Back {
            attempts: opened.attempts,
            location: return_path(ret, location)?,
        })
    }

    /// Writes the page `input` asks for into `out` ([`PAGE_CAP`] bytes
    /// are always enough); returns its length. A challenge page carries a
    /// fresh nonce (and a ticket, with the no-JavaScript fallback on)
    /// bound to `client`. Serve it with [`Challenge::status`], `Content-Type:
    /// text/html; charset=utf-8`, `Cache-Control: no-store` and, to keep it
    /// under a strict policy, `Content-Security-Policy: `[`Pages::csp`].
    pub fn page(
        &self,
        input: &PageInput<'_>,
        client: &Binding,
        now: u64,
        out: &mut [u8],
    ) -> Result<usize, TooSmall> {
        let nonce = self.nonce(client, input.difficulty, input.attempts, now);
        let minted;
        let (ticket, seconds) = match input.state {
            State::Wait => (input.ticket, input.seconds),
            _ => {
                minted = self.ticket(client, input.attempts, now);
                (minted.as_ref().map(|t| &t[..]), self.nojs_wait.unwrap_or(0))
            }
        };
        let values = page::Values {
            nonce: &nonce,
            difficulty: input.difficulty.min(MAX_DIFFICULTY),
            request_id: input.request_id,
            site: self.site.as_deref().map(str::as_bytes),
            host: input.host,
            return_to: return_or_root(input.return_to),
            ticket,
            seconds,
        };
        let locale = self.pages.negotiate(input.accept_language);
        self.pages.render(locale, input.state, &values, out)
    }

    /// Writes an RFC 9457 `application/problem+json` body into `out`
    /// ([`PROBLEM_CAP`] bytes are always enough); returns its length.
    pub fn problem(&self, input: &ProblemInput<'_>, out: &mut [u8]) -> Result<usize, TooSmall> {
        problem::render(input, out)
    }

    /// The `Set-Cookie` value carrying `token`.
    fn set_cookie(
        &self,
        token: &[u8],
        proof: Proof,
        now: u64,
        tls: bool,
        out: &mut [u8],
    ) -> Result<usize, TooSmall> {
        let cap = out.len();
        let mut w = &mut out[..];
        let ttl = self.ttl_of(proof);
        let expires = now.saturating_add(u64::from(ttl));
        let ok = (|| -> std::io::Result<()> {
            w.write_all(self.cookie.as_bytes())?;
            w.write_all(b"=")?;
            w.write_all(token)?;
            write!(w, "; Path=/; Max-Age={ttl}; Expires=")?;
            http_date(expires, &mut w)?;
            // On TLS the cookie goes along on a cross-site form POST too
            // (OAuth form_post, a payment's return): a cleared person is
            // not challenged there, which would lose the form. It carries
            // no authority (the site's own CSRF defences are untouched)
            // and is bound to the client that solved it, so sending it
            // cross-site gives nothing away. Plain HTTP cannot have
            // `SameSite=None` (browsers require `Secure` with it): Lax.
            if tls {
                w.write_all(b"; HttpOnly; SameSite=None; Secure")?;
            } else {
                w.write_all(b"; HttpOnly; SameSite=Lax")?;
            }
            Ok(())
        })();
        ok.map_err(|_| TooSmall)?;
        Ok(cap - w.len())
    }
}

/// Whether a request is a top-level navigation a page can answer: GET or
/// HEAD, with `Sec-Fetch-Mode: navigate`, or, from a client that sends no
/// `Sec-Fetch-Mode` (older browsers), an `Accept` naming `text/html`. A
/// fetch or XHR (`Sec-Fetch-Mode: cors`, `no-cors`, `same-origin`) is not,
/// whatever it accepts.
pub fn is_navigation(req: &Request<'_>) -> bool {
    if !matches!(req.method(), b"GET" | b"HEAD") {
        return false;
    }
    match header(req, b"sec-fetch-mode") {
        Some(mode) => mode.trim_ascii().eq_ignore_ascii_case(b"navigate"),
        None => header(req, b"accept")
            .is_some_and(|a| a.windows(9).any(|w| w.eq_ignore_ascii_case(b"text/html"))),
    }
}

/// The values of the cookies named `name` in one `Cookie` header value
/// (`a=1; name=v; b=2`), quotes removed (RFC 6265 allows `name="v"`).
pub fn cookie_values<'a>(header: &'a [u8], name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    header.split(|&b| b == b';').filter_map(move |pair| {
        let pair = pair.trim_ascii();
        let eq = pair.iter().position(|&b| b == b'=')?;
        let (n, v) = (pair[..eq].trim_ascii(), pair[eq + 1..].trim_ascii());
        if n != name {
            return None;
        }
        Some(match v {
            [b'"', inner @ .., b'"'] => inner,
            v => v,
        })
    })
}

#[cfg(test)]
mod tests;
