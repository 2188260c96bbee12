//! edgeguard's Prometheus metrics: the series registry, the per-request
//! counting and the text exposition (format 0.0.4).
//!
//! A [`Registry`] is made once per configuration from what is configured
//! (the engine, each engine's models, the challenge, the verified bots) and
//! lays out one slot per number it exposes: a counter is one slot, a
//! histogram one slot per bucket (not cumulative), one for `+Inf` and one
//! for the sum, so an observation costs two slot updates. The slots are a
//! worker process's deltas since the last [`Registry::drain`]: nginx's Lua
//! shim moves them into a `lua_shared_dict` (shared by the workers) once a
//! second, and reads the dict's totals back for [`Registry::write_text`].
//! Nothing here allocates after [`Registry::new`].
//!
//! The families, HELP texts, label order, buckets, dict keys and text are
//! the ones the Lua module `resty.edgeguard.metrics` had before the
//! registry moved here; `tests/metrics_exposition.rs` holds this module to
//! texts that module wrote (`tests/fixtures/metrics/`).

use std::fmt::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::challenge::{AnswerResult, Clearance, Proof, Rejection};
use crate::clients::ClientMemory;
use crate::config::text::{write_g, Sink};
use crate::config::Engine;
use crate::features::reasons::{DETECTIONS, DETECTION_COUNT};
use crate::features::Reasons;
use crate::outcome::Outcome;
use crate::signals::live::Live;
use crate::verified::Verdict;

/// Score histogram buckets: probabilities; raw-score models land in the
/// outer buckets.
pub const SCORE_BUCKETS: [f64; 14] = [
    0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];

/// Engine time buckets, seconds per request: a Rust call is microseconds,
/// a Lua engine tens of microseconds, a stall milliseconds.
pub const SECONDS_BUCKETS: [f64; 13] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1,
];

/// The widest number the text writes: `%.17g` of a double
/// (`-1.2345678901234567e-308`); integers below 1e15 and `nan`/`inf` are
/// shorter.
const MAX_NUMBER: usize = 24;

c_enum! {
    /// Shadow mode's kinds of disagreement between the engines; the word
    /// is the `kind` label. Passed to `edgeguard_metrics_disagreement` as
    /// a plain int.
    pub enum Disagreement as "edgeguard_disagreement" {
        /// A score differs.
        Score = 0 => "score",
        /// The action differs.
        Decision = 1 => "decision",
        /// The internal header counts differ.
        Headers = 2 => "headers",
    }
}

/// What a request showed besides its decision: its clearance cookie and
/// the verified bot it claims.
#[derive(Clone, Copy, Debug)]
pub struct Screening {
    /// The clearance cookie's verdict.
    pub clearance: Clearance,
    /// The bot the User-Agent claims, by its index in [`Spec::bots`] (the
    /// verified bots file's order, which `VerifiedBots::judge` gives).
    pub bot: Option<Verdict>,
}

/// The `result` label of `edgeguard_challenges_total`, after `served`, by
/// [`answer_label_index`].
const ANSWER_LABELS: [&str; 5] = ["solved", "failed", "waited", "cookies_needed", "problem"];

fn answer_label_index(a: AnswerResult) -> usize {
    match a {
        AnswerResult::Solved => 0,
        AnswerResult::Failed(_) => 1,
        AnswerResult::Waited => 2,
        AnswerResult::CookiesNeeded => 3,
        AnswerResult::Problem => 4,
    }
}

/// What is configured, which decides the series there are.
#[derive(Clone, Copy, Debug)]
pub struct Spec<'a> {
    /// The configured engine: `Shadow` gives requests series for all three
    /// engine settings (a location may pick either engine) and scores and
    /// time for both engines.
    pub engine: Engine,
    /// The Rust engine's model names, in scoring order (none: not loaded).
    pub rust_models: &'a [&'a str],
    /// The Lua engine's model names, in its scoring order.
    pub lua_models: &'a [&'a str],
    /// A challenge is configured: the challenge and clearance series.
    pub challenge: bool,
    /// The verified bots' names (`verified_bots`), in the file's order: a
    /// [`Verdict`]'s index is a position in it.
    pub bots: &'a [&'a str],
    /// The fleet signals snapshot (`signals`): its loads and the snapshot
    /// in force.
    pub signals: Option<&'a Arc<Live>>,
    /// The detection-ID series (every configuration nginx makes; the Lua
    /// module's fixtures predate them).
    pub reasons: bool,
    /// The client memory (`client_memory`): its gauges.
    pub clients: Option<&'a ClientMemory>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Counter,
    Histogram(&'static [f64]),
}

/// One labelled series: its label text and its first slot.
#[derive(Debug)]
struct Series {
    labels: Box<str>,
    first: usize,
}

