//! The native evaluator: a compiled CatBoost model scoring one document at a
//! time without touching the heap.
//!
//! Per document, mirroring CatBoost's CPU evaluator (`cpu/quantization.h`,
//! `cpu/evaluator_impl.cpp`), over the layout of [`Plan`]:
//! 1. the categorical hashes the model uses are gathered (or computed from the
//!    strings) into a stack array;
//! 2. every used float feature is compared with its used borders once (NaN
//!    first replaced by -inf / +inf for `AsFalse` / `AsTrue` features that saw
//!    NaN in training), which writes one byte per border: 1 if the value is
//!    above it; one-hot features find the position of the matching value;
//! 3. each CTR projection is hashed once, its buckets looked up, each CTR's
//!    value computed and binarized the same way as a float;
//! 4. each oblivious tree reads the bytes of its levels: level `d` sets bit
//!    `d` of the leaf index; leaf values are summed in tree order, then
//!    `scale * sum + bias`.

use std::collections::BTreeMap;
use std::path::Path;

use super::hash::{cat_hash, combine, widen_cat};
use super::plan::{Plan, MAX_BITS, MAX_SLOTS, RUN, RUNS};
use super::prediction::{apply_prediction_type, output_len, Objective};
use super::{compile, Evaluator, ModelError, PredictError, PredictionError, PredictionType};

/// The scratch arrays are zeroed on every prediction, so they come in three
/// sizes: most models fit the small or medium frame, only the largest pay for
/// zeroing the full one. (categorical values, projections, bit bytes)
const SMALL: (usize, usize, usize) = (32, 128, 1024);
const MEDIUM: (usize, usize, usize) = (128, 512, 4096);
/// The most categorical features a model may use (4 bytes of stack each).
pub(crate) const MAX_USED_CATS: usize = 1024;
/// The most output dimensions (classes) a model may have.
pub(crate) const MAX_DIMENSION: usize = 256;

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
    pub(crate) source: String,
    pub(crate) float_count: usize,
    pub(crate) cat_count: usize,
    pub(crate) dimension: usize,
    pub(crate) objective: Objective,
    pub(crate) float_names: Vec<String>,
    pub(crate) cat_names: Vec<String>,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) plan: Plan,
}

/// Where categorical hashes come from: given by the caller, or hashed here
/// from the strings.
pub(crate) trait CatSource {
    /// The hash of categorical feature `index` (in bounds: counts are
    /// checked before evaluation).
    fn hash(&self, index: usize) -> i32;
}

