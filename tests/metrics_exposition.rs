//! The Rust metrics registry writes, byte for byte, the dict keys and the
//! exposition text the Lua module `resty.edgeguard.metrics` wrote for the
//! same counts (`tests/fixtures/metrics/`, made by that module with
//! `tests/fixtures/metrics/gen.lua`): the same families, HELP texts, label
//! order and escapes, buckets and number formats. The flushes of the
//! operations list are the timer's: the drained deltas are added into a
//! stand-in for the shared dict, as `dict:incr` does.

use std::path::Path;

use edgeguard::challenge::AnswerResult;
use edgeguard::challenge::{Clearance, Proof, Rejection};
use edgeguard::config::Engine;
use edgeguard::metrics::{Disagreement, Registry, Screening, Spec};
use edgeguard::outcome::Outcome;
use edgeguard::verified::Verdict;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A name of the fixture files: `%XX` escapes undone.
fn dec(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn engine(s: &str) -> Engine {
    match s {
        "rust" => Engine::Rust,
        "lua" => Engine::Lua,
        "shadow" => Engine::Shadow,
        _ => panic!("engine {s}"),
    }
}

fn outcome(s: &str) -> Outcome {
    *Outcome::ALL
        .iter()
        .find(|o| o.as_str() == s)
        .unwrap_or_else(|| panic!("action {s}"))
}

fn clearance(code: usize) -> Clearance {
    match code {
        0 => Clearance::Absent,
        1 => Clearance::Accepted(Proof::Work),
        n => Clearance::Rejected(Rejection::ALL[n - 2]),
    }
}

struct Case {
    engine: Engine,
    rust: Vec<String>,
    lua: Vec<String>,
    challenge: bool,
    bots: Vec<String>,
}

fn spec(name: &str) -> Case {
    let mut c = Case {
        engine: Engine::Rust,
        rust: vec![],
        lua: vec![],
        challenge: false,
        bots: vec![],
    };
    for line in fixture(&format!("{name}.spec")).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "engine" => c.engine = engine(f[1]),
            "models" if f[1] == "rust" => c.rust = f[2..].iter().map(|n| dec(n)).collect(),
            "models" => c.lua = f[2..].iter().map(|n| dec(n)).collect(),
            "challenge" => c.challenge = true,
            "bots" => c.bots = f[1..].iter().map(|n| dec(n)).collect(),
            other => panic!("spec line {other}"),
        }
    }
    c
}

/// Runs `name`'s operations (without the answers unless `answers`) and
/// returns the text and the keys.
fn run(name: &str, answers: bool) -> (String, String) {
    let c = spec(name);
    let (rust, lua, bots): (Vec<&str>, Vec<&str>, Vec<&str>) = (
        c.rust.iter().map(|s| s.as_str()).collect(),
        c.lua.iter().map(|s| s.as_str()).collect(),
        c.bots.iter().map(|s| s.as_str()).collect(),
    );
    let r = Registry::new(&Spec {
        engine: c.engine,
        rust_models: &rust,
        lua_models: &lua,
        challenge: c.challenge,
        bots: &bots,
        signals: None,
        reasons: false,
        clients: None,
    });
    let mut dict = vec![0.0f64; r.len()];
    let flush = |dict: &mut Vec<f64>| {
        let (mut s, mut d) = (vec![0u32; r.len()], vec![0.0; r.len()]);
        let n = r.drain(&mut s, &mut d);
        for i in 0..n {
            dict[s[i] as usize] += d[i];
        }
    };
    for line in fixture(&format!("{name}.ops")).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "request" => {
                let mut seen = Screening {
                    clearance: Clearance::Absent,
                    bot: None,
                };
                let names: Vec<(String, bool)> = f[4..]
                    .iter()
                    .filter_map(|t| t.strip_prefix("bot="))
                    .map(|t| {
                        let (n, v) = t.rsplit_once(':').unwrap();
                        (dec(n), v == "verified")
                    })
                    .collect();
                let mut any = false;
                for t in &f[4..] {
                    if let Some(code) = t.strip_prefix("clearance=") {
                        seen.clearance = clearance(code.parse().unwrap());
                        any = true;
                    }
                }
                if let Some((n, verified)) = names.first() {
                    // As C's shadow mode: by name (one the registry does
                    // not list is no bot claim).
                    let i = r.bot_index(n.as_bytes());
                    seen.bot = i.map(if *verified {
                        Verdict::Verified
                    } else {
                        Verdict::Fake
                    });
                    any = true;
                }
                r.request(
                    engine(f[1]),
                    outcome(f[2]),
                    f[3].parse().unwrap(),
                    any.then_some(seen),
                );
            }
            "scores" => {
                let v: Vec<f64> = f[2..].iter().map(|x| x.parse().unwrap()).collect();
                assert!(r.scores(engine(f[1]), &v), "{line}");
            }
            "seconds" => assert!(r.engine_time(engine(f[1]), f[2].parse().unwrap()), "{line}"),
            "disagreement" => r.disagreement(
                *Disagreement::ALL
                    .iter()
                    .find(|k| k.as_str() == f[1])
                    .unwrap(),
            ),
            "answer" if !answers => {}
            "answer" if f[1] == "solved" => r.answer(AnswerResult::Solved),
            "answer" => r.answer(AnswerResult::Failed(
                Rejection::ALL[f[2].parse::<usize>().unwrap() - 2],
            )),
            "load_errors" => r.load_errors(f[1].parse().unwrap()),
            "flush" => flush(&mut dict),
            other => panic!("op {other}"),
        }
    }
    // A scrape flushes the scraping worker first.
    flush(&mut dict);
    let mut text = String::new();
    r.write_text(&dict, &mut text).unwrap();
    assert!(text.len() <= r.text_room());
    let keys: String = (0..r.len())
        .map(|i| format!("{}\n", r.key(i).unwrap()))
        .collect();
    (text, keys)
}

fn check(name: &str) {
    let (text, keys) = run(name, true);
    assert_eq!(keys, fixture(&format!("{name}.keys")), "{name}: dict keys");
    let want = fixture(&format!("{name}.txt"));
    for (i, (got, want)) in text.lines().zip(want.lines()).enumerate() {
        assert_eq!(got, want, "{name}.txt line {}", i + 1);
    }
    assert_eq!(text, want, "{name}.txt");
    let (text, _) = run(name, false);
    assert_eq!(
        text,
        fixture(&format!("{name}.shim.txt")),
        "{name}.shim.txt"
    );
}

#[test]
fn rust_engine_text_and_keys_are_the_lua_modules() {
    check("rust");
}

#[test]
fn shadow_text_and_keys_are_the_lua_modules() {
    check("shadow");
}

#[test]
fn challenge_and_verified_bots_text_and_keys_are_the_lua_modules() {
    check("screen");
}
