//! C ABI for recording a request's headers: the text of
//! `$edgeguard_request_headers`, which `edgeguard replay` reads back. The
//! format's writer and readers live in `replay::record`.

use super::edgeguard_result;
use super::raw::{bytes_mut, slice};
use super::types::{edgeguard_header, headers_from_c};

/// Writes the JSON text of a request's headers, `[["name","value"],...]`
/// in array order, as `edgeguard replay` reads the `headers` field of a log
/// line: only `"`, `\` and bytes below 0x20 are escaped (`\"`, `\\`,
/// `\u00XX`), every other byte is written as it is. Allocates nothing.
///
/// `headers` is `headers_len` elements in the layout
/// `ngx_http_lua_ffi_req_get_headers` fills (names as fetched: with
/// `raw = 1`, in the client's letter case). On success writes the text
/// into `buf` (not NUL-terminated) and its length to `*out_len`. When
/// `cap` is too small, returns `BufferTooSmall`, leaves `buf` untouched
/// and writes the length needed to `*out_len`, so a caller can grow its
/// buffer to it and call again (a null `buf` with `cap` 0 asks only for
/// the length).
///
/// `NullParameter` for a null `out_len`, or a null `headers` or `buf` with
/// a non-zero length; `InvalidArgument` for a length no array can have.
///
/// # Safety
/// `headers` points to `headers_len` readable elements whose strings are
/// readable for their lengths (or `headers_len` is 0); `buf` points to
/// `cap` writable bytes that overlap none of them (or `cap` is 0);
/// `out_len` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_headers_record(
    headers: *const edgeguard_header,
    headers_len: usize,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out_len);
        if (headers.is_null() && headers_len > 0) || (buf.is_null() && cap > 0) {
            return edgeguard_result::NullParameter;
        }
        let (Some(headers), Some(out)) = (slice(headers, headers_len), bytes_mut(buf, cap)) else {
            return edgeguard_result::InvalidArgument;
        };
        match crate::replay::write_headers_text(headers_from_c(headers), out) {
            Ok(n) => {
                *out_len = n;
                edgeguard_result::Ok
            }
            Err(need) => {
                *out_len = need;
                edgeguard_result::BufferTooSmall
            }
        }
    }
}
