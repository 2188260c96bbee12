"""JA4 over real TLS through real nginx, with this machine's real clients.

nginx (Debian's 1.22.1, OpenSSL 3.0) serves HTTPS with a certificate the
test makes, computes each connection's JA4 in ssl_client_hello_by_lua_block
(resty.edgeguard.tls), logs it as $edgeguard_ja4 and answers each request
with what the request phase reads back. Each client's JA4 is also computed
independently: the same client sends its ClientHello to a bare TCP listener
(tests/e2e/tls_clients.py) and `edgeguard tls` fingerprints those bytes.
"""

import json
import socket
import ssl
import subprocess
import sys

import pytest

import tls_clients
from conftest import LIB, ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, nginx_preamble, wait_until

EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
OPENSSL_BAD_EXTENSION = "SSL_do_handshake() failed (SSL: error:0A00006E:SSL routines::bad extension)"
MODELS = {"bot": ROOT / "models" / "bot.json", "spoof": ROOT / "models" / "spoof.json"}


# What every edgeguard server here runs per request: record, score, answer
# with what the request phase reads back.
LOCATION = """
        location / {
            access_by_lua_block {
                require("resty.edgeguard.record").capture()
                require("resty.edgeguard").access{ vars = true }
            }
            content_by_lua_block {
                local tls = require("resty.edgeguard.tls")
                if ngx.var.uri == "/page" then
                    -- Chromium: two more requests on the page's connection.
                    ngx.header.content_type = "text/html"
                    ngx.say('<html><body><img src="/a.png"><img src="/b.png"></body></html>')
                    return
                end
                ngx.say(require("cjson").encode({
                    tls = tls.parts() or false,
                    var = ngx.var.edgeguard_ja4,
                    family = ngx.var.edgeguard_tls_family,
                    connection = tonumber(ngx.var.connection),
                    requests = tonumber(ngx.var.connection_requests),
                    protocol = ngx.var.server_protocol,
                    action = ngx.var.edgeguard_action,
                    bot = ngx.var.edgeguard_bot,
                }))
            }
        }
"""

LOG_VARS = """
        set_by_lua_block $edgeguard_ja4 { return require("resty.edgeguard.tls").ja4() or "" }
        set_by_lua_block $edgeguard_tls_family { return require("resty.edgeguard.tls").family() or "" }
        set $edgeguard_request_headers "";
        set $edgeguard_bot "";
        set $edgeguard_spoof "";
        set $edgeguard_action "";
        access_log logs/access.jsonl edgeguard_json;
        access_log logs/conn.log conn;
"""


def conf(tls_port, plain_port, hrr_port, nohello_port):
    return nginx_preamble() + f"""
    include {ROOT}/nginx-conf/log-format.conf;
    log_format conn '$connection $connection_requests $server_protocol "$edgeguard_ja4" "$http_user_agent"';
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}",
            lib_path = "{LIB}",
            models = {{ bot = "{MODELS['bot']}", spoof = "{MODELS['spoof']}" }},
            mode = "log",
        }})
        require "resty.edgeguard.tls"
        require "resty.edgeguard.record"
        require "cjson"
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    server {{
        listen 127.0.0.1:{tls_port} ssl http2;
        listen 127.0.0.1:{plain_port};
        server_name localhost;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;   # 1.22's default has no TLS 1.3
        ssl_session_cache shared:tls:1m;
        ssl_client_hello_by_lua_block {{
            local tls = require("resty.edgeguard.tls")
            tls.client_hello()
            -- Read back in the handshake: what the hostile-input test checks.
            ngx.log(ngx.INFO, "test-hello ja4=", tls.ja4() or "none")
        }}
{LOG_VARS}
{LOCATION}
    }}
    # TLS without ssl_client_hello_by_lua: edgeguard loads and scores, with
    # no TLS facts.
    server {{
        listen 127.0.0.1:{nohello_port} ssl http2;
        server_name localhost;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
{LOG_VARS}
{LOCATION}
    }}
    # Only P-256 here: OpenSSL clients offer an X25519 key share first, so
    # this server makes them retry (TLS 1.3 HelloRetryRequest).
    server {{
        listen 127.0.0.1:{hrr_port} ssl;
        ssl_protocols TLSv1.3;
        ssl_ecdh_curve prime256v1;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        location / {{
            content_by_lua_block {{ ngx.say(require("resty.edgeguard.tls").ja4() or "none") }}
        }}
    }}
}}
"""


