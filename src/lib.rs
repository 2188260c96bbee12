//! edgeguard: the hot path of an OpenResty/nginx edge, in Rust behind a C ABI.
//!
//! Two jobs run on every request: [`headers`] decides which request headers are
//! internal and must never reach an origin, and the bot scorer turns a request
//! into [`features`] and scores them with CatBoost [`model`]s. Everything that
//! allocates happens at load time; the per-request calls work on nginx-owned
//! bytes in place.
//!
//! The C ABI lives in [`ffi`]; `include/edgeguard.h` is generated from it.

#![deny(missing_docs, unreachable_pub)]
// Raw pointers are read in `ffi` only; the rest of the crate takes safe
// views (`headers::Header`). The audited spots in `model` (the SIMD tree
// kernels and prefetch hint in `model::simd`, the official CatBoost binding)
// allow it locally.
#![deny(unsafe_code)]

// First: the macro is in scope for the modules declared after it.
#[macro_use]
mod c_enum;

pub mod challenge;
pub mod clients;
pub mod config;
pub mod features;
#[allow(unsafe_code)]
pub mod ffi;
pub mod gate;
pub mod headers;
pub mod hop;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod load;
pub mod metrics;
pub mod model;
pub mod net;
pub mod outcome;
pub mod replay;
pub mod rules;
pub mod scorer;
pub mod signals;
pub mod tls;
pub mod verified;
