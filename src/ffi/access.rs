//! C ABI for one request's whole job in one call: find the headers to strip,
//! score, decide.
//!
//! The Lua shim's `access()` for the Rust engine fetches nginx's header
//! array (no copy), calls `edgeguard_access` once, clears the headers it
//! lists and applies the decision. The parts are the same code the separate
//! exports run (`edgeguard_header_set_find_checked`,
//! `edgeguard_scorer_score`, `edgeguard_policy_decide`), over one header
//! array, with no heap allocation.

use super::boundary::bytes;
use super::challenge::{edgeguard_bot, edgeguard_clearance, request_decision};
use super::config::{edgeguard_decision, edgeguard_policy};
use super::edgeguard_result;
use super::headers::find;
use super::metrics::{edgeguard_metrics, outcome_of, seen_of};
use super::scorer::{checked_request, edgeguard_request, edgeguard_scorer, score};
use super::text::{edgeguard_text, write, Parts};
use super::types::edgeguard_str;
use crate::config::Engine;
use crate::headers::Header;
use crate::metrics::{Outcome, Registry};
use std::time::Instant;

/// What `edgeguard_access` made of one request. Written whole on `Ok`.
///
/// Fields may be appended in later versions (new actions carry more, e.g.
/// a verified bot's name in `label`); a caller allocates the struct from
/// the header of the library it loads, so an appended field never reaches
/// past its allocation.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_access_out {
    /// How many indices were written to the caller's `clear` buffer: the
    /// first header of each distinct name to clear (as
    /// `edgeguard_header_set_find_internal` lists them), without those
    /// spelled exactly as the policy's score header when the request was
    /// scored.
    pub clear_len: usize,
    /// Header entries the internal list matched, repeats counted (the
    /// score header's spellings are not counted; no list: 0).
    pub matched: usize,
    /// How many of the matched entries nginx's Lua API cannot remove (names
    /// that are not RFC 9110 tokens, see
    /// `edgeguard_header_set_find_checked`). Non-zero: the caller refuses
    /// the request rather than clear some and forward the rest.
    pub unremovable: usize,
    /// How many scores were written to the caller's `scores` buffer: the
    /// scorer's model count, or 0 when the request went unscored (no
    /// scorer, or scoring failed: `score_result` says why).
    pub scores_len: usize,
    /// `Ok`, or why scoring failed (the request is then decided unscored).
    pub score_result: edgeguard_result,
    /// The policy's decision (unscored: `Pass`, or `Unavailable` under
    /// `fail_closed`).
    pub decision: edgeguard_decision,
    /// The verified bot the User-Agent claims (`bot` not `None`), empty
    /// otherwise: memory the policy owns, valid while it lives.
    pub label: edgeguard_str,
    /// The verified bot the User-Agent claims, if any, and whether the
    /// address agrees (`verified_bots`; a fake is flagged).
    pub bot: edgeguard_bot,
    /// What the clearance cookie said (`challenge_secret`).
    pub clearance: edgeguard_clearance,
    /// The challenge page's status (`challenge_status`; 0 without a
    /// challenge): for the action `Challenge`.
    pub challenge_status: i32,
    /// Where the score header's value, the per-model values and the
    /// decision line lie in the caller's `text` buffer (all empty without
    /// one).
    pub text: edgeguard_text,
}

