"""The study: every comparison the report shows, computed once per report from one population of rows.

`study(df, meta, profiles)` is the only caller of the decision code (decisions.py; a layout test
holds it; sweep/budget.py apart, which plans passes from a sweep still running). Everything the
report shows reads the Study it returns: the notebook's cells, the figures, the summary, Part E,
the other-paths section, the explorer and answers.json. So a comparison (an implementation against
a baseline, at a size, a thread count or over all thread counts, for a metric) has one test, one
interval and one decision wherever it appears.

The population: the successful rows of copylab's own senders (the study's three roles and the extra
paths) with the primary receive strategy; Part E's answers use its study roles. Each metric's log
values, and so each pass's shift, are estimated from that one population. The receive strategies'
comparisons (the other-paths section) are the one place where other strategies' rows enter.

Every claim the report makes belongs to a family (FAMILIES), and Holm's correction runs over each
family's comparisons: `Family.stands(decision)` says whether a win, a loss or an equivalence
survives it. The text layer states the families once (analysis/text/methods.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from . import findings as fnd
from .decisions import (ALPHA, DEFAULT_MARGIN, Decision, Outcome, cell_diffs, decide_cells, decided_crossover,
                        holm, trailing_start, log_values, point_stats)
from .explain import Explanation, bound_side, latency_queue, latency_threads, side_trade, two_states
from .explain_copies import (Pooled, copy_by_working_set, deferred_copy_site, per_message_gap, profiled_sizes,
                             removed_copy, why_at_size, zero_copy_cost)
from .explain_surprise import explain_surprise
from .levels import CacheLevels, cache_levels, one_working_set, primary, varies, working_set_key
from .profiles import point_rows, with_points
from .patterns import q6_tests, robust_surprise, thread_decisions
from ..contract import WORKING_SET_DEFAULT
from ..fmt import fmt_size, plural
from .roles import BASE, ONE_COPY, STUDY, ZERO_COPY, name, native
from .run_facts import run_facts
from .states import TwoStates, side_trades, two_state_splits
from .stats import one_receive, primary_receive, study_rows, throughput_rows

THROUGHPUT = "throughput_gbps"
# criterion of the summary -> (mode, metric, higher is better)
CRITERIA = {"throughput": ("throughput", THROUGHPUT, True),
            "cpu_per_byte": ("throughput", "cpu_ns_per_byte", False),
            "latency": ("latency", "latency_p50_us", False)}
# each side's CPU time per byte (throughput mode, lower is better): the evidence sentences that say a
# path costs its sender or receiver less cite these decisions, never the means alone
SIDE_CPU = {"sender": "srv_cpu_ns_per_byte", "receiver": "cli_cpu_ns_per_byte"}
# the mean round trip (latency mode): Little's law holds for it, not the median, so where the report says why one
# path's round trip is longer than another's (Q3's queue at a saturated CPU) it says so with these decisions
MEAN_ROUND_TRIP = "latency_us"
# the family those decisions stand or fall in: a sentence or a marker of a side's cost reads its standing there
COST_FAMILY = "cpu_sides"
# what the report's † says of a decision Holm's correction over its family does not leave standing
FALLEN = "not standing after correction"


@dataclass
class Family:
    """The comparisons behind one group of claims, with Holm's correction over them."""

    name: str
    members: list = field(default_factory=list)     # Decisions (or Q6's Tests' decisions)
    adjusted: dict = field(default_factory=dict)    # id(decision) -> Holm-adjusted p
    two_sided: bool = False   # Q6 tests "falls short of 1" for every comparison: the two-sided p

    def claim_p(self, d: Decision) -> float:
        """The p of the claim d makes: its equivalence's where it decided one, else ratio 1's."""
        return d.p_equivalence if d.decision == Outcome.EQUIVALENT and not self.two_sided else d.p

    def correct(self) -> Family:
        ps = [self.claim_p(d) for d in self.members]
        self.adjusted = {id(d): p for d, p in zip(self.members, holm(ps))}
        return self

    @property
    def size(self) -> int:
        """The tests made: the comparisons with a p-value."""
        return sum(1 for d in self.members if self.claim_p(d) == self.claim_p(d))

    def p_holm(self, d: Decision) -> float:
        return self.adjusted.get(id(d), math.nan)

    def stands(self, d: Decision) -> bool:
        """Whether d's decided claim (win, loss or equivalent) survives the family's correction."""
        p = self.p_holm(d)
        return d.decision != Outcome.UNDECIDED and p == p and p < ALPHA

    def fallen(self, d: Decision | None) -> bool:
        """Whether d is decided before the correction but does not stand after it (the report's †)."""
        return d is not None and d.decision != Outcome.UNDECIDED and not self.stands(d)