@pytest.fixture(scope="module")
def tls_nginx(tmp_path_factory):
    tls_port, plain_port, hrr_port, nohello_port = free_port(), free_port(), free_port(), free_port()
    nginx = Nginx(conf(tls_port, plain_port, hrr_port, nohello_port))
    nginx.hrr_port = hrr_port
    nginx.nohello_port = nohello_port
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", nginx.prefix / "key.pem", "-out", nginx.prefix / "cert.pem"],
                   check=True, capture_output=True, timeout=60)
    nginx.start(tls_port)
    yield nginx, tls_port, plain_port
    nginx.stop()
    log = nginx.error_log
    # nginx 1.22 logs OpenSSL's refusal of a malformed ALPN extension at
    # [crit]; the hostile-input test sends some on purpose and counts them.
    bad = [line for line in bad_log_lines(log) if OPENSSL_BAD_EXTENSION not in line]
    nginx.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    assert "edgeguard tls" not in log, log


def conn_lines(nginx, since):
    lines = (nginx.prefix / "logs" / "conn.log").read_text().splitlines()
    out = []
    for line in lines[since:]:
        conn, n, proto, rest = line.split(" ", 3)
        ja4, ua = rest[1:].split('" "', 1)
        out.append({"connection": int(conn), "requests": int(n), "protocol": proto, "ja4": ja4, "ua": ua[:-1]})
    return out, len(lines)


def independent_ja4(client):
    """JA4 of the ClientHello `client` sends, recorded without nginx."""
    record = tls_clients.capture(client)
    assert record and record[0] == 22, f"{client} sent no TLS record"
    out = subprocess.run([EDGEGUARD, "tls"], input=record.hex() + "\n", capture_output=True, text=True,
                         timeout=30, check=True).stdout
    return json.loads(out)


def logged_count(nginx):
    p = nginx.prefix / "logs" / "conn.log"
    return len(p.read_text().splitlines()) if p.exists() else 0


@pytest.mark.parametrize("client", list(tls_clients.CLIENTS))
def test_each_client_gets_its_own_stable_ja4(tls_nginx, client):
    nginx, tls_port, _ = tls_nginx
    want = independent_ja4(client)
    since = logged_count(nginx)
    if client == "chromium":
        tls_clients.chromium([f"https://localhost:{tls_port}/page"])
    else:
        body = tls_clients.CLIENTS[client]([f"https://localhost:{tls_port}/r{i}" for i in range(3)])
        replies = [json.loads(line) for line in body.splitlines() if line.startswith("{")]
        assert len(replies) == 3, body
        for r in replies:
            assert r["tls"]["ja4"] == r["var"] == want["ja4"], (client, r, want)
            assert r["tls"]["source"] == "wire", r
            assert r["tls"]["family"] == want["family"]
            assert (r["tls"]["ciphers"], r["tls"]["extensions"]) == (want["ciphers"], want["extensions"])
            assert r["tls"]["alpn"] == want["alpn"]
            assert r["action"] in ("pass", "log"), "scored as before"
    # nginx logs a request after answering it: wait for the last line.
    wait_until("the access log", lambda: logged_count(nginx) >= since + 3, timeout=10)
    lines, _ = conn_lines(nginx, since)
    # Chromium may open a connection of its own for the favicon; each
    # connection's requests all carry the one JA4.
    assert len(lines) >= 3, lines
    assert {line["ja4"] for line in lines} == {want["ja4"]}, (client, lines, want)
    by_conn = {}
    for line in lines:
        by_conn.setdefault(line["connection"], []).append(line["requests"])
    main = max(by_conn.values(), key=len)
    assert sorted(main)[:3] == [1, 2, 3], f"{client}: keep-alive, one connection: {lines}"
    if client in ("curl", "chromium", "go"):
        assert {line["protocol"] for line in lines} == {"HTTP/2.0"}, lines


