//! The edgeguard configuration file, shared by the offline tools and the Lua
//! `configure{}` options.
//!
//! # Format
//!
//! A JSON object with the names and meanings of the options of
//! `require("resty.edgeguard").configure{}` (`lua/resty/edgeguard.lua`):
//!
//! ```json
//! {
//!   "internal_headers": "internal-headers.txt",
//!   "models": { "bot": "models/bot.json", "spoof": "models/spoof.json" },
//!   "mode": "block",
//!   "thresholds": { "bot": 0.7 },
//!   "allow": ["10.0.0.0/8", "2001:db8::/32"],
//!   "status": 403
//! }
//! ```
//!
//! | key | type | meaning |
//! |-----|------|---------|
//! | `internal_headers` | path | list of internal header names to strip (optional) |
//! | `models` | object name → path | CatBoost models; scored in byte order of their names, as the Lua shim sorts them (optional) |
//! | `mode` | `"block"`, `"log"` or `"off"` | what a flagged request gets; default `"log"` |
//! | `thresholds` | object name → number | per-model threshold overriding the model's own `edgeguard.threshold` |
//! | `allow` | list of CIDR blocks or addresses | clients never blocked nor logged: their flagged requests get `allow` |
//! | `status` | integer 400–599 | status of blocked requests; default 403 |
//!
//! The Lua-only options `lib_path`, `fail_closed`, `score_header`, `vars` and
//! `log_level` are accepted (type-checked) so that one file serves both, and
//! have no effect offline. Relative paths are relative to the directory of
//! the configuration file. Any other key, or a value of the wrong type or out
//! of range, is an error naming the key.
//!
//! # Decision
//!
//! [`Policy::decide`] is the rule of the Lua `access()`: the models are taken
//! in scorer order; the first whose score is at least its threshold (the
//! configured one, else the model's own; a model with neither never flags)
//! flags the request. A flagged request, unless the mode is `off`, gets
//! [`Action::Allow`] when the client address lies in `allow`, otherwise the
//! mode's action. Everything else passes.

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::headers::HeaderSet;
use crate::scorer::Scorer;

/// A loaded configuration: the header set, the scorer and the decision policy.
#[derive(Debug)]
pub struct Config {
    path: PathBuf,
    headers: Option<HeaderSet>,
    scorer: Option<Scorer>,
    policy: Policy,
}

/// What a flagged request gets, by configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Answer with the configured status.
    Block,
    /// Let it through, logging the decision.
    Log,
    /// Score only.
    Off,
}

/// What happens to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Not flagged (or mode `off`).
    Pass,
    /// Flagged, but the client is allowlisted.
    Allow,
    /// Flagged and logged (mode `log`).
    Log,
    /// Flagged and refused (mode `block`).
    Block,
}

impl Action {
    /// Every action, in the order of [`Action::index`].
    pub const ALL: [Action; 4] = [Action::Pass, Action::Allow, Action::Log, Action::Block];

    /// The name nginx logs in `$edgeguard_action`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Pass => "pass",
            Action::Allow => "allow",
            Action::Log => "log",
            Action::Block => "block",
        }
    }

    /// The action named as in `$edgeguard_action`.
    pub fn from_name(name: &[u8]) -> Option<Action> {
        Action::ALL
            .into_iter()
            .find(|a| a.as_str().as_bytes() == name)
    }

    /// A dense index, for tables of counts.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The outcome of [`Policy::decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What the request gets.
    pub action: Action,
    /// The model that flagged it, by scorer index (also set when the mode
    /// is `off` and the action is `pass`).
    pub flagged_by: Option<usize>,
}

/// The decision rule: thresholds resolved per model, mode, allowlist.
#[derive(Clone, Debug)]
pub struct Policy {
    mode: Mode,
    /// One per scorer model: the configured threshold, else the model's own.
    thresholds: Vec<Option<f64>>,
    allow: Vec<Cidr>,
    status: u16,
}

impl Policy {
    /// Decides one request from its scores (in scorer order) and its textual
    /// client address. Never allocates.
    pub fn decide(&self, scores: &[f64], client: &[u8]) -> Decision {
        let flagged_by = scores
            .iter()
            .zip(&self.thresholds)
            .position(|(s, t)| matches!(t, Some(t) if s >= t));
        let action = match flagged_by {
            None => Action::Pass,
            Some(_) => match self.mode {
                Mode::Off => Action::Pass,
                _ if self.allows(client) => Action::Allow,
                Mode::Block => Action::Block,
                Mode::Log => Action::Log,
            },
        };
        Decision { action, flagged_by }
    }

