//! The native evaluator: a compiled CatBoost model scoring one document at a
//! time without touching the heap.
//!
//! Loading runs one way: `json.rs` parses, `compile.rs` validates into
//! `parts.rs`'s types, `plan.rs` lays them out, and this module evaluates.
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

use std::hint::select_unpredictable;
use std::path::Path;

use super::error::{ModelError, ShapeError};
use super::hash::{cat_hash, widen_cat};
use super::limits::{MAX_BITS, MAX_DIMENSION, MAX_USED_CATS};
use super::parts::Info;
use super::plan::{or_pattern, set_ones, Plan};
use super::prediction::{apply_prediction_type, output_len, Objective};
use super::prediction::{PredictionError, PredictionType};
use super::simd::prefetch;
use super::trees::{sum_pair, Chain, Kernel};
use super::{compile, Evaluator};

/// The scratch arrays are zeroed on every prediction, so they come in three
/// sizes: most models fit the small or medium frame, only the largest pay for
/// zeroing the full one. (categorical values, 64-bit words of condition bits)
const SMALL: (usize, usize) = (32, 16);
const MEDIUM: (usize, usize) = (128, 64);
const LARGEST: (usize, usize) = (MAX_USED_CATS, MAX_BITS / 64);
/// CTR lookups are resolved in chunks: the keys of a chunk are computed and
/// their records prefetched, so the cache misses overlap, then read.
const CHUNK: usize = 16;

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
        if floats != self.info.float_count {
            return Err(ShapeError::FloatCount {
                expected: self.info.float_count,
                got: floats,
            });
        }
        if cats != self.info.cat_count {
            return Err(ShapeError::CatCount {
                expected: self.info.cat_count,
                got: cats,
            });
        }
        if out < need {
            return Err(ShapeError::OutputLen {
                expected: need,
                got: out,
            });
        }
        Ok(())
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
        let fits = |(c, w): (usize, usize)| p.used_cats.len() <= c && p.bit_count <= w * 64;
        if fits(SMALL) {
            self.raw_with::<{ SMALL.0 }, { SMALL.1 }, C>(kernel, floats, cats, out);
        } else if fits(MEDIUM) {
            self.raw_with::<{ MEDIUM.0 }, { MEDIUM.1 }, C>(kernel, floats, cats, out);
        } else {
            self.raw_with::<{ LARGEST.0 }, { LARGEST.1 }, C>(kernel, floats, cats, out);
        }
    }

    #[inline(always)]
    fn raw_with<const CATS: usize, const WORDS: usize, C: CatSource>(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: C,
        out: &mut [f64],
    ) {
        let p = &self.plan;
        let mut words = [0u64; WORDS];
        self.conditions::<CATS, C>(kernel, floats, cats, &mut words);
        if self.info.dimension == 1 {
            out[0] = p.trees.sum(kernel, &words, &p.leaves);
        } else {
            p.trees.sum_dims(kernel, &words, &p.leaves, out);
        }
        self.scale_and_bias(out);
    }

    fn scale_and_bias(&self, out: &mut [f64]) {
        let p = &self.plan;
        for (o, b) in out.iter_mut().zip(&p.bias) {
            *o = p.scale * *o + b;
        }
    }

    /// Steps 1 to 3: the document's condition bits, into `words` (zeroed).
    #[inline(always)]
    fn conditions<const CATS: usize, C: CatSource>(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: C,
        words: &mut [u64],
    ) {
        let p = &self.plan;
        let mut hashes = [0i32; CATS];
        for (h, &c) in hashes.iter_mut().zip(&p.used_cats) {
            *h = cats.hash(c as usize);
        }
        p.float_borders.set_bits(kernel, floats, words);
        let mut one_hot = [0u16; CATS];
        for (m, o) in one_hot.iter_mut().zip(&p.one_hots) {
            let h = hashes[o.cat as usize];
            let values = &p.one_hot_values[o.values.0 as usize..o.values.1 as usize];
            *m = values
                .iter()
                .position(|&v| v == h)
                .map_or(0, |i| i as u16 + 1);
        }
        self.ctrs(&hashes, &one_hot, words);
        let first = p.one_hot_bits as usize;
        for (i, &(o, index)) in p.one_hot_conditions.iter().enumerate() {
            if one_hot[o as usize] == index {
                set_ones(words, first + i, 1);
            }
        }
    }

    /// Whether [`Model::predict_pair`] can score this model with `other`:
    /// both one-dimensional.
    pub(crate) fn pairs_with(&self, other: &Model) -> bool {
        self.info.dimension == 1 && other.info.dimension == 1
    }

    /// [`Model::predict`] of this model and `other` on one document each,
    /// `out[0]` this model's value and `out[1]` the other's, bit for bit
    /// what two `predict` calls give: the two sums of leaves run side by
    /// side ([`sum_pair`]). Both models must be one-dimensional
    /// ([`Model::pairs_with`]). An error names the model (0 or 1) and
    /// nothing is written.
    pub(crate) fn predict_pair(
        &self,
        other: &Model,
        inputs: [(&[f32], &[i32], PredictionType); 2],
        out: &mut [f64; 2],
    ) -> Result<(), (usize, PredictionError)> {
        assert!(
            self.pairs_with(other),
            "predict_pair takes one-dimensional models"
        );
        for (i, (m, (floats, cats, ty))) in [self, other].into_iter().zip(inputs).enumerate() {
            m.check(floats.len(), cats.len(), ty, 1)
                .map_err(|e| (i, e))?;
        }
        let [(floats_a, cats_a, ty_a), (floats_b, cats_b, ty_b)] = inputs;
        let (a, b) = (&self.plan, &other.plan);
        let fits = |(c, w): (usize, usize)| {
            [a, b]
                .iter()
                .all(|p| p.used_cats.len() <= c && p.bit_count <= w * 64)
        };
        let mut raw = [0.0; 2];
        let pair = (other, (floats_a, cats_a), (floats_b, cats_b), &mut raw);
        if fits(SMALL) {
            self.raw_pair::<{ SMALL.0 }, { SMALL.1 }>(pair);
        } else if fits(MEDIUM) {
            self.raw_pair::<{ MEDIUM.0 }, { MEDIUM.1 }>(pair);
        } else {
            self.raw_pair::<{ LARGEST.0 }, { LARGEST.1 }>(pair);
        }
        apply_prediction_type(ty_a, &mut raw[..1]);
        apply_prediction_type(ty_b, &mut raw[1..]);
        *out = raw;
        Ok(())
    }

    #[allow(clippy::type_complexity)]
    #[inline(always)]
    fn raw_pair<const CATS: usize, const WORDS: usize>(
        &self,
        (other, (floats_a, cats_a), (floats_b, cats_b), out): (
            &Model,
            (&[f32], &[i32]),
            (&[f32], &[i32]),
            &mut [f64; 2],
        ),
    ) {
        let (mut words_a, mut words_b) = ([0u64; WORDS], [0u64; WORDS]);
        let kernel = Kernel::detect();
        self.conditions::<CATS, _>(kernel, floats_a, cats_a, &mut words_a);
        other.conditions::<CATS, _>(kernel, floats_b, cats_b, &mut words_b);
        fn chain<'a>(m: &'a Model, words: &'a [u64]) -> Chain<'a> {
            Chain {
                trees: &m.plan.trees,
                words,
                leaves: &m.plan.leaves,
            }
        }
        let (sum_a, sum_b) = sum_pair(
            kernel,
            &chain(self, &words_a[..]),
            &chain(other, &words_b[..]),
        );
        out[0] = sum_a;
        out[1] = sum_b;
        self.scale_and_bias(&mut out[..1]);
        other.scale_and_bias(&mut out[1..]);
    }

    /// The key of projection `j`: CatBoost's `CalcHash` fold over its
    /// categorical hashes, float conditions and one-hot matches, in that
    /// order, computed as the weighted sum it equals
    /// ([`element_weight`](super::hash::element_weight)).
    /// `cat_values[i]` is used categorical `i` widened as CatBoost widens
    /// it.
    #[inline(always)]
    fn key(&self, j: usize, cat_values: &[u64], one_hot: &[u16], words: &[u64]) -> u64 {
        let p = &self.plan;
        let j = p.projections[j];
        let (cats, bits, one_hots) = (
            usize::from(j.cats),
            usize::from(j.bits),
            usize::from(j.one_hots),
        );
        let elements = &p.key_elements[j.start as usize..][..cats + bits + one_hots];
        let (cat_elements, rest) = elements.split_at(cats);
        let (bit_elements, one_hot_elements) = rest.split_at(bits);
        let mut k = 0u64;
        for &(w, i) in cat_elements {
            k = k.wrapping_add(w.wrapping_mul(cat_values[i as usize]));
        }
        // The conditions are the document's: a branch on them would be
        // mispredicted about half the time, a select never is.
        for &(w, b) in bit_elements {
            let bit = (words[b as usize / 64] >> (b % 64)) & 1 != 0;
            k = k.wrapping_add(select_unpredictable(bit, w, 0));
        }
        for &(w, e) in one_hot_elements {
            let matched = one_hot[(e >> 16) as usize] == e as u16;
            k = k.wrapping_add(select_unpredictable(matched, w, 0));
        }
        k
    }

    /// Hashes each projection once per chunk of lookups, prefetches the
    /// chunk's records, then ORs each bucket's CTR bits into the array.
    #[inline(always)]
    fn ctrs<const CATS: usize>(&self, hashes: &[i32; CATS], one_hot: &[u16], words: &mut [u64]) {
        if self.plan.lookups.is_empty() {
            return;
        }
        let mut cat_values = [0u64; CATS];
        for (v, &h) in cat_values.iter_mut().zip(hashes) {
            *v = widen_cat(h);
        }
        let mut probes = [(0u64, 0usize); CHUNK];
        for chunk in self.plan.lookups.chunks(CHUNK) {
            let mut last = u32::MAX;
            let mut key = 0;
            for (probe, l) in probes.iter_mut().zip(chunk) {
                if l.projection != last {
                    last = l.projection;
                    key = self.key(last as usize, &cat_values, one_hot, words);
                }
                let home = l.bits.home(key);
                prefetch(l.bits.record(home));
                *probe = (key, home);
            }
            for (&(key, home), l) in probes.iter().zip(chunk) {
                or_pattern(words, l.bit as usize, l.bits.pattern(key, home));
            }
        }
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
