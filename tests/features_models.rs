//! The shipped models (`models/bot.json`, `models/spoof.json`) scored by this
//! crate on this extractor's vectors equal official CatBoost's predictions
//! recorded in `tests/fixtures/traffic/sample.jsonl`, their inputs are the
//! schema's features by name, and each carries its default threshold.

use std::path::Path;

use edgeguard::features::{extract, FeatureVector, Request, CAT_FEATURES, FLOAT_FEATURES};
use edgeguard::model::{Model, PredictionType};
use edgeguard::request::edgeguard_header;
use serde_json::Value;

const MODELS: [&str; 2] = ["bot", "spoof"];

fn load(name: &str) -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(format!("{name}.json"));
    Model::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn models_use_the_schema_names_and_carry_a_threshold() {
    for name in MODELS {
        let m = load(name);
        let floats: Vec<&str> = FLOAT_FEATURES.iter().map(|f| f.name).collect();
        let cats: Vec<&str> = CAT_FEATURES.iter().map(|f| f.name).collect();
        assert_eq!(m.float_feature_names(), floats, "{name}");
        assert_eq!(m.cat_feature_names(), cats, "{name}");
        let t: f64 = m
            .metadata("edgeguard.threshold")
            .expect("threshold")
            .parse()
            .expect("number");
        let raw: f64 = m
            .metadata("edgeguard.threshold_raw")
            .expect("raw threshold")
            .parse()
            .expect("number");
        assert!(t > 0.0 && t < 1.0, "{name}: {t}");
        assert!(
            (raw - (t / (1.0 - t)).ln()).abs() < 1e-9,
            "{name}: {raw} is not logit({t})"
        );
        assert_eq!(m.metadata("edgeguard.label"), Some(name));
        assert!(m.tree_count() <= 300, "{name}: {} trees", m.tree_count());
    }
}

fn version(v: &Value) -> u16 {
    let s = match v {
        Value::String(s) => s.trim_start_matches("HTTP/").to_string(),
        other => other.to_string(),
    };
    (s.parse::<f64>().expect("version") * 10.0).round() as u16
}

#[test]
fn native_scores_equal_catboost_on_the_fixture() {
    let models: Vec<Model> = MODELS.iter().map(|n| load(n)).collect();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/traffic/sample.jsonl"
    ))
    .expect("fixture");
    let mut checked = 0;
    for (n, line) in text.lines().enumerate() {
        let row: Value = serde_json::from_str(line).expect("fixture line");
        let pairs: Vec<(String, String)> = row["headers"]
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
        let headers: Vec<edgeguard_header> = pairs
            .iter()
            .map(|(k, v)| edgeguard_header::new(k.as_bytes(), v.as_bytes()))
            .collect();
        let s = |k: &str| row[k].as_str().unwrap().as_bytes();
        // SAFETY: the headers view `pairs`, alive for this iteration.
        let req = unsafe {
            Request::new(
                s("method"),
                s("uri"),
                version(&row["version"]),
                s("client"),
                &headers,
            )
        };
        let mut v = FeatureVector::new();
        extract(&req, &mut v);
        let cats: Vec<&[u8]> = v.cats().collect();
        for (name, model) in MODELS.iter().zip(&models) {
            let mut out = [0.0f64; 1];
            model
                .predict_strings(v.floats(), &cats, PredictionType::Raw, &mut out)
                .expect("predict");
            let want = row["expected_raw"][name].as_f64().expect("expected raw");
            let tol = 1e-9 * want.abs().max(1.0);
            assert!(
                (out[0] - want).abs() <= tol,
                "line {}: {name} raw {} != catboost {want}",
                n + 1,
                out[0]
            );
            checked += 1;
        }
    }
    assert!(checked >= 200, "only {checked} predictions checked");
}
