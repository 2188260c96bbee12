//! edgeguard's `%.9g` and `%.6f` (src/config/text.rs) against libc's
//! `snprintf`, byte for byte, over edge values and many random doubles:
//! the score header, the variables and the decision line must read as the
//! shim's `string.format` wrote them.

use std::ffi::{c_char, CStr};

use edgeguard::config::text::{write_f, write_g};

fn c_format(fmt: &CStr, v: f64) -> String {
    let mut buf = [0 as c_char; 512];
    let n = unsafe { libc::snprintf(buf.as_mut_ptr(), buf.len(), fmt.as_ptr(), v) };
    assert!(n >= 0 && (n as usize) < buf.len(), "snprintf: {n}");
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn ours(v: f64, g: bool, precision: usize) -> String {
    let mut s = String::new();
    if g {
        write_g(&mut s, v, precision).unwrap();
    } else {
        write_f(&mut s, v, precision).unwrap();
    }
    s
}

fn edge_values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        1e-5,
        1e-4,
        9.99999999e-5,
        0.99999999995,
        0.999999999949999,
        0.9999995,
        0.99999949999,
        1e9,
        999999999.5,
        999999999.4,
        123456789.0,
        1234567890.0,
        12345678.25, // a tie at the 9th digit, exactly representable
        0.0078125,   // a tie at the 6th decimal, exactly representable
        0.0000005,
        0.0000015,
        2.5e-7,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE / 2.0, // subnormal
        f64::from_bits(1),       // the smallest subnormal
        -f64::from_bits(1),
        f64::MAX,
        -f64::MAX,
        f64::EPSILON,
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.1,
        0.2,
        0.3,
        1.0 / 3.0,
        2.0 / 3.0,
        0.00342984818,
        0.355394,
    ];
    for e in -330..=310 {
        let p = 10f64.powi(e);
        v.extend([p, p * 0.999_999_999_5, p * 1.000_000_000_5, -p]);
    }
    v
}

#[test]
fn g9_and_f6_match_snprintf_on_edge_values() {
    for v in edge_values() {
        assert_eq!(ours(v, true, 9), c_format(c"%.9g", v), "%.9g of {v:e}");
        assert_eq!(ours(v, false, 6), c_format(c"%.6f", v), "%.6f of {v:e}");
    }
}

#[test]
fn g9_and_f6_match_snprintf_on_random_doubles() {
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for i in 0..300_000 {
        let v = match i % 4 {
            // Any bit pattern: every exponent, subnormals, NaNs.
            0 => f64::from_bits(rng.u64(..)),
            // A probability, what the models give.
            1 => (rng.u64(..) >> 11) as f64 / (1u64 << 53) as f64,
            // Near a rounding boundary of 9 or 6 digits.
            2 => {
                let digits = (rng.u64(..1_000_000_000)) as f64;
                let scale = 10f64.powi((rng.u64(..20)) as i32 - 14);
                (digits + 0.5) * scale
            }
            // Short decimal fractions, ties included.
            _ => (rng.u64(..100_000_000)) as f64 / 2f64.powi((rng.u64(..30)) as i32),
        };
        assert_eq!(
            ours(v, true, 9),
            c_format(c"%.9g", v),
            "%.9g of {v:e} ({:#x})",
            v.to_bits()
        );
        if v.abs() < 1e20 || i % 64 == 0 {
            assert_eq!(ours(v, false, 6), c_format(c"%.6f", v), "%.6f of {v:e}");
        }
        checked += 1;
    }
    assert_eq!(checked, 300_000);
}

#[test]
fn other_precisions_match_too() {
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..20_000 {
        let v = f64::from_bits(rng.u64(..));
        for (p, fmt) in [(1, c"%.1g"), (6, c"%.6g"), (17, c"%.17g")] {
            assert_eq!(ours(v, true, p), c_format(fmt, v), "%.{p}g of {v:e}");
        }
    }
}
