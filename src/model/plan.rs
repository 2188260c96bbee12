//! The evaluation plan: a validated model ([`Parts`]) laid out so that one
//! prediction is a few straight passes over flat arrays.
//!
//! The trees only ever ask "is this value above that border?". So each float
//! feature and each CTR keeps only the borders some split (or CTR projection)
//! actually uses, and every used border gets one bit in a per-document bit
//! array. Borders of one feature are sorted, so the answers for a value are a
//! run of ones followed by zeros: binarizing a float is one binary search over
//! its used borders and one OR of a run of ones. A CTR's answers depend only
//! on its bucket, so they are computed at load for every bucket
//! ([`BucketBits`]): binarizing the CTRs of one lookup is one probe and one OR.
//! One-hot conditions (`value == v`) get a bit each after the runs, then comes
//! a bit that is always 0.
//!
//! Trees are laid out eight at a time ([`Trees`]), padded to a common depth
//! with levels that read the zero bit. Leaves stay in CatBoost's order and
//! are summed in tree order, as CatBoost does.

use std::collections::BTreeMap;

use super::ctr::BucketBits;
use super::hash::element_weight;
use super::layout::{FloatBorders, Trees};
use super::limits::MAX_BITS;
use super::parts::{Parts, ProjectionElement, Split};

/// A one-hot feature: the position of the matching value (1-based, 0 when
/// none matches) is what its conditions and projections compare.
#[derive(Debug)]
pub(crate) struct OneHotMatch {
    /// Index into the used-categorical array.
    pub(crate) cat: u32,
    pub(crate) values: (u32, u32),
}

/// The CTRs of one projection (whatever their tables): where their bits
/// start, and each key's bits.
#[derive(Debug)]
pub(crate) struct Lookup {
    pub(crate) projection: u32,
    pub(crate) bit: u32,
    /// How many of the pattern's bits are conditions (1 to 64).
    pub(crate) width: u32,
    pub(crate) bits: BucketBits,
}

/// The elements of one projection key, in CatBoost's hashing order:
/// `cats` categorical hashes (used-categorical positions), then `bits` float
/// conditions (bit positions), then `one_hots` one-hot matches (`one-hot
/// feature << 16 | value index`), from `start` in the plan's
/// `key_elements`: one slice per key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Projection {
    pub(crate) start: u32,
    pub(crate) cats: u16,
    pub(crate) bits: u16,
    pub(crate) one_hots: u16,
}

/// What turns one document's inputs into its condition bits: everything a
/// prediction reads before the trees, in the order it reads it. A model has
/// one; a [`super::group::ModelGroup`] merges several models' into one, so
/// that what they share is computed once.
#[derive(Debug, Default)]
pub(crate) struct Conditions {
    /// Categorical feature index of each used-categorical position.
    pub(crate) used_cats: Vec<u32>,
    pub(crate) one_hots: Vec<OneHotMatch>,
    pub(crate) one_hot_values: Vec<i32>,
    /// One per distinct projection.
    pub(crate) projections: Vec<Projection>,
    /// The elements of every projection, projection after projection, each
    /// with its weight in the key ([`element_weight`]).
    pub(crate) key_elements: Vec<(u64, u32)>,
    /// Sorted by projection: each key is hashed once.
    pub(crate) lookups: Vec<Lookup>,
    /// Used borders of floats: the first condition bits.
    pub(crate) float_borders: FloatBorders,
    /// `(one-hot feature, value index)` of each one-hot condition; its bit
    /// is `one_hot_bits + i`.
    pub(crate) one_hot_conditions: Vec<(u32, u16)>,
    pub(crate) one_hot_bits: u32,
    /// Bits the condition array needs (the zero bit, the last, included).
    pub(crate) bit_count: usize,
}

/// Everything one prediction reads, in the order it reads it.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) dimension: usize,
    pub(crate) conditions: Conditions,
    pub(crate) trees: Trees,
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
/// `thresholds` name.
fn keep_used(kept: &mut Vec<f32>, all: &[f32], range: (u32, u32), thresholds: &[u16]) {
    let all = &all[range.0 as usize..range.1 as usize];
    kept.extend(thresholds.iter().map(|&t| all[usize::from(t) - 1]));
}

impl Plan {
    /// Lays out a validated model. Fails (with a message) only when the
    /// model is too large for the bit array.
    pub(crate) fn build(mut parts: Parts) -> Result<Plan, String> {
        let conditions = Conditions {
            used_cats: std::mem::take(&mut parts.used_cats),
            one_hot_values: std::mem::take(&mut parts.one_hot_values),
            ..Conditions::default()
        };
        let mut b = Layout {
            used: used_thresholds(&parts),
            parts: &parts,
            plan: conditions,
            regions: BTreeMap::new(),
            next_bit: 0,
            one_hot_of: BTreeMap::new(),
            projection_of: BTreeMap::new(),
        };
        b.float_bits();
        b.one_hots();
        let groups = b.ctr_groups();
        b.ctr_lookups(&groups);
        b.key_elements();
        let (zero, trees) = b.trees()?;
        let conditions = b.plan;
        Ok(Plan {
            dimension: parts.dimension,
            trees: Trees::build(&trees, zero as u32, parts.dimension),
            conditions,
            leaves: parts.leaves,
            scale: parts.scale,
            bias: parts.bias,
        })
    }
}

