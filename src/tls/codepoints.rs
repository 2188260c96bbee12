//! The TLS registry values JA4 reads (IANA extension types, RFC 8701
//! GREASE). A leaf: the parser, the family guess and JA4 all read it, so it
//! cannot live in `tls/mod.rs`, which names them.

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