    /// Whether the textual address lies in an `allow` block. An address
    /// that does not parse is in none.
    pub fn allows(&self, client: &[u8]) -> bool {
        if self.allow.is_empty() {
            return false;
        }
        let Some(addr) = std::str::from_utf8(client)
            .ok()
            .and_then(|s| s.parse::<IpAddr>().ok())
        else {
            return false;
        };
        self.allow.iter().any(|c| c.contains(addr))
    }

    /// The configured mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The threshold in force for scorer model `i`.
    pub fn threshold(&self, i: usize) -> Option<f64> {
        self.thresholds.get(i).copied().flatten()
    }

    /// The status blocked requests get.
    pub fn status(&self) -> u16 {
        self.status
    }
}

/// One `allow` entry: an address block of one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The network address, host bits zeroed.
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Parses `192.0.2.0/24`, `2001:db8::/32`, or one address (a full-length
    /// prefix). Host bits set in the address are ignored, as the Lua shim does.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("invalid address in CIDR block '{text}'"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(b) => {
                if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(format!("invalid prefix length in CIDR block '{text}'"));
                }
                match b.parse::<u8>() {
                    Ok(n) if n <= max => n,
                    _ => return Err(format!("prefix length {b} too long in '{text}'")),
                }
            }
        };
        Ok(Cidr {
            addr: mask(addr, bits),
            bits,
        })
    }

    /// Whether `addr` is in the block. Families never mix: an IPv4 block
    /// does not match `::ffff:192.0.2.1`, as nginx's binary address keeps
    /// the family the connection came with.
    pub fn contains(&self, addr: IpAddr) -> bool {
        addr.is_ipv4() == self.addr.is_ipv4() && mask(addr, self.bits) == self.addr
    }
}

fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

/// A configuration that cannot be used. The message names the file and the
/// key at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    source: String,
    key: Option<String>,
    message: String,
}

impl ConfigError {
    fn at(source: &str, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            source: source.to_owned(),
            key: Some(key.to_owned()),
            message: message.into(),
        }
    }

    /// The key at fault (`thresholds.bot`, `allow[2]`), if one is.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}: {key}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Lua-only options: accepted with their Lua type, ignored offline.
const LUA_ONLY: [(&str, &str); 5] = [
    ("lib_path", "string"),
    ("fail_closed", "boolean"),
    ("score_header", "string"),
    ("vars", "boolean"),
    ("log_level", "number"),
];

