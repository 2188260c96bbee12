//! The decision rule: the gate's decide stage, the one nginx (through the
//! C ABI) and replay both run.
//!
//! The models are taken in scorer order; the first whose score is at least
//! its threshold (the configured one, else the model's own; a model with
//! neither never flags) flags the request. A flagged request, unless the
//! mode is `off`, gets [`Outcome::Allow`] when the client address lies in
//! `allow`, otherwise the mode's action. Everything else passes. A request
//! that could not be scored passes, or is refused when `fail_closed` is set
//! and models are configured ([`Policy::refuses_unscored`]).
//!
//! [`Policy::decide_request`] adds what the request itself shows, for the
//! challenge and the verified bots:
//! - a request claiming a verified bot from one of its prefixes gets
//!   [`Outcome::Verified`] (it passes, whatever its scores); the same claim
//!   from elsewhere is a fake and flagged whatever the models say
//!   ([`Decision::bot`] says which), and the mode then applies;
//! - a flagged request (not allowlisted, mode not `off`) with a valid
//!   clearance cookie gets [`Outcome::Cleared`];
//! - in mode `challenge` a flagged request that may get the page
//!   (`challenge_response`: by default a navigation) gets
//!   [`Outcome::Challenge`] (the page), any other flagged request
//!   [`Outcome::Block`], which the respond stage turns into
//!   [`Outcome::ChallengeRequired`] and a problem document.
//!
//! The cookie is checked on every request that carries one while a
//! challenge is configured, flagged or not, so that [`Decision::clearance`]
//! counts every clearance seen.
//!
//! A flagged request is graded by its reasons (the detection IDs of
//! `features::reasons`): *certain* when one of them is, or a fake bot
//! claim, or a model flagged it with no ID to name (`model_only`);
//! *ambiguous* when every reason is one a hop in front of a person can
//! cause. Mode `block` gives a certain verdict the status; an ambiguous
//! one gets what `ambiguous` says ([`Policy::mode_for`]): by default the
//! challenge, as in mode `challenge` (the page for a navigation, a problem
//! document for the rest), or a log line when no challenge is configured.

use std::net::IpAddr;
use std::sync::Arc;

use crate::challenge::{self, Challenge, Clearance};
use crate::config::{Ambiguous, Mode, Options};
use crate::features::reasons::Id;
use crate::features::{Grade, Reasons, Request};
use crate::net::{addr_from_text, Cidr};
use crate::outcome::Outcome;
use crate::verified::{Verdict, VerifiedBots};

/// The outcome of [`Policy::decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What the request gets.
    pub action: Outcome,
    /// The model that flagged it, by scorer index (also set when the mode
    /// is `off` and the action is `pass`).
    pub flagged_by: Option<usize>,
    /// The verified bot the User-Agent claims, and whether the address
    /// agrees (a [`Verdict::Fake`] flags the request).
    pub bot: Option<Verdict>,
    /// What the clearance cookie said ([`Clearance::Absent`] without a
    /// challenge configured).
    pub clearance: Clearance,
    /// Why it was flagged (empty: not flagged).
    pub reasons: Reasons,
    /// How sure the verdict is ([`Grade::None`]: not flagged).
    pub grade: Grade,
}

impl Decision {
    /// A decision from the models alone.
    pub fn new(action: Outcome, flagged_by: Option<usize>) -> Decision {
        Decision {
            action,
            flagged_by,
            bot: None,
            clearance: Clearance::Absent,
            reasons: Reasons::NONE,
            grade: Grade::None,
        }
    }
}

/// The decision rule bound to one list of models: thresholds resolved per
/// model, mode, allowlist, status.
#[derive(Clone, Debug)]
pub struct Policy {
    mode: Mode,
    ambiguous: Ambiguous,
    /// One per model, in scoring order: the configured threshold, else the
    /// model's own.
    thresholds: Vec<Option<f64>>,
    allow: Vec<Cidr>,
    status: u16,
    refuses_unscored: bool,
    challenge: Option<Arc<Challenge>>,
    bots: Option<Arc<VerifiedBots>>,
}

impl Policy {
    /// Binds `options` to the models a scorer holds, in its scoring order:
    /// `(name, the model's own threshold)`. A threshold naming none of them
    /// is not an error here: [`Options`] checked the names against the
    /// configured ones, and an engine may hold only some (shadow mode with
    /// `lua_models`).
    pub fn new(options: &Options, models: &[(&str, Option<f64>)]) -> Policy {
        Policy {
            mode: options.mode(),
            ambiguous: options.ambiguous(),
            thresholds: models
                .iter()
                .map(|&(name, own)| options.threshold(name).or(own))
                .collect(),
            allow: options.allow.clone().unwrap_or_default(),
            status: options.status(),
            refuses_unscored: options.fail_closed() && options.models_wanted(),
            challenge: options.challenge().map(Arc::new),
            bots: options.bots.clone(),
        }
    }

    /// Decides one request from its scores (in scoring order) and its
    /// textual client address (`$remote_addr`). Never allocates.
    pub fn decide(&self, scores: &[f64], client: &[u8]) -> Decision {
        self.decide_with(scores, || addr_from_text(client))
    }

