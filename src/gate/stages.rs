//! The gate's stages, in the order [`super::run`] calls them. Each reads
//! the location and the request and adds to the [`State`]; the last,
//! [`texts`], turns the state into [`Effects`].

use super::blocked::{blocked, REFERENCE_HEADER};
use super::effects::{Effects, Exit, RuleEffect, Vars};
use super::location::Location;
use super::policy::Decision;
use super::request::{Incoming, Job};
use super::respond::{self, PAGE_TYPE, PROBLEM_TYPE};
use super::scratch::Scratch;
use super::state::{BodyParts, Cookie, Hit, State};
use crate::challenge::AnswerResult;
use crate::challenge::Clearance;
use crate::config::text::{self, Cursor, Line, Span};
use crate::config::Engine;
use crate::features::{self, FeatureVector, Grade, Reasons};
use crate::metrics::{Registry, Screening};
use crate::net::addr_from_text;
use crate::outcome::Outcome;
use crate::signals::live::Lookup;
use crate::verified::Verdict;

/// 1: the strip set over the headers (another engine's strip counted
/// first). Entries nginx cannot remove refuse the request.
pub(super) fn strip(loc: &Location, req: &Incoming<'_>, job: Job, scratch: &mut Scratch) -> State {
    let mut s = State {
        action: Outcome::Pass,
        clear_len: 0,
        matched: 0,
        removed: 0,
        unremovable: 0,
        scored: false,
        score_error: None,
        client: None,
        decision: Decision::new(Outcome::Pass, None),
        rule: None,
        answer: None,
        exit: Exit::Continue,
        body: BodyParts::None,
        fleet: None,
        cookie: Cookie::default(),
        clients: None,
        set_cookie_len: 0,
    };
    if let Some(g) = req.work() {
        s.matched = g.removed;
        s.removed = g.removed;
        s.unremovable = g.unremovable;
        if g.unremovable > 0 {
            s.action = Outcome::Refused;
            s.exit = Exit::Status(400);
            return s;
        }
    }
    let set = match job {
        Job::Access | Job::Strip => loc.strip.as_ref(),
        Job::StripList => loc.list.as_ref(),
        Job::Record | Job::Score => None,
    };
    if let Some(set) = set {
        let found = set.find_internal(req.headers(), &mut scratch.clear);
        s.matched += found.matched;
        if found.unremovable > 0 {
            // Nothing is removed: the removed count stays the other engine's.
            s.unremovable = found.unremovable;
            s.action = Outcome::Refused;
            s.exit = Exit::Status(400);
            return s;
        }
        s.clear_len = found.distinct;
    }
    s.removed = s.matched;
    s
}

/// 2: the fleet signals: the request's JA4 and headers key looked up in
/// the location's snapshot, when it has one that is fresh at `now`. The
/// features are extracted into `features` for the headers key (with the
/// scorer's order table, so that scoring reads the same vector). The
/// worker's refresh thread starts here, on its first request.
pub(super) fn fleet<'r>(
    loc: &Location,
    req: &Incoming<'r>,
    now: u64,
    features: &mut Option<FeatureVector<'r>>,
    s: &mut State,
) {
    let Some(live) = &loc.signals else { return };
    if s.action == Outcome::Refused {
        return;
    }
    live.start();
    let Some(snapshot) = live.current(now) else {
        return;
    };
    let v = features.insert(FeatureVector::new());
    match &loc.scorer {
        Some(scorer) => scorer.extract(req.http(), v),
        None => features::extract(req.http(), v),
    }
    s.fleet = Some(Lookup::of_request(&snapshot, req.http(), v));
}

