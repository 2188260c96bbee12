//! One client's record: what it is made of, how a request updates it, how
//! it ages through the window, and how two records of one client merge.
//!
//! [`Snapshot`] is plain old data: the table copies a slot's words into one
//! under the bucket's lock, updates it here, and copies it back, so every
//! rule of the record lives in this file and is tested without shared
//! memory. The same type is what another machine would send (the signals
//! pipeline's partials, later): [`Snapshot::merge`].
//!
//! # The window
//! Time is cut into epochs of [`Window::epoch_secs`] seconds (default
//! 300). A record keeps two sets of counts and path sketches: the epoch of
//! its last request ("current") and the one before ("previous"). When a
//! request arrives in a later epoch the current set becomes the previous
//! one (or both are cleared, two epochs or more later), so what a view
//! reports covers between one and two epochs: with 300 s, the last 5 to
//! 10 minutes. Counts are exact within the window and saturate at 65535
//! per epoch.
//!
//! # The words
//! Fourteen ([`RECORD_WORDS`]): the last request; the first
//! request and the gap count; the last navigation (as its distance before
//! the last request, 32 bits) with both epochs' direct navigations (16
//! bits each, [`Count::Direct`]); the gap statistics; each epoch's other
//! twelve counters (three words each); each epoch's path sketch (two words
//! each).

use super::fetch::Fetch;
use super::sketch::PathSketch;
use super::view::ClientView;

/// Words one record takes in the shared table ([`Snapshot::to_words`]).
pub const RECORD_WORDS: usize = 14;

/// The stored distance of the last navigation that says there was none.
const NO_NAVIGATION: u32 = u32::MAX;

/// The epochs a record's counts are kept in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    epoch_ms: u64,
}

impl Window {
    /// The default epoch: 300 s, so a view covers the last 5 to 10 minutes.
    pub const DEFAULT_EPOCH_SECS: u32 = 300;

    /// Epochs of `epoch_secs` seconds (at least 1).
    pub fn new(epoch_secs: u32) -> Window {
        Window {
            epoch_ms: u64::from(epoch_secs.max(1)) * 1000,
        }
    }

    /// The epoch's length in seconds.
    pub fn epoch_secs(self) -> u32 {
        // Made from a u32 of seconds: fits.
        (self.epoch_ms / 1000) as u32
    }

    fn epoch(self, ms: u64) -> u64 {
        ms / self.epoch_ms
    }

    /// The longest span a view covers (two epochs), milliseconds: also the
    /// longest gap between navigations the statistics take in.
    fn span_ms(self) -> u64 {
        2 * self.epoch_ms
    }
}

/// Which counter of an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Requests of one [`Fetch`] class (navigations, then sub-resources).
    Fetch(Fetch),
    /// Answers that set the memory's cookie.
    CookiesIssued,
    /// Requests that sent it back.
    CookiesReturned,
    /// Challenge outcomes.
    Challenge(Challenge),
    /// Navigations that arrived from nowhere: typed, bookmarked, or sent
    /// by a script with a copied head ([`arrival`](super::arrival)).
    Direct,
}

impl Count {
    fn index(self) -> usize {
        match self {
            Count::Fetch(f) => f as usize,
            Count::CookiesIssued => 7,
            Count::CookiesReturned => 8,
            Count::Challenge(c) => 9 + c as usize,
            Count::Direct => 12,
        }
    }
}

/// What became of a challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Challenge {
    /// The challenge page was served.
    Served = 0,
    /// An answer was verified.
    Solved = 1,
    /// An answer was refused.
    Failed = 2,
}

/// Counters per epoch.
pub const COUNTERS: usize = 13;

/// One epoch's counters: 13 saturating u16, in [`Count`]'s order. The
/// first twelve fill three words; the thirteenth ([`Count::Direct`]) shares
/// the last navigation's word ([`Snapshot::to_words`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub [u16; COUNTERS]);

