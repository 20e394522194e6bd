"""The report's plotly figures. Every figure states the system configuration it was measured on.

Each public function takes (df, meta) from analysis.load_results (those showing comparisons: the
Study, analysis.study) and returns a plotly Figure, or
a FigureNote when the metric it plots was not measured on this host (saying what is missing,
why, and how to get it): a blank chart would look like a result. Modules: style (what every
figure shares), study (Part D), evidence (behind the answers), profiles (where the CPU goes), cost (the cost model), cache (the
working set across the cache levels).
"""

from .cache import cost_vs_working_set
from .cost import cost_per_message
from .evidence import ratio_to_baseline, receive_strategies, user_copy_per_message, zerocopy_completions
from .profiles import cpu_breakdown, icicle
from .style import IMPL_COLORS, FigureNote, setup_rendering
from .study import (Merged, cache_misses_vs_size, cpu_time_per_byte_vs_size, cycles_per_byte_vs_size, latency_vs_threads,
                    throughput_vs_size, throughput_vs_threads)

ALL_FIGURES = (
    ("throughput-vs-size", throughput_vs_size),
    ("latency-vs-threads", latency_vs_threads),
    ("cache-misses-vs-size", cache_misses_vs_size),
    ("cycles-per-byte-vs-size", cycles_per_byte_vs_size),
    ("cpu-time-per-byte-vs-size", cpu_time_per_byte_vs_size),
    ("throughput-vs-threads", throughput_vs_threads),
    ("zerocopy-completions", zerocopy_completions),
    ("receive-strategies", receive_strategies),
    ("cpu-breakdown", cpu_breakdown),
)

# the figures that show the Study's comparisons take the Study (analysis.study), not (df, meta)
STUDY_FIGURES = (("user-copy-per-message", user_copy_per_message), ("ratio-to-baseline", ratio_to_baseline),
                 ("cost-per-message", cost_per_message))
# drawn only for a sweep across working sets (params/cache.yaml), in Q2's cell: cost_vs_working_set

__all__ = ["IMPL_COLORS", "FigureNote", "Merged", "setup_rendering", "icicle", "ALL_FIGURES", "STUDY_FIGURES",
           "cost_vs_working_set", *(name.replace("-", "_") for name, _ in ALL_FIGURES + STUDY_FIGURES)]
