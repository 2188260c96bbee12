//! Compiled conditions and how each is tested against a request. Every test
//! reads the request's bytes in place: no allocation, no regex compiled.

use aho_corasick::AhoCorasick;
use regex::bytes::Regex;

use crate::features::TlsFacts;
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
    /// Holds one of these, anywhere (one automaton for all of them).
    Contains(AhoCorasick),
    /// A regular expression, unanchored unless it says `^`/`$`.
    Regex(Regex),
}

fn eq(a: &[u8], b: &[u8], nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

impl Text {
    pub(crate) fn test(&self, s: &[u8]) -> bool {
        match self {
            Text::Exact(v, nc) => v.iter().any(|x| eq(x, s, *nc)),
            Text::Prefix(v, nc) => v
                .iter()
                .any(|x| s.len() >= x.len() && eq(x, &s[..x.len()], *nc)),
            Text::Suffix(v, nc) => v
                .iter()
                .any(|x| s.len() >= x.len() && eq(x, &s[s.len() - x.len()..], *nc)),
            Text::Contains(ac) => ac.is_match(s),
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
    fn test(&self, view: &View<'_>) -> bool {
        let mut lines = view
            .headers
            .iter()
            .filter(|h| fold_eq(&self.name, h.name()));
        match &self.test {
            HeaderTest::Present => lines.next().is_some(),
            HeaderTest::Absent => lines.next().is_none(),
            HeaderTest::Once => lines.next().is_some() && lines.next().is_none(),
            HeaderTest::Value(t, false) => lines.any(|h| t.test(h.value())),
            HeaderTest::Value(t, true) => match (lines.next(), lines.next()) {
                (Some(h), None) => t.test(h.value()),
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
    fn test(&self, tls: Option<TlsFacts<'_>>) -> bool {
        let family_bit = tls.map_or(NO_TLS, |t| 1 << (t.family() as u8));
        (self.families == 0 || self.families & family_bit != 0)
            && self
                .ja4
                .as_ref()
                .is_none_or(|t| tls.is_some_and(|f| t.test(f.ja4())))
    }
}

/// A score range: `at_least <= score < below`.
#[derive(Debug)]
pub(crate) struct ScoreCond {
    pub(crate) model: usize,
    pub(crate) at_least: f64,
    pub(crate) below: f64,
}

/// One compiled condition.
#[derive(Debug)]
pub(crate) enum Cond {
    Method(Box<[Box<[u8]>]>),
    Bot(BotCond),
    Tls(TlsCond),
    Score(ScoreCond),
    Client(PrefixSet),
    Host(Hosts),
    Path(Text),
    Query(Text),
    Header(HeaderCond),
    UserAgent(Text),
}

/// What a request shows, prepared once per evaluation.
pub(crate) struct Facts<'a> {
    pub(crate) view: &'a View<'a>,
    /// The host without port or trailing dot.
    pub(crate) host: &'a [u8],
    /// The normalized path; `None`: not a path (see `path`).
    pub(crate) path: Option<&'a [u8]>,
}

impl Cond {
    pub(crate) fn test(&self, f: &Facts<'_>) -> bool {
        let v = f.view;
        match self {
            Cond::Method(m) => m.iter().any(|x| **x == *v.method),
            Cond::Bot(b) => b.test(v),
            Cond::Tls(t) => t.test(v.tls),
            Cond::Score(s) => v
                .scores
                .get(s.model)
                .is_some_and(|&x| x >= s.at_least && x < s.below),
            Cond::Client(set) => v.client.is_some_and(|a| set.contains(a)),
            Cond::Host(h) => h.test(f.host),
            Cond::Path(t) => f.path.is_some_and(|p| t.test(p)),
            Cond::Query(t) => t.test(v.query),
            Cond::Header(h) => h.test(v),
            Cond::UserAgent(t) => t.test(v.user_agent),
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
            Cond::Host(_) => 4,
            Cond::Path(t) => text(t, 5),
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
        matches!(self, Cond::Path(_))
    }

    /// Whether it is a score condition (the rule runs after scoring).
    pub(crate) fn is_score(&self) -> bool {
        matches!(self, Cond::Score(_))
    }
}
