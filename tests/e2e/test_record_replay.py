"""Record traffic through real nginx, replay it, get nginx's own results back.

nginx runs edgeguard (models, internal header list, block mode, vars = true)
with resty.edgeguard.record capturing the headers and the shipped
nginx-conf/log-format.conf writing the access log. A few hundred varied
requests go through it as raw bytes (browser-like, scripted, crawlers and
spoofers from the labelled fixture; internal headers, repeated headers,
8-bit and control bytes, letter case, HTTP/1.0 and 1.1, requests nginx
rejects). Then `edgeguard replay` reads the log with the same configuration
as JSON, and for every request its scores, printed with nginx's "%.9g",
must be the very strings nginx logged, its decision nginx's decision, and
its count of stripped headers the number of internal headers sent.
"""

import json
import random
import socket
import subprocess

from conftest import ROOT, TEST_LIST, Nginx, bad_log_lines, edge_conf, free_port

EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
SAMPLE = ROOT / "tests" / "fixtures" / "traffic" / "sample.jsonl"
LOG_FORMAT = ROOT / "nginx-conf" / "log-format.conf"
MODELS = {"bot": str(ROOT / "models" / "bot.json"), "spoof": str(ROOT / "models" / "spoof.json")}

ACCESS = """
                local n, err = require("resty.edgeguard.record").capture()
                if not n then
                    ngx.log(ngx.ERR, "edgeguard: recording headers: ", err)
                end
                require("resty.edgeguard").access()
"""


def is_internal(name):
    """The test list's rules (tests/e2e/data/internal-headers.txt), written
    out apart from the Rust matcher: case-insensitive, '_' as '-'."""
    n = name.lower().replace(b"_", b"-")
    return n in (b"x-internal-user-id", b"x-auth-subject", b"x-debug-token", b"x-tenant") or n.startswith(
        (b"x-internal-", b"x-edge-")
    )


WS = b" \t\n\x0b\x0c\r"


def redacted(name, value):
    """What the recorder logs of a header (docs/replay.md, "What the log
    keeps"), written apart from src/replay/record/redact.rs: a cookie's
    name and its value's length, a credential's scheme."""
    def length(v):
        return b"[redacted %d]" % len(v) if v else b""

    n = name.lower()
    if n == b"cookie":
        items = []
        for item in value.split(b";"):
            if b"=" not in item:
                core = item.strip(WS)
                lead = item[: len(item) - len(item.lstrip(WS))]
                items.append(lead + length(core) + item[len(lead) + len(core):])
                continue
            k, _, v = item.partition(b"=")
            core = v.strip(WS)
            lead = v[: len(v) - len(v.lstrip(WS))]
            items.append(k + b"=" + lead + length(core) + v[len(lead) + len(core):])
        return b";".join(items)
    if n in (b"authorization", b"proxy-authorization"):
        scheme, sp, rest = value.partition(b" ")
        if sp and scheme and len(scheme) <= 32 and all(chr(c).isalnum() or chr(c) in "!#$%&'*+-.^_`|~" for c in scheme):
            spaces = rest[: len(rest) - len(rest.lstrip(b" "))]
            return scheme + b" " + spaces + length(rest[len(spaces):])
        return length(value)
    return value


def valid_name(name):
    """Names nginx keeps (with underscores_in_headers on); others it ignores."""
    return all(c in b"-_" or chr(c).isalnum() for c in name) and all(c < 0x80 for c in name)


class Req:
    def __init__(self, method, uri, version, headers, body=b""):
        self.method, self.uri, self.version = method, uri, version
        self.headers, self.body = headers, body

    def wire(self):
        head = b"%s %s HTTP/%s\r\n" % (self.method, self.uri, self.version)
        head += b"".join(b"%s: %s\r\n" % h for h in self.headers)
        return head + b"\r\n" + self.body

    def kept_headers(self):
        """The headers as nginx keeps them: invalid names dropped, values
        stripped of surrounding spaces and tabs."""
        return [(n, v.strip(b" \t")) for n, v in self.headers if valid_name(n)]

    def logged_headers(self):
        """The headers as the recorder logs them: kept, then redacted."""
        return [(n, redacted(n, v)) for n, v in self.kept_headers()]

    def internal(self):
        return sum(1 for n, _ in self.kept_headers() if is_internal(n))


