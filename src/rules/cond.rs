//! Compiled conditions and how each is tested against a request. Every test
//! reads the request's bytes in place: no allocation, no regex compiled.

use crate::clients::ClientView;
use aho_corasick::AhoCorasick;
use regex::bytes::Regex;

use crate::features::TlsFacts;
use crate::signals::live::Lookup;
use crate::signals::snapshot::Counts;
use crate::verified::PrefixSet;

use super::view::View;

/// A test of some text (a path, a header value, a User-Agent, a JA4).
#[derive(Debug)]
pub(crate) enum Text {
    /// Equal to one of these; `nocase`: ASCII case ignored (kept folded).
    Exact(Box<[Box<[u8]>]>, bool),
    /// Starts with one of these.
    Prefix(Box<[Box<[u8]>]>, bool),
    /// Ends with one of these.
    Suffix(Box<[Box<[u8]>]>, bool),
    /// Holds one of these, anywhere; `nocase`: the patterns are
    /// lower-case and the text is folded before the search, so that the
    /// searchers can use their SIMD prefilters (the automaton's own
    /// case-insensitive mode cannot).
    Contains(Contains, bool),
    /// A regular expression, unanchored unless it says `^`/`$`.
    Regex(Regex),
}

/// The searcher of a `contains` test: one pattern, a substring search;
/// several, one automaton for all. A text shorter than the shortest
/// pattern fails without a search (a searcher's fixed cost is most of
/// what a short header or query costs).
#[derive(Debug)]
pub(crate) struct Contains {
    pub(crate) min: usize,
    pub(crate) search: Search,
}

#[derive(Debug)]
pub(crate) enum Search {
    One(Box<memchr::memmem::Finder<'static>>),
    Many(AhoCorasick),
}

impl Contains {
    #[inline]
    fn is_match(&self, s: &[u8]) -> bool {
        s.len() >= self.min
            && match &self.search {
                Search::One(f) => f.find(s).is_some(),
                Search::Many(ac) => ac.is_match(s),
            }
    }
}

/// `a == b` (`a` folded already when `nocase`), for `a` and `b` of one
/// length. The last bytes are compared first: most candidates differ
/// there (paths share their `/`), and that spares a `memcmp` call.
#[inline]
fn eq(a: &[u8], b: &[u8], nocase: bool) -> bool {
    match (a.last(), b.last()) {
        (Some(&x), Some(&y)) if x != y && !(nocase && x == y.to_ascii_lowercase()) => false,
        _ if nocase => a.eq_ignore_ascii_case(b),
        _ => a == b,
    }
}

impl Text {
    /// Whether `s` passes; `fold` is scratch room for a case-folded copy.
    pub(crate) fn test(&self, s: &[u8], fold: &mut Vec<u8>) -> bool {
        match self {
            Text::Exact(v, nc) => v.iter().any(|x| x.len() == s.len() && eq(x, s, *nc)),
            Text::Prefix(v, nc) => v
                .iter()
                .any(|x| s.len() >= x.len() && eq(x, &s[..x.len()], *nc)),
            Text::Suffix(v, nc) => v
                .iter()
                .any(|x| s.len() >= x.len() && eq(x, &s[s.len() - x.len()..], *nc)),
            Text::Contains(c, _) if s.len() < c.min => false,
            Text::Contains(c, false) => c.is_match(s),
            Text::Contains(c, true) => {
                // Copy then fold in place: both vectorize.
                fold.clear();
                fold.extend_from_slice(s);
                fold.make_ascii_lowercase();
                c.is_match(&fold[..])
            }
            Text::Regex(re) => re.is_match(s),
        }
    }

