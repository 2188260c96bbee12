//! Verified bots: search engine crawlers recognised by User-Agent *and*
//! address, so that Googlebot and bingbot pass while a scraper that only
//! borrows their User-Agent is caught.
//!
//! # The `verified_bots` file
//!
//! ```json
//! {"bots": [
//!   {"name": "Googlebot", "tokens": ["Googlebot"], "prefixes": "googlebot.json"},
//!   {"name": "bingbot", "tokens": ["bingbot"],
//!    "prefixes": {"prefixes": [{"ipv4Prefix": "192.0.2.0/24"}, {"ipv6Prefix": "2001:db8::/32"}]}}
//! ]}
//! ```
//!
//! - `name`: letters, digits, `.`, `_`, `-` (it is a metric label and the
//!   value of `$edgeguard_verified_bot`); unique.
//! - `tokens`: what the bot's User-Agent contains, matched as a
//!   **case-sensitive substring**, as Google and Bing document their
//!   crawlers (`Googlebot`, `bingbot`; `googlebot` is not Google's). At
//!   least 3 bytes each, so that no token matches every User-Agent.
//! - `prefixes`: the bot's address ranges in the format Google and Bing
//!   publish (`{"creationTime": ..., "prefixes": [{"ipv4Prefix": ...},
//!   {"ipv6Prefix": ...}]}`, other keys ignored), inline, or the path of
//!   such a file (relative to the bots file), or just the list. At least
//!   one prefix.
//!
//! Anything else is refused, naming the file and the field
//! (`bots.json: bots[1].prefixes: googlebot.json: prefixes[3].ipv4Prefix: ...`).
//! `scripts/update-verified-bots` fetches the published lists.
//!
//! # The rule
//!
//! The first bot (in file order) one of whose tokens the User-Agent holds
//! is the one it claims. A claim from one of that bot's prefixes is
//! [`Verdict::Verified`]; from anywhere else it is [`Verdict::Fake`]. A
//! request claiming no bot gets no verdict, whatever its address: a
//! browser on a crawler's network is scored like any browser.

#![forbid(unsafe_code)]

mod prefixes;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use memchr::memmem;
use serde_json::Value;

use crate::net::Cidr;
pub use prefixes::{PrefixSet, PrefixSetBuilder};

/// The longest bot name.
pub const MAX_NAME: usize = 64;
/// The shortest User-Agent token.
pub const MIN_TOKEN: usize = 3;

/// One bot.
#[derive(Debug)]
struct Bot {
    name: String,
    tokens: Vec<Vec<u8>>,
    finders: Vec<memmem::Finder<'static>>,
    prefixes: PrefixSet,
}

/// A loaded `verified_bots` file. Immutable; shared by every policy of a
/// configuration.
#[derive(Debug)]
pub struct VerifiedBots {
    path: PathBuf,
    bots: Vec<Bot>,
}

impl PartialEq for VerifiedBots {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
            && self.bots.len() == other.bots.len()
            && self
                .bots
                .iter()
                .zip(&other.bots)
                .all(|(a, b)| a.name == b.name && a.tokens == b.tokens && a.prefixes == b.prefixes)
    }
}

/// What a request's User-Agent and address say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It claims bot `i` and comes from one of its prefixes.
    Verified(usize),
    /// It claims bot `i` from an address outside its prefixes (or no
    /// address at all).
    Fake(usize),
}

impl Verdict {
    /// The bot claimed.
    pub fn bot(self) -> usize {
        match self {
            Verdict::Verified(i) | Verdict::Fake(i) => i,
        }
    }
}

/// Why a bots file was refused: names the file and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotsError(pub String);

impl std::fmt::Display for BotsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BotsError {}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    serde_json::from_slice(&text).map_err(|e| format!("not JSON: {e}"))
}

