//! The vector tree kernels (AVX2, AVX-512) and the prefetch hint: the only
//! `unsafe` of the evaluator, kept in this one module.
//!
//! Why `unsafe` here at all: AVX2 gathers read through raw pointers, and a
//! function compiled for a target feature may only be called on a CPU that
//! has it. Both obligations are discharged in one place each: [`offsets`] and
//! [`sum_dims`] check, once per call, that every bit position (and, for
//! `sum_dims`, leaf index) the trees can produce is inside the slices they
//! are given (the plan computed those bounds when it laid the trees out),
//! and their callers (`Trees::offsets` and `Trees::sum_dims` in `trees.rs`)
//! call them only after `is_x86_feature_detected!`. [`offsets_bytes`]
//! (AVX-512) reads no memory
//! through vector indexes at all: its table lookups are register permutes,
//! its leaf loads ordinary bounds-checked indexing. Everything else
//! (register loads from slices of exactly 8 or 64 lanes, shifts, masks)
//! follows from the slices' lengths.
//!
//! Each kernel computes the leaf indexes of several trees at once, exactly
//! as the scalar loop of `trees.rs` does one at a time; `trees.rs` then adds
//! the leaves to the sum in tree order: the result is bit-identical to the scalar
//! kernel's (`tests/model_kernels.rs`, `fuzz/fuzz_targets/model_kernels.rs`).
//! Without AVX2 (or off x86-64) only the scalar kernel runs; it is always
//! built and always tested.

// This module is why the crate declares `rust-version = "1.89"`: the AVX-512
// intrinsics, and SIMD intrinsics that are safe to call inside
// `#[target_feature]` functions, are stable from 1.89.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use super::chunks::{sum_chunks, sum_pair_chunks, Chain, ChunkOffsets};

#[cfg(target_arch = "x86_64")]
use super::layout::{
    FloatBorders, Trees, BORDER_LANES, BYTE_CONDITIONS, BYTE_LANES, CHUNK_TREES, LANES,
};

/// Asks the CPU to start loading the cache line of `r`: a hint, never a
/// fault, so it is sound for any reference.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; the address comes from a reference.
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// [`FloatBorders::set_bits`] with AVX-512: sixteen borders at a time, the
/// values looked up by feature index, NaN replaced with the fill, compared
/// with `>` (ordered: false for NaN, as Rust's `>`), the sixteen answers
/// ORed into `words` at bit `16 * k`. Up to 64 float features the values
/// are looked up in registers (`vpermt2ps`): the caller has just stored
/// `floats`, and a gather would wait for those stores to reach the cache;
/// beyond that they are gathered.
///
/// # Safety
/// AVX-512 F must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn float_bits(b: &FloatBorders, floats: &[f32], words: &mut [u64]) {
    // What the lookups rely on (the plan built it so; a broken plan
    // panics here instead of reading out of bounds).
    assert!(
        b.feature_end <= floats.len() && b.feature_end <= i32::MAX as usize,
        "float features out of range"
    );
    assert!(
        b.features.len() == b.borders.len()
            && b.fills.len() == b.borders.len()
            && b.borders.len().is_multiple_of(BORDER_LANES),
        "float borders misshapen"
    );
    // The first 64 floats, sixteen a register; lanes past the end are
    // masked off (not read) and zero.
    let table = |k: usize| {
        let have = floats.get(BORDER_LANES * k..).unwrap_or_default();
        let n = have.len().min(BORDER_LANES);
        let mask = ((1u32 << n) - 1) as u16;
        // SAFETY: only the first `n` lanes are read, and `have` holds them.
        unsafe { _mm512_maskz_loadu_ps(mask, have.as_ptr()) }
    };
    let registers = b.feature_end <= 4 * BORDER_LANES;
    let t: [__m512; 4] = if registers {
        std::array::from_fn(table)
    } else {
        [_mm512_setzero_ps(); 4]
    };
    let vectors = b
        .borders
        .chunks_exact(BORDER_LANES)
        .zip(b.features.chunks_exact(BORDER_LANES))
        .zip(b.fills.chunks_exact(BORDER_LANES));
    for (k, ((borders, features), fills)) in vectors.enumerate() {
        // SAFETY: each slice holds exactly sixteen 4-byte values, the 64
        // bytes loaded.
        let (border, index, fill) = unsafe {
            (
                _mm512_loadu_ps(borders.as_ptr()),
                _mm512_loadu_si512(features.as_ptr().cast()),
                _mm512_loadu_ps(fills.as_ptr()),
            )
        };
        let v = if registers {
            // Index bits 0-4 pick in a pair of registers, bit 5 the pair.
            let low = _mm512_permutex2var_ps(t[0], index, t[1]);
            let high = _mm512_permutex2var_ps(t[2], index, t[3]);
            let upper = _mm512_test_epi32_mask(index, _mm512_set1_epi32(32));
            _mm512_mask_blend_ps(upper, low, high)
        } else {
            // SAFETY: every index is below feature_end <= floats.len()
            // (checked), and non-negative as an i32 (feature_end <= i32::MAX).
            unsafe { _mm512_i32gather_ps::<4>(index, floats.as_ptr()) }
        };
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        let v = _mm512_mask_blend_ps(nan, v, fill);
        let above = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, border);
        words[k / 4] |= u64::from(above) << (16 * (k % 4));
    }
}

