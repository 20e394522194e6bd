"""`copylab bundle` (issue 15): the course submission from a real quick sweep, unzipped into an
empty folder and used there as a grader would (make, a smoke run, the run-all script, the plot
scripts), and bad input refused in one line with nothing written."""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from conftest import QUICK_AUTHOR, QUICK_DECLARATION, copylab_inprocess, run_copylab
from copylab import report, report_display
from copylab.analysis import load_results
from copylab.bundle import csource
from copylab.errors import CopylabError
from faults import UNPRIVILEGED, assert_one_line_error, folder_state
from native_helpers import _LISTENING

ROLL = QUICK_AUTHOR["roll_no"]
NAME = f"{ROLL}_PA02"
AUTHOR = QUICK_AUTHOR["author"]
REPO = QUICK_AUTHOR["repo_url"]
DECLARATION = QUICK_DECLARATION
PLOT_NAMES = ("throughput_vs_size", "latency_vs_threads", "cache_misses_vs_size", "cycles_per_byte_vs_size")
# what a plot script may import: matplotlib and a little of the standard library, nothing that reads data
PLOT_IMPORTS = {"json", "math", "textwrap", "pathlib", "matplotlib", "matplotlib.pyplot"}
PER_BYTE = {"cycles_per_byte": "cycles", "srv_cycles_per_byte": "srv_cycles", "cli_cycles_per_byte": "cli_cycles",
            "l1_misses_per_byte": "l1_misses", "llc_misses_per_byte": "llc_misses"}
TEMPLATE_DECLARATION = (Path(__file__).resolve().parents[1] / "params" / "AI_DECLARATION.md").read_text().strip()
SWEEP_FILES = ("results.csv", "meta.json", "report.pdf", "analysis.ipynb", "report.json")


# ------------------------------------------------------------------------------------------------
# fixtures: one reported copy of the quick sweep, one bundle of it, unzipped and built once

@pytest.fixture(scope="module")
def reported(quick_report) -> Path:
    """The quick sweep with a report built with author fields (conftest's, shared with test_report)."""
    return quick_report["dir"]