def test_the_live_fingerprint_is_the_whole_client_hello(tls_nginx):
    """Chromium sends extensions OpenSSL 3.0 does not implement (ALPS,
    compress_certificate, ECH GREASE): OpenSSL's own list leaves them out,
    the live path must not."""
    if "chromium" not in tls_clients.CLIENTS:
        pytest.skip("chromium is not installed")
    want = independent_ja4("chromium")
    raw_exts = want["ja4_r"].split("_")[2].split(",")
    assert {"001b", "4469"} & set(raw_exts) or "44cd" in raw_exts, want["ja4_r"]
    nginx, tls_port, _ = tls_nginx
    since = logged_count(nginx)
    tls_clients.chromium([f"https://localhost:{tls_port}/page"])
    wait_until("the access log", lambda: logged_count(nginx) >= since + 3, timeout=10)
    lines, _ = conn_lines(nginx, since)
    assert lines and all(line["ja4"] == want["ja4"] for line in lines), (lines, want)
    assert int(want["ja4"][6:8]) == want["extensions"] >= 16


def http10(sock, path):
    """One HTTP/1.0 request (no chunking, the server closes): the JSON reply."""
    sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\nUser-Agent: curl/7.88.1\r\n\r\n".encode())
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def test_plain_http_has_no_fingerprint_and_still_scores(tls_nginx):
    nginx, _, plain_port = tls_nginx
    with socket.create_connection(("127.0.0.1", plain_port), timeout=10) as s:
        body = http10(s, "/plain")
    assert body["tls"] is False and body["var"] == "" and body["protocol"] == "HTTP/1.0"
    assert body["action"] in ("pass", "log")


