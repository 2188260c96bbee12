//! Site rules (issue 32) as two stages of the pipeline: before scoring (a
//! rule may end the request unscored) and after the policy's decision
//! (with the scores). nginx and replay both run them here, so a rule means
//! the same thing in both by construction. docs/rules.md says what each
//! action does; this is where it is done:
//!
//! | action | before scoring | after the decision |
//! |---|---|---|
//! | `pass` | `pass`, not scored | `pass` (a verified bot stays `verified`) |
//! | `allow` | scored and decided, then never acted on | the same |
//! | `log` | the default decision, the rule logged | the same |
//! | `challenge` | not scored: `challenge` (a navigation), `block` (another request), `cleared` (a valid clearance) | the same |
//! | `block` | not scored: the rule's status | the rule's status |
//!
//! An answer to the challenge and a refusal (internal headers nginx
//! cannot remove) are never ruled: they are edgeguard's own.

use std::net::IpAddr;

use super::location::Location;
use super::request::Incoming;
use super::scratch::Scratch;
use super::state::{Hit, State};
use crate::challenge;
use crate::net::addr_from_text;
use crate::outcome::Outcome;
use crate::rules::{self, BotView, View};
use crate::scorer::MAX_MODELS;

/// Before scoring: the first rule without a score condition the request
/// meets. Returns whether the request goes on to be scored and decided.
pub(super) fn before(
    loc: &Location,
    req: &Incoming<'_>,
    now: u64,
    scratch: &mut Scratch,
    s: &mut State,
) -> bool {
    let Some(rules) = loc.rules.as_deref() else {
        return true;
    };
    if !scratch.rules_on || s.action == Outcome::Refused || loc.policy.answers(req.http()) {
        return true;
    }
    let reads = rules.reads_before();
    let http = req.http();
    let client = if reads.client || reads.bot {
        addr_from_text(http.client_addr())
    } else {
        None
    };
    let bot = if reads.bot {
        loc.policy.verified_bots().and_then(|b| {
            let v = b.judge(challenge::user_agent(http), client)?;
            BotView::of(b, v)
        })
    } else {
        None
    };
    let view = view(req, client, bot, &[], s);
    let Some(m) = rules.before_scoring(&view, &mut scratch.rules) else {
        return true;
    };
    s.rule = Some(Hit {
        index: m.index,
        action: m.action,
        before_scoring: true,
    });
    match m.action {
        rules::Action::Allow | rules::Action::Log => true,
        rules::Action::Pass => {
            s.action = Outcome::Pass;
            false
        }
        rules::Action::Block(_) => {
            s.action = Outcome::Block;
            false
        }
        rules::Action::Challenge => {
            let client = client.or_else(|| addr_from_text(http.client_addr()));
            challenge_or_block(loc, req, client, now, s);
            false
        }
    }
}

/// After the decision: a before-scoring `allow` applied, or else the first
/// rule with a score condition the scored request meets.
pub(super) fn after(
    loc: &Location,
    req: &Incoming<'_>,
    now: u64,
    scratch: &mut Scratch,
    s: &mut State,
) {
    let Some(rules) = loc.rules.as_deref() else {
        return;
    };
    if !scratch.rules_on {
        return;
    }
    if let Some(hit) = s.rule {
        if hit.action == rules::Action::Allow {
            allow(s);
        }
        return;
    }
    if !s.scored
        || !rules.has_after_scoring()
        || matches!(s.action, Outcome::Refused | Outcome::Answer)
    {
        return;
    }
    let http = req.http();
    let client = s.client.or_else(|| addr_from_text(http.client_addr()));
    let bot = match (s.decision.bot, loc.policy.verified_bots()) {
        (Some(v), Some(b)) => BotView::of(b, v),
        _ => None,
    };
    let n = loc.model_count();
    let scores: &[f64] = match &loc.rule_scores {
        None => &scratch.scores[..n],
        Some(map) => {
            for (slot, &i) in scratch.rule_scores.iter_mut().zip(map.iter()) {
                *slot = scratch
                    .scores
                    .get(i)
                    .filter(|_| i < n)
                    .copied()
                    .unwrap_or(f64::NAN);
            }
            &scratch.rule_scores[..map.len().min(MAX_MODELS)]
        }
    };
    let view = view(req, client, bot, scores, s);
    let Some(m) = rules.after_scoring(&view, &mut scratch.rules) else {
        return;
    };
    s.rule = Some(Hit {
        index: m.index,
        action: m.action,
        before_scoring: false,
    });
    match m.action {
        rules::Action::Pass => {
            if s.action != Outcome::Verified {
                s.action = Outcome::Pass;
            }
        }
        rules::Action::Allow => allow(s),
        rules::Action::Log => {}
        rules::Action::Challenge => challenge_or_block(loc, req, client, now, s),
        rules::Action::Block(_) => s.action = Outcome::Block,
    }
}

/// `allow`: whatever the decision would have done to the request, it is
/// let through (a pass or a verified bot stays what it is).
fn allow(s: &mut State) {
    if !matches!(
        s.action,
        Outcome::Pass | Outcome::Verified | Outcome::Answer | Outcome::Refused
    ) {
        s.action = Outcome::Allow;
    }
}

/// `challenge`: a valid clearance passes (`cleared`), a request the
/// location's `challenge_response` gives the page gets it, another is
/// blocked (a body or a `fetch()` cannot run a page), as the policy treats
/// a flagged request in mode `challenge`.
fn challenge_or_block(
    loc: &Location,
    req: &Incoming<'_>,
    client: Option<IpAddr>,
    now: u64,
    s: &mut State,
) {
    // The options refuse a challenging rule without the challenge's keys.
    let Some(ch) = loc.policy.challenge() else {
        s.action = Outcome::Block;
        return;
    };
    let clearance = s.cookie.clearance(ch, req.http(), client, now);
    s.decision.clearance = clearance;
    s.action = if clearance.is_accepted() {
        Outcome::Cleared
    } else if ch.response.wants_page(req.http()) {
        Outcome::Challenge
    } else {
        Outcome::Block
    };
}

/// The request as rules read it; no copy.
fn view<'a>(
    req: &Incoming<'a>,
    client: Option<IpAddr>,
    bot: Option<BotView<'a>>,
    scores: &'a [f64],
    s: &State,
) -> View<'a> {
    View {
        bot,
        scores,
        fleet: s.fleet,
        clients: s.clients.map(|c| c.host),
        ..View::with_client(req.http(), req.headers(), client)
    }
}
