"""scripts/update-verified-bots against a local HTTP server serving fixture
lists in the vendors' format: good lists are written (and load in edgeguard),
and every kind of bad response leaves the files in force untouched."""

import http.server
import json
import subprocess
import sys
import threading

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "update-verified-bots"
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
GOOGLE = {"creationTime": "2026-11-30T15:46:13.000000", "prefixes": [
    {"ipv6Prefix": "2001:db8:4801:7428::/64"}, {"ipv4Prefix": "192.0.2.64/27"}, {"ipv4Prefix": "192.0.2.96/27"}]}
BING = {"creationTime": "2026-11-30T10:00:00", "prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]}


class Server:
    """Serves `routes[path] = (status, bytes)`."""

    def __init__(self):
        self.routes = {}
        routes = self.routes
        self.on_get = lambda path: None
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.on_get(self.path)
                status, body = routes.get(self.path, (404, b"not found"))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    s.routes["/google.json"] = (200, json.dumps(GOOGLE).encode())
    s.routes["/bing.json"] = (200, json.dumps(BING).encode())
    yield s
    s.stop()


def sources(tmp_path, server, google="/google.json", bing="/bing.json"):
    path = tmp_path / "sources.json"
    path.write_text(json.dumps({"bots": [
        {"name": "Googlebot", "tokens": ["Googlebot"], "url": server.url + google},
        {"name": "bingbot", "tokens": ["bingbot"], "url": server.url + bing},
    ]}))
    return path


def run(src, out):
    return subprocess.run([sys.executable, str(SCRIPT), "--sources", str(src), "--output", str(out), "--timeout", "5"],
                          capture_output=True, text=True)


def loads_in_edgeguard(tmp_path, bots):
    """edgeguard itself accepts the file: replay with it over no input."""
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"verified_bots": str(bots)}))
    return subprocess.run([str(EDGEGUARD), "replay", "--config", str(cfg), "--no-progress", "-"],
                          input="", capture_output=True, text=True)


def snapshot(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def test_good_lists_are_written_and_load(tmp_path, server):
    out_dir = tmp_path / "etc"
    out = out_dir / "verified-bots.json"
    r = run(sources(tmp_path, server), out)
    assert r.returncode == 0, r.stderr
    assert "Googlebot (search): 2 IPv4 and 1 IPv6 prefixes" in r.stdout
    bots = json.loads(out.read_text())
    assert [b["name"] for b in bots["bots"]] == ["Googlebot", "bingbot"]
    assert bots["bots"][0]["prefixes"] == "Googlebot.json"
    assert [b["category"] for b in bots["bots"]] == ["search", "search"]
    assert json.loads((out_dir / "Googlebot.json").read_text()) == GOOGLE
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".")], "no temporary file left"
    loaded = loads_in_edgeguard(tmp_path, out)
    assert loaded.returncode == 0, loaded.stderr


@pytest.mark.parametrize("bad,why", [
    ((500, b"oops"), "HTTP 500"),
    ((404, b""), "HTTP 404"),
    ((200, b"<html>maintenance</html>"), "not JSON"),
    ((200, b'{"creationTime": "x"}'), "prefixes: missing"),
    ((200, b'{"prefixes": []}'), "prefixes: empty"),
    ((200, b'{"prefixes": [{"ipv4Prefix": "192.0.2.0/24"}, {"ipv4Prefix": "300.1.2.0/24"}]}'),
     "prefixes[1].ipv4Prefix: invalid prefix"),
    ((200, b'{"prefixes": [{"ipv4Prefix": "2001:db8::/32"}]}'), "prefixes[0].ipv4Prefix: '2001:db8::/32' is not an IPv4"),
    ((200, b'{"prefixes": [{"ipv4Prefix": "192.0.2.0/24", "ipv6Prefix": "2001:db8::/32"}]}'), "exactly one"),
    ((200, b'{"prefixes": ["192.0.2.0/24"]}'), "prefixes[0]: must be an object"),
    ((200, b'{"prefixes": [{"ipv4Prefix": "0.0.0.0/0"}]}'), "prefixes[0].ipv4Prefix: '0.0.0.0/0' is wider than /8"),
    ((200, b'{"prefixes": [{"ipv6Prefix": "2000::/3"}]}'), "prefixes[0].ipv6Prefix: '2000::/3' is wider than /16"),
])
def test_a_bad_response_replaces_nothing(tmp_path, server, bad, why):
    out_dir = tmp_path / "etc"
    out = out_dir / "verified-bots.json"
    assert run(sources(tmp_path, server), out).returncode == 0
    before = snapshot(out_dir)
    # The second list goes bad: the first, good one is not written either.
    server.routes["/bing.json"] = bad
    server.routes["/google.json"] = (200, json.dumps(dict(GOOGLE, prefixes=GOOGLE["prefixes"][:1])).encode())
    r = run(sources(tmp_path, server), out)
    assert r.returncode == 1
    assert "refused, nothing written" in r.stderr and why in r.stderr, r.stderr
    assert server.url + "/bing.json" in r.stderr
    assert snapshot(out_dir) == before
    assert loads_in_edgeguard(tmp_path, out).returncode == 0


