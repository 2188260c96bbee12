"""`edgeguard signals` as a consumer group against a real broker: two
instances share the log topic (stage 1) and the partials topic (stage 2),
publish to the snapshot topic, and `signals export` writes a snapshot file
whose every count equals what the file mode computes from the same lines
(the HyperLogLog estimates too: partial sketches merge exactly).
"""

import json
import random
import signal
import subprocess
import time

from conftest import CONFIG, EDGEGUARD, FAST_GROUP, sample_lines

JA4S = [
    "t13d1516h2_8daaf6152771_02713d6af862",
    "t13d1517h2_8daaf6152771_b1ff8ab2d16f",
    "t13d5911h1_a33745022dd6_dd5ea6d2a4c8",
]


def log_lines(n):
    """Request lines with a client from one of ~600 /24s (a few heavy
    ones), nginx's time over 40 minutes, and a JA4 on most."""
    rng = random.Random(7)
    out = []
    for i, line in enumerate(sample_lines(n, seed=3)):
        r = json.loads(line)
        net = rng.choice([rng.randrange(600), rng.randrange(5)])
        r["client"] = f"10.{net // 250}.{net % 250}.{rng.randrange(1, 250)}"
        if rng.random() < 0.1:
            r["client"] = f"2001:db8:{net:x}::{rng.randrange(1, 999):x}"
        s = i * 2400 // n
        r["time"] = f"2026-12-04T16:{s // 60:02}:{s % 60:02}+00:00"
        if rng.random() < 0.8:
            r["edgeguard_ja4"] = rng.choice(JA4S)
            r["edgeguard_tls_family"] = "boringssl"
        out.append(json.dumps(r, separators=(",", ":")))
    return out


def entries(path):
    return sorted(json.loads(path.read_text())["entries"], key=lambda e: (e["kind"], e["key"]))


