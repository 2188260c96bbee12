#!/usr/bin/env python3
"""Train edgeguard's shipped bot models: a model that judges the software
that sent a request, from what one request can show.

    python3 models/train.py                       # everything, as shipped (reproduces models/*.json)
    python3 models/train.py --count 20000 --no-holdout --out target/try   # a quick experiment

The principle (models/README.md): the model reads what the request says
about the software (header set, order, values and their consistency with
the User-Agent, client hints, fetch metadata, protocol, TLS: feature schema
4), nothing about the page or the visit; its labels mean what one request
can show; its evidence is monotone; its thresholds come from people.

Steps:
  1. generate labelled traffic with models/gen_traffic.py (--seed, --count)
     and read the captured real-client corpus (models/corpus.py); people's
     heads are the captured browsers' and browserforge's (generated,
     family `generated:<browser>-<platform>`); generated rows get the TLS
     facts their client would have sent (models/tls_traffic.py);
  2. positives: the captured and generated automated clients, and
     degradations of people's heads (models/degrade.py: --degradations per
     generated head, --captured-degradations per captured one); every
     automated row whose User-Agent claims a browser must show evidence
     (schema-4 evidence > 0), else it is reported as unjudged and never
     trained on: a head a browser sends byte for byte is no positive;
  3. split the generated rows by seed into train (70 %), validation (15 %)
     and test (15 %); a degradation goes where its person's head went;
     captured rows are training rows (weight --captured-weight);
  4. learn the header-order table (`edgeguard features --learn-orders
     --software`: Chromium's and Firefox's orders among the headers a
     browser sends because of what it is) from the training people, out of
     fold for the training people themselves (--folds), and turn every row
     into its schema-4 vector with the Rust extractor;
  5. train the CatBoost models with a monotone (+1) constraint on every
     evidence feature:
       bot   - automated (1) vs person (0), all judged rows;
       spoof - the same, on the rows whose User-Agent claims a browser;
  6. held-out families (every family of people, captured and generated):
     the bot model trained again without the family's people, their
     degradations, the family's captured automation and their orders; the
     family's people and degradations scored out of sample;
  7. the threshold rule, from those held-out people (--max-people-share,
     --margin): the lowest cut such that no held-out family has more than
     0.1 % of its people's requests at or over it, raised by a margin in
     log-odds; each family is also measured at the cut the other families
     alone give (leave-one-family-out);
  8. export models/<name>.json with the threshold, schema, order table and
     rule in the metadata, models/metrics.json, and the fixtures that depend
     on the models: tests/fixtures/traffic/sample.jsonl (vectors and
     official predictions of generated requests) and people.jsonl (heads of
     the generated families, for the metamorphic and page-invariance tests).
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys

import numpy as np
import pandas as pd
from catboost import CatBoostClassifier, Pool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import degrade  # noqa: E402
import tls_traffic  # noqa: E402

# Each model is read by every nginx worker at (re)load and by the pure-Lua
# engine.
MAX_JSON_BYTES = 1_600_000
# The scorer's fastest kernel (AVX-512, src/model/trees.rs) holds a model's
# conditions in a 512-byte table: a model with more runs the AVX2 one.
MAX_CONDITIONS = 512
SCHEMA = 4
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "traffic")
# People heads per generated family in tests/fixtures/traffic/people.jsonl.
PEOPLE_PER_FAMILY = 40


# ------------------------------------------------------------------ features

class Extractor:
    """`edgeguard features --schema 4` over lists of request rows."""

    def __init__(self, binary, work):
        self.binary = binary
        self.work = work
        names = json.loads(self._run(["features", "--names", "--schema", str(SCHEMA)]).decode())
        self.float_names, self.cat_names = names["float"], names["cat"]
        self.evidence = names["evidence"]

    def _run(self, args, stdin=None):
        proc = subprocess.run([self.binary] + args, input=stdin, capture_output=True, check=False)
        if proc.returncode != 0:
            sys.exit("edgeguard %s failed:\n%s" % (" ".join(args), proc.stderr.decode()[-2000:]))
        return proc.stdout

    @staticmethod
    def _lines(rows):
        return "".join(corpus.request_line(r) + "\n" for r in rows).encode()

    def learn(self, rows, min_count):
        return self._run(["features", "--learn-orders", "--software", "--min-count", str(min_count)],
                         self._lines(rows)).decode().strip()

    def vectors(self, rows, table):
        path = os.path.join(self.work, "orders.txt")
        with open(path, "w") as f:
            f.write(table)
        out = self._run(["features", "--schema", str(SCHEMA), "--orders", path],
                        self._lines(rows)).decode().splitlines()
        if len(out) != len(rows):
            sys.exit("edgeguard features printed %d vectors for %d requests" % (len(out), len(rows)))
        return [json.loads(line) for line in out]

    def frame(self, vectors):
        floats = np.array([[math.nan if x is None else x for x in v["float"]] for v in vectors], dtype=np.float64)
        df = pd.DataFrame(floats, columns=self.float_names)
        for j, name in enumerate(self.cat_names):
            df[name] = [v["cat"][j] for v in vectors]
        return df

    def monotone(self):
        """CatBoost's monotone_constraints: +1 on every evidence feature."""
        return [1 if n in self.evidence else 0 for n in self.float_names] + [0] * len(self.cat_names)

    def evidence_sum(self, df):
        return df[self.evidence].fillna(0).sum(axis=1).to_numpy()


