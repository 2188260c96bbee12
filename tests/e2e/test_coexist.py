"""edgeguard beside other Lua modules and other handlers (issue 41).

nginx takes one init_by_lua* and one init_worker_by_lua* per http{}: a site
that already runs a Lua module calls edgeguard's configure{} and
init_worker() from its own blocks (nginx-conf/alongside.conf,
packaging/nginx/edgeguard-no-init.conf.in). The other module here is a real
one, Debian's lua-resty-lrucache. A location's own rewrite_by_lua* replaces
the inherited handler: it keeps edgeguard by calling access() first. And
`vars = true` without a `set` for a variable skips it instead of answering
500.
"""

import json
import re
import subprocess

from conftest import (CHROME, LIB, NGINX, ROOT, TEST_LIST, Nginx, bad_log_lines, edge_conf, free_port,
                      nginx_preamble, raw_request, send_exact)
from test_startup import shipped, stop_and_check_log

CURL = ["User-Agent: curl/8.5.0", "Accept: */*"]
SECRET = ("X-Internal-User-Id", "42")


def test_alongside_demo_runs_both_modules_from_one_init_block(tmp_path):
    nginx, port = shipped(tmp_path, name="alongside.conf")
    try:
        # /site: its own rewrite handler calls edgeguard first, then the
        # other module's code runs with what its init blocks made.
        status, _, body = send_exact(port, "GET", "/site", CHROME + [SECRET])
        assert status == 200
        head = body.decode("latin-1")
        assert re.search(r"X-Site: hello from lua-resty-lrucache; worker \d+\r\n", head), head
        assert "X-Bot-Score: bot=" in head
        assert "x-internal-user-id" not in head.lower()
        # A bot is blocked there as on every other location.
        assert raw_request(port, CURL, target="/site")[0] == 403
        assert raw_request(port, CURL)[0] == 403
        status, _, body = send_exact(port, "GET", "/", CHROME + [SECRET])
        assert status == 200 and "X-Site" not in body.decode("latin-1")
    finally:
        stop_and_check_log(nginx)


def site_init(config, edgeguard_first=False):
    """The site's own init blocks: lua-resty-lrucache and edgeguard."""
    site = """
        local cache = assert(require("resty.lrucache").new(10))
        cache:set("greeting", "hello from lua-resty-lrucache")
        package.loaded["site.cache"] = cache"""
    eg = f"""
        assert(require("resty.edgeguard").configure{{
            config = "{config}", metrics_dict = "edgeguard_metrics", lib_path = "{LIB}",
        }})"""
    body = eg + site if edgeguard_first else site + eg
    return f"""
    init_by_lua_block {{{body}
    }}
    init_worker_by_lua_block {{
        require("resty.edgeguard").init_worker()
        require("site.cache"):set("worker", ngx.worker.pid())
    }}"""


def packaged_conf(tmp_path, port, origin_port, snippet="edgeguard-no-init.conf.in", edgeguard_first=False):
    config = tmp_path / "edgeguard.json"
    config.write_text(json.dumps({
        "internal_headers": str(TEST_LIST), "models": {"bot": str(ROOT / "models" / "bot.json")}, "mode": "block",
    }))
    text = (ROOT / "packaging" / "nginx" / snippet).read_text().replace("@CONFIG@", str(config))
    included = tmp_path / snippet.removesuffix(".in")
    included.write_text(text)
    tmp_path.chmod(0o755)
    return nginx_preamble() + site_init(config, edgeguard_first) + f"""
    include {included};
    server {{
        listen 127.0.0.1:{port};
        underscores_in_headers on;
        location / {{
            proxy_pass http://127.0.0.1:{origin_port};
        }}
        # Its own access handler: the inherited rewrite handler still runs.
        location /own-access {{
            access_by_lua_block {{ ngx.req.set_header("X-Site", require("site.cache"):get("greeting")) }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}
        # Its own rewrite handler, calling edgeguard first: kept.
        location /own-rewrite {{
            rewrite_by_lua_block {{
                require("resty.edgeguard").access()
                ngx.req.set_header("X-Site", require("site.cache"):get("worker"))
            }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}
        # Its own rewrite handler without edgeguard: nginx runs only this one.
        location /replaced {{
            rewrite_by_lua_block {{ ngx.req.set_header("X-Site", "replaced") }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}
    }}
}}
"""


