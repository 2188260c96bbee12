//! `edgeguard signals`: fleet fingerprint signals from the request log.
//! Each request is judged by replay's own run of the gate (`--config`, as
//! `edgeguard replay` judges it), counted per fingerprint key over a
//! sliding window of event time, and the window is written as a snapshot
//! file (docs/signals.md).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use edgeguard::gate::Config;
use edgeguard::replay::{self, Input, Options};
use edgeguard::signals::{Observer, Settings, Snapshot, Window};

/// The long description of `--help`.
pub const LONG_ABOUT: &str =
    "Counts, per fingerprint key (the connection's JA4; the claimed User-Agent
family and header order), over a sliding window of the requests' own times:
requests, distinct client /24 and /48 prefixes and User-Agents (HyperLogLog),
and how many were flagged, challenged, solved a challenge, carried a
clearance. Each request is judged as `edgeguard replay --config CONFIG`
judges it. Writes the snapshot file nginx and replay load (atomically: a
temporary file renamed over OUT).

Input: access-log lines of `log_format edgeguard_json` (or
edgeguard_json_challenge), files or stdin, gzip detected. A line's time is
its edgeguard_time, else nginx's `time` ($time_iso8601), else the clock.
See docs/signals.md.";

#[derive(clap::Args, Debug)]
#[command(override_usage = "edgeguard signals --config CONFIG --out SNAPSHOT [options] [FILE...]")]
pub struct Args {
    /// The configuration requests are judged with (as `edgeguard replay`)
    #[arg(long, value_name = "CONFIG", required = true)]
    config: PathBuf,
    /// Where to write the snapshot file
    #[arg(long, value_name = "SNAPSHOT", required = true)]
    out: PathBuf,
    /// Seconds the counts cover
    #[arg(long, value_name = "SECONDS", default_value_t = 3600, value_parser = positive_u64)]
    window: u64,
    /// Cells the window is cut into (it slides a cell at a time)
    #[arg(long, value_name = "N", default_value_t = 60, value_parser = positive_u64)]
    buckets: u64,
    /// Leave out keys with fewer requests in the window
    #[arg(long, value_name = "N", default_value_t = 1)]
    min_requests: u64,
    /// The most keys tracked at once; requests of further new keys are
    /// counted as untracked
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = super::positive)]
    max_keys: usize,
    /// Judge clearance cookies at this Unix time when a line has no
    /// edgeguard_time [default: now]
    #[arg(long, value_name = "SECONDS")]
    now: Option<u64>,
    /// Longest line read, in bytes [default: 1048576]
    #[arg(long, value_name = "BYTES", value_parser = super::positive)]
    max_line: Option<usize>,
    /// Input files (`-`: stdin); none: stdin
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
}

fn positive_u64(v: &str) -> Result<u64, String> {
    super::positive(v).map(|n| n as u64)
}

impl Args {
    fn settings(&self) -> Settings {
        Settings {
            window: self.window,
            buckets: self.buckets,
            min_requests: self.min_requests,
            max_keys: self.max_keys,
        }
    }
}

/// Runs the subcommand.
pub fn run(args: Args) -> ExitCode {
    match signals(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("edgeguard signals: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn signals(args: Args) -> Result<(), String> {
    let started = Instant::now();
    let mut window = Window::new(args.settings())?;
    let config = Config::load(&args.config).map_err(|e| e.to_string())?;
    let inputs = if args.files.is_empty() {
        vec![Input::stdin()]
    } else {
        args.files
            .iter()
            .map(|f| Input::open(f))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| e.to_string())?
    };
    let mut options = Options {
        now: args.now,
        progress: false,
        ..Options::default()
    };
    if let Some(n) = args.max_line {
        options.max_line = n;
    }
    let mut observer = Observer::new(&mut window, unix_now);
    let summary = replay::observe(inputs, &config, &options, &mut |seen| observer.add(seen))
        .map_err(|e| e.to_string())?;
    let (snapshot, refused) = window.snapshot();
    write_atomically(&args.out, &snapshot)?;
    let dropped = window.dropped();
    let mut err = io::stderr().lock();
    let _ = writeln!(
        err,
        "edgeguard signals: {} requests ({} bad lines) -> {} keys in {} cells ({} B each + sketches), {} entries written to {} ({} late, {} untracked, {} refused keys) in {:.2?}",
        summary.requests,
        summary.parse_errors,
        window.keys(),
        window.cells(),
        Window::cell_bytes(),
        snapshot.len(),
        args.out.display(),
        dropped.late,
        dropped.untracked,
        refused,
        started.elapsed(),
    );
    for e in summary.input_errors.iter() {
        let _ = writeln!(err, "edgeguard signals: {e}");
    }
    for e in summary.first_errors.iter() {
        let _ = writeln!(err, "edgeguard signals: line {}: {}", e.line, e.message);
    }
    Ok(())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes `snapshot` to a temporary file beside `path`, syncs it and
/// renames it over `path`: a reader (nginx's refresh, `export`'s reader)
/// sees the old file or the new one, never half of one.
pub(crate) fn write_atomically(path: &Path, snapshot: &Snapshot) -> Result<(), String> {
    let name = path.display();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| format!("{name}: not a file name"))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let write = || -> io::Result<()> {
        let mut f = io::BufWriter::new(std::fs::File::create(&tmp)?);
        snapshot.write(&mut f)?;
        let f = f.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{name}: {e}")
    })
}
