//! C ABI for the challenge and the verified bots: the request-aware
//! decision, the challenge page and the answer to it.
//!
//! `edgeguard_policy_decide_request` is `edgeguard_policy_decide` with the
//! request itself (User-Agent, cookies, navigation headers, URI) and the
//! caller's clock: it verifies the clearance cookie and judges a bot claim
//! in the same call, without allocating. Only a challenged request
//! (`edgeguard_policy_challenge_page`) or an answer
//! (`edgeguard_policy_challenge_answer`) needs a second call.

use super::boundary::bytes;
use super::config::{edgeguard_action, edgeguard_decision, edgeguard_policy};
use super::edgeguard_result;
use super::metrics::edgeguard_metrics;
use super::scorer::{checked_request, edgeguard_request};
use super::types::edgeguard_str;
use crate::challenge::{Answer, Binding, Challenge, Clearance, Rejection};
use crate::features::Request;
use crate::metrics::AnswerResult;
use crate::net::{addr_from_binary, addr_from_text};
use crate::verified::Verdict;

/// What a request's User-Agent says of a verified bot. Stable numbers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_bot {
    /// It claims no listed bot.
    None = 0,
    /// It claims a listed bot from one of the bot's prefixes.
    Verified = 1,
    /// It claims a listed bot from another address: flagged.
    Fake = 2,
}

/// What a clearance cookie or a challenge answer came to. Stable numbers;
/// `edgeguard_clearance_name` names them (the metric labels).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_clearance {
    /// No cookie of the configured name (or no challenge configured).
    Absent = 0,
    /// A valid cookie; for an answer: solved.
    Accepted = 1,
    /// Not a token: wrong length, not base64url, another kind.
    Malformed = 2,
    /// The MAC matches no key: forged, tampered, or signed by a removed key.
    Mac = 3,
    /// Expired (or beyond the lifetime in force); a nonce too old.
    Expired = 4,
    /// Issued to another address prefix.
    Address = 5,
    /// Issued to another User-Agent.
    UserAgent = 6,
    /// An answer without the work asked for.
    Work = 7,
}

impl From<Rejection> for edgeguard_clearance {
    fn from(r: Rejection) -> Self {
        match r {
            Rejection::Malformed => edgeguard_clearance::Malformed,
            Rejection::Mac => edgeguard_clearance::Mac,
            Rejection::Expired => edgeguard_clearance::Expired,
            Rejection::Address => edgeguard_clearance::Address,
            Rejection::UserAgent => edgeguard_clearance::UserAgent,
            Rejection::Work => edgeguard_clearance::Work,
        }
    }
}

impl From<Clearance> for edgeguard_clearance {
    fn from(c: Clearance) -> Self {
        match c {
            Clearance::Absent => edgeguard_clearance::Absent,
            Clearance::Accepted => edgeguard_clearance::Accepted,
            Clearance::Rejected(r) => r.into(),
        }
    }
}

/// The outcome of `edgeguard_policy_decide_request`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_request_decision {
    /// The action, the flagging model, its threshold and the block status,
    /// as `edgeguard_policy_decide` gives them; the action may also be
    /// `Cleared`, `Challenge`, `Verified` or `Answer`.
    pub decision: edgeguard_decision,
    /// The bot the User-Agent claims, if any, and whether its address agrees.
    pub bot: edgeguard_bot,
    /// The bot's name (empty for `None`): memory the policy owns, valid
    /// while it lives.
    pub bot_name: edgeguard_str,
    /// What the clearance cookie said.
    pub clearance: edgeguard_clearance,
    /// The challenge page's status (`challenge_status`; 0 without a
    /// challenge).
    pub challenge_status: i32,
}

/// The outcome of `edgeguard_policy_challenge_answer`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_challenge_answer {
    /// `Accepted` when solved (the two outputs are written), else why not.
    pub result: edgeguard_clearance,
    /// Bytes of the `Set-Cookie` value written.
    pub cookie_len: usize,
    /// Bytes of the `Location` written: a same-site path.
    pub location_len: usize,
}

