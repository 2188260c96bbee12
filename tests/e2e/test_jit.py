"""The Lua hot path compiles in LuaJIT's JIT, inside nginx.

One request runs edgeguard.access{ mode = "log" }, access(),
clear_internal_headers() and score() thousands of times in a loop with
jit.v writing every trace event to a file; a trace abort (NYI, or any other
reason) located in edgeguard's Lua files fails the test. The loop re-adds the
internal headers each time, so the strip path runs in every iteration, and
runs once for a browser-like request (passes) and once for a bot-like one
(flagged, logged).
"""

import glob
import os
import pathlib
import re
import shutil
import tempfile

import pytest

from conftest import CHROME, METRICS_DICT, ROOT, free_port, running_edge, send_exact

MODELS = f'models = {{ bot = "{ROOT}/models/bot.json", spoof = "{ROOT}/models/spoof.json" }},'
ITERATIONS = 5000
# jit.v names a module by its file's base name: edgeguard.lua, and the
# modules of resty/edgeguard/ the request path runs (the effects are applied
# in gate.lua, the location cache is locations.lua).
EDGEGUARD_LUA = re.compile(r"resty/edgeguard[\w/]*\.lua|\b(edgeguard|gate|locations|request|tls|metrics|driver"
                           r"|shadow|engine|features|headers|catboost)\.lua")
# Abort reasons that are LuaJIT choosing where a trace starts and ends, not
# code it cannot compile (lj_traceerr.h: LOOPEX, LINNER, LUNROLL).
TRACE_SELECTION = re.compile(r"leaving loop in root trace|inner loop in root trace|loop unroll limit reached")
# How many of those the steady half may see across its 4 x ITERATIONS calls.
# Healthy runs have shown 0 to 22 (LuaJIT randomises its retry penalties; a
# bound of 20 failed now and then on a loaded machine). It cannot be much
# larger: LuaJIT blacklists a start point after about a dozen aborts there
# and then stops reporting it, so a hot path that never compiles shows up as
# a few dozen aborts, not thousands.
STEADY_RETRIES = 32

CHROME_INTERNAL = CHROME + [("X-Internal-User-Id", "42")]
CURL = [("Host", "edge.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*"), ("X-Internal-User-Id", "7")]


def jit_modules_dir():
    """Where luajit2 installs jit/v.lua (libluajit2-5.1-common)."""
    found = sorted(glob.glob("/usr/share/luajit*/jit/v.lua"))
    if not found:
        pytest.fail("jit/v.lua not found under /usr/share/luajit*/ (package libluajit2-5.1-common)")
    return found[-1].rsplit("/jit/", 1)[0]


def jit_server(port, logs):
    # The loops run in a content handler so that one request drives thousands
    # of calls; the request's own header list is what the calls read. Each
    # entry point has its own loop, so each gets its own traces.
    return f"""
    server {{
        listen 127.0.0.1:{port};
        location /jit {{
            content_by_lua_block {{
                package.path = "{jit_modules_dir()}/?.lua;" .. package.path
                local edgeguard = require "resty.edgeguard"
                local v = require "jit.v"
                local set_header = ngx.req.set_header
                local kind = ngx.var.arg_kind
                local actions, removed, last = {{}}, 0, nil
                local function run(n)
                    for _ = 1, n do
                        set_header("X-Internal-User-Id", "42")
                        local action = edgeguard.access{{ mode = "log", log_level = ngx.DEBUG }}
                        actions[action] = (actions[action] or 0) + 1
                    end
                    for _ = 1, n do
                        set_header("X-Internal-User-Id", "42")
                        local action = edgeguard.access()
                        actions[action] = (actions[action] or 0) + 1
                    end
                    for _ = 1, n do
                        set_header("X-Internal-User-Id", "42")
                        removed = removed + assert(edgeguard.clear_internal_headers())
                    end
                    for _ = 1, n do
                        last = assert(edgeguard.score()).bot
                    end
                end
                for _, phase in ipairs{{ "warmup", "steady" }} do
                    v.on("{logs}/jit-" .. kind .. "-" .. phase .. ".txt")
                    run({ITERATIONS})
                    v.off()
                end
                ngx.say("pass=", actions.pass or 0, " log=", actions.log or 0,
                        " removed=", removed, " bot=", last)
            }}
        }}
    }}
"""


