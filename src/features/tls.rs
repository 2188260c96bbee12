//! The TLS features (schema 3): what the connection's ClientHello says, and
//! whether it fits the client the User-Agent claims.
//!
//! Every feature here is computed from two facts only, the connection's JA4
//! string and the TLS library family guessed from its cipher list
//! ([`crate::tls::Family`]), because those are what both sources carry:
//! nginx hands over the `edgeguard_tls_info` its ClientHello callback
//! stored on the connection, and an access-log line carries
//! `edgeguard_ja4` and `edgeguard_tls_family`. A replayed line therefore
//! scores as nginx scored it. The counts are JA4's (capped at 99), not the
//! raw ones, for the same reason.
//!
//! Without TLS facts (plain HTTP; TLS without `ssl_client_hello_by_lua`;
//! TLS terminated in front of nginx) the floats are NaN, which CatBoost
//! reads as missing, and the categorical values are empty (`tls_family`:
//! `none`). A resumed session sends a ClientHello too and is scored with
//! its own (its JA4 counts the pre_shared_key extension).

use super::orders::Engine;
use super::request::TlsFacts;
use super::schema::{Cat, Float};
use super::user_agent::{Os, UserAgent};
use super::vector::FeatureVector;
use crate::tls::Family;

/// The family whose ClientHello a browser engine sends: Chromium's
/// BoringSSL; Firefox's NSS; Apple's TLS stack (Safari and every iOS
/// browser) sends GREASE as BoringSSL does, which is what the guess reads.
/// `None` for engines of no known library, and for WebKit off Apple's
/// systems: WebKitGTK and WPE use GLib's TLS (GnuTLS, which the guess
/// reads as OpenSSL; captured: Epiphany 43 / WebKitGTK 2.50).
fn expected_family(engine: Engine, ua: &UserAgent) -> Option<Family> {
    match engine {
        Engine::Chromium => Some(Family::Boringssl),
        Engine::WebKit => matches!(ua.os, Os::MacOs | Os::Ios).then_some(Family::Boringssl),
        Engine::Gecko => Some(Family::Nss),
        Engine::Other => None,
    }
}

/// Sets the TLS features of `out` from `tls` and the parsed User-Agent.
pub(super) fn extract<'a>(tls: Option<TlsFacts<'a>>, ua: &UserAgent, out: &mut FeatureVector<'a>) {
    let Some(t) = tls else {
        for f in [
            Float::Tls13,
            Float::TlsCipherCount,
            Float::TlsExtensionCount,
            Float::TlsAlpnH2,
            Float::TlsFamilyMismatch,
            Float::TlsBrowserNoH2,
        ] {
            out.set(f, f32::NAN);
        }
        out.set_cat(Cat::TlsJa4, b"");
        out.set_cat(Cat::TlsJa4A, b"");
        out.set_cat(Cat::TlsFamily, b"none");
        return;
    };
    let engine = Engine::of(ua);
    out.set_flag(Float::Tls13, t.tls13());
    out.set(Float::TlsCipherCount, f32::from(t.cipher_count()));
    out.set(Float::TlsExtensionCount, f32::from(t.extension_count()));
    out.set_flag(Float::TlsAlpnH2, t.alpn_h2());
    out.set_flag(
        Float::TlsFamilyMismatch,
        t.family_is_evidence()
            && engine
                .and_then(|e| expected_family(e, ua))
                .is_some_and(|f| f != t.family()),
    );
    out.set_flag(Float::TlsBrowserNoH2, engine.is_some() && !t.alpn_h2());
    out.set_cat(Cat::TlsJa4, t.ja4());
    out.set_cat(Cat::TlsJa4A, t.ja4_a());
    out.set_cat(Cat::TlsFamily, t.family().name().as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME: &[u8] = b"t13d1516h2_8daaf6152771_e5627efa2ab1";

    #[test]
    fn parts_are_read_by_position() {
        let t = TlsFacts::new(CHROME, Family::Boringssl).unwrap();
        assert_eq!(t.ja4_a(), b"t13d1516h2");
        assert!(t.tls13() && t.alpn_h2());
        assert_eq!((t.cipher_count(), t.extension_count()), (15, 16));
        let t = TlsFacts::new(b"t12i990700_0123456789ab_000000000000", Family::Openssl).unwrap();
        assert!(!t.tls13() && !t.alpn_h2());
        assert_eq!((t.cipher_count(), t.extension_count()), (99, 7));
    }

    #[test]
    fn anything_but_a_ja4_is_refused() {
        for bad in [
            &b""[..],
            b"t13d1516h2",
            b"T13D1516H2_8DAAF6152771_E5627EFA2AB1",
            b"t13d15x6h2_8daaf6152771_e5627efa2ab1",
            b"t13d1516h2-8daaf6152771-e5627efa2ab1",
            b"t13d1516h2_8daaf6152771_e5627efa2ab1x",
        ] {
            assert!(TlsFacts::new(bad, Family::Go).is_none(), "{bad:?}");
        }
        // ALPN characters keep the client's case.
        assert!(TlsFacts::new(b"t13d1516HP_8daaf6152771_e5627efa2ab1", Family::Go).is_some());
    }
}