/// Strips, scores and decides one request in one call.
///
/// - `policy`: the location's. Its strip set (the internal list extended
///   with the score header's names, see `edgeguard_policy_new`; none:
///   nothing to strip) is searched over `request`'s headers, the matches go
///   to `clear[0..out.clear_len]`; `clear_cap` must be at least
///   `request->headers_len`. On a scored request the entries spelled
///   exactly as the policy's score header are left out of `clear`, since
///   the caller's setting of the header replaces them.
/// - `scorer` (null: models not loaded, the request goes unscored): scores
///   `request` as the client sent it into `scores[0..n]`, where `n` is the
///   scorer's model count; `scores_cap` must be at least `n`. The policy must
///   be bound to the scorer's models (the same count).
/// - `text` (null with `text_cap` 0: none): the decision's texts
///   (`edgeguard_text`: the score header's value and the per-model values
///   as `%.9g`, the decision line), located by `out.text`; `text_cap` must
///   be at least `edgeguard_policy_text_room(policy)` plus the lengths of
///   the request's `method`, `uri` and `client_addr`.
/// - `metrics` (null: not counted): the registry the request is counted in
///   when the Rust engine handles it alone (`edgeguard_metrics_new`): this
///   call's time and the scores under the engine `Rust`, and the request
///   under the engine setting `Rust` with the outcome the caller acts on:
///   `Refused` (0 removed) when `out.unremovable` is non-zero, else the
///   decision's action with `out.matched` entries removed, the clearance
///   and the bot claim. Only on `Ok`; a caller that fails the request
///   afterwards counts that itself (`edgeguard_metrics_request`).
/// - `policy` decides from the scores, the request and `addr`/`addr_len`,
///   the client address as nginx keeps it (`$binary_remote_addr`; null/0:
///   the request's textual `client_addr`), at
///   `now`, the caller's Unix time (nginx's `ngx.time()`), as
///   `edgeguard_policy_decide_request` does: the clearance cookie verified,
///   a bot claim judged, the actions `Cleared`, `Challenge`, `Verified` and
///   `Answer` besides `edgeguard_policy_decide`'s.
///
/// Returns `Ok` with `*out` written; `NullParameter` for a null `policy`,
/// `request` or `out`, a null `clear` with a strip set, a null `scores`
/// with a scorer, a null `addr` or `text` with a non-zero length, or a null
/// `headers` with a non-zero `headers_len`; `BufferTooSmall` for a non-zero
/// `text_cap` below the texts' room; `InvalidArgument` for a
/// `clear_cap` below `headers_len`, a `scores_cap` below the model count, a
/// policy bound to another number of models than the scorer holds, an
/// `http_version` outside `0..=65535` or a `headers_len` above
/// `UINT32_MAX`. On an error nothing is written (and nothing counted).
/// Never allocates; every handle but `metrics` (relaxed atomic counters)
/// is only read, so concurrent calls are safe.
///
/// # Safety
/// `scorer` and `metrics` are null or live handles, `policy` a live policy; `request`
/// points to a valid `edgeguard_request` whose strings and headers point to
/// their stated number of readable bytes; `addr` points to `addr_len`
/// bytes (or is null with length 0); `clear` points to `clear_cap` writable
/// `uint32_t`, `scores` to `scores_cap` writable doubles and `text` to
/// `text_cap` writable bytes (or they are null with a zero cap); `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_access(
    scorer: *const edgeguard_scorer,
    policy: *const edgeguard_policy,
    metrics: *const edgeguard_metrics,
    request: *const edgeguard_request,
    addr: *const u8,
    addr_len: usize,
    now: i64,
    clear: *mut u32,
    clear_cap: usize,
    scores: *mut f64,
    scores_cap: usize,
    text: *mut u8,
    text_cap: usize,
    out: *mut edgeguard_access_out,
) -> edgeguard_result {
    ffi_panic_boundary! {
        // The Rust engine's time is this call's (see `count`).
        let started = (!metrics.is_null()).then(Instant::now);
        try_non_null!(policy, request, out);
        let (policy, request) = (&*policy, &*request);
        let Some(client) = bytes(addr, addr_len) else {
            return edgeguard_result::NullParameter;
        };
        let (req, headers) = match checked_request(request) {
            Ok(req) => req,
            Err(code) => return code,
        };
        let scorer = scorer.as_ref();
        let n = scorer.map_or(0, edgeguard_scorer::model_count);
        if n != policy.model_count() {
            return edgeguard_result::InvalidArgument;
        }
        if scorer.is_some() && scores.is_null() {
            return edgeguard_result::NullParameter;
        }
        if scores_cap < n {
            return edgeguard_result::InvalidArgument;
        }
        if text.is_null() && text_cap != 0 || text_cap > isize::MAX as usize {
            return edgeguard_result::NullParameter;
        }
        // The texts' room, before anything is written (the label, a bot's
        // name, is within the policy's part).
        let need = edgeguard_policy::text_room(policy).saturating_add(req.method().len() + req.uri().len() + req.client_addr().len());
        if !text.is_null() && text_cap < need {
            return edgeguard_result::BufferTooSmall;
        }
        let set = policy.strip();
        if set.is_some() && clear.is_null() {
            return edgeguard_result::NullParameter;
        }
        // The search first: it checks `clear_cap` before anything is written.
        let found = match set {
            None => None,
            Some(set) => match find(set, request.headers, request.headers_len, clear, clear_cap) {
                Ok(found) => Some(found),
                Err(code) => return code,
            },
        };
        let (score_result, scores_len) = match scorer {
            Some(s) => {
                let buf = std::slice::from_raw_parts_mut(scores, n);
                match score(s, &req, buf) {
                    edgeguard_result::Ok => (edgeguard_result::Ok, n),
                    failed => (failed, 0),
                }
            }
            None => (edgeguard_result::Ok, 0),
        };
        let given = (scores_len > 0).then(|| std::slice::from_raw_parts(scores.cast_const(), n));
        let decided = match request_decision(policy, given, &req, client, now) {
            Ok(d) => d,
            Err(code) => return code,
        };
        let (mut clear_len, matched, unremovable) =
            found.map_or((0, 0, 0), |f| (f.distinct, f.matched, f.unremovable));
        let keep = policy.score_header();
        if scores_len > 0 && !keep.is_empty() && clear_len > 0 {
            let list = std::slice::from_raw_parts_mut(clear, clear_len);
            clear_len = without_kept(headers, list, keep);
        }
        *out = edgeguard_access_out {
            clear_len,
            matched,
            unremovable,
            scores_len,
            score_result,
            decision: decided.decision,
            label: decided.bot_name,
            bot: decided.bot,
            clearance: decided.clearance,
            challenge_status: decided.challenge_status,
            text: edgeguard_text::EMPTY,
        };
        // The texts in place (the room was checked before anything was
        // written, so this does not fail).
        if !text.is_null() {
            let parts = Parts {
                scores: given,
                decision: &decided.decision,
                bot: decided.bot,
                label: decided.bot_name.as_bytes(),
                method: req.method(),
                uri: req.uri(),
                client: req.client_addr(),
            };
            let buf = std::slice::from_raw_parts_mut(text, text_cap);
            if let Err(code) = write(policy, &parts, buf, &mut (*out).text) {
                return code;
            }
        }
        if let (Some(m), Some(t0)) = (metrics.as_ref(), started) {
            count(&m.registry, &*out, given, t0);
        }
        edgeguard_result::Ok
    }
}

/// Counts a request the Rust engine handled alone: its time in this call,
/// its scores, and its outcome as the shim acts on it (refused when some
/// internal entry cannot be removed; else the decision, with the entries
/// the list matched, the clearance and the bot claim).
fn count(m: &Registry, out: &edgeguard_access_out, scores: Option<&[f64]>, t0: Instant) {
    m.engine_time(Engine::Rust, t0.elapsed().as_secs_f64());
    if let Some(s) = scores {
        m.scores(Engine::Rust, s);
    }
    if out.unremovable > 0 {
        m.request(Engine::Rust, Outcome::Refused, 0, None);
    } else {
        // SAFETY: the label is the policy's memory, alive for this call.
        let seen = unsafe { seen_of(out) };
        m.request(
            Engine::Rust,
            outcome_of(out.decision.action),
            out.matched,
            Some(seen),
        );
    }
}

/// Compacts `clear` in place, dropping the indices of headers named exactly
/// `keep`; returns the new length.
fn without_kept(headers: &[Header<'_>], clear: &mut [u32], keep: &[u8]) -> usize {
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