def extract(archive: Path, into: Path) -> None:
    """As unzip does: the files, and their modes from each entry's external_attr."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, into))
            mode = (info.external_attr >> 16) & 0o7777
            if mode:
                path.chmod(mode)


@pytest.fixture(scope="module")
def bundle(reported, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("bundle-out")
    # no flags but --out: the roll number and the author fields come from the report
    proc = run_copylab("bundle", str(reported), "--out", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr
    unpacked = tmp_path_factory.mktemp("unzipped")
    assert not any(unpacked.iterdir())
    extract(out / f"{NAME}.zip", unpacked)
    return {"out": out, "dir": unpacked / NAME, "proc": proc, "source": reported}


@pytest.fixture(scope="module")
def built(bundle) -> dict:
    # as a grader types it: not as a sub-make of whatever started pytest (`make test`)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make"], cwd=bundle["dir"], capture_output=True, text=True, timeout=300,
                          env={**env, "LC_ALL": "C"})
    return {**bundle, "make": proc}


def script(bundle: dict, name: str) -> Path:
    return bundle["dir"] / f"{ROLL}_Part_D_{name}.py"


# ------------------------------------------------------------------------------------------------
# the folder and the archive

@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
def test_bundle_holds_the_course_files_under_the_course_names(bundle):
    names = sorted(p.name for p in bundle["dir"].iterdir())
    expected = sorted([*(f"{ROLL}_Part_{p}_{side}.c" for p in ("A1", "A2", "A3") for side in ("Server", "Client")),
                       "Makefile", f"{ROLL}_Part_C_run_all.sh",
                       *(f"{ROLL}_Part_D_{n}.py" for n in PLOT_NAMES),
                       f"{ROLL}_results.csv", f"{ROLL}_Report.pdf", "README.md", "bundle.json"])
    assert names == expected
    out_lines = bundle["proc"].stdout.strip().splitlines()
    assert out_lines == [str(bundle["out"] / NAME), str(bundle["out"] / f"{NAME}.zip")]
    # the folder next to the archive is the same bundle, and nothing else was left in --out
    assert sorted(p.name for p in bundle["out"].iterdir()) == [NAME, f"{NAME}.zip"]
    with zipfile.ZipFile(bundle["out"] / f"{NAME}.zip") as zf:
        assert {n.split("/")[0] for n in zf.namelist()} == {NAME}
        mode = zf.getinfo(f"{NAME}/{ROLL}_Part_C_run_all.sh").external_attr >> 16
        assert mode & 0o111, f"run-all script not executable in the archive: {oct(mode)}"


def test_copies_and_provenance_name_the_results_folder(bundle):
    folder, source = bundle["dir"], bundle["source"]
    assert (folder / f"{ROLL}_results.csv").read_bytes() == (source / "results.csv").read_bytes()
    assert (folder / f"{ROLL}_Report.pdf").read_bytes() == (source / "report.pdf").read_bytes()
    meta = json.loads((source / "meta.json").read_text())
    record = json.loads((folder / "bundle.json").read_text())
    assert record["roll_no"] == ROLL and record["author"] == AUTHOR and record["repo_url"] == REPO
    assert record["ai_declaration"] == DECLARATION and record["report_fields_checked"] is True
    results = record["results"]
    assert results["sweep"] == "quick" and results["results_dir"] == str(source)
    assert (results["started_at"], results["finished_at"]) == (meta["started_at"], meta["finished_at"])
    assert results["git_revision"] == meta["git_revision"]
    assert record["copylab_version"] and record["sources"]["git_revision"]
    for name, digest in record["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    readme = unescape_markdown((folder / "README.md").read_text())
    for text in (ROLL, AUTHOR, REPO, DECLARATION, "make", f"sudo ./{ROLL}_Part_C_run_all.sh",
                 f"python3 {ROLL}_Part_D_throughput_vs_size.py", str(source), meta["started_at"],
                 meta["git_revision"]):
        assert text in readme, text


# ------------------------------------------------------------------------------------------------
# the C sources, built and run in the bundle's own folder

@pytest.mark.slow
def test_make_builds_every_program_without_warnings(built):
    proc = built["make"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower() and not proc.stderr.strip(), proc.stderr
    for program in ("a1_server", "a2_server", "a3_server", "client"):
        assert os.access(built["dir"] / program, os.X_OK), program


def test_sources_are_self_contained_and_name_their_origin(bundle):
    clients = {(bundle["dir"] / f"{ROLL}_Part_{p}_Client.c").read_text() for p in ("A1", "A2", "A3")}
    assert len(clients) == 1, "the three client files should be the same program"
    for part in ("A1", "A2", "A3"):
        text = (bundle["dir"] / f"{ROLL}_Part_{part}_Server.c").read_text()
        assert not re.search(r'^\s*#\s*include\s+"', text, re.M), "a project include is left"
        for origin in ("message.h", "server_common.c", f"{part.lower()}_server.c"):
            assert f"/* ==== native/{origin} " in text, origin


def test_smoke_run_in_the_bundle_folder(built):
    assert built["make"].returncode == 0
    folder = built["dir"]
    server = subprocess.Popen(["./a1_server", "--bind", "127.0.0.1", "--port", "0", "--msg-size", "4096",
                               "--mode", "throughput", "--json"], cwd=folder, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        match = _LISTENING.search(line)
        assert match, f"server said {line!r}"
        client = subprocess.run(["./client", "--connect", "127.0.0.1", "--port", match.group(2),
                                 "--msg-size", "4096", "--mode", "throughput", "--threads", "1",
                                 "--duration", "0.2", "--warmup", "0.05", "--verify", "--json"],
                                cwd=folder, capture_output=True, text=True, timeout=60)
        assert client.returncode == 0, client.stderr
        result = json.loads(client.stdout.strip().splitlines()[-1])
        assert result["verified"] is True and result["bytes"] > 0
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
    assert json.loads(out.strip().splitlines()[-1])["bytes"] > 0


# ------------------------------------------------------------------------------------------------
# Part C: the run-all script

def our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"{ROLL}-")]


def run_all(folder: Path, **grid: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MSG_SIZES": "4096", "THREADS": "1", "DURATION_S": "0.2", "WARMUP_S": "0.1",
           "PIN_SERVER": "", "PIN_CLIENT": "", **grid}
    return subprocess.run([f"./{ROLL}_Part_C_run_all.sh"], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
def test_run_all_script_sweeps_a_tiny_grid_and_reruns_cleanly(built):
    assert built["make"].returncode == 0
    folder = built["dir"]
    proc = run_all(folder, IMPLS="a1 a2 a3", MODES="throughput latency", RECEIVES="message")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert our_namespaces() == []
    with open(folder / "results" / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted((r["impl"], r["mode"]) for r in rows) == sorted(
        (i, m) for i in ("a1", "a2", "a3") for m in ("throughput", "latency"))
    for row in rows:
        assert row["status"] == "ok", row["error"]
        assert float(row["throughput_gbps"]) > 0 and float(row["bytes"]) > 0
        assert row["msg_size"] == "4096" and row["threads"] == "1"
        point = folder / "results" / row["point_id"]
        assert {"server.json", "client.json"} <= {p.name for p in point.iterdir()}
        assert row["point_id"] == f"{row['impl']}_{row['mode']}_4096B_1thr_rmessage_rep0_d0.2s_w0.1s"
        assert row["receive"] == "message"
        if shutil.which("perf"):  # software events are there with or without a PMU
            assert float(row["srv_task_clock_ms"]) > 0 and float(row["cli_context_switches"]) >= 0
    # the CSV meets the results contract: copylab's own analysis reads it
    df, _ = load_results(folder / "results")
    assert len(df) == 6
    again = run_all(folder, IMPLS="a1", MODES="throughput", RECEIVES="bulk")
    assert again.returncode == 0, again.stderr
    with open(folder / "results" / "results.csv", newline="") as handle:
        assert [(r["impl"], r["mode"], r["receive"]) for r in csv.DictReader(handle)] == [
            ("a1", "throughput", "bulk")]
    assert our_namespaces() == []


def test_run_all_script_refuses_without_root(bundle):
    # a folder the user nobody can reach (pytest's own tmp folders are 0700)
    place = Path(tempfile.mkdtemp(prefix="copylab-bundle-test-"))
    try:
        place.chmod(0o755)
        copy = place / f"{ROLL}_Part_C_run_all.sh"
        shutil.copy2(bundle["dir"] / copy.name, copy)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(copy)],
                              capture_output=True, text=True, timeout=60, cwd="/")
        assert proc.returncode == 2
        assert proc.stderr.strip().count("\n") == 0 and "root" in proc.stderr, proc.stderr
        assert sorted(p.name for p in place.iterdir()) == [copy.name]
    finally:
        shutil.rmtree(place)


# ------------------------------------------------------------------------------------------------
# Part D: the plot scripts

def unescape_markdown(text: str) -> str:
    """Markdown as it reads rendered: backslash escapes of punctuation resolved."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def constants(path: Path) -> dict:
    """A plot script's DATA (SERIES, METRICS, ...): the JSON text of its one `DATA = json.loads(...)`
    assignment, read without running the script."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["DATA"]:
            call = node.value
            assert isinstance(call, ast.Call) and ast.unparse(call.func) == "json.loads" and len(call.args) == 1
            return json.loads(ast.literal_eval(call.args[0]))
    raise AssertionError(f"{path.name} has no DATA = json.loads(...)")


def test_plot_scripts_import_only_matplotlib_and_read_no_file(bundle):
    for name in PLOT_NAMES:
        tree = ast.parse(script(bundle, name).read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module)
            elif isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                assert called not in ("open", "read_text", "read_bytes", "read_csv", "loadtxt"), (name, called)
        assert imported <= PLOT_IMPORTS, (name, imported - PLOT_IMPORTS)


@pytest.mark.slow
def test_plot_scripts_write_their_pngs_without_pandas(bundle, tmp_path):
    # isolated mode, pandas and csv made unimportable, run from an empty folder
    runner = ("import runpy, sys\n"
              "for blocked in ('pandas', 'csv'):\n"
              "    sys.modules[blocked] = None\n"
              "runpy.run_path(sys.argv[1], run_name='__main__')\n")
    env = {"PATH": os.environ["PATH"], "MPLCONFIGDIR": str(tmp_path / "mpl"), "LC_ALL": "C"}
    for name in PLOT_NAMES:
        path = script(bundle, name)
        png = path.with_suffix(".png")
        proc = subprocess.run([sys.executable, "-I", "-c", runner, str(path)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, name


def expected_means(csv_path: Path, mode: str, column: str, by_receive: bool) -> dict:
    """(impl, receive or None, msg_size, threads) -> mean over repetitions of column, None when no
    repetition has a value: computed from the CSV with the standard library, independently of copylab."""
    values: dict = {}
    with open(csv_path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["status"] not in ("ok", "") or row["mode"] != mode:
                continue
            if column in PER_BYTE:
                raw, nbytes = row[PER_BYTE[column]], row["bytes"]
                value = float(raw) / float(nbytes) if raw and nbytes and float(nbytes) > 0 else None
            else:
                value = float(row[column]) if row[column] else None
            key = (row["impl"], row["receive"] if by_receive else None, int(row["msg_size"]), int(row["threads"]))
            values.setdefault(key, [])
            if value is not None:
                values[key].append(value)
    return {key: statistics.fmean(v) if v else None for key, v in values.items()}


def test_plot_literals_equal_the_results_table(bundle):
    csv_path = bundle["dir"] / f"{ROLL}_results.csv"
    for name in PLOT_NAMES:
        found = constants(script(bundle, name))
        x, panel, mode = found["X"], found["PANEL"], found["MODE"]
        columns = [m[0] for m in found["METRICS"]]
        by_receive = any("receive" in entry for entry in found["SERIES"])
        for column in columns:
            expected = expected_means(csv_path, mode, column, by_receive)
            got = {}
            for entry in found["SERIES"]:
                for x_value, y in zip(entry[x], entry[column], strict=True):
                    key = {"impl": entry["impl"], x: x_value, panel: entry[panel]}
                    got[(key["impl"], entry.get("receive"), key["msg_size"], key["threads"])] = y
            assert got == expected, (name, column)
            if all(v is None for v in expected.values()):
                assert found["NOT_MEASURED"].get(column), f"{name}: {column} empty without a reason"
            else:
                assert column not in found["NOT_MEASURED"], (name, column)


# ------------------------------------------------------------------------------------------------
# a second bundle, and the C generator's collision handling

@pytest.mark.slow
def test_bundling_again_replaces_the_bundle(bundle):
    out = bundle["out"]
    before = json.loads((out / NAME / "bundle.json").read_text())["created_at"]
    proc = run_copylab("bundle", str(bundle["source"]), "--out", str(out), "--roll", ROLL, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [NAME, f"{NAME}.zip"]
    assert json.loads((out / NAME / "bundle.json").read_text())["created_at"] >= before


def test_amalgamation_renames_names_two_modules_keep_to_themselves(tmp_path):
    native = tmp_path / "native"
    native.mkdir()
    (native / "Makefile").write_text("PROGRAMS := demo\nCOMMON := one.c two.c\nSERVER :=\n"
                                     "CFLAGS_BASE := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -MMD -MP\n"
                                     "OPT := -O2\nLDLIBS := -lm\n")
    (native / "one.h").write_text("#ifndef ONE_H\n#define ONE_H\nint one(void);\n#endif\n")
    (native / "two.h").write_text('#ifndef TWO_H\n#define TWO_H\n#include "one.h"\nint two(void);\n#endif\n')
    for module, value in (("one", 1), ("two", 2)):
        (native / f"{module}.c").write_text(
            f'#include "{module}.h"\n#include <stdio.h>\n#define SCALE {value}\n'
            f"struct state {{ int n; }};\nstatic struct state counter = {{ {value} }};\n"
            f"static int helper(void) {{ return counter.n * SCALE; }}\n"
            f"int {module}(void) {{ return helper(); }}\n")
    (native / "demo.c").write_text('#include <stdio.h>\n#include "two.h"\n'
                                   'int main(void) { printf("%d\\n", one() + two()); return 0; }\n')
    build = csource.read_native_build(native)
    amalgam = csource.amalgamate("demo", build, native)
    assert amalgam.renamed == {"one.c": ["counter", "helper", "state"], "two.c": ["counter", "helper", "state"]}
    source = tmp_path / "demo.c"
    source.write_text(amalgam.text)
    proc = subprocess.run(["cc", *build.cflags, str(source), "-o", str(tmp_path / "demo"), *build.ldlibs],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    # one's SCALE (1) and two's (2) each stayed in their own section: 1*1 + 2*2
    assert subprocess.run([str(tmp_path / "demo")], capture_output=True, text=True).stdout == "5\n"


# ------------------------------------------------------------------------------------------------
# bad input: one line naming the problem, nothing written

@pytest.fixture(scope="module")
def sources(reported, tmp_path_factory) -> dict:
    """Variants of the reported sweep folder (its top-level files only: the bundle reads no more)."""
    base = tmp_path_factory.mktemp("bad-input")

    def variant(name: str, drop: tuple = ()) -> Path:
        folder = base / name
        folder.mkdir()
        for file in SWEEP_FILES:
            if file not in drop:
                shutil.copy2(reported / file, folder / file)
        return folder

    no_roll = variant("no-roll")
    manifest = json.loads((no_roll / "report.json").read_text())
    manifest["fields"]["roll_no"] = ""  # a report built without one
    (no_roll / "report.json").write_text(json.dumps(manifest))
    placeholder = variant("placeholders")  # a report built from a grid whose fields were left as shipped
    manifest = json.loads((placeholder / "report.json").read_text())
    manifest["fields"].update(author="", repo_url="", ai_declaration=TEMPLATE_DECLARATION)
    (placeholder / "report.json").write_text(json.dumps(manifest))
    return {"valid": variant("valid"), "no-roll": no_roll, "placeholders": placeholder,
            "no-results": variant("no-results", drop=("results.csv",)),
            "no-report": variant("no-report", drop=("report.pdf",))}


BAD_INPUTS = {
    # case: (source variant, extra arguments, what the error line names)
    "no roll": ("no-roll", [], "no roll number"),
    "roll with a slash": ("valid", ["--roll", "a/b"], "not a plain identifier"),
    "roll with a space": ("valid", ["--roll", "a b"], "not a plain identifier"),
    "no results.csv": ("no-results", ["--roll", ROLL], "results.csv"),
    "no report.pdf": ("no-report", ["--roll", ROLL], "report.pdf"),
    "--out is a file": ("valid", ["--roll", ROLL, "--out", "{file}"], "not a folder"),
    # issue 46: the zip was written where the sweep keeps its records (a resume or the lab reads them)
    "--out in the sweep's runs/": ("valid", ["--roll", ROLL, "--out", "{source}/runs"], "among the records of the sweep"),
    "--out deeper in its profiles/": ("valid", ["--roll", ROLL, "--out", "{source}/profiles/x"],
                                      "among the records of the sweep"),
    "placeholders": ("placeholders", [], "not bundled: still placeholders: author, repo_url, the AI declaration"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_and_writes_nothing(sources, tmp_path, case):
    variant, args, needle = BAD_INPUTS[case]
    source = sources[variant]
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    args = [a.format(file=a_file, source=source) for a in args]
    before = (folder_state(source), folder_state(tmp_path))
    proc = copylab_inprocess("bundle", str(source), *args)  # default --out: the source folder
    assert_one_line_error(proc, needle)
    assert (folder_state(source), folder_state(tmp_path)) == before
    assert sorted(p.name for p in source.iterdir()) == sorted(before[0])  # no hidden staging folder


@pytest.mark.slow
def test_a_sweep_measuring_now_is_not_bundled(sources, tmp_path):
    """The commands that read a sweep share one policy (sweep/folder.check_state): one that a live sweep
    holds (its lock) is refused in one line, as report and compare refuse it."""
    import fcntl
    import shutil

    from copylab import bundle as bundle_module

    folder = tmp_path / "measuring"
    shutil.copytree(sources["valid"], folder)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(CopylabError, match=r"is mid-sweep: a sweep is measuring into it now") as refused:
            bundle_module.check_inputs(folder, roll=ROLL, out_dir=tmp_path)
    assert "\n" not in str(refused.value) and not (tmp_path / f"{ROLL}_PA02").exists()
    # once it stopped (interrupted), it is bundled with the warning report and compare give
    inputs = bundle_module.check_inputs(folder, roll=ROLL, out_dir=tmp_path)
    inputs.meta.update(status="interrupted", finished_at="2026-11-28T10:00:00+00:00")
    said = bundle_module.readme.warnings(inputs, {"results": {"sweep_status": "interrupted", "git_revision": "x"},
                                                  "sources": {"git_revision": "x"}})
    assert len(said) == 1 and said[0].startswith(
        f"{str(folder)!r} is an interrupted sweep: its sweep was interrupted at 2026-11-28T10:00:00+00:00 (meta.json "
        f"status 'interrupted'); it holds {len(inputs.df)} measured row(s)") and "resume it" in said[0], said


@pytest.mark.slow
def test_unwritable_out_is_one_line_and_writes_nothing(sources, tmp_path):
    out = tmp_path / "read-only"
    out.mkdir()
    out.chmod(0o555)
    # root writes anywhere: drop the capabilities that let it, as a user without them would be
    proc = subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "copylab", "bundle", str(sources["valid"]),
                           "--roll", ROLL, "--out", str(out)], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert_one_line_error(proc, "not writable")
    assert list(out.iterdir()) == []


def test_placeholders_are_named_in_one_line():
    """What `make report` warns about and `copylab bundle` refuses: empty author fields, and the declaration
    empty or still the shipped template's text."""
    filled = {**QUICK_AUTHOR, "ai_declaration": DECLARATION}
    assert report_display.placeholders(filled) == [] and report_display.placeholder_line([]) == ""
    assert report_display.placeholders({**filled, "ai_declaration": TEMPLATE_DECLARATION}) == ["ai_declaration"]
    missing = report_display.placeholders({"author": "", "roll_no": None, "repo_url": "", "ai_declaration": ""})
    assert missing == ["author", "roll_no", "repo_url", "ai_declaration"]
    line = report_display.placeholder_line(missing)
    assert "\n" not in line and all(f in line for f in ("author", "roll_no", "repo_url", "--roll-no", "AI declaration"))
    assert "pass --roll)" in report_display.placeholder_line(["roll_no"], "--roll")


