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
//! once a [`ja4::Scratch`] exists.

#![deny(unsafe_code)]

pub mod client_hello;
pub mod family;
pub mod ja4;

pub use client_hello::{ClientHello, ExtensionTypes, ParseError, U16List};
pub use family::Family;
pub use ja4::{Fingerprint, Scratch};

/// Extension types JA4 reads.
pub mod ext {
    /// server_name (SNI).
    pub const SERVER_NAME: u16 = 0x0000;
    /// signature_algorithms.
    pub const SIGNATURE_ALGORITHMS: u16 = 0x000d;
    /// application_layer_protocol_negotiation (ALPN).
    pub const ALPN: u16 = 0x0010;
    /// supported_versions.
    pub const SUPPORTED_VERSIONS: u16 = 0x002b;
}

/// GREASE values (RFC 8701): 0x0a0a, 0x1a1a, ... 0xfafa. JA4 ignores them
/// wherever they appear.
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grease_is_the_sixteen_rfc_8701_values() {
        let grease: Vec<u16> = (0..=u16::MAX).filter(|&v| is_grease(v)).collect();
        let expected: Vec<u16> = (0..16).map(|i| 0x0a0a + 0x1010 * i).collect();
        assert_eq!(grease, expected);
    }
}
