#!/usr/bin/env python3
"""Replays the real-client corpus through edgeguard's decision logic and
prints, per client, how many requests a block-mode nginx would turn away.

    python3 models/capture/replay_report.py [--config nginx-conf/record.json]
        [--corpus tests/fixtures/real_clients/corpus.jsonl] [--by origin,flow]
        [--where label=human --where scope=wider]

It runs `edgeguard replay --config CONFIG --ordered --output ...` (the same
scoring code nginx runs, docs/replay.md) on the corpus and joins each
output line with the corpus labels. A request counts as flagged when the
replayed action is `block` or `log`: record.json runs the shipped models in
log mode, and a request logged there is one the shipped nginx.conf
(`mode = "block"`, the same list, models and thresholds) blocks.
"""

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(ROOT / "nginx-conf" / "record.json"))
    ap.add_argument("--corpus", default=str(ROOT / "tests" / "fixtures" / "real_clients" / "corpus.jsonl"))
    ap.add_argument("--edgeguard", default=str(ROOT / "target" / "release" / "edgeguard"))
    ap.add_argument("--by", default="", help="extra columns to split rows by, e.g. origin,flow")
    ap.add_argument("--show", type=int, default=0, help="print up to N flagged human requests")
    ap.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                    help="only rows whose column has this value (repeatable), e.g. scope=wider")
    args = ap.parse_args()
    where = [w.split("=", 1) for w in args.where]
    if any(len(w) != 2 for w in where):
        sys.exit("--where takes COLUMN=VALUE")

    rows = [json.loads(line) for line in open(args.corpus, "rb") if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scores.jsonl")
        p = subprocess.run(
            [args.edgeguard, "replay", "--config", args.config, "--ordered", "--no-progress",
             "--output", out, args.corpus],
            capture_output=True, text=True,
        )
        if p.returncode != 0:
            sys.exit(f"edgeguard replay failed ({p.returncode}):\n{p.stderr}")
        scored = {}
        for line in open(out):
            r = json.loads(line)
            scored[r["line"]] = r
    if len(scored) != len(rows):
        sys.exit(f"replay scored {len(scored)} of {len(rows)} corpus lines:\n{p.stderr}")

    extra = [c for c in args.by.split(",") if c]
    groups = collections.OrderedDict()
    for i, row in enumerate(rows, 1):
        if any(str(row.get(k, "")) != v for k, v in where):
            continue
        r = scored[i]
        key = (row["label"], row["class"], row["client_name"], *[str(row.get(c, "")) for c in extra])
        g = groups.setdefault(key, {"n": 0, "flagged": 0, "by": collections.Counter(), "max": {}})
        g["n"] += 1
        if r["action"] in ("block", "log"):
            g["flagged"] += 1
            g["by"][r["flagged"]] += 1
        for m, s in r["scores"].items():
            g["max"][m] = max(g["max"].get(m, 0.0), s)

    header = ["label", "class", "client", *extra, "requests", "flagged", "%", "by model", "max scores"]
    table = [header]
    for key, g in sorted(groups.items(), key=lambda kv: (kv[0][0] != "human", kv[0][1], kv[0][2:])):
        table.append([*key, str(g["n"]), str(g["flagged"]), f"{100.0 * g['flagged'] / g['n']:.1f}",
                      " ".join(f"{m}:{c}" for m, c in sorted(g["by"].items())) or "-",
                      " ".join(f"{m}={s:.3f}" for m, s in sorted(g["max"].items()))])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print(f"config: {args.config}\ncorpus: {args.corpus} ({len(rows)} requests)\n")
    for j, r in enumerate(table):
        numeric = range(len(header) - 5, len(header) - 2)  # requests, flagged, %
        print("  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if j == 0:
            print("  ".join("-" * w for w in widths))

    totals = collections.OrderedDict()
    for key, g in groups.items():
        t = totals.setdefault(key[1], [0, 0])
        t[0] += g["n"]
        t[1] += g["flagged"]
    print()
    for cls, (n, f) in totals.items():
        print(f"{cls}: {f} of {n} flagged ({100.0 * f / n:.1f} %)")

    if args.show:
        shown = 0
        for i, row in enumerate(rows, 1):
            r = scored[i]
            if any(str(row.get(k, "")) != v for k, v in where):
                continue
            if row["label"] == "human" and r["action"] in ("block", "log") and shown < args.show:
                shown += 1
                print(f"\n{row['session']} {row['flow']} {row['dest']} {row['method']} {row['uri']} "
                      f"{row['version']} scores={r['scores']}")
                headers = row["headers"]
                for k, v in (json.loads(headers) if isinstance(headers, str) else headers):
                    print(f"    {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
