//! Merging the conditions of several plans into one, by what each condition
//! asks, for a [`super::ModelGroup`]: what its members share is computed
//! once per document. Within one model too, CTR borders that no bucket value
//! separates ask one question: the shipped bot model has 486 condition bits
//! as laid out, 318 in a group of its own, and bot + spoof 455 together.
//! (Merging every model's own conditions at load was measured slower on the
//! bench models, 5 % on the 30-tree one, and is not done.)
//!
//! Each condition keeps its meaning, so every tree re-pointed at the merged
//! bits reads the same answers and every sum is bit for bit the same:
//! - a float condition is (input, NaN fill, border): equal triples merge;
//! - a one-hot feature is (categorical input, value list);
//! - a projection is its elements mapped to the merged inputs and bits:
//!   equal element lists give equal keys for every document;
//! - a CTR condition is a function of the bucket a projection's key falls
//!   in: two with the same answer for every key of the tables and for
//!   unseen keys are the same function, since a document's key is one of
//!   the tables' keys or unseen by all of them.

use std::collections::BTreeMap;

use super::ctr::BucketBits;
use super::layout::Trees;
use super::limits::{MAX_BITS, MAX_USED_CATS};
use super::plan::{Conditions, Lookup, OneHotMatch, Plan, Projection};

/// A plan and, for each of its float and categorical features, its position
/// in the merged input arrays.
pub(crate) struct Placed<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) floats: &'a [usize],
    pub(crate) cats: &'a [usize],
}

/// A projection as the merge sees it: its element counts (categorical,
/// float, one-hot) and its weighted elements over the merged inputs.
type ProjectionKey = ([u16; 3], Vec<(u64, u32)>);

/// Old bit → merged bit, per plan.
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

/// The merged conditions of `inputs` and each plan's trees re-pointed at
/// them (in input order). Positions must be in range of the plans' feature
/// counts (the callers check). Fails when the merged conditions exceed the
/// evaluator's limits.
pub(crate) fn merge(inputs: &[Placed<'_>]) -> Result<(Conditions, Vec<Trees>), String> {
    let mut m = Merge::new(inputs)?;
    m.float_borders()?;
    m.one_hots();
    m.projections()?;
    m.ctr_bits();
    let zero = m.one_hot_conditions()?;
    m.trees(zero)
}

/// The merge in progress: the merged conditions, and for each plan where
/// its bits, one-hot features and projections went.
struct Merge<'a> {
    inputs: &'a [Placed<'a>],
    plans: Vec<&'a Plan>,
    merged: Conditions,
    remaps: Vec<Remap>,
    /// The group's categorical inputs, each once, sorted.
    used: Vec<u32>,
    /// Per plan: its one-hot features' merged indices.
    one_hot_of: Vec<Vec<u32>>,
    /// Per plan: its projections' merged indices.
    projection_of: Vec<Vec<u32>>,
}

