"""`edgeguard replay` from a real broker: the same results as file replay,
commits only of what is written, dead letters, results keyed by request,
clean stops, a writer that falls behind, a broker that goes away.

Topics are read back with replay itself: with --max-line 1 no message is
a request, so a replay dead-letters every message, whole (key, headers,
payload), into its --dead-letter-file.
"""

import base64
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter

from conftest import (CONFIG, EDGEGUARD, FAST_GROUP, Broker, Replay, coordinates, free_port, metrics,
                      sample_lines, ship, wait_until)


def write_lines(path, lines):
    with open(path, "wb") as f:
        for line in lines:
            f.write(line if isinstance(line, bytes) else line.encode())
            f.write(b"\n")


def body(row):
    """A row without what says where its request came from."""
    return json.dumps({k: v for k, v in row.items() if k not in ("partition", "offset", "line", "key")},
                      sort_keys=True)


def report(summary):
    """A summary's counts and decisions: without its timing line, and
    without the Kafka part."""
    return summary.split("\n", 1)[1].split("\nkafka:")[0]


def committed(summary):
    """`committed: t-0@12 t-1@7` -> {0: 12, 1: 7}."""
    line = next(l for l in summary.splitlines() if l.strip().startswith("committed:"))
    out = {}
    for item in line.split(":", 1)[1].split():
        if item != "nothing":
            tp, offset = item.rsplit("@", 1)
            out[int(tp.rsplit("-", 1)[1])] = int(offset)
    return out


def dump_topic(tmp_path, broker, topic, name):
    """Every message of `topic`, read by a replay that finds no request in
    them: [{partition, offset, key, headers, message}] from its dead letters."""
    dead = tmp_path / f"{name}.dead.jsonl"
    # --max-line 1: even a request line is no request here.
    r = Replay(tmp_path, broker, topic, f"dump-{name}", name, "--exit-at-end", "--max-line", "1",
               "--dead-letter-file", dead)
    assert r.run() == 0, r.stderr()
    return [json.loads(l) for l in dead.read_text().splitlines()] if dead.exists() else []


def payload(record):
    if "message" in record:
        return record["message"].encode()
    return base64.b64decode(record["message_base64"])


def test_a_group_replays_a_topic_as_file_replay_does(broker, tmp_path):
    lines = sample_lines(3000)
    log = tmp_path / "requests.jsonl"
    write_lines(log, lines)
    broker.create_topic("requests", 4)
    assert "3000 lines delivered" in ship(broker, "requests", log)

    file_out, file_summary = tmp_path / "file.jsonl", tmp_path / "file.summary"
    done = subprocess.run([EDGEGUARD, "replay", "--config", CONFIG, "--threads", "2", "--no-progress",
                           "--output", file_out, "--summary", file_summary, log], capture_output=True)
    assert done.returncode == 0, done.stderr

    member = Replay(tmp_path, broker, "requests", "g", "kafka", "--exit-at-end", threads=2)
    assert member.run() == 0, member.stderr()
    rows = member.rows()
    summary = member.summary()

    # Every message once, each partition from offset 0 without a gap.
    coords = coordinates(rows)
    assert len(coords) == len(set(coords)) == 3000
    ends = committed(summary)
    assert sorted(ends) == [0, 1, 2, 3] and sum(ends.values()) == 3000, summary
    assert set(coords) == {(p, o) for p, end in ends.items() for o in range(end)}
    # The same results as from the file: rows, counts, decisions, scores.
    file_rows = [json.loads(l) for l in file_out.read_text().splitlines()]
    assert Counter(map(body, rows)) == Counter(map(body, file_rows))
    assert report(summary) == report(file_summary.read_text())
    assert "3000 messages, 0 invalid" in summary

    # Committed: the group has nothing left to do; --output is appended to.
    again = Replay(tmp_path, broker, "requests", "g", "kafka", "--exit-at-end")
    assert again.run() == 0, again.stderr()
    assert "0 messages" in again.summary() and len(again.rows()) == 3000
    # Another group reads the topic from its start.
    other = Replay(tmp_path, broker, "requests", "other", "other", "--exit-at-end")
    assert other.run() == 0
    assert sorted(coordinates(other.rows())) == sorted(coords)