    /// [`Policy::decide`] for a parsed address (none: in no `allow` block).
    pub fn decide_addr(&self, scores: &[f64], client: Option<IpAddr>) -> Decision {
        self.decide_with(scores, || client)
    }

    /// The address is only looked at when a request is flagged.
    fn decide_with(&self, scores: &[f64], client: impl FnOnce() -> Option<IpAddr>) -> Decision {
        let flagged_by = scores
            .iter()
            .zip(&self.thresholds)
            .position(|(s, t)| matches!(t, Some(t) if s >= t));
        let action = match flagged_by {
            None => Outcome::Pass,
            Some(_) => self.act(self.mode, client),
        };
        Decision::new(action, flagged_by)
    }

    /// What a flagged request gets under `mode`. Without the request, no
    /// page can be chosen: the status.
    fn act(&self, mode: Mode, client: impl FnOnce() -> Option<IpAddr>) -> Outcome {
        match mode {
            Mode::Off => Outcome::Pass,
            _ if self.allows_addr(client()) => Outcome::Allow,
            Mode::Block | Mode::Challenge => Outcome::Block,
            Mode::Log => Outcome::Log,
        }
    }

    /// The mode a flagged request of `grade` is handled in: the configured
    /// one, except for an ambiguous verdict in mode `block`, which gets
    /// what `ambiguous` says (the challenge; logged without one).
    pub fn mode_for(&self, grade: Grade) -> Mode {
        match (self.mode, grade) {
            (Mode::Block, Grade::Ambiguous) => match self.ambiguous {
                Ambiguous::Block => Mode::Block,
                Ambiguous::Challenge if self.challenge.is_some() => Mode::Challenge,
                Ambiguous::Challenge | Ambiguous::Log => Mode::Log,
            },
            (mode, _) => mode,
        }
    }

    /// Decides one request from its scores (in scoring order; `None`: not
    /// scored), the request itself (User-Agent, cookies, navigation), its
    /// parsed client address and the current Unix time, which the caller
    /// gives (nginx's `ngx.time()`, replay's recorded time) so that a
    /// replayed request is judged as nginx judged it. `reasons` gives the
    /// request's detection IDs, asked for only when it is flagged. Returns
    /// `None` for an unscored request that [`Policy::refuses_unscored`]
    /// and claims no bot. Never allocates.
    pub fn decide_request(
        &self,
        scores: Option<&[f64]>,
        req: &Request<'_>,
        client: Option<IpAddr>,
        now: u64,
        reasons: impl FnOnce() -> Reasons,
    ) -> Option<Decision> {
        let clearance = self
            .challenge
            .as_ref()
            .map_or(Clearance::Absent, |c| c.clearance(req, client, now));
        self.decide_judged(scores, req, client, clearance, reasons)
    }

    /// [`Policy::decide_request`] for a request whose clearance cookie the
    /// caller judged already ([`Clearance::Absent`] without a challenge
    /// configured): the gate judges it once per request and shares the
    /// verdict with the rules and the challenge's exits.
    pub fn decide_judged(
        &self,
        scores: Option<&[f64]>,
        req: &Request<'_>,
        client: Option<IpAddr>,
        clearance: Clearance,
        reasons: impl FnOnce() -> Reasons,
    ) -> Option<Decision> {
        let bot = self
            .bots
            .as_ref()
            .and_then(|b| b.judge(challenge::user_agent(req), client));
        let mut d = match scores {
            Some(s) => self.decide_addr(s, client),
            None if self.refuses_unscored && bot.is_none() => return None,
            None => Decision::new(Outcome::Pass, None),
        };
        d.bot = bot;
        d.clearance = clearance;
        let fake = matches!(bot, Some(Verdict::Fake(_)));
        if matches!(bot, Some(Verdict::Verified(_))) {
            d.action = Outcome::Verified;
        } else if fake || d.flagged_by.is_some() {
            let mut r = reasons();
            if fake {
                r = r.with(Id::BotClaimFake);
            }
            if r.is_empty() {
                r = r.with(Id::ModelOnly);
            }
            d.reasons = r;
            d.grade = r.grade();
            // Flagged whatever the models said; the grade's mode applies.
            d.action = self.act(self.mode_for(d.grade), || client);
        }
        if matches!(d.action, Outcome::Block | Outcome::Log) && clearance.is_accepted() {
            d.action = Outcome::Cleared;
        } else if d.action == Outcome::Block
            && self.mode_for(d.grade) == Mode::Challenge
            && self
                .challenge
                .as_ref()
                .is_some_and(|c| c.response.wants_page(req))
        {
            d.action = Outcome::Challenge;
        }
        Some(d)
    }

    /// Whether `req` is an answer to the challenge, which the caller
    /// handles itself ([`Challenge::answer`]) instead of deciding and
    /// proxying it: a request to [`challenge::ENDPOINT`] while a challenge
    /// is configured.
    pub fn answers(&self, req: &Request<'_>) -> bool {
        self.challenge.is_some() && challenge::is_endpoint(req.uri())
    }

