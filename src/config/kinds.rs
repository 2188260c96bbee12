//! The kinds an option names: what a flagged request gets (`mode`) and
//! the engine that strips and scores (`engine`, `shadow_primary`). A leaf:
//! the parsers (`values.rs`) and the table (`options.rs`) both name them.

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

/// What mode `block` does with an ambiguous verdict: a flagged request
/// whose only reasons are ones a hop in front of a person can cause
/// (`src/features/reasons.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ambiguous {
    /// The challenge, as mode `challenge` does (a person behind a
    /// TLS-inspecting proxy solves it); logged when no challenge is
    /// configured.
    Challenge,
    /// The status, as a certain verdict.
    Block,
    /// Logged and let through.
    Log,
}

impl Ambiguous {
    /// The name in the options.
    pub fn as_str(self) -> &'static str {
        match self {
            Ambiguous::Challenge => "challenge",
            Ambiguous::Block => "block",
            Ambiguous::Log => "log",
        }
    }
}

/// What the gate does with a client whose behaviour across requests
/// looks like a crawl (`behaviour`, docs/behaviour.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// The challenge for a navigation, logged otherwise (logged when no
    /// challenge is configured); never a block on behaviour alone.
    Challenge,
    /// Logged (the reason in the decision line) and let through.
    Log,
    /// Not judged (the memory still counts, for rules and variables).
    Off,
}

impl Behaviour {
    /// The name in the options.
    pub fn as_str(self) -> &'static str {
        match self {
            Behaviour::Challenge => "challenge",
            Behaviour::Log => "log",
            Behaviour::Off => "off",
        }
    }
}

/// What `vars` sets: nothing (`false`), the variables of what is
/// configured (`true`), and with `["reasons"]` also `$edgeguard_reasons`
/// and `$edgeguard_grade`: a group asked for by name, so that a server
/// written for `true` needs no new `set` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VarSet {
    /// Any variables at all.
    pub on: bool,
    /// `$edgeguard_reasons` and `$edgeguard_grade`.
    pub reasons: bool,
}

impl VarSet {
    /// The groups a list may name.
    pub const GROUPS: [&'static str; 1] = ["reasons"];
}

c_enum! {
    /// The engine that strips and scores (`engine`, `shadow_primary`); its
    /// word is the option's value and the metrics' `engine` label. Passed
    /// to the metrics exports as a plain int.
    pub enum Engine as "edgeguard_engine_kind" {
        /// This library, one FFI call per job.
        Rust = 0 => "rust",
        /// The pure-Lua engine, the "before" of a migration.
        Lua = 1 => "lua",
        /// Both on every request, acting on the primary's result (requests
        /// only).
        Shadow = 2 => "shadow",
    }
}
