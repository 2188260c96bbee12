//! `edgeguard replay --kafka-brokers HOSTS --topic T --group G`: replay as
//! a member of a Kafka consumer group (the `kafka` cargo feature; see
//! docs/kafka.md). The flags exist in every build, so that a binary built
//! without the feature says so instead of calling them unknown.

use std::path::PathBuf;

/// The Kafka flags of `edgeguard replay`.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Kafka (replay a topic as a member of a consumer group)")]
pub struct KafkaArgs {
    /// Read the requests from Kafka: the bootstrap brokers (HOST:PORT[,...])
    #[arg(
        long,
        value_name = "HOSTS",
        requires_all = ["topic", "group"],
        conflicts_with_all = ["files", "ordered"]
    )]
    pub(crate) kafka_brokers: Option<String>,
    /// The topic of request lines, one request per message
    #[arg(long, value_name = "TOPIC")]
    pub(crate) topic: Option<String>,
    /// The consumer group: instances in one group share the partitions
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: Option<String>,
    /// A librdkafka property for every client (repeatable), e.g.
    /// -X security.protocol=ssl; prefixed consumer. or producer. for
    /// those only, e.g. -X consumer.session.timeout.ms=6000
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = property, requires = "kafka_brokers")]
    pub(crate) properties: Vec<(String, String)>,
    /// Also write each result to TOPIC, keyed like its request (its
    /// message's key, else TOPIC:PARTITION:OFFSET of the request)
    #[arg(long, value_name = "TOPIC", requires = "kafka_brokers")]
    pub(crate) results_topic: Option<String>,
    /// Send messages that are not request lines to TOPIC (headers
    /// edgeguard-error, edgeguard-source)
    #[arg(long, value_name = "TOPIC", requires = "kafka_brokers")]
    pub(crate) dead_letter_topic: Option<String>,
    /// Append messages that are not request lines to FILE (JSON Lines)
    #[arg(long, value_name = "FILE", requires = "kafka_brokers")]
    pub(crate) dead_letter_file: Option<PathBuf>,
    /// Stop once every assigned partition is read to its end
    #[arg(long, requires = "kafka_brokers")]
    pub(crate) exit_at_end: bool,
    /// Commit the offsets of written results every MS milliseconds [default: 1000]
    #[arg(long, value_name = "MS", value_parser = super::positive, requires = "kafka_brokers")]
    pub(crate) commit_interval: Option<usize>,
    /// Serve Prometheus metrics (lag, throughput, decisions) at http://ADDR/metrics
    #[arg(long, value_name = "ADDR", requires = "kafka_brokers")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,
}

impl KafkaArgs {
    /// `--topic` or `--group` without `--kafka-brokers` (clap's `requires`
    /// would name the other of the two as missing).
    pub(crate) fn check(&self) -> Result<(), String> {
        match (&self.kafka_brokers, &self.topic, &self.group) {
            (None, Some(_), _) => Err("--topic needs --kafka-brokers".into()),
            (None, _, Some(_)) => Err("--group needs --kafka-brokers".into()),
            _ => Ok(()),
        }
    }
}

/// A `-X` value: `key=value`.
pub(crate) fn property(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {arg:?}")),
    }
}

#[cfg(feature = "kafka")]
mod run {
    use std::fs::OpenOptions;
    use std::io::{BufWriter, Write};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    use edgeguard::kafka::{self, Client, KafkaOptions, Outputs};
    use edgeguard::load::Config;
    use edgeguard::replay::Options;

    use super::KafkaArgs;

    /// Replays the topic until SIGTERM or SIGINT (a second one exits at
    /// once), `--exit-at-end`, or a failure. Returns the summary text and
    /// whether the run failed.
    pub(crate) fn replay(
        args: &KafkaArgs,
        primary: &Config,
        compare: Option<&Config>,
        rows: Option<&mut dyn Write>,
        options: &Options,
    ) -> Result<(String, bool), String> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            // The first signal stops cleanly (what is done is committed);
            // a second one, while that waits, exits at once.
            signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))
                .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
                .map_err(|e| format!("installing the signal handlers: {e}"))?;
        }
        let kafka = KafkaOptions {
            client: Client {
                brokers: args.kafka_brokers.clone().unwrap_or_default(),
                properties: args.properties.clone(),
            },
            topic: args.topic.clone().unwrap_or_default(),
            group: args.group.clone().unwrap_or_default(),
            results_topic: args.results_topic.clone(),
            dead_letter_topic: args.dead_letter_topic.clone(),
            exit_at_end: args.exit_at_end,
            commit_every: Duration::from_millis(args.commit_interval.unwrap_or(1000) as u64),
            metrics: args.metrics_listen,
        };
        let mut dead = match &args.dead_letter_file {
            Some(p) => Some(BufWriter::new(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| format!("{}: {e}", p.display()))?,
            )),
            None => None,
        };
        let mut rows = rows;
        let outputs = Outputs {
            rows: rows.as_mut().map(|w| &mut **w as &mut dyn Write),
            dead_letters: dead.as_mut().map(|w| w as &mut dyn Write),
        };
        let done = kafka::run(&kafka, primary, compare, outputs, options, &stop)?;
        if let Some(addr) = done.metrics {
            eprintln!("edgeguard replay: metrics were served at http://{addr}/metrics");
        }
        Ok((done.render(), done.failure.is_some()))
    }
}

