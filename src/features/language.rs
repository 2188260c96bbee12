//! The primary language a client asks for. Browsers always send one taken
//! from the OS or user settings; libraries send none, and scrapers often a
//! fixed `en-US` or an odd value.

/// Longest primary subtag BCP 47 allows.
pub const MAX_PRIMARY: usize = 8;
/// Value for a first item that is not a language tag.
pub const MALFORMED: &[u8] = b"~";

/// Writes the lower-cased primary subtag of the first `accept-language` item
/// (`en` for `en-US,en;q=0.9`; `*` for the wildcard) into `buf`, or
/// [`MALFORMED`]. Returns the length written; 0 for an empty value.
pub fn write_primary(value: &[u8], buf: &mut [u8; MAX_PRIMARY]) -> usize {
    let value = value.trim_ascii();
    if value.is_empty() {
        return 0;
    }
    let first = value.split(|&b| b == b',').next().unwrap_or(value);
    let tag = first
        .split(|&b| b == b';')
        .next()
        .unwrap_or(first)
        .trim_ascii();
    let primary = tag.split(|&b| b == b'-' || b == b'_').next().unwrap_or(tag);
    if primary == b"*" {
        buf[0] = b'*';
        return 1;
    }
    if primary.is_empty()
        || primary.len() > MAX_PRIMARY
        || !primary.iter().all(u8::is_ascii_alphabetic)
    {
        buf[..MALFORMED.len()].copy_from_slice(MALFORMED);
        return MALFORMED.len();
    }
    for (d, s) in buf.iter_mut().zip(primary) {
        *d = s.to_ascii_lowercase();
    }
    primary.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_table() {
        let table: &[(&str, &str)] = &[
            ("en-US,en;q=0.9", "en"),
            ("de-DE,de;q=0.9,en-US;q=0.8", "de"),
            ("en-US;q=1.0", "en"),
            ("  zh_CN ", "zh"),
            ("PT-br", "pt"),
            ("*", "*"),
            ("", ""),
            ("   ", ""),
            ("en-US,", "en"),
            (",en", "~"),
            ("12-34", "~"),
            ("abcdefghi", "~"),
            ("fr;q=0.5", "fr"),
        ];
        for &(value, want) in table {
            let mut buf = [0; MAX_PRIMARY];
            let n = write_primary(value.as_bytes(), &mut buf);
            assert_eq!(&buf[..n], want.as_bytes(), "{value:?}");
        }
    }
}
