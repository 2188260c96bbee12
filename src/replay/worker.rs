//! The work on one batch: parse each line, run the gate on it under one or
//! two configurations (strip, score, decide: what nginx runs), count, and
//! write the per-request output line.
//!
//! A worker owns every buffer it uses (parse scratch, scores, header
//! indices) and writes output into the batch's own buffer, so once the
//! buffers have grown to fit, a line without JSON escapes costs no
//! allocation (see `tests/replay_alloc.rs` for lines with escapes).

use std::io::Write;

use crate::challenge::Clearance;
use crate::features::{Grade, Reasons};
use crate::gate::{self, Job, Scratch};
use crate::headers::HeaderBuf;
use crate::load::Config;
use crate::outcome::Outcome;
use crate::signals::live::Lookup;
use crate::verified::Verdict;

use super::input::Batch;
use super::number::{push_f64, push_u64};
use super::options::{unix_now, Options};
use super::record::{self, Parsed};
use super::seen::{Observer, Seen};
use super::summary::{ConfigSummary, Flip, Summary};

/// One configuration's view of one request.
struct Side<'c> {
    config: &'c Config,
    /// The gate's buffers, for decisions only (no texts).
    scratch: Scratch,
    /// The last request's scores (NaN when unscored).
    scores: Vec<f64>,
    /// Each model's name as a JSON string, written once here rather than
    /// checked and quoted on every output line.
    quoted: Vec<Vec<u8>>,
    /// The client's headers of a request a trusted hop relayed, for the
    /// observer.
    relayed: HeaderBuf,
}

/// Who is handed the primary side's effects of one request, and the
/// line's facts the gate does not carry.
struct Watch<'w, 'o, 'p> {
    observe: &'w mut Observer<'o>,
    time: Option<u64>,
    ja4: Option<&'p [u8]>,
}

/// The result of one side for one request.
#[derive(Clone, Copy)]
struct Judged {
    action: Outcome,
    flagged_by: Option<usize>,
    bot: Option<Verdict>,
    clearance: Clearance,
    stripped: usize,
    scored: bool,
    /// The site rule that decided it, and the action it gets without rules.
    rule: Option<(usize, Outcome)>,
    /// What the fleet signals snapshot knew of its keys (none: no snapshot
    /// in force).
    fleet: Option<Lookup>,
    /// How surely it was flagged, and why.
    grade: Grade,
    reasons: Reasons,
}

impl Side<'_> {
    /// Runs the gate on `req`, as nginx's `access()` does, and counts what
    /// it came to.
    fn evaluate(
        &mut self,
        req: &gate::Incoming<'_>,
        now: u64,
        tally: &mut ConfigSummary,
        watch: Option<Watch<'_, '_, '_>>,
    ) -> Judged {
        let loc = self.config.location();
        // Nothing given: the location strips and scores itself.
        let Ok(e) = gate::run(loc, req, Job::Access, now, &mut self.scratch) else {
            unreachable!("no scores are given")
        };
        if let Some(w) = watch {
            // Behind a trusted hop, the request as the client sent it and
            // the TLS it reported: the line's JA4 is the hop's connection.
            match gate::relay(loc, req, &mut self.relayed) {
                Some(r) => (w.observe)(&Seen {
                    time: w.time,
                    request: &req.judged(r.http),
                    ja4: r.http.tls().map(|t| t.ja4()),
                    effects: &e,
                }),
                None => (w.observe)(&Seen {
                    time: w.time,
                    request: req,
                    ja4: w.ja4,
                    effects: &e,
                }),
            }
        }
        let stripped = e.matched;
        tally.headers_stripped += stripped as u64;
        tally.requests_stripped += u64::from(stripped > 0);
        match e.scores {
            Some(s) => self.scores.copy_from_slice(s),
            None => self.scores.fill(f64::NAN),
        }
        // Never expected: the scorer checked its models at load. nginx
        // lets such a request through unscored (or refuses it under
        // fail_closed), and so does the gate.
        tally.score_errors += u64::from(e.score_error.is_some());
        tally.actions[e.action.index()] += 1;
        for (m, &s) in tally.models.iter_mut().zip(&self.scores) {
            m.histogram.add(s);
        }
        let flagged_by = e.flagged.map(|(i, _)| i);
        if let Some(i) = flagged_by {
            tally.models[i].flagged[e.action.index()] += 1;
        }
        if e.grade != Grade::None {
            tally.grades[e.grade as usize] += 1;
            for id in e.reasons.iter() {
                tally.reasons[id as usize] += 1;
            }
        }
        let mut o = Judged {
            action: e.action,
            flagged_by,
            bot: e.bot.map(|(v, _)| v),
            clearance: e.clearance,
            stripped,
            scored: e.scores.is_some(),
            rule: None,
            fleet: e.fleet,
            grade: e.grade,
            reasons: e.reasons,
        };
        if let Some(r) = e.rule.map(|r| r.index) {
            // What the model (and the policy) would have done without the
            // rules: the same request again, rules off.
            self.scratch.set_rules(false);
            let without = gate::run(loc, req, Job::Access, now, &mut self.scratch)
                .map_or(o.action, |e| e.action);
            self.scratch.set_rules(true);
            if let Some(t) = tally.rules.get_mut(r) {
                t.decided += 1;
                t.without[without.index()] += 1;
            }
            o.rule = Some((r, without));
        }
        o
    }
}

