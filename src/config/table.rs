//! A table of options handed over one value at a time, by a caller that has
//! no exact JSON encoder of its own (the Lua shim: lua-cjson writes numbers
//! with 14 digits, and a threshold must arrive exactly as written). The
//! table becomes the JSON the option parser reads; serde_json writes it.

use serde_json::{Map, Number, Value};

/// The deepest a table may nest (the top-level table is depth 0).
pub const MAX_DEPTH: usize = 8;

/// One value handed over.
#[derive(Clone, Copy, Debug)]
pub enum Put<'a> {
    /// A string (its bytes; not UTF-8 is an error naming the option).
    String(&'a [u8]),
    /// A number; NaN and infinities are no JSON value (null, which every
    /// option refuses, naming itself).
    Number(f64),
    /// A boolean.
    Boolean(bool),
    /// A table of keys: the next values put one level deeper are its.
    Object,
    /// A list: the next values put one level deeper are its items.
    Array,
    /// A value no option can take, by its type's name (`function`).
    Other(&'a str),
}

/// The caller put a value where no table is open: a bug in the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotOpen;

/// A table being built: the top-level options, and the tables open inside
/// it, each with its path (`thresholds`, `allow[1]`) for messages.
#[derive(Debug)]
pub struct Table {
    open: Vec<(String, Option<String>, Value)>,
    bad: Option<String>,
}

impl Default for Table {
    fn default() -> Table {
        Table::new()
    }
}

impl Table {
    /// An empty table of options.
    pub fn new() -> Table {
        Table {
            open: vec![(String::new(), None, Value::Object(Map::new()))],
            bad: None,
        }
    }

    /// Puts `v` into the table open at `depth` (0: the top level) under
    /// `key` (none: the next item of a list), closing the deeper ones. The
    /// first value that is no JSON value is remembered for [`Table::json`];
    /// later ones are ignored.
    pub fn put(&mut self, depth: usize, key: Option<&str>, v: Put<'_>) -> Result<(), NotOpen> {
        if depth >= self.open.len() {
            return Err(NotOpen);
        }
        while self.open.len() > depth + 1 {
            self.close();
        }
        if self.bad.is_some() {
            return Ok(());
        }
        let (parent, _, container) = &self.open[depth];
        let path = match (key, container) {
            (Some(k), _) if parent.is_empty() => k.to_owned(),
            (Some(k), _) => format!("{parent}.{k}"),
            (None, Value::Array(items)) => format!("{parent}[{}]", items.len()),
            (None, _) => format!("{parent}[]"),
        };
        let value = match v {
            Put::String(b) => match std::str::from_utf8(b) {
                Ok(s) => Value::from(s),
                Err(_) => return self.refuse(format!("option '{path}' is not valid UTF-8")),
            },
            Put::Number(n) => number(n),
            Put::Boolean(b) => Value::Bool(b),
            Put::Object | Put::Array if self.open.len() > MAX_DEPTH => {
                return self.refuse(format!("option '{path}' is nested too deeply"))
            }
            Put::Object => {
                self.open
                    .push((path, key.map(str::to_owned), Value::Object(Map::new())));
                return Ok(());
            }
            Put::Array => {
                self.open
                    .push((path, key.map(str::to_owned), Value::Array(Vec::new())));
                return Ok(());
            }
            Put::Other(t) => return self.refuse(format!("option '{path}' must not be a {t}")),
        };
        insert(&mut self.open[depth].2, key, value);
        Ok(())
    }

    fn refuse(&mut self, message: String) -> Result<(), NotOpen> {
        self.bad = Some(message);
        Ok(())
    }

    /// Closes the deepest open table into its parent.
    fn close(&mut self) {
        if let Some((_, key, value)) = self.open.pop() {
            if let Some((_, _, parent)) = self.open.last_mut() {
                insert(parent, key.as_deref(), value);
            }
        }
    }

    /// The table's JSON text, or why a value has none.
    pub fn json(&mut self) -> Result<String, String> {
        while self.open.len() > 1 {
            self.close();
        }
        if let Some(bad) = &self.bad {
            return Err(bad.clone());
        }
        Ok(self.open[0].2.to_string())
    }
}

/// A number as JSON: an integral one as an integer (what `%.17g` wrote,
/// which the integer options read), any other exactly; NaN and infinities
/// are no JSON value (null).
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 1e17 {
        // Exact: integral and below 2^63.
        return Value::from(n as i64);
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}

fn insert(container: &mut Value, key: Option<&str>, value: Value) {
    match (container, key) {
        (Value::Object(m), Some(k)) => {
            m.insert(k.to_owned(), value);
        }
        (Value::Array(a), _) => a.push(value),
        // A keyed value in a list, an item in a table: the caller mixed
        // them; the table keeps it under its index.
        (Value::Object(m), None) => {
            m.insert(m.len().to_string(), value);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_nest_and_numbers_stay_exact() {
        let mut t = Table::new();
        let third = 0.1 + 0.2;
        t.put(0, Some("mode"), Put::String(b"block")).unwrap();
        t.put(0, Some("thresholds"), Put::Object).unwrap();
        t.put(1, Some("bot"), Put::Number(third)).unwrap();
        t.put(0, Some("allow"), Put::Array).unwrap();
        t.put(1, None, Put::String(b"10.0.0.0/8")).unwrap();
        t.put(0, Some("vars"), Put::Boolean(true)).unwrap();
        t.put(0, Some("status"), Put::Number(f64::NAN)).unwrap();
        t.put(0, Some("log_level"), Put::Number(7.0)).unwrap();
        t.put(0, Some("big"), Put::Number(1e300)).unwrap();
        let v: Value = serde_json::from_str(&t.json().unwrap()).unwrap();
        assert_eq!(v["log_level"].as_u64(), Some(7), "integral: an integer");
        assert_eq!(v["big"].as_f64(), Some(1e300));
        assert_eq!(v["thresholds"]["bot"].as_f64(), Some(third));
        assert_eq!(v["allow"][0], "10.0.0.0/8");
        assert_eq!(
            (v["vars"].clone(), v["status"].clone()),
            (Value::Bool(true), Value::Null)
        );
        assert_eq!(t.put(3, Some("x"), Put::Boolean(true)), Err(NotOpen));
    }

    #[test]
    fn values_without_json_are_named_by_their_path() {
        let mut t = Table::new();
        t.put(0, Some("allow"), Put::Array).unwrap();
        t.put(1, None, Put::String(b"a")).unwrap();
        t.put(1, None, Put::Other("function")).unwrap();
        assert_eq!(
            t.json().unwrap_err(),
            "option 'allow[1]' must not be a function"
        );
        let mut t = Table::new();
        for d in 0..=MAX_DEPTH {
            t.put(d, Some("a"), Put::Object).unwrap();
        }
        assert_eq!(
            t.json().unwrap_err(),
            format!("option '{}' is nested too deeply", ["a"; 9].join("."))
        );
        let mut t = Table::new();
        t.put(0, Some("s"), Put::String(b"\xff")).unwrap();
        assert!(t.json().unwrap_err().contains("'s' is not valid UTF-8"));
    }
}