impl Counts {
    /// The counter `c`.
    pub fn get(&self, c: Count) -> u16 {
        self.0[c.index()]
    }

    fn bump(&mut self, c: Count) {
        let n = &mut self.0[c.index()];
        *n = n.saturating_add(1);
    }

    /// Both epochs' counts added, each counter saturating.
    pub fn plus(self, other: Counts) -> Counts {
        let mut out = self;
        for (o, n) in out.0.iter_mut().zip(other.0) {
            *o = o.saturating_add(n);
        }
        out
    }

    /// The first twelve counters in three words; the last one apart.
    fn to_words(self) -> ([u64; 3], u16) {
        let mut w = [0u64; 3];
        for (i, &n) in self.0[..12].iter().enumerate() {
            w[i / 4] |= u64::from(n) << (16 * (i % 4));
        }
        (w, self.0[12])
    }

    fn from_words(w: [u64; 3], last: u16) -> Counts {
        // Each u16 is the 16 bits at its place: the casts keep exactly those.
        Counts(std::array::from_fn(|i| match i {
            12 => last,
            _ => (w[i / 4] >> (16 * (i % 4))) as u16,
        }))
    }
}

/// Gaps between navigations: an exponentially weighted mean and variance.
///
/// A person reads before the next navigation, at uneven lengths; a crawler
/// follows its own clock. The weight of the newest gap is 1/8, so the
/// statistics forget by navigations, not by time; a gap longer than the
/// window counts as the window's length.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gaps {
    /// Gaps taken in (saturates).
    pub count: u32,
    /// Mean, milliseconds.
    pub mean_ms: f32,
    /// Variance, milliseconds squared.
    pub var: f32,
}

impl Gaps {
    const ALPHA: f64 = 1.0 / 8.0;

    fn add(&mut self, gap_ms: u64) {
        let g = gap_ms as f64;
        if self.count == 0 {
            self.mean_ms = g as f32;
            self.var = 0.0;
        } else {
            // West's incremental form of the weighted mean and variance.
            let mean = f64::from(self.mean_ms);
            let d = g - mean;
            self.mean_ms = (mean + Self::ALPHA * d) as f32;
            self.var = ((1.0 - Self::ALPHA) * (f64::from(self.var) + Self::ALPHA * d * d)) as f32;
        }
        self.count = self.count.saturating_add(1);
    }

    /// Two machines' statistics pooled, weighted by their counts: the
    /// mean of the means and the variance of the mixture. Symmetric in its
    /// operands (IEEE addition and multiplication commute).
    fn pooled(a: Gaps, b: Gaps) -> Gaps {
        if a.count == 0 {
            return b;
        }
        if b.count == 0 {
            return a;
        }
        let (na, nb) = (f64::from(a.count), f64::from(b.count));
        let (ma, mb) = (f64::from(a.mean_ms), f64::from(b.mean_ms));
        let n = na + nb;
        let mean = (na * ma + nb * mb) / n;
        let spread = |v: f32, m: f64| f64::from(v) + (m - mean) * (m - mean);
        let var = (na * spread(a.var, ma) + nb * spread(b.var, mb)) / n;
        Gaps {
            count: a.count.saturating_add(b.count),
            mean_ms: mean as f32,
            var: var as f32,
        }
    }
}

/// What one request showed, as the gate knows it.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// What it fetched.
    pub fetch: Fetch,
    /// Its path (a query is ignored); navigations' paths feed the
    /// distinct-paths sketch.
    pub path: &'a [u8],
    /// It sent back the memory's cookie.
    pub cookie_returned: bool,
    /// Its answer sets the memory's cookie.
    pub cookie_issued: bool,
    /// A challenge outcome it carried, if any.
    pub challenge: Option<Challenge>,
    /// A navigation that arrived from nowhere rather than from a link
    /// ([`arrival::direct`](super::arrival::direct)); ignored for a
    /// sub-resource.
    pub direct: bool,
}