/// [`FloatBorders::set_bits`] with AVX2: a short run's borders compared
/// with the value at once, the compare's mask being the run's bits.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn float_bits_runs(b: &FloatBorders, floats: &[f32], words: &mut [u64]) {
    b.set_runs(floats, words, |eight, v| {
        // SAFETY: `eight` is exactly the eight f32 loaded.
        let borders = unsafe { _mm256_loadu_ps(eight.as_ptr()) };
        // Ordered "border < value": false for NaN and the NaN padding.
        let below = _mm256_cmp_ps::<_CMP_LT_OQ>(borders, _mm256_set1_ps(v));
        _mm256_movemask_ps(below) as u32 as u64
    });
}

/// The first leaf and the leaf index of each of the eight trees of one
/// block. `D` is the block's depth when known at compile time (the loop
/// over levels unrolls), 0 otherwise.
///
/// # Safety
/// AVX2 must be available, `block` must be one block of `trees` and
/// [`check`] must have passed for `words`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block_leaves<const D: usize>(
    block: &[u32],
    depth: usize,
    words: &[u64],
) -> (__m256i, __m256i) {
    let depth = if D == 0 { depth } else { D };
    let block = &block[..(depth + 2) * LANES];
    let base = words.as_ptr().cast::<i32>();
    let low5 = _mm256_set1_epi32(31);
    let one = _mm256_set1_epi32(1);
    let lanes = |k: usize| {
        let v = &block[k * LANES..(k + 1) * LANES];
        // SAFETY: `v` holds exactly eight u32, the 32 bytes loaded.
        unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
    };
    let mut index = _mm256_setzero_si256();
    // Deepest level first: each level shifts the ones before it up by one,
    // so level d ends at bit d.
    for d in (0..depth).rev() {
        let at = lanes(d);
        // SAFETY: every position p is below bit_end <= words.len() * 64
        // (checked), so the 32-bit word p / 32 is inside `words`.
        let word = unsafe { _mm256_i32gather_epi32::<4>(base, _mm256_srli_epi32::<5>(at)) };
        let bit = _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_and_si256(at, low5)), one);
        index = _mm256_or_si256(_mm256_slli_epi32::<1>(index), bit);
    }
    (lanes(depth), _mm256_and_si256(index, lanes(depth + 1)))
}

/// The bounds the gathers rely on, checked once per call: a plan that broke
/// them would be a bug, and this turns it into a panic instead of a read out
/// of bounds. The word gathers need `check_bits`; the leaf gathers of
/// [`sum_dims`] need `check`, and the shuffle kernel's unchecked leaf reads
/// `check_leaves` ([`Shuffle::new`]); offsets returned by the other paths
/// have their leaves read with bounds-checked indexing.
#[cfg(target_arch = "x86_64")]
fn check_bits(trees: &Trees, words: &[u64]) {
    assert!(trees.bit_end <= words.len() * 64, "split bits out of range");
}

#[cfg(target_arch = "x86_64")]
fn check_leaves(trees: &Trees, leaves: &[f64]) {
    assert!(
        trees.leaf_end <= leaves.len() && leaves.len() <= i32::MAX as usize,
        "leaf indexes out of range"
    );
}

#[cfg(target_arch = "x86_64")]
fn check(trees: &Trees, words: &[u64], leaves: &[f64]) {
    check_bits(trees, words);
    check_leaves(trees, leaves);
}

