//! C ABI for the texts of a decision: the score header's value, the
//! per-model variables and the decision line, which the Lua shim sets and
//! logs as they are (`crate::config::text` formats them as C's `printf`
//! did in the shim). `edgeguard_access` writes them for the Rust engine;
//! `edgeguard_policy_text` for given scores and decision (the legacy Lua
//! engine's).

use super::challenge::edgeguard_bot;
use super::config::{edgeguard_action, edgeguard_decision, edgeguard_policy};
use super::edgeguard_result;
use super::scorer::edgeguard_request;
use crate::config::text::{self, Cursor, Line, Span};
use crate::scorer::MAX_MODELS;

/// A part of the caller's text buffer: `len` bytes from `offset`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct edgeguard_span {
    /// Where it starts, from the buffer's first byte.
    pub offset: usize,
    /// How many bytes.
    pub len: usize,
}

/// Where the texts of one decision lie in the caller's text buffer. Every
/// span is empty when its text is not written.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_text {
    /// The score header's value: `name=%.9g; name=%.9g` in model order (C's
    /// `printf` formats). Written for a scored request.
    pub scores: edgeguard_span,
    /// The decision line, for a request that is flagged (the actions
    /// `Block`, `Log`, `Challenge`, `Cleared`) or claims a verified bot:
    /// `edgeguard action=A model=M score=%.6f threshold=%.6f client=C
    /// method=M uri="U"` (no model part when no model flagged), then
    /// ` bot=B verdict=verified|fake` for a bot claim.
    pub line: edgeguard_span,
    /// `values[i]`: model `i`'s score as `%.9g` (inside `scores`), for each
    /// score written.
    pub values: [edgeguard_span; 64],
}

const _: () = assert!(
    MAX_MODELS == 64,
    "edgeguard_text.values holds MAX_MODELS spans"
);

impl edgeguard_text {
    /// No text.
    pub(super) const EMPTY: edgeguard_text = edgeguard_text {
        scores: edgeguard_span { offset: 0, len: 0 },
        line: edgeguard_span { offset: 0, len: 0 },
        values: [edgeguard_span { offset: 0, len: 0 }; 64],
    };
}

fn span(s: Span) -> edgeguard_span {
    edgeguard_span {
        offset: s.offset,
        len: s.len,
    }
}

/// What the texts are made of, besides the policy.
pub(super) struct Parts<'a> {
    pub(super) scores: Option<&'a [f64]>,
    pub(super) decision: &'a edgeguard_decision,
    pub(super) bot: edgeguard_bot,
    pub(super) label: &'a [u8],
    pub(super) method: &'a [u8],
    pub(super) uri: &'a [u8],
    pub(super) client: &'a [u8],
}

/// The buffer size the texts of a request with these parts need at most.
fn room(policy: &edgeguard_policy, p: &Parts<'_>) -> usize {
    policy
        .text_room()
        .saturating_add(p.method.len())
        .saturating_add(p.uri.len())
        .saturating_add(p.client.len())
}

/// Writes the texts into `buf`, which must hold [`room`] bytes, and their
/// spans into `out`, in place (the struct is a kilobyte: no copies of it
/// on every request); `out` is expected empty
/// ([`edgeguard_text::EMPTY`]). `BufferTooSmall` (nothing written) for a
/// short `buf`. Never allocates.
pub(super) fn write(
    policy: &edgeguard_policy,
    p: &Parts<'_>,
    buf: &mut [u8],
    out: &mut edgeguard_text,
) -> Result<(), edgeguard_result> {
    if buf.len() < room(policy, p) {
        return Err(edgeguard_result::BufferTooSmall);
    }
    let mut w = Cursor::new(buf);
    let names = policy.names();
    // The room was checked above: a failed write is a wrong bound.
    let too_small = |_| edgeguard_result::BufferTooSmall;
    if let Some(scores) = p.scores {
        let values = &mut out.values;
        let written = text::write_scores(&mut w, names, scores, |i, s| values[i] = span(s));
        out.scores = span(written.map_err(too_small)?);
    }
    let d = p.decision;
    let verdict = match p.bot {
        edgeguard_bot::None => None,
        edgeguard_bot::Verified => Some("verified"),
        edgeguard_bot::Fake => Some("fake"),
    };
    let flags = matches!(
        d.action,
        edgeguard_action::Block
            | edgeguard_action::Log
            | edgeguard_action::Challenge
            | edgeguard_action::Cleared
    );
    if flags || verdict.is_some() {
        let flagged = usize::try_from(d.model).ok().and_then(|i| {
            let score = p.scores?.get(i)?;
            Some((&*names[i], *score, d.threshold))
        });
        let line = Line {
            action: d.action.name(),
            flagged,
            client: p.client,
            method: p.method,
            uri: p.uri,
            bot: verdict.map(|v| (p.label, v)),
        };
        out.line = span(text::write_line(&mut w, &line).map_err(too_small)?);
    }
    Ok(())
}

