//! What a Kafka consumer exposes while it runs: counters and gauges in the
//! Prometheus text format edgeguard's nginx metrics use (`# HELP`, `# TYPE`,
//! then the series; integers as `%d`), served over HTTP for a scraper, and
//! the progress line.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::metrics::{labels_text, number};
use crate::outcome::Outcome;

const ACTIONS: usize = Outcome::ALL.len();

/// Where a partition stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Position {
    /// The offset committed (by this consumer, or found by librdkafka).
    pub(crate) committed: Option<i64>,
    /// The partition's high watermark: the offset its next message gets.
    pub(crate) high: Option<i64>,
}

impl Position {
    /// Messages not yet done: the high watermark past the commit.
    pub(crate) fn lag(&self) -> Option<i64> {
        match (self.high, self.committed) {
            (Some(h), Some(c)) => Some((h - c).max(0)),
            // Nothing committed yet: every message is still to do.
            (Some(h), None) => Some(h.max(0)),
            _ => None,
        }
    }
}

/// The consumer's counters and gauges. Relaxed atomics: each is a number
/// on its own, read for display.
#[derive(Debug)]
pub(crate) struct Meters {
    topic: String,
    pub(crate) messages: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) invalid: AtomicU64,
    pub(crate) dead_letters: AtomicU64,
    pub(crate) results: AtomicU64,
    pub(crate) truncated: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) actions: [AtomicU64; ACTIONS],
    pub(crate) commits: AtomicU64,
    pub(crate) commit_failures: AtomicU64,
    pub(crate) rebalances: AtomicU64,
    pub(crate) pauses: AtomicU64,
    pub(crate) rewinds: AtomicU64,
    pub(crate) paused: AtomicBool,
    pub(crate) in_flight: AtomicU64,
    /// The assigned partitions.
    partitions: Mutex<BTreeMap<i32, Position>>,
    /// The topic's partition count and the group's lag over all of them
    /// ([`super::lag`]), once known.
    group: Mutex<Option<(usize, i64)>>,
    /// When the first message came, and when a batch was last written:
    /// the rate of the work itself, without joining the group or leaving it.
    span: Mutex<(Option<Instant>, Option<Instant>)>,
}

impl Meters {
    pub(crate) fn new(topic: &str) -> Meters {
        Meters {
            topic: topic.to_owned(),
            messages: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            invalid: AtomicU64::new(0),
            dead_letters: AtomicU64::new(0),
            results: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            actions: std::array::from_fn(|_| AtomicU64::new(0)),
            commits: AtomicU64::new(0),
            commit_failures: AtomicU64::new(0),
            rebalances: AtomicU64::new(0),
            pauses: AtomicU64::new(0),
            rewinds: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            in_flight: AtomicU64::new(0),
            partitions: Mutex::new(BTreeMap::new()),
            group: Mutex::new(None),
            span: Mutex::new((None, None)),
        }
    }

    fn span(&self) -> std::sync::MutexGuard<'_, (Option<Instant>, Option<Instant>)> {
        self.span.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first message came.
    pub(crate) fn first_message(&self) {
        self.span().0.get_or_insert_with(Instant::now);
    }

    /// A batch was written.
    pub(crate) fn written(&self) {
        self.span().1 = Some(Instant::now());
    }

    /// From the first message to the last batch written.
    pub(crate) fn working(&self) -> Duration {
        match *self.span() {
            (Some(first), Some(last)) => last.saturating_duration_since(first),
            _ => Duration::ZERO,
        }
    }

    fn positions(&self) -> std::sync::MutexGuard<'_, BTreeMap<i32, Position>> {
        // A panic elsewhere never leaves the map half-updated: every
        // update is one insert or field store.
        self.partitions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Partitions were assigned.
    pub(crate) fn assigned(&self, partitions: &[i32]) {
        let mut map = self.positions();
        for &p in partitions {
            map.entry(p).or_default();
        }
    }

    /// Partitions were revoked.
    pub(crate) fn revoked(&self, partitions: &[i32]) {
        let mut map = self.positions();
        for p in partitions {
            map.remove(p);
        }
    }

    /// This consumer committed `offset` for `partition`.
    pub(crate) fn committed(&self, partition: i32, offset: i64) {
        if let Some(pos) = self.positions().get_mut(&partition) {
            pos.committed = Some(offset);
        }
    }

