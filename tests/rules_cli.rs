//! `edgeguard rules check` and `edgeguard rules eval` on real files: the
//! compiled rules or the refusal naming file, rule and field; the rule
//! each recorded request meets, with bot verdicts and scores.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn edgeguard(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn tmp(name: &str, body: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("edgeguard-rules-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const RULES: &str = r#"{"lists": {"office": ["192.0.2.0/24", "2001:db8:1::/48"]},
 "rules": [{"preset": "well-known"}, {"preset": "feeds"},
  {"name": "office", "when": {"client": "office"}, "action": "pass", "tag": "office"},
  {"name": "no-ai", "when": {"bot": {"category": "ai-crawler"}}, "action": "block"},
  {"name": "fakes", "when": {"bot": {"verdict": "fake"}}, "action": "challenge"},
  {"name": "sure", "when": {"score": {"model": "bot", "at_least": 0.9}}, "action": "block", "status": 429}]}"#;

const BOTS: &str = r#"{"bots": [
  {"name": "GPTBot", "tokens": ["GPTBot"], "category": "ai-crawler", "prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]},
  {"name": "Googlebot", "tokens": ["Googlebot"], "prefixes": [{"ipv6Prefix": "2001:db8:4801::/48"}]}]}"#;

#[test]
fn check_prints_the_rules_in_the_order_they_run() {
    let f = tmp("check.json", RULES);
    let out = edgeguard(&["rules", "check", f.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].ends_with("check.json: 13 rules (12 before scoring, 1 after)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("well-known/robots-txt")
            && lines[1].contains("before")
            && lines[1].contains("pass")
    );
    assert!(
        lines[13].contains("sure")
            && lines[13].contains("after")
            && lines[13].contains("block 429"),
        "{}",
        lines[13]
    );
    assert!(
        lines[10].contains("tag=office") && lines[10].contains(r#"when {"client":"office"}"#),
        "{}",
        lines[10]
    );
}

#[test]
fn check_refuses_naming_file_rule_and_field() {
    let f = tmp(
        "bad.json",
        r#"{"rules": [{"preset": "feeds"}, {"when": {"path": {"regex": "a("}}, "action": "block"}]}"#,
    );
    let out = edgeguard(&["rules", "check", f.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("edgeguard rules: ")
            && err.contains("bad.json: rules[1].when.path.regex: regex parse error"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Score conditions name the models given, or the shipped ones.
    let f = tmp(
        "model.json",
        r#"{"rules": [{"when": {"score": {"model": "fraud", "at_least": 0.5}}, "action": "block"}]}"#,
    );
    let out = edgeguard(&["rules", "check", f.to_str().unwrap()], "");
    assert!(text(&out.stderr)
        .contains("rules[0].when.score.model: no model 'fraud' (models: bot, spoof)"));
    let out = edgeguard(
        &["rules", "check", "--model", "fraud", f.to_str().unwrap()],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = edgeguard(&["rules", "check", "/nonexistent/rules.json"], "");
    assert!(text(&out.stderr).contains("/nonexistent/rules.json: cannot read"));
}

#[test]
fn eval_names_the_rule_each_request_meets() {
    let f = tmp("eval.json", RULES);
    let bots = tmp("bots.json", BOTS);
    let lines = [
        r#"{"method": "GET", "uri": "/robots.txt", "version": "1.1", "client": "203.0.113.9", "headers": [["user-agent", "curl/8"]]}"#,
        r#"{"method": "GET", "uri": "/blog/feed/", "version": 2, "client": "203.0.113.9", "headers": [["user-agent", "newsboat/2.30.1 (Linux x86_64)"]]}"#,
        r#"{"method": "GET", "uri": "/x", "version": 2, "client": "2001:db8:1::7", "headers": []}"#,
        r#"{"method": "GET", "uri": "/x", "version": 2, "client": "198.51.100.4", "headers": [["user-agent", "Mozilla/5.0 (compatible; GPTBot/1.3)"]]}"#,
        r#"{"method": "GET", "uri": "/x", "version": 2, "client": "203.0.113.9", "headers": [["user-agent", "Mozilla/5.0 (compatible; GPTBot/1.3)"]]}"#,
        r#"{"method": "GET", "uri": "/x", "version": 2, "client": "2001:db8:4801::1", "headers": [["user-agent", "Googlebot/2.1"]]}"#,
        "not json",
    ];
    let out = edgeguard(
        &[
            "rules",
            "eval",
            "--bots",
            bots.to_str().unwrap(),
            "--score",
            "bot=0.95",
            f.to_str().unwrap(),
        ],
        &lines.join("\n"),
    );
    assert_eq!(out.status.code(), Some(1), "a bad line");
    assert!(
        text(&out.stderr).contains("line 7: "),
        "{}",
        text(&out.stderr)
    );
    let got: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rule = |i: usize| got[i]["rule"].as_str().unwrap_or("-").to_owned();
    assert_eq!(rule(0), "well-known/robots-txt");
    assert_eq!(
        (rule(1), got[1]["tag"].as_str()),
        ("feeds/path".into(), Some("feed"))
    );
    assert_eq!(rule(2), "office");
    assert_eq!(
        (rule(3), got[3]["status"].as_u64()),
        ("no-ai".into(), Some(403))
    );
    assert_eq!(got[3]["bot"]["category"], "ai-crawler");
    assert_eq!(
        (rule(4), got[4]["bot"]["verified"].as_bool()),
        ("fakes".into(), Some(false))
    );
    // A verified search crawler meets no rule before scoring; the score rule takes it.
    assert_eq!(
        (rule(5), got[5]["stage"].as_str(), got[5]["status"].as_u64()),
        ("sure".into(), Some("after"), Some(429))
    );
    // Without --score, no score rule runs: the default decides.
    let out = edgeguard(&["rules", "eval", f.to_str().unwrap()], lines[5]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).trim(), r#"{"line":1,"rule":null}"#);
}

#[test]
fn eval_looks_fingerprints_up_in_a_signals_snapshot() {
    // curl's headers key (its family and header order) spread widely.
    let snap = tmp(
        "signals.json",
        r#"{"format":"edgeguard-signals","version":1,"generated":1,"window":3600,"entries":[
        {"kind":"headers","key":"curl:hua","requests":500,"prefixes24":200,"prefixes48":0,"user_agents":1,
         "flagged":400,"challenges":100,"solved":0,"cleared":0}]}"#,
    );
    let rules = tmp(
        "signal-rules.json",
        r#"{"rules": [{"name": "spread", "when": {"signal": {"prefixes": {"min": 50}, "solved": {"max": 0.05}}}, "action": "block"},
                      {"name": "new", "when": {"signal": {"known": false}}, "action": "log"}]}"#,
    );
    let lines = concat!(
        r#"{"method":"GET","uri":"/","version":"1.1","client":"203.0.113.9","headers":[["Host","x"],["User-Agent","curl/8.5.0"],["Accept","*/*"]]}"#,
        "\n",
        r#"{"method":"GET","uri":"/","version":"1.1","client":"203.0.113.9","headers":[["Host","x"],["User-Agent","Wget/1.21"]]}"#,
        "\n"
    );
    let args = [
        "rules",
        "eval",
        "--signals",
        snap.to_str().unwrap(),
        rules.to_str().unwrap(),
    ];
    let out = edgeguard(&args, lines);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["rule"], "spread", "{rows:?}");
    assert_eq!(rows[0]["fp"]["key"], "headers");
    assert_eq!(rows[0]["fp"]["prefixes"], 200);
    assert_eq!(rows[0]["fp"]["solved"], 0.0);
    assert_eq!(rows[1]["rule"], "new");
    assert!(rows[1]["fp"].is_null());
    // Without --signals: no signal condition holds.
    let out = edgeguard(&["rules", "eval", rules.to_str().unwrap()], lines);
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        rows.iter()
            .all(|r| r.get("fp").is_none() && r["rule"].is_null()),
        "{rows:?}"
    );
    // A bad snapshot names the file and field.
    let bad = tmp(
        "bad-signals.json",
        r#"{"format":"x","version":1,"generated":1,"window":1,"entries":[]}"#,
    );
    let out = edgeguard(
        &[
            "rules",
            "eval",
            "--signals",
            bad.to_str().unwrap(),
            rules.to_str().unwrap(),
        ],
        // Nothing on stdin: it stops at the snapshot, before reading.
        "",
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("bad-signals.json: format:"),
        "{}",
        text(&out.stderr)
    );
}
