//! The shared table: fixed-size buckets of fixed-size records, in words
//! every worker reads and writes through atomics only.
//!
//! # Layout
//! A header of [`HEADER_WORDS`] words (the layout, the hash key, the
//! gauges), then buckets of [`BUCKET_WORDS`] words (512 bytes, eight cache
//! lines): a lock word, the [`WAYS`] slots' tags (the client's keyed hash;
//! 0: empty), their last-seen seconds two to a word, and the records of
//! [`RECORD_WORDS`] words each. So a client costs [`BYTES_PER_CLIENT`]
//! bytes: 64 MiB holds 131 071 buckets (the header takes the rest of the
//! last one), 524 284 clients.
//!
//! # Concurrency
//! One lock per bucket (striped: 131 071 locks in 64 MiB), a word the
//! workers take with a compare-and-swap, holding the caller's time. A
//! lock is held for a copy in, an update and a copy out: tens of
//! nanoseconds. A waiter spins, then yields; after [`MAX_WAIT`] it takes
//! the lock over if its stamp is [`STALE_LOCK_SECS`] old (its holder died:
//! a worker killed mid-update), else gives up (the request goes on without
//! the memory, counted in [`Gauges::busy`]). Only atomics live in the region, no pointers: each
//! process maps it at its own address.
//!
//! # Eviction
//! A key's hash picks its bucket; a key not in its bucket takes an empty
//! slot, or else the slot seen longest ago (set-associative, 4 ways, LRU
//! by last request).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fetch::Fetch;
use super::key::{ClientKey, HashKey};
use super::record::{Challenge, Event, Snapshot, Window, RECORD_WORDS};
use super::shm;
use super::view::ClientView;

/// Slots per bucket.
pub const WAYS: usize = 4;
/// Words of the region's header.
pub const HEADER_WORDS: usize = 16;
/// Words per bucket: lock, tags, ages, the last request's id, records.
pub const BUCKET_WORDS: usize = 8 + WAYS * RECORD_WORDS;
/// Bytes one client costs in the table (its record and its share of the
/// bucket's lock, tags and ages).
pub const BYTES_PER_CLIENT: usize = BUCKET_WORDS * 8 / WAYS;
/// How old a lock's stamp must be, against the waiter's clock, for a
/// waiter that waited [`MAX_WAIT`] to take it over (its holder is presumed
/// dead).
pub const STALE_LOCK_SECS: u64 = 5;
/// How long a request waits for a bucket's lock before going on without
/// the memory.
pub const MAX_WAIT: Duration = Duration::from_millis(20);

const _: () = assert!(BUCKET_WORDS == 64, "a bucket is eight cache lines");
const MAGIC: u64 = u64::from_le_bytes(*b"egclient");
// 2: the last navigation kept as a distance, beside the navigations from
// nowhere (`record::Count::Direct`).
const VERSION: u64 = 2;
/// The smallest memory: the header and one bucket.
pub const MIN_BYTES: usize = (HEADER_WORDS + BUCKET_WORDS) * 8;
/// The largest: 64 GiB, well past any sensible size, short of any mistake
/// that would map all of RAM.
pub const MAX_BYTES: usize = 64 << 30;
const SPINS: u32 = 128;

// Header words.
const H_MAGIC: usize = 0;
const H_VERSION: usize = 1;
const H_BUCKETS: usize = 2;
const H_WAYS: usize = 3;
const H_RECORD: usize = 4;
const H_EPOCH: usize = 5;
const H_KEY: usize = 6; // and 7
const H_USED: usize = 8;
const H_EVICTIONS: usize = 9;
const H_EVICTED_LIVE: usize = 10;
const H_BUSY: usize = 11;
const H_STEALS: usize = 12;

// Bucket words.
const B_LOCK: usize = 0;
const B_TAGS: usize = 1;
const B_AGES: usize = 1 + WAYS;
const B_REQUEST: usize = B_AGES + WAYS / 2;
const B_RECORDS: usize = 8;
const _: () = assert!(
    B_REQUEST < B_RECORDS,
    "the request word fits before the records"
);

/// What a memory is made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Its size in bytes (rounded down to whole buckets): fixed for its life.
    pub bytes: usize,
    /// The window's epoch, seconds ([`Window`]).
    pub epoch_secs: u32,
    /// The hash key; `None`: a random one. Machines whose records are
    /// merged must share one.
    pub hash_key: Option<HashKey>,
}

impl Default for Config {
    /// 64 MiB (524 284 clients), 300 s epochs, a random key.
    fn default() -> Config {
        Config {
            bytes: 64 << 20,
            epoch_secs: Window::DEFAULT_EPOCH_SECS,
            hash_key: None,
        }
    }
}

