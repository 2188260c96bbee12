//! The replay pipeline end to end (library API and CLI): bad input is
//! counted and skipped, scores equal the scorer's and official CatBoost's,
//! decision flips between two configurations are exactly the expected ones,
//! output order and thread count do not change results, access-log lines
//! are compared with nginx's live decisions.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use edgeguard::features::{Request, TlsFacts};
use edgeguard::headers::Header;
use edgeguard::load::Config;
use edgeguard::outcome::Outcome;
use edgeguard::replay::{self, Input, Options, Summary};
use edgeguard::tls::Family;
use serde_json::Value;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture_rows() -> Vec<Value> {
    let text = std::fs::read_to_string(manifest().join("tests/fixtures/traffic/sample.jsonl"))
        .expect("traffic fixture");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn fixture_text() -> Vec<u8> {
    std::fs::read(manifest().join("tests/fixtures/traffic/sample.jsonl")).unwrap()
}

/// A configuration file in a fresh directory, with absolute model paths.
fn config(extra: &str) -> Config {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "edgeguard-replay-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let m = manifest();
    // `ambiguous = "block"`: these tests hold replay to the threshold rule
    // (every flagged request gets the mode's action); the grades have
    // their own tests (src/gate/tests.rs, tests/e2e/test_verdicts.py).
    let text = format!(
        r#"{{"models": {{"bot": "{}", "spoof": "{}"}}, "ambiguous": "block",
            "internal_headers": "{}"{extra}}}"#,
        m.join("models/bot.json").display(),
        m.join("models/spoof.json").display(),
        m.join("nginx-conf/internal-headers.txt").display(),
    );
    let path = dir.join("config.json");
    std::fs::write(&path, text).unwrap();
    Config::load(&path).unwrap()
}

fn input(text: Vec<u8>) -> Input {
    Input::from_reader("test", Box::new(Cursor::new(text)), None)
}

fn options(threads: usize, ordered: bool) -> Options {
    Options {
        threads,
        ordered,
        // Small batches: many of them, spread over the workers.
        batch_bytes: 4096,
        progress: false,
        ..Options::default()
    }
}

fn replay_text(
    text: Vec<u8>,
    primary: &Config,
    compare: Option<&Config>,
    opts: &Options,
) -> (Summary, Vec<Value>) {
    let mut out = Vec::new();
    let summary = replay::run(vec![input(text)], primary, compare, Some(&mut out), opts).unwrap();
    let lines = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (summary, lines)
}

