//! The predictor with arbitrary inputs on fixed real models: any float bits
//! (NaN, infinities, subnormals), any categorical hash, any categorical
//! string. Scores are finite, probabilities lie in [0, 1], classes are class
//! indices, and scoring strings equals scoring their hashes.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use edgeguard::model::{cat_hash, Evaluator, Model, PredictionType};
use libfuzzer_sys::{arbitrary, fuzz_target};

const FIXTURES: [(&str, &[u8]); 3] = [
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
struct Input<'a> {
    model: u8,
    float_bits: Vec<u32>,
    hashes: Vec<i32>,
    strings: Vec<&'a [u8]>,
}

fuzz_target!(|input: Input<'_>| {
    let models = models();
    let model = &models[usize::from(input.model) % models.len()];
    let nf = model.float_feature_count();
    let nc = model.cat_feature_count();
    let floats: Vec<f32> = (0..nf)
        .map(|i| f32::from_bits(input.float_bits.get(i).copied().unwrap_or(0x7fc0_0000)))
        .collect();
    let hashes: Vec<i32> = (0..nc)
        .map(|i| input.hashes.get(i).copied().unwrap_or(0))
        .collect();
    let strings: Vec<&[u8]> = (0..nc)
        .map(|i| input.strings.get(i).copied().unwrap_or(b""))
        .collect();
    let string_hashes: Vec<i32> = strings.iter().map(|s| cat_hash(s) as i32).collect();
    let mut out = vec![f64::NAN; model.dimension()];
    let mut again = vec![f64::NAN; model.dimension()];
    for ty in [
        PredictionType::Raw,
        PredictionType::Probability,
        PredictionType::Class,
    ] {
        if !model.supports(ty) {
            assert!(model.predict(&floats, &hashes, ty, &mut out).is_err());
            continue;
        }
        let n = model.output_len(ty);
        model
            .predict(&floats, &hashes, ty, &mut out)
            .expect("shape is right");
        for v in &out[..n] {
            assert!(v.is_finite(), "{ty:?}: {v}");
            match ty {
                PredictionType::Probability => assert!((0.0..=1.0).contains(v), "probability {v}"),
                PredictionType::Class => assert!(v.fract() == 0.0 && *v >= 0.0, "class {v}"),
                _ => {}
            }
        }
        model
            .predict_strings(&floats, &strings, ty, &mut out)
            .expect("shape is right");
        model
            .predict(&floats, &string_hashes, ty, &mut again)
            .expect("shape is right");
        assert_eq!(
            out[..n].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            again[..n].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{ty:?}: strings and their hashes differ"
        );
    }
});
