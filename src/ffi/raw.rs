//! Borrowing what C's pointers point to: checked slices and C strings.
//! A leaf: the C types (`types.rs`) and the boundary (`boundary.rs`) both
//! use it.

use std::ffi::{c_char, CStr};

/// Borrows a NUL-terminated C string as bytes.
///
/// # Safety
/// `s` is non-null and NUL-terminated, valid for `'a`.
pub(crate) unsafe fn c_bytes<'a>(s: *const c_char) -> &'a [u8] {
    CStr::from_ptr(s).to_bytes()
}

/// Borrows `len` values at `ptr`; a null pointer is only allowed with
/// `len == 0`. A length no array can have (more than `isize::MAX` bytes, as a
/// negative C int converted to `size_t` gives) is refused too: making a slice
/// of it is undefined behaviour before anything reads it.
///
/// # Safety
/// `ptr` points to `len` readable values valid for `'a`, or `len == 0`.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> Option<&'a [T]> {
    match (ptr.is_null(), len) {
        (_, 0) => Some(&[]),
        (true, _) => None,
        (false, n) if n > isize::MAX as usize / std::mem::size_of::<T>().max(1) => None,
        (false, n) => Some(std::slice::from_raw_parts(ptr, n)),
    }
}

/// [`slice`] of bytes.
///
/// # Safety
/// As [`slice`].
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    slice(ptr, len)
}

/// A writable [`bytes`]: `len` bytes at `ptr`, null only with `len == 0`.
///
/// # Safety
/// `ptr` points to `len` writable bytes valid for `'a` that nothing else
/// reads or writes meanwhile, or `len == 0`.
pub(crate) unsafe fn bytes_mut<'a>(ptr: *mut u8, len: usize) -> Option<&'a mut [u8]> {
    match (ptr.is_null(), len) {
        (_, 0) => Some(&mut []),
        (true, _) => None,
        (false, n) if n > isize::MAX as usize => None,
        (false, n) => Some(std::slice::from_raw_parts_mut(ptr, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_refuse_null_with_a_length_and_lengths_no_array_has() {
        let x = [7u64; 2];
        // SAFETY: the refused cases make no slice; the others view `x`.
        unsafe {
            assert_eq!(slice(x.as_ptr(), 2), Some(&x[..]));
            assert_eq!(slice(std::ptr::null::<u64>(), 0), Some(&[][..]));
            assert_eq!(slice(std::ptr::null::<u64>(), 1), None);
            assert_eq!(slice(x.as_ptr(), usize::MAX), None);
            assert_eq!(slice(x.as_ptr(), isize::MAX as usize / 8 + 1), None);
            assert_eq!(bytes(b"ab".as_ptr(), usize::MAX), None);
            let mut b = [0u8; 2];
            assert_eq!(bytes_mut(b.as_mut_ptr(), 2).map(|s| s.len()), Some(2));
            assert_eq!(bytes_mut(std::ptr::null_mut(), 0).map(|s| s.len()), Some(0));
            assert!(bytes_mut(std::ptr::null_mut(), 1).is_none());
            assert!(bytes_mut(b.as_mut_ptr(), isize::MAX as usize + 1).is_none());
        }
    }
}
