//! The list file: parsing, validation and the errors that name the bad line.
//!
//! The format is described in the [module documentation](super).

use std::collections::BTreeSet;
use std::error::Error;
use std::fmt;
use std::io;

use super::matcher::{fold, MAX_NAME_LEN};

/// Why a list was refused. Nothing of a refused list is kept.
#[derive(Debug)]
pub struct ListError {
    source: String,
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    Line { line: usize, what: String },
    NoRules,
    Io(io::Error),
}

impl ListError {
    fn at(source: &str, line: usize, what: String) -> ListError {
        ListError {
            source: source.to_owned(),
            kind: ErrorKind::Line { line, what },
        }
    }

    pub(super) fn io(path: &std::path::Path, err: io::Error) -> ListError {
        ListError {
            source: path.display().to_string(),
            kind: ErrorKind::Io(err),
        }
    }

    /// The 1-based line of the offending entry; `None` for an I/O error or a
    /// list without any rule.
    pub fn line(&self) -> Option<usize> {
        match self.kind {
            ErrorKind::Line { line, .. } => Some(line),
            ErrorKind::NoRules | ErrorKind::Io(_) => None,
        }
    }

    /// Whether the list could not be read at all (as opposed to read and
    /// refused), so callers can report the two differently.
    pub fn is_io(&self) -> bool {
        matches!(self.kind, ErrorKind::Io(_))
    }
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = &self.source;
        match &self.kind {
            ErrorKind::Line { line, what } => write!(f, "{source}:{line}: {what}"),
            ErrorKind::NoRules => write!(
                f,
                "{source}: no header names in the list; an empty list would strip nothing, \
                 so it is refused (truncated or wrong file?)"
            ),
            ErrorKind::Io(err) => write!(f, "{source}: {err}"),
        }
    }
}

impl Error for ListError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(err) => Some(err),
            ErrorKind::Line { .. } | ErrorKind::NoRules => None,
        }
    }
}

/// A parsed list: folded, deduplicated and sorted names.
#[derive(Debug, Default, PartialEq, Eq, Clone)]
pub(super) struct Rules {
    pub(super) exact: Vec<Vec<u8>>,
    /// Prefixes without their trailing `*`.
    pub(super) prefixes: Vec<Vec<u8>>,
}

/// RFC 9110 `tchar`: the bytes a field name is made of.
pub(super) fn is_token_byte(b: u8) -> bool {
    TOKEN[usize::from(b)]
}

/// Whether every byte of `name` is a [`is_token_byte`]. Runs on every
/// header a prefix rule matches: one table load per byte and no early exit,
/// a branch-free loop.
pub(super) fn is_token(name: &[u8]) -> bool {
    name.iter().fold(true, |ok, &b| ok & TOKEN[usize::from(b)])
}

/// [`is_token_byte`] as a table, built at compile time.
static TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    table
};

/// RFC 9110 `tchar`, less `#`: a `#` inside a name is far more likely a
/// comment missing its leading space than a real header name.
fn is_name_byte(b: u8) -> bool {
    b != b'#' && is_token_byte(b)
}

pub(super) fn parse(source: &str, text: &[u8]) -> Result<Rules, ListError> {
    let mut exact = BTreeSet::new();
    let mut prefixes = BTreeSet::new();
    for (index, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = index + 1;
        match parse_line(raw).map_err(|what| ListError::at(source, line, what))? {
            Some(Entry::Exact(name)) => exact.insert(name),
            Some(Entry::Prefix(prefix)) => prefixes.insert(prefix),
            None => continue,
        };
    }
    if exact.is_empty() && prefixes.is_empty() {
        return Err(ListError {
            source: source.to_owned(),
            kind: ErrorKind::NoRules,
        });
    }
    Ok(Rules {
        exact: exact.into_iter().collect(),
        prefixes: prefixes.into_iter().collect(),
    })
}

