//! The AVX2 and AVX-512 tree kernels against the scalar one: bit-identical raw values
//! (every output dimension, compared as bits) on every fixture model, the
//! shipped models, the scorer fixtures and the bench models, over their
//! documents and over random documents built to reach the models' buckets
//! and borders (values and categorical hashes taken from the fixture
//! documents and mixed across them, NaN, infinities, random bits).
//!
//! On a CPU without AVX2 (or AVX-512) the wider kernel runs a narrower one;
//! the test then says so and still checks that the kernels match
//! `predict_raw`.

#[path = "official_support/mod.rs"]
mod official_support;

use std::path::Path;

use edgeguard::model::{cat_hash, Evaluator, Kernel, Model};

fn root(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// A document as the evaluator takes it: floats and categorical hashes.
type Doc = (Vec<f32>, Vec<i32>);

/// `(name, model, documents)` for every model we ship or test with; models
/// without documents of their own get none (random documents only).
fn models() -> Vec<(String, Model, Vec<Doc>)> {
    let mut all = Vec::new();
    for case in official_support::cases() {
        let model = Model::load(&case.json).unwrap_or_else(|e| panic!("{e}"));
        let docs = official_support::read_docs(&case.docs)
            .into_iter()
            .map(|d| {
                let hashes = d
                    .cats
                    .iter()
                    .map(|s| cat_hash(s.as_bytes()) as i32)
                    .collect();
                (d.floats, hashes)
            })
            .collect();
        all.push((case.name, model, docs));
    }
    for path in [
        "models/bot.json",
        "models/spoof.json",
        "tests/fixtures/scorer/reordered.json",
        "tests/fixtures/scorer/regression.json",
    ] {
        let model = Model::load(&root(path)).unwrap_or_else(|e| panic!("{e}"));
        all.push((path.to_owned(), model, Vec::new()));
    }
    all
}

fn raw(model: &Model, kernel: Kernel, floats: &[f32], cats: &[i32]) -> Vec<u64> {
    let mut out = vec![0.0; model.dimension()];
    model
        .predict_raw_with(kernel, floats, cats, &mut out)
        .expect("shape is right");
    out.iter().map(|v| v.to_bits()).collect()
}

/// A random document: each value from a random fixture document of the same
/// model (so buckets and borders are reached), or a special or random value.
fn random_doc(
    rng: &mut fastrand::Rng,
    model: &Model,
    docs: &[(Vec<f32>, Vec<i32>)],
) -> (Vec<f32>, Vec<i32>) {
    let floats = (0..model.float_feature_count())
        .map(|i| match rng.usize(..8) {
            0 => f32::NAN,
            1 => [f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0][rng.usize(..4)],
            2 => f32::from_bits(rng.u64(..) as u32),
            3 => (rng.u64(..2000)) as f32 / 10.0 - 100.0,
            _ if !docs.is_empty() => docs[rng.usize(..docs.len())].0[i],
            _ => (rng.u64(..64)) as f32,
        })
        .collect();
    let cats = (0..model.cat_feature_count())
        .map(|i| match rng.usize(..4) {
            0 => rng.u64(..) as i32,
            1 => cat_hash(&[b'a' + rng.usize(..4) as u8]) as i32,
            _ if !docs.is_empty() => docs[rng.usize(..docs.len())].1[i],
            _ => cat_hash(b"") as i32,
        })
        .collect();
    (floats, cats)
}

#[test]
fn avx2_and_scalar_kernels_give_the_same_bits() {
    for kernel in [Kernel::Avx2, Kernel::Avx512] {
        if !kernel.is_available() {
            eprintln!("this CPU has no {kernel}: that kernel runs a narrower one here");
        }
    }
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for (name, model, docs) in models() {
        let randoms: Vec<_> = (0..300)
            .map(|_| random_doc(&mut rng, &model, &docs))
            .collect();
        for (i, (floats, cats)) in docs.iter().chain(&randoms).enumerate() {
            let scalar = raw(&model, Kernel::Scalar, floats, cats);
            for kernel in [Kernel::Avx2, Kernel::Avx512] {
                let vector = raw(&model, kernel, floats, cats);
                assert_eq!(
                    scalar, vector,
                    "{name}: {kernel}: document {i}: {floats:?} {cats:?}"
                );
            }
            let mut detected = vec![0.0; model.dimension()];
            model.predict_raw(floats, cats, &mut detected).unwrap();
            let detected: Vec<u64> = detected.iter().map(|v| v.to_bits()).collect();
            assert_eq!(detected, scalar, "{name}: document {i}: predict_raw");
            checked += 1;
        }
    }
    assert!(checked > 3000, "{checked} documents");
}

#[test]
fn kernel_detection_is_consistent() {
    assert!(Kernel::Scalar.is_available());
    let k = Kernel::detect();
    assert!(k.is_available());
    assert_eq!(k == Kernel::Scalar, !Kernel::Avx2.is_available());
    assert_eq!(k == Kernel::Avx512, Kernel::Avx512.is_available());
    assert!(!Kernel::Avx512.is_available() || Kernel::Avx2.is_available());
    // The shipped models and the 1000-tree bench model (about 2 400
    // conditions) fit the AVX-512 kernel; the MultiClass fixture (several
    // dimensions) does not.
    let bot = Model::load(&root("models/bot.json")).unwrap();
    let bench = Model::load(&root("benches/data/model-bench.json")).unwrap();
    let multiclass = Model::load(&root("tests/fixtures/catboost/multiclass_cat.json")).unwrap();
    assert_eq!(bot.kernel(), k);
    assert_eq!(bench.kernel(), k);
    assert_eq!(multiclass.kernel(), k.min(Kernel::Avx2));
    assert_eq!(Kernel::Scalar.to_string(), "scalar");
    assert_eq!(Kernel::Avx2.to_string(), "avx2");
    assert_eq!(Kernel::Avx512.to_string(), "avx512");
}