impl Config {
    /// The words a memory of this configuration takes, or why it cannot be
    /// made.
    pub fn words(&self) -> Result<usize, String> {
        if !(MIN_BYTES..=MAX_BYTES).contains(&self.bytes) {
            return Err(format!(
                "client memory of {} bytes: it takes {MIN_BYTES} to {MAX_BYTES} bytes",
                self.bytes
            ));
        }
        if !(1..=86_400).contains(&self.epoch_secs) {
            return Err(format!(
                "client memory epoch of {} s: it takes 1 to 86400 s",
                self.epoch_secs
            ));
        }
        Ok(HEADER_WORDS + (self.bytes / 8 - HEADER_WORDS) / BUCKET_WORDS * BUCKET_WORDS)
    }
}

/// Where the words are: shared with forked workers, or this process's own
/// (replay, tests).
#[derive(Clone, Debug)]
enum Words {
    Shared(&'static [AtomicU64]),
    Private(Arc<[AtomicU64]>),
}

/// The client memory: one table, seen by every process that inherited it.
/// Cloning is cheap and names the same memory.
#[derive(Clone, Debug)]
pub struct ClientMemory {
    words: Words,
    buckets: usize,
    window: Window,
    key: HashKey,
}

/// The memory's gauges: what it holds and how it copes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Bytes of the table.
    pub bytes: u64,
    /// Client slots.
    pub slots: u64,
    /// Slots holding a client (a client stays until its slot is taken,
    /// even after its window is empty).
    pub used: u64,
    /// Clients evicted to make room.
    pub evictions: u64,
    /// Of those, clients seen within the window: the memory is too small
    /// for the traffic (or someone floods it with keys).
    pub evicted_live: u64,
    /// Requests that went on without the memory, a bucket's lock held
    /// past [`MAX_WAIT`].
    pub busy: u64,
    /// Locks taken over from a holder presumed dead.
    pub steals: u64,
}

/// One slot as [`ClientMemory::scan`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Its bucket.
    pub bucket: usize,
    /// Its way within the bucket.
    pub way: usize,
    /// The bucket its tag hashes to (equal to `bucket` in a sound table).
    pub home: usize,
    /// The client's keyed hash (0: empty).
    pub tag: u64,
    /// The bucket's record of the slot's last request, whole seconds.
    pub age_s: u32,
    /// Whether the bucket's lock was held.
    pub locked: bool,
    /// The record.
    pub record: Snapshot,
}

/// A bucket's lock, released when dropped.
struct Held<'a>(&'a AtomicU64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Two handles are equal when they name the same memory.
impl PartialEq for ClientMemory {
    fn eq(&self, other: &ClientMemory) -> bool {
        self.same_memory(other)
    }
}

impl ClientMemory {
    /// A memory in `words` (all zero: made here; else made before by a
    /// memory of the same configuration, and found as it was left).
    pub(super) fn attach(words: &'static [AtomicU64], config: &Config) -> Result<Self, String> {
        Self::in_words(Words::Shared(words), config)
    }

    /// A memory of this process's own, shared with no other process: for
    /// replay, which rebuilds the memory from a log in one process, and
    /// for tests.
    pub fn private(config: &Config) -> Result<Self, String> {
        let n = config.words()?;
        let words: Arc<[AtomicU64]> = (0..n).map(|_| AtomicU64::new(0)).collect();
        Self::in_words(Words::Private(words), config)
    }

    fn in_words(words: Words, config: &Config) -> Result<Self, String> {
        let all = match &words {
            Words::Shared(w) => *w,
            Words::Private(w) => &w[..],
        };
        if all.len() != config.words()? {
            return Err(format!(
                "client memory of {} words for {config:?}",
                all.len()
            ));
        }
        let buckets = (all.len() - HEADER_WORDS) / BUCKET_WORDS;
        let layout = [
            (H_VERSION, VERSION),
            (H_BUCKETS, buckets as u64),
            (H_WAYS, WAYS as u64),
            (H_RECORD, RECORD_WORDS as u64),
            (H_EPOCH, u64::from(config.epoch_secs)),
        ];
        let get = |i: usize| all[i].load(Ordering::Acquire);
        if get(H_MAGIC) == 0 {
            // New: the layout, then the key, then the magic that says the
            // rest is written.
            for (i, v) in layout {
                all[i].store(v, Ordering::Relaxed);
            }
            let key = config.hash_key.unwrap_or_else(HashKey::random);
            all[H_KEY].store(key.0[0], Ordering::Relaxed);
            all[H_KEY + 1].store(key.0[1], Ordering::Relaxed);
            all[H_MAGIC].store(MAGIC, Ordering::Release);
        } else if get(H_MAGIC) != MAGIC || layout.iter().any(|&(i, v)| get(i) != v) {
            return Err("client memory: the region holds another layout".into());
        }
        let key = HashKey([get(H_KEY), get(H_KEY + 1)]);
        if config.hash_key.is_some_and(|k| k != key) {
            return Err("client memory: the region holds another hash key".into());
        }
        Ok(ClientMemory {
            words,
            buckets,
            window: Window::new(config.epoch_secs),
            key,
        })
    }