# The challenge and the verified bots configured: the same loops go through
# the cookie check, the bot lookup and their part of act() (mode "log", so
# nothing is challenged and the loops keep running).
SCREENED = (f'challenge_secret = "{ROOT}/tests/fixtures/challenge/secret", '
            f'verified_bots = "{ROOT}/tests/fixtures/verified/bots.json",')


# With metrics: edgeguard_location_run counts the request inside Rust, so the
# loops' traces hold no counting code of the shim's.
METRICS = 'metrics_dict = "edgeguard_metrics",'


@pytest.fixture(scope="module", params=["plain", "screened", "metrics"])
def jit_edge(origin, request):
    jit_port = free_port()
    # The workers write the trace logs as nginx's unprivileged user, which
    # cannot enter pytest's private tmp directories.
    logs = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-jit-"))
    logs.chmod(0o777)
    # mode = "log" in configure too, so that access() without options logs
    # rather than ending the request with a 403.
    extra = {"plain": "", "screened": SCREENED, "metrics": SCREENED + METRICS}[request.param]
    conf = MODELS + ' mode = "log", log_level = ngx.DEBUG,' + extra
    http_extra = METRICS_DICT if request.param == "metrics" else ""
    for port, nginx in running_edge(origin, configure=conf, extra_servers=jit_server(jit_port, logs),
                                    http_extra=http_extra):
        yield jit_port, logs
    if not os.environ.get("EDGEGUARD_KEEP_JIT"):
        shutil.rmtree(logs, ignore_errors=True)


def aborts_in_edgeguard(text):
    return [line for line in text.splitlines() if line.startswith("[TRACE ---") and EDGEGUARD_LUA.search(line)]


@pytest.mark.parametrize("kind,headers,action", [("browser", CHROME_INTERNAL, "pass"), ("bot", CURL, "log")])
def test_hot_path_compiles_without_trace_aborts(jit_edge, kind, headers, action):
    port, logs = jit_edge
    status, _, body = send_exact(port, "GET", f"/jit?kind={kind}", headers)
    assert status == 200, body
    fields = dict(part.split("=") for part in body.decode().split())
    # The loops really ran the paths they claim to check: two phases, two
    # access loops each; clear_internal_headers() removed one entry each time.
    assert int(fields[action]) == 4 * ITERATIONS, fields
    assert int(fields["removed"]) == 2 * ITERATIONS, fields
    assert 0.0 <= float(fields["bot"]) <= 1.0
    warmup = (logs / f"jit-{kind}-warmup.txt").read_text()
    steady = (logs / f"jit-{kind}-steady.txt").read_text()
    compiled = [line for line in warmup.splitlines() if re.match(r"\[TRACE\s+\d+ ", line)]
    assert any(EDGEGUARD_LUA.search(line) for line in compiled), "no trace in edgeguard's code:\n" + warmup
    # While traces are being picked, LuaJIT tries roots at short inner loops
    # (two models, a few headers to clear) and gives them up ("leaving loop
    # in root trace", "inner loop in root trace", "loop unroll limit"); those
    # are trace selection, not code the JIT cannot compile. LuaJIT randomises
    # the penalties that decide when it tries again, so such a retry can also
    # fall into the steady half (about one run in seven failed on them when
    # this test required none there). Any other abort reason (NYI, a C call
    # it cannot compile, too many snapshots or constants, an error while
    # recording, a side trace too long) is code the JIT gave up on: NYI
    # fails in either half, and once warm nothing but trace selection may
    # abort. (Warm-up may see "trace too long" for a side trace while the
    # root traces settle; the steady half shows whether it stayed.)
    nyi = [line for line in aborts_in_edgeguard(warmup) if "NYI" in line]
    assert not nyi, "NYI in edgeguard's Lua:\n" + "\n".join(nyi)
    bad = [line for line in aborts_in_edgeguard(steady) if not TRACE_SELECTION.search(line)]
    assert not bad, "trace aborts in edgeguard's Lua after warm-up:\n" + "\n".join(bad)
    # Once warm, the loops run on traces: the retries above stay rare, not one
    # per iteration (an interpreted hot path would abort over and over).
    retries = aborts_in_edgeguard(steady)
    assert len(retries) <= STEADY_RETRIES, (
        f"{len(retries)} trace-selection aborts in edgeguard's Lua after warm-up:\n" + "\n".join(retries)
    )
