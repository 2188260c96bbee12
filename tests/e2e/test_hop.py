"""People behind a real front proxy pass; scripts behind it do not.

A front nginx load balancer (`proxy_http_version 1.1; proxy_set_header
Connection ""; X-Forwarded-For`), HAProxy 2.6 in http mode (`option
forwardfor`) and Caddy 2.6 (`reverse_proxy`) on 127.0.0.1 forward to an edgeguard nginx in block mode set
up as docs/deployment.md says: nginx's realip module (`set_real_ip_from
127.0.0.1; real_ip_header X-Forwarded-For;`) and edgeguard's
`trusted_proxies` + `proxy_profile`. Real people's heads from the corpus
(every family, HTTP/1.1 and HTTP/2 captures) are sent over raw sockets
from 127.0.0.23, the client address, through the front: none is blocked.
curl's and python-requests' heads are. The access log's `client` is the
client (127.0.0.23) and `peer` the front (127.0.0.1); replay reads the log
with the same options and decides every request as nginx did. A forged
fingerprint header sent straight to the edge (an untrusted address) never
reaches the origin and changes nothing.
"""

import json
import socket
import subprocess
import http.client

import pytest

from conftest import ROOT, TEST_LIST, Nginx, bad_log_lines, edge_conf, free_port
from hop_support import EDGEGUARD, Front, corpus, raw_request
from test_challenge import HEADLESS, page_nonce, solve

LOG_FORMAT = ROOT / "nginx-conf" / "log-format.conf"
MODELS = {"bot": str(ROOT / "models" / "bot.json"), "spoof": str(ROOT / "models" / "spoof.json")}
CLIENT = "127.0.0.23"
JA4_HEADER = "X-Client-JA4"
FORGED = "t13d1516h2_8daaf6152771_e5627efa2ab1"
PEOPLE_PER_FAMILY = 12

ACCESS = """
                require("resty.edgeguard.record").capture()
                require("resty.edgeguard").access()
"""


def options(profile, vars=True):
    """The options of docs/deployment.md for a front proxy on 127.0.0.1."""
    return {
        "models": MODELS,
        "mode": "block",
        "vars": vars,
        "trusted_proxies": ["127.0.0.1/32"],
        "proxy_profile": profile,
        "tls_fingerprint_header": JA4_HEADER,
    }


def lua_table(opts):
    """`opts` as configure{} fields."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "{ " + ", ".join(value(x) for x in v) + " }"
        return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
    return " ".join(f"{k} = {value(v)}," for k, v in opts.items())


def recording(conf):
    """`conf` writing logs/record.jsonl in the access-log format replay
    reads, with the variables it names declared."""
    return conf.replace(
        "    access_log off;\n",
        f"    include {LOG_FORMAT};\n    access_log logs/record.jsonl edgeguard_json;\n",
        1,
    ).replace(
        "        location / {",
        '        set $edgeguard_request_headers "";\n'
        '        set $edgeguard_bot "";\n        set $edgeguard_spoof "";\n        set $edgeguard_action "";\n'
        '        set $edgeguard_ja4 "";\n        set $edgeguard_tls_family "";\n'
        "        location / {",
        1,
    )


def edge_with(profile, port, origin_port, extra=None):
    conf = edge_conf(
        port, origin_port, TEST_LIST, configure=lua_table({**options(profile), **(extra or {})}), access=ACCESS,
        init='require "resty.edgeguard.record"',
        http_extra="set_real_ip_from 127.0.0.1;\n    real_ip_header X-Forwarded-For;",
    )
    conf = recording(conf)
    assert "real_ip_header" in conf and "edgeguard_json;" in conf
    return Nginx(conf)


def exchange(port, record, extra=(), client=CLIENT, uri=None):
    """The record's head (plus `extra`, at `uri`) from `client` to
    127.0.0.1:port; (status, response headers, body)."""
    r = dict(record, headers=list(record["headers"]) + list(extra), uri=uri or record["uri"])
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((client, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(raw_request(r))
        resp = http.client.HTTPResponse(s, method=r["method"])
        resp.begin()
        return resp.status, resp.getheaders(), resp.read()


def send_from(port, record, extra=()):
    """The record's head from CLIENT to 127.0.0.1:port; the status."""
    return exchange(port, record, extra)[0]


