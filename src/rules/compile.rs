//! From the file as written ([`raw`]) to rules: each condition checked and
//! compiled (regular expressions and automatons built here, once), presets
//! expanded, limits enforced, and the order of the stages checked. Every
//! refusal names the file, the rule and the field.

use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::bytes::RegexBuilder;

use crate::tls::Family;
use crate::verified::{Category, PrefixSetBuilder};

use super::cond::{
    fold, method_bit, BotCond, ClientCond, ClientMeasure, Cond, Contains, HeaderCond, HeaderTest,
    Hosts, KeySel, Measure, Methods, ScoreCond, Search, Second, SignalCond, Text, TlsCond,
    Verdicts, NO_TLS,
};
use super::error::{At, RulesError};
use super::limits::*;
use super::lists::{self, Lists};
use super::presets;
use super::raw;
use super::rule::{Action, Context, Part, Rule};

/// What one compilation has used of the file-wide limits.
#[derive(Default)]
struct Budget {
    regexes: usize,
}

/// Compiles the whole file.
pub(crate) fn compile(
    source: &str,
    base: &Path,
    text: &[u8],
    ctx: &Context<'_>,
) -> Result<Vec<Rule>, RulesError> {
    compile_named(source, base, text, ctx, "rule-")
}

/// [`compile`], naming an unnamed rule `<unnamed><index>`.
fn compile_named(
    source: &str,
    base: &Path,
    text: &[u8],
    ctx: &Context<'_>,
    unnamed: &str,
) -> Result<Vec<Rule>, RulesError> {
    if text.len() as u64 > MAX_FILE {
        return Err(RulesError::new(
            source,
            "",
            format!("larger than {MAX_FILE} bytes"),
        ));
    }
    let file: raw::File = parse(source, text)?;
    let lists = lists::load(source, base, &file.lists)?;
    let mut c = Compiler {
        source,
        ctx,
        lists: &lists,
        budget: Budget::default(),
    };
    let mut rules = Vec::new();
    for (i, r) in file.rules.iter().enumerate() {
        let at = At::root("rules").index(i);
        match &r.preset {
            Some(name) => c.expand(name, r, &at, &mut rules)?,
            None => rules.push(c.rule(r, &at, format!("{unnamed}{i}"))?),
        }
        if rules.len() > MAX_RULES {
            return Err(c.err(&at, format!("more than {MAX_RULES} rules")));
        }
    }
    if rules.is_empty() {
        return Err(RulesError::new(source, "rules", "lists no rule"));
    }
    check_order(source, &rules)?;
    Ok(rules)
}

/// Compiles the parts of a `rules` option (`source` names it in errors):
/// presets, files and inline rules, in the order given, each entry `i`
/// named `rules[i]` in errors. A file's rules keep their own file's lists
/// and error paths (`rules[1]: /etc/x.json: rules[3].when...`); its
/// unnamed rules are named `<file stem>/<index>`, as a preset's are, so
/// that two files' unnamed rules never share a name.
pub(crate) fn compile_parts(
    source: &str,
    parts: &[Part],
    ctx: &Context<'_>,
) -> Result<Vec<Rule>, RulesError> {
    if parts.is_empty() {
        return Err(RulesError::new(source, "rules", "lists no rule"));
    }
    let none = Lists::default();
    let mut c = Compiler {
        source,
        ctx,
        lists: &none,
        budget: Budget::default(),
    };
    let mut rules = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let at = At::root("rules").index(i);
        match part {
            Part::Preset(name) => c.expand(name, &raw::Rule::default(), &at, &mut rules)?,
            Part::File(path) => {
                let shown = path.display().to_string();
                let text = lists::read_bounded(path, MAX_FILE)
                    .map_err(|m| c.err(&at, format!("{shown}: {m}")))?;
                let base = path.parent().unwrap_or(Path::new(""));
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy())
                    .unwrap_or_default();
                let stem: String = stem
                    .chars()
                    .map(|ch| {
                        if ch.is_ascii_alphanumeric() || "._-".contains(ch) {
                            ch
                        } else {
                            '_'
                        }
                    })
                    .take(MAX_NAME / 2)
                    .collect();
                let file = compile_named(&shown, base, &text, ctx, &format!("{stem}/"))
                    .map_err(|e| c.err(&at, e.to_string()))?;
                for mut r in file {
                    r.at = format!("{at} ({shown}: {})", r.at);
                    rules.push(r);
                }
            }
            Part::Rule(v) => {
                let r: raw::Rule = serde_path_to_error::deserialize(v).map_err(|e| {
                    let field = e.path().to_string();
                    let field = if field == "." {
                        at.to_string()
                    } else {
                        format!("{at}.{field}")
                    };
                    RulesError::new(source, field, e.into_inner().to_string())
                })?;
                match &r.preset {
                    Some(name) => c.expand(name, &r, &at, &mut rules)?,
                    None => rules.push(c.rule(&r, &at, format!("rule-{i}"))?),
                }
            }
        }
        if rules.len() > MAX_RULES {
            return Err(c.err(&at, format!("more than {MAX_RULES} rules")));
        }
    }
    check_order(source, &rules)?;
    Ok(rules)
}

