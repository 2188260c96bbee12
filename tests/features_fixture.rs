//! The shipped models were trained on, and their expected predictions in
//! `tests/fixtures/traffic/sample.jsonl` computed from, the vectors this
//! extractor gave when they were made. If the extractor changes what it
//! computes, this fails: retrain with `models/train.py` (which rewrites the
//! fixture) instead of shipping models that see other inputs than in training.

mod scorer_support;

use edgeguard::features::{FeatureVector, CAT_FEATURES, FLOAT_FEATURES, SCHEMA_VERSION};
use edgeguard::scorer::Scorer;
use serde_json::Value;

#[test]
fn extractor_reproduces_the_training_vectors() {
    let requests = scorer_support::fixture_requests();
    // The vectors `edgeguard features --schema 3 --orders models/bot.json`
    // printed: the schema's features, with the models' learnt order table.
    let shipped = scorer_support::shipped();
    let models: Vec<(&str, &std::path::Path)> =
        shipped.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let scorer = Scorer::load(&models).unwrap();
    let in_schema: Vec<usize> = (0..FLOAT_FEATURES.len())
        .filter(|&i| FLOAT_FEATURES[i].in_schema(SCHEMA_VERSION))
        .collect();
    let cats_in_schema: Vec<usize> = (0..CAT_FEATURES.len())
        .filter(|&i| CAT_FEATURES[i].in_schema(SCHEMA_VERSION))
        .collect();
    for r in &requests {
        let headers = r.ffi_headers();
        let mut v = FeatureVector::new();
        scorer.extract(&r.view(&headers), &mut v);

        let row: Value = serde_json::from_str(&r.json).expect("fixture line");
        let want_f = row["features"]["float"].as_array().unwrap();
        let want_c = row["features"]["cat"].as_array().unwrap();
        assert_eq!(
            (want_f.len(), want_c.len()),
            (in_schema.len(), cats_in_schema.len()),
            "line {}: schema changed",
            r.line
        );
        for (&i, want) in in_schema.iter().zip(want_f) {
            let got = &v.floats()[i];
            match want.as_f64() {
                // The fixture holds the f32 printed shortest, so it parses back exactly.
                Some(w) => assert_eq!(*got, w as f32, "line {}: float {i}", r.line),
                None => assert!(got.is_nan(), "line {}: float {i} = {got}, want NaN", r.line),
            }
        }
        for (&i, want) in cats_in_schema.iter().zip(want_c) {
            assert_eq!(
                v.cat_at(i).unwrap(),
                want.as_str().unwrap().as_bytes(),
                "line {}: cat {i}",
                r.line
            );
        }
    }
    assert!(
        requests.len() >= 100,
        "fixture has only {} rows",
        requests.len()
    );
}
