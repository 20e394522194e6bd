"""The benchmark tools (tools/): bad input is one line, and they write where they are told."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT
from copylab.contract import REQUIRED_COLUMNS
from data.analysis import synthetic

EVIDENCE = ROOT / "tools" / "evidence.py"
pytestmark = pytest.mark.slow  # each runs the tool in a new Python (about 5 s here)


def evidence(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EVIDENCE), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("header", ["required columns", "every column"])
def test_precision_over_a_header_only_table_is_one_line(tmp_path, header):
    """It was a traceback (KeyError: 'status')."""
    folder = tmp_path / "sweep"
    if header == "every column":
        full = synthetic.write_sweep(tmp_path / "full", reps=2)
        folder.mkdir()
        (folder / "results.csv").write_text((full / "results.csv").read_text().splitlines()[0] + "\n")
    else:
        folder.mkdir()
        (folder / "results.csv").write_text(",".join(REQUIRED_COLUMNS) + "\n")
    out = tmp_path / "evidence.json"
    proc = evidence("precision", str(folder), "--out", str(out), cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "nothing to compare" in proc.stderr, proc.stderr
    assert not out.exists() and not (tmp_path / "output").exists()


def test_precision_writes_where_it_is_told(tmp_path):
    """It always wrote into the repository's output/."""
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=3)
    out = tmp_path / "elsewhere" / "precision.json"
    proc = evidence("precision", str(folder), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["sweeps"][str(folder)]["points"] > 0
    assert not (tmp_path / "output").exists() and f"-> {out}" in proc.stdout


def test_reproducibility_counts_the_next_runs_ratio_in_the_interval_and_in_the_repeat_range(tmp_path):
    """Two SYNTHETIC answers.json: the second run's ratio lies outside the first's interval but inside its
    repeat range (the report's line beside the crossover), and a move between 'equivalent' and 'better by
    less than the margin' counts as the same verdict."""
    def doc(ratio, low, high, band, decision):
        detail = {"ratio": ratio, "low": low, "high": high, "df": 4.0, "decision": decision}
        return {key: {"decision_detail_by_size": {"4096": detail}, "repeat_range_by_size": {"4096": band},
                      "crossover_bytes": None} for key in ("q4_one_copy_vs_two_copy", "q5_zero_copy_vs_two_copy")}
    folders = []
    for name, d in (("r1", doc(1.00, 0.98, 1.02, [0.95, 1.05], "equivalent")),
                    ("r2", doc(1.04, 1.01, 1.07, [0.99, 1.09], "win_within_margin"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "answers.json").write_text(json.dumps(d))
        folders.append(str(tmp_path / name))
    out = tmp_path / "r.json"
    proc = evidence("reproducibility", *folders, "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert (record["covered"], record["in_repeat_range"], record["pairs"]) == (0, 2, 2)
    assert all(c["same_verdict"] == 2 for c in record["comparisons"].values())
