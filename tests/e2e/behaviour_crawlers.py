"""Crawlers with a browser's head, as today's scrapers are: the head copied
(or impersonated, TLS included), documents only, no JavaScript.

Kinds (KINDS):
- `curl_cffi-h2`, `curl_cffi-h1`: curl_cffi impersonating Chrome over TLS
  (its ClientHello, HTTP/2 SETTINGS and head are Chrome's), HTTP/2 and
  HTTP/1.1;
- `requests-chrome`: python-requests with a Chrome head copied from the
  capture (tests/fixtures/real_clients/), plain HTTP;
- `go-chrome`: Go's net/http (a small program built once into target/,
  GO_CRAWLER) with the same copied head, plain HTTP: Go writes Host, then
  User-Agent, then the other headers sorted by name;
- `bare-mozilla`: python-requests with `User-Agent: Mozilla/5.0` and its
  other defaults, plain HTTP;
- `requests-chrome-linked` (ADAPTIVE, not in KINDS): `requests-chrome`
  that also forges a link's arrival: `Sec-Fetch-Site: same-origin` and a
  `Referer` of the page it fetched before, as a crawler written against
  the memory's `client.direct_navigations` would.

How navigations arrive: a head copied from a browser's typed-URL
navigation (what devtools shows for the first page of a visit, and what
curl_cffi's Chrome impersonation sends) says `Sec-Fetch-Site: none` and
carries no `Referer`, on every page the crawler fetches.

Each crawl session has its own source address on loopback, in a /24 of
its own (127.G.N.1), as crawlers on separate networks, reads /sitemap.xml, then walks the site
breadth first from `/` (links in pages, then the sitemap's pages), and
either keeps the cookies it is given (a cookie jar, as requests.Session
and curl_cffi do by default) or drops them.

A navigation is flagged when its answer says the gate challenged or
blocked it (X-Edgeguard-Action, set by the harness's header filter), or it
is the challenge page; flagged by the behaviour when its reasons
(X-Edgeguard-Reasons) name behaviour_crawl. Crawlers the one-request
model already flags (Go's sorted header order, curl_cffi over HTTP/1.1,
a bare Mozilla/5.0) go on crawling, challenged, so the behaviour is
measured for them too.
"""

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import threading
import time

import requests
import requests.adapters

try:
    from curl_cffi import requests as cffi_requests
    from curl_cffi.const import CurlHttpVersion
except ImportError:  # make deps-test installs it
    cffi_requests = None

ROOT = pathlib.Path(__file__).resolve().parents[2]
GO = shutil.which("go")
BEHAVIOUR = "behaviour_crawl"
KINDS = ("curl_cffi-h2", "curl_cffi-h1", "requests-chrome", "go-chrome", "bare-mozilla")
# The adaptive crawler: measured beside KINDS (scripts/crawl-measure.py).
ADAPTIVE = "requests-chrome-linked"

