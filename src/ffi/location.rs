//! C ABI for locations and the one request call.
//!
//! A location is everything one `access{}` resolves to
//! (`crate::gate::Location`): made once from a configuration, the models
//! (a scorer's, or the names of another engine's) and the internal header
//! list (`edgeguard_location_new`); every request is then one call,
//! `edgeguard_location_run`: the request in, the gate's pipeline run, its
//! effects out. A scratch (`edgeguard_scratch_new`) holds one thread's
//! buffers, which the effects point into. The same call records a
//! request's head for replay (`EDGEGUARD_JOB_RECORD`: the configuration's
//! recorder, `replay::Redactor`, writes `$edgeguard_request_headers`).

use std::ffi::{c_char, c_int, CString};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::boundary::{utf8_names, write_error};
use super::config::edgeguard_config;
use super::handle::Handle;
use super::headers::edgeguard_header_set;
use super::metrics::edgeguard_metrics;
use super::scorer::edgeguard_scorer;
use super::types::{
    clearance_from_int, edgeguard_request, edgeguard_result, write_effects, EDGEGUARD_MAX_MODELS,
};
use crate::challenge::{Clearance, Proof, Rejection};
use crate::config::Engine;
use crate::gate::{self, Job, Location, Models, Scratch};
use crate::outcome::Outcome;
use crate::replay::Redactor;

pub use super::types::{
    edgeguard_bot, edgeguard_clearance, edgeguard_effects, edgeguard_exit, edgeguard_given,
    edgeguard_var,
};

/// Everything one `access{}` resolves to. Opaque: made by
/// `edgeguard_location_new`, released by `edgeguard_location_free`.
/// Immutable, so one handle may be shared by threads.
// Shared: an engine's base location is lent as a handle of its own.
pub struct edgeguard_location {
    location: Arc<Location>,
    /// Its configuration's request recorder (a record job's).
    recorder: Arc<Redactor>,
}

impl Handle for edgeguard_location {}

impl edgeguard_location {
    /// The handle of `location`, recording by `recorder`, shared.
    pub(super) fn shared(location: Arc<Location>, recorder: Arc<Redactor>) -> edgeguard_location {
        edgeguard_location { location, recorder }
    }
}

/// One thread's buffers for `edgeguard_location_run`. Opaque: made by
/// `edgeguard_scratch_new`, released by `edgeguard_scratch_free`. Used by
/// one thread at a time; it grows to the largest request seen.
pub struct edgeguard_scratch {
    gate: Scratch,
    /// A record job's text, grown to the longest written.
    recorded: Vec<u8>,
}

/// The room a scratch's record text starts with; a longer head grows it.
const RECORD_ROOM: usize = 4096;

impl Handle for edgeguard_scratch {}

/// Binds a configuration into a location. Its models are `scorer`'s (this
/// library scores), or, with a null `scorer`, another engine's, which hands
/// its scores to every run (the legacy Lua engine): `n` of them, model `i`
/// named `names[i]` with its own threshold `own_thresholds[i]` (NaN, or a
/// null `own_thresholds`: none); `n` 0: no models (every request
/// unscored). Each model's threshold is the configured one, else its own.
///
/// The location strips `headers` (null: no internal list; the set is
/// copied, the caller keeps its own) extended with every spelling of the
/// configuration's score header names, and keeps the score header name, the
/// variables, the log levels, the challenge and the verified bots.
///
/// On success writes a new location to `*out`. `NullParameter` for a null
/// `config` or `out`, or null `names` (with `n` > 0) or name;
/// `InvalidArgument` for `names` given with a `scorer`, `n` above 64, or a
/// name that is not UTF-8 (`errbuf` says which).
///
/// # Safety
/// `config` is a live configuration, `scorer` and `headers` null or live
/// handles; `names` points to `n` NUL-terminated strings and
/// `own_thresholds` is null or points to `n` doubles; `out` is writable;
/// `errbuf` is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_location_new(
    config: *const edgeguard_config,
    scorer: *const edgeguard_scorer,
    names: *const *const c_char,
    own_thresholds: *const f64,
    n: usize,
    headers: *const edgeguard_header_set,
    out: *mut *mut edgeguard_location,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let config = try_ref!(config);
        try_non_null!(out);
        // Before any array is read: a count larger than the arrays would
        // read past them.
        if n > EDGEGUARD_MAX_MODELS || (n > 0 && !scorer.is_null()) {
            write_error(errbuf, errbuf_len, &format_args!(
                "{n} model names given; a location binds a scorer's models, or at most {EDGEGUARD_MAX_MODELS} names"
            ));
            return edgeguard_result::InvalidArgument;
        }
        let names = match utf8_names(names, n, "model", edgeguard_result::InvalidArgument, errbuf, errbuf_len) {
            Ok(names) => names,
            Err(code) => return code,
        };
        let own = super::raw::slice(own_thresholds, n).filter(|_| !own_thresholds.is_null());
        let given: Vec<(&str, Option<f64>)> = names.iter().enumerate()
            .map(|(i, &name)| (name, own.map(|t| t[i]).filter(|t| !t.is_nan())))
            .collect();
        let models = match scorer.as_ref() {
            Some(s) => Models::Scorer(s.scorer.clone()),
            None => Models::Given(&given),
        };
        match Location::new(&config.options, models, headers.as_ref().map(|h| h.set())) {
            Ok(loc) => edgeguard_location::shared(Arc::new(loc), Arc::clone(&config.recorder)).publish(out),
            Err(e) => {
                // Not reached: the names were checked when the options were parsed.
                write_error(errbuf, errbuf_len, &e);
                edgeguard_result::InvalidArgument
            }
        }
    }
}