/// A family in exposition order; one with no series is not written.
#[derive(Debug)]
struct Family {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    series: Vec<Series>,
}

const REQUESTS: usize = 0;
const STRIPPED: usize = 1;
const DECISIONS: usize = 2;
const SCORE: usize = 3;
const SECONDS: usize = 4;
const DISAGREEMENTS: usize = 5;
const LOAD_ERRORS: usize = 6;
const CHALLENGES: usize = 7;
const FAILURES: usize = 8;
const CLEARANCES: usize = 9;
const BOTS: usize = 10;
const SIGNAL_LOADS: usize = 11;
const REASONS: usize = 12;

fn families() -> Vec<Family> {
    let f = |name, kind, help| Family {
        name,
        kind,
        help,
        series: Vec::new(),
    };
    let score = Kind::Histogram(&SCORE_BUCKETS);
    let seconds = Kind::Histogram(&SECONDS_BUCKETS);
    vec![
        f(
            "edgeguard_requests_total",
            Kind::Counter,
            "Requests handled by edgeguard.access, by engine setting.",
        ),
        f(
            "edgeguard_headers_stripped_total",
            Kind::Counter,
            "Internal header entries removed from requests (by the acting engine).",
        ),
        f(
            "edgeguard_decisions_total",
            Kind::Counter,
            "Decisions of edgeguard.access, by action.",
        ),
        f("edgeguard_score", score, "Scores per model and engine."),
        // HELP unchanged. The Rust engine's time is now measured by
        // edgeguard_access itself (the whole call: strip search, scoring,
        // decision; no longer the shim's header fetch and clear_header
        // calls around it); the Lua engine's and shadow mode's by the shim.
        // Either is the time in the engine per request.
        f(
            "edgeguard_engine_seconds",
            seconds,
            "Time spent in an engine per request (reading, scoring, stripping), monotonic clock.",
        ),
        f(
            "edgeguard_shadow_disagreements_total",
            Kind::Counter,
            "Shadow mode: requests where the engines disagreed, by kind.",
        ),
        f(
            "edgeguard_load_errors_total",
            Kind::Counter,
            "Models that failed to load, counted once per configuration generation.",
        ),
        f(
            "edgeguard_challenges_total",
            Kind::Counter,
            "Challenge pages served; answers solved, failed; no-JavaScript waits redeemed; cookies-needed pages; problem documents.",
        ),
        f(
            "edgeguard_challenge_failures_total",
            Kind::Counter,
            "Failed challenge answers, by reason.",
        ),
        f(
            "edgeguard_clearances_total",
            Kind::Counter,
            "Clearance cookies seen: accepted, or rejected by reason.",
        ),
        f(
            "edgeguard_verified_bots_total",
            Kind::Counter,
            "Requests claiming a verified bot: from its prefixes (verified) or not (fake).",
        ),
        f(
            "edgeguard_signals_loads_total",
            Kind::Counter,
            "Signals snapshot files the workers' refresh threads loaded (ok) or refused (failed).",
        ),
        f(
            "edgeguard_reasons_total",
            Kind::Counter,
            "Flagged requests per detection ID that fired (docs/detections.md), with the ID's strength.",
        ),
    ]
}

/// A label text: `k="v",...` with the exposition format's escapes for
/// values (`\\`, `\"`, `\n`).
pub(crate) fn labels_text(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out
}

/// The index of an engine in per-engine tables.
fn engine_index(e: Engine) -> usize {
    match e {
        Engine::Rust => 0,
        Engine::Lua => 1,
        Engine::Shadow => 2,
    }
}

/// Absent, accepted, one code per rejection, accepted without JavaScript.
const CLEARANCE_CODES: usize = 3 + Rejection::ALL.len();

/// The clearance code of a verdict, as `edgeguard_clearance` numbers it
/// (0 absent, 1 accepted, 2.. the rejections in [`Rejection::ALL`] order,
/// then the no-JavaScript clearance).
fn clearance_code(c: Clearance) -> usize {
    match c {
        Clearance::Absent => 0,
        Clearance::Accepted(Proof::Work) => 1,
        Clearance::Rejected(r) => 2 + r.index(),
        Clearance::Accepted(Proof::Wait) => CLEARANCE_CODES - 1,
    }
}

