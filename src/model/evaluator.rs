//! What every model backend answers: the trait the native model and the
//! official library's both implement.

use super::error::ShapeError;

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
    fn predict_raw(&self, floats: &[f32], cats: &[i32], out: &mut [f64]) -> Result<(), ShapeError>;
}
