#!/usr/bin/env python3
"""Replay from Kafka measured side by side (`make bench-kafka`).

On one machine, with a tansu broker (scripts/build-tansu.sh) on loopback:

1. Throughput, one thread each: `edgeguard replay --threads 1` of a file of
   request lines, and of the same lines from a 4-partition topic (a new
   group each round, --exit-at-end), rounds alternated; medians. Kafka's
   rate is given twice: over the whole run (joining the group, waiting for
   the end, leaving), and from its first message to its last result (the
   work itself: the summary's line).
2. Two members of one group (--threads 1 each) against one, on the same
   topic: the rate of the group from the first message either member got
   to the last result either wrote.
3. Memory: one member replaying --rss-messages messages into a writer held
   back (a pipe read at a fixed rate below replay's), VmRSS sampled every
   second; the partitions are paused and resumed all along.

Timings on a shared VM are noisy: the ratios, from one run, are the result.
"""

import argparse
import json
import os
import pathlib
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
CACHE = pathlib.Path(os.environ.get("EDGEGUARD_CACHE", pathlib.Path.home() / ".cache" / "edgeguard"))
TANSU = pathlib.Path(os.environ.get("EDGEGUARD_TANSU", CACHE / "tansu-0.6.0" / "bin" / "tansu"))
CONFIG = ROOT / "nginx-conf" / "record.json"
SAMPLE = ROOT / "tests" / "fixtures" / "traffic" / "sample.jsonl"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, workdir):
        self.port = free_port()
        self.url = f"tcp://127.0.0.1:{self.port}"
        self.address = f"127.0.0.1:{self.port}"
        self.log = open(pathlib.Path(workdir) / "tansu.log", "ab")
        self.proc = subprocess.Popen([TANSU, "broker", "--listener-url", self.url, "--advertised-listener-url",
                                      self.url, "--storage-engine", "memory://tansu/"],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit("tansu did not start")
                time.sleep(0.05)

    def topic(self, name, partitions):
        subprocess.run([TANSU, "topic", "create", "--broker", self.url, "--partitions", str(partitions), name],
                       check=True, capture_output=True)

    def rss_mb(self):
        return rss_kb(self.proc.pid) / 1024

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def lines(n, compact=False, seed=0):
    """`n` request lines from the labelled fixture, each URI made unique;
    `compact`: the request alone (no labels) with its first 8 headers,
    about 470 bytes against 930 (the RSS run's 10 M messages must fit the
    in-memory broker, which holds about 1.1 KB per message of 790)."""
    base = [json.loads(l) for l in SAMPLE.read_text().splitlines()]
    rng = random.Random(seed)
    for i in range(n):
        r = dict(base[rng.randrange(len(base))])
        r["uri"] = f"{r['uri'].split('?')[0]}?n={i}"
        if compact:
            r = {k: r[k] for k in ("method", "uri", "version", "client")} | {"headers": r["headers"][:8]}
        yield json.dumps(r, separators=(",", ":"))


def write(path, it):
    with open(path, "w") as f:
        for l in it:
            f.write(l)
            f.write("\n")


def ship(broker, topic, path):
    done = subprocess.run([EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", topic, path],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return done.stderr.strip()


def replay(args, output=None):
    """Runs a replay; returns (wall seconds, summary text)."""
    cmd = [EDGEGUARD, "replay", "--config", CONFIG, "--no-progress", *args]
    if output:
        cmd += ["--output", output]
    t = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t
    if done.returncode != 0:
        raise SystemExit(f"{cmd}: {done.stderr}")
    return wall, done.stderr


def requests_per_s(summary):
    return float(re.search(r"\(([0-9.]+) requests/s", summary).group(1))


def working(summary):
    m = re.search(r"([0-9.]+) s from the first message to the last result \(([0-9.]+) messages/s\)", summary)
    return float(m.group(1)), float(m.group(2))


def messages(summary):
    return int(re.search(r": ([0-9]+) messages,", summary).group(1))


def throughput(broker, work, n, rounds):
    path = work / "lines.jsonl"
    write(path, lines(n))
    broker.topic("bench", 4)
    print(f"shipped: {ship(broker, 'bench', path)}", flush=True)
    file_rates, kafka_work, kafka_whole = [], [], []
    for r in range(rounds):
        _, s = replay(["--threads", "1", path])
        file_rates.append(requests_per_s(s))
        _, s = replay(["--threads", "1", "--kafka-brokers", broker.address, "--topic", "bench", "--group",
                       f"one-{r}", "--exit-at-end"])
        assert messages(s) == n, s
        kafka_work.append(working(s)[1])
        kafka_whole.append(requests_per_s(s))
        print(f"round {r + 1}: file {file_rates[-1]:.0f}/s, kafka {kafka_work[-1]:.0f}/s "
              f"(whole run {kafka_whole[-1]:.0f}/s)", flush=True)
    return statistics.median(file_rates), statistics.median(kafka_work), statistics.median(kafka_whole)


def group_of_two(broker, n, rounds):
    ones, twos = [], []
    for r in range(rounds):
        _, s = replay(["--threads", "1", "--kafka-brokers", broker.address, "--topic", "bench", "--group",
                       f"solo-{r}", "--exit-at-end"])
        ones.append(working(s)[1])
        procs = []
        for m in range(2):
            cmd = [EDGEGUARD, "replay", "--config", CONFIG, "--no-progress", "--threads", "1", "--kafka-brokers",
                   broker.address, "--topic", "bench", "--group", f"pair-{r}", "--exit-at-end"]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        summaries = [p.communicate()[1] for p in procs]
        for p, s in zip(procs, summaries):
            if p.returncode != 0:
                raise SystemExit(f"round {r + 1}: a member failed (exit {p.returncode}):\n{s}")
        total = sum(messages(s) for s in summaries)
        if total < n:
            # At least once: more than n (a rebalance's replays) is allowed,
            # fewer is a message lost (tansu 0.6.0 unpatched lost the rest of
            # a producer batch when the group resumed inside it).
            raise SystemExit(f"round {r + 1}: LOST: the members got {total} of {n} messages:\n"
                             + "\n".join(summaries))
        # Each member's span starts at its own first message; the group's
        # is at least the longer one. A member that joined once the other
        # had read everything got nothing (and has no span).
        span = max(working(s)[0] for s in summaries if messages(s) > 0)
        twos.append(total / span)
        print(f"round {r + 1}: one member {ones[-1]:.0f}/s, two members {twos[-1]:.0f}/s "
              f"({[messages(s) for s in summaries]} messages each)", flush=True)
    return statistics.median(ones), statistics.median(twos)


class Pipe(threading.Thread):
    """Reads a FIFO at `rate` bytes per second: a writer held back."""

    def __init__(self, path, rate):
        super().__init__(daemon=True)
        self.path, self.rate, self.bytes = path, rate, 0

    def run(self):
        step = 0.01
        with open(self.path, "rb") as f:
            start = time.monotonic()
            while True:
                want = int(self.rate * (time.monotonic() - start)) - self.bytes
                if want <= 0:
                    time.sleep(step)
                    continue
                got = f.read(min(want, 1 << 20))
                if not got:
                    return
                self.bytes += len(got)


def rss_run(broker, work, n, chunk, rss_rate=None):
    broker.topic("rss", 4)
    shipped = 0
    while shipped < n:
        k = min(chunk, n - shipped)
        path = work / "rss.jsonl"
        write(path, lines(k, compact=True, seed=shipped))
        ship(broker, "rss", path)
        shipped += k
        print(f"shipped {shipped} (broker RSS {broker.rss_mb():.0f} MB)", flush=True)
    # replay's own rate into /dev/null, then a pipe read at 70% of it.
    probe = work / "probe.jsonl"
    write(probe, lines(200_000, compact=True))
    rows = work / "probe-rows.jsonl"
    _, s = replay(["--threads", "1", probe], output=rows)
    per_row = rows.stat().st_size / 200_000
    # 70 % of the rate replay keeps up (file replay's, or --rss-rate rows/s
    # when Kafka's is the lower one): the writer is the slowest stage.
    rate = per_row * (rss_rate or requests_per_s(s)) * 0.7
    fifo = work / "rows.fifo"
    os.mkfifo(fifo)
    pipe = Pipe(fifo, rate)
    pipe.start()
    metrics = free_port()
    cmd = [EDGEGUARD, "replay", "--config", CONFIG, "--no-progress", "--threads", "1", "--kafka-brokers",
           broker.address, "--topic", "rss", "--group", "rss", "--exit-at-end", "--output", fifo,
           "--metrics-listen", f"127.0.0.1:{metrics}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples = []
    while proc.poll() is None:
        try:
            samples.append((time.monotonic(), rss_kb(proc.pid), scrape(metrics)))
        except (OSError, StopIteration):
            pass
        time.sleep(1)
    summary = proc.stderr.read()
    assert proc.returncode == 0 and messages(summary) == n, summary
    return samples, summary, rate


def scrape(port):
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return 0
    m = re.search(r'^edgeguard_replay_messages_total\{[^}]*\} ([0-9]+)', text, re.M)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=500_000, help="throughput input (default 500000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rss-messages", type=int, default=10_000_000)
    ap.add_argument("--rss-chunk", type=int, default=1_000_000, help="lines shipped at a time")
    ap.add_argument("--rss-rate", type=float, help="rows/s the held-back writer is paced from (default: file replay's)")
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "bench-results" / "kafka.md")
    args = ap.parse_args()
    for need in (EDGEGUARD, TANSU):
        if not need.exists():
            raise SystemExit(f"missing {need}: make build-kafka tansu")
    report = [f"# Replay from Kafka (scripts/bench-kafka.py, {time.strftime('%Y-%m-%d')})", "",
              f"{os.cpu_count()} cores, broker (tansu, memory storage) on the same machine; "
              f"load average at start {os.getloadavg()[0]:.1f}.", ""]
    with tempfile.TemporaryDirectory(prefix="edgeguard-bench-kafka-") as tmp:
        work = pathlib.Path(tmp)
        broker = Broker(work)
        try:
            if not args.skip_throughput:
                f, k, whole = throughput(broker, work, args.lines, args.rounds)
                one, two = group_of_two(broker, args.lines, args.rounds)
                report += [f"## Throughput: {args.lines} request lines, one thread each, median of {args.rounds}", "",
                           "| | requests/s | vs file |", "|---|---:|---:|",
                           f"| file replay | {f:.0f} | 1.00 |",
                           f"| Kafka, first message to last result | {k:.0f} | {k / f:.2f} |",
                           f"| Kafka, whole run (join, end, leave) | {whole:.0f} | {whole / f:.2f} |", "",
                           "| group | messages/s | vs one |", "|---|---:|---:|",
                           f"| one member | {one:.0f} | 1.00 |",
                           f"| two members | {two:.0f} | {two / one:.2f} |", ""]
            if not args.skip_rss:
                samples, summary, rate = rss_run(broker, work, args.rss_messages, args.rss_chunk, args.rss_rate)
                report += rss_report(samples, summary, rate, args.rss_messages)
        finally:
            broker.stop()
    text = "\n".join(report) + "\n"
    print(text)
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(text)


def rss_report(samples, summary, rate, n):
    marks = []
    for frac in (0.01, 0.1, 0.25, 0.5, 0.75, 1.0):
        want = frac * n
        hit = next((s for s in samples if s[2] >= want), samples[-1])
        marks.append((frac, hit))
    steady = [kb for _, kb, m in samples if m >= 0.1 * n]
    pauses = re.search(r"paused for the writer: ([0-9]+) times", summary).group(1)
    lines = [f"## Memory: {n} messages into a writer held back ({rate / 1e6:.1f} MB/s)", "",
             "| messages done | VmRSS |", "|---:|---:|"]
    lines += [f"| {hit[2]} ({frac:.0%}) | {hit[1] / 1024:.1f} MiB |" for frac, hit in marks]
    lines += ["", f"From 10 % of the messages on: VmRSS {min(steady) / 1024:.1f} to {max(steady) / 1024:.1f} MiB "
              f"over {len(steady)} one-second samples; partitions paused {pauses} times.", ""]
    return lines


if __name__ == "__main__":
    main()
