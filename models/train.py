#!/usr/bin/env python3
"""Train edgeguard's shipped bot models on generated and captured traffic.

    python3 models/train.py                       # everything, as shipped
    python3 models/train.py --count 20000 --no-holdout --out target/try   # a quick experiment

Steps:
  1. generate labelled traffic with models/gen_traffic.py (--seed, --count)
     and read the captured real-client corpus (models/corpus.py,
     tests/fixtures/real_clients/corpus.jsonl) when it exists;
  2. split the generated rows by seed into train (70%), validation (15%) and
     held-out (15%); captured rows are all training data of the shipped
     models (the held-out-family runs of step 8 measure them out of sample),
     except byte-identical automation, which no head can tell from a person
     and which is reported, never trained on;
  3. learn the header-order table (`edgeguard features --learn-orders`) from
     the people's requests of the training rows. A training row's own
     `order_reversed_pairs` is computed with a table learnt from the other
     folds (--folds, out-of-fold like CatBoost's ordered CTRs), so the model
     sees how often a person's browser sends a pair the table lacks; every
     other row, and nginx, use the table of all training people;
  4. turn every request into features with the Rust `edgeguard features`
     binary (schema 3 columns, `edgeguard features --names --schema 3`), so
     training and serving run the same extractor;
  5. train the CatBoost models (named columns, shared categorical features):
       bot   - automated (1) vs person (0), on all traffic;
       spoof - automated client whose UA claims a browser (1) vs real browser
               (0), on the rows that claim a browser;
  6. choose each default threshold (rule below) and store it, the schema
     version (`edgeguard.schema`) and the order table
     (`edgeguard.order_pairs`) in the model's metadata; export
     models/<name>.json and check the export kept them;
  7. write models/metrics.json (synthetic held-out numbers, per captured
     client, whether spoof flags anything bot misses) and the parity fixture
     tests/fixtures/traffic/sample.jsonl;
  8. held-out families: for each captured client family, train the bot
     model again without that family's captures (nor their orders in the
     table), choose its threshold by the same rule, and measure the family:
     people's browsers must pass, automated clients be flagged.

Threshold rule: the lowest probability whose validation precision (generated
rows) is at least --min-precision (default 0.99), raised if needed so that
every captured person's request of the training rows scores below it with a
margin: logit(threshold) >= logit(max captured human score) + --margin
(default 1.0, a factor e in odds).
"""

import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
from catboost import CatBoostClassifier, Pool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import tls_traffic  # noqa: E402

# Each model is read by every nginx worker at (re)load and by the pure-Lua
# engine; the captured heads add CTR values and the order table ~2 KB.
MAX_JSON_BYTES = 1_600_000
# The scorer's fastest kernel (AVX-512, src/model/trees.rs) holds a model's
# conditions in a 512-byte table: a model with more runs the AVX2 one.
MAX_CONDITIONS = 512
SCHEMA = 3
BROWSER_FAMILIES = {"chrome", "headless-chrome", "edge", "opera", "samsung", "firefox", "safari", "other-browser"}


# ------------------------------------------------------------------ features

