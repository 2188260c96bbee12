//! Request features for bot scoring.
