//! `edgeguard ship`: request lines from files or stdin to a Kafka topic,
//! one message per line, each confirmed by the broker. For backfills (a
//! day of rotated logs into the topic a replay group reads), benchmarks,
//! and `tail -F access.log | edgeguard ship` where no log shipper runs;
//! the shippers of docs/kafka.md (rsyslog, Vector, Fluent Bit) follow
//! rotated files and keep their place across restarts, which this does not.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::replay::{Batch, Input, LineSpan, Lines};

use super::client::Client;
use super::sink::{Delivered, Outgoing, Producer};

/// Batches whose deliveries may be outstanding at once.
const IN_FLIGHT: usize = 4;
/// Bytes and lines per batch.
const BATCH_BYTES: usize = 256 << 10;
const BATCH_LINES: usize = 4096;
/// How long a batch whose delivery failed is sent again, a second apart,
/// before it counts as an error. librdkafka retries what it knows to be
/// transient; a broker that answers a produce with an error it calls
/// permanent while it shuts down (tansu 0.6 answers UNKNOWN_SERVER_ERROR)
/// must not cost the lines. A line refused for what it is (larger than
/// `message.max.bytes`) is not sent again: it is skipped and counted.
const RESEND_FOR: Duration = Duration::from_secs(300);
const RESEND_AFTER: Duration = Duration::from_secs(1);
/// After a stop (SIGTERM), how long what is out may take to be
/// acknowledged before it is reported undelivered and ship exits.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// Refusals the summary names (all are counted).
const REFUSALS_KEPT: usize = 10;

