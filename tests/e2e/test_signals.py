"""Fleet signals in real nginx (issue 33, part 2): nginx loads a signals
snapshot at configure, a rule blocks a scripted client whose fingerprint
the fleet saw from many prefixes that never solved a challenge, while a
real Chromium head (tests/fixtures/real_clients/corpus.jsonl, byte for
byte) whose fingerprint people solve with passes; `$edgeguard_fp_*` carry
the counts. The file replaced is picked up within signals_refresh without
a reload and without a request waiting for the parse; a bad replacement
and a reload with a bad file keep the snapshot in force; a snapshot older
than signals_max_age is not used and is warned of.

The snapshot is written here in the documented format (docs/signals.md);
the keys are what `edgeguard features` extracts from the same heads (the
extraction nginx runs), so nothing here hard-codes a fingerprint.
"""

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import pathlib

import pytest

from conftest import (LIB, METRICS_DICT, ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, get_text, metrics_server,
                      nginx_preamble, replace, wait_until)

EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
BOT_MODEL = ROOT / "models" / "bot.json"
CORPUS = ROOT / "tests" / "fixtures" / "real_clients" / "corpus.jsonl"
REFRESH = 1
MAX_AGE = 3600

# A Python script, as a cron job sends it.
SCRIPT = [("Host", "edge.test"), ("Accept-Encoding", "identity"), ("User-Agent", "Python-urllib/3.11"),
          ("Connection", "close")]
FP = ("key", "requests", "prefixes", "user_agents", "flagged", "solved", "cleared")


def chromium_head():
    """The first navigation of headful Chromium in the real-client corpus:
    its header lines exactly as nginx received them."""
    for line in CORPUS.read_text().splitlines():
        r = json.loads(line)
        if (r["client_name"], r["mode"], r["flow"], r["protocol"]) == ("chromium", "headful", "typed", "HTTP/1.1"):
            return [tuple(h) for h in r["headers"]]
    raise AssertionError("no headful Chromium navigation in the corpus")


def headers_key(lines):
    """The `headers` key nginx computes for a request with these lines:
    `edgeguard features`' ua_family and header_order."""
    req = json.dumps({"method": "GET", "uri": "/", "version": "1.1", "client": "127.0.0.1",
                      "headers": [list(h) for h in lines]})
    names = json.loads(subprocess.run([EDGEGUARD, "features", "--header"], capture_output=True, check=True).stdout)
    cat = json.loads(subprocess.run([EDGEGUARD, "features"], input=req.encode(), capture_output=True,
                                    check=True).stdout)["cat"]
    order = cat[names['cat'].index('header_order')]
    # Without the visit's headers (signals::key::VISIT_CODES), runs collapsed;
    # nginx answering with this key's entry checks this copy.
    kept = []
    for c in order:
        if c not in "kroTLRmzygUiQf" and (not kept or kept[-1] != c):
            kept.append(c)
    return f"{cat[names['cat'].index('ua_family')]}:{''.join(kept)}"


def entry(key, requests, prefixes, challenges, solved, user_agents=1, flagged=0, cleared=0, kind="headers"):
    return {"kind": kind, "key": key, "requests": requests, "prefixes24": prefixes, "prefixes48": 0,
            "user_agents": user_agents, "flagged": flagged, "challenges": challenges, "solved": solved,
            "cleared": cleared}


def snapshot(entries, generated=None, padding=0):
    """The file's bytes; `padding` more entries of keys no request has (a
    big fleet's snapshot takes its time to parse)."""
    entries = list(entries)
    for i in range(padding):
        entries.append(entry(f"other:p{i:o}", 10, 2, 0, 0))  # octal: no code keys leave out
    return json.dumps({"format": "edgeguard-signals", "version": 1,
                       "generated": int(time.time()) if generated is None else generated,
                       "window": 3600, "entries": entries}).encode()


def send(port, lines, target="/", tls=False):
    """Exactly these header lines (nothing added), over TLS with Python's
    own ClientHello when `tls`; (status, headers, seconds)."""
    head = "\r\n".join([f"GET {target} HTTP/1.1", *[f"{n}: {v}" for n, v in lines], "", ""])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        s = raw
        if tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(head.encode("latin-1"))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    took = time.monotonic() - started
    status, *rest = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    headers = {}
    for line in rest:
        n, _, v = line.partition(":")
        headers[n.strip().lower()] = v.strip()
    return int(status.split()[1]), headers, took


def fp(headers):
    return {k: headers.get(f"x-fp-{k.replace('_', '-')}", "") for k in FP}


