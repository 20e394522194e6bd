"""Explanations chosen by rules from the run's own evidence.

An explanation is a sentence the report states about *why* (which side bounds a point, what A3
pays for, why small messages cost what they cost). Each rule here looks at the measured evidence
(CPU busy and steal shares, counters the programs and perf took, profile shares with their spread),
chooses the verdict the evidence supports, and writes a sentence that names the numbers it rests
on. Where the evidence does not discriminate between explanations, the verdict is a hypothesis:
the text says so and names the measurement that would decide it. Nothing here is a fixed story:
synthetic results whose evidence points the other way change the sentence (tests/test_explain.py).

This module holds the Explanation itself and the rules about CPUs and wake-ups; explain_copies.py
the rules about the copies (what A2 removes, what A3 pays, where its deferred copy runs).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import pandas as pd

from ..fmt import fmt_num, fmt_size, plural
from .patterns import per_byte_change
from .profiles import SIDES, cpu_seconds
from .roles import BASE as BASE_IMPL, name, native

NEAR_FULL = 0.95      # a CPU busy at least this share of the window is saturated
CLEAR_GAP = 0.10      # ... and bounds the throughput when the other side is this much less busy
STEAL_NOTABLE = 0.02  # steal worth naming
WAKEUP_PACED = 0.5    # context switches per message from which wake-ups set the pace
WAKEUP_RARE = 0.1     # below this, wake-ups are not what a message costs
# a context switch's cost, generously (direct cost plus refilling the caches; lmbench's lat_ctx gives
# 1-5 µs on current x86 hosts): switching is said to carry a loss only if it does at this cost
SWITCH_COST_US = 5.0


@dataclass
class Explanation:
    """A rule's verdict, its sentence, and the numbers it rests on (answers.json keeps all three)."""

    rule: str
    verdict: str
    text: str
    evidence: dict = field(default_factory=dict)
    hypothesis: bool = False
    decide_by: str = ""
    # the same facts without the glosses the first of a run of like sentences says (Q1's sizes after the first);
    # not in answers.json, where text is whole
    brief: str = ""

    def public(self) -> dict:
        out = asdict(self)
        out.pop("brief")
        return out


HYPOTHESIS_HEAD = "Hypothesis (this run's data do not decide it):"


# a decision's outcome in words with its standing after Holm's correction over its family (study.Family): the
# text layer (text/words.py) and the explanations word a decided cost the same way
COST_DECIDED = {"win": "higher", "loss": "lower", "equivalent": "equivalent within the margin"}
# what a cost decided before the correction only does not establish
NOT_ESTABLISHED = {"win": "no extra cost", "loss": "no saving", "equivalent": "no equal cost"}


def before_correction(fam, d) -> str:
    """'before the correction only (†, adjusted p 0.148)': a decision Holm's correction over fam (the Study's
    Family) does not leave standing, said so wherever its outcome is worded."""
    return f"before the correction only (†, adjusted p {fmt_num(fam.p_holm(d))})"


def standing_cost_words(fam, d) -> str:
    """A cost decision's outcome in words, with its standing in fam: 'decided lower', 'equivalent within the
    margin, the same cost', 'lower before the correction only (†, adjusted p 0.148), so on its own it
    establishes no saving', 'undecided, so neither a saving nor an extra cost is established'."""
    outcome = str(d.decision)
    if fam.fallen(d):
        return (f"{COST_DECIDED[outcome]} {before_correction(fam, d)}, so on its own it establishes "
                f"{NOT_ESTABLISHED[outcome]}")
    if outcome not in COST_DECIDED:
        return "undecided, so neither a saving nor an extra cost is established"
    if outcome == "equivalent":
        return "equivalent within the margin, the same cost"
    return f"decided {COST_DECIDED[outcome]}"


def hypothesis(rule: str, verdict: str, claim: str, decide_by: str, evidence: dict, facts: str = "") -> Explanation:
    """An explanation the evidence does not decide: the facts measured, then the claim said as a
    hypothesis with the measurement that would decide it (after HYPOTHESIS_HEAD: refer_to_hypothesis
    finds it there)."""
    text = f"{HYPOTHESIS_HEAD} {claim} What would decide it: {decide_by}."
    return Explanation(rule, verdict, f"{facts} {text}" if facts else text, evidence, hypothesis=True,
                       decide_by=decide_by)


def said_once(texts: list[tuple[str, str]]) -> list[str]:
    """[(who, an explanation's text)] with each hypothesis (HYPOTHESIS_HEAD to the end) said in full only the
    first time: a later text with the same one keeps its facts and refers back to whom it was said for."""
    first, out = {}, []
    for who, text in texts:
        facts, head, rest = text.partition(HYPOTHESIS_HEAD)
        if head and rest in first:
            out.append(f"{facts}Hypothesis: as for {first[rest]} above.")
            continue
        if head:
            first[rest] = who
        out.append(text)
    return out


def pct(x) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.0f}%"


def share_of(part: float, whole: float) -> str:
    """How much of a whole a part is, in words that follow from the numbers: 'most (61%)' only above
    half, else the percentage alone ('41%')."""
    if not (whole == whole and part == part) or whole <= 0:
        return "an unknown share"
    fraction = part / whole
    return f"most ({100 * fraction:.0f}%)" if fraction > 0.5 else f"{100 * fraction:.0f}%"


def flag(values: pd.Series) -> pd.Series:
    """A True/False column as read from CSV (bool, 'True', 'true' or empty) as booleans."""
    return values.astype("string").str.strip().str.lower().eq("true").fillna(False).astype(bool)


def mean_of(rows: pd.DataFrame, column: str) -> float:
    if column not in rows:
        return math.nan
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


def median_of(rows: pd.DataFrame, column: str) -> float:
    """The median of a column's values over rows (one pass cannot move it past a line, as it can a mean)."""
    if column not in rows:
        return math.nan
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return float(values.median()) if len(values) else math.nan


def busy_pct(x) -> str:
    """A busy share beside the NEAR_FULL line: one decimal within half a point of it, so '95%' never sits
    beside 'at least 95%' on the wrong side of it."""
    if not (x == x and abs(x - NEAR_FULL) < 0.005):
        return pct(x)
    one = f"{100 * x:.1f}"
    return f"{100 * x:.2f}%" if float(one) == round(100 * NEAR_FULL, 1) and x != NEAR_FULL else f"{one}%"


# ------------------------------------------------------------------------------------------------
# which side bounds a point