    /// Whether testing costs a regex search (ordered last in a rule).
    pub(crate) fn is_regex(&self) -> bool {
        matches!(self, Text::Regex(_))
    }
}

/// Host names: exact, or every subdomain of a `*.` pattern.
#[derive(Debug)]
pub(crate) struct Hosts {
    /// Lower-case names.
    pub(crate) exact: Box<[Box<[u8]>]>,
    /// Lower-case suffixes with their leading dot (`.example.com`).
    pub(crate) subdomains: Box<[Box<[u8]>]>,
}

impl Hosts {
    fn test(&self, host: &[u8]) -> bool {
        self.exact.iter().any(|h| h.eq_ignore_ascii_case(host))
            || self.subdomains.iter().any(|s| {
                host.len() > s.len() && host[host.len() - s.len()..].eq_ignore_ascii_case(s)
            })
    }
}

/// What a header condition asks.
#[derive(Debug)]
pub(crate) enum HeaderTest {
    /// At least one field line with the name.
    Present,
    /// No field line with the name.
    Absent,
    /// Exactly one field line with the name.
    Once,
    /// Some field line's value passes (`once`: and it is the only line).
    Value(Text, bool),
}

/// A header condition.
#[derive(Debug)]
pub(crate) struct HeaderCond {
    /// The name folded as [`fold_eq`] compares it.
    pub(crate) name: Box<[u8]>,
    pub(crate) test: HeaderTest,
}

/// Header names compare with ASCII case folded and `_` read as `-`, as the
/// internal-header list compares them: a backend that maps `X_Api_Key` and
/// `X-Api-Key` to one variable must not see a rule tell them apart.
pub(crate) fn fold(b: u8) -> u8 {
    match b {
        b'_' => b'-',
        _ => b.to_ascii_lowercase(),
    }
}

fn fold_eq(folded: &[u8], name: &[u8]) -> bool {
    folded.len() == name.len() && folded.iter().zip(name).all(|(&a, &b)| a == fold(b))
}

impl HeaderCond {
    fn test(&self, view: &View<'_>, fold: &mut Vec<u8>) -> bool {
        let mut lines = view
            .headers
            .iter()
            .filter(|h| fold_eq(&self.name, h.name()));
        match &self.test {
            HeaderTest::Present => lines.next().is_some(),
            HeaderTest::Absent => lines.next().is_none(),
            HeaderTest::Once => lines.next().is_some() && lines.next().is_none(),
            HeaderTest::Value(t, false) => lines.any(|h| t.test(h.value(), fold)),
            HeaderTest::Value(t, true) => match (lines.next(), lines.next()) {
                (Some(h), None) => t.test(h.value(), fold),
                _ => false,
            },
        }
    }
}

/// Which verified-bot verdicts a bot condition takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdicts {
    Verified,
    Fake,
    Any,
}

/// A verified-bot condition.
#[derive(Debug)]
pub(crate) struct BotCond {
    pub(crate) verdicts: Verdicts,
    /// [`Category::bit`]s; 0: any category.
    pub(crate) categories: u16,
    /// Bot names, as the bots file spells them; empty: any.
    pub(crate) names: Box<[Box<str>]>,
}

impl BotCond {
    fn test(&self, view: &View<'_>) -> bool {
        let Some(bot) = view.bot else { return false };
        let verdict = match self.verdicts {
            Verdicts::Verified => bot.verified,
            Verdicts::Fake => !bot.verified,
            Verdicts::Any => true,
        };
        verdict
            && (self.categories == 0 || self.categories & bot.category.bit() != 0)
            && (self.names.is_empty() || self.names.iter().any(|n| **n == *bot.name))
    }
}

/// The bit of "no TLS facts" among a TLS condition's families.
pub(crate) const NO_TLS: u16 = 1 << 15;

/// A TLS condition.
#[derive(Debug)]
pub(crate) struct TlsCond {
    pub(crate) ja4: Option<Text>,
    /// `1 << Family as u8` bits, and [`NO_TLS`]; 0: any.
    pub(crate) families: u16,
}

impl TlsCond {
    fn test(&self, tls: Option<TlsFacts<'_>>, fold: &mut Vec<u8>) -> bool {
        let family_bit = tls.map_or(NO_TLS, |t| 1 << (t.family() as u8));
        (self.families == 0 || self.families & family_bit != 0)
            && self
                .ja4
                .as_ref()
                .is_none_or(|t| tls.is_some_and(|f| t.test(f.ja4(), fold)))
    }
}

/// A score range: `at_least <= score < below`.
#[derive(Debug)]
pub(crate) struct ScoreCond {
    pub(crate) model: usize,
    pub(crate) at_least: f64,
    pub(crate) below: f64,
}

