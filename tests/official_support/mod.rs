//! Reading the CatBoost models, documents and expected predictions that
//! `models/make_fixtures.py` writes (test fixtures and benchmark models),
//! shared by the official-backend tests, the model benches
//! (`benches/model.rs`, `benches/model_official_allocs.rs`) and
//! `examples/predict_loop.rs`.

#![allow(dead_code)] // each user takes a different subset

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fixtures/catboost/` in this checkout.
pub fn fixture_dir() -> PathBuf {
    root().join("tests/fixtures/catboost")
}

/// One model with documents and the `catboost` wheel's predictions for them.
pub struct Case {
    pub name: String,
    /// The binary model, which the official library loads.
    pub cbm: PathBuf,
    /// The same model exported as JSON, which the native evaluator loads.
    pub json: PathBuf,
    pub docs: PathBuf,
    pub expected: PathBuf,
}

fn case(dir: &Path, name: &str, docs_suffix: &str, expected_suffix: &str) -> Case {
    Case {
        name: name.to_owned(),
        cbm: dir.join(format!("{name}.cbm")),
        json: dir.join(format!("{name}.json")),
        docs: dir.join(format!("{name}{docs_suffix}")),
        expected: dir.join(format!("{name}{expected_suffix}")),
    }
}

/// Every fixture model (each `NAME.cbm` in the fixture directory), sorted,
/// then the two benchmark models of `benches/data/`.
pub fn cases() -> Vec<Case> {
    let dir = fixture_dir();
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cbm"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut cases: Vec<Case> = names
        .iter()
        .map(|name| case(&dir, name, ".docs.jsonl", ".expected.jsonl"))
        .collect();
    let bench = root().join("benches/data");
    for name in ["model-baseline", "model-bench"] {
        cases.push(case(&bench, name, "-docs.jsonl", "-expected.jsonl"));
    }
    cases
}

/// One document: float values (NaN and ±inf decoded) and categorical strings.
pub struct Doc {
    pub floats: Vec<f32>,
    pub cats: Vec<String>,
}

fn float_of(value: &Value, at: &str) -> f32 {
    match value {
        Value::Null => f32::NAN,
        Value::String(s) if s == "inf" => f32::INFINITY,
        Value::String(s) if s == "-inf" => f32::NEG_INFINITY,
        // CatBoost reads features as float32, so the nearest f32 is what it sees.
        Value::Number(n) => n.as_f64().unwrap_or_else(|| panic!("{at}: {n}")) as f32,
        other => panic!("{at}: not a float feature: {other}"),
    }
}

fn lines(path: &Path) -> Vec<(String, Value)> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let at = format!("{}:{}", path.display(), i + 1);
            let value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: {e}"));
            (at, value)
        })
        .collect()
}

/// The documents of a `*.docs.jsonl` file.
pub fn read_docs(path: &Path) -> Vec<Doc> {
    lines(path)
        .into_iter()
        .map(|(at, value)| {
            let floats = value["float"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: no float array"))
                .iter()
                .map(|v| float_of(v, &at))
                .collect();
            let cats = value["cat"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: no cat array"))
                .iter()
                .map(|v| {
                    v.as_str()
                        .unwrap_or_else(|| panic!("{at}: cat value {v}"))
                        .to_owned()
                })
                .collect();
            Doc { floats, cats }
        })
        .collect()
}

/// The `raw` predictions of a `*.expected.jsonl` file, one vector per document.
pub fn read_expected_raw(path: &Path) -> Vec<Vec<f64>> {
    lines(path)
        .into_iter()
        .map(|(at, value)| {
            value["raw"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: no raw array"))
                .iter()
                .map(|v| v.as_f64().unwrap_or_else(|| panic!("{at}: raw value {v}")))
                .collect()
        })
        .collect()
}

/// Equal to 1e-9 relative, or 1e-9 absolute for values below 1 in magnitude.
pub fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}
