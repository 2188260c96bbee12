//! Scoring allocates nothing: extraction, hashing and every model, on every
//! request of the traffic fixture. One dhat profiler per test binary and no
//! libtest harness (`harness = false` in Cargo.toml): dhat counts every
//! thread, and libtest's main thread allocates while a test runs.

mod scorer_support;

use edgeguard::features::TlsFacts;
use edgeguard::headers::Header;
use edgeguard::scorer::Scorer;
use edgeguard::tls::Family;
use scorer_support::{fixture_requests, root};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const ROUNDS: usize = 5;

fn main() {
    score_allocates_nothing();
    println!("scorer_alloc: 1 passed, 0 failed");
}

fn score_allocates_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // Both shipped models, plus models on reordered subsets of the schema
    // (a classifier and a regression), so every binding path runs.
    let files = [
        ("bot", root("models/bot.json")),
        ("spoof", root("models/spoof.json")),
        ("reordered", root("tests/fixtures/scorer/reordered.json")),
        ("regression", root("tests/fixtures/scorer/regression.json")),
    ];
    let files: Vec<(&str, &std::path::Path)> =
        files.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let scorer = Scorer::load(&files).expect("scorer loads");
    let requests = fixture_requests();
    let headers: Vec<Vec<Header<'_>>> = requests.iter().map(|r| r.ffi_headers()).collect();
    let mut out = [0.0f64; 4];
    let mut checksum = 0.0;

    let tls =
        TlsFacts::new(b"t13d1812h1_85036bcba153_b26ce05bbdd6", Family::Openssl).expect("a JA4");
    let before = dhat::HeapStats::get();
    for _ in 0..ROUNDS {
        for (r, h) in requests.iter().zip(&headers) {
            scorer.score(&r.view(h), &mut out).expect("scored");
            checksum += out.iter().sum::<f64>();
            // Over TLS: the schema-3 models hash the JA4 and family too.
            scorer
                .score(&r.view(h).with_tls(Some(tls)), &mut out)
                .expect("scored");
            checksum += out.iter().sum::<f64>();
        }
    }
    let after = dhat::HeapStats::get();

    let calls = 2 * ROUNDS * requests.len();
    println!(
        "scorer_alloc: {calls} requests x {} models: {} allocations ({} per request)",
        scorer.model_count(),
        after.total_blocks - before.total_blocks,
        (after.total_blocks - before.total_blocks) as f64 / calls as f64
    );
    dhat::assert_eq!(after.total_blocks, before.total_blocks);
    dhat::assert_eq!(after.total_bytes, before.total_bytes);
    assert!(checksum.is_finite() && checksum != 0.0);
}
