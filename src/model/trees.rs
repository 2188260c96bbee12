//! The tree kernels and the choice between them: a scalar loop that every
//! build has and tests, and AVX2 and AVX-512 ones ([`super::simd`]) chosen
//! at run time when the CPU has them ([`Kernel::detect`]), all reading the
//! layout of [`super::layout`]. The kernels compute the same indexes and add
//! the same leaves in tree order, so their sums are bit-identical: the order
//! of additions is CatBoost's own.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

use super::chunks::{sum_chunks, sum_pair_chunks, Chain, ChunkOffsets};
use super::layout::{FloatBorders, Trees, CHUNK_TREES, EIGHTS_RUN, LANES};
use super::plan::PendingBits;

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

/// The code that runs a model's trees ([`Trees::path`]): the kernel asked
/// for, narrowed to this CPU and to the trees' layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Scalar,
    /// AVX2, eight trees per level by gathers (trees without the byte
    /// layout).
    Gathers,
    /// AVX2, 32 trees per level by `vpshufb` over the byte layout.
    Shuffles,
    /// AVX-512 VBMI, 64 trees per level by byte permutes.
    Permutes,
}

impl Trees {
    /// The kernel that runs when `kernel` is asked for: the widest one at
    /// most `kernel` that this CPU has and these trees fit.
    pub(crate) fn kernel(&self, kernel: Kernel) -> Kernel {
        match self.path(kernel) {
            Path::Scalar => Kernel::Scalar,
            Path::Gathers | Path::Shuffles => Kernel::Avx2,
            Path::Permutes => Kernel::Avx512,
        }
    }

    /// The code that computes these trees' leaves when `kernel` is asked
    /// for: the one home of that choice. Trees with the byte layout run
    /// the byte kernels; others gather.
    #[inline]
    fn path(&self, kernel: Kernel) -> Path {
        match (kernel.min(Kernel::detect()), self.bytes.is_empty()) {
            (Kernel::Scalar, _) => Path::Scalar,
            (_, true) => Path::Gathers,
            (Kernel::Avx2, false) => Path::Shuffles,
            (Kernel::Avx512, false) => Path::Permutes,
        }
    }

    /// How many calls of [`Trees::offsets`] cover the trees.
    #[inline]
    pub(crate) fn chunks(&self) -> usize {
        self.count.div_ceil(CHUNK_TREES)
    }

    /// The leaf offset of each tree of chunk `c` (trees `c * CHUNK_TREES`
    /// on, one-dimensional models), in tree order, into the start of `out`;
    /// returns how many trees the chunk has. Entries past that are
    /// unspecified.
    #[inline]
    pub(crate) fn offsets(
        &self,
        kernel: Kernel,
        words: &[u64],
        c: usize,
        out: &mut [u32; CHUNK_TREES],
    ) -> usize {
        let n = (self.count - c * CHUNK_TREES).min(CHUNK_TREES);
        // SAFETY (each vector path): `path` picks it only when
        // `Kernel::detect` found its features on this CPU (AVX-512 F, BW
        // and VBMI for the permutes, AVX2 for the others).
        match self.path(kernel) {
            #[cfg(target_arch = "x86_64")]
            Path::Permutes => unsafe { super::simd::offsets_bytes(self, words, c, out) },
            #[cfg(target_arch = "x86_64")]
            Path::Shuffles => unsafe { super::simd::offsets_shuffle(self, words, c, out) },
            #[cfg(target_arch = "x86_64")]
            Path::Gathers => unsafe { super::simd::offsets(self, words, c, out) },
            _ => self.offsets_scalar(words, c, out),
        }
        n
    }

    /// The sum of each tree's leaf (one-dimensional models), in tree order.
    /// The byte kernels write offsets a chunk at a time and sum them (the
    /// shuffles with their tables built once); the gathers and the scalar
    /// code add each leaf as they find it, which costs them fewer
    /// instructions (callgrind, `scripts/callgrind-model.sh`).
    #[inline]
    pub(crate) fn sum(&self, kernel: Kernel, words: &[u64], leaves: &[f64]) -> f64 {
        match self.path(kernel) {
            Path::Permutes => sum_chunks(&self.with(kernel, words, leaves)),
            // SAFETY: `path` picks these only when `Kernel::detect` found
            // AVX2 on this CPU.
            #[cfg(target_arch = "x86_64")]
            Path::Shuffles => unsafe { super::simd::sum_shuffle(self, words, leaves) },
            #[cfg(target_arch = "x86_64")]
            Path::Gathers => unsafe { super::simd::sum(self, words, leaves) },
            _ => self.sum_scalar(words, leaves),
        }
    }

