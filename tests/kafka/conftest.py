"""A real Kafka-compatible broker (tansu) and `edgeguard replay` group members.

These tests are not part of `make test` (pytest there collects tests/e2e
only): they need the broker, built once into ~/.cache/edgeguard by
scripts/build-tansu.sh, and an edgeguard built with the `kafka` feature.
`make test-kafka` builds both and runs them.
"""

import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "e2e"


def _load(name, path):
    """tests/e2e's modules under another name: both directories have a
    conftest.py, and pytest owns the name `conftest`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


e2e = _load("e2e_conftest", E2E / "conftest.py")
free_port, wait_until, wait_for_port = e2e.free_port, e2e.wait_until, e2e.wait_for_port
# What tests/e2e/test_record_replay.py imports from `conftest` (loaded by
# test_fleet.py for its request generator and nginx configuration).
TEST_LIST, Nginx, bad_log_lines, edge_conf = e2e.TEST_LIST, e2e.Nginx, e2e.bad_log_lines, e2e.edge_conf
# And what tests/e2e/test_signals.py imports (test_fleet_signals.py's edge).
LIB, METRICS_DICT, get_text, metrics_server = e2e.LIB, e2e.METRICS_DICT, e2e.get_text, e2e.metrics_server
nginx_preamble, replace = e2e.nginx_preamble, e2e.replace

# EDGEGUARD_BIN: another build of the binary (a debug one while working).
EDGEGUARD = pathlib.Path(os.environ.get("EDGEGUARD_BIN", ROOT / "target" / "release" / "edgeguard"))
CACHE = pathlib.Path(os.environ.get("EDGEGUARD_CACHE", pathlib.Path.home() / ".cache" / "edgeguard"))
TANSU = pathlib.Path(os.environ.get("EDGEGUARD_TANSU", CACHE / "tansu-0.6.0" / "bin" / "tansu"))
CONFIG = ROOT / "nginx-conf" / "record.json"
SAMPLE = ROOT / "tests" / "fixtures" / "traffic" / "sample.jsonl"

# Group membership moves within seconds (edgeguard's default session is
# 10 s): a killed member's partitions go to the survivor once its session
# times out. Prefixed: consumer properties, kept from the producers.
FAST_GROUP = ["-X", "consumer.session.timeout.ms=6000", "-X", "consumer.heartbeat.interval.ms=500"]


def pytest_sessionstart(session):
    missing = []
    if not TANSU.exists():
        missing.append(f"the broker {TANSU} (scripts/build-tansu.sh)")
    if not EDGEGUARD.exists():
        missing.append(f"{EDGEGUARD} (cargo build --release --features kafka)")
    if missing:
        raise pytest.UsageError("the Kafka tests need " + " and ".join(missing) + ": run `make test-kafka`")


class Broker:
    """One tansu broker on a free loopback port. `sqlite` storage survives
    a restart; `memory` does not."""

    def __init__(self, workdir, storage="memory"):
        self.workdir = pathlib.Path(workdir)
        self.port = free_port()
        self.url = f"tcp://127.0.0.1:{self.port}"
        self.address = f"127.0.0.1:{self.port}"
        # tansu reads sqlite://NAME relative to its working directory.
        self.storage = "memory://tansu/" if storage == "memory" else "sqlite://tansu.db"
        self.log = self.workdir / "tansu.log"
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [TANSU, "broker", "--listener-url", self.url, "--advertised-listener-url", self.url,
                 "--storage-engine", self.storage],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
            )
        if not wait_for_port(self.port, self.proc, timeout=30):
            raise AssertionError(f"tansu did not start:\n{self.log.read_text(errors='replace')}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def create_topic(self, name, partitions=4):
        done = subprocess.run(
            [TANSU, "topic", "create", "--broker", self.url, "--partitions", str(partitions), name],
            capture_output=True, timeout=60,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    b.start()
    yield b
    b.stop()


def ship(broker, topic, path, *extra):
    """`edgeguard ship`: every line of `path` to `topic`; returns its stderr."""
    done = subprocess.run(
        [EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", topic, *extra, path],
        capture_output=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stderr.decode()


class Replay:
    """One `edgeguard replay` member of a consumer group, its rows in
    `<name>.jsonl`, its summary in `<name>.summary`, its stderr in
    `<name>.log`."""

    def __init__(self, workdir, broker, topic, group, name, *extra, config=CONFIG, threads=1):
        self.workdir = pathlib.Path(workdir)
        self.out = self.workdir / f"{name}.jsonl"
        self.summary_path = self.workdir / f"{name}.summary"
        self.log = self.workdir / f"{name}.log"
        self.args = [
            EDGEGUARD, "replay", "--config", config, "--threads", str(threads), "--no-progress",
            "--kafka-brokers", broker.address, "--topic", topic, "--group", group,
            "--output", self.out, "--summary", self.summary_path, *extra,
        ]
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=log)
        return self

    def run(self, timeout=300):
        """Starts and waits (with --exit-at-end among the arguments)."""
        self.start()
        return self.wait(timeout)

    def wait(self, timeout=300):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"replay did not end:\n{self.stderr()}")

    def signal(self, sig):
        self.proc.send_signal(sig)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def summary(self):
        return self.summary_path.read_text() if self.summary_path.exists() else ""

    def rows(self, whole_only=False):
        """The rows written so far. A member killed mid-write may leave a
        last line cut short: not a row (unless `whole_only` is False and it
        parses)."""
        if not self.out.exists():
            return []
        text = self.out.read_bytes()
        lines = text.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines and whole_only:
            lines.pop()
        rows = []
        for i, line in enumerate(lines):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                assert i == len(lines) - 1, f"{self.out}: line {i + 1} is not JSON: {line[:200]!r}"
        return rows

    def stop(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def replays():
    """Replays a test starts; any still running at the end is killed."""
    started = []
    yield started
    for r in started:
        r.stop()


def coordinates(rows):
    return [(r["partition"], r["offset"]) for r in rows]


def sample_lines(n, seed=0):
    """`n` request lines: the fixture's, in a shuffled cycle, each made
    distinct by its URI (so the lines of a topic can be told apart)."""
    import random

    base = [json.loads(l) for l in SAMPLE.read_text().splitlines()]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        r = dict(base[rng.randrange(len(base))])
        r["uri"] = f"{r['uri'].split('?')[0]}?n={i}"
        out.append(json.dumps(r, separators=(",", ":")))
    return out


def metrics(address):
    """The Prometheus text a replay serves, as {series: value}; {} while
    its server is not up yet."""
    import urllib.request

    try:
        return _metrics(address)
    except OSError:
        return {}


def _metrics(address):
    import urllib.request

    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as resp:
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4"
        text = resp.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            values[series] = float(value)
    return values

