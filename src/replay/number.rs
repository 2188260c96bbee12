//! Numbers in replay's output lines, written as `write!(out, "{n}")` writes
//! them but without the formatting machinery, which was a tenth of the
//! output writer's cost per line (`core::fmt::write`, its `Adapter`, and
//! `f64`'s Grisu with the Dragon fallback).
//!
//! A score is written in Rust's `Display` form for `f64`: the shortest
//! digits that read back as the same value, never with an exponent
//! (`0.0000001`, `100000000000000000000`, `-0`). The digits come from zmij
//! (Schubfach, the shortest and closest digits, as Rust's own algorithm
//! gives; serde_json already depends on it), which writes them in its own
//! layout (`1e-7`, `1e20`, `12.0`), rearranged here; the values where the
//! two could differ (see [`no_tie`]) are written by `Display` itself. A
//! test holds both writers to the same bytes on every kind of value.

use std::io::Write;

/// Appends `n` in decimal.
pub(super) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
}

/// Appends the finite `v` as `format!("{v}")` writes it.
pub(super) fn push_f64(out: &mut Vec<u8>, v: f64) {
    debug_assert!(v.is_finite());
    if !no_tie(v) {
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{v}");
        return;
    }
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(v).as_bytes();
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // zmij writes `d[.ddd][e[+-]x]`: the mantissa's digits, where its point
    // falls, and the power of ten.
    let (mantissa, exponent) = match text.iter().position(|&b| b == b'e') {
        Some(e) => (&text[..e], parse_exponent(&text[e + 1..])),
        None => (text, 0),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, &mantissa[mantissa.len()..]),
    };
    // The digits without their point, as `0.DIGITS * 10^point`.
    let mut digits = [0u8; 40];
    let n = int.len() + frac.len();
    digits[..int.len()].copy_from_slice(int);
    digits[int.len()..n].copy_from_slice(frac);
    let mut point = int.len() as i32 + exponent;
    let mut d = &digits[..n];
    while let Some((b'0', rest)) = d.split_first() {
        d = rest;
        point -= 1;
    }
    while let Some((b'0', rest)) = d.split_last() {
        d = rest;
    }
    if negative {
        out.push(b'-');
    }
    if d.is_empty() {
        out.push(b'0');
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(d);
    } else if (point as usize) < d.len() {
        let (whole, fraction) = d.split_at(point as usize);
        out.extend_from_slice(whole);
        out.push(b'.');
        out.extend_from_slice(fraction);
    } else {
        out.extend_from_slice(d);
        out.resize(out.len() + point as usize - d.len(), b'0');
    }
}

/// Whether the shortest digits of `v` cannot be a tie between two
/// candidates: then zmij's digits are Rust's. Among the shortest digits
/// that read back as `v`, both take the closest to `v`; they differ only
/// when `v` lies exactly halfway between two (zmij rounds the tie to even,
/// Rust up: `1191794699610061.25`). That needs `v`'s exact decimal value
/// to be one digit longer than the shortest, so at most 18 significant
/// digits. With `v = m * 2^e`, `m` odd and `e < 0`, the exact value has
/// `-e` digits after the point, of which at most `0.302 * -e` are zeros
/// before the first significant one (`v >= 2^e`): at least `0.698 * -e`
/// significant digits, 19 or more from `e <= -28`. Every score a model
/// gives below 1 has such an `e`; larger or shorter values take Rust's own
/// formatting.
fn no_tie(v: f64) -> bool {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    m == 0 || e + m.trailing_zeros() as i32 <= -28
}

/// `[+-]digits` of an exponent zmij wrote (at most three digits for `f64`).
fn parse_exponent(t: &[u8]) -> i32 {
    let (sign, digits) = match t.split_first() {
        Some((b'-', rest)) => (-1, rest),
        Some((b'+', rest)) => (1, rest),
        _ => (1, t),
    };
    sign * digits
        .iter()
        .fold(0i32, |acc, &b| acc * 10 + i32::from(b - b'0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: f64) {
        let mut out = Vec::new();
        push_f64(&mut out, v);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{v}"),
            "{v:e} ({:#x})",
            v.to_bits()
        );
    }

    /// splitmix64.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn floats_are_written_as_display_writes_them() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            0.1,
            1e-7,
            1e-5,
            1.5e-6,
            123456.0,
            1e15,
            1e16,
            1e20,
            1.25e21,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            0.00342984818,
            0.355394,
            1.0 - f64::EPSILON,
            // 1191794699610061.25 exactly: halfway between the shortest
            // candidates ...61.2 (zmij's) and ...61.3 (Display's).
            f64::from_bits(0x4310_efb9_4edc_9f35),
            0.125,
            2.5,
            1.5e-8,
            // The smallest e where the fast path starts, and one above.
            f64::from_bits(0x3fe0_0000_0000_0001) * 2f64.powi(-53 + 28),
            (1u64 << 52 | 1) as f64 * 2f64.powi(-28),
            (1u64 << 52 | 1) as f64 * 2f64.powi(-27),
        ] {
            check(v);
        }
        let mut state = 0x5eed;
        for _ in 0..400_000 {
            // Any finite bit pattern; a score's range, uniform; a score near
            // 0 or 1 (a sigmoid of a large raw value); small integers.
            let bits = f64::from_bits(next(&mut state));
            if bits.is_finite() {
                check(bits);
            }
            let unit = (next(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
            check(unit);
            check(1.0 / (1.0 + (-(unit * 80.0 - 40.0)).exp()));
            check((next(&mut state) % 100_000) as f64);
            check((next(&mut state) % 100_000) as f64 / 1000.0);
            // Short dyadic values, where ties live.
            let m = next(&mut state) >> (11 + next(&mut state) % 50);
            check(m as f64 * 2f64.powi(-((next(&mut state) % 40) as i32)));
        }
    }

    #[test]
    fn integers_are_written_as_display_writes_them() {
        let mut state = 7;
        let mut values = vec![0, 1, 9, 10, 99, 100, u64::MAX, u64::MAX - 1];
        values.extend((0..10_000).map(|_| next(&mut state) >> (next(&mut state) % 64)));
        for v in values {
            let mut out = Vec::new();
            push_u64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }
}
