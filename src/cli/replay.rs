//! `edgeguard replay`: score recorded traffic offline with a configuration,
//! optionally against a second one, and report what each would decide.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use edgeguard::config::Config;
use edgeguard::replay::{self, Input, Options};

const USAGE: &str = "usage: edgeguard replay --config CONFIG [options] [FILE...]

Scores every request of the JSON Lines FILEs (or stdin; gzip is detected)
as nginx would with CONFIG, and prints a summary on stderr.

Input lines: the requests of `edgeguard features`
  {\"method\": \"GET\", \"uri\": \"/\", \"version\": \"1.1\", \"client\": \"192.0.2.1\",
   \"headers\": [[\"host\", \"x\"], ...]}
or access-log lines of `log_format edgeguard_json` (nginx-conf/log-format.conf),
whose live $edgeguard_action and scores are compared with the replay.
Bad lines are counted and reported with their numbers, never fatal.

options:
  --config CONFIG     the configuration (JSON; see `edgeguard::config`)
  --compare CONFIG2   also decide with CONFIG2 and report the decision flips
  --threads N         worker threads (default: all cores)
  --output FILE       one JSON line per request (scores, action, stripped);
                      `-` for stdout
  --ordered           write output lines in input order
  --summary FILE      write the summary to FILE instead of stderr
  --max-line BYTES    longest line read (default 1048576)
  --no-progress       no progress line, even on a terminal
";

struct Args {
    config: PathBuf,
    compare: Option<PathBuf>,
    output: Option<PathBuf>,
    summary: Option<PathBuf>,
    files: Vec<PathBuf>,
    options: Options,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut config = None;
    let mut compare = None;
    let mut output = None;
    let mut summary = None;
    let mut files = Vec::new();
    let mut options = Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |name: &str, v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{name} needs a positive number, got {v:?}"))
        };
        match arg.as_str() {
            "--config" => config = Some(PathBuf::from(value(arg)?)),
            "--compare" => compare = Some(PathBuf::from(value(arg)?)),
            "--output" => output = Some(PathBuf::from(value(arg)?)),
            "--summary" => summary = Some(PathBuf::from(value(arg)?)),
            "--threads" => options.threads = number(arg, value(arg)?)?,
            "--max-line" => options.max_line = number(arg, value(arg)?)?,
            "--ordered" => options.ordered = true,
            "--no-progress" => options.progress = false,
            "-" => files.push(PathBuf::from("-")),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            file => files.push(PathBuf::from(file)),
        }
    }
    Ok(Args {
        config: config.ok_or("--config is required")?,
        compare,
        output,
        summary,
        files,
        options,
    })
}

/// Runs the subcommand with the arguments after its name.
pub fn run(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("edgeguard replay: {msg}\n");
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match replay(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("edgeguard replay: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn replay(args: Args) -> Result<(), String> {
    let primary = Config::load(&args.config).map_err(|e| e.to_string())?;
    let compare = match &args.compare {
        Some(p) => Some(Config::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
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
        &args.options,
    )
    .map_err(|e| format!("writing output: {e}"))?;
    let text = summary.render();
    match &args.summary {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display())),
        None => {
            eprint!("{text}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments() {
        let a = parse_args(&strings(&[
            "--config",
            "c.json",
            "--threads",
            "3",
            "--ordered",
            "a.jsonl",
            "-",
            "--compare",
            "d.json",
        ]))
        .unwrap();
        assert_eq!(a.config, PathBuf::from("c.json"));
        assert_eq!(a.compare, Some(PathBuf::from("d.json")));
        assert_eq!(a.options.threads, 3);
        assert!(a.options.ordered);
        assert_eq!(a.files, vec![PathBuf::from("a.jsonl"), PathBuf::from("-")]);
        for (bad, want) in [
            (&["a.jsonl"][..], "--config is required"),
            (&["--config"][..], "--config needs a value"),
            (&["--config", "c", "--threads", "0"][..], "positive number"),
            (
                &["--config", "c", "--frobnicate"][..],
                "unknown option --frobnicate",
            ),
        ] {
            let err = parse_args(&strings(bad)).err().expect("refused");
            assert!(err.contains(want), "{bad:?}: {err}");
        }
    }
}