    /// librdkafka's view of an assigned partition (its statistics): the
    /// high watermark, and the committed offset found at assignment.
    pub(crate) fn observed(&self, partition: i32, high: i64, committed: i64) {
        if let Some(pos) = self.positions().get_mut(&partition) {
            if high >= 0 {
                pos.high = Some(high);
            }
            if committed >= 0 && pos.committed.is_none_or(|c| c < committed) {
                pos.committed = Some(committed);
            }
        }
    }

    /// The group's lag over the topic's `partitions`, whoever owns them.
    pub(crate) fn group_observed(&self, partitions: usize, lag: i64) {
        *self.group.lock().unwrap_or_else(|e| e.into_inner()) = Some((partitions, lag));
    }

    /// The assigned partitions and where they stand.
    pub(crate) fn partitions(&self) -> Vec<(i32, Position)> {
        self.positions().iter().map(|(&p, &pos)| (p, pos)).collect()
    }

    /// The total lag of the assigned partitions whose high watermark is known.
    pub(crate) fn lag(&self) -> Option<i64> {
        self.positions()
            .values()
            .filter_map(Position::lag)
            .fold(None, |acc, l| Some(acc.unwrap_or(0) + l))
    }

    /// Counts a worked batch.
    pub(crate) fn worked(&self, counts: &super::batch::Counts) {
        self.requests.fetch_add(counts.requests, Ordering::Relaxed);
        self.invalid.fetch_add(counts.invalid, Ordering::Relaxed);
        for (a, &n) in self.actions.iter().zip(&counts.actions) {
            a.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The exposition text.
    pub(crate) fn text(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = self.write_text(&mut s);
        s
    }

    fn write_text(&self, s: &mut String) -> fmt::Result {
        let topic = labels_text(&[("topic", &self.topic)]);
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        let counters: [(&str, &str, f64); 13] = [
            (
                "edgeguard_replay_messages_total",
                "Kafka messages consumed.",
                get(&self.messages),
            ),
            (
                "edgeguard_replay_bytes_total",
                "Bytes of message payload consumed.",
                get(&self.bytes),
            ),
            (
                "edgeguard_replay_requests_total",
                "Requests scored.",
                get(&self.requests),
            ),
            (
                "edgeguard_replay_invalid_total",
                "Messages that are not request lines (not JSON, not a request, blank, too long).",
                get(&self.invalid),
            ),
            (
                "edgeguard_replay_dead_letters_total",
                "Invalid messages written to the dead-letter topic or file.",
                get(&self.dead_letters),
            ),
            (
                "edgeguard_replay_results_total",
                "Results delivered to the results topic.",
                get(&self.results),
            ),
            (
                "edgeguard_replay_dead_letters_truncated_total",
                "Dead letters cut to fit the producer's message.max.bytes.",
                get(&self.truncated),
            ),
            (
                "edgeguard_replay_refused_total",
                "Results and dead letters Kafka refused for what they are (too large): skipped.",
                get(&self.refused),
            ),
            (
                "edgeguard_replay_commits_total",
                "Offset commits sent.",
                get(&self.commits),
            ),
            (
                "edgeguard_replay_commit_failures_total",
                "Offset commits the group coordinator refused.",
                get(&self.commit_failures),
            ),
            (
                "edgeguard_replay_rebalances_total",
                "Partition assignments and revocations.",
                get(&self.rebalances),
            ),
            (
                "edgeguard_replay_pauses_total",
                "Times the partitions were paused because the writer fell behind.",
                get(&self.pauses),
            ),
            (
                "edgeguard_replay_refetches_total",
                "Messages that came with no room for them: their partition was sought back to them.",
                get(&self.rewinds),
            ),
        ];
        for (name, help, v) in counters {
            family(s, name, "counter", help)?;
            series(s, name, &topic, v)?;
        }
        let name = "edgeguard_replay_decisions_total";
        family(
            s,
            name,
            "counter",
            "Decisions of the (first) configuration, by action.",
        )?;
        for a in Outcome::of_gate() {
            let labels = labels_text(&[("topic", &self.topic), ("action", a.as_str())]);
            series(s, name, &labels, get(&self.actions[a.index()]))?;
        }
        let gauges: [(&str, &str, f64); 3] = [
            (
                "edgeguard_replay_paused",
                "1 while the partitions are paused for the writer.",
                f64::from(u8::from(self.paused.load(Ordering::Relaxed))),
            ),
            (
                "edgeguard_replay_batches_in_flight",
                "Batches handed to the workers and not yet written.",
                get(&self.in_flight),
            ),
            (
                "edgeguard_replay_partitions",
                "Partitions assigned to this consumer.",
                self.positions().len() as f64,
            ),
        ];
        for (name, help, v) in gauges {
            family(s, name, "gauge", help)?;
            series(s, name, &topic, v)?;
        }
        let group = *self.group.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((partitions, lag)) = group {
            let gauges: [(&str, &str, f64); 2] = [
                (
                    "edgeguard_replay_topic_partitions",
                    "Partitions of the topic, owned by any member or none.",
                    partitions as f64,
                ),
                (
                    "edgeguard_replay_group_lag",
                    "Messages of the topic past the group's committed offsets, all partitions, owned or not.",
                    lag as f64,
                ),
            ];
            for (name, help, v) in gauges {
                family(s, name, "gauge", help)?;
                series(s, name, &topic, v)?;
            }
        }
        let parts = self.partitions();
        type Field = fn(&Position) -> Option<i64>;
        let per_partition: [(&str, &str, Field); 3] = [
            (
                "edgeguard_replay_committed_offset",
                "The partition's committed offset: every message before it is done.",
                |p| p.committed,
            ),
            (
                "edgeguard_replay_high_watermark",
                "The partition's high watermark (the offset of its next message).",
                |p| p.high,
            ),
            (
                "edgeguard_replay_lag",
                "Messages of the partition not yet done: high watermark minus committed offset.",
                Position::lag,
            ),
        ];
        for (name, help, field) in per_partition {
            family(s, name, "gauge", help)?;
            for (p, pos) in &parts {
                if let Some(v) = field(pos) {
                    let p = p.to_string();
                    let labels = labels_text(&[("topic", &self.topic), ("partition", &p)]);
                    series(s, name, &labels, v as f64)?;
                }
            }
        }
        Ok(())
    }
}

fn family(s: &mut String, name: &str, kind: &str, help: &str) -> fmt::Result {
    write!(s, "# HELP {name} {help}\n# TYPE {name} {kind}\n")
}

fn series(s: &mut String, name: &str, labels: &str, v: f64) -> fmt::Result {
    write!(s, "{name}{{{labels}}} ")?;
    number(s, v)?;
    s.push('\n');
    Ok(())
}

/// Serves `GET /metrics` on `addr` from a thread until `stop` is set.
/// Returns the address bound (port 0 picks one).
pub(crate) fn serve(
    addr: SocketAddr,
    meters: Arc<Meters>,
    stop: Arc<AtomicBool>,
) -> io::Result<(SocketAddr, thread::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    // Polled, so that the thread sees `stop` without a connection.
    listener.set_nonblocking(true)?;
    let handle = thread::Builder::new()
        .name("edgeguard-metrics".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        // One scrape's failure (a client gone) is its own.
                        let _ = answer(conn, &meters);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(50));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(50)),
                }
            }
        })?;
    Ok((bound, handle))
}

