//! `edgeguard replay` throughput and memory, against a straightforward
//! baseline. Run through `scripts/bench-replay.sh` (it builds the release
//! binary first), or:
//!
//! ```text
//! cargo build --release --locked --bin edgeguard
//! cargo bench --locked --bench replay                   # 1M and 2M requests
//! cargo bench --locked --bench replay -- 200000 400000  # other sizes
//! ```
//!
//! Inputs are generated into `target/replay-bench/` from the traffic fixture
//! rows with deterministic variations (URIs, client addresses, header order,
//! internal headers, user-agent versions; one line in five in the access-log
//! shape of `log_format edgeguard_json`). Each measured run is a child
//! process, so its peak RSS comes from `wait4`. The baseline does the same
//! work the obvious way: a `String` per line, a `serde_json::Value` per
//! line, owned copies of every field, output built as a `Value`, one thread.
//!
//! Each input is read once before it is measured (so no run pays for the
//! disk), and every run is repeated `EDGEGUARD_BENCH_ROUNDS` times (default
//! 3), the baseline (first size only), 1 thread and all cores interleaved:
//! the table shows the median run and the spread of wall times, and a line
//! per configuration the ratio of each round's baseline to the one-thread
//! replay run beside it.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use edgeguard::features::Request;
use edgeguard::headers::Header;
use edgeguard::load::Config;
use serde_json::{json, Value};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn config_path() -> PathBuf {
    manifest().join("tests/fixtures/replay/config.json")
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("baseline") {
        baseline(Path::new(&args[1]), Path::new(&args[2]));
        return;
    }
    let sizes: Vec<u64> = if args.is_empty() {
        vec![1_000_000, 2_000_000]
    } else {
        args.iter().map(|a| a.parse().expect("sizes")).collect()
    };
    // The binary cargo built for this bench (same code, bench profile): a
    // separate `cargo build --release` would be rebuilt by every `cargo
    // bench` and then rebuild itself, minutes per call on a small machine.
    let binary = std::path::PathBuf::from(env!("CARGO_BIN_EXE_edgeguard"));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dir = manifest().join("target/replay-bench");
    std::fs::create_dir_all(&dir).unwrap();

    // Scoring (two CatBoost models) is most of the work per request; the
    // headers-only configuration shows the rest of the pipeline alone.
    let headers_only = dir.join("headers-only.json");
    std::fs::write(
        &headers_only,
        format!(
            r#"{{"internal_headers": "{}", "mode": "block"}}"#,
            manifest().join("nginx-conf/internal-headers.txt").display()
        ),
    )
    .unwrap();
    let configs = [
        ("scored: bot + spoof", config_path()),
        ("headers only, no models", headers_only),
    ];

    let rounds: usize = std::env::var("EDGEGUARD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(3);
    let thread_counts: Vec<usize> = if cores > 1 { vec![1, cores] } else { vec![1] };

    let mut table = Vec::new();
    // Per round, one-thread replay against the baseline run beside it.
    let mut ratios: Vec<(u64, &str, Vec<f64>)> = Vec::new();
    for (k, &n) in sizes.iter().enumerate() {
        let input = dir.join(format!("requests-{n}.jsonl"));
        generate(n, &input);
        let size_mib = std::fs::metadata(&input).unwrap().len() as f64 / (1 << 20) as f64;
        eprintln!("{}: {n} requests, {size_mib:.0} MiB", input.display());
        // Into the page cache, so the first run does not pay for the disk.
        std::io::copy(&mut File::open(&input).unwrap(), &mut std::io::sink()).unwrap();
        for (label, config) in &configs {
            // The baseline on the first size only (it is the slow one), in
            // every round, interleaved with the replay runs: a change in
            // the machine's load hits both, and the ratio of each round
            // compares runs seconds apart.
            let with_baseline = k == 0;
            let baseline_cmd = || {
                let mut cmd = Command::new(std::env::current_exe().unwrap());
                cmd.arg("baseline").arg(config).arg(&input);
                cmd
            };
            let mut base_runs = Vec::new();
            let mut runs: Vec<Vec<Run>> = thread_counts.iter().map(|_| Vec::new()).collect();
            for _ in 0..rounds {
                if with_baseline {
                    base_runs.push(measure(baseline_cmd()));
                }
                for (i, &threads) in thread_counts.iter().enumerate() {
                    runs[i].push(replay_run(&binary, config, threads, &dir, &input, n));
                }
            }
            if with_baseline {
                // Baseline wall time over one-thread replay's, round by round.
                let mut per_round: Vec<f64> = base_runs
                    .iter()
                    .zip(&runs[0])
                    .map(|(b, r)| b.wall.as_secs_f64() / r.wall.as_secs_f64())
                    .collect();
                per_round.sort_by(f64::total_cmp);
                ratios.push((n, *label, per_round));
                let (run, spread) = median(base_runs);
                let rate = n as f64 / run.wall.as_secs_f64();
                table.push(Row {
                    n,
                    config: label,
                    name: "baseline (Value per line)",
                    threads: 1,
                    run,
                    spread,
                    rate,
                    base: rate,
                });
            }
            let base = table
                .iter()
                .find(|r| r.config == *label && r.name.starts_with("baseline"))
                .map(|r| r.rate)
                .unwrap();
            for (&threads, runs) in thread_counts.iter().zip(runs) {
                let (run, spread) = median(runs);
                table.push(Row {
                    n,
                    config: label,
                    name: "edgeguard replay",
                    threads,
                    rate: n as f64 / run.wall.as_secs_f64(),
                    run,
                    spread,
                    base,
                });
            }
        }
    }

    println!(
        "\n| requests | configuration | implementation | threads | seconds (median) | spread | requests/s | vs baseline | CPU used | requests/CPU-s | peak RSS |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &table {
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.2}–{:.2} | {:.0} | {:.2}x | {:.0}% | {:.0} | {:.1} MiB |",
            r.n,
            r.config,
            r.name,
            r.threads,
            r.run.wall.as_secs_f64(),
            r.spread.0,
            r.spread.1,
            r.rate,
            r.rate / r.base,
            r.run.cpu_pct(),
            r.n as f64 / r.run.cpu.as_secs_f64(),
            r.run.max_rss_kib as f64 / 1024.0
        );
    }
    // Scaling: the all-cores run against the 1-thread run of the same
    // input and configuration, in wall time and in the CPU it was given
    // (on a shared machine the second says whether the cores were free).
    for one in table
        .iter()
        .filter(|r| r.threads == 1 && r.name == "edgeguard replay")
    {
        if let Some(all) = table
            .iter()
            .find(|r| r.n == one.n && r.config == one.config && r.threads == cores && cores > 1)
        {
            println!(
                "scaling, {} requests, {}: 1 -> {cores} threads {:.2}x requests/s (CPU used {:.0}% -> {:.0}%)",
                one.n,
                one.config,
                all.rate / one.rate,
                one.run.cpu_pct(),
                all.run.cpu_pct(),
            );
        }
    }
    for (n, label, per_round) in &ratios {
        let shown: Vec<String> = per_round.iter().map(|r| format!("{r:.2}x")).collect();
        println!(
            "side by side, {n} requests, {label}: 1-thread replay vs the baseline run beside it, \
             median {:.2}x (rounds, sorted: {})",
            per_round[per_round.len() / 2],
            shown.join(" ")
        );
    }
    amdahl(&table, sizes[0], configs[0].0, configs[1].0);
    println!(
        "\n(machine: {cores} cores; CPU used is user + system time over wall time, 100% = one core; \
         {rounds} rounds per row, the baseline's interleaved with replay's; inputs in {})",
        dir.display()
    );
}

