#!/usr/bin/env python3
"""Solve times of the challenge's proof of work at each difficulty, side by
side, for docs/challenge.md:

- browser: headless Chromium solving the real page (the library renders it
  and checks the answer: tests/e2e/challenge_pages.py), from the page being
  served to the answer arriving; workers (the default) and, with
  --main-thread, the page's own thread (where workers are refused);
- python: the 15-line hashlib script issue 31 describes, one core;
- native: examples/pow_native.rs, SHA-256 midstate on every core.

Each solve is a geometric draw (mean 2^bits hashes), so the table gives the
median and the 90th percentile of TRIALS solves, and the hash rate.

    python3 scripts/pow-measure.py [--bits 12,14,16,18,20,22] [--trials 8]
"""

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

from challenge_pages import ROOT, Chromium, PageServer, build_renderer  # noqa: E402


def python_solve(bits):
    nonce = os.urandom(78).hex()[:104]
    t0, c = time.perf_counter(), 0
    while True:
        d = hashlib.sha256(f"{nonce}:{c}".encode()).digest()
        if int.from_bytes(d[:4], "big") >> (32 - bits) == 0:
            return time.perf_counter() - t0, c + 1
        c += 1


def browser_solves(server, bits, trials, main):
    out = []
    b = Chromium()
    try:
        if main:
            b.before_load("window.edgeguardSolver = {main: true};")
        for i in range(trials):
            tag = f"m{bits}-{i}-{main}"
            before = len(server.answers)
            b.wd.get(server.url(d=bits, tag=tag))
            deadline = time.monotonic() + 300
            while len(server.answers) == before and time.monotonic() < deadline:
                time.sleep(0.01)
            arrived, verdict, _ = server.answers[-1]
            assert verdict == "solved work", verdict
            out.append(arrived - server.served[tag])
    finally:
        b.quit()
    return out


def row(name, bits, secs, hashes=None):
    secs = sorted(secs)
    p90 = secs[min(len(secs) - 1, int(0.9 * len(secs)))]
    rate = f"{sum(hashes) / sum(secs) / 1e6:.2f} M/s" if hashes else ""
    return f"| {bits} | {name} | {statistics.median(secs):.3f} | {p90:.3f} | {rate} |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bits", default="12,14,16,18,20,22")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--python-max", type=int, default=20, help="skip the Python solver above these bits")
    args = ap.parse_args()
    bits_list = [int(b) for b in args.bits.split(",")]
    build_renderer()
    subprocess.run(["cargo", "build", "--locked", "--release", "--quiet", "--example", "pow_native"],
                   cwd=ROOT, check=True)
    server = PageServer()
    print(f"cores: {os.cpu_count()}; chromium headless; {args.trials} solves each\n")
    print("| bits | solver | median s | p90 s | rate |")
    print("|---:|---|---:|---:|---:|")
    try:
        for bits in bits_list:
            secs = browser_solves(server, bits, args.trials, False)
            print(row("browser (workers)", bits, secs), flush=True)
            secs = browser_solves(server, bits, args.trials, True)
            print(row("browser (page thread)", bits, secs), flush=True)
            if bits <= args.python_max:
                runs = [python_solve(bits) for _ in range(args.trials)]
                print(row("python hashlib, 1 core", bits, [r[0] for r in runs], [r[1] for r in runs]), flush=True)
            out = subprocess.run([str(ROOT / "target/release/examples/pow_native"), str(bits), str(args.trials)],
                                 capture_output=True, text=True, check=True).stdout.split("\n")
            runs = [tuple(map(float, line.split())) for line in out if line.strip()]
            print(row(f"native Rust, {os.cpu_count()} cores", bits, [r[0] for r in runs], [r[1] for r in runs]),
                  flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
