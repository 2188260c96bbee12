//! `HeaderSet::parse` on arbitrary bytes: never panics, and a list it accepts
//! holds at least one rule and matches every exact name written in it.
#![no_main]

use edgeguard::headers::HeaderSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(set) = HeaderSet::parse("<fuzz>", data) else {
        return;
    };
    assert!(!set.is_empty(), "an accepted list has a rule");
    for line in data.split(|&b| b == b'\n') {
        let name = line.trim_ascii();
        let name = &name[..name
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(name.len())];
        if name.is_empty() || name[0] == b'#' {
            continue;
        }
        // An accepted prefix rule `p*` matches `p` itself; an exact name matches itself.
        let probe = name.strip_suffix(b"*").unwrap_or(name);
        assert!(
            set.is_internal(probe),
            "{:?} listed but not internal",
            probe.escape_ascii().to_string()
        );
    }
});
