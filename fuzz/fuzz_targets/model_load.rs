//! The model loader over arbitrary bytes (seeded with the real models in
//! tests/fixtures/catboost, so mutations explore near-valid JSON): never
//! panics, and a model it accepts can score a document of its own shape.
#![no_main]

use edgeguard::model::{Evaluator, Model, PredictionType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(model) = Model::from_json("<fuzz>", data) else {
        return;
    };
    let floats = vec![0.5f32; model.float_feature_count()];
    let cats = vec![0i32; model.cat_feature_count()];
    let mut out = vec![0.0; model.dimension()];
    for ty in [
        PredictionType::Raw,
        PredictionType::Probability,
        PredictionType::Class,
    ] {
        let supported = model.supports(ty);
        let result = model.predict(&floats, &cats, ty, &mut out);
        assert_eq!(result.is_ok(), supported, "{ty:?}: {result:?}");
    }
});
