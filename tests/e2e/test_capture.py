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
import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "models" / "capture" / "capture.py"
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
CORPUS = ROOT / "tests" / "fixtures" / "real_clients"

# The capture's site map, by path: tests/e2e/sitemap.py (the page-invariance
# test's) is another module of the same name in the same pytest run.
_spec = importlib.util.spec_from_file_location("capture_sitemap", ROOT / "models" / "capture" / "sitemap.py")
sitemap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sitemap)

LABELS = ("label", "class", "client_name", "client_version", "mode", "window", "driver", "origin",
          "session", "protocol", "flow", "dest", "seq", "family", "engine_version", "webdriver", "lang",
          "device", "url_kind", "scope")
CLASSES = {"human", "scripted", "headless", "byte-identical", "impersonation", "copied-headers"}
DESTS = {"document", "iframe", "script", "style", "font", "img", "favicon", "api", "api-cross",
         "preflight", "form-post", "robots", "static", "media"}
# People's engine families, each on every origin kind.
FAMILIES = ("chromium-linux", "chromium-mobile-emulated", "firefox", "firefox-rfp", "webkitgtk", "qtwebengine")
PERSON_FLOWS = {"typed", "bookmark", "reload", "hard-reload", "link", "back", "forward", "form-get",
                "form-post", "download", "from-search", "from-link", "second-visit", "return-visit"}
PAGE_KINDS = {"home", "index-html", "product", "product-query", "category", "cart", "article", "news",
              "docs", "search", "login", "account", "account-deep", "localized", "forum", "file", "download",
              "deep", "media", "asset", "api", "data", "embed", "favicon"}
# flows.py gained the category steps ("keep shopping", its next page) after
# the committed corpus was captured: the next `make capture` has them.
NOT_YET_CAPTURED = {"category"}


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
    # The old three paths, then the wider site's article, product with a
    # query and docs page, then the form POST.
    assert [(r["method"], r["uri"], r["status"], r["dest"], r["url_kind"]) for r in ip] == [
        ("GET", "/", 200, "document", "home"),
        ("GET", "/products/42", 200, "document", "product"),
        ("GET", "/api/cart", 200, "api", "api"),
        ("GET", "/blog/2024/05/post-title", 200, "document", "article"),
        ("GET", "/en-us/products/shoes/air-max-90?color=red&size=10", 200, "document", "product-query"),
        ("GET", "/docs/v2/getting-started.html", 200, "document", "docs"),
        ("POST", "/login", 303, "form-post", "login"),
    ]
    assert [r["scope"] for r in ip] == ["base"] * 3 + ["wider"] * 3 + ["base"]
    host = host_of(manifest, "ip", "127.0.0.1")
    assert ip[0]["headers"] == [["Host", host], ["User-Agent", ua], ["Accept", "*/*"]]
    assert ip[0]["version"] == ip[0]["protocol"] == "HTTP/1.1"
    assert ip[-1]["headers"] == [["Host", host], ["User-Agent", ua], ["Accept", "*/*"], ["Content-Length", "41"],
                                 ["Content-Type", "application/x-www-form-urlencoded"]]
    for r in ip:
        assert (r["family"], r["webdriver"], r["lang"], r["device"]) == ("curl", False, "-", "-"), r
    # HTTP/2 over TLS: lower-case names, :authority arriving as host.
    h2 = [r for r in rows if r["session"] == "curl-tls-h2"]
    expected_host = "shop.test" if manifest["hosts_resolve"] else "127.0.0.1"
    assert h2[0]["version"] == "HTTP/2.0"
    assert h2[0]["headers"] == [["host", host_of(manifest, "tls-h2", expected_host)], ["user-agent", ua],
                                ["accept", "*/*"]]


