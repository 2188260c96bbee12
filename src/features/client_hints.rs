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
/// `"Brand";v="147", "Not.A/Brand";v="8"`, each brand as sent (escapes
/// included). Stops at the first malformed entry: a browser never sends
/// one, so what follows is not worth reading.
pub fn brands(value: &[u8]) -> impl Iterator<Item = (&[u8], Option<u32>)> {
    Brands {
        rest: value,
        escapes: true,
    }
}

/// [`brands`] as feature schemas 1 to 3 read them: a brand ends at the
/// first `"`, escaped or not. Kept for their features (`ch_brand`,
/// `ch_ua_major`, `ch_version_mismatch`), which models of those schemas
/// were trained on and the pure-Lua engine computes the same way.
pub fn legacy_brands(value: &[u8]) -> impl Iterator<Item = (&[u8], Option<u32>)> {
    Brands {
        rest: value,
        escapes: false,
    }
}

struct Brands<'a> {
    rest: &'a [u8],
    /// Whether `\"` and `\\` inside a brand are escapes (structured fields).
    escapes: bool,
}

impl<'a> Iterator for Brands<'a> {
    type Item = (&'a [u8], Option<u32>);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest.trim_ascii_start();
        let s = s.strip_prefix(b",").unwrap_or(s).trim_ascii_start();
        let s = s.strip_prefix(b"\"")?;
        let close = if self.escapes {
            closing_quote(s)?
        } else {
            s.iter().position(|&b| b == b'"')?
        };
        // The brand as sent, escapes included (`\\Not\"A;Brand`).
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

/// Where the string that starts `s` (after its opening quote) ends: the
/// first `"` not escaped by a backslash (a structured-field string escapes
/// `"` and `\` as `\"` and `\\`; Chromium 84 to 86 sent `"\\Not\"A;Brand"`).
fn closing_quote(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => return Some(i),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
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

/// Whether a brand is Chromium's GREASE brand, in every spelling Chromium
/// has sent (`components/embedder_support/user_agent_utils.cc`,
/// `GetGreasedUserAgentBrandVersion`):
///
/// - since M103 or so: `Not` + c1 + `A` + c2 + `Brand`, each c one of
///   `` ()-./:;=?_`` (`Not A(Brand`, `Not/A)Brand`, `Not_A Brand`,
///   `Not)A;Brand`, `Not:A-Brand`, `Not.A/Brand`, `Not;A=Brand`, ...);
/// - the experiment before it: one of those characters first too
///   (`.Not/A)Brand`, `(Not(A:Brand`);
/// - M89 to M102's old algorithm: a permutation of `" "`, `" "`, `";"`
///   before `Not`, before `A` and before `Brand` (` Not A;Brand`,
///   ` Not;A Brand`, `;Not A Brand`): a leading space, which the first
///   version of this check missed (Chrome <= 104, Edge 99/101 got a
///   `ch_brand` no model had seen);
/// - M84 to M86: `\\`, `\"` and `;` (`\Not"A;Brand`, sent escaped as
///   `"\\Not\"A;Brand"`).
///
/// GREASE brands carry no version claim.
///
/// What feature schema 4 reads ([`BrandList`]); schemas 1 to 3 read
/// [`legacy_grease`], bug included, as their models were trained.
pub fn is_grease(brand: &[u8]) -> bool {
    // An optional leading character, then `Not`, one character, `A`, one
    // character, `Brand`.
    let rest = if brand.starts_with(b"Not") {
        brand
    } else {
        match grease_char(brand) {
            Some(rest) => rest,
            None => return false,
        }
    };
    rest.strip_prefix(b"Not")
        .and_then(grease_char)
        .and_then(|r| r.strip_prefix(b"A"))
        .and_then(grease_char)
        .is_some_and(|r| r == b"Brand")
}

/// The GREASE test of feature schemas 1 to 3: `Not` first and `Brand`
/// somewhere. It misses the old algorithm's leading character
/// (` Not A;Brand`), so their `ch_brand` is the GREASE brand for Chrome 89
/// to 104 and Edge 99 to 101: kept, because their models (and the pure-Lua
/// engine, which shadow mode compares with) read it so.
fn legacy_grease(brand: &[u8]) -> bool {
    brand.starts_with(b"Not") && super::bytes::find(brand, b"Brand").is_some()
}

/// `s` after its first character if that is one of Chromium's GREASE
/// characters (a backslash escape counts as one); `None` otherwise.
fn grease_char(s: &[u8]) -> Option<&[u8]> {
    match s {
        [b'\\', b'\\' | b'"', rest @ ..] => Some(rest),
        [b' ' | b'(' | b')' | b'-' | b'.' | b'/' | b':' | b';' | b'=' | b'?' | b'_', rest @ ..] => {
            Some(rest)
        }
        _ => None,
    }
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
///
/// Feature schemas 1 to 3's reading ([`legacy_brands`], [`legacy_grease`]),
/// as their models were trained; schema 4 reads [`BrandList`].
pub fn read(value: &[u8]) -> (Option<u32>, &[u8]) {
    let mut best = None;
    let mut chromium = None;
    let mut product = None;
    for (brand, major) in legacy_brands(value) {
        if brand == b"Chromium" {
            if chromium.is_none() && major.is_some() {
                chromium = major;
            }
        } else if !legacy_grease(brand) {
            best = best.max(major);
            product.get_or_insert(brand);
        }
        if chromium.is_some() && product.is_some() {
            break;
        }
    }
    (chromium.or(best), product.unwrap_or(b""))
}

/// Products whose brand in `sec-ch-ua` a User-Agent must name too (or, for
/// `HeadlessChrome`, that say what the browser is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Named {
    /// `Google Chrome`: Chrome itself, never Edge, Opera or Samsung Internet.
    pub google_chrome: bool,
    /// `Microsoft Edge`.
    pub edge: bool,
    /// `Opera` or `Opera GX`.
    pub opera: bool,
    /// `Samsung Internet`.
    pub samsung: bool,
    /// `HeadlessChrome`: branded Chrome in headless mode.
    pub headless: bool,
}

/// What schema 4's features read from a `sec-ch-ua` value, in one pass
/// ([`brands`], [`is_grease`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrandList<'a> {
    /// As [`read`]'s, with every GREASE spelling recognized.
    pub major: Option<u32>,
    /// As [`read`]'s, with every GREASE spelling recognized.
    pub product: &'a [u8],
    /// A GREASE brand ([`is_grease`]) is in the list: every Chromium since
    /// 84 sends one.
    pub grease: bool,
    /// The `Chromium` brand is in the list: every Chromium browser sends it
    /// (Chrome, Edge, Opera, Brave, Samsung Internet, WebView, Electron).
    pub chromium: bool,
    /// The products named.
    pub named: Named,
    /// What feature schemas 1 to 3 read from the value, [`read`]'s
    /// `(major, brand)`: from this pass when the value has no backslash
    /// (the brands then split the same way), else from [`read`].
    pub legacy: (Option<u32>, &'a [u8]),
}

impl<'a> BrandList<'a> {
    /// Reads every brand of `value` (browsers send three; a malformed entry
    /// ends the list, see [`brands`]).
    pub fn read(value: &'a [u8]) -> Self {
        let mut best = None;
        let mut chromium_major = None;
        let mut product = None;
        // One pass serves both readings unless an escape splits the brands
        // differently for them.
        let escaped = value.contains(&b'\\');
        let (mut legacy_best, mut legacy_product) = (None, None);
        let mut list = BrandList {
            major: None,
            product: b"",
            grease: false,
            chromium: false,
            named: Named::default(),
            legacy: (None, b""),
        };
        for (brand, major) in brands(value) {
            if brand == b"Chromium" {
                list.chromium = true;
                if chromium_major.is_none() && major.is_some() {
                    chromium_major = major;
                }
                continue;
            }
            if !escaped && !legacy_grease(brand) {
                legacy_best = legacy_best.max(major);
                legacy_product.get_or_insert(brand);
            }
            if is_grease(brand) {
                list.grease = true;
            } else {
                best = best.max(major);
                product.get_or_insert(brand);
                match brand {
                    b"Google Chrome" => list.named.google_chrome = true,
                    b"Microsoft Edge" => list.named.edge = true,
                    b"Opera" | b"Opera GX" => list.named.opera = true,
                    b"Samsung Internet" => list.named.samsung = true,
                    b"HeadlessChrome" => list.named.headless = true,
                    _ => {}
                }
            }
        }
        list.major = chromium_major.or(best);
        list.product = product.unwrap_or(b"");
        list.legacy = if escaped {
            read(value)
        } else {
            (
                chromium_major.or(legacy_best),
                legacy_product.unwrap_or(b""),
            )
        };
        list
    }
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
        for (brand, major) in legacy_brands(value) {
            if brand == b"Chromium" {
                if major.is_some() {
                    return major;
                }
            } else if !legacy_grease(brand) {
                best = best.max(major);
            }
        }
        best
    }

    /// ...and the product brand.
    fn product_brand(value: &[u8]) -> &[u8] {
        legacy_brands(value)
            .map(|(brand, _)| brand)
            .find(|&b| b != b"Chromium" && !legacy_grease(b))
            .unwrap_or(b"")
    }

    /// The schema-4 reading against the two passes with the new GREASE
    /// test: the same major and product wherever no escape is involved.
    #[test]
    fn brand_list_agrees_with_read_on_lists_without_old_grease() {
        let fixtures = crate::features::corpus::values_of("sec-ch-ua");
        for v in &fixtures {
            // Where only the new test sees GREASE, the two differ on purpose.
            if v.contains(&b'\\') || brands(v).any(|(b, _)| is_grease(b) && !legacy_grease(b)) {
                continue;
            }
            let list = BrandList::read(v);
            assert_eq!(
                (list.major, list.product),
                read(v),
                "{}",
                String::from_utf8_lossy(v)
            );
        }
    }

    /// The one-pass legacy reading equals [`read`] on every fixture value
    /// and on glued lists with escapes, GREASE of every era and junk.
    #[test]
    fn brand_list_carries_the_legacy_reading() {
        let same = |v: &[u8]| {
            assert_eq!(
                BrandList::read(v).legacy,
                read(v),
                "{:?}",
                String::from_utf8_lossy(v)
            );
        };
        for v in &crate::features::corpus::values_of("sec-ch-ua") {
            same(v);
        }
        let pieces: &[&[u8]] = &[
            b"\"Chromium\";v=\"147\"",
            b"\" Not A;Brand\";v=\"99\"",
            b"\".Not/A)Brand\";v=\"8\"",
            b"\"\\\\Not\\\"A;Brand\";v=\"99\"",
            b"\"Google Chrome\";v=\"146\"",
            b"\"Not)A;Brand\";v=\"24\"",
            b", ",
            b"\\",
            b"\"",
            b";v=\"1\"",
        ];
        let mut rng = crate::features::corpus::Rng::new(0x6c_e6a7);
        for _ in 0..100_000 {
            same(&rng.glue(pieces, 7));
        }
    }

    #[test]
    fn schemas_1_to_3_keep_their_reading_of_the_old_grease() {
        let v = br#"" Not A;Brand";v="99", "Chromium";v="101", "Microsoft Edge";v="101""#;
        assert_eq!(read(v), (Some(101), &b" Not A;Brand"[..]));
        assert_eq!(BrandList::read(v).product, b"Microsoft Edge");
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

    /// Every GREASE brand Chromium's algorithms make, with and without the
    /// leading character, as sent (`sec-ch-ua` values seen in the wild: the
    /// old algorithm's ` Not A;Brand` of Chrome 89 to 102 and Edge 99/101,
    /// the experiment's `.Not/A)Brand` of Chrome 103/104, the current
    /// `Not)A;Brand`, `Not:A-Brand`, ...; M84-86's escaped `\\Not\"A;Brand`).
    #[test]
    fn grease_in_every_spelling_chromium_has_used() {
        // GetGreasedUserAgentBrandVersion's current characters, both places.
        let chars = [" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_"];
        let mut made = 0;
        for a in chars {
            for b in chars {
                let brand = format!("Not{a}A{b}Brand");
                assert!(is_grease(brand.as_bytes()), "{brand:?}");
                // The experiment that put one of them first too.
                for first in &chars[1..] {
                    let brand = format!("{first}Not{a}A{b}Brand");
                    assert!(is_grease(brand.as_bytes()), "{brand:?}");
                }
                made += 1;
            }
        }
        assert_eq!(made, 121);
        // The old algorithm: a permutation of " ", " ", ";".
        for brand in [" Not A;Brand", " Not;A Brand", ";Not A Brand"] {
            assert!(is_grease(brand.as_bytes()), "{brand:?}");
        }
        // As sent in a header, with the brand lists real browsers sent.
        for (value, product) in [
            (
                r#"" Not A;Brand";v="99", "Chromium";v="101", "Microsoft Edge";v="101""#,
                "Microsoft Edge",
            ),
            (
                r#"" Not;A Brand";v="99", "Google Chrome";v="97", "Chromium";v="97""#,
                "Google Chrome",
            ),
            (
                r#""Chromium";v="94", "Google Chrome";v="94", ";Not A Brand";v="99""#,
                "Google Chrome",
            ),
            (
                r#"".Not/A)Brand";v="99", "Google Chrome";v="103", "Chromium";v="103""#,
                "Google Chrome",
            ),
            (
                r#""Google Chrome";v="107", "Chromium";v="107", "Not=A?Brand";v="24""#,
                "Google Chrome",
            ),
            (
                r#""Chromium";v="110", "Not A(Brand";v="24", "Google Chrome";v="110""#,
                "Google Chrome",
            ),
            (
                r#""Not_A Brand";v="8", "Chromium";v="120", "Google Chrome";v="120""#,
                "Google Chrome",
            ),
            (
                r#""Not/A)Brand";v="8", "Chromium";v="126", "Google Chrome";v="126""#,
                "Google Chrome",
            ),
            (
                r#""Not)A;Brand";v="99", "Microsoft Edge";v="127", "Chromium";v="127""#,
                "Microsoft Edge",
            ),
            (r#""Not:A-Brand";v="8", "Chromium";v="156""#, ""),
            (
                r#""\\Not\"A;Brand";v="99", "Google Chrome";v="85", "Chromium";v="85""#,
                "Google Chrome",
            ),
        ] {
            let list = BrandList::read(value.as_bytes());
            assert!(list.grease && list.chromium, "{value}");
            assert_eq!(list.product, product.as_bytes(), "{value}");
            assert!(list.major.is_some(), "{value}");
        }
        for brand in [
            "Not A Brandy",
            "NotABrand",
            "Not AA;Brand",
            "Not A;Bran",
            "  Not A;Brand",
            "xNot A;Brand",
            "Not A;Brand ",
            "Google Chrome",
            "Chromium",
            "",
            "Not",
            "\\Not\\A;\\Brand",
        ] {
            assert!(!is_grease(brand.as_bytes()), "{brand:?}");
        }
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