/// Which fingerprint key a signal condition reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeySel {
    Ja4,
    Headers,
    /// Either: the condition holds when it holds for one of them.
    Any,
}

/// A count or share of a key's entry that a signal condition bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    Requests,
    Prefixes,
    UserAgents,
    Flagged,
    Solved,
    Cleared,
}

impl Measure {
    /// Every measure, in the order the file lists them.
    pub(crate) const ALL: [Measure; 6] = [
        Measure::Requests,
        Measure::Prefixes,
        Measure::UserAgents,
        Measure::Flagged,
        Measure::Solved,
        Measure::Cleared,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Measure::Requests => "requests",
            Measure::Prefixes => "prefixes",
            Measure::UserAgents => "user_agents",
            Measure::Flagged => "flagged",
            Measure::Solved => "solved",
            Measure::Cleared => "cleared",
        }
    }

    /// A share (0 to 1) rather than a count.
    pub(crate) fn is_share(self) -> bool {
        matches!(self, Measure::Flagged | Measure::Solved | Measure::Cleared)
    }

    /// Its value in `c`; none for the share of solved challenges of a key
    /// that was served none.
    fn of(self, c: &Counts) -> Option<f64> {
        Some(match self {
            Measure::Requests => c.requests as f64,
            Measure::Prefixes => c.prefixes() as f64,
            Measure::UserAgents => c.user_agents as f64,
            Measure::Flagged => c.flagged_share(),
            Measure::Solved => c.solved_share()?,
            Measure::Cleared => c.cleared_share(),
        })
    }
}

/// A fleet signal condition.
#[derive(Debug)]
pub(crate) struct SignalCond {
    pub(crate) key: KeySel,
    /// `false`: holds when the fleet has no entry for the key (`any`: for
    /// neither).
    pub(crate) known: bool,
    /// `min <= value <= max` for each.
    pub(crate) ranges: Box<[(Measure, f64, f64)]>,
}

impl SignalCond {
    fn test(&self, fleet: Option<&Lookup>) -> bool {
        // No snapshot in force (none, or too old): unknown, so neither
        // `known` nor `known: false` holds.
        let Some(f) = fleet else { return false };
        let entries = match self.key {
            KeySel::Ja4 => [f.ja4.as_ref(), None],
            KeySel::Headers => [f.headers.as_ref(), None],
            KeySel::Any => [f.ja4.as_ref(), f.headers.as_ref()],
        };
        if !self.known {
            return entries.iter().all(Option::is_none);
        }
        entries.iter().flatten().any(|c| {
            self.ranges
                .iter()
                .all(|&(m, lo, hi)| m.of(c).is_some_and(|x| x >= lo && x <= hi))
        })
    }
}

/// A number the client memory holds of a request's client (its host
/// record: address /32 or /64 × head fingerprint), as `client.*`
/// conditions name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientMeasure {
    Navigations,
    Subresources,
    SubresourceRatio,
    Paths,
    Rate,
    GapCv,
    CookieIssued,
    CookieReturned,
    ChallengesSolved,
    Age,
    DirectNavigations,
    DirectRatio,
}

impl ClientMeasure {
    /// Every measure, in `raw::When::client_ranges` order.
    pub(crate) const ALL: [ClientMeasure; 12] = [
        ClientMeasure::Navigations,
        ClientMeasure::Subresources,
        ClientMeasure::SubresourceRatio,
        ClientMeasure::Paths,
        ClientMeasure::Rate,
        ClientMeasure::GapCv,
        ClientMeasure::CookieIssued,
        ClientMeasure::CookieReturned,
        ClientMeasure::ChallengesSolved,
        ClientMeasure::Age,
        ClientMeasure::DirectNavigations,
        ClientMeasure::DirectRatio,
    ];