/// Output lines as text: serde_json's default float parsing may be off by
/// one ulp, so exact comparisons read the numbers with Rust's parser.
fn raw_lines(text: Vec<u8>, cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    replay::run(
        vec![input(text)],
        cfg,
        None,
        Some(&mut out),
        &options(1, true),
    )
    .unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn raw_score(line: &str, name: &str) -> f64 {
    let key = format!("\"{name}\":");
    let at = line.find(&key).expect("score in line") + key.len();
    let end = at + line[at..].find([',', '}']).unwrap();
    line[at..end].parse().unwrap()
}

/// Scores of a fixture row computed directly by the scorer.
fn direct_scores(cfg: &Config, row: &Value) -> Vec<f64> {
    let pairs: Vec<(String, String)> = row["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
        .collect();
    let headers: Vec<Header<'_>> = pairs
        .iter()
        .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
        .collect();
    let version = row["version"].as_str().unwrap();
    let version = (version.parse::<f64>().unwrap() * 10.0).round() as u16;
    // The row's TLS facts, as replay reads them from the same fields.
    let tls = row["edgeguard_ja4"].as_str().map(|ja4| {
        let family = row["edgeguard_tls_family"].as_str().unwrap_or("unknown");
        TlsFacts::new(
            ja4.as_bytes(),
            Family::from_name(family.as_bytes()).expect("a family"),
        )
        .expect("a JA4")
    });
    let req = Request::new(
        row["method"].as_str().unwrap().as_bytes(),
        row["uri"].as_str().unwrap().as_bytes(),
        version,
        row["client"].as_str().unwrap().as_bytes(),
        &headers,
    )
    .with_tls(tls);
    let scorer = cfg.scorer().unwrap();
    let mut scores = vec![0.0; scorer.model_count()];
    scorer.score(&req, &mut scores).unwrap();
    scores
}

/// The decision rule written out once more, independently of `Policy`.
fn expected_action(scores: &[f64], thresholds: &[f64], mode: Outcome, allowed: bool) -> Outcome {
    let flagged = scores.iter().zip(thresholds).any(|(s, t)| s >= t);
    match (flagged, allowed) {
        (false, _) => Outcome::Pass,
        (true, true) => Outcome::Allow,
        (true, false) => mode,
    }
}

#[test]
fn bad_lines_are_counted_with_their_numbers_and_the_run_completes() {
    let cfg = config("");
    let rows = fixture_text();
    let good: Vec<&[u8]> = rows.split(|&b| b == b'\n').take(3).collect();
    let mut text = Vec::new();
    // 1, then 2: not JSON
    text.extend_from_slice(good[0]);
    text.extend_from_slice(b"\nnot json at all\n");
    // 3: invalid UTF-8 in a field name (in values, bytes >= 0x80 are data:
    // nginx logs them raw).
    text.extend_from_slice(b"{\"m\xff\xfethod\":\"GET\",\"uri\":\"/\",\"version\":\"1.1\"}\n");
    // 4: a huge line (> 1 MiB): a valid request with one enormous header.
    text.extend_from_slice(br#"{"method":"GET","uri":"/","version":"1.1","headers":[["x-big",""#);
    text.extend(std::iter::repeat_n(b'a', 1_200_000));
    text.extend_from_slice(b"\"]]}\n");
    text.extend_from_slice(b"\n   \n"); // 5, 6: blank
    text.extend_from_slice(good[1]); // 7
    text.extend_from_slice(b"\n{\"method\":\"GET\",\"uri\":\"/\"}\n"); // 8: no version
    text.extend_from_slice(&good[2][..good[2].len() / 2]); // 9: truncated, no newline

    for threads in [1, 2] {
        let (summary, out) = replay_text(text.clone(), &cfg, None, &options(threads, true));
        assert_eq!(summary.requests, 2, "threads {threads}");
        assert_eq!(summary.blank_lines, 2);
        assert_eq!(summary.parse_errors, 5);
        let lines: Vec<u64> = summary.first_errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 4, 8, 9]);
        let msg = |i: usize| summary.first_errors[i].message.as_str();
        assert!(msg(1).contains("invalid unicode"), "{}", msg(1));
        assert!(msg(2).contains("longer than 1048576 bytes"), "{}", msg(2));
        assert!(msg(3).contains("missing field `version`"), "{}", msg(3));
        assert!(msg(4).contains("EOF"), "{}", msg(4));
        let out_lines: Vec<u64> = out.iter().map(|l| l["line"].as_u64().unwrap()).collect();
        assert_eq!(out_lines, [1, 7]);
        let report = summary.render();
        assert!(report.contains("test:4: line longer than"), "{report}");
    }
}

#[test]
fn only_the_first_errors_are_kept_lowest_first() {
    let cfg = config("");
    let text = "x\n".repeat(5000).into_bytes();
    let (summary, _) = replay_text(text, &cfg, None, &options(2, false));
    assert_eq!(summary.parse_errors, 5000);
    let lines: Vec<u64> = summary.first_errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, (1..=10).collect::<Vec<u64>>());
    assert!(summary.render().contains("... 4990 more"));
}

