//! What the compiler hands the plan: the model's identity ([`Info`]) and its
//! validated contents ([`Parts`]). Shared by `compile.rs` (which fills them)
//! and `plan.rs` (which lays them out), so neither imports the other.

use std::collections::BTreeMap;

use super::ctr::{CtrCalc, CtrTable};
use super::prediction::Objective;

/// What a model is, apart from how it computes: its name, input counts,
/// names and metadata.
#[derive(Debug)]
pub(crate) struct Info {
    pub(crate) source: String,
    pub(crate) float_count: usize,
    pub(crate) cat_count: usize,
    pub(crate) dimension: usize,
    pub(crate) objective: Objective,
    pub(crate) float_names: Vec<String>,
    pub(crate) cat_names: Vec<String>,
    pub(crate) metadata: BTreeMap<String, String>,
}

/// The validated model, before the plan lays it out for evaluation.
/// Slots number the binarized features (used floats, one-hot features, CTRs)
/// the way the trees' splits refer to them.
#[derive(Default)]
pub(crate) struct Parts {
    pub(crate) dimension: usize,
    /// Categorical feature index of each used-categorical position.
    pub(crate) used_cats: Vec<u32>,
    pub(crate) float_slots: Vec<FloatSlot>,
    pub(crate) one_hot_slots: Vec<OneHotSlot>,
    pub(crate) ctr_slots: Vec<CtrSlot>,
    pub(crate) float_borders: Vec<f32>,
    pub(crate) ctr_borders: Vec<f32>,
    pub(crate) one_hot_values: Vec<i32>,
    pub(crate) projection: Vec<ProjectionElement>,
    pub(crate) tables: Vec<CtrTable>,
    /// Every tree level's condition, tree after tree.
    pub(crate) levels: Vec<Split>,
    pub(crate) trees: Vec<Tree>,
    pub(crate) leaves: Vec<f64>,
    pub(crate) scale: f64,
    pub(crate) bias: Vec<f64>,
}

/// A float feature with borders: its slot and sorted borders.
pub(crate) struct FloatSlot {
    pub(crate) slot: u16,
    pub(crate) feature: u32,
    /// What NaN is replaced with before comparing (NaN itself for `AsIs`,
    /// which compares below every border).
    pub(crate) nan_fill: f32,
    pub(crate) borders: (u32, u32),
}

/// A one-hot encoded categorical feature: its bin is 1 + the position of the
/// matching value, 0 when none matches.
pub(crate) struct OneHotSlot {
    pub(crate) slot: u16,
    /// Index into the used-categorical array.
    pub(crate) cat: u32,
    pub(crate) values: (u32, u32),
}

/// A CTR feature: projection, table, formula, borders.
pub(crate) struct CtrSlot {
    pub(crate) slot: u16,
    pub(crate) calc: CtrCalc,
    pub(crate) table: u32,
    pub(crate) projection: (u32, u32),
    pub(crate) borders: (u32, u32),
}

/// One element of a CTR projection, in CatBoost's hashing order: categorical
/// values first, then binarized float features, then one-hot matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ProjectionElement {
    Cat(u32),
    Float { slot: u16, threshold: u16 },
    OneHot { slot: u16, index: u16 },
}

/// A split condition against a slot's bin: `bin >= threshold`, or `bin ==
/// threshold` for one-hot splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Split {
    pub(crate) equal: bool,
    pub(crate) slot: u16,
    pub(crate) threshold: u16,
}

pub(crate) struct Tree {
    pub(crate) depth: u32,
    pub(crate) first_split: u32,
    pub(crate) first_leaf: usize,
}
