#!/usr/bin/env python3
"""nginx under stress (issue 6): reloads under load, worker RSS over a million
requests, a worker killed mid-load, and the client memory (issue 39) under
ten million clients it never saw before. `make stress` runs it.

One nginx (the shipped configuration's edgeguard blocks, block mode, both
models) proxies to an origin server block in the same nginx that echoes the
request head it received, so a probe request shows what an origin sees: which
internal headers survived and the X-Bot-Score it was sent. wrk drives
tests/stress/mix.lua (browser-like and bot-like requests with internal
headers) and counts every response by class.

The client-memory phase runs a second nginx whose every request comes
from a new address behind a trusted front (tests/stress/clients.lua sets
X-Forwarded-For; realip and `trusted_proxies` read it), into a small
memory (`--client-memory`, 16m), so the table fills and then evicts for
most of the run: the memory's size stays what it was made with, its
client count stops at its slots, and the workers' RSS stops growing.

    scripts/stress.py [--reloads 50] [--requests 1000000] [--clients 10000000]
                      [--client-memory 16m] [--json FILE]

Exit status 0 only if every check held; a table of results is printed.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import CHROME, LIB, MODULES, Nginx, free_port, replace, send_exact, wait_until  # noqa: E402

MIX = ROOT / "tests" / "stress" / "mix.lua"
CLIENTS = ROOT / "tests" / "stress" / "clients.lua"
SHIPPED_LIST = ROOT / "nginx-conf" / "internal-headers.txt"
MODELS = {"bot": ROOT / "models" / "bot.json", "spoof": ROOT / "models" / "spoof.json"}
WRK_THREADS, WRK_CONNECTIONS = 2, 32

# The probe: the README's Chrome request (it passes: bot=0.00057) with two
# marker headers; list version A strips x-stress-a, version B x-stress-b.
PROBE = CHROME + [
    ("X-Internal-User-Id", "42"),
    ("X-Stress-A", "1"),
    ("X-Stress-B", "1"),
]


def top():
    """Both configurations' start, up to inside http{}: two workers, the
    modules, the temp paths in the prefix, the Lua path."""
    return f"""
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes 2;
error_log logs/error.log notice;
pid logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    lua_package_path "{ROOT}/lua/?.lua;;";"""


def conf(port, origin_port, d, edgeguard=True):
    """The shipped nginx.conf's edgeguard blocks with test paths and ports;
    without them (edgeguard=False) for the control run."""
    init = f"""
    init_by_lua_block {{
        local edgeguard = require "resty.edgeguard"
        assert(edgeguard.configure{{
            internal_headers = "{d}/internal-headers.txt",
            models = {{ bot = "{d}/bot.json", spoof = "{d}/spoof.json" }},
            mode = "block",
            lib_path = "{LIB}",
        }})
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}""" if edgeguard else ""
    access = 'rewrite_by_lua_block { require("resty.edgeguard").access() }' if edgeguard else ""
    return f"""{top()}{init}
    upstream origin {{
        server 127.0.0.1:{origin_port};
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        underscores_in_headers on;
        location / {{
            {access}
            add_header X-Edge-Pid $pid always;
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{origin_port};
        location / {{
            default_type text/plain;
            content_by_lua_block {{ ngx.print(ngx.req.raw_header()) }}
        }}
    }}
}}
"""


def clients_conf(port, d, memory):
    """The client-memory phase's nginx: behind a trusted front on
    127.0.0.1 (realip and `trusted_proxies`), the memory of `memory`
    bytes, log mode, the metrics at /edgeguard/metrics; a page of its own
    (no origin: the memory is what is measured)."""
    return f"""{top()}
    lua_shared_dict edgeguard_metrics 1m;
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{d}/internal-headers.txt",
            models = {{ bot = "{d}/bot.json" }},
            mode = "log",
            lib_path = "{LIB}",
            metrics_dict = "edgeguard_metrics",
            trusted_proxies = {{ "127.0.0.1/32" }},
            proxy_profile = "nginx",
            client_memory = "{memory}",
        }})
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    server {{
        listen 127.0.0.1:{port};
        set_real_ip_from 127.0.0.1/32;
        real_ip_header X-Forwarded-For;
        set $edgeguard_request_id $request_id;
        location / {{
            rewrite_by_lua_block {{ require("resty.edgeguard").access() }}
            content_by_lua_block {{ ngx.print("ok") }}
        }}
        location = /edgeguard/metrics {{
            content_by_lua_block {{ ngx.print(require("resty.edgeguard").metrics()) }}
        }}
    }}
}}
"""


class Edge:
    def __init__(self, edgeguard=True, client_memory=None):
        self.edgeguard = edgeguard
        self.state = {"list": "A", "model": "bot"}
        self.port, self.origin_port = free_port(), free_port()
        self.nginx = Nginx("")
        self.dir = self.nginx.prefix / "conf"
        self.dir.mkdir()
        self.lists = {
            "A": SHIPPED_LIST.read_bytes() + b"\nx-stress-a\n",
            "B": SHIPPED_LIST.read_bytes() + b"\nx-stress-b\n",
        }
        self.models = {name: path.read_bytes() for name, path in MODELS.items()}
        replace(self.dir / "internal-headers.txt", self.lists["A"])
        replace(self.dir / "bot.json", self.models["bot"])
        replace(self.dir / "spoof.json", self.models["spoof"])
        text = (clients_conf(self.port, self.dir, client_memory) if client_memory
                else conf(self.port, self.origin_port, self.dir, edgeguard))
        (self.nginx.prefix / "nginx.conf").write_text(text)
        self.nginx.start(self.port)

    @property
    def master(self):
        return self.nginx.proc.pid

    def workers(self):
        children = pathlib.Path(f"/proc/{self.master}/task/{self.master}/children").read_text()
        pids = set()
        for pid in children.split():
            try:
                if "worker process" in pathlib.Path(f"/proc/{pid}/cmdline").read_text():
                    pids.add(int(pid))
            except OSError:
                pass
        return pids

    def log_size(self):
        return len(self.nginx.error_log)

    def log_since(self, offset):
        return self.nginx.error_log[offset:]

    def probe(self):
        """(status, edge worker pid, header names the origin saw, X-Bot-Score)."""
        status, headers, body = send_exact(self.port, "GET", "/probe", PROBE)
        seen = {}
        for line in body.decode("latin-1").split("\r\n")[1:]:
            name, sep, value = line.partition(":")
            if sep:
                seen[name.strip().lower()] = value.strip()
        return status, int(headers.get("x-edge-pid", 0)), seen, seen.get("x-bot-score")

    def stop(self):
        self.nginx.stop()


class Load:
    """wrk in the background against the edge; stats() after stop()."""

    def __init__(self, port, seconds=3600, close=False, script=MIX, arg=None):
        self.proc = subprocess.Popen(
            ["wrk", f"-t{WRK_THREADS}", f"-c{WRK_CONNECTIONS}", f"-d{seconds}s", "-s", str(script),
             f"http://127.0.0.1:{port}/", "--", arg if arg is not None else "close" if close else "keep-alive"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.started = time.monotonic()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # wrk prints its summary and calls done()
        out = self.proc.communicate(timeout=60)[0]
        self.seconds = time.monotonic() - self.started
        line = next((l for l in out.splitlines() if l.startswith("STRESS ")), None)
        if line is None:
            raise AssertionError(f"wrk printed no STRESS line:\n{out}")
        self.stats = {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
        self.stats["socket_errors"] = sum(self.stats[k] for k in ("connect", "read", "write", "timeout"))
        return self.stats


def rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


# ------------------------------------------------------------------ reloads

def reload_plan(n):
    """n reloads: half swap a good version in (list A<->B, model bot<->spoof
    as "bot"), a fifth swap a broken file in (truncated model, malformed
    list, alternately), the rest change nothing."""
    plan = []
    for i in range(n):
        k = i % 10
        if k < 5:
            plan.append("swap-list" if i % 2 == 0 else "swap-model")
        elif k < 7:
            plan.append("broken-list" if (i // 10) % 2 == 0 else "broken-model")
        else:
            plan.append("same")
    return plan


def run_reloads(edge, plan, close, key, results):
    """HUPs the master once per entry of `plan` under wrk load; checks after
    each that the expected version is in force. Returns whether no request
    failed (edge.edgeguard False: the control run, HUPs only)."""
    state = edge.state  # what is on disk and in force; carried from run to run
    probe = edge.probe()
    if edge.edgeguard:
        assert expected(probe, state, "same", {}), probe
    score_of = {state["model"]: probe[3]}
    counts = {k: 0 for k in ("swap-list", "swap-model", "broken-list", "broken-model", "same")}
    took = []
    load = Load(edge.port, close=close)
    try:
        time.sleep(2)  # traffic flowing before the first HUP
        for i, kind in enumerate(plan):
            counts[kind] += 1
            before_workers, log_at = edge.workers(), edge.log_size()
            if kind == "swap-list":
                state["list"] = "B" if state["list"] == "A" else "A"
                replace(edge.dir / "internal-headers.txt", edge.lists[state["list"]])
            elif kind == "swap-model":
                state["model"] = "spoof" if state["model"] == "bot" else "bot"
                replace(edge.dir / "bot.json", edge.models[state["model"]])
            elif kind == "broken-list":
                replace(edge.dir / "internal-headers.txt",
                        edge.lists[state["list"]] + b"x bad header name\n")
            elif kind == "broken-model":
                good = edge.models[state["model"]]
                replace(edge.dir / "bot.json", good[: len(good) // 2])
            t0 = time.monotonic()
            os.kill(edge.master, signal.SIGHUP)

            if kind.startswith("broken"):
                # init_by_lua fails in the master: nginx refuses the new
                # configuration and the old workers keep serving, with the
                # list and models they loaded.
                name = r"internal-headers\.txt:\d+" if kind == "broken-list" else r"bot\.json: \S"
                line = wait_until(f"the refused {kind[7:]} in error.log", lambda: next(
                    (l for l in edge.log_since(log_at).splitlines()
                     if re.search(name, l) and "init_by_lua" in l), None))
                time.sleep(0.5)
                assert edge.workers() == before_workers, "workers replaced after a refused reload"
                results.setdefault(f"broken_{kind[7:]}_line", line.strip()[:300])
            else:
                wait_until("new workers", lambda: (w := edge.workers()) and not (w & before_workers)
                           and len(w) == 2)
            took.append(time.monotonic() - t0)

            status, _, seen, score = wait_until(f"reload {i} ({kind}) in force", lambda: (
                p := edge.probe()) and (expected(p, state, kind, score_of) if edge.edgeguard
                                        else p[0] == 200) and p)
            if kind == "swap-model" and state["model"] not in score_of:
                score_of[state["model"]] = score
            if kind == "broken-model":
                results["broken_model_score_header"] = score
            if kind.startswith("broken"):
                # Put the good file back; the next HUP loads it.
                replace(edge.dir / "internal-headers.txt", edge.lists[state["list"]])
                replace(edge.dir / "bot.json", edge.models[state["model"]])
    finally:
        stats = load.stop()
    if counts["swap-model"]:
        assert len(set(score_of.values())) == 2, f"a model swap did not change the score: {score_of}"
    results[key] = {"reloads": len(plan), "kinds": {k: v for k, v in counts.items() if v}, "wrk": stats,
                    "seconds": round(load.seconds, 1), "slowest_reload_s": round(max(took), 2),
                    "scores": score_of}
    return stats["socket_errors"] == 0 and stats["other"] == 0 and stats["status"] == stats["blocked"]


def expected(probe, state, kind, score_of):
    status, _, seen, score = probe
    if status != 200:
        return False
    stripped = "x-stress-a" if state["list"] == "A" else "x-stress-b"
    kept = "x-stress-b" if state["list"] == "A" else "x-stress-a"
    if stripped in seen or kept not in seen or "x-internal-user-id" in seen:
        return False
    if score is None:
        return False
    bot = score.split(";")[0]
    known = score_of.get(state["model"])
    if known is not None:
        return bot == known.split(";")[0]
    # A newly swapped-in model: its score differs from every one seen before.
    return all(bot != s.split(";")[0] for s in score_of.values())


# ---------------------------------------------------------------- RSS / leaks

def run_leak(edge, total, results):
    workers = sorted(edge.workers())
    samples, done = [], 0
    warmup = total // 10
    while done < total:
        load = Load(edge.port, seconds=3)
        load.proc.wait()
        stats = load.stop()
        assert stats["socket_errors"] == 0 and stats["other"] == 0, stats
        done += stats["requests"]
        rss = sum(rss_kib(p) for p in workers)
        samples.append((done, rss))
        print(f"  {done:>9} requests  worker RSS {rss} KiB  ({stats['requests'] / load.seconds:.0f} req/s)",
              flush=True)
    assert sorted(edge.workers()) == workers, "a worker was replaced during the leak run"
    base = next((rss for n, rss in samples if n >= warmup), samples[0][1])
    base_at = next((n for n, rss in samples if n >= warmup), samples[0][0])
    growth = (samples[-1][1] - base) / base * 100
    results["leak"] = {"requests": done, "warmup_requests": base_at, "rss_kib_after_warmup": base,
                       "rss_kib_end": samples[-1][1], "rss_kib_max": max(r for _, r in samples),
                       "growth_pct": round(growth, 3), "samples": samples}
    return growth < 1.0


# ------------------------------------------------------------ client memory

def gauges(port):
    """The client memory's gauges from the metrics text."""
    _, _, body = send_exact(port, "GET", "/edgeguard/metrics", [("Host", "edge.test")])
    text = body.decode()
    out = {}
    for name in ("bytes", "clients", "evictions_total"):
        m = re.search(rf"^edgeguard_client_memory_{name} (\d+)$", text, re.M)
        if not m:
            raise AssertionError(f"no edgeguard_client_memory_{name} in the metrics:\n{text[:2000]}")
        out[name] = int(m.group(1))
    return out


