//! What a replay found: counts, histograms, flips, and their text report.
//!
//! Each worker keeps its own [`Summary`] and they are merged at the end, so
//! counting costs no synchronisation. Samples (errors, flipped requests) keep
//! the lowest line numbers: a worker sees its batches in input order, so it
//! stops collecting once it holds enough, and the merge keeps the lowest of
//! all workers' — the report is the same whatever the thread count.

use crate::features::reasons::{DETECTIONS, DETECTION_COUNT};
use std::fmt::{self, Write as _};
use std::time::Duration;

use crate::load::Config;
use crate::outcome::Outcome;

/// How many actions there are: the size of the tables of counts.
const ACTIONS: usize = Outcome::ALL.len();

/// Bins of a score histogram over [0, 1].
pub const HISTOGRAM_BINS: usize = 20;

/// A line that could not be used.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineError {
    /// Index of the input (in the order given).
    pub input: usize,
    /// 1-based line number in that input.
    pub line: u64,
    /// Why it was skipped.
    pub message: String,
}

/// Scores of one model over [0, 1], in [`HISTOGRAM_BINS`] equal bins (1.0
/// falls in the last); regression scores outside the range are counted apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Counts per bin.
    pub bins: [u64; HISTOGRAM_BINS],
    /// Scores below 0.
    pub below: u64,
    /// Scores above 1.
    pub above: u64,
    /// NaN scores.
    pub nan: u64,
}

impl Histogram {
    /// Counts one score.
    pub fn add(&mut self, score: f64) {
        if score.is_nan() {
            self.nan += 1;
        } else if score < 0.0 {
            self.below += 1;
        } else if score > 1.0 {
            self.above += 1;
        } else {
            let bin = ((score * HISTOGRAM_BINS as f64) as usize).min(HISTOGRAM_BINS - 1);
            self.bins[bin] += 1;
        }
    }

    fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a += b;
        }
        self.below += other.below;
        self.above += other.above;
        self.nan += other.nan;
    }

    /// Every score counted.
    pub fn total(&self) -> u64 {
        self.bins.iter().sum::<u64>() + self.below + self.above + self.nan
    }
}

/// One model under one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSummary {
    /// The model's name.
    pub name: String,
    /// The threshold in force.
    pub threshold: Option<f64>,
    /// Requests this model flagged, by the action they got (indexed by
    /// [`Outcome::index`]; `pass` counts flags under mode `off`).
    pub flagged: [u64; ACTIONS],
    /// Its scores.
    pub histogram: Histogram,
}

/// What one configuration decided.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigSummary {
    /// The configuration file.
    pub path: String,
    /// Per model, in scorer order.
    pub models: Vec<ModelSummary>,
    /// Requests per action (indexed by [`Outcome::index`]).
    pub actions: [u64; ACTIONS],
    /// Internal header entries that would have been stripped.
    pub headers_stripped: u64,
    /// Requests with at least one internal header.
    pub requests_stripped: u64,
    /// Requests the scorer refused (a bug if ever non-zero).
    pub score_errors: u64,
    /// Per site rule, in the order they run (presets expanded).
    pub rules: Vec<RuleSummary>,
    /// Flagged requests by grade (indexed by [`Grade`] as a number:
    /// none, ambiguous, certain).
    pub grades: [u64; 3],
    /// Flagged requests per detection ID (indexed by its bit).
    pub reasons: [u64; DETECTION_COUNT],
}

/// What one site rule decided, and what the configuration without rules
/// would have done to the same requests.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSummary {
    /// The rule's name.
    pub name: String,
    /// Its action (`block` with its status: `block 451`).
    pub action: String,
    /// Requests it decided (the first rule they met).
    pub decided: u64,
    /// Those requests by the action they get without any rule (indexed by
    /// [`Outcome::index`]).
    pub without: [u64; ACTIONS],
}

