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
//!   model calls on one feature vector would do it;
//! - `independent/N` (summary only): N one-model scorings, each extracting
//!   the features and hashing its strings itself;
//! - `models only` (summary only): [`Scorer::score_features`] with 1 and 2
//!   models on vectors extracted beforehand: hashing, input gathering and
//!   the models, without extraction.
//!
//! - `cold` (summary only): the shipped two models, whole request and
//!   models only, with 2 MiB of other data written before each request (more
//!   than this machine's L2), each request timed alone: what a worker that
//!   handles other work between two requests pays.
//!
//! N = 1 (bot), 2 (bot, spoof: the shipped configuration) and 4 (plus the
//! two reordered-subset models of tests/fixtures/scorer/). Before timing,
//! the two ways are checked to give the same scores, and heap allocations
//! per scored request are counted with dhat and printed. After criterion, a
//! summary gives each variant's best time per request over whole passes of
//! the fixture, the passes of all variants interleaved, so that the
//! comparison holds on a machine shared with other work.
//!
//! Run: `cargo bench --bench scorer`

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "../tests/scorer_support/mod.rs"]
mod scorer_support;

use criterion::{BenchmarkId, Criterion, Throughput};
use edgeguard::features::{extract, FeatureVector, Request, CAT_COUNT, FLOAT_COUNT};
use edgeguard::headers::Header;
use edgeguard::model::{cat_hash, PredictionType};
use edgeguard::scorer::{ScoreKind, ScoredModel, Scorer};
use scorer_support::{extracted, fixture_requests, root};

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