def bound_side(rows: pd.DataFrame, what: str = "") -> Explanation:
    """Which side's CPU bounds the throughput of the measured runs of one point (rows), from the
    pinned CPUs' busy shares, the medians of the passes (review-fresh6 M1: passes 87/96/100/97% gave a mean
    of 94.95%, under the line, and one pass decided "neither"): a side near 100% bounds it only when the
    other is clearly less busy."""
    srv, cli = (round(median_of(rows, c), 4) for c in ("srv_cpu_busy", "cli_cpu_busy"))
    steal = max(mean_of(rows, "srv_cpu_steal"), mean_of(rows, "cli_cpu_steal"), key=lambda v: -1 if v != v else v)
    evidence = {"sender_busy": srv, "receiver_busy": cli, "steal": steal, "runs": int(len(rows))}
    what = f"{what}: " if what else ""
    if srv != srv or cli != cli:
        return hypothesis("bound_side", "unknown", f"{what}which side bounds the throughput cannot be told here.",
                          "the pinned CPUs' busy shares (pin sender and receiver to CPUs of their own: "
                          "grid keys pin_server and pin_client)", evidence)
    busy = (f"sender CPU busy {busy_pct(srv)}, receiver CPU busy {busy_pct(cli)} of the window"
            + (" (medians of the passes)" if len(rows) > 2 else ""))
    steal_txt = (f"; the hypervisor took {pct(steal)} of the CPUs' time (steal)"
                 if steal == steal and steal >= STEAL_NOTABLE else "")
    for side, mine, other in (("sender", srv, cli), ("receiver", cli, srv)):
        if mine >= NEAR_FULL and mine - other >= CLEAR_GAP:
            return Explanation("bound_side", side, f"{what}the {side} bounds the throughput ({busy}{steal_txt}): "
                               f"the {'receiver' if side == 'sender' else 'sender'} waits for it.", evidence)
    if srv >= NEAR_FULL or cli >= NEAR_FULL:
        return hypothesis("bound_side", "both", f"{what}both CPUs are at or near saturation ({busy}{steal_txt}), so "
                          "either side may bound the throughput.", "the same point with one side given more CPU "
                          "time (a second CPU in its pin list, or a host with more cores)", evidence)
    return hypothesis("bound_side", "neither", f"{what}neither CPU is saturated ({busy}{steal_txt}): something "
                      "other than CPU time sets the pace, most likely waiting (wake-ups, TCP's send window).",
                      "the wake-up latency (perf sched latency) and the socket's window (ss -ti) during the "
                      "measured window", evidence)


def bound_sentences(rows_by_impl: dict[str, pd.DataFrame], where: str) -> list[str]:
    """bound_side for several paths at one point, said once per verdict: the paths one side bounds in one
    sentence with each one's busy shares; hypotheses each on their own, or one when none can be told."""
    found = {impl: bound_side(rows, f"{name(impl)} {where}") for impl, rows in rows_by_impl.items()}
    if found and all(e.verdict == "unknown" for e in found.values()):
        return [bound_side(pd.DataFrame(), f"For {and_list([name(i) for i in found])} {where}").text]
    out = []
    for side in ("sender", "receiver"):
        mine = {i: e.evidence for i, e in found.items() if e.verdict == side}
        if mine:
            numbers = and_list([f"{name(i)} (sender CPU busy {pct(e['sender_busy'])}, receiver {pct(e['receiver_busy'])})"
                            for i, e in mine.items()])
            out.append(f"{where[0].upper() + where[1:]}, the {side} bounds the throughput of {numbers}: the "
                       f"{'receiver' if side == 'sender' else 'sender'} waits for it.")
    return out + [e.text for e in found.values() if e.verdict not in ("sender", "receiver")]


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------------------------------------
# small messages: wake-ups or per-call work


PER_CALL_CLAIM = ": wake-ups are not what a message costs here; each message's system call and TCP work on its own are."


def per_call_together(found: list[Explanation]) -> str:
    """Several points of the per-call regime in one sentence, the claim said once after their numbers."""
    facts = [e.text.removesuffix(PER_CALL_CLAIM) for e in found]
    if len(facts) == 1:
        return found[0].text
    return "; ".join(facts) + ": in each, " + PER_CALL_CLAIM.removeprefix(": ")


def wakeup_regime(row: pd.Series, who: str | None = None) -> Explanation:
    """From one point's context switches per message (small_message_evidence's row): whether the
    data path runs at the pace of wake-ups, or each message's per-call work is the cost."""
    # copylab's receiver reads as told (its receive strategy); a reference program reads its own way
    reads = f", {row['receive']} reads" if isinstance(row.get("receive"), str) and row["impl"] in native([row["impl"]]) else ""
    who = who or f"{name(row['impl'])} at {fmt_size(row['msg_size'])}, {plural(int(row['threads']), 'thread')}{reads}"
    srv, cli = float(row.get("srv_cs_per_message", math.nan)), float(row.get("cli_cs_per_message", math.nan))
    evidence = {"impl": row["impl"], "msg_size": int(row["msg_size"]), "sender_cs_per_message": srv,
                "receiver_cs_per_message": cli, "recv_calls_per_message": float(row.get("recv_calls_per_message", math.nan))}
    if srv != srv or cli != cli:
        return hypothesis("wakeup_regime", "unknown", f"{who}: whether wake-ups set the pace cannot be told.",
                          "per-side context switches (perf stat on both programs)", evidence)
    counts = f"{fmt_num(srv)} sender and {fmt_num(cli)} receiver context switches per message"
    top = max(srv, cli)
    if top >= WAKEUP_PACED:
        side = ("both sides sleep and are" if min(srv, cli) >= 0.8 * top else
                "the receiver sleeps and is" if cli >= srv else "the sender sleeps and is")
        return Explanation("wakeup_regime", "wakeup_paced", f"{who}: {counts}: {side} woken once every "
                           f"{fmt_num(1 / top, 2)} messages or more often, so the data path runs at the pace of "
                           "those wake-ups.", evidence)
    if top < WAKEUP_RARE:
        every = f"one per {fmt_num(1 / top, 2)} messages" if top > 0 else "none"
        return Explanation("wakeup_regime", "per_call", f"{who}: {counts} ({every} at most){PER_CALL_CLAIM}",
                           evidence)
    return hypothesis("wakeup_regime", "mixed", f"{who}: {counts}: wake-ups take part, but do not set the pace "
                      "of every message.", "the time the woken side waits to run (perf sched latency) against the "
                      "time per message", evidence)


# ------------------------------------------------------------------------------------------------
# threads: why more connections move more (or less) data


