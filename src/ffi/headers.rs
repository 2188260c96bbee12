//! C ABI for internal header sets.

use std::borrow::Cow;
use std::ffi::c_char;
use std::path::Path;
use std::sync::Arc;

use super::boundary::write_error;
use super::handle::Handle;
use super::raw::{bytes, c_bytes};
use super::types::{edgeguard_header, edgeguard_result, headers_from_c};
use crate::headers::{HeaderSet, ListError, Matches};

/// An immutable set of internal header names and prefixes.
///
/// Made by `edgeguard_header_set_new_from_file` or `..._from_buffer`, released
/// by `edgeguard_header_set_free`. Read-only after construction, so one set may
/// be shared by any number of threads.
// Shared: an engine's set is lent as a handle of its own.
pub struct edgeguard_header_set(Arc<HeaderSet>);

impl Handle for edgeguard_header_set {}

impl edgeguard_header_set {
    /// The set behind the handle.
    pub(super) fn set(&self) -> &HeaderSet {
        &self.0
    }

    /// The handle of a loaded set, shared.
    pub(super) fn shared(set: Arc<HeaderSet>) -> edgeguard_header_set {
        edgeguard_header_set(set)
    }
}

fn publish(
    parsed: Result<HeaderSet, ListError>,
    out: *mut *mut edgeguard_header_set,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    match parsed {
        // SAFETY: the caller checked `out` for null and promises it is writable.
        Ok(set) => unsafe { edgeguard_header_set(Arc::new(set)).publish(out) },
        Err(e) => {
            // SAFETY: errbuf is null or `errbuf_len` writable bytes (caller contract).
            unsafe { write_error(errbuf, errbuf_len, &e) };
            if e.is_io() {
                edgeguard_result::Io
            } else {
                edgeguard_result::HeaderListInvalid
            }
        }
    }
}

/// Loads an internal header list from the file at `path` (NUL-terminated).
///
/// On success writes a new set to `*out`; free it with
/// `edgeguard_header_set_free`. On failure `*out` is untouched and, if
/// `errbuf` is not null, a NUL-terminated message naming the file and line is
/// written into it (at most `errbuf_len` bytes, truncated).
///
/// Returns `EDGEGUARD_RESULT_IO` when the file cannot be read and
/// `EDGEGUARD_RESULT_HEADER_LIST_INVALID` when a line is rejected.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` is writable; `errbuf` is null or
/// points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_new_from_file(
    path: *const c_char,
    out: *mut *mut edgeguard_header_set,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(path, out);
        let path = c_bytes(path);
        let Ok(path) = std::str::from_utf8(path) else {
            write_error(errbuf, errbuf_len, &"header list path is not valid UTF-8");
            return edgeguard_result::InvalidArgument;
        };
        publish(HeaderSet::load(Path::new(path)), out, errbuf, errbuf_len)
    }
}

/// Parses an internal header list held in memory (`len` bytes at `buf`).
/// `source_name` (NUL-terminated, may be null) names the list in error
/// messages; null means `"<buffer>"`. Otherwise as
/// `edgeguard_header_set_new_from_file`.
///
/// # Safety
/// `buf` points to `len` readable bytes (or `len` is 0); `source_name` is null
/// or NUL-terminated; `out` is writable; `errbuf` is null or points to
/// `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_new_from_buffer(
    buf: *const u8,
    len: usize,
    source_name: *const c_char,
    out: *mut *mut edgeguard_header_set,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out);
        let Some(text) = bytes(buf, len) else {
            return edgeguard_result::NullParameter;
        };
        let source = buffer_source(source_name);
        publish(HeaderSet::parse(&source, text), out, errbuf, errbuf_len)
    }
}

/// The name a buffer's list errors give it: `source_name`, or `"<buffer>"`
/// when it is null.
///
/// # Safety
/// `source_name` is null or NUL-terminated.
unsafe fn buffer_source<'a>(source_name: *const c_char) -> Cow<'a, str> {
    if source_name.is_null() {
        "<buffer>".into()
    } else {
        String::from_utf8_lossy(c_bytes(source_name))
    }
}

/// Releases a set. Null is a no-op. The set must not be used afterwards.
///
/// # Safety
/// `set` is null or was returned by an `edgeguard_header_set_new_*` call and
/// not freed yet.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_free(set: *mut edgeguard_header_set) {
    ffi_panic_boundary! {
        edgeguard_header_set::free(set)
    }
}

/// The number of distinct rules (exact names and prefixes) in the set; 0 for
/// null.
///
/// # Safety
/// `set` is null or a live set.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_len(set: *const edgeguard_header_set) -> usize {
    ffi_panic_boundary! {
        set.as_ref().map_or(0, |s| s.0.len())
    }
}

