#!/usr/bin/env python3
"""Captures what real HTTP clients send, through nginx and edgeguard's own
recording path, into the labelled corpus of tests/fixtures/real_clients/.

    python3 models/capture/capture.py [--out DIR] [--only SUBSTRING] [--list]

(`make capture` installs the browsers and clients first, then runs this.)

nginx is started with a small shop site (models/capture/site/ plus the Lua
handlers below) on four origins:

    ip          http://127.0.0.1        (cross-origin API: http://localhost)
    http-host   http://shop.test        (cross-origin API: http://api.test)
    tls-h1      https://shop-h1.test    127.0.0.2:443, ALPN offers http/1.1 only
    tls-h2      https://shop.test       TLS with http2

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
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import browsers  # noqa: E402
import scripted  # noqa: E402

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MODULES = "/usr/lib/nginx/modules"
# The shop's names. The TLS HTTP/1.1 origin has names of its own on
# 127.0.0.2, so that it can listen on 443 beside the HTTP/2 one.
HOSTS = {"shop.test": "127.0.0.1", "api.test": "127.0.0.1",
         "shop-h1.test": "127.0.0.2", "api-h1.test": "127.0.0.2"}
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


def png(width, height, rgb):
    """A small valid PNG of one colour (no image library needed)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


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
    types {{ font/ttf ttf; }}

    init_by_lua_block {{
        -- Loaded in the master: workers read nothing from disk per request.
        require "resty.edgeguard.record"
        -- JA4 and TLS family of each TLS connection, logged as
        -- $edgeguard_ja4 and $edgeguard_tls_family.
        assert(require("resty.edgeguard.lib").load("{root}/target/release/libedgeguard.so"))
        require "resty.edgeguard.tls"
        local f = assert(io.open("{site}/login.html"))
        LOGIN_HTML = f:read("*a")
        f:close()
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
location = /search {{
    default_type text/html;
    add_header Cache-Control "no-store";
    content_by_lua_block {{
        local q = ngx.unescape_uri(((ngx.var.arg_q or ""):gsub("%+", " ")))
        q = q:gsub("[<>&\"]", "")
        ngx.print([[<!doctype html><html lang="en"><head><meta charset="utf-8">]],
            [[<title>Search - Corner Shop</title><link rel="stylesheet" href="/static/site.css">]],
            [[<link rel="icon" href="/favicon.ico"><script src="/static/app.js" defer></script></head>]],
            [[<body data-page="search"><main><h1>Results for ]], q, [[</h1>]],
            [[<ul><li><a href="/products/42">Walking shoes</a></li></ul>]],
            [[<p><a id="login" href="/login">Sign in</a> to see your offers.</p></main></body></html>]])
    }}
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
        elseif uri == "/api/events" then
            return ngx.exit(204)
        else
            return ngx.exit(404)
        end
    }}
}}
# Scripts, styles and the font are revalidated on every use (conditional
# requests, 304s); images are fresh for an hour.
location /static/ {{ add_header Cache-Control "no-cache"; }}
location /img/ {{ expires 1h; }}
location = /favicon.ico {{ expires 1d; default_type image/png; }}
"""


class Server:
    """nginx with the capture site on four loopback origins."""

    def __init__(self, prefix, netns):
        self.prefix = pathlib.Path(prefix)
        self.netns = netns
        os.chmod(self.prefix, 0o755)  # workers run as nobody
        (self.prefix / "logs").mkdir(exist_ok=True)
        if netns:
            self.listen = dict(NETNS_LISTEN)
        else:
            self.listen = {k: ("127.0.0.1", p if port_free(p) else free_port()) for k, p in PREFERRED_PORTS.items()}
        self.ports = {k: port for k, (_, port) in self.listen.items()}
        self.log = self.prefix / "logs" / "capture.jsonl"
        self.proc = None
        self._site()
        self._cert()
        site = self.prefix / "site"
        (self.prefix / "site.conf").write_text(SITE_CONF.format(site=site))
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
        return "\n".join(out)

    def _site(self):
        site = self.prefix / "site"
        shutil.copytree(HERE / "site", site)
        (site / "img").mkdir(exist_ok=True)
        (site / "img" / "logo.png").write_bytes(png(120, 40, (200, 60, 40)))
        (site / "img" / "header-bg.png").write_bytes(png(4, 40, (245, 245, 245)))
        (site / "img" / "product-42.png").write_bytes(png(200, 200, (40, 90, 160)))
        (site / "img" / "product-7.png").write_bytes(png(200, 200, (60, 140, 60)))
        (site / "img" / "deal.png").write_bytes(png(60, 30, (250, 200, 0)))
        (site / "favicon.ico").write_bytes(png(16, 16, (200, 60, 40)))
        font = pathlib.Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
        target = site / "static" / "shop-sans.ttf"
        if font.exists():
            shutil.copyfile(font, target)
        else:  # the request is what matters; the browser may reject the file
            target.write_bytes(b"\x00\x01\x00\x00" + b"\x00" * 60)
        for path in site.rglob("*"):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))

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


def dest_of(method, uri, headers):
    """What a request was for, from the site's own paths (the same for every
    client; Sec-Fetch-Dest is absent on plain-HTTP hostnames and in scripts)."""
    path = uri.split("?", 1)[0]
    host = next((v for k, v in headers if k.lower() in ("host", ":authority")), "")
    cross = host.startswith(("api", "localhost"))
    if method == "OPTIONS":
        return "preflight"
    if path.startswith("/api/"):
        return "api-cross" if cross else "api"
    if method == "POST":
        return "form-post"
    if path.startswith("/static/"):
        return {"js": "script", "css": "style", "ttf": "font"}.get(path.rsplit(".", 1)[-1], "static")
    if path.startswith("/img/"):
        return "img"
    if path == "/favicon.ico":
        return "favicon"
    if path == "/robots.txt":
        return "robots"
    if path == "/embed/widget":
        return "iframe"
    return "document"


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

    def begin(self, labels):
        self.session = dict(labels)
        self.seq = 0
        self.server.settle(self.quiet)  # stragglers of the previous session
        self.mark = self.server.size()

    def step(self, flow, action, quiet=None):
        start = self.server.size()
        action()
        end = self.server.settle(self.quiet if quiet is None else quiet)
        return self.take(flow, start, end)

    def take(self, flow, start, end):
        got = 0
        for rec in self.server.lines(start, end):
            row = record_row(rec)
            headers = row["headers"]
            row.update(self.session)
            row["protocol"] = rec["version"]
            row["flow"] = flow
            row["dest"] = dest_of(rec["method"], rec["uri"], headers)
            row["seq"] = self.seq
            self.seq += 1
            self.rows.append(row)
            got += 1
        return got


def identical_to_human(rows, manifest):
    """For each automated browser session: how many of its request heads
    (method, URI, version, every header name, value and position) a human
    session of the same engine on the same origin also sent, byte for byte.
    All of them means nginx cannot tell that automation from the person."""
    engine = {"chromium": "chromium", "chromium-headless-desktop-ua": "chromium",
              "selenium-chromium": "chromium", "firefox": "firefox"}
    def head(r):
        return (r["method"], r["uri"], r["version"], json.dumps(r["headers"]))

    human = {}
    for r in rows:
        if r["label"] == "human" and r["window"] == "normal":
            human.setdefault((r["client_name"], r["origin"]), set()).add(head(r))
    for entry in manifest["sessions"]:
        eng = engine.get(entry.get("client_name"))
        if entry.get("label") != "automated" or eng is None:
            continue
        seen = human.get((eng, entry["origin"]))
        mine = [r for r in rows if r["session"] == entry["id"]]
        if not seen or not mine:
            continue
        same = sum(head(r) in seen for r in mine)
        entry["identical_to_human"] = f"{same}/{len(mine)}"


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
    tries = [("net", ["-m", "-n"], "ip link set lo up && " + bind), ("mount", ["-m"], bind)]
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
    sessions = browsers.sessions(server, have_hosts) + scripted.sessions(server, have_hosts, prefix)
    if args.only:
        sessions = [s for s in sessions if any(o in s.id for o in args.only)]
    sessions = [s for s in sessions if not any(o in s.id for o in args.skip)]
    if args.list:
        for s in sessions:
            print(s.id)
        shutil.rmtree(prefix, ignore_errors=True)
        return 0

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(server, args.quiet)
    manifest = {
        "captured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nginx": subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr.strip(),
        "namespace": os.environ.get(NS_ENV, "none"),
        "hosts_resolve": have_hosts,
        "ports": server.ports,
        "sessions": [],
    }
    server.start()
    try:
        for s in sessions:
            t0 = time.monotonic()
            before = len(recorder.rows)
            entry = {"id": s.id, **s.labels}
            try:
                version = s.run(recorder)
                entry["client_version"] = version
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
            entry["requests"] = len(recorder.rows) - before
            manifest["sessions"].append(entry)
            print(f"capture: {s.id}: {entry['status']}, {entry['requests']} requests, "
                  f"{time.monotonic() - t0:.1f} s" + (f" ({entry['error']})" if "error" in entry else ""),
                  flush=True)
    finally:
        browsers.stop()
        server.stop()
        errors = [l for l in (server.prefix / "logs" / "error.log").read_text(errors="replace").splitlines()
                  if "[error]" in l or "[crit]" in l or "[alert]" in l or "[emerg]" in l]
        if errors:
            print("capture: nginx error log:\n" + "\n".join(errors[:20]), file=sys.stderr)
        if not args.keep:
            shutil.rmtree(prefix, ignore_errors=True)
        else:
            print(f"capture: nginx prefix kept in {prefix}")

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
