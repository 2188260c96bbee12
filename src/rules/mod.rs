//! Rules: what the site owner decides before (and after) the model does.
//!
//! A rules file is an ordered list of rules; each is conditions (all must
//! hold) and an action. The reference, the presets and a cookbook are in
//! `docs/rules.md`; this is how they run.
//!
//! ```json
//! {"lists": {"office": ["192.0.2.0/24", "2001:db8::/32"]},
//!  "rules": [
//!   {"preset": "well-known"},
//!   {"name": "office", "when": {"client": "office"}, "action": "pass"},
//!   {"name": "no-ai", "when": {"bot": {"category": "ai-crawler"}}, "action": "block", "status": 403},
//!   {"name": "sure-bots", "when": {"score": {"model": "bot", "at_least": 0.98}}, "action": "block"}
//!  ]}
//! ```
//!
//! # Two stages, one order
//!
//! A rule with a `score` condition needs the model's scores, so it can
//! only run after scoring; every other rule runs before. The file lists
//! them in the order they run: every rule without a score condition
//! first, then every rule with one (a file that mixes them is refused,
//! naming the rule). [`Rules::before_scoring`] tests the first group in
//! file order, [`Rules::after_scoring`] the second; in each, the first
//! rule whose conditions all hold decides, and no rule after it runs.
//! When no rule matches, the request gets today's behaviour (the
//! default): the model decides.
//!
//! # Actions
//!
//! | action | before scoring | after scoring |
//! |---|---|---|
//! | `pass` | let through, not scored | let through |
//! | `allow` | scored and logged, never acted on: let through | the same |
//! | `log` | the default decision, with the rule's name and tag logged | the same |
//! | `challenge` | challenge (a valid clearance passes), not scored | challenge |
//! | `block` | answer `status` (default 403), not scored | answer `status` |
//!
//! A match before scoring ends the rules: `allow` and `log` still score
//! the request (for the log and the score header) but no rule after
//! scoring runs.
//!
//! # What conditions read
//!
//! A [`View`] of the request, filled by the caller without copying:
//! - paths are compared in their normalized form (percent-decoded,
//!   slashes merged, `.` and `..` resolved, as nginx matches `location`s);
//!   a path nginx would refuse (`/..`, a bad `%` escape) meets no path
//!   condition;
//! - hosts are compared without port and trailing dot, ASCII case ignored;
//! - header names are compared with ASCII case ignored and `_` read as
//!   `-`; a value test holds when *any* field line of that name passes it
//!   (a client can always add one more line, so a header test is a test
//!   of shape, not of identity); `once` holds only with exactly one line;
//! - `user_agent` reads the first `User-Agent`, the one the model and the
//!   verified-bot judge read.
//!
//! Testing a request allocates nothing (`tests/rules_alloc.rs`) and
//! compiles nothing: regular expressions and string automatons are built
//! when the file is loaded, within [`limits`].

#![forbid(unsafe_code)]

mod compile;
mod cond;
mod error;
mod hot;
mod index;
pub mod limits;
mod lists;
mod path;
pub mod presets;
mod raw;
mod rule;
mod view;

use std::path::Path;

pub use error::RulesError;
pub use rule::{Action, Context, Part};
pub use view::{split_target, BotView, View};

use cond::{Cond, Facts};
use hot::Hot;
use index::Index;
use rule::Rule;

/// The rule a request matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Matched<'r> {
    /// Its position among the compiled rules (presets expanded).
    pub index: usize,
    /// Its name (`$edgeguard_rule`).
    pub name: &'r str,
    /// Its tag, empty if none (`$edgeguard_tag`).
    pub tag: &'r str,
    /// What to do.
    pub action: Action,
}

/// Which stage a rule runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Before scoring: the rule has no score condition.
    BeforeScoring,
    /// After scoring: the rule has a score condition.
    AfterScoring,
}

/// What one evaluation may write: the normalized path, when it differs
/// from the path as sent. One per thread (or per worker), reused.
#[derive(Debug)]
pub struct NormalPath {
    path: Vec<u8>,
    fold: Vec<u8>,
}

impl NormalPath {
    /// Room for a path as long as nginx's default request line allows
    /// (`large_client_header_buffers` 8k), so that evaluation never
    /// allocates; a longer one grows it once.
    pub fn new() -> NormalPath {
        NormalPath {
            path: Vec::with_capacity(8192),
            fold: Vec::with_capacity(8192),
        }
    }