def thread_effect(lo_rows: pd.DataFrame, hi_rows: pd.DataFrame, who: str, outcome: str, lo: int, hi: int,
                  llc: tuple[str, int] | None = None, standing: bool = True,
                  states: tuple[Explanation, str] | None = None) -> Explanation:
    """Why a decided thread effect (outcome win or loss, hi threads against lo) happened, from the pinned
    CPUs' busy shares and the context switches per MB at both thread counts: where no CPU was saturated at
    lo (the bounding side had room), a side that waited at lo and is busy at hi was filled by the extra
    connections; a side already saturated at lo cannot give more time, so a win is what each byte costs it
    less (_saturated_win) and a loss what each byte costs it more (_saturated_loss says whether switching
    carries that). Anything else is a hypothesis with the numbers. llc: (name, bytes) of the host's
    last-level cache. standing False: the decision does not survive Holm's correction, so the effect is
    worded as a difference (a rise, a fall), never as a decided win or loss. states: the explanation of the
    cell's runs moving work between the sides (the Study's states_...) and where it is said in full."""
    busy = {(side, n): mean_of(rows, f"{side}_cpu_busy") for side in ("srv", "cli")
            for n, rows in ((lo, lo_rows), (hi, hi_rows))}
    cs = {n: mean_of(rows, "context_switches_per_mb") for n, rows in ((lo, lo_rows), (hi, hi_rows))}
    evidence = {"outcome": outcome, "busy": {f"{s}_{n}": v for (s, n), v in busy.items()}, "cs_per_mb": cs}
    if any(v != v for v in busy.values()):
        return hypothesis("thread_effect", "unknown", f"{who}: why cannot be told without the CPUs' busy shares.",
                          "the pinned CPUs' busy shares (grid keys pin_server and pin_client)", evidence)
    facts = (f"{who}: the sender's CPU was busy {pct(busy[('srv', lo)])} of the window with {lo} and "
             f"{pct(busy[('srv', hi)])} with {hi}, the receiver's {pct(busy[('cli', lo)])} and {pct(busy[('cli', hi)])}"
             + (f"; context switches per MB {fmt_num(cs[lo])} and {fmt_num(cs[hi])}" if cs[lo] == cs[lo] and cs[hi] == cs[hi]
                else "") + ".")
    saturated = max(busy[("srv", lo)], busy[("cli", lo)]) >= NEAR_FULL
    for side, words in (("srv", "sender"), ("cli", "receiver")):
        rise = busy[(side, hi)] - busy[(side, lo)]
        if outcome == "win" and not saturated and rise >= CLEAR_GAP:
            return _filled(lo_rows, hi_rows, side, words, (lo, hi), busy, evidence,
                           f"{facts} More connections fill the time the {words} spent waiting at {lo}: its CPU had "
                           "room, and the extra connections use it")
    if outcome == "win" and saturated:
        return _saturated_win(lo_rows, hi_rows, lo, hi, busy, evidence, facts, states)
    if outcome == "loss" and saturated:
        return _saturated_loss(lo_rows, hi_rows, lo, hi, busy, cs, evidence, facts, llc,
                               "loss" if standing else "fall")
    return hypothesis("thread_effect", "mixed", "the busy shares do not show where the change comes from.",
                      "the wake-up latency (perf sched latency) at both thread counts", evidence, facts=facts)


def _filled(lo_rows: pd.DataFrame, hi_rows: pd.DataFrame, side: str, words: str, counts: tuple[int, int], busy: dict,
            evidence: dict, facts: str) -> Explanation:
    """A win where the side that waited at lo is busy at hi: the throughput's rise is that side's busy share's
    rise times its CPU per byte's fall (BUSY_BASIS, the runs' CPU time over their bytes, so the two multiply to
    the means' ratio). The fall is named too when beyond CLEAR_GAP, with its interval (per_byte_interval), and
    what it is as a hypothesis: CPU time task-clock does not charge (softirq work, wake-ups) that a CPU which
    no longer idles is spared, where busy basis over task-clock falls beyond CLEAR_GAP; else undecided."""
    lo, hi = counts
    rows = {n: r.assign(busy_ns_per_byte=cpu_seconds(r, side, "per_cpu") * 1e9 / r["bytes"].where(r["bytes"] > 0))
            for n, r in ((lo, lo_rows), (hi, hi_rows))}
    per_byte = {n: _over_bytes(r, cpu_seconds(r, side, "per_cpu")) for n, r in rows.items()}
    task = {n: _over_bytes(r, pd.to_numeric(r[f"{side}_task_clock_ms"], errors="coerce") / 1e3)
            if f"{side}_task_clock_ms" in r else math.nan for n, r in rows.items()}
    rise, fall = busy[(side, hi)] / busy[(side, lo)], per_byte[lo] / per_byte[hi]
    evidence.update(busy_factor=rise, cpu_per_byte_factor=fall, busy_ns_per_byte=per_byte, task_ns_per_byte=task)
    if not (fall == fall and abs(fall - 1) > CLEAR_GAP):
        return Explanation("thread_effect", f"filled_{words}", f"{facts}.", evidence)
    interval = per_byte_interval(rows[lo], rows[hi], "busy_ns_per_byte", lo, hi, evidence)
    facts += (f"; and its CPU per byte {'falls' if fall > 1 else 'rises'} {fmt_num(per_byte[lo] * 1e9)} → "
              f"{fmt_num(per_byte[hi] * 1e9)} ns/B ({BUSY_BASIS.replace('round trips', 'bytes')}, the runs together"
              f"{interval}): the {words}'s busy share ×{fmt_num(rise)} × its CPU per byte ×{fmt_num(fall)} = "
              f"×{fmt_num(rise * fall)}, the throughput's ratio of the means.")
    not_charged = {n: per_byte[n] / task[n] for n in (lo, hi)}  # busy basis over task-clock: what task-clock leaves out
    evidence["not_charged_factor"] = not_charged
    decide_by = (f"a profile at {hi} threads beside the one at {lo}: the idle, scheduling and softirq shares of the "
                 f"{words}'s CPU at both")
    if not (fall > 1 and not_charged[lo] == not_charged[lo] and not_charged[lo] / not_charged[hi] - 1 > CLEAR_GAP):
        return hypothesis("thread_effect", f"filled_{words}_per_byte", f"what changes the {words}'s CPU per byte with "
                          "more connections cannot be told from the counters.", decide_by, evidence, facts=facts)
    return hypothesis("thread_effect", f"filled_{words}_per_byte", f"with {hi} connections the {words}'s CPU never "
                      f"idles, so the CPU time its task-clock does not charge (softirq work and wake-ups: the busy basis is "
                      f"×{fmt_num(not_charged[lo])} its task-clock with {lo}, ×{fmt_num(not_charged[hi])} with {hi}) "
                      f"falls away: ×{fmt_num(not_charged[lo] / not_charged[hi])} of the ×{fmt_num(fall)}, the rest "
                      f"its task-clock per byte falling ({fmt_num(task[lo] * 1e9)} → {fmt_num(task[hi] * 1e9)} ns/B, "
                      f"×{fmt_num(task[lo] / task[hi])}).", decide_by, evidence, facts=facts)


