#!/usr/bin/env python3
"""Measures issue 39's targets through real nginx (4 workers, the client
memory, the cookie and `behaviour` on) and prints the tables of
docs/behaviour.md `## Measured`:

- crawlers (tests/e2e/behaviour_crawlers.py) by kind, cookies and rate:
  sessions flagged within 10 and 30 navigations, and the median
  navigations, requests and seconds (nginx's clock) to the flag, and what
  flagged them (the behaviour, or the one-request model); the adaptive
  crawler (ADAPTIVE: a forged link's arrival) in rows of its own, out of
  the totals;
- people (tests/e2e/behaviour_people.py): the recorded sessions replayed
  as PEOPLE people behind one address: blocked, challenged, solved.

    target/venv/bin/python scripts/crawl-measure.py [--sessions 4] [--people 200] [--json out.json]

Slow rates run nginx's wall clock faster (libfaketime, behaviour_site.py):
SPEEDS says by how much, so every rate is sent at 10 to 50 requests a
second in real time.
"""

import argparse
import collections
import json
import pathlib
import statistics
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import behaviour_crawlers as crawlers  # noqa: E402
import behaviour_people as people  # noqa: E402
import behaviour_site  # noqa: E402

RATES = (0.1, 1.0, 5.0, 20.0, 50.0)
# nginx's clock speed per rate: the real rate is rate × speed.
SPEEDS = {0.1: 100, 1.0: 10, 5.0: 2, 20.0: 1, 50.0: 1}
# Sessions sent at once per batch: at 50/s each, more would be paced by
# this 2-core machine rather than by the crawler.
BATCH = {0.1: 40, 1.0: 40, 5.0: 20, 20.0: 10, 50.0: 4}


def measure_crawlers(sessions, navigations=30, kinds=crawlers.KINDS, rates=RATES, options=None):
    results = []
    first = 0
    for rate in rates:
        cases = [(k, keep, rate) for k in kinds for keep in (True, False) for _ in range(sessions)]
        with behaviour_site.Site(options=options, speed=SPEEDS[rate]) as site:
            for i in range(0, len(cases), BATCH[rate]):
                batch = cases[i:i + BATCH[rate]]
                results += crawlers.crawl_many(site, batch, navigations, first_source=(1, first))
                first += len(batch)
            bad = site.bad_log_lines()
            log = site.log()
        assert not bad, "nginx error log:\n" + "\n".join(bad[:5])
        # The rate nginx saw, per source: requests over the span of its clock.
        by_source = collections.defaultdict(list)
        for row in log:
            by_source[row["addr"]].append(row["t"])
        for r in results:
            ts = by_source.get(r["source"])
            if r["rate"] == rate and ts and len(ts) >= 5:
                r["seen_rate"] = (len(ts) - 1) / max(1e-6, max(ts) - min(ts))
    return results


