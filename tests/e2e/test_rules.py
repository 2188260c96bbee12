"""Site rules in real nginx (issue 32), over raw sockets: a feed reader's
real request head passes through the feeds preset, the same head on a
server without it is judged by the model; a rule's block status, name and
tag reach the client, the variables and the error log; a reload with a
broken rules file is refused naming the file, the rule and the field, and
the old rules keep serving.

The feed reader is Debian's newsboat: its head is captured live against a
local socket when newsboat is installed, else read from
tests/e2e/data/newsboat-head.txt (captured the same way from newsboat
2.21.0, Debian 12).
"""

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading

import pytest

from conftest import (LIB, ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, nginx_preamble,
                      replace, wait_until)

BOT_MODEL = ROOT / "models" / "bot.json"
HEAD_FIXTURE = ROOT / "tests" / "e2e" / "data" / "newsboat-head.txt"
FEED = (b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>http://x/</link>'
        b'<description>d</description><item><title>a</title><link>http://x/a</link></item></channel></rss>')


def capture_newsboat_head(path="/blog/feed.xml"):
    """newsboat's request head for a feed at `path` on a local socket, as
    its header lines (name, value) without Host; None without newsboat."""
    if not shutil.which("newsboat"):
        return None
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(60)
    port = srv.getsockname()[1]
    heads = []

    def serve():
        c, _ = srv.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += c.recv(65536)
        heads.append(data.split(b"\r\n\r\n")[0])
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: %d\r\n"
                  b"Connection: close\r\n\r\n" % len(FEED) + FEED)
        c.close()

    t = threading.Thread(target=serve)
    t.start()
    home = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-newsboat-"))
    (home / "urls").write_text(f"http://127.0.0.1:{port}{path}\n")
    (home / "config").write_text("")
    subprocess.run(["newsboat", "-u", "urls", "-C", "config", "-c", "cache.db", "-x", "reload"], cwd=home,
                   env=dict(os.environ, HOME=str(home)), capture_output=True, timeout=60, check=True)
    t.join(10)
    srv.close()
    shutil.rmtree(home, ignore_errors=True)
    return parse_head(heads[0].decode("latin-1"))


def parse_head(text):
    lines = text.replace("\r\n", "\n").strip("\n").split("\n")
    assert lines[0].startswith("GET "), lines[0]
    return [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:] if not line.lower().startswith("host:")]


def newsboat_head():
    live = capture_newsboat_head()
    fixture = parse_head(HEAD_FIXTURE.read_text())
    if live is not None:
        # The fixture is what the installed reader sends (its version aside).
        assert [n for n, _ in live] == [n for n, _ in fixture], (live, fixture)
        return live
    return fixture


# A script fetching the same feed: Python's urllib as a cron job sends it.
SCRIPT = [("Accept-Encoding", "identity"), ("User-Agent", "Python-urllib/3.11")]