/// The buffer `edgeguard_policy_text` and `edgeguard_access` need for the
/// texts of a request: this many bytes plus the lengths of the request's
/// `method`, `uri` and `client_addr`. 0 for a null policy.
///
/// # Safety
/// `policy` is null or a live policy.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_text_room(policy: *const edgeguard_policy) -> usize {
    ffi_panic_boundary! {
        policy.as_ref().map_or(0, edgeguard_policy::text_room)
    }
}

/// Writes the texts of a decision made without `edgeguard_access` (the
/// legacy Lua engine's, by `edgeguard_policy_decide`) into `text`:
/// `scores` holds the request's `n` scores in the policy's model order (null
/// with `n` 0: not scored), `decision` is the policy's decision of them,
/// and the request's `method`, `uri` and `client_addr` go into the line
/// (its headers are not read). No bot claim is judged here. `text_cap`
/// must be at least `edgeguard_policy_text_room(policy)` plus those three
/// lengths.
///
/// Returns `Ok` with `*out` written; `NullParameter` for a null `policy`,
/// `decision`, `request`, `text` or `out`, or a null `scores` with a
/// non-zero `n`; `InvalidArgument` for an `n` other than 0 and the
/// policy's model count, or a decision's model out of range;
/// `BufferTooSmall` for a `text_cap` below the room. On an error nothing is
/// written. Never allocates.
///
/// # Safety
/// `policy` is a live policy; `scores` points to `n` doubles (or is null
/// with `n` 0); `decision` and `request` are readable, the request's
/// strings point to their stated lengths; `text` points to `text_cap`
/// writable bytes; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_text(
    policy: *const edgeguard_policy,
    scores: *const f64,
    n: usize,
    decision: *const edgeguard_decision,
    request: *const edgeguard_request,
    text: *mut u8,
    text_cap: usize,
    out: *mut edgeguard_text,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(policy, decision, request, text, out);
        let (policy, decision, request) = (&*policy, &*decision, &*request);
        let Some(scores_in) = super::boundary::slice(scores, n) else {
            return edgeguard_result::NullParameter;
        };
        let scores = (!scores.is_null() && n > 0).then_some(scores_in);
        if scores.is_some_and(|s| s.len() != policy.model_count())
            || decision.model >= i32::try_from(policy.model_count()).unwrap_or(i32::MAX)
            || (decision.model >= 0 && scores.is_none())
        {
            return edgeguard_result::InvalidArgument;
        }
        if text_cap > isize::MAX as usize {
            return edgeguard_result::InvalidArgument;
        }
        let parts = Parts {
            scores,
            decision,
            bot: edgeguard_bot::None,
            label: &[],
            method: request.method.as_bytes(),
            uri: request.uri.as_bytes(),
            client: request.client_addr.as_bytes(),
        };
        let buf = std::slice::from_raw_parts_mut(text, text_cap);
        if buf.len() < room(policy, &parts) {
            return edgeguard_result::BufferTooSmall;
        }
        *out = edgeguard_text::EMPTY;
        match write(policy, &parts, buf, &mut *out) {
            Ok(()) => edgeguard_result::Ok,
            Err(code) => code,
        }
    }
}
