//! What a load did: the parts loaded and the warnings for the operator
//! (the public demo key, a stale snapshot, ambiguous verdicts that mode
//! `block` only logs). nginx logs the warnings at every (re)load;
//! `edgeguard check` prints the whole report.

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::config::Options;
use crate::headers::HeaderSet;
use crate::scorer::Scorer;

/// What one load made.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The internal header list and its number of rules, if loaded.
    pub headers: Option<(PathBuf, usize)>,
    /// The models loaded, in scoring order: name, file, own threshold.
    pub models: Vec<(String, PathBuf, Option<f64>)>,
    /// The engine the options pick (`rust`, `lua`, `shadow`).
    pub engine: &'static str,
    /// What the operator must hear of.
    pub warnings: Vec<String>,
    /// The options resolved (defaults filled in), as JSON text.
    resolved: String,
}

impl Report {
    pub(super) fn new(
        options: &Options,
        headers: Option<&HeaderSet>,
        scorer: Option<&Scorer>,
    ) -> Report {
        let paths = options.models.as_deref().unwrap_or_default();
        let models = scorer.map_or_else(Vec::new, |s| {
            s.models()
                .iter()
                .map(|m| {
                    let path = paths
                        .iter()
                        .find(|(n, _)| n == m.name())
                        .map(|(_, p)| p.clone())
                        .unwrap_or_default();
                    (m.name().to_owned(), path, m.threshold())
                })
                .collect()
        });
        Report {
            headers: headers.and_then(|h| {
                let path = options.internal_headers.clone()?;
                Some((path, h.len()))
            }),
            models,
            engine: options.engine().as_str(),
            warnings: options.warnings(),
            resolved: options.resolved_json(),
        }
    }

    /// The resolved options (`Options::resolved_json`, warnings included)
    /// with `loaded`: `internal_headers` (the list's rule count, absent
    /// when none loaded) and `models` (`{"name", "threshold"}` in scoring
    /// order, the model's own threshold or null). What the shim reads once
    /// per load.
    pub fn json(&self) -> String {
        let mut top = match serde_json::from_str::<Value>(&self.resolved) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut loaded = Map::new();
        if let Some((_, n)) = &self.headers {
            loaded.insert("internal_headers".into(), (*n).into());
        }
        let models = self.models.iter().map(|(name, _, t)| {
            let mut m = Map::new();
            m.insert("name".into(), name.as_str().into());
            m.insert("threshold".into(), t.map_or(Value::Null, Value::from));
            Value::Object(m)
        });
        loaded.insert("models".into(), Value::Array(models.collect()));
        top.insert("loaded".into(), Value::Object(loaded));
        Value::Object(top).to_string()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "engine: {}", self.engine)?;
        match &self.headers {
            Some((path, n)) => writeln!(f, "internal_headers: {} ({n} rules)", path.display())?,
            None => writeln!(f, "internal_headers: none")?,
        }
        if self.models.is_empty() {
            writeln!(f, "models: none")?;
        }
        for (name, path, t) in &self.models {
            match t {
                Some(t) => writeln!(f, "model {name}: {} (own threshold {t})", path.display())?,
                None => writeln!(f, "model {name}: {} (no own threshold)", path.display())?,
            }
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}
