//! C ABI for the bot scorer.
//!
//! A scorer is built once from named model files (`edgeguard_scorer_new`),
//! shared read-only by any number of threads, asked for one score per model
//! per request (`edgeguard_scorer_score`, no heap allocation) and released
//! with `edgeguard_scorer_free`. A location bound to it
//! (`edgeguard_location_new`) scores with it too.

use std::ffi::{c_char, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use super::boundary::{utf8_names, write_error};
use super::handle::Handle;
use super::raw::{c_bytes, slice};
use super::types::{edgeguard_result, score_error};
use crate::scorer::{LoadError, Scorer, MAX_MODELS};

pub use super::types::edgeguard_request;

/// A set of CatBoost models scoring requests. Opaque: made by
/// `edgeguard_scorer_new`, released by `edgeguard_scorer_free`. Immutable
/// after loading, so one handle may be used from several threads at once.
pub struct edgeguard_scorer {
    pub(super) scorer: Arc<Scorer>,
    /// NUL-terminated copies of the model names, handed out to C.
    names: Vec<CString>,
}

impl Handle for edgeguard_scorer {}

impl edgeguard_scorer {
    /// The handle of a loaded scorer, sharing its models.
    pub(super) fn shared(scorer: Arc<Scorer>) -> edgeguard_scorer {
        // Names hold no control characters (checked at load), so no NUL.
        let names = scorer
            .models()
            .iter()
            .map(|m| CString::new(m.name()).unwrap_or_default())
            .collect();
        edgeguard_scorer { scorer, names }
    }
}

/// The result code for a scorer that could not be built.
fn load_error_result(e: &LoadError) -> edgeguard_result {
    match e {
        _ if e.is_io() => edgeguard_result::Io,
        LoadError::Model { .. } | LoadError::Incompatible { .. } => edgeguard_result::ModelInvalid,
        LoadError::Config { .. } => edgeguard_result::ConfigInvalid,
    }
}

/// Loads `n` models, model `i` named `names[i]` from the CatBoost JSON
/// export at `paths[i]`, and binds each one's inputs to the feature schema
/// by feature name.
///
/// On success `*out` receives a new scorer owned by the caller (release it
/// with `edgeguard_scorer_free`); scores come in the order of `names`. On
/// failure `*out` is untouched and `errbuf` receives a message naming the
/// model, its file and the feature or field at fault (truncated to
/// `errbuf_len - 1` bytes):
/// - `Io`: a model file could not be read;
/// - `ModelInvalid`: a file is not a usable CatBoost model, or the scorer
///   cannot feed it (an input the schema lacks or without a name, a
///   MultiClass or multi-dimensional model, a loss that is neither binary
///   classification nor regression, a malformed `edgeguard.threshold`);
/// - `ConfigInvalid`: `n` is 0 or above 64, or a name is empty, repeated,
///   not UTF-8 or holds control characters;
/// - `NullParameter`: `names`, `paths`, `out` or one of the strings is null.
///
/// # Safety
/// `names` and `paths` point to `n` NUL-terminated strings each; `out` is
/// writable; `errbuf` is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_new(
    names: *const *const c_char,
    paths: *const *const c_char,
    n: usize,
    out: *mut *mut edgeguard_scorer,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(names, paths, out);
        // Checked before the arrays are read: a count larger than the arrays
        // (SIZE_MAX, a negative int converted) would read past them. The
        // message is the one `Scorer::load` gives for the same count.
        if n > MAX_MODELS {
            write_error(errbuf, errbuf_len, &format_args!("{n} models given; a scorer holds at most {MAX_MODELS}"));
            return edgeguard_result::ConfigInvalid;
        }
        let Some(paths) = slice(paths, n).filter(|p| p.iter().all(|p| !p.is_null())) else {
            return edgeguard_result::NullParameter;
        };
        let names = match utf8_names(names, n, "model", edgeguard_result::ConfigInvalid, errbuf, errbuf_len) {
            Ok(names) => names,
            Err(code) => return code,
        };
        let paths = paths.iter().map(|&p| Path::new(OsStr::from_bytes(c_bytes(p))));
        let models: Vec<(&str, &Path)> = names.into_iter().zip(paths).collect();
        match Scorer::load(&models) {
            Ok(scorer) => edgeguard_scorer::shared(Arc::new(scorer)).publish(out),
            Err(e) => {
                write_error(errbuf, errbuf_len, &e);
                load_error_result(&e)
            }
        }
    }
}

