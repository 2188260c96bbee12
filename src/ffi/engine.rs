//! C ABI for the loaded engine: the load path (`crate::load`) behind one
//! constructor.
//!
//! `edgeguard_engine_new` takes the options (a table filled value by value
//! with `edgeguard_options_put`), reads every file they name, loads the
//! internal header list and the models, binds the base location and
//! returns the engine with its load report: no JSON comes back to be
//! re-read, no part is loaded by a second constructor. A location's
//! `access{}` options are bound through the engine too
//! (`edgeguard_engine_location_new`). The engine lends its parts (the
//! configuration, the base location, the scorer, the header set) for as
//! long as it lives.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use super::boundary::write_error;
use super::config::{edgeguard_config, edgeguard_options, name_or, recorder_of, refuse};
use super::handle::Handle;
use super::headers::edgeguard_header_set;
use super::location::edgeguard_location;
use super::scorer::edgeguard_scorer;
use super::types::edgeguard_result;
use crate::load::Config;

/// A loaded configuration: options, internal header list, scorer, base
/// location and the report of the load. Opaque: made by
/// `edgeguard_engine_new`, released by `edgeguard_engine_free`. Immutable,
/// so one handle may be shared by threads.
pub struct edgeguard_engine {
    loaded: Config,
    /// The options as a configuration handle, lent to the record and
    /// metrics exports and to `edgeguard_config_start_signals`.
    config: edgeguard_config,
    /// The base location as a location handle.
    location: edgeguard_location,
    /// The scorer as a scorer handle (null when none loaded).
    scorer: Option<edgeguard_scorer>,
    /// The internal header list as a set handle (null when none loaded).
    headers: Option<edgeguard_header_set>,
    /// `Report::json`, NUL-terminated, handed out to C.
    report: CString,
}

impl Handle for edgeguard_engine {}

/// Loads what the options in `options` (a table filled with
/// `edgeguard_options_put`) name, as `configure{}`: a `config` file they
/// name is read, the options given beside it override its own; relative
/// paths of the table's are kept as given, a file's are resolved against
/// its directory. `source_name` (NUL-terminated; null: `"options"`) names
/// the table in errors. The internal header list and the models are
/// loaded when the Rust engine runs (`engine` "rust" or "shadow").
///
/// One failure policy: a list or a model that does not load refuses the
/// whole configuration (the message of a model starts `models not
/// loaded, so this configuration is refused`), whatever `fail_closed`
/// says. On success writes the engine to `*out` (release it with
/// `edgeguard_engine_free`); its report is `edgeguard_engine_report`. On
/// failure `*out` is untouched and `errbuf` names the file and the field:
/// - `InvalidArgument`: the table's options are wrong (an unknown option, a
///   wrong type, a value out of range, a value with no JSON form);
/// - `ConfigInvalid`: a file (the `config` file, a list, a model, a key)
///   is bad;
/// - `Io`: the `config` file cannot be read;
/// - `NullParameter`: `options` or `out` is null.
///
/// # Safety
/// `options` is a live table; `source_name` is null or NUL-terminated;
/// `out` is writable; `errbuf` is null or points to `errbuf_len` writable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_new(
    options: *mut edgeguard_options,
    source_name: *const c_char,
    out: *mut *mut edgeguard_engine,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let table = try_mut!(options);
        try_non_null!(out);
        let source = name_or(source_name, "options");
        let json = match table.json_text() {
            Ok(json) => json,
            Err(msg) => {
                write_error(errbuf, errbuf_len, &format_args!("{source}: {msg}"));
                return edgeguard_result::InvalidArgument;
            }
        };
        let loaded = match Config::configure(&source, None, json.as_bytes()) {
            Ok(loaded) => loaded,
            Err(e) => return refuse(&e, errbuf, errbuf_len),
        };
        // serde_json escapes control characters, so the text holds no NUL.
        let report = CString::new(loaded.report().json()).unwrap_or_default();
        let config = edgeguard_config::new(loaded.options().clone());
        edgeguard_engine {
            location: edgeguard_location::shared(Arc::clone(loaded.shared_location()), Arc::clone(&config.recorder)),
            config,
            scorer: loaded.shared_scorer().cloned().map(edgeguard_scorer::shared),
            headers: loaded.shared_headers().cloned().map(edgeguard_header_set::shared),
            loaded,
            report,
        }
        .publish(out)
    }
}

/// Releases an engine. Null is a no-op. Locations made by
/// `edgeguard_engine_location_new` stay valid; what the engine lent
/// (`edgeguard_engine_config`, `_location`, `_scorer`, `_header_set`)
/// does not.
///
/// # Safety
/// `engine` is null or a live engine not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_free(engine: *mut edgeguard_engine) {
    ffi_panic_boundary! {
        edgeguard_engine::free(engine)
    }
}