/// Used thresholds per slot, ascending: from `>=` splits and from
/// projections.
fn used_thresholds(parts: &Parts) -> BTreeMap<u16, Vec<u16>> {
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
    used
}

/// CTRs of one projection get consecutive bits and one lookup, over the
/// keys of all their tables: (the projection, its CTRs with their tables,
/// bits and used borders).
type Group = (u32, Vec<(usize, u32, Vec<f32>)>);

/// [`Plan::build`] in progress: the conditions laid out so far and where
/// each slot's bits went.
struct Layout<'p> {
    parts: &'p Parts,
    plan: Conditions,
    /// Used thresholds per slot not laid out yet.
    used: BTreeMap<u16, Vec<u16>>,
    regions: BTreeMap<u16, Region>,
    next_bit: usize,
    /// One-hot slot -> its one-hot feature.
    one_hot_of: BTreeMap<u16, u32>,
    /// Projection element range -> its projection, in first-use order.
    projection_of: BTreeMap<(u32, u32), u32>,
}

impl Layout<'_> {
    /// The next bits for `slot`'s used thresholds: the first bit and the
    /// thresholds; none when the trees use no border of it.
    fn region(&mut self, slot: u16) -> Option<(u32, Vec<u16>)> {
        let thresholds = self.used.remove(&slot)?;
        let first = self.next_bit as u32;
        self.next_bit += thresholds.len();
        self.regions.insert(
            slot,
            Region {
                first,
                thresholds: thresholds.clone(),
            },
        );
        Some((first, thresholds))
    }

    /// Floats get the first bits, in border order: bit i is border i.
    fn float_bits(&mut self) {
        let parts = self.parts;
        for f in &parts.float_slots {
            let Some((bits, thresholds)) = self.region(f.slot) else {
                continue;
            };
            assert_eq!(
                bits as usize,
                self.plan.float_borders.borders.len(),
                "float bits come first"
            );
            let mut kept = Vec::new();
            keep_used(&mut kept, &parts.float_borders, f.borders, &thresholds);
            self.plan
                .float_borders
                .push_run(f.feature, f.nan_fill, &kept);
        }
        self.plan.float_borders.pad();
    }

    fn one_hots(&mut self) {
        for (i, o) in self.parts.one_hot_slots.iter().enumerate() {
            self.one_hot_of.insert(o.slot, i as u32);
            self.plan.one_hots.push(OneHotMatch {
                cat: o.cat,
                values: o.values,
            });
        }
    }

    /// Projections, by distinct element range, and the CTRs grouped by
    /// projection, each CTR's bits laid out.
    fn ctr_groups(&mut self) -> Vec<Group> {
        let parts = self.parts;
        for c in &parts.ctr_slots {
            let next = self.projection_of.len() as u32;
            self.projection_of.entry(c.projection).or_insert(next);
        }
        let mut order: Vec<usize> = (0..parts.ctr_slots.len()).collect();
        order.sort_by_key(|&i| {
            let c = &parts.ctr_slots[i];
            (self.projection_of[&c.projection], c.table, i)
        });
        let mut groups: Vec<Group> = Vec::new();
        for i in order {
            let c = &parts.ctr_slots[i];
            let Some((bits, thresholds)) = self.region(c.slot) else {
                continue;
            };
            let mut borders = Vec::new();
            keep_used(&mut borders, &parts.ctr_borders, c.borders, &thresholds);
            let projection = self.projection_of[&c.projection];
            match groups.last_mut() {
                Some((l, members)) if *l == projection => members.push((i, bits, borders)),
                _ => groups.push((projection, vec![(i, bits, borders)])),
            }
        }
        groups
    }

    /// One lookup per 64 bits of each group.
    fn ctr_lookups(&mut self, groups: &[Group]) {
        let parts = self.parts;
        for (projection, members) in groups {
            let table_of = |i: usize| &parts.tables[parts.ctr_slots[i].table as usize];
            let mut keys: Vec<u64> = members.iter().flat_map(|m| table_of(m.0).keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            let bit = members[0].1;
            let width: usize = members.iter().map(|(_, _, b)| b.len()).sum();
            // Each key's bits, all CTRs of the projection side by side; a
            // key one of the tables lacks is unseen for that table's CTRs.
            let key_bits = |key: Option<u64>| -> Vec<u64> {
                let mut pattern = vec![0u64; width.div_ceil(64)];
                for (i, first, borders) in members {
                    let table = table_of(*i);
                    let value = parts.ctr_slots[*i]
                        .calc
                        .value_at(table, key.and_then(|k| table.find(k)));
                    // "Border below v" is CatBoost's `v > border`: false for NaN.
                    let above = borders.partition_point(|&b| b < value);
                    set_ones(&mut pattern, (first - bit) as usize, above);
                }
                pattern
            };
            for piece in 0..width.div_ceil(64) {
                let bits = BucketBits::build(&keys, |key| key_bits(key)[piece]);
                self.plan.lookups.push(Lookup {
                    projection: *projection,
                    bit: bit + 64 * piece as u32,
                    width: (width - 64 * piece).min(64) as u32,
                    bits,
                });
            }
        }
    }

    /// Each projection's key elements, over the laid-out bits.
    fn key_elements(&mut self) {
        let parts = self.parts;
        let mut ranges: Vec<((u32, u32), u32)> = std::mem::take(&mut self.projection_of)
            .into_iter()
            .collect();
        ranges.sort_by_key(|&(_, p)| p);
        for ((first, last), _) in ranges {
            let elements = &parts.projection[first as usize..last as usize];
            let start = self.plan.key_elements.len() as u32;
            let mut counts = [0u16; 3];
            // Elements come in CatBoost's order (cats, floats, one-hots).
            for (j, e) in elements.iter().enumerate() {
                let (kind, value) = match *e {
                    ProjectionElement::Cat(position) => (0, position),
                    ProjectionElement::Float { slot, threshold } => {
                        (1, self.regions[&slot].bit(threshold))
                    }
                    ProjectionElement::OneHot { slot, index } => {
                        (2, self.one_hot_of[&slot] << 16 | u32::from(index))
                    }
                };
                counts[kind] += 1;
                self.plan
                    .key_elements
                    .push((element_weight(elements.len(), j), value));
            }
            self.plan.projections.push(Projection {
                start,
                cats: counts[0],
                bits: counts[1],
                one_hots: counts[2],
            });
        }
    }

    /// One-hot conditions after every run, then the zero bit; each tree's
    /// first leaf and split bits. Fails past the evaluator's bit limit.
    #[allow(clippy::type_complexity)]
    fn trees(&mut self) -> Result<(usize, Vec<(u32, Vec<u32>)>), String> {
        let parts = self.parts;
        let next_bit = self.next_bit;
        self.plan.one_hot_bits = next_bit as u32;
        let mut one_hot_conditions: Vec<(u32, u16)> = parts
            .levels
            .iter()
            .filter(|l| l.equal)
            .map(|l| (self.one_hot_of[&l.slot], l.threshold))
            .collect();
        one_hot_conditions.sort_unstable();
        one_hot_conditions.dedup();
        let zero = next_bit + one_hot_conditions.len();
        self.plan.bit_count = zero + 1;
        if self.plan.bit_count > MAX_BITS {
            return Err(format!(
                "the trees use {zero} distinct borders and one-hot values; this evaluator supports {}",
                MAX_BITS - 1
            ));
        }
        let bit_of = |l: &Split| -> u32 {
            if l.equal {
                let key = (self.one_hot_of[&l.slot], l.threshold);
                let i = one_hot_conditions.binary_search(&key).unwrap_or(0);
                (next_bit + i) as u32
            } else {
                self.regions[&l.slot].bit(l.threshold)
            }
        };
        let mut trees = Vec::with_capacity(parts.trees.len());
        for t in &parts.trees {
            let first = t.first_split as usize;
            let levels = &parts.levels[first..first + t.depth as usize];
            let first_leaf =
                u32::try_from(t.first_leaf).map_err(|_| "more than 2^32 leaf values".to_owned())?;
            trees.push((first_leaf, levels.iter().map(bit_of).collect()));
        }
        self.plan.one_hot_conditions = one_hot_conditions;
        Ok((zero, trees))
    }
}

