//! The native evaluator: a compiled CatBoost model scoring one document at a
//! time without touching the heap.
//!
//! Loading runs one way: `json.rs` parses, `compile.rs` validates into
//! `parts.rs`'s types, `plan.rs` lays them out, and this module evaluates
//! (steps 1 to 3 in `binarize.rs`, shared with model groups, whose members'
//! conditions `merge.rs` merges; step 4 in `trees.rs`).
//!
//! Per document, mirroring CatBoost's CPU evaluator (`cpu/quantization.h`,
//! `cpu/evaluator_impl.cpp`), over the layout of [`Plan`]:
//! 1. the categorical hashes the model uses are gathered (or computed from the
//!    strings) into a stack array;
//! 2. every used float feature is compared with its used borders once (NaN
//!    first replaced by -inf / +inf for `AsFalse` / `AsTrue` features that saw
//!    NaN in training), which sets one bit per border below the value;
//!    one-hot features find the position of the matching value;
//! 3. each CTR projection is hashed once and its buckets looked up; a bucket
//!    holds the bits of its CTRs, computed at load;
//! 4. each oblivious tree reads the bits of its levels (8 or 64 trees at a
//!    time with AVX2 or AVX-512 when the CPU has it, [`Kernel`]): level `d` sets bit `d` of
//!    the leaf index; leaf values are summed in tree order, then
//!    `scale * sum + bias`.

use std::path::Path;

use super::binarize::{scale_and_bias, CatSource};
use super::compile;
use super::error::{ModelError, ShapeError};
use super::evaluator::Evaluator;
use super::hash::cat_hash;
use super::limits::MAX_DIMENSION;
use super::parts::Info;
use super::plan::Plan;
use super::prediction::{apply_prediction_type, output_len, Objective};
use super::prediction::{PredictionError, PredictionType};
use super::trees::Kernel;

/// A CatBoost model compiled for single-document evaluation.
///
/// Load it once ([`Model::load`], [`Model::from_json`]); every prediction
/// afterwards works on stack scratch only and never allocates. Oblivious
/// (symmetric) trees only; float, categorical (one-hot and every CTR type)
/// features; any output dimension up to 256.
///
/// `.cbm` files are not read; convert them once with the official package:
/// `catboost.CatBoost().load_model("m.cbm").save_model("m.json", format="json")`.
#[derive(Debug)]
pub struct Model {
    info: Info,
    plan: Plan,
}

struct Strings<'a, 'b>(&'a [&'b [u8]]);

impl CatSource for Strings<'_, '_> {
    #[inline]
    fn hash(&self, index: usize) -> i32 {
        cat_hash(self.0[index]) as i32
    }
}