def features_with_folds(ex, rows, learnable, folds, seed, min_count):
    """Vectors of every row: the rows in `learnable` (training people) out
    of fold, every other row with the table of all of them. Returns
    (vectors, full table)."""
    full = ex.learn([r for r, ok in zip(rows, learnable) if ok], min_count)
    vectors = ex.vectors(rows, full)
    fold = np.random.RandomState(seed + 7).randint(0, folds, size=len(rows))
    for k in range(folds):
        table = ex.learn([r for r, ok, f in zip(rows, learnable, fold) if ok and f != k], min_count)
        idx = [i for i in range(len(rows)) if learnable[i] and fold[i] == k]
        for i, v in zip(idx, ex.vectors([rows[i] for i in idx], table)):
            vectors[i] = v
    return vectors, full


# ----------------------------------------------------------------- measuring

def logit(p):
    p = min(max(p, 1e-300), 1 - 1e-16)
    return math.log(p / (1 - p))


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def family_cut(scores, share):
    """The lowest cut over which at most floor(share * n) of `scores` are
    (flagged = score >= cut): just above the (k+1)-th highest score."""
    s = np.sort(np.asarray(scores))[::-1]
    k = int(math.floor(share * len(s)))
    if k >= len(s):
        return 0.0
    return float(np.nextafter(s[k], 1.0))


def people_threshold(held_out, share, margin, leave_out=None):
    """The threshold rule: the lowest cut such that no family of people in
    `held_out` ({family: scores}) has more than `share` of its requests at
    or over it, raised by `margin` in log-odds. `leave_out`: a family the
    rule does not see (the leave-one-family-out check)."""
    cuts = {f: family_cut(s, share) for f, s in held_out.items() if f != leave_out and len(s)}
    worst = max(cuts, key=cuts.get)
    t = cuts[worst]
    return min(sigmoid(logit(t) + margin), 1 - 1e-9), worst


