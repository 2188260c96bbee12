"""Real nginx + a real origin on loopback ports the tests pick.

The origin is a small Python HTTP server that records every request head it
receives, so assertions are made where it matters: at the origin.
"""

import http.client
import http.server
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIB = ROOT / "target" / "release" / "libedgeguard.so"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MODULES = "/usr/lib/nginx/modules"
BAD_LOG_LEVELS = ("[error]", "[crit]", "[alert]", "[emerg]")

# Python's parser refuses more than 100 headers; the tests send 150.
http.client._MAXHEADERS = 10_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, check, timeout=20.0):
    """Polls check() until it returns something true, and returns that."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def replace(path, data):
    """Swaps a file in atomically, as a deploy would."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def wait_for_port(port, proc=None, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class Origin:
    """Records (method, target, [(name, value), ...]) for every request."""

    def __init__(self):
        self.requests = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                headers = list(self.headers.items())
                origin.requests.append((self.command, self.path, headers))
                body = json.dumps(headers).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def last_headers(self):
        assert self.requests, "the origin received no request"
        return self.requests[-1][2]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Nginx:
    """One nginx master (daemon off) with its own prefix directory."""

    def __init__(self, conf, prefix=None):
        self.prefix = pathlib.Path(prefix or tempfile.mkdtemp(prefix="edgeguard-e2e-"))
        # Workers run as an unprivileged user when the master is root.
        os.chmod(self.prefix, 0o755)
        (self.prefix / "logs").mkdir(exist_ok=True)
        (self.prefix / "nginx.conf").write_text(conf)
        self.proc = None

    @property
    def error_log(self):
        path = self.prefix / "logs" / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self, port, expect_failure=False):
        self.proc = subprocess.Popen(
            [NGINX, "-p", f"{self.prefix}/", "-c", "nginx.conf", "-g", "daemon off;"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        up = wait_for_port(port, self.proc)
        if expect_failure:
            return up
        if not up:
            out = self.proc.stdout.read().decode(errors="replace") if self.proc.poll() is not None else ""
            self.stop()
            raise AssertionError(f"nginx did not start:\n{out}\n{self.error_log}")
        return True

    def exit_output(self, timeout=10):
        """For a master that is expected to exit: its code and console output."""
        code = self.proc.wait(timeout=timeout)
        return code, self.proc.stdout.read().decode(errors="replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()

    def cleanup(self):
        if not os.environ.get("EDGEGUARD_KEEP_NGINX"):
            shutil.rmtree(self.prefix, ignore_errors=True)


STRIP_ONLY = """
                local removed, err = require("resty.edgeguard").clear_internal_headers()
                if not removed then
                    ngx.log(ngx.ERR, "edgeguard: ", err)
                    return ngx.exit(500)
                end
                ngx.header["X-Edgeguard-Removed"] = removed
"""


def nginx_preamble(workers=1, worker_connections=256):
    """The top of every test nginx.conf, up to inside http{}: the Lua module,
    logs and temp paths under the prefix's logs/, and edgeguard's Lua path.
    The caller appends the rest of http{} and its closing brace."""
    return f"""
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes {workers};
error_log logs/error.log info;
pid logs/nginx.pid;
events {{ worker_connections {worker_connections}; }}
http {{
    access_log off;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    lua_package_path "{ROOT}/lua/?.lua;;";"""


def edge_conf(port, origin_port, list_path, underscores=True, extra_servers="", configure="", access=STRIP_ONLY,
              location_extra="", http_extra="", workers=1, init=""):
    """The test configuration: the shipped one's edgeguard blocks, with test ports."""
    return nginx_preamble(workers) + f"""
    {http_extra}
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{list_path}",
            lib_path = "{LIB}",
            {configure}
        }})
        -- Whatever the request-time code needs is loaded here, in the master:
        -- workers run as `nobody` and may not be able to read the tree.
        {init}
    }}
    init_worker_by_lua_block {{
        require("resty.edgeguard").init_worker()
    }}
    server {{
        listen 127.0.0.1:{port};
        underscores_in_headers {"on" if underscores else "off"};
        location / {{
            {location_extra}
            # The shipped placement (docs/placement.md).
            rewrite_by_lua_block {{
                {access}
            }}
            proxy_pass http://127.0.0.1:{origin_port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    {extra_servers}
}}
"""


def raw_request(port, header_lines, target="/", method="GET"):
    """Sends exactly these header lines; returns (status, response headers, body)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: edge.test", *header_lines, "Connection: close", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall("\r\n".join(lines).encode("latin-1"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *rest = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in rest:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def send_exact(port, method, target, headers):
    """Sends exactly these headers, in this order, nothing added (no Host, no
    Connection): what a scoring test sends must be what the model sees.
    Returns (status, response headers dict, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


@pytest.fixture(scope="session")
def origin():
    o = Origin()
    yield o
    o.stop()


TEST_LIST = ROOT / "tests" / "e2e" / "data" / "internal-headers.txt"

# Chrome 147 on macOS fetching JSON from its own origin (the README's "Try it"
# request): it passes the shipped bot model (bot ~ 0.002).
CHROME = [
    ("Host", "edge.test"),
    ("Connection", "keep-alive"),
    ("sec-ch-ua", '"Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"'),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", '"macOS"'),
    ("User-Agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
                   "(KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36"),
    ("Accept", "application/json, text/plain, */*"),
    ("Sec-Fetch-Site", "same-origin"),
    ("Sec-Fetch-Mode", "cors"),
    ("Sec-Fetch-Dest", "empty"),
    ("Referer", "https://shop.example/checkout"),
    ("Accept-Encoding", "gzip, deflate, br"),
    ("Accept-Language", "en-US,en;q=0.9"),
]


def bad_log_lines(text):
    return [line for line in text.splitlines() if any(lvl in line for lvl in BAD_LOG_LEVELS)]


def running_edge(origin, list_path=None, **conf):
    """Starts nginx; yields (port, nginx); stops it and checks its error log."""
    port = free_port()
    nginx = Nginx(edge_conf(port, origin.port, list_path or TEST_LIST, **conf))
    nginx.start(port)
    yield port, nginx
    nginx.stop()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)


def _edge(origin, list_path, underscores):
    yield from running_edge(origin, list_path, underscores=underscores)


@pytest.fixture(scope="module")
def edge(origin):
    """nginx with underscores_in_headers on, and the test list."""
    yield from _edge(origin, TEST_LIST, underscores=True)


@pytest.fixture(scope="module")
def edge_strict(origin):
    """nginx with the default underscores_in_headers off."""
    yield from _edge(origin, TEST_LIST, underscores=False)


def metrics_server(port):
    """A server block answering edgeguard.metrics() at /metrics on `port`."""
    return f"""
    server {{
        listen 127.0.0.1:{port};
        location = /metrics {{
            content_by_lua_block {{
                ngx.header.content_type = "text/plain; version=0.0.4"
                ngx.print(require("resty.edgeguard").metrics())
            }}
        }}
    }}
"""


METRICS_DICT = "lua_shared_dict edgeguard_metrics 1m;"


def get_text(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()