/// [`Trees::sum`] with AVX2 for one model: each block's eight leaves
/// gathered and added at once. Fewer instructions than offsets then a sum
/// (what AVX-512 and the paired sums use), for a CPU without AVX-512.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn sum(trees: &Trees, words: &[u64], leaves: &[f64]) -> f64 {
    check(trees, words, leaves);
    // SAFETY (all arms): AVX2 is available (this function's contract) and
    // the bounds were checked.
    unsafe {
        match trees.depth {
            4 => sum_depth::<4>(trees, words, leaves),
            5 => sum_depth::<5>(trees, words, leaves),
            6 => sum_depth::<6>(trees, words, leaves),
            7 => sum_depth::<7>(trees, words, leaves),
            8 => sum_depth::<8>(trees, words, leaves),
            _ => sum_depth::<0>(trees, words, leaves),
        }
    }
}

/// # Safety
/// As [`block_leaves`], for every block of `trees`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn sum_depth<const D: usize>(trees: &Trees, words: &[u64], leaves: &[f64]) -> f64 {
    let depth = trees.depth;
    let full = trees.count / LANES;
    let mut sum = 0.0;
    let mut values = [0.0f64; LANES];
    for (b, block) in trees.blocks.chunks_exact((depth + 2) * LANES).enumerate() {
        // SAFETY: the caller's contract.
        let (first, index) = unsafe { block_leaves::<D>(block, depth, words) };
        let at = _mm256_add_epi32(first, index);
        // SAFETY: every lane's offset is below leaf_end <= leaves.len()
        // (checked); `values` holds eight f64.
        unsafe {
            let low = _mm256_i32gather_pd::<8>(leaves.as_ptr(), _mm256_castsi256_si128(at));
            let high = _mm256_i32gather_pd::<8>(leaves.as_ptr(), _mm256_extracti128_si256::<1>(at));
            _mm256_storeu_pd(values.as_mut_ptr(), low);
            _mm256_storeu_pd(values.as_mut_ptr().add(4), high);
        }
        // In tree order, one addition at a time: CatBoost's sum.
        if b < full {
            for v in values {
                sum += v;
            }
        } else {
            for &v in &values[..trees.count - b * LANES] {
                sum += v;
            }
        }
    }
    sum
}

/// [`Trees::offsets`] with AVX2: eight trees' leaf offsets per block.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn offsets(trees: &Trees, words: &[u64], c: usize, out: &mut [u32; CHUNK_TREES]) {
    check_bits(trees, words);
    // SAFETY (all arms): AVX2 is available (this function's contract) and
    // the bounds were checked.
    unsafe {
        match trees.depth {
            4 => offsets_depth::<4>(trees, words, c, out),
            5 => offsets_depth::<5>(trees, words, c, out),
            6 => offsets_depth::<6>(trees, words, c, out),
            7 => offsets_depth::<7>(trees, words, c, out),
            8 => offsets_depth::<8>(trees, words, c, out),
            _ => offsets_depth::<0>(trees, words, c, out),
        }
    }
}

/// # Safety
/// As [`block_leaves`], for every block of `trees`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn offsets_depth<const D: usize>(
    trees: &Trees,
    words: &[u64],
    c: usize,
    out: &mut [u32; CHUNK_TREES],
) {
    let depth = trees.depth;
    let blocks = trees
        .blocks
        .chunks_exact((depth + 2) * LANES)
        .skip(c * CHUNK_TREES / LANES);
    // `out` holds the chunk's blocks: the zip stops at the chunk's end.
    for (block, out) in blocks.zip(out.chunks_exact_mut(LANES)) {
        // SAFETY: the caller's contract.
        let (first, index) = unsafe { block_leaves::<D>(block, depth, words) };
        // SAFETY: `out` holds exactly eight u32, the 32 bytes stored.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm256_add_epi32(first, index)) };
    }
}

/// [`Trees::sum_dims`] with AVX2 (indexes eight at a time, leaf vectors added
/// in tree order); `out` is zeroed by the caller.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn sum_dims(trees: &Trees, words: &[u64], leaves: &[f64], out: &mut [f64]) {
    check(trees, words, leaves);
    let dim = out.len();
    let depth = trees.depth;
    let mut at = [0u32; LANES];
    for (b, block) in trees.blocks.chunks_exact((depth + 2) * LANES).enumerate() {
        // SAFETY: AVX2 is available and the bounds were checked.
        let (first, index) = unsafe { block_leaves::<0>(block, depth, words) };
        let leaf = _mm256_add_epi32(
            first,
            _mm256_mullo_epi32(index, _mm256_set1_epi32(dim as i32)),
        );
        // SAFETY: `at` holds exactly eight u32.
        unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), leaf) };
        for &a in &at[..(trees.count - b * LANES).min(LANES)] {
            let a = a as usize;
            for (o, leaf) in out.iter_mut().zip(&leaves[a..a + dim]) {
                *o += leaf;
            }
        }
    }
}