def test_packaged_no_init_snippet_with_the_sites_own_init_blocks(origin, tmp_path):
    for edgeguard_first in (False, True):
        port = free_port()
        nginx = Nginx(packaged_conf(tmp_path, port, origin.port, edgeguard_first=edgeguard_first))
        try:
            nginx.start(port)
            for target in ("/", "/own-access", "/own-rewrite"):
                assert raw_request(port, CURL, target=target)[0] == 403, target
                status, _, _ = send_exact(port, "GET", target, CHROME + [SECRET])
                assert status == 200, target
                seen = {k.lower(): v for k, v in origin.last_headers()}
                assert "x-internal-user-id" not in seen and seen["x-bot-score"].startswith("bot="), target
            assert seen["x-site"].isdigit(), "the other module's init_worker ran in this worker"
            send_exact(port, "GET", "/own-access", CHROME)
            assert dict((k.lower(), v) for k, v in origin.last_headers())["x-site"] == "hello from lua-resty-lrucache"

            # What nginx does with a location's own rewrite handler that does
            # not call edgeguard: the inherited one does not run (docs/placement.md).
            assert raw_request(port, CURL, target="/replaced")[0] == 200
            seen = {k.lower(): v for k, v in origin.last_headers()}
            assert seen["x-site"] == "replaced" and "x-bot-score" not in seen
        finally:
            nginx.stop()
            bad = bad_log_lines(nginx.error_log)
            nginx.cleanup()
        assert not bad, bad


def test_the_full_snippet_beside_a_sites_init_block_is_what_nginx_refuses(origin, tmp_path):
    """Why the no-init variant exists: nginx refuses a second init block."""
    conf = packaged_conf(tmp_path, free_port(), origin.port, snippet="edgeguard.conf.in")
    nginx = Nginx(conf)
    try:
        done = subprocess.run([NGINX, "-t", "-p", f"{nginx.prefix}/", "-c", "nginx.conf"],
                              capture_output=True, text=True, timeout=60)
    finally:
        nginx.cleanup()
    assert done.returncode != 0
    # lua-nginx-module's words: "[emerg] ... is duplicate in FILE:LINE", the
    # line that closes the snippet's own init_by_lua_block.
    m = re.search(r"\[emerg\] .*: is duplicate in (\S+)/edgeguard\.conf:(\d+)", done.stderr)
    assert m, done.stderr
    lines = (tmp_path / "edgeguard.conf").read_text().splitlines()[: int(m.group(2))]
    directives = [line for line in lines if line[:1].isalpha()]
    assert lines[-1] == "}" and directives[-1] == "init_by_lua_block {", lines


def test_vars_nginx_does_not_know_are_skipped_and_reported_once_per_worker(origin):
    """`vars = true` with only $edgeguard_action declared (in another server:
    one declaration anywhere is enough): no 500, the declared one is set, each
    unknown one is named once per worker."""
    port = free_port()
    other = f"""
    server {{
        listen 127.0.0.1:{free_port()};
        set $edgeguard_action "";
    }}"""
    nginx = Nginx(edge_conf(port, origin.port, TEST_LIST, workers=2, extra_servers=other,
                            configure=f'models = {{ bot = "{ROOT}/models/bot.json" }}, mode = "log", vars = true,',
                            access='require("resty.edgeguard").access()',
                            location_extra="add_header X-Action $edgeguard_action always;"))
    try:
        nginx.start(port)
        for _ in range(20):
            status, headers, _ = raw_request(port, CURL)
            assert status == 200
            assert headers["x-action"] == "log"
        log = nginx.error_log
    finally:
        nginx.stop()
        nginx.cleanup()
    reported = re.findall(r"\[error\] (\d+)#\d+: .*edgeguard: vars: \$(\w+) is not set \(", log)
    assert reported, log
    names = {name for _, name in reported}
    assert "edgeguard_bot" in names and "edgeguard_action" not in names
    assert len(reported) == len(set(reported)), "reported more than once in a worker"
    assert "not found for writing" in log, "nginx's own reason is quoted"
    others = [line for line in bad_log_lines(log) if "edgeguard: vars: $" not in line]
    assert not others, others


def test_server_rewrite_placement_is_not_replaced_by_a_locations_rewrite_handler(origin):
    """server_rewrite_by_lua* runs before nginx picks the location, so a
    location's own rewrite_by_lua* (that does not call edgeguard) does not
    replace it: the placement for servers whose locations bring their own
    rewrite handlers and need no per-location options."""
    port = free_port()
    conf = nginx_preamble() + f"""
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}", lib_path = "{LIB}",
            models = {{ bot = "{ROOT}/models/bot.json" }}, mode = "block",
        }})
    }}
    server {{
        listen 127.0.0.1:{port};
        server_rewrite_by_lua_block {{ require("resty.edgeguard").access() }}
        location / {{
            rewrite_by_lua_block {{ ngx.req.set_header("X-Site", "own rewrite") }}
            proxy_pass http://127.0.0.1:{origin.port};
        }}
    }}
}}
"""
    nginx = Nginx(conf)
    try:
        nginx.start(port)
        assert raw_request(port, CURL)[0] == 403
        status, _, _ = send_exact(port, "GET", "/", CHROME + [SECRET])
        assert status == 200
        seen = {k.lower(): v for k, v in origin.last_headers()}
        assert seen["x-site"] == "own rewrite" and seen["x-bot-score"].startswith("bot=")
        assert "x-internal-user-id" not in seen
    finally:
        nginx.stop()
        bad = bad_log_lines(nginx.error_log)
        nginx.cleanup()
    assert not bad, bad
