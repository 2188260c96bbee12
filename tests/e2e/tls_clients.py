"""Real TLS clients of this machine, and their ClientHellos as sent.

`capture(client)` runs a client against a bare TCP listener that records
the first TLS record it receives and hangs up: the ClientHello exactly as
the client's library built it, with no TLS server in between. The e2e test
compares the JA4 of these bytes (computed by `edgeguard tls`) with the one
nginx computes live; scripts/ja4-local-fixtures.py writes them to
tests/fixtures/tls/local-clienthellos.txt for the Rust tests.
"""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading

CHROMIUM = shutil.which("chromium")
GO = shutil.which("go")
NODE = shutil.which("node")

GO_CLIENT = """package main

import (
	"crypto/tls"
	"net/http"
	"os"
)

func main() {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	c := &http.Client{Transport: tr}
	for _, u := range os.Args[1:] {
		r, err := c.Get(u)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\\n")
			os.Exit(1)
		}
		b := make([]byte, 4096)
		n, _ := r.Body.Read(b)
		os.Stdout.Write(b[:n])
		r.Body.Close()
	}
}
"""

_go_binary = None


def go_binary():
    """Builds the Go client once per test session."""
    global _go_binary
    if _go_binary is None:
        d = tempfile.mkdtemp(prefix="edgeguard-go-")
        with open(os.path.join(d, "main.go"), "w") as f:
            f.write(GO_CLIENT)
        env = dict(os.environ, GOCACHE=os.path.join(d, "cache"), GO111MODULE="off", GOFLAGS="")
        subprocess.run([GO, "build", "-o", os.path.join(d, "client"), "main.go"], cwd=d, env=env,
                       check=True, timeout=300, capture_output=True)
        _go_binary = os.path.join(d, "client")
    return _go_binary


def curl(urls, http2=True):
    args = ["curl", "-sk", "--max-time", "10"]
    args.append("--http2" if http2 else "--http1.1")
    out = []
    for u in urls:
        args += [u] if not out else ["--next", "-sk", "--http2" if http2 else "--http1.1", u]
        out.append(u)
    return subprocess.run(args, capture_output=True, timeout=30).stdout.decode(errors="replace")


def python_requests(urls):
    import requests
    import urllib3
    urllib3.disable_warnings()
    with requests.Session() as s:  # one keep-alive connection
        return "".join(s.get(u, verify=False, timeout=10).text for u in urls)


def python_ssl(urls):
    """http.client over Python's ssl: HTTP/1.1, one connection."""
    import http.client
    import urllib.parse
    u0 = urllib.parse.urlsplit(urls[0])
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(u0.hostname, u0.port, context=ctx, timeout=10)
    out = []
    try:
        for u in urls:
            conn.request("GET", urllib.parse.urlsplit(u).path)
            out.append(conn.getresponse().read().decode(errors="replace"))
    finally:
        conn.close()
    return "".join(out)


def chromium(urls):
    out = []
    for u in urls:
        with tempfile.TemporaryDirectory(prefix="edgeguard-chromium-") as profile:
            r = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                                "--ignore-certificate-errors", f"--user-data-dir={profile}",
                                "--no-first-run", "--disable-extensions", "--dump-dom", u],
                               capture_output=True, timeout=60)
            out.append(r.stdout.decode(errors="replace"))
    return "".join(out)


def go(urls):
    return subprocess.run([go_binary(), *urls], capture_output=True, timeout=30).stdout.decode(errors="replace")


def node(urls):
    # Debian 12's node 18 resolves localhost to ::1 first and does not fall
    # back to 127.0.0.1 (no autoSelectFamily before node 20), where the
    # listeners are: ask for IPv4 first (the ClientHello is the same).
    script = """
require('dns').setDefaultResultOrder('ipv4first');
const https = require('https');
const agent = new https.Agent({keepAlive: true, rejectUnauthorized: false});
(async () => {
  for (const u of process.argv.slice(1)) {
    await new Promise((ok, bad) => https.get(u, {agent}, r => {
      let b = ''; r.on('data', d => b += d); r.on('end', () => { process.stdout.write(b); ok(); });
    }).on('error', bad));
  }
  agent.destroy();
})().catch(e => { console.error(String(e)); process.exit(1); });
"""
    return subprocess.run([NODE, "-e", script, *urls], capture_output=True, timeout=30).stdout.decode(errors="replace")


CLIENTS = {"curl": curl, "python-requests": python_requests, "python-ssl": python_ssl}
if CHROMIUM:
    CLIENTS["chromium"] = chromium
if GO:
    CLIENTS["go"] = go
if NODE:
    CLIENTS["node"] = node


def capture(client, host="localhost"):
    """The first TLS record `client` sends to a listener on a free port."""
    srv = socket.socket(socket.AF_INET6 if host == "::1" else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(60)
    port = srv.getsockname()[1]
    got = {}

    def serve():
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(20)
            data = b""
            while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            got["record"] = data[:5 + int.from_bytes(data[3:5], "big")] if len(data) >= 5 else data

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        CLIENTS[client]([f"https://{host}:{port}/"])
    except Exception:  # the handshake is cut short on purpose
        pass
    t.join(60)
    srv.close()
    return got.get("record")
