//! The trees of a plan, laid out eight at a time (and 64 at a time for the
//! AVX-512 kernel), and the kernels that evaluate them: a scalar loop that
//! every build has and tests, and AVX2 and AVX-512 ones ([`super::simd`])
//! chosen at run time when the CPU has them ([`Kernel::detect`]).
//!
//! Per document the condition bits are a packed bit array (one bit per used
//! border or one-hot condition, bit `p` is bit `p % 64` of word `p / 64`).
//! A block holds [`LANES`] consecutive trees: for each level, the bit
//! position each of the eight trees reads, then each tree's first leaf and
//! its leaf mask (`2^depth - 1`, so that a tree shallower than the block's
//! padded depth cannot leave its own leaves). Level `d` sets bit `d` of the
//! leaf index, as in CatBoost. Both kernels compute the same indexes and add
//! the same leaves in tree order, so their sums are bit-identical: the order
//! of additions is CatBoost's own.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// Trees per block: one AVX2 register of 32-bit lanes.
pub(crate) const LANES: usize = 8;

/// Which code evaluates the trees, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// One tree at a time; always available.
    Scalar,
    /// Eight trees at a time with AVX2 gathers (x86-64 CPUs since 2013).
    Avx2,
    /// Sixty-four trees at a time with AVX-512 VBMI byte permutes (Ice Lake
    /// and later), for models of at most 512 conditions and
    /// depth 8; other models run the AVX2 kernel.
    Avx512,
}

/// The most condition bits a model may have for the AVX-512 kernel: its
/// condition bytes are a 512-byte table held in eight registers.
pub(crate) const BYTE_CONDITIONS: usize = 512;
/// Trees per group of the AVX-512 kernel: one byte lane each.
pub(crate) const BYTE_LANES: usize = 64;

impl Kernel {
    /// The fastest kernel this CPU runs (detected once and cached).
    #[inline]
    pub fn detect() -> Kernel {
        // 0: not detected yet; else 1 + the kernel's place in the enum.
        static WIDEST: AtomicU8 = AtomicU8::new(0);
        match WIDEST.load(Ordering::Relaxed) {
            1 => Kernel::Scalar,
            2 => Kernel::Avx2,
            3 => Kernel::Avx512,
            _ => {
                let k = Kernel::probe();
                WIDEST.store(k as u8 + 1, Ordering::Relaxed);
                k
            }
        }
    }

    /// Whether this CPU can run the kernel. Each kernel's features include
    /// the narrower one's.
    #[inline]
    pub fn is_available(self) -> bool {
        self <= Kernel::detect()
    }

