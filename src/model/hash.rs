//! The hashes CatBoost evaluation depends on: the categorical value hash and
//! the CTR bucket key combination.
//!
//! A categorical string becomes `CityHash64(bytes) & 0xffffffff`, with
//! CityHash **version 1.0.2** as CatBoost ships it (`util/digest/city.cpp`;
//! ClickHouse uses the same variant). Google's later 1.1 release changed the
//! short-input paths, so a hash from a current CityHash library gives
//! different buckets.

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;
const K3: u64 = 0xc949_d7c7_509e_6557;
const K_MUL: u64 = 0x9ddf_ea08_eb38_2d69;

/// CatBoost's hash of one categorical value, as the C API's
/// `GetStringCatFeatureHash` returns it. Pass the result (as `i32`, same bits)
/// to [`crate::model::Evaluator::predict_raw`].
///
/// ```
/// assert_eq!(edgeguard::model::cat_hash(b"Moscow"), 605890862);
/// ```
pub fn cat_hash(bytes: &[u8]) -> u32 {
    city_hash64(bytes) as u32
}

const MAGIC_MULT: u64 = 0x4906_ba49_4954_cb65;

/// Combines a CTR projection key with the next element, as CatBoost's
/// `CalcHash(a, b)` in `model/hash.h`: `MAGIC * (a + MAGIC * b)`.
#[cfg(test)]
pub(crate) fn combine(key: u64, value: u64) -> u64 {
    MAGIC_MULT.wrapping_mul(key.wrapping_add(MAGIC_MULT.wrapping_mul(value)))
}

/// The weight of element `j` of a projection key of `n` elements.
///
/// CatBoost folds the elements `v_0 .. v_{n-1}` of a key from 0 with
/// `CalcHash`: `k_{j+1} = M * (k_j + M * v_j)`, all modulo 2^64. That is
/// linear in the elements, so `k_n = sum_j M^(n-j+1) * v_j`: with the
/// weights computed at load, a key is a sum of independent products (or,
/// for a 0/1 element, of selected weights) instead of a chain of `2n`
/// dependent multiplications, and gives the same bits.
pub(crate) fn element_weight(n: usize, j: usize) -> u64 {
    debug_assert!(j < n);
    MAGIC_MULT.wrapping_pow((n - j + 1) as u32)
}

/// Widens a categorical hash into a projection key element the way CatBoost
/// does (`(ui64)(int)hash`): through a signed 32-bit value, so hashes with the
/// top bit set are sign-extended.
#[inline]
pub(crate) fn widen_cat(hash: i32) -> u64 {
    i64::from(hash) as u64
}

#[inline]
fn load64(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(b)
}

#[inline]
fn load32(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[at..at + 4]);
    u64::from(u32::from_le_bytes(b))
}

#[inline]
fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

/// `Hash128to64` of the pair (low = `u`, high = `v`).
#[inline]
fn hash_len16(u: u64, v: u64) -> u64 {
    let mut a = (u ^ v).wrapping_mul(K_MUL);
    a ^= a >> 47;
    let mut b = (v ^ a).wrapping_mul(K_MUL);
    b ^= b >> 47;
    b.wrapping_mul(K_MUL)
}

fn hash_len0to16(s: &[u8]) -> u64 {
    let len = s.len();
    if len > 8 {
        let a = load64(s, 0);
        let b = load64(s, len - 8);
        // 1.0.2: the rotation amount is the length, and `b` is xored in
        // afterwards (1.1 multiplies by a length-derived constant instead).
        return hash_len16(a, b.wrapping_add(len as u64).rotate_right(len as u32)) ^ b;
    }
    if len >= 4 {
        let a = load32(s, 0);
        return hash_len16((len as u64).wrapping_add(a << 3), load32(s, len - 4));
    }
    if len > 0 {
        // Bytes are unsigned here: values >= 0x80 must not sign-extend.
        let y = u32::from(s[0]).wrapping_add(u32::from(s[len >> 1]) << 8);
        let z = (len as u32).wrapping_add(u32::from(s[len - 1]) << 2);
        return shift_mix(u64::from(y).wrapping_mul(K2) ^ u64::from(z).wrapping_mul(K3))
            .wrapping_mul(K2);
    }
    K2
}

fn hash_len17to32(s: &[u8]) -> u64 {
    let len = s.len();
    let a = load64(s, 0).wrapping_mul(K1);
    let b = load64(s, 8);
    let c = load64(s, len - 8).wrapping_mul(K2);
    let d = load64(s, len - 16).wrapping_mul(K0);
    hash_len16(
        a.wrapping_sub(b)
            .rotate_right(43)
            .wrapping_add(c.rotate_right(30))
            .wrapping_add(d),
        a.wrapping_add((b ^ K3).rotate_right(20))
            .wrapping_sub(c)
            .wrapping_add(len as u64),
    )
}

