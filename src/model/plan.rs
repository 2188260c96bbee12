//! The evaluation plan: a validated model laid out so that one prediction is
//! a few straight passes over flat arrays.
//!
//! The trees only ever ask "is this value above that border?". So each float
//! feature and each CTR keeps only the borders some split (or CTR projection)
//! actually uses, and every used border gets one byte in a per-document bit
//! array. Borders of one feature are sorted, so the answers for a value are a
//! run of ones followed by zeros: binarizing a feature is one binary search
//! over its used borders and one 16-byte copy of a precomputed run, instead
//! of one comparison per split condition. One-hot conditions (`value ==
//! v`) get a byte each after the runs.
//!
//! Trees are padded to a common depth with levels that read a byte which is
//! always 0 (it never changes the leaf index), so the tree loop is the same
//! unrolled code for every tree. Leaves stay in CatBoost's order and are
//! summed in tree order, as CatBoost does.

use std::collections::BTreeMap;

use super::compile::{Parts, ProjectionElement};
use super::ctr::{CtrCalc, CtrTable};

/// The most bins (used float features + one-hot features + CTRs) a model may
/// have.
pub(crate) const MAX_SLOTS: usize = 4096;
/// The most distinct split conditions a model may have.
pub(crate) const MAX_CONDITIONS: usize = 16384;
/// The most bytes of the per-document bit array (one per used border, one
/// per one-hot condition, plus the zero byte and the run slack).
pub(crate) const MAX_BITS: usize = 32768;
/// How far a run copy may write past the end of its feature's bytes (always
/// zeros, overwritten by the next feature or unused).
pub(crate) const RUN: usize = 16;

/// `RUNS[n]`: `n` ones, then zeros.
pub(crate) const RUNS: [[u8; RUN]; RUN + 1] = {
    let mut runs = [[0u8; RUN]; RUN + 1];
    let mut n = 0;
    while n <= RUN {
        let mut i = 0;
        while i < n {
            runs[n][i] = 1;
            i += 1;
        }
        n += 1;
    }
    runs
};

/// A float feature some split uses: where its value is, its used borders
/// and its bytes.
#[derive(Debug)]
pub(crate) struct FloatBin {
    pub(crate) feature: u32,
    /// What NaN is replaced with before comparing (NaN itself for `AsIs`,
    /// which compares below every border).
    pub(crate) nan_fill: f32,
    pub(crate) borders: (u32, u32),
    pub(crate) bits: u32,
}

/// A one-hot feature: the position of the matching value (1-based, 0 when
/// none matches) is what its conditions and projections compare.
#[derive(Debug)]
pub(crate) struct OneHotMatch {
    /// Index into the used-categorical array.
    pub(crate) cat: u32,
    pub(crate) values: (u32, u32),
}

/// A CTR feature: which projection key and table give its value, the
/// formula, its used borders and its bytes.
#[derive(Debug)]
pub(crate) struct CtrBin {
    pub(crate) calc: CtrCalc,
    pub(crate) table: u32,
    pub(crate) projection: u32,
    pub(crate) borders: (u32, u32),
    pub(crate) bits: u32,
    /// The first CTR of its (projection, table) pair: the one that looks the
    /// bucket up for the CTRs after it.
    pub(crate) fresh: bool,
}

/// The elements of one projection key, in CatBoost's hashing order:
/// categorical hashes, then float conditions, then one-hot matches. Ranges
/// into the plan's `key_cats`, `key_bits` and `key_one_hots`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Projection {
    pub(crate) cats: (u32, u32),
    pub(crate) bits: (u32, u32),
    pub(crate) one_hots: (u32, u32),
}

