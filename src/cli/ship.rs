//! `edgeguard ship`: request lines from files or stdin to a Kafka topic (the
//! `kafka` cargo feature; see docs/kafka.md).

use std::path::PathBuf;
use std::process::ExitCode;

/// The long description of `--help`.
pub const LONG_ABOUT: &str = "Sends every line of the FILEs (or stdin; gzip is detected) to a Kafka
topic, one message per line, and exits once the broker has acknowledged
each one (exit status 1 if any could not be delivered). Blank lines and
lines longer than --max-line are skipped and counted, and so are lines
Kafka refuses for what they are (larger than the producer's
message.max.bytes, 1 000 000 unless -X producer.message.max.bytes says
otherwise): they are not sent again. SIGTERM or SIGINT stops reading,
waits up to 10 s for what is out, and reports what was not acknowledged;
a second one exits at once.

For backfills (rotated access logs into the topic a replay group reads),
benchmarks, and `tail -F access.log | edgeguard ship ...` where no log
shipper runs. A live fleet ships with rsyslog, Vector or Fluent Bit, which
follow rotated files and keep their place across restarts (docs/kafka.md).";

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "edgeguard ship --kafka-brokers HOSTS --topic TOPIC [-X KEY=VALUE]... [FILE...]"
)]
pub struct Args {
    /// The bootstrap brokers (HOST:PORT[,...])
    #[arg(long, value_name = "HOSTS", required = true)]
    kafka_brokers: String,
    /// The topic
    #[arg(long, value_name = "TOPIC", required = true)]
    topic: String,
    /// A librdkafka property (repeatable), e.g. -X compression.type=zstd
    /// (`producer.` prefixed ones too: the same client)
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = super::kafka::property)]
    properties: Vec<(String, String)>,
    /// Key each message by this top-level field of its line (e.g. client:
    /// one client's requests in one partition, in order); none: no key
    #[arg(long, value_name = "FIELD")]
    key: Option<String>,
    /// Longest line shipped, in bytes [default: 1048576]
    #[arg(long, value_name = "BYTES", value_parser = super::positive, allow_hyphen_values = true)]
    max_line: Option<usize>,
    /// Input files (`-`: stdin); none: stdin
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> ExitCode {
    match ship(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("edgeguard ship: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "kafka")]
fn ship(args: Args) -> Result<(), String> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use edgeguard::kafka::{self, Client};
    use edgeguard::replay::{Input, Options};

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .map_err(|e| format!("installing the signal handlers: {e}"))?;
    }
    let inputs = if args.files.is_empty() {
        vec![Input::stdin()]
    } else {
        args.files
            .iter()
            .map(|f| Input::open(f))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| e.to_string())?
    };
    let client = Client {
        brokers: args.kafka_brokers,
        properties: args.properties,
    };
    let max_line = args.max_line.unwrap_or(Options::default().max_line);
    let done = kafka::ship(
        &client,
        &args.topic,
        args.key.as_deref(),
        inputs,
        max_line,
        &stop,
    )?;
    let secs = done.elapsed.as_secs_f64();
    eprintln!(
        "edgeguard ship: {} lines delivered to {} in {secs:.2} s ({:.0} lines/s), {} skipped, {} refused by Kafka, {} sent again{}",
        done.delivered,
        args.topic,
        done.delivered as f64 / secs.max(1e-9),
        done.skipped,
        done.refused,
        done.resent,
        if done.stopped { ", stopped by a signal" } else { "" }
    );
    for r in &done.refusals {
        eprintln!("edgeguard ship: skipped: {r}");
    }
    for e in &done.errors {
        eprintln!("edgeguard ship: {e}");
    }
    if done.errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{} errors", done.errors.len()))
    }
}

#[cfg(not(feature = "kafka"))]
fn ship(_: Args) -> Result<(), String> {
    Err(
        "this edgeguard was built without Kafka support: build it with \
         `cargo build --release --features kafka` (make build-kafka)"
            .into(),
    )
}
