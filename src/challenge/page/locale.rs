//! The page's words: one JSON file per locale, and the choice of one from
//! `Accept-Language`.
//!
//! ```json
//! {
//!   "lang": "pt-BR",
//!   "dir": "ltr",
//!   "name": "Português (Brasil)",
//!   "strings": { "title": "…", "heading": "…", … }
//! }
//! ```
//!
//! `lang` is the BCP 47 tag (`<html lang>`, and what `Accept-Language`
//! is matched against; the file is named after it: `pt-BR.json`), `dir`
//! is `ltr` or `rtl`. Every key of [`KEYS`] is a plain-text string (it is
//! HTML-escaped where it goes), and may hold the placeholders its entry
//! lists (`{site}`, `{seconds}`), nothing else. A file for a bundled
//! locale may give only the strings it changes; a new locale gives them
//! all. A bad file is refused naming the file, the line and the key.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::error::PageError;

/// Every string of a locale and the placeholders it may hold.
pub const KEYS: [(&str, &[&str]); 20] = [
    ("title", &[]),
    ("heading", &[]),
    ("lead", &["site"]),
    ("why", &[]),
    ("progress", &[]),
    ("working", &[]),
    ("done", &[]),
    ("error_heading", &[]),
    ("error", &[]),
    ("retry", &[]),
    ("nojs_link", &["seconds"]),
    ("noscript_wait", &["seconds"]),
    ("noscript_continue", &[]),
    ("noscript_none", &[]),
    ("reference", &[]),
    ("cookies_heading", &[]),
    ("cookies_text", &["site"]),
    ("wait_heading", &[]),
    ("wait_text", &["seconds"]),
    ("this_site", &[]),
];

/// The strings the page's script shows itself (they travel in its JSON
/// data, placeholders and all: the script fills them in).
pub(crate) const SCRIPT_KEYS: [&str; 8] = [
    "working",
    "done",
    "error_heading",
    "error",
    "retry",
    "nojs_link",
    "cookies_heading",
    "cookies_text",
];

/// The longest string accepted, in bytes.
const MAX_STRING: usize = 2000;
/// At most this many ranges of an `Accept-Language` are looked at.
const MAX_RANGES: usize = 32;

/// One locale, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Locale {
    /// The tag as written (`pt-BR`).
    pub(crate) lang: String,
    /// `ltr` or `rtl`.
    pub(crate) dir: &'static str,
    /// Its name in its own language.
    pub(crate) name: String,
    /// The strings, in [`KEYS`] order.
    pub(crate) strings: Vec<String>,
}

impl Locale {
    /// The string of `key` (one of [`KEYS`]).
    pub(crate) fn get(&self, key: &str) -> &str {
        let i = KEYS
            .iter()
            .position(|(k, _)| *k == key)
            .expect("a key of KEYS");
        &self.strings[i]
    }

