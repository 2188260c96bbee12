"""The score header cannot be forged: whatever spelling a client sends, the
origin gets exactly one, edgeguard's, or none.

nginx passes `X_Bot_Score` on with `underscores_in_headers on`, and
ngx.req.set_header replaces only the names equal to its own ignoring case,
so a client's `X_Bot_Score` used to reach the origin next to the real
`X-Bot-Score`; CGI/WSGI backends merge `_` and `-`. Unscored requests
(models that failed to load, when that failed open) used to pass the
client's `X-Bot-Score` untouched; a model that fails to load now refuses
the start, so the unscored case here is a configuration without models. Both configurations run here with the shipped placement, over
HTTP/1.1 and h2c, with underscores_in_headers on and off; the origin's
received bytes decide.
"""

import re

import pytest

from security_support import (LIST, MODELS, Edge, RawOrigin, fold, free_port, h1, h2c, head_fields, nginx_conf)

SPELLINGS = [b"X-Bot-Score", b"x-bot-score", b"X_Bot_Score", b"x_bot-SCORE", b"X-BOT_score", b"X-Bot_Score"]
FORGED = b"bot=0.0; spoof=0.0"
REAL = re.compile(rb"^bot=[0-9.e+-]+; spoof=[0-9.e+-]+$")


def server(h1_port, h2_port, origin_port, underscores):
    return f"""
    server {{
        listen 127.0.0.1:{h1_port};
        listen 127.0.0.1:{h2_port} http2;
        underscores_in_headers {underscores};
        rewrite_by_lua_block {{ require("resty.edgeguard").access() }}
        location / {{ proxy_pass http://127.0.0.1:{origin_port}; }}
        location /other {{
            rewrite_by_lua_block {{ require("resty.edgeguard").access{{ score_header = "X-Other-Score" }} }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}
        location /strip {{
            rewrite_by_lua_block {{ assert(require("resty.edgeguard").clear_internal_headers()) }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}
    }}"""


def start(models):
    origin = RawOrigin()
    ports = {u: (free_port(), free_port()) for u in ("on", "off")}
    body = "".join(server(*ports[u], origin.port, u) for u in ports)
    conf = nginx_conf(body, configure=f'internal_headers = "{LIST}", {models} mode = "off",')
    return Edge(conf, ports["off"][0]), origin, ports


@pytest.fixture(scope="module")
def scored():
    edge, origin, ports = start(MODELS)
    yield origin, ports
    edge.stop()
    origin.stop()


@pytest.fixture(scope="module")
def unscored():
    # No models: every request passes unscored (a model that fails to load
    # refuses the start instead, test_startup.py).
    edge, origin, ports = start("")
    yield origin, ports
    edge.stop()
    origin.stop()


def send(ports, underscores, proto, target, fields):
    h1_port, h2_port = ports[underscores]
    if proto == "h2c":
        return h2c(h2_port, target, [(n.lower(), v) for n, v in fields])[0]
    return h1(h1_port, target, [n + b": " + v for n, v in fields])[0]


def score_fields(head, name=b"X-Bot-Score"):
    """Every field of the head whose name is a spelling of `name`."""
    return [(n, v) for n, v in head_fields(head) if fold(n) == fold(name)]


CASES = [[(s, FORGED)] for s in SPELLINGS] + [[(s, FORGED) for s in SPELLINGS]]
IDS = [s.decode() for s in SPELLINGS] + ["all at once"]


@pytest.mark.parametrize("proto", ["HTTP/1.1", "h2c"])
@pytest.mark.parametrize("underscores", ["on", "off"])
def test_scored_requests_carry_only_edgeguards_score_header(scored, underscores, proto):
    origin, ports = scored
    origin.take()
    for forged in CASES:
        assert send(ports, underscores, proto, "/", forged + [(b"Accept", b"*/*")]) == 200
        (head,) = origin.take()
        got = score_fields(head)
        # The name edgeguard sets, whatever the client sent.
        assert len(got) == 1 and got[0][0] == b"X-Bot-Score" and REAL.match(got[0][1]), (forged, got)
        assert got[0][1] != FORGED


@pytest.mark.parametrize("proto", ["HTTP/1.1", "h2c"])
@pytest.mark.parametrize("underscores", ["on", "off"])
def test_a_location_with_its_own_score_header_removes_both_names(scored, underscores, proto):
    origin, ports = scored
    origin.take()
    other = [b"X-Other-Score", b"X_Other_Score", b"x-OTHER_score"]
    for forged in [[(s, FORGED)] for s in other + SPELLINGS]:
        assert send(ports, underscores, proto, "/other", forged) == 200
        (head,) = origin.take()
        assert score_fields(head) == [], forged
        got = score_fields(head, b"X-Other-Score")
        assert len(got) == 1 and REAL.match(got[0][1]), (forged, got)


@pytest.mark.parametrize("proto", ["HTTP/1.1", "h2c"])
@pytest.mark.parametrize("underscores", ["on", "off"])
@pytest.mark.parametrize("target", ["/", "/strip"])
def test_unscored_requests_carry_no_score_header(unscored, underscores, proto, target):
    origin, ports = unscored
    origin.take()
    for forged in CASES:
        assert send(ports, underscores, proto, target, forged) == 200
        (head,) = origin.take()
        assert score_fields(head) == [], (forged, head)


def test_clear_internal_headers_removes_the_score_header_too(scored):
    origin, ports = scored
    origin.take()
    for forged in CASES:
        assert send(ports, "on", "HTTP/1.1", "/strip", forged) == 200
        (head,) = origin.take()
        assert score_fields(head) == [], forged