@dataclass
class Study:
    """One sweep's comparisons, findings and explanations (see the module's docstring)."""

    df: pd.DataFrame                 # every row loaded (peers and other strategies included)
    rows: pd.DataFrame               # the population: copylab's senders, primary receive strategy
    part_e: pd.DataFrame             # its study roles: what Part E compares
    meta: dict
    profiles: pd.DataFrame           # the profiled runs of the study roles taken while the CPUs were near
    all_profiles: pd.DataFrame       # every profiled run taken while the CPUs were near
    margin: float
    profiles_apart: pd.DataFrame = field(default_factory=pd.DataFrame)  # left out of the evidence (apart)
    comparisons: dict = field(default_factory=dict)   # (metric, impl, base) -> {"by_size", "per_threads"}
    diffs: dict = field(default_factory=dict)         # (metric, impl, base) -> {(size, threads): Diff}
    receive: dict = field(default_factory=dict)       # (sender, strategy) -> {"by_size", "per_threads"}
    threads: tuple = (0, 0, {})                       # Q3: (fewest, most, {size: {impl: Decision}})
    q6_cells: list = field(default_factory=list)      # Q6's tests (patterns.py)
    q6_regions: list = field(default_factory=list)
    q6_surprise: tuple = (None, "none")              # (the most robust surprise, its standing)
    q6_explanation: Explanation | None = None
    families: dict = field(default_factory=dict)      # name -> Family
    explanations: dict = field(default_factory=dict)  # rule name -> Explanation
    run: dict = field(default_factory=dict)           # how the run went (run_facts.py)
    cache: CacheLevels | None = None                  # Q2/Q3 by working set (levels.py); None: one working set
    states: dict = field(default_factory=dict)        # (impl, size) -> TwoStates: a cell's runs in two states
    trades: dict = field(default_factory=dict)        # (impl, size) -> SideTrade: CPU per byte moving between sides

    def two_states(self, impl: str, size: int) -> TwoStates | None:
        """The two states impl's runs at size fall into (states.py), None when they do not."""
        return self.states.get((impl, int(size)))

    @property
    def thread_counts(self) -> list[int]:
        """The thread counts of Part E's throughput runs: what a by-size decision pools."""
        return sorted(int(t) for t in set(throughput_rows(self.part_e)["threads"]))

    def compare(self, impl: str, base: str = BASE, metric: str = THROUGHPUT) -> dict:
        """{"by_size": {size: Decision}, "per_threads": {threads: {size: Decision}}} (empty when not measured)."""
        return self.comparisons.get((metric, impl, base)) or {"by_size": {}, "per_threads": {}}

    def decision(self, impl: str, size: int, threads: int | None = None, base: str = BASE,
                 metric: str = THROUGHPUT) -> Decision | None:
        found = self.compare(impl, base, metric)
        return found["by_size"].get(size) if threads is None else found["per_threads"].get(threads, {}).get(size)

    def crossover(self, impl: str, threads: int | None = None) -> int | None:
        """The decided crossover of impl over the baseline (docs/contracts.md, "Decisions"), before Holm's
        correction (standing_crossover: after it); threads: that thread count's."""
        found = self.compare(impl)
        return decided_crossover(found["by_size"] if threads is None else found["per_threads"].get(threads, {}))

    def standing_crossover(self, impl: str, family: str, threads: int | None = None) -> int | None:
        """The crossover of impl over the baseline counting only the wins Holm's correction over family
        leaves standing (threads: that thread count's decisions): what the text may state as decided."""
        found = self.compare(impl)
        by_size = found["by_size"] if threads is None else found["per_threads"].get(threads, {})
        fam = self.family(family)
        return trailing_start(by_size, lambda size: by_size[size].decision == Outcome.WIN and fam.stands(by_size[size]))

    def family(self, name: str) -> Family:
        return self.families.get(name) or Family(name)

    @property
    def reps(self) -> tuple[int, int]:
        return fnd.reps_range(self.part_e)

    @property
    def shown(self) -> pd.DataFrame:
        """Every row (reference programs and receive strategies too) of the one working set Part D's
        figures and tables show: averaging over working sets would mix cache levels (the cache-level
        figure and the explorer show them all)."""
        return one_working_set(self.df, WORKING_SET_DEFAULT)

    @property
    def shown_note(self) -> str:
        """One sentence naming the working set Part D shows, when the sweep varies it ("" otherwise)."""
        if not varies(self.df):
            return ""
        shown = sorted(set(working_set_key(self.shown)) - {""})
        return (f"This sweep varies the working set: the figures and tables below show one, {', '.join(shown)}, the "
                "one Part E answers from (the nearest the default grid's); the cache-level figure under Q2 and the "
                "explorer show every working set.")

    @property
    def results_dir(self):
        return self.df.attrs.get("results_dir")


