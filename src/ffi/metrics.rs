//! C ABI for the metrics registry (`crate::metrics`).
//!
//! The Lua shim makes one registry per `configure()` (`edgeguard_metrics_new`)
//! and hands it to the request call, which counts into it
//! (`edgeguard_location_run`: the requests, decisions, stripped entries,
//! scores, time, clearances, bots and answers). The legacy Lua engine and
//! shadow mode count their own engine's time and scores, shadow mode its
//! requests, and the shim its failures, through
//! `edgeguard_metrics_request`, `_scores`, `_engine_time` and
//! `_disagreement`. Nginx's side stays in Lua: a timer
//! drains the deltas (`edgeguard_metrics_drain`) into a `lua_shared_dict`
//! under the keys `edgeguard_metrics_key` names, and a scrape reads the
//! dict's totals back into `edgeguard_metrics_text`.

use std::ffi::{c_char, c_int};

use super::boundary::utf8_names;
use super::config::edgeguard_config;
use super::handle::Handle;
use super::raw::{bytes_mut, slice};
use super::types::{edgeguard_effects, edgeguard_result, edgeguard_str, seen_of_raw};
use crate::config::text::Cursor;
use crate::config::Engine;
use crate::metrics::{Disagreement, Registry, Spec};
use crate::outcome::Outcome;

/// A worker process's metrics: the series of one configuration and its
/// deltas since the last drain. Opaque: made by `edgeguard_metrics_new`,
/// released by `edgeguard_metrics_free`. The counting calls take it
/// shared (relaxed atomics), so concurrent calls are safe.
pub struct edgeguard_metrics {
    pub(crate) registry: Registry,
}

impl Handle for edgeguard_metrics {}

/// Makes the metrics registry of a configuration. `config` decides the
/// series (its `engine`: `shadow` gives requests series for all three
/// settings, a location may pick either engine, and score and time series
/// for both engines; `challenge_secret`: the challenge and clearance
/// series; `verified_bots`: a series pair per bot); the caller gives each
/// engine's model names in scoring order (`rust_models`/`n_rust`,
/// `lua_models`/`n_lua`; null with 0: none, e.g. not loaded). Every series
/// starts at 0.
///
/// On success writes a new registry to `*out` (release it with
/// `edgeguard_metrics_free`). `NullParameter` for a null `config`, `out`,
/// list (with a nonzero count) or name; `InvalidArgument` for a name that
/// is not UTF-8 (`errbuf` says which).
///
/// # Safety
/// `config` is a live configuration; the lists point to their counts'
/// NUL-terminated strings (or are null with 0); `out` is writable;
/// `errbuf` is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_new(
    config: *const edgeguard_config,
    rust_models: *const *const c_char,
    n_rust: usize,
    lua_models: *const *const c_char,
    n_lua: usize,
    out: *mut *mut edgeguard_metrics,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(config, out);
        let bad = edgeguard_result::InvalidArgument;
        let lists = (
            utf8_names(rust_models, n_rust, "Rust model", bad, errbuf, errbuf_len),
            utf8_names(lua_models, n_lua, "Lua model", bad, errbuf, errbuf_len),
        );
        let (rust, lua) = match lists {
            (Ok(r), Ok(l)) => (r, l),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let options = &(*config).options;
        let bots: Vec<&str> = options
            .bots
            .as_deref()
            .map(|b| (0..b.len()).filter_map(|i| b.name(i)).collect())
            .unwrap_or_default();
        let registry = Registry::new(&Spec {
            engine: options.engine(),
            rust_models: &rust,
            lua_models: &lua,
            challenge: options.keys.is_some(),
            bots: &bots,
            signals: options.fleet.as_ref(),
            reasons: true,
            clients: options.clients.as_ref(),
        });
        edgeguard_metrics { registry }.publish(out)
    }
}

/// Releases a registry. Null is a no-op.
///
/// # Safety
/// `metrics` is null or a registry from `edgeguard_metrics_new`, not used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_free(metrics: *mut edgeguard_metrics) {
    ffi_panic_boundary! {
        edgeguard_metrics::free(metrics)
    }
}

/// How many slots (shared dict keys) the registry has; 0 for null.
///
/// # Safety
/// `metrics` is null or a live registry.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_len(metrics: *const edgeguard_metrics) -> usize {
    ffi_panic_boundary! {
        metrics.as_ref().map_or(0, |m| m.registry.len())
    }
}

