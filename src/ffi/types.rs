//! The C-layout types of the ABI, and the safe header view the core takes.
//!
//! nginx hands over its header array as `ngx_http_lua_ffi_table_elt_t`
//! elements (pointer + length pairs into the request pool). The core reads
//! it in place, without copying, through [`Header`]: a `repr(transparent)`
//! wrapper of [`edgeguard_header`] that can only be made from live Rust
//! slices (safe) or, here at the boundary, from a C array the caller vouches
//! for (`unsafe`). Every raw-pointer read of a header happens in this file.

use std::marker::PhantomData;
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

/// A request header as the core reads it: a name and a value, borrowed for
/// `'a`. Same layout as [`edgeguard_header`], so nginx's array is viewed as
/// `&[Header]` without a copy.
///
/// Invariant: both strings point to bytes readable for `'a` (or are
/// empty). [`Header::new`] makes one from slices; [`Header::from_c`] is
/// the only other way in, and its caller vouches for the C array.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    raw: edgeguard_header,
    bytes: PhantomData<&'a [u8]>,
}

impl<'a> Header<'a> {
    /// A header viewing `name` and `value`. A slice longer than `INT_MAX`
    /// bytes is viewed up to `INT_MAX` (the C layout's length is an `int`).
    pub fn new(name: &'a [u8], value: &'a [u8]) -> Header<'a> {
        Header {
            raw: edgeguard_header::new(name, value),
            bytes: PhantomData,
        }
    }

    /// The name as sent (lower-cased by nginx when fetched with `raw = 0`).
    #[inline]
    pub fn name(&self) -> &'a [u8] {
        // SAFETY: the type's invariant: `key` views bytes readable for 'a.
        unsafe { self.raw.key.as_bytes() }
    }

    /// The value as sent.
    #[inline]
    pub fn value(&self) -> &'a [u8] {
        // SAFETY: the type's invariant: `value` views bytes readable for 'a.
        unsafe { self.raw.value.as_bytes() }
    }

    /// Views a C header array as headers.
    ///
    /// # Safety
    /// Every `key` and `value` in `headers` points to `len` readable bytes
    /// (or is null, or has a non-positive length) that stay valid and
    /// unchanged for `'a`.
    pub unsafe fn from_c(headers: &'a [edgeguard_header]) -> &'a [Header<'a>] {
        // SAFETY: `Header` is `repr(transparent)` over `edgeguard_header`
        // (PhantomData is zero-sized), so the layouts are the same; the
        // caller vouches for the bytes.
        slice::from_raw_parts(headers.as_ptr().cast::<Header<'a>>(), headers.len())
    }

    /// The C layout of `headers`, to hand to the C ABI.
    pub fn as_c<'s>(headers: &'s [Header<'_>]) -> &'s [edgeguard_header] {
        // SAFETY: same layout (see `from_c`); a shared view of the same
        // elements, for the same lifetime.
        unsafe { slice::from_raw_parts(headers.as_ptr().cast(), headers.len()) }
    }
}

/// A reusable array of [`Header`]s, refilled for each request while keeping
/// its capacity (replay parses millions of lines into one).
#[derive(Debug, Default)]
pub struct HeaderBuf {
    raw: Vec<edgeguard_header>,
}

impl HeaderBuf {
    /// Replaces the contents with views of `pairs` and returns them.
    pub fn fill<'a>(
        &'a mut self,
        pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> &'a [Header<'a>] {
        self.raw.clear();
        self.raw
            .extend(pairs.into_iter().map(|(k, v)| edgeguard_header::new(k, v)));
        // SAFETY: every element was just made from slices that live for 'a,
        // and `self` stays borrowed for 'a, so it cannot be refilled while
        // the views are in use.
        unsafe { Header::from_c(&self.raw) }
    }

    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.raw.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_read_back_what_they_view() {
        let h = Header::new(b"host", b"example");
        assert_eq!((h.name(), h.value()), (&b"host"[..], &b"example"[..]));
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
        let views = unsafe { Header::from_c(&raw) };
        assert_eq!((views[0].name(), views[0].value()), (&b""[..], &b""[..]));
        let c = Header::as_c(std::slice::from_ref(&h));
        assert_eq!(c[0].key.len, 4);
        let mut buf = HeaderBuf::default();
        let line = b"ab".to_vec();
        let got = buf.fill([(&line[..1], &line[1..])]);
        assert_eq!((got[0].name(), got[0].value()), (&b"a"[..], &b"b"[..]));
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
        let views = unsafe { Header::from_c(&odd) };
        assert_eq!(set.find_internal(views, &mut clear), Matches::default());
        assert_eq!(clear, [7, 7]);
    }
}
