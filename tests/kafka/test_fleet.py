"""nginx -> rsyslog (omkafka) -> Kafka -> an `edgeguard replay` group, end to end.

Real nginx scores and records requests with the shipped log format
(nginx-conf/log-format.conf); Debian's rsyslog follows the access log with
contrib/kafka/rsyslog-edgeguard.conf (the file docs/kafka.md gives, only
its paths, broker and topic replaced) and ships each line to a 4-partition
topic of a real broker (tansu). Its omkafka runs on librdkafka 2.12.1
(scripts/build-librdkafka.sh): Debian 12's 2.0.2 cannot talk to tansu.

What the members write is checked against a fresh group's replay of the
whole topic (by partition and offset), and that replay against nginx's
own decisions and scores (its summary compares every line's
$edgeguard_action and logged scores).
"""

import base64
import json
import os
import re
import pathlib
import signal
import subprocess
from collections import Counter

import pytest

from conftest import (CACHE, E2E, FAST_GROUP, ROOT, Broker, Replay, _load, coordinates, free_port, metrics,
                      wait_until)
import conftest

record = _load("e2e_record_replay", E2E / "test_record_replay.py")
origin = conftest.e2e.origin  # the fixture: a recording origin server

RSYSLOG_CONF = ROOT / "contrib" / "kafka" / "rsyslog-edgeguard.conf"
RSYSLOGD = "/usr/sbin/rsyslogd"


def librdkafka_dir():
    found = sorted(CACHE.glob("librdkafka-*/lib/librdkafka.so.1"))
    if not found:
        pytest.fail(f"no librdkafka under {CACHE} for rsyslog's omkafka: run scripts/build-librdkafka.sh")
    return found[-1].parent


