//! The consumer thread: Kafka messages into batches of one partition, the
//! batches out to the workers and back done, and the commits.
//!
//! Everything a batch needs is in a fixed pool, so memory is bounded by
//! the pool (and librdkafka's bounded prefetch queue) whatever the
//! backlog. When every batch is out, the consumer waits for one to come
//! back; if none does for [`PAUSE_AFTER`] (the writer is behind), the
//! assigned partitions are paused, the consumer keeps polling (the group
//! sees it alive, rebalances are served), and they are resumed once half
//! the pool is back. A pause makes librdkafka drop what it prefetched, so
//! a moment's shortage does not pause: a message that arrives with no batch
//! for it (a batch of another partition was just handed on) waits up to
//! [`PAUSE_AFTER`] for one. If none comes back, the message is not kept:
//! the partitions are paused and its partition is sought back to it, so it
//! is fetched again after the resume.
//!
//! A partition's offset is committed (every `commit_every`, asynchronously)
//! at the end of the run of done batches from its oldest
//! ([`super::offsets`]). When partitions are revoked (a rebalance, the
//! group's member leaving) or the run stops (a signal, `exit_at_end`, a
//! failure), the batches of those partitions still out are waited for, and
//! what is done is committed synchronously before the next owner starts:
//! duplicates are limited to what was done after the last commit of a
//! member that died without stopping (at-least-once).
//!
//! The rebalance callbacks run inside `poll`, on this thread; they share
//! the loop's state through a mutex that the loop never holds across
//! `poll`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Headers as _, Message as _};
use rdkafka::statistics::Statistics;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::ClientContext;

use super::batch::MessageBatch;
use super::client::Client;
use super::meters::Meters;
use super::offsets::Offsets;

/// How long a batch being filled waits for more messages when none is
/// waiting: batches stay large under load, and results come within
/// milliseconds when traffic is light.
const LINGER: Duration = Duration::from_millis(20);

/// How long the whole pool may stay out before the partitions are paused:
/// a pause makes librdkafka drop what it prefetched (fetched again on the
/// resume), so it is kept for a writer that is really behind.
const PAUSE_AFTER: Duration = Duration::from_millis(500);

/// How the consumer runs.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) topic: String,
    pub(crate) group: String,
    /// Batches in the pool.
    pub(crate) pool: usize,
    /// A batch is handed on at this many payload bytes...
    pub(crate) batch_bytes: usize,
    /// ... or this many messages, or when no message is waiting.
    pub(crate) batch_lines: usize,
    /// Longer payloads are not parsed (counted, dead-lettered).
    pub(crate) max_line: usize,
    pub(crate) commit_every: Duration,
    /// Stop once every assigned partition is read to its end.
    pub(crate) exit_at_end: bool,
}

/// The ways batches travel: to the workers, and back once written.
pub(crate) struct Ways {
    pub(crate) work: SyncSender<Box<MessageBatch>>,
    pub(crate) done: Receiver<Box<MessageBatch>>,
}

/// What the consumer did.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// The last offset committed for each partition this member owned.
    pub(crate) committed: BTreeMap<i32, i64>,
    /// Assignments and revocations.
    pub(crate) rebalances: u64,
    /// Why the run stopped early, if it did.
    pub(crate) failure: Option<String>,
}