    fn all(&self) -> &[AtomicU64] {
        match &self.words {
            Words::Shared(w) => w,
            Words::Private(w) => w,
        }
    }

    /// Whether both name the same memory (the same words, not equal ones).
    pub fn same_memory(&self, other: &ClientMemory) -> bool {
        std::ptr::eq(self.all(), other.all())
    }

    /// The window the records age through.
    pub fn window(&self) -> Window {
        self.window
    }

    /// The keyed hash of `key`: the tag its slot carries.
    pub fn tag_of(&self, key: &ClientKey<'_>) -> u64 {
        self.key.client(key)
    }

    /// Takes in one request of `key` at `now_ms` (milliseconds since the
    /// Unix epoch) and returns the client's numbers after it. `None`: the
    /// bucket stayed locked past [`MAX_WAIT`]; nothing was recorded.
    pub fn observe(
        &self,
        key: &ClientKey<'_>,
        event: &Event<'_>,
        now_ms: u64,
    ) -> Option<ClientView> {
        let path_hash = match event.fetch {
            Fetch::Navigation => self.key.path(event.path),
            _ => 0,
        };
        self.update(self.key.client(key), now_ms, |rec| {
            rec.observe(event, path_hash, now_ms, self.window)
        })
    }

    /// Takes in one request of a client at both widths (`host` and
    /// `network`: [`Width::Host`](super::Width) and its network's key) and
    /// returns both views, host first. Both records live in the network
    /// key's bucket, updated under one lock: one trip to memory a request
    /// instead of two. A host record is therefore only found through this
    /// call (or [`view_pair`](Self::view_pair)), never by its own key.
    ///
    /// `request_id` (nginx's `$request_id`; empty: none) counts a request
    /// once however often the gate runs for it: nginx runs the rewrite and
    /// access phases again after an internal redirect (a directory's
    /// `index`, `try_files`, `error_page`), with the same id. The bucket
    /// keeps the last id it observed: the same id again returns the views
    /// unchanged. An empty id is never taken for a repeat.
    /// `None`: the bucket stayed locked past [`MAX_WAIT`].
    pub fn observe_pair(
        &self,
        host: &ClientKey<'_>,
        network: &ClientKey<'_>,
        event: &Event<'_>,
        request_id: &[u8],
        now_ms: u64,
    ) -> Option<[ClientView; 2]> {
        let path_hash = match event.fetch {
            Fetch::Navigation => self.key.path(event.path),
            _ => 0,
        };
        self.pair(host, network, now_ms, self.key.request(request_id), |rec| {
            rec.observe(event, path_hash, now_ms, self.window)
        })
    }

    /// Counts what became of a challenge for a client at both widths, as
    /// [`observe_pair`](Self::observe_pair) keeps it (its request was
    /// observed already: no fetch is counted).
    pub fn challenge_pair(
        &self,
        host: &ClientKey<'_>,
        network: &ClientKey<'_>,
        c: Challenge,
        now_ms: u64,
    ) -> Option<[ClientView; 2]> {
        self.pair(host, network, now_ms, 0, |rec| {
            rec.challenge(c, now_ms, self.window)
        })
    }

    /// Both views of a client as [`observe_pair`](Self::observe_pair)
    /// keeps it, unchanged (a record not held is all zero and not
    /// `known`, and takes no slot).
    pub fn view_pair(
        &self,
        host: &ClientKey<'_>,
        network: &ClientKey<'_>,
        now_ms: u64,
    ) -> Option<[ClientView; 2]> {
        let tags = [self.key.client(host), self.key.client(network)];
        let b = self.bucket_of(tags[1]);
        let _held = self.lock(b, now_ms / 1000)?;
        Some(self.views_in(b, tags, now_ms))
    }

    /// The views of `tags` in bucket `b` (its lock held), unchanged.
    fn views_in(&self, b: usize, tags: [u64; 2], now_ms: u64) -> [ClientView; 2] {
        tags.map(|tag| match self.find(b, tag) {
            Some(way) => self.read(b, way).view(now_ms, self.window, true),
            None => Snapshot::default().view(now_ms, self.window, false),
        })
    }

    /// Starts loading the bucket of `network` (a client's both records:
    /// [`observe_pair`](Self::observe_pair)) and returns at once.
    pub fn prefetch_pair(&self, network: &ClientKey<'_>) {
        self.touch(self.bucket_of(self.key.client(network)));
    }