impl<'a> Event<'a> {
    /// A request of class `fetch` for `path`, with no cookie and no
    /// challenge.
    pub fn request(fetch: Fetch, path: &'a [u8]) -> Event<'a> {
        Event {
            fetch,
            path,
            cookie_returned: false,
            cookie_issued: false,
            challenge: None,
            direct: false,
        }
    }
}

/// One client's record as plain numbers.
///
/// The current counts and sketch belong to the epoch of `last_seen_ms`,
/// the previous ones to the epoch before it. `last_seen_ms == 0` is the
/// empty record.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// The last request, milliseconds since the Unix epoch (0: empty).
    pub last_seen_ms: u64,
    /// The first request, whole seconds since the Unix epoch.
    pub first_seen_s: u32,
    /// The last navigation, milliseconds since the Unix epoch (0: none).
    pub last_navigation_ms: u64,
    /// Gaps between navigations.
    pub gaps: Gaps,
    /// The current epoch's counts.
    pub current: Counts,
    /// The previous epoch's counts.
    pub previous: Counts,
    /// The current epoch's navigated paths.
    pub paths_current: PathSketch,
    /// The previous epoch's navigated paths.
    pub paths_previous: PathSketch,
}

impl Snapshot {
    /// Whether this is the empty record.
    pub fn is_empty(&self) -> bool {
        self.last_seen_ms == 0
    }

    /// Takes in one request at `now_ms` (an earlier time than the last
    /// request's, as two workers' clocks give, counts as the last
    /// request's). `path_hash` is the keyed hash of the event's path.
    pub fn observe(&mut self, event: &Event<'_>, path_hash: u64, now_ms: u64, window: Window) {
        let now = now_ms.max(self.last_seen_ms).max(1);
        if self.is_empty() {
            self.first_seen_s = u32::try_from(now / 1000).unwrap_or(u32::MAX);
        }
        self.age_to(now, window);
        self.last_seen_ms = now;
        self.current.bump(Count::Fetch(event.fetch));
        if event.cookie_issued {
            self.current.bump(Count::CookiesIssued);
        }
        if event.cookie_returned {
            self.current.bump(Count::CookiesReturned);
        }
        if let Some(c) = event.challenge {
            self.current.bump(Count::Challenge(c));
        }
        if event.fetch == Fetch::Navigation {
            if event.direct {
                self.current.bump(Count::Direct);
            }
            self.paths_current.insert(path_hash);
            if self.last_navigation_ms != 0 {
                let gap = now.saturating_sub(self.last_navigation_ms);
                self.gaps.add(gap.min(window.span_ms()));
            }
            self.last_navigation_ms = now;
        }
    }

    /// Counts what became of a challenge at `now_ms`, the request that
    /// carried it already observed (no fetch is counted).
    pub fn challenge(&mut self, c: Challenge, now_ms: u64, window: Window) {
        let now = now_ms.max(self.last_seen_ms).max(1);
        if self.is_empty() {
            self.first_seen_s = u32::try_from(now / 1000).unwrap_or(u32::MAX);
        }
        self.age_to(now, window);
        self.last_seen_ms = now;
        self.current.bump(Count::Challenge(c));
    }

    /// Moves the counts to the epoch of `now_ms` (not earlier than the
    /// current one): one epoch later, current becomes previous; two or
    /// more, both clear. Leaves `last_seen_ms` to the caller, which sets
    /// it to a time in that epoch.
    fn age_to(&mut self, now_ms: u64, window: Window) {
        let have = window.epoch(self.last_seen_ms);
        let want = window.epoch(now_ms);
        if self.is_empty() || want <= have {
            return;
        }
        if want == have + 1 {
            self.previous = self.current;
            self.paths_previous = self.paths_current;
        } else {
            self.previous = Counts::default();
            self.paths_previous = PathSketch::default();
        }
        self.current = Counts::default();
        self.paths_current = PathSketch::default();
    }

