//! Bad models are rejected with an error naming the field, never a panic.

use std::path::Path;

use edgeguard::model::{Evaluator, Model, PredictionType};
use serde_json::{json, Value};

fn fixture_text(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catboost")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The regression fixture with CTRs: small, and has every section.
fn base() -> Value {
    serde_json::from_str(&fixture_text("regression_cat.json")).unwrap()
}

fn rejected(bytes: &[u8]) -> String {
    match Model::from_json("bot.json", bytes) {
        Ok(_) => panic!(
            "accepted: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ),
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.starts_with("bot.json: "),
                "the source is named: {text}"
            );
            text
        }
    }
}

fn rejected_value(v: &Value) -> String {
    rejected(&serde_json::to_vec(v).unwrap())
}

fn mutated(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = base();
    edit(&mut v);
    rejected_value(&v)
}

fn assert_mentions(error: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            error.contains(part),
            "error {error:?} does not mention {part:?}"
        );
    }
}

#[test]
fn the_base_model_is_valid() {
    let v = base();
    Model::from_json("bot.json", &serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn not_json_truncated_and_empty() {
    let full = fixture_text("binary_ctr.json");
    assert_mentions(&rejected(&full.as_bytes()[..full.len() / 2]), &["EOF"]);
    assert_mentions(&rejected(b"hello"), &["expected value at line 1 column 1"]);
    assert_mentions(&rejected(b""), &["EOF"]);
    assert_mentions(&rejected(b"[1, 2]"), &["expected an object"]);
    assert_mentions(
        &rejected(format!("{full} trailing").as_bytes()),
        &["trailing characters"],
    );
    assert_mentions(&rejected(&[0xff, 0xfe, 0x00]), &["line 1"]);
}

#[test]
fn wrong_types_name_the_field() {
    let e = mutated(|v| v["oblivious_trees"][3]["splits"][1]["border"] = json!("x"));
    assert_mentions(
        &e,
        &["oblivious_trees[3].splits[1].border", "expected a number"],
    );
    let e = mutated(|v| v["oblivious_trees"][0]["leaf_values"] = json!({"a": 1}));
    assert_mentions(&e, &["oblivious_trees[0].leaf_values", "expected an array"]);
    let e = mutated(|v| v["features_info"]["float_features"][1]["borders"][0] = json!(null));
    assert_mentions(
        &e,
        &[
            "features_info.float_features[1].borders[0]",
            "expected a number",
        ],
    );
    let e = mutated(|v| v["oblivious_trees"][0]["splits"][0]["split_index"] = json!(-1));
    assert_mentions(
        &e,
        &[
            "oblivious_trees[0].splits[0].split_index",
            "non-negative integer",
        ],
    );
    let e = mutated(|v| v["scale_and_bias"] = json!([1.0]));
    assert_mentions(&e, &["scale_and_bias"]);
    let e = mutated(|v| {
        let table = v["ctr_data"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        table["hash_map"][1] = json!([1]);
    });
    assert_mentions(
        &e,
        &["ctr_data", "hash_map[1]", "expected a string or a number"],
    );
    let e = mutated(|v| {
        v.as_object_mut()
            .unwrap()
            .remove("features_info")
            .map(|_| ())
            .unwrap()
    });
    assert_mentions(&e, &["missing field `features_info`"]);
}

#[test]
fn unknown_types_are_refused() {
    let e = mutated(|v| v["features_info"]["ctrs"][0]["ctr_type"] = json!("Magic"));
    assert_mentions(
        &e,
        &[
            "features_info.ctrs[0].ctr_type",
            "unknown CTR type \"Magic\"",
        ],
    );
    let e =
        mutated(|v| v["oblivious_trees"][2]["splits"][0]["split_type"] = json!("EstimatedFeature"));
    assert_mentions(
        &e,
        &[
            "oblivious_trees[2].splits[0].split_type",
            "unknown split type",
        ],
    );
    let e = mutated(|v| {
        v["features_info"]["float_features"][0]["nan_value_treatment"] = json!("AsMaybe")
    });
    assert_mentions(
        &e,
        &[
            "features_info.float_features[0].nan_value_treatment",
            "AsMaybe",
        ],
    );
    let e = mutated(|v| {
        v["features_info"]["ctrs"][0]["elements"][0]["combination_element"] = json!("text")
    });
    assert_mentions(
        &e,
        &[
            "features_info.ctrs[0].elements[0].combination_element",
            "unknown element",
        ],
    );
    let e = mutated(|v| {
        let map = v["ctr_data"].as_object_mut().unwrap();
        let (k, t) = map
            .iter()
            .next()
            .map(|(k, t)| (k.clone(), t.clone()))
            .unwrap();
        map.remove(&k);
        map.insert(
            k.replace("Borders", "Magic")
                .replace("Counter", "Magic")
                .replace("BinarizedTargetMeanValue", "Magic"),
            t,
        );
    });
    assert_mentions(&e, &["ctr_data[", "unknown CTR type"]);
    let e = mutated(|v| {
        v.as_object_mut().unwrap().insert("trees".into(), json!([]));
    });
    assert_mentions(&e, &["trees: non-symmetric trees"]);
}

#[test]
fn inconsistent_sizes_are_refused() {
    let e = mutated(|v| {
        v["oblivious_trees"][4]["leaf_values"]
            .as_array_mut()
            .unwrap()
            .pop()
            .map(|_| ())
            .unwrap()
    });
    assert_mentions(&e, &["oblivious_trees[4].leaf_values", "expected 2^depth"]);
    let e = mutated(|v| v["oblivious_trees"][1]["splits"][0]["split_index"] = json!(100_000));
    assert_mentions(
        &e,
        &[
            "oblivious_trees[1].splits[0].split_index",
            "100000 is out of range",
        ],
    );
    let e = mutated(|v| v["oblivious_trees"][0]["splits"][0]["border"] = json!(123.25));
    assert_mentions(
        &e,
        &[
            "oblivious_trees[0].splits[0]",
            "does not match binary feature",
        ],
    );
    let e = mutated(|v| {
        let table = v["ctr_data"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        table["hash_map"].as_array_mut().unwrap().pop();
    });
    assert_mentions(&e, &["hash_map", "not a whole number of"]);
    let e = mutated(|v| {
        let table = v["ctr_data"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        table["hash_stride"] = json!(1u64 << 60);
    });
    assert_mentions(&e, &["hash_stride", "does not fit"]);
    let e = mutated(|v| {
        let table = v["ctr_data"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        let first = table["hash_map"][0].clone();
        let stride = table["hash_stride"].as_u64().unwrap() as usize;
        table["hash_map"][stride] = first;
    });
    assert_mentions(&e, &["hash_map[", "duplicate bucket hash"]);
    let e = mutated(|v| {
        let table = v["ctr_data"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        table["hash_map"][0] = json!("not-a-hash");
    });
    assert_mentions(&e, &["hash_map[0]", "not a decimal bucket hash"]);
    let e = mutated(|v| {
        let map = v["ctr_data"].as_object_mut().unwrap();
        let counter = map
            .iter_mut()
            .find(|(k, _)| k.contains("Counter"))
            .unwrap()
            .1;
        counter["hash_map"][1] = json!(1e12);
    });
    assert_mentions(&e, &["hash_map[1]", "not a 32-bit counter"]);
    let e = mutated(|v| v["ctr_data"] = json!({}));
    assert_mentions(&e, &["features_info.ctrs[0].elements", "no ctr_data table"]);
    let e = mutated(|v| v["features_info"]["ctrs"][0]["target_border_idx"] = json!(9));
    assert_mentions(&e, &["features_info.ctrs[0].target_border_idx"]);
    let e = mutated(|v| v["features_info"]["float_features"][0]["borders"] = json!([3.0, 1.0]));
    assert_mentions(
        &e,
        &["features_info.float_features[0].borders", "ascending"],
    );
    let e = mutated(|v| v["scale_and_bias"] = json!([1.0, [0.0, 1.0]]));
    assert_mentions(&e, &["scale_and_bias", "2 bias values"]);
    let e = mutated(|v| v["features_info"]["float_features"][1]["feature_index"] = json!(0));
    assert_mentions(
        &e,
        &[
            "features_info.float_features[1].feature_index",
            "must increase",
        ],
    );
}

#[test]
fn absurd_counts_are_refused_without_allocating_for_them() {
    let e = mutated(|v| {
        v["features_info"]["float_features"][1]["feature_index"] = json!(1_000_000_000_000u64)
    });
    assert_mentions(
        &e,
        &[
            "features_info.float_features[1].feature_index",
            "above the supported maximum",
        ],
    );
    let e = mutated(|v| {
        v["features_info"]["categorical_features"][0]["feature_index"] = json!(u64::MAX)
    });
    assert_mentions(&e, &["features_info.categorical_features[0].feature_index"]);
    // 2^60 leaves would need depth 60: refused on depth before any leaf check.
    let e = mutated(|v| {
        let split = v["oblivious_trees"][0]["splits"][0].clone();
        v["oblivious_trees"][0]["splits"] = Value::Array(vec![split; 60]);
    });
    assert_mentions(
        &e,
        &[
            "oblivious_trees[0].splits",
            "depth 60 exceeds the supported 16",
        ],
    );
    let e = mutated(|v| {
        let split = v["oblivious_trees"][0]["splits"][0].clone();
        v["oblivious_trees"][0]["splits"] = Value::Array(vec![split; 17]);
    });
    assert_mentions(&e, &["depth 17"]);
    let e =
        mutated(|v| v["features_info"]["categorical_features"][0]["values"] = json!([1u64 << 40]));
    assert_mentions(
        &e,
        &[
            "features_info.categorical_features[0].values[0]",
            "32-bit categorical hash",
        ],
    );
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let depth = 100_000;
    let text = format!(
        r#"{{"model_info": {{"x": {}{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    assert_mentions(&rejected(text.as_bytes()), &["recursion limit exceeded"]);
}

#[test]
fn oversized_files_are_refused_before_reading() {
    let dir = std::env::temp_dir().join(format!("edgeguard-model-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge.json");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len((256 << 20) + 1).unwrap();
    let e = Model::load(&path).unwrap_err();
    assert!(e.is_io());
    assert!(
        e.to_string().contains("larger than the 256 MiB limit"),
        "{e}"
    );
    let e = Model::load(&dir.join("missing.json")).unwrap_err();
    assert!(
        e.is_io() && e.to_string().contains("missing.json: cannot open"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Random edits of a valid model (digits changed, bytes dropped, values
/// swapped): every result is a model or an error, never a panic. A
/// deterministic generator keeps failures reproducible.
#[test]
fn mutated_models_never_panic() {
    let original = fixture_text("binary_ctr.json").into_bytes();
    let mut rng = fastrand::Rng::with_seed(0x2545_f491_4f6c_dd1d);
    let mut next = move |bound: usize| rng.usize(..bound);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..200 {
        let mut bytes = original.clone();
        for _ in 0..1 + next(4) {
            let at = next(bytes.len());
            match next(5) {
                0 => bytes[at] = b"0123456789"[next(10)],
                1 => bytes[at] = b"-.e9[]{}\",:"[next(11)],
                2 => {
                    bytes.remove(at);
                }
                3 => bytes.insert(at, b"0123456789-"[next(11)]),
                _ => {
                    let other = next(bytes.len());
                    bytes.swap(at, other);
                }
            }
        }
        // Whatever is accepted must also score without panicking.
        let result = std::panic::catch_unwind(|| {
            Model::from_json("mutant.json", &bytes).map(|model| {
                let floats = vec![0.5f32; model.float_feature_count()];
                let cats = vec![&b"x"[..]; model.cat_feature_count()];
                let mut out = vec![0.0; model.dimension()];
                model
                    .predict_strings(&floats, &cats, PredictionType::Raw, &mut out)
                    .unwrap();
            })
        });
        match result.expect("loading must not panic") {
            Ok(()) => accepted += 1,
            Err(e) => {
                assert!(e.to_string().starts_with("mutant.json: "));
                rejected += 1;
            }
        }
    }
    assert!(rejected > 0 && accepted > 0 && accepted + rejected == 200);
}
