#!/usr/bin/env python3
"""Captures what real HTTP clients send, through nginx and edgeguard's own
recording path, into the labelled corpus of tests/fixtures/real_clients/.

    python3 models/capture/capture.py [--out DIR] [--only SUBSTRING] [--list]

(`make capture` installs the browsers and clients first, then runs this.)

nginx is started with the capture site (sitemap.py: a shop with a magazine,
docs, a forum, localized sections, files and media; models/capture/site/
plus the Lua handlers below) on four origins:

    ip          http://127.0.0.1        (cross-origin API: http://localhost)
    http-host   http://shop.test        (cross-origin API: http://api.test)
    tls-h1      https://shop-h1.test    127.0.0.2:443, ALPN offers http/1.1 only
    tls-h2      https://shop.test       TLS with http2

and, beside them, two other sites that link to the shop, whose requests are
not recorded: a search engine (https://search.test) and a blog
(http://blog.test).

Every request is recorded by `require("resty.edgeguard.record").capture()`
into an access log in the shipped format (nginx-conf/log-format.conf): the
header array nginx saw, in arrival order and the client's letter case. The
clients are driven one session at a time and one step at a time; a step's
requests are the log lines that appear between its start and the moment the
log stops growing, so every line is labelled with the session (client,
version, mode, origin) and the step (flow) that made it. No URL or header is
added to tag requests: the heads are the clients' own.

The capture re-runs itself under `unshare -m -n` (in_namespace_or_reexec):
a network namespace of its own (loopback only, standard ports, nothing
reaches out) and an /etc/hosts, bind-mounted in a private mount namespace,
that maps the shop's names; browsers also get their own mapping flags. The
TLS certificate is self-signed, made with openssl at capture time.
"""

import argparse
import datetime
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import browsers  # noqa: E402
import flows  # noqa: E402
import scripted  # noqa: E402
import sitemap  # noqa: E402

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MODULES = "/usr/lib/nginx/modules"
# The shop's names. The TLS HTTP/1.1 origin has names of its own on
# 127.0.0.2, so that it can listen on 443 beside the HTTP/2 one.
HOSTS = {"shop.test": "127.0.0.1", "api.test": "127.0.0.1",
         "shop-h1.test": "127.0.0.2", "api-h1.test": "127.0.0.2",
         sitemap.SEARCH_HOST: "127.0.0.1", sitemap.BLOG_HOST: "127.0.0.1"}
NS_ENV = "EDGEGUARD_CAPTURE_NS"
HOSTS_ENV = "EDGEGUARD_CAPTURE_HOSTS"  # the hosts file's directory, removed once mounted
# In a private network namespace every origin is on its scheme's own port,
# as on a real site (no port in Host, Origin or Referer). Without one, on
# the machine's loopback beside other servers: fixed high ports when free
# (the Host header carries them: stable from run to run), else free ones.
NETNS_LISTEN = {"ip": ("127.0.0.1", 80), "http-host": ("127.0.0.1", 80),
                "tls-h1": ("127.0.0.2", 443), "tls-h2": ("127.0.0.1", 443)}