/// 4: the scores, the location's scorer's or the ones another engine gave
/// (from `features`, extracted here unless the fleet stage did; the
/// decide stage reads the reasons from them). A refused request is scored
/// too: the metrics count its scores, as they did when nginx scored
/// before it looked at the strip.
pub(super) fn score<'r>(
    loc: &Location,
    req: &Incoming<'r>,
    features: &mut Option<FeatureVector<'r>>,
    scratch: &mut Scratch,
    s: &mut State,
) {
    let out = &mut scratch.scores[..loc.model_count()];
    if let Some(g) = req.work() {
        if let Some(given) = g.scores {
            out.copy_from_slice(given);
            s.scored = true;
        }
        return;
    }
    if let Some(scorer) = &loc.scorer {
        let v = features.get_or_insert_with(|| {
            let mut v = FeatureVector::new();
            scorer.extract(req.http(), &mut v);
            v
        });
        match scorer.score_features(v, out) {
            Ok(()) => s.scored = true,
            Err(e) => s.score_error = Some(e),
        }
    }
}

/// 5: refused (by the strip), an answer to the challenge, or the policy's
/// decision with its reasons (read from `features`, extracted here for a
/// flagged request another engine scored); unscored under `fail_closed`:
/// unavailable.
pub(super) fn decide<'r>(
    loc: &Location,
    req: &Incoming<'r>,
    now: u64,
    scratch: &Scratch,
    features: &mut Option<FeatureVector<'r>>,
    s: &mut State,
) {
    if s.action == Outcome::Refused {
        return;
    }
    let policy = &loc.policy;
    if policy.answers(req.http()) {
        s.action = Outcome::Answer;
        return;
    }
    // Parsed only when the policy reads it (an allow list, the bots, the
    // challenge): without them it decides alike with or without one.
    if policy.reads_client() {
        s.client = addr_from_text(req.http().client_addr());
    }
    let scores = s.scored.then(|| &scratch.scores[..loc.model_count()]);
    let reasons = || {
        Reasons::of(features.get_or_insert_with(|| {
            let mut v = FeatureVector::new();
            match &loc.scorer {
                Some(scorer) => scorer.extract(req.http(), &mut v),
                None => features::extract(req.http(), &mut v),
            }
            v
        }))
    };
    let clearance = policy.challenge().map_or(Clearance::Absent, |ch| {
        s.cookie.clearance(ch, req.http(), s.client, now)
    });
    match policy.decide_judged(scores, req.http(), s.client, clearance, reasons) {
        Some(d) => {
            s.action = d.action;
            s.decision = d;
        }
        None => s.action = Outcome::Unavailable,
    }
}

/// 7: how the request ends: the block status (a block rule's own), or the
/// challenge's exits (`respond.rs`): the page, a problem document for a
/// request that must not get it, the answer's redirect and cookie.
pub(super) fn respond(
    loc: &Location,
    req: &Incoming<'_>,
    now: u64,
    scratch: &mut Scratch,
    s: &mut State,
) {
    s.exit = match s.action {
        Outcome::Block => match s.rule {
            Some(Hit {
                action: crate::rules::Action::Block(status),
                ..
            }) => blocked(loc, req, status, scratch, s),
            // Not blocked after all: pointed to the challenge, which it
            // cannot run here, by a problem document. Its own outcome, so
            // the decision line and the counts say a person may pass.
            _ if respond::problem_for_block(loc, s.decision.grade) => {
                s.action = Outcome::ChallengeRequired;
                respond::challenge(loc, req, now, scratch, s)
            }
            _ => blocked(loc, req, loc.policy.status(), scratch, s),
        },
        Outcome::Unavailable if respond::problem_for_block(loc, s.decision.grade) => {
            respond::challenge(loc, req, now, scratch, s)
        }
        Outcome::Unavailable => Exit::Status(503),
        Outcome::Refused => Exit::Status(400),
        Outcome::Challenge | Outcome::Answer => respond::challenge(loc, req, now, scratch, s),
        _ => Exit::Continue,
    };
}