/// Everything one prediction reads, in the order it reads it.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) dimension: usize,
    /// Categorical feature index of each used-categorical position.
    pub(crate) used_cats: Vec<u32>,
    pub(crate) floats: Vec<FloatBin>,
    pub(crate) one_hots: Vec<OneHotMatch>,
    pub(crate) one_hot_values: Vec<i32>,
    /// One per distinct projection.
    pub(crate) projections: Vec<Projection>,
    /// Used-categorical positions whose hashes a key combines.
    pub(crate) key_cats: Vec<u32>,
    /// Bytes of float conditions a key combines.
    pub(crate) key_bits: Vec<u32>,
    /// `(one-hot feature, value index)` matches a key combines.
    pub(crate) key_one_hots: Vec<(u32, u16)>,
    /// Sorted by projection, then table: each key is hashed once and each
    /// bucket looked up once.
    pub(crate) ctrs: Vec<CtrBin>,
    /// Distinct `(table, projection)` pairs of `ctrs`, in their order.
    pub(crate) lookups: Vec<(u32, u32)>,
    pub(crate) tables: Vec<CtrTable>,
    /// Used borders of floats and CTRs, ascending within each feature.
    pub(crate) borders: Vec<f32>,
    /// `(one-hot feature, value index)` of each one-hot condition; its byte
    /// is `one_hot_bits + i`.
    pub(crate) one_hot_conditions: Vec<(u32, u16)>,
    pub(crate) one_hot_bits: u32,
    /// Bytes the bit array needs (slack included).
    pub(crate) bit_count: usize,
    /// Levels per tree after padding.
    pub(crate) depth: usize,
    /// `depth` byte indexes per tree, level 0 first.
    pub(crate) splits: Vec<u16>,
    pub(crate) first_leaf: Vec<u32>,
    pub(crate) leaves: Vec<f64>,
    pub(crate) scale: f64,
    pub(crate) bias: Vec<f64>,
}

/// Where a slot's used borders went: its first byte and the used thresholds
/// (1-based border numbers), ascending.
struct Region {
    first: u32,
    thresholds: Vec<u16>,
}

impl Region {
    fn bit(&self, threshold: u16) -> u32 {
        // Every threshold a split or projection names was collected.
        self.first + self.thresholds.binary_search(&threshold).unwrap_or(0) as u32
    }
}

/// Appends to `kept` the borders of `range` (in `all`) that the 1-based
/// `thresholds` name, and returns where they are in `kept`.
fn keep_used(
    kept: &mut Vec<f32>,
    all: &[f32],
    range: (u32, u32),
    thresholds: &[u16],
) -> (u32, u32) {
    let all = &all[range.0 as usize..range.1 as usize];
    let start = kept.len() as u32;
    kept.extend(thresholds.iter().map(|&t| all[usize::from(t) - 1]));
    (start, kept.len() as u32)
}