@pytest.mark.slow
def test_a_draft_bundles_placeholders_and_says_so(sources, tmp_path):
    """--draft takes the placeholders the bundle otherwise refuses (test_bad_input_is_one_line_and_writes_nothing),
    and the warning names them in one line."""
    from copylab import bundle as bundle_module

    with pytest.raises(CopylabError, match="--draft"):
        bundle_module.check_inputs(sources["placeholders"], out_dir=tmp_path)
    inputs = bundle_module.check_inputs(sources["placeholders"], out_dir=tmp_path, draft=True)
    said = bundle_module.readme.warnings(inputs, {"results": {"sweep_status": "finished", "git_revision": "x"},
                                                  "sources": {"git_revision": "x"}})
    assert said == ["a draft: " + report_display.placeholder_line(["author", "repo_url", "ai_declaration"], "--roll")]


def test_generated_c_that_warns_is_refused(tmp_path):
    build = csource.NativeBuild(("demo",), (), (), ("-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"), ())
    (tmp_path / "Makefile").write_text(csource.makefile_text(build, {"demo": "demo.c"}, ROLL))
    (tmp_path / "demo.c").write_text("int main(void) { int unused; return 0; }\n")
    with pytest.raises(CopylabError, match="do not build cleanly: .*unused"):
        csource.check_build(tmp_path)


