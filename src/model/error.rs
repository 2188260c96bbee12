//! Why a model was rejected at load time.

use std::fmt;

/// A model file or buffer that cannot be used. The message names the source
/// (file name or the name given to [`crate::model::Model::from_json`]) and
/// the JSON field, e.g.
/// `bot.json: oblivious_trees[3].splits[1].border: expected a number`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    source: String,
    field: String,
    message: String,
    io: bool,
}

impl ModelError {
    pub(crate) fn new(source: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        ModelError {
            source: source.to_owned(),
            field: field.into(),
            message: message.into(),
            io: false,
        }
    }

    /// An error reading the file itself (missing, unreadable, too large),
    /// as opposed to a file whose content is not a usable model.
    pub(crate) fn io(source: &str, message: impl Into<String>) -> Self {
        ModelError {
            io: true,
            ..Self::new(source, "", message)
        }
    }

    /// Whether the file could not be read (as opposed to being read and
    /// rejected).
    pub fn is_io(&self) -> bool {
        self.io
    }

    /// The file name or source name the model came from.
    pub fn source_name(&self) -> &str {
        &self.source
    }

    /// The JSON path of the offending field (`features_info.ctrs[2].borders`),
    /// or empty when the problem is the input as a whole (unreadable file).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}: {}: {}", self.source, self.field, self.message)
        }
    }
}

impl std::error::Error for ModelError {}

/// The arguments of one prediction do not have the model's shape (feature
/// counts, output length). Nothing was written to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The float slice has the wrong length.
    FloatCount {
        /// What the model expects.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// The categorical slice has the wrong length.
    CatCount {
        /// What the model expects.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// The output slice is shorter than the model's dimension.
    OutputLen {
        /// The model's dimension.
        expected: usize,
        /// The output slice's length.
        got: usize,
    },
}

impl ShapeError {
    /// Checks one prediction's arguments: `(expected, given)` float and
    /// categorical counts, and an output of `out.1` values where `out.0`
    /// are written.
    pub(crate) fn check(
        floats: (usize, usize),
        cats: (usize, usize),
        out: (usize, usize),
    ) -> Result<(), ShapeError> {
        if floats.1 != floats.0 {
            return Err(ShapeError::FloatCount {
                expected: floats.0,
                got: floats.1,
            });
        }
        if cats.1 != cats.0 {
            return Err(ShapeError::CatCount {
                expected: cats.0,
                got: cats.1,
            });
        }
        if out.1 < out.0 {
            return Err(ShapeError::OutputLen {
                expected: out.0,
                got: out.1,
            });
        }
        Ok(())
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FloatCount { expected, got } => {
                write!(f, "model expects {expected} float features, got {got}")
            }
            Self::CatCount { expected, got } => {
                write!(
                    f,
                    "model expects {expected} categorical features, got {got}"
                )
            }
            Self::OutputLen { expected, got } => {
                write!(f, "model writes {expected} values, output holds {got}")
            }
        }
    }
}

impl std::error::Error for ShapeError {}
