"""Smoke test of `make bench-e2e`'s harness (scripts/bench-e2e.py): one short
round of the bare proxy and the Rust engine must produce the table, the JSON
and positive measurements. The numbers themselves are not judged here."""

import json
import re
import subprocess
import sys

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "bench-e2e.py"


def test_one_short_round_produces_the_table(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--configs", "bare,rust", "--rounds", "1", "--duration", "1",
         "--warmup", "0", "--connections", "4", "--no-chart", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr

    md = (tmp_path / "e2e.md").read_text()
    assert not (tmp_path / "e2e.png").exists()
    rows = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in ("bare proxy (no Lua)", "Rust engine"):
            rows[cells[0]] = cells
    assert set(rows) == {"bare proxy (no Lua)", "Rust engine"}, md
    for name, cells in rows.items():
        # requests/s, P50, P90, P99, CPU per request: "median (min–max)", all > 0
        for cell in cells[1:6]:
            median = float(re.match(r"([\d,.]+) \(", cell).group(1).replace(",", ""))
            assert median > 0, (name, cell)
    assert re.match(r"-?[\d.]+ \(", rows["Rust engine"][6]), rows["Rust engine"]
    assert "Rust engine P99 within 10 %" in md
    assert md.splitlines()[0] == "# Before/after under nginx"
    assert out.stdout.startswith("| configuration |")

    data = json.loads((tmp_path / "e2e.json").read_text())
    assert [r["config"] for r in data["runs"]] == ["bare", "rust"]
    for r in data["runs"]:
        assert r["requests"] > 0 and r["error_count"] == 0, r
        assert r["cpu_s"] > 0 and r["cpu_us_per_req"] > 0, r
