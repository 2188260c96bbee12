//! Per document, steps 1 to 3 of an evaluation (see `native.rs`): a
//! [`Conditions`] turns the float values and categorical hashes into the
//! packed condition bits the trees read. One model's conditions and a
//! group's merged ones ([`super::group`]) run this same code.

use std::hint::select_unpredictable;

use super::hash::widen_cat;
use super::limits::{MAX_BITS, MAX_USED_CATS};
use super::plan::{or_pattern, set_ones, Conditions};
use super::simd::prefetch;
use super::trees::Kernel;

/// The scratch arrays are zeroed on every prediction, so they come in three
/// sizes: most models fit the small or medium frame, only the largest pay for
/// zeroing the full one. (categorical values, 64-bit words of condition bits)
const SMALL: (usize, usize) = (32, 16);
const MEDIUM: (usize, usize) = (128, 64);
const LARGEST: (usize, usize) = (MAX_USED_CATS, MAX_BITS / 64);

/// CTR lookups are resolved in chunks: the keys of a chunk are computed and
/// their records prefetched, so the cache misses overlap, then read.
const CHUNK: usize = 16;

/// Where categorical hashes come from: given by the caller, or hashed from
/// the strings.
pub(crate) trait CatSource {
    /// The hash of categorical feature `index` (in bounds: counts are
    /// checked before evaluation).
    fn hash(&self, index: usize) -> i32;
}

impl CatSource for &[i32] {
    #[inline]
    fn hash(&self, index: usize) -> i32 {
        self[index]
    }
}

/// `scale * raw + bias`, CatBoost's last step, per dimension.
#[inline]
pub(crate) fn scale_and_bias(scale: f64, bias: &[f64], out: &mut [f64]) {
    for (o, b) in out.iter_mut().zip(bias) {
        *o = scale * *o + b;
    }
}

impl Conditions {
    /// Computes the document's condition bits in a stack frame that fits
    /// them and hands them to `then`.
    #[inline(always)]
    pub(crate) fn with_bits<C: CatSource, R>(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: C,
        then: impl FnOnce(&[u64]) -> R,
    ) -> R {
        let fits = |(c, w): (usize, usize)| self.used_cats.len() <= c && self.bit_count <= w * 64;
        if fits(SMALL) {
            let mut words = [0u64; SMALL.1];
            self.eval::<{ SMALL.0 }, C>(kernel, floats, cats, &mut words);
            then(&words)
        } else if fits(MEDIUM) {
            let mut words = [0u64; MEDIUM.1];
            self.eval::<{ MEDIUM.0 }, C>(kernel, floats, cats, &mut words);
            then(&words)
        } else {
            let mut words = [0u64; LARGEST.1];
            self.eval::<{ LARGEST.0 }, C>(kernel, floats, cats, &mut words);
            then(&words)
        }
    }

    /// The document's condition bits, into `words` (zeroed, at least
    /// `bit_count` bits). `CATS` is at least `used_cats.len()`.
    #[inline(always)]
    fn eval<const CATS: usize, C: CatSource>(
        &self,
        kernel: Kernel,
        floats: &[f32],
        cats: C,
        words: &mut [u64],
    ) {
        let mut hashes = [0i32; CATS];
        for (h, &c) in hashes.iter_mut().zip(&self.used_cats) {
            *h = cats.hash(c as usize);
        }
        self.float_borders.set_bits(kernel, floats, words);
        let mut one_hot = [0u16; CATS];
        for (m, o) in one_hot.iter_mut().zip(&self.one_hots) {
            let h = hashes[o.cat as usize];
            let values = &self.one_hot_values[o.values.0 as usize..o.values.1 as usize];
            *m = values
                .iter()
                .position(|&v| v == h)
                .map_or(0, |i| i as u16 + 1);
        }
        self.ctrs(&hashes, &one_hot, words);
        let first = self.one_hot_bits as usize;
        for (i, &(o, index)) in self.one_hot_conditions.iter().enumerate() {
            if one_hot[o as usize] == index {
                set_ones(words, first + i, 1);
            }
        }
    }

    /// The key of projection `j`: CatBoost's `CalcHash` fold over its
    /// categorical hashes, float conditions and one-hot matches, in that
    /// order, computed as the weighted sum it equals
    /// ([`element_weight`](super::hash::element_weight)).
    /// `cat_values[i]` is used categorical `i` widened as CatBoost widens
    /// it.
    #[inline(always)]
    fn key(&self, j: usize, cat_values: &[u64], one_hot: &[u16], words: &[u64]) -> u64 {
        let j = self.projections[j];
        let (cats, bits, one_hots) = (
            usize::from(j.cats),
            usize::from(j.bits),
            usize::from(j.one_hots),
        );
        let elements = &self.key_elements[j.start as usize..][..cats + bits + one_hots];
        let (cat_elements, rest) = elements.split_at(cats);
        let (bit_elements, one_hot_elements) = rest.split_at(bits);
        let mut k = 0u64;
        for &(w, i) in cat_elements {
            k = k.wrapping_add(w.wrapping_mul(cat_values[i as usize]));
        }
        // The conditions are the document's: a branch on them would be
        // mispredicted about half the time, a select never is.
        for &(w, b) in bit_elements {
            let bit = (words[b as usize / 64] >> (b % 64)) & 1 != 0;
            k = k.wrapping_add(select_unpredictable(bit, w, 0));
        }
        for &(w, e) in one_hot_elements {
            let matched = one_hot[(e >> 16) as usize] == e as u16;
            k = k.wrapping_add(select_unpredictable(matched, w, 0));
        }
        k
    }

    /// Hashes each projection once per chunk of lookups, prefetches the
    /// chunk's records, then ORs each bucket's CTR bits into the array.
    #[inline(always)]
    fn ctrs<const CATS: usize>(&self, hashes: &[i32; CATS], one_hot: &[u16], words: &mut [u64]) {
        if self.lookups.is_empty() {
            return;
        }
        let mut cat_values = [0u64; CATS];
        for (v, &h) in cat_values.iter_mut().zip(hashes) {
            *v = widen_cat(h);
        }
        let mut probes = [(0u64, 0usize); CHUNK];
        for chunk in self.lookups.chunks(CHUNK) {
            let mut last = u32::MAX;
            let mut key = 0;
            for (probe, l) in probes.iter_mut().zip(chunk) {
                if l.projection != last {
                    last = l.projection;
                    key = self.key(last as usize, &cat_values, one_hot, words);
                }
                let home = l.bits.home(key);
                prefetch(l.bits.record(home));
                *probe = (key, home);
            }
            for (&(key, home), l) in probes.iter().zip(chunk) {
                or_pattern(words, l.bit as usize, l.bits.pattern(key, home));
            }
        }
    }
}
