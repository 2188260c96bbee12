//! The tree kernels and the choice between them: a scalar loop that every
//! build has and tests, and AVX2 and AVX-512 ones ([`super::simd`]) chosen
//! at run time when the CPU has them ([`Kernel::detect`]), all reading the
//! layout of [`super::layout`]. The kernels compute the same indexes and add
//! the same leaves in tree order, so their sums are bit-identical: the order
//! of additions is CatBoost's own.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

use super::layout::{Trees, LANES};

/// Which code evaluates the trees, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// One tree at a time; always available.
    Scalar,
    /// Eight trees at a time with AVX2 gathers (x86-64 CPUs since 2013).
    Avx2,
    /// Sixty-four trees at a time with AVX-512 VBMI byte permutes (Ice Lake
    /// and later), for one-dimensional models of at most 4096 conditions
    /// and depth 8; other models run the AVX2 kernel.
    Avx512,
}

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

impl Trees {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: deterministic, no dependency.
    fn rng(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Random trees over every table size the AVX-512 kernel has (one to
    /// four register pairs, and bit arrays that end inside a register),
    /// depths 1 to 8 mixed in one model, counts around a group of 64:
    /// every kernel gives the scalar kernel's bits.
    #[test]
    fn kernels_agree_on_random_layouts() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        for bits in [2usize, 100, 1024, 1025, 2048, 2049, 3000, 4096, 5000] {
            for depth in [1usize, 3, 6, 8] {
                for count in [1usize, 63, 64, 65, 600] {
                    let zero = bits as u32 - 1;
                    let mut leaves = Vec::new();
                    let mut trees = Vec::new();
                    for _ in 0..count {
                        let d = 1 + next() as usize % depth;
                        let splits = (0..d).map(|_| (next() % u64::from(zero)) as u32).collect();
                        trees.push((leaves.len() as u32, splits));
                        for _ in 0..1 << d {
                            let unit = (next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                            leaves.push(unit * 10f64.powi((next() % 12) as i32 - 6));
                        }
                    }
                    let t = Trees::build(&trees, zero, 1);
                    assert_eq!(t.bytes.is_empty(), t.bit_end > 4096, "{bits} bits");
                    let mut words: Vec<u64> = (0..bits.div_ceil(64)).map(|_| next()).collect();
                    words[zero as usize / 64] &= !(1 << (zero % 64));
                    let scalar = t.sum(Kernel::Scalar, &words, &leaves).to_bits();
                    for kernel in [Kernel::Avx2, Kernel::Avx512] {
                        assert_eq!(
                            t.sum(kernel, &words, &leaves).to_bits(),
                            scalar,
                            "{kernel}: {bits} bits, depth {depth}, {count} trees"
                        );
                    }
                }
            }
        }
    }
}
