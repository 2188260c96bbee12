//! The shipped models were trained on, and their expected predictions in
//! `tests/fixtures/traffic/sample.jsonl` computed from, the vectors this
//! extractor gave when they were made. If the extractor changes what it
//! computes, this fails: retrain with `models/train.py` (which rewrites the
//! fixture) instead of shipping models that see other inputs than in training.

mod scorer_support;

use edgeguard::features::{extract, FeatureVector, CAT_COUNT, FLOAT_COUNT};
use serde_json::Value;

#[test]
fn extractor_reproduces_the_training_vectors() {
    let requests = scorer_support::fixture_requests();
    for r in &requests {
        let headers = r.ffi_headers();
        let mut v = FeatureVector::new();
        extract(&r.view(&headers), &mut v);

        let row: Value = serde_json::from_str(&r.json).expect("fixture line");
        let want_f = row["features"]["float"].as_array().unwrap();
        let want_c = row["features"]["cat"].as_array().unwrap();
        assert_eq!(
            (want_f.len(), want_c.len()),
            (FLOAT_COUNT, CAT_COUNT),
            "line {}: schema changed",
            r.line
        );
        for (i, (got, want)) in v.floats().iter().zip(want_f).enumerate() {
            match want.as_f64() {
                // The fixture holds the f32 printed shortest, so it parses back exactly.
                Some(w) => assert_eq!(*got, w as f32, "line {}: float {i}", r.line),
                None => assert!(got.is_nan(), "line {}: float {i} = {got}, want NaN", r.line),
            }
        }
        for (i, (got, want)) in v.cats().zip(want_c).enumerate() {
            assert_eq!(
                got,
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