def _over_bytes(rows: pd.DataFrame, seconds: pd.Series) -> float:
    """The runs' CPU seconds over their bytes together (s/B), nan without both."""
    both = pd.DataFrame({"s": seconds, "b": pd.to_numeric(rows["bytes"], errors="coerce")}).dropna()
    return float(both["s"].sum() / both["b"].sum()) if len(both) and both["b"].sum() > 0 else math.nan


def _saturated_win(lo_rows: pd.DataFrame, hi_rows: pd.DataFrame, lo: int, hi: int, busy: dict, evidence: dict,
                   facts: str, states: tuple[Explanation, str] | None) -> Explanation:
    """A win with a CPU saturated at lo: room on the other side cannot move more by itself, so the saturated
    side's CPU per byte must have fallen. Where the other side's rose by about as much (changes_sides), the
    same work changed sides: said with both sides' numbers, and as the hypothesis the cell's states
    explanation (states: it, and where it is said in full) refers to, not repeated; else the fall on its own."""
    side, words = max((("srv", "sender"), ("cli", "receiver")), key=lambda s: busy[(s[0], lo)])
    other, other_words = ("cli", "receiver") if side == "srv" else ("srv", "sender")
    cpu = {s: {n: mean_of(rows, f"{s}_cpu_ns_per_byte") for n, rows in ((lo, lo_rows), (hi, hi_rows))}
           for s in (side, other)}
    evidence.update(saturated=words, cpu_ns_per_byte={SIDES[s]: v for s, v in cpu.items()})
    saved, shifted = cpu[side][lo] - cpu[side][hi], cpu[other][hi] - cpu[other][lo]
    if not saved > 0:
        return hypothesis("thread_effect", "saturated", f"a CPU was already saturated with {lo}, yet the {words}'s CPU "
                          "per byte does not show the rise" + (f" ({fmt_num(cpu[side][lo])} and {fmt_num(cpu[side][hi])} "
                                                               "ns)" if cpu[side][lo] == cpu[side][lo] else "") + ".",
                          "the per-side task-clock at both thread counts", evidence, facts=facts)
    said = {s: f"{fmt_num(cpu[s][lo])} → {fmt_num(cpu[s][hi])} ns/B" + (", means of the runs" if s == side else "")
            + per_byte_interval(lo_rows, hi_rows, f"{s}_cpu_ns_per_byte", lo, hi, evidence,
                                key=f"{SIDES[s]}_cpu_per_byte_ratio") for s in (side, other)}
    fall = (f"{facts} The {words}'s CPU was saturated with {lo}, so room on the {other_words}'s CPU could not by "
            f"itself move more: the {words} spends less per byte with {hi} ({said[side]})")
    totals = (cpu[side][lo] + cpu[other][lo], cpu[side][hi] + cpu[other][hi])
    if not changes_sides(saved, shifted, totals):
        return hypothesis("thread_effect", "cheaper_per_byte", f"what the {words} is spared per byte with more "
                          "connections cannot be told from the counters.", f"profiles at {lo} and {hi} threads: their "
                          f"folded stacks say where the {words}'s time per byte goes", evidence, facts=f"{fall}.")
    facts = (f"{fall}, while the {other_words} spends more ({said[other]}); together {fmt_num(totals[0])} and "
             f"{fmt_num(totals[1])} ns/B.")
    if states is not None:
        found, where = states
        return hypothesis("thread_effect", "work_changes_sides", f"the same work changes sides with more connections, "
                          f"from the {words}'s CPU to the {other_words}'s, as said in full for this cell's runs in "
                          f"{where}.", found.decide_by, evidence, facts=facts)
    return hypothesis("thread_effect", "work_changes_sides", f"the same work changes sides with more connections, from "
                      f"the {words}'s CPU to the {other_words}'s.", f"profiles at {lo} and {hi} threads: their folded "
                      "stacks say on which side the work runs", evidence, facts=facts)


def changes_sides(saved: float, shifted: float, totals: tuple[float, float]) -> bool:
    """One side's CPU per byte falls by saved where the other's rises by shifted, the two within CLEAR_GAP of the
    larger total of both sides: the same work, done on the other side."""
    return saved > 0 and shifted > 0 and abs(shifted - saved) <= CLEAR_GAP * max(totals)