impl CatSource for &[i32] {
    #[inline]
    fn hash(&self, index: usize) -> i32 {
        self[index]
    }
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
        compile::compile(&source, &bytes)
    }

    /// Compiles a model from the bytes of its JSON export. `source` names it
    /// in error messages (a file name, a URL, a config key).
    pub fn from_json(source: &str, bytes: &[u8]) -> Result<Model, ModelError> {
        compile::compile(source, bytes)
    }

    /// The name the model was loaded under.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Float feature names, by float feature index (`""` where the model has
    /// none). Use them to place values by name rather than by position.
    pub fn float_feature_names(&self) -> &[String] {
        &self.float_names
    }

    /// Categorical feature names, by categorical feature index (`""` where
    /// the model has none).
    pub fn cat_feature_names(&self) -> &[String] {
        &self.cat_names
    }

    /// A string value of the model's metadata (`model_info`), e.g. the
    /// `edgeguard.threshold` set with `model.get_metadata()[key] = value`
    /// before `save_model`. Structured entries (training params) are not
    /// strings and give `None`.
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).map(String::as_str)
    }

    /// What the model was trained for, in words (`"binary classification"`,
    /// `"MultiClass"`, the loss name such as `"RMSE"`, or `"unknown
    /// objective"` when the export carries no training params).
    pub fn objective(&self) -> &str {
        self.objective.describe()
    }

    /// The number of trees.
    pub fn tree_count(&self) -> usize {
        self.plan.first_leaf.len()
    }

    /// Whether [`Model::predict`] can report `ty` for this model: `Raw`
    /// always; `Probability` and `Class` for binary (Logloss, CrossEntropy)
    /// and MultiClass models, `Class` for MultiClassOneVsAll; for a model
    /// without training params, by dimension as the C API does.
    pub fn supports(&self, ty: PredictionType) -> bool {
        self.objective.supports(ty, self.dimension)
    }

    /// How many values a prediction of type `ty` writes: 1 for `Class`, the
    /// dimension otherwise.
    pub fn output_len(&self, ty: PredictionType) -> usize {
        output_len(ty, self.dimension)
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
        self.finish(ty, out, |raw| self.raw_into(floats, cats_hashed, raw));
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
        self.finish(ty, out, |raw| self.raw_into(floats, Strings(cats), raw));
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
        self.finish(ty, out, |raw| self.raw_into(floats, cats, raw));
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
    ) -> Result<(), PredictError> {
        if floats != self.float_count {
            return Err(PredictError::FloatCount {
                expected: self.float_count,
                got: floats,
            });
        }
        if cats != self.cat_count {
            return Err(PredictError::CatCount {
                expected: self.cat_count,
                got: cats,
            });
        }
        if out < need {
            return Err(PredictError::OutputLen {
                expected: need,
                got: out,
            });
        }
        Ok(())
    }

    /// Runs `raw` into the output (or a stack buffer when `Class` needs all
    /// dimensions but reports one) and applies the prediction type.
    fn finish(&self, ty: PredictionType, out: &mut [f64], raw: impl FnOnce(&mut [f64])) {
        let dim = self.dimension;
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

    fn raw_into<C: CatSource>(&self, floats: &[f32], cats: C, out: &mut [f64]) {
        let p = &self.plan;
        let fits = |(c, j, b): (usize, usize, usize)| {
            p.used_cats.len() <= c && p.projections.len() <= j && p.bit_count <= b
        };
        if fits(SMALL) {
            self.raw_with::<{ SMALL.0 }, { SMALL.1 }, { SMALL.2 }, C>(floats, cats, out);
        } else if fits(MEDIUM) {
            self.raw_with::<{ MEDIUM.0 }, { MEDIUM.1 }, { MEDIUM.2 }, C>(floats, cats, out);
        } else {
            self.raw_with::<MAX_USED_CATS, MAX_SLOTS, MAX_BITS, C>(floats, cats, out);
        }
    }

    #[inline(always)]
    fn raw_with<const CATS: usize, const KEYS: usize, const BITS: usize, C: CatSource>(
        &self,
        floats: &[f32],
        cats: C,
        out: &mut [f64],
    ) {
        let p = &self.plan;
        let mut hashes = [0i32; CATS];
        for (h, &c) in hashes.iter_mut().zip(&p.used_cats) {
            *h = cats.hash(c as usize);
        }
        let mut bits = [0u8; BITS];
        for f in &p.floats {
            let mut v = floats[f.feature as usize];
            if v.is_nan() {
                v = f.nan_fill;
            }
            let borders = &p.borders[f.borders.0 as usize..f.borders.1 as usize];
            // "Border below v" is CatBoost's `v > border`: false for NaN.
            let above = borders.partition_point(|&b| b < v);
            write_run(&mut bits, f.bits as usize, borders.len(), above);
        }
        let mut one_hot = [0u16; CATS];
        for (m, o) in one_hot.iter_mut().zip(&p.one_hots) {
            let h = hashes[o.cat as usize];
            let values = &p.one_hot_values[o.values.0 as usize..o.values.1 as usize];
            *m = values
                .iter()
                .position(|&v| v == h)
                .map_or(0, |i| i as u16 + 1);
        }
        self.ctrs::<CATS, KEYS, BITS>(&hashes, &one_hot, &mut bits);
        let first = p.one_hot_bits as usize;
        for (bit, &(o, index)) in bits[first..].iter_mut().zip(&p.one_hot_conditions) {
            *bit = u8::from(one_hot[o as usize] == index);
        }
        if self.dimension == 1 {
            out[0] = match p.depth {
                4 => sum_trees::<4, BITS>(p, &bits),
                6 => sum_trees::<6, BITS>(p, &bits),
                8 => sum_trees::<8, BITS>(p, &bits),
                _ => sum_trees_any(p, &bits),
            };
        } else {
            sum_trees_dims(p, &bits, out);
        }
        for (o, b) in out.iter_mut().zip(&p.bias) {
            *o = p.scale * *o + b;
        }
    }

    /// Hashes each projection once, looks each (projection, table) bucket up
    /// once and binarizes every CTR value into its bytes.
    #[inline(always)]
    fn ctrs<const CATS: usize, const KEYS: usize, const BITS: usize>(
        &self,
        hashes: &[i32; CATS],
        one_hot: &[u16; CATS],
        bits: &mut [u8; BITS],
    ) {
        let p = &self.plan;
        let mut keys = [0u64; KEYS];
        // Indexes are below the frame's sizes (powers of two, checked when
        // the frame was chosen): the masks only spare bounds checks.
        for (key, j) in keys.iter_mut().zip(&p.projections) {
            let mut k = 0u64;
            for &i in &p.key_cats[j.cats.0 as usize..j.cats.1 as usize] {
                k = combine(k, widen_cat(hashes[i as usize & (CATS - 1)]));
            }
            for &b in &p.key_bits[j.bits.0 as usize..j.bits.1 as usize] {
                k = combine(k, u64::from(bits[b as usize & (BITS - 1)]));
            }
            for &(o, index) in &p.key_one_hots[j.one_hots.0 as usize..j.one_hots.1 as usize] {
                k = combine(k, u64::from(one_hot[o as usize & (CATS - 1)] == index));
            }
            *key = k;
        }
        // Table lookups are the cache misses of the CTR stage: ask for every
        // bucket first, so the misses overlap, then read them.
        for &(table, projection) in &p.lookups {
            p.tables[table as usize].prefetch(keys[projection as usize & (KEYS - 1)]);
        }
        let mut bucket = None;
        for c in &p.ctrs {
            let table = &p.tables[c.table as usize];
            if c.fresh {
                bucket = table.find(keys[c.projection as usize & (KEYS - 1)]);
            }
            let value = c.calc.value_at(table, bucket);
            let borders = &p.borders[c.borders.0 as usize..c.borders.1 as usize];
            let above = borders.partition_point(|&b| b < value);
            write_run(bits, c.bits as usize, borders.len(), above);
        }
    }
}

