//! The snapshot in force in one process: loaded at configure, refreshed
//! off the request path, read by every request with one atomic load.
//!
//! nginx runs `configure()` in the master, before it forks the workers:
//! [`Live::open`] reads and checks the file there, so a bad or missing
//! file refuses the configuration (and a reload keeps the running
//! workers). Threads do not survive `fork()`, so the refresh thread is
//! started by the first request a worker runs ([`Live::start`]; the master
//! serves none): every `refresh` seconds it looks at the file's
//! modification time and size and, when they changed, reads, parses and
//! checks the new file on its own thread and swaps it in. A request never
//! waits for a load: it loads the current snapshot's pointer
//! ([`Live::current`], arc-swap), which allocates nothing. A new file that
//! is refused leaves the previous snapshot in force and is logged.
//!
//! A snapshot older than `max_age` (its `generated` time against the
//! request's clock) is not used: fleet data that old misleads more than
//! it tells, so lookups answer "unknown" until a fresh one is published.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::{ArcSwap, Guard};

use super::key::{headers_key_of, Kind, KEY_CAP};
use super::snapshot::{Counts, Snapshot, SnapshotError};
use crate::features::{FeatureVector, Request};

/// `signals_refresh`'s default, seconds.
pub const DEFAULT_REFRESH: u64 = 60;
/// `signals_max_age`'s default, seconds: two hours, twice the window the
/// aggregator counts over.
pub const DEFAULT_MAX_AGE: u64 = 7200;

/// What the snapshot in force knows of one request: the counts of its
/// JA4 (TLS only) and of its headers key, each none when the fleet has no
/// entry for it. A request without a usable snapshot has no `Lookup` at
/// all (its signals are unknown, neither known nor unknown to the fleet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lookup {
    /// The counts of the connection's JA4.
    pub ja4: Option<Counts>,
    /// The counts of the claimed family and header order.
    pub headers: Option<Counts>,
}

impl Lookup {
    /// Looks the request's JA4 (none: not TLS) and headers key up in `s`.
    /// Allocates nothing.
    pub fn of(s: &Snapshot, ja4: Option<&[u8]>, headers_key: &[u8]) -> Lookup {
        Lookup {
            ja4: ja4.and_then(|j| s.ja4(j)).copied(),
            headers: s.get(Kind::Headers, headers_key).copied(),
        }
    }

    /// Looks up the request `req` whose features `v` were extracted from
    /// it: its JA4 (TLS only) and its headers key, built on the stack.
    /// What the gate's fleet stage and `edgeguard rules eval` both do.
    pub fn of_request(s: &Snapshot, req: &Request<'_>, v: &FeatureVector<'_>) -> Lookup {
        let mut buf = [0; KEY_CAP];
        let key = headers_key_of(v, &mut buf);
        Lookup::of(s, req.tls().map(|t| t.ja4()), key)
    }

    /// The key that answers for the request, and its counts: the JA4 when
    /// the fleet knows it (it names the TLS stack, which a client cannot
    /// change with a header), else the headers key; none when neither is
    /// known.
    pub fn answer(&self) -> Option<(Kind, &Counts)> {
        match (&self.ja4, &self.headers) {
            (Some(c), _) => Some((Kind::Ja4, c)),
            (None, Some(c)) => Some((Kind::Headers, c)),
            (None, None) => None,
        }
    }
}

/// What identifies a version of the file without reading it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    let m = std::fs::metadata(path)?;
    Ok(Stamp {
        modified: m.modified().ok(),
        len: m.len(),
    })
}

/// What one look at the file came to ([`Live::poll`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// The file is as it was.
    Unchanged,
    /// A new snapshot is in force, with this many entries.
    Loaded(usize),
    /// The new file was refused; the previous snapshot stays in force.
    Refused(String),
}

