"""Writes the golden sections (tests/test_sections.py) from the stored SYNTHETIC default-like sweep:
run it after changing a template on purpose, read the diff by eye, and commit both.

    .venv/bin/python tests/data/golden/update.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

from test_sections import GOLDEN, rendered  # noqa: E402

if __name__ == "__main__":
    for name, text in rendered().items():
        (HERE / f"{name}.md").write_text(text)
    print(f"wrote {', '.join(GOLDEN)} in {HERE}")
