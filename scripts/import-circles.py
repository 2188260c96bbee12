#!/usr/bin/env python3
"""Import circles between the files of src/ (issue 30: none anywhere).

Each file is a node; an edge is a path it names that leads to another
file's module: `use crate::a::b`, `super::x`, `self::y`, a child module
named from its mod.rs (`pub use child::X`), `$crate::...` in macros.
Tests (`#[cfg(test)] mod ... { }`) and comments are skipped. A path is
resolved to the deepest file module it names, so `super::sibling::T` is
an edge to the sibling and `super::T` an edge to the parent's mod.rs.
`main.rs` and `cli/` are the binary crate; `crate::` there is the binary.

Then the folders (the top-level modules) against LAYERS: an import from a
folder to one of a higher layer is an arrow running back up (issue 40),
and so is a circle between folders of one layer.

Prints every circle and back-arrow with its edges; exits 1 when there is
one.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "src"

# The layers of src/, lowest first: a folder imports only from layers below
# its own (or, without a circle, from its own). The request path (ffi ->
# gate -> config, rules, signals::live, scorer ...) then never pulls in the
# offline tools (replay, kafka), and each layer is testable with only what
# lies under it. A new top-level module is refused until it is placed here.
LAYERS = [
    ["c_enum", "outcome", "net", "tls", "headers", "model"],  # leaves
    ["features", "clients", "verified"],  # what one request shows
    ["scorer", "challenge", "hop"],  # judging it
    ["signals"],  # what the fleet saw (looked up per request)
    ["rules"],  # what the site owner decides
    ["config"],  # the options, resolved
    ["metrics"],  # the counts
    ["gate"],  # one request's whole job
    ["load"],  # options in, the engine out (nginx and the offline tools)
    ["replay"],  # the gate offline
    ["ffi", "kafka"],  # the C ABI; replay from Kafka
    ["lib", "bin"],  # the crate root; the `edgeguard` binary (main.rs, cli/)
]
LAYER = {folder: i for i, names in enumerate(LAYERS) for folder in names}


def module_of(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts == ["lib"]:
        return ()
    if parts == ["main"]:
        return ("<bin>",)
    if parts and parts[0] == "cli":
        return ("<bin>",) + tuple(parts)
    return tuple(parts)


def without_tests_and_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    out, last = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < last:
            continue
        out.append(text[last:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        last = j
    out.append(text[last:])
    return "".join(out)


files = {}
for d, _, names in os.walk(ROOT):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(d, n)
            files[module_of(os.path.relpath(p, ROOT))] = p


def deepest(path):
    for n in range(len(path), -1, -1):
        if tuple(path[:n]) in files:
            return tuple(path[:n])
    return None


def paths_in(tokens, base):
    """Every full path a `use` tree (or a plain path) names."""
    if not tokens:
        yield base
        return
    t = tokens[0]
    if t.startswith("{"):
        depth, item, items = 0, "", []
        for c in t[1:-1]:
            depth += {"{": 1, "}": -1}.get(c, 0)
            if c == "," and depth == 0:
                items.append(item)
                item = ""
            else:
                item += c
        items.append(item)
        for it in items:
            sub = re.findall(r"\{.*\}|\w+", it.split(" as ")[0])
            if sub:
                yield from paths_in(sub, base)
        return
    if t == "self":
        yield from paths_in(tokens[1:], base)
    elif t == "super":
        yield from paths_in(tokens[1:], base[:-1])
    else:
        yield from paths_in(tokens[1:], base + [t])


edges = {}
for mod, p in files.items():
    text = without_tests_and_comments(open(p, encoding="utf-8").read())
    is_dir = os.path.basename(p) in ("mod.rs", "lib.rs", "main.rs")
    here = list(mod)
    crate = ["<bin>"] if mod[:1] == ("<bin>",) else []
    children = {k[-1] for k in files if k[:-1] == mod and len(k) == len(mod) + 1}
    found = set()
    for m in re.finditer(r"(\$?crate|super|self|\b\w+)((?:::(?:\w+|\{(?:[^{}]|\{[^{}]*\})*\}))+)", text):
        head, rest = m.group(1), m.group(2)
        if m.start() > 0 and text[m.start() - 1] == ":":
            continue
        if head in ("crate", "$crate"):
            base = crate
        elif head == "super":
            base = here[:-1]
        elif head == "self":
            base = here
        elif is_dir and head in children:
            base = here + [head]
        else:
            continue
        tokens = re.findall(r"\{(?:[^{}]|\{[^{}]*\})*\}|\w+", rest)
        for path in paths_in(tokens, list(base)):
            target = deepest(path)
            if target is not None and target != mod:
                found.add(target)
    edges[mod] = found

index, low, stack, on, circles = {}, {}, [], set(), []
sys.setrecursionlimit(100000)


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            circles.append(comp)


for v in sorted(files):
    if v not in index:
        visit(v)


def name(m):
    return files[m][len(ROOT) + 1:]


for comp in circles:
    print("circle: " + ", ".join(sorted(name(m) for m in comp)))
    for a in sorted(comp):
        for b in sorted(edges[a]):
            if b in comp:
                print(f"    {name(a)} -> {name(b)}")
print(f"{len(circles)} circle(s) among {len(files)} files of {ROOT}/")


def folder(m):
    if not m:
        return "lib"
    return "bin" if m[0] == "<bin>" else m[0]


unplaced = sorted({folder(m) for m in files} - set(LAYER))
for f in unplaced:
    print(f"folder {f}/ has no layer: add it to LAYERS in {sys.argv[0]}")
def is_test_file(m):
    """A test module in a file of its own (`#[cfg(test)] mod tests;`): it
    may drive a lower layer through a higher one."""
    return bool(m) and (m[-1] == "tests" or m[-1].endswith("_tests"))


folder_edges = {}
for a, targets in edges.items():
    if is_test_file(a):
        continue
    for b in targets:
        fa, fb = folder(a), folder(b)
        if fa != fb:
            folder_edges.setdefault((fa, fb), []).append((a, b))
back = [(fa, fb) for (fa, fb) in folder_edges
        if fa in LAYER and fb in LAYER and (LAYER[fa] < LAYER[fb]
                                            or (LAYER[fa] == LAYER[fb] and (fb, fa) in folder_edges))]
for fa, fb in sorted(back):
    print(f"back-arrow: {fa}/ (layer {LAYER[fa]}) imports {fb}/ (layer {LAYER[fb]})")
    for a, b in sorted(folder_edges[(fa, fb)]):
        print(f"    {name(a) if a else 'lib.rs'} -> {name(b) if b else 'lib.rs'}")
print(f"{len(back)} back-arrow(s) among the folders of {ROOT}/")
sys.exit(1 if circles or back or unplaced else 0)
