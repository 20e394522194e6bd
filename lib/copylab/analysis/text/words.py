"""Words every section uses: how a decision, its ratio and its interval are written (one way, so a
comparison reads the same wherever it is shown), how many more passes an undecided one needs,
what an unanswerable question says, and the repetitions behind the means."""

from __future__ import annotations

import re

from ...fmt import fmt_num, fmt_size
from ..decisions import Decision, Outcome, likely_outcome
from ..explain import standing_cost_words
from ..explain_copies import zero_copy_cost_by_size, zero_copy_cost_words
from ..roles import BASE, ONE_COPY, ZERO_COPY, name
from ..study import COST_FAMILY
from ..stats import MIN_REPS_FOR_INTERVAL


def interval(d: Decision) -> str:
    """'0.747–0.886', the decision's 95% interval of the ratio; 'n/a' where it has none."""
    return f"{fmt_num(d.low)}–{fmt_num(d.high)}" if d.low == d.low and d.high == d.high else "n/a"


def ratio_text(d: Decision, inner: bool = False) -> str:
    """'1.12× (95% interval 1.03–1.22)' (inner: '1.12×, 95% interval 1.03–1.22', for inside brackets),
    without the interval where it is undefined."""
    text = f"{fmt_num(d.ratio)}×"
    if d.low == d.low and d.high == d.high:
        text += f", 95% interval {interval(d)}" if inner else f" (95% interval {interval(d)})"
    return text


def decision_cell(d: Decision | None) -> str:
    """A table's cell for one comparison: 'win 1.12 (1.03–1.22)'; 'n/a' when not measured."""
    if d is None:
        return "n/a"
    return f"{d.decision} {fmt_num(d.ratio)}" + (f" ({interval(d)})" if d.low == d.low else "")


THROUGHPUT_OUTCOMES = {Outcome.WIN: "decided faster", Outcome.LOSS: "decided slower",
                       Outcome.EQUIVALENT: "equivalent", Outcome.UNDECIDED: "undecided"}


def outcomes_by_size(by_size: dict, words: dict = THROUGHPUT_OUTCOMES) -> str:
    """Per-size decisions grouped by outcome, in size order, without their ratios (a refer-back to the
    answer that gives them): 'decided slower at 64 B, 1 KiB and 4 KiB; undecided at 64 KiB'."""
    groups: dict = {}
    for size, d in sorted(by_size.items()):
        groups.setdefault(d.decision, []).append(size)
    said = [f"{words[o]} at {and_sizes(sizes)}" for o, sizes in groups.items()]
    return "; ".join(said)


def more_passes(d: Decision) -> str:
    """What an undecided comparison needs, and which way its ratio leans: 'about 4 more passes would
    likely decide it, as a loss'."""
    if d.decision != Outcome.UNDECIDED:
        return ""
    if min(d.n_x, d.n_base) < 2:
        return "a second pass would give it an interval"
    if d.passes_needed is None:
        return "more than 100 more passes: at this spread the sweep cannot decide it"
    lean = likely_outcome(d)
    # its basis: the interval narrowed as more passes at this spread would narrow it, around this ratio
    return (f"about {d.passes_needed} more pass{'es' if d.passes_needed != 1 else ''} would likely decide it, "
            + ("as equivalent" if lean == Outcome.EQUIVALENT else f"as a {lean}")
            + f" (if the ratio stays at {fmt_num(d.ratio)}× and the passes spread as much as these {min(d.n_x, d.n_base)})")


def unanswerable(reason: str, advice: str = "") -> str:
    return f"Cannot be answered from this sweep: {reason}." + (f" {advice}" if advice else "")


def no_pair_reason(impl: str, have_throughput) -> str:
    return (f"no throughput-mode measurements of both {name(impl)} and {name(BASE)} "
            f"(throughput rows exist for: {', '.join(have_throughput) or 'none'})")


