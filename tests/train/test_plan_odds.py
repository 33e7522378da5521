"""`benchmarks/plan_odds.py` on the memorized JSON policy: the odds where the plans part, and the stop after the
looks on kinds whose plans never part (the scan's stop, which `grpo.stop_anchor_counts` holds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts_gen.generate import generate_one

ROOT = Path(__file__).resolve().parents[2]


def test_the_table_reads_the_stop_after_the_scan_where_the_plans_never_part(json_warm_start, tmp_path):
    folder, _, _ = json_warm_start
    scripts = tmp_path / "scripts.jsonl"
    scripts.write_text("".join(generate_one(t, 0, 60).model_dump_json() + "\n" for t in ("MOC", "BU")))
    done = subprocess.run(
        [sys.executable, "benchmarks/plan_odds.py", "--warm-start", str(folder), "--scripts", str(scripts)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"COLUMNS": "250", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
        for line in done.stdout.splitlines()
        if line.count("│") > 5 and line.split("│")[1].strip() in ("BU", "MOC")
    }
    assert sorted(rows) == ["BU", "MOC"]
    bu, moc = rows["BU"], rows["MOC"]
    assert bu[2:6] == ["-"] * 4  # BU's search makes no call: no plan to choose...
    assert 0 <= float(bu[6]) <= 100 and bu[7] in ("0/1", "1/1")  # ...but its stop after the scan is read
    assert all(cell != "-" for cell in moc)  # MOC's plans part, and its stop after the search is read
