//! Header names as one-letter codes, the `header_order` fingerprint built from
//! them, and how far an order is from the one the claimed browser uses.
//!
//! Browsers emit headers in a fixed order per engine (Chromium puts the client
//! hints first and `accept-language` last, Firefox puts `user-agent` first and
//! the `sec-fetch-*` block near the end); HTTP libraries have their own.
//! Clients that spoof a browser usually keep their library's order.

use super::bytes::starts_with_ci;
use super::user_agent::Family;

/// Code of a header name that is not in [`CODES`]; never in fingerprints.
pub const UNKNOWN: u8 = 0;
/// Code of any `sec-ch-ua-*` header without its own code.
pub const OTHER_CLIENT_HINT: u8 = b'X';
/// Code of any `sec-fetch-*` header without its own code.
pub const OTHER_FETCH: u8 = b'F';

/// Known header names and their codes. Letters are mnemonic where possible;
/// every code is a distinct printable ASCII byte.
pub const CODES: &[(&str, u8)] = &[
    ("host", b'h'),
    ("connection", b'c'),
    ("user-agent", b'u'),
    ("accept", b'a'),
    ("accept-language", b'l'),
    ("accept-encoding", b'e'),
    ("cookie", b'k'),
    ("referer", b'r'),
    ("upgrade-insecure-requests", b'i'),
    ("sec-ch-ua", b'C'),
    ("sec-ch-ua-mobile", b'M'),
    ("sec-ch-ua-platform", b'P'),
    ("sec-fetch-site", b'S'),
    ("sec-fetch-mode", b'O'),
    ("sec-fetch-user", b'U'),
    ("sec-fetch-dest", b'D'),
    ("te", b't'),
    ("priority", b'p'),
    ("cache-control", b'y'),
    ("pragma", b'g'),
    ("dnt", b'n'),
    ("sec-gpc", b'G'),
    ("origin", b'o'),
    ("content-type", b'T'),
    ("content-length", b'L'),
    ("x-requested-with", b'w'),
    ("if-none-match", b'm'),
    ("if-modified-since", b'm'),
    ("range", b'R'),
    ("authorization", b'z'),
    ("keep-alive", b'K'),
    ("accept-charset", b'A'),
    ("x-forwarded-for", b'f'),
    ("purpose", b'Q'),
    ("sec-purpose", b'Q'),
];

/// The lookup key of a name of at least two bytes: its length and its first,
/// last and second-to-last bytes with bit 5 set (ASCII letters lower-cased;
/// other bytes may collide, which the exact comparison after the lookup
/// rejects). Distinct for every name in [`CODES`] (checked when [`SLOTS`] is
/// built).
const fn key(name: &[u8]) -> u64 {
    let n = name.len();
    n as u64
        | ((name[0] | 0x20) as u64) << 8
        | ((name[n - 1] | 0x20) as u64) << 16
        | ((name[n - 2] | 0x20) as u64) << 24
}

/// log2 of the slot count: 128 slots for 35 names.
const SLOT_BITS: u32 = 7;

/// The slot of a key under a multiplier (multiplicative hashing: the top
/// bits of the product).
const fn slot(key: u64, multiplier: u64) -> usize {
    (key.wrapping_mul(multiplier) >> (64 - SLOT_BITS)) as usize
}

