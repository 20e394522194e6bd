"""The Study: every comparison, decision, crossover and verdict of one sweep, computed once per report.

`study(df, meta, profiles)` is the only caller of the decision code for a report (a layout test holds
it). Everything the report shows reads the Study it returns: the notebook's sections (their templates
are given its verdicts), the figures, answers.json and the explorer. So a comparison (a path against a
baseline, at a size, a thread count or over all thread counts, for a metric) has one test, one
interval and one decision wherever it appears, and every claim stands or falls in one family.

The population: the successful rows of copylab's own senders (the study's three roles and the extra
paths) with the primary receive strategy and, when the sweep varies the working set, the one nearest
the default grid's (the cache-level comparisons use them all). Part E answers from its study roles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..contract import WORKING_SET_DEFAULT
from ..inference import DEFAULT_MARGIN, Decision, Family, cell_diffs, crossover, decide_cells, log_values
from . import costmodel, questions
from .levels import CacheLevels, cache_levels, one_working_set, primary, varies, working_set_key
from .profiles import with_points
from .roles import BASE, ONE_COPY, STUDY, ZERO_COPY, native
from .run_facts import run_facts
from .threads import thread_verdict
from .stats import one_receive, primary_receive, study_rows, throughput_rows

THROUGHPUT = "throughput_gbps"
# criterion of the summary -> (mode, metric, higher is better)
CRITERIA = {"throughput": ("throughput", THROUGHPUT, True),
            "cpu_per_byte": ("throughput", "cpu_ns_per_byte", False),
            "latency": ("latency", "latency_p50_us", False)}
# each side's CPU time per byte (throughput mode, lower is better)
SIDE_CPU = {"sender": "srv_cpu_ns_per_byte", "receiver": "cli_cpu_ns_per_byte"}
COST_FAMILY = "cpu_sides"
# the question whose answer is each path's crossover over the baseline, and the family it stands in
QUESTION = {ONE_COPY: "q4", ZERO_COPY: "q5"}
FAMILIES = ("summary", "q2", "q3", "q4", "q4_per_threads", "q5", "q5_per_threads", "other_paths", COST_FAMILY)


@dataclass
class Study:
    """One sweep's comparisons and verdicts (see the module's docstring)."""

    df: pd.DataFrame                 # every row loaded (peers and other strategies included)
    rows: pd.DataFrame               # the population: copylab's senders, primary receive strategy
    part_e: pd.DataFrame             # its study roles: what Part E compares
    meta: dict
    profiles: pd.DataFrame           # the profiled runs of the study roles taken while the CPUs were near
    all_profiles: pd.DataFrame       # every profiled run taken while the CPUs were near
    margin: float
    profiles_apart: pd.DataFrame = field(default_factory=pd.DataFrame)
    comparisons: dict = field(default_factory=dict)   # (metric, impl, base) -> {"by_size", "per_threads"}
    diffs: dict = field(default_factory=dict)         # (metric, impl, base) -> {(size, threads): Diff}
    receive: dict = field(default_factory=dict)       # (sender, strategy) -> {"by_size", "per_threads"}
    families: dict = field(default_factory=dict)      # name -> Family
    cache: CacheLevels | None = None                  # the cache-level comparisons (levels.py)
    model: costmodel.CostModel | None = None          # the cost model (costmodel.py)
    run: dict = field(default_factory=dict)           # how the run went (run_facts.py)
    verdicts: dict = field(default_factory=dict)      # section -> its verdict (questions.py)

    @property
    def thread_counts(self) -> list[int]:
        return sorted(int(t) for t in set(throughput_rows(self.part_e)["threads"]))

    def compare(self, impl: str, base: str = BASE, metric: str = THROUGHPUT) -> dict:
        """{"by_size": {size: Decision}, "per_threads": {threads: {size: Decision}}} (empty when not measured)."""
        return self.comparisons.get((metric, impl, base)) or {"by_size": {}, "per_threads": {}}

    def decision(self, impl: str, size: int, threads: int | None = None, base: str = BASE,
                 metric: str = THROUGHPUT) -> Decision | None:
        found = self.compare(impl, base, metric)
        return found["by_size"].get(size) if threads is None else found["per_threads"].get(threads, {}).get(size)

    def family(self, name: str) -> Family:
        return self.families.get(name) or Family(name)

    def family_of(self, impl: str, threads: int | None = None) -> Family:
        """The family impl's throughput decisions against the baseline stand in (its question's)."""
        name = QUESTION.get(impl, "summary")
        return self.family(f"{name}_per_threads" if threads is not None and name != "summary" else name)

    def crossover(self, impl: str, threads: int | None = None, beyond_margin: bool = True) -> int | None:
        """THE crossover of impl over the baseline (the one every section, figure and answers.json names):
        the smallest size from which impl is decided faster by more than the equivalence margin (its
        interval wholly above 1 + margin), at that size and every larger one, standing after Holm's
        correction over its question's family. A difference within the margin is what the study treats
        as none, so a ratio that moves inside the margin between runs does not move the crossover.
        beyond_margin False: decided faster at all (the interval above 1), the other one shown."""
        found = self.compare(impl)
        by_size = found["by_size"] if threads is None else found["per_threads"].get(threads, {})
        fam = self.family_of(impl, threads)
        return crossover(by_size, lambda d: fam.standing(d).higher and (d.beyond_margin or not beyond_margin))

    @property
    def reps(self) -> tuple[int, int]:
        counts = self.part_e.groupby(["impl", "mode", "msg_size", "threads"])["rep"].nunique()
        return (0, 0) if counts.empty else (int(counts.min()), int(counts.max()))

    @property
    def shown(self) -> pd.DataFrame:
        """Every row (reference programs and receive strategies too) of the one working set Part D's
        figures and tables show: averaging over working sets would mix cache levels."""
        return one_working_set(self.df, WORKING_SET_DEFAULT)

    @property
    def working_sets_shown(self) -> list[str]:
        """The working set Part D shows, when the sweep varies it (empty otherwise)."""
        return sorted(set(working_set_key(self.shown)) - {""}) if varies(self.df) else []

    @property
    def results_dir(self):
        return self.df.attrs.get("results_dir")


def equivalence_margin(meta: dict) -> float:
    """The grid's equivalence_margin (meta.json's params), else the schema's default."""
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
    """frame's data without its attrs: pandas deep-copies attrs into every frame an operation makes."""
    out = frame.copy(deep=False)
    out.attrs = {}
    return out


