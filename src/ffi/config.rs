//! C ABI for the configuration and the decision rule.
//!
//! The Lua shim hands its `configure{}` table, as JSON, to
//! `edgeguard_config_new` (which reads a `config` file it names), reads the
//! resolved options back once (`edgeguard_config_json`), binds a policy to
//! each engine's models (`edgeguard_policy_new`) and asks it for the action
//! of every request (`edgeguard_policy_decide`, no allocation). A location's
//! `access{}` options make a derived configuration once
//! (`edgeguard_config_new_for_location`), cached by the shim. The parsing and
//! the rule are `crate::config`'s, the ones `edgeguard replay` runs.

use std::ffi::{c_char, CString};
use std::path::Path;

use super::boundary::{bytes, c_bytes, slice, write_error};
use super::edgeguard_result;
use super::headers::edgeguard_header_set;
use crate::config::text;
use crate::config::{ConfigError, ErrorOrigin, Options};
use crate::gate::{Action, Policy};
use crate::net::addr_from_binary;
use crate::scorer::MAX_MODELS;
use crate::verified;

/// Parsed and checked options. Opaque: made by `edgeguard_config_new` or
/// `edgeguard_config_new_for_location`, released by `edgeguard_config_free`.
/// Immutable, so one handle may be shared by threads.
pub struct edgeguard_config {
    pub(super) options: Options,
    /// `options` resolved, as NUL-terminated JSON, handed out to C.
    json: CString,
}

/// The decision rule bound to one engine's models, with what a location
/// strips. Opaque: made by `edgeguard_policy_new`, released by
/// `edgeguard_policy_free`. Immutable.
pub struct edgeguard_policy {
    pub(crate) policy: Policy,
    /// The location's strip set: the internal list given to
    /// `edgeguard_policy_new` and, as extra rules, every spelling of the
    /// score header names (`Options::score_header_spellings`). None:
    /// nothing to strip.
    strip: Option<edgeguard_header_set>,
    /// The location's own score header, exactly as the caller sets it on a
    /// scored request (empty: none).
    score_header: Box<[u8]>,
    /// The models' names, in scoring order, for the texts.
    names: Box<[Box<str>]>,
    /// The text buffer the texts need besides the request's method, URI
    /// and client address (`edgeguard_policy_text_room`).
    text_room: usize,
}

/// What `edgeguard_policy_decide` says a request gets. The numbers are
/// stable.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_action {
    /// Not flagged, or mode `off`: let it through.
    Pass = 0,
    /// Flagged, but the client lies in an `allow` block: let it through.
    Allow = 1,
    /// Flagged in mode `log`: let it through and log it.
    Log = 2,
    /// Flagged in mode `block`: answer with the decision's `status`.
    Block = 3,
    /// Not scored while models are configured and `fail_closed` is set:
    /// answer 503.
    Unavailable = 4,
    /// Flagged, but a valid clearance cookie lets it through.
    Cleared = 5,
    /// A flagged navigation in mode `challenge`: serve the challenge page.
    Challenge = 6,
    /// A verified bot: let it through.
    Verified = 7,
    /// A request to the challenge's endpoint (`/.edgeguard/challenge`)
    /// while a challenge is configured: answer it with
    /// `edgeguard_policy_challenge_answer`, never proxy it. Only
    /// `edgeguard_policy_decide_request` returns it.
    Answer = 8,
    /// Internal headers nginx cannot remove: 400 (the number
    /// `edgeguard_outcome` gives it; 9 is its `Error`).
    Refused = 10,
}

impl From<Action> for edgeguard_action {
    fn from(a: Action) -> Self {
        match a {
            Action::Pass => edgeguard_action::Pass,
            Action::Allow => edgeguard_action::Allow,
            Action::Log => edgeguard_action::Log,
            Action::Block => edgeguard_action::Block,
            Action::Unavailable => edgeguard_action::Unavailable,
            Action::Cleared => edgeguard_action::Cleared,
            Action::Challenge => edgeguard_action::Challenge,
            Action::Verified => edgeguard_action::Verified,
            Action::Answer => edgeguard_action::Answer,
            Action::Refused => edgeguard_action::Refused,
        }
    }
}

/// The outcome of `edgeguard_policy_decide`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_decision {
    /// What the request gets.
    pub action: edgeguard_action,
    /// The index of the model that flagged it (also when the mode is `off`
    /// and the action `Pass`), or -1.
    pub model: i32,
    /// That model's threshold in force; NaN when no model flagged.
    pub threshold: f64,
    /// The status a blocked request gets (the configured `status`).
    pub status: i32,
}

