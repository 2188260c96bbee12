//! TLS ClientHello fingerprints: JA4, computed from the parts of a
//! ClientHello, however they were obtained.
//!
//! Two sources fill the same [`ClientHello`] view:
//!
//! - [`ClientHello::parse_record`] / [`ClientHello::parse_handshake`] read
//!   the bytes of a ClientHello as a client sent them (tests, `edgeguard
//!   tls`, captures);
//! - nginx's OpenSSL, during `ssl_client_hello_by_lua*`, through the
//!   `SSL_client_hello_get0_*` calls (`src/ffi/tls.rs`), which hand out the
//!   cipher list, the extension types OpenSSL recognised, and the data of an
//!   extension by type.
//!
//! [`ja4::Fingerprint::compute`] turns either into the fixed-length JA4 string
//! (FoxIO's specification, `technical_details/JA4.md` of FoxIO-LLC/ja4) and a
//! few raw facts (counts, ALPN, a coarse [`family::Family`]). Everything here
//! is safe Rust over borrowed byte slices; nothing allocates per ClientHello
//! once a [`ja4::SortRoom`] exists.

#![deny(unsafe_code)]

pub mod client_hello;
pub mod codepoints;
pub mod family;
pub mod ja4;

pub use client_hello::{ClientHello, ExtensionTypes, ParseError, U16List};
pub use codepoints::{ext, is_grease};
pub use family::Family;
pub use ja4::{Fingerprint, SortRoom};