/// Replays lines on one thread: the work of one pipeline worker, usable on
/// its own (to embed replay, or to measure it). Owns every buffer it
/// needs; once they have grown to fit, a line without JSON escapes costs no
/// heap allocation.
pub struct Worker<'c> {
    primary: Side<'c>,
    compare: Option<Side<'c>>,
    scratch: record::LineBufs,
    /// Whether to write per-request output lines.
    output: bool,
    /// Input names as JSON strings, when there are several.
    input_names: &'c [String],
    max_line: usize,
    /// Lines seen by [`Worker::replay_text`].
    text_lines: u64,
    /// The time of lines without `edgeguard_time`.
    now: u64,
    pub(crate) tally: Summary,
}

impl<'c> Worker<'c> {
    /// A worker deciding with `primary` (and `compare`), writing output
    /// lines when `output` is set.
    pub fn new(primary: &'c Config, compare: Option<&'c Config>, output: bool) -> Worker<'c> {
        let defaults = Options::default();
        Self::with(
            primary,
            compare,
            output,
            &[],
            defaults.max_line,
            defaults.samples,
            unix_now(),
        )
    }

    pub(crate) fn with(
        primary: &'c Config,
        compare: Option<&'c Config>,
        output: bool,
        input_names: &'c [String],
        max_line: usize,
        samples: usize,
        now: u64,
    ) -> Worker<'c> {
        let side = |config: &'c Config| Side {
            config,
            scratch: Scratch::decisions_only(),
            relayed: HeaderBuf::default(),
            scores: vec![0.0; config.model_count()],
            quoted: config.scorer().map_or(Vec::new(), |s| {
                s.models()
                    .iter()
                    .map(|m| {
                        let mut q = Vec::new();
                        // Writing to a Vec cannot fail.
                        let _ = write_json_str(&mut q, m.name());
                        q
                    })
                    .collect()
            }),
        };
        Worker {
            primary: side(primary),
            compare: compare.map(side),
            scratch: record::LineBufs::default(),
            output,
            input_names,
            max_line,
            text_lines: 0,
            now,
            tally: Summary::new(primary, compare, samples),
        }
    }

    /// Replays the newline-separated lines of `text` (numbered on from the
    /// previous call), appending output lines to `out`.
    pub fn replay_text(&mut self, text: &[u8], out: &mut Vec<u8>) {
        let mut rest = text;
        while !rest.is_empty() {
            let (line, next) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            self.text_lines += 1;
            let too_long = line.len() > self.max_line;
            self.line(0, self.text_lines, line, too_long, out, None);
            rest = next;
        }
    }

    /// Decides the lines of `batch` (output rows into `batch.out` as
    /// [`Worker::process`] does) and hands each request the primary
    /// configuration judged, with its effects, to `observe`: the requests
    /// `edgeguard signals` counts, judged by the very run replay makes.
    pub(crate) fn observe(&mut self, batch: &mut Batch, observe: &mut Observer<'_>) {
        let Batch {
            input,
            data,
            lines,
            out,
            ..
        } = batch;
        for l in lines.iter() {
            let line = &data[l.start..l.end];
            self.line(*input, l.number, line, l.too_long, out, Some(observe));
        }
    }

    /// What this worker has counted so far.
    pub fn summary(&self) -> &Summary {
        &self.tally
    }

    /// Processes every line of `batch`, writing output into `batch.out`.
    pub(crate) fn process(&mut self, batch: &mut Batch) {
        let Batch {
            input,
            data,
            lines,
            out,
            ..
        } = batch;
        for l in lines.iter() {
            self.line(
                *input,
                l.number,
                &data[l.start..l.end],
                l.too_long,
                out,
                None,
            );
        }
    }

    fn line(
        &mut self,
        input: usize,
        number: u64,
        line: &[u8],
        too_long: bool,
        out: &mut Vec<u8>,
        observe: Option<&mut Observer<'_>>,
    ) {
        if too_long {
            let max = self.max_line;
            self.tally.parse_error(
                input,
                number,
                format_args!("line longer than {max} bytes, skipped"),
            );
            return;
        }
        if line.trim_ascii().is_empty() {
            self.tally.blank_lines += 1;
            return;
        }
        // Taken out so that the parsed line (which borrows it) and `self`
        // can be used together; moving Vecs allocates nothing.
        let mut scratch = std::mem::take(&mut self.scratch);
        match record::parse(line, &mut scratch) {
            Ok(parsed) => {
                self.tally.requests += 1;
                let (primary, compare) = self.evaluate(&parsed, input, number, observe);
                if self.output {
                    // Writing to a Vec cannot fail.
                    let _ = self.write_line(out, &parsed, input, number, primary, compare);
                }
            }
            Err(e) => self.tally.parse_error(input, number, e),
        }
        self.scratch = scratch;
    }

    fn evaluate(
        &mut self,
        p: &Parsed<'_>,
        input: usize,
        line: u64,
        observe: Option<&mut Observer<'_>>,
    ) -> (Judged, Option<Judged>) {
        let req = gate::Incoming::new(p.method, p.uri, p.version, p.client, p.headers, p.tls)
            .with_peer(p.peer)
            .from_log();
        let tally = &mut self.tally;
        let now = p.time.unwrap_or(self.now);
        // The line's own time: what access() judged at, else nginx's.
        let watch = observe.map(|observe| Watch {
            observe,
            time: p.time.or(p.logged),
            ja4: p.ja4,
        });
        let primary = self.primary.evaluate(&req, now, &mut tally.primary, watch);
        let compare = match (&mut self.compare, &mut tally.compare) {
            (Some(side), Some(t)) => Some(side.evaluate(&req, now, t, None)),
            _ => None,
        };
        if let Some(c) = compare {
            let (a, b) = (primary.action, c.action);
            tally.flips[a.index()][b.index()] += 1;
            if a != b && tally.flip_samples.len() < tally.samples {
                tally.flip_samples.push(Flip {
                    input,
                    line,
                    from: a,
                    to: b,
                    scores: self.primary.scores.clone(),
                    compare_scores: self
                        .compare
                        .as_ref()
                        .map_or(Vec::new(), |s| s.scores.clone()),
                });
            }
        }
        if let Some(live) = p.live_action {
            tally.live.with_action += 1;
            tally.live.actions[live.index()][primary.action.index()] += 1;
        }
        if let Some(scorer) = self.primary.config.scorer() {
            for (m, &score) in scorer.models().iter().zip(&self.primary.scores) {
                if let Some(live) = p.live_score(m.name()) {
                    let diff = (live.value - score).abs();
                    tally.live.scores_compared += 1;
                    tally.live.scores_differing += u64::from(!live.matches(score));
                    tally.live.max_score_diff = tally.live.max_score_diff.max(diff);
                }
            }
        }
        (primary, compare)
    }

    /// `{"line":N,"stripped":S,"action":"block","flagged":"bot","scores":{"bot":0.93,...},
    /// "compare":{...},"live_action":"block","ja4":"t13d..."}`, plus `"input":"name"` with
    /// several inputs.
    fn write_line(
        &self,
        out: &mut Vec<u8>,
        p: &Parsed<'_>,
        input: usize,
        line: u64,
        primary: Judged,
        compare: Option<Judged>,
    ) -> std::io::Result<()> {
        out.push(b'{');
        if self.input_names.len() > 1 {
            write!(out, "\"input\":{},", self.input_names[input])?;
        }
        out.extend_from_slice(b"\"line\":");
        push_u64(out, line);
        out.push(b',');
        write_side(out, &self.primary, primary)?;
        if let (Some(side), Some(outcome)) = (&self.compare, compare) {
            out.extend_from_slice(b",\"compare\":{");
            write_side(out, side, outcome)?;
            out.push(b'}');
        }
        if let Some(a) = p.live_action {
            out.extend_from_slice(b",\"live_action\":\"");
            out.extend_from_slice(a.as_str().as_bytes());
            out.push(b'"');
        }
        if let Some(ja4) = p.ja4 {
            // Checked by the parser: 36 ASCII letters, digits and `_`.
            out.extend_from_slice(b",\"ja4\":\"");
            out.extend_from_slice(ja4);
            out.push(b'"');
        }
        out.extend_from_slice(b"}\n");
        Ok(())
    }
}

