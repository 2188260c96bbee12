//! `edgeguard replay` from a Kafka topic: the consumer ([`super::source`])
//! feeds replay's own workers ([`crate::replay::Worker`]), and the writer
//! here writes each batch's results (output rows, a results topic, dead
//! letters) before handing the batch back to be committed.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::load::Config;
use crate::replay::batches::drain;
use crate::replay::{LineReader, Options, Summary, Worker};

use super::batch::{Counts, Message, MessageBatch};
use super::client::Client;
use super::meters::{self, Meters, Progress};
use super::sink::{Outgoing, Producer, Settled, SOURCE_HEADER};
use super::source::{self, Settings, Ways};

/// Lines per batch at most (as file replay).
const BATCH_LINES: usize = 4096;

/// Refusals the summary names (all are counted, and each goes to stderr).
const REFUSALS_KEPT: usize = 10;

/// What a dead letter for the topic leaves to librdkafka's record
/// framing and to edgeguard's own headers beyond what is counted: the
/// framing is under 100 bytes (`RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD`), each
/// header's a few.
const DEAD_LETTER_SLACK: usize = 1024;

/// The header of a dead letter whose message was cut to fit the
/// producer's `message.max.bytes`: the message's size before.
const TRUNCATED_HEADER: &str = "edgeguard-truncated";

/// Where a replay reads and writes in Kafka.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// The brokers and librdkafka properties.
    pub client: Client,
    /// The topic of request lines, one request per message.
    pub topic: String,
    /// The consumer group: instances with one group share the partitions.
    pub group: String,
    /// Where each result also goes, keyed like its request.
    pub results_topic: Option<String>,
    /// Where messages that are not request lines go.
    pub dead_letter_topic: Option<String>,
    /// Stop once every assigned partition is read to its end.
    pub exit_at_end: bool,
    /// How often done offsets are committed.
    pub commit_every: Duration,
    /// Serve Prometheus metrics at `http://ADDR/metrics`.
    pub metrics: Option<SocketAddr>,
}

impl KafkaOptions {
    /// Options for `topic` in `group` at `brokers`, everything else default.
    pub fn new(brokers: &str, topic: &str, group: &str) -> KafkaOptions {
        KafkaOptions {
            client: Client {
                brokers: brokers.to_owned(),
                properties: Vec::new(),
            },
            topic: topic.to_owned(),
            group: group.to_owned(),
            results_topic: None,
            dead_letter_topic: None,
            exit_at_end: false,
            commit_every: Duration::from_secs(1),
            metrics: None,
        }
    }
}

/// Where a replay's results are written besides Kafka.
#[derive(Default)]
pub struct Outputs<'o> {
    /// One JSON row per request (`--output`).
    pub rows: Option<&'o mut dyn Write>,
    /// One JSON line per invalid message (`--dead-letter-file`).
    pub dead_letters: Option<&'o mut dyn Write>,
}

/// What a replay from Kafka did: replay's summary, and the consumer's part.
#[derive(Debug)]
pub struct KafkaSummary {
    /// Requests, decisions, flips, live comparisons, as file replay.
    pub summary: Summary,
    /// Messages consumed (including the invalid ones).
    pub messages: u64,
    /// Invalid messages written to the dead-letter topic or file.
    pub dead_letters: u64,
    /// Results delivered to the results topic.
    pub results: u64,
    /// Dead letters cut to fit the producer's `message.max.bytes`.
    pub truncated: u64,
    /// Results and dead letters the broker or librdkafka refused for what
    /// they are (skipped: sent again, they are refused again).
    pub refused: u64,
    /// The first of those refusals, each described.
    pub refusals: Vec<String>,
    /// The last offset this member committed, per partition.
    pub committed: Vec<(i32, i64)>,
    /// Assignments and revocations seen.
    pub rebalances: u64,
    /// Times the partitions were paused for the writer.
    pub pauses: u64,
    /// Messages that arrived with no room and were fetched again.
    pub refetched: u64,
    /// From the first message to the last batch written: the run's time
    /// less joining the group, waiting for traffic and leaving.
    pub working: Duration,
    /// The address metrics were served on.
    pub metrics: Option<SocketAddr>,
    /// Why the run stopped early (results not written, the topic missing):
    /// what was done before is committed.
    pub failure: Option<String>,
    topic: String,
    group: String,
    results_topic: Option<String>,
    dead_letter_topic: Option<String>,
}

