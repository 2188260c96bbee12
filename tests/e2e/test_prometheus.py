"""A real Prometheus (Debian's `prometheus`) scrapes nginx's /edgeguard/metrics
every second on loopback; after labelled traffic from the fixture, its HTTP API
(/api/v1/query) holds the values that traffic implies: the blocked count from
the models' thresholds and official CatBoost's expected scores, every score
histogram bucket, engine seconds. Then every panel query of the Grafana
dashboard (contrib/grafana/edgeguard.json) runs against it and returns data.

nginx runs engine = "shadow" with the Lua engine given the two models swapped
(lua bot = spoof.json, lua spoof = bot.json), so the shadow panels count real
disagreements and the Lua engine's histograms are the Rust ones crossed.

A second nginx in challenge mode with verified bots (the Rust engine only:
shadow mode refuses both) is a second target of the same job, so the
dashboard's challenge panels are checked the same way. Its traffic makes
every one of their series move: a flagged navigation served the page, an
answer solved in Python, a failed answer, a valid and a forged cookie, a
verified and a fake Googlebot. Prometheus keeps only the challenge families
from it (metric_relabel_configs), so the shadow nginx alone answers every
other assertion, exactly as before."""

import concurrent.futures
import json
import math
import pathlib
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from conftest import (METRICS_DICT, ROOT, edge_conf, free_port, get_text, Nginx, bad_log_lines, send_exact,
                      TEST_LIST, wait_for_port, wait_until)
from test_challenge import (BOTS, DIFFICULTY, GOOGLEBOT, HEADLESS, HEADLESS_UA, challenge_http, header,
                            leading_zero_bits, logged_server, mint, page_nonce, request, solve)

PROMETHEUS = shutil.which("prometheus")
# Shadow mode: both engines read feature schema 1 only, the legacy models
# and their fixture (models/README.md: schema versions).
SAMPLE = ROOT / "tests" / "fixtures" / "traffic" / "legacy-sample.jsonl"
DASHBOARD = ROOT / "contrib" / "grafana" / "edgeguard.json"
MODELS = {"bot": ROOT / "models" / "legacy" / "bot.json", "spoof": ROOT / "models" / "legacy" / "spoof.json"}
SCORE_BUCKETS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
REPEAT = 3
# What the test stands in for Grafana's variables: a window that covers all
# the traffic (it is sent within a few seconds of the query).
WINDOW = "60s"
DEMO_SECRET = ROOT / "nginx-conf" / "demo-challenge-secret"
# The families only the challenge nginx has (docs/challenge.md,
# docs/verified-bots.md).
CHALLENGE_FAMILIES = ("edgeguard_challenges_total", "edgeguard_challenge_failures_total",
                      "edgeguard_clearances_total", "edgeguard_verified_bots_total")

METRICS_LOCATION = """
        location = /edgeguard/metrics {
            allow 127.0.0.1;
            deny all;
            default_type "text/plain; version=0.0.4";
            content_by_lua_block {
                ngx.print(require("resty.edgeguard").metrics())
            }
        }
"""


def rows():
    """The fixture's requests that look the same through this nginx (HTTP/1.1,
    an IPv4 client, no body: send_exact sends none), each with official
    CatBoost's probabilities."""
    out = []
    for line in SAMPLE.read_text().splitlines():
        r = json.loads(line)
        has_body = any(n.lower() == "content-length" for n, _ in r["headers"])
        if r["version"] == "1.1" and ":" not in r["client"] and not has_body:
            r["p"] = {m: 1 / (1 + math.exp(-raw)) for m, raw in r["expected_raw"].items()}
            out.append(r)
    return out


def threshold(model):
    return float(json.loads(MODELS[model].read_text())["model_info"]["edgeguard.threshold"])


