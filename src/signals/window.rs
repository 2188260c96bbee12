//! The sliding window: per fingerprint key, the last `window` seconds of
//! counts and sketches in `buckets` cells of equal length, slid by event
//! time (the requests' own times), never by the clock.
//!
//! ```text
//!  key ──► [cell b-59] [cell b-58] ... [cell b]      one cell per bucket
//!           requests, flagged, challenges,           the key was seen in;
//!           solved, cleared; sketches of /24s,       a key seen in one
//!           /48s and User-Agents                     minute holds one cell
//! ```
//!
//! The newest bucket any request fell in is the window's end; a cell older
//! than `buckets` buckets before it has expired and is dropped the next time
//! its key is touched or a snapshot is taken (and a key with no cell left
//! leaves). A request older than the window is late: counted, not added.
//!
//! Memory is bounded: at most `max_keys` keys (a request of a new key
//! beyond them is counted as untracked), each at most `buckets` cells. A
//! cell is 72 bytes, plus about 200 for each sketch it uses while small
//! (docs/signals.md has the measurement); a sketch that turns dense
//! (thousands of distinct items in one bucket) takes 3.3 KiB.

use std::collections::HashMap;
use std::mem::size_of;

use serde::{Deserialize, Serialize};

use super::key::Kind;
use super::sketch::Distinct;
use super::snapshot::{Counts, Snapshot};

/// How the window is cut and what it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Seconds the counts cover (3600).
    pub window: u64,
    /// Cells the window is cut into (60: a minute each).
    pub buckets: u64,
    /// Keys with fewer requests in the window are left out of snapshots.
    pub min_requests: u64,
    /// The most keys tracked at once.
    pub max_keys: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            window: 3600,
            buckets: 60,
            min_requests: 1,
            max_keys: 1_000_000,
        }
    }
}

impl Settings {
    /// Why these settings cannot make a window, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.window == 0 {
            return Err("the window must be at least 1 second".into());
        }
        if self.buckets == 0 || self.buckets > 3600 {
            return Err(format!("{} buckets: between 1 and 3600", self.buckets));
        }
        if !self.window.is_multiple_of(self.buckets) {
            return Err(format!(
                "a window of {} s does not cut into {} buckets of whole seconds",
                self.window, self.buckets
            ));
        }
        if self.max_keys == 0 {
            return Err("max keys must be at least 1".into());
        }
        Ok(())
    }

    /// Seconds per bucket.
    pub fn bucket_secs(&self) -> u64 {
        self.window / self.buckets
    }
}

/// Where observations go: a [`Window`] (file mode, the fleet's second
/// stage), or the first stage's [`super::partials::Partials`].
pub trait Fold {
    /// Adds one request of `key` of `kind`.
    fn fold(&mut self, kind: Kind, key: &[u8], o: &Obs<'_>);
}

impl Fold for Window {
    fn fold(&mut self, kind: Kind, key: &[u8], o: &Obs<'_>) {
        self.add(kind, key, o);
    }
}

/// A client address's prefix: IPv4 /24 or IPv6 /48.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// The first three bytes of an IPv4 address.
    V4([u8; 3]),
    /// The first six bytes of an IPv6 address.
    V6([u8; 6]),
}

impl Prefix {
    /// The prefix of `addr` (an IPv4-mapped IPv6 address is IPv4).
    pub fn of(addr: std::net::IpAddr) -> Prefix {
        match addr.to_canonical() {
            std::net::IpAddr::V4(a) => {
                let o = a.octets();
                Prefix::V4([o[0], o[1], o[2]])
            }
            std::net::IpAddr::V6(a) => {
                let o = a.octets();
                Prefix::V6([o[0], o[1], o[2], o[3], o[4], o[5]])
            }
        }
    }
}

/// What one request adds to a key.
#[derive(Clone, Copy, Debug)]
pub struct Obs<'a> {
    /// Its time, Unix seconds.
    pub time: u64,
    /// Its client's prefix, if the client address parsed.
    pub prefix: Option<Prefix>,
    /// Its User-Agent (empty: none).
    pub user_agent: &'a [u8],
    /// A model flagged it.
    pub flagged: bool,
    /// It was served a challenge (a page or a problem document).
    pub challenge: bool,
    /// It solved a challenge (or redeemed a no-JavaScript wait).
    pub solved: bool,
    /// It carried a valid clearance.
    pub cleared: bool,
}