@pytest.mark.slow
def test_a_roll_the_report_does_not_show_rebuilds_the_report_first(sources, tmp_path, monkeypatch):
    """`make report` with roll_no: null, then `make bundle ROLL=X`: the report is rebuilt with X
    (here a stand-in for build_report records the call and what the real one would write)."""
    from copylab import bundle as bundle_module

    source = tmp_path / "src"
    shutil.copytree(sources["valid"], source)
    calls = []

    def rebuild(results_dir, **fields):
        calls.append(fields)
        path = Path(results_dir) / "report.json"
        manifest = json.loads(path.read_text())
        manifest["fields"]["roll_no"] = fields["roll_no"]
        path.write_text(json.dumps(manifest))

    monkeypatch.setattr(report, "build_report", rebuild)
    result = bundle_module.build_bundle(source, roll="OTHER1", out_dir=tmp_path)
    assert calls and calls[0]["roll_no"] == "OTHER1"
    assert result["folder"].name == "OTHER1_PA02" and (result["folder"] / "OTHER1_Report.pdf").is_file()


# ------------------------------------------------------------------------------------------------
# the report the bundle takes, and values that must stay data (issue 23)

def _copy(source: Path, into: Path) -> Path:
    folder = into / "copy"
    folder.mkdir()
    for file in SWEEP_FILES:
        shutil.copy2(source / file, folder / file)
    return folder


