//! The sum of a model's leaves in tree order, one chunk of leaf offsets
//! ahead, whichever kernel computes the offsets: the scalar and gather
//! kernels of `trees.rs` and the shuffle kernel of `simd.rs` both feed it
//! (so neither of those two modules imports the other's sums).

use super::layout::{Trees, CHUNK_TREES};

/// One one-dimensional model's trees and what they read: its condition
/// bits and its leaf values.
pub(crate) struct Chain<'a> {
    pub(crate) trees: &'a Trees,
    pub(crate) words: &'a [u64],
    pub(crate) leaves: &'a [f64],
}

/// Where the sums get each chunk's leaf offsets and the leaves they point
/// at: a kernel through `Trees::offsets` (`trees::KernelOffsets`), or the
/// AVX2 shuffle kernel with its tables built once per prediction
/// (`simd.rs`), which reads the leaves without a bounds check per leaf.
pub(crate) trait ChunkOffsets {
    /// How many chunks there are.
    fn chunks(&self) -> usize;
    /// Chunk `c`'s offsets into the start of `out`; returns how many.
    fn chunk(&self, c: usize, out: &mut [u32; CHUNK_TREES]) -> usize;
    /// The leaf at an offset [`ChunkOffsets::chunk`] wrote.
    fn leaf(&self, offset: u32) -> f64;
}

/// One model's sum of leaves in tree order (CatBoost's sum, one addition
/// at a time), a chunk of offsets ahead: chunk `c + 1`'s offsets are
/// computed before chunk `c`'s leaves are added, so the core can work on
/// them while the chain of additions runs.
#[inline(always)]
pub(crate) fn sum_chunks(o: &impl ChunkOffsets) -> f64 {
    let offsets = |c: usize, at: &mut [u32; CHUNK_TREES]| {
        if c < o.chunks() {
            o.chunk(c, at)
        } else {
            0
        }
    };
    // Chunk c's offsets are in buffer c % 2.
    let mut at = [[0u32; CHUNK_TREES]; 2];
    let mut sum = 0.0;
    let mut n = offsets(0, &mut at[0]);
    for c in 0..o.chunks() {
        let [even, odd] = &mut at;
        let (current, next) = if c % 2 == 0 { (even, odd) } else { (odd, even) };
        let ahead = offsets(c + 1, next);
        for &a in &current[..n] {
            sum += o.leaf(a);
        }
        n = ahead;
    }
    sum
}

/// Two models' sums as [`sum_chunks`] gives each, bit for bit. Each sum is
/// a chain of dependent additions (CatBoost's order, so it cannot be
/// split); the two chains are independent, and adding one leaf of each per
/// step runs them side by side instead of one after the other.
#[inline(always)]
pub(crate) fn sum_pair_chunks(a: &impl ChunkOffsets, b: &impl ChunkOffsets) -> (f64, f64) {
    let chunks = a.chunks().max(b.chunks());
    let offsets = |c: usize, [at_a, at_b]: &mut [[u32; CHUNK_TREES]; 2]| {
        let n_a = if c < a.chunks() { a.chunk(c, at_a) } else { 0 };
        let n_b = if c < b.chunks() { b.chunk(c, at_b) } else { 0 };
        (n_a, n_b)
    };
    // [buffer][model]: chunk c's offsets are in buffer c % 2.
    let mut at = [[[0u32; CHUNK_TREES]; 2]; 2];
    let (mut sum_a, mut sum_b) = (0.0, 0.0);
    let (mut n_a, mut n_b) = offsets(0, &mut at[0]);
    for c in 0..chunks {
        let [even, odd] = &mut at;
        let ([at_a, at_b], next) = if c % 2 == 0 { (even, odd) } else { (odd, even) };
        let ahead = offsets(c + 1, next);
        let both = n_a.min(n_b);
        for (&x, &y) in at_a[..both].iter().zip(&at_b[..both]) {
            sum_a += a.leaf(x);
            sum_b += b.leaf(y);
        }
        for &x in &at_a[both..n_a] {
            sum_a += a.leaf(x);
        }
        for &y in &at_b[both..n_b] {
            sum_b += b.leaf(y);
        }
        (n_a, n_b) = ahead;
    }
    (sum_a, sum_b)
}
