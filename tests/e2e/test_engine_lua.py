"""engine = "lua" through real nginx: the pure-Lua engine strips the same
internal headers and scores and decides exactly as engine = "rust"."""

import json
import re

import pytest

from conftest import ROOT, Nginx, edge_conf, free_port, running_edge, send_exact, TEST_LIST

SAMPLE = ROOT / "tests" / "fixtures" / "traffic" / "legacy-sample.jsonl"
MODELS = f'models = {{ bot = "{ROOT}/models/legacy/bot.json", spoof = "{ROOT}/models/legacy/spoof.json" }},'
# Exact names, case and "_" variants, prefix rules, repeats: what the list covers.
INTERNAL = [
    ("X-Internal-User-Id", "1"),
    ("x_internal_user_id", "2"),
    ("X-TENANT", "acme"),
    ("x-internal-trace", "abc"),
    ("X-Edge-Pop", "fra"),
    ("x-edge-pop", "ams"),
]
INTERNAL_NAMES = {n.lower().replace("_", "-") for n, _ in INTERNAL}


def rows():
    out = []
    for line in SAMPLE.read_text().splitlines():
        r = json.loads(line)
        if not {n.lower() for n, _ in r["headers"]} & {"content-length", "transfer-encoding"}:
            out.append(r)
    return out


def scores(header):
    return {k: float(v) for k, v in (part.split("=") for part in header.split("; "))}


def edge(origin, engine):
    conf = MODELS + f' engine = "{engine}", mode = "block",'
    yield from running_edge(origin, configure=conf, access='require("resty.edgeguard").access()')


@pytest.fixture(scope="module")
def lua_edge(origin):
    yield from edge(origin, "lua")


@pytest.fixture(scope="module")
def rust_edge(origin):
    yield from edge(origin, "rust")


def through(port, origin, row, extra):
    """Status, and what the origin saw (None when blocked)."""
    seen = len(origin.requests)
    status, _, _ = send_exact(port, row["method"], row["uri"], [tuple(h) for h in row["headers"]] + extra)
    if len(origin.requests) == seen:
        return status, None
    return status, origin.last_headers()


@pytest.mark.parametrize("extra", [[], INTERNAL], ids=["plain", "with-internal-headers"])
def test_lua_engine_blocks_passes_and_scores_like_rust(lua_edge, rust_edge, origin, extra):
    lport, _ = lua_edge
    rport, _ = rust_edge
    blocked = passed = 0
    for row in rows():
        lstatus, lseen = through(lport, origin, row, extra)
        rstatus, rseen = through(rport, origin, row, extra)
        assert lstatus == rstatus, (row["kind"], row["uri"])
        if lstatus == 403:
            blocked += 1
            assert lseen is None and rseen is None
            continue
        passed += 1
        lscore = [v for n, v in lseen if n.lower() == "x-bot-score"]
        rscore = [v for n, v in rseen if n.lower() == "x-bot-score"]
        assert len(lscore) == len(rscore) == 1
        for model, value in scores(rscore[0]).items():
            assert scores(lscore[0])[model] == pytest.approx(value, rel=1e-9, abs=1e-300), (model, row["uri"])
        # Internal headers never reach the origin; everything else does, in order.
        lnames = [n.lower() for n, _ in lseen]
        assert not {n.replace("_", "-") for n in lnames} & INTERNAL_NAMES
        assert lnames == [n.lower() for n, _ in rseen]
    assert blocked and passed, (blocked, passed)


def test_access_override_to_an_engine_not_loaded_is_an_error(origin):
    port = free_port()
    nginx = Nginx(edge_conf(port, origin.port, TEST_LIST, configure=MODELS + ' engine = "rust",',
                            access='require("resty.edgeguard").access{ engine = "lua" }'))
    nginx.start(port)
    try:
        status, _, _ = send_exact(port, "GET", "/", [("Host", "edge.test")])
        assert status == 500
        assert 'engine "lua" was not loaded' in nginx.error_log
    finally:
        nginx.stop()
        nginx.cleanup()


def test_lua_engine_logs_the_decision_line_the_rust_engine_logs(lua_edge, rust_edge):
    """Both engines' decision lines are written by Rust (edgeguard_location_run,
    given the Lua engine's scores for its decision): the same words,
    scores and thresholds as C's %.6f."""
    line = re.compile(r'edgeguard action=block grade=certain reasons=ua_library model=(\w+) score=(\d+\.\d{6}) '
                      r'threshold=(\d+\.\d{6}) request_id=[0-9a-f]{32} host=edge\.test '
                      r'client=127\.0\.0\.1 method=GET uri="/decision-line\?x=1"')
    got = {}
    for engine, (port, nginx) in (("lua", lua_edge), ("rust", rust_edge)):
        status, _, _ = send_exact(port, "GET", "/decision-line?x=1",
                                  [("Host", "edge.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*")])
        assert status == 403, engine
        found = [m for m in map(line.search, nginx.error_log.splitlines()) if m]
        assert found, (engine, nginx.error_log[-2000:])
        got[engine] = found[-1].groups()
    assert got["lua"][0] == got["rust"][0] and got["lua"][2] == got["rust"][2], got
    assert float(got["lua"][1]) == pytest.approx(float(got["rust"][1]), abs=1e-6), got