    /// The condition's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClientMeasure::Navigations => "client.navigations",
            ClientMeasure::Subresources => "client.subresources",
            ClientMeasure::SubresourceRatio => "client.subresource_ratio",
            ClientMeasure::Paths => "client.paths",
            ClientMeasure::Rate => "client.rate",
            ClientMeasure::GapCv => "client.gap_cv",
            ClientMeasure::CookieIssued => "client.cookie_issued",
            ClientMeasure::CookieReturned => "client.cookie_returned",
            ClientMeasure::ChallengesSolved => "client.challenges_solved",
            ClientMeasure::Age => "client.age",
            ClientMeasure::DirectNavigations => "client.direct_navigations",
            ClientMeasure::DirectRatio => "client.direct_ratio",
        }
    }

    /// Whether it is a share, 0 to 1.
    pub(crate) fn is_share(self) -> bool {
        matches!(
            self,
            ClientMeasure::SubresourceRatio | ClientMeasure::DirectRatio
        )
    }

    /// Its value in `v`, the view after this request.
    fn of(self, v: &ClientView) -> f64 {
        match self {
            ClientMeasure::Navigations => v.navigations.into(),
            ClientMeasure::Subresources => v.subresources().into(),
            ClientMeasure::SubresourceRatio => v.subresource_ratio().into(),
            ClientMeasure::Paths => v.paths.into(),
            ClientMeasure::Rate => v.rate.into(),
            ClientMeasure::GapCv => v.gap_cv().into(),
            ClientMeasure::CookieIssued => v.cookies_issued.into(),
            ClientMeasure::CookieReturned => v.cookies_returned.into(),
            ClientMeasure::ChallengesSolved => v.challenges_solved.into(),
            ClientMeasure::Age => {
                (v.last_seen_ms / 1000).saturating_sub(v.first_seen_s.into()) as f64
            }
            ClientMeasure::DirectNavigations => v.direct_navigations.into(),
            ClientMeasure::DirectRatio => v.direct_ratio().into(),
        }
    }
}

/// A rule's `client.*` conditions: `min <= value <= max` for each.
#[derive(Debug)]
pub(crate) struct ClientCond {
    pub(crate) ranges: Box<[(ClientMeasure, f64, f64)]>,
}

impl ClientCond {
    /// Without a memory (or a request that went on without it) no
    /// `client.*` condition holds.
    fn test(&self, v: Option<&ClientView>) -> bool {
        v.is_some_and(|v| {
            self.ranges
                .iter()
                .all(|&(m, lo, hi)| (lo..=hi).contains(&m.of(v)))
        })
    }
}

/// One compiled condition.
#[derive(Debug)]
pub(crate) enum Cond {
    Method(Methods),
    Bot(BotCond),
    Tls(TlsCond),
    Score(ScoreCond),
    Client(PrefixSet),
    Host(Hosts),
    Path(Text, Second),
    Query(Text),
    Header(HeaderCond),
    UserAgent(Text),
    Signal(SignalCond),
    Behaviour(ClientCond),
}

/// The bytes a path's second byte (the one after its leading `/`) can be
/// for an `exact` or `prefix` test to pass: rejects most paths with one
/// lookup instead of comparing each string of the test.
#[derive(Clone, Debug)]
pub(crate) struct Second {
    /// One bit per byte value; all set when the test says nothing of it.
    bits: [u64; 4],
    /// Whether the path `/` (no second byte) may pass.
    bare: bool,
}

impl Second {
    /// What the strings of `t` admit (everything, for other tests).
    pub(crate) fn of(t: &Text) -> Second {
        let mut s = Second {
            bits: [0; 4],
            bare: false,
        };
        let (strings, nocase) = match t {
            Text::Exact(v, nc) | Text::Prefix(v, nc) => (v, *nc),
            _ => return Second::any(),
        };
        let prefix = matches!(t, Text::Prefix(..));
        for x in strings.iter() {
            match x.get(1) {
                _ if x.first() != Some(&b'/') => return Second::any(),
                None if prefix => return Second::any(),
                None => s.bare = true,
                Some(&b) => {
                    s.set(b);
                    if nocase {
                        s.set(b.to_ascii_uppercase());
                    }
                }
            }
        }
        s
    }

    /// Admits every path.
    pub(crate) fn any() -> Second {
        Second {
            bits: [u64::MAX; 4],
            bare: true,
        }
    }

    fn set(&mut self, b: u8) {
        self.bits[usize::from(b >> 6)] |= 1 << (b & 63);
    }

    #[inline]
    pub(crate) fn admits(&self, path: &[u8]) -> bool {
        match path.get(1) {
            None => self.bare,
            Some(&b) => self.bits[usize::from(b >> 6)] & (1 << (b & 63)) != 0,
        }
    }
}

