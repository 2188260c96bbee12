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
