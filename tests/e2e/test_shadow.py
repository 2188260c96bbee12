"""Shadow mode through real nginx: both engines on every request, the primary acts.

A copy of models/legacy/bot.json whose first tree's leaves are all raised by DELTA is
given to the Lua engine only (lua_models): every bot score differs, some
decisions flip, and each difference must be counted in the metrics and logged
(rate-limited) in error.log, while the client sees the primary's decision.
With the same models for both engines, nothing may differ: equality under nginx.

Both engines read models of feature schema 1 only (the Lua engine computes no
other), so shadow mode compares them on the legacy models (models/legacy/),
the "before" of the migration.
"""

import json
import math
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import METRICS_DICT, ROOT, free_port, get_text, metrics_server, running_edge, send_exact

SAMPLE = ROOT / "tests" / "fixtures" / "traffic" / "legacy-sample.jsonl"
DELTA = 8.0  # enough to push most fixture browsers over the bot threshold
INTERNAL = [("X-Internal-User-Id", "42"), ("x-edge-route", "eu-1")]


def rows(as_scored=False):
    """Every fixture request nginx can take as sent (no body announced); with
    as_scored, only those this nginx sees as the fixture's scores assume:
    HTTP/1.1 from an IPv4 client (it sees 127.0.0.1)."""
    out = []
    for line in SAMPLE.read_text().splitlines():
        r = json.loads(line)
        names = {n.lower() for n, _ in r["headers"]}
        if names & {"content-length", "transfer-encoding"}:
            continue
        if as_scored and (r["version"] != "1.1" or ":" in r["client"]):
            continue
        out.append(r)
    return out


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def model_threshold(path):
    return float(json.loads(path.read_text())["model_info"]["edgeguard.threshold"])


def send(port, row, extra=()):
    return send_exact(port, row["method"], row["uri"], [tuple(h) for h in row["headers"]] + list(extra))


def scrape(port):
    """{(name, labels as sorted tuple): value} from the parsed exposition."""
    status, text = get_text(port, "/metrics")
    assert status == 200
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def wait_metric(port, key, want, timeout=5.0):
    """Other workers flush once a second: poll until `key` reaches `want`."""
    deadline = time.monotonic() + timeout
    while True:
        got = scrape(port)
        if got.get(key) == want or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def disagreements(metrics):
    return {k: metrics[("edgeguard_shadow_disagreements_total", (("kind", k),))]
            for k in ("score", "decision", "headers")}


@pytest.fixture(scope="module")
def altered_bot(tmp_path_factory):
    model = json.loads((ROOT / "models" / "legacy" / "bot.json").read_text())
    tree = model["oblivious_trees"][0]
    tree["leaf_values"] = [v + DELTA for v in tree["leaf_values"]]
    path = tmp_path_factory.mktemp("models") / "bot-altered.json"
    path.write_text(json.dumps(model))
    return path


def shadow_edge(origin, primary, lua_bot):
    mport = free_port()
    # ambiguous = "block": every flagged request gets the mode's action, the
    # threshold rule this test holds nginx to (graded verdicts: test_verdicts.py).
    configure = f"""
            engine = "shadow", shadow_primary = "{primary}", mode = "block", ambiguous = "block",
            models = {{ bot = "{ROOT}/models/legacy/bot.json", spoof = "{ROOT}/models/legacy/spoof.json" }},
            lua_models = {{ bot = "{lua_bot}", spoof = "{ROOT}/models/legacy/spoof.json" }},
            metrics_dict = "edgeguard_metrics",
    """
    for port, nginx in running_edge(origin, configure=configure, access='require("resty.edgeguard").access()',
                                    http_extra=METRICS_DICT, extra_servers=metrics_server(mport)):
        yield port, mport, nginx


def decision(scores, thresholds):
    return "block" if any(scores[m] >= thresholds[m] for m in scores) else "pass"


def expectations(altered_bot):
    """Per row: (rust decision, lua decision) from CatBoost's own raw values."""
    t = {"bot": model_threshold(ROOT / "models" / "legacy" / "bot.json"),
         "spoof": model_threshold(ROOT / "models" / "legacy" / "spoof.json")}
    t_lua = {"bot": model_threshold(altered_bot), "spoof": t["spoof"]}
    out = []
    for r in rows(as_scored=True):
        raw = r["expected_raw"]
        rust = {m: sigmoid(v) for m, v in raw.items()}
        lua = {"bot": sigmoid(raw["bot"] + DELTA), "spoof": rust["spoof"]}
        out.append((r, decision(rust, t), decision(lua, t_lua)))
    return out