// The shuffle kernel (below) computes one AVX-512-layout group per chunk.
#[cfg(target_arch = "x86_64")]
const _: () = assert!(CHUNK_TREES == BYTE_LANES);

/// Table counts the shuffle kernel is compiled for: each table costs a
/// `vpshufb` and a `vpblendvb` per 32 tree-levels, so a model gets the
/// smallest count that covers its conditions, not the next power of two.
#[cfg(target_arch = "x86_64")]
const TABLE_COUNTS: [usize; 11] = [1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 32];

/// The shuffle kernel's 16-byte tables (128 conditions each) for trees
/// reading bits below `bit_end`: the smallest of [`TABLE_COUNTS`] that
/// covers them (the byte layout stops at 4096 conditions, 32 tables).
#[cfg(target_arch = "x86_64")]
pub(crate) fn shuffle_tables(bit_end: usize) -> usize {
    let need = bit_end.div_ceil(128);
    TABLE_COUNTS
        .into_iter()
        .find(|&t| t >= need)
        .unwrap_or(BYTE_CONDITIONS / 128)
}

/// Calls `$f::<T, D>($args)` for `$tables` tables and depth `$depth` (D is
/// 6, the depth models are usually trained with, or 0: the trees' own).
#[cfg(target_arch = "x86_64")]
macro_rules! by_tables {
    ($f:ident, $tables:expr, $depth:expr, ($($arg:expr),*)) => {{
        macro_rules! call {
            ($t:literal) => {
                if $depth == 6 { $f::<$t, 6>($($arg),*) } else { $f::<$t, 0>($($arg),*) }
            };
        }
        match $tables {
            1 => call!(1),
            2 => call!(2),
            3 => call!(3),
            4 => call!(4),
            6 => call!(6),
            8 => call!(8),
            12 => call!(12),
            16 => call!(16),
            20 => call!(20),
            24 => call!(24),
            _ => call!(32),
        }
    }};
}

/// Words `from..from + N` of the packed condition bits, zero past the
/// array's end (conditions no tree reads): one table register's worth.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn padded_words<const N: usize>(words: &[u64], from: usize) -> [u64; N] {
    let mut w = [0u64; N];
    let have = words.get(from..).unwrap_or_default();
    let n = have.len().min(N);
    w[..n].copy_from_slice(&have[..n]);
    w
}

/// The packed condition bits as `T` tables of 16 bytes, each in both
/// halves of a register; bytes past the array are conditions no tree reads.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn tables<const T: usize>(words: &[u64]) -> [__m256i; T] {
    std::array::from_fn(|k| {
        let w = padded_words::<2>(words, 2 * k);
        // SAFETY: `w` is exactly the 16 bytes loaded.
        let t = unsafe { _mm_loadu_si128(w.as_ptr().cast()) };
        _mm256_broadcastsi128_si256(t)
    })
}

/// The shuffle kernel over one model's trees, its tables built once for a
/// whole prediction, and the model's leaves. Only made by [`Shuffle::new`],
/// which checks the trees' layout and that the leaves reach their
/// `leaf_end`, and only by the functions below, which require AVX2: that is
/// what makes calling the AVX2 code from `chunk`, and reading leaves
/// unchecked in `leaf`, sound.
#[cfg(target_arch = "x86_64")]
struct Shuffle<'a, const T: usize, const D: usize> {
    trees: &'a Trees,
    tables: &'a [__m256i; T],
    leaves: &'a [f64],
}