impl ConfigSummary {
    pub(crate) fn new(config: &Config) -> ConfigSummary {
        let models = config.scorer().map_or(Vec::new(), |s| {
            (0..s.model_count())
                .map(|i| ModelSummary {
                    name: s.model_name(i).unwrap_or_default().to_owned(),
                    threshold: config.policy().threshold(i),
                    flagged: [0; ACTIONS],
                    histogram: Histogram::default(),
                })
                .collect()
        });
        ConfigSummary {
            path: config.path().display().to_string(),
            models,
            actions: [0; ACTIONS],
            headers_stripped: 0,
            requests_stripped: 0,
            score_errors: 0,
            grades: [0; 3],
            reasons: [0; DETECTION_COUNT],
            rules: config.location().rules().map_or(Vec::new(), |r| {
                (0..r.len())
                    .filter_map(|i| r.describe(i))
                    .map(|d| RuleSummary {
                        name: d.name.to_owned(),
                        action: match d.action {
                            crate::rules::Action::Block(status) => format!("block {status}"),
                            a => a.name().to_owned(),
                        },
                        decided: 0,
                        without: [0; ACTIONS],
                    })
                    .collect()
            }),
        }
    }

    fn merge(&mut self, other: &ConfigSummary) {
        for (a, b) in self.models.iter_mut().zip(&other.models) {
            for (x, y) in a.flagged.iter_mut().zip(&b.flagged) {
                *x += y;
            }
            a.histogram.merge(&b.histogram);
        }
        add_counts(&mut self.actions, &other.actions);
        self.headers_stripped += other.headers_stripped;
        self.requests_stripped += other.requests_stripped;
        self.score_errors += other.score_errors;
        add_counts(&mut self.grades, &other.grades);
        add_counts(&mut self.reasons, &other.reasons);
        for (a, b) in self.rules.iter_mut().zip(&other.rules) {
            a.decided += b.decided;
            add_counts(&mut a.without, &b.without);
        }
    }
}

/// A request the two configurations decide differently.
#[derive(Clone, Debug, PartialEq)]
pub struct Flip {
    /// Index of the input.
    pub input: usize,
    /// 1-based line number.
    pub line: u64,
    /// Outcome under the first configuration.
    pub from: Outcome,
    /// Outcome under the `--compare` configuration.
    pub to: Outcome,
    /// Scores under the first configuration.
    pub scores: Vec<f64>,
    /// Scores under the `--compare` configuration.
    pub compare_scores: Vec<f64>,
}

/// Replay against what nginx decided, for log lines carrying the live
/// `$edgeguard_action` and scores.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveSummary {
    /// Lines with a live action.
    pub with_action: u64,
    /// `[live action][replayed action]` counts.
    pub actions: [[u64; ACTIONS]; ACTIONS],
    /// Live scores compared with the replayed score of the same model.
    pub scores_compared: u64,
    /// Live scores differing from the replayed one by more than the digits
    /// nginx logged explain (half a unit in the last one: 5e-10 for
    /// edgeguard's `"%.9g"` of a score in [0.1, 1)).
    pub scores_differing: u64,
    /// The largest difference seen.
    pub max_score_diff: f64,
}

/// Everything a replay counted.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Input names, indexed by the `input` fields.
    pub inputs: Vec<String>,
    /// Inputs that ended in a read error (the lines before it count).
    pub input_errors: Vec<String>,
    /// Requests replayed.
    pub requests: u64,
    /// Empty lines, skipped silently.
    pub blank_lines: u64,
    /// Lines skipped: not JSON, not a request, a field name not UTF-8, too long.
    pub parse_errors: u64,
    /// The first few of them, lowest line numbers first.
    pub first_errors: Vec<LineError>,
    /// The first configuration.
    pub primary: ConfigSummary,
    /// The `--compare` configuration.
    pub compare: Option<ConfigSummary>,
    /// `[primary action][compare action]` counts (only with `--compare`).
    pub flips: [[u64; ACTIONS]; ACTIONS],
    /// The first few flipped requests.
    pub flip_samples: Vec<Flip>,
    /// Against nginx's own decisions.
    pub live: LiveSummary,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Worker threads used.
    pub threads: usize,
    /// How many errors and flips are kept as samples.
    pub samples: usize,
}