impl KafkaSummary {
    /// The report printed at the end: replay's, then the consumer's.
    pub fn render(&self) -> String {
        let mut s = self.summary.render();
        // Writing to a String cannot fail.
        let _ = self.render_kafka(&mut s);
        s
    }

    fn render_kafka(&self, s: &mut String) -> std::fmt::Result {
        writeln!(
            s,
            "\nkafka: topic {}, group {}: {} messages, {} invalid (errors above: topic-partition:offset)",
            self.topic, self.group, self.messages, self.summary.parse_errors + self.summary.blank_lines
        )?;
        let secs = self.working.as_secs_f64();
        if secs > 0.0 {
            writeln!(
                s,
                "  {secs:.2} s from the first message to the last result ({:.0} messages/s)",
                self.messages as f64 / secs
            )?;
        }
        if let Some(t) = &self.dead_letter_topic {
            write!(s, "  dead letters: {} to topic {t}", self.dead_letters)?;
            if self.truncated > 0 {
                write!(
                    s,
                    " ({} cut to fit message.max.bytes, header {TRUNCATED_HEADER})",
                    self.truncated
                )?;
            }
            writeln!(s)?;
        } else if self.dead_letters > 0 {
            writeln!(
                s,
                "  dead letters: {} to the dead-letter file",
                self.dead_letters
            )?;
        }
        if let Some(t) = &self.results_topic {
            writeln!(s, "  results: {} to topic {t}", self.results)?;
        }
        if self.refused > 0 {
            writeln!(
                s,
                "  refused by Kafka and skipped: {} (results or dead letters)",
                self.refused
            )?;
            for r in &self.refusals {
                writeln!(s, "    {r}")?;
            }
        }
        write!(s, "  committed:")?;
        if self.committed.is_empty() {
            write!(s, " nothing")?;
        }
        for (p, o) in &self.committed {
            write!(s, " {}-{p}@{o}", self.topic)?;
        }
        writeln!(s)?;
        writeln!(
            s,
            "  rebalances: {}, paused for the writer: {} times, messages fetched again: {}",
            self.rebalances, self.pauses, self.refetched
        )?;
        if let Some(f) = &self.failure {
            writeln!(s, "  STOPPED: {f}")?;
        }
        Ok(())
    }
}