/// Sets bits `at..at + count` of a packed bit array.
#[inline(always)]
pub(crate) fn set_ones(words: &mut [u64], mut at: usize, mut count: usize) {
    while count > 0 {
        let shift = at % 64;
        let n = count.min(64 - shift);
        words[at / 64] |= (u64::MAX >> (64 - n)) << shift;
        at += n;
        count -= n;
    }
}

/// Bit patterns ORed into a packed bit array in ascending order of where
/// they go (as the float borders' runs are laid out), gathered in a
/// register and written a word at a time: ORing each into memory would
/// make each wait for the previous one's store to the same word.
pub(crate) struct PendingBits<'a> {
    words: &'a mut [u64],
    /// Words `base` and `base + 1`, not yet written.
    pending: u128,
    base: usize,
}

impl<'a> PendingBits<'a> {
    pub(crate) fn new(words: &'a mut [u64]) -> Self {
        PendingBits {
            words,
            pending: 0,
            base: 0,
        }
    }

    /// ORs `pattern` in from bit `at` on. Bits come in order: `at` is not
    /// in an earlier word than any bit set before (the window holds two
    /// words, from `at`'s on).
    #[inline(always)]
    pub(crate) fn or(&mut self, at: usize, pattern: u64) {
        // Where patterns go is the model's, not the document's: this loop
        // runs the same on every prediction, so it is never mispredicted.
        while self.base < at / 64 {
            self.words[self.base] |= self.pending as u64;
            self.pending >>= 64;
            self.base += 1;
        }
        self.pending |= u128::from(pattern) << (at % 64);
    }