/// The plain counts of a cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Requests.
    pub requests: u64,
    /// Flagged by a model.
    pub flagged: u64,
    /// Challenges served.
    pub challenges: u64,
    /// Challenges solved.
    pub solved: u64,
    /// Requests with a valid clearance.
    pub cleared: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.requests += o.requests;
        self.flagged += o.flagged;
        self.challenges += o.challenges;
        self.solved += o.solved;
        self.cleared += o.cleared;
    }
}

/// One key's counts over one bucket: what a window holds per key and
/// minute, and what the fleet's first stage sends the second (a partial).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cell {
    /// The bucket: the start time divided by the bucket's seconds.
    pub bucket: u64,
    /// The plain counts.
    pub tally: Tally,
    /// Distinct IPv4 /24 prefixes.
    pub p24: Distinct,
    /// Distinct IPv6 /48 prefixes.
    pub p48: Distinct,
    /// Distinct User-Agent values.
    pub user_agents: Distinct,
}

impl Cell {
    /// An empty cell of `bucket`.
    pub fn new(bucket: u64) -> Cell {
        Cell {
            bucket,
            ..Cell::default()
        }
    }

    /// Adds one request.
    pub fn add(&mut self, o: &Obs<'_>) {
        self.tally.add(&Tally {
            requests: 1,
            flagged: u64::from(o.flagged),
            challenges: u64::from(o.challenge),
            solved: u64::from(o.solved),
            cleared: u64::from(o.cleared),
        });
        match o.prefix {
            Some(Prefix::V4(p)) => self.p24.insert(&p),
            Some(Prefix::V6(p)) => self.p48.insert(&p),
            None => {}
        }
        self.user_agents.insert(o.user_agent);
    }

    /// Adds what `other` (of the same bucket) holds.
    pub fn merge(&mut self, other: &Cell) -> Result<(), String> {
        self.tally.add(&other.tally);
        self.p24.merge(&other.p24)?;
        self.p48.merge(&other.p48)?;
        self.user_agents.merge(&other.user_agents)
    }
}

/// One key's cells, oldest first. Grown one cell at a time (most keys
/// hold one or two: a doubling vector would hold room for twice that).
#[derive(Debug, Default)]
struct Cells(Vec<Cell>);

impl Cells {
    /// The cell of `bucket`, made if missing, in order.
    fn at(&mut self, bucket: u64) -> &mut Cell {
        let i = match self.0.iter().rposition(|c| c.bucket <= bucket) {
            Some(i) if self.0[i].bucket == bucket => i,
            Some(i) => i + 1,
            None => 0,
        };
        if self.0.get(i).is_none_or(|c| c.bucket != bucket) {
            self.0.reserve_exact(1);
            self.0.insert(i, Cell::new(bucket));
        }
        &mut self.0[i]
    }

    /// Drops cells before bucket `first`; how many.
    fn expire(&mut self, first: u64) -> usize {
        let n = self.0.iter().take_while(|c| c.bucket < first).count();
        self.0.drain(..n);
        n
    }
}

/// What a window has refused or dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Requests older than the window when they came.
    pub late: u64,
    /// Requests of new keys while `max_keys` keys were tracked.
    pub untracked: u64,
    /// Partials that did not merge (another sketch precision).
    pub bad_partials: u64,
}

/// Per key, the cells of the last window.
#[derive(Debug)]
pub struct Window {
    settings: Settings,
    maps: [HashMap<Box<[u8]>, Cells>; 2],
    /// The newest bucket a request fell in.
    newest: Option<u64>,
    cells: usize,
    dropped: Dropped,
}

