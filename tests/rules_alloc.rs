//! Evaluating rules allocates nothing once warm: every condition kind
//! (regexes, automatons, address lists, normalized paths) through both
//! stages; dhat counts every heap block while they run.

use std::net::IpAddr;
use std::path::Path;

use edgeguard::features::TlsFacts;
use edgeguard::headers::Header;
use edgeguard::rules::{split_target, Action, BotView, Context, NormalPath, Rules, View};
use edgeguard::signals::{Counts, Lookup};
use edgeguard::tls::Family;
use edgeguard::verified::Category;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    // One profiler for the process (dhat allows one).
    let _profiler = dhat::Profiler::builder().testing().build();
    evaluating_does_not_allocate();
    gate_runs_with_rules_do_not_allocate();
    gate_runs_with_signals_do_not_allocate();
    gate_runs_behind_a_trusted_hop_do_not_allocate();
    println!("rules_alloc: 4 passed, 0 failed");
}

/// Runs `run` once to warm every buffer, then 200 times under dhat: no
/// allocation, and every round records what the first did. Returns the
/// first round's record, for the caller's own checks of the work done.
fn rounds_allocate_nothing(what: &str, mut run: impl FnMut(&mut Vec<usize>)) -> Vec<usize> {
    let mut warm = Vec::with_capacity(4096);
    run(&mut warm);
    let mut seen = Vec::with_capacity(warm.len() * 201);
    let before = dhat::HeapStats::get();
    for _ in 0..200 {
        run(&mut seen);
    }
    let after = dhat::HeapStats::get();
    assert_eq!(after.total_blocks, before.total_blocks, "{what}");
    assert_eq!(&seen[..warm.len()], &warm[..]);
    warm
}