/// Adds the entries of a published prefix list (`{"prefixes": [...]}` or
/// the bare list) to `b`; an error is `(field, message)`.
fn add_prefixes(v: &Value, b: &mut PrefixSetBuilder) -> Result<usize, (String, String)> {
    let (list, at) = match v {
        Value::Object(m) => match m.get("prefixes") {
            Some(Value::Array(a)) => (a, "prefixes"),
            Some(other) => {
                return Err((
                    "prefixes".into(),
                    format!("must be an array, got {}", kind(other)),
                ))
            }
            None => return Err((String::new(), "no \"prefixes\" array".into())),
        },
        Value::Array(a) => (a, ""),
        other => {
            return Err((
                String::new(),
                format!("must be an object with \"prefixes\", got {}", kind(other)),
            ))
        }
    };
    for (i, entry) in list.iter().enumerate() {
        let field = format!("{at}[{i}]");
        let obj = entry.as_object().ok_or_else(|| {
            (
                field.clone(),
                format!("must be an object, got {}", kind(entry)),
            )
        })?;
        let (key, text, v6) = match (obj.get("ipv4Prefix"), obj.get("ipv6Prefix")) {
            (Some(p), None) => ("ipv4Prefix", p, false),
            (None, Some(p)) => ("ipv6Prefix", p, true),
            (Some(_), Some(_)) => return Err((field, "has both ipv4Prefix and ipv6Prefix".into())),
            (None, None) => return Err((field, "has neither ipv4Prefix nor ipv6Prefix".into())),
        };
        let field = format!("{field}.{key}");
        let text = text.as_str().ok_or_else(|| {
            (
                field.clone(),
                format!("must be a string, got {}", kind(text)),
            )
        })?;
        let cidr = Cidr::parse(text).map_err(|m| (field.clone(), m))?;
        let (addr, bits) = cidr.parts();
        if addr.is_ipv6() != v6 {
            let want = if v6 { "an IPv6" } else { "an IPv4" };
            return Err((field, format!("'{text}' is not {want} prefix")));
        }
        b.add(addr, bits);
    }
    Ok(list.len())
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (_, true) => a.to_owned(),
        (true, false) => b.to_owned(),
        (false, false) if b.starts_with('[') => format!("{a}{b}"),
        _ => format!("{a}.{b}"),
    }
}

/// The bots file being read: its name in errors, and the directory its
/// prefix files are relative to.
struct File<'a> {
    name: String,
    base: &'a Path,
}

impl File<'_> {
    fn err(&self, field: &str, m: &str) -> BotsError {
        BotsError(format!("{}: {field}: {m}", self.name))
    }

    /// The bot at `at` (`bots[i]`), checked against the `earlier` ones.
    fn bot(&self, at: &str, bot: &Value, earlier: &[Bot]) -> Result<Bot, BotsError> {
        let obj = bot
            .as_object()
            .ok_or_else(|| self.err(at, &format!("must be an object, got {}", kind(bot))))?;
        if let Some(k) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "name" | "tokens" | "prefixes"))
        {
            return Err(self.err(
                &join(at, k),
                "unknown field (a bot has name, tokens, prefixes)",
            ));
        }
        let name = self.name_of(at, obj.get("name"), earlier)?;
        let tokens = self.tokens(at, obj.get("tokens"))?;
        let prefixes = self.prefixes(&join(at, "prefixes"), obj.get("prefixes"))?;
        let finders = tokens
            .iter()
            .map(|t| memmem::Finder::new(t).into_owned())
            .collect();
        Ok(Bot {
            name,
            tokens,
            finders,
            prefixes,
        })
    }

    /// A bot's name: letters, digits, `.`, `_`, `-`; none listed twice.
    fn name_of(&self, at: &str, v: Option<&Value>, earlier: &[Bot]) -> Result<String, BotsError> {
        let field = join(at, "name");
        let name = match v {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(self.err(&field, &format!("must be a string, got {}", kind(other))))
            }
            None => return Err(self.err(&field, "missing")),
        };
        if name.is_empty()
            || name.len() > MAX_NAME
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(self.err(
                &field,
                &format!("'{name}' must be 1 to {MAX_NAME} letters, digits, '.', '_' or '-'"),
            ));
        }
        if earlier.iter().any(|b| b.name == name) {
            return Err(self.err(&field, &format!("'{name}' is listed twice")));
        }
        Ok(name)
    }

    /// A bot's User-Agent tokens: at least one, each at least
    /// [`MIN_TOKEN`] bytes.
    fn tokens(&self, at: &str, v: Option<&Value>) -> Result<Vec<Vec<u8>>, BotsError> {
        let field = join(at, "tokens");
        let tokens = match v {
            Some(Value::Array(a)) if !a.is_empty() => a,
            Some(Value::Array(_)) => return Err(self.err(&field, "lists no token")),
            Some(other) => {
                return Err(self.err(
                    &field,
                    &format!("must be an array of strings, got {}", kind(other)),
                ))
            }
            None => return Err(self.err(&field, "missing")),
        };
        let mut toks = Vec::with_capacity(tokens.len());
        for (j, t) in tokens.iter().enumerate() {
            let f = join(&field, &format!("[{j}]"));
            let t = t
                .as_str()
                .ok_or_else(|| self.err(&f, &format!("must be a string, got {}", kind(t))))?;
            if t.len() < MIN_TOKEN {
                return Err(self.err(&f, &format!("'{t}' is shorter than {MIN_TOKEN} bytes")));
            }
            toks.push(t.as_bytes().to_vec());
        }
        Ok(toks)
    }

    /// A bot's prefixes (`pf` names the field): a file of them, a
    /// published list or an array; at least one.
    fn prefixes(&self, pf: &str, v: Option<&Value>) -> Result<PrefixSet, BotsError> {
        let mut b = PrefixSetBuilder::default();
        let n = match v {
            Some(Value::String(rel)) if !rel.is_empty() => {
                let p = self.base.join(rel);
                let shown = p.display().to_string();
                let v = read_json(&p).map_err(|m| self.err(pf, &format!("{shown}: {m}")))?;
                add_prefixes(&v, &mut b).map_err(|(f, m)| {
                    let inner = if f.is_empty() { m } else { format!("{f}: {m}") };
                    self.err(pf, &format!("{shown}: {inner}"))
                })?
            }
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                add_prefixes(v, &mut b).map_err(|(f, m)| self.err(&join(pf, &f), &m))?
            }
            Some(other) => {
                return Err(self.err(
                    pf,
                    &format!(
                        "must be a path, a published prefix list or an array of prefixes, got {}",
                        kind(other)
                    ),
                ))
            }
            None => return Err(self.err(pf, "missing")),
        };
        if n == 0 {
            return Err(self.err(pf, "lists no prefix: every claim would be a fake"));
        }
        Ok(b.build())
    }
}

