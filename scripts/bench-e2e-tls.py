#!/usr/bin/env python3
"""`make bench-e2e-tls`: what TLS fingerprinting costs inside nginx, per
handshake and per request.

The harness of scripts/bench-e2e.py (its nginx and measuring code, the same
origin and request heads) with an HTTPS edge (scripts/bench-e2e/edge-tls.conf,
the shipped schema-3 models, no session cache) in three configurations:

    bare     TLS proxy, no Lua
    rust     edgeguard's Rust engine, no ssl_client_hello_by_lua: no TLS facts
    ja4      the same plus ssl_client_hello_by_lua_block: a JA4 per
             handshake, the TLS facts read and scored on every request

each under two loads from wrk over https:

    keep-alive   connections stay open: one handshake per connection, so
                 `ja4 - rust` is the added cost per request (reading the
                 fingerprint, the TLS features, their categorical hashes)
    new-conn     `Connection: close` on every request (wrk reconnects): one
                 full TLS handshake per request, so `ja4 - rust` is the cost
                 per handshake (the client-hello phase, JA4) plus the per-request one

Rounds interleave the configurations (order rotated per round) as
bench-e2e.py does; the figure is edge-worker CPU per request from
/proc/<pid>/stat. Writes <out>/e2e-tls.md and e2e-tls.json, prints the table.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import datetime
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_e2e", ROOT / "scripts" / "bench-e2e.py")
be = importlib.util.module_from_spec(spec)
spec.loader.exec_module(be)

CONFIGS = {"bare": "TLS proxy (no Lua)", "rust": "Rust engine, no TLS facts", "ja4": "Rust engine + JA4 (TLS facts)"}
LOADS = ("keep-alive", "new-conn")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=be.env_default("BENCH_ROUNDS", 3))
    p.add_argument("--duration", type=float, default=be.env_default("BENCH_DURATION", 8.0, float))
    p.add_argument("--warmup", type=float, default=be.env_default("BENCH_WARMUP", 2.0, float))
    p.add_argument("--connections", type=int, default=be.env_default("BENCH_CONNECTIONS", 16))
    p.add_argument("--out-dir", default=str(ROOT / "bench-results"))
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.duration <= 0 or args.connections < 1:
        p.error("--rounds, --duration and --connections must be positive")
    return args


def edge_conf(config, port, origin_port, cert, key):
    lines = []
    for line in (be.HERE / "edge-tls.conf").read_text().splitlines():
        if line.rstrip().endswith("#ja4"):
            if config != "ja4":
                continue
            line = line.rstrip()[: -len("#ja4")].rstrip()
        lines.append(line)
    return be.render("\n".join(lines), {
        "PORT": str(port), "ORIGIN_PORT": str(origin_port), "AFFINITY": "", "ROOT": str(ROOT),
        "LIB": str(be.LIB), "CERT": str(cert), "KEY": str(key),
    }, edgeguard=config != "bare")


def check(port, heads):
    """Every head answers 200 over TLS, with both models' scores upstream
    (for edgeguard's configurations)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    out = []
    for head in heads:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="shop.example") as s:
                s.sendall(head)
                resp = be.http.client.HTTPResponse(s)
                resp.begin()
                resp.read()
                out.append((resp.status, resp.getheader("X-Origin-Score") or ""))
    return out


def measure(edge, args, load):
    pid = edge.worker
    cpu0, _ = be.worker_cpu(pid)
    w = be.run_wrk(edge.port, args.duration, args.connections, 1, None, scheme="https", close=load == "new-conn")
    cpu1, _ = be.worker_cpu(pid)
    if edge.find_worker() != pid:
        raise RuntimeError(f"{edge.name}: the nginx worker changed during the run:\n{edge.failure()}")
    n = w["requests"]
    if n <= 0:
        raise RuntimeError(f"{edge.name}: wrk completed no request: {w}")
    seconds = w["duration_us"] / 1e6
    return {"config": edge.name, "load": load, "requests": n, "rps": n / seconds,
            "p99_ms": w["latency_us"]["percentiles"]["99"] / 1000, "errors": w["errors"],
            "cpu_us_per_req": (cpu1 - cpu0) / n * 1e6}


def summarize(runs):
    out = {}
    rounds = sorted({r["round"] for r in runs})
    cell = {(r["round"], r["config"], r["load"]): r for r in runs}
    for load in LOADS:
        for c in CONFIGS:
            rs = [r for r in runs if r["config"] == c and r["load"] == load]
            out[(load, c)] = {k: be.spread([r[k] for r in rs]) for k in ("rps", "p99_ms", "cpu_us_per_req")}
        for c, base in (("rust", "bare"), ("ja4", "bare"), ("ja4", "rust")):
            out[(load, c)]["over_" + base] = be.spread(
                [cell[(k, c, load)]["cpu_us_per_req"] - cell[(k, base, load)]["cpu_us_per_req"] for k in rounds])
    return out