impl Plan {
    /// Lays out a validated model. Fails (with a message) only when the
    /// model is too large for the bit array.
    pub(crate) fn build(parts: Parts) -> Result<Plan, String> {
        // Used thresholds per slot: from `>=` splits and from projections.
        let mut used: BTreeMap<u16, Vec<u16>> = BTreeMap::new();
        for l in parts.levels.iter().filter(|l| !l.equal) {
            used.entry(l.slot).or_default().push(l.threshold);
        }
        for e in &parts.projection {
            if let ProjectionElement::Float { slot, threshold } = *e {
                used.entry(slot).or_default().push(threshold);
            }
        }
        for thresholds in used.values_mut() {
            thresholds.sort_unstable();
            thresholds.dedup();
        }

        let mut plan = Plan {
            dimension: parts.dimension,
            used_cats: parts.used_cats,
            one_hot_values: parts.one_hot_values,
            tables: parts.tables,
            leaves: parts.leaves,
            scale: parts.scale,
            bias: parts.bias,
            ..Plan::default()
        };
        let mut regions: BTreeMap<u16, Region> = BTreeMap::new();
        let mut next_bit = 0usize;
        let mut region = |slot: u16, next_bit: &mut usize| -> Option<(u32, Vec<u16>)> {
            let thresholds = used.remove(&slot)?;
            let first = *next_bit as u32;
            *next_bit += thresholds.len();
            regions.insert(
                slot,
                Region {
                    first,
                    thresholds: thresholds.clone(),
                },
            );
            Some((first, thresholds))
        };

        for f in &parts.float_slots {
            let Some((bits, thresholds)) = region(f.slot, &mut next_bit) else {
                continue;
            };
            let borders = keep_used(
                &mut plan.borders,
                &parts.float_borders,
                f.borders,
                &thresholds,
            );
            plan.floats.push(FloatBin {
                feature: f.feature,
                nan_fill: f.nan_fill,
                borders,
                bits,
            });
        }

        let mut one_hot_of = BTreeMap::new();
        for (i, o) in parts.one_hot_slots.iter().enumerate() {
            one_hot_of.insert(o.slot, i as u32);
            plan.one_hots.push(OneHotMatch {
                cat: o.cat,
                values: o.values,
            });
        }

        // Projections, by distinct element range.
        let mut projection_of = BTreeMap::new();
        for c in &parts.ctr_slots {
            let next = projection_of.len() as u32;
            projection_of.entry(c.projection).or_insert(next);
        }
        let mut order: Vec<usize> = (0..parts.ctr_slots.len()).collect();
        order.sort_by_key(|&i| {
            let c = &parts.ctr_slots[i];
            (projection_of[&c.projection], c.table, i)
        });
        for i in order {
            let c = &parts.ctr_slots[i];
            let Some((bits, thresholds)) = region(c.slot, &mut next_bit) else {
                continue;
            };
            let borders = keep_used(
                &mut plan.borders,
                &parts.ctr_borders,
                c.borders,
                &thresholds,
            );
            let lookup = (c.table, projection_of[&c.projection]);
            let fresh = plan.lookups.last() != Some(&lookup);
            if fresh {
                plan.lookups.push(lookup);
            }
            plan.ctrs.push(CtrBin {
                calc: c.calc,
                table: c.table,
                projection: lookup.1,
                borders,
                bits,
                fresh,
            });
        }

        let mut ranges: Vec<((u32, u32), u32)> = projection_of.into_iter().collect();
        ranges.sort_by_key(|&(_, p)| p);
        for ((first, last), _) in ranges {
            let at = |v: usize| v as u32;
            let start = (
                at(plan.key_cats.len()),
                at(plan.key_bits.len()),
                at(plan.key_one_hots.len()),
            );
            for e in &parts.projection[first as usize..last as usize] {
                match *e {
                    ProjectionElement::Cat(position) => plan.key_cats.push(position),
                    ProjectionElement::Float { slot, threshold } => {
                        plan.key_bits.push(regions[&slot].bit(threshold))
                    }
                    ProjectionElement::OneHot { slot, index } => {
                        plan.key_one_hots.push((one_hot_of[&slot], index))
                    }
                }
            }
            plan.projections.push(Projection {
                cats: (start.0, at(plan.key_cats.len())),
                bits: (start.1, at(plan.key_bits.len())),
                one_hots: (start.2, at(plan.key_one_hots.len())),
            });
        }

        // One-hot conditions after every run, then the zero byte.
        plan.one_hot_bits = next_bit as u32;
        let mut one_hot_conditions: Vec<(u32, u16)> = parts
            .levels
            .iter()
            .filter(|l| l.equal)
            .map(|l| (one_hot_of[&l.slot], l.threshold))
            .collect();
        one_hot_conditions.sort_unstable();
        one_hot_conditions.dedup();
        let zero = next_bit + one_hot_conditions.len();
        plan.bit_count = zero + 1 + RUN;
        if plan.bit_count > MAX_BITS {
            return Err(format!(
                "the trees use {zero} distinct borders and one-hot values; this evaluator supports {}",
                MAX_BITS - 1 - RUN
            ));
        }

        let one_hot_bits = next_bit;
        let bit_of = |l: &super::compile::Split| -> u16 {
            if l.equal {
                let key = (one_hot_of[&l.slot], l.threshold);
                let i = one_hot_conditions.binary_search(&key).unwrap_or(0);
                (one_hot_bits + i) as u16
            } else {
                regions[&l.slot].bit(l.threshold) as u16
            }
        };
        let deepest = parts
            .trees
            .iter()
            .map(|t| t.depth as usize)
            .max()
            .unwrap_or(0);
        // The unrolled loops are for depths 4, 6 and 8; shallower trees are
        // padded up to the next one.
        plan.depth = match deepest {
            0..=4 => 4,
            5..=6 => 6,
            7..=8 => 8,
            d => d,
        };
        for t in &parts.trees {
            let first = t.first_split as usize;
            let levels = &parts.levels[first..first + t.depth as usize];
            plan.splits.extend(levels.iter().map(&bit_of));
            plan.splits
                .extend(std::iter::repeat(zero as u16).take(plan.depth - levels.len()));
            let first_leaf =
                u32::try_from(t.first_leaf).map_err(|_| "more than 2^32 leaf values".to_owned())?;
            plan.first_leaf.push(first_leaf);
        }
        plan.one_hot_conditions = one_hot_conditions;
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_ones_then_zeros() {
        for (n, run) in RUNS.iter().enumerate() {
            assert!(run[..n].iter().all(|&b| b == 1));
            assert!(run[n..].iter().all(|&b| b == 0));
        }
    }
}
