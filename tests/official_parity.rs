//! The official CatBoost library, through `OfficialModel`, reproduces the
//! predictions the `catboost` wheel wrote for the fixture and bench models,
//! and behaves as an `Evaluator` should on bad input; the native evaluator
//! agrees with it on every document.

#![cfg(feature = "official")]

mod official_support;

use std::path::Path;

use edgeguard::model::official::{cat_hash, OfficialError, OfficialModel};
use edgeguard::model::{cat_hash as native_hash, Evaluator, Model, ShapeError};
use official_support::{cases, close, fixture_dir, read_docs, read_expected_raw, Doc};

fn load(name: &str) -> OfficialModel {
    let path = fixture_dir().join(format!("{name}.cbm"));
    OfficialModel::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn hashes(doc: &Doc) -> Vec<i32> {
    doc.cats
        .iter()
        .map(|c| cat_hash(c.as_bytes()) as i32)
        .collect()
}

#[test]
fn reproduces_every_catboost_prediction() {
    let cases = cases();
    assert!(cases.len() >= 7, "expected the fixture and bench models");
    for case in cases {
        let name = &case.name;
        let model = OfficialModel::load(&case.cbm).unwrap_or_else(|e| panic!("{e}"));
        let docs = read_docs(&case.docs);
        let expected = read_expected_raw(&case.expected);
        assert_eq!(
            docs.len(),
            expected.len(),
            "{name}: docs and expected differ in length"
        );
        assert!(!docs.is_empty(), "{name}: no documents");
        assert_eq!(model.dimension(), expected[0].len(), "{name}: dimension");

        let mut out = vec![0.0; model.dimension()];
        for (i, (doc, want)) in docs.iter().zip(&expected).enumerate() {
            // The documents carry one value per feature index the model knows.
            assert_eq!(
                model.float_feature_count(),
                doc.floats.len(),
                "{name}: float count"
            );
            assert_eq!(
                model.cat_feature_count(),
                doc.cats.len(),
                "{name}: cat count"
            );
            model
                .predict_raw(&doc.floats, &hashes(doc), &mut out)
                .unwrap();
            for (got, want) in out.iter().zip(want) {
                assert!(
                    close(*got, *want),
                    "{name} doc {i}: official {got}, catboost wheel {want}"
                );
            }
        }
    }
}

#[test]
fn library_hash_matches_catboost_table() {
    let path = fixture_dir().join("cat_hash.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut checked = 0;
    for line in text.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let value = entry["value"].as_str().unwrap();
        let want = entry["hash"].as_u64().unwrap();
        assert_eq!(
            u64::from(cat_hash(value.as_bytes())),
            want,
            "hash of {value:?}"
        );
        checked += 1;
    }
    assert!(checked > 10, "only {checked} hashes in {}", path.display());
    assert_eq!(cat_hash(b"Moscow"), 605_890_862);
}

#[test]
fn wrong_sizes_are_refused_before_the_library() {
    let model = load("multiclass_cat");
    let floats = vec![0.5_f32; model.float_feature_count()];
    let cats = vec![0_i32; model.cat_feature_count()];
    let dim = model.dimension();
    assert!(dim > 1, "multiclass fixture has one dimension");

    let mut out = vec![7.0; dim];
    let short_floats = &floats[..floats.len() - 1];
    assert_eq!(
        model.predict_raw(short_floats, &cats, &mut out),
        Err(ShapeError::FloatCount {
            expected: floats.len(),
            got: floats.len() - 1
        })
    );
    let mut long_cats = cats.clone();
    long_cats.push(1);
    assert_eq!(
        model.predict_raw(&floats, &long_cats, &mut out),
        Err(ShapeError::CatCount {
            expected: cats.len(),
            got: cats.len() + 1
        })
    );
    let mut short_out = vec![7.0; dim - 1];
    assert_eq!(
        model.predict_raw(&floats, &cats, &mut short_out),
        Err(ShapeError::OutputLen {
            expected: dim,
            got: dim - 1
        })
    );
    assert!(
        out.iter().chain(&short_out).all(|v| *v == 7.0),
        "refused calls wrote output"
    );
    assert_eq!(
        model.try_predict_raw(short_floats, &cats, &mut out),
        Err(OfficialError::Predict(ShapeError::FloatCount {
            expected: floats.len(),
            got: floats.len() - 1
        }))
    );

    // A longer output is fine; only the first `dim` values are written.
    let mut long_out = vec![7.0; dim + 2];
    model.predict_raw(&floats, &cats, &mut long_out).unwrap();
    assert!(long_out[..dim].iter().all(|v| v.is_finite() && *v != 7.0));
    assert_eq!(&long_out[dim..], &[7.0, 7.0]);
}

#[test]
fn json_model_is_named_as_such() {
    let path = fixture_dir().join("binary_ctr.json");
    let error = OfficialModel::load(&path).unwrap_err();
    assert_eq!(error, OfficialError::JsonModel(path.clone()));
    assert!(error.to_string().contains(".cbm"), "{error}");
}

#[test]
fn library_errors_carry_its_message() {
    let dir = std::env::temp_dir().join(format!("edgeguard-official-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.cbm");
    std::fs::write(&garbage, b"CBM1 but not really a model").unwrap();
    let missing = dir.join("missing.cbm");

    for path in [&garbage, &missing] {
        match OfficialModel::load(path) {
            Err(OfficialError::Load { path: p, message }) => {
                assert_eq!(&p, path);
                assert!(
                    !message.trim().is_empty(),
                    "{}: empty library message",
                    path.display()
                );
            }
            Err(other) => panic!("{}: unexpected error {other}", path.display()),
            Ok(_) => panic!("{}: loaded", path.display()),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nul_in_path_is_refused() {
    let path = Path::new("model\0.cbm");
    assert_eq!(
        OfficialModel::load(path).unwrap_err(),
        OfficialError::Path(path.to_path_buf())
    );
}

#[test]
fn shared_between_threads_gives_the_same_answers() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<OfficialModel>();

    let name = "binary_ctr";
    let model = load(name);
    let docs = read_docs(&fixture_dir().join(format!("{name}.docs.jsonl")));
    let expected = read_expected_raw(&fixture_dir().join(format!("{name}.expected.jsonl")));
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mut out = [0.0];
                for _ in 0..5 {
                    for (doc, want) in docs.iter().zip(&expected) {
                        model
                            .predict_raw(&doc.floats, &hashes(doc), &mut out)
                            .unwrap();
                        assert!(close(out[0], want[0]));
                    }
                }
            });
        }
    });
}

