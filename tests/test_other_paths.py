"""The report's section "Other ways to move the bytes" (other_paths.py) on SYNTHETIC results: every
send path and receive strategy of the sweep appears with its decisions against the two-copy and
one-copy paths, and Part E keeps comparing the study's three roles only."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from copylab import analysis, escape, other_paths, registry

sys.path.insert(0, str(Path(__file__).parent / "data" / "analysis"))
import synthetic  # noqa: E402  (SYNTHETIC numbers, not measurements)

EXTRA = {name: factor for name, factor in zip(registry.names(kind="native", roles=("extra",)), (0.9, 0.8, 1.2))}


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    """The synthetic sweep plus the extra senders (the one-copy path's numbers scaled) and the
    zerocopy/discard receivers (copies of the message rows)."""
    rows = synthetic.rows(reps=3, receives=("message",))
    one_copy = registry.by_role("one_copy")
    extra = []
    for r in rows:
        if r.get("impl") != one_copy:
            continue
        for name, factor in EXTRA.items():
            extra.append({**r, "impl": name, "throughput_gbps": r["throughput_gbps"] * factor})
        extra.append({**r, "receive": "discard", "receive_note": "not verified: MSG_TRUNC", "mapped_bytes": 0})
        extra.append({**r, "receive": "zerocopy", "mapped_bytes": 0.5 * (r.get("bytes") or 0),
                      "receive_note": "50.0% mapped, the rest copied"})
    return analysis.add_derived(pd.DataFrame(rows + extra))


def test_every_send_path_is_compared_with_the_two_copy_and_one_copy_paths(df):
    table = other_paths.send_paths_table(analysis.study(df, {}))
    base, one = (analysis.impl_name(n) for n in (registry.baseline(), registry.by_role("one_copy")))
    assert set(table["path"]) == {analysis.impl_name(n) for n in registry.names(kind="native")}
    assert len(table) == len(set(table["path"])) * len(synthetic.SIZES)
    for column in (f"vs {base}", f"vs {one}"):
        cells = table[column][table["path"] != column[3:]]
        assert cells.str.match(r"^(faster|slower|faster < m|slower < m|equivalent|undecided)†? [0-9.]+ "
                               r"\([0-9.]+–[0-9.]+\)$").all(), cells.tolist()
    # the 1.2x-scaled copy of the one-copy path wins against it at every size (SYNTHETIC)
    faster = [n for n, f in EXTRA.items() if f > 1][0]
    assert table[table["path"] == analysis.impl_name(faster)][f"vs {one}"].str.startswith("faster").all()


def test_every_other_receive_strategy_is_compared_with_the_primary_one(df):
    table = other_paths.receive_table(analysis.study(df, {}))
    assert set(table["receive"]) == {"zerocopy", "discard"}
    assert (table["vs message"].str.split().str[0].isin(("win", "loss", "equivalent", "undecided"))).all()
    assert table[table["receive"] == "zerocopy"]["mapped %"].round().eq(50).all()
    notes = other_paths.receive_notes_markdown(df)
    # a note comes from results.csv: it is text, escaped for Markdown
    assert f"`discard`: {escape.markdown('not verified: MSG_TRUNC')}" in notes
    assert f"`zerocopy`: {escape.markdown('50.0% mapped, the rest copied')}" in notes


def test_part_e_still_compares_the_study_roles_only(df):
    s = analysis.study(df, {})
    assert set(s.part_e["impl"]) == set(registry.study_impls()) < set(s.rows["impl"])
    assert {i for i, _ in s.verdicts["q3"].throughput} == set(registry.study_impls())


def test_the_section_says_what_the_sweep_lacks(df):
    only_study = df[df["impl"].isin(registry.study_impls()) & (df["receive"] == "message")]
    assert "params/full.yaml" in other_paths.section_markdown(only_study)
    assert other_paths.receive_table(analysis.study(only_study, {})).empty
    # with the study's three alone the section repeats neither Part E's table nor Part D's figure
    assert other_paths.send_paths_table(analysis.study(only_study, {})).empty
    note = other_paths.paths_figure(only_study, {})
    assert not hasattr(note, "data") and "would repeat Part D" in str(vars(note))
    assert f"{len(registry.names(kind='native'))} send paths" in other_paths.section_markdown(df)
    # one line, not a page describing paths nothing was measured for; and no family of claims for a
    # table that is not shown (its decisions are claimed nowhere)
    opening = other_paths.section_markdown(only_study)
    assert "\n" not in opening and other_paths.INTRO not in opening and other_paths.INTRO in other_paths.section_markdown(df)
    assert analysis.study(only_study, {}).families["other_paths"].size == 0
    assert analysis.study(df, {}).families["other_paths"].size > 0


def test_the_figures_draw_every_path(df):
    fig = other_paths.paths_figure(df, {})
    assert {t.legendgroup for t in fig.data} == set(registry.names(kind="native"))


def test_the_paths_figure_reads_at_every_size(df):
    """Throughput from 64 B to 64 KiB spans decades: a linear 0-27 Gbit/s panel put 64 B-4 KiB flat on
    zero. Panels that span decades are log and say so; the sizes axis has a title; the title promises
    dashed lines only where some are drawn."""
    spread = df.copy()
    spread.loc[spread["msg_size"] == 64, "throughput_gbps"] /= 100  # 64 B far below 64 KiB, as measured
    fig = other_paths.paths_figure(spread, {})
    assert fig.layout.yaxis.type == "log" and "log" in fig.layout.annotations[0].text
    assert any(a.name == "x-title" and "message size" in a.text for a in fig.layout.annotations)
    dashed = [t for t in fig.data if t.line.dash == "dash"]
    assert dashed and "dashed" in fig.layout.title.text
    assert {t.legendgroup for t in dashed} == set(EXTRA)
