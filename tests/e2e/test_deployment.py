"""Issue 38's targets behind real front proxies, on 127.0.0.1.

scripts/deployment-measure.py starts each deployment (an edgeguard nginx,
the shipped nginx.conf in block mode, configured for its front as
docs/deployment.md says, behind an nginx load balancer, HAProxy `mode
http`, Caddy, HAProxy `mode tcp` with PROXY protocol v2 plain and over TLS,
and Squid with ssl-bump on the client's side), sends the corpus' people,
live Chromium and Firefox ESR, and scripts through each, and counts what
edgeguard decided. This module runs it once and holds the counts to the
issue's targets, which the build before deployment profiles and graded
verdicts misses (models/README.md, "Behind front proxies", has both
tables):

- people through each L7 proxy and the PROXY-protocol balancer: at most
  0.1 % of judged requests flagged (neither blocked nor challenged);
- behind the TLS-inspecting proxy: none blocked in block mode, challenged
  instead, and every live browser solves its challenge;
- scripts through every front: at least 99 % flagged, as direct;
- a forged JA4 header from an untrusted address changes nothing and never
  reaches the origin.
"""

import importlib.util
import time

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("deployment_measure", ROOT / "scripts" / "deployment-measure.py")
measure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(measure)
proxies = measure.proxies

MISSING = proxies.available() + [name for name, path in (
    ("chromium", measure.CHROMIUM), ("chromium-driver", measure.CHROMEDRIVER), ("xvfb", measure.XVFB),
    ("firefox-esr", measure.FIREFOX)) if not path]
try:
    import selenium  # noqa: F401
except ImportError:
    MISSING.append("selenium")
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (make deps-test)")

# The fronts people reach edgeguard through with a documented profile.
PROFILED = ("nginx", "haproxy-http", "caddy", "haproxy-tcp", "haproxy-tcp-tls")
PEOPLE_MAX_FLAGGED = 0.001
SCRIPTS_MIN_FLAGGED = 0.99
SOLVED_MIN = 0.99
BUDGET_SECONDS = 240


@pytest.fixture(scope="module")
def result():
    t0 = time.monotonic()
    got = measure.measure(log=print)
    got["seconds"] = time.monotonic() - t0
    print(measure.summary_table(got))
    print(measure.table(got))
    return got


def counts(result, route, kind, source=None):
    key = (route, kind) if source is None else (route, kind, source)
    return measure.summary(result)[key]


def families(result, route, kind):
    return [c for c in result["counts"] if c["route"] == route and c["kind"] == kind]


def show(rows):
    return "\n".join(f'  {c["family"]}: {c.get("flagged", 0)}/{c.get("judged", 0)} flagged, '
                     f'{c.get("blocked", 0)} blocked, {c.get("challenged", 0)} challenged' for c in rows)


def test_every_request_got_edgeguards_answer_in_time(result):
    """No front answered in edgeguard's place, no edge logged an error, and
    the whole run fits the test budget."""
    unanswered = [c for c in result["counts"] if c.get("unanswered")]
    assert not unanswered, show(unanswered)
    assert not result["errors"], "\n".join(result["errors"][:20])
    assert result["seconds"] < BUDGET_SECONDS, result["seconds"]


def test_every_route_carried_people_and_scripts(result):
    """A route with nothing measured proves nothing: each carried corpus
    rows (but the TLS-only one) or live browsers, and scripts."""
    for route in result["routes"]:
        people = counts(result, route, "people")
        assert people["judged"] > 0, route
        assert counts(result, route, "scripts")["judged"] > 0, route
        if route != "haproxy-tcp-tls":
            assert counts(result, route, "people", "corpus")["judged"] > 1000, route


def test_squid_reaches_the_edge_with_its_own_tls(result):
    """Through Squid, nginx sees Squid's OpenSSL ClientHello, never the
    client's: the case the TLS-inspecting proxy stands for."""
    assert set(result["squid_tls_families"]) == {"openssl"}, result["squid_tls_families"]


def test_the_edge_judges_the_client_not_the_front(result):
    """The documented realip lines make the rows' own address (they come
    from measure.CLIENT) the edge's $remote_addr behind every front; behind
    Squid, which nobody trusts, the client is Squid."""
    for route, seen in result["row_clients"].items():
        want = "127.0.0.1" if route == "squid" else measure.CLIENT
        assert set(seen) == {want}, (route, seen)


def test_straight_to_nginx_people_pass(result):
    direct = counts(result, "direct", "people")
    assert direct["flagged"] == 0, show(families(result, "direct", "people"))


@pytest.mark.parametrize("route", PROFILED)
def test_people_pass_through_each_profiled_front(result, route):
    people = counts(result, route, "people")
    assert people["flagged"] <= PEOPLE_MAX_FLAGGED * people["judged"], (
        f"{people['flagged']} of {people['judged']} people's requests flagged through {route}:\n"
        + show(families(result, route, "people")))
    live = counts(result, route, "people", "live")
    assert live["sessions"] > 0 and live["reached"] == live["sessions"], live


def test_people_behind_a_tls_inspecting_proxy_are_challenged_not_blocked(result):
    people = counts(result, "squid", "people")
    assert people["blocked"] == 0, show(families(result, "squid", "people"))
    # Whoever is flagged is challenged; a live browser then solves it.
    assert people["challenged"] == people["flagged"]
    live = counts(result, "squid", "people", "live")
    assert live["sessions"] >= 2 * measure.SQUID_ROUNDS, live
    assert live["solved"] >= SOLVED_MIN * live["challenged_sessions"], live
    assert live["reached"] == live["sessions"], live


@pytest.mark.parametrize("route", ("direct",) + PROFILED + ("squid",))
def test_scripts_are_flagged_through_every_front(result, route):
    rows = families(result, route, "scripts")
    names = {c["family"] for c in rows}
    assert {"curl", "python-requests", "bare-mozilla", "chromium-headless"} <= names, names
    missed = [c for c in rows if c.get("flagged", 0) < SCRIPTS_MIN_FLAGGED * c.get("judged", 0)
              or not c.get("judged")]
    assert not missed, show(missed)


def test_a_forged_fingerprint_header_changes_nothing_and_never_reaches_the_origin(result):
    forged = result["forged"]
    assert {f["edge"] for f in forged} == {"cloudfront", "generic"}
    for f in forged:
        assert not f["reached_origin"], f
        # The score as the edge logged it (a blocked request's never reaches
        # the origin), and the client address it judged: the untrusted one.
        assert len(f["score"]) == 1 and f["score"][0], f
        assert f["client_seen"] == [measure.UNTRUSTED], f
        assert (f["forged_status"], f["forged_action"], f["forged_score"]) == (
            f["status"], f["action"], f["score"]), f