def test_urllib_over_tls_http11(captured):
    _, rows, manifest = captured
    got = [r for r in rows if r["session"] == "python-urllib-tls-h1"]
    # The GETs, the POST, and urllib following the 303 to /account.
    assert [(r["method"], r["uri"], r["status"]) for r in got] == [
        ("GET", p, 200) for p in sitemap.SCRIPT_PATHS] + [("POST", "/login", 303), ("GET", "/account", 200)]
    name = ("shop-h1.test" if manifest["namespace"] == "net" else "shop.test") if manifest["hosts_resolve"] \
        else "127.0.0.1"
    host = ["Host", host_of(manifest, "tls-h1", name)]
    ua = ["User-Agent", "Python-urllib/%d.%d" % sys.version_info[:2]]
    assert got[0]["headers"] == [["Accept-Encoding", "identity"], host, ua, ["Connection", "close"]]
    assert got[-2]["headers"] == [["Accept-Encoding", "identity"],
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
    assert 300 <= len(rows) <= 20000
    counts = collections.Counter(r["session"] for r in rows)
    for sid, s in sessions.items():
        assert s["status"] == "ok", s
        assert counts[sid] == s["requests"] > 0, sid
        # Every step reached the page it was for (manifest: missed_steps).
        assert "missed_steps" not in s, s
    for r in rows:
        assert set(LABELS) <= set(r), r
        assert r["class"] in CLASSES and r["dest"] in DESTS, r
        assert (r["label"] == "human") == (r["class"] == "human"), r
        assert r["version"] == r["protocol"] and r["version"] in ("HTTP/1.1", "HTTP/2.0"), r
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in r["headers"]), r
        assert r["url_kind"] == sitemap.url_kind(r["uri"]) and r["scope"] in ("base", "wider"), r
        assert isinstance(r["webdriver"], bool), r
        # TLS facts exactly on the TLS origins (every client there sent a ClientHello).
        assert ("edgeguard_ja4" in r) == r["origin"].startswith("tls"), r
        if "edgeguard_ja4" in r:
            assert len(r["edgeguard_ja4"]) == 36 and r["edgeguard_tls_family"] in (
                "boringssl", "nss", "openssl", "go", "unknown"), r
    people = [r for r in rows if r["label"] == "human"]
    assert {r["mode"] for r in people} == {"headful"}
    # Every engine family of people on every origin, over both protocols
    # where the origin offers them, driven with and without WebDriver.
    seen = {(r["family"], r["origin"], r["protocol"]) for r in people}
    for family in FAMILIES:
        for origin in ("ip", "http-host", "tls-h1"):
            assert (family, origin, "HTTP/1.1") in seen, (family, origin)
        assert (family, "tls-h2", "HTTP/2.0") in seen, family
    assert {r["webdriver"] for r in people} == {True, False}
    assert {r["family"] for r in people if not r["webdriver"]} == {"webkitgtk", "qtwebengine"}
    # Each family makes every flow of a person's visit and opens every kind
    # of page of the site map; several language profiles.
    # (Forward is made by every browser, but most answer it from their
    # back/forward cache: only QtWebEngine asks the server again.)
    assert PERSON_FLOWS <= {r["flow"] for r in people}
    for family in FAMILIES:
        mine = [r for r in people if r["family"] == family]
        assert PERSON_FLOWS - {"forward"} <= {r["flow"] for r in mine}, family
        assert PAGE_KINDS - NOT_YET_CAPTURED <= {r["url_kind"] for r in mine}, family
        assert {"en-US", "de-DE"} <= {r["lang"] for r in mine} or family == "firefox-rfp", family
    assert {"en-US", "de-DE", "fr-FR"} <= {r["lang"] for r in people}
    # Media range requests, cross-site arrivals with their referrers.
    assert any(r["dest"] == "media" and any(k.lower() == "range" for k, _ in r["headers"]) for r in people)
    # The search engine's policy is `origin`; the blog's is each browser's
    # default (QtWebEngine 5.15 sends the blog page's full URL).
    for flow, referer in (("from-search", "https://search.test/"), ("from-link", "http://blog.test/")):
        arrivals = [r for r in people if r["flow"] == flow and r["dest"] == "document"]
        assert arrivals and all(any(k.lower() == "referer" and v.startswith(referer) for k, v in r["headers"])
                                for r in arrivals if r["origin"] != "ip" or flow == "from-link"), flow
    # The old capture's kind of rows is still there for the tests that hold
    # the shipped model to it (tests/e2e/test_real_clients.py).
    assert {r["family"] for r in people if r["scope"] == "base"} == {"chromium-linux", "firefox"}


def test_url_kinds_and_the_site_map():
    """Every page the site map writes links only to pages, files and
    handlers that exist, and url_kind names each kind of URL."""
    import html.parser
    import tempfile

    kinds = {
        "/": "home", "/index.html": "index-html", sitemap.ARTICLE: "article", sitemap.NEWS: "news",
        sitemap.PRODUCT_QUERY: "product-query", "/en-us/products/shoes/air-max-90": "product",
        sitemap.CATEGORY: "category", sitemap.CART: "cart", sitemap.DOCS: "docs", sitemap.DOCS_INDEX: "docs",
        "/search?q=x": "search", "/docs/v2/search?q=x": "search", "/login": "login", "/account": "account",
        sitemap.ACCOUNT_ORDERS: "account-deep", sitemap.LOCALIZED_DE: "localized",
        sitemap.LOCALIZED_DE_ABOUT: "localized", sitemap.LOCALIZED_FR: "localized", sitemap.FORUM: "forum",
        sitemap.PDF: "file", sitemap.ZIP: "download", sitemap.DEEP: "deep", sitemap.VIDEO: "media",
        "/static/site.css": "asset", "/img/icons/cart.svg": "asset", "/api/cart": "api",
        "/docs/v2/search-index.json": "data", "/embed/widget": "embed", "/favicon.ico": "favicon",
        "/robots.txt": "robots", "/products/42": "product",
    }
    assert {u: sitemap.url_kind(u) for u in kinds} == kinds

    dynamic = {"/search", "/docs/v2/search", "/de-de/suche", "/fr/recherche", "/login", "/account",
               "/en-us/cart", "/embed/widget", "/forum/thread/88123/reply", "/api/"}

    class Links(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.urls = []

        def handle_starttag(self, tag, attrs):
            self.urls += [v for k, v in attrs if k in ("href", "src", "action") and v]

    with tempfile.TemporaryDirectory() as tmp:
        site = pathlib.Path(tmp) / "site"
        sitemap.build(site, media=False)
        pages = list(site.rglob("*.html"))
        assert len(pages) >= 25
        for page in pages:
            links = Links()
            links.feed(page.read_text(encoding="utf-8"))
            for url in links.urls:
                path = urllib.parse.unquote(url.split("?", 1)[0].split("#", 1)[0])
                if path in dynamic or path.startswith("/api/") or path in sitemap.MEDIA:
                    continue
                target = site / path.lstrip("/")
                assert (target.is_file() or target.with_name(target.name + ".html").is_file()
                        or (target / "index.html").is_file() or path == "/"), (page, url)
