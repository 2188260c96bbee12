#!/usr/bin/env python3
"""Scores the captured real-client corpus with the shipped models and prints
the per-client tables of models/README.md (`make eval-real`).

    python3 models/eval_real.py [--edgeguard target/release/edgeguard] [--detail]

Every request of tests/fixtures/real_clients/corpus.jsonl goes through
`edgeguard replay` (the scoring and decision code nginx runs, with each
model's own threshold) twice: with the shipped bot model, as
nginx-conf/nginx.conf loads it (after), and with the first models, bot and
spoof, in models/legacy/ (before). Printed, as Markdown:

  1. per client class and client: requests, how many came over TLS with
     a fingerprint and its TLS family, flagged before and after (and, with
     --compare-rev REV, with the models of that git revision, e.g. the
     schema-2 header-only models: the TLS columns' "before");
  2. with --detail: per client, protocol, origin and flow, the requests,
     flagged after, and the min / median / max bot score after;
  3. the targets of issue 12 and whether they are met.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import corpus  # noqa: E402

SCRIPTED = corpus.SCRIPTED
DIFFERING = (corpus.HEADLESS,)


def replay(edgeguard, models, rows, extra=None):
    """The replay's output line of every row, in order (`extra`: more
    options of the configuration)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "config.json")
        with open(config, "w") as f:
            json.dump({"models": models, "mode": "block", **(extra or {})}, f)
        inp = os.path.join(tmp, "requests.jsonl")
        with open(inp, "w") as f:
            for r in rows:
                f.write(corpus.request_line(r) + "\n")
        proc = subprocess.run([edgeguard, "replay", "--config", config, "--output", "-", "--ordered",
                               "--no-progress", "--summary", os.path.join(tmp, "summary.txt"), inp],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit("edgeguard replay failed:\n" + proc.stderr[-2000:])
        out = [json.loads(line) for line in proc.stdout.splitlines()]
    if len(out) != len(rows):
        sys.exit("edgeguard replay printed %d lines for %d requests" % (len(out), len(rows)))
    return out


# The address of every front in scripts/deployment-measure.py: what each
# edge's trusted_proxies holds.
FRONT_PEERS = ["127.0.0.1/32"]


def replay_through(edgeguard, models, rows):
    """Replay's output line of every row, each judged with its own
    deployment: the edge's `profile` (trusting the fronts' address) or, for
    `direct`, as sent."""
    out = [None] * len(rows)
    for profile in sorted({r["profile"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["profile"] == profile]
        extra = {} if profile == "direct" else {"trusted_proxies": FRONT_PEERS, "proxy_profile": profile}
        for i, o in zip(idx, replay(edgeguard, models, [rows[i] for i in idx], extra)):
            out[i] = o
    return out


def verdict(out):
    """blocked, challenged or passed, as mode block answers: certain
    automation is blocked; an ambiguous verdict gets the challenge when
    challenge_secret is set (the page for a navigation, the
    `challenge_required` problem document otherwise), is logged without
    (as in this replay's configuration)."""
    if not flagged(out):
        return "passed"
    return "blocked" if out.get("grade") == "certain" else "challenged"


def through_table(rows, outs, as_sent=None):
    """Markdown: people per front and family, held out (never trained on),
    flagged, blocked and challenged in block mode, and (`as_sent`: the
    same rows judged without their profile) flagged without the profile.
    Returns per front (judged, flagged, blocked)."""
    groups = collections.OrderedDict()
    as_sent = as_sent or [None] * len(rows)
    for r, o, d in sorted(zip(rows, outs, as_sent), key=lambda x: (x[0]["front"], x[0]["family"])):
        if not corpus.judged(r) or not r["human"]:
            continue
        g = groups.setdefault((r["front"], r["profile"], r["family"]), collections.Counter())
        g["n"] += 1
        g[verdict(o)] += 1
        g["as_sent"] += bool(d and flagged(d))
    print("| front | profile | family | people | flagged | blocked | challenged | flagged without the profile |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    fronts = collections.OrderedDict()
    for (front, profile, fam), g in groups.items():
        flagged_n = g["blocked"] + g["challenged"]
        without = "-" if profile == "direct" else "%d (%s)" % (g["as_sent"], pct(g["as_sent"], g["n"]))
        print("| %s | %s | %s | %d | %d (%s) | %d (%s) | %d (%s) | %s |" % (
            front, profile, fam, g["n"], flagged_n, pct(flagged_n, g["n"]), g["blocked"],
            pct(g["blocked"], g["n"]), g["challenged"], pct(g["challenged"], g["n"]), without))
        f = fronts.setdefault(front, collections.Counter())
        f["judged"] += g["n"]
        f["flagged"] += flagged_n
        f["blocked"] += g["blocked"]
    return fronts


def models_in(directory, names):
    directory = os.path.abspath(directory)
    return {name: os.path.join(directory, name + ".json") for name in names}


def flagged(out):
    return out["action"] != "pass"


def pct(a, b):
    return "%.1f %%" % (100.0 * a / b) if b else "-"


def summary(rows, before, after, compare=None, compare_name=""):
    groups = {}
    compare = compare or [None] * len(rows)
    for r, b, a, c in zip(rows, before, after, compare):
        g = groups.setdefault((r["class"], r["name"]), {"n": 0, "before": 0, "after": 0, "versions": set(),
                                                        "tls": 0, "families": collections.Counter(),
                                                        "cmp": 0, "tls_cmp": 0, "tls_after": 0})
        g["n"] += 1
        g["before"] += flagged(b)
        g["after"] += flagged(a)
        g["versions"].add(r["client_version"])
        if r.get("ja4"):
            g["tls"] += 1
            g["families"][r.get("tls_family") or "?"] += 1
            g["tls_after"] += flagged(a)
        if c is not None:
            g["cmp"] += flagged(c)
            if r.get("ja4"):
                g["tls_cmp"] += flagged(c)
    head = "| class | client | version | requests | over TLS | TLS family | flagged before (legacy models) |"
    rule = "|---|---|---|---|---|---|---|"
    if compare[0] is not None:
        head += " flagged, %s |" % compare_name
        rule += "---|"
    head += " flagged after (shipped) |"
    rule += "---|"
    if compare[0] is not None:
        head += " over TLS: flagged %s -> shipped |" % compare_name
        rule += "---|"
    print(head)
    print(rule)
    order = {"human": 0, SCRIPTED: 1, "headless": 2, corpus.COPIED: 3, "impersonation": 4, corpus.BYTE_IDENTICAL: 5}
    for (cls, name), g in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1])):
        fams = ", ".join(f for f, _ in g["families"].most_common()) or "-"
        line = "| %s | %s | %s | %d | %d | %s | %d (%s) |" % (
            cls, name, ", ".join(sorted(g["versions"])), g["n"], g["tls"], fams, g["before"],
            pct(g["before"], g["n"]))
        if compare[0] is not None:
            line += " %d (%s) |" % (g["cmp"], pct(g["cmp"], g["n"]))
        line += " %d (%s) |" % (g["after"], pct(g["after"], g["n"]))
        if compare[0] is not None:
            line += " %d -> %d of %d |" % (g["tls_cmp"], g["tls_after"], g["tls"])
        print(line)


def detail(rows, after):
    groups = {}
    for r, a in zip(rows, after):
        key = (r["class"], r["name"], r["protocol"], r["origin"], r["flow"])
        g = groups.setdefault(key, {"n": 0, "flagged": 0, "scores": []})
        g["n"] += 1
        g["flagged"] += flagged(a)
        g["scores"].append(a["scores"].get("bot", float("nan")))
    print("| class | client | protocol | origin | flow | requests | flagged | bot min | bot median | bot max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        g = groups[key]
        s = g["scores"]
        print("| %s | %s | %s | %s | %s | %d | %d | %.4f | %.4f | %.4f |" % (
            *key, g["n"], g["flagged"], min(s), statistics.median(s), max(s)))


def targets(rows, after):
    def count(pred):
        sel = [(r, a) for r, a in zip(rows, after) if pred(r)]
        return sum(flagged(a) for _, a in sel), len(sel)

    human_secure = count(lambda r: r["human"] and r["origin"] != "http-host")
    human_plain = count(lambda r: r["human"] and r["origin"] == "http-host")
    scripted = count(lambda r: r["class"] == SCRIPTED)
    differing = count(lambda r: r["class"] in DIFFERING)
    copied = count(lambda r: r["class"] == corpus.COPIED and corpus.judged(r))
    identical = count(lambda r: not corpus.judged(r))
    lines = [
        ("real-browser requests blocked, TLS and 127.0.0.1 origins", "0", human_secure,
         human_secure[0] == 0),
        ("real-browser requests blocked, plain-HTTP hostnames", "<= 0.5 %", human_plain,
         human_plain[1] == 0 or human_plain[0] <= 0.005 * human_plain[1]),
        ("scripted clients flagged", ">= 99 %", scripted, scripted[1] == 0 or scripted[0] >= 0.99 * scripted[1]),
        ("headless clients whose bytes differ, flagged", ">= 95 %", differing,
         differing[1] == 0 or differing[0] >= 0.95 * differing[1]),
        ("scripts with a browser's copied headers, over TLS, flagged", ">= 95 %", copied,
         copied[1] == 0 or copied[0] >= 0.95 * copied[1]),
    ]
    print("| target | wanted | measured | met |")
    print("|---|---|---|---|")
    ok = True
    for what, wanted, (k, n), met in lines:
        ok &= met
        print("| %s | %s | %d of %d (%s) | %s |" % (what, wanted, k, n, pct(k, n), "yes" if met else "**no**"))
    print("| byte-identical automation, exact impersonation, copied headers over plain HTTP (own row, not counted)"
          " | - | %d of %d flagged (%s) | - |" % (identical[0], identical[1], pct(*identical)))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgeguard", help="edgeguard binary (default: target/release/edgeguard)")
    ap.add_argument("--corpus", default=corpus.CORPUS)
    ap.add_argument("--models", default=HERE, help="directory of the models after (default: models/)")
    ap.add_argument("--legacy", default=os.path.join(HERE, "legacy"), help="directory of the models before")
    ap.add_argument("--detail", action="store_true", help="also the protocol x origin x flow table")
    # What nginx-conf/nginx.conf loads now, and what it loaded before.
    ap.add_argument("--after-models", default="bot", help="models after, comma-separated (default: %(default)s)")
    ap.add_argument("--before-models", default="bot,spoof", help="legacy models (default: %(default)s)")
    ap.add_argument("--through", nargs="?", const=corpus.THROUGH, metavar="DIR",
                    help="also the people front proxies delivered (default: %s), each judged with its "
                         "edge's profile" % os.path.relpath(corpus.THROUGH, ROOT))
    ap.add_argument("--compare-rev", help="also score with the models/ of this git revision (e.g. the last "
                                          "schema-2 models, 357f6ce), in their own column")
    args = ap.parse_args()
    edgeguard = args.edgeguard or os.path.join(ROOT, "target", "release", "edgeguard")
    rows = corpus.load(args.corpus)
    if not rows:
        sys.exit("no corpus at %s (make capture)" % args.corpus)
    before = replay(edgeguard, models_in(args.legacy, args.before_models.split(",")), rows)
    after = replay(edgeguard, models_in(args.models, args.after_models.split(",")), rows)
    compare = None
    if args.compare_rev:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.after_models.split(","):
                blob = subprocess.run(["git", "-C", ROOT, "show", "%s:models/%s.json" % (args.compare_rev, name)],
                                      capture_output=True, check=True).stdout
                with open(os.path.join(tmp, name + ".json"), "wb") as f:
                    f.write(blob)
            compare = replay(edgeguard, models_in(tmp, args.after_models.split(",")), rows)
    print("### Per client (%d captured requests)\n" % len(rows))
    summary(rows, before, after, compare, "models of %s" % args.compare_rev)
    if args.detail:
        print("\n### Per client, protocol, origin and flow (shipped models)\n")
        detail(rows, after)
    print("\n### Targets (shipped models, their own thresholds)\n")
    ok = targets(rows, after)
    if args.through:
        through = corpus.load_through(args.through)
        if not through:
            sys.exit("no through-proxy rows in %s (scripts/deployment-measure.py --record)" % args.through)
        print("\n### Behind front proxies, held out by family (%d requests)\n" % len(through))
        models = models_in(args.models, args.after_models.split(","))
        as_sent = replay(edgeguard, models, through)
        through_table(through, replay_through(edgeguard, models, through), as_sent)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
