//! JSON export → [`Info`] and [`Parts`]: every reference, count and size is
//! checked against the file's own arrays. The plan (`plan.rs`) lays the parts
//! out for evaluation; nothing here knows how.
//!
//! Nothing is allocated from a number read in the file: vectors are sized by
//! arrays the parser already holds, feature indexes are capped at
//! [`MAX_FEATURE_INDEX`], depth at [`MAX_DEPTH`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::ctr::{Counts, CtrCalc, CtrKind, CtrTable, TableLayout};
use super::error::ModelError;
use super::json::{self, HashItem, JsonCtrKey, JsonCtrTable, JsonElement, JsonModel};
use super::limits::{
    MAX_BORDERS, MAX_CONDITIONS, MAX_DEPTH, MAX_DIMENSION, MAX_FEATURE_INDEX, MAX_FILE_BYTES,
    MAX_SLOTS, MAX_USED_CATS,
};
use super::parts::{CtrSlot, FloatSlot, Info, OneHotSlot, Parts, ProjectionElement, Split, Tree};
use super::prediction::Objective;

/// Reads a file of at most [`MAX_FILE_BYTES`].
pub(crate) fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let too_large = || {
        format!(
            "larger than the {} MiB limit for a model",
            MAX_FILE_BYTES >> 20
        )
    };
    if file.metadata().is_ok_and(|m| m.len() > MAX_FILE_BYTES) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A binary feature as CatBoost numbers them (`split_index`): float borders,
/// then one-hot values, then CTR borders (`TModelTrees::CalcBinFeatures`).
enum BinFeature {
    Float {
        feature: u64,
        border: f32,
        slot: u16,
        threshold: u16,
    },
    OneHot {
        cat: u64,
        value: i32,
        slot: u16,
        index: u16,
    },
    Ctr {
        border: f32,
        target_border_idx: i64,
        slot: u16,
        threshold: u16,
    },
}

/// A CTR table's identity: type plus projection, as `TModelCtrBase` compares.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct CtrKey {
    kind: CtrKind,
    cats: Vec<u64>,
    floats: Vec<(u64, u32)>,
    one_hots: Vec<(u64, i64)>,
}

struct Compiler<'a> {
    source: &'a str,
    info: Info,
    parts: Parts,
    bins: Vec<BinFeature>,
    /// Per categorical feature index: position among used categoricals.
    cat_position: Vec<Option<u32>>,
    /// Float feature index → (slot, first border, border count).
    float_slot_of: BTreeMap<u64, (u16, usize, usize)>,
    /// Categorical feature index → (one-hot slot, first value, value count).
    one_hot_of: BTreeMap<u64, (u16, usize, usize)>,
    /// Projections laid out so far, to share identical ones.
    projections: BTreeMap<Vec<ProjectionElement>, (u32, u32)>,
    slot_count: usize,
}

