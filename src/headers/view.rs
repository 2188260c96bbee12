//! A request header as the core reads it, in nginx's memory layout.
//!
//! nginx hands over its header array as `ngx_http_lua_ffi_table_elt_t`
//! elements: two `{ int len; const unsigned char *data; }` strings, pointing
//! into the request pool. [`Header`] has exactly that layout, so the C
//! boundary (`src/ffi/types.rs`, which asserts the layouts agree) views
//! nginx's array as `&[Header]` without a copy, and everything from here on
//! reads safe slices.
//!
//! This is the one module outside `src/ffi/` that reads through a pointer:
//! a `Header` made here always views live Rust slices ([`Header::new`],
//! [`HeaderBuf::fill`]); one made from C memory is made only by the
//! boundary's `unsafe` view, whose caller vouches for the bytes.

#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::slice;

/// A borrowed byte string in C layout. Private: only [`Header`] reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Raw {
    len: libc::c_int,
    data: *const u8,
}

impl Raw {
    /// A view of `s`; a slice longer than `INT_MAX` bytes is viewed up to
    /// `INT_MAX` (the C layout's length is an `int`).
    fn of(s: &[u8]) -> Raw {
        Raw {
            len: libc::c_int::try_from(s.len()).unwrap_or(libc::c_int::MAX),
            data: s.as_ptr(),
        }
    }

    /// The bytes, or an empty slice for a null pointer or a non-positive
    /// length (nginx gives both for a missing value).
    ///
    /// # Safety
    /// `data` points to `len` bytes readable and unchanged for `'a`.
    unsafe fn bytes<'a>(&self) -> &'a [u8] {
        match usize::try_from(self.len) {
            // SAFETY: the caller's promise.
            Ok(n) if n > 0 && !self.data.is_null() => unsafe {
                slice::from_raw_parts(self.data, n)
            },
            _ => &[],
        }
    }
}

/// Two [`Raw`]s: a header without its lifetime, what [`HeaderBuf`] keeps.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct RawHeader {
    name: Raw,
    value: Raw,
}

/// One request header: a name and a value, borrowed for `'a`.
///
/// Layout (`repr(C)`, part of the C ABI): `{ int name_len; const uint8_t
/// *name; int value_len; const uint8_t *value; }`, lua-resty-core's
/// `ngx_http_lua_ffi_table_elt_t` and the C ABI's `edgeguard_header`.
///
/// Invariant: both strings view bytes readable for `'a` (or are empty).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    raw: RawHeader,
    bytes: PhantomData<&'a [u8]>,
}

impl<'a> Header<'a> {
    /// A header viewing `name` and `value`.
    pub fn new(name: &'a [u8], value: &'a [u8]) -> Header<'a> {
        Header {
            raw: RawHeader {
                name: Raw::of(name),
                value: Raw::of(value),
            },
            bytes: PhantomData,
        }
    }

    /// The name as sent (lower-cased by nginx when fetched with `raw = 0`).
    #[inline]
    pub fn name(&self) -> &'a [u8] {
        // SAFETY: the type's invariant.
        unsafe { self.raw.name.bytes() }
    }

    /// The value as sent.
    #[inline]
    pub fn value(&self) -> &'a [u8] {
        // SAFETY: the type's invariant.
        unsafe { self.raw.value.bytes() }
    }
}

/// A reusable array of [`Header`]s, refilled for each request while keeping
/// its capacity (replay parses millions of lines into one).
#[derive(Debug, Default)]
pub struct HeaderBuf {
    raw: Vec<RawHeader>,
}

impl HeaderBuf {
    /// Replaces the contents with views of `pairs` and returns them.
    pub fn fill<'a>(
        &'a mut self,
        pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> &'a [Header<'a>] {
        self.raw.clear();
        self.raw
            .extend(pairs.into_iter().map(|(k, v)| Header::new(k, v).raw));
        // SAFETY: `Header` is `repr(transparent)` over `RawHeader`; every
        // element was just made from slices that live for 'a, and `self`
        // stays borrowed for 'a, so it cannot be refilled meanwhile.
        unsafe { slice::from_raw_parts(self.raw.as_ptr().cast::<Header<'a>>(), self.raw.len()) }
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
        let mut buf = HeaderBuf::default();
        let line = b"ab".to_vec();
        let got = buf.fill([(&line[..1], &line[1..])]);
        assert_eq!((got[0].name(), got[0].value()), (&b"a"[..], &b"b"[..]));
        buf.clear();
        assert!(buf.fill([]).is_empty());
    }

    #[test]
    fn the_layout_is_nginxs_element() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(size_of::<Header<'_>>(), 32);
        assert_eq!(align_of::<Header<'_>>(), 8);
        assert_eq!(offset_of!(RawHeader, value), 16);
        assert_eq!(offset_of!(Raw, data), 8);
    }
}
