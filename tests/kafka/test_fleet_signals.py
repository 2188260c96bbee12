"""The whole fleet path of docs/signals.md, end to end: real nginx (TLS,
challenge mode) serves a script spread over many /24s and people in
Debian's Chromium who solve the real page (scripts/signals-measure.py);
its access log goes to a 4-partition topic (`edgeguard ship`); an
`edgeguard signals` group member judges it (stage 1), merges the partials
it owns (stage 2) and publishes the compacted snapshot topic; `signals
export` writes the snapshot file; a second nginx (another node: plain
HTTP, its own workers) picks the file up on its refresh timer, and its
rule on the fleet's counts blocks the script's head while the people's
own navigation head, byte for byte from the log, passes.
"""

import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import EDGEGUARD, FAST_GROUP, ROOT, _load
import conftest

measure = _load("signals_measure", ROOT / "scripts" / "signals-measure.py")
edge_e2e = _load("e2e_signals", conftest.E2E / "test_signals.py")
origin = conftest.e2e.origin  # the fixture: a recording origin server

pytestmark = pytest.mark.skipif(not (measure.CHROMIUM and measure.CHROMEDRIVER and measure.XVFB),
                                reason="needs chromium, chromium-driver and xvfb (make deps-test)")

PEOPLE, PREFIXES = 8, 60


def entries(doc):
    return sorted(doc["entries"], key=lambda e: (e["kind"], e["key"]))


def heads(log):
    """The script's head and a person's navigation head, as nginx logged
    them (names in the client's case, in arrival order)."""
    script = person = None
    for line in log.read_text().splitlines():
        r = json.loads(line)
        h = [tuple(x) for x in json.loads(r["headers"])]
        ua = next((v for n, v in h if n.lower() == "user-agent"), "")
        mode = next((v for n, v in h if n.lower() == "sec-fetch-mode"), "")
        if ua.startswith("python-requests") and script is None:
            script = h
        if "Chrome/" in ua and mode == "navigate" and r["uri"] == "/" and person is None:
            person = h
    assert script and person, "no script or person head in the log"
    return script, person


def wait_for_export(broker, path, want, procs, logs):
    deadline = time.monotonic() + 180
    while True:
        done = subprocess.run([EDGEGUARD, "signals", "export", "--kafka-brokers", broker.address,
                               "--topic", "snapshot", "--out", path], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        got = json.loads(path.read_text())
        if entries(got) == entries(want):
            return got
        assert all(p.poll() is None for p in procs), "\n".join(l.read_text(errors="replace") for l in logs)
        assert time.monotonic() < deadline, f"export: {entries(got)}\nfile mode: {entries(want)}"
        time.sleep(2)


def test_nginx_log_to_kafka_to_signals_to_nginx_rule(broker, origin, tmp_path):
    os.chmod(tmp_path, 0o777)
    work = tmp_path / "measure"
    work.mkdir()
    os.chmod(work, 0o777)
    lines = []
    want, problems = measure.measure(PEOPLE, PREFIXES, 12, work, out=lines.append)
    assert not problems, "\n".join(problems + lines)
    log = work / "access.jsonl"

    for topic, partitions in (("log", 4), ("partials", 4), ("snapshot", 2)):
        broker.create_topic(topic, partitions)
    member_log = tmp_path / "signals.log"
    procs = [subprocess.Popen(
        [EDGEGUARD, "signals", "--config", work / "config.json", "--kafka-brokers", broker.address,
         "--topic", "log", "--group", "signals", "--partials-topic", "partials", "--snapshot-topic", "snapshot",
         "--flush-every", "1", "--publish-every", "1", *FAST_GROUP],
        stdout=subprocess.DEVNULL, stderr=open(member_log, "wb"))]
    edge = None
    try:
        conftest.ship(broker, "log", log)
        exported = tmp_path / "signals.json"
        got = wait_for_export(broker, exported, want, procs, [member_log])
        # Counted from the topic exactly as from the file, window end included.
        assert got["generated"] == want["generated"] and got["window"] == want["window"]

        script, person = heads(log)
        edge = edge_e2e.Edge(origin)
        edge.script_key = edge_e2e.headers_key(script)
        edge_e2e.replace(edge.file, exported.read_bytes())
        fleet = {e["key"]: e for e in got["entries"]}
        assert fleet[edge.script_key]["prefixes24"] == PREFIXES, fleet
        person_key = edge_e2e.headers_key(person)
        assert fleet[person_key]["solved"] >= PEOPLE - 1, fleet[person_key]

        # The other node's rule (prefixes >= 50, solved <= 5 %) on the
        # fleet's counts: the script is blocked, the person is not.
        edge_e2e.both_workers(edge, script, lambda s, f: s == 429 and f["key"] == "headers"
                              and f["prefixes"] == str(PREFIXES) and float(f["solved"]) == 0, "the script blocked")
        for _ in range(20):
            status, h, _ = edge_e2e.send(edge.port, person)
            f = edge_e2e.fp(h)
            assert status == 200 and f["key"] == "headers" and float(f["solved"]) == 1, (status, f)
        assert not conftest.bad_log_lines(edge.nginx.error_log)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if edge is not None:
            edge.stop()
        shutil.rmtree(work / "profile", ignore_errors=True)