@pytest.mark.parametrize("case, needle", [
    ("report.pdf a link to a text file", "report.pdf: is a symbolic link"),
    ("report.pdf a text file", "is not a PDF"),
    ("results changed after the report", "was built from other results than results.csv"),
    ("meta.json changed after the report", "was built from another meta.json"),
    ("report.pdf changed after the report", "is not the PDF its report built"),
    ("no manifest", "has no manifest (report.json)"),
])
@pytest.mark.slow
def test_the_bundle_takes_only_this_folders_complete_report(sources, tmp_path, case, needle):
    folder = _copy(sources["valid"], tmp_path)
    if case == "report.pdf a link to a text file":
        text = tmp_path / "notes.txt"
        text.write_text("not a report\n")
        (folder / "report.pdf").unlink()
        (folder / "report.pdf").symlink_to(text)
    elif case == "report.pdf a text file":
        (folder / "report.pdf").write_text("not a report\n")
    elif case == "results changed after the report":
        with open(folder / "results.csv", "a") as handle:
            handle.write("")
        lines = (folder / "results.csv").read_text().splitlines()
        (folder / "results.csv").write_text("\n".join(lines[:-1]) + "\n")  # a point fewer
    elif case == "meta.json changed after the report":
        meta = json.loads((folder / "meta.json").read_text())
        meta["hostname"] = "elsewhere"
        (folder / "meta.json").write_text(json.dumps(meta))
    elif case == "report.pdf changed after the report":
        (folder / "report.pdf").write_bytes((folder / "report.pdf").read_bytes() + b"\n% appended\n")
    else:
        (folder / "report.json").unlink()
    before = folder_state(folder)
    proc = copylab_inprocess("bundle", str(folder), "--roll", ROLL)
    assert_one_line_error(proc, needle)
    assert folder_state(folder) == before