/// 8: the texts nginx sets and logs, and the effects. Only a request that
/// was scored, flagged or claims a verified bot gets the score header and
/// the variables; a flagged one or a bot claim the decision line.
pub(super) fn texts<'a>(
    loc: &'a Location,
    req: &Incoming<'_>,
    now: u64,
    scratch: &'a mut Scratch,
    s: State,
) -> Effects<'a> {
    let n = loc.model_count();
    // On a scored request the score header's exact spelling is left to the
    // caller's setting of it, which replaces it.
    let mut clear_len = s.clear_len;
    if s.scored && !loc.score_header.is_empty() {
        let clear = &mut scratch.clear[..clear_len];
        clear_len = without(req.headers(), clear, loc.score_header.as_bytes());
    }
    let bot = match (s.decision.bot, loc.policy.verified_bots()) {
        (Some(v), Some(bots)) => Some((v, bots.name(v.bot()).unwrap_or_default())),
        _ => None,
    };
    let acts = !matches!(
        s.action,
        Outcome::Refused | Outcome::Unavailable | Outcome::Answer
    ) && (s.scored || s.action.flagged() || bot.is_some() || s.rule.is_some());
    let spans = if scratch.texts {
        write_texts(loc, req, now, scratch, &s, bot, acts)
    } else {
        Spans::default()
    };
    let scratch = &*scratch;
    let text = &scratch.text[..spans.len];
    let at = |sp: Span| &text[sp.offset..sp.offset + sp.len];
    let vars = if acts && loc.vars && scratch.texts {
        Vars {
            loc: Some(loc),
            text,
            values: if s.scored { &scratch.values[..n] } else { &[] },
            action: s.action,
            time: spans.time,
            verified_bot: match bot {
                Some((Verdict::Verified(_), name)) => name.as_bytes(),
                _ => &[],
            },
            rules: loc.rules.is_some(),
            rule: rule_of(loc, s.rule),
            category: match (s.decision.bot, loc.policy.verified_bots()) {
                (Some(Verdict::Verified(i)), Some(b)) => b.category(i).map_or("", |c| c.name()),
                _ => "",
            },
            fleet: loc.signals.is_some(),
            fp_key: s
                .fleet
                .as_ref()
                .and_then(|f| f.answer())
                .map_or("", |(k, _)| k.as_str()),
            fp: spans.fp,
            reasons: loc.reason_vars.then_some((spans.reasons, s.decision.grade)),
            client: loc
                .clients
                .as_ref()
                .map(|_| (spans.client, s.clients.map_or("", |c| c.cookie.as_str()))),
            recorded: None,
        }
    } else {
        Vars::none()
    };
    let exit = exit(
        &s,
        &scratch.body,
        loc.policy.challenge().map(|c| c.pages().csp()),
    );
    Effects {
        action: s.action,
        exit,
        clear: if s.action == Outcome::Refused {
            &[]
        } else {
            &scratch.clear[..clear_len]
        },
        matched: s.matched,
        removed: s.removed,
        unremovable: s.unremovable,
        scores: s.scored.then(|| &scratch.scores[..n]),
        score_error: s.score_error,
        flagged: s
            .decision
            .flagged_by
            .map(|i| (i, loc.policy.threshold(i).unwrap_or(f64::NAN))),
        bot,
        clearance: s.decision.clearance,
        answer: s.answer,
        rule: rule_of(loc, s.rule),
        fleet: s.fleet,
        set_header: spans.header.map(|h| (&*loc.score_header, at(h))),
        vars,
        line: spans.line.map(|(l, level)| (at(l), level)),
        warning: None,
        line_id_at: spans.line_id_at,
        body_id_at: match s.body {
            BodyParts::Blocked { id_at, .. } => id_at,
            _ => None,
        },
        reasons: s.decision.reasons,
        grade: s.decision.grade,
        clients: s.clients,
        // The upstream's answer and a page edgeguard serves (the
        // challenge, a block) carry it; a bare status and a redirect
        // (which sets the clearance) do not.
        set_cookie: match exit {
            Exit::Continue | Exit::Page { .. } => &scratch.set_cookie[..s.set_cookie_len],
            _ => &[],
        },
    }
}

