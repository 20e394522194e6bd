"""The statistics every verdict of copylab rests on, at the bottom of the package: the sweep (planning
its extra passes, judging runs taken apart) and the analysis (the Study, comparisons of two sweeps)
both call it, and it imports nothing of either.

- decide: what a ratio interval decides (Outcome, Decision, classify), its p-values, Holm's
  correction over a family of claims (Family), the crossover rule, one t quantile;
- passes: a sweep's passes as samples: pass-adjusted log values, paired differences per cell, pooling
  over thread counts, the decision of each, and two sweeps' differences.
"""

from .decide import (ALPHA, CONFIDENCE, DEFAULT_MARGIN, Decision, Family, Outcome, Verdict, classify, crossover, holm,
                     mean_interval, p_values, t_quantile, target_half_width, trailing_start, welch_interval)
from .passes import (Diff, between_sweeps, cell_diffs, compare_values, decide_cells, decide_diff, log_values,
                     pass_effects, pass_tables, pass_values, point_diff, point_stats, pool, sample_diff)

__all__ = ["ALPHA", "CONFIDENCE", "DEFAULT_MARGIN", "Decision", "Diff", "Family", "Outcome", "between_sweeps",
           "cell_diffs", "classify", "compare_values", "crossover", "decide_cells", "decide_diff", "holm",
           "log_values", "mean_interval", "p_values", "pass_effects", "pass_tables", "pass_values", "point_diff",
           "point_stats", "pool", "sample_diff", "t_quantile", "target_half_width", "trailing_start",
           "Verdict", "welch_interval"]
