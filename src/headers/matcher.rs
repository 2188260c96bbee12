//! The lookup structures behind a [`HeaderSet`](super::HeaderSet): a cheap
//! rejection filter, trie-hard for exact names, and a short list of prefixes.
//!
//! Everything here works on *folded* bytes (see [`fold`]); list entries are
//! folded once at load, request keys byte by byte as they are read.

use trie_hard::TrieHard;

/// The longest name a list may hold, in bytes (a prefix rule's `*` not
/// counted). Real header names are far shorter; the limit bounds the stack
/// buffer a lookup folds a name into.
pub const MAX_NAME_LEN: usize = 256;

/// ASCII upper case to lower case, `_` to `-`, every other byte unchanged.
static FOLD: [u8; 256] = fold_table();

const fn fold_table() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = match b {
            b'A'..=b'Z' => b + (b'a' - b'A'),
            // CGI, PHP and WSGI turn both `-` and `_` into `_`, so the two must
            // name the same header here or `X_Internal_Id` slips through.
            b'_' => b'-',
            _ => b,
        };
        i += 1;
    }
    table
}

/// The byte as both sides of a comparison see it.
#[inline(always)]
pub(super) fn fold(b: u8) -> u8 {
    FOLD[usize::from(b)]
}

/// Whether two header names are the same name once folded (the reference
/// the filter and trie are tested against).
#[cfg(test)]
pub(super) fn folded_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| fold(x) == fold(y))
}

/// log2 of the filter size in bits: 8192 bits (1 KiB) keeps a few hundred
/// names at a false-positive rate of a few percent while staying in L1.
const FILTER_BITS_LOG2: u32 = 13;
const FILTER_WORDS: usize = (1 << FILTER_BITS_LOG2) / 64;

/// A one-hash Bloom filter over (length, first, middle, last folded byte) of
/// the exact names.
///
/// Most request headers are not internal, so the cost of the whole matcher is
/// the cost of saying "no". Four loads, one multiply and one bit test say it
/// for almost every name, without folding the name or walking the trie.
#[derive(Clone)]
struct Filter {
    bits: [u64; FILTER_WORDS],
}

impl Filter {
    /// The bit for a name of `len` bytes; `name` may be raw or folded.
    #[inline(always)]
    fn slot(name: &[u8]) -> usize {
        let len = name.len();
        debug_assert!((1..=MAX_NAME_LEN).contains(&len));
        let first = u64::from(fold(name[0]));
        let middle = u64::from(fold(name[len / 2]));
        let last = u64::from(fold(name[len - 1]));
        let key = len as u64 | first << 16 | middle << 24 | last << 32;
        // Fibonacci hashing: the top bits of the product mix every input bit.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_BITS_LOG2)) as usize
    }

    fn new<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> Filter {
        let mut filter = Filter {
            bits: [0; FILTER_WORDS],
        };
        for name in names {
            let slot = Filter::slot(name);
            filter.bits[slot / 64] |= 1 << (slot % 64);
        }
        filter
    }

    /// False only if no exact name can equal `name` once folded.
    #[inline(always)]
    fn may_contain(&self, name: &[u8]) -> bool {
        if name.is_empty() || name.len() > MAX_NAME_LEN {
            return false;
        }
        let slot = Filter::slot(name);
        self.bits[slot / 64] & (1 << (slot % 64)) != 0
    }
}

/// Which rules a name matched: the list's own, or only rules a set was
/// extended with (the score header's names). `Listed` orders above `Extra`,
/// so where both match, the list's rule wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rule {
    Extra,
    Listed,
}

/// The trie borrows its keys; this is the shape self_cell needs to name it.
type Trie<'keys> = TrieHard<'keys, Rule>;

self_cell::self_cell!(
    /// trie-hard over key bytes the same allocation owns, so a set can be
    /// dropped and rebuilt on every reload without leaking its keys.
    struct OwnedTrie {
        owner: Vec<u8>,
        #[covariant]
        dependent: Trie,
    }
);

