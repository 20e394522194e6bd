"""Turn a sweep's results.csv + meta.json into one Study, and the Study into the report's text.

Everything the analysis notebook states is computed here from the data of one sweep, so the
notebook stays narrative + calls and every number in the prose is generated, never typed. Three
floors, each importing only the floors below it:

- compute: load (the results contract, derived metrics), validate (types, ranges, duplicates on
  load), roles (which implementation plays which part, from the registry), stats (means and
  intervals over repetitions), decisions (the one test: win/loss/equivalent/undecided, Holm),
  patterns (Q6's and Q3's comparisons), findings (each answer's other numbers), profiles and
  stacks (the profiled runs and their folded stacks), peers (the reference programs' numbers),
  run_facts (how the run went: time, passes, placement, steal, precision), levels (the cache-level
  study's comparisons), comparison (two sweeps' changes, for copylab compare: built like the Study),
  costmodel (each path's cost per message and per byte, and the crossover they predict);
- explain: explain, explain_copies and explain_surprise (explanations chosen by rules from the
  evidence);
- study: `study(df, meta, profiles) -> Study`, built once per report from one population of rows:
  every comparison's decision, the families of claims with Holm's correction, the explanations.
  The only caller of the decision code;
- render: the report's words, one Jinja2 template per section (analysis/templates/);
- text (the package analysis/text/): one module per section and question, each taking a Study and
  returning Markdown and tables; answers.json is text/answers.py's serialisation of the Study.
"""

from ..contract import GROUP_KEYS, REQUIRED_COLUMNS
from ..fmt import (IMPL_LABELS, fmt_num, fmt_pct, fmt_size, impl_name, markdown_table, md_escape,
                   plural, system_fields, system_summary)
from . import peers, roles
from .findings import crossover_by_means
from .load import (METRICS, ROUND_TRIP_METRICS, add_derived, load_meta, load_profiles, load_results,
                   resolve_results_dir)
from .stats import aggregate, measured, t_critical_95, unmeasured_reason
from .study import Study, study
from .text import (configuration, crossover, data_paths, harness, methods, profile, q1, q2, q3, q4, q5, q6, run,
                   summary, tables)
from .text.answers import QUESTIONS, answers, document, write_answers
from .text.tables import per_impl_table, stability_text, throughput_by_size, unanswered_markdown, unstable_points

__all__ = [
    "GROUP_KEYS", "REQUIRED_COLUMNS", "IMPL_LABELS", "METRICS", "ROUND_TRIP_METRICS", "QUESTIONS", "Study",
    "fmt_num", "fmt_pct", "fmt_size", "impl_name", "markdown_table", "md_escape", "plural",
    "system_fields", "system_summary", "answers", "document", "write_answers", "crossover_by_means", "add_derived",
    "load_meta", "load_profiles", "load_results", "resolve_results_dir", "aggregate", "measured", "t_critical_95",
    "unmeasured_reason", "per_impl_table", "stability_text", "throughput_by_size", "unanswered_markdown",
    "unstable_points", "configuration", "crossover", "data_paths", "harness", "methods", "profile", "q1", "q2", "run",
    "q3", "q4", "q5", "q6", "peers", "roles", "study", "summary", "tables",
]