/// Replays the requests of a Kafka topic as a member of a consumer group,
/// under `primary` (and `compare`), until `stop` is set (a signal),
/// every assigned partition is read (`exit_at_end`) or something fails.
/// Errors: the run could not start (bad properties, the metrics address).
pub fn run(
    kafka: &KafkaOptions,
    primary: &Config,
    compare: Option<&Config>,
    outputs: Outputs<'_>,
    options: &Options,
    stop: &AtomicBool,
) -> Result<KafkaSummary, String> {
    let started = Instant::now();
    let threads = options.threads.max(1);
    let pool = 2 * threads + 2;
    let meters = Arc::new(Meters::new(&kafka.topic));
    let halt = Arc::new(AtomicBool::new(false));
    let metrics = match kafka.metrics {
        Some(addr) => Some(
            meters::serve(addr, Arc::clone(&meters), Arc::clone(&halt))
                .map_err(|e| format!("--metrics-listen {addr}: {e}"))?,
        ),
        None => None,
    };
    // Everything the writer hears: worked batches, and finished deliveries
    // (at most one per batch): both bounded by the pool.
    let (events_tx, events_rx) = sync_channel::<Event>(2 * pool + 2);
    let producer = if kafka.results_topic.is_some() || kafka.dead_letter_topic.is_some() {
        let tx = events_tx.clone();
        Some(Producer::new(&kafka.client, move |d| {
            // The writer is gone only once the run is over.
            let _ = tx.send(Event::Delivered(d.0, d.1));
        })?)
    } else {
        None
    };
    let want_rows = outputs.rows.is_some()
        || kafka.results_topic.is_some()
        || outputs.dead_letters.is_some()
        || kafka.dead_letter_topic.is_some();
    let (work_tx, work_rx) = sync_channel::<Box<MessageBatch>>(pool);
    let (done_tx, done_rx) = sync_channel::<Box<MessageBatch>>(pool);
    let settings = Settings {
        topic: kafka.topic.clone(),
        group: kafka.group.clone(),
        pool,
        batch_bytes: options.batch_bytes,
        batch_lines: BATCH_LINES,
        max_line: options.max_line,
        commit_every: kafka.commit_every,
        exit_at_end: kafka.exit_at_end,
    };
    let now = options.now.unwrap_or_else(unix_now);
    let work_rx = Mutex::new(Some(work_rx));
    let mut writer = Writer {
        kafka,
        max_line: options.max_line,
        outputs,
        producer: producer.as_ref(),
        waiting: HashMap::new(),
        done: done_tx,
        meters: &meters,
        halt: &halt,
        progress: Progress::new(options.progress),
        failure: None,
        rows: Vec::new(),
        dead: Vec::new(),
        sends: Vec::new(),
        send_bytes: Vec::new(),
        send_headers: Vec::new(),
        row: Vec::new(),
        reader: LineReader::new(),
        results: 0,
        dead_letters: 0,
        message_max: kafka.client.producer_message_max(),
        truncated: 0,
        refused: 0,
        refusals: Vec::new(),
    };
    let halted = || stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed);
    let (consumed, tallies) = thread::scope(|scope| {
        let consumer = {
            let meters = Arc::clone(&meters);
            let client = &kafka.client;
            let halted = &halted;
            thread::Builder::new()
                .name("edgeguard-consumer".into())
                .spawn_scoped(scope, move || {
                    let ways = Ways {
                        work: work_tx,
                        done: done_rx,
                    };
                    source::run(client, settings, ways, halted, meters)
                })
                .map_err(|e| format!("starting the consumer: {e}"))
        };
        // The group's lag, for the metrics only.
        let watcher = kafka.metrics.map(|_| {
            let (meters, halted) = (&meters, &halted);
            scope.spawn(move || {
                super::lag::watch(&kafka.client, &kafka.topic, &kafka.group, meters, halted)
            })
        });
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (tx, rx) = (events_tx.clone(), &work_rx);
                scope.spawn(move || {
                    let worker = Worker::with(
                        primary,
                        compare,
                        want_rows,
                        &[],
                        options.max_line,
                        options.samples,
                        now,
                    );
                    work(worker, rx, tx)
                })
            })
            .collect();
        // The producer's callback holds its own sender.
        drop(events_tx);
        let consumed = match consumer {
            Ok(handle) => {
                writer.serve(&events_rx, &handle);
                handle
                    .join()
                    .unwrap_or_else(|_| Err("the consumer panicked".into()))
            }
            Err(e) => Err(e),
        };
        // Closed: workers blocked on a full way to a writer that is gone end.
        drop(events_rx);
        if let Ok(mut rx) = work_rx.lock() {
            rx.take();
        }
        let tallies: Vec<Summary> = workers.into_iter().filter_map(|w| w.join().ok()).collect();
        // `halted` holds once the consumer is done (stop, or a failure);
        // at the end of the input (--exit-at-end), too.
        halt.store(true, Ordering::Relaxed);
        if let Some(w) = watcher {
            let _ = w.join();
        }
        (consumed, tallies)
    });
    halt.store(true, Ordering::Relaxed);
    let metrics_addr = metrics.map(|(addr, handle)| {
        let _ = handle.join();
        addr
    });
    writer.progress.finish();
    if let Some(p) = &producer {
        p.flush(Duration::from_secs(10));
    }
    let report = consumed?;
    if tallies.len() != threads {
        return Err("a replay worker panicked".into());
    }
    let mut summary = Summary::new(primary, compare, options.samples);
    for t in tallies {
        summary.merge(t);
    }
    // Each error names its partition as its input: every partition up to
    // the highest seen (committed, or named by an error) has its name.
    let highest = report
        .committed
        .keys()
        .map(|&p| usize::try_from(p).unwrap_or(0))
        .chain(summary.first_errors.iter().map(|e| e.input))
        .max()
        .unwrap_or(0);
    summary.inputs = (0..=highest)
        .map(|p| format!("{}-{p}", kafka.topic))
        .collect();
    summary.threads = threads;
    summary.elapsed = started.elapsed();
    let failure = writer.failure.take().or(report.failure);
    Ok(KafkaSummary {
        summary,
        messages: meters.messages.load(Ordering::Relaxed),
        dead_letters: writer.dead_letters,
        results: writer.results,
        truncated: writer.truncated,
        refused: writer.refused,
        refusals: std::mem::take(&mut writer.refusals),
        committed: report.committed.into_iter().collect(),
        rebalances: report.rebalances,
        pauses: meters.pauses.load(Ordering::Relaxed),
        refetched: meters.rewinds.load(Ordering::Relaxed),
        working: meters.working(),
        metrics: metrics_addr,
        failure,
        topic: kafka.topic.clone(),
        group: kafka.group.clone(),
        results_topic: kafka.results_topic.clone(),
        dead_letter_topic: kafka.dead_letter_topic.clone(),
    })
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What the writer hears.
enum Event {
    /// A batch the workers are done with.
    Worked(Box<MessageBatch>),
    /// Every message a batch sent is over: delivered, failed, refused.
    Delivered(u64, Settled),
}

