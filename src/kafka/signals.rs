//! `edgeguard signals` as a consumer group over the fleet's request log
//! (docs/signals.md, "Fleet setup"), and `edgeguard signals export`.
//!
//! ```text
//!  log topic ──[stage 1: group G]──> partials topic ──[stage 2: group G.partials]──> snapshot topic
//!  request lines   replay's Worker      key kind:key      a window per owned             key kind:key,
//!                  judges each line,    (one key, one     partition, rebuilt from        a Record, or a
//!                  cells per key and    partition)        the partials the topic         tombstone when
//!                  bucket, flushed                        retains; published every       the key leaves
//!                  every --flush-every                    --publish-every                 ──> export ──> file
//! ```
//!
//! - **Stage 1** is replay from Kafka with another writer: the consumer
//!   ([`super::source`]) hands batches of one partition to a worker that
//!   judges every line with replay's [`Worker`] and folds what the gate
//!   decided into [`Partials`]. A batch goes back to the consumer (and its
//!   offsets may be committed) only once the partials it went into are
//!   acknowledged by the broker: at least once. A member that dies redoes
//!   what it did since its last commit, and those requests are then
//!   counted twice (counts add; sketches, being sets, do not).
//! - **Stage 2** owns the partitions of the partials topic the group gives
//!   it, so disjoint keys. It never commits: on each assignment it reads
//!   the partition from the oldest partial the topic retains (give the
//!   partials topic a retention of at least the window), so a new owner
//!   rebuilds the exact window a dead one held. It publishes only once a
//!   partition is read to its end, and only the keys whose counts changed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers as _, Message as _, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::ClientContext;

use crate::load::Config;
use crate::replay::batches::{drain, Work};
use crate::replay::WindowFeed;
use crate::replay::{Options, Worker};
use crate::signals::file::write_atomically;
use crate::signals::partials::{parse_topic_key, topic_key, Partial, Partials, TOPIC_KEY_CAP};
use crate::signals::snapshot::Record;
use crate::signals::{Counts, Settings, Snapshot, Window};

use super::batch::MessageBatch;
use super::client::Client;
use super::meters::Meters;
use super::source::{self, Ways};

/// The header of a snapshot record: the Unix time its counts end at.
pub const GENERATED_HEADER: &str = "edgeguard-generated";
/// The header of a snapshot record: the seconds its counts cover.
pub const WINDOW_HEADER: &str = "edgeguard-window";

/// Batches in stage 1's pool: it holds them until their partials are
/// flushed, so a flush comes at the latest when all are held.
const POOL: usize = 8;

