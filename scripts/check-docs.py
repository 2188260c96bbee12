#!/usr/bin/env python3
"""Checks that the docs point at things that exist (run by `make lint`).

    scripts/check-docs.py [ROOT]

For README.md, BENCHMARKS.md and every docs/**/*.md under ROOT (default:
the repository this script is in):

- every relative link and image ([text](path), [text](path#anchor),
  [text](#anchor)) resolves to a file or directory, and an anchor to a
  heading of the Markdown file it names (GitHub's heading ids);
- every repository path written in code (`nginx-conf/record.conf`, also
  inside code blocks) exists: a path is a word that starts with one of the
  repository's top-level directories and a slash;
- every `make TARGET` written in code is a target of the Makefile,
  `cargo bench --bench NAME` a bench of Cargo.toml and `cargo test --test
  NAME` a file tests/NAME.rs;
- every page in docs/ is linked from docs/index.md;
- README.md has at most 400 lines;
- docs/detections.md's table of detection IDs is the one table in
  src/features/reasons.rs: the same IDs in the same order, each with its
  strength and its text (`check_detections`).

Exit status 0 when everything holds, 1 with one line per problem
(FILE:LINE: what) otherwise. Python 3 standard library only.
"""

import pathlib
import re
import sys
import urllib.parse

README_MAX_LINES = 400

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
MAKE = re.compile(r"\bmake\s+((?:[A-Z_]+=\S+\s+)*)([a-z][a-z0-9_-]*)")
CARGO_BENCH = re.compile(r"\bcargo\s+bench\b[^`\n]*?--bench\s+([A-Za-z0-9_-]+)")
CARGO_TEST = re.compile(r"\bcargo\s+test\b[^`\n]*?--test\s+([A-Za-z0-9_-]+)")
# After a path: characters that make it a pattern, not a path.
PATTERN_NEXT = set("*<{?$…[")

def slug(heading):
    """GitHub's id for a heading: lower case, markup and punctuation
    dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")

def split_lines(text):
    """(line number, line, in a fenced code block) for every line; fence
    lines themselves count as code."""
    out, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append((number, line, True))
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            fence = None
            out.append((number, line, True))
        else:
            out.append((number, line, fence is not None))
    return out

def anchors(path, cache={}):
    if path not in cache:
        ids, seen = set(), {}
        for _, line, code in split_lines(path.read_text(encoding="utf-8")):
            m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if code or not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
        cache[path] = ids
    return cache[path]

def makefile_targets(root):
    targets = set()
    for line in (root / "Makefile").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\- ]+):(?!=)", line)
        if m:
            targets.update(t for t in m.group(1).split() if not t.startswith("."))
        m = re.match(r"^\.PHONY:(.*)$", line)
        if m:
            targets.update(m.group(1).replace("\\", " ").split())
    return targets

def cargo_benches(root):
    text = (root / "Cargo.toml").read_text(encoding="utf-8")
    return set(re.findall(r"\[\[bench\]\]\s*\nname\s*=\s*\"([^\"]+)\"", text))

def top_level(root):
    """The repository's top-level directories, as paths in docs start."""
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
            and p.name not in ("target", "node_modules")}

