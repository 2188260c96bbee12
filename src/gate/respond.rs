//! The challenge's exits (part of stage 7, `respond`): the page, the
//! problem document for a request that must not get it, the answer's
//! redirect and cookie, the return hop that counts attempts, the
//! no-JavaScript wait, and the start a problem document points to.
//!
//! ```text
//! flagged, page wanted ([`Response::wants_page`])  -> the page (difficulty by score)
//! flagged, anything else (a body, a fetch, an API) -> problem+json challenge_required
//! ENDPOINT ?n=&c= (work) or ?t= (no-JS ticket)     -> 303 + cookie to the return hop
//!          ?t= too early                           -> the wait page
//!          ?n= or ?t= expired, this client's       -> the page again (attempt counted),
//!                                                     after 2 the "cookies are needed" page;
//!                                                     not a navigation: problem+json
//!          ?n= or ?t= forged, tampered, re-homed   -> the block status
//!          ?a= (return hop) with the cookie        -> 303 to the page it came from
//!          ?a= without it, after 2 solves          -> the "cookies are needed" page
//!          ?a= without it, before                  -> the page again (attempt counted)
//!          ?r= (start: a problem's `clear` URL)    -> the page, or 303 when cleared
//! ```
//!
//! Everything is written into the scratch's body; nothing allocates.

use std::io::Write as _;
use std::net::IpAddr;

use super::effects::Exit;
use super::location::Location;
use super::request::Incoming;
use super::scratch::{Scratch, LOCATION_CAP};
use super::state::{BodyParts, State};
use crate::challenge::AnswerResult;
use crate::challenge::{
    self, return_path, Answer, Binding, Challenge, Endpoint, PageInput, Problem, ProblemInput,
    Proof, Rejection, Returned, MAX_RETURN, SET_COOKIE_CAP,
};
use crate::config::text::Span;
use crate::config::Mode;
use crate::features::Grade;
use crate::net::addr_from_text;
use crate::outcome::Outcome;

/// The `Content-Type` of a problem document (RFC 9457).
pub(super) const PROBLEM_TYPE: &str = "application/problem+json";
/// The `Content-Type` of a page.
pub(super) const PAGE_TYPE: &str = "text/html; charset=utf-8";

/// The `Retry-After` of a 503 problem document (`fail_closed` with the
/// models missing): a hint to a program not to retry at once. Models come
/// back with a reload, which no client can time; a program that retries
/// every few tens of seconds sees it soon enough and does not pile on.
pub(super) const RETRY_UNAVAILABLE: u32 = 30;

/// Whether a blocked (or, `fail_closed`, unavailable) request of `grade`
/// may get a problem document instead of a bare status: in mode
/// `challenge` (or an ambiguous verdict that mode `block` challenges), a
/// request that must not get a page (a body, a `fetch()`, an API call).
pub(super) fn problem_for_block(loc: &Location, grade: Grade) -> bool {
    loc.policy.mode_for(grade) == Mode::Challenge && loc.policy.challenge().is_some()
}

/// The exit of a request the challenge handles: [`Outcome::Challenge`]
/// (the page), [`Outcome::Answer`] (the endpoint), or
/// [`Outcome::ChallengeRequired`] (the problem document).
pub(super) fn challenge(
    loc: &Location,
    req: &Incoming<'_>,
    now: u64,
    scratch: &mut Scratch,
    s: &mut State,
) -> Exit<'static> {
    let Some(ch) = loc.policy.challenge() else {
        return Exit::Continue;
    };
    let client = s
        .client
        .or_else(|| addr_from_text(req.http().client_addr()));
    let binding = s.cookie.binding(ch, req.http(), client);
    let ctx = Ctx {
        loc,
        ch,
        req,
        binding,
        client,
        now,
    };
    match s.action {
        Outcome::Challenge => {
            let difficulty = ctx.difficulty(scratch, s);
            ctx.page(scratch, s, Page::challenge(req.http().uri(), difficulty, 0))
        }
        Outcome::ChallengeRequired => {
            let at = referer_path(req);
            s.answer = Some(AnswerResult::Problem);
            ctx.problem(scratch, s, Problem::ChallengeRequired, at)
        }
        // A person's navigation gets nginx's page; a program something it
        // can read, and when to come back.
        Outcome::Unavailable if ch.response.wants_page(req.http()) => Exit::Status(503),
        Outcome::Unavailable => {
            s.answer = Some(AnswerResult::Problem);
            ctx.problem(scratch, s, Problem::Unavailable, b"/")
        }
        Outcome::Answer => match challenge::Endpoint::parse(req.http().uri()) {
            Endpoint::Answer { .. } | Endpoint::Ticket { .. } => ctx.answer(scratch, s),
            Endpoint::Return { .. } => ctx.returning(scratch, s),
            Endpoint::Start { ret } => ctx.start(scratch, s, ret),
        },
        _ => Exit::Continue,
    }
}