def _saturated_loss(lo_rows: pd.DataFrame, hi_rows: pd.DataFrame, lo: int, hi: int, busy: dict, cs: dict,
                    evidence: dict, facts: str, llc: tuple[str, int] | None, effect: str = "loss") -> Explanation:
    """A loss with a CPU saturated at lo: that side's CPU per byte must have risen. Switching between the
    connections is said as the cause only when the switches added per MB, at SWITCH_COST_US each, carry
    the added CPU per MB; otherwise the rise is said as such, with what could cost more per byte as a
    hypothesis (the connections' working sets sharing the LLC, or per-connection TCP work). effect: what
    the text calls the change ('loss' when decided, 'fall' when it does not stand after correction)."""
    side, words = max((("srv", "sender"), ("cli", "receiver")), key=lambda s: busy[(s[0], lo)])
    cpu = {n: mean_of(rows, f"{side}_cpu_ns_per_byte") for n, rows in ((lo, lo_rows), (hi, hi_rows))}
    more_cpu_us = (cpu[hi] - cpu[lo]) * 1e3  # ns per byte -> µs per MB
    more_cs = cs[hi] - cs[lo]
    evidence.update(saturated=words, cpu_ns_per_byte=cpu, switch_cost_us=SWITCH_COST_US)
    if not (more_cpu_us == more_cpu_us and more_cpu_us > 0):
        return hypothesis("thread_effect", "saturated", f"a CPU was already saturated with {lo}, yet the {words}'s "
                          "CPU per byte does not show the loss" + (f" ({fmt_num(cpu[lo])} and {fmt_num(cpu[hi])} ns)"
                                                                     if cpu[lo] == cpu[lo] else "") + ".",
                          "the per-side task-clock at both thread counts", evidence, facts=facts)
    interval = per_byte_interval(lo_rows, hi_rows, f"{side}_cpu_ns_per_byte", lo, hi, evidence)
    rise = (f"The {words}'s CPU, saturated with {lo}, spends {fmt_num(100 * (cpu[hi] / cpu[lo] - 1), 2)}% more per "
            f"byte with {hi} ({fmt_num(cpu[lo])} → {fmt_num(cpu[hi])} ns/B, means of the runs{interval}), "
            f"{fmt_num(more_cpu_us)} µs per MB")
    if more_cs == more_cs and more_cs * SWITCH_COST_US >= more_cpu_us:
        return Explanation("thread_effect", "switching", f"{facts} {rise}; the {fmt_num(more_cs)} context switches per "
                           f"MB added, at up to {SWITCH_COST_US:g} µs each (an assumed, generous cost, not measured "
                           "here), are enough to carry it: the extra "
                           "connections add switching between them, not CPU time.", evidence)
    switches = ("switches per MB do not rise" if not more_cs == more_cs or more_cs <= 0 else
                f"the {fmt_num(more_cs)} switches per MB added cost at most {fmt_num(more_cs * SWITCH_COST_US)} µs at "
                f"{SWITCH_COST_US:g} µs each (an assumed, generous cost of a switch with its cache refill; "
                "lmbench's lat_ctx gives 1-5 µs on current x86; not measured here)")
    ws = mean_of(hi_rows, "working_set_bytes")
    together = (f" ({hi} × {fmt_size(ws)} = {fmt_size(hi * ws)}"
                + (f" against the {fmt_size(llc[1])} {llc[0]})" if llc else ")") if ws == ws and ws > 0 else "")
    evidence["working_sets_bytes"] = hi * ws if ws == ws else None
    # the same claim whatever the interval (said_once refers a second path back to it); each path's own
    # decision of its rise is in its facts: the cause is never said as fact on a comparison of no family
    return hypothesis("thread_effect", "per_byte_cost", f"the means point to a higher cost per byte rather than "
                      f"switching behind the {effect}, the extra cost per byte from the {hi} connections' working "
                      f"sets{together} sharing the last-level cache, or from per-connection TCP work (more sockets' "
                      "ACKs, timers and buffers).",
                      "L1 and LLC misses per byte at both thread counts (a host with a PMU), or the cache-level grid "
                      "(params/cache.yaml), which keeps the aggregate working set inside the LLC at some sizes",
                      evidence, facts=f"{facts} {rise}, while {switches}.")


def per_byte_interval(lo_rows: pd.DataFrame, hi_rows: pd.DataFrame, column: str, lo: int, hi: int,
                      evidence: dict, key: str = "cpu_per_byte_ratio") -> str:
    """'; 1.18×, 95% interval 1.02–1.37, higher before any correction' (or ': undecided'): hi's CPU per byte
    against lo's (patterns.per_byte_change); a comparison in none of the report's corrected families, so said
    with its interval and never more. '' with fewer than two runs on a side."""
    d = per_byte_change(lo_rows, hi_rows, column, lo, hi)
    if d is None:
        return ""
    evidence[key] = [d.ratio, d.low, d.high]
    reading = ("higher before any correction" if d.low > 1 else "lower before any correction" if d.high < 1
               else "undecided")
    return f"; {fmt_num(d.ratio)}×, 95% interval {fmt_num(d.low)}–{fmt_num(d.high)}, {reading}"


# ------------------------------------------------------------------------------------------------
# two states in one cell's runs (states.py finds them; the Study keeps them)


def _threads(threads) -> str:
    """'2, 4 and 8 threads', '1 thread'."""
    return f"{and_list([str(t) for t in threads])} thread{'s' if list(threads) != [1] else ''}"


def two_states(t, zero_copy: bool = False) -> Explanation:
    """What a cell whose runs fall into two states (states.TwoStates) is in each state: busy shares,
    throughput and each side's CPU per byte, the throughput of one state against the other as its
    interval decides it, and, as a hypothesis, what moves between the sides (zero_copy: the deferred
    copy). Said only for a split the Study found (the test and its correction are states.py's)."""
    hi, lo = t.receiver_busier, t.sender_busier
    who = f"{name(t.impl)} at {fmt_size(t.size)}"
    evidence = t.to_dict()

    def state(s, lead: str) -> str:
        return (f"{lead} {s.runs} runs ({_threads(s.threads)}) the receiver's CPU is {pct(s.receiver_busy)} busy and "
                f"the sender's {pct(s.sender_busy)}, at {fmt_num(s.gbps)} Gbit/s, the receiver spending "
                f"{fmt_num(s.receiver_ns_per_byte)} ns of CPU per byte and the sender {fmt_num(s.sender_ns_per_byte)}")

    ratio, low, high = t.gbps_ratio
    moves = f"The receiver-busy state moves {fmt_num(ratio)}× the other's throughput"
    if low == low and high == high:
        verdict = "decided more" if low > 1 else "decided less" if high < 1 else "undecided"
        moves += f" (95% interval {fmt_num(low)}–{fmt_num(high)}): {verdict}."
    else:
        moves += "."
    totals = (lo.sender_ns_per_byte + lo.receiver_ns_per_byte, hi.sender_ns_per_byte + hi.receiver_ns_per_byte)
    facts = (f"{who}, its {t.runs} throughput runs fall into two states at the same settings (runs of both at "
             f"{_threads(t.both_at)}): the receiver's busy share minus the sender's splits them (Engelman and "
             f"Hartigan's test, p = {fmt_num(t.p_holm)} after Holm's correction over the cells tested). "
             f"{state(hi, 'In')}; {state(lo, 'in the other')}. {moves} Together the two sides spend "
             f"{fmt_num(totals[1])} and {fmt_num(totals[0])} ns of CPU per byte.")
    shifted = hi.receiver_ns_per_byte - lo.receiver_ns_per_byte
    saved = lo.sender_ns_per_byte - hi.sender_ns_per_byte
    where = (f"profiles of {name(t.impl)} at {fmt_size(t.size)} at {_threads(t.both_at)} (one per state): their "
             "folded stacks say on which side " + ("the deferred copy (skb_copy_ubufs)" if zero_copy else
                                                   "the receive processing (softirq)") + " runs")
    if changes_sides(saved, shifted, totals):
        work = ("the deferred copy runs in the receiver's context (the socket's backlog, processed in its recv) "
                "instead of the sender's sendmsg" if zero_copy else
                "the receive processing runs on the receiver's CPU instead of the sender's")
        claim = (f"the same work changes sides: the receiver's CPU per byte rises by {fmt_num(shifted)} ns where the "
                 f"sender's falls by {fmt_num(saved)}; in the receiver-busy state {work}.")
        return hypothesis("two_states", "work_moves", claim, where, evidence, facts=facts)
    return hypothesis("two_states", "unexplained", "what the receiver does more of in its busy state cannot be told "
                      "from the counters.", where, evidence, facts=facts)


