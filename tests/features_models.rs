//! The shipped models (`models/bot.json`, `models/spoof.json`) scored by this
//! crate on this extractor's vectors equal official CatBoost's predictions
//! recorded in `tests/fixtures/traffic/sample.jsonl`, their inputs are the
//! schema's features by name, and each carries its default threshold.

mod scorer_support;

use edgeguard::features::{FeatureVector, CAT_FEATURES, FLOAT_FEATURES, SCHEMA_VERSION};
use edgeguard::model::{Model, PredictionType};
use edgeguard::scorer::Scorer;

const MODELS: [&str; 2] = ["bot", "spoof"];

fn load(name: &str) -> Model {
    let path = scorer_support::root(&format!("models/{name}.json"));
    Model::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn models_use_the_schema_names_and_carry_a_threshold() {
    for name in MODELS {
        let m = load(name);
        // Every feature of the current schema, in schema order.
        let floats: Vec<&str> = FLOAT_FEATURES
            .iter()
            .filter(|f| f.in_schema(SCHEMA_VERSION))
            .map(|f| f.name)
            .collect();
        let cats: Vec<&str> = CAT_FEATURES
            .iter()
            .filter(|f| f.in_schema(SCHEMA_VERSION))
            .map(|f| f.name)
            .collect();
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
        assert_eq!(
            m.metadata("edgeguard.schema"),
            Some(SCHEMA_VERSION.to_string().as_str())
        );
        assert!(m.tree_count() <= 300, "{name}: {} trees", m.tree_count());
    }
}

#[test]
fn native_scores_equal_catboost_on_the_fixture() {
    let models: Vec<Model> = MODELS.iter().map(|n| load(n)).collect();
    let shipped = scorer_support::shipped();
    let paths: Vec<(&str, &std::path::Path)> =
        shipped.iter().map(|(n, p)| (*n, p.as_path())).collect();
    // The scorer's extraction: the learnt order table of the models.
    let scorer = Scorer::load(&paths).unwrap();
    let mut checked = 0;
    for r in scorer_support::fixture_requests() {
        let headers = r.ffi_headers();
        let mut v = FeatureVector::new();
        scorer.extract(&r.view(&headers), &mut v);
        // Each model's inputs, by its own feature names.
        for (name, model) in MODELS.iter().zip(&models) {
            let floats: Vec<f32> = model
                .float_feature_names()
                .iter()
                .map(|n| {
                    v.floats()[FLOAT_FEATURES
                        .iter()
                        .position(|f| f.name == n.as_str())
                        .unwrap()]
                })
                .collect();
            let cats: Vec<&[u8]> = model
                .cat_feature_names()
                .iter()
                .map(|n| {
                    v.cat_at(
                        CAT_FEATURES
                            .iter()
                            .position(|f| f.name == n.as_str())
                            .unwrap(),
                    )
                    .unwrap()
                })
                .collect();
            let mut out = [0.0f64; 1];
            model
                .predict_strings(&floats, &cats, PredictionType::Raw, &mut out)
                .expect("predict");
            let want = r.expected_raw[*name];
            let tol = 1e-9 * want.abs().max(1.0);
            assert!(
                (out[0] - want).abs() <= tol,
                "line {}: {name} raw {} != catboost {want}",
                r.line,
                out[0]
            );
            checked += 1;
        }
    }
    assert!(checked >= 200, "only {checked} predictions checked");
}
