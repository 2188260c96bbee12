//! C ABI for CatBoost models and the categorical hash.