fn hash_len33to64(s: &[u8]) -> u64 {
    let len = s.len();
    let mut z = load64(s, 24);
    let mut a = load64(s, 0).wrapping_add(
        (len as u64)
            .wrapping_add(load64(s, len - 16))
            .wrapping_mul(K0),
    );
    let mut b = a.wrapping_add(z).rotate_right(52);
    let mut c = a.rotate_right(37);
    a = a.wrapping_add(load64(s, 8));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(load64(s, 16));
    let vf = a.wrapping_add(z);
    let vs = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);
    a = load64(s, 16).wrapping_add(load64(s, len - 32));
    z = load64(s, len - 8);
    b = a.wrapping_add(z).rotate_right(52);
    c = a.rotate_right(37);
    a = a.wrapping_add(load64(s, len - 24));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(load64(s, len - 16));
    let wf = a.wrapping_add(z);
    let ws = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);
    let r = shift_mix(
        vf.wrapping_add(ws)
            .wrapping_mul(K2)
            .wrapping_add(wf.wrapping_add(vs).wrapping_mul(K0)),
    );
    shift_mix(r.wrapping_mul(K0).wrapping_add(vs)).wrapping_mul(K2)
}

/// Mixes 32 bytes at `s[at..]` into the seeds `a`, `b`.
#[inline]
fn weak_hash32(s: &[u8], at: usize, mut a: u64, mut b: u64) -> (u64, u64) {
    let (w, x, y, z) = (
        load64(s, at),
        load64(s, at + 8),
        load64(s, at + 16),
        load64(s, at + 24),
    );
    a = a.wrapping_add(w);
    b = b.wrapping_add(a).wrapping_add(z).rotate_right(21);
    let c = a;
    a = a.wrapping_add(x).wrapping_add(y);
    b = b.wrapping_add(a.rotate_right(44));
    (a.wrapping_add(z), b.wrapping_add(c))
}

/// CityHash64 v1.0.2 of `s`.
pub(crate) fn city_hash64(s: &[u8]) -> u64 {
    let len = s.len();
    if len <= 16 {
        return hash_len0to16(s);
    }
    if len <= 32 {
        return hash_len17to32(s);
    }
    if len <= 64 {
        return hash_len33to64(s);
    }
    // Longer inputs: seed the state from the last 64 bytes, then walk 64-byte
    // blocks from the start; the last block overlaps the tail.
    let mut x = load64(s, 0);
    let mut y = load64(s, len - 16) ^ K1;
    let mut z = load64(s, len - 56) ^ K0;
    let mut v = weak_hash32(s, len - 64, len as u64, y);
    let mut w = weak_hash32(s, len - 32, (len as u64).wrapping_mul(K1), K0);
    z = z.wrapping_add(shift_mix(v.1).wrapping_mul(K1));
    x = z.wrapping_add(x).rotate_right(39).wrapping_mul(K1);
    y = y.rotate_right(33).wrapping_mul(K1);

    let blocks = (len - 1) / 64;
    for block in 0..blocks {
        let at = block * 64;
        x = x
            .wrapping_add(y)
            .wrapping_add(v.0)
            .wrapping_add(load64(s, at + 16))
            .rotate_right(37)
            .wrapping_mul(K1);
        y = y
            .wrapping_add(v.1)
            .wrapping_add(load64(s, at + 48))
            .rotate_right(42)
            .wrapping_mul(K1);
        x ^= w.1;
        y ^= v.0;
        z = (z ^ w.0).rotate_right(33);
        v = weak_hash32(s, at, v.1.wrapping_mul(K1), x.wrapping_add(w.0));
        w = weak_hash32(s, at + 32, z.wrapping_add(w.1), y);
        std::mem::swap(&mut z, &mut x);
    }
    hash_len16(
        hash_len16(v.0, w.0)
            .wrapping_add(shift_mix(y).wrapping_mul(K1))
            .wrapping_add(z),
        hash_len16(v.1, w.1).wrapping_add(x),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value_from_catboost_docs() {
        assert_eq!(cat_hash(b"Moscow"), 605_890_862);
    }

    #[test]
    fn cat_hashes_widen_through_signed_32_bits() {
        assert_eq!(widen_cat(-1), u64::MAX);
        assert_eq!(widen_cat(7), 7);
        assert_eq!(widen_cat(i32::MIN), 0xffff_ffff_8000_0000);
    }

    /// The weighted sum against CatBoost's fold, on keys of every length up
    /// to 40 with pseudo-random elements (0/1 and full-width).
    #[test]
    fn weighted_sum_is_the_fold() {
        let mut rng = fastrand::Rng::with_seed(0x853c_49e6_748f_ea9b);
        let mut next = move || rng.u64(..);
        for n in 0..40 {
            for _ in 0..50 {
                let v: Vec<u64> = (0..n)
                    .map(|_| if next() % 2 == 0 { next() & 1 } else { next() })
                    .collect();
                let fold = v.iter().fold(0u64, |k, &x| combine(k, x));
                let sum = v.iter().enumerate().fold(0u64, |k, (j, &x)| {
                    k.wrapping_add(element_weight(n, j).wrapping_mul(x))
                });
                assert_eq!(sum, fold, "{v:?}");
            }
        }
    }

    #[test]
    fn combine_matches_catboost_formula_on_small_values() {
        let m: u64 = 0x4906_ba49_4954_cb65;
        assert_eq!(combine(0, 0), 0);
        assert_eq!(combine(1, 0), m);
        assert_eq!(combine(0, 1), m.wrapping_mul(m));
    }
}
