//! Single-document CatBoost scoring: the native evaluator (hashed and string
//! categoricals) and, with `--features official`, the official library on the
//! same documents.
//!
//! Models: the binary fixture (tests/fixtures/catboost/binary_ctr.json, 30
//! trees of depth 6, 4 categorical features with CTR combinations), the shape
//! the official library's baseline was measured on
//! (benches/data/model-baseline.json: 300 trees of depth 6, 6 float and 4
//! categorical features) and a production-like one
//! (benches/data/model-bench.json: 1000 trees of depth 6, 20 float and 8
//! categorical features). Both made by `python3 models/make_fixtures.py --bench`.
//!
//! Before timing, allocations per prediction are counted with dhat and
//! printed.
//!
//! Run: `cargo bench --bench model` (add `--features official` for the side
//! by side comparison).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use edgeguard::model::{cat_hash, Evaluator, Kernel, Model, PredictionType};

#[path = "../tests/official_support/mod.rs"]
mod official_support;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Case {
    name: &'static str,
    json: PathBuf,
    docs: PathBuf,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "binary_ctr",
            json: root().join("tests/fixtures/catboost/binary_ctr.json"),
            docs: root().join("tests/fixtures/catboost/binary_ctr.docs.jsonl"),
        },
        Case {
            name: "baseline_300x6",
            json: root().join("benches/data/model-baseline.json"),
            docs: root().join("benches/data/model-baseline-docs.jsonl"),
        },
        Case {
            name: "bench_1000x6",
            json: root().join("benches/data/model-bench.json"),
            docs: root().join("benches/data/model-bench-docs.jsonl"),
        },
    ]
}

struct Docs {
    floats: Vec<Vec<f32>>,
    strings: Vec<Vec<String>>,
    hashes: Vec<Vec<i32>>,
}

fn load_docs(path: &Path) -> Docs {
    let mut docs = Docs {
        floats: Vec::new(),
        strings: Vec::new(),
        hashes: Vec::new(),
    };
    for d in official_support::read_docs(path) {
        docs.hashes.push(
            d.cats
                .iter()
                .map(|s| cat_hash(s.as_bytes()) as i32)
                .collect(),
        );
        docs.strings.push(d.cats);
        docs.floats.push(d.floats);
    }
    docs
}

