//! What the gate's stages found so far about one request ([`State`]),
//! and where its exit's bytes lie in the scratch ([`BodyParts`]): the
//! leaf both the stages and the challenge's exits write into.

use std::net::IpAddr;

use super::effects::Exit;
use super::policy::Decision;
use super::seen::ClientSeen;
use crate::challenge::{AnswerResult, Binding, Challenge, Clearance};
use crate::config::text::Span;
use crate::features::Request;
use crate::outcome::Outcome;
use crate::scorer::ScoreError;
use crate::signals::live::Lookup;

/// What the stages found so far.
pub(super) struct State {
    pub(super) action: Outcome,
    pub(super) clear_len: usize,
    pub(super) matched: usize,
    /// What the metrics count as removed: the matched entries, or on a
    /// refusal only those another engine removed before it found the rest.
    pub(super) removed: usize,
    pub(super) unremovable: usize,
    pub(super) scored: bool,
    pub(super) score_error: Option<ScoreError>,
    /// The client's address, parsed when the policy reads it.
    pub(super) client: Option<IpAddr>,
    pub(super) decision: Decision,
    /// The site rule that decided the request (`rules.rs`).
    pub(super) rule: Option<Hit>,
    pub(super) answer: Option<AnswerResult>,
    pub(super) exit: Exit<'static>,
    /// What the page or the answer wrote into the scratch's body.
    pub(super) body: BodyParts,
    /// What the fleet's snapshot knows of the request's keys (none: no
    /// snapshot in force for the location).
    pub(super) fleet: Option<Lookup>,
    /// What the client memory holds of the client (none: no memory, or
    /// the request went on without it).
    pub(super) clients: Option<ClientSeen>,
    /// The memory's `Set-Cookie` in the scratch's `set_cookie` (0: none).
    pub(super) set_cookie_len: usize,
    /// The clearance cookie, judged once for every stage that reads it.
    pub(super) cookie: Cookie,
}

/// The request's clearance cookie and binding, each worked out at most
/// once per run: the policy, a challenging rule and the challenge's exits
/// all read them, and judging a cookie costs a SHA-256 of the User-Agent
/// and an HMAC. Judged on first need, not before: a request a rule or the
/// strip ends first never pays for it.
///
/// Every caller gives the same client address (the request's, parsed), so
/// the first answer holds for the whole run.
#[derive(Default)]
pub(super) struct Cookie {
    clearance: Option<Clearance>,
    binding: Option<Binding>,
}

impl Cookie {
    /// What binds a token to this request's client.
    pub(super) fn binding(
        &mut self,
        ch: &Challenge,
        req: &Request<'_>,
        client: Option<IpAddr>,
    ) -> Binding {
        *self
            .binding
            .get_or_insert_with(|| ch.binding_of(req, client))
    }

    /// What the request's clearance cookie says: absent, valid (and what
    /// it proves), or why it was refused (malformed, forged, expired,
    /// another client's).
    pub(super) fn clearance(
        &mut self,
        ch: &Challenge,
        req: &Request<'_>,
        client: Option<IpAddr>,
        now: u64,
    ) -> Clearance {
        if let Some(c) = self.clearance {
            return c;
        }
        let binding = &mut self.binding;
        let c = ch.clearance_bound(req, now, || {
            *binding.get_or_insert_with(|| ch.binding_of(req, client))
        });
        self.clearance = Some(c);
        c
    }
}

/// The site rule that decided a request, and the stage it ran in
/// (`rules.rs` runs the stages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) index: usize,
    pub(super) action: crate::rules::Action,
    pub(super) before_scoring: bool,
}

/// Where the exit's bytes lie in the scratch's body.
#[derive(Clone, Copy, Default)]
pub(super) enum BodyParts {
    #[default]
    None,
    /// A page, or (`problem`) a problem document, and its `Retry-After`.
    Page {
        body: Span,
        problem: bool,
        retry_after: Option<Span>,
    },
    /// A redirect's `Location` and `Set-Cookie` (empty: none).
    Answer { set_cookie: Span, location: Span },
    /// A blocked request's page, or (`problem`) problem document, and its
    /// `Edgeguard-Reference` (`blocked.rs`); or, when the request gave no
    /// id, where in the body the caller inserts one (`id_at`).
    Blocked {
        body: Span,
        problem: bool,
        reference: Span,
        id_at: Option<usize>,
    },
}
