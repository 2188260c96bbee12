//! `edgeguard ship`: request lines from files or stdin to a Kafka topic,
//! one message per line, each confirmed by the broker. For backfills (a
//! day of rotated logs into the topic a replay group reads), benchmarks,
//! and `tail -F access.log | edgeguard ship` where no log shipper runs;
//! the shippers of docs/kafka.md (rsyslog, Vector, Fluent Bit) follow
//! rotated files and keep their place across restarts, which this does not.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::replay::{Batch, Input, LineSpan};

use super::client::Client;
use super::sink::{Delivered, Outgoing, Producer};

/// Batches whose deliveries may be outstanding at once.
const IN_FLIGHT: usize = 4;
/// Bytes and lines per batch.
const BATCH_BYTES: usize = 256 << 10;
const BATCH_LINES: usize = 4096;

/// What was shipped.
#[derive(Debug, Default)]
pub struct ShipSummary {
    /// Lines delivered (acknowledged by the broker).
    pub delivered: u64,
    /// Lines not shipped: blank, or longer than the limit.
    pub skipped: u64,
    /// Read errors (each ends its input) and delivery failures.
    pub errors: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Ships every line of `inputs` to `topic`, until the inputs end or
/// `stop` is set; returns once every message sent is acknowledged or
/// failed. Blank lines and lines longer than `max_line` are skipped.
pub fn ship(
    client: &Client,
    topic: &str,
    inputs: Vec<Input>,
    max_line: usize,
    stop: &AtomicBool,
) -> Result<ShipSummary, String> {
    let started = Instant::now();
    let (tx, rx) = sync_channel(IN_FLIGHT + 1);
    let producer = Producer::new(client, move |d| {
        let _ = tx.send(d);
    })?;
    let mut flight = Flight {
        rx,
        out: HashMap::new(),
        summary: ShipSummary::default(),
        topic,
    };
    let mut ticket = 0u64;
    let mut batch = Batch::default();
    let consumed = Arc::new(AtomicU64::new(0));
    'inputs: for input in inputs {
        let name = input.name().to_owned();
        let mut lines = match input.into_lines(Arc::clone(&consumed), max_line) {
            Ok(l) => l,
            Err(e) => {
                flight.summary.errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        loop {
            if stop.load(Ordering::Relaxed) {
                break 'inputs;
            }
            let more = match lines.fill(&mut batch, BATCH_BYTES, BATCH_LINES) {
                Ok(more) => more,
                Err(e) => {
                    flight.summary.errors.push(format!("{name}: {e}"));
                    false
                }
            };
            let data = &batch.data;
            let keep = |l: &&LineSpan| !l.too_long && !data[l.start..l.end].trim_ascii().is_empty();
            let n = batch.lines.iter().filter(keep).count();
            flight.summary.skipped += (batch.lines.len() - n) as u64;
            if n > 0 {
                flight.wait(IN_FLIGHT - 1);
                flight.out.insert(ticket, n as u64);
                let messages = batch.lines.iter().filter(keep).map(|l| Outgoing {
                    topic,
                    key: None,
                    payload: &data[l.start..l.end],
                    headers: Vec::new(),
                });
                producer.send_all(ticket, ExactLen(messages, n));
                ticket += 1;
            }
            if !more {
                break;
            }
        }
    }
    producer.flush(Duration::from_secs(600));
    flight.wait(0);
    let mut summary = flight.summary;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Batches out, by ticket, with their line counts.
struct Flight<'t> {
    rx: Receiver<Delivered>,
    out: HashMap<u64, u64>,
    summary: ShipSummary,
    topic: &'t str,
}

impl Flight<'_> {
    /// Until at most `left` batches are out.
    fn wait(&mut self, left: usize) {
        while self.out.len() > left {
            match self.rx.recv_timeout(Duration::from_millis(200)) {
                Ok((t, failure)) => {
                    let n = self.out.remove(&t).unwrap_or(0);
                    match failure {
                        None => self.summary.delivered += n,
                        Some(why) => self
                            .summary
                            .errors
                            .push(format!("delivering to {}: {why}", self.topic)),
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// An iterator whose length is known (a filter's is not, to the type).
struct ExactLen<I>(I, usize);

impl<I: Iterator> Iterator for ExactLen<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.0.next();
        if item.is_some() {
            self.1 -= 1;
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.1, Some(self.1))
    }
}

impl<I: Iterator> ExactSizeIterator for ExactLen<I> {}
