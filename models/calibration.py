#!/usr/bin/env python3
"""How well the shipped bot score is calibrated, and which detection IDs
fire on whom: the two tables of models/README.md ("Calibration") and
docs/detections.md ("Measured"), from the shipped model read through
`target/release/edgeguard replay` (the scoring code nginx runs).

    python3 models/calibration.py [--edgeguard target/release/edgeguard]
        [--model models/bot.json] [--section calibration|reasons|all]

Rows: the real-client corpus (captured families, `label` human or
automated) and the traffic fixtures (generated families, `automated` 0 or
1). Calibration: per score bin, the mean predicted score against the
observed share of automated requests, for the captured and the generated
rows, then per family. Reasons: every request replayed with the bot
model's threshold at 0, so that every request gets its detection IDs;
per ID, how many people's and automated requests fire it.
"""

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = [
    ("captured", ROOT / "tests/fixtures/real_clients/corpus.jsonl"),
    ("generated", ROOT / "tests/fixtures/traffic/people.jsonl"),
    ("generated", ROOT / "tests/fixtures/traffic/sample.jsonl"),
]
BINS = [0.0, 0.05, 0.1, 0.5, 0.9, 0.99, 1.0000001]


def label(row):
    """1 for automation, 0 for a person, per the fixture's own field."""
    if "label" in row:
        return int(row["label"] == "automated")
    return int(row.get("automated", 0))


def family(row):
    return row.get("family") or row.get("kind") or "?"


def replay(edgeguard, config, path):
    out = subprocess.run(
        [edgeguard, "replay", "--config", config, "--ordered", "--no-progress", "--output", "-", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def rows(edgeguard, config):
    for group, path in FIXTURES:
        data = [json.loads(line) for line in open(path, "rb") if line.strip()]
        for r, o in zip(data, replay(edgeguard, config, path), strict=True):
            yield group, r, o


def bin_of(score):
    for i in range(len(BINS) - 1):
        if BINS[i] <= score < BINS[i + 1]:
            return i
    return len(BINS) - 2


def bin_name(i):
    hi = min(BINS[i + 1], 1.0)
    return f"[{BINS[i]:g}, {hi:g}{']' if hi == 1.0 else ')'}"


def calibration(edgeguard, model):
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "c.json")
        json.dump({"models": {"bot": str(model)}, "mode": "log"}, open(config, "w"))
        scored = list(rows(edgeguard, config))
    print("| rows | score bin | requests | mean predicted | observed automated |")
    print("|---|---|---|---|---|")
    for group in ("captured", "generated"):
        bins = collections.defaultdict(lambda: [0, 0.0, 0])
        for g, r, o in scored:
            if g != group:
                continue
            s = o["scores"]["bot"]
            b = bins[bin_of(s)]
            b[0] += 1
            b[1] += s
            b[2] += label(r)
        for i in sorted(bins):
            n, total, bots = bins[i]
            print(f"| {group} | {bin_name(i)} | {n} | {total / n:.4f} | {bots / n:.4f} |")
    print()
    print("| family | rows | label | requests | mean predicted | observed automated | flagged at the shipped cut |")
    print("|---|---|---|---|---|---|---|")
    fams = collections.defaultdict(lambda: [0, 0.0, 0, 0])
    for g, r, o in scored:
        f = fams[(family(r), g, label(r))]
        f[0] += 1
        f[1] += o["scores"]["bot"]
        f[2] += label(r)
        f[3] += o["action"] == "log"
    for (name, g, lab), (n, total, bots, flagged) in sorted(fams.items()):
        who = "automated" if lab else "people"
        print(f"| {name} | {g} | {who} | {n} | {total / n:.4f} | {bots / n:.4f} | {flagged} |")


def reasons(edgeguard, model):
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "c.json")
        json.dump({"models": {"bot": str(model)}, "thresholds": {"bot": 0}, "mode": "log"}, open(config, "w"))
        scored = list(rows(edgeguard, config))
    fired = collections.defaultdict(lambda: [0, 0, collections.Counter()])
    totals = [0, 0]
    for _, r, o in scored:
        lab = label(r)
        totals[lab] += 1
        for rid in o.get("reasons", []):
            fired[rid][lab] += 1
            if lab:
                fired[rid][2][family(r)] += 1
    print(f"Requests: {totals[0]} people's, {totals[1]} automated.\n")
    print("| ID | people's requests | automated requests | automated families (most first) |")
    print("|---|---|---|---|")
    for rid, (people, bots, fams) in sorted(fired.items(), key=lambda kv: (-kv[1][1], kv[0])):
        top = ", ".join(f"{f} {n}" for f, n in fams.most_common(4))
        print(f"| `{rid}` | {people} | {bots} | {top} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edgeguard", default=str(ROOT / "target/release/edgeguard"))
    ap.add_argument("--model", default=str(ROOT / "models/bot.json"))
    ap.add_argument("--section", choices=["calibration", "reasons", "all"], default="all")
    a = ap.parse_args()
    if a.section in ("calibration", "all"):
        calibration(a.edgeguard, a.model)
    if a.section == "all":
        print()
    if a.section in ("reasons", "all"):
        reasons(a.edgeguard, a.model)


if __name__ == "__main__":
    sys.exit(main())