    fn pair(
        &self,
        host: &ClientKey<'_>,
        network: &ClientKey<'_>,
        now_ms: u64,
        request: u64,
        change: impl Fn(&mut Snapshot),
    ) -> Option<[ClientView; 2]> {
        let tags = [self.key.client(host), self.key.client(network)];
        let b = self.bucket_of(tags[1]);
        let held = self.lock(b, now_ms / 1000)?;
        if request != 0 {
            let last = self.word(b, B_REQUEST);
            // The gate ran again for a request it observed (an internal
            // redirect): its counts are in already. Only the bucket's last
            // id is kept: `index` and `try_files` redirect in the same
            // call as the first run, before another of this bucket's
            // clients can come between (an `error_page` after a slow
            // upstream may let one in: then counted again).
            if last.load(Ordering::Relaxed) == request {
                return Some(self.views_in(b, tags, now_ms));
            }
            last.store(request, Ordering::Relaxed);
        }
        let mut views = [ClientView::default(); 2];
        // The host's slot, which the network's claim must not take.
        let mut kept = None;
        for (view, tag) in views.iter_mut().zip(tags) {
            let way;
            (way, *view) = self.update_slot(b, tag, now_ms, kept, &change);
            kept = Some(way);
        }
        drop(held);
        Some(views)
    }

    /// In bucket `b` (its lock held): finds or claims `tag`'s slot (never
    /// the way `keep`), lets `change` update its record, stores it, and
    /// returns the way and the view after it.
    fn update_slot(
        &self,
        b: usize,
        tag: u64,
        now_ms: u64,
        keep: Option<usize>,
        change: impl FnOnce(&mut Snapshot),
    ) -> (usize, ClientView) {
        let (way, known) = match self.find(b, tag) {
            Some(way) => (way, true),
            None => (self.claim(b, tag, now_ms, keep), false),
        };
        let mut rec = if known {
            self.read(b, way)
        } else {
            Snapshot::default()
        };
        change(&mut rec);
        self.write(b, way, &rec);
        (way, rec.view(now_ms, self.window, known))
    }

    /// The key the memory's cookie is signed with: derived from the hash
    /// key, so every worker (and a reload that keeps the memory) checks
    /// what another issued, and nothing else need be configured.
    pub fn cookie_key(&self) -> HashKey {
        HashKey([self.key.0[0] ^ 0x636f_6f6b_6965_7631, self.key.0[1]])
    }

    /// Merges `other` (another machine's record of `key`) into the
    /// memory's, as [`Snapshot::merge`] does. `None`: the bucket stayed
    /// locked past [`MAX_WAIT`].
    pub fn merge(&self, key: &ClientKey<'_>, other: &Snapshot, now_ms: u64) -> Option<ClientView> {
        if other.is_empty() {
            return self.view(key, now_ms);
        }
        self.update(self.key.client(key), now_ms, |rec| {
            *rec = rec.merge(other, self.window)
        })
    }

    /// The client's numbers at `now_ms`, unchanged; all zero (and not
    /// `known`) for a client the memory does not hold. `None`: the bucket
    /// stayed locked past [`MAX_WAIT`].
    pub fn view(&self, key: &ClientKey<'_>, now_ms: u64) -> Option<ClientView> {
        let (known, rec) = self.snapshot_of(self.key.client(key), now_ms)?;
        Some(rec.view(now_ms, self.window, known))
    }

    /// The record of `key` as plain numbers (empty when not held), for a
    /// merge elsewhere. `None`: the bucket stayed locked past [`MAX_WAIT`].
    pub fn snapshot(&self, key: &ClientKey<'_>, now_ms: u64) -> Option<Snapshot> {
        self.snapshot_of(self.key.client(key), now_ms)
            .map(|(_, s)| s)
    }

    fn snapshot_of(&self, tag: u64, now_ms: u64) -> Option<(bool, Snapshot)> {
        let b = self.bucket_of(tag);
        let _held = self.lock(b, now_ms / 1000)?;
        Some(match self.find(b, tag) {
            Some(way) => (true, self.read(b, way)),
            None => (false, Snapshot::default()),
        })
    }

    /// Finds or claims `tag`'s slot under its bucket's lock, lets `change`
    /// update the record, stores it, and returns the view after it.
    fn update(
        &self,
        tag: u64,
        now_ms: u64,
        change: impl FnOnce(&mut Snapshot),
    ) -> Option<ClientView> {
        let b = self.bucket_of(tag);
        let held = self.lock(b, now_ms / 1000)?;
        let (_, view) = self.update_slot(b, tag, now_ms, None, change);
        drop(held);
        Some(view)
    }

    /// Starts loading `key`'s bucket from memory and returns at once: a
    /// gate that calls this first and [`observe`](Self::observe) after
    /// its other work (parsing, scoring) finds the lines in cache instead
    /// of waiting for them.
    pub fn prefetch(&self, key: &ClientKey<'_>) {
        self.touch(self.bucket_of(self.key.client(key)));
    }

