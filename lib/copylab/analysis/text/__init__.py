"""The text layer: every sentence and table of the report, made from a Study (analysis/study.py).

One module per section and question, each taking a Study and returning Markdown and tables; none
computes a decision (they read the Study's). Where a sentence is made:

- methods.py      "How the decisions are made": the statistical standard and the families, stated once
- summary.py      "Summary for engineers": the path to use per size and criterion
- configuration.py, harness.py, data_paths.py, profile.py, tables.py: the system, the harness, the
                  copies, the profiles, the evidence tables and the stability list
- q1.py ... q6.py the Part E answers (q4.py and q5.py share crossover.py: "from which size X beats A1")
- run.py          "How this run went": time against the budget, passes, placement, steal, precision
- answers.py      answers.json: the Study serialised with these texts
- words.py        how a decision, its ratio and its interval are written, everywhere

A new section is a new module here
with `markdown(study) -> str` (and `tables(study)` when it has tables), called from its cell of
notebooks/analysis.ipynb.
"""