def reps_note(reps: tuple[int, int]) -> str:
    low, high = reps
    if high <= 1:
        return (" This sweep has a single repetition per point, so there is no confidence "
                "interval: a difference of a few percent may be noise.")
    span = f"{low}" if low == high else f"{low}–{high}"
    drawn = ("the figures draw each point's repetitions" if high < MIN_REPS_FOR_INTERVAL else
             "the figures draw 95% intervals on the log scale")
    return f" Means are over {span} repetitions per point; {drawn}."


def q_label(key: str) -> str:
    return key.split("_")[0].upper()


# ------------------------------------------------------------------------------------------------
# claims about a cost (lower is better): stated as a fact only when decided, and decided only where the
# decision stands after Holm's correction over the cost family (study.COST_FAMILY), as Q4/Q5 say theirs

COST_VERDICTS = {Outcome.WIN: "more", Outcome.LOSS: "less", Outcome.EQUIVALENT: "the same", Outcome.UNDECIDED: "undecided"}


def cost_verdict(study, d: Decision | None) -> str:
    """'less', 'more', 'the same' (equivalent within the margin) or 'undecided' for a cost ratio x/base, as the
    decision stands after the cost family's correction: one that does not stand is 'undecided'."""
    if d is None or study.family(COST_FAMILY).fallen(d):
        return "undecided"
    return COST_VERDICTS[d.decision]


def cost_words(study, d: Decision) -> str:
    """A cost decision's outcome in words, with its standing in the cost family (explain.standing_cost_words)."""
    return standing_cost_words(study.family(COST_FAMILY), d)


def cost_claim(study, d: Decision | None, who: str, what: str = "CPU time per byte") -> str:
    """A cost of x against base in words that claim no more than its decision as it stands: 'A2's sender
    spends 0.815× A1's CPU time per byte (95% interval 0.618–1.08): undecided, so a saving is not established'."""
    if d is None:
        return f"{who}: {what} not compared (a side was not measured)"
    return f"{who} spends {ratio_text(d)} {name(d.base)}'s {what}: {cost_words(study, d)}"


# ------------------------------------------------------------------------------------------------
# each paragraph once: a later section refers back in a line

PROFILE_SECTION = "Where the CPU goes, measured"
DATA_PATHS_SECTION = "Data paths: where the copies happen"  # data_paths.py: the one-copy sender's CPU per byte
METHODS_SECTION = "How the decisions are made"  # methods.py: the test, the margin, Holm's correction
SHORT = {"zero_copy_cost": "what {zc}'s sender pays instead of the copy ({verdict})",
         "deferred_copy_site": "where its deferred copy runs ({verdict})",
         "removed_copy": "which copy {one} removes ({verdict})",
         "per_message_gap": "why {one} is decided to lose ({verdict})"}
VERDICT_WORDS = {"deferred_copy": "the deferred copy", "zerocopy_pin": "pinning", "zerocopy_completion": "completions",
                 "sendmsg": "inside the sender's sendmsg",
                 "recv": "inside the receiver's recv", "softirq_thread": "in a softirq thread",
                 "interrupt": "in interrupt context", "split": "in several places", "removed": "the user-space copy",
                 "reduced": "part of the user-space copy", "copy": "the copy, net of the memcpy removed",
                 "not_sender_cpu": "not its sender's CPU", "unplaced": "not placed by its profile",
                 "syscall_and_copy": "the system call and the copy, equal within sampling error",
                 "copy_and_syscall": "the copy and the system call, equal within sampling error"}


def only_at(study, threads) -> str:
    """', 1 thread only' when evidence measured at these thread counts explains a decision that pools
    more of them (a by-size decision pools every thread count of the sweep); '' otherwise."""
    pooled = list(getattr(study, "thread_counts", None) or [])
    if not threads or not set(pooled) - set(threads):
        return ""
    listed = ", ".join(str(t) for t in threads)
    return f", {listed} thread{'s' if list(threads) != [1] else ''} only"