/// Writes `ones` ones then zeros over the `len` bytes at `at`, 16 bytes at a
/// time: the last copy may run up to 15 bytes past them, writing only zeros,
/// which the plan leaves room for and later features overwrite.
#[inline(always)]
fn write_run<const BITS: usize>(bits: &mut [u8; BITS], at: usize, len: usize, ones: usize) {
    let mut done = 0;
    while done < len {
        let n = ones.saturating_sub(done).min(RUN);
        bits[at + done..at + done + RUN].copy_from_slice(&RUNS[n]);
        done += RUN;
    }
}

/// The byte of condition `c`. Byte indexes are below the plan's `bit_count`,
/// which fits `BITS` (a power of two): the mask only spares the bounds check.
#[inline(always)]
fn bit<const BITS: usize>(bits: &[u8; BITS], c: u16) -> usize {
    usize::from(bits[c as usize & (BITS - 1)])
}

/// One-dimensional models, `D` levels per tree: the loop CatBoost models
/// spend their time in, unrolled. Leaves are summed in tree order.
#[inline(always)]
fn sum_trees<const D: usize, const BITS: usize>(p: &Plan, bits: &[u8; BITS]) -> f64 {
    let mut sum = 0.0;
    for (levels, &first) in p.splits.chunks_exact(D).zip(&p.first_leaf) {
        let mut index = 0;
        for (d, &c) in levels.iter().enumerate() {
            index |= bit(bits, c) << d;
        }
        sum += p.leaves[first as usize + index];
    }
    sum
}

fn sum_trees_any<const BITS: usize>(p: &Plan, bits: &[u8; BITS]) -> f64 {
    let mut sum = 0.0;
    for (levels, &first) in p.splits.chunks_exact(p.depth).zip(&p.first_leaf) {
        let mut index = 0;
        for (d, &c) in levels.iter().enumerate() {
            index |= bit(bits, c) << d;
        }
        sum += p.leaves[first as usize + index];
    }
    sum
}

fn sum_trees_dims<const BITS: usize>(p: &Plan, bits: &[u8; BITS], out: &mut [f64]) {
    let dim = p.dimension;
    out.fill(0.0);
    for (levels, &first) in p.splits.chunks_exact(p.depth).zip(&p.first_leaf) {
        let mut index = 0;
        for (d, &c) in levels.iter().enumerate() {
            index |= bit(bits, c) << d;
        }
        let at = first as usize + index * dim;
        for (o, leaf) in out.iter_mut().zip(&p.leaves[at..at + dim]) {
            *o += leaf;
        }
    }
}

impl Evaluator for Model {
    fn float_feature_count(&self) -> usize {
        self.float_count
    }

    fn cat_feature_count(&self) -> usize {
        self.cat_count
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn predict_raw(
        &self,
        floats: &[f32],
        cats: &[i32],
        out: &mut [f64],
    ) -> Result<(), PredictError> {
        self.check_input(floats.len(), cats.len(), self.dimension, out.len())?;
        self.finish(PredictionType::Raw, out, |raw| {
            self.raw_into(floats, cats, raw)
        });
        Ok(())
    }
}