impl Model {
    /// Loads a model saved with `save_model(path, format="json")`. Files
    /// larger than 256 MiB are refused before reading.
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        let source = path.display().to_string();
        let bytes = compile::read_capped(path).map_err(|e| ModelError::io(&source, e))?;
        Self::from_json(&source, &bytes)
    }

    /// Compiles a model from the bytes of its JSON export. `source` names it
    /// in error messages (a file name, a URL, a config key).
    pub fn from_json(source: &str, bytes: &[u8]) -> Result<Model, ModelError> {
        let (info, parts) = compile::compile(source, bytes)?;
        let plan = Plan::build(parts)
            .map_err(|message| ModelError::new(source, "oblivious_trees", message))?;
        Ok(Model { info, plan })
    }

    /// The name the model was loaded under.
    pub fn source(&self) -> &str {
        &self.info.source
    }

    /// Float feature names, by float feature index (`""` where the model has
    /// none). Use them to place values by name rather than by position.
    pub fn float_feature_names(&self) -> &[String] {
        &self.info.float_names
    }

    /// Categorical feature names, by categorical feature index (`""` where
    /// the model has none).
    pub fn cat_feature_names(&self) -> &[String] {
        &self.info.cat_names
    }

    /// A string value of the model's metadata (`model_info`), e.g. the
    /// `edgeguard.threshold` set with `model.get_metadata()[key] = value`
    /// before `save_model`. Structured entries (training params) are not
    /// strings and give `None`.
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.info.metadata.get(key).map(String::as_str)
    }

    /// What the model was trained for, in words (`"binary classification"`,
    /// `"MultiClass"`, the loss name such as `"RMSE"`, or `"unknown
    /// objective"` when the export carries no training params).
    pub fn objective(&self) -> &str {
        self.info.objective.describe()
    }

    /// The parsed objective, for callers that decide by it (the scorer picks
    /// probability or raw scores from it, not from its description).
    pub(crate) fn objective_kind(&self) -> &Objective {
        &self.info.objective
    }

    /// The evaluation plan (for merging models into a group).
    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The number of condition bits a document gets (one per used border
    /// and one-hot condition, plus one always 0).
    pub fn condition_bits(&self) -> usize {
        self.plan.conditions.bit_count
    }

    /// The number of trees.
    pub fn tree_count(&self) -> usize {
        self.plan.trees.count
    }

    /// The tree kernel [`Model::predict`] runs for this model on this CPU:
    /// [`Kernel::detect`], except that models the AVX-512 kernel cannot hold
    /// (more than 4096 conditions, deeper than 8, several dimensions) run
    /// the AVX2 one.
    pub fn kernel(&self) -> Kernel {
        self.plan.trees.kernel(Kernel::detect())
    }

    /// Whether [`Model::predict`] can report `ty` for this model: `Raw`
    /// always; `Probability` and `Class` for binary (Logloss, CrossEntropy)
    /// and MultiClass models, `Class` for MultiClassOneVsAll; for a model
    /// without training params, by dimension as the C API does.
    pub fn supports(&self, ty: PredictionType) -> bool {
        self.info.objective.supports(ty, self.info.dimension)
    }

    /// How many values a prediction of type `ty` writes: 1 for `Class`, the
    /// dimension otherwise.
    pub fn output_len(&self, ty: PredictionType) -> usize {
        output_len(ty, self.info.dimension)
    }

    /// Scores one document given categorical values as CatBoost hashes
    /// ([`crate::model::cat_hash`] of the string, same bits as `i32`), writing
    /// [`Model::output_len`] values to the start of `out`. Nothing is written
    /// on error. Never allocates.
    pub fn predict(
        &self,
        floats: &[f32],
        cats_hashed: &[i32],
        ty: PredictionType,
        out: &mut [f64],
    ) -> Result<(), PredictionError> {
        self.check(floats.len(), cats_hashed.len(), ty, out.len())?;
        self.finish(ty, out, |raw| {
            self.raw_into(Kernel::detect(), floats, cats_hashed, raw)
        });
        Ok(())
    }

    /// [`Model::predict`] with categorical values as strings (bytes), hashed
    /// here on the stack. Only the categorical features the model uses are
    /// hashed.
    pub fn predict_strings(
        &self,
        floats: &[f32],
        cats: &[&[u8]],
        ty: PredictionType,
        out: &mut [f64],
    ) -> Result<(), PredictionError> {
        self.check(floats.len(), cats.len(), ty, out.len())?;
        self.finish(ty, out, |raw| {
            self.raw_into(Kernel::detect(), floats, Strings(cats), raw)
        });
        Ok(())
    }

    /// [`Model::predict_strings`] for any source of categorical strings that
    /// holds `cat_count` of them (the C ABI's `edgeguard_str` arrays).
    pub(crate) fn predict_cats<C: CatSource>(
        &self,
        floats: &[f32],
        cat_count: usize,
        cats: C,
        ty: PredictionType,
        out: &mut [f64],
    ) -> Result<(), PredictionError> {
        self.check(floats.len(), cat_count, ty, out.len())?;
        self.finish(ty, out, |raw| {
            self.raw_into(Kernel::detect(), floats, cats, raw)
        });
        Ok(())
    }

    fn check(
        &self,
        floats: usize,
        cats: usize,
        ty: PredictionType,
        out: usize,
    ) -> Result<(), PredictionError> {
        if !self.supports(ty) {
            return Err(PredictionError::Unsupported(ty));
        }
        self.check_input(floats, cats, self.output_len(ty), out)?;
        Ok(())
    }

    fn check_input(
        &self,
        floats: usize,
        cats: usize,
        need: usize,
        out: usize,
    ) -> Result<(), ShapeError> {
        let info = &self.info;
        ShapeError::check(
            (info.float_count, floats),
            (info.cat_count, cats),
            (need, out),
        )
    }

    /// Runs `raw` into the output (or a stack buffer when `Class` needs all
    /// dimensions but reports one) and applies the prediction type.
    fn finish(&self, ty: PredictionType, out: &mut [f64], raw: impl FnOnce(&mut [f64])) {
        let dim = self.info.dimension;
        if ty == PredictionType::Class && dim > 1 {
            let mut buf = [0.0f64; MAX_DIMENSION];
            raw(&mut buf[..dim]);
            apply_prediction_type(ty, &mut buf[..dim]);
            out[0] = buf[0];
        } else {
            raw(&mut out[..dim]);
            apply_prediction_type(ty, &mut out[..dim]);
        }
    }

    fn raw_into<C: CatSource>(&self, kernel: Kernel, floats: &[f32], cats: C, out: &mut [f64]) {
        let p = &self.plan;
        p.conditions.with_bits(kernel, floats, cats, |words| {
            if p.dimension == 1 {
                out[0] = p.trees.sum(kernel, words, &p.leaves);
            } else {
                p.trees.sum_dims(kernel, words, &p.leaves, out);
            }
        });
        scale_and_bias(p.scale, &p.bias, out);
    }

    /// [`Evaluator::predict_raw`] with the trees evaluated by `kernel` (the
    /// scalar kernel when the CPU lacks the one asked for): what the tests
    /// and benches use to compare the kernels. `predict_raw` and
    /// [`Model::predict`] use [`Kernel::detect`].
    pub fn predict_raw_with(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: &[i32],
        out: &mut [f64],
    ) -> Result<(), ShapeError> {
        self.check_input(floats.len(), cats.len(), self.info.dimension, out.len())?;
        self.finish(PredictionType::Raw, out, |raw| {
            self.raw_into(kernel, floats, cats, raw)
        });
        Ok(())
    }
}

impl Evaluator for Model {
    fn float_feature_count(&self) -> usize {
        self.info.float_count
    }

    fn cat_feature_count(&self) -> usize {
        self.info.cat_count
    }

    fn dimension(&self) -> usize {
        self.info.dimension
    }

    fn predict_raw(&self, floats: &[f32], cats: &[i32], out: &mut [f64]) -> Result<(), ShapeError> {
        self.predict_raw_with(Kernel::detect(), floats, cats, out)
    }
}