/// Bytes put before each name in the trie: its length less one, then its
/// last byte.
///
/// trie-hard walks one node per byte until only one key is left below, then
/// compares the rest at once. Internal names share long beginnings
/// (`x-forwarded-`, `x-amzn-mtls-clientcert-`), so a trie of plain names
/// walks most of every name; led by length and last byte, keys part ways
/// within a few bytes. The name follows in full, so equal keys still mean
/// equal names.
const KEY_HEAD: usize = 2;
// The length byte holds `len - 1`.
const _: () = assert!(MAX_NAME_LEN - 1 <= u8::MAX as usize);

/// The exact-name half of a set.
pub(super) struct ExactNames {
    filter: Filter,
    trie: OwnedTrie,
}

impl ExactNames {
    /// `names` are folded, distinct, non-empty and at most [`MAX_NAME_LEN`]
    /// bytes long (the list parser guarantees all four).
    /// A name in both lists is `Listed`. One trie and one filter serve both
    /// kinds, so extending a set costs a request nothing.
    pub(super) fn new(listed: &[Vec<u8>], extra: &[Vec<u8>]) -> ExactNames {
        let names: Vec<(&[u8], Rule)> = listed
            .iter()
            .map(|n| (n.as_slice(), Rule::Listed))
            .chain(
                extra
                    .iter()
                    .filter(|n| !listed.contains(n))
                    .map(|n| (n.as_slice(), Rule::Extra)),
            )
            .collect();
        let filter = Filter::new(names.iter().map(|&(name, _)| name));
        let mut keys = Vec::with_capacity(names.iter().map(|(n, _)| KEY_HEAD + n.len()).sum());
        let mut ends = Vec::with_capacity(names.len());
        for &(name, rule) in &names {
            let head = key_head(name.len(), name[name.len() - 1]);
            keys.extend_from_slice(&head);
            keys.extend_from_slice(name);
            ends.push((keys.len(), rule));
        }
        let trie = OwnedTrie::new(keys, |keys| {
            let mut start = 0;
            let entries = ends
                .iter()
                .map(|&(end, rule)| {
                    let key = &keys[start..end];
                    start = end;
                    (key, rule)
                })
                .collect();
            TrieHard::new(entries)
        });
        ExactNames { filter, trie }
    }

    /// Whether `name` (raw: any case, `_` or `-`) is one of the exact names.
    #[inline]
    pub(super) fn get(&self, name: &[u8]) -> Option<Rule> {
        if !self.filter.may_contain(name) {
            return None;
        }
        // The filter let through only names of 1..=MAX_NAME_LEN bytes.
        let mut key = [0u8; KEY_HEAD + MAX_NAME_LEN];
        let key = &mut key[..KEY_HEAD + name.len()];
        let (head, folded) = key.split_at_mut(KEY_HEAD);
        head.copy_from_slice(&key_head(name.len(), fold(name[name.len() - 1])));
        for (dst, &src) in folded.iter_mut().zip(name) {
            *dst = fold(src);
        }
        self.trie.borrow_dependent().get_from_bytes(key)
    }
}

/// The [`KEY_HEAD`] bytes for a name of `len` (1..=256) bytes ending in the
/// folded byte `last`.
#[inline(always)]
fn key_head(len: usize, last: u8) -> [u8; KEY_HEAD] {
    debug_assert!((1..=MAX_NAME_LEN).contains(&len));
    [(len - 1) as u8, last]
}

