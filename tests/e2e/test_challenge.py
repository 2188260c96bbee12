"""mode = "challenge" and verified bots through real nginx.

One nginx in challenge mode with the shipped bot model, a two-key
challenge_secret, the verified-bots fixture and the access log replay reads.
The client address is set per request with X-Real-IP (nginx's realip module,
trusted from 127.0.0.1), so one loopback test can come from another /24, from
IPv6, or from a crawler's prefix. Cookies are minted here too, with an
independent Python implementation of the token (HMAC-SHA256 over the record
src/challenge/token.rs documents), so that expired, tampered and old-key
cookies can be made; the real answer flow mints them in nginx.
"""

import base64
import hashlib
import hmac
import http.client
import ipaddress
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import pathlib
import urllib.parse

import pytest

from conftest import (LIB, METRICS_DICT, ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, get_text,
                      metrics_server, nginx_preamble, wait_until)

BOT_MODEL = ROOT / "models" / "bot.json"
BOTS = ROOT / "tests" / "fixtures" / "verified" / "bots.json"
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
KEY_NEW = bytes(range(32))
KEY_OLD = bytes(range(100, 132))
DIFFICULTY = 8
# challenge_difficulty_max's default: the base plus the default spread.
DIFFICULTY_MAX = DIFFICULTY + 2
NOJS_WAIT = 2

