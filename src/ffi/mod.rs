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
pub mod engine;
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

/// The version of this C ABI: what a caller built against
/// include/edgeguard.h compares with [`edgeguard_abi_version`] before
/// calling anything else.
///
/// Bumped whenever a declaration of the header changes (a function's
/// signature, a type's layout, a constant, an enum's numbers). The Lua
/// shim's cdefs carry the number of the header they were generated from
/// (scripts/gen-cdefs.lua), and lib.lua refuses a library of another: an
/// nginx reload after an upgrade runs the new Lua against the old library,
/// which LuaJIT cannot unload.
pub const EDGEGUARD_ABI_VERSION: u32 = 2;

/// The C declarations of the enums `c_enum!` declares, for
/// include/edgeguard.h (tests/c_header.rs writes them ahead of cbindgen's
/// items; cbindgen does not expand macros). An enum `c_enum!` declares that
/// crosses the ABI is listed here once.
pub fn c_enum_declarations() -> String {
    [
        crate::outcome::Outcome::c_declaration(),
        crate::gate::Job::c_declaration(),
        crate::config::Engine::c_declaration(),
        crate::metrics::Disagreement::c_declaration(),
        crate::model::PredictionType::c_declaration(),
    ]
    .join("\n")
}

/// The crate version this header was generated from (Cargo.toml's),
/// major part. The shim refuses a library of another version even when the
/// ABI agrees: the Lua modules and the library are one release, and the
/// options and texts they exchange change between releases without the ABI
/// changing. (Numbers, not a string: cbindgen writes no string constant,
/// and LuaJIT's cdef declares none.)
pub const EDGEGUARD_VERSION_MAJOR: u32 = 0;
/// The crate version's minor part ([`EDGEGUARD_VERSION_MAJOR`]).
pub const EDGEGUARD_VERSION_MINOR: u32 = 1;
/// The crate version's patch part ([`EDGEGUARD_VERSION_MAJOR`]).
pub const EDGEGUARD_VERSION_PATCH: u32 = 0;

// Cargo.toml's version and the header's cannot drift: a bump fails the
// build here until these follow, then tests/c_header.rs until `make header`.
const _: () = assert!(
    parse_u32(env!("CARGO_PKG_VERSION_MAJOR")) == EDGEGUARD_VERSION_MAJOR
        && parse_u32(env!("CARGO_PKG_VERSION_MINOR")) == EDGEGUARD_VERSION_MINOR
        && parse_u32(env!("CARGO_PKG_VERSION_PATCH")) == EDGEGUARD_VERSION_PATCH,
    "EDGEGUARD_VERSION_* differ from Cargo.toml's version: change them and run `make header`"
);

/// The decimal number `s` spells, at compile time.
const fn parse_u32(s: &str) -> u32 {
    let s = s.as_bytes();
    let (mut n, mut i) = (0u32, 0);
    while i < s.len() {
        n = n * 10 + (s[i] - b'0') as u32;
        i += 1;
    }
    n
}

/// [`EDGEGUARD_ABI_VERSION`] of this library. A caller compares it with the
/// number of the header it was built against and refuses to go on when
/// they differ.
#[no_mangle]
pub extern "C" fn edgeguard_abi_version() -> u32 {
    ffi_panic_boundary! {
        EDGEGUARD_ABI_VERSION
    }
}

/// The library version (Cargo.toml's, [`EDGEGUARD_VERSION_MAJOR`] and the
/// next two with any pre-release suffix), e.g. `"0.1.0"`. Static
/// storage: never free it.
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