/// The name of a clearance result, for logs and metric labels
/// (`"absent"`, `"accepted"`, `"malformed"`, `"mac"`, `"expired"`,
/// `"address"`, `"user_agent"`, `"work"`); null for a number that is none.
/// Static storage.
#[no_mangle]
pub extern "C" fn edgeguard_clearance_name(c: libc::c_int) -> *const libc::c_char {
    ffi_panic_boundary! {
        let name: &'static std::ffi::CStr = match c {
            0 => c"absent",
            1 => c"accepted",
            _ => match Rejection::ALL.get((c as usize).wrapping_sub(2)) {
                Some(r) => match r {
                    Rejection::Malformed => c"malformed",
                    Rejection::Mac => c"mac",
                    Rejection::Expired => c"expired",
                    Rejection::Address => c"address",
                    Rejection::UserAgent => c"user_agent",
                    Rejection::Work => c"work",
                },
                None => return std::ptr::null(),
            },
        };
        name.as_ptr()
    }
}

/// The client's address: `addr` as nginx keeps it (`$binary_remote_addr`)
/// when the caller gives it, else the request's textual `client_addr`
/// (`$remote_addr`, which `edgeguard_request` carries anyway), so that the
/// shim need not fetch a second variable per request. Both name the same
/// address (the realip module changes both); a unix socket is none, so in
/// no `allow` block and bound to no prefix.
fn client_addr(addr: &[u8], req: &Request<'_>) -> Option<std::net::IpAddr> {
    if addr.is_empty() {
        addr_from_text(req.client_addr())
    } else {
        addr_from_binary(addr)
    }
}

/// Decides one request with what it shows: `scores` (`n` of them in the
/// policy's model order; null with `n` 0: not scored), the request (its
/// User-Agent, `Cookie`, `Sec-Fetch-Mode`, `Accept`, method and URI),
/// `addr`/`addr_len` as nginx keeps it (`$binary_remote_addr`; null/0: the
/// request's textual `client_addr`) and `now`,
/// the caller's Unix time (nginx's `ngx.time()`) against which the
/// clearance cookie is judged.
///
/// The rule is `edgeguard_policy_decide`'s, then: a verified bot gets
/// `Verified`; a fake one is flagged whatever its scores; a flagged request
/// with a valid clearance cookie gets `Cleared`; in mode `challenge` a
/// flagged navigation gets `Challenge`, another flagged request `Block`. A
/// request to the challenge's endpoint gets `Answer` (and nothing else is
/// looked at). An unscored request gets `Unavailable` under `fail_closed`
/// unless it claims a bot.
///
/// Writes `*out` and returns `Ok`; `NullParameter` for a null `policy`,
/// `request` or `out`, a null `scores` or `addr` with a nonzero length, or
/// null headers with a nonzero count; `InvalidArgument` when `n` is
/// neither 0 with null `scores` nor the policy's model count, or the
/// request's `http_version` or `headers_len` is out of range. Never
/// allocates; concurrent calls are safe.
///
/// # Safety
/// `policy` is a live policy; `request` points to a valid
/// `edgeguard_request`; `scores` points to `n` doubles and `addr` to
/// `addr_len` bytes (or they are null with a zero length); `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_decide_request(
    policy: *const edgeguard_policy,
    request: *const edgeguard_request,
    scores: *const f64,
    n: usize,
    addr: *const u8,
    addr_len: usize,
    now: i64,
    out: *mut edgeguard_request_decision,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(policy, request, out);
        let (req, _) = match checked_request(&*request) {
            Ok(r) => r,
            Err(code) => return code,
        };
        let (Some(client), Some(given)) = (bytes(addr, addr_len), super::boundary::slice(scores, n)) else {
            return edgeguard_result::NullParameter;
        };
        let given = if scores.is_null() { None } else { Some(given) };
        match request_decision(&*policy, given, &req, client, now) {
            Ok(d) => {
                *out = d;
                edgeguard_result::Ok
            }
            Err(code) => code,
        }
    }
}

