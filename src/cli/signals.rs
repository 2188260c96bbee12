//! `edgeguard signals`: fleet fingerprint signals from the request log.
//! Each request is judged by replay's own run of the gate (`--config`, as
//! `edgeguard replay` judges it), counted per fingerprint key over a
//! sliding window of event time, and the window is written as a snapshot
//! file (docs/signals.md).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use edgeguard::load::Config;
use edgeguard::replay::WindowFeed;
use edgeguard::replay::{self, Input, Options};
use edgeguard::signals::{Settings, Window};

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

With --kafka-brokers (the `kafka` build) it runs as a consumer group instead:
stage 1 (--topic, --group) judges the request log and sends partial counts
per key to --partials-topic; stage 2 (--snapshot-topic) owns partitions of
the partials, keeps their window and publishes each key's record to the
compacted snapshot topic (and its own keys to --out). `edgeguard signals
export` reads that topic into the snapshot file nginx loads.
See docs/signals.md.";

/// The long description of `export --help`.
pub const EXPORT_ABOUT: &str =
    "Reads the compacted snapshot topic that `edgeguard signals` publishes to its
end (the last record of each key; a tombstone removes the key) and writes the
whole snapshot file, atomically. With --every, again every SECONDS until
SIGTERM or SIGINT: what an nginx host runs beside nginx.";

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "edgeguard signals --config CONFIG --out SNAPSHOT [options] [FILE...]\n       \
                      edgeguard signals --kafka-brokers HOSTS [--topic LOG --group G --config CONFIG] \
                      --partials-topic P [--snapshot-topic S] [options]\n       \
                      edgeguard signals export --kafka-brokers HOSTS --topic S --out SNAPSHOT",
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    #[command(subcommand)]
    export: Option<Sub>,
    /// The configuration requests are judged with (as `edgeguard replay`)
    #[arg(long, value_name = "CONFIG")]
    config: Option<PathBuf>,
    /// Where to write the snapshot file (with Kafka: stage 2's own keys)
    #[arg(long, value_name = "SNAPSHOT")]
    out: Option<PathBuf>,
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
    #[command(flatten)]
    kafka: KafkaArgs,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Write the snapshot file from the compacted snapshot topic
    #[command(long_about = EXPORT_ABOUT)]
    Export(ExportArgs),
}

/// `edgeguard signals export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The bootstrap brokers (HOST:PORT[,...])
    #[arg(long, value_name = "HOSTS", required = true)]
    kafka_brokers: String,
    /// The snapshot topic
    #[arg(long, value_name = "TOPIC", required = true)]
    topic: String,
    /// Where to write the snapshot file
    #[arg(long, value_name = "SNAPSHOT", required = true)]
    out: PathBuf,
    /// Again every SECONDS, until SIGTERM or SIGINT
    #[arg(long, value_name = "SECONDS", value_parser = positive_u64)]
    every: Option<u64>,
    /// A librdkafka property (repeatable), e.g. -X security.protocol=ssl
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = super::kafka::property)]
    properties: Vec<(String, String)>,
}

/// The Kafka flags of `edgeguard signals` (present in every build, so
/// that one without the feature says so).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Kafka (a consumer group over the request log)")]
pub struct KafkaArgs {
    /// Run as a consumer group: the bootstrap brokers (HOST:PORT[,...])
    #[arg(long, value_name = "HOSTS", conflicts_with = "files")]
    kafka_brokers: Option<String>,
    /// Stage 1: the request log topic (one request line per message)
    #[arg(long, value_name = "TOPIC", requires_all = ["kafka_brokers", "group", "partials_topic"])]
    topic: Option<String>,
    /// Stage 1's consumer group (stage 2's is GROUP.partials)
    #[arg(long, value_name = "GROUP", requires = "kafka_brokers")]
    group: Option<String>,
    /// Where stage 1 sends partial counts keyed kind:key, and stage 2 reads
    /// them (retention: at least the window)
    #[arg(long, value_name = "TOPIC", requires = "kafka_brokers")]
    partials_topic: Option<String>,
    /// Stage 2: the compacted topic each owned key's record goes to
    #[arg(long, value_name = "TOPIC", requires_all = ["kafka_brokers", "group", "partials_topic"])]
    snapshot_topic: Option<String>,
    /// Stage 1 sends its partials every SECONDS
    #[arg(long, value_name = "SECONDS", default_value_t = 2, value_parser = positive_u64)]
    flush_every: u64,
    /// Stage 2 publishes what changed every SECONDS
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = positive_u64)]
    publish_every: u64,
    /// Stop once the topics are read to their end (backfills, tests)
    #[arg(long, requires = "kafka_brokers")]
    exit_at_end: bool,
    /// A librdkafka property for every client (repeatable); prefixed
    /// consumer. or producer. for those only
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = super::kafka::property, requires = "kafka_brokers")]
    properties: Vec<(String, String)>,
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
    if let Some(Sub::Export(e)) = &args.export {
        return kafka::export(e);
    }
    if args.kafka.kafka_brokers.is_some() {
        return kafka::run(&args);
    }
    let (Some(config), Some(out)) = (&args.config, &args.out) else {
        return Err(if args.config.is_none() {
            "--config is required".into()
        } else {
            "--out is required".into()
        });
    };
    let started = Instant::now();
    let mut window = Window::new(args.settings())?;
    let config = Config::load(config).map_err(|e| e.to_string())?;
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
    let mut observer = WindowFeed::new(&mut window, unix_now);
    let summary = replay::observe(inputs, &config, &options, &mut |seen| observer.add(seen))
        .map_err(|e| e.to_string())?;
    let (snapshot, refused) = window.snapshot();
    edgeguard::signals::file::write_atomically(out, &snapshot)?;
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
        out.display(),
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

