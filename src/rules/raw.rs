//! The rules file as written: serde structures that refuse unknown fields,
//! so that a misspelt condition (`"metod"`) is an error naming the field,
//! never a condition silently left out. `compile` turns them into rules.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    /// Free text for people; ignored.
    #[serde(default, rename = "comment")]
    pub(crate) _comment: Option<serde_json::Value>,
    /// Named address lists the rules' `client` conditions refer to.
    #[serde(default)]
    pub(crate) lists: BTreeMap<String, List>,
    /// The rules, in evaluation order; presets expand in place.
    pub(crate) rules: Vec<Rule>,
}

/// A named address list: inline, or a file.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum List {
    /// `["192.0.2.0/24", "2001:db8::/32"]`
    Inline(Vec<String>),
    /// `{"file": "office.txt"}`
    File(ListFile),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListFile {
    pub(crate) file: String,
}

/// One entry of `rules`: a rule, or `{"preset": NAME}` (then nothing
/// else; `compile` checks). One struct rather than an untagged enum, so
/// that an error inside a rule keeps its field path.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rule {
    /// A preset's name: this entry is that preset's rules.
    #[serde(default)]
    pub(crate) preset: Option<String>,
    /// Logged as `$edgeguard_rule` and in replay's report; default
    /// `rule-<index>`.
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// Conditions, all of which must hold; none: every request.
    #[serde(default)]
    pub(crate) when: Option<When>,
    #[serde(default)]
    pub(crate) action: Option<String>,
    /// The response status of `block`.
    #[serde(default)]
    pub(crate) status: Option<u16>,
    /// A short string for logs and upstream routing.
    #[serde(default)]
    pub(crate) tag: Option<String>,
    /// Free text for people; ignored.
    #[serde(default, rename = "comment")]
    pub(crate) _comment: Option<serde_json::Value>,
}

/// A rule's conditions.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct When {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) method: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) query: Option<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) header: Option<OneOrMany<Header>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_agent: Option<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bot: Option<Bot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tls: Option<Tls>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) score: Option<OneOrMany<Score>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) signal: Option<Signal>,
    // What the client memory holds of the client (docs/behaviour.md):
    // each a range of one number.
    #[serde(rename = "client.navigations", skip_serializing_if = "Option::is_none")]
    pub(crate) client_navigations: Option<Range>,
    #[serde(
        rename = "client.subresources",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_subresources: Option<Range>,
    #[serde(
        rename = "client.subresource_ratio",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_subresource_ratio: Option<Range>,
    #[serde(rename = "client.paths", skip_serializing_if = "Option::is_none")]
    pub(crate) client_paths: Option<Range>,
    #[serde(rename = "client.rate", skip_serializing_if = "Option::is_none")]
    pub(crate) client_rate: Option<Range>,
    #[serde(rename = "client.gap_cv", skip_serializing_if = "Option::is_none")]
    pub(crate) client_gap_cv: Option<Range>,
    #[serde(
        rename = "client.cookie_issued",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_cookie_issued: Option<Range>,
    #[serde(
        rename = "client.cookie_returned",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_cookie_returned: Option<Range>,
    #[serde(
        rename = "client.challenges_solved",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_challenges_solved: Option<Range>,
    #[serde(rename = "client.age", skip_serializing_if = "Option::is_none")]
    pub(crate) client_age: Option<Range>,
    #[serde(
        rename = "client.direct_navigations",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_direct_navigations: Option<Range>,
    #[serde(
        rename = "client.direct_ratio",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_direct_ratio: Option<Range>,
}

impl When {
    /// The `client.*` conditions given, in [`super::cond::ClientMeasure`]
    /// order.
    pub(crate) fn client_ranges(&self) -> [Option<&Range>; 12] {
        [
            self.client_navigations.as_ref(),
            self.client_subresources.as_ref(),
            self.client_subresource_ratio.as_ref(),
            self.client_paths.as_ref(),
            self.client_rate.as_ref(),
            self.client_gap_cv.as_ref(),
            self.client_cookie_issued.as_ref(),
            self.client_cookie_returned.as_ref(),
            self.client_challenges_solved.as_ref(),
            self.client_age.as_ref(),
            self.client_direct_navigations.as_ref(),
            self.client_direct_ratio.as_ref(),
        ]
    }
}

/// A test of some text: exactly one of the forms, optionally ignoring
/// ASCII case.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Text {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exact: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prefix: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) suffix: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) contains: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) regex: Option<String>,
    #[serde(default)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) nocase: bool,
}

/// A header condition: its name and presence, or a test of its value.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header {
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) present: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) once: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exact: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prefix: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) suffix: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) contains: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) regex: Option<String>,
    #[serde(default)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) nocase: bool,
}

impl Header {
    /// The value test, if the condition has one.
    pub(crate) fn text(&self) -> Option<Text> {
        let t = Text {
            exact: self.exact.clone(),
            prefix: self.prefix.clone(),
            suffix: self.suffix.clone(),
            contains: self.contains.clone(),
            regex: self.regex.clone(),
            nocase: self.nocase,
        };
        let any = t.exact.is_some()
            || t.prefix.is_some()
            || t.suffix.is_some()
            || t.contains.is_some()
            || t.regex.is_some();
        any.then_some(t)
    }
}

/// A verified-bot condition.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Bot {
    /// `verified` (default), `fake` or `any`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) verdict: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) category: Option<OneOrMany<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<OneOrMany<String>>,
}

/// A TLS condition.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tls {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ja4: Option<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) family: Option<OneOrMany<String>>,
}

/// A score range of one model: `at_least <= score < below`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Score {
    pub(crate) model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) at_least: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) below: Option<f64>,
}

/// A fleet signal condition (docs/rules.md): which key, whether the fleet
/// knows it, and ranges of its counts and shares.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Signal {
    /// `ja4`, `headers` or `any` (default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    /// `false`: the fleet has no entry for the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) known: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) requests: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prefixes: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_agents: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) flagged: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) solved: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cleared: Option<Range>,
}

/// `min <= x <= max`, either bound optional.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Range {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max: Option<f64>,
}

/// One value or a list of them: `"GET"` or `["GET", "HEAD"]`.
#[derive(Clone, Debug)]
pub(crate) struct OneOrMany<T>(pub(crate) Vec<T>);

impl<T: Serialize> Serialize for OneOrMany<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(s),
            many => many.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one value or an array of them")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = seq.next_element()? {
                    out.push(x);
                }
                Ok(OneOrMany(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|x| OneOrMany(vec![x]))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                T::deserialize(de::value::StrDeserializer::new(s)).map(|x| OneOrMany(vec![x]))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Err(de::Error::invalid_type(de::Unexpected::Bool(b), &self))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Err(de::Error::invalid_type(de::Unexpected::Signed(n), &self))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Err(de::Error::invalid_type(de::Unexpected::Unsigned(n), &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
                Err(de::Error::invalid_type(de::Unexpected::Float(n), &self))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Err(de::Error::invalid_type(de::Unexpected::Unit, &self))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}