/// The decision of one request with what it shows (see
/// `edgeguard_policy_decide_request`), for it and `edgeguard_access`.
/// Never allocates.
pub(super) fn request_decision(
    policy: &edgeguard_policy,
    given: Option<&[f64]>,
    req: &Request<'_>,
    client: &[u8],
    now: i64,
) -> Result<edgeguard_request_decision, edgeguard_result> {
    let policy = &policy.policy;
    if given.is_some_and(|s| s.len() != policy.model_count()) {
        return Err(edgeguard_result::InvalidArgument);
    }
    let status = i32::from(policy.status());
    let challenge_status = policy.challenge().map_or(0, |c| i32::from(c.status));
    let mut result = edgeguard_request_decision {
        decision: edgeguard_decision {
            action: edgeguard_action::Pass,
            model: -1,
            threshold: f64::NAN,
            status,
        },
        bot: edgeguard_bot::None,
        bot_name: edgeguard_str {
            len: 0,
            data: std::ptr::null(),
        },
        clearance: edgeguard_clearance::Absent,
        challenge_status,
    };
    if policy.answers(req) {
        result.decision.action = edgeguard_action::Answer;
        return Ok(result);
    }
    let now = u64::try_from(now).unwrap_or(0);
    let Some(d) = policy.decide_request(given, req, client_addr(client, req), now) else {
        result.decision.action = edgeguard_action::Unavailable;
        return Ok(result);
    };
    result.decision.action = d.action.into();
    // At most MAX_MODELS, checked when the policy was bound.
    result.decision.model = d.flagged_by.map_or(-1, |i| i as i32);
    result.decision.threshold = d
        .flagged_by
        .and_then(|i| policy.threshold(i))
        .unwrap_or(f64::NAN);
    if let (Some(v), Some(bots)) = (d.bot, policy.verified_bots()) {
        result.bot = match v {
            Verdict::Verified(_) => edgeguard_bot::Verified,
            Verdict::Fake(_) => edgeguard_bot::Fake,
        };
        result.bot_name =
            edgeguard_str::from_slice(bots.name(v.bot()).unwrap_or_default().as_bytes());
    }
    result.clearance = d.clearance.into();
    Ok(result)
}

/// What the page and the answer both start from: the policy's challenge,
/// the request, and the client's binding (address prefix, User-Agent hash).
/// `InvalidArgument` without a challenge or for a malformed request,
/// `NullParameter` for a null `addr` with a length.
///
/// # Safety
/// As `edgeguard_policy_decide_request`.
unsafe fn challenged<'a>(
    policy: &'a edgeguard_policy,
    request: &'a edgeguard_request,
    addr: *const u8,
    addr_len: usize,
) -> Result<(&'a Challenge, Request<'a>, Binding), edgeguard_result> {
    let policy = &policy.policy;
    let ch = policy
        .challenge()
        .ok_or(edgeguard_result::InvalidArgument)?;
    let (req, _) = checked_request(request)?;
    let client = bytes(addr, addr_len).ok_or(edgeguard_result::NullParameter)?;
    let binding = ch.binding(
        client_addr(client, &req),
        crate::challenge::user_agent(&req),
    );
    Ok((ch, req, binding))
}

