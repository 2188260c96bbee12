//! Internal header sets: which request headers must never reach an origin.
//!
//! An edge adds headers its origins trust (`x-user-id`, `cf-connecting-ip`,
//! `x-envoy-*`, ...). A client that sends one of them itself could claim an
//! identity or steer routing, so the edge strips them before proxying. A
//! [`HeaderSet`] is the list of such names, loaded once per configuration
//! (re)load and asked once per request.
//!
//! # List format
//!
//! ```text
//! # Identity the auth layer sets after verifying a session.
//! x-user-id
//! X-Authenticated-*     # a prefix rule: every header starting with this
//! ```
//!
//! - One header name per line. Lines are split on `\n`; leading and trailing
//!   ASCII whitespace (including `\r`) is trimmed.
//! - Blank lines, and lines whose first non-space character is `#`, are ignored.
//!   A comment may also follow a name after whitespace: `x-user-id  # why`.
//! - A name may use only RFC 9110 token characters, except `#` (`x-a#b` is
//!   refused: it is almost surely a comment missing its space). Names are at
//!   most [`MAX_NAME_LEN`] bytes, not counting a trailing `*`.
//! - Case does not matter, and `_` and `-` are the same character.
//! - A trailing `*` makes a prefix rule: `x-internal-*` matches every header
//!   whose name starts with `x-internal-`, including `x-internal-` itself. A
//!   `*` anywhere else, and a bare `*`, are refused.
//! - Duplicates (in any spelling) are merged.
//! - A list with no rule at all is refused: it is almost surely a truncated or
//!   wrong file, and silently stripping nothing is the dangerous failure.
//!
//! Any refused line refuses the whole list; the error names the source and the
//! 1-based line, and no part of the list is kept.
//!
//! # Matching
//!
//! A request header name matches when, compared byte by byte with ASCII case
//! folded and `_` read as `-`, it equals an exact name or starts with a prefix.
//! Folding `_` closes a smuggling path: with `underscores_in_headers on` nginx
//! passes `X_User_Id` through, and CGI/PHP/WSGI backends map it to the same
//! variable as `X-User-Id`. Bytes outside ASCII never fold. Names longer than
//! [`MAX_NAME_LEN`] bytes can only match a prefix rule.
//!
//! # How it works
//!
//! List entries are folded once at load. Exact names go into a
//! [trie-hard](trie_hard) trie whose keys live in one buffer owned by the set.
//! Because most headers of a request are not internal, what decides the cost
//! is how cheaply a name is rejected, so the trie sits behind a 1 KiB
//! one-hash Bloom filter keyed on the name's length and its first, middle and
//! last folded bytes. For `accept-language` against a list holding
//! `x-user-id`: (15, `a`, `-`, `e`) hashes to a bit no exact name set, so the
//! name is rejected after four byte loads, without being folded or looked up.
//! Only names that pass the filter are folded into a stack buffer and looked
//! up in the trie. Each trie key is the folded name led by two bytes, its
//! length and its last byte: internal names share long beginnings
//! (`x-forwarded-...`), and keys that part ways early let trie-hard stop
//! walking after a few bytes and compare the rest at once. Prefix rules are
//! few; they are checked linearly behind a filter on their first (up to
//! eight) folded bytes, so `x-forwarded-for` is not compared with
//! `x-envoy-*`. Neither path allocates.

// No `unsafe` but in `view`, which reads nginx's header memory.
#![deny(unsafe_code)]

mod list;
mod matcher;
#[cfg(test)]
mod tests;
mod view;

use std::fmt;
use std::path::Path;

pub use view::{Header, HeaderBuf};

pub use list::ListError;
pub use matcher::MAX_NAME_LEN;
use matcher::{ExactNames, Prefixes, Rule};

/// How many distinct internal names [`HeaderSet::find_internal`] reports one
/// index for; beyond that it reports every internal entry. Real requests have
/// a handful.
pub const DEDUP_LIMIT: usize = 64;