/// What every exit of one request reads.
struct Ctx<'l, 'r> {
    loc: &'l Location,
    ch: &'l Challenge,
    req: &'l Incoming<'r>,
    binding: Binding,
    client: Option<IpAddr>,
    now: u64,
}

/// One page to write: which, where it returns to, the work it asks.
#[derive(Clone, Copy)]
struct Page<'a> {
    state: challenge::State,
    return_to: &'a [u8],
    difficulty: u8,
    attempts: u8,
    ticket: Option<&'a [u8]>,
    seconds: u8,
}

impl<'a> Page<'a> {
    fn challenge(return_to: &'a [u8], difficulty: u8, attempts: u8) -> Page<'a> {
        Page {
            state: challenge::State::Challenge,
            return_to,
            difficulty,
            attempts,
            ticket: None,
            seconds: 0,
        }
    }
}

impl Ctx<'_, '_> {
    /// The bits asked of this request: scaled by the score of the model
    /// that flagged it (none, a fake bot: the maximum).
    fn difficulty(&self, scratch: &Scratch, s: &State) -> u8 {
        let flagged = s.decision.flagged_by.filter(|_| s.scored);
        match flagged.and_then(|i| Some((scratch.scores[i], self.loc.policy.threshold(i)?))) {
            Some((score, threshold)) => self.ch.difficulty_for(Some(score), threshold),
            None if s.decision.flagged_by.is_some() || s.decision.bot.is_some() => {
                self.ch.difficulty_for(None, 0.0)
            }
            None => self.ch.difficulty,
        }
    }

    /// The bits asked at the start a problem document points to: as for
    /// a flagged request when one of this request's scores flags it, else
    /// the base.
    fn start_difficulty(&self, scratch: &Scratch, s: &State) -> u8 {
        let scores = &scratch.scores[..self.loc.model_count()];
        let flagging = s.scored.then(|| {
            scores.iter().enumerate().find_map(|(i, &v)| {
                let t = self.loc.policy.threshold(i)?;
                (v >= t).then_some((v, t))
            })
        });
        match flagging.flatten() {
            Some((v, t)) => self.ch.difficulty_for(Some(v), t),
            None => self.ch.difficulty,
        }
    }

    /// Writes a page into the body; its exit (the challenge's status).
    fn page(&self, scratch: &mut Scratch, s: &mut State, p: Page<'_>) -> Exit<'static> {
        let http = self.req.http();
        let input = PageInput {
            state: p.state,
            accept_language: challenge::header(http, b"accept-language").unwrap_or_default(),
            host: challenge::header(http, b"host").unwrap_or_default(),
            request_id: self.req.request_id(),
            return_to: p.return_to,
            difficulty: p.difficulty,
            attempts: p.attempts,
            ticket: p.ticket,
            seconds: p.seconds,
        };
        match self
            .ch
            .page(&input, &self.binding, self.now, &mut scratch.body)
        {
            Ok(n) => {
                s.body = BodyParts::Page {
                    body: Span { offset: 0, len: n },
                    problem: false,
                    retry_after: None,
                };
                Exit::Status(self.ch.status)
            }
            // Not reached: the body holds challenge::PAGE_CAP.
            Err(_) => Exit::Status(500),
        }
    }

    /// Writes a problem document into the body; its exit (the block
    /// status).
    fn problem(
        &self,
        scratch: &mut Scratch,
        s: &mut State,
        problem: Problem,
        return_to: &[u8],
    ) -> Exit<'static> {
        let (status, retry_after) = match problem {
            Problem::Unavailable => (503, Some(RETRY_UNAVAILABLE)),
            _ => (self.loc.policy.status(), None),
        };
        let input = ProblemInput {
            problem,
            status,
            clearance: s.decision.clearance,
            request_id: self.req.request_id(),
            return_to,
            retry_after,
            base: &self.ch.problem_base,
        };
        match self.ch.problem(&input, &mut scratch.body) {
            Ok(n) => {
                // The header's value after the document.
                let retry_after = retry_after.and_then(|r| {
                    let mut w = &mut scratch.body[n..];
                    let room = w.len();
                    write!(w, "{r}").ok()?;
                    Some(Span {
                        offset: n,
                        len: room - w.len(),
                    })
                });
                s.body = BodyParts::Page {
                    body: Span { offset: 0, len: n },
                    problem: true,
                    retry_after,
                };
                Exit::Status(status)
            }
            // Not reached: the body holds challenge::PROBLEM_CAP.
            Err(_) => Exit::Status(500),
        }
    }