def run_clients(edge, total, results):
    """`total` requests, each from a client never seen before; samples the
    gauges and the workers' RSS every few seconds."""
    workers = sorted(edge.workers())
    samples, done, last = [], 0, 0
    while done < total:
        load = Load(edge.port, seconds=10, script=CLIENTS, arg=str(last))
        load.proc.wait()
        stats = load.stop()
        assert stats["socket_errors"] == 0 and stats["other"] == 0, stats
        done, last = done + stats["requests"], stats["last"]
        g = gauges(edge.port)
        rss = sum(rss_kib(p) for p in workers)
        samples.append((done, rss, g["bytes"], g["clients"], g["evictions_total"]))
        print(f"  {done:>9} clients  worker RSS {rss} KiB  memory {g['bytes']} B, {g['clients']} records, "
              f"{g['evictions_total']} evictions  ({stats['requests'] / load.seconds:.0f} req/s)", flush=True)
    assert sorted(edge.workers()) == workers, "a worker was replaced during the client-memory run"
    # A worker's RSS counts the pages of the shared table it touched: at
    # most the table, per worker. Records of one /24 and one head share a
    # bucket, so the table fills as new networks come, not new hosts; past
    # half the run the RSS must be flat.
    first, half, end = samples[0], next(smp for smp in samples if smp[0] >= done / 2), samples[-1]
    table_kib = max(smp[2] for smp in samples) // 1024
    r = {"clients": done, "samples": samples, "memory_bytes": sorted({smp[2] for smp in samples}),
         "records_max": max(smp[3] for smp in samples), "evictions": end[4],
         "rss_kib_first": first[1], "rss_kib_half": half[1], "rss_kib_end": end[1],
         "rss_kib_max": max(smp[1] for smp in samples), "table_kib_per_worker": table_kib,
         "growth_kib": end[1] - first[1],
         "growth_second_half_pct": round((end[1] - half[1]) / half[1] * 100, 3)}
    results["clients"] = r
    return (len(r["memory_bytes"]) == 1 and r["growth_kib"] <= len(workers) * table_kib + 4096
            and r["growth_second_half_pct"] < 1.0 and r["evictions"] + r["records_max"] >= done)


