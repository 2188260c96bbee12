//! The client memory in the gate: the `clients` stage observes each
//! request in the memory and reads back what its client did across
//! requests (for rules, variables and the decision); `judge` turns a
//! crawl's behaviour into the `behaviour_crawl` reason; `outcome` counts
//! what became of a challenge (docs/behaviour.md).
//!
//! A client is the request's (real: a trusted hop's relayed) address at
//! two widths, crossed with a fingerprint of its head: the `User-Agent`
//! and, over TLS, the JA4. Both records live in one bucket
//! (`ClientMemory::observe_pair`): one trip to memory a request.

use std::hash::Hasher;

use siphasher::sip::SipHasher13;

use super::location::Location;
use super::request::Incoming;
use super::scratch::Scratch;
use super::seen::{ClientSeen, CookieSeen};
use super::state::State;
use crate::challenge::cookie_values;
use crate::challenge::AnswerResult;
use crate::clients::{arrival, cookie, Challenge, ClientView, Event, Fetch};
use crate::config::Behaviour;
use crate::features::reasons::Id;
use crate::features::Grade;
use crate::net::addr_from_text;
use crate::outcome::Outcome;

/// The client's fingerprint: the `User-Agent` and the JA4, hashed (the
/// memory hashes it again with its secret key; this hash only makes one
/// slice of two).
fn fingerprint(user_agent: &[u8], ja4: &[u8]) -> [u8; 8] {
    let mut h = SipHasher13::new_with_keys(0, 0);
    h.write(user_agent);
    h.write_u8(0xff);
    h.write(ja4);
    h.finish().to_le_bytes()
}

/// The `clients` stage: observes the request in the memory at `now_ms`
/// and keeps both views in the state; on a navigation without the
/// memory's cookie (with `client_cookie`), writes the cookie to set.
pub(super) fn observe(
    loc: &Location,
    req: &Incoming<'_>,
    now_ms: u64,
    scratch: &mut Scratch,
    s: &mut State,
) {
    let Some(c) = &loc.clients else { return };
    if s.action == Outcome::Refused {
        return;
    }
    let http = req.http();
    let Some(addr) = addr_from_text(http.client_addr()) else {
        return;
    };
    let (mut ua, mut dest, mut accept) = (None, None, None);
    let (mut site, mut referer) = (None, None);
    let mut returned = false;
    let key = c.memory.cookie_key();
    for (name, value) in http.headers() {
        if name.eq_ignore_ascii_case(b"user-agent") {
            ua.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"sec-fetch-dest") {
            dest.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"accept") {
            accept.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"sec-fetch-site") {
            site.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"referer") {
            referer.get_or_insert(value);
        } else if !returned && name.eq_ignore_ascii_case(b"cookie") {
            returned = cookie_values(value, cookie::NAME.as_bytes()).any(|v| {
                // A recorded request's value is what the recorder found
                // (the log keeps no value): replay takes that verdict.
                (http.is_from_log() && v == cookie::RECORDED_VALID)
                    || cookie::valid(&key, v, now_ms / 1000)
            });
        }
    }
    let fetch = Fetch::classify(dest, accept, http.uri());
    let issued = c.cookie && fetch == Fetch::Navigation && !returned;
    let seen = ClientSeen {
        host: ClientView::default(),
        network: ClientView::default(),
        cookie: match (returned, issued) {
            (true, _) => CookieSeen::Returned,
            (false, true) => CookieSeen::Issued,
            (false, false) => CookieSeen::None,
        },
        addr,
        fingerprint: fingerprint(ua.unwrap_or_default(), http.tls().map_or(&[], |t| t.ja4())),
    };
    let event = Event {
        fetch,
        path: http.uri(),
        cookie_returned: returned,
        cookie_issued: issued,
        challenge: None,
        direct: fetch == Fetch::Navigation && arrival::direct(site, referer),
    };
    let [host, network] = seen.keys();
    // Replay's second run of a request a rule decided (rules off: what
    // the model alone would have done) reads what the first observed.
    let views = if scratch.rules_on {
        c.memory
            .observe_pair(&host, &network, &event, req.request_id(), now_ms)
    } else {
        c.memory.view_pair(&host, &network, now_ms)
    };
    // Busy (the bucket stayed locked): the request goes on unobserved.
    let Some([h, n]) = views else {
        return;
    };
    if issued && scratch.rules_on {
        s.set_cookie_len = cookie::set_cookie(
            &key,
            now_ms / 1000,
            req.is_secure(),
            &mut scratch.set_cookie,
        );
    }
    s.client = Some(addr);
    s.clients = Some(ClientSeen {
        host: h,
        network: n,
        ..seen
    });
}

/// Whether a view looks like a crawl: documents only (not one
/// sub-resource fetched, nor a challenge solved) for at least
/// `navigations` pages in the window, or twice as many when the client
/// sent the memory's cookie back and most of its navigations came from
/// links. The room is for a person with a warm cache and long-lived
/// assets, who may fetch documents only for a while, and who clicks
/// through the site; a crawler's cookie jar keeps the cookie too, but a
/// head copied from a typed URL arrives from nowhere on every page
/// (`clients::arrival`). Past the count the challenge, which a person
/// solves, is the price. Monotone: one more navigation from nowhere never
/// raises the count a client is judged at.
pub(super) fn crawls(v: &ClientView, navigations: u32) -> bool {
    let needed = if v.cookies_returned > 0 && v.mostly_linked() {
        navigations.saturating_mul(2)
    } else {
        navigations
    };
    v.navigations >= needed && v.subresources() == 0 && v.challenges_solved == 0
}

/// After the policy: a client whose host or network record looks like a
/// crawl gets the `behaviour_crawl` reason (ambiguous: behaviour alone
/// never blocks). A request nothing else flagged is then challenged (a
/// navigation, with a challenge configured, under `behaviour =
/// "challenge"`) or logged. Verified bots, a valid clearance, the allow
/// list and what the policy did not judge are left alone.
pub(super) fn judge(loc: &Location, req: &Incoming<'_>, s: &mut State) {
    let Some(c) = &loc.clients else { return };
    let Some(seen) = &s.clients else { return };
    if c.behaviour == Behaviour::Off
        || s.decision.clearance.is_accepted()
        || !matches!(
            s.action,
            Outcome::Pass | Outcome::Log | Outcome::Challenge | Outcome::Block
        )
        || !(crawls(&seen.host, c.navigations) || crawls(&seen.network, c.navigations))
    {
        return;
    }
    s.decision.reasons = s.decision.reasons.with(Id::BehaviourCrawl);
    s.decision.grade = s.decision.grade.max(Grade::Ambiguous);
    if s.action == Outcome::Pass {
        let page = loc
            .policy
            .challenge()
            .is_some_and(|ch| ch.response.wants_page(req.http()));
        s.action = match c.behaviour {
            Behaviour::Challenge if page => Outcome::Challenge,
            _ => Outcome::Log,
        };
        s.decision.action = s.action;
    }
}

/// After the exit: counts a challenge served, solved or failed in the
/// client's records.
pub(super) fn outcome(loc: &Location, now_ms: u64, s: &State) {
    let (Some(c), Some(seen)) = (&loc.clients, &s.clients) else {
        return;
    };
    let what = match (s.action, s.answer) {
        (Outcome::Challenge, _) => Challenge::Served,
        (_, Some(AnswerResult::Solved)) => Challenge::Solved,
        (_, Some(AnswerResult::Failed(_))) => Challenge::Failed,
        _ => return,
    };
    let [host, network] = seen.keys();
    let _ = c.memory.challenge_pair(&host, &network, what, now_ms);
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
