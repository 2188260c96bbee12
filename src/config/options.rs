//! The options of edgeguard: the one table of their names, where each may
//! be given, how its value is parsed and how it reads back resolved
//! ([`OPTIONS`], made by the `options!` table below, which also declares
//! the [`Options`] field of each: an option is written once).
//!
//! The same JSON shape comes from three places: a configuration file (the
//! one `edgeguard replay --config` reads), the Lua `configure{}` table and
//! a location's `access{}` table (both handed to Rust by the shim). Each
//! source goes through the same phases: parse (pure, `values.rs`), read
//! what it names (`files.rs`), overlay, check. The option table of
//! docs/configuration.md is their one description.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::challenge::{self, Keys, Pages};
use crate::clients::{self, ClientMemory};
use crate::hop::{Hop, Profile};
use crate::net::Cidr;
use crate::rules::{self, Part, Rules};
use crate::signals::live::{self, Live};
use crate::verified::VerifiedBots;

use super::error::{ConfigError, ErrorOrigin};
use super::files;
use super::kinds::{Ambiguous, Behaviour, Engine, Mode, VarSet};
use super::values::Ctx;

/// nginx's `ngx.INFO`: the level of the decision line when `log_level` is
/// not set.
pub const DEFAULT_LOG_LEVEL: u8 = 7;

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

/// Where an option may be given.
#[derive(Clone, Copy, Debug)]
pub struct Scopes {
    /// Accepted in a configuration file.
    pub file: bool,
    /// Accepted by `configure{}`.
    pub configure: bool,
    /// Accepted by `access{}`, overriding `configure{}` for one location.
    pub access: bool,
}

/// A file, `configure{}` and `access{}`: the per-location options.
const EVERYWHERE: Scopes = Scopes {
    file: true,
    configure: true,
    access: true,
};
/// A file and `configure{}`: what replay acts on, for the whole server.
const FILE: Scopes = Scopes {
    file: true,
    configure: true,
    access: false,
};
/// `configure{}` only: the shim's own (it needs the library before it can
/// hand it anything) and the legacy engine's.
const NGINX: Scopes = Scopes {
    file: false,
    configure: true,
    access: false,
};
/// `configure{}` and `access{}`, never a file.
const NGINX_LOCATION: Scopes = Scopes {
    file: false,
    configure: true,
    access: true,
};