HOSTILE = '"""; import os; os.system("touch {marker}") #\n\'\'\'; os.system("touch {marker}")'


@pytest.mark.slow
def test_part_d_scripts_carry_values_as_data_never_as_code(reported, tmp_path):
    from copylab.analysis import load_results
    from copylab.bundle import plots

    marker = tmp_path / "pwned"
    df, meta = load_results(reported)
    value = HOSTILE.format(marker=marker)
    meta = {**meta, "git_revision": value, "hostname": value, "cpu_model": "$\\input{x}$ " + value}
    origin = {"results_dir": value, "sweep": value, "started_at": value, "finished_at": value,
              "git_revision": value, "failed_points": 0}
    for spec in plots.PLOTS:
        source = plots.plot_script(spec, df, meta, origin, ROLL)
        tree = ast.parse(source)
        docstring = ast.get_docstring(tree)
        assert "import os" not in docstring and str(marker) not in docstring
        # the module is: the docstring, imports, `if` for matplotlib's settings, DATA = json.loads(...),
        # NAME = DATA[...] lines and the drawing functions: no other statement carries a value
        for node in tree.body:
            assert isinstance(node, (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.If, ast.FunctionDef)), node
        path = tmp_path / f"{ROLL}_Part_D_{spec.name}.py"
        path.write_text(source)
        proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={"PATH": os.environ["PATH"], "MPLCONFIGDIR": str(tmp_path / "mpl")})
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists(), f"{spec.name}: a value ran as code"
        assert constants(path)["PROVENANCE"]["git_revision"] == value