/// The rule that decided a request, as the effects name it.
fn rule_of(loc: &Location, hit: Option<Hit>) -> Option<RuleEffect<'_>> {
    let hit = hit?;
    let m = loc.rules.as_deref()?.matched(hit.index)?;
    Some(RuleEffect {
        index: m.index,
        name: m.name,
        tag: m.tag,
        action: m.action,
        before_scoring: hit.before_scoring,
    })
}

/// Whether a request a rule decided gets the decision line: a rule that
/// logs, blocks or challenges, or one that allowed what the model flagged.
fn rule_logs(s: &State) -> bool {
    match s.rule.map(|h| h.action) {
        Some(crate::rules::Action::Pass) | None => false,
        Some(crate::rules::Action::Allow) => s.decision.flagged_by.is_some() && s.scored,
        Some(_) => true,
    }
}

/// Where [`write_texts`] wrote.
#[derive(Clone, Copy, Default)]
struct Spans {
    header: Option<Span>,
    time: Option<Span>,
    /// `$edgeguard_fp_*`'s values (empty spans: unknown).
    fp: [Span; 6],
    /// `$edgeguard_reasons`' value.
    reasons: Span,
    /// `$edgeguard_client_*`'s values ([`super::CLIENT_VARS`]' order).
    client: [Span; 5],
    line: Option<(Span, u8)>,
    /// Where in the line the caller inserts `$request_id`.
    line_id_at: Option<usize>,
    len: usize,
}

/// The first `Host` header's value (HTTP/2's `:authority` arrives as
/// one), empty without one. Read only for a logged line.
fn host_of<'a>(headers: &[crate::headers::Header<'a>]) -> &'a [u8] {
    headers
        .iter()
        .find(|h| h.name().eq_ignore_ascii_case(b"host"))
        .map_or(b"", |h| h.value())
}

/// Writes a request's texts into the scratch: the refusal's or the
/// answer's line, or (`acts`) the score header's value and each model's
/// within it, `$edgeguard_time`, and the decision line.
fn write_texts(
    loc: &Location,
    req: &Incoming<'_>,
    now: u64,
    scratch: &mut Scratch,
    s: &State,
    bot: Option<(Verdict, &str)>,
    acts: bool,
) -> Spans {
    let http = req.http();
    let about = Line {
        action: s.action.as_str(),
        flagged: None,
        client: http.client_addr(),
        method: http.method(),
        uri: http.uri(),
        bot: None,
        clearance: match s.decision.clearance {
            Clearance::Absent => None,
            c => Some(c.as_str()),
        },
        rule: None,
        verdict: None,
        request_id: req.request_id(),
        host: b"",
    };
    let Scratch {
        text,
        scores,
        values,
        ..
    } = scratch;
    let scores = &scores[..loc.model_count()];
    let mut w = Cursor::new(text);
    let mut out = Spans::default();
    // `Scratch::fit` made the room: a failed write (a wrong bound) leaves
    // its text out rather than cut it.
    match s.action {
        Outcome::Refused => {
            let l = text::write_refused(&mut w, s.unremovable, &about);
            out.line = l.ok().map(|l| (l, loc.refuse_level));
        }
        Outcome::Answer => {
            let (result, reason) = match s.answer {
                Some(AnswerResult::Failed(r)) => ("failed", Some(r.as_str())),
                Some(AnswerResult::Waited) => ("waited", None),
                Some(AnswerResult::CookiesNeeded) => ("cookies_needed", None),
                Some(AnswerResult::Solved) => ("solved", None),
                // The return hop or a start, the cookie back.
                Some(AnswerResult::Problem) | None => ("returned", None),
            };
            out.line = text::write_answer(&mut w, result, reason, &about)
                .ok()
                .map(|l| (l, loc.log_level));
        }
        _ if acts => {
            if s.scored {
                let v = text::write_scores(&mut w, &loc.names, scores, |i, sp| values[i] = sp);
                out.header = v.ok().filter(|_| !loc.score_header.is_empty());
            }
            if loc.vars && loc.screen {
                out.time = w.span(|w| text::write_decimal(w, now)).ok();
            }
            if loc.vars && loc.signals.is_some() {
                if let Some((_, c)) = s.fleet.as_ref().and_then(|f| f.answer()) {
                    out.fp = write_fleet(&mut w, c);
                }
            }
            if let (true, Some(c)) = (loc.vars, &s.clients) {
                out.client = write_client(&mut w, &c.host);
            }
            if loc.reason_vars {
                out.reasons = w
                    .span(|w| text::write_reasons(w, s.decision.reasons))
                    .unwrap_or_default();
            }
            if s.action.flagged() || bot.is_some() || rule_logs(s) {
                let flagged = s
                    .decision
                    .flagged_by
                    .filter(|_| s.scored)
                    .and_then(|i| Some((&*loc.names[i], scores[i], loc.policy.threshold(i)?)));
                let line = Line {
                    flagged,
                    bot: bot.map(|(v, name)| (name.as_bytes(), verdict(v))),
                    rule: rule_of(loc, s.rule).map(|r| (r.name, r.tag)),
                    verdict: (s.decision.grade != Grade::None)
                        .then_some((s.decision.grade, s.decision.reasons)),
                    host: host_of(req.headers()),
                    ..about
                };
                if let Ok((l, id_at)) = text::write_line(&mut w, &line) {
                    out.line = Some((l, loc.log_level));
                    out.line_id_at = id_at;
                }
            }
        }
        _ => {}
    }
    out.len = w.len();
    out
}