/// Where the fleet's signals run in Kafka.
#[derive(Clone, Debug)]
pub struct SignalsOptions {
    /// The brokers and librdkafka properties.
    pub client: Client,
    /// The request log: stage 1 runs when given.
    pub log_topic: Option<String>,
    /// Stage 1's group; stage 2's is this and `.partials`.
    pub group: String,
    /// Stage 1 writes, stage 2 reads.
    pub partials_topic: String,
    /// Stage 2 runs when given, and publishes here.
    pub snapshot_topic: Option<String>,
    /// Stage 1 flushes its partials this often.
    pub flush_every: Duration,
    /// Stage 2 publishes this often.
    pub publish_every: Duration,
    /// Stage 2 also writes the snapshot of the keys it owns here.
    pub out: Option<PathBuf>,
    /// Stop once stage 1's partitions are read to their end and stage 2's
    /// too (for tests and backfills).
    pub exit_at_end: bool,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct SignalsReport {
    /// Stage 1: requests judged and folded.
    pub requests: u64,
    /// Stage 1: lines that were not requests.
    pub invalid: u64,
    /// Stage 1: partials sent.
    pub partials_sent: u64,
    /// Stage 2: partials merged, and refused (another bucket length, not
    /// JSON, a bad key).
    pub partials_merged: u64,
    /// See above.
    pub partials_refused: u64,
    /// Stage 2: records and tombstones published.
    pub records: u64,
    /// See above.
    pub tombstones: u64,
    /// Stage 2: keys owned at the end.
    pub keys: usize,
    /// Why the run stopped early, if it did.
    pub failure: Option<String>,
}

/// Runs stage 1 and/or stage 2 until `stop`, the end (`exit_at_end`) or a
/// failure.
pub fn run(
    k: &SignalsOptions,
    config: &Config,
    options: &Options,
    settings: Settings,
    stop: &AtomicBool,
) -> Result<SignalsReport, String> {
    settings.check()?;
    let one_done = AtomicBool::new(k.log_topic.is_none());
    let (one, two) = thread::scope(|scope| {
        let two = k.snapshot_topic.as_ref().map(|snap| {
            let one_done = &one_done;
            scope.spawn(move || stage_two(k, snap, settings, stop, one_done))
        });
        let one = k
            .log_topic
            .as_ref()
            .map(|log| stage_one(k, log, config, options, settings, stop));
        one_done.store(true, Ordering::Relaxed);
        let two = two.map(|h| h.join().unwrap_or_else(|_| Err("stage 2 panicked".into())));
        (one, two)
    });
    let mut report = SignalsReport::default();
    if let Some(one) = one {
        let r = one?;
        report.requests = r.requests;
        report.invalid = r.invalid;
        report.partials_sent = r.partials_sent;
        report.failure = r.failure;
    }
    if let Some(two) = two {
        let r = two?;
        report.partials_merged = r.partials_merged;
        report.partials_refused = r.partials_refused;
        report.records = r.records;
        report.tombstones = r.tombstones;
        report.keys = r.keys;
        report.failure = report.failure.or(r.failure);
    }
    Ok(report)
}

/// A producer that says whether everything sent since the last flush was
/// delivered.
struct Out {
    inner: ThreadedProducer<OutCtx>,
}

#[derive(Default)]
struct OutCtx {
    failure: Mutex<Option<String>>,
}

impl ClientContext for OutCtx {
    fn log(&self, _: RDKafkaLogLevel, fac: &str, message: &str) {
        eprintln!("edgeguard signals: kafka producer: {fac}: {message}");
    }
}

impl ProducerContext for OutCtx {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = result {
            let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            f.get_or_insert_with(|| e.to_string());
        }
    }
}

impl Out {
    fn new(client: &Client) -> Result<Out, String> {
        let inner = client
            .producer()
            .create_with_context(OutCtx::default())
            .map_err(|e| format!("kafka producer: {e}"))?;
        Ok(Out { inner })
    }

    /// Sends one message (`payload` None: a tombstone), waiting while the
    /// queue is full.
    fn send(
        &self,
        topic: &str,
        key: &[u8],
        payload: Option<&[u8]>,
        headers: &[(&str, &[u8])],
    ) -> Result<(), String> {
        let mut h = OwnedHeaders::new_with_capacity(headers.len());
        for &(name, value) in headers {
            h = h.insert(Header {
                key: name,
                value: Some(value),
            });
        }
        let mut record = BaseRecord::<[u8], [u8]>::to(topic).key(key).headers(h);
        if let Some(p) = payload {
            record = record.payload(p);
        }
        loop {
            match self.inner.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => return Err(format!("kafka: sending to {topic}: {e}")),
            }
        }
    }

    /// Waits until everything sent is delivered: the first failure if one
    /// was not.
    fn flush(&self) -> Result<(), String> {
        self.inner
            .flush(Duration::from_secs(60))
            .map_err(|e| format!("kafka: delivering: {e}"))?;
        let mut f = self
            .inner
            .context()
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match f.take() {
            Some(e) => Err(format!("kafka: delivering: {e}")),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Default)]
struct OneReport {
    requests: u64,
    invalid: u64,
    partials_sent: u64,
    failure: Option<String>,
}

