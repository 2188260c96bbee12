//! C ABI for CatBoost models and the categorical hash.
//!
//! A model is loaded once (`edgeguard_model_new_from_file` or
//! `_new_from_buffer`), shared read-only by any number of threads, scored per
//! request with `edgeguard_model_predict` / `_predict_strings` (no heap
//! allocation), and released with `edgeguard_model_free`.

use std::ffi::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::boundary::write_error;
use super::handle::Handle;
use super::raw::{bytes, c_bytes, slice};
use super::types::{edgeguard_result, edgeguard_str};
use crate::model::{
    cat_hash, CatSource, Evaluator, Model, ModelError, PredictionError, PredictionType,
};

/// A loaded CatBoost model. Opaque: made by `edgeguard_model_new_from_*`,
/// released by `edgeguard_model_free`. Immutable after loading, so one handle
/// may be used from several threads at once.
pub struct edgeguard_model {
    model: Model,
}

impl Handle for edgeguard_model {}

/// Publishes a loaded model to `*out`, or describes the error.
///
/// # Safety
/// `out` is non-null and writable; `errbuf` is null or `errbuf_len` writable bytes.
unsafe fn load_result(
    loaded: Result<Model, ModelError>,
    out: *mut *mut edgeguard_model,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    match loaded {
        Ok(model) => edgeguard_model { model }.publish(out),
        Err(e) => {
            write_error(errbuf, errbuf_len, &e);
            if e.is_io() {
                edgeguard_result::Io
            } else {
                edgeguard_result::ModelInvalid
            }
        }
    }
}

/// Loads a model saved by CatBoost with `save_model(path, format="json")`.
///
/// On success `*out` receives a new model owned by the caller (release it with
/// `edgeguard_model_free`). On failure `*out` is untouched, the result is `Io`
/// (unreadable file) or `ModelInvalid`, and `errbuf` receives a message naming
/// the file and the JSON field, truncated to `errbuf_len - 1` bytes.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` is writable; `errbuf` is null or
/// points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_new_from_file(
    path: *const c_char,
    out: *mut *mut edgeguard_model,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(path, out);
        let path_bytes = c_bytes(path);
        let path = Path::new(std::ffi::OsStr::from_bytes(path_bytes));
        load_result(Model::load(path), out, errbuf, errbuf_len)
    }
}

/// Loads a model from the bytes of its JSON export (for models shipped inside
/// configuration or fetched over the network). `source_name` (NUL-terminated)
/// names the model in error messages. The buffer is only read during the call.
///
/// Ownership and errors as `edgeguard_model_new_from_file`; the result is
/// `ModelInvalid` for any rejected content.
///
/// # Safety
/// `buf` points to `len` readable bytes (may be null only when `len` is 0);
/// `source_name` is a NUL-terminated string; `out` is writable; `errbuf` is
/// null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_new_from_buffer(
    buf: *const u8,
    len: usize,
    source_name: *const c_char,
    out: *mut *mut edgeguard_model,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(source_name, out);
        let Some(content) = bytes(buf, len) else {
            return edgeguard_result::NullParameter;
        };
        let name = String::from_utf8_lossy(c_bytes(source_name));
        load_result(Model::from_json(&name, content), out, errbuf, errbuf_len)
    }
}

/// Releases a model. Null is a no-op.
///
/// # Safety
/// `model` is null or a handle from `edgeguard_model_new_*` not yet freed, and
/// no other thread is using it.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_free(model: *mut edgeguard_model) {
    ffi_panic_boundary! {
        edgeguard_model::free(model)
    }
}

/// Borrows the model behind a handle.
///
/// # Safety
/// `model` is null or a live handle.
unsafe fn model_ref<'a>(model: *const edgeguard_model) -> Option<&'a Model> {
    model.as_ref().map(|m| &m.model)
}

/// How many float values `edgeguard_model_predict` expects (0 for null).
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_float_feature_count(
    model: *const edgeguard_model,
) -> usize {
    ffi_panic_boundary! {
        model_ref(model).map_or(0, Evaluator::float_feature_count)
    }
}

/// How many categorical values the predict functions expect (0 for null).
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_cat_feature_count(model: *const edgeguard_model) -> usize {
    ffi_panic_boundary! {
        model_ref(model).map_or(0, Evaluator::cat_feature_count)
    }
}

/// How many values a raw or probability prediction writes: 1, or the class
/// count of a MultiClass model (0 for null). Class predictions write 1.
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_dimension(model: *const edgeguard_model) -> usize {
    ffi_panic_boundary! {
        model_ref(model).map_or(0, Evaluator::dimension)
    }
}

