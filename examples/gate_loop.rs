//! A fixed workload for instruction counting of the gate's clearance path:
//! `gate::run` in mode `challenge` with the shipped bot model, on requests
//! that carry a valid clearance cookie (cleared), a forged one, or none
//! (the page), under a location without rules (`plain`) and one whose
//! after-scoring rule challenges every scored request (`rule`: the policy
//! and the rule both want the clearance). `scripts/callgrind-model.sh gate`
//! runs it under callgrind and reports instructions per request.
//!
//! `cargo run --release --example gate_loop -- ROUNDS [plain|rule]`

use std::hint::black_box;
use std::net::IpAddr;
use std::path::Path;

use edgeguard::challenge::Proof;
use edgeguard::gate::{self, Job, Scratch};
use edgeguard::headers::Header;
use edgeguard::load::Config;

const NOW: u64 = 1_800_000_000;
const CLIENT: &str = "192.0.2.10";
const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const CURL: &str = "curl/8.5.0";

/// Every request once per round; out of line so callgrind counts it
/// under one name.
#[inline(never)]
fn run_all(cfg: &Config, requests: &[Vec<Header<'_>>], rounds: usize) -> usize {
    let mut scratch = Scratch::new();
    let mut total = 0;
    for _ in 0..rounds {
        for headers in requests {
            let req =
                gate::Incoming::new(b"GET", b"/account", 11, CLIENT.as_bytes(), headers, None);
            let e = gate::run(
                cfg.location(),
                black_box(&req),
                Job::Access,
                NOW,
                &mut scratch,
            )
            .expect("run");
            total += e.action as usize + usize::from(e.clearance.is_accepted());
        }
    }
    total
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(1, |r| r.parse().expect("ROUNDS is a number"));
    let rules = match std::env::args().nth(2).as_deref() {
        None | Some("plain") => "",
        Some("rule") => {
            r#", "rules": [{"when": {"score": {"model": "bot", "at_least": 0.0}}, "action": "challenge"}]"#
        }
        Some(other) => panic!("unknown location {other:?}: plain or rule"),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = format!(
        r#"{{"models": {{"bot": "models/bot.json"}}, "mode": "challenge",
            "challenge_secret": "tests/fixtures/challenge/secret"{rules}}}"#
    );
    let cfg =
        Config::parse("gate_loop.json", root, text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let ch = cfg.policy().challenge().expect("a challenge");
    let addr: IpAddr = CLIENT.parse().expect("an address");
    let cookie = |ua: &str| {
        let token = ch.mint_cookie(
            &ch.binding(Some(addr), ua.as_bytes(), None),
            Proof::Work,
            16,
            NOW,
        );
        format!(
            "edgeguard_clearance={}",
            std::str::from_utf8(&token).expect("text")
        )
    };
    let chrome_cookie = cookie(CHROME);
    let curl_cookie = cookie(CURL);
    let mut forged = chrome_cookie.clone().into_bytes();
    let last = forged.len() - 2;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).expect("text");
    let head = |ua: &'static str, cookie: Option<&str>| -> Vec<(String, String)> {
        let mut h = vec![
            ("Host".to_owned(), "example.com".to_owned()),
            ("User-Agent".to_owned(), ua.to_owned()),
            ("Accept".to_owned(), "text/html,*/*;q=0.8".to_owned()),
        ];
        h.extend(cookie.map(|c| ("Cookie".to_owned(), format!("theme=dark; {c}"))));
        h
    };
    let owned = [
        head(CHROME, Some(&chrome_cookie)),
        head(CURL, Some(&curl_cookie)),
        head(CHROME, Some(&forged)),
        head(CURL, None),
    ];
    let requests: Vec<Vec<Header<'_>>> = owned
        .iter()
        .map(|h| {
            h.iter()
                .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
                .collect()
        })
        .collect();
    let total = run_all(&cfg, &requests, rounds);
    println!("{} requests, checksum {total}", requests.len() * rounds);
}