/// The snapshot a configuration's locations look keys up in.
pub struct Live {
    path: PathBuf,
    refresh: u64,
    max_age: u64,
    current: ArcSwap<Snapshot>,
    /// The file's stamp when `current` was read from it.
    stamp: Mutex<Stamp>,
    started: AtomicBool,
    loads_ok: AtomicU64,
    loads_failed: AtomicU64,
    /// Whether the thread last saw the snapshot stale (it warns once per
    /// change).
    stale: AtomicBool,
    /// Whether the last look found no file (reported once).
    missing: AtomicBool,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("path", &self.path)
            .field("refresh", &self.refresh)
            .field("max_age", &self.max_age)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// One holder is one configuration's: two are equal only when they are
/// the same (what comparing options needs).
impl PartialEq for Live {
    fn eq(&self, other: &Live) -> bool {
        std::ptr::eq(self, other)
    }
}

/// What the metrics show of a [`Live`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// Snapshots loaded (the first, at configure, included).
    pub loads_ok: u64,
    /// New files refused.
    pub loads_failed: u64,
    /// The `generated` time of the snapshot in force.
    pub generated: u64,
    /// Its entries.
    pub entries: usize,
}

impl Live {
    /// Reads the snapshot at `path`, to be refreshed every `refresh`
    /// seconds (0: never; only a reload reads it again) and used while no
    /// older than `max_age` seconds. The error names the file and field.
    pub fn open(path: &Path, refresh: u64, max_age: u64) -> Result<Live, SnapshotError> {
        let before = stamp(path).unwrap_or_default();
        let snapshot = Snapshot::load(path)?;
        Ok(Live::with(
            path,
            refresh,
            max_age,
            Arc::new(snapshot),
            before,
        ))
    }

    /// A snapshot given whole (tests'): nothing is refreshed.
    pub fn fixed(snapshot: Snapshot, max_age: u64) -> Live {
        Live::with(
            Path::new(""),
            0,
            max_age,
            Arc::new(snapshot),
            Stamp::default(),
        )
    }

    /// The same snapshot, never refreshed: replay's, whose answers must
    /// not change while it runs.
    pub fn frozen(&self) -> Live {
        self.with_settings(0, self.max_age)
    }

    /// The same file and snapshot with other settings (options given over
    /// a configuration file's): not read again.
    pub fn with_settings(&self, refresh: u64, max_age: u64) -> Live {
        let stamp = *self.stamp.lock().unwrap_or_else(|e| e.into_inner());
        Live::with(&self.path, refresh, max_age, self.snapshot(), stamp)
    }

    fn with(
        path: &Path,
        refresh: u64,
        max_age: u64,
        snapshot: Arc<Snapshot>,
        stamp: Stamp,
    ) -> Live {
        Live {
            path: path.to_owned(),
            refresh,
            max_age,
            current: ArcSwap::new(snapshot),
            stamp: Mutex::new(stamp),
            started: AtomicBool::new(false),
            loads_ok: AtomicU64::new(1),
            loads_failed: AtomicU64::new(0),
            stale: AtomicBool::new(false),
            missing: AtomicBool::new(false),
        }
    }

    /// The file it reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `signals_refresh`: seconds between looks at the file (0: none).
    pub fn refresh(&self) -> u64 {
        self.refresh
    }

    /// `signals_max_age`: the oldest snapshot used, seconds.
    pub fn max_age(&self) -> u64 {
        self.max_age
    }

    /// The snapshot in force, when it is no older than `max_age` at `now`
    /// (Unix seconds). One atomic load; allocates nothing once the
    /// calling thread has made one load (arc-swap's per-thread node).
    pub fn current(&self, now: u64) -> Option<Guard<Arc<Snapshot>>> {
        let s = self.current.load();
        self.fresh(&s, now).then_some(s)
    }

    fn fresh(&self, s: &Snapshot, now: u64) -> bool {
        s.generated().saturating_add(self.max_age) >= now
    }

    /// The snapshot in force, stale or not.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Why the snapshot in force is not used at `now`, if it is not.
    pub fn stale_warning(&self, now: u64) -> Option<String> {
        let s = self.current.load();
        (!self.fresh(&s, now)).then(|| {
            format!(
                "signals: {}: generated {} s ago, older than signals_max_age ({} s): \
                 not used (fingerprint variables empty, signal conditions unknown) \
                 until a fresher snapshot is published",
                self.path.display(),
                now.saturating_sub(s.generated()),
                self.max_age
            )
        })
    }

