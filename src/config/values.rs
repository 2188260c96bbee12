//! The parsers of option values: JSON in, a typed value or an error naming
//! the option out. Pure: nothing here reads a file (paths are only
//! resolved against a base directory; `files.rs` reads them).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::{ConfigError, ErrorOrigin};
use super::kinds::{Ambiguous, Behaviour, Engine, Mode, VarSet};
use crate::challenge;
use crate::headers::HeaderSet;
use crate::hop::Profile;
use crate::net::Cidr;
use crate::rules::{self, Part};

/// What the errors of one parse need: the source's name, the origin, and
/// the directory relative paths are resolved against.
pub(super) struct Ctx<'a> {
    pub(super) source: &'a str,
    pub(super) origin: ErrorOrigin,
    pub(super) base: Option<&'a Path>,
}

/// What `rules` takes, in errors.
const RULES_WANT: &str = "false, a rules file, \"preset:NAME\", or a list of them and rules";

/// How `mode`'s values are listed in errors.
const MODES: &str = "\"block\", \"log\", \"off\" or \"challenge\"";

impl Ctx<'_> {
    pub(super) fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::new(self.source, Some(key), message, self.origin)
    }

    fn type_err(&self, key: &str, want: &str, got: &Value) -> ConfigError {
        self.err(key, format!("must be {want}, got {}", json_type(got)))
    }

    /// A non-empty path, resolved against the base directory.
    pub(super) fn path(&self, key: &str, v: &Value) -> Result<PathBuf, ConfigError> {
        match v.as_str() {
            Some(s) if !s.is_empty() => Ok(match self.base {
                Some(base) => base.join(s),
                None => PathBuf::from(s),
            }),
            Some(_) => Err(self.err(key, "must be a non-empty path string")),
            None => Err(self.type_err(key, "a non-empty path string", v)),
        }
    }

    /// A file the option names could not be used: a file error (`nil,
    /// err` from `configure{}`), whoever named it.
    pub(super) fn file_err(&self, key: &str, e: impl std::fmt::Display) -> ConfigError {
        ConfigError::new(self.source, Some(key), e.to_string(), ErrorOrigin::File)
    }

    /// An integer in `lo..=hi`.
    fn int(&self, key: &str, v: &Value, lo: u64, hi: u64) -> Result<u64, ConfigError> {
        match v.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(n),
            _ if !v.is_number() => Err(self.type_err(key, "an integer", v)),
            _ => Err(self.err(key, format!("must be an integer from {lo} to {hi}"))),
        }
    }

    pub(super) fn string(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.type_err(key, "a string", v))
    }

    pub(super) fn boolean(&self, key: &str, v: &Value) -> Result<bool, ConfigError> {
        v.as_bool()
            .ok_or_else(|| self.type_err(key, "a boolean", v))
    }

    /// `vars`: a boolean, or a list of the variable groups to set besides
    /// the others (`["reasons"]`).
    pub(super) fn vars(&self, key: &str, v: &Value) -> Result<VarSet, ConfigError> {
        const WANT: &str = "a boolean or a list of variable groups (\"reasons\")";
        if let Some(on) = v.as_bool() {
            return Ok(VarSet { on, reasons: false });
        }
        let Some(list) = v.as_array() else {
            return Err(self.type_err(key, WANT, v));
        };
        let mut set = VarSet {
            on: true,
            reasons: false,
        };
        for (i, g) in list.iter().enumerate() {
            match g.as_str() {
                Some("reasons") => set.reasons = true,
                _ => return Err(self.err(&format!("{key}[{}]", i + 1), format!("must be {WANT}"))),
            }
        }
        Ok(set)
    }

    /// An object, or the empty array lua-cjson may encode an empty table as.
    fn object<'v>(
        &self,
        key: &str,
        v: &'v Value,
        want: &str,
    ) -> Result<Option<&'v Map<String, Value>>, ConfigError> {
        match v {
            Value::Object(m) => Ok(Some(m)),
            Value::Array(a) if a.is_empty() => Ok(None),
            _ => Err(self.type_err(key, want, v)),
        }
    }

    /// An array, or the empty object an empty Lua table may arrive as.
    fn array<'v>(&self, key: &str, v: &'v Value, want: &str) -> Result<&'v [Value], ConfigError> {
        match v {
            Value::Array(a) => Ok(a),
            Value::Object(m) if m.is_empty() => Ok(&[]),
            _ => Err(self.type_err(key, want, v)),
        }
    }

    /// `models`, `lua_models`: name -> path, sorted by name (the scoring
    /// order).
    pub(super) fn models(
        &self,
        key: &str,
        v: &Value,
    ) -> Result<Vec<(String, PathBuf)>, ConfigError> {
        let map = self.object(key, v, "an object of model name to file path")?;
        let mut models = Vec::new();
        for (name, path) in map.into_iter().flatten() {
            let at = format!("{key}.{name}");
            if name.is_empty() {
                return Err(self.err(&at, "a model name must not be empty"));
            }
            models.push((name.clone(), self.path(&at, path)?));
        }
        if models.is_empty() {
            return Err(self.err(key, "must name at least one model"));
        }
        models.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(models)
    }

    /// `thresholds`: model name -> number, sorted by name.
    pub(super) fn thresholds(
        &self,
        key: &str,
        v: &Value,
    ) -> Result<Vec<(String, f64)>, ConfigError> {
        let map = self.object(key, v, "an object of model name to number")?;
        let mut thresholds = Vec::new();
        for (name, t) in map.into_iter().flatten() {
            let at = format!("{key}.{name}");
            let t = t
                .as_f64()
                .ok_or_else(|| self.type_err(&at, "a number", t))?;
            thresholds.push((name.clone(), t));
        }
        thresholds.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(thresholds)
    }

    pub(super) fn mode(&self, key: &str, v: &Value) -> Result<Mode, ConfigError> {
        match v.as_str() {
            Some("block") => Ok(Mode::Block),
            Some("log") => Ok(Mode::Log),
            Some("off") => Ok(Mode::Off),
            Some("challenge") => Ok(Mode::Challenge),
            Some(other) => Err(self.err(key, format!("must be {MODES}, got \"{other}\""))),
            None => Err(self.type_err(key, MODES, v)),
        }
    }

    /// `ambiguous`: what mode `block` does with an ambiguous verdict.
    pub(super) fn ambiguous(&self, key: &str, v: &Value) -> Result<Ambiguous, ConfigError> {
        const KINDS: &str = "\"challenge\", \"block\" or \"log\"";
        match v.as_str() {
            Some("challenge") => Ok(Ambiguous::Challenge),
            Some("block") => Ok(Ambiguous::Block),
            Some("log") => Ok(Ambiguous::Log),
            Some(other) => Err(self.err(key, format!("must be {KINDS}, got \"{other}\""))),
            None => Err(self.type_err(key, KINDS, v)),
        }
    }

    /// `client_memory`: bytes, as an integer or a string with a `k`, `m`
    /// or `g` suffix (powers of 1024: `"64m"`); 0 or `"0"`: off.
    pub(super) fn memory_size(&self, key: &str, v: &Value) -> Result<u64, ConfigError> {
        const WANT: &str = "a size in bytes (an integer, or a string such as \"64m\")";
        let max = crate::clients::table::MAX_BYTES as u64;
        let min = crate::clients::table::MIN_BYTES as u64;
        let n = match v {
            Value::Number(_) => self.int(key, v, 0, max)?,
            Value::String(s) => {
                let s = s.trim();
                let (digits, shift) = match s.as_bytes().last().map(u8::to_ascii_lowercase) {
                    Some(b'k') => (&s[..s.len() - 1], 10),
                    Some(b'm') => (&s[..s.len() - 1], 20),
                    Some(b'g') => (&s[..s.len() - 1], 30),
                    _ => (s, 0),
                };
                let n: u64 = digits
                    .parse()
                    .map_err(|_| self.err(key, format!("\"{s}\" is not {WANT}")))?;
                n.checked_shl(shift)
                    .filter(|b| *b >> shift == n && *b <= max)
                    .ok_or_else(|| self.err(key, format!("\"{s}\" is more than {max} bytes")))?
            }
            _ => return Err(self.type_err(key, WANT, v)),
        };
        if n != 0 && n < min {
            return Err(self.err(key, format!("{n} bytes is less than {min} (0: off)")));
        }
        Ok(n)
    }

    /// `client_memory_epoch`: seconds, 1 to a day.
    pub(super) fn epoch(&self, key: &str, v: &Value) -> Result<u32, ConfigError> {
        Ok(self.int(key, v, 1, 86_400)? as u32)
    }

    /// `behaviour`: what a crawl's behaviour leads to.
    pub(super) fn behaviour(&self, key: &str, v: &Value) -> Result<Behaviour, ConfigError> {
        const KINDS: &str = "\"challenge\", \"log\" or \"off\"";
        match v.as_str() {
            Some("challenge") => Ok(Behaviour::Challenge),
            Some("log") => Ok(Behaviour::Log),
            Some("off") => Ok(Behaviour::Off),
            Some(other) => Err(self.err(key, format!("must be {KINDS}, got \"{other}\""))),
            None => Err(self.type_err(key, KINDS, v)),
        }
    }

    /// `behaviour_navigations`: navigations in the window before a crawl
    /// is judged, 2 to 65 535 (a record's counter).
    pub(super) fn navigations(&self, key: &str, v: &Value) -> Result<u32, ConfigError> {
        Ok(self.int(key, v, 2, 65_535)? as u32)
    }

    /// `status`: an HTTP error status.
    pub(super) fn status(&self, key: &str, v: &Value) -> Result<u16, ConfigError> {
        match v.as_u64() {
            Some(s @ 400..=599) => Ok(s as u16),
            _ => Err(self.err(key, "must be an HTTP error status (400-599)")),
        }
    }

    /// `allow`: CIDR blocks, in the order given.
    /// `rules`: `false` (none), a rules file or `"preset:NAME"`, or a list
    /// of them and rules written in place, in the order they run (an empty
    /// list is refused: `false` says none).
    pub(super) fn rules(&self, key: &str, v: &Value) -> Result<Vec<Part>, ConfigError> {
        match v {
            Value::Bool(false) => Ok(Vec::new()),
            Value::String(_) => Ok(vec![self.rule_part(key, v)?]),
            Value::Array(a) if a.is_empty() => {
                Err(self.err(key, "lists nothing (rules = false says no rules)"))
            }
            Value::Array(a) if a.len() > rules::limits::MAX_RULES => Err(self.err(
                key,
                format!("more than {} entries", rules::limits::MAX_RULES),
            )),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, e)| self.rule_part(&format!("{key}[{i}]"), e))
                .collect(),
            _ => Err(self.type_err(key, RULES_WANT, v)),
        }
    }

    fn rule_part(&self, key: &str, v: &Value) -> Result<Part, ConfigError> {
        match v {
            Value::String(s) => match s.strip_prefix("preset:") {
                Some(name) if rules::presets::preset(name).is_some() => {
                    Ok(Part::Preset(name.to_owned()))
                }
                Some(name) => Err(self.err(
                    key,
                    format!(
                        "no preset '{name}' (presets: {})",
                        rules::presets::PRESETS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
                None => Ok(Part::File(self.path(key, v)?)),
            },
            Value::Object(_) => Ok(Part::Rule(v.clone())),
            _ => Err(self.type_err(key, RULES_WANT, v)),
        }
    }

    /// `signals`: a signals snapshot file, or `false` (no lookups).
    pub(super) fn signals(&self, key: &str, v: &Value) -> Result<Option<PathBuf>, ConfigError> {
        match v {
            Value::Bool(false) => Ok(None),
            Value::String(_) => self.path(key, v).map(Some),
            _ => Err(self.type_err(key, "a snapshot file's path or false", v)),
        }
    }

    /// `redact`: header names (RFC 9110 tokens, at most 64), or `false`.
    pub(super) fn redact(&self, key: &str, v: &Value) -> Result<Option<Vec<String>>, ConfigError> {
        if v == &Value::Bool(false) {
            return Ok(None);
        }
        let want = "a list of header names, or false";
        let list = self.array(key, v, want)?;
        if list.len() > 64 {
            return Err(self.err(key, format!("at most 64 names, got {}", list.len())));
        }
        let mut names = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let at = format!("{key}[{i}]");
            let name = entry
                .as_str()
                .ok_or_else(|| self.type_err(&at, "a header name string", entry))?;
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if name.is_empty() || name.len() > 256 || !name.bytes().all(token) {
                return Err(self.err(&at, format!("{name:?} is not a header name")));
            }
            names.push(name.to_ascii_lowercase());
        }
        Ok(Some(names))
    }

    /// `signals_refresh`: seconds, 0 (only at reload) to a day.
    pub(super) fn refresh(&self, key: &str, v: &Value) -> Result<u64, ConfigError> {
        self.int(key, v, 0, 86_400)
    }

    /// `signals_max_age`: seconds, 1 to 30 days.
    pub(super) fn max_age(&self, key: &str, v: &Value) -> Result<u64, ConfigError> {
        self.int(key, v, 1, 30 * 86_400)
    }

    pub(super) fn allow(&self, key: &str, v: &Value) -> Result<Vec<Cidr>, ConfigError> {
        let list = self.array(key, v, "a list of CIDR blocks")?;
        let mut allow = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let at = format!("{key}[{i}]");
            let text = entry
                .as_str()
                .ok_or_else(|| self.type_err(&at, "a CIDR block string", entry))?;
            allow.push(Cidr::parse(text).map_err(|m| self.err(&at, m))?);
        }
        Ok(allow)
    }

    /// `proxy_profile`: a profile's name (`crate::hop::PROFILES`).
    pub(super) fn proxy_profile(&self, key: &str, v: &Value) -> Result<Profile, ConfigError> {
        let names = || {
            Profile::names()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match v.as_str() {
            Some(name) => Profile::from_name(name).ok_or_else(|| {
                self.err(key, format!("must be one of {}, got \"{name}\"", names()))
            }),
            None => Err(self.type_err(key, "a profile name", v)),
        }
    }

    /// `tls_fingerprint_header`: one header name (an RFC 9110 token).
    pub(super) fn header_name(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        let name = self.string(key, v)?;
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token) || name.contains('*') {
            return Err(self.err(key, format!("\"{name}\" is not a header name")));
        }
        Ok(name)
    }

    /// `log_level`: an nginx level, 0 (`ngx.STDERR`) to 8 (`ngx.DEBUG`).
    pub(super) fn log_level(&self, key: &str, v: &Value) -> Result<u8, ConfigError> {
        match v.as_u64() {
            Some(n @ 0..=8) => Ok(n as u8),
            _ if !v.is_number() => Err(self.type_err(key, "a number", v)),
            _ => Err(self.err(
                key,
                "must be an nginx log level, 0 (ngx.STDERR) to 8 (ngx.DEBUG)",
            )),
        }
    }

    /// `engine`: "rust", "lua" or "shadow".
    pub(super) fn engine(&self, key: &str, v: &Value) -> Result<Engine, ConfigError> {
        self.engine_of(key, v, true)
    }

    /// `shadow_primary`: "rust" or "lua".
    pub(super) fn primary(&self, key: &str, v: &Value) -> Result<Engine, ConfigError> {
        self.engine_of(key, v, false)
    }

    fn engine_of(&self, key: &str, v: &Value, shadow: bool) -> Result<Engine, ConfigError> {
        let want = if shadow {
            "\"rust\", \"lua\" or \"shadow\""
        } else {
            "\"rust\" or \"lua\""
        };
        match v.as_str() {
            Some("rust") => Ok(Engine::Rust),
            Some("lua") => Ok(Engine::Lua),
            Some("shadow") if shadow => Ok(Engine::Shadow),
            Some(other) => Err(self.err(key, format!("must be {want}, got \"{other}\""))),
            None => Err(self.type_err(key, want, v)),
        }
    }

    /// A score header name: one exact list entry, so that the strip set
    /// finds its spellings. An RFC 9110 token (the list parser checks
    /// that); `*` (a prefix rule), `#` (a comment) and whitespace (a second
    /// entry) are refused first, with their own message. Empty: no header.
    pub(super) fn score_header(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        let name = self.string(key, v)?;
        let refuse = |message: String| ConfigError::new(self.source, None, message, self.origin);
        if name
            .bytes()
            .any(|b| b == b'*' || b == b'#' || b.is_ascii_whitespace() || b == 0x0b)
        {
            return Err(refuse(format!(
                "score_header \"{name}\" is not a header name: `*`, `#` and whitespace are not allowed"
            )));
        }
        if !name.is_empty() {
            HeaderSet::parse("score_header", name.as_bytes())
                .map_err(|e| refuse(format!("score_header is not a header name: {e}")))?;
        }
        Ok(name)
    }

    /// `challenge_difficulty`: leading zero bits.
    pub(super) fn difficulty(&self, key: &str, v: &Value) -> Result<u8, ConfigError> {
        Ok(self.int(key, v, 0, challenge::MAX_DIFFICULTY.into())? as u8)
    }

    /// `challenge_status`: 200 or an HTTP error status.
    pub(super) fn page_status(&self, key: &str, v: &Value) -> Result<u16, ConfigError> {
        match self.int(key, v, 200, 599)? {
            s @ (200 | 400..=599) => Ok(s as u16),
            _ => Err(self.err(key, "must be 200 or an HTTP error status (400-599)")),
        }
    }

    /// `challenge_ttl`: seconds, a minute to a year.
    pub(super) fn ttl(&self, key: &str, v: &Value) -> Result<u32, ConfigError> {
        Ok(self.int(key, v, 60, 31_536_000)? as u32)
    }

    /// `challenge_nojs`: `false` (off), `true` (the default wait and
    /// lifetime) or `{"wait": seconds, "ttl": seconds}` (either may be
    /// left out): the wait, `None` when off, and the lifetime if given.
    pub(super) fn nojs(
        &self,
        key: &str,
        v: &Value,
    ) -> Result<(Option<u8>, Option<u32>), ConfigError> {
        match v {
            Value::Bool(false) => Ok((None, None)),
            Value::Bool(true) => Ok((Some(challenge::defaults::NOJS_WAIT), None)),
            Value::Object(m) => {
                let mut out = (Some(challenge::defaults::NOJS_WAIT), None);
                for (k, v) in m {
                    let at = format!("{key}.{k}");
                    match k.as_str() {
                        "wait" => {
                            out.0 =
                                Some(self.int(&at, v, 1, challenge::MAX_NOJS_WAIT.into())? as u8)
                        }
                        "ttl" => out.1 = Some(self.ttl(&at, v)?),
                        _ => return Err(self.err(&at, "unknown key (\"wait\" and \"ttl\" are)")),
                    }
                }
                Ok(out)
            }
            _ => Err(self.type_err(key, "a boolean or an object {\"wait\", \"ttl\"}", v)),
        }
    }

    /// `challenge_response`: `"auto"`, `"page"` or `"problem"`.
    pub(super) fn response(
        &self,
        key: &str,
        v: &Value,
    ) -> Result<challenge::Response, ConfigError> {
        const WANT: &str = "\"auto\", \"page\" or \"problem\"";
        let s = v.as_str().ok_or_else(|| self.type_err(key, WANT, v))?;
        challenge::Response::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| self.err(key, format!("must be {WANT}, got \"{s}\"")))
    }

    /// `challenge_site`: the site's name on the page, 1 to
    /// [`challenge::MAX_SITE`] bytes without control characters.
    pub(super) fn site(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        let s = self.string(key, v)?;
        if s.is_empty() || s.len() > challenge::MAX_SITE || s.chars().any(char::is_control) {
            return Err(self.err(
                key,
                format!(
                    "must be 1 to {} bytes without control characters",
                    challenge::MAX_SITE
                ),
            ));
        }
        Ok(s)
    }

    /// `challenge_default_locale`: a language tag (letters, digits, `-`).
    pub(super) fn locale_tag(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        let s = self.string(key, v)?;
        let ok = !s.is_empty() && s.len() <= 35;
        if !ok || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(self.err(
                key,
                format!("must be a language tag such as \"en\", got \"{s}\""),
            ));
        }
        Ok(s)
    }

    /// `challenge_problem_base`: an absolute `http(s)` URI.
    pub(super) fn problem_base(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        let s = self.string(key, v)?;
        if !challenge::is_problem_base(&s) {
            return Err(self.err(
                key,
                format!(
                    "must be an absolute http or https URI of at most {} visible ASCII characters without quotes, backslashes or angle brackets",
                    challenge::MAX_BASE
                ),
            ));
        }
        Ok(s)
    }

    /// `challenge_prefix_v4`.
    pub(super) fn prefix_v4(&self, key: &str, v: &Value) -> Result<u8, ConfigError> {
        Ok(self.int(key, v, 0, 32)? as u8)
    }

    /// `challenge_prefix_v6`.
    pub(super) fn prefix_v6(&self, key: &str, v: &Value) -> Result<u8, ConfigError> {
        Ok(self.int(key, v, 0, 128)? as u8)
    }

    /// `challenge_cookie`: an RFC 6265 cookie-name, which is an RFC 9110
    /// token.
    pub(super) fn cookie(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        let name = self.string(key, v)?;
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || name.len() > challenge::MAX_COOKIE_NAME || !name.bytes().all(token) {
            return Err(self.err(
                key,
                format!(
                    "must be a cookie name: 1 to {} token characters, got \"{name}\"",
                    challenge::MAX_COOKIE_NAME
                ),
            ));
        }
        Ok(name)
    }
}

pub(super) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
