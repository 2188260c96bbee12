"""scripts/check-docs.py: the docs' links, paths and commands resolve, and
the README stays short. `make lint` runs the script on the repository; these
tests run it there too and show that each kind of problem makes it fail."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check-docs.py"


def check(root):
    r = subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)
    return r.returncode, r.stderr


def test_the_repository_docs_resolve():
    rc, err = check(ROOT)
    assert rc == 0, err


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def tree(tmp_path, readme, index="[a](a.md)\n", pages=None):
    """A small repository: a Makefile with `run`, one bench, one test, one
    config file, docs/index.md and docs/a.md."""
    write(tmp_path, "Makefile", ".PHONY: run\nrun: build\n\t@true\nVAR := x\n")
    write(tmp_path, "Cargo.toml", '[package]\nname = "x"\n\n[[bench]]\nname = "headers"\nharness = false\n')
    write(tmp_path, "tests/cli.rs", "")
    write(tmp_path, "nginx-conf/nginx.conf", "")
    write(tmp_path, "BENCHMARKS.md", "# Numbers\n\n## Header stripping\n")
    write(tmp_path, "README.md", readme)
    write(tmp_path, "docs/index.md", index)
    for name, text in (pages or {"docs/a.md": "# A page\n\n## Its `first` part\n"}).items():
        write(tmp_path, name, text)
    return tmp_path


GOOD = """# x

[numbers](BENCHMARKS.md#header-stripping), [a](docs/a.md#its-first-part),
[here](#x), [web](https://example.org/none), [config](nginx-conf/)

`make run`, `nginx -c nginx-conf/nginx.conf`, `cargo bench --bench headers`,
`cargo test --test cli`, `luarocks make x.rockspec`, `make VAR=1 run`,
`nginx-conf/*.conf`, `/usr/share/edgeguard/nginx-conf/x`

```sh
make run && nginx -p "$PWD/" -c nginx-conf/nginx.conf
```
"""


def test_a_tree_that_resolves_passes(tmp_path):
    rc, err = check(tree(tmp_path, GOOD))
    assert rc == 0, err


def test_each_kind_of_problem_is_reported(tmp_path):
    readme = GOOD + """
[gone](docs/gone.md) and [bad anchor](BENCHMARKS.md#no-such-heading) and [self](#nowhere)
`nginx-conf/missing.conf` and `make nosuch` and `cargo bench --bench nosuch`
and `cargo test --test nosuch`

```console
$ nginx -c nginx-conf/also-missing.conf && make alsonot
```
"""
    pages = {"docs/a.md": "# A page\n\n## Its `first` part\n", "docs/orphan.md": "# Not in the index\n"}
    rc, err = check(tree(tmp_path, readme, pages=pages))
    assert rc == 1
    for expected in [
        "README.md:14: link to a missing file: docs/gone.md",
        "README.md:14: link to a missing anchor: BENCHMARKS.md#no-such-heading",
        "README.md:14: link to a missing anchor: #nowhere",
        "README.md:15: no such path in the repository: nginx-conf/missing.conf",
        "README.md:15: no such make target: make nosuch",
        "README.md:15: no such cargo bench: nosuch",
        "README.md:16: no such cargo test: nosuch",
        "README.md:19: no such path in the repository: nginx-conf/also-missing.conf",
        "README.md:19: no such make target: make alsonot",
        "docs/orphan.md:0: not linked from docs/index.md",
    ]:
        assert expected in err, err
    assert "check-docs: 10 problem(s)" in err, err


def test_a_long_readme_is_refused(tmp_path):
    rc, err = check(tree(tmp_path, GOOD + "\n" * (400 - GOOD.count("\n"))))
    assert rc == 0, err
    rc, err = check(tree(tmp_path, GOOD + "\n" * (401 - GOOD.count("\n"))))
    assert rc == 1 and "README.md:401: 401 lines" in err, err


REASONS_RS = '''detections! {
    UaLibrary = "ua_library", Certain,
        "an HTTP library's `User-Agent`";
    TlsFamilyMismatch = "tls_family_mismatch", Ambiguous,
        "the ClientHello is not the browser's";
}
'''


def test_the_detection_ids_are_checked_against_the_rust_table(tmp_path):
    """docs/detections.md's table is the `detections!` table: a missing,
    extra or changed row (a strength, a text) is reported."""
    good = ("# IDs\n\n| ID | strength | fires on |\n|---|---|---|\n"
            "| `ua_library` | certain | an HTTP library's `User-Agent` |\n"
            "| `tls_family_mismatch` | ambiguous | the ClientHello is not the browser's |\n")
    index = "[a](a.md) [d](detections.md)\n"
    pages = {"docs/a.md": "# A page\n\n## Its `first` part\n", "docs/detections.md": good,
             "src/features/reasons.rs": REASONS_RS}
    rc, err = check(tree(tmp_path, GOOD, index=index, pages=pages))
    assert rc == 0, err
    drifted = good.replace("| ambiguous |", "| certain |") + "| `ua_gone` | certain | x |\n"
    pages["docs/detections.md"] = drifted
    rc, err = check(tree(tmp_path, GOOD, index=index, pages=pages))
    assert rc == 1
    assert "docs/detections.md:6: row ('tls_family_mismatch', 'certain'" in err, err
    assert "docs/detections.md:7: detection ID `ua_gone` is not in src/features/reasons.rs" in err, err
    pages["docs/detections.md"] = good.split("| `tls")[0]
    rc, err = check(tree(tmp_path, GOOD, index=index, pages=pages))
    assert rc == 1 and "detection ID `tls_family_mismatch` is not in the table" in err, err
