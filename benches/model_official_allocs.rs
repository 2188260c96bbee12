//! One CatBoost model through the official library: time per single-document
//! prediction, and a fixed workload for counting the library's heap
//! allocations from outside (dhat-rs sees only Rust's allocator, not C++'s).
//!
//! `scripts/official-allocs.sh` runs this under valgrind's DHAT twice, with 0
//! and with N measured predictions, and divides the difference by N. Usage:
//!
//! ```text
//! model_official_allocs MODEL.cbm DOCS.jsonl PREDICTIONS [LOADS]
//! ```
//!
//! Every run loads the model, hashes every document's categorical values and
//! predicts each document once (warm-up: the library's one-off lazy setup),
//! then makes PREDICTIONS predictions cycling through the documents, timed.
//! LOADS (default 1) loads and drops the model that many extra times first, so
//! comparing DHAT's end-of-run heap across LOADS shows whether dropping an
//! `OfficialModel` frees what loading took.
//!
//! Built only with `--features official` (`required-features` in Cargo.toml).

#[path = "../tests/official_support/mod.rs"]
mod official_support;

fn main() {
    use std::hint::black_box;
    use std::path::PathBuf;
    use std::time::Instant;

    use edgeguard::model::official::{cat_hash, OfficialModel};
    use edgeguard::model::Evaluator;

    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; this program takes positional arguments only.
    let args: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [model_path, docs_path, predictions, rest @ ..] = args.as_slice() else {
        eprintln!("usage: model_official_allocs MODEL.cbm DOCS.jsonl PREDICTIONS [LOADS]");
        std::process::exit(2);
    };
    let model_path = PathBuf::from(model_path);
    let predictions: usize = predictions.parse().expect("PREDICTIONS: a number");
    let loads: usize = rest
        .first()
        .map_or(1, |n| n.parse().expect("LOADS: a number"));

    for _ in 1..loads {
        drop(OfficialModel::load(&model_path).unwrap_or_else(|e| panic!("{e}")));
    }
    let model = OfficialModel::load(&model_path).unwrap_or_else(|e| panic!("{e}"));
    let docs = official_support::read_docs(&PathBuf::from(docs_path));
    assert!(!docs.is_empty(), "{docs_path}: no documents");
    let hashed: Vec<Vec<i32>> = docs
        .iter()
        .map(|d| {
            d.cats
                .iter()
                .map(|c| cat_hash(c.as_bytes()) as i32)
                .collect()
        })
        .collect();
    let mut out = vec![0.0; model.dimension()];

    for (doc, cats) in docs.iter().zip(&hashed) {
        model.predict_raw(&doc.floats, cats, &mut out).unwrap();
    }

    let start = Instant::now();
    for i in 0..predictions {
        let at = i % docs.len();
        model
            .predict_raw(
                black_box(&docs[at].floats),
                black_box(&hashed[at]),
                &mut out,
            )
            .unwrap();
        black_box(&out);
    }
    let elapsed = start.elapsed();

    let ns = if predictions == 0 {
        0.0
    } else {
        elapsed.as_nanos() as f64 / predictions as f64
    };
    println!(
        "model={} trees={} floats={} cats={} docs={} predictions={predictions} loads={loads} \
         ns_per_prediction={ns:.0}",
        model_path.display(),
        model.tree_count(),
        model.float_feature_count(),
        model.cat_feature_count(),
        docs.len(),
    );
}
