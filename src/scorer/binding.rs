//! How one model is bound to the feature schema at load time: which schema
//! feature feeds each of its inputs (by name), what its score means, and its
//! threshold.

use crate::features::orders::{OrderTable, ORDERS_KEY};
use crate::features::{Cat, Float, SCHEMA_KEY, SCHEMA_VERSION, SCHEMA_VERSIONS};
use crate::model::{Evaluator, Model, Objective, PredictionType};

/// Losses whose raw formula value is itself the prediction the user wants
/// (or, for Poisson and Tweedie, its logarithm): one value, no link to
/// apply. Ranking and multi-target losses are not in the list on purpose.
const REGRESSION_LOSSES: &[&str] = &[
    "RMSE",
    "MAE",
    "Quantile",
    "Expectile",
    "LogLinQuantile",
    "MAPE",
    "Poisson",
    "Tweedie",
    "Huber",
    "Lq",
    "LogCosh",
    "FairLoss",
];

/// The metadata key holding a model's default threshold.
pub const THRESHOLD_KEY: &str = "edgeguard.threshold";

/// What a model's score is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreKind {
    /// A binary classifier (Logloss, CrossEntropy): the probability of the
    /// positive class, `1 / (1 + exp(-raw))`, in `[0, 1]`.
    Probability,
    /// A regression (RMSE, MAE, Quantile, ...): CatBoost's raw formula value
    /// (`RawFormulaVal`), which is the prediction itself for most losses and
    /// its natural logarithm for Poisson and Tweedie.
    Raw,
}

impl ScoreKind {
    pub(crate) fn prediction_type(self) -> PredictionType {
        match self {
            Self::Probability => PredictionType::Probability,
            Self::Raw => PredictionType::Raw,
        }
    }
}

/// A model's inputs as schema positions, its score kind and threshold.
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) floats: Vec<Float>,
    pub(crate) cats: Vec<Cat>,
    pub(crate) kind: ScoreKind,
    pub(crate) threshold: Option<f64>,
    /// The feature schema version the model was trained on.
    pub(crate) schema: u32,
    /// The learnt header-order table the model was trained with, if any.
    pub(crate) orders: Option<OrderTable>,
}

/// Binds `model` to the schema, or says (naming the feature or field) why
/// the scorer cannot use it.
pub(crate) fn bind(model: &Model) -> Result<Binding, String> {
    let kind = score_kind(model)?;
    let schema = schema(model)?;
    let floats = model
        .float_feature_names()
        .iter()
        .enumerate()
        .map(|(i, name)| float_input(i, name))
        .collect::<Result<Vec<_>, _>>()?;
    let cats = model
        .cat_feature_names()
        .iter()
        .enumerate()
        .map(|(i, name)| cat_input(i, name))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, f) in floats.iter().enumerate() {
        check_in_schema(schema, "float", i, f.spec())?;
    }
    for (i, c) in cats.iter().enumerate() {
        check_in_schema(schema, "categorical", i, c.spec())?;
    }
    let orders = orders(model)?;
    if orders.is_none() && floats.contains(&Float::OrderReversedPairs) {
        return Err(format!(
            "the model reads `order_reversed_pairs` but model_info[\"{ORDERS_KEY}\"] is missing: \
             the learnt order table is part of the model (models/train.py writes it)"
        ));
    }
    // A repeated name would be two columns of one training frame: the
    // export is damaged or hand-edited, and one of the two is wrong.
    if let Some((a, b)) = first_repeat(&floats) {
        return Err(format!(
            "float features {a} and {b} are both named `{}`",
            floats[a].spec().name
        ));
    }
    if let Some((a, b)) = first_repeat(&cats) {
        return Err(format!(
            "categorical features {a} and {b} are both named `{}`",
            cats[a].spec().name
        ));
    }
    let threshold = threshold(model, kind)?;
    Ok(Binding {
        floats,
        cats,
        kind,
        threshold,
        schema,
        orders,
    })
}