    /// These trees' offsets through [`Trees::offsets`] with `kernel`, and
    /// their `leaves`.
    fn with<'a>(
        &'a self,
        kernel: Kernel,
        words: &'a [u64],
        leaves: &'a [f64],
    ) -> KernelOffsets<'a> {
        KernelOffsets {
            trees: self,
            kernel,
            words,
            leaves,
        }
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
        self.each_leaf_scalar::<0>(words, dim, 0..usize::MAX, |at| {
            for (o, leaf) in out.iter_mut().zip(&leaves[at..at + dim]) {
                *o += leaf;
            }
        });
    }

    fn sum_scalar(&self, words: &[u64], leaves: &[f64]) -> f64 {
        let mut sum = 0.0;
        let mut add = |at: usize| sum += leaves[at];
        self.each_leaf_unrolled(words, 0..usize::MAX, &mut add);
        sum
    }

    fn offsets_scalar(&self, words: &[u64], c: usize, out: &mut [u32; CHUNK_TREES]) {
        let blocks = c * CHUNK_TREES / LANES..((c + 1) * CHUNK_TREES / LANES);
        let mut i = 0;
        let mut put = |at: usize| {
            out[i] = at as u32;
            i += 1;
        };
        self.each_leaf_unrolled(words, blocks, &mut put);
    }

    /// [`Trees::each_leaf_scalar`] for one-dimensional leaves, its levels
    /// unrolled for the depths models are trained with.
    #[inline(always)]
    fn each_leaf_unrolled(
        &self,
        words: &[u64],
        blocks: std::ops::Range<usize>,
        leaf: impl FnMut(usize),
    ) {
        match self.depth {
            4 => self.each_leaf_scalar::<4>(words, 1, blocks, leaf),
            5 => self.each_leaf_scalar::<5>(words, 1, blocks, leaf),
            6 => self.each_leaf_scalar::<6>(words, 1, blocks, leaf),
            7 => self.each_leaf_scalar::<7>(words, 1, blocks, leaf),
            8 => self.each_leaf_scalar::<8>(words, 1, blocks, leaf),
            _ => self.each_leaf_scalar::<0>(words, 1, blocks, leaf),
        }
    }

    /// Calls `leaf` with the offset of each tree's leaf, in tree order, for
    /// the trees of `blocks` (cut to the blocks there are). `D` is the depth
    /// when known at compile time (the levels unroll), else 0.
    #[inline(always)]
    fn each_leaf_scalar<const D: usize>(
        &self,
        words: &[u64],
        dimension: usize,
        blocks: std::ops::Range<usize>,
        mut leaf: impl FnMut(usize),
    ) {
        let depth = if D == 0 { self.depth } else { D };
        let stride = (depth + 2) * LANES;
        let all = self.blocks.chunks_exact(stride).enumerate();
        for (b, block) in all.skip(blocks.start).take(blocks.len()) {
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

impl FloatBorders {
    /// ORs the float condition bits of `floats` into `words` (bit `i` for
    /// border `i`): with AVX-512 when `kernel` is [`Kernel::Avx512`] and the
    /// CPU has it, border by border; else eight borders of one feature at a
    /// time (one compare with AVX2), whose answers are the eight's bits.
    /// All compare the same values with the same `>` on ascending borders,
    /// so the bits are the same (`float_bits_agree`).
    #[inline]
    pub(crate) fn set_bits(&self, kernel: Kernel, floats: &[f32], words: &mut [u64]) {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512 && Kernel::Avx512.is_available() {
            // SAFETY: AVX-512 F was detected just above.
            unsafe { super::simd::float_bits(self, floats, words) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if kernel != Kernel::Scalar && Kernel::Avx2.is_available() {
            // SAFETY: AVX2 was detected just above.
            unsafe { super::simd::float_bits_runs(self, floats, words) };
            return;
        }
        let _ = kernel;
        self.set_runs(floats, words, |eight, v| {
            let mut below = 0;
            for (i, &b) in eight.iter().enumerate() {
                below |= u64::from(b < v) << i;
            }
            below
        });
    }

    /// [`FloatBorders::set_bits`] run by run: a run of at most
    /// [`EIGHTS_RUN`] borders by its eights, each eight's answers from
    /// `eight_below` (bit `i` for "border `i` below the value"), longer
    /// runs by a search. Neither branches on the document's values; how
    /// many eights a run has is the model's.
    #[inline(always)]
    pub(crate) fn set_runs(
        &self,
        floats: &[f32],
        words: &mut [u64],
        eight_below: impl Fn(&[f32; 8], f32) -> u64,
    ) {
        let mut bits = PendingBits::new(words);
        for (&(feature, fill, start, end), &(from, to)) in self.runs.iter().zip(&self.run_eights) {
            let mut v = floats[feature as usize];
            if v.is_nan() {
                v = fill;
            }
            if end - start <= EIGHTS_RUN as u32 {
                let mut pattern = 0;
                for (k, eight) in self.eights[from as usize..to as usize].iter().enumerate() {
                    pattern |= eight_below(eight, v) << (8 * k);
                }
                bits.or(start as usize, pattern);
            } else {
                let below = below(&self.borders[start as usize..end as usize], v);
                bits.ones(start as usize, below);
            }
        }
        bits.finish();
    }
}

/// How many of the ascending `borders` are below `v` ("border below v" is
/// CatBoost's `v > border`: false for NaN): a binary search whose steps
/// select instead of branch, since the document's value decides them.
#[inline(always)]
pub(crate) fn below(borders: &[f32], v: f32) -> usize {
    if borders.is_empty() {
        return 0;
    }
    // Every border before `lo` is below v, none from `lo + n` on.
    let (mut lo, mut n) = (0, borders.len());
    while n > 1 {
        let half = n / 2;
        lo = std::hint::select_unpredictable(borders[lo + half - 1] < v, lo + half, lo);
        n -= half;
    }
    lo + usize::from(borders[lo] < v)
}

/// [`Trees::offsets`] with one kernel, for [`sum_chunks`].
pub(crate) struct KernelOffsets<'a> {
    trees: &'a Trees,
    kernel: Kernel,
    words: &'a [u64],
    leaves: &'a [f64],
}

impl ChunkOffsets for KernelOffsets<'_> {
    #[inline(always)]
    fn chunks(&self) -> usize {
        self.trees.chunks()
    }

    #[inline(always)]
    fn chunk(&self, c: usize, out: &mut [u32; CHUNK_TREES]) -> usize {
        self.trees.offsets(self.kernel, self.words, c, out)
    }

    #[inline(always)]
    fn leaf(&self, offset: u32) -> f64 {
        self.leaves[offset as usize]
    }
}

/// Two models' sums on the same condition bits: [`sum_pair_chunks`] with
/// each model's kernel, or the AVX2 shuffle kernel's pair sum, which builds
/// its tables once for both.
#[inline]
pub(crate) fn sum_pair(kernel: Kernel, a: &Chain<'_>, b: &Chain<'_>) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if a.trees.path(kernel) == Path::Shuffles
        && b.trees.path(kernel) == Path::Shuffles
        && std::ptr::eq(a.words, b.words)
    {
        // SAFETY: `path` picks the shuffles only when `Kernel::detect`
        // found AVX2 on this CPU.
        return unsafe { super::simd::sum_pair_shuffle(a, b) };
    }
    sum_pair_chunks(
        &a.trees.with(kernel, a.words, a.leaves),
        &b.trees.with(kernel, b.words, b.leaves),
    )
}

/// Bit `p` of the packed condition bits.
#[inline(always)]
pub(crate) fn bit(words: &[u64], p: u32) -> u32 {
    ((words[p as usize / 64] >> (p % 64)) & 1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded: a failure comes back on every run.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        move || rng.u64(..)
    }

    /// Random trees over every table size the AVX-512 kernel has (one to
    /// four register pairs, and bit arrays that end inside a register),
    /// depths 1 to 8 mixed in one model, counts around a group of 64:
    /// every kernel gives the scalar kernel's bits.
    #[test]
    fn kernels_agree_on_random_layouts() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        // Every table count of the AVX2 shuffle kernel (1 to 32 tables of
        // 128 conditions), and past the byte layout (gathers).
        for bits in [
            2usize, 100, 200, 300, 500, 700, 1024, 1025, 1600, 2048, 2049, 2600, 3000, 4096, 5000,
        ] {
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

    /// Leaves that stop short of the trees' `leaf_end` (a plan bug) stop
    /// the sum with a panic on every path, before any leaf is read: the
    /// shuffle kernel reads its leaves without a check per leaf, so its
    /// one check up front is what keeps it from reading past them.
    #[test]
    fn leaves_short_of_the_trees_panic() {
        let trees: Vec<(u32, Vec<u32>)> = (0..70).map(|t| (t * 4, vec![0, 1])).collect();
        let t = Trees::build(&trees, 2, 1);
        let leaves = vec![1.0; t.leaf_end];
        let words = [0b11u64];
        for kernel in [Kernel::Scalar, Kernel::Avx2, Kernel::Avx512] {
            // Every tree takes its last leaf (both bits set).
            assert_eq!(t.sum(kernel, &words, &leaves), 70.0, "{kernel}");
            let short = &leaves[..t.leaf_end - 1];
            let panic = std::panic::catch_unwind(|| t.sum(kernel, &words, short))
                .expect_err("a sum past the leaves must panic");
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or_default();
            if t.kernel(kernel) == Kernel::Avx2 {
                assert!(
                    message.contains("leaf indexes out of range"),
                    "{kernel}: {message}"
                );
            }
        }
    }

    /// The branch-free search counts what `partition_point` counts: every
    /// length up to 40, values on, between and beyond the borders, NaN and
    /// infinities.
    #[test]
    fn below_is_partition_point() {
        let mut next = rng(0xb0_4de5);
        for len in 0..40 {
            for _ in 0..50 {
                let mut borders: Vec<f32> =
                    (0..len).map(|_| (next() % 64) as f32 / 4.0 - 8.0).collect();
                borders.sort_by(f32::total_cmp);
                let probes = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0];
                for v in probes
                    .into_iter()
                    .chain((0..20).map(|_| (next() % 80) as f32 / 4.0 - 10.0))
                {
                    assert_eq!(
                        below(&borders, v),
                        borders.partition_point(|&b| b < v),
                        "{v} in {borders:?}"
                    );
                }
            }
        }
    }

    type Layout = (Trees, Vec<u64>, Vec<f64>);

    /// Two models' sums side by side ([`sum_pair`]) are each model's
    /// [`Trees::sum`], bit for bit, with every kernel: chunk counts equal
    /// and different (one model longer than the other by whole chunks and
    /// within one), depths mixed.
    #[test]
    fn paired_sums_are_each_sum() {
        let mut next = rng(0x2545_f491_4f6c_dd1d);
        let mut model = |count: usize, bits: usize| {
            let zero = bits as u32 - 1;
            let mut leaves = Vec::new();
            let mut trees = Vec::new();
            for _ in 0..count {
                let d = 1 + next() as usize % 6;
                let splits = (0..d).map(|_| (next() % u64::from(zero)) as u32).collect();
                trees.push((leaves.len() as u32, splits));
                for _ in 0..1 << d {
                    let unit = (next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    leaves.push(unit * 10f64.powi((next() % 12) as i32 - 6));
                }
            }
            let mut words: Vec<u64> = (0..bits.div_ceil(64)).map(|_| next()).collect();
            words[zero as usize / 64] &= !(1 << (zero % 64));
            (Trees::build(&trees, zero, 1), words, leaves)
        };
        for (count_a, count_b) in [(1, 1), (291, 296), (600, 65), (65, 1100), (512, 513)] {
            for bits in [100, 455, 3000, 5000] {
                let a = model(count_a, bits);
                let mut b = model(count_b, bits);
                // Most pairs read one bit array, as a group's members do
                // (the AVX2 shuffle kernel then builds its tables once for
                // both); one in four reads two.
                if !(count_a + bits).is_multiple_of(4) {
                    b.1 = a.1.clone();
                }
                for kernel in [Kernel::Scalar, Kernel::Avx2, Kernel::Avx512] {
                    fn chain(kernel: Kernel, m: &Layout) -> (f64, Chain<'_>) {
                        let sum = m.0.sum(kernel, &m.1, &m.2);
                        let chain = Chain {
                            trees: &m.0,
                            words: &m.1,
                            leaves: &m.2,
                        };
                        (sum, chain)
                    }
                    let ((alone_a, chain_a), (alone_b, chain_b)) =
                        (chain(kernel, &a), chain(kernel, &b));
                    let chain_b = Chain {
                        words: if b.1 == a.1 { &a.1 } else { &b.1 },
                        ..chain_b
                    };
                    let (sum_a, sum_b) = sum_pair(kernel, &chain_a, &chain_b);
                    let what = format!("{kernel}: {count_a} and {count_b} trees, {bits} bits");
                    assert_eq!(sum_a.to_bits(), alone_a.to_bits(), "{what}");
                    assert_eq!(sum_b.to_bits(), alone_b.to_bits(), "{what}");
                    // And the scalar kernel's sums, so that a kernel bug
                    // common to both paths cannot hide.
                    let scalar = a.0.sum(Kernel::Scalar, &a.1, &a.2);
                    assert_eq!(sum_a.to_bits(), scalar.to_bits(), "{what}");
                }
            }
        }
    }

    /// The AVX2 and AVX-512 float conditions are the scalar ones, bit for
    /// bit (AVX-512 with the values in registers, up to 64 features, and
    /// gathered, more; runs shorter and longer than a word of bits):
    /// random borders, features and fills, values with NaN, infinities,
    /// signed zeros, equal to a border, random bits.
    #[test]
    fn float_bits_agree() {
        let mut next = rng(0x1234_5678_9abc_def1);
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
        for feature_count in [1usize, 16, 17, 33, 64, 65, 200] {
            for border_count in [1usize, 15, 16, 17, 158, 300] {
                let mut fb = FloatBorders::default();
                // Runs of ascending borders, a random feature each
                // (a feature may have several runs: the bits are the same).
                while fb.borders.len() < border_count {
                    let feature = (next() % feature_count as u64) as u32;
                    let fill = [f32::NAN, f32::NEG_INFINITY, f32::INFINITY][(next() % 3) as usize];
                    let start = fb.borders.len();
                    // Mostly short runs, as trained models have; some
                    // longer than a word.
                    let longest = if next().is_multiple_of(4) { 140 } else { 30 };
                    let len = (1 + next() as usize % longest).min(border_count - start);
                    let mut run: Vec<f32> = (0..len)
                        .map(|_| (next() % 2000) as f32 / 10.0 - 100.0)
                        .collect();
                    run.sort_by(f32::total_cmp);
                    fb.push_run(feature, fill, &run);
                }
                let borders = fb.borders.clone();
                fb.pad();
                for _ in 0..20 {
                    let floats: Vec<f32> = (0..feature_count)
                        .map(|_| match next() % 4 {
                            0 => specials[(next() % 5) as usize],
                            1 => borders[(next() % border_count as u64) as usize],
                            2 => f32::from_bits(next() as u32),
                            _ => (next() % 2000) as f32 / 10.0 - 100.0,
                        })
                        .collect();
                    let words = |kernel: Kernel| {
                        let mut w = vec![0u64; fb.borders.len().div_ceil(64) + 1];
                        fb.set_bits(kernel, &floats, &mut w);
                        w
                    };
                    let scalar = words(Kernel::Scalar);
                    for kernel in [Kernel::Avx2, Kernel::Avx512] {
                        assert_eq!(
                            words(kernel),
                            scalar,
                            "{kernel}: {feature_count} features, {border_count} borders"
                        );
                    }
                    // And the scalar bits are the definition: value > border.
                    for (i, (&b, (&f, &fill))) in fb
                        .borders
                        .iter()
                        .zip(fb.features.iter().zip(&fb.fills))
                        .enumerate()
                    {
                        let v = floats[f as usize];
                        let v = if v.is_nan() { fill } else { v };
                        assert_eq!((scalar[i / 64] >> (i % 64)) & 1 == 1, v > b, "border {i}");
                    }
                }
            }
        }
    }
}