#[cfg(target_arch = "x86_64")]
impl<'a, const T: usize, const D: usize> Shuffle<'a, T, D> {
    fn new(trees: &'a Trees, tables: &'a [__m256i; T], leaves: &'a [f64]) -> Self {
        check_shuffle(trees);
        check_leaves(trees, leaves);
        Shuffle {
            trees,
            tables,
            leaves,
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl<const T: usize, const D: usize> ChunkOffsets for Shuffle<'_, T, D> {
    #[inline(always)]
    fn chunks(&self) -> usize {
        self.trees.chunks()
    }

    #[inline(always)]
    fn chunk(&self, c: usize, out: &mut [u32; CHUNK_TREES]) -> usize {
        // SAFETY: a Shuffle exists only inside the AVX2 functions below.
        unsafe { group_offsets::<T, D>(self.trees, self.tables, c, out) };
        (self.trees.count - c * CHUNK_TREES).min(CHUNK_TREES)
    }

    /// Without a bounds check: the leaf sums are a chain of dependent
    /// additions, and the check's compare and branch per leaf were 5 of
    /// the loop's 7 instructions per tree once unrolled (callgrind, 300
    /// trees: 13 259 against 11 666 per prediction).
    #[inline(always)]
    fn leaf(&self, offset: u32) -> f64 {
        debug_assert!((offset as usize) < self.trees.leaf_end);
        // SAFETY: `offset` comes from `group_offsets`, which is a tree's
        // first leaf plus its index masked with the tree's own leaf mask
        // (`Group::finish`); `Trees::build` sets `leaf_end` past the
        // largest such sum, and `Shuffle::new` checked `leaf_end` against
        // `leaves`.
        unsafe { *self.leaves.get_unchecked(offset as usize) }
    }
}

/// The bounds the shuffle kernel relies on, checked once per call: a plan
/// that broke them would be a bug, and this turns it into a panic.
#[cfg(target_arch = "x86_64")]
fn check_shuffle(trees: &Trees) {
    assert!(
        !trees.bytes.is_empty() && trees.bit_end <= BYTE_CONDITIONS,
        "trees without the byte layout"
    );
}

/// [`Trees::offsets`] with the AVX2 shuffle kernel (see [`group_offsets`]),
/// for one chunk; the sums use [`sum_shuffle`] and [`sum_pair_shuffle`],
/// which build the tables once.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn offsets_shuffle(
    trees: &Trees,
    words: &[u64],
    c: usize,
    out: &mut [u32; CHUNK_TREES],
) {
    check_shuffle(trees);
    #[target_feature(enable = "avx2")]
    fn one<const T: usize, const D: usize>(
        trees: &Trees,
        words: &[u64],
        c: usize,
        out: &mut [u32; CHUNK_TREES],
    ) {
        // SAFETY: this function is compiled for AVX2 and called only
        // from offsets_shuffle, whose caller has checked for it.
        unsafe { group_offsets::<T, D>(trees, &tables::<T>(words), c, out) };
    }
    by_tables!(
        one,
        shuffle_tables(trees.bit_end),
        0,
        (trees, words, c, out)
    )
}

/// [`Trees::sum`] with the AVX2 shuffle kernel.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn sum_shuffle(trees: &Trees, words: &[u64], leaves: &[f64]) -> f64 {
    #[target_feature(enable = "avx2")]
    fn sum<const T: usize, const D: usize>(trees: &Trees, words: &[u64], leaves: &[f64]) -> f64 {
        let tables = tables::<T>(words);
        sum_chunks(&Shuffle::<T, D>::new(trees, &tables, leaves))
    }
    by_tables!(
        sum,
        shuffle_tables(trees.bit_end),
        trees.depth,
        (trees, words, leaves)
    )
}

/// [`sum_pair`](super::trees::sum_pair) with the AVX2 shuffle kernel: the
/// two models read the same condition bits, so one set of tables (enough
/// for both) serves them.
///
/// # Safety
/// AVX2 must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn sum_pair_shuffle(a: &Chain<'_>, b: &Chain<'_>) -> (f64, f64) {
    assert!(std::ptr::eq(a.words, b.words), "a pair reads one bit array");
    #[target_feature(enable = "avx2")]
    fn pair<const T: usize, const D: usize>(a: &Chain<'_>, b: &Chain<'_>) -> (f64, f64) {
        let tables = tables::<T>(a.words);
        sum_pair_chunks(
            &Shuffle::<T, D>::new(a.trees, &tables, a.leaves),
            &Shuffle::<T, D>::new(b.trees, &tables, b.leaves),
        )
    }
    let depth = if a.trees.depth == b.trees.depth {
        a.trees.depth
    } else {
        0
    };
    by_tables!(
        pair,
        shuffle_tables(a.trees.bit_end.max(b.trees.bit_end)),
        depth,
        (a, b)
    )
}