def pooled_note(study, threads) -> str:
    """' (Measured at 1 thread only: the decision pools 1, 2, 4 and 8 threads.)' for evidence of some thread
    counts said beside a decision over all of them; '' when it covers them all."""
    if not only_at(study, threads):
        return ""
    pooled = study.thread_counts
    return (f" (Measured at {', '.join(str(t) for t in threads)} thread{'s' if list(threads) != [1] else ''} only: "
            f"the decision pools {', '.join(str(t) for t in pooled[:-1])} and {pooled[-1]} threads.)")


def states_note(study, impl: str, size: int, again: bool = False) -> str:
    """One line where a cost at (impl, size) is said and its runs there fall into two states (the Study's
    split; the profile section words it in full). again: the numbers were given before (Q1), so only the
    reference back (review-fresh4 G7)."""
    split = study.two_states(impl, size) if hasattr(study, "two_states") else None
    trade = getattr(study, "trades", {}).get((impl, int(size)))
    if split is None and trade is not None:
        # the profile section says the trade in full (explain.side_trade): one clause that refers back
        return (f" {name(impl)}'s runs at {fmt_size(size)} move CPU per byte between the sides (r {fmt_num(trade.r)}; "
                f"see \"{PROFILE_SECTION}\").")
    if split is None:
        return ""
    if again:
        return f" {name(impl)}'s runs at {fmt_size(size)} fall into two states (see \"{PROFILE_SECTION}\")."
    hi, lo = split.receiver_busier, split.sender_busier
    return (f" {name(impl)}'s runs at {fmt_size(size)} fall into two states: in {hi.runs} of {split.runs} the receiver "
            f"is the busier CPU and spends {fmt_num(hi.receiver_ns_per_byte)} ns per byte, in {lo.runs} the sender, "
            f"the receiver spending {fmt_num(lo.receiver_ns_per_byte)} (see \"{PROFILE_SECTION}\").")


def _verdict_words(study, e) -> str:
    """An explanation's verdict in a few words, at the size it was found at. What the zero-copy sender
    pays is said at every profiled size, each in words its own shares support ("most" at 64 KiB need
    not hold at 64 B)."""
    if e.rule == "zero_copy_cost":
        by_size = zero_copy_cost_by_size(study.part_e, study.profiles)
        groups: dict[str, list[int]] = {}
        for size, found in by_size.items():
            words = zero_copy_cost_words(found)
            if words:
                groups.setdefault(words, []).append(size)
        if groups:
            return "; ".join(f"{words}, at {and_sizes(sizes)}" for words, sizes in groups.items())
    size = (e.evidence or {}).get("msg_size")
    return (("a hypothesis: " if e.hypothesis else "") + VERDICT_WORDS.get(e.verdict, e.verdict.replace("_", " "))
            + (f", at {fmt_size(size)}" if size else ""))


def and_sizes(sizes) -> str:
    """'64 B', '64 B and 1 KiB', '64 B, 1 KiB and 4 KiB'."""
    said = [fmt_size(s) for s in sizes]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def refer_back(study, rules, section: str = PROFILE_SECTION, elsewhere: str = "") -> str:
    """One line pointing at the section (or the question: "Q6") that gave these explanations in full, with each
    one's verdict; elsewhere: where the verdicts at other sizes than that section's rest (it gives one size)."""
    found = [study.explanations[r] for r in rules if r in study.explanations]
    found = [e for e in found if e.verdict != "unknown"]
    if not found:
        return ""
    said = [SHORT[e.rule].format(zc=name(ZERO_COPY), one=name(ONE_COPY),
                                 verdict=_verdict_words(study, e) + only_at(study, (e.evidence or {}).get("threads")))
            for e in found]
    where = section if re.fullmatch(r"Q\d", section) else f"\"{section}\""  # a section by its title, quoted
    return (f"{said[0][0].upper() + said[0][1:]}" + "".join(f"; {x}" for x in said[1:]) + f": see {where}"
            + (f" ({elsewhere})" if elsewhere else "") + ".")
