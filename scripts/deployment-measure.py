#!/usr/bin/env python3
"""People and scripts through real front proxies into edgeguard (issue 38).

Starts, on 127.0.0.1, one edgeguard nginx (nginx-conf/nginx.conf in block
mode, configured for its front as docs/deployment.md says) per deployment
and the front itself: an nginx load balancer, HAProxy `mode http`, HAProxy
`mode tcp` with PROXY protocol v2 (plain and TLS), Caddy `reverse_proxy`,
and Squid with ssl-bump on the client side (a TLS-inspecting gateway in
front of the edge's own TLS listener); plus the edge with no front
(`direct`). Then sends through each:

- the people's rows of tests/fixtures/real_clients/corpus.jsonl, each as its
  browser sent it: HTTP/1.1 rows as raw bytes (order and letter case kept)
  on keep-alive connections, HTTP/2 rows over h2c with prior knowledge
  (the front speaks HTTP/2 to the client and HTTP/1.1 to the edge, as with
  a browser over h2); through Squid (HTTPS, HTTP/1.1 only) the rows
  captured over TLS and HTTP/1.1 (SQUID_ORIGIN);
- live browsers: Debian's Chromium and Firefox ESR, headful under Xvfb;
- scripts: curl, python-requests, Go net/http, Node's fetch, headless
  Chromium (HeadlessChrome in its User-Agent) and a bare `Mozilla/5.0`.

Each request's decision comes back in a response header the measuring edge
adds (rows) or from the edge's access log (browsers and scripts). Prints
the table models/README.md shows ("Behind front proxies") and, with
--json, writes the counts for tests/e2e/test_deployment.py.

    python3 scripts/deployment-measure.py [--json out.json] [--no-browsers] [--record DIR]
"""

import argparse
import collections
import concurrent.futures
import http.client
import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "models"))
sys.path.insert(0, str(ROOT / "models" / "capture"))

import display  # noqa: E402  (models/capture: the capture's X server)
import h2c  # noqa: E402
import proxies  # noqa: E402

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")
XVFB = shutil.which("Xvfb")
CURL = shutil.which("curl")
GO = shutil.which("go")
NODE = shutil.which("node")
CORPUS = ROOT / "tests" / "fixtures" / "real_clients" / "corpus.jsonl"

FLAGGED = ("block", "challenge")
# The address the hostile client sends from: not a trusted hop.
UNTRUSTED = "127.0.0.2"
# The address people's corpus rows come from (the fronts' peer is
# 127.0.0.1): realip set up as documented makes it the edge's client.
CLIENT = "127.0.0.23"


def connect(port):
    """A TCP connection to 127.0.0.1:port from CLIENT."""
    return socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(CLIENT, 0))
TRUSTED = "127.0.0.1/32"


# ---------------------------------------------------------------- deployments

def documented():
    """Whether the library has deployment profiles (issue 38's hop branch):
    then each edge is configured as docs/deployment.md says; before, with
    nginx's own realip lines only, as the issue measured."""
    return proxies.has_option("trusted_proxies") and proxies.has_option("proxy_profile")


def l7_edge(name, profile, record=False):
    """An edge behind an HTTP reverse proxy that appends X-Forwarded-For:
    docs/deployment.md's realip lines, `trusted_proxies` and the front's
    `proxy_profile` (without profiles in the build, the realip lines only)."""
    configure = ""
    if documented():
        configure = f'            trusted_proxies = {{ "{TRUSTED}" }},\n            proxy_profile = "{profile}",'
    server = f"""
set_real_ip_from {TRUSTED};
real_ip_header X-Forwarded-For;
real_ip_recursive on;
"""
    return proxies.Edge(name, ["listen 127.0.0.1:{h1};"], ["h1"], configure=configure, server=server,
                        record=record)


def pp_edge(pki, record=False):
    """An edge behind an L4 balancer sending the PROXY protocol: it sees the
    client's own bytes and TLS. docs/deployment.md: realip from the PROXY
    header, the profile `direct` (the default: no option)."""
    server = f"""
set_real_ip_from {TRUSTED};
real_ip_header proxy_protocol;
"""
    return proxies.Edge("haproxy-tcp", ["listen 127.0.0.1:{h1} proxy_protocol;",
                                        "listen 127.0.0.1:{h2} proxy_protocol http2;",
                                        "listen 127.0.0.1:{tls} ssl http2 proxy_protocol;"],
                        ["h1", "h2", "tls"], server=server, tls=pki, record=record)


def direct_edge(pki, record=False):
    """The edge with no front: plain, h2c and TLS listeners (Squid, on the
    client's side, connects to the TLS one like any client)."""
    return proxies.Edge("direct", ["listen 127.0.0.1:{h1};", "listen 127.0.0.1:{h2} http2;",
                                   "listen 127.0.0.1:{tls} ssl http2;"], ["h1", "h2", "tls"], tls=pki, record=record)