PREFERRED_PORTS = {"ip": 28480, "http-host": 28481, "tls-h1": 28482, "tls-h2": 28483}
FIXED_MTIME = 1767225600  # 2026-01-01: stable ETag / Last-Modified values


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NGINX_CONF = r"""
load_module {modules}/ndk_http_module.so;
load_module {modules}/ngx_http_lua_module.so;
# One worker: the log is written in the order requests finish, and nothing
# else talks to these ports.
worker_processes 1;
error_log logs/error.log info;
pid logs/nginx.pid;
events {{ worker_connections 512; }}
http {{
    include {root}/nginx-conf/log-format.conf;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    lua_package_path "{root}/lua/?.lua;;";
    server_tokens off;
    keepalive_timeout 30s;
    types {{ font/ttf ttf; text/javascript mjs; }}

    init_by_lua_block {{
        -- Loaded in the master: workers read nothing from disk per request.
        require "resty.edgeguard.record"
        -- JA4 and TLS family of each TLS connection, logged as
        -- $edgeguard_ja4 and $edgeguard_tls_family.
        assert(require("resty.edgeguard.lib").load("{root}/target/release/libedgeguard.so"))
        require "resty.edgeguard.tls"
        local function read(name)
            local f = assert(io.open("{site}/" .. name))
            local text = f:read("*a")
            f:close()
            return text
        end
        LOGIN_HTML = read("login.html")
        CART_HTML = read("en-us/cart.html")
        -- The search results page of /search and the localized searches.
        function SEARCH_PAGE()
            local q = ngx.unescape_uri(((ngx.var.arg_q or ""):gsub("%+", " ")))
            q = q:gsub("[<>&\"]", "")
            ngx.print([[<!doctype html><html lang="en"><head><meta charset="utf-8">]],
                [[<title>Search - Corner Shop</title><link rel="stylesheet" href="/static/site.css">]],
                [[<link rel="icon" href="/favicon.ico"><script src="/static/app.js" defer></script></head>]],
                [[<body data-page="search"><main><h1>Results for ]], q, [[</h1>]],
                [[<ul><li><a href="/products/42">Walking shoes</a></li></ul>]],
                [[<p><a id="login" href="/login">Sign in</a> to see your offers.</p></main></body></html>]])
        end
    }}

    # Every request, every location: the headers as the client sent them.
    access_by_lua_block {{
        local n, err = require("resty.edgeguard.record").capture()
        if not n then ngx.log(ngx.ERR, "capture: recording headers: ", err) end
    }}
    access_log logs/capture.jsonl edgeguard_json;

    ssl_certificate {prefix}/cert.pem;
    ssl_certificate_key {prefix}/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
{servers}
}}
"""

SITE_CONF = r"""
root {site};
set $edgeguard_request_headers "";
set $edgeguard_bot "";
set $edgeguard_spoof "";
set $edgeguard_action "";
set_by_lua_block $edgeguard_ja4 {{ return require("resty.edgeguard.tls").ja4() or "" }}
set_by_lua_block $edgeguard_tls_family {{ return require("resty.edgeguard.tls").family() or "" }}
etag on;
index index.html;

location = / {{
    add_header Cache-Control "no-store";
    add_header Set-Cookie "sid=c0ffee42; Path=/; Max-Age=2592000; HttpOnly; SameSite=Lax";
    try_files /index.html =404;
}}
location ~ ^/products/([0-9]+)$ {{
    add_header Cache-Control "no-store";
    try_files /products/$1.html =404;
}}
location = /account {{
    add_header Cache-Control "no-store";
    try_files /account.html =404;
}}
location = /embed/widget {{
    try_files /embed/widget.html =404;
}}
# Search pages: the shop's, the docs', the localized ones.
location ~ ^/(search|docs/v2/search|de-de/suche|fr/recherche)$ {{
    default_type text/html;
    add_header Cache-Control "no-store";
    content_by_lua_block {{ SEARCH_PAGE() }}
}}
location = /login {{
    default_type text/html;
    add_header Cache-Control "no-store";
    content_by_lua_block {{
        if ngx.req.get_method() == "POST" then
            ngx.req.read_body()
            ngx.header["Set-Cookie"] = "session=5e551on; Path=/; HttpOnly; SameSite=Lax"
            return ngx.redirect("/account", 303)
        end
        ngx.print(LOGIN_HTML)
    }}
}}
# The cart: POST adds (a cookie) and answers 303; GET shows it.
location = /en-us/cart {{
    default_type text/html;
    add_header Cache-Control "no-store";
    content_by_lua_block {{
        if ngx.req.get_method() == "POST" then
            ngx.req.read_body()
            ngx.header["Set-Cookie"] = "cart=am90-red.1; Path=/; Max-Age=604800; SameSite=Lax"
            return ngx.redirect("/en-us/cart", 303)
        end
        ngx.print(CART_HTML)
    }}
}}
location = /forum/thread/88123/reply {{
    content_by_lua_block {{
        ngx.req.read_body()
        return ngx.redirect("/forum/thread/88123?page=5#post-990", 303)
    }}
}}
location /api/ {{
    default_type application/json;
    content_by_lua_block {{
        local origin = ngx.var.http_origin
        if origin then
            ngx.header["Access-Control-Allow-Origin"] = origin
            ngx.header["Vary"] = "Origin"
        end
        if ngx.req.get_method() == "OPTIONS" then
            ngx.header["Access-Control-Allow-Methods"] = "GET, POST"
            ngx.header["Access-Control-Allow-Headers"] = "Content-Type"
            ngx.header["Access-Control-Max-Age"] = "600"
            return ngx.exit(204)
        end
        ngx.req.read_body()
        local uri = ngx.var.uri
        if uri == "/api/cart" then
            ngx.print('{{"items":0}}')
        elseif uri == "/api/reviews" then
            ngx.print('{{"reviews":[{{"stars":5,"text":"Comfortable."}},{{"stars":4,"text":"Runs small."}}]}}')
        elseif uri == "/api/stock" then
            ngx.print('{{"available":true}}')
        elseif uri == "/api/comments" then
            ngx.print('{{"comments":[{{"by":"u17","text":"Did the third one in May."}}]}}')
        elseif uri == "/api/events" then
            return ngx.exit(204)
        else
            return ngx.exit(404)
        end
    }}
}}
# Scripts, styles and fonts are revalidated on every use (conditional
# requests, 304s); images are fresh for an hour; articles for five minutes.
location /static/ {{ add_header Cache-Control "no-cache"; }}
location /img/ {{ expires 1h; }}
location = /favicon.ico {{ expires 1d; default_type image/png; }}
location /media/ {{ expires 1h; }}
location /downloads/ {{ add_header Content-Disposition "attachment"; }}
location /files/ {{ }}
location ~ ^/(blog|news)/ {{
    add_header Cache-Control "max-age=300";
    default_type text/html;
    try_files $uri $uri.html =404;
}}
location /en-us/products/ {{
    add_header Cache-Control "no-cache";
    default_type text/html;
    try_files $uri $uri.html $uri/ =404;
}}
# Every other page: a file, the same with .html (pages without an
# extension), or a directory's index.html; no Cache-Control (heuristic
# freshness from Last-Modified, as on many sites).
location / {{
    default_type text/html;
    try_files $uri $uri.html $uri/ =404;
}}
"""