    /// The challenge, when `challenge_secret` is configured.
    pub fn challenge(&self) -> Option<&Challenge> {
        self.challenge.as_deref()
    }

    /// The verified bots, when `verified_bots` is configured.
    pub fn verified_bots(&self) -> Option<&VerifiedBots> {
        self.bots.as_deref()
    }

    /// Whether the textual address lies in an `allow` block. An address
    /// that does not parse is in none.
    pub fn allows(&self, client: &[u8]) -> bool {
        !self.allow.is_empty() && self.allows_addr(addr_from_text(client))
    }

    fn allows_addr(&self, client: Option<IpAddr>) -> bool {
        client.is_some_and(|a| self.allow.iter().any(|c| c.contains(a)))
    }

    /// Whether [`Policy::decide_request`] looks at the client address at
    /// all: an `allow` list, verified bots or the challenge. Without them it
    /// decides alike with or without one, so a caller holding the address
    /// as text (replay) need not parse it.
    pub fn reads_client(&self) -> bool {
        !self.allow.is_empty() || self.bots.is_some() || self.challenge.is_some()
    }

    /// Whether a request that could not be scored (models not loaded,
    /// scoring failed) is refused: `fail_closed` with models configured.
    pub fn refuses_unscored(&self) -> bool {
        self.refuses_unscored
    }

    /// The configured mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The threshold in force for model `i`.
    pub fn threshold(&self, i: usize) -> Option<f64> {
        self.thresholds.get(i).copied().flatten()
    }

    /// How many models the policy was bound to.
    pub fn model_count(&self) -> usize {
        self.thresholds.len()
    }

    /// The status blocked requests get.
    pub fn status(&self) -> u16 {
        self.status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: Mode, thresholds: &[Option<f64>], allow: &[&str]) -> Policy {
        Policy {
            mode,
            ambiguous: Ambiguous::Challenge,
            thresholds: thresholds.to_vec(),
            allow: allow.iter().map(|a| Cidr::parse(a).unwrap()).collect(),
            status: 403,
            refuses_unscored: false,
            challenge: None,
            bots: None,
        }
    }

    #[test]
    fn decisions_follow_the_lua_rule() {
        let p = policy(Mode::Block, &[None, Some(0.5), Some(0.2)], &["10.0.0.0/8"]);
        let d = |scores: &[f64], client: &str| p.decide(scores, client.as_bytes());
        // A model without a threshold never flags; the first flagging model wins.
        assert_eq!(d(&[1.0, 0.4, 0.1], "192.0.2.1").action, Outcome::Pass);
        assert_eq!(
            d(&[1.0, 0.5, 0.9], "192.0.2.1"),
            Decision::new(Outcome::Block, Some(1))
        );
        assert_eq!(d(&[0.0, 0.1, 0.2], "192.0.2.1").flagged_by, Some(2));
        assert_eq!(d(&[0.0, 0.9, 0.0], "10.1.1.1").action, Outcome::Allow);
        assert_eq!(d(&[0.0, 0.9, 0.0], "not-an-ip").action, Outcome::Block);
        assert_eq!(
            p.decide_addr(&[0.0, 0.9, 0.0], Some("10.2.3.4".parse().unwrap()))
                .action,
            Outcome::Allow
        );
        assert_eq!(p.decide_addr(&[0.0, 0.9, 0.0], None).action, Outcome::Block);
        let log = policy(Mode::Log, &[Some(0.5)], &[]);
        assert_eq!(log.decide(&[0.7], b"10.1.1.1").action, Outcome::Log);
        let off = policy(Mode::Off, &[Some(0.5)], &["10.0.0.0/8"]);
        assert_eq!(
            off.decide(&[0.7], b"10.1.1.1"),
            Decision::new(Outcome::Pass, Some(0))
        );
    }

    /// Without an allow list, verified bots or the challenge the address
    /// changes no decision, which is what lets replay skip parsing it; with
    /// an allow list it does, and `reads_client` says so.
    #[test]
    fn the_client_address_matters_only_when_read() {
        let headers = [crate::headers::Header::new(b"accept", b"text/html")];
        let req = Request::new(b"GET", b"/", 11, b"10.1.1.1", &headers);
        let addr = Some("10.1.1.1".parse().unwrap());
        for mode in [Mode::Block, Mode::Log, Mode::Off, Mode::Challenge] {
            let p = policy(mode, &[Some(0.5)], &[]);
            assert!(!p.reads_client());
            for scores in [None, Some(&[0.9][..]), Some(&[0.1][..])] {
                assert_eq!(
                    p.decide_request(scores, &req, None, 0, Reasons::default),
                    p.decide_request(scores, &req, addr, 0, Reasons::default),
                    "{mode:?} {scores:?}"
                );
            }
            let allowing = policy(mode, &[Some(0.5)], &["10.0.0.0/8"]);
            assert!(allowing.reads_client());
        }
        let p = policy(Mode::Block, &[Some(0.5)], &["10.0.0.0/8"]);
        assert_ne!(
            p.decide_request(Some(&[0.9]), &req, None, 0, Reasons::default),
            p.decide_request(Some(&[0.9]), &req, addr, 0, Reasons::default)
        );
    }
}
