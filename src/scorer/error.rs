//! Why a scorer could not be built, and why one scoring call was refused.

use std::fmt;

use crate::model::{ModelError, PredictionError};

/// A scorer that cannot be built. Every message names the model (and, for
/// file or content problems, its file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The model file could not be read, or is not a usable CatBoost model.
    Model {
        /// The name the model was given.
        name: String,
        /// What the model loader said (it names the file and JSON field).
        error: ModelError,
    },
    /// The model loaded, but the scorer cannot use it: an input the feature
    /// schema lacks, an unnamed input, an objective other than binary
    /// classification or regression, or a malformed threshold.
    Incompatible {
        /// The name the model was given.
        name: String,
        /// The file (or source name) the model came from.
        source: String,
        /// What is wrong, naming the feature or metadata field.
        message: String,
    },
    /// The list of models itself is unusable: empty, too long, or a model
    /// name that is empty, repeated or holds control characters.
    Config {
        /// What is wrong, naming the model name at fault.
        message: String,
    },
}

impl LoadError {
    /// Whether a model file could not be read at all (missing, unreadable),
    /// as opposed to read and rejected.
    pub fn is_io(&self) -> bool {
        matches!(self, Self::Model { error, .. } if error.is_io())
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The model error starts with the file name.
            Self::Model { name, error } => write!(f, "model `{name}`: {error}"),
            Self::Incompatible {
                name,
                source,
                message,
            } => write!(f, "model `{name}`: {source}: {message}"),
            Self::Config { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for LoadError {}

/// Why [`crate::scorer::Scorer::score`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreError {
    /// The output slice does not hold exactly one score per model.
    OutputLen {
        /// The number of models.
        expected: usize,
        /// The output slice's length.
        got: usize,
    },
    /// A model refused the inputs the scorer checked at load time. A bug in
    /// edgeguard if it ever happens; reported rather than panicking because
    /// the caller is an nginx worker.
    Model {
        /// The model's position.
        index: usize,
        /// What the model said.
        error: PredictionError,
    },
}

impl fmt::Display for ScoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutputLen { expected, got } => write!(
                f,
                "the scorer has {expected} models, the output holds {got} scores"
            ),
            Self::Model { index, error } => write!(f, "model {index}: {error}"),
        }
    }
}

impl std::error::Error for ScoreError {}