impl Summary {
    pub(crate) fn new(primary: &Config, compare: Option<&Config>, samples: usize) -> Summary {
        Summary {
            inputs: Vec::new(),
            input_errors: Vec::new(),
            requests: 0,
            blank_lines: 0,
            parse_errors: 0,
            first_errors: Vec::new(),
            primary: ConfigSummary::new(primary),
            compare: compare.map(ConfigSummary::new),
            flips: [[0; ACTIONS]; ACTIONS],
            flip_samples: Vec::new(),
            live: LiveSummary::default(),
            elapsed: Duration::ZERO,
            threads: 0,
            samples,
        }
    }

    /// Counts a skipped line; the message is built only if it is kept.
    pub(crate) fn parse_error(&mut self, input: usize, line: u64, message: impl fmt::Display) {
        self.parse_errors += 1;
        if self.first_errors.len() < self.samples {
            self.first_errors.push(LineError {
                input,
                line,
                message: message.to_string(),
            });
        }
    }

    /// Requests the two configurations decided differently.
    pub fn flipped(&self) -> u64 {
        let mut n = 0;
        for (i, row) in self.flips.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                if i != j {
                    n += c;
                }
            }
        }
        n
    }

    /// Adds another worker's counts.
    pub(crate) fn merge(&mut self, other: Summary) {
        self.requests += other.requests;
        self.blank_lines += other.blank_lines;
        self.parse_errors += other.parse_errors;
        self.first_errors.extend(other.first_errors);
        self.first_errors.sort();
        self.first_errors.truncate(self.samples);
        self.primary.merge(&other.primary);
        if let (Some(a), Some(b)) = (&mut self.compare, &other.compare) {
            a.merge(b);
        }
        for (a, b) in self.flips.iter_mut().zip(&other.flips) {
            add_counts(a, b);
        }
        self.flip_samples.extend(other.flip_samples);
        self.flip_samples.sort_by_key(|f| (f.input, f.line));
        self.flip_samples.truncate(self.samples);
        let live = &mut self.live;
        live.with_action += other.live.with_action;
        for (a, b) in live.actions.iter_mut().zip(&other.live.actions) {
            add_counts(a, b);
        }
        live.scores_compared += other.live.scores_compared;
        live.scores_differing += other.live.scores_differing;
        live.max_score_diff = live.max_score_diff.max(other.live.max_score_diff);
    }

    /// The report printed at the end of a run.
    pub fn render(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = self.render_into(&mut s);
        s
    }

    fn render_into(&self, s: &mut String) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            self.requests as f64 / secs
        } else {
            0.0
        };
        writeln!(
            s,
            "edgeguard replay: {} requests in {secs:.2} s ({rate:.0} requests/s, {} threads)",
            self.requests, self.threads
        )?;
        writeln!(
            s,
            "  parse errors: {}   blank lines: {}",
            self.parse_errors, self.blank_lines
        )?;
        for e in &self.first_errors {
            writeln!(
                s,
                "    {}:{}: {}",
                self.input_name(e.input),
                e.line,
                e.message
            )?;
        }
        if self.parse_errors > self.first_errors.len() as u64 {
            writeln!(
                s,
                "    ... {} more",
                self.parse_errors - self.first_errors.len() as u64
            )?;
        }
        for e in &self.input_errors {
            writeln!(s, "  input error: {e}")?;
        }
        render_config(s, "config", &self.primary, self.requests)?;
        if let Some(c) = &self.compare {
            render_config(s, "compare", c, self.requests)?;
            self.render_flips(s, c)?;
        }
        self.render_live(s)
    }

    fn input_name(&self, i: usize) -> &str {
        self.inputs.get(i).map_or("?", String::as_str)
    }

    fn render_flips(&self, s: &mut String, compare: &ConfigSummary) -> fmt::Result {
        writeln!(
            s,
            "\ndecision flips: {} of {} requests ({})",
            self.flipped(),
            self.requests,
            percent(self.flipped(), self.requests)
        )?;
        writeln!(
            s,
            "  rows: {}, columns: {}",
            self.primary.path, compare.path
        )?;
        write_matrix(s, &self.flips)?;
        if !self.flip_samples.is_empty() {
            writeln!(s, "  first flipped requests:")?;
        }
        for f in &self.flip_samples {
            writeln!(
                s,
                "    {}:{}: {} -> {}  scores {} -> {}",
                self.input_name(f.input),
                f.line,
                f.from.as_str(),
                f.to.as_str(),
                scores_text(&self.primary, &f.scores),
                scores_text(compare, &f.compare_scores),
            )?;
        }
        Ok(())
    }

    fn render_live(&self, s: &mut String) -> fmt::Result {
        let live = &self.live;
        if live.with_action == 0 && live.scores_compared == 0 {
            return Ok(());
        }
        let agree: u64 = (0..ACTIONS).map(|i| live.actions[i][i]).sum();
        writeln!(
            s,
            "\nagainst nginx's live decisions: {} lines with $edgeguard_action, {agree} agree ({})",
            live.with_action,
            percent(agree, live.with_action)
        )?;
        writeln!(s, "  rows: live, columns: replayed")?;
        write_matrix(s, &live.actions)?;
        writeln!(
            s,
            "  live scores compared: {}, differing beyond the logged precision: {}, max difference {:.3e}",
            live.scores_compared, live.scores_differing, live.max_score_diff
        )
    }
}