/// A worker thread: batches in, worked batches to the writer, until the
/// way in closes; returns its counts.
fn work(
    mut worker: Worker<'_>,
    rx: &Mutex<Option<Receiver<Box<MessageBatch>>>>,
    tx: SyncSender<Event>,
) -> Summary {
    drain(
        rx,
        &mut |batch: &mut Box<MessageBatch>| {
            let before = counts(&worker.tally);
            worker.process(&mut batch.lines);
            let after = counts(&worker.tally);
            batch.counts = Counts {
                requests: after.requests - before.requests,
                invalid: after.invalid - before.invalid,
                actions: std::array::from_fn(|i| after.actions[i] - before.actions[i]),
            };
        },
        |batch| tx.send(Event::Worked(batch)).is_ok(),
    );
    worker.tally
}

fn counts(s: &Summary) -> Counts {
    Counts {
        requests: s.requests,
        invalid: s.parse_errors + s.blank_lines,
        actions: s.primary.actions,
    }
}

/// The writing end: rows, results, dead letters; a batch goes back to the
/// consumer only once all of them are written.
struct Writer<'a, 'o> {
    kafka: &'a KafkaOptions,
    max_line: usize,
    outputs: Outputs<'o>,
    producer: Option<&'a Producer>,
    /// Batches whose messages are not all delivered yet, by ticket: with
    /// their counts of results and dead letters.
    waiting: HashMap<u64, (Box<MessageBatch>, u64, u64)>,
    done: SyncSender<Box<MessageBatch>>,
    meters: &'a Meters,
    /// Set on a failure: the consumer stops.
    halt: &'a AtomicBool,
    progress: Progress,
    failure: Option<String>,
    /// A batch's rows and dead-letter lines for the files.
    rows: Vec<u8>,
    dead: Vec<u8>,
    /// A batch's messages for Kafka: their bytes, and where each one's are.
    sends: Vec<Send>,
    send_bytes: Vec<u8>,
    send_headers: Vec<(Range<usize>, Option<Range<usize>>)>,
    row: Vec<u8>,
    reader: LineReader,
    results: u64,
    dead_letters: u64,
    /// The producers' `message.max.bytes`: dead letters are cut to fit.
    message_max: usize,
    truncated: u64,
    refused: u64,
    refusals: Vec<String>,
}