def test_invalid_messages_are_dead_lettered_and_results_keyed_by_request(broker, tmp_path):
    good = sample_lines(400, seed=1)
    bad = [
        b"not json at all",
        b'{"method":"GET"}',  # not a request: no URI, no headers
        b'{"method":"GET","uri":"/","version":"1.1","headers":[["host","x"]]',  # cut short
        b"\xff\xfe not UTF-8 \x80",
        json.dumps(json.loads(good[0]) | {"uri": "/" + "x" * 3000}).encode(),  # over --max-line
    ]
    lines = list(good)
    for i, b in enumerate(bad):
        lines.insert(50 + 70 * i, b)
    log = tmp_path / "mixed.jsonl"
    write_lines(log, lines)
    broker.create_topic("requests", 2)
    broker.create_topic("results", 2)
    broker.create_topic("dead", 1)
    ship(broker, "requests", log)

    dead_file = tmp_path / "dead.jsonl"
    member = Replay(tmp_path, broker, "requests", "g", "m", "--exit-at-end", "--max-line", "2000",
                    "--dead-letter-file", dead_file, "--dead-letter-topic", "dead", "--results-topic", "results")
    assert member.run() == 0, member.stderr()
    summary = member.summary()
    assert "parse errors: 5 " in summary, summary
    assert "405 messages, 5 invalid" in summary
    assert "dead letters: 5 to topic dead" in summary and "results: 400 to topic results" in summary

    # The dead-letter file: each bad message whole, where it came from, why.
    dead = [json.loads(l) for l in dead_file.read_text().splitlines()]
    assert sorted(payload(d) for d in dead) == sorted(bad)
    errors = {payload(d): d["error"] for d in dead}
    assert errors[bad[4]] == "longer than 2000 bytes"
    assert all(e and e != "not replayed" for e in errors.values()), errors
    rows = member.rows()
    dead_coords = {(d["partition"], d["offset"]) for d in dead}
    assert all(d["topic"] == "requests" for d in dead)
    assert not dead_coords & set(coordinates(rows)), "a message is a row or a dead letter"
    assert len(dead_coords) + len(rows) == len(lines)

    # The dead-letter topic: the same messages, with why and whence.
    topic = dump_topic(tmp_path, broker, "dead", "deadtopic")
    assert sorted(payload(d) for d in topic) == sorted(bad)
    for d in topic:
        headers = {h["name"]: h["value"] for h in d["headers"]}
        assert headers["edgeguard-error"] == errors[payload(d)]
        _, p, o = headers["edgeguard-source"].split(":")
        assert (int(p), int(o)) in dead_coords

    # The results topic: every row, keyed requests:PARTITION:OFFSET.
    results = dump_topic(tmp_path, broker, "results", "results")
    assert len(results) == 400
    by_key = {r["key"]: json.loads(r["message"]) for r in results}
    assert by_key == {f"requests:{r['partition']}:{r['offset']}": r for r in rows}


def test_a_message_key_keys_its_result(broker, tmp_path):
    """A shipper keying requests (by client, by $request_id) gets results
    with the same key, so the two topics join, co-partitioned."""
    lines = sample_lines(300, seed=2)
    clients = {json.loads(l)["client"] for l in lines}
    broker.create_topic("requests", 3)
    broker.create_topic("results", 3)
    ship(broker, "requests", write_and_return(tmp_path / "a.jsonl", lines), "--key", "client")
    member = Replay(tmp_path, broker, "requests", "g", "m", "--exit-at-end", "--results-topic", "results")
    assert member.run() == 0, member.stderr()
    rows = member.rows()
    assert len(rows) == 300 and {r["key"] for r in rows} == clients
    # One client's requests are in one partition, in order.
    partitions = {}
    for r in rows:
        assert partitions.setdefault(r["key"], r["partition"]) == r["partition"]
    results = dump_topic(tmp_path, broker, "results", "results")
    assert sorted((r["key"], json.loads(r["message"])["offset"]) for r in results) == \
        sorted((r["key"], r["offset"]) for r in rows)


