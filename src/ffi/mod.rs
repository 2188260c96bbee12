//! The C ABI. This module owns only the boundary: it converts C's pointers
//! and numbers into the crate's safe types, calls the crate, and converts
//! the answer back. Each exported concept has its own submodule; the
//! plumbing is private: the C types and every conversion (`types.rs`), the
//! panic boundary and checks (`boundary.rs`), borrowing C's pointers (`raw.rs`), handle ownership
//! (`handle.rs`), OpenSSL's run-time binding (`openssl.rs`).
//!
//! Conventions (see `include/edgeguard.h` and `docs/c-api.md`): every
//! symbol starts with `edgeguard_`; handles are opaque, made by `_new` and
//! released by `_free`; functions return an [`edgeguard_result`]; outputs
//! are written only on success; detailed messages go to a caller-owned
//! `errbuf`.

#![allow(non_camel_case_types)]

use std::ffi::c_char;

#[macro_use]
mod boundary;
#[macro_use]
mod handle;
mod openssl;
mod raw;
mod types;

pub mod config;
pub mod headers;
pub mod location;
pub mod metrics;
pub mod model;
pub mod process;
pub mod record;
pub mod scorer;
pub mod tls;

pub use boundary::PanicValue;
pub use types::*;

/// The library version, e.g. `"0.1.0"`. Static storage: never free it.
#[no_mangle]
pub extern "C" fn edgeguard_version() -> *const c_char {
    ffi_panic_boundary! {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    }
}

/// A fixed, NUL-terminated description of `result`. Static storage: never
/// free it. Unknown numbers give `"unknown result code"`.
#[no_mangle]
pub extern "C" fn edgeguard_result_text(result: libc::c_int) -> *const c_char {
    ffi_panic_boundary! {
        edgeguard_result::from_int(result)
            .map_or(c"unknown result code", edgeguard_result::text)
            .as_ptr()
    }
}