fn write_side(out: &mut Vec<u8>, side: &Side<'_>, o: Judged) -> std::io::Result<()> {
    out.extend_from_slice(b"\"stripped\":");
    push_u64(out, o.stripped as u64);
    out.extend_from_slice(b",\"action\":\"");
    out.extend_from_slice(o.action.as_str().as_bytes());
    out.extend_from_slice(b"\",\"flagged\":");
    match o.flagged_by.and_then(|i| side.quoted.get(i)) {
        Some(name) => out.extend_from_slice(name),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"scores\":{");
    for (i, (name, &score)) in side.quoted.iter().zip(&side.scores).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(name);
        out.push(b':');
        if o.scored && score.is_finite() {
            push_f64(out, score);
        } else {
            out.extend_from_slice(b"null");
        }
    }
    out.push(b'}');
    // A flagged request's grade and detection IDs (docs/detections.md).
    if o.grade != Grade::None {
        out.extend_from_slice(b",\"grade\":\"");
        out.extend_from_slice(o.grade.as_str().as_bytes());
        out.extend_from_slice(b"\",\"reasons\":[");
        for (i, id) in o.reasons.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(id.detection().name.as_bytes());
            out.push(b'"');
        }
        out.push(b']');
    }
    if let (Some((i, without)), Some(rules)) = (o.rule, side.config.location().rules()) {
        out.extend_from_slice(b",\"rule\":");
        write_json_str(out, rules.describe(i).map_or("", |d| d.name))?;
        out.extend_from_slice(b",\"without_rules\":\"");
        out.extend_from_slice(without.as_str().as_bytes());
        out.push(b'"');
    }
    // The fleet's counts of the key that answered (`null`: unknown to the
    // fleet), with a snapshot in force; the keys of $edgeguard_fp_*.
    if let Some(f) = o.fleet {
        out.extend_from_slice(b",\"fp\":");
        match f.answer() {
            None => out.extend_from_slice(b"null"),
            Some((kind, c)) => {
                write!(
                    out,
                    "{{\"key\":\"{}\",\"requests\":{},\"prefixes\":{},\"user_agents\":{},\"flagged\":",
                    kind.as_str(),
                    c.requests,
                    c.prefixes(),
                    c.user_agents
                )?;
                push_f64(out, c.flagged_share());
                out.extend_from_slice(b",\"solved\":");
                match c.solved_share() {
                    Some(x) => push_f64(out, x),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"cleared\":");
                push_f64(out, c.cleared_share());
                out.push(b'}');
            }
        }
    }
    // The challenge's and the verified bots' part, when they had one.
    let bots = side.config.policy().verified_bots();
    if let (Some(v), Some(bots)) = (o.bot, bots) {
        let key = match v {
            Verdict::Verified(_) => ",\"verified_bot\":",
            Verdict::Fake(_) => ",\"fake_bot\":",
        };
        out.extend_from_slice(key.as_bytes());
        write_json_str(out, bots.name(v.bot()).unwrap_or_default())?;
    }
    match o.clearance {
        Clearance::Absent => {}
        c => write!(out, ",\"clearance\":\"{}\"", c.as_str())?,
    }
    Ok(())
}

/// `s` as a JSON string. Names are free of control characters and quotes
/// are rare enough that escaping them through serde_json is fine.
fn write_json_str(out: &mut Vec<u8>, s: &str) -> std::io::Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, s).map_err(std::io::Error::other)
    }
}
