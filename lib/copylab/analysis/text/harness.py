"""The harness section: copylab's programs against the reference programs, one table per metric
with its unit and direction, which side bounds each tool at each size, each tool's window as
measured, and the like-for-like pair (the one-copy path and the bulk reference both send a prepared buffer)."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_size, markdown_table, plural
from ..explain import CLEAR_GAP, NEAR_FULL, and_list, bound_side, per_call_together, wakeup_regime
from ..decisions import DEFAULT_MARGIN
from ..peers import harness_ratios, small_message_evidence
from ..roles import ONE_COPY, name, native, peer_for, peers
from ..stats import one_receive

METRIC_WORDS = {
    "throughput": ("Throughput", "Gbit/s", "higher is better", "above 1: copylab's path moves more"),
    "p50 round trip": ("Round trip, p50", "µs", "lower is better", "below 1: copylab's path answers sooner"),
}


def _apart(low: float, high: float, margin: float) -> bool:
    return low > 0 and high / low > 1 + margin


def _sides_apart(r: pd.Series, margin: float) -> list[str]:
    """The sides of a ratio (the reference, copylab's path) whose lowest and highest pass differ by more than the
    equivalence margin: one pass of either moves the ratio by more than the margin, so it is not decided
    (review-fresh5 N9: the reference's passes alone were looked at)."""
    return [name(who) for who, low, high in ((r["peer"], r["peer_low"], r["peer_high"]),
                                             (r["impl"], r["impl_low"], r["impl_high"])) if _apart(low, high, margin)]


def _spread(r: pd.Series) -> str:
    """'0.91–1.23': the ratio over both sides' passes, from the path's lowest against the reference's highest
    to its highest against the reference's lowest."""
    low, high = sorted((r["impl_low"] / r["peer_high"], r["impl_high"] / r["peer_low"]))
    return f"{fmt_num(low)}–{fmt_num(high)}"


def _not_decided(rows: pd.DataFrame, peer: str, margin: float, again: bool = False) -> str:
    """' Not decided where a side's lowest and highest pass differ by more than the 10% equivalence margin, as at
    4 KiB (A2) and 16 KiB (<reference>): one pass moves those ratios by more than it.' or ''. again: said before
    for these rows (the metric table's caption), so a short reference back (review-fresh4 G7)."""
    apart: dict[int, set[str]] = {}
    for _, r in rows.iterrows():
        sides = _sides_apart(r, margin)
        if sides:
            apart.setdefault(int(r["msg_size"]), set()).update(sides)
    if not apart:
        return ""
    sizes = and_list([f"{fmt_size(s)} ({and_list(sorted(apart[s]))})" for s in sorted(apart)])
    if again:
        return (f" Not decided at {sizes}, as in the {name(peer)} table above: the passes named differ there by "
                "more than the margin.")
    return (f" Not decided where the lowest and highest pass of {name(peer)} or of copylab's path differ by more "
            f"than the {margin:.0%} equivalence margin, as at {sizes}: one pass moves those ratios by more than it.")


def metric_tables(df: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> list[tuple[str, pd.DataFrame]]:
    """One (caption, table) per metric a reference program measured: per size at the fewest threads,
    each program's value in the metric's unit (the reference's lowest and highest pass beside its median),
    then each path's ratio to the reference (not decided where either side's passes spread: _not_decided)."""
    ratios = harness_ratios(df)
    out = []
    for (peer, metric), g in ratios.groupby(["peer", "metric"]):
        what, unit, direction, reading = METRIC_WORDS[metric]
        g = g[g["threads"] == g["threads"].min()]
        rows = []
        for size, at in g.groupby("msg_size"):
            first = at.iloc[0]
            row = {"message size": fmt_size(size), f"{name(peer)} ({unit})": first["peer_value"],
                   f"{name(peer)} passes, lowest–highest": f"{fmt_num(first['peer_low'])}–{fmt_num(first['peer_high'])}"}
            row.update({f"{name(r['impl'])} ({unit})": r["impl_value"] for _, r in at.iterrows()})
            row.update({f"{name(r['impl'])} / {name(peer)}": r["ratio"] for _, r in at.iterrows()})
            rows.append(row)
        passes = int(df.loc[df["impl"] == peer, "rep"].nunique()) if "rep" in df else 0
        robust = ("Each value is the median of its passes, so one pass taken under heavy steal or apart does not "
                  "decide a row." if passes >= 3 else
                  f"Each value is the median of its passes; {name(peer)} ran {plural(passes, 'pass')}, so "
                  "its values are their mean and one pass can move a row: its ratios are indications, without an "
                  "interval, not decisions.")
        caption = (f"**{what} ({unit}, {direction})** at {plural(int(g['threads'].min()), 'thread')}, against {name(peer)}; "
                   f"ratio {reading}. {robust}{_not_decided(g, peer, margin)}")
        out.append((caption, pd.DataFrame(rows)))
    return out


def bounds_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per tool and size (its mode, fewest threads): both CPUs' busy shares, steal and which side bounds it."""
    rows = one_receive(df)
    out = []
    tools = native(sorted(set(rows["impl"]))) + [p for p in peers() if p in set(rows["impl"])]
    for tool in tools:
        mine = rows[rows["impl"] == tool]
        mode = "throughput" if (mine["mode"] == "throughput").any() else "latency"
        mine = mine[mine["mode"] == mode]
        for size, g in mine.groupby("msg_size"):
            at = g[g["threads"] == g["threads"].min()]
            e = bound_side(at)
            out.append({"tool": name(tool), "mode": mode, "message size": fmt_size(size),
                        "sender busy": _pct(e.evidence["sender_busy"]), "receiver busy": _pct(e.evidence["receiver_busy"]),
                        "steal": _pct(e.evidence["steal"]), "bounded by": e.verdict})
    return pd.DataFrame(out, columns=["tool", "mode", "message size", "sender busy", "receiver busy", "steal", "bounded by"])


def bounds_markdown(df: pd.DataFrame) -> str:
    """The bounds table with its reading, or one sentence when no tool's CPUs had busy shares."""
    table = bounds_table(df)
    if table.empty:
        return ""
    if (table["bounded by"] == "unknown").all():
        return ("**Which side bounds each tool** cannot be told in this sweep: the pinned CPUs' busy shares were not "
                "recorded (pin sender and receiver to CPUs of their own: grid keys pin_server and pin_client).")
    # the reading states every verdict the column can hold, with bound_side's own thresholds
    full, gap = f"{100 * NEAR_FULL:.0f}%", f"{100 * CLEAR_GAP:.0f}"
    return ("**Which side bounds each tool** (its mode, fewest threads; a side bounds it when its CPU is busy "
            f"at least {full} of the window and at least {gap} points more than the other's; \"both\" when one is "
            f"busy at least {full} and the other within {gap} points of it, so either may bound it; \"neither\" "
            f"when neither reaches {full}):\n\n" + markdown_table(table))


def _pct(x) -> str:
    return "n/a" if x != x else f"{100 * x:.0f}%"


def windows_table(df: pd.DataFrame) -> pd.DataFrame:
    """Each tool's window as measured: what opened and closed it, what ended the warm-up, the warm-up
    as used and the measured seconds (medians over its runs)."""
    out = []
    # one row per tool and mode: a latency window (0.25 s) pooled with a throughput one (1 s) is neither
    for (tool, mode), g in one_receive(df).groupby(["impl", "mode"]):
        out.append({"tool": name(tool), "mode": mode, "window opened and closed by": _values(g, "window_source"),
                    "warm-up ended by": _values(g, "warmup_end"),
                    "warm-up (s, median)": _median(g, "warmup_s"), "window (s, median)": _median(g, "duration_s"),
                    "runs": int(len(g))})
    return pd.DataFrame(out)


STEADY = ("steady", "bound")  # warm-ups the client's steady-state detection ended (bound: at its limit)


def windows_note(df: pd.DataFrame) -> str:
    """Which tools' windows did not open on a detected steady state, and what opened them instead:
    their rates in the tables above are after a fixed warm-up."""
    fixed = []
    for tool, g in one_receive(df).groupby("impl"):
        ends = set(g["warmup_end"].dropna().astype(str)) if "warmup_end" in g else set()
        if not ends & set(STEADY):
            fixed.append(f"{name(tool)} (warm-up ended by {', '.join(sorted(ends)) or 'not recorded'})")
    if not fixed:
        return "Every tool's window opened on a steady state."
    return ("Not on a detected steady state: " + "; ".join(fixed) + ". Their windows follow a fixed warm-up "
            "(the tool's own, or a timer), so any ramp-up left after it is in what they measure; tools/harness.py "
            "measures the peers with longer warm-ups and windows (README, \"How copylab compares\").")


def _values(g: pd.DataFrame, column: str) -> str:
    found = sorted(set(g[column].dropna().astype(str))) if column in g else []
    return ", ".join(found) or "not recorded"


def _median(g: pd.DataFrame, column: str) -> float:
    values = pd.to_numeric(g[column], errors="coerce").dropna() if column in g else pd.Series(dtype=float)
    return float(values.median()) if len(values) else float("nan")


def _bound(rows: pd.DataFrame, tool: str, size: int, threads: int):
    at = rows[(rows["impl"] == tool) & (rows["mode"] == "throughput") & (rows["msg_size"] == size)
              & (rows["threads"] == threads)]
    return bound_side(at)


def bound_caveats(df: pd.DataFrame) -> list[str]:
    """Per size: the copylab paths bounded by another side than the throughput reference, whose ratio to
    it therefore compares the bounding sides' loops, not two send paths."""
    peer = peer_for("throughput")
    ratios = harness_ratios(df)
    ratios = ratios[ratios["peer"] == peer] if len(ratios) else ratios
    rows, out = one_receive(df), []
    for (size, threads), g in ratios.groupby(["msg_size", "threads"]):
        ref = _bound(rows, peer, size, threads)
        if ref.verdict not in ("sender", "receiver"):
            continue
        other = [r["impl"] for _, r in g.iterrows()
                 if _bound(rows, r["impl"], size, threads).verdict in ({"sender", "receiver"} - {ref.verdict})]
        if other:
            e = ref.evidence
            out.append(f"at {fmt_size(size)} {name(peer)} is bounded by its {ref.verdict} (sender CPU busy "
                       f"{_pct(e['sender_busy'])}, receiver {_pct(e['receiver_busy'])}) and {and_list([name(o) for o in other])} "
                       f"by {'its' if len(other) == 1 else 'their'} {'receiver' if ref.verdict == 'sender' else 'sender'}: "
                       f"{'that ratio compares' if len(other) == 1 else 'those ratios compare'} what bounds each, "
                       "not two send paths")
    return out


def like_for_like_text(df: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> str:
    """The one-copy path against the bulk reference (both send a prepared buffer, neither serialises), per size with
    how far the reference's lowest and highest pass move the ratio (not decided where they differ by more than the
    equivalence margin), and where a path and the reference are bounded by different sides (then the ratio
    compares those sides)."""
    peer = peer_for("throughput")
    ratios = harness_ratios(df)
    pair = ratios[(ratios["impl"] == ONE_COPY) & (ratios["peer"] == peer)] if len(ratios) else ratios
    if pair.empty:
        return ""
    pair = pair[pair["threads"] == pair["threads"].min()]
    apart = ((pair["peer_high"] > pair["peer_low"]) | (pair["impl_high"] > pair["impl_low"])).any()
    parts = [f"{fmt_size(r['msg_size'])}: {fmt_num(r['ratio'])}" + (f" ({_spread(r)})" if apart else "")
             for _, r in pair.sort_values("msg_size").iterrows()]
    spread = (f" (in brackets: the ratio over both sides' passes, {name(ONE_COPY)}'s lowest against {name(peer)}'s "
              "highest to its highest against the lowest)" if apart else "")
    text = (f"**Like for like: {name(ONE_COPY)} and {name(peer)}** both send a prepared buffer with one call per "
            f"message, neither serialises; {name(ONE_COPY)}/{name(peer)} throughput{spread}: {'; '.join(parts)}."
            + _not_decided(pair, peer, margin, again=True))  # metric_tables' caption says it in full
    caveats = bound_caveats(df)
    return text + (" Careful: " + "; ".join(caveats) + "." if caveats else "")


def small_message_text(df: pd.DataFrame) -> str:
    """Per tool at the smallest size and fewest threads (each receive strategy measured): what the
    context switches per message say; one sentence when none of them can be told."""
    table = small_message_evidence(df)
    if table.empty:
        return ""
    found = [wakeup_regime(r) for _, r in table.sort_values(["impl", "receive"]).iterrows()]
    if all(e.verdict == "unknown" for e in found):
        first = table.iloc[0]
        return wakeup_regime(first, f"Every tool at {fmt_size(first['msg_size'])}").text
    # the per-call claim once, after the numbers of every point it holds for
    per_call = [e for e in found if e.verdict == "per_call"]
    others = [e.text for e in found if e.verdict not in ("unknown", "per_call")]
    return " ".join(([per_call_together(per_call)] if per_call else []) + others)