    /// The gauges, read without locks (each one exact, together a moment's
    /// picture).
    pub fn gauges(&self) -> Gauges {
        let get = |i: usize| self.all()[i].load(Ordering::Relaxed);
        Gauges {
            bytes: (self.all().len() * 8) as u64,
            slots: (self.buckets * WAYS) as u64,
            used: get(H_USED),
            evictions: get(H_EVICTIONS),
            evicted_live: get(H_EVICTED_LIVE),
            busy: get(H_BUSY),
            steals: get(H_STEALS),
        }
    }

    /// Calls `f` with every slot, read without taking locks: for audits,
    /// dumps and tests, not for requests (a slot being written may be
    /// read half old, half new).
    pub fn scan(&self, mut f: impl FnMut(&Slot)) {
        for bucket in 0..self.buckets {
            let locked = self.word(bucket, B_LOCK).load(Ordering::Relaxed) != 0;
            for way in 0..WAYS {
                let tag = self.word(bucket, B_TAGS + way).load(Ordering::Relaxed);
                f(&Slot {
                    bucket,
                    way,
                    home: self.bucket_of(tag),
                    tag,
                    age_s: self.age(bucket, way),
                    locked,
                    record: self.read(bucket, way),
                });
            }
        }
    }

    /// The bucket a tag lives in: the tag's high bits scaled to the bucket
    /// count (multiply-shift, no division, no bias worth naming).
    fn bucket_of(&self, tag: u64) -> usize {
        // The product's high word is below `buckets`: fits in usize.
        ((u128::from(tag) * self.buckets as u128) >> 64) as usize
    }

    fn word(&self, bucket: usize, i: usize) -> &AtomicU64 {
        &self.all()[HEADER_WORDS + bucket * BUCKET_WORDS + i]
    }

    fn bump(&self, gauge: usize) {
        self.all()[gauge].fetch_add(1, Ordering::Relaxed);
    }