/// Writes the error and returns its code: options the caller wrote are
/// misuse (`InvalidArgument`), a bad file `ConfigInvalid`, an unreadable
/// one `Io`.
///
/// # Safety
/// `errbuf` is null or points to `errbuf_len` writable bytes.
unsafe fn refuse(e: &ConfigError, errbuf: *mut c_char, errbuf_len: usize) -> edgeguard_result {
    write_error(errbuf, errbuf_len, e);
    match e.origin() {
        ErrorOrigin::Caller => edgeguard_result::InvalidArgument,
        ErrorOrigin::File => edgeguard_result::ConfigInvalid,
        ErrorOrigin::Io => edgeguard_result::Io,
    }
}

/// Boxes `options` into `*out`.
///
/// # Safety
/// `out` is writable.
unsafe fn publish(options: Options, out: *mut *mut edgeguard_config) -> edgeguard_result {
    // serde_json escapes control characters, so the text holds no NUL.
    let json = CString::new(options.resolved_json()).unwrap_or_default();
    *out = Box::into_raw(Box::new(edgeguard_config { options, json }));
    edgeguard_result::Ok
}

/// `source_name` as text, or `default` for null.
///
/// # Safety
/// `name` is null or NUL-terminated.
unsafe fn name_or(name: *const c_char, default: &str) -> String {
    if name.is_null() {
        default.to_owned()
    } else {
        String::from_utf8_lossy(c_bytes(name)).into_owned()
    }
}

/// Parses the options of `configure{}`: `len` bytes of JSON at `json`, an
/// object whose keys are the options (`src/config/options.rs` lists them).
/// When it names a `config` file, the file is read and the options given
/// beside it override the file's. Relative paths in `json` are resolved
/// against `base_dir` (NUL-terminated; null keeps them as given), a file's
/// against the file's directory. `source_name` (NUL-terminated; null:
/// `"options"`) names `json` in error messages; a file is named by its path.
///
/// On success writes a new configuration to `*out` (release it with
/// `edgeguard_config_free`). On failure `*out` is untouched and `errbuf`
/// receives a message naming the source, the option and, in a list, the
/// entry counted from 0 (`edgeguard.json: allow[1]: ...`):
/// - `InvalidArgument`: the options in `json` are wrong (an unknown option,
///   a wrong type, a value out of range, not JSON): the caller's mistake;
/// - `ConfigInvalid`: the `config` file is not JSON or holds a bad option;
/// - `Io`: the `config` file cannot be read;
/// - `NullParameter`: `out` is null, or `json` is null with a nonzero `len`
///   (or a `len` no array can have, as a negative int converted gives).
///
/// # Safety
/// `json` points to `len` readable bytes (or `len` is 0); `source_name` and
/// `base_dir` are null or NUL-terminated; `out` is writable; `errbuf` is
/// null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_new(
    json: *const u8,
    len: usize,
    source_name: *const c_char,
    base_dir: *const c_char,
    out: *mut *mut edgeguard_config,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out);
        let Some(text) = bytes(json, len) else {
            return edgeguard_result::NullParameter;
        };
        let source = name_or(source_name, "options");
        let base = if base_dir.is_null() {
            None
        } else {
            match std::str::from_utf8(c_bytes(base_dir)) {
                Ok(dir) => Some(Path::new(dir)),
                Err(_) => {
                    write_error(errbuf, errbuf_len, &"base_dir is not valid UTF-8");
                    return edgeguard_result::InvalidArgument;
                }
            }
        };
        match Options::configure(&source, base, text) {
            Ok(options) => publish(options, out),
            Err(e) => refuse(&e, errbuf, errbuf_len),
        }
    }
}

/// Derives a location's configuration: `base` with the `access{}` options
/// in `json` (`len` bytes) over it. Only the per-location options are
/// accepted (`mode`, `thresholds`, `status`, `fail_closed`, `score_header`,
/// `vars`, `log_level`, `engine`); `thresholds` override model by model, the
/// others replace `base`'s; `engine` must be one `base` loaded. Errors as
/// `edgeguard_config_new` (always `InvalidArgument` for bad options);
/// `source_name` null means `"options"`. `base` is not changed.
///
/// # Safety
/// `base` is a live configuration; otherwise as `edgeguard_config_new`.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_new_for_location(
    base: *const edgeguard_config,
    json: *const u8,
    len: usize,
    source_name: *const c_char,
    out: *mut *mut edgeguard_config,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(base, out);
        let Some(text) = bytes(json, len) else {
            return edgeguard_result::NullParameter;
        };
        let source = name_or(source_name, "options");
        match (*base).options.with_access(&source, text) {
            Ok(options) => publish(options, out),
            Err(e) => refuse(&e, errbuf, errbuf_len),
        }
    }
}

/// Releases a configuration. Null is a no-op. Policies bound from it stay
/// valid (they hold their own copy of what they need).
///
/// # Safety
/// `config` is null or a live configuration not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_free(config: *mut edgeguard_config) {
    ffi_panic_boundary! {
        if !config.is_null() {
            drop(Box::from_raw(config));
        }
    }
}