struct Case {
    method: &'static str,
    target: &'static str,
    headers: &'static [(&'static str, &'static str)],
    client: &'static str,
    bot: Option<BotView<'static>>,
    tls: Option<(&'static str, Family)>,
    fleet: Option<Lookup>,
}

/// A fingerprint the fleet saw from many prefixes that never solved a
/// challenge, and a browser's that people solve.
const SPREAD: Counts = Counts {
    requests: 5000,
    prefixes24: 900,
    prefixes48: 12,
    user_agents: 40,
    flagged: 4000,
    challenges: 800,
    solved: 0,
    cleared: 0,
};
const BROWSER: Counts = Counts {
    requests: 90000,
    prefixes24: 20000,
    prefixes48: 3000,
    user_agents: 30,
    flagged: 100,
    challenges: 500,
    solved: 480,
    cleared: 30000,
};

const CHROME_UA: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

const CASES: &[Case] = &[
    Case {
        method: "GET",
        target: "/products/42?ref=home",
        headers: &[
            ("host", "www.example.com"),
            ("user-agent", CHROME_UA),
            ("accept", "text/html"),
            ("cookie", "a=b"),
        ],
        client: "203.0.113.50",
        bot: None,
        tls: Some(("t13d1516h2_8daaf6152771_02713d6af862", Family::Boringssl)),
        fleet: Some(Lookup {
            ja4: Some(BROWSER),
            headers: Some(BROWSER),
        }),
    },
    // Paths that need normalizing (the scratch buffer), an unknown method.
    Case {
        method: "GET",
        target: "/.well-known/%2e%2e//admin/./x?a=%20",
        headers: &[("host", "Admin.Example.com:443")],
        client: "192.0.2.9",
        bot: None,
        tls: None,
        fleet: None,
    },
    Case {
        method: "PROPFIND",
        target: "/a/b/../c",
        headers: &[("host", "x"), ("X_Api_Key", "k"), ("x-api-key", "j")],
        client: "2001:db8:100::1",
        bot: None,
        tls: Some(("t13d3112h2_e8f1e7e78f70_6bebaf5329ac", Family::Openssl)),
        fleet: Some(Lookup {
            ja4: Some(SPREAD),
            headers: None,
        }),
    },
    // Bots, feed readers, webhooks, every preset.
    Case {
        method: "GET",
        target: "/feed/",
        headers: &[
            ("host", "www.example.com"),
            ("user-agent", "Miniflux/2.1"),
            ("accept", "application/rss+xml"),
        ],
        client: "198.51.100.3",
        bot: None,
        tls: None,
        fleet: None,
    },
    Case {
        method: "GET",
        target: "/x",
        headers: &[("user-agent", "GPTBot/1.3")],
        client: "192.0.2.200",
        bot: Some(BotView {
            verified: true,
            category: Category::AiCrawler,
            name: "GPTBot",
        }),
        tls: None,
        fleet: None,
    },
    Case {
        method: "POST",
        target: "/hooks/github",
        headers: &[("user-agent", "GitHub-Hookshot/abc")],
        client: "::ffff:192.0.2.201",
        bot: Some(BotView {
            verified: true,
            category: Category::Webhook,
            name: "GitHub",
        }),
        tls: None,
        fleet: None,
    },
    Case {
        method: "GET",
        target: "/sitemap_index.xml",
        headers: &[("user-agent", "curl/8.0")],
        client: "2001:db8:dead::1",
        bot: Some(BotView {
            verified: false,
            category: Category::Search,
            name: "Googlebot",
        }),
        tls: None,
        fleet: None,
    },
];

fn evaluating_does_not_allocate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ctx = Context {
        models: &["bot", "spoof"],
    };
    let mut sets = vec![
        Rules::load(&root.join("benches/data/rules/plain50.json"), &ctx).unwrap(),
        Rules::load(&root.join("benches/data/rules/regex10.json"), &ctx).unwrap(),
        Rules::parse(
            "presets",
            root,
            br#"{"rules": [{"preset": "well-known"}, {"preset": "feeds"}, {"preset": "link-previews"},
                          {"preset": "monitors"}, {"preset": "webhooks"},
                          {"name": "scored", "when": {"score": {"model": "bot", "at_least": 0.5}}, "action": "challenge"}]}"#,
            &ctx,
        )
        .unwrap(),
    ];
    sets.push(
        Rules::parse(
            "scores",
            root,
            br#"{"rules": [{"when": {"path": {"regex": "(?i)^/admin"}}, "action": "block"},
                          {"when": {"score": [{"model": "bot", "at_least": 0.9}, {"model": "spoof", "below": 0.5}]}, "action": "block"},
                          {"when": {"score": {"model": "spoof", "at_least": 0.5}}, "action": "log"}]}"#,
            &ctx,
        )
        .unwrap(),
    );
    sets.push(
        Rules::parse(
            "signals",
            root,
            br#"{"rules": [{"when": {"signal": {"key": "ja4", "prefixes": {"min": 50}, "solved": {"max": 0.05}}}, "action": "block"},
                          {"when": {"signal": {"key": "headers", "known": false}}, "action": "log"},
                          {"when": {"signal": {"requests": {"min": 10}, "flagged": {"min": 0.5}, "cleared": {"max": 0.1}, "user_agents": {"min": 2}}}, "action": "challenge"},
                          {"when": {"signal": {"key": "any", "solved": {"min": 0.5}}, "score": {"model": "bot", "at_least": 0.5}}, "action": "allow"}]}"#,
            &ctx,
        )
        .unwrap(),
    );
    let headers: Vec<Vec<Header<'static>>> = CASES
        .iter()
        .map(|c| {
            c.headers
                .iter()
                .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
                .collect()
        })
        .collect();
    let clients: Vec<IpAddr> = CASES.iter().map(|c| c.client.parse().unwrap()).collect();
    let mut scratch = NormalPath::new();
    let mut run = |counts: &mut [usize; 6]| {
        for (i, c) in CASES.iter().enumerate() {
            let h = &headers[i];
            let first = |n: &str| {
                h.iter()
                    .find(|x| x.name().eq_ignore_ascii_case(n.as_bytes()))
                    .map_or(&b""[..], |x| x.value())
            };
            let (path, query) = split_target(c.target.as_bytes());
            let view = View {
                method: c.method.as_bytes(),
                host: first("host"),
                path,
                query,
                headers: h,
                user_agent: first("user-agent"),
                client: Some(clients[i]),
                bot: c.bot,
                tls: c.tls.and_then(|(j, f)| TlsFacts::new(j.as_bytes(), f)),
                scores: &[],
                fleet: c.fleet,
                clients: None,
            };
            for rules in &sets {
                let m = rules.before_scoring(&view, &mut scratch).or_else(|| {
                    let scores = [i as f64 / 7.0, 1.0 - i as f64 / 7.0];
                    rules.after_scoring(
                        &View {
                            scores: &scores,
                            ..view
                        },
                        &mut scratch,
                    )
                });
                counts[match m.map(|m| m.action) {
                    None => 0,
                    Some(Action::Pass) => 1,
                    Some(Action::Allow | Action::Log) => 2,
                    Some(Action::Challenge) => 3,
                    Some(Action::Block(_)) => 4,
                }] += 1;
                counts[5] += m.map_or(0, |m| m.name.len() + m.tag.len());
            }
        }
    };
    // Warm: each regex's per-thread cache is made on its first search.
    let mut warm = [0; 6];
    run(&mut warm);

    let before = dhat::HeapStats::get();
    let mut counts = [0; 6];
    for _ in 0..200 {
        run(&mut counts);
    }
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "evaluating allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    // Real work: every outcome came up.
    assert!(counts[..5].iter().all(|&n| n > 0), "{counts:?}");
    assert_eq!(counts.map(|n| n / 200), warm);
}