    /// What the conditions read of `view`, computed once per evaluation:
    /// the method's bit, the bare host, and (`needs_path`: a rule of the
    /// stage reads it) the normalized path, written into this scratch.
    fn facts<'a>(&'a mut self, view: &'a View<'a>, needs_path: bool) -> Facts<'a> {
        let NormalPath { path, fold } = self;
        Facts {
            view,
            method: match cond::method_bit(view.method) {
                0 => cond::OTHER_METHOD,
                bit => bit,
            },
            fold,
            host: view::bare_host(view.host),
            path: if needs_path {
                path::normalize(view.path, path)
            } else {
                None
            },
        }
    }
}

impl Default for NormalPath {
    fn default() -> Self {
        NormalPath::new()
    }
}

/// A compiled rules file. Immutable once built; share it between threads.
#[derive(Debug)]
pub struct Rules {
    source: String,
    /// [`Context::models`].
    models: Box<[Box<str>]>,
    /// What evaluation reads, in order.
    hot: Box<[Hot]>,
    /// Names, tags and the rest, in the same order.
    rules: Box<[Rule]>,
    /// Rules `[..split]` run before scoring, `[split..]` after.
    split: usize,
    /// Which rules of each stage a request can match at all.
    index_before: Index,
    index_after: Index,
    /// Whether a stage has a path condition (the path is normalized only
    /// then).
    path_before: bool,
    path_after: bool,
    /// What the rules before scoring read that a caller computes on
    /// demand (the bot verdict, the client's address).
    reads_before: Reads,
    /// Where the first rule that challenges is, if one does.
    challenge: Option<String>,
    /// Where the first rule with a signal condition is, if one has one.
    signal: Option<String>,
}

/// What a stage's rules read that costs the caller work to provide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    /// A `bot` condition: [`View::bot`] must be filled.
    pub bot: bool,
    /// A `client` condition: [`View::client`] must be filled.
    pub client: bool,
}

impl Rules {
    /// Reads and compiles the rules file at `path` (address-list files it
    /// names are relative to it).
    pub fn load(path: &Path, ctx: &Context<'_>) -> Result<Rules, RulesError> {
        let source = path.display().to_string();
        let text = lists::read_bounded(path, limits::MAX_FILE)
            .map_err(|m| RulesError::new(&source, "", m))?;
        let base = path.parent().unwrap_or(Path::new(""));
        Rules::parse(&source, base, &text, ctx)
    }

    /// Compiles rules from `text`; `source` names them in errors, `base` is
    /// where relative list files are.
    pub fn parse(
        source: &str,
        base: &Path,
        text: &[u8],
        ctx: &Context<'_>,
    ) -> Result<Rules, RulesError> {
        let rules = compile::compile(source, base, text, ctx)?;
        Ok(Rules::of(source, rules, ctx))
    }

    /// Compiles the entries of a `rules` option, in order; `source` names
    /// the option's source in errors, entry `i` as `rules[i]`.
    pub fn from_parts(
        source: &str,
        parts: &[Part],
        ctx: &Context<'_>,
    ) -> Result<Rules, RulesError> {
        let rules = compile::compile_parts(source, parts, ctx)?;
        Ok(Rules::of(source, rules, ctx))
    }

    fn of(source: &str, rules: Vec<Rule>, ctx: &Context<'_>) -> Rules {
        let split = rules
            .iter()
            .position(Rule::after_scoring)
            .unwrap_or(rules.len());
        let reads_path = |r: &[Rule]| r.iter().any(|r| r.conds.iter().any(Cond::reads_path));
        let (path_before, path_after) = (reads_path(&rules[..split]), reads_path(&rules[split..]));
        let reads = |r: &[Rule]| Reads {
            bot: r
                .iter()
                .any(|r| r.conds.iter().any(|c| matches!(c, Cond::Bot(_)))),
            client: r
                .iter()
                .any(|r| r.conds.iter().any(|c| matches!(c, Cond::Client(_)))),
        };
        let reads_before = reads(&rules[..split]);
        let challenge = rules
            .iter()
            .find(|r| r.action == Action::Challenge)
            .map(|r| r.at.clone());
        let signal = rules
            .iter()
            .find(|r| r.conds.iter().any(|c| matches!(c, Cond::Signal(_))))
            .map(|r| r.at.clone());
        let (hot, rules): (Vec<Hot>, Vec<Rule>) = rules.into_iter().map(Hot::of).unzip();
        Rules {
            index_before: Index::of(0, &hot[..split]),
            index_after: Index::of(split, &hot[split..]),
            source: source.to_owned(),
            models: ctx.models.iter().map(|&m| m.into()).collect(),
            path_before,
            path_after,
            reads_before,
            challenge,
            signal,
            hot: hot.into(),
            rules: rules.into(),
            split,
        }
    }

    /// What the rules before scoring read that costs work to provide
    /// (after scoring, the caller has both anyway).
    pub fn reads_before(&self) -> Reads {
        self.reads_before
    }