# Chromium 156 on Linux opening the capture site's first page from the
# address bar (tests/e2e/data/behaviour/chromium-cold.json, its first
# request), as a scraper copies it from devtools: everything but Host,
# which the client library writes first. A typed URL: `Sec-Fetch-Site:
# none`, no Referer, sent so on every page.
CHROME_HEAD = [
    ("Connection", "keep-alive"),
    ("sec-ch-ua", '"Not:A-Brand";v="8", "Chromium";v="156"'),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", '"Linux"'),
    ("Upgrade-Insecure-Requests", "1"),
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "Chrome/156.0.0.0 Safari/537.36"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,"
               "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
    ("Sec-Fetch-Site", "none"),
    ("Sec-Fetch-Mode", "navigate"),
    ("Sec-Fetch-User", "?1"),
    ("Sec-Fetch-Dest", "document"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Accept-Language", "en-US,en;q=0.9"),
]



def linked_head(referer):
    """CHROME_HEAD as Chromium sends it following a link from `referer`
    (tests/e2e/data/behaviour/chromium-cold.json, its clicks):
    `Sec-Fetch-Site: same-origin`, the Referer after `Sec-Fetch-Dest`."""
    head = []
    for name, value in CHROME_HEAD:
        head.append((name, "same-origin" if name == "Sec-Fetch-Site" else value))
        if name == "Sec-Fetch-Dest":
            head.append(("Referer", referer))
    return head


LINK = re.compile(r'href="(/[^"#]*)"')
LOC = re.compile(r"<loc>https?://[^/<]+(/[^<]*)</loc>")
NOT_PAGES = re.compile(r"\.(css|js|mjs|png|svg|ico|ttf|woff2?|pdf|zip|webm|ogg|json|xml)(\?|$)")


# Go's net/http with a copied head: reads paths on stdin, writes each
# answer (status, headers, body as Latin-1) as a JSON line.
GO_CRAWLER = """package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"time"
)

func main() {
	base, source, keep := os.Args[1], os.Args[2], os.Args[3] == "keep"
	var head [][2]string
	if err := json.Unmarshal([]byte(os.Args[4]), &head); err != nil {
		panic(err)
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 20 * time.Second}
	client := &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 1},
		Timeout:   20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if keep {
		client.Jar, _ = cookiejar.New(nil)
	}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		req, err := http.NewRequest("GET", base+in.Text(), nil)
		if err != nil {
			out.Encode(map[string]string{"error": err.Error()})
			continue
		}
		for _, h := range head {
			req.Header.Set(h[0], h[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			out.Encode(map[string]string{"error": err.Error()})
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		latin1 := make([]rune, len(body))
		for i, b := range body {
			latin1[i] = rune(b)
		}
		headers := map[string]string{}
		for k, v := range resp.Header {
			headers[strings.ToLower(k)] = strings.Join(v, ", ")
		}
		out.Encode(map[string]interface{}{"status": resp.StatusCode, "headers": headers, "body": string(latin1)})
	}
}
"""


def go_crawler():
    """The Go crawler, built once into target/behaviour-go/ (its build
    cache too)."""
    if GO is None:
        raise AssertionError("go is needed for the Go crawler (make deps-test installs golang-go)")
    d = ROOT / "target" / "behaviour-go"
    binary, src = d / "crawler", d / "main.go"
    if binary.exists() and src.exists() and src.read_text() == GO_CRAWLER:
        return binary
    d.mkdir(parents=True, exist_ok=True)
    src.write_text(GO_CRAWLER)
    env = dict(os.environ, GOCACHE=str(d / "cache"), GO111MODULE="off", GOFLAGS="", HOME=str(d))
    subprocess.run([GO, "build", "-o", str(binary), "main.go"], cwd=d, env=env, check=True, timeout=600,
                   capture_output=True)
    return binary


def flagged(status, headers, body):
    action = headers.get("x-edgeguard-action", "")
    return action in ("challenge", "challenge_required", "block") or (status == 403 and b"edgeguard-heading" in body)


class Answer:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body


class SourceAdapter(requests.adapters.HTTPAdapter):
    """requests from a chosen source address."""

    def __init__(self, source, **kw):
        self.source = source
        super().__init__(**kw)

    def init_poolmanager(self, *args, **kw):
        kw["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kw)


class Client:
    """One crawler's transport: get(path) -> Answer; keeps or drops cookies."""

    def __init__(self, kind, site, source, keep_cookies):
        self.kind = kind
        self.keep = keep_cookies
        self.source = source
        self.base = f"http://127.0.0.1:{site.port}"
        self.tls_base = f"https://127.0.0.1:{site.tls_port}"
        self.go = None
        self.previous = None
        if kind.startswith("curl_cffi"):
            if cffi_requests is None:
                raise AssertionError("curl_cffi is needed (make deps-test installs it)")
            version = CurlHttpVersion.V2_0 if kind.endswith("h2") else CurlHttpVersion.V1_1
            self.session = cffi_requests.Session(impersonate="chrome", verify=False, http_version=version,
                                                 interface=source)
        elif kind in ("requests-chrome", ADAPTIVE, "bare-mozilla"):
            self.session = requests.Session()
            self.session.mount("http://", SourceAdapter(source))
            if kind in ("requests-chrome", ADAPTIVE):
                self.session.headers.clear()
                self.session.headers.update(CHROME_HEAD)
            else:
                self.session.headers["User-Agent"] = "Mozilla/5.0"
        elif kind == "go-chrome":
            self.session = None
            self.go = subprocess.Popen([str(go_crawler()), self.base, source, "keep" if keep_cookies else "drop",
                                        json.dumps(CHROME_HEAD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, encoding="latin-1")
        else:
            raise ValueError(kind)

    def get(self, path):
        if self.kind == "go-chrome":
            return self._go(path)
        base = self.tls_base if self.kind.startswith("curl_cffi") else self.base
        if self.kind == ADAPTIVE and self.previous is not None:
            self.session.headers.clear()
            self.session.headers.update(linked_head(self.previous))
        r = self.session.get(base + path, allow_redirects=False, timeout=20)
        self.previous = base + path
        answer = Answer(r.status_code, dict(r.headers), r.content)
        if not self.keep:
            self.session.cookies.clear()
        return answer

    def _go(self, path):
        """Go's net/http (go_crawler(): a copied head set on each request,
        its cookie jar when cookies are kept), driven one path a line."""
        self.go.stdin.write(path + "\n")
        self.go.stdin.flush()
        line = self.go.stdout.readline()
        if not line:
            raise AssertionError("the Go crawler exited: " + self.go.stderr.read())
        got = json.loads(line)
        if "error" in got:
            raise AssertionError(f"Go: {got['error']}")
        return Answer(got["status"], got["headers"], got["body"].encode("latin-1"))

    def close(self):
        if self.session is not None:
            self.session.close()
        if self.go is not None:
            self.go.stdin.close()
            self.go.wait(timeout=20)
            self.go.stdout.close()
            self.go.stderr.close()


def crawl(site, kind, keep_cookies, rate, source, navigations=30):
    """One crawl session at `rate` requests per second as nginx's clock sees
    it (site.speed times faster in real time), until the behaviour flags it
    or `navigations` pages are fetched. Returns a dict: `flagged_at`, the
    1-based navigation first challenged or blocked for any reason (the
    one-request model included); `behaviour_at`, the first whose reasons
    name behaviour_crawl, with the requests sent up to it and its time on
    nginx's clock since the first request; every navigation's (path,
    status, action, reasons, client variables)."""
    client = Client(kind, site, source, keep_cookies)
    interval = 1.0 / (rate * site.speed)
    out = {"kind": kind, "cookies": "keep" if keep_cookies else "drop", "rate": rate, "source": source,
           "flagged_at": None, "reasons": "", "behaviour_at": None, "requests_to_flag": None,
           "seconds_to_flag": None, "navs": []}
    sent = 0
    start = time.monotonic()

    def pace():
        nonlocal sent
        due = start + sent * interval
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sent += 1

    try:
        pace()
        a = client.get("/sitemap.xml")
        sitemap_pages = LOC.findall(a.body.decode(errors="replace"))
        frontier, seen = ["/"], {"/"}
        while frontier and len(out["navs"]) < navigations:
            path = frontier.pop(0)
            pace()
            a = client.get(path)
            reasons = a.headers.get("x-edgeguard-reasons", "")
            out["navs"].append((path, a.status, a.headers.get("x-edgeguard-action", ""), reasons,
                                a.headers.get("x-edgeguard-client", "")))
            if flagged(a.status, a.headers, a.body) and out["flagged_at"] is None:
                out["flagged_at"] = len(out["navs"])
                out["reasons"] = reasons
            if BEHAVIOUR in reasons.split(","):
                out["behaviour_at"] = len(out["navs"])
                out["requests_to_flag"] = sent
                out["seconds_to_flag"] = round((sent - 1) / rate, 1)
                break
            if a.status == 200:
                for link in LINK.findall(a.body.decode(errors="replace")):
                    link = link.replace("&amp;", "&")
                    if link not in seen and not NOT_PAGES.search(link):
                        seen.add(link)
                        frontier.append(link)
            if not frontier:
                for p in sitemap_pages:
                    if p not in seen:
                        seen.add(p)
                        frontier.append(p.replace("&amp;", "&"))
    finally:
        client.close()
    return out


def crawl_many(site, cases, navigations=30, first_source=(1, 0)):
    """Runs the (kind, keep_cookies, rate) cases at once, one thread and one
    source address each (127.G.N.1: G from first_source[0], N counting
    from first_source[1]). Returns the results in the cases' order."""
    results = [None] * len(cases)
    errors = []

    def run(i, case):
        kind, keep, rate = case
        # Each session in a /24 of its own: the memory's network record
        # (a /24) must not carry one session's crawl into the next.
        n = first_source[1] + i
        source = f"127.{first_source[0] + n // 250}.{n % 250 + 1}.1"
        try:
            results[i] = crawl(site, kind, keep, rate, source, navigations)
        except Exception as e:  # reported, not swallowed: the caller asserts on errors
            errors.append(f"{case} from {source}: {e!r}")

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(cases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise AssertionError("crawl sessions failed:\n" + "\n".join(errors))
    return results


def local_sources_work():
    """Whether this machine lets a socket bind 127.1.0.1 (Linux does)."""
    try:
        with socket.socket() as s:
            s.bind(("127.1.0.1", 0))
        return True
    except OSError:
        return False
