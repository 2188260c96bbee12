//! The panic boundary and the small checks every export goes through.

use std::ffi::c_char;
use std::fmt::Display;

use super::raw::{c_bytes, slice};
use super::types::edgeguard_result;

/// What an export returns when its body panicked.
pub trait PanicValue {
    /// The value that tells the caller nothing was done.
    fn panic_value() -> Self;
}

impl PanicValue for edgeguard_result {
    fn panic_value() -> Self {
        edgeguard_result::Panic
    }
}

impl<T> PanicValue for *const T {
    fn panic_value() -> Self {
        std::ptr::null()
    }
}

impl<T> PanicValue for *mut T {
    fn panic_value() -> Self {
        std::ptr::null_mut()
    }
}

impl PanicValue for () {
    fn panic_value() -> Self {}
}

macro_rules! impl_panic_value_zero {
    ($($t:ty),*) => { $(impl PanicValue for $t { fn panic_value() -> Self { 0 as $t } })* };
}
impl_panic_value_zero!(u8, u32, i32, u64, i64, usize, f64);

/// Runs an export's body under `catch_unwind`; a panic becomes the return
/// type's [`PanicValue`] instead of unwinding into C (undefined behaviour) or
/// aborting the nginx worker.
macro_rules! ffi_panic_boundary {
    ($($body:tt)*) => {
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| { $($body)* })) {
            Ok(value) => value,
            Err(_) => $crate::ffi::boundary::PanicValue::panic_value(),
        }
    };
}

/// Returns `NullParameter` from the enclosing export if the pointer is null.
macro_rules! try_non_null {
    ($($ptr:expr),+ $(,)?) => {
        $(if $ptr.is_null() {
            return $crate::ffi::types::edgeguard_result::NullParameter;
        })+
    };
}

/// Writes `msg` into the caller's buffer as a NUL-terminated string, cut at a
/// UTF-8 character boundary if it does not fit. A null or empty buffer is
/// skipped: detailed errors are optional for callers.
///
/// # Safety
/// `buf` is null or points to `buf_len` writable bytes.
pub(crate) unsafe fn write_error(buf: *mut c_char, buf_len: usize, msg: &dyn Display) {
    if buf.is_null() || buf_len == 0 {
        return;
    }
    let text = msg.to_string();
    let mut n = text.len().min(buf_len - 1);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
    *buf.add(n) = 0;
}

/// Borrows `n` NUL-terminated UTF-8 strings (a list of names): null with
/// `n` 0 is none; a null list with a count, or a null string, is
/// `NullParameter`; a string that is not UTF-8 is `bad`, and `errbuf` says
/// `"<what> <i> name is not UTF-8"`.
///
/// # Safety
/// `list` points to `n` NUL-terminated strings (or is null with `n` 0)
/// valid for `'a`; `errbuf` is null or `errbuf_len` writable bytes.
pub(crate) unsafe fn utf8_names<'a>(
    list: *const *const c_char,
    n: usize,
    what: &str,
    bad: edgeguard_result,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> Result<Vec<&'a str>, edgeguard_result> {
    let list = slice(list, n).ok_or(edgeguard_result::NullParameter)?;
    if list.iter().any(|p| p.is_null()) {
        return Err(edgeguard_result::NullParameter);
    }
    let mut out = Vec::with_capacity(n);
    for (i, &p) in list.iter().enumerate() {
        let Ok(s) = std::str::from_utf8(c_bytes(p)) else {
            write_error(
                errbuf,
                errbuf_len,
                &format_args!("{what} {i} name is not UTF-8"),
            );
            return Err(bad);
        };
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn error_buffer_is_truncated_at_char_boundary_and_terminated() {
        let mut buf = [0x7f as c_char; 6];
        unsafe { write_error(buf.as_mut_ptr(), buf.len(), &"ab\u{e9}\u{e9}xyz") };
        let got = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(got.to_bytes(), "ab\u{e9}".as_bytes());
    }

    #[test]
    fn null_or_empty_error_buffer_is_skipped() {
        unsafe { write_error(std::ptr::null_mut(), 10, &"x") };
        let mut b = [1 as c_char; 1];
        unsafe { write_error(b.as_mut_ptr(), 0, &"x") };
        assert_eq!(b[0], 1);
    }

    #[test]
    fn every_code_round_trips_through_its_number() {
        for n in 0..11 {
            let r = edgeguard_result::from_int(n).expect("codes are dense from 0");
            assert_eq!(r as libc::c_int, n);
            assert!(!r.text().to_bytes().is_empty());
        }
        assert!(edgeguard_result::from_int(11).is_none());
        assert!(edgeguard_result::from_int(-1).is_none());
    }

    #[test]
    fn panics_become_the_panic_value() {
        fn export() -> edgeguard_result {
            ffi_panic_boundary! { panic!("boom") }
        }
        fn export_ptr() -> *const u8 {
            ffi_panic_boundary! { panic!("boom") }
        }
        assert_eq!(export(), edgeguard_result::Panic);
        assert!(export_ptr().is_null());
    }
}