def test_unreachable_server_and_bad_sources(tmp_path, server):
    out = tmp_path / "etc" / "verified-bots.json"
    src = tmp_path / "s.json"
    src.write_text(json.dumps({"bots": [{"name": "Googlebot", "tokens": ["Googlebot"],
                                         "url": "http://127.0.0.1:9/none.json"}]}))
    r = run(src, out)
    assert r.returncode == 1 and "127.0.0.1:9/none.json" in r.stderr
    assert not out.exists()
    for bad, why in [({"bots": []}, 'non-empty "bots"'),
                     ({"bots": [{"name": "a b", "tokens": ["abc"], "url": "http://x/"}]}, "bots[0].name"),
                     ({"bots": [{"name": "a", "tokens": ["ab"], "url": "http://x/"}]}, "bots[0].tokens"),
                     ({"bots": [{"name": "a", "tokens": ["abc"], "url": "file:///etc/passwd"}]}, "bots[0].url")]:
        src.write_text(json.dumps(bad))
        r = run(src, out)
        assert r.returncode == 1 and why in r.stderr, r.stderr


# What the other publishers' lists look like: text, one address or block
# per line (UptimeRobot, Pingdom, Stripe, Telegram); GitHub's meta API.
UPTIME = b"192.0.2.10\r\n192.0.2.11\r\n2001:db8:77::1\r\n"
PINGDOM4 = b"# probes\n198.51.100.1\n198.51.100.2  # Dallas\n"
PINGDOM6 = b"2001:db8:99::5\n"
META = {"verifiable_password_authentication": False, "hooks": ["192.0.2.128/27", "2001:db8:4444::/48"], "web": ["203.0.113.0/24"]}


def catalog(tmp_path, server, bots):
    path = tmp_path / "sources.json"
    path.write_text(json.dumps({"bots": [dict(b, url=[server.url + u for u in b["url"]]) for b in bots]}))
    return path