def table(summary):
    rows = ["| load | configuration | requests/s | P99 ms | worker CPU µs/request | added over the TLS proxy "
            "µs/request | JA4 + TLS facts over no TLS facts µs/request |", "|" + "---|" * 7]
    for load in LOADS:
        for c, label in CONFIGS.items():
            s = summary[(load, c)]
            over_bare = be.fmt(s["over_bare"], 1) if "over_bare" in s else "—"
            over_rust = be.fmt(s["over_rust"], 1) if "over_rust" in s else "—"
            rows.append(f"| {load} | {label} | {be.fmt(s['rps'], 0)} | {be.fmt(s['p99_ms'], 3)} "
                        f"| {be.fmt(s['cpu_us_per_req'], 1)} | {over_bare} | {over_rust} |")
    return "\n".join(rows)


def main(argv):
    args = parse_args(argv)
    for tool in (be.NGINX, be.WRK, "openssl"):
        if not shutil.which(tool):
            sys.exit(f"bench-e2e-tls: {tool} not found (make bench-deps installs wrk)")
    if not be.LIB.exists():
        sys.exit(f"bench-e2e-tls: {be.LIB} not found: run `make build` first")
    heads = be.load_requests(be.HERE / "requests.http")
    base = tempfile.mkdtemp(prefix="edgeguard-bench-e2e-tls-")
    os.chmod(base, 0o755)
    cert, key = pathlib.Path(base) / "cert.pem", pathlib.Path(base) / "key.pem"
    # P-256 ECDSA, what a site would use; TLS 1.3 with X25519 key shares.
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=shop.example", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=60)
    os.chmod(key, 0o644)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_start = os.getloadavg()[0]
    started = time.monotonic()
    servers, runs = [], []
    try:
        origin_port = be.free_port()
        origin = be.Nginx("origin", be.render((be.HERE / "origin.conf").read_text(),
                                              {"PORT": str(origin_port), "AFFINITY": ""}, edgeguard=False),
                          origin_port, base)
        servers.append(origin)
        edges = {}
        for c in CONFIGS:
            port = be.free_port()
            edges[c] = be.Nginx(c, edge_conf(c, port, origin_port, cert, key), port, base)
            servers.append(edges[c])
        for s in servers:
            if not s.wait_ready():
                raise RuntimeError(f"nginx '{s.name}' did not start:\n{s.failure()}")
        for c, edge in edges.items():
            got = check(edge.port, heads)
            bad = [i for i, (status, score) in enumerate(got, 1)
                   if status != 200 or (c != "bare" and "bot=" not in score)]
            if bad:
                raise RuntimeError(f"configuration '{c}': requests {bad} not answered as expected: {got}")
        print(f"bench-e2e-tls: {len(edges)} configurations checked on {len(heads)} heads over TLS", file=sys.stderr)
        for c, edge in edges.items():
            for load in LOADS:
                be.run_wrk(edge.port, args.warmup, args.connections, 1, None, scheme="https",
                           close=load == "new-conn")
        names = list(CONFIGS)
        for k in range(args.rounds):
            order = names[k % len(names):] + names[:k % len(names)]
            for c in order:
                for load in LOADS:
                    r = measure(edges[c], args, load)
                    r["round"] = k + 1
                    runs.append(r)
                    print(f"bench-e2e-tls: round {k + 1}/{args.rounds} {c:5s} {load:10s} {r['rps']:8.0f} req/s  "
                          f"CPU {r['cpu_us_per_req']:7.1f} µs/req  errors {sum(r['errors'].values())}",
                          file=sys.stderr)
        problems = {c: e.bad_log_lines() for c, e in edges.items()}
    finally:
        for s in servers:
            s.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    summary = summarize(runs)
    notes = be.machine_notes(False, load_start, os.getloadavg()[0])
    for c, lines in problems.items():
        if lines:
            notes.append(f"{c}: {len(lines)} error-log lines at error level or above, first: `{lines[0][:200]}`")
    errors = sum(sum(r["errors"].values()) for r in runs)
    if errors:
        notes.append(f"wrk counted {errors} failed requests: see e2e-tls.json")
    text = table(summary)
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "e2e-tls.md").write_text("\n".join([
        "# TLS fingerprints under nginx", "",
        f"`make bench-e2e-tls` (`python3 scripts/bench-e2e-tls.py {' '.join(argv)}`), {when}, "
        f"{time.monotonic() - started:.0f} s; `wrk -t1 -c{args.connections} -d{args.duration:g}s` over https, "
        f"{args.rounds} rounds. Cells: median (min–max) over the rounds; differences paired within a round.", "",
        text, "", "## Machine", ""] + [f"- {n}" for n in notes] + [""]))
    (out / "e2e-tls.json").write_text(json.dumps({
        "date": when, "args": vars(args), "notes": notes, "runs": runs,
        "summary": {f"{load}/{c}": v for (load, c), v in summary.items()}}, indent=1) + "\n")
    print(text)
    for n in notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