@pytest.mark.root
def test_the_run_all_script_reads_its_grid_as_data(tmp_path):
    """A grid name with a newline put a command into the script before its root check."""
    from copylab.bundle import runall

    place = Path(tempfile.mkdtemp(prefix="copylab-bundle-test-"))  # a folder the user nobody can enter
    place.chmod(0o777)
    marker = place / "pwned"
    sweep = f"quick\ntouch {marker}\n$(touch {marker}) `touch {marker}`"
    script = place / "run_all.sh"
    script.write_text(runall.run_all_script(ROLL, sweep, {"impls": ["a1"], "modes": ["throughput"],
                                                          "msg_sizes": [64], "threads": [1]}))
    script.chmod(0o755)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    commands = [line for line in script.read_text().splitlines() if "touch" in line]
    assert commands == [f"SWEEP=quick touch {marker} $(touch {marker}) `touch {marker}`"], commands
    try:  # the user nobody runs it (and is refused at the root check)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(script)],
                              capture_output=True, text=True, timeout=60, cwd="/")
        assert proc.returncode == 2 and "root" in proc.stderr and not marker.exists(), proc.stderr
    finally:
        shutil.rmtree(place)
    with pytest.raises(CopylabError, match="MSG_SIZES"):
        runall.run_all_script(ROLL, "x", {"impls": ["a1"], "modes": ["throughput"], "msg_sizes": ["64;id"],
                                          "threads": [1]})


