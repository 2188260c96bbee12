//! Bot scoring: request features, hashed once, scored by several CatBoost models.
//!
//! A [`Scorer`] is built once from named models. At load, each model's inputs
//! are bound to the feature schema ([`crate::features`]) by the names the model
//! was trained with, so a model may use any subset of the schema in any
//! order; a model the scorer cannot feed is refused with an error naming the
//! model file and the feature.
//!
//! Per request, [`Scorer::score`]:
//! 1. extracts the [`FeatureVector`] on the stack;
//! 2. hashes each categorical value that some model reads, once, with
//!    [`cat_hash`]: every model shares these hashes;
//! 3. scores the models as one [`ModelGroup`] (or a few, when the merged
//!    conditions would outgrow the evaluator): each float border, one-hot
//!    condition and CTR lookup that several models share is computed once,
//!    straight from the schema's arrays through the load-time binding, and
//!    each model sums its own trees' leaves;
//! 4. writes one score per model, in load order.
//!
//! Nothing of this touches the heap, and a scorer is only read while scoring,
//! so one scorer serves any number of threads.
//!
//! A score is the probability of the positive class for a binary classifier
//! and the raw formula value for a regression (see [`ScoreKind`]). A model's
//! default threshold comes from its metadata (`edgeguard.threshold`,
//! [`THRESHOLD_KEY`]); `models/train.py` writes it.
//!
//! A model also says which feature schema it was trained on
//! (`edgeguard.schema`, see [`crate::features`]): a version this build does
//! not read, or an input outside the model's version, is refused at load.
//! Features are extracted once for every model, and only the optional
//! groups some model reads ([`Needs`], worked out at load), so data the extractor
//! learns from a model's metadata (the header-order table,
//! `edgeguard.order_pairs`) must be the same in every model that has it.

#![forbid(unsafe_code)]

mod binding;
mod error;

use std::path::Path;

use crate::features::orders::{OrderTable, ORDERS_KEY};
use crate::features::{extract_needed, Cat, FeatureVector, Needs, Request, CAT_COUNT, FLOAT_COUNT};
use crate::model::{
    apply_prediction_type, cat_hash, GroupInput, Model, ModelGroup, PredictionError,
};

use binding::{bind, Binding};
pub use binding::{ScoreKind, THRESHOLD_KEY};
pub use error::{LoadError, ScoreError};

/// The most models one scorer holds (callers size stack buffers of scores
/// by it).
pub const MAX_MODELS: usize = 64;

/// One model of a scorer, with its name and its binding to the schema.
#[derive(Debug)]
pub struct ScoredModel {
    name: String,
    model: Model,
    binding: Binding,
}

impl ScoredModel {
    /// The name the model was given at load (`bot`, `spoof`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model itself.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The default threshold from the model's metadata, in the unit of the
    /// score (a probability for classifiers); `None` if the model has none.
    pub fn threshold(&self) -> Option<f64> {
        self.binding.threshold
    }

    /// What the model's score is.
    pub fn kind(&self) -> ScoreKind {
        self.binding.kind
    }

    /// The feature schema version the model was trained on.
    pub fn schema(&self) -> u32 {
        self.binding.schema
    }

    /// The schema's float feature feeding each of the model's float inputs,
    /// by the model's float feature index.
    pub fn float_inputs(&self) -> &[crate::features::Float] {
        &self.binding.floats
    }

    /// The schema's categorical feature feeding each of the model's
    /// categorical inputs, by the model's categorical feature index.
    pub fn cat_inputs(&self) -> &[Cat] {
        &self.binding.cats
    }
}

/// Several CatBoost models scoring each request from one feature vector and
/// one set of categorical hashes.
#[derive(Debug)]
pub struct Scorer {
    models: Vec<ScoredModel>,
    /// The categorical features at least one model reads: only these are
    /// hashed per request.
    hashed: Vec<Cat>,
    /// The learnt header-order table every model that has one shares.
    orders: Option<OrderTable>,
    /// The optional feature groups some model reads: only these are
    /// extracted per request.
    needs: Needs,
    /// The models in groups scored together, in load order.
    groups: Vec<Grouped>,
}

/// Models `first..first + group.len()` of a scorer, scored as one.
#[derive(Debug)]
struct Grouped {
    first: usize,
    group: ModelGroup,
}

/// The most models merged into one group: each added member makes loading
/// rebuild the group, and past a few members the shared conditions are a
/// small part of the cost.
const MAX_GROUP: usize = 8;