def side_trade(t, zero_copy: bool = False) -> Explanation:
    """What a cell whose runs move CPU per byte between the sides (states.SideTrade) shows: each side's
    and their sum's CPU per byte per thread count, and as a hypothesis what moves (zero_copy: the
    deferred copy) with the profile that would decide it (at a thread count where the receiver pays
    most). Said only for a trade the Study found (the test and its correction are states.py's)."""
    who = f"{name(t.impl)} at {fmt_size(t.size)}"
    counts = sorted(t.by_threads)
    at = lambda key: ", ".join(fmt_num(t.by_threads[n][key]) for n in counts)
    sums = [t.by_threads[n]["sum"] for n in counts]
    facts = (f"{who}, its {t.runs} throughput runs trade CPU per byte between the sides: where the receiver "
             f"spends more per byte the sender spends less (Pearson's r {fmt_num(t.r)}, 95% interval "
             f"{fmt_num(t.r_interval[0])} to {fmt_num(t.r_interval[1])}, p = {fmt_num(t.p_holm)} after Holm's "
             f"correction over the cells tested), and their sum varies less than either side (standard deviation "
             f"{fmt_num(t.sd['sum'])} ns/B against {fmt_num(t.sd['sender'])} and {fmt_num(t.sd['receiver'])}). "
             f"Means at {_threads(counts)}: the receiver {at('receiver')} ns/B, the sender {at('sender')}, "
             f"together {at('sum')}.")
    most = max(counts, key=lambda n: t.by_threads[n]["receiver"])
    work = ("the deferred copy (skb_copy_ubufs) runs in the receiver's context (the socket's backlog, "
            "processed in its recv) instead of the sender's sendmsg" if zero_copy else
            "the receive processing (softirq) runs on the receiver's CPU instead of the sender's")
    claim = (f"the same work changes sides (the sum ranges only {fmt_num(min(sums))}–{fmt_num(max(sums))} ns/B): "
             f"in the runs where the receiver pays more, {work}. That is what raises the receiver's CPU per byte "
             "where the runs are pooled over the thread counts.")
    decide_by = (f"a profile of {who} at {plural(most, 'thread')}, where the receiver pays most: its folded stacks "
                 "say on which side " + ("skb_copy_ubufs" if zero_copy else "the softirq") + " runs")
    return hypothesis("side_trade", "work_moves", claim, decide_by, t.to_dict(), facts=facts)


# ------------------------------------------------------------------------------------------------
# latency: a second connection that shortens the round trip


def latency_threads(rows: pd.DataFrame) -> Explanation | None:
    """Why the mean round trip changes from the fewest to the next thread count (latency-mode rows): its
    ratio per path and size, in how many passes it fell, and both CPUs' busy shares at the two counts (the
    mean throughout: the CPU time per message set against it, and latency_queue's Little's law, hold for the
    mean, not the median). A round trip that shortens in every pass while CPUs that were mostly idle become
    busy is said with the idle-CPU wake-up as a hypothesis; None when there is no such pair of thread counts."""
    if rows.empty or "latency_us" not in rows:
        return None
    counts = sorted(int(t) for t in set(rows["threads"]))
    if len(counts) < 2:
        return None
    lo, hi = counts[:2]
    mean_rt = rows.groupby(["impl", "msg_size", "rep", "threads"])["latency_us"].mean().unstack("threads")
    if lo not in mean_rt or hi not in mean_rt:
        return None
    paired = mean_rt[[lo, hi]].dropna()
    if paired.empty:
        return None
    cells = paired.groupby(level=["impl", "msg_size"]).mean()
    ratios = cells[hi] / cells[lo]
    fell = int((paired[hi] < paired[lo]).sum())
    busy = {(side, n): mean_of(rows[rows["threads"] == n], f"{side}_cpu_busy") for side in ("srv", "cli") for n in (lo, hi)}
    evidence = {"threads": [lo, hi], "mean_ratio_range": [float(ratios.min()), float(ratios.max())],
                "passes_lower": fell, "passes": int(len(paired)), "busy": {f"{s}_{n}": v for (s, n), v in busy.items()}}
    facts = (f"From {lo} to {hi} threads the mean round trip (latency mode) changes by a factor of "
             f"{fmt_num(ratios.min())}–{fmt_num(ratios.max())} over the {len(cells)} paths and sizes (means of the "
             f"passes); it is shorter with {hi} in {fell} of the {len(paired)} passes. Both CPUs' busy shares: the "
             f"sender's {pct(busy[('srv', lo)])} with {lo} and {pct(busy[('srv', hi)])} with {hi}, the receiver's "
             f"{pct(busy[('cli', lo)])} and {pct(busy[('cli', hi)])}.")
    cpu, cpu_said = _cpu_per_message(rows, lo, hi)
    if cpu:
        evidence["cpu_us_per_message"] = cpu
    facts += cpu_said
    idle_then = all(busy[(s, lo)] == busy[(s, lo)] and busy[(s, lo)] < NEAR_FULL - CLEAR_GAP for s in ("srv", "cli"))
    busier = all(busy[(s, hi)] - busy[(s, lo)] >= CLEAR_GAP for s in ("srv", "cli") if busy[(s, hi)] == busy[(s, hi)])
    decide_by = ("the wake-up latency at both thread counts (perf sched latency on both CPUs) and the same sweep "
                 "with the hypervisor's halt polling changed (KVM's halt_poll_ns) or the guest kept from idling "
                 "(idle=poll)")
    if fell == len(paired) and ratios.max() < 1 and idle_then and busier:
        return hypothesis("latency_threads", "idle_wakeup", f"with {lo} connection{'s' if lo != 1 else ''} each "
                          "message finds the other side's vCPU idle, and a round trip is mostly the time to wake it "
                          f"(the host's scheduler and halt exit); with {hi} the extra connections keep both vCPUs "
                          "busier, so a message is more often picked up without that wake-up. The round trips of this "
                          "sweep, and any ratio against a reference program at one thread, then compare wake-up "
                          "latencies.",
                          decide_by, evidence, facts=facts)
    if cpu and cpu["share_of_drop"] >= 0.5:
        return hypothesis("latency_threads", "cpu_per_message", f"each message costs less CPU on both sides with {hi}, "
                          f"and that carries {share_of(cpu['fall_us'], cpu['drop_us'])} of the shorter round trip: with "
                          f"{lo} every message finds the other side's vCPU idle, and waking it from idle costs CPU "
                          f"(the scheduler's wake-up and the vCPU's halt exit) that a busier CPU with {hi} is spared; "
                          "the rest of the change is not accounted for by the CPU time.", decide_by, evidence, facts=facts)
    return hypothesis("latency_threads", "mixed", "the busy shares " + ("and the CPU time per message " if cpu else "")
                      + "do not show why the round trip changes.", decide_by, evidence, facts=facts)