/// The same through the gate (rules as its stages): a location of every
/// preset, rules that block, allow, log, challenge and read scores, with
/// the texts written (nginx's scratch) and the verified bots judged.
fn gate_runs_with_rules_do_not_allocate() {
    use edgeguard::config::Options;
    use edgeguard::gate::{self, Given, Job, Location, Models};

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Options::configure(
        "alloc",
        Some(root),
        br#"{"models": {"bot": "models/bot.json", "spoof": "models/spoof.json"}, "mode": "block",
             "vars": true, "challenge_secret": "tests/fixtures/challenge/secret",
             "verified_bots": "tests/fixtures/verified/bots.json",
             "rules": ["preset:well-known", "preset:feeds", "preset:link-previews",
                       {"name": "admin", "tag": "a", "when": {"path": {"regex": "(?i)^/admin"}}, "action": "block", "status": 451},
                       {"name": "api", "when": {"path": {"prefix": "/api/"}}, "action": "allow"},
                       {"name": "form", "when": {"method": "POST"}, "action": "log"},
                       {"name": "login", "when": {"path": {"prefix": "/login"}}, "action": "challenge"},
                       {"name": "search-bots", "when": {"bot": {"category": "search"}}, "action": "pass"},
                       {"name": "sure", "when": {"score": {"model": "bot", "at_least": 0.95}}, "action": "block"},
                       {"name": "low", "when": {"score": {"model": "spoof", "below": 0.2}}, "action": "pass"}]}"#,
    )
    .unwrap();
    // The scores are given in the reverse order: the rules' are mapped.
    let loc = Location::new(
        &o,
        Models::Given(&[("spoof", Some(0.5)), ("bot", Some(0.5))]),
        None,
    )
    .unwrap();
    /// Method, target, headers, scores (spoof, bot).
    type GateCase<'a> = (&'a [u8], &'a [u8], &'a [(&'a [u8], &'a [u8])], [f64; 2]);
    let cases: &[GateCase<'_>] = &[
        (
            b"GET",
            b"/blog/feed.xml",
            &[(b"user-agent", b"newsboat/2.21.0 (Linux x86_64)")],
            [0.1, 0.9],
        ),
        (
            b"GET",
            b"/robots.txt",
            &[(b"user-agent", b"curl/8")],
            [0.1, 0.9],
        ),
        (b"GET", b"/Admin/x", &[(b"host", b"a.example")], [0.1, 0.1]),
        (
            b"GET",
            b"/api/items",
            &[(b"user-agent", b"okhttp/4")],
            [0.1, 0.9],
        ),
        (
            b"POST",
            b"/form",
            &[(b"user-agent", CHROME_UA.as_bytes())],
            [0.1, 0.1],
        ),
        (
            b"GET",
            b"/login",
            &[
                (b"user-agent", CHROME_UA.as_bytes()),
                (b"sec-fetch-mode", b"navigate"),
                (b"sec-fetch-dest", b"document"),
                (b"accept", b"text/html"),
            ],
            [0.1, 0.1],
        ),
        (
            b"GET",
            b"/x",
            &[(
                b"user-agent",
                b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            )],
            [0.1, 0.9],
        ),
        (
            b"GET",
            b"/x",
            &[(b"user-agent", b"python-requests/2.31")],
            [0.5, 0.97],
        ),
        (
            b"GET",
            b"/x",
            &[(b"user-agent", b"python-requests/2.31")],
            [0.1, 0.6],
        ),
        (
            b"GET",
            b"/x",
            &[(b"user-agent", b"python-requests/2.31")],
            [0.5, 0.6],
        ),
    ];
    let headers: Vec<Vec<Header<'_>>> = cases
        .iter()
        .map(|c| c.2.iter().map(|(n, v)| Header::new(n, v)).collect())
        .collect();
    let mut scratch = gate::Scratch::new();
    let run = |seen: &mut Vec<usize>| {
        for (i, c) in cases.iter().enumerate() {
            let req =
                gate::Incoming::new(c.0, c.1, 11, b"66.249.66.1", &headers[i], None).given(Given {
                    scores: Some(&c.3),
                    ..Given::default()
                });
            let e = gate::run(&loc, &req, Job::Access, 1_800_000_000, &mut scratch).unwrap();
            seen.push(e.action.index() * 100 + e.rule.map_or(99, |r| r.index));
            seen.push(e.vars.iter().map(|(n, v)| n.len() + v.len()).sum());
            seen.push(e.line.map_or(0, |l| l.0.len()));
        }
    };
    let warm = rounds_allocate_nothing("the gate with rules allocated", run);
    // Real work: each case met the rule meant for it, or none.
    let rules: Vec<usize> = warm.chunks(3).map(|c| c[0] % 100).collect();
    assert!(rules[..8].iter().all(|&r| r != 99), "{rules:?}");
    assert_eq!(rules[9], 99, "{rules:?}");
}