def from_row(row, version):
    headers = [(n.encode(), v.encode()) for n, v in row["headers"]]
    body = b""
    for n, v in headers:
        if n.lower() == b"content-length":
            body = b"x" * int(v)
    return Req(row["method"].encode(), row["uri"].encode(), version, headers, body)


def requests():
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    rng = random.Random(7)
    out = []
    # Every fixture request as it is, a quarter of them in HTTP/1.0.
    for i, row in enumerate(rows):
        out.append(from_row(row, b"1.0" if i % 4 == 0 else b"1.1"))
    # Variants of every other one.
    for i, row in enumerate(rows[::2]):
        r = from_row(row, b"1.1")
        h = r.headers
        kind = i % 5
        if kind == 0:  # internal headers, in every spelling the list covers
            for extra in [(b"X-Internal-User-Id", b"42"), (b"x-edge-debug", b"1"), (b"X_Internal_Trace", b"t")]:
                h.insert(rng.randrange(1, len(h) + 1), extra)
        elif kind == 1:  # repeated headers, secrets
            h.insert(rng.randrange(1, len(h) + 1), (b"Cookie", b"a=1; session=s3cr3t-%d" % i))
            h.insert(rng.randrange(1, len(h) + 1), (b"Cookie", b"b=2;theme= \"dark\" ;bare"))
            h.insert(rng.randrange(1, len(h) + 1), (b"Authorization", b"Bearer tok-%d.secret" % i))
            h.append((b"proxy-authorization", b"Basic dXNlcjpzZWNyZXQ%d" % i))
            # A repeated Content-Length (or Host) is nginx's 400, not a repeat.
            h.append(next(p for p in h[1:]
                          if p[0].lower() not in (b"content-length", b"host", b"authorization", b"proxy-authorization")))
            h.append((b"X-Debug-Token", b"one"))
            h.append((b"x-debug-token", b"two"))
        elif kind == 2:  # bytes: UTF-8, not UTF-8, quotes, backslashes, control bytes
            h.append((b"X-Note", 'caf\u00e9 \u2603 "q" \\back\\'.encode()))
            h.append((b"X-Raw", b"\xff\xfe\x80 latin \xe9t\xe9 \x01\x1f\x7f mid\ttab"))
            h.insert(1, (b"Referer", b'https://shop.example/s?q="x"&r=\\'))
            r.uri = b"/caf\xe9/\xc3\xa9?q=%22a%22&b=\xff\"'"
        elif kind == 3:  # the client's letter case
            r.headers = [(n.upper() if j % 2 else n.title(), v) for j, (n, v) in enumerate(h)]
        else:  # HTTP/1.0, an internal header, a name nginx ignores
            r.version = b"1.0"
            h.insert(1, (b"X-Tenant", b"acme"))
            h.insert(2, (b"X-Bad\xffName", b"dropped by nginx"))
            h.insert(2, (b"X.Dotted", b"dropped by nginx"))
        out.append(r)
    return out


# Requests nginx answers 400 itself, before the access phase: logged with an
# empty $edgeguard_request_headers and no live values.
REJECTED = [
    b"NOT A REQUEST\r\n\r\n",  # no version: replay counts a parse error
    b"GET /nul HTTP/1.1\r\nHost: a\r\nX-Nul: a\x00b\r\n\r\n",  # a request line: replayed
]


def send(port, data, head_only=False):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while not head_only and len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status


def log_record(line):
    # nginx writes bytes >= 0x80 as they came: not always UTF-8.
    return json.loads(line.decode("utf-8", "surrogateescape"))


def as_bytes(s):
    return s.encode("utf-8", "surrogateescape")


