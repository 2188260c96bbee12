#!/usr/bin/env python3
"""Checks every figure or name the docs copy from a shipped file against
that file (run by `make lint`, after scripts/check-docs.py).

    scripts/check-doc-facts.py [ROOT] [--no-cargo]

Facts are read from the code and the shipped files of ROOT (default: the
repository this script is in), never typed here, so an option, a metric or
a stage added tomorrow is checked too:

- thresholds: a decision line's `model=NAME … threshold=X`, replay's
  `model NAME (threshold X)`, "`NAME` threshold: X", and the Grafana
  dashboard's score cut, against models/NAME.json's `edgeguard.threshold`
  (X as precise as it is written);
- feature schemas: `--schema N` beside a shipped model, and "schema N" in a
  sentence about the shipped models, against src/features/schema.rs's
  SCHEMA_VERSION and every shipped model's `edgeguard.schema`;
- install paths: every /usr or /etc path naming edgeguard is one that
  `make install` (Makefile, as `make -n install` prints it) or the .deb
  (scripts/build-deb.sh's overrides and its /etc copies) installs;
- options: docs/configuration.md's option table has every option of the
  `options!` table of src/config/options.rs, no other, in its order, with
  its scopes; the defaults are compared by a Rust test that resolves them
  (src/config/doc_defaults.rs, through cargo; --no-cargo skips it); every
  key of a `configure{…}` or `access{…}` written in a doc is an option
  allowed there;
- actions: every action name in a doc table's `action` column, and every
  one of them in docs/configuration.md's table and in docs/metrics.md's
  `edgeguard_decisions_total` row (src/outcome.rs);
- the gate's stages: src/gate/mod.rs's numbered diagram against the order
  `run()` calls them in, and every numbered stage diagram in the docs
  against it (same stages, same order, none "empty today");
- modules: docs/architecture.md's module table lists every module
  src/lib.rs declares, no other;
- metrics: every family src/metrics/ exposes is in docs/metrics.md, and
  every metric name a doc or the Grafana dashboard uses exists;
- references: `FILE:LINE` exists (`FILE:LINE@COMMIT` in that commit), and
  "`SYMBOL` in `FILE`" names a symbol the file has.

Exit status 0 when everything holds, 1 with one line per problem
(FILE:LINE: what) otherwise. Python 3 standard library (and make, git and
cargo for their parts).
"""

import json
import os
import pathlib
import re
import subprocess
import sys

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# Where metric families are declared, and the page that documents them.
METRIC_HOMES = {"src/metrics": "docs/metrics.md", "src/kafka": "docs/kafka.md"}
# A measurement of a given day or commit: history, true as written.
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b[0-9a-f]{7,12}\b(?=[:,;)]|\s*$)")
NUMBER = r"[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?"


def pages(root):
    """The Markdown the checks read: README.md, RELIABILITY.md, BENCHMARKS.md,
    docs/**, models/README.md and packaging's README.Debian."""
    out = [root / n for n in ("README.md", "RELIABILITY.md", "BENCHMARKS.md", "models/README.md")]
    out += sorted((root / "docs").rglob("*.md"))
    out.append(root / "packaging" / "debian" / "README.Debian")
    return [p for p in out if p.exists()]


