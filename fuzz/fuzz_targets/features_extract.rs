//! `features::extract` over arbitrary requests: never panics, never yields an
//! infinite float, and the counts it reports agree with the request.
//!
//! The input is a request in a line format, so real traffic can seed the
//! corpus (scripts/fuzz.sh writes tests/fixtures/traffic/sample.jsonl this
//! way) and mutations stay request-shaped:
//!
//! ```text
//! <version byte><method> <uri> <client addr>\n<name>:<value>\n...
//! ```
//!
//! Each field is arbitrary bytes (anything but its separator). A header
//! named `tls` is not a header: its value is offered as the connection's JA4
//! (schema 3's TLS facts; anything but a JA4's shape is refused, which must
//! not panic either), with the family from the version byte.
#![no_main]

use edgeguard::features::{
    extract, Cat, FeatureVector, Float, Request, TlsFacts, CAT_COUNT, HEADER_ORDER_CAP,
};
use edgeguard::headers::Header;
use edgeguard::tls::Family;
use libfuzzer_sys::fuzz_target;

fn split_once(s: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match s.iter().position(|&b| b == sep) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &[]),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&version, rest)) = data.split_first() else {
        return;
    };
    let mut lines = rest.split(|&b| b == b'\n');
    let first = lines.next().unwrap_or_default();
    let (method, first) = split_once(first, b' ');
    let (uri, addr) = split_once(first, b' ');
    let mut pairs: Vec<(&[u8], &[u8])> = lines.map(|l| split_once(l, b':')).collect();
    let ja4 = pairs
        .iter()
        .position(|(k, _)| *k == b"tls")
        .map(|i| pairs.remove(i).1);
    let tls = ja4.and_then(|j| TlsFacts::new(j, Family::from_number(i32::from(version % 6))));
    let headers: Vec<Header<'_>> = pairs.iter().map(|(k, v)| Header::new(k, v)).collect();
    // Mostly the versions nginx reports (10, 11, 20, 30), sometimes anything.
    let http_version = match version % 5 {
        0 => 10,
        1 => 11,
        2 => 20,
        3 => 30,
        _ => u16::from(version) * 3,
    };
    let req = Request::new(method, uri, http_version, addr, &headers).with_tls(tls);
    let mut out = FeatureVector::new();
    extract(&req, &mut out);
    for (i, v) in out.floats().iter().enumerate() {
        assert!(!v.is_infinite(), "float {i} is {v}");
    }
    assert_eq!(out.float(Float::HeaderCount), headers.len() as f32);
    assert_eq!(out.float(Float::UriLen), uri.len() as f32);
    assert_eq!(out.cats().count(), CAT_COUNT);
    assert!(out.cat(Cat::HeaderOrder).len() <= HEADER_ORDER_CAP);
    assert_eq!(out.cat(Cat::Method), method);
    match tls {
        Some(t) => {
            assert_eq!(out.cat(Cat::TlsJa4), t.ja4());
            assert!(out.float(Float::TlsCipherCount) <= 99.0);
            assert!(matches!(out.float(Float::TlsFamilyMismatch), 0.0 | 1.0));
        }
        None => {
            assert_eq!(out.cat(Cat::TlsFamily), b"none");
            assert!(out.float(Float::TlsCipherCount).is_nan());
        }
    }
    // A second extraction into the same (now dirty) vector gives the same answer.
    let floats: Vec<u32> = out.floats().iter().map(|v| v.to_bits()).collect();
    let cats: Vec<Vec<u8>> = out.cats().map(<[u8]>::to_vec).collect();
    extract(&req, &mut out);
    assert_eq!(
        floats,
        out.floats().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(cats, out.cats().map(<[u8]>::to_vec).collect::<Vec<_>>());
});