/// Stage 1: the log topic's lines judged and folded into partials, each
/// batch handed back (to be committed) once its partials are delivered.
fn stage_one(
    k: &SignalsOptions,
    log_topic: &str,
    config: &Config,
    options: &Options,
    settings: Settings,
    stop: &AtomicBool,
) -> Result<OneReport, String> {
    let out = Out::new(&k.client)?;
    let meters = Arc::new(Meters::new(log_topic));
    let halt = AtomicBool::new(false);
    let halted = || stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed);
    let (work_tx, work_rx) = sync_channel(POOL);
    let (done_tx, done_rx) = sync_channel(POOL);
    let src = source::Settings {
        topic: log_topic.to_owned(),
        group: k.group.clone(),
        pool: POOL,
        batch_bytes: options.batch_bytes,
        batch_lines: 4096,
        max_line: options.max_line,
        commit_every: Duration::from_secs(1),
        exit_at_end: k.exit_at_end,
    };
    let now = options.now.unwrap_or_else(unix_now);
    let mut report = OneReport::default();
    let consumed = thread::scope(|scope| {
        let consumer = {
            let (client, halted) = (&k.client, &halted);
            thread::Builder::new()
                .name("edgeguard-signals-consumer".into())
                .spawn_scoped(scope, move || {
                    let ways = Ways {
                        work: work_tx,
                        done: done_rx,
                    };
                    source::run(client, src, ways, halted, meters)
                })
                .map_err(|e| format!("starting the consumer: {e}"))?
        };
        let worker = Worker::with(
            config,
            None,
            false,
            &[],
            options.max_line,
            options.samples,
            now,
        );
        let mut fold = Fold {
            worker,
            partials: Partials::new(settings.bucket_secs()),
            out: &out,
            topic: &k.partials_topic,
            flush_every: k.flush_every,
            last_flush: Instant::now(),
            halted: &halted,
            halt: &halt,
            sent: 0,
            failure: None,
        };
        drain(&Mutex::new(Some(work_rx)), &mut fold, |b| {
            // The consumer is gone only once nothing is out.
            done_tx.send(b).is_ok()
        });
        let summary = fold.worker.summary();
        report.requests = summary.requests;
        report.invalid = summary.parse_errors + summary.blank_lines;
        report.partials_sent = fold.sent;
        report.failure = fold.failure;
        consumer
            .join()
            .unwrap_or_else(|_| Err("the consumer panicked".into()))
    })?;
    report.failure = report.failure.or(consumed.failure);
    Ok(report)
}

/// Stage 1's worker: judges each batch's lines into the partials, and
/// holds the batches until the partials they went into are delivered.
struct Fold<'a, 'c> {
    worker: Worker<'c>,
    partials: Partials,
    out: &'a Out,
    topic: &'a str,
    flush_every: Duration,
    last_flush: Instant,
    halted: &'a dyn Fn() -> bool,
    /// Set on a failed flush: the consumer stops.
    halt: &'a AtomicBool,
    /// Partials delivered.
    sent: u64,
    /// The first failed flush.
    failure: Option<String>,
}

impl Work<Box<MessageBatch>> for Fold<'_, '_> {
    fn each(&mut self, b: &mut Box<MessageBatch>) {
        let mut observer = WindowFeed::new(&mut self.partials, unix_now);
        self.worker
            .observe(&mut b.lines, &mut |seen| observer.add(seen));
    }

    fn tick(&self) -> Option<Duration> {
        Some(Duration::from_millis(50))
    }

    /// The pool nearly full (the consumer has a batch left to fill), the
    /// flush interval passed, or halting.
    fn due(&mut self, held: usize) -> bool {
        held >= POOL - 1 || self.last_flush.elapsed() >= self.flush_every || (self.halted)()
    }

    fn flush(&mut self, held: &mut [Box<MessageBatch>]) {
        let sent = flush_partials(self.out, self.topic, &mut self.partials);
        let ok = sent.is_ok();
        match sent {
            Ok(n) => self.sent += n,
            Err(e) => {
                self.failure.get_or_insert(e);
                self.halt.store(true, Ordering::Relaxed);
            }
        }
        for b in held {
            b.ok = ok;
        }
        self.last_flush = Instant::now();
    }
}

/// Sends every partial; how many, once all are delivered.
fn flush_partials(out: &Out, topic: &str, partials: &mut Partials) -> Result<u64, String> {
    let mut n = 0;
    let mut payload = Vec::new();
    for (key, partial) in partials.drain() {
        payload.clear();
        serde_json::to_writer(&mut payload, &partial).map_err(|e| e.to_string())?;
        out.send(topic, &key, Some(&payload), &[])?;
        n += 1;
    }
    out.flush()?;
    Ok(n)
}