def forged_edges():
    """Edges trusting 127.0.0.1 for a JA4 header: CloudFront's, and a
    configured one (generic profile)."""
    out = {}
    for name, profile, header in (("cloudfront", "cloudfront", "CloudFront-Viewer-JA4-Fingerprint"),
                                  ("generic", "generic", "X-Client-JA4")):
        configure = ""
        if documented():
            configure = f'            trusted_proxies = {{ "{TRUSTED}" }},\n            proxy_profile = "{profile}",'
            if profile == "generic":
                configure += f'\n            tls_fingerprint_header = "{header}",'
        server = f"set_real_ip_from {TRUSTED};\nreal_ip_header X-Forwarded-For;\n"
        out[name] = (proxies.Edge(f"forged-{name}", ["listen 127.0.0.1:{h1};"], ["h1"], configure=configure,
                                  server=server), header)
    return out


class Route:
    """How a client reaches one edge through one front."""

    def __init__(self, name, edge, h1=None, h2=None, tls=None, proxy=None, profile="direct"):
        self.name, self.edge, self.h1, self.h2, self.tls, self.proxy = name, edge, h1, h2, tls, proxy
        # The edge's proxy_profile (docs/deployment.md): what replay judges
        # the route's recorded rows with.
        self.profile = profile

    def base(self):
        """The URL browsers and scripts use (TLS where the route has it)."""
        return f"https://127.0.0.1:{self.tls}" if self.tls else f"http://127.0.0.1:{self.h1}"


class Deployments:
    """Every edge and front, started; `stop()` stops them all."""

    def __init__(self, record=False):
        self.record = record
        self.procs = []
        self.tmp = proxies.scratch("measure")
        self.pki = proxies.Pki(self.tmp)
        self.routes = []
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _keep(self, p):
        self.procs.append(p)
        return p

    def _start(self):
        direct = self._keep(direct_edge(self.pki, self.record))
        self.routes.append(Route("direct", direct, h1=direct.port("h1"), h2=direct.port("h2")))
        for front_class, profile in ((proxies.NginxFront, "nginx"), (proxies.HaproxyHttp, "haproxy"),
                                     (proxies.CaddyFront, "caddy")):
            edge = self._keep(l7_edge(front_class.name, profile, self.record))
            front = self._keep(front_class(edge.port("h1")))
            self.routes.append(Route(front.name, edge, h1=front.h1, h2=front.h2, profile=profile))
        edge = self._keep(pp_edge(self.pki, self.record))
        front = self._keep(proxies.HaproxyTcp(edge.port("h1"), edge.port("h2"), edge.port("tls")))
        self.routes.append(Route("haproxy-tcp", edge, h1=front.h1, h2=front.h2))
        self.routes.append(Route("haproxy-tcp-tls", edge, tls=front.tls))
        squid = self._keep(proxies.Squid(self.pki))
        self.routes.append(Route("squid", direct, tls=direct.port("tls"), proxy=squid.port))
        self.forged = forged_edges()
        for edge, _ in self.forged.values():
            self._keep(edge)

    def errors(self):
        return [line for p in self.procs if isinstance(p, proxies.Edge) for line in p.errors()]

    def stop(self):
        for p in reversed(self.procs):
            try:
                p.stop()
            except Exception as e:  # keep stopping the others
                print(f"stopping {p}: {e}", file=sys.stderr)
        if not os.environ.get("EDGEGUARD_KEEP_NGINX"):
            for p in self.procs:
                shutil.rmtree(p.dir, ignore_errors=True)
            shutil.rmtree(self.tmp, ignore_errors=True)


# ------------------------------------------------------------------ corpus rows

def load_rows():
    import corpus
    return [r for r in corpus.load() if r["human"]]


def tunnel(proxy_port, where):
    """A TLS connection to `where` (host:port) through Squid (CONNECT)."""
    s = connect(proxy_port)
    s.sendall(f"CONNECT {where} HTTP/1.1\r\nHost: {where}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise OSError("the proxy closed the CONNECT")
        data += chunk
    if data.split(b" ", 2)[1] != b"200":
        raise OSError(f"CONNECT refused: {data[:80]!r}")
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(s, server_hostname="localhost")


def through_squid(row, port):
    """The row as its browser would send it to https://127.0.0.1:port/
    through a forward proxy: the same bytes, but for the Host value, which
    names the CONNECT's authority (Squid refuses a bumped request whose Host
    differs from it; the models read only whether Host is present)."""
    where = f"127.0.0.1:{port}"
    return dict(row, headers=[(n, where if n.lower() == "host" else v) for n, v in row["headers"]]), where


class H1Sender:
    """Raw HTTP/1.1 rows on keep-alive connections (reopened when the server
    or the row closes one); through Squid, in a CONNECT tunnel."""

    def __init__(self, route, clients, ids):
        self.route = route
        self.socks = {}
        self.clients = clients
        # (corpus line, $request_id) of each row, with `--record`.
        self.ids = ids

    def _connect(self, where):
        if self.route.proxy:
            return tunnel(self.route.proxy, where)
        return connect(self.route.h1)

    def send(self, row):
        where = None
        if self.route.proxy:
            row, where = through_squid(row, self.route.tls)
        head = "%s %s %s\r\n" % (row["method"], row["uri"], row["version"])
        head += "".join("%s: %s\r\n" % (n, v) for n, v in row["headers"]) + "\r\n"
        data = head.encode("utf-8") + h2c.body_of(row)
        for attempt in (0, 1):
            fresh = where not in self.socks
            if fresh:
                self.socks[where] = self._connect(where)
            sock = self.socks[where]
            try:
                sock.sendall(data)
                resp = http.client.HTTPResponse(sock, method=row["method"])
                resp.begin()
                resp.read()
                action = resp.getheader(proxies.ACTION_HEADER) or ""
                rule = resp.getheader(proxies.RULE_HEADER) or ""
                self.clients[resp.getheader(proxies.CLIENT_HEADER) or ""] += 1
                if resp.getheader(proxies.ID_HEADER):
                    self.ids.append((row["line"], resp.getheader(proxies.ID_HEADER)))
                verdict = (resp.getheader(proxies.GRADE_HEADER) or "", resp.getheader(proxies.REASONS_HEADER) or "")
                status = resp.status
                if resp.will_close or any(n.lower() == "connection" and "close" in v.lower()
                                          for n, v in row["headers"]):
                    self.close(where)
                return status, action, rule, verdict
            except (OSError, http.client.HTTPException):
                self.close(where)
                if fresh or attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self, where=None):
        for key in [where] if where in self.socks else list(self.socks) if where is None else []:
            self.socks.pop(key).close()