# What HeadlessChrome sends for a typed URL (the shipped model flags it) and
# what Chromium sends for a fetch() of its own origin (passes).
HEADLESS = [  # a captured request of Debian's headless Chromium (tests/fixtures/real_clients)
    ("Host", "edge.test"),
    ("Connection", "keep-alive"),
    ("sec-ch-ua", '"Not:A-Brand";v="8", "Chromium";v="156"'),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", '"Linux"'),
    ("Upgrade-Insecure-Requests", "1"),
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "HeadlessChrome/156.0.0.0 Safari/537.36"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,"
               "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
    ("Sec-Fetch-Site", "none"),
    ("Sec-Fetch-Mode", "navigate"),
    ("Sec-Fetch-User", "?1"),
    ("Sec-Fetch-Dest", "document"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Accept-Language", "en-US,en;q=0.9"),
]
HEADLESS_UA = dict(HEADLESS)["User-Agent"]
GOOGLEBOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
GOOGLEBOT = [("Host", "edge.test"), ("User-Agent", GOOGLEBOT_UA), ("Accept", "text/html,*/*"),
             ("Accept-Encoding", "gzip, deflate, br"), ("From", "googlebot(at)googlebot.com")]


def hexkey(k):
    return k.hex()


def binding(addr, ua, v4=24, v6=64):
    """Bytes 12..46 of a token (src/challenge/token.rs): prefix length,
    prefix, User-Agent hash, no TLS hash, flags 0."""
    ip = ipaddress.ip_address(addr)
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.version == 4:
        bits = 96 + v4
        full = int(ipaddress.IPv6Address("::ffff:" + str(ip)))
    else:
        bits = v6
        full = int(ip)
    mask = ((1 << 128) - 1) ^ ((1 << (128 - bits)) - 1) if bits else 0
    prefix = (full & mask).to_bytes(16, "big")
    return bytes([bits]) + prefix + hashlib.sha256(b"ua\0" + ua.encode()).digest()[:8] + bytes(8) + b"\0"


def mint(key, expiry, addr, ua, kind=b"C", difficulty=0, attempts=0):
    """A token as src/challenge/token.rs lays it out: kind, proof (work),
    level, attempts, time, binding; HMAC-SHA256 under the v2 domain."""
    record = kind + b"W" + bytes([difficulty, attempts]) + struct.pack(">Q", expiry) + binding(addr, ua)
    mac = hmac.new(key, b"edgeguard-token-v2\0" + record, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(record + mac).rstrip(b"=").decode()


def leading_zero_bits(data):
    n = 0
    for b in hashlib.sha256(data).digest():
        if b == 0:
            n += 8
            continue
        return n + 8 - b.bit_length()
    return n


def solve(nonce, difficulty):
    c = 0
    while leading_zero_bits(f"{nonce}:{c}".encode()) < difficulty:
        c += 1
    return c


def page_nonce(body):
    text = body.decode()
    nonce = re.search(r'\{"n":"([A-Za-z0-9_-]{104})","d":(\d+)', text)
    assert nonce, text[:400]
    return nonce.group(1), int(nonce.group(2))


def request(port, headers, target="/", method="GET", addr=None, tls=False, body=None):
    """Sends exactly these headers (plus X-Real-IP when addr is given);
    `tls` True or an ssl.SSLContext (another TLS stack's offer)."""
    if tls:
        import ssl
        ctx = tls if isinstance(tls, ssl.SSLContext) else ssl._create_unverified_context()
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if addr:
            conn.putheader("X-Real-IP", addr)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, resp.getheaders(), body
    finally:
        conn.close()


def header(headers, name):
    return [v for k, v in headers if k.lower() == name.lower()]


def challenge_http(secret, difficulty, extra=""):
    """The top of a challenge-mode nginx.conf, up to inside http{}: the
    shipped bot model, the secret, the metrics and the log format replay
    reads; `extra` adds configure{} options."""
    return nginx_preamble() + f"""
    {METRICS_DICT}
    include {ROOT}/nginx-conf/log-format-challenge.conf;
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}",
            lib_path = "{LIB}",
            models = {{ bot = "{BOT_MODEL}" }},
            mode = "challenge",
            challenge_secret = "{secret}",
            challenge_difficulty = {difficulty},
            metrics_dict = "edgeguard_metrics",
            vars = true,
            {extra}
        }})
        require("resty.edgeguard.record")
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}"""


def logged_server(log):
    """A server's variables (vars = true) and its access log for replay."""
    return f"""
        set $edgeguard_request_headers "";
        set $edgeguard_bot "";
        set $edgeguard_spoof "";
        set $edgeguard_action "";
        set $edgeguard_ja4 "";
        set $edgeguard_tls_family "";
        set $edgeguard_time "";
        set $edgeguard_verified_bot "";
        access_log {log} edgeguard_json_challenge;"""


def conf(port, metrics_port, secret, bots, log, tls_port, cert_dir):
    extra = f'verified_bots = "{bots}", challenge_nojs = {{ wait = {NOJS_WAIT}, ttl = 600 }},'
    return challenge_http(secret, DIFFICULTY, extra) + f"""
    large_client_header_buffers 4 32k;
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate {cert_dir}/cert.pem;
        ssl_certificate_key {cert_dir}/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        # The JA4 a clearance is bound to (docs/tls.md).
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Real-IP;
        {logged_server(log)}
        rewrite_by_lua_block {{
            require("resty.edgeguard.record").capture()
            require("resty.edgeguard").access()
        }}
        location / {{
            # Not `return`: the rewrite module's directives run before
            # rewrite_by_lua.
            content_by_lua_block {{
                ngx.say("origin: ", ngx.var.edgeguard_action, " ", ngx.var.edgeguard_verified_bot)
            }}
        }}
    }}
    {metrics_server(metrics_port)}
}}
"""


class Edge:
    def __init__(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-challenge-"))
        os.chmod(self.dir, 0o755)
        self.secret = self.dir / "secret"
        self.secret.write_text(f"# new key signs, old key still verifies\n{hexkey(KEY_NEW)}\n{hexkey(KEY_OLD)}\n")
        self.bots = self.dir / "bots.json"
        shutil.copy(BOTS, self.bots)
        shutil.copy(BOTS.parent / "googlebot.json", self.dir / "googlebot.json")
        self.log = self.dir / "access.jsonl"
        self.port, self.metrics_port, self.tls_port = free_port(), free_port(), free_port()
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", self.dir / "key.pem",
                        "-out", self.dir / "cert.pem"], check=True, capture_output=True, timeout=60)
        os.chmod(self.dir / "key.pem", 0o644)
        self.nginx = Nginx(conf(self.port, self.metrics_port, self.secret, self.bots, self.log,
                                self.tls_port, self.dir))
        self.nginx.start(self.port)

    def get(self, headers, target="/", addr=None, method="GET"):
        return request(self.port, headers, target, method, addr)

    def reload(self):
        """nginx -s reload, waiting until the new workers answer."""
        before = self.nginx.error_log.count("start worker process")
        self.nginx.proc.send_signal(signal.SIGHUP)
        wait_until("new workers", lambda: self.nginx.error_log.count("start worker process") > before
                   or "reconfiguring" in self.nginx.error_log and "init_by_lua" in self.nginx.error_log)
        time.sleep(0.5)  # the old workers finish (docs/placement.md: reload is not instant)

    def metrics(self):
        return get_text(self.metrics_port, "/metrics")[1]

    def log_lines(self, wait=True):
        if not wait and not (self.log.exists() and self.log.stat().st_size > 0):
            return []
        wait_until("access log", lambda: self.log.exists() and self.log.stat().st_size > 0)
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self):
        self.nginx.stop()
        self.bad = bad_log_lines(self.nginx.error_log)
        self.nginx.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def edge():
    e = Edge()
    yield e
    e.stop()
    # A refused reload logs [emerg]/[error] lines on purpose (test_bots_reload);
    # nothing else may.
    unexpected = [line for line in e.bad if "verified_bots" not in line and "init_by_lua" not in line]
    assert not unexpected, "\n".join(unexpected)


def metric(text, name):
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", text, re.M)
    return int(m.group(1)) if m else 0


def with_cookie(headers, cookie):
    return headers + [("Cookie", cookie)]


def solved_cookie(edge, headers, addr, target="/"):
    """The real flow: page, solve, answer, return hop; returns (cookie,
    Set-Cookie, the hop's Location)."""
    status, _, body = edge.get(headers, target, addr)
    assert status == 403, body[:200]
    nonce, difficulty = page_nonce(body)
    # Scaled by the score between the base and the maximum.
    assert DIFFICULTY <= difficulty <= DIFFICULTY_MAX
    counter = solve(nonce, difficulty)
    ret = urllib.parse.quote(target, safe="")
    status, resp, body = edge.get(headers, f"/.edgeguard/challenge?n={nonce}&c={counter}&r={ret}", addr)
    assert status == 303, body
    set_cookie = header(resp, "Set-Cookie")[0]
    cookie = set_cookie.split(";")[0]
    hop = header(resp, "Location")[0]
    assert hop.startswith("/.edgeguard/challenge?a="), hop
    status, resp, body = edge.get(with_cookie(headers, cookie), hop, addr)
    assert status == 303 and not header(resp, "Set-Cookie"), (status, body)
    return cookie, set_cookie, header(resp, "Location")[0]


