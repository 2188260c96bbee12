//! Which features an extraction computes: the groups of features no model
//! of a scorer reads are left out ([`Needs`]), so a request pays for what
//! the loaded models use and not for every schema this build knows.
//!
//! Only groups outside schema 4 are optional: what the reasons
//! ([`super::reasons`]), the fleet's headers key (`ua_family`,
//! `header_order`) and schema 4 itself read is always computed, whatever
//! the models. A left-out feature gets the value of a fresh
//! [`FeatureVector`](super::FeatureVector), NaN or an empty string, so a
//! reused vector holds nothing of the request before.

use super::schema::{Cat, Float};

/// The optional groups of features one extraction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// `path_depth`, `query_arg_count`, `uri_ext`: the request target
    /// split into path and query (schemas 1 to 3).
    pub target: bool,
    /// `client_ipv6`: the client address's family (schemas 1 to 3).
    pub address: bool,
    /// `accept_language_primary` (schemas 1 to 3).
    pub language: bool,
    /// `accept_language_count`, `accept_encoding_count`: items of the two
    /// lists (schemas 1 to 3).
    pub lists: bool,
    /// `order_inversions`: the header order against hand-written browser
    /// orders (schema 1).
    pub inversions: bool,
}

impl Needs {
    /// No optional group: what a scorer of schema-4 models extracts.
    pub const NONE: Needs = Needs {
        target: false,
        address: false,
        language: false,
        lists: false,
        inversions: false,
    };

    /// Every feature: what `edgeguard features` prints and training reads.
    pub const ALL: Needs = Needs {
        target: true,
        address: true,
        language: true,
        lists: true,
        inversions: true,
    };

    /// What models reading `floats` and `cats` need: each group one of
    /// them reads.
    pub fn of(floats: &[Float], cats: &[Cat]) -> Needs {
        let f = |x: Float| floats.contains(&x);
        let c = |x: Cat| cats.contains(&x);
        Needs {
            target: f(Float::PathDepth) || f(Float::QueryArgCount) || c(Cat::UriExt),
            address: f(Float::ClientIpv6),
            language: c(Cat::AcceptLanguagePrimary),
            lists: f(Float::AcceptLanguageCount) || f(Float::AcceptEncodingCount),
            inversions: f(Float::OrderInversions),
        }
    }

    /// The union of two: what either needs.
    pub fn or(self, other: Needs) -> Needs {
        Needs {
            target: self.target || other.target,
            address: self.address || other.address,
            language: self.language || other.language,
            lists: self.lists || other.lists,
            inversions: self.inversions || other.inversions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::{CAT_FEATURES, FLOAT_FEATURES, SCHEMA_VERSIONS};
    use super::*;

    fn of_schema(version: u32) -> Needs {
        let floats: Vec<Float> = Float::ALL
            .into_iter()
            .filter(|f| FLOAT_FEATURES[f.index()].in_schema(version))
            .collect();
        let cats: Vec<Cat> = Cat::ALL
            .into_iter()
            .filter(|c| CAT_FEATURES[c.index()].in_schema(version))
            .collect();
        Needs::of(&floats, &cats)
    }

    /// A model of schema 4 needs no optional group (they are what schema
    /// 4 left out); one of every earlier schema needs all but the
    /// hand-written order, which only schema 1 reads.
    #[test]
    fn optional_groups_follow_the_schemas() {
        assert_eq!(of_schema(4), Needs::NONE);
        assert_eq!(of_schema(1), Needs::ALL);
        for v in [2, 3] {
            assert_eq!(
                of_schema(v),
                Needs {
                    inversions: false,
                    ..Needs::ALL
                },
                "schema {v}"
            );
        }
        assert_eq!(SCHEMA_VERSIONS, [1, 2, 3, 4]);
        assert_eq!(of_schema(4).or(of_schema(1)), Needs::ALL);
    }
}