def crawler_table(results):
    rows = ["| crawler | cookies | rate (req/s) | sessions | flagged by the model | behaviour ≤ 10 navs | "
            "behaviour ≤ 30 navs | median navs to behaviour flag | median requests | median seconds | "
            "rate nginx saw |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    cells = collections.defaultdict(list)
    for r in results:
        cells[(r["kind"], r["cookies"], r["rate"])].append(r)
    for (kind, cookies, rate), rs in cells.items():
        n = len(rs)
        model = sum(1 for r in rs if r["flagged_at"] is not None and r["flagged_at"] != r["behaviour_at"])
        hit = [r for r in rs if r["behaviour_at"] is not None]
        w10 = sum(1 for r in hit if r["behaviour_at"] <= 10)

        def med(key):
            return f"{statistics.median(r[key] for r in hit):g}" if hit else "-"
        seen = [r["seen_rate"] for r in rs if r.get("seen_rate")]
        seen_s = f"{statistics.median(seen):.2g}" if seen else "-"
        rows.append(f"| {kind} | {cookies} | {rate:g} | {n} | {model}/{n} | {w10}/{n} | {len(hit)}/{n} | "
                    f"{med('behaviour_at')} | {med('requests_to_flag')} | {med('seconds_to_flag')} | {seen_s} |")
    return "\n".join(rows)


def crawler_totals(results):
    """(sessions, flagged within 10 navigations, within 30), flagged by any
    reason (the challenge a crawler meets), and the same by the behaviour."""
    n = len(results)

    def first(r):
        return min(x for x in (r["flagged_at"], r["behaviour_at"]) if x is not None) \
            if (r["flagged_at"] or r["behaviour_at"]) else None
    any10 = sum(1 for r in results if first(r) is not None and first(r) <= 10)
    any30 = sum(1 for r in results if first(r) is not None)
    b10 = sum(1 for r in results if r["behaviour_at"] is not None and r["behaviour_at"] <= 10)
    b30 = sum(1 for r in results if r["behaviour_at"] is not None)
    return n, any10, any30, b10, b30


def measure_people(count, speed=20, options=None, seed=39):
    with behaviour_site.Site(options=options, speed=speed) as site:
        ps = people.replay_people(site, count=count, seed=seed)
        bad = site.bad_log_lines()
        log = site.log()
    assert not bad, "nginx error log:\n" + "\n".join(bad[:5])
    return ps, log


def people_table(ps):
    rows = ["| session | browser | people | requests | blocked | challenged | solved |", "|---|---|---|---|---|---|---|"]
    cells = collections.defaultdict(list)
    for p in ps:
        name = p.session["name"] + ("" if p.session["variant"] == "default" else "-" + p.session["variant"])
        cells[(name, p.session["browser"])].append(p)
    for (name, browser), group in sorted(cells.items()):
        out = collections.Counter(people.outcome(p) for p in group)
        solved = sum(1 for p in group if people.outcome(p) == "challenged" and people.solved_all(p))
        reqs = sum(len(p.answers) for p in group)
        rows.append(f"| {name} | {browser} | {len(group)} | {reqs} | {out['blocked']} | {out['challenged']} | {solved} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=4, help="crawl sessions per crawler, cookies and rate")
    ap.add_argument("--people", type=int, default=200)
    ap.add_argument("--json", help="write every session's result here")
    ap.add_argument("--skip-crawlers", action="store_true")
    ap.add_argument("--skip-people", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    report = {}
    if not args.skip_crawlers:
        t = time.monotonic()
        results = measure_crawlers(args.sessions, kinds=crawlers.KINDS + (crawlers.ADAPTIVE,))
        print(crawler_table(results))
        # The totals are the crawlers; the adaptive one (forging a
        # link's arrival) is its own row above.
        groups = (("all crawl sessions", lambda r: r["kind"] in crawlers.KINDS),
                  ("browser-identical heads keeping cookies",
                   lambda r: r["kind"] in ("curl_cffi-h2", "requests-chrome") and r["cookies"] == "keep"))
        for name, keep in groups:
            n, any10, any30, b10, b30 = crawler_totals([r for r in results if keep(r)])
            print(f"\n{name}: {n}; flagged (any reason) within 10 navigations {any10} "
                  f"({100 * any10 / n:.1f} %), within 30 {any30} ({100 * any30 / n:.1f} %); by the behaviour "
                  f"within 10 {b10} ({100 * b10 / n:.1f} %), within 30 {b30} ({100 * b30 / n:.1f} %)")
        print(f"{time.monotonic() - t:.0f} s\n")
        report["crawlers"] = results
    if not args.skip_people:
        t = time.monotonic()
        ps, log = measure_people(args.people)
        print(people_table(ps))
        out = collections.Counter(people.outcome(p) for p in ps)
        cookies = collections.Counter(r["cookie"] for r in log)
        print(f"\n{len(ps)} people behind 127.0.0.1, {sum(len(p.answers) for p in ps)} requests: "
              f"{out['blocked']} blocked, {out['challenged']} challenged "
              f"({100 * out['challenged'] / len(ps):.1f} %); $edgeguard_client_cookie over the requests: "
              f"{dict(cookies)}; {time.monotonic() - t:.0f} s")
        report["people"] = [{"session": p.session["name"], "browser": p.session["browser"],
                             "variant": p.session["variant"], "outcome": people.outcome(p),
                             "answers": p.answers, "solved": p.solved} for p in ps]
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
