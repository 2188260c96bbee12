//! A location: everything one `access{}` resolves to, bound once (at
//! `configure()`, or on a location's first request) and read by every
//! request.

use std::sync::Arc;

use super::policy::Policy;
use super::seen::Clients;
use crate::config::text::{line_room, MAX_G9};
use crate::config::{Options, DEFAULT_LOG_LEVEL};
use crate::features::reasons::DETECTIONS;
use crate::headers::{HeaderSet, ListError};
use crate::hop::Hop;
use crate::rules::{self, Rules};
use crate::scorer::Scorer;
use crate::signals::live::Live;
use crate::verified;

/// Whose models a location scores with.
#[derive(Clone, Debug)]
pub enum Models<'a> {
    /// This library's scorer: its models, in its order, with their own
    /// thresholds.
    Scorer(Arc<Scorer>),
    /// Another engine's (the legacy Lua engine's), which hands its scores
    /// to every run: their names in its scoring order and their own
    /// thresholds. Empty: no models (none configured, or they did not
    /// load): every request is unscored.
    Given(&'a [(&'a str, Option<f64>)]),
}

/// Everything one `access{}` resolves to. Immutable: one location may be
/// shared by any number of threads.
#[derive(Debug)]
pub struct Location {
    pub(super) policy: Policy,
    pub(super) scorer: Option<Arc<Scorer>>,
    /// The internal list with every spelling of the score header names as
    /// extra rules (none: nothing to strip).
    pub(super) strip: Option<HeaderSet>,
    /// The internal list alone: what a subrequest strips.
    pub(super) list: Option<HeaderSet>,
    /// The score header a scored request is given ("": none).
    pub(super) score_header: Box<str>,
    /// The models' names, in scoring order.
    pub(super) names: Box<[Box<str>]>,
    /// `edgeguard_<name>` for each model.
    pub(super) var_names: Box<[Box<str>]>,
    pub(super) vars: bool,
    /// `vars = ["reasons"]`: `$edgeguard_reasons` and `$edgeguard_grade`.
    pub(super) reason_vars: bool,
    /// The challenge or the verified bots are on: `$edgeguard_time` and
    /// `$edgeguard_verified_bot` are set too.
    pub(super) screen: bool,
    pub(super) log_level: u8,
    /// The level a refusal is logged at: the configuration's, whichever
    /// location refused it.
    pub(super) refuse_level: u8,
    /// The text room a request needs besides its method, URI and client.
    pub(super) text_room: usize,
    /// The site rules (none: no rules).
    pub(super) rules: Option<Arc<Rules>>,
    /// For each model the rules name (their order), its index among the
    /// location's models (`usize::MAX`: not bound); none when the two
    /// orders agree.
    pub(super) rule_scores: Option<Box<[usize]>>,
    /// The fleet signals snapshot the location looks keys up in (none:
    /// no lookups, no `$edgeguard_fp_*`).
    pub(super) signals: Option<Arc<Live>>,
    /// The trusted hop in front of nginx (none: every request is judged
    /// as sent).
    pub(super) hop: Option<Hop>,
    /// The client memory and what the location does with it (none: off).
    pub(super) clients: Option<Clients>,
}

/// ` rule=` and ` tag=` with the longest name and tag.
const RULE_ROOM: usize = 11 + rules::limits::MAX_NAME + rules::limits::MAX_TAG;

/// The room of the longest line but the decision line: a refusal's
/// (`internal_left` up to 20 digits) or an answer's.
const OTHER_LINE_ROOM: usize = 256;
/// `$edgeguard_time`: up to 20 digits.
const TIME_ROOM: usize = 20;
/// `$edgeguard_fp_*`'s values: three counts of up to 20 digits, three
/// shares of up to 5 bytes (`0.125`).
const FLEET_ROOM: usize = 3 * 20 + 3 * 5;
/// `$edgeguard_client_*`'s values: four counts of up to 10 digits, a
/// rate of up to 20 digits and two decimals.
const CLIENT_ROOM: usize = 4 * 10 + 23;

