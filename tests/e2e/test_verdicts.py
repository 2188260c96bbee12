"""Graded verdicts through real nginx in mode `block` (issue 38): a person's
perfect Chromium head over a TLS-inspecting proxy's ClientHello (here
Python's ssl module: OpenSSL, as Zscaler-like gateways and antivirus
software re-make it) is ambiguous and gets the challenge, not the 403; curl's
default head over the same TLS is certain and blocked. The decision lines
name the detection IDs, the grade, nginx's $request_id and the host;
`vars = { "reasons" }` sets $edgeguard_reasons and $edgeguard_grade; the
Prometheus text counts the IDs.
"""

import json
import re
import socket
import ssl
import subprocess

import pytest

from conftest import LIB, ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, get_text, metrics_server, nginx_preamble

CORPUS = ROOT / "tests" / "fixtures" / "real_clients" / "corpus.jsonl"
SECRET = ROOT / "tests" / "fixtures" / "challenge" / "secret"


def corpus_row(family, dest):
    """The first person's request of `family` for destination `dest`."""
    for line in open(CORPUS, "rb"):
        r = json.loads(line)
        if r["label"] == "human" and r["family"] == family and r["dest"] == dest and r["version"] == "HTTP/1.1":
            return r
    raise AssertionError(f"no {family} {dest} row in the corpus")


def conf(tls_port, metrics_port, challenge=True):
    # The page's status apart from the block's 403, so that a test can
    # tell them by status alone.
    secret = f'challenge_secret = "{SECRET}", challenge_status = 429,' if challenge else ""
    return nginx_preamble() + f"""
    lua_shared_dict edgeguard_metrics 1m;
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}",
            lib_path = "{LIB}",
            models = {{ bot = "{ROOT}/models/bot.json" }},
            mode = "block",
            {secret}
            vars = {{ "reasons" }},
            metrics_dict = "edgeguard_metrics",
        }})
        require "resty.edgeguard.tls"
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    server {{
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        set $edgeguard_bot "";
        set $edgeguard_action "";
        set $edgeguard_time "";
        set $edgeguard_verified_bot "";
        set $edgeguard_reasons "";
        set $edgeguard_grade "";
        rewrite_by_lua_block {{ require("resty.edgeguard").access() }}
        location / {{
            add_header X-Action $edgeguard_action always;
            add_header X-Reasons $edgeguard_reasons always;
            add_header X-Grade $edgeguard_grade always;
            content_by_lua_block {{ ngx.say("origin") }}
        }}
    }}
    {metrics_server(metrics_port)}
}}
"""


class Edge:
    def __init__(self, challenge=True):
        self.port, self.metrics_port = free_port(), free_port()
        self.nginx = Nginx(conf(self.port, self.metrics_port, challenge))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", self.nginx.prefix / "key.pem",
                        "-out", self.nginx.prefix / "cert.pem"], check=True, capture_output=True, timeout=60)
        self.nginx.start(self.port)

    def send(self, headers, target="/"):
        """`headers` in their order over Python's TLS (OpenSSL, ALPN `h2`
        then `http/1.1`, as a browser offers): status, headers, body."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                head = f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
                s.sendall(head.encode("latin-1"))
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    if b"\r\n\r\n" in data:
                        top, _, body = data.partition(b"\r\n\r\n")
                        m = re.search(rb"(?i)content-length: *(\d+)", top)
                        if (m and len(body) >= int(m.group(1))) or body.endswith(b"0\r\n\r\n"):
                            break
        top, _, body = data.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        h = {k.lower(): v for k, v in (l.split(": ", 1) for l in lines[1:])}
        return status, h, body

    def lines(self, offset=0):
        return [l for l in self.nginx.error_log[offset:].splitlines() if "edgeguard action=" in l]

    def stop(self):
        self.nginx.stop()
        self.nginx.cleanup()


@pytest.fixture(scope="module")
def edge():
    e = Edge()
    yield e
    e.stop()


def head(row):
    """The row's headers as the browser sent them (`Connection:
    keep-alive` included: the reader stops at the body's end)."""
    return [(k, v) for k, v in row["headers"]]


def test_a_person_behind_a_tls_inspecting_proxy_is_challenged_not_blocked(edge):
    row = corpus_row("chromium-linux", "document")
    offset = len(edge.nginx.error_log)
    status, h, body = edge.send(head(row))
    assert (status, h["content-type"]) == (429, "text/html; charset=utf-8"), (status, h, body[:300])
    assert b"/.edgeguard/challenge" in body
    assert (h["x-action"], h["x-grade"], h["x-reasons"]) == ("challenge", "ambiguous", "tls_family_mismatch")
    [line] = edge.lines(offset)
    assert " action=challenge grade=ambiguous reasons=tls_family_mismatch model=bot " in line, line
    assert re.search(r" request_id=[0-9a-f]{32} host=127\.0\.0\.1 client=127\.0\.0\.1 method=GET uri=\"/\"", line), line
    assert not bad_log_lines(edge.nginx.error_log)


def test_its_subresource_before_a_clearance_gets_the_problem_document(edge):
    row = corpus_row("chromium-linux", "style")
    offset = len(edge.nginx.error_log)
    status, h, body = edge.send(head(row), target=row["uri"])
    assert h["content-type"] == "application/problem+json", (status, h, body[:300])
    assert h["x-grade"] == "ambiguous" and h["x-reasons"] == "tls_family_mismatch"
    [line] = edge.lines(offset)
    assert " action=challenge_required grade=ambiguous reasons=tls_family_mismatch " in line, line


def test_curls_default_head_is_certain_and_blocked(edge):
    offset = len(edge.nginx.error_log)
    status, h, body = edge.send([("Host", "shop.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*"),
                                 ("Connection", "close")])
    assert status == 403 and b"/.edgeguard/challenge" not in body, (status, h, body[:300])
    assert h["x-grade"] == "certain" and h["x-reasons"] == "ua_library"
    [line] = edge.lines(offset)
    assert " action=block grade=certain reasons=ua_library model=bot " in line, line
    assert " host=shop.test " in line


def test_the_reasons_are_counted(edge):
    text = get_text(edge.metrics_port, "/metrics")[1]
    counts = {m.group(1): float(m.group(2)) for m in
              re.finditer(r'^edgeguard_reasons_total\{reason="([a-z0-9_]+)",strength="[a-z]+"\} (\S+)$', text, re.M)}
    assert counts["tls_family_mismatch"] >= 2 and counts["ua_library"] >= 1, counts
    # One series per detection ID: as many as the header says there are.
    header = (ROOT / "include" / "edgeguard.h").read_text()
    assert len(counts) == int(re.search(r"#define EDGEGUARD_DETECTION_COUNT (\d+)", header).group(1))


def test_without_a_challenge_ambiguous_verdicts_are_logged_and_the_load_says_so():
    e = Edge(challenge=False)
    try:
        assert "ambiguous verdicts (only reasons a proxy in front of a person can cause) are logged" \
            in " ".join(e.nginx.error_log.split())
        row = corpus_row("chromium-linux", "document")
        status, h, _ = e.send(head(row))
        assert (status, h["x-action"], h["x-grade"]) == (200, "log", "ambiguous")
        status, h, _ = e.send([("Host", "shop.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*")])
        assert (status, h["x-grade"]) == (403, "certain")
    finally:
        e.stop()
