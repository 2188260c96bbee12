//! Replay from Kafka: `edgeguard replay` as a member of a consumer group
//! over the fleet's request log (feature `kafka`; see docs/kafka.md).
//!
//! ```text
//!          free batches (a fixed pool) coming back written; their offsets done
//!      ┌──────────────────────────────────────────────────────────────────┐
//!      v                                                                  │
//!  [consumer] ──batches of one partition──> [worker × N] ──> [writer] ────┘
//!  poll, rebalance,    in offset order       parse, strip,    --output rows,
//!  pause/resume,                             score, decide    results topic,
//!  commit each partition's                   (replay's own    dead letters,
//!  run of done batches                       Worker)          metrics, progress
//! ```
//!
//! Messages are request lines (the access-log lines of `log_format
//! edgeguard_json`, or `edgeguard features` requests), one per message; the
//! workers are file replay's, so the scores, decisions, summary and rows
//! are the same. What Kafka adds:
//!
//! - **At least once.** A batch goes back to the consumer only once its
//!   rows are written (and flushed to the OS) and its results and dead
//!   letters are acknowledged by the broker; a partition's offset is
//!   committed only over the run of such batches from its oldest
//!   ([`offsets`]). A rebalance or a stop waits for what is out, commits
//!   it and leaves; a member that dies leaves at most what it did since its
//!   last commit (a second) to be done again by the next owner.
//! - **Nothing lost, never fatal.** A message that is not a request line
//!   is counted and written to a dead-letter topic (with headers
//!   `edgeguard-error` and `edgeguard-source`, cut to fit the producer's
//!   `message.max.bytes`) or file. A result or dead letter Kafka refuses
//!   for what it is (too large) is skipped and counted: sent again, it
//!   would be refused again. Only a result that cannot be written (the
//!   broker away, a full disk) stops the run (uncommitted).
//! - **Bounded memory.** Batches come from a fixed pool; when the writer
//!   falls behind, the pool runs out and the partitions are paused.
//! - **Metrics.** Lag, throughput and decisions as Prometheus text
//!   ([`meters`]) and in the progress line; the group's lag over every
//!   partition, owned or not ([`lag`]), so that a stalled rebalance shows.
//!
//! The consumer ([`source`]), the commit bookkeeping ([`offsets`]), the
//! producer that knows when a batch is delivered ([`sink`]) and the client
//! settings ([`client`]) know nothing of replay: a second consumer of the
//! same topic (fleet signals) supplies its own workers and writer.
//!
//! librdkafka is linked into the binary only: the library nginx loads makes
//! no use of this module, and `tests/kafka/test_linkage.py` checks that the
//! release `libedgeguard.so` built with the feature holds none of it.

#![forbid(unsafe_code)]

mod batch;
pub mod client;
mod lag;
mod meters;
mod offsets;
mod replay;
mod ship;
mod signals;
mod sink;
mod source;

pub use client::Client;
pub use replay::{run, KafkaOptions, KafkaSummary, Outputs};
pub use ship::{ship, ShipSummary};
pub use signals::{
    export, run as signals, ExportReport, SignalsOptions, SignalsReport, GENERATED_HEADER,
    WINDOW_HEADER,
};