/// A set of methods: the common ones as bits of [`method_bit`], any
/// other by name.
#[derive(Debug)]
pub(crate) struct Methods {
    pub(crate) bits: u16,
    pub(crate) others: Box<[Box<[u8]>]>,
}

/// The bit standing for every method without one of its own.
pub(crate) const OTHER_METHOD: u16 = 1 << 15;

/// The bit of a common method, 0 for any other (a `match`: one length
/// switch and a compare).
pub(crate) fn method_bit(m: &[u8]) -> u16 {
    match m {
        b"GET" => 1,
        b"HEAD" => 1 << 1,
        b"POST" => 1 << 2,
        b"PUT" => 1 << 3,
        b"DELETE" => 1 << 4,
        b"OPTIONS" => 1 << 5,
        b"PATCH" => 1 << 6,
        b"TRACE" => 1 << 7,
        b"CONNECT" => 1 << 8,
        b"PURGE" => 1 << 9,
        _ => 0,
    }
}

/// What a request shows, prepared once per evaluation.
pub(crate) struct Facts<'a> {
    pub(crate) view: &'a View<'a>,
    /// [`method_bit`] of the request's method, [`OTHER_METHOD`] for
    /// another.
    pub(crate) method: u16,
    /// Room for case-folded copies.
    pub(crate) fold: &'a mut Vec<u8>,
    /// The host without port or trailing dot.
    pub(crate) host: &'a [u8],
    /// The normalized path; `None`: not a path (see `path`).
    pub(crate) path: Option<&'a [u8]>,
}

impl Cond {
    pub(crate) fn test(&self, f: &mut Facts<'_>) -> bool {
        let v = f.view;
        match self {
            Cond::Method(m) => {
                m.bits & f.method != 0
                    || (f.method == OTHER_METHOD && m.others.iter().any(|x| **x == *v.method))
            }
            Cond::Bot(b) => b.test(v),
            Cond::Tls(t) => t.test(v.tls, f.fold),
            Cond::Score(s) => v
                .scores
                .get(s.model)
                .is_some_and(|&x| x >= s.at_least && x < s.below),
            Cond::Client(set) => v.client.is_some_and(|a| set.contains(a)),
            Cond::Host(h) => h.test(f.host),
            // The rule checked the second byte already (`Hot::matches`).
            Cond::Path(t, _) => f.path.is_some_and(|p| t.test(p, f.fold)),
            Cond::Query(t) => t.test(v.query, f.fold),
            Cond::Header(h) => h.test(v, f.fold),
            Cond::UserAgent(t) => t.test(v.user_agent, f.fold),
            Cond::Signal(s) => s.test(v.fleet.as_ref()),
            Cond::Behaviour(c) => c.test(v.clients.as_ref()),
        }
    }

    /// The order conditions of a rule are tested in: cheap and selective
    /// first, regular expressions last. All must hold, so the order
    /// changes only the cost.
    pub(crate) fn cost(&self) -> u8 {
        let text = |t: &Text, base: u8| if t.is_regex() { 200 + base } else { base };
        match self {
            Cond::Method(_) => 0,
            Cond::Bot(_) => 1,
            Cond::Tls(t) => t.ja4.as_ref().map_or(2, |j| text(j, 2)),
            Cond::Score(_) => 3,
            Cond::Signal(_) => 3,
            Cond::Behaviour(_) => 3,
            Cond::Host(_) => 4,
            Cond::Path(t, _) => text(t, 5),
            Cond::Client(_) => 6,
            Cond::Query(t) => text(t, 7),
            Cond::UserAgent(t) => text(t, 8),
            Cond::Header(h) => match &h.test {
                HeaderTest::Value(t, _) => text(t, 10),
                _ => 9,
            },
        }
    }

    /// Whether testing reads the path (so it is normalized first).
    pub(crate) fn reads_path(&self) -> bool {
        matches!(self, Cond::Path(..))
    }

    /// Whether it is a score condition (the rule runs after scoring).
    pub(crate) fn is_score(&self) -> bool {
        matches!(self, Cond::Score(_))
    }
}