def test_the_run_all_script_checks_what_the_environment_gives_it(built, tmp_path):
    marker = tmp_path / "pwned"
    proc = subprocess.run([f"./{ROLL}_Part_C_run_all.sh"], cwd=built["dir"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "IMPLS": f"a1;touch {marker}"})
    assert proc.returncode == 2 and "IMPLS must match" in proc.stderr and not marker.exists(), proc.stderr


def test_the_readme_shows_every_value_as_text(reported):
    from copylab.analysis import load_results
    from copylab.bundle import Inputs, readme
    from nbconvert.filters.markdown import markdown2html_mistune

    df, meta = load_results(reported)
    meta = {**meta, "hostname": "<script>alert(1)</script>", "perf_note": "[x](javascript:alert(2)) <not supported>"}
    fields = {"author": "<img src=x onerror=alert(3)> john_doe", "roll_no": ROLL,
              "repo_url": "javascript:alert(4)", "ai_declaration": "# heading\n<script>alert(5)</script>\n`x` *y*"}
    inputs = Inputs(reported, reported, ROLL, fields, meta, df, True, [])
    origin = {"sweep": "q`uick", "results_dir": "/x/<b>", "started_at": "t", "finished_at": "t",
              "sweep_status": "<i>finished</i>", "points": 1, "failed_points": 0, "git_revision": "abc`def",
              "perf_note": meta["perf_note"]}
    record = {"results": origin, "sources": {"programs": {"a1_server": [f"{ROLL}_Part_A1_Server.c"]},
                                             "git_revision": "abc"},
              "copylab_version": "1", "created_at": "now"}
    page = markdown2html_mistune(readme.readme_text(inputs, record))
    for live in ("<script>", "<img src=x", 'href="javascript:', "<i>finished</i>", "<b>"):
        assert live not in page, live
    assert "&lt;img src=x onerror=alert(3)&gt; john_doe" in page and "javascript:alert(4)" in page