/// What was shipped.
#[derive(Debug, Default)]
pub struct ShipSummary {
    /// Lines delivered (acknowledged by the broker).
    pub delivered: u64,
    /// Lines not shipped: blank, or longer than the limit.
    pub skipped: u64,
    /// Lines Kafka refused for what they are (over the producer's
    /// `message.max.bytes`): skipped, not sent again.
    pub refused: u64,
    /// The first of those refusals, each described.
    pub refusals: Vec<String>,
    /// Lines sent again after a failed delivery (they may be in the topic
    /// twice).
    pub resent: u64,
    /// Lines read but not acknowledged when the run stopped (a signal) or
    /// gave up: they may or may not be in the topic.
    pub undelivered: u64,
    /// Whether a signal stopped it before the inputs ended.
    pub stopped: bool,
    /// Read errors (each ends its input) and delivery failures.
    pub errors: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Ships every line of `inputs` to `topic`, until the inputs end or
/// `stop` is set; returns once every message sent is acknowledged or
/// failed (after a stop, within [`STOP_GRACE`]). Blank lines and lines
/// longer than `max_line` are skipped, lines Kafka refuses are counted.
/// With `key_field`, each message is keyed by that top-level field of its
/// line (a string as is, another value as JSON text; none: no key), so
/// that one client's requests, say, stay in one partition.
pub fn ship(
    client: &Client,
    topic: &str,
    key_field: Option<&str>,
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
        producer: &producer,
        out: HashMap::new(),
        summary: ShipSummary::default(),
        topic,
        ticket: 0,
        stop,
        stopping_since: None,
    };
    // Read on a thread of its own: a read blocked on a quiet pipe (`tail
    // -F | edgeguard ship`) must not hold up a stop. The thread is left
    // blocked if so; the process exits from under it.
    let (read_tx, read_rx) = sync_channel(1);
    let key_field = key_field.map(str::to_owned);
    thread::Builder::new()
        .name("edgeguard-ship-reader".into())
        .spawn(move || read_all(inputs, key_field.as_deref(), max_line, &read_tx))
        .map_err(|e| format!("starting the reader: {e}"))?;
    loop {
        if stop.load(Ordering::Relaxed) {
            flight.summary.stopped = true;
            break;
        }
        match read_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Read::Lines(kept, skipped)) => {
                flight.summary.skipped += skipped;
                if !kept.lines.is_empty() {
                    flight.wait(IN_FLIGHT - 1);
                    if flight.stopping_since.is_some() {
                        flight.summary.undelivered += kept.lines.len() as u64;
                    } else {
                        flight.send(kept);
                    }
                }
            }
            Ok(Read::Error(e)) => flight.summary.errors.push(e),
            // Deliveries meanwhile: a failed batch is sent again on time.
            Err(RecvTimeoutError::Timeout) => flight.wait(IN_FLIGHT),
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    flight.wait(0);
    let mut summary = flight.summary;
    if summary.undelivered > 0 {
        summary.errors.push(format!(
            "{} lines read but not acknowledged by the broker before the stop",
            summary.undelivered
        ));
    }
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// What the reader hands on.
enum Read {
    /// A batch of lines to send, and how many lines it skipped.
    Lines(Kept, u64),
    /// A read error (it ends its input).
    Error(String),
}

/// Reads every input into batches of lines for `out`, until the inputs
/// end or `out` is gone.
fn read_all(inputs: Vec<Input>, key_field: Option<&str>, max_line: usize, out: &SyncSender<Read>) {
    let mut batch = Batch::default();
    let consumed = Arc::new(AtomicU64::new(0));
    for input in inputs {
        let name = input.name().to_owned();
        // Eager: a line from a pipe goes out as soon as it is read.
        let lines = input.into_lines(Arc::clone(&consumed), max_line);
        let mut lines = match lines.map(Lines::eager) {
            Ok(l) => l,
            Err(e) => {
                if out.send(Read::Error(format!("{name}: {e}"))).is_err() {
                    return;
                }
                continue;
            }
        };
        loop {
            let more = match lines.fill(&mut batch, BATCH_BYTES, BATCH_LINES) {
                Ok(more) => more,
                Err(e) => {
                    if out.send(Read::Error(format!("{name}: {e}"))).is_err() {
                        return;
                    }
                    false
                }
            };
            let data = &batch.data;
            let keep = |l: &&LineSpan| !l.too_long && !data[l.start..l.end].trim_ascii().is_empty();
            // Kept until delivered: a failed batch is sent again.
            let mut kept = Kept::default();
            for l in batch.lines.iter().filter(keep) {
                let line = &data[l.start..l.end];
                let key = key_field.and_then(|field| {
                    let start = kept.keys.len();
                    key_of(line, field, &mut kept.keys).then_some(start..kept.keys.len())
                });
                let start = kept.data.len();
                kept.data.extend_from_slice(line);
                kept.lines.push((start..kept.data.len(), key));
            }
            let skipped = (batch.lines.len() - kept.lines.len()) as u64;
            if (skipped > 0 || !kept.lines.is_empty())
                && out.send(Read::Lines(kept, skipped)).is_err()
            {
                return;
            }
            if !more {
                break;
            }
        }
    }
}

/// A batch's lines, owned until the broker has them all.
#[derive(Default)]
struct Kept {
    data: Vec<u8>,
    keys: Vec<u8>,
    /// Each line's bytes in `data` and key in `keys`.
    lines: Vec<(Range<usize>, Option<Range<usize>>)>,
    /// When its delivery first failed.
    failed_at: Option<Instant>,
}

/// Batches out, by ticket.
struct Flight<'t> {
    rx: Receiver<Delivered>,
    producer: &'t Producer,
    out: HashMap<u64, Kept>,
    summary: ShipSummary,
    topic: &'t str,
    ticket: u64,
    stop: &'t AtomicBool,
    /// When the stop was first seen: from then on nothing is sent again,
    /// and what is out gets [`STOP_GRACE`].
    stopping_since: Option<Instant>,
}

