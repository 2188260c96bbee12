//! Site rules as stages of the gate: locations made from options as nginx
//! and replay make them, requests run through `gate::run`, and what each
//! action does to the effects (exit, scores, variables, decision line).

use std::path::{Path, PathBuf};

use edgeguard::config::{ErrorOrigin, Options};
use edgeguard::gate::{self, Effects, Exit, Given, Job, Location, Models, Scratch};
use edgeguard::headers::Header;
use edgeguard::outcome::Outcome;
use edgeguard::rules;

const NOW: u64 = 1_800_000_000;
const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Options of `configure{}` (paths relative to the repository).
fn options(json: &str) -> Options {
    Options::configure("edgeguard.configure", Some(root()), json.as_bytes())
        .unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// A location of the legacy engine's models, in `order`: the run is given
/// their scores, so each test picks what the model said.
fn location(o: &Options, order: &'static [(&'static str, Option<f64>)]) -> Location {
    Location::new(o, Models::Given(order), None).unwrap()
}

const MODELS: &[(&str, Option<f64>)] = &[("bot", Some(0.5)), ("spoof", Some(0.5))];
const MODELS_JSON: &str = r#""lua_models": {"bot": "b.json", "spoof": "s.json"}, "engine": "lua""#;

struct Req {
    method: &'static [u8],
    uri: &'static [u8],
    headers: Vec<(&'static [u8], &'static [u8])>,
}

fn get(uri: &'static [u8], ua: &'static [u8]) -> Req {
    Req {
        method: b"GET",
        uri,
        headers: vec![(b"host", b"example.com"), (b"user-agent", ua)],
    }
}

fn run<'a>(loc: &'a Location, r: &Req, scores: &[f64], scratch: &'a mut Scratch) -> Effects<'a> {
    let h: Vec<Header<'_>> = r.headers.iter().map(|(n, v)| Header::new(n, v)).collect();
    let req = gate::Incoming::new(r.method, r.uri, 11, b"192.0.2.10", &h, None).given(Given {
        scores: Some(scores),
        ..Given::default()
    });
    gate::run(loc, &req, Job::Access, NOW, scratch).unwrap()
}

fn line(e: &Effects<'_>) -> String {
    e.line
        .map(|(l, _)| String::from_utf8_lossy(l).into_owned())
        .unwrap_or_default()
}

fn var(e: &Effects<'_>, name: &str) -> Option<String> {
    e.vars
        .iter()
        .find(|(n, _)| *n == name.as_bytes())
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
}

const FLAGGED: &[f64] = &[0.9, 0.1];
const HUMAN: &[f64] = &[0.1, 0.1];

#[test]
fn a_pass_before_scoring_is_not_scored_and_names_its_rule() {
    let o = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "block", "vars": true, "rules": ["preset:well-known", "preset:feeds"]}}"#
    ));
    let loc = location(&o, MODELS);
    let mut s = Scratch::new();
    let e = run(
        &loc,
        &get(b"/blog/feed.xml", b"python-requests/2.31"),
        FLAGGED,
        &mut s,
    );
    assert_eq!(e.action, Outcome::Pass);
    assert_eq!(e.exit, Exit::Continue);
    assert_eq!(e.scores, None, "a pass before scoring is not scored");
    let r = e.rule.unwrap();
    assert_eq!(
        (r.name, r.tag, r.before_scoring),
        ("feeds/path", "feed", true)
    );
    assert_eq!(var(&e, "edgeguard_rule").as_deref(), Some("feeds/path"));
    assert_eq!(var(&e, "edgeguard_tag").as_deref(), Some("feed"));
    assert_eq!(var(&e, "edgeguard_action").as_deref(), Some("pass"));
    assert_eq!(line(&e), "", "a pass is not logged");
    // The same script elsewhere: the model decides.
    let e = run(
        &loc,
        &get(b"/blog/post", b"python-requests/2.31"),
        FLAGGED,
        &mut s,
    );
    assert_eq!(e.action, Outcome::Block);
    assert_eq!(e.rule, None);
    assert_eq!(var(&e, "edgeguard_rule").as_deref(), Some(""));
    // robots.txt, normalized as nginx matches locations.
    let e = run(&loc, &get(b"/a/..//robots.txt", b"curl/8"), FLAGGED, &mut s);
    assert_eq!(e.rule.map(|r| r.name), Some("well-known/robots-txt"));
    assert_eq!(e.action, Outcome::Pass);
}

