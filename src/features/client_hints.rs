//! User-Agent client hints (`sec-ch-ua`, `sec-ch-ua-mobile`,
//! `sec-ch-ua-platform`): Chromium browsers send them by default on secure
//! origins since version 90, and they must agree with the User-Agent. Scrapers
//! that copy a UA string but not the hints, or hints from another version,
//! disagree here.

use super::bytes::leading_uint;
use super::user_agent::Os;

/// Chromium sends low-entropy client hints by default from this major on.
pub const CLIENT_HINTS_SINCE: u32 = 90;

/// Iterates the `(brand, major version)` entries of a `sec-ch-ua` value,
/// `"Brand";v="147", "Not.A/Brand";v="8"`. Stops at the first malformed
/// entry: a browser never sends one, so what follows is not worth reading.
pub fn brands(value: &[u8]) -> impl Iterator<Item = (&[u8], Option<u32>)> {
    Brands { rest: value }
}

struct Brands<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Brands<'a> {
    type Item = (&'a [u8], Option<u32>);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest.trim_ascii_start();
        let s = s.strip_prefix(b",").unwrap_or(s).trim_ascii_start();
        let s = s.strip_prefix(b"\"")?;
        let close = s.iter().position(|&b| b == b'"')?;
        let brand = &s[..close];
        let after = &s[close + 1..];
        // Parameters run to the next comma; GREASE brands may contain ';' but
        // only inside the quotes we just skipped.
        let end = after.iter().position(|&b| b == b',').unwrap_or(after.len());
        let params = &after[..end];
        self.rest = &after[end..];
        Some((brand, version_param(params)))
    }
}

/// The major of a `;v="147"` parameter.
fn version_param(params: &[u8]) -> Option<u32> {
    let mut p = params;
    while let Some(semi) = p.iter().position(|&b| b == b';') {
        p = p[semi + 1..].trim_ascii_start();
        if let Some(v) = p.strip_prefix(b"v=") {
            let v = v.strip_prefix(b"\"").unwrap_or(v);
            return leading_uint(v);
        }
    }
    None
}

/// GREASE brands ("Not.A/Brand", "Not A(Brand", ...) carry no version claim.
fn is_grease(brand: &[u8]) -> bool {
    brand.starts_with(b"Not") && super::bytes::find(brand, b"Brand").is_some()
}

/// What the features read from a `sec-ch-ua` value, in one pass over its
/// brands (two passes parsed every brand list twice).
///
/// `major`: the Chromium major version the value claims, the `Chromium`
/// brand's, or else the highest non-GREASE brand's; `None` if the value
/// names no versioned brand (which a browser never sends).
///
/// `brand`: the first brand that is neither GREASE nor `Chromium`, the
/// browser's own name (`Google Chrome`, `Microsoft Edge`, `Brave`,
/// `HeadlessChrome`); empty if there is none.
pub fn read(value: &[u8]) -> (Option<u32>, &[u8]) {
    let mut best = None;
    let mut chromium = None;
    let mut product = None;
    for (brand, major) in brands(value) {
        if brand == b"Chromium" {
            if chromium.is_none() && major.is_some() {
                chromium = major;
            }
        } else if !is_grease(brand) {
            best = best.max(major);
            product.get_or_insert(brand);
        }
        if chromium.is_some() && product.is_some() {
            break;
        }
    }
    (chromium.or(best), product.unwrap_or(b""))
}

/// Whether a `sec-ch-ua-platform` value agrees with the OS the UA claims;
/// `None` when the UA names no OS that has a platform value.
pub fn platform_matches(value: &[u8], os: Os) -> Option<bool> {
    let expected = os.client_hint_platform()?;
    let v = value.trim_ascii();
    let v = v
        .strip_prefix(b"\"")
        .and_then(|v| v.strip_suffix(b"\""))
        .unwrap_or(v);
    Some(v == expected || (os == Os::ChromeOs && v == b"ChromeOS"))
}