impl Config {
    /// Reads the file at `path` and loads what it names.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| ConfigError {
            source: source.clone(),
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        Self::parse(&source, base, &text)
    }

    /// Parses configuration text; relative paths are resolved against
    /// `base`, `source` names the text in errors.
    pub fn parse(source: &str, base: &Path, text: &[u8]) -> Result<Config, ConfigError> {
        let top: Map<String, Value> = serde_json::from_slice(text).map_err(|e| ConfigError {
            source: source.to_owned(),
            key: None,
            message: format!("not a JSON object: {e}"),
        })?;
        let err = |key: &str, msg: &str| ConfigError::at(source, key, msg);
        let path_of = |key: &str, v: &Value| -> Result<PathBuf, ConfigError> {
            match v.as_str() {
                Some(s) if !s.is_empty() => Ok(base.join(s)),
                _ => Err(err(key, "must be a non-empty path string")),
            }
        };

        let mut headers = None;
        let mut models: Vec<(String, PathBuf)> = Vec::new();
        let mut mode = Mode::Log;
        let mut thresholds: Vec<(String, f64)> = Vec::new();
        let mut allow = Vec::new();
        let mut status = 403;
        for (key, value) in &top {
            match key.as_str() {
                "internal_headers" => {
                    let path = path_of(key, value)?;
                    let set = HeaderSet::load(&path)
                        .map_err(|e| err(key, &format!("cannot load: {e}")))?;
                    headers = Some(set);
                }
                "models" => {
                    let Some(map) = value.as_object() else {
                        return Err(err(key, "must be an object of model name to path"));
                    };
                    for (name, path) in map {
                        models.push((name.clone(), path_of(&format!("models.{name}"), path)?));
                    }
                }
                "mode" => {
                    mode = match value.as_str() {
                        Some("block") => Mode::Block,
                        Some("log") => Mode::Log,
                        Some("off") => Mode::Off,
                        _ => return Err(err(key, "must be \"block\", \"log\" or \"off\"")),
                    }
                }
                "thresholds" => {
                    let Some(map) = value.as_object() else {
                        return Err(err(key, "must be an object of model name to number"));
                    };
                    for (name, t) in map {
                        let Some(t) = t.as_f64() else {
                            return Err(err(&format!("thresholds.{name}"), "must be a number"));
                        };
                        thresholds.push((name.clone(), t));
                    }
                }
                "allow" => {
                    let Some(list) = value.as_array() else {
                        return Err(err(key, "must be a list of CIDR blocks"));
                    };
                    for (i, entry) in list.iter().enumerate() {
                        let at = format!("allow[{i}]");
                        let text = entry
                            .as_str()
                            .ok_or_else(|| err(&at, "must be a CIDR block string"))?;
                        allow.push(Cidr::parse(text).map_err(|m| err(&at, &m))?);
                    }
                }
                "status" => {
                    status = match value.as_u64() {
                        Some(s @ 400..=599) => s as u16,
                        _ => return Err(err(key, "must be an HTTP error status (400-599)")),
                    }
                }
                other => match LUA_ONLY.iter().find(|(k, _)| *k == other) {
                    Some((_, want)) => {
                        let ok = match *want {
                            "string" => value.is_string(),
                            "boolean" => value.is_boolean(),
                            _ => value.is_number(),
                        };
                        if !ok {
                            return Err(err(key, &format!("must be a {want}")));
                        }
                    }
                    None => return Err(err(key, "unknown option")),
                },
            }
        }

        // The Lua shim scores its models sorted by name.
        models.sort_by(|a, b| a.0.cmp(&b.0));
        let scorer = if top.contains_key("models") {
            let named: Vec<(&str, &Path)> = models
                .iter()
                .map(|(n, p)| (n.as_str(), p.as_path()))
                .collect();
            Some(Scorer::load(&named).map_err(|e| err("models", &e.to_string()))?)
        } else {
            None
        };
        let resolved = match &scorer {
            None => {
                if let Some((name, _)) = thresholds.first() {
                    return Err(err(
                        &format!("thresholds.{name}"),
                        "no models are configured",
                    ));
                }
                Vec::new()
            }
            Some(s) => {
                for (name, _) in &thresholds {
                    if !s.models().iter().any(|m| m.name() == name) {
                        return Err(err(&format!("thresholds.{name}"), "no model of that name"));
                    }
                }
                (0..s.model_count())
                    .map(|i| {
                        let name = s.model_name(i).unwrap_or_default();
                        thresholds
                            .iter()
                            .find(|(n, _)| n == name)
                            .map(|&(_, t)| t)
                            .or(s.threshold(i))
                    })
                    .collect()
            }
        };
        Ok(Config {
            path: PathBuf::from(source),
            headers,
            scorer,
            policy: Policy {
                mode,
                thresholds: resolved,
                allow,
                status,
            },
        })
    }

    /// Where the configuration came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The internal header set, if configured.
    pub fn headers(&self) -> Option<&HeaderSet> {
        self.headers.as_ref()
    }

    /// The scorer, if models are configured.
    pub fn scorer(&self) -> Option<&Scorer> {
        self.scorer.as_ref()
    }

    /// The number of models (0 without a scorer).
    pub fn model_count(&self) -> usize {
        self.scorer.as_ref().map_or(0, Scorer::model_count)
    }

    /// The decision rule.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse("test.json", &manifest(), text.as_bytes())
    }

    fn error_of(text: &str) -> String {
        parse(text).expect_err("refused").to_string()
    }

    #[test]
    fn cidr_blocks() {
        let c = |s: &str| Cidr::parse(s).unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(c("10.0.0.0/8").contains(ip("10.255.1.2")));
        assert!(!c("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(
            c("10.1.2.3/8").contains(ip("10.9.9.9")),
            "host bits ignored"
        );
        assert!(c("192.0.2.7").contains(ip("192.0.2.7")));
        assert!(!c("192.0.2.7").contains(ip("192.0.2.8")));
        assert!(c("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!c("0.0.0.0/0").contains(ip("::1")), "families never mix");
        assert!(c("2001:db8::/32").contains(ip("2001:db8:ffff::1")));
        assert!(!c("2001:db8::/32").contains(ip("2001:db9::1")));
        assert!(c("::/0").contains(ip("::1")));
        assert!(!c("192.0.2.0/24").contains(ip("::ffff:192.0.2.1")));
        assert!(c("2001:db8::/33").contains(ip("2001:db8:7fff::")));
        assert!(!c("2001:db8::/33").contains(ip("2001:db8:8000::")));
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "1.2.3.4/8/8",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loads_models_sorted_with_thresholds_and_paths_relative() {
        let cfg = parse(
            r#"{"models": {"spoof": "models/spoof.json", "bot": "models/bot.json"},
                "thresholds": {"spoof": 0.25}, "mode": "block", "status": 429,
                "internal_headers": "nginx-conf/internal-headers.txt",
                "allow": ["10.0.0.0/8"], "vars": true, "log_level": 7}"#,
        )
        .unwrap();
        let scorer = cfg.scorer().unwrap();
        assert_eq!(scorer.model_name(0), Some("bot"));
        assert_eq!(scorer.model_name(1), Some("spoof"));
        assert_eq!(cfg.policy().threshold(0), scorer.threshold(0));
        assert!(cfg.policy().threshold(0).is_some(), "bot ships a threshold");
        assert_eq!(cfg.policy().threshold(1), Some(0.25));
        assert_eq!(cfg.policy().mode(), Mode::Block);
        assert_eq!(cfg.policy().status(), 429);
        assert!(cfg.headers().is_some());
    }

    #[test]
    fn errors_name_the_key() {
        let cases: &[(&str, &str)] = &[
            (r#"{"mode": "deny"}"#, "test.json: mode: must be"),
            (r#"{"modes": "log"}"#, "modes: unknown option"),
            (r#"{"status": 302}"#, "status: must be an HTTP error status"),
            (r#"{"status": 403.5}"#, "status:"),
            (
                r#"{"allow": ["10.0.0.0/8", "nope"]}"#,
                "allow[1]: invalid address",
            ),
            (r#"{"allow": "10.0.0.0/8"}"#, "allow: must be a list"),
            (
                r#"{"thresholds": {"bot": 0.5}}"#,
                "thresholds.bot: no models",
            ),
            (
                r#"{"models": {"bot": "models/bot.json"}, "thresholds": {"bto": 0.5}}"#,
                "thresholds.bto: no model of that name",
            ),
            (
                r#"{"models": {"bot": "models/bot.json"}, "thresholds": {"bot": "high"}}"#,
                "thresholds.bot: must be a number",
            ),
            (
                r#"{"models": {"bot": 3}}"#,
                "models.bot: must be a non-empty path",
            ),
            (
                r#"{"models": {"bot": "models/nope.json"}}"#,
                "models: model `bot`",
            ),
            (
                r#"{"internal_headers": "nope.txt"}"#,
                "internal_headers: cannot load",
            ),
            (r#"{"vars": "yes"}"#, "vars: must be a boolean"),
            (r#"[1]"#, "not a JSON object"),
        ];
        for (text, want) in cases {
            let got = error_of(text);
            assert!(got.contains(want), "{text}: {got}");
        }
    }

    fn policy(mode: Mode, thresholds: &[Option<f64>], allow: &[&str]) -> Policy {
        Policy {
            mode,
            thresholds: thresholds.to_vec(),
            allow: allow.iter().map(|a| Cidr::parse(a).unwrap()).collect(),
            status: 403,
        }
    }

    #[test]
    fn decisions_follow_the_lua_rule() {
        let p = policy(Mode::Block, &[None, Some(0.5), Some(0.2)], &["10.0.0.0/8"]);
        let d = |scores: &[f64], client: &str| p.decide(scores, client.as_bytes());
        // A model without a threshold never flags; the first flagging model wins.
        assert_eq!(d(&[1.0, 0.4, 0.1], "192.0.2.1").action, Action::Pass);
        assert_eq!(
            d(&[1.0, 0.5, 0.9], "192.0.2.1"),
            Decision {
                action: Action::Block,
                flagged_by: Some(1)
            }
        );
        assert_eq!(d(&[0.0, 0.1, 0.2], "192.0.2.1").flagged_by, Some(2));
        assert_eq!(d(&[0.0, 0.9, 0.0], "10.1.1.1").action, Action::Allow);
        assert_eq!(d(&[0.0, 0.9, 0.0], "not-an-ip").action, Action::Block);
        let log = policy(Mode::Log, &[Some(0.5)], &[]);
        assert_eq!(log.decide(&[0.7], b"10.1.1.1").action, Action::Log);
        let off = policy(Mode::Off, &[Some(0.5)], &["10.0.0.0/8"]);
        assert_eq!(
            off.decide(&[0.7], b"10.1.1.1"),
            Decision {
                action: Action::Pass,
                flagged_by: Some(0)
            }
        );
    }

    #[test]
    fn action_names_round_trip() {
        for a in Action::ALL {
            assert_eq!(Action::from_name(a.as_str().as_bytes()), Some(a));
            assert_eq!(Action::ALL[a.index()], a);
        }
        assert_eq!(Action::from_name(b"deny"), None);
    }
}
