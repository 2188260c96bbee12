//! C ABI for recording a request's headers: the text of
//! `$edgeguard_request_headers`, which `edgeguard replay` reads back. The
//! format's writer and readers live in `replay::record`, and what is
//! redacted in `replay::record::redact`.

use std::sync::OnceLock;

use super::config::edgeguard_config;
use super::edgeguard_result;
use super::raw::{bytes_mut, slice};
use super::types::{edgeguard_header, edgeguard_request, headers_from_c};
use crate::replay::Redactor;

/// Writes the text of `$edgeguard_request_headers` for `request`: its
/// headers as `edgeguard_headers_record` writes them, with the secrets
/// redacted as `config` says (null: the defaults, without a challenge).
///
/// Redacted by default (docs/replay.md, "What the log keeps"): `Cookie`
/// keeps each cookie's name and its value's length, the challenge's
/// clearance cookie becomes the verdict on it (`[clearance ok work
/// 1765000000]`), `Authorization` and `Proxy-Authorization` keep their
/// scheme and the credentials' length, and the headers the `redact` option
/// names their length; `redact: false` writes every byte. The request's
/// client address and TLS facts bind the clearance check; its method, URI
/// and request id are not read.
///
/// On success writes the text into `buf` (not NUL-terminated) and its
/// length to `*out_len`. When `cap` is too small, returns `BufferTooSmall`
/// and writes the length needed to `*out_len` (what `buf` then holds is
/// unspecified), so a caller can grow its buffer to it and call again.
/// `NullParameter` for a null `request` or `out_len`, null headers with a
/// count or a null `buf` with a nonzero `cap`; `InvalidArgument` for a
/// request `edgeguard_location_run` refuses the same way. Allocates
/// nothing.
///
/// # Safety
/// `config` is null or a live handle; `request` points to a valid struct
/// whose pointers point to their stated lengths; `buf` points to `cap`
/// writable bytes that overlap none of them (or `cap` is 0); `out_len` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_config_record(
    config: *const edgeguard_config,
    request: *const edgeguard_request,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out_len);
        let request = try_ref!(request);
        if buf.is_null() && cap > 0 {
            return edgeguard_result::NullParameter;
        }
        let Some(out) = bytes_mut(buf, cap) else {
            return edgeguard_result::InvalidArgument;
        };
        let req = match request.view() {
            Ok(req) => req,
            Err(code) => return code,
        };
        let recorder = match config.as_ref() {
            Some(c) => &*c.recorder,
            None => default_recorder(),
        };
        match recorder.write(&req, out) {
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

/// The recorder without a configuration: the default redaction.
fn default_recorder() -> &'static Redactor {
    static DEFAULT: OnceLock<Redactor> = OnceLock::new();
    DEFAULT.get_or_init(|| Redactor::new(true, &[], None, None))
}

/// Writes the JSON text of a request's headers, `[["name","value"],...]`
/// in array order, as `edgeguard replay` reads the `headers` field of a log
/// line: only `"`, `\` and bytes below 0x20 are escaped (`\"`, `\\`,
/// `\u00XX`), every other byte is written as it is. Allocates nothing.
/// Byte for byte, secrets included: what `resty.edgeguard.record` logs is
/// `edgeguard_config_record`'s redacted text.
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
