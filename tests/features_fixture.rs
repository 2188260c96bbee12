//! The shipped models were trained on, and their expected predictions in
//! `tests/fixtures/traffic/sample.jsonl` computed from, the vectors this
//! extractor gave when they were made. If the extractor changes what it
//! computes, this fails: retrain with `models/train.py` (which rewrites the
//! fixture) instead of shipping models that see other inputs than in training.

use edgeguard::features::{extract, FeatureVector, Request, CAT_COUNT, FLOAT_COUNT};
use edgeguard::request::edgeguard_header;
use serde_json::Value;

fn version(v: &Value) -> u16 {
    let s = match v {
        Value::String(s) => s.trim_start_matches("HTTP/").to_string(),
        other => other.to_string(),
    };
    let x: f64 = s.parse().expect("version");
    (x * 10.0).round() as u16
}

#[test]
fn extractor_reproduces_the_training_vectors() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/traffic/sample.jsonl"
    ))
    .expect("fixture");
    let mut rows = 0;
    for (n, line) in text.lines().enumerate() {
        let row: Value = serde_json::from_str(line).expect("fixture line");
        let header_strings: Vec<(String, String)> = row["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h[0].as_str().unwrap().to_owned(),
                    h[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let headers: Vec<edgeguard_header> = header_strings
            .iter()
            .map(|(k, v)| edgeguard_header::new(k.as_bytes(), v.as_bytes()))
            .collect();
        let (method, uri, client) = (
            row["method"].as_str().unwrap(),
            row["uri"].as_str().unwrap(),
            row["client"].as_str().unwrap(),
        );
        // SAFETY: the headers view `header_strings`, alive for this iteration.
        let req = unsafe {
            Request::new(
                method.as_bytes(),
                uri.as_bytes(),
                version(&row["version"]),
                client.as_bytes(),
                &headers,
            )
        };
        let mut v = FeatureVector::new();
        extract(&req, &mut v);

        let want_f = row["features"]["float"].as_array().unwrap();
        let want_c = row["features"]["cat"].as_array().unwrap();
        assert_eq!(
            (want_f.len(), want_c.len()),
            (FLOAT_COUNT, CAT_COUNT),
            "line {}: schema changed",
            n + 1
        );
        for (i, (got, want)) in v.floats().iter().zip(want_f).enumerate() {
            match want.as_f64() {
                // The fixture holds the f32 printed shortest, so it parses back exactly.
                Some(w) => assert_eq!(*got, w as f32, "line {}: float {i}", n + 1),
                None => assert!(got.is_nan(), "line {}: float {i} = {got}, want NaN", n + 1),
            }
        }
        for (i, (got, want)) in v.cats().zip(want_c).enumerate() {
            assert_eq!(
                got,
                want.as_str().unwrap().as_bytes(),
                "line {}: cat {i}",
                n + 1
            );
        }
        rows += 1;
    }
    assert!(rows >= 100, "fixture has only {rows} rows");
}
