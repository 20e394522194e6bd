"""The summary for engineers at the top of the report: which send path to use at which message size on
this host, for throughput, CPU per byte and latency, each choice with the Study's decision against
the baseline and its interval, and what changes between two hosts with a real NIC.

A path other than the baseline is chosen only where it is decided better and that claim survives
Holm's correction over the summary's comparisons (the Study's family "summary")."""

from __future__ import annotations

from enum import StrEnum

import pandas as pd

from ...fmt import fmt_num, fmt_pct, fmt_size
from ..decisions import Outcome
from ..explain import and_list
from ..findings import data_path
from ..roles import BASE, ZERO_COPY, name, native
from ..stats import zc_copied_share
from ..study import CRITERIA, Study
from .words import decision_cell, interval

FAMILY = "summary"
WORDS = {"throughput": "throughput (Gbit/s, higher is better)",
         "cpu_per_byte": "CPU time per byte, sender + receiver (ns/B, lower is better)",
         "latency": "round trip p50 (µs, lower is better)"}


class Verdict(StrEnum):
    """A path against the baseline for one criterion, where higher or lower may be better."""

    BETTER = "better"
    WORSE = "worse"
    EQUIVALENT = "equivalent"
    UNDECIDED = "undecided"


def verdict(outcome: Outcome, higher_is_better: bool) -> Verdict:
    if outcome in (Outcome.EQUIVALENT, Outcome.UNDECIDED):
        return Verdict(str(outcome))
    return Verdict.BETTER if (outcome == Outcome.WIN) == higher_is_better else Verdict.WORSE


def choices(study: Study, criterion: str) -> dict[int, dict]:
    """Per size: the path to use for one criterion and the decisions behind it. A path is chosen over
    the baseline only where it is decided better and that survives the summary's correction; otherwise
    the baseline stays (with the others' verdicts)."""
    _, metric, higher = CRITERIA[criterion]
    fam = study.family(FAMILY)
    verdicts: dict[int, dict] = {}
    for impl in sorted(set(native(set(study.rows["impl"]))) - {BASE}):
        for size, d in study.compare(impl, BASE, metric)["by_size"].items():
            verdicts.setdefault(size, {})[impl] = {"decision": d, "verdict": verdict(d.decision, higher),
                                                   "stands": fam.stands(d), "p_holm": fam.p_holm(d)}
    out = {}
    for size, found in sorted(verdicts.items()):
        better = [i for i, v in found.items() if v["verdict"] == Verdict.BETTER and v["stands"]]
        pick = (max if higher else min)(better, key=lambda i: found[i]["decision"].ratio) if better else BASE
        out[size] = {"choice": pick, "others": found}
    return out


def cell(entry: dict) -> str:
    """The table's cell: the path to use, then each other path's verdict with its ratio to the baseline
    and interval: 'A2 · A2 better 1.12 (1.03–1.22) · A3 equivalent 0.98 (0.93–1.04)'; a dagger marks
    a claim Holm's correction over the summary leaves short of standing."""
    said = [f"{name(i)} {v['verdict']}{_fallen(v)} {_short(v['decision'])}" for i, v in sorted(entry["others"].items())]
    return " · ".join([name(entry["choice"])] + said)


def _fallen(v: dict) -> str:
    return "†" if v["verdict"] != Verdict.UNDECIDED and not v["stands"] else ""


def _short(d) -> str:
    """'1.12 (1.03–1.22)': decision_cell's ratio and interval."""
    return decision_cell(d).split(" ", 1)[1]


def answer(study: Study) -> dict:
    """answers.json's summary: per criterion and size the path to use, its decision and interval."""
    fam = study.family(FAMILY)
    out = {}
    for criterion in CRITERIA:
        found = choices(study, criterion)
        out[criterion] = {str(size): {"choice": e["choice"],
                                      "decisions": {i: {"verdict": str(v["verdict"]), **v["decision"].to_dict(),
                                                        "p_holm": fam.p_holm(v["decision"]), "stands": v["stands"]}
                                                    for i, v in e["others"].items()}}
                          for size, e in found.items()}
    return out


def table(study: Study) -> pd.DataFrame:
    """Rows: message sizes; a column per criterion: the path to use and why."""
    found = {c: choices(study, c) for c in CRITERIA}
    sizes = sorted({s for f in found.values() for s in f})
    out = {"message size": [fmt_size(s) for s in sizes]}
    for criterion, words in WORDS.items():
        if found[criterion]:
            out[words] = [cell(found[criterion][s]) if s in found[criterion] else "not measured" for s in sizes]
    return pd.DataFrame(out)


