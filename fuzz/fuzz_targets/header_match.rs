//! The header matcher against a naive reference: an arbitrary valid list and
//! arbitrary request names, so the fuzzer finds wrong answers, not only
//! crashes. Checks `is_internal` per name and `find_internal` per request
//! (every internal header named by an index to clear, counts exact).
#![no_main]

use arbitrary::Arbitrary;
use edgeguard::headers::Header;
use edgeguard::headers::{HeaderSet, MAX_NAME_LEN};
use libfuzzer_sys::{arbitrary, fuzz_target};

#[derive(Arbitrary, Debug)]
struct Input {
    rules: Vec<(Vec<u8>, bool)>,
    names: Vec<Vec<u8>>,
    /// Capacity of the index buffer, to exercise the retry path too.
    clear_cap: u8,
}

/// RFC 9110 token characters less `#` and `*`: what a list name may hold.
const TOKEN: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!$%&'+-.^_`|~";

fn fold(b: u8) -> u8 {
    if b == b'_' {
        b'-'
    } else {
        b.to_ascii_lowercase()
    }
}

fn folded(s: &[u8]) -> Vec<u8> {
    s.iter().map(|&b| fold(b)).collect()
}

fuzz_target!(|input: Input| {
    // Map arbitrary bytes onto the token alphabet so most lists are valid.
    let rules: Vec<(Vec<u8>, bool)> = input
        .rules
        .iter()
        .map(|(n, p)| {
            let name: Vec<u8> = n
                .iter()
                .take(MAX_NAME_LEN)
                .map(|&b| TOKEN[b as usize % TOKEN.len()])
                .collect();
            (name, *p)
        })
        .filter(|(n, _)| !n.is_empty())
        .collect();
    if rules.is_empty() {
        return;
    }
    let mut list = Vec::new();
    for (name, prefix) in &rules {
        list.extend_from_slice(name);
        if *prefix {
            list.push(b'*');
        }
        list.extend_from_slice(b"  # why\n");
    }
    let set = HeaderSet::parse("<fuzz>", &list).expect("a list of token names is valid");
    let internal = |name: &[u8]| {
        let f = folded(name);
        rules.iter().any(|(r, prefix)| {
            let r = folded(r);
            if *prefix {
                f.starts_with(&r)
            } else {
                f == r
            }
        })
    };
    // Names from the fuzzer, plus respellings of the rules themselves.
    let mut names = input.names.clone();
    for (r, _) in rules.iter().take(8) {
        names.push(
            r.iter()
                .map(|&b| {
                    if b == b'-' {
                        b'_'
                    } else {
                        b.to_ascii_uppercase()
                    }
                })
                .collect(),
        );
        names.push([r.as_slice(), b"x"].concat());
    }
    for name in &names {
        assert_eq!(
            set.is_internal(name),
            internal(name),
            "{:?}",
            name.escape_ascii().to_string()
        );
    }
    let headers: Vec<Header<'_>> = names.iter().map(|n| Header::new(n, b"v")).collect();
    let mut clear = vec![u32::MAX; usize::from(input.clear_cap).min(headers.len())];
    let found = set.find_internal(&headers, &mut clear);
    let matched = names.iter().filter(|n| internal(n)).count();
    assert_eq!(found.matched, matched);
    // Distinct as nginx's clear_header compares: ASCII case only.
    let mut distinct: Vec<Vec<u8>> = Vec::new();
    for n in names.iter().filter(|n| internal(n)) {
        let lower = n.to_ascii_lowercase();
        if !distinct.contains(&lower) {
            distinct.push(lower);
        }
    }
    assert_eq!(found.distinct, distinct.len());
    let written = found.distinct.min(clear.len());
    for (k, &i) in clear[..written].iter().enumerate() {
        let name = &names[i as usize];
        assert!(internal(name));
        assert_eq!(
            name.to_ascii_lowercase(),
            distinct[k],
            "indices in request order, first of each name"
        );
    }
});