/// A list entry quoted in an error: escaped, and cut short so that a wrong
/// (say, binary) file does not produce a message of megabytes.
struct Shown<'a>(&'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 64;
        match self.0.get(..MAX) {
            Some(head) if self.0.len() > MAX => write!(f, "{}...", head.escape_ascii()),
            _ => write!(f, "{}", self.0.escape_ascii()),
        }
    }
}

enum Entry {
    Exact(Vec<u8>),
    Prefix(Vec<u8>),
}

/// One line: `Ok(None)` for a blank or comment line, the folded rule, or
/// what is wrong with it.
fn parse_line(raw: &[u8]) -> Result<Option<Entry>, String> {
    let indent = raw.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let content = raw[indent..].trim_ascii_end();
    if content.is_empty() || content[0] == b'#' {
        return Ok(None);
    }
    let name_len = content
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(content.len());
    let (name, rest) = content.split_at(name_len);
    let shown = Shown(name);
    if let Some(pos) = name.iter().position(|&b| !is_name_byte(b)) {
        let b = name[pos];
        let why = if b == b'#' {
            " (a comment after a name needs whitespace before the `#`)"
        } else {
            " (only RFC 9110 token characters)"
        };
        return Err(format!(
            "\"{shown}\": byte {b:#04x} ('{}') at column {} is not allowed in a header name{why}",
            [b].escape_ascii(),
            indent + pos + 1,
        ));
    }
    let rest = rest.trim_ascii_start();
    if !rest.is_empty() && rest[0] != b'#' {
        return Err(format!(
            "\"{}\": whitespace inside a header name (a comment after a name starts with \" #\")",
            Shown(content)
        ));
    }
    let (body, is_prefix) = match name.strip_suffix(b"*") {
        Some(body) => (body, true),
        None => (name, false),
    };
    if body.contains(&b'*') {
        return Err(format!(
            "\"{shown}\": `*` is only allowed as the last character (a prefix rule)"
        ));
    }
    if is_prefix && body.is_empty() {
        return Err("a bare `*` would match every header; write a prefix before it".to_owned());
    }
    if body.len() > MAX_NAME_LEN {
        return Err(format!(
            "a name of {} bytes; the limit is {MAX_NAME_LEN}",
            body.len()
        ));
    }
    let folded = body.iter().map(|&b| fold(b)).collect();
    Ok(Some(if is_prefix {
        Entry::Prefix(folded)
    } else {
        Entry::Exact(folded)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&[u8]]) -> Vec<Vec<u8>> {
        list.iter().map(|n| n.to_vec()).collect()
    }

    #[test]
    fn accepts_comments_blanks_whitespace_case_and_duplicates() {
        let text = b"# internal headers\n\
            \n\
            \t  X-User-Id  \r\n\
            x_user_id\n\
            x-user-id # the same name thrice\n\
            \x20  # an indented comment\n\
            x-internal-*\r\n\
            X_INTERNAL_*   \t# prefix rule with a comment\n\
            cf-ray\n\
            x-a#b # not a comment\n";
        let err = parse("<buffer>", text).unwrap_err();
        assert_eq!(err.line(), Some(10), "{err}");

        let text = &text[..text.len() - "x-a#b # not a comment\n".len()];
        let rules = parse("<buffer>", text).unwrap();
        assert_eq!(
            rules,
            Rules {
                exact: names(&[b"cf-ray", b"x-user-id"]),
                prefixes: names(&[b"x-internal-"]),
            }
        );
    }

    #[test]
    fn every_token_character_is_accepted() {
        let rules = parse("<buffer>", b"!$%&'+-.^_`|~0123456789abcXYZ\n").unwrap();
        assert_eq!(rules.exact, names(&[b"!$%&'+-.^-`|~0123456789abcxyz"]));
    }

    #[test]
    fn no_newline_at_the_end_and_crlf_only_files_parse() {
        assert_eq!(parse("s", b"x-a").unwrap().exact, names(&[b"x-a"]));
        assert_eq!(
            parse("s", b"x-a\r\nx-b\r\n").unwrap().exact,
            names(&[b"x-a", b"x-b"])
        );
    }

    #[test]
    fn name_of_exactly_the_limit_is_accepted() {
        let mut text = vec![b'a'; MAX_NAME_LEN];
        text.extend_from_slice(b"\n");
        text.extend_from_slice(&[b'b'; MAX_NAME_LEN]);
        text.push(b'*');
        let rules = parse("s", &text).unwrap();
        assert_eq!(rules.exact[0].len(), MAX_NAME_LEN);
        assert_eq!(rules.prefixes[0].len(), MAX_NAME_LEN);
    }

    #[test]
    fn bad_lines_are_refused_with_source_and_line() {
        let long = format!("x-ok\n{}\n", "a".repeat(MAX_NAME_LEN + 1));
        let long_prefix = format!("x-ok\n{}*\n", "a".repeat(MAX_NAME_LEN + 1));
        let cases: &[(&[u8], usize, &str)] = &[
            (b"x-ok\nx-a b\n", 2, "whitespace inside a header name"),
            (b"x-ok\nx-a\tb\n", 2, "whitespace inside a header name"),
            (b"x-ok\n\nx-a: b\n", 3, "byte 0x3a (':') at column 4"),
            (
                b"x-ok\n  x-\xc3\xa9\n",
                2,
                "byte 0xc3 ('\\xc3') at column 5",
            ),
            (b"x-ok\nx-a\0\n", 2, "byte 0x00 ('\\x00') at column 4"),
            (b"x-ok\nx-a\x0bb\n", 2, "byte 0x0b"),
            (b"x-ok\nx-\"a\"\n", 2, "byte 0x22"),
            (b"\xef\xbb\xbfx-ok\n", 1, "byte 0xef"),
            (b"x-ok\nreferer[sic]\n", 2, "byte 0x5b ('[') at column 8"),
            (b"x-ok\nx-a#b\n", 2, "needs whitespace before the `#`"),
            (
                b"x-ok\nx-*-id\n",
                2,
                "`*` is only allowed as the last character",
            ),
            (
                b"x-ok\nx-**\n",
                2,
                "`*` is only allowed as the last character",
            ),
            (
                b"x-ok\n*x\n",
                2,
                "`*` is only allowed as the last character",
            ),
            (b"x-ok\n*\n", 2, "a bare `*` would match every header"),
            (
                b"x-ok\n  *  # everything\n",
                2,
                "a bare `*` would match every header",
            ),
            (long.as_bytes(), 2, "a name of 257 bytes; the limit is 256"),
            (
                long_prefix.as_bytes(),
                2,
                "a name of 257 bytes; the limit is 256",
            ),
        ];
        for &(text, line, what) in cases {
            let err = parse("/etc/edge/internal.txt", text).unwrap_err();
            let message = err.to_string();
            assert_eq!(err.line(), Some(line), "{message}");
            assert!(!err.is_io());
            let prefix = format!("/etc/edge/internal.txt:{line}: ");
            assert!(message.starts_with(&prefix), "{message}");
            assert!(message.contains(what), "{message:?} lacks {what:?}");
        }
    }

    #[test]
    fn long_bad_entries_are_quoted_short() {
        let mut text = vec![b'a'; 1000];
        text.push(0xff);
        let message = parse("s", &text).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("s:1: \"{}...\": byte 0xff", "a".repeat(64))),
            "{message}"
        );
        assert!(message.contains("column 1001"), "{message}");
    }

    #[test]
    fn lists_without_rules_are_refused() {
        let cases: &[&[u8]] = &[b"", b"\n\n", b"# only\n  # comments\r\n"];
        for &text in cases {
            let err = parse("<buffer>", text).unwrap_err();
            assert_eq!(err.line(), None);
            assert!(!err.is_io());
            assert!(
                err.to_string().starts_with("<buffer>: no header names"),
                "{err}"
            );
            assert!(err.source().is_none());
        }
    }
}
