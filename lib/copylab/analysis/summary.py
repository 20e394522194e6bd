"""The summary for engineers at the top of the report: which send path to use at which message size on
this host, for throughput, CPU per byte and latency, each choice with its decision against the
baseline and its interval (decisions.py), and what changes between two hosts with a real NIC."""

from __future__ import annotations

import pandas as pd

from ..fmt import fmt_num, fmt_pct, fmt_size
from .decisions import DEFAULT_MARGIN, compare_values, log_values
from .explain import and_list
from .findings import data_path
from .roles import BASE, ZERO_COPY, name, native
from .stats import one_receive, zc_copied_share

# criterion -> (mode, metric, higher is better, words)
CRITERIA = {
    "throughput": ("throughput", "throughput_gbps", True, "throughput (Gbit/s, higher is better)"),
    "cpu_per_byte": ("throughput", "cpu_ns_per_byte", False, "CPU time per byte, sender + receiver (ns/B, lower is better)"),
    "latency": ("latency", "latency_p50_us", False, "round trip p50 (µs, lower is better)"),
}


def _rows(df: pd.DataFrame, mode: str) -> pd.DataFrame:
    rows = one_receive(df)
    rows = rows[(rows["mode"] == mode) & rows["impl"].isin(native(set(rows["impl"])))]
    return rows.assign(cpu_ns_per_byte=(rows["srv_task_clock_ms"] + rows["cli_task_clock_ms"]) * 1e6
                       / rows["bytes"].where(rows["bytes"] > 0))


def choices(df: pd.DataFrame, criterion: str, margin: float = DEFAULT_MARGIN) -> dict[int, dict]:
    """Per size: the path to use for one criterion and the decisions behind it. A path is chosen over
    the baseline only where it is decided better; otherwise the baseline stays (with the others' verdicts)."""
    mode, metric, higher, _ = CRITERIA[criterion]
    rows = _rows(df, mode)
    if rows.empty or BASE not in set(rows["impl"]):
        return {}
    values = log_values(rows, metric)  # paired within the sweep's blocks, as Q4/Q5 are
    verdicts: dict[int, dict] = {}
    for impl in sorted(set(rows["impl"]) - {BASE}):
        for size, d in compare_values(values, impl, BASE, margin)["by_size"].items():
            better = d.decision == ("win" if higher else "loss")
            worse = d.decision == ("loss" if higher else "win")
            verdicts.setdefault(size, {})[impl] = {"decision": d, "verdict": "better" if better else "worse"
                                                   if worse else d.decision}
    out = {}
    for size, found in sorted(verdicts.items()):
        better = [i for i, v in found.items() if v["verdict"] == "better"]
        pick = (max if higher else min)(better, key=lambda i: found[i]["decision"].ratio) if better else BASE
        out[size] = {"choice": pick, "others": found}
    return out


def cell(entry: dict) -> str:
    """The table's cell: the path to use, then each other path's verdict with its ratio to the baseline
    and interval: 'A2 · A2 better 1.12 (1.03–1.22) · A3 equivalent 0.98 (0.93–1.04)'."""
    said = [f"{name(i)} {v['verdict']} {_short(v['decision'])}" for i, v in sorted(entry["others"].items())]
    return " · ".join([name(entry["choice"])] + said)


def _short(d) -> str:
    return f"{fmt_num(d.ratio)}" + (f" ({fmt_num(d.low)}–{fmt_num(d.high)})" if d.low == d.low else "")


