//! `edgeguard predict` end to end: the binary on fixture documents against
//! CatBoost's own predictions.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catboost")
        .join(name)
}

fn predict(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .arg("predict")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn close(got: f64, want: f64) -> bool {
    let diff = (got - want).abs();
    diff <= 1e-9 * want.abs().max(got.abs()) || diff <= 1e-12
}

fn check(model: &str, ty: &str) {
    let docs = std::fs::read_to_string(fixture(&format!("{model}.docs.jsonl"))).unwrap();
    let expected = std::fs::read_to_string(fixture(&format!("{model}.expected.jsonl"))).unwrap();
    let json = fixture(&format!("{model}.json"));
    let out = predict(
        &["--model", json.to_str().unwrap(), "--prediction-type", ty],
        &docs,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let expected: Vec<serde_json::Value> = expected
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), expected.len());
    for (i, (line, want)) in lines.iter().zip(&expected).enumerate() {
        let got: Vec<f64> = line.split(' ').map(|v| v.parse().unwrap()).collect();
        let want: Vec<f64> = want[ty]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(got.len(), want.len(), "{model} line {}", i + 1);
        for (g, w) in got.iter().zip(&want) {
            assert!(close(*g, *w), "{model} {ty} line {}: {g} != {w}", i + 1);
        }
    }
}

#[test]
fn matches_catboost_for_every_prediction_type() {
    check("binary_ctr", "raw");
    check("binary_ctr", "probability");
    check("binary_ctr", "class");
    check("multiclass_cat", "probability");
    check("multiclass_cat", "class");
    check("regression_deep", "raw");
}

#[test]
fn bad_lines_are_reported_by_number_and_the_rest_still_scored() {
    let model = fixture("regression_deep.json");
    let good = r#"{"float": [1, 2, null, "inf", "-inf", 0.5], "cat": []}"#;
    let input = format!("{good}\nnot json\n\n{{\"float\": [1], \"cat\": []}}\n{{\"float\": [1,2,3,4,5,\"x\"], \"cat\": []}}\n{good}\n");
    let out = predict(&["--model", model.to_str().unwrap()], &input);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("line 2: not JSON"), "{stderr}");
    assert!(
        stderr.contains("line 4: model expects 6 float features, got 1"),
        "{stderr}"
    );
    assert!(stderr.contains("line 5: float[5]"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], lines[1]);
    lines[0].parse::<f64>().unwrap();
}

#[test]
fn usage_errors_exit_with_2() {
    let model = fixture("regression_deep.json");
    let model = model.to_str().unwrap();
    for (args, message) in [
        (vec![], "--model is required"),
        (
            vec!["--model", model, "--prediction-type", "odds"],
            "unknown prediction type",
        ),
        (
            vec!["--model", model, "--backend", "gpu"],
            "unknown backend",
        ),
        (
            vec!["--model", model, "--prediction-type", "probability"],
            "not meaningful for a RMSE model",
        ),
        (
            vec!["--model", "/nonexistent.json"],
            "/nonexistent.json: cannot open",
        ),
        (vec!["--model", model, "--frobnicate"], "unknown argument"),
    ] {
        let out = predict(&args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[cfg(not(feature = "official"))]
#[test]
fn official_backend_needs_the_feature() {
    let model = fixture("binary_ctr.json");
    let out = predict(
        &["--model", model.to_str().unwrap(), "--backend", "official"],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("--features official"));
}