    /// An answer (`n=`, `c=`) or a no-JavaScript ticket (`t=`): the
    /// cookie and the return hop, the wait page, or the status.
    fn answer(&self, scratch: &mut Scratch, s: &mut State) -> Exit<'static> {
        let uri = self.req.http().uri();
        let (cookie, location) = scratch.body.split_at_mut(SET_COOKIE_CAP);
        let location = &mut location[..LOCATION_CAP];
        let secure = self.req.is_secure();
        let answered = self
            .ch
            .answer(uri, &self.binding, self.now, secure, true, cookie, location);
        match answered {
            Ok(Answer::Solved {
                cookie,
                location,
                proof,
                ..
            }) => {
                s.answer = Some(match proof {
                    Proof::Work => AnswerResult::Solved,
                    Proof::Wait => AnswerResult::Waited,
                });
                s.body = BodyParts::Answer {
                    set_cookie: Span {
                        offset: 0,
                        len: cookie,
                    },
                    location: Span {
                        offset: SET_COOKIE_CAP,
                        len: location,
                    },
                };
                Exit::Status(303)
            }
            Ok(Answer::TooEarly { seconds }) => {
                s.answer = Some(AnswerResult::Failed(Rejection::Early));
                let Endpoint::Ticket { ticket, ret } = Endpoint::parse(uri) else {
                    return Exit::Status(self.loc.policy.status());
                };
                let mut back = [0u8; MAX_RETURN];
                let n = return_path(ret, &mut back).unwrap_or(0);
                let page = Page {
                    state: challenge::State::Wait,
                    ticket: Some(ticket),
                    seconds,
                    ..Page::challenge(&back[..n], self.ch.difficulty, 0)
                };
                self.page(scratch, s, page)
            }
            Ok(Answer::Again { attempts, reason }) => {
                s.answer = Some(AnswerResult::Failed(reason));
                self.again(scratch, s, attempts)
            }
            // Forged or tampered with (MAC, binding, work, malformed): the
            // block status, as any refusal.
            Ok(Answer::Failed(r)) => {
                s.answer = Some(AnswerResult::Failed(r));
                Exit::Status(self.loc.policy.status())
            }
            // Not reached: the buffers hold the caps.
            Err(_) => Exit::Status(500),
        }
    }

