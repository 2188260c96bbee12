"""Reloads (HUP) of a running nginx: new files take effect; a broken list or
model is refused with its file named, and the version in force keeps serving.

`make stress` does the same 50 times under load; this is the quick check that
runs with every `make test`.
"""

import os
import re
import shutil
import signal
import time

import pytest

from conftest import CHROME, ROOT, TEST_LIST, Nginx, edge_conf, free_port, replace, send_exact, wait_until

ACCESS = 'require("resty.edgeguard").access{ mode = "log" }'


class Edge:
    """nginx scoring with `models` (names of files under conf/; bot.json may be
    given as `bot` bytes) and a copy of the test list plus `x-reload-*`."""

    def __init__(self, origin, tmp_path, models=("bot", "spoof"), bot=None):
        self.origin = origin
        self.dir = tmp_path / "conf"
        self.dir.mkdir()
        os.chmod(tmp_path, 0o755)
        self.list = TEST_LIST.read_bytes() + b"\nx-reload-*\n"
        replace(self.dir / "internal-headers.txt", self.list)
        for name in ("bot", "spoof"):
            shutil.copy(ROOT / "models" / f"{name}.json", self.dir / f"{name}.json")
        if bot is not None:
            replace(self.dir / "bot.json", bot)
        self.port = free_port()
        paths = ", ".join(f'{name} = "{self.dir}/{name}.json"' for name in models)
        self.conf = lambda paths: edge_conf(self.port, origin.port, self.dir / "internal-headers.txt",
                                            configure=f"models = {{ {paths} }}," if paths else "", access=ACCESS,
                                            location_extra="add_header X-Edge-Pid $pid always;")
        self.nginx = Nginx(edge_conf(self.port, origin.port, self.dir / "internal-headers.txt",
                                     configure=f"models = {{ {paths} }}," if paths else "", access=ACCESS,
                                     location_extra="add_header X-Edge-Pid $pid always;"))
        self.nginx.start(self.port)

    def stop(self):
        self.nginx.stop()
        self.nginx.cleanup()

    def probe(self):
        """(worker pid, X-Bot-Score at the origin, header names at the origin)"""
        status, headers, _ = send_exact(self.port, "GET", "/", CHROME + [
            ("X-Internal-User-Id", "42"), ("X-Reload-A", "1"), ("X-Other", "1")])
        assert status == 200
        seen = dict((k.lower(), v) for k, v in self.origin.last_headers())
        return int(headers["x-edge-pid"]), seen.get("x-bot-score"), set(seen)

    def hup(self):
        offset = len(self.nginx.error_log)
        os.kill(self.nginx.proc.pid, signal.SIGHUP)
        return offset

    def log_since(self, offset):
        return self.nginx.error_log[offset:]


@pytest.fixture
def edge(origin, tmp_path):
    e = Edge(origin, tmp_path)
    yield e
    e.stop()


def refused(edge, offset, pattern):
    return wait_until(f"{pattern} refused in error.log", lambda: next(
        (line for line in edge.log_since(offset).splitlines()
         if "init_by_lua" in line and re.search(pattern, line)), None))


def test_new_files_take_effect_and_broken_ones_are_refused(edge):
    pid, score, seen = edge.probe()
    assert score and "x-internal-user-id" not in seen and "x-reload-a" not in seen and "x-other" in seen

    # A truncated model: the reload is refused, naming the file and where it
    # broke; the same worker keeps scoring with the model it loaded.
    good = (edge.dir / "bot.json").read_bytes()
    replace(edge.dir / "bot.json", good[: len(good) // 2])
    line = refused(edge, edge.hup(), r"bot\.json: .*EOF while parsing")
    assert "so this configuration is refused (on a reload, nginx keeps the running workers" in line
    time.sleep(0.5)
    assert edge.probe()[:2] == (pid, score)

    # A malformed list: refused with file and line; nothing changes.
    replace(edge.dir / "internal-headers.txt", edge.list + b"x bad name\n")
    n = edge.list.count(b"\n") + 1
    refused(edge, edge.hup(), re.escape(f"internal-headers.txt:{n}"))
    time.sleep(0.5)
    assert edge.probe() == (pid, score, seen)

    # Good files again, different ones: a new worker with a new model (the
    # spoof model's file as `bot`) and a list that no longer strips x-other.
    replace(edge.dir / "bot.json", (edge.dir / "spoof.json").read_bytes())
    replace(edge.dir / "internal-headers.txt", edge.list + b"x-other\n")
    offset = edge.hup()
    new_pid, new_score, new_seen = wait_until("a new worker", lambda: (p := edge.probe())[0] != pid and p)
    assert new_score and new_score.split(";")[0] != score.split(";")[0]
    assert new_score.split(";")[1] == score.split(";")[1], "the spoof model did not change"
    assert "x-other" not in new_seen and "x-internal-user-id" not in new_seen
    assert "init_by_lua" not in edge.log_since(offset)


def test_without_models_a_reload_to_a_broken_model_is_refused_too(origin, tmp_path):
    """One policy (issue 41): a configuration serving without models that is
    reloaded with a broken one is refused as well (it used to fail open
    and serve unscored); once the model is fixed, the reload scores."""
    good = (ROOT / "models" / "bot.json").read_bytes()
    e = Edge(origin, tmp_path, models=(), bot=good[:1000])
    try:
        pid, score, _ = e.probe()
        assert score is None
        (e.nginx.prefix / "nginx.conf").write_text(e.conf(f'bot = "{e.dir}/bot.json"'))
        line = refused(e, e.hup(), r"bot\.json: .*EOF while parsing")
        assert "so this configuration is refused" in line
        time.sleep(0.5)
        assert e.probe()[:2] == (pid, None)

        replace(e.dir / "bot.json", good)
        e.hup()
        # An old worker may still answer until it sees the master's QUIT.
        _, score, _ = wait_until("a new worker", lambda: (p := e.probe())[0] != pid and p)
        assert score.startswith("bot=")
    finally:
        e.stop()
