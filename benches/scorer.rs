//! Bot scoring per request on the traffic fixture
//! (tests/fixtures/traffic/sample.jsonl, 200 labelled requests of browsers,
//! crawlers, scripts and spoofers; each iteration takes the next request):
//!
//! - `extract`: the feature vector alone;
//! - `shared/N`: [`Scorer::score`] with N models: extraction, each
//!   categorical value hashed once, N models on the shared hashes;
//! - `separate/N`: extraction once, then each of the N models scored on
//!   its own from the categorical strings (`Model::predict_strings`, which
//!   hashes every categorical value the model uses), the way N independent
//!   model calls would do it.
//!
//! N = 1 (bot), 2 (bot, spoof: the shipped configuration) and 4 (plus the
//! two reordered-subset models of tests/fixtures/scorer/). Before timing,
//! the two ways are checked to give the same scores, and heap allocations
//! per scored request are counted with dhat and printed.
//!
//! Run: `cargo bench --bench scorer`

use std::hint::black_box;
use std::path::PathBuf;

#[path = "../tests/scorer_support/mod.rs"]
mod scorer_support;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use edgeguard::features::{extract, FeatureVector, Request, CAT_COUNT, FLOAT_COUNT};
use edgeguard::model::PredictionType;
use edgeguard::request::edgeguard_header;
use edgeguard::scorer::{ScoreKind, Scorer};
use scorer_support::{fixture_requests, root};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn model_files() -> Vec<(&'static str, PathBuf)> {
    vec![
        ("bot", root("models/bot.json")),
        ("spoof", root("models/spoof.json")),
        ("reordered", root("tests/fixtures/scorer/reordered.json")),
        ("regression", root("tests/fixtures/scorer/regression.json")),
    ]
}

fn scorer(n: usize) -> Scorer {
    let files = model_files();
    let files: Vec<(&str, &std::path::Path)> = files[..n]
        .iter()
        .map(|(name, p)| (*name, p.as_path()))
        .collect();
    Scorer::load(&files).unwrap_or_else(|e| panic!("{e}"))
}

/// Each model on its own: its inputs gathered by the scorer's binding (so
/// only the hashing differs from `Scorer::score`), its categorical strings
/// hashed by the model.
fn score_separately(scorer: &Scorer, req: &Request<'_>, out: &mut [f64]) {
    let mut v = FeatureVector::new();
    extract(req, &mut v);
    for (m, o) in scorer.models().iter().zip(out) {
        let mut floats = [0.0f32; FLOAT_COUNT];
        let mut cats: [&[u8]; CAT_COUNT] = [b""; CAT_COUNT];
        for (dst, f) in floats.iter_mut().zip(m.float_inputs()) {
            *dst = v.float(*f);
        }
        for (dst, c) in cats.iter_mut().zip(m.cat_inputs()) {
            *dst = v.cat(*c);
        }
        let ty = match m.kind() {
            ScoreKind::Probability => PredictionType::Probability,
            ScoreKind::Raw => PredictionType::Raw,
        };
        m.model()
            .predict_strings(
                &floats[..m.float_inputs().len()],
                &cats[..m.cat_inputs().len()],
                ty,
                std::slice::from_mut(o),
            )
            .unwrap();
    }
}

/// Heap blocks allocated per call of `f`, averaged over `n` calls.
fn allocations_per_call(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let _profiler = dhat::Profiler::builder().testing().build();
    let before = dhat::HeapStats::get().total_blocks;
    for i in 0..n {
        f(i);
    }
    (dhat::HeapStats::get().total_blocks - before) as f64 / n as f64
}

fn bench(c: &mut Criterion) {
    let requests = fixture_requests();
    let n = requests.len();
    let headers: Vec<Vec<edgeguard_header>> = requests.iter().map(|r| r.ffi_headers()).collect();
    let views: Vec<Request<'_>> = requests
        .iter()
        .zip(&headers)
        .map(|(r, h)| r.view(h))
        .collect();

    let all = scorer(4);
    let mut out = [0.0f64; 4];
    let mut separate = [0.0f64; 4];
    for req in &views {
        all.score(req, &mut out).unwrap();
        score_separately(&all, req, &mut separate);
        assert_eq!(out, separate, "both ways give the same scores");
    }
    let allocs = allocations_per_call(n, |i| all.score(&views[i], &mut out).unwrap());
    eprintln!("scorer: {n} requests, 4 models: heap allocations per scored request: {allocs}");

    let mut group = c.benchmark_group("scorer");
    group.throughput(Throughput::Elements(1));
    let mut i = 0;
    group.bench_function("extract", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let mut v = FeatureVector::new();
            extract(black_box(&views[i]), &mut v);
            black_box(v.floats()[0])
        })
    });
    for models in [1, 2, 4] {
        let scorer = scorer(models);
        let out = &mut out[..models];
        group.bench_function(BenchmarkId::new("shared", models), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                scorer.score(black_box(&views[i]), out).unwrap();
                black_box(out[0])
            })
        });
        group.bench_function(BenchmarkId::new("separate", models), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                score_separately(&scorer, black_box(&views[i]), out);
                black_box(out[0])
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