/// One group of 64 trees (one chunk) of a model in the byte layout of the
/// AVX-512 kernel, as the AVX2 shuffle kernel reads it: each level of 32
/// trees (a half) looks its byte number's low four bits up in every table
/// with `vpshufb` and picks its table's answer with a tree of `vpblendvb`
/// on bits 4-8 ([`pick`]), then tests the tree's bit in that byte. AMD's
/// gathers are microcoded (an 8-lane gather costs what ~20 plain
/// instructions do there); this is about 2T + 8 instructions per 32
/// tree-levels for `T` tables, and reads no memory through an index.
#[cfg(target_arch = "x86_64")]
struct Group<'a> {
    /// Per level, a row of byte numbers and a row of bit masks, then a row
    /// of leaf masks, 64 bytes each.
    rows: &'a [u8],
    /// Per level, bit 8 of each tree's byte number.
    high: &'a [u64],
    first: &'a [u32],
}

#[cfg(target_arch = "x86_64")]
const HALF: usize = BYTE_LANES / 2;

#[cfg(target_arch = "x86_64")]
impl<'a> Group<'a> {
    #[inline(always)]
    fn new(trees: &'a Trees, depth: usize, g: usize) -> Self {
        let stride = (2 * depth + 1) * BYTE_LANES;
        Group {
            rows: &trees.bytes[g * stride..][..stride],
            high: &trees.high[g * depth..][..depth],
            first: &trees.first[g * BYTE_LANES..][..BYTE_LANES],
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn row(&self, k: usize, h: usize) -> __m256i {
        let row: &[u8; HALF] = self.rows[k * BYTE_LANES + h * HALF..][..HALF]
            .try_into()
            .expect("32-byte row");
        // SAFETY: `row` is exactly the 32 bytes loaded.
        unsafe { _mm256_loadu_si256(row.as_ptr().cast()) }
    }

    /// Level `d` of half `h`: sets bit `d` of the leaf indexes in `acc`
    /// (one byte per tree) where the tree's condition holds.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn level<const T: usize>(
        &self,
        tables: &[__m256i; T],
        h: usize,
        d: usize,
        acc: __m256i,
    ) -> __m256i {
        let numbers = self.row(2 * d, h);
        let byte = if T > 8 {
            // Byte numbers of 128 and more: bit 7 set would make vpshufb
            // answer 0.
            let at = _mm256_and_si256(numbers, _mm256_set1_epi8(0x0f));
            let bit8 = if T > 16 {
                // Byte i of a register gets byte i / 8 of the half's lane
                // mask, then is tested against its own bit.
                let spread = _mm256_setr_epi8(
                    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
                    2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
                );
                let own = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
                let lanes = _mm256_set1_epi32((self.high[d] >> (h * HALF)) as u32 as i32);
                let mine = _mm256_and_si256(_mm256_shuffle_epi8(lanes, spread), own);
                // 0xff where bit 8 is set: vpblendvb reads bit 7.
                _mm256_cmpeq_epi8(mine, own)
            } else {
                _mm256_setzero_si256()
            };
            pick(tables, at, numbers, bit8)
        } else {
            pick(tables, numbers, numbers, _mm256_setzero_si256())
        };
        let mask = self.row(2 * d + 1, h);
        let taken = _mm256_cmpeq_epi8(_mm256_and_si256(byte, mask), mask);
        _mm256_or_si256(acc, _mm256_and_si256(taken, _mm256_set1_epi8(1 << d)))
    }

    /// The leaf offsets of the group's trees from the indexes of both
    /// halves after `depth` levels.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn finish(&self, depth: usize, acc: [__m256i; 2], out: &mut [u32; CHUNK_TREES]) {
        let mut index = [0u8; BYTE_LANES];
        for (h, (index, acc)) in index.chunks_exact_mut(HALF).zip(acc).enumerate() {
            // A tree shallower than the layout keeps its own leaves.
            let acc = _mm256_and_si256(acc, self.row(2 * depth, h));
            let index: &mut [u8; HALF] = index.try_into().expect("32 indexes");
            // SAFETY: `index` is exactly the 32 bytes stored.
            unsafe { _mm256_storeu_si256(index.as_mut_ptr().cast(), acc) };
        }
        for ((out, first), index) in out
            .chunks_exact_mut(LANES)
            .zip(self.first.chunks_exact(LANES))
            .zip(index.chunks_exact(LANES))
        {
            // SAFETY: each slice is exactly what is loaded or stored: eight
            // bytes of indexes, eight u32 first leaves, eight u32 offsets.
            unsafe {
                let index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(index.as_ptr().cast()));
                let first = _mm256_loadu_si256(first.as_ptr().cast());
                _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm256_add_epi32(first, index));
            }
        }
    }
}

