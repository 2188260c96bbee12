"""Per-location overrides through real nginx: each access{} table is resolved
by the Rust library once per location (edgeguard_config_new_for_location) and
decides that location's requests; a table hoisted out of the request and one
built by a table constructor on every request behave the same; a bad table
fails that location's requests (500, the option named in the error log) and
leaves the others serving."""

import pytest

from conftest import LIB, ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, nginx_preamble
from test_scoring import parse_scores, sample, send_row, sigmoid

MODELS = f'models = {{ bot = "{ROOT}/models/bot.json", spoof = "{ROOT}/models/spoof.json" }}'

LOCATIONS = {
    # configure{}'s options: block with 403.
    "/base/": "access()",
    "/log/": 'access{ mode = "log", log_level = ngx.WARN }',
    # Hoisted: one table for every request (found by the table itself).
    "/hoisted/": 'access(require("edgeguard_test_opts"))',
    "/lenient/": "access{ thresholds = { bot = 1, spoof = 1 } }",
    "/own-header/": 'access{ score_header = "X-Other-Score", status = 451 }',
    "/bad-mode/": 'access{ mode = "deny" }',
    "/bad-option/": 'access{ allow = { "127.0.0.0/8" } }',
}


def conf(port, origin_port):
    locations = "".join(f"""
        location {path} {{
            rewrite_by_lua_block {{ require("resty.edgeguard").{call} }}
            proxy_pass http://127.0.0.1:{origin_port};
        }}""" for path, call in LOCATIONS.items())
    return nginx_preamble() + f"""
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}", lib_path = "{LIB}", mode = "block", {MODELS},
        }})
        package.loaded.edgeguard_test_opts = {{ mode = "block", status = 429 }}
    }}
    server {{
        listen 127.0.0.1:{port};
        {locations}
    }}
}}
"""


@pytest.fixture(scope="module")
def edge(origin):
    port = free_port()
    nginx = Nginx(conf(port, origin.port))
    nginx.start(port)
    yield port, nginx
    nginx.stop()
    nginx.cleanup()


def bots():
    rows = [r for r in sample("curl") if sigmoid(r["expected_raw"]["bot"]) > 0.95]
    assert rows
    return rows[:3]


def send(port, prefix, row):
    return send_row(port, {**row, "uri": prefix + row["uri"].lstrip("/")})


def last_header(origin, name):
    values = [v for n, v in origin.last_headers() if n.lower() == name]
    return values[-1] if values else None


def test_each_location_decides_by_its_own_options(edge, origin):
    port, nginx = edge
    # Many requests per location: a table constructor makes a new table each
    # time; every one must find the location resolved on the first.
    for _ in range(20):
        for row in bots():
            assert send(port, "/base/", row)[0] == 403
            assert send(port, "/hoisted/", row)[0] == 429
            assert send(port, "/own-header/", row)[0] == 451
            assert send(port, "/log/", row)[0] == 200
            assert send(port, "/lenient/", row)[0] == 200
    scores = parse_scores(last_header(origin, "x-bot-score"))
    assert scores["bot"] > 0.95, "lenient passes a request it scored as a bot"
    log_lines = [line for line in nginx.error_log.splitlines() if "edgeguard action=log" in line]
    assert len(log_lines) == 20 * len(bots())
    assert all("[warn]" in line for line in log_lines), "the location's log_level"
    block_lines = [line for line in nginx.error_log.splitlines() if "edgeguard action=block" in line]
    assert block_lines and all("[info]" in line for line in block_lines), "configure()'s default level"


def test_a_location_with_its_own_score_header_sends_that_one(edge, origin):
    port, _ = edge
    row = sample("browser", "chrome")[0]
    forged = {**row, "headers": row["headers"] + [["X-Bot-Score", "bot=0.0"], ["X-Other-Score", "x"]]}
    assert send(port, "/own-header/", forged)[0] == 200
    assert last_header(origin, "x-bot-score") is None
    assert parse_scores(last_header(origin, "x-other-score"))["bot"] < 0.5


def test_a_bad_table_fails_its_location_naming_the_option_and_others_keep_serving(edge, origin):
    port, nginx = edge
    row = sample("browser", "chrome")[0]
    for path, want in [
        ("/bad-mode/", 'edgeguard.access: mode: must be "block", "log" or "off", got "deny"'),
        ("/bad-option/", "edgeguard.access: allow: unknown option 'allow' per location (give it to configure{})"),
    ]:
        for _ in range(2):
            assert send(port, path, row)[0] == 500
        errors = [line for line in bad_log_lines(nginx.error_log) if want in line]
        assert len(errors) == 2, nginx.error_log[-2000:]
    assert send(port, "/base/", row)[0] == 200
    assert send(port, "/lenient/", row)[0] == 200
    others = [line for line in bad_log_lines(nginx.error_log)
              if "edgeguard.access: mode:" not in line and "edgeguard.access: allow:" not in line]
    assert not others, others