def test_categories_formats_and_merged_lists(tmp_path, server):
    server.routes["/uptime.txt"] = (200, UPTIME)
    server.routes["/pingdom4"] = (200, PINGDOM4)
    server.routes["/pingdom6"] = (200, PINGDOM6)
    server.routes["/meta"] = (200, json.dumps(META).encode())
    hits = []
    server.on_get = hits.append
    src = catalog(tmp_path, server, [
        {"name": "Googlebot", "tokens": ["Googlebot"], "url": ["/google.json"]},
        {"name": "Google-Other", "tokens": ["AdsBot-Google"], "category": "other", "url": ["/google.json"]},
        {"name": "UptimeRobot", "tokens": ["UptimeRobot"], "category": "monitor", "format": "lines", "url": ["/uptime.txt"]},
        {"name": "Pingdom", "tokens": ["Pingdom.com_bot"], "category": "monitor", "format": "lines", "url": ["/pingdom4", "/pingdom6"]},
        {"name": "GitHub-Hookshot", "tokens": ["GitHub-Hookshot"], "category": "webhook", "format": "strings", "key": "hooks", "url": ["/meta"]},
    ])
    out = tmp_path / "etc" / "verified-bots.json"
    r = run(src, out)
    assert r.returncode == 0, r.stderr
    assert "UptimeRobot (monitor): 2 IPv4 and 1 IPv6 prefixes" in r.stdout
    assert "Pingdom (monitor): 2 IPv4 and 1 IPv6 prefixes" in r.stdout
    assert "GitHub-Hookshot (webhook): 1 IPv4 and 1 IPv6 prefixes" in r.stdout
    assert hits.count("/google.json") == 1, "a URL two bots name is fetched once"
    bots = json.loads(out.read_text())
    assert [(b["name"], b["category"]) for b in bots["bots"]] == [
        ("Googlebot", "search"), ("Google-Other", "other"), ("UptimeRobot", "monitor"),
        ("Pingdom", "monitor"), ("GitHub-Hookshot", "webhook")]
    # Google's format written as published; the others converted to it.
    assert json.loads((out.parent / "Googlebot.json").read_text()) == GOOGLE
    pingdom = json.loads((out.parent / "Pingdom.json").read_text())
    assert pingdom["prefixes"] == [{"ipv4Prefix": "198.51.100.1/32"}, {"ipv4Prefix": "198.51.100.2/32"},
                                   {"ipv6Prefix": "2001:db8:99::5/128"}]
    assert pingdom["sources"] == [server.url + "/pingdom4", server.url + "/pingdom6"]
    assert json.loads((out.parent / "GitHub-Hookshot.json").read_text())["prefixes"] == [
        {"ipv4Prefix": "192.0.2.128/27"}, {"ipv6Prefix": "2001:db8:4444::/48"}]
    assert loads_in_edgeguard(tmp_path, out).returncode == 0
    # The categories reach the rules: a monitor passes, a fake is caught.
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"preset": "monitors"}, {"preset": "webhooks"},
                                           {"name": "fakes", "when": {"bot": {"verdict": "fake"}}, "action": "block"}]}))
    lines = [
        {"method": "GET", "uri": "/health", "version": "1.1", "client": "2001:db8:77::1",
         "headers": [["user-agent", "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)"]]},
        {"method": "POST", "uri": "/hook", "version": "1.1", "client": "192.0.2.130",
         "headers": [["user-agent", "GitHub-Hookshot/044aadd"]]},
        {"method": "GET", "uri": "/health", "version": "1.1", "client": "203.0.113.5",
         "headers": [["user-agent", "UptimeRobot/2.0"]]},
    ]
    ev = subprocess.run([str(EDGEGUARD), "rules", "eval", "--bots", str(out), str(rules)],
                        input="\n".join(json.dumps(x) for x in lines), capture_output=True, text=True)
    assert ev.returncode == 0, ev.stderr
    got = [json.loads(x)["rule"] for x in ev.stdout.splitlines()]
    assert got == ["monitors/verified", "webhooks/verified", "fakes"]


@pytest.mark.parametrize("route,body,fmt,why", [
    ("/uptime.txt", b"192.0.2.1\n<html>oops</html>\n", "lines", "uptime.txt: line 2: invalid prefix '<html>oops</html>'"),
    ("/uptime.txt", b"# nothing yet\n", "lines", "lists no address"),
    ("/uptime.txt", b"\xff\xfe", "lines", "not UTF-8 text"),
    ("/uptime.txt", b"0.0.0.0/1\n", "lines", "line 1: '0.0.0.0/1' is wider than /8"),
    ("/meta", b'{"web": []}', "strings", "hooks: missing or not an array"),
    ("/meta", b'{"hooks": []}', "strings", "hooks: empty"),
    ("/meta", b'{"hooks": [5]}', "strings", "hooks[0]: must be a string"),
    ("/meta", b'{"hooks": ["nope"]}', "strings", "hooks[0]: invalid prefix 'nope'"),
])
def test_bad_lists_in_other_formats_replace_nothing(tmp_path, server, route, body, fmt, why):
    server.routes[route] = (200, b"192.0.2.1\n" if fmt == "lines" else json.dumps(META).encode())
    bot = {"name": "X-bot", "tokens": ["X-bot"], "category": "monitor", "format": fmt, "url": [route]}
    if fmt == "strings":
        bot["key"] = "hooks"
    src = catalog(tmp_path, server, [bot])
    out = tmp_path / "etc" / "verified-bots.json"
    assert run(src, out).returncode == 0
    before = snapshot(out.parent)
    server.routes[route] = (200, body)
    r = run(src, out)
    assert r.returncode == 1 and why in r.stderr, r.stderr
    assert snapshot(out.parent) == before


