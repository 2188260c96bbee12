//! C ABI for the configuration.
//!
//! The Lua shim hands its `configure{}` table to Rust value by value
//! (`edgeguard_options_*`: no JSON encoder in Lua), and the JSON that makes
//! to `edgeguard_config_new` (which reads a `config` file it names); it
//! reads the resolved options back once (`edgeguard_config_json`). A
//! location's `access{}` options make a derived configuration
//! (`edgeguard_config_new_for_location`), bound into a location
//! (`src/ffi/location.rs`). The parsing is `crate::config`'s, the one
//! `edgeguard replay` runs.

use std::ffi::{c_char, c_int, CString};
use std::path::Path;
use std::sync::Arc;

use super::boundary::write_error;
use super::handle::Handle;
use super::raw::{bytes, c_bytes};
use super::types::edgeguard_result;
use crate::config::table::{Put, Table};
use crate::config::{ConfigError, ErrorOrigin, Options};
use crate::replay::Redactor;

pub use super::types::edgeguard_value;

/// Parsed and checked options. Opaque: made by `edgeguard_config_new` or
/// `edgeguard_config_new_for_location`, released by `edgeguard_config_free`.
/// Immutable, so one handle may be shared by threads.
pub struct edgeguard_config {
    pub(super) options: Options,
    /// `options` resolved, as NUL-terminated JSON, handed out to C.
    json: CString,
    /// The request recorder these options make (`edgeguard_config_record`),
    /// shared with the locations bound from them (a record job's).
    pub(super) recorder: Arc<Redactor>,
}

impl Handle for edgeguard_config {}

/// A table of options being handed over value by value (for callers
/// without an exact JSON encoder: the Lua shim). Opaque: made by
/// `edgeguard_options_new`, filled by `edgeguard_options_put`, read by
/// `edgeguard_options_json`, released by `edgeguard_options_free`. One
/// thread at a time.
pub struct edgeguard_options {
    table: Table,
    /// The last JSON text made, handed out to C.
    json: Vec<u8>,
}

impl Handle for edgeguard_options {}

/// Writes the error and returns its code: options the caller wrote are
/// misuse (`InvalidArgument`), a bad file `ConfigInvalid`, an unreadable
/// one `Io`.
///
/// # Safety
/// `errbuf` is null or points to `errbuf_len` writable bytes.
pub(super) unsafe fn refuse(
    e: &ConfigError,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    write_error(errbuf, errbuf_len, e);
    match e.origin() {
        ErrorOrigin::Caller => edgeguard_result::InvalidArgument,
        ErrorOrigin::File => edgeguard_result::ConfigInvalid,
        ErrorOrigin::Io => edgeguard_result::Io,
    }
}

impl edgeguard_config {
    /// The handle of `options`, with their resolved JSON and recorder.
    pub(super) fn new(options: Options) -> edgeguard_config {
        // serde_json escapes control characters, so the text holds no NUL.
        let json = CString::new(options.resolved_json()).unwrap_or_default();
        let recorder = Arc::new(recorder_of(&options));
        edgeguard_config {
            options,
            json,
            recorder,
        }
    }
}

/// The request recorder of `options`: their `redact` option and challenge.
pub(super) fn recorder_of(options: &Options) -> Redactor {
    Redactor::new(
        options.redact().is_some(),
        options.redact().unwrap_or_default(),
        options.challenge(),
        options.clients.as_ref().map(|m| m.cookie_key()),
    )
}

impl edgeguard_options {
    /// The table's options as JSON text, or the message naming the
    /// option whose value has no JSON form.
    pub(super) fn json_text(&mut self) -> Result<String, String> {
        self.table.json()
    }
}

/// Publishes `options` to `*out`, with their resolved JSON.
///
/// # Safety
/// `out` is writable.
unsafe fn publish(options: Options, out: *mut *mut edgeguard_config) -> edgeguard_result {
    edgeguard_config::new(options).publish(out)
}

/// `source_name` as text, or `default` for null.
///
/// # Safety
/// `name` is null or NUL-terminated.
pub(super) unsafe fn name_or(name: *const c_char, default: &str) -> String {
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
        match Options::configure(&source, base, text).and_then(|o| o.with_shared_memory(&source)) {
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
        let base = try_ref!(base);
        try_non_null!(out);
        let Some(text) = bytes(json, len) else {
            return edgeguard_result::NullParameter;
        };
        let source = name_or(source_name, "options");
        match base.options.with_access(&source, text) {
            Ok(options) => publish(options, out),
            Err(e) => refuse(&e, errbuf, errbuf_len),
        }
    }
}

