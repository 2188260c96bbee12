//! CatBoost model evaluation.