    /// Loads, counts and status.
    pub fn status(&self) -> Status {
        let s = self.current.load();
        Status {
            loads_ok: self.loads_ok.load(Ordering::Relaxed),
            loads_failed: self.loads_failed.load(Ordering::Relaxed),
            generated: s.generated(),
            entries: s.len(),
        }
    }

    /// Looks at the file once: when its modification time or size
    /// changed, reads and checks it and swaps it in (or keeps the
    /// snapshot in force if it is refused). Runs on the refresh thread;
    /// callable from any thread.
    pub fn poll(&self) -> Poll {
        let Ok(now) = stamp(&self.path) else {
            // A file removed (or being replaced) keeps what was loaded; it
            // is tried again at the next look, and reported once until it
            // is back.
            if self.missing.swap(true, Ordering::Relaxed) {
                return Poll::Unchanged;
            }
            return self.refused(format!(
                "{}: cannot be read; the snapshot in force stays",
                self.path.display()
            ));
        };
        self.missing.store(false, Ordering::Relaxed);
        {
            let seen = self.stamp.lock().unwrap_or_else(|e| e.into_inner());
            if *seen == now {
                return Poll::Unchanged;
            }
        }
        let result = Snapshot::load(&self.path);
        // What was read is this stamp's (a file replaced meanwhile shows a
        // new stamp at the next look).
        *self.stamp.lock().unwrap_or_else(|e| e.into_inner()) = now;
        match result {
            Ok(s) => {
                let n = s.len();
                self.current.store(Arc::new(s));
                self.loads_ok.fetch_add(1, Ordering::Relaxed);
                Poll::Loaded(n)
            }
            Err(e) => self.refused(format!("{e}; the snapshot in force stays")),
        }
    }

    fn refused(&self, m: String) -> Poll {
        self.loads_failed.fetch_add(1, Ordering::Relaxed);
        Poll::Refused(m)
    }

    /// Starts the refresh thread of this process, once (no thread when
    /// `refresh` is 0). Called in each nginx worker (`init_worker()`,
    /// through `edgeguard_config_start_signals`) and, failing that, by its
    /// first request: never in the master, which forks the workers, as a
    /// thread started there would not exist in them. Its first look at the
    /// file is at once. The thread holds the snapshot weakly: it
    /// ends at its next look once the configuration is released.
    pub fn start(self: &Arc<Self>) {
        if self.refresh == 0
            || self.started.load(Ordering::Relaxed)
            || self.started.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let weak = Arc::downgrade(self);
        let every = Duration::from_secs(self.refresh);
        let spawned = std::thread::Builder::new()
            .name("edgeguard-signals".into())
            .spawn(move || refresh_loop(weak, every));
        if let Err(e) = spawned {
            log(
                "error",
                &format!("signals: cannot start the refresh thread: {e}"),
            );
        }
    }
}