def _cpu_per_message(rows: pd.DataFrame, lo: int, hi: int) -> tuple[dict, str]:
    """Each side's CPU time per message (_latency_cells' busy basis) at lo and hi threads, means over the
    paths and sizes measured at both, and how much of the mean round trip's fall from lo to hi the two sides'
    fall carries (a round trip waits for one message's CPU on each side): ({}, "") without the counters."""
    cells = _latency_cells(rows)
    if cells is None:
        return {}, ""
    by = cells.pivot_table(index=["impl", "msg_size"], columns="threads", values=["srv_us", "cli_us", "latency_us"])
    if any((col, n) not in by for col in ("srv_us", "cli_us", "latency_us") for n in (lo, hi)):
        return {}, ""
    both = by[[(c, n) for c in ("srv_us", "cli_us", "latency_us") for n in (lo, hi)]].dropna()
    if both.empty:
        return {}, ""
    m = {key: float(v) for key, v in both.mean().items()}
    fall = (m[("srv_us", lo)] - m[("srv_us", hi)]) + (m[("cli_us", lo)] - m[("cli_us", hi)])
    drop = m[("latency_us", lo)] - m[("latency_us", hi)]
    if not (drop == drop and drop > 0 and fall == fall):
        return {}, ""
    cpu = {"sender": [m[("srv_us", lo)], m[("srv_us", hi)]], "receiver": [m[("cli_us", lo)], m[("cli_us", hi)]],
           "round_trip_us": [m[("latency_us", lo)], m[("latency_us", hi)]], "fall_us": fall, "drop_us": drop,
           "share_of_drop": fall / drop}
    said = (f" CPU time per message ({BUSY_BASIS}, means over the {len(both)} paths and sizes): the "
            f"sender's {fmt_num(cpu['sender'][0])} → {fmt_num(cpu['sender'][1])} µs, the receiver's "
            f"{fmt_num(cpu['receiver'][0])} → {fmt_num(cpu['receiver'][1])} µs; together {fmt_num(fall)} µs less, "
            f"against a mean round trip {fmt_num(drop)} µs shorter ({fmt_num(cpu['round_trip_us'][0])} → "
            f"{fmt_num(cpu['round_trip_us'][1])} µs): {fmt_num(100 * fall / drop, 2)}% of it, where a round trip waits "
            "for one message's CPU on each side.")
    return cpu, said


# how every µs of CPU per message is taken here, as the report takes it (text/profile.py's COST_BASIS)
BUSY_BASIS = "the pinned CPU's busy share × the window ÷ the round trips"


def _latency_cells(rows: pd.DataFrame) -> pd.DataFrame | None:
    """Latency cells (path, size, thread count) with their mean round trip, each side's CPU time per message
    on BUSY_BASIS (profiles.cpu_seconds; its task-clock where the CPU was not pinned) and, for the CPU with
    the longer time per message (the one round trips queue for), that time, its busy share and its side;
    None without the columns."""
    need = {"latency_us", "messages", "duration_s", "srv_cpu_busy", "cli_cpu_busy"}
    if rows.empty or not need <= set(rows):
        return None
    messages = rows["messages"].where(rows["messages"] > 0)
    per_msg = {side: cpu_seconds(rows, side, "per_cpu") * 1e6 / messages for side in ("srv", "cli")}
    cells = rows.assign(srv_us=per_msg["srv"], cli_us=per_msg["cli"]).groupby(["impl", "msg_size", "threads"])[
        ["latency_us", "srv_us", "cli_us", "srv_cpu_busy", "cli_cpu_busy"]].mean().reset_index()
    side_is_srv = cells["srv_us"] >= cells["cli_us"]
    return cells.assign(cpu_us=cells["srv_us"].where(side_is_srv, cells["cli_us"]),
                        busy=cells["srv_cpu_busy"].where(side_is_srv, cells["cli_cpu_busy"]),
                        side=side_is_srv.map({True: "sender", False: "receiver"}))


def _latency_growth(cells: pd.DataFrame, top: int) -> tuple[int, pd.Series]:
    """(the second-fewest thread count, each path and size's round trip at top over it)."""
    by_threads = cells.pivot_table(index=["impl", "msg_size"], columns="threads", values="latency_us")
    second = int(by_threads.columns.min())
    return second, ((by_threads[top] / by_threads[second]).dropna() if top > second else pd.Series(dtype=float))


def latency_queue(rows: pd.DataFrame) -> Explanation | None:
    """Why the round trip grows with the thread count where a pinned CPU is saturated (latency-mode rows):
    with N connections each keeping one message in flight and one CPU busy throughout, Little's law makes
    the mean round trip N x that CPU's time per message, on BUSY_BASIS (a CPU busy a share b of the window
    gives N x its time ÷ b: task-clock, which leaves out the softirq and wake-up work the busy share counts,
    would not). Checked per cell (path, size, thread count above the fewest) whose busier CPU is at NEAR_FULL
    or more: the cells within CLEAR_GAP of it are said as Little's law on a saturated CPU, with no range as
    evidence (on BUSY_BASIS the round trip over N x the time per message is 1 ÷ the busy share wherever
    Little's law holds, so it cannot fail at NEAR_FULL); any beyond it, where the counts disagree with the
    law, as a hypothesis of their own; None when no cell at more than one thread is saturated."""
    cells = _latency_cells(rows)
    if cells is None:
        return None
    fewest = cells["threads"].min()
    cells = cells[cells["threads"] > fewest].dropna()
    saturated = cells[cells["busy"] >= NEAR_FULL].copy()
    if saturated.empty:
        return None
    saturated["predicted"] = saturated["threads"] * saturated["cpu_us"]
    saturated["ratio"] = saturated["latency_us"] / saturated["predicted"]
    # beyond CLEAR_GAP the saturated CPU would be clearly idle for part of a round trip: the gap that makes a side
    # clearly less busy than the other (bound_side)
    beyond = (saturated["ratio"] - 1).abs() > CLEAR_GAP
    within, off = saturated[~beyond], saturated[beyond]
    top = int(cells["threads"].max())
    second, growth = _latency_growth(cells, top)
    counts = and_list([str(int(t)) for t in sorted(set(saturated["threads"]))])
    evidence = {"cells": int(len(saturated)), "of": int(len(cells)), "margin": CLEAR_GAP, "basis": "busy share",
                "ratio_range": [float(saturated["ratio"].min()), float(saturated["ratio"].max())],
                "beyond_margin": [_cell_key(c) for _, c in off.iterrows()],
                "growth": [float(growth.min()), float(growth.max())] if len(growth) else None}
    text = ((f"From {second} to {top} threads the mean round trip grows {fmt_num(growth.min())}–"
             f"{fmt_num(growth.max())}× over the paths and sizes. " if len(growth) else "")
            + f"In {len(saturated)} of the {len(cells)} latency cells at more than {plural(int(fewest), 'thread')} "
            f"(at {counts} threads) the busier pinned CPU is {pct(NEAR_FULL)} busy or more"
            + (_queueing(within, len(saturated), growth, cells, (second, top), evidence) if len(within) else ""))
    if off.empty:
        text += "."
        return Explanation("latency_queue", "queueing", text, evidence)
    return _beyond_margin(text, within, off, evidence)