#[test]
fn block_takes_the_rules_status_and_logs_name_and_tag() {
    let o = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "log", "status": 429, "rules": [
            {{"name": "no-admin", "tag": "admin", "when": {{"path": {{"prefix": "/admin/"}}}}, "action": "block", "status": 451}},
            {{"name": "sure", "when": {{"score": {{"model": "spoof", "at_least": 0.8}}}}, "action": "block"}}]}}"#
    ));
    let loc = location(&o, MODELS);
    let mut s = Scratch::new();
    let e = run(&loc, &get(b"/admin/x", CHROME), HUMAN, &mut s);
    // A block answers its status with a body naming its reference.
    assert_eq!((e.action, e.exit.status()), (Outcome::Block, 451));
    assert_eq!(e.scores, None);
    let l = line(&e);
    assert!(
        l.starts_with("edgeguard action=block request_id= host=example.com client=192.0.2.10"),
        "{l}"
    );
    assert!(l.ends_with(" rule=no-admin tag=admin"), "{l}");
    // After scoring: the model alone would log (mode log); the rule blocks
    // with its default status.
    let e = run(&loc, &get(b"/", CHROME), &[0.1, 0.85], &mut s);
    assert_eq!((e.action, e.exit.status()), (Outcome::Block, 403));
    let r = e.rule.unwrap();
    assert_eq!((r.name, r.before_scoring), ("sure", false));
    assert!(e.scores.is_some());
    assert!(line(&e).ends_with(" rule=sure"), "{}", line(&e));
    // Below the range: the default decision.
    let e = run(&loc, &get(b"/", CHROME), &[0.9, 0.5], &mut s);
    assert_eq!(e.action, Outcome::Log);
    assert_eq!(e.rule, None);
}

#[test]
fn allow_is_scored_and_logged_never_acted_on() {
    let o = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "block", "rules": [
            {{"name": "api", "tag": "api", "when": {{"path": {{"prefix": "/api/"}}, "header": {{"name": "authorization", "prefix": "Bearer "}}}}, "action": "allow"}}]}}"#
    ));
    let loc = location(&o, MODELS);
    let mut s = Scratch::new();
    let mut r = get(b"/api/v1/items", b"okhttp/4.12");
    r.headers.push((b"Authorization", b"Bearer abc"));
    let e = run(&loc, &r, FLAGGED, &mut s);
    assert_eq!((e.action, e.exit), (Outcome::Allow, Exit::Continue));
    assert!(e.scores.is_some(), "allow scores");
    assert_eq!(
        e.flagged.map(|f| f.0),
        Some(0),
        "the model's verdict is kept"
    );
    let l = line(&e);
    assert!(
        l.starts_with(
            "edgeguard action=allow grade=certain reasons=ua_library model=bot score=0.900000"
        ),
        "{l}"
    );
    assert!(l.ends_with(" rule=api tag=api"), "{l}");
    // Not flagged: passed, and no line.
    let e = run(&loc, &r, HUMAN, &mut s);
    assert_eq!(e.action, Outcome::Pass);
    assert_eq!(e.rule.map(|r| r.name), Some("api"));
    assert_eq!(line(&e), "");
    // Without the token the rule does not hold.
    let e = run(
        &loc,
        &get(b"/api/v1/items", b"okhttp/4.12"),
        FLAGGED,
        &mut s,
    );
    assert_eq!(e.action, Outcome::Block);
}

#[test]
fn log_keeps_the_decision_and_writes_the_line() {
    let o = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "off", "rules": [
            {{"name": "watch", "tag": "w", "when": {{"method": "POST"}}, "action": "log"}}]}}"#
    ));
    let loc = location(&o, MODELS);
    let mut s = Scratch::new();
    let mut r = get(b"/form", CHROME);
    r.method = b"POST";
    let e = run(&loc, &r, HUMAN, &mut s);
    assert_eq!(e.action, Outcome::Pass);
    assert!(e.scores.is_some());
    assert!(line(&e).ends_with(" rule=watch tag=w"), "{}", line(&e));
}

