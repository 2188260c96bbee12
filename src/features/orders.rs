//! Header orders learnt from people's browsers: the `order_reversed_pairs`
//! feature of schema 2.
//!
//! No table here says which order a browser uses. `models/train.py` runs
//! `edgeguard features --learn-orders` over the human requests of its
//! training data (captured browsers and generated ones); that counts, per
//! browser engine the User-Agent claims, every ordered pair of known headers
//! (`a` arrived before `b`) and keeps the pairs seen often enough. The
//! result travels in each model's metadata ([`ORDERS_KEY`]), and a request's
//! feature is the number of its header pairs that arrived in an order
//! people's browsers of that engine were never seen to use although they
//! were seen to send the two the other way round. A pair never seen in
//! either order says nothing about order (a header the engine was not seen
//! to send, e.g. `pragma` on a reload, is a question for the other
//! features), so a new header does not count against a request; a browser
//! release that moves one header changes a few pairs, not the whole order,
//! and retraining learns it.
//!
//! Text form (what the metadata holds): engines separated by `;`, each
//! `engine:` followed by space-separated two-byte pairs of
//! [`header_order`](super::header_order) codes, `ab` meaning "`a` before `b`
//! was seen", e.g. `chromium:CM CP Cu;gecko:ua ul`. Engines and pairs are
//! written sorted, so one table has one text.

use std::fmt::Write as _;

use super::header_order::{CODES, OTHER_CLIENT_HINT, OTHER_FETCH};
use super::user_agent::{Family, Os, UserAgent};

/// The metadata key holding the learnt order table.
pub const ORDERS_KEY: &str = "edgeguard.order_pairs";

/// The browser engine a User-Agent claims: orders are learnt per engine
/// (every Chromium-based browser shares Chromium's network stack, every iOS
/// browser WebKit's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Chrome, Edge, Opera, Samsung Internet, headless Chrome, off iOS.
    Chromium,
    /// Firefox, off iOS.
    Gecko,
    /// Safari, and every browser on iOS.
    WebKit,
    /// A `Mozilla/` UA of no known family.
    Other,
}

impl Engine {
    /// Every engine, in table order. Not public: cbindgen would see the
    /// type in a public constant and put it in the C header.
    const ALL: [Engine; 4] = [
        Engine::Chromium,
        Engine::Gecko,
        Engine::WebKit,
        Engine::Other,
    ];

    /// The name used in the text form.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Chromium => "chromium",
            Engine::Gecko => "gecko",
            Engine::WebKit => "webkit",
            Engine::Other => "other",
        }
    }

    /// The engine the User-Agent claims; `None` for clients that claim no
    /// browser (their orders are their library's, and `ua_family` says which).
    pub fn of(ua: &UserAgent) -> Option<Engine> {
        if !ua.claim.is_browser() {
            return None;
        }
        // Every iOS browser is Apple's WebKit, and says so by its token
        // even in iPad's desktop (`Macintosh`) UA.
        if ua.os == Os::Ios || ua.ios_app {
            return Some(Engine::WebKit);
        }
        Some(match ua.claim {
            Family::Firefox => Engine::Gecko,
            Family::Safari => Engine::WebKit,
            f if f.is_chromium() => Engine::Chromium,
            _ => Engine::Other,
        })
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Whether a schema-4 table learns this engine's orders: Chromium's and
    /// Firefox's, which real captures show. WebKit's depends on the
    /// version and the platform (Safari 15.5, 17 and 26 each send another
    /// order over HTTP/2, WebKitGTK its own: curl-impersonate's and
    /// curl_cffi's captures) and the generated heads only guess it; an
    /// order never learnt is no evidence either way.
    pub fn software_orders(self) -> bool {
        matches!(self, Engine::Chromium | Engine::Gecko)
    }
}