fn render_config(s: &mut String, label: &str, c: &ConfigSummary, requests: u64) -> fmt::Result {
    writeln!(s, "\n{label}: {}", c.path)?;
    write!(s, "  actions:")?;
    for a in Outcome::of_gate() {
        let n = c.actions[a.index()];
        write!(s, "  {} {n} ({})", a.as_str(), percent(n, requests))?;
    }
    writeln!(s)?;
    writeln!(
        s,
        "  internal headers stripped: {} in {} requests",
        c.headers_stripped, c.requests_stripped
    )?;
    if c.score_errors > 0 {
        writeln!(s, "  SCORING ERRORS: {}", c.score_errors)?;
    }
    render_reasons(s, c)?;
    for m in &c.models {
        let t = m
            .threshold
            .map_or_else(|| "none".to_owned(), |t| format!("{t}"));
        write!(s, "  model {} (threshold {t}): flagged", m.name)?;
        for a in [Outcome::Block, Outcome::Log, Outcome::Allow, Outcome::Pass] {
            write!(s, " {} {}", a.as_str(), m.flagged[a.index()])?;
        }
        writeln!(s)?;
        render_histogram(s, &m.histogram, m.threshold)?;
    }
    render_rules(s, &c.rules)
}

/// Flagged requests by grade, and per detection ID (most first): what
/// docs/detections.md names.
fn render_reasons(s: &mut String, c: &ConfigSummary) -> fmt::Result {
    let [_, ambiguous, certain] = c.grades;
    if ambiguous + certain == 0 {
        return Ok(());
    }
    write!(
        s,
        "  flagged: certain {certain}, ambiguous {ambiguous}; reasons:"
    )?;
    let mut ids: Vec<(u64, &str)> = DETECTIONS
        .iter()
        .zip(&c.reasons)
        .filter(|(_, &n)| n > 0)
        .map(|(d, &n)| (n, d.name))
        .collect();
    ids.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    for (n, name) in ids {
        write!(s, " {name} {n}")?;
    }
    writeln!(s)
}