/// One option: its name, where it may be given, its parser (into its
/// [`Options`] field) and its resolved value (defaults filled in; `None`:
/// left out of [`Options::resolved_json`]).
#[derive(Clone, Copy)]
pub struct OptionSpec {
    /// The key, as in `configure{}` and the file.
    pub name: &'static str,
    /// Where it may be given.
    pub scopes: Scopes,
    parse: fn(&Ctx<'_>, &Value, &mut Options) -> Result<(), ConfigError>,
    resolve: fn(&Options) -> Option<Value>,
}

impl OptionSpec {
    fn allowed(&self, scope: Scope) -> bool {
        match scope {
            Scope::File => self.scopes.file,
            Scope::Configure => self.scopes.configure,
            Scope::Access => self.scopes.access,
        }
    }
}

impl std::fmt::Debug for OptionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptionSpec")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Declares every option once: its [`Options`] field (with its doc), its
/// row of [`OPTIONS`], and its part of [`Options::overlay`].
macro_rules! options {
    ($($(#[doc = $doc:literal])* $name:ident: $ty:ty, $scopes:expr, $parse:expr, $resolve:expr;)*) => {
        /// Parsed options, each `None` when not given (paths resolved against
        /// the directory of the source that named them), and what they load.
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct Options {
            $($(#[doc = $doc])* pub $name: Option<$ty>,)*
            /// The keys `challenge_secret` names, read when it was given.
            pub keys: Option<Arc<Keys>>,
            /// The bots `verified_bots` names, read when it was given.
            pub bots: Option<Arc<VerifiedBots>>,
            /// The challenge's pages that `challenge_template`,
            /// `challenge_locales` and `challenge_default_locale` make
            /// (none given: the bundled ones).
            pub pages: Option<Arc<Pages>>,
            /// What `rules` compiles to (none: no rules), compiled against
            /// the models once the options are whole.
            pub compiled_rules: Option<Arc<Rules>>,
            /// The snapshot `signals` names, read when it was given (none:
            /// no lookups).
            pub fleet: Option<Arc<Live>>,
            /// The client memory `client_memory` opens (none: off), made
            /// by [`Options::with_shared_memory`] (nginx) or
            /// [`Options::with_private_memory`] (replay, tests).
            pub clients: Option<ClientMemory>,
            /// Not an option: for a location's options
            /// ([`Options::with_access`]), what it keeps of the
            /// configuration it was derived from.
            pub inherited: Option<Inherited>,
        }

        /// Every option edgeguard knows, in docs/configuration.md's order.
        pub const OPTIONS: &[OptionSpec] = &[$(OptionSpec {
            name: stringify!($name),
            scopes: $scopes,
            parse: |ctx, v, o| {
                o.$name = Some($parse(ctx, stringify!($name), v)?);
                Ok(())
            },
            resolve: $resolve,
        }),*];

        impl Options {
            /// Replaces each option `other` gives (what it loaded with it).
            fn overlay(&mut self, other: Options) {
                if other.rules.is_some() {
                    self.compiled_rules = other.compiled_rules;
                }
                $(if other.$name.is_some() {
                    self.$name = other.$name;
                })*
                if other.keys.is_some() {
                    self.keys = other.keys;
                }
                if other.bots.is_some() {
                    self.bots = other.bots;
                }
                if other.pages.is_some() {
                    self.pages = other.pages;
                }
                if other.clients.is_some() {
                    self.clients = other.clients;
                }
            }
        }
    };
}

options! {
    /// `internal_headers`: the internal header list.
    internal_headers: PathBuf, FILE, Ctx::path, |o| path(&o.internal_headers);
    /// `models`, sorted by name (byte order): the scoring order.
    models: Vec<(String, PathBuf)>, FILE, Ctx::models, |o| models(&o.models);
    /// `mode`.
    mode: Mode, EVERYWHERE, Ctx::mode, |o| Some(o.mode().as_str().into());
    /// `ambiguous`: what mode `block` does with an ambiguous verdict.
    ambiguous: Ambiguous, EVERYWHERE, Ctx::ambiguous, |o| Some(o.ambiguous().as_str().into());
    /// `thresholds`, by model name, sorted by name.
    thresholds: Vec<(String, f64)>, EVERYWHERE, Ctx::thresholds, |o| {
        let t = o.thresholds.as_ref()?;
        Some(Value::Object(t.iter().map(|(n, t)| (n.clone(), Value::from(*t))).collect()))
    };
    /// `status`.
    status: u16, EVERYWHERE, Ctx::status, |o| Some(o.status().into());
    /// `allow`, in the order given.
    allow: Vec<Cidr>, FILE, Ctx::allow, |o| {
        let a = o.allow.as_ref()?;
        Some(Value::Array(a.iter().map(|c| c.to_string().into()).collect()))
    };
    // Deployment profiles (src/hop/, docs/deployment.md): whose requests
    // are relayed, by what kind of hop, with the client's JA4 where.
    /// `trusted_proxies`: the peers whose requests are relayed, in the
    /// order given.
    trusted_proxies: Vec<Cidr>, EVERYWHERE, Ctx::allow, |o| {
        let a = o.trusted_proxies.as_ref()?;
        Some(Value::Array(a.iter().map(|c| c.to_string().into()).collect()))
    };
    /// `proxy_profile`: the kind of hop they are.
    proxy_profile: Profile, EVERYWHERE, Ctx::proxy_profile,
        |o| Some(o.proxy_profile.unwrap_or(Profile::Direct).name().into());
    /// `tls_fingerprint_header`: the header they report the client's JA4
    /// in (default: the profile's, if it has one).
    tls_fingerprint_header: String, EVERYWHERE, Ctx::header_name, |o| {
        o.hop().and_then(|h| h.ja4_header().map(Value::from))
    };
    /// `fail_closed`.
    fail_closed: bool, EVERYWHERE, Ctx::boolean, |o| Some(o.fail_closed().into());
    /// `score_header`.
    score_header: String, EVERYWHERE, Ctx::score_header,
        |o| Some(o.score_header.as_deref().unwrap_or(DEFAULT_SCORE_HEADER).into());
    /// `vars`.
    vars: VarSet, EVERYWHERE, Ctx::vars, |o| Some(vars_json(o.vars_set()));
    /// `log_level`: an nginx level, 0 (`ngx.STDERR`) to 8 (`ngx.DEBUG`).
    log_level: u8, EVERYWHERE, Ctx::log_level, |o| o.log_level.map(Value::from);
    /// `lib_path`.
    lib_path: PathBuf, NGINX, Ctx::path, |o| path(&o.lib_path);
    /// `engine`.
    engine: Engine, NGINX_LOCATION, Ctx::engine, |o| Some(o.engine().as_str().into());
    /// `shadow_primary`.
    shadow_primary: Engine, NGINX, Ctx::primary, |o| {
        (o.engine() == Engine::Shadow)
            .then(|| o.shadow_primary.unwrap_or(Engine::Rust).as_str().into())
    };
    /// `lua_models`, sorted by name.
    lua_models: Vec<(String, PathBuf)>, NGINX, Ctx::models, |o| models(&o.lua_models);
    /// `metrics_dict`.
    metrics_dict: String, NGINX, Ctx::string, |o| o.metrics_dict.clone().map(Value::from);
    /// `config`: read by [`Options::configure`] before the others.
    config: PathBuf, NGINX, Ctx::path, |_| None;
    // The challenge (src/challenge/) and verified bots (src/verified/):
    // files and settings of the whole configuration, like `allow`. What the
    // shim needs to know of them: that they are on (it declares their
    // variables and metrics), the cookie's name and the bots' names.
    /// `challenge_secret`: the file of HMAC keys.
    challenge_secret: PathBuf, FILE, Ctx::path,
        |o| o.challenge().map(|c| c.keys().path().to_string_lossy().into());
    /// `challenge_difficulty`: leading zero bits, 0 to 24.
    challenge_difficulty: u8, FILE, Ctx::difficulty, |o| o.challenge().map(|c| c.difficulty.into());
    /// `challenge_status`: the page's status.
    challenge_status: u16, FILE, Ctx::page_status, |o| o.challenge().map(|c| c.status.into());
    /// `challenge_ttl`: the cookie's lifetime, seconds.
    challenge_ttl: u32, FILE, Ctx::ttl, |o| o.challenge().map(|c| c.ttl.into());
    /// `challenge_cookie`: the cookie's name.
    challenge_cookie: String, FILE, Ctx::cookie, |o| o.challenge().map(|c| c.cookie.into());
    /// `challenge_prefix_v4`: IPv4 prefix length a cookie is bound to.
    challenge_prefix_v4: u8, FILE, Ctx::prefix_v4, |_| None;
    /// `challenge_prefix_v6`: IPv6 prefix length a cookie is bound to.
    challenge_prefix_v6: u8, FILE, Ctx::prefix_v6, |_| None;
    /// `challenge_difficulty_max`: leading zero bits at score 1.0.
    challenge_difficulty_max: u8, EVERYWHERE, Ctx::difficulty,
        |o| o.challenge().map(|c| c.difficulty_max.max(c.difficulty).into());
    /// `challenge_response`: `auto`, `page` or `problem`.
    challenge_response: challenge::Response, EVERYWHERE, Ctx::response,
        |o| o.challenge().map(|c| c.response.as_str().into());
    /// `challenge_nojs`: the no-JavaScript fallback's wait and lifetime.
    challenge_nojs: (Option<u8>, Option<u32>), EVERYWHERE, Ctx::nojs, |o| {
        let c = o.challenge()?;
        Some(match c.nojs_wait {
            None => Value::Bool(false),
            Some(w) => serde_json::json!({ "wait": w, "ttl": c.nojs_ttl }),
        })
    };
    /// `challenge_site`: the site's name on the page (default: `Host`).
    challenge_site: String, FILE, Ctx::site, |o| o.challenge().and_then(|c| c.site.map(Value::from));
    /// `challenge_template`: the page's template (default: the bundled one).
    challenge_template: PathBuf, FILE, Ctx::path, |o| path(&o.challenge_template);
    /// `challenge_locales`: a directory of `<tag>.json` locales.
    challenge_locales: PathBuf, FILE, Ctx::path, |o| path(&o.challenge_locales);
    /// `challenge_default_locale`: the locale without a match (`en`).
    challenge_default_locale: String, FILE, Ctx::locale_tag, |o| {
        o.challenge().map(|c| c.pages().tag(c.pages().default_index()).into())
    };
    /// `challenge_problem_base`: where problem types are documented.
    challenge_problem_base: String, FILE, Ctx::problem_base,
        |o| o.challenge_problem_base.clone().map(Value::from);
    /// `verified_bots`: the bots' file.
    verified_bots: PathBuf, FILE, Ctx::path,
        |o| o.bots.as_ref().map(|b| b.path().to_string_lossy().into());
    /// `rules`: site rules before and after scoring (docs/rules.md); an
    /// empty list: `false`, none.
    rules: Vec<Part>, EVERYWHERE, Ctx::rules, |o| o.rules.as_ref().map(|p| rules_json(p));
    /// `signals`: the fleet signals snapshot (docs/signals.md); `false`:
    /// no lookups (per location: turns them off there).
    signals: Option<PathBuf>, EVERYWHERE, Ctx::signals, |o| {
        o.signals.as_ref().map(|p| p.as_ref().map_or(Value::Bool(false), |p| p.to_string_lossy().into()))
    };
    /// `signals_refresh`: seconds between looks at the snapshot file.
    signals_refresh: u64, FILE, Ctx::refresh,
        |o| o.fleet.as_ref().map(|l| l.refresh().into());
    /// `signals_max_age`: the oldest snapshot used, seconds.
    signals_max_age: u64, FILE, Ctx::max_age,
        |o| o.fleet.as_ref().map(|l| l.max_age().into());
    // The client memory (src/clients/, docs/behaviour.md): what each
    // client did across requests, kept in memory every worker shares.
    /// `client_memory`: its size in bytes (0, the default: off).
    client_memory: u64, FILE, Ctx::memory_size, |o| o.memory().map(|c| c.bytes.into());
    /// `client_memory_epoch`: seconds per epoch of its window.
    client_memory_epoch: u32, FILE, Ctx::epoch,
        |o| o.memory().map(|c| c.epoch_secs.into());
    /// `client_cookie`: set the memory's cookie on answers to navigations.
    client_cookie: bool, FILE, Ctx::boolean, |o| o.memory().map(|_| o.cookie_on().into());
    /// `behaviour`: what a crawl's behaviour leads to.
    behaviour: Behaviour, EVERYWHERE, Ctx::behaviour,
        |o| o.memory().map(|_| o.behaviour_action().as_str().into());
    /// `behaviour_navigations`: documents-only navigations in the window
    /// before a crawl is judged (twice as many for a client that sent the
    /// memory's cookie back).
    behaviour_navigations: u32, EVERYWHERE, Ctx::navigations,
        |o| o.memory().map(|_| o.crawl_navigations().into());
    /// `redact`: header names the request recorder logs as their length,
    /// beside the `Cookie` and credentials it always redacts; `false`
    /// (None): every byte logged (`replay::Redactor`).
    redact: Option<Vec<String>>, FILE, Ctx::redact, |o| {
        Some(match o.redact() {
            None => Value::Bool(false),
            Some(names) => Value::Array(names.iter().map(|n| Value::from(n.as_str())).collect()),
        })
    };
}

impl Options {
    /// The client memory these options make: its size and window, or none
    /// (`client_memory` absent or 0).
    pub fn memory(&self) -> Option<crate::clients::Config> {
        let bytes = self.client_memory.filter(|&b| b > 0)?;
        Some(crate::clients::Config {
            // Checked by the parser: at most `clients::table::MAX_BYTES`.
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            epoch_secs: self
                .client_memory_epoch
                .unwrap_or(crate::clients::Window::DEFAULT_EPOCH_SECS),
            hash_key: None,
        })
    }

    /// These options with the client memory they ask for opened shared
    /// ([`clients::registry::configured`]): in nginx's master, before the
    /// workers fork, so that every worker sees it; a reload that asks for
    /// the same memory gets it back. `source` names the options in errors.
    pub fn with_shared_memory(mut self, source: &str) -> Result<Options, ConfigError> {
        self.clients = clients::registry::configured(self.memory().as_ref())
            .map_err(|e| ConfigError::new(source, Some("client_memory"), e, ErrorOrigin::Caller))?;
        Ok(self)
    }

    /// These options with a new client memory of this process's own, as
    /// they ask for one: replay rebuilds it from the log, in order.
    pub fn with_private_memory(mut self, source: &str) -> Result<Options, ConfigError> {
        self.clients = self
            .memory()
            .map(|c| ClientMemory::private(&c))
            .transpose()
            .map_err(|e| ConfigError::new(source, Some("client_memory"), e, ErrorOrigin::File))?;
        Ok(self)
    }

    /// `client_cookie`, default false (off where a site needs consent for
    /// it: docs/behaviour.md).
    pub fn cookie_on(&self) -> bool {
        self.client_cookie.unwrap_or(false) && self.memory().is_some()
    }

    /// `behaviour`: default `challenge` with the memory on, `off` without.
    pub fn behaviour_action(&self) -> Behaviour {
        match (self.behaviour, self.memory()) {
            (_, None) => Behaviour::Off,
            (Some(b), Some(_)) => b,
            (None, Some(_)) => Behaviour::Challenge,
        }
    }

    /// `behaviour_navigations`, default [`DEFAULT_BEHAVIOUR_NAVIGATIONS`].
    pub fn crawl_navigations(&self) -> u32 {
        self.behaviour_navigations
            .unwrap_or(DEFAULT_BEHAVIOUR_NAVIGATIONS)
    }

    /// `redact` resolved: the extra names (none given: none), or None when
    /// the recorder logs every byte (`false`).
    pub fn redact(&self) -> Option<&[String]> {
        match &self.redact {
            None => Some(&[]),
            Some(r) => r.as_deref(),
        }
    }
}

/// `rules` as given (paths resolved): `false`, or the list.
fn rules_json(parts: &[Part]) -> Value {
    if parts.is_empty() {
        return Value::Bool(false);
    }
    Value::Array(
        parts
            .iter()
            .map(|p| match p {
                Part::Preset(n) => Value::from(format!("preset:{n}")),
                Part::File(f) => Value::from(f.to_string_lossy()),
                Part::Rule(v) => v.clone(),
            })
            .collect(),
    )
}

/// `vars` as given: a boolean, or the list of groups.
fn vars_json(v: VarSet) -> Value {
    if v.reasons {
        Value::Array(vec!["reasons".into()])
    } else {
        v.on.into()
    }
}

fn path(p: &Option<PathBuf>) -> Option<Value> {
    p.as_ref().map(|p| Value::from(p.to_string_lossy()))
}

fn models(m: &Option<Vec<(String, PathBuf)>>) -> Option<Value> {
    let m = m.as_ref()?;
    Some(Value::Array(
        m.iter()
            .map(|(n, p)| serde_json::json!({ "name": n, "path": p.to_string_lossy() }))
            .collect(),
    ))
}

/// What a location's options ([`Options::with_access`]) keep of the
/// configuration they were derived from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inherited {
    /// Its score header, which the location strips too
    /// ([`Options::score_header_spellings`]): an origin behind both may
    /// trust either.
    pub score_header: String,
    /// Its `log_level`: the level a refusal is logged at, whichever
    /// location refuses it ([`Options::refuse_log_level`]).
    pub log_level: Option<u8>,
}

/// The default of `score_header`.
pub const DEFAULT_SCORE_HEADER: &str = "X-Bot-Score";
/// The default of `behaviour_navigations`: a browser opening ten pages
/// in five to ten minutes has fetched some sub-resource on the way (one
/// that sent back the cookie gets twenty); a crawler is judged within its
/// first ten pages, twenty with a cookie jar (issue 39: flagged within 10
/// navigations, all within 30).
pub const DEFAULT_BEHAVIOUR_NAVIGATIONS: u32 = 10;
/// The default of `status`.
pub const DEFAULT_STATUS: u16 = 403;

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

/// Parses a JSON object of options, checking each against `scope`. Pure:
/// the files the options name are read by the caller ([`Options::load_files`]).
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
            Some(s) if s.allowed(scope) => (s.parse)(ctx, value, &mut o)?,
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
    /// Parses a configuration file's text and reads what it names;
    /// relative paths are resolved against `base` (the file's directory),
    /// `source` names it in errors.
    pub fn parse_file(source: &str, base: &Path, text: &[u8]) -> Result<Options, ConfigError> {
        let ctx = Ctx {
            source,
            origin: ErrorOrigin::File,
            base: Some(base),
        };
        let (mut o, _) = parse_object(text, Scope::File, &ctx)?;
        o.load_files(&ctx)?;
        o.load_signals(&ctx)?;
        o.load_pages(&ctx)?;
        o.check_models_named(&ctx)?;
        o.check_challenge(&ctx)?;
        o.check_hop(&ctx)?;
        o.check_vars(&ctx)?;
        o.compile_rules(&ctx)?;
        Ok(o)
    }

    /// Reads and parses the configuration file at `path`.
    pub fn load_file(path: &Path) -> Result<Options, ConfigError> {
        let text = files::read_config(path)?;
        let source = path.display().to_string();
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
        let (mut given, _) = parse_object(text, Scope::Configure, &ctx)?;
        given.load_files(&ctx)?;
        let mut o = match &given.config {
            Some(path) => Self::load_file(path)?,
            None => Options::default(),
        };
        let pages_given = [&given.challenge_template, &given.challenge_locales]
            .iter()
            .any(|p| p.is_some())
            || given.challenge_default_locale.is_some();
        // The file's rules were compiled against its models; compiled again
        // when the caller gives rules or models of its own.
        let signals_given = given.signals.is_some()
            || given.signals_refresh.is_some()
            || given.signals_max_age.is_some();
        let recompile = given.rules.is_some()
            || given.models.is_some()
            || given.lua_models.is_some()
            || signals_given;
        o.overlay(given);
        if pages_given {
            o.load_pages(&ctx)?;
        }
        if signals_given {
            o.load_signals(&ctx)?;
        }
        o.check_engines(&ctx)?;
        o.check_models_named(&ctx)?;
        o.check_challenge(&ctx)?;
        o.check_hop(&ctx)?;
        o.check_vars(&ctx)?;
        if recompile {
            o.compile_rules(&ctx)?;
        }
        Ok(o)
    }

    /// These options with a location's `access{}` options (JSON) over them:
    /// each replaces its own, except `thresholds`, which override model by
    /// model. (`access{}` names no file.)
    pub fn with_access(&self, source: &str, text: &[u8]) -> Result<Options, ConfigError> {
        let ctx = Ctx {
            source,
            origin: ErrorOrigin::Caller,
            base: None,
        };
        let (given, _) = parse_object(text, Scope::Access, &ctx)?;
        let mut o = self.clone();
        o.inherited = Some(Inherited {
            score_header: self.score_header_name().to_owned(),
            log_level: self.log_level,
        });
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
        let own_rules = given.rules.is_some();
        if let Some(parts) = &given.rules {
            if let Some(i) = parts.iter().position(|p| matches!(p, Part::Rule(_))) {
                return Err(ctx.err(
                    &format!("rules[{i}]"),
                    "per location, rules names presets and rules files (or is false); \
                     rules written in place belong in configure{} or a configuration file",
                ));
            }
        }
        match &given.signals {
            Some(Some(_)) => {
                return Err(ctx.err(
                    "signals",
                    "per location, signals is false (no lookups here); the snapshot file \
                     belongs in configure{} or a configuration file",
                ))
            }
            Some(None) => o.fleet = None,
            None => {}
        }
        o.overlay(given);
        o.thresholds = (!thresholds.is_empty()).then_some(thresholds);
        if let Some(engine) = given_engine(&o, self) {
            return Err(ctx.err("engine", engine));
        }
        o.check_models_named(&ctx)?;
        o.check_challenge(&ctx)?;
        o.check_hop(&ctx)?;
        o.check_vars(&ctx)?;
        if own_rules {
            o.compile_rules(&ctx)?;
        }
        o.check_rule_signals(&ctx)?;
        Ok(o)
    }

    /// Loads the files these options (parsed from one source, `ctx`) name.
    fn load_files(&mut self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        if let Some(path) = &self.challenge_secret {
            self.keys = Some(files::keys(path, ctx)?);
        }
        if let Some(path) = &self.verified_bots {
            self.bots = Some(files::bots(path, ctx)?);
        }
        Ok(())
    }

    /// Reads the signals snapshot at `path` in place of the one `signals`
    /// named (`edgeguard replay --signals`); `source` names the options in
    /// errors.
    pub fn set_signals(&mut self, source: &str, path: &Path) -> Result<(), ConfigError> {
        let ctx = Ctx {
            source,
            origin: ErrorOrigin::Caller,
            base: None,
        };
        self.signals = Some(Some(path.to_owned()));
        self.load_signals(&ctx)?;
        self.check_rule_signals(&ctx)
    }

    /// Reads the snapshot `signals` names, refreshed every
    /// `signals_refresh` seconds and used while no older than
    /// `signals_max_age`: a bad or missing file is refused naming the file
    /// and the field. `false`: none.
    fn load_signals(&mut self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let path = match &self.signals {
            Some(Some(p)) => p,
            Some(None) => {
                self.fleet = None;
                return Ok(());
            }
            None => {
                for (set, key) in [
                    (self.signals_refresh.is_some(), "signals_refresh"),
                    (self.signals_max_age.is_some(), "signals_max_age"),
                ] {
                    if set {
                        return Err(ctx.err(key, format!("{key} needs signals (a snapshot file)")));
                    }
                }
                return Ok(());
            }
        };
        let refresh = self.signals_refresh.unwrap_or(live::DEFAULT_REFRESH);
        let max_age = self.signals_max_age.unwrap_or(live::DEFAULT_MAX_AGE);
        let live = match &self.fleet {
            // The same file, read already (a configuration file's, with
            // settings given over it): a million entries take seconds.
            Some(f) if f.path() == path => f.with_settings(refresh, max_age),
            _ => Live::open(path, refresh, max_age).map_err(|e| ctx.file_err("signals", e))?,
        };
        self.fleet = Some(Arc::new(live));
        Ok(())
    }

    /// Compiles the challenge's pages when a template, a locale directory
    /// or a default locale is given (else the bundled pages serve): a bad
    /// template or locale is refused naming its file and line.
    fn load_pages(&mut self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let given = self.challenge_template.is_some()
            || self.challenge_locales.is_some()
            || self.challenge_default_locale.is_some();
        if !given {
            return Ok(());
        }
        let key = if self.challenge_template.is_some() {
            "challenge_template"
        } else if self.challenge_locales.is_some() {
            "challenge_locales"
        } else {
            "challenge_default_locale"
        };
        let pages = Pages::load(
            self.challenge_template.as_deref(),
            self.challenge_locales.as_deref(),
            self.challenge_default_locale.as_deref().unwrap_or("en"),
        )
        .map_err(|e| ctx.file_err(key, e))?;
        self.pages = Some(Arc::new(pages));
        Ok(())
    }

    /// Warnings for the operator, logged at load: the public demo key, a
    /// stale snapshot, ambiguous verdicts that mode `block` only logs.
    pub fn warnings(&self) -> Vec<String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.keys
            .iter()
            .filter_map(|k| k.demo_key_warning())
            .chain(self.fleet.iter().filter_map(|f| f.stale_warning(now)))
            .chain(self.ambiguous_warning())
            .collect()
    }

    /// Mode `block` with `ambiguous = "challenge"` and no challenge: the
    /// ambiguous verdicts are logged and let through, not blocked.
    fn ambiguous_warning(&self) -> Option<String> {
        (self.mode() == Mode::Block
            && self.ambiguous() == Ambiguous::Challenge
            && self.keys.is_none())
        .then(|| {
            "mode \"block\" with ambiguous = \"challenge\" and no challenge_secret: \
             ambiguous verdicts (only reasons a proxy in front of a person can cause) \
             are logged and let through, not blocked; configure challenge_secret, \
             or ambiguous = \"block\" (docs/detections.md)"
                .to_string()
        })
    }

    /// Compiles `rules` against the models these options score with
    /// (a rule's `score` condition names one); `false`: none. A rule that
    /// challenges needs the challenge's keys.
    fn compile_rules(&mut self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let Some(parts) = &self.rules else {
            return Ok(());
        };
        if parts.is_empty() {
            self.compiled_rules = None;
            return Ok(());
        }
        let models = self.rule_models();
        let names: Vec<&str> = models.iter().map(String::as_str).collect();
        // A file's refusal is the file's (nil, err); a rule written in
        // place is the caller's.
        let err = |field: &str, message: String| {
            let in_file = field
                .strip_prefix("rules[")
                .and_then(|f| f.split(']').next())
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| matches!(parts.get(i), Some(Part::File(_))));
            let field = if field.is_empty() { "rules" } else { field };
            let origin = if in_file {
                ErrorOrigin::File
            } else {
                ctx.origin
            };
            ConfigError::new(ctx.source, Some(field), message, origin)
        };
        let compiled = Rules::from_parts(ctx.source, parts, &rules::Context { models: &names })
            .map_err(|e| err(&e.field, e.message))?;
        if self.keys.is_none() {
            if let Some(at) = compiled.first_challenge() {
                return Err(err(
                    at,
                    "a rule that challenges needs challenge_secret (a file of HMAC keys, one hex key a line)"
                        .into(),
                ));
            }
        }
        self.compiled_rules = Some(Arc::new(compiled));
        self.check_rule_signals(ctx)
    }

    /// A rule with a `signal` condition needs a snapshot to look keys up
    /// in: without one it could never hold (nor its `known: false`).
    fn check_rule_signals(&self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let Some(at) = self.compiled_rules.as_deref().and_then(Rules::first_signal) else {
            return Ok(());
        };
        if self.fleet.is_some() {
            return Ok(());
        }
        Err(ConfigError::new(
            ctx.source,
            Some(&format!("{at}.when.signal")),
            "a signal condition needs signals (a snapshot file; docs/signals.md), \
             and this location has none",
            ctx.origin,
        ))
    }

    /// The models a location of these options scores with, in scoring
    /// order (by name): this library's, else the legacy engine's. A
    /// location maps them onto its own order when it binds.
    fn rule_models(&self) -> Vec<String> {
        let mut names: Vec<String> = [&self.models, &self.lua_models]
            .into_iter()
            .flatten()
            .flatten()
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// `vars = ["reasons"]` sets `$edgeguard_reasons` and
    /// `$edgeguard_grade`, which a model named `reasons` or `grade` would
    /// set too (`$edgeguard_<model>`): refused rather than overwritten.
    fn check_vars(&self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        if !self.vars_set().reasons {
            return Ok(());
        }
        match self.rule_models().into_iter().find(|n| n == "reasons" || n == "grade") {
            Some(name) => Err(ctx.err(
                "vars",
                format!("\"reasons\" sets $edgeguard_{name}, which the model \"{name}\" sets too: rename the model"),
            )),
            None => Ok(()),
        }
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
        // The legacy engine binds no location of this library: a snapshot
        // would be read and never looked in.
        if self.engine() == Engine::Lua && matches!(self.signals, Some(Some(_))) {
            return Err(ctx.err(
                "signals",
                "signals needs engine = \"rust\" or \"shadow\" (the legacy Lua engine does not look fingerprints up)",
            ));
        }
        if self.mode() == Mode::Challenge && self.keys.is_none() {
            return Err(ctx.err(
                "mode",
                "mode \"challenge\" needs challenge_secret (a file of HMAC keys, one hex key a line)",
            ));
        }
        Ok(())
    }

    /// The challenge these options describe, if they name a secret.
    pub fn challenge(&self) -> Option<challenge::Challenge> {
        let keys = self.keys.clone()?;
        let mut c = match &self.pages {
            Some(p) => challenge::Challenge::with_pages(keys, p.clone()),
            None => challenge::Challenge::new(keys),
        };
        macro_rules! set {
            ($($opt:ident => $field:ident),*) => { $(if let Some(v) = &self.$opt { c.$field = v.clone(); })* };
        }
        set!(challenge_difficulty => difficulty, challenge_status => status, challenge_ttl => ttl,
             challenge_cookie => cookie, challenge_prefix_v4 => prefix_v4, challenge_prefix_v6 => prefix_v6,
             challenge_difficulty_max => difficulty_max, challenge_response => response,
             challenge_problem_base => problem_base);
        // Without its own maximum, the default spread above the base (a
        // base changed alone moves the range with it); never below it.
        if self.challenge_difficulty_max.is_none() {
            let spread = challenge::defaults::DIFFICULTY_MAX - challenge::defaults::DIFFICULTY;
            c.difficulty_max = c.difficulty.saturating_add(spread);
        }
        c.difficulty_max = c
            .difficulty_max
            .max(c.difficulty)
            .min(challenge::MAX_DIFFICULTY);
        c.site = self.challenge_site.clone();
        if let Some((wait, ttl)) = self.challenge_nojs {
            c.nojs_wait = wait;
            c.nojs_ttl = ttl.unwrap_or(challenge::defaults::NOJS_TTL);
        }
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
        match self.inherited.as_ref().map(|i| i.score_header.as_str()) {
            None | Some("") => name.to_owned(),
            Some(base) if base == name => name.to_owned(),
            Some(base) if name.is_empty() => base.to_owned(),
            Some(base) => format!("{name}\n{base}"),
        }
    }

    /// The names a location strips besides its internal list, one a
    /// line: the score header's spellings and the header trusted proxies
    /// report the client's JA4 in (an internal header: from anyone else
    /// it is a forgery, and the origin never needs it).
    pub fn stripped_names(&self) -> String {
        let mut names = self.score_header_spellings();
        let ja4 = self
            .tls_fingerprint_header
            .as_deref()
            .map(str::to_ascii_lowercase)
            .or_else(|| {
                let profile = self.proxy_profile.unwrap_or(Profile::Direct);
                profile.spec().ja4_header.map(str::to_owned)
            });
        if let Some(h) = ja4 {
            if !names.is_empty() {
                names.push('\n');
            }
            names.push_str(&h);
        }
        names
    }

    /// The trusted hop these options describe: none for the `direct`
    /// profile (the default).
    pub fn hop(&self) -> Option<Hop> {
        Hop::new(
            self.proxy_profile.unwrap_or(Profile::Direct),
            self.trusted_proxies.as_deref().unwrap_or_default(),
            self.tls_fingerprint_header.as_deref(),
        )
    }

    /// A profile other than `direct` needs the peers to trust: without
    /// them it would relay nobody, silently.
    fn check_hop(&self, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
        let profile = self.proxy_profile.unwrap_or(Profile::Direct);
        let trusted = self.trusted_proxies.as_deref().unwrap_or_default();
        if profile != Profile::Direct && trusted.is_empty() {
            return Err(ctx.err(
                "proxy_profile",
                format!(
                    "proxy_profile \"{}\" needs trusted_proxies (the CIDR blocks of the proxies \
                     whose requests it relays; docs/deployment.md)",
                    profile.name()
                ),
            ));
        }
        Ok(())
    }

    /// The `log_level` of the configuration these options were derived
    /// from (their own, if not derived): a refusal's.
    pub fn refuse_log_level(&self) -> Option<u8> {
        match &self.inherited {
            Some(i) => i.log_level,
            None => self.log_level,
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

    /// `ambiguous`, default `challenge`.
    pub fn ambiguous(&self) -> Ambiguous {
        self.ambiguous.unwrap_or(Ambiguous::Challenge)
    }

    /// `fail_closed`, default false.
    pub fn fail_closed(&self) -> bool {
        self.fail_closed.unwrap_or(false)
    }

    /// `vars`, default false.
    pub fn vars(&self) -> bool {
        self.vars_set().on
    }

    /// `vars` with its groups, default none.
    pub fn vars_set(&self) -> VarSet {
        self.vars.unwrap_or_default()
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
    /// a value and without a default are left out; `verified_bot_names`
    /// and `models_wanted` are added.
    pub fn resolved_json(&self) -> String {
        let mut out = Map::new();
        for spec in OPTIONS {
            if let Some(v) = (spec.resolve)(self) {
                out.insert(spec.name.to_owned(), v);
            }
        }
        if let Some(b) = &self.bots {
            let names = (0..b.len()).filter_map(|i| b.name(i)).map(Value::from);
            out.insert("verified_bot_names".into(), Value::Array(names.collect()));
        }
        out.insert("models_wanted".into(), self.models_wanted().into());
        let warnings = self.warnings();
        if !warnings.is_empty() {
            out.insert("warnings".into(), warnings.into());
        }
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

    /// `ambiguous` defaults to the challenge, and warns at load in mode
    /// `block` without one; `vars` takes `true` or the groups.
    #[test]
    fn ambiguous_and_vars_groups() {
        let o = configure(r#"{"mode": "block"}"#).unwrap();
        assert_eq!(o.ambiguous(), Ambiguous::Challenge);
        assert!(o
            .warnings()
            .iter()
            .any(|w| w.contains("ambiguous verdicts")));
        let o = configure(r#"{"mode": "block", "ambiguous": "block"}"#).unwrap();
        assert!(!o
            .warnings()
            .iter()
            .any(|w| w.contains("ambiguous verdicts")));
        let o = configure(r#"{"mode": "log"}"#).unwrap();
        assert!(o.warnings().is_empty());
        let o = configure(r#"{"vars": ["reasons"]}"#).unwrap();
        assert_eq!(
            o.vars_set(),
            VarSet {
                on: true,
                reasons: true
            }
        );
        assert!(o.vars());
        let v: Value = serde_json::from_str(&o.resolved_json()).unwrap();
        assert_eq!(v["vars"], serde_json::json!(["reasons"]));
        let o = configure(r#"{"vars": true}"#).unwrap();
        assert_eq!(
            o.vars_set(),
            VarSet {
                on: true,
                reasons: false
            }
        );
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
                r#"{"ambiguous": "deny"}"#,
                r#"ambiguous: must be "challenge", "block" or "log", got "deny""#,
            ),
            (
                r#"{"ambiguous": true}"#,
                r#"ambiguous: must be "challenge", "block" or "log", got boolean"#,
            ),
            (
                r#"{"vars": ["reasons", "why"]}"#,
                r#"vars[2]: must be a boolean or a list of variable groups ("reasons")"#,
            ),
            (
                r#"{"vars": "reasons"}"#,
                r#"vars: must be a boolean or a list of variable groups ("reasons"), got string"#,
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
    fn proxy_options_are_checked_naming_the_field() {
        let o = configure(r#"{"trusted_proxies": ["10.0.0.0/8"], "proxy_profile": "cloudfront"}"#)
            .unwrap();
        let hop = o.hop().unwrap();
        assert_eq!(hop.profile(), Profile::Cloudfront);
        // The profile's fingerprint header is stripped with the score header.
        assert_eq!(
            o.stripped_names(),
            "X-Bot-Score\ncloudfront-viewer-ja4-fingerprint"
        );
        let own = o
            .with_access(
                "edgeguard.access",
                br#"{"proxy_profile": "fastly", "tls_fingerprint_header": "X-JA4"}"#,
            )
            .unwrap();
        assert_eq!(own.hop().unwrap().ja4_header(), Some("x-ja4"));
        assert_eq!(own.stripped_names(), "X-Bot-Score\nx-ja4");
        // Per location, back to direct: nobody relayed.
        let direct = o
            .with_access("edgeguard.access", br#"{"proxy_profile": "direct"}"#)
            .unwrap();
        assert!(direct.hop().is_none());
        for (json, key, message) in [
            (
                r#"{"proxy_profile": "nginx"}"#,
                "proxy_profile",
                "needs trusted_proxies",
            ),
            (
                r#"{"trusted_proxies": ["10.0.0.0/8"], "proxy_profile": "akamai"}"#,
                "proxy_profile",
                "must be one of \"direct\", \"nginx\"",
            ),
            (
                r#"{"trusted_proxies": ["10.0.0.0/33"]}"#,
                "trusted_proxies[0]",
                "too long",
            ),
            (
                r#"{"tls_fingerprint_header": "X JA4"}"#,
                "tls_fingerprint_header",
                "is not a header name",
            ),
        ] {
            let e = configure(json).unwrap_err();
            assert_eq!(e.key(), Some(key), "{json}");
            assert!(e.to_string().contains(message), "{e}");
        }
    }

    #[test]
    fn redact_is_a_list_of_header_names_or_false() {
        let o = configure(r#"{"redact": ["X-Api-Key", "x-session"]}"#).unwrap();
        assert_eq!(
            o.redact(),
            Some(&["x-api-key".to_owned(), "x-session".to_owned()][..])
        );
        let v: Value = serde_json::from_str(&o.resolved_json()).unwrap();
        assert_eq!(v["redact"], serde_json::json!(["x-api-key", "x-session"]));
        let o = configure(r#"{"redact": false}"#).unwrap();
        assert_eq!(o.redact(), None);
        assert_eq!(configure("{}").unwrap().redact(), Some(&[][..]));
        assert_eq!(
            configure(r#"{"redact": {}}"#).unwrap().redact(),
            Some(&[][..])
        );
        for (bad, msg) in [
            (
                r#"{"redact": true}"#,
                "redact: must be a list of header names, or false",
            ),
            (
                r#"{"redact": "cookie"}"#,
                "redact: must be a list of header names, or false",
            ),
            (
                r#"{"redact": ["ok", 3]}"#,
                "redact[1]: must be a header name string",
            ),
            (
                r#"{"redact": ["x y"]}"#,
                r#"redact[0]: "x y" is not a header name"#,
            ),
            (
                r#"{"redact": [""]}"#,
                r#"redact[0]: "" is not a header name"#,
            ),
        ] {
            let e = configure(bad).unwrap_err().to_string();
            assert!(e.contains(msg), "{bad}: {e}");
        }
        let many: Vec<String> = (0..65).map(|i| format!("\"x-{i}\"")).collect();
        let e = configure(&format!(r#"{{"redact": [{}]}}"#, many.join(","))).unwrap_err();
        assert!(e.to_string().contains("at most 64 names, got 65"), "{e}");
        // Not per location.
        let e = configure("{}")
            .unwrap()
            .with_access("edgeguard.access", br#"{"redact": false}"#)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown option 'redact' per location"),
            "{e}"
        );
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
                "mode": "log", "status": 403, "allow": ["10.0.0.0/8"],
                "proxy_profile": "direct", "fail_closed": false,
                "score_header": "X-Bot-Score", "vars": false, "engine": "rust",
                "models_wanted": true, "ambiguous": "challenge", "redact": [],
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
            let s = spec.scopes;
            assert!(s.file || s.configure || s.access, "{}", spec.name);
            assert!(
                !s.file || s.configure,
                "{}: a file option is a configure option",
                spec.name
            );
            let ctx = Ctx {
                source: "t",
                origin: ErrorOrigin::Caller,
                base: None,
            };
            // Every parser refuses null, naming its option.
            let e = (spec.parse)(&ctx, &Value::Null, &mut Options::default()).unwrap_err();
            assert!(e.to_string().contains(spec.name), "{}: {e}", spec.name);
        }
    }

    #[test]
    fn signals_are_loaded_at_configure_and_refused_naming_file_and_field() {
        let d = Dir::new(
            "signals",
            r#"{"signals": "s.json", "signals_refresh": 5, "signals_max_age": 600}"#,
        );
        let snapshot = |window: u64| {
            format!(
                r#"{{"format":"edgeguard-signals","version":1,"generated":5,"window":{window},"entries":[
                {{"kind":"headers","key":"curl:hua","requests":3,"prefixes24":1,"prefixes48":0,"user_agents":1,"flagged":0,"challenges":0,"solved":0,"cleared":0}}]}}"#
            )
        };
        std::fs::write(d.0.join("s.json"), snapshot(3600)).unwrap();
        let file = d.0.join("edgeguard.json");
        let o = Options::load_file(&file).unwrap();
        let f = o.fleet.as_ref().unwrap();
        assert_eq!((f.refresh(), f.max_age(), f.status().entries), (5, 600, 1));
        let v: Value = serde_json::from_str(&o.resolved_json()).unwrap();
        assert_eq!(v["signals_refresh"], 5);
        assert!(v["signals"].as_str().unwrap().ends_with("s.json"));
        // configure{} over the file: its own refresh, the file's snapshot.
        let o = configure(&format!(
            r#"{{"config": "{}", "signals_refresh": 0}}"#,
            file.display()
        ))
        .unwrap();
        assert_eq!(o.fleet.as_ref().unwrap().refresh(), 0);
        // Defaults.
        let o = configure(&format!(
            r#"{{"signals": "{}"}}"#,
            d.0.join("s.json").display()
        ))
        .unwrap();
        let f = o.fleet.as_ref().unwrap();
        assert_eq!((f.refresh(), f.max_age()), (60, 7200));
        // A bad snapshot: the file's error names the snapshot and field.
        std::fs::write(d.0.join("s.json"), snapshot(0)).unwrap();
        let e = Options::load_file(&file).unwrap_err();
        assert_eq!(e.origin(), ErrorOrigin::File);
        let e = e.to_string();
        assert!(
            e.contains("signals: ") && e.contains("s.json: window: must be"),
            "{e}"
        );
        std::fs::remove_file(d.0.join("s.json")).unwrap();
        let e = Options::load_file(&file).unwrap_err().to_string();
        assert!(e.contains("s.json"), "{e}");
        for (json, want) in [
            (
                r#"{"signals_refresh": 5}"#,
                "signals_refresh: signals_refresh needs signals",
            ),
            (
                r#"{"signals": 5}"#,
                "signals: must be a snapshot file's path or false",
            ),
            (
                r#"{"signals": ""}"#,
                "signals: must be a non-empty path string",
            ),
            (
                r#"{"signals": false, "signals_max_age": 0}"#,
                "signals_max_age: must be an integer from 1",
            ),
            (
                r#"{"signals": false, "signals_refresh": -1}"#,
                "signals_refresh: must be an integer",
            ),
        ] {
            let e = configure(json).unwrap_err().to_string();
            assert!(e.contains(want), "{json}: {e}");
        }
        let o = configure(r#"{"signals": false}"#).unwrap();
        assert!(o.fleet.is_none());
        std::fs::write(d.0.join("s.json"), snapshot(3600)).unwrap();
        let e = configure(&format!(
            r#"{{"engine": "lua", "signals": "{}"}}"#,
            d.0.join("s.json").display()
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("signals: signals needs engine = \"rust\""),
            "{e}"
        );
        // A rule reading signals without a snapshot is refused.
        let e = configure(
            r#"{"rules": [{"name": "a", "when": {"signal": {"known": false}}, "action": "log"}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("rules[0].when.signal: a signal condition needs signals"),
            "{e}"
        );
    }

    #[test]
    fn the_client_memory_options() {
        let conf = |json: &str| Options::configure("o", None, json.as_bytes());
        let off = conf("{}").unwrap();
        assert_eq!(off.memory(), None);
        assert_eq!(off.behaviour_action(), Behaviour::Off);
        assert!(!off.cookie_on());
        let on = conf(r#"{"client_memory": "64m", "client_cookie": true}"#).unwrap();
        let m = on.memory().unwrap();
        assert_eq!((m.bytes, m.epoch_secs), (64 << 20, 300));
        assert_eq!(on.behaviour_action(), Behaviour::Challenge);
        assert!(on.cookie_on());
        assert_eq!(on.crawl_navigations(), DEFAULT_BEHAVIOUR_NAVIGATIONS);
        let v: Value = serde_json::from_str(&on.resolved_json()).unwrap();
        assert_eq!(v["client_memory"], 64 << 20);
        assert_eq!(v["behaviour"], "challenge");
        let small = conf(r#"{"client_memory": 1048576, "client_memory_epoch": 60, "behaviour": "log", "behaviour_navigations": 4}"#).unwrap();
        assert_eq!(small.memory().unwrap().epoch_secs, 60);
        assert_eq!(small.behaviour_action(), Behaviour::Log);
        assert_eq!(small.crawl_navigations(), 4);
        for (json, want) in [
            (r#"{"client_memory": "0"}"#, None),
            (
                r#"{"client_memory": 512}"#,
                Some("client_memory: 512 bytes is less than"),
            ),
            (
                r#"{"client_memory": "64x"}"#,
                Some("client_memory: \"64x\" is not a size"),
            ),
            (r#"{"client_memory": "99999999g"}"#, Some("is more than")),
            (r#"{"client_memory": true}"#, Some("client_memory:")),
            (
                r#"{"behaviour": "block"}"#,
                Some("behaviour: must be \"challenge\", \"log\" or \"off\""),
            ),
            (
                r#"{"behaviour_navigations": 1}"#,
                Some("behaviour_navigations: must be an integer from 2"),
            ),
        ] {
            match (conf(json), want) {
                (Ok(o), None) => assert_eq!(o.memory(), None, "{json}"),
                (Err(e), Some(w)) => assert!(e.to_string().contains(w), "{json}: {e}"),
                (r, w) => panic!("{json}: {:?} want {w:?}", r.map(|o| o.memory())),
            }
        }
    }
}
