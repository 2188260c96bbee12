//! Several one-dimensional models scored as one on shared inputs: the
//! scorer's models read the same request features, and models trained on the
//! same data ask many of the same questions. The shipped bot and spoof
//! models binarize the same 38 floats (205 distinct borders between them
//! against 158 + 158) and hash 13 of their 14 CTR projections alike.
//!
//! At load, [`ModelGroup::build`] merges the members' [`Conditions`] into one
//! (`merge.rs`): each distinct float border, one-hot condition, projection
//! key and CTR condition once, and for a projection several members use,
//! one table holding all their CTR bits side by side, so one probe serves
//! every member. Each member's trees are then re-pointed at the merged bits. Per document the merged
//! conditions run once and each member sums its own leaves in its own tree
//! order (two at a time, side by side), so every member's raw value is bit
//! for bit what the model alone gives: the merged bits are the same
//! questions with the same answers, only stored once.

use super::binarize::scale_and_bias;
use super::chunks::Chain;
use super::error::ShapeError;
use super::evaluator::Evaluator;
use super::layout::Trees;
use super::merge::{merge, Placed};
use super::native::Model;
use super::plan::Conditions;
use super::trees::{sum_pair, Kernel};

/// One member's trees over the merged bits, and its leaves.
#[derive(Debug)]
struct Member {
    trees: Trees,
    leaves: Vec<f64>,
    scale: f64,
    bias: f64,
}

/// Models evaluated together on one float array and one array of
/// categorical hashes (the scorer's feature schema), each member reading its
/// inputs from given positions of them. What the members share (float
/// borders, one-hot conditions, CTR projections over the same inputs) is
/// computed once per document; each member's raw value is bit for bit what
/// [`Model::predict_raw_with`] gives for it alone.
///
/// Built once ([`ModelGroup::build`]); a prediction never allocates.
#[derive(Debug)]
pub struct ModelGroup {
    conditions: Conditions,
    members: Vec<Member>,
    float_count: usize,
    cat_count: usize,
}

/// A model and, for each of its float and categorical inputs, its position
/// in the group's input arrays.
pub struct GroupInput<'a> {
    /// The model (one-dimensional).
    pub model: &'a Model,
    /// For each of the model's float features, by index, its position in
    /// the group's float array.
    pub floats: &'a [usize],
    /// For each of the model's categorical features, by index, its position
    /// in the group's array of hashes.
    pub cats: &'a [usize],
}

impl ModelGroup {
    /// Merges the members' conditions. `float_count` and `cat_count` are the
    /// lengths of the input arrays [`ModelGroup::predict_raw`] takes; every
    /// position in `inputs` must be below them. Fails (with a message) when
    /// a member is not one-dimensional, a position is out of range, or the
    /// merged conditions exceed the evaluator's limits; the caller then
    /// scores the members in smaller groups.
    pub fn build(
        inputs: &[GroupInput<'_>],
        float_count: usize,
        cat_count: usize,
    ) -> Result<ModelGroup, String> {
        for (m, input) in inputs.iter().enumerate() {
            let plan = input.model.plan();
            if plan.dimension != 1 {
                return Err(format!("member {m} has {} dimensions", plan.dimension));
            }
            let (floats, cats) = (
                input.model.float_feature_count(),
                input.model.cat_feature_count(),
            );
            if input.floats.len() != floats || input.cats.len() != cats {
                return Err(format!(
                    "member {m}'s input positions do not match its features"
                ));
            }
            if input.floats.iter().any(|&f| f >= float_count)
                || input.cats.iter().any(|&c| c >= cat_count)
            {
                return Err(format!("member {m} reads inputs out of range"));
            }
        }
        let placed: Vec<Placed<'_>> = inputs
            .iter()
            .map(|i| Placed {
                plan: i.model.plan(),
                floats: i.floats,
                cats: i.cats,
            })
            .collect();
        let (conditions, trees) = merge(&placed)?;
        let members = placed
            .iter()
            .zip(trees)
            .map(|(p, trees)| Member {
                trees,
                leaves: p.plan.leaves.clone(),
                scale: p.plan.scale,
                bias: p.plan.bias[0],
            })
            .collect();
        Ok(ModelGroup {
            conditions,
            members,
            float_count,
            cat_count,
        })
    }

    /// How many models the group scores.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the group has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Condition bits per document, the always-zero bit included: fewer
    /// than the members' own counts together when they share conditions.
    pub fn condition_bits(&self) -> usize {
        self.conditions.bit_count
    }

    /// Whether every member's trees fit the AVX-512 kernel's byte table (at
    /// most 4096 conditions): a group too large for it is slower than two
    /// groups that fit.
    pub(crate) fn fits_byte_kernel(&self) -> bool {
        self.members.iter().all(|m| !m.trees.bytes.is_empty())
    }

    /// [`ModelGroup::predict_raw_with`] with the widest kernel this CPU has.
    #[inline]
    pub fn predict_raw(
        &self,
        floats: &[f32],
        cats: &[i32],
        out: &mut [f64],
    ) -> Result<(), ShapeError> {
        self.predict_raw_with(Kernel::detect(), floats, cats, out)
    }

    /// The members' raw values (`RawFormulaVal`) for one document, `out[i]`
    /// for member `i`: bit for bit what each model's
    /// [`Model::predict_raw_with`] gives with the same kernel on the inputs
    /// at its positions. `floats` and `cats` hold the group's whole input
    /// arrays; values past the members' in `out` are left alone. Never
    /// allocates.
    pub fn predict_raw_with(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: &[i32],
        out: &mut [f64],
    ) -> Result<(), ShapeError> {
        ShapeError::check(
            (self.float_count, floats.len()),
            (self.cat_count, cats.len()),
            (self.members.len(), out.len()),
        )?;
        let out = &mut out[..self.members.len()];
        self.conditions.with_bits(kernel, floats, cats, |words| {
            fn chain<'a>(m: &'a Member, words: &'a [u64]) -> Chain<'a> {
                Chain {
                    trees: &m.trees,
                    words,
                    leaves: &m.leaves,
                }
            }
            let mut pairs = self.members.chunks_exact(2);
            let mut outs = out.chunks_exact_mut(2);
            for (pair, o) in (&mut pairs).zip(&mut outs) {
                // Each sum is a chain of dependent additions: two run side
                // by side.
                (o[0], o[1]) = sum_pair(kernel, &chain(&pair[0], words), &chain(&pair[1], words));
            }
            if let ([m], [o]) = (pairs.remainder(), outs.into_remainder()) {
                *o = m.trees.sum(kernel, words, &m.leaves);
            }
        });
        for (o, m) in out.iter_mut().zip(&self.members) {
            scale_and_bias(
                m.scale,
                std::slice::from_ref(&m.bias),
                std::slice::from_mut(o),
            );
        }
        Ok(())
    }
}
