//! Why a rules file was refused: the file, the rule and the field.

use std::fmt;

/// A refused rules file. Its text names the file, then the field as a path
/// from the top of the file (`rules[3].when.path.regex`), then what is
/// wrong: `rules.json: rules[3].when.path.regex: regex too big`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesError {
    /// The file (or `<inline>` for rules given in a configuration).
    pub source: String,
    /// The field, empty for the file as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl RulesError {
    pub(crate) fn new(source: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        RulesError {
            source: source.to_owned(),
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}: {}: {}", self.source, self.field, self.message)
        }
    }
}

impl std::error::Error for RulesError {}

/// A field path under construction: `rules[3]` then `.when` then `.path`.
#[derive(Clone, Debug)]
pub(crate) struct At(String);

impl At {
    pub(crate) fn root(s: &str) -> At {
        At(s.to_owned())
    }

    /// `self.name`.
    pub(crate) fn field(&self, name: &str) -> At {
        if self.0.is_empty() {
            At(name.to_owned())
        } else {
            At(format!("{}.{name}", self.0))
        }
    }

    /// `self[i]`.
    pub(crate) fn index(&self, i: usize) -> At {
        At(format!("{}[{i}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