def test_two_instances_and_export_equal_the_file_mode(broker, tmp_path):
    for topic, partitions in (("log", 4), ("partials", 4), ("snapshot", 2)):
        broker.create_topic(topic, partitions)
    lines = log_lines(3000)
    src = tmp_path / "log.jsonl"
    src.write_text("\n".join(lines) + "\n")

    want_path = tmp_path / "file.json"
    done = subprocess.run([EDGEGUARD, "signals", "--config", CONFIG, "--out", want_path, src],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    want = entries(want_path)
    assert len(want) > 20 and any(e["prefixes24"] > 200 for e in want), want[:3]
    assert any(e["prefixes48"] > 30 for e in want)

    procs = []
    try:
        check_group(broker, tmp_path, lines, want, want_path, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def split(log):
    """Whether a member's stage 2 owns part of the partials (the group has
    both members)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    owned = [line for line in text.splitlines() if "of partials assigned" in line]
    return bool(owned) and "[0, 1, 2, 3]" not in owned[-1]


def check_group(broker, tmp_path, lines, want, want_path, procs):
    src = tmp_path / "log.jsonl"
    for name in ("a", "b"):
        log = open(tmp_path / f"{name}.log", "wb")
        procs.append(subprocess.Popen(
            [EDGEGUARD, "signals", "--config", CONFIG, "--kafka-brokers", broker.address,
             "--topic", "log", "--group", "signals", "--partials-topic", "partials",
             "--snapshot-topic", "snapshot", "--flush-every", "1", "--publish-every", "1",
             "--out", tmp_path / f"{name}.json", *FAST_GROUP],
            stdout=subprocess.DEVNULL, stderr=log))
    # Both members in the group before the log comes, so both judge some.
    deadline = time.monotonic() + 60
    while not all(split(tmp_path / f"{n}.log") for n in ("a", "b")):
        assert time.monotonic() < deadline, "the two members did not share the partials"
        time.sleep(0.5)
    ship = subprocess.run([EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", "log", src],
                          capture_output=True, text=True, timeout=300)
    assert ship.returncode == 0, ship.stderr

    got_path = tmp_path / "export.json"
    got, deadline = None, time.monotonic() + 180
    while time.monotonic() < deadline:
        done = subprocess.run([EDGEGUARD, "signals", "export", "--kafka-brokers", broker.address,
                               "--topic", "snapshot", "--out", got_path],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        got = entries(got_path)
        if got == want:
            break
        time.sleep(2)
    logs = "\n".join((tmp_path / f"{n}.log").read_text(errors="replace") for n in ("a", "b"))
    assert got == want, f"export differs from the file mode:\n{logs}"
    # The file nginx loads: the same window end as the file mode.
    assert json.loads(got_path.read_text())["generated"] == json.loads(want_path.read_text())["generated"]

    # Equal sums mean every line was judged once: nothing lost, nothing
    # redelivered (no member died). Each instance writes the keys it owns:
    # together, the whole snapshot (disjoint by partition).
    owned = [entries(tmp_path / f"{n}.json") for n in ("a", "b")]
    assert all(owned), "each member owns keys"
    assert sorted((e for o in owned for e in o), key=lambda e: (e["kind"], e["key"])) == want

    # SIGKILL one: the survivor is given its partials partitions and
    # rebuilds their windows from the partials the topic retains, so its
    # own file becomes the whole snapshot.
    procs[0].kill()
    procs[0].wait()
    survivor = tmp_path / "b.json"
    deadline = time.monotonic() + 90
    while entries(survivor) != want:
        assert time.monotonic() < deadline, (tmp_path / "b.log").read_text(errors="replace")
        time.sleep(1)
    procs[1].send_signal(signal.SIGTERM)
    assert procs[1].wait(timeout=60) == 0, (tmp_path / "b.log").read_text(errors="replace")
    done = subprocess.run([EDGEGUARD, "signals", "export", "--kafka-brokers", broker.address,
                           "--topic", "snapshot", "--out", got_path],
                          capture_output=True, text=True, timeout=120)
    assert entries(got_path) == want

    # One process, both stages, a new group over the same log, to the end
    # (--exit-at-end): a backfill. Its own file is the whole snapshot.
    for topic in ("partials2", "snapshot2"):
        broker.create_topic(topic, 2)
    alone = tmp_path / "alone.json"
    done = subprocess.run(
        [EDGEGUARD, "signals", "--config", CONFIG, "--kafka-brokers", broker.address, "--topic", "log",
         "--group", "backfill", "--partials-topic", "partials2", "--snapshot-topic", "snapshot2",
         "--flush-every", "1", "--publish-every", "1", "--exit-at-end", "--out", alone, *FAST_GROUP],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert f"stage 1: {len(lines)} requests" in done.stderr, done.stderr
    assert entries(alone) == want


def test_export_keeps_the_last_record_of_a_key_and_refuses_bad_ones(broker, tmp_path):
    broker.create_topic("snapshot", 1)
    first = {"kind": "ja4", "key": JA4S[0], "requests": 5, "prefixes24": 2, "prefixes48": 0, "user_agents": 1,
             "flagged": 0, "challenges": 1, "solved": 1, "cleared": 2}
    bad = dict(first, key=JA4S[1], solved=9)
    last = dict(first, requests=7)
    src = tmp_path / "records.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in (first, bad, last)) + "\n")
    # Keyed by the record's key (stage 2 keys by kind:key): the last wins.
    done = subprocess.run([EDGEGUARD, "ship", "--kafka-brokers", broker.address, "--topic", "snapshot",
                           "--key", "key", src], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "s.json"
    done = subprocess.run([EDGEGUARD, "signals", "export", "--kafka-brokers", broker.address,
                           "--topic", "snapshot", "--out", out], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 entries" in done.stderr and "3 records, 1 refused" in done.stderr, done.stderr
    assert "solved: 9 is more than" in done.stderr, done.stderr
    snap = json.loads(out.read_text())
    assert snap["entries"] == [last]
