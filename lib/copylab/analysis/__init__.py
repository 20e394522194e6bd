"""Turn a sweep's results.csv + meta.json into one Study, and the Study into the report's words.

Everything the analysis notebook states is computed here from the data of one sweep, so the notebook
stays narrative and calls, and every number in the prose is generated, never typed. Three floors,
each importing only the floors below it (and copylab.inference, the statistics under them all):

- compute: load (the results contract, derived metrics), validate (types, ranges, duplicates on
  load), roles (which implementation plays which part, from the registry), stats (means and
  intervals over repetitions), profiles and stacks (the profiled runs and their folded stacks),
  evidence (what a profiled point shows), peers (the reference programs' numbers), run_facts (how
  the run went), levels (the cache-level comparisons), threads (Q3's comparisons), costmodel (each
  path's cost per message and per byte, and the crossover they predict), comparison (two sweeps'
  changes, for copylab compare: built like the Study);
- decide: study (`study(df, meta, profiles) -> Study`, built once per report: every comparison's
  decision, the families of claims with Holm's correction, the crossovers, the cost model) and
  questions (each section's verdict and its evidence, chosen from the Study: no sentence);
- words: render (one Jinja2 template per section, analysis/templates/, given the verdicts), sections
  (what each notebook cell shows: a rendered template and its tables), tables (the verdicts as
  tables) and document (answers.json, the verdicts serialised).
"""

from ..contract import GROUP_KEYS, REQUIRED_COLUMNS
from ..fmt import (IMPL_LABELS, fmt_num, fmt_pct, fmt_size, impl_name, markdown_table, md_escape, plural,
                   system_fields, system_summary)
from . import peers, roles
from .document import QUESTIONS, document, write_answers
from .load import (METRICS, ROUND_TRIP_METRICS, add_derived, load_meta, load_profiles, load_results,
                   resolve_results_dir)
from .stats import aggregate, measured, unmeasured_reason
from .study import Study, study

__all__ = [
    "GROUP_KEYS", "REQUIRED_COLUMNS", "IMPL_LABELS", "METRICS", "ROUND_TRIP_METRICS", "QUESTIONS", "Study",
    "fmt_num", "fmt_pct", "fmt_size", "impl_name", "markdown_table", "md_escape", "plural", "system_fields",
    "system_summary", "document", "write_answers", "add_derived", "load_meta", "load_profiles", "load_results",
    "resolve_results_dir", "aggregate", "measured", "unmeasured_reason", "peers", "roles", "study",
]
