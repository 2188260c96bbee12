//! The gate: one request's whole job, in safe Rust, run by nginx (through
//! the C ABI) and by replay alike.
//!
//! ```text
//!            Incoming (method, URI, client, headers, TLS facts)
//!               │
//!   Location ──►│ 1 strip     the strip set over the headers: indices to
//!   (one per    │             clear, entries matched, entries nginx cannot
//!   access{})   │             remove (-> Refused)
//!               │ 2 clients   the request observed in the client memory
//!               │             (address prefix × head fingerprint): what
//!               │             the client did across requests, the
//!               │             memory's cookie (clients.rs)
//!               │ 3 fleet     the request's JA4 and headers key looked
//!               │             up in the fleet's signals snapshot
//!               │ 4 rules     site rules before scoring (a match may
//!               │             end the request unscored)
//!               │ 5 score     the scorer's models (or another engine's
//!               │             scores: the legacy Lua engine's)
//!               │ 6 decide    refused, answer, or the policy: verified
//!               │             bots, clearance, models, mode, allow list;
//!               │             unscored under fail_closed -> Unavailable;
//!               │             then the client's behaviour (clients.rs:
//!               │             `behaviour_crawl`, never a block alone)
//!               │ 7 rules     site rules with the scores and the
//!               │             decision
//!               │ 8 respond   the exit: a status, the challenge page or a
//!               │             problem document, the answer's cookie and
//!               │             redirect (respond.rs); a challenge's
//!               │             outcome counted in the client's record
//!               │ 9 texts     score header, variables, log line
//!               ▼
//!            Effects: everything nginx must do (and replay reports)
//! ```
//!
//! [`run`] is the pipeline; `stages.rs` holds one function per stage, each
//! reading the [`Location`] and the [`Incoming`] and adding to the state the
//! next stage reads. Where the later work slots in:
//! - **Site rules** (issue 32): the location's compiled rules, run by
//!   `rules::before` (before scoring: a rule may end the request without
//!   scoring it) and `rules::after` (with the scores and the policy's
//!   decision); a rule says pass, allow, log, challenge or block, and its
//!   name and tag reach the variables, the decision line and replay.
//! - **The challenge's exits** (issue 31): `respond.rs`, called by
//!   `stages::respond`: the page for a request that may get it, an
//!   `application/problem+json` document (`Exit::Page` with that type) for
//!   one that must not (a body, a `fetch()`, an API call), the answer's
//!   cookie and the signed return hop that counts attempts, the
//!   "cookies are needed" and no-JS wait pages. A clearance is bound to
//!   the connection's TLS facts ([`Incoming::http`]'s `tls()`: JA4 and
//!   family), the address prefix and the User-Agent. The cookie is
//!   judged once per request, on first need, into the state
//!   (`state::Cookie`): the policy, a challenging rule and the exits read
//!   that verdict and its binding instead of opening the cookie again.
//! - **Fleet signals** (issue 33): `stages::fleet`, before the rules (a
//!   rule before scoring may read the signals), looks the request's JA4
//!   and headers key up in the location's snapshot (`signals::Live`: one
//!   atomic load); rules read the counts, `$edgeguard_fp_*` carry them.
//!
//! Nothing here allocates once a [`Scratch`] has grown to the largest
//! request seen (`tests/access_alloc.rs` and the other dhat tests).

#![forbid(unsafe_code)]

mod blocked;
mod clients;
mod effects;
mod location;
mod policy;
mod request;
mod respond;
mod rules;
mod scratch;
mod seen;
mod stages;
mod state;

pub use effects::{Effects, Exit, RuleEffect, Vars, CLIENT_VARS, FP_VARS};
pub use location::{Location, Models};
pub use policy::{Decision, Policy};
pub use request::{Given, Incoming, Job, Misuse};
pub use scratch::{Scratch, LOCATION_CAP};
pub use seen::{ClientSeen, CookieSeen};
pub use stages::count;

/// Runs `job` on `req` under `loc` at `now` (Unix seconds: nginx's
/// `ngx.time()`, replay's recorded time), in `scratch`'s buffers. Never
/// allocates once `scratch` has grown to fit (it grows to the largest
/// request seen).
pub fn run<'a>(
    loc: &'a Location,
    req: &Incoming<'_>,
    job: Job,
    now: u64,
    scratch: &'a mut Scratch,
) -> Result<Effects<'a>, Misuse> {
    if req
        .work()
        .and_then(|g| g.scores)
        .is_some_and(|s| s.len() != loc.model_count())
    {
        return Err(Misuse::ScoreCount);
    }
    scratch.fit(loc, req);
    let mut state = stages::strip(loc, req, job, scratch);
    // A request a trusted hop relayed is judged as the client sent it to
    // the hop; the buffer is the scratch's, lent for the run.
    let mut hop = std::mem::take(&mut scratch.hop);
    let relayed = match job {
        Job::Access => relay(loc, req, &mut hop),
        _ => None,
    };
    let judged = relayed.map(|r| req.judged(r.http));
    let req_for_stages = judged.as_ref().unwrap_or(req);
    let warning = relayed
        .filter(|r| r.realip_missing)
        .map(|_| crate::hop::REALIP_WARNING);
    if job == Job::Access {
        let req = req_for_stages;
        // Extracted once, when the fleet lookup or the scorer needs the
        // features; the scorer and the reasons read the same vector.
        let mut features = None;
        let now_ms = req.time_ms(now);
        clients::observe(loc, req, now_ms, scratch, &mut state);
        stages::fleet(loc, req, now, &mut features, &mut state);
        if rules::before(loc, req, now, scratch, &mut state) {
            stages::score(loc, req, &mut features, scratch, &mut state);
            stages::decide(loc, req, now, scratch, &mut features, &mut state);
            clients::judge(loc, req, &mut state);
            rules::after(loc, req, now, scratch, &mut state);
        }
        stages::respond(loc, req, now, scratch, &mut state);
        clients::outcome(loc, now_ms, &state);
    }
    if job == Job::Score {
        score_alone(loc, req, scratch, &mut state);
    }
    scratch.hop = hop;
    let mut effects = stages::texts(loc, req, now, scratch, state);
    effects.warning = warning;
    Ok(effects)
}

/// The score job (`score()`): the score stage alone, on the request as
/// sent; nothing is decided.
fn score_alone(
    loc: &Location,
    req: &Incoming<'_>,
    scratch: &mut Scratch,
    state: &mut state::State,
) {
    stages::score(loc, req, &mut None, scratch, state);
}

/// `req` as a trusted hop relayed it, when the location has a hop that
/// `req`'s peer is (the client's headers copied into `buf`): what the
/// access job judges, and what the fleet signals count (replay).
pub fn relay<'b>(
    loc: &Location,
    req: &Incoming<'b>,
    buf: &'b mut crate::headers::HeaderBuf,
) -> Option<crate::hop::Relayed<'b>> {
    loc.hop
        .as_ref()?
        .relay(req.http(), req.headers(), req.peer(), buf)
}

#[cfg(test)]
mod tests;
