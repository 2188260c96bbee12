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


def edge_with(profile, port, origin_port):
    conf = edge_conf(
        port, origin_port, TEST_LIST, configure=lua_table(options(profile)), access=ACCESS,
        init='require "resty.edgeguard.record"',
        http_extra="set_real_ip_from 127.0.0.1;\n    real_ip_header X-Forwarded-For;",
    )
    conf = conf.replace(
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
    assert "real_ip_header" in conf and "edgeguard_json;" in conf
    return Nginx(conf)


def send_from(port, record, extra=()):
    """The record's head from CLIENT to 127.0.0.1:port; the status."""
    r = dict(record, headers=list(record["headers"]) + list(extra))
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((CLIENT, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(raw_request(r))
        resp = http.client.HTTPResponse(s, method=r["method"])
        resp.begin()
        resp.read()
        return resp.status


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
    conf = conf.replace(
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
