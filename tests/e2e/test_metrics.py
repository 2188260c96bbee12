"""edgeguard.metrics() through real nginx with 2 workers: every counter equals
what was sent, whichever worker served it, and the text parses as Prometheus'."""

import concurrent.futures
import signal
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import (METRICS_DICT, ROOT, Nginx, edge_conf, free_port, get_text, metrics_server,
                      running_edge, send_exact, TEST_LIST)

MODELS = f'models = {{ bot = "{ROOT}/models/bot.json", spoof = "{ROOT}/models/spoof.json" }},'
N = 240
BROWSER = [
    ("Host", "shop.example"),
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("Accept-Language", "en-US,en;q=0.5"),
    ("Accept-Encoding", "gzip, deflate, br"),
]
CURL = [("Host", "shop.example"), ("User-Agent", "curl/8.1.1"), ("Accept", "*/*")]
INTERNAL = [("X-Internal-User-Id", "1"), ("x-edge-pop", "fra")]


def parse(text):
    """{(sample name, sorted labels): value}, through prometheus_client's parser."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(mport):
    status, text = get_text(mport, "/metrics")
    assert status == 200
    return parse(text)


def settle(mport, key, want, timeout=5.0):
    """Other workers' counts reach the dict within metrics.FLUSH_SECONDS."""
    deadline = time.monotonic() + timeout
    while True:
        m = scrape(mport)
        if m.get(key) == want or time.monotonic() > deadline:
            return m
        time.sleep(0.2)


@pytest.fixture(scope="module")
def two_workers(origin):
    mport = free_port()
    for port, nginx in running_edge(
        origin, configure=MODELS + ' mode = "block", metrics_dict = "edgeguard_metrics",',
        access='require("resty.edgeguard").access()', workers=2, http_extra=METRICS_DICT,
        extra_servers=metrics_server(mport), location_extra="add_header X-Worker $pid always;",
    ):
        yield port, mport


def test_counters_equal_requests_sent_across_two_workers(two_workers):
    port, mport = two_workers
    before = scrape(mport)
    assert before[("edgeguard_requests_total", (("engine", "rust"),))] == 0

    def one(i):
        headers = (BROWSER if i % 3 else CURL) + INTERNAL
        status, resp, _ = send_exact(port, "GET", f"/p/{i}", headers)
        return status, resp.get("x-worker")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(N)))
    workers = {w for _, w in results}
    blocked = sum(1 for s, _ in results if s == 403)
    passed = sum(1 for s, _ in results if s == 200)
    assert blocked + passed == N and blocked >= N // 3, (blocked, passed)

    m = settle(mport, ("edgeguard_requests_total", (("engine", "rust"),)), N)
    assert m[("edgeguard_requests_total", (("engine", "rust"),))] == N
    # Blocked requests are stripped too (before the decision).
    assert m[("edgeguard_headers_stripped_total", ())] == 2 * N
    assert m[("edgeguard_decisions_total", (("action", "block"),))] == blocked
    assert m[("edgeguard_decisions_total", (("action", "pass"),))] == passed
    for model in ("bot", "spoof"):
        labels = (("engine", "rust"), ("model", model))
        assert m[("edgeguard_score_count", labels)] == N
        assert m[("edgeguard_score_bucket", tuple(sorted(labels + (("le", "+Inf"),))))] == N
        assert 0 < m[("edgeguard_score_sum", labels)] < N
    secs = (("engine", "rust"),)
    assert m[("edgeguard_engine_seconds_count", secs)] == N
    assert 0 < m[("edgeguard_engine_seconds_sum", secs)] < N * 0.01
    assert m[("edgeguard_load_errors_total", ())] == 0
    assert {k: v for k, v in m.items() if k[0] == "edgeguard_shadow_disagreements_total"} == {
        ("edgeguard_shadow_disagreements_total", (("kind", k),)): 0 for k in ("score", "decision", "headers")}
    # The kernel spreads 8 concurrent connections over both workers; the
    # counts above add up only if the dict is shared between them.
    assert len(workers) == 2, workers


def test_histogram_buckets_are_cumulative_and_end_at_count(two_workers):
    _, mport = two_workers
    m = scrape(mport)
    for model in ("bot", "spoof"):
        buckets = sorted(
            (float(dict(labels)["le"]), v) for (name, labels), v in m.items()
            if name == "edgeguard_score_bucket" and dict(labels)["model"] == model
        )
        values = [v for _, v in buckets]
        assert values == sorted(values), model
        assert buckets[-1][0] == float("inf")


def test_a_model_that_does_not_load_is_refused_and_counts_no_load_error(origin, tmp_path):
    """A model that does not load refuses the configuration (issue 41): it
    used to serve unscored and count edgeguard_load_errors_total. A reload to
    a broken model is refused; the workers in force keep scoring and the
    counter stays 0."""
    mport = free_port()
    port = free_port()
    model = tmp_path / "bot.json"
    model.write_bytes((ROOT / "models" / "bot.json").read_bytes())
    tmp_path.chmod(0o755)
    conf = edge_conf(port, origin.port, TEST_LIST,
                     configure=f'models = {{ bot = "{model}" }}, metrics_dict = "edgeguard_metrics",',
                     access='require("resty.edgeguard").access()', workers=2, http_extra=METRICS_DICT,
                     extra_servers=metrics_server(mport))
    nginx = Nginx(conf)
    nginx.start(port)
    try:
        assert scrape(mport)[("edgeguard_load_errors_total", ())] == 0
        model.write_bytes(model.read_bytes()[:1000])
        offset = len(nginx.error_log)
        nginx.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "models not loaded, so this configuration is refused" not in nginx.error_log[offset:]:
            assert time.monotonic() < deadline, nginx.error_log[offset:]
            time.sleep(0.05)
        assert str(model) in nginx.error_log[offset:]
        time.sleep(0.5)
        assert scrape(mport)[("edgeguard_load_errors_total", ())] == 0
    finally:
        nginx.stop()
        nginx.cleanup()


def test_metrics_without_a_dict_is_misuse(origin):
    mport = free_port()
    for _, nginx in running_edge(origin, extra_servers=metrics_server(mport)):
        status, _ = get_text(mport, "/metrics")
        assert status == 500
        assert "no metrics; configure{ metrics_dict" in nginx.error_log
        # The 500 line is expected here; clear it so the fixture's check passes.
        (nginx.prefix / "logs" / "error.log").write_text("")
