//! How the trees of a plan are laid out for the kernels of `trees.rs` and
//! `simd.rs`: eight at a time (and 64 at a time for the AVX-512 kernel).
//! A leaf module, so that the kernels and the dispatch read the layout and
//! neither depends on the other's file.
//!
//! Per document the condition bits are a packed bit array (one bit per used
//! border or one-hot condition, bit `p` is bit `p % 64` of word `p / 64`).
//! A block holds [`LANES`] consecutive trees: for each level, the bit
//! position each of the eight trees reads, then each tree's first leaf and
//! its leaf mask (`2^depth - 1`, so that a tree shallower than the block's
//! padded depth cannot leave its own leaves). Level `d` sets bit `d` of the
//! leaf index, as in CatBoost.

/// Trees per block: one AVX2 register of 32-bit lanes.
pub(crate) const LANES: usize = 8;

/// The most condition bits a model may have for the AVX-512 kernel: the
/// packed bit array, eight conditions a byte, is a 512-byte table held in
/// eight registers.
pub(crate) const BYTE_CONDITIONS: usize = 4096;
/// Condition bits per pair of table registers (128 bytes, what one
/// `vpermi2b` reads).
pub(crate) const PAIR_CONDITIONS: usize = 1024;
/// Trees per group of the AVX-512 kernel: one byte lane each.
pub(crate) const BYTE_LANES: usize = 64;
/// Trees whose leaf offsets a kernel computes in one call
/// (`Trees::offsets`): one AVX-512 group, eight blocks. The sums compute
/// a chunk's offsets while the previous chunk's leaves are added, so a
/// chunk is small enough for the core to hold both at once.
pub(crate) const CHUNK_TREES: usize = 64;

/// The longest run of one feature's borders whose bits the scalar and AVX2
/// paths compute by compares alone (one word of bits); longer runs are
/// searched.
pub(crate) const EIGHTS_RUN: usize = 64;

/// Borders per vector of [`FloatBorders`]: one AVX-512 register of `f32`.
pub(crate) const BORDER_LANES: usize = 16;

/// The used borders of the float features, one per condition bit from bit
/// 0 on: bit `i` is `value of features[i] > borders[i]` (CatBoost's
/// `value > border`, false for NaN), the value's NaN first replaced with
/// `fills[i]`. Since each feature's borders are ascending, the bits of one
/// feature are a run of ones followed by zeros, as CatBoost's bins are;
/// computing them border by border needs no search and no branch on the
/// document, and runs sixteen borders per vector compare (AVX-512); the
/// scalar path finds each feature's run with one binary search instead
/// (fewer instructions than border by border without vectors).
#[derive(Debug, Default)]
pub(crate) struct FloatBorders {
    /// Features after one another, ascending within each; padded to a
    /// multiple of [`BORDER_LANES`] with NaN (which no value is above, so
    /// the padding's bits are 0).
    pub(crate) borders: Vec<f32>,
    /// The float feature each border compares (the padding repeats a real
    /// one).
    pub(crate) features: Vec<u32>,
    /// What NaN is replaced with (NaN itself for `AsIs`, -inf / +inf for
    /// `AsFalse` / `AsTrue` features that saw NaN in training).
    pub(crate) fills: Vec<f32>,
    /// One past the largest feature index (0 without borders).
    pub(crate) feature_end: usize,
    /// Per feature, for the scalar path: the feature, its NaN fill and its
    /// borders `start..end` (also its condition bits).
    pub(crate) runs: Vec<(u32, f32, u32, u32)>,
    /// For the scalar and AVX2 paths, the borders of each run of at most
    /// [`EIGHTS_RUN`] in groups of eight from the run's start, the last
    /// padded with NaN (which no value is above). A run ascends, so its
    /// answers to "border below the value" are a run of ones: eight
    /// compares at a time give the run's bits as they are, with no search.
    /// Longer runs have none here and are searched.
    pub(crate) eights: Vec<[f32; 8]>,
    /// Per run, its groups in `eights`.
    pub(crate) run_eights: Vec<(u32, u32)>,
}

impl FloatBorders {
    /// Appends the run of one feature: its `borders` (ascending) get the
    /// next condition bits.
    pub(crate) fn push_run(&mut self, feature: u32, fill: f32, borders: &[f32]) {
        let start = self.borders.len() as u32;
        self.borders.extend_from_slice(borders);
        let end = self.borders.len() as u32;
        self.runs.push((feature, fill, start, end));
        self.features.resize(self.borders.len(), feature);
        self.fills.resize(self.borders.len(), fill);
        self.feature_end = self.feature_end.max(feature as usize + 1);
        let from = self.eights.len() as u32;
        if borders.len() <= EIGHTS_RUN {
            self.eights.extend(borders.chunks(8).map(|c| {
                let mut eight = [f32::NAN; 8];
                eight[..c.len()].copy_from_slice(c);
                eight
            }));
        }
        self.run_eights.push((from, self.eights.len() as u32));
    }

    /// Pads the borders to whole vectors once every run is in.
    pub(crate) fn pad(&mut self) {
        let pad = self.features.first().copied().unwrap_or(0);
        while !self.borders.len().is_multiple_of(BORDER_LANES) {
            self.borders.push(f32::NAN);
            self.features.push(pad);
            self.fills.push(f32::NAN);
        }
    }

