//! Byte-string helpers for parsing header values in place, without allocating.

/// Position of `needle` in `hay`, byte for byte.
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Position of `needle` in `hay`, ignoring ASCII case.
pub(crate) fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// Whether `hay` starts with `prefix`, ignoring ASCII case.
pub(crate) fn starts_with_ci(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && hay[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The unsigned integer spelled by the leading ASCII digits of `s`, if any.
/// Saturates instead of overflowing: a version of 10^12 is still "huge".
pub(crate) fn leading_uint(s: &[u8]) -> Option<u32> {
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

/// The major version following `token` (e.g. `Chrome/`) in `hay`.
pub(crate) fn version_after(hay: &[u8], token: &[u8]) -> Option<u32> {
    let at = find(hay, token)?;
    leading_uint(&hay[at + token.len()..])
}

/// Iterates the non-empty, whitespace-trimmed items of a `sep`-separated list.
pub(crate) fn items(s: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    s.split(move |&b| b == sep)
        .map(<[u8]>::trim_ascii)
        .filter(|item| !item.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_case_sensitively_and_not() {
        assert_eq!(find(b"Mozilla Chrome/1", b"Chrome/"), Some(8));
        assert_eq!(find(b"mozilla chrome/1", b"Chrome/"), None);
        assert_eq!(find_ci(b"mozilla chrome/1", b"Chrome/"), Some(8));
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find(b"", b""), Some(0));
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
        assert_eq!(version_after(b"a Firefox/150.0", b"Firefox/"), Some(150));
        assert_eq!(version_after(b"a Firefox/", b"Firefox/"), None);
    }

    #[test]
    fn splits_lists() {
        let got: Vec<&[u8]> = items(b" a=1; ;b=2 ;", b';').collect();
        assert_eq!(got, [&b"a=1"[..], b"b=2"]);
        assert_eq!(items(b"", b',').count(), 0);
    }
}