/// The header codes a schema-4 table learns the order of: what a browser
/// sends because of what it is (`host`, `connection`, `user-agent`,
/// `accept`, `upgrade-insecure-requests`, client hints, fetch metadata,
/// `te`, `priority`). The headers of the page or the visit (`cookie`,
/// `referer`, `origin`, `cache-control`, `pragma`, the conditional and
/// range headers, the body's, `authorization`) and of the person's
/// settings (`dnt`, `sec-gpc`) come and go with the visit, and where an
/// engine puts them is known for the captured builds only. Nor
/// `accept-language` and `accept-encoding`: Chromium's embedders and
/// versions move them (captured, QtWebEngine 5.15 / Chromium 87:
/// qutebrowser sends `accept-language` before fetch metadata, and media
/// requests put `accept-encoding` before `accept`; held out of the
/// training, 917 of its 1 811 requests reversed a pair of Chromium 156's
/// with them, 0 without).
pub const SOFTWARE_CODES: &[u8] = b"hcuaiCMPSOUDXFtp";

/// Most distinct header codes a table ranks (one bit each in a `u64`).
const RANKED: usize = 64;

/// `INDEX[code]`: 1 + the dense position of a header code, 0 for bytes that
/// are no code. Built from [`CODES`], so a header added there is learnt too.
const INDEX: [u8; 128] = {
    let mut index = [0u8; 128];
    let mut next = 1u8;
    let mut i = 0;
    while i <= CODES.len() + 1 {
        let code = if i < CODES.len() {
            CODES[i].1
        } else if i == CODES.len() {
            OTHER_CLIENT_HINT
        } else {
            OTHER_FETCH
        };
        assert!(code < 128, "header codes are ASCII");
        if index[code as usize] == 0 {
            index[code as usize] = next;
            next += 1;
        }
        i += 1;
    }
    assert!(
        (next as usize) <= RANKED + 1,
        "too many header codes for a u64 row"
    );
    index
};

/// `CODE_OF[i]`: the header code at dense position `i`.
const CODE_OF: [u8; RANKED] = {
    let mut codes = [0u8; RANKED];
    let mut c = 0;
    while c < 128 {
        if INDEX[c] != 0 {
            codes[INDEX[c] as usize - 1] = c as u8;
        }
        c += 1;
    }
    codes
};

fn position(code: u8) -> Option<usize> {
    match INDEX.get(usize::from(code)) {
        Some(&i) if i != 0 => Some(usize::from(i) - 1),
        _ => None,
    }
}

/// Calls `f(a, b)` once for each distinct ordered pair of distinct header
/// positions in `codes` (`a` arrived before `b`). Codes that rank nothing
/// are skipped; a header repeated (split cookies) adds no pair with itself.
fn for_each_pair(codes: &[u8], mut f: impl FnMut(usize, usize)) {
    let mut done = [0u64; RANKED];
    for (i, &a) in codes.iter().enumerate() {
        let Some(a) = position(a) else { continue };
        for &b in &codes[i + 1..] {
            let Some(b) = position(b) else { continue };
            if a != b && done[a] & (1 << b) == 0 {
                done[a] |= 1 << b;
                f(a, b);
            }
        }
    }
}

/// The ordered header pairs people's browsers were seen to send, per engine.
#[derive(Clone, PartialEq, Eq)]
pub struct OrderTable {
    /// `seen[engine][a]` has bit `b` set when `a` before `b` was seen.
    seen: [[u64; RANKED]; Engine::ALL.len()],
    /// Derived from `seen` ([`OrderTable::derived`]): `only[engine][b]` has
    /// bit `a` set when `b` before `a` was seen and `a` before `b` never
    /// was, the pairs [`OrderTable::reversed_pairs`] counts.
    only: [[u64; RANKED]; Engine::ALL.len()],
}

impl std::fmt::Debug for OrderTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl OrderTable {
    /// A table that has seen nothing: every pair is unseen.
    pub fn empty() -> Self {
        OrderTable {
            seen: [[0; RANKED]; Engine::ALL.len()],
            only: [[0; RANKED]; Engine::ALL.len()],
        }
    }

    /// The table with `only` computed from `seen`: every constructor
    /// ends here.
    fn derived(mut self) -> Self {
        for (seen, only) in self.seen.iter().zip(&mut self.only) {
            for (b, only_b) in only.iter_mut().enumerate() {
                *only_b = 0;
                for (a, &row_a) in seen.iter().enumerate() {
                    if seen[b] & (1 << a) != 0 && row_a & (1 << b) == 0 {
                        *only_b |= 1 << a;
                    }
                }
            }
        }
        self
    }