def test_http2_streams_share_the_connections_fingerprint(tls_nginx):
    nginx, tls_port, _ = tls_nginx
    want = independent_ja4("curl")
    urls = [f"https://localhost:{tls_port}/h2/{i}" for i in range(5)]
    out = subprocess.run(["curl", "-sk", "--http2", "--parallel", "--parallel-max", "5", *urls],
                         capture_output=True, text=True, timeout=30).stdout
    replies = [json.loads(line) for line in out.splitlines()]
    assert len(replies) == 5
    assert {r["protocol"] for r in replies} == {"HTTP/2.0"}
    assert {r["tls"]["ja4"] for r in replies} == {want["ja4"]}
    assert len({r["connection"] for r in replies}) == 1


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_resumed_sessions_are_fingerprinted_too(tls_nginx, version):
    """A resumed handshake sends a ClientHello too, and is fingerprinted,
    with one more extension than the client's first: Python's OpenSSL pads
    a TLS 1.2 ClientHello that carries a ticket (padding, 0x0015, seen in
    the raw bytes), and a TLS 1.3 one carries pre_shared_key. Same cipher
    hash, another extension hash: a resumed client has a second JA4."""
    nginx, tls_port, _ = tls_nginx
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, version)
    bodies, reused, session = [], [], None
    for _ in range(2):
        with socket.create_connection(("127.0.0.1", tls_port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
                bodies.append(http10(s, "/resume"))
                reused.append(s.session_reused)
                session = s.session
    assert reused == [False, True]
    first, resumed = bodies[0]["tls"], bodies[1]["tls"]
    assert first and resumed, bodies
    assert first["ja4"][10:23] == resumed["ja4"][10:23], "same cipher list"
    assert resumed["extensions"] == first["extensions"] + 1
    assert resumed["ja4"][23:] != first["ja4"][23:]


def test_replay_reads_the_logged_fingerprint(tls_nginx, tmp_path):
    nginx, tls_port, plain_port = tls_nginx
    want = independent_ja4("python-requests")
    tls_clients.python_requests([f"https://localhost:{tls_port}/replay"])
    with socket.create_connection(("127.0.0.1", plain_port), timeout=10) as s:
        http10(s, "/replay-plain")
    log = (nginx.prefix / "logs" / "access.jsonl").read_bytes()
    records = [json.loads(line) for line in log.splitlines()]
    assert any(r["edgeguard_ja4"] == want["ja4"] for r in records)
    assert any(r["edgeguard_ja4"] == "" for r in records), "the plain-HTTP request"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"internal_headers": str(TEST_LIST),
                                  "models": {k: str(v) for k, v in MODELS.items()}, "mode": "log"}))
    (tmp_path / "access.jsonl").write_bytes(log)
    out = tmp_path / "replay.jsonl"
    done = subprocess.run([EDGEGUARD, "replay", "--config", config, "--ordered", "--no-progress",
                           "--output", out, tmp_path / "access.jsonl"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    replayed = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(replayed) == len(records)
    for rec, rep in zip(records, replayed):
        assert rep.get("ja4", "") == rec["edgeguard_ja4"], (rec, rep)
        assert rep["action"] == rec["edgeguard_action"]


def test_the_library_has_no_link_time_tls_dependency():
    out = subprocess.run(["ldd", LIB], capture_output=True, text=True, check=True).stdout
    assert "libssl" not in out and "libcrypto" not in out, out
    undefined = subprocess.run(["nm", "-D", "--undefined-only", LIB], capture_output=True, text=True,
                               check=True).stdout
    assert "SSL_" not in undefined and "CRYPTO_" not in undefined, undefined


def hostile_hello(n_ciphers, n_unknown, alpn):
    """A TLS 1.2 ClientHello nginx can answer (ECDHE-ECDSA for the test's
    P-256 key), padded with thousands of ciphers and hundreds of unknown
    extensions; `alpn` is the raw ALPN extension data (may lie)."""
    ciphers = [0x0a0a] + [0x1000 + i for i in range(n_ciphers)] + [0xc02b]
    exts = [(0x0000, b"\x00\x0c\x00\x00\x09localhost"), (0x000a, b"\x00\x02\x00\x17"), (0x000b, b"\x01\x00"),
            (0x000d, b"\x00\x02\x04\x03"), (0x0010, alpn)]
    exts += [(0x5000 + i, b"\x00" * (i % 7)) for i in range(n_unknown)]
    block = b"".join(t.to_bytes(2, "big") + len(d).to_bytes(2, "big") + d for t, d in exts)
    body = (b"\x03\x03" + b"\x11" * 32 + b"\x00" + (2 * len(ciphers)).to_bytes(2, "big")
            + b"".join(c.to_bytes(2, "big") for c in ciphers) + b"\x01\x00"
            + len(block).to_bytes(2, "big") + block)
    msg = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + len(msg).to_bytes(2, "big") + msg


def server_reply(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        try:
            return s.recv(5)
        except (ConnectionResetError, socket.timeout):
            return b""


def test_hostile_client_hellos_never_fail_the_handshake(tls_nginx):
    nginx, tls_port, _ = tls_nginx
    good = hostile_hello(4000, 300, b"\x00\x03\x02h2")
    assert len(good) < 16384
    # edgeguard fingerprints it (4000 ciphers, 300 unknown extensions) and
    # the handshake goes on: a ServerHello comes back.
    assert server_reply(tls_port, good)[:1] == b"\x16", "handshake record"
    want = json.loads(subprocess.run([EDGEGUARD, "tls"], input=good.hex() + "\n", capture_output=True,
                                     text=True, check=True).stdout)
    # 4001 ciphers less the two GREASE values (0x0a0a, and 0x1a1a in the run).
    assert (want["ciphers"], want["extensions"], want["ja4"][:10]) == (4000, 305, "t12d9999h2")
    wait_until("the handshake's log line", lambda: f"test-hello ja4={want['ja4']}" in nginx.error_log)
    # ALPN data whose lengths lie reach the client-hello callback (OpenSSL
    # reads ALPN later): edgeguard counts it as no ALPN; OpenSSL then ends
    # the handshake with its own alert, not edgeguard.
    for alpn in (b"\x00\x09\x02h2", b"\xff\xff", b"", b"\x00\x01\x05"):
        hello = hostile_hello(50, 20, alpn)
        reply = server_reply(tls_port, hello)
        assert reply[:1] in (b"\x15", b"\x16", b""), reply
        ja4 = json.loads(subprocess.run([EDGEGUARD, "tls"], input=hello.hex() + "\n", capture_output=True,
                                        text=True, check=True).stdout)["ja4"]
        assert ja4[8:10] == "00", ja4
        wait_until("the handshake's log line", lambda: f"test-hello ja4={ja4}" in nginx.error_log)
    refused = [line for line in bad_log_lines(nginx.error_log) if OPENSSL_BAD_EXTENSION in line]
    assert len(refused) == 4, refused
    # nginx still serves, with fingerprints.
    body = tls_clients.curl([f"https://localhost:{tls_port}/after-hostile"])
    assert json.loads(body)["tls"]["ja4"] == independent_ja4("curl")["ja4"]
    assert "edgeguard" not in "\n".join(bad_log_lines(nginx.error_log))


def s_client(port, request=b""):
    return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
                           "-tls1_3", "-msg", "-ign_eof", "-quiet"] + (["-groups", "P-256"] if False else []),
                          input=request, capture_output=True, timeout=30)


def test_a_hello_retry_keeps_the_connections_fingerprint(tls_nginx):
    """A HelloRetryRequest makes the client send a second ClientHello on the
    same connection; lua-nginx-module runs the phase once per connection,
    so the fingerprint is the first ClientHello's."""
    nginx, _, _ = tls_nginx
    record = {}

    def client(urls):
        port = int(urls[0].rsplit(":", 1)[1].strip("/"))
        record["out"] = s_client(port)

    tls_clients.CLIENTS["openssl-s_client"] = client
    try:
        first = tls_clients.capture("openssl-s_client")
    finally:
        del tls_clients.CLIENTS["openssl-s_client"]
    want = json.loads(subprocess.run([EDGEGUARD, "tls"], input=first.hex() + "\n", capture_output=True,
                                     text=True, check=True).stdout)["ja4"]
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{nginx.hrr_port}", "-servername",
                           "localhost", "-tls1_3", "-msg", "-ign_eof"],
                          input=b"GET /hrr HTTP/1.0\r\nHost: localhost\r\n\r\n", capture_output=True, timeout=30)
    out = done.stdout.decode(errors="replace")
    sent_hellos = [line for line in out.splitlines() if line.startswith(">>>") and "ClientHello" in line]
    assert len(sent_hellos) == 2, "a HelloRetryRequest: " + "\n".join(sent_hellos)
    assert want in out.splitlines(), (want, out[-400:])