def people():
    return corpus("human", PEOPLE_PER_FAMILY)


def scripts():
    return corpus("automated", 8, families={"curl", "python-requests"})


@pytest.mark.parametrize("kind", ["nginx", "haproxy", "caddy"])
def test_people_behind_a_front_proxy_pass_and_scripts_do_not(origin, tmp_path, kind):
    port = free_port()
    edge = edge_with(kind, port, origin.port)
    edge.start(port)
    front = None
    try:
        front = Front(kind, port)
        humans, bots = people(), scripts()
        human_status = [send_from(front.port, r) for r in humans]
        bot_status = [send_from(front.port, r) for r in bots]
        # Straight to the edge from the client's address (not a trusted
        # proxy): a person's head with a forged fingerprint header.
        before = len(origin.requests)
        direct = [send_from(port, r) for r in humans[:6]]
        forged = [send_from(port, r, [(JA4_HEADER, FORGED)]) for r in humans[:6]]
        forwarded = origin.requests[before:]
    finally:
        if front:
            front.stop()
        edge.stop()
    log = [json.loads(line) for line in (edge.prefix / "logs" / "record.jsonl").read_text().splitlines()]
    bad = bad_log_lines(edge.error_log)
    edge.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)

    blocked = [(r["family"], r["uri"]) for r, s in zip(humans, human_status) if s == 403]
    assert not blocked, f"{len(blocked)} of {len(humans)} people blocked through {kind}: {blocked[:5]}"
    assert len({r["family"] for r in humans}) >= 6
    assert all(s == 200 for s in human_status), human_status
    assert bot_status == [403] * len(bots), bot_status

    # The forged header changed no decision and never reached the origin.
    assert forged == direct
    assert all(JA4_HEADER.lower() not in (n.lower() for n, _ in h) for _, _, h in forwarded)

    # nginx's variables saw the client, not the front; the peer is the front.
    through = log[: len(humans) + len(bots)]
    assert {(x["client"], x["peer"]) for x in through} == {(CLIENT, "127.0.0.1")}
    assert {x["peer"] for x in log[len(through):]} == {CLIENT}
    actions = [x["edgeguard_action"] for x in through]
    assert actions.count("block") == len(bots), actions

    # Replay, with the same options from a file, decides as nginx did.
    config = tmp_path / "edgeguard.json"
    opts = options(kind)
    opts["internal_headers"] = str(TEST_LIST)
    config.write_text(json.dumps(opts))
    logfile = tmp_path / "record.jsonl"
    logfile.write_text("".join(json.dumps(x) + "\n" for x in log))
    out = subprocess.run(
        [str(EDGEGUARD), "replay", "--config", str(config), "--ordered", "--output", "-", "--threads", "1",
         str(logfile)],
        capture_output=True, check=True,
    )
    replayed = [json.loads(line)["action"] for line in out.stdout.decode().splitlines()]
    assert replayed == [x["edgeguard_action"] for x in log]


def test_a_trusted_front_without_realip_is_warned_about_once(origin):
    """The profile without nginx's realip lines: the client address is the
    front's, which allow, bots, rules and the challenge would read; the
    worker says so once, naming the fix, and people still pass."""
    port = free_port()
    conf = edge_conf(
        port, origin.port, TEST_LIST, configure=lua_table(options("nginx", vars=False)),
        access='require("resty.edgeguard").access()',
    )
    assert "real_ip_header" not in conf
    edge = Nginx(conf)
    edge.start(port)
    front = None
    try:
        front = Front("nginx", port)
        statuses = [send_from(front.port, r) for r in people()[:10]]
    finally:
        if front:
            front.stop()
        edge.stop()
    log = edge.error_log
    edge.cleanup()
    assert statuses == [200] * 10
    warnings = [line for line in log.splitlines() if "realip module is not set up" in line]
    assert len(warnings) == 1, warnings
    assert "[warn]" in warnings[0] and "set_real_ip_from" in warnings[0]
    assert not bad_log_lines(log)