    /// Parses a locale file. `base`: the bundled locale of the same tag,
    /// whose strings fill in what the file leaves out (none: the file
    /// must give them all).
    pub(crate) fn parse(
        file: &str,
        text: &str,
        base: Option<&Locale>,
    ) -> Result<Locale, PageError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| PageError(format!("{file}: line {}: not JSON: {e}", e.line())))?;
        let Value::Object(top) = v else {
            return Err(PageError(format!("{file}: not a JSON object")));
        };
        let at = |key: &str| line_of(text, key);
        let err =
            |key: &str, msg: String| PageError(format!("{file}: line {}: {key}: {msg}", at(key)));
        for k in top.keys() {
            if !matches!(k.as_str(), "lang" | "dir" | "name" | "strings") {
                return Err(err(k, "unknown field (lang, dir, name, strings)".into()));
            }
        }
        let text_field = |key: &str| -> Result<Option<&str>, PageError> {
            match top.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(_) => Err(err(key, "must be a string".into())),
            }
        };
        let lang = text_field("lang")?.ok_or_else(|| {
            PageError(format!(
                "{file}: lang: missing (a BCP 47 tag, e.g. \"pt-BR\")"
            ))
        })?;
        if !is_tag(lang) {
            return Err(err(
                "lang",
                format!("\"{lang}\" is not a language tag (e.g. \"de\", \"pt-BR\")"),
            ));
        }
        let stem = std::path::Path::new(file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if !stem.eq_ignore_ascii_case(lang) {
            return Err(err(
                "lang",
                format!("\"{lang}\" in a file named {stem}.json (name it {lang}.json)"),
            ));
        }
        let dir = match text_field("dir")? {
            None => base.map_or("ltr", |b| b.dir),
            Some("ltr") => "ltr",
            Some("rtl") => "rtl",
            Some(other) => {
                return Err(err(
                    "dir",
                    format!("must be \"ltr\" or \"rtl\", got \"{other}\""),
                ))
            }
        };
        let name = match text_field("name")? {
            Some(n) => n.to_owned(),
            None => base
                .map(|b| b.name.clone())
                .unwrap_or_else(|| lang.to_owned()),
        };
        let empty = Map::new();
        let strings = match top.get("strings") {
            None => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => return Err(err("strings", "must be an object of key to text".into())),
        };
        for k in strings.keys() {
            if !KEYS.iter().any(|(known, _)| known == k) {
                return Err(PageError(format!(
                    "{file}: line {}: strings.{k}: unknown key (known: {})",
                    line_of(text, k),
                    key_list()
                )));
            }
        }
        let mut out = Vec::with_capacity(KEYS.len());
        for (i, (key, allowed)) in KEYS.iter().enumerate() {
            let at = format!("strings.{key}");
            let s = match strings.get(*key) {
                Some(Value::String(s)) => s.as_str(),
                Some(_) => {
                    return Err(PageError(format!(
                        "{file}: line {}: {at}: must be a string",
                        line_of(text, key)
                    )))
                }
                None => match base {
                    Some(b) => b.strings[i].as_str(),
                    None => {
                        return Err(PageError(format!(
                            "{file}: {at}: missing (a new locale gives every key: {})",
                            key_list()
                        )))
                    }
                },
            };
            check_string(s, allowed).map_err(|m| {
                PageError(format!("{file}: line {}: {at}: {m}", line_of(text, key)))
            })?;
            out.push(s.to_owned());
        }
        Ok(Locale {
            lang: lang.to_owned(),
            dir,
            name,
            strings: out,
        })
    }
}

fn key_list() -> String {
    KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// The 1-based line of the first `"key"` in a file's text (1 when absent):
/// serde_json's values keep no positions, and a key is named once per
/// object in these small files.
fn line_of(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    text.find(&quoted).map_or(1, |at| {
        text[..at].bytes().filter(|&b| b == b'\n').count() + 1
    })
}

/// Checks one string: not empty, not too long, no control characters,
/// placeholders only among `allowed`.
fn check_string(s: &str, allowed: &[&str]) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("empty".into());
    }
    if s.len() > MAX_STRING {
        return Err(format!("{} bytes, at most {MAX_STRING}", s.len()));
    }
    if s.chars().any(|c| c.is_control()) {
        return Err(
            "holds a control character (line breaks too: the page wraps text itself)".into(),
        );
    }
    for piece in placeholders(s) {
        match piece {
            Ok(name) if allowed.contains(&name) => {}
            Ok(name) => {
                let mut m = format!("unknown placeholder {{{name}}}");
                if allowed.is_empty() {
                    m.push_str(" (this key takes none)");
                } else {
                    let _ = write!(
                        m,
                        " (this key takes {})",
                        allowed
                            .iter()
                            .map(|a| format!("{{{a}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                return Err(m);
            }
            Err(()) => return Err("an unclosed \"{\" (placeholders are written {site})".into()),
        }
    }
    Ok(())
}

/// The placeholders of a string, in order (`Err` for a `{` left open).
pub(crate) fn placeholders(s: &str) -> impl Iterator<Item = Result<&str, ()>> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let open = rest.find('{')?;
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                rest = &after[close + 1..];
                Some(Ok(name))
            }
            None => {
                rest = "";
                Some(Err(()))
            }
        }
    })
}

