"""The section "How the decisions are made": the report's one statistical standard and its families of
claims with Holm's correction, stated once (every other section refers here)."""

from __future__ import annotations

from ...fmt import fmt_num
from ..decisions import ALPHA, CONFIDENCE
from ..roles import BASE, ONE_COPY, ZERO_COPY, name
from ..study import Study

FAMILY_WORDS = {
    "summary": "the summary for engineers: every send path against {base} at every size, for throughput, "
               "CPU per byte and round-trip latency",
    "q2": "Q2 (a sweep across cache levels): each path's metrics from one working set to the next, and "
          "{base}'s extra copy per working set and per step",
    "q3": "Q3: each path's throughput with the most against the fewest threads, per size",
    "q3_cache": "Q3's aggregate working set: per-thread throughput where threads x working set leaves the "
                "last-level cache, against where it stays inside",
    "q4": "Q4: {one} against {base} per size (the answer)",
    "q4_per_threads": "Q4's table per thread count",
    "q5": "Q5: {zero} against {base} per size (the answer)",
    "q5_per_threads": "Q5's table per thread count",
    "q6": "Q6: every expectation checked, cell by cell and as patterns across cells",
    "other_paths": "\"Other ways to move the bytes\": every send path against {base} and {one}, and every "
                   "receive strategy against the primary one",
    "cpu_sides": "each side's CPU time per byte (sender, receiver) of every send path against {base} and {one} "
                 "(each pair once: {one}/{base}, not also {base}/{one}), per size: what the sentences and figures "
                 "about a side's cost cite",
}


def family_words(family: str) -> str:
    return FAMILY_WORDS[family].format(base=name(BASE), one=name(ONE_COPY), zero=name(ZERO_COPY))


def markdown(study: Study) -> str:
    m = study.margin
    families = "\n".join(f"- {family_words(n)}: {f.size} comparison{'s' if f.size != 1 else ''}"
                         for n, f in study.families.items() if f.size)
    return (
        f"Every comparison in this report (a path against a baseline, at a size, a thread count or over all "
        f"thread counts, for one metric) is made once, by one test, and shows one {CONFIDENCE:.0%} interval "
        "wherever it appears: in the text, the tables, the figures and answers.json.\n\n"
        "- **The test.** On the log scale, where a pass that ran faster or slower shifts all its runs together "
        "and a ratio is a difference: per (size, threads) cell the paired differences over the passes both "
        "paths were measured in (each cell its own spread; a cell with fewer than two common passes uses the "
        "points' pass-adjusted means with Welch's variance); per size, the mean over the thread counts with "
        "Welch–Satterthwaite degrees of freedom. The ratio is exp(difference) with its "
        f"{CONFIDENCE:.0%} Student-t interval. A path against itself at two sizes or thread counts (Q3, Q6) "
        "compares two points measured minutes apart, unpaired.\n"
        f"- **The decision.** *equivalent* when the interval lies within {fmt_num(1 / (1 + m))}–{fmt_num(1 + m)} "
        f"(equivalence margin ±{fmt_num(100 * m)}%), otherwise *win* above 1, *loss* below 1, *undecided* "
        "when it straddles 1 or a side has fewer than two passes.\n"
        f"- **Many comparisons.** Each group of claims the report makes is a family, and Holm's correction "
        f"keeps the chance of any false claim in a family at {ALPHA:.0%}: each decision's p-value (of ratio 1 "
        "for a win or a loss; the two one-sided tests against the margin for an equivalence) is adjusted over "
        "its family. A decision whose adjusted p is not below "
        f"{fmt_num(ALPHA)} still shows its interval, and the report says it does not survive the correction "
        "(the summary and the other paths mark it †; Q4, Q5, Q6 and the sentences about a side's cost give the "
        "adjusted p). The families:\n\n"
        + families)
