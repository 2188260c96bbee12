//! The scorer's scores against official CatBoost and against the model
//! evaluated by hand on what `edgeguard features` prints: the whole pipeline
//! (request -> features -> hashes -> name binding -> models) is checked, not
//! the parts.

mod scorer_support;

use std::io::Write;
use std::process::{Command, Stdio};

use edgeguard::model::{Model, PredictionType};
use edgeguard::scorer::{ScoreKind, Scorer};
use scorer_support::{fixture_requests, root, shipped, OwnedRequest};
use serde_json::Value;

fn sigmoid(raw: f64) -> f64 {
    1.0 / (1.0 + (-raw).exp())
}

fn assert_close(got: f64, want: f64, what: &str) {
    let tolerance = 1e-9 * want.abs().max(1e-300);
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: got {got:e}, official {want:e}"
    );
}

fn load(models: &[(&str, std::path::PathBuf)]) -> Scorer {
    let models: Vec<(&str, &std::path::Path)> =
        models.iter().map(|(n, p)| (*n, p.as_path())).collect();
    Scorer::load(&models).expect("scorer loads")
}

/// Every fixture request through the scorer, one row of scores each.
fn score_all(scorer: &Scorer, requests: &[OwnedRequest]) -> Vec<Vec<f64>> {
    requests
        .iter()
        .map(|r| {
            let headers = r.ffi_headers();
            let mut out = vec![f64::NAN; scorer.model_count()];
            scorer.score(&r.view(&headers), &mut out).expect("scored");
            out
        })
        .collect()
}

#[test]
fn shipped_models_equal_official_catboost() {
    let scorer = load(&shipped());
    let requests = fixture_requests();
    assert!(requests.len() >= 100);
    for (m, name) in scorer.models().iter().zip(["bot", "spoof"]) {
        assert_eq!(m.name(), name);
        assert_eq!(m.kind(), ScoreKind::Probability);
        let stored: f64 = m
            .model()
            .metadata("edgeguard.threshold")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(m.threshold(), Some(stored));
    }
    let mut flagged = [0usize; 2];
    for (r, scores) in requests.iter().zip(score_all(&scorer, &requests)) {
        for (i, name) in ["bot", "spoof"].into_iter().enumerate() {
            let official = sigmoid(r.expected_raw[name]);
            assert_close(
                scores[i],
                official,
                &format!("line {} model {name}", r.line),
            );
            flagged[i] += usize::from(scores[i] >= scorer.threshold(i).unwrap());
        }
    }
    // Both models flag some of the fixture and pass some: scores vary.
    for (i, n) in flagged.into_iter().enumerate() {
        assert!(n > 0 && n < requests.len(), "model {i} flags {n} requests");
    }
}

/// The small models under tests/fixtures/scorer/ use a subset of the schema
/// in another order (and interleave categorical columns): wrong binding by
/// position could not reproduce CatBoost's own predictions.
#[test]
fn models_on_reordered_subsets_equal_official_catboost() {
    let scorer = load(&[
        ("reordered", root("tests/fixtures/scorer/reordered.json")),
        ("regression", root("tests/fixtures/scorer/regression.json")),
    ]);
    let m = scorer.models();
    assert_eq!(
        (m[0].kind(), m[1].kind()),
        (ScoreKind::Probability, ScoreKind::Raw)
    );
    assert_eq!(
        (scorer.threshold(0), scorer.threshold(1)),
        (Some(0.625), None)
    );
    assert_eq!(m[0].float_inputs().len(), 8);
    assert_eq!(m[1].cat_inputs().len(), 2);

    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(root("tests/fixtures/scorer/expected.json")).unwrap(),
    )
    .unwrap();
    let requests = fixture_requests();
    let scores = score_all(&scorer, &requests);
    for (name, i, link) in [
        ("reordered", 0, sigmoid as fn(f64) -> f64),
        ("regression", 1, |x| x),
    ] {
        let raw = expected[name].as_array().unwrap();
        assert_eq!(raw.len(), requests.len());
        for ((r, row), want) in requests.iter().zip(&scores).zip(raw) {
            let want = link(want.as_f64().unwrap());
            assert_close(row[i], want, &format!("line {} model {name}", r.line));
        }
    }
}