#[cfg(feature = "kafka")]
mod kafka {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    use edgeguard::kafka::{self, Client, SignalsOptions};
    use edgeguard::load::Config;
    use edgeguard::replay::Options;

    use super::{Args, ExportArgs};

    /// SIGTERM and SIGINT set the flag (a second one exits at once).
    fn stop_flag() -> Result<Arc<AtomicBool>, String> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))
                .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
                .map_err(|e| format!("installing the signal handlers: {e}"))?;
        }
        Ok(stop)
    }

    pub(super) fn run(args: &Args) -> Result<(), String> {
        let k = &args.kafka;
        let Some(partials) = k.partials_topic.clone() else {
            return Err("--partials-topic is required with --kafka-brokers".into());
        };
        if k.topic.is_none() && k.snapshot_topic.is_none() {
            return Err(
                "nothing to run: --topic (stage 1) and/or --snapshot-topic (stage 2)".into(),
            );
        }
        let config = match (&k.topic, &args.config) {
            (Some(_), None) => return Err("--config is required with --topic".into()),
            (_, Some(c)) => Config::load(c).map_err(|e| e.to_string())?,
            // Stage 2 alone judges nothing.
            (None, None) => Config::parse("edgeguard signals", std::path::Path::new("."), b"{}")
                .map_err(|e| e.to_string())?,
        };
        let stop = stop_flag()?;
        let options = SignalsOptions {
            client: Client {
                brokers: k.kafka_brokers.clone().unwrap_or_default(),
                properties: k.properties.clone(),
            },
            log_topic: k.topic.clone(),
            group: k.group.clone().unwrap_or_default(),
            partials_topic: partials,
            snapshot_topic: k.snapshot_topic.clone(),
            flush_every: Duration::from_secs(k.flush_every),
            publish_every: Duration::from_secs(k.publish_every),
            out: args.out.clone(),
            exit_at_end: k.exit_at_end,
        };
        let mut replay = Options {
            now: args.now,
            progress: false,
            ..Options::default()
        };
        if let Some(n) = args.max_line {
            replay.max_line = n;
        }
        let r = kafka::signals(&options, &config, &replay, args.settings(), &stop)?;
        eprintln!(
            "edgeguard signals: stage 1: {} requests ({} bad lines), {} partials sent; \
             stage 2: {} partials merged ({} refused), {} records and {} tombstones published, {} keys owned",
            r.requests,
            r.invalid,
            r.partials_sent,
            r.partials_merged,
            r.partials_refused,
            r.records,
            r.tombstones,
            r.keys
        );
        match r.failure {
            Some(f) => Err(format!("stopped: {f}")),
            None => Ok(()),
        }
    }

    pub(super) fn export(e: &ExportArgs) -> Result<(), String> {
        let stop = stop_flag()?;
        let client = Client {
            brokers: e.kafka_brokers.clone(),
            properties: e.properties.clone(),
        };
        let every = e.every.map(Duration::from_secs);
        let r = kafka::export(&client, &e.topic, &e.out, every, &stop)?;
        eprintln!(
            "edgeguard signals export: {} entries to {} ({} records, {} refused)",
            r.entries,
            e.out.display(),
            r.records,
            r.refused
        );
        Ok(())
    }
}

/// Without the `kafka` feature: says how to get it.
#[cfg(not(feature = "kafka"))]
mod kafka {
    const NO_KAFKA: &str = "this edgeguard was built without Kafka support: build it with \
                            `cargo build --release --features kafka` (make build-kafka)";

    pub(super) fn run(_: &super::Args) -> Result<(), String> {
        Err(NO_KAFKA.into())
    }

    pub(super) fn export(_: &super::ExportArgs) -> Result<(), String> {
        Err(NO_KAFKA.into())
    }
}