#[derive(Debug, Default)]
struct TwoReport {
    partials_merged: u64,
    partials_refused: u64,
    records: u64,
    tombstones: u64,
    keys: usize,
    failure: Option<String>,
}

/// One owned partition of the partials topic.
struct Part {
    window: Window,
    /// Read to its end once: its window is whole, it may be published.
    caught_up: bool,
    /// What was published of each `kind:key`.
    published: HashMap<Box<[u8]>, Counts>,
}

/// Assignments and revocations, as the rebalance callbacks saw them.
struct TwoCtx {
    topic: String,
    changes: Mutex<Vec<(bool, Vec<i32>)>>,
}

impl TwoCtx {
    fn note(&self, assigned: bool, tpl: &TopicPartitionList) {
        let parts = tpl
            .elements_for_topic(&self.topic)
            .iter()
            .map(|e| e.partition())
            .collect();
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((assigned, parts));
    }
}

impl ClientContext for TwoCtx {
    fn log(&self, _: RDKafkaLogLevel, fac: &str, message: &str) {
        eprintln!("edgeguard signals: kafka: {fac}: {message}");
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if error.rdkafka_error_code() != Some(RDKafkaErrorCode::PartitionEOF) {
            eprintln!("edgeguard signals: kafka: {error}: {reason}");
        }
    }
}

impl ConsumerContext for TwoCtx {
    fn pre_rebalance(&self, _: &BaseConsumer<TwoCtx>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(tpl) => self.note(false, tpl),
            Rebalance::Assign(_) => {}
            Rebalance::Error(e) => eprintln!("edgeguard signals: kafka: rebalance: {e}"),
        }
    }

    fn post_rebalance(&self, _: &BaseConsumer<TwoCtx>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            self.note(true, tpl);
        }
    }
}

/// Stage 2: the partials of the owned partitions merged into a window per
/// partition, published every `publish_every`.
fn stage_two(
    k: &SignalsOptions,
    snapshot_topic: &str,
    settings: Settings,
    stop: &AtomicBool,
    one_done: &AtomicBool,
) -> Result<TwoReport, String> {
    let group = format!("{}.partials", k.group);
    let ctx = TwoCtx {
        topic: k.partials_topic.clone(),
        changes: Mutex::new(Vec::new()),
    };
    let consumer: BaseConsumer<TwoCtx> = k
        .client
        .consumer(&group)?
        .create_with_context(ctx)
        .map_err(|e| format!("kafka consumer: {e}"))?;
    consumer
        .subscribe(&[&k.partials_topic])
        .map_err(|e| format!("kafka: subscribing to {}: {e}", k.partials_topic))?;
    let out = Out::new(&k.client)?;
    let mut parts: BTreeMap<i32, Part> = BTreeMap::new();
    let mut report = TwoReport::default();
    let mut last_publish = Instant::now();
    let mut last_message = Instant::now();
    let mut assigned_once = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let polled = consumer.poll(Duration::from_millis(100));
        for (assigned, list) in std::mem::take(
            &mut *consumer
                .context()
                .changes
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ) {
            eprintln!(
                "edgeguard signals: stage 2: partitions {list:?} of {} {}",
                k.partials_topic,
                if assigned { "assigned" } else { "revoked" }
            );
            for p in list {
                if assigned {
                    assigned_once = true;
                    parts.insert(
                        p,
                        Part {
                            window: Window::new(settings)?,
                            caught_up: false,
                            published: HashMap::new(),
                        },
                    );
                } else {
                    // The next owner rebuilds it and publishes it.
                    parts.remove(&p);
                }
            }
        }
        match polled {
            Some(Ok(m)) => {
                last_message = Instant::now();
                let Some(part) = parts.get_mut(&m.partition()) else {
                    continue;
                };
                let merged = m
                    .key()
                    .and_then(parse_topic_key)
                    .zip(
                        m.payload()
                            .and_then(|p| serde_json::from_slice::<Partial>(p).ok()),
                    )
                    .filter(|(_, p)| p.bucket_secs == settings.bucket_secs());
                match merged {
                    Some(((kind, key), partial)) => {
                        part.window.merge(kind, key, &partial.cell);
                        report.partials_merged += 1;
                    }
                    None => report.partials_refused += 1,
                }
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                if let Some(part) = parts.get_mut(&p).filter(|part| !part.caught_up) {
                    part.caught_up = true;
                    eprintln!(
                        "edgeguard signals: stage 2: {}-{p} read to its end: {} keys",
                        k.partials_topic,
                        part.window.keys()
                    );
                }
            }
            Some(Err(e)) => eprintln!("edgeguard signals: kafka: {e}"),
            None => {}
        }
        if last_publish.elapsed() >= k.publish_every {
            publish(k, snapshot_topic, &out, &mut parts, &mut report)?;
            last_publish = Instant::now();
        }
        let at_end = assigned_once
            && one_done.load(Ordering::Relaxed)
            && parts.values().all(|p| p.caught_up)
            && last_message.elapsed() >= 2 * k.flush_every.max(Duration::from_secs(1));
        if k.exit_at_end && at_end {
            break;
        }
    }
    publish(k, snapshot_topic, &out, &mut parts, &mut report)?;
    report.keys = parts.values().map(|p| p.window.keys()).sum();
    Ok(report)
}