/// A loaded list of internal header names. Owns all its data; build a new one
/// on every configuration reload and drop the old one.
pub struct HeaderSet {
    exact: ExactNames,
    prefixes: Prefixes,
    /// The folded rules the matchers were built from, for [`HeaderSet::extend`].
    list: list::Rules,
}

/// What [`HeaderSet::find_internal`] found in one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Matches {
    /// Headers whose name is internal, counting repeats.
    pub matched: usize,
    /// Distinct internal names (after folding); the number of indices
    /// `find_internal` wanted to write into `clear`.
    pub distinct: usize,
    /// Internal headers (repeats counted) whose name holds a byte that is
    /// not an RFC 9110 token character, as nginx keeps with
    /// `ignore_invalid_headers off`. lua-nginx-module's
    /// `ngx.req.clear_header` percent-escapes such bytes before it compares
    /// names (`ngx_http_lua_copy_escaped_header`, 0.10.23), so it cannot
    /// remove these: a caller stripping through it refuses the request.
    pub unremovable: usize,
}

impl HeaderSet {
    /// Parse a list in the [format above](self#list-format). `source` names
    /// the list in errors (a path, or `"<buffer>"`).
    pub fn parse(source: &str, text: &[u8]) -> Result<HeaderSet, ListError> {
        Ok(HeaderSet::build(
            list::parse(source, text)?,
            &list::Rules::default(),
        ))
    }

    /// The matchers hold the list's rules and `extra`'s (names
    /// [`HeaderSet::extend`] added: found and listed to clear, never counted
    /// as internal) side by side, so one lookup per header answers both.
    fn build(list: list::Rules, extra: &list::Rules) -> HeaderSet {
        HeaderSet {
            exact: ExactNames::new(&list.exact, &extra.exact),
            prefixes: Prefixes::new(&list.prefixes, &extra.prefixes),
            list,
        }
    }

    /// A new set with this set's rules and, as extra rules, those of the
    /// list `text` (in the same format, refused as [`HeaderSet::parse`]
    /// refuses a list; `source` names it in errors). A header matching only
    /// an extra rule is listed to clear by [`HeaderSet::find_internal`] but
    /// not counted in `matched` nor `unremovable`, and is not internal for
    /// [`HeaderSet::is_internal`]; [`HeaderSet::len`] counts the list's rules.
    /// edgeguard's Lua shim adds the score header this way: one search per
    /// request finds the internal headers and every client spelling of the
    /// score header, and the counts stay those of the list. Extending an
    /// extended set replaces its extra rules.
    pub fn extend(&self, source: &str, text: &[u8]) -> Result<HeaderSet, ListError> {
        HeaderSet::extra_rules(self.list.clone(), source, text)
    }

    /// This set's own rules, without extra rules: a copy of the list.
    pub fn list_only(&self) -> HeaderSet {
        HeaderSet::build(self.list.clone(), &list::Rules::default())
    }

    /// A set of extra rules alone ([`HeaderSet::extend`] of a set without
    /// rules): it finds and lists the names of `text` and counts nothing.
    /// A location without an internal list strips the score header's
    /// spellings with it.
    pub fn extra_only(source: &str, text: &[u8]) -> Result<HeaderSet, ListError> {
        HeaderSet::extra_rules(list::Rules::default(), source, text)
    }

    fn extra_rules(rules: list::Rules, source: &str, text: &[u8]) -> Result<HeaderSet, ListError> {
        let more = list::parse(source, text)?;
        Ok(HeaderSet::build(rules, &more))
    }

    /// Read and parse a list file. Errors name the path.
    pub fn load(path: &Path) -> Result<HeaderSet, ListError> {
        let text = std::fs::read(path).map_err(|err| ListError::io(path, err))?;
        HeaderSet::parse(&path.display().to_string(), &text)
    }