/// Writes the answering key's counts as `$edgeguard_fp_*` read them
/// ([`super::FP_VARS`]' order): counts in decimal, shares to three
/// decimals without trailing zeros (`0.05`); the share of solved
/// challenges is empty when none was served. A failed write (not reached:
/// the location's text room holds them) leaves a value empty.
fn write_fleet(w: &mut Cursor<'_>, c: &crate::signals::snapshot::Counts) -> [Span; 6] {
    let mut out = [Span::default(); 6];
    let counts = [c.requests, c.prefixes(), c.user_agents];
    for (slot, n) in out.iter_mut().zip(counts) {
        *slot = w.span(|w| text::write_decimal(w, n)).unwrap_or_default();
    }
    let shares = [
        Some(c.flagged_share()),
        c.solved_share(),
        Some(c.cleared_share()),
    ];
    for (slot, x) in out[3..].iter_mut().zip(shares) {
        if let Some(x) = x {
            *slot = w.span(|w| write_share(w, x)).unwrap_or_default();
        }
    }
    out
}

/// Writes the client's numbers as `$edgeguard_client_*` read them
/// ([`super::CLIENT_VARS`]' order): counts in decimal, the rate to two
/// decimals (`0.35`). A failed write (not reached: the location's text
/// room holds them) leaves a value empty.
fn write_client(w: &mut Cursor<'_>, v: &crate::clients::ClientView) -> [Span; 5] {
    let mut out = [Span::default(); 5];
    for (slot, n) in out.iter_mut().zip([
        v.navigations,
        v.subresources(),
        v.paths,
        v.direct_navigations,
    ]) {
        *slot = w
            .span(|w| text::write_decimal(w, n.into()))
            .unwrap_or_default();
    }
    let hundredths = (f64::from(v.rate).max(0.0) * 100.0).round() as u64;
    out[4] = w
        .span(|w| {
            text::write_decimal(w, hundredths / 100)?;
            w.bytes(b".")?;
            w.bytes(&[
                b'0' + (hundredths / 10 % 10) as u8,
                b'0' + (hundredths % 10) as u8,
            ])
        })
        .unwrap_or_default();
    out
}

