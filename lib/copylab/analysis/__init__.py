"""Turn a sweep's results.csv + meta.json into tables, decisions and the Part E answers.

Everything the analysis notebook states is computed here from the data of one sweep, so the
notebook stays narrative + calls and every number in the prose is generated, never typed.
Modules by what they decide: load (the results contract, derived metrics), validate (types,
ranges, duplicates on load), roles (which implementation plays which part, from the registry),
stats (means and intervals), significance (Welch and Fieller), decisions (win/loss/equivalent/
undecided), crossover (the mean rule), findings (each answer's numbers), profiles and stacks (the
profiled runs and their folded stacks), explain and explain_copies (explanations chosen by rules
from the evidence), evidence_prose (their words), decided (Q4/Q5), scaling (Q3), patterns and
surprise (Q6), summary (for engineers), harness and peers (the reference programs), prose (words),
answers (answers.json), tables (evidence next to the answers), configuration (the host and tools).
"""

from ..contract import GROUP_KEYS, REQUIRED_COLUMNS
from ..fmt import (IMPL_LABELS, fmt_num, fmt_pct, fmt_size, impl_name, markdown_table, md_escape,
                   plural, system_fields, system_summary)
from . import configuration, decided, evidence_prose, harness, peers, roles, summary, surprise
from .answers import QUESTIONS, answers, write_answers
from .crossover import crossover
from .load import (METRICS, ROUND_TRIP_METRICS, add_derived, load_meta, load_profiles, load_results,
                   resolve_results_dir)
from .stats import aggregate, measured, t_critical_95, unmeasured_reason
from .tables import (copy_evidence_text, per_impl_table, stability_text, throughput_by_size, unanswered_markdown,
                     unstable_points)

__all__ = [
    "GROUP_KEYS", "REQUIRED_COLUMNS", "IMPL_LABELS", "METRICS", "ROUND_TRIP_METRICS", "QUESTIONS",
    "fmt_num", "fmt_pct", "fmt_size", "impl_name", "markdown_table", "md_escape", "plural",
    "system_fields", "system_summary", "answers", "write_answers", "crossover", "add_derived",
    "load_meta", "load_profiles", "load_results", "resolve_results_dir", "aggregate", "measured", "t_critical_95",
    "unmeasured_reason", "copy_evidence_text", "per_impl_table", "stability_text", "throughput_by_size",
    "unanswered_markdown", "unstable_points", "configuration", "decided", "evidence_prose", "harness", "peers", "roles",
    "summary", "surprise",
]