# --- TLS facts in the scores (feature schema 3) ------------------------------

sys.path.insert(0, str(ROOT / "models"))
import corpus  # noqa: E402

CORPUS = corpus.load()
# This test's clients and the capture's clients of the same library and
# defaults (models/capture/scripted.py, browsers.py).
RECORDED_AS = {"curl": "curl", "python-requests": "python-requests", "go": "go-net-http",
               "chromium": "chromium"}


def recorded_ja4s(name):
    return {r["ja4"] for r in CORPUS if r["name"] == name and r.get("ja4")}


@pytest.mark.parametrize("client", [c for c in RECORDED_AS if c in tls_clients.CLIENTS])
def test_each_client_gets_the_ja4_the_capture_recorded(tls_nginx, client):
    """The live JA4 here is one the capture harness logged for the same
    client (another server, another SNI name, same ClientHello shape):
    what the models were trained on is what nginx computes."""
    recorded = recorded_ja4s(RECORDED_AS[client])
    if not recorded:
        pytest.skip("the corpus has no TLS rows of " + RECORDED_AS[client])
    if client != "chromium":
        # Another build of the client sends another ClientHello: Debian's
        # python3 keeps OpenSSL's default cipher list (t13d31..), the
        # python.org build the corpus was captured with its own (t13d18..).
        # nginx == the client's own ClientHello is test_each_client_gets_its_own_stable_ja4's.
        local = independent_ja4(client)["ja4"]
        if local not in recorded:
            pytest.skip(f"this machine's {client} sends {local}, a ClientHello the corpus did not record "
                        f"({', '.join(sorted(recorded))})")
    nginx, tls_port, _ = tls_nginx
    since = logged_count(nginx)
    if client == "chromium":
        tls_clients.chromium([f"https://localhost:{tls_port}/page"])
    else:
        tls_clients.CLIENTS[client]([f"https://localhost:{tls_port}/rec{i}" for i in range(2)])
    wait_until("the access log", lambda: logged_count(nginx) >= since + 2, timeout=10)
    lines, _ = conn_lines(nginx, since)
    assert {line["ja4"] for line in lines} <= recorded, (client, lines, recorded)


def access_records(nginx):
    return [json.loads(line) for line in (nginx.prefix / "logs" / "access.jsonl").read_bytes().splitlines()]


def replay_scores(tmp_path, records, name):
    """`edgeguard replay` of `records` with the test's config: one output
    line per record."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"internal_headers": str(TEST_LIST),
                                  "models": {k: str(v) for k, v in MODELS.items()}, "mode": "log"}))
    src = tmp_path / (name + ".jsonl")
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / (name + "-out.jsonl")
    done = subprocess.run([EDGEGUARD, "replay", "--config", config, "--ordered", "--no-progress",
                           "--output", out, src], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return [json.loads(line) for line in out.read_text().splitlines()]


def feature_vectors(records):
    """`edgeguard features` of each record (every feature of every schema)."""
    done = subprocess.run([EDGEGUARD, "features"], input="".join(json.dumps(r) + "\n" for r in records).encode(),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def chrome_headers_request(port, path):
    """python requests sending Chromium 156's copied navigation headers
    (models/capture/clients/chrome_headers.json) over TLS: Python's
    OpenSSL ClientHello under a browser's head."""
    import requests
    import urllib3
    urllib3.disable_warnings()
    headers = json.loads((ROOT / "models" / "capture" / "clients" / "chrome_headers.json").read_text())
    with requests.Session() as s:
        s.headers.clear()
        s.headers.update(headers)
        return s.get(f"https://localhost:{port}{path}", verify=False, timeout=10).json()