#[test]
fn scores_equal_the_scorer_and_official_catboost() {
    let cfg = config(r#", "mode": "log""#);
    let rows = fixture_rows();
    let (summary, out) = replay_text(fixture_text(), &cfg, None, &options(2, true));
    let raw = raw_lines(fixture_text(), &cfg);
    assert_eq!(summary.requests, rows.len() as u64);
    assert_eq!(out.len(), rows.len());
    let scorer = cfg.scorer().unwrap();
    let thresholds: Vec<f64> = (0..2).map(|i| cfg.policy().threshold(i).unwrap()).collect();
    let mut actions = [0u64; Outcome::ALL.len()];
    for (i, (row, line)) in rows.iter().zip(&out).enumerate() {
        assert_eq!(line["line"].as_u64(), Some(i as u64 + 1));
        let direct = direct_scores(&cfg, row);
        for (m, name) in ["bot", "spoof"].iter().enumerate() {
            assert_eq!(scorer.model_name(m), Some(*name));
            let got = raw_score(&raw[i], name);
            // Printed shortest, read back exactly.
            assert_eq!(got, direct[m], "line {}: {name}", i + 1);
            let raw = row["expected_raw"][name].as_f64().unwrap();
            let official = 1.0 / (1.0 + (-raw).exp());
            assert!(
                (got - official).abs() <= 1e-9 * official.abs().max(1e-300),
                "line {}: {name}: {got} vs official {official}",
                i + 1
            );
        }
        let want = expected_action(&direct, &thresholds, Outcome::Log, false);
        assert_eq!(line["action"], want.as_str(), "line {}", i + 1);
        actions[want.index()] += 1;
    }
    assert_eq!(summary.primary.actions, actions);
    assert!(actions[Outcome::Log.index()] > 0 && actions[Outcome::Pass.index()] > 0);
    for m in &summary.primary.models {
        assert_eq!(m.histogram.total(), rows.len() as u64);
    }
}

#[test]
fn a_config_compared_with_itself_flips_nothing() {
    let cfg = config(r#", "mode": "block""#);
    let same = config(r#", "mode": "block""#);
    let (summary, out) = replay_text(fixture_text(), &cfg, Some(&same), &options(2, false));
    assert_eq!(summary.flipped(), 0);
    assert!(summary.flip_samples.is_empty());
    let diagonal: u64 = (0..4).map(|i| summary.flips[i][i]).sum();
    assert_eq!(diagonal, summary.requests);
    for line in &out {
        assert_eq!(line["action"], line["compare"]["action"]);
        assert_eq!(line["scores"], line["compare"]["scores"]);
    }
}

#[test]
fn a_lower_threshold_flips_exactly_the_requests_between_the_thresholds() {
    let cfg = config(r#", "mode": "block""#);
    let rows = fixture_rows();
    let own: Vec<f64> = (0..2)
        .map(|i| cfg.scorer().unwrap().threshold(i).unwrap())
        .collect();
    let scores: Vec<Vec<f64>> = rows.iter().map(|row| direct_scores(&cfg, row)).collect();
    // Each model's cut lowered to the middle of the fixture's scores under
    // its own: whatever the shipped cuts are, some requests lie between.
    let cuts: Vec<f64> = (0..2)
        .map(|m| {
            let under = scores.iter().map(|s| s[m]).filter(|&x| x < own[m]);
            let (lo, hi) = under.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            });
            if lo < hi {
                (lo + hi) / 2.0
            } else {
                lo / 2.0
            }
        })
        .collect();
    let lower = config(&format!(
        r#", "mode": "block", "thresholds": {{"bot": {}, "spoof": {}}}"#,
        cuts[0], cuts[1]
    ));
    let mut expected = [[0u64; Outcome::ALL.len()]; Outcome::ALL.len()];
    let mut flipped_lines = Vec::new();
    for (i, s) in scores.iter().enumerate() {
        let a = expected_action(s, &own, Outcome::Block, false);
        let b = expected_action(s, &cuts, Outcome::Block, false);
        expected[a.index()][b.index()] += 1;
        if a != b {
            flipped_lines.push(i as u64 + 1);
        }
    }
    assert!(
        !flipped_lines.is_empty(),
        "the fixture must hold requests between the thresholds"
    );

    let (summary, out) = replay_text(fixture_text(), &cfg, Some(&lower), &options(2, true));
    assert_eq!(summary.flips, expected);
    assert_eq!(summary.flipped(), flipped_lines.len() as u64);
    let sampled: Vec<u64> = summary.flip_samples.iter().map(|f| f.line).collect();
    let n = flipped_lines.len().min(10);
    assert_eq!(sampled, flipped_lines[..n]);
    for f in &summary.flip_samples {
        assert_eq!((f.from, f.to), (Outcome::Pass, Outcome::Block));
    }
    let out_flipped: Vec<u64> = out
        .iter()
        .filter(|l| l["action"] != l["compare"]["action"])
        .map(|l| l["line"].as_u64().unwrap())
        .collect();
    assert_eq!(out_flipped, flipped_lines);
    let report = summary.render();
    assert!(
        report.contains(&format!("decision flips: {} of", flipped_lines.len())),
        "{report}"
    );
}

#[test]
fn allowlisted_clients_flip_to_allow() {
    let cfg = config(r#", "mode": "block""#);
    let everyone = config(r#", "mode": "block", "allow": ["0.0.0.0/0", "::/0"]"#);
    let (summary, _) = replay_text(fixture_text(), &cfg, Some(&everyone), &options(1, false));
    let blocked = summary.primary.actions[Outcome::Block.index()];
    assert!(blocked > 0);
    assert_eq!(
        summary.flips[Outcome::Block.index()][Outcome::Allow.index()],
        blocked
    );
    assert_eq!(summary.flipped(), blocked);
    let c = summary.compare.as_ref().unwrap();
    let allowed_by_model: u64 = c
        .models
        .iter()
        .map(|m| m.flagged[Outcome::Allow.index()])
        .sum();
    assert_eq!(allowed_by_model, blocked);
}

#[test]
fn thread_count_and_order_change_nothing_but_speed() {
    let cfg = config(r#", "mode": "block""#);
    let lower = config(r#", "thresholds": {"bot": 0.3}"#);
    let mut text = Vec::new();
    for _ in 0..5 {
        text.extend_from_slice(&fixture_text());
        text.extend_from_slice(b"garbage\n");
    }
    let (one, out_one) = replay_text(text.clone(), &cfg, Some(&lower), &options(1, true));
    let (three, out_three) = replay_text(text.clone(), &cfg, Some(&lower), &options(3, true));
    let (unordered, mut out_un) = replay_text(text, &cfg, Some(&lower), &options(3, false));
    assert_eq!(out_one, out_three);
    out_un.sort_by_key(|l| l["line"].as_u64());
    assert_eq!(out_one, out_un);
    for s in [&three, &unordered] {
        let mut s = (*s).clone();
        s.elapsed = one.elapsed;
        s.threads = one.threads;
        assert_eq!(s, one);
    }
}

#[test]
fn gzip_files_and_several_inputs() {
    let cfg = config("");
    let dir = std::env::temp_dir().join(format!("edgeguard-replay-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gz = dir.join("a.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&fixture_text()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let plain = manifest().join("tests/fixtures/traffic/sample.jsonl");
    let inputs = vec![Input::open(&gz).unwrap(), Input::open(&plain).unwrap()];
    let mut out = Vec::new();
    let summary = replay::run(inputs, &cfg, None, Some(&mut out), &options(2, true)).unwrap();
    let rows = fixture_rows().len() as u64;
    assert_eq!(summary.requests, 2 * rows);
    let text = String::from_utf8(out).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["input"], gz.display().to_string());
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["input"], plain.display().to_string());
    assert_eq!(last["line"].as_u64(), Some(rows));
    assert!(Input::open(Path::new("/nonexistent/x.jsonl")).is_err());
}

/// Access-log lines as `log_format edgeguard_json` writes them, with the
/// live values nginx would have set: replay agrees with every one.
#[test]
fn access_log_lines_are_compared_with_the_live_decisions() {
    let cfg = config(r#", "mode": "block""#);
    let rows = fixture_rows();
    let thresholds: Vec<f64> = (0..2).map(|i| cfg.policy().threshold(i).unwrap()).collect();
    let mut log = String::new();
    for row in &rows {
        let s = direct_scores(&cfg, row);
        let action = expected_action(&s, &thresholds, Outcome::Block, false);
        let headers_text = serde_json::to_string(&row["headers"]).unwrap();
        let line = serde_json::json!({
            "time": "2026-11-30T18:00:00+00:00",
            "client": row["client"],
            "method": row["method"],
            "uri": row["uri"],
            "version": format!("HTTP/{}", row["version"].as_str().unwrap()),
            "status": 200,
            "headers": headers_text,
            "edgeguard_bot": format!("{:.6}", s[0]),
            "edgeguard_spoof": format!("{:.6}", s[1]),
            "edgeguard_action": action.as_str(),
            // The TLS facts nginx logs ("" on plain HTTP), which the
            // scores above were computed with.
            "edgeguard_ja4": row["edgeguard_ja4"].as_str().unwrap_or(""),
            "edgeguard_tls_family": row["edgeguard_tls_family"].as_str().unwrap_or(""),
        });
        log += &line.to_string();
        log.push('\n');
    }
    let (summary, out) = replay_text(log.into_bytes(), &cfg, None, &options(2, true));
    assert_eq!(summary.parse_errors, 0);
    assert_eq!(summary.live.with_action, rows.len() as u64);
    let agree: u64 = (0..4).map(|i| summary.live.actions[i][i]).sum();
    assert_eq!(agree, rows.len() as u64);
    assert_eq!(summary.live.scores_compared, 2 * rows.len() as u64);
    assert_eq!(summary.live.scores_differing, 0);
    assert!(summary.live.max_score_diff <= 5e-7);
    assert_eq!(out[0]["live_action"], out[0]["action"]);
    assert!(summary.render().contains("against nginx's live decisions"));
}

/// Lines a real nginx wrote with the shipped log format.
#[test]
fn real_nginx_log_lines() {
    let cfg = config("");
    let text = std::fs::read(manifest().join("tests/fixtures/replay/nginx-access.jsonl")).unwrap();
    let (summary, out) = replay_text(text, &cfg, None, &options(1, true));
    assert_eq!(summary.requests, 2);
    assert_eq!(summary.parse_errors, 1);
    assert_eq!(summary.first_errors[0].line, 3);
    assert_eq!(summary.live.with_action, 2);
    // The first request carried X-Internal-User-Id, which the list strips.
    assert_eq!(out[0]["stripped"], 1);
    assert_eq!(out[1]["stripped"], 0);
    assert_eq!(summary.primary.headers_stripped, 1);
}

#[test]
fn cli_writes_output_and_summary() {
    let dir = std::env::temp_dir().join(format!("edgeguard-replay-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (out, summary) = (dir.join("scores.jsonl"), dir.join("summary.txt"));
    let fixture = manifest().join("tests/fixtures/traffic/sample.jsonl");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .args(["replay", "--config"])
        .arg(manifest().join("tests/fixtures/replay/config.json"))
        .args(["--threads", "2", "--ordered", "--output"])
        .arg(&out)
        .arg("--summary")
        .arg(&summary)
        .arg(&fixture)
        .status()
        .unwrap();
    assert!(status.success());
    let rows = fixture_rows().len();
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), rows);
    let report = std::fs::read_to_string(&summary).unwrap();
    assert!(
        report.starts_with(&format!("edgeguard replay: {rows} requests")),
        "{report}"
    );

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .args(["replay", "--config", "/nonexistent.json"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/nonexistent.json: cannot read"));
}

#[test]
fn cli_reads_stdin_compares_and_writes_stdout() {
    use std::process::Stdio;
    let dir = std::env::temp_dir().join(format!("edgeguard-replay-cli2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lower = dir.join("lower.json");
    let m = manifest();
    std::fs::write(
        &lower,
        format!(
            r#"{{"models": {{"bot": "{}", "spoof": "{}"}}, "mode": "block", "thresholds": {{"bot": 0.2}}}}"#,
            m.join("models/bot.json").display(),
            m.join("models/spoof.json").display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .args(["replay", "--config"])
        .arg(m.join("tests/fixtures/replay/config.json"))
        .arg("--compare")
        .arg(&lower)
        .args(["--ordered", "--output", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&fixture_text()).unwrap();
    stdin.write_all(b"oops\n").unwrap();
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "bad lines are not fatal");
    let stdout = String::from_utf8(done.stdout).unwrap();
    let stderr = String::from_utf8(done.stderr).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), fixture_rows().len());
    assert!(lines.iter().all(|l| l["compare"]["action"].is_string()));
    let flipped = lines
        .iter()
        .filter(|l| l["action"] != l["compare"]["action"])
        .count();
    assert!(
        stderr.contains(&format!("decision flips: {flipped} of")),
        "{stderr}"
    );
    assert!(stderr.contains("<stdin>:201: column"), "{stderr}");
    // Not a terminal: no progress line.
    assert!(!stderr.contains('\r'), "{stderr:?}");
}

/// Replay reads the signals snapshot nginx reads: a signal rule decides
/// recorded requests as it would live, and each output line carries the
/// fleet's counts of the key that answered (`null`: unknown to the fleet).
#[test]
fn replay_looks_fingerprints_up_in_the_same_snapshot() {
    use edgeguard::features::{extract, FeatureVector};
    use edgeguard::signals::key::headers_key_of;
    use edgeguard::signals::{Counts, Kind, Snapshot, KEY_CAP};

    let rows = fixture_rows();
    let text = fixture_text();
    // The first fixture line's headers key: spread, never solving.
    let first: Vec<(String, String)> = rows[0]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
        .collect();
    let headers: Vec<Header<'_>> = first
        .iter()
        .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
        .collect();
    let req = Request::new(b"GET", b"/", 11, b"192.0.2.1", &headers);
    let mut v = FeatureVector::new();
    extract(&req, &mut v);
    let mut buf = [0; KEY_CAP];
    let key = std::str::from_utf8(headers_key_of(&v, &mut buf))
        .unwrap()
        .to_owned();
    let mut s = Snapshot::new(u64::MAX / 4, 3600);
    let spread = Counts {
        requests: 1000,
        prefixes24: 300,
        prefixes48: 0,
        user_agents: 2,
        flagged: 900,
        challenges: 100,
        solved: 1,
        cleared: 0,
    };
    s.insert(Kind::Headers, &key, spread).unwrap();
    let dir = std::env::temp_dir().join(format!("edgeguard-replay-signals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("signals.json");
    let mut bytes = Vec::new();
    s.write(&mut bytes).unwrap();
    std::fs::write(&file, bytes).unwrap();
    let cfg = config(&format!(
        r#", "mode": "log", "signals": "{}",
           "rules": [{{"name": "spread", "when": {{"signal": {{"prefixes": {{"min": 50}}, "solved": {{"max": 0.05}}}}}}, "action": "block"}}]"#,
        file.display()
    ));
    let (_, out) = replay_text(text, &cfg, None, &options(2, true));
    let spread_lines: Vec<&Value> = out.iter().filter(|o| o["fp"].is_object()).collect();
    assert!(!spread_lines.is_empty());
    for o in &spread_lines {
        assert_eq!(o["rule"], "spread", "{o}");
        assert_eq!(o["action"], "block", "{o}");
        assert_eq!(
            o["fp"],
            serde_json::json!({"key": "headers", "requests": 1000, "prefixes": 300,
                               "user_agents": 2, "flagged": 0.9, "solved": 0.01, "cleared": 0})
        );
    }
    let unknown = out
        .iter()
        .filter(|o| o["fp"].is_null() && o.get("fp").is_some());
    assert!(unknown.clone().count() > 0);
    assert!(
        unknown.clone().all(|o| o.get("rule").is_none()),
        "unknown: no rule"
    );
    // Without the snapshot: no `fp` at all.
    let plain = config(r#", "mode": "log""#);
    let (_, out) = replay_text(fixture_text(), &plain, None, &options(1, true));
    assert!(out.iter().all(|o| o.get("fp").is_none()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The log the recorder writes by default (cookie values, credentials and
/// the clearance token redacted: `replay::Redactor`) replays to the very
/// decisions, clearances and scores of the same requests logged byte for
/// byte, under the challenge, with the lifetime nginx had and with a
/// shorter one; and the redacted log holds no token, cookie value or
/// credential.
#[test]
fn a_redacted_log_replays_as_its_original() {
    use edgeguard::challenge::{Challenge, Keys, Proof};
    use std::sync::Arc;

    const NOW: u64 = 1_800_000_000;
    let secret = manifest().join("tests/fixtures/challenge/secret");
    let keys = Keys::parse(&secret, &std::fs::read(&secret).unwrap()).unwrap();
    let other = "c3".repeat(32);
    let other = Keys::parse(Path::new("other"), other.as_bytes()).unwrap();
    let (ch, forger) = (
        Challenge::new(Arc::new(keys)),
        Challenge::new(Arc::new(other)),
    );
    let recorder = replay::Redactor::new(true, &[], Some(ch.clone()), None);
    let day = u64::from(ch.ttl);

    let mut rng = fastrand::Rng::with_seed(0x41);
    let (mut plain, mut redacted) = (String::new(), String::new());
    let mut secrets = Vec::new();
    for row in fixture_rows() {
        let mut pairs: Vec<(String, String)> = row["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
            .collect();
        let client = row["client"].as_str().unwrap();
        let ua = pairs
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
            .map_or("", |(_, v)| v.as_str())
            .to_owned();
        let (ja4, family) = (
            row["edgeguard_ja4"].as_str().unwrap_or(""),
            row["edgeguard_tls_family"].as_str().unwrap_or(""),
        );
        let tls = (!ja4.is_empty()).then(|| {
            let family = Family::from_name(if family.is_empty() {
                b"unknown"
            } else {
                family.as_bytes()
            });
            TlsFacts::new(ja4.as_bytes(), family.unwrap()).unwrap()
        });
        let addr = client.parse().ok();
        let mint = |c: &Challenge, ua: &str, at: u64| {
            let t = c.mint_cookie(&c.binding(addr, ua.as_bytes(), tls), Proof::Work, 16, at);
            String::from_utf8(t.to_vec()).unwrap()
        };
        let token = match rng.u8(0..6) {
            0 => None,
            1 => Some(mint(&ch, &ua, NOW - rng.u64(0..day / 2))),
            2 => Some(mint(&ch, &ua, NOW - day - rng.u64(1..100))),
            3 => Some(mint(&ch, "curl/8.5.0", NOW)),
            4 => Some(mint(&forger, &ua, NOW)),
            _ => Some(mint(&ch, &ua, NOW - rng.u64(day / 2..day))),
        };
        let session = format!("s3cr3t{}", rng.u64(..));
        let mut cookie = format!("sid={session}; lang=en");
        if let Some(t) = &token {
            cookie += &format!("; edgeguard_clearance={t}");
            secrets.push(t.clone());
        }
        secrets.push(session);
        pairs.push(("Cookie".into(), cookie));
        if rng.bool() {
            let credential = format!("tok{}", rng.u64(..));
            pairs.push(("Authorization".into(), format!("Bearer {credential}")));
            secrets.push(credential);
        }
        let headers: Vec<Header<'_>> = pairs
            .iter()
            .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
            .collect();
        let version = row["version"].as_str().unwrap();
        let req = edgeguard::gate::Incoming::new(
            row["method"].as_str().unwrap().as_bytes(),
            row["uri"].as_str().unwrap().as_bytes(),
            (version.parse::<f64>().unwrap() * 10.0).round() as u16,
            client.as_bytes(),
            &headers,
            tls,
        );
        let mut buf = vec![0u8; 1 << 16];
        let n = recorder.write(&req, &mut buf).unwrap();
        let line = |headers_text: String| {
            serde_json::json!({
                "client": client, "method": row["method"], "uri": row["uri"],
                "version": format!("HTTP/{version}"), "headers": headers_text,
                "edgeguard_time": NOW.to_string(), "edgeguard_ja4": ja4, "edgeguard_tls_family": family,
            })
            .to_string()
                + "\n"
        };
        plain += &line(
            serde_json::to_string(&pairs.iter().map(|(k, v)| [k, v]).collect::<Vec<_>>()).unwrap(),
        );
        redacted += &line(String::from_utf8(buf[..n].to_vec()).unwrap());
    }
    let leaked: Vec<&String> = secrets
        .iter()
        .filter(|s| redacted.contains(s.as_str()))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");
    assert!(secrets.len() > 200);

    for ttl in ["", r#", "challenge_ttl": 30000"#] {
        let cfg = config(&format!(
            r#", "mode": "challenge", "challenge_secret": "{}"{ttl}"#,
            secret.display()
        ));
        let (s1, a) = replay_text(plain.clone().into_bytes(), &cfg, None, &options(2, true));
        let (s2, b) = replay_text(redacted.clone().into_bytes(), &cfg, None, &options(2, true));
        assert_eq!((s1.parse_errors, s2.parse_errors), (0, 0));
        assert_eq!(a.len(), b.len());
        let mut clearances = std::collections::BTreeSet::new();
        for (x, y) in a.iter().zip(&b) {
            for key in ["action", "clearance", "scores", "line"] {
                assert_eq!(x[key], y[key], "{key}: {x} vs {y}");
            }
            clearances.insert(x["clearance"].as_str().unwrap_or("none").to_owned());
        }
        // With the shorter lifetime, every token expiring later than it
        // allows is expired, whoever it was issued to.
        let wants: &[&str] = if ttl.is_empty() {
            &["accepted", "expired", "user_agent", "mac"]
        } else {
            &["accepted", "expired", "mac"]
        };
        for want in wants {
            assert!(
                clearances.contains(*want),
                "{want} not among {clearances:?}"
            );
        }
        let actions: std::collections::BTreeSet<_> =
            a.iter().map(|x| x["action"].to_string()).collect();
        assert!(actions.len() >= 3, "{actions:?}");
    }
}

/// The client memory is rebuilt from the log in its order: a recorded
/// crawl (a Chrome head the models are set not to flag, documents only) is challenged from its
/// tenth navigation, as nginx challenged it, whatever the threads asked
/// for; a browser's visit in between (pages with their sub-resources, the
/// memory's cookie sent back as the recorder logs it) is not. Documents
/// only with the cookie kept: a copied typed-URL head (`Sec-Fetch-Site:
/// none` on every page) is challenged from its tenth navigation too, a
/// client following the site's links (from another /24: a network record
/// of its own) has twice the room (not reached in 14 pages).
#[test]
fn replay_rebuilds_the_client_memory_in_order() {
    const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    fn arriving(
        client: &str,
        uri: &str,
        accept: &str,
        cookie: Option<&str>,
        extra: &[[&str; 2]],
        t: u64,
    ) -> String {
        let mut headers = vec![
            ["host", "shop.example"],
            ["user-agent", CHROME],
            ["accept", accept],
        ];
        if let Some(c) = cookie {
            headers.push(["cookie", c]);
        }
        headers.extend_from_slice(extra);
        serde_json::json!({
            "client": client, "method": "GET", "uri": uri, "version": "HTTP/1.1",
            "headers": headers, "edgeguard_time": t.to_string(),
        })
        .to_string()
            + "\n"
    }
    let line = |client: &str, uri: &str, accept: &str, cookie: Option<&str>, t: u64| {
        arriving(client, uri, accept, cookie, &[], t)
    };
    const NOW: u64 = 1_800_000_000;
    let html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let mut log = String::new();
    let mut want = Vec::new();
    for i in 0..14u64 {
        log += &line(
            "198.51.100.7",
            &format!("/article/{i}"),
            html,
            None,
            NOW + 2 * i,
        );
        want.push(if i < 9 { "pass" } else { "challenge" });
        log += &line(
            "203.0.113.5",
            &format!("/page/{i}"),
            html,
            Some("edgeguard_v=[client cookie ok]"),
            NOW + 2 * i,
        );
        want.push("pass");
        log += &line(
            "203.0.113.5",
            "/site.css",
            "text/css,*/*;q=0.1",
            Some("edgeguard_v=[client cookie ok]"),
            NOW + 2 * i,
        );
        want.push("pass");
        let kept = Some("edgeguard_v=[client cookie ok]");
        let typed = [["sec-fetch-site", "none"]];
        log += &arriving(
            "192.0.2.9",
            &format!("/doc/{i}"),
            html,
            kept,
            &typed,
            NOW + 2 * i,
        );
        want.push(if i < 9 { "pass" } else { "challenge" });
        let linked = [
            ["sec-fetch-site", "same-origin"],
            ["referer", "https://shop.example/doc/"],
        ];
        log += &arriving(
            "198.18.7.10",
            &format!("/doc/{i}"),
            html,
            kept,
            &linked,
            NOW + 2 * i,
        );
        want.push("pass");
    }
    for threads in [1, 4] {
        // A configuration's memory is its own: a fresh one per run.
        let cfg = config(&format!(
            r#", "mode": "block", "client_memory": "1m", "client_cookie": true,
                "thresholds": {{"bot": 1, "spoof": 1}}, "challenge_secret": "{}""#,
            manifest().join("tests/fixtures/challenge/secret").display()
        ));
        let (summary, lines) = replay_text(
            log.clone().into_bytes(),
            &cfg,
            None,
            &options(threads, true),
        );
        let got: Vec<&str> = lines
            .iter()
            .map(|l| l["action"].as_str().unwrap())
            .collect();
        assert_eq!(got, want, "threads {threads}");
        assert_eq!(summary.primary.actions[Outcome::Challenge.index()], 10);
        assert!(lines[45]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "behaviour_crawl"));
    }
}