def test_behind_an_l4_balancer_with_the_proxy_protocol_nothing_is_relayed(origin, tmp_path):
    """docs/deployment.md's second placement: HAProxy `mode tcp` with
    `send-proxy-v2` into `listen ... proxy_protocol; real_ip_header
    proxy_protocol;`, profile direct. nginx gets the browser's own bytes:
    people pass, scripts are blocked, the client is the client."""
    port = free_port()
    conf = edge_conf(
        port, origin.port, TEST_LIST,
        configure=lua_table({"models": MODELS, "mode": "block"}),
        access=ACCESS, init='require "resty.edgeguard.record"',
        http_extra="set_real_ip_from 127.0.0.1;\n    real_ip_header proxy_protocol;",
    )
    conf = conf.replace(f"listen 127.0.0.1:{port};", f"listen 127.0.0.1:{port} proxy_protocol;", 1)
    conf = recording(conf)
    assert "proxy_protocol;" in conf
    edge = Nginx(conf)
    front = Front("haproxy-tcp", port)
    try:
        edge.start(port)
        humans, bots = people(), scripts()
        human_status = [send_from(front.port, r) for r in humans]
        bot_status = [send_from(front.port, r) for r in bots]
    finally:
        front.stop()
        edge.stop()
    log = [json.loads(line) for line in (edge.prefix / "logs" / "record.jsonl").read_text().splitlines()]
    bad = bad_log_lines(edge.error_log)
    edge.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    assert human_status == [200] * len(humans), human_status
    assert bot_status == [403] * len(bots), bot_status
    assert {(x["client"], x["peer"]) for x in log} == {(CLIENT, "127.0.0.1")}


def curl_head(ua="curl/8.0"):
    return {"method": "GET", "uri": "/", "headers": [["Host", "shop.test"], ["User-Agent", ua], ["Accept", "*/*"]]}


BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
# Client addresses behind the front: realip makes each the edge's client
# ($remote_addr), the front (127.0.0.1) stays the peer. 127.0.1.0/24 is
# another /24, for the clearance's prefix binding and the signals' prefixes.
BOT_CLIENT, OFFICE, ALLOWED, OTHER, SAME_24, FAR = (
    CLIENT, "127.0.0.24", "127.0.0.25", "127.0.0.26", "127.0.0.27", "127.0.1.26")


