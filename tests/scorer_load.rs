//! What a scorer accepts at load and how it says no: every refusal names
//! the model, its file and the feature or field at fault.

mod scorer_support;

use std::path::Path;

use edgeguard::model::Model;
use edgeguard::scorer::{LoadError, Scorer, MAX_MODELS};
use scorer_support::root;

const REORDERED: &str = "tests/fixtures/scorer/reordered.json";

fn text(relative: &str) -> String {
    std::fs::read_to_string(root(relative)).unwrap()
}

/// `REORDERED` with `from` (which must occur exactly once) replaced.
fn edited(from: &str, to: &str) -> Model {
    let json = text(REORDERED);
    assert_eq!(json.matches(from).count(), 1, "{from} must occur once");
    Model::from_json("edited.json", json.replace(from, to).as_bytes()).expect("still a model")
}

/// `REORDERED` changed through its parsed JSON.
fn reshaped(source: &str, change: impl FnOnce(&mut serde_json::Value)) -> Model {
    let mut json: serde_json::Value = serde_json::from_str(&text(REORDERED)).unwrap();
    change(&mut json);
    Model::from_json(source, json.to_string().as_bytes()).expect("still a model")
}

fn refusal(models: Vec<(&str, Model)>) -> LoadError {
    let models = models.into_iter().map(|(n, m)| (n.to_owned(), m)).collect();
    Scorer::from_models(models).expect_err("refused")
}