/// The pieces of a string: text, and placeholders by name.
pub(crate) fn pieces(s: &str) -> Vec<Result<&str, &str>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            out.push(Ok(&rest[..open]));
        }
        out.push(Err(&rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        out.push(Ok(rest));
    }
    out
}

/// Whether `t` is a language tag as far as matching needs: a primary
/// subtag of 2 or 3 letters, then subtags of 1 to 8 letters or digits.
pub(crate) fn is_tag(t: &str) -> bool {
    let mut parts = t.split('-');
    let primary = parts.next().unwrap_or_default();
    (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
        && t.len() <= 35
}

/// Picks the locale for an `Accept-Language` value among `tags` (each
/// locale's tag, in any case), `default` when nothing matches. Ranges are
/// taken by their weight (`q`, 1 when absent; 0 excludes), the earlier of
/// equal weights first, and a specific range before `*`. A range matches
/// a locale of its own tag, else of its tag cut at its last subtag, and so
/// on (`pt-BR` → `pt`, RFC 4647's lookup); failing that, a locale of the
/// same primary language (`pt` → an operator's `pt-BR`). Allocates
/// nothing; at most [`MAX_RANGES`] ranges are read.
pub(crate) fn negotiate<'t>(
    header: &[u8],
    tags: impl Iterator<Item = &'t str> + Clone,
    default: usize,
) -> usize {
    // Weight doubled, plus one for a specific range: `*` loses ties.
    let mut best: Option<(u32, usize)> = None;
    for item in header.split(|&b| b == b',').take(MAX_RANGES) {
        let mut parts = item.split(|&b| b == b';');
        let range = parts.next().unwrap_or_default().trim_ascii();
        let mut q = Some(1000);
        for p in parts {
            let p = p.trim_ascii();
            if p.len() >= 2 && p[..2].eq_ignore_ascii_case(b"q=") {
                q = qvalue(&p[2..]);
            }
        }
        let Some(q) = q.filter(|&q| q > 0) else {
            continue;
        };
        let (score, found) = if range == b"*" {
            (2 * q, Some(default))
        } else {
            (2 * q + 1, lookup(range, tags.clone()))
        };
        if let Some(i) = found {
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, i));
            }
        }
    }
    best.map_or(default, |(_, i)| i)
}

/// An RFC 9110 qvalue in thousandths (`0.8` → 800); `None` if malformed.
fn qvalue(v: &[u8]) -> Option<u32> {
    let v = v.trim_ascii();
    let (int, frac) = match v.iter().position(|&b| b == b'.') {
        Some(i) => (&v[..i], &v[i + 1..]),
        None => (v, &b""[..]),
    };
    if int.len() != 1 || frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n = match int[0] {
        b'0' => 0,
        b'1' => 1000,
        _ => return None,
    };
    for (i, &d) in frac.iter().enumerate() {
        n += u32::from(d - b'0') * [100, 10, 1][i];
    }
    (n <= 1000).then_some(n)
}

