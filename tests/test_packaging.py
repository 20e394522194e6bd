"""The project's own files install everything: one source of truth for Python dependencies."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_installs_this_package_with_its_extras():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert any(str(d).startswith("python=3.11") for d in deps)
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert pip_sections, "environment.yml has no pip section"
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    wanted = "-e .[" + ",".join(sorted(extras)) + "]"
    assert pip_sections[0] == [wanted], f"pip section should be exactly [{wanted!r}] so pyproject.toml stays the one source"


def test_pyproject_dependencies_are_bounded_and_complete():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {}
    for spec in project["dependencies"] + project["optional-dependencies"]["test"]:
        name = re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower()
        names[name] = spec
        assert "<" in spec and ">=" in spec, f"{spec}: major version must be bounded"
    for needed in ("jupyterlab", "papermill", "ipywidgets", "anywidget", "pandas", "plotly", "kaleido",
                   "nbconvert", "nbclient", "nbformat", "ipykernel", "pyyaml", "tqdm", "pytest", "nbmake"):
        assert needed in names, f"{needed} missing from pyproject.toml"
    assert names["kaleido"].startswith("kaleido>=1"), "plotly 7 needs kaleido >= 1"


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make report" in readme
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[-1] == "make test", commands


def test_debian_package_list_covers_the_tool_chain():
    script = (ROOT / "tools" / "install-debian-deps.sh").read_text()
    for pkg in ("gcc", "make", "linux-perf", "iproute2", "chromium", "pandoc", "texlive-xetex",
                "texlive-fonts-recommended", "texlive-plain-generic", "poppler-utils", "strace"):
        assert re.search(rf"(^|\s){re.escape(pkg)}(\s|$)", script, re.M), f"{pkg} not installed by the Makefile"


def test_copylabs_processes_import_the_notebook_tools_without_building_the_iri_grammar():
    """copylab/__init__.py keeps jsonschema from importing rfc3987_syntax (an Earley parser built at
    import, 1.3 s of CPU in every sweep and report), and nbformat still validates a notebook."""
    import subprocess
    import sys

    code = ("import copylab, sys, nbformat, papermill, nbconvert\n"
            "nbformat.validate(nbformat.read('notebooks/analysis.ipynb', as_version=4))\n"
            "print(sys.modules.get('rfc3987_syntax', 'absent'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "None"
