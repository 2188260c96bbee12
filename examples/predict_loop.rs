//! A fixed workload for instruction counting: loads a model and its bench
//! documents, then predicts every document `rounds` times. Run it under
//! `valgrind --tool=callgrind` (scripts/callgrind-model.sh) and divide the
//! instructions of the predict calls by the prediction count: unlike time on a
//! shared machine, that number is stable enough to compare two builds.
//!
//! `cargo run --release --example predict_loop -- MODEL.json DOCS.jsonl ROUNDS [native|scalar|strings|official]`

use std::hint::black_box;
use std::path::Path;

use edgeguard::model::{cat_hash, Evaluator, Kernel, Model, PredictionType};

#[path = "../tests/official_support/mod.rs"]
mod official_support;

struct Doc {
    floats: Vec<f32>,
    strings: Vec<String>,
    hashes: Vec<i32>,
}

fn load_docs(path: &Path) -> Vec<Doc> {
    official_support::read_docs(path)
        .into_iter()
        .map(|d| Doc {
            hashes: d
                .cats
                .iter()
                .map(|s| cat_hash(s.as_bytes()) as i32)
                .collect(),
            strings: d.cats,
            floats: d.floats,
        })
        .collect()
}

/// Kept out of line so callgrind reports the predictions under one name.
#[inline(never)]
fn predict_all(docs: &[Doc], rounds: usize, mut predict: impl FnMut(&Doc) -> f64) -> f64 {
    let mut total = 0.0;
    for _ in 0..rounds {
        for d in docs {
            total += predict(black_box(d));
        }
    }
    total
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!(
            "usage: {} MODEL.json DOCS.jsonl ROUNDS [native|scalar|strings|official]",
            args[0]
        );
        std::process::exit(2);
    }
    let model_path = Path::new(&args[1]);
    let docs = load_docs(Path::new(&args[2]));
    let rounds: usize = args[3].parse().expect("ROUNDS is a number");
    let mode = args.get(4).map_or("native", String::as_str);
    let model = Model::load(model_path).unwrap_or_else(|e| panic!("{e}"));
    let mut out = vec![0.0; model.dimension()];
    let started = std::time::Instant::now();
    let total = match mode {
        "native" => predict_all(&docs, rounds, |d| {
            model
                .predict(&d.floats, &d.hashes, PredictionType::Raw, &mut out)
                .expect("predict");
            out[0]
        }),
        // The trees on the scalar kernel, whatever the CPU has.
        "scalar" => predict_all(&docs, rounds, |d| {
            model
                .predict_raw_with(Kernel::Scalar, &d.floats, &d.hashes, &mut out)
                .expect("predict");
            out[0]
        }),
        "strings" => predict_all(&docs, rounds, |d| {
            let strings: [&[u8]; 64] =
                std::array::from_fn(|i| d.strings.get(i).map_or(&b""[..], |s| s.as_bytes()));
            model
                .predict_strings(
                    &d.floats,
                    &strings[..d.strings.len()],
                    PredictionType::Raw,
                    &mut out,
                )
                .expect("predict");
            out[0]
        }),
        #[cfg(feature = "official")]
        "official" => {
            let official =
                edgeguard::model::official::OfficialModel::load(&model_path.with_extension("cbm"))
                    .unwrap_or_else(|e| panic!("{e}"));
            predict_all(&docs, rounds, |d| {
                official
                    .predict_raw(&d.floats, &d.hashes, &mut out)
                    .expect("predict");
                out[0]
            })
        }
        other => panic!("unknown mode {other:?}"),
    };
    let predictions = docs.len() * rounds;
    let ns = started.elapsed().as_nanos() as f64 / predictions as f64;
    println!("{predictions} predictions, checksum {total}");
    eprintln!("{ns:.0} ns per prediction (wall clock)");
}
