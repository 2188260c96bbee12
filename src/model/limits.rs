//! The limits of the native evaluator, in one leaf module: the compiler
//! checks a model against them, the plan and the evaluator size their
//! arrays by them. Nothing here imports anything.

/// The largest model file accepted.
pub(crate) const MAX_FILE_BYTES: u64 = 256 << 20;
/// Deeper oblivious trees have more than 65536 leaves per dimension; CatBoost
/// itself trains at most depth 16.
pub(crate) const MAX_DEPTH: usize = 16;
/// Feature indexes above this are refused (names are stored per index).
pub(crate) const MAX_FEATURE_INDEX: u64 = 65_535;
/// Borders per feature and values per one-hot feature: bins are `u16`.
pub(crate) const MAX_BORDERS: usize = u16::MAX as usize - 1;

/// The most categorical features a model may use (4 bytes of stack each).
pub(crate) const MAX_USED_CATS: usize = 1024;
/// The most output dimensions (classes) a model may have.
pub(crate) const MAX_DIMENSION: usize = 256;
/// The most bins (used float features + one-hot features + CTRs) a model may
/// have.
pub(crate) const MAX_SLOTS: usize = 4096;
/// The most distinct split conditions a model may have.
pub(crate) const MAX_CONDITIONS: usize = 16384;
/// The most bits of the per-document condition array (one per used border,
/// one per one-hot condition, plus the zero bit): 4 KiB of stack.
pub(crate) const MAX_BITS: usize = 32768;