/// How much faster than the baseline any replay could be with the scorer
/// they share: scoring's CPU per request is what the scored configuration
/// costs replay over the headers-only one; the baseline's CPU per request
/// divided by it is the ratio a free parser, reader and writer would reach.
fn amdahl(table: &[Row], n: u64, scored: &str, headers_only: &str) {
    let cpu_us = |config: &str, name: &str| {
        table
            .iter()
            .find(|r| r.n == n && r.config == config && r.name.starts_with(name) && r.threads == 1)
            .map(|r| r.run.cpu.as_secs_f64() * 1e6 / n as f64)
    };
    let (Some(replay), Some(rest), Some(base)) = (
        cpu_us(scored, "edgeguard"),
        cpu_us(headers_only, "edgeguard"),
        cpu_us(scored, "baseline"),
    ) else {
        return;
    };
    let scoring = replay - rest;
    println!(
        "CPU per request, {n} requests, 1 thread: baseline {base:.2} us, replay {replay:.2} us, of which \
         scoring (features + models) {scoring:.2} us and the rest {rest:.2} us; with scoring shared, \
         replay can reach at most {:.2}x the baseline per CPU-second (at a free rest)",
        base / scoring
    );
}

/// One `edgeguard replay` run over `input`, checked to have replayed all `n`.
fn replay_run(
    binary: &Path,
    config: &Path,
    threads: usize,
    dir: &Path,
    input: &Path,
    n: u64,
) -> Run {
    let mut cmd = Command::new(binary);
    cmd.arg("replay")
        .arg("--config")
        .arg(config)
        .args(["--threads", &threads.to_string(), "--no-progress"])
        .args(["--output", "/dev/null", "--summary"])
        .arg(dir.join("summary.txt"))
        .arg(input);
    let run = measure(cmd);
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(
        summary.starts_with(&format!("edgeguard replay: {n} requests")),
        "{summary}"
    );
    run
}

