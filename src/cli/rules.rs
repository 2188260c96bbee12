//! `edgeguard rules`: check a rules file offline, and see which rule
//! recorded requests meet, with the code nginx runs.

use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use edgeguard::features::{extract, FeatureVector};
use edgeguard::headers::Header;
use edgeguard::replay::LineReader;
use edgeguard::rules::{Action, BotView, Context, Matched, NormalPath, Rules, Stage, View};
use edgeguard::signals::{Lookup, Snapshot};
use edgeguard::verified::VerifiedBots;

/// The long description of `--help`.
pub const LONG_ABOUT: &str = "Rules files (docs/rules.md), checked and tried offline.

  edgeguard rules check FILE
    compiles FILE as nginx would and prints its rules, one per line
    (presets expanded), in the order they run; or the reason it is
    refused, naming the file, the rule and the field (exit status 1).

  edgeguard rules eval FILE [--bots FILE] [--score MODEL=VALUE]... < requests.jsonl
    reads requests in replay's line format ({\"method\": ..., \"uri\": ...,
    \"client\": ..., \"headers\": [[name, value], ...]}) and prints, per
    line, the rule that decides it and the action, or null for the
    default (the model decides). --bots judges verified-bot claims with a
    verified_bots file; --score gives every request that model's score,
    so that rules with a score condition run too.

--model NAME (repeated) names the models score conditions may refer to;
by default bot and spoof (the shipped models), or the --score models.";

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "edgeguard rules check [--model NAME]... FILE\n       \
                      edgeguard rules eval [--model NAME]... [--bots FILE] [--score MODEL=VALUE]... FILE < requests.jsonl"
)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Compile a rules file and print its rules, or why it is refused
    Check {
        #[command(flatten)]
        common: Common,
    },
    /// Print the rule each JSON Lines request meets
    Eval {
        #[command(flatten)]
        common: Common,
        /// A verified_bots file to judge bot claims with
        #[arg(long, value_name = "FILE")]
        bots: Option<PathBuf>,
        /// A model's score for every request (MODEL=VALUE), repeatable
        #[arg(long, value_name = "MODEL=VALUE", value_parser = score)]
        score: Vec<(String, f64)>,
        /// A signals snapshot to look each request's fingerprint keys up
        /// in (whatever its age), for `signal` conditions
        #[arg(long, value_name = "FILE")]
        signals: Option<PathBuf>,
    },
}

#[derive(clap::Args, Debug)]
struct Common {
    /// The rules file
    file: PathBuf,
    /// A model score conditions may name (repeatable; default bot, spoof)
    #[arg(long, value_name = "NAME")]
    model: Vec<String>,
}

fn score(v: &str) -> Result<(String, f64), String> {
    let (m, s) = v
        .split_once('=')
        .ok_or_else(|| format!("{v:?} is not MODEL=VALUE"))?;
    let s: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if m.is_empty() || !s.is_finite() {
        return Err(format!("{v:?} is not MODEL=VALUE"));
    }
    Ok((m.to_owned(), s))
}

fn models(common: &Common, scores: &[(String, f64)]) -> Vec<String> {
    let mut m = common.model.clone();
    for (name, _) in scores {
        if !m.contains(name) {
            m.push(name.clone());
        }
    }
    if m.is_empty() {
        m = vec!["bot".into(), "spoof".into()];
    }
    m
}

fn load(file: &Path, models: &[String]) -> Result<Rules, ExitCode> {
    let names: Vec<&str> = models.iter().map(String::as_str).collect();
    Rules::load(file, &Context { models: &names }).map_err(|e| {
        eprintln!("edgeguard rules: {e}");
        ExitCode::FAILURE
    })
}

