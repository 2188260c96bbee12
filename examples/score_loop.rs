//! A fixed workload for instruction counting of request scoring: the shipped
//! scorer (bot + spoof) over the traffic fixture's requests, `rounds` times,
//! features extracted and scored per request as `Scorer::score` does it.
//! `scripts/callgrind-model.sh scorer` runs it under callgrind and reports
//! instructions per request for extraction, the models, and both.
//!
//! `cargo run --release --example score_loop -- ROUNDS [shipped|legacy]`:
//! `legacy` scores with the schema-1 models of `models/legacy/` instead,
//! which read the features schema 4 left out (the request target, the
//! hand-written header order, the language).

use std::hint::black_box;

#[path = "../tests/scorer_support/mod.rs"]
mod scorer_support;

use edgeguard::features::{FeatureVector, Request};
use edgeguard::headers::Header;
use edgeguard::scorer::Scorer;
use scorer_support::{extracted, fixture_requests, shipped};

/// Extraction alone; out of line so callgrind counts it under one name.
#[inline(never)]
fn extract_all(scorer: &Scorer, views: &[Request<'_>], rounds: usize) -> f32 {
    let mut total = 0.0;
    for _ in 0..rounds {
        for req in views {
            let mut v = FeatureVector::new();
            scorer.extract(black_box(req), &mut v);
            total += v.floats()[0];
        }
    }
    total
}

/// Both models on vectors extracted beforehand.
#[inline(never)]
fn models_all(scorer: &Scorer, vectors: &[FeatureVector<'_>], rounds: usize) -> f64 {
    let mut out = [0.0; 2];
    let mut total = 0.0;
    for _ in 0..rounds {
        for v in vectors {
            scorer
                .score_features(black_box(v), &mut out)
                .expect("score");
            total += out[0] + out[1];
        }
    }
    total
}

/// Extraction, hashing and both models: `Scorer::score`.
#[inline(never)]
fn score_all(scorer: &Scorer, views: &[Request<'_>], rounds: usize) -> f64 {
    let mut out = [0.0; 2];
    let mut total = 0.0;
    for _ in 0..rounds {
        for req in views {
            scorer.score(black_box(req), &mut out).expect("score");
            total += out[0] + out[1];
        }
    }
    total
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(1, |r| r.parse().expect("ROUNDS is a number"));
    let files = match std::env::args().nth(2).as_deref() {
        None | Some("shipped") => shipped(),
        Some("legacy") => vec![
            ("bot", scorer_support::root("models/legacy/bot.json")),
            ("spoof", scorer_support::root("models/legacy/spoof.json")),
        ],
        Some(other) => panic!("unknown model set {other:?}: shipped or legacy"),
    };
    let files: Vec<(&str, &std::path::Path)> =
        files.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let scorer = Scorer::load(&files).unwrap_or_else(|e| panic!("{e}"));
    let requests = fixture_requests();
    let headers: Vec<Vec<Header<'_>>> = requests.iter().map(|r| r.ffi_headers()).collect();
    let views: Vec<Request<'_>> = requests
        .iter()
        .zip(&headers)
        .map(|(r, h)| r.view(h))
        .collect();
    let vectors = extracted(&scorer, &views);
    let e = extract_all(&scorer, &views, rounds);
    let m = models_all(&scorer, &vectors, rounds);
    let s = score_all(&scorer, &views, rounds);
    println!("{} requests, checksums {e} {m} {s}", views.len() * rounds);
}
