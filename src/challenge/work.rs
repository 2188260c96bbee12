//! The proof of work, and how much of it a request is asked for.
//!
//! The work is Anubis's: SHA-256 over the nonce text, `:` and a decimal
//! counter, until the digest has `difficulty` leading zero bits (2^d
//! hashes on average). The checker does one hash.
//!
//! # Work scaled to the score
//!
//! A request flagged at its model's threshold gets `challenge_difficulty`
//! bits; one scored 1.0 gets `challenge_difficulty_max`; in between the
//! bits grow linearly with how far past the threshold the score is,
//! rounded to the nearest bit:
//!
//! ```text
//! bits = base + round((score - threshold) / (1 - threshold) * (max - base))
//! ```
//!
//! so the *work* grows exponentially: with the defaults (16 and 18) a
//! request at the threshold costs 65 536 hashes on average, a certain one
//! 262 144. A request flagged with no score to scale by (a fake verified
//! bot) gets the maximum. Both ends are bounded by [`MAX_DIFFICULTY`]
//! (`docs/challenge.md` has the solve times each costs in a browser and
//! in a native solver).

use sha2::{Digest, Sha256};

/// The most leading zero bits a nonce may ask for: 2^24 hashes is already
/// half a minute in a browser on a slow phone.
pub const MAX_DIFFICULTY: u8 = 24;

/// The bits asked of a request scored `score` by the model that flagged
/// it at `threshold`, between `base` and `max` (see the module's text).
/// `None` (flagged without a score): `max`. A score below the threshold or
/// not a number gets `base`.
pub fn scaled(base: u8, max: u8, score: Option<f64>, threshold: f64) -> u8 {
    let base = base.min(MAX_DIFFICULTY);
    let max = max.max(base).min(MAX_DIFFICULTY);
    let Some(score) = score else {
        return max;
    };
    if !(score.is_finite() && threshold.is_finite()) || score <= threshold || threshold >= 1.0 {
        return base;
    }
    let frac = ((score - threshold) / (1.0 - threshold)).clamp(0.0, 1.0);
    base + (frac * f64::from(max - base)).round() as u8
}

/// Leading zero bits of SHA-256(nonce ":" counter).
pub fn leading_zero_bits(nonce: &[u8], counter: &[u8]) -> u32 {
    let digest = Sha256::new()
        .chain_update(nonce)
        .chain_update(b":")
        .chain_update(counter)
        .finalize();
    let mut bits = 0;
    for &b in digest.iter() {
        bits += b.leading_zeros();
        if b != 0 {
            break;
        }
    }
    bits
}

/// Whether `counter` is a counter the page's script can send: 1 to 16
/// decimal digits.
pub(crate) fn is_counter(counter: &[u8]) -> bool {
    !counter.is_empty() && counter.len() <= 16 && counter.iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_grows_with_the_score_within_its_bounds() {
        let s = |score: Option<f64>, t: f64| scaled(16, 20, score, t);
        assert_eq!(s(Some(0.5), 0.5), 16, "at the threshold");
        assert_eq!(s(Some(0.4), 0.5), 16, "below (a fake bot's models)");
        assert_eq!(s(Some(1.0), 0.5), 20);
        assert_eq!(s(Some(0.75), 0.5), 18);
        assert_eq!(s(Some(0.6), 0.5), 17, "0.2 of 4 bits rounds to 1");
        assert_eq!(s(None, 0.5), 20, "flagged without a score");
        assert_eq!(s(Some(f64::NAN), 0.5), 16);
        assert_eq!(s(Some(1.0), 1.0), 16, "a threshold of 1 leaves no room");
        assert_eq!(s(Some(2.0), 0.0), 20, "clamped");
        // Monotone in the score.
        let mut last = 0;
        for i in 0..=100 {
            let b = s(Some(0.3 + 0.007 * f64::from(i)), 0.3);
            assert!(b >= last, "{i}");
            last = b;
        }
        // Bounds: max below base is base, both capped.
        assert_eq!(scaled(16, 10, Some(1.0), 0.5), 16);
        assert_eq!(scaled(30, 40, None, 0.5), MAX_DIFFICULTY);
        assert_eq!(scaled(0, 0, Some(1.0), 0.0), 0);
    }

    #[test]
    fn zero_bits_and_counters() {
        // SHA-256("abc:0") starts 0x4c...: one leading zero bit.
        assert_eq!(leading_zero_bits(b"abc", b"0"), 1);
        assert!(is_counter(b"0") && is_counter(b"9999999999999999"));
        for bad in [&b""[..], b"-1", b"1.0", b"12345678901234567", b" 1"] {
            assert!(!is_counter(bad), "{bad:?}");
        }
    }
}
