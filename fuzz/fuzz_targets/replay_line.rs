//! One replay input line, arbitrary bytes: parsing never panics, and where
//! the hand-written scanner answers, serde_json (the reference it falls back
//! to) reads the same line to the same fields, headers and live scores.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    if let Err(e) = edgeguard::replay::line_parsers_agree(line) {
        panic!("{e}\nline: {}", line.escape_ascii());
    }
});
