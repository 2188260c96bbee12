"""The Lua engine inside real nginx: what it reads, and what it strips.

- read_request (features.lua) parses ngx.req.raw_header(); the Rust engine
  reads nginx's own header list. A location returns both views of the same
  request, and they must be equal: same headers in the same order, same
  values byte for byte, same method, target, version and client address.
- strip (headers.lua) removes headers with ngx.req.clear_header. The same
  requests go through a Rust-stripping edge and a Lua-stripping edge: the
  origin must receive the same headers from both, none of them internal, and
  both must report the same count.
"""

import json
import socket
import subprocess

import pytest

from conftest import TEST_LIST, free_port, raw_request, running_edge

# Modules and the list are loaded in init_by_lua (the master); the list is a
# global there, which is how init_by_lua shares data with the workers.
LUA_INIT = f"""
        require "cjson"
        require "resty.edgeguard.legacy.features"
        TEST_LUA_LIST = assert(require("resty.edgeguard.legacy.headers").load("{TEST_LIST}"))
"""

LUA_STRIP = """
                local features = require "resty.edgeguard.legacy.features"
                local lheaders = require "resty.edgeguard.legacy.headers"
                local req = features.read_request({})
                ngx.header["X-Edgeguard-Removed"] = lheaders.strip(TEST_LUA_LIST, req)
"""

# Both views of the request, as JSON: "lua" from read_request, "rust" from
# the arrays the Rust engine is handed (resty.edgeguard.request).
VIEW_SERVER = """
    server {{
        listen 127.0.0.1:{port} {http2};
        underscores_in_headers {underscores};
        location / {{
            content_by_lua_block {{
                local ffi = require "ffi"
                local cjson = require "cjson"
                local features = require "resty.edgeguard.legacy.features"
                local request = require "resty.edgeguard.request"
                local function str(s) return ffi.string(s.data, s.len) end
                local creq, hdrs, n = assert(request.current(request.get()))
                local rust = {{ method = str(creq.method), uri = str(creq.uri),
                               version = tonumber(creq.http_version),
                               client = str(creq.client_addr), headers = {{}} }}
                for i = 0, n - 1 do
                    rust.headers[i + 1] = {{ str(hdrs[i].key), str(hdrs[i].value) }}
                end
                -- A reused table with more entries than this request has.
                local req = {{ headers = {{}} }}
                for i = 1, 300 do req.headers[i] = {{ "stale", "stale" }} end
                features.read_request(req)
                local lua = {{ method = req.method, uri = req.uri, version = req.http_version,
                              client = req.client_addr, headers = {{}} }}
                for i = 1, req.n_headers do
                    lua.headers[i] = {{ req.headers[i][1], req.headers[i][2] }}
                end
                local body = cjson.encode({{ lua = lua, rust = rust }})
                ngx.header.content_length = #body
                ngx.print(body)
            }}
        }}
    }}
"""


def edge_with_view(origin, underscores, http2=False):
    view_port = free_port()
    servers = VIEW_SERVER.format(port=view_port, underscores="on" if underscores else "off",
                                 http2="http2" if http2 else "")
    for port, nginx in running_edge(origin, underscores=underscores, access=LUA_STRIP,
                                    init=LUA_INIT, extra_servers=servers):
        yield port, view_port, nginx


@pytest.fixture(scope="module")
def lua_edge(origin):
    """Lua strip on :port, both request views on :view_port; underscores on."""
    yield from edge_with_view(origin, underscores=True)


@pytest.fixture(scope="module")
def lua_edge_strict(origin):
    """The same with nginx's default underscores_in_headers off."""
    yield from edge_with_view(origin, underscores=False)


@pytest.fixture(scope="module")
def lua_edge_h2(origin):
    """The views over cleartext HTTP/2 (prior knowledge)."""
    yield from edge_with_view(origin, underscores=True, http2=True)


