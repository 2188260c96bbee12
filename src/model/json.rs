//! The JSON export of a CatBoost model (`save_model(path, format="json")`), as
//! serde structs. Field names and layout follow CatBoost's
//! `model_export/json_model_helpers.cpp`. Only the shape is checked here;
//! the `compile` module checks the meaning.

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::error::ModelError;

#[derive(Deserialize)]
pub(crate) struct JsonModel {
    #[serde(default)]
    pub(crate) model_info: Option<BTreeMap<String, Value>>,
    pub(crate) oblivious_trees: Option<Vec<JsonTree>>,
    /// Non-symmetric trees: recognised only to reject them clearly.
    pub(crate) trees: Option<IgnoredAny>,
    pub(crate) features_info: JsonFeaturesInfo,
    #[serde(default)]
    pub(crate) ctr_data: Option<BTreeMap<String, JsonCtrTable>>,
    #[serde(default)]
    pub(crate) scale_and_bias: Option<(f64, Vec<f64>)>,
}

#[derive(Deserialize)]
pub(crate) struct JsonTree {
    pub(crate) leaf_values: Vec<f64>,
    pub(crate) splits: Vec<JsonSplit>,
}

#[derive(Deserialize)]
pub(crate) struct JsonSplit {
    pub(crate) split_index: u64,
    pub(crate) split_type: String,
    pub(crate) border: Option<f64>,
    pub(crate) float_feature_index: Option<u64>,
    pub(crate) cat_feature_index: Option<u64>,
    pub(crate) value: Option<i64>,
    pub(crate) ctr_target_border_idx: Option<i64>,
}

#[derive(Deserialize)]
pub(crate) struct JsonFeaturesInfo {
    #[serde(default)]
    pub(crate) float_features: Vec<JsonFloatFeature>,
    #[serde(default)]
    pub(crate) categorical_features: Vec<JsonCatFeature>,
    #[serde(default)]
    pub(crate) ctrs: Vec<JsonCtr>,
}

#[derive(Deserialize)]
pub(crate) struct JsonFloatFeature {
    pub(crate) feature_index: u64,
    #[serde(default)]
    pub(crate) borders: Vec<f64>,
    #[serde(default)]
    pub(crate) has_nans: bool,
    pub(crate) nan_value_treatment: Option<String>,
    #[serde(default)]
    pub(crate) feature_id: String,
    pub(crate) feature_name: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct JsonCatFeature {
    pub(crate) feature_index: u64,
    #[serde(default)]
    pub(crate) feature_id: String,
    pub(crate) feature_name: Option<String>,
    /// Present for one-hot encoded features: the hashes of the values.
    pub(crate) values: Option<Vec<i64>>,
}

#[derive(Deserialize)]
pub(crate) struct JsonCtr {
    pub(crate) borders: Vec<f64>,
    pub(crate) ctr_type: String,
    pub(crate) elements: Vec<JsonElement>,
    pub(crate) prior_numerator: f64,
    /// Spelled this way by CatBoost.
    pub(crate) prior_denomerator: f64,
    pub(crate) shift: f64,
    pub(crate) scale: f64,
    pub(crate) target_border_idx: i64,
}

/// One element of a CTR projection (`elements`, or `identifier` in a
/// `ctr_data` key).
#[derive(Deserialize)]
pub(crate) struct JsonElement {
    pub(crate) combination_element: String,
    pub(crate) cat_feature_index: Option<u64>,
    pub(crate) float_feature_index: Option<u64>,
    pub(crate) border: Option<f64>,
    pub(crate) value: Option<i64>,
}

/// A `ctr_data` key: `{"identifier": [elements], "type": "Borders"}`.
#[derive(Deserialize)]
pub(crate) struct JsonCtrKey {
    pub(crate) identifier: Vec<JsonElement>,
    #[serde(rename = "type")]
    pub(crate) ctr_type: String,
}

#[derive(Deserialize)]
pub(crate) struct JsonCtrTable {
    #[serde(default)]
    pub(crate) counter_denominator: i64,
    /// Flat records of `hash_stride` items: the bucket hash as a decimal
    /// string, then the counters (integers, or a float sum and a count).
    pub(crate) hash_map: Vec<HashItem>,
    pub(crate) hash_stride: u64,
}

/// An item of `hash_map`: bucket hashes are strings (they do not fit a JSON
/// double), counters are numbers.
pub(crate) enum HashItem {
    Key(String),
    Number(f64),
}

/// By hand rather than `#[serde(untagged)]`: untagged enums build (and
/// format) an error for every variant that does not match, which made
/// loading large CTR tables several times slower.
impl<'de> Deserialize<'de> for HashItem {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemVisitor;

        impl serde::de::Visitor<'_> for ItemVisitor {
            type Value = HashItem;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a number")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HashItem, E> {
                Ok(HashItem::Key(v.to_owned()))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<HashItem, E> {
                Ok(HashItem::Number(v as f64))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HashItem, E> {
                Ok(HashItem::Number(v as f64))
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<HashItem, E> {
                Ok(HashItem::Number(v))
            }
        }

        deserializer.deserialize_any(ItemVisitor)
    }
}

/// Parses `bytes` as a JSON model, naming the failing field on error.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(
    source: &str,
    bytes: &[u8],
) -> Result<T, ModelError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        ModelError::new(source, field, plain_words(&e.inner().to_string()))
    })?;
    de.end()
        .map_err(|e| ModelError::new(source, "", plain_words(&e.to_string())))?;
    Ok(value)
}

/// serde names Rust types in its messages; users of a model file think in
/// JSON types.
fn plain_words(message: &str) -> String {
    let mut out = message.to_owned();
    for (rust, json) in [
        ("expected f64", "expected a number"),
        ("expected u64", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected an array"),
        ("expected a tuple of size 2", "expected [scale, [bias...]]"),
        ("expected a map", "expected an object"),
    ] {
        out = out.replace(rust, json);
    }
    if let Some(at) = out.find("expected struct ") {
        let end = out[at..].find(" at line").map_or(out.len(), |e| at + e);
        out.replace_range(at..end, "expected an object");
    }
    out
}