#[test]
fn scores_reach_rules_in_their_order_whatever_the_locations() {
    // The legacy engine hands its scores as "spoof", "bot"; rules name the
    // models by name.
    const REVERSED: &[(&str, Option<f64>)] = &[("spoof", Some(0.5)), ("bot", Some(0.5))];
    let o = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "log", "rules": [
            {{"name": "bot-high", "when": {{"score": {{"model": "bot", "at_least": 0.8}}}}, "action": "block", "status": 418}}]}}"#
    ));
    let loc = location(&o, REVERSED);
    let mut s = Scratch::new();
    let e = run(&loc, &get(b"/", CHROME), &[0.1, 0.9], &mut s);
    assert_eq!(e.exit.status(), 418, "bot is 0.9");
    let e = run(&loc, &get(b"/", CHROME), &[0.9, 0.1], &mut s);
    assert_eq!(e.rule, None, "spoof is 0.9, bot 0.1");
}

#[test]
fn a_location_replaces_the_rules_or_turns_them_off() {
    let base = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "block", "rules": "preset:feeds"}}"#
    ));
    let off = base
        .with_access("edgeguard.access", br#"{"rules": false}"#)
        .unwrap();
    let other = base
        .with_access("edgeguard.access", br#"{"rules": ["preset:well-known"]}"#)
        .unwrap();
    let inherited = base.with_access("edgeguard.access", br#"{}"#).unwrap();
    let mut s = Scratch::new();
    let feed = get(b"/feed.xml", b"curl/8");
    let robots = get(b"/robots.txt", b"curl/8");
    let act = |o: &Options, r: &Req, s: &mut Scratch| {
        let loc = location(o, MODELS);
        run(&loc, r, FLAGGED, s).action
    };
    assert_eq!(act(&inherited, &feed, &mut s), Outcome::Pass);
    assert_eq!(act(&off, &feed, &mut s), Outcome::Block);
    assert_eq!(act(&other, &feed, &mut s), Outcome::Block);
    assert_eq!(act(&other, &robots, &mut s), Outcome::Pass);
    assert_eq!(act(&inherited, &robots, &mut s), Outcome::Block);
    assert!(Location::new(&off, Models::Given(MODELS), None)
        .unwrap()
        .rules()
        .is_none());
}

#[test]
fn replay_can_run_without_the_rules() {
    let o = options(&format!(
        r#"{{{MODELS_JSON}, "mode": "block", "rules": "preset:feeds"}}"#
    ));
    let loc = location(&o, MODELS);
    let mut s = Scratch::decisions_only();
    assert_eq!(
        run(&loc, &get(b"/feed", b"curl/8"), FLAGGED, &mut s).action,
        Outcome::Pass
    );
    s.set_rules(false);
    let e = run(&loc, &get(b"/feed", b"curl/8"), FLAGGED, &mut s);
    assert_eq!((e.action, e.rule), (Outcome::Block, None));
}

#[test]
fn a_challenging_rule_needs_the_challenge_and_serves_it() {
    let e = Options::configure(
        "edgeguard.configure",
        Some(root()),
        br#"{"rules": [{"when": {"path": {"prefix": "/login"}}, "action": "challenge"}]}"#,
    )
    .unwrap_err();
    assert_eq!(e.key(), Some("rules[0]"));
    assert!(e.to_string().contains("needs challenge_secret"), "{e}");
    // The challenge is the Rust engine's; the run is still given scores.
    let o = options(
        r#"{"models": {"bot": "models/bot.json", "spoof": "models/spoof.json"}, "mode": "log",
            "challenge_secret": "tests/fixtures/challenge/secret",
            "rules": [{"name": "login", "when": {"path": {"prefix": "/login"}}, "action": "challenge"}]}"#,
    );
    let loc = location(&o, MODELS);
    let mut s = Scratch::new();
    let mut nav = get(b"/login", CHROME);
    nav.headers.extend([
        (&b"accept"[..], &b"text/html,application/xhtml+xml"[..]),
        (b"sec-fetch-mode", b"navigate"),
        (b"sec-fetch-dest", b"document"),
    ]);
    let e = run(&loc, &nav, HUMAN, &mut s);
    assert_eq!(e.action, Outcome::Challenge);
    assert!(matches!(e.exit, Exit::Page { .. }), "{:?}", e.exit);
    let e = run(&loc, &get(b"/login", b"curl/8"), HUMAN, &mut s);
    assert_eq!(e.action, Outcome::Block, "a request that cannot run a page");
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("edgeguard-rules-gate-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bad_rules_are_refused_naming_source_entry_and_field() {
    let d = dir("bad");
    let bad = d.join("site.json");
    std::fs::write(
        &bad,
        r#"{"rules": [{"when": {"path": {"prefix": "/a"}}, "action": "pass"},
                       {"when": {"path": {"regex": "(unclosed"}}, "action": "block"}]}"#,
    )
    .unwrap();
    let json = format!(r#"{{"rules": ["preset:feeds", "{}"]}}"#, bad.display());
    let e = Options::configure("edgeguard.configure", None, json.as_bytes()).unwrap_err();
    assert_eq!(e.origin(), ErrorOrigin::File, "{e}");
    assert_eq!(e.key(), Some("rules[1]"));
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "edgeguard.configure: rules[1]: {}: rules[1].when.path.regex: ",
            bad.display()
        )),
        "{msg}"
    );
    let cases: &[(&str, &str, &str)] = &[
        (r#"{"rules": "preset:feed"}"#, "rules", "no preset 'feed'"),
        (r#"{"rules": []}"#, "rules", "lists nothing"),
        (r#"{"rules": 3}"#, "rules", "must be false, a rules file"),
        (r#"{"rules": true}"#, "rules", "must be false, a rules file"),
        (
            r#"{"rules": ["preset:feeds", 3]}"#,
            "rules[1]",
            "must be false",
        ),
        (
            r#"{"rules": [{"when": {"metod": "GET"}, "action": "pass"}]}"#,
            "rules[0].when.metod",
            "unknown field `metod`",
        ),
        (
            r#"{"rules": [{"when": {"score": {"model": "bot", "at_least": 0.5}}, "action": "block"}]}"#,
            "rules[0].when.score.model",
            "no model 'bot'",
        ),
        (
            r#"{"rules": [{"when": {"path": {"prefix": "/"}}, "action": "pass"}, "preset:feeds", {"name": "feeds/path", "action": "pass"}]}"#,
            "rules[2].name",
            "is also the name of",
        ),
    ];
    for (json, key, want) in cases {
        let e = Options::configure("edgeguard.configure", None, json.as_bytes()).unwrap_err();
        assert_eq!(e.origin(), ErrorOrigin::Caller, "{json}: {e}");
        assert_eq!(e.key(), Some(*key), "{json}: {e}");
        assert!(e.to_string().contains(want), "{json}: {e}");
    }
    // A file's challenging rule without the challenge's keys: the file's.
    let ch = d.join("challenge.json");
    std::fs::write(
        &ch,
        r#"{"rules": [{"when": {"method": "POST"}, "action": "challenge"}]}"#,
    )
    .unwrap();
    let json = format!(r#"{{"rules": ["{}"]}}"#, ch.display());
    let e = Options::configure("edgeguard.configure", None, json.as_bytes()).unwrap_err();
    assert_eq!(e.origin(), ErrorOrigin::File, "{e}");
    assert!(e.to_string().contains("needs challenge_secret"), "{e}");
    let base = options("{}");
    let e = base
        .with_access(
            "edgeguard.access",
            br#"{"rules": ["preset:feeds", {"action": "pass"}]}"#,
        )
        .unwrap_err();
    assert_eq!(e.key(), Some("rules[1]"));
    assert!(e.to_string().contains("per location"), "{e}");
    let e = base
        .with_access(
            "edgeguard.access",
            br#"{"rules": "/nonexistent/rules.json"}"#,
        )
        .unwrap_err();
    assert_eq!(e.origin(), ErrorOrigin::File, "{e}");
    assert!(e.to_string().contains("/nonexistent/rules.json"), "{e}");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_configuration_file_takes_rules_relative_to_itself() {
    let d = dir("file");
    std::fs::write(
        d.join("site-rules.json"),
        r#"{"lists": {"office": ["192.0.2.0/24"]},
            "rules": [{"when": {"client": "office"}, "action": "pass", "tag": "office"}]}"#,
    )
    .unwrap();
    std::fs::write(
        d.join("edgeguard.json"),
        r#"{"mode": "block", "rules": ["preset:well-known", "site-rules.json"]}"#,
    )
    .unwrap();
    let cfg = edgeguard::load::Config::load(&d.join("edgeguard.json")).unwrap();
    let rules = cfg.location().rules().unwrap();
    // 5 well-known rules, then the file's unnamed rule named after it.
    let last = rules.describe(rules.len() - 1).unwrap();
    assert_eq!(last.name, "site-rules/0");
    assert_eq!(last.tag, "office");
    assert!(last.from.starts_with("rules[1] ("), "{}", last.from);
    let v: serde_json::Value = serde_json::from_str(&options("{}").resolved_json()).unwrap();
    assert!(v.get("rules").is_none());
    let o = Options::load_file(&d.join("edgeguard.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&o.resolved_json()).unwrap();
    assert_eq!(v["rules"][0], "preset:well-known");
    assert_eq!(
        v["rules"][1],
        d.join("site-rules.json").display().to_string()
    );
    let _ = rules::Part::Preset(String::new());
    std::fs::remove_dir_all(d).unwrap();
}

/// Replay's report per rule: how many requests each decided, and what the
/// same configuration without rules does to exactly those requests.
#[test]
fn replay_reports_each_rule_against_the_model_alone() {
    use edgeguard::replay;
    use std::io::Cursor;
    let d = dir("replay");
    let m = root();
    let write = |name: &str, rules: &str| {
        let path = d.join(name);
        std::fs::write(
            &path,
            format!(
                r#"{{"models": {{"bot": "{}", "spoof": "{}"}}, "mode": "block"{rules}}}"#,
                m.join("models/bot.json").display(),
                m.join("models/spoof.json").display(),
            ),
        )
        .unwrap();
        edgeguard::load::Config::load(&path).unwrap()
    };
    let with = write(
        "with.json",
        r#", "rules": [{"name": "search", "tag": "s", "when": {"path": {"prefix": "/search"}}, "action": "pass"},
                        {"name": "unused", "when": {"path": {"prefix": "/nothing-here/"}}, "action": "block"}]"#,
    );
    let without = write("without.json", "");
    let text = std::fs::read(m.join("tests/fixtures/traffic/sample.jsonl")).unwrap();
    let run = |cfg: &edgeguard::load::Config| {
        let mut out = Vec::new();
        let input = replay::Input::from_reader("t", Box::new(Cursor::new(text.clone())), None);
        let opts = replay::Options {
            threads: 2,
            ordered: true,
            progress: false,
            ..replay::Options::default()
        };
        let summary = replay::run(vec![input], cfg, None, Some(&mut out), &opts).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (summary, lines)
    };
    let (summary, lines) = run(&with);
    let (_, alone) = run(&without);
    assert_eq!(lines.len(), alone.len());
    let ruled: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].get("rule").is_some())
        .collect();
    assert!(!ruled.is_empty(), "the fixture has /search requests");
    let mut want = std::collections::BTreeMap::new();
    for &i in &ruled {
        assert_eq!(lines[i]["rule"], "search");
        assert_eq!(lines[i]["action"], "pass");
        assert_eq!(lines[i]["without_rules"], alone[i]["action"], "line {i}");
        *want
            .entry(alone[i]["action"].as_str().unwrap().to_owned())
            .or_insert(0u64) += 1;
    }
    for (i, l) in lines.iter().enumerate() {
        if l.get("rule").is_none() {
            assert_eq!(
                l["action"], alone[i]["action"],
                "line {i}: no rule, same decision"
            );
        }
    }
    let r = &summary.primary.rules;
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].name.as_str(), r[0].decided),
        ("search", ruled.len() as u64)
    );
    assert_eq!(
        (r[1].name.as_str(), r[1].action.as_str(), r[1].decided),
        ("unused", "block 403", 0)
    );
    for a in Outcome::ALL {
        let n = want.get(a.as_str()).copied().unwrap_or(0);
        assert_eq!(r[0].without[a.index()], n, "{}", a.as_str());
    }
    let text = summary.render();
    assert!(
        text.contains(&format!(
            "    search (pass): {} requests; without rules:",
            ruled.len()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "rules: 2, which decided {} requests (1 decided none)",
            ruled.len()
        )),
        "{text}"
    );
    std::fs::remove_dir_all(d).unwrap();
}
