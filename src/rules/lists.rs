//! Named address lists for `client` conditions: inline CIDR blocks, a text
//! file of them (one per line, `#` comments), or a JSON file in the format
//! Google and Bing publish (what `scripts/update-verified-bots` writes).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

// The one place rules name the address types' module (moving to a leaf
// `net` module is a change of this line).
pub(crate) use crate::net::{addr_from_text, Cidr};
use crate::verified::{add_prefixes, PrefixSet, PrefixSetBuilder};

use super::error::{At, RulesError};
use super::limits::{MAX_LISTS, MAX_LIST_ENTRIES, MAX_LIST_FILE, MAX_NAME};
use super::raw;

/// The compiled lists, by name.
pub(crate) type Lists = HashMap<String, PrefixSet>;

pub(crate) fn load(
    source: &str,
    base: &Path,
    lists: &BTreeMap<String, raw::List>,
) -> Result<Lists, RulesError> {
    let at = At::root("lists");
    if lists.len() > MAX_LISTS {
        return Err(RulesError::new(
            source,
            at.as_str(),
            format!("{} lists, more than {MAX_LISTS}", lists.len()),
        ));
    }
    let mut out = HashMap::with_capacity(lists.len());
    for (name, list) in lists {
        let at = at.field(name);
        let err = |m: String| RulesError::new(source, at.as_str(), m);
        if !valid_name(name) {
            return Err(err(format!(
                "'{name}' must be 1 to {MAX_NAME} letters, digits, '.', '_' or '-'"
            )));
        }
        let mut b = PrefixSetBuilder::default();
        match list {
            raw::List::Inline(entries) => {
                if entries.len() > MAX_LIST_ENTRIES {
                    return Err(err(format!(
                        "{} entries, more than {MAX_LIST_ENTRIES}",
                        entries.len()
                    )));
                }
                for (i, e) in entries.iter().enumerate() {
                    let c = Cidr::parse(e)
                        .map_err(|m| RulesError::new(source, at.index(i).as_str(), m))?;
                    let (addr, bits) = c.parts();
                    b.add(addr, bits);
                }
                if entries.is_empty() {
                    return Err(err("lists no address".into()));
                }
            }
            raw::List::File(f) => {
                let path = base.join(&f.file);
                read_file(&path, &mut b).map_err(|m| {
                    RulesError::new(
                        source,
                        at.field("file").as_str(),
                        format!("{}: {m}", path.display()),
                    )
                })?;
            }
        }
        out.insert(name.clone(), b.build());
    }
    Ok(out)
}

pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Reads at most `max` bytes of `path`: a device (`/dev/zero`) or a file
/// growing while it is read is refused, not read until memory runs out.
pub(crate) fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut text = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read: {e}"))?;
    if text.len() as u64 > max {
        return Err(format!("larger than {max} bytes"));
    }
    Ok(text)
}

fn read_file(path: &Path, b: &mut PrefixSetBuilder) -> Result<(), String> {
    let text = read_bounded(path, MAX_LIST_FILE)?;
    let n = if path.extension().is_some_and(|e| e == "json") {
        let v: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| format!("not JSON: {e}"))?;
        add_prefixes(&v, b).map_err(|(f, m)| if f.is_empty() { m } else { format!("{f}: {m}") })?
    } else {
        read_lines(&text, b)?
    };
    if n == 0 {
        return Err("lists no address".into());
    }
    if n > MAX_LIST_ENTRIES {
        return Err(format!("{n} entries, more than {MAX_LIST_ENTRIES}"));
    }
    Ok(())
}

/// One CIDR block or address per line; blank lines and `#` comments
/// (whole-line or after the entry) are skipped.
fn read_lines(text: &[u8], b: &mut PrefixSetBuilder) -> Result<usize, String> {
    let text = std::str::from_utf8(text).map_err(|_| "not UTF-8 text".to_owned())?;
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let entry = line.split('#').next().unwrap_or("").trim();
        if entry.is_empty() {
            continue;
        }
        let c = Cidr::parse(entry).map_err(|m| format!("line {}: {m}", i + 1))?;
        let (addr, bits) = c.parts();
        b.add(addr, bits);
        n += 1;
        if n > MAX_LIST_ENTRIES {
            break;
        }
    }
    Ok(n)
}