/// The load report, a NUL-terminated JSON object: the options resolved
/// (as `edgeguard_config_json`, with `warnings` when there are any) and
/// `loaded`: `internal_headers` (the list's rule count; absent when none
/// loaded) and `models` (`{"name", "threshold"}` in scoring order, the
/// model's own threshold or null). Owned by the engine; null for a null
/// engine.
///
/// # Safety
/// `engine` is null or a live engine.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_report(engine: *const edgeguard_engine) -> *const c_char {
    ffi_panic_boundary! {
        engine.as_ref().map_or(std::ptr::null(), |e| e.report.as_ptr())
    }
}

/// The engine's options as a configuration handle (for the record and
/// metrics exports and `edgeguard_config_start_signals`), lent: valid
/// while the engine lives, never freed by the caller. Null for a null
/// engine.
///
/// # Safety
/// `engine` is null or a live engine.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_config(
    engine: *const edgeguard_engine,
) -> *const edgeguard_config {
    ffi_panic_boundary! {
        engine.as_ref().map_or(std::ptr::null(), |e| &e.config as *const edgeguard_config)
    }
}

/// The base location (what a request runs under without `access{}`
/// options), lent: valid while the engine lives, never freed by the
/// caller. Null for a null engine.
///
/// # Safety
/// `engine` is null or a live engine.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_location(
    engine: *const edgeguard_engine,
) -> *const edgeguard_location {
    ffi_panic_boundary! {
        engine.as_ref().map_or(std::ptr::null(), |e| &e.location as *const edgeguard_location)
    }
}

/// The scorer (for `edgeguard_scorer_*`), lent: valid while the engine
/// lives, never freed by the caller. Null for a null engine or when no
/// models were loaded.
///
/// # Safety
/// `engine` is null or a live engine.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_scorer(
    engine: *const edgeguard_engine,
) -> *const edgeguard_scorer {
    ffi_panic_boundary! {
        engine.as_ref().and_then(|e| e.scorer.as_ref()).map_or(std::ptr::null(), |s| s as *const edgeguard_scorer)
    }
}

/// The internal header list (for `edgeguard_header_set_*`), lent: valid
/// while the engine lives, never freed by the caller. Null for a null
/// engine or when no list was loaded.
///
/// # Safety
/// `engine` is null or a live engine.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_header_set(
    engine: *const edgeguard_engine,
) -> *const edgeguard_header_set {
    ffi_panic_boundary! {
        engine.as_ref().and_then(|e| e.headers.as_ref()).map_or(std::ptr::null(), |h| h as *const edgeguard_header_set)
    }
}

/// A location's `access{}` options (a table filled with
/// `edgeguard_options_put`) over the engine's, bound to its list and
/// scorer. Only the per-location options are accepted (docs/
/// configuration.md); `engine` must be one `edgeguard_engine_new` loaded.
/// `source_name` (null: `"options"`) names the table in errors.
///
/// On success writes the location to `*out` (release it with
/// `edgeguard_location_free`) and, when `config_out` is not null, the
/// location's options as a configuration to `*config_out` (release it
/// with `edgeguard_config_free`: the legacy engine binds its own location
/// from it). On failure nothing is written and `errbuf` says why:
/// `InvalidArgument` for a bad option, `NullParameter` for a null
/// `engine`, `options` or `out`.
///
/// # Safety
/// `engine` is a live engine and `options` a live table; `source_name` is
/// null or NUL-terminated; `out` and `config_out` (or null) are writable;
/// `errbuf` is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_engine_location_new(
    engine: *const edgeguard_engine,
    options: *mut edgeguard_options,
    source_name: *const c_char,
    out: *mut *mut edgeguard_location,
    config_out: *mut *mut edgeguard_config,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let engine = try_ref!(engine);
        let table = try_mut!(options);
        try_non_null!(out);
        let source = name_or(source_name, "options");
        let json = match table.json_text() {
            Ok(json) => json,
            Err(msg) => {
                write_error(errbuf, errbuf_len, &format_args!("{source}: {msg}"));
                return edgeguard_result::InvalidArgument;
            }
        };
        match engine.loaded.location_for(&source, json.as_bytes()) {
            Ok((options, location)) => {
                let recorder = Arc::new(recorder_of(&options));
                if !config_out.is_null() {
                    let _ = edgeguard_config::new(options).publish(config_out);
                }
                edgeguard_location::shared(Arc::new(location), recorder).publish(out)
            }
            Err(e) => refuse(&e, errbuf, errbuf_len),
        }
    }
}