/// The series of one configuration and this process's deltas of them.
#[derive(Debug)]
pub struct Registry {
    /// Each slot's delta since the last drain, as `f64` bits (sums are
    /// fractional). Relaxed atomics: a worker counts from one thread and
    /// the order between slots does not matter.
    slots: Box<[AtomicU64]>,
    /// Each slot's key in the shared dict.
    keys: Box<[Box<str>]>,
    families: Vec<Family>,
    requests: [Option<usize>; 3],
    stripped: usize,
    decisions: [usize; Outcome::ALL.len()],
    /// Per engine (Rust, Lua; none: not configured): the first slot of its
    /// first model's score histogram, and how many models.
    scores: [Option<(usize, usize)>; 2],
    seconds: [Option<usize>; 2],
    disagreements: [usize; 3],
    load_errors: usize,
    /// Served, then [`ANSWER_LABELS`].
    challenges: Option<[usize; 6]>,
    /// By clearance code.
    clearances: [Option<usize>; CLEARANCE_CODES],
    failures: [Option<usize>; CLEARANCE_CODES],
    /// By bot index ([`Spec::bots`]): name, verified slot, fake slot.
    bots: Vec<(Box<[u8]>, usize, usize)>,
    signals: Option<SignalSlots>,
    /// One counter per detection ID, in bit order.
    reasons: Option<[usize; DETECTION_COUNT]>,
    /// The client memory, whose gauges are read when the text is written.
    clients: Option<ClientMemory>,
    text_room: usize,
}

/// The client memory's series, read from the memory every worker shares
/// when the text is written (name, type, help).
const CLIENT_GAUGES: [(&str, &str, &str); 3] = [
    (
        "edgeguard_client_memory_bytes",
        "gauge",
        "Size of the client memory, bytes (fixed when it is made).",
    ),
    (
        "edgeguard_client_memory_clients",
        "gauge",
        "Client records the memory holds (host and network records of each client).",
    ),
    (
        "edgeguard_client_memory_evictions_total",
        "counter",
        "Records evicted for a new client since the memory was made.",
    ),
];

/// The signals snapshot's series: its loads counted into two slots as
/// they happen since the registry was made (the load at configure is the
/// configuration's, not a refresh), and two gauges read from the snapshot
/// in force when the text is written.
#[derive(Debug)]
struct SignalSlots {
    live: Arc<Live>,
    ok: usize,
    failed: usize,
    /// The loads already moved into the slots.
    seen_ok: AtomicU64,
    seen_failed: AtomicU64,
}

impl SignalSlots {
    /// The gauges: the snapshot in force in this process, its age (by its
    /// `generated` time) and its entries.
    const GAUGES: [(&'static str, &'static str); 2] = [
        (
            "edgeguard_signals_age_seconds",
            "Age of the signals snapshot in force in the worker that answered (now - its generated time).",
        ),
        (
            "edgeguard_signals_entries",
            "Entries of the signals snapshot in force in the worker that answered.",
        ),
    ];
}

/// A writer that only counts bytes (for the text's room).
struct Count(usize);

impl Write for Count {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

impl Sink for Count {
    fn ascii(&mut self, b: &[u8]) -> fmt::Result {
        self.0 += b.len();
        Ok(())
    }
}

struct Builder {
    keys: Vec<Box<str>>,
    families: Vec<Family>,
}

impl Builder {
    fn slot(&mut self, key: String) -> usize {
        self.keys.push(key.into_boxed_str());
        self.keys.len() - 1
    }

    fn counter(&mut self, family: usize, labels: &[(&str, &str)]) -> usize {
        let lt = labels_text(labels);
        let s = self.slot(format!("{}{{{lt}}}", self.families[family].name));
        self.families[family].series.push(Series {
            labels: lt.into_boxed_str(),
            first: s,
        });
        s
    }