/// The options resolved, as a NUL-terminated JSON object: every option
/// given, defaults filled in (`mode`, `status`, `fail_closed`,
/// `score_header`, `vars`, `engine`, and `shadow_primary` under the shadow
/// engine), paths resolved, `models` and `lua_models` as arrays of
/// `{"name", "path"}` in scoring order, and `models_wanted` (whether models
/// are configured for any engine). Options with neither a value nor a
/// default are absent. Owned by the configuration, valid until it is freed;
/// null for a null configuration.
///
/// # Safety
/// `config` is null or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_json(config: *const edgeguard_config) -> *const c_char {
    ffi_panic_boundary! {
        config.as_ref().map_or(std::ptr::null(), |c| c.json.as_ptr())
    }
}

/// Binds `config`'s decision rule to one engine's models: `n` models in
/// scoring order, model `i` named `names[i]` (NUL-terminated), with its own
/// threshold `own_thresholds[i]` (NaN: none; `own_thresholds` may be null:
/// none has one). Each model's threshold is the configured one, else its
/// own; a model with neither never flags. `n` may be 0 (models not loaded:
/// every request is unscored).
///
/// The policy also holds what the location strips (`edgeguard_access`,
/// `edgeguard_policy_strip_set`): `headers` (null: no internal list; the
/// set is copied, the caller keeps and frees its own) extended with every
/// spelling of the configuration's score header names (`score_header` and,
/// for a location's configuration, the one it was derived from), and the
/// score header name a scored request is given.
///
/// On success writes a new policy to `*out` (release it with
/// `edgeguard_policy_free`). `NullParameter` for a null `config`, `out`,
/// `names` (with `n` > 0) or name; `InvalidArgument` for `n` above 64 or a
/// name that is not UTF-8 (`errbuf` says which).
///
/// # Safety
/// `config` is a live configuration; `names` points to `n` NUL-terminated
/// strings and `own_thresholds` is null or points to `n` doubles; `headers`
/// is null or a live set; `out` is writable; `errbuf` is null or points to
/// `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_new(
    config: *const edgeguard_config,
    names: *const *const c_char,
    own_thresholds: *const f64,
    n: usize,
    headers: *const edgeguard_header_set,
    out: *mut *mut edgeguard_policy,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(config, out);
        // Before any array is read: a count larger than the arrays would
        // read past them.
        if n > MAX_MODELS {
            write_error(errbuf, errbuf_len, &format_args!(
                "{n} models given; a policy binds at most {MAX_MODELS}"
            ));
            return edgeguard_result::InvalidArgument;
        }
        let Some(names) = slice(names, n) else {
            return edgeguard_result::NullParameter;
        };
        let own = if own_thresholds.is_null() { None } else { slice(own_thresholds, n) };
        let mut models = Vec::with_capacity(n);
        for (i, &name) in names.iter().enumerate() {
            if name.is_null() {
                return edgeguard_result::NullParameter;
            }
            let Ok(name) = std::str::from_utf8(c_bytes(name)) else {
                write_error(errbuf, errbuf_len, &format_args!("model {i} name is not UTF-8"));
                return edgeguard_result::InvalidArgument;
            };
            let t = own.map(|t| t[i]).filter(|t| !t.is_nan());
            models.push((name, t));
        }
        let options = &(*config).options;
        let names = options.score_header_spellings();
        let strip = match edgeguard_header_set::for_location(headers.as_ref(), &names) {
            Ok(strip) => strip,
            Err(e) => {
                // Not reached: the names were checked when the options
                // were parsed.
                write_error(errbuf, errbuf_len, &e);
                return edgeguard_result::InvalidArgument;
            }
        };
        let names: Box<[Box<str>]> = models.iter().map(|&(name, _)| name.into()).collect();
        let max_name = names.iter().map(|n| n.len()).max().unwrap_or(0);
        // The score header's value (`name=` value `; `), then the line.
        let text_room = names.iter().map(|n| n.len() + 3 + text::MAX_G9).sum::<usize>()
            + text::line_room(max_name, verified::MAX_NAME);
        *out = Box::into_raw(Box::new(edgeguard_policy {
            policy: Policy::new(options, &models),
            strip,
            score_header: options.score_header_name().as_bytes().into(),
            names,
            text_room,
        }));
        edgeguard_result::Ok
    }
}

/// Releases a policy. Null is a no-op.
///
/// # Safety
/// `policy` is null or a live policy not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_free(policy: *mut edgeguard_policy) {
    ffi_panic_boundary! {
        if !policy.is_null() {
            drop(Box::from_raw(policy));
        }
    }
}