def write_and_return(path, lines):
    write_lines(path, lines)
    return path


class SlowReader(threading.Thread):
    """Reads a FIFO slowly: a writer that falls behind."""

    def __init__(self, path, chunk=16 << 10, every=0.02):
        super().__init__(daemon=True)
        self.path, self.chunk, self.every = path, chunk, every
        self.data = bytearray()
        self.fast = threading.Event()

    def run(self):
        with open(self.path, "rb") as f:
            while True:
                got = f.read(self.chunk) if not self.fast.is_set() else f.read(1 << 20)
                if not got:
                    return
                self.data += got
                if not self.fast.is_set():
                    time.sleep(self.every)

    def rows(self):
        text = bytes(self.data)
        return [json.loads(l) for l in text.split(b"\n") if l]


def test_a_slow_writer_pauses_the_partitions_and_sigterm_commits_what_is_written(broker, tmp_path):
    lines = sample_lines(60000, seed=3)
    log = tmp_path / "many.jsonl"
    write_lines(log, lines)
    broker.create_topic("requests", 4)
    ship(broker, "requests", log)

    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    # 80 KB/s: a batch's rows take most of a second, so the pool stays out
    # past the 500 ms a pause waits for (at 800 KB/s a batch came back
    # every ~80 ms, the consumer just waited, and nothing paused).
    reader = SlowReader(fifo, chunk=4 << 10, every=0.05)
    reader.start()
    port = free_port()
    member = Replay(tmp_path, broker, "requests", "g", "slow", "--metrics-listen", f"127.0.0.1:{port}")
    member.out = fifo
    member.args[member.args.index("--output") + 1] = fifo
    member.start()
    # Held back by the reader: the pool runs out and the partitions pause.
    # The lags come from librdkafka's statistics, once a second: wait for
    # the pause and for them (a pause can come before the first report).
    def lags_of(v):
        return [x for k, x in v.items() if k.startswith("edgeguard_replay_lag{")]

    m = wait_until("a pause and the partitions' lags", lambda: (v := metrics(f"127.0.0.1:{port}"))
                   .get('edgeguard_replay_paused{topic="requests"}') == 1 and len(lags_of(v)) == 4 and v,
                   timeout=60)
    assert m['edgeguard_replay_partitions{topic="requests"}'] == 4
    assert 0 < m['edgeguard_replay_messages_total{topic="requests"}'] < 60000
    lags = lags_of(m)
    assert len(lags) == 4 and sum(lags) > 0, m
    # (Memory while paused: scripts/bench-kafka.py samples RSS over 10 M
    # messages; a few seconds here would measure the pool warming up.)
    member.signal(signal.SIGTERM)
    # What is out is written before the stop: the reader drains it.
    reader.fast.set()
    assert member.wait(60) == 0, member.stderr()
    reader.join(30)
    first = reader.rows()
    summary = member.summary()
    assert "STOPPED" not in summary and "paused for the writer: 0 times" not in summary, summary
    assert 0 < len(first) < 60000
    ends = committed(summary)
    # Exactly what was written is committed: per partition, a run from 0.
    by_partition = Counter(p for p, _ in coordinates(first))
    assert ends == dict(by_partition), (ends, by_partition)
    assert set(coordinates(first)) == {(p, o) for p, end in ends.items() for o in range(end)}

    # The group goes on where it stopped: nothing twice, nothing lost.
    rest = Replay(tmp_path, broker, "requests", "g", "rest", "--exit-at-end")
    assert rest.run() == 0, rest.stderr()
    both = coordinates(first) + coordinates(rest.rows())
    assert len(both) == len(set(both)) == 60000


