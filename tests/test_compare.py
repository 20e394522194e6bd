"""`copylab compare A B` (issue 37): every comparison two sweeps both made, decided as a change from A
to B. On SYNTHETIC pairs of default-like sweeps (tests/data/analysis/default_like.py: made-up numbers
with a known change, or none), and on the real quick sweep compared with a copy of itself."""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, run_copylab
from copylab import analysis, compare_report, explorer
from copylab.analysis.comparison import OWN, RATIO, comparison
from copylab.inference import ALPHA, Outcome
from copylab.analysis.text import comparison as text
from copylab.errors import CopylabError
from copylab.fmt import IMPL_LABELS

sys.path.insert(0, str(ROOT / "tests" / "data" / "analysis"))
import default_like  # noqa: E402

KIB = 1024
CHANGE_AT_1K = 1.4  # cubic over bbr at 1 KiB on this project's VMs was 1.36-1.52x (knowledge.md)


def write_pair(folder: Path, seed_a: int, seed_b: int, factor: float = 1.0, meta_b: dict | None = None) -> tuple:
    """Two SYNTHETIC finished sweeps, B's throughput at 1 KiB `factor` times A's for every path."""
    folders = []
    for name, seed, f in (("a", seed_a, None), ("b", seed_b, lambda impl, size, threads: factor if size == KIB else 1.0)):
        out = default_like.write(folder / name, seed=seed, throughput_factor=f)
        meta = {**json.loads((out / "meta.json").read_text()), "status": "finished",
                **((meta_b or {}) if name == "b" else {})}
        (out / "meta.json").write_text(json.dumps(meta))
        folders.append(out)
    return tuple(folders)


def compared(a: Path, b: Path):
    df_a, meta_a = analysis.load_results(a)
    df_b, meta_b = analysis.load_results(b)
    return comparison(df_a, meta_a, df_b, meta_b, "A", "B")