impl Window {
    /// An empty window.
    pub fn new(settings: Settings) -> Result<Window, String> {
        settings.check()?;
        Ok(Window {
            settings,
            maps: Default::default(),
            newest: None,
            cells: 0,
            dropped: Dropped::default(),
        })
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The first bucket still in the window.
    fn first(&self) -> u64 {
        self.newest
            .map_or(0, |n| (n + 1).saturating_sub(self.settings.buckets))
    }

    /// The bucket of Unix time `t`, and whether it is still in the window
    /// (moving the window's end forward if `t` is past it).
    fn bucket(&mut self, t: u64) -> Option<u64> {
        let b = t / self.settings.bucket_secs();
        if self.newest.is_none_or(|n| b > n) {
            self.newest = Some(b);
        }
        if b < self.first() {
            self.dropped.late += 1;
            return None;
        }
        Some(b)
    }

    /// The cells of `key`, made if new and there is room; expired ones
    /// dropped.
    fn cells_of(&mut self, kind: Kind, key: &[u8]) -> Option<&mut Cells> {
        let first = self.first();
        let room = self.keys() < self.settings.max_keys;
        let map = &mut self.maps[kind as usize];
        // Looked up first so that a known key costs no allocation.
        if !map.contains_key(key) {
            if !room {
                self.dropped.untracked += 1;
                return None;
            }
            map.insert(key.into(), Cells::default());
        }
        let cells = map.get_mut(key)?;
        self.cells -= cells.expire(first);
        Some(cells)
    }

    /// Adds one request of `key` of `kind`.
    pub fn add(&mut self, kind: Kind, key: &[u8], o: &Obs<'_>) {
        let Some(b) = self.bucket(o.time) else { return };
        let Some(cells) = self.cells_of(kind, key) else {
            return;
        };
        let n = cells.0.len();
        cells.at(b).add(o);
        let grown = cells.0.len() - n;
        self.cells += grown;
    }

    /// Adds a partial cell of `key` of `kind` (from the fleet's first
    /// stage). A cell older than the window is late.
    pub fn merge(&mut self, kind: Kind, key: &[u8], cell: &Cell) {
        let Some(b) = self.bucket(cell.bucket * self.settings.bucket_secs()) else {
            return;
        };
        let Some(cells) = self.cells_of(kind, key) else {
            return;
        };
        let n = cells.0.len();
        let ok = cells.at(b).merge(cell).is_ok();
        let grown = cells.0.len() - n;
        self.cells += grown;
        if !ok {
            self.dropped.bad_partials += 1;
        }
    }

    /// Drops every expired cell, and the keys left without one; returns
    /// those keys.
    pub fn expire(&mut self) -> Vec<(Kind, Box<[u8]>)> {
        let first = self.first();
        let mut gone = Vec::new();
        for kind in Kind::ALL {
            let map = &mut self.maps[kind as usize];
            map.retain(|key, cells| {
                self.cells -= cells.expire(first);
                let keep = !cells.0.is_empty();
                if !keep {
                    gone.push((kind, key.clone()));
                }
                keep
            });
        }
        gone
    }

    /// The counts of `key` of `kind` over the window (after [`Window::expire`]);
    /// None if the window holds none.
    pub fn counts(&self, kind: Kind, key: &[u8]) -> Option<Counts> {
        let cells = self.maps[kind as usize].get(key)?;
        (!cells.0.is_empty()).then(|| summarize(&cells.0))
    }

    /// Every key and its counts, expired cells dropped first.
    pub fn entries(&mut self) -> impl Iterator<Item = (Kind, &[u8], Counts)> + '_ {
        self.expire();
        let [ja4, headers] = &self.maps;
        entries_of(Kind::Ja4, ja4).chain(entries_of(Kind::Headers, headers))
    }

    /// The snapshot of the window: every key with at least `min_requests`
    /// requests. Keys a snapshot refuses (not well-formed) are skipped and
    /// counted in the second value.
    pub fn snapshot(&mut self) -> (Snapshot, u64) {
        let (generated, window, min) =
            (self.end(), self.settings.window, self.settings.min_requests);
        let mut s = Snapshot::new(generated, window);
        let mut refused = 0;
        for (kind, key, counts) in self.entries() {
            if counts.requests < min {
                continue;
            }
            let ok = std::str::from_utf8(key)
                .map_err(|e| e.to_string())
                .and_then(|k| s.insert(kind, k, counts));
            refused += u64::from(ok.is_err());
        }
        (s, refused)
    }

    /// The end of the window, Unix seconds: the end of its newest bucket
    /// (0 before any request).
    pub fn end(&self) -> u64 {
        self.newest
            .map_or(0, |n| (n + 1) * self.settings.bucket_secs())
    }

    /// Keys tracked.
    pub fn keys(&self) -> usize {
        self.maps.iter().map(HashMap::len).sum()
    }

    /// Cells held (keys × the buckets each was seen in).
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// What was refused or dropped so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }

    /// The fixed part of one cell's memory (its sketches' heap, a few
    /// bytes each while small, comes on top).
    pub fn cell_bytes() -> usize {
        size_of::<Cell>()
    }
}

fn entries_of(
    kind: Kind,
    map: &HashMap<Box<[u8]>, Cells>,
) -> impl Iterator<Item = (Kind, &[u8], Counts)> + '_ {
    map.iter()
        .map(move |(k, cells)| (kind, &k[..], summarize(&cells.0)))
}