/// Parses the JSON, naming the field serde stopped at.
fn parse(source: &str, text: &[u8]) -> Result<raw::File, RulesError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let file = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." { String::new() } else { field };
        RulesError::new(source, field, e.into_inner().to_string())
    })?;
    // Anything after the document (a second one pasted in, a truncated
    // edit) is refused, as serde_json::from_slice would.
    de.end()
        .map_err(|e| RulesError::new(source, "", e.to_string()))?;
    Ok(file)
}

/// Names are unique; rules without a score condition come before every
/// rule with one (the file's order is the order they run in); no rule
/// follows one that takes every request of its stage.
fn check_order(source: &str, rules: &[Rule]) -> Result<(), RulesError> {
    let mut first_post: Option<&Rule> = None;
    let mut catch_all: [Option<&Rule>; 2] = [None, None];
    for (i, r) in rules.iter().enumerate() {
        if let Some(dup) = rules[..i].iter().find(|o| o.name == r.name) {
            return Err(RulesError::new(
                source,
                format!("{}.name", r.at),
                format!("'{}' is also the name of {}", r.name, dup.at),
            ));
        }
        let post = r.after_scoring();
        match (post, first_post) {
            (true, None) => first_post = Some(r),
            (false, Some(p)) => {
                return Err(RulesError::new(
                    source,
                    &r.at,
                    format!(
                        "has no score condition but comes after {}, which has one: rules with a \
                         score condition run after scoring, after every rule without one, so \
                         the file must list them last",
                        p.at
                    ),
                ))
            }
            _ => {}
        }
        let stage = usize::from(post);
        if let Some(all) = catch_all[stage] {
            return Err(RulesError::new(
                source,
                &r.at,
                format!(
                    "never runs: {} matches every request before it (it has no condition)",
                    all.at
                ),
            ));
        }
        if r.conds.is_empty() {
            catch_all[stage] = Some(r);
        }
    }
    Ok(())
}

struct Compiler<'a> {
    source: &'a str,
    ctx: &'a Context<'a>,
    lists: &'a Lists,
    budget: Budget,
}

