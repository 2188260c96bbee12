//! The native evaluator: a compiled CatBoost model scoring one document at a
//! time without touching the heap.
//!
//! Per document, mirroring CatBoost's CPU evaluator (`cpu/quantization.h`,
//! `cpu/evaluator_impl.cpp`):
//! 1. the categorical hashes the model uses are gathered (or computed from the
//!    strings) into a stack array;
//! 2. every used float feature is compared with its borders once, giving the
//!    number of borders below the value (NaN first replaced by -inf / +inf for
//!    `AsFalse` / `AsTrue` features that saw NaN in training); one-hot
//!    features give the position of the matching value; each CTR hashes its
//!    projection, looks the bucket up, computes its value and is binarized the
//!    same way. These small integers ("bins") live in a stack array;
//! 3. each distinct split condition (`bin >= threshold`, or `==` for one-hot)
//!    is evaluated once into a byte; each oblivious tree reads the bytes of
//!    its levels: level `d` sets bit `d` of the leaf index;
//! 4. leaf values are summed in tree order, then `scale * sum + bias`.

use std::collections::BTreeMap;
use std::path::Path;

use super::ctr::{CtrCalc, CtrTable};
use super::hash::{cat_hash, combine, widen_cat};
use super::prediction::{apply_prediction_type, output_len, Objective};
use super::{compile, Evaluator, ModelError, PredictError, PredictionError, PredictionType};

/// The scratch arrays are zeroed on every prediction, so they come in three
/// sizes: most models fit the small or medium frame, only the largest pay for
/// zeroing the full one.
const SMALL_SLOTS: usize = 256;
const SMALL_CATS: usize = 32;
const SMALL_CONDITIONS: usize = 1024;
const MEDIUM_SLOTS: usize = 1024;
const MEDIUM_CATS: usize = 128;
const MEDIUM_CONDITIONS: usize = 4096;
/// The most bins (used float features + one-hot features + CTRs) a model may
/// have; each takes 2 bytes of stack per prediction.
pub(crate) const MAX_SLOTS: usize = 4096;
/// The most categorical features a model may use (4 bytes of stack each).
pub(crate) const MAX_USED_CATS: usize = 1024;
/// The most distinct split conditions a model may have (1 byte of stack each).
pub(crate) const MAX_CONDITIONS: usize = 16384;
/// The most output dimensions (classes) a model may have.
pub(crate) const MAX_DIMENSION: usize = 256;

/// A used float feature and where its borders are.
#[derive(Debug)]
pub(crate) struct FloatSlot {
    pub(crate) feature: u32,
    /// What NaN is replaced with before comparing (NaN itself for `AsIs`,
    /// which compares below every border).
    pub(crate) nan_fill: f32,
    pub(crate) borders: (u32, u32),
}

/// A one-hot encoded categorical feature: its bin is 1 + the position of the
/// matching value, 0 when none matches.
#[derive(Debug)]
pub(crate) struct OneHotSlot {
    /// Index into the used-categorical array.
    pub(crate) cat: u32,
    pub(crate) values: (u32, u32),
}

/// A CTR feature: projection, table, formula, borders.
#[derive(Debug)]
pub(crate) struct CtrSlot {
    pub(crate) calc: CtrCalc,
    pub(crate) table: u32,
    pub(crate) projection: (u32, u32),
    pub(crate) borders: (u32, u32),
}

/// One element of a CTR projection, in CatBoost's hashing order: categorical
/// values first, then binarized float features, then one-hot matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ProjectionElement {
    Cat(u32),
    Float { slot: u16, threshold: u16 },
    OneHot { slot: u16, index: u16 },
}

/// A split condition against a bin: `bin >= threshold`, or `bin ==
/// threshold` for one-hot splits. Each distinct condition is evaluated once
/// per document; trees read the resulting bits.
///
/// Field order matters: sorting puts all `>=` conditions first, then the
/// one-hot ones, so each kind is evaluated in its own branch-free loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Split {
    pub(crate) equal: bool,
    pub(crate) slot: u16,
    pub(crate) threshold: u16,
}

