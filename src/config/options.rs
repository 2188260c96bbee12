//! The options of edgeguard, parsed once: the one list of their names, where
//! each may be given, its type and its default.
//!
//! The same JSON shape comes from three places: a configuration file (the
//! one `edgeguard replay --config` reads), the Lua `configure{}` table and
//! a location's `access{}` table (`resty.edgeguard.policy` encodes both as
//! JSON). [`OPTIONS`] says which options each accepts; the README's option
//! table is their one description.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::challenge::{self, Keys};
use crate::headers::HeaderSet;
use crate::verified::VerifiedBots;

use super::error::{ConfigError, ErrorOrigin};
use crate::net::Cidr;

/// Where a set of options comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A configuration file: what replay can act on, plus the nginx options
    /// that make sense beside them.
    File,
    /// `configure{}`: everything.
    Configure,
    /// `access{}`: the per-location overrides.
    Access,
}

/// One option: its name and where it may be given.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// The key, as in `configure{}` and the file.
    pub name: &'static str,
    /// Accepted in a configuration file.
    pub file: bool,
    /// Accepted by `configure{}`.
    pub configure: bool,
    /// Accepted by `access{}`, overriding `configure{}` for one location.
    pub access: bool,
}

impl OptionSpec {
    fn allowed(&self, scope: Scope) -> bool {
        match scope {
            Scope::File => self.file,
            Scope::Configure => self.configure,
            Scope::Access => self.access,
        }
    }
}

const fn spec(name: &'static str, file: bool, configure: bool, access: bool) -> OptionSpec {
    OptionSpec {
        name,
        file,
        configure,
        access,
    }
}

/// Every option edgeguard knows; the README's table documents them.
pub const OPTIONS: [OptionSpec; 24] = [
    spec("internal_headers", true, true, false),
    spec("models", true, true, false),
    spec("mode", true, true, true),
    spec("thresholds", true, true, true),
    spec("status", true, true, true),
    spec("allow", true, true, false),
    spec("fail_closed", true, true, true),
    spec("score_header", true, true, true),
    spec("vars", true, true, true),
    spec("log_level", true, true, true),
    // Lua-side: the shim needs the library before it can hand it anything.
    spec("lib_path", false, true, false),
    spec("engine", false, true, true),
    spec("shadow_primary", false, true, false),
    spec("lua_models", false, true, false),
    spec("metrics_dict", false, true, false),
    spec("config", false, true, false),
    // The challenge (src/challenge/) and verified bots (src/verified/):
    // files and settings of the whole configuration, like `allow`.
    spec("challenge_secret", true, true, false),
    spec("challenge_difficulty", true, true, false),
    spec("challenge_status", true, true, false),
    spec("challenge_ttl", true, true, false),
    spec("challenge_cookie", true, true, false),
    spec("challenge_prefix_v4", true, true, false),
    spec("challenge_prefix_v6", true, true, false),
    spec("verified_bots", true, true, false),
];

/// What a flagged request gets, by configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Answer with the configured status.
    Block,
    /// Let it through, logging the decision.
    Log,
    /// Score only.
    Off,
    /// Serve flagged navigations the challenge page, answer other flagged
    /// requests with the status; a valid clearance cookie passes
    /// (`src/challenge/`).
    Challenge,
}

impl Mode {
    /// The name in the options.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Block => "block",
            Mode::Log => "log",
            Mode::Off => "off",
            Mode::Challenge => "challenge",
        }
    }
}

/// The engine that strips and scores (`engine`, `shadow_primary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// This library, one FFI call per job.
    Rust,
    /// The pure-Lua engine, the "before" of a migration.
    Lua,
    /// Both on every request, acting on the primary's result.
    Shadow,
}

impl Engine {
    /// The name in the options.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Rust => "rust",
            Engine::Lua => "lua",
            Engine::Shadow => "shadow",
        }
    }
}

/// How `mode`'s values are listed in errors.
const MODES: &str = "\"block\", \"log\", \"off\" or \"challenge\"";

/// The default of `score_header`.
pub const DEFAULT_SCORE_HEADER: &str = "X-Bot-Score";
/// The default of `status`.
pub const DEFAULT_STATUS: u16 = 403;

