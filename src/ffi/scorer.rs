//! C ABI for the bot scorer.
//!
//! A scorer is built once from named model files (`edgeguard_scorer_new`),
//! shared read-only by any number of threads, asked for one score per model
//! per request (`edgeguard_scorer_score`, no heap allocation) and released
//! with `edgeguard_scorer_free`.

use std::ffi::{c_char, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::boundary::{c_bytes, write_error};
use super::edgeguard_result;
use super::tls::edgeguard_tls_info;
use super::types::{edgeguard_header, edgeguard_str, headers_from_c};
use crate::features::{Request, TlsFacts};
use crate::headers::Header;
use crate::scorer::{LoadError, ScoreError, Scorer, MAX_MODELS};
use crate::tls::Family;

/// One request as nginx sees it. Every byte string is borrowed for the
/// duration of the call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_request {
    /// The method as sent, e.g. `GET`.
    pub method: edgeguard_str,
    /// The request target as sent, path and query (`$request_uri`).
    pub uri: edgeguard_str,
    /// The textual client address (`$remote_addr`).
    pub client_addr: edgeguard_str,
    /// The HTTP version times 10: 10, 11, 20, 30, i.e.
    /// `ngx.req.http_version() * 10`. nginx's `r->http_version` is
    /// `major * 1000 + minor` (1001 for HTTP/1.1), so from C it is
    /// `major * 10 + minor`, not a plain division. Must be in `0..=65535`.
    pub http_version: libc::c_int,
    /// The headers in arrival order, in the layout
    /// `ngx_http_lua_ffi_req_get_headers` fills. May be null when
    /// `headers_len` is 0.
    pub headers: *const edgeguard_header,
    /// How many headers `headers` points to.
    pub headers_len: usize,
    /// The connection's TLS fingerprint, as `edgeguard_tls_get` filled it
    /// for this request's `SSL *`, or null (plain HTTP, no
    /// `ssl_client_hello_by_lua`): then the TLS features are missing
    /// values. One with `present` = 0 counts as null; one with
    /// `present` = 1 must hold a JA4 as edgeguard writes it, or the call
    /// is `InvalidArgument`.
    pub tls: *const edgeguard_tls_info,
}

/// A set of CatBoost models scoring requests. Opaque: made by
/// `edgeguard_scorer_new`, released by `edgeguard_scorer_free`. Immutable
/// after loading, so one handle may be used from several threads at once.
pub struct edgeguard_scorer {
    scorer: Scorer,
    /// NUL-terminated copies of the model names, handed out to C.
    names: Vec<CString>,
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
            write_error(errbuf, errbuf_len, &format_args!(
                "{n} models given; a scorer holds at most {MAX_MODELS}"
            ));
            return edgeguard_result::ConfigInvalid;
        }
        let (names, paths) = (std::slice::from_raw_parts(names, n), std::slice::from_raw_parts(paths, n));
        if names.iter().chain(paths).any(|p| p.is_null()) {
            return edgeguard_result::NullParameter;
        }
        let mut models = Vec::with_capacity(n);
        for (i, (&name, &path)) in names.iter().zip(paths).enumerate() {
            let Ok(name) = std::str::from_utf8(c_bytes(name)) else {
                write_error(errbuf, errbuf_len, &format_args!("model {i} name is not UTF-8"));
                return edgeguard_result::ConfigInvalid;
            };
            models.push((name, Path::new(OsStr::from_bytes(c_bytes(path)))));
        }
        match Scorer::load(&models) {
            Ok(scorer) => {
                // Names hold no control characters (checked at load), so no NUL.
                let names = scorer
                    .models()
                    .iter()
                    .map(|m| CString::new(m.name()).unwrap_or_default())
                    .collect();
                *out = Box::into_raw(Box::new(edgeguard_scorer { scorer, names }));
                edgeguard_result::Ok
            }
            Err(e) => {
                write_error(errbuf, errbuf_len, &e);
                load_error_result(&e)
            }
        }
    }
}