/// Writes slot `slot`'s key in the shared dict to `*out`: memory the
/// registry owns, valid while it lives. `NullParameter` for a null
/// `metrics` or `out`; `InvalidArgument` for a slot beyond
/// `edgeguard_metrics_len`.
///
/// # Safety
/// `metrics` is a live registry; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_key(
    metrics: *const edgeguard_metrics,
    slot: usize,
    out: *mut edgeguard_str,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics, out);
        match (*metrics).registry.key(slot) {
            Some(k) => {
                *out = edgeguard_str::from_slice(k.as_bytes());
                edgeguard_result::Ok
            }
            None => edgeguard_result::InvalidArgument,
        }
    }
}

/// Lists this process's non-zero deltas since the last drain as pairs
/// `slots[i]`, `deltas[i]` (at most `cap`; the rest stay for the next
/// drain, so `cap` = `edgeguard_metrics_len` lists all), zeroes them and
/// writes how many to `*out_len`. `NullParameter` for a null `metrics` or
/// `out_len`, or a null array with a nonzero `cap`. Never allocates.
///
/// # Safety
/// `metrics` is a live registry; `slots` and `deltas` point to `cap`
/// writable values (or are null with `cap` 0); `out_len` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_drain(
    metrics: *const edgeguard_metrics,
    slots: *mut u32,
    deltas: *mut f64,
    cap: usize,
    out_len: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics, out_len);
        if cap > 0 && (slots.is_null() || deltas.is_null()) {
            return edgeguard_result::NullParameter;
        }
        if cap > isize::MAX as usize / std::mem::size_of::<f64>() {
            return edgeguard_result::InvalidArgument;
        }
        let (s, d) = if cap == 0 {
            (&mut [][..], &mut [][..])
        } else {
            (
                std::slice::from_raw_parts_mut(slots, cap),
                std::slice::from_raw_parts_mut(deltas, cap),
            )
        };
        *out_len = (*metrics).registry.drain(s, d);
        edgeguard_result::Ok
    }
}

/// Gives a drained delta back to slot `slot` (the shared dict refused it),
/// so the next drain lists it again. `NullParameter` for a null `metrics`;
/// `InvalidArgument` for a slot beyond `edgeguard_metrics_len`.
///
/// # Safety
/// `metrics` is null or a live registry.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_restore(
    metrics: *const edgeguard_metrics,
    slot: usize,
    delta: f64,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics);
        if (*metrics).registry.restore(slot, delta) {
            edgeguard_result::Ok
        } else {
            edgeguard_result::InvalidArgument
        }
    }
}

/// The buffer `edgeguard_metrics_text` needs: enough for any values. 0 for
/// null.
///
/// # Safety
/// `metrics` is null or a live registry.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_text_room(metrics: *const edgeguard_metrics) -> usize {
    ffi_panic_boundary! {
        metrics.as_ref().map_or(0, |m| m.registry.text_room())
    }
}

/// Writes the Prometheus text exposition (format 0.0.4) of `values`, the
/// shared dict's total of each slot (`n` = `edgeguard_metrics_len`; a
/// missing key is 0), into `buf` and its length into `*out_len`.
/// `NullParameter` for a null `metrics`, `values` (with `n` > 0), `buf` or
/// `out_len`; `InvalidArgument` for another `n`; `BufferTooSmall` for a
/// `cap` below `edgeguard_metrics_text_room`. Never allocates.
///
/// # Safety
/// `metrics` is a live registry; `values` points to `n` doubles; `buf` to
/// `cap` writable bytes; `out_len` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_text(
    metrics: *const edgeguard_metrics,
    values: *const f64,
    n: usize,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics, buf, out_len);
        let r = &(*metrics).registry;
        let Some(values) = slice(values, n) else {
            return edgeguard_result::NullParameter;
        };
        if n != r.len() {
            return edgeguard_result::InvalidArgument;
        }
        if cap < r.text_room() {
            return edgeguard_result::BufferTooSmall;
        }
        let Some(out) = bytes_mut(buf, cap) else {
            return edgeguard_result::InvalidArgument;
        };
        let mut w = Cursor::new(out);
        match r.write_text(values, &mut w) {
            Ok(_) => {
                *out_len = w.len();
                edgeguard_result::Ok
            }
            // Not reached: the room holds the widest numbers.
            Err(_) => edgeguard_result::BufferTooSmall,
        }
    }
}

