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
    assert md.splitlines()[0] == "# Before/after under nginx"
    assert not (tmp_path / "e2e.png").exists()
    # Two tables (saturated, paced), a row per configuration in each.
    rows = []
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in ("bare proxy (no Lua)", "Rust engine"):
            rows.append(cells)
    assert [r[0] for r in rows] == ["bare proxy (no Lua)", "Rust engine"] * 2, md
    for cells in rows:
        # requests/s, P50, P90, P99, ..., CPU per request: "median (min–max)", all > 0
        for cell in cells[1:5] + [cells[6]]:
            median = float(re.match(r"([\d,.]+) \(", cell).group(1).replace(",", ""))
            assert median > 0, (cells[0], cell)
    for cells in rows[1::2]:
        # P99 / bare and CPU added over bare (which noise may make negative)
        assert re.match(r"[\d.]+ \(", cells[5]), cells
        assert re.match(r"-?[\d.]+ \(", cells[7]), cells
    assert "Rust engine P99 within 10 % of the bare proxy's (paced runs)" in md
    assert out.stdout.startswith("saturated (wrk")

    data = json.loads((tmp_path / "e2e.json").read_text())
    assert [(r["config"], r["load"]) for r in data["runs"]] == [
        ("bare", "saturated"), ("bare", "paced"), ("rust", "saturated"), ("rust", "paced")]
    for r in data["runs"]:
        assert r["requests"] > 0 and r["error_count"] == 0, r
        assert r["cpu_s"] > 0 and r["cpu_us_per_req"] > 0, r
