//! Byte-string helpers for parsing header values in place, without allocating.

/// Position of `needle` in `hay`, byte for byte.
///
/// Scans for the first byte and compares the rest only there: UAs are short
/// but every request searches them for a few dozen tokens, and a comparison
/// at every offset dominated extraction time.
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&first, rest)) = needle.split_first() else {
        return Some(0);
    };
    let last_start = hay.len().checked_sub(needle.len())?;
    let mut from = 0;
    while from <= last_start {
        let i = from + hay[from..=last_start].iter().position(|&b| b == first)?;
        if &hay[i + 1..i + needle.len()] == rest {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// Whether `hay` starts with `prefix`, ignoring ASCII case.
pub(crate) fn starts_with_ci(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && hay[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The unsigned integer spelled by the leading ASCII digits of `s`, if any.
/// Saturates instead of overflowing: a version of 10^12 is still "huge".
pub(crate) fn leading_uint(s: &[u8]) -> Option<u32> {
    let mut n = None;
    for &b in s {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        n = Some(
            n.unwrap_or(0u32)
                .saturating_mul(10)
                .saturating_add(u32::from(digit)),
        );
    }
    n
}

/// The bit mask of 16 flags, each 0 or 1: bit `j` is `flags[j]`.
///
/// Callers fill `flags` with one comparison per byte in a loop of fixed
/// length, which the compiler turns into a few vector compares (SSE2 on
/// x86-64) without any `unsafe`; a multiplication per half then gathers
/// the flags into bits. Byte `j` of the constant is `1 << (7 - j)`, so in
/// the product's top byte flag `j` lands on bit `j`, and no two terms of
/// one byte share a bit (no carries).
#[inline(always)]
pub(crate) fn bits16(flags: [u8; 16]) -> u32 {
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let [lo, hi] = [&flags[..8], &flags[8..]].map(|h| {
        let word = u64::from_le_bytes(h.try_into().expect("8 bytes"));
        (word.wrapping_mul(GATHER) >> 56) as u32
    });
    lo | hi << 8
}

/// `s` followed by `fill` up to `N` bytes, for the last, short chunk of a
/// scan that classifies [`bits16`]'s 16 bytes at a time.
///
/// Up to 16 bytes, two copies of fixed size that may overlap (the first
/// and the last 8 or 4 bytes), as [`header_order`](super::header_order)
/// compares names: `copy_from_slice` of a length known only at run time
/// is a call to `memcpy`, whose register saving cost the UA scan and the
/// address check more than the copy.
#[inline(always)]
pub(crate) fn padded<const N: usize>(s: &[u8], fill: u8) -> [u8; N] {
    let mut window = [fill; N];
    let n = s.len();
    if N < 16 || n > 16 {
        window[..n].copy_from_slice(s);
        return window;
    }
    match n {
        8..=16 => {
            window[..8].copy_from_slice(&s[..8]);
            window[n - 8..n].copy_from_slice(&s[n - 8..]);
        }
        4..=7 => {
            window[..4].copy_from_slice(&s[..4]);
            window[n - 4..n].copy_from_slice(&s[n - 4..]);
        }
        1..=3 => {
            window[0] = s[0];
            window[n / 2] = s[n / 2];
            window[n - 1] = s[n - 1];
        }
        _ => {}
    }
    window
}

/// Iterates the non-empty, whitespace-trimmed items of a `sep`-separated
/// list: the definition [`count_items`] is tested against.
#[cfg(test)]
pub(crate) fn items(s: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    s.split(move |&b| b == sep)
        .map(<[u8]>::trim_ascii)
        .filter(|item| !item.is_empty())
}

/// `CONTENT[b]`: `b` is not ASCII whitespace.
const CONTENT: [bool; 256] = {
    let mut table = [true; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = !(b as u8).is_ascii_whitespace();
        b += 1;
    }
    table
};

/// How many items [`items`] gives, in one pass without slicing: an item
/// is kept when it has a byte that is not ASCII whitespace.
pub(crate) fn count_items(s: &[u8], sep: u8) -> usize {
    let mut count = 0;
    let mut filled = false;
    for &b in s {
        if b == sep {
            count += usize::from(filled);
            filled = false;
        } else {
            filled |= CONTENT[usize::from(b)];
        }
    }
    count + usize::from(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_case_sensitively_and_not() {
        assert_eq!(find(b"Mozilla Chrome/1", b"Chrome/"), Some(8));
        assert_eq!(find(b"mozilla chrome/1", b"Chrome/"), None);
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find(b"", b""), Some(0));
        assert_eq!(find(b"", b"a"), None);
        assert_eq!(find(b"aaab", b"aab"), Some(1));
        assert_eq!(find(b"abcab", b"ab"), Some(0));
        assert_eq!(find(b"xxab", b"ab"), Some(2));
        assert_eq!(find(b"xxa", b"ab"), None);
    }

    /// Every haystack over {a, b, A} up to 6 bytes, every needle up to 3.
    #[test]
    fn agrees_with_a_naive_search() {
        fn strings(max: usize) -> Vec<Vec<u8>> {
            let mut all = vec![vec![]];
            let mut layer = vec![vec![]];
            for _ in 0..max {
                layer = layer
                    .iter()
                    .flat_map(|s: &Vec<u8>| b"abA".iter().map(move |&c| [&s[..], &[c]].concat()))
                    .collect();
                all.extend(layer.iter().cloned());
            }
            all
        }
        let naive = |h: &[u8], n: &[u8]| {
            (0..=h.len()).find(|&i| i + n.len() <= h.len() && &h[i..i + n.len()] == n)
        };
        for hay in strings(6) {
            for needle in strings(3) {
                assert_eq!(
                    find(&hay, &needle),
                    naive(&hay, &needle),
                    "{hay:?} {needle:?}"
                );
            }
        }
    }

    /// Against setting each bit in turn, on every mask with one or two
    /// flags set and on random ones.
    #[test]
    fn bits16_puts_flag_j_on_bit_j() {
        let plain = |flags: [u8; 16]| {
            let mut m = 0u32;
            for (j, &f) in flags.iter().enumerate() {
                if f == 1 {
                    m |= 1 << j;
                }
            }
            m
        };
        let mut cases = vec![[0u8; 16], [1u8; 16]];
        for a in 0..16 {
            for b in 0..16 {
                let mut f = [0u8; 16];
                f[a] = 1;
                f[b] = 1;
                cases.push(f);
            }
        }
        let mut rng = crate::features::corpus::Rng::new(0xb175_1616);
        for _ in 0..10_000 {
            let r = rng.next();
            cases.push(std::array::from_fn(|j| (r >> j & 1) as u8));
        }
        for f in cases {
            assert_eq!(bits16(f), plain(f), "{f:?}");
        }
    }

    /// Against copying the slice and filling the rest, for every length
    /// up to 16 (and past it, and past `N`), random bytes and fills.
    #[test]
    fn padded_is_the_slice_then_the_fill() {
        fn plain<const N: usize>(s: &[u8], fill: u8) -> [u8; N] {
            let mut w = [fill; N];
            w[..s.len()].copy_from_slice(s);
            w
        }
        let mut rng = crate::features::corpus::Rng::new(0x9add_ed16);
        for _ in 0..2_000 {
            let fill = rng.next() as u8;
            for len in 0..=16 {
                let s: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                assert_eq!(padded::<16>(&s, fill), plain::<16>(&s, fill), "{s:?}");
                assert_eq!(padded::<17>(&s, fill), plain::<17>(&s, fill), "{s:?}");
                assert_eq!(padded::<24>(&s, fill), plain::<24>(&s, fill), "{s:?}");
            }
            let s: Vec<u8> = (0..20).map(|_| rng.next() as u8).collect();
            assert_eq!(padded::<24>(&s, fill), plain::<24>(&s, fill));
            assert_eq!(padded::<8>(&s[..5], fill), plain::<8>(&s[..5], fill));
        }
    }

    #[test]
    fn prefix_ignores_case() {
        assert!(starts_with_ci(b"CURL/8.4", b"curl/"));
        assert!(!starts_with_ci(b"cur", b"curl/"));
    }

    #[test]
    fn parses_leading_digits_and_saturates() {
        assert_eq!(leading_uint(b"147.0.0.0"), Some(147));
        assert_eq!(leading_uint(b"x1"), None);
        assert_eq!(leading_uint(b""), None);
        assert_eq!(leading_uint(b"99999999999999999999"), Some(u32::MAX));
    }

    /// The two-pass definition (count the digits, then add them up).
    fn leading_uint_oracle(s: &[u8]) -> Option<u32> {
        let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let mut n: u32 = 0;
        for &b in &s[..digits] {
            n = n.saturating_mul(10).saturating_add(u32::from(b - b'0'));
        }
        Some(n)
    }

    #[test]
    fn leading_uint_agrees_with_the_two_passes() {
        let pieces: &[&[u8]] = &[
            b"0",
            b"1",
            b"9",
            b"42",
            b"4294967295",
            b"4294967296",
            b".",
            b"/",
            b":",
            b"a",
            b" ",
        ];
        let mut rng = crate::features::corpus::Rng::new(0x00d1_6175);
        for _ in 0..50_000 {
            let s = rng.glue(pieces, 6);
            assert_eq!(leading_uint(&s), leading_uint_oracle(&s), "{s:?}");
        }
    }

    #[test]
    fn counts_what_items_gives() {
        let alphabet = [b'a', b' ', b';', b',', b'\t', b'\r', 0x0c, 0xa0];
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9);
        for len in 0..12 {
            for _ in 0..400 {
                let s: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.usize(..alphabet.len())])
                    .collect();
                for sep in [b';', b','] {
                    assert_eq!(count_items(&s, sep), items(&s, sep).count(), "{s:?}");
                }
            }
        }
    }

    /// Longer values of random bytes and of separators, whitespace and
    /// content mixed, empty and huge ones.
    #[test]
    fn counts_what_items_gives_on_hostile_bytes() {
        let mut rng = crate::features::corpus::Rng::new(0xc0_0c1e);
        let alphabet = [
            b'a', b' ', b';', b',', b'\t', b'\n', b'\r', 0x0b, 0x0c, 0x80, 0xff, 0,
        ];
        for len in 0..300 {
            for _ in 0..40 {
                let any: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                let mixed: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect();
                for s in [&any, &mixed] {
                    for sep in [b';', b','] {
                        assert_eq!(count_items(s, sep), items(s, sep).count(), "{s:?}");
                    }
                }
            }
        }
        let huge: Vec<u8> = b"a=1; ; b ;;".repeat(20_000);
        assert_eq!(count_items(&huge, b';'), items(&huge, b';').count());
        assert_eq!(count_items(&[b';'; 1000], b';'), 0);
        assert_eq!(count_items(b"", b';'), 0);
    }

    /// On the cookie and list headers of the fixtures.
    #[test]
    fn counts_what_items_gives_on_the_fixtures() {
        let mut checked = 0;
        for (name, sep) in [
            ("cookie", b';'),
            ("accept-language", b','),
            ("accept-encoding", b','),
            ("accept", b','),
        ] {
            for v in crate::features::corpus::values_of(name) {
                assert_eq!(count_items(&v, sep), items(&v, sep).count(), "{v:?}");
                checked += 1;
            }
        }
        assert!(checked > 3000, "{checked}");
    }

    #[test]
    fn splits_lists() {
        let got: Vec<&[u8]> = items(b" a=1; ;b=2 ;", b';').collect();
        assert_eq!(got, [&b"a=1"[..], b"b=2"]);
        assert_eq!(items(b"", b',').count(), 0);
    }
}