/// The multiplier and the table: `table[slot(key(name))]` is 1 + the index
/// in [`CODES`] of the one known name that can be there, 0 for none. The
/// multiplier is the first of a fixed pseudo-random sequence that puts every
/// name of [`CODES`] in its own slot, found at compile time, so adding a
/// name never needs a hand-picked constant (and fails to compile only if no
/// multiplier in the sequence works, which a table this sparse makes
/// vanishingly unlikely).
const SLOTS: (u64, [u8; 1 << SLOT_BITS]) = {
    assert!(CODES.len() < u8::MAX as usize, "indices must fit in u8");
    let mut i = 0;
    while i < CODES.len() {
        assert!(CODES[i].0.len() >= 2, "names are at least two bytes");
        let mut j = 0;
        while j < i {
            assert!(
                key(CODES[i].0.as_bytes()) != key(CODES[j].0.as_bytes()),
                "two names share a lookup key: extend key()"
            );
            j += 1;
        }
        i += 1;
    }
    // splitmix64's increment and output mix.
    let mut state: u64 = 0;
    let mut attempt = 0;
    loop {
        assert!(attempt < 100_000, "no multiplier separates the names");
        attempt += 1;
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut m = state;
        m = (m ^ (m >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        m = (m ^ (m >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        m = (m ^ (m >> 31)) | 1;
        let mut table = [0u8; 1 << SLOT_BITS];
        let mut ok = true;
        let mut i = 0;
        while i < CODES.len() {
            let s = slot(key(CODES[i].0.as_bytes()), m);
            if table[s] != 0 {
                ok = false;
                break;
            }
            table[s] = i as u8 + 1;
            i += 1;
        }
        if ok {
            break (m, table);
        }
    }
};

/// A known name padded to [`LONGEST_PAD`] bytes, with the bits a
/// case-insensitive comparison ignores: bit 5 of each letter. Setting those
/// bits in the candidate and comparing eight bytes at a time is exact
/// (only `A`-`Z`/`a`-`z` differ in bit 5 alone), unlike lower-casing every
/// byte, which cost more than the rest of the lookup.
struct Folded {
    bytes: [u8; LONGEST_PAD],
    case: [u8; LONGEST_PAD],
}

/// The names of [`CODES`] fit in this many bytes.
const LONGEST_PAD: usize = 32;

impl Folded {
    const fn new(name: &[u8]) -> Self {
        assert!(name.len() <= LONGEST_PAD, "header name too long for Folded");
        let mut bytes = [0u8; LONGEST_PAD];
        let mut case = [0u8; LONGEST_PAD];
        let mut i = 0;
        while i < name.len() {
            assert!(!name[i].is_ascii_uppercase(), "known names are lower-case");
            bytes[i] = name[i];
            if name[i].is_ascii_lowercase() {
                case[i] = 0x20;
            }
            i += 1;
        }
        Folded { bytes, case }
    }

    /// Whether `name` (as long as this name, at least two bytes) equals it
    /// ignoring ASCII case.
    ///
    /// Up to 16 bytes (most names) it compares two words that may overlap,
    /// the first and the last, without a loop.
    fn matches(&self, name: &[u8]) -> bool {
        let n = name.len();
        let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
        let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
        let same = |at: usize| word(name, at) | word(&self.case, at) == word(&self.bytes, at);
        let same_half = |at: usize| half(name, at) | half(&self.case, at) == half(&self.bytes, at);
        match n {
            0..=3 => name
                .iter()
                .zip(&self.bytes)
                .zip(&self.case)
                .all(|((&b, &k), &m)| b | m == k),
            4..=7 => same_half(0) && same_half(n - 4),
            8..=16 => same(0) && same(n - 8),
            _ => {
                let mut at = 0;
                loop {
                    // The last word overlaps the one before it when `n` is
                    // not a multiple of eight.
                    let at_end = at + 8 >= n;
                    let w = if at_end { n - 8 } else { at };
                    if !same(w) {
                        return false;
                    }
                    if at_end {
                        return true;
                    }
                    at += 8;
                }
            }
        }
    }
}

/// [`CODES`]' names folded for [`code`], in the same order.
static FOLDED: [Folded; CODES.len()] = {
    let mut folded = [const { Folded::new(b"") }; CODES.len()];
    let mut i = 0;
    while i < CODES.len() {
        folded[i] = Folded::new(CODES[i].0.as_bytes());
        i += 1;
    }
    folded
};

/// The code of a header name (case-insensitive), [`UNKNOWN`] if none.
///
/// One hashed lookup and one comparison: extraction looks up every header
/// of every request, and comparing each name with the known names of its
/// length cost more than all the other features of the walk together.
pub fn code(name: &[u8]) -> u8 {
    confirm(name, candidate(name))
}

/// The first half of [`code`]: the slot entry of `name` (1 + the index in
/// [`CODES`] of the one known name it can be, 0 for none), from its length
/// and three of its bytes. Its one branch, on names shorter than two
/// bytes, is never taken by real traffic and so always predicted.
///
/// The header walk takes this for a run of headers before it confirms any
/// of them: the first read of each name can miss the cache (on the traffic
/// fixture, each name is its own allocation), and with the lookups of the
/// run issued back to back the misses overlap instead of waiting, one by
/// one, behind the branches of the confirmation (extraction 10 % faster
/// for 170 more instructions per request).
#[inline(always)]
pub(crate) fn candidate(name: &[u8]) -> u8 {
    if name.len() < 2 {
        return 0;
    }
    let (multiplier, table) = &SLOTS;
    table[slot(key(name), *multiplier)]
}

/// The second half of [`code`]: `name`'s code given its [`candidate`]
/// entry.
#[inline(always)]
pub(crate) fn confirm(name: &[u8], entry: u8) -> u8 {
    if entry != 0 {
        let i = usize::from(entry - 1);
        if CODES[i].0.len() == name.len() && FOLDED[i].matches(name) {
            return CODES[i].1;
        }
    }
    if name.len() >= 10 && (name[0] | 0x20) == b's' {
        if starts_with_ci(name, b"sec-ch-ua-") {
            return OTHER_CLIENT_HINT;
        }
        if starts_with_ci(name, b"sec-fetch-") {
            return OTHER_FETCH;
        }
    }
    UNKNOWN
}

/// Chromium (Chrome, Edge, Opera, Samsung, headless), HTTP/1.1 and HTTP/2.
const CHROMIUM_ORDER: &[u8] = b"cyCMPXiuaSOUDFrelkp";
/// Firefox, desktop and Android.
const FIREFOX_ORDER: &[u8] = b"ualerckiDOSUFpgyt";
/// Safari, macOS and iOS.
const SAFARI_ORDER: &[u8] = b"aSDOurelkc";

/// A canonical order as a rank per code byte: `ranks[c]` is the position
/// of `c` in the order, `NO_RANK` for codes the order does not rank.
#[derive(Debug)]
pub struct CanonicalOrder {
    ranks: [u8; 128],
}

/// The rank of a code that is not in an order.
const NO_RANK: u8 = u8::MAX;

const fn ranks(order: &[u8]) -> CanonicalOrder {
    assert!(order.len() <= 8 * RANK_WORDS, "inversions counts 24 ranks");
    let mut ranks = [NO_RANK; 128];
    let mut i = 0;
    while i < order.len() {
        assert!(order[i] < 128 && i < NO_RANK as usize);
        ranks[order[i] as usize] = i as u8;
        i += 1;
    }
    CanonicalOrder { ranks }
}

static CHROMIUM: CanonicalOrder = ranks(CHROMIUM_ORDER);
static FIREFOX: CanonicalOrder = ranks(FIREFOX_ORDER);
static SAFARI: CanonicalOrder = ranks(SAFARI_ORDER);

/// The canonical order of the browser a family claims; `None` for clients
/// with no browser order to compare with.
pub fn canonical_order(family: Family) -> Option<&'static CanonicalOrder> {
    match family {
        Family::Chrome
        | Family::HeadlessChrome
        | Family::Edge
        | Family::Opera
        | Family::Samsung => Some(&CHROMIUM),
        Family::Firefox => Some(&FIREFOX),
        Family::Safari => Some(&SAFARI),
        _ => None,
    }
}

/// Most headers a request can have for [`inversions`] to look at; the rest
/// are ignored (no browser sends that many ranked headers).
pub const MAX_RANKED: usize = 64;

/// Counts pairs of headers (both in `order`) that arrived in the opposite of
/// the canonical order. Codes not in `order` are ignored; repeated headers
/// (split cookies) are equal and never count.
///
/// One pass: each header adds the number of earlier headers ranked after
/// it, read from per-rank counts kept one byte per rank in [`RANK_WORDS`]
/// words (a rank's count is at most [`MAX_RANKED`], and so is the sum of all
/// of them, so the bytes never carry and one multiplication adds them up).
/// Comparing every pair cost more than the rest of the order features.
///
/// Without a branch on the header: an unranked code reads rank 0 and adds
/// nothing, and the words above a rank's are summed with selects over all
/// [`RANK_WORDS`]. Skipping unranked codes and looping over the words
/// above branched on every header (the ranks of one request's headers
/// follow no pattern the predictor learns).
pub fn inversions(codes: impl Iterator<Item = u8>, order: &CanonicalOrder) -> u32 {
    let mut counts = [0u64; RANK_WORDS];
    let mut n = 0;
    let mut total = 0;
    for c in codes {
        if n == MAX_RANKED {
            break;
        }
        let rank = order.ranks.get(usize::from(c)).copied().unwrap_or(NO_RANK);
        let ranked = rank != NO_RANK;
        let rank = if ranked { rank } else { 0 };
        n += usize::from(ranked);
        let (w, k) = (usize::from(rank / 8), u32::from(rank % 8));
        // Two shifts: the counts above `k` in word `w` (none for k = 7).
        let mut above = counts[w] >> (8 * k) >> 8;
        for (j, &word) in counts.iter().enumerate() {
            above += if j > w { word } else { 0 };
        }
        let add = (above.wrapping_mul(0x0101_0101_0101_0101) >> 56) as u32;
        total += if ranked { add } else { 0 };
        counts[w] += u64::from(ranked) << (8 * k);
    }
    total
}

/// Words of per-rank counts [`inversions`] keeps: canonical orders rank at
/// most `8 * RANK_WORDS` codes.
const RANK_WORDS: usize = 3;

const _: () = assert!(MAX_RANKED < 256, "inversions' per-rank byte counts");

/// Builds the `header_order` fingerprint in a fixed buffer: the codes of
/// known headers in arrival order, runs of the same code collapsed (HTTP/2
/// splits `cookie` into one header per crumb). When the buffer is full the
/// last byte becomes `+`.
#[derive(Clone, Copy, Debug)]
pub struct Fingerprint<const N: usize> {
    buf: [u8; N],
    len: usize,
    /// The last code appended, [`UNKNOWN`] before the first: kept apart
    /// from `buf` so that collapsing a run is one comparison, without
    /// looking at `len` first. Once the buffer is full, `len == N` alone
    /// says the fingerprint is truncated (every later code only writes
    /// `+` again).
    last: u8,
}

impl<const N: usize> Fingerprint<N> {
    /// An empty fingerprint.
    pub const fn new() -> Self {
        Fingerprint {
            buf: [0; N],
            len: 0,
            last: UNKNOWN,
        }
    }

    /// Forgets every code pushed so far.
    pub fn clear(&mut self) {
        self.len = 0;
        self.last = UNKNOWN;
    }

    /// Appends one header's code.
    pub fn push(&mut self, code: u8) {
        if code == UNKNOWN || code == self.last {
            return;
        }
        if self.len == N {
            self.buf[N - 1] = b'+';
            return;
        }
        self.buf[self.len] = code;
        self.len += 1;
        self.last = code;
    }

    /// The fingerprint so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for Fingerprint<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_per_name_and_printable() {
        for (i, &(a, ca)) in CODES.iter().enumerate() {
            assert!(ca.is_ascii_graphic() && ca != b'+', "{a}");
            assert_eq!(a, a.to_ascii_lowercase());
            for &(b, cb) in &CODES[i + 1..] {
                assert_ne!(a, b);
                // The conditional-request pair and the prefetch pair share on purpose.
                if ca == cb {
                    assert!(matches!(ca, b'm' | b'Q'), "{a} and {b} share a code");
                }
            }
            assert_ne!(ca, OTHER_CLIENT_HINT);
            assert_ne!(ca, OTHER_FETCH);
        }
    }

    #[test]
    fn every_name_is_found() {
        for &(name, c) in CODES {
            assert_eq!(code(name.as_bytes()), c, "{name}");
            assert_eq!(code(name.to_ascii_uppercase().as_bytes()), c, "{name}");
        }
        assert_eq!(code(&[b'a'; 300]), UNKNOWN);
    }

    /// The hashed lookup against a linear scan of [`CODES`], on the known
    /// names with one byte changed (in every position, to every byte) and
    /// with bytes added or removed at either end.
    #[test]
    fn agrees_with_a_linear_scan() {
        let naive = |name: &[u8]| -> u8 {
            if let Some(&(_, c)) = CODES
                .iter()
                .find(|(known, _)| known.as_bytes().eq_ignore_ascii_case(name))
            {
                c
            } else if starts_with_ci(name, b"sec-ch-ua-") {
                OTHER_CLIENT_HINT
            } else if starts_with_ci(name, b"sec-fetch-") {
                OTHER_FETCH
            } else {
                UNKNOWN
            }
        };
        let mut checked = 0;
        for &(known, _) in CODES {
            let known = known.as_bytes();
            for i in 0..known.len() {
                for b in 0..=255u8 {
                    let mut name = known.to_vec();
                    name[i] = b;
                    assert_eq!(code(&name), naive(&name), "{name:?}");
                    checked += 1;
                }
            }
            for n in 0..known.len() {
                assert_eq!(code(&known[n..]), naive(&known[n..]));
                assert_eq!(code(&known[..n]), naive(&known[..n]));
            }
            let longer = [known, b"-x"].concat();
            assert_eq!(code(&longer), naive(&longer));
        }
        assert!(checked > 50_000);
    }

    #[test]
    fn looks_up_case_insensitively() {
        assert_eq!(code(b"User-Agent"), b'u');
        assert_eq!(code(b"sec-ch-ua"), b'C');
        assert_eq!(code(b"Sec-CH-UA-Full-Version-List"), OTHER_CLIENT_HINT);
        assert_eq!(code(b"sec-fetch-storage-access"), OTHER_FETCH);
        assert_eq!(code(b"x-custom"), UNKNOWN);
        assert_eq!(code(b""), UNKNOWN);
    }

    #[test]
    fn canonical_orders_have_no_repeats() {
        for order in [CHROMIUM_ORDER, FIREFOX_ORDER, SAFARI_ORDER] {
            for (i, c) in order.iter().enumerate() {
                assert!(!order[i + 1..].contains(c));
                assert!(
                    CODES.iter().any(|&(_, k)| k == *c)
                        || *c == OTHER_CLIENT_HINT
                        || *c == OTHER_FETCH
                );
            }
        }
    }

    #[test]
    fn counts_inversions() {
        let order = &CHROMIUM;
        assert_eq!(inversions(b"CMPiuaSOUDelk".iter().copied(), order), 0);
        // python-requests order with a Chrome UA: u e a c
        assert_eq!(inversions(b"ueac".iter().copied(), order), 4);
        assert_eq!(inversions(b"lu".iter().copied(), order), 1);
        assert_eq!(inversions(b"kkk".iter().copied(), order), 0);
        assert_eq!(inversions(b"hQ".iter().copied(), order), 0);
        assert_eq!(inversions(std::iter::repeat_n(b'k', 500), order), 0);
        assert!(canonical_order(Family::Curl).is_none());
    }

    /// The pair-by-pair count [`inversions`] replaced.
    fn inversions_oracle(codes: impl Iterator<Item = u8>, order: &CanonicalOrder) -> u32 {
        let mut ranks = [0u8; MAX_RANKED];
        let mut n = 0;
        for c in codes {
            if n == MAX_RANKED {
                break;
            }
            let rank = order.ranks.get(usize::from(c)).copied().unwrap_or(NO_RANK);
            if rank != NO_RANK {
                ranks[n] = rank;
                n += 1;
            }
        }
        let ranks = &ranks[..n];
        let mut count = 0;
        for (i, &a) in ranks.iter().enumerate() {
            for &b in &ranks[i + 1..] {
                count += u32::from(b < a);
            }
        }
        count
    }

    /// On the header orders of the fixtures and on random code sequences
    /// (repeats, unranked codes, more than [`MAX_RANKED`] codes), against
    /// each canonical order.
    #[test]
    fn inversions_agree_with_comparing_every_pair() {
        let mut sequences: Vec<Vec<u8>> = crate::features::corpus::requests()
            .iter()
            .map(|r| r.headers.iter().map(|(name, _)| code(name)).collect())
            .collect();
        let alphabet: Vec<u8> = CODES
            .iter()
            .map(|&(_, c)| c)
            .chain([UNKNOWN, OTHER_CLIENT_HINT, OTHER_FETCH, b'+', 200])
            .collect();
        let mut rng = crate::features::corpus::Rng::new(0x1a_7e55);
        for _ in 0..20_000 {
            let len = rng.below(90);
            sequences.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect(),
            );
        }
        // The largest counts: 64 ranked headers, the last-ranked ones
        // (Chromium's `p`, Firefox's `t`) first, then the first-ranked.
        for (last, first) in [(b'p', b'c'), (b't', b'u'), (b'c', b'a')] {
            sequences.push([vec![last; 40], vec![first; 40]].concat());
        }
        for seq in &sequences {
            for order in [&CHROMIUM, &FIREFOX, &SAFARI] {
                assert_eq!(
                    inversions(seq.iter().copied(), order),
                    inversions_oracle(seq.iter().copied(), order),
                    "{:?}",
                    String::from_utf8_lossy(seq)
                );
            }
        }
    }

    #[test]
    fn fingerprint_collapses_and_truncates() {
        let mut f = Fingerprint::<4>::new();
        for c in [b'h', UNKNOWN, b'u', b'k', b'k', b'a'] {
            f.push(c);
        }
        assert_eq!(f.as_bytes(), b"huka");
        f.push(b'e');
        f.push(b'l');
        assert_eq!(f.as_bytes(), b"huk+");
        f.clear();
        assert_eq!(f.as_bytes(), b"");
    }

    /// The fingerprint the plain way: the known codes with runs collapsed,
    /// and past `n` runs the first `n - 1` and a `+`.
    fn fingerprint_oracle(codes: &[u8], n: usize) -> Vec<u8> {
        let mut runs: Vec<u8> = codes.iter().copied().filter(|&c| c != UNKNOWN).collect();
        runs.dedup();
        if runs.len() > n {
            runs.truncate(n - 1);
            runs.push(b'+');
        }
        runs
    }

    /// [`Fingerprint`] (its `last` code and `len == N` standing for the
    /// truncation flag) against the plain definition, on random code
    /// sequences with runs, unknown codes between equal ones, and lengths
    /// on both sides of the buffer size, cleared and refilled.
    #[test]
    fn fingerprint_agrees_with_collapsing_runs() {
        fn check<const N: usize>(f: &mut Fingerprint<N>, codes: &[u8]) {
            f.clear();
            for &c in codes {
                f.push(c);
            }
            assert_eq!(f.as_bytes(), &fingerprint_oracle(codes, N)[..], "{codes:?}");
        }
        let alphabet = [UNKNOWN, b'h', b'u', b'k', b'a', OTHER_FETCH];
        let mut rng = crate::features::corpus::Rng::new(0xf1_9e4b);
        let (mut small, mut full) = (Fingerprint::<4>::new(), Fingerprint::<32>::new());
        for _ in 0..50_000 {
            let len = rng.below(90);
            let mut codes = Vec::with_capacity(len);
            while codes.len() < len {
                let c = alphabet[rng.below(alphabet.len())];
                for _ in 0..1 + rng.below(3) {
                    codes.push(c);
                }
            }
            check(&mut small, &codes);
            check(&mut full, &codes);
        }
        let distinct: Vec<u8> = (0..80).map(|i| [b'a', b'b'][i % 2]).collect();
        for len in 0..distinct.len() {
            check(&mut small, &distinct[..len]);
            check(&mut full, &distinct[..len]);
        }
    }
}