    fn histogram(&mut self, family: usize, labels: &[(&str, &str)]) -> usize {
        let Kind::Histogram(bounds) = self.families[family].kind else {
            unreachable!("a histogram family")
        };
        let lt = labels_text(labels);
        let name = self.families[family].name;
        let first = self.keys.len();
        for b in 1..=bounds.len() + 1 {
            self.slot(format!("{name}{{{lt}}}:{b}"));
        }
        self.slot(format!("{name}{{{lt}}}:sum"));
        self.families[family].series.push(Series {
            labels: lt.into_boxed_str(),
            first,
        });
        first
    }
}

impl Registry {
    /// The registry for what `spec` configures. Slots are laid out in the
    /// order the Lua module made them, family by family.
    pub fn new(spec: &Spec<'_>) -> Registry {
        let mut b = Builder {
            keys: Vec::new(),
            families: families(),
        };
        let (request_engines, engines): (&[Engine], &[Engine]) = match spec.engine {
            Engine::Shadow => (
                &[Engine::Rust, Engine::Lua, Engine::Shadow],
                &[Engine::Rust, Engine::Lua],
            ),
            Engine::Rust => (&[Engine::Rust], &[Engine::Rust]),
            Engine::Lua => (&[Engine::Lua], &[Engine::Lua]),
        };
        let mut requests = [None; 3];
        for &e in request_engines {
            requests[engine_index(e)] = Some(b.counter(REQUESTS, &[("engine", e.as_str())]));
        }
        let stripped = b.counter(STRIPPED, &[]);
        let mut decisions = [0; Outcome::ALL.len()];
        for (i, o) in Outcome::ALL.iter().enumerate() {
            decisions[i] = b.counter(DECISIONS, &[("action", o.as_str())]);
        }
        let mut scores = [None; 2];
        for &e in engines {
            let names = if e == Engine::Rust {
                spec.rust_models
            } else {
                spec.lua_models
            };
            let mut first = None;
            for name in names {
                let s = b.histogram(SCORE, &[("model", name), ("engine", e.as_str())]);
                first.get_or_insert(s);
            }
            scores[engine_index(e)] = Some((first.unwrap_or(0), names.len()));
        }
        let mut seconds = [None; 2];
        for &e in engines {
            seconds[engine_index(e)] = Some(b.histogram(SECONDS, &[("engine", e.as_str())]));
        }
        let mut disagreements = [0; 3];
        for (i, k) in Disagreement::ALL.iter().enumerate() {
            disagreements[i] = b.counter(DISAGREEMENTS, &[("kind", k.as_str())]);
        }
        let load_errors = b.counter(LOAD_ERRORS, &[]);
        let (mut challenges, mut clearances, mut failures) =
            (None, [None; CLEARANCE_CODES], [None; CLEARANCE_CODES]);
        if spec.challenge {
            let mut ch = [0; 6];
            let labels = std::iter::once("served").chain(ANSWER_LABELS);
            for (i, r) in labels.enumerate() {
                ch[i] = b.counter(CHALLENGES, &[("result", r)]);
            }
            challenges = Some(ch);
            // No cookie (0) is not counted; "accepted" is code 1, the rest
            // are reasons ("work" and "early" only for answers), then the
            // no-JavaScript clearance.
            let names = std::iter::once("accepted")
                .chain(Rejection::ALL.iter().map(|r| r.as_str()))
                .chain(std::iter::once("accepted_wait"));
            for (i, name) in names.enumerate() {
                let code = i + 1;
                let answers_only = [Rejection::Work, Rejection::Early].map(Rejection::as_str);
                if !answers_only.contains(&name) {
                    clearances[code] = Some(b.counter(CLEARANCES, &[("result", name)]));
                }
                if code > 1 && code < CLEARANCE_CODES - 1 {
                    failures[code] = Some(b.counter(FAILURES, &[("reason", name)]));
                }
            }
        }
        let mut bots = Vec::with_capacity(spec.bots.len());
        for name in spec.bots {
            let v = b.counter(BOTS, &[("bot", name), ("result", "verified")]);
            let f = b.counter(BOTS, &[("bot", name), ("result", "fake")]);
            bots.push((Box::from(name.as_bytes()), v, f));
        }
        let signals = spec.signals.map(|live| {
            let st = live.status();
            SignalSlots {
                live: live.clone(),
                ok: b.counter(SIGNAL_LOADS, &[("result", "ok")]),
                failed: b.counter(SIGNAL_LOADS, &[("result", "failed")]),
                seen_ok: AtomicU64::new(st.loads_ok),
                seen_failed: AtomicU64::new(st.loads_failed),
            }
        });
        let reasons = spec.reasons.then(|| {
            std::array::from_fn(|i| {
                let d = DETECTIONS[i];
                b.counter(
                    REASONS,
                    &[("reason", d.name), ("strength", d.grade.as_str())],
                )
            })
        });
        let mut registry = Registry {
            slots: b.keys.iter().map(|_| AtomicU64::new(0)).collect(),
            keys: b.keys.into_boxed_slice(),
            families: b.families,
            requests,
            stripped,
            decisions,
            scores,
            seconds,
            disagreements,
            load_errors,
            challenges,
            clearances,
            failures,
            bots,
            signals,
            reasons,
            clients: spec.clients.cloned(),
            text_room: 0,
        };
        registry.text_room = registry.room();
        registry
    }

    /// The text's length with every number one digit wide, plus the widest
    /// number for each.
    fn room(&self) -> usize {
        let zeros = vec![0.0; self.slots.len()];
        let mut count = Count(0);
        let numbers = self
            .write_text(&zeros, &mut count)
            .map_or(0, |numbers| numbers);
        count.0 - numbers + numbers * MAX_NUMBER
    }

    /// How many slots (dict keys) there are.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none (never: the requests series always exist).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The index of the bot named `name` in [`Spec::bots`], for a caller
    /// that has only the name (C's shadow mode hands back the effects'
    /// `bot_name`). A linear scan of the few bots; allocates nothing.
    pub fn bot_index(&self, name: &[u8]) -> Option<usize> {
        self.bots.iter().position(|(n, _, _)| **n == *name)
    }

    /// The name of bot `i` of [`Spec::bots`].
    pub fn bot_name(&self, i: usize) -> Option<&[u8]> {
        self.bots.get(i).map(|(n, _, _)| &**n)
    }