def send(port, target, lines, method="GET"):
    """Exactly this request head (Host first); (status, headers, body)."""
    head = [f"{method} {target} HTTP/1.1", "Host: edge.test", *[f"{n}: {v}" for n, v in lines],
            "Connection: close", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall("\r\n".join(head).encode("latin-1"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *rest = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in rest:
        n, _, v = line.partition(":")
        headers[n.strip().lower()] = v.strip()
    return int(status.split()[1]), headers, body


class Edge:
    """nginx with the bot model in mode block: one server with the
    configure{} rules (the presets and a site file), one whose location
    turns rules off (access{ rules = false })."""

    def __init__(self, origin):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-rules-"))
        os.chmod(self.dir, 0o755)
        self.site = self.dir / "site.json"
        self.write_site(451)
        self.port, self.off_port = free_port(), free_port()
        vars_ = "\n".join(f'set $edgeguard_{v} "";' for v in ("bot", "action", "time", "verified_bot", "rule", "tag",
                                                               "bot_category"))
        report = ('add_header X-Rule $edgeguard_rule always; add_header X-Tag $edgeguard_tag always; '
                  'add_header X-Action $edgeguard_action always;')

        def server(port, access):
            return f"""
    server {{
        listen 127.0.0.1:{port};
        {vars_}
        location / {{
            {report}
            rewrite_by_lua_block {{ {access} }}
            proxy_pass http://127.0.0.1:{origin.port};
        }}
    }}"""
        conf = nginx_preamble() + f"""
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}",
            lib_path = "{LIB}",
            models = {{ bot = "{BOT_MODEL}" }},
            mode = "block",
            vars = true,
            rules = {{ "preset:well-known", "preset:feeds", "{self.site}" }},
        }})
    }}
    {server(self.port, 'require("resty.edgeguard").access()')}
    {server(self.off_port, 'require("resty.edgeguard").access{ rules = false }')}
}}
"""
        self.nginx = Nginx(conf)
        self.nginx.start(self.port)

    def write_site(self, status, broken=False):
        regex = "(unclosed" if broken else "^/admin(/|$)"
        replace(self.site, (
            '{"rules": [{"name": "site/ping", "when": {"path": {"exact": "/ping"}}, "action": "pass"},\n'
            f' {{"name": "site/admin", "tag": "admin", "when": {{"path": {{"regex": "{regex}"}}}},'
            f' "action": "block", "status": {status}}}]}}\n').encode())

    def hup(self):
        offset = len(self.nginx.error_log)
        os.kill(self.nginx.proc.pid, signal.SIGHUP)
        return offset

    def stop(self):
        self.nginx.stop()
        self.nginx.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def edge(origin):
    e = Edge(origin)
    yield e
    e.stop()


def test_a_feed_readers_real_head_passes_and_a_script_without_the_preset_is_flagged(edge, origin):
    head = newsboat_head()
    status, h, _ = send(edge.port, "/blog/feed.xml", head)
    assert status == 200
    assert (h["x-rule"], h["x-tag"], h["x-action"]) == ("feeds/path", "feed", "pass")
    seen = dict((k.lower(), v) for k, v in origin.last_headers())
    assert seen["user-agent"].startswith("newsboat/")
    assert "x-bot-score" not in seen, "a pass before scoring is not scored"
    # The script on the same path: the preset passes any client there.
    assert send(edge.port, "/blog/feed.xml", SCRIPT)[0] == 200
    # Feeds off: the model judges the script (and, here, the reader too).
    status, h, _ = send(edge.off_port, "/blog/feed.xml", SCRIPT)
    assert (status, h["x-action"], h.get("x-rule", "")) == (403, "block", "")
    status, h, _ = send(edge.off_port, "/blog/feed.xml", head)
    assert h.get("x-rule", "") == ""
    print("newsboat's head without the feeds preset:", status, h["x-action"])
    assert not bad_log_lines(edge.nginx.error_log)


def test_a_block_rule_answers_its_status_and_logs_its_name(edge):
    status, h, _ = send(edge.port, "/admin/users", SCRIPT)
    assert (status, h["x-rule"], h["x-tag"], h["x-action"]) == (451, "site/admin", "admin", "block")
    wait_until("the decision line", lambda: 'uri="/admin/users" rule=site/admin tag=admin' in edge.nginx.error_log)
    assert send(edge.port, "/robots.txt", SCRIPT)[1]["x-rule"] == "well-known/robots-txt"


def test_a_reload_with_a_broken_rules_file_keeps_the_old_rules(edge):
    edge.write_site(452, broken=True)
    offset = edge.hup()
    line = wait_until("the refused reload", lambda: next(
        (l for l in edge.nginx.error_log[offset:].splitlines() if "init_by_lua" in l and "site.json" in l), None))
    assert f"rules[2]: {edge.site}: rules[1].when.path.regex:" in line, line
    # The old rules still serve: the old status.
    assert send(edge.port, "/admin", SCRIPT)[0] == 451
    edge.write_site(452)
    edge.hup()
    wait_until("the new rules", lambda: send(edge.port, "/admin", SCRIPT)[0] == 452)
    assert send(edge.port, "/ping", SCRIPT)[1]["x-rule"] == "site/ping"


def test_record_then_replay_with_rules_agrees(origin, tmp_path):
    """The same rules in nginx and in replay's configuration file: every
    recorded request replays to nginx's action, and the requests a rule
    decided say which rule and what they would get without it."""
    import json
    from conftest import edge_conf
    from test_record_replay import ACCESS, EDGEGUARD, MODELS, log_record, outcome, requests
    from test_record_replay import send as send_wire

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        {"name": "heads", "tag": "h", "when": {"method": "HEAD"}, "action": "pass"},
        {"name": "search", "when": {"path": {"prefix": "/search"}}, "action": "block", "status": 451},
        {"name": "api", "when": {"path": {"prefix": "/api/"}}, "action": "allow"},
        {"name": "sure", "when": {"score": {"model": "bot", "at_least": 0.99}}, "action": "block", "status": 429},
    ]}))
    port = free_port()
    configure = ('models = { bot = "%s", spoof = "%s" }, mode = "block", vars = true, '
                 'rules = { "preset:well-known", "preset:feeds", "%s" },' % (MODELS["bot"], MODELS["spoof"], rules))
    conf = edge_conf(port, origin.port, TEST_LIST, configure=configure, access=ACCESS,
                     init='require "resty.edgeguard.record"')
    conf = conf.replace(
        "    access_log off;\n",
        f"    include {ROOT / 'nginx-conf' / 'log-format-challenge.conf'};\n"
        "    access_log logs/record.jsonl edgeguard_json_challenge;\n", 1,
    ).replace(
        "        location / {",
        '        set $edgeguard_request_headers "";\n'
        '        set $edgeguard_bot "";\n        set $edgeguard_spoof "";\n        set $edgeguard_action "";\n'
        '        set $edgeguard_ja4 "";\n        set $edgeguard_tls_family "";\n'
        '        set $edgeguard_time "";\n        set $edgeguard_verified_bot "";\n'
        '        set $edgeguard_rule "";\n        set $edgeguard_tag "";\n        set $edgeguard_bot_category "";\n'
        "        location / {", 1,
    )
    sent = requests()
    nginx = Nginx(conf)
    nginx.start(port)
    try:
        for r in sent:
            send_wire(port, r.wire(), head_only=r.method == b"HEAD")
    finally:
        nginx.stop()
    log_text = (nginx.prefix / "logs" / "record.jsonl").read_bytes()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    records = [log_record(line) for line in log_text.split(b"\n")[:-1]]
    assert len(records) == len(sent)

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"internal_headers": str(TEST_LIST), "models": MODELS, "mode": "block",
                                  "rules": ["preset:well-known", "preset:feeds", str(rules)]}))
    log = tmp_path / "record.jsonl"
    log.write_bytes(log_text)
    out = tmp_path / "replay.jsonl"
    done = subprocess.run([EDGEGUARD, "replay", "--config", config, "--threads", "2", "--ordered", "--no-progress",
                           "--output", out, log], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    replayed = {o["line"]: o for o in map(json.loads, out.read_text().splitlines())}
    ruled = {}
    for i, rec in enumerate(records):
        rep = replayed.get(i + 1)
        if rep is None:  # not a request nginx parsed
            continue
        assert rep["action"] == outcome(rec), (i, rep, rec)
        if "rule" in rep:
            ruled[rep["rule"]] = ruled.get(rep["rule"], 0) + 1
            assert rep["without_rules"] in ("pass", "block", "log", "allow"), rep
    assert {"heads", "search"} <= set(ruled), ruled
    report = done.stderr.decode() + done.stdout.decode()
    assert f"search (block 451): {ruled['search']} requests; without rules:" in report, report
