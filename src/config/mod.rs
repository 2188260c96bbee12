//! The options of edgeguard: the configuration file the offline tools
//! read, and the Lua `configure{}` and `access{}` options.
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
//! option table of docs/configuration.md.
//! A file takes the options replay can act on and the nginx options that
//! make sense beside them (`fail_closed`, `score_header`, `vars`,
//! `log_level`, which have no effect offline); `lib_path` and the
//! engine options stay in nginx.conf. Relative paths are relative to the
//! directory of the configuration file. Any other key, or a value of the
//! wrong type or out of range, is an error naming the key (and, in a list,
//! the entry, counted from 0). [`options::OPTIONS`] is the one list of
//! option names and where each may be given.
//!
//! The same [`Options`] are behind the C ABI (`src/ffi/config.rs`): the
//! shim hands its `configure{}` and `access{}` tables over, and what they
//! resolve to is bound into a [`crate::gate::Location`], so nginx and
//! replay run one pipeline by construction. The decision rule the options
//! configure is the gate's ([`crate::gate::Policy`]); [`text`] formats
//! what nginx writes of it.

#![forbid(unsafe_code)]

#[cfg(test)]
mod doc_defaults;
mod error;
mod files;
mod kinds;
pub mod options;
pub mod table;
pub mod text;
mod values;

pub use error::{ConfigError, ErrorOrigin};
pub use kinds::{Ambiguous, Behaviour, Engine, Mode, VarSet};
pub use options::{Options, Scope, DEFAULT_LOG_LEVEL};