def roc_auc(y, p):
    order = np.argsort(p, kind="stable")
    ranks = np.empty(len(p))
    sorted_p = p[order]
    i = 0
    while i < len(p):
        j = i
        while j + 1 < len(p) and sorted_p[j + 1] == sorted_p[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = y.sum()
    neg = len(y) - pos
    if not pos or not neg:
        return float("nan")
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


def metrics(y, p, threshold):
    flagged = p >= threshold
    tp = int((flagged & (y == 1)).sum())
    fp = int((flagged & (y == 0)).sum())
    fn = int((~flagged & (y == 1)).sum())
    return {
        "rows": int(len(y)),
        "positives": int(y.sum()),
        "roc_auc": round(roc_auc(y, p), 5),
        "precision": round(tp / max(1, tp + fp), 5),
        "recall": round(tp / max(1, tp + fn), 5),
        "false_positives": fp,
        "false_negatives": fn,
    }


def by_key(keys, good):
    out = {}
    for k, g in zip(keys, good):
        e = out.setdefault(k, [0, 0])
        e[0] += 1
        e[1] += int(g)
    return {k: {"rows": n, "ok": ok} for k, (n, ok) in sorted(out.items())}


def distribution(scores):
    s = np.asarray(scores)
    q = lambda x: float(np.quantile(s, x))  # noqa: E731
    return {"requests": int(len(s)), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p99.9": q(0.999),
            "max": float(s.max())}


# ------------------------------------------------------------------ training

def fit(ex, df, y, w, train, val, seed, args):
    model = CatBoostClassifier(
        iterations=args.iterations,
        depth=args.depth,
        learning_rate=args.learning_rate,
        loss_function="Logloss",
        random_seed=seed,
        max_ctr_complexity=1,
        one_hot_max_size=args.one_hot_max_size,
        border_count=args.border_count,
        monotone_constraints=ex.monotone(),
        use_best_model=True,
        od_type="Iter",
        od_wait=60,
        thread_count=2,
        verbose=False,
        allow_writing_files=False,
    )
    model.fit(Pool(df[train], y[train], cat_features=ex.cat_names, weight=w[train]),
              eval_set=Pool(df[val], y[val], cat_features=ex.cat_names))
    return model


def proba(model, df, cat_names):
    if len(df) == 0:
        return np.zeros(0)
    return model.predict_proba(Pool(df, cat_features=cat_names))[:, 1]


def export(model, name, threshold, rule, table, args, counts, out_dir, columns):
    meta = model.get_metadata()
    meta["edgeguard.threshold"] = repr(threshold)
    meta["edgeguard.threshold_raw"] = repr(logit(threshold))
    meta["edgeguard.threshold_rule"] = rule
    meta["edgeguard.label"] = name
    meta["edgeguard.schema"] = str(SCHEMA)
    meta["edgeguard.order_pairs"] = table
    meta["edgeguard.training"] = ("gen_traffic.py --seed %d --count %d, %d captured requests, %d degraded heads"
                                  % (args.seed, args.count, counts["captured"], counts["degraded"]))
    path = os.path.join(out_dir, name + ".json")
    model.save_model(path, format="json")
    size = os.path.getsize(path)
    if size > MAX_JSON_BYTES:
        sys.exit("%s is %d bytes, over the %d budget: lower --iterations" % (path, size, MAX_JSON_BYTES))
    with open(path) as f:
        exported = json.load(f)
    info = exported["features_info"]
    ids = [f.get("feature_id") for f in info.get("float_features", [])] + \
          [f.get("feature_id") for f in info.get("categorical_features", [])]
    if ids != columns:
        sys.exit("%s: exported feature ids %s differ from the schema %s" % (path, ids, columns))
    conditions = len({json.dumps(s, sort_keys=True) for t in exported["oblivious_trees"] for s in t["splits"]})
    if conditions > MAX_CONDITIONS:
        sys.exit("%s has %d distinct conditions, over the %d of the AVX-512 kernel: lower --border-count"
                 % (path, conditions, MAX_CONDITIONS))
    kept = exported.get("model_info", {})
    for key, want in (("edgeguard.threshold", repr(threshold)), ("edgeguard.schema", str(SCHEMA)),
                      ("edgeguard.order_pairs", table)):
        if kept.get(key) != want:
            sys.exit("%s: the JSON export lost model_info[%r]" % (path, key))
    return size, conditions


# ---------------------------------------------------------------------- data

def degraded_rows(people, n_each, seed):
    """Positive rows made from people's heads: `n_each[i]` degradations of
    `people[i]` (one to three mistakes each). Each knows its source."""
    rng = random.Random("degrade-%d" % seed)
    out = []
    for i, row in enumerate(people):
        for _ in range(n_each[i]):
            kinds, new = degrade.sample(row, rng)
            if kinds:
                new = {k: new[k] for k in ("method", "uri", "version", "client", "headers", "ja4", "tls_family")}
                out.append((i, "+".join(kinds), new))
    return out


class Data:
    """Every row and what train.py knows about it, as aligned arrays."""

    def __init__(self, args, ex):
        work = ex.work
        traffic = os.path.join(work, "train-seed%d-count%d.jsonl" % (args.seed, args.count))
        stats = traffic + ".stats"
        subprocess.run([sys.executable, os.path.join(HERE, "gen_traffic.py"), "--seed", str(args.seed), "--count",
                        str(args.count), "--out", traffic, "--stats", stats], check=True)
        with open(traffic) as f:
            gen = [json.loads(line) for line in f]
        with open(stats) as f:
            self.generator_stats = json.load(f)
        self.captured_all = corpus.load(args.corpus)
        captured = [r for r in self.captured_all if corpus.judged(r)]
        self.tls_pools = tls_traffic.pools(self.captured_all)
        gen = tls_traffic.assign(gen, self.tls_pools, args.seed)
        n_gen = len(gen)
        gen_split = np.random.RandomState(args.seed).choice(3, size=n_gen, p=[0.70, 0.15, 0.15])

        # People's heads and where each went.
        people = [(r, gen_split[i], r["family"], False) for i, r in enumerate(gen) if r["automated"] == 0]
        people += [(r, 0, r["family"], True) for r in captured if r["human"]]
        n_each = [args.captured_degradations if cap else args.degradations for _, _, _, cap in people]
        degraded = degraded_rows([p[0] for p in people], n_each, args.seed)

        rows, kind, split, human, family, is_cap, detail, source = [], [], [], [], [], [], [], []
        for i, r in enumerate(gen):
            rows.append(r)
            kind.append("generated")
            split.append(gen_split[i])
            human.append(r["automated"] == 0)
            family.append(r.get("family", ""))
            is_cap.append(False)
            detail.append("%s/%s" % (r["kind"], r["detail"]))
            source.append(-1)
        for r in captured:
            rows.append(r)
            kind.append("captured")
            split.append(0)
            human.append(r["human"])
            family.append(r["family"])
            is_cap.append(True)
            detail.append("captured/%s/%s" % (r["class"], r["name"]))
            source.append(-1)
        for src, kinds, r in degraded:
            p_row, p_split, p_family, p_cap = people[src]
            rows.append(r)
            kind.append("degraded")
            split.append(p_split)
            human.append(False)
            family.append(p_family)
            is_cap.append(p_cap)
            detail.append("degraded/" + kinds)
            source.append(src)
        self.rows = rows
        self.kind = np.array(kind)
        self.split = np.array(split)
        self.human = np.array(human)
        self.family = np.array(family)
        self.is_cap = np.array(is_cap)
        self.detail = np.array(detail)
        self.source = np.array(source)
        self.y = (~self.human).astype(int)
        self.weight = np.where(self.is_cap, args.captured_weight, 1.0)
        self.people_families = sorted(set(self.family[self.human]))
        self.n_gen = n_gen

    def automation_of(self, fam):
        """Captured automation of a people family's own client (held out
        with it: headless Chromium's heads are headful Chromium's)."""
        return (self.kind == "captured") & ~self.human & (self.family == fam)


# -------------------------------------------------------------------- report

def judged_rows(ex, df, data):
    """People, and automation that shows something: a User-Agent claiming no
    browser, or evidence."""
    claims = (df["ua_claim"] == "browser").to_numpy()
    evidence = ex.evidence_sum(df)
    return data.human | ~claims | (evidence > 0), claims, evidence


def holdout_families(ex, data, judged, args, wanted):
    """Per family of people: the bot model trained without it; its people's
    and its degradations' scores, out of sample."""
    results = {}
    train_base = (data.split == 0) & judged
    val_base = (data.split == 1) & judged
    for fam in wanted:
        out = (data.family == fam) & (data.human | (data.kind == "degraded") | data.automation_of(fam))
        keep_train = train_base & ~out
        learnable = keep_train & data.human
        vectors, _ = features_with_folds(ex, data.rows, learnable, args.folds, args.seed, args.min_pair_count)
        df = ex.frame(vectors)
        model = fit(ex, df, data.y, data.weight, keep_train, val_base & ~out, args.seed, args)
        people = (data.family == fam) & data.human
        degraded = (data.family == fam) & (data.kind == "degraded") & judged
        results[fam] = {
            "people": proba(model, df[people], ex.cat_names),
            "degraded": proba(model, df[degraded], ex.cat_names),
            "degraded_detail": data.detail[degraded],
            "people_index": np.where(people)[0],
            "trees": int(model.tree_count_),
        }
        print("held out %-34s %6d people (max %.4f), %6d degradations (min %.4f)" % (
            fam, people.sum(), results[fam]["people"].max(), degraded.sum(),
            results[fam]["degraded"].min() if degraded.any() else float("nan")), flush=True)
        if args.families:  # an experiment: say who scores highest, and why
            for j in np.argsort(-results[fam]["people"])[:3]:
                i = results[fam]["people_index"][j]
                row = df.iloc[i]
                print("   %.4f %s %s %s" % (results[fam]["people"][j], data.detail[i], {
                    n: row[n] for n in ex.float_names + ex.cat_names if row[n] == row[n] and row[n] not in (0, "")},
                    [h[0] for h in data.rows[i]["headers"]]))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60000, help="generated requests")
    ap.add_argument("--edgeguard", help="edgeguard binary (default: build target/release/edgeguard)")
    ap.add_argument("--corpus", default=corpus.CORPUS, help="captured corpus (default: %(default)s)")
    ap.add_argument("--captured-weight", type=float, default=5.0,
                    help="sample weight of a captured request (a generated one weighs 1)")
    ap.add_argument("--degradations", type=int, default=1, help="degradations per generated person's head")
    ap.add_argument("--captured-degradations", type=int, default=4,
                    help="degradations per captured person's head")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--min-pair-count", type=int, default=2,
                    help="a header pair enters the order table once this many training people sent it")
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--learning-rate", type=float, default=0.15)
    ap.add_argument("--one-hot-max-size", type=int, default=32,
                    help="ua_family (22 values) one-hot, no CTR: every family is its own condition")
    ap.add_argument("--border-count", type=int, default=254, help="borders per float feature (CatBoost's default)")
    ap.add_argument("--max-people-share", type=float, default=0.001,
                    help="threshold rule: the most any held-out family of people may have over the cut")
    ap.add_argument("--margin", type=float, default=1.0, help="threshold rule: the margin in log-odds")
    ap.add_argument("--fixture-count", type=int, default=200)
    ap.add_argument("--no-holdout", action="store_true",
                    help="skip the held-out-family runs (the threshold then comes from the people of the "
                         "validation split and the captured ones, in sample: experiments only)")
    ap.add_argument("--families", help="comma-separated: hold out only these families (default: every one)")
    ap.add_argument("--out", default=HERE, help="where the models and metrics.json go (default: models/)")
    ap.add_argument("--fixture-only", action="store_true",
                    help="only rewrite the fixtures (sample.jsonl, people.jsonl) from the models in --out")
    args = ap.parse_args()

    edgeguard = args.edgeguard
    if edgeguard is None:
        subprocess.run(["cargo", "build", "--release", "--locked", "--bin", "edgeguard"], cwd=ROOT, check=True)
        edgeguard = os.path.join(ROOT, "target", "release", "edgeguard")
    work = os.path.join(ROOT, "target", "traffic")
    os.makedirs(work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    ex = Extractor(edgeguard, work)
    if args.fixture_only:
        models = {}
        for name in ("bot", "spoof"):
            models[name] = CatBoostClassifier()
            models[name].load_model(os.path.join(args.out, name + ".json"), format="json")
        table = models["bot"].get_metadata()["edgeguard.order_pairs"]
        write_fixtures(ex, models, table, args, work, tls_traffic.pools(corpus.load(args.corpus)))
        return

    data = Data(args, ex)
    rows = data.rows
    train, val, test = data.split == 0, data.split == 1, data.split == 2
    vectors, table = features_with_folds(ex, rows, train & data.human, args.folds, args.seed, args.min_pair_count)
    df = ex.frame(vectors)
    judged, claims, evidence = judged_rows(ex, df, data)
    cats = ex.cat_names
    columns = ex.float_names + ex.cat_names
    y = data.y

    report = {"seed": args.seed, "count": args.count, "schema": SCHEMA,
              "features": {"float": ex.float_names, "cat": ex.cat_names, "evidence": ex.evidence},
              "generator": data.generator_stats,
              "rows": {"generated": int((data.kind == "generated").sum()),
                       "captured": int((data.kind == "captured").sum()),
                       "captured_unjudged": len(data.captured_all) - int((data.kind == "captured").sum()),
                       "degraded": int((data.kind == "degraded").sum()),
                       "people": int(data.human.sum()),
                       "automated_judged": int((judged & ~data.human).sum()),
                       "automated_unjudged": int((~judged).sum())},
              "unjudged": by_key(data.detail[~judged], np.zeros((~judged).sum())),
              "people_with_evidence": people_with_evidence(ex, df, data, evidence),
              "order_table_pairs": sum(len(p.split(":")[1].split()) for p in table.split(";") if p),
              "models": {}}

    # Held-out families: the people's scores out of sample, and the rule.
    if args.no_holdout:
        held = {f: {"people": None} for f in data.people_families}
    else:
        wanted = args.families.split(",") if args.families else data.people_families
        held = holdout_families(ex, data, judged, args, wanted)

    bot = fit(ex, df, y, data.weight, train & judged, val & judged, args.seed, args)
    p_bot = proba(bot, df, cats)
    if args.no_holdout:
        # Experiments only: in-sample and validation people stand in.
        for f in data.people_families:
            sel = data.human & (data.family == f) & (val | data.is_cap)
            held[f] = {"people": p_bot[sel], "degraded": np.zeros(0), "degraded_detail": np.array([])}
    people_scores = {f: h["people"] for f, h in held.items() if h["people"] is not None and len(h["people"])}
    t, worst = people_threshold(people_scores, args.max_people_share, args.margin)
    rule = ("lowest cut with at most %g %% of every held-out family's people at or over it (worst: %s), "
            "raised by %g in log-odds" % (100 * args.max_people_share, worst, args.margin))
    if args.no_holdout:
        rule += " (IN SAMPLE: --no-holdout)"
    report["threshold"] = {"bot": t, "rule": rule, "worst_family": worst}
    report["held_out_families"] = holdout_report(held, data, t, args)

    judged_test = test & judged
    counts = {"captured": int((data.kind == "captured").sum()), "degraded": int((data.kind == "degraded").sum())}
    size, conditions = export(bot, "bot", t, rule, table, args, counts, args.out, columns)
    report["models"]["bot"] = {
        "trees": int(bot.tree_count_), "threshold": t, "threshold_rule": rule, "json_bytes": size,
        "conditions": conditions,
        "validation": metrics(y[val & judged], p_bot[val & judged], t),
        "test": metrics(y[judged_test], p_bot[judged_test], t),
        "test_misses": missed(data.detail[judged_test & (y == 1)], p_bot[judged_test & (y == 1)], t),
        "test_people_flagged": by_key(data.family[judged_test & data.human],
                                      p_bot[judged_test & data.human] >= t),
    }

    # spoof: automation posing as a browser vs browsers, on the rows whose
    # User-Agent claims one. Not loaded by nginx-conf/nginx.conf: its cut
    # uses the same rule on its own people in sample (validation and
    # captured), not held out.
    sub = claims & judged
    spoof = fit(ex, df, y, data.weight, train & sub, val & sub, args.seed, args)
    p_spoof = np.zeros(len(df))
    p_spoof[sub] = proba(spoof, df[sub], cats)
    spoof_people = {f: p_spoof[sub & data.human & (data.family == f) & (val | data.is_cap)]
                    for f in data.people_families}
    ts, worst_s = people_threshold({f: s for f, s in spoof_people.items() if len(s)},
                                   args.max_people_share, args.margin)
    rule_s = ("lowest cut with at most %g %% of every family's people (validation split and captured, in "
              "sample) at or over it (worst: %s), raised by %g in log-odds"
              % (100 * args.max_people_share, worst_s, args.margin))
    size_s, conditions_s = export(spoof, "spoof", ts, rule_s, table, args, counts, args.out, columns)
    report["models"]["spoof"] = {
        "trees": int(spoof.tree_count_), "threshold": ts, "threshold_rule": rule_s, "json_bytes": size_s,
        "conditions": conditions_s,
        "test": metrics(y[test & sub], p_spoof[test & sub], ts),
    }
    bot_flags = p_bot >= t
    only = sub & (p_spoof >= ts) & ~bot_flags
    report["spoof_only"] = {
        "test_automated": int((only & test & (y == 1)).sum()),
        "test_people": int((only & test & (y == 0)).sum()),
        "captured_automated": int((only & data.is_cap & (y == 1)).sum()),
        "test_automated_missed_by_bot": int((judged_test & (y == 1) & ~bot_flags).sum()),
    }

    report["captured_clients"] = captured_table(data.captured_all, ex, table, {"bot": bot, "spoof": spoof},
                                                {"bot": t, "spoof": ts})
    report["uncaught"] = uncaught(data, judged, p_bot, t, held)
    models = {"bot": bot, "spoof": spoof}
    people_fixture = write_fixtures(ex, models, table, args, work, data.tls_pools) \
        if os.path.abspath(args.out) == os.path.abspath(HERE) else people_heads(args, data.tls_pools)
    report["metamorphic"] = metamorphic(ex, table, bot, data.captured_all, people_fixture)
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    summarize(report)


def people_with_evidence(ex, df, data, evidence):
    """People's requests that show evidence, by family and feature: each is
    a rule of src/features/evidence.rs that a real browser breaks (or a
    generated head no browser sends). Any here make the threshold rule
    climb to their scores: the first thing to look at after a new capture."""
    out = {}
    for i in np.where(data.human & (evidence > 0))[0]:
        fam = out.setdefault(str(data.family[i]), {"requests": 0, "features": {}, "example": None})
        fam["requests"] += 1
        for name in ex.evidence:
            value = df[name].iat[i]
            if value == value and value > 0:
                fam["features"][name] = fam["features"].get(name, 0) + 1
        if fam["example"] is None:
            r = data.rows[i]
            fam["example"] = {"method": r["method"], "uri": r["uri"], "version": r["version"],
                              "headers": r["headers"]}
    return out


def missed(details, scores, t):
    out = {}
    for d, s in zip(details, scores):
        if s < t:
            key = d.split("+")[0] if d.startswith("degraded/") else d
            out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def holdout_report(held, data, t, args):
    out = []
    people_scores = {f: h["people"] for f, h in held.items() if h["people"] is not None and len(h["people"])}
    for fam, h in sorted(held.items()):
        if h["people"] is None or not len(h["people"]):
            continue
        t_without, _ = people_threshold(people_scores, args.max_people_share, args.margin, leave_out=fam) \
            if len(people_scores) > 1 else (t, None)
        s = h["people"]
        d = h.get("degraded", np.zeros(0))
        out.append({
            "family": fam,
            "source": "generated (browserforge)" if fam.startswith("generated:") else "captured",
            "people": int(len(s)),
            "people_pass_at_shipped": int((s < t).sum()),
            "threshold_without_family": t_without,
            "people_pass_without_family": int((s < t_without).sum()),
            "percent_pass_without_family": round(100.0 * (s < t_without).mean(), 3),
            "scores": distribution(s),
            "degradations": int(len(d)),
            "degradations_flagged": int((d >= t).sum()),
            "degradations_missed": missed(h.get("degraded_detail", []), d, t) if len(d) else {},
        })
    return out


def uncaught(data, judged, p, t, held):
    """Automation the shipped cut leaves: by class, in the test split, in
    the capture (in sample), and out of sample (the held-out families'
    degradations)."""
    test = (data.split == 2) & judged & (data.y == 1) & (data.kind == "generated")
    cap = (data.kind == "captured") & (data.y == 1)
    out = {
        "generated_test": {"rows": int(test.sum()), "missed": int((p[test] < t).sum()),
                           "by_kind": missed(data.detail[test], p[test], t)},
        "captured": {"rows": int(cap.sum()), "missed": int((p[cap] < t).sum()),
                     "by_client": missed(data.detail[cap], p[cap], t)},
        "unjudged_flagged": {"rows": int((~judged).sum()), "flagged": int((p[~judged] >= t).sum())},
    }
    d = [h for h in held.values() if h.get("degraded") is not None and len(h.get("degraded", []))]
    if d:
        scores = np.concatenate([h["degraded"] for h in d])
        details = np.concatenate([h["degraded_detail"] for h in d])
        out["degraded_held_out"] = {"rows": int(len(scores)), "missed": int((scores < t).sum()),
                                    "by_kind": missed(details, scores, t)}
    return out


def captured_table(rows, ex, table, models, thresholds):
    """Per captured client and class: requests, flagged, max and median bot score."""
    if not rows:
        return []
    df = ex.frame(ex.vectors(rows, table))
    p = {name: proba(m, df, ex.cat_names) for name, m in models.items()}
    out = {}
    for i, r in enumerate(rows):
        key = (r["class"], r["name"])
        e = out.setdefault(key, {"class": r["class"], "client": r["name"], "family": r["family"], "requests": 0,
                                 "flagged_by_bot": 0, "bot_scores": []})
        e["requests"] += 1
        e["flagged_by_bot"] += int(p["bot"][i] >= thresholds["bot"])
        e["bot_scores"].append(float(p["bot"][i]))
    result = []
    for e in out.values():
        s = np.array(e.pop("bot_scores"))
        e["bot_max"] = float(s.max())
        e["bot_median"] = float(np.median(s))
        result.append(e)
    return sorted(result, key=lambda e: (e["class"], e["client"]))


def metamorphic(ex, table, model, captured_all, people_fixture):
    """Every single degradation of every person's head (captured, and the
    people fixture's generated ones) scored against the head itself: how
    many lower the score by more than 0.02, and the worst. The same check
    as tests/e2e/test_model_properties.py, here on CatBoost's own
    predictions."""
    heads = [r for r in captured_all if r["human"]] + people_fixture
    originals, degraded, owner, kinds = [], [], [], []
    for i, r in enumerate(heads):
        originals.append(r)
        for kind, detail, new in degrade.all_single(r):
            degraded.append(new)
            owner.append(i)
            kinds.append("%s:%s" % (kind, detail) if detail else kind)
    p0 = proba(model, ex.frame(ex.vectors(originals, table)), ex.cat_names)
    p1 = proba(model, ex.frame(ex.vectors(degraded, table)), ex.cat_names)
    drop = p0[np.array(owner)] - p1
    worst = int(np.argmax(drop))
    return {"heads": len(heads), "degradations": len(degraded), "violations": int((drop > 0.02).sum()),
            "worst_drop": float(drop[worst]), "worst_kind": kinds[worst],
            "worst_scores": [float(p0[owner[worst]]), float(p1[worst])]}


# ------------------------------------------------------------------ fixtures

def people_heads(args, tls_pools):
    """PEOPLE_PER_FAMILY generated people's heads per family (seed + 2000),
    half with TLS facts."""
    seed = args.seed + 2000
    path = os.path.join(ROOT, "target", "traffic", "people-seed%d.jsonl" % seed)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_traffic.py"), "--seed", str(seed), "--count", "12000",
                    "--out", path], check=True)
    with open(path) as f:
        gen = [json.loads(line) for line in f]
    gen = tls_traffic.assign([r for r in gen if r["automated"] == 0], tls_pools, seed, no_tls_share=0.5)
    taken, out = {}, []
    for r in gen:
        if taken.get(r["family"], 0) < PEOPLE_PER_FAMILY:
            taken[r["family"]] = taken.get(r["family"], 0) + 1
            out.append(r)
    return out


