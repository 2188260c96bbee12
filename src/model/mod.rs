//! CatBoost model evaluation.
//!
//! [`Evaluator`] is what the scorer needs from a model, whichever backend
//! computes it: the native evaluator of this crate, or the official CatBoost
//! library behind the `official` feature.

use std::fmt;

/// One CatBoost model, ready to score single documents.
///
/// Float features are indexed as CatBoost's C API indexes them (by float
/// feature index, including features the trees never use); categorical
/// features are given as CatBoost hashes ([`crate::model`]'s cat hash of the
/// string, as `i32`), indexed by categorical feature index.
pub trait Evaluator {
    /// How many float values [`Evaluator::predict_raw`] expects.
    fn float_feature_count(&self) -> usize;
    /// How many categorical hashes [`Evaluator::predict_raw`] expects.
    fn cat_feature_count(&self) -> usize;
    /// How many values one prediction writes (1, or the class count for MultiClass).
    fn dimension(&self) -> usize;
    /// Writes the raw formula value (`RawFormulaVal`, after `scale_and_bias`)
    /// of one document into `out[..dimension()]`. Never allocates.
    fn predict_raw(&self, floats: &[f32], cats: &[i32], out: &mut [f64]) -> Result<(), PredictError>;
}

/// Why a single prediction was refused. Nothing was written to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictError {
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

impl fmt::Display for PredictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FloatCount { expected, got } => {
                write!(f, "model expects {expected} float features, got {got}")
            }
            Self::CatCount { expected, got } => {
                write!(f, "model expects {expected} categorical features, got {got}")
            }
            Self::OutputLen { expected, got } => {
                write!(f, "model writes {expected} values, output holds {got}")
            }
        }
    }
}

impl std::error::Error for PredictError {}