/// The boolean of a `sec-ch-ua-mobile` value (`?1`/`?0`); `None` if malformed.
pub fn mobile_flag(value: &[u8]) -> Option<bool> {
    match value.trim_ascii() {
        b"?1" => Some(true),
        b"?0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two passes [`read`] replaced: the major...
    fn chromium_major(value: &[u8]) -> Option<u32> {
        let mut best = None;
        for (brand, major) in brands(value) {
            if brand == b"Chromium" {
                if major.is_some() {
                    return major;
                }
            } else if !is_grease(brand) {
                best = best.max(major);
            }
        }
        best
    }

    /// ...and the product brand.
    fn product_brand(value: &[u8]) -> &[u8] {
        brands(value)
            .map(|(brand, _)| brand)
            .find(|&b| b != b"Chromium" && !is_grease(b))
            .unwrap_or(b"")
    }

    /// On every `sec-ch-ua` of the fixtures and on lists glued from brand
    /// entries, GREASE and malformed pieces.
    #[test]
    fn read_agrees_with_the_two_passes() {
        let same = |v: &[u8]| {
            assert_eq!(
                read(v),
                (chromium_major(v), product_brand(v)),
                "{:?}",
                String::from_utf8_lossy(v)
            );
        };
        let fixtures = crate::features::corpus::values_of("sec-ch-ua");
        assert!(fixtures.len() > 500, "{}", fixtures.len());
        for v in &fixtures {
            same(v);
        }
        let pieces: &[&[u8]] = &[
            b"\"Chromium\";v=\"147\"",
            b"\"Chromium\"",
            b"\"Google Chrome\";v=\"146\"",
            b"\"Brave\";v=\"99\"",
            b"\"Not.A/Brand\";v=\"8\"",
            b"\"Not)A;Brand\";v=\"24\"",
            b"\"Microsoft Edge\"",
            b", ",
            b",",
            b" ",
            b";v=\"1\"",
            b"\"",
            b"x",
        ];
        let mut rng = crate::features::corpus::Rng::new(0xc4_0a);
        for _ in 0..100_000 {
            same(&rng.glue(pieces, 7));
        }
    }

    #[test]
    fn parses_brand_lists() {
        let v = br#""Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147""#;
        let got: Vec<_> = brands(v).collect();
        assert_eq!(
            got,
            [
                (&b"Google Chrome"[..], Some(147)),
                (b"Not.A/Brand", Some(8)),
                (b"Chromium", Some(147))
            ]
        );
        assert_eq!(read(v).0, Some(147));
        // A GREASE brand with ';' inside the quotes, no Chromium brand.
        let v = br#""Not;A=Brand";v="99", "Microsoft Edge";v="120""#;
        assert_eq!(read(v).0, Some(120));
        assert_eq!(read(br#""Not)A;Brand";v="24""#).0, None);
        assert_eq!(read(b"Chrome 120").0, None);
        assert_eq!(read(br#""Chromium""#).0, None);
        assert_eq!(read(b"").0, None);
        // Brave sends its own brand and Chromium's version.
        assert_eq!(
            read(br#""Brave";v="147", "Chromium";v="147""#),
            (Some(147), &b"Brave"[..])
        );
        assert_eq!(read(v).1, b"Microsoft Edge");
        assert_eq!(read(br#""Chromium";v="9", "Not)A;Brand""#).1, b"");
    }

    #[test]
    fn platform_and_mobile() {
        assert_eq!(platform_matches(br#""Windows""#, Os::Windows), Some(true));
        assert_eq!(platform_matches(br#""Linux""#, Os::Windows), Some(false));
        assert_eq!(platform_matches(br#""macOS""#, Os::MacOs), Some(true));
        assert_eq!(platform_matches(br#""ChromeOS""#, Os::ChromeOs), Some(true));
        assert_eq!(platform_matches(br#""Windows""#, Os::Other), None);
        assert_eq!(mobile_flag(b"?1"), Some(true));
        assert_eq!(mobile_flag(b" ?0"), Some(false));
        assert_eq!(mobile_flag(b"1"), None);
    }
}