    /// An answer or a ticket that outlived its time in this client's
    /// browser, or came from the same browser on another network
    /// ([`Answer::Again`]): not a bot's doing, so no dead end.
    /// The page navigates to its answer (`location.replace`, the ticket by
    /// a refresh or a link): a fresh page back to where it was, at the
    /// start's difficulty, one more attempt counted; once that reaches
    /// [`challenge::COOKIES_NEEDED_AFTER`] the "cookies are needed" page
    /// (its link starts over), so a fleet whose clocks disagree cannot
    /// loop a browser. Anything else (a `fetch()` of the endpoint): the
    /// problem document. The answer still counts as failed, with its
    /// reason (`expired`, `address`).
    fn again(&self, scratch: &mut Scratch, s: &mut State, attempts: u8) -> Exit<'static> {
        let ret = match Endpoint::parse(self.req.http().uri()) {
            Endpoint::Answer { ret, .. } | Endpoint::Ticket { ret, .. } => ret,
            Endpoint::Return { .. } | Endpoint::Start { .. } => b"",
        };
        let mut back = [0u8; MAX_RETURN];
        let n = return_path(ret, &mut back).unwrap_or(0);
        let back = &back[..n];
        let http = self.req.http();
        if !(challenge::is_navigation(http) || self.ch.response.wants_page(http)) {
            return self.problem(scratch, s, Problem::ChallengeRequired, back);
        }
        let attempts = attempts.saturating_add(1);
        if attempts >= challenge::COOKIES_NEEDED_AFTER {
            let page = Page {
                state: challenge::State::CookiesNeeded,
                ..Page::challenge(back, self.ch.difficulty, attempts)
            };
            return self.page(scratch, s, page);
        }
        let difficulty = self.start_difficulty(scratch, s);
        self.page(scratch, s, Page::challenge(back, difficulty, attempts))
    }

    /// The return hop (`a=`): back where the page was with the cookie;
    /// without it, the page again, or after [`challenge::COOKIES_NEEDED_AFTER`]
    /// solves the "cookies are needed" page.
    fn returning(&self, scratch: &mut Scratch, s: &mut State) -> Exit<'static> {
        let uri = self.req.http().uri();
        let mut back = [0u8; MAX_RETURN];
        let returned = self.ch.returning(uri, &self.binding, self.now, &mut back);
        let (attempts, n) = match returned {
            Ok(Returned::Back { attempts, location }) => (attempts, location),
            // A refused return token: the page, as for a start.
            Ok(Returned::Failed(_)) | Err(_) => {
                let difficulty = self.start_difficulty(scratch, s);
                s.action = Outcome::Challenge;
                return self.page(scratch, s, Page::challenge(b"/", difficulty, 0));
            }
        };
        s.decision.clearance = s
            .cookie
            .clearance(self.ch, self.req.http(), self.client, self.now);
        if s.decision.clearance.is_accepted() {
            return self.redirect(scratch, s, &back[..n]);
        }
        if returned.is_ok_and(Returned::cookies_needed) {
            s.answer = Some(AnswerResult::CookiesNeeded);
            let page = Page {
                state: challenge::State::CookiesNeeded,
                ..Page::challenge(&back[..n], self.ch.difficulty, attempts)
            };
            return self.page(scratch, s, page);
        }
        let difficulty = self.start_difficulty(scratch, s);
        s.action = Outcome::Challenge;
        self.page(
            scratch,
            s,
            Page::challenge(&back[..n], difficulty, attempts),
        )
    }

    /// A start (`r=` only, a problem document's `clear`): the page, or
    /// straight back when the request is cleared already.
    fn start(&self, scratch: &mut Scratch, s: &mut State, ret: &[u8]) -> Exit<'static> {
        let mut back = [0u8; MAX_RETURN];
        let n = return_path(ret, &mut back).unwrap_or(0);
        s.decision.clearance = s
            .cookie
            .clearance(self.ch, self.req.http(), self.client, self.now);
        if s.decision.clearance.is_accepted() {
            return self.redirect(scratch, s, &back[..n]);
        }
        let difficulty = self.start_difficulty(scratch, s);
        s.action = Outcome::Challenge;
        self.page(scratch, s, Page::challenge(&back[..n], difficulty, 0))
    }

    /// A 303 to `to` (a same-site path), without a cookie.
    fn redirect(&self, scratch: &mut Scratch, s: &mut State, to: &[u8]) -> Exit<'static> {
        let to = challenge::return_or_root(to);
        let at = SET_COOKIE_CAP;
        scratch.body[at..at + to.len()].copy_from_slice(to);
        s.body = BodyParts::Answer {
            set_cookie: Span::default(),
            location: Span {
                offset: at,
                len: to.len(),
            },
        };
        Exit::Status(303)
    }
}

/// Where a person returns after clearing, for a request that got a
/// problem document: the path of its `Referer` when that names this host
/// (the page the call came from), else `/`.
fn referer_path<'a>(req: &Incoming<'a>) -> &'a [u8] {
    let http = req.http();
    let (Some(referer), Some(host)) = (
        challenge::header(http, b"referer"),
        challenge::header(http, b"host"),
    ) else {
        return b"/";
    };
    let rest = match referer.iter().position(|&b| b == b':') {
        Some(i) if referer[i + 1..].starts_with(b"//") => &referer[i + 3..],
        _ => return b"/",
    };
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    if !rest[..end].eq_ignore_ascii_case(host.trim_ascii()) {
        return b"/";
    }
    let path = &rest[end..];
    let path = &path[..path.iter().position(|&b| b == b'#').unwrap_or(path.len())];
    challenge::return_or_root(path)
}

#[cfg(test)]
#[path = "respond_tests.rs"]
mod tests;