    /// Takes bucket `b`'s lock, stamped with `now_s`. A waiter spins,
    /// then yields; after [`MAX_WAIT`] it takes over a lock stamped
    /// [`STALE_LOCK_SECS`] before its own time (the holder died), or gives
    /// up. Both conditions: a live holder releases within nanoseconds of
    /// running, so a long wait alone may be a holder the scheduler paused,
    /// and an old stamp alone may be a worker whose cached clock lags.
    fn lock(&self, b: usize, now_s: u64) -> Option<Held<'_>> {
        self.touch(b);
        let word = self.word(b, B_LOCK);
        // The low bit marks the lock held even at time 0.
        let mine = (now_s.min(u64::MAX >> 1) << 1) | 1;
        let mut spins = 0u32;
        let mut since: Option<Instant> = None;
        loop {
            let held = word.load(Ordering::Relaxed);
            if held == 0 {
                if word
                    .compare_exchange_weak(0, mine, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Some(Held(word));
                }
                continue;
            }
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
                continue;
            }
            // The holder was likely preempted: let it run.
            std::thread::yield_now();
            if since.get_or_insert_with(Instant::now).elapsed() < MAX_WAIT {
                continue;
            }
            if now_s.saturating_sub(held >> 1) < STALE_LOCK_SECS {
                self.bump(H_BUSY);
                return None;
            }
            if word
                .compare_exchange(held, mine, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                self.bump(H_STEALS);
                return Some(Held(word));
            }
        }
    }

    /// Starts loading each of the bucket's cache lines, so they come from
    /// memory together instead of one after the other: the lock's, then
    /// the record the tags point to. In a table larger than the caches
    /// each is a trip to memory; benches/clients.rs measures it.
    fn touch(&self, b: usize) {
        for line in (0..BUCKET_WORDS).step_by(8) {
            shm::prefetch(self.word(b, line));
        }
    }

    fn find(&self, b: usize, tag: u64) -> Option<usize> {
        (0..WAYS).find(|&w| self.word(b, B_TAGS + w).load(Ordering::Relaxed) == tag)
    }

    /// Gives `tag` a slot of bucket `b`: an empty one, else the one seen
    /// longest ago (its client evicted) but `keep`.
    fn claim(&self, b: usize, tag: u64, now_ms: u64, keep: Option<usize>) -> usize {
        let tags: [u64; WAYS] =
            std::array::from_fn(|w| self.word(b, B_TAGS + w).load(Ordering::Relaxed));
        let way = match tags.iter().position(|&t| t == 0) {
            Some(empty) => {
                self.bump(H_USED);
                empty
            }
            None => {
                let oldest = (0..WAYS)
                    .filter(|&w| Some(w) != keep)
                    .min_by_key(|&w| self.age(b, w))
                    .unwrap_or(0);
                self.bump(H_EVICTIONS);
                let window_s = 2 * u64::from(self.window.epoch_secs());
                if now_ms / 1000 < u64::from(self.age(b, oldest)) + window_s {
                    self.bump(H_EVICTED_LIVE);
                }
                oldest
            }
        };
        self.word(b, B_TAGS + way).store(tag, Ordering::Relaxed);
        way
    }

    fn age(&self, b: usize, way: usize) -> u32 {
        let w = self.word(b, B_AGES + way / 2).load(Ordering::Relaxed);
        // Two u32 to a word: the cast keeps the one at this way's place.
        (w >> (32 * (way % 2))) as u32
    }

    fn read(&self, b: usize, way: usize) -> Snapshot {
        let base = B_RECORDS + way * RECORD_WORDS;
        let w: [u64; RECORD_WORDS] =
            std::array::from_fn(|i| self.word(b, base + i).load(Ordering::Relaxed));
        Snapshot::from_words(&w)
    }

    fn write(&self, b: usize, way: usize, rec: &Snapshot) {
        let base = B_RECORDS + way * RECORD_WORDS;
        for (i, v) in rec.to_words().into_iter().enumerate() {
            self.word(b, base + i).store(v, Ordering::Relaxed);
        }
        let age = u64::from(u32::try_from(rec.last_seen_ms / 1000).unwrap_or(u32::MAX));
        let ages = self.word(b, B_AGES + way / 2);
        let shift = 32 * (way % 2);
        let other = ages.load(Ordering::Relaxed) & !(u64::from(u32::MAX) << shift);
        ages.store(other | age << shift, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{Challenge, Prefix, Width};

    const T0: u64 = 1_796_601_600_000;

    fn tiny() -> ClientMemory {
        ClientMemory::private(&Config {
            bytes: MIN_BYTES,
            epoch_secs: 300,
            hash_key: Some(HashKey([9, 9])),
        })
        .unwrap()
    }

    fn key(host: u8) -> ClientKey<'static> {
        ClientKey {
            prefix: Prefix::of([192, 0, 2, host].into(), Width::Host),
            fingerprint: b"chrome:hCMP",
        }
    }

    fn nav() -> Event<'static> {
        Event::request(Fetch::Navigation, b"/")
    }

    #[test]
    fn a_pair_lives_in_the_network_bucket_and_keeps_both_records() {
        let m = ClientMemory::private(&Config {
            bytes: 1 << 20,
            epoch_secs: 300,
            hash_key: Some(HashKey([3, 4])),
        })
        .unwrap();
        let net = |host: u8| ClientKey {
            prefix: Prefix::of([192, 0, 2, host].into(), Width::Network),
            fingerprint: b"fp",
        };
        // Six hosts of one /24: the bucket holds the network record and
        // the three hosts seen last.
        for host in 1..=6u8 {
            let [h, n] = m
                .observe_pair(
                    &key(host),
                    &net(host),
                    &nav(),
                    b"",
                    T0 + u64::from(host) * 1000,
                )
                .unwrap();
            assert_eq!((h.navigations, h.known), (1, false));
            assert_eq!(n.navigations, u32::from(host));
        }
        let [h, n] = m.view_pair(&key(6), &net(6), T0 + 7000).unwrap();
        assert_eq!((h.navigations, n.navigations, h.known), (1, 6, true));
        let [h, _] = m.view_pair(&key(1), &net(1), T0 + 7000).unwrap();
        assert!(!h.known, "the oldest host was evicted, never the network");
        let mut homes = 0;
        m.scan(|s| homes += usize::from(s.tag != 0));
        assert_eq!(homes, 4);
        let [h, n] = m
            .challenge_pair(&key(6), &net(6), Challenge::Solved, T0 + 8000)
            .unwrap();
        assert_eq!((h.challenges_solved, n.challenges_solved), (1, 1));
        assert_eq!((h.navigations, n.navigations), (1, 6), "no fetch counted");
    }

    #[test]
    fn a_request_id_seen_again_is_not_counted_again() {
        let m = tiny();
        let net = ClientKey {
            prefix: Prefix::of([192, 0, 2, 1].into(), Width::Network),
            fingerprint: b"fp",
        };
        let page = |id: &[u8], now| m.observe_pair(&key(1), &net, &nav(), id, now).unwrap();
        // The gate twice for one request (an internal redirect): once.
        let id = b"5f3ca1b2c3d4e5f60718293a4b5c6d7e";
        assert_eq!(page(id, T0)[0].navigations, 1);
        let [h, n] = page(id, T0 + 1);
        assert_eq!((h.navigations, n.navigations, h.known), (1, 1, true));
        // Another request: counted.
        let [h, n] = page(b"5f3ca1b2c3d4e5f60718293a4b5c6d7f", T0 + 2);
        assert_eq!((h.navigations, n.navigations), (2, 2));
        // No id: every run counts.
        assert_eq!(page(b"", T0 + 3)[0].navigations, 3);
        assert_eq!(page(b"", T0 + 4)[0].navigations, 4);
        // The first id again, no longer the bucket's last: counted.
        assert_eq!(page(id, T0 + 5)[0].navigations, 5);
        assert_eq!(page(id, T0 + 6)[0].navigations, 5);
        // A challenge's outcome is never taken for a repeat.
        let [h, _] = m
            .challenge_pair(&key(1), &net, Challenge::Solved, T0 + 7)
            .unwrap();
        assert_eq!((h.navigations, h.challenges_solved), (5, 1));
    }

    #[test]
    fn sizes_and_configurations() {
        assert_eq!(BYTES_PER_CLIENT, 128);
        let m = ClientMemory::private(&Config::default()).unwrap();
        let g = m.gauges();
        assert_eq!(g.slots, 524_284);
        assert!(g.bytes <= 64 << 20 && g.bytes > (64 << 20) - BUCKET_WORDS as u64 * 8);
        let table: &[(usize, u32, bool)] = &[
            (MIN_BYTES, 1, true),
            (MIN_BYTES - 1, 300, false),
            (MAX_BYTES, 300, true),
            (MAX_BYTES + 1, 300, false),
            (1 << 20, 0, false),
            (1 << 20, 86_400, true),
            (1 << 20, 86_401, false),
        ];
        for &(bytes, epoch_secs, ok) in table {
            let c = Config {
                bytes,
                epoch_secs,
                hash_key: None,
            };
            assert_eq!(c.words().is_ok(), ok, "{c:?}");
        }
    }

    #[test]
    fn observe_then_view_reads_the_same_numbers() {
        let m = tiny();
        m.prefetch(&key(1));
        let absent = m.view(&key(1), T0).unwrap();
        assert_eq!(absent, ClientView::default());
        assert_eq!(m.gauges().used, 0, "a prefetch records nothing");
        let first = m.observe(&key(1), &nav(), T0).unwrap();
        assert!(!first.known);
        assert_eq!(first.navigations, 1);
        let ev = Event {
            cookie_returned: true,
            challenge: Some(Challenge::Solved),
            ..Event::request(Fetch::Image, b"/i.png")
        };
        let second = m.observe(&key(1), &ev, T0 + 10).unwrap();
        assert!(second.known);
        assert_eq!((second.navigations, second.subresources()), (1, 1));
        assert_eq!((second.cookies_returned, second.challenges_solved), (1, 1));
        assert_eq!(m.view(&key(1), T0 + 10).unwrap(), second);
        assert_eq!(m.view(&key(2), T0 + 10).unwrap().navigations, 0);
        let snap = m.snapshot(&key(1), T0 + 10).unwrap();
        assert_eq!(snap.view(T0 + 10, m.window(), true), second);
        // Merging a copy adds its counts.
        let merged = m.merge(&key(1), &snap, T0 + 20).unwrap();
        assert_eq!((merged.navigations, merged.subresources()), (2, 2));
        assert_eq!(m.gauges().used, 1);
    }

    #[test]
    fn a_miss_takes_an_empty_slot_then_the_oldest() {
        let m = tiny();
        for host in 1..=4 {
            m.observe(&key(host), &nav(), T0 + u64::from(host) * 1000)
                .unwrap();
        }
        assert_eq!((m.gauges().used, m.gauges().evictions), (4, 0));
        // Host 1 comes back: now host 2 is the oldest.
        m.observe(&key(1), &nav(), T0 + 5000).unwrap();
        let v = m.observe(&key(5), &nav(), T0 + 6000).unwrap();
        assert!(!v.known);
        let g = m.gauges();
        assert_eq!((g.used, g.evictions, g.evicted_live), (4, 1, 1));
        assert!(!m.view(&key(2), T0 + 6000).unwrap().known);
        for host in [1, 3, 4, 5] {
            assert!(m.view(&key(host), T0 + 6000).unwrap().known, "{host}");
        }
        assert_eq!(m.view(&key(1), T0 + 6000).unwrap().navigations, 2);
        // An hour later the window is empty: evicting is no loss.
        m.observe(&key(6), &nav(), T0 + 3_600_000).unwrap();
        let g = m.gauges();
        assert_eq!((g.evictions, g.evicted_live), (2, 1));
        assert!(!m.view(&key(3), T0 + 3_600_000).unwrap().known);
        // A returning evicted client starts over.
        assert_eq!(
            m.observe(&key(2), &nav(), T0 + 3_600_001)
                .unwrap()
                .navigations,
            1
        );
    }

    #[test]
    fn a_held_lock_makes_a_request_go_on_and_a_dead_one_is_taken_over() {
        let m = tiny();
        let lock = m.word(0, B_LOCK);
        // Held now by someone alive: wait, give up, record nothing.
        lock.store((T0 / 1000) << 1 | 1, Ordering::Relaxed);
        let t = Instant::now();
        assert_eq!(m.observe(&key(1), &nav(), T0 + 1000), None);
        assert!(t.elapsed() >= MAX_WAIT);
        assert_eq!(m.view(&key(1), T0 + 1000), None);
        assert_eq!((m.gauges().busy, m.gauges().used), (2, 0));
        // The same lock seen STALE_LOCK_SECS later: taken over, after
        // the same wait.
        let later = T0 + STALE_LOCK_SECS * 1000;
        let t = Instant::now();
        assert_eq!(m.observe(&key(1), &nav(), later).unwrap().navigations, 1);
        assert!(t.elapsed() >= MAX_WAIT);
        assert_eq!(m.gauges().steals, 1);
        assert_eq!(lock.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_region_with_another_layout_or_key_is_refused() {
        let config = Config {
            bytes: MIN_BYTES,
            epoch_secs: 300,
            hash_key: Some(HashKey([1, 2])),
        };
        let words: &'static [AtomicU64] = Box::leak(
            (0..config.words().unwrap())
                .map(|_| AtomicU64::new(0))
                .collect(),
        );
        let a = ClientMemory::attach(words, &config).unwrap();
        a.observe(&key(1), &nav(), T0).unwrap();
        let b = ClientMemory::attach(
            words,
            &Config {
                hash_key: None,
                ..config
            },
        )
        .unwrap();
        assert!(b.same_memory(&a));
        assert_eq!(b.view(&key(1), T0).unwrap().navigations, 1);
        let other_key = Config {
            hash_key: Some(HashKey([1, 3])),
            ..config
        };
        assert!(ClientMemory::attach(words, &other_key)
            .unwrap_err()
            .contains("hash key"));
        let other_epoch = Config {
            epoch_secs: 60,
            ..config
        };
        assert!(ClientMemory::attach(words, &other_epoch)
            .unwrap_err()
            .contains("layout"));
        let bigger = Config {
            bytes: MIN_BYTES * 2,
            ..config
        };
        assert!(ClientMemory::attach(words, &bigger).is_err());
    }

    /// Times at the ends of the range, clocks that run backwards, empty
    /// and long inputs: answers, no panic, no overflow.
    #[test]
    fn hostile_times_and_inputs() {
        let m = tiny();
        let long = vec![b'a'; 1 << 16];
        let odd = ClientKey {
            prefix: Prefix::of("::".parse().unwrap(), Width::Network),
            fingerprint: &long,
        };
        let empty = ClientKey {
            fingerprint: b"",
            ..key(0)
        };
        for (k, now) in [
            (&odd, 0),
            (&empty, 0),
            (&odd, u64::MAX),
            (&empty, 1),
            (&odd, 5),
        ] {
            let e = Event::request(Fetch::Navigation, &long);
            let v = m.observe(k, &e, now).unwrap();
            assert!(v.navigations >= 1 && v.rate.is_finite() && v.gap_mean_ms.is_finite());
            let v = m.view(k, now).unwrap();
            assert!(v.known && v.rate.is_finite());
        }
        let v = m.view(&odd, u64::MAX).unwrap();
        assert_eq!(v.last_seen_ms, u64::MAX);
        assert_eq!(v.first_seen_s, 0);
        assert_eq!(m.view(&empty, 1).unwrap().navigations, 2);
        assert!(m.scan_is_sound());
    }

    impl ClientMemory {
        fn scan_is_sound(&self) -> bool {
            let mut ok = true;
            self.scan(|s| ok &= !s.locked && (s.tag == 0 || s.home == s.bucket));
            ok
        }
    }

    #[test]
    fn scan_sees_every_slot_in_its_home_bucket() {
        let m = ClientMemory::private(&Config {
            bytes: 64 << 10,
            ..Config::default()
        })
        .unwrap();
        for host in 0..=255 {
            m.observe(&key(host), &nav(), T0 + u64::from(host)).unwrap();
        }
        let (mut slots, mut used) = (0, 0);
        m.scan(|s| {
            slots += 1;
            if s.tag != 0 {
                used += 1;
                assert_eq!(s.home, s.bucket);
                assert_eq!(u64::from(s.age_s), s.record.last_seen_ms / 1000);
            }
            assert!(!s.locked);
        });
        let g = m.gauges();
        assert_eq!((slots, used), (g.slots, g.used));
        assert_eq!(g.used + g.evictions, 256);
    }
}