impl VerifiedBots {
    /// Reads the bots file at `path` (and the prefix files it names).
    pub fn load(path: &Path) -> Result<VerifiedBots, BotsError> {
        let name = path.display().to_string();
        let top = read_json(path).map_err(|m| BotsError(format!("{name}: {m}")))?;
        Self::from_value(path, &top)
    }

    fn from_value(path: &Path, top: &Value) -> Result<VerifiedBots, BotsError> {
        let f = File {
            name: path.display().to_string(),
            base: path.parent().unwrap_or(Path::new("")),
        };
        let list = match top.get("bots") {
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(f.err("bots", &format!("must be an array, got {}", kind(other))))
            }
            None => {
                return Err(BotsError(format!(
                    "{}: not an object with a \"bots\" array",
                    f.name
                )))
            }
        };
        if list.is_empty() {
            return Err(f.err("bots", "lists no bot"));
        }
        let mut bots: Vec<Bot> = Vec::with_capacity(list.len());
        for (i, bot) in list.iter().enumerate() {
            let bot = f.bot(&format!("bots[{i}]"), bot, &bots)?;
            bots.push(bot);
        }
        Ok(VerifiedBots {
            path: path.to_owned(),
            bots,
        })
    }

    /// Where the bots came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many bots are listed.
    pub fn len(&self) -> usize {
        self.bots.len()
    }

    /// Never true: a file without a bot is refused.
    pub fn is_empty(&self) -> bool {
        self.bots.is_empty()
    }

    /// The name of bot `i`.
    pub fn name(&self, i: usize) -> Option<&str> {
        self.bots.get(i).map(|b| b.name.as_str())
    }

    /// The merged prefix ranges of bot `i` (IPv4, IPv6).
    pub fn ranges(&self, i: usize) -> Option<(usize, usize)> {
        self.bots.get(i).map(|b| b.prefixes.ranges())
    }

    /// The verdict on a request sending `user_agent` from `addr` (none: a
    /// unix socket, which no bot crawls from). Allocates nothing.
    pub fn judge(&self, user_agent: &[u8], addr: Option<IpAddr>) -> Option<Verdict> {
        let i = self
            .bots
            .iter()
            .position(|b| b.finders.iter().any(|f| f.find(user_agent).is_some()))?;
        Some(match addr {
            Some(a) if self.bots[i].prefixes.contains(a) => Verdict::Verified(i),
            _ => Verdict::Fake(i),
        })
    }
}

#[cfg(test)]
mod tests;