    /// Slot `slot`'s key in the shared dict.
    pub fn key(&self, slot: usize) -> Option<&str> {
        self.keys.get(slot).map(|k| &**k)
    }

    /// The bytes [`Registry::write_text`] may need.
    pub fn text_room(&self) -> usize {
        self.text_room
    }

    fn add(&self, slot: usize, v: f64) {
        // A CAS loop: there is no atomic add of floats. Uncontended (one
        // thread per worker), it runs once.
        let cell = &self.slots[slot];
        let mut cur = cell.load(Ordering::Relaxed);
        loop {
            let new = (f64::from_bits(cur) + v).to_bits();
            match cell.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }

    /// Adds `v` to the bucket of `bounds` holding it and to the sum.
    fn observe(&self, first: usize, bounds: &[f64], v: f64) {
        let b = bounds.iter().position(|&x| v <= x).unwrap_or(bounds.len());
        self.add(first + b, 1.0);
        self.add(first + bounds.len() + 1, v);
    }

    /// One request handled under the engine setting `engine`: its outcome,
    /// the internal header entries removed, and (`seen`: it got as far as
    /// acting) its clearance cookie and bot claim; a challenge outcome is a
    /// page served. Series that are not configured are not counted.
    pub fn request(
        &self,
        engine: Engine,
        outcome: Outcome,
        removed: usize,
        seen: Option<Screening>,
    ) {
        if let Some(s) = self.requests[engine_index(engine)] {
            self.add(s, 1.0);
        }
        let i = outcome.index();
        self.add(self.decisions[i], 1.0);
        if removed > 0 {
            self.add(self.stripped, removed as f64);
        }
        if let Some(seen) = seen.filter(|_| outcome.screened()) {
            let bot = seen.bot.and_then(|v| Some((v, self.bots.get(v.bot())?)));
            if let Some((verdict, &(_, v, f))) = bot {
                self.add(
                    match verdict {
                        Verdict::Verified(_) => v,
                        Verdict::Fake(_) => f,
                    },
                    1.0,
                );
            }
            if let Some(s) = self.clearances[clearance_code(seen.clearance)] {
                self.add(s, 1.0);
            }
        }
        if outcome == Outcome::Challenge {
            if let Some(ch) = self.challenges {
                self.add(ch[0], 1.0);
            }
        }
    }

    /// The detection IDs a flagged request fired, one count each.
    pub fn reasons(&self, reasons: Reasons) {
        if let Some(slots) = &self.reasons {
            for id in reasons.iter() {
                self.add(slots[id as usize], 1.0);
            }
        }
    }

    /// The scores of one engine (Rust or Lua) for one request, in its model
    /// order. `false` (nothing counted) when the count is not that
    /// engine's model count.
    pub fn scores(&self, engine: Engine, scores: &[f64]) -> bool {
        let Some(&Some((first, n))) = self.scores.get(engine_index(engine)) else {
            return false;
        };
        if scores.len() != n {
            return false;
        }
        let size = SCORE_BUCKETS.len() + 2;
        for (i, &v) in scores.iter().enumerate() {
            self.observe(first + i * size, &SCORE_BUCKETS, v);
        }
        true
    }

    /// Seconds spent in `engine` (Rust or Lua) for one request; `false`
    /// when that engine has no series.
    pub fn engine_time(&self, engine: Engine, seconds: f64) -> bool {
        match self.seconds.get(engine_index(engine)).copied().flatten() {
            Some(first) => {
                self.observe(first, &SECONDS_BUCKETS, seconds);
                true
            }
            None => false,
        }
    }

    /// One shadow disagreement.
    pub fn disagreement(&self, kind: Disagreement) {
        let i = Disagreement::ALL
            .iter()
            .position(|&k| k == kind)
            .unwrap_or(0);
        self.add(self.disagreements[i], 1.0);
    }

    /// `n` models of a configuration generation failed to load (the caller
    /// counts a generation once across workers).
    pub fn load_errors(&self, n: usize) {
        if n > 0 {
            self.add(self.load_errors, n as f64);
        }
    }

    /// An answer to the challenge (nothing without a challenge configured).
    pub fn answer(&self, result: AnswerResult) {
        let Some(ch) = self.challenges else { return };
        self.add(ch[1 + answer_label_index(result)], 1.0);
        if let AnswerResult::Failed(r) = result {
            if let Some(s) = self.failures[2 + r.index()] {
                self.add(s, 1.0);
            }
        }
    }

    /// Lists the non-zero deltas as (slot, delta) into `slots`/`deltas`
    /// and zeroes them, at most as many as the shorter holds (the rest stay
    /// for the next drain). Returns how many were listed.
    pub fn drain(&self, slots: &mut [u32], deltas: &mut [f64]) -> usize {
        if let Some(sig) = &self.signals {
            // The refresh thread counts its loads in the snapshot's holder;
            // what is new since the last drain becomes this worker's delta.
            let st = sig.live.status();
            for (now, seen, slot) in [
                (st.loads_ok, &sig.seen_ok, sig.ok),
                (st.loads_failed, &sig.seen_failed, sig.failed),
            ] {
                let before = seen.swap(now, Ordering::Relaxed);
                if now > before {
                    self.add(slot, (now - before) as f64);
                }
            }
        }
        let cap = slots.len().min(deltas.len());
        let mut n = 0;
        for (i, cell) in self.slots.iter().enumerate() {
            if n == cap {
                break;
            }
            if cell.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let v = f64::from_bits(cell.swap(0, Ordering::Relaxed));
            if v != 0.0 {
                // Fewer slots than u32::MAX: a handful per model.
                slots[n] = i as u32;
                deltas[n] = v;
                n += 1;
            }
        }
        n
    }

    /// Gives a drained delta back (the dict refused it), so the next drain
    /// lists it again. `false` for a slot that is none.
    pub fn restore(&self, slot: usize, delta: f64) -> bool {
        if slot >= self.slots.len() {
            return false;
        }
        self.add(slot, delta);
        true
    }

    /// Writes the exposition of `values` (the dict's total of each slot;
    /// `values.len()` must be [`Registry::len`]). Returns how many numbers
    /// were written.
    pub fn write_text(&self, values: &[f64], w: &mut impl Sink) -> Result<usize, fmt::Error> {
        if values.len() != self.slots.len() {
            return Err(fmt::Error);
        }
        let mut numbers = 0;
        for fam in self.families.iter().filter(|f| !f.series.is_empty()) {
            let (name, kind) = (fam.name, fam.kind);
            let type_name = match kind {
                Kind::Counter => "counter",
                Kind::Histogram(_) => "histogram",
            };
            write!(w, "# HELP {name} {}\n# TYPE {name} {type_name}\n", fam.help)?;
            for s in &fam.series {
                let lt = &*s.labels;
                match kind {
                    Kind::Counter => {
                        if lt.is_empty() {
                            w.write_str(name)?;
                        } else {
                            write!(w, "{name}{{{lt}}}")?;
                        }
                        w.write_char(' ')?;
                        number(w, values[s.first])?;
                        numbers += 1;
                    }
                    Kind::Histogram(bounds) => {
                        let mut total = 0.0;
                        for b in 0..=bounds.len() {
                            total += values[s.first + b];
                            write!(w, "{name}_bucket{{{lt},le=\"")?;
                            match bounds.get(b) {
                                Some(&x) => write_g(w, x, 9)?,
                                None => w.write_str("+Inf")?,
                            }
                            w.write_str("\"} ")?;
                            number(w, total)?;
                            w.write_char('\n')?;
                        }
                        write!(w, "{name}_sum{{{lt}}} ")?;
                        number(w, values[s.first + bounds.len() + 1])?;
                        write!(w, "\n{name}_count{{{lt}}} ")?;
                        number(w, total)?;
                        numbers += bounds.len() + 3;
                    }
                }
                w.write_char('\n')?;
            }
        }
        if let Some(sig) = &self.signals {
            let st = sig.live.status();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let values = [now.saturating_sub(st.generated), st.entries as u64];
            for ((name, help), v) in SignalSlots::GAUGES.iter().zip(values) {
                write!(w, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} ")?;
                number(w, v as f64)?;
                w.write_char('\n')?;
                numbers += 1;
            }
        }
        if let Some(m) = &self.clients {
            let g = m.gauges();
            for ((name, kind, help), v) in CLIENT_GAUGES.iter().zip([g.bytes, g.used, g.evictions])
            {
                write!(w, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} ")?;
                number(w, v as f64)?;
                w.write_char('\n')?;
                numbers += 1;
            }
        }
        Ok(numbers)
    }
}

/// A value as the Lua module wrote it: an integer below 1e15 as `%d`,
/// anything else as `%.17g` (exact).
pub(crate) fn number(w: &mut impl Sink, v: f64) -> fmt::Result {
    if v % 1.0 == 0.0 && v > -1e15 && v < 1e15 {
        // Integral and in range: the conversion is exact.
        write!(w, "{}", v as i64)
    } else {
        write_g(w, v, 17)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(
        engine: Engine,
        rust: &'a [&'a str],
        challenge: bool,
        bots: &'a [&'a str],
    ) -> Spec<'a> {
        Spec {
            engine,
            rust_models: rust,
            lua_models: &[],
            challenge,
            bots,
            signals: None,
            clients: None,
            reasons: false,
        }
    }

