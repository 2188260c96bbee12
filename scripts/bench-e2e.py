#!/usr/bin/env python3
"""`make bench-e2e`: the before/after table from real nginx under load.

An origin nginx (1 worker, `return 200`) on loopback, and one edge nginx
(1 worker, keepalive upstream to the origin) per configuration: the bare proxy
(no Lua), edgeguard's Lua engine, its Rust engine, and shadow mode (both), all
in mode "log" with the shipped header list and models. wrk, in its own
process, sends the request heads of scripts/bench-e2e/requests.http. The
configurations run interleaved: every round measures each once, in an order
rotated from round to round, so that a change in the machine's load hits all
of them alike. Each run records requests/s, latency percentiles (wrk), and
the edge worker's CPU time from /proc/<pid>/stat (utime + stime) divided by
the requests completed: the figure that survives a noisy shared machine.

Writes <out>/e2e.md (the table), <out>/e2e.png (chart) and <out>/e2e.json
(every run), and prints the table. The issue's targets are reported, not
enforced: the exit status is 0 whatever the numbers.
"""

import argparse
import datetime
import http.client
import json
import os
import pathlib
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
HERE = ROOT / "scripts" / "bench-e2e"
LIB = ROOT / "target" / "release" / "libedgeguard.so"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WRK = shutil.which("wrk") or "wrk"
CLK_TCK = os.sysconf("SC_CLK_TCK")
BAD_LOG_LEVELS = ("[error]", "[crit]", "[alert]", "[emerg]")

# name -> the configure{} engine line (None: the bare proxy, no Lua at all).
# The Rust engine is the default, so "rust" passes no engine option.
CONFIGS = {
    "bare": None,
    "lua": 'engine = "lua",',
    "rust": "",
    "shadow": 'engine = "shadow",',
}
LABELS = {
    "bare": "bare proxy (no Lua)",
    "lua": "Lua engine",
    "rust": "Rust engine",
    "shadow": "shadow (both)",
}
MODELS = ("bot", "spoof")

# The targets.
CPU_RATIO_TARGET = 0.25  # Rust adds at most 1/4 of the CPU the Lua engine adds
P99_TARGET = 1.10  # Rust P99 within 10 % of the bare proxy's


def env_default(name, default, kind=int):
    value = os.environ.get(name)
    return kind(value) if value not in (None, "") else default


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=env_default("BENCH_ROUNDS", 5),
                   help="rounds; each measures every configuration once (env BENCH_ROUNDS, default 5)")
    p.add_argument("--duration", type=float, default=env_default("BENCH_DURATION", 8.0, float),
                   help="seconds per measured run (env BENCH_DURATION, default 8)")
    p.add_argument("--warmup", type=float, default=env_default("BENCH_WARMUP", 3.0, float),
                   help="seconds of unmeasured load per configuration before round 1 (default 3)")
    p.add_argument("--connections", type=int, default=env_default("BENCH_CONNECTIONS", 16),
                   help="wrk connections (env BENCH_CONNECTIONS, default 16)")
    p.add_argument("--threads", type=int, default=1, help="wrk threads (default 1)")
    p.add_argument("--configs", default=os.environ.get("BENCH_CONFIGS", ",".join(CONFIGS)),
                   help="comma-separated subset of " + ",".join(CONFIGS) + " (env BENCH_CONFIGS)")
    p.add_argument("--out-dir", default=str(ROOT / "bench-results"), help="where e2e.md/png/json go")
    p.add_argument("--paced-rate", type=float, default=env_default("BENCH_PACED_RATE", 2000.0, float),
                   help="after each saturated run, a run paced near this many requests/s for latency "
                        "below saturation (env BENCH_PACED_RATE, default 2000; 0: none)")
    p.add_argument("--pin", action="store_true",
                   help="pin the edge worker to CPU 0 and wrk + origin to CPU 1 (default: no pinning)")
    p.add_argument("--no-chart", action="store_true", help="skip the PNG (no matplotlib needed)")
    p.add_argument("--perf", metavar="FILE",
                   help="after the rounds, record the Rust edge worker with `perf record -g` (cpu-clock) "
                        "during one more saturated run into FILE, and print its samples by shared object "
                        "and the top symbols of libedgeguard.so")
    p.add_argument("--keep", action="store_true", help="keep the nginx prefix directories")
    args = p.parse_args(argv)
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown or not args.configs:
        p.error(f"--configs: unknown {unknown}; choose from {','.join(CONFIGS)}")
    if args.rounds < 1 or args.duration <= 0 or args.connections < 1 or args.threads < 1:
        p.error("--rounds, --duration, --connections and --threads must be positive")
    return args