def summary_answer(df: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> dict:
    """answers.json's summary: per criterion and size the path to use, its decision and interval."""
    out = {}
    for criterion in CRITERIA:
        found = choices(df, criterion, margin)
        out[criterion] = {str(size): {"choice": e["choice"],
                                      "decisions": {i: {"verdict": v["verdict"], **v["decision"].to_dict()}
                                                    for i, v in e["others"].items()}}
                          for size, e in found.items()}
    return out


def summary_table(df: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> pd.DataFrame:
    """Rows: message sizes; a column per criterion: the path to use and why."""
    found = {c: choices(df, c, margin) for c in CRITERIA}
    sizes = sorted({s for f in found.values() for s in f})
    table = {"message size": [fmt_size(s) for s in sizes]}
    for criterion, (_, _, _, words) in CRITERIA.items():
        if found[criterion]:
            table[words] = [cell(found[criterion][s]) if s in found[criterion] else "not measured" for s in sizes]
    return pd.DataFrame(table)


def advice(entry: dict) -> str:
    """What to use at one size: the path decided better, or the baseline with what is known of the others."""
    pick, others = entry["choice"], entry["others"]
    if pick != BASE:
        return name(pick)
    equivalent = [name(i) for i, v in sorted(others.items()) if v["verdict"] == "equivalent"]
    undecided = [name(i) for i, v in sorted(others.items()) if v["verdict"] == "undecided"]
    text = f"{name(BASE)}, or equally {and_list(equivalent)}" if equivalent else name(BASE)
    if undecided:
        text += f" ({and_list(undecided)} undecided against it)"
    elif not equivalent:
        text += " (every other path decided worse)"
    return text


def ranges_text(df: pd.DataFrame, criterion: str, margin: float = DEFAULT_MARGIN) -> str:
    """'A1 at 64 B–1 KiB; A2 at 4 KiB–64 KiB (1.12×, 95% interval 1.03–1.22, A1 at 64 KiB)'."""
    found = choices(df, criterion, margin)
    if not found:
        return "not measured"
    groups: list[list[int]] = []
    for size in sorted(found):
        if groups and advice(found[groups[-1][-1]]) == advice(found[size]):
            groups[-1].append(size)
        else:
            groups.append([size])
    parts = []
    for g in groups:
        entry = found[g[-1]]
        span = fmt_size(g[0]) if len(g) == 1 else f"{fmt_size(g[0])}–{fmt_size(g[-1])}"
        text = f"at {span}: {advice(entry)}"
        if entry["choice"] != BASE:
            d = entry["others"][entry["choice"]]["decision"]
            text += (f" ({fmt_num(d.ratio)}× {name(BASE)}'s at {fmt_size(g[-1])}, 95% interval "
                     f"{fmt_num(d.low)}–{fmt_num(d.high)})")
        parts.append(text)
    return "; ".join(parts)


def nic_text(df: pd.DataFrame) -> str:
    """What changes between two hosts with a real NIC, from this run's own zero-copy accounting."""
    share, path = zc_copied_share(df), data_path(df)
    how = ("To measure it, run the same grid with `topology: ssh` on two machines (README, \"Two hosts over "
           "SSH\"; `params/two-hosts.yaml`).")
    if path == "hosts":
        return (f"These numbers come from two hosts: {fmt_pct(100 - share)} of {name(ZERO_COPY)}'s completions left "
                "without a copy (the NIC read the pinned pages).") if share == share else ""
    copied = (f"Here {fmt_pct(share)} of {name(ZERO_COPY)}'s zero-copy completions were flagged copied: "
              if share == share else "")
    return (f"**On a real NIC.** {copied}between two namespaces of one host the kernel copies the pinned pages on "
            "delivery, so zero-copy only moves the copy. Between two hosts the NIC reads the pinned pages by DMA and "
            "the sender's copy disappears; the kernel documentation puts the break-even near 10 KB writes, and the "
            "receiver's copy stays. " + how)


def summary_markdown(df: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> str:
    lines = [f"- **{words[0].upper() + words[1:]}:** {ranges_text(df, c, margin)}."
             for c, (_, _, _, words) in CRITERIA.items()]
    return ("Which send path to use on this host, by message size: a path other than the two-copy baseline "
            f"({name(BASE)}) is named only where it is decided better than {name(BASE)} over all thread counts "
            f"(95% interval of the ratio, equivalence margin ±{fmt_num(100 * margin)}%). The table gives each "
            f"path's verdict with its ratio to {name(BASE)} and interval.\n\n" + "\n".join(lines))