/// One HTTP/1.0-style exchange: reads the request head, answers, closes.
fn answer(mut conn: TcpStream, meters: &Meters) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    let (status, body, kind) = match (method, path) {
        (b"GET", b"/metrics") => ("200 OK", meters.text(), "text/plain; version=0.0.4"),
        (b"GET", _) => (
            "404 Not Found",
            "not found: GET /metrics\n".to_owned(),
            "text/plain",
        ),
        _ => (
            "405 Method Not Allowed",
            "GET only\n".to_owned(),
            "text/plain",
        ),
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    conn.flush()
}

/// The progress line on a terminal: messages, rate, lag, decisions.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
    last: Instant,
}

impl Progress {
    pub(crate) fn new(wanted: bool) -> Progress {
        use std::io::IsTerminal;
        let bar = (wanted && io::stderr().is_terminal()).then(|| {
            let target = indicatif::ProgressDrawTarget::stderr_with_hz(4);
            let bar = indicatif::ProgressBar::with_draw_target(None, target);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            bar
        });
        let now = Instant::now();
        Progress {
            bar: bar.filter(|b| !b.is_hidden()),
            started: now,
            last: now,
        }
    }

    /// Redraws at most every 250 ms.
    pub(crate) fn tick(&mut self, meters: &Meters) {
        let Some(bar) = &self.bar else { return };
        if self.last.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last = Instant::now();
        bar.set_message(line(meters, self.started.elapsed()));
        bar.tick();
    }