def snapshot(*folders: Path) -> dict:
    """Every file of the folders with its content's digest and its modification time."""
    return {str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for folder in folders if folder.exists() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------------
# the decisions


def test_a_known_change_at_1k_is_decided_a_win_and_stands(tmp_path):
    a, b = write_pair(tmp_path, 11, 12, CHANGE_AT_1K)
    c = compared(a, b)
    at_1k = [ch for ch in c.select(OWN, "throughput", per_threads=False) if ch.size == KIB]
    assert {ch.impl for ch in at_1k} == {"a1", "a2", "a3", "uring"}
    for ch in at_1k:
        assert ch.decision.decision == Outcome.WIN and ch.verdict == "better", ch
        # standing after Holm over the family's 48 tests: this pair does; at 4 passes about 2 pairs in 3 do
        # (each decision alone was a win in 80 of 80 such comparisons over 20 seeded pairs)
        assert c.stands(ch), ch
        assert ch.decision.low > 1.15 and ch.decision.high < 1.75 and ch.decision.low < CHANGE_AT_1K < ch.decision.high
    # every path moved alike: their standing against the baseline did not change at 1 KiB
    for ch in c.select(RATIO, "throughput", per_threads=False):
        assert not (ch.size == KIB and c.stands(ch) and ch.decision.decision in (Outcome.WIN, Outcome.LOSS)), ch
    # nothing else is decided changed and standing
    assert all(ch.size == KIB and ch.criterion == "throughput" and ch.kind == OWN for ch in c.decided_changes())


@pytest.mark.slow
def test_a_change_of_one_path_moves_its_ratio_to_the_baseline(tmp_path):
    """Only A2 1.4x faster at 1 KiB in B: its ratio of ratios is decided a win, A1's own throughput is not."""
    a = default_like.write(tmp_path / "a", seed=21)
    b = default_like.write(tmp_path / "b", seed=22, throughput_factor=lambda impl, size, threads:
                           CHANGE_AT_1K if (impl, size) == ("a2", KIB) else 1.0)
    c = compared(a, b)
    ratio = next(ch for ch in c.select(RATIO, "throughput", False) if (ch.impl, ch.size) == ("a2", KIB))
    assert ratio.decision.decision == Outcome.WIN and c.stands(ratio)
    assert ratio.a == pytest.approx(0.93, rel=0.15) and ratio.b / ratio.a == pytest.approx(ratio.decision.ratio)
    own_a1 = next(ch for ch in c.select(OWN, "throughput", False) if (ch.impl, ch.size) == ("a1", KIB))
    assert own_a1.decision.decision != Outcome.WIN


@pytest.mark.slow
def test_two_sweeps_of_one_distribution_decide_nothing(tmp_path):
    """One seeded pair (a family decides a false change in up to 5% of pairs: seeds 31/32 do, in the
    p50 round trip's ratio at 1 KiB; the rate over many pairs is the slow test below)."""
    a, b = write_pair(tmp_path, 1000, 1001)
    c = compared(a, b)
    assert not c.decided_changes(), [(ch.kind, ch.impl, ch.size, ch.threads) for ch in c.decided_changes()]
    assert sum(f.size for f in c.families.values()) == len(c.changes) > 300


@pytest.mark.slow
def test_false_changes_stay_within_the_stated_error_rate(tmp_path):
    """Over many seeded pairs drawn from one distribution: each decision calls a change (win or loss)
    at most about 5% of the time, and a change standing after Holm's correction turns up in at most about
    5% of the pairs per family (the stated family-wise rate), with room for the binomial spread."""
    pairs, raw, tests = 20, 0, 0
    standing = {name: 0 for name in ("ratio_by_size", "ratio_per_threads", "own_by_size", "own_per_threads")}
    for seed in range(pairs):
        folder_a, folder_b = (default_like.write(tmp_path / f"{side}{seed}", seed=s)
                              for side, s in (("a", 1000 + 2 * seed), ("b", 1001 + 2 * seed)))
        c = compared(folder_a, folder_b)
        measured = [ch for ch in c.changes if ch.decision.low == ch.decision.low and ch.decision.high > ch.decision.low]
        tests += len(measured)
        raw += sum(ch.decision.decision in (Outcome.WIN, Outcome.LOSS) for ch in measured)
        for name in standing:
            standing[name] += any(c.family(name).stands(ch.decision) for ch in c.decided_changes(False)
                                  if ch.family == name)
        shutil.rmtree(folder_a), shutil.rmtree(folder_b)
    assert raw / tests <= ALPHA * 1.2, (raw, tests)
    # binomial: 20 pairs at a true 5% give more than 4 in 0.3% of draws (the seeds are fixed: this
    # bound was chosen before looking at them; 40 pairs and 6 before 2026-11-28, a minute of the suite)
    for name, n in standing.items():
        assert n <= 4, (name, n, pairs)


# ------------------------------------------------------------------------------------------------
# the text and comparison.json


@pytest.mark.slow
def test_comparison_json_holds_one_change_per_quantity(tmp_path):
    a, b = write_pair(tmp_path, 41, 42, CHANGE_AT_1K, meta_b={"tcp_congestion_control": "cubic", "kernel": "6.18.0"})
    c = compared(a, b)
    doc = json.loads(json.dumps(text.document(c)))
    assert len(doc["changes"]) == len(c.changes)
    keys = {(e["kind"], e["criterion"], e["impl"], e["msg_size"], e["threads"]) for e in doc["changes"]}
    assert len(keys) == len(doc["changes"])
    for entry in doc["changes"]:
        assert entry["decision"] in {str(o) for o in Outcome}
        assert {"ratio", "low", "high", "family", "p_holm", "stands", "verdict", "a", "b"} <= set(entry)
    win = next(e for e in doc["changes"] if (e["kind"], e["criterion"], e["impl"], e["msg_size"], e["threads"])
               == ("own", "throughput", "a1", KIB, None))
    assert win["decision"] == "win" and win["stands"] and win["low"] > 1
    assert doc["statistics"]["correction"] == "holm" and doc["statistics"]["alpha"] == ALPHA
    assert sum(doc["statistics"]["families"].values()) == len(doc["changes"])
    # what differs leads: the kernel and the host's congestion control, and not the conditions
    differs = {d["setting"]: (d["a"], d["b"]) for d in doc["configuration_differences"]}
    assert differs["kernel"] == ("6.1.0-synthetic", "6.18.0")
    assert differs["host default congestion control"] == ("not recorded", "cubic")
    lead = text.summary_markdown(c)
    assert "**2 settings of the configuration differ**" in lead
    assert "| kernel | 6\\.1\\.0\\-synthetic | 6\\.18\\.0 |" in lead


def test_grids_that_differ_are_compared_on_what_they_share(tmp_path):
    a, b = write_pair(tmp_path, 51, 52)
    rows = pd.read_csv(b / "results.csv")
    rows = rows[(rows["msg_size"] != 65536) & ~((rows["impl"] == "uring") & (rows["threads"] == 4))]
    rows.to_csv(b / "results.csv", index=False)
    c = compared(a, b)
    g = text.grid(c)
    assert g["only_a"]["msg_size"] == [65536] and g["only_b_points"] == 0
    assert ("uring", "throughput", 1024, 4) in {tuple(p.values()) for p in g["only_a_list"]}
    assert {ch.size for ch in c.changes} == {64, 1024, 16384}
    uring = [ch for ch in c.changes if ch.impl == "uring"]
    assert uring and all(ch.threads != 4 for ch in uring)
    assert "Only A measured 30 points (sizes 64 KiB): listed in comparison.json, not compared." in \
        text.compared_markdown(c)


# ------------------------------------------------------------------------------------------------
# bad input: one line, nothing written in either folder


_HELD: list = []  # the lock of the "running" folder, held as a live sweep holds it


def bad_folders(tmp_path: Path, a: Path, b: Path) -> list[tuple[list[str], str]]:
    """(arguments, what the one line must say) of every bad input, the folders made in tmp_path."""
    unrelated = tmp_path / "photos"
    unrelated.mkdir()
    (unrelated / "cat.txt").write_text("not a sweep")
    running = tmp_path / "running"  # mid-sweep: its sweep holds the folder's lock (as sweep/folder.exclusive does)
    shutil.copytree(b, running)
    meta = json.loads((running / "meta.json").read_text())
    (running / "meta.json").write_text(json.dumps({**meta, "status": "running"}))
    _HELD.append(open(running / ".lock", "w"))
    fcntl.flock(_HELD[-1], fcntl.LOCK_EX | fcntl.LOCK_NB)
    bare = tmp_path / "bare"  # no meta.json: not a sweep folder
    bare.mkdir()
    shutil.copy(a / "results.csv", bare / "results.csv")
    old = tmp_path / "old"  # another version of the contract: columns the other folder has are missing
    old.mkdir()
    shutil.copy(a / "meta.json", old / "meta.json")
    pd.read_csv(a / "results.csv").drop(columns=["receive", "latency_p50_us"]).to_csv(old / "results.csv", index=False)
    other = tmp_path / "other"  # nothing shared
    shutil.copytree(b, other)
    rows = pd.read_csv(other / "results.csv")
    rows["msg_size"] = rows["msg_size"] * 2
    rows.to_csv(other / "results.csv", index=False)
    return [([a, unrelated], "results.csv does not exist"),
            ([tmp_path / "nowhere", b], "A ("),
            ([a, running], "is mid-sweep: a sweep is measuring into it now (it holds the folder's lock)"),
            ([bare, b], "no meta.json beside results.csv"),
            ([old, b], "results.csv lacks receive, latency_p50_us, which the other folder's has"),
            ([a, other], "share no measured point"),
            ([a, b, "--label-a", "x", "--label-b", "x"], "--label-a and --label-b must differ"),
            ([a, b, "--label-b", "two\nlines"], "--label-b: must be 1 to 60 printable characters"),
            ([a, b, "--out", a / "cmp"], "inside the sweep folder"),
            ([a, b, "--out", b], "inside the sweep folder")]


def _prepare(args: list, out: Path) -> None:
    folders, options = [str(x) for x in args[:2]], dict(zip(args[2::2], args[3::2]))
    compare_report.prepare(*folders, options.get("--label-a"), options.get("--label-b"),
                           options.get("--out", out))


@pytest.mark.parametrize("cases_of", ["bad_folders", "more_bad"], ids=["round 4", "issue 46"])
def test_bad_input_is_refused_in_one_line_and_writes_nothing(tmp_path, cases_of):
    """One folder's problem, or the pair's, is one line naming it (a long value cut); nothing is written
    anywhere, the user's own files least of all."""
    a, b = write_pair(tmp_path, 61, 62)
    cases = globals()[cases_of](tmp_path, a, b)
    before = snapshot(tmp_path)
    for args, says in cases:
        with pytest.raises(CopylabError) as refused:
            _prepare(args, tmp_path / "cmp-out")
        line = str(refused.value)
        assert says in line and "\n" not in line and len(line) < 600, (args, line)
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_the_command_refuses_bad_input_in_one_line_with_exit_2(tmp_path):
    a, b = write_pair(tmp_path, 63, 64)
    cases = bad_folders(tmp_path, a, b)
    before = snapshot(tmp_path)
    proc = run_copylab("compare", str(a), timeout=60)  # one folder
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and " B" in proc.stderr
    for args, says in cases[:3] + cases[4:5] + cases[-1:]:
        proc = run_copylab("compare", *map(str, args), *([] if "--out" in args else ["--out", str(tmp_path / "o")]),
                           timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr
        assert lines[0].startswith("copylab compare: error: ")
    assert snapshot(tmp_path) == before


def more_bad(tmp_path: Path, a: Path, b: Path) -> list[tuple[list, str]]:
    """Issue 46: the inputs compare took without a word (itself, a user's folder as --out, a sweep's
    records as --out) or echoed whole (a 10 kB label), and labels that reorder or vanish in the PDF."""
    copy = tmp_path / "copy-of-a"
    shutil.copytree(a, copy)
    link = tmp_path / "link-to-a"
    link.symlink_to(a)
    mine = tmp_path / "my-notes"  # the user's own folder, with files of the names compare writes
    mine.mkdir()
    (mine / "comparison.pdf").write_text("my own PDF")
    (mine / "compare.ipynb").write_text("{}")
    c = default_like.write(tmp_path / "c", seed=3)  # another sweep: its records are its own
    return [([a, a], "A and B are the same folder"),
            ([a, link], "A and B are the same folder"),
            ([a, copy], "holds the same sweep as A (" + repr(str(a)) + "): identical results.csv and meta.json"),
            ([a, b, "--out", mine], f"--out {str(mine)!r}: not empty and not a folder copylab made (it holds "
                                    "compare.ipynb, comparison.pdf); copylab compare would overwrite files there"),
            ([a, b, "--out", c / "runs" / "cmp"], f"among the records of the sweep {str(c)!r}"),
            ([a, b, "--out", mine / "comparison.pdf"], "exists and is not a folder"),
            ([a, b, "--label-b", "B\u202eevil.exe"], "it holds U+202E (RIGHT-TO-LEFT OVERRIDE)"),
            ([a, b, "--label-a", "x\u2066y"], "--label-a: must be 1 to 60 printable characters"),
            ([a, b, "--label-a", "q" * 10_000], "got 'qqqqqqqqqq"),
            ]


def test_the_command_says_a_sweep_compared_with_itself_in_one_line(tmp_path):
    a, _ = write_pair(tmp_path, 65, 66)
    (tmp_path / "link-to-a").symlink_to(a)
    before = snapshot(tmp_path)
    proc = run_copylab("compare", str(a), str(tmp_path / "link-to-a"), timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("copylab compare: error: A and B are the same folder")
    assert len(proc.stderr.strip().splitlines()) == 1 and snapshot(tmp_path) == before


@pytest.mark.parametrize("status, says", [
    ("interrupted", "its sweep was interrupted at 2026-11-28T10:00:00+00:00 (meta.json status 'interrupted')"),
    ("failed", "its sweep was stopped by an error at 2026-11-28T10:00:00+00:00"),
    ("running", "its sweep ended without closing its books (killed, or the machine stopped): meta.json still says "
                "running")])
def test_an_interrupted_sweep_is_compared_with_a_warning_saying_how_much_it_holds(tmp_path, status, says):
    """Compare took an interrupted sweep (16 of 36 rows) as finished without a word. A sweep measuring
    now is refused (test above, its lock held); one that stopped, however (a signal, an error, kill -9:
    meta.json still says running but nobody holds the lock), is compared with one warning."""
    a, b = write_pair(tmp_path, 67, 68)
    rows = pd.read_csv(b / "results.csv")
    rows.iloc[: len(rows) // 2].to_csv(b / "results.csv", index=False)
    meta = json.loads((b / "meta.json").read_text())
    (b / "meta.json").write_text(json.dumps({**meta, "status": status, "finished_at": "2026-11-28T10:00:00+00:00"}))
    said = []
    params = compare_report.prepare(a, b, out=tmp_path / "cmp", say=said.append)
    assert params["b_dir"] == str(b.resolve())
    assert len(said) == 1 and said[0].startswith(f"copylab compare: warning: B ({str(b)!r}) is an interrupted sweep: "), said
    assert says in said[0] and f"it holds {len(rows) // 2} measured row(s)" in said[0] and "resume it" in said[0]
    assert not (tmp_path / "cmp").exists()


def test_two_folders_of_one_name_are_labelled_by_their_paths(tmp_path):
    """Two sweeps named quick got labels "quick (A)", "quick (B)", which titles adding the side doubled."""
    assert compare_report.default_labels(Path("/r/runs1/quick"), Path("/r/runs2/quick")) == ("runs1/quick", "runs2/quick")
    assert compare_report.default_labels(Path("/r/a"), Path("/r/b")) == ("a", "b")
    assert compare_report.default_labels(Path("/x/q\u202euick"), Path("/y/q\u202euick")) == ("x/quick", "y/quick")


def test_a_folder_compare_made_is_written_again_and_a_new_empty_one_is_taken(tmp_path):
    from copylab import fsutil

    made = tmp_path / "made"
    fsutil.make_output_dir(made, "copylab compare")
    (made / "comparison.pdf").write_text("an earlier comparison")
    fsutil.check_output_dir(made, "--out", "copylab compare")  # copylab's own: written again
    (tmp_path / "empty").mkdir()
    fsutil.check_output_dir(tmp_path / "empty", "--out", "copylab compare")
    fsutil.check_output_dir(tmp_path / "new", "--out", "copylab compare")
    assert (made / fsutil.OUTPUT_MARK).read_text() == "made by copylab: copylab compare\n"


def test_prepare_names_the_side_of_a_bad_folder(tmp_path):
    a, _ = write_pair(tmp_path, 81, 82)
    with pytest.raises(CopylabError, match=r"^B \("):
        compare_report.prepare(a, tmp_path / "missing", out=tmp_path / "o")


# ------------------------------------------------------------------------------------------------
# the report


@pytest.mark.slow
def test_compare_writes_the_report_and_comparison_json_and_leaves_both_folders_alone(tmp_path):
    a, b = write_pair(tmp_path, 91, 92, CHANGE_AT_1K, meta_b={"tcp_congestion_control": "cubic"})
    before = snapshot(a, b)
    out = tmp_path / "cmp"
    label = "cubic_$x & {y} <b>*not bold*</b> \\textbf{z}"
    proc = run_copylab("compare", str(a), str(b), "--out", str(out), "--label-a", "bbr", "--label-b", label,
                       timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == str(out / "comparison.pdf")
    assert snapshot(a, b) == before
    assert sorted(p.name for p in out.iterdir()) == [".copylab-output", "compare.ipynb", "comparison.html",
                                                      "comparison.json", "comparison.pdf"]
    doc = json.loads((out / "comparison.json").read_text())
    assert doc["b"]["label"] == label
    # the contract's decision (each at 95%); whether it also stands after Holm's correction over its
    # family of 48 varies with the draw at 4 passes (about 2 pairs in 3: see the first test's seeds)
    wins = [e for e in doc["changes"] if e["decision"] == "win" and e["criterion"] == "throughput"]
    assert {(e["impl"], e["msg_size"]) for e in wins if e["threads"] is None and e["kind"] == "own"} == {
        (i, KIB) for i in ("a1", "a2", "a3", "uring")}
    assert not [e for e in doc["changes"] if e["stands"] and e["decision"] in ("win", "loss")
                and (e["msg_size"], e["kind"], e["criterion"]) != (KIB, "own", "throughput")]
    html = (out / "comparison.html").read_text()
    assert "<b>*not bold*</b>" not in html and "&lt;b&gt;" in html  # the label shown, not obeyed
    assert re.search(r"plotly\.js v\d", html)  # plotly.js embedded: works offline, as the study report
    assert not re.findall(r'<script[^>]+src="https?://', html), "comparison.html must not load scripts from a CDN"
    assert (out / "comparison.pdf").read_bytes().startswith(b"%PDF")
    import subprocess

    pdf_text = subprocess.run(["pdftotext", str(out / "comparison.pdf"), "-"], capture_output=True, text=True).stdout
    assert "cubic_$x & {y}" in pdf_text and "host default congestion control" in pdf_text


def test_the_quick_sweep_compared_with_a_copy_decides_no_change(quick_sweep_dir, tmp_path):
    """The real quick sweep (one pass) against a copy of itself: every change undecided (a single pass
    gives no interval), none decided, and neither folder written."""
    copy = tmp_path / "copy"
    shutil.copytree(quick_sweep_dir, copy)
    before = snapshot(quick_sweep_dir, copy)
    df_a, meta_a = compare_report.load_sweep(quick_sweep_dir, "A")
    df_b, meta_b = compare_report.load_sweep(copy, "B")
    c = comparison(df_a, meta_a, df_b, meta_b, "quick", "copy")
    assert c.changes and not c.decided_changes(False)
    assert all(ch.decision.decision == Outcome.UNDECIDED for ch in c.changes)
    own = [ch for ch in c.changes if ch.kind == OWN]
    assert own and all(ch.a == pytest.approx(ch.b) for ch in own)
    assert text.differences(c) == []
    assert snapshot(quick_sweep_dir, copy) == before


# ------------------------------------------------------------------------------------------------
# the explorer


def test_the_explorer_loads_two_sweeps_with_a_sweep_selector(tmp_path):
    a, b = write_pair(tmp_path, 101, 102, CHANGE_AT_1K)
    df_a, meta = analysis.load_results(a)
    df_b, meta_b = analysis.load_results(b)
    meta_b = {**meta_b, "kernel": "6.18.0-other"}
    ex = explorer.Explorer(df_a, meta, other=df_b, labels=("bbr", "cubic"), other_meta=meta_b)
    assert ex.sweep.options == ("bbr", "cubic", "both")
    ex.filter.value = 1  # one thread
    ex.metric.value = "throughput_gbps"
    ex.sweep.value = "bbr"
    shown_a = {t.name: list(t.y) for t in ex.fig.data if t.visible and len(t.y) and t.mode == "lines+markers"}
    ex.sweep.value = "cubic"
    shown_b = {t.name: list(t.y) for t in ex.fig.data if t.visible and len(t.y) and t.mode == "lines+markers"}
    a1 = IMPL_LABELS["a1"]
    assert set(shown_a) == {f"{IMPL_LABELS[i]} (bbr)" for i in ("a1", "a2", "a3", "uring")}
    assert {n.replace("(cubic)", "(bbr)") for n in shown_b} == set(shown_a)
    sizes = list(next(t for t in ex.fig.data if t.name == f"{a1} (cubic)").x)
    at_1k = sizes.index(KIB)
    assert shown_b[f"{a1} (cubic)"][at_1k] / shown_a[f"{a1} (bbr)"][at_1k] == pytest.approx(CHANGE_AT_1K, rel=0.25)
    ex.sweep.value = "both"
    names = {t.name for t in ex.fig.data if t.visible and len(t.y) and t.mode == "lines+markers"}
    assert names == set(shown_a) | set(shown_b)
    dashes = {t.name: t.line.dash for t in ex.fig.data if t.name in names}
    assert dashes[f"{a1} (cubic)"] == "dash" and dashes[f"{a1} (bbr)"] == "solid"
    # every hover opens with its trace's name, the sweep's label in it; the host line names both hosts
    for trace in ex.fig.data:
        if trace.visible and len(trace.y):
            assert "%{customdata[0]}" in trace.hovertemplate
            assert {row[0] for row in trace.customdata} == {trace.name.removesuffix(": repetitions")}, trace.name
    assert "A (bbr): measured on Linux 6.1.0-synthetic" in ex.host.value
    assert "B (cubic): measured on Linux 6.18.0-other" in ex.host.value
    # one sweep: no selector shown, the traces named as before
    single = explorer.Explorer(df_a, meta)
    assert single.sweep.layout.display == "none" and a1 in {t.name for t in single.fig.data}


# ------------------------------------------------------------------------------------------------
# stored pairs of real sweeps (tests/data/compare/README.md says where and when they were measured)

STORED = ROOT / "tests" / "data" / "compare"


def _stored(name: str, tmp_path: Path) -> Path:
    """A stored sweep as a results folder (results.csv.gz unpacked)."""
    import gzip

    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(STORED / name / "meta.json", folder / "meta.json")
    packed = STORED / name / "results.csv.gz"
    (folder / "results.csv").write_bytes(gzip.decompress(packed.read_bytes()) if packed.is_file()
                                         else (STORED / name / "results.csv").read_bytes())
    return folder


def test_two_default_sweeps_of_one_host_decide_no_change_beyond_the_error_rate(tmp_path):
    """Two make report sweeps of this VM, minutes apart: 2 of 375 comparisons raw wins or losses
    (the 5% each decision allows would be about 19), none standing after its family's correction."""
    c = compared(_stored("default-2334", tmp_path), _stored("default-2340", tmp_path))
    raw = [ch for ch in c.changes if ch.decision.decision in (Outcome.WIN, Outcome.LOSS)]
    assert len(c.changes) > 300 and len(raw) <= ALPHA * len(c.changes)
    assert not c.decided_changes(), [(ch.kind, ch.criterion, ch.impl, ch.size, ch.threads) for ch in c.decided_changes()]


def test_cubic_against_bbr_decides_the_1k_throughput_change(tmp_path):
    """The same paths with cubic, then bbr, on this VM: each path's own throughput at 1 KiB is decided
    lower under bbr (cubic/bbr 1.36-1.52x on the VMs of round three; 1.7-2.6x here), and stands."""
    c = compared(_stored("cc-cubic", tmp_path), _stored("cc-bbr", tmp_path))
    for impl in ("a1", "a2", "a3"):
        change = next(ch for ch in c.select(OWN, "throughput", False) if (ch.impl, ch.size) == (impl, KIB))
        assert change.decision.decision == Outcome.LOSS and change.decision.high < 1 / 1.1, change
        assert c.stands(change), change
    settings = {row["setting"]: (row["a"], row["b"]) for row in text.differences(c)}
    assert any("congestion" in s.lower() and "cubic" in str(v[0]) and "bbr" in str(v[1]) for s, v in settings.items()), \
        settings


# ------------------------------------------------------------------------------------------------
# the report reads as a change report (issue 47)


def test_the_summary_says_what_changed_as_the_correction_decides_it(tmp_path):
    """What changed is the standing wins and losses, largest first, each with its interval; every outcome
    is counted as decided and as standing, so no sentence claims more (or less) than the correction."""
    a, b = write_pair(tmp_path, 11, 12, CHANGE_AT_1K)
    c = compared(a, b)
    summary = text.summary_markdown(c)
    changed = c.changed(per_threads=False)
    assert changed and all(c.stands(ch) and ch.decision.decision in (Outcome.WIN, Outcome.LOSS) for ch in changed)
    assert [ch.size_of_change for ch in changed] == sorted((ch.size_of_change for ch in changed), reverse=True)
    quantities = "quantity" if len(changed) == 1 else "quantities"
    assert f"**B differs from A in {len(changed)} {quantities}**" in summary
    top = changed[0]
    said = analysis.fmt_num(top.decision.ratio)
    assert f"| {analysis.IMPL_LABELS[top.impl][:2]} throughput | 1 KiB | {said} (" in summary
    tallies = c.tallies()
    won = tallies[Outcome.WIN].decided + tallies[Outcome.LOSS].decided
    stood = tallies[Outcome.WIN].standing + tallies[Outcome.LOSS].standing
    assert stood == len(c.changed()) and won == len(c.decided_changes(False))
    assert f"{won} decided better or worse at 95% each,\n{stood} of them standing" in summary
    eq = tallies[Outcome.EQUIVALENT]
    assert f"{eq.decided} decided equivalent within\n±10%, {eq.standing} of them standing" in summary
    assert "No change from A to B stands" not in summary
    # each fallen decision is marked † in the tables, none that stands is
    tables = text.tables_markdown(c)
    assert tables.count("†") >= sum(1 for ch in c.select(per_threads=False) if c.fallen(ch))


def test_two_sweeps_of_one_host_say_that_no_change_stands_and_count_the_equivalences_apart(tmp_path):
    c = compared(_stored("default-2334", tmp_path), _stored("default-2340", tmp_path))
    summary = text.summary_markdown(c)
    assert "**No change from A to B stands after Holm's correction**" in summary
    assert "**No recorded setting differs**" in summary
    eq = c.tallies()[Outcome.EQUIVALENT]
    assert 0 < eq.standing < eq.decided  # equivalences are corrected too: "decided" and "standing" differ
    assert f"{eq.decided} decided equivalent within\n±10%, {eq.standing} of them standing" in summary
    # every per-thread change is in a table (they were only in comparison.json), one column per thread count
    tables = text.tables_markdown(c)
    assert "| path | size | 1 thread | 2 threads | 4 threads | 8 threads |" in tables
    cell = re.compile(r"^([\d.]+ ([+−=?]|\([+−]\))†?|–)$")
    rows = [line for line in tables.splitlines() if line.startswith("| A")
            and all(cell.match(x.strip()) for x in line.strip("|").split("|")[2:])]
    assert len(rows) == len({(ch.kind, ch.criterion, ch.impl, ch.size) for ch in c.select(per_threads=True)})
    # no table line wraps in the PDF: pandoc lays out a pipe table at its cells' own widths when its lines
    # fit its 72 columns
    assert max(len(line) for line in tables.splitlines() if line.startswith("|")) <= 72


def test_the_templates_word_outcomes_they_compare_as_enums():
    """The comparison's words are templates (analysis/templates/comparison_*); the Python gathers what they
    word and writes no sentence; an outcome is compared as its enum, never as a string."""
    import inspect

    from copylab.analysis.text import comparison as module

    templates = sorted((ROOT / "lib" / "copylab" / "analysis" / "templates").glob("comparison*.j2"))
    assert len(templates) >= 5
    for path in templates:
        source = path.read_text()
        assert not re.search(r"""[=!]=\s*["'](win|loss|equivalent|undecided|better|worse)["']""", source), path
    python = inspect.getsource(module)
    assert "f\"**" not in python and "plural(" not in python  # no sentence is built in Python
    assert not re.search(r"""==\s*["'](win|loss|equivalent|undecided)["']""", python)


def test_the_figure_gives_each_paths_markers_a_panel_of_their_own(tmp_path):
    """Paths measured alike sit at the same ratio (often exactly 1): drawn together their markers covered
    one another. One path per panel, sizes evenly spaced, so no two markers meet."""
    from copylab.figures.comparison import comparison_figures

    a, b = write_pair(tmp_path, 11, 12, CHANGE_AT_1K)
    c = compared(a, b)
    [fig] = comparison_figures(c)  # 4 paths, 7 panels a criterion: own values' rows above the ratios'
    assert len(fig._grid_ref) == 6 and len(fig._grid_ref[0]) == 4
    drawn = [t for t in fig.data if t.x and t.x[0] is not None]
    panels = [(t.xaxis, t.yaxis) for t in drawn]
    assert len(panels) == len(set(panels)) and len(drawn) > 1
    for t in drawn:
        assert list(t.x) == sorted(set(t.x)) and all(float(x).is_integer() for x in t.x)
    title = fig.layout.title.text
    assert len(title) <= 70 and "▲" not in title  # the decisions' key is the legend, the title fits its width
    assert {t.name for t in fig.data if t.showlegend is not False and t.name} >= {"B higher", "B lower", "equivalent",
                                                                                   "undecided"}


def test_comparison_json_keeps_its_keys_and_says_which_decisions_do_not_stand(tmp_path):
    a, b = write_pair(tmp_path, 11, 12, CHANGE_AT_1K)
    c = compared(a, b)
    doc = json.loads(json.dumps(text.document(c)))
    assert {"contract", "a", "b", "configuration_differences", "conditions", "grid", "statistics",
            "decided_changes", "changes"} <= set(doc)
    assert doc["statistics"]["family_words"]["ratio_by_size"].startswith("each path against A1 per size")
    for entry in doc["changes"]:
        assert entry["fallen"] == (entry["decision"] != "undecided" and not entry["stands"])
        assert entry["verdict"] in ("better", "better_within_margin", "equivalent", "worse_within_margin", "worse",
                                    "undecided")


def test_a_sweep_that_stopped_says_so_where_it_ended_and_it_is_a_condition_not_a_cause(tmp_path):
    a, b = write_pair(tmp_path, 31, 32, meta_b={"status": "interrupted", "finished_at": "2026-11-28T10:00:00"})
    rows = {r["setting"]: r for r in text.configuration_table(compared(a, b))}
    assert rows["ended"]["b"] == "2026-11-28T10:00:00 (stopped: interrupted)"
    assert "stopped" not in rows["ended"]["a"]
    assert rows["ended"]["condition"] and "ended" not in {r["setting"] for r in text.differences(compared(a, b))}
