//! Replaying a request line allocates nothing once a worker's buffers have
//! grown: the scanner borrows from the input and unescapes into the worker's
//! scratch, unknown fields are skipped in place, scoring is the
//! zero-allocation scorer, output goes to a reused buffer. The exception is
//! a line the scanner leaves to serde_json (bad lines, for their error
//! message): its deserializer's buffers and the boxed error, bounded here.
//! One dhat profiler per binary and no libtest harness (`harness = false`):
//! dhat counts every thread.

use std::path::PathBuf;

use edgeguard::load::Config;
use edgeguard::replay::Worker;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn config(dir: &str, extra: &str) -> Config {
    let m = manifest();
    let text = format!(
        r#"{{"models": {{"bot": "{}", "spoof": "{}"}}, "internal_headers": "{}",
            "mode": "block", "allow": ["10.0.0.0/8"]{extra}}}"#,
        m.join("models/bot.json").display(),
        m.join("models/spoof.json").display(),
        m.join("nginx-conf/internal-headers.txt").display(),
    );
    Config::parse(dir, &m, text.as_bytes()).expect("config")
}

/// Lines of `text` that hold a backslash (escaped strings) or not.
fn split_by_escapes(text: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut plain, mut escaped) = (Vec::new(), Vec::new());
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let dst = if line.contains(&b'\\') {
            &mut escaped
        } else {
            &mut plain
        };
        dst.extend_from_slice(line);
        dst.push(b'\n');
    }
    (plain, escaped)
}

fn lines(text: &[u8]) -> u64 {
    text.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Heap blocks allocated per line by replaying `text` with a warm worker.
fn blocks_per_line(worker: &mut Worker<'_>, out: &mut Vec<u8>, text: &[u8]) -> f64 {
    out.clear();
    let before = dhat::HeapStats::get();
    worker.replay_text(text, out);
    let after = dhat::HeapStats::get();
    (after.total_blocks - before.total_blocks) as f64 / lines(text) as f64
}

fn main() {
    let primary = config("primary", "");
    let lower = config("lower", r#", "thresholds": {"bot": 0.2}"#);
    let traffic = std::fs::read(manifest().join("tests/fixtures/traffic/sample.jsonl")).unwrap();
    // Request lines without escapes, and those with (quoted client hints).
    let (plain, escaped) = split_by_escapes(&traffic);
    // About half the fixture each way (schema 2's fixture: 99 plain, 101 escaped).
    assert!(lines(&plain) > 50 && lines(&escaped) > 10);
    let bad = "not json\n\n".repeat(20).into_bytes();
    // Access-log lines: always escaped.
    let log = std::fs::read(manifest().join("tests/fixtures/replay/nginx-access.jsonl")).unwrap();

    let _profiler = dhat::Profiler::builder().testing().build();
    let mut worker = Worker::new(&primary, Some(&lower), true);
    let mut out = Vec::new();
    // Warm up: buffers grow, the first errors and flips are kept as samples.
    for text in [&traffic, &bad, &log, &traffic, &bad, &log] {
        worker.replay_text(text, &mut out);
        out.clear();
    }

    let plain_cost = blocks_per_line(&mut worker, &mut out, &plain);
    assert!(out.len() > 1000, "output was written");
    let escaped_cost = blocks_per_line(&mut worker, &mut out, &escaped);
    let bad_cost = blocks_per_line(&mut worker, &mut out, &bad);
    let log_cost = blocks_per_line(&mut worker, &mut out, &log);
    println!(
        "replay_alloc: heap blocks per line: request {plain_cost}, request with escapes \
         {escaped_cost}, bad or blank {bad_cost}, access log {log_cost}"
    );
    dhat::assert_eq!(plain_cost, 0.0);
    // Unescaped into the reused scratch: a few blocks over the whole set.
    dhat::assert!(escaped_cost <= 0.25);
    // serde_json's boxed error per bad line (blank lines cost nothing).
    dhat::assert!(bad_cost <= 1.0);
    // Two of the fixture's three lines go through the scanner; the third,
    // a request nginx refused, is a parse error left to serde_json.
    dhat::assert!(log_cost <= 2.0);
    println!("replay_alloc: 1 passed, 0 failed");
}