/// Decides one request. `scores` holds the request's `n` scores in the
/// policy's model order, or is null with `n` 0 for a request that was not
/// scored (models not loaded, scoring failed): that one gets `Unavailable`
/// under `fail_closed` with models configured, else `Pass`. `addr` is the
/// client address as nginx keeps it (`$binary_remote_addr`: 4 bytes for
/// IPv4, 16 for IPv6); any other length (a unix socket: 0) lies in no
/// `allow` block.
///
/// Writes `*out` and returns `Ok`; `NullParameter` for a null `policy` or
/// `out`, or a null `scores` or `addr` with a nonzero length (or a length
/// no array can have);
/// `InvalidArgument` when `n` is neither 0 with null `scores` nor the
/// number of models the policy was bound to. Never allocates; the policy is
/// only read, so concurrent calls are safe.
///
/// # Safety
/// `policy` is a live policy; `scores` points to `n` doubles and `addr` to
/// `addr_len` bytes (or they are null with a zero length); `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_decide(
    policy: *const edgeguard_policy,
    scores: *const f64,
    n: usize,
    addr: *const u8,
    addr_len: usize,
    out: *mut edgeguard_decision,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(policy, out);
        let policy = &*policy;
        let (Some(client), Some(scores_in)) = (bytes(addr, addr_len), slice(scores, n)) else {
            return edgeguard_result::NullParameter;
        };
        let scores_in = if scores.is_null() { None } else { Some(scores_in) };
        match decision(policy, scores_in, client) {
            Ok(d) => {
                *out = d;
                edgeguard_result::Ok
            }
            Err(code) => code,
        }
    }
}

/// The decision of one request (see `edgeguard_policy_decide`): `scores`
/// None for a request that was not scored; `InvalidArgument` when the
/// scores are not one per model the policy was bound to. Never allocates.
pub(super) fn decision(
    policy: &edgeguard_policy,
    scores: Option<&[f64]>,
    client: &[u8],
) -> Result<edgeguard_decision, edgeguard_result> {
    let policy = &policy.policy;
    let status = i32::from(policy.status());
    let Some(scores) = scores else {
        let action = if policy.refuses_unscored() {
            edgeguard_action::Unavailable
        } else {
            edgeguard_action::Pass
        };
        return Ok(edgeguard_decision {
            action,
            model: -1,
            threshold: f64::NAN,
            status,
        });
    };
    if scores.len() != policy.model_count() {
        return Err(edgeguard_result::InvalidArgument);
    }
    let d = policy.decide_addr(scores, addr_from_binary(client));
    let action = d.action.into();
    Ok(edgeguard_decision {
        action,
        // At most MAX_MODELS, checked when the policy was bound.
        model: d.flagged_by.map_or(-1, |i| i as i32),
        threshold: d
            .flagged_by
            .and_then(|i| policy.threshold(i))
            .unwrap_or(f64::NAN),
        status,
    })
}

/// The policy's strip set (see `edgeguard_policy_new`): the internal list
/// and the score header's spellings, for the find exports. Owned by the
/// policy, valid while it lives; never free it. Null for a null policy or
/// when there is nothing to strip (no list, no score header).
///
/// # Safety
/// `policy` is null or a live policy.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_policy_strip_set(
    policy: *const edgeguard_policy,
) -> *const edgeguard_header_set {
    ffi_panic_boundary! {
        policy
            .as_ref()
            .and_then(|p| p.strip.as_ref())
            .map_or(std::ptr::null(), |s| s as *const edgeguard_header_set)
    }
}

impl edgeguard_policy {
    /// How many models the policy was bound to.
    pub(super) fn model_count(&self) -> usize {
        self.policy.model_count()
    }

    /// The strip set, if there is anything to strip.
    pub(super) fn strip(&self) -> Option<&edgeguard_header_set> {
        self.strip.as_ref()
    }

    /// The score header name a scored request is given (empty: none).
    pub(super) fn score_header(&self) -> &[u8] {
        &self.score_header
    }

    /// The models' names, in scoring order.
    pub(super) fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// See `edgeguard_policy_text_room`.
    pub(super) fn text_room(&self) -> usize {
        self.text_room
    }
}

impl edgeguard_action {
    /// The name the shim acts on, sets in `$edgeguard_action` and logs.
    pub(super) fn name(self) -> &'static str {
        match self {
            edgeguard_action::Pass => "pass",
            edgeguard_action::Allow => "allow",
            edgeguard_action::Log => "log",
            edgeguard_action::Block => "block",
            edgeguard_action::Unavailable => "unavailable",
            edgeguard_action::Cleared => "cleared",
            edgeguard_action::Challenge => "challenge",
            edgeguard_action::Verified => "verified",
            edgeguard_action::Answer => "answer",
            edgeguard_action::Refused => "refused",
        }
    }
}