/// The run with the median wall time, and the fastest and slowest wall times.
fn median(mut runs: Vec<Run>) -> (Run, (f64, f64)) {
    runs.sort_by_key(|a| a.wall);
    let spread = (
        runs[0].wall.as_secs_f64(),
        runs[runs.len() - 1].wall.as_secs_f64(),
    );
    let mid = runs.len() / 2;
    (runs.swap_remove(mid), spread)
}

struct Row {
    n: u64,
    config: &'static str,
    name: &'static str,
    threads: usize,
    run: Run,
    /// Fastest and slowest wall time over the rounds.
    spread: (f64, f64),
    rate: f64,
    base: f64,
}

struct Run {
    wall: Duration,
    /// User + system CPU time: on a shared machine, the wall time of a
    /// multi-threaded run says little unless one knows how much CPU it got.
    cpu: Duration,
    max_rss_kib: i64,
}

impl Run {
    fn cpu_pct(&self) -> f64 {
        self.cpu.as_secs_f64() * 100.0 / self.wall.as_secs_f64()
    }
}

/// Runs a child to completion; its wall time and peak resident set.
fn measure(mut cmd: Command) -> Run {
    cmd.stdout(Stdio::null());
    let started = Instant::now();
    // Reaped by wait4 below, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("spawn");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child` is our unwaited child; both pointers are to locals.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert!(pid > 0, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed: {status}"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Run {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
    }
}