/// Eight bytes folded at once, as [`fold`] folds each: the prefix filter
/// folds a name's first bytes on every call, so this keeps it branch-free.
#[inline(always)]
fn fold8(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    // Each lane's low seven bits plus a constant below 0x80 stays below 0x100,
    // so no lane carries into the next.
    let low = x & !HIGH;
    let at_least_a = (low + ONES * u64::from(0x80 - b'A')) & HIGH;
    let above_z = (low + ONES * u64::from(0x80 - b'Z' - 1)) & HIGH;
    // Bytes of 0x80 and above are not ASCII and never fold.
    let upper = at_least_a & !above_z & !x;
    let x = x | (upper >> 2);
    // Exact zero-byte test on x ^ "________": 0x80 where a lane was `_`.
    let t = x ^ (ONES * u64::from(b'_'));
    let underscore = !((((t & !HIGH) + !HIGH) | t) | !HIGH);
    // `_` (0x5F) minus 0x32 is `-` (0x2D); no lane borrows.
    x - (underscore >> 7) * u64::from(b'_' - b'-')
}

/// The first `n` (1..=8) bytes of `name`, folded, packed little-endian.
#[inline(always)]
fn folded_head(name: &[u8], n: usize) -> u64 {
    debug_assert!((1..=8).contains(&n) && n <= name.len());
    let mask = u64::MAX >> (64 - 8 * n);
    match name.first_chunk::<8>() {
        Some(head) => fold8(u64::from_le_bytes(*head)) & mask,
        None => name[..n]
            .iter()
            .rev()
            .fold(0, |packed, &b| packed << 8 | u64::from(fold(b))),
    }
}

/// log2 of the prefix filter size: 1024 bits for what is rarely more than a
/// few dozen prefixes.
const HEAD_BITS_LOG2: u32 = 10;
const HEAD_WORDS: usize = (1 << HEAD_BITS_LOG2) / 64;

/// The prefix rules of a set, behind a filter on the first bytes.
///
/// Prefix rules tend to share their first bytes with common headers (`x-`),
/// so a first-byte test would send most `x-` names to the linear scan. The
/// filter hashes the first `head` bytes instead, `head` being the shortest
/// prefix's length (at most 8): `x-forwarded-for` and `x-envoy-*` part ways
/// at their third byte.
pub(super) struct Prefixes {
    /// Folded prefixes, none empty, the list's first.
    prefixes: Vec<(Box<[u8]>, Rule)>,
    bits: [u64; HEAD_WORDS],
    /// Length of the shortest prefix; `usize::MAX` when there is none.
    shortest: usize,
    head: usize,
}

