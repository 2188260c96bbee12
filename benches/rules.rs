//! What rules add to a request, side by side with no rules:
//!
//! - `none`: the view of the request built (what the gate does anyway
//!   to evaluate rules) and no rule;
//! - `plain50`: `benches/data/rules/plain50.json`, 50 rules of a real
//!   site without a regular expression, both stages;
//! - `regex10`: the same with 10 rules' tests written as regular
//!   expressions, each one reached;
//! - `presets`: every shipped preset (well-known, feeds, link-previews,
//!   monitors, webhooks);
//!
//! each for a browser's page request that meets no rule (every rule is
//! tested: the worst case, and the common one) and, for `plain50`, a
//! feed reader that the 7th rule takes. Targets (issue 32): at most
//! 150 ns more than `none` for plain50 and 500 ns for regex10.
//!
//! The `gate` group runs the same page request through `gate::run` with a
//! location without rules and one with each file: what the rule stages
//! cost in the pipeline, side by side.
//!
//! Run: `cargo bench --bench rules`

use std::hint::black_box;
use std::path::Path;

use criterion::Criterion;
use edgeguard::features::TlsFacts;
use edgeguard::headers::Header;
use edgeguard::rules::{split_target, Context, NormalPath, Rules, View};
use edgeguard::tls::Family;

mod common;
use common::{CHROME, JA4};

const MODELS: &[&str] = &["bot", "spoof"];

/// A feed reader's request.
const READER: &[(&str, &str)] = &[
    ("host", "www.example.com"),
    ("user-agent", "Miniflux/2.1.3 (+https://miniflux.app)"),
    (
        "accept",
        "application/rss+xml, application/atom+xml, */*;q=0.5",
    ),
    ("accept-encoding", "gzip"),
];

const SCORES: [f64; 2] = [0.12, 0.03];