def send_h2(port, row, clients, ids):
    """One HTTP/2 row over h2c with prior knowledge (h2c.py): pseudo-headers,
    then the headers in arrival order. Returns (status, action, rule,
    (grade, reasons))."""
    import hpack

    decoder = hpack.Decoder()
    with connect(port) as s:
        s.sendall(h2c.request_bytes(row))
        block = b""
        for kind, flags, stream, payload in h2c.frames(s):
            if kind not in (h2c.HEADERS, h2c.CONTINUATION) or stream != 1:
                continue
            block += payload
            if flags & h2c.END_HEADERS:
                got = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                       for k, v in decoder.decode(block)}
                clients[got.get(proxies.CLIENT_HEADER.lower(), "")] += 1
                if got.get(proxies.ID_HEADER.lower()):
                    ids.append((row["line"], got[proxies.ID_HEADER.lower()]))
                return (int(got[":status"]), got.get(proxies.ACTION_HEADER.lower(), ""),
                        got.get(proxies.RULE_HEADER.lower(), ""),
                        (got.get(proxies.GRADE_HEADER.lower(), ""), got.get(proxies.REASONS_HEADER.lower(), "")))
    raise AssertionError("unreachable")


# The rows sent through Squid (HTTPS): those captured over TLS and
# HTTP/1.1. A browser talks HTTP/1.1 to Squid (no h2 there), and a head
# captured over plain HTTP to a hostname lacks what the same browser sends
# over TLS (fetch metadata, client hints: Chromium and Firefox send them
# only to secure contexts), so over TLS it would be a head no browser sends.
SQUID_ORIGIN = "tls-h1"


def send_rows(route, rows, clients, ids, threads=4):
    """Every row through `route`: a list of (row, status, action, rule, (grade, reasons))."""
    if route.proxy:
        rows = [r for r in rows if r["origin"] == SQUID_ORIGIN]
    h1 = [r for r in rows if not h2c.is_h2(r)]
    h2 = [r for r in rows if h2c.is_h2(r)] if route.h2 else []
    out = []
    lock = threading.Lock()

    def h1_worker(part):
        sender = H1Sender(route, clients, ids)
        got = []
        try:
            for r in part:
                got.append((r, *sender.send(r)))
        finally:
            sender.close()
        with lock:
            out.extend(got)

    def h2_worker(part):
        got = [(r, *send_h2(route.h2, r, clients, ids)) for r in part]
        with lock:
            out.extend(got)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        jobs = [pool.submit(h1_worker, h1[i::threads]) for i in range(threads)]
        jobs += [pool.submit(h2_worker, h2[i::threads]) for i in range(threads)]
        for j in jobs:
            j.result()
    return out


# --------------------------------------------------------------------- scripts

GO_CLIENT = """package main

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"os"
)

func main() {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	if p := os.Getenv("MEASURE_PROXY"); p != "" {
		u, _ := url.Parse(p)
		tr.Proxy = http.ProxyURL(u)
	}
	c := &http.Client{Transport: tr}
	for _, u := range os.Args[1:] {
		r, err := c.Get(u)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\\n")
			os.Exit(1)
		}
		b := make([]byte, 4096)
		for {
			if _, err := r.Body.Read(b); err != nil {
				break
			}
		}
		r.Body.Close()
	}
}
"""

NODE_FETCH = """
(async () => {
  for (const u of process.argv.slice(1)) {
    const r = await fetch(u);
    await r.text();
  }
})().catch(e => { console.error(String(e)); process.exit(1); });
"""

PATHS = ["/", "/products/lamp?color=red", "/api/cart", "/search?q=chair", "/account/login",
         "/static/site.css", "/api/reviews?product=42", "/blog/spring-sale"]