/// Runs the subcommand.
pub fn run(args: Args) -> ExitCode {
    match args.command {
        Command::Check { common } => {
            let rules = match load(&common.file, &models(&common, &[])) {
                Ok(r) => r,
                Err(code) => return code,
            };
            match print_rules(&rules, io::stdout().lock()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Command::Eval {
            common,
            bots,
            score,
            signals,
        } => {
            let models = models(&common, &score);
            let rules = match load(&common.file, &models) {
                Ok(r) => r,
                Err(code) => return code,
            };
            let bots = match bots.as_deref().map(VerifiedBots::load).transpose() {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("edgeguard rules: --bots {e}");
                    return ExitCode::FAILURE;
                }
            };
            let signals = match signals.as_deref().map(Snapshot::load).transpose() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("edgeguard rules: --signals {e}");
                    return ExitCode::FAILURE;
                }
            };
            // In the order of `models`; a model without --score is unscored.
            let scores: Option<Vec<f64>> = (!score.is_empty()).then(|| {
                models
                    .iter()
                    .map(|m| score.iter().find(|(n, _)| n == m).map_or(f64::NAN, |s| s.1))
                    .collect()
            });
            match eval(
                &rules,
                bots.as_ref(),
                signals.as_ref(),
                scores.as_deref(),
                io::stdin().lock(),
                io::stdout().lock(),
            ) {
                Ok(0) => ExitCode::SUCCESS,
                Ok(bad) => {
                    eprintln!("edgeguard rules: {bad} bad line(s)");
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("edgeguard rules: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn print_rules(rules: &Rules, out: impl Write) -> io::Result<()> {
    let mut out = BufWriter::new(out);
    let after = (0..rules.len())
        .filter(|&i| {
            rules
                .describe(i)
                .is_some_and(|d| d.stage == Stage::AfterScoring)
        })
        .count();
    writeln!(
        out,
        "{}: {} rules ({} before scoring, {} after)",
        rules.source(),
        rules.len(),
        rules.len() - after,
        after
    )?;
    for i in 0..rules.len() {
        let Some(d) = rules.describe(i) else { break };
        let stage = match d.stage {
            Stage::BeforeScoring => "before",
            Stage::AfterScoring => "after",
        };
        let action = match d.action {
            Action::Block(s) => format!("block {s}"),
            a => a.name().to_owned(),
        };
        let tag = if d.tag.is_empty() {
            String::new()
        } else {
            format!(" tag={}", d.tag)
        };
        writeln!(
            out,
            "{i:>4} {stage:<6} {:<28} {action:<9}{tag}  when {}  [{}]",
            d.name, d.when, d.from
        )?;
    }
    out.flush()
}

fn matched_json(m: Option<Matched<'_>>, stage: &str) -> serde_json::Value {
    match m {
        None => serde_json::json!({"rule": null}),
        Some(m) => {
            let mut v = serde_json::json!({
                "rule": m.name, "index": m.index, "stage": stage, "action": m.action.name(),
            });
            if let Action::Block(s) = m.action {
                v["status"] = s.into();
            }
            if !m.tag.is_empty() {
                v["tag"] = m.tag.into();
            }
            v
        }
    }
}

/// Evaluates every line; returns how many were bad.
fn eval(
    rules: &Rules,
    bots: Option<&VerifiedBots>,
    signals: Option<&Snapshot>,
    scores: Option<&[f64]>,
    input: impl BufRead,
    output: impl Write,
) -> io::Result<usize> {
    let mut out = BufWriter::new(output);
    let mut reader = LineReader::new();
    let mut scratch = NormalPath::new();
    let mut bad = 0;
    for (n, raw) in input.split(b'\n').enumerate() {
        let raw = raw?;
        if raw.trim_ascii().is_empty() {
            continue;
        }
        let req = match reader.read(&raw) {
            Ok(req) => req,
            Err(e) => {
                bad += 1;
                eprintln!("edgeguard rules: line {}: {e}", n + 1);
                continue;
            }
        };
        let headers: Vec<Header<'_>> = req.headers().map(|(k, v)| Header::new(k, v)).collect();
        let mut view = View::of(&req, &headers);
        view.bot = bots.and_then(|b| {
            b.judge(view.user_agent, view.client)
                .and_then(|v| BotView::of(b, v))
        });
        view.fleet = signals.map(|s| {
            let mut v = FeatureVector::new();
            extract(&req, &mut v);
            Lookup::of_request(s, &req, &v)
        });
        let mut line = match rules.before_scoring(&view, &mut scratch) {
            Some(m) => matched_json(Some(m), "before"),
            None => match scores {
                Some(s) => {
                    let scored = View { scores: s, ..view };
                    let m = rules.after_scoring(&scored, &mut scratch);
                    matched_json(m, "after")
                }
                None => matched_json(None, ""),
            },
        };
        line["line"] = (n + 1).into();
        if let Some(f) = view.fleet {
            line["fp"] = f.answer().map_or(serde_json::Value::Null, |(k, c)| {
                serde_json::json!({"key": k.as_str(), "requests": c.requests, "prefixes": c.prefixes(),
                                   "user_agents": c.user_agents, "flagged": c.flagged_share(),
                                   "solved": c.solved_share(), "cleared": c.cleared_share()})
            });
        }
        if let Some(b) = view.bot {
            line["bot"] = serde_json::json!({"name": b.name, "category": b.category.name(), "verified": b.verified});
        }
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(bad)
}
