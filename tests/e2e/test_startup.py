"""What nginx does with the list at startup, and the shipped configuration."""

import json
import os
import re
import shutil
import subprocess

from conftest import CHROME, LIB, NGINX, ROOT, TEST_LIST, Nginx, edge_conf, free_port, raw_request, send_exact


def start_with_list(origin, list_path):
    port = free_port()
    nginx = Nginx(edge_conf(port, origin.port, list_path))
    started = nginx.start(port, expect_failure=True)
    return nginx, started


def test_missing_list_keeps_nginx_from_serving(origin, tmp_path):
    missing = tmp_path / "no-such-list.txt"
    nginx, started = start_with_list(origin, missing)
    try:
        assert not started, "nginx served without its internal header list"
        code, console = nginx.exit_output()
        assert code != 0
        text = console + nginx.error_log
        assert "init_by_lua" in text
        assert str(missing) in text
    finally:
        nginx.stop()
        nginx.cleanup()


def test_bad_list_is_refused_with_file_and_line(origin, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("x-internal-user-id\n# fine so far\nx internal\n")
    nginx, started = start_with_list(origin, bad)
    try:
        assert not started
        code, console = nginx.exit_output()
        assert code != 0
        assert re.search(re.escape(str(bad)) + r":3\b", console + nginx.error_log)
    finally:
        nginx.stop()
        nginx.cleanup()


def shipped(tmp_path, mode=None, name="nginx.conf", ports=(8080, 8081), edit=None):
    """nginx-conf/`name` as shipped, moved from its `ports` (edge, origin) to
    free ports in a scratch prefix; `mode` replaces its bot-scoring mode;
    `edit(conf)`, if given, returns the text to run instead. Returns (nginx,
    edge port)."""
    edge_port, origin_port = free_port(), free_port()
    conf = (ROOT / "nginx-conf" / name).read_text()
    assert f"127.0.0.1:{ports[0]}" in conf and f"127.0.0.1:{ports[1]}" in conf
    conf = conf.replace(f"127.0.0.1:{ports[0]}", f"127.0.0.1:{edge_port}").replace(
        f"127.0.0.1:{ports[1]}", f"127.0.0.1:{origin_port}"
    )
    if mode:
        shipped_mode = 'mode = "challenge"' if name == "nginx.conf" else 'mode = "block"'
        assert shipped_mode in conf
        conf = conf.replace(shipped_mode, f'mode = "{mode}"')
    if edit:
        conf = edit(conf)
    prefix = tmp_path / f"prefix-{edge_port}"
    (prefix / "target" / "release").mkdir(parents=True)
    (prefix / ".run").mkdir()
    for shared in ("lua", "nginx-conf", "models"):
        os.symlink(ROOT / shared, prefix / shared)
    os.symlink(LIB, prefix / "target" / "release" / "libedgeguard.so")
    # Includes resolve against the configuration's directory, nginx-conf/.
    os.symlink(ROOT / "nginx-conf" / "log-format.conf", prefix / "log-format.conf")
    os.chmod(tmp_path, 0o755)
    nginx = Nginx(conf, prefix=prefix)
    nginx.start(edge_port)
    return nginx, edge_port


def stop_and_check_log(nginx, log="error.log"):
    nginx.stop()
    path = nginx.prefix / ".run" / log
    log = path.read_text() if path.exists() else ""
    nginx.cleanup()
    assert not [line for line in log.splitlines() if re.search(r"\[(error|crit|alert|emerg)\]", line)], log


def test_shipped_configuration_strips_every_listed_header(tmp_path):
    nginx, port = shipped(tmp_path, mode="log")
    try:
        text = (ROOT / "nginx-conf" / "internal-headers.txt").read_text()
        internal = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        exact = [n for n in internal if n and not n.endswith("*")]
        prefixes = [n[:-1] for n in internal if n.endswith("*")]
        assert len(exact) + len(prefixes) >= 100
        lines = [f"{n}: secret" for n in exact] + [f"{p}probe: secret" for p in prefixes]
        status, _, body = raw_request(port, ["Accept: text/plain", *lines, "X-Visible: yes"])
        assert status == 200
        echoed = body.decode("latin-1").lower()
        assert "x-visible: yes" in echoed
        assert "x-bot-score: bot=" in echoed
        assert "secret" not in echoed, "an internal header reached the demo origin:\n" + echoed
    finally:
        stop_and_check_log(nginx)


def test_shipped_configuration_blocks_curl_and_passes_a_browser(tmp_path):
    nginx, port = shipped(tmp_path)
    try:
        status, _, _ = raw_request(port, ["User-Agent: curl/8.5.0", "Accept: */*"])
        assert status == 403
        status, _, body = send_exact(port, "GET", "/api/v1/reviews?product=4157", CHROME)
        assert status == 200
        assert "X-Bot-Score: bot=" in body.decode("latin-1")
    finally:
        stop_and_check_log(nginx)


def test_shipped_record_configuration_replays_to_the_same_decisions(tmp_path):
    """nginx-conf/record.conf loads nginx-conf/record.json, the file replay
    reads: what it records replays to the scores and actions nginx logged."""
    nginx, port = shipped(tmp_path, name="record.conf", ports=(8090, 8091))
    try:
        sent = [
            send_exact(port, "GET", "/api/v1/reviews?product=4157", CHROME + [("X-Internal-User-Id", "7")]),
            raw_request(port, ["User-Agent: curl/8.5.0", "Accept: */*", "X-Debug-Trace: 1"]),
            raw_request(port, ["User-Agent: python-requests/2.31.0"], target="/search?q=lamp"),
        ]
        assert [status for status, _, _ in sent] == [200, 200, 200], sent
        nginx.stop()
        record = tmp_path / "record.jsonl"
        shutil.copy(nginx.prefix / ".run" / "record.jsonl", record)
    finally:
        stop_and_check_log(nginx, "record-error.log")
    lines = record.read_text().splitlines()
    # By URI: each worker writes its line after answering, so two workers'
    # lines can land in either order.
    actions = {json.loads(line)["uri"]: json.loads(line)["edgeguard_action"] for line in lines}
    assert actions == {"/api/v1/reviews?product=4157": "pass", "/": "log", "/search?q=lamp": "log"}, lines
    done = subprocess.run(
        [ROOT / "target" / "release" / "edgeguard", "replay", "--config", ROOT / "nginx-conf" / "record.json",
         "--threads", "1", "--no-progress", record],
        capture_output=True, timeout=60,
    )
    report = done.stderr.decode(errors="replace")
    assert done.returncode == 0, report
    assert "3 lines with $edgeguard_action, 3 agree (100.00%)" in report, report
    assert "live scores compared: 6, differing beyond the logged precision: 0" in report, report


# One policy for every file configure() reads (issue 41): a model that does
# not load refuses the start like a list, naming the file and the field, and
# `nginx -t` (which runs init_by_lua) reports it.


def broken_model(tmp_path):
    """bot.json with one field of the wrong type: (path, the field's name)."""
    model = json.loads((ROOT / "models" / "bot.json").read_text())
    model["oblivious_trees"][3]["leaf_values"] = "x"
    path = tmp_path / "bot.json"
    path.write_text(json.dumps(model))
    return path, "oblivious_trees[3].leaf_values"


def nginx_t(conf):
    """`nginx -t` on `conf` in a scratch prefix: (exit code, its output)."""
    nginx = Nginx(conf)
    try:
        done = subprocess.run([NGINX, "-t", "-p", f"{nginx.prefix}/", "-c", "nginx.conf"],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout + done.stderr
    finally:
        nginx.cleanup()


def test_broken_model_refuses_the_start_with_file_and_field(origin, tmp_path):
    path, field = broken_model(tmp_path)
    port = free_port()
    for fail_closed in ("", "fail_closed = true,"):
        nginx = Nginx(edge_conf(port, origin.port, TEST_LIST, configure=f'models = {{ bot = "{path}" }}, {fail_closed}'))
        try:
            assert not nginx.start(port, expect_failure=True), "nginx served with a model that does not load"
            code, console = nginx.exit_output()
            assert code != 0
            text = console + nginx.error_log
            assert "init_by_lua" in text and "models not loaded, so this configuration is refused" in text
            assert f"{path}: {field}: invalid type" in text
        finally:
            nginx.stop()
            nginx.cleanup()


def test_nginx_t_runs_no_lua_so_the_check_is_edgeguard_replay(origin, tmp_path):
    """lua-nginx-module 0.10.23 returns from its postconfiguration before it
    makes the Lua VM when nginx runs with -t (ngx_http_lua_init: `if
    (ngx_process == NGX_PROCESS_SIGNALLER || ngx_test_config) return
    NGX_OK`), so `nginx -t` cannot see a broken model or list: it says "test
    is successful". The check before a reload is `edgeguard replay --config
    FILE /dev/null`, which loads the same files through the same code
    (docs/troubleshooting.md). If a later lua module runs init_by_lua under
    -t, this test fails and the docs can say `nginx -t` instead."""
    path, field = broken_model(tmp_path)
    code, out = nginx_t(edge_conf(free_port(), origin.port, TEST_LIST, configure=f'models = {{ bot = "{path}" }},'))
    assert code == 0 and "test is successful" in out, out
    bad_list = tmp_path / "bad.txt"
    bad_list.write_text("x-internal-user-id\nx internal\n")
    code, out = nginx_t(edge_conf(free_port(), origin.port, bad_list))
    assert code == 0 and "test is successful" in out, out

    edgeguard = ROOT / "target" / "release" / "edgeguard"
    config = tmp_path / "edgeguard.json"

    def check(cfg):
        config.write_text(json.dumps(cfg))
        done = subprocess.run([edgeguard, "replay", "--config", config, "/dev/null"],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stderr

    code, err = check({"internal_headers": str(TEST_LIST), "models": {"bot": str(ROOT / "models" / "bot.json")}})
    assert code == 0, err
    code, err = check({"internal_headers": str(TEST_LIST), "models": {"bot": str(path)}})
    assert code != 0 and f"{path}: {field}: invalid type" in err, err
    code, err = check({"internal_headers": str(bad_list)})
    assert code != 0 and re.search(re.escape(str(bad_list)) + r":2\b", err), err