/// Releases a configuration. Null is a no-op. Locations bound from it stay
/// valid (they hold their own copy of what they need).
///
/// # Safety
/// `config` is null or a live configuration not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_free(config: *mut edgeguard_config) {
    ffi_panic_boundary! {
        edgeguard_config::free(config)
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

/// Starts this process's refresh thread of the fleet signals snapshot the
/// configuration loaded (option `signals`), which looks at the file every
/// `signals_refresh` seconds and swaps a new snapshot in off the request
/// path. A no-op without `signals`, with `signals_refresh` 0, and after
/// the first call. Call it in each nginx worker (`init_worker_by_lua`),
/// never in the master: threads do not survive `fork()`. A worker whose
/// caller did not call it starts the thread on its first request.
/// `NullParameter` for a null `config`.
///
/// # Safety
/// `config` is null or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_start_signals(
    config: *const edgeguard_config,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let config = try_ref!(config);
        if let Some(live) = &config.options.fleet {
            live.start();
        }
        edgeguard_result::Ok
    }
}

/// Makes an empty table of options. `NullParameter` for a null `out`.
///
/// # Safety
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_options_new(
    out: *mut *mut edgeguard_options,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out);
        edgeguard_options { table: Table::new(), json: Vec::new() }.publish(out)
    }
}

/// Releases a table of options. Null is a no-op.
///
/// # Safety
/// `options` is null or a live table not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_options_free(options: *mut edgeguard_options) {
    ffi_panic_boundary! {
        edgeguard_options::free(options)
    }
}

/// Puts one value into the table open at `depth` (0: the top level of
/// options), under `key` (`key_len` bytes; null: the next item of a list),
/// closing the tables open deeper. `kind` (an `edgeguard_value`) says
/// which of `number` (`Number`, `Boolean`) or `text` (`String`, or the type
/// name of an `Other` value) holds it; an `Object` or `Array` opens a table
/// at `depth + 1` for the values that follow. A value no option can take
/// (`Other`, a string not UTF-8, a table nested deeper than 8) is refused
/// by `edgeguard_options_json`, which names it.
///
/// `NullParameter` for a null `options`, or a null `key` or `text` with a
/// length; `InvalidArgument` for a `kind` that is none or a `depth` at
/// which no table is open.
///
/// # Safety
/// `options` is a live table; `key` and `text` point to their lengths.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_options_put(
    options: *mut edgeguard_options,
    depth: usize,
    key: *const u8,
    key_len: usize,
    kind: c_int,
    number: f64,
    text: *const u8,
    text_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let o = try_mut!(options);
        let (Some(k), Some(t)) = (bytes(key, key_len), bytes(text, text_len)) else {
            return edgeguard_result::NullParameter;
        };
        let key = (!key.is_null()).then(|| String::from_utf8_lossy(k));
        let value = match kind {
            k if k == edgeguard_value::String as c_int => Put::String(t),
            k if k == edgeguard_value::Number as c_int => Put::Number(number),
            k if k == edgeguard_value::Boolean as c_int => Put::Boolean(number != 0.0),
            k if k == edgeguard_value::Object as c_int => Put::Object,
            k if k == edgeguard_value::Array as c_int => Put::Array,
            k if k == edgeguard_value::Other as c_int => Put::Other(std::str::from_utf8(t).unwrap_or("value")),
            _ => return edgeguard_result::InvalidArgument,
        };
        match o.table.put(depth, key.as_deref(), value) {
            Ok(()) => edgeguard_result::Ok,
            Err(_) => edgeguard_result::InvalidArgument,
        }
    }
}

/// The table's options as JSON, for `edgeguard_config_new` and
/// `edgeguard_config_new_for_location`: `*out` and `*out_len` receive text
/// the table owns, valid until it is freed or put to again. Numbers are
/// written exactly (the shortest text that reads back as the same double).
/// `InvalidArgument` for a value with no JSON form, with `errbuf` naming
/// its option (`option 'allow[1]' must not be a function`);
/// `NullParameter` for a null pointer but `errbuf`.
///
/// # Safety
/// `options` is a live table; `out` and `out_len` are writable; `errbuf`
/// is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_options_json(
    options: *mut edgeguard_options,
    out: *mut *const u8,
    out_len: *mut usize,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let o = try_mut!(options);
        try_non_null!(out, out_len);
        match o.table.json() {
            Ok(json) => {
                o.json = json.into_bytes();
                *out = o.json.as_ptr();
                *out_len = o.json.len();
                edgeguard_result::Ok
            }
            Err(msg) => {
                write_error(errbuf, errbuf_len, &msg);
                edgeguard_result::InvalidArgument
            }
        }
    }
}
