#!/usr/bin/env python3
"""The tables of models/README.md, from models/metrics.json (what
models/train.py measured when it made the shipped models).

    python3 models/report.py [--metrics models/metrics.json]

Prints, as Markdown: the threshold and its rule; per held-out family of
people, where it comes from, its requests, how many pass at the cut the
other families give (leave-one-family-out) and at the shipped cut, its
score distribution out of sample, and how many of its degradations are
flagged; what the shipped cut leaves uncaught; the metamorphic check.
"""

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def pct(a, b):
    return "%.2f %%" % (100.0 * a / b) if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metrics", default=os.path.join(HERE, "metrics.json"))
    args = ap.parse_args()
    with open(args.metrics) as f:
        m = json.load(f)
    t = m["threshold"]["bot"]
    print("Shipped `bot` threshold: **%.4f** (%s).\n" % (t, m["threshold"]["rule"]))

    print("### Held-out families (people)\n")
    print("| family | rows from | requests | pass at the cut of the other families | that cut | pass at the "
          "shipped cut | degradations flagged at the shipped cut |")
    print("|---|---|---|---|---|---|---|")
    for f in m["held_out_families"]:
        print("| %s | %s | %d | %d (%s) | %.4f | %d (%s) | %d of %d |" % (
            f["family"], f["source"], f["people"], f["people_pass_without_family"],
            pct(f["people_pass_without_family"], f["people"]), f["threshold_without_family"],
            f["people_pass_at_shipped"], pct(f["people_pass_at_shipped"], f["people"]),
            f["degradations_flagged"], f["degradations"]))

    print("\n### Score distributions of people, out of sample (each family held out of training)\n")
    print("| family | requests | p50 | p90 | p99 | p99.9 | max |")
    print("|---|---|---|---|---|---|---|")
    for f in m["held_out_families"]:
        s = f["scores"]
        print("| %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f |" % (
            f["family"], s["requests"], s["p50"], s["p90"], s["p99"], s["p99.9"], s["max"]))

    u = m["uncaught"]
    print("\n### Automation at the shipped cut\n")
    print("| rows | requests | missed |")
    print("|---|---|---|")
    print("| generated automation, test split (judged: shows something no browser does, or claims no "
          "browser) | %d | %d |" % (u["generated_test"]["rows"], u["generated_test"]["missed"]))
    if "degraded_held_out" in u:
        print("| degradations of held-out families' people (out of sample) | %d | %d |" % (
            u["degraded_held_out"]["rows"], u["degraded_held_out"]["missed"]))
    print("| captured automation (in sample) | %d | %d |" % (u["captured"]["rows"], u["captured"]["missed"]))
    print("| unjudged: automation whose head is a browser's (never trained on) | %d | %d flagged |" % (
        u["unjudged_flagged"]["rows"], u["unjudged_flagged"]["flagged"]))
    misses = {}
    for key in ("generated_test", "degraded_held_out", "captured"):
        for k, n in u.get(key, {}).get("by_kind", u.get(key, {}).get("by_client", {})).items():
            misses[k] = misses.get(k, 0) + n
    if misses:
        print("\nMissed, by kind: " + ", ".join("%s %d" % kv for kv in sorted(misses.items(), key=lambda kv: -kv[1])))
    unjudged = {}
    for k, v in m.get("unjudged", {}).items():
        # degraded/<kind>:<detail>+<kind>...: by the first kind.
        key = k.split("+")[0].split(":")[0] if k.startswith("degraded/") else k.split("/")[0]
        unjudged[key] = unjudged.get(key, 0) + v["rows"]
    if unjudged:
        print("\nUnjudged rows (never trained on), by kind: " + ", ".join(
            "%s %d" % kv for kv in sorted(unjudged.items(), key=lambda kv: (-kv[1], kv[0]))))

    mm = m["metamorphic"]
    print("\n### Metamorphic check (CatBoost's own predictions)\n")
    print("%d people's heads, %d single degradations: %d lower the score by more than 0.02; the largest "
          "drop is %.4f (%s, %.4f -> %.4f)." % (
              mm["heads"], mm["degradations"], mm["violations"], mm["worst_drop"], mm["worst_kind"],
              mm["worst_scores"][0], mm["worst_scores"][1]))
    g = m.get("generator", {}).get("rejected_browserforge_sets", {})
    if g:
        print("\nbrowserforge sets drawn again (gen_traffic.py `sane`): " + ", ".join(
            "%s %d" % kv for kv in sorted(g.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