    /// The client's numbers over the window at `now_ms`. `known` says
    /// whether the memory held the client before this call.
    pub fn view(&self, now_ms: u64, window: Window, known: bool) -> ClientView {
        let now = now_ms.max(self.last_seen_ms);
        let mut s = *self;
        s.age_to(now, window);
        let counts = s.current.plus(s.previous);
        let get = |c: Count| u32::from(counts.get(c));
        let requests: u32 = counts.0[..7].iter().map(|&n| u32::from(n)).sum();
        let window_start = window.epoch(now).saturating_sub(1) * window.epoch_ms;
        let from = (u64::from(self.first_seen_s) * 1000).max(window_start);
        let span_s = (now.saturating_sub(from).max(1000)) as f32 / 1000.0;
        ClientView {
            known,
            navigations: get(Count::Fetch(Fetch::Navigation)),
            direct_navigations: get(Count::Direct),
            subresources_by_class: std::array::from_fn(|i| get(Count::Fetch(Fetch::ALL[i + 1]))),
            paths: s.paths_current.union(s.paths_previous).estimate(),
            cookies_issued: get(Count::CookiesIssued),
            cookies_returned: get(Count::CookiesReturned),
            challenges_served: get(Count::Challenge(Challenge::Served)),
            challenges_solved: get(Count::Challenge(Challenge::Solved)),
            challenges_failed: get(Count::Challenge(Challenge::Failed)),
            first_seen_s: self.first_seen_s,
            last_seen_ms: self.last_seen_ms,
            gaps: self.gaps.count,
            gap_mean_ms: self.gaps.mean_ms,
            gap_sd_ms: self.gaps.var.max(0.0).sqrt(),
            rate: if self.is_empty() {
                0.0
            } else {
                requests as f32 / span_s
            },
        }
    }

    /// Two records of one client merged (another machine's, or two
    /// partials of one stream): both aged to the later one's epoch, then
    /// counts added (saturating), sketches united, the earliest first and
    /// the latest last times kept, gap statistics pooled.
    ///
    /// Commutative. Sketches and times are idempotent (merging a record
    /// with itself keeps them); counts add, so each partial must be merged
    /// once, as the signals pipeline's partials already are.
    pub fn merge(&self, other: &Snapshot, window: Window) -> Snapshot {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        let last = self.last_seen_ms.max(other.last_seen_ms);
        let (mut a, mut b) = (*self, *other);
        a.age_to(last, window);
        b.age_to(last, window);
        Snapshot {
            last_seen_ms: last,
            first_seen_s: a.first_seen_s.min(b.first_seen_s),
            last_navigation_ms: a.last_navigation_ms.max(b.last_navigation_ms),
            gaps: Gaps::pooled(a.gaps, b.gaps),
            current: a.current.plus(b.current),
            previous: a.previous.plus(b.previous),
            paths_current: a.paths_current.union(b.paths_current),
            paths_previous: a.paths_previous.union(b.paths_previous),
        }
    }

    /// The record as the table stores it: [`RECORD_WORDS`] words.
    ///
    /// The last navigation is kept as its distance before the last
    /// request, in 32 bits of milliseconds ([`NO_NAVIGATION`]: none): a
    /// distance past 49 days is kept as 49 days, which changes nothing the
    /// record says (a gap counts at most the window's length, 2 days at
    /// most). The 32 bits this frees hold both epochs' direct navigations.
    pub fn to_words(&self) -> [u64; RECORD_WORDS] {
        let (c, c_direct) = self.current.to_words();
        let (p, p_direct) = self.previous.to_words();
        let split = |s: PathSketch| [s.0 as u64, (s.0 >> 64) as u64];
        let [cl, ch] = split(self.paths_current);
        let [pl, ph] = split(self.paths_previous);
        let before = match self.last_navigation_ms {
            0 => NO_NAVIGATION,
            at => u32::try_from(self.last_seen_ms.saturating_sub(at))
                .unwrap_or(NO_NAVIGATION - 1)
                .min(NO_NAVIGATION - 1),
        };
        [
            self.last_seen_ms,
            u64::from(self.first_seen_s) | u64::from(self.gaps.count) << 32,
            u64::from(before) | u64::from(c_direct) << 32 | u64::from(p_direct) << 48,
            u64::from(self.gaps.mean_ms.to_bits()) | u64::from(self.gaps.var.to_bits()) << 32,
            c[0],
            c[1],
            c[2],
            p[0],
            p[1],
            p[2],
            cl,
            ch,
            pl,
            ph,
        ]
    }