fn headers(h: &'static [(&'static str, &'static str)]) -> Vec<Header<'static>> {
    h.iter()
        .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
        .collect()
}

/// The view as the gate builds it from its request: host and User-Agent
/// found among the headers, the target split, the client parsed.
fn view<'a>(method: &'a [u8], target: &'a [u8], headers: &'a [Header<'a>]) -> View<'a> {
    let first = |name: &[u8]| {
        headers
            .iter()
            .find(|h| h.name() == name)
            .map_or(&b""[..], |h| h.value())
    };
    let (path, query) = split_target(target);
    View {
        method,
        host: first(b"host"),
        path,
        query,
        headers,
        user_agent: first(b"user-agent"),
        client: Some("203.0.113.50".parse().unwrap()),
        bot: None,
        tls: TlsFacts::new(JA4, Family::Boringssl),
        scores: &[],
        fleet: None,
        clients: None,
    }
}

/// Both stages, as the gate runs them: before scoring, then after with
/// the scores if nothing matched.
fn evaluate(rules: &Rules, v: &View<'_>, scratch: &mut NormalPath) -> usize {
    if let Some(m) = rules.before_scoring(v, scratch) {
        return m.index;
    }
    let v = View {
        scores: &SCORES,
        ..*v
    };
    rules
        .after_scoring(&v, scratch)
        .map_or(usize::MAX, |m| m.index)
}

/// `EDGEGUARD_RULES_LOOP=NAME:COUNT`, if set.
fn loop_spec() -> Option<(String, u64)> {
    let spec = std::env::var("EDGEGUARD_RULES_LOOP").ok()?;
    let (name, n) = spec.split_once(':').expect("NAME:COUNT");
    Some((name.to_owned(), n.parse().expect("a count")))
}

fn load(root: &Path, text: &str) -> Rules {
    Rules::parse("bench", root, text.as_bytes(), &Context { models: MODELS }).unwrap()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("benches/data/rules");
    let plain = Rules::load(&dir.join("plain50.json"), &Context { models: MODELS }).unwrap();
    let regex = Rules::load(&dir.join("regex10.json"), &Context { models: MODELS }).unwrap();
    let presets = load(
        root,
        r#"{"rules": [{"preset": "well-known"}, {"preset": "feeds"}, {"preset": "link-previews"},
                      {"preset": "monitors"}, {"preset": "webhooks"}]}"#,
    );

    assert_eq!((plain.len(), regex.len()), (50, 50));
    let chrome = headers(CHROME);
    let reader = headers(READER);
    let page = (b"GET".as_slice(), b"/products/42?ref=home".as_slice());
    let feed = (b"GET".as_slice(), b"/feed/".as_slice());

    // The claims the numbers rest on: the page meets no rule, the feed
    // reader meets the 7th.
    let mut scratch = NormalPath::new();
    for r in [&plain, &regex, &presets] {
        assert_eq!(
            evaluate(r, &view(page.0, page.1, &chrome), &mut scratch),
            usize::MAX
        );
    }
    assert_eq!(
        evaluate(&plain, &view(feed.0, feed.1, &reader), &mut scratch),
        6
    );

    // `EDGEGUARD_RULES_LOOP=plain50:1000000`: that many evaluations of a
    // case and nothing else, for `perf stat -e instructions` (steady on a
    // loaded machine, unlike time; subtract a run with fewer).
    if let Some((name, n)) = loop_spec() {
        if name.starts_with("gate-") {
            let mut c = Criterion::default();
            gate_group(&mut c, root, &chrome, page);
            return;
        }
        let rules = match name.as_str() {
            "none" => None,
            "plain50" => Some(&plain),
            "regex10" => Some(&regex),
            "presets" => Some(&presets),
            other => panic!("no case {other}"),
        };
        let mut sum = 0;
        for _ in 0..n {
            let v = view(black_box(page.0), black_box(page.1), black_box(&chrome));
            sum += match rules {
                Some(r) => evaluate(r, &v, &mut scratch),
                None => v.path.len() + v.user_agent.len(),
            };
        }
        black_box(sum);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("rules");
    g.bench_function("none/page", |b| {
        b.iter(|| {
            let v = view(black_box(page.0), black_box(page.1), black_box(&chrome));
            black_box(v.path.len() + v.user_agent.len())
        })
    });
    for (name, rules) in [
        ("plain50", &plain),
        ("regex10", &regex),
        ("presets", &presets),
    ] {
        g.bench_function(format!("{name}/page"), |b| {
            b.iter(|| {
                let v = view(black_box(page.0), black_box(page.1), black_box(&chrome));
                black_box(evaluate(rules, &v, &mut scratch))
            })
        });
    }
    g.bench_function("plain50/feed-reader", |b| {
        b.iter(|| {
            let v = view(black_box(feed.0), black_box(feed.1), black_box(&reader));
            black_box(evaluate(&plain, &v, &mut scratch))
        })
    });
    g.finish();
    gate_group(&mut c, root, &chrome, page);
    c.final_summary();
}

/// A snapshot of 100 000 entries that knows the Chrome request's JA4 and
/// headers key (widely solved), in a temporary directory.
fn signals_file(chrome: &[Header<'static>]) -> std::path::PathBuf {
    use edgeguard::features::{extract, FeatureVector, Request};
    use edgeguard::signals::key::headers_key_of;
    use edgeguard::signals::{Counts, Kind, Snapshot, KEY_CAP};
    let people = Counts {
        requests: 90_000,
        prefixes24: 20_000,
        prefixes48: 1_000,
        user_agents: 20,
        flagged: 90,
        challenges: 400,
        solved: 390,
        cleared: 30_000,
    };
    let mut s = Snapshot::new(1_800_000_000, 3600);
    let req = Request::new(b"GET", b"/", 20, b"203.0.113.50", chrome);
    let mut v = FeatureVector::new();
    extract(&req, &mut v);
    let mut buf = [0; KEY_CAP];
    let key = std::str::from_utf8(headers_key_of(&v, &mut buf))
        .unwrap()
        .to_owned();
    s.insert(Kind::Headers, &key, people).unwrap();
    s.insert(Kind::Ja4, std::str::from_utf8(JA4).unwrap(), people)
        .unwrap();
    for i in 0..99_998u64 {
        let c = Counts {
            requests: 10,
            prefixes24: 2,
            ..Default::default()
        };
        s.insert(
            Kind::Ja4,
            &format!("t13d1516h2_{:012x}_{:012x}", i * 7919, i),
            c,
        )
        .unwrap();
    }
    let dir = std::env::temp_dir().join(format!("edgeguard-bench-signals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("signals.json");
    let mut out = Vec::new();
    s.write(&mut out).unwrap();
    std::fs::write(&path, out).unwrap();
    path
}

/// The same through the gate, as nginx runs a request (given the scores,
/// texts written): a location without rules and one with each file, so
/// the difference is what the rule stages cost in place.
fn gate_group(
    c: &mut Criterion,
    root: &Path,
    chrome: &[Header<'static>],
    page: (&'static [u8], &'static [u8]),
) {
    use edgeguard::config::Options;
    use edgeguard::gate::{self, Given, Job, Location, Models};
    let location = |rules: &str| {
        let json = format!(
            r#"{{"models": {{"bot": "models/bot.json", "spoof": "models/spoof.json"}}, "mode": "block",
                 "challenge_secret": "tests/fixtures/challenge/secret", "vars": true{rules}}}"#
        );
        let o = Options::configure("bench", Some(root), json.as_bytes()).unwrap();
        Location::new(
            &o,
            Models::Given(&[("bot", Some(0.5)), ("spoof", Some(0.5))]),
            None,
        )
        .unwrap()
    };
    let snapshot = signals_file(chrome);
    let cases = [
        ("none", location("")),
        // The fleet stage: the features extracted for the headers key (a
        // location with a scorer shares them with scoring; here the scores
        // are given, so this is its whole cost), both keys looked up in a
        // snapshot of 100 000 entries that knows them, a signal rule that
        // does not hold, $edgeguard_fp_* written.
        (
            "signals",
            location(&format!(
                r#", "signals": "{}", "signals_refresh": 0,
                   "rules": [{{"name": "spread", "when": {{"signal": {{"prefixes": {{"min": 50}}, "solved": {{"max": 0.05}}}}}}, "action": "block"}}]"#,
                snapshot.display()
            )),
        ),
        (
            "plain50",
            location(r#", "rules": "benches/data/rules/plain50.json""#),
        ),
        (
            "regex10",
            location(r#", "rules": "benches/data/rules/regex10.json""#),
        ),
        (
            "presets",
            location(
                r#", "rules": ["preset:well-known", "preset:feeds", "preset:link-previews", "preset:monitors", "preset:webhooks"]"#,
            ),
        ),
    ];
    let mut scratch = gate::Scratch::new();
    let mut one = |loc: &Location| {
        let req = gate::Incoming::new(
            black_box(page.0),
            black_box(page.1),
            20,
            b"203.0.113.50",
            black_box(chrome),
            TlsFacts::new(JA4, Family::Boringssl),
        )
        .given(Given {
            scores: Some(&SCORES),
            ..Given::default()
        });
        let e = gate::run(loc, &req, Job::Access, 1_800_000_000, &mut scratch).unwrap();
        assert!(e.rule.is_none());
        black_box(e.action)
    };
    // `EDGEGUARD_RULES_LOOP=gate-plain50:20000`, as for the rules alone.
    if let Some((name, n)) = loop_spec() {
        if let Some(name) = name.strip_prefix("gate-") {
            let (_, loc) = cases
                .iter()
                .find(|(n, _)| *n == name)
                .expect("no such gate case");
            for _ in 0..n {
                one(loc);
            }
        }
        let _ = std::fs::remove_dir_all(snapshot.parent().unwrap_or(&snapshot));
        return;
    }
    let mut g = c.benchmark_group("gate");
    for (name, loc) in &cases {
        g.bench_function(format!("{name}/page"), |b| b.iter(|| one(loc)));
    }
    g.finish();
    // This library's scorer: the fleet stage's features are the ones it
    // scores, so signals add the lookups, not a second extraction.
    let scored = |extra: &str| {
        let json = format!(
            r#"{{"models": {{"bot": "models/bot.json"}}, "mode": "log", "vars": true{extra}}}"#
        );
        let o = Options::configure("bench", Some(root), json.as_bytes()).unwrap();
        let scorer =
            edgeguard::scorer::Scorer::load(&[("bot", &root.join("models/bot.json"))]).unwrap();
        Location::new(&o, Models::Scorer(std::sync::Arc::new(scorer)), None).unwrap()
    };
    let scored_cases = [
        ("scored", scored("")),
        (
            "scored-signals",
            scored(&format!(
                r#", "signals": "{}", "signals_refresh": 0"#,
                snapshot.display()
            )),
        ),
    ];
    let mut g = c.benchmark_group("gate");
    for (name, loc) in &scored_cases {
        g.bench_function(format!("{name}/page"), |b| {
            b.iter(|| {
                let req = gate::Incoming::new(
                    black_box(page.0),
                    black_box(page.1),
                    20,
                    b"203.0.113.50",
                    black_box(chrome),
                    TlsFacts::new(JA4, Family::Boringssl),
                );
                let e = gate::run(loc, &req, Job::Access, 1_800_000_000, &mut scratch).unwrap();
                black_box(e.action)
            })
        });
    }
    g.finish();
    // Read at configure: the file is no longer needed.
    let _ = std::fs::remove_dir_all(snapshot.parent().unwrap_or(&snapshot));
}