impl Flight<'_> {
    /// Sends `kept` under a new ticket.
    fn send(&mut self, kept: Kept) {
        let ticket = self.ticket;
        self.ticket += 1;
        let messages = kept.lines.iter().map(|(line, key)| Outgoing {
            topic: self.topic,
            key: key.clone().map(|k| &kept.keys[k]),
            payload: &kept.data[line.clone()],
            headers: Vec::new(),
        });
        self.producer.send_all(ticket, messages);
        self.out.insert(ticket, kept);
    }

    /// Until at most `left` batches are out (`left` = [`IN_FLIGHT`]: only
    /// what is already over); a failed batch is sent again for
    /// `RESEND_FOR` (its lines may then be in the topic twice: at least
    /// once, as everywhere else). After a stop, nothing is sent again, and
    /// what is still out after [`STOP_GRACE`] counts as undelivered.
    fn wait(&mut self, left: usize) {
        let timeout = |left| {
            if left >= IN_FLIGHT {
                Duration::ZERO
            } else {
                Duration::from_millis(200)
            }
        };
        loop {
            if self.stop.load(Ordering::Relaxed) {
                let since = *self.stopping_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= STOP_GRACE {
                    for (_, kept) in self.out.drain() {
                        self.summary.undelivered += kept.lines.len() as u64;
                    }
                    return;
                }
            }
            if self.out.len() <= left && left < IN_FLIGHT {
                return;
            }
            match self.rx.recv_timeout(timeout(left)) {
                Ok((t, outcome)) => {
                    let Some(mut kept) = self.out.remove(&t) else {
                        continue;
                    };
                    let n = kept.lines.len() as u64;
                    let refused = outcome.refused.len() as u64;
                    for (_, why) in outcome.refused {
                        if self.summary.refusals.len() < REFUSALS_KEPT {
                            self.summary.refusals.push(why);
                        }
                    }
                    self.summary.refused += refused;
                    match outcome.failure {
                        None => self.summary.delivered += n - refused,
                        Some(why) => {
                            let first = *kept.failed_at.get_or_insert_with(Instant::now);
                            if self.stopping_since.is_some() {
                                self.summary.undelivered += n - refused;
                            } else if first.elapsed() < RESEND_FOR {
                                eprintln!(
                                    "edgeguard ship: {n} lines not delivered to {} ({why}): sending them again",
                                    self.topic
                                );
                                self.summary.resent += n;
                                thread::sleep(RESEND_AFTER);
                                self.send(kept);
                            } else {
                                self.summary
                                    .errors
                                    .push(format!("delivering {n} lines to {}: {why}", self.topic));
                            }
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) if left >= IN_FLIGHT => return,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// Appends the value of `field` in the JSON object `line` to `out`: a
/// string's text, another value's JSON. False if there is none.
fn key_of(line: &[u8], field: &str, out: &mut Vec<u8>) -> bool {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(line) else {
        return false;
    };
    match map.get(field) {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::String(s)) => {
            out.extend_from_slice(s.as_bytes());
            true
        }
        Some(v) => serde_json::to_writer(out, v).is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe nobody writes to: every read waits until the test ends.
    struct Quiet(std::sync::mpsc::Receiver<()>);

    impl std::io::Read for Quiet {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(0)
        }
    }

    #[test]
    fn a_stop_is_not_held_up_by_a_read_waiting_on_a_quiet_pipe() {
        let (_writer, quiet) = std::sync::mpsc::channel();
        let input = Input::from_reader("quiet", Box::new(Quiet(quiet)), None);
        // No broker: nothing is read, so nothing is sent.
        let client = Client {
            brokers: "127.0.0.1:9".into(),
            properties: Vec::new(),
        };
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let done = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::Relaxed);
            });
            ship(&client, "t", None, vec![input], 1 << 20, &stop).unwrap()
        });
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(done.stopped && done.errors.is_empty(), "{done:?}");
        assert_eq!((done.delivered, done.undelivered), (0, 0));
    }

    #[test]
    fn keys_by_a_field() {
        let key = |line: &str, field| {
            let mut out = Vec::new();
            key_of(line.as_bytes(), field, &mut out).then(|| String::from_utf8(out).unwrap())
        };
        let line = r#"{"client":"192.0.2.1","status":200,"x":null,"h":[1]}"#;
        assert_eq!(key(line, "client").as_deref(), Some("192.0.2.1"));
        assert_eq!(key(line, "status").as_deref(), Some("200"));
        assert_eq!(key(line, "h").as_deref(), Some("[1]"));
        assert_eq!(key(line, "x"), None);
        assert_eq!(key(line, "missing"), None);
        assert_eq!(key("not json", "client"), None);
    }
}