impl Compiler<'_> {
    fn err(&self, at: &At, message: impl Into<String>) -> RulesError {
        RulesError::new(self.source, at.as_str(), message)
    }

    /// Adds preset `name`'s rules.
    fn expand(
        &mut self,
        name: &str,
        r: &raw::Rule,
        at: &At,
        out: &mut Vec<Rule>,
    ) -> Result<(), RulesError> {
        if r.name.is_some()
            || r.when.is_some()
            || r.action.is_some()
            || r.status.is_some()
            || r.tag.is_some()
        {
            return Err(self.err(
                at,
                "a preset entry has only \"preset\" (copy the preset's rules into the file to change them)",
            ));
        }
        let Some(text) = presets::preset(name) else {
            return Err(self.err(
                &at.field("preset"),
                format!("no preset '{name}' (presets: {})", presets::names()),
            ));
        };
        let file: raw::File = parse(&format!("preset {name}"), text.as_bytes())?;
        for (j, pr) in file.rules.iter().enumerate() {
            let inner = At::root(&format!("{at} (preset {name}: rules[{j}])"));
            if pr.preset.is_some() {
                return Err(self.err(&inner, "a preset cannot name a preset"));
            }
            out.push(self.rule(pr, &inner, format!("{name}/{j}"))?);
        }
        Ok(())
    }

    fn rule(&mut self, r: &raw::Rule, at: &At, default_name: String) -> Result<Rule, RulesError> {
        let name = match &r.name {
            Some(n) if valid_rule_name(n) => n.clone(),
            Some(n) => {
                return Err(self.err(
                    &at.field("name"),
                    format!("'{n}' must be 1 to {MAX_NAME} letters, digits, '.', '_', '-' or '/'"),
                ))
            }
            None => default_name,
        };
        let tag = match &r.tag {
            Some(t) if valid_tag(t) => t.clone(),
            Some(t) => {
                return Err(self.err(
                    &at.field("tag"),
                    format!(
                        "'{t}' must be 1 to {MAX_TAG} letters, digits, '.', '_', '-' or ':' \
                         (it is logged and can be sent upstream in a header)"
                    ),
                ))
            }
            None => String::new(),
        };
        let action = self.action(r, at)?;
        let mut conds = match &r.when {
            Some(w) => self.when(w, &at.field("when"))?,
            None => Vec::new(),
        };
        conds.sort_by_key(Cond::cost);
        let summary = match &r.when {
            Some(w) => serde_json::to_string(w).unwrap_or_default(),
            None => "{}".into(),
        };
        Ok(Rule {
            name,
            tag,
            action,
            conds: conds.into_boxed_slice(),
            at: at.to_string(),
            summary,
        })
    }

    fn action(&self, r: &raw::Rule, at: &At) -> Result<Action, RulesError> {
        let field = at.field("action");
        let action = match r.action.as_deref() {
            Some("pass") => Action::Pass,
            Some("allow") => Action::Allow,
            Some("log") => Action::Log,
            Some("challenge") => Action::Challenge,
            Some("block") => Action::Block(r.status.unwrap_or(403)),
            Some(other) => {
                return Err(self.err(
                    &field,
                    format!("'{other}' is not an action (pass, allow, log, challenge, block)"),
                ))
            }
            None => return Err(self.err(&field, "missing")),
        };
        match (action, r.status) {
            (Action::Block(s), _) if !(400..=599).contains(&s) => Err(self.err(
                &at.field("status"),
                format!("{s} is not an error status (400 to 599)"),
            )),
            (Action::Block(_), _) | (_, None) => Ok(action),
            (_, Some(_)) => Err(self.err(&at.field("status"), "only a block has a status")),
        }
    }

    fn when(&mut self, w: &raw::When, at: &At) -> Result<Vec<Cond>, RulesError> {
        let mut conds = Vec::new();
        if let Some(m) = &w.method {
            let f = at.field("method");
            let methods = self.strings(&m.0, &f, false)?;
            for (i, m) in methods.iter().enumerate() {
                if m.is_empty() || !m.iter().all(|&b| is_tchar(b)) {
                    let fi = if methods.len() == 1 {
                        f.clone()
                    } else {
                        f.index(i)
                    };
                    return Err(self.err(
                        &fi,
                        format!("'{}' is not a method", String::from_utf8_lossy(m)),
                    ));
                }
            }
            let mut m = Methods {
                bits: 0,
                others: Box::default(),
            };
            let mut others = Vec::new();
            for x in methods.iter() {
                match method_bit(x) {
                    0 => others.push(x.clone()),
                    bit => m.bits |= bit,
                }
            }
            m.others = others.into();
            conds.push(Cond::Method(m));
        }
        if let Some(h) = &w.host {
            conds.push(Cond::Host(self.hosts(&h.0, &at.field("host"))?));
        }
        if let Some(t) = &w.path {
            let t = self.text(t, &at.field("path"))?;
            let second = Second::of(&t);
            conds.push(Cond::Path(t, second));
        }
        if let Some(t) = &w.query {
            conds.push(Cond::Query(self.text(t, &at.field("query"))?));
        }
        if let Some(hs) = &w.header {
            let f = at.field("header");
            if hs.0.is_empty() {
                return Err(self.err(&f, "lists no header condition"));
            }
            for (i, h) in hs.0.iter().enumerate() {
                let fi = if hs.0.len() == 1 {
                    f.clone()
                } else {
                    f.index(i)
                };
                conds.push(Cond::Header(self.header(h, &fi)?));
            }
        }
        if let Some(t) = &w.user_agent {
            conds.push(Cond::UserAgent(self.text(t, &at.field("user_agent"))?));
        }
        if let Some(names) = &w.client {
            conds.push(Cond::Client(self.client(&names.0, &at.field("client"))?));
        }
        if let Some(b) = &w.bot {
            conds.push(Cond::Bot(self.bot(b, &at.field("bot"))?));
        }
        if let Some(t) = &w.tls {
            conds.push(Cond::Tls(self.tls(t, &at.field("tls"))?));
        }
        if let Some(scores) = &w.score {
            let f = at.field("score");
            if scores.0.is_empty() {
                return Err(self.err(&f, "lists no score range"));
            }
            for (i, s) in scores.0.iter().enumerate() {
                let fi = if scores.0.len() == 1 {
                    f.clone()
                } else {
                    f.index(i)
                };
                conds.push(Cond::Score(self.score(s, &fi)?));
            }
        }
        if let Some(sig) = &w.signal {
            conds.push(Cond::Signal(self.signal(sig, &at.field("signal"))?));
        }
        let mut ranges = Vec::new();
        for (m, r) in ClientMeasure::ALL.into_iter().zip(w.client_ranges()) {
            let Some(r) = r else { continue };
            let f = at.field(m.name());
            let (lo, hi) = (
                r.min.unwrap_or(f64::NEG_INFINITY),
                r.max.unwrap_or(f64::INFINITY),
            );
            if r.min.is_none() && r.max.is_none() {
                return Err(self.err(&f, "give min, max or both"));
            }
            for (name, v) in [("min", r.min), ("max", r.max)] {
                let Some(v) = v else { continue };
                if !v.is_finite() || v < 0.0 {
                    return Err(self.err(
                        &f.field(name),
                        format!("{v} must be a number of at least 0"),
                    ));
                }
                if m.is_share() && v > 1.0 {
                    return Err(self.err(&f.field(name), format!("{v} is a share: from 0 to 1")));
                }
            }
            if lo > hi {
                return Err(self.err(&f, format!("no value is at least {lo} and at most {hi}")));
            }
            ranges.push((m, lo, hi));
        }
        if !ranges.is_empty() {
            conds.push(Cond::Behaviour(ClientCond {
                ranges: ranges.into(),
            }));
        }
        Ok(conds)
    }

    /// A non-empty list of strings within the limits; `nonempty`: no
    /// string may be empty either.
    fn strings(
        &self,
        v: &[String],
        at: &At,
        nonempty: bool,
    ) -> Result<Box<[Box<[u8]>]>, RulesError> {
        if v.is_empty() {
            return Err(self.err(at, "lists nothing"));
        }
        if v.len() > MAX_VALUES {
            return Err(self.err(at, format!("{} values, more than {MAX_VALUES}", v.len())));
        }
        for (i, s) in v.iter().enumerate() {
            let fi = if v.len() == 1 {
                at.clone()
            } else {
                at.index(i)
            };
            if s.len() > MAX_STRING {
                return Err(self.err(&fi, format!("longer than {MAX_STRING} bytes")));
            }
            if nonempty && s.is_empty() {
                return Err(self.err(&fi, "is empty: it would match everything"));
            }
        }
        Ok(v.iter().map(|s| s.as_bytes().into()).collect())
    }

    fn text(&mut self, t: &raw::Text, at: &At) -> Result<Text, RulesError> {
        let forms = [
            t.exact.is_some(),
            t.prefix.is_some(),
            t.suffix.is_some(),
            t.contains.is_some(),
            t.regex.is_some(),
        ];
        if forms.iter().filter(|&&x| x).count() != 1 {
            return Err(self.err(
                at,
                "give exactly one of exact, prefix, suffix, contains, regex",
            ));
        }
        let nc = t.nocase;
        let fold = |v: Box<[Box<[u8]>]>| -> Box<[Box<[u8]>]> {
            if nc {
                v.iter().map(|s| s.to_ascii_lowercase().into()).collect()
            } else {
                v
            }
        };
        Ok(if let Some(v) = &t.exact {
            Text::Exact(fold(self.strings(&v.0, &at.field("exact"), false)?), nc)
        } else if let Some(v) = &t.prefix {
            Text::Prefix(fold(self.strings(&v.0, &at.field("prefix"), true)?), nc)
        } else if let Some(v) = &t.suffix {
            Text::Suffix(fold(self.strings(&v.0, &at.field("suffix"), true)?), nc)
        } else if let Some(v) = &t.contains {
            let f = at.field("contains");
            let pats = fold(self.strings(&v.0, &f, true)?);
            let min = pats.iter().map(|p| p.len()).min().unwrap_or(0);
            let search = if let [one] = &pats[..] {
                Search::One(Box::new(memchr::memmem::Finder::new(&one[..]).into_owned()))
            } else {
                // Leftmost-first: the match kind that lets the automaton use
                // its SIMD (Teddy) prefilter; whether a pattern occurs is the
                // same under any kind.
                Search::Many(
                    AhoCorasick::builder()
                        .match_kind(MatchKind::LeftmostFirst)
                        .build(pats.iter())
                        .map_err(|e| self.err(&f, e.to_string()))?,
                )
            };
            Text::Contains(Contains { min, search }, nc)
        } else {
            let pattern = t.regex.as_deref().unwrap_or_default();
            Text::Regex(self.regex(pattern, nc, &at.field("regex"))?)
        })
    }

    fn regex(
        &mut self,
        pattern: &str,
        nocase: bool,
        at: &At,
    ) -> Result<regex::bytes::Regex, RulesError> {
        if pattern.len() > MAX_PATTERN {
            return Err(self.err(at, format!("longer than {MAX_PATTERN} bytes")));
        }
        self.budget.regexes += 1;
        if self.budget.regexes > MAX_REGEXES {
            return Err(self.err(
                at,
                format!("more than {MAX_REGEXES} regular expressions in the file"),
            ));
        }
        // Bytes, not text: `.` is any byte and `\w` ASCII, so a path with
        // bytes that are not UTF-8 (`/admin%FF`) cannot slip past a `.*`;
        // `(?u)` in a pattern turns Unicode classes on.
        RegexBuilder::new(pattern)
            .unicode(false)
            .case_insensitive(nocase)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_DFA_LIMIT)
            .nest_limit(REGEX_NEST_LIMIT)
            .build()
            .map_err(|e| {
                // The crate's message spans lines (pattern, caret, reason).
                let m = e.to_string();
                let m: Vec<&str> = m.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
                self.err(at, m.join(" "))
            })
    }

    fn hosts(&self, v: &[String], at: &At) -> Result<Hosts, RulesError> {
        let all = self.strings(v, at, true)?;
        let (mut exact, mut subdomains) = (Vec::new(), Vec::new());
        for (i, h) in all.iter().enumerate() {
            let fi = if all.len() == 1 {
                at.clone()
            } else {
                at.index(i)
            };
            let h = h.to_ascii_lowercase();
            let (wild, name) = match h.strip_prefix(b"*.") {
                Some(rest) => (true, rest),
                None => (false, &h[..]),
            };
            if !valid_host(name) {
                return Err(self.err(
                    &fi,
                    format!(
                        "'{}' is not a host name (or '*.' and one), without port",
                        String::from_utf8_lossy(&h)
                    ),
                ));
            }
            if wild {
                let mut s = b".".to_vec();
                s.extend_from_slice(name);
                subdomains.push(s.into_boxed_slice());
            } else {
                exact.push(name.to_vec().into_boxed_slice());
            }
        }
        Ok(Hosts {
            exact: exact.into(),
            subdomains: subdomains.into(),
        })
    }

    fn header(&mut self, h: &raw::Header, at: &At) -> Result<HeaderCond, RulesError> {
        let name = h.name.as_bytes();
        if name.is_empty()
            || name.len() > crate::headers::MAX_NAME_LEN
            || !name.iter().all(|&b| is_tchar(b))
        {
            return Err(self.err(
                &at.field("name"),
                format!("'{}' is not a header name", h.name),
            ));
        }
        let folded: Box<[u8]> = name.iter().map(|&b| fold(b)).collect();
        let once = h.once.unwrap_or(false);
        let test = match (h.text(), h.present) {
            (Some(_), Some(_)) => {
                return Err(self.err(
                    &at.field("present"),
                    "a value test already needs the header: leave out present",
                ))
            }
            (Some(t), None) => HeaderTest::Value(self.text(&t, at)?, once),
            (None, Some(false)) if h.once.is_some() => {
                return Err(self.err(&at.field("once"), "an absent header is not there once"))
            }
            (None, Some(false)) => HeaderTest::Absent,
            (None, _) if once => HeaderTest::Once,
            (None, Some(true)) => HeaderTest::Present,
            (None, None) => {
                return Err(self.err(
                    at,
                    "says nothing of the header: give present, once or a value test",
                ))
            }
        };
        Ok(HeaderCond { name: folded, test })
    }

    fn client(&self, names: &[String], at: &At) -> Result<crate::verified::PrefixSet, RulesError> {
        if names.is_empty() {
            return Err(self.err(at, "names no list"));
        }
        let mut b = PrefixSetBuilder::default();
        for (i, n) in names.iter().enumerate() {
            let fi = if names.len() == 1 {
                at.clone()
            } else {
                at.index(i)
            };
            let Some(set) = self.lists.get(n) else {
                let mut known: Vec<&str> = self.lists.keys().map(String::as_str).collect();
                known.sort_unstable();
                return Err(self.err(
                    &fi,
                    format!(
                        "no list '{n}' in \"lists\" (lists: {})",
                        if known.is_empty() {
                            "none".into()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            };
            b.add_set(set);
        }
        Ok(b.build())
    }

    fn bot(&self, b: &raw::Bot, at: &At) -> Result<BotCond, RulesError> {
        let verdicts = match b.verdict.as_deref() {
            None | Some("verified") => Verdicts::Verified,
            Some("fake") => Verdicts::Fake,
            Some("any") => Verdicts::Any,
            Some(other) => {
                return Err(self.err(
                    &at.field("verdict"),
                    format!("'{other}' is not a verdict (verified, fake, any)"),
                ))
            }
        };
        let mut categories = 0;
        if let Some(cs) = &b.category {
            let f = at.field("category");
            if cs.0.is_empty() {
                return Err(self.err(&f, "lists no category"));
            }
            for (i, c) in cs.0.iter().enumerate() {
                let fi = if cs.0.len() == 1 {
                    f.clone()
                } else {
                    f.index(i)
                };
                let c = Category::parse(c).ok_or_else(|| {
                    self.err(
                        &fi,
                        format!("'{c}' is not a category ({})", Category::names()),
                    )
                })?;
                categories |= c.bit();
            }
        }
        let names = match &b.name {
            None => Box::default(),
            Some(ns) => {
                let f = at.field("name");
                if ns.0.is_empty() {
                    return Err(self.err(&f, "lists no bot"));
                }
                ns.0.iter().map(|n| n.as_str().into()).collect()
            }
        };
        Ok(BotCond {
            verdicts,
            categories,
            names,
        })
    }

    fn tls(&mut self, t: &raw::Tls, at: &At) -> Result<TlsCond, RulesError> {
        if t.ja4.is_none() && t.family.is_none() {
            return Err(self.err(at, "says nothing: give ja4 or family"));
        }
        let ja4 = match &t.ja4 {
            Some(j) => Some(self.text(j, &at.field("ja4"))?),
            None => None,
        };
        let mut families = 0;
        if let Some(fs) = &t.family {
            let f = at.field("family");
            if fs.0.is_empty() {
                return Err(self.err(&f, "lists no family"));
            }
            for (i, name) in fs.0.iter().enumerate() {
                let fi = if fs.0.len() == 1 {
                    f.clone()
                } else {
                    f.index(i)
                };
                families |= if name == "none" {
                    NO_TLS
                } else {
                    let fam = FAMILIES.iter().find(|x| x.name() == name).ok_or_else(|| {
                        self.err(
                            &fi,
                            format!(
                                "'{name}' is not a TLS family (boringssl, nss, openssl, go, unknown, none)"
                            ),
                        )
                    })?;
                    1 << (*fam as u8)
                };
            }
        }
        Ok(TlsCond { ja4, families })
    }

    fn signal(&self, s: &raw::Signal, at: &At) -> Result<SignalCond, RulesError> {
        let key = match s.key.as_deref() {
            None | Some("any") => KeySel::Any,
            Some("ja4") => KeySel::Ja4,
            Some("headers") => KeySel::Headers,
            Some(other) => {
                return Err(self.err(
                    &at.field("key"),
                    format!("'{other}' is not a key (ja4, headers, any)"),
                ))
            }
        };
        let given = [
            &s.requests,
            &s.prefixes,
            &s.user_agents,
            &s.flagged,
            &s.solved,
            &s.cleared,
        ];
        let mut ranges = Vec::new();
        for (m, r) in Measure::ALL.into_iter().zip(given) {
            let Some(r) = r else { continue };
            let f = at.field(m.name());
            let (lo, hi) = (
                r.min.unwrap_or(f64::NEG_INFINITY),
                r.max.unwrap_or(f64::INFINITY),
            );
            if r.min.is_none() && r.max.is_none() {
                return Err(self.err(&f, "give min, max or both"));
            }
            for (name, v) in [("min", r.min), ("max", r.max)] {
                let Some(v) = v else { continue };
                let bad = if !v.is_finite() || v < 0.0 {
                    Some("must be a number of at least 0")
                } else if m.is_share() && v > 1.0 {
                    Some("is a share: from 0 to 1")
                } else {
                    None
                };
                if let Some(why) = bad {
                    return Err(self.err(&f.field(name), format!("{v} {why}")));
                }
            }
            if lo > hi {
                return Err(self.err(&f, format!("no value is at least {lo} and at most {hi}")));
            }
            ranges.push((m, lo, hi));
        }
        let known = s.known.unwrap_or(true);
        if !known && !ranges.is_empty() {
            return Err(self.err(
                &at.field("known"),
                "a key the fleet does not know has no counts: leave out the ranges",
            ));
        }
        Ok(SignalCond {
            key,
            known,
            ranges: ranges.into(),
        })
    }

    fn score(&self, s: &raw::Score, at: &At) -> Result<ScoreCond, RulesError> {
        let model = self
            .ctx
            .models
            .iter()
            .position(|m| *m == s.model)
            .ok_or_else(|| {
                self.err(
                    &at.field("model"),
                    format!(
                        "no model '{}' (models: {})",
                        s.model,
                        if self.ctx.models.is_empty() {
                            "none".into()
                        } else {
                            self.ctx.models.join(", ")
                        }
                    ),
                )
            })?;
        if s.at_least.is_none() && s.below.is_none() {
            return Err(self.err(at, "give at_least, below or both"));
        }
        let at_least = s.at_least.unwrap_or(f64::NEG_INFINITY);
        let below = s.below.unwrap_or(f64::INFINITY);
        if at_least >= below {
            return Err(self.err(
                at,
                format!("no score is at least {at_least} and below {below}"),
            ));
        }
        Ok(ScoreCond {
            model,
            at_least,
            below,
        })
    }
}

/// Every TLS family, to find one by name.
const FAMILIES: [Family; 5] = [
    Family::Unknown,
    Family::Boringssl,
    Family::Nss,
    Family::Openssl,
    Family::Go,
];

/// An RFC 9110 token character (methods, header names).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A rule's name: a list name's characters and `/` (presets name theirs
/// `feeds/path`).
fn valid_rule_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NAME
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
}

fn valid_tag(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= MAX_TAG
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
}

/// A DNS name (letters, digits, `-`, `.`), an IPv4 address or a bracketed
/// IPv6 one; lower-case already.
fn valid_host(h: &[u8]) -> bool {
    if h.is_empty() || h.len() > 253 {
        return false;
    }
    if let Some(inner) = h.strip_prefix(b"[").and_then(|r| r.strip_suffix(b"]")) {
        return std::str::from_utf8(inner)
            .ok()
            .and_then(|s| s.parse::<std::net::Ipv6Addr>().ok())
            .is_some();
    }
    h.iter()
        .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !h.starts_with(b".")
        && !h.ends_with(b".")
        && !h.windows(2).any(|w| w == b"..")
}
