//! The native evaluator against CatBoost's own predictions on every fixture
//! document (tests/fixtures/catboost, made by models/make_fixtures.py).

use std::path::{Path, PathBuf};

use edgeguard::model::{cat_hash, Evaluator, Model, PredictionType};
use serde_json::Value;

const MODELS: &[&str] = &[
    "binary_ctr",
    "binary_featurefreq",
    "regression_deep",
    "multiclass_cat",
    "regression_cat",
    "regression_floatmean",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catboost")
        .join(name)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("fixture line is JSON"))
        .collect()
}

/// A document: NaN is `null`, infinities are the strings "inf" / "-inf".
fn document(doc: &Value) -> (Vec<f32>, Vec<String>) {
    let floats = doc["float"]
        .as_array()
        .expect("float array")
        .iter()
        .map(|v| match v {
            Value::Null => f32::NAN,
            Value::String(s) if s == "inf" => f32::INFINITY,
            Value::String(s) if s == "-inf" => f32::NEG_INFINITY,
            v => v.as_f64().expect("number") as f32,
        })
        .collect();
    let cats = doc["cat"]
        .as_array()
        .expect("cat array")
        .iter()
        .map(|v| v.as_str().expect("string").to_owned())
        .collect();
    (floats, cats)
}

fn close(got: f64, want: f64) -> bool {
    let diff = (got - want).abs();
    diff <= 1e-9 * want.abs().max(got.abs()) || diff <= 1e-12
}

fn check_model(name: &str) -> usize {
    check_files(
        name,
        &fixture(&format!("{name}.json")),
        &fixture(&format!("{name}.docs.jsonl")),
        &fixture(&format!("{name}.expected.jsonl")),
    )
}

fn check_files(name: &str, json: &Path, docs: &Path, expected: &Path) -> usize {
    let model = Model::load(json).unwrap_or_else(|e| panic!("{e}"));
    let docs = lines(docs);
    let expected = lines(expected);
    assert_eq!(
        docs.len(),
        expected.len(),
        "{name}: one expectation per document"
    );
    assert!(docs.len() >= 190, "{name}: fixture has its documents");
    let mut checked = 0;
    for (i, (doc, want)) in docs.iter().zip(&expected).enumerate() {
        let (floats, cats) = document(doc);
        let hashed: Vec<i32> = cats.iter().map(|c| cat_hash(c.as_bytes()) as i32).collect();
        let strings: Vec<&[u8]> = cats.iter().map(|c| c.as_bytes()).collect();
        for (key, ty) in [
            ("raw", PredictionType::Raw),
            ("probability", PredictionType::Probability),
            ("class", PredictionType::Class),
        ] {
            let Some(want) = want.get(key) else {
                assert!(
                    !model.supports(ty) || ty == PredictionType::Raw,
                    "{name}: {key} expected for a classifier"
                );
                continue;
            };
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            let mut out = vec![f64::NAN; model.output_len(ty)];
            model
                .predict(&floats, &hashed, ty, &mut out)
                .unwrap_or_else(|e| panic!("{name} doc {i}: {e}"));
            assert_eq!(out.len(), want.len(), "{name} doc {i} {key}: dimension");
            for (k, (&g, &w)) in out.iter().zip(&want).enumerate() {
                assert!(
                    close(g, w),
                    "{name} doc {i} {key}[{k}]: native {g:?} != CatBoost {w:?} (doc {doc})"
                );
            }
            let mut from_strings = vec![f64::NAN; out.len()];
            model
                .predict_strings(&floats, &strings, ty, &mut from_strings)
                .unwrap();
            assert_eq!(
                from_strings, out,
                "{name} doc {i} {key}: strings and hashes agree"
            );
            checked += 1;
        }
        let mut raw = vec![0.0; model.dimension()];
        model.predict_raw(&floats, &hashed, &mut raw).unwrap();
        let mut via_predict = vec![0.0; model.dimension()];
        model
            .predict(&floats, &hashed, PredictionType::Raw, &mut via_predict)
            .unwrap();
        assert_eq!(
            raw, via_predict,
            "{name}: the Evaluator trait is the raw prediction"
        );
    }
    checked
}

#[test]
fn binary_with_ctr_combinations_and_one_hot() {
    assert!(check_model("binary_ctr") > 190 * 3 - 1);
}

/// The benchmark models (300 and 1000 trees, hundreds of CTR features).
#[test]
fn bench_models() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data");
    for name in ["model-baseline", "model-bench"] {
        let checked = check_files(
            name,
            &data.join(format!("{name}.json")),
            &data.join(format!("{name}-docs.jsonl")),
            &data.join(format!("{name}-expected.jsonl")),
        );
        assert!(checked >= 256 * 3);
    }
}

#[test]
fn feature_freq_ctrs() {
    check_model("binary_featurefreq");
}

#[test]
fn deep_float_only_regression_with_nan_as_max() {
    check_model("regression_deep");
}