@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
def test_behind_a_front_every_address_check_reads_the_client(origin, tmp_path, kind):
    """Through a real nginx load balancer and HAProxy: `allow`, a rule's client list,
    the verified-bot address check, the clearance's prefix binding and the
    fleet signals' prefixes all read the client realip set, never the
    front's address (which every request shares: any check reading it
    would decide the same for all)."""
    (tmp_path / "bots.json").write_text(json.dumps({"bots": [{
        "name": "bingbot", "tokens": ["bingbot"],
        "prefixes": {"prefixes": [{"ipv4Prefix": f"{BOT_CLIENT}/32"}]}}]}))
    (tmp_path / "rules.json").write_text(json.dumps({
        "lists": {"office": [f"{OFFICE}/32"], "hops": ["127.0.0.1/32"]},
        "rules": [{"name": "office", "when": {"client": "office"}, "action": "allow"},
                  {"name": "hops", "when": {"client": "hops"}, "action": "block"}]}))
    # vars off: a challenge location sets more variables than the edge declares.
    extra = {"mode": "challenge", "vars": False, "allow": [f"{ALLOWED}/32"], "verified_bots": str(tmp_path / "bots.json"),
             "rules": [str(tmp_path / "rules.json")],
             "challenge_secret": str(ROOT / "tests" / "fixtures" / "challenge" / "secret")}
    port = free_port()
    edge = edge_with(kind, port, origin.port, extra)
    edge.start(port)
    front = None
    try:
        front = Front(kind, port)
        via = front.port
        got = {
            "office curl": exchange(via, curl_head(), client=OFFICE)[0],
            "allowed curl": exchange(via, curl_head(), client=ALLOWED)[0],
            "other curl": exchange(via, curl_head(), client=OTHER)[0],
            "bingbot in its prefix": exchange(via, curl_head(BINGBOT), client=BOT_CLIENT)[0],
            "bingbot outside": exchange(via, curl_head(BINGBOT), client=OTHER)[0],
        }
        # The real challenge flow through the front, from OTHER: the page,
        # the work, the answer, the return hop; the cookie then holds for
        # OTHER's /24 and not for FAR's.
        page = {"method": "GET", "uri": "/", "headers": [list(h) for h in HEADLESS]}
        status, _, body = exchange(via, page, client=OTHER)
        nonce, difficulty = page_nonce(body)
        answer = f"/.edgeguard/challenge?n={nonce}&c={solve(nonce, difficulty)}&r=%2F"
        status, headers, _ = exchange(via, page, client=OTHER, uri=answer)
        assert status == 303, status
        cookie = [v for k, v in headers if k.lower() == "set-cookie"][0].split(";")[0]
        got["cleared, same client"] = exchange(via, page, [("Cookie", cookie)], client=OTHER)[0]
        got["cleared, same /24"] = exchange(via, page, [("Cookie", cookie)], client=SAME_24)[0]
        got["cleared, other /24"] = exchange(via, page, [("Cookie", cookie)], client=FAR)[0]
        # A person's head from two /24s, for the signals.
        person = people()[0]
        for client in (OTHER, FAR):
            for _ in range(4):
                assert exchange(via, person, client=client)[0] == 200
    finally:
        if front:
            front.stop()
        edge.stop()
    log_path = tmp_path / "record.jsonl"
    log_path.write_text((edge.prefix / "logs" / "record.jsonl").read_text())
    log = [json.loads(line) for line in log_path.read_text().splitlines()]
    bad = bad_log_lines(edge.error_log)
    edge.cleanup()
    assert not bad, "error log has errors:\n" + "\n".join(bad)
    assert got == {
        "office curl": 200, "allowed curl": 200, "other curl": 403,
        "bingbot in its prefix": 200, "bingbot outside": 403,
        "cleared, same client": 200, "cleared, same /24": 200, "cleared, other /24": 403,
    }, got
    assert {x["peer"] for x in log} == {"127.0.0.1"}
    assert {x["client"] for x in log} == {OFFICE, ALLOWED, OTHER, BOT_CLIENT, SAME_24, FAR}

    # `edgeguard signals` on that log, judged as nginx did: the people's
    # keys count the clients' two /24s, not the front's one.
    config = tmp_path / "edgeguard.json"
    opts = {**options(kind), **extra, "internal_headers": str(TEST_LIST)}
    config.write_text(json.dumps(opts))
    snap = tmp_path / "signals.json"
    out = subprocess.run([str(EDGEGUARD), "signals", "--config", str(config), "--out", str(snap), str(log_path)],
                         capture_output=True)
    assert out.returncode == 0, out.stderr.decode()
    entries = json.loads(snap.read_text())["entries"]
    person_keys = [e for e in entries if e["kind"] == "headers" and e["requests"] == 8]
    assert len(person_keys) == 1, entries
    assert (person_keys[0]["prefixes24"], person_keys[0]["prefixes48"]) == (2, 0), person_keys