class Prometheus:
    def __init__(self, target, challenge_target):
        """Scrapes both targets as job "edgeguard"; from `challenge_target`
        only the CHALLENGE_FAMILIES (a mark label, then a drop of what is
        unmarked from that instance)."""
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-prom-"))
        self.port = free_port()
        families = "|".join(CHALLENGE_FAMILIES)
        (self.dir / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: edgeguard
    metrics_path: /edgeguard/metrics
    static_configs:
      - targets: ["{target}", "{challenge_target}"]
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: "{families}"
        target_label: __challenge_family
        replacement: "yes"
      - source_labels: [instance, __challenge_family]
        regex: "{challenge_target.replace('.', '[.]')};"
        action: drop
      - regex: __challenge_family
        action: labeldrop
""")
        self.log = open(self.dir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.dir / 'prometheus.yml'}", f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        assert wait_for_port(self.port, self.proc, timeout=30), (self.dir / "prometheus.log").read_text()
        wait_until("prometheus ready", lambda: self.get("/-/ready", raw=True), timeout=30)

    def get(self, path, raw=False, **params):
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = resp.read().decode()
        except OSError:
            if raw:
                return None
            raise
        return body if raw else json.loads(body)

    def query(self, expr):
        """{labels (sorted tuple, __name__ dropped): value} of an instant query."""
        got = self.get("/api/v1/query", query=expr)
        assert got["status"] == "success", (expr, got)
        assert got["data"]["resultType"] == "vector", (expr, got)
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(r["value"][1])
                for r in got["data"]["result"]}

    def one(self, expr):
        got = self.query(expr)
        assert len(got) == 1, (expr, got)
        return next(iter(got.values()))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def demo_key():
    """The signing key of the demo secret (its first key line)."""
    lines = [line.strip() for line in DEMO_SECRET.read_text().splitlines()]
    return bytes.fromhex(next(line for line in lines if line and not line.startswith("#")))


class ChallengeEdge:
    """nginx in challenge mode: the shipped bot model, the demo secret, the
    verified-bots fixture; the client address from X-Real-IP (trusted from
    loopback), /edgeguard/metrics on its own port."""

    def __init__(self):
        self.port, self.metrics_port = free_port(), free_port()
        self.counted = None  # drive()'s answer, once `scraped` has sent it
        self.nginx = Nginx(challenge_http(DEMO_SECRET, DIFFICULTY, f'verified_bots = "{BOTS}",') + f"""
    server {{
        listen 127.0.0.1:{self.port};
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Real-IP;
        {logged_server("logs/access.jsonl")}
        rewrite_by_lua_block {{ require("resty.edgeguard").access() }}
        location / {{
            content_by_lua_block {{ ngx.say("origin: ", ngx.var.edgeguard_action) }}
        }}
    }}
    server {{ listen 127.0.0.1:{self.metrics_port}; {METRICS_LOCATION} }}
}}
""")
        self.nginx.start(self.port)

    def get(self, headers, target, addr):
        status, _, body = request(self.port, headers, target, addr=addr)
        return status, body

    def drive(self):
        """Traffic that moves every challenge series. Returns {(family,
        labels): count} of what it must have counted."""
        browser, now = "203.0.113.50", int(time.time())
        status, body = self.get(HEADLESS, "/shop", browser)
        assert status == 403 and b"Checking your browser" in body  # flagged navigation: served
        nonce, difficulty = page_nonce(body)
        bad = next(c for c in range(10_000) if leading_zero_bits(f"{nonce}:{c}".encode()) < difficulty)
        status, _ = self.get(HEADLESS, f"/.edgeguard/challenge?n={nonce}&c={bad}&r=%2Fshop", browser)
        assert status == 403  # failed: work
        status, resp, _ = request(self.port, HEADLESS, f"/.edgeguard/challenge?n={nonce}&c={solve(nonce, difficulty)}"
                                  "&r=%2Fshop", addr=browser)
        assert status == 303  # solved
        cookie = header(resp, "Set-Cookie")[0].split(";")[0]
        assert self.get(HEADLESS + [("Cookie", cookie)], "/shop", browser) == (200, b"origin: cleared\n")
        valid = "edgeguard_clearance=" + mint(demo_key(), now + 3600, "203.0.113.51", HEADLESS_UA)
        assert self.get(HEADLESS + [("Cookie", valid)], "/", "203.0.113.51") == (200, b"origin: cleared\n")
        forged = "edgeguard_clearance=" + mint(bytes(32), now + 3600, "203.0.113.52", HEADLESS_UA)
        status, body = self.get(HEADLESS + [("Cookie", forged)], "/", "203.0.113.52")
        assert status == 403 and b"Checking your browser" in body  # rejected (mac), served again
        assert self.get(GOOGLEBOT, "/", "192.0.2.70") == (200, b"origin: verified\n")
        status, body = self.get(GOOGLEBOT, "/", "203.0.113.9")
        assert status == 403 and b"Checking your browser" in body  # a fake: flagged, served
        return {
            ("edgeguard_challenges_total", (("result", "served"),)): 3,
            ("edgeguard_challenges_total", (("result", "solved"),)): 1,
            ("edgeguard_challenges_total", (("result", "failed"),)): 1,
            ("edgeguard_challenge_failures_total", (("reason", "work"),)): 1,
            ("edgeguard_clearances_total", (("result", "accepted"),)): 2,
            ("edgeguard_clearances_total", (("result", "mac"),)): 1,
            ("edgeguard_verified_bots_total", (("bot", "Googlebot"), ("result", "verified"))): 1,
            ("edgeguard_verified_bots_total", (("bot", "Googlebot"), ("result", "fake"))): 1,
        }

    def stop(self):
        self.nginx.stop()
        bad = bad_log_lines(self.nginx.error_log)
        self.nginx.cleanup()
        return bad


@pytest.fixture(scope="module")
def challenged():
    """The challenge-mode nginx; after `scraped`, .counted holds what its
    traffic must have counted."""
    edge = ChallengeEdge()
    try:
        yield edge
    finally:
        bad = edge.stop()
    assert not bad, bad


@pytest.fixture(scope="module")
def scraped(origin, challenged):
    """nginx (2 workers, shadow, block) scraped by Prometheus; the fixture's
    traffic sent REPEAT times, then the challenge nginx's traffic. Yields
    (prometheus, statuses, nginx metrics port)."""
    assert PROMETHEUS, "prometheus missing: make deps-test installs Debian's package"
    port, mport = free_port(), free_port()
    # ambiguous = "block": every flagged request gets the mode's action, the
    # threshold rule this test holds nginx to (graded verdicts: test_verdicts.py).
    conf = edge_conf(
        port, origin.port, TEST_LIST, workers=2, http_extra=METRICS_DICT,
        configure=f'''models = {{ bot = "{MODELS['bot']}", spoof = "{MODELS['spoof']}" }},
            lua_models = {{ bot = "{MODELS['spoof']}", spoof = "{MODELS['bot']}" }},
            engine = "shadow", mode = "block", ambiguous = "block", metrics_dict = "edgeguard_metrics",''',
        access='require("resty.edgeguard").access()',
        extra_servers=f"server {{ listen 127.0.0.1:{mport}; {METRICS_LOCATION} }}")
    nginx = Nginx(conf)
    nginx.start(port)
    prom = None
    try:
        prom = Prometheus(f"127.0.0.1:{mport}", f"127.0.0.1:{challenged.metrics_port}")
        wait_until("the first scrape", lambda: prom.query('up{job="edgeguard"} == 1'), timeout=20)
        wait_until("a scrape with zero requests", lambda: prom.query('edgeguard_requests_total == 0'), timeout=20)
        wait_until("a scrape with zero challenges",
                   lambda: len(prom.query('edgeguard_challenges_total == 0')) == 6, timeout=20)

        traffic = rows() * REPEAT

        def send(r):
            return send_exact(port, r["method"], r["uri"], [tuple(h) for h in r["headers"]])[0]

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(send, traffic))
        # Other workers flush within a second, Prometheus scrapes every second.
        wait_until("Prometheus to see every request",
                   lambda: prom.query(f'edgeguard_requests_total{{engine="shadow"}} == {len(traffic)}'), timeout=20)
        challenged.counted = challenged.drive()
        wait_until("Prometheus to see the challenge traffic",
                   lambda: prom.query(f'edgeguard_challenges_total{{result="served"}} == '
                                      f'{challenged.counted["edgeguard_challenges_total", (("result", "served"),)]}'),
                   timeout=20)
        time.sleep(1.5)  # one more scrape: every worker's last flush is in
        yield prom, traffic, statuses, mport
    finally:
        if prom:
            prom.stop()
        nginx.stop()
        bad = bad_log_lines(nginx.error_log)
        nginx.cleanup()
    assert not bad, bad


def test_blocked_and_passed_counts_are_what_the_thresholds_imply(scraped):
    prom, traffic, statuses, _ = scraped
    thresholds = {m: threshold(m) for m in MODELS}
    flagged = [any(r["p"][m] >= thresholds[m] for m in MODELS) for r in traffic]
    assert [s == 403 for s in statuses] == flagged
    assert prom.one('edgeguard_decisions_total{action="block"}') == sum(flagged)
    assert prom.one('edgeguard_decisions_total{action="pass"}') == len(traffic) - sum(flagged)
    for action in ("allow", "log", "unavailable", "error"):
        assert prom.one(f'edgeguard_decisions_total{{action="{action}"}}') == 0
    assert prom.one('edgeguard_requests_total{engine="shadow"}') == len(traffic)
    assert prom.one("edgeguard_load_errors_total") == 0
    # Blocked requests are a real share of the traffic, not a corner case.
    assert 0.2 < sum(flagged) / len(traffic) < 0.9


@pytest.mark.parametrize("model", sorted(MODELS))
def test_score_histogram_buckets_hold_the_official_scores(scraped, model):
    prom, traffic, _, _ = scraped
    crossed = {"bot": "spoof", "spoof": "bot"}[model]
    for engine, source in (("rust", model), ("lua", crossed)):
        got = prom.query(f'edgeguard_score_bucket{{model="{model}",engine="{engine}"}}')
        got = {float(dict(labels)["le"]): v for labels, v in got.items()}
        want = {le: sum(1 for r in traffic if r["p"][source] <= le) for le in SCORE_BUCKETS}
        want[math.inf] = len(traffic)
        assert got == want, (engine, model)
        assert prom.one(f'edgeguard_score_count{{model="{model}",engine="{engine}"}}') == len(traffic)
        total = prom.one(f'edgeguard_score_sum{{model="{model}",engine="{engine}"}}')
        assert total == pytest.approx(sum(r["p"][source] for r in traffic), rel=1e-9)
    # Swapped models: the bot and spoof scores of every request differ.
    assert prom.one('edgeguard_shadow_disagreements_total{kind="score"}') == len(traffic)
    assert prom.one('edgeguard_shadow_disagreements_total{kind="decision"}') == 0
    assert prom.one('edgeguard_shadow_disagreements_total{kind="headers"}') == 0


def test_engine_seconds_count_every_request_and_match_nginx(scraped):
    prom, traffic, _, mport = scraped
    status, text = get_text(mport, "/edgeguard/metrics")
    assert status == 200
    served = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
              if line.startswith("edgeguard_engine_seconds")}
    for engine in ("rust", "lua"):
        assert prom.one(f'edgeguard_engine_seconds_count{{engine="{engine}"}}') == len(traffic)
        assert prom.one(f'edgeguard_engine_seconds_bucket{{engine="{engine}",le="+Inf"}}') == len(traffic)
        seconds = prom.one(f'edgeguard_engine_seconds_sum{{engine="{engine}"}}')
        # Traffic has stopped: what Prometheus stored is what nginx serves now.
        assert seconds == pytest.approx(served[f'edgeguard_engine_seconds_sum{{engine="{engine}"}}'], rel=1e-12)
        # Microseconds to milliseconds per request on this machine, not zero.
        assert 1e-7 * len(traffic) < seconds < 0.05 * len(traffic), (engine, seconds)
        buckets = prom.query(f'edgeguard_engine_seconds_bucket{{engine="{engine}"}}')
        values = [v for _, v in sorted(buckets.items(), key=lambda kv: float(dict(kv[0])["le"]))]
        assert values == sorted(values) and values[0] < len(traffic)


def dashboard_queries():
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dash["panels"]:
        if panel["type"] == "row":
            continue
        assert panel.get("targets"), panel["title"]
        for t in panel["targets"]:
            out.append((panel["title"], t["expr"], panel.get("repeat")))
    return dash, out


def grafana(expr, model):
    """The expression as Grafana sends it, with this test's variable values."""
    for var, value in (("$__rate_interval", WINDOW), ("$__range", WINDOW), ("$job", "edgeguard"), ("$model", model)):
        expr = expr.replace(var, value)
    assert "$" not in expr, expr
    return expr


