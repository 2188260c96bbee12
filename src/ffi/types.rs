//! The C-layout types of the ABI.
//!
//! nginx hands over its header array as `ngx_http_lua_ffi_table_elt_t`
//! elements (pointer + length pairs into the request pool). The core reads
//! it in place, without copying, as `&[headers::Header]`, whose layout is
//! the same; [`headers_from_c`] is the one place that views C memory so.

use std::slice;

use crate::headers::Header;

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

// `Header` is nginx's element, and so is `edgeguard_header`: a C array is
// viewed as headers by a cast, checked here once.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<edgeguard_header>() == size_of::<Header<'static>>());
    assert!(align_of::<edgeguard_header>() == align_of::<Header<'static>>());
    assert!(size_of::<edgeguard_header>() == 32);
    assert!(offset_of!(edgeguard_header, value) == 16);
    assert!(offset_of!(edgeguard_str, data) == 8);
};

/// Views a C header array as headers, without a copy.
///
/// # Safety
/// Every `key` and `value` in `headers` points to `len` readable bytes
/// (or is null, or has a non-positive length) that stay valid and
/// unchanged for `'a`.
pub unsafe fn headers_from_c<'a>(headers: &'a [edgeguard_header]) -> &'a [Header<'a>] {
    // SAFETY: the layouts are the same (checked above); a header reads a
    // null or non-positive string as empty; the caller vouches for the
    // bytes.
    slice::from_raw_parts(headers.as_ptr().cast::<Header<'a>>(), headers.len())
}

/// The C layout of `headers`, to hand to the C ABI.
pub fn headers_as_c<'s>(headers: &'s [Header<'_>]) -> &'s [edgeguard_header] {
    // SAFETY: same layout (see `headers_from_c`); a shared view of the
    // same elements, for the same lifetime.
    unsafe { slice::from_raw_parts(headers.as_ptr().cast(), headers.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_read_back_what_they_view() {
        let h = Header::new(b"host", b"example");
        let raw = [edgeguard_header {
            key: edgeguard_str {
                len: -1,
                data: std::ptr::null(),
            },
            value: edgeguard_str {
                len: 3,
                data: std::ptr::null(),
            },
        }];
        // SAFETY: null pointers and negative lengths read as empty.
        let views = unsafe { headers_from_c(&raw) };
        assert_eq!((views[0].name(), views[0].value()), (&b""[..], &b""[..]));
        let c = headers_as_c(std::slice::from_ref(&h));
        assert_eq!(c[0].key.len, 4);
    }

    #[test]
    fn null_or_negative_keys_are_empty_names_that_never_match() {
        use crate::headers::{HeaderSet, Matches};
        let set = HeaderSet::parse("<test>", b"x-a\n").unwrap();
        let odd = [
            edgeguard_header {
                key: edgeguard_str {
                    len: 3,
                    data: std::ptr::null(),
                },
                value: edgeguard_str::from_slice(b"v"),
            },
            edgeguard_header {
                key: edgeguard_str {
                    len: -1,
                    data: b"x-a".as_ptr(),
                },
                value: edgeguard_str::from_slice(b"v"),
            },
            edgeguard_header::new(b"x-ab", b"v"),
        ];
        let mut clear = [7u32; 2];
        // SAFETY: the non-null pointers view statics; null and negative
        // lengths are what is under test (they read as empty).
        let views = unsafe { headers_from_c(&odd) };
        assert_eq!(set.find_internal(views, &mut clear), Matches::default());
        assert_eq!(clear, [7, 7]);
    }
}
