//! The AVX2 and AVX-512 tree kernels against the scalar one on arbitrary
//! documents: for
//! every fixture model (CTR combinations, one-hot splits, MultiClass, deep
//! trees, both shipped models), any float bits and any categorical hashes
//! give bit-identical raw values. On a CPU without AVX2 both run the scalar
//! kernel and the target checks only that it does not crash.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use edgeguard::model::{Evaluator, Kernel, Model};
use libfuzzer_sys::{arbitrary, fuzz_target};

const FIXTURES: [(&str, &[u8]); 6] = [
    (
        "binary_ctr",
        include_bytes!("../../tests/fixtures/catboost/binary_ctr.json"),
    ),
    (
        "multiclass_cat",
        include_bytes!("../../tests/fixtures/catboost/multiclass_cat.json"),
    ),
    (
        "regression_deep",
        include_bytes!("../../tests/fixtures/catboost/regression_deep.json"),
    ),
    (
        "regression_floatmean",
        include_bytes!("../../tests/fixtures/catboost/regression_floatmean.json"),
    ),
    ("bot", include_bytes!("../../models/bot.json")),
    ("spoof", include_bytes!("../../models/spoof.json")),
];

fn models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        FIXTURES
            .iter()
            .map(|(name, json)| Model::from_json(name, json).expect("fixture loads"))
            .collect()
    })
}

#[derive(Arbitrary, Debug)]
struct Input {
    model: u8,
    float_bits: Vec<u32>,
    hashes: Vec<i32>,
}

fuzz_target!(|input: Input| {
    let models = models();
    let model = &models[usize::from(input.model) % models.len()];
    let floats: Vec<f32> = (0..model.float_feature_count())
        .map(|i| f32::from_bits(input.float_bits.get(i).copied().unwrap_or(0x7fc0_0000)))
        .collect();
    let hashes: Vec<i32> = (0..model.cat_feature_count())
        .map(|i| input.hashes.get(i).copied().unwrap_or(0))
        .collect();
    let mut scalar = vec![0.0; model.dimension()];
    let mut vector = vec![0.0; model.dimension()];
    model
        .predict_raw_with(Kernel::Scalar, &floats, &hashes, &mut scalar)
        .expect("shape is right");
    for kernel in [Kernel::Avx2, Kernel::Avx512] {
        model
            .predict_raw_with(kernel, &floats, &hashes, &mut vector)
            .expect("shape is right");
        assert_eq!(
            scalar.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            vector.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{kernel} and scalar kernels differ"
        );
    }
});