def code_lines(text):
    """(number, line, in a fenced block) for every line."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            yield number, line, True
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            fence = None
            yield number, line, True
        else:
            yield number, line, fence is not None


def agrees(written, value):
    """Whether `written` (a decimal as a doc writes it) is `value` rounded or
    cut to the digits it shows."""
    try:
        w = float(written)
    except ValueError:
        return False
    if "e" in written.lower():
        return abs(w - value) <= abs(value) * 1e-6
    digits = len(written.split(".")[1]) if "." in written else 0
    step = 10.0 ** -digits
    return abs(w - value) <= step / 2 + 1e-15 or abs(w - int(value / step) * step) <= 1e-15


class Facts:
    """What the shipped files say."""

    def __init__(self, root):
        self.root = root
        self.models = {}
        for path in sorted((root / "models").glob("*.json")):
            info = json.loads(path.read_text(encoding="utf-8")).get("model_info", {})
            if "edgeguard.threshold" in info or "edgeguard.schema" in info:
                self.models[path.stem] = info
        schema_rs = (root / "src/features/schema.rs").read_text(encoding="utf-8")
        self.schema = int(re.search(r"pub const SCHEMA_VERSION: u32 = (\d+);", schema_rs).group(1))
        self.options, self.option_scopes = self.read_options()
        self.actions = self.read_actions()
        self.stages, self.run_order = self.read_stages()
        self.metrics = self.read_metrics()
        self.buckets = self.read_buckets()
        self.loaded = self.read_package_models()

    def threshold(self, name):
        t = self.models.get(name, {}).get("edgeguard.threshold")
        return None if t is None else float(t)

    def read_options(self):
        """The `options!` rows, in order, and each one's scope letters."""
        text = (self.root / "src/config/options.rs").read_text(encoding="utf-8")
        scopes = {}
        for m in re.finditer(r"const (\w+): Scopes = Scopes \{([^}]*)\}", text):
            flags = dict(re.findall(r"(\w+): (true|false)", m.group(2)))
            scopes[m.group(1)] = {letter for letter, key in (("C", "configure"), ("A", "access"), ("F", "file"))
                                  if flags.get(key) == "true"}
        body = text[text.index("\noptions! {"):]
        body = body[:body.index("\n}\n")]
        names, where = [], {}
        for m in re.finditer(r"^    (\w+): (.*)$", body, re.M):
            rest = body[m.start(2):]
            scope = re.search(r",\s*(" + "|".join(map(re.escape, scopes)) + r")\s*,", rest)
            names.append(m.group(1))
            where[m.group(1)] = scopes[scope.group(1)] if scope else set()
        return names, where

    def read_actions(self):
        text = (self.root / "src/outcome.rs").read_text(encoding="utf-8")
        return re.findall(r"^\s+\w+ = \d+ => \"(\w+)\",$", text, re.M)

    def read_stages(self):
        """The numbered stages of src/gate/mod.rs's diagram, and the stages
        in the order `run()` calls them (`rules::before` is `rules`,
        `clients::observe` is `clients`; the clients module's other calls
        belong to the decide and respond stages)."""
        text = (self.root / "src/gate/mod.rs").read_text(encoding="utf-8")
        stages = [(int(n), name) for n, name in re.findall(r"^//!.*│\s+(\d+)\s+(\w+)\s", text, re.M)]
        body = text[text.index("pub fn run"):]
        body = body[:body.index("\n}\n")]
        calls = re.findall(r"\b(stages|rules|clients)::(\w+)\(", body)
        order = [{"rules": "rules", "clients": "clients"}.get(mod, fn) for mod, fn in calls
                 if mod != "clients" or fn == "observe"]
        return stages, order

    def read_metrics(self):
        """Every family a Rust string literal names under the metrics'
        homes (METRIC_HOMES: nginx's, replay's), and its home."""
        names = {}
        for d in METRIC_HOMES:
            for path in sorted((self.root / d).rglob("*.rs")) if (self.root / d).is_dir() else []:
                # `enum X as "edgeguard_x"` is a C type's name (c_enum!), no family.
                for m in re.finditer(r"(?<!as )\"(edgeguard_[a-z0-9_]*[a-z0-9])\"", path.read_text(encoding="utf-8")):
                    names.setdefault(m.group(1), d)
        return names

    def read_buckets(self):
        text = (self.root / "src/metrics/mod.rs").read_text(encoding="utf-8")
        m = re.search(r"SCORE_BUCKETS: \[f64; \d+\] = \[([^\]]*)\]", text)
        return [float(x) for x in re.findall(NUMBER, m.group(1))] if m else []

    def read_package_models(self):
        """The models the package's configuration loads."""
        path = self.root / "packaging/edgeguard.json.in"
        if not path.exists():
            return sorted(self.models)
        return sorted(json.loads(path.read_text(encoding="utf-8")).get("models", {}))