    fn text(r: &Registry) -> String {
        let mut values = vec![0.0; r.len()];
        let mut slots = vec![0u32; r.len()];
        let mut deltas = vec![0.0; r.len()];
        let n = r.drain(&mut slots, &mut deltas);
        for i in 0..n {
            values[slots[i] as usize] += deltas[i];
        }
        let mut out = String::new();
        r.write_text(&values, &mut out).unwrap();
        assert!(
            out.len() <= r.text_room(),
            "{} > {}",
            out.len(),
            r.text_room()
        );
        out
    }

    #[test]
    fn a_request_counts_its_engine_action_and_stripped_entries() {
        let r = Registry::new(&spec(Engine::Rust, &["bot"], false, &[]));
        r.request(Engine::Rust, Outcome::Block, 3, None);
        r.request(Engine::Rust, Outcome::Pass, 0, None);
        // Not configured: not counted, no panic.
        r.request(Engine::Lua, Outcome::Pass, 0, None);
        let t = text(&r);
        assert!(
            t.contains("edgeguard_requests_total{engine=\"rust\"} 2\n"),
            "{t}"
        );
        assert!(t.contains("edgeguard_headers_stripped_total 3\n"));
        assert!(t.contains("edgeguard_decisions_total{action=\"block\"} 1\n"));
        assert!(t.contains("edgeguard_decisions_total{action=\"pass\"} 2\n"));
        assert!(
            !t.contains("edgeguard_challenges_total"),
            "no challenge configured"
        );
        assert!(!t.contains("edgeguard_verified_bots_total"));
    }