fn refresh_loop(weak: Weak<Live>, every: Duration) {
    // A first look at once: the file may have changed since the master
    // read it, before it forked this worker.
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            std::thread::sleep(every);
        }
        let Some(live) = weak.upgrade() else { return };
        match live.poll() {
            Poll::Unchanged => {}
            Poll::Loaded(n) => log(
                "notice",
                &format!("signals: {}: {n} entries loaded", live.path.display()),
            ),
            Poll::Refused(m) => log("error", &format!("signals: {m}")),
        }
        let now = unix_now();
        match live.stale_warning(now) {
            Some(w) if !live.stale.swap(true, Ordering::Relaxed) => log("warn", &w),
            None => live.stale.store(false, Ordering::Relaxed),
            Some(_) => {}
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes a line to standard error, which nginx points at its error log
/// in the workers, in the error log's shape (`2026/12/04 16:40:00 [warn]
/// 1234#0: edgeguard: ...`): the refresh thread cannot call nginx's own
/// logger, which is not thread-safe.
fn log(level: &str, message: &str) {
    let secs = unix_now();
    let (y, mo, d) = civil(secs / 86_400);
    let t = secs % 86_400;
    eprintln!(
        "{y:04}/{mo:02}/{d:02} {:02}:{:02}:{:02} [{level}] {}#0: edgeguard: {message}",
        t / 3600,
        t / 60 % 60,
        t % 60,
        std::process::id()
    );
}

/// The (year, month, day) of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil(days: u64) -> (i64, u64, u64) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe as i64 + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JA4: &str = "t13d1516h2_8daaf6152771_02713d6af862";

    fn write(path: &Path, generated: u64, requests: u64) {
        let mut s = Snapshot::new(generated, 3600);
        s.insert(
            Kind::Ja4,
            JA4,
            Counts {
                requests,
                ..Default::default()
            },
        )
        .unwrap();
        let mut out = Vec::new();
        s.write(&mut out).unwrap();
        std::fs::write(path, out).unwrap();
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("edgeguard-live-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_file_is_swapped_in_and_a_bad_one_keeps_the_old() {
        let d = dir("swap");
        let p = d.join("s.json");
        write(&p, 1000, 5);
        let live = Live::open(&p, 1, 7200).unwrap();
        let req = |l: &Live| {
            l.current(1000)
                .unwrap()
                .ja4(JA4.as_bytes())
                .unwrap()
                .requests
        };
        assert_eq!(req(&live), 5);
        assert_eq!(live.poll(), Poll::Unchanged);
        // A different size: seen without waiting for the clock to tick.
        write(&p, 1000, 123);
        assert_eq!(live.poll(), Poll::Loaded(1));
        assert_eq!(req(&live), 123);
        std::fs::write(&p, b"{\"format\":\"edgeguard-signals\",\"version\":9}").unwrap();
        match live.poll() {
            Poll::Refused(m) => assert!(m.contains("s.json"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(req(&live), 123);
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(live.poll(), Poll::Refused(_)));
        assert_eq!(
            live.poll(),
            Poll::Unchanged,
            "a missing file is reported once"
        );
        assert_eq!(req(&live), 123);
        let st = live.status();
        assert_eq!((st.loads_ok, st.loads_failed, st.entries), (2, 2, 1));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_stale_snapshot_is_not_used() {
        let mut s = Snapshot::new(1000, 3600);
        s.insert(
            Kind::Ja4,
            JA4,
            Counts {
                requests: 1,
                ..Default::default()
            },
        )
        .unwrap();
        let live = Live::fixed(s, 60);
        assert!(live.current(1060).is_some());
        assert!(live.stale_warning(1060).is_none());
        assert!(live.current(1061).is_none());
        let w = live.stale_warning(1061).unwrap();
        assert!(w.contains("61 s ago"), "{w}");
    }

    #[test]
    fn a_refused_file_at_open_names_file_and_field() {
        let d = dir("open");
        let p = d.join("bad.json");
        std::fs::write(
            &p,
            br#"{"format":"edgeguard-signals","version":1,"generated":1,"window":0,"entries":[]}"#,
        )
        .unwrap();
        let e = Live::open(&p, 60, 60).unwrap_err().0;
        assert!(e.contains("bad.json: window:"), "{e}");
        assert!(Live::open(&d.join("none.json"), 60, 60).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_thread_picks_a_new_file_up_and_ends_with_the_configuration() {
        let d = dir("thread");
        let p = d.join("s.json");
        write(&p, 1000, 5);
        let live = Arc::new(Live::open(&p, 1, u64::MAX / 2).unwrap());
        live.start();
        live.start();
        write(&p, 1000, 77);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while live
            .current(1000)
            .unwrap()
            .ja4(JA4.as_bytes())
            .unwrap()
            .requests
            != 77
        {
            assert!(std::time::Instant::now() < until, "not picked up");
            std::thread::sleep(Duration::from_millis(50));
        }
        let weak = Arc::downgrade(&live);
        drop(live);
        assert!(weak.upgrade().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_426), (2025, 12, 4));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