class Checker:
    def __init__(self, root, cargo=True):
        self.root = root
        self.cargo = cargo
        self.facts = Facts(root)
        self.problems = []

    def problem(self, path, number, message):
        rel = path.relative_to(self.root) if path.is_absolute() else path
        self.problems.append(f"{rel}:{number}: {message}")

    # ---- thresholds and schemas ---------------------------------------------

    def check_thresholds(self, page, number, line):
        f = self.facts
        found = [(m.group(1), m.group(2)) for m in
                 re.finditer(r"model=(\w+)\b[^\n]*?\bthreshold=(" + NUMBER + ")", line)]
        found += [(m.group(1), m.group(2)) for m in
                  re.finditer(r"model (\w+) \(threshold (" + NUMBER + r")\)", line)]
        found += [(m.group(1), m.group(2)) for m in
                  re.finditer(r"`(\w+)` threshold:?\s*\**(" + NUMBER + ")", line)]
        if "threshold" in line:
            # "Shipped `bot` threshold: 0.0931 …; `spoof`: 0.0651"
            found += [(m.group(1), m.group(2)) for m in
                      re.finditer(r"`(\w+)`:\s*\**(" + NUMBER + ")", line)]
        for name, written in found:
            t = f.threshold(name)
            if t is not None and not agrees(written, t):
                self.problem(page, number, f"threshold {written} for model {name}: "
                             f"models/{name}.json says {t:.6g}")

    def check_schemas(self, page, number, line, sentence):
        want = self.facts.schema
        shipped = r"models/(?:%s)\.json" % "|".join(map(re.escape, self.facts.models)) if self.facts.models else None
        for m in re.finditer(r"--schema\s+(\d+)", line):
            if shipped and re.search(r"(?<!legacy/)" + shipped, line) and int(m.group(1)) != want:
                self.problem(page, number, f"--schema {m.group(1)} with a shipped model: "
                             f"the shipped models are schema {want}")
        if sentence is not None:
            # "schema N" said of the shipped models: "shipped" shortly
            # before it (or after), no older schema named in between.
            for m in re.finditer(r"\bschema[ -](\d+)\b", sentence):
                near = sentence[max(0, m.start() - 50):m.end() + 30]
                if int(m.group(1)) == want or "shipped" not in near or DATED.search(sentence):
                    continue
                between = near[near.index("shipped"):] if near.index("shipped") < 50 else ""
                if re.search(r"\b(legacy|older|former|before)\b", between):
                    continue
                self.problem(page, number, f"schema {m.group(1)} said of the shipped models: "
                             f"src/features/schema.rs says {want}")

    def check_model_files(self):
        for name, info in self.facts.models.items():
            s = info.get("edgeguard.schema")
            if s is not None and int(s) != self.facts.schema:
                self.problem(pathlib.Path(f"models/{name}.json"), 0,
                             f"edgeguard.schema {s}, but SCHEMA_VERSION is {self.facts.schema}")

    # ---- paths ---------------------------------------------------------------

    def installed(self):
        """Every path `make install` and the .deb put on a system, as
        regular expressions (the .deb's multiarch directory matches any)."""
        if hasattr(self, "_installed"):
            return self._installed
        layouts = [{}]
        deb = self.root / "scripts/build-deb.sh"
        extra = []
        if deb.exists():
            text = re.sub(r"\\\n\s*", " ", deb.read_text(encoding="utf-8"))
            m = re.search(r"make -s install ([^\n]*(?:\\\n[^\n]*)*)", text)
            if m:
                given = re.findall(r"(\w+)=\"?([^\s\"]+)\"?", m.group(1).replace("\\\n", " "))
                layouts.append({k: v.replace("$multiarch", "MULTIARCH") for k, v in given if k != "DESTDIR"})
            for m in re.finditer(r"install (?:-m \d+ )?((?:\"\$stage[^\"]+\"\s*(?:\\\n\s*)?)+)", text):
                paths = re.findall(r"\"\$stage([^\"]+)\"", m.group(1))
                if len(paths) >= 2 and paths[-1].endswith("/"):
                    extra += [paths[-1] + p.rsplit("/", 1)[1] for p in paths[:-1]]
            for m in re.finditer(r"install -m \d+ ((?:[\w./-]+\s+)+)\"\$stage(/(?!DEBIAN)[^\"]+/)\"", text):
                extra += [m.group(2) + p.rsplit("/", 1)[-1] for p in m.group(1).split()]
            for m in re.finditer(r"install -d ((?:\"\$stage[^\"]+\"\s*)+)", text):
                extra += re.findall(r"\"\$stage([^\"]+)\"", m.group(1))
        files = set()
        for overrides in layouts:
            args = [f"{k}={v}" for k, v in overrides.items()]
            r = subprocess.run(["make", "-s", "-n", "-o", "build", "-C", str(self.root), "install",
                                "DESTDIR=/STAGE"] + args, capture_output=True, text=True)
            if r.returncode != 0:
                self.problem(pathlib.Path("Makefile"), 0, f"make -n install failed: {r.stderr.strip()}")
                continue
            text = r.stdout.replace("\\\n", " ")
            lua = [w for w in re.findall(r"\bfor m in ([^;]*);", text)]
            modules = lua[0].split() if lua else []
            for cmd in text.splitlines():
                words = cmd.split()
                dests = [w.rstrip(";") for w in words if w.startswith("/STAGE/")]
                if not dests:
                    continue
                if "$m" in cmd:
                    files.update(d[6:].replace("$m", mod) for d in dests for mod in modules)
                elif words[:2] == ["install", "-d"]:
                    files.update(d[6:] for d in dests)
                elif words[0] == "install" and dests[-1].endswith("/"):
                    srcs = [w for w in words[1:] if not w.startswith("-") and not w.startswith("/STAGE/")
                            and not re.fullmatch(r"\d+", w)]
                    files.update(dests[-1][6:] + s.rsplit("/", 1)[-1] for s in srcs)
                else:
                    files.update(d[6:] for d in dests)
        files.update(extra)
        # Each installed path as its components' patterns.
        self._installed = [tuple("[^/]+" if c in ("$multiarch", "MULTIARCH") else re.escape(c)
                                 for c in f.rstrip("/").split("/")[1:]) for f in sorted(files)]
        return self._installed

    def is_installed(self, path):
        """Whether `path` is installed, or a directory of something that is."""
        comps = path.rstrip("/").split("/")[1:]
        return any(len(comps) <= len(i) and all(re.fullmatch(p, c) for p, c in zip(i, comps))
                   for i in self.installed())

    def check_paths(self, page, number, text):
        for m in re.finditer(r"(?<![\w.$~/-])(/(?:usr|etc|lib)/[\w.+<>-]*(?:/[\w.+<>-]*)*)", text):
            path = m.group(1).rstrip(".,;:")
            if "edgeguard" not in path:
                continue
            path = path.replace("<multiarch>", "x86_64-linux-gnu")
            if "<" in path or self.is_installed(path):
                continue
            if path.startswith("/etc/edgeguard/"):
                # An admin's own file beside the shipped ones is fine; a
                # shipped file or directory's name where it is not
                # installed is not (/etc/edgeguard/models/bot.json).
                dirs = {c.replace("\\", "") for i in self.installed() if i[:3] == ("usr", "share", "edgeguard")
                        for c in i[3:-1]}
                if not any(c in dirs for c in path.split("/")[3:-1]):
                    continue
            elif path.startswith("/etc/") and not path.startswith("/etc/nginx/snippets/"):
                continue  # the admin's nginx files (/etc/nginx/conf.d/edgeguard.conf)
            self.problem(page, number, f"{path}: neither `make install` nor the .deb installs it")

    # ---- options, actions, stages, metrics -------------------------------------

    def option_table(self, page):
        """(line, name, scope letters) of the option table's rows."""
        rows, header = [], None
        for number, line, code in code_lines(page.read_text(encoding="utf-8")):
            if code or not line.startswith("|"):
                if rows:
                    break
                header = None if not line.startswith("|") else header
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
                continue
            if set("".join(cells)) <= set("-: "):
                continue
            if header[0] != "option" or "scope" not in header:
                header = None
                continue
            name = cells[0].strip("`")
            at = header.index("scope")
            rows.append((number, name, set(cells[at].split()) if at < len(cells) else set()))
        return rows

    def check_options(self):
        page = self.root / "docs/configuration.md"
        rows = self.option_table(page)
        if not rows:
            self.problem(page, 0, "no option table (| option | type | default | scope | meaning |)")
            return
        doc = [r[1] for r in rows]
        code, scopes = self.facts.options, self.facts.option_scopes
        for number, name, letters in rows:
            if name not in scopes:
                self.problem(page, number, f"option `{name}` is not in src/config/options.rs's options! table")
            elif letters != scopes[name]:
                self.problem(page, number, f"option `{name}`: scope {' '.join(sorted(letters))}, "
                             f"but src/config/options.rs gives {' '.join(sorted(scopes[name]))}")
        for name in code:
            if name not in doc:
                self.problem(page, 0, f"option `{name}` (src/config/options.rs) is not in the option table")
        common_doc = [n for n in doc if n in code]
        common_code = [n for n in code if n in doc]
        if common_doc != common_code:
            at = next(i for i, (a, b) in enumerate(zip(common_doc, common_code)) if a != b)
            number = rows[doc.index(common_doc[at])][0]
            self.problem(page, number, f"option table order: `{common_doc[at]}` where options! has "
                         f"`{common_code[at]}` (OPTIONS is in the table's order)")

    def check_defaults(self):
        """The defaults column against the resolved defaults, by the Rust
        test that resolves them (reads ROOT's docs/configuration.md)."""
        here = pathlib.Path(__file__).resolve().parents[1]
        env = dict(os.environ, EDGEGUARD_DOCS_ROOT=str(self.root))
        try:
            r = subprocess.run([os.environ.get("CARGO", "cargo"), "test", "--locked", "--quiet", "--lib",
                                "config::doc_defaults", "--", "--test-threads=1"],
                               cwd=here, env=env, capture_output=True, text=True)
        except OSError as e:
            self.problems.append(f"docs/configuration.md:0: the defaults need cargo ({e}); --no-cargo skips them")
            return
        if r.returncode != 0:
            out = r.stdout + r.stderr
            found = re.findall(r"^DOC: (.*)$", out, re.M)
            for line in found or [out.strip().splitlines()[-1] if out.strip() else "cargo test failed"]:
                self.problems.append(line)
        elif not re.search(r"\b[1-9]\d* passed", r.stdout):
            self.problems.append("docs/configuration.md:0: the defaults test did not run "
                                 "(cargo test --lib config::doc_defaults)")

    def table_column(self, text, column):
        """(line, cell) of every table column named `column`."""
        header = None
        for number, line, code in code_lines(text):
            if code or not line.lstrip().startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
                continue
            if set("".join(cells)) <= set("-: ") or column not in header:
                continue
            i = header.index(column)
            if i < len(cells):
                yield number, cells[i]

    def check_actions(self, page, text):
        actions = set(self.facts.actions)
        seen = set()
        for number, cell in self.table_column(text, "action"):
            for name in re.findall(r"`([^`]+)`|^(\w+)$", cell):
                name = name[0] or name[1]
                if not re.fullmatch(r"[a-z_]+", name):
                    continue
                seen.add(name)
                if name not in actions:
                    self.problem(page, number, f"action `{name}` is not an action of src/outcome.rs")
        if page == self.root / "docs/configuration.md":
            for name in self.facts.actions:
                if name not in seen:
                    self.problem(page, 0, f"action `{name}` (src/outcome.rs) is missing "
                                 "from the table of what a request gets")
        if page == self.root / "docs/metrics.md":
            row = next((l for l in text.splitlines() if l.startswith("| `edgeguard_decisions_total")), None)
            if row is None:
                self.problem(page, 0, "no `edgeguard_decisions_total` row")
            else:
                listed = set(re.findall(r"`(\w+)`", row))
                for name in self.facts.actions:
                    if name not in listed:
                        self.problem(page, 0, f"edgeguard_decisions_total: action `{name}` is not listed")

    def check_stage_code(self):
        f = self.facts
        names = [n for _, n in f.stages]
        if [n for n, _ in f.stages] != list(range(1, len(names) + 1)):
            self.problem(pathlib.Path("src/gate/mod.rs"), 0, "the stage diagram is not numbered 1, 2, …")
        if names != f.run_order:
            self.problem(pathlib.Path("src/gate/mod.rs"), 0,
                         f"the stage diagram says {' '.join(names)}; run() calls {' '.join(f.run_order)}")

    def check_stage_docs(self, page, text):
        want = [n for _, n in self.facts.stages]
        seq, first = [], None
        for number, line, code in list(code_lines(text)) + [(0, "", False)]:
            m = re.match(r"^\s*[│|]?\s*[│|]\s+(\d+)\s+([a-z]+)\b", line) if code else None
            if m:
                if first is None:
                    first = number
                seq.append((int(m.group(1)), m.group(2)))
                if re.search(r"empty today", line):
                    self.problem(page, number, f"stage `{m.group(2)}` exists: not \"empty today\"")
                continue
            if seq and (not code or not re.match(r"^\s*[│|]?\s*[│|]\s{3,}", line)):
                got = [n for _, n in seq]
                if got != want or [n for n, _ in seq] != list(range(1, len(seq) + 1)):
                    self.problem(page, first, f"stages {' '.join(got)}; src/gate/mod.rs has {' '.join(want)}")
                seq, first = [], None

    def check_metrics(self):
        for name, where in self.facts.metrics.items():
            page = self.root / METRIC_HOMES[where]
            text = page.read_text(encoding="utf-8") if page.exists() else ""
            if not re.search(r"`" + re.escape(name) + r"[`{]", text):
                self.problem(page, 0, f"metric `{name}` ({where}/) is not documented")

    def check_metric_names(self, page, number, line, series_cell=False):
        """A metric name the line uses exists: a name with a metric's suffix,
        replay's prefix, or any name in a series table's first column."""
        known = self.facts.metrics
        for m in re.finditer(r"(?<![$\w])(edgeguard_[a-z0-9_]*[a-z0-9])\b", line):
            full = m.group(1)
            base = re.sub(r"_(bucket|count|sum)$", "", full)
            if full in known or base in known:
                continue
            if series_cell or re.search(r"_(total|seconds|bucket|lag)$|^edgeguard_replay_", full):
                self.problem(page, number, f"no metric `{full}` in {' or '.join(METRIC_HOMES)}")

    def check_grafana(self):
        f = self.facts
        for path in sorted((self.root / "contrib").rglob("*.json")):
            try:
                dash = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as e:
                self.problem(path, 0, f"not JSON: {e}")
                continue
            for panel in dash.get("panels", []):
                exprs = " ".join(t.get("expr", "") for t in panel.get("targets", []))
                rel = path.relative_to(self.root)
                self.check_metric_names(rel, f"panel {panel.get('id')}", exprs)
                cuts = re.findall(r"edgeguard_score_bucket\{[^}]*le=\\?\"(" + NUMBER + r")\\?\"", exprs)
                if not cuts:
                    continue
                wanted = {}
                for name in f.loaded:
                    t = f.threshold(name)
                    if t is not None:
                        above = [b for b in f.buckets if b >= t]
                        wanted[name] = above[0] if above else None
                for cut in cuts:
                    if float(cut) not in wanted.values():
                        self.problem(rel, f"panel {panel.get('id')}",
                                     f"score cut le=\"{cut}\": the first bucket at or over the shipped "
                                     f"thresholds is {', '.join(f'{v:g} ({k})' for k, v in wanted.items())}")
                words = panel.get("title", "") + " " + panel.get("description", "")
                for m in re.finditer(r"(?<![\w.])(0\.[0-9]+)", words):
                    ok = any(agrees(m.group(1), float(c)) for c in cuts) or \
                        any(f.threshold(n) is not None and agrees(m.group(1), f.threshold(n)) for n in f.models)
                    if not ok:
                        self.problem(rel, f"panel {panel.get('id')}",
                                     f"{m.group(1)} in the title or description is neither the cut nor a threshold")

    def check_option_uses(self, page, text):
        """Every key of a `configure{…}` or `access{…}` table written in the
        page's code is an option allowed there (`lib_path` in configure,
        not in access)."""
        # Code blocks, and in prose the code spans, each on its own line.
        code = "\n".join(line if in_code else " ".join(re.findall(r"`([^`]*)`", line))
                         for _, line, in_code in code_lines(text))
        scopes = self.facts.option_scopes
        for m in re.finditer(r"(?<!\w)(configure|access)\s*(\{)", code):
            depth, i, keys = 0, m.start(2), []
            while i < len(code):
                c = code[i]
                if c in "{[(":
                    depth += 1
                elif c in "}])":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == '"' or c == "'":
                    end = code.find(c, i + 1)
                    i = end if end > 0 else len(code)
                elif code.startswith("--", i):
                    end = code.find("\n", i)
                    i = end if end > 0 else len(code)
                    continue
                elif depth == 1:
                    k = re.match(r"([A-Za-z_]\w*)\s*=(?!=)", code[i:])
                    if k and not re.match(r"[\w.]", code[i - 1]):
                        keys.append((k.group(1), code.count("\n", 0, i) + 1))
                        i += len(k.group(1))
                        continue
                i += 1
            letter = "C" if m.group(1) == "configure" else "A"
            for key, number in keys:
                if key not in scopes:
                    self.problem(page, number, f"{m.group(1)}{{ {key} = … }}: no option `{key}` "
                                 "in src/config/options.rs")
                elif letter not in scopes[key]:
                    self.problem(page, number, f"{m.group(1)}{{ {key} = … }}: `{key}` is not allowed "
                                 f"in {m.group(1)}{{}} (scopes {' '.join(sorted(scopes[key]))})")

    # ---- references -----------------------------------------------------------

    def resolve(self, name):
        if (self.root / name).is_file():
            return self.root / name
        if not hasattr(self, "_files"):
            self._files = [p for d in ("src", "lua", "scripts", "tests", "nginx-conf", "packaging", "models",
                                       "contrib", "docs")
                           for p in (self.root / d).rglob("*") if p.is_file()]
        found = [p for p in self._files if p.as_posix().endswith("/" + name)]
        return found[0] if len(found) == 1 else None

    def check_refs(self, page, number, line):
        for m in re.finditer(r"(?<![\w(])([\w./-]+\.(?:lua|rs|py|sh|conf|c|h)):(\d+)(?:@([0-9a-f]{7,40}))?", line):
            name, n, commit = m.group(1), int(m.group(2)), m.group(3)
            path = self.resolve(name)
            if path is None and commit and "/" in name:
                path = self.root / name  # moved or removed since: read in that commit
            if path is None:
                self.problem(page, number, f"{name}:{n}: no such file (or more than one)")
                continue
            if commit:
                # The commit is in the history of this script's repository
                # (a fixture tree has none of its own).
                here = pathlib.Path(__file__).resolve().parents[1]
                r = subprocess.run(["git", "-C", str(here), "show",
                                    f"{commit}:{path.relative_to(self.root).as_posix()}"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    self.problem(page, number, f"{name}:{n}@{commit}: not in that commit")
                    continue
                count = len(r.stdout.splitlines())
            else:
                count = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
            if n > count:
                self.problem(page, number, f"{name}:{n}: the file has {count} lines")
        for m in re.finditer(r"`([\w.:]+)(?:\(\))?` in `([\w./-]+\.\w+)`", line):
            symbol, name = m.group(1), m.group(2)
            path = self.resolve(name)
            if path is None:
                self.problem(page, number, f"`{symbol}` in `{name}`: no such file")
            elif symbol.split("::")[-1].split(".")[-1] not in path.read_text(encoding="utf-8", errors="replace"):
                self.problem(page, number, f"`{symbol}` is not in {name}")

    # ---- the walk -------------------------------------------------------------

    def check_page(self, page):
        text = page.read_text(encoding="utf-8")
        series_header = {n: True for n, _ in self.table_column(text, "series")}
        prose = []
        for number, line, code in code_lines(text):
            self.check_thresholds(page, number, line)
            self.check_paths(page, number, line)
            self.check_metric_names(page, number, line)
            cell = re.match(r"^\|\s*([^|]*)\|", line)
            if cell and series_header.get(number):
                self.check_metric_names(page, number, cell.group(1), series_cell=True)
            self.check_refs(page, number, line)
            self.check_schemas(page, number, line, None)
            if not code and line.strip():
                prose.append((number, line))
                continue
            self.check_paragraph(page, prose)
            prose = []
        self.check_paragraph(page, prose)
        self.check_actions(page, text)
        self.check_stage_docs(page, text)
        self.check_option_uses(page, text)

    def check_paragraph(self, page, lines):
        """The sentence-level checks of one paragraph of prose, `lines`
        being (number, text): a sentence is reported at its first line."""
        if not lines:
            return
        text = " ".join(line for _, line in lines)
        offsets, pos = [], 0
        for number, line in lines:
            offsets.append((pos, number))
            pos += len(line) + 1
        # A period ends a sentence only before a space or the end (not in
        # `models/bot.json`).
        for sentence in re.finditer(r"(?:[^.!?]|[.!?](?!\s|$))+(?:[.!?]|$)", text):
            number = max(n for o, n in offsets if o <= sentence.start())
            self.check_schemas(page, number, "", sentence.group(0))

    def check_modules(self):
        """docs/architecture.md's "The modules" table against src/lib.rs."""
        lib = (self.root / "src/lib.rs").read_text()
        declared = set(re.findall(r"^pub mod (\w+);", lib, re.M))
        page = self.root / "docs/architecture.md"
        text = page.read_text()
        section = re.search(r"^## The modules\n(.*?)(?=^## |\Z)", text, re.M | re.S)
        if not section:
            self.problem(page, 0, 'no "## The modules" section (the modules of src/lib.rs)')
            return
        first = text[: section.start()].count("\n") + 1
        listed = {}
        for i, line in enumerate(section.group(1).splitlines()):
            m = re.match(r"^\|\s*`src/(\w+)(?:/|\.rs)?`", line)
            if m:
                listed[m.group(1)] = first + 1 + i
        for name in sorted(declared - set(listed)):
            path = f"src/{name}.rs" if (self.root / f"src/{name}.rs").exists() else f"src/{name}/"
            self.problem(page, first, f"module `{path}` (src/lib.rs) is missing from the table")
        for name in sorted(set(listed) - declared):
            self.problem(page, listed[name], f"`src/{name}/` is no module of src/lib.rs")

    def run(self):
        self.check_model_files()
        self.check_modules()
        self.check_stage_code()
        for page in pages(self.root):
            self.check_page(page)
        self.check_options()
        self.check_metrics()
        self.check_grafana()
        if self.cargo:
            self.check_defaults()
        return self.problems


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parents[1]).resolve()
    problems = Checker(root, cargo="--no-cargo" not in argv).run()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-doc-facts: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