# ------------------------------------------------------------- worker death

def run_kill(edge, results):
    _, _, seen0, score0 = edge.probe()
    load = Load(edge.port)
    try:
        time.sleep(3)
        before = edge.workers()
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        new = wait_until("a respawned worker", lambda: (w := edge.workers()) - before and len(w) == 2
                         and (w - before))
        (respawned,) = new
        # Probe until the respawned worker itself answers.
        served = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and served < 20:
            status, pid, seen, score = edge.probe()
            if pid == respawned:
                served += 1
                assert status == 200, status
                assert seen == seen0, (seen, seen0)
                assert score == score0, (score, score0)
        assert served, "the respawned worker answered no probe"
        time.sleep(3)
    finally:
        stats = load.stop()
    results["kill"] = {"killed": victim, "respawned": respawned, "probes_by_respawned": served,
                       "score": score0, "wrk": stats}
    # Requests in flight on the killed worker are lost with it; nothing else may fail.
    return stats["other"] == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reloads", type=int, default=50)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--clients", type=int, default=10_000_000,
                    help="requests of the client-memory phase, each from a new client (0: skip it)")
    ap.add_argument("--client-memory", default="16m", help="that phase's client_memory")
    ap.add_argument("--clients-only", action="store_true", help="run the client-memory phase alone")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk not found (apt-get install wrk)")
    if not LIB.exists():
        sys.exit(f"{LIB} missing: run make build")

    results, held = {}, {}
    if args.clients_only:
        clients_phase(args, results, held)
        return report([clients_row(args, results, held)], results, args)
    control = Edge(edgeguard=False)
    try:
        print(f"== control: {args.reloads} reloads of nginx without edgeguard, keep-alive load", flush=True)
        held["control"] = run_reloads(control, ["same"] * args.reloads, False, "control", results)
    finally:
        control.stop()
        control.nginx.cleanup()
    edge = Edge()
    try:
        print(f"nginx master {edge.master}, workers {sorted(edge.workers())}, port {edge.port}", flush=True)
        for close in (False, True):
            mode = "close" if close else "keep-alive"
            print(f"== {args.reloads} reloads under {mode} load", flush=True)
            held[f"reload-{mode}"] = run_reloads(edge, reload_plan(args.reloads), close,
                                                 f"reload-{mode}", results)
        # On keep-alive connections a worker that exits after a reload closes
        # each connection after its current response; wrk, which does not
        # retry, counts the request it already sent there as a read error.
        # The control run shows nginx alone does the same, so only other
        # failures count here; with Connection: close nothing may fail.
        w = results["reload-keep-alive"]["wrk"]
        held["reload-keep-alive"] = (w["other"] == 0 and w["status"] == w["blocked"]
                                     and w["connect"] + w["write"] + w["timeout"] == 0)
        print(f"== worker RSS over {args.requests} requests", flush=True)
        held["leak"] = run_leak(edge, args.requests, results)
        print("== kill -9 a worker under load", flush=True)
        held["kill"] = run_kill(edge, results)
    finally:
        edge.stop()
        errors = [l for l in edge.nginx.error_log.splitlines() if "[emerg]" in l or "[crit]" in l]
        results["log_emerg_crit"] = errors[:5]
        if os.environ.get("STRESS_KEEP"):
            print(f"kept {edge.nginx.prefix}")
        else:
            edge.nginx.cleanup()

    if args.clients:
        clients_phase(args, results, held)

    l, k = results["leak"], results["kill"]

    def reload_row(key):
        r = results[key]
        w = r["wrk"]
        return (f"{r['reloads']} HUPs {r['kinds']}; {w['requests']} requests in {r['seconds']} s: "
                f"{w['ok']} 2xx/3xx, {w['blocked']} 403, {w['other']} other, "
                f"{w['socket_errors']} socket errors (read {w['read']}, connect {w['connect']}, "
                f"write {w['write']}, timeout {w['timeout']}); slowest reload {r['slowest_reload_s']} s")

    def planned(kind, row):
        """The row, or an info line when --reloads was too few for `kind`."""
        if kind in results["reload-close"]["kinds"]:
            return row
        return (row[0], None, f"not run: no {kind} reload among {results['reload-close']['reloads']}")

    rows = [
        ("control: nginx alone, keep-alive", None, reload_row("control")),
        ("reloads, keep-alive", held["reload-keep-alive"],
         reload_row("reload-keep-alive") + "; read errors are keep-alive closes, as in the control"),
        ("reloads, Connection: close", held["reload-close"], reload_row("reload-close")),
        ("model swap takes effect", len(set(results["reload-close"]["scores"].values())) == 2,
         f"probe X-Bot-Score per bot model file: {results['reload-close']['scores']}"),
        planned("broken-list", ("broken list refused", "broken_list_line" in results,
                                results.get("broken_list_line", "-"))),
        planned("broken-model", ("broken model refused, old one scores", "broken_model_line" in results and
                                 results.get("broken_model_score_header") is not None,
                                 f"{results.get('broken_model_line', '-')}; then X-Bot-Score: "
                                 f"{results.get('broken_model_score_header')} (the model in force)")),
        ("worker RSS", held["leak"],
         f"{l['requests']} requests; {l['rss_kib_after_warmup']} KiB after {l['warmup_requests']} -> "
         f"{l['rss_kib_end']} KiB ({l['growth_pct']:+.3f} %), max {l['rss_kib_max']} KiB"),
        ("worker killed", held["kill"],
         f"pid {k['killed']} -> {k['respawned']}, {k['probes_by_respawned']} probes served by it, same "
         f"stripping and score ({k['score']}); wrk: {k['wrk']['other']} other statuses, "
         f"{k['wrk']['socket_errors']} socket errors (in flight on the killed worker)"),
    ]
    if args.clients:
        rows.append(clients_row(args, results, held))
    report(rows, results, args)