/// CPU time of this thread, in nanoseconds. The machine running the bench may
/// be shared: thread CPU time leaves out the time other processes ran.
fn thread_cpu_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for clock_gettime.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// Thread CPU nanoseconds per call of `f`, over `rounds` passes of `n` calls.
fn cpu_ns_per_call(n: usize, rounds: usize, mut f: impl FnMut(usize)) -> f64 {
    for i in 0..n {
        f(i);
    }
    let start = thread_cpu_ns();
    for _ in 0..rounds {
        for i in 0..n {
            f(i);
        }
    }
    (thread_cpu_ns() - start) as f64 / (n * rounds) as f64
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
    for case in cases() {
        let started = std::time::Instant::now();
        let model = Model::load(&case.json).unwrap_or_else(|e| panic!("{e}"));
        let load_ms = started.elapsed().as_secs_f64() * 1e3;
        let docs = load_docs(&case.docs);
        let n = docs.floats.len();
        let strings: Vec<Vec<&[u8]>> = docs
            .strings
            .iter()
            .map(|d| d.iter().map(|s| s.as_bytes()).collect())
            .collect();
        let mut out = vec![0.0; model.dimension()];

        let native_allocs = allocations_per_call(n, |i| {
            model
                .predict(
                    &docs.floats[i],
                    &docs.hashes[i],
                    PredictionType::Raw,
                    &mut out,
                )
                .unwrap();
            model
                .predict_strings(
                    &docs.floats[i],
                    &strings[i],
                    PredictionType::Probability,
                    &mut out,
                )
                .unwrap();
        });
        let rounds = (20_000 / (n * model.tree_count().max(1) / 30).max(1)).max(4);
        let hashed_ns = cpu_ns_per_call(n, rounds, |i| {
            model
                .predict(
                    black_box(&docs.floats[i]),
                    black_box(&docs.hashes[i]),
                    PredictionType::Raw,
                    &mut out,
                )
                .unwrap();
        });
        let strings_ns = cpu_ns_per_call(n, rounds, |i| {
            model
                .predict_strings(
                    black_box(&docs.floats[i]),
                    black_box(&strings[i]),
                    PredictionType::Raw,
                    &mut out,
                )
                .unwrap();
        });
        let scalar_ns = cpu_ns_per_call(n, rounds, |i| {
            model
                .predict_raw_with(
                    Kernel::Scalar,
                    black_box(&docs.floats[i]),
                    black_box(&docs.hashes[i]),
                    &mut out,
                )
                .unwrap();
        });
        eprintln!(
            "{}: {} trees, loaded in {load_ms:.0} ms; native: {native_allocs} allocations per \
             prediction, thread CPU time per prediction {hashed_ns:.0} ns (hashed, {} kernel), \
             {strings_ns:.0} ns (strings), {scalar_ns:.0} ns (hashed, scalar kernel)",
            case.name,
            model.tree_count(),
            model.kernel(),
        );
        #[cfg(feature = "official")]
        {
            let official =
                edgeguard::model::official::OfficialModel::load(&case.json.with_extension("cbm"))
                    .unwrap_or_else(|e| panic!("{e}"));
            // Interleaved with native's, so both see the same machine.
            let (mut native, mut official_ns) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..5 {
                native = native.min(cpu_ns_per_call(n, rounds, |i| {
                    model
                        .predict_raw(
                            black_box(&docs.floats[i]),
                            black_box(&docs.hashes[i]),
                            &mut out,
                        )
                        .unwrap();
                }));
                official_ns = official_ns.min(cpu_ns_per_call(n, rounds, |i| {
                    official
                        .predict_raw(
                            black_box(&docs.floats[i]),
                            black_box(&docs.hashes[i]),
                            &mut out,
                        )
                        .unwrap();
                }));
            }
            eprintln!(
                "{}: best of 5 interleaved runs, thread CPU time per prediction: native \
                 {native:.0} ns, official {official_ns:.0} ns, ratio {:.1}x",
                case.name,
                official_ns / native
            );
        }

        let mut group = c.benchmark_group(format!("model/{}", case.name));
        group.throughput(Throughput::Elements(1));
        let mut i = 0;
        group.bench_function(BenchmarkId::new("native", "hashed"), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                model
                    .predict(
                        black_box(&docs.floats[i]),
                        black_box(&docs.hashes[i]),
                        PredictionType::Raw,
                        &mut out,
                    )
                    .unwrap();
                black_box(out[0])
            })
        });
        group.bench_function(BenchmarkId::new("native", "scalar-kernel"), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                model
                    .predict_raw_with(
                        Kernel::Scalar,
                        black_box(&docs.floats[i]),
                        black_box(&docs.hashes[i]),
                        &mut out,
                    )
                    .unwrap();
                black_box(out[0])
            })
        });
        group.bench_function(BenchmarkId::new("native", "strings"), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                model
                    .predict_strings(
                        black_box(&docs.floats[i]),
                        black_box(&strings[i]),
                        PredictionType::Raw,
                        &mut out,
                    )
                    .unwrap();
                black_box(out[0])
            })
        });
        #[cfg(feature = "official")]
        {
            let official =
                edgeguard::model::official::OfficialModel::load(&case.json.with_extension("cbm"))
                    .unwrap_or_else(|e| panic!("{e}"));
            // dhat-rs cannot see the C++ library's allocations (it links its
            // own allocator): scripts/official-allocs.sh counts them with
            // valgrind's DHAT instead.
            group.bench_function(BenchmarkId::new("official", "hashed"), |b| {
                b.iter(|| {
                    i = (i + 1) % n;
                    official
                        .predict_raw(
                            black_box(&docs.floats[i]),
                            black_box(&docs.hashes[i]),
                            &mut out,
                        )
                        .unwrap();
                    black_box(out[0])
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