/// Runs `edgeguard features` (the CLI that made the training data) on the
/// fixture's requests, with the shipped models' learnt order table: its
/// vectors (every feature) and its schema names.
fn cli_vectors(requests: &[OwnedRequest]) -> (Value, Vec<Value>) {
    let bin = env!("CARGO_BIN_EXE_edgeguard");
    let names = Command::new(bin)
        .args(["features", "--names"])
        .output()
        .unwrap();
    assert!(names.status.success());
    let names: Value = serde_json::from_slice(&names.stdout).unwrap();
    let orders = root("models/bot.json");
    let mut child = Command::new(bin)
        .args(["features", "--orders", orders.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{}", r.json).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let vectors: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(vectors.len(), requests.len());
    (names, vectors)
}

/// Places the CLI's vector into a model's inputs by the model's own feature
/// names (the way a user would with the CLI output) and scores it with the
/// model alone, hashing the strings there.
fn predict_by_hand(model: &Model, names: &Value, vector: &Value, ty: PredictionType) -> f64 {
    let position = |kind: &str, name: &str| {
        names[kind]
            .as_array()
            .unwrap()
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("{name} is not a {kind} feature"))
    };
    let floats: Vec<f32> = model
        .float_feature_names()
        .iter()
        .map(|n| {
            vector["float"][position("float", n)]
                .as_f64()
                .map_or(f32::NAN, |x| x as f32)
        })
        .collect();
    let cats: Vec<&[u8]> = model
        .cat_feature_names()
        .iter()
        .map(|n| {
            vector["cat"][position("cat", n)]
                .as_str()
                .unwrap()
                .as_bytes()
        })
        .collect();
    let mut out = [0.0];
    model.predict_strings(&floats, &cats, ty, &mut out).unwrap();
    out[0]
}

#[test]
fn scores_equal_the_model_on_the_cli_vectors() {
    let files = [
        ("bot", root("models/bot.json")),
        ("reordered", root("tests/fixtures/scorer/reordered.json")),
        ("spoof", root("models/spoof.json")),
        ("regression", root("tests/fixtures/scorer/regression.json")),
    ];
    let scorer = load(&files);
    let requests = fixture_requests();
    let (names, vectors) = cli_vectors(&requests);
    let scores = score_all(&scorer, &requests);
    for (i, (name, path)) in files.iter().enumerate() {
        let model = Model::load(path).unwrap();
        let ty = match scorer.models()[i].kind() {
            ScoreKind::Probability => PredictionType::Probability,
            ScoreKind::Raw => PredictionType::Raw,
        };
        for ((r, row), vector) in requests.iter().zip(&scores).zip(&vectors) {
            let want = predict_by_hand(&model, &names, vector, ty);
            // Same values, same evaluator: the same bits.
            assert_eq!(
                row[i].to_bits(),
                want.to_bits(),
                "line {} model {name}",
                r.line
            );
        }
    }
}

#[test]
fn score_features_equals_score() {
    let scorer = load(&shipped());
    for r in fixture_requests().iter().take(20) {
        let headers = r.ffi_headers();
        let req = r.view(&headers);
        let mut v = edgeguard::features::FeatureVector::new();
        scorer.extract(&req, &mut v);
        let (mut a, mut b) = ([0.0; 2], [0.0; 2]);
        scorer.score(&req, &mut a).unwrap();
        scorer.score_features(&v, &mut b).unwrap();
        assert_eq!(a, b, "line {}", r.line);
    }
}

/// The scorer scores one-dimensional models two at a time (their sums of
/// leaves side by side): with one to four models (pairs and an odd one
/// out, classifiers and a regression), every score is bit for bit the one
/// the model gives alone on the same inputs.
#[test]
fn models_scored_in_pairs_score_as_alone() {
    use edgeguard::features::FeatureVector;
    use edgeguard::model::cat_hash;
    let files = [
        ("bot", root("models/bot.json")),
        ("spoof", root("models/spoof.json")),
        ("reordered", root("tests/fixtures/scorer/reordered.json")),
        ("regression", root("tests/fixtures/scorer/regression.json")),
    ];
    let requests = fixture_requests();
    for n in 1..=files.len() {
        let scorer = load(&files[..n]);
        for r in &requests {
            let headers = r.ffi_headers();
            let req = r.view(&headers);
            let mut out = vec![0.0; n];
            scorer.score(&req, &mut out).expect("score");
            let mut v = FeatureVector::new();
            scorer.extract(&req, &mut v);
            for (i, m) in scorer.models().iter().enumerate() {
                let floats: Vec<f32> = m.float_inputs().iter().map(|&f| v.float(f)).collect();
                let cats: Vec<i32> = m
                    .cat_inputs()
                    .iter()
                    .map(|&c| cat_hash(v.cat(c)) as i32)
                    .collect();
                let ty = match m.kind() {
                    ScoreKind::Probability => PredictionType::Probability,
                    ScoreKind::Raw => PredictionType::Raw,
                };
                let mut alone = [0.0];
                m.model()
                    .predict(&floats, &cats, ty, &mut alone)
                    .expect("predict");
                assert_eq!(
                    out[i].to_bits(),
                    alone[0].to_bits(),
                    "{n} models, model {}: {} vs alone {}",
                    m.name(),
                    out[i],
                    alone[0]
                );
            }
        }
    }
}

/// A scorer extracts only the optional feature groups its models read
/// (`Needs`): on every fixture request, with the shipped models (schema 4),
/// the legacy ones (schema 1) and both together, its vector agrees with
/// the full extraction on every feature a model reads, on all of schema
/// 4 (the reasons) and on the fleet's key, its scores are the ones the
/// full vector gives, and what no model reads is left NaN or empty.
#[test]
fn extraction_skips_only_what_no_model_reads() {
    use edgeguard::features::{
        extract_with, Cat, FeatureVector, Float, Needs, CAT_FEATURES, FLOAT_FEATURES,
        SCHEMA_VERSION,
    };
    let legacy = [
        ("legacy_bot", root("models/legacy/bot.json")),
        ("legacy_spoof", root("models/legacy/spoof.json")),
    ];
    let both: Vec<_> = shipped().into_iter().chain(legacy.clone()).collect();
    let requests = fixture_requests();
    for (set, files, needs) in [
        ("shipped", shipped(), Needs::NONE),
        ("legacy", legacy.to_vec(), Needs::ALL),
        ("both", both, Needs::ALL),
    ] {
        let scorer = load(&files);
        assert_eq!(scorer.needs(), needs, "{set}");
        let read_f = |f: Float| {
            FLOAT_FEATURES[f.index()].in_schema(SCHEMA_VERSION)
                || scorer
                    .models()
                    .iter()
                    .any(|m| m.float_inputs().contains(&f))
        };
        let read_c = |c: Cat| {
            CAT_FEATURES[c.index()].in_schema(SCHEMA_VERSION)
                || matches!(c, Cat::UaFamily | Cat::HeaderOrder)
                || scorer.models().iter().any(|m| m.cat_inputs().contains(&c))
        };
        let mut skipped = 0;
        for r in &requests {
            let headers = r.ffi_headers();
            let req = r.view(&headers);
            let (mut got, mut full) = (FeatureVector::new(), FeatureVector::new());
            scorer.extract(&req, &mut got);
            extract_with(&req, scorer.orders(), &mut full);
            // A feature differs from the full extraction only when it was
            // left out: no model reads it, and it is NaN or empty.
            for f in Float::ALL {
                let (g, w) = (got.float(f), full.float(f));
                if g.to_bits() != w.to_bits() {
                    assert!(!read_f(f) && g.is_nan(), "{set} line {}: {f:?}", r.line);
                    skipped += 1;
                }
            }
            for c in Cat::ALL {
                if got.cat(c) != full.cat(c) {
                    assert!(
                        !read_c(c) && got.cat(c).is_empty(),
                        "{set} line {}: {c:?}",
                        r.line
                    );
                    skipped += 1;
                }
            }
            let (mut a, mut b) = (vec![0.0; files.len()], vec![0.0; files.len()]);
            scorer.score_features(&got, &mut a).unwrap();
            scorer.score_features(&full, &mut b).unwrap();
            assert_eq!(a, b, "{set} line {}", r.line);
        }
        // The shipped scorer does leave work out.
        assert_eq!(skipped > 0, needs == Needs::NONE, "{set}");
    }
}