/// One message for Kafka, as ranges of the writer's `send_bytes`.
struct Send {
    key: Option<Range<usize>>,
    payload: Range<usize>,
    /// Its range of the writer's `send_headers`.
    headers: Range<usize>,
    /// A dead letter (else a result).
    dead: bool,
}

impl Writer<'_, '_> {
    /// Until the consumer is done (it waits for every batch it handed out).
    fn serve<T>(&mut self, events: &Receiver<Event>, consumer: &thread::ScopedJoinHandle<'_, T>) {
        loop {
            match events.recv_timeout(Duration::from_millis(50)) {
                Ok(Event::Worked(b)) => self.write(b),
                Ok(Event::Delivered(ticket, outcome)) => self.delivered(ticket, outcome),
                Err(RecvTimeoutError::Timeout) if consumer.is_finished() => return,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            self.progress.tick(self.meters);
        }
    }

    fn fail(&mut self, why: String) {
        if self.failure.is_none() {
            self.failure = Some(why);
        }
        self.halt.store(true, Ordering::Relaxed);
    }

    fn dead_letter_wanted(&self) -> bool {
        self.outputs.dead_letters.is_some() || self.kafka.dead_letter_topic.is_some()
    }

    fn write(&mut self, mut b: Box<MessageBatch>) {
        self.meters.worked(&b.counts);
        self.rows.clear();
        self.dead.clear();
        self.sends.clear();
        self.send_bytes.clear();
        self.send_headers.clear();
        let mut dead = 0;
        let wants_rows = self.outputs.rows.is_some() || self.kafka.results_topic.is_some();
        if wants_rows || self.dead_letter_wanted() {
            dead = self.sort(&b);
        }
        // The files first: a batch sending nothing is done once they are.
        if let Err(e) = self.write_files() {
            self.fail(format!("writing output: {e}"));
            b.ok = false;
            return self.finish(b, 0, 0);
        }
        let results = self.sends.iter().filter(|s| !s.dead).count() as u64;
        match self.producer {
            Some(producer) if !self.sends.is_empty() => {
                let ticket = b.ticket;
                self.waiting.insert(ticket, (b, results, dead));
                let (kafka, bytes, headers) = (self.kafka, &self.send_bytes, &self.send_headers);
                let messages = self.sends.iter().map(|s| {
                    let topic = match s.dead {
                        true => kafka.dead_letter_topic.as_deref(),
                        false => kafka.results_topic.as_deref(),
                    };
                    Outgoing {
                        topic: topic.unwrap_or_default(),
                        key: s.key.clone().map(|k| &bytes[k]),
                        payload: &bytes[s.payload.clone()],
                        headers: headers[s.headers.clone()]
                            .iter()
                            .map(|(n, v)| {
                                // Names came from librdkafka as text, or are ours.
                                let name =
                                    std::str::from_utf8(&bytes[n.clone()]).unwrap_or_default();
                                (name, v.clone().map(|v| &bytes[v]))
                            })
                            .collect(),
                    }
                });
                producer.send_all(ticket, messages);
            }
            _ => self.finish(b, results, dead),
        }
    }

    /// Each message's row (rewritten with its partition, offset and key)
    /// into the row file and the results, each invalid message into the
    /// dead letters. Returns the number of invalid messages.
    fn sort(&mut self, b: &MessageBatch) -> u64 {
        // Rows come in line order, one per valid line, each naming its
        // line's number: here, the message's offset.
        let out = &b.lines.out;
        let mut rows = out.split(|&c| c == b'\n').filter_map(row_line).peekable();
        let mut invalid = 0;
        for i in 0..b.len() {
            let m = b.message(i);
            let row = match rows.peek() {
                Some(&(n, rest)) if i64::try_from(n) == Ok(m.offset) => {
                    rows.next();
                    Some(rest)
                }
                _ => None,
            };
            match row {
                Some(rest) => self.take_row(b.partition, m, rest),
                None => {
                    invalid += 1;
                    if self.dead_letter_wanted() {
                        self.take_dead(b, i);
                    }
                }
            }
        }
        invalid
    }

    fn take_row(&mut self, partition: i32, m: Message<'_>, rest: &[u8]) {
        self.row.clear();
        // Writing to a Vec cannot fail.
        let _ = write!(
            self.row,
            "{{\"partition\":{partition},\"offset\":{},",
            m.offset
        );
        if let Some(k) = m.key {
            push_bytes_field(&mut self.row, "key", k);
            self.row.push(b',');
        }
        self.row.extend_from_slice(rest);
        if self.outputs.rows.is_some() {
            self.rows.extend_from_slice(&self.row);
            self.rows.push(b'\n');
        }
        if self.kafka.results_topic.is_some() {
            let start = self.send_bytes.len();
            match m.key {
                // Keyed like its request: a shipper keying requests (by
                // $request_id, say) gets results co-partitioned with them.
                Some(k) => self.send_bytes.extend_from_slice(k),
                None => {
                    let _ = write!(
                        self.send_bytes,
                        "{}:{partition}:{}",
                        self.kafka.topic, m.offset
                    );
                }
            }
            let key = start..self.send_bytes.len();
            self.send_bytes.extend_from_slice(&self.row);
            let payload = key.end..self.send_bytes.len();
            let headers = self.send_headers.len()..self.send_headers.len();
            self.sends.push(Send {
                key: Some(key),
                payload,
                headers,
                dead: false,
            });
        }
    }

    /// An invalid message, whole (key, headers, payload), to the dead
    /// letters, with why and where it came from.
    fn take_dead(&mut self, b: &MessageBatch, i: usize) {
        let (partition, m) = (b.partition, b.message(i));
        let error = self.why_invalid(m.payload, m.too_long);
        if self.outputs.dead_letters.is_some() {
            let d = &mut self.dead;
            d.extend_from_slice(b"{\"topic\":");
            push_json_str(d, &self.kafka.topic);
            let _ = write!(
                d,
                ",\"partition\":{partition},\"offset\":{},\"error\":",
                m.offset
            );
            push_json_str(d, &error);
            if let Some(k) = m.key {
                d.push(b',');
                push_bytes_field(d, "key", k);
            }
            for (j, (name, value)) in b.headers(i).enumerate() {
                d.extend_from_slice(if j == 0 { b",\"headers\":[{" } else { b",{" });
                push_bytes_field(d, "name", name);
                d.push(b',');
                match value {
                    Some(v) => push_bytes_field(d, "value", v),
                    None => d.extend_from_slice(b"\"value\":null"),
                }
                d.push(b'}');
            }
            if b.headers(i).next().is_some() {
                d.push(b']');
            }
            d.push(b',');
            push_bytes_field(d, "message", m.payload);
            d.extend_from_slice(b"}\n");
        }
        if self.kafka.dead_letter_topic.is_some() {
            let fit = fit_dead_letter(
                self.message_max,
                m.key.map_or(0, <[u8]>::len),
                b.headers(i)
                    .map(|(n, v)| n.len() + v.map_or(0, <[u8]>::len))
                    .sum(),
                error.len() + self.kafka.topic.len(),
                m.payload,
            );
            if fit.payload.len() < m.payload.len() {
                self.truncated += 1;
                self.meters.truncated.fetch_add(1, Ordering::Relaxed);
            }
            let buf = &mut self.send_bytes;
            let key = m.key.filter(|_| fit.whole_key).map(|k| keep(buf, k));
            let payload = keep(buf, fit.payload);
            let first = self.send_headers.len();
            if fit.whole_headers {
                for (name, value) in b.headers(i) {
                    let name = keep(buf, name);
                    let value = value.map(|v| keep(buf, v));
                    self.send_headers.push((name, value));
                }
            }
            let name = keep(buf, b"edgeguard-error");
            let value = keep(buf, error.as_bytes());
            self.send_headers.push((name, Some(value)));
            let name = keep(buf, SOURCE_HEADER.as_bytes());
            let start = buf.len();
            let _ = write!(buf, "{}:{partition}:{}", self.kafka.topic, m.offset);
            self.send_headers.push((name, Some(start..buf.len())));
            if fit.payload.len() < m.payload.len() {
                let name = keep(buf, TRUNCATED_HEADER.as_bytes());
                let start = buf.len();
                let _ = write!(buf, "{}", m.payload.len());
                self.send_headers.push((name, Some(start..buf.len())));
            }
            self.sends.push(Send {
                key,
                payload,
                headers: first..self.send_headers.len(),
                dead: true,
            });
        }
    }

    /// Why a message has no row: the parser's own words.
    fn why_invalid(&mut self, payload: &[u8], too_long: bool) -> String {
        if too_long {
            return format!("longer than {} bytes", self.max_line);
        }
        if payload.trim_ascii().is_empty() {
            return "empty message".into();
        }
        match self.reader.read(payload) {
            Err(e) => e.to_string(),
            Ok(_) => "not replayed".into(),
        }
    }

    fn write_files(&mut self) -> io::Result<()> {
        if let Some(w) = self.outputs.rows.as_mut() {
            if !self.rows.is_empty() {
                w.write_all(&self.rows)?;
                // Handed to the OS before the offsets are committed: a
                // crash of this process loses nothing written.
                w.flush()?;
            }
        }
        if let Some(w) = self.outputs.dead_letters.as_mut() {
            if !self.dead.is_empty() {
                w.write_all(&self.dead)?;
                w.flush()?;
            }
        }
        Ok(())
    }

    fn delivered(&mut self, ticket: u64, outcome: Settled) {
        let Some((mut b, results, dead)) = self.waiting.remove(&ticket) else {
            return;
        };
        if let Some(why) = outcome.failure {
            b.ok = false;
            self.fail(format!("delivering to Kafka: {why}"));
        }
        // Refused for what they are: sent again, they would be refused
        // again, and stopping would stop the group at them for good.
        // Skipped, counted and named; the request itself stays in its
        // topic at the offset the summary names.
        let (mut results, mut dead) = (results, dead);
        for (topic, why) in outcome.refused {
            if self.kafka.results_topic.as_deref() == Some(topic.as_str()) {
                results = results.saturating_sub(1);
            } else {
                dead = dead.saturating_sub(1);
            }
            self.refused += 1;
            self.meters.refused.fetch_add(1, Ordering::Relaxed);
            eprintln!("edgeguard replay: skipped: {why}");
            if self.refusals.len() < REFUSALS_KEPT {
                self.refusals.push(why);
            }
        }
        self.finish(b, results, dead);
    }

    /// The batch back to the consumer, its results and dead letters
    /// counted if they were written.
    fn finish(&mut self, b: Box<MessageBatch>, results: u64, dead: u64) {
        self.meters.written();
        if b.ok {
            self.results += results;
            self.meters.results.fetch_add(results, Ordering::Relaxed);
            if self.dead_letter_wanted() {
                self.dead_letters += dead;
                self.meters.dead_letters.fetch_add(dead, Ordering::Relaxed);
            }
        }
        // The consumer is gone only if it failed; then nothing is committed.
        let _ = self.done.send(b);
    }
}

/// What of an invalid message goes to the dead-letter topic.
#[derive(Debug, PartialEq, Eq)]
struct Fit<'m> {
    /// The payload, or its start.
    payload: &'m [u8],
    /// Whether the message's key and headers go too (dropped only if
    /// they alone take half the room: the source header still says where
    /// the message is).
    whole_key: bool,
    whole_headers: bool,
}