    #[test]
    fn a_bot_is_counted_by_its_index_in_the_bots_list() {
        let r = Registry::new(&spec(Engine::Rust, &[], false, &["googlebot", "bingbot"]));
        assert_eq!(r.bot_index(b"bingbot"), Some(1));
        assert_eq!(r.bot_index(b"Bingbot"), None, "names are exact");
        assert_eq!(r.bot_name(1), Some(&b"bingbot"[..]));
        assert_eq!(r.bot_name(2), None);
        let seen = |bot| {
            Some(Screening {
                clearance: Clearance::Absent,
                bot,
            })
        };
        r.request(
            Engine::Rust,
            Outcome::Pass,
            0,
            seen(Some(Verdict::Verified(1))),
        );
        r.request(
            Engine::Rust,
            Outcome::Block,
            0,
            seen(Some(Verdict::Fake(1))),
        );
        r.request(
            Engine::Rust,
            Outcome::Block,
            0,
            seen(Some(Verdict::Fake(0))),
        );
        // An index past the list (another bots file): no bot counted.
        r.request(
            Engine::Rust,
            Outcome::Block,
            0,
            seen(Some(Verdict::Fake(2))),
        );
        let t = text(&r);
        for (labels, n) in [
            ("bot=\"bingbot\",result=\"verified\"", 1),
            ("bot=\"bingbot\",result=\"fake\"", 1),
            ("bot=\"googlebot\",result=\"fake\"", 1),
            ("bot=\"googlebot\",result=\"verified\"", 0),
        ] {
            let line = format!("edgeguard_verified_bots_total{{{labels}}} {n}\n");
            assert!(t.contains(&line), "{line} in {t}");
        }
        assert!(t.contains("edgeguard_requests_total{engine=\"rust\"} 4\n"));
    }

    #[test]
    fn bot_and_clearance_count_only_for_requests_that_got_to_act() {
        let r = Registry::new(&spec(Engine::Rust, &[], true, &["googlebot"]));
        let seen = Screening {
            clearance: Clearance::Rejected(Rejection::Mac),
            bot: Some(Verdict::Fake(0)),
        };
        r.request(Engine::Rust, Outcome::Challenge, 0, Some(seen));
        r.request(Engine::Rust, Outcome::Answer, 0, Some(seen));
        r.request(Engine::Rust, Outcome::Refused, 0, Some(seen));
        let t = text(&r);
        assert!(
            t.contains("edgeguard_verified_bots_total{bot=\"googlebot\",result=\"fake\"} 1\n"),
            "{t}"
        );
        assert!(t.contains("edgeguard_clearances_total{result=\"mac\"} 1\n"));
        assert!(t.contains("edgeguard_challenges_total{result=\"served\"} 1\n"));
        assert!(
            !t.contains("edgeguard_clearances_total{result=\"work\"}"),
            "work is for answers"
        );
        assert!(t.contains("edgeguard_challenge_failures_total{reason=\"work\"} 0\n"));
    }

    #[test]
    fn scores_of_another_count_are_refused() {
        let r = Registry::new(&spec(Engine::Rust, &["a", "b"], false, &[]));
        assert!(!r.scores(Engine::Rust, &[0.5]));
        assert!(
            !r.scores(Engine::Lua, &[]),
            "no Lua series: zero models, but none"
        );
        assert!(r.scores(Engine::Rust, &[0.5, 0.25]));
        assert!(!r.engine_time(Engine::Lua, 1e-6));
        assert!(r.engine_time(Engine::Rust, 1e-6));
    }