impl Location {
    /// Binds `options` to `models` and `list` (the internal header list;
    /// none: no list), which the location extends with every spelling of
    /// the options' score header names. The error is a score header name
    /// the list format refuses (not reached: the options checked it).
    pub fn new(
        options: &Options,
        models: Models<'_>,
        list: Option<&HeaderSet>,
    ) -> Result<Location, ListError> {
        let (scorer, bound): (_, Vec<(String, Option<f64>)>) = match models {
            Models::Scorer(s) => {
                let bound = s
                    .models()
                    .iter()
                    .map(|m| (m.name().to_owned(), m.threshold()))
                    .collect();
                (Some(s), bound)
            }
            Models::Given(m) => (None, m.iter().map(|&(n, t)| (n.to_owned(), t)).collect()),
        };
        let refs: Vec<(&str, Option<f64>)> = bound.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let names: Box<[Box<str>]> = bound.iter().map(|(n, _)| n.as_str().into()).collect();
        let policy = Policy::new(options, &refs);
        let max_name = names.iter().map(|n| n.len()).max().unwrap_or(0);
        // The score header's value (`name=` value `; `), then one line.
        let text_room = names.iter().map(|n| n.len() + 3 + MAX_G9).sum::<usize>()
            + line_room(max_name, verified::MAX_NAME).max(OTHER_LINE_ROOM)
            + TIME_ROOM
            + RULE_ROOM
            + if options.fleet.is_some() {
                FLEET_ROOM
            } else {
                0
            }
            + if options.clients.is_some() {
                CLIENT_ROOM
            } else {
                0
            }
            + if options.vars_set().reasons {
                // `$edgeguard_reasons`: every ID and its comma.
                DETECTIONS.iter().map(|d| d.name.len() + 1).sum()
            } else {
                0
            };
        let rules = options.compiled_rules.clone();
        let rule_scores = rules.as_deref().and_then(|r| {
            let order: Box<[usize]> = r
                .models()
                .iter()
                .map(|m| names.iter().position(|n| n == m).unwrap_or(usize::MAX))
                .collect();
            let same = order.len() == names.len() && order.iter().enumerate().all(|(i, &j)| i == j);
            (!same).then_some(order)
        });
        Ok(Location {
            screen: policy.challenge().is_some() || policy.verified_bots().is_some(),
            policy,
            scorer,
            strip: strip_set(list, &options.stripped_names())?,
            list: list.map(HeaderSet::list_only),
            score_header: options.score_header_name().into(),
            var_names: names
                .iter()
                .map(|n| format!("edgeguard_{n}").into())
                .collect(),
            names,
            vars: options.vars(),
            reason_vars: options.vars_set().reasons,
            log_level: options.log_level.unwrap_or(DEFAULT_LOG_LEVEL),
            refuse_level: options.refuse_log_level().unwrap_or(DEFAULT_LOG_LEVEL),
            text_room,
            rules,
            rule_scores,
            signals: options.fleet.clone(),
            hop: options.hop(),
            clients: Clients::of(options),
        })
    }

    /// The decision rule.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The scorer, when this library scores.
    pub fn scorer(&self) -> Option<&Scorer> {
        self.scorer.as_deref()
    }

    /// How many models the location is bound to.
    pub fn model_count(&self) -> usize {
        self.names.len()
    }

    /// The models' names, in scoring order.
    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// `edgeguard_<name>` for each model, the variables `vars` sets.
    pub fn var_names(&self) -> &[Box<str>] {
        &self.var_names
    }

    /// The strip set: the list and the score header's spellings.
    pub fn strip_set(&self) -> Option<&HeaderSet> {
        self.strip.as_ref()
    }

    /// The score header a scored request is given (empty: none).
    pub fn score_header(&self) -> &str {
        &self.score_header
    }

    /// The site rules, when the location has some.
    pub fn rules(&self) -> Option<&Rules> {
        self.rules.as_deref()
    }

    /// The fleet signals snapshot, when the location looks keys up.
    pub fn signals(&self) -> Option<&Arc<Live>> {
        self.signals.as_ref()
    }

    /// The trusted hop in front of nginx, when `proxy_profile` names one.
    pub fn hop(&self) -> Option<&Hop> {
        self.hop.as_ref()
    }

    /// The client memory, when the location has one.
    pub fn client_memory(&self) -> Option<&crate::clients::ClientMemory> {
        self.clients.as_ref().map(Clients::memory)
    }

    /// The text room a request needs at most, besides its method, URI and
    /// client address.
    pub fn text_room(&self) -> usize {
        self.text_room
    }
}

/// A location's strip set: `list` (none: no internal list) with the score
/// header `names` (one a line) as extra rules; none when both are empty.
fn strip_set(list: Option<&HeaderSet>, names: &str) -> Result<Option<HeaderSet>, ListError> {
    let names = names.as_bytes();
    Ok(Some(match (list, names.is_empty()) {
        (None, true) => return Ok(None),
        (Some(list), true) => list.list_only(),
        (Some(list), false) => list.extend("score_header", names)?,
        (None, false) => HeaderSet::extra_only("score_header", names)?,
    }))
}