def write_fixtures(ex, models, table, args, work, tls_pools):
    seed = args.seed + 1000
    path = os.path.join(work, "fixture-seed%d.jsonl" % seed)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_traffic.py"), "--seed", str(seed), "--count",
                    str(args.fixture_count), "--out", path], check=True)
    # Half of the fixture's requests without TLS facts: the e2e tests send
    # fixture rows through a plain-HTTP nginx, which can only reproduce
    # those (test_scoring.py).
    with open(path) as f:
        rows = tls_traffic.assign([json.loads(line) for line in f], tls_pools, seed, no_tls_share=0.5)
    vectors = ex.vectors(rows, table)
    df = ex.frame(vectors)
    raw = {name: m.predict(Pool(df, cat_features=ex.cat_names), prediction_type="RawFormulaVal")
           for name, m in models.items()}
    os.makedirs(FIXTURES, exist_ok=True)
    with open(os.path.join(FIXTURES, "sample.jsonl"), "w") as f:
        for i, (row, vec) in enumerate(zip(rows, vectors)):
            row = with_tls_fields(row)
            row["features"] = vec
            row["expected_raw"] = {name: float(values[i]) for name, values in raw.items()}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
    people = people_heads(args, tls_pools)
    with open(os.path.join(FIXTURES, "people.jsonl"), "w") as f:
        for row in people:
            f.write(json.dumps(with_tls_fields(row), separators=(",", ":")) + "\n")
    return people


