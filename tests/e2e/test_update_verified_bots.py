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

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
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
    assert "Googlebot: 2 IPv4 and 1 IPv6 prefixes" in r.stdout
    bots = json.loads(out.read_text())
    assert [b["name"] for b in bots["bots"]] == ["Googlebot", "bingbot"]
    assert bots["bots"][0]["prefixes"] == "Googlebot.json"
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


def test_the_shipped_example_loads(tmp_path):
    """nginx-conf/verified-bots.json: documentation prefixes only."""
    example = ROOT / "nginx-conf" / "verified-bots.json"
    assert loads_in_edgeguard(tmp_path, example).returncode == 0
    text = example.read_text()
    assert "developers.google.com/static/search/apis/ipranges/googlebot.json" in text
    assert "www.bing.com/toolbox/bingbot.json" in text
    import ipaddress
    docs = [ipaddress.ip_network("192.0.2.0/24"), ipaddress.ip_network("2001:db8::/32")]
    for bot in json.loads(text)["bots"]:
        for p in bot["prefixes"]["prefixes"]:
            net = ipaddress.ip_network(p.get("ipv4Prefix") or p["ipv6Prefix"])
            assert any(net.version == d.version and net.subnet_of(d) for d in docs), net