# Live browsers: the echo, then a page with subresources (proxies.PAGE).
BROWSER_PATHS = ["/", "/page"]


def go_binary():
    """The Go client, built once into target/ (its build cache too)."""
    d = ROOT / "target" / "deployment-measure-go"
    binary = d / "client"
    src = d / "main.go"
    if binary.exists() and src.exists() and src.read_text() == GO_CLIENT:
        return binary
    d.mkdir(parents=True, exist_ok=True)
    src.write_text(GO_CLIENT)
    env = dict(os.environ, GOCACHE=str(d / "cache"), GO111MODULE="off", GOFLAGS="", HOME=str(d))
    subprocess.run([GO, "build", "-o", str(binary), "main.go"], cwd=d, env=env, check=True, timeout=600,
                   capture_output=True)
    return binary


def run_curl(route, urls):
    args = [CURL, "-sk", "--max-time", "10", "-o", "/dev/null"]
    if route.proxy:
        args += ["-x", f"http://127.0.0.1:{route.proxy}"]
    for i, u in enumerate(urls):
        args += ([u] if i == 0 else ["--next", "-sk", "-o", "/dev/null"] +
                 (["-x", f"http://127.0.0.1:{route.proxy}"] if route.proxy else []) + [u])
    subprocess.run(args, capture_output=True, timeout=60)


def run_requests(route, urls):
    import requests
    import urllib3
    urllib3.disable_warnings()
    proxy = {"https": f"http://127.0.0.1:{route.proxy}"} if route.proxy else {}
    with requests.Session() as s:
        s.trust_env = False
        for u in urls:
            s.get(u, verify=False, timeout=10, proxies=proxy)


def run_go(route, urls):
    env = dict(os.environ, MEASURE_PROXY=f"http://127.0.0.1:{route.proxy}" if route.proxy else "")
    subprocess.run([str(go_binary()), *urls], env=env, capture_output=True, timeout=60)


def run_node(route, urls):
    env = dict(os.environ, NODE_TLS_REJECT_UNAUTHORIZED="0", NODE_NO_WARNINGS="1")
    subprocess.run([NODE, "-e", NODE_FETCH, *urls], env=env, capture_output=True, timeout=60)


def run_bare_mozilla(route, urls):
    """`User-Agent: Mozilla/5.0` and its bare variants, over HTTP/1.1."""
    import urllib.parse
    agents = ["Mozilla/5.0", "Mozilla/5.0 (compatible)", "Mozilla/5.0 (X11; Linux x86_64)"]
    for i, u in enumerate(urls):
        parts = urllib.parse.urlsplit(u)
        target = parts.path + ("?" + parts.query if parts.query else "")
        head = (f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: {agents[i % len(agents)]}\r\n"
                "Accept: text/html,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.9\r\nConnection: close\r\n\r\n")
        if route.proxy:
            s = tunnel(route.proxy, f"127.0.0.1:{route.tls}")
        elif route.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["http/1.1"])
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", route.tls), timeout=10),
                                server_hostname="localhost")
        else:
            s = socket.create_connection(("127.0.0.1", route.h1), timeout=10)
        with s:
            s.sendall(head.encode())
            while s.recv(65536):
                pass


SCRIPTS = {"curl": run_curl, "python-requests": run_requests, "bare-mozilla": run_bare_mozilla}
if GO:
    SCRIPTS["go"] = run_go
if NODE:
    SCRIPTS["node-fetch"] = run_node


def log_window(edge, run):
    """Runs `run()` and returns the edge's access-log lines it caused (the
    callers never overlap on one edge)."""
    before = len(edge.lines())
    run()
    time.sleep(0.4)  # nginx writes the line after answering
    return edge.lines()[before:]


# -------------------------------------------------------------------- browsers

def pac(proxy_port, tls_port):
    """A PAC script sending only the Squid route's origin through Squid."""
    return ("function FindProxyForURL(url, host) { if (url.indexOf('127.0.0.1:%d') >= 0) "
            "return 'PROXY 127.0.0.1:%d'; return 'DIRECT'; }" % (tls_port, proxy_port))


def data_url(text):
    import base64
    return "data:application/x-ns-proxy-autoconfig;base64," + base64.b64encode(text.encode()).decode()


class Chromium:
    """Debian's Chromium over Selenium (flags as tests/e2e/test_challenge_browser.py);
    with `proxy`, every request through that proxy (loopback included)."""

    def __init__(self, headless, display, proxy=None):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="edgeguard-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-gpu",
                  "--disable-extensions", "--disable-background-networking", "--disable-sync",
                  f"--user-data-dir={self.profile}", "--ignore-certificate-errors"):
            opts.add_argument(a)
        if proxy:
            opts.add_argument(f"--proxy-server=http://127.0.0.1:{proxy}")
            opts.add_argument("--proxy-bypass-list=<-loopback>")
        if headless:
            opts.add_argument("--headless=new")
        env = dict(os.environ)
        if display:
            env["DISPLAY"] = display
        self.wd = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER, env=env), options=opts)
        self.wd.set_page_load_timeout(60)

    def navigate(self, url):
        self.wd.get(url)

    def clear_cookies(self):
        self.wd.delete_all_cookies()

    def body(self):
        try:
            return self.wd.execute_script("return document.body ? document.body.innerText : ''") or ""
        except Exception:
            return ""

    def quit(self):
        try:
            self.wd.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