/// Maps a refused prediction to its result code.
fn predict_result(result: Result<(), PredictionError>) -> edgeguard_result {
    use crate::model::ShapeError;
    match result {
        Ok(()) => edgeguard_result::Ok,
        Err(PredictionError::Input(ShapeError::OutputLen { .. })) => {
            edgeguard_result::BufferTooSmall
        }
        Err(PredictionError::Input(_)) => edgeguard_result::FeatureCount,
        Err(PredictionError::Unsupported(_)) => edgeguard_result::InvalidArgument,
    }
}

/// Scores one document. `floats` holds `n_floats` values by float feature
/// index (NaN and infinities allowed); `cat_hashes` holds `n_cats` values of
/// `edgeguard_cat_hash` (same bits, as `int32_t`) by categorical feature
/// index. Writes 1 (class) or `edgeguard_model_dimension` values to `out`.
///
/// Results: `FeatureCount` if `n_floats`/`n_cats` differ from the model's
/// counts; `BufferTooSmall` if `out_len` is short; `InvalidArgument` for an
/// unknown `prediction_type` or one the model's objective gives no meaning
/// (probability of a regression); `NullParameter` for a null model or out, or
/// a null array with a non-zero count. Nothing is written unless `Ok`. Never
/// allocates; the model is only read, so concurrent calls are safe.
///
/// # Safety
/// Each pointer is null or points to its stated number of elements (`out`
/// writable); `model` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_predict(
    model: *const edgeguard_model,
    floats: *const f32,
    n_floats: usize,
    cat_hashes: *const i32,
    n_cats: usize,
    prediction_type: libc::c_int,
    out: *mut f64,
    out_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(model, out);
        let (Some(floats), Some(cats)) = (slice(floats, n_floats), slice(cat_hashes, n_cats)) else {
            return edgeguard_result::NullParameter;
        };
        let Some(ty) = PredictionType::from_int(prediction_type) else {
            return edgeguard_result::InvalidArgument;
        };
        let out = std::slice::from_raw_parts_mut(out, out_len);
        predict_result((*model).model.predict(floats, cats, ty, out))
    }
}

impl CatSource for &[edgeguard_str] {
    #[inline]
    fn hash(&self, index: usize) -> i32 {
        // SAFETY: the exporting function's caller guarantees each element
        // points to `len` readable bytes for the duration of the call.
        cat_hash(unsafe { self[index].as_bytes() }) as i32
    }
}

/// `edgeguard_model_predict` with categorical values as byte strings
/// (`edgeguard_str`, the layout of lua-resty-core's `ngx_http_lua_ffi_str_t`),
/// hashed here without allocating. Only the categorical features the model
/// uses are hashed. Same results and guarantees as
/// `edgeguard_model_predict`.
///
/// # Safety
/// As `edgeguard_model_predict`; additionally each `cats[i]` points to
/// `cats[i].len` readable bytes (or has a null pointer and length 0).
#[no_mangle]
pub unsafe extern "C" fn edgeguard_model_predict_strings(
    model: *const edgeguard_model,
    floats: *const f32,
    n_floats: usize,
    cats: *const edgeguard_str,
    n_cats: usize,
    prediction_type: libc::c_int,
    out: *mut f64,
    out_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(model, out);
        let (Some(floats), Some(cats)) = (slice(floats, n_floats), slice(cats, n_cats)) else {
            return edgeguard_result::NullParameter;
        };
        let Some(ty) = PredictionType::from_int(prediction_type) else {
            return edgeguard_result::InvalidArgument;
        };
        let out = std::slice::from_raw_parts_mut(out, out_len);
        predict_result((*model).model.predict_cats(floats, cats.len(), cats, ty, out))
    }
}

/// CatBoost's hash of a categorical value (CityHash64 v1.0.2, low 32 bits),
/// to be computed once per request and passed to every model. The bits are
/// returned as `int32_t`, the type `edgeguard_model_predict` takes them in
/// (and CatBoost's own C API returns): JIT-compiled LuaJIT reads a
/// `uint32_t` return as the whole of `rax`, whose upper half the compiler
/// may leave holding the rest of the 64-bit hash, while a signed 32-bit
/// return is read from `eax` alone. `data` may be null when `len` is 0; a
/// null `data` with a non-zero `len` is a caller bug and hashes as the empty
/// string.
///
/// # Safety
/// `data` points to `len` readable bytes, or `len` is 0.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_cat_hash(data: *const u8, len: usize) -> i32 {
    ffi_panic_boundary! {
        cat_hash(bytes(data, len).unwrap_or(&[])) as i32
    }
}