/// Releases a location. Null is a no-op.
///
/// # Safety
/// `location` is null or a live location not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_location_free(location: *mut edgeguard_location) {
    ffi_panic_boundary! {
        edgeguard_location::free(location)
    }
}

/// How many models the location is bound to: the `scores_len` of a given
/// engine's scores (0 for null).
///
/// # Safety
/// `location` is null or a live location.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_location_model_count(
    location: *const edgeguard_location,
) -> usize {
    ffi_panic_boundary! {
        location.as_ref().map_or(0, |l| l.location.model_count())
    }
}

/// Makes one thread's buffers for `edgeguard_location_run`.
/// `NullParameter` for a null `out`.
///
/// # Safety
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scratch_new(
    out: *mut *mut edgeguard_scratch,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out);
        edgeguard_scratch { gate: Scratch::new(), recorded: vec![0; RECORD_ROOM] }.publish(out)
    }
}

/// Releases a scratch. Null is a no-op. Effects pointing into it are then
/// dangling.
///
/// # Safety
/// `scratch` is null or a live scratch not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scratch_free(scratch: *mut edgeguard_scratch) {
    ffi_panic_boundary! {
        edgeguard_scratch::free(scratch)
    }
}

/// Runs one request through the location: the job (an `edgeguard_job`:
/// the whole pipeline, only the strip, or the record: the request head
/// as the location's configuration redacts it, in the variable
/// `edgeguard_request_headers`, for `edgeguard replay`) on `request` at `now`, the
/// caller's Unix time (nginx's `ngx.time()`, against which clearance
/// cookies and answers are judged), and writes everything the request
/// comes to into `*out` (see `edgeguard_effects`): the headers to clear,
/// the score header, the variables, the log line, the exit. Its pointers
/// point into `scratch`, the location and the request, valid until the
/// next run with `scratch`.
///
/// `given` (null: this library strips and scores) is another engine's work
/// on the request (the legacy Lua engine's scores and strip count): the
/// location then strips only the score header's spellings and decides on
/// those scores. `metrics` (null: not counted) counts an `Access` job: its
/// time and scores (this library's), the outcome, the entries removed, the
/// clearance, the bot claim and an answer, under the engine `Rust` (`Lua`
/// with `given`).
///
/// A record job may pass a null `location`: the default options' (the
/// default redaction, without a challenge), as before any configuration.
///
/// `NullParameter` for a null `location` (but a record job's), `request`, `scratch` or `out`,
/// null headers with a count, or null given scores with a count;
/// `InvalidArgument` for a `job` that is none, given scores whose count is
/// not the location's model count, an `http_version` outside `0..=65535`,
/// a `headers_len` above `UINT32_MAX` or a `tls` whose JA4 is not one.
/// On an error nothing is written or counted. Never allocates once the
/// scratch has grown to fit; concurrent calls are safe with a scratch
/// each.
///
/// # Safety
/// `location`, `scratch` and `metrics` (or null) are live handles;
/// `request` and `given` (or null) point to valid structs whose pointers
/// point to their stated lengths; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_location_run(
    location: *const edgeguard_location,
    metrics: *const edgeguard_metrics,
    request: *const edgeguard_request,
    given: *const edgeguard_given,
    job: c_int,
    now: i64,
    scratch: *mut edgeguard_scratch,
    out: *mut edgeguard_effects,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let started = Instant::now();
        let Some(job) = Job::from_int(job) else {
            return edgeguard_result::InvalidArgument;
        };
        let loc = match (location.is_null(), job) {
            (true, Job::Record) => match default_location() {
                Some(loc) => loc,
                None => return edgeguard_result::Panic,
            },
            _ => try_ref!(location),
        };
        let (request, scratch, out) = (try_ref!(request), try_mut!(scratch), try_mut!(out));
        let mut req = match request.view() {
            Ok(req) => req,
            Err(code) => return code,
        };
        if let Some(g) = given.as_ref() {
            match g.view() {
                Ok(g) => req = req.given(g),
                Err(code) => return code,
            }
        }
        let now = u64::try_from(now).unwrap_or(0);
        // The client memory times gaps between navigations in ms; nginx's
        // cached `now` has whole seconds.
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        let req = req.with_time_ms(ms);
        let Ok(mut effects) = gate::run(&loc.location, &req, job, now, &mut scratch.gate) else {
            return edgeguard_result::InvalidArgument;
        };
        if job == Job::Record {
            let buf = &mut scratch.recorded;
            let len = match loc.recorder.write(&req, buf) {
                Ok(len) => len,
                Err(need) => {
                    // Grown once to the longest head seen; the second
                    // write fits it.
                    buf.resize(need, 0);
                    match loc.recorder.write(&req, buf) {
                        Ok(len) => len,
                        Err(_) => return edgeguard_result::BufferTooSmall,
                    }
                }
            };
            effects = effects.with_recorded(&buf[..len]);
        }
        write_effects(&effects, out);
        if let (Some(m), Job::Access) = (metrics.as_ref(), job) {
            let engine = if given.is_null() { Engine::Rust } else { Engine::Lua };
            gate::count(&m.registry, &effects, engine, started.elapsed().as_secs_f64());
        }
        edgeguard_result::Ok
    }
}