    #[test]
    fn a_drain_lists_each_delta_once_and_restore_gives_it_back() {
        let r = Registry::new(&spec(Engine::Rust, &[], false, &[]));
        r.request(Engine::Rust, Outcome::Log, 2, None);
        let (mut s, mut d) = ([0u32; 1], [0.0; 1]);
        assert_eq!(
            r.drain(&mut s, &mut d),
            1,
            "one at a time into a buffer of one"
        );
        let first = (s[0], d[0]);
        assert!(r.restore(first.0 as usize, first.1));
        assert!(!r.restore(r.len(), 1.0));
        let (mut s, mut d) = (vec![0u32; r.len()], vec![0.0; r.len()]);
        assert_eq!(r.drain(&mut s, &mut d), 3);
        assert_eq!(r.drain(&mut s, &mut d), 0, "zeroed");
    }

    #[test]
    fn the_room_holds_the_widest_numbers() {
        let r = Registry::new(&spec(Engine::Shadow, &["m"], true, &["b"]));
        let values = vec![-1.2345678901234567e-308; r.len()];
        let mut out = String::new();
        r.write_text(&values, &mut out).unwrap();
        assert!(out.len() <= r.text_room());
        assert!(
            r.write_text(&values[1..], &mut out).is_err(),
            "one value per slot"
        );
    }

    #[test]
    fn signal_loads_are_counted_at_drain_and_the_snapshot_is_a_gauge() {
        use crate::signals::{Counts, Kind, Snapshot};
        let dir =
            std::env::temp_dir().join(format!("edgeguard-metrics-signals-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        let write = |n: usize| {
            let mut s = Snapshot::new(1_000, 3600);
            for i in 0..n {
                let c = Counts {
                    requests: 1,
                    ..Default::default()
                };
                s.insert(Kind::Headers, &format!("curl:h{i}"), c).unwrap();
            }
            let mut out = Vec::new();
            s.write(&mut out).unwrap();
            std::fs::write(&path, out).unwrap();
        };
        write(1);
        let live = Arc::new(Live::open(&path, 0, 60).unwrap());
        let r = Registry::new(&Spec {
            signals: Some(&live),
            clients: None,
            reasons: false,
            ..spec(Engine::Rust, &[], false, &[])
        });
        let drained = |r: &Registry| {
            let (mut s, mut d) = (vec![0u32; r.len()], vec![0.0; r.len()]);
            let n = r.drain(&mut s, &mut d);
            (0..n)
                .map(|i| (r.key(s[i] as usize).unwrap().to_owned(), d[i]))
                .collect::<Vec<_>>()
        };
        assert!(
            drained(&r).is_empty(),
            "the configure-time load is not a refresh"
        );
        write(3);
        live.poll();
        std::fs::write(&path, b"{").unwrap();
        live.poll();
        let mut got = drained(&r);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            [
                (
                    "edgeguard_signals_loads_total{result=\"failed\"}".to_owned(),
                    1.0
                ),
                (
                    "edgeguard_signals_loads_total{result=\"ok\"}".to_owned(),
                    1.0
                )
            ]
        );
        assert!(drained(&r).is_empty());
        let t = text(&r);
        assert!(
            t.contains("# TYPE edgeguard_signals_entries gauge\nedgeguard_signals_entries 3\n"),
            "{t}"
        );
        assert!(t.contains("edgeguard_signals_age_seconds "), "{t}");
        assert!(t.len() <= r.text_room());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_client_memory_is_three_series_read_from_the_memory() {
        let m = ClientMemory::private(&crate::clients::Config {
            bytes: 1 << 20,
            ..Default::default()
        })
        .unwrap();
        let r = Registry::new(&Spec {
            clients: Some(&m),
            ..spec(Engine::Rust, &[], false, &[])
        });
        let key = crate::clients::ClientKey {
            prefix: crate::clients::Prefix::of([192, 0, 2, 1].into(), crate::clients::Width::Host),
            fingerprint: b"f",
        };
        let e = crate::clients::Event::request(crate::clients::Fetch::Navigation, b"/");
        m.observe(&key, &e, 1_800_000_000_000).unwrap();
        let values = vec![0.0; r.len()];
        let mut out = String::new();
        r.write_text(&values, &mut out).unwrap();
        assert!(out.contains(&format!(
            "# TYPE edgeguard_client_memory_bytes gauge\nedgeguard_client_memory_bytes {}\n",
            m.gauges().bytes
        )));
        assert!(out.contains("edgeguard_client_memory_clients 1\n"));
        assert!(out.contains(
            "# TYPE edgeguard_client_memory_evictions_total counter\nedgeguard_client_memory_evictions_total 0\n"
        ));
        assert!(out.len() <= r.text_room());
    }
}