/// Counts one request that `edgeguard_location_run` did not count (shadow
/// mode, and the shim's failures): `engine` the location's engine setting
/// (an `edgeguard_engine`), `outcome` an `edgeguard_outcome`, `removed` the
/// internal header entries the acting engine removed, and `out` (null:
/// none) the Rust engine's effects for this request, whose clearance and
/// bot claim are counted when the request got as far as acting (not for
/// `Unavailable`, `Answer`, `Error`, `Refused`). A `Challenge` outcome also
/// counts a page served. Series the registry does not have (another
/// engine) are not counted.
///
/// `NullParameter` for a null `metrics`; `InvalidArgument` for an engine
/// or outcome that is none, or an `out` whose `bot` or `clearance` is no
/// number of its enum. Never allocates.
///
/// # Safety
/// `metrics` is a live registry; `out` is null or readable, its
/// `bot_name` pointing to its length (the location's memory).
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_request(
    metrics: *const edgeguard_metrics,
    engine: c_int,
    outcome: c_int,
    removed: usize,
    out: *const edgeguard_effects,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics);
        let (Some(engine), Some(outcome)) = (Engine::from_int(engine), Outcome::from_int(outcome)) else {
            return edgeguard_result::InvalidArgument;
        };
        let seen = if out.is_null() {
            None
        } else {
            match seen_of_raw(out, &(*metrics).registry) {
                Some(seen) => Some(seen),
                None => return edgeguard_result::InvalidArgument,
            }
        };
        (*metrics).registry.request(engine, outcome, removed, seen);
        edgeguard_result::Ok
    }
}

/// Counts one request's scores by `engine` (`Rust` or `Lua`): `n` of
/// them in that engine's model order. `NullParameter` for a null
/// `metrics` or `scores` (with `n` > 0); `InvalidArgument` for another
/// engine or an `n` other than the engine's model count in the registry.
///
/// # Safety
/// `metrics` is a live registry; `scores` points to `n` doubles.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_scores(
    metrics: *const edgeguard_metrics,
    engine: c_int,
    scores: *const f64,
    n: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics);
        let Some(scores) = slice(scores, n) else {
            return edgeguard_result::NullParameter;
        };
        match Engine::from_int(engine) {
            Some(e) if e != Engine::Shadow && (*metrics).registry.scores(e, scores) => edgeguard_result::Ok,
            _ => edgeguard_result::InvalidArgument,
        }
    }
}

/// Counts `seconds` spent in `engine` (`Rust` or `Lua`) for one request
/// (the caller's monotonic clock). `NullParameter` for a null `metrics`;
/// `InvalidArgument` for an engine without time series in the registry.
///
/// # Safety
/// `metrics` is a live registry.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_engine_time(
    metrics: *const edgeguard_metrics,
    engine: c_int,
    seconds: f64,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics);
        match Engine::from_int(engine) {
            Some(e) if e != Engine::Shadow && (*metrics).registry.engine_time(e, seconds) => edgeguard_result::Ok,
            _ => edgeguard_result::InvalidArgument,
        }
    }
}

/// Counts one shadow disagreement of `kind` (an `edgeguard_disagreement`).
/// `NullParameter` for a null `metrics`; `InvalidArgument` for a kind
/// that is none.
///
/// # Safety
/// `metrics` is a live registry.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_disagreement(
    metrics: *const edgeguard_metrics,
    kind: c_int,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics);
        let Some(kind) = Disagreement::from_int(kind) else {
            return edgeguard_result::InvalidArgument;
        };
        (*metrics).registry.disagreement(kind);
        edgeguard_result::Ok
    }
}

/// Counts `n` models that failed to load. The caller counts each
/// configuration generation once across workers (the shim: whichever
/// worker first adds the generation's key to the shared dict).
/// `NullParameter` for a null `metrics`.
///
/// # Safety
/// `metrics` is a live registry.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_metrics_load_errors(
    metrics: *const edgeguard_metrics,
    n: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(metrics);
        (*metrics).registry.load_errors(n);
        edgeguard_result::Ok
    }
}