    fn probe() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") {
                if has!("avx512f") && has!("avx512bw") && has!("avx512vbmi") {
                    return Kernel::Avx512;
                }
                return Kernel::Avx2;
            }
        }
        Kernel::Scalar
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        })
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
    /// group of [`BYTE_LANES`] trees, `depth` rows of the low bytes of the
    /// condition numbers (one byte per tree), then a row of leaf masks.
    pub(crate) bytes: Vec<u8>,
    /// Per group, `depth` masks of bit 8 of the condition numbers (bit
    /// `lane` for tree `lane` of the group).
    pub(crate) high: Vec<u64>,
    /// Each tree's first leaf (AVX-512 kernel).
    pub(crate) first: Vec<u32>,
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
            let stride = (depth + 1) * BYTE_LANES;
            let groups = trees.len().div_ceil(BYTE_LANES);
            t.bytes = vec![0; groups * stride];
            t.high = vec![0; groups * depth];
            for (i, (first, splits)) in trees.iter().enumerate() {
                let group = &mut t.bytes[i / BYTE_LANES * stride..][..stride];
                let high = &mut t.high[i / BYTE_LANES * depth..][..depth];
                let lane = i % BYTE_LANES;
                for d in 0..depth {
                    let c = splits.get(d).copied().unwrap_or(zero);
                    group[d * BYTE_LANES + lane] = c as u8;
                    high[d] |= u64::from(c >> 8 & 1) << lane;
                }
                group[depth * BYTE_LANES + lane] = ((1u32 << splits.len()) - 1) as u8;
                t.first.push(*first);
            }
        }
        t
    }

    /// The kernel that runs when `kernel` is asked for: the widest one at
    /// most `kernel` that this CPU has and these trees fit.
    pub(crate) fn kernel(&self, kernel: Kernel) -> Kernel {
        let k = kernel.min(Kernel::detect());
        if k == Kernel::Avx512 && self.bytes.is_empty() {
            Kernel::Avx2
        } else {
            k
        }
    }

    /// The sum of each tree's leaf (one-dimensional models), in tree order.
    #[inline]
    pub(crate) fn sum(&self, kernel: Kernel, words: &[u64], leaves: &[f64]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512 && !self.bytes.is_empty() && Kernel::Avx512.is_available() {
            // SAFETY: AVX-512 F, BW and VBMI were detected just above.
            return unsafe { super::simd::sum_bytes(self, words, leaves) };
        }
        #[cfg(target_arch = "x86_64")]
        if kernel != Kernel::Scalar && Kernel::Avx2.is_available() {
            // SAFETY: AVX2 was detected on this CPU just above.
            return unsafe { super::simd::sum(self, words, leaves) };
        }
        let _ = kernel;
        self.sum_scalar(words, leaves)
    }

    /// Adds each tree's leaf vector into `out` (zeroed first), in tree order.
    #[inline]
    pub(crate) fn sum_dims(&self, kernel: Kernel, words: &[u64], leaves: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        #[cfg(target_arch = "x86_64")]
        if kernel != Kernel::Scalar && Kernel::Avx2.is_available() {
            // SAFETY: AVX2 was detected on this CPU just above.
            unsafe { super::simd::sum_dims(self, words, leaves, out) };
            return;
        }
        let _ = kernel;
        let dim = out.len();
        self.each_leaf_scalar::<0>(words, dim, |at| {
            for (o, leaf) in out.iter_mut().zip(&leaves[at..at + dim]) {
                *o += leaf;
            }
        });
    }

    fn sum_scalar(&self, words: &[u64], leaves: &[f64]) -> f64 {
        let mut sum = 0.0;
        let mut add = |at: usize| sum += leaves[at];
        match self.depth {
            4 => self.each_leaf_scalar::<4>(words, 1, &mut add),
            5 => self.each_leaf_scalar::<5>(words, 1, &mut add),
            6 => self.each_leaf_scalar::<6>(words, 1, &mut add),
            7 => self.each_leaf_scalar::<7>(words, 1, &mut add),
            8 => self.each_leaf_scalar::<8>(words, 1, &mut add),
            _ => self.each_leaf_scalar::<0>(words, 1, &mut add),
        }
        sum
    }

    /// Calls `leaf` with the offset of each tree's leaf, in tree order. `D`
    /// is the depth when known at compile time (the levels unroll), else 0.
    #[inline(always)]
    fn each_leaf_scalar<const D: usize>(
        &self,
        words: &[u64],
        dimension: usize,
        mut leaf: impl FnMut(usize),
    ) {
        let depth = if D == 0 { self.depth } else { D };
        let stride = (depth + 2) * LANES;
        for (b, block) in self.blocks.chunks_exact(stride).enumerate() {
            let block = &block[..stride];
            for lane in 0..(self.count - b * LANES).min(LANES) {
                let mut index = 0u32;
                for d in 0..depth {
                    index |= bit(words, block[d * LANES + lane]) << d;
                }
                let first = block[depth * LANES + lane] as usize;
                let mask = block[(depth + 1) * LANES + lane];
                leaf(first + (index & mask) as usize * dimension);
            }
        }
    }
}

/// Bit `p` of the packed condition bits.
#[inline(always)]
pub(crate) fn bit(words: &[u64], p: u32) -> u32 {
    ((words[p as usize / 64] >> (p % 64)) & 1) as u32
}
