"""The captured real-client corpus (tests/fixtures/real_clients/) through real
nginx running the shipped nginx-conf/nginx.conf in block mode with the
shipped models: every person's browser request passes, every scripted
client's request is blocked, and headless clients whose bytes differ from a
browser's are blocked at the rate models/README.md states.

Each request is sent as the bytes its client sent, as nginx recorded them:
HTTP/1.x rows as raw request lines over a socket (header order and letter
case exact), HTTP/2 rows over cleartext HTTP/2 with prior knowledge (a
second listen port with `http2`), header block in arrival order, so nginx
hands edgeguard the header array it handed it at capture time. Byte-identical
automation (Selenium on a headful browser, headless Firefox) and exact
impersonation (curl_cffi) are sent too and must be answered, but are not
judged.

No row is replayed with its client's ClientHello (a test client can only
send its own): TLS rows arrive here without TLS facts, as behind a proxy
that ends TLS, and are scored on their heads alone, which the shipped
models must still get right. Scripts with a browser's copied headers are
then the browser's bytes, answered but not judged. What TLS adds is
measured by `make eval-real` (replay with each row's logged JA4 and
family) and, with live clients, by tests/e2e/test_tls.py.
"""

import collections
import hashlib
import re
import socket
import sys

import pytest

from conftest import ROOT, free_port
from h2c import HEADERS, body_of, frames, is_h2, request_bytes, status_of
from test_startup import shipped, stop_and_check_log

sys.path.insert(0, str(ROOT / "models"))
import corpus  # noqa: E402

ROWS = corpus.load()

pytestmark = pytest.mark.skipif(not ROWS, reason="no captured corpus (make capture)")

# Which rows the shipped model is held to. The corpus has the capture of
# 7c385ea's kind of rows (`scope: base`: Chromium and Firefox on Linux and
# the scripts, on the shop's first URLs, in its flows) and the wider
# capture's (`wider`: WebKitGTK, QtWebEngine, mobile-emulated Chromium,
# resistFingerprinting, the realistic site map's URLs, downloads, media,
# arrivals from other sites, hard reloads ...). The bot model shipped at
# 7c385ea judges the page and the visit as well as the client (issue 29):
# it blocks people on the wider capture's URLs and flows. With that very
# model (its bytes, below), people's `wider` rows are expected to fail:
# that test is marked xfail(strict), so it reports them and turns into a
# failure the day they all pass. With any other models/bot.json every row is
# held to every rule, as the targets say.
MODEL_OF_7C385EA = "9c16b9095d320d4a4bd9bb0544177f1ff2387629f8cff21c6c911e0623e0ecee"
SHIPPED_IS_7C385EA = hashlib.sha256((ROOT / "models" / "bot.json").read_bytes()).hexdigest() == MODEL_OF_7C385EA
SCOPES = ("base", "wider")

# Headless clients whose bytes differ are held to the target, not to
# every request (models/README.md gives the measured share).
DIFFERING_MIN = 0.95


def send_h1(port, row):
    """The row's request line and headers as raw bytes; returns the status."""
    version = row["version"] if row["version"].startswith("HTTP/") else "HTTP/" + row["version"]
    head = "%s %s %s\r\n" % (row["method"], row["uri"], version)
    head += "".join("%s: %s\r\n" % (n, v) for n, v in row["headers"]) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode("utf-8") + body_of(row))
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1])


