//! The C ABI. This module owns only the boundary: result codes, the panic
//! boundary, null checks and error buffers. Each exported concept has its own
//! submodule; the logic lives in the crate's other modules.
//!
//! Conventions (see `include/edgeguard.h`): every symbol starts with
//! `edgeguard_`; handles are opaque, made by `_new` and released by `_free`;
//! functions return an [`edgeguard_result`]; outputs are written only on
//! success; detailed messages go to a caller-owned `errbuf`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CStr};

#[macro_use]
mod boundary;

pub mod access;
pub mod challenge;
pub mod config;
pub mod headers;
pub mod metrics;
pub mod model;
pub mod process;
pub mod record;
pub mod scorer;
pub mod text;
pub mod tls;
mod types;

pub use boundary::PanicValue;
pub use types::{edgeguard_header, edgeguard_str, headers_as_c, headers_from_c};

/// Result of every fallible export. The numbers are stable: they are part of
/// the ABI and may be logged or compared by callers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_result {
    /// Success; outputs were written.
    Ok = 0,
    /// A required pointer argument was null.
    NullParameter = 1,
    /// A bug inside edgeguard was caught at the boundary; nothing was written.
    Panic = 2,
    /// An argument is out of its documented range (length, count, flag).
    InvalidArgument = 3,
    /// A file could not be read; errbuf names it and the OS error.
    Io = 4,
    /// An internal-header list was rejected; errbuf names the source and line.
    HeaderListInvalid = 5,
    /// A model was rejected; errbuf names the file and the field.
    ModelInvalid = 6,
    /// The number of features given does not match what the model expects.
    FeatureCount = 7,
    /// An output buffer is too small for the result.
    BufferTooSmall = 8,
    /// A configuration was rejected; errbuf says which setting and why.
    ConfigInvalid = 9,
    /// The TLS library functions a call needs are not in this process
    /// (OpenSSL's client-hello calls, found at run time).
    TlsUnavailable = 10,
}

impl edgeguard_result {
    /// The fixed description of this code.
    pub fn text(self) -> &'static CStr {
        match self {
            Self::Ok => c"ok",
            Self::NullParameter => c"a required pointer argument was null",
            Self::Panic => c"internal error: a panic was caught at the C ABI boundary",
            Self::InvalidArgument => c"an argument is out of range",
            Self::Io => c"a file could not be read",
            Self::HeaderListInvalid => c"the internal header list is invalid",
            Self::ModelInvalid => c"the model is invalid",
            Self::FeatureCount => c"wrong number of features for this model",
            Self::BufferTooSmall => c"the output buffer is too small",
            Self::ConfigInvalid => c"the configuration is invalid",
            Self::TlsUnavailable => c"the TLS library functions needed are not in this process",
        }
    }
}

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
        boundary::result_from_int(result)
            .map_or(c"unknown result code", edgeguard_result::text)
            .as_ptr()
    }
}
