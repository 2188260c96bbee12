#!/usr/bin/env python3
"""Train the CatBoost models the native evaluator is tested against.

Everything here comes from the official `catboost` package: the models, their
JSON and .cbm exports, and the predictions the Rust tests compare with. The
outputs are committed under tests/fixtures/catboost/ so `make test` never needs
Python; rerun this script only to regenerate them:

    python3 models/make_fixtures.py            # test fixtures
    python3 models/make_fixtures.py --bench    # only the production-like bench model

Per model NAME the fixture directory holds:
    NAME.json / NAME.cbm   the model (leaf weights dropped from the JSON: unused)
    NAME.docs.jsonl        {"float": [number | null (NaN) | "inf" | "-inf"], "cat": ["..."]}
    NAME.expected.jsonl    {"raw": [...], "probability": [...], "class": [...]}
                           (probability/class only for classifiers; class is the
                           class index, as the C API reports it)
and cat_hash.jsonl maps strings to CatBoost's own hash of them.

Deterministic: fixed seeds, one training thread.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import catboost
from catboost import CatBoost, CatBoostClassifier, CatBoostRegressor, Pool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "catboost")
BENCH_DATA = os.path.join(ROOT, "benches", "data")

CTR_TYPES = {
    "Borders", "Buckets", "Counter", "FeatureFreq",
    "BinarizedTargetMeanValue", "FloatTargetMeanValue",
}


def zipf_choice(rng, prefix, n_values, size):
    """High-cardinality categorical values with a long tail, like user agents."""
    ranks = np.minimum(rng.zipf(1.3, size=size), n_values) - 1
    return ["%s%d" % (prefix, r) for r in ranks]


def make_rows(rng, n, n_float, cat_specs, nan_rate=0.0):
    floats = rng.randn(n, n_float)
    if nan_rate:
        floats[rng.rand(n, n_float) < nan_rate] = np.nan
    cats = [zipf_choice(rng, prefix, card, n) for prefix, card in cat_specs]
    rows = []
    for i in range(n):
        rows.append([float(v) for v in floats[i]] + [c[i] for c in cats])
    return rows


def add_special_docs(rows, n_float, n_cat):
    """Edge cases appended to every document set: NaN, +-inf, unseen and empty
    categorical values, a long value with 8-bit bytes."""
    nan, inf = float("nan"), float("inf")
    base = rows[0]
    specials = []
    for fill in (nan, inf, -inf, 0.0):
        specials.append([fill] * n_float + base[n_float:])
    for cat in ("", "never-seen-in-training", "z\u00fcrich-\u6771\u4eac" * 9):
        specials.append(base[:n_float] + [cat] * n_cat)
    specials.append([nan] * n_float + [""] * n_cat)
    return rows + specials


def float_to_json(v):
    if math.isnan(v):
        return None
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def write_jsonl(path, items):
    with open(path, "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False, allow_nan=False) + "\n")


def write_docs(path, rows, n_float):
    write_jsonl(path, ({"float": [float_to_json(v) for v in r[:n_float]], "cat": r[n_float:]} for r in rows))


def expected_predictions(model, pool, kind, class_names=None):
    raw = np.asarray(model.predict(pool, prediction_type="RawFormulaVal"), dtype=np.float64)
    if raw.ndim == 1:
        raw = raw.reshape(-1, 1)
    out = [{"raw": [float(v) for v in row]} for row in raw]
    if kind == "binary":
        prob = model.predict(pool, prediction_type="Probability")[:, 1]
        cls = model.predict(pool, prediction_type="Class")
        for o, p, c in zip(out, prob, cls):
            o["probability"] = [float(p)]
            o["class"] = [float(list(class_names).index(c))]
    elif kind == "multiclass":
        prob = model.predict(pool, prediction_type="Probability")
        cls = model.predict(pool, prediction_type="Class")
        for o, p, c in zip(out, prob, cls):
            o["probability"] = [float(v) for v in p]
            label = c[0] if np.ndim(c) else c
            o["class"] = [float(list(class_names).index(label))]
    return out


def strip_leaf_weights(json_path):
    """Leaf weights are training statistics the evaluator never reads."""
    with open(json_path, encoding="utf-8") as f:
        model = json.load(f)
    for tree in model.get("oblivious_trees", []):
        tree.pop("leaf_weights", None)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(model, f, ensure_ascii=False, separators=(",", ":"))


def ctr_types_of(json_path):
    with open(json_path, encoding="utf-8") as f:
        model = json.load(f)
    return {c["ctr_type"] for c in model["features_info"].get("ctrs", [])}


def export(model, name, pool, rows, n_float, kind, out_dir, class_names=None, train_pool=None):
    json_path = os.path.join(out_dir, name + ".json")
    model.save_model(json_path, format="json", pool=train_pool)
    strip_leaf_weights(json_path)
    model.save_model(os.path.join(out_dir, name + ".cbm"))
    write_docs(os.path.join(out_dir, name + ".docs.jsonl"), rows, n_float)
    write_jsonl(os.path.join(out_dir, name + ".expected.jsonl"), expected_predictions(model, pool, kind, class_names))
    return ctr_types_of(json_path)


def pool_of(rows, n_float, label=None, feature_names=None):
    n_cat = len(rows[0]) - n_float
    return Pool(rows, label, cat_features=list(range(n_float, n_float + n_cat)) or None,
                feature_names=feature_names)


def binary_ctr(out_dir):
    """Binary classifier: high-cardinality categoricals, CTR combinations of
    Borders/Buckets/Counter, a one-hot feature, NaN mode Min, metadata."""
    rng = np.random.RandomState(7)
    n_float, cat_specs = 3, [("ua", 200), ("asn", 60), ("path", 30), ("m", 3)]
    rows = make_rows(rng, 1500, n_float, cat_specs, nan_rate=0.05)
    y = []
    for r in rows:
        score = (int(r[3][2:]) % 3 == 0) + (int(r[4][3:]) % 2) + (r[5] in ("path1", "path2")) * (r[6] == "m1")
        score += 0.7 * (r[0] if not math.isnan(r[0]) else 1.0) + 0.4 * rng.randn()
        y.append(int(score > 1.2))
    model = CatBoostClassifier(
        iterations=30, depth=6, learning_rate=0.3, random_seed=1, thread_count=1, verbose=0, allow_writing_files=False,
        one_hot_max_size=4, nan_mode="Min",
        simple_ctr=["Borders", "Buckets", "Counter"], combinations_ctr=["Borders", "Counter"],
        max_ctr_complexity=3,
    )
    # Named like request features, so the export carries names to map by.
    names = ["rtt_ms", "header_count", "body_kb", "user_agent", "asn", "path", "method"]
    train = pool_of(rows, n_float, y, names)
    model.fit(train)
    model.get_metadata()["edgeguard.threshold"] = "0.83"
    docs = add_special_docs(make_rows(np.random.RandomState(8), 190, n_float, cat_specs, 0.05), n_float, len(cat_specs))
    types = export(model, "binary_ctr", pool_of(docs, n_float, feature_names=names), docs, n_float, "binary", out_dir,
                   model.classes_, train_pool=train)
    return types, model


def renamed_ctr_model(out_dir, source_name, name, renames, n_float, kind):
    """CatBoost trains FeatureFreq and FloatTargetMeanValue only on GPU. Their
    evaluation formulas are those of Counter and BinarizedTargetMeanValue, so a
    CPU model's CTRs are relabelled in its JSON, the wheel loads that JSON, and
    the model CatBoost loaded is exported again and predicts the expected values.

    CatBoost's JSON loader reads CTR mean sums as integers (json_model_helpers.cpp,
    CtrDataFromJson: GetInteger), so the reloaded model differs from the trained
    one; that is why the fixture is the re-export, not the relabelled file."""
    with open(os.path.join(out_dir, source_name + ".json"), encoding="utf-8") as f:
        model_json = json.load(f)

    def relabel(ctr_type):
        return dict(renames).get(ctr_type, ctr_type)

    def relabel_identifier(identifier):
        parsed = json.loads(identifier)
        parsed["type"] = relabel(parsed["type"])
        return json.dumps(parsed, separators=(",", ":"))

    for ctr in model_json["features_info"].get("ctrs", []):
        ctr["ctr_type"] = relabel(ctr["ctr_type"])
        ctr["identifier"] = relabel_identifier(ctr["identifier"])
    model_json["ctr_data"] = {relabel_identifier(k): v for k, v in model_json["ctr_data"].items()}
    relabelled = "/tmp/edgeguard-relabelled-%s.json" % name
    with open(relabelled, "w", encoding="utf-8") as f:
        json.dump(model_json, f)
    model = CatBoost()
    model.load_model(relabelled, format="json")
    os.unlink(relabelled)

    json_path = os.path.join(out_dir, name + ".json")
    model.save_model(json_path, format="json")
    strip_leaf_weights(json_path)
    model.save_model(os.path.join(out_dir, name + ".cbm"))
    docs = [json.loads(line) for line in open(os.path.join(out_dir, source_name + ".docs.jsonl"), encoding="utf-8")]
    rows = [[float("nan") if v is None else float(v) for v in d["float"]] + d["cat"] for d in docs]
    write_docs(os.path.join(out_dir, name + ".docs.jsonl"), rows, n_float)
    class_names = json.loads(model.get_metadata()["class_params"])["class_names"] if kind == "binary" else None
    write_jsonl(os.path.join(out_dir, name + ".expected.jsonl"),
                expected_predictions(model, pool_of(rows, n_float), kind, class_names))
    return ctr_types_of(json_path)


def regression_deep(out_dir):
    """Float-only regression, depth 10, NaN mode Max (NaN goes right of every border)."""
    rng = np.random.RandomState(11)
    rows = make_rows(rng, 2000, 6, [], nan_rate=0.1)
    y = [sum((0 if math.isnan(v) else v) * (i + 1) for i, v in enumerate(r)) + 0.1 * rng.randn() for r in rows]
    model = CatBoostRegressor(iterations=4, depth=10, random_seed=2, thread_count=1, verbose=0, allow_writing_files=False,
                              nan_mode="Max", border_count=32)
    model.fit(pool_of(rows, 6, y))
    docs = add_special_docs(make_rows(np.random.RandomState(12), 190, 6, [], 0.1), 6, 0)
    return export(model, "regression_deep", pool_of(docs, 6), docs, 6, "raw", out_dir)


def multiclass_cat(out_dir):
    """MultiClass with categorical CTRs: Borders, Buckets, BinarizedTargetMeanValue."""
    rng = np.random.RandomState(21)
    n_float, cat_specs = 2, [("ref", 80), ("lang", 25)]
    rows = make_rows(rng, 2000, n_float, cat_specs)
    y = [(int(r[2][3:]) % 3 + (r[0] > 0.5) + (int(r[3][4:]) % 2)) % 3 for r in rows]
    model = CatBoostClassifier(
        loss_function="MultiClass", iterations=25, depth=4, random_seed=3, thread_count=1, verbose=0, allow_writing_files=False,
        simple_ctr=["Borders", "Buckets", "BinarizedTargetMeanValue"],
        combinations_ctr=["Borders", "BinarizedTargetMeanValue"],
    )
    model.fit(pool_of(rows, n_float, y))
    docs = add_special_docs(make_rows(np.random.RandomState(22), 190, n_float, cat_specs), n_float, len(cat_specs))
    return export(model, "multiclass_cat", pool_of(docs, n_float), docs, n_float, "multiclass", out_dir,
                  model.classes_)


def regression_cat(out_dir):
    """Regression with categorical CTRs (BinarizedTargetMeanValue over a
    binarized target, Borders, Counter) and an explicit scale_and_bias."""
    rng = np.random.RandomState(31)
    n_float, cat_specs = 2, [("city", 150), ("dev", 10)]
    rows = make_rows(rng, 2000, n_float, cat_specs)
    y = [r[0] + (int(r[2][4:]) % 7) / 3.0 + (r[3] == "dev1") + 0.1 * rng.randn() for r in rows]
    model = CatBoostRegressor(
        iterations=25, depth=5, random_seed=4, thread_count=1, verbose=0, allow_writing_files=False,
        simple_ctr=["BinarizedTargetMeanValue:TargetBorderCount=3", "Borders", "Counter"],
        combinations_ctr=["BinarizedTargetMeanValue:TargetBorderCount=2"],
    )
    model.fit(pool_of(rows, n_float, y))
    scale, bias = model.get_scale_and_bias()
    model.set_scale_and_bias(1.75 * scale, [b - 0.3 for b in (bias if isinstance(bias, list) else [bias])])
    docs = add_special_docs(make_rows(np.random.RandomState(32), 190, n_float, cat_specs), n_float, len(cat_specs))
    return export(model, "regression_cat", pool_of(docs, n_float), docs, n_float, "raw", out_dir)


def cat_hash_table(out_dir):
    """Strings and CatBoost's hash of each, read back from the JSON export's
    cat_features_hash table (CatBoost hashes the training values itself)."""
    values = ["", "Moscow", "a", "ab", "abc", "abcd", "\u00ff", "\u00e9t\u00e9", "\u6771\u4eac\u90fd",
              "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"]
    # ASCII so the character count is the byte count: every length branch of
    # CityHash (0-16, 17-32, 33-64, 64-byte blocks) at and around its edges.
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_/ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    rng = np.random.RandomState(41)
    for length in list(range(1, 70)) + [127, 128, 129, 191, 192, 193, 255, 256, 1000]:
        values.append("".join(alphabet[i] for i in rng.randint(len(alphabet), size=length)))
    # Bytes >= 0x80 in every position class (first, middle, last; short and long).
    values += ["\u00e4", "x\u00f6", "\u00fc\u00df\u00e4\u00f6\u00fc\u00df\u00e4\u00f6\u00fc",
               "\u00ff" * 40, "\u0416\u0416\u0416-\u0416" * 20]
    rows = [[0.0, v] for v in values]
    y = [i % 2 for i in range(len(values))]
    pool = Pool(rows, y, cat_features=[1])
    model = CatBoostClassifier(iterations=1, depth=1, thread_count=1, verbose=0, random_seed=0,
                               allow_writing_files=False)
    model.fit(pool)
    path = "/tmp/edgeguard-cat-hash-model.json"
    model.save_model(path, format="json", pool=pool)
    with open(path, encoding="utf-8") as f:
        table = {e["value"]: e["hash"] for e in json.load(f)["features_info"]["cat_features_hash"]}
    os.unlink(path)
    missing = [v for v in values if v not in table]
    assert not missing, "CatBoost did not export a hash for %r" % missing[:3]
    assert table["Moscow"] == 605890862, table["Moscow"]
    write_jsonl(os.path.join(out_dir, "cat_hash.jsonl"),
                ({"value": v, "utf8_len": len(v.encode("utf-8")), "hash": table[v]} for v in values))


def bench_model(name, iterations, n_float, cat_specs, n_rows, seed):
    """A binary bot-scoring-like model for benches/model.rs: depth 6,
    categorical features with CTRs and combinations."""
    rng = np.random.RandomState(seed)
    rows = make_rows(rng, n_rows, n_float, cat_specs, nan_rate=0.02)
    y = []
    for r in rows:
        s = sum(0 if math.isnan(v) else v for v in r[:4]) + (int(r[n_float][2:]) % 5 == 0) * 2
        s += (int(r[n_float + 3][7:]) % 4 == 1) + rng.randn()
        y.append(int(s > 1.0))
    model = CatBoostClassifier(iterations=iterations, depth=6, random_seed=5, verbose=0, thread_count=2, allow_writing_files=False,
                               one_hot_max_size=4, max_ctr_complexity=2)
    model.fit(pool_of(rows, n_float, y))
    os.makedirs(BENCH_DATA, exist_ok=True)
    json_path = os.path.join(BENCH_DATA, name + ".json")
    model.save_model(json_path, format="json")
    strip_leaf_weights(json_path)
    model.save_model(os.path.join(BENCH_DATA, name + ".cbm"))
    docs = make_rows(np.random.RandomState(seed + 1), 256, n_float, cat_specs, 0.02)
    write_docs(os.path.join(BENCH_DATA, name + "-docs.jsonl"), docs, n_float)
    write_jsonl(os.path.join(BENCH_DATA, name + "-expected.jsonl"),
                expected_predictions(model, pool_of(docs, n_float), "binary", model.classes_))


def bench_models():
    # Production-like: 1000 trees, 20 float and 8 categorical features.
    bench_model("model-bench", 1000, 20,
                [("ua", 2000), ("asn", 500), ("path", 300), ("country", 120), ("accept", 40),
                 ("tls", 60), ("method", 5), ("proto", 3)], 8000, 51)
    # The shape the official library's baseline was measured on: 300 trees,
    # 4 categorical features.
    bench_model("model-baseline", 300, 6,
                [("ua", 2000), ("asn", 500), ("path", 300), ("country", 120)], 8000, 61)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", action="store_true", help="build only the benchmark model (benches/data)")
    args = parser.parse_args()
    print("catboost", catboost.__version__, file=sys.stderr)
    if args.bench:
        bench_models()
        return
    os.makedirs(FIXTURES, exist_ok=True)

    seen = set()
    types, _ = binary_ctr(FIXTURES)
    seen |= types
    seen |= regression_deep(FIXTURES)
    seen |= multiclass_cat(FIXTURES)
    seen |= regression_cat(FIXTURES)
    assert "Counter" in seen and "BinarizedTargetMeanValue" in seen, seen
    seen |= renamed_ctr_model(FIXTURES, "binary_ctr", "binary_featurefreq", [("Counter", "FeatureFreq")], 3, "binary")
    seen |= renamed_ctr_model(FIXTURES, "regression_cat", "regression_floatmean",
                              [("BinarizedTargetMeanValue", "FloatTargetMeanValue")], 2, "raw")
    missing = CTR_TYPES - seen
    assert not missing, "no fixture exercises CTR types %s" % sorted(missing)
    cat_hash_table(FIXTURES)


if __name__ == "__main__":
    main()
