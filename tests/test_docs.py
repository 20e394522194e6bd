"""The repository carries the contracts it implements: every document the code cites exists, and
docs/contracts.md names every results column contract.py defines."""

from __future__ import annotations

import importlib.util
import json
import re

from conftest import ROOT
from copylab import contract

CITING = [p for folder in ("lib", "tests", "notebooks", "tools") for p in (ROOT / folder).rglob("*")
          if p.suffix in (".py", ".ipynb", ".md") and "__pycache__" not in p.parts and p.name != "test_docs.py"]


def test_every_cited_document_is_in_the_repository():
    cited = set()
    for path in CITING + [ROOT / "README.md"]:
        cited |= set(re.findall(r"\b((?:docs/)?[a-z_]+\.md)\b", path.read_text(errors="replace")))
    assert "design.md" not in cited, "design.md lives outside the repository: cite docs/contracts.md"
    docs = {c for c in cited if c.startswith("docs/")}
    assert "docs/contracts.md" in docs
    for doc in docs:
        assert (ROOT / doc).is_file(), f"{doc} is cited but not in the repository"


def test_contracts_md_names_every_results_column():
    text = (ROOT / "docs" / "contracts.md").read_text()
    named = set(re.findall(r"[a-z][a-z0-9_]*", text))
    for column in contract.COLUMNS:
        side = re.match(r"(srv|cli)_(?:(prof|cai)_)?(.*)", column)
        if side:  # per-side columns are documented once for both sides, or by their suffix
            assert column in named or side.group(3) in named, column
        else:
            assert column in named, f"results column {column} is not documented in docs/contracts.md"


def test_every_test_the_catalogue_names_exists():
    """The fault catalogue (docs/reliability.md) names the test behind each entry: a moved or renamed test must
    take its entry along (`test_x.py::name`, `::name` continuing the previous file, `[param]` ignored)."""
    catalogue = (ROOT / "docs" / "reliability.md").read_text()
    named, wrong = 0, []
    for line in catalogue.splitlines():
        current = None
        for file, name in re.findall(r"`(?:(?:tests/)?(test_[a-z0-9_]+\.py))?::(test_[A-Za-z0-9_]+)", line):
            current = file or current
            source = ROOT / "tests" / (current or "?")
            if not source.is_file() or not re.search(rf"^def {name}\(", source.read_text(), re.M):
                wrong.append(f"{current}::{name}")
            named += 1
    assert not wrong, f"docs/reliability.md names tests that are not there: {wrong}"
    assert named > 50  # the catalogue is there and this check read it


def test_the_measurements_page_is_what_its_records_give():
    """docs/measurements.md is written by tools/measurements.py from docs/measurements/*.json (host, date,
    command and values of each measurement): a record added or changed without re-running the tool, or
    the page edited by hand, fails here."""


    spec = importlib.util.spec_from_file_location("measurements", ROOT / "tools" / "measurements.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    records = tool.load()
    assert len(records) >= 10 and all(r["host"] and r["date"] and r["command"] for r in records)
    assert (ROOT / "docs" / "measurements.md").read_text() == tool.render(records)


def test_a_record_of_sweeps_reads_every_number_from_their_files(tmp_path):
    """tools/measurements.py from-sweep: the numbers a record gives for a sweep are its files', not typed."""
    import shutil

    spec = importlib.util.spec_from_file_location("measurements", ROOT / "tools" / "measurements.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    folder = tmp_path / "sweep"
    shutil.copytree(ROOT / "tests" / "data" / "analysis" / "default-like", folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "started_at": "2026-11-25T13:58:00+00:00"}))
    (folder / "answers.json").write_text(json.dumps({"q4_one_copy_vs_two_copy": {"decision_by_size": {"64": "loss",
                                                     "1024": "undecided"}}, "q5_zero_copy_vs_two_copy": {}}))
    record = tool.from_sweeps([folder], "t", "c", "", {"make report": "8:24"})
    row = dict(zip(record["table"]["columns"], record["table"]["rows"][0]))
    assert row["Q4/Q5 undecided"] == "1 of 2" and record["values"][0] == {"quantity": "wall time: make report",
                                                                         "value": "8:24"}
    assert row["median CV (points within 8%)"].endswith(")") and "%" in row["median CV (points within 8%)"]
    assert record["host"].startswith("Linux") and record["date"] == "2026-11-25"
    assert row["sweep (start, UTC)"] == "2026-11-25 13:58"