/// The leaf offsets of the trees of group `g` (one chunk) with the shuffle
/// kernel ([`Group`]).
///
/// # Safety
/// AVX2 must be available on this CPU; `tables` must cover `trees.bit_end`
/// (a missing table reads as zero bits, which is wrong but not unsound).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn group_offsets<const T: usize, const D: usize>(
    trees: &Trees,
    tables: &[__m256i; T],
    g: usize,
    out: &mut [u32; CHUNK_TREES],
) {
    let depth = if D == 0 { trees.depth } else { D };
    let group = Group::new(trees, depth, g);
    let mut acc = [_mm256_setzero_si256(); 2];
    for (h, acc) in acc.iter_mut().enumerate() {
        for d in 0..depth {
            *acc = group.level(tables, h, d, *acc);
        }
    }
    group.finish(depth, acc, out);
}

/// Byte `at & 15` of each table, then the table of each lane picked by bits
/// 4-7 of `numbers` and by `bit8` (0xff or 0 per lane): a tree of
/// `vpblendvb`, which reads bit 7 of each mask byte, so bit `b` is shifted
/// up to it (16-bit shifts: a byte's bit 7 comes from that byte alone). An
/// odd table out at a level moves up as it is: no lane that reads it has
/// the level's bit set, since the table past it does not exist.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn pick<const T: usize>(
    tables: &[__m256i; T],
    at: __m256i,
    numbers: __m256i,
    bit8: __m256i,
) -> __m256i {
    let mut r: [__m256i; T] = std::array::from_fn(|k| _mm256_shuffle_epi8(tables[k], at));
    let mut n = T;
    let mut bit = 4;
    while n > 1 {
        let select = match bit {
            4 => _mm256_slli_epi16::<3>(numbers),
            5 => _mm256_slli_epi16::<2>(numbers),
            6 => _mm256_slli_epi16::<1>(numbers),
            7 => numbers,
            _ => bit8,
        };
        for k in 0..n / 2 {
            r[k] = _mm256_blendv_epi8(r[2 * k], r[2 * k + 1], select);
        }
        if n % 2 == 1 {
            r[n / 2] = r[n - 1];
        }
        n = n.div_ceil(2);
        bit += 1;
    }
    r[0]
}

/// [`Trees::offsets`] with AVX-512: the model's packed condition bits (eight
/// a byte, up to 4096) are a table in up to eight registers; each level of
/// 64 trees is one table lookup per register pair (`vpermi2b`, 128 bytes
/// each, blended by bits 7 and 8 of the byte numbers) and one `vptestmb`
/// of the looked-up bytes against each tree's bit in its byte, which sets
/// the level's bit of 64 leaf indexes at once. A chunk is [`SUM_GROUPS`]
/// groups: their leaf offsets are all computed before the caller adds any
/// leaf, so the leaf loads are independent of the additions and overlap.
/// No memory is read through a vector index: the only `unsafe` is the
/// target feature and the loads and stores of 64-byte rows.
///
/// # Safety
/// AVX-512 F, BW and VBMI must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(crate) unsafe fn offsets_bytes(
    trees: &Trees,
    words: &[u64],
    c: usize,
    out: &mut [u32; CHUNK_TREES],
) {
    debug_assert!(trees.bit_end <= BYTE_CONDITIONS.min(words.len() * 64));
    // SAFETY (all arms): this function's contract.
    unsafe {
        match (trees.pairs, trees.depth) {
            (1, 6) => offsets_bytes_with::<1, 6>(trees, words, c, out),
            (1, _) => offsets_bytes_with::<1, 0>(trees, words, c, out),
            (2, 6) => offsets_bytes_with::<2, 6>(trees, words, c, out),
            (2, _) => offsets_bytes_with::<2, 0>(trees, words, c, out),
            (_, 6) => offsets_bytes_with::<4, 6>(trees, words, c, out),
            _ => offsets_bytes_with::<4, 0>(trees, words, c, out),
        }
    }
}

/// Groups of 64 trees in one chunk of [`offsets_bytes`].
#[cfg(target_arch = "x86_64")]
const SUM_GROUPS: usize = CHUNK_TREES / BYTE_LANES;