# The other sites: a search engine and a blog, whose pages link to the shop
# origin their `shop` query names (sitemap.external_pages). Not recorded.
EXTERNAL_CONF = r"""
server_name {names};
root {root};
# Not the corpus (the shop's nginx is what edgeguard sees); kept for
# checking the flows that pass through these sites.
access_log logs/external.log;
default_type text/html;
location = /search {{ try_files /search/$arg_shop.html =404; }}
location / {{ try_files /blog/$arg_shop.html =404; }}
"""

class Server:
    """nginx with the capture site on four loopback origins, and the two
    other sites that link to it."""

    def __init__(self, prefix, netns):
        self.prefix = pathlib.Path(prefix)
        self.netns = netns
        self.hosts = dict(HOSTS)
        if netns:
            self.listen = dict(NETNS_LISTEN)
        else:
            self.listen = {k: ("127.0.0.1", p if port_free(p) else free_port()) for k, p in PREFERRED_PORTS.items()}
        self.ports = {k: port for k, (_, port) in self.listen.items()}
        self.log = self.prefix / "logs" / "capture.jsonl"
        self.proc = None

    def build(self, media=True):
        """Writes the site, the other sites, the certificate and nginx's
        configuration under the prefix."""
        os.chmod(self.prefix, 0o755)  # workers run as nobody
        (self.prefix / "logs").mkdir(exist_ok=True)
        site = self.prefix / "site"
        sitemap.build(site, media=media)
        sitemap.external_pages(self.prefix / "external", {o: self.base(o) for o in self.listen})
        sitemap.chmod_tree(site, FIXED_MTIME)
        sitemap.chmod_tree(self.prefix / "external", FIXED_MTIME)
        self._cert()
        (self.prefix / "site.conf").write_text(SITE_CONF.format(site=site))
        (self.prefix / "external.conf").write_text(EXTERNAL_CONF.format(
            names=f"{sitemap.SEARCH_HOST} {sitemap.BLOG_HOST}", root=self.prefix / "external"))
        (self.prefix / "nginx.conf").write_text(
            NGINX_CONF.format(
                modules=MODULES,
                root=ROOT,
                site=site,
                prefix=self.prefix,
                servers=self._servers(),
            )
        )

    def _servers(self):
        out = []
        for addr in sorted(set(self.listen.values())):
            kinds = [k for k, v in self.listen.items() if v == addr]
            flags = " ssl http2" if "tls-h2" in kinds else " ssl" if "tls-h1" in kinds else ""
            out.append(f"    server {{  # {', '.join(kinds)}\n        listen {addr[0]}:{addr[1]}{flags};\n"
                       f"        include {self.prefix}/site.conf;\n    }}")
        # The other sites, after the shop's (the first server of an address
        # is its default): the blog on plain HTTP, the search engine on TLS
        # with HTTP/2.
        for kind in ("http-host", "tls-h2"):
            addr = self.listen[kind]
            flags = " ssl http2" if kind == "tls-h2" else ""
            out.append(f"    server {{  # {sitemap.SEARCH_HOST}, {sitemap.BLOG_HOST}\n"
                       f"        listen {addr[0]}:{addr[1]}{flags};\n"
                       f"        include {self.prefix}/external.conf;\n    }}")
        return "\n".join(out)

    def _cert(self):
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                "-keyout", str(self.prefix / "key.pem"), "-out", str(self.prefix / "cert.pem"),
                "-subj", "/CN=shop.test",
                "-addext", "subjectAltName=" + ",".join([f"DNS:{h}" for h in HOSTS] + ["DNS:localhost", "IP:127.0.0.1"]),
            ],
            check=True,
            capture_output=True,
        )

    def trust_certificate(self):
        """In the capture's own mount namespace: the system's CA bundle plus
        the test certificate, bind-mounted over the bundle, so that a
        browser without a certificate-error switch (Epiphany outside
        WebDriver, through GnuTLS) opens the TLS origins as it opens a
        site with a valid certificate. Returns whether it could."""
        bundle = pathlib.Path("/etc/ssl/certs/ca-certificates.crt")
        if os.environ.get(NS_ENV) not in ("net", "mount") or not bundle.exists() or not shutil.which("mount"):
            return False
        trusted = self.prefix / "ca-certificates.crt"
        trusted.write_bytes(bundle.read_bytes() + b"\n" + (self.prefix / "cert.pem").read_bytes())
        os.chmod(trusted, 0o644)
        p = subprocess.run(["mount", "--bind", str(trusted), str(bundle)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"capture: cannot trust the test certificate: {p.stderr.strip()}", file=sys.stderr)
        return p.returncode == 0

    def start(self):
        self.proc = subprocess.Popen(
            [NGINX, "-p", f"{self.prefix}/", "-c", "nginx.conf", "-g", "daemon off;"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        for addr in set(self.listen.values()):
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError("nginx did not start:\n" + self.proc.stdout.read().decode(errors="replace"))
                try:
                    socket.create_connection(addr, timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"nginx is not listening on {addr}")
                    time.sleep(0.05)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def base(self, origin, host=None):
        scheme = "https" if origin.startswith("tls") else "http"
        if host is None:
            host = "127.0.0.1" if origin == "ip" else "shop-h1.test" if origin == "tls-h1" and self.netns else "shop.test"
        port = self.ports[origin]
        return f"{scheme}://{host}" + ("" if port == (443 if scheme == "https" else 80) else f":{port}")

    def site(self, origin):
        """The URLs a browser session on `origin` visits (flows.Site)."""
        return flows.Site(self.base(origin), origin, self.base("tls-h2", sitemap.SEARCH_HOST),
                          self.base("http-host", sitemap.BLOG_HOST))

    def size(self):
        try:
            return self.log.stat().st_size
        except FileNotFoundError:
            return 0

    def settle(self, quiet, timeout=30.0):
        """Waits until the log has not grown for `quiet` seconds."""
        last = self.size()
        changed = time.monotonic()
        deadline = changed + timeout
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self.size()
            if now != last:
                last, changed = now, time.monotonic()
            elif time.monotonic() - changed >= quiet:
                break
        return last

    def lines(self, start, end):
        with open(self.log, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        return [json.loads(line) for line in data.splitlines() if line.strip()]


def record_row(rec):
    """The corpus line of one access-log line: the request fields of the
    replay input (`edgeguard replay` and `edgeguard features` both read it),
    with `headers` as the array capture() wrote. The log holds that array as
    JSON text inside a JSON string; it is decoded once, and re-encoding it
    must give back the very text nginx logged (so order, case, repeats and
    bytes are the client's), or the capture stops."""
    text = rec.get("headers")
    headers = json.loads(text) if text not in (None, "", "-") else []
    again = json.dumps(headers, ensure_ascii=False, separators=(",", ":"))
    if text not in (None, "", "-") and again != text:
        raise RuntimeError(f"header text does not round-trip: {text!r}")
    row = {
        "client": rec["client"],
        "method": rec["method"],
        "uri": rec["uri"],
        "version": rec["version"],
        "status": rec["status"],
        "headers": headers,
    }
    # The connection's TLS facts as nginx saw them in its ClientHello
    # callback: what the TLS features read (absent on plain HTTP).
    ja4, family = rec.get("edgeguard_ja4") or "", rec.get("edgeguard_tls_family") or ""
    if ja4 not in ("", "-"):
        row["edgeguard_ja4"] = ja4
        row["edgeguard_tls_family"] = family
    return row


class Recorder:
    """Runs steps and turns the log lines of each into labelled rows."""

    def __init__(self, server, quiet):
        self.server = server
        self.quiet = quiet
        self.rows = []
        self.session = None
        self.seq = 0
        self.steps = 0
        self.missed = []
        self.retried = []

    def begin(self, labels):
        self.session = dict(labels)
        self.seq = 0
        self.steps = 0
        self.missed = []
        self.retried = []
        self.server.settle(self.quiet)  # stragglers of the previous session
        self.mark = self.server.size()

    def step(self, flow, action, quiet=None, expect=None, retry=False):
        """Runs one step; `expect`: the URI (or its start) one of its
        requests must have, else the step is listed in the manifest as
        missed (a click on nothing, a page that did not load). With
        `retry`, a missed step is made once more (a key press a busy
        window lost) and listed as retried."""
        self.steps += 1
        got = 0
        for attempt in range(2 if retry else 1):
            start = self.server.size()
            action()
            end = self.server.settle(self.quiet if quiet is None else quiet)
            rows = self.take(flow, start, end)
            got += len(rows)
            if expect is None or any(r["uri"].startswith(expect) for r in rows):
                if attempt:
                    self.retried.append(f"{self.steps}:{flow}:{expect}")
                return got
        self.missed.append(f"{self.steps}:{flow}:{expect}")
        return got

    def take(self, flow, start, end):
        got = []
        for rec in self.server.lines(start, end):
            row = record_row(rec)
            headers = row["headers"]
            row.update(self.session)
            row["protocol"] = rec["version"]
            row["flow"] = flow
            row["dest"] = sitemap.dest_of(rec["method"], rec["uri"], headers)
            row["url_kind"] = sitemap.url_kind(rec["uri"])
            row["scope"] = scope_of(row)
            row["seq"] = self.seq
            self.seq += 1
            self.rows.append(row)
            got.append(row)
        return got


# What the capture before issue 29 covered (7c385ea: Chromium and Firefox,
# the shop's first pages and sub-resources, these flows and languages):
# rows within it are `base`, every other row `wider`. The tests that hold
# the shipped model to the corpus use it to tell the rows the shipped model
# was trained on from the new ones (tests/e2e/test_real_clients.py).
BASE_FAMILIES = {"chromium-linux", "firefox"}
BASE_FLOWS = {"typed", "reload", "link", "back", "form-get", "form-post", "second-visit", "return-visit",
              "scrape", "script", "startup"}
BASE_LANGS = {"en-US", "de-DE", "-"}


def scope_of(row):
    """`base` for a request of the kind the capture before issue 29 made
    (one of its engines or scripts, flows and languages, to one of its
    URLs), `wider` for every other."""
    browser = row.get("family") in BASE_FAMILIES or row.get("mode") == "script"
    if (browser and row.get("flow") in BASE_FLOWS and sitemap.base_url(row["uri"])
            and row.get("lang", "-") in BASE_LANGS):
        return "base"
    return "wider"


def head(r):
    return (r["method"], r["uri"], r["version"], json.dumps(r["headers"]))


# A person's browser whose heads are compared with another's, per origin:
# resistFingerprinting against the same Firefox without it.
SAME_AS = {"firefox-rfp": "firefox"}


def identical_to_human(rows, manifest):
    """Measured, per session (manifest.json), against the person's sessions
    (normal window, en-US) on the same origin: how many of the session's
    request heads (method, URI, version, every header name, value and
    position) the other sent byte for byte.

    - `identical_to_human`, for each automated browser session: against a
      person's session of the same engine family. All of them means nginx
      cannot tell that automation from the person.
    - `identical_to_webdriver`, for each person's session driven without
      WebDriver (the keyboard, a browser's own command interface): against
      the same browser's WebDriver session. What WebDriver changes in a head.
    - `identical_to_<family>`, for the families of SAME_AS (Firefox with
      resistFingerprinting against Firefox)."""
    human = {}
    webdriven = {}
    for r in rows:
        if r["label"] == "human" and r["window"] == "normal" and r.get("lang", "en-US") == "en-US":
            human.setdefault((r.get("family"), r["origin"]), set()).add(head(r))
            if r.get("webdriver"):
                webdriven.setdefault((r["client_name"], r["origin"]), set()).add(head(r))
    for entry in manifest["sessions"]:
        mine = [r for r in rows if r["session"] == entry["id"]]
        if not mine:
            continue
        if entry.get("label") == "automated" and entry.get("mode") != "script":
            seen = human.get((entry.get("family"), entry["origin"]))
            if seen:
                entry["identical_to_human"] = f"{sum(head(r) in seen for r in mine)}/{len(mine)}"
            continue
        if entry.get("label") != "human":
            continue
        if entry.get("webdriver") is False:
            seen = webdriven.get((entry["client_name"], entry["origin"]))
            if seen:
                entry["identical_to_webdriver"] = f"{sum(head(r) in seen for r in mine)}/{len(mine)}"
        other = SAME_AS.get(entry.get("family"))
        if other and human.get((other, entry["origin"])):
            seen = human[(other, entry["origin"])]
            entry[f"identical_to_{other}"] = f"{sum(head(r) in seen for r in mine)}/{len(mine)}"


def in_namespace_or_reexec(argv):
    """Re-runs the capture in private namespaces: a network namespace (only
    a loopback interface: nothing can leave the machine, and every origin
    gets its scheme's port, as a real site has, without meeting the other
    servers of the machine) and a mount namespace in which /etc/hosts maps
    the shop's names, so every client resolves them as it resolves any name.
    Falls back to the mount namespace alone, then to none (then only browsers
    reach the hostname origins, through their own mapping flags). Returns
    normally when already inside or when no namespace can be made."""
    if os.environ.get(NS_ENV) or os.geteuid() != 0 or not shutil.which("unshare"):
        return
    hosts = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-capture-hosts-")) / "hosts"
    base = pathlib.Path("/etc/hosts").read_text() if pathlib.Path("/etc/hosts").exists() else ""
    hosts.write_text(base.rstrip("\n") + "\n" + "".join(f"{a} {h}\n" for h, a in HOSTS.items()))
    bind = 'mount --bind "$0" /etc/hosts'
    # 127.0.0.2 on lo: the TLS HTTP/1.1 origin's address, and an address
    # besides 127.0.0.1, without which getaddrinfo's AI_ADDRCONFIG (GLib's
    # resolver, so WebKitGTK's) answers no IPv4 address for any name.
    net = "ip link set lo up && ip addr add 127.0.0.2/8 dev lo && "
    tries = [("net", ["-m", "-n"], net + bind), ("mount", ["-m"], bind)]
    for kind, flags, setup in tries:
        if kind == "net" and not shutil.which("ip"):
            continue
        ns = ["unshare", *flags, "--propagation", "private", "sh", "-c"]
        probe = subprocess.run([*ns, setup, str(hosts)], capture_output=True)
        if probe.returncode == 0:
            sys.stdout.flush()
            os.execvpe("unshare", [*ns, setup + ' && exec "$@"', str(hosts), sys.executable, *argv],
                       dict(os.environ, **{NS_ENV: kind, HOSTS_ENV: str(hosts.parent)}))
        print(f"capture: no {kind} namespace ({probe.stderr.decode().strip()})", file=sys.stderr)
    shutil.rmtree(hosts.parent, ignore_errors=True)
    print("capture: scripted clients skip the hostname origins", file=sys.stderr)


def hosts_resolve():
    try:
        return all(socket.gethostbyname(h) == a for h, a in HOSTS.items())
    except OSError:
        return False


def select(sessions, args):
    if args.only:
        sessions = [s for s in sessions if any(o in s.id for o in args.only)]
    return [s for s in sessions if not any(o in s.id for o in args.skip)]


def engines(entries):
    """Client and engine versions per engine family, as the sessions
    reported them."""
    out = {}
    for e in entries:
        if e.get("status") != "ok" or e.get("mode") == "script":
            continue
        key = f"{e.get('family')}/{e.get('client_name')}"
        out.setdefault(key, {"client_version": e.get("client_version"), "engine_version": e.get("engine_version")})
    return dict(sorted(out.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "real_clients"))
    ap.add_argument("--only", action="append", default=[], help="run only sessions whose id contains this")
    ap.add_argument("--skip", action="append", default=[], help="skip sessions whose id contains this")
    ap.add_argument("--list", action="store_true", help="list the sessions and exit")
    ap.add_argument("--keep", action="store_true", help="keep nginx's prefix directory")
    ap.add_argument("--quiet", type=float, default=1.5, help="seconds without a new request that end a step")
    args = ap.parse_args()

    if not args.list:
        in_namespace_or_reexec([str(pathlib.Path(__file__).resolve()), *sys.argv[1:]])
    if os.environ.get(HOSTS_ENV):
        # Bind-mounted already: the mount keeps the file, the name can go.
        shutil.rmtree(os.environ.pop(HOSTS_ENV), ignore_errors=True)
    have_hosts = hosts_resolve()

    prefix = tempfile.mkdtemp(prefix="edgeguard-capture-")
    server = Server(prefix, netns=os.environ.get(NS_ENV) == "net")
    sessions = select(browsers.sessions(server, have_hosts) + scripted.sessions(server, have_hosts, prefix), args)
    if args.list:
        for s in sessions:
            print(s.id)
        shutil.rmtree(prefix, ignore_errors=True)
        return 0
    browsing = any(isinstance(s, browsers.BrowserSession) for s in sessions)
    # The site's media (GStreamer) only when a browser will play it.
    server.build(media=browsing)
    trusted = server.trust_certificate() if browsing else False

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(server, args.quiet)
    manifest = {
        "captured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nginx": subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr.strip(),
        "namespace": os.environ.get(NS_ENV, "none"),
        "hosts_resolve": have_hosts,
        "test_certificate_trusted": trusted,
        "ports": server.ports,
        "sessions": [],
    }
    started = time.monotonic()
    try:
        server.start()
        for s in sessions:
            t0 = time.monotonic()
            before = len(recorder.rows)
            entry = {"id": s.id, **s.labels}
            try:
                version = s.run(recorder)
                entry["client_version"] = version
                entry.update(getattr(s, "info", {}))
                entry["status"] = "ok"
            except Exception as e:  # a client that cannot run here is reported, not fatal
                entry["status"] = "failed"
                entry["error"] = f"{type(e).__name__}: {e}".strip()[:500]
                traceback.print_exc()
            finally:
                try:
                    s.cleanup()
                except Exception as e:  # a browser that died on its own
                    print(f"capture: {s.id}: cleanup: {type(e).__name__}: {e}", file=sys.stderr)
            for row in recorder.rows[before:]:
                row["client_version"] = entry.get("client_version", "unknown")
                row["engine_version"] = entry.get("engine_version", "-")
            entry["requests"] = len(recorder.rows) - before
            entry["steps"] = recorder.steps
            if recorder.missed:
                entry["missed_steps"] = list(recorder.missed)
            if recorder.retried:
                entry["retried_steps"] = list(recorder.retried)
            entry["seconds"] = round(time.monotonic() - t0, 1)
            manifest["sessions"].append(entry)
            print(f"capture: {s.id}: {entry['status']}, {entry['requests']} requests, "
                  f"{time.monotonic() - t0:.1f} s" + (f" ({entry['error']})" if "error" in entry else "")
                  + (f" missed {recorder.missed}" if recorder.missed else ""),
                  flush=True)
    finally:
        browsers.stop()
        server.stop()
        log = server.prefix / "logs" / "error.log"
        errors = [l for l in (log.read_text(errors="replace") if log.exists() else "").splitlines()
                  if "[error]" in l or "[crit]" in l or "[alert]" in l or "[emerg]" in l]
        if errors:
            print("capture: nginx error log:\n" + "\n".join(errors[:20]), file=sys.stderr)
        if not args.keep:
            shutil.rmtree(prefix, ignore_errors=True)
        else:
            print(f"capture: nginx prefix kept in {prefix}")
    manifest["seconds"] = round(time.monotonic() - started, 1)
    manifest["engines"] = engines(manifest["sessions"])

    identical_to_human(recorder.rows, manifest)
    with open(out / "corpus.jsonl", "w") as f:
        for row in recorder.rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    ok = sum(1 for e in manifest["sessions"] if e["status"] == "ok")
    print(f"capture: {len(recorder.rows)} requests from {ok} of {len(manifest['sessions'])} sessions "
          f"-> {out}/corpus.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