def _beyond_margin(text: str, within: pd.DataFrame, off: pd.DataFrame, evidence: dict) -> Explanation:
    """latency_queue's saturated cells whose mean round trip is beyond CLEAR_GAP of the thread count x the CPU's
    time per message: the largest three with their numbers, after text (what holds for the others), and as a
    hypothesis what the round trip waits for when it is longer, or what else the CPU does when it is shorter."""
    worst = off.reindex((off["ratio"] - 1).abs().sort_values(ascending=False).index)[:3]
    said = "; ".join(f"{_queue_example(c)} ({fmt_num(c['ratio'])}×)" for _, c in worst.iterrows())
    facts = (f"{text}, yet in none of them is the mean round trip within {pct(CLEAR_GAP)} of the thread count × that "
             f"CPU's time per message ({BUSY_BASIS}): " if within.empty else
             f"{text}. In the other {plural(len(off), 'cell')} it is not within {pct(CLEAR_GAP)}: ")
    facts += said + ("; …" if len(off) > len(worst) else "") + "."
    claims = ((["where the round trip is longer, it waits for something besides the saturated CPU (wake-ups, the "
                "network path), so the thread count alone does not set it."] if (off["ratio"] > 1).any() else [])
              + (["where it is shorter, the CPU's busy share counts work besides these round trips (another program on "
                  "the pinned CPU, or the hypervisor's)."] if (off["ratio"] < 1).any() else []))
    return hypothesis("latency_queue", "queueing_except" if len(within) else "not_queueing", " ".join(claims),
                      "the wake-up latency (perf sched latency) at these thread counts", evidence, facts=facts)


def _cell_key(c) -> str:
    return f"{name(c['impl'])} at {fmt_size(c['msg_size'])}, {plural(int(c['threads']), 'thread')}"


def _queue_example(c) -> str:
    return (f"{_cell_key(c)}: {int(c['threads'])} × {fmt_num(c['cpu_us'])} µs of {c['side']} CPU = "
            f"{fmt_num(c['predicted'])} µs, measured {fmt_num(c['latency_us'])} µs")


def _queueing(within: pd.DataFrame, saturated: int, growth: pd.Series, cells: pd.DataFrame, counts: tuple[int, int],
              evidence: dict) -> str:
    """The saturated cells, said as what they are: with the busier CPU saturated, Little's law (each connection
    keeps one message in flight) makes the mean round trip the thread count x that CPU's time per message; no range
    of it is evidence, since on BUSY_BASIS it is 1 ÷ the busy share by construction. Then what a growth beyond the
    thread counts' ratio is (that CPU's time per message rising), and the slowest path at the most threads, whose
    comparison with the others the Study decides (evidence["slowest"]; text/q3.py words it)."""
    top = int(within["threads"].max())
    at_top = within[within["threads"] == top]
    fast, slow = at_top.loc[at_top["latency_us"].idxmin()], at_top.loc[at_top["latency_us"].idxmax()]
    law = ("by Little's law (each connection keeps one message in flight, and every message waits its turn for the "
           "one CPU)")
    text = ((f": saturated, so {law} the mean round trip there is" if len(within) == saturated else
             f": saturated. In {len(within)} of them, {law}, the mean round trip is")
            + f" the thread count × that CPU's time per message ({BUSY_BASIS}): it grows with the "
            f"connections and with the CPU each message costs ({_queue_example(fast)}; {_queue_example(slow)})")
    text += _beyond_threads(growth, cells, counts, evidence)
    others = at_top[(at_top["msg_size"] == slow["msg_size"]) & (at_top["impl"] != slow["impl"])]
    evidence["slowest"] = {"impl": slow["impl"], "msg_size": int(slow["msg_size"]), "threads": top, "side": slow["side"],
                           "cpu_us": float(slow["cpu_us"]),
                           "others": {c["impl"]: [float(c["cpu_us"]), c["side"]] for _, c in others.iterrows()}}
    return text


def _beyond_threads(growth: pd.Series, cells: pd.DataFrame, counts: tuple[int, int], evidence: dict) -> str:
    """'; where it grows more than 4× from 2 to 8 threads, the busier CPU's time per message rises with it: A3 at
    64 KiB 4.10× (32.0 → 39.9 µs, busy 97% and 99%)': the growth beyond the ratio of the thread counts is the CPU
    per message rising (and the busy share at the fewer threads, where below 1); '' where none grows beyond it."""
    second, top = counts
    over = growth[growth > top / second].sort_values(ascending=False)
    if over.empty:
        return ""
    at = cells.set_index(["impl", "msg_size", "threads"])
    said = []
    for impl, size in over.index[:3]:
        lo, hi = at.loc[(impl, size, second)], at.loc[(impl, size, top)]
        said.append(f"{name(impl)} at {fmt_size(size)} {fmt_num(over[(impl, size)])}× ({fmt_num(lo['cpu_us'])} → "
                    f"{fmt_num(hi['cpu_us'])} µs, ×{fmt_num(hi['cpu_us'] / lo['cpu_us'])}; busy {pct(lo['busy'])} and "
                    f"{pct(hi['busy'])})")
    evidence["beyond_thread_ratio"] = [f"{name(i)} at {fmt_size(s)}" for i, s in over.index]
    return (f". Where it grows more than {top / second:g}× from {second} to {top} threads, the busier CPU's time "
            "per message rises with it (the rest is the busy shares' change): "
            + "; ".join(said) + ("; …" if len(over) > len(said) else ""))