/// A `>=` condition in the evaluation loop's compact form.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Condition {
    pub(crate) slot: u16,
    pub(crate) threshold: u16,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Tree {
    pub(crate) depth: u32,
    pub(crate) first_split: u32,
    pub(crate) first_leaf: usize,
}

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
    /// Categorical feature index of each used-categorical position.
    pub(crate) used_cats: Vec<u32>,
    pub(crate) float_slots: Vec<FloatSlot>,
    pub(crate) one_hot_slots: Vec<OneHotSlot>,
    pub(crate) ctr_slots: Vec<CtrSlot>,
    pub(crate) float_borders: Vec<f32>,
    pub(crate) ctr_borders: Vec<f32>,
    pub(crate) one_hot_values: Vec<i32>,
    pub(crate) projection: Vec<ProjectionElement>,
    pub(crate) tables: Vec<CtrTable>,
    /// Distinct `>=` split conditions, sorted by bin, then the distinct `==`
    /// (one-hot) ones: bit `i` of a document is condition `i`.
    pub(crate) conditions: Vec<Condition>,
    /// How many of `conditions` are `>=` conditions.
    pub(crate) ordered_conditions: usize,
    /// Per tree level, the index of its condition.
    pub(crate) splits: Vec<u16>,
    pub(crate) trees: Vec<Tree>,
    pub(crate) leaves: Vec<f64>,
    pub(crate) scale: f64,
    pub(crate) bias: Vec<f64>,
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
        self.trees.len()
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
        let slots = self.float_slots.len() + self.one_hot_slots.len() + self.ctr_slots.len();
        let used_cats = self.used_cats.len();
        let conditions = self.conditions.len();
        if slots <= SMALL_SLOTS && used_cats <= SMALL_CATS && conditions <= SMALL_CONDITIONS {
            self.raw_with::<SMALL_SLOTS, SMALL_CATS, SMALL_CONDITIONS, C>(floats, cats, out);
        } else if slots <= MEDIUM_SLOTS
            && used_cats <= MEDIUM_CATS
            && conditions <= MEDIUM_CONDITIONS
        {
            self.raw_with::<MEDIUM_SLOTS, MEDIUM_CATS, MEDIUM_CONDITIONS, C>(floats, cats, out);
        } else {
            self.raw_with::<MAX_SLOTS, MAX_USED_CATS, MAX_CONDITIONS, C>(floats, cats, out);
        }
    }

    #[inline(always)]
    fn raw_with<const SLOTS: usize, const CATS: usize, const BITS: usize, C: CatSource>(
        &self,
        floats: &[f32],
        cats: C,
        out: &mut [f64],
    ) {
        let mut hashes = [0i32; CATS];
        for (h, &c) in hashes.iter_mut().zip(&self.used_cats) {
            *h = cats.hash(c as usize);
        }
        let mut bins = [0u16; SLOTS];
        self.binarize(floats, &hashes, &mut bins);
        let mut bits = [0u8; BITS];
        let (ordered, one_hot) = self.conditions.split_at(self.ordered_conditions);
        let (ordered_bits, one_hot_bits) = bits.split_at_mut(ordered.len());
        for (bit, c) in ordered_bits.iter_mut().zip(ordered) {
            *bit = u8::from(bins[c.slot as usize] >= c.threshold);
        }
        for (bit, c) in one_hot_bits.iter_mut().zip(one_hot) {
            *bit = u8::from(bins[c.slot as usize] == c.threshold);
        }
        self.sum_trees(&bits, out);
        for (o, b) in out.iter_mut().zip(&self.bias) {
            *o = self.scale * *o + b;
        }
    }

    #[inline(always)]
    fn binarize(&self, floats: &[f32], hashes: &[i32], bins: &mut [u16]) {
        let mut slot = 0;
        for f in &self.float_slots {
            let mut v = floats[f.feature as usize];
            if v.is_nan() {
                v = f.nan_fill;
            }
            let borders = &self.float_borders[f.borders.0 as usize..f.borders.1 as usize];
            // Borders are sorted at load, so "borders below v" is the count
            // of `v > border` CatBoost computes (0 for NaN).
            bins[slot] = borders.partition_point(|&b| b < v) as u16;
            slot += 1;
        }
        for o in &self.one_hot_slots {
            let h = hashes[o.cat as usize];
            let values = &self.one_hot_values[o.values.0 as usize..o.values.1 as usize];
            bins[slot] = values
                .iter()
                .position(|&v| v == h)
                .map_or(0, |p| p as u16 + 1);
            slot += 1;
        }
        // Table lookups are the cache misses of the CTR stage: ask for every
        // bucket first, so the misses overlap, then read them.
        let mut projection = (u32::MAX, u32::MAX);
        let mut key = 0u64;
        for c in &self.ctr_slots {
            if c.projection != projection {
                projection = c.projection;
                key = self.projection_key(c.projection, hashes, bins);
            }
            self.tables[c.table as usize].prefetch(key);
        }
        // CTR features of one projection (and often one table, with
        // different priors) are adjacent: hash and look up once for them.
        let mut projection = (u32::MAX, u32::MAX);
        let mut lookup: (u32, Option<usize>) = (u32::MAX, None);
        for c in &self.ctr_slots {
            if c.projection != projection {
                projection = c.projection;
                key = self.projection_key(c.projection, hashes, bins);
                lookup.0 = u32::MAX;
            }
            let table = &self.tables[c.table as usize];
            if lookup.0 != c.table {
                lookup = (c.table, table.find(key));
            }
            let value = c.calc.value_at(table, lookup.1);
            let borders = &self.ctr_borders[c.borders.0 as usize..c.borders.1 as usize];
            bins[slot] = borders.partition_point(|&b| b < value) as u16;
            slot += 1;
        }
    }

    /// The bucket key of a CTR projection: CatBoost's `CalcHash` chain over
    /// the categorical hashes, then binarized floats, then one-hot matches.
    #[inline(always)]
    fn projection_key(&self, range: (u32, u32), hashes: &[i32], bins: &[u16]) -> u64 {
        let mut key = 0u64;
        for e in &self.projection[range.0 as usize..range.1 as usize] {
            let element = match *e {
                ProjectionElement::Cat(i) => widen_cat(hashes[i as usize]),
                ProjectionElement::Float { slot, threshold } => {
                    u64::from(bins[slot as usize] >= threshold)
                }
                ProjectionElement::OneHot { slot, index } => {
                    u64::from(bins[slot as usize] == index)
                }
            };
            key = combine(key, element);
        }
        key
    }

    #[inline(always)]
    fn leaf_index(&self, tree: &Tree, bits: &[u8]) -> usize {
        let first = tree.first_split as usize;
        let levels = &self.splits[first..first + tree.depth as usize];
        let bit = |c: u16| usize::from(bits[c as usize]);
        // Depth 6 is CatBoost's default: unrolled.
        if let &[a, b, c, d, e, f] = levels {
            return bit(a) | bit(b) << 1 | bit(c) << 2 | bit(d) << 3 | bit(e) << 4 | bit(f) << 5;
        }
        let mut index = 0usize;
        for (depth, &c) in levels.iter().enumerate() {
            index |= bit(c) << depth;
        }
        index
    }

    #[inline(always)]
    fn sum_trees(&self, bits: &[u8], out: &mut [f64]) {
        let dim = self.dimension;
        if dim == 1 {
            // Leaf loads are the cache misses of a large model. Computing a
            // chunk of leaf positions first lets the loads of the chunk
            // overlap instead of each waiting behind its tree's splits. The
            // sum keeps tree order, so the result is unchanged.
            const CHUNK: usize = 32;
            let mut at = [0usize; CHUNK];
            let mut sum = 0.0;
            for trees in self.trees.chunks(CHUNK) {
                for (a, tree) in at.iter_mut().zip(trees) {
                    *a = tree.first_leaf + self.leaf_index(tree, bits);
                }
                for &a in &at[..trees.len()] {
                    sum += self.leaves[a];
                }
            }
            out[0] = sum;
            return;
        }
        out.fill(0.0);
        for tree in &self.trees {
            let at = tree.first_leaf + self.leaf_index(tree, bits) * dim;
            for (o, leaf) in out.iter_mut().zip(&self.leaves[at..at + dim]) {
                *o += leaf;
            }
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