impl Prefixes {
    fn slot(head: u64) -> usize {
        (head.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HEAD_BITS_LOG2)) as usize
    }

    /// `listed` and `extra` are folded, distinct and non-empty each.
    pub(super) fn new(listed: &[Vec<u8>], extra: &[Vec<u8>]) -> Prefixes {
        let prefixes: Vec<(Box<[u8]>, Rule)> = listed
            .iter()
            .map(|p| (p.clone().into_boxed_slice(), Rule::Listed))
            .chain(
                extra
                    .iter()
                    .map(|p| (p.clone().into_boxed_slice(), Rule::Extra)),
            )
            .collect();
        let shortest = prefixes
            .iter()
            .map(|(p, _)| p.len())
            .min()
            .unwrap_or(usize::MAX);
        let head = shortest.min(8);
        let mut bits = [0u64; HEAD_WORDS];
        for (prefix, _) in &prefixes {
            let slot = Prefixes::slot(folded_head(prefix, head));
            bits[slot / 64] |= 1 << (slot % 64);
        }
        Prefixes {
            prefixes,
            bits,
            shortest,
            head,
        }
    }

    /// The strongest rule whose prefix `name` (raw) starts with, if any,
    /// and for a list rule the length of its prefix.
    #[inline]
    pub(super) fn get(&self, name: &[u8]) -> Option<(Rule, usize)> {
        if name.len() < self.shortest {
            return None;
        }
        let slot = Prefixes::slot(folded_head(name, self.head));
        if self.bits[slot / 64] & (1 << (slot % 64)) == 0 {
            return None;
        }
        // The list's prefixes come first: a match among them ends the scan.
        let mut found = None;
        for (prefix, rule) in &self.prefixes {
            if name.len() >= prefix.len() && prefix.iter().zip(name).all(|(&p, &n)| p == fold(n)) {
                if *rule == Rule::Listed {
                    return Some((Rule::Listed, prefix.len()));
                }
                found = Some((Rule::Extra, prefix.len()));
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_maps_only_ascii_upper_case_and_underscore() {
        for b in 0..=255u8 {
            let expected = match b {
                b'A'..=b'Z' => b.to_ascii_lowercase(),
                b'_' => b'-',
                _ => b,
            };
            assert_eq!(fold(b), expected, "byte {b:#04x}");
        }
    }

    #[test]
    fn fold8_folds_every_byte_in_every_lane_like_fold() {
        for lane in 0..8 {
            for b in 0..=255u8 {
                // Neighbours that could borrow or carry into this lane.
                for filler in [0x00u8, b'Z', b'_', 0x7F, 0xFF] {
                    let mut bytes = [filler; 8];
                    bytes[lane] = b;
                    let expected = bytes.map(fold);
                    let got = fold8(u64::from_le_bytes(bytes)).to_le_bytes();
                    assert_eq!(
                        got, expected,
                        "lane {lane} byte {b:#04x} filler {filler:#04x}"
                    );
                }
            }
        }
    }

    #[test]
    fn folded_head_short_and_long_names_agree() {
        let long = b"X_Internal_Id";
        for n in 1..=8 {
            let short = &long[..n];
            assert_eq!(folded_head(long, n), folded_head(short, n), "n = {n}");
            let expected = short
                .iter()
                .rev()
                .fold(0u64, |w, &b| w << 8 | u64::from(fold(b)));
            assert_eq!(folded_head(short, n), expected, "n = {n}");
        }
    }

    #[test]
    fn folded_eq_cases() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"x-a", b"X_A", true),
            (b"x-a", b"x-a", true),
            (b"", b"", true),
            (b"x-a", b"x-ab", false),
            (b"x-a", b"x-b", false),
            // Only ASCII folds: 0xC0 is not 0xE0 in disguise.
            (b"x-\xc0", b"x-\xe0", false),
        ];
        for &(a, b, expected) in cases {
            assert_eq!(
                folded_eq(a, b),
                expected,
                "{:?} vs {:?}",
                a.escape_ascii(),
                b.escape_ascii()
            );
            assert_eq!(folded_eq(b, a), expected);
        }
    }

    #[test]
    fn filter_never_rejects_a_member_in_any_spelling() {
        let names: Vec<Vec<u8>> = (1..=MAX_NAME_LEN)
            .map(|len| (0..len).map(|i| b"abcdefghij-0123"[i % 15]).collect())
            .collect();
        let filter = Filter::new(names.iter().map(Vec::as_slice));
        for name in &names {
            assert!(filter.may_contain(name));
            let shouted: Vec<u8> = name
                .iter()
                .map(|&b| {
                    if b == b'-' {
                        b'_'
                    } else {
                        b.to_ascii_uppercase()
                    }
                })
                .collect();
            assert!(filter.may_contain(&shouted));
        }
        assert!(!filter.may_contain(b""));
        assert!(!filter.may_contain(&[b'a'; MAX_NAME_LEN + 1]));
    }

    #[test]
    fn filter_rejects_most_non_members() {
        let members: Vec<Vec<u8>> = (0..200)
            .map(|i| format!("x-member-{i}").into_bytes())
            .collect();
        let filter = Filter::new(members.iter().map(Vec::as_slice));
        let passed = (0..10_000)
            .filter(|i| filter.may_contain(format!("other-{i}-name").as_bytes()))
            .count();
        // 200 names set at most 200 of 8192 bits: about 2.5 % false positives.
        assert!(
            passed < 500,
            "{passed} of 10000 non-members passed the filter"
        );
    }

    #[test]
    fn exact_names_own_their_keys() {
        let names = vec![b"x-a".to_vec(), b"x-ab".to_vec(), b"y".to_vec()];
        let exact = ExactNames::new(&names, &[]);
        drop(names);
        assert!(exact.get(b"X_A").is_some());
        assert!(exact.get(b"x-ab").is_some());
        assert!(exact.get(b"Y").is_some());
        assert!(exact.get(b"x-").is_none());
        assert!(exact.get(b"x-abc").is_none());
        assert!(exact.get(b"").is_none());
        // Moving the set moves the trie and its keys together.
        let moved = Box::new(exact);
        assert!(moved.get(b"x-ab").is_some());
    }

    #[test]
    fn exact_names_of_every_length_and_shared_heads() {
        // Same length and last byte for each pair: only the trie tells them apart.
        let mut names: Vec<Vec<u8>> = (1..=MAX_NAME_LEN).map(|len| vec![b'a'; len]).collect();
        names.extend((2..=MAX_NAME_LEN).map(|len| {
            let mut name = vec![b'a'; len];
            name[0] = b'b';
            name
        }));
        let exact = ExactNames::new(&names, &[]);
        for name in &names {
            assert!(exact.get(name).is_some(), "{} bytes", name.len());
            let mut other = name.clone();
            other[name.len() / 2] = b'c';
            assert!(exact.get(&other).is_none(), "{} bytes", name.len());
        }
        assert!(exact.get(&[b'a'; MAX_NAME_LEN + 1]).is_none());
    }

    #[test]
    fn listed_rules_win_over_extra_ones() {
        let listed = vec![b"x-a".to_vec(), b"x-both".to_vec()];
        let extra = vec![b"x-bot-score".to_vec(), b"x-both".to_vec()];
        let exact = ExactNames::new(&listed, &extra);
        assert_eq!(exact.get(b"X_A"), Some(Rule::Listed));
        assert_eq!(exact.get(b"x-both"), Some(Rule::Listed));
        assert_eq!(exact.get(b"X-Bot-Score"), Some(Rule::Extra));
        assert_eq!(exact.get(b"x-bot"), None);

        let prefixes = Prefixes::new(&[b"x-int-".to_vec()], &[b"x-".to_vec(), b"y-".to_vec()]);
        assert_eq!(prefixes.get(b"x-int-id"), Some((Rule::Listed, 6)));
        assert_eq!(prefixes.get(b"X_Other"), Some((Rule::Extra, 2)));
        assert_eq!(prefixes.get(b"y-1"), Some((Rule::Extra, 2)));
        assert_eq!(prefixes.get(b"z-1"), None);
        // Listed after extra in match order: still the list's rule.
        let prefixes = Prefixes::new(&[b"x-int-".to_vec()], &[b"x-".to_vec()]);
        assert_eq!(prefixes.get(b"x-int-"), Some((Rule::Listed, 6)));
    }

    #[test]
    fn prefixes_match_folded_starts() {
        let prefixes = Prefixes::new(&[b"x-internal-".to_vec(), b"cf-".to_vec()], &[]);
        let cases: &[(&[u8], bool)] = &[
            (b"x-internal-", true),
            (b"X_INTERNAL_ID", true),
            (b"cf-ray", true),
            (b"x-internal", false),
            (b"x-interna1-id", false),
            (b"c", false),
            (b"", false),
            (b"accept", false),
        ];
        for &(name, expected) in cases {
            assert_eq!(
                prefixes.get(name).is_some(),
                expected,
                "{:?}",
                name.escape_ascii()
            );
        }
        assert!(Prefixes::new(&[], &[]).get(b"anything").is_none());
        // One-byte prefixes make a one-byte filter head.
        let short = Prefixes::new(&[b"q".to_vec(), b"x-long-prefix-".to_vec()], &[]);
        assert!(short.get(b"Q").is_some());
        assert!(short.get(b"q-anything").is_some());
        assert!(short.get(b"X_Long_Prefix_A").is_some());
        assert!(short.get(b"x-long-prefix").is_none());
        assert!(short.get(b"r").is_none());
    }
}