/// Publishes what changed in every caught-up partition: a record per key
/// whose counts changed, a tombstone per key that left (or fell below
/// `min_requests`); then the owned keys' file, if asked.
fn publish(
    k: &SignalsOptions,
    topic: &str,
    out: &Out,
    parts: &mut BTreeMap<i32, Part>,
    report: &mut TwoReport,
) -> Result<(), String> {
    let mut payload = Vec::new();
    let mut buf = [0; TOPIC_KEY_CAP];
    for part in parts.values_mut().filter(|p| p.caught_up) {
        let end = part.window.end().to_string();
        let window = part.window.settings().window.to_string();
        let min = part.window.settings().min_requests;
        let headers = [
            (GENERATED_HEADER, end.as_bytes()),
            (WINDOW_HEADER, window.as_bytes()),
        ];
        part.window.expire();
        let mut live: HashMap<Box<[u8]>, Counts> = HashMap::new();
        for (kind, key, counts) in part.window.entries() {
            if counts.requests >= min {
                live.insert(topic_key(kind, key, &mut buf).into(), counts);
            }
        }
        for (tk, counts) in &live {
            if part.published.get(tk) == Some(counts) {
                continue;
            }
            let Some((kind, key)) = parse_topic_key(tk) else {
                continue;
            };
            let key = String::from_utf8_lossy(key);
            payload.clear();
            serde_json::to_writer(&mut payload, &Record::new(kind, &key, counts))
                .map_err(|e| e.to_string())?;
            out.send(topic, tk, Some(&payload), &headers)?;
            report.records += 1;
        }
        for tk in part.published.keys() {
            if !live.contains_key(tk) {
                out.send(topic, tk, None, &headers)?;
                report.tombstones += 1;
            }
        }
        part.published = live;
    }
    out.flush()?;
    if let Some(path) = &k.out {
        let mut s = None::<Snapshot>;
        for part in parts.values_mut().filter(|p| p.caught_up) {
            let (one, _) = part.window.snapshot();
            let into = s.get_or_insert_with(|| Snapshot::new(one.generated(), one.window()));
            if one.generated() > into.generated() {
                let mut grown = Snapshot::new(one.generated(), into.window());
                for (kind, key, c) in into.sorted() {
                    let _ = grown.insert(kind, key, *c);
                }
                *into = grown;
            }
            for (kind, key, c) in one.sorted() {
                let _ = into.insert(kind, key, *c);
            }
        }
        if let Some(s) = s {
            write_atomically(path, &s)?;
        }
    }
    Ok(())
}

/// What `export` read.
#[derive(Debug, Default)]
pub struct ExportReport {
    /// Records read (the last of each key counts).
    pub records: u64,
    /// Keys written.
    pub entries: usize,
    /// Records a snapshot refuses (bad JSON, key or counts): skipped.
    pub refused: u64,
}