/// Cuts a dead letter to fit the producer's `message.max.bytes` (`max`):
/// a message the producer refuses would stop the group at it, and every
/// restart would replay up to it and stop again. `key`, `headers` (the
/// message's own, names and values) and `ours` (the error and source
/// headers' text) are byte counts. A cut payload keeps its start, ending
/// before a UTF-8 sequence it would split.
fn fit_dead_letter(max: usize, key: usize, headers: usize, ours: usize, payload: &[u8]) -> Fit<'_> {
    let room = max.saturating_sub(DEAD_LETTER_SLACK + ours);
    let whole = key + headers <= room / 2;
    let used = if whole { key + headers } else { 0 };
    let left = room.saturating_sub(used);
    let mut cut = payload.len().min(left);
    if cut < payload.len() {
        // Back to the first byte of a UTF-8 sequence (at most 3 back).
        let back = payload[..=cut]
            .iter()
            .rev()
            .take(4)
            .take_while(|&&c| c & 0xC0 == 0x80)
            .count();
        cut -= back.min(cut);
    }
    Fit {
        payload: &payload[..cut],
        whole_key: whole,
        whole_headers: whole,
    }
}

/// Appends `b` to `buf`; its range there.
fn keep(buf: &mut Vec<u8>, b: &[u8]) -> Range<usize> {
    let start = buf.len();
    buf.extend_from_slice(b);
    start..buf.len()
}

