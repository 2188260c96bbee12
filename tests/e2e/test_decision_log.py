"""The shipped decision log (nginx-conf/log-format-decisions.conf with
decision-vars.conf) and a block's reference, through real nginx.

nginx runs the shipped models in block mode with vars = true and a block
rule answering 429, logs every request with `log_format edgeguard_decisions
escape=json`, and answers a block with `Edgeguard-Reference` and a body (a
page for a navigation, problem+json for a program). Every line must parse
as JSON and carry the decision; the reference in the header, in the body and
in the log line's request_id must be one and the same.
"""

import json
import re

from conftest import CHROME, ROOT, TEST_LIST, Nginx, bad_log_lines, edge_conf, free_port, send_exact

MODELS = {"bot": str(ROOT / "models" / "bot.json"), "spoof": str(ROOT / "models" / "spoof.json")}
FORMAT = ROOT / "nginx-conf" / "log-format-decisions.conf"
VARS = ROOT / "nginx-conf" / "decision-vars.conf"

CURL_API = [("Host", "edge.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*")]
CURL_PAGE = [("Host", "edge.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "text/html")]


def every_variable_in_the_format():
    """The $edgeguard_* names the format logs (not its comments)."""
    body = "".join(l for l in FORMAT.read_text().splitlines() if not l.lstrip().startswith("#"))
    return set(re.findall(r"\$(edgeguard_\w+)", body))


def test_the_format_logs_every_variable_that_decision_vars_declares():
    declared = set(re.findall(r"^set \$(edgeguard_\w+) \"\";$", VARS.read_text(), re.M))
    assert declared == every_variable_in_the_format()
    # What access() sets with vars = true (src/gate/effects.rs) is all there
    # (not the record job's $edgeguard_request_headers: record.capture()'s,
    # which log-format.conf logs and the recording setups declare).
    effects = (ROOT / "src" / "gate" / "effects.rs").read_text()
    set_by_gate = set(re.findall(r'b"(edgeguard_\w+)"', effects)) | set(re.findall(r'"(edgeguard_(?:fp|client)_\w+)"', effects))
    set_by_gate.discard("edgeguard_request_headers")
    assert set_by_gate <= declared, set_by_gate - declared


def test_a_line_per_request_parses_and_the_reference_agrees(origin, tmp_path):
    port = free_port()
    configure = (
        'models = { bot = "%s", spoof = "%s" }, mode = "block", vars = { "reasons" }, '
        'rules = { { name = "slow", when = { path = { exact = "/limited" } }, action = "block", status = 429 } },'
        % (MODELS["bot"], MODELS["spoof"])
    )
    conf = edge_conf(port, origin.port, TEST_LIST, configure=configure,
                     access='require("resty.edgeguard").access()',
                     http_extra=f"include {FORMAT};",
                     location_extra=f"include {VARS};\n            access_log logs/decisions.jsonl edgeguard_decisions;")
    nginx = Nginx(conf)
    nginx.start(port)
    try:
        answers = {
            "api": send_exact(port, "GET", "/api/cart", CURL_API),
            "page": send_exact(port, "GET", "/", CURL_PAGE),
            "limited": send_exact(port, "GET", "/limited", CURL_PAGE),
            "person": send_exact(port, "GET", "/", CHROME),
        }
    finally:
        nginx.stop()
    lines = (nginx.prefix / "logs" / "decisions.jsonl").read_bytes().decode().splitlines()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    records = [json.loads(line) for line in lines]
    assert len(records) == 4
    assert all(set(r) >= {"time", "request_id", "host", "status", "edgeguard_action"} for r in records)
    by_uri = dict(zip(["api", "page", "limited", "person"], records))

    # A program: problem+json, reason blocked, the reference three times.
    status, headers, body = answers["api"]
    assert status == 403 and headers["content-type"] == "application/problem+json"
    ref = headers["edgeguard-reference"]
    assert re.fullmatch(r"[0-9a-f]{32}", ref), ref
    doc = json.loads(body)
    assert (doc["reason"], doc["reference"], doc["status"]) == ("blocked", ref, 403)
    rec = by_uri["api"]
    assert (rec["request_id"], rec["status"], rec["edgeguard_action"]) == (ref, 403, "block")
    assert float(rec["edgeguard_bot"]) >= 0.5 and rec["host"] == "edge.test" and rec["uri"] == "/api/cart"
    # Why, and how sure (vars = { "reasons" }).
    assert rec["edgeguard_grade"], rec

    # A navigation: a short page naming it.
    status, headers, body = answers["page"]
    ref = headers["edgeguard-reference"]
    assert status == 403 and headers["content-type"].startswith("text/html")
    assert f"<code>{ref}</code>".encode() in body
    assert headers["cache-control"] == "no-store"
    assert (by_uri["page"]["request_id"], by_uri["page"]["edgeguard_action"]) == (ref, "block")

    # The rule's own status, its name logged.
    status, headers, body = answers["limited"]
    ref = headers["edgeguard-reference"]
    assert status == 429 and f"<code>{ref}</code>".encode() in body
    rec = by_uri["limited"]
    assert (rec["request_id"], rec["status"], rec["edgeguard_rule"]) == (ref, 429, "slow")

    # A person passes: no reference header, the decision still logged.
    status, headers, _ = answers["person"]
    assert status == 200 and "edgeguard-reference" not in headers
    rec = by_uri["person"]
    assert rec["edgeguard_action"] == "pass" and float(rec["edgeguard_bot"]) < 0.5
    assert len({r["request_id"] for r in records}) == 4