/// Releases a scorer. Null is a no-op. Locations bound to it stay valid
/// (they share its models).
///
/// # Safety
/// `scorer` is null or a handle from `edgeguard_scorer_new` not yet freed,
/// and no other thread is using it.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_free(scorer: *mut edgeguard_scorer) {
    ffi_panic_boundary! {
        edgeguard_scorer::free(scorer)
    }
}

/// How many models the scorer holds: the number of scores
/// `edgeguard_scorer_score` writes (0 for null).
///
/// # Safety
/// `scorer` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_model_count(scorer: *const edgeguard_scorer) -> usize {
    ffi_panic_boundary! {
        scorer.as_ref().map_or(0, |s| s.scorer.model_count())
    }
}

/// The name of model `i` (NUL-terminated), owned by the scorer and valid
/// until it is freed; null for a null scorer or `i` out of range.
///
/// # Safety
/// `scorer` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_model_name(
    scorer: *const edgeguard_scorer,
    i: usize,
) -> *const c_char {
    ffi_panic_boundary! {
        scorer
            .as_ref()
            .and_then(|s| s.names.get(i))
            .map_or(std::ptr::null(), |name| name.as_ptr())
    }
}

/// The default threshold of model `i` from its metadata
/// (`edgeguard.threshold`: a probability for classifiers); NaN if the model
/// has none, `i` is out of range or the scorer is null.
///
/// # Safety
/// `scorer` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_model_threshold(
    scorer: *const edgeguard_scorer,
    i: usize,
) -> f64 {
    // The boundary's panic value for f64 is 0.0, a valid threshold; the
    // body only reads a Vec by checked index and cannot panic.
    ffi_panic_boundary! {
        scorer
            .as_ref()
            .and_then(|s| s.scorer.threshold(i))
            .unwrap_or(f64::NAN)
    }
}

/// Scores one request: `out_scores[i]` receives model `i`'s score (the
/// probability of the positive class for a binary classifier, the raw
/// formula value for a regression).
///
/// `n` must equal `edgeguard_scorer_model_count`: a smaller `n` is
/// `BufferTooSmall`, a larger one `InvalidArgument` (the caller's idea of
/// the models differs from the scorer's). `NullParameter` for a null
/// scorer, request or `out_scores`, or a null `headers` with a non-zero
/// `headers_len`; `InvalidArgument` for an `http_version` outside
/// `0..=65535`, a `headers_len` above `UINT32_MAX` or a `tls` whose JA4 is
/// not one. Nothing is written unless `Ok`. Never allocates; the scorer is
/// only read, so concurrent calls are safe.
///
/// # Safety
/// `scorer` is a live handle; `request` points to a valid
/// `edgeguard_request` whose strings and headers point to their stated
/// number of readable bytes; `out_scores` points to `n` writable doubles.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_score(
    scorer: *const edgeguard_scorer,
    request: *const edgeguard_request,
    out_scores: *mut f64,
    n: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        let (scorer, request) = (try_ref!(scorer), try_ref!(request));
        try_non_null!(out_scores);
        let req = match request.view() {
            Ok(req) => req,
            Err(code) => return code,
        };
        let expected = scorer.scorer.model_count();
        if n != expected {
            return if n < expected { edgeguard_result::BufferTooSmall } else { edgeguard_result::InvalidArgument };
        }
        let out = std::slice::from_raw_parts_mut(out_scores, n);
        scorer.scorer.score(req.http(), out).map_or_else(score_error, |()| edgeguard_result::Ok)
    }
}