def test_tls_facts_reach_the_scorer_and_replay_scores_like_nginx(tls_nginx, tmp_path):
    """nginx scores with the connection's TLS facts (edgeguard_request.tls),
    the log carries them, and replay reproduces every live score from the
    log line; the same lines without their TLS fields score otherwise."""
    nginx, tls_port, plain_port = tls_nginx
    since = len(access_records(nginx))
    reply = chrome_headers_request(tls_port, "/copied")
    assert reply["tls"] and reply["family"] == "openssl", reply
    tls_clients.curl([f"https://localhost:{tls_port}/scored"])
    with socket.create_connection(("127.0.0.1", plain_port), timeout=10) as s:
        http10(s, "/scored-plain")
    wait_until("the access log", lambda: len(access_records(nginx)) >= since + 3, timeout=10)
    records = access_records(nginx)[since:]
    tls_lines = [r for r in records if r["edgeguard_ja4"]]
    assert len(tls_lines) == 2 and {r["edgeguard_tls_family"] for r in tls_lines} == {"openssl"}, records
    assert any(not r["edgeguard_ja4"] and not r["edgeguard_tls_family"] for r in records), "plain HTTP"
    replayed = replay_scores(tmp_path, records, "with-tls")
    for rec, rep in zip(records, replayed):
        assert rep["scores"]["bot"] == pytest.approx(float(rec["edgeguard_bot"]), rel=1e-6, abs=1e-9), (rec, rep)
        assert rep["action"] == rec["edgeguard_action"]
    stripped = [{k: v for k, v in r.items() if k not in ("edgeguard_ja4", "edgeguard_tls_family")}
                for r in records]
    without = replay_scores(tmp_path, stripped, "without-tls")
    with_vectors, bare_vectors = feature_vectors(records), feature_vectors(stripped)
    for rec, rep, bare, vec, bare_vec in zip(records, replayed, without, with_vectors, bare_vectors):
        if rec["edgeguard_ja4"]:
            # The facts reach the features (the TLS checks are set, not
            # missing) ...
            assert vec != bare_vec, "the TLS facts count"
            # ... and a library's hello only adds evidence: the score with
            # it is never lower (the shipped model is monotone in it; both
            # requests here are flagged on their heads already).
            assert rep["scores"]["bot"] >= bare["scores"]["bot"]
        else:
            assert vec == bare_vec
            assert bare["scores"]["bot"] == rep["scores"]["bot"]


def test_a_tls_server_without_the_client_hello_line_loads_and_scores(tls_nginx):
    """No ssl_client_hello_by_lua: no TLS facts, and the request scores as
    its head alone, exactly as the same head over plain HTTP."""
    nginx, _, plain_port = tls_nginx
    port = nginx.nohello_port
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            over_tls = http10(s, "/no-hello")
    with socket.create_connection(("127.0.0.1", plain_port), timeout=10) as s:
        plain = http10(s, "/no-hello")
    assert over_tls["tls"] is False and over_tls["var"] == "" and over_tls["family"] == ""
    assert over_tls["action"] in ("pass", "log") and over_tls["bot"] != ""
    assert over_tls["bot"] == plain["bot"], (over_tls, plain)


def test_copied_browser_headers_on_a_library_hello_are_flagged(tls_nginx):
    """Chromium 156's navigation headers, byte for byte, from python
    requests: its head is the browser's (models/README.md: the header-only
    models passed most such requests); its ClientHello is OpenSSL's, which
    the shipped models read (mode "log" here: flagged = "log")."""
    nginx, tls_port, _ = tls_nginx
    reply = chrome_headers_request(tls_port, "/")
    assert reply["family"] == "openssl" and reply["tls"]["alpn"] == "http/1.1", reply
    assert reply["action"] == "log", reply
