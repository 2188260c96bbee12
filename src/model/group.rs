//! Several one-dimensional models scored as one on shared inputs: the
//! scorer's models read the same request features, and models trained on the
//! same data ask many of the same questions. The shipped bot and spoof
//! models binarize the same 38 floats (205 distinct borders between them
//! against 158 + 158) and hash 13 of their 14 CTR projections alike.
//!
//! At load, [`ModelGroup::build`] merges the members' [`Conditions`] into one:
//! each distinct float border, one-hot condition and projection key once,
//! and for a projection several members use, one table holding all their
//! CTRs' bits side by side, so one probe serves every member. Each member's
//! trees are then re-pointed at the merged bits. Per document the merged
//! conditions run once and each member sums its own leaves in its own tree
//! order (two at a time, side by side), so every member's raw value is bit
//! for bit what the model alone gives: the merged bits are the same
//! questions with the same answers, only stored once.

use std::collections::BTreeMap;

use super::binarize::scale_and_bias;
use super::ctr::BucketBits;
use super::error::ShapeError;
use super::layout::Trees;
use super::limits::{MAX_BITS, MAX_USED_CATS};
use super::plan::{Conditions, Lookup, OneHotMatch, Plan, Projection};
use super::trees::{sum_pair, Chain, Kernel};
use super::{Evaluator, Model};

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

/// A projection as the group sees it: its element counts (categorical,
/// float, one-hot) and its weighted elements over the group's inputs.
type ProjectionKey = ([u16; 3], Vec<(u64, u32)>);

/// Old bit → merged bit, per member.
struct Remap(Vec<u32>);

impl Remap {
    const UNSET: u32 = u32::MAX;

    fn get(&self, bit: u32) -> Result<u32, String> {
        match self.0.get(bit as usize) {
            Some(&b) if b != Self::UNSET => Ok(b),
            _ => Err(format!(
                "condition bit {bit} has no place in the merged conditions"
            )),
        }
    }
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
        let plans: Vec<&Plan> = inputs.iter().map(|i| i.model.plan()).collect();
        let mut merged = Conditions::default();
        let mut remaps: Vec<Remap> = plans
            .iter()
            .map(|p| Remap(vec![Remap::UNSET; p.conditions.bit_count]))
            .collect();

        // Categorical inputs: the group's positions, each once.
        let cat_of = |m: usize, pos: u32| {
            inputs[m].cats[plans[m].conditions.used_cats[pos as usize] as usize] as u32
        };
        let mut used: Vec<u32> = (0..plans.len())
            .flat_map(|m| (0..plans[m].conditions.used_cats.len() as u32).map(move |p| (m, p)))
            .map(|(m, p)| cat_of(m, p))
            .collect();
        used.sort_unstable();
        used.dedup();
        if used.len() > MAX_USED_CATS {
            return Err(format!(
                "the members use {} categorical features",
                used.len()
            ));
        }
        let used_pos = |m: usize, pos: u32| used.binary_search(&cat_of(m, pos)).unwrap_or(0) as u32;

        // Float borders: one run per (input, NaN fill), the union of the
        // members' borders; equal borders (same bits) merge.
        let mut runs: BTreeMap<(u32, u32), Vec<f32>> = BTreeMap::new();
        for (m, p) in plans.iter().enumerate() {
            let fb = &p.conditions.float_borders;
            for &(feature, fill, start, end) in &fb.runs {
                let input = inputs[m].floats[feature as usize] as u32;
                runs.entry((input, fill.to_bits()))
                    .or_default()
                    .extend_from_slice(&fb.borders[start as usize..end as usize]);
            }
        }
        let mut run_start = BTreeMap::new();
        for (&(input, fill), borders) in runs.iter_mut() {
            borders.sort_unstable_by(f32::total_cmp);
            borders.dedup_by_key(|b| b.to_bits());
            run_start.insert((input, fill), merged.float_borders.bit_count() as u32);
            merged
                .float_borders
                .push_run(input, f32::from_bits(fill), borders);
        }
        merged.float_borders.pad();
        for (m, p) in plans.iter().enumerate() {
            let fb = &p.conditions.float_borders;
            for &(feature, fill, start, end) in &fb.runs {
                let key = (inputs[m].floats[feature as usize] as u32, fill.to_bits());
                let run = &runs[&key];
                for bit in start..end {
                    let border = fb.borders[bit as usize];
                    let at = run
                        .binary_search_by(|b| b.total_cmp(&border))
                        .map_err(|_| "a float border went missing".to_owned())?;
                    remaps[m].0[bit as usize] = run_start[&key] + at as u32;
                }
            }
        }