impl Scorer {
    /// Loads each `(name, path)` model (CatBoost JSON export) and binds it to
    /// the feature schema. Names must be non-empty, unique and free of
    /// control characters; at most [`MAX_MODELS`] models.
    pub fn load(models: &[(&str, &Path)]) -> Result<Scorer, LoadError> {
        // Names are checked before any file is read: a configuration typo
        // is reported as such, not as whatever the files say.
        check_names(models.iter().map(|(name, _)| *name))?;
        let mut loaded = Vec::with_capacity(models.len());
        for (name, path) in models {
            let model = Model::load(path).map_err(|error| LoadError::Model {
                name: (*name).to_owned(),
                error,
            })?;
            loaded.push(((*name).to_owned(), model));
        }
        Self::from_models(loaded)
    }

    /// Builds a scorer from models already loaded, under the given names.
    /// Same checks as [`Scorer::load`].
    pub fn from_models(models: Vec<(String, Model)>) -> Result<Scorer, LoadError> {
        check_names(models.iter().map(|(name, _)| name.as_str()))?;
        let mut scored = Vec::with_capacity(models.len());
        for (name, model) in models {
            let binding = bind(&model).map_err(|message| LoadError::Incompatible {
                name: name.clone(),
                source: model.source().to_owned(),
                message,
            })?;
            scored.push(ScoredModel {
                name,
                model,
                binding,
            });
        }
        let hashed = Cat::ALL
            .into_iter()
            .filter(|c| scored.iter().any(|m| m.binding.cats.contains(c)))
            .collect();
        let orders = shared_orders(&scored)?;
        let groups = group_models(&scored)?;
        let needs = scored.iter().fold(Needs::NONE, |n, m| {
            n.or(Needs::of(&m.binding.floats, &m.binding.cats))
        });
        Ok(Scorer {
            models: scored,
            hashed,
            orders,
            needs,
            groups,
        })
    }

    /// The learnt header-order table the models share, if any has one.
    pub fn orders(&self) -> Option<&OrderTable> {
        self.orders.as_ref()
    }

    /// Extracts `req`'s features as this scorer's models read them (with
    /// their learnt order table): every feature of schema 4 (what the
    /// reasons and the fleet's key read too), and of the older schemas'
    /// features those the models read ([`Scorer::needs`]); the rest are
    /// NaN or empty. Allocates nothing.
    pub fn extract<'a>(&self, req: &Request<'a>, out: &mut FeatureVector<'a>) {
        extract_needed(req, self.orders.as_ref(), self.needs, out);
    }

    /// The optional feature groups [`Scorer::extract`] computes: those
    /// some model reads.
    pub fn needs(&self) -> Needs {
        self.needs
    }

    /// How many models score each request (the length `score` expects).
    pub fn model_count(&self) -> usize {
        self.models.len()
    }

    /// The name of model `i`, `None` out of range.
    pub fn model_name(&self, i: usize) -> Option<&str> {
        self.models.get(i).map(ScoredModel::name)
    }

    /// The default threshold of model `i`; `None` if it has none or `i` is
    /// out of range.
    pub fn threshold(&self, i: usize) -> Option<f64> {
        self.models.get(i).and_then(ScoredModel::threshold)
    }

    /// The models, in load order (the order of the scores).
    pub fn models(&self) -> &[ScoredModel] {
        &self.models
    }

    /// Scores one request: `out[i]` receives model `i`'s score.
    /// `out.len()` must equal [`Scorer::model_count`]. Nothing is written on
    /// error. Never allocates.
    pub fn score(&self, req: &Request<'_>, out: &mut [f64]) -> Result<(), ScoreError> {
        self.check_len(out)?;
        let mut features = FeatureVector::new();
        self.extract(req, &mut features);
        self.score_features(&features, out)
    }

    /// [`Scorer::score`] for a feature vector already extracted with
    /// [`Scorer::extract`] (the offline replay reuses vectors; benches time
    /// the parts apart).
    pub fn score_features(
        &self,
        features: &FeatureVector<'_>,
        out: &mut [f64],
    ) -> Result<(), ScoreError> {
        self.check_len(out)?;
        let mut hashes = [0i32; CAT_COUNT];
        for &c in &self.hashed {
            // CatBoost's C API takes the hash's bits as a signed int.
            hashes[c.index()] = cat_hash(features.cat(c)) as i32;
        }
        // Straight into `out`: every group takes the same two arrays and
        // its own range of `out`, whose lengths were set at load, so a shape
        // error (a bug) would stop the first group, before anything is
        // written.
        for g in &self.groups {
            g.group
                .predict_raw(
                    features.floats(),
                    &hashes,
                    &mut out[g.first..g.first + g.group.len()],
                )
                .map_err(|error| ScoreError::Model {
                    index: g.first,
                    error: PredictionError::Input(error),
                })?;
        }
        for (s, m) in out.iter_mut().zip(&self.models) {
            apply_prediction_type(m.binding.kind.prediction_type(), std::slice::from_mut(s));
        }
        Ok(())
    }

    fn check_len(&self, out: &[f64]) -> Result<(), ScoreError> {
        if out.len() != self.models.len() {
            return Err(ScoreError::OutputLen {
                expected: self.models.len(),
                got: out.len(),
            });
        }
        Ok(())
    }
}

