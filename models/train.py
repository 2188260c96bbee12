#!/usr/bin/env python3
"""Train edgeguard's shipped bot models on generated traffic.

    python3 models/train.py                       # everything, default seed
    python3 models/train.py --seed 7 --count 60000 --edgeguard target/release/edgeguard

Steps:
  1. generate labelled traffic with models/gen_traffic.py (--seed, --count);
  2. turn every request into features with the Rust `edgeguard features`
     binary, so training and serving run the same extractor;
  3. split rows by seed into train (70%), validation (15%) and held-out (15%);
  4. train two CatBoost models on the same schema (named columns, shared
     categorical features):
       bot   - automated (1) vs person (0), on all traffic;
       spoof - automated client whose UA claims a browser (1) vs real browser
               (0), on the rows the generator labels for it;
  5. choose each default threshold on the validation split (rule below), then
     measure ROC AUC, precision and recall on the held-out split, which
     neither training nor the threshold saw;
  6. store the threshold in the model's metadata (`edgeguard.threshold`, a
     probability, and `edgeguard.threshold_raw`, the same cut on the raw
     formula value) and export models/<name>.json, checking that the JSON
     export keeps the feature names and the metadata;
  7. write models/metrics.json and the parity fixture
     tests/fixtures/traffic/sample.jsonl (requests from another seed with
     their features and CatBoost's raw predictions of both models).

Threshold rule: the lowest probability whose validation precision is at
least --min-precision (default 0.99), i.e. the most recall a 1% false-alarm
share of flagged requests allows; if no threshold reaches it, the one with
the best F1.
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
MAX_JSON_BYTES = 1_500_000


def run_features(edgeguard, jsonl_path):
    names = json.loads(subprocess.run([edgeguard, "features", "--names"], check=True, capture_output=True,
                                      text=True).stdout)
    with open(jsonl_path, "rb") as f:
        proc = subprocess.run([edgeguard, "features"], stdin=f, capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit("edgeguard features failed:\n" + proc.stderr.decode()[-2000:])
    vectors = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return names, vectors


def frame(names, vectors):
    floats = np.array([[math.nan if x is None else x for x in v["float"]] for v in vectors], dtype=np.float64)
    df = pd.DataFrame(floats, columns=names["float"])
    for i, name in enumerate(names["cat"]):
        df[name] = [v["cat"][i] for v in vectors]
    return df


def choose_threshold(y, p, min_precision):
    """Lowest cut with precision >= min_precision, else the best-F1 cut."""
    order = np.argsort(-p, kind="stable")
    ys, ps = y[order], p[order]
    tp = np.cumsum(ys)
    flagged = np.arange(1, len(ys) + 1)
    precision = tp / flagged
    recall = tp / max(1, ys.sum())
    # Only cut between distinct scores.
    last_of_run = np.append(ps[1:] != ps[:-1], True)
    ok = np.where(last_of_run & (precision >= min_precision))[0]
    if len(ok):
        i = ok[-1]
        return float(ps[i]), "precision>=%g" % min_precision
    f1 = np.where(last_of_run, 2 * precision * recall / np.maximum(precision + recall, 1e-12), -1)
    i = int(np.argmax(f1))
    return float(ps[i]), "max-f1"


def roc_auc(y, p):
    order = np.argsort(p, kind="stable")
    ranks = np.empty(len(p))
    sorted_p = p[order]
    i = 0
    while i < len(p):  # average ranks over ties
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
    """Held-out misses and false alarms per generator kind/detail."""
    misses, alarms = {}, {}
    for yi, pi, d in zip(y, p, details):
        if yi == 1 and pi < threshold:
            misses[d] = misses.get(d, 0) + 1
        elif yi == 0 and pi >= threshold:
            alarms[d] = alarms.get(d, 0) + 1
    def most_first(counts):
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    return {"misses": most_first(misses), "false_alarms": most_first(alarms)}


def train_one(name, df, y, split, cat_names, seed, args, details):
    tr, va, te = (split == 0), (split == 1), (split == 2)
    model = CatBoostClassifier(
        iterations=args.iterations,
        depth=args.depth,
        learning_rate=args.learning_rate,
        loss_function="Logloss",
        random_seed=seed,
        max_ctr_complexity=args.max_ctr_complexity,
        one_hot_max_size=4,
        use_best_model=True,
        od_type="Iter",
        od_wait=60,
        thread_count=2,
        verbose=False,
        allow_writing_files=False,
    )
    model.fit(Pool(df[tr], y[tr], cat_features=cat_names), eval_set=Pool(df[va], y[va], cat_features=cat_names))
    p_va = model.predict_proba(Pool(df[va], cat_features=cat_names))[:, 1]
    threshold, rule = choose_threshold(y[va], p_va, args.min_precision)
    p_te = model.predict_proba(Pool(df[te], cat_features=cat_names))[:, 1]
    result = {
        "trees": int(model.tree_count_),
        "threshold": threshold,
        "threshold_rule": rule,
        "validation": metrics(y[va], p_va, threshold),
        "held_out": metrics(y[te], p_te, threshold),
        "held_out_errors": errors_by_detail(y[te], p_te, threshold, details[te]),
    }
    meta = model.get_metadata()
    meta["edgeguard.threshold"] = repr(threshold)
    meta["edgeguard.threshold_raw"] = repr(math.log(threshold / (1 - threshold)) if 0 < threshold < 1 else
                                           (math.inf if threshold >= 1 else -math.inf))
    meta["edgeguard.threshold_rule"] = rule
    meta["edgeguard.label"] = name
    meta["edgeguard.training"] = "gen_traffic.py --seed %d --count %d" % (seed, args.count)
    path = os.path.join(HERE, name + ".json")
    model.save_model(path, format="json")
    check_export(path, list(df.columns), threshold)
    result["json_bytes"] = os.path.getsize(path)
    return model, result


def check_export(path, columns, threshold):
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
    if exported.get("model_info", {}).get("edgeguard.threshold") != repr(threshold):
        sys.exit("%s: the JSON export lost model_info['edgeguard.threshold']" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60000)
    ap.add_argument("--edgeguard", help="edgeguard binary (default: build target/release/edgeguard)")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--learning-rate", type=float, default=0.08)
    ap.add_argument("--max-ctr-complexity", type=int, default=1)
    ap.add_argument("--min-precision", type=float, default=0.99)
    ap.add_argument("--fixture-count", type=int, default=200)
    args = ap.parse_args()

    edgeguard = args.edgeguard
    if edgeguard is None:
        subprocess.run(["cargo", "build", "--release", "--bin", "edgeguard"], cwd=ROOT, check=True)
        edgeguard = os.path.join(ROOT, "target", "release", "edgeguard")
    work = os.path.join(ROOT, "target", "traffic")
    os.makedirs(work, exist_ok=True)
    traffic = os.path.join(work, "train-seed%d-count%d.jsonl" % (args.seed, args.count))
    gen = [sys.executable, os.path.join(HERE, "gen_traffic.py"), "--seed", str(args.seed), "--count",
           str(args.count), "--out", traffic]
    subprocess.run(gen, check=True)
    with open(traffic) as f:
        rows = [json.loads(line) for line in f]
    names, vectors = run_features(edgeguard, traffic)
    if len(vectors) != len(rows):
        sys.exit("edgeguard features printed %d vectors for %d requests" % (len(vectors), len(rows)))
    df = frame(names, vectors)
    cat_names = names["cat"]
    split = np.random.RandomState(args.seed).choice(3, size=len(rows), p=[0.70, 0.15, 0.15])

    report = {"seed": args.seed, "count": args.count, "features": names, "models": {}}
    models = {}
    details = np.array(["%s/%s" % (r["kind"], r["detail"]) for r in rows])
    y_bot = np.array([r["automated"] for r in rows])
    models["bot"], report["models"]["bot"] = train_one("bot", df, y_bot, split, cat_names, args.seed, args, details)
    has_spoof = np.array([r["spoof"] is not None for r in rows])
    y_spoof = np.array([r["spoof"] or 0 for r in rows])[has_spoof]
    models["spoof"], report["models"]["spoof"] = train_one(
        "spoof", df[has_spoof].reset_index(drop=True), y_spoof, split[has_spoof], cat_names, args.seed, args,
        details[has_spoof])
    with open(os.path.join(HERE, "metrics.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")

    write_fixture(edgeguard, models, cat_names, args, work)
    for name, r in report["models"].items():
        h = r["held_out"]
        print("%-5s trees=%d threshold=%.4f (%s) held-out: AUC=%.4f precision=%.4f recall=%.4f (%d rows) json=%d B"
              % (name, r["trees"], r["threshold"], r["threshold_rule"], h["roc_auc"], h["precision"], h["recall"],
                 h["rows"], r["json_bytes"]))


def write_fixture(edgeguard, models, cat_names, args, work):
    seed = args.seed + 1000
    path = os.path.join(work, "fixture-seed%d.jsonl" % seed)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_traffic.py"), "--seed", str(seed), "--count",
                    str(args.fixture_count), "--out", path], check=True)
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    names, vectors = run_features(edgeguard, path)
    df = frame(names, vectors)
    raw = {name: m.predict(Pool(df, cat_features=cat_names), prediction_type="RawFormulaVal")
           for name, m in models.items()}
    out_dir = os.path.join(ROOT, "tests", "fixtures", "traffic")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sample.jsonl"), "w") as f:
        for i, (row, vec) in enumerate(zip(rows, vectors)):
            row["features"] = vec
            # json writes floats with repr: the full double.
            row["expected_raw"] = {name: float(values[i]) for name, values in raw.items()}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