def test_category_filter_and_bad_sources(tmp_path, server):
    server.routes["/uptime.txt"] = (200, UPTIME)
    src = catalog(tmp_path, server, [
        {"name": "Googlebot", "tokens": ["Googlebot"], "url": ["/google.json"]},
        {"name": "UptimeRobot", "tokens": ["UptimeRobot"], "category": "monitor", "format": "lines", "url": ["/uptime.txt"]},
    ])
    out = tmp_path / "etc" / "verified-bots.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--sources", str(src), "--output", str(out), "--categories", "monitor"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [b["name"] for b in json.loads(out.read_text())["bots"]] == ["UptimeRobot"]
    for cats, why in [("robots", "'robots' is not one of"), ("feed", "no source of feed")]:
        r = subprocess.run([sys.executable, str(SCRIPT), "--sources", str(src), "--output", str(out), "--categories", cats],
                           capture_output=True, text=True)
        assert r.returncode == 1 and why in r.stderr, r.stderr
    for bad, why in [({"bots": [{"name": "a", "tokens": ["abc"], "url": "http://x/", "category": "robot"}]}, "bots[0].category"),
                     ({"bots": [{"name": "a", "tokens": ["abc"], "url": "http://x/", "format": "csv"}]}, "bots[0].format"),
                     ({"bots": [{"name": "a", "tokens": ["abc"], "url": "http://x/", "format": "strings"}]}, "bots[0].key"),
                     ({"bots": [{"name": "a", "tokens": ["abc"], "url": []}]}, "bots[0].url"),
                     ({"bots": [{"name": "a", "tokens": ["abc"], "url": "http://x/", "colour": 1}]}, "bots[0].colour: unknown field")]:
        src.write_text(json.dumps(bad))
        r = run(src, out)
        assert r.returncode == 1 and why in r.stderr, r.stderr


def test_the_shipped_catalog_is_valid():
    """nginx-conf/verified-bots-sources.json: checked offline as the script
    checks a sources file (its lists are fetched only by an operator)."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("update_verified_bots", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sources = json.loads((ROOT / "nginx-conf" / "verified-bots-sources.json").read_text())
    bots = mod.check_sources(sources)
    assert {b["category"] for b in bots} >= {"search", "ai-crawler", "ai-assistant", "feed", "preview", "monitor", "webhook"}
    assert all(u.startswith("https://") for b in bots for u in b["urls"])
    # No token is another's substring in an order that would shadow it.
    tokens = [(i, t) for i, b in enumerate(bots) for t in b["tokens"]]
    for i, t in tokens:
        for j, u in tokens:
            assert i == j or not (t in u and i < j), (t, u)


def test_the_shipped_example_loads(tmp_path):
    """nginx-conf/verified-bots.json: documentation prefixes only."""
    example = ROOT / "nginx-conf" / "verified-bots.json"
    assert loads_in_edgeguard(tmp_path, example).returncode == 0
    text = example.read_text()
    assert "developers.google.com/static/search/apis/ipranges/googlebot.json" in text
    assert "www.bing.com/toolbox/bingbot.json" in text
    import ipaddress
    docs = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")]
    for bot in json.loads(text)["bots"]:
        for p in bot["prefixes"]["prefixes"]:
            net = ipaddress.ip_network(p.get("ipv4Prefix") or p["ipv6Prefix"])
            assert any(net.version == d.version and net.subnet_of(d) for d in docs), net