#[test]
fn native_and_official_agree_on_every_document() {
    for case in cases() {
        let name = &case.name;
        let official = OfficialModel::load(&case.cbm).unwrap_or_else(|e| panic!("{e}"));
        let native = Model::load(&case.json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            native.float_feature_count(),
            official.float_feature_count(),
            "{name}: floats"
        );
        assert_eq!(
            native.cat_feature_count(),
            official.cat_feature_count(),
            "{name}: cats"
        );
        assert_eq!(
            native.dimension(),
            official.dimension(),
            "{name}: dimension"
        );
        assert_eq!(native.tree_count(), official.tree_count(), "{name}: trees");

        let mut from_native = vec![0.0; native.dimension()];
        let mut from_official = vec![0.0; official.dimension()];
        for (i, doc) in read_docs(&case.docs).iter().enumerate() {
            let cats: Vec<i32> = doc
                .cats
                .iter()
                .map(|c| native_hash(c.as_bytes()) as i32)
                .collect();
            assert_eq!(
                cats,
                hashes(doc),
                "{name} doc {i}: native and library hashes differ"
            );
            native
                .predict_raw(&doc.floats, &cats, &mut from_native)
                .unwrap();
            official
                .predict_raw(&doc.floats, &cats, &mut from_official)
                .unwrap();
            for (n, o) in from_native.iter().zip(&from_official) {
                assert!(close(*n, *o), "{name} doc {i}: native {n}, official {o}");
            }
        }
    }
}
