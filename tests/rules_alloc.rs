//! Evaluating rules allocates nothing once warm: every condition kind
//! (regexes, automatons, address lists, normalized paths) through both
//! stages; dhat counts every heap block while they run.

use std::net::IpAddr;
use std::path::Path;

use edgeguard::features::TlsFacts;
use edgeguard::headers::Header;
use edgeguard::rules::{split_target, Action, BotView, Context, Rules, Scratch, View};
use edgeguard::tls::Family;
use edgeguard::verified::Category;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    evaluating_does_not_allocate();
    println!("rules_alloc: 1 passed, 0 failed");
}

struct Case {
    method: &'static str,
    target: &'static str,
    headers: &'static [(&'static str, &'static str)],
    client: &'static str,
    bot: Option<BotView<'static>>,
    tls: Option<(&'static str, Family)>,
}

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
    },
    // Paths that need normalizing (the scratch buffer), an unknown method.
    Case {
        method: "GET",
        target: "/.well-known/%2e%2e//admin/./x?a=%20",
        headers: &[("host", "Admin.Example.com:443")],
        client: "192.0.2.9",
        bot: None,
        tls: None,
    },
    Case {
        method: "PROPFIND",
        target: "/a/b/../c",
        headers: &[("host", "x"), ("X_Api_Key", "k"), ("x-api-key", "j")],
        client: "2001:db8:100::1",
        bot: None,
        tls: Some(("t13d3112h2_e8f1e7e78f70_6bebaf5329ac", Family::Openssl)),
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
    },
];

fn evaluating_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();

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
    let mut scratch = Scratch::new();
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