    /// The record [`to_words`](Self::to_words) stored.
    pub fn from_words(w: &[u64; RECORD_WORDS]) -> Snapshot {
        let low = |x: u64| x as u32;
        let high = |x: u64| (x >> 32) as u32;
        let join = |l: u64, h: u64| PathSketch(u128::from(l) | u128::from(h) << 64);
        // 16 bits at their place: the casts keep exactly those.
        let direct = |shift: u32| (w[2] >> shift) as u16;
        Snapshot {
            last_seen_ms: w[0],
            first_seen_s: low(w[1]),
            last_navigation_ms: match low(w[2]) {
                NO_NAVIGATION => 0,
                // Never 0 for a navigation: at least 1 ms (observe's floor).
                before => w[0].saturating_sub(u64::from(before)).max(1),
            },
            gaps: Gaps {
                count: high(w[1]),
                mean_ms: f32::from_bits(low(w[3])),
                var: f32::from_bits(high(w[3])),
            },
            current: Counts::from_words([w[4], w[5], w[6]], direct(32)),
            previous: Counts::from_words([w[7], w[8], w[9]], direct(48)),
            paths_current: join(w[10], w[11]),
            paths_previous: join(w[12], w[13]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Window = Window { epoch_ms: 300_000 };
    /// 2026-12-07 00:00:00 UTC, an epoch boundary of 300 s.
    const T0: u64 = 1_796_601_600_000;
    const PATHS: crate::clients::HashKey = crate::clients::HashKey([3, 4]);

    fn nav(path: &[u8]) -> Event<'_> {
        Event::request(Fetch::Navigation, path)
    }

    /// Feeds `(ms after T0, event)` into an empty record.
    fn fed(events: &[(u64, Event<'_>)]) -> Snapshot {
        let mut s = Snapshot::default();
        for (at, e) in events {
            s.observe(e, PATHS.path(e.path), T0 + at, W);
        }
        s
    }

    #[test]
    fn a_page_visit_and_a_crawl_read_as_documented() {
        let sub = |f| Event::request(f, b"/asset");
        let browser = fed(&[
            (
                0,
                Event {
                    cookie_issued: true,
                    ..nav(b"/")
                },
            ),
            (40, sub(Fetch::Style)),
            (45, sub(Fetch::Script)),
            (60, sub(Fetch::Image)),
            (61, sub(Fetch::Image)),
            (70, sub(Fetch::Font)),
            (
                30_000,
                Event {
                    cookie_returned: true,
                    ..nav(b"/about")
                },
            ),
            (
                30_050,
                Event {
                    cookie_returned: true,
                    ..sub(Fetch::Api)
                },
            ),
            (
                31_000,
                Event {
                    challenge: Some(Challenge::Served),
                    ..nav(b"/about")
                },
            ),
            (
                33_000,
                Event {
                    challenge: Some(Challenge::Solved),
                    ..sub(Fetch::Other)
                },
            ),
        ]);
        let v = browser.view(T0 + 33_000, W, true);
        assert_eq!(v.navigations, 3);
        assert_eq!(v.subresources_by_class, [1, 1, 2, 1, 1, 1]);
        assert_eq!(v.paths, 2);
        assert_eq!((v.cookies_issued, v.cookies_returned), (1, 2));
        assert_eq!(
            (
                v.challenges_served,
                v.challenges_solved,
                v.challenges_failed
            ),
            (1, 1, 0)
        );
        assert_eq!(v.first_seen_s as u64, T0 / 1000);
        assert_eq!(v.last_seen_ms, T0 + 33_000);
        assert_eq!(v.gaps, 2);
        assert!((v.rate - 10.0 / 33.0).abs() < 1e-3, "{}", v.rate);

        // 20 pages, one every 2 s, nothing else: the crawler's numbers.
        let pages: Vec<Vec<u8>> = (0..20).map(|i| format!("/p{i:02}").into_bytes()).collect();
        let mut crawl = Snapshot::default();
        for (i, p) in pages.iter().enumerate() {
            crawl.observe(&nav(p), PATHS.path(p), T0 + i as u64 * 2000, W);
        }
        let v = crawl.view(T0 + 38_000, W, true);
        assert_eq!(
            (v.navigations, v.subresource_ratio(), v.cookie_returned()),
            (20, 0.0, false)
        );
        assert!((18..=22).contains(&v.paths), "{}", v.paths);
        assert_eq!((v.gaps, v.gap_mean_ms), (19, 2000.0));
        assert_eq!(v.gap_cv(), 0.0);
        assert!((v.rate - 20.0 / 38.0).abs() < 1e-3);
    }

    /// Requests at the given offsets (ms after T0), the view at `at`:
    /// the navigations it still counts.
    #[test]
    fn the_window_holds_one_to_two_epochs() {
        let e = 300_000;
        let table: &[(&[u64], u64, u32)] = &[
            (&[0, 1, 2], 2, 3),
            // The next epoch: the previous one still counts.
            (&[0, 1, 2], e + 5, 3),
            (&[0, 1, 2, e], 2 * e - 1, 4),
            // Two epochs on: the first epoch's requests are gone.
            (&[0, 1, 2, e], 2 * e, 1),
            (&[0, 1, 2], 2 * e, 0),
            (&[0, 1, 2], 50 * e, 0),
            // A request two epochs later clears both epochs first.
            (&[0, 1, 2, 2 * e + 1], 2 * e + 1, 1),
            // The last moment of the epoch and the first of the next.
            (&[e - 1, e], e, 2),
        ];
        for &(times, at, want) in table {
            let events: Vec<(u64, Event)> = times.iter().map(|&t| (t, nav(b"/"))).collect();
            let s = fed(&events);
            assert_eq!(
                s.view(T0 + at, W, true).navigations,
                want,
                "{times:?} at {at}"
            );
        }
    }

    #[test]
    fn time_never_runs_backwards_and_counts_saturate() {
        let s = fed(&[(10_000, nav(b"/a")), (5_000, nav(b"/b"))]);
        assert_eq!(s.last_seen_ms, T0 + 10_000);
        assert_eq!((s.gaps.count, s.gaps.mean_ms), (1, 0.0));
        let v = s.view(T0 + 1, W, true);
        assert_eq!(v.navigations, 2);

        let mut s = Snapshot::default();
        for _ in 0..70_000 {
            s.observe(&nav(b"/"), 0, T0, W);
        }
        assert_eq!(s.current.get(Count::Fetch(Fetch::Navigation)), u16::MAX);
        // A long absence counts as the window's length.
        let s = fed(&[(0, nav(b"/")), (10 * 3_600_000, nav(b"/"))]);
        assert_eq!(s.gaps.mean_ms, 600_000.0);
    }

    #[test]
    fn words_round_trip() {
        let s = fed(&[
            (0, nav(b"/")),
            (1, Event::request(Fetch::Font, b"/f")),
            (
                900_000,
                Event {
                    cookie_returned: true,
                    ..nav(b"/x")
                },
            ),
            (
                900_500,
                Event {
                    challenge: Some(Challenge::Failed),
                    ..nav(b"/y")
                },
            ),
        ]);
        assert_eq!(Snapshot::from_words(&s.to_words()), s);
        let full = Snapshot {
            last_seen_ms: u64::MAX,
            first_seen_s: u32::MAX,
            last_navigation_ms: u64::MAX - 1,
            gaps: Gaps {
                count: u32::MAX,
                mean_ms: 1.5,
                var: f32::MAX,
            },
            current: Counts([u16::MAX; COUNTERS]),
            previous: Counts(std::array::from_fn(|i| i as u16 * 5000)),
            paths_current: PathSketch(u128::MAX),
            paths_previous: PathSketch(1 << 127 | 1),
        };
        assert_eq!(Snapshot::from_words(&full.to_words()), full);
        // No navigation yet; one as old as the last request.
        let subs = fed(&[(0, Event::request(Fetch::Image, b"/i"))]);
        assert_eq!(Snapshot::from_words(&subs.to_words()), subs);
        let first = Snapshot {
            last_navigation_ms: 1,
            last_seen_ms: 1,
            ..Snapshot::default()
        };
        assert_eq!(Snapshot::from_words(&first.to_words()), first);
    }

    #[test]
    fn a_navigation_farther_than_49_days_is_kept_at_49_days() {
        let far = Snapshot {
            last_seen_ms: T0,
            last_navigation_ms: T0 - 60 * 86_400_000,
            ..fed(&[(0, nav(b"/"))])
        };
        let back = Snapshot::from_words(&far.to_words());
        assert_eq!(
            back.last_navigation_ms,
            T0 - u64::from(NO_NAVIGATION - 1),
            "49.7 days"
        );
        // What it says is the same: the next gap counts as the window.
        let (mut a, mut b) = (far, back);
        a.observe(&nav(b"/x"), 0, T0 + 1, W);
        b.observe(&nav(b"/x"), 0, T0 + 1, W);
        assert_eq!(a.gaps, b.gaps);
    }

    #[test]
    fn navigations_from_nowhere_are_counted_per_epoch_and_merged() {
        let typed = |path| Event {
            direct: true,
            ..nav(path)
        };
        let s = fed(&[
            (0, typed(b"/")),
            (1_000, nav(b"/a")),
            // A sub-resource's flag is ignored.
            (
                1_100,
                Event {
                    direct: true,
                    ..Event::request(Fetch::Image, b"/i")
                },
            ),
            (2_000, nav(b"/b")),
            (310_000, typed(b"/c")),
            (311_000, typed(b"/d")),
        ]);
        assert_eq!(
            (s.previous.get(Count::Direct), s.current.get(Count::Direct)),
            (1, 2)
        );
        assert_eq!(Snapshot::from_words(&s.to_words()), s);
        let v = s.view(T0 + 311_000, W, true);
        assert_eq!((v.navigations, v.direct_navigations), (5, 3));
        // Two epochs on, the first epoch's arrival is gone.
        let v = s.view(T0 + 600_000, W, true);
        assert_eq!((v.navigations, v.direct_navigations), (2, 2));
        // Merged: added, as every other count.
        let m = s.merge(&s, W);
        assert_eq!(m.view(T0 + 311_000, W, true).direct_navigations, 6);
        let saturated = Snapshot {
            current: Counts([u16::MAX; COUNTERS]),
            previous: Counts([u16::MAX; COUNTERS]),
            ..s
        };
        assert_eq!(Snapshot::from_words(&saturated.to_words()), saturated);
    }

    fn partials() -> Vec<Snapshot> {
        vec![
            Snapshot::default(),
            fed(&[
                (0, nav(b"/a")),
                (3_000, nav(b"/b")),
                (3_001, Event::request(Fetch::Image, b"/i")),
            ]),
            fed(&[
                (1_000, nav(b"/b")),
                (
                    9_000,
                    Event {
                        cookie_returned: true,
                        ..nav(b"/c")
                    },
                ),
            ]),
            // One epoch later: the others' current counts become previous.
            fed(&[
                (310_000, nav(b"/d")),
                (330_000, nav(b"/e")),
                (331_000, nav(b"/e")),
            ]),
            // Three epochs later: the others fall out of the window.
            fed(&[(
                950_000,
                Event {
                    challenge: Some(Challenge::Served),
                    ..nav(b"/f")
                },
            )]),
        ]
    }

    #[test]
    fn merge_is_commutative_with_the_empty_record_as_identity() {
        let all = partials();
        for a in &all {
            assert_eq!(a.merge(&Snapshot::default(), W), *a);
            assert_eq!(Snapshot::default().merge(a, W), *a);
            for b in &all {
                assert_eq!(a.merge(b, W), b.merge(a, W));
            }
        }
    }

    #[test]
    fn merge_aligns_epochs_and_adds_what_each_saw_once() {
        let all = partials();
        let (a, b, c) = (all[1], all[2], all[3]);
        let ab = a.merge(&b, W);
        let v = ab.view(T0 + 9_000, W, true);
        assert_eq!(
            (v.navigations, v.subresources(), v.cookies_returned, v.paths),
            (4, 1, 1, 3)
        );
        assert_eq!(
            (ab.first_seen_s as u64, ab.last_seen_ms),
            (T0 / 1000, T0 + 9_000)
        );
        // Counts equal one stream's: the same five requests in time order.
        let one = fed(&[
            (0, nav(b"/a")),
            (1_000, nav(b"/b")),
            (3_000, nav(b"/b")),
            (3_001, Event::request(Fetch::Image, b"/i")),
            (
                9_000,
                Event {
                    cookie_returned: true,
                    ..nav(b"/c")
                },
            ),
        ]);
        assert_eq!((ab.current, ab.previous), (one.current, one.previous));
        assert_eq!(ab.paths_current, one.paths_current);

        let abc = ab.merge(&c, W);
        assert_eq!(abc.previous, ab.current);
        assert_eq!(abc.current, c.current);
        assert_eq!(abc.view(T0 + 331_000, W, true).navigations, 7);
        // Associative in everything but the floating-point gap pooling.
        let other = a.merge(&b.merge(&c, W), W);
        assert_eq!((other.current, other.previous), (abc.current, abc.previous));
        assert_eq!(
            (other.paths_current, other.first_seen_s),
            (abc.paths_current, abc.first_seen_s)
        );
        assert!((other.gaps.mean_ms - abc.gaps.mean_ms).abs() < 1e-2);
        assert_eq!(other.gaps.count, abc.gaps.count);

        let late = abc.merge(&all[4], W);
        let v = late.view(T0 + 950_000, W, true);
        assert_eq!((v.navigations, v.challenges_served), (1, 1));
    }

    #[test]
    fn merging_a_record_with_itself_keeps_sketches_and_times_and_doubles_counts() {
        for a in partials().iter().filter(|a| !a.is_empty()) {
            let aa = a.merge(a, W);
            assert_eq!(
                (aa.paths_current, aa.paths_previous),
                (a.paths_current, a.paths_previous)
            );
            assert_eq!(
                (aa.first_seen_s, aa.last_seen_ms),
                (a.first_seen_s, a.last_seen_ms)
            );
            assert_eq!(aa.last_navigation_ms, a.last_navigation_ms);
            assert_eq!(aa.current, a.current.plus(a.current));
            assert_eq!(aa.gaps.mean_ms, a.gaps.mean_ms);
            assert_eq!(aa.gaps.count, a.gaps.count * 2);
        }
    }

    #[test]
    fn pooled_gaps_are_the_mixture() {
        let a = Gaps {
            count: 3,
            mean_ms: 1000.0,
            var: 0.0,
        };
        let b = Gaps {
            count: 1,
            mean_ms: 5000.0,
            var: 0.0,
        };
        let p = Gaps::pooled(a, b);
        assert_eq!((p.count, p.mean_ms), (4, 2000.0));
        // (3·1000² + 1·3000²) / 4
        assert_eq!(p.var, 3_000_000.0);
        assert_eq!(Gaps::pooled(a, Gaps::default()), a);
    }
}