    /// Sets bits `at..at + count`, on the same terms as [`PendingBits::or`].
    #[inline(always)]
    pub(crate) fn ones(&mut self, mut at: usize, mut count: usize) {
        while count > 64 {
            self.or(at, u64::MAX);
            at += 64;
            count -= 64;
        }
        // `count` is the document's: no branch on it below 64.
        self.or(at, ((1u128 << count) - 1) as u64);
    }

    /// Writes what is pending.
    #[inline(always)]
    pub(crate) fn finish(self) {
        if let Some(w) = self.words.get_mut(self.base) {
            *w |= self.pending as u64;
        }
        if let Some(w) = self.words.get_mut(self.base + 1) {
            *w |= (self.pending >> 64) as u64;
        }
    }
}

/// ORs the 64-bit `pattern` (bit 0 first) into a packed bit array from bit
/// `at` on. Only words the pattern's set bits reach are written.
#[inline(always)]
pub(crate) fn or_pattern(words: &mut [u64], at: usize, pattern: u64) {
    let (first, shift) = (at / 64, at % 64);
    words[first] |= pattern << shift;
    // `(p >> 1) >> (63 - shift)` is `p >> (64 - shift)`, and 0 (not an
    // overflow) for shift 0.
    let spill = (pattern >> 1) >> (63 - shift);
    if spill != 0 {
        words[first + 1] |= spill;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(words: &[u64], n: usize) -> Vec<u8> {
        (0..n)
            .map(|p| ((words[p / 64] >> (p % 64)) & 1) as u8)
            .collect()
    }

    #[test]
    fn runs_of_ones_land_where_asked() {
        for at in [0, 1, 13, 63, 64, 65, 127] {
            for count in [0, 1, 2, 63, 64, 65, 129] {
                let mut words = [0u64; 6];
                set_ones(&mut words, at, count);
                let want: Vec<u8> = (0..384)
                    .map(|p| u8::from(p >= at && p < at + count))
                    .collect();
                assert_eq!(bits(&words, 384), want, "at {at} count {count}");
            }
        }
    }

    /// Patterns and runs gathered by PendingBits land where or_pattern and
    /// set_ones put them one by one: random patterns and runs (shorter and
    /// longer than a word), each after the last as the float borders' runs
    /// are, arrays ending anywhere.
    #[test]
    fn pending_bits_write_what_one_by_one_writes() {
        let mut rng = fastrand::Rng::with_seed(0x5eed_b175);
        for _ in 0..2000 {
            let len = rng.usize(1..8);
            let (mut pending, mut direct) = (vec![0u64; len], vec![0u64; len]);
            let mut bits = PendingBits::new(&mut pending);
            let mut at = rng.usize(..8);
            while at < len * 64 {
                let room = len * 64 - at;
                if rng.bool() {
                    let width = rng.usize(1..=room.min(64));
                    let pattern = rng.u64(..) >> (64 - width);
                    bits.or(at, pattern);
                    or_pattern(&mut direct, at, pattern);
                    at += width + rng.usize(..3);
                } else {
                    let count = rng.usize(..=room.min(150));
                    bits.ones(at, count);
                    set_ones(&mut direct, at, count);
                    at += count + rng.usize(..3);
                }
            }
            bits.finish();
            assert_eq!(pending, direct);
        }
    }

    #[test]
    fn patterns_land_where_asked() {
        for at in [0, 1, 63, 64, 100] {
            let mut words = [0u64; 4];
            or_pattern(&mut words, at, 0x8000_0000_0000_0003);
            let mut want = vec![0u8; 256];
            for p in [0, 1, 63] {
                want[at + p] = 1;
            }
            assert_eq!(bits(&words, 256), want, "at {at}");
        }
        // A pattern that ends inside the array's last word writes no further.
        let mut words = [0u64; 1];
        or_pattern(&mut words, 60, 0xf);
        assert_eq!(words[0], 0xf << 60);
    }
}