/// Parsed options, each `None` when not given. Paths are resolved against
/// the directory of the file that named them (or the caller's base).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `internal_headers`.
    pub internal_headers: Option<PathBuf>,
    /// `models`, sorted by name (byte order): the scoring order.
    pub models: Option<Vec<(String, PathBuf)>>,
    /// `lua_models`, sorted by name.
    pub lua_models: Option<Vec<(String, PathBuf)>>,
    /// `mode`.
    pub mode: Option<Mode>,
    /// `thresholds`, by model name, sorted by name.
    pub thresholds: Option<Vec<(String, f64)>>,
    /// `status`.
    pub status: Option<u16>,
    /// `allow`, in the order given.
    pub allow: Option<Vec<Cidr>>,
    /// `fail_closed`.
    pub fail_closed: Option<bool>,
    /// `score_header`.
    pub score_header: Option<String>,
    /// `vars`.
    pub vars: Option<bool>,
    /// `log_level`: an nginx level, 0 (`ngx.STDERR`) to 8 (`ngx.DEBUG`).
    pub log_level: Option<u8>,
    /// `lib_path`.
    pub lib_path: Option<PathBuf>,
    /// `engine`.
    pub engine: Option<Engine>,
    /// `shadow_primary`.
    pub shadow_primary: Option<Engine>,
    /// `metrics_dict`.
    pub metrics_dict: Option<String>,
    /// `challenge_secret`, loaded when parsed (a bad file is refused there).
    pub challenge_secret: Option<Arc<Keys>>,
    /// `challenge_difficulty`: leading zero bits, 0 to 24.
    pub challenge_difficulty: Option<u8>,
    /// `challenge_status`: the page's status.
    pub challenge_status: Option<u16>,
    /// `challenge_ttl`: the cookie's lifetime, seconds.
    pub challenge_ttl: Option<u32>,
    /// `challenge_cookie`: the cookie's name.
    pub challenge_cookie: Option<String>,
    /// `challenge_prefix_v4`: IPv4 prefix length a cookie is bound to.
    pub challenge_prefix_v4: Option<u8>,
    /// `challenge_prefix_v6`: IPv6 prefix length a cookie is bound to.
    pub challenge_prefix_v6: Option<u8>,
    /// `verified_bots`, loaded when parsed.
    pub verified_bots: Option<Arc<VerifiedBots>>,
    /// Not an option: for a location's options ([`Options::with_access`]),
    /// the score header of the configuration it was derived from, which the
    /// location strips too ([`Options::score_header_spellings`]).
    pub base_score_header: Option<String>,
}

/// What the errors of one parse need: the source's name and the origin.
struct Ctx<'a> {
    source: &'a str,
    origin: ErrorOrigin,
    base: Option<&'a Path>,
}