    /// Reads the text form (see the module docs). Errors name the engine or
    /// pair at fault.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut table = OrderTable::empty();
        let mut given = [false; Engine::ALL.len()];
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, pairs) = part
                .split_once(':')
                .ok_or_else(|| format!("`{}`: expected `engine: pairs`", clip(part)))?;
            let name = name.trim();
            let engine = Engine::ALL
                .into_iter()
                .find(|e| e.name() == name)
                .ok_or_else(|| {
                    format!(
                        "unknown engine `{}` (known: chromium, gecko, webkit, other)",
                        clip(name)
                    )
                })?;
            if given[engine.index()] {
                return Err(format!("engine `{name}` is given twice"));
            }
            given[engine.index()] = true;
            for pair in pairs.split_ascii_whitespace() {
                let bytes = pair.as_bytes();
                let (a, b) = match bytes {
                    [a, b] => (position(*a), position(*b)),
                    _ => (None, None),
                };
                match (a, b) {
                    (Some(a), Some(b)) if a != b => table.seen[engine.index()][a] |= 1 << b,
                    _ => {
                        return Err(format!(
                            "engine `{name}`: `{}` is not a pair of two different header codes",
                            clip(pair)
                        ))
                    }
                }
            }
        }
        Ok(table.derived())
    }

    /// The text form, sorted: equal tables give equal text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for engine in Engine::ALL {
            let rows = &self.seen[engine.index()];
            if rows.iter().all(|&r| r == 0) {
                continue;
            }
            let mut pairs: Vec<[u8; 2]> = Vec::new();
            for (a, &row) in rows.iter().enumerate() {
                for (b, &code) in CODE_OF.iter().enumerate() {
                    if row & (1 << b) != 0 {
                        pairs.push([CODE_OF[a], code]);
                    }
                }
            }
            pairs.sort_unstable();
            if !out.is_empty() {
                out.push(';');
            }
            let _ = write!(out, "{}:", engine.name());
            for (i, p) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push(char::from(p[0]));
                out.push(char::from(p[1]));
            }
        }
        out
    }

    /// How many distinct ordered pairs of `codes` (header codes in arrival
    /// order, `a` before `b`) browsers of `engine` were seen to send only
    /// the other way round (`b` before `a`, never `a` before `b`).
    /// Allocates nothing.
    ///
    /// A distinct pair `a` before `b` is in `codes` when the first `a`
    /// comes before the last `b`. One pass notes, at each header's last
    /// occurrence, the set of headers that came first before it; each
    /// header `b` then adds the pairs of that set in `only[b]`, one
    /// population count (the pairs were enumerated one by one, twice).
    pub fn reversed_pairs(&self, engine: Engine, codes: &[u8]) -> u32 {
        let only = &self.only[engine.index()];
        let codes = &codes[..codes.len().min(MAX_CODES)];
        let mut before = 0u64;
        let mut before_last = [0u64; RANKED];
        for &c in codes {
            let Some(p) = position(c) else { continue };
            before_last[p] = before;
            before |= 1 << p;
        }
        let mut reversed = 0;
        let mut present = before;
        while present != 0 {
            let b = present.trailing_zeros() as usize;
            // `only[b]` never has bit `b`: `b` before `b` is no pair.
            reversed += (before_last[b] & only[b]).count_ones();
            present &= present - 1;
        }
        reversed
    }
}

/// Most header codes [`OrderTable::reversed_pairs`] looks at (as many as
/// the feature walk keeps).
const MAX_CODES: usize = super::header_order::MAX_RANKED;

/// Counts ordered header pairs over many requests, to build a table.
pub struct OrderCounts {
    counts: Vec<u32>,
}

impl Default for OrderCounts {
    fn default() -> Self {
        OrderCounts {
            counts: vec![0; Engine::ALL.len() * RANKED * RANKED],
        }
    }
}

impl OrderCounts {
    /// Adds one request's pairs (each distinct pair once).
    pub fn add(&mut self, engine: Engine, codes: &[u8]) {
        let base = engine.index() * RANKED * RANKED;
        let counts = &mut self.counts;
        for_each_pair(codes, |a, b| counts[base + a * RANKED + b] += 1);
    }

