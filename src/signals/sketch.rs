//! Distinct counts as HyperLogLog++ sketches (the `hyperloglogplus`
//! crate): how many client prefixes, how many User-Agents a key was seen
//! with, in a few bytes while the count is small and at most a few KiB
//! when it is not.
//!
//! Two properties the window and the fleet setup rely on:
//! - **Exact merges.** A sketch is a set of hash codes (sparse) or of
//!   registers (dense); merging takes their union or register maximum,
//!   and the estimate is a function of that state alone. So the partial
//!   sketches of a split stream, merged in any order, give exactly the
//!   estimate one sketch of the whole stream gives (tested below).
//! - **One hash everywhere.** Items are hashed with SipHash-1-3 under fixed
//!   keys ([`Sip`]): every process, every version, hashes a prefix the
//!   same way, so sketches made on different machines merge.

use std::hash::{BuildHasher, Hasher};

use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};
use serde::{Deserialize, Serialize};
use siphasher::sip::SipHasher13;

/// The registers are 2^PRECISION: 4096, a standard error of
/// 1.04/sqrt(4096) = 1.6 % once dense (3.3 KiB); below about 3000 items
/// the sparse form (25-bit codes, near exact) is smaller and better.
pub const PRECISION: u8 = 12;

/// The relative standard error of a dense estimate.
pub fn standard_error() -> f64 {
    1.04 / f64::from(1u32 << PRECISION).sqrt()
}

/// SipHash-1-3 under fixed keys, as a [`BuildHasher`] the sketch carries
/// (and serializes as nothing).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Sip;

/// The keys: fixed, so that every process hashes alike; not secret (an
/// attacker who could choose prefixes to collide gains only a lower
/// count of distinct prefixes, which a signal already treats as weak).
const K0: u64 = 0x6564_6765_6775_6172; // "edgeguar"
const K1: u64 = 0x7369_676e_616c_7331; // "signals1"

impl BuildHasher for Sip {
    type Hasher = SipHasher13;
    fn build_hasher(&self) -> SipHasher13 {
        SipHasher13::new_with_keys(K0, K1)
    }
}

type Hll = HyperLogLogPlus<u64, Sip>;

/// A distinct count of byte strings. Empty, it is one null pointer: most
/// cells never see an IPv6 client, and the crate's sketch is 170 bytes
/// before its first item.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Distinct(Option<Box<Hll>>);

fn hll() -> Box<Hll> {
    // PRECISION is within the crate's 4..=18.
    Box::new(HyperLogLogPlus::new(PRECISION, Sip).expect("precision in range"))
}

impl Distinct {
    /// An empty sketch (no heap until the first item).
    pub fn new() -> Distinct {
        Distinct(None)
    }

    /// Adds one item. The hash is taken of the bytes alone (no length
    /// prefix): a stable function of the item.
    pub fn insert(&mut self, item: &[u8]) {
        let mut h = Sip.build_hasher();
        h.write(item);
        self.0.get_or_insert_with(hll).insert_any(&h.finish());
    }

    /// Adds every item `other` holds: afterwards this sketch is the one
    /// both streams together would have made.
    pub fn merge(&mut self, other: &Distinct) -> Result<(), String> {
        let Some(theirs) = &other.0 else {
            return Ok(());
        };
        self.0
            .get_or_insert_with(hll)
            .merge(theirs)
            .map_err(|e| format!("sketches do not merge: {e:?}"))
    }

    /// The estimated number of distinct items, rounded.
    pub fn estimate(&mut self) -> u64 {
        // The crate needs `&mut` to fold its pending codes in first.
        let n = self.0.as_mut().map_or(0.0, |h| h.count());
        if n.is_finite() && n > 0.0 {
            n.round() as u64
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(i: u32) -> [u8; 4] {
        (0x0a00_0000 + (i << 8)).to_be_bytes()
    }

    #[test]
    fn merges_of_a_split_stream_equal_one_stream_exactly() {
        // Sizes on both sides of the sparse/dense switch (about 3000 codes).
        for n in [0u32, 1, 7, 200, 2_999, 3_500, 20_000] {
            let mut whole = Distinct::new();
            let mut parts = [Distinct::new(), Distinct::new(), Distinct::new()];
            for i in 0..n {
                whole.insert(&prefix(i));
                // Uneven, interleaved split with repeats across parts.
                parts[(i as usize * 7 + 3) % 3].insert(&prefix(i));
                if i % 5 == 0 {
                    parts[(i as usize + 1) % 3].insert(&prefix(i));
                }
            }
            // Merged in two different orders, through serde as the
            // partials topic carries them.
            let wire = |d: &Distinct| -> Distinct {
                serde_json::from_slice(&serde_json::to_vec(d).unwrap()).unwrap()
            };
            let mut a = Distinct::new();
            for p in &parts {
                a.merge(&wire(p)).unwrap();
            }
            let mut b = wire(&parts[2]);
            b.merge(&parts[0]).unwrap();
            b.merge(&parts[1]).unwrap();
            let want = whole.estimate();
            assert_eq!(a.estimate(), want, "n={n}");
            assert_eq!(b.estimate(), want, "n={n}");
        }
    }

    #[test]
    fn error_is_within_its_bound_on_ten_thousand_prefixes() {
        // Three standard errors, on several disjoint sets.
        let bound = 3.0 * standard_error();
        for set in 0..5u32 {
            let mut d = Distinct::new();
            for i in 0..10_000u32 {
                // Each item twice: repeats must not count.
                let item = (set << 24 | i).to_be_bytes();
                d.insert(&item);
                d.insert(&item);
            }
            let e = d.estimate() as f64;
            let err = (e - 10_000.0).abs() / 10_000.0;
            assert!(
                err <= bound,
                "set {set}: {e} is {err:.4} off, bound {bound:.4}"
            );
        }
    }

    #[test]
    fn small_sets_are_counted_exactly() {
        let mut d = Distinct::new();
        assert_eq!(d.estimate(), 0);
        for ua in [
            &b"curl/8"[..],
            b"Mozilla/5.0 a",
            b"Mozilla/5.0 b",
            b"curl/8",
        ] {
            d.insert(ua);
        }
        assert_eq!(d.estimate(), 3);
    }
}