def clients_phase(args, results, held):
    mem = Edge(client_memory=args.client_memory)
    try:
        print(f"== {args.clients} clients never seen before into a {args.client_memory} client memory",
              flush=True)
        held["clients"] = run_clients(mem, args.clients, results)
    finally:
        mem.stop()
        errors = [l for l in mem.nginx.error_log.splitlines() if "[emerg]" in l or "[crit]" in l]
        results["log_emerg_crit"] = results.get("log_emerg_crit", []) + errors[:5]
        mem.nginx.cleanup()


def clients_row(args, results, held):
    c = results["clients"]
    return ("client memory, new clients", held["clients"],
            f"{c['clients']} clients into {args.client_memory}: memory {c['memory_bytes']} B throughout, "
            f"{c['records_max']} records at most, {c['evictions']} evictions; worker RSS "
            f"{c['rss_kib_first']} -> {c['rss_kib_half']} (half) -> {c['rss_kib_end']} KiB: "
            f"+{c['growth_kib']} KiB (table {c['table_kib_per_worker']} KiB per worker), "
            f"{c['growth_second_half_pct']:+.3f} % over the second half")


def report(rows, results, args):
    print()
    for what, ok, detail in rows:
        print(f"{'info' if ok is None else 'PASS' if ok else 'FAIL'}  {what:<34} {detail}")
    if results["log_emerg_crit"]:
        print("error.log [emerg]/[crit]:", *results["log_emerg_crit"], sep="\n  ")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    sys.exit(0 if all(ok is not False for _, ok, _ in rows) and not results["log_emerg_crit"] else 1)


if __name__ == "__main__":
    main()