def test_page_answer_and_cookie_attributes(edge):
    before = edge.metrics()
    status, resp, body = edge.get(HEADLESS, "/shop?item=7", "198.51.100.20")
    assert status == 403
    assert header(resp, "Cache-Control") == ["no-store"]
    assert header(resp, "Content-Type")[0].startswith("text/html")
    assert b"function compress(" in body and b"<script" in body and b"src=" not in body
    cookie, set_cookie, location = solved_cookie(edge, HEADLESS, "198.51.100.20", "/shop?item=7")
    attrs = [a.strip() for a in set_cookie.split(";")]
    assert attrs[0].startswith("edgeguard_clearance=") and len(attrs[0]) == len("edgeguard_clearance=") + 104
    assert "HttpOnly" in attrs and "SameSite=Lax" in attrs and "Path=/" in attrs
    assert "Max-Age=86400" in attrs and any(a.startswith("Expires=") for a in attrs)
    assert "Secure" not in attrs, "plain HTTP: no Secure"
    assert urllib.parse.urlsplit(location).path == "/shop" and location.endswith("/shop?item=7")
    # The reload passes; later requests too, without a new challenge.
    for target in ("/shop?item=7", "/other", "/"):
        status, _, body = edge.get(with_cookie(HEADLESS, cookie), target, "198.51.100.20")
        assert (status, body) == (200, b"origin: cleared \n")
    after = edge.metrics()
    assert metric(after, 'edgeguard_challenges_total{result="served"}') - metric(before, 'edgeguard_challenges_total{result="served"}') == 2
    assert metric(after, 'edgeguard_challenges_total{result="solved"}') - metric(before, 'edgeguard_challenges_total{result="solved"}') == 1
    assert metric(after, 'edgeguard_clearances_total{result="accepted"}') - metric(before, 'edgeguard_clearances_total{result="accepted"}') == 3
    assert metric(after, 'edgeguard_decisions_total{action="cleared"}') >= 3


def test_answers_that_fail_and_redirects_that_stay_on_the_site(edge):
    addr = "198.51.100.21"
    _, _, body = edge.get(HEADLESS, "/", addr)
    nonce, difficulty = page_nonce(body)
    good = solve(nonce, difficulty)
    bad = next(c for c in range(10_000) if leading_zero_bits(f"{nonce}:{c}".encode()) < difficulty)
    before = edge.metrics()
    cases = [
        (f"n={nonce}&c={bad}&r=%2F", addr, HEADLESS, "work"),
        (f"n={nonce}&c={good}&r=%2F", "203.0.113.21", HEADLESS, "address"),
        (f"n={nonce}&c={good}&r=%2F", addr, [(k, "curl/8.5.0" if k == "User-Agent" else v) for k, v in HEADLESS], "user_agent"),
        (f"n={nonce[:-2]}AA&c={good}", addr, HEADLESS, "mac"),
        ("n=garbage&c=1", addr, HEADLESS, "malformed"),
    ]
    for query, a, h, reason in cases:
        status, resp, body = edge.get(h, "/.edgeguard/challenge?" + query, a)
        assert status == 403 and not header(resp, "Set-Cookie"), (reason, status)
        # The same browser from another network gets a fresh page, not a
        # dead end; every other refusal nginx's own page.
        assert (b"Checking your browser" in body) == (reason == "address"), reason
    # Expired: counted as failed, though a person gets the page again
    # (test_an_answer_that_expired_in_the_browser_gets_a_fresh_page).
    old = mint(KEY_NEW, int(time.time()) - 700, addr, HEADLESS_UA, kind=b"N", difficulty=0)
    status, _, _ = edge.get(HEADLESS, f"/.edgeguard/challenge?n={old}&c=0", addr)
    assert status == 403
    after = edge.metrics()
    for reason in ("work", "address", "user_agent", "mac", "malformed", "expired"):
        name = f'edgeguard_challenge_failures_total{{reason="{reason}"}}'
        assert metric(after, name) - metric(before, name) == 1, reason
    # Return paths that would leave the site go to "/".
    for evil in ("%2F%2Fevil.example%2Fx", "https%3A%2F%2Fevil.example%2F", "%2F%5Cevil.example"):
        status, resp, _ = edge.get(HEADLESS, f"/.edgeguard/challenge?n={nonce}&c={good}&r={evil}", addr)
        assert status == 303
        cookie = header(resp, "Set-Cookie")[0].split(";")[0]
        status, resp, _ = edge.get(with_cookie(HEADLESS, cookie), header(resp, "Location")[0], addr)
        assert status == 303
        loc = urllib.parse.urlsplit(header(resp, "Location")[0])
        assert loc.netloc in ("edge.test", "") and loc.path == "/", header(resp, "Location")


