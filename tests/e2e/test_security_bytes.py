"""Every byte class after a prefix rule, through real nginx, at the origin.

lua-nginx-module's ngx.req.clear_header percent-escapes the bytes of a name
that are not RFC 9110 token characters before it compares names
(ngx_http_lua_copy_escaped_header, 0.10.23), so it cannot remove
`X-Internal-(a`, which nginx keeps when `ignore_invalid_headers` is off.
edgeguard checks what is left after clearing and refuses such a request
with 400. Here one nginx holds the four cells of `ignore_invalid_headers`
x `underscores_in_headers`, each on an HTTP/1.1 and an h2c port, each with
the three ways to strip (clear_internal_headers(), access{} on the Rust
engine, access{} on the Lua engine), and every request carries one name made
of a prefix rule, one byte of a class, and more name.

The byte classes (a sample of each, as listed in BYTES): ASCII controls and
NUL, space, DEL, the RFC 9110 separators (all of them but `:`, which ends a
name), the token symbols (all of them), `_`, and 8-bit bytes from both
halves of 0x80-0xFF; a letter as the baseline.

What must hold for every request: no header the list calls internal
reaches the origin (the origin's received bytes decide), the request is
either served with the name gone or refused with 400 (by nginx itself, or
by edgeguard, which then logs `action=refused`), and when
clear_internal_headers() serves a request, the count it returns is the
number of internal entries nginx held before it ran (never a removal that
did not happen). EDGEGUARD_SECURITY_REPORT=path writes every outcome as JSON
(the table in RELIABILITY.md is made from it).
"""

import collections
import json
import os

import pytest

from security_support import (LIST, Edge, RawOrigin, free_port, h1, h2c, head_fields, is_internal, nginx_conf)

CONTROLS = [0x00, 0x01, 0x09, 0x0B, 0x1F]
SEPARATORS = list(b'"(),/;<=>?@[\\]{}')
TOKEN_SYMBOLS = list(b"!#$%&'*+.^`|~")
EIGHT_BIT = [0x80, 0x9F, 0xA0, 0xC3, 0xE9, 0xFF]
BYTES = {
    "control": CONTROLS,
    "space": [0x20],
    "DEL": [0x7F],
    "separator": SEPARATORS,
    "token symbol": TOKEN_SYMBOLS,
    "underscore": [0x5F],
    "8-bit": EIGHT_BIT,
    "letter": [0x61],
}
# A second prefix rule with the byte right after the prefix, for the bytes
# clear_header escapes.
ESCAPED_CLASSES = ("separator", "8-bit")

CELLS = [(ignore, underscores) for ignore in ("on", "off") for underscores in ("on", "off")]
APIS = {
    "clear_internal_headers": """
        local held, lheaders = 0, package.loaded["edgeguard_test_list"]
        for name, v in pairs(ngx.req.get_headers(0, true)) do
            if lheaders.is_internal(lheaders.list, name) then
                held = held + (type(v) == "table" and #v or 1)
            end
        end
        ngx.header["X-Held-Internal"] = held
        local removed, err = require("resty.edgeguard").clear_internal_headers()
        if not removed then
            ngx.log(ngx.ERR, "edgeguard: ", err)
            return ngx.exit(500)
        end
        ngx.header["X-Edgeguard-Removed"] = removed
    """,
    "access rust": 'require("resty.edgeguard").access{ engine = "rust" }',
    "access lua": 'require("resty.edgeguard").access{ engine = "lua" }',
}
PATHS = {"clear_internal_headers": "/strip", "access rust": "/rust", "access lua": "/lua"}


def names_for(cls, b, h2):
    c = bytes([b])
    names = [b"X-Internal-" + c + b"a"]
    if cls in ESCAPED_CLASSES:
        names.append(b"CloudFront-Viewer" + c + b"Country")
    return [n.lower() for n in names] if h2 else names


def server(cell, h1_port, h2_port, origin_port):
    ignore, underscores = cell
    locations = "".join(f"""
        location {PATHS[api]} {{
            rewrite_by_lua_block {{ {code} }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}""" for api, code in APIS.items())
    return f"""
    server {{
        listen 127.0.0.1:{h1_port};
        listen 127.0.0.1:{h2_port} http2;
        ignore_invalid_headers {ignore};
        underscores_in_headers {underscores};
        {locations}
    }}"""