impl Ctx<'_> {
    fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::new(self.source, Some(key), message, self.origin)
    }

    fn type_err(&self, key: &str, want: &str, got: &Value) -> ConfigError {
        self.err(key, format!("must be {want}, got {}", json_type(got)))
    }

    fn path(&self, key: &str, v: &Value) -> Result<PathBuf, ConfigError> {
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
    fn file_err(&self, key: &str, e: impl std::fmt::Display) -> ConfigError {
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

    fn string(&self, key: &str, v: &Value) -> Result<String, ConfigError> {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.type_err(key, "a string", v))
    }

    fn boolean(&self, key: &str, v: &Value) -> Result<bool, ConfigError> {
        v.as_bool()
            .ok_or_else(|| self.type_err(key, "a boolean", v))
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

    /// An array, or the empty object lua-cjson encodes an empty table as.
    fn array<'v>(&self, key: &str, v: &'v Value, want: &str) -> Result<&'v [Value], ConfigError> {
        match v {
            Value::Array(a) => Ok(a),
            Value::Object(m) if m.is_empty() => Ok(&[]),
            _ => Err(self.type_err(key, want, v)),
        }
    }

    fn models(&self, key: &str, v: &Value) -> Result<Vec<(String, PathBuf)>, ConfigError> {
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

    fn engine(&self, key: &str, v: &Value, shadow: bool) -> Result<Engine, ConfigError> {
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
    fn score_header(&self, v: &Value) -> Result<String, ConfigError> {
        let name = self.string("score_header", v)?;
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

    /// Parses one option into `o`.
    fn option(&self, o: &mut Options, key: &str, v: &Value) -> Result<(), ConfigError> {
        match key {
            "internal_headers" => o.internal_headers = Some(self.path(key, v)?),
            "models" => o.models = Some(self.models(key, v)?),
            "lua_models" => o.lua_models = Some(self.models(key, v)?),
            "mode" => {
                o.mode = Some(match v.as_str() {
                    Some("block") => Mode::Block,
                    Some("log") => Mode::Log,
                    Some("off") => Mode::Off,
                    Some("challenge") => Mode::Challenge,
                    Some(other) => {
                        return Err(self.err(key, format!("must be {MODES}, got \"{other}\"")))
                    }
                    None => return Err(self.type_err(key, MODES, v)),
                })
            }
            "thresholds" => {
                let map = self.object(key, v, "an object of model name to number")?;
                let mut thresholds = Vec::new();
                for (name, t) in map.into_iter().flatten() {
                    let at = format!("thresholds.{name}");
                    let t = t
                        .as_f64()
                        .ok_or_else(|| self.type_err(&at, "a number", t))?;
                    thresholds.push((name.clone(), t));
                }
                thresholds.sort_by(|a, b| a.0.cmp(&b.0));
                o.thresholds = Some(thresholds);
            }
            "status" => {
                o.status = Some(match v.as_u64() {
                    Some(s @ 400..=599) => s as u16,
                    _ => return Err(self.err(key, "must be an HTTP error status (400-599)")),
                })
            }
            "allow" => {
                let list = self.array(key, v, "a list of CIDR blocks")?;
                let mut allow = Vec::with_capacity(list.len());
                for (i, entry) in list.iter().enumerate() {
                    let at = format!("allow[{i}]");
                    let text = entry
                        .as_str()
                        .ok_or_else(|| self.type_err(&at, "a CIDR block string", entry))?;
                    allow.push(Cidr::parse(text).map_err(|m| self.err(&at, m))?);
                }
                o.allow = Some(allow);
            }
            "fail_closed" => o.fail_closed = Some(self.boolean(key, v)?),
            "vars" => o.vars = Some(self.boolean(key, v)?),
            "score_header" => o.score_header = Some(self.score_header(v)?),
            "metrics_dict" => o.metrics_dict = Some(self.string(key, v)?),
            "log_level" => {
                o.log_level = Some(match v.as_u64() {
                    Some(n @ 0..=8) => n as u8,
                    _ if !v.is_number() => return Err(self.type_err(key, "a number", v)),
                    _ => {
                        return Err(self.err(
                            key,
                            "must be an nginx log level, 0 (ngx.STDERR) to 8 (ngx.DEBUG)",
                        ))
                    }
                })
            }
            "lib_path" => o.lib_path = Some(self.path(key, v)?),
            "engine" => o.engine = Some(self.engine(key, v, true)?),
            "shadow_primary" => o.shadow_primary = Some(self.engine(key, v, false)?),
            "challenge_secret" => {
                let path = self.path(key, v)?;
                let keys = Keys::load(&path).map_err(|e| self.file_err(key, e))?;
                o.challenge_secret = Some(Arc::new(keys));
            }
            "challenge_difficulty" => {
                o.challenge_difficulty =
                    Some(self.int(key, v, 0, challenge::MAX_DIFFICULTY.into())? as u8)
            }
            "challenge_status" => {
                o.challenge_status = Some(match self.int(key, v, 200, 599)? {
                    s @ (200 | 400..=599) => s as u16,
                    _ => return Err(self.err(key, "must be 200 or an HTTP error status (400-599)")),
                })
            }
            "challenge_ttl" => o.challenge_ttl = Some(self.int(key, v, 60, 31_536_000)? as u32),
            "challenge_prefix_v4" => o.challenge_prefix_v4 = Some(self.int(key, v, 0, 32)? as u8),
            "challenge_prefix_v6" => o.challenge_prefix_v6 = Some(self.int(key, v, 0, 128)? as u8),
            "challenge_cookie" => {
                let name = self.string(key, v)?;
                // An RFC 6265 cookie-name is an RFC 9110 token.
                let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
                if name.is_empty()
                    || name.len() > challenge::MAX_COOKIE_NAME
                    || !name.bytes().all(token)
                {
                    return Err(self.err(
                        key,
                        format!(
                            "must be a cookie name: 1 to {} token characters, got \"{name}\"",
                            challenge::MAX_COOKIE_NAME
                        ),
                    ));
                }
                o.challenge_cookie = Some(name);
            }
            "verified_bots" => {
                let path = self.path(key, v)?;
                let bots = VerifiedBots::load(&path).map_err(|e| self.file_err(key, e))?;
                o.verified_bots = Some(Arc::new(bots));
            }
            // `config` is read by Options::configure, before the others.
            "config" => {
                self.path(key, v)?;
            }
            _ => unreachable!("every name in OPTIONS has an arm"),
        }
        Ok(())
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn scope_hint(scope: Scope, spec: Option<&OptionSpec>) -> &'static str {
    match (scope, spec) {
        (_, None) => "",
        (Scope::File, Some(_)) => {
            " in a configuration file (it is an nginx.conf option: give it to configure{})"
        }
        (Scope::Access, Some(_)) => " per location (give it to configure{})",
        (Scope::Configure, Some(_)) => "",
    }
}

/// Parses a JSON object of options, checking each against `scope`.
fn parse_object(
    text: &[u8],
    scope: Scope,
    ctx: &Ctx<'_>,
) -> Result<(Options, Map<String, Value>), ConfigError> {
    let top: Value = serde_json::from_slice(text)
        .map_err(|e| ConfigError::new(ctx.source, None, format!("not JSON: {e}"), ctx.origin))?;
    let Value::Object(top) = top else {
        return Err(ConfigError::new(
            ctx.source,
            None,
            "not a JSON object (it must be a JSON object of options)",
            ctx.origin,
        ));
    };
    let mut o = Options::default();
    for (key, value) in &top {
        let spec = OPTIONS.iter().find(|s| s.name == key);
        match spec {
            Some(s) if s.allowed(scope) => ctx.option(&mut o, key, value)?,
            _ => {
                return Err(ctx.err(
                    key,
                    format!("unknown option '{key}'{}", scope_hint(scope, spec)),
                ))
            }
        }
    }
    Ok((o, top))
}

impl Options {
    /// Parses a configuration file's text; relative paths are resolved
    /// against `base` (the file's directory), `source` names it in errors.
    pub fn parse_file(source: &str, base: &Path, text: &[u8]) -> Result<Options, ConfigError> {
        let ctx = Ctx {
            source,
            origin: ErrorOrigin::File,
            base: Some(base),
        };
        let (o, _) = parse_object(text, Scope::File, &ctx)?;
        o.check_models_named(&ctx)?;
        o.check_challenge(&ctx)?;
        Ok(o)
    }

    /// Reads and parses the configuration file at `path`.
    pub fn load_file(path: &Path) -> Result<Options, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| {
            ConfigError::new(
                &source,
                None,
                format!("cannot read the configuration file: {e}"),
                ErrorOrigin::Io,
            )
        })?;
        Self::parse_file(&source, path.parent().unwrap_or(Path::new("")), &text)
    }

    /// The options of `configure{}` as JSON: when they name a `config`
    /// file, it is read and the options given beside it override its own
    /// (each whole: `thresholds` replaces the file's). Relative paths of the
    /// caller's are resolved against `base` (none: kept as given), a file's
    /// against its directory. `source` names the caller's options in errors.
    pub fn configure(
        source: &str,
        base: Option<&Path>,
        text: &[u8],
    ) -> Result<Options, ConfigError> {
        let ctx = Ctx {
            source,
            origin: ErrorOrigin::Caller,
            base,
        };
        let (given, top) = parse_object(text, Scope::Configure, &ctx)?;
        let mut o = match top.get("config") {
            Some(path) => Self::load_file(&ctx.path("config", path)?)?,
            None => Options::default(),
        };
        o.overlay(given);
        o.check_engines(&ctx)?;
        o.check_models_named(&ctx)?;
        o.check_challenge(&ctx)?;
        Ok(o)
    }

    /// These options with a location's `access{}` options (JSON) over them:
    /// each replaces its own, except `thresholds`, which override model by
    /// model.
    pub fn with_access(&self, source: &str, text: &[u8]) -> Result<Options, ConfigError> {
        let ctx = Ctx {
            source,
            origin: ErrorOrigin::Caller,
            base: None,
        };
        let (given, _) = parse_object(text, Scope::Access, &ctx)?;
        let mut o = self.clone();
        o.base_score_header = Some(self.score_header_name().to_owned());
        let mut thresholds = o.thresholds.take().unwrap_or_default();
        if let Some(more) = &given.thresholds {
            for (name, t) in more {
                match thresholds.iter_mut().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = *t,
                    None => thresholds.push((name.clone(), *t)),
                }
            }
            thresholds.sort_by(|a, b| a.0.cmp(&b.0));
        }
        o.overlay(given);
        o.thresholds = (!thresholds.is_empty()).then_some(thresholds);
        if let Some(engine) = given_engine(&o, self) {
            return Err(ctx.err("engine", engine));
        }
        o.check_models_named(&ctx)?;
        o.check_challenge(&ctx)?;
        Ok(o)
    }

    /// Replaces each option `other` gives.
    fn overlay(&mut self, other: Options) {
        macro_rules! take {
            ($($f:ident),*) => { $(if other.$f.is_some() { self.$f = other.$f; })* };
        }
        take!(
            internal_headers,
            models,
            lua_models,
            mode,
            thresholds,
            status,
            allow,
            fail_closed,
            score_header,
            vars,
            log_level,
            lib_path,
            engine,
            shadow_primary,
            metrics_dict,
            challenge_secret,
            challenge_difficulty,
            challenge_status,
            challenge_ttl,
            challenge_cookie,
            challenge_prefix_v4,
            challenge_prefix_v6,
            verified_bots
        );
    }

    /// `mode = "challenge"` needs the keys that sign its cookies; a
    /// location may ask for it only when `configure{}` loaded them.
    fn check_challenge(&self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        // The legacy Lua engine is frozen: it knows neither.
        if self.engine() != Engine::Rust {
            for (set, key) in [
                (self.challenge_secret.is_some(), "challenge_secret"),
                (self.verified_bots.is_some(), "verified_bots"),
            ] {
                if set {
                    return Err(ctx.err(key, format!("{key} needs engine = \"rust\"")));
                }
            }
        }
        if self.mode() == Mode::Challenge && self.challenge_secret.is_none() {
            return Err(ctx.err(
                "mode",
                "mode \"challenge\" needs challenge_secret (a file of HMAC keys, one hex key a line)",
            ));
        }
        Ok(())
    }

    /// The challenge these options describe, if they name a secret.
    pub fn challenge(&self) -> Option<challenge::Challenge> {
        let keys = self.challenge_secret.clone()?;
        let mut c = challenge::Challenge::new(keys);
        macro_rules! set {
            ($($opt:ident => $field:ident),*) => { $(if let Some(v) = &self.$opt { c.$field = v.clone(); })* };
        }
        set!(challenge_difficulty => difficulty, challenge_status => status, challenge_ttl => ttl,
             challenge_cookie => cookie, challenge_prefix_v4 => prefix_v4, challenge_prefix_v6 => prefix_v6);
        Some(c)
    }

    fn check_engines(&self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let engine = self.engine();
        if self.shadow_primary.is_some() && engine != Engine::Shadow {
            return Err(ctx.err("shadow_primary", "shadow_primary needs engine = \"shadow\""));
        }
        if self.lua_models.is_some() && engine == Engine::Rust {
            return Err(ctx.err(
                "lua_models",
                "lua_models needs engine = \"lua\" or \"shadow\"",
            ));
        }
        Ok(())
    }

    /// A threshold must name a configured model: a misspelt name would
    /// otherwise be ignored without a word.
    fn check_models_named(&self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let Some(thresholds) = &self.thresholds else {
            return Ok(());
        };
        let known = |name: &str| {
            [&self.models, &self.lua_models]
                .into_iter()
                .flatten()
                .any(|m| m.iter().any(|(n, _)| n == name))
        };
        let none = self.models.is_none() && self.lua_models.is_none();
        for (name, _) in thresholds {
            let at = format!("thresholds.{name}");
            if none {
                return Err(ctx.err(&at, "no models are configured"));
            }
            if !known(name) {
                return Err(ctx.err(&at, "no model of that name"));
            }
        }
        Ok(())
    }

    /// `score_header`, default `X-Bot-Score`; empty: none.
    pub fn score_header_name(&self) -> &str {
        self.score_header.as_deref().unwrap_or(DEFAULT_SCORE_HEADER)
    }

    /// The score header names these options strip, one a line (empty:
    /// none): their own and, for a location whose `score_header` differs
    /// from the configuration it was derived from, that one's too (an
    /// origin behind both locations may trust either).
    pub fn score_header_spellings(&self) -> String {
        let name = self.score_header_name();
        match self.base_score_header.as_deref() {
            None | Some("") => name.to_owned(),
            Some(base) if base == name => name.to_owned(),
            Some(base) if name.is_empty() => base.to_owned(),
            Some(base) => format!("{name}\n{base}"),
        }
    }

    /// `engine`, default `rust`.
    pub fn engine(&self) -> Engine {
        self.engine.unwrap_or(Engine::Rust)
    }

    /// `mode`, default `log`.
    pub fn mode(&self) -> Mode {
        self.mode.unwrap_or(Mode::Log)
    }

    /// `status`, default 403.
    pub fn status(&self) -> u16 {
        self.status.unwrap_or(DEFAULT_STATUS)
    }

    /// `fail_closed`, default false.
    pub fn fail_closed(&self) -> bool {
        self.fail_closed.unwrap_or(false)
    }

    /// Whether any models are configured, for either engine: requests that
    /// go unscored then are a failure (`fail_closed` applies).
    pub fn models_wanted(&self) -> bool {
        self.models.is_some() || self.lua_models.is_some()
    }

    /// The configured threshold of the model `name`, if any.
    pub fn threshold(&self, name: &str) -> Option<f64> {
        self.thresholds
            .as_ref()?
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, t)| t)
    }

    /// The options resolved, defaults filled in, as one JSON object: what
    /// the Lua shim reads once per `configure{}` and per location. Models
    /// are lists of `{ "name", "path" }` in scoring order; options without
    /// a value and without a default are left out.
    pub fn resolved_json(&self) -> String {
        let models = |m: &Option<Vec<(String, PathBuf)>>| {
            m.as_ref().map(|m| {
                Value::Array(
                    m.iter()
                        .map(|(n, p)| serde_json::json!({ "name": n, "path": p.to_string_lossy() }))
                        .collect(),
                )
            })
        };
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| Value::from(p.to_string_lossy()));
        let engine = self.engine();
        let mut out = Map::new();
        let mut put = |key: &str, v: Option<Value>| {
            if let Some(v) = v {
                out.insert(key.to_owned(), v);
            }
        };
        put("internal_headers", path(&self.internal_headers));
        put("models", models(&self.models));
        put("lua_models", models(&self.lua_models));
        put("mode", Some(self.mode().as_str().into()));
        put(
            "thresholds",
            self.thresholds.as_ref().map(|t| {
                Value::Object(
                    t.iter()
                        .map(|(n, t)| (n.clone(), Value::from(*t)))
                        .collect(),
                )
            }),
        );
        put("status", Some(self.status().into()));
        put(
            "allow",
            self.allow
                .as_ref()
                .map(|a| Value::Array(a.iter().map(|c| c.to_string().into()).collect())),
        );
        put("fail_closed", Some(self.fail_closed().into()));
        put(
            "score_header",
            Some(
                self.score_header
                    .as_deref()
                    .unwrap_or(DEFAULT_SCORE_HEADER)
                    .into(),
            ),
        );
        put("vars", Some(self.vars.unwrap_or(false).into()));
        put("log_level", self.log_level.map(Value::from));
        put("lib_path", path(&self.lib_path));
        put("engine", Some(engine.as_str().into()));
        put(
            "shadow_primary",
            (engine == Engine::Shadow)
                .then(|| self.shadow_primary.unwrap_or(Engine::Rust).as_str().into()),
        );
        put("metrics_dict", self.metrics_dict.clone().map(Value::from));
        // What the shim needs to know of the challenge and the bots: that
        // they are on (it declares their variables and metrics), the
        // cookie's name and the bots' names. The rest stays in Rust.
        if let Some(c) = self.challenge() {
            put(
                "challenge_secret",
                Some(c.keys().path().to_string_lossy().into()),
            );
            put("challenge_cookie", Some(c.cookie.clone().into()));
            put("challenge_status", Some(c.status.into()));
            put("challenge_difficulty", Some(c.difficulty.into()));
            put("challenge_ttl", Some(c.ttl.into()));
        }
        if let Some(b) = &self.verified_bots {
            put("verified_bots", Some(b.path().to_string_lossy().into()));
            put(
                "verified_bot_names",
                Some(Value::Array(
                    (0..b.len())
                        .filter_map(|i| b.name(i))
                        .map(Value::from)
                        .collect(),
                )),
            );
        }
        put("models_wanted", Some(self.models_wanted().into()));
        Value::Object(out).to_string()
    }
}

