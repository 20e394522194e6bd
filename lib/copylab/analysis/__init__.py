"""Turn a sweep's results.csv + meta.json into tables, crossovers and the Part E answers.

Everything the analysis notebook states is computed here from the data of one sweep, so the
notebook stays narrative + calls and every number in the prose is generated, never typed.
Modules by what they decide: load (the results contract, derived metrics), stats (means and
intervals), crossover (the rule), findings (each answer's numbers), prose (its words), answers
(answers.json), tables (evidence next to the answers).
"""

from ..contract import GROUP_KEYS, REQUIRED_COLUMNS
from ..fmt import (IMPL_LABELS, fmt_num, fmt_pct, fmt_size, impl_name, markdown_table, md_escape,
                   plural, system_fields, system_summary)
from .answers import QUESTIONS, answers, write_answers
from .crossover import crossover
from .load import (METRICS, ROUND_TRIP_METRICS, add_derived, load_meta, load_profiles, load_results,
                   resolve_results_dir)
from .stats import aggregate, measured, t_critical_95, unmeasured_reason
from .tables import (copy_evidence_text, crossover_table, harness_table, per_impl_table, throughput_by_size,
                     unanswered_markdown, unstable_points, violations_table)

__all__ = [
    "GROUP_KEYS", "REQUIRED_COLUMNS", "IMPL_LABELS", "METRICS", "ROUND_TRIP_METRICS", "QUESTIONS",
    "fmt_num", "fmt_pct", "fmt_size", "impl_name", "markdown_table", "md_escape", "plural",
    "system_fields", "system_summary", "answers", "write_answers", "crossover", "add_derived",
    "load_meta", "load_profiles", "load_results", "resolve_results_dir", "aggregate", "measured", "t_critical_95",
    "unmeasured_reason", "copy_evidence_text", "crossover_table", "per_impl_table",
    "throughput_by_size", "unanswered_markdown", "violations_table", "harness_table", "unstable_points",
]