/// Reads the compacted snapshot topic to its end (the last record of each
/// key; a tombstone removes it) and writes the whole snapshot file; with
/// `every`, again every so often until `stop`.
pub fn export(
    client: &Client,
    topic: &str,
    out: &Path,
    every: Option<Duration>,
    stop: &AtomicBool,
) -> Result<ExportReport, String> {
    loop {
        let (snapshot, mut report) = read_snapshot(client, topic)?;
        write_atomically(out, &snapshot)?;
        report.entries = snapshot.len();
        let Some(every) = every else {
            return Ok(report);
        };
        eprintln!(
            "edgeguard signals export: {} entries to {} ({} records, {} refused)",
            report.entries,
            out.display(),
            report.records,
            report.refused
        );
        let until = Instant::now() + every;
        while Instant::now() < until {
            if stop.load(Ordering::Relaxed) {
                return Ok(report);
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The last record of a key, and its headers.
struct Latest {
    payload: Vec<u8>,
    generated: u64,
    window: u64,
}

fn read_snapshot(client: &Client, topic: &str) -> Result<(Snapshot, ExportReport), String> {
    // A group of its own that never commits: it only assigns.
    let group = format!("edgeguard-export-{}", std::process::id());
    let consumer: BaseConsumer = client
        .consumer(&group)?
        .create()
        .map_err(|e| format!("kafka consumer: {e}"))?;
    let timeout = Duration::from_secs(10);
    let meta = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| format!("kafka: {topic}: {e}"))?;
    let partitions: Vec<i32> = meta
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    if partitions.is_empty() {
        return Err(format!("kafka: topic {topic} has no partitions"));
    }
    // A partition is read once the consumer says it reached its end (the
    // fetch's high watermark): tansu 0.6's ListOffsets answers a high
    // watermark below the last offset (1 for 3 records), so the
    // watermarks only tell which partitions hold anything.
    let mut ends = std::collections::HashSet::new();
    let mut tpl = TopicPartitionList::new();
    for p in partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, p, timeout)
            .map_err(|e| format!("kafka: {topic}-{p}: {e}"))?;
        if high > low {
            ends.insert(p);
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .map_err(|e| e.to_string())?;
        }
    }
    consumer.assign(&tpl).map_err(|e| format!("kafka: {e}"))?;
    let mut latest: HashMap<Vec<u8>, Option<Latest>> = HashMap::new();
    let mut report = ExportReport::default();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ends.is_empty() {
        if Instant::now() > deadline {
            return Err(format!("kafka: {topic} not read to its end in 120 s"));
        }
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                report.records += 1;
                let Some(key) = m.key() else { continue };
                let header = |name: &str| {
                    m.headers().and_then(|h| {
                        h.iter()
                            .find(|h| h.key == name)
                            .and_then(|h| std::str::from_utf8(h.value?).ok()?.parse().ok())
                    })
                };
                let value = m.payload().filter(|p| !p.is_empty()).map(|p| Latest {
                    payload: p.to_vec(),
                    generated: header(GENERATED_HEADER).unwrap_or(0),
                    window: header(WINDOW_HEADER).unwrap_or(0),
                });
                latest.insert(key.to_vec(), value);
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                ends.remove(&p);
            }
            Some(Err(e)) => return Err(format!("kafka: {topic}: {e}")),
            None => {}
        }
    }
    let live: Vec<_> = latest.into_values().flatten().collect();
    let generated = live.iter().map(|v| v.generated).max().unwrap_or(0);
    let window = live
        .iter()
        .map(|v| v.window)
        .max()
        .filter(|&w| w > 0)
        .unwrap_or(3600);
    let mut s = Snapshot::new(generated, window);
    for v in &live {
        let ok = serde_json::from_slice::<Record>(&v.payload)
            .map_err(|e| e.to_string())
            .and_then(|r| {
                let (kind, key, c) = r.parts().map_err(|(f, m)| format!("{f}: {m}"))?;
                s.insert(kind, key, c)
            });
        if let Err(e) = ok {
            report.refused += 1;
            eprintln!("edgeguard signals export: {topic}: a record refused: {e}");
        }
    }
    Ok((s, report))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
