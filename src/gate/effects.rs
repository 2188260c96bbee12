//! What the gate made of a request: everything nginx must do with it (and
//! what replay reports of it), borrowed from the location and the scratch.

use super::location::Location;
use super::seen::ClientSeen;
use crate::challenge::AnswerResult;
use crate::challenge::Clearance;
use crate::config::text::Span;
use crate::features::{Grade, Reasons};
use crate::outcome::Outcome;
use crate::scorer::ScoreError;
use crate::signals::live::Lookup;
use crate::verified::Verdict;

/// How the request ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit<'a> {
    /// It goes on to the upstream.
    Continue,
    /// Answered with this status and nginx's own page for it.
    Status(u16),
    /// Answered with this body: the challenge page, or a problem document
    /// (`application/problem+json`) for a request that must not get it.
    Page {
        /// The response status.
        status: u16,
        /// Its `Content-Type`.
        content_type: &'static str,
        /// The body.
        body: &'a [u8],
        /// One more response header: the page's
        /// `Content-Security-Policy`, a problem's `Retry-After`.
        extra: Option<(&'static str, &'a [u8])>,
    },
    /// Redirected, with a cookie (a solved challenge) or without one (the
    /// return after a solve, the cookie back).
    Redirect {
        /// The redirect's status (303).
        status: u16,
        /// Where to: a same-site path, or the return hop.
        location: &'a [u8],
        /// The `Set-Cookie` value; empty: none.
        set_cookie: &'a [u8],
    },
}

impl<'a> Exit<'a> {
    /// The response headers this exit adds besides a `Location`: the
    /// page's type, that neither the page nor the redirect is stored or
    /// indexed, the page's policy or the problem's `Retry-After`, the
    /// cookie. At most four.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &'a [u8])> {
        let list: [Option<(&'static str, &'a [u8])>; 4] = match *self {
            Exit::Continue | Exit::Status(_) => [None; 4],
            Exit::Page {
                content_type,
                extra,
                ..
            } => [
                Some(("Content-Type", content_type.as_bytes())),
                Some(("Cache-Control", b"no-store")),
                Some(("X-Robots-Tag", b"noindex")),
                extra,
            ],
            Exit::Redirect { set_cookie, .. } => [
                (!set_cookie.is_empty()).then_some(("Set-Cookie", set_cookie)),
                Some(("Cache-Control", b"no-store")),
                None,
                None,
            ],
        };
        list.into_iter().flatten()
    }

    /// The response status, or 0 for [`Exit::Continue`].
    pub fn status(&self) -> u16 {
        match *self {
            Exit::Continue => 0,
            Exit::Status(s) | Exit::Page { status: s, .. } | Exit::Redirect { status: s, .. } => s,
        }
    }
}

/// The nginx variables to set (`vars = true`): `$edgeguard_<model>` (each
/// score as `%.9g`), `$edgeguard_action`; with the challenge or the
/// verified bots, `$edgeguard_time` and `$edgeguard_verified_bot`; with
/// site rules, `$edgeguard_rule`, `$edgeguard_tag` and
/// `$edgeguard_bot_category`; with fleet signals, `$edgeguard_fp_key` and
/// [`FP_VARS`]; with `vars = ["reasons"]`, `$edgeguard_reasons` (the
/// detection IDs, comma-separated) and `$edgeguard_grade`; with a client
/// memory, [`CLIENT_VARS`] and `$edgeguard_client_cookie`. A
/// [`super::Job::Record`] run sets `$edgeguard_request_headers` alone.
#[derive(Clone, Copy, Debug)]
pub struct Vars<'a> {
    pub(super) loc: Option<&'a Location>,
    pub(super) text: &'a [u8],
    pub(super) values: &'a [Span],
    pub(super) action: Outcome,
    pub(super) time: Option<Span>,
    pub(super) verified_bot: &'a [u8],
    /// The location has rules: `$edgeguard_rule`, `$edgeguard_tag` and
    /// `$edgeguard_bot_category` are set too.
    pub(super) rules: bool,
    /// The rule that decided the request.
    pub(super) rule: Option<RuleEffect<'a>>,
    /// A verified bot's category.
    pub(super) category: &'static str,
    /// The location looks fingerprints up: `$edgeguard_fp_*` are set,
    /// `fp_key` naming the key that answered (empty: unknown to the fleet
    /// or no snapshot in force) and `fp` holding the values (requests,
    /// prefixes, user_agents, flagged, solved, cleared; empty: unknown).
    pub(super) fleet: bool,
    pub(super) fp_key: &'static str,
    pub(super) fp: [Span; 6],
    /// `vars = ["reasons"]`: `$edgeguard_reasons` (its value) and
    /// `$edgeguard_grade` are set too.
    pub(super) reasons: Option<(Span, Grade)>,
    /// The location has a client memory: [`CLIENT_VARS`] are set, with
    /// these values (navigations, sub-resources, paths, navigations from
    /// nowhere, rate; empty: the request went on without the memory) and
    /// the cookie's part.
    pub(super) client: Option<([Span; 5], &'static str)>,
    /// `$edgeguard_request_headers`' value: the request head as recorded
    /// for replay (none: not recorded).
    pub(super) recorded: Option<&'a [u8]>,
}

