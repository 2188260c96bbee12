//! What one judged request adds to a fleet signals window: its keys and
//! its observation, read from the gate's [`Effects`] as replay ran them
//! (never judged again here). Offline only (`edgeguard signals`, the
//! Kafka fleet), so it lives with replay, and `signals`, which the hot
//! path reads, imports nothing of the gate, metrics or replay.
//!
//! - flagged: a model flagged it (`Effects::flagged`);
//! - challenge: it was served the challenge page (`Outcome::Challenge`) or,
//!   not a navigation, the `challenge_required` problem document
//!   (`Outcome::ChallengeRequired`) — what a client that wants in has to solve;
//! - solved: its answer earned a clearance (`AnswerResult::Solved`), or a
//!   no-JavaScript wait was redeemed (`Waited`, the weaker clearance a
//!   person without JavaScript gets: counted as solved);
//! - cleared: it carried a clearance the gate accepted.
//!
//! Keys: the line's JA4 (when it has one) and the `headers` key of the
//! features [`crate::features::extract`] gives (the extraction the scorer
//! runs; the header order does not depend on a model's order table).

use crate::challenge::AnswerResult;
use crate::features::{extract, FeatureVector};
use crate::gate::Effects;
use crate::net::addr_from_text;
use crate::outcome::Outcome;
use crate::signals::key::{headers_key_of, Kind, KEY_CAP};
use crate::signals::window::{Fold, Obs, Prefix, Window};

use super::seen::Seen;

/// What the effects say of one request, apart from its time and client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// A model flagged it.
    pub flagged: bool,
    /// A challenge was served.
    pub challenge: bool,
    /// A challenge was solved.
    pub solved: bool,
    /// It carried a valid clearance.
    pub cleared: bool,
}

impl Marks {
    /// What `e` comes to.
    pub fn of(e: &Effects<'_>) -> Marks {
        Marks {
            flagged: e.flagged.is_some(),
            challenge: matches!(e.action, Outcome::Challenge | Outcome::ChallengeRequired),
            solved: matches!(e.answer, Some(AnswerResult::Solved | AnswerResult::Waited)),
            cleared: e.clearance.is_accepted(),
        }
    }
}

/// Adds judged requests to a window (or partials). A request of a known
/// key allocates nothing: the features and the key are built on the stack.
pub struct WindowFeed<'w, F: Fold = Window> {
    window: &'w mut F,
    /// The time of a request whose line has none (arrival time).
    clock: fn() -> u64,
    /// Requests added.
    pub requests: u64,
}

impl<'w, F: Fold> WindowFeed<'w, F> {
    /// Adds to `window`; a request without a time of its own is given
    /// `clock()`.
    pub fn new(window: &'w mut F, clock: fn() -> u64) -> WindowFeed<'w, F> {
        WindowFeed {
            window,
            clock,
            requests: 0,
        }
    }

    /// Adds one judged request under each of its keys.
    pub fn add(&mut self, seen: &Seen<'_>) {
        let http = seen.request.http();
        let o = Marks::of(seen.effects);
        let obs = Obs {
            time: seen.time.unwrap_or_else(self.clock),
            prefix: addr_from_text(http.client_addr()).map(Prefix::of),
            user_agent: crate::challenge::user_agent(http),
            flagged: o.flagged,
            challenge: o.challenge,
            solved: o.solved,
            cleared: o.cleared,
        };
        self.requests += 1;
        if let Some(ja4) = seen.ja4 {
            self.window.fold(Kind::Ja4, ja4, &obs);
        }
        let mut v = FeatureVector::new();
        extract(http, &mut v);
        let mut buf = [0; KEY_CAP];
        self.window
            .fold(Kind::Headers, headers_key_of(&v, &mut buf), &obs);
    }
}
