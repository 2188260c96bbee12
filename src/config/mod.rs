//! The edgeguard configuration file, shared by the offline tools and the Lua
//! `configure{}` options.
//!
//! # Format
//!
//! A JSON object of the options of `require("resty.edgeguard").configure{}`:
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
//! The options, their defaults and meanings are documented once, in the
//! README's option table ("Bot scoring: `configure{}` and `access{}`").
//! A file takes the options replay can act on and the nginx options that
//! make sense beside them (`fail_closed`, `score_header`, `vars`,
//! `log_level`, which have no effect offline); `lib_path` and the
//! engine options stay in nginx.conf. Relative paths are relative to the
//! directory of the configuration file. Any other key, or a value of the
//! wrong type or out of range, is an error naming the key (and, in a list,
//! the entry, counted from 0). [`options::OPTIONS`] is the one list of
//! option names and where each may be given.
//!
//! The same [`Options`] and [`Policy`] are behind the C ABI
//! (`src/ffi/config.rs`, bound for Lua by `lua/resty/edgeguard/policy.lua`):
//! the shim hands its `configure{}` and `access{}` tables over as JSON and
//! asks the policy for each request's action, so that nginx and replay
//! decide by one rule by construction.
//!
//! # Decision
//!
//! [`Policy::decide`] is the rule of `access()`: the models are taken
//! in scorer order; the first whose score is at least its threshold (the
//! configured one, else the model's own; a model with neither never flags)
//! flags the request. A flagged request, unless the mode is `off`, gets
//! [`Action::Allow`] when the client address lies in `allow`, otherwise the
//! mode's action. Everything else passes.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use crate::headers::HeaderSet;
use crate::scorer::Scorer;

mod cidr;
mod error;
pub mod options;
mod policy;

pub use cidr::{addr_from_binary, addr_from_text, Cidr};
pub use error::{ConfigError, ErrorOrigin};
pub use options::{Engine, Options, Scope};
pub use policy::{Action, Decision, Mode, Policy};

/// A loaded configuration: the header set, the scorer and the decision policy.
#[derive(Debug)]
pub struct Config {
    path: PathBuf,
    headers: Option<HeaderSet>,
    scorer: Option<Scorer>,
    policy: Policy,
}

impl Config {
    /// Reads the file at `path` and loads what it names.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        Self::from_options(&source, Options::load_file(path)?)
    }

    /// Parses configuration text; relative paths are resolved against
    /// `base`, `source` names the text in errors.
    pub fn parse(source: &str, base: &Path, text: &[u8]) -> Result<Config, ConfigError> {
        Self::from_options(source, Options::parse_file(source, base, text)?)
    }

    /// Loads what the options name: the list, the models, in that order.
    fn from_options(source: &str, options: Options) -> Result<Config, ConfigError> {
        let err =
            |key: &str, msg: String| ConfigError::new(source, Some(key), msg, ErrorOrigin::File);
        let headers = match &options.internal_headers {
            Some(path) => Some(
                HeaderSet::load(path)
                    .map_err(|e| err("internal_headers", format!("cannot load: {e}")))?,
            ),
            None => None,
        };
        let scorer = match &options.models {
            Some(models) => {
                let named: Vec<(&str, &Path)> = models
                    .iter()
                    .map(|(n, p)| (n.as_str(), p.as_path()))
                    .collect();
                Some(Scorer::load(&named).map_err(|e| err("models", e.to_string()))?)
            }
            None => None,
        };
        let bound: Vec<(&str, Option<f64>)> = scorer.as_ref().map_or(Vec::new(), |s| {
            (0..s.model_count())
                .map(|i| (s.model_name(i).unwrap_or_default(), s.threshold(i)))
                .collect()
        });
        let policy = Policy::new(&options, &bound);
        Ok(Config {
            path: PathBuf::from(source),
            headers,
            scorer,
            policy,
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
}