def send_h2(port, row):
    """The row over cleartext HTTP/2 (h2c.py): its status."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request_bytes(row))
        for kind, _, stream, payload in frames(s):
            if kind == HEADERS and stream == 1:
                return status_of(payload)


@pytest.fixture(scope="module")
def statuses(tmp_path_factory):
    """The status nginx answered to every corpus row."""
    h2_port = free_port()

    def with_h2c(conf):
        first = re.search(r"listen 127\.0\.0\.1:(\d+);", conf)
        conf = conf[:first.end()] + "\n        listen 127.0.0.1:%d http2;" % h2_port + conf[first.end():]
        # The models are judged here, not the site's rules: the shipped
        # presets pass /robots.txt and feeds to any client by design
        # (docs/rules.md; tests/e2e/test_rules.py tests them).
        presets = 'rules = { "preset:well-known", "preset:feeds" },'
        assert presets in conf
        return conf.replace(presets, "rules = false,")

    nginx, port = shipped(tmp_path_factory.mktemp("real"), edit=with_h2c)
    try:
        got = [send_h2(h2_port, r) if is_h2(r) else send_h1(port, r) for r in ROWS]
    finally:
        stop_and_check_log(nginx)
    return got


def describe(rows_statuses):
    return "\n".join("  line %d %s %s %s %s %s %s %s -> %d" % (
        r["line"], r["class"], r["family"], r["protocol"], r["origin"], r["flow"], r["url_kind"], r["uri"][:40], st)
        for r, st in rows_statuses[:20])


def summary(rows_statuses):
    """Counts of the rows given per family, flow and kind of URL."""
    out = []
    for key in ("family", "flow", "url_kind"):
        c = collections.Counter(r[key] for r, _ in rows_statuses)
        out.append(key + ": " + ", ".join("%s %d" % kv for kv in c.most_common()))
    return "\n".join(out)


def in_scope(statuses, scope):
    return [(r, st) for r, st in zip(ROWS, statuses) if r["scope"] == scope]


@pytest.mark.parametrize("scope", [
    "base",
    pytest.param("wider", marks=pytest.mark.xfail(
        SHIPPED_IS_7C385EA, strict=True,
        reason="the model of 7c385ea judges pages and visits: it blocks people on the wider site (issue 29)")),
])
def test_every_captured_browser_request_passes(statuses, scope):
    rows = in_scope(statuses, scope)
    blocked = [(r, st) for r, st in rows if r["human"] and st == 403]
    people = sum(r["human"] for r, _ in rows)
    assert people > 0
    assert not blocked, "%d of %d people's requests blocked:\n%s\n%s" % (
        len(blocked), people, summary(blocked), describe(blocked))
    # Passing means reaching the demo origin, not failing some other way.
    odd = [(r, st) for r, st in rows if r["human"] and st >= 500]
    assert not odd, describe(odd)


@pytest.mark.parametrize("scope", SCOPES)
def test_every_scripted_client_request_is_blocked(statuses, scope):
    scripted = [(r, st) for r, st in in_scope(statuses, scope) if r["class"] == "scripted"]
    assert scripted, "the corpus has no scripted clients"
    passed = [(r, st) for r, st in scripted if st != 403]
    assert not passed, "%d of %d scripted requests passed:\n%s" % (len(passed), len(scripted), describe(passed))


@pytest.mark.parametrize("scope", SCOPES)
def test_headless_clients_whose_bytes_differ_are_blocked(statuses, scope):
    differing = [(r, st) for r, st in in_scope(statuses, scope) if r["class"] == corpus.HEADLESS]
    if not differing:
        pytest.skip("the corpus has no headless client whose bytes differ")
    blocked = sum(st == 403 for _, st in differing)
    assert blocked >= DIFFERING_MIN * len(differing), "%d of %d blocked:\n%s" % (
        blocked, len(differing), describe([(r, st) for r, st in differing if st != 403]))


def test_byte_identical_automation_gets_an_answer(statuses):
    """Not judged (its head is a browser's), but it must be answered."""
    for r, st in zip(ROWS, statuses):
        if r["class"] in corpus.UNJUDGED or r["class"] == corpus.COPIED:
            assert st in (200, 204, 206, 301, 302, 304, 403, 404), (r["line"], st)


# The corpus' people as real fronts delivered them (corpus.THROUGH, written
# by scripts/deployment-measure.py --record): families "<family>+<front>",
# held out (never trained on). Judged by replay with each edge's documented
# profile, as nginx judges them live (tests/e2e/test_deployment.py).
THROUGH = corpus.load_through()
PROFILED_FRONTS = ("nginx", "haproxy-http", "caddy", "haproxy-tcp")
PEOPLE_MAX_FLAGGED = 0.001


@pytest.fixture(scope="module")
def through():
    if not THROUGH:
        pytest.skip("no through-proxy rows (scripts/deployment-measure.py --record)")
    import eval_real
    edgeguard = str(ROOT / "target" / "release" / "edgeguard")
    models = eval_real.models_in(str(ROOT / "models"), ["bot"])
    judged = eval_real.replay_through(edgeguard, models, THROUGH)
    as_sent = eval_real.replay(edgeguard, models, THROUGH)
    return [(r, eval_real.verdict(j), eval_real.flagged(d)) for r, j, d in zip(THROUGH, judged, as_sent)
            if r["human"] and corpus.judged(r)]


def test_the_through_families_are_every_front_and_family(through):
    fronts = {r["front"] for r, _, _ in through}
    assert fronts == set(PROFILED_FRONTS) | {"squid"}, fronts
    for front in fronts:
        families = {r["family"] for r, _, _ in through if r["front"] == front}
        assert len(families) >= 6 and all(f.endswith("+" + front) for f in families), families


@pytest.mark.parametrize("front", PROFILED_FRONTS)
def test_people_through_a_profiled_front_pass(through, front):
    rows = [(r, v) for r, v, _ in through if r["front"] == front]
    flagged = [(r["family"], r["line"], v) for r, v in rows if v != "passed"]
    assert len(flagged) <= PEOPLE_MAX_FLAGGED * len(rows), "%d of %d flagged through %s: %s" % (
        len(flagged), len(rows), front, flagged[:5])


def test_without_their_profile_people_behind_an_l7_front_are_flagged(through):
    """The recorded rows carry what the hops did: judged as sent, most of
    them are evidence (the issue measured 100 % blocked)."""
    for front in ("nginx", "haproxy-http", "caddy"):
        rows = [as_sent for r, _, as_sent in through if r["front"] == front]
        assert sum(rows) > 0.5 * len(rows), (front, sum(rows), len(rows))


def test_people_behind_a_tls_inspecting_proxy_are_challenged_never_blocked(through):
    rows = [v for r, v, _ in through if r["front"] == "squid"]
    assert rows and "blocked" not in rows, collections.Counter(rows)