/// A location with a fleet signals snapshot: the lookups (JA4 and headers
/// key, the features extracted once for them and the scorer), the signal
/// rules before and after scoring and `$edgeguard_fp_*` written. The
/// snapshot is never refreshed here (`signals_refresh` 0): the refresh
/// thread's reads are its own, off the request path.
fn gate_runs_with_signals_do_not_allocate() {
    use edgeguard::config::Options;
    use edgeguard::features::{extract, FeatureVector, Request};
    use edgeguard::gate::{self, Job, Location, Models};
    use edgeguard::scorer::Scorer;
    use edgeguard::signals::key::headers_key_of;
    use edgeguard::signals::{Kind, Snapshot, KEY_CAP};
    use std::sync::Arc;

    const JA4: &str = "t13d1516h2_8daaf6152771_02713d6af862";
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let heads: [&[(&[u8], &[u8])]; 4] = [
        &[
            (b"host", b"x"),
            (b"user-agent", b"python-requests/2.31"),
            (b"accept", b"*/*"),
        ],
        &[
            (b"host", b"x"),
            (b"user-agent", CHROME_UA.as_bytes()),
            (b"accept", b"text/html"),
            (b"sec-fetch-mode", b"navigate"),
        ],
        &[(b"host", b"x"), (b"user-agent", b"curl/8.5.0")],
        &[(b"host", b"x"), (b"user-agent", b"Wget/1.21")],
    ];
    let headers: Vec<Vec<Header<'_>>> = heads
        .iter()
        .map(|h| h.iter().map(|(n, v)| Header::new(n, v)).collect())
        .collect();
    // The snapshot knows the first two heads' keys and one JA4.
    let mut snap = Snapshot::new(1_800_000_000, 3600);
    for (i, c) in [SPREAD, BROWSER].into_iter().enumerate() {
        let req = Request::new(b"GET", b"/", 11, b"192.0.2.1", &headers[i]);
        let mut v = FeatureVector::new();
        extract(&req, &mut v);
        let mut buf = [0; KEY_CAP];
        let key = headers_key_of(&v, &mut buf);
        snap.insert(Kind::Headers, std::str::from_utf8(key).unwrap(), c)
            .unwrap();
    }
    snap.insert(Kind::Ja4, JA4, BROWSER).unwrap();
    let dir = std::env::temp_dir().join(format!("edgeguard-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("signals.json");
    let mut text = Vec::new();
    snap.write(&mut text).unwrap();
    std::fs::write(&file, text).unwrap();
    let o = Options::configure(
        "alloc",
        Some(root),
        format!(
            r#"{{"models": {{"bot": "models/bot.json"}}, "mode": "log", "vars": true,
                "signals": "{}", "signals_refresh": 0,
                "rules": [{{"name": "spread", "when": {{"signal": {{"key": "headers", "prefixes": {{"min": 50}}, "solved": {{"max": 0.05}}}}}}, "action": "block"}},
                          {{"name": "new", "when": {{"signal": {{"known": false}}, "method": "HEAD"}}, "action": "log"}},
                          {{"name": "people", "when": {{"signal": {{"solved": {{"min": 0.5}}}}, "score": {{"model": "bot", "at_least": 0.0}}}}, "action": "allow"}}]}}"#,
            file.display()
        )
        .as_bytes(),
    )
    .unwrap();
    let scorer = Scorer::load(&[("bot", &root.join("models/bot.json"))]).unwrap();
    let loc = Location::new(&o, Models::Scorer(Arc::new(scorer)), None).unwrap();
    let tls = edgeguard::features::TlsFacts::new(JA4.as_bytes(), Family::Boringssl);
    let mut scratch = gate::Scratch::new();
    let run = |seen: &mut Vec<usize>| {
        for h in &headers {
            for t in [None, tls] {
                let req = gate::Incoming::new(b"GET", b"/", 11, b"192.0.2.1", h, t);
                let e = gate::run(&loc, &req, Job::Access, 1_800_000_100, &mut scratch).unwrap();
                seen.push(e.rule.map_or(99, |r| r.index));
                seen.push(e.vars.iter().map(|(n, v)| n.len() + v.len()).sum());
                seen.push(
                    e.fleet
                        .as_ref()
                        .and_then(|f| f.answer())
                        .map_or(9, |(k, _)| k as usize),
                );
            }
        }
    };
    let warm = rounds_allocate_nothing("the gate with signals allocated", run);
    // Real work: the spread script blocked (either connection), the
    // browser's key (and the JA4) answered, the unknown heads unknown
    // unless their connection's JA4 is known.
    let rules: Vec<usize> = warm.chunks(3).map(|c| c[0]).collect();
    let keys: Vec<usize> = warm.chunks(3).map(|c| c[2]).collect();
    assert_eq!(rules[..2], [0, 0], "{rules:?}");
    assert_eq!(keys, [1, 0, 1, 0, 9, 0, 9, 0], "{keys:?}");
    assert!(warm.chunks(3).all(|c| c[1] > 0), "variables written");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A request a trusted hop relayed (its own headers left out into the
/// scratch's buffer, the client's JA4 read from the hop's header, scored
/// by the shipped models), one from an untrusted peer with a forged
/// fingerprint, and one whose realip is missing: no allocation once warm.
fn gate_runs_behind_a_trusted_hop_do_not_allocate() {
    use edgeguard::gate::{self, Job, Scratch};
    use edgeguard::load::Config;
    use edgeguard::outcome::Outcome;

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cfg = Config::parse(
        "alloc",
        root,
        br#"{"internal_headers": "nginx-conf/internal-headers.txt",
             "models": {"bot": "models/bot.json", "spoof": "models/spoof.json"}, "mode": "block",
             "trusted_proxies": ["10.0.0.0/8", "2001:db8::/32"], "proxy_profile": "cloudfront"}"#,
    )
    .unwrap();
    let head: &[(&[u8], &[u8])] = &[
        (b"host", b"shop.test"),
        (b"sec-ch-ua", b"\"Not:A-Brand\";v=\"8\", \"Chromium\";v=\"156\""),
        (b"sec-ch-ua-mobile", b"?0"),
        (b"sec-ch-ua-platform", b"\"Linux\""),
        (b"upgrade-insecure-requests", b"1"),
        (b"user-agent", b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"),
        (b"accept", b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
        (b"sec-fetch-site", b"none"),
        (b"sec-fetch-mode", b"navigate"),
        (b"sec-fetch-user", b"?1"),
        (b"sec-fetch-dest", b"document"),
        (b"accept-encoding", b"gzip, deflate, br, zstd"),
        (b"accept-language", b"en-US,en;q=0.9"),
        (b"x-forwarded-for", b"198.51.100.23"),
        (b"via", b"2.0 abc.cloudfront.net (CloudFront)"),
        (b"x-amz-cf-id", b"x1y2z3"),
        (b"cloudfront-viewer-ja4-fingerprint", b"t13d1516h2_8daaf6152771_e5627efa2ab1"),
        (b"connection", b"keep-alive"),
    ];
    let headers: Vec<Header<'_>> = head.iter().map(|(n, v)| Header::new(n, v)).collect();
    // (client, peer, the action it must get)
    let cases: &[(&[u8], &[u8], Outcome)] = &[
        (b"198.51.100.23", b"10.1.2.3", Outcome::Pass),
        (b"2001:db8:ffff::7", b"2001:db8::1", Outcome::Pass),
        // Untrusted: judged as sent, as today (the hop's `Connection`
        // last is order evidence, ambiguous: logged, as no challenge is
        // configured); the forged fingerprint is stripped.
        (b"203.0.113.9", b"203.0.113.9", Outcome::Log),
        // Trusted, realip missing: relayed, with the warning.
        (b"10.1.2.3", b"", Outcome::Pass),
    ];
    let mut scratch = Scratch::new();
    let record = rounds_allocate_nothing("gate behind a trusted hop", |seen| {
        for &(client, peer, want) in cases {
            let req = gate::Incoming::new(b"GET", b"/", 11, client, &headers, None).with_peer(peer);
            let e = gate::run(
                cfg.location(),
                &req,
                Job::Access,
                1_800_000_000,
                &mut scratch,
            )
            .unwrap();
            assert_eq!(e.action, want, "{:?}", std::str::from_utf8(client));
            seen.push(e.clear.len());
            seen.push(usize::from(e.warning.is_some()));
        }
    });
    // The fingerprint header (and X-Amz-Cf-Id, an internal header of the
    // shipped list) is stripped from every request; the warning only
    // where realip is missing.
    assert_eq!(record, [2, 0, 2, 0, 2, 0, 2, 1]);
}
