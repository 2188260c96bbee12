//! What the gate's stages found so far about one request ([`State`]),
//! and where its exit's bytes lie in the scratch ([`BodyParts`]): the
//! leaf both the stages and the challenge's exits write into.

use std::net::IpAddr;

use super::action::Action;
use super::effects::Exit;
use super::policy::Decision;
use super::seen::Seen;
use crate::config::text::Span;
use crate::metrics::AnswerResult;
use crate::scorer::ScoreError;
use crate::signals::live::Lookup;

/// What the stages found so far.
pub(super) struct State {
    pub(super) action: Action,
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
    pub(super) clients: Option<Seen>,
    /// The memory's `Set-Cookie` in the scratch's `set_cookie` (0: none).
    pub(super) set_cookie_len: usize,
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