#[test]
fn multiclass_with_binarized_target_mean() {
    check_model("multiclass_cat");
}

#[test]
fn regression_with_ctrs_and_scale_and_bias() {
    check_model("regression_cat");
}

#[test]
fn float_target_mean_value_ctrs() {
    check_model("regression_floatmean");
}

/// Each fixture exercises what it is named after, so a regenerated fixture
/// cannot silently stop covering a CTR type.
#[test]
fn fixtures_cover_every_ctr_type_and_nan_treatment() {
    let mut ctr_types = std::collections::BTreeSet::new();
    let mut nan_treatments = std::collections::BTreeSet::new();
    for name in MODELS {
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        for ctr in json["features_info"]["ctrs"]
            .as_array()
            .into_iter()
            .flatten()
        {
            ctr_types.insert(ctr["ctr_type"].as_str().unwrap().to_owned());
            for e in ctr["elements"].as_array().unwrap() {
                ctr_types.insert(format!(
                    "element:{}",
                    e["combination_element"].as_str().unwrap()
                ));
            }
        }
        for tree in json["oblivious_trees"].as_array().unwrap() {
            for split in tree["splits"].as_array().unwrap() {
                ctr_types.insert(format!("split:{}", split["split_type"].as_str().unwrap()));
            }
        }
        for f in json["features_info"]["float_features"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if f["has_nans"].as_bool().unwrap() {
                nan_treatments.insert(f["nan_value_treatment"].as_str().unwrap().to_owned());
            }
        }
    }
    for t in [
        "Borders",
        "Buckets",
        "Counter",
        "FeatureFreq",
        "BinarizedTargetMeanValue",
        "FloatTargetMeanValue",
        "element:cat_feature_value",
        "element:float_feature",
        "element:cat_feature_exact_value",
        "split:FloatFeature",
        "split:OneHotFeature",
        "split:OnlineCtr",
    ] {
        assert!(ctr_types.contains(t), "no fixture has {t}: {ctr_types:?}");
    }
    assert!(
        nan_treatments.contains("AsFalse") && nan_treatments.contains("AsTrue"),
        "{nan_treatments:?}"
    );
}

#[test]
fn cat_hash_matches_catboost_on_its_own_table() {
    let table = lines(&fixture("cat_hash.jsonl"));
    assert!(table.len() > 80);
    let mut lengths = std::collections::BTreeSet::new();
    for entry in &table {
        let value = entry["value"].as_str().unwrap();
        let want = entry["hash"].as_u64().unwrap();
        assert_eq!(
            u64::from(cat_hash(value.as_bytes())),
            want,
            "hash of {value:?}"
        );
        lengths.insert(value.len());
    }
    for len in [0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 1000] {
        assert!(
            lengths.contains(&len),
            "hash table has no {len}-byte string"
        );
    }
    assert!(table
        .iter()
        .any(|e| e["value"].as_str().unwrap().bytes().any(|b| b >= 0x80)));
}

#[test]
fn metadata_and_names_come_from_the_export() {
    let model = Model::load(&fixture("binary_ctr.json")).unwrap();
    assert_eq!(model.metadata("edgeguard.threshold"), Some("0.83"));
    assert_eq!(
        model.metadata("params"),
        None,
        "structured entries are not strings"
    );
    assert_eq!(model.metadata("no.such.key"), None);
    assert_eq!(
        model.float_feature_names(),
        ["rtt_ms", "header_count", "body_kb"]
    );
    assert_eq!(
        model.cat_feature_names(),
        ["user_agent", "asn", "path", "method"]
    );
    assert_eq!(
        model.float_feature_names().len(),
        model.float_feature_count()
    );
    assert_eq!(model.cat_feature_names().len(), model.cat_feature_count());
    assert_eq!(model.objective(), "binary classification");
    let regression = Model::load(&fixture("regression_deep.json")).unwrap();
    assert!(!regression.supports(PredictionType::Probability));
    assert_eq!(regression.objective(), "RMSE");
}

/// One loaded model serves several threads at once (nginx may use thread
/// pools; the CLI could too): same answers as one thread.
#[test]
fn one_model_scores_from_several_threads() {
    let model = Model::load(&fixture("binary_ctr.json")).unwrap();
    let docs: Vec<(Vec<f32>, Vec<String>)> = lines(&fixture("binary_ctr.docs.jsonl"))
        .iter()
        .map(document)
        .collect();
    let score = |(floats, cats): &(Vec<f32>, Vec<String>)| {
        let cats: Vec<&[u8]> = cats.iter().map(|c| c.as_bytes()).collect();
        let mut out = [0.0];
        model
            .predict_strings(floats, &cats, PredictionType::Probability, &mut out)
            .unwrap();
        out[0]
    };
    let sequential: Vec<f64> = docs.iter().map(score).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| s.spawn(|| docs.iter().map(score).collect::<Vec<f64>>()))
            .collect();
        for w in workers {
            assert_eq!(w.join().unwrap(), sequential);
        }
    });
}