def test_a_group_resumes_inside_a_producers_batch_and_skips_nothing(broker, tmp_path):
    """A commit (or a seek, or a pause) can fall inside a batch the producer
    sent whole: the next fetch must start with that batch, and the group go
    on at the committed offset exactly. One partition, so each cut of a
    256 KiB replay batch falls inside one of ship's batches of hundreds of
    lines (a boundary only by chance). tansu 0.6.0 unpatched answers from
    the next batch: the group resumed at 2 736 after a commit of 2 519, and
    217 requests were never replayed (scripts/build-tansu.sh)."""
    n = 20000
    log = tmp_path / "one.jsonl"
    write_lines(log, sample_lines(n, seed=5))
    broker.create_topic("requests", 1)
    ship(broker, "requests", log)
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    reader = SlowReader(fifo, chunk=4 << 10, every=0.05)
    reader.start()
    port = free_port()
    member = Replay(tmp_path, broker, "requests", "g", "first", "--metrics-listen", f"127.0.0.1:{port}")
    member.args[member.args.index("--output") + 1] = fifo
    member.start()
    wait_until("a pause", lambda: metrics(f"127.0.0.1:{port}")
               .get('edgeguard_replay_paused{topic="requests"}') == 1, timeout=60)
    member.signal(signal.SIGTERM)
    reader.fast.set()
    assert member.wait(60) == 0, member.stderr()
    reader.join(30)
    first = coordinates(reader.rows())
    end = committed(member.summary())[0]
    assert 0 < end < n and sorted(first) == [(0, o) for o in range(end)], (end, len(first))

    rest = Replay(tmp_path, broker, "requests", "g", "rest", "--exit-at-end")
    assert rest.run() == 0, rest.stderr()
    again = sorted(coordinates(rest.rows()))
    assert again[:1] == [(0, end)], f"committed {end}, the group went on at {again[:1]}"
    assert again == [(0, o) for o in range(end, n)], f"{n - end - len(again)} requests skipped"


def test_undeliverable_results_stop_the_run_uncommitted(tmp_path):
    """The results broker goes away: the batches whose results cannot be
    delivered are not committed, the run stops with an error, and after the
    broker is back the group does them again."""
    broker = Broker(tmp_path, storage="sqlite")
    broker.start()
    try:
        broker.create_topic("requests", 2)
        broker.create_topic("results", 2)
        ship(broker, "requests", write_and_return(tmp_path / "a.jsonl", sample_lines(2000, seed=4)))
        fifo = tmp_path / "rows.fifo"
        os.mkfifo(fifo)
        reader = SlowReader(fifo, chunk=4 << 10, every=0.05)
        reader.start()
        member = Replay(tmp_path, broker, "requests", "g", "m", "--results-topic", "results",
                        "-X", "producer.message.timeout.ms=3000", "-X", "socket.timeout.ms=1000")
        member.args[member.args.index("--output") + 1] = fifo
        member.start()
        wait_until("some rows", lambda: len(reader.data) > 20000, timeout=60)
        broker.stop(signal.SIGKILL)
        reader.fast.set()
        code = member.wait(120)
        summary = member.summary()
        assert code == 1, member.stderr()
        assert "STOPPED: delivering to Kafka" in summary, summary
        reader.join(30)
        written = coordinates(reader.rows())
        ends = committed(summary)
        broker.start()
        rest = Replay(tmp_path, broker, "requests", "g", "rest", "--exit-at-end", "--results-topic", "results")
        assert rest.run() == 0, rest.stderr()
        again = coordinates(rest.rows())
        # Everything is done, once the broker is back; what was done
        # twice is what was written but not delivered (and so not committed).
        assert set(written) | set(again) == {(p, o) for p in (0, 1) for o in range(max_offset(written + again, p) + 1)}
        assert len(set(written) | set(again)) == 2000
        twice = set(written) & set(again)
        assert all(o >= ends.get(p, 0) for p, o in twice), (ends, sorted(twice)[:5])
        assert not {(p, o) for p, o in again if o < ends.get(p, 0)}, "committed offsets are not done again"
    finally:
        broker.stop()


def max_offset(coords, partition):
    return max(o for p, o in coords if p == partition)