    /// Where the first rule whose action is `challenge` is (`rules[2]`),
    /// if one is: such rules need the challenge configured.
    pub fn first_challenge(&self) -> Option<&str> {
        self.challenge.as_deref()
    }

    /// Where the first rule with a `signal` condition is (`rules[2]`), if
    /// one is: such rules need a signals snapshot.
    pub fn first_signal(&self) -> Option<&str> {
        self.signal.as_deref()
    }

    /// The rule at `index` as [`Rules::before_scoring`] returns it.
    pub fn matched(&self, index: usize) -> Option<Matched<'_>> {
        let r = self.rules.get(index)?;
        Some(Matched {
            index,
            name: &r.name,
            tag: &r.tag,
            action: self.hot[index].action,
        })
    }

    /// The models' names the rules were compiled against: a score
    /// condition's model is its index here ([`View::scores`]' order).
    pub fn models(&self) -> &[Box<str>] {
        &self.models
    }

    /// The first rule without a score condition that `view` meets.
    pub fn before_scoring<'r>(
        &'r self,
        view: &View<'_>,
        scratch: &mut NormalPath,
    ) -> Option<Matched<'r>> {
        self.first(&self.index_before, self.path_before, view, scratch)
    }

    /// The first rule with a score condition that `view` (with its
    /// scores) meets. Call it only when [`Rules::before_scoring`] matched
    /// nothing.
    pub fn after_scoring<'r>(
        &'r self,
        view: &View<'_>,
        scratch: &mut NormalPath,
    ) -> Option<Matched<'r>> {
        self.first(&self.index_after, self.path_after, view, scratch)
    }

    fn first<'r>(
        &'r self,
        index: &Index,
        needs_path: bool,
        view: &View<'_>,
        scratch: &mut NormalPath,
    ) -> Option<Matched<'r>> {
        if index.is_empty() {
            return None;
        }
        let mut facts = scratch.facts(view, needs_path);
        let i = index.first(facts.method, facts.path, view.bot.is_some(), |i| {
            self.hot[i].matches(&mut facts)
        })?;
        self.matched(i)
    }

    /// [`Rules::first`] without the index: every rule of the stage
    /// visited in order, the reference the index must agree with.
    #[cfg(test)]
    fn first_visiting_all(
        &self,
        stage: Stage,
        view: &View<'_>,
        scratch: &mut NormalPath,
    ) -> Option<usize> {
        let (from, to, needs_path) = match stage {
            Stage::BeforeScoring => (0, self.split, self.path_before),
            Stage::AfterScoring => (self.split, self.rules.len(), self.path_after),
        };
        let mut facts = scratch.facts(view, needs_path);
        (from..to).find(|&i| self.hot[i].matches(&mut facts))
    }

    /// Where the rules came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// How many rules there are (presets expanded).
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Never true: a file without a rule is refused.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule runs after scoring (a caller that does not score
    /// can skip [`Rules::after_scoring`] otherwise).
    pub fn has_after_scoring(&self) -> bool {
        self.split < self.rules.len()
    }

    /// Rule `i`'s name, tag, action, stage and conditions as written.
    pub fn describe(&self, i: usize) -> Option<Described<'_>> {
        let r = self.rules.get(i)?;
        Some(Described {
            name: &r.name,
            tag: &r.tag,
            action: self.hot[i].action,
            stage: if i < self.split {
                Stage::BeforeScoring
            } else {
                Stage::AfterScoring
            },
            from: &r.at,
            when: &r.summary,
        })
    }
}

/// Rules are equal when they come from the same source and compile to
/// the same rules as written (what an option's comparison needs).
impl PartialEq for Rules {
    fn eq(&self, other: &Rules) -> bool {
        self.source == other.source
            && self.models == other.models
            && self.rules.len() == other.rules.len()
            && self.rules.iter().zip(other.rules.iter()).all(|(a, b)| {
                a.name == b.name && a.tag == b.tag && a.at == b.at && a.summary == b.summary
            })
            && self
                .hot
                .iter()
                .zip(other.hot.iter())
                .all(|(a, b)| a.action == b.action)
    }
}

/// One rule, for people (`edgeguard rules check`).
#[derive(Clone, Copy, Debug)]
pub struct Described<'r> {
    /// Its name.
    pub name: &'r str,
    /// Its tag, empty if none.
    pub tag: &'r str,
    /// Its action.
    pub action: Action,
    /// Its stage.
    pub stage: Stage,
    /// Where in the file it is (`rules[2]`, or a preset's rule).
    pub from: &'r str,
    /// Its conditions, as JSON.
    pub when: &'r str,
}

#[cfg(test)]
mod tests;