fn lookup<'t>(range: &[u8], tags: impl Iterator<Item = &'t str> + Clone) -> Option<usize> {
    if range.is_empty()
        || range.len() > 64
        || !range
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return None;
    }
    let mut r = range;
    loop {
        if let Some(i) = tags
            .clone()
            .position(|t| t.as_bytes().eq_ignore_ascii_case(r))
        {
            return Some(i);
        }
        let Some(cut) = r.iter().rposition(|&b| b == b'-') else {
            break;
        };
        r = &r[..cut];
        // RFC 4647 3.4: a single-letter subtag left at the end goes too.
        if r.len() >= 2 && r[r.len() - 2] == b'-' {
            r = &r[..r.len() - 2];
        }
    }
    let primary = range.split(|&b| b == b'-').next().unwrap_or_default();
    tags.clone().position(|t| {
        t.split('-')
            .next()
            .is_some_and(|p| p.as_bytes().eq_ignore_ascii_case(primary))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAGS: [&str; 5] = ["en", "de", "pt", "zh", "fr-CA"];

    fn pick(header: &str) -> &'static str {
        TAGS[negotiate(header.as_bytes(), TAGS.iter().copied(), 0)]
    }

    #[test]
    fn accept_language_by_weight_region_and_order() {
        assert_eq!(pick(""), "en");
        assert_eq!(pick("de"), "de");
        assert_eq!(pick("DE-at"), "de");
        assert_eq!(pick("pt-BR,pt;q=0.9,en;q=0.8"), "pt");
        assert_eq!(pick("ja, de;q=0.5"), "de", "no ja: the next");
        assert_eq!(pick("en;q=0.4, de;q=0.8"), "de", "weights, not order");
        assert_eq!(pick("de, pt"), "de", "equal weights: the first");
        assert_eq!(pick("*, pt"), "pt", "a specific range before *");
        assert_eq!(pick("ja, *;q=0.1"), "en", "* is the default");
        assert_eq!(pick("de;q=0, pt"), "pt", "q=0 excludes");
        assert_eq!(pick("zh-Hant-TW"), "zh");
        assert_eq!(pick("zh-x-abc"), "zh");
        assert_eq!(pick("fr"), "fr-CA", "same primary language, last resort");
        assert_eq!(pick("fr-CA-x-q"), "fr-CA");
        assert_eq!(
            pick("de;q=2, pt;q=0.5"),
            "pt",
            "a malformed weight drops the range"
        );
        assert_eq!(pick("de;q=0.1234, pt;q=0.5"), "pt");
        assert_eq!(pick("d\u{e9}, pt;q=0.1"), "pt");
        assert_eq!(pick(";;;,,,=,q=1"), "en");
        assert_eq!(pick("de ; Q=0.5 , pt ; q=0.6"), "pt");
        // Only the first MAX_RANGES ranges count.
        let long = "xx,".repeat(MAX_RANGES) + "de";
        assert_eq!(pick(&long), "en");
    }

    #[test]
    fn qvalues() {
        for (v, want) in [
            ("1", Some(1000)),
            ("1.000", Some(1000)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0", Some(0)),
            ("0.", Some(0)),
        ] {
            assert_eq!(qvalue(v.as_bytes()), want, "{v}");
        }
        for bad in ["1.5", "2", "", ".5", "0.1234", "-1", "a"] {
            assert_eq!(qvalue(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn tags_and_placeholders() {
        for t in ["en", "pt-BR", "zh-Hant", "sr-Latn-RS", "de-CH-1996"] {
            assert!(is_tag(t), "{t}");
        }
        for t in ["", "e", "english", "en_US", "en-", "-en", "en--US", "12"] {
            assert!(!is_tag(t), "{t}");
        }
        assert_eq!(
            pieces("a {site} b {seconds}"),
            [Ok("a "), Err("site"), Ok(" b "), Err("seconds")]
        );
        assert_eq!(check_string("ok {site}", &["site"]), Ok(()));
        assert!(check_string("{sight}", &["site"])
            .unwrap_err()
            .contains("unknown placeholder {sight}"));
        assert!(check_string("{site}", &[])
            .unwrap_err()
            .contains("takes none"));
        assert!(check_string("a {site", &["site"])
            .unwrap_err()
            .contains("unclosed"));
        assert!(check_string(" ", &[]).is_err());
        assert!(check_string("a\nb", &[]).unwrap_err().contains("control"));
    }
}