/// Runs the consumer on this thread until `stop` says so, every assigned
/// partition is at its end (`exit_at_end`), or something fails. Returns
/// once what was handed out is back and committed.
pub(crate) fn run(
    client: &Client,
    settings: Settings,
    ways: Ways,
    stop: &(dyn Fn() -> bool + Sync),
    meters: Arc<Meters>,
) -> Result<Report, String> {
    let config = client.consumer(&settings.group)?;
    let ctx = Ctx {
        state: Mutex::new(State::new(settings.clone(), ways, Arc::clone(&meters))),
        topic: settings.topic.clone(),
        meters,
        commit_answers: Mutex::new(Vec::new()),
    };
    let consumer: BaseConsumer<Ctx> = config
        .create_with_context(ctx)
        .map_err(|e| format!("kafka consumer: {e}"))?;
    consumer
        .subscribe(&[&settings.topic])
        .map_err(|e| format!("kafka: subscribing to {}: {e}", settings.topic))?;
    loop {
        let timeout;
        {
            let mut st = consumer.context().lock();
            st.reclaim();
            let answers = std::mem::take(&mut *lock(&consumer.context().commit_answers));
            st.answered(answers);
            if stop() || st.report.failure.is_some() {
                break;
            }
            if st.last_commit.elapsed() >= settings.commit_every {
                st.commit(&consumer, CommitMode::Async);
            }
            if st.starved() && !st.paused {
                // Every batch is out: usually one is back within
                // milliseconds. Meanwhile librdkafka's own queue (bounded)
                // holds what it fetches.
                st.wait_free(Duration::from_millis(20));
            }
            st.update_pause(&consumer);
            if settings.exit_at_end && st.at_end_everywhere() {
                break;
            }
            if st.starved() && !st.paused {
                // A message now would have no batch: not polled until a
                // batch is back or the partitions are paused.
                continue;
            }
            // A batch being filled waits a little for more messages.
            timeout = match &st.open {
                Some(_) => LINGER.saturating_sub(st.opened_at.elapsed()),
                None => Duration::from_millis(100),
            };
        }
        match consumer.poll(timeout) {
            Some(Ok(m)) => consumer.context().lock().accept(&consumer, &m),
            Some(Err(KafkaError::PartitionEOF(p))) => {
                let mut st = consumer.context().lock();
                st.hand_on();
                st.at_end.insert(p);
            }
            Some(Err(KafkaError::MessageConsumption(
                RDKafkaErrorCode::UnknownTopicOrPartition,
            ))) => {
                consumer.context().lock().report.failure =
                    Some(format!("kafka: topic {:?} does not exist", settings.topic));
            }
            Some(Err(KafkaError::MessageConsumptionFatal(code))) => {
                consumer.context().lock().report.failure =
                    Some(format!("kafka: fatal consumer error: {code}"));
            }
            // Reported through the context's error callback.
            Some(Err(_)) => {}
            None => {
                let mut st = consumer.context().lock();
                if st.opened_at.elapsed() >= LINGER {
                    st.hand_on();
                }
            }
        }
    }
    let report = {
        let mut st = consumer.context().lock();
        st.hand_on();
        st.drain(None);
        st.commit(&consumer, CommitMode::Sync);
        // The workers end when their way in closes.
        st.work = None;
        std::mem::take(&mut st.report)
    };
    // Leaves the group (the revocation it brings finds nothing out).
    drop(consumer);
    Ok(report)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The state stays consistent at every await point of the loop; a
    // panicking thread holding it leaves nothing half-done to protect.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The consumer's state, shared by its loop and its callbacks.
struct State {
    settings: Settings,
    meters: Arc<Meters>,
    offsets: Offsets,
    /// Free batches (the pool, less those out or open).
    // Boxed: batches travel the channels and the writer's map as
    // pointers, whoever holds them.
    #[allow(clippy::vec_box)]
    free: Vec<Box<MessageBatch>>,
    /// The batch being filled, and since when.
    open: Option<Box<MessageBatch>>,
    opened_at: Instant,
    /// Since when every batch is out.
    starved_since: Option<Instant>,
    work: Option<SyncSender<Box<MessageBatch>>>,
    done: Receiver<Box<MessageBatch>>,
    paused: bool,
    assigned: BTreeSet<i32>,
    /// Assigned partitions read to their end (nothing newer seen since).
    at_end: BTreeSet<i32>,
    /// Partitions sought back while paused: their messages are dropped
    /// until the resume (they are fetched again).
    rewound: BTreeSet<i32>,
    last_commit: Instant,
    report: Report,
}

impl State {
    fn new(settings: Settings, ways: Ways, meters: Arc<Meters>) -> State {
        let free = (0..settings.pool.max(2))
            .map(|_| Box::<MessageBatch>::default())
            .collect();
        State {
            settings,
            meters,
            offsets: Offsets::default(),
            free,
            open: None,
            opened_at: Instant::now(),
            starved_since: None,
            work: Some(ways.work),
            done: ways.done,
            paused: false,
            assigned: BTreeSet::new(),
            at_end: BTreeSet::new(),
            rewound: BTreeSet::new(),
            last_commit: Instant::now(),
            report: Report::default(),
        }
    }

    /// Takes back the batches the writer is done with, without waiting.
    fn reclaim(&mut self) {
        while let Ok(b) = self.done.try_recv() {
            self.back(b);
        }
    }

    fn back(&mut self, b: Box<MessageBatch>) {
        self.offsets.finish(b.partition, b.ticket, b.ok);
        self.meters.in_flight.fetch_sub(1, Ordering::Relaxed);
        if !b.ok && self.report.failure.is_none() {
            self.report.failure = Some(format!(
                "results of partition {} not written: stopping (its offsets stay uncommitted)",
                b.partition
            ));
        }
        self.free.push(b);
    }

    /// One message into the open batch (a new one if it is of another
    /// partition, or full).
    fn accept(&mut self, consumer: &BaseConsumer<Ctx>, m: &BorrowedMessage<'_>) {
        let p = m.partition();
        if !self.assigned.contains(&p) || self.rewound.contains(&p) {
            return;
        }
        self.at_end.remove(&p);
        if self.open.as_ref().is_some_and(|b| b.partition != p) {
            self.hand_on();
        }
        if self.open.is_none() {
            if self.free.is_empty() {
                // Every batch is out (the workers are behind the fetch):
                // usually one is back within milliseconds. Waiting for it
                // keeps what librdkafka prefetched, which a pause drops
                // (measured: pausing at once here, at each change of
                // partition, refetched up to 16 MiB every few hundred
                // milliseconds and halved the rate); only a writer that
                // holds the pool for [`PAUSE_AFTER`] costs a pause.
                self.wait_free(PAUSE_AFTER);
            }
            match self.free.pop() {
                Some(mut b) => {
                    b.reset(p);
                    self.open = Some(b);
                    self.opened_at = Instant::now();
                }
                None => {
                    // No room: fetch it again after the resume.
                    self.pause(consumer);
                    self.rewound.insert(p);
                    self.meters.rewinds.fetch_add(1, Ordering::Relaxed);
                    let offset = Offset::Offset(m.offset());
                    if let Err(e) = consumer.seek(&self.settings.topic, p, offset, Duration::ZERO) {
                        self.report.failure = Some(format!(
                            "kafka: seeking partition {p} back to {}: {e}",
                            m.offset()
                        ));
                    }
                    return;
                }
            }
        }
        let payload = m.payload().unwrap_or_default();
        if self.meters.messages.fetch_add(1, Ordering::Relaxed) == 0 {
            self.meters.first_message();
        }
        self.meters
            .bytes
            .fetch_add(payload.len() as u64, Ordering::Relaxed);
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let headers = m
            .headers()
            .into_iter()
            .flat_map(|h| h.iter().map(|h| (h.key, h.value)));
        open.push(
            m.offset(),
            m.key(),
            headers,
            payload,
            self.settings.max_line,
        );
        if open.bytes() >= self.settings.batch_bytes || open.len() >= self.settings.batch_lines {
            self.hand_on();
        }
    }

    /// The open batch to the workers (if it holds anything).
    fn hand_on(&mut self) {
        let Some(mut b) = self.open.take() else {
            return;
        };
        if b.is_empty() {
            self.free.push(b);
            return;
        }
        b.ticket = self.offsets.dispatch(b.partition, b.end);
        let sent = self.work.as_ref().is_some_and(|w| w.send(b).is_ok());
        if sent {
            self.meters.in_flight.fetch_add(1, Ordering::Relaxed);
        } else if self.report.failure.is_none() {
            // The workers are gone (a panic): what was handed out is lost
            // with them, and stays uncommitted.
            self.report.failure = Some("the replay workers stopped".into());
        }
    }

    /// Waits until no batch of `partitions` (all if None) is out.
    fn drain(&mut self, partitions: Option<&BTreeSet<i32>>) {
        if self
            .open
            .as_ref()
            .is_some_and(|b| partitions.is_none_or(|ps| ps.contains(&b.partition)))
        {
            self.hand_on();
        }
        loop {
            let out = match partitions {
                None => self.offsets.total_in_flight(),
                Some(ps) => ps.iter().map(|&p| self.offsets.in_flight(p)).sum(),
            };
            if out == 0 {
                return;
            }
            match self.done.recv_timeout(Duration::from_millis(200)) {
                Ok(b) => self.back(b),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    if self.report.failure.is_none() {
                        self.report.failure = Some("the replay writer stopped".into());
                    }
                    return;
                }
            }
        }
    }

    /// Commits the partitions whose done run moved (Sync: all of them, and
    /// waits for the coordinator).
    fn commit(&mut self, consumer: &BaseConsumer<Ctx>, mode: CommitMode) {
        self.last_commit = Instant::now();
        let offsets = match mode {
            CommitMode::Async => self.offsets.due(),
            CommitMode::Sync => self.offsets.all(),
        };
        self.commit_offsets(consumer, &offsets, mode);
    }

    fn commit_offsets(
        &mut self,
        consumer: &BaseConsumer<Ctx>,
        offsets: &[(i32, i64)],
        mode: CommitMode,
    ) {
        if offsets.is_empty() {
            return;
        }
        let mut tpl = TopicPartitionList::new();
        for &(p, o) in offsets {
            // Cannot fail for a valid offset.
            let _ = tpl.add_partition_offset(&self.settings.topic, p, Offset::Offset(o));
        }
        match consumer.commit(&tpl, mode) {
            Ok(()) => {
                self.meters.commits.fetch_add(1, Ordering::Relaxed);
                for &(p, o) in offsets {
                    self.offsets.sent(p, o);
                }
                // A synchronous commit returns the coordinator's answer; an
                // asynchronous one's comes through `commit_callback`.
                if matches!(mode, CommitMode::Sync) {
                    self.answered(offsets.iter().map(|&(p, o)| (p, o, true)).collect());
                }
            }
            Err(e) => {
                self.meters.commit_failures.fetch_add(1, Ordering::Relaxed);
                for &(p, o) in offsets {
                    self.offsets.unsent(p, o);
                }
                eprintln!("edgeguard: kafka: commit failed: {e}");
            }
        }
    }

    /// The coordinator's answers to commits: what it took is committed
    /// (and reported as such); what it refused is due again.
    fn answered(&mut self, answers: Vec<(i32, i64, bool)>) {
        for (p, o, ok) in answers {
            if ok {
                let c = self.report.committed.entry(p).or_insert(o);
                *c = (*c).max(o);
                self.meters.committed(p, *c);
            } else {
                self.offsets.unsent(p, o);
                self.meters.commit_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Every batch is out: no room for a message.
    fn starved(&self) -> bool {
        self.open.is_none() && self.free.is_empty()
    }

    /// Waits up to `timeout` for a batch to come back.
    fn wait_free(&mut self, timeout: Duration) {
        match self.done.recv_timeout(timeout) {
            Ok(b) => {
                self.back(b);
                self.reclaim();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if self.report.failure.is_none() {
                    self.report.failure = Some("the replay writer stopped".into());
                }
            }
        }
    }

    /// Pauses when the pool has been out for [`PAUSE_AFTER`]; resumes
    /// once half of it is back.
    fn update_pause(&mut self, consumer: &BaseConsumer<Ctx>) {
        if !self.starved() {
            self.starved_since = None;
        } else if self.starved_since.is_none() {
            self.starved_since = Some(Instant::now());
        }
        let long = self
            .starved_since
            .is_some_and(|t| t.elapsed() >= PAUSE_AFTER);
        if !self.paused && long {
            self.pause(consumer);
        } else if self.paused && self.free.len() >= (self.settings.pool / 2).max(1) {
            let tpl = self.list(&self.assigned);
            match consumer.resume(&tpl) {
                Ok(()) => {
                    self.paused = false;
                    self.rewound.clear();
                    self.meters.paused.store(false, Ordering::Relaxed);
                }
                Err(e) => self.report.failure = Some(format!("kafka: resuming: {e}")),
            }
        }
    }

    fn pause(&mut self, consumer: &BaseConsumer<Ctx>) {
        if self.paused {
            return;
        }
        let tpl = self.list(&self.assigned);
        match consumer.pause(&tpl) {
            Ok(()) => {
                self.paused = true;
                self.meters.paused.store(true, Ordering::Relaxed);
                self.meters.pauses.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => self.report.failure = Some(format!("kafka: pausing: {e}")),
        }
    }

    fn list(&self, partitions: &BTreeSet<i32>) -> TopicPartitionList {
        let mut tpl = TopicPartitionList::new();
        for &p in partitions {
            tpl.add_partition(&self.settings.topic, p);
        }
        tpl
    }

    fn at_end_everywhere(&self) -> bool {
        self.open.is_none()
            && !self.assigned.is_empty()
            && self.assigned.iter().all(|p| self.at_end.contains(p))
    }

    /// Partitions are taken away: finish and commit what is out of them.
    fn revoke(&mut self, consumer: &BaseConsumer<Ctx>, partitions: BTreeSet<i32>) {
        self.drain(Some(&partitions));
        if consumer.assignment_lost() {
            // Another member may own them already: a commit would be refused.
            eprintln!("edgeguard: kafka: assignment lost; what was done since the last commit will be done again");
        } else {
            let offsets: Vec<(i32, i64)> = partitions
                .iter()
                .filter_map(|&p| self.offsets.committable(p).map(|o| (p, o)))
                .collect();
            self.commit_offsets(consumer, &offsets, CommitMode::Sync);
        }
        for p in &partitions {
            self.offsets.revoke(*p);
            self.assigned.remove(p);
            self.at_end.remove(p);
            self.rewound.remove(p);
        }
        let ps: Vec<i32> = partitions.into_iter().collect();
        self.meters.revoked(&ps);
        self.report.rebalances += 1;
        self.meters.rebalances.fetch_add(1, Ordering::Relaxed);
    }

    fn assign(&mut self, consumer: &BaseConsumer<Ctx>, partitions: BTreeSet<i32>) {
        for &p in &partitions {
            self.offsets.assign(p);
            self.assigned.insert(p);
            self.at_end.remove(&p);
        }
        let ps: Vec<i32> = partitions.iter().copied().collect();
        self.meters.assigned(&ps);
        if self.paused {
            let tpl = self.list(&partitions);
            if let Err(e) = consumer.pause(&tpl) {
                self.report.failure = Some(format!("kafka: pausing: {e}"));
            }
        }
        self.report.rebalances += 1;
        self.meters.rebalances.fetch_add(1, Ordering::Relaxed);
    }
}

/// The consumer's context: its state for the rebalance callbacks, the
/// meters for the statistics, librdkafka's logs and errors to stderr.
struct Ctx {
    state: Mutex<State>,
    topic: String,
    meters: Arc<Meters>,
    /// The coordinator's answers to asynchronous commits, (partition,
    /// offset, taken), for the loop (a separate lock: the callback runs
    /// inside `poll`, where the loop never holds `state`, but it is not
    /// worth relying on that).
    commit_answers: Mutex<Vec<(i32, i64, bool)>>,
}

impl Ctx {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn partitions(&self, tpl: &TopicPartitionList) -> BTreeSet<i32> {
        tpl.elements_for_topic(&self.topic)
            .iter()
            .map(|e| e.partition())
            .collect()
    }
}

impl ClientContext for Ctx {
    /// librdkafka filters by the configured level ([`Client`]).
    fn log(&self, _: RDKafkaLogLevel, fac: &str, message: &str) {
        eprintln!("edgeguard: kafka: {fac}: {message}");
    }

    fn error(&self, error: KafkaError, reason: &str) {
        // The end of a partition comes as an error event too.
        if error.rdkafka_error_code() != Some(RDKafkaErrorCode::PartitionEOF) {
            eprintln!("edgeguard: kafka: {error}: {reason}");
        }
    }

    fn stats(&self, stats: Statistics) {
        if let Some(t) = stats.topics.get(&self.topic) {
            for (&p, part) in &t.partitions {
                // -1: librdkafka's internal unassigned partition.
                if p >= 0 {
                    self.meters
                        .observed(p, part.hi_offset, part.committed_offset);
                }
            }
        }
    }
}

impl ConsumerContext for Ctx {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Ctx>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(tpl) => self.lock().revoke(consumer, self.partitions(tpl)),
            Rebalance::Assign(_) => {}
            Rebalance::Error(e) => eprintln!("edgeguard: kafka: rebalance: {e}"),
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Ctx>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            self.lock().assign(consumer, self.partitions(tpl));
        }
    }

    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        let mut answers = lock(&self.commit_answers);
        for e in offsets.elements_for_topic(&self.topic) {
            if let Offset::Offset(o) = e.offset() {
                answers.push((e.partition(), o, result.is_ok() && e.error().is_ok()));
            }
        }
    }
}
