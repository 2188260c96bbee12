//! What a rule is: its action, what it is compiled against, where a
//! `rules` option's entries come from, and one compiled rule. A leaf of
//! the module: `compile` makes rules, `mod.rs` evaluates them.

use super::cond::Cond;

/// What a rule does with a request it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Let through; before scoring, not scored.
    Pass,
    /// Score and log, never act on the score: let through.
    Allow,
    /// The default decision, with the rule logged.
    Log,
    /// Challenge (a valid clearance passes).
    Challenge,
    /// Answer with this status.
    Block(u16),
}

impl Action {
    /// The action's name in files and logs.
    pub fn name(self) -> &'static str {
        match self {
            Action::Pass => "pass",
            Action::Allow => "allow",
            Action::Log => "log",
            Action::Challenge => "challenge",
            Action::Block(_) => "block",
        }
    }
}

/// What rules are compiled against: the scores a location's scorer gives,
/// by model name, in the order [`View::scores`] holds them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Context<'a> {
    /// The models' names (`["bot", "spoof"]`).
    pub models: &'a [&'a str],
}

/// One entry of a `rules` option (`rules = ["preset:feeds",
/// "/etc/edgeguard/rules.json", {...}]`): where its rules come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// A preset, by name (`"preset:feeds"`).
    Preset(String),
    /// A rules file (its lists and rules).
    File(std::path::PathBuf),
    /// One rule written in place (or `{"preset": NAME}`), as a rules
    /// file's entry.
    Rule(serde_json::Value),
}

/// One compiled rule.
#[derive(Debug)]
pub(super) struct Rule {
    pub(super) name: String,
    pub(super) tag: String,
    pub(super) action: Action,
    /// Cheapest first ([`Cond::cost`]).
    pub(super) conds: Box<[Cond]>,
    /// Where it came from (`rules[3]`, or a preset's rule), for errors.
    pub(super) at: String,
    /// Its conditions as written, for `edgeguard rules check`.
    pub(super) summary: String,
}

impl Rule {
    pub(super) fn after_scoring(&self) -> bool {
        self.conds.iter().any(Cond::is_score)
    }
}