/// A key's counts over its cells: sums, and the sketches merged in bucket
/// order (the estimate does not depend on the order), each estimate
/// capped at the requests (a sketch can overshoot a small true count).
fn summarize(cells: &[Cell]) -> Counts {
    let mut tally = Tally::default();
    let (mut p24, mut p48, mut ua) = (Distinct::new(), Distinct::new(), Distinct::new());
    for c in cells {
        tally.add(&c.tally);
        // Same precision everywhere: merges cannot fail.
        let _ = p24.merge(&c.p24);
        let _ = p48.merge(&c.p48);
        let _ = ua.merge(&c.user_agents);
    }
    let requests = tally.requests;
    let prefixes24 = p24.estimate().min(requests);
    Counts {
        requests,
        prefixes24,
        prefixes48: p48.estimate().min(requests - prefixes24),
        user_agents: ua.estimate().min(requests),
        flagged: tally.flagged,
        challenges: tally.challenges,
        solved: tally.solved,
        cleared: tally.cleared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JA4: &[u8] = b"t13d1516h2_8daaf6152771_02713d6af862";

    fn obs(time: u64, net: u8) -> Obs<'static> {
        Obs {
            time,
            prefix: Some(Prefix::V4([10, 0, net])),
            user_agent: b"curl/8",
            flagged: true,
            challenge: net.is_multiple_of(2),
            solved: false,
            cleared: false,
        }
    }

    fn window(min_requests: u64) -> Window {
        Window::new(Settings {
            window: 600,
            buckets: 10,
            min_requests,
            max_keys: 100,
        })
        .unwrap()
    }

    #[test]
    fn slides_and_expires_by_event_time() {
        let mut w = window(1);
        // One request a minute for 10 minutes: all in the window.
        for m in 0..10u64 {
            w.add(Kind::Ja4, JA4, &obs(1_000_000_020 + m * 60, m as u8));
        }
        let c = w.counts(Kind::Ja4, JA4).unwrap();
        assert_eq!((c.requests, c.prefixes24, c.flagged), (10, 10, 10));
        assert_eq!(w.cells(), 10);
        // The 11th minute pushes the first out (a cell per minute).
        w.add(Kind::Ja4, JA4, &obs(1_000_000_020 + 600, 10));
        assert_eq!(w.counts(Kind::Ja4, JA4).unwrap().requests, 10);
        assert_eq!(w.cells(), 10);
        // A request from before the window is late, not counted.
        w.add(Kind::Ja4, JA4, &obs(1_000_000_020, 0));
        assert_eq!(w.dropped().late, 1);
        assert_eq!(w.counts(Kind::Ja4, JA4).unwrap().requests, 10);
        // Out of order within the window is fine.
        w.add(Kind::Ja4, JA4, &obs(1_000_000_020 + 300, 42));
        let c = w.counts(Kind::Ja4, JA4).unwrap();
        assert_eq!((c.requests, c.prefixes24), (11, 11));
        // Another key's request an hour later: the first key leaves.
        w.add(Kind::Headers, b"curl:hua", &obs(1_000_004_000, 1));
        let gone = w.expire();
        assert_eq!(gone, vec![(Kind::Ja4, JA4.into())]);
        assert_eq!(w.keys(), 1);
        assert_eq!(w.cells(), 1);
        assert!(w.counts(Kind::Ja4, JA4).is_none());
        // The snapshot ends at the end of the newest bucket.
        let (s, refused) = w.snapshot();
        assert_eq!((s.len(), refused), (1, 0));
        assert_eq!(s.generated(), 1_000_004_040);
        assert_eq!(s.window(), 600);
    }

    #[test]
    fn the_clock_does_not_slide_it() {
        // A replayed hour from long ago is the hour it was.
        let mut w = window(1);
        w.add(Kind::Ja4, JA4, &obs(1_000, 1));
        w.add(Kind::Ja4, JA4, &obs(1_500, 2));
        assert_eq!(w.counts(Kind::Ja4, JA4).unwrap().requests, 2);
        assert_eq!(w.end(), 1_560);
    }

    #[test]
    fn estimates_are_capped_at_requests() {
        let mut w = window(1);
        // Distinct prefixes of both families and distinct User-Agents: each
        // estimate is at most the requests, and /24 + /48 too.
        let uas: Vec<String> = (0..50).map(|i| format!("agent {i}")).collect();
        for (i, ua) in uas.iter().enumerate() {
            let prefix = if i % 2 == 0 {
                Prefix::V4([1, 2, i as u8])
            } else {
                Prefix::V6([0x20, 0x01, 0x0d, 0xb8, 0, i as u8])
            };
            let o = Obs {
                prefix: Some(prefix),
                user_agent: ua.as_bytes(),
                ..obs(100, 1)
            };
            w.add(Kind::Ja4, JA4, &o);
        }
        let c = w.counts(Kind::Ja4, JA4).unwrap();
        assert_eq!(
            (c.requests, c.prefixes24, c.prefixes48, c.user_agents),
            (50, 25, 25, 50)
        );
        c.check().unwrap();
        assert_eq!(c.challenges, 0, "net 1 is odd: never challenged");
        // The cap itself: summarize a cell whose sketch holds more items
        // than requests (a partial's sketch can, after a redelivery).
        let mut cell = Cell::new(1);
        for i in 0..100u32 {
            cell.p24.insert(&i.to_be_bytes());
        }
        cell.tally.requests = 3;
        let c = summarize(&[cell]);
        assert_eq!((c.requests, c.prefixes24, c.prefixes48), (3, 3, 0));
        c.check().unwrap();
    }

    #[test]
    fn min_requests_leaves_rare_keys_out() {
        let mut w = window(3);
        for i in 0..3 {
            w.add(Kind::Ja4, JA4, &obs(100 + i, 1));
        }
        w.add(Kind::Headers, b"curl:hua", &obs(100, 1));
        let (s, _) = w.snapshot();
        assert_eq!(s.len(), 1);
        assert!(s.ja4(JA4).is_some());
        // A key a snapshot refuses is counted, not written.
        let mut w = window(1);
        w.add(Kind::Headers, b"not a key", &obs(100, 1));
        let (s, refused) = w.snapshot();
        assert_eq!((s.len(), refused), (0, 1));
    }

    #[test]
    fn memory_is_bounded_by_keys_and_buckets() {
        let mut w = Window::new(Settings {
            window: 600,
            buckets: 10,
            min_requests: 1,
            max_keys: 50,
        })
        .unwrap();
        // 80 keys, each seen every 10 seconds for 30 minutes.
        for t in (0..1800).step_by(10) {
            for k in 0..80u32 {
                let key = format!("curl:k{k}");
                w.add(Kind::Headers, key.as_bytes(), &obs(t, (k % 200) as u8));
            }
        }
        assert_eq!(w.keys(), 50);
        assert!(w.cells() <= 50 * 10, "{} cells", w.cells());
        assert_eq!(w.cells(), 50 * 10);
        assert_eq!(w.dropped().untracked, 30 * 180);
    }

    #[test]
    fn partials_of_a_split_stream_merge_to_one_stream_exactly() {
        // Stage 1 split over two instances, stage 2 merging their cells,
        // against one window fed everything.
        let mut whole = window(1);
        let mut parts = [Vec::<Cell>::new(), Vec::new()];
        for i in 0..5_000u32 {
            let t = 60 * u64::from(i % 10) + u64::from(i % 60);
            let o = Obs {
                prefix: Some(Prefix::V4([(i >> 8) as u8, i as u8, (i % 7) as u8])),
                ..obs(t, (i % 251) as u8)
            };
            whole.add(Kind::Ja4, JA4, &o);
            let part = &mut parts[(i % 3 == 0) as usize];
            let b = t / 60;
            match part.iter_mut().find(|c| c.bucket == b) {
                Some(c) => c.add(&o),
                None => {
                    let mut c = Cell::new(b);
                    c.add(&o);
                    part.push(c);
                }
            }
        }
        let mut merged = window(1);
        for cell in parts.iter().flatten() {
            let wire: Cell = serde_json::from_slice(&serde_json::to_vec(cell).unwrap()).unwrap();
            merged.merge(Kind::Ja4, JA4, &wire);
        }
        let (a, b) = (
            whole.counts(Kind::Ja4, JA4).unwrap(),
            merged.counts(Kind::Ja4, JA4).unwrap(),
        );
        assert_eq!(a, b);
        assert!(a.prefixes24 > 3_000, "{a:?}");
        assert_eq!(whole.cells(), merged.cells());
    }

    #[test]
    fn refuses_settings_it_cannot_slide() {
        for (window, buckets) in [(0, 1), (3600, 0), (3600, 7), (7200, 7200)] {
            let s = Settings {
                window,
                buckets,
                ..Settings::default()
            };
            assert!(Window::new(s).is_err(), "{window} {buckets}");
        }
    }
}