    /// Whether a header with this name must be stripped. `name` may be in any
    /// case and use `_` for `-`. Never allocates.
    #[inline]
    pub fn is_internal(&self, name: &[u8]) -> bool {
        self.exact.get(name) == Some(Rule::Listed)
            || matches!(self.prefixes.get(name), Some((Rule::Listed, _)))
    }

    /// The number of distinct rules: exact names plus prefix rules.
    pub fn len(&self) -> usize {
        self.list.exact.len() + self.list.prefixes.len()
    }

    /// False for a loaded list (a list without rules is refused at load);
    /// true only for [`HeaderSet::extra_only`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Find the internal headers of one request.
    ///
    /// Every header whose key is internal is counted in `matched` (and in
    /// `unremovable` when its name is not a token, see [`Matches`]); one that
    /// matches only an extra rule ([`HeaderSet::extend`]) is not counted but
    /// is listed to clear like the internal ones. For the
    /// first header of each distinct internal name, its index in
    /// `headers` is written to `clear[distinct]` and `distinct` grows by one,
    /// so `clear` lists one index per name to remove, in request order. If
    /// `clear` is too short, the counts are still complete and only the first
    /// `clear.len()` indices are written: `distinct > clear.len()` tells the
    /// caller to retry with a larger buffer. After [`DEDUP_LIMIT`] distinct
    /// names, every further internal entry is listed without deduplication,
    /// so the cost stays linear in the number of headers. Values are never
    /// read. Never allocates.
    ///
    /// An empty name (a null or empty C string) is never internal.
    pub fn find_internal<'h>(&self, headers: &[Header<'h>], clear: &mut [u32]) -> Matches {
        let key = |h: &Header<'h>| -> &'h [u8] { h.name() };
        let mut found = Matches::default();
        // Indices written to `clear`; equals `found.distinct` until `clear`
        // runs out.
        let mut written = 0;
        for (i, header) in headers.iter().enumerate() {
            let name = key(header);
            match self.exact.get(name) {
                // Folding maps only `A-Z` and `_` to other bytes, all of
                // them tokens, and the list's names are tokens: a name
                // equal to one once folded is a token itself.
                Some(Rule::Listed) => found.matched += 1,
                exact => match self.prefixes.get(name) {
                    // The prefix is tokens (the list's): check the rest.
                    Some((Rule::Listed, len)) => {
                        found.matched += 1;
                        if !list::is_token(&name[len..]) {
                            found.unremovable += 1;
                        }
                    }
                    // An extra rule's match is listed, not counted.
                    prefix => {
                        if exact.is_none() && prefix.is_none() {
                            continue;
                        }
                    }
                },
            }
            // Names are distinct as nginx's clear_header compares them: ASCII
            // case-insensitively, with `_` and `-` different. Deduplicating on
            // the folded name would clear `x-a-b` and leave `x_a_b` behind.
            // A repeat of an earlier internal name is internal itself, so the
            // earlier one is in `clear` if `clear` holds all of them; if not,
            // look through every earlier header.
            // Past DEDUP_LIMIT distinct names every further entry is listed
            // as is: clearing a name twice is harmless, and comparing each
            // new name with all earlier ones would let a hostile request of
            // thousands of `x-internal-N` headers cost quadratic time.
            let repeat = if found.distinct >= DEDUP_LIMIT {
                false
            } else if written == found.distinct {
                clear[..written]
                    .iter()
                    .any(|&j| key(&headers[j as usize]).eq_ignore_ascii_case(name))
            } else {
                headers[..i]
                    .iter()
                    .any(|h| key(h).eq_ignore_ascii_case(name))
            };
            if repeat {
                continue;
            }
            if let (Some(slot), Ok(index)) = (clear.get_mut(written), u32::try_from(i)) {
                *slot = index;
                written += 1;
            }
            found.distinct += 1;
        }
        found
    }
}

impl fmt::Debug for HeaderSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeaderSet")
            .field("rules", &self.len())
            .finish_non_exhaustive()
    }
}