        // One-hot features: one per (categorical input, value list).
        let mut one_hot_of: Vec<Vec<u32>> = Vec::with_capacity(plans.len());
        for (m, p) in plans.iter().enumerate() {
            let c = &p.conditions;
            let mut of = Vec::with_capacity(c.one_hots.len());
            for o in &c.one_hots {
                let cat = used_pos(m, o.cat);
                let values = &c.one_hot_values[o.values.0 as usize..o.values.1 as usize];
                let same = merged.one_hots.iter().position(|g| {
                    g.cat == cat
                        && &merged.one_hot_values[g.values.0 as usize..g.values.1 as usize]
                            == values
                });
                of.push(match same {
                    Some(i) => i as u32,
                    None => {
                        let start = merged.one_hot_values.len() as u32;
                        merged.one_hot_values.extend_from_slice(values);
                        merged.one_hots.push(OneHotMatch {
                            cat,
                            values: (start, merged.one_hot_values.len() as u32),
                        });
                        (merged.one_hots.len() - 1) as u32
                    }
                });
            }
            one_hot_of.push(of);
        }

        // Projections: equal when their elements, mapped to the group's
        // inputs and bits, are equal (then so is every document's key).
        let mut projection_of: Vec<Vec<u32>> = Vec::with_capacity(plans.len());
        let mut distinct: BTreeMap<ProjectionKey, u32> = BTreeMap::new();
        for (m, p) in plans.iter().enumerate() {
            let c = &p.conditions;
            let mut of = Vec::with_capacity(c.projections.len());
            for j in &c.projections {
                let (cats, bits) = (usize::from(j.cats), usize::from(j.bits));
                let n = cats + bits + usize::from(j.one_hots);
                let mut elements = Vec::with_capacity(n);
                for (k, &(w, v)) in c.key_elements[j.start as usize..][..n].iter().enumerate() {
                    let v = if k < cats {
                        used_pos(m, v)
                    } else if k < cats + bits {
                        remaps[m].get(v)?
                    } else {
                        one_hot_of[m][(v >> 16) as usize] << 16 | (v & 0xffff)
                    };
                    elements.push((w, v));
                }
                let next = distinct.len() as u32;
                let id = *distinct
                    .entry(([j.cats, j.bits, j.one_hots], elements))
                    .or_insert(next);
                of.push(id);
            }
            projection_of.push(of);
        }
        let mut by_id: Vec<_> = distinct.into_iter().collect();
        by_id.sort_by_key(|(_, id)| *id);
        for (([cats, bits, one_hots], elements), _) in by_id {
            merged.projections.push(Projection {
                start: merged.key_elements.len() as u32,
                cats,
                bits,
                one_hots,
            });
            merged.key_elements.extend(elements);
        }