class Extractor:
    """`edgeguard features --schema 3` over lists of request rows."""

    def __init__(self, binary, work):
        self.binary = binary
        self.work = work
        names = json.loads(self._run(["features", "--names", "--schema", str(SCHEMA)]).decode())
        self.float_names, self.cat_names = names["float"], names["cat"]

    def _run(self, args, stdin=None):
        proc = subprocess.run([self.binary] + args, input=stdin, capture_output=True, check=False)
        if proc.returncode != 0:
            sys.exit("edgeguard %s failed:\n%s" % (" ".join(args), proc.stderr.decode()[-2000:]))
        return proc.stdout

    @staticmethod
    def _lines(rows):
        return "".join(corpus.request_line(r) + "\n" for r in rows).encode()

    def learn(self, rows, min_count):
        return self._run(["features", "--learn-orders", "--min-count", str(min_count)],
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


def features_with_folds(ex, rows, train, human, folds, seed, min_count):
    """Vectors of every row: training people out-of-fold, the rest with the
    table of all training people. Rows the generator marks `drift` (a header
    moved, standing for a release the data does not know) never enter a
    table. Returns (vectors, full table)."""
    learnable = np.array([bool(t and h and not r.get("drift")) for r, t, h in zip(rows, train, human)])
    full = ex.learn([r for r, ok in zip(rows, learnable) if ok], min_count)
    vectors = ex.vectors(rows, full)
    fold = np.random.RandomState(seed + 7).randint(0, folds, size=len(rows))
    for k in range(folds):
        table = ex.learn([r for r, ok, f in zip(rows, learnable, fold) if ok and f != k], min_count)
        idx = [i for i in range(len(rows)) if train[i] and human[i] and fold[i] == k]
        for i, v in zip(idx, ex.vectors([rows[i] for i in idx], table)):
            vectors[i] = v
    return vectors, full


# ----------------------------------------------------------------- measuring

def logit(p):
    p = min(max(p, 1e-300), 1 - 1e-16)
    return math.log(p / (1 - p))


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def choose_threshold(y, p, min_precision):
    """Lowest cut with precision >= min_precision, else the best-F1 cut."""
    order = np.argsort(-p, kind="stable")
    ys, ps = y[order], p[order]
    tp = np.cumsum(ys)
    flagged = np.arange(1, len(ys) + 1)
    precision = tp / flagged
    recall = tp / max(1, ys.sum())
    last_of_run = np.append(ps[1:] != ps[:-1], True)
    ok = np.where(last_of_run & (precision >= min_precision))[0]
    if len(ok):
        return float(ps[ok[-1]]), "precision>=%g" % min_precision
    f1 = np.where(last_of_run, 2 * precision * recall / np.maximum(precision + recall, 1e-12), -1)
    return float(ps[int(np.argmax(f1))]), "max-f1"


def with_margin(threshold, rule, human_scores, margin):
    """Raises the cut above the captured people's highest score."""
    if len(human_scores) == 0:
        return threshold, rule
    floor = sigmoid(logit(float(np.max(human_scores))) + margin)
    if floor > threshold:
        return floor, rule + "; raised above captured people (max %.4g, margin %g)" % (np.max(human_scores), margin)
    return threshold, rule


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


def errors_by_detail(y, p, threshold, details):
    misses, alarms = {}, {}
    for yi, pi, d in zip(y, p, details):
        if yi == 1 and pi < threshold:
            misses[d] = misses.get(d, 0) + 1
        elif yi == 0 and pi >= threshold:
            alarms[d] = alarms.get(d, 0) + 1

    def most_first(counts):
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    return {"misses": most_first(misses), "false_alarms": most_first(alarms)}


# ------------------------------------------------------------------ training

def fit(df, y, w, train, val, cat_names, seed, args):
    model = CatBoostClassifier(
        iterations=args.iterations,
        depth=args.depth,
        learning_rate=args.learning_rate,
        loss_function="Logloss",
        random_seed=seed,
        max_ctr_complexity=args.max_ctr_complexity,
        # CatBoost's default CTRs, with fewer borders each.
        simple_ctr=["Borders:CtrBorderCount=%d:CtrBorderType=Uniform:TargetBorderCount=1:TargetBorderType=MinEntropy"
                    ":Prior=0/1:Prior=0.5/1:Prior=1/1" % args.ctr_border_count,
                    "Counter:CtrBorderCount=%d:CtrBorderType=Uniform:Prior=0/1" % args.ctr_border_count],
        one_hot_max_size=4,
        border_count=args.border_count,
        use_best_model=True,
        od_type="Iter",
        od_wait=60,
        thread_count=2,
        verbose=False,
        allow_writing_files=False,
    )
    model.fit(Pool(df[train], y[train], cat_features=cat_names, weight=w[train]),
              eval_set=Pool(df[val], y[val], cat_features=cat_names))
    return model


def proba(model, df, cat_names):
    return model.predict_proba(Pool(df, cat_features=cat_names))[:, 1]


def threshold_for(model, df, y, val, cap_human_train, cat_names, args):
    t, rule = choose_threshold(y[val], proba(model, df[val], cat_names), args.min_precision)
    if cap_human_train.any():
        t, rule = with_margin(t, rule, proba(model, df[cap_human_train], cat_names), args.margin)
    return t, rule


def export(model, name, threshold, rule, table, args, captured, out_dir, columns):
    meta = model.get_metadata()
    meta["edgeguard.threshold"] = repr(threshold)
    meta["edgeguard.threshold_raw"] = repr(math.log(threshold / (1 - threshold)) if 0 < threshold < 1 else
                                           (math.inf if threshold >= 1 else -math.inf))
    meta["edgeguard.threshold_rule"] = rule
    meta["edgeguard.label"] = name
    meta["edgeguard.schema"] = str(SCHEMA)
    meta["edgeguard.order_pairs"] = table
    meta["edgeguard.training"] = "gen_traffic.py --seed %d --count %d + %d captured requests" % (
        args.seed, args.count, captured)
    path = os.path.join(out_dir, name + ".json")
    model.save_model(path, format="json")
    size = os.path.getsize(path)
    if size > MAX_JSON_BYTES:
        sys.exit("%s is %d bytes, over the %d budget: lower --iterations or --max-ctr-complexity"
                 % (path, size, MAX_JSON_BYTES))
    with open(path) as f:
        exported = json.load(f)
    info = exported["features_info"]
    ids = [f.get("feature_id") for f in info.get("float_features", [])] + \
          [f.get("feature_id") for f in info.get("categorical_features", [])]
    if ids != columns:
        sys.exit("%s: exported feature ids %s differ from the schema %s" % (path, ids, columns))
    conditions = len({json.dumps(s, sort_keys=True) for t in exported["oblivious_trees"] for s in t["splits"]})
    if conditions > MAX_CONDITIONS:
        sys.exit("%s has %d distinct conditions, over the %d of the AVX-512 kernel: lower --ctr-border-count"
                 % (path, conditions, MAX_CONDITIONS))
    kept = exported.get("model_info", {})
    for key, want in (("edgeguard.threshold", repr(threshold)), ("edgeguard.schema", str(SCHEMA)),
                      ("edgeguard.order_pairs", table)):
        if kept.get(key) != want:
            sys.exit("%s: the JSON export lost model_info[%r]" % (path, key))
    return size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60000)
    ap.add_argument("--edgeguard", help="edgeguard binary (default: build target/release/edgeguard)")
    ap.add_argument("--corpus", default=corpus.CORPUS, help="captured corpus (default: %(default)s)")
    ap.add_argument("--captured-weight", type=float, default=5.0,
                    help="sample weight of a captured request (a generated one weighs 1)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--min-pair-count", type=int, default=2,
                    help="a header pair enters the order table once this many training people sent it")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--learning-rate", type=float, default=0.08)
    ap.add_argument("--max-ctr-complexity", type=int, default=1)
    ap.add_argument("--border-count", type=int, default=254, help="borders per float feature (CatBoost's default)")
    ap.add_argument("--ctr-border-count", type=int, default=10,
                    help="borders per CTR of a categorical feature (CatBoost's default is 15; 10 keeps the "
                         "schema-3 models within the %d conditions of the AVX-512 kernel)" % MAX_CONDITIONS)
    ap.add_argument("--min-precision", type=float, default=0.99)
    ap.add_argument("--margin", type=float, default=1.0)
    ap.add_argument("--fixture-count", type=int, default=200)
    ap.add_argument("--no-holdout", action="store_true", help="skip the held-out-family runs")
    ap.add_argument("--families", help="comma-separated: hold out only these families (default: every one)")
    ap.add_argument("--out", default=HERE, help="where the models and metrics.json go (default: models/)")
    ap.add_argument("--fixture-only", action="store_true",
                    help="only rewrite tests/fixtures/traffic/sample.jsonl from the models in --out")
    args = ap.parse_args()

    edgeguard = args.edgeguard
    if edgeguard is None:
        subprocess.run(["cargo", "build", "--release", "--bin", "edgeguard"], cwd=ROOT, check=True)
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
        write_fixture(ex, models, table, ex.cat_names, args, work, tls_traffic.pools(corpus.load(args.corpus)))
        return

    traffic = os.path.join(work, "train-seed%d-count%d.jsonl" % (args.seed, args.count))
    subprocess.run([sys.executable, os.path.join(HERE, "gen_traffic.py"), "--seed", str(args.seed), "--count",
                    str(args.count), "--out", traffic], check=True)
    with open(traffic) as f:
        gen = [json.loads(line) for line in f]
    captured_all = corpus.load(args.corpus)
    captured = [r for r in captured_all if corpus.judged(r)]
    # Generated heads get the TLS facts their client would have sent,
    # from the capture's JA4s (tls_traffic.py).
    tls_pools = tls_traffic.pools(captured_all)
    gen = tls_traffic.assign(gen, tls_pools, args.seed)
    rows = gen + captured
    n_gen = len(gen)
    is_cap = np.array([False] * n_gen + [True] * len(captured))
    split = np.concatenate([np.random.RandomState(args.seed).choice(3, size=n_gen, p=[0.70, 0.15, 0.15]),
                            np.zeros(len(captured), dtype=int)])
    human = np.array([r["automated"] == 0 for r in gen] + [r["human"] for r in captured])
    y_bot = (~human).astype(int)
    details = np.array(["%s/%s" % (r["kind"], r["detail"]) for r in gen] +
                       ["captured/%s/%s" % (r["class"], r["name"]) for r in captured])
    family = np.array([""] * n_gen + [corpus.family(r) for r in captured])
    weight = np.where(is_cap, args.captured_weight, 1.0)
    train, val, test = split == 0, (split == 1) & ~is_cap, (split == 2) & ~is_cap

    vectors, table = features_with_folds(ex, rows, train, human, args.folds, args.seed, args.min_pair_count)
    df = ex.frame(vectors)
    cats = ex.cat_names
    columns = ex.float_names + ex.cat_names
    ua_family = df["ua_family"].to_numpy()
    claims_browser = np.array([f in BROWSER_FAMILIES for f in ua_family])

    report = {"seed": args.seed, "count": args.count, "captured": len(captured),
              "captured_byte_identical": len(captured_all) - len(captured), "schema": SCHEMA,
              "features": {"float": ex.float_names, "cat": ex.cat_names},
              "order_table_pairs": sum(len(p.split(":")[1].split()) for p in table.split(";") if p),
              "models": {}}
    models, thresholds = {}, {}

    # bot: everything.
    cap_human_train = train & is_cap & human
    bot = fit(df, y_bot, weight, train, val, cats, args.seed, args)
    t, rule = threshold_for(bot, df, y_bot, val, cap_human_train, cats, args)
    p_test = proba(bot, df[test], cats)
    models["bot"], thresholds["bot"] = bot, t
    report["models"]["bot"] = {
        "trees": int(bot.tree_count_), "threshold": t, "threshold_rule": rule,
        "validation": metrics(y_bot[val], proba(bot, df[val], cats), t),
        "held_out": metrics(y_bot[test], p_test, t),
        "held_out_errors": errors_by_detail(y_bot[test], p_test, t, details[test]),
        "json_bytes": export(bot, "bot", t, rule, table, args, len(captured), args.out, columns),
    }

    # spoof: rows whose UA claims a browser (people, and automation posing as one).
    sub = claims_browser
    y_spoof = y_bot.copy()
    dfs = df[sub].reset_index(drop=True)
    ys, ws = y_spoof[sub], weight[sub]
    trs, vas, tes = train[sub], val[sub], test[sub]
    spoof = fit(dfs, ys, ws, trs, vas, cats, args.seed, args)
    ts, rule_s = threshold_for(spoof, dfs, ys, vas, cap_human_train[sub], cats, args)
    ps_test = proba(spoof, dfs[tes], cats)
    models["spoof"], thresholds["spoof"] = spoof, ts
    report["models"]["spoof"] = {
        "trees": int(spoof.tree_count_), "threshold": ts, "threshold_rule": rule_s,
        "validation": metrics(ys[vas], proba(spoof, dfs[vas], cats), ts),
        "held_out": metrics(ys[tes], ps_test, ts),
        "held_out_errors": errors_by_detail(ys[tes], ps_test, ts, details[sub][tes]),
        "json_bytes": export(spoof, "spoof", ts, rule_s, table, args, len(captured), args.out, columns),
    }

    # Does spoof earn its place? Requests it flags that bot does not, on the
    # generated held-out split and on the captures.
    p_bot_all = proba(bot, df, cats)
    p_spoof_all = np.zeros(len(df))
    p_spoof_all[sub] = proba(spoof, dfs, cats)
    bot_flags = p_bot_all >= t
    spoof_flags = sub & (p_spoof_all >= ts)
    only = spoof_flags & ~bot_flags
    report["spoof_only"] = {
        "held_out_automated": int((only & test & (y_bot == 1)).sum()),
        "held_out_people": int((only & test & (y_bot == 0)).sum()),
        "captured_automated": int((only & is_cap & (y_bot == 1)).sum()),
        "captured_people": int((only & is_cap & (y_bot == 0)).sum()),
        "held_out_automated_missed_by_bot": int((test & (y_bot == 1) & ~bot_flags).sum()),
    }

    report["captured_clients"] = captured_table(captured_all, ex, table, models, thresholds)
    if not args.no_holdout and captured:
        report["held_out_families"] = holdout_families(ex, rows, train, val, human, is_cap, family, y_bot,
                                                       weight, args, details, tls_pools, n_gen)
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    if os.path.abspath(args.out) == os.path.abspath(HERE):
        write_fixture(ex, models, table, cats, args, work, tls_pools)
    for name, r in report["models"].items():
        h = r["held_out"]
        print("%-5s trees=%d threshold=%.4f (%s) held-out: AUC=%.4f precision=%.4f recall=%.4f (%d rows) json=%d B"
              % (name, r["trees"], r["threshold"], r["threshold_rule"], h["roc_auc"], h["precision"], h["recall"],
                 h["rows"], r["json_bytes"]))
    print("spoof flags that bot does not:", report["spoof_only"])
    for fam in report.get("held_out_families", []):
        print("held out %-28s %-9s %4d requests, %6.2f %% %s" % (
            fam["family"], fam["class"], fam["requests"], fam["percent_ok"],
            "pass" if fam["class"] == "human" else "flagged"))