/// Releases a scorer. Null is a no-op.
///
/// # Safety
/// `scorer` is null or a handle from `edgeguard_scorer_new` not yet freed,
/// and no other thread is using it.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_scorer_free(scorer: *mut edgeguard_scorer) {
    ffi_panic_boundary! {
        if !scorer.is_null() {
            drop(Box::from_raw(scorer));
        }
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
        try_non_null!(scorer, request, out_scores);
        let (scorer, request) = (&*scorer, &*request);
        let (req, _) = match checked_request(request) {
            Ok(req) => req,
            Err(code) => return code,
        };
        let expected = scorer.scorer.model_count();
        if n != expected {
            return if n < expected {
                edgeguard_result::BufferTooSmall
            } else {
                edgeguard_result::InvalidArgument
            };
        }
        score(scorer, &req, std::slice::from_raw_parts_mut(out_scores, n))
    }
}

/// The request's fields as the core reads them (and its headers), after the checks every
/// scoring export makes: `NullParameter` for a null `headers` with a
/// non-zero `headers_len`, `InvalidArgument` for an `http_version` outside
/// `0..=65535` or a `headers_len` above `UINT32_MAX`.
///
/// # Safety
/// `request`'s strings and headers point to their stated number of readable
/// bytes for `'a`.
pub(super) unsafe fn checked_request<'a>(
    request: &'a edgeguard_request,
) -> Result<(Request<'a>, &'a [Header<'a>]), edgeguard_result> {
    if request.headers.is_null() && request.headers_len != 0 {
        return Err(edgeguard_result::NullParameter);
    }
    let Ok(http_version) = u16::try_from(request.http_version) else {
        return Err(edgeguard_result::InvalidArgument);
    };
    // The length is checked before a slice is made of it: a length no
    // array can have makes the slice itself undefined behaviour.
    if request.headers_len > u32::MAX as usize {
        return Err(edgeguard_result::InvalidArgument);
    }
    let tls = match request.tls.as_ref() {
        Some(info) if info.present != 0 => {
            // SAFETY: c_char and u8 have the same size and alignment.
            let ja4 = &*(std::ptr::from_ref(&info.ja4) as *const [u8; 36]);
            match TlsFacts::new(ja4, Family::from_number(i32::from(info.family))) {
                Some(t) => Some(t),
                None => return Err(edgeguard_result::InvalidArgument),
            }
        }
        _ => None,
    };
    let headers: &[edgeguard_header] = if request.headers_len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(request.headers, request.headers_len)
    };
    // SAFETY: the caller guarantees every string points to its bytes for
    // 'a, the call's duration, which is within the request's lifetime.
    let headers = headers_from_c(headers);
    let req = Request::new(
        request.method.as_bytes(),
        request.uri.as_bytes(),
        http_version,
        request.client_addr.as_bytes(),
        headers,
    )
    .with_tls(tls);
    Ok((req, headers))
}

/// Scores `req` into `out` (one slot per model) and says how it went.
pub(super) fn score(
    scorer: &edgeguard_scorer,
    req: &Request<'_>,
    out: &mut [f64],
) -> edgeguard_result {
    match scorer.scorer.score(req, out) {
        Ok(()) => edgeguard_result::Ok,
        Err(ScoreError::OutputLen { expected, got }) if got < expected => {
            edgeguard_result::BufferTooSmall
        }
        Err(ScoreError::OutputLen { .. }) => edgeguard_result::InvalidArgument,
        // The scorer checked every model's inputs at load; reaching this is
        // a bug, reported like a caught panic.
        Err(ScoreError::Model { .. }) => edgeguard_result::Panic,
    }
}

impl edgeguard_scorer {
    /// How many models the scorer holds.
    pub(super) fn model_count(&self) -> usize {
        self.scorer.model_count()
    }
}