class Edge:
    def __init__(self, origin):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-signals-"))
        os.chmod(self.dir, 0o755)
        self.browser = chromium_head()
        self.script_key = headers_key(SCRIPT)
        self.browser_key = headers_key(self.browser)
        assert self.script_key != self.browser_key
        self.file = self.dir / "signals.json"
        self.write()
        rules = self.dir / "rules.json"
        rules.write_text(json.dumps({"rules": [
            {"name": "fleet-spread", "tag": "fleet",
             "when": {"signal": {"prefixes": {"min": 50}, "solved": {"max": 0.05}}},
             "action": "block", "status": 429},
        ]}))
        self.port, self.metrics_port, self.tls_port = free_port(), free_port(), free_port()
        names = ["bot", "action", "rule", "tag", "bot_category"] + [f"fp_{k}" for k in FP]
        sets = "\n".join(f'        set $edgeguard_{n} "";' for n in names)
        report = "\n".join(f"            add_header X-Fp-{k.replace('_', '-')} $edgeguard_fp_{k} always;"
                           for k in FP)
        conf = nginx_preamble(workers=2) + f"""
    {METRICS_DICT}
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}",
            lib_path = "{LIB}",
            models = {{ bot = "{BOT_MODEL}" }},
            mode = "log",
            vars = true,
            signals = "{self.file}",
            signals_refresh = {REFRESH},
            signals_max_age = {MAX_AGE},
            rules = {{ "{rules}" }},
            metrics_dict = "edgeguard_metrics",
        }})
        require "resty.edgeguard.tls"
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    server {{
        listen 127.0.0.1:{self.port};
        listen 127.0.0.1:{self.tls_port} ssl;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        set_by_lua_block $edgeguard_ja4 {{ return require("resty.edgeguard.tls").ja4() or "" }}
{sets}
        location / {{
            add_header X-Ja4 $edgeguard_ja4 always;
            add_header X-Action $edgeguard_action always;
            add_header X-Rule $edgeguard_rule always;
{report}
            rewrite_by_lua_block {{ require("resty.edgeguard").access() }}
            proxy_pass http://127.0.0.1:{origin.port};
        }}
    }}
    {metrics_server(self.metrics_port)}
}}
"""
        self.nginx = Nginx(conf)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", self.nginx.prefix / "key.pem",
                        "-out", self.nginx.prefix / "cert.pem"], check=True, capture_output=True, timeout=60)
        self.nginx.start(self.port)

    def write(self, script_solved=0, generated=None, padding=0, raw=None, extra=()):
        data = raw if raw is not None else snapshot([
            entry(self.script_key, 5000, 800, 600, script_solved, flagged=4000),
            entry(self.browser_key, 90000, 20000, 400, 380, user_agents=12, flagged=90, cleared=30000),
            *extra,
        ], generated, padding)
        replace(self.file, data)

    def metric(self, name):
        """A series' value in the Prometheus text (the shared dict's total
        for counters; the answering worker's snapshot for the gauges)."""
        text = get_text(self.metrics_port, "/metrics")[1]
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def log_from(self, offset):
        return self.nginx.error_log[offset:]

    def stop(self):
        self.nginx.stop()
        self.nginx.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def edge(origin):
    e = Edge(origin)
    yield e
    e.stop()


def both_workers(edge, lines, check, what, tls=False):
    """Waits until `check(status, fp)` holds for 20 requests in a row
    (nginx spreads them over both workers, each with its own thread)."""
    def ok():
        for _ in range(20):
            status, h, _ = send(edge.tls_port if tls else edge.port, lines, tls=tls)
            if not check(status, fp(h)):
                return False
        return True
    wait_until(what, ok, timeout=15)


def test_a_spread_script_is_blocked_and_a_browser_people_solve_with_passes(edge):
    status, h, _ = send(edge.port, SCRIPT)
    assert (status, h["x-rule"], h["x-action"]) == (429, "fleet-spread", "block")
    assert fp(h) == {"key": "headers", "requests": "5000", "prefixes": "800", "user_agents": "1",
                     "flagged": "0.8", "solved": "0", "cleared": "0"}
    status, h, _ = send(edge.port, edge.browser)
    assert status == 200 and h.get("x-rule", "") == ""
    assert fp(h) == {"key": "headers", "requests": "90000", "prefixes": "20000", "user_agents": "12",
                     "flagged": "0.001", "solved": "0.95", "cleared": "0.333"}
    # A client the fleet never saw: known to nobody, the variables empty.
    status, h, _ = send(edge.port, [("Host", "edge.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*"),
                                     ("Connection", "close")])
    assert status == 200 and fp(h) == dict.fromkeys(FP, "")
    assert not bad_log_lines(edge.nginx.error_log)