def captured_table(rows, ex, table, models, thresholds):
    """Per captured client and class: requests, flagged, max and median bot score."""
    if not rows:
        return []
    df = ex.frame(ex.vectors(rows, table))
    p = {name: proba(m, df, ex.cat_names) for name, m in models.items()}
    out = {}
    for i, r in enumerate(rows):
        key = (r["class"], r["name"])
        e = out.setdefault(key, {"class": r["class"], "client": r["name"], "requests": 0, "flagged": 0,
                                 "flagged_by_bot": 0, "bot_scores": []})
        e["requests"] += 1
        bot_flag = p["bot"][i] >= thresholds["bot"]
        flag = bot_flag or any(p[n][i] >= thresholds[n] for n in models)
        e["flagged"] += int(flag)
        e["flagged_by_bot"] += int(bot_flag)
        e["bot_scores"].append(float(p["bot"][i]))
    result = []
    for e in out.values():
        s = np.array(e.pop("bot_scores"))
        e["bot_max"] = float(s.max())
        e["bot_median"] = float(np.median(s))
        result.append(e)
    return sorted(result, key=lambda e: (e["class"], e["client"]))


def holdout_families(ex, rows, train, val, human, is_cap, family, y, weight, args, details, tls_pools, n_gen):
    """Retrain bot without each captured family, measure that family. The
    generated rows lose the family's JA4s too (tls_traffic.without)."""
    results = []
    wanted = args.families.split(",") if args.families else sorted(set(family[is_cap]))
    for fam in wanted:
        out = is_cap & (family == fam)
        keep = train & ~out
        run_rows = tls_traffic.assign(rows[:n_gen], tls_traffic.without(tls_pools, fam), args.seed) + rows[n_gen:]
        vectors, table = features_with_folds(ex, run_rows, keep, human, args.folds, args.seed, args.min_pair_count)
        df = ex.frame(vectors)
        model = fit(df, y, weight, keep, val, ex.cat_names, args.seed, args)
        t, _ = threshold_for(model, df, y, val, keep & is_cap & human, ex.cat_names, args)
        p = proba(model, df[out], ex.cat_names)
        is_human = human[out]
        ok = np.where(is_human, p < t, p >= t)
        if args.families:  # an experiment: say what the misses are
            flows = {}
            for i, good in zip(np.where(out)[0], ok):
                if not good:
                    key = "%s/%s/%s" % (rows[i]["origin"], rows[i]["flow"], rows[i].get("protocol"))
                    flows[key] = flows.get(key, 0) + 1
            print("  misses:", dict(sorted(flows.items(), key=lambda kv: -kv[1])[:12]))
            bad = np.where(out)[0][~ok]
            if len(bad):
                shap = model.get_feature_importance(Pool(df.iloc[bad], cat_features=ex.cat_names),
                                                    type="ShapValues")[:, :-1]
                push = (shap * np.where(is_human[~ok], 1, -1)[:, None]).sum(axis=0)
                print("  features pushing the misses the wrong way:",
                      [(c, round(float(v), 1)) for c, v in sorted(zip(df.columns, push), key=lambda kv: -kv[1])[:8]])
                i = bad[0]
                print("  e.g.", {c: df.iloc[i][c] for c in df.columns if c in (
                    "ua_family", "ch_brand", "header_order", "accept", "fetch_site", "order_reversed_pairs",
                    "accept_language_primary", "has_referer", "http_version")})
        for cls_human in (True, False):
            sel = is_human == cls_human
            if not sel.any():
                continue
            results.append({"family": fam, "class": "human" if cls_human else "automated",
                            "requests": int(sel.sum()), "ok": int(ok[sel].sum()),
                            "percent_ok": round(100.0 * ok[sel].mean(), 2), "threshold": t,
                            "max_score": float(p[sel].max()), "min_score": float(p[sel].min())})
            print("held-out family %s (%s): %d/%d %s at %.4f" % (
                fam, "people" if cls_human else "automated", ok[sel].sum(), sel.sum(),
                "pass" if cls_human else "flagged", t), flush=True)
    return results


def write_fixture(ex, models, table, cat_names, args, work, tls_pools):
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
    raw = {name: m.predict(Pool(df, cat_features=cat_names), prediction_type="RawFormulaVal")
           for name, m in models.items()}
    out_dir = os.path.join(ROOT, "tests", "fixtures", "traffic")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sample.jsonl"), "w") as f:
        for i, (row, vec) in enumerate(zip(rows, vectors)):
            # The TLS facts under the names the replay reader (and the
            # tests' reader) takes them by.
            ja4, family = row.pop("ja4"), row.pop("tls_family")
            if ja4:
                row["edgeguard_ja4"], row["edgeguard_tls_family"] = ja4, family
            row["features"] = vec
            row["expected_raw"] = {name: float(values[i]) for name, values in raw.items()}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