class Rsyslog:
    """rsyslogd in the foreground with the shipped configuration."""

    def __init__(self, workdir, broker, access_log, topic="requests"):
        self.dir = pathlib.Path(workdir) / "rsyslog"
        self.dir.mkdir()
        conf = RSYSLOG_CONF.read_text()
        for old, new in [
            ("/var/spool/rsyslog", str(self.dir)),
            ("/var/log/nginx/edgeguard.jsonl", str(access_log)),
            ('broker=["kafka1:9092", "kafka2:9092", "kafka3:9092"]', f'broker=["{broker.address}"]'),
            ('topic="requests"', f'topic="{topic}"'),
        ]:
            assert old in conf, old
            conf = conf.replace(old, new)
        self.conf = self.dir / "rsyslog.conf"
        self.conf.write_text(conf)
        self.log = self.dir / "rsyslogd.log"
        self.proc = None

    def start(self):
        env = dict(os.environ, LD_LIBRARY_PATH=str(librdkafka_dir()))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [RSYSLOGD, "-n", "-f", self.conf, "-i", self.dir / "rsyslogd.pid"],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        # Its config is checked at start: a bad one exits at once.
        wait_until("rsyslogd to read its config", lambda: (self.dir / "rsyslogd.pid").exists() or
                   self.proc.poll() is not None, timeout=20)
        assert self.proc.poll() is None, self.log.read_text(errors="replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Ship:
    """`tail -F access.log | edgeguard ship`: the documented producer on the
    binary's own librdkafka, for hosts without a log shipper."""

    def __init__(self, workdir, broker, access_log, topic="requests"):
        self.cmd = (f"exec tail -n +1 -F {access_log} | exec {conftest.EDGEGUARD} ship "
                    f"--kafka-brokers {broker.address} --topic {topic}")
        self.log = pathlib.Path(workdir) / "ship.log"
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(["bash", "-c", self.cmd], stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            # tail ends, ship sends what it read and reports.
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)


def nginx_conf(port, origin_port, access_log):
    """test_record_replay's nginx: models in block mode, vars, record.capture()
    before access(), the shipped log format, logging to `access_log`."""
    models = record.MODELS
    conf = record.edge_conf(port, origin_port, record.TEST_LIST,
                            configure='models = { bot = "%s", spoof = "%s" }, mode = "block", vars = true,'
                            % (models["bot"], models["spoof"]),
                            access=record.ACCESS, init='require "resty.edgeguard.record"')
    conf = conf.replace("    access_log off;\n",
                        f"    include {record.LOG_FORMAT};\n    access_log {access_log} edgeguard_json;\n", 1)
    conf = conf.replace(
        "        location / {",
        '        set $edgeguard_request_headers "";\n        set $edgeguard_bot "";\n'
        '        set $edgeguard_spoof "";\n        set $edgeguard_action "";\n'
        '        set $edgeguard_ja4 "";\n        set $edgeguard_tls_family "";\n        location / {', 1)
    assert "edgeguard_json;" in conf and "set $edgeguard_action" in conf
    return conf


def requests(n):
    """`n` varied requests: test_record_replay's (browsers, scripts,
    crawlers, spoofers; internal, repeated, 8-bit and control bytes; letter
    case; HTTP/1.0 and 1.1), in a cycle, each URI made unique."""
    base = record.requests()
    out = []
    for i in range(n):
        r = base[i % len(base)]
        sep = b"&" if b"?" in r.uri else b"?"
        out.append(record.Req(r.method, r.uri + sep + b"k=%d" % i, r.version, list(r.headers), r.body))
    return out


class Fleet:
    """A broker, nginx logging to a file, rsyslog shipping it."""

    def __init__(self, tmp_path, origin, storage="memory", shipper=None):
        self.tmp = tmp_path
        self.broker = Broker(tmp_path, storage=storage)
        self.broker.start()
        self.broker.create_topic("requests", 4)
        self.access = tmp_path / "access.jsonl"
        self.access.touch()
        os.chmod(tmp_path, 0o755)
        os.chmod(self.access, 0o666)
        self.rsyslog = (shipper or Rsyslog)(tmp_path, self.broker, self.access)
        self.rsyslog.start()
        self.port = free_port()
        self.nginx = conftest.Nginx(nginx_conf(self.port, origin.port, self.access))
        self.nginx.start(self.port)
        self.config = tmp_path / "config.json"
        self.config.write_text(json.dumps({"internal_headers": str(record.TEST_LIST), "models": record.MODELS,
                                           "mode": "block"}))
        self.sent = 0

    def send(self, reqs):
        for r in reqs:
            record.send(self.port, r.wire(), head_only=r.method == b"HEAD")
            self.sent += 1

    def logged(self):
        return self.access.read_bytes().count(b"\n")

    def member(self, name, *extra, group="fleet"):
        return Replay(self.tmp, self.broker, "requests", group, name, *FAST_GROUP, *extra,
                      config=self.config)

    def dump(self):
        """The topic's requests, by the number each one's URI carries:
        {k: [(partition, offset), ...]}. Read by a replay for which no
        message is a request (--max-line 1): each is a dead letter, whole."""
        self.dumps = getattr(self, "dumps", 0) + 1
        dead = self.tmp / f"dump{self.dumps}.jsonl"
        d = self.member(f"dump{self.dumps}", "--exit-at-end", "--max-line", "1", "--dead-letter-file", dead,
                        group=f"dump{self.dumps}")
        assert d.run() == 0, d.stderr()
        out = {}
        for line in dead.read_text().splitlines() if dead.exists() else []:
            r = json.loads(line)
            payload = r["message"].encode() if "message" in r else base64.b64decode(r["message_base64"])
            k = int(re.search(rb"k=(\d+)", payload).group(1))
            out.setdefault(k, []).append((r["partition"], r["offset"]))
        return out

    def verify(self):
        """A fresh group's replay of the whole topic: {(p, o): row}, summary."""
        v = self.member("verify", "--exit-at-end", group="verify")
        assert v.run() == 0, v.stderr()
        rows = v.rows()
        by_coord = {(r["partition"], r["offset"]): r for r in rows}
        assert len(by_coord) == len(rows)
        return by_coord, v.summary()

    def close(self):
        self.nginx.stop()
        bad = conftest.bad_log_lines(self.nginx.error_log)
        self.nginx.cleanup()
        self.rsyslog.stop()
        self.broker.stop()
        assert not bad, "nginx error log:\n" + "\n".join(bad)


@pytest.fixture
def fleet(tmp_path, origin, replays):
    f = Fleet(tmp_path, origin)
    yield f
    f.close()


def assert_matches_nginx(summary, n):
    """The verifying replay of `n` messages against nginx's live values,
    line by line."""
    assert f"edgeguard replay: {n} requests" in summary, summary
    assert "parse errors: 0 " in summary, summary
    assert f"{n} lines with $edgeguard_action, {n} agree (100.00%)" in summary, summary
    assert f"live scores compared: {2 * n}, differing beyond the logged precision: 0" in summary, summary


def assigned(address):
    """A member's partitions with their committed offsets (0 if none yet),
    and how many it owns; ({}, 0) before its metrics are up."""
    m = metrics(address)
    if not m:
        return {}, 0
    commits = {}
    for k, v in m.items():
        if 'partition="' in k:
            p = int(k.split('partition="')[1].split('"')[0])
            commits.setdefault(p, 0)
            if k.startswith("edgeguard_replay_committed_offset{"):
                commits[p] = int(v)
    return commits, int(m['edgeguard_replay_partitions{topic="requests"}'])


def test_a_replay_group_takes_over_a_killed_member(fleet, replays):
    n = 5000
    ports = {name: free_port() for name in ("a", "b")}
    a = fleet.member("a", "--metrics-listen", f"127.0.0.1:{ports['a']}").start()
    replays.append(a)
    wait_until("a to own the partitions", lambda: assigned(f"127.0.0.1:{ports['a']}")[1] == 4, timeout=60)
    b = fleet.member("b", "--metrics-listen", f"127.0.0.1:{ports['b']}").start()
    replays.append(b)
    wait_until("the group to share the partitions",
               lambda: assigned(f"127.0.0.1:{ports['a']}")[1] == 2 and assigned(f"127.0.0.1:{ports['b']}")[1] == 2,
               timeout=60)
    reqs = requests(n)
    fleet.send(reqs[: n // 2])
    wait_until("rows from both members", lambda: a.rows() and b.rows(), timeout=60)
    # Where the killed member stood: its partitions and their last commits
    # (once it has committed some of what it wrote).
    a_commits, a_count = wait_until(
        "the member to commit", lambda: (got := assigned(f"127.0.0.1:{ports['a']}"))[0] and
        all(got[0].values()) and got, timeout=60)
    assert a_count == 2
    a.signal(signal.SIGKILL)
    a.wait(10)
    fleet.send(reqs[n // 2:])
    wait_until("nginx to log every request", lambda: fleet.logged() == n, timeout=60)
    wait_until("the survivor to take over",
               lambda: assigned(f"127.0.0.1:{ports['b']}")[1] == 4, timeout=60)

    def covered():
        return len(set(coordinates(a.rows(whole_only=True)) + coordinates(b.rows()))) == n

    wait_until("every request replayed", covered, timeout=180)
    b.signal(signal.SIGTERM)
    assert b.wait(60) == 0, b.stderr()

    truth, summary = fleet.verify()
    assert len(truth) == n == fleet.logged()
    assert_matches_nginx(summary, n)

    a_rows, b_rows = a.rows(whole_only=True), b.rows()
    # Each member wrote each request once; the same request from both is
    # a duplicate of the kill.
    for rows in (a_rows, b_rows):
        assert max(Counter(coordinates(rows)).values()) == 1
    for row in a_rows + b_rows:
        assert row == truth[(row["partition"], row["offset"])], row
    assert set(coordinates(a_rows) + coordinates(b_rows)) == set(truth)
    twice = set(coordinates(a_rows)) & set(coordinates(b_rows))
    # Only around the kill: in the killed member's partitions, from its
    # last commit on, up to the last row it wrote.
    last = {}
    for p, o in coordinates(a_rows):
        last[p] = max(last.get(p, -1), o)
    for p, o in twice:
        assert p in a_commits and a_commits[p] <= o <= last[p], (p, o, a_commits, last)
    print(f"\nkill test: {n} requests, {len(a_rows)} rows from the killed member, {len(b_rows)} from the survivor, "
          f"{len(twice)} duplicates (partitions {sorted(a_commits)} after offsets {a_commits})")


@pytest.mark.parametrize("shipper", [Rsyslog, Ship], ids=["rsyslog", "ship"])
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["restart", "crash"])
def test_a_broker_restart_mid_stream_loses_nothing(tmp_path, origin, replays, stop, shipper):
    """The broker restarts (SQLite storage) while nginx records: the shipper
    holds the lines meanwhile and ships them after, the member reconnects
    and goes on. A shipper may ship a line twice across the restart (what
    it had no answer for, or an error: tansu 0.6 answers produce requests
    with UNKNOWN_SERVER_ERROR while it shuts down, and both shippers send
    such lines again); each request is in the topic at least once, and the
    member replays the whole topic."""
    fleet = Fleet(tmp_path, origin, storage="sqlite", shipper=shipper)
    try:
        n = 3000
        m = fleet.member("m").start()
        replays.append(m)
        reqs = requests(n)
        fleet.send(reqs[:1000])
        wait_until("rows", lambda: len(m.rows()) > 0, timeout=60)
        fleet.broker.stop(stop)
        # The broker is away: nginx goes on, rsyslog holds the lines.
        fleet.send(reqs[1000:2000])
        fleet.broker.start()
        fleet.send(reqs[2000:])
        wait_until("nginx to log every request", lambda: fleet.logged() == n, timeout=60)
        in_topic = wait_until("every request in the topic", lambda: (t := fleet.dump()) and
                              len(t) == n and t, timeout=180)
        shipped = {c for cs in in_topic.values() for c in cs}
        wait_until("the member to replay the topic", lambda: shipped <= set(coordinates(m.rows())), timeout=120)
        m.signal(signal.SIGTERM)
        assert m.wait(60) == 0, m.stderr()
        truth, summary = fleet.verify()
        assert set(truth) == shipped
        assert_matches_nginx(summary, len(truth))
        rows = m.rows()
        assert set(coordinates(rows)) == set(truth)
        for row in rows:
            assert row == truth[(row["partition"], row["offset"])]
        dups = sum(c - 1 for c in Counter(coordinates(rows)).values())
        print(f"\nbroker restart: {n} requests, {len(shipped)} messages (shipped "
              f"{len(shipped) - n} twice), all replayed, {dups} replayed twice")
    finally:
        fleet.close()