/// splitmix64: deterministic variations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Writes `n` requests to `path` unless a file of that name exists.
fn generate(n: u64, path: &Path) {
    if path.exists() {
        return;
    }
    let rows: Vec<Value> =
        std::fs::read_to_string(manifest().join("tests/fixtures/traffic/sample.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let tmp = path.with_extension("tmp");
    let mut out = BufWriter::new(File::create(&tmp).unwrap());
    let mut rng = Rng(0x5eed);
    for _ in 0..n {
        let row = &rows[rng.below(rows.len() as u64) as usize];
        let uri: String = row["uri"]
            .as_str()
            .unwrap()
            .chars()
            .map(|c| {
                if c.is_ascii_digit() {
                    char::from(b'0' + rng.below(10) as u8)
                } else {
                    c
                }
            })
            .collect();
        let client = match row["client"].as_str().unwrap().rsplit_once('.') {
            Some((net, _)) => format!("{net}.{}", rng.below(256)),
            None => row["client"].as_str().unwrap().to_owned(),
        };
        let mut headers: Vec<(String, String)> = row["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
            .collect();
        if headers.len() > 2 && rng.below(10) < 3 {
            let i = 1 + rng.below(headers.len() as u64 - 2) as usize;
            headers.swap(i, i + 1);
        }
        if rng.below(10) == 0 {
            headers.push(("x-internal-user-id".into(), rng.below(100_000).to_string()));
        }
        if rng.below(20) == 0 {
            for (k, v) in headers.iter_mut() {
                if k == "user-agent" {
                    v.push_str(&format!(" build/{}", rng.below(1000)));
                }
            }
        }
        let version = row["version"].as_str().unwrap();
        let line = if rng.below(5) == 0 {
            json!({
                "time": "2026-11-30T18:00:00+00:00",
                "client": client,
                "method": row["method"],
                "uri": uri,
                "version": format!("HTTP/{version}"),
                "status": 200,
                "headers": serde_json::to_string(&headers).unwrap(),
                "edgeguard_bot": "",
                "edgeguard_spoof": "",
                "edgeguard_action": "",
            })
        } else {
            json!({
                "method": row["method"],
                "uri": uri,
                "version": version,
                "client": client,
                "headers": headers,
            })
        };
        serde_json::to_writer(&mut out, &line).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    drop(out);
    std::fs::rename(tmp, path).unwrap();
}

/// The obvious implementation of the same work, one thread.
fn baseline(config: &Path, input: &Path) {
    let cfg = Config::load(config).unwrap();
    let scorer = cfg.scorer();
    let names: Vec<String> = scorer.map_or(Vec::new(), |s| {
        (0..s.model_count())
            .map(|i| s.model_name(i).unwrap().to_owned())
            .collect()
    });
    let mut out = BufWriter::new(File::create("/dev/null").unwrap());
    let (mut requests, mut errors) = (0u64, 0u64);
    let mut clear = [0u32; 64];
    for line in BufReader::new(File::open(input).unwrap()).lines() {
        let line = line.unwrap();
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                errors += 1;
                continue;
            }
        };
        let field = |k: &str| v[k].as_str().map(str::to_owned);
        let (Some(method), Some(uri)) = (field("method"), field("uri")) else {
            errors += 1;
            continue;
        };
        let client = field("client").unwrap_or_default();
        let version = match &v["version"] {
            Value::String(s) => s.trim_start_matches("HTTP/").parse::<f64>().ok(),
            other => other.as_f64(),
        };
        let Some(version) = version else {
            errors += 1;
            continue;
        };
        let list = match &v["headers"] {
            Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or(Value::Null),
            other => other.clone(),
        };
        let pairs: Vec<(String, String)> = list
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|h| {
                        (
                            h[0].as_str().unwrap_or_default().to_owned(),
                            h[1].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let headers: Vec<Header<'_>> = pairs
            .iter()
            .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
            .collect();
        let req = Request::new(
            method.as_bytes(),
            uri.as_bytes(),
            (version * 10.0).round() as u16,
            client.as_bytes(),
            &headers,
        );
        let stripped = cfg
            .headers()
            .map_or(0, |h| h.find_internal(&headers, &mut clear).matched);
        let mut scores = vec![0.0; names.len()];
        if let Some(s) = scorer {
            s.score(&req, &mut scores).unwrap();
        }
        let decision = cfg.policy().decide(&scores, client.as_bytes());
        requests += 1;
        let scores: serde_json::Map<String, Value> = names
            .iter()
            .cloned()
            .zip(scores.iter().map(|&s| json!(s)))
            .collect();
        let record = json!({
            "line": requests + errors,
            "stripped": stripped,
            "action": decision.action.as_str(),
            "flagged": decision.flagged_by.map(|i| names[i].clone()),
            "scores": scores,
        });
        writeln!(out, "{record}").unwrap();
    }
    out.flush().unwrap();
    eprintln!("baseline: {requests} requests, {errors} errors");
}
