"""External tools copylab uses, found one way everywhere (doctor, report, figures).

Each tool has the names to look for on PATH, an environment variable that overrides them where
the tool's users expect one, and the Debian line that installs it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    key: str
    names: tuple[str, ...]
    install: str
    env_var: str | None = None


TOOLS = {
    # kaleido renders static figures with it; kaleido itself honours BROWSER_PATH
    "chromium": Tool("chromium", ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"),
                     "apt-get install chromium (or set BROWSER_PATH to a Chrome/Chromium binary)",
                     env_var="BROWSER_PATH"),
    "xelatex": Tool("xelatex", ("xelatex",),
                    "apt-get install texlive-xetex texlive-fonts-recommended texlive-plain-generic pandoc"),
    "pandoc": Tool("pandoc", ("pandoc",), "apt-get install pandoc"),
    "pdftoppm": Tool("pdftoppm", ("pdftoppm",), "apt-get install poppler-utils"),
}


def find(key: str) -> str | None:
    """Path of the tool, or None. An environment override that names no executable counts as absent."""
    tool = TOOLS[key]
    if tool.env_var and os.environ.get(tool.env_var):
        path = os.environ[tool.env_var]
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    for name in tool.names:
        path = shutil.which(name)
        if path:
            return path
    return None


def describe_missing(key: str) -> str:
    """Why find() came back empty, in one phrase."""
    tool = TOOLS[key]
    if tool.env_var and os.environ.get(tool.env_var):
        return f"{tool.env_var}={os.environ[tool.env_var]} is not an executable file"
    return f"{key} not found on PATH ({', '.join(tool.names)})"


def install_hint(key: str) -> str:
    return TOOLS[key].install