/// The model's schema version: `edgeguard.schema`, or 1 for models that
/// predate the key.
fn schema(model: &Model) -> Result<u32, String> {
    let Some(text) = model.metadata(SCHEMA_KEY) else {
        return Ok(1);
    };
    let supported = || {
        SCHEMA_VERSIONS
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match text.trim().parse::<u32>() {
        Ok(v) if SCHEMA_VERSIONS.contains(&v) => Ok(v),
        _ => Err(format!(
            "model_info[\"{SCHEMA_KEY}\"] = {text:?}: this edgeguard reads feature schemas {} \
             (current: {SCHEMA_VERSION}); retrain the model with models/train.py of this version",
            supported()
        )),
    }
}

fn check_in_schema(
    schema: u32,
    kind: &str,
    i: usize,
    spec: crate::features::FeatureSpec,
) -> Result<(), String> {
    if spec.in_schema(schema) {
        return Ok(());
    }
    Err(format!(
        "{kind} feature {i} `{}` is not in feature schema {schema} (model_info[\"{SCHEMA_KEY}\"]{})",
        spec.name,
        if schema == 1 { " is absent or 1" } else { "" }
    ))
}

fn orders(model: &Model) -> Result<Option<OrderTable>, String> {
    let Some(text) = model.metadata(ORDERS_KEY) else {
        return Ok(None);
    };
    OrderTable::parse(text)
        .map(Some)
        .map_err(|e| format!("model_info[\"{ORDERS_KEY}\"]: {e}"))
}

fn score_kind(model: &Model) -> Result<ScoreKind, String> {
    let dimension = model.dimension();
    let objective = model.objective();
    if dimension != 1 {
        return Err(format!(
            "the model has {dimension} outputs ({objective}); the scorer needs one score per model \
             (a binary classifier or a regression)"
        ));
    }
    // By the parsed objective, not its description.
    match model.objective_kind() {
        Objective::Binary if model.supports(PredictionType::Probability) => {
            Ok(ScoreKind::Probability)
        }
        Objective::Other(loss) if REGRESSION_LOSSES.contains(&loss.as_str()) => Ok(ScoreKind::Raw),
        Objective::Unknown => Err(
            "model_info.params.loss_function is missing: cannot tell a classifier \
                    from a regression; export the model with its training params"
                .to_owned(),
        ),
        _ => Err(format!(
            "loss function `{objective}` is neither a binary classifier nor a regression"
        )),
    }
}

fn float_input(i: usize, name: &str) -> Result<Float, String> {
    if name.is_empty() {
        return Err(format!(
            "float feature {i} has no name; train on named columns (`edgeguard features --names`)"
        ));
    }
    if let Some(f) = Float::ALL.iter().find(|f| f.spec().name == name) {
        return Ok(*f);
    }
    if Cat::ALL.iter().any(|c| c.spec().name == name) {
        return Err(format!(
            "float feature {i} `{name}` is categorical in the feature schema"
        ));
    }
    Err(format!(
        "float feature {i} `{name}` is not in the feature schema"
    ))
}

fn cat_input(i: usize, name: &str) -> Result<Cat, String> {
    if name.is_empty() {
        return Err(format!(
            "categorical feature {i} has no name; train on named columns (`edgeguard features --names`)"
        ));
    }
    if let Some(c) = Cat::ALL.iter().find(|c| c.spec().name == name) {
        return Ok(*c);
    }
    if Float::ALL.iter().any(|f| f.spec().name == name) {
        return Err(format!(
            "categorical feature {i} `{name}` is a float feature in the feature schema"
        ));
    }
    Err(format!(
        "categorical feature {i} `{name}` is not in the feature schema"
    ))
}

fn first_repeat<T: PartialEq>(items: &[T]) -> Option<(usize, usize)> {
    items.iter().enumerate().find_map(|(b, item)| {
        items[..b]
            .iter()
            .position(|earlier| earlier == item)
            .map(|a| (a, b))
    })
}

fn threshold(model: &Model, kind: ScoreKind) -> Result<Option<f64>, String> {
    let Some(text) = model.metadata(THRESHOLD_KEY) else {
        return Ok(None);
    };
    let bad = |why: &str| format!("model_info[\"{THRESHOLD_KEY}\"] = {text:?}: {why}");
    let value: f64 = text.trim().parse().map_err(|_| bad("not a number"))?;
    match kind {
        ScoreKind::Probability if !(0.0..=1.0).contains(&value) => {
            Err(bad("not a probability in [0, 1]"))
        }
        ScoreKind::Raw if !value.is_finite() => Err(bad("not a finite number")),
        _ => Ok(Some(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_found_with_both_positions() {
        assert_eq!(first_repeat(&[1, 2, 3]), None);
        assert_eq!(first_repeat(&[1, 2, 1, 2]), Some((0, 2)));
        assert_eq!(first_repeat::<u8>(&[]), None);
    }

    #[test]
    fn inputs_are_found_by_name_and_kind() {
        assert_eq!(float_input(0, "ua_len"), Ok(Float::UaLen));
        assert_eq!(cat_input(0, "ua_family"), Ok(Cat::UaFamily));
        let errors = [
            (
                float_input(2, "").unwrap_err(),
                "float feature 2 has no name",
            ),
            (
                float_input(3, "method").unwrap_err(),
                "`method` is categorical",
            ),
            (
                float_input(4, "nope").unwrap_err(),
                "`nope` is not in the feature schema",
            ),
            (
                cat_input(5, "ua_len").unwrap_err(),
                "`ua_len` is a float feature",
            ),
            (
                cat_input(6, "Method").unwrap_err(),
                "`Method` is not in the feature schema",
            ),
        ];
        for (err, want) in errors {
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }
}