/// `{"line":N,REST` -> (N, REST): a worker's row, as its number and the
/// fields after it.
fn row_line(row: &[u8]) -> Option<(u64, &[u8])> {
    let rest = row.strip_prefix(b"{\"line\":")?;
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    let n = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b",")?;
    Some((n, rest))
}

/// `"name":"text"` for UTF-8 bytes, else `"name_base64":"..."`.
fn push_bytes_field(out: &mut Vec<u8>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            push_json_str(out, name);
            out.push(b':');
            push_json_str(out, s);
        }
        Err(_) => {
            push_json_str(out, &format!("{name}_base64"));
            out.push(b':');
            let mut text = vec![0; base64::encoded_len(bytes.len(), true).unwrap_or(0)];
            let n = base64::engine::general_purpose::STANDARD
                .encode_slice(bytes, &mut text)
                .unwrap_or(0);
            text.truncate(n);
            // Base64 is ASCII.
            push_json_str(out, std::str::from_utf8(&text).unwrap_or_default());
        }
    }
}

fn push_json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a str to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_workers_row_number() {
        assert_eq!(
            row_line(b"{\"line\":42,\"stripped\":0}"),
            Some((42, &b"\"stripped\":0}"[..]))
        );
        assert_eq!(row_line(b"{\"input\":\"a\",\"line\":1,"), None);
        assert_eq!(row_line(b"{\"line\":,"), None);
    }

    #[test]
    fn dead_letters_are_cut_to_fit_the_producers_limit() {
        let small = b"{\"not\":\"a request\"}";
        let fit = fit_dead_letter(1_000_000, 10, 20, 50, small);
        assert_eq!(
            fit,
            Fit {
                payload: small,
                whole_key: true,
                whole_headers: true
            }
        );

        let big = vec![b'x'; 1_500_000];
        let fit = fit_dead_letter(1_000_000, 10, 20, 50, &big);
        let sent = fit.payload.len() + 10 + 20 + 50 + DEAD_LETTER_SLACK;
        assert!(sent <= 1_000_000 && sent > 999_000, "{sent}");
        assert!(fit.whole_key && fit.whole_headers);

        // A key and headers that alone fill the room go; the payload's
        // start stays.
        let fit = fit_dead_letter(1_000_000, 400_000, 400_000, 50, &big);
        assert!(!fit.whole_key && !fit.whole_headers);
        assert!(fit.payload.len() + 50 + DEAD_LETTER_SLACK <= 1_000_000);

        // A cut never splits a UTF-8 sequence ("é" is 2 bytes).
        let text = "é".repeat(600_000);
        let fit = fit_dead_letter(1_000_000, 0, 0, 0, text.as_bytes());
        assert!(std::str::from_utf8(fit.payload).is_ok());
        assert!(fit.payload.len() < text.len());
        // A limit below the slack leaves an empty payload, not a panic.
        assert!(fit_dead_letter(10, 0, 0, 0, &big).payload.is_empty());
    }

    #[test]
    fn bytes_fields_are_text_or_base64() {
        let mut out = Vec::new();
        push_bytes_field(&mut out, "key", b"a\"b");
        out.push(b',');
        push_bytes_field(&mut out, "message", b"\xff\x00");
        assert_eq!(out, b"\"key\":\"a\\\"b\",\"message_base64\":\"/wA=\"");
    }
}