/// `$edgeguard_client_*` but `$edgeguard_client_cookie`, in the order of
/// [`Vars`]' `client` values: the client's host record after this
/// request (docs/behaviour.md).
pub const CLIENT_VARS: [&str; 5] = [
    "edgeguard_client_navigations",
    "edgeguard_client_subresources",
    "edgeguard_client_paths",
    "edgeguard_client_direct",
    "edgeguard_client_rate",
];

/// `$edgeguard_fp_*` but `$edgeguard_fp_key`, in the order of [`Vars`]'
/// `fp` values.
pub const FP_VARS: [&str; 6] = [
    "edgeguard_fp_requests",
    "edgeguard_fp_prefixes",
    "edgeguard_fp_user_agents",
    "edgeguard_fp_flagged",
    "edgeguard_fp_solved",
    "edgeguard_fp_cleared",
];

impl<'a> Vars<'a> {
    /// No variables.
    pub(super) fn none() -> Vars<'a> {
        Vars {
            loc: None,
            text: &[],
            values: &[],
            action: Outcome::Pass,
            time: None,
            verified_bot: &[],
            rules: false,
            rule: None,
            category: "",
            fleet: false,
            fp_key: "",
            fp: [Span::default(); 6],
            reasons: None,
            client: None,
            recorded: None,
        }
    }

    /// Each variable's name and value, in that order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + '_ {
        let at = |s: Span| &self.text[s.offset..s.offset + s.len];
        let models = self.loc.into_iter().flat_map(move |loc| {
            loc.var_names()
                .iter()
                .zip(self.values)
                .map(move |(n, &v)| (n.as_bytes(), at(v)))
        });
        let action = self
            .loc
            .map(|_| (&b"edgeguard_action"[..], self.action.as_str().as_bytes()));
        let screen = self.time.into_iter().flat_map(move |t| {
            [
                (&b"edgeguard_time"[..], at(t)),
                (&b"edgeguard_verified_bot"[..], self.verified_bot),
            ]
        });
        let rule = self.rule;
        let rules = self.rules.then(move || {
            [
                (
                    &b"edgeguard_rule"[..],
                    rule.map_or(&b""[..], |r| r.name.as_bytes()),
                ),
                (
                    &b"edgeguard_tag"[..],
                    rule.map_or(&b""[..], |r| r.tag.as_bytes()),
                ),
                (&b"edgeguard_bot_category"[..], self.category.as_bytes()),
            ]
        });
        let fp_key = self
            .fleet
            .then(|| (&b"edgeguard_fp_key"[..], self.fp_key.as_bytes()));
        let fp = self.fleet.then(move || {
            FP_VARS
                .iter()
                .zip(self.fp)
                .map(move |(n, v)| (n.as_bytes(), at(v)))
        });
        let reasons = self.reasons.into_iter().flat_map(move |(r, g)| {
            [
                (&b"edgeguard_reasons"[..], at(r)),
                (&b"edgeguard_grade"[..], g.as_str().as_bytes()),
            ]
        });
        let client = self.client.into_iter().flat_map(move |(v, cookie)| {
            CLIENT_VARS
                .iter()
                .zip(v)
                .map(move |(n, v)| (n.as_bytes(), at(v)))
                .chain([(&b"edgeguard_client_cookie"[..], cookie.as_bytes())])
        });
        let recorded = self
            .recorded
            .map(|r| (&b"edgeguard_request_headers"[..], r));
        models
            .chain(action)
            .chain(screen)
            .chain(rules.into_iter().flatten())
            .chain(fp_key)
            .chain(fp.into_iter().flatten())
            .chain(reasons)
            .chain(client)
            .chain(recorded)
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.loc.is_none() && self.recorded.is_none()
    }
}

