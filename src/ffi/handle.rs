//! The ownership of the ABI's handles, in one place (rustls-ffi's
//! `Castable` idea): a handle is a Rust value on the heap that C holds by an
//! opaque pointer, made by a `_new` export ([`Handle::publish`]), borrowed
//! by the others ([`try_ref!`], [`try_mut!`]) and released by `_free`
//! ([`Handle::free`]). Every `Box` to pointer cast, and back, is here.

/// A type C holds by pointer: the struct behind one of the header's opaque
/// handle types.
pub(crate) trait Handle: Sized {
    /// Moves `self` to the heap and writes the pointer C now owns to `*out`.
    ///
    /// # Safety
    /// `out` is writable.
    unsafe fn publish(self, out: *mut *mut Self) -> super::types::edgeguard_result {
        *out = self.into_raw();
        super::types::edgeguard_result::Ok
    }

    /// Moves `self` to the heap: C owns the pointer and gives it back to
    /// [`Handle::free`] (a `_free` export, or OpenSSL's free callback).
    fn into_raw(self) -> *mut Self {
        Box::into_raw(Box::new(self))
    }

    /// Drops what [`Handle::into_raw`] made. Null is a no-op.
    ///
    /// # Safety
    /// `ptr` is null or came from `into_raw` and is not used afterwards.
    unsafe fn free(ptr: *mut Self) {
        if !ptr.is_null() {
            // The caller's promise: it is this type's Box.
            drop(Box::from_raw(ptr));
        }
    }
}

/// Borrows a live handle, or returns `NullParameter` from the enclosing
/// export for a null pointer (in an `unsafe` export: the caller vouches
/// that a non-null pointer is live).
macro_rules! try_ref {
    ($ptr:expr) => {
        match $ptr.as_ref() {
            Some(r) => r,
            None => return $crate::ffi::types::edgeguard_result::NullParameter,
        }
    };
}

/// Borrows a live handle mutably, or returns `NullParameter` from the
/// enclosing export for a null pointer.
macro_rules! try_mut {
    ($ptr:expr) => {
        match $ptr.as_mut() {
            Some(r) => r,
            None => return $crate::ffi::types::edgeguard_result::NullParameter,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counted(#[allow(dead_code)] std::rc::Rc<()>);
    impl Handle for Counted {}

    #[test]
    fn published_handles_are_freed_once() {
        let live = std::rc::Rc::new(());
        let mut out = std::ptr::null_mut();
        // SAFETY: `out` is a local; the pointer goes back to free once.
        unsafe {
            Counted(live.clone()).publish(&mut out);
            assert_eq!(std::rc::Rc::strong_count(&live), 2);
            Counted::free(out);
            Counted::free(std::ptr::null_mut());
        }
        assert_eq!(std::rc::Rc::strong_count(&live), 1);
    }
}
