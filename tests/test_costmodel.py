"""analysis/costmodel.py: the senders' costs per message and per byte, fitted per pass, and the
crossover they predict; native/memcpyprobe, the host's copy limit (issue 49)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "data" / "analysis"))
import costs as synthetic  # noqa: E402

from copylab import memcpyref  # noqa: E402
from copylab.analysis.costmodel import cost_model, fit_line  # noqa: E402
from copylab.analysis.study import study  # noqa: E402

META = {"params": {"equivalence_margin": 0.10}}


def test_a_line_through_exact_points_is_recovered():
    sizes = [64, 1024, 65536]
    a, b = fit_line(sizes, [2.0 + 0.3 * n / 1e3 for n in sizes])
    assert a == pytest.approx(2.0) and b == pytest.approx(0.3)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_fit_recovers_known_costs_within_their_intervals(seed):
    model = cost_model(synthetic.rows(seed=seed), META, 0.10)
    assert model.sizes == list(synthetic.SIZES)  # a straight line holds at every size
    for impl, sides in synthetic.COSTS.items():
        for side, (a, b) in sides.items():
            per_message, per_byte = model.paths[impl].per_message[side], model.paths[impl].per_byte[side]
            assert per_message.low <= a <= per_message.high, (impl, side, per_message)
            assert per_byte.low <= b <= per_byte.high, (impl, side, per_byte)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_predicted_crossover_is_where_the_decisions_find_it(seed):
    """A2 pays 0.5 µs more per message and saves 0.05 ns/B: the lines cross at 10,000 B. The model says so
    (within its interval) and the decisions agree: A2 is decided faster from the first grid size above it."""
    s = study(synthetic.rows(seed=seed), META)
    gap = s.model.gaps["a2"]
    assert gap.bounded and gap.crossover.low <= synthetic.CROSSOVER["a2"] <= gap.crossover.high
    assert gap.per_message.low <= 0.5 <= gap.per_message.high
    assert gap.saving.low <= 0.05 <= gap.saving.high
    measured = s.crossover("a2", beyond_margin=False)
    below = max(n for n in synthetic.SIZES if n < measured)
    assert below < gap.crossover.value <= measured
    # A3's lines cross beyond the grid, and no size of it outperforms A1
    assert s.model.gaps["a3"].crossover.value > max(synthetic.SIZES) and s.crossover("a3") is None


def test_a_saving_per_byte_the_passes_do_not_decide_leaves_the_crossover_unbounded():
    same = {impl: {side: (a + (0.5 if impl == "a2" and side == "srv" else 0), synthetic.COSTS["a1"][side][1])
                   for side, (a, _) in synthetic.COSTS["a1"].items()} for impl in ("a1", "a2", "a3")}
    s = study(synthetic.rows(costs=same, noise=0.05), META)
    gap = s.model.gaps["a2"]
    assert gap.saving.low < 0 < gap.saving.high
    assert not gap.bounded and gap.crossover.high == math.inf


def test_the_cost_model_is_in_answers_json():
    from copylab.analysis.document import document

    doc = json.loads(json.dumps(document(study(synthetic.rows(), META))))
    model = doc["cost_model"]
    for impl in ("a1", "a2", "a3"):
        for side in ("sender", "receiver"):
            for cost in ("per_message", "per_byte"):
                assert {"value", "low", "high"} <= set(model["paths"][impl][side][cost])
    assert model["predicted_crossover"]["a2"]["predicted"]["value"] == pytest.approx(10_000, rel=0.3)
    assert model["predicted_crossover"]["a2"]["measured"] == doc["q4_one_copy_vs_two_copy"]["crossover_bytes"]
    assert "memcpy" in model


def test_memcpyprobe_measures_a_cost_per_byte_within_its_time(native_build):
    """The probe's answer is a finite positive ns/B for the study's working set and a cached one (about a
    second in all: the sweep records it once)."""
    found = memcpyref.measure(65536, 4 << 20, None)
    assert 0 < found["ns_per_byte"] < 100 and 0 < found["cache_resident"]["ns_per_byte"] < 100, found
    assert found["working_set_bytes"] >= 4 << 20 and found["cache_resident"]["working_set_bytes"] < 4 << 20


@pytest.mark.parametrize("argv, named", [
    (["--msg-size", "4"], "--msg-size"), (["--msg-size", "64"], "--working-set"),
    (["--msg-size", "64", "--working-set", "x"], "--working-set"), (["--bogus"], "--bogus"),
    (["--msg-size", "64", "--working-set", "4096", "--ms", "0"], "--ms"),
    (["--msg-size", "64", "--working-set", "4096", "--ring-memory", "4096"], "--ring-memory")])
def test_memcpyprobe_refuses_bad_arguments_in_one_line(argv, named, native_build):
    proc = subprocess.run([str(memcpyref.PROBE), *argv], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2 and proc.stdout == "" and named in proc.stderr and proc.stderr.count("\n") == 1


def test_a_probe_answer_that_is_not_a_cost_is_a_note_not_a_number(tmp_path, monkeypatch):
    fake = tmp_path / "memcpyprobe"
    for answer in ('{"ns_per_byte": -5}', '{"ns_per_byte": NaN}', "not json", '{"ns_per_byte": 1e308}'):
        fake.write_text(f"#!/bin/sh\necho '{answer}'\n")
        fake.chmod(0o755)
        monkeypatch.setattr(memcpyref, "PROBE", fake)
        found = memcpyref.measure(64, 4096, None)
        assert "ns_per_byte" not in found and found["note"].startswith("memcpyprobe:"), (answer, found)


def test_lines_that_cross_below_zero_bytes_place_no_crossover_and_mark_nothing(recwarn):
    """A2's line below A1's at the estimates over the fitted sizes (less per message, less per byte) crosses
    at a negative size: no crossover is placed, printed or marked on the figure's log axis (a default
    report printed 'overtakes at -52.0 KiB' and a RuntimeWarning from log10 of it, its axis collapsed)."""
    import plotly.graph_objects as go

    from copylab.analysis.costmodel import Estimate, Gap
    from copylab.figures import cost

    below = Gap("a2", Estimate(-0.78, -1.9, 0.33, 3, "µs"), Estimate(-0.0146, -0.028, -0.0011, 3, "ns/B"),
                Estimate(-53222, -67698, 288406, 3, "B"), [16384, 65536])
    assert not below.bounded
    assert Gap("a2", below.per_message, below.per_byte, Estimate(53222, 1000, 288406, 3, "B"), [16384, 65536]).bounded
    fig = go.Figure()
    cost._mark(fig, below.crossover.value, "predicted", None, "dot")
    assert not fig.layout.annotations and not fig.layout.shapes and not recwarn.list


def test_each_paths_ceiling_stands_on_its_costlier_sides_row():
    """The ceiling is 8 / b of the side with the larger cost per byte: the table prints it on that side's
    row (a sixth reading of issue 44 found the sender's ceiling on the receiver's row)."""
    from copylab.analysis import tables

    model = cost_model(synthetic.rows(seed=1), META, 0.10)
    table = tables.cost_model(model)
    for impl, c in model.paths.items():
        rows = table[table["path"] == tables.name(impl)]
        side = {"srv": "sender", "cli": "receiver"}[c.costlier]
        assert (rows.loc[rows["ceiling (Gbit/s)"] != "", "side"] == side).all() and len(rows) == 2, rows
        assert (rows["ceiling (Gbit/s)"] != "").sum() == 1