/// The site rule that decided a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleEffect<'a> {
    /// Its position among the location's rules (presets expanded).
    pub index: usize,
    /// Its name (`$edgeguard_rule`).
    pub name: &'a str,
    /// Its tag, empty if none (`$edgeguard_tag`).
    pub tag: &'a str,
    /// Its action.
    pub action: crate::rules::Action,
    /// Whether it ran before scoring (else with the scores).
    pub before_scoring: bool,
}

/// Everything one request comes to.
#[derive(Clone, Copy, Debug)]
pub struct Effects<'a> {
    /// What it came to.
    pub action: Outcome,
    /// How it ends.
    pub exit: Exit<'a>,
    /// Indices (into the request's headers) of the headers to remove: the
    /// first of each distinct name of the strip set, without those spelled
    /// exactly as the score header on a scored request (setting it replaces
    /// them).
    pub clear: &'a [u32],
    /// Internal header entries the list matched (repeats counted; the score
    /// header's spellings not counted), another engine's removed included.
    pub matched: usize,
    /// Those removed (what the metrics count): the matched ones, but on a
    /// refusal only those another engine removed before it found the rest.
    pub removed: usize,
    /// Internal entries nginx cannot remove (the request is then
    /// [`Outcome::Refused`]).
    pub unremovable: usize,
    /// The scores, in the location's model order; none: not scored.
    pub scores: Option<&'a [f64]>,
    /// Why the location's scorer gave no scores, if it failed.
    pub score_error: Option<ScoreError>,
    /// The model that flagged the request and its threshold in force.
    pub flagged: Option<(usize, f64)>,
    /// The verified bot the User-Agent claims, the verdict and its name.
    pub bot: Option<(Verdict, &'a str)>,
    /// What the clearance cookie said.
    pub clearance: Clearance,
    /// An answer to the challenge, and what it came to.
    pub answer: Option<AnswerResult>,
    /// The site rule that decided it, if one did.
    pub rule: Option<RuleEffect<'a>>,
    /// What the fleet's signals snapshot knows of its keys (none: the
    /// location has no snapshot in force).
    pub fleet: Option<Lookup>,
    /// The request header to set before proxying: the score header's name
    /// and value.
    pub set_header: Option<(&'a str, &'a [u8])>,
    /// The variables to set.
    pub vars: Vars<'a>,
    /// The line to log, at this nginx level (0 `ngx.STDERR` .. 8
    /// `ngx.DEBUG`).
    pub line: Option<(&'a [u8], u8)>,
    /// A warning about the deployment to log once per worker (the
    /// caller's to ration): [`crate::hop::REALIP_WARNING`].
    pub warning: Option<&'static str>,
    /// Where in the line the caller inserts `$request_id` (the request
    /// gave none): after `request_id=`.
    pub line_id_at: Option<usize>,
    /// Where in a blocked request's body the caller inserts `$request_id`
    /// (the request gave none), and sets `Edgeguard-Reference` to it.
    pub body_id_at: Option<usize>,
    /// Why the request was flagged (empty: it was not).
    pub reasons: Reasons,
    /// How surely ([`Grade::None`]: not flagged).
    pub grade: Grade,
    /// What the client memory holds of the client after this request
    /// (none: no memory, or it went on without it).
    pub clients: Option<ClientSeen>,
    /// The client memory's cookie to set on the answer (a `Set-Cookie`
    /// value; empty: none): on a request that goes on to the upstream
    /// ([`Exit::Continue`]) or is answered with a page ([`Exit::Page`]),
    /// so that a navigation counted as issued got the cookie.
    pub set_cookie: &'a [u8],
}

impl<'a> Effects<'a> {
    /// These effects with `$edgeguard_request_headers` set to `text`, the
    /// request head the caller's recorder wrote (`replay::Redactor`, which
    /// the gate below it does not call): a [`super::Job::Record`] run's
    /// one effect.
    pub fn with_recorded(mut self, text: &'a [u8]) -> Effects<'a> {
        self.vars.recorded = Some(text);
        self
    }
}
