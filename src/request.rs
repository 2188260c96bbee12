//! The request as nginx hands it to us: borrowed byte strings in the exact
//! memory layout lua-resty-core uses, so the shim can pass nginx's own arrays
//! to Rust without copying.

use std::slice;

/// A borrowed byte string: `{ int len; const unsigned char *data; }`.
///
/// Same layout as lua-resty-core's `ngx_http_lua_ffi_str_t`. The bytes are
/// owned by the caller (nginx's request pool) and only read during the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_str {
    /// Length in bytes; negative lengths are treated as empty.
    pub len: libc::c_int,
    /// Start of the bytes; may be null when `len` is 0.
    pub data: *const u8,
}

/// One request header: same layout as lua-resty-core's
/// `ngx_http_lua_ffi_table_elt_t`, the element type that
/// `ngx_http_lua_ffi_req_get_headers` fills.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_header {
    /// Header name (lower-cased by nginx when fetched with `raw = 0`).
    pub key: edgeguard_str,
    /// Header value.
    pub value: edgeguard_str,
}

impl edgeguard_str {
    /// A view of a Rust slice. The slice must outlive every use of the result.
    pub fn from_slice(s: &[u8]) -> Self {
        edgeguard_str {
            len: libc::c_int::try_from(s.len()).unwrap_or(libc::c_int::MAX),
            data: s.as_ptr(),
        }
    }

    /// The bytes, or an empty slice for a null pointer or a non-positive length.
    ///
    /// # Safety
    /// `data` must point to `len` readable bytes that stay valid and unchanged
    /// for the lifetime `'a` chosen by the caller.
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        match usize::try_from(self.len) {
            Ok(n) if n > 0 && !self.data.is_null() => slice::from_raw_parts(self.data, n),
            _ => &[],
        }
    }
}

impl edgeguard_header {
    /// A header viewing two Rust slices (for tests, benches and the CLI).
    pub fn new(key: &[u8], value: &[u8]) -> Self {
        edgeguard_header {
            key: edgeguard_str::from_slice(key),
            value: edgeguard_str::from_slice(value),
        }
    }
}