def test_every_dashboard_panel_returns_data(scraped):
    prom, _, _, _ = scraped
    dash, queries = dashboard_queries()
    titles = {p["title"] for p in dash["panels"]}
    for family in ("edgeguard_decisions_total", "edgeguard_score_bucket", "edgeguard_engine_seconds_bucket",
                   "edgeguard_shadow_disagreements_total", "edgeguard_load_errors_total"):
        assert any(family in expr for _, expr, _ in queries), family
    assert len(titles) >= 10
    for title, expr, repeat in queries:
        # A repeated panel gets one value each; the others all models.
        for model in (["bot", "spoof"] if repeat == "model" else ["(bot|spoof)"]):
            got = prom.query(grafana(expr, model))
            assert got, f"panel {title!r} returns no data: {grafana(expr, model)}"
            assert all(math.isfinite(v) for v in got.values()), (title, got)
    # Its variables' queries, through the API Grafana uses for label_values().
    jobs = prom.get("/api/v1/label/job/values", **{"match[]": "edgeguard_requests_total"})["data"]
    assert jobs == ["edgeguard"]
    models = prom.get("/api/v1/label/model/values", **{"match[]": 'edgeguard_score_count{job=~"edgeguard"}'})["data"]
    assert models == ["bot", "spoof"]
    # The blocked share panel says what the counters say.
    share = prom.one(grafana([e for t, e, _ in queries if t == "Blocked share"][0], ""))
    assert 0 < share < 1