/// [`offsets_bytes`] for tables of `P` register pairs (1, 2, or 4 for 3 and
/// 4) and depth `D` (0: the trees' own, not known at compile time).
///
/// # Safety
/// AVX-512 F, BW and VBMI must be available on this CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
unsafe fn offsets_bytes_with<const P: usize, const D: usize>(
    trees: &Trees,
    words: &[u64],
    c: usize,
    offsets: &mut [u32; CHUNK_TREES],
) {
    let depth = if D == 0 { trees.depth } else { D };
    let load = |bytes: &[u8; BYTE_LANES]| {
        // SAFETY: `bytes` is exactly the 64 bytes loaded.
        unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
    };
    // Words beyond the array are conditions no tree reads (bit_end is
    // within it); registers past the `P` pairs are never looked up.
    let table = |k: usize| {
        if k >= 2 * P {
            return _mm512_setzero_si512();
        }
        let w = padded_words::<8>(words, 8 * k);
        // SAFETY: `w` is exactly the 64 bytes loaded.
        unsafe { _mm512_loadu_si512(w.as_ptr().cast()) }
    };
    let t: [__m512i; 8] = std::array::from_fn(table);
    let stride = (2 * depth + 1) * BYTE_LANES;
    let from = |all_len: usize, per_group: usize| {
        let start = (c * SUM_GROUPS * per_group).min(all_len);
        start..(start + SUM_GROUPS * per_group).min(all_len)
    };
    let groups = &trees.bytes[from(trees.bytes.len(), stride)];
    let high = &trees.high[from(trees.high.len(), depth)];
    let first = &trees.first[from(trees.first.len(), BYTE_LANES)];
    for (g, ((group, high), first)) in groups
        .chunks_exact(stride)
        .zip(high.chunks_exact(depth))
        .zip(first.chunks_exact(BYTE_LANES))
        .enumerate()
    {
        let row = |k: usize| {
            load(
                group[k * BYTE_LANES..][..BYTE_LANES]
                    .try_into()
                    .expect("64-byte row"),
            )
        };
        let mut index = _mm512_setzero_si512();
        for (d, &high) in high.iter().enumerate().take(depth) {
            let c = row(2 * d);
            // Byte c & 127 of each register pair; bit 7 picks the pair of
            // each 256-byte half, bit 8 (in `high`) the half.
            let byte = if P == 1 {
                _mm512_permutex2var_epi8(t[0], c, t[1])
            } else {
                let bit7 = _mm512_movepi8_mask(c);
                let q0 = _mm512_permutex2var_epi8(t[0], c, t[1]);
                let q1 = _mm512_permutex2var_epi8(t[2], c, t[3]);
                let low = _mm512_mask_blend_epi8(bit7, q0, q1);
                if P > 2 {
                    let q2 = _mm512_permutex2var_epi8(t[4], c, t[5]);
                    let q3 = _mm512_permutex2var_epi8(t[6], c, t[7]);
                    let upper = _mm512_mask_blend_epi8(bit7, q2, q3);
                    _mm512_mask_blend_epi8(_cvtu64_mask64(high), low, upper)
                } else {
                    low
                }
            };
            let taken = _mm512_test_epi8_mask(byte, row(2 * d + 1));
            // Bit d is still clear in every lane: adding it sets it.
            index = _mm512_mask_add_epi8(index, taken, index, _mm512_set1_epi8(1 << d));
        }
        index = _mm512_and_si512(index, row(2 * depth));
        let out: &mut [u32; BYTE_LANES] = (&mut offsets[g * BYTE_LANES..][..BYTE_LANES])
            .try_into()
            .expect("64 offsets");
        for q in 0..4 {
            let bytes = match q {
                0 => _mm512_extracti32x4_epi32::<0>(index),
                1 => _mm512_extracti32x4_epi32::<1>(index),
                2 => _mm512_extracti32x4_epi32::<2>(index),
                _ => _mm512_extracti32x4_epi32::<3>(index),
            };
            let first: &[u32; 16] = first[16 * q..][..16].try_into().expect("16 leaves");
            // SAFETY: `first` is exactly the 64 bytes loaded.
            let first = unsafe { _mm512_loadu_si512(first.as_ptr().cast()) };
            let at = _mm512_add_epi32(first, _mm512_cvtepu8_epi32(bytes));
            // SAFETY: `out[16 * q..]` holds at least 16 u32.
            unsafe { _mm512_storeu_si512(out[16 * q..].as_mut_ptr().cast(), at) };
        }
    }
}