def load_requests(path):
    """The request heads of requests.http, as the bytes wrk sends."""
    heads, lines = [], []
    for line in path.read_text().splitlines() + [""]:
        if line.startswith("#"):
            continue
        if line == "":
            if lines:
                heads.append(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
                lines = []
        else:
            lines.append(line)
    return heads


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def render(template, replacements, edgeguard):
    out = []
    for line in template.splitlines():
        if line.rstrip().endswith("#edgeguard"):
            if not edgeguard:
                continue
            line = line.rstrip()[: -len("#edgeguard")].rstrip()
        for key, value in replacements.items():
            line = line.replace(f"@{key}@", value)
        out.append(line)
    return "\n".join(out) + "\n"


class Nginx:
    """One nginx master (daemon off) in its own prefix, and its one worker."""

    def __init__(self, name, conf, port, base):
        self.name, self.port = name, port
        self.prefix = pathlib.Path(base) / name
        (self.prefix / "logs").mkdir(parents=True)
        # Workers run as an unprivileged user when the master is root.
        os.chmod(self.prefix, 0o755)
        (self.prefix / "nginx.conf").write_text(conf)
        self.console = open(self.prefix / "console.log", "wb")
        self.proc = subprocess.Popen(
            [NGINX, "-p", f"{self.prefix}/", "-c", "nginx.conf", "-g", "daemon off;"],
            stdout=self.console, stderr=subprocess.STDOUT)
        self.worker = None

    def wait_ready(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    pass
                self.worker = self.find_worker()
                if self.worker:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def find_worker(self):
        try:
            children = pathlib.Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if len(children) == 1 else None

    def failure(self):
        self.console.flush()
        text = (self.prefix / "console.log").read_text(errors="replace")
        return (text + self.error_log()).strip()

    def error_log(self):
        path = self.prefix / "logs" / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def bad_log_lines(self):
        return [l for l in self.error_log().splitlines() if any(lvl in l for lvl in BAD_LOG_LEVELS)]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.console.close()


def worker_cpu(pid):
    """(utime + stime in seconds from /proc/<pid>/stat, on-CPU ns from schedstat)."""
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    try:
        sched_ns = int(pathlib.Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        sched_ns = None
    return ticks / CLK_TCK, sched_ns


def send_head(port, head):
    """One request head, byte for byte; returns (status, response headers)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        resp = http.client.HTTPResponse(s)
        resp.begin()
        resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}


def parse_scores(value):
    scores = {}
    for part in value.split(";"):
        name, _, number = part.strip().partition("=")
        if name:
            scores[name] = float(number)
    return scores


def check_edge(name, port, heads):
    """Before measuring: every head passes (mode "log"), reaches the origin
    without its internal headers, and with the scores of both models. Returns
    (problems, [scores per head])."""
    problems, all_scores = [], []
    for i, head in enumerate(heads, 1):
        status, headers = send_head(port, head)
        if status != 200:
            problems.append(f"request {i}: status {status}")
        internal = headers.get("x-origin-internal", "")
        score = headers.get("x-origin-score", "")
        if CONFIGS[name] is None:
            all_scores.append(None)
            continue
        if internal:
            problems.append(f"request {i}: internal headers reached the origin ({internal!r})")
        scores = parse_scores(score)
        if sorted(scores) != sorted(MODELS):
            problems.append(f"request {i}: origin saw X-Bot-Score {score!r}, expected {' and '.join(MODELS)}")
        all_scores.append(scores)
    return problems, all_scores


def run_wrk(port, duration, connections, threads, load_cpu, pace_ms=None, scheme="http", close=False):
    """wrk with wrk.lua's request heads; `close` sends `Connection: close` on
    every request (a new connection, and over https a handshake, per request)."""
    cmd = [WRK, f"-t{threads}", f"-c{connections}", f"-d{duration:g}s", "--timeout", "5s",
           "-s", str(HERE / "wrk.lua"), f"{scheme}://127.0.0.1:{port}/", "--", str(HERE / "requests.http")]
    if load_cpu is not None:
        cmd = ["taskset", "-c", str(load_cpu)] + cmd
    env = dict(os.environ)
    env.pop("EDGEGUARD_WRK_PACE_MS", None)
    if pace_ms:
        env["EDGEGUARD_WRK_PACE_MS"] = f"{pace_ms:g}"
    env["EDGEGUARD_WRK_CLOSE"] = "1" if close else "0"
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60, env=env)
    for line in out.stdout.splitlines():
        if line.startswith("EDGEGUARD_WRK "):
            return json.loads(line[len("EDGEGUARD_WRK "):])
    raise RuntimeError(f"wrk printed no result (exit {out.returncode}):\n{out.stdout}\n{out.stderr}")


def perf_profile(edge, args, load_cpu):
    """One saturated run of `edge` with perf recording its worker; prints the
    share of samples per shared object (what BENCHMARKS.md's split of the
    Rust engine's cost comes from) and the top symbols of libedgeguard.so."""
    rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-g",
                            "-p", str(edge.worker), "-o", args.perf],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    r = measure(edge, args, load_cpu)
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    print(f"bench-e2e: perf run {r['rps']:.0f} req/s, CPU {r['cpu_us_per_req']:.1f} µs/req, "
          f"samples in {args.perf}", file=sys.stderr)
    for sort, extra in (("dso", []), ("sym", ["--dsos", "libedgeguard.so"])):
        out = subprocess.run(["perf", "report", "-i", args.perf, "--stdio", "--no-children",
                              "--sort", sort, "-g", "none", "--percent-limit", "0.5"] + extra,
                             capture_output=True, text=True)
        lines = [l for l in out.stdout.splitlines() if l.strip() and not l.startswith("#")]
        print(f"bench-e2e: perf samples by {sort}:\n  " + "\n  ".join(lines[:25]), file=sys.stderr)


def measure(edge, args, load_cpu, pace_ms=None):
    pid = edge.worker
    cpu0, sched0 = worker_cpu(pid)
    load0 = os.getloadavg()[0]
    w = run_wrk(edge.port, args.duration, args.connections, args.threads, load_cpu, pace_ms)
    cpu1, sched1 = worker_cpu(pid)
    if edge.find_worker() != pid:
        raise RuntimeError(f"{edge.name}: the nginx worker changed during the run (crash?):\n{edge.failure()}")
    n = w["requests"]
    if n <= 0:
        raise RuntimeError(f"{edge.name}: wrk completed no request: {w}")
    seconds = w["duration_us"] / 1e6
    pct = w["latency_us"]["percentiles"]
    errors = sum(w["errors"].values())
    return {
        "config": edge.name,
        "load": "paced" if pace_ms else "saturated",
        "requests": n,
        "seconds": seconds,
        "rps": n / seconds,
        "p50_ms": pct["50"] / 1000,
        "p90_ms": pct["90"] / 1000,
        "p99_ms": pct["99"] / 1000,
        "percentiles_ms": {p: v / 1000 for p, v in pct.items()},
        "errors": w["errors"],
        "error_count": errors,
        "cpu_s": cpu1 - cpu0,
        "cpu_us_per_req": (cpu1 - cpu0) / n * 1e6,
        "sched_us_per_req": None if sched0 is None else (sched1 - sched0) / n / 1000,
        "worker_busy": (cpu1 - cpu0) / seconds,
        "loadavg_1m": [load0, os.getloadavg()[0]],
    }


def spread(values):
    values = sorted(values)
    return {"median": statistics.median(values), "min": values[0], "max": values[-1]}


def summarize(runs, configs):
    """Per configuration, median and range over rounds of every figure; runs
    of one load mode only."""
    summary = {}
    for c in configs:
        rs = [r for r in runs if r["config"] == c]
        summary[c] = {k: spread([r[k] for r in rs])
                      for k in ("rps", "p50_ms", "p90_ms", "p99_ms", "cpu_us_per_req", "worker_busy")}
        if all(r["sched_us_per_req"] is not None for r in rs):
            summary[c]["sched_us_per_req"] = spread([r["sched_us_per_req"] for r in rs])
    # What edgeguard adds over the bare proxy, paired within each round: the
    # two runs of a round saw the same machine, give or take a few seconds.
    if "bare" in configs:
        rounds = sorted({r["round"] for r in runs})
        cell = {(r["round"], r["config"]): r for r in runs}
        for c in configs:
            if c == "bare":
                continue
            added = [cell[(k, c)]["cpu_us_per_req"] - cell[(k, "bare")]["cpu_us_per_req"] for k in rounds]
            p99 = [cell[(k, c)]["p99_ms"] / cell[(k, "bare")]["p99_ms"] for k in rounds]
            summary[c]["added_us_per_req"] = spread(added)
            summary[c]["p99_vs_bare"] = spread(p99)
            summary[c]["_added_by_round"] = added
    return summary


def verdict(s, limit):
    """Met or not by the median of the per-round ratios; said plainly when the
    rounds do not agree, since a noisy machine can put single rounds anywhere."""
    if s["max"] <= limit:
        return True, "met in every round"
    if s["min"] > limit:
        return False, "not met in any round"
    return s["median"] <= limit, ("met by the median" if s["median"] <= limit else "not met by the median") \
        + ", but the rounds disagree"


def targets(sat, paced):
    """The issue's two targets, from per-round ratios (median and range)."""
    out = []
    if "rust" in sat and "lua" in sat and "added_us_per_req" in sat["rust"]:
        ratios = [r / l if l > 0 else float("inf")
                  for r, l in zip(sat["rust"]["_added_by_round"], sat["lua"]["_added_by_round"])]
        s = spread(ratios)
        out.append({
            "target": "Rust engine adds at most 1/4 of the CPU per request the Lua engine adds",
            "measured": f"Rust adds {sat['rust']['added_us_per_req']['median']:.1f} µs, "
                        f"Lua adds {sat['lua']['added_us_per_req']['median']:.1f} µs (saturated runs): "
                        f"ratio {s['median']:.3f} (rounds {s['min']:.3f}–{s['max']:.3f}), target ≤ {CPU_RATIO_TARGET}",
        })
        out[-1]["met"], out[-1]["verdict"] = verdict(s, CPU_RATIO_TARGET)
    for name, summary in (("paced", paced), ("saturated", sat)):
        if summary and "rust" in summary and "p99_vs_bare" in summary["rust"]:
            s = summary["rust"]["p99_vs_bare"]
            out.append({
                "target": f"Rust engine P99 within 10 % of the bare proxy's ({name} runs)",
                "measured": f"Rust P99 / bare P99 = {s['median']:.3f} (rounds {s['min']:.3f}–{s['max']:.3f}), "
                            f"target ≤ {P99_TARGET}",
            })
            out[-1]["met"], out[-1]["verdict"] = verdict(s, P99_TARGET)
    return out


def fmt(s, digits=2, scale=1.0):
    m, lo, hi = s["median"] * scale, s["min"] * scale, s["max"] * scale
    return f"{m:,.{digits}f} ({lo:,.{digits}f}–{hi:,.{digits}f})"


def table(summary, configs):
    head = ("| configuration | requests/s | P50 ms | P90 ms | P99 ms | P99 / bare | worker CPU µs/request "
            "| added over bare µs/request | worker busy |")
    rows = [head, "|" + "---|" * 9]
    for c in configs:
        s = summary[c]
        added = fmt(s["added_us_per_req"], 1) if "added_us_per_req" in s else "—"
        p99_ratio = fmt(s["p99_vs_bare"], 2) if "p99_vs_bare" in s else "—"
        rows.append(f"| {LABELS[c]} | {fmt(s['rps'], 0)} | {fmt(s['p50_ms'], 3)} | {fmt(s['p90_ms'], 3)} "
                    f"| {fmt(s['p99_ms'], 3)} | {p99_ratio} | {fmt(s['cpu_us_per_req'], 1)} | {added} "
                    f"| {fmt(s['worker_busy'], 0, 100)} % |")
    return "\n".join(rows)


def command_line(argv):
    return "python3 scripts/bench-e2e.py" + ("" if not argv else " " + " ".join(argv))


def machine_notes(pin, load_start, load_end):
    def first_line(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            return (r.stdout or r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return "unknown"

    model = "unknown"
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    luajit = first_line(["dpkg-query", "-W", "-f", "${Version}", "libluajit2-5.1-2"])
    wrk = first_line([WRK, "-v"]).split(" Copyright")[0]
    commit = first_line(["git", "-C", str(ROOT), "describe", "--always", "--dirty"])
    return [
        f"CPU: {os.cpu_count()} × {model}; kernel {platform.release()}",
        f"{first_line([NGINX, '-v'])}, Debian's lua-nginx-module, LuaJIT (luajit2) {luajit}; {wrk}",
        f"edgeguard {commit}, release build",
        ("pinning: edge worker on CPU 0 (worker_cpu_affinity), origin worker and wrk on CPU 1 (taskset)"
         if pin else "pinning: none (the scheduler places edge, origin and wrk; pinned, the edge worker "
                     "could not leave a core that other work was using)"),
        f"load average (1 min) {load_start:.2f} at start, {load_end:.2f} at end: the machine is shared "
        "with other work, which is why configurations are interleaved and CPU per request is the headline",
    ]


def write_markdown(path, args, argv, sat, paced, tgts, notes, when, heads, total_s, pace_ms):
    lines = [
        "# Before/after under nginx",
        "",
        f"`make bench-e2e` (`{command_line(argv)}`), {when}, {total_s:.0f} s.",
        "",
        "Real nginx, 1 worker, in front of an nginx origin (1 worker, `return 200`) on loopback, keepalive "
        "upstream; load from wrk in its own process. edgeguard in mode \"log\" (every request proxied) with "
        "`nginx-conf/internal-headers.txt` and `models/legacy/bot.json` + `models/legacy/spoof.json` (schema 1, which both engines read), `access()` in the rewrite phase as shipped; wrk rotates "
        f"{len(heads)} request heads (`scripts/bench-e2e/requests.http`: browsers and bots, 16–20 headers, "
        f"1–5 internal ones). {args.rounds} round{'s' if args.rounds > 1 else ''}, each measuring every configuration once, in an order "
        f"rotated from round to round, after {args.warmup:g} s of warm-up per configuration. Cells: median "
        "(min–max) over the rounds. Worker CPU is utime + stime of the edge worker from `/proc/<pid>/stat` "
        "over the run, divided by the requests completed; \"added over bare\" and \"P99 / bare\" are paired "
        "within each round.",
        "",
        f"## Saturated: `wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s`",
        "",
        f"As fast as the edge answers: requests/s is what one worker sustains, and latency is mostly "
        f"queueing ({args.connections} requests in flight), so its ratios follow the CPU per request. "
        "\"Worker busy\" (worker CPU time / wall time) stays below 100 %: the edge worker shares the "
        "2 cores with wrk, the origin and whatever else runs on the machine.",
        "",
        table(sat, args.configs),
        "",
    ]
    if paced:
        lines += [
            f"## Paced: about {args.paced_rate:g} requests/s offered",
            "",
            f"`-c{args.connections}`, each connection waiting a random time before each request (exponential, "
            f"mean {pace_ms:g} ms: arrivals spread like independent clients'). Below saturation, latency is the "
            "time the edge takes for a request, the figure the P99 target is about; on a shared machine its "
            "tail is set by the scheduler as much as by the edge. CPU per request is higher than saturated: "
            "each request wakes the worker on its own instead of sharing a wake-up with others.",
            "",
            table(paced, args.configs),
            "",
        ]
    if "rust" in sat and "lua" in sat and "added_us_per_req" in sat["rust"]:
        r, l = sat["rust"]["added_us_per_req"]["median"], sat["lua"]["added_us_per_req"]["median"]
        lines += ["## Result", "",
                  f"Per request, over the bare proxy, the Lua engine adds {l:.1f} µs of nginx worker CPU and the "
                  f"Rust engine {r:.1f} µs" + (f": {l / r:.1f}× less." if r > 0 else ".")
                  + (f" Shadow mode (both engines score, the Rust one strips and acts) adds "
                     f"{sat['shadow']['added_us_per_req']['median']:.1f} µs." if "shadow" in sat else ""), ""]
    if tgts:
        lines += ["## The issue's targets (reported, not enforced)", ""]
        for t in tgts:
            lines.append(f"- {t['target']}: {t['measured']} — **{t['verdict']}**")
        lines.append("")
    lines += ["## Machine", ""] + [f"- {n}" for n in notes] + [""]
    lines += ["Every run (requests, latency percentiles, CPU from both `/proc/<pid>/stat` and "
              "`/proc/<pid>/schedstat`) is in `e2e.json`.", ""]
    path.write_text("\n".join(lines))


COLORS = {"bare": "#7f7f7f", "lua": "#d62728", "rust": "#1f77b4", "shadow": "#9467bd"}


def latency_panel(ax, runs, configs, title):
    values = [v for r in runs for v in r["percentiles_ms"].values() if v > 0]
    for c in configs:
        rs = [r for r in runs if r["config"] == c]
        ps = sorted(rs[0]["percentiles_ms"], key=float)
        xs = [1 / (1 - float(p) / 100) for p in ps]
        med = [statistics.median(r["percentiles_ms"][p] for r in rs) for p in ps]
        lo = [min(r["percentiles_ms"][p] for r in rs) for p in ps]
        hi = [max(r["percentiles_ms"][p] for r in rs) for p in ps]
        ax.plot(xs, med, marker="o", ms=3, color=COLORS[c], label=LABELS[c])
        ax.fill_between(xs, lo, hi, color=COLORS[c], alpha=0.15)
    ticks = [50, 90, 99, 99.9, 99.99]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1 / (1 - t / 100) for t in ticks])
    ax.set_xticklabels([f"P{t:g}" for t in ticks])
    ax.minorticks_off()
    lo, hi = min(values), max(values)
    yticks = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000,
                          5000, 10000) if lo / 2 <= t <= hi * 2]
    ax.set_yticks(yticks)
    ax.set_yticklabels([f"{t:g}" for t in yticks])
    ax.set_ylabel("latency (ms, log scale)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)


def write_chart(path, sat, sat_runs, paced_runs, configs, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 3 if paced_runs else 2
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 5.2),
                             gridspec_kw={"width_ratios": [3] * (panels - 1) + [2.5]})
    if paced_runs:
        latency_panel(axes[0], paced_runs, configs,
                      f"Latency, paced at ~{args.paced_rate:g} req/s\n(median of rounds, band: min–max)")
    latency_panel(axes[-2], sat_runs, configs,
                  f"Latency, saturated (wrk -c{args.connections})\n(median of rounds, band: min–max)")

    ax = axes[-1]
    bare = sat["bare"]["cpu_us_per_req"]["median"] if "bare" in sat else 0.0
    for i, c in enumerate(configs):
        s = sat[c]["cpu_us_per_req"]
        base = min(bare, s["median"])
        ax.bar(i, base, color="#c7c7c7", edgecolor="black", linewidth=0.5)
        ax.bar(i, s["median"] - base, bottom=base, color=COLORS[c], edgecolor="black", linewidth=0.5)
        ax.errorbar(i, s["median"], yerr=[[s["median"] - s["min"]], [s["max"] - s["median"]]],
                    color="black", capsize=4)
        added = sat[c].get("added_us_per_req")
        text = f"{s['median']:.1f}" + (f"\n(+{added['median']:.1f})" if added else "")
        ax.text(i, s["max"], text, ha="center", va="bottom", fontsize=9)
    ax.set_xticks(list(range(len(configs))))
    ax.set_xticklabels([LABELS[c].replace(" (", "\n(") for c in configs])
    ax.set_ylabel("edge worker CPU per request (µs)")
    ax.set_title("CPU per request, saturated runs (median, whiskers:\nmin–max; grey: the bare proxy's, "
                 "colour: added)")
    ax.margins(y=0.18)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv):
    args = parse_args(argv)
    for tool in (NGINX, WRK):
        if not shutil.which(tool):
            sys.exit(f"bench-e2e: {tool} not found (make bench-deps installs it)")
    if any(CONFIGS[c] is not None for c in args.configs) and not LIB.exists():
        sys.exit(f"bench-e2e: {LIB} not found: run `make build` first")
    pin = args.pin and (os.cpu_count() or 1) >= 2
    edge_affinity = "worker_cpu_affinity 01;" if pin else ""
    load_cpu = 1 if pin else None
    # Each connection waits this long before each request: the offered rate is
    # then about connections / pace while latency stays well below the pace.
    pace_ms = 1000.0 * args.connections / args.paced_rate if args.paced_rate > 0 else None

    heads = load_requests(HERE / "requests.http")
    base = tempfile.mkdtemp(prefix="edgeguard-bench-e2e-")
    os.chmod(base, 0o755)
    started = time.monotonic()
    load_start = os.getloadavg()[0]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    servers = []
    try:
        origin_port = free_port()
        origin = Nginx("origin", render((HERE / "origin.conf").read_text(),
                                        {"PORT": str(origin_port), "AFFINITY": "worker_cpu_affinity 10;" if pin else ""},
                                        edgeguard=False), origin_port, base)
        servers.append(origin)
        edges = {}
        for c in args.configs:
            port = free_port()
            conf = render((HERE / "edge.conf").read_text(), {
                "PORT": str(port), "ORIGIN_PORT": str(origin_port), "AFFINITY": edge_affinity,
                "ROOT": str(ROOT), "LIB": str(LIB), "ENGINE": CONFIGS[c] or "",
            }, edgeguard=CONFIGS[c] is not None)
            edges[c] = Nginx(c, conf, port, base)
            servers.append(edges[c])
        for s in servers:
            if not s.wait_ready():
                raise RuntimeError(f"nginx '{s.name}' did not start:\n{s.failure()}")

        # Check what each configuration does before timing it.
        scores = {}
        for c, edge in edges.items():
            problems, scores[c] = check_edge(c, edge.port, heads)
            if problems:
                raise RuntimeError(f"configuration '{c}' does not do its job:\n  " + "\n  ".join(problems))
        engines = [c for c in args.configs if CONFIGS[c] is not None]
        for c in engines[1:]:
            for i, (a, b) in enumerate(zip(scores[engines[0]], scores[c]), 1):
                for m in MODELS:
                    if abs(a[m] - b[m]) > 1e-6 * max(1.0, abs(a[m])):
                        print(f"bench-e2e: warning: request {i}, model {m}: {engines[0]} scores {a[m]!r}, "
                              f"{c} scores {b[m]!r}", file=sys.stderr)
        print(f"bench-e2e: {len(edges)} configurations checked on {len(heads)} request heads "
              f"(status 200, internal headers stripped, scores sent upstream)", file=sys.stderr)

        if args.warmup > 0:
            for c, edge in edges.items():
                print(f"bench-e2e: warm-up {c} ({args.warmup:g} s)", file=sys.stderr)
                run_wrk(edge.port, args.warmup, args.connections, args.threads, load_cpu)

        runs = []
        for k in range(args.rounds):
            shift = k % len(args.configs)
            order = args.configs[shift:] + args.configs[:shift]
            for c in order:
                for pace in (None, pace_ms) if pace_ms else (None,):
                    r = measure(edges[c], args, load_cpu, pace)
                    r["round"] = k + 1
                    runs.append(r)
                    print(f"bench-e2e: round {k + 1}/{args.rounds} {c:7s} {r['load']:9s} {r['rps']:9.0f} req/s  "
                          f"P99 {r['p99_ms']:7.3f} ms  CPU {r['cpu_us_per_req']:6.1f} µs/req  "
                          f"busy {r['worker_busy'] * 100:3.0f} %  errors {r['error_count']}", file=sys.stderr)

        if args.perf and "rust" in edges:
            perf_profile(edges["rust"], args, load_cpu)

        log_problems = {c: e.bad_log_lines() for c, e in edges.items()}
    finally:
        for s in servers:
            s.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"bench-e2e: nginx prefixes kept in {base}", file=sys.stderr)

    total_s = time.monotonic() - started
    sat_runs = [r for r in runs if r["load"] == "saturated"]
    paced_runs = [r for r in runs if r["load"] == "paced"]
    sat = summarize(sat_runs, args.configs)
    paced = summarize(paced_runs, args.configs) if paced_runs else None
    tgts = targets(sat, paced)
    notes = machine_notes(pin, load_start, os.getloadavg()[0])
    failed = sum(r["error_count"] for r in runs)
    if failed:
        notes.append(f"wrk counted {failed} failed requests (socket errors or status ≥ 400): see e2e.json")
    for c, lines in log_problems.items():
        if lines:
            notes.append(f"{c}: {len(lines)} error-log lines at error level or above, first: `{lines[0][:200]}`")

    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_markdown(out / "e2e.md", args, argv, sat, paced, tgts, notes, when, heads, total_s, pace_ms)

    def public(summary):
        return None if summary is None else {
            c: {k: v for k, v in s.items() if not k.startswith("_")} for c, s in summary.items()}

    (out / "e2e.json").write_text(json.dumps({
        "date": when, "command": command_line(argv), "args": vars(args), "pace_ms": pace_ms,
        "notes": notes, "saturated": public(sat), "paced": public(paced), "targets": tgts, "runs": runs,
    }, indent=1) + "\n")
    if not args.no_chart:
        try:
            write_chart(out / "e2e.png", sat, sat_runs, paced_runs, args.configs, args)
        except ImportError:
            print("bench-e2e: matplotlib missing, no chart (make bench-deps installs it)", file=sys.stderr)

    print(f"saturated (wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s):")
    print(table(sat, args.configs))
    if paced:
        print(f"\npaced (about {args.paced_rate:g} req/s):")
        print(table(paced, args.configs))
    print()
    for t in tgts:
        print(f"{'MET    ' if t['met'] else 'NOT MET'}  {t['target']}: {t['measured']} ({t['verdict']})")
    for n in notes:
        print(f"note: {n}")
    print(f"wrote {out / 'e2e.md'}" + ("" if args.no_chart else f", {out / 'e2e.png'}") + f", {out / 'e2e.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