def test_challenge_counters_are_what_the_traffic_implies(scraped, challenged):
    prom = scraped[0]
    for family in CHALLENGE_FAMILIES:
        got = prom.query(family)
        for labels, v in got.items():
            assert dict(labels)["instance"] == f"127.0.0.1:{challenged.metrics_port}", (family, labels)
        got = {tuple((k, v) for k, v in labels if k not in ("instance", "job")): v for labels, v in got.items()}
        want = {labels: n for (f, labels), n in challenged.counted.items() if f == family}
        # Every series the traffic moved has its count; the rest stay 0.
        assert {k: v for k, v in got.items() if v} == want, family
    # Every reason has a series from the start, zero or not.
    reasons = {dict(k)["reason"] for k in prom.query("edgeguard_challenge_failures_total")}
    assert reasons == {"malformed", "mac", "expired", "address", "user_agent", "work", "tls", "early"}
    bots = {dict(k)["bot"] for k in prom.query("edgeguard_verified_bots_total")}
    assert bots == {"Googlebot", "bingbot"}


# The new row's panels, and the series of each that the traffic moved (the
# others must be there too, at 0).
CHALLENGE_PANELS = {
    "Challenges served, solved, failed": {(("result", "served"),), (("result", "solved"),), (("result", "failed"),)},
    "Solved share of challenges": {()},
    "Challenge failures by reason": {(("reason", "work"),)},
    "Clearance cookies by result": {(("result", "accepted"),), (("result", "mac"),)},
    "Verified and fake bots": {(("bot", "Googlebot"), ("result", "verified")), (("bot", "Googlebot"), ("result", "fake"))},
}


def test_challenge_panels_return_the_traffic(scraped, challenged):
    prom = scraped[0]
    dash, queries = dashboard_queries()
    row = next(p for p in dash["panels"] if p["type"] == "row" and p["title"] == "Challenge and verified bots")
    below = [p for p in dash["panels"] if p["type"] != "row" and row["gridPos"]["y"] < p["gridPos"]["y"]]
    assert {p["title"] for p in below} == set(CHALLENGE_PANELS)
    for family in CHALLENGE_FAMILIES:
        assert any(family in expr for _, expr, _ in queries), family
    for title, expr, _ in queries:
        if title not in CHALLENGE_PANELS:
            continue
        got = prom.query(grafana(expr, "(bot|spoof)"))
        moved = {labels for labels, v in got.items() if v > 0}
        assert moved == CHALLENGE_PANELS[title], (title, got)
        assert all(math.isfinite(v) for v in got.values()), (title, got)
    # Rates over one window: their ratio is the counts' (1 solved of 3 served).
    share = prom.one(grafana(next(e for t, e, _ in queries if t == "Solved share of challenges"), ""))
    assert share == pytest.approx(1 / 3, rel=1e-6)
