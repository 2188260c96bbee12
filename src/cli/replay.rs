//! `edgeguard replay`: score recorded traffic offline with a configuration,
//! optionally against a second one, and report what each would decide.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use edgeguard::load::Config;
use edgeguard::replay::{self, Input, Options};

/// Scores every request of the JSON Lines FILEs (or stdin; gzip is detected)
/// as nginx would with CONFIG, and prints a summary on stderr.
/// The long description of `--help`.
pub const LONG_ABOUT: &str =
    "Scores every request of the JSON Lines FILEs (or stdin; gzip is detected)
as nginx would with CONFIG, and prints a summary on stderr.

Input lines: the requests of `edgeguard features`
  {\"method\": \"GET\", \"uri\": \"/\", \"version\": \"1.1\", \"client\": \"192.0.2.1\",
   \"headers\": [[\"host\", \"x\"], ...]}
or access-log lines of `log_format edgeguard_json` (nginx-conf/log-format.conf),
whose live $edgeguard_action and scores are compared with the replay.
Bad lines are counted and reported with their numbers, never fatal.

With --kafka-brokers, --topic and --group it reads a Kafka topic instead, as
a member of a consumer group (one request line per message; instances with
one group share the partitions), commits offsets only once the results are
written, and runs until SIGTERM or SIGINT (or --exit-at-end). Its --output
is appended to, never truncated. See docs/kafka.md.";

#[derive(clap::Args, Debug)]
#[command(override_usage = "edgeguard replay --config CONFIG [options] [FILE...]")]
pub struct Args {
    /// The configuration (JSON; see `edgeguard::config`)
    #[arg(long, value_name = "CONFIG", required = true)]
    config: PathBuf,
    /// Also decide with CONFIG2 and report the decision flips
    #[arg(long, value_name = "CONFIG2")]
    compare: Option<PathBuf>,
    /// Look fingerprints up in this signals snapshot (overrides the
    /// configurations' `signals`; docs/signals.md)
    #[arg(long, value_name = "FILE")]
    signals: Option<PathBuf>,
    /// Worker threads [default: all cores]
    #[arg(long, value_name = "N", value_parser = super::positive, allow_hyphen_values = true)]
    threads: Option<usize>,
    /// One JSON line per request (scores, action, stripped); `-` for stdout
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write output lines in input order
    #[arg(long)]
    ordered: bool,
    /// Write the summary to FILE instead of stderr
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Longest line read, in bytes [default: 1048576]
    #[arg(long, value_name = "BYTES", value_parser = super::positive, allow_hyphen_values = true)]
    max_line: Option<usize>,
    /// No progress bar, even on a terminal
    #[arg(long)]
    no_progress: bool,
    /// Judge clearance cookies at this Unix time when a line has no
    /// edgeguard_time [default: now]
    #[arg(long, value_name = "SECONDS")]
    now: Option<u64>,
    /// Input files (`-`: stdin); none: stdin
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) kafka: super::kafka::KafkaArgs,
}

impl Args {
    fn options(&self) -> Options {
        let mut options = Options::default();
        if let Some(n) = self.threads {
            options.threads = n;
        }
        if let Some(n) = self.max_line {
            options.max_line = n;
        }
        options.ordered = self.ordered;
        options.now = self.now;
        options.progress = !self.no_progress;
        options
    }
}

/// Runs the subcommand.
pub fn run(args: Args) -> ExitCode {
    match replay(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("edgeguard replay: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn replay(args: Args) -> Result<(), String> {
    args.kafka.check()?;
    let signals = args.signals.as_deref();
    let primary = Config::load_with_signals(&args.config, signals).map_err(|e| e.to_string())?;
    let compare = match &args.compare {
        Some(p) => Some(Config::load_with_signals(p, signals).map_err(|e| e.to_string())?),
        None => None,
    };
    if args.kafka.kafka_brokers.is_some() {
        return replay_kafka(&args, &primary, compare.as_ref());
    }
    let inputs = if args.files.is_empty() {
        vec![Input::stdin()]
    } else {
        args.files
            .iter()
            .map(|f| Input::open(f))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| e.to_string())?
    };
    let mut out: Option<Box<dyn Write>> = match &args.output {
        None => None,
        Some(p) if p == Path::new("-") => Some(Box::new(BufWriter::new(io::stdout().lock()))),
        Some(p) => Some(Box::new(BufWriter::new(
            File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        ))),
    };
    let summary = replay::run(
        inputs,
        &primary,
        compare.as_ref(),
        out.as_mut().map(|w| w.as_mut() as &mut dyn Write),
        &args.options(),
    )
    .map_err(|e| format!("writing output: {e}"))?;
    write_summary(&args, &summary.render())
}

fn write_summary(args: &Args, text: &str) -> Result<(), String> {
    match &args.summary {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display())),
        None => {
            eprint!("{text}");
            Ok(())
        }
    }
}

/// A Kafka topic instead of files. Rows are appended: after a restart the
/// rows of what was committed before are still there.
fn replay_kafka(args: &Args, primary: &Config, compare: Option<&Config>) -> Result<(), String> {
    let mut out: Option<Box<dyn Write>> = match &args.output {
        None => None,
        Some(p) if p == Path::new("-") => Some(Box::new(BufWriter::new(io::stdout().lock()))),
        Some(p) => Some(Box::new(BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("{}: {e}", p.display()))?,
        ))),
    };
    let rows = out.as_mut().map(|w| w.as_mut() as &mut dyn Write);
    let (text, failed) =
        super::kafka::replay(&args.kafka, primary, compare, rows, &args.options())?;
    write_summary(args, &text)?;
    if failed {
        return Err("stopped before the end: see the summary".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::tests::error_of;
    use crate::{Cli, Command};

    #[test]
    fn arguments() {
        let cli = Cli::try_parse_from([
            "edgeguard",
            "replay",
            "--config",
            "c.json",
            "--threads",
            "3",
            "--ordered",
            "a.jsonl",
            "-",
            "--compare",
            "d.json",
        ])
        .unwrap();
        let Command::Replay(a) = cli.command else {
            panic!("not replay")
        };
        assert_eq!(a.config, std::path::PathBuf::from("c.json"));
        assert_eq!(a.compare, Some("d.json".into()));
        assert_eq!(a.options().threads, 3);
        assert!(a.options().ordered);
        assert!(a.options().progress);
        assert_eq!(
            a.files,
            vec![std::path::PathBuf::from("a.jsonl"), "-".into()]
        );
        for (bad, want) in [
            (&["a.jsonl"][..], "--config is required"),
            (&["--config"][..], "--config needs a value"),
            (&["--config", "c", "--threads", "0"][..], "positive number"),
            (
                &["--config", "c", "--frobnicate"][..],
                "unknown option --frobnicate",
            ),
        ] {
            let args: Vec<&str> = std::iter::once("replay")
                .chain(bad.iter().copied())
                .collect();
            let err = error_of(&args);
            assert!(err.contains(want), "{bad:?}: {err}");
        }
    }
}