def test_an_answer_that_expired_in_the_browser_gets_a_fresh_page(edge):
    """A tab left open past the nonce's 600 s (a laptop asleep, a slow
    phone, a clock step): the page navigates to its answer, so the answer
    gets a fresh page back to where it was, not the bare block status; the
    attempt count it carries stops a loop; a fetch() gets problem+json. A
    forged answer keeps the refusal. Nonces are minted here (no clock to
    move in nginx): one 700 s old is past NONCE_TTL."""
    addr, now = "198.51.100.23", int(time.time())
    before = edge.metrics()
    target = "/.edgeguard/challenge?n={}&c=0&r=%2Fshop%3Fitem%3D7"
    old = mint(KEY_NEW, now - 700, addr, HEADLESS_UA, kind=b"N")
    status, resp, body = edge.get(HEADLESS, target.format(old), addr)
    assert status == 403 and header(resp, "Content-Type")[0].startswith("text/html"), body[:300]
    assert not header(resp, "Set-Cookie") and header(resp, "Cache-Control") == ["no-store"]
    assert header(resp, "Content-Security-Policy"), "the solver may run"
    assert b"Checking your browser" in body and b'"r":"%2Fshop%3Fitem%3D7"' in body
    fresh, difficulty = page_nonce(body)
    # As at a start: scaled by this request's own score (HeadlessChrome is flagged).
    assert fresh != old and DIFFICULTY <= difficulty <= DIFFICULTY_MAX
    # The fresh page solves, and returns where the person was.
    counter = solve(fresh, difficulty)
    status, resp, _ = edge.get(HEADLESS, f"/.edgeguard/challenge?n={fresh}&c={counter}&r=%2Fshop%3Fitem%3D7", addr)
    assert status == 303 and header(resp, "Set-Cookie")
    cookie = header(resp, "Set-Cookie")[0].split(";")[0]
    status, resp, _ = edge.get(with_cookie(HEADLESS, cookie), header(resp, "Location")[0], addr)
    assert status == 303 and header(resp, "Location")[0].endswith("/shop?item=7")

    # A nonce that had already counted an attempt: the limit is reached,
    # the "cookies are needed" page (its link starts over), no more work.
    tried = mint(KEY_NEW, now - 700, addr, HEADLESS_UA, kind=b"N", attempts=1)
    status, resp, body = edge.get(HEADLESS, target.format(tried), addr)
    assert status == 403 and b"Cookies are needed" in body and b'{"n":"' not in body, body[:300]
    assert b'href="/shop?item=7"' in body

    # A fetch() of the endpoint: problem+json, pointing where to clear.
    xhr = [(k, {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Accept": "application/json"}.get(k, v))
           for k, v in HEADLESS]
    status, resp, body = edge.get(xhr, target.format(old), addr)
    doc = problem_of(resp, body)
    assert status == 403 and doc["reason"] == "challenge_required"
    assert doc["clear"] == "/.edgeguard/challenge?r=%2Fshop%3Fitem%3D7"

    # Key rotation: a nonce of the old key, still listed, is an answer; of a
    # key no longer listed, indistinguishable from a forgery: refused. So
    # is an expired nonce of another client, and a tampered one.
    status, _, _ = edge.get(HEADLESS, target.format(mint(KEY_OLD, now, addr, HEADLESS_UA, kind=b"N")), addr)
    assert status == 303
    retired = bytes(range(200, 232))
    for forged in (mint(retired, now, addr, HEADLESS_UA, kind=b"N"),
                   mint(KEY_NEW, now - 700, "203.0.113.23", "curl/8.5.0", kind=b"N"),
                   old[:-2] + ("AA" if old[-2:] != "AA" else "BB")):
        status, resp, body = edge.get(HEADLESS, target.format(forged), addr)
        assert status == 403 and b"edgeguard-data" not in body and b"Cookies are needed" not in body, body[:300]
        assert not header(resp, "Content-Security-Policy"), "nginx's own page"

    # The same browser answering from another network (a phone that left
    # Wi-Fi between page and answer): a fresh page too, counted `address`.
    moved = mint(KEY_NEW, now, "203.0.113.23", HEADLESS_UA, kind=b"N")
    status, _, body = edge.get(HEADLESS, target.format(moved), addr)
    assert status == 403 and b"Checking your browser" in body, body[:300]
    assert page_nonce(body)[0] != moved

    after = edge.metrics()
    d = lambda n: metric(after, n) - metric(before, n)
    assert d('edgeguard_challenge_failures_total{reason="expired"}') == 4
    assert d('edgeguard_challenge_failures_total{reason="address"}') == 1
    assert d('edgeguard_challenge_failures_total{reason="mac"}') == 2
    assert d('edgeguard_challenges_total{result="failed"}') == 7
    assert d('edgeguard_challenges_total{result="solved"}') == 2
    wait_until("decision line", lambda: "edgeguard challenge=failed reason=expired " in edge.nginx.error_log)


def problem_of(resp, body):
    """The problem document of a response, checked against RFC 9457."""
    assert header(resp, "Content-Type") == ["application/problem+json"], resp
    assert header(resp, "Cache-Control") == ["no-store"]
    doc = json.loads(body)
    assert doc["type"] == "about:blank" and doc["status"] == 403 and doc["title"] and doc["detail"]
    return doc


def test_requests_that_cannot_run_a_page_get_problem_json(edge):
    """fetch()/XHR, a form POST, an API client: never the page (a body
    would be lost, a program cannot run it); problem+json saying why, the
    reference ($request_id) and where a person clears."""
    before = edge.metrics()
    xhr = [(k, {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Accept": "application/json"}.get(k, v))
           for k, v in HEADLESS] + [("Referer", "http://edge.test/cart?x=1")]
    status, resp, body = edge.get(xhr, "/api", "198.51.100.22")
    doc = problem_of(resp, body)
    assert status == 403 and doc["reason"] == "challenge_required"
    assert re.fullmatch(r"[0-9a-f]{32}", doc["reference"]), doc
    assert doc["clear"] == "/.edgeguard/challenge?r=%2Fcart%3Fx%3D1"
    # The clear URL, opened in the browser: the page, which returns there.
    status, resp, page = edge.get(HEADLESS, doc["clear"], "198.51.100.22")
    assert status == 403 and header(resp, "Content-Type")[0].startswith("text/html")
    assert b"%2Fcart%3Fx%3D1" in page
    # A form POST with a body: nginx answers before reading it; the
    # client is told, not sent to a page that would drop it.
    status, resp, body = request(edge.port, HEADLESS + [("Content-Type", "application/x-www-form-urlencoded")],
                                 "/form", "POST", "198.51.100.22", body=b"a=1&b=2")
    assert status == 403 and problem_of(resp, body)["reason"] == "challenge_required"
    for ua in ("curl/8.5.0", "python-requests/2.31.0"):
        status, resp, body = edge.get([("Host", "edge.test"), ("User-Agent", ua), ("Accept", "*/*")], "/", "198.51.100.22")
        assert status == 403 and problem_of(resp, body)["reason"] == "challenge_required", ua
    # A cookie that was refused says so in the document too.
    expired = "edgeguard_clearance=" + mint(KEY_NEW, int(time.time()) - 5, "198.51.100.22", HEADLESS_UA)
    status, resp, body = edge.get(with_cookie(xhr, expired), "/api", "198.51.100.22")
    assert problem_of(resp, body)["clearance"] == "expired"
    after = edge.metrics()
    d = metric(after, 'edgeguard_challenges_total{result="problem"}') - metric(before, 'edgeguard_challenges_total{result="problem"}')
    assert d == 5


def test_cookie_table(edge):
    """The issue's table, through nginx: each cookie on a flagged navigation."""
    addr, now = "192.0.2.200", int(time.time())
    valid = mint(KEY_NEW, now + 3600, addr, HEADLESS_UA)
    flip = lambda t, i: t[:i] + ("A" if t[i] != "A" else "Q") + t[i + 1:]
    big = "pad=" + "x" * 10_240 + "; edgeguard_clearance=" + valid
    many = "; ".join(f"c{i}=v{i}" for i in range(300)) + "; edgeguard_clearance=" + valid
    cases = [
        ("valid", "edgeguard_clearance=" + valid, addr, HEADLESS_UA, 200),
        ("same /24", "edgeguard_clearance=" + valid, "192.0.2.9", HEADLESS_UA, 200),
        ("expired", "edgeguard_clearance=" + mint(KEY_NEW, now - 5, addr, HEADLESS_UA), addr, HEADLESS_UA, 403),
        ("tampered MAC", "edgeguard_clearance=" + flip(valid, 95), addr, HEADLESS_UA, 403),
        ("tampered expiry", "edgeguard_clearance=" + flip(valid, 10), addr, HEADLESS_UA, 403),
        ("other /24", "edgeguard_clearance=" + valid, "192.0.3.200", HEADLESS_UA, 403),
        ("other UA", "edgeguard_clearance=" + valid, addr, HEADLESS_UA.replace("156.0", "157.0"), 403),
        ("old key still listed", "edgeguard_clearance=" + mint(KEY_OLD, now + 3600, addr, HEADLESS_UA), addr, HEADLESS_UA, 200),
        ("garbage", "edgeguard_clearance=%00garbage", addr, HEADLESS_UA, 403),
        ("10 KB cookie header", big, addr, HEADLESS_UA, 200),
        ("many cookies", many, addr, HEADLESS_UA, 200),
        ("IPv6 /64", "edgeguard_clearance=" + mint(KEY_NEW, now + 3600, "2001:db8:1:2::7", HEADLESS_UA),
         "2001:db8:1:2:ffff::1", HEADLESS_UA, 200),
        ("other IPv6 /64", "edgeguard_clearance=" + mint(KEY_NEW, now + 3600, "2001:db8:1:2::7", HEADLESS_UA),
         "2001:db8:1:3::1", HEADLESS_UA, 403),
    ]
    before = edge.metrics()
    for what, cookie, a, ua, want in cases:
        h = [(k, ua if k == "User-Agent" else v) for k, v in HEADLESS] + [("Cookie", cookie)]
        status, _, body = edge.get(h, "/table", a)
        assert status == want, (what, status, body[:100])
        if want == 403:
            assert b"Checking your browser" in body, what  # challenged again, not blocked
    after = edge.metrics()
    delta = lambda r: metric(after, f'edgeguard_clearances_total{{result="{r}"}}') - metric(before, f'edgeguard_clearances_total{{result="{r}"}}')
    assert delta("accepted") == 6
    assert delta("expired") == 1 and delta("mac") == 2 and delta("address") == 2
    assert delta("user_agent") == 1 and delta("malformed") == 1


def test_old_key_removed_after_a_reload(edge):
    addr, now = "192.0.2.201", int(time.time())
    h = lambda key: with_cookie(HEADLESS, "edgeguard_clearance=" + mint(key, now + 3600, addr, HEADLESS_UA))
    assert edge.get(h(KEY_OLD), "/", addr)[0] == 200
    edge.secret.write_text(hexkey(KEY_NEW) + "\n")
    edge.reload()
    # Old workers may answer a little longer (docs/placement.md: a reload
    # is not instant); the new ones refuse the old key.
    wait_until("the old key refused", lambda: edge.get(h(KEY_OLD), "/", addr)[0] == 403)
    assert edge.get(h(KEY_NEW), "/", addr)[0] == 200
    # A malformed secret is refused on reload; the keys in force stay.
    edge.secret.write_text("tooshort\n")
    edge.reload()
    wait_until("refused reload", lambda: "secret: line 1: key too short" in edge.nginx.error_log)
    assert edge.get(h(KEY_NEW), "/", addr)[0] == 200
    edge.secret.write_text(f"{hexkey(KEY_NEW)}\n{hexkey(KEY_OLD)}\n")
    edge.reload()
    wait_until("the old key back", lambda: edge.get(h(KEY_OLD), "/", addr)[0] == 200)


def test_verified_bots(edge):
    before = edge.metrics()
    # A Googlebot UA from a listed v4 and v6 prefix: verified, whatever the model says.
    for addr in ("192.0.2.70", "2001:db8:4801::9"):
        status, _, body = edge.get(GOOGLEBOT, "/", addr)
        assert (status, body) == (200, b"origin: verified Googlebot\n"), addr
    # The same claim from elsewhere: a fake, flagged (challenged: a navigation).
    status, _, body = edge.get(GOOGLEBOT, "/", "203.0.113.9")
    assert status == 403 and b"Checking your browser" in body
    fetch = [(k, v) for k, v in GOOGLEBOT if k != "Accept"] + [("Accept", "application/json"), ("Sec-Fetch-Mode", "cors")]
    status, _, body = edge.get(fetch, "/", "2001:db8:ffff::1")
    assert status == 403 and b"<script" not in body
    # A listed address with a browser UA is scored as any browser: the
    # HeadlessChrome navigation is challenged, no free pass.
    status, _, body = edge.get(HEADLESS, "/", "192.0.2.70")
    assert status == 403 and b"Checking your browser" in body
    after = edge.metrics()
    d = lambda r: metric(after, f'edgeguard_verified_bots_total{{bot="Googlebot",result="{r}"}}') - metric(before, f'edgeguard_verified_bots_total{{bot="Googlebot",result="{r}"}}')
    assert d("verified") == 2 and d("fake") == 2
    assert "bot=Googlebot verdict=fake" in edge.nginx.error_log


def test_bots_reload_refuses_a_malformed_file_and_keeps_the_previous(edge):
    good = edge.bots.read_text()
    edge.bots.write_text(good.replace('"tokens": ["Googlebot"]', '"tokens": "Googlebot"'))
    edge.reload()
    msg = wait_until("refused reload", lambda: re.search(r"bots\.json: bots\[0\]\.tokens: must be an array", edge.nginx.error_log))
    assert msg
    assert edge.get(GOOGLEBOT, "/", "192.0.2.70")[2] == b"origin: verified Googlebot\n"
    edge.bots.write_text(good)
    edge.reload()


def test_replay_judges_as_nginx_did(edge):
    """The access log replayed with the same secret and bots: every line gets
    nginx's action (cleared, challenge, verified, challenge_required, pass); the cleared
    requests without their cookie do not pass."""
    # Lines from before (a reload changed the keys meanwhile) are not replayed.
    first = len(edge.log_lines(wait=False))
    cookie, _, _ = solved_cookie(edge, HEADLESS, "198.51.100.30")
    assert edge.get(with_cookie(HEADLESS, cookie), "/replayed", "198.51.100.30")[0] == 200
    assert edge.get(GOOGLEBOT, "/replayed", "192.0.2.70")[0] == 200
    assert edge.get(GOOGLEBOT, "/replayed", "203.0.113.70")[0] == 403
    assert edge.get([("Host", "edge.test"), ("User-Agent", "curl/8.5.0")], "/replayed", "198.51.100.30")[0] == 403
    assert edge.get(with_cookie(HEADLESS, "edgeguard_clearance=" + cookie.split("=", 1)[1][:-1] + "A"),
                    "/replayed", "198.51.100.30")[0] == 403
    # Clearances the recorder logs as verdicts (docs/replay.md, "What the
    # log keeps"): expired, another User-Agent's, another /24's, and a
    # valid one beside other cookies.
    now = int(time.time())
    tokens = [cookie.split("=", 1)[1],
              mint(KEY_NEW, now - 5, "198.51.100.31", HEADLESS_UA),
              mint(KEY_NEW, now + 3600, "198.51.100.31", "curl/8.5.0"),
              mint(KEY_NEW, now + 3600, "203.0.113.31", HEADLESS_UA),
              mint(KEY_OLD, now + 3600, "198.51.100.31", HEADLESS_UA)]
    for t in tokens[1:]:
        assert edge.get(with_cookie(HEADLESS, "sid=s3cret-session; edgeguard_clearance=" + t),
                        "/replayed", "198.51.100.31")[0] in (200, 403)
    wait_until("log lines", lambda: len(edge.log_lines()) >= first + 11)
    lines = edge.log_lines()[first:]
    text = "".join(json.dumps(l) for l in lines)
    leaked = [t for t in tokens + [cookie.split("=", 1)[1][:-1], "s3cret-session"] if t in text]
    assert not leaked, leaked
    assert "[clearance ok work " in text and "[clearance user_agent work " in text
    cfg = edge.dir / "replay.json"
    cfg.write_text(json.dumps({
        "models": {"bot": str(BOT_MODEL)}, "mode": "challenge",
        "challenge_secret": str(edge.secret), "challenge_difficulty": DIFFICULTY,
        "verified_bots": str(edge.bots), "internal_headers": str(TEST_LIST),
    }))
    log = edge.dir / "replay-input.jsonl"
    # Answers to the challenge are not decided (nginx answers them itself).
    replayable = [l for l in lines if not l["uri"].startswith("/.edgeguard/") and l["edgeguard_action"]]
    log.write_text("".join(json.dumps(l) + "\n" for l in replayable))
    out = subprocess.run([str(EDGEGUARD), "replay", "--config", str(cfg), "--output", "-", "--ordered",
                          "--no-progress", str(log)], capture_output=True, text=True, check=True)
    got = [json.loads(l) for l in out.stdout.splitlines()]
    assert len(got) == len(replayable)
    actions = {g["live_action"] for g in got}
    assert {"cleared", "challenge", "verified", "challenge_required"} <= actions, actions
    for g, live in zip(got, replayable):
        assert g["action"] == live["edgeguard_action"], (live["uri"], live["client"], g)
    assert any(g.get("verified_bot") == "Googlebot" for g in got)
    assert {"accepted", "expired", "user_agent", "address", "mac"} <= {g.get("clearance") for g in got}
    # The same cleared requests without their cookie: challenged.
    stripped = []
    for l in replayable:
        if l["edgeguard_action"] == "cleared":
            headers = [h for h in json.loads(l["headers"]) if h[0].lower() != "cookie"]
            stripped.append(dict(l, headers=json.dumps(headers)))
    assert stripped
    log.write_text("".join(json.dumps(l) + "\n" for l in stripped))
    out = subprocess.run([str(EDGEGUARD), "replay", "--config", str(cfg), "--output", "-",
                          "--no-progress", str(log)], capture_output=True, text=True, check=True)
    assert {json.loads(l)["action"] for l in out.stdout.splitlines()} == {"challenge"}


def test_the_cookie_is_secure_over_tls(edge):
    addr = "198.51.100.40"
    status, _, body = request(edge.tls_port, HEADLESS, "/tls", addr=addr, tls=True)
    assert status == 403
    nonce, difficulty = page_nonce(body)
    target = f"/.edgeguard/challenge?n={nonce}&c={solve(nonce, difficulty)}&r=%2Ftls"
    status, resp, _ = request(edge.tls_port, HEADLESS, target, addr=addr, tls=True)
    assert status == 303
    attrs = [a.strip() for a in header(resp, "Set-Cookie")[0].split(";")]
    # On TLS: SameSite=None, so a cross-site form POST keeps the clearance.
    assert "Secure" in attrs and "HttpOnly" in attrs and "SameSite=None" in attrs
    cookie = attrs[0]
    status, _, body = request(edge.tls_port, with_cookie(HEADLESS, cookie), "/tls", addr=addr, tls=True)
    assert (status, body) == (200, b"origin: cleared \n")


def test_replay_without_the_recorded_time_uses_now(edge, tmp_path):
    """A line without edgeguard_time is judged at --now: before the cookie's
    expiry it is cleared, after it challenged."""
    addr, now = "198.51.100.50", int(time.time())
    cookie = "edgeguard_clearance=" + mint(KEY_NEW, now + 3600, addr, HEADLESS_UA)
    line = {"client": addr, "method": "GET", "uri": "/", "version": "HTTP/1.1",
            "headers": json.dumps(with_cookie(HEADLESS, cookie))}
    src = tmp_path / "line.jsonl"
    src.write_text(json.dumps(line) + "\n")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"models": {"bot": str(BOT_MODEL)}, "mode": "challenge",
                               "challenge_secret": str(edge.secret)}))

    def action(at):
        out = subprocess.run([str(EDGEGUARD), "replay", "--config", str(cfg), "--output", "-", "--no-progress",
                              "--now", str(at), str(src)], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["action"], json.loads(out.stdout).get("clearance")

    assert action(now) == ("cleared", "accepted")
    assert action(now + 7200) == ("challenge", "expired")


def answer_for(body, target):
    nonce, difficulty = page_nonce(body)
    ret = urllib.parse.quote(target, safe="")
    return f"/.edgeguard/challenge?n={nonce}&c={solve(nonce, difficulty)}&r={ret}"


def test_cookies_needed_after_two_solves_that_come_back_without_it(edge):
    """A browser that drops the cookie: one more page, then the page that
    says cookies are needed, not a third solve (the attempt count is
    signed into the return hop)."""
    addr = "198.51.100.60"
    before = edge.metrics()
    _, _, body = edge.get(HEADLESS, "/shop", addr)
    for attempt in (1, 2):
        status, resp, _ = edge.get(HEADLESS, answer_for(body, "/shop"), addr)
        assert status == 303 and header(resp, "Set-Cookie")
        hop = header(resp, "Location")[0]
        status, resp, body = edge.get(HEADLESS, hop, addr)  # no cookie sent back
        assert status == 403 and header(resp, "Content-Type")[0].startswith("text/html"), attempt
        if attempt == 1:
            assert b"Checking your browser" in body and b'{"n":"' in body
    assert b"Cookies are needed" in body and b'{"n":"' not in body
    assert b"/shop" in body, "a way back to the page"
    after = edge.metrics()
    d = lambda n: metric(after, n) - metric(before, n)
    assert d('edgeguard_challenges_total{result="cookies_needed"}') == 1
    assert d('edgeguard_challenges_total{result="solved"}') == 2
    assert "edgeguard challenge=cookies_needed " in edge.nginx.error_log


def nojs_link(body):
    m = re.search(rb'(/\.edgeguard/challenge\?t=[A-Za-z0-9_-]+&amp;r=[^"\']*)', body)
    assert m, body[:300]
    return m.group(1).decode().replace("&amp;", "&")


def test_the_no_javascript_fallback(edge):
    """challenge_nojs: the <noscript> refresh to a signed ticket, refused
    before its wait (reason `early`, the wait page), then a clearance of
    its own lifetime (600 s here) counted as accepted_wait."""
    addr = "198.51.100.61"
    before = edge.metrics()
    _, _, body = edge.get(HEADLESS, "/doc", addr)
    assert b"<noscript>" in body and b'http-equiv="refresh"' in body
    link = nojs_link(body)
    status, resp, wait = edge.get(HEADLESS, link, addr)
    assert status == 403 and not header(resp, "Set-Cookie")
    assert b"One moment, please" in wait and nojs_link(wait) == link
    time.sleep(NOJS_WAIT + 0.2)
    status, resp, _ = edge.get(HEADLESS, link, addr)
    assert status == 303
    set_cookie = header(resp, "Set-Cookie")[0]
    assert "Max-Age=600" in set_cookie
    cookie = set_cookie.split(";")[0]
    status, _, body = edge.get(with_cookie(HEADLESS, cookie), "/doc", addr)
    assert (status, body) == (200, b"origin: cleared \n")
    after = edge.metrics()
    d = lambda n: metric(after, n) - metric(before, n)
    assert d('edgeguard_challenges_total{result="waited"}') == 1
    assert d('edgeguard_challenge_failures_total{reason="early"}') == 1
    assert d('edgeguard_clearances_total{result="accepted_wait"}') == 1
    assert "clearance=accepted_wait" in edge.nginx.error_log


def test_a_cookie_replayed_from_another_tls_stack_is_refused(edge):
    """The clearance records the JA4 of the solve (ssl_client_hello_by_lua):
    the same cookie, User-Agent and address from a client offering other
    ciphers is refused `tls` and challenged again."""
    import ssl
    addr = "198.51.100.62"
    first = ssl._create_unverified_context()
    status, _, body = request(edge.tls_port, HEADLESS, "/tls", addr=addr, tls=first)
    assert status == 403
    status, resp, _ = request(edge.tls_port, HEADLESS, answer_for(body, "/tls"), addr=addr, tls=first)
    assert status == 303
    cookie = header(resp, "Set-Cookie")[0].split(";")[0]
    status, _, body = request(edge.tls_port, with_cookie(HEADLESS, cookie), "/tls", addr=addr, tls=first)
    assert (status, body) == (200, b"origin: cleared \n")
    other = ssl._create_unverified_context()
    other.maximum_version = ssl.TLSVersion.TLSv1_2
    other.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")
    before = edge.metrics()
    status, resp, body = request(edge.tls_port, with_cookie(HEADLESS, cookie), "/tls", addr=addr, tls=other)
    assert status == 403 and b"Checking your browser" in body
    # Over plain HTTP there is no stack to compare: refused too.
    status, _, _ = request(edge.port, with_cookie(HEADLESS, cookie), "/tls", addr=addr)
    assert status == 403
    after = edge.metrics()
    assert metric(after, 'edgeguard_clearances_total{result="tls"}') - metric(before, 'edgeguard_clearances_total{result="tls"}') == 2
    assert re.search(r"action=challenge .*uri=\"/tls\".* clearance=tls", edge.nginx.error_log)


def test_every_refusal_reason_is_in_the_decision_line(edge):
    addr, now = "192.0.2.210", int(time.time())
    cases = {
        "expired": mint(KEY_NEW, now - 5, addr, HEADLESS_UA),
        "mac": mint(KEY_NEW, now + 3600, addr, HEADLESS_UA)[:-2] + "AA",
        "address": mint(KEY_NEW, now + 3600, "192.0.3.1", HEADLESS_UA),
        "user_agent": mint(KEY_NEW, now + 3600, addr, "curl/8.5.0"),
        "malformed": "x",
    }
    for reason, token in cases.items():
        target = f"/reason-{reason}"
        status, _, _ = edge.get(with_cookie(HEADLESS, "edgeguard_clearance=" + token), target, addr)
        assert status == 403, reason
        wait_until(reason, lambda: re.search(rf'uri="{target}".* clearance={reason}[,\n]', edge.nginx.error_log))


def test_the_public_demo_key_is_warned_of_at_startup(tmp_path):
    port = free_port()
    nginx = Nginx(challenge_http(ROOT / "nginx-conf" / "demo-challenge-secret", DIFFICULTY) + f"""
    server {{
        listen 127.0.0.1:{port};
        {logged_server(tmp_path / "access.jsonl")}
        location / {{ return 204; }}
    }}
}}
""")
    try:
        nginx.start(port)
        log = nginx.error_log
        assert re.search(r"\[warn\].*demo-challenge-secret: challenge_secret holds the public demo key", log), log
        assert "openssl rand -hex 32" in log
    finally:
        nginx.stop()
        nginx.cleanup()