@pytest.mark.parametrize("primary", ["rust", "lua"])
def test_altered_lua_model_disagreements_are_counted_logged_and_the_primary_acts(origin, altered_bot, primary):
    cases = expectations(altered_bot)
    flips = sum(1 for _, a, b in cases if a != b)
    assert flips > 0, "the altered model must change some decisions, or this test proves nothing"
    for port, mport, nginx in shadow_edge(origin, primary, altered_bot):
        started = time.monotonic()
        for row, rust_action, lua_action in cases:
            status, _, _ = send(port, row)
            acting = rust_action if primary == "rust" else lua_action
            assert status == (403 if acting == "block" else 200), (primary, row["kind"], row["uri"])
            if status == 200:
                sent = [v for n, v in origin.last_headers() if n.lower() == "x-bot-score"]
                got = dict(part.split("=") for part in sent[0].split("; "))
                bot_raw = row["expected_raw"]["bot"] + (DELTA if primary == "lua" else 0)
                assert float(got["bot"]) == pytest.approx(sigmoid(bot_raw), rel=1e-8, abs=1e-300)
        elapsed = time.monotonic() - started

        n = len(cases)
        m = wait_metric(mport, ("edgeguard_requests_total", (("engine", "shadow"),)), n)
        assert m[("edgeguard_requests_total", (("engine", "shadow"),))] == n
        assert disagreements(m) == {"score": n, "decision": flips, "headers": 0}
        blocked = sum(1 for _, a, b in cases if (a if primary == "rust" else b) == "block")
        assert m[("edgeguard_decisions_total", (("action", "block"),))] == blocked
        for engine in ("rust", "lua"):
            assert m[("edgeguard_score_count", (("engine", engine), ("model", "bot")))] == n

        lines = [line for line in nginx.error_log.splitlines() if "edgeguard shadow disagreement" in line]
        assert 1 <= len(lines) <= math.ceil(elapsed) + 1, (len(lines), elapsed)
        first = lines[0]
        assert "[warn]" in first
        assert f"primary={primary}" in first and "kinds=score" in first
        assert re.search(r'method=\w+ uri="/[^"]*" client=127\.0\.0\.1 request_id=[0-9a-f]{32}', first), first
        assert re.search(r"rust_scores=bot=[0-9.e-]+;spoof=[0-9.e-]+ lua_scores=bot=", first), first
        # Rate limiting drops lines, never counts: the lines plus what they
        # say they suppressed never exceed the disagreeing requests.
        suppressed = sum(int(s) for s in re.findall(r"suppressed=(\d+)", "\n".join(lines)))
        assert len(lines) + suppressed <= n


def test_same_models_agree_on_every_fixture_request(origin):
    """The proof of equality under nginx: two engines, no difference at all."""
    cases = rows()
    for port, mport, _ in shadow_edge(origin, "rust", ROOT / "models" / "legacy" / "bot.json"):
        for row in cases:
            send(port, row, INTERNAL)
            send(port, row, [("x_internal_user_id", "7"), ("X-TENANT", "t"), ("x-internal-a", "1")])
        n = 2 * len(cases)
        m = wait_metric(mport, ("edgeguard_requests_total", (("engine", "shadow"),)), n)
        assert m[("edgeguard_requests_total", (("engine", "shadow"),))] == n
        assert m[("edgeguard_headers_stripped_total", ())] == 5 * len(cases)
        assert disagreements(m) == {"score": 0, "decision": 0, "headers": 0}
        for engine in ("rust", "lua"):
            assert m[("edgeguard_engine_seconds_count", (("engine", engine),))] == n


@pytest.mark.parametrize("engine", ["rust", "lua"])
def test_a_location_can_run_one_of_the_loaded_engines(origin, altered_bot, engine):
    """configure{ engine = "shadow" } loads both; access{ engine = ... } picks one:
    nothing is compared, only that engine runs and is timed."""
    mport = free_port()
    configure = f"""
            engine = "shadow", mode = "off",
            models = {{ bot = "{ROOT}/models/legacy/bot.json", spoof = "{ROOT}/models/legacy/spoof.json" }},
            lua_models = {{ bot = "{altered_bot}", spoof = "{ROOT}/models/legacy/spoof.json" }},
            metrics_dict = "edgeguard_metrics",
    """
    cases = rows(as_scored=True)[:10]
    for port, _ in running_edge(origin, configure=configure,
                                access=f'require("resty.edgeguard").access{{ engine = "{engine}" }}',
                                http_extra=METRICS_DICT, extra_servers=metrics_server(mport)):
        for row in cases:
            assert send(port, row)[0] == 200
            sent = [v for n, v in origin.last_headers() if n.lower() == "x-bot-score"]
            got = dict(part.split("=") for part in sent[0].split("; "))
            bot_raw = row["expected_raw"]["bot"] + (DELTA if engine == "lua" else 0)
            assert float(got["bot"]) == pytest.approx(sigmoid(bot_raw), rel=1e-8, abs=1e-300)
        n = len(cases)
        m = wait_metric(mport, ("edgeguard_requests_total", (("engine", engine),)), n)
        assert m[("edgeguard_requests_total", (("engine", engine),))] == n
        assert m[("edgeguard_requests_total", (("engine", "shadow"),))] == 0
        other = "lua" if engine == "rust" else "rust"
        assert m[("edgeguard_engine_seconds_count", (("engine", engine),))] == n
        assert m[("edgeguard_engine_seconds_count", (("engine", other),))] == 0
        assert disagreements(m) == {"score": 0, "decision": 0, "headers": 0}