fn assert_says(err: &LoadError, parts: &[&str]) {
    let message = err.to_string();
    for part in parts {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

#[test]
fn unknown_or_mistyped_features_are_refused_by_name() {
    for (from, to, says) in [
        (
            r#""feature_id":"ua_len""#,
            r#""feature_id":"ua_length""#,
            "float feature 3 `ua_length` is not in the feature schema",
        ),
        (
            r#""feature_id":"ua_len""#,
            r#""feature_id":"method""#,
            "float feature 3 `method` is categorical in the feature schema",
        ),
        (
            r#""feature_id":"method""#,
            r#""feature_id":"uri_len""#,
            "categorical feature 2 `uri_len` is a float feature",
        ),
        (
            r#""feature_id":"ua_len""#,
            r#""feature_id":"""#,
            "float feature 3 has no name",
        ),
        (
            r#""feature_id":"ua_len""#,
            r#""feature_id":"header_count""#,
            "float features 2 and 3 are both named `header_count`",
        ),
        (
            r#""feature_id":"method""#,
            r#""feature_id":"ua_family""#,
            "categorical features 0 and 2 are both named `ua_family`",
        ),
    ] {
        let err = refusal(vec![("mine", edited(from, to))]);
        assert!(matches!(err, LoadError::Incompatible { .. }), "{err:?}");
        assert_says(&err, &["model `mine`", "edited.json", says]);
    }
}

#[test]
fn only_single_output_classifiers_and_regressions_are_scored() {
    let multiclass = Model::load(&root("tests/fixtures/catboost/multiclass_cat.json")).unwrap();
    assert_says(
        &refusal(vec![("mc", multiclass)]),
        &[
            "model `mc`",
            "multiclass_cat.json",
            "3 outputs (MultiClass)",
        ],
    );
    let ranking = reshaped("edited.json", |m| {
        m["model_info"]["params"]["loss_function"]["type"] = "YetiRank".into();
    });
    assert_says(
        &refusal(vec![("rank", ranking)]),
        &["edited.json", "loss function `YetiRank` is neither"],
    );
    // Without training params the objective is unknown.
    let bare = reshaped("bare.json", |m| {
        m["model_info"].as_object_mut().unwrap().remove("params");
    });
    assert_says(
        &refusal(vec![("bare", bare)]),
        &["bare.json", "loss_function is missing"],
    );
    // The features of these fixture models have no names at all.
    let unnamed = Model::load(&root("tests/fixtures/catboost/regression_cat.json")).unwrap();
    assert_says(
        &refusal(vec![("unnamed", unnamed)]),
        &["regression_cat.json", "float feature 0 has no name"],
    );
}

#[test]
fn thresholds_must_be_probabilities() {
    for (value, says) in [
        ("high", "not a number"),
        ("1.5", "not a probability in [0, 1]"),
        ("-0.1", "not a probability in [0, 1]"),
        ("NaN", "not a probability in [0, 1]"),
    ] {
        let m = edited(
            r#""edgeguard.threshold":"0.625""#,
            &format!(r#""edgeguard.threshold":"{value}""#),
        );
        assert_says(
            &refusal(vec![("t", m)]),
            &[
                "model `t`",
                "edited.json",
                "model_info[\"edgeguard.threshold\"]",
                says,
            ],
        );
    }
    for (value, want) in [("0", 0.0), ("1", 1.0), (" 0.25 ", 0.25)] {
        let m = edited(
            r#""edgeguard.threshold":"0.625""#,
            &format!(r#""edgeguard.threshold":"{value}""#),
        );
        let scorer = Scorer::from_models(vec![("t".into(), m)]).unwrap();
        assert_eq!(scorer.threshold(0), Some(want));
    }
    let none = edited(r#""edgeguard.threshold":"0.625","#, "");
    let scorer = Scorer::from_models(vec![("t".into(), none)]).unwrap();
    assert_eq!(scorer.threshold(0), None);
    assert_eq!(scorer.threshold(1), None);
}

#[test]
fn model_names_are_checked_before_files_are_read() {
    let bot = root("models/bot.json");
    let missing = root("models/missing.json");
    let cases: [(&[(&str, &Path)], &str); 4] = [
        (&[], "no models"),
        (&[("bot", &bot), ("", &bot)], "model 1 has an empty name"),
        (
            &[("bot", &bot), ("bot", &bot)],
            "model name `bot` is given twice",
        ),
        (&[("a\nb", &missing)], "control characters"),
    ];
    for (models, says) in cases {
        let err = Scorer::load(models).expect_err(says);
        assert!(matches!(err, LoadError::Config { .. }), "{err:?}");
        assert!(!err.is_io());
        assert_says(&err, &[says]);
    }
    let too_many: Vec<String> = (0..=MAX_MODELS).map(|i| format!("m{i}")).collect();
    let too_many: Vec<(&str, &Path)> = too_many
        .iter()
        .map(|n| (n.as_str(), bot.as_path()))
        .collect();
    assert_says(&Scorer::load(&too_many).unwrap_err(), &["at most 64"]);
}

#[test]
fn unreadable_and_invalid_files_name_the_file() {
    let bot = root("models/bot.json");
    let missing = root("models/missing.json");
    let err = Scorer::load(&[("bot", &bot), ("gone", &missing)]).unwrap_err();
    assert!(err.is_io(), "{err:?}");
    assert_says(&err, &["model `gone`", "missing.json"]);

    let not_json = root("tests/scorer_load.rs");
    let err = Scorer::load(&[("src", &not_json)]).unwrap_err();
    assert!(
        matches!(err, LoadError::Model { .. }) && !err.is_io(),
        "{err:?}"
    );
    assert_says(&err, &["model `src`", "scorer_load.rs"]);
}

#[test]
fn introspection_follows_load_order() {
    let (bot, spoof) = (root("models/bot.json"), root("models/spoof.json"));
    let scorer = Scorer::load(&[("second", &spoof), ("first", &bot)]).unwrap();
    assert_eq!(scorer.model_count(), 2);
    assert_eq!(scorer.model_name(0), Some("second"));
    assert_eq!(scorer.model_name(1), Some("first"));
    assert_eq!(scorer.model_name(2), None);
    assert_eq!(
        scorer.models()[0].model().source(),
        spoof.display().to_string()
    );
    let spoof_threshold: f64 = Model::load(&spoof)
        .unwrap()
        .metadata("edgeguard.threshold")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(scorer.threshold(0), Some(spoof_threshold));
    // The shipped models read the whole current schema, in schema order.
    let m = &scorer.models()[1];
    let v = edgeguard::features::SCHEMA_VERSION;
    let floats: Vec<_> = edgeguard::features::Float::ALL
        .into_iter()
        .filter(|f| f.spec().in_schema(v))
        .collect();
    let cats: Vec<_> = edgeguard::features::Cat::ALL
        .into_iter()
        .filter(|c| c.spec().in_schema(v))
        .collect();
    assert_eq!(m.float_inputs(), floats);
    assert_eq!(m.cat_inputs(), cats);
}

#[test]
fn wrong_output_length_writes_nothing() {
    let scorer = Scorer::load(&[("bot", &root("models/bot.json"))]).unwrap();
    let req = edgeguard::features::Request::new(b"GET", b"/", 11, b"203.0.113.1", &[]);
    for len in [0, 2] {
        let mut out = vec![7.0; len];
        let err = scorer.score(&req, &mut out).unwrap_err();
        assert_eq!(
            err,
            edgeguard::scorer::ScoreError::OutputLen {
                expected: 1,
                got: len
            }
        );
        assert!(out.iter().all(|&x| x == 7.0));
    }
    let mut out = [7.0];
    scorer.score(&req, &mut out).unwrap();
    assert!((0.0..=1.0).contains(&out[0]));
}

/// `REORDERED` (a schema-1 model: no `edgeguard.schema`) with metadata set.
fn with_meta(source: &str, entries: &[(&str, &str)]) -> Model {
    reshaped(source, |json| {
        for (k, v) in entries {
            json["model_info"][*k] = serde_json::Value::String((*v).to_owned());
        }
    })
}

/// `REORDERED` as a schema-2 model: `order_inversions` becomes
/// `order_reversed_pairs` and `ch_missing` becomes `ch_missing_secure`.
fn schema2(source: &str, orders: Option<&str>) -> Model {
    let json = text(REORDERED)
        .replace(
            r#""feature_id":"order_inversions""#,
            r#""feature_id":"order_reversed_pairs""#,
        )
        .replace(
            r#""feature_id":"ch_missing""#,
            r#""feature_id":"ch_missing_secure""#,
        );
    let mut json: serde_json::Value = serde_json::from_str(&json).unwrap();
    json["model_info"]["edgeguard.schema"] = "2".into();
    if let Some(o) = orders {
        json["model_info"]["edgeguard.order_pairs"] = o.into();
    }
    Model::from_json(source, json.to_string().as_bytes()).expect("still a model")
}

#[test]
fn models_of_an_unknown_schema_version_are_refused_naming_file_and_key() {
    for bad in ["5", "0", "two", ""] {
        let err = refusal(vec![(
            "bot",
            with_meta("future.json", &[("edgeguard.schema", bad)]),
        )]);
        assert!(matches!(err, LoadError::Incompatible { .. }), "{err:?}");
        assert_says(
            &err,
            &[
                "model `bot`",
                "future.json",
                &format!("model_info[\"edgeguard.schema\"] = {bad:?}"),
                "reads feature schemas 1, 2, 3, 4",
                "retrain",
            ],
        );
    }
}

#[test]
fn inputs_outside_the_models_schema_version_are_refused() {
    // A schema-1 model may not read a schema-2 feature...
    let err = refusal(vec![(
        "old",
        edited(
            r#""feature_id":"order_inversions""#,
            r#""feature_id":"order_reversed_pairs""#,
        ),
    )]);
    assert_says(
        &err,
        &[
            "edited.json",
            "float feature 0 `order_reversed_pairs` is not in feature schema 1",
            "edgeguard.schema",
        ],
    );
    // ... nor a schema-2 model a feature schema 2 dropped.
    let err = refusal(vec![(
        "new",
        with_meta("v2.json", &[("edgeguard.schema", "2")]),
    )]);
    assert_says(
        &err,
        &[
            "v2.json",
            "float feature 0 `order_inversions` is not in feature schema 2",
        ],
    );
    // ... nor a schema-2 model a TLS feature (schema 3): a model trained
    // before TLS features existed cannot have read one.
    let json = text(REORDERED)
        .replace(
            r#""feature_id":"ua_len""#,
            r#""feature_id":"tls_cipher_count""#,
        )
        .replace(
            r#""feature_id":"order_inversions""#,
            r#""feature_id":"order_reversed_pairs""#,
        )
        .replace(
            r#""feature_id":"ch_missing""#,
            r#""feature_id":"ch_missing_secure""#,
        );
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["model_info"]["edgeguard.schema"] = "2".into();
    let model = Model::from_json("v2-tls.json", v.to_string().as_bytes()).unwrap();
    let err = refusal(vec![("new", model)]);
    assert_says(
        &err,
        &[
            "v2-tls.json",
            "`tls_cipher_count` is not in feature schema 2",
        ],
    );
    // ... nor a schema-3 model a schema-4 feature, nor a schema-4 model a
    // feature of the page or the visit (schema 4 reads what the request
    // says about the software only).
    for (schema, from, to, refused) in [
        (
            "3",
            "ua_len",
            "engine_headers_missing",
            "float feature 3 `engine_headers_missing` is not in feature schema 3",
        ),
        (
            "4",
            "order_reversed_pairs",
            "uri_len",
            "float feature 0 `uri_len` is not in feature schema 4",
        ),
        (
            "4",
            "order_reversed_pairs",
            "cookie_count",
            "float feature 0 `cookie_count` is not in feature schema 4",
        ),
    ] {
        let json = schema2_text().replace(
            &format!(r#""feature_id":"{from}""#),
            &format!(r#""feature_id":"{to}""#),
        );
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["model_info"]["edgeguard.schema"] = schema.into();
        v["model_info"]["edgeguard.order_pairs"] = "chromium:Cu".into();
        let model = Model::from_json("later.json", v.to_string().as_bytes()).unwrap();
        let err = refusal(vec![("new", model)]);
        assert_says(&err, &["later.json", refused]);
    }
}

/// `REORDERED`'s JSON with the schema-1 features renamed to their schema-2
/// successors.
fn schema2_text() -> String {
    text(REORDERED)
        .replace(
            r#""feature_id":"order_inversions""#,
            r#""feature_id":"order_reversed_pairs""#,
        )
        .replace(
            r#""feature_id":"ch_missing""#,
            r#""feature_id":"ch_missing_secure""#,
        )
}

#[test]
fn learnt_orders_are_required_well_formed_and_shared() {
    let err = refusal(vec![("bot", schema2("no-table.json", None))]);
    assert_says(
        &err,
        &[
            "no-table.json",
            "`order_reversed_pairs`",
            "edgeguard.order_pairs\"] is missing",
        ],
    );
    let err = refusal(vec![("bot", schema2("bad-table.json", Some("blink:ua")))]);
    assert_says(
        &err,
        &[
            "bad-table.json",
            "edgeguard.order_pairs",
            "unknown engine `blink`",
        ],
    );
    // Two models with one table (in any spelling) share it...
    let scorer = Scorer::from_models(vec![
        ("a".into(), schema2("a.json", Some("chromium:Cu CM"))),
        ("b".into(), schema2("b.json", Some("chromium: CM Cu"))),
        (
            "legacy".into(),
            edited("\"edgeguard.threshold\"", "\"x-note\""),
        ),
    ])
    .unwrap();
    assert_eq!(scorer.orders().unwrap().to_text(), "chromium:CM Cu");
    assert_eq!(scorer.models()[2].schema(), 1);
    assert_eq!(scorer.models()[0].schema(), 2);
    // ... two different tables cannot feed one extraction.
    let err = refusal(vec![
        ("a", schema2("a.json", Some("chromium:Cu CM"))),
        ("b", schema2("b.json", Some("chromium:Cu"))),
    ]);
    assert_says(
        &err,
        &[
            "model `b`",
            "b.json",
            "edgeguard.order_pairs\"] differs from model `a`'s (a.json)",
        ],
    );
}

#[test]
fn shipped_models_are_the_current_schema_and_legacy_copies_schema_1() {
    let scorer = Scorer::load(&[
        ("bot", &root("models/bot.json")),
        ("spoof", &root("models/spoof.json")),
    ])
    .unwrap();
    for m in scorer.models() {
        assert_eq!(
            m.schema(),
            edgeguard::features::SCHEMA_VERSION,
            "{}",
            m.name()
        );
    }
    assert!(scorer.orders().is_some());
    let legacy = Scorer::load(&[
        ("bot", &root("models/legacy/bot.json")),
        ("spoof", &root("models/legacy/spoof.json")),
    ])
    .unwrap();
    for m in legacy.models() {
        assert_eq!(m.schema(), 1, "{}", m.name());
    }
    assert!(legacy.orders().is_none());
}

/// A schema-2 model (trained before TLS features) still loads beside the
/// schema-3 ones and scores what it was trained on: the connection's TLS
/// facts change nothing for it, and change the shipped schema-3 bot.
#[test]
fn schema_2_models_still_load_and_ignore_tls() {
    use edgeguard::features::{Request, TlsFacts};
    use edgeguard::headers::Header;
    use edgeguard::tls::Family;
    let old = schema2("v2.json", Some("chromium:Cu CM"));
    let new = Model::load(&root("models/bot.json")).unwrap();
    // Two models with different order tables cannot share a scorer: one each.
    let old = Scorer::from_models(vec![("old".to_owned(), old)]).unwrap();
    let new = Scorer::from_models(vec![("bot".to_owned(), new)]).unwrap();
    assert_eq!(old.models()[0].schema(), 2);
    let ua = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
    let headers = [Header::new(b"host", b"x"), Header::new(b"user-agent", ua)];
    let plain = Request::new(b"GET", b"/", 11, b"127.0.0.1", &headers);
    let tls = TlsFacts::new(b"t13d1812h1_85036bcba153_b26ce05bbdd6", Family::Openssl);
    let over_tls = plain.with_tls(tls);
    let score = |s: &Scorer, r: &Request<'_>| {
        let mut out = [0.0];
        s.score(r, &mut out).unwrap();
        out[0]
    };
    assert_eq!(
        score(&old, &plain).to_bits(),
        score(&old, &over_tls).to_bits()
    );
    assert_ne!(score(&new, &plain), score(&new, &over_tls));
}
