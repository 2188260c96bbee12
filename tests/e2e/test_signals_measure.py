"""Fleet signals through real nginx and a real browser (the measurement
of docs/signals.md, smaller): a python-requests script over 60 /24s that
never solves the challenge, and 12 people in Debian's Chromium who solve
the real page. `edgeguard signals` over nginx's access log must single
out the script's keys (every request challenged, none solved, none
cleared, a /24 for each of its prefixes) and not the browser's (its
challenges solved, most of its requests cleared). About 25 s.
"""

import importlib.util
import os
import pathlib
import shutil
import sys

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "signals-measure.py"


def _measure_module():
    spec = importlib.util.spec_from_file_location("signals_measure", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["signals_measure"] = module
    spec.loader.exec_module(module)
    return module


measure = _measure_module()

try:
    import selenium  # noqa: F401
    import requests  # noqa: F401
    HAVE_PY = True
except ImportError:
    HAVE_PY = False

pytestmark = pytest.mark.skipif(
    not (measure.CHROMIUM and measure.CHROMEDRIVER and measure.XVFB and HAVE_PY),
    reason="needs chromium, chromium-driver, xvfb, selenium and requests (make deps-test)")


def test_a_script_over_many_prefixes_stands_out_and_people_do_not(tmp_path):
    os.chmod(tmp_path, 0o777)
    lines = []
    snapshot, problems = measure.measure(12, 60, 12, pathlib.Path(tmp_path), out=lines.append)
    report = "\n".join(lines) + "\n\n" + measure.table(snapshot)
    assert not problems, "\n".join(problems) + "\n" + report
    script = [e for e in snapshot["entries"] if e["key"].startswith("python-requests:")]
    assert len(script) == 1 and script[0]["prefixes24"] == 60, report
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