impl<'a> Merge<'a> {
    /// Categorical inputs: the group's positions, each once.
    fn new(inputs: &'a [Placed<'a>]) -> Result<Merge<'a>, String> {
        let plans: Vec<&Plan> = inputs.iter().map(|i| i.plan).collect();
        let remaps = plans
            .iter()
            .map(|p| Remap(vec![Remap::UNSET; p.conditions.bit_count]))
            .collect();
        let mut m = Merge {
            inputs,
            plans,
            merged: Conditions::default(),
            remaps,
            used: Vec::new(),
            one_hot_of: Vec::new(),
            projection_of: Vec::new(),
        };
        let mut used: Vec<u32> = (0..m.plans.len())
            .flat_map(|p| (0..m.plans[p].conditions.used_cats.len() as u32).map(move |c| (p, c)))
            .map(|(p, c)| m.cat_of(p, c))
            .collect();
        used.sort_unstable();
        used.dedup();
        if used.len() > MAX_USED_CATS {
            return Err(format!(
                "the members use {} categorical features",
                used.len()
            ));
        }
        m.used = used;
        Ok(m)
    }

    /// Plan `m`'s used categorical feature `pos` as a group input.
    fn cat_of(&self, m: usize, pos: u32) -> u32 {
        self.inputs[m].cats[self.plans[m].conditions.used_cats[pos as usize] as usize] as u32
    }

    /// Plan `m`'s used categorical feature `pos` as a merged position.
    fn used_pos(&self, m: usize, pos: u32) -> u32 {
        self.used.binary_search(&self.cat_of(m, pos)).unwrap_or(0) as u32
    }

    /// Float borders: one run per (input, NaN fill), the union of the
    /// members' borders; equal borders (same bits) merge.
    fn float_borders(&mut self) -> Result<(), String> {
        let mut runs: BTreeMap<(u32, u32), Vec<f32>> = BTreeMap::new();
        for (m, p) in self.plans.iter().enumerate() {
            let fb = &p.conditions.float_borders;
            for &(feature, fill, start, end) in &fb.runs {
                let input = self.inputs[m].floats[feature as usize] as u32;
                runs.entry((input, fill.to_bits()))
                    .or_default()
                    .extend_from_slice(&fb.borders[start as usize..end as usize]);
            }
        }
        let mut run_start = BTreeMap::new();
        for (&(input, fill), borders) in runs.iter_mut() {
            borders.sort_unstable_by(f32::total_cmp);
            borders.dedup_by_key(|b| b.to_bits());
            run_start.insert((input, fill), self.merged.float_borders.bit_count() as u32);
            self.merged
                .float_borders
                .push_run(input, f32::from_bits(fill), borders);
        }
        self.merged.float_borders.pad();
        for (m, p) in self.plans.iter().enumerate() {
            let fb = &p.conditions.float_borders;
            for &(feature, fill, start, end) in &fb.runs {
                let key = (
                    self.inputs[m].floats[feature as usize] as u32,
                    fill.to_bits(),
                );
                let run = &runs[&key];
                for bit in start..end {
                    let border = fb.borders[bit as usize];
                    let at = run
                        .binary_search_by(|b| b.total_cmp(&border))
                        .map_err(|_| "a float border went missing".to_owned())?;
                    self.remaps[m].0[bit as usize] = run_start[&key] + at as u32;
                }
            }
        }
        Ok(())
    }

    /// One-hot features: one per (categorical input, value list).
    fn one_hots(&mut self) {
        for m in 0..self.plans.len() {
            let c = &self.plans[m].conditions;
            let mut of = Vec::with_capacity(c.one_hots.len());
            for o in &c.one_hots {
                let cat = self.used_pos(m, o.cat);
                let values = &c.one_hot_values[o.values.0 as usize..o.values.1 as usize];
                let merged = &mut self.merged;
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
            self.one_hot_of.push(of);
        }
    }

    /// Projections: equal when their elements, mapped to the group's
    /// inputs and bits, are equal (then so is every document's key).
    fn projections(&mut self) -> Result<(), String> {
        let mut distinct: BTreeMap<ProjectionKey, u32> = BTreeMap::new();
        for m in 0..self.plans.len() {
            let c = &self.plans[m].conditions;
            let mut of = Vec::with_capacity(c.projections.len());
            for j in &c.projections {
                let (cats, bits) = (usize::from(j.cats), usize::from(j.bits));
                let n = cats + bits + usize::from(j.one_hots);
                let mut elements = Vec::with_capacity(n);
                for (k, &(w, v)) in c.key_elements[j.start as usize..][..n].iter().enumerate() {
                    let v = if k < cats {
                        self.used_pos(m, v)
                    } else if k < cats + bits {
                        self.remaps[m].get(v)?
                    } else {
                        self.one_hot_of[m][(v >> 16) as usize] << 16 | (v & 0xffff)
                    };
                    elements.push((w, v));
                }
                let next = distinct.len() as u32;
                let id = *distinct
                    .entry(([j.cats, j.bits, j.one_hots], elements))
                    .or_insert(next);
                of.push(id);
            }
            self.projection_of.push(of);
        }
        let mut by_id: Vec<_> = distinct.into_iter().collect();
        by_id.sort_by_key(|(_, id)| *id);
        for (([cats, bits, one_hots], elements), _) in by_id {
            self.merged.projections.push(Projection {
                start: self.merged.key_elements.len() as u32,
                cats,
                bits,
                one_hots,
            });
            self.merged.key_elements.extend(elements);
        }
        Ok(())
    }

    /// CTR bits: per projection, one table for every member's lookups of
    /// it, so one probe serves them all. A CTR condition is a function of
    /// the bucket; two conditions with the same answer for every key of
    /// the tables and for unseen keys are the same question (Counter CTRs
    /// of models trained on the same data, a model grouped with itself)
    /// and get one bit.
    fn ctr_bits(&mut self) {
        let mut members_of: Vec<Vec<(usize, &'a Lookup)>> =
            vec![Vec::new(); self.merged.projections.len()];
        for m in 0..self.plans.len() {
            let plan: &'a Plan = self.plans[m];
            for l in &plan.conditions.lookups {
                members_of[self.projection_of[m][l.projection as usize] as usize].push((m, l));
            }
        }
        let mut next_bit = self.merged.float_borders.bit_count();
        for (projection, members) in members_of.iter().enumerate() {
            if !members.is_empty() {
                next_bit += self.ctr_table(projection, members, next_bit);
            }
        }
        self.merged.one_hot_bits = next_bit as u32;
    }

    /// One projection's merged CTR table, its conditions from `next_bit`
    /// on; returns how many bits they take.
    fn ctr_table(
        &mut self,
        projection: usize,
        members: &[(usize, &Lookup)],
        next_bit: usize,
    ) -> usize {
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
                self.remaps[m].0[(l.bit + k) as usize] = (next_bit + at) as u32;
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
            self.merged.lookups.push(Lookup {
                projection: projection as u32,
                bit: (next_bit + 64 * piece) as u32,
                width: bits.len() as u32,
                bits: BucketBits::build(&keys, pattern),
            });
        }
        width
    }

    /// One-hot conditions after every run, then the zero bit; returns the
    /// zero bit. Fails past the evaluator's bit limit.
    fn one_hot_conditions(&mut self) -> Result<usize, String> {
        let next_bit = self.merged.one_hot_bits as usize;
        let mut conditions: Vec<(u32, u16)> = Vec::new();
        for (m, p) in self.plans.iter().enumerate() {
            conditions.extend(
                p.conditions
                    .one_hot_conditions
                    .iter()
                    .map(|&(o, index)| (self.one_hot_of[m][o as usize], index)),
            );
        }
        conditions.sort_unstable();
        conditions.dedup();
        for (m, p) in self.plans.iter().enumerate() {
            let c = &p.conditions;
            for (i, &(o, index)) in c.one_hot_conditions.iter().enumerate() {
                let at = conditions
                    .binary_search(&(self.one_hot_of[m][o as usize], index))
                    .unwrap_or(0);
                self.remaps[m].0[c.one_hot_bits as usize + i] = (next_bit + at) as u32;
            }
        }
        let zero = next_bit + conditions.len();
        self.merged.one_hot_conditions = conditions;
        self.merged.bit_count = zero + 1;
        if self.merged.bit_count > MAX_BITS {
            return Err(format!(
                "the members use {zero} distinct conditions; one group holds {}",
                MAX_BITS - 1
            ));
        }
        self.merged.used_cats = std::mem::take(&mut self.used);
        Ok(zero)
    }

    /// Each plan's trees re-pointed at the merged bits (its zero bit at
    /// the group's).
    fn trees(mut self, zero: usize) -> Result<(Conditions, Vec<Trees>), String> {
        let mut trees = Vec::with_capacity(self.plans.len());
        for (m, p) in self.plans.iter().enumerate() {
            self.remaps[m].0[p.conditions.bit_count - 1] = zero as u32;
            let remap = &self.remaps[m];
            let levels = p
                .trees
                .levels()
                .into_iter()
                .map(|(first, splits)| {
                    let splits = splits.into_iter().map(|b| remap.get(b)).collect::<Result<
                        Vec<u32>,
                        String,
                    >>(
                    )?;
                    Ok((first, splits))
                })
                .collect::<Result<Vec<_>, String>>()?;
            trees.push(Trees::build(&levels, zero as u32, p.dimension));
        }
        Ok((self.merged, trees))
    }
}