    pub(crate) fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `120000 messages  40000 msg/s  lag 5210 (4 partitions)  pass 118000 block 2000  paused`
pub(crate) fn line(meters: &Meters, elapsed: Duration) -> String {
    let messages = meters.messages.load(Ordering::Relaxed);
    let rate = messages as f64 / elapsed.as_secs_f64().max(1e-9);
    let mut s = format!("{messages} messages  {rate:.0} msg/s");
    let parts = meters.partitions();
    match meters.lag() {
        Some(lag) => s += &format!("  lag {lag} ({} partitions)", parts.len()),
        None => s += &format!("  ({} partitions)", parts.len()),
    }
    for (a, n) in Outcome::ALL.iter().zip(&meters.actions) {
        let n = n.load(Ordering::Relaxed);
        if n > 0 {
            s += &format!("  {} {n}", a.as_str());
        }
    }
    let invalid = meters.invalid.load(Ordering::Relaxed);
    if invalid > 0 {
        s += &format!("  invalid {invalid}");
    }
    if meters.paused.load(Ordering::Relaxed) {
        s += "  paused";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_high_watermark_past_the_commit() {
        let m = Meters::new("requests");
        m.assigned(&[0, 1, 2]);
        assert_eq!(m.lag(), None, "no watermark known yet");
        m.observed(0, 100, -1001);
        m.observed(1, 50, 20);
        m.committed(1, 30);
        m.observed(1, 60, 20);
        assert_eq!(
            m.partitions()[1].1,
            Position {
                committed: Some(30),
                high: Some(60)
            }
        );
        assert_eq!(m.lag(), Some(100 + 30));
        m.revoked(&[0]);
        assert_eq!(m.lag(), Some(30));
        m.observed(7, 1, 1);
        assert_eq!(m.partitions().len(), 2, "only assigned partitions are kept");
    }

    #[test]
    fn exposition_and_progress_line() {
        let m = Meters::new("req\"s");
        m.assigned(&[3]);
        m.observed(3, 42, 40);
        m.messages.store(1234, Ordering::Relaxed);
        m.actions[Outcome::Block.index()].store(7, Ordering::Relaxed);
        m.paused.store(true, Ordering::Relaxed);
        let text = m.text();
        assert!(
            text.contains(
                "# HELP edgeguard_replay_messages_total Kafka messages consumed.\n\
             # TYPE edgeguard_replay_messages_total counter\n\
             edgeguard_replay_messages_total{topic=\"req\\\"s\"} 1234\n"
            ),
            "{text}"
        );
        assert!(text
            .contains("edgeguard_replay_decisions_total{topic=\"req\\\"s\",action=\"block\"} 7\n"));
        assert!(
            text.contains("edgeguard_replay_lag{topic=\"req\\\"s\",partition=\"3\"} 2\n"),
            "{text}"
        );
        assert!(text.contains(
            "# TYPE edgeguard_replay_paused gauge\nedgeguard_replay_paused{topic=\"req\\\"s\"} 1\n"
        ));
        // Every sample line is `name{labels} value`.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = l.rsplit_once(' ').unwrap();
            assert!(
                series.starts_with("edgeguard_replay_") && series.ends_with('}'),
                "{l}"
            );
            value.parse::<f64>().unwrap();
        }
        assert_eq!(
            line(&m, Duration::from_secs(2)),
            "1234 messages  617 msg/s  lag 2 (1 partitions)  block 7  paused"
        );
        // The group's lag is published once known, and then even while
        // this member owns nothing (a rebalance).
        assert!(!text.contains("edgeguard_replay_group_lag"), "{text}");
        m.revoked(&[3]);
        m.group_observed(4, 16849);
        let text = m.text();
        assert!(!text.contains("edgeguard_replay_lag{"), "{text}");
        assert!(text.contains("edgeguard_replay_partitions{topic=\"req\\\"s\"} 0\n"));
        assert!(text.contains("edgeguard_replay_topic_partitions{topic=\"req\\\"s\"} 4\n"));
        assert!(
            text.contains("# TYPE edgeguard_replay_group_lag gauge\nedgeguard_replay_group_lag{topic=\"req\\\"s\"} 16849\n"),
            "{text}"
        );
    }

    #[test]
    fn serves_metrics_over_http() {
        let m = Arc::new(Meters::new("t"));
        m.requests.store(5, Ordering::Relaxed);
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, handle) = serve("127.0.0.1:0".parse().unwrap(), m, Arc::clone(&stop)).unwrap();
        let get = |req: &str| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            c.read_to_string(&mut out).unwrap();
            out
        };
        let ok = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Type: text/plain; version=0.0.4\r\n"));
        assert!(ok.contains("\nedgeguard_replay_requests_total{topic=\"t\"} 5\n"));
        let (head, body) = ok.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(get("GET /other HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get("POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        stop.store(true, Ordering::Relaxed);
        handle.join().unwrap();
    }
}