        // CTR bits: per projection, one table for every member's lookups
        // of it, so one probe serves them all. A CTR condition is a function
        // of the bucket; two conditions with the same answer for every key
        // of the tables and for unseen keys are the same question (Counter
        // CTRs of models trained on the same data, a model grouped with
        // itself) and get one bit.
        let mut members_of: Vec<Vec<(usize, &Lookup)>> = vec![Vec::new(); merged.projections.len()];
        for (m, p) in plans.iter().enumerate() {
            for l in &p.conditions.lookups {
                members_of[projection_of[m][l.projection as usize] as usize].push((m, l));
            }
        }
        let mut next_bit = merged.float_borders.bit_count();
        for (projection, members) in members_of.iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            let mut keys: Vec<u64> = members.iter().flat_map(|(_, l)| l.bits.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            // Each condition's answers, key by key, then for unseen keys.
            let answers = |l: &Lookup, k: u32| -> Vec<bool> {
                let answer = |key| (l.bits.lookup(key) >> k) & 1 == 1;
                keys.iter()
                    .map(|&key| answer(Some(key)))
                    .chain([answer(None)])
                    .collect()
            };
            let mut distinct: Vec<Vec<bool>> = Vec::new();
            for &(m, l) in members {
                for k in 0..l.width {
                    let a = answers(l, k);
                    let at = match distinct.iter().position(|d| *d == a) {
                        Some(at) => at,
                        None => {
                            distinct.push(a);
                            distinct.len() - 1
                        }
                    };
                    remaps[m].0[(l.bit + k) as usize] = (next_bit + at) as u32;
                }
            }
            let width = distinct.len();
            for piece in 0..width.div_ceil(64) {
                let bits = &distinct[64 * piece..width.min(64 * (piece + 1))];
                let pattern = |key: Option<u64>| {
                    let i = key.map_or(keys.len(), |key| {
                        keys.binary_search(&key).unwrap_or(keys.len())
                    });
                    bits.iter()
                        .enumerate()
                        .fold(0u64, |p, (j, answers)| p | u64::from(answers[i]) << j)
                };
                merged.lookups.push(Lookup {
                    projection: projection as u32,
                    bit: (next_bit + 64 * piece) as u32,
                    width: bits.len() as u32,
                    bits: BucketBits::build(&keys, pattern),
                });
            }
            next_bit += width;
        }

        // One-hot conditions after every run, then the zero bit.
        let mut conditions: Vec<(u32, u16)> = Vec::new();
        for (m, p) in plans.iter().enumerate() {
            conditions.extend(
                p.conditions
                    .one_hot_conditions
                    .iter()
                    .map(|&(o, index)| (one_hot_of[m][o as usize], index)),
            );
        }
        conditions.sort_unstable();
        conditions.dedup();
        merged.one_hot_bits = next_bit as u32;
        for (m, p) in plans.iter().enumerate() {
            let c = &p.conditions;
            for (i, &(o, index)) in c.one_hot_conditions.iter().enumerate() {
                let at = conditions
                    .binary_search(&(one_hot_of[m][o as usize], index))
                    .unwrap_or(0);
                remaps[m].0[c.one_hot_bits as usize + i] = (next_bit + at) as u32;
            }
        }
        let zero = next_bit + conditions.len();
        merged.one_hot_conditions = conditions;
        merged.bit_count = zero + 1;
        if merged.bit_count > MAX_BITS {
            return Err(format!(
                "the members use {zero} distinct conditions; one group holds {}",
                MAX_BITS - 1
            ));
        }
        merged.used_cats = used;

        let mut members = Vec::with_capacity(plans.len());
        for (m, p) in plans.iter().enumerate() {
            remaps[m].0[p.conditions.bit_count - 1] = zero as u32;
            let trees = p
                .trees
                .levels()
                .into_iter()
                .map(|(first, splits)| {
                    let splits = splits
                        .into_iter()
                        .map(|b| remaps[m].get(b))
                        .collect::<Result<Vec<u32>, String>>()?;
                    Ok((first, splits))
                })
                .collect::<Result<Vec<_>, String>>()?;
            members.push(Member {
                trees: Trees::build(&trees, zero as u32, 1),
                leaves: p.leaves.clone(),
                scale: p.scale,
                bias: p.bias[0],
            });
        }
        Ok(ModelGroup {
            conditions: merged,
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
    /// arrays. Never allocates.
    pub fn predict_raw_with(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: &[i32],
        out: &mut [f64],
    ) -> Result<(), ShapeError> {
        if floats.len() != self.float_count {
            return Err(ShapeError::FloatCount {
                expected: self.float_count,
                got: floats.len(),
            });
        }
        if cats.len() != self.cat_count {
            return Err(ShapeError::CatCount {
                expected: self.cat_count,
                got: cats.len(),
            });
        }
        if out.len() != self.members.len() {
            return Err(ShapeError::OutputLen {
                expected: self.members.len(),
                got: out.len(),
            });
        }
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