class Checker:
    def __init__(self, root):
        self.root = root
        self.problems = []
        self.targets = makefile_targets(root)
        self.benches = cargo_benches(root)
        tops = sorted(top_level(root), key=len, reverse=True)
        self.path_word = re.compile(
            r"(?<![\w/.$~-])((?:" + "|".join(map(re.escape, tops)) + r")/[\w./+-]*)")

    def problem(self, path, number, message):
        self.problems.append(f"{path.relative_to(self.root)}:{number}: {message}")

    def rel(self, path):
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    def check_link(self, page, number, target):
        parsed = urllib.parse.urlsplit(target)
        if parsed.scheme or target.startswith("//"):
            return
        file_part = urllib.parse.unquote(parsed.path)
        fragment = urllib.parse.unquote(parsed.fragment)
        dest = page if not file_part else (page.parent / file_part)
        if not dest.exists():
            self.problem(page, number, f"link to a missing file: {target}")
            return
        if fragment and dest.is_file() and dest.suffix == ".md" and fragment not in anchors(dest):
            self.problem(page, number, f"link to a missing anchor: {target}")

    def check_code(self, page, number, code):
        for m in self.path_word.finditer(code):
            word = m.group(1).rstrip(".,;:")
            after = code[m.start(1) + len(word):m.start(1) + len(word) + 1]
            if after in PATTERN_NEXT:
                continue
            if not (self.root / word).exists():
                self.problem(page, number, f"no such path in the repository: {word}")
        for m in MAKE.finditer(code):
            if code[:m.start()].rstrip().endswith("luarocks"):
                continue  # `luarocks make ROCKSPEC`
            if m.group(2) not in self.targets:
                self.problem(page, number, f"no such make target: make {m.group(2)}")
        for m in CARGO_BENCH.finditer(code):
            if m.group(1) not in self.benches:
                self.problem(page, number, f"no such cargo bench: {m.group(1)}")
        for m in CARGO_TEST.finditer(code):
            if not (self.root / "tests" / f"{m.group(1)}.rs").exists():
                self.problem(page, number, f"no such cargo test: {m.group(1)}")

    def check_page(self, page):
        text = page.read_text(encoding="utf-8")
        links = set()
        for number, line, code in split_lines(text):
            if code:
                self.check_code(page, number, line)
                continue
            for m in CODE_SPAN.finditer(line):
                self.check_code(page, number, m.group(2))
            prose = CODE_SPAN.sub("", line)
            targets = [m.group(1) for m in LINK.finditer(prose)]
            m = REF_DEF.match(prose)
            if m:
                targets.append(m.group(1))
            for target in targets:
                self.check_link(page, number, target)
                links.add(target.split("#")[0])
        return links

    def run(self):
        pages = [self.root / "README.md", self.root / "BENCHMARKS.md"]
        docs = sorted((self.root / "docs").rglob("*.md")) if (self.root / "docs").is_dir() else []
        index_links = None
        for page in pages + docs:
            if not page.exists():
                self.problem(page, 0, "missing")
                continue
            links = self.check_page(page)
            if page == self.root / "docs" / "index.md":
                index_links = {self.rel(page.parent / t) for t in links if t and "://" not in t}
        if index_links is not None:
            for page in docs:
                name = self.rel(page)
                if name != "docs/index.md" and name not in index_links:
                    self.problem(page, 0, "not linked from docs/index.md")
        elif docs:
            self.problem(self.root / "docs", 0, "docs/index.md is missing")
        self.check_detections()
        readme = self.root / "README.md"
        if readme.exists():
            n = len(readme.read_text(encoding="utf-8").splitlines())
            if n > README_MAX_LINES:
                self.problem(readme, n, f"{n} lines; keep it within {README_MAX_LINES} "
                             "and move the detail to docs/")
        return self.problems

    def check_detections(self):
        """docs/detections.md's `| `id` | strength | text |` rows against the
        `detections!` table of src/features/reasons.rs (skipped in a tree
        without that file)."""
        table = self.root / "src" / "features" / "reasons.rs"
        page = self.root / "docs" / "detections.md"
        if not table.exists():
            return
        src = table.read_text(encoding="utf-8")
        start = src.find("detections! {")
        body = src[start:src.find("\n}\n", start)] if start >= 0 else ""
        want = [(name, grade.lower(), doc.replace('\\"', '"'))
                for name, grade, doc in DETECTION.findall(body)]
        if not want:
            self.problem(table, 0, "no detections! table found")
            return
        if not page.exists():
            self.problem(page, 0, "missing: it documents src/features/reasons.rs's detection IDs")
            return
        got = []
        for number, line, code in split_lines(page.read_text(encoding="utf-8")):
            m = DETECTION_ROW.match(line)
            if m and not code:
                got.append((number, (m.group(1), m.group(2), m.group(3).strip())))
        rows = [r for _, r in got]
        # The documented rows are the first table of IDs: the table's own
        # rows in order (the "Measured" table has no strength column).
        for i, w in enumerate(want):
            if i >= len(rows):
                self.problem(page, 0, f"detection ID `{w[0]}` is not in the table (src/features/reasons.rs)")
                continue
            if rows[i] != w:
                self.problem(page, got[i][0], f"row {rows[i]} differs from src/features/reasons.rs: {w}")
        for number, r in got[len(want):]:
            self.problem(page, number, f"detection ID `{r[0]}` is not in src/features/reasons.rs")


DETECTION = re.compile(r'\w+ = "([a-z0-9_]+)", (Certain|Ambiguous),\s*"((?:[^"\\]|\\.)*)";')
DETECTION_ROW = re.compile(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*(certain|ambiguous)\s*\|(.*)\|\s*$")


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    problems = Checker(root.resolve()).run()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