pub(crate) fn compile(source: &str, bytes: &[u8]) -> Result<(Info, Parts), ModelError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ModelError::new(
            source,
            "",
            format!(
                "larger than the {} MiB limit for a model",
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    let parsed: JsonModel = json::parse(source, bytes)?;
    let mut c = Compiler {
        source,
        info: Info {
            source: source.to_owned(),
            float_count: 0,
            cat_count: 0,
            dimension: 1,
            objective: Objective::Unknown,
            float_names: Vec::new(),
            cat_names: Vec::new(),
            metadata: BTreeMap::new(),
        },
        parts: Parts::default(),
        bins: Vec::new(),
        cat_position: Vec::new(),
        float_slot_of: BTreeMap::new(),
        one_hot_of: BTreeMap::new(),
        projections: BTreeMap::new(),
        slot_count: 0,
    };
    if parsed.trees.is_some() {
        return Err(c.err(
            "trees",
            "non-symmetric trees (grow_policy Depthwise or Lossguide) are not supported; \
             train with the default SymmetricTree policy",
        ));
    }
    c.model_info(parsed.model_info.as_ref());
    c.float_features(&parsed)?;
    c.cat_features(&parsed)?;
    let tables = c.ctr_tables(parsed.ctr_data.as_ref())?;
    c.ctrs(&parsed, &tables)?;
    let trees = parsed
        .oblivious_trees
        .as_deref()
        .ok_or_else(|| c.err("oblivious_trees", "missing: not a CatBoost JSON model"))?;
    c.trees(trees)?;
    c.scale_and_bias(parsed.scale_and_bias.as_ref())?;
    Ok((c.info, c.parts))
}

fn is_sorted(values: &[f32]) -> bool {
    values.windows(2).all(|w| w[0] <= w[1])
}

impl Compiler<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> ModelError {
        ModelError::new(self.source, field, message)
    }

    fn model_info(&mut self, info: Option<&BTreeMap<String, Value>>) {
        let Some(info) = info else { return };
        for (key, value) in info {
            if let Value::String(s) = value {
                self.info.metadata.insert(key.clone(), s.clone());
            }
        }
        let loss = info
            .get("params")
            .and_then(|p| p.get("loss_function"))
            .and_then(|l| l.get("type"))
            .and_then(Value::as_str);
        self.info.objective = Objective::from_loss(loss);
    }

    fn next_slot(&mut self, field: &str) -> Result<u16, ModelError> {
        if self.slot_count >= MAX_SLOTS {
            return Err(self.err(
                field,
                format!("the model needs more than {MAX_SLOTS} binarized features; this evaluator supports {MAX_SLOTS}"),
            ));
        }
        self.slot_count += 1;
        Ok((self.slot_count - 1) as u16)
    }

    fn borders(&self, field: &str, values: &[f64]) -> Result<Vec<f32>, ModelError> {
        if values.len() > MAX_BORDERS {
            return Err(self.err(
                field,
                format!(
                    "{} borders; at most {MAX_BORDERS} are supported",
                    values.len()
                ),
            ));
        }
        let borders: Vec<f32> = values.iter().map(|&b| b as f32).collect();
        if !is_sorted(&borders) {
            return Err(self.err(field, "borders are not in ascending order"));
        }
        Ok(borders)
    }

    /// Checks a feature list's indexes (bounded, strictly increasing) and
    /// returns the size of the index space they span: the highest index + 1,
    /// as CatBoost's C API counts features.
    fn feature_count(
        &self,
        list: &str,
        indexes: impl Iterator<Item = u64>,
    ) -> Result<usize, ModelError> {
        let mut previous = None;
        for (i, index) in indexes.enumerate() {
            let field = format!("{list}[{i}].feature_index");
            previous = Some(self.feature_index(field, index, previous)?);
        }
        Ok(previous.map_or(0, |p| p as usize + 1))
    }

    fn feature_index(
        &self,
        field: String,
        index: u64,
        previous: Option<u64>,
    ) -> Result<u64, ModelError> {
        if index > MAX_FEATURE_INDEX {
            return Err(self.err(
                field,
                format!("{index} is above the supported maximum {MAX_FEATURE_INDEX}"),
            ));
        }
        if previous.is_some_and(|p| index <= p) {
            return Err(self.err(field, format!("{index}: feature indexes must increase")));
        }
        Ok(index)
    }

    fn float_features(&mut self, parsed: &JsonModel) -> Result<(), ModelError> {
        let features = &parsed.features_info.float_features;
        let count = self.feature_count(
            "features_info.float_features",
            features.iter().map(|f| f.feature_index),
        )?;
        self.info.float_count = count;
        self.info.float_names = vec![String::new(); count];
        for (i, f) in features.iter().enumerate() {
            let at = format!("features_info.float_features[{i}]");
            self.info.float_names[f.feature_index as usize] = f
                .feature_name
                .clone()
                .unwrap_or_else(|| f.feature_id.clone());
            let treatment = f.nan_value_treatment.as_deref().unwrap_or("AsIs");
            let nan_fill = match (treatment, f.has_nans) {
                ("AsIs", _) | ("AsFalse" | "AsTrue", false) => f32::NAN,
                ("AsFalse", true) => f32::NEG_INFINITY,
                ("AsTrue", true) => f32::INFINITY,
                (other, _) => {
                    return Err(self.err(
                        format!("{at}.nan_value_treatment"),
                        format!("unknown value {other:?} (expected AsIs, AsFalse or AsTrue)"),
                    ))
                }
            };
            let borders = self.borders(&format!("{at}.borders"), &f.borders)?;
            if borders.is_empty() {
                continue;
            }
            let slot = self.next_slot(&at)?;
            let start = self.parts.float_borders.len();
            for (k, &border) in borders.iter().enumerate() {
                self.bins.push(BinFeature::Float {
                    feature: f.feature_index,
                    border,
                    slot,
                    threshold: k as u16 + 1,
                });
            }
            self.parts.float_borders.extend_from_slice(&borders);
            self.float_slot_of
                .insert(f.feature_index, (slot, start, borders.len()));
            self.parts.float_slots.push(FloatSlot {
                slot,
                feature: f.feature_index as u32,
                nan_fill,
                borders: (start as u32, self.parts.float_borders.len() as u32),
            });
        }
        Ok(())
    }

    fn cat_features(&mut self, parsed: &JsonModel) -> Result<(), ModelError> {
        let features = &parsed.features_info.categorical_features;
        let count = self.feature_count(
            "features_info.categorical_features",
            features.iter().map(|f| f.feature_index),
        )?;
        self.info.cat_count = count;
        self.info.cat_names = vec![String::new(); count];
        self.cat_position = vec![None; count];
        for (i, f) in features.iter().enumerate() {
            let at = format!("features_info.categorical_features[{i}]");
            self.info.cat_names[f.feature_index as usize] = f
                .feature_name
                .clone()
                .unwrap_or_else(|| f.feature_id.clone());
            let Some(values) = &f.values else { continue };
            let field = format!("{at}.values");
            if values.len() > MAX_BORDERS {
                return Err(self.err(
                    field,
                    format!(
                        "{} values; at most {MAX_BORDERS} are supported",
                        values.len()
                    ),
                ));
            }
            let mut hashes = Vec::with_capacity(values.len());
            for (k, &v) in values.iter().enumerate() {
                let h = i32::try_from(v).map_err(|_| {
                    self.err(
                        format!("{field}[{k}]"),
                        format!("{v} is not a 32-bit categorical hash"),
                    )
                })?;
                if hashes.contains(&h) {
                    return Err(self.err(
                        format!("{field}[{k}]"),
                        format!("duplicate one-hot value {h}"),
                    ));
                }
                hashes.push(h);
            }
            if hashes.is_empty() {
                continue;
            }
            let slot = self.next_slot(&field)?;
            let cat = self.use_cat(&field, f.feature_index)?;
            let start = self.parts.one_hot_values.len();
            for (k, &value) in hashes.iter().enumerate() {
                self.bins.push(BinFeature::OneHot {
                    cat: f.feature_index,
                    value,
                    slot,
                    index: k as u16 + 1,
                });
            }
            self.parts.one_hot_values.extend_from_slice(&hashes);
            self.one_hot_of
                .insert(f.feature_index, (slot, start, hashes.len()));
            self.parts.one_hot_slots.push(OneHotSlot {
                slot,
                cat,
                values: (start as u32, self.parts.one_hot_values.len() as u32),
            });
        }
        Ok(())
    }

    /// The position of categorical feature `index` among the used ones.
    fn use_cat(&mut self, field: &str, index: u64) -> Result<u32, ModelError> {
        let Some(entry) = self.cat_position.get(index as usize).copied() else {
            return Err(self.err(
                field,
                format!("categorical feature {index} is not in features_info.categorical_features"),
            ));
        };
        if let Some(position) = entry {
            return Ok(position);
        }
        if self.parts.used_cats.len() >= MAX_USED_CATS {
            return Err(self.err(
                field,
                format!("the model uses more than {MAX_USED_CATS} categorical features"),
            ));
        }
        let position = self.parts.used_cats.len() as u32;
        self.parts.used_cats.push(index as u32);
        self.cat_position[index as usize] = Some(position);
        Ok(position)
    }

    fn ctr_key(
        &self,
        field: &str,
        kind: CtrKind,
        elements: &[JsonElement],
    ) -> Result<CtrKey, ModelError> {
        let mut key = CtrKey {
            kind,
            cats: Vec::new(),
            floats: Vec::new(),
            one_hots: Vec::new(),
        };
        for (i, e) in elements.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let need = |name: &str, v: Option<u64>| {
                v.ok_or_else(|| self.err(format!("{at}.{name}"), "missing"))
            };
            match e.combination_element.as_str() {
                "cat_feature_value" => key.cats.push(need("cat_feature_index", e.cat_feature_index)?),
                "float_feature" => {
                    let border = e.border.ok_or_else(|| self.err(format!("{at}.border"), "missing"))?;
                    key.floats
                        .push((need("float_feature_index", e.float_feature_index)?, (border as f32).to_bits()));
                }
                "cat_feature_exact_value" => {
                    let value = e.value.ok_or_else(|| self.err(format!("{at}.value"), "missing"))?;
                    key.one_hots.push((need("cat_feature_index", e.cat_feature_index)?, value));
                }
                other => {
                    return Err(self.err(
                        format!("{at}.combination_element"),
                        format!(
                            "unknown element {other:?} (expected cat_feature_value, float_feature or cat_feature_exact_value)"
                        ),
                    ))
                }
            }
        }
        Ok(key)
    }

    fn ctr_tables(
        &mut self,
        data: Option<&BTreeMap<String, JsonCtrTable>>,
    ) -> Result<BTreeMap<CtrKey, u32>, ModelError> {
        let mut by_key = BTreeMap::new();
        for (name, table) in data.into_iter().flatten() {
            let at = format!("ctr_data[{name:?}]");
            let id: JsonCtrKey = serde_json::from_str(name).map_err(|e| {
                self.err(at.clone(), format!("the key is not a CTR identifier: {e}"))
            })?;
            let kind = CtrKind::parse(&id.ctr_type).ok_or_else(|| {
                self.err(at.clone(), format!("unknown CTR type {:?}", id.ctr_type))
            })?;
            let key = self.ctr_key(&at, kind, &id.identifier)?;
            let layout = kind.layout();
            let stride = table.hash_stride;
            let stride_ok = match layout {
                TableLayout::ClassCounts => stride >= 2,
                TableLayout::SumCount => stride == 3,
                TableLayout::Count => stride == 2,
            };
            if !stride_ok || stride as usize > table.hash_map.len().max(3) {
                return Err(self.err(
                    format!("{at}.hash_stride"),
                    format!("{stride} does not fit a {:?} table", kind),
                ));
            }
            let stride = stride as usize;
            if table.hash_map.len() % stride != 0 {
                return Err(self.err(
                    format!("{at}.hash_map"),
                    format!(
                        "{} items are not a whole number of {stride}-item records",
                        table.hash_map.len()
                    ),
                ));
            }
            let denominator = i32::try_from(table.counter_denominator).map_err(|_| {
                self.err(
                    format!("{at}.counter_denominator"),
                    format!("{} is out of range", table.counter_denominator),
                )
            })?;
            let buckets = table.hash_map.len() / stride;
            let counters = stride - 1 - usize::from(layout == TableLayout::SumCount);
            let mut keys = Vec::with_capacity(buckets);
            let mut ints = Vec::with_capacity(buckets * counters);
            let mut sums = Vec::new();
            for (b, record) in table.hash_map.chunks(stride).enumerate() {
                let item = |k: usize| format!("{at}.hash_map[{}]", b * stride + k);
                let hash = match &record[0] {
                    HashItem::Key(s) => s.parse::<u64>().map_err(|_| {
                        self.err(item(0), format!("{s:?} is not a decimal bucket hash"))
                    })?,
                    HashItem::Number(_) => {
                        return Err(self.err(item(0), "expected a bucket hash string"))
                    }
                };
                let number = |k: usize| match record[k] {
                    HashItem::Number(n) => Ok(n),
                    HashItem::Key(_) => Err(self.err(item(k), "expected a number")),
                };
                let integer = |k: usize| {
                    let n = number(k)?;
                    if n.fract() != 0.0 || n < f64::from(i32::MIN) || n > f64::from(i32::MAX) {
                        return Err(self.err(item(k), format!("{n} is not a 32-bit counter")));
                    }
                    Ok(n as i32)
                };
                keys.push(hash);
                if layout == TableLayout::SumCount {
                    sums.push(number(1)? as f32);
                    ints.push(integer(2)?);
                } else {
                    for k in 1..stride {
                        ints.push(integer(k)?);
                    }
                }
            }
            let built = CtrTable::build(layout, counters, &keys, &ints, &sums, denominator)
                .map_err(|dup| {
                    self.err(
                        format!("{at}.hash_map[{}]", dup * stride),
                        format!("duplicate bucket hash {}", keys[dup]),
                    )
                })?;
            if by_key.insert(key, self.parts.tables.len() as u32).is_some() {
                return Err(self.err(at, "duplicate CTR table"));
            }
            self.parts.tables.push(built);
        }
        Ok(by_key)
    }

    fn ctrs(
        &mut self,
        parsed: &JsonModel,
        tables: &BTreeMap<CtrKey, u32>,
    ) -> Result<(), ModelError> {
        for (i, ctr) in parsed.features_info.ctrs.iter().enumerate() {
            let at = format!("features_info.ctrs[{i}]");
            let kind = CtrKind::parse(&ctr.ctr_type).ok_or_else(|| {
                self.err(
                    format!("{at}.ctr_type"),
                    format!(
                        "unknown CTR type {:?} (expected Borders, Buckets, BinarizedTargetMeanValue, \
                         FloatTargetMeanValue, Counter or FeatureFreq)",
                        ctr.ctr_type
                    ),
                )
            })?;
            let key = self.ctr_key(&format!("{at}.elements"), kind, &ctr.elements)?;
            let table = *tables.get(&key).ok_or_else(|| {
                self.err(format!("{at}.elements"), "no ctr_data table for this CTR")
            })?;
            let t = &self.parts.tables[table as usize];
            let classes = t.stride();
            let target_border_idx = ctr.target_border_idx;
            let tbi_ok = match kind {
                CtrKind::Borders => {
                    classes >= 2 && (0..classes as i64).contains(&target_border_idx)
                }
                CtrKind::Buckets => (0..classes as i64).contains(&target_border_idx),
                _ => target_border_idx >= 0,
            };
            if !tbi_ok {
                return Err(self.err(
                    format!("{at}.target_border_idx"),
                    format!("{target_border_idx} does not fit a table of {classes} classes"),
                ));
            }
            let calc = CtrCalc {
                counts: Counts::new(kind, target_border_idx as usize, t),
                prior_num: ctr.prior_numerator as f32,
                prior_denom: ctr.prior_denomerator as f32,
                shift: ctr.shift as f32,
                scale: ctr.scale as f32,
            };
            let projection = self.projection(&at, &key)?;
            let borders = self.borders(&format!("{at}.borders"), &ctr.borders)?;
            let slot = self.next_slot(&at)?;
            for (k, &border) in borders.iter().enumerate() {
                self.bins.push(BinFeature::Ctr {
                    border,
                    target_border_idx,
                    slot,
                    threshold: k as u16 + 1,
                });
            }
            let first_border = self.parts.ctr_borders.len();
            self.parts.ctr_borders.extend_from_slice(&borders);
            self.parts.ctr_slots.push(CtrSlot {
                slot,
                calc,
                table,
                projection,
                borders: (first_border as u32, self.parts.ctr_borders.len() as u32),
            });
        }
        Ok(())
    }

    /// The range of the projection's elements, in CatBoost's hashing order.
    /// CTRs with the same projection share one range, so evaluation hashes
    /// it once.
    fn projection(&mut self, at: &str, key: &CtrKey) -> Result<(u32, u32), ModelError> {
        let field = format!("{at}.elements");
        let first = self.parts.projection.len();
        for &cat in &key.cats {
            let position = self.use_cat(&field, cat)?;
            self.parts.projection.push(ProjectionElement::Cat(position));
        }
        for &(feature, border_bits) in &key.floats {
            let border = f32::from_bits(border_bits);
            let &(slot, start, len) = self.float_slot_of.get(&feature).ok_or_else(|| {
                self.err(&field, format!("float feature {feature} has no borders"))
            })?;
            let k = self.parts.float_borders[start..start + len]
                .iter()
                .position(|&b| b == border)
                .ok_or_else(|| {
                    self.err(
                        &field,
                        format!("{border} is not a border of float feature {feature}"),
                    )
                })?;
            self.parts.projection.push(ProjectionElement::Float {
                slot,
                threshold: k as u16 + 1,
            });
        }
        for &(cat, value) in &key.one_hots {
            let &(slot, start, len) = self.one_hot_of.get(&cat).ok_or_else(|| {
                self.err(
                    &field,
                    format!("categorical feature {cat} is not one-hot encoded"),
                )
            })?;
            let k = self.parts.one_hot_values[start..start + len]
                .iter()
                .position(|&v| i64::from(v) == value)
                .ok_or_else(|| {
                    self.err(
                        &field,
                        format!("{value} is not a one-hot value of feature {cat}"),
                    )
                })?;
            self.parts.projection.push(ProjectionElement::OneHot {
                slot,
                index: k as u16 + 1,
            });
        }
        let elements = self.parts.projection[first..].to_vec();
        if let Some(&range) = self.projections.get(&elements) {
            self.parts.projection.truncate(first);
            return Ok(range);
        }
        let range = (first as u32, self.parts.projection.len() as u32);
        self.projections.insert(elements, range);
        Ok(range)
    }

    fn trees(&mut self, trees: &[json::JsonTree]) -> Result<(), ModelError> {
        let mut dimension = None;
        let mut levels = Vec::new();
        for (t, tree) in trees.iter().enumerate() {
            let at = format!("oblivious_trees[{t}]");
            let depth = tree.splits.len();
            if depth > MAX_DEPTH {
                return Err(self.err(
                    format!("{at}.splits"),
                    format!("depth {depth} exceeds the supported {MAX_DEPTH}"),
                ));
            }
            let width = 1usize << depth;
            let leaves = tree.leaf_values.len();
            let dim = *dimension.get_or_insert(leaves / width);
            if dim == 0 || dim > MAX_DIMENSION || leaves != width * dim {
                return Err(self.err(
                    format!("{at}.leaf_values"),
                    format!("{leaves} values for depth {depth}; expected 2^depth times the model dimension"),
                ));
            }
            let first_split = levels.len() as u32;
            for (s, split) in tree.splits.iter().enumerate() {
                levels.push(self.split(&format!("{at}.splits[{s}]"), split)?);
            }
            self.parts.trees.push(Tree {
                depth: depth as u32,
                first_split,
                first_leaf: self.parts.leaves.len(),
            });
            self.parts.leaves.extend_from_slice(&tree.leaf_values);
        }
        self.info.dimension = dimension.unwrap_or(1);
        self.parts.dimension = self.info.dimension;
        let mut conditions = levels.clone();
        conditions.sort_unstable();
        conditions.dedup();
        if conditions.len() > MAX_CONDITIONS {
            return Err(self.err(
                "oblivious_trees",
                format!(
                    "{} distinct split conditions; this evaluator supports {MAX_CONDITIONS}",
                    conditions.len()
                ),
            ));
        }
        self.parts.levels = levels;
        Ok(())
    }

    fn split(&self, at: &str, split: &json::JsonSplit) -> Result<Split, ModelError> {
        let index = split.split_index;
        let bin = usize::try_from(index)
            .ok()
            .and_then(|i| self.bins.get(i))
            .ok_or_else(|| {
                self.err(
                    format!("{at}.split_index"),
                    format!(
                        "{index} is out of range: the model has {} binary features",
                        self.bins.len()
                    ),
                )
            })?;
        let mismatch = |what: &str| {
            self.err(
                at,
                format!("does not match binary feature {index} ({what}) of features_info"),
            )
        };
        let border_matches = |b: f32| split.border.is_none_or(|x| x as f32 == b);
        match (split.split_type.as_str(), bin) {
            ("FloatFeature", &BinFeature::Float { feature, border, slot, threshold }) => {
                if split.float_feature_index.is_some_and(|f| f != feature) || !border_matches(border) {
                    return Err(mismatch("float feature border"));
                }
                Ok(Split { slot, threshold, equal: false })
            }
            ("OneHotFeature", &BinFeature::OneHot { cat, value, slot, index }) => {
                if split.cat_feature_index.is_some_and(|c| c != cat) || split.value.is_some_and(|v| v != i64::from(value)) {
                    return Err(mismatch("one-hot value"));
                }
                Ok(Split { slot, threshold: index, equal: true })
            }
            ("OnlineCtr", &BinFeature::Ctr { border, target_border_idx, slot, threshold }) => {
                if split.ctr_target_border_idx.is_some_and(|t| t != target_border_idx) || !border_matches(border) {
                    return Err(mismatch("CTR border"));
                }
                Ok(Split { slot, threshold, equal: false })
            }
            ("FloatFeature" | "OneHotFeature" | "OnlineCtr", _) => Err(mismatch(match bin {
                BinFeature::Float { .. } => "a float feature border",
                BinFeature::OneHot { .. } => "a one-hot value",
                BinFeature::Ctr { .. } => "a CTR border",
            })),
            (other, _) => Err(self.err(
                format!("{at}.split_type"),
                format!("unknown split type {other:?} (expected FloatFeature, OneHotFeature or OnlineCtr)"),
            )),
        }
    }

    fn scale_and_bias(&mut self, value: Option<&(f64, Vec<f64>)>) -> Result<(), ModelError> {
        let dim = self.info.dimension;
        let (scale, bias) = match value {
            None => (1.0, Vec::new()),
            Some((scale, bias)) => (*scale, bias.clone()),
        };
        if !scale.is_finite() || bias.iter().any(|b| !b.is_finite()) {
            return Err(self.err("scale_and_bias", "scale and bias must be finite"));
        }
        self.parts.scale = scale;
        self.parts.bias = match bias.len() {
            0 => vec![0.0; dim],
            1 => vec![bias[0]; dim],
            n if n == dim => bias,
            n => {
                return Err(self.err(
                    "scale_and_bias",
                    format!("{n} bias values for a model of dimension {dim}"),
                ))
            }
        };
        Ok(())
    }
}