/// The location of the default options, which a record job without a
/// location records by (before any configuration: the default redaction,
/// as `edgeguard_config_record` without one). Made once; none if the
/// defaults did not load (they read no file).
fn default_location() -> Option<&'static edgeguard_location> {
    static DEFAULT: OnceLock<Option<edgeguard_location>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            let loaded = crate::load::Config::configure("defaults", None, b"{}").ok()?;
            let recorder = Arc::new(super::config::recorder_of(loaded.options()));
            Some(edgeguard_location::shared(
                Arc::clone(loaded.shared_location()),
                recorder,
            ))
        })
        .as_ref()
}

/// The name of an `edgeguard_outcome` (`"pass"`, `"block"`, ...): what
/// `$edgeguard_action` holds and `access()` returns. Null for a number that
/// is none. Static storage.
#[no_mangle]
pub extern "C" fn edgeguard_outcome_name(outcome: c_int) -> *const c_char {
    ffi_panic_boundary! {
        Outcome::from_int(outcome).map_or(std::ptr::null(), |a| a.c_name().as_ptr())
    }
}

/// The name of detection ID `index` (bit `index` of
/// `edgeguard_effects.reasons`: `"ua_library"`, `"tls_family_mismatch"`,
/// ...; docs/detections.md); null from `EDGEGUARD_DETECTION_COUNT` on.
/// Static storage.
#[no_mangle]
pub extern "C" fn edgeguard_detection_name(index: usize) -> *const c_char {
    ffi_panic_boundary! {
        crate::features::reasons::DETECTIONS
            .get(index)
            .map_or(std::ptr::null(), |d| d.c_name.as_ptr())
    }
}

/// The name of a clearance result, for logs and metric labels
/// (`"absent"`, `"accepted"`, `"malformed"`, `"mac"`, `"expired"`,
/// `"address"`, `"user_agent"`, `"work"`, `"tls"`, `"early"`,
/// `"accepted_wait"`); null for a number that is none.
/// Static storage.
#[no_mangle]
pub extern "C" fn edgeguard_clearance_name(clearance: c_int) -> *const c_char {
    ffi_panic_boundary! {
        // NUL-terminated copies of the rejections' names, made once.
        static REJECTIONS: OnceLock<Vec<CString>> = OnceLock::new();
        let rejections = REJECTIONS.get_or_init(|| {
            Rejection::ALL.iter().map(|r| CString::new(r.as_str()).unwrap_or_default()).collect()
        });
        match clearance_from_int(clearance) {
            None => std::ptr::null(),
            Some(Clearance::Absent) => c"absent".as_ptr(),
            Some(Clearance::Accepted(Proof::Work)) => c"accepted".as_ptr(),
            Some(Clearance::Accepted(Proof::Wait)) => c"accepted_wait".as_ptr(),
            Some(Clearance::Rejected(r)) => rejections[r.index()].as_ptr(),
        }
    }
}
