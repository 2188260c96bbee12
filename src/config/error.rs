//! The error of a configuration that cannot be used.

use std::fmt;

/// Where a configuration error lies, which decides how the Lua shim reports
/// it: a bad option written in nginx.conf is misuse (it raises), a bad or
/// unreadable file is a runtime failure (`nil, err`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorOrigin {
    /// The options the caller passed (`configure{}`, `access{}`).
    Caller,
    /// A configuration file's content, or a file it names.
    File,
    /// A configuration file that could not be read.
    Io,
}

/// A configuration that cannot be used. The message names the source (the
/// file, or what the caller called the options), the option and, for a list,
/// the entry: `edgeguard.json: allow[1]: invalid address ...`. Entries are
/// numbered from 0, as in JSON paths and the model errors
/// (`oblivious_trees[3]`); the message quotes the entry too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub(crate) source: String,
    pub(crate) key: Option<String>,
    pub(crate) message: String,
    pub(crate) origin: ErrorOrigin,
}

impl ConfigError {
    pub(crate) fn new(
        source: &str,
        key: Option<&str>,
        message: impl Into<String>,
        origin: ErrorOrigin,
    ) -> ConfigError {
        ConfigError {
            source: source.to_owned(),
            key: key.map(str::to_owned),
            message: message.into(),
            origin,
        }
    }

    /// An error whose message says it all (a list's own message, which
    /// names its file and line): shown as it is, with no source or option.
    pub(crate) fn whole(message: impl Into<String>, origin: ErrorOrigin) -> ConfigError {
        ConfigError::new("", None, message, origin)
    }

    /// The option at fault (`thresholds.bot`, `allow[2]`), if one is.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// What named the options: a file path, or the caller's name for them.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Where the error lies.
    pub fn origin(&self) -> ErrorOrigin {
        self.origin
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            None if self.source.is_empty() => f.write_str(&self.message),
            Some(key) => write!(f, "{}: {key}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}