/// Per rule that decided a request: how many, and what they would have
/// got without the rules (what the rule changes, before shipping it).
fn render_rules(s: &mut String, rules: &[RuleSummary]) -> fmt::Result {
    if rules.is_empty() {
        return Ok(());
    }
    let decided: u64 = rules.iter().map(|r| r.decided).sum();
    writeln!(
        s,
        "  rules: {}, which decided {decided} requests ({} decided none)",
        rules.len(),
        rules.iter().filter(|r| r.decided == 0).count()
    )?;
    for r in rules.iter().filter(|r| r.decided > 0) {
        write!(
            s,
            "    {} ({}): {} requests; without rules:",
            r.name, r.action, r.decided
        )?;
        for a in Outcome::ALL {
            let n = r.without[a.index()];
            if n > 0 {
                write!(s, " {} {n}", a.as_str())?;
            }
        }
        writeln!(s)?;
    }
    Ok(())
}

fn render_histogram(s: &mut String, h: &Histogram, threshold: Option<f64>) -> fmt::Result {
    const WIDTH: u64 = 40;
    let max = h.bins.iter().copied().max().unwrap_or(0).max(1);
    let step = 1.0 / HISTOGRAM_BINS as f64;
    for (i, &n) in h.bins.iter().enumerate() {
        let lo = i as f64 * step;
        // A bar that is not empty shows at least one mark.
        let bar = (n * WIDTH).div_ceil(max) as usize;
        let mark = match threshold {
            // The last bin is closed: a threshold of 1 is marked there.
            Some(t) if t >= lo && (t < lo + step || (i + 1 == HISTOGRAM_BINS && t <= 1.0)) => {
                " <- threshold"
            }
            _ => "",
        };
        let row = format!(
            "    [{lo:.2}, {:.2}{} {n:>10} {}{mark}",
            lo + step,
            if i + 1 == HISTOGRAM_BINS { ']' } else { ')' },
            "#".repeat(bar)
        );
        writeln!(s, "{}", row.trim_end())?;
    }
    if h.below + h.above + h.nan > 0 {
        writeln!(
            s,
            "    below 0: {}  above 1: {}  NaN: {}",
            h.below, h.above, h.nan
        )?;
    }
    Ok(())
}

fn scores_text(c: &ConfigSummary, scores: &[f64]) -> String {
    let parts: Vec<String> = c
        .models
        .iter()
        .zip(scores)
        .map(|(m, s)| format!("{}={s:.6}", m.name))
        .collect();
    format!("[{}]", parts.join(" "))
}

fn percent(n: u64, of: u64) -> String {
    if of == 0 {
        return "-".to_owned();
    }
    format!("{:.2}%", n as f64 * 100.0 / of as f64)
}

fn add_counts<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// An outcome-by-outcome table of counts (rows: one run, columns: the
/// other), rows as wide as the longest word, a column as its own.
fn write_matrix(s: &mut String, cells: &[[u64; ACTIONS]; ACTIONS]) -> fmt::Result {
    let rows = Outcome::of_gate()
        .map(|a| a.as_str().len())
        .max()
        .unwrap_or(10);
    write!(s, "  {:>rows$}", "")?;
    for a in Outcome::of_gate() {
        write!(s, " {:>w$}", a.as_str(), w = a.column())?;
    }
    writeln!(s)?;
    for a in Outcome::of_gate() {
        write!(s, "  {:>rows$}", a.as_str())?;
        for b in Outcome::of_gate() {
            write!(s, " {:>w$}", cells[a.index()][b.index()], w = b.column())?;
        }
        writeln!(s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bins() {
        let mut h = Histogram::default();
        for s in [0.0, 0.049, 0.05, 0.5, 0.999, 1.0, -0.1, 1.5, f64::NAN] {
            h.add(s);
        }
        assert_eq!(h.bins[0], 2);
        assert_eq!(h.bins[1], 1);
        assert_eq!(h.bins[10], 1);
        assert_eq!(h.bins[19], 2);
        assert_eq!((h.below, h.above, h.nan), (1, 1, 1));
        assert_eq!(h.total(), 9);
    }
}