@pytest.fixture(scope="module")
def matrix():
    origin = RawOrigin()
    ports = {cell: (free_port(), free_port()) for cell in CELLS}
    body = "".join(server(cell, *ports[cell], origin.port) for cell in CELLS)
    init = f"""
        local lheaders = require "resty.edgeguard.legacy.headers"
        package.loaded["edgeguard_test_list"] = {{ list = assert(lheaders.load("{LIST}")),
                                                   is_internal = lheaders.is_internal }}
    """
    conf = nginx_conf(body, init=init, configure=f'internal_headers = "{LIST}", engine = "shadow", mode = "off",')
    edge = Edge(conf, ports[CELLS[-1]][0])
    yield edge, origin, ports
    edge.stop()
    origin.stop()


OUTCOMES = []


def classify(status, log):
    if status == 200:
        return "served"
    if status == 400 and "action=refused" in log:
        return "400 by edgeguard"
    if status in (400, "reset"):
        return f"{status} by nginx"
    return f"unexpected {status}"


@pytest.mark.parametrize("api", list(APIS))
@pytest.mark.parametrize("proto", ["HTTP/1.1", "h2c"])
@pytest.mark.parametrize("cell", CELLS, ids=[f"ignore_invalid_{i}-underscores_{u}" for i, u in CELLS])
def test_no_internal_header_reaches_the_origin_whatever_byte_follows_the_prefix(matrix, cell, proto, api):
    edge, origin, ports = matrix
    h1_port, h2_port = ports[cell]
    edge.new_log()
    origin.take()
    seen = collections.Counter()
    for cls, values in BYTES.items():
        for b in values:
            for name in names_for(cls, b, proto == "h2c"):
                target = f"{PATHS[api]}?b={b:02x}"
                sent = [(name, b"1"), (b"x-edge-pop" if proto == "h2c" else b"X-Edge-Pop", b"fra"),
                        (b"accept", b"*/*")]
                if proto == "h2c":
                    status, headers, _ = h2c(h2_port, target, sent)
                else:
                    status, headers, _ = h1(h1_port, target, [n + b": " + v for n, v in sent])
                heads = origin.take()
                log = edge.new_log()
                outcome = classify(status, log)
                where = f"{proto} {api} ignore_invalid_headers {cell[0]} underscores_in_headers {cell[1]} " \
                        f"byte 0x{b:02x} ({cls}) name {name!r}"
                assert not outcome.startswith("unexpected"), where
                if status == 200:
                    assert len(heads) == 1, where
                    leaked = [n for n, _ in head_fields(heads[0]) if is_internal(n)]
                    assert not leaked, f"{where}: internal headers at the origin: {leaked}"
                    if api == "clear_internal_headers":
                        # What edgeguard reports is what nginx held: never a removal that did not happen.
                        assert headers["x-edgeguard-removed"] == headers["x-held-internal"], where
                    # nginx dropped it itself when it logged so (ignore_invalid_headers on).
                    if "client sent invalid header" in log:
                        outcome = "served, dropped by nginx"
                    else:
                        outcome = "served, removed by edgeguard"
                else:
                    assert heads == [], f"{where}: refused, yet the origin got a request"
                seen[outcome] += 1
                OUTCOMES.append({"proto": proto, "api": api, "ignore_invalid_headers": cell[0],
                                 "underscores_in_headers": cell[1], "class": cls, "byte": b,
                                 "name": name.decode("latin-1"), "outcome": outcome})
    # The matrix means something: with ignore_invalid_headers off, names nginx
    # keeps and clear_header cannot reach are refused by edgeguard.
    if cell[0] == "off":
        assert seen["400 by edgeguard"] > 0, seen
    else:
        assert seen["400 by edgeguard"] == 0, seen


def test_report():
    path = os.environ.get("EDGEGUARD_SECURITY_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(OUTCOMES, f, indent=0)
