"""Q4. At what message size does one-copy outperform two-copy on your system?

The answer's sentence, its tables and answers.json's q4_one_copy_vs_two_copy, from the Study:
the decided crossover (crossover.py, shared with Q5) and the rule-chosen explanation of the copy
the one-copy path removes."""

from __future__ import annotations

import pandas as pd

from ..roles import ONE_COPY
from ..study import Study
from . import crossover

KEY, FAMILY = "q4_one_copy_vs_two_copy", "q4"


def answer(study: Study) -> dict:
    return crossover.answer(study, ONE_COPY, FAMILY, ["removed_copy"])


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    """(caption, table): the decisions per size, then per thread count."""
    return [("", crossover.decision_table(study, ONE_COPY, FAMILY)),
            ("Per thread count (decision, ratio and 95% interval):", crossover.per_threads_table(study, ONE_COPY))]