    /// The table of the pairs seen in at least `min_count` requests.
    pub fn table(&self, min_count: u32) -> OrderTable {
        let mut table = OrderTable::empty();
        for engine in Engine::ALL {
            for a in 0..RANKED {
                for b in 0..RANKED {
                    let n = self.counts[engine.index() * RANKED * RANKED + a * RANKED + b];
                    if n > 0 && n >= min_count {
                        table.seen[engine.index()][a] |= 1 << b;
                    }
                }
            }
        }
        table.derived()
    }
}

fn clip(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::header_order::code;

    fn codes(names: &[&str]) -> Vec<u8> {
        names.iter().map(|n| code(n.as_bytes())).collect()
    }

    /// The bit-parallel count against the pair enumeration used for
    /// learning, on pseudo-random code sequences with repeats and codes that
    /// rank nothing, and random tables.
    /// The definition: the pairs of the first [`MAX_CODES`] codes that
    /// people's browsers (`rows`) were seen sending only the other way.
    fn reversed_by_enumeration(rows: &[u64; RANKED], seq: &[u8]) -> u32 {
        let mut n = 0;
        for_each_pair(&seq[..seq.len().min(MAX_CODES)], |a, b| {
            if rows[a] & (1 << b) == 0 && rows[b] & (1 << a) != 0 {
                n += 1;
            }
        });
        n
    }

    #[test]
    fn reversed_pairs_agree_with_enumerating_pairs() {
        let mut rng = fastrand::Rng::with_seed(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.u64(..);
        let alphabet: Vec<u8> = CODE_OF
            .iter()
            .copied()
            .filter(|&c| c != 0)
            .chain([0, b'+'])
            .collect();
        for _ in 0..2000 {
            let mut table = OrderTable::empty();
            for row in table.seen[0].iter_mut() {
                *row = next() & next();
            }
            let table = table.derived();
            let len = (next() % 70) as usize;
            let seq: Vec<u8> = (0..len)
                .map(|_| {
                    alphabet[(next() % 8 + (next() % alphabet.len() as u64 / 4) * 4) as usize
                        % alphabet.len()]
                })
                .collect();
            assert_eq!(
                table.reversed_pairs(Engine::Chromium, &seq),
                reversed_by_enumeration(&table.seen[0], &seq),
                "{seq:?}"
            );
        }
    }

    /// The bit-parallel count against the pair enumeration on hostile
    /// sequences: one header repeated many times among others, every code
    /// once in random order, longer than [`MAX_CODES`], empty, and codes
    /// that rank nothing; random tables for every engine.
    #[test]
    fn reversed_pairs_agree_on_hostile_sequences() {
        let mut rng = crate::features::corpus::Rng::new(0x0dd_0bde5);
        let alphabet: Vec<u8> = CODE_OF
            .iter()
            .copied()
            .filter(|&c| c != 0)
            .chain([0, b'+', 200])
            .collect();
        for round in 0..6000 {
            let mut table = OrderTable::empty();
            for rows in table.seen.iter_mut() {
                for row in rows.iter_mut() {
                    *row = rng.next() & rng.next() & (rng.next() | rng.next());
                }
            }
            let table = table.derived();
            let seq: Vec<u8> = match round % 4 {
                0 => {
                    let few = [alphabet[rng.below(alphabet.len())], alphabet[rng.below(5)]];
                    (0..rng.below(140)).map(|_| few[rng.below(2)]).collect()
                }
                1 => {
                    let mut all = alphabet.clone();
                    rng.shuffle(&mut all);
                    all
                }
                _ => (0..rng.below(140))
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect(),
            };
            for engine in Engine::ALL {
                let naive = reversed_by_enumeration(&table.seen[engine.index()], &seq);
                assert_eq!(table.reversed_pairs(engine, &seq), naive, "{seq:?}");
            }
        }
        assert_eq!(OrderTable::empty().reversed_pairs(Engine::Chromium, &[]), 0);
    }

    #[test]
    fn every_code_has_a_position_and_back() {
        for &(name, c) in CODES {
            let p = position(c).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(CODE_OF[p], c);
        }
        assert!(position(OTHER_CLIENT_HINT).is_some());
        assert!(position(OTHER_FETCH).is_some());
        assert_eq!(position(0), None);
        assert_eq!(position(b'+'), None);
        assert_eq!(position(200), None);
    }

    #[test]
    fn learns_pairs_and_counts_unseen_ones() {
        let chrome_nav = codes(&[
            "host",
            "sec-ch-ua",
            "sec-ch-ua-mobile",
            "user-agent",
            "accept",
        ]);
        let mut counts = OrderCounts::default();
        counts.add(Engine::Chromium, &chrome_nav);
        counts.add(Engine::Chromium, &chrome_nav);
        let table = counts.table(2);
        assert_eq!(table.reversed_pairs(Engine::Chromium, &chrome_nav), 0);
        // One header moved: only the pairs it is in change.
        let moved = codes(&[
            "host",
            "sec-ch-ua-mobile",
            "sec-ch-ua",
            "user-agent",
            "accept",
        ]);
        assert_eq!(table.reversed_pairs(Engine::Chromium, &moved), 1);
        // python-requests' order with a Chrome UA: every pair reversed.
        let library = codes(&["host", "user-agent", "accept", "sec-ch-ua"]);
        assert_eq!(table.reversed_pairs(Engine::Chromium, &library), 2);
        // A header never seen with the others adds nothing...
        let reload = codes(&[
            "host",
            "sec-ch-ua",
            "pragma",
            "sec-ch-ua-mobile",
            "user-agent",
            "accept",
        ]);
        assert_eq!(table.reversed_pairs(Engine::Chromium, &reload), 0);
        // ... and an engine that has seen nothing finds nothing reversed.
        assert_eq!(table.reversed_pairs(Engine::Gecko, &library), 0);
        // Pairs seen both ways (Firefox's Referer and Connection) never count.
        let both = OrderTable::parse("gecko:rc cr").unwrap();
        assert_eq!(
            both.reversed_pairs(Engine::Gecko, &codes(&["referer", "connection"])),
            0
        );
        assert_eq!(
            both.reversed_pairs(Engine::Gecko, &codes(&["connection", "referer"])),
            0
        );
        // Below the minimum count nothing is kept.
        assert_eq!(counts.table(3), OrderTable::empty());
    }

    #[test]
    fn repeats_and_unknown_headers_add_no_pairs() {
        let table = OrderTable::parse("chromium:kh").unwrap();
        let split_cookies = codes(&["host", "cookie", "cookie", "x-custom", "cookie"]);
        assert_eq!(table.reversed_pairs(Engine::Chromium, &split_cookies), 1);
        assert_eq!(
            table.reversed_pairs(Engine::Chromium, &codes(&["x-a", "x-b"])),
            0
        );
        let long = vec![code(b"cookie"); 500];
        assert_eq!(table.reversed_pairs(Engine::Chromium, &long), 0);
    }

    #[test]
    fn text_round_trips_sorted() {
        let text = "gecko:ua ul;chromium:Cu CM";
        let table = OrderTable::parse(text).unwrap();
        assert_eq!(table.to_text(), "chromium:CM Cu;gecko:ua ul");
        assert_eq!(OrderTable::parse(&table.to_text()).unwrap(), table);
        assert_eq!(OrderTable::parse("").unwrap(), OrderTable::empty());
        assert_eq!(OrderTable::empty().to_text(), "");
    }

    #[test]
    fn bad_text_is_refused_with_the_place() {
        for (text, want) in [
            ("chromium", "expected `engine: pairs`"),
            ("blink:ua", "unknown engine `blink`"),
            ("gecko:ua;gecko:ul", "`gecko` is given twice"),
            ("gecko:uaX", "`uaX` is not a pair"),
            ("gecko:uu", "`uu` is not a pair"),
            ("gecko:u+", "`u+` is not a pair"),
        ] {
            let err = OrderTable::parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn engines_follow_the_claimed_browser() {
        use crate::features::user_agent::parse;
        let engine = |ua: &str| Engine::of(&parse(ua.as_bytes()));
        assert_eq!(
            engine("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"),
            Some(Engine::Chromium)
        );
        assert_eq!(
            engine("Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0"),
            Some(Engine::Gecko)
        );
        assert_eq!(
            engine("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1"),
            Some(Engine::WebKit)
        );
        assert_eq!(engine("curl/8.5.0"), None);
        assert_eq!(engine(""), None);
    }
}