/// A new set holding the rules of `set` and, as extra rules, those of the
/// list held in memory (`len` bytes at `buf`, in the list format;
/// `source_name` as for `edgeguard_header_set_new_from_buffer`). A header
/// that matches only an extra rule is listed to clear by the find exports
/// but not counted in `*out_matched` nor `*out_unremovable`; the set's
/// length is that of `set`. An extended set's extension is replaced, not
/// added to. edgeguard's Lua shim adds the score header this way: one search
/// finds the internal headers and every client spelling of the score
/// header, and the counts stay the list's. On success writes the new set to
/// `*out` (free it with `edgeguard_header_set_free`; `set` is unchanged and
/// still owned by the caller); on failure as
/// `edgeguard_header_set_new_from_buffer`.
///
/// # Safety
/// `set` is a live set; `buf` points to `len` readable bytes (or `len` is
/// 0); `source_name` is null or NUL-terminated; `out` is writable; `errbuf`
/// is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_extend(
    set: *const edgeguard_header_set,
    buf: *const u8,
    len: usize,
    source_name: *const c_char,
    out: *mut *mut edgeguard_header_set,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(set, out);
        let Some(text) = bytes(buf, len) else {
            return edgeguard_result::NullParameter;
        };
        let source = buffer_source(source_name);
        publish((*set).0.extend(&source, text), out, errbuf, errbuf_len)
    }
}

/// The argument checks and the search of both find exports. `set` and
/// `out_clear` are not null (the callers checked).
///
/// # Safety
/// As `edgeguard_header_set_find_internal`.
unsafe fn find(
    set: *const edgeguard_header_set,
    headers: *const edgeguard_header,
    headers_len: usize,
    out_clear: *mut u32,
    out_clear_cap: usize,
) -> Result<Matches, edgeguard_result> {
    if headers_len > 0 && headers.is_null() {
        return Err(edgeguard_result::NullParameter);
    }
    if out_clear_cap < headers_len || headers_len > u32::MAX as usize {
        return Err(edgeguard_result::InvalidArgument);
    }
    let headers = if headers_len == 0 {
        &[][..]
    } else {
        std::slice::from_raw_parts(headers, headers_len)
    };
    let clear = std::slice::from_raw_parts_mut(out_clear, out_clear_cap);
    Ok((*set).0.find_internal(headers_from_c(headers), clear))
}

/// Finds the internal headers of one request.
///
/// `headers` is the request's whole header array, `headers_len` entries, in
/// the layout `ngx_http_lua_ffi_req_get_headers` fills (it may be exactly that
/// buffer). Names are compared ASCII case-insensitively, with `_` equal to
/// `-`.
///
/// On success writes to `out_clear[0..*out_clear_len]` the index of the first
/// header of each distinct internal name, distinct as `ngx.req.clear_header`
/// sees names (case-insensitive, `_` and `-` different), so one clear per
/// index removes every internal entry (past 64 distinct names every further
/// internal entry is listed, keeping hostile requests linear); and to
/// `*out_matched` the number of
/// entries that are internal (repeats counted). `out_clear_cap` must be at
/// least `headers_len`, so the answer always fits. Allocates nothing.
///
/// # Safety
/// `set` is a live set; `headers` points to `headers_len` readable elements
/// whose strings are readable for their lengths (or `headers_len` is 0);
/// `out_clear` points to `out_clear_cap` writable `uint32_t`; `out_clear_len`
/// and `out_matched` are writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_find_internal(
    set: *const edgeguard_header_set,
    headers: *const edgeguard_header,
    headers_len: usize,
    out_clear: *mut u32,
    out_clear_cap: usize,
    out_clear_len: *mut usize,
    out_matched: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(set, out_clear, out_clear_len, out_matched);
        let found = match find(set, headers, headers_len, out_clear, out_clear_cap) {
            Ok(found) => found,
            Err(code) => return code,
        };
        *out_clear_len = found.distinct;
        *out_matched = found.matched;
        edgeguard_result::Ok
    }
}

/// As `edgeguard_header_set_find_internal`, and writes to
/// `*out_unremovable` how many of the internal entries (repeats counted)
/// have a name holding a byte that is not an RFC 9110 token character, as
/// nginx keeps with `ignore_invalid_headers off`. lua-nginx-module's
/// `ngx.req.clear_header` percent-escapes such bytes before it compares
/// names (`ngx_http_lua_copy_escaped_header`, 0.10.23), so it cannot remove
/// those entries: a caller that strips through it refuses the request
/// instead. Allocates nothing.
///
/// # Safety
/// As `edgeguard_header_set_find_internal`; `out_unremovable` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_header_set_find_checked(
    set: *const edgeguard_header_set,
    headers: *const edgeguard_header,
    headers_len: usize,
    out_clear: *mut u32,
    out_clear_cap: usize,
    out_clear_len: *mut usize,
    out_matched: *mut usize,
    out_unremovable: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(set, out_clear, out_clear_len, out_matched, out_unremovable);
        let found = match find(set, headers, headers_len, out_clear, out_clear_cap) {
            Ok(found) => found,
            Err(code) => return code,
        };
        *out_clear_len = found.distinct;
        *out_matched = found.matched;
        *out_unremovable = found.unremovable;
        edgeguard_result::Ok
    }
}