/// One way of scoring a request with every model of a scorer.
type Variant = fn(&Scorer, &Request<'_>, &mut [f64]);

/// Each model on its own: its inputs gathered by the scorer's binding (so
/// only the hashing differs from `Scorer::score`), its categorical strings
/// hashed by the model.
fn score_separately(scorer: &Scorer, req: &Request<'_>, out: &mut [f64]) {
    let mut v = FeatureVector::new();
    scorer.extract(req, &mut v);
    for (m, o) in scorer.models().iter().zip(out) {
        score_one(m, &v, o);
    }
}

/// As if each model were a scorer of its own: extraction per model too.
fn score_independently(scorer: &Scorer, req: &Request<'_>, out: &mut [f64]) {
    for (m, o) in scorer.models().iter().zip(out) {
        let mut v = FeatureVector::new();
        scorer.extract(req, &mut v);
        score_one(m, &v, o);
    }
}

fn score_one(m: &ScoredModel, v: &FeatureVector<'_>, out: &mut f64) {
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
            std::slice::from_mut(out),
        )
        .unwrap();
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

/// Best of several interleaved passes over every request, in ns per request:
/// the minimum is the pass least disturbed by other processes. Each timed
/// pass follows an untimed one of the same variant, so every variant finds
/// its models in cache, and the order of shared and separate alternates.
fn summarize(views: &[Request<'_>]) {
    const PASSES: usize = 40;
    let scorers: Vec<Scorer> = [1, 2, 4].into_iter().map(scorer).collect();
    let mut out = [0.0f64; 4];
    let mut best = [f64::INFINITY; 13];
    let vectors = extracted(&scorers[1], views);
    let mut timed = |slot: usize, f: &mut dyn FnMut(usize)| {
        for i in 0..views.len() {
            f(black_box(i));
        }
        let start = Instant::now();
        for i in 0..views.len() {
            f(black_box(i));
        }
        let ns = start.elapsed().as_nanos() as f64 / views.len() as f64;
        best[slot] = best[slot].min(ns);
    };
    for pass in 0..PASSES {
        timed(0, &mut |i| {
            let mut v = FeatureVector::new();
            scorers[1].extract(&views[i], &mut v);
            black_box(v.floats()[0]);
        });
        // What sharing saves per additional model that reads every
        // categorical feature: hashing all of them once.
        timed(1, &mut |i| {
            let mut h = 0u32;
            for c in vectors[i].cats() {
                h ^= cat_hash(c);
            }
            black_box(h);
        });
        // The models' part alone (hashing, gathering, evaluating): what
        // `shared/N` minus `extract` estimates, timed in one measurement.
        for (k, s) in scorers[..2].iter().enumerate() {
            let out = &mut out[..s.model_count()];
            timed(11 + k, &mut |i| {
                s.score_features(&vectors[i], out).unwrap();
                black_box(out[0]);
            });
        }
        for (k, s) in scorers.iter().enumerate() {
            let out = &mut out[..s.model_count()];
            let (shared, separate, independent) = (2 + 3 * k, 3 + 3 * k, 4 + 3 * k);
            let mut variants: [(usize, Variant); 3] = [
                (shared, |s, req, out| s.score(req, out).unwrap()),
                (separate, score_separately),
                (independent, score_independently),
            ];
            variants.rotate_left(pass % 3);
            for (slot, variant) in variants {
                timed(slot, &mut |i| {
                    variant(s, &views[i], out);
                    black_box(out[0]);
                });
            }
        }
    }
    println!(
        "\nsummary: best of {PASSES} passes over {} requests, ns per request",
        views.len()
    );
    println!("  extract                 {:>7.0}", best[0]);
    println!("  hash all cats           {:>7.0}", best[1]);
    println!("  models only, 1 model    {:>7.0}", best[11]);
    println!("  models only, 2 models   {:>7.0}", best[12]);
    for (k, s) in scorers.iter().enumerate() {
        let [shared, separate, independent] = [2, 3, 4].map(|v| best[v + 3 * k]);
        let saved = |other: f64| {
            format!(
                "{:>5.0} ({:>4.1}%)",
                other - shared,
                100.0 * (other - shared) / other
            )
        };
        println!(
            "  {} model(s): shared {shared:>6.0}  separate {separate:>6.0} saves {}  \
             independent {independent:>6.0} saves {}",
            s.model_count(),
            saved(separate),
            saved(independent),
        );
    }
}

/// The shipped pair on caches that other work has filled: before each
/// request, [`EVICT_BYTES`] of other data are written, then that request is
/// timed alone (the clock's ~20 ns included). Best of several passes of the
/// mean per request, whole request and models only.
fn summarize_cold(views: &[Request<'_>]) {
    const PASSES: usize = 10;
    const EVICT_BYTES: usize = 2 << 20;
    let pair = scorer(2);
    let vectors = extracted(&pair, views);
    let mut other = vec![0u64; EVICT_BYTES / 8];
    let mut out = [0.0f64; 2];
    let mut best = [f64::INFINITY; 2];
    // One write per cache line is enough to displace it.
    let mut evict = || {
        for (i, word) in other.iter_mut().enumerate().step_by(8) {
            *word = word.wrapping_add(i as u64);
        }
        black_box(&mut other);
    };
    for _ in 0..PASSES {
        let mut total = [0u128; 2];
        for (req, v) in views.iter().zip(&vectors) {
            evict();
            let start = Instant::now();
            pair.score(black_box(req), &mut out).unwrap();
            total[0] += start.elapsed().as_nanos();
            black_box(out[0]);
            evict();
            let start = Instant::now();
            pair.score_features(black_box(v), &mut out).unwrap();
            total[1] += start.elapsed().as_nanos();
            black_box(out[0]);
        }
        for (b, t) in best.iter_mut().zip(total) {
            *b = b.min(t as f64 / views.len() as f64);
        }
    }
    println!(
        "  cold, 2 models ({} MiB written before each request): whole request {:>6.0}  models only {:>6.0}",
        EVICT_BYTES >> 20,
        best[0],
        best[1]
    );
}

fn bench(c: &mut Criterion) {
    let requests = fixture_requests();
    let n = requests.len();
    let headers: Vec<Vec<Header<'_>>> = requests.iter().map(|r| r.ffi_headers()).collect();
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
        score_independently(&all, req, &mut separate);
        assert_eq!(out, separate, "all ways give the same scores");
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

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench(&mut c);
    // cargo passes `--bench` only to `cargo bench`; `cargo test` runs each
    // variant once, where a timing summary would mean nothing.
    if std::env::args().any(|arg| arg == "--bench") {
        let requests = fixture_requests();
        let headers: Vec<Vec<Header<'_>>> = requests.iter().map(|r| r.ffi_headers()).collect();
        let views: Vec<Request<'_>> = requests
            .iter()
            .zip(&headers)
            .map(|(r, h)| r.view(h))
            .collect();
        summarize(&views);
        summarize_cold(&views);
    }
    c.final_summary();
}