class Firefox:
    """Firefox ESR over Marionette (models/capture/marionette.py), with the
    same PAC."""

    def __init__(self, display, pac_text):
        from marionette import Marionette

        self.profile = tempfile.mkdtemp(prefix="edgeguard-firefox-")
        self.port = proxies.free_port()
        prefs = {"marionette.port": self.port, "browser.shell.checkDefaultBrowser": False,
                 "datareporting.policy.dataSubmissionEnabled": False, "app.update.enabled": False,
                 "browser.startup.homepage_override.mstone": "ignore", "toolkit.telemetry.enabled": False,
                 "network.captive-portal-service.enabled": False, "network.proxy.type": 2,
                 "network.proxy.autoconfig_url": data_url(pac_text),
                 "network.proxy.allow_hijacking_localhost": True, "network.proxy.no_proxies_on": "",
                 "network.connectivity-service.enabled": False}
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for k, v in prefs.items():
                val = ("true" if v else "false") if isinstance(v, bool) else (
                    str(v) if isinstance(v, int) else json.dumps(v))
                f.write(f'user_pref("{k}", {val});\n')
        env = dict(os.environ, MOZ_CRASHREPORTER_DISABLE="1", DISPLAY=display)
        self.proc = subprocess.Popen([FIREFOX, "--marionette", "--no-remote", "--profile", self.profile,
                                      "about:blank"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        try:
            self.m = Marionette(self.port)
            self.m.call("WebDriver:NewSession", {"acceptInsecureCerts": True, "pageLoadStrategy": "normal"})
            self.m.call("WebDriver:SetTimeouts", {"pageLoad": 60000, "script": 30000})
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise

    def navigate(self, url):
        self.m.call("WebDriver:Navigate", {"url": url})

    def clear_cookies(self):
        self.m.call("WebDriver:DeleteAllCookies")

    def body(self):
        try:
            return self.m.call("WebDriver:ExecuteScript", {
                "script": "return document.body ? document.body.innerText : ''", "args": []}) or ""
        except Exception:
            return ""

    def quit(self):
        try:
            self.m.call("Marionette:Quit", {"flags": ["eForceQuit"]})
        except Exception:
            pass
        try:
            self.m.close()
        except Exception:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def reached_origin(text):
    """The demo origin's page, or its echo of the request head it received."""
    return text.startswith(("GET ", "HEAD ")) or proxies.MARK in text


def browse(browser, route, timeout):
    """Navigates `browser` to two pages of `route`; waits on each until the
    origin's answer shows (a challenge solves itself and reloads) or the
    edge blocked. Returns (log lines, whether every page reached the origin)."""
    edge = route.edge
    ok = True

    def run():
        nonlocal ok
        for path in BROWSER_PATHS:
            mark = len(edge.lines())
            try:
                browser.navigate(route.base() + path)
            except Exception as e:  # a page that never loads: counted by the log
                print(f"{route.name}: {e.__class__.__name__}", file=sys.stderr)
            deadline = time.monotonic() + timeout
            while True:
                if reached_origin(browser.body()):
                    break
                lines = edge.lines()[mark:]
                blocked = any(line["action"] == "block" for line in lines)
                if blocked or time.monotonic() > deadline:
                    ok = False
                    break
                time.sleep(0.2)
        time.sleep(0.5)  # the favicon

    return log_window(edge, run), ok


# ------------------------------------------------------------------- counting

# Where the challenge page sends its answer (src/challenge/).
CHALLENGE_PATH = "/.edgeguard/"


class Tally:
    """Counts per (route, family, kind): requests, those a site rule decided
    (the shipped presets pass favicons, robots.txt and feeds unscored: not
    the model's call, left out of the rates), blocked, challenged, answers
    from neither edgeguard nor the origin (a front's own error), and for
    live browsers sessions, challenged sessions, solved sessions."""

    def __init__(self):
        self.rows = collections.defaultdict(collections.Counter)
        # The TLS library families the edge saw through Squid: its own
        # (OpenSSL), whatever the client.
        self.squid_families = collections.Counter()
        # The detection IDs that fired, per (route, kind); a few blocked
        # requests' reasons.
        self.reasons = collections.defaultdict(collections.Counter)
        self.examples = collections.defaultdict(list)

    def add(self, route, family, kind, action, rule, grade="", reasons=""):
        c = self.rows[(route, family, kind)]
        c["requests"] += 1
        if not action:
            c["unanswered"] += 1  # no edgeguard decision: the front answered itself
            return
        if rule:
            c["ruled"] += 1
            return
        c["judged"] += 1
        # Mode block answers an ambiguous verdict with the challenge: the
        # page for a navigation, and for anything else (a fetch, an image)
        # a 403 problem document `challenge_required` pointing to it, which
        # the action names `block`.
        problem = action == "block" and grade == "ambiguous"
        c["blocked"] += action == "block" and not problem
        c["problem"] += problem
        c["challenged"] += action == "challenge" or problem
        c["flagged"] += action in FLAGGED
        if action in FLAGGED:
            self.reasons[(route, kind)].update(r for r in reasons.split(",") if r)
            if c["blocked"] and not problem and len(self.examples[(route, kind)]) < 5:
                self.examples[(route, kind)].append(f"{family} {grade} {reasons}")

    def add_line(self, route, family, kind, line):
        if line["uri"].startswith(CHALLENGE_PATH):
            # The challenge's own exchange (the page's answer, its
            # redirects): edgeguard's endpoint, not a request it judges.
            self.rows[(route, family, kind)]["protocol"] += 1
            return
        self.add(route, family, kind, line["action"], line["rule"], line.get("grade", ""), line.get("reasons", ""))

    def session(self, route, family, kind, lines, reached):
        c = self.rows[(route, family, kind)]
        for line in lines:
            self.add_line(route, family, kind, line)
        challenged = any(line["action"] == "challenge" for line in lines)
        c["sessions"] += 1
        c["challenged_sessions"] += challenged
        c["solved"] += challenged and reached
        c["reached"] += reached

    def as_json(self):
        return [{"route": r, "family": f, "kind": k, **c} for (r, f, k), c in sorted(self.rows.items())]


# The corpus columns that describe the request, not its client: the
# recorded line (what arrived after the front) supplies them.
REQUEST_FIELDS = ("client", "method", "uri", "version", "status", "headers", "edgeguard_ja4",
                  "edgeguard_tls_family", "edgeguard_bot", "edgeguard_spoof", "edgeguard_action", "time")


def write_record(out_dir, route, ids, every=1):
    """Writes `route`'s recorded heads, in the corpus' format, to
    out_dir/<route>.jsonl: each corpus row as the edge received it after
    the front (record.capture()'s header array, the TLS facts nginx saw,
    the peer), with the row's labels, `front`, `profile` (the edge's
    proxy_profile, which replay judges it with), `source_line` (its corpus
    line), and `family` "<family>+<front>": a family of its own. With
    `every` K, the first row of each source family and every K-th after
    (the sample tests/fixtures/real_clients/through/ keeps). Returns the
    count."""
    time.sleep(0.5)  # nginx writes the line after answering
    recorded = {}
    for line in (route.edge.dir / "record.jsonl").read_bytes().splitlines():
        rec = json.loads(line.decode("utf-8", "replace"))
        recorded[rec.pop("request_id")] = rec
    raw = CORPUS.read_text(encoding="utf-8").splitlines()
    out_dir.mkdir(parents=True, exist_ok=True)
    n = 0
    per_family = collections.Counter()
    with open(out_dir / f"{route.name}.jsonl", "w", encoding="utf-8") as f:
        for line_no, request_id in sorted(ids):
            rec = recorded.get(request_id)
            if rec is None:
                continue
            source = json.loads(raw[line_no - 1])
            per_family[source["family"]] += 1
            if (per_family[source["family"]] - 1) % every:
                continue
            got = {k: v for k, v in rec.items() if v not in ("", "-") or k == "headers"}
            got["headers"] = json.loads(rec["headers"]) if rec["headers"] not in ("", "-") else []
            got["status"] = int(rec["status"])
            labels = {k: v for k, v in source.items() if k not in REQUEST_FIELDS}
            labels.update(front=route.name, profile=route.profile, source_line=line_no,
                          family=f'{source["family"]}+{route.name}')
            f.write(json.dumps({**got, **labels}, separators=(",", ":")) + "\n")
            n += 1
    return n


def forged_header_checks(deps):
    """From an untrusted address, straight to edges that trust 127.0.0.1 for
    a JA4 header: the same decision and score with and without a forged
    header, which never reaches the origin."""
    chrome_ja4 = "t13d1516h2_8daaf6152771_02713d6af862"
    curl_ja4 = "t13d4907h2_0d8feac7bc37_7395dae3b2f3"
    person = next(r for r in load_rows() if r["family"] == "chromium-linux" and r["uri"] == "/"
                  and not h2c.is_h2(r))
    heads = {
        "curl": ([("Host", "127.0.0.1"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*")], chrome_ja4),
        "chromium": (person["headers"], curl_ja4),
    }
    out = []
    for name, (edge, header) in deps.forged.items():
        port = edge.port("h1")
        for who, (lines, ja4) in heads.items():
            got = {}
            plain_log = log_window(edge, lambda: got.setdefault("plain", untrusted_request(port, lines)))
            forged_log = log_window(edge, lambda: got.setdefault("forged", untrusted_request(
                port, lines + [(header, ja4)])))
            plain, forged = got["plain"], got["forged"]
            echoed = forged[2].decode("latin-1").lower()
            out.append({"edge": name, "header": header, "client": who,
                        "action": plain[1], "forged_action": forged[1],
                        "score": [line["bot"] for line in plain_log],
                        "forged_score": [line["bot"] for line in forged_log],
                        "client_seen": [line["client"] for line in forged_log],
                        "reached_origin": forged[0] == 200 and header.lower() + ":" in echoed,
                        "status": plain[0], "forged_status": forged[0]})
    return out


def untrusted_request(port, headers):
    """GET / with exactly these headers, from UNTRUSTED; (status, action, body)."""
    head = "GET / HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers) + "\r\n"
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((UNTRUSTED, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(head.encode("latin-1"))
        resp = http.client.HTTPResponse(s, method="GET")
        resp.begin()
        body = resp.read()
        return resp.status, resp.getheader(proxies.ACTION_HEADER) or "", body


def measure(browsers=True, firefox=True, rows=None, solve_timeout=45.0, log=print, record=None,
            squid_rounds=None, record_every=1):
    """Runs everything; returns {"routes", "counts", "forged", "errors", "skipped", "documented"}."""
    rows = load_rows() if rows is None else rows
    tally = Tally()
    skipped = []
    # Per route, the client addresses the edge judged the rows as from.
    clients = {}
    t0 = time.monotonic()
    deps = Deployments(record=bool(record))
    try:
        log(f"started {len(deps.procs)} servers in {time.monotonic() - t0:.1f}s")
        for route in deps.routes:
            if route.h1 is None and route.proxy is None:
                continue  # the TLS-only route: live clients only
            t = time.monotonic()
            seen = clients[route.name] = collections.Counter()
            ids = []
            for row, status, action, rule, verdict in send_rows(route, rows, seen, ids):
                tally.add(route.name, "corpus:" + row["family"], "people", action, rule, *verdict)
            log(f"{route.name}: corpus rows in {time.monotonic() - t:.1f}s")
            if record and route.name != "direct":  # direct: the corpus itself
                n = write_record(pathlib.Path(record), route, ids, record_every)
                log(f"{route.name}: {n} heads as they arrived -> {record}/{route.name}.jsonl")
        t = time.monotonic()
        for route in deps.routes:
            urls = [route.base() + p for p in PATHS]
            for name, run in SCRIPTS.items():
                if name == "node-fetch" and route.proxy:
                    continue  # Node's fetch has no proxy setting (see models/README.md)
                try:
                    lines = log_window(route.edge, lambda: run(route, urls))
                except Exception as e:
                    skipped.append(f"{name} via {route.name}: {e}")
                    continue
                for line in lines:
                    tally.add_line(route.name, name, "scripts", line)
                if route.proxy:
                    tally.squid_families.update(line["tls_family"] for line in lines)
        if "node-fetch" in SCRIPTS:
            skipped.append("node-fetch via squid: Node's fetch has no proxy setting")
        log(f"scripts in {time.monotonic() - t:.1f}s")
        if browsers:
            run_browsers(deps, tally, skipped, firefox, solve_timeout, log, squid_rounds or SQUID_ROUNDS)
        forged = forged_header_checks(deps)
        errors = deps.errors()
    finally:
        deps.stop()
    log(f"measured in {time.monotonic() - t0:.1f}s")
    return {"documented": documented(), "routes": [r.name for r in deps.routes], "counts": tally.as_json(),
            "forged": forged, "errors": errors, "skipped": skipped,
            "squid_tls_families": dict(tally.squid_families),
            "row_clients": {r: dict(c) for r, c in clients.items()},
            "reasons": [{"route": r, "kind": k, "ids": dict(c)} for (r, k), c in sorted(tally.reasons.items())],
            "blocked_examples": {f"{r} {k}": v for (r, k), v in tally.examples.items()}}


# Sessions per live browser through Squid, each challenged afresh, in
# `make test` (--squid-sessions sets more for the pass rate's table).
SQUID_ROUNDS = 3


def run_browsers(deps, tally, skipped, firefox, solve_timeout, log, squid_rounds):
    """Headless Chromium (a script: HeadlessChrome), headful Chromium and
    Firefox ESR (people) under Xvfb, each through every route. Chromium
    takes its proxy as a flag: a second instance goes through Squid.
    Firefox reads a PAC that sends only the Squid route through Squid."""
    squid = next(r for r in deps.routes if r.proxy)
    others = [r for r in deps.routes if not r.proxy]
    if not (CHROMIUM and CHROMEDRIVER and XVFB):
        skipped.append("browsers: chromium, chromedriver or Xvfb missing")
        return
    xvfb = display.Xvfb()
    screen = xvfb.ensure()
    plan = [
        ("chromium-headless", "scripts", lambda: Chromium(True, None), others),
        ("chromium-headless", "scripts", lambda: Chromium(True, None, squid.proxy), [squid]),
        ("chromium", "people", lambda: Chromium(False, screen), others),
        ("chromium", "people", lambda: Chromium(False, screen, squid.proxy), [squid]),
    ]
    if firefox and FIREFOX:
        plan.append(("firefox-esr", "people", lambda: Firefox(screen, pac(squid.proxy, squid.tls)),
                     deps.routes))
    else:
        skipped.append("firefox-esr: not run")
    try:
        for family, kind, make, routes in plan:
            t = time.monotonic()
            b = make()
            try:
                for route in routes:
                    # Behind Squid each round starts without the clearance
                    # cookie: a new challenge to solve.
                    for i in range(squid_rounds if route.proxy else 1):
                        if i:
                            b.clear_cookies()
                        lines, reached = browse(b, route, solve_timeout if kind == "people" else 8.0)
                        tally.session(route.name, family, kind, lines, reached)
                        if route.proxy:
                            tally.squid_families.update(line["tls_family"] for line in lines)
            finally:
                b.quit()
            log(f"{family} through {len(routes)} routes in {time.monotonic() - t:.1f}s")
    finally:
        xvfb.stop()


# ---------------------------------------------------------------------- table

def rate(n, d):
    return f"{100.0 * n / d:.2f} %" if d else "-"


def challenged(c):
    """Challenged, and how many of them got the problem document."""
    n, problem = c.get("challenged", 0), c.get("problem", 0)
    return f"{n} ({problem} problem)" if problem else str(n)


def table(result):
    """Markdown: per route and client family."""
    counts = result["counts"]
    out = ["| front | clients | kind | requests | site rule | judged | flagged | blocked | challenged | solved |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    order = {r: i for i, r in enumerate(result["routes"])}
    for c in sorted(counts, key=lambda c: (order.get(c["route"], 99), c["kind"], c["family"])):
        solved = f'{c.get("solved", 0)}/{c.get("challenged_sessions", 0)}' if c.get("sessions") else "-"
        out.append(f'| {c["route"]} | {c["family"]} | {c["kind"]} | {c["requests"]} | {c.get("ruled", 0)} | '
                   f'{c.get("judged", 0)} | {c.get("flagged", 0)} ({rate(c.get("flagged", 0), c.get("judged", 0))}) | '
                   f'{c.get("blocked", 0)} | {challenged(c)} | {solved} |')
    return "\n".join(out)


KEYS = ("requests", "ruled", "judged", "unanswered", "flagged", "blocked", "challenged", "problem", "sessions",
        "challenged_sessions", "solved", "reached")


def summary(result):
    """Per (route, kind) and per (route, kind, live or corpus): the counts summed."""
    agg = collections.defaultdict(collections.Counter)
    for c in result["counts"]:
        source = "corpus" if c["family"].startswith("corpus:") else "live"
        for key in ((c["route"], c["kind"]), (c["route"], c["kind"], source)):
            for k in KEYS:
                agg[key][k] += c.get(k, 0)
    return agg


def summary_table(result):
    agg = summary(result)
    out = ["| front | people judged | people flagged | blocked | challenged | live browsers solved | "
           "scripts judged | scripts flagged |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for route in result["routes"]:
        p, s = agg[(route, "people")], agg[(route, "scripts")]
        out.append(f'| {route} | {p["judged"]} | {p["flagged"]} ({rate(p["flagged"], p["judged"])}) | '
                   f'{p["blocked"]} | {challenged(p)} | {p["solved"]}/{p["challenged_sessions"]} | '
                   f'{s["judged"]} | {s["flagged"]} ({rate(s["flagged"], s["judged"])}) |')
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the counts here")
    ap.add_argument("--no-browsers", action="store_true", help="rows and scripts only")
    ap.add_argument("--no-firefox", action="store_true")
    ap.add_argument("--squid-sessions", type=int, default=SQUID_ROUNDS, metavar="N",
                    help=f"sessions per live browser through Squid, each a fresh challenge (default {SQUID_ROUNDS})")
    ap.add_argument("--record-every", type=int, default=1, metavar="K",
                    help="with --record: each family's first row and every K-th after")
    ap.add_argument("--record", metavar="DIR",
                    help="write each front's corpus rows as they arrived at the edge to DIR/<front>.jsonl "
                         "(corpus format, families <family>+<front>)")
    args = ap.parse_args()
    missing = proxies.available()
    if missing:
        sys.exit("missing: " + ", ".join(missing) + " (make deps-test)")
    result = measure(browsers=not args.no_browsers, firefox=not args.no_firefox,
                     log=lambda m: print(m, file=sys.stderr), record=args.record,
                     squid_rounds=args.squid_sessions, record_every=args.record_every)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
    print("configured as docs/deployment.md says" if result["documented"] else
          "configured with nginx's realip lines only (no deployment profiles in this build)")
    print()
    print(summary_table(result))
    print()
    print(table(result))
    for f in result["forged"]:
        print(f'forged {f["header"]} ({f["edge"]}), {f["client"]} head: action {f["action"]} -> '
              f'{f["forged_action"]}, score {f["score"]} -> {f["forged_score"]}, '
              f'reached the origin: {f["reached_origin"]}')
    print()
    for r in result["reasons"]:
        ids = ", ".join(f"{k} {v}" for k, v in sorted(r["ids"].items(), key=lambda kv: -kv[1]))
        print(f'reasons, {r["route"]} {r["kind"]}: {ids}')
    for where, examples in result["blocked_examples"].items():
        for e in examples:
            print(f"blocked, {where}: {e}")
    for s in result["skipped"]:
        print("not run:", s)
    for e in result["errors"]:
        print("edge error:", e)


if __name__ == "__main__":
    main()