/// The models in load order, as few groups as merge: a group grows while
/// the merged conditions fit the evaluator and keep the AVX-512 kernel.
fn group_models(models: &[ScoredModel]) -> Result<Vec<Grouped>, LoadError> {
    let positions: Vec<(Vec<usize>, Vec<usize>)> = models
        .iter()
        .map(|m| {
            (
                m.binding.floats.iter().map(|f| f.index()).collect(),
                m.binding.cats.iter().map(|c| c.index()).collect(),
            )
        })
        .collect();
    let inputs: Vec<GroupInput<'_>> = models
        .iter()
        .zip(&positions)
        .map(|(m, (floats, cats))| GroupInput {
            model: &m.model,
            floats,
            cats,
        })
        .collect();
    let build =
        |range: std::ops::Range<usize>| ModelGroup::build(&inputs[range], FLOAT_COUNT, CAT_COUNT);
    let mut groups = Vec::new();
    let mut first = 0;
    while first < models.len() {
        // One model alone always fits: its own plan met the same limits.
        let mut group = build(first..first + 1).map_err(|message| LoadError::Incompatible {
            name: models[first].name.clone(),
            source: models[first].model.source().to_owned(),
            message,
        })?;
        let mut end = first + 1;
        while end < models.len() && end - first < MAX_GROUP {
            match build(first..end + 1) {
                Ok(bigger) if bigger.fits_byte_kernel() || !group.fits_byte_kernel() => {
                    group = bigger;
                    end += 1;
                }
                _ => break,
            }
        }
        groups.push(Grouped { first, group });
        first = end;
    }
    Ok(groups)
}

/// The one order table of the models that carry one; a second, different
/// table is refused, naming both models.
fn shared_orders(models: &[ScoredModel]) -> Result<Option<OrderTable>, LoadError> {
    let mut first: Option<&ScoredModel> = None;
    for m in models {
        let Some(table) = &m.binding.orders else {
            continue;
        };
        match first {
            None => first = Some(m),
            Some(f) if f.binding.orders.as_ref() == Some(table) => {}
            Some(f) => {
                return Err(LoadError::Incompatible {
                    name: m.name.clone(),
                    source: m.model.source().to_owned(),
                    message: format!(
                        "model_info[\"{ORDERS_KEY}\"] differs from model `{}`'s ({}): the models \
                         of one scorer share one feature extraction; train them together \
                         (models/train.py)",
                        f.name,
                        f.model.source()
                    ),
                })
            }
        }
    }
    Ok(first.and_then(|m| m.binding.orders.clone()))
}

fn check_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Result<(), LoadError> {
    let config = |message: String| Err(LoadError::Config { message });
    match names.len() {
        0 => return config("no models given: a scorer needs at least one".to_owned()),
        n if n > MAX_MODELS => {
            return config(format!(
                "{n} models given; a scorer holds at most {MAX_MODELS}"
            ))
        }
        _ => {}
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, name) in names.enumerate() {
        if name.is_empty() {
            return config(format!("model {i} has an empty name"));
        }
        // Names reach C as NUL-terminated strings and end up in logs.
        if name.chars().any(char::is_control) {
            return config(format!("model {i} name {name:?} holds control characters"));
        }
        if seen.contains(&name) {
            return config(format!("model name `{name}` is given twice"));
        }
        seen.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_error(names: &[&str]) -> String {
        check_names(names.iter().copied())
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn model_names_are_checked() {
        assert!(check_names(["bot", "spoof"].into_iter()).is_ok());
        assert!(names_error(&[]).contains("no models"));
        assert!(names_error(&["bot", ""]).contains("model 1 has an empty name"));
        assert!(names_error(&["bot", "spoof", "bot"]).contains("`bot` is given twice"));
        assert!(names_error(&["a\0b"]).contains("control characters"));
        let many: Vec<String> = (0..=MAX_MODELS).map(|i| format!("m{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(names_error(&many).contains("at most 64"));
    }

    #[test]
    fn scorer_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Scorer>();
    }
}