    /// How many borders are real (the condition bits of the floats).
    pub(crate) fn bit_count(&self) -> usize {
        self.runs.last().map_or(0, |r| r.3 as usize)
    }
}

/// The trees in blocks of [`LANES`]; the last block is padded with trees
/// that read bit 0 and leaf 0 and are never summed.
#[derive(Debug, Default)]
pub(crate) struct Trees {
    pub(crate) count: usize,
    /// Levels per tree after padding (at least 1).
    pub(crate) depth: usize,
    /// Per block, contiguous: `depth * LANES` bit positions (level 0
    /// first), then `LANES` first-leaf offsets, then `LANES` leaf masks.
    pub(crate) blocks: Vec<u32>,
    /// One past the largest bit position any split reads.
    pub(crate) bit_end: usize,
    /// One past the largest leaf value any tree can reach.
    pub(crate) leaf_end: usize,
    /// For the AVX-512 kernel (empty when the model does not fit it): per
    /// group of [`BYTE_LANES`] trees and per level, a row of the low bytes
    /// of the byte numbers `p / 8` of the condition bits (one byte per
    /// tree) and a row of their masks in the byte (`1 << p % 8`); then a
    /// row of leaf masks.
    pub(crate) bytes: Vec<u8>,
    /// Per group, `depth` masks of bit 8 of the byte numbers (bit `lane`
    /// for tree `lane` of the group).
    pub(crate) high: Vec<u64>,
    /// Each tree's first leaf (AVX-512 kernel), padded with zeros to whole
    /// groups.
    pub(crate) first: Vec<u32>,
    /// Register pairs of the AVX-512 kernel's table: `bit_end` rounded up
    /// to [`PAIR_CONDITIONS`].
    pub(crate) pairs: usize,
}

impl Trees {
    /// Lays out `trees` as `(first_leaf, split bit positions)`, each tree's
    /// own depth, padded with reads of `zero` (a bit that is always 0).
    pub(crate) fn build(trees: &[(u32, Vec<u32>)], zero: u32, dimension: usize) -> Trees {
        let depth = trees.iter().map(|(_, s)| s.len()).max().unwrap_or(0).max(1);
        let stride = (depth + 2) * LANES;
        let mut t = Trees {
            count: trees.len(),
            depth,
            blocks: vec![0; trees.len().div_ceil(LANES) * stride],
            bit_end: 1,
            leaf_end: 1,
            bytes: Vec::new(),
            high: Vec::new(),
            first: Vec::new(),
            pairs: 0,
        };
        for (i, (first, splits)) in trees.iter().enumerate() {
            let block = &mut t.blocks[i / LANES * stride..][..stride];
            let lane = i % LANES;
            for d in 0..depth {
                let bit = splits.get(d).copied().unwrap_or(zero);
                block[d * LANES + lane] = bit;
                t.bit_end = t.bit_end.max(bit as usize + 1);
            }
            let mask = (1u32 << splits.len()) - 1;
            block[depth * LANES + lane] = *first;
            block[(depth + 1) * LANES + lane] = mask;
            t.leaf_end = t
                .leaf_end
                .max(*first as usize + (mask as usize + 1) * dimension);
        }
        if t.bit_end <= BYTE_CONDITIONS && depth <= 8 && dimension == 1 {
            let stride = (2 * depth + 1) * BYTE_LANES;
            let groups = trees.len().div_ceil(BYTE_LANES);
            t.pairs = t.bit_end.div_ceil(PAIR_CONDITIONS);
            t.bytes = vec![0; groups * stride];
            t.high = vec![0; groups * depth];
            t.first = vec![0; groups * BYTE_LANES];
            for (i, (first, splits)) in trees.iter().enumerate() {
                let group = &mut t.bytes[i / BYTE_LANES * stride..][..stride];
                let high = &mut t.high[i / BYTE_LANES * depth..][..depth];
                let lane = i % BYTE_LANES;
                for d in 0..depth {
                    let c = splits.get(d).copied().unwrap_or(zero);
                    group[2 * d * BYTE_LANES + lane] = (c / 8) as u8;
                    group[(2 * d + 1) * BYTE_LANES + lane] = 1 << (c % 8);
                    high[d] |= u64::from((c >> 11) & 1) << lane;
                }
                group[2 * depth * BYTE_LANES + lane] = ((1u32 << splits.len()) - 1) as u8;
                t.first[i] = *first;
            }
        }
        t
    }

    /// What [`Trees::build`] was given, for the trees (not the padding):
    /// each tree's first leaf and the bits of its levels, level 0 first.
    pub(crate) fn levels(&self) -> Vec<(u32, Vec<u32>)> {
        let stride = (self.depth + 2) * LANES;
        (0..self.count)
            .map(|i| {
                let block = &self.blocks[i / LANES * stride..][..stride];
                let lane = i % LANES;
                let depth = block[(self.depth + 1) * LANES + lane].count_ones() as usize;
                let splits = (0..depth).map(|d| block[d * LANES + lane]).collect();
                (block[self.depth * LANES + lane], splits)
            })
            .collect()
    }
}
