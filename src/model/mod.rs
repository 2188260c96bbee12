//! CatBoost model evaluation.
//!
//! [`Evaluator`] is what the scorer needs from a model, whichever backend
//! computes it: the native evaluator of this crate, or the official CatBoost
//! library behind the `official` feature.
//!
//! The native evaluator ([`Model`]) reads CatBoost's JSON export
//! (`model.save_model("m.json", format="json")`); convert a `.cbm` file once
//! with `catboost.CatBoost().load_model("m.cbm").save_model("m.json", format="json")`.
//! Categorical values are hashed with [`cat_hash`] (CatBoost's CityHash64
//! v1.0.2, low 32 bits), once per request, and shared by every model.
//!
//! Prediction types follow the official C API (`SetPredictionType`): see
//! [`PredictionType`].
//!
//! Two facts about CatBoost's own code that matter here:
//! - FeatureFreq and FloatTargetMeanValue CTRs are trained only on GPU; the
//!   evaluator supports them (same formulas as Counter and
//!   BinarizedTargetMeanValue) and is tested on models relabelled and
//!   evaluated by CatBoost itself.
//! - CatBoost's JSON *loader* reads the sums of mean-value CTR tables as
//!   integers (`json_model_helpers.cpp`, `CtrDataFromJson`), so a model with
//!   BinarizedTargetMeanValue CTRs reloaded from JSON by CatBoost predicts
//!   differently from the trained model. [`Model`] reads the sums as floats
//!   and matches the trained model; the official library must be given the
//!   `.cbm` file.

mod binarize;
mod chunks;
mod compile;
mod ctr;
mod error;
mod evaluator;
mod group;
mod hash;
mod json;
mod layout;
mod limits;
mod merge;
mod native;
mod parts;
mod plan;
mod prediction;
// The vector tree kernels: raw SIMD intrinsics, each call guarded by
// runtime CPU detection; audited in one module (see its SAFETY comments).
#[allow(unsafe_code)]
mod simd;
// Calls the kernels in `simd` after `Kernel::detect` proved the CPU has them.
#[allow(unsafe_code)]
mod trees;

#[cfg(feature = "official")]
pub mod official;

pub(crate) use binarize::CatSource;
pub use error::{ModelError, ShapeError};
pub use evaluator::Evaluator;
pub use group::{GroupInput, ModelGroup};
pub use hash::cat_hash;
pub use native::Model;
pub(crate) use prediction::Objective;
pub use prediction::{apply_prediction_type, output_len, PredictionError, PredictionType};
pub use trees::Kernel;
