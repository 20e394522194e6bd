"""The command line (cli.py and commands/): bad arguments, bad params files and unusable results
folders are refused in one line, before anything runs or is written."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT, copylab_inprocess, copylab_namespaces, run_copylab
from faults import TINY_GRID, assert_one_line_error, folder_state

# ------------------------------------------------------------------------------------------------
# bad inputs: the native programs' flags are tried by tests/test_native_cli.py (28 cases, one table);
# `copylab run`

RUN_BAD = [
    (["--impl", "a4"], "--impl"),
    (["--msg-size", "4"], "msg_size"),
    (["--msg-size", "lots"], "--msg-size"),
    (["--threads", "0"], "threads"),
    (["--duration", "-1"], "duration_s"),
    (["--pin-server", "zero"], "pin_server"),
    (["--threads", "-3"], "threads"),
    (["--threads", "99999"], "threads"),
    (["--msg-size", str(2**40)], "msg_size"),
    (["--msg-size", "1.5"], "--msg-size"),
    (["--duration", "nan"], "duration_s"),
    (["--duration", "1e9"], "duration_s"),
    (["--warmup", "-0.5"], "warmup_s"),
    (["--mode", "bulk"], "--mode"),
    (["--topology", "bridge"], "--topology"),
    (["--pin-client", "0-"], "pin_client"),
    (["--impl", None], "--impl"),  # required flag left out
]


@pytest.mark.parametrize("change,needle", RUN_BAD,
                         ids=[f"{flag} {value}" if value is not None else f"no {flag}" for (flag, value), _ in RUN_BAD])
def test_cli_run_bad_argument_is_refused_before_running(change, needle):
    flags = {"--impl": "a1", "--mode": "throughput", "--msg-size": "64", "--duration": "0.2"}
    flag, value = change
    flags.pop(flag, None)
    if value is not None:
        flags[flag] = value
    proc = copylab_inprocess("run", *[item for pair in flags.items() for item in pair])
    assert proc.returncode == 2
    assert proc.stdout == "", "no row may be printed for a refused point"
    assert_one_line_error(proc, needle)


# ------------------------------------------------------------------------------------------------
# bad inputs: `copylab sweep` params files (test_params.py has 28 bad grids and 4 CLI cases)

def _write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


SWEEP_BAD_FILES = [
    ("empty file", "", "mapping"),
    ("a plain string", "just some words\n", "mapping"),
    ("tab indentation", "name: t\nimpls:\n\t- a1\n", "not valid YAML"),
    ("not text", b"\xff\xfe\x00\x81binary", "not a text file"),
    ("CPU the host lacks", yaml.safe_dump({**TINY_GRID, "pin_server": "99"}), "pin_server"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,content,needle", SWEEP_BAD_FILES, ids=[w for w, _, _ in SWEEP_BAD_FILES])
def test_cli_sweep_bad_params_file_writes_nothing(tmp_path, what, content, needle):
    params = _write(tmp_path / "grid.yaml", content)
    out = tmp_path / "out"
    proc = copylab_inprocess("sweep", str(params), "--out", str(out), "--no-progress")
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert not out.exists(), "a refused grid must not create its output folder"


@pytest.mark.root
def test_cli_sweep_out_is_an_existing_file(tmp_path):
    params = _write(tmp_path / "grid.yaml", yaml.safe_dump(TINY_GRID))
    out = _write(tmp_path / "out", "someone's file\n")
    proc = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=60)
    assert_one_line_error(proc, "--out")
    assert out.read_text() == "someone's file\n"


def test_cli_sweep_params_path_is_a_folder(tmp_path):
    proc = run_copylab("sweep", str(tmp_path), "--out", str(tmp_path / "out"), timeout=60)
    assert_one_line_error(proc, "is a folder, not a regular file")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# bad inputs: `copylab report` on unusable results folders (a missing folder and a missing
# --ai-declaration file: tests/test_report.py::test_report_cli_bad_input_is_one_line_and_writes_nothing)

def _results_frame() -> pd.DataFrame:
    """A well-formed two-row results table (values only need to be valid, they are never plotted)."""
    from copylab.contract import REQUIRED_COLUMNS

    row = dict(impl="a1", mode="throughput", msg_size=4096, threads=1, rep=0, throughput_gbps=1.0,
               latency_us=30.0, cycles=float("nan"), l1_misses=float("nan"), llc_misses=float("nan"),
               context_switches=10, bytes=125_000_000, duration_s=1.0)
    return pd.DataFrame([row, {**row, "impl": "a2"}], columns=list(REQUIRED_COLUMNS))


REPORT_BAD = [
    ("no results.csv", {}, "does not exist"),
    ("empty results.csv", {"results.csv": b""}, "not a readable CSV"),
    ("broken CSV", {"results.csv": b'impl,mode,msg_size\n"a1,throughput\n\x00\xff"",,\n"x'}, "not a readable CSV"),
    ("rows longer than the header", {"results.csv": "impl,mode\na1,throughput,4096,1,0\n"}, "lacks required columns"),
    ("missing columns", {"results.csv": _results_frame().drop(columns=["cycles", "bytes"]).to_csv(index=False)},
     "cycles"),
    ("msg_size not a number", {"results.csv": _results_frame().assign(msg_size="big").to_csv(index=False)},
     "msg_size"),
    ("unknown implementation", {"results.csv": _results_frame().assign(impl="a9").to_csv(index=False)}, "a9"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,files,needle", REPORT_BAD, ids=[w for w, _, _ in REPORT_BAD])
def test_cli_report_unusable_results_folder(tmp_path, what, files, needle):
    folder = tmp_path / "results"
    folder.mkdir()
    for name, content in files.items():
        _write(folder / name, content)
    before = folder_state(folder)
    proc = copylab_inprocess("report", str(folder))
    assert_one_line_error(proc, needle)
    assert folder_state(folder) == before, "a refused report must not write into the results folder"


# ------------------------------------------------------------------------------------------------
# bad inputs: the command line itself

BAD_COMMAND_LINES = [
    (["frobnicate"], "frobnicate"),
    ([], "COMMAND"),
    (["clean", "--bogus"], "--bogus"),
    (["clean", "everything"], "everything"),
    (["sweep"], "params"),
]


@pytest.mark.parametrize("argv,needle", BAD_COMMAND_LINES,
                         ids=["copylab " + " ".join(argv) for argv, _ in BAD_COMMAND_LINES])
def test_cli_bad_command_line(argv, needle):
    assert_one_line_error(copylab_inprocess(*argv), needle)


# ------------------------------------------------------------------------------------------------
# smaller

def test_run_with_a_cpu_the_host_lacks_is_refused_before_anything_starts(native_build):
    before = copylab_namespaces()
    proc = run_copylab("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--pin-server", "7",
                       timeout=60)
    assert proc.returncode == 2
    assert_one_line_error(proc, "--pin-server")
    assert copylab_namespaces() == before


def test_cli_version_names_the_version_and_the_git_revision():
    import tomllib

    from copylab.buildinfo import build_id
    from copylab.hostmeta import git_revision

    proc = run_copylab("--version", timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert proc.stdout == f"copylab {version}, git revision {git_revision()}, native build {build_id()}\n"


@pytest.mark.slow
@pytest.mark.parametrize("asked, msg_size, used", [(1, 4096, 4 * 4096), (4097, 4096, 4 * 4096),
                                                    (100_000, 4096, 25 * 4096)])
def test_the_working_set_recorded_is_the_one_used(asked, msg_size, used):
    """`--working-set 1` was recorded as 1 while 4 messages were cycled: below one message (or four)
    it is rounded up to whole messages, at least four, and the row says what was used."""
    import json

    proc = run_copylab("run", "--impl", "a1", "--mode", "throughput", "--msg-size", str(msg_size), "--duration", "0.2",
                       "--warmup", "0.05", "--topology", "loopback", "--working-set", str(asked), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["status"] == "ok" and row["working_set_bytes"] == used == row["ring_messages"] * msg_size



@pytest.mark.slow
def test_a_reader_that_goes_away_ends_the_command_quietly(native_build, tmp_path):
    """`copylab run --show-output | head -1` ended in "error: Broken pipe (EPIPE)", exit 1: the reader
    that closed the pipe is no error of the run's. Quiet, 141 (128 + SIGPIPE) as a C program has."""
    import subprocess
    import sys

    run = [sys.executable, "-m", "copylab", "run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096",
           "--duration", "0.2", "--warmup", "0.05", "--topology", "loopback", "--show-output"]
    errors = tmp_path / "stderr.txt"
    # head -1 goes after one line, or after all of them when they came at once (then nothing fails): a
    # reader that goes at once makes the row's first write meet a closed pipe every time
    script = '"$@" 2>"$ERRORS" | true; echo "${PIPESTATUS[0]}"'
    proc = subprocess.run(["bash", "-c", script, "bash", *run], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={**os.environ, "ERRORS": str(errors)})
    stderr = errors.read_text()
    assert proc.stdout == "141\n", proc.stdout
    assert "Broken pipe" not in stderr and "copylab run: error" not in stderr and "Traceback" not in stderr, stderr[-500:]
    assert "[server] $" in stderr, "the program output --show-output prints still goes to stderr"


def test_an_error_naming_a_path_with_a_line_break_or_a_bidi_control_is_still_one_line(tmp_path):
    """A message is one terminal line whatever the path in it holds: a line break or a right-to-left
    override (which reordered the rest of the line) is shown as an escape (cli.py, escape.one_line)."""
    proc = run_copylab("report", str(tmp_path / "no\nsuch\u202edir"), timeout=60)
    assert_one_line_error(proc, "no\\nsuch\\u202edir")


def test_every_command_says_what_it_does_in_its_help():
    """`copylab COMMAND --help` has a description paragraph between the usage and the arguments, the
    command's own words (issue 47: `copylab sweep --help` had none)."""
    from copylab.cli import build_parser
    from copylab.commands import COMMANDS

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(commands) == set(COMMANDS)
    for name, sub in commands.items():
        text = sub.format_help()
        usage, _, rest = text.partition("\n\n")
        description = rest.split("\n\n")[0]
        assert usage.startswith(f"usage: copylab {name}") and not description.startswith(("positional", "options")), \
            (name, text[:400])
        assert description.lstrip().startswith(f"`copylab {name}"), (name, description)
        assert len(description.split()) >= 12, (name, description)
