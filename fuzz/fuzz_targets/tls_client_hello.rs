//! The ClientHello parser and JA4 on arbitrary bytes: never panics, and a
//! ClientHello it accepts gives a well-formed JA4 whose part a agrees with
//! the raw parts, the same whether its extension types come from the wire
//! or as OpenSSL's list of ints.
#![no_main]

use edgeguard::tls::{ClientHello, ExtensionTypes, Fingerprint, SortRoom};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

thread_local! {
    static SCRATCH: RefCell<SortRoom> = RefCell::new(SortRoom::default());
}

fuzz_target!(|data: &[u8]| {
    let parsed = match data.first() {
        Some(1) => ClientHello::parse_handshake(data),
        _ => ClientHello::parse_record(data),
    };
    let Ok(hello) = parsed else {
        return;
    };
    SCRATCH.with(|s| {
        let s = &mut s.borrow_mut();
        let fp = Fingerprint::compute(&hello, s);
        let ja4 = fp.ja4().as_bytes();
        assert_eq!(ja4.len(), 36);
        assert!(ja4[10] == b'_' && ja4[23] == b'_');
        assert_eq!(ja4[4..6], *format!("{:02}", fp.ciphers.min(99)).as_bytes());
        assert_eq!(ja4[6..8], *format!("{:02}", fp.extensions.min(99)).as_bytes());
        let raw = Fingerprint::raw(&hello, s);
        assert_eq!(raw.as_bytes()[..10], ja4[..10]);
        let types: Vec<i32> = hello.extensions.iter().map(i32::from).collect();
        let listed = ClientHello {
            extensions: ExtensionTypes::List(&types),
            ..hello
        };
        assert_eq!(Fingerprint::compute(&listed, s), fp);
    });
});