def test_replay_of_an_nginx_log_gives_nginx_scores_and_decisions(origin, tmp_path):
    port = free_port()
    # ambiguous = "block": every flagged request gets the mode's action, the
    # threshold rule this test holds nginx to (graded verdicts: test_verdicts.py).
    conf = edge_conf(port, origin.port, TEST_LIST, configure='models = { bot = "%s", spoof = "%s" }, '
                     'mode = "block", ambiguous = "block", vars = true,' % (MODELS["bot"], MODELS["spoof"]), access=ACCESS,
                     init='require "resty.edgeguard.record"')
    # The shipped format, logged for every request of the server (also those
    # nginx rejects before any location); `set` declares the variables.
    conf = conf.replace(
        "    access_log off;\n",
        f"    include {LOG_FORMAT};\n    access_log logs/record.jsonl edgeguard_json;\n",
        1,
    ).replace(
        "        location / {",
        '        set $edgeguard_request_headers "";\n'
        '        set $edgeguard_bot "";\n        set $edgeguard_spoof "";\n        set $edgeguard_action "";\n'
        '        set $edgeguard_ja4 "";\n'
        '        set $edgeguard_tls_family "";\n'
        "        location / {",
        1,
    )
    assert "edgeguard_json;" in conf and "set $edgeguard_action" in conf
    nginx = Nginx(conf)
    nginx.start(port)
    try:
        sent = requests()
        statuses = [send(port, r.wire(), head_only=r.method == b"HEAD") for r in sent]
        rejected = [send(port, data) for data in REJECTED]
    finally:
        nginx.stop()
    log_text = (nginx.prefix / "logs" / "record.jsonl").read_bytes()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    assert rejected == [400, 400]
    assert 403 in statuses and 200 in statuses, "both decisions are exercised"

    log_lines = log_text.split(b"\n")[:-1]
    assert len(log_lines) == len(sent) + len(REJECTED)
    records = [log_record(line) for line in log_lines]

    # What record.capture() logged is what was sent, as nginx keeps it,
    # secrets redacted.
    for r, rec in zip(sent, records):
        assert as_bytes(rec["uri"]) == r.uri
        assert rec["version"] == "HTTP/" + r.version.decode()
        assert rec["headers"], (rec["status"], rec["edgeguard_action"], rec["edgeguard_bot"], rec["version"])
        logged = [(as_bytes(n), as_bytes(v)) for n, v in json.loads(rec["headers"])]
        assert logged == r.logged_headers(), r.wire()
        assert rec["edgeguard_action"] in ("pass", "block")
    # No cookie value and no credential of any request is in the log.
    secrets = {v for r in sent for n, v in r.kept_headers()
               if n.lower() in (b"authorization", b"proxy-authorization")}
    secrets |= {item.partition(b"=")[2].strip(WS) for r in sent for n, v in r.kept_headers()
                if n.lower() == b"cookie" for item in v.split(b";")}
    secrets = {s for s in secrets if len(s) >= 4}
    assert len(secrets) > 30, secrets
    leaked = [s for s in secrets if s in log_text or s.split(b" ")[-1] in log_text]
    assert not leaked, leaked

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"internal_headers": str(TEST_LIST), "models": MODELS, "mode": "block",
                                  "ambiguous": "block"}))
    log = tmp_path / "record.jsonl"
    log.write_bytes(log_text)
    out = tmp_path / "replay.jsonl"
    summary = tmp_path / "summary.txt"
    done = subprocess.run(
        [EDGEGUARD, "replay", "--config", config, "--threads", "2", "--ordered", "--no-progress",
         "--output", out, "--summary", summary, log],
        capture_output=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    report = summary.read_text()

    replayed = {o["line"]: o for o in map(json.loads, out.read_text().splitlines())}
    # Every request nginx parsed a request line for; the garbage line is the
    # one parse error, reported with its number.
    assert sorted(replayed) == [i + 1 for i, rec in enumerate(records) if rec["version"]]
    assert f"parse errors: 1 " in report, report
    assert f"record.jsonl:{len(sent) + 1}:" in report, report

    for i, r in enumerate(sent):
        rec, rep = records[i], replayed[i + 1]
        for model in ("bot", "spoof"):
            # Same f64 on both sides: "%.9g" of it is the same string.
            assert format(rep["scores"][model], ".9g") == rec["edgeguard_" + model], (i, model, rep, rec)
        assert rep["action"] == rec["edgeguard_action"], (i, rep, rec)
        assert rep["live_action"] == rec["edgeguard_action"]
        assert rep["stripped"] == r.internal(), (i, r.wire())
    assert sum(r.internal() for r in sent) > 100

    # The request nginx rejected after its request line: replayed, with no
    # live values and no headers.
    nul = replayed[len(sent) + 2]
    assert "live_action" not in nul and nul["stripped"] == 0

    n = len(sent)
    assert f"{n} lines with $edgeguard_action, {n} agree (100.00%)" in report, report
    assert f"live scores compared: {2 * n}, differing beyond the logged precision: 0" in report, report


LOG_FORMAT_CHALLENGE = ROOT / "nginx-conf" / "log-format-challenge.conf"
CHALLENGE_SECRET = ROOT / "tests" / "fixtures" / "challenge" / "secret"
VERIFIED_BOTS = ROOT / "tests" / "fixtures" / "verified" / "bots.json"
GOOGLEBOT = b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def outcome(rec):
    """What nginx made of a logged request: the action its variables say,
    or, for the outcomes that end before they are set, what the response
    shows: 400 for a refusal, the challenge's endpoint for an answer."""
    if rec["edgeguard_action"]:
        return rec["edgeguard_action"]
    if rec["status"] == 400:
        return "refused"
    if rec["uri"].startswith("/.edgeguard/challenge"):
        return "answer"
    return "?"


def test_replay_decides_every_outcome_as_nginx_did(origin, tmp_path):
    """nginx and replay run one pipeline (src/gate/): under the challenge,
    the verified bots and a list nginx may be unable to strip, every
    recorded request (passed, challenged, blocked, a fake crawler, an answer
    to the challenge, internal headers nginx cannot remove) is replayed to
    the outcome nginx gave it."""
    port = free_port()
    configure = (
        'models = { bot = "%s", spoof = "%s" }, mode = "challenge", vars = true, '
        'challenge_secret = "%s", verified_bots = "%s",'
        % (MODELS["bot"], MODELS["spoof"], CHALLENGE_SECRET, VERIFIED_BOTS)
    )
    conf = edge_conf(port, origin.port, TEST_LIST, configure=configure, access=ACCESS,
                     init='require "resty.edgeguard.record"')
    conf = conf.replace(
        "    access_log off;\n",
        f"    include {LOG_FORMAT_CHALLENGE};\n    access_log logs/record.jsonl edgeguard_json_challenge;\n",
        1,
    ).replace(
        "        location / {",
        # Names that are not tokens reach the access phase (and the refusal).
        "        ignore_invalid_headers off;\n"
        '        set $edgeguard_request_headers "";\n'
        '        set $edgeguard_bot "";\n        set $edgeguard_spoof "";\n        set $edgeguard_action "";\n'
        '        set $edgeguard_ja4 "";\n        set $edgeguard_tls_family "";\n'
        '        set $edgeguard_time "";\n        set $edgeguard_verified_bot "";\n'
        "        location / {",
        1,
    )
    assert "edgeguard_json_challenge;" in conf
    sent = requests()[:120]
    sent += [
        Req(b"GET", b"/crawl", b"1.1", [(b"Host", b"a"), (b"User-Agent", GOOGLEBOT), (b"Accept", b"text/html")]),
        Req(b"GET", b"/crawl.json", b"1.1", [(b"Host", b"a"), (b"User-Agent", GOOGLEBOT), (b"Accept", b"*/*")]),
        Req(b"GET", b"/.edgeguard/challenge?n=forged&c=1&r=%2F", b"1.1",
            [(b"Host", b"a"), (b"User-Agent", b"curl/8.5.0")]),
        Req(b"GET", b"/x", b"1.1", [(b"Host", b"a"), (b"User-Agent", b"curl/8.5.0"), (b"X-Internal-(a", b"1")]),
    ]
    nginx = Nginx(conf)
    nginx.start(port)
    try:
        statuses = [send(port, r.wire(), head_only=r.method == b"HEAD") for r in sent]
    finally:
        nginx.stop()
    log_text = (nginx.prefix / "logs" / "record.jsonl").read_bytes()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    records = [log_record(line) for line in log_text.split(b"\n")[:-1]]
    assert len(records) == len(sent)
    seen = {outcome(rec) for rec in records}
    for want in ("pass", "challenge", "challenge_required", "answer", "refused"):
        assert want in seen, (want, seen, statuses)

    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "internal_headers": str(TEST_LIST), "models": MODELS, "mode": "challenge",
        "challenge_secret": str(CHALLENGE_SECRET), "verified_bots": str(VERIFIED_BOTS),
    }))
    log = tmp_path / "record.jsonl"
    log.write_bytes(log_text)
    out = tmp_path / "replay.jsonl"
    done = subprocess.run(
        [EDGEGUARD, "replay", "--config", config, "--threads", "2", "--ordered", "--no-progress",
         "--output", out, log],
        capture_output=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    replayed = {o["line"]: o for o in map(json.loads, out.read_text().splitlines())}
    assert sorted(replayed) == list(range(1, len(sent) + 1))
    for i, rec in enumerate(records):
        assert replayed[i + 1]["action"] == outcome(rec), (i, replayed[i + 1], rec)