/// A share (0 to 1) to three decimals, trailing zeros left out: `0`,
/// `0.05`, `0.125`, `1`.
fn write_share(w: &mut Cursor<'_>, x: f64) -> std::fmt::Result {
    let n = (x.clamp(0.0, 1.0) * 1000.0).round() as u64;
    text::write_decimal(w, n / 1000)?;
    let frac = n % 1000;
    if frac == 0 {
        return Ok(());
    }
    let digits = [frac / 100, frac / 10 % 10, frac % 10].map(|d| b'0' + d as u8);
    let len = if digits[2] != b'0' {
        3
    } else if digits[1] != b'0' {
        2
    } else {
        1
    };
    w.bytes(b".")?;
    w.bytes(&digits[..len])
}

/// The exit of a state, with the bytes the respond stage wrote.
fn exit<'a>(s: &State, body: &'a [u8], csp: Option<&'a str>) -> Exit<'a> {
    let at = |sp: Span| &body[sp.offset..sp.offset + sp.len];
    match (s.exit, s.body) {
        (
            Exit::Status(status),
            BodyParts::Page {
                body: p,
                problem,
                retry_after,
            },
        ) => Exit::Page {
            status,
            content_type: if problem { PROBLEM_TYPE } else { PAGE_TYPE },
            body: at(p),
            extra: match (problem, retry_after) {
                (true, Some(r)) => Some(("Retry-After", at(r))),
                (true, None) => None,
                (false, _) => csp.map(|c| ("Content-Security-Policy", c.as_bytes())),
            },
        },
        (
            Exit::Status(status),
            BodyParts::Answer {
                set_cookie,
                location,
            },
        ) => Exit::Redirect {
            status,
            location: at(location),
            set_cookie: at(set_cookie),
        },
        (
            Exit::Status(status),
            BodyParts::Blocked {
                body: b,
                problem,
                reference,
                id_at,
            },
        ) => Exit::Page {
            status,
            content_type: if problem { PROBLEM_TYPE } else { PAGE_TYPE },
            body: at(b),
            // The caller sets it with the id it inserts.
            extra: id_at.is_none().then(|| (REFERENCE_HEADER, at(reference))),
        },
        (Exit::Status(status), BodyParts::None) => Exit::Status(status),
        _ => Exit::Continue,
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Verified(_) => "verified",
        Verdict::Fake(_) => "fake",
    }
}

/// Compacts `clear` in place, dropping the indices of headers named exactly
/// `keep`; returns the new length.
fn without(headers: &[crate::headers::Header<'_>], clear: &mut [u32], keep: &[u8]) -> usize {
    let mut kept = 0;
    for i in 0..clear.len() {
        let index = clear[i];
        let exact = headers
            .get(index as usize)
            .is_some_and(|h| h.name() == keep);
        if !exact {
            clear[kept] = index;
            kept += 1;
        }
    }
    kept
}

/// Counts one request `engine` handled into `m`: under the Rust engine its
/// time in the gate (`seconds`) and its scores (another engine counts its
/// own), then its outcome with the entries removed and, when it got as far
/// as acting, its clearance and bot claim; an answer's result.
pub fn count(m: &Registry, e: &Effects<'_>, engine: Engine, seconds: f64) {
    if engine == Engine::Rust {
        m.engine_time(Engine::Rust, seconds);
        if let Some(s) = e.scores {
            m.scores(Engine::Rust, s);
        }
    }
    let seen = Screening {
        clearance: e.clearance,
        // A registry made from the location's configuration lists the
        // same bots in the same order; one of another list (a C caller's
        // mix) counts no bot rather than another bot.
        bot: e
            .bot
            .filter(|(v, name)| m.bot_name(v.bot()) == Some(name.as_bytes()))
            .map(|(v, _)| v),
    };
    // The registry counts a bot claim and a clearance only for outcomes that
    // got as far as acting; the legacy engine judges neither.
    m.request(
        engine,
        e.action,
        e.removed,
        (engine == Engine::Rust).then_some(seen),
    );
    if let Some(a) = e.answer {
        m.answer(a);
    }
    m.reasons(e.reasons);
}