def equivalence_margin(meta: dict) -> float:
    """The grid's equivalence_margin (meta.json's params), else the default."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    value = params.get("equivalence_margin", DEFAULT_MARGIN)
    return float(value) if isinstance(value, (int, float)) and 0 < value <= 1 else DEFAULT_MARGIN


def population(df: pd.DataFrame) -> pd.DataFrame:
    """The rows every comparison is computed from: copylab's own senders, the primary receive strategy."""
    rows = one_receive(df)
    rows = rows[rows["impl"].isin(native(set(rows["impl"])))]
    if {"srv_task_clock_ms", "cli_task_clock_ms", "bytes"} <= set(rows.columns):
        rows = rows.assign(cpu_ns_per_byte=(rows["srv_task_clock_ms"] + rows["cli_task_clock_ms"]) * 1e6
                           / rows["bytes"].where(rows["bytes"] > 0))
    return rows


def _bare(frame: pd.DataFrame) -> pd.DataFrame:
    """frame's data without its attrs (a shallow copy: the caller's frame keeps them)."""
    out = frame.copy(deep=False)
    out.attrs = {}
    return out


def study(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> Study:
    """Every comparison, finding and explanation of one sweep (see the module's docstring)."""
    # the working frames carry no attrs: pandas deep-copies attrs into every frame an operation makes, and
    # the Study makes thousands (0.17 s of its 1.7 s); the bookkeeping stays on df, which the Study keeps
    every_working_set = _bare(population(df))
    # a sweep across working sets (params/cache.yaml): Part E's other answers use one of them, never
    # an average over levels; the cache-level comparisons use them all
    rows = primary(every_working_set, WORKING_SET_DEFAULT) if varies(every_working_set) else every_working_set
    if profiles is None:  # a results.csv of the second round carried the profile columns in its own rows
        profiles = df[df["srv_prof_samples"].notna()] if "srv_prof_samples" in df else df.iloc[0:0]
    profiles = with_points(_bare(profiles), rows)  # every bucket cost reads the measured point's CPU (profiles.py)
    apart = _apart(profiles)
    near = profiles[~apart]
    s = Study(df=df, rows=rows, part_e=study_rows(rows), meta=meta, profiles=study_rows(near),
              all_profiles=near, profiles_apart=study_rows(profiles[apart]), margin=equivalence_margin(meta))
    _compare_paths(s)
    _compare_receive(s, df)
    tp_stats = point_stats(throughput_rows(s.rows))  # each pass's shift from the one population
    s.threads = thread_decisions(tp_stats, s.margin)
    s.states = two_state_splits(s.part_e)
    s.trades = {k: t for k, t in side_trades(s.part_e).items() if k not in s.states}  # two states say it already
    a2 = (THROUGHPUT, ONE_COPY, BASE)
    s.q6_cells, s.q6_regions = q6_tests(s.comparisons.get(a2, {}).get("per_threads", {}), s.diffs.get(a2, {}),
                                        tp_stats, s.margin)
    s.cache = cache_levels(every_working_set, meta, s.margin)
    s.run = run_facts(df, meta, profiles)
    _families(s)  # before the explanations: Q1's words a pooled decision with its standing (why_at_size)
    s.explanations = explanations(s)
    s.q6_surprise = robust_surprise(s.q6_cells, s.q6_regions)
    if s.q6_surprise[0] is not None:
        s.q6_explanation = explain_surprise(s.q6_surprise[0], s.part_e, s.profiles, meta, s.margin)
    return s


def _apart(profiles: pd.DataFrame) -> pd.Series:
    """The profiled runs taken while the two vCPUs were apart (profiles.csv's cpus_apart): their shares
    describe that placement, so they are no evidence for the measured runs."""
    if "cpus_apart" not in profiles:
        return pd.Series(False, index=profiles.index)
    return profiles["cpus_apart"].astype(str).str.strip().str.lower().eq("true")


def path_diffs(rows: pd.DataFrame) -> dict:
    """(metric, impl, base) -> {(size, threads): Diff} of the population's rows: every sender against
    the baseline for each criterion, and against the one-copy path in throughput (the other-paths
    section's second column), in each side's CPU per byte and in the mean round trip. The Study decides
    them; a comparison of two sweeps (analysis/comparison.py) takes each sweep's."""
    impls = native(set(rows["impl"]))
    found = {}
    side_metrics = [("throughput", m, False) for m in SIDE_CPU.values()] + [("latency", MEAN_ROUND_TRIP, False)]
    for mode, metric, _ in list(CRITERIA.values()) + side_metrics:
        if metric not in rows:
            continue
        values = log_values(rows[rows["mode"] == mode], metric)
        bases = (BASE, ONE_COPY) if metric in (THROUGHPUT, MEAN_ROUND_TRIP, *SIDE_CPU.values()) else (BASE,)
        for base in bases:
            for impl in impls:
                if impl != base:
                    found[(metric, impl, base)] = cell_diffs(values, impl, base)
    return found


def _compare_paths(s: Study) -> None:
    s.diffs = path_diffs(s.rows)
    for (metric, impl, base), diffs in s.diffs.items():
        s.comparisons[(metric, impl, base)] = decide_cells(diffs, impl, base, s.margin)


def contenders(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput rows of copylab's senders with each (sender, receive strategy) as one contender
    "impl/receive" of the decisions."""
    rows = throughput_rows(df)
    rows = rows[rows["impl"].isin(native(set(rows["impl"])))].copy()
    rows["receive"] = rows["receive"].fillna("message") if "receive" in rows else "message"
    rows["impl"] = rows["impl"] + "/" + rows["receive"]
    return rows


def _compare_receive(s: Study, df: pd.DataFrame) -> None:
    """Every receive strategy but the primary one against the primary one, with the same sender."""
    if "receive" not in df or df["receive"].dropna().nunique() < 2:
        return
    rows, primary = contenders(df), primary_receive(df)
    values = log_values(rows)
    for pair in sorted(set(rows["impl"])):
        sender, receive = pair.split("/", 1)
        if receive != primary and f"{sender}/{primary}" in set(rows["impl"]):
            diffs = cell_diffs(values, pair, f"{sender}/{primary}")
            s.receive[(sender, receive)] = decide_cells(diffs, pair, f"{sender}/{primary}", s.margin)


def explanations(s: Study) -> dict[str, Explanation]:
    """Every rule-chosen explanation the answers cite, by name (answers.json keeps them all)."""
    df, profiles = s.part_e, s.profiles
    found = {"removed_copy": removed_copy(profiles), "zero_copy_cost": zero_copy_cost(df, profiles),
             "deferred_copy_site": deferred_copy_site(profiles, s.results_dir)}
    by_working_set = copy_by_working_set(profiles, s.meta, s.margin)
    if by_working_set is not None:  # Q2's PMU-free evidence
        found["copy_by_working_set"] = by_working_set
    for (impl, size), split in sorted(s.states.items()):
        found[f"states_{impl}_{size}"] = two_states(split, zero_copy=impl == ZERO_COPY)
    for (impl, size), trade in sorted(s.trades.items()):
        found[f"states_trade_{impl}_{size}"] = side_trade(trade, zero_copy=impl == ZERO_COPY)
    for size, d in sorted(s.compare(ONE_COPY)["by_size"].items()):  # Q4: each decided loss from its profile
        if d.decision == Outcome.LOSS and size in profiled_sizes(profiles, [ONE_COPY, BASE]):
            found[f"gap_{ONE_COPY}_{int(size)}"] = per_message_gap(profiles, ONE_COPY, BASE, int(size), df, s.margin)
    for rule, key in ((latency_threads, "latency_threads"), (latency_queue, "latency_queue")):
        latency = rule(df[df["mode"] == "latency"])
        if latency is not None:
            found[key] = latency
    tp = throughput_rows(df)
    for size in sorted(set(tp.loc[tp["impl"] == ZERO_COPY, "msg_size"])):  # Q1: each size from its own evidence
        # the profiled cell's decisions against the baseline: its sender's CPU per byte and its throughput
        at = point_rows(profiles, ZERO_COPY, int(size))
        threads = int(at["threads"].iloc[0]) if len(at) else 1
        # and over all thread counts, with their families: the factors where the profiled cell decides neither
        pooled = Pooled(s.decision(ZERO_COPY, int(size)), s.decision(ZERO_COPY, int(size), metric=SIDE_CPU["sender"]),
                        s.family("q5"), s.family(COST_FAMILY))
        found[f"why_{ZERO_COPY}_{int(size)}"] = why_at_size(
            df, profiles, ZERO_COPY, int(size), cost=s.decision(ZERO_COPY, int(size), threads, metric=SIDE_CPU["sender"]),
            loss=s.decision(ZERO_COPY, int(size), threads), results_dir=s.results_dir, pooled=pooled,
            margin=s.margin)
    if len(tp):
        largest = int(tp["msg_size"].max())
        for impl in (ONE_COPY, ZERO_COPY):
            at = tp[(tp["impl"] == impl) & (tp["msg_size"] == largest)]
            threads = int(at["threads"].min()) if len(at) else 1
            found[f"bound_{impl}"] = bound_side(at[at["threads"] == threads],
                                                f"{name(impl)} at {fmt_size(largest)}, {plural(threads, 'thread')}")
            found[f"bound_{impl}"].evidence.update(threads=[threads], msg_size=largest)  # what a pooled decision's sentence marks
    return found


# the families of claims: name -> what the report claims from them (analysis/text/methods.py words them)
FAMILIES = ("summary", "q2", "q3", "q3_cache", "q4", "q4_per_threads", "q5", "q5_per_threads", "q6", "other_paths",
            COST_FAMILY)


def distinct_pairs(impls, bases) -> list[tuple[str, str]]:
    """(impl, base) for each path against each base, every unordered pair once (A2/A1 stands for A1/A2: the
    same comparison inverted, one test), in the order of bases: Holm's m counts distinct comparisons."""
    pairs: list[tuple[str, str]] = []
    for base in bases:
        pairs += [(impl, base) for impl in impls if impl != base and (base, impl) not in pairs]
    return pairs


def _families(s: Study) -> None:
    fam = {name: Family(name, two_sided=name == "q6") for name in FAMILIES}
    for _, metric, _ in CRITERIA.values():
        for impl in native(set(s.rows["impl"])):
            fam["summary"].members += list(s.compare(impl, BASE, metric)["by_size"].values())
    for key, impl in (("q4", ONE_COPY), ("q5", ZERO_COPY)):
        found = s.compare(impl)
        fam[key].members += list(found["by_size"].values())
        fam[f"{key}_per_threads"].members += [d for by in found["per_threads"].values() for d in by.values()]
    fam["q3"].members += [d for by in s.threads[2].values() for d in by.values()]
    if s.cache is not None:  # the cache-level study's claims (levels.py)
        fam["q2"].members += s.cache.decisions("q2")
        fam["q3_cache"].members += s.cache.decisions("q3_cache")
    fam["q6"].members += [t.decision for t in s.q6_cells + s.q6_regions]
    # the other paths' section shows its table only when a path beyond the study's three ran: else its
    # comparisons (the study's paths against each other) are claimed nowhere and are no family
    paths = native(set(s.rows["impl"]))
    if set(paths) - set(STUDY):
        for impl in paths:
            for base in (BASE, ONE_COPY):
                if impl != base:
                    fam["other_paths"].members += list(s.compare(impl, base)["by_size"].values())
    fam["other_paths"].members += [d for found in s.receive.values() for d in found["by_size"].values()]
    for metric in SIDE_CPU.values():
        for impl, base in distinct_pairs(native(set(s.rows["impl"])), (BASE, ONE_COPY)):
            fam[COST_FAMILY].members += list(s.compare(impl, base, metric)["by_size"].values())
    s.families = {name: f.correct() for name, f in fam.items()}
    # Q6 reads its tests' adjusted p from its family: one correction, the Study's
    for t in s.q6_cells + s.q6_regions:
        t.p, t.p_holm = t.decision.p, s.families["q6"].p_holm(t.decision)