/// Why a location's engine is refused, if it is: `access{}` may only pick
/// among the engines `configure{}` loaded.
fn given_engine(location: &Options, base: &Options) -> Option<String> {
    let (want, loaded) = (location.engine(), base.engine());
    let ok = want == loaded || loaded == Engine::Shadow;
    (!ok).then(|| {
        format!(
            "engine \"{}\" was not loaded; configure{{ engine = \"{}\" }} allows only \"{}\"",
            want.as_str(),
            loaded.as_str(),
            loaded.as_str()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    fn configure(json: &str) -> Result<Options, ConfigError> {
        Options::configure("edgeguard.configure", None, json.as_bytes())
    }

    /// A directory holding `edgeguard.json` with `json`; removed on drop.
    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str, json: &str) -> Dir {
            let dir = std::env::temp_dir()
                .join(format!("edgeguard-options-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("edgeguard.json"), json).unwrap();
            Dir(dir)
        }
        fn file(&self) -> String {
            self.0.join("edgeguard.json").display().to_string()
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn list_entries_are_numbered_from_zero_everywhere() {
        let e = configure(r#"{"allow": ["10.0.0.0/33"]}"#).unwrap_err();
        assert_eq!(e.key(), Some("allow[0]"));
        assert_eq!(e.origin(), ErrorOrigin::Caller);
        assert!(e.to_string().contains("'10.0.0.0/33'"), "{e}");
        let e = configure(r#"{"allow": ["10.0.0.0/8", 7]}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "edgeguard.configure: allow[1]: must be a CIDR block string, got number"
        );
    }

    #[test]
    fn a_bad_file_is_a_file_error_naming_the_file() {
        let dir = Dir::new("bad", r#"{"allow": ["10.0.0.0/33"]}"#);
        let json = format!(r#"{{"config": "{}"}}"#, dir.file());
        let e = configure(&json).unwrap_err();
        assert_eq!(e.origin(), ErrorOrigin::File);
        assert_eq!(e.source(), dir.file());
        assert_eq!(
            e.to_string(),
            format!(
                "{}: allow[0]: prefix length 33 too long in '10.0.0.0/33'",
                dir.file()
            )
        );
        let e = configure(r#"{"config": "/nonexistent/edgeguard.json"}"#).unwrap_err();
        assert_eq!(e.origin(), ErrorOrigin::Io);
        assert!(
            e.to_string()
                .starts_with("/nonexistent/edgeguard.json: cannot read"),
            "{e}"
        );
        for (text, want) in [
            ("not json", "not JSON"),
            ("[1, 2]", "must be a JSON object"),
            (
                r#"{"engine": "lua"}"#,
                "engine: unknown option 'engine' in a configuration file",
            ),
            (
                r#"{"status": "403"}"#,
                "status: must be an HTTP error status",
            ),
        ] {
            let dir = Dir::new("cases", text);
            let e = configure(&format!(r#"{{"config": "{}"}}"#, dir.file())).unwrap_err();
            assert_eq!(e.origin(), ErrorOrigin::File, "{text}");
            assert!(e.to_string().starts_with(&dir.file()), "{text}: {e}");
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn options_beside_the_file_override_it_and_paths_resolve() {
        let dir = Dir::new(
            "merge",
            r#"{"internal_headers": "lists/internal.txt", "models": {"bot": "bot.json"},
                "mode": "block", "thresholds": {"bot": 0.5}, "status": 429}"#,
        );
        let json = format!(
            r#"{{"config": "{}", "mode": "log", "lua_models": {{"bot": "m/bot.json"}}, "engine": "shadow"}}"#,
            dir.file()
        );
        let o = Options::configure(
            "edgeguard.configure",
            Some(Path::new("/etc/nginx")),
            json.as_bytes(),
        )
        .unwrap();
        assert_eq!(o.mode(), Mode::Log, "the caller's mode wins");
        assert_eq!(o.status(), 429, "the file's status stays");
        assert_eq!(o.internal_headers, Some(dir.0.join("lists/internal.txt")));
        assert_eq!(o.models, Some(vec![("bot".into(), dir.0.join("bot.json"))]));
        assert_eq!(
            o.lua_models,
            Some(vec![("bot".into(), PathBuf::from("/etc/nginx/m/bot.json"))])
        );
        assert_eq!(o.threshold("bot"), Some(0.5));
    }

    #[test]
    fn locations_override_some_options_only() {
        let base = configure(
            r#"{"models": {"spoof": "s.json", "bot": "b.json"}, "thresholds": {"bot": 0.9},
                "mode": "block", "allow": ["10.0.0.0/8"], "engine": "shadow"}"#,
        )
        .unwrap();
        let loc = base
            .with_access(
                "edgeguard.access",
                br#"{"mode": "log", "thresholds": {"spoof": 0.2}, "engine": "lua"}"#,
            )
            .unwrap();
        assert_eq!(loc.mode(), Mode::Log);
        assert_eq!(loc.threshold("bot"), Some(0.9), "model by model");
        assert_eq!(loc.threshold("spoof"), Some(0.2));
        assert_eq!(loc.engine(), Engine::Lua);
        assert_eq!(base.mode(), Mode::Block, "the base is unchanged");
        let e = base
            .with_access("edgeguard.access", br#"{"models": {}}"#)
            .unwrap_err();
        assert_eq!(e.to_string(), "edgeguard.access: models: unknown option 'models' per location (give it to configure{})");
        let e = base
            .with_access("edgeguard.access", br#"{"thresholds": {"bto": 0.5}}"#)
            .unwrap_err();
        assert_eq!(e.key(), Some("thresholds.bto"));
        let rust = configure(r#"{"engine": "rust"}"#).unwrap();
        let e = rust
            .with_access("edgeguard.access", br#"{"engine": "lua"}"#)
            .unwrap_err();
        assert!(
            e.to_string().contains("engine \"lua\" was not loaded"),
            "{e}"
        );
        assert!(rust.with_access("x", br#"{"engine": "rust"}"#).is_ok());
    }

    #[test]
    fn caller_errors_name_the_option() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"internal_header": "x"}"#,
                "internal_header: unknown option 'internal_header'",
            ),
            (
                r#"{"internal_headers": 42}"#,
                "internal_headers: must be a non-empty path string, got number",
            ),
            (
                r#"{"mode": "deny"}"#,
                r#"mode: must be "block", "log", "off" or "challenge", got "deny""#,
            ),
            (
                r#"{"engine": "python"}"#,
                r#"engine: must be "rust", "lua" or "shadow", got "python""#,
            ),
            (
                r#"{"engine": 1}"#,
                "engine: must be \"rust\", \"lua\" or \"shadow\", got number",
            ),
            (
                r#"{"engine": "shadow", "shadow_primary": "go"}"#,
                r#"shadow_primary: must be "rust" or "lua""#,
            ),
            (
                r#"{"shadow_primary": "lua"}"#,
                r#"shadow_primary needs engine = "shadow""#,
            ),
            (
                r#"{"lua_models": {"bot": "b.json"}}"#,
                r#"lua_models needs engine = "lua" or "shadow""#,
            ),
            (
                r#"{"metrics_dict": 5}"#,
                "metrics_dict: must be a string, got number",
            ),
            (
                r#"{"models": {"bot": 1}}"#,
                "models.bot: must be a non-empty path string, got number",
            ),
            (r#"{"models": []}"#, "models: must name at least one model"),
            (
                r#"{"status": 403.5}"#,
                "status: must be an HTTP error status",
            ),
            (
                r#"{"log_level": 9}"#,
                "log_level: must be an nginx log level",
            ),
            (
                r#"{"log_level": "info"}"#,
                "log_level: must be a number, got string",
            ),
            (
                r#"{"thresholds": {"bot": "high"}}"#,
                "thresholds.bot: must be a number, got string",
            ),
            (
                r#"{"thresholds": {"bot": 0.5}}"#,
                "thresholds.bot: no models are configured",
            ),
            (r#"{"mode": "log""#, "options: not JSON"),
        ];
        for (text, want) in cases {
            let got = Options::configure("options", None, text.as_bytes()).unwrap_err();
            assert_eq!(got.origin(), ErrorOrigin::Caller, "{text}");
            assert!(got.to_string().contains(want), "{text}: {got}");
        }
    }

    #[test]
    fn score_header_names_are_checked_and_their_spellings_inherited() {
        for (name, want) in [
            ("X-*", "score_header \"X-*\" is not a header name: `*`, `#` and whitespace are not allowed"),
            ("X-Bot Score", "score_header \"X-Bot Score\" is not a header name"),
            ("X#", "score_header \"X#\" is not a header name"),
            ("X-\\u000bA", "is not a header name: `*`, `#` and whitespace"),
            ("X-(a", "edgeguard.configure: score_header is not a header name: score_header:1:"),
        ] {
            let e = configure(&format!(r#"{{"score_header": "{name}"}}"#)).unwrap_err();
            assert_eq!(e.origin(), ErrorOrigin::Caller, "{name}");
            assert!(e.to_string().starts_with("edgeguard.configure: score_header"), "{e}");
            assert!(e.to_string().contains(want), "{name}: {e}");
        }
        // A file's bad name is the file's error.
        let dir = Dir::new("score-header", r#"{"score_header": "X-*"}"#);
        let e = configure(&format!(r#"{{"config": "{}"}}"#, dir.file())).unwrap_err();
        assert_eq!(e.origin(), ErrorOrigin::File);
        assert!(e.to_string().starts_with(&dir.file()), "{e}");

        let base = configure("{}").unwrap();
        assert_eq!(base.score_header_spellings(), "X-Bot-Score");
        let own = |json: &str| {
            base.with_access("edgeguard.access", json.as_bytes())
                .unwrap()
                .score_header_spellings()
        };
        assert_eq!(own("{}"), "X-Bot-Score");
        assert_eq!(
            own(r#"{"score_header": "X-Other"}"#),
            "X-Other\nX-Bot-Score"
        );
        assert_eq!(own(r#"{"score_header": ""}"#), "X-Bot-Score");
        let e = base
            .with_access("edgeguard.access", br#"{"score_header": "X-*"}"#)
            .unwrap_err();
        assert_eq!(e.origin(), ErrorOrigin::Caller);
        assert!(
            e.to_string()
                .starts_with("edgeguard.access: score_header \"X-*\""),
            "{e}"
        );
        let none = configure(r#"{"score_header": ""}"#).unwrap();
        assert_eq!(none.score_header_spellings(), "");
        let loc = none
            .with_access("edgeguard.access", br#"{"score_header": "X-Own"}"#)
            .unwrap();
        assert_eq!(loc.score_header_spellings(), "X-Own");
    }

    #[test]
    fn empty_lua_tables_are_empty_lists_and_maps() {
        // lua-cjson encodes an empty table as `{}`.
        let o = configure(r#"{"allow": {}, "thresholds": []}"#).unwrap();
        assert_eq!(o.allow, Some(vec![]));
        assert_eq!(o.thresholds, Some(vec![]));
    }

    #[test]
    fn resolved_json_fills_defaults_and_keeps_model_order() {
        let o = configure(
            r#"{"models": {"spoof": "s.json", "bot": "b.json"}, "allow": ["10.1.2.3/8"]}"#,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&o.resolved_json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "models": [{"name": "bot", "path": "b.json"}, {"name": "spoof", "path": "s.json"}],
                "mode": "log", "status": 403, "allow": ["10.0.0.0/8"], "fail_closed": false,
                "score_header": "X-Bot-Score", "vars": false, "engine": "rust",
                "models_wanted": true,
            })
        );
        let o = configure(r#"{"engine": "shadow", "log_level": 4}"#).unwrap();
        let v: Value = serde_json::from_str(&o.resolved_json()).unwrap();
        assert_eq!(v["shadow_primary"], "rust");
        assert_eq!(v["log_level"], 4);
        assert_eq!(v["models_wanted"], false);
        let _ = manifest();
    }

    #[test]
    fn every_option_has_a_parser_and_one_scope_at_least() {
        for spec in OPTIONS {
            assert!(spec.file || spec.configure || spec.access, "{}", spec.name);
            assert!(
                !spec.file || spec.configure,
                "{}: a file option is a configure option",
                spec.name
            );
            let ctx = Ctx {
                source: "t",
                origin: ErrorOrigin::Caller,
                base: None,
            };
            // Reaching the arm (an Err for null) proves there is one: the
            // catch-all arm panics.
            let _ = ctx.option(&mut Options::default(), spec.name, &Value::Null);
        }
    }
}