def _apart(profiles: pd.DataFrame) -> pd.Series:
    """The profiled runs taken while the two vCPUs were apart: no evidence for the measured runs."""
    if "cpus_apart" not in profiles:
        return pd.Series(False, index=profiles.index)
    return profiles["cpus_apart"].astype(str).str.strip().str.lower().eq("true")


def study(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> Study:
    """Every comparison and verdict of one sweep (see the module's docstring)."""
    every_working_set = _bare(population(df))
    rows = primary(every_working_set, WORKING_SET_DEFAULT) if varies(every_working_set) else every_working_set
    if profiles is None:
        profiles = df[df["srv_prof_samples"].notna()] if "srv_prof_samples" in df else df.iloc[0:0]
    profiles = with_points(_bare(profiles), rows)
    apart = _apart(profiles)
    s = Study(df=df, rows=rows, part_e=study_rows(rows), meta=meta, profiles=study_rows(profiles[~apart]),
              all_profiles=profiles[~apart], profiles_apart=study_rows(profiles[apart]),
              margin=equivalence_margin(meta))
    s.diffs = path_diffs(s.rows)
    s.comparisons = {key: decide_cells(diffs, key[1], key[2], s.margin) for key, diffs in s.diffs.items()}
    s.receive = receive_comparisons(df, s.margin)
    s.cache = cache_levels(every_working_set, meta, s.margin)
    s.model = costmodel.cost_model(s.part_e, meta, s.margin)
    s.run = run_facts(df, meta, profiles)
    s.verdicts["q3"] = thread_verdict(s.part_e, meta, s.margin)  # before the families: its comparisons are q3's
    s.families = families(s)
    s.verdicts.update(questions.verdicts(s))
    return s


# (mode, metric, the bases each path is compared with): the summary's criteria, each side's CPU per byte
COMPARED_METRICS = (("throughput", THROUGHPUT, (BASE, ONE_COPY)), ("throughput", "cpu_ns_per_byte", (BASE,)),
                    ("latency", "latency_p50_us", (BASE,)),
                    *(("throughput", metric, (BASE, ONE_COPY)) for metric in SIDE_CPU.values()))


def path_diffs(rows: pd.DataFrame) -> dict:
    """(metric, impl, base) -> {(size, threads): Diff} for COMPARED_METRICS. A comparison of two sweeps
    (analysis/comparison.py) takes each sweep's."""
    impls = native(set(rows["impl"]))
    found = {}
    for mode, metric, bases in COMPARED_METRICS:
        if metric not in rows:
            continue
        values = log_values(rows[rows["mode"] == mode], metric)
        for base in bases:
            for impl in impls:
                if impl != base:
                    found[(metric, impl, base)] = cell_diffs(values, impl, base)
    return found


def contenders(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput rows of copylab's senders with each (sender, receive strategy) as one contender
    "impl/receive" of the decisions."""
    rows = throughput_rows(df)
    rows = rows[rows["impl"].isin(native(set(rows["impl"])))].copy()
    rows["receive"] = rows["receive"].fillna("message") if "receive" in rows else "message"
    rows["impl"] = rows["impl"] + "/" + rows["receive"]
    return rows


def receive_comparisons(df: pd.DataFrame, margin: float) -> dict:
    """Every receive strategy but the primary one against the primary one, with the same sender."""
    if "receive" not in df or df["receive"].dropna().nunique() < 2:
        return {}
    rows, main = contenders(df), primary_receive(df)
    values = log_values(rows)
    found = {}
    for pair in sorted(set(rows["impl"])):
        sender, receive = pair.split("/", 1)
        if receive != main and f"{sender}/{main}" in set(rows["impl"]):
            found[(sender, receive)] = decide_cells(cell_diffs(values, pair, f"{sender}/{main}"), pair,
                                                    f"{sender}/{main}", margin)
    return found


def distinct_pairs(impls, bases) -> list[tuple[str, str]]:
    """(impl, base) for each path against each base, every unordered pair once: Holm's m counts distinct
    comparisons (A2/A1 stands for A1/A2)."""
    pairs: list[tuple[str, str]] = []
    for base in bases:
        pairs += [(impl, base) for impl in impls if impl != base and (base, impl) not in pairs]
    return pairs


def families(s: Study) -> dict[str, Family]:
    """Every family of claims, corrected (Holm)."""
    fam = {name: Family(name) for name in FAMILIES}
    paths = native(set(s.rows["impl"]))
    for _, metric, _ in CRITERIA.values():
        for impl in paths:
            fam["summary"].members += list(s.compare(impl, BASE, metric)["by_size"].values())
    for impl, key in QUESTION.items():
        found = s.compare(impl)
        fam[key].members += list(found["by_size"].values())
        fam[f"{key}_per_threads"].members += [d for by in found["per_threads"].values() for d in by.values()]
    fam["q3"].members += s.verdicts["q3"].members()
    if s.cache is not None:
        fam["q2"].members += s.cache.decisions("q2")
        fam["q3"].members += s.cache.decisions("q3_cache")
    if set(paths) - set(STUDY):  # the other paths' table exists only when a path beyond the study's ran
        for impl in paths:
            for base in (BASE, ONE_COPY):
                if impl != base:
                    fam["other_paths"].members += list(s.compare(impl, base)["by_size"].values())
    fam["other_paths"].members += [d for found in s.receive.values() for d in found["by_size"].values()]
    for metric in SIDE_CPU.values():
        for impl, base in distinct_pairs(paths, (BASE, ONE_COPY)):
            fam[COST_FAMILY].members += list(s.compare(impl, base, metric)["by_size"].values())
    return {name: f.correct() for name, f in fam.items()}
