"""scripts/check-doc-facts.py: `make lint` fails when a doc figure disagrees
with the shipped file it copies. Each test copies the repository's docs and
shipped files to a temporary tree, changes one figure (in a doc, or in the
shipped file) and expects the script to name it."""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check-doc-facts.py"
COPY = ["src", "docs", "lua", "nginx-conf", "contrib", "packaging", "scripts", "include",
        "Makefile", "README.md", "RELIABILITY.md", "BENCHMARKS.md", "Cargo.toml"]


def check(root, cargo=False):
    args = [sys.executable, str(SCRIPT), str(root)] + ([] if cargo else ["--no-cargo"])
    r = subprocess.run(args, capture_output=True, text=True)
    return r.returncode, r.stderr


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("facts") / "repo"
    root.mkdir()
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, root / name)
        else:
            shutil.copy(src, root / name)
    (root / "models").mkdir()
    for path in list(ROOT.glob("models/*.json")) + [ROOT / "models" / "README.md"]:
        shutil.copy(path, root / "models" / path.name)
    return root


@pytest.fixture
def tree(pristine, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(pristine, root)
    return root


def line_of(root, name, text):
    """The line of `name` where `text` starts: the docs move as they grow,
    so the expected messages find their line instead of pinning it."""
    before, found, _ = (root / name).read_text().partition(text)
    assert found, f"{name} no longer has {text!r}: update the test"
    return before.count("\n") + 1


def edit(root, name, old, new):
    path = root / name
    text = path.read_text()
    assert old in text, f"{name} no longer has {old!r}: update the test"
    path.write_text(text.replace(old, new, 1))


def test_the_repository_agrees_with_its_shipped_files():
    rc, err = check(ROOT, cargo=True)
    assert rc == 0, err


def test_the_copy_agrees(tree):
    rc, err = check(tree)
    assert rc == 0, err


CASES = {
    "threshold in a decision line": (
        "README.md", "threshold=0.095024", "threshold=0.355394",
        "README.md:NN: threshold 0.355394 for model bot: models/bot.json says 0.0950238"),
    "threshold in replay's summary": (
        "docs/replay.md", "model bot (threshold 0.09502382450961236)", "model bot (threshold 0.3553937517288668)",
        "docs/replay.md:NN: threshold 0.3553937517288668 for model bot"),
    "a second model's threshold in a list": (
        "models/README.md", "`spoof`: 0.0670", "`spoof`: 0.5",
        "models/README.md:NN: threshold 0.5 for model spoof: models/spoof.json says 0.0669706"),
    "schema of the shipped models": (
        "docs/tls.md", "shipped models (feature schema 4)", "shipped models (feature schema 3)",
        "schema 3 said of the shipped models: src/features/schema.rs says 4"),
    "schema beside a shipped model": (
        "docs/models.md", "--schema 4 --orders models/bot.json", "--schema 3 --orders models/bot.json",
        "--schema 3 with a shipped model: the shipped models are schema 4"),
    "stage order": (
        "docs/architecture.md", "│  3 fleet ", "│  3 fleek ",
        "docs/architecture.md:23: stages strip clients fleek rules score decide rules respond texts; "
        "src/gate/mod.rs has strip clients fleet rules score decide rules respond texts"),
    "a stage said empty": (
        "docs/architecture.md", "site rules with the scores and the decision",
        "site rules after scoring (empty today)",
        "stage `rules` exists: not \"empty today\""),
    "an install path": (
        "docs/install.md", "\n## ", "\n`/usr/lib/edgeguard/libedgeguard.so`\n\n## ",
        "/usr/lib/edgeguard/libedgeguard.so: neither `make install` nor the .deb installs it"),
    "a shipped file where it is not installed": (
        "docs/rules.md", "/usr/share/edgeguard/models/bot.json", "/etc/edgeguard/models/bot.json",
        "docs/rules.md:NN: /etc/edgeguard/models/bot.json: neither"),
    "an option that does not exist": (
        "docs/configuration.md", "| `status` |", "| `statuz` |",
        "option `statuz` is not in src/config/options.rs's options! table"),
    "an option's scope": (
        "docs/configuration.md", "| 403 | C A F | the status of blocked requests",
        "| 403 | C F | the status of blocked requests", "option `status`: scope C F, but"),
    "an option misspelt in an example": (
        "docs/configuration.md", "            metrics_dict = \"edgeguard_metrics\",",
        "            metric_dict = \"edgeguard_metrics\",",
        "docs/configuration.md:NN: configure{ metric_dict = … }: no option `metric_dict`"),
    "a configure-only option in access{}": (
        "docs/configuration.md", "access{ mode = \"log\" }", "access{ mode = \"log\", lib_path = \"x\" }",
        "access{ lib_path = … }: `lib_path` is not allowed in access{} (scopes C)"),
    "an action that does not exist": (
        "docs/configuration.md", "| flagged, mode `log` | `log` |", "| flagged, mode `log` | `deny` |",
        "action `deny` is not an action of src/outcome.rs"),
    "a metric that does not exist": (
        "docs/metrics.md", "`edgeguard_load_errors_total`", "`edgeguard_load_failures_total`",
        "no metric `edgeguard_load_failures_total`"),
    "a replay gauge renamed in its table": (
        "docs/kafka.md", "| `edgeguard_replay_paused`,", "| `edgeguard_replay_stalled`,",
        "no metric `edgeguard_replay_stalled` in src/metrics or src/kafka"),
    "the dashboard's cut": (
        "contrib/grafana/edgeguard.json", 'le=\\"0.1\\"', 'le=\\"0.5\\"',
        "score cut le=\"0.5\": the first bucket at or over the shipped thresholds is 0.1 (bot)"),
    "a line reference": (
        "RELIABILITY.md", "edgeguard.lua:842@723af91", "edgeguard.lua:8420@723af91",
        "edgeguard.lua:8420: the file has"),
    "a symbol reference": (
        "docs/architecture.md", "\n## Who owns what", "\n`no_such_stage` in `src/gate/stages.rs`\n\n## Who owns what",
        "`no_such_stage` is not in src/gate/stages.rs"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_doc_figure_that_disagrees_fails(tree, case):
    name, old, new, expected = CASES[case]
    if f"{name}:NN:" in expected:
        expected = expected.replace("NN", str(line_of(tree, name, old)), 1)
    edit(tree, name, old, new)
    rc, err = check(tree)
    assert rc == 1, err
    assert expected in err, err


def test_a_changed_model_threshold_fails_the_docs(tree):
    """The other side: the shipped file changes, the doc does not."""
    edit(tree, "models/bot.json", '"edgeguard.threshold":"0.09502382450961236"',
         '"edgeguard.threshold":"0.2"')
    rc, err = check(tree)
    assert rc == 1
    line = line_of(tree, "README.md", "threshold=0.095024")
    assert f"README.md:{line}: threshold 0.095024 for model bot: models/bot.json says 0.2" in err, err
    assert "score cut le=\"0.1\": the first bucket at or over the shipped thresholds is 0.2 (bot)" in err, err


def test_a_new_option_or_stage_in_the_code_fails_the_docs(tree):
    edit(tree, "src/config/options.rs", "    /// `vars`.\n",
         "    /// `newopt`.\n    newopt: bool, EVERYWHERE, Ctx::boolean, |o| None;\n    /// `vars`.\n")
    edit(tree, "src/gate/mod.rs", "//!               │ 9 texts", "//!               │ 9 text")
    rc, err = check(tree)
    assert rc == 1
    assert "option `newopt` (src/config/options.rs) is not in the option table" in err, err
    assert "src/gate/mod.rs:0: the stage diagram says strip clients fleet rules score decide rules respond text; " \
        "run() calls strip clients fleet rules score decide rules respond texts" in err, err


def test_an_undocumented_metric_fails(tree):
    edit(tree, "src/metrics/mod.rs", '"edgeguard_load_errors_total",', '"edgeguard_load_failures_total",')
    edit(tree, "src/kafka/meters.rs", '"edgeguard_replay_paused"', '"edgeguard_replay_stalled"')
    rc, err = check(tree)
    assert rc == 1
    line = line_of(tree, "docs/metrics.md", "| `edgeguard_load_errors_total`")
    for expected in [
        "docs/metrics.md:0: metric `edgeguard_load_failures_total` (src/metrics/) is not documented",
        f"docs/metrics.md:{line}: no metric `edgeguard_load_errors_total`",
        "docs/kafka.md:0: metric `edgeguard_replay_stalled` (src/kafka/) is not documented",
    ]:
        assert expected in err, err


def test_a_wrong_default_fails_through_the_rust_resolver(tree):
    edit(tree, "docs/configuration.md", "| integer 400–599 | 403 |", "| integer 400–599 | 404 |")
    edit(tree, "docs/configuration.md", "| integer 0–128 | 64 |", "| integer 0–128 | 48 |")
    rc, err = check(tree, cargo=True)
    assert rc == 1, err
    line = line_of(tree, "docs/configuration.md", "| `status` |")
    assert f"docs/configuration.md:{line}: option `status`: default 404, but it resolves to 403" in err, err
    assert "option `challenge_prefix_v6`: default 48, but it resolves to 64" in err, err


def test_a_module_missing_from_the_architecture_fails(tree):
    # A module added to src/lib.rs and not to the table, and a row the
    # code no longer has: both named.
    edit(tree, "src/lib.rs", "pub mod load;\n", "pub mod load;\npub mod memory;\n")
    edit(tree, "docs/architecture.md", "| `src/net/` |", "| `src/nets/` |")
    code, err = check(tree)
    assert code == 1
    first = line_of(tree, "docs/architecture.md", "## The modules")
    assert f"docs/architecture.md:{first}: module `src/memory/` (src/lib.rs) is missing from the table" in err
    assert f"docs/architecture.md:{first}: module `src/net/` (src/lib.rs) is missing from the table" in err
    row = line_of(tree, "docs/architecture.md", "| `src/nets/` |")
    assert f"docs/architecture.md:{row}: `src/nets/` is no module of src/lib.rs" in err