#[cfg(feature = "kafka")]
pub(crate) use run::replay;

/// Without the `kafka` feature: says how to get it.
#[cfg(not(feature = "kafka"))]
pub(crate) fn replay(
    _: &KafkaArgs,
    _: &edgeguard::load::Config,
    _: Option<&edgeguard::load::Config>,
    _: Option<&mut dyn std::io::Write>,
    _: &edgeguard::replay::Options,
) -> Result<(String, bool), String> {
    Err(
        "this edgeguard was built without Kafka support: build it with \
         `cargo build --release --features kafka` (make build-kafka)"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::property;
    use crate::cli::tests::error_of;
    use crate::{Cli, Command};

    #[test]
    fn kafka_arguments() {
        let cli = Cli::try_parse_from([
            "edgeguard",
            "replay",
            "--config",
            "c.json",
            "--kafka-brokers",
            "k1:9092,k2:9092",
            "--topic",
            "requests",
            "--group",
            "replay",
            "-X",
            "session.timeout.ms=6000",
            "-Xfetch.wait.max.ms=10",
            "--results-topic",
            "results",
            "--dead-letter-file",
            "dead.jsonl",
            "--exit-at-end",
            "--metrics-listen",
            "127.0.0.1:9464",
        ])
        .unwrap();
        let Command::Replay(a) = cli.command else {
            panic!("not replay")
        };
        let k = &a.kafka;
        assert_eq!(k.kafka_brokers.as_deref(), Some("k1:9092,k2:9092"));
        assert_eq!(
            (k.topic.as_deref(), k.group.as_deref()),
            (Some("requests"), Some("replay"))
        );
        assert_eq!(
            k.properties,
            vec![
                ("session.timeout.ms".into(), "6000".into()),
                ("fetch.wait.max.ms".into(), "10".into())
            ]
        );
        assert_eq!(k.results_topic.as_deref(), Some("results"));
        assert!(k.exit_at_end && k.dead_letter_topic.is_none());
        assert_eq!(k.metrics_listen, Some("127.0.0.1:9464".parse().unwrap()));
        for (bad, want) in [
            (&["--kafka-brokers", "b", "--group", "g"][..], "--topic"),
            (&["--kafka-brokers", "b", "--topic", "t"][..], "--group"),
            (
                &[
                    "--kafka-brokers",
                    "b",
                    "--topic",
                    "t",
                    "--group",
                    "g",
                    "-X",
                    "nokey",
                ][..],
                "KEY=VALUE",
            ),
            (
                &[
                    "--kafka-brokers",
                    "b",
                    "--topic",
                    "t",
                    "--group",
                    "g",
                    "f.jsonl",
                ][..],
                "cannot be used with",
            ),
            (
                &[
                    "--kafka-brokers",
                    "b",
                    "--topic",
                    "t",
                    "--group",
                    "g",
                    "--ordered",
                ][..],
                "cannot be used with",
            ),
        ] {
            let args: Vec<&str> = ["replay", "--config", "c"]
                .into_iter()
                .chain(bad.iter().copied())
                .collect();
            let err = error_of(&args);
            assert!(err.contains(want), "{bad:?}: {err}");
        }
        let a = |args: &[&str]| {
            let args = ["edgeguard", "replay", "--config", "c"]
                .into_iter()
                .chain(args.iter().copied());
            match Cli::try_parse_from(args).unwrap().command {
                Command::Replay(a) => a.kafka.check(),
                _ => unreachable!(),
            }
        };
        assert_eq!(
            a(&["--topic", "t"]).unwrap_err(),
            "--topic needs --kafka-brokers"
        );
        assert_eq!(
            a(&["--group", "g"]).unwrap_err(),
            "--group needs --kafka-brokers"
        );
        assert_eq!(a(&[]), Ok(()));
    }

    #[test]
    fn parses_properties() {
        assert_eq!(
            property("security.protocol=ssl").unwrap(),
            ("security.protocol".into(), "ssl".into())
        );
        assert_eq!(property("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(property("k=").unwrap(), ("k".into(), String::new()));
        assert!(property("novalue").is_err());
        assert!(property("=v").is_err());
    }
}