def send_raw(port, head):
    """Sends a request head as bytes; returns (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


BROWSER = [
    b"Host: shop.example",
    b"Connection: keep-alive",
    b'sec-ch-ua: "Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"',
    b"sec-ch-ua-mobile: ?0",
    b'sec-ch-ua-platform: "macOS"',
    b"User-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
    b"(KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36",
    b"Accept: text/html,*/*;q=0.8",
    b"Sec-Fetch-Site: none",
    b"Accept-Language: en-US,en;q=0.9",
    b"Cookie: a=1; b=2",
]

# Header lines whose parsing could differ: whitespace, empty values, odd
# names (nginx drops names it calls invalid), repeats, 8-bit bytes.
ODD = [
    b"Host: edge.test",
    b"X-Tab:\tv\t",
    b"X-Trail: v   ",
    b"X-Lead:      v",
    b"X-Mid: a  b\t c",
    b"X-Empty:",
    b"X-Empty-Space:    ",
    b"X_Under: 1",
    b"X.Dot: 1",
    b"X@At: 2",
    b"x-colon: a:b: c",
    b"Cookie: a=1",
    b"cookie: b=2",
    b"User-Agent: first",
    b"user-agent: second",
    b"X-8bit: caf\xe9 \xff\x80",
    b"X-Internal-User-Id: 42",
    b"X-Trail-Tabs: v\t \t",
]


def views(view_port, lines, request_line=b"GET /p/a.php?q=1&r=2 HTTP/1.1"):
    head = b"\r\n".join([request_line, *lines, b"Connection: close", b"", b""])
    status, body = send_raw(view_port, head)
    assert status == 200, body
    # cjson writes bytes as they are; latin-1 round-trips every byte.
    both = json.loads(body.decode("latin-1"))
    return both["lua"], both["rust"]


def same_view(lua, rust):
    # The Rust engine gets nginx's lower-cased names; names compare in any case
    # in both engines, so the Lua engine keeps them as sent.
    lua_headers = [[n.lower(), v] for n, v in lua.pop("headers")]
    rust_headers = [[n.lower(), v] for n, v in rust.pop("headers")]
    assert lua == rust
    assert lua_headers == rust_headers
    return lua_headers


@pytest.mark.parametrize("lines", [BROWSER, ODD, [b"Host: x"] + [b"X-N%d: %d" % (i, i) for i in range(150)]],
                         ids=["browser", "odd", "150-headers"])
def test_read_request_sees_what_nginx_parsed(lua_edge, lines):
    _, view_port, _ = lua_edge
    lua, rust = views(view_port, lines)
    headers = same_view(lua, rust)
    assert len(headers) == len(lines) + 1 - (2 if lines is ODD else 0)  # + Connection, - the invalid names


def test_read_request_with_underscores_off(lua_edge_strict):
    _, view_port, _ = lua_edge_strict
    lua, rust = views(view_port, ODD)
    headers = same_view(lua, rust)
    assert "x_under" not in [n for n, _ in headers]


@pytest.mark.parametrize(
    "request_line,version",
    [(b"GET / HTTP/1.0", 10), (b"GET / HTTP/1.1", 11), (b"GET / HTTP/1.5", 15),
     (b"PROPFIND http://h.example/x?y HTTP/1.1", 11), (b"X_CUSTOM /%C3%A9 HTTP/1.1", 11)],
)
def test_read_request_line(lua_edge, request_line, version):
    _, view_port, _ = lua_edge
    status, body = send_raw(view_port, request_line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 200, body
    both = json.loads(body.decode("latin-1"))
    lua, rust = both["lua"], both["rust"]
    same_view(lua, rust)
    assert lua["version"] == version
    assert lua["client"] == "127.0.0.1"


def test_read_request_over_http2_has_the_headers_but_not_their_order(lua_edge_h2):
    # lua-nginx-module has no raw header for HTTP/2: read_request falls back to
    # ngx.req.get_headers(), a hash table. Same headers, order not kept (so
    # header_order and order_inversions may differ from the Rust engine's).
    _, view_port, _ = lua_edge_h2
    sent = [("X-B", "2"), ("X-A", "1"), ("X-C", "3"), ("Cookie", "a=1"), ("Cookie", "b=2")]
    args = ["curl", "-s", "--http2-prior-knowledge"]
    for name, value in sent:
        args += ["-H", f"{name}: {value}"]
    out = subprocess.run(args + [f"http://127.0.0.1:{view_port}/h2?x=1"], capture_output=True,
                         timeout=30, check=True).stdout
    both = json.loads(out.decode("latin-1"))
    lua, rust = both["lua"], both["rust"]
    assert lua["version"] == rust["version"] == 20
    lua_headers = sorted((n.lower(), v) for n, v in lua.pop("headers"))
    rust_headers = sorted((n.lower(), v) for n, v in rust.pop("headers"))
    assert lua == rust
    assert lua_headers == rust_headers
    assert ("x-a", "1") in lua_headers


STRIP_CASES = [
    [],
    ["X-Internal-User-Id: 42", "Accept: */*"],
    ["x-internal-user-id: 1", "X-INTERNAL-USER-ID: 2", "X_Internal_User_Id: 3", "Accept: */*"],
    ["X-Internal-Anything: 1", "x-edge-route: eu", "X-EDGE-: bare", "X_Edge_Under: 1",
     "X-Edge-Very-Long-" + "A" * 300 + ": 1", "X-Edgy: kept", "X-Internal: kept"],
    ["x-auth-subject: a", "X-Debug-Token: 1", "x-debug-token: 2", "X-Tenant: t", "X-Tenant-Id: kept"],
    ["X-Debug_Token: mixed", "x_tenant: under", "User-Agent: curl/8", "Cookie: a=1", "cookie: b=2"],
    [f"X-Edge-{i}: {i}" for i in range(120)] + ["Accept: */*"],
]


def received(origin):
    return [(n.lower(), v) for n, v in origin.last_headers() if n.lower() not in ("host", "connection")]


@pytest.mark.parametrize("lines", STRIP_CASES, ids=[f"case{i}" for i in range(len(STRIP_CASES))])
def test_lua_strip_equals_rust_strip(edge, lua_edge, origin, lines):
    rust_port, _ = edge
    lua_port, _, _ = lua_edge
    status, rust_headers, _ = raw_request(rust_port, lines)
    assert status == 200
    rust_seen = received(origin)
    status, lua_headers, _ = raw_request(lua_port, lines)
    assert status == 200
    lua_seen = received(origin)
    assert lua_seen == rust_seen
    assert lua_headers["x-edgeguard-removed"] == rust_headers["x-edgeguard-removed"]
    for name, _ in lua_seen:
        folded = name.replace("_", "-")
        assert not folded.startswith(("x-internal-", "x-edge-")), name
        assert folded not in ("x-internal-user-id", "x-auth-subject", "x-debug-token", "x-tenant"), name