def _faster_by_means(entry: dict, higher: bool) -> list[str]:
    """The undecided paths better than the baseline by their ratio (of the pass-adjusted means)."""
    return [name(i) for i, v in sorted(entry["others"].items())
            if v["verdict"] == Verdict.UNDECIDED and v["decision"].ratio != 1 and (v["decision"].ratio > 1) == higher]


def advice(entry: dict, higher: bool = True) -> str:
    """What to use at one size: the path decided better, or the baseline with what is known of the others
    (a verdict the correction does not leave standing is said as such, not as a verdict)."""
    pick, others = entry["choice"], entry["others"]
    if pick != BASE:
        return name(pick)
    listed = sorted(others.items())
    equivalent = [name(i) for i, v in listed if v["verdict"] == Verdict.EQUIVALENT and v["stands"]]
    undecided = [name(i) for i, v in listed if v["verdict"] == Verdict.UNDECIDED]
    fallen = {verdict: [name(i) for i, v in listed if v["verdict"] == verdict and not v["stands"]]
              for verdict in (Verdict.BETTER, Verdict.EQUIVALENT, Verdict.WORSE)}
    text = f"{name(BASE)}, or equally {and_list(equivalent)}" if equivalent else name(BASE)
    faster = _faster_by_means(entry, higher)  # each undecided: the reason the baseline stays is the footnote's
    by_means = ("" if not faster else f", better by means{FASTER_MARK}" if faster == undecided
                else f" ({and_list(faster)} better by means{FASTER_MARK})")
    notes = ([f"{and_list(undecided)} undecided against it{by_means}"] if undecided else []) + [
        f"{and_list(names)} {verdict} only before the correction" for verdict, names in fallen.items() if names]
    if notes:
        text += f" ({'; '.join(notes)})"
    elif not equivalent and others:
        text += " (every other path decided worse)"
    return text


def ranges_text(study: Study, criterion: str) -> str:
    """'A1 at 64 B–1 KiB; A2 at 4 KiB–64 KiB (1.12×, 95% interval 1.03–1.22, A1 at 64 KiB)'."""
    found, higher = choices(study, criterion), CRITERIA[criterion][2]
    if not found:
        return "not measured"
    groups: list[list[int]] = []
    for size in sorted(found):
        if groups and advice(found[groups[-1][-1]], higher) == advice(found[size], higher):
            groups[-1].append(size)
        else:
            groups.append([size])
    parts = []
    for g in groups:
        entry = found[g[-1]]
        span = fmt_size(g[0]) if len(g) == 1 else f"{fmt_size(g[0])}–{fmt_size(g[-1])}"
        text = f"at {span}: {advice(entry, higher)}"
        if entry["choice"] != BASE:
            d = entry["others"][entry["choice"]]["decision"]
            text += f" ({fmt_num(d.ratio)}× {name(BASE)}'s at {fmt_size(g[-1])}, 95% interval {interval(d)})"
        parts.append(text)
    return "; ".join(parts)


def nic_text(study: Study) -> str:
    """What changes between two hosts with a real NIC, from this run's own zero-copy accounting."""
    df = study.rows
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


# a path better than the baseline by its means but undecided: why the baseline stays named, said once under the
# bullets (review-fresh5 N8: the sentence was printed in full at each such size, five times)
FASTER_MARK = "‡"


def faster_note() -> str:
    return (f"{FASTER_MARK} Better than {name(BASE)} by the ratio of the means but not decided better, so {name(BASE)} "
            "stays named.")


def markdown(study: Study) -> str:
    lines = [f"- **{words[0].upper() + words[1:]}:** {ranges_text(study, c)}." for c, words in WORDS.items()]
    if any(FASTER_MARK in line for line in lines):
        lines.append("\n" + faster_note())
    fam = study.family(FAMILY)
    return ("Which send path to use on this host, by message size: a path other than the two-copy baseline "
            f"({name(BASE)}) is named only where it is decided better than {name(BASE)} pooled over the thread counts (not at each one) "
            f"(95% interval of the ratio, equivalence margin ±{fmt_num(100 * study.margin)}%) and that claim "
            f"survives Holm's correction over the {fam.size} comparisons of this summary (see \"How the decisions "
            f"are made\"). The table gives each path's verdict with its ratio to {name(BASE)} and interval; † marks "
            "a verdict that does not survive the correction.\n\n" + "\n".join(lines))