def with_tls_fields(row):
    """The TLS facts under the names the replay reader (and the tests'
    reader) takes them by."""
    row = dict(row)
    ja4, family = row.pop("ja4", None), row.pop("tls_family", None)
    if ja4:
        row["edgeguard_ja4"], row["edgeguard_tls_family"] = ja4, family
    return row


def summarize(report):
    for name, r in report["models"].items():
        h = r["test"]
        print("%-5s trees=%d threshold=%.4f json=%d B conditions=%d test: AUC=%.4f precision=%.4f recall=%.4f (%d rows)"
              % (name, r["trees"], r["threshold"], r["json_bytes"], r["conditions"], h["roc_auc"], h["precision"],
                 h["recall"], h["rows"]))
    print("rule:", report["threshold"]["rule"])
    for fam in report["held_out_families"]:
        print("held out %-34s %6d people: %6.2f %% pass at the cut without it (%.4f); max %.4f; "
              "degradations %d/%d flagged" % (
                  fam["family"], fam["people"], fam["percent_pass_without_family"],
                  fam["threshold_without_family"], fam["scores"]["max"], fam["degradations_flagged"],
                  fam["degradations"]))
    print("uncaught:", json.dumps({k: {kk: vv for kk, vv in v.items() if not isinstance(vv, dict)}
                                   for k, v in report["uncaught"].items()}))
    print("metamorphic:", report["metamorphic"])
    for fam, e in report["people_with_evidence"].items():
        print("WARNING: %d requests of people of %s show evidence %s: a rule that family breaks, see "
              "people_with_evidence in metrics.json" % (e["requests"], fam, e["features"]))


if __name__ == "__main__":
    main()
