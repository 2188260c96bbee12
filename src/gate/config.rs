//! A configuration file loaded for the offline tools (`edgeguard replay`):
//! what its options name, bound into one [`Location`] as nginx binds a
//! location's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::location::{Location, Models};
use super::policy::Policy;
use crate::config::{ConfigError, ErrorOrigin, Options};
use crate::headers::HeaderSet;
use crate::scorer::Scorer;

/// A loaded configuration: the header set, the scorer, and the location
/// they and the options make.
#[derive(Debug)]
pub struct Config {
    path: PathBuf,
    headers: Option<HeaderSet>,
    location: Location,
}

impl Config {
    /// Reads the file at `path` and loads what it names.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        Self::from_options(&source, Options::load_file(path)?)
    }

    /// [`Config::load`] with the signals snapshot at `signals` (none: the
    /// file's own `signals`, if any) in place of the file's.
    pub fn load_with_signals(path: &Path, signals: Option<&Path>) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        let mut options = Options::load_file(path)?;
        if let Some(s) = signals {
            options.set_signals(&source, s)?;
        }
        Self::from_options(&source, options)
    }

    /// Parses configuration text; relative paths are resolved against
    /// `base`, `source` names the text in errors.
    pub fn parse(source: &str, base: &Path, text: &[u8]) -> Result<Config, ConfigError> {
        Self::from_options(source, Options::parse_file(source, base, text)?)
    }

    /// Loads what the options name: the list, the models, in that order.
    fn from_options(source: &str, options: Options) -> Result<Config, ConfigError> {
        let mut options = options.with_private_memory(source)?;
        // Offline, the snapshot the file names is read once: the answers
        // of one run never change under it.
        if let Some(f) = &options.fleet {
            options.fleet = Some(Arc::new(f.frozen()));
        }
        let err =
            |key: &str, msg: String| ConfigError::new(source, Some(key), msg, ErrorOrigin::File);
        let headers = match &options.internal_headers {
            Some(path) => Some(
                HeaderSet::load(path)
                    .map_err(|e| err("internal_headers", format!("cannot load: {e}")))?,
            ),
            None => None,
        };
        let models = match &options.models {
            Some(models) => {
                let named: Vec<(&str, &Path)> = models
                    .iter()
                    .map(|(n, p)| (n.as_str(), p.as_path()))
                    .collect();
                let scorer = Scorer::load(&named).map_err(|e| err("models", e.to_string()))?;
                Models::Scorer(Arc::new(scorer))
            }
            None => Models::Given(&[]),
        };
        let location = Location::new(&options, models, headers.as_ref())
            .map_err(|e| err("score_header", e.to_string()))?;
        Ok(Config {
            path: PathBuf::from(source),
            headers,
            location,
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
        self.location.scorer()
    }

    /// The number of models (0 without a scorer).
    pub fn model_count(&self) -> usize {
        self.location.model_count()
    }

    /// The decision rule.
    pub fn policy(&self) -> &Policy {
        self.location.policy()
    }

    /// What the gate runs requests under.
    pub fn location(&self) -> &Location {
        &self.location
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
        assert_eq!(cfg.policy().mode(), crate::config::Mode::Block);
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

/// The challenge and the verified bots through a configuration, as replay
/// and nginx load it.
#[cfg(test)]
mod challenge_tests {
    use super::*;
    use crate::challenge::{Clearance, Proof, Rejection};
    use crate::config::Options;
    use crate::features::Request;
    use crate::headers::Header;
    use crate::verified::Verdict;

    const NOW: u64 = 1_800_000_000;
    const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    const GOOGLEBOT: &[u8] =
        b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

    fn config(extra: &str) -> Config {
        let text = format!(
            r#"{{"models": {{"bot": "models/bot.json"}}, "thresholds": {{"bot": 0.5}},
                "challenge_secret": "tests/fixtures/challenge/secret",
                "verified_bots": "tests/fixtures/verified/bots.json" {extra}}}"#
        );
        Config::parse(
            "t.json",
            Path::new(env!("CARGO_MANIFEST_DIR")),
            text.as_bytes(),
        )
        .unwrap()
    }

    fn decide(
        c: &Config,
        score: f64,
        addr: &str,
        headers: &[(&[u8], &[u8])],
    ) -> crate::gate::Decision {
        let h: Vec<Header<'_>> = headers.iter().map(|(n, v)| Header::new(n, v)).collect();
        let req = Request::new(b"GET", b"/", 11, addr.as_bytes(), &h);
        c.policy()
            .decide_request(
                Some(&[score]),
                &req,
                addr.parse().ok(),
                NOW,
                Default::default,
            )
            .unwrap()
    }

    #[test]
    fn challenge_mode_decisions() {
        let c = config(r#", "mode": "challenge""#);
        let ch = c.policy().challenge().unwrap();
        let cookie = {
            let t = ch.mint_cookie(
                &ch.binding("192.0.2.10".parse().ok(), CHROME, None),
                Proof::Work,
                16,
                NOW - 60,
            );
            format!("edgeguard_clearance={}", std::str::from_utf8(&t).unwrap())
        };
        let nav: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"navigate")];
        let xhr: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"cors")];
        let with_cookie: &[(&[u8], &[u8])] = &[
            (b"user-agent", CHROME),
            (b"sec-fetch-mode", b"navigate"),
            (b"cookie", cookie.as_bytes()),
        ];
        use crate::gate::Action::*;
        assert_eq!(decide(&c, 0.9, "192.0.2.10", nav).action, Challenge);
        assert_eq!(decide(&c, 0.9, "192.0.2.10", xhr).action, Block);
        assert_eq!(decide(&c, 0.1, "192.0.2.10", nav).action, Pass);
        let d = decide(&c, 0.9, "192.0.2.10", with_cookie);
        assert_eq!(
            (d.action, d.clearance),
            (Cleared, Clearance::Accepted(Proof::Work))
        );
        // Counted on an unflagged request too; never a reason to pass here.
        let d = decide(&c, 0.1, "192.0.2.10", with_cookie);
        assert_eq!(
            (d.action, d.clearance),
            (Pass, Clearance::Accepted(Proof::Work))
        );
        let d = decide(&c, 0.9, "203.0.113.10", with_cookie);
        assert_eq!(
            (d.action, d.clearance),
            (Challenge, Clearance::Rejected(Rejection::Address))
        );
        // Verified bots pass whatever the score; fakes are flagged whatever the score.
        let bot: &[(&[u8], &[u8])] = &[(b"user-agent", GOOGLEBOT)];
        let d = decide(&c, 0.99, "192.0.2.70", bot);
        assert_eq!((d.action, d.bot), (Verified, Some(Verdict::Verified(0))));
        assert_eq!(decide(&c, 0.99, "2001:db8:4801::5", bot).action, Verified);
        let d = decide(&c, 0.01, "203.0.113.70", bot);
        assert_eq!(
            (d.action, d.bot, d.flagged_by),
            (Block, Some(Verdict::Fake(0)), None)
        );
        assert!(d.action.flagged());
        // A browser from the crawler's range is scored like any browser.
        assert_eq!(decide(&c, 0.01, "192.0.2.70", nav).action, Pass);
        assert_eq!(decide(&c, 0.9, "192.0.2.70", nav).action, Challenge);
        // Unscored under fail_closed: refused, unless a verified bot.
        let fc = config(r#", "mode": "challenge", "fail_closed": true"#);
        let h = [Header::new(b"user-agent", GOOGLEBOT)];
        let req = Request::new(b"GET", b"/", 11, b"192.0.2.70", &h);
        let p = fc.policy();
        assert_eq!(
            p.decide_request(None, &req, "192.0.2.70".parse().ok(), NOW, Default::default)
                .unwrap()
                .action,
            Verified
        );
        let h = [Header::new(b"user-agent", CHROME)];
        let req = Request::new(b"GET", b"/", 11, b"192.0.2.70", &h);
        assert!(p
            .decide_request(None, &req, "192.0.2.70".parse().ok(), NOW, Default::default)
            .is_none());
    }

    #[test]
    fn other_modes_with_the_bots_and_cookie() {
        use crate::gate::Action::*;
        let bot: &[(&[u8], &[u8])] = &[(b"user-agent", GOOGLEBOT)];
        let log = config(r#", "mode": "log""#);
        assert_eq!(decide(&log, 0.0, "203.0.113.70", bot).action, Log);
        let off = config(r#", "mode": "off""#);
        assert_eq!(decide(&off, 0.0, "203.0.113.70", bot).action, Pass);
        let allow = config(r#", "mode": "block", "allow": ["203.0.113.0/24"]"#);
        assert_eq!(decide(&allow, 0.0, "203.0.113.70", bot).action, Allow);
        // Block mode honours a cookie a challenge elsewhere issued.
        let block = config(r#", "mode": "block""#);
        let ch = block.policy().challenge().unwrap();
        let t = ch.mint_cookie(
            &ch.binding("192.0.2.10".parse().ok(), CHROME, None),
            Proof::Work,
            16,
            NOW,
        );
        let cookie = format!("edgeguard_clearance={}", std::str::from_utf8(&t).unwrap());
        let h: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"cookie", cookie.as_bytes())];
        assert_eq!(decide(&block, 0.9, "192.0.2.10", h).action, Cleared);
    }

    #[test]
    fn options_are_checked_and_resolved() {
        let bad = |extra: &str| {
            let text = format!(r#"{{{extra}}}"#);
            Config::parse(
                "t.json",
                Path::new(env!("CARGO_MANIFEST_DIR")),
                text.as_bytes(),
            )
            .unwrap_err()
            .to_string()
        };
        let cases: &[(&str, &str)] = &[
            (
                r#""mode": "challenge""#,
                "t.json: mode: mode \"challenge\" needs challenge_secret",
            ),
            (
                r#""challenge_secret": "tests/fixtures/challenge/secret-bad""#,
                "t.json: challenge_secret: ",
            ),
            (
                r#""challenge_secret": "tests/fixtures/challenge/nope""#,
                "challenge_secret: ",
            ),
            (
                r#""challenge_difficulty": 25"#,
                "challenge_difficulty: must be an integer from 0 to 24",
            ),
            (
                r#""challenge_difficulty": "16""#,
                "challenge_difficulty: must be an integer, got string",
            ),
            (
                r#""challenge_status": 302"#,
                "challenge_status: must be 200 or an HTTP error status",
            ),
            (
                r#""challenge_ttl": 59"#,
                "challenge_ttl: must be an integer from 60",
            ),
            (
                r#""challenge_prefix_v4": 33"#,
                "challenge_prefix_v4: must be an integer from 0 to 32",
            ),
            (
                r#""challenge_prefix_v6": 129"#,
                "challenge_prefix_v6: must be an integer from 0 to 128",
            ),
            (
                r#""challenge_cookie": "a b""#,
                "challenge_cookie: must be a cookie name",
            ),
            (
                r#""challenge_cookie": """#,
                "challenge_cookie: must be a cookie name",
            ),
            (
                r#""verified_bots": "tests/fixtures/verified/googlebot.json""#,
                "verified_bots: ",
            ),
        ];
        for (extra, want) in cases {
            let got = bad(extra);
            assert!(got.contains(want), "{extra}: {got}");
        }
        assert!(
            bad(r#""challenge_secret": "tests/fixtures/challenge/secret-bad""#)
                .contains("secret-bad: line 1: a key is hex digits in pairs")
        );
        assert!(
            bad(r#""verified_bots": "tests/fixtures/verified/googlebot.json""#)
                .contains("googlebot.json: not an object with a \"bots\" array")
        );
        let c = config(
            r#", "challenge_difficulty": 4, "challenge_status": 429, "challenge_ttl": 3600,
               "challenge_cookie": "cf", "challenge_prefix_v4": 16, "challenge_prefix_v6": 48"#,
        );
        let ch = c.policy().challenge().unwrap();
        assert_eq!(
            (
                ch.difficulty,
                ch.status,
                ch.ttl,
                ch.cookie.as_str(),
                ch.prefix_v4,
                ch.prefix_v6
            ),
            (4, 429, 3600, "cf", 16, 48)
        );
        assert_eq!(ch.keys().len(), 2);
        // A location may ask for the challenge only when configure{} loaded keys.
        let plain = Options::configure("o", None, br#"{"mode": "block"}"#).unwrap();
        let e = plain
            .with_access("access", br#"{"mode": "challenge"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("needs challenge_secret"), "{e}");
        let e = plain
            .with_access("access", br#"{"challenge_ttl": 60}"#)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown option 'challenge_ttl' per location"),
            "{e}"
        );
    }
}
