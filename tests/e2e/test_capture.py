"""The real-client capture harness (models/capture/) end to end, with the
clients every test machine has (curl, Python's urllib): nginx records them
through resty.edgeguard.record, the harness labels them, and what it writes
is the request-line format `edgeguard features` and `edgeguard replay` read,
with the very header arrays the clients sent.

Also holds the committed corpus (tests/fixtures/real_clients/) to its
documented shape; whether the models pass or flag its rows is tested with
the models, not here.
"""

import collections
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "models" / "capture" / "capture.py"
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
CORPUS = ROOT / "tests" / "fixtures" / "real_clients"

LABELS = ("label", "class", "client_name", "client_version", "mode", "window", "driver", "origin",
          "session", "protocol", "flow", "dest", "seq")
CLASSES = {"human", "scripted", "headless", "byte-identical", "impersonation", "copied-headers"}
DESTS = {"document", "iframe", "script", "style", "font", "img", "favicon", "api", "api-cross",
         "preflight", "form-post", "robots", "static"}


def curl_version():
    return subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split()[1]


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.fail("openssl is needed for the capture's TLS origins (make deps-test installs it)")
    out = tmp_path_factory.mktemp("capture")
    p = subprocess.run(
        [sys.executable, str(CAPTURE), "--out", str(out), "--quiet", "0.5",
         "--only", "curl-ip", "--only", "curl-tls-h2", "--only", "python-urllib-tls-h1"],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "nginx error log" not in p.stderr, p.stderr
    rows = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    manifest = json.loads((out / "manifest.json").read_text())
    return out, rows, manifest


def host_of(manifest, origin, name):
    port = manifest["ports"][origin]
    default = 443 if origin.startswith("tls") else 80
    return name if port == default else f"{name}:{port}"


def test_every_session_ran_and_is_labelled(captured):
    _, rows, manifest = captured
    assert [s["id"] for s in manifest["sessions"]] == ["curl-ip", "curl-tls-h2", "python-urllib-tls-h1"]
    assert all(s["status"] == "ok" for s in manifest["sessions"]), manifest["sessions"]
    by_session = collections.Counter(r["session"] for r in rows)
    assert by_session == {s["id"]: s["requests"] for s in manifest["sessions"]}
    for r in rows:
        assert r["label"] == "automated" and r["class"] == "scripted" and r["flow"] == "script"
        assert r["client"] == "127.0.0.1"
    assert [s["client_version"] for s in manifest["sessions"]][:2] == [curl_version()] * 2


def test_curl_heads_are_what_curl_sends(captured):
    _, rows, manifest = captured
    ua = f"curl/{curl_version()}"
    ip = [r for r in rows if r["session"] == "curl-ip"]
    assert [(r["method"], r["uri"], r["status"], r["dest"]) for r in ip] == [
        ("GET", "/", 200, "document"),
        ("GET", "/products/42", 200, "document"),
        ("GET", "/api/cart", 200, "api"),
        ("POST", "/login", 303, "form-post"),
    ]
    host = host_of(manifest, "ip", "127.0.0.1")
    assert ip[0]["headers"] == [["Host", host], ["User-Agent", ua], ["Accept", "*/*"]]
    assert ip[0]["version"] == ip[0]["protocol"] == "HTTP/1.1"
    assert ip[3]["headers"] == [["Host", host], ["User-Agent", ua], ["Accept", "*/*"], ["Content-Length", "41"],
                                ["Content-Type", "application/x-www-form-urlencoded"]]
    # HTTP/2 over TLS: lower-case names, :authority arriving as host.
    h2 = [r for r in rows if r["session"] == "curl-tls-h2"]
    expected_host = "shop.test" if manifest["hosts_resolve"] else "127.0.0.1"
    assert h2[0]["version"] == "HTTP/2.0"
    assert h2[0]["headers"] == [["host", host_of(manifest, "tls-h2", expected_host)], ["user-agent", ua],
                                ["accept", "*/*"]]


def test_urllib_over_tls_http11(captured):
    _, rows, manifest = captured
    got = [r for r in rows if r["session"] == "python-urllib-tls-h1"]
    # The four requests, and urllib following the 303 to /account.
    assert [(r["method"], r["uri"], r["status"]) for r in got] == [
        ("GET", "/", 200), ("GET", "/products/42", 200), ("GET", "/api/cart", 200),
        ("POST", "/login", 303), ("GET", "/account", 200)]
    name = ("shop-h1.test" if manifest["namespace"] == "net" else "shop.test") if manifest["hosts_resolve"] \
        else "127.0.0.1"
    host = ["Host", host_of(manifest, "tls-h1", name)]
    ua = ["User-Agent", "Python-urllib/%d.%d" % sys.version_info[:2]]
    assert got[0]["headers"] == [["Accept-Encoding", "identity"], host, ua, ["Connection", "close"]]
    assert got[3]["headers"] == [["Accept-Encoding", "identity"],
                                 ["Content-Type", "application/x-www-form-urlencoded"],
                                 ["Content-Length", "41"], host, ua, ["Connection", "close"]]
    assert {r["version"] for r in got} == {"HTTP/1.1"}


def test_tls_rows_carry_the_connections_fingerprint(captured):
    """Every request over TLS keeps the JA4 and family nginx computed in its
    ClientHello callback (the same on every request of the session: one
    client, one library); plain HTTP has none."""
    _, rows, _ = captured
    for r in rows:
        if r["origin"].startswith("tls"):
            assert len(r["edgeguard_ja4"]) == 36 and r["edgeguard_ja4"][0] == "t", r
            assert r["edgeguard_tls_family"] == "openssl", r  # curl and Python: OpenSSL 3
        else:
            assert "edgeguard_ja4" not in r and "edgeguard_tls_family" not in r, r
    for session in ("curl-tls-h2", "python-urllib-tls-h1"):
        assert len({r["edgeguard_ja4"] for r in rows if r["session"] == session}) == 1, session
    # curl offers h2 first; urllib offers no ALPN at all.
    assert {r["edgeguard_ja4"][8:10] for r in rows if r["session"] == "curl-tls-h2"} == {"h2"}
    assert {r["edgeguard_ja4"][8:10] for r in rows if r["session"] == "python-urllib-tls-h1"} == {"00"}


@pytest.mark.skipif(not EDGEGUARD.exists(), reason="needs make build")
def test_edgeguard_reads_the_capture(captured):
    out, rows, _ = captured
    corpus = out / "corpus.jsonl"
    feats = subprocess.run([str(EDGEGUARD), "features"], stdin=corpus.open("rb"), capture_output=True, text=True)
    assert feats.returncode == 0, feats.stderr
    assert len(feats.stdout.splitlines()) == len(rows)
    config = ROOT / "nginx-conf" / "record.json"
    rep = subprocess.run([str(EDGEGUARD), "replay", "--config", str(config), "--no-progress", str(corpus)],
                         capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    assert f"{len(rows)} requests" in rep.stderr and "parse errors: 0" in rep.stderr, rep.stderr


def test_committed_corpus_has_its_documented_shape():
    rows = [json.loads(line) for line in (CORPUS / "corpus.jsonl").read_text().splitlines()]
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    sessions = {s["id"]: s for s in manifest["sessions"]}
    assert 300 <= len(rows) <= 2500
    counts = collections.Counter(r["session"] for r in rows)
    for sid, s in sessions.items():
        assert s["status"] == "ok", s
        assert counts[sid] == s["requests"] > 0, sid
    for r in rows:
        assert set(LABELS) <= set(r), r
        assert r["class"] in CLASSES and r["dest"] in DESTS, r
        assert (r["label"] == "human") == (r["class"] == "human"), r
        assert r["version"] == r["protocol"] and r["version"] in ("HTTP/1.1", "HTTP/2.0"), r
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in r["headers"]), r
        # TLS facts exactly on the TLS origins (every client there sent a ClientHello).
        assert ("edgeguard_ja4" in r) == r["origin"].startswith("tls"), r
        if "edgeguard_ja4" in r:
            assert len(r["edgeguard_ja4"]) == 36 and r["edgeguard_tls_family"] in (
                "boringssl", "nss", "openssl", "go", "unknown"), r
    # People are the headful browsers only; each engine on every origin,
    # over both protocols where the origin offers them.
    humans = {(r["client_name"], r["mode"], r["origin"], r["protocol"]) for r in rows if r["label"] == "human"}
    for engine in ("chromium", "firefox"):
        for origin in ("ip", "http-host", "tls-h1"):
            assert (engine, "headful", origin, "HTTP/1.1") in humans
        assert (engine, "headful", "tls-h2", "HTTP/2.0") in humans
    assert {r["mode"] for r in rows if r["label"] == "human"} == {"headful"}
    flows = {r["flow"] for r in rows if r["label"] == "human"}
    assert {"typed", "reload", "link", "back", "form-get", "form-post", "second-visit", "return-visit"} <= flows