def test_a_new_file_is_picked_up_without_a_reload_or_a_stalled_request(edge):
    # Padded to 300 000 entries: seconds of parsing, on the refresh thread.
    edge.write(script_solved=590, padding=300_000)
    slowest, stop = [0.0], threading.Event()

    def traffic():
        while not stop.is_set():
            slowest[0] = max(slowest[0], send(edge.port, edge.browser)[2])

    t = threading.Thread(target=traffic)
    t.start()
    try:
        both_workers(edge, SCRIPT, lambda s, f: s == 200 and f["solved"] == "0.983", "the new counts")
    finally:
        stop.set()
        t.join()
    loaded = [line for line in edge.nginx.error_log.splitlines() if "300002 entries loaded" in line]
    assert len(loaded) == 2, loaded  # one per worker
    print(f"slowest request while the workers loaded 300 002 entries: {slowest[0] * 1000:.1f} ms")
    assert slowest[0] < 0.5, slowest[0]
    assert not bad_log_lines(edge.nginx.error_log)


def test_a_bad_replacement_keeps_the_snapshot_in_force(edge):
    edge.write(script_solved=0)
    both_workers(edge, SCRIPT, lambda s, f: s == 429, "the spread counts back")
    offset = len(edge.nginx.error_log)
    edge.write(raw=snapshot([entry(edge.script_key, 10, 20, 0, 0)]))  # 20 prefixes of 10 requests
    refused = wait_until("the refusal", lambda: [
        line for line in edge.log_from(offset).splitlines() if "[error]" in line and "signals" in line])
    assert f"{edge.file}: entries[0].prefixes24: 20 is more than the entry's 10 requests" in refused[0], refused
    assert "the snapshot in force stays" in refused[0]
    time.sleep(REFRESH * 2)
    for _ in range(10):
        assert send(edge.port, SCRIPT)[0] == 429
    # Counted: every worker's refresh loads and refusals (the metrics
    # timer moves them into the shared dict once a second).
    wait_until("the counted refusals", lambda: (edge.metric('edgeguard_signals_loads_total{result="failed"}') or 0) >= 2)
    assert edge.metric('edgeguard_signals_loads_total{result="ok"}') >= 4
    assert edge.metric("edgeguard_signals_entries") == 2
    assert 0 <= edge.metric("edgeguard_signals_age_seconds") < 60


def test_a_reload_with_a_bad_file_keeps_the_old_state(edge):
    edge.write(raw=b'{"format": "edgeguard-signals", "version": 1, "generated": 1, "window": 0, "entries": []}')
    offset = len(edge.nginx.error_log)
    os.kill(edge.nginx.proc.pid, signal.SIGHUP)
    line = wait_until("the refused reload", lambda: next(
        (l for l in edge.log_from(offset).splitlines() if "init_by_lua" in l and "signals.json" in l), None))
    assert f"signals: {edge.file}: window: must be at least 1 second" in line, line
    for _ in range(10):
        status, h, _ = send(edge.port, SCRIPT)
        assert (status, fp(h)["prefixes"]) == (429, "800")


def test_a_snapshot_older_than_max_age_is_not_used(edge):
    edge.write(script_solved=0)
    offset = len(edge.nginx.error_log)
    edge.write(generated=int(time.time()) - MAX_AGE - 600)
    both_workers(edge, SCRIPT, lambda s, f: s == 200 and f == dict.fromkeys(FP, ""), "the stale snapshot unused")
    warned = [line for line in edge.log_from(offset).splitlines()
              if "[warn]" in line and "older than signals_max_age" in line]
    assert warned, edge.log_from(offset)
    # A fresh one again: used again.
    edge.write(script_solved=0)
    both_workers(edge, SCRIPT, lambda s, f: s == 429, "the fresh snapshot")


def test_over_tls_the_connections_ja4_answers_first(edge):
    edge.write(script_solved=0)
    both_workers(edge, SCRIPT, lambda s, f: s == 429, "the spread counts")
    status, h, _ = send(edge.tls_port, SCRIPT, tls=True)
    ja4 = h["x-ja4"]
    assert len(ja4) == 36, h
    # The fleet does not know Python's TLS stack: the headers key answers.
    assert (status, fp(h)["key"], fp(h)["prefixes"]) == (429, "headers", "800")
    # Now it does, from one network: the JA4 answers, and a rule on the
    # headers key (`any`) still holds for the headers key's counts.
    edge.write(script_solved=0, extra=[entry(ja4, 40, 1, 0, 0, kind="ja4")])
    both_workers(edge, SCRIPT, lambda s, f: f["key"] == "ja4", "the JA4 entry", tls=True)
    status, h, _ = send(edge.tls_port, SCRIPT, tls=True)
    assert (status, fp(h)["requests"], fp(h)["prefixes"], h["x-rule"]) == (429, "40", "1", "fleet-spread")
    # Plain HTTP has no JA4: the headers key answers.
    assert fp(send(edge.port, SCRIPT)[1])["key"] == "headers"
