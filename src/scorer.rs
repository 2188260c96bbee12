//! Bot scoring: request features, hashed once, scored by several CatBoost models.