/// Writes the challenge page for this client (`request`'s User-Agent,
/// `addr` as `$binary_remote_addr`, or null/0 for the request's
/// `client_addr`; `now` the caller's Unix time) into
/// `buf` (`cap` bytes; 4096 is enough) and its length into `*out_len`.
/// Serve it with the decision's `challenge_status`, `Content-Type:
/// text/html; charset=utf-8` and `Cache-Control: no-store`.
///
/// `NullParameter` for a null `policy`, `request`, `buf` or `out_len` (or
/// a null `addr` with a length); `InvalidArgument` when the policy has no
/// challenge or the request is malformed; `BufferTooSmall` when `cap` is.
///
/// # Safety
/// As `edgeguard_policy_decide_request`; `buf` points to `cap` writable
/// bytes and `out_len` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_challenge_page(
    policy: *const edgeguard_policy,
    request: *const edgeguard_request,
    addr: *const u8,
    addr_len: usize,
    now: i64,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(policy, request, buf, out_len);
        let (ch, _, binding) = match challenged(&*policy, &*request, addr, addr_len) {
            Ok(c) => c,
            Err(code) => return code,
        };
        let out = std::slice::from_raw_parts_mut(buf, cap);
        match ch.page(&binding, u64::try_from(now).unwrap_or(0), out) {
            Ok(n) => {
                *out_len = n;
                edgeguard_result::Ok
            }
            Err(_) => edgeguard_result::BufferTooSmall,
        }
    }
}

/// Answers a request to the challenge's endpoint (the decision said
/// `Answer`): checks the nonce (its MAC, age, address prefix and
/// User-Agent) and the work. Solved: writes the clearance cookie's
/// `Set-Cookie` value into `cookie_buf` (`HttpOnly; SameSite=Lax`, a Path,
/// Max-Age and Expires, and `Secure` when `tls` is nonzero; 512 bytes are
/// enough) and the same-site path to redirect to (303) into `location_buf`
/// (2048 bytes are enough), and `out->result` is `Accepted`. Otherwise
/// `out->result` says why and nothing else is written.
///
/// `metrics` (null: not counted) counts the answer: solved, or failed
/// and its reason (`edgeguard_challenges_total`,
/// `edgeguard_challenge_failures_total`), when the call succeeds.
///
/// `NullParameter` for a null pointer but `metrics` (or a null `addr` with
/// a length); `InvalidArgument` when the policy has no challenge or the
/// request is malformed; `BufferTooSmall` when a buffer is.
///
/// # Safety
/// As `edgeguard_policy_decide_request`; `metrics` is null or a live
/// registry; `cookie_buf` and `location_buf` point to their caps' writable
/// bytes; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_challenge_answer(
    policy: *const edgeguard_policy,
    metrics: *const edgeguard_metrics,
    request: *const edgeguard_request,
    addr: *const u8,
    addr_len: usize,
    now: i64,
    tls: libc::c_int,
    cookie_buf: *mut u8,
    cookie_cap: usize,
    location_buf: *mut u8,
    location_cap: usize,
    out: *mut edgeguard_challenge_answer,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(policy, request, cookie_buf, location_buf, out);
        let (ch, req, binding) = match challenged(&*policy, &*request, addr, addr_len) {
            Ok(c) => c,
            Err(code) => return code,
        };
        let cookie = std::slice::from_raw_parts_mut(cookie_buf, cookie_cap);
        let location = std::slice::from_raw_parts_mut(location_buf, location_cap);
        let now = u64::try_from(now).unwrap_or(0);
        let answered = ch.answer(req.uri(), &binding, now, tls != 0, cookie, location);
        if let Some(m) = metrics.as_ref() {
            match answered {
                Ok(Answer::Solved { .. }) => m.registry.answer(AnswerResult::Solved),
                Ok(Answer::Failed(r)) => m.registry.answer(AnswerResult::Failed(r)),
                Err(_) => {}
            }
        }
        match answered {
            Ok(Answer::Solved { cookie, location }) => {
                *out = edgeguard_challenge_answer {
                    result: edgeguard_clearance::Accepted,
                    cookie_len: cookie,
                    location_len: location,
                };
                edgeguard_result::Ok
            }
            Ok(Answer::Failed(r)) => {
                *out = edgeguard_challenge_answer { result: r.into(), cookie_len: 0, location_len: 0 };
                edgeguard_result::Ok
            }
            Err(_) => edgeguard_result::BufferTooSmall,
        }
    }
}
