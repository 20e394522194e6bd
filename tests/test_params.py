"""Grids: the shipped ones are valid, bad ones are refused before anything runs, with one line naming the key."""

import re

import pytest
import yaml
from conftest import ROOT, run_copylab
from copylab import registry
from copylab.contract import RECEIVE_STRATEGIES
from copylab.errors import CopylabError
from copylab.params import load_grid, parse_grid
from copylab.sweep.estimate import estimate
from faults import TINY, assert_one_line_error, grid_file, sweep

GOOD = {"name": "t", "impls": ["a1", "a2"], "modes": ["throughput"], "msg_sizes": [64, 4096], "threads": [1, 2]}


def test_shipped_grids_are_valid_and_sized_as_documented():
    quick, default, full = (load_grid(ROOT / "params" / f"{n}.yaml") for n in ("quick", "default", "full"))
    assert default.impls == ("a1", "a2", "a3") and default.modes == ("throughput", "latency")
    assert len(default.msg_sizes) >= 4 and len(default.threads) >= 4  # what the study asks for
    assert default.repetitions >= 3 and default.shuffle  # confidence by default (issue 11)
    study = [p for p in default.points("netns") if p.impl in ("a1", "a2", "a3")]
    measured = [p for p in study if not p.profile]
    cache = default.cache  # Q2's cache part: its own paths at its own sizes, each working set, in every pass
    placed = len(cache.impls) * len(cache.msg_sizes) * len(cache.threads) * len(cache.working_set)
    assert len(measured) == (3 * 2 * len(default.msg_sizes) * len(default.threads) + placed) * default.repetitions
    assert {p.working_set_level for p in measured if p.working_set_level} == set(cache.levels)
    assert not any(p.working_set_level for p in study if p.profile)  # profiles stay on the grid's own working set
    assert {p.impl for p in default.points("netns")} >= {"iperf3", "sockperf"}
    assert any(p.profile for p in study) and not all(p.profile for p in study)
    assert full.repetitions == 5 and full.shuffle and max(full.msg_sizes) == 1048576
    # the serious run includes every path and every receive strategy (issue 22)
    assert set(full.receive) == set(RECEIVE_STRATEGIES) and set(full.impls) == set(registry.names(kind="native"))
    assert estimate(quick).wall_s < 60  # CI's smoke grid
    # make report within 10 minutes on a fresh machine: the sweep's budget leaves room for the rest (the
    # build, the install and the report took about 1 minute beside it, 2026-11-25), and the base passes
    # leave room in the budget for placement and extra passes
    assert default.budget_min is not None and default.budget_min <= 8.5
    assert estimate(default).base_s < default.budget_min * 60 - 30 and estimate(default).wall_s <= default.budget_min * 60
    two = load_grid(ROOT / "params" / "two-hosts.yaml")  # the example for a rig of two machines
    assert two.topology == "ssh" and two.ssh.server_host != two.ssh.client_host
    assert two.impls == default.impls and max(two.msg_sizes) > max(default.msg_sizes)


def test_points_encode_every_parameter_and_shuffle_is_reproducible():
    grid = parse_grid({**GOOD, "repetitions": 3, "shuffle": True, "seed": 7})
    points = grid.points("netns")
    ids = [p.point_id() for p in points]
    assert len(set(ids)) == len(ids)
    assert len([p for p in points if not p.profile]) == 2 * 2 * 2 * 3
    # the profiled runs are extra runs at the end, one per selected point (throughput at 1 thread)
    profiled = [p for p in points if p.profile]
    assert points[-len(profiled):] == profiled and {(p.threads, p.rep) for p in profiled} == {(1, 0)}
    assert len(profiled) == 2 * 2
    assert ids == [p.point_id() for p in grid.points("netns")]  # same seed, same order
    assert ids != sorted(ids)
    assert "a1_throughput_4096B_2thr_rmessage_rep1_d1s_w0.1s_netns_cccubic_ws4194304B" in ids


SSH = {**GOOD, "topology": "ssh", "server_host": "root@h1", "client_host": "h2", "server_addr": "10.0.0.1",
       "client_addr": "fd00::2"}

BAD_GRIDS = [
    ({**GOOD, "colour": "blue"}, "colour"),
    ({k: v for k, v in GOOD.items() if k != "impls"}, "impls"),
    ({**GOOD, "impls": ["a4"]}, "impls"),
    ({**GOOD, "impls": []}, "impls"),
    ({**GOOD, "impls": "a1"}, "impls"),
    ({**GOOD, "modes": ["bandwidth"]}, "modes"),
    ({**GOOD, "msg_sizes": [4]}, "msg_sizes"),
    ({**GOOD, "msg_sizes": [-64]}, "msg_sizes"),
    ({**GOOD, "msg_sizes": [2**40]}, "msg_sizes"),
    ({**GOOD, "msg_sizes": ["64k"]}, "msg_sizes"),
    ({**GOOD, "msg_sizes": [64, 64]}, "msg_sizes"),
    ({**GOOD, "threads": [0]}, "threads"),
    ({**GOOD, "threads": [2000]}, "threads"),
    ({**GOOD, "threads": [1.5]}, "threads"),
    ({**GOOD, "repetitions": 0}, "repetitions"),
    ({**GOOD, "repetitions": True}, "repetitions"),
    ({**GOOD, "duration_s": -1}, "duration_s"),
    ({**GOOD, "duration_s": "long"}, "duration_s"),
    ({**GOOD, "warmup_s": 1e9}, "warmup_s"),
    ({**GOOD, "topology": "bridge"}, "topology"),
    ({**GOOD, "pin_server": "zero"}, "pin_server"),
    ({**GOOD, "shuffle": "yes"}, "shuffle"),
    ({**GOOD, "name": "../escape"}, "name"),
    ({**GOOD, "ai_declaration": "no/such/file.md"}, "ai_declaration"),
    ([1, 2, 3], "mapping"),
    # topology ssh: its four keys together, and only with it
    ({**GOOD, "topology": "ssh", "server_host": "h1", "client_host": "h2"}, "server_addr"),
    ({**GOOD, "server_host": "h1"}, "server_host"),
    ({**SSH, "client_host": "-oProxyCommand=x"}, "client_host"),
    ({**SSH, "server_host": "root@"}, "server_host"),
    ({**SSH, "client_addr": "h2.example"}, "client_addr"),
    ({**SSH, "ssh_config": "no/such/ssh_config"}, "ssh_config"),
]


@pytest.mark.parametrize("data,key", BAD_GRIDS, ids=[k + str(i) for i, (_, k) in enumerate(BAD_GRIDS)])
def test_bad_grid_is_refused_naming_the_key(data, key):
    with pytest.raises(CopylabError) as info:
        parse_grid(data, source="bad.yaml")
    message = str(info.value)
    assert key in message and "\n" not in message


@pytest.mark.parametrize("text,needle", [
    ("name: [unclosed\n", "not valid YAML"),
    (yaml.safe_dump({**GOOD, "threads": [0]}), "threads"),
    (yaml.safe_dump({**GOOD, "unknown_key": 1}), "unknown_key"),
])
def test_cli_refuses_bad_params_file_in_one_line_before_running(tmp_path, text, needle):
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    proc = run_copylab("sweep", str(path), "--out", str(out), timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not out.exists(), "nothing may be written for a refused grid"


def test_cli_refuses_missing_params_file(tmp_path):
    proc = run_copylab("sweep", str(tmp_path / "nope.yaml"), timeout=60)
    assert proc.returncode == 2 and "params file not found" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_ssh_grid_gives_the_settings_and_keeps_them_in_its_fingerprint():
    from copylab.sweep.folder import fingerprint

    grid = parse_grid(SSH, source="ssh.yaml")
    assert grid.ssh.server_host == "root@h1" and grid.ssh.client_addr == "fd00::2"
    assert parse_grid(GOOD).ssh is None
    other = parse_grid({**SSH, "client_host": "h3"}, source="ssh.yaml")
    assert fingerprint(grid) != fingerprint(other)  # other hosts: another study, not a resume


# ------------------------------------------------------------------------------------------------
# YAML numbers in every notation (issue 23): PyYAML reads YAML 1.1, where 2e-1 is a string

@pytest.mark.parametrize("text, key, value", [
    ("duration_s: 2e-1", "duration_s", 0.2),
    ("duration_s: 1.5E+0", "duration_s", 1.5),
    ("warmup_s: 1.0e-1", "warmup_s", 0.1),
    ("warmup_s: .5", "warmup_s", 0.5),
    ("msg_sizes: [1e3, 4.096e3, 0x40, 0o200]", "msg_sizes", (1000, 4096, 64, 128)),
    ("threads: [1_0, 2.0]", "threads", (10, 2)),
    ("repetitions: 3e0", "repetitions", 3),
])
def test_yaml_numbers_in_every_notation_are_numbers(tmp_path, text, key, value):
    lines = {k: v for k, v in GOOD.items() if k not in text}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(lines) + text + "\n")
    grid = load_grid(path)
    assert getattr(grid, key) == value


@pytest.mark.parametrize("text, key", [("threads: [1.5]", "threads"), ("msg_sizes: [6.4e1, 64.7]", "msg_sizes"),
                                       ("duration_s: 2e", "duration_s"), ("repetitions: 2.5", "repetitions")])
def test_numbers_that_are_not_whole_or_not_numbers_are_still_refused(tmp_path, text, key):
    lines = {k: v for k, v in GOOD.items() if k not in text}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(lines) + text + "\n")
    with pytest.raises(CopylabError, match=f"^{key}"):
        load_grid(path)


@pytest.mark.root
def test_cli_takes_a_duration_written_2e_minus_1(tmp_path):
    path = tmp_path / "grid.yaml"
    grid = {k: v for k, v in GOOD.items() if k not in ("msg_sizes", "threads")}
    path.write_text(yaml.safe_dump(grid) + "duration_s: 2e-1\nmsg_sizes: [6.4e7]\nthreads: [1024]\n")
    proc = run_copylab("sweep", str(path), "--out", str(tmp_path / "out"), timeout=60)
    # accepted as numbers: what stops this grid is its size, not the notation
    assert "not a number" not in proc.stderr and "valid number" not in proc.stderr, proc.stderr
    assert "--allow-large" in proc.stderr or "open files" in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------------
# hostile or absurd YAML: refused in one line, quickly, before anything exists

def _laughs(depth: int = 9) -> str:
    lines = ["name: x", "impls: [a1]", "modes: [throughput]", "msg_sizes: [64]", "threads: [1]",
             "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, depth)]
    lines.append(f"description: *a{depth - 1}")
    return "\n".join(lines) + "\n"


HOSTILE = [
    ("duplicate key", "name: x\nimpls: [a4]\nimpls: [a1]\nmodes: [throughput]\nmsg_sizes: [64]\nthreads: [1]\n",
     "appears twice"),
    ("20 000 nested brackets", "name: x\nimpls: " + "[" * 20000 + "]" * 20000 + "\n", "nested deeper"),
    ("billion laughs in a text field", _laughs(), "aliases expand"),
    ("a file of 2 MiB", "description: " + "x" * (2 << 20) + "\n", "too large for a grid"),
    ("60 000 sizes then a bad key", yaml.safe_dump({**TINY, "msg_sizes": list(range(8, 60008)), "colour": 1}),
     "colour"),
    ("a key that is a list", "[a, b]: 1\nname: x\n", "not a plain value"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,text,needle", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_yaml_is_refused_quickly_in_one_line(tmp_path, what, text, needle):
    params = tmp_path / "grid.yaml"
    params.write_text(text)
    proc = sweep(params, tmp_path / "out", timeout=60)  # an alias bomb expanded would outlast it: TimeoutExpired
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# grids beyond reason: an estimate, and a refusal past a day or the host's memory

@pytest.mark.parametrize("changes,needle", [
    ({"msg_sizes": list(range(8, 60008)), "threads": [1, 2], "duration_s": 2.0}, "more than 24 h"),
    ({"impls": ["a1", "a2", "a3"], "msg_sizes": list(range(64, 64 + 1000)), "threads": list(range(1, 1001)),
      "duration_s": 0.1}, "more than 24 h"),
    ({"impls": ["a1", "a3"], "msg_sizes": [64 << 20], "threads": [1024]}, "available"),
], ids=["60 000 points x 2 s", "a million points", "64 MiB x 1024 threads"])
@pytest.mark.slow
def test_grids_beyond_reason_are_refused_unless_asked(tmp_path, changes, needle):
    params = grid_file(tmp_path, **changes)
    proc = sweep(params, tmp_path / "out", timeout=60)  # a grid expanded point by point would outlast it
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert "--allow-large" in proc.stderr and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# a file larger than a grid

def test_params_module_refuses_a_file_larger_than_a_grid(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("name: x\n" + "# pad\n" * 300000)
    with pytest.raises(CopylabError, match="too large"):
        load_grid(path)


# ------------------------------------------------------------------------------------------------
# a point's defaults are written once, in PointSpec (issue 32); everything else takes them or agrees

def test_a_points_defaults_are_pointspecs_in_the_grid_the_cli_and_the_notebook():
    import ast
    from dataclasses import fields

    import papermill

    from copylab.cli import build_parser
    from copylab.experiment import SPEC_FIELDS, spec_from_params
    from copylab.paths import NOTEBOOKS_DIR
    from copylab.pointspec import POINT_DEFAULTS, PointSpec

    assert POINT_DEFAULTS == {f.name: f.default for f in fields(PointSpec) if f.name in POINT_DEFAULTS}
    grid = parse_grid({"name": "g", "impls": ["a1"], "modes": ["throughput"], "msg_sizes": [64], "threads": [1],
                       "profile": False})
    (point,) = grid.points("netns")
    shared = ("duration_s", "warmup_s", "receive", "congestion", "working_set", "steady_max_s", "rps", "verify")
    assert {k: getattr(point, k) for k in shared} == {k: POINT_DEFAULTS[k] for k in shared}
    run = build_parser().parse_args(["run", "--impl", "a1", "--mode", "throughput", "--msg-size", "64"])
    assert (run.duration, run.warmup, run.steady_max, run.congestion, run.working_set, run.receive) == tuple(
        POINT_DEFAULTS[k] for k in ("duration_s", "warmup_s", "steady_max_s", "congestion", "working_set", "receive"))
    # the experiment notebook opened by hand measures PointSpec's point, and a parameter it leaves out
    # takes PointSpec's default
    notebook = papermill.inspect_notebook(str(NOTEBOOKS_DIR / "experiment.ipynb"))
    defaults = {k: ast.literal_eval(notebook[k]["default"]) for k in SPEC_FIELDS if k in POINT_DEFAULTS}
    assert defaults == {k: POINT_DEFAULTS[k] for k in defaults} and "duration_s" in defaults
    assert spec_from_params({"impl": "a1", "mode": "throughput", "msg_size": 64, "threads": 1}, "netns") == \
        PointSpec(impl="a1", mode="throughput", msg_size=64, threads=1)
    # the study's grid measures with the default window (docs/methodology.md, "Noise")
    default = load_grid(ROOT / "params" / "default.yaml")
    assert (default.duration_s, default.warmup_s) == (POINT_DEFAULTS["duration_s"], POINT_DEFAULTS["warmup_s"])


@pytest.mark.parametrize("name", ["analysis", "build", "experiment"])
def test_papermill_documents_every_notebook_parameter_with_its_type(name):
    """`papermill --help-notebook notebooks/NAME.ipynb`: a type and a line of help for every parameter."""
    import ast

    import nbformat
    import papermill
    from click.testing import CliRunner
    from papermill.cli import papermill as papermill_cli

    path = str(ROOT / "notebooks" / f"{name}.ipynb")
    shown = CliRunner().invoke(papermill_cli, ["--help-notebook", path])
    assert shown.exit_code == 0, shown.output
    params = papermill.inspect_notebook(path)
    # every name the parameters cell assigns, as Python sees it (papermill skips a line it cannot read)
    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assigned = [node.target.id for node in ast.parse(cell.source).body if isinstance(node, ast.AnnAssign)]
    assert not [n for n in ast.parse(cell.source).body if isinstance(n, ast.Assign)], "a parameter without a type"
    assert list(params) == assigned and "Unknown type" not in shown.output and "Unable to parse" not in shown.output
    for key, p in params.items():
        assert p["inferred_type_name"] not in ("None", "") and p["help"], (key, p)
        assert f"{key}: {p['inferred_type_name']} (default" in shown.output and p["help"] in shown.output


@pytest.mark.parametrize("value", ["Auto", "AUTO", "best", 2.5, True])
def test_rounds_that_are_neither_a_number_nor_auto_are_refused_naming_auto(value):
    """`rounds: "Auto"` was refused with "Input should be a valid integer", never naming the word it
    takes: the line names both forms, and the value as written."""
    with pytest.raises(CopylabError) as info:
        parse_grid({**GOOD, "rounds": value}, source="bad.yaml")
    message = str(info.value)
    assert "rounds: must be a whole number from 1 to" in message and "or auto (lower case)" in message
    assert repr(value) in message and "\n" not in message
    assert parse_grid({**GOOD, "rounds": "auto"}).rounds == "auto" and parse_grid({**GOOD, "rounds": 3.0}).rounds == 3


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure Python"])
@pytest.mark.parametrize("text, needle", [("x: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 16 levels at line 1"),
                                          ("x: " + "[" * 20000 + "]" * 20000 + "\n", "nested deeper than 16 levels"),
                                          ("a: 1\na: 2\n", "key 'a' appears twice (lines 1 and 2)"),
                                          ("name: [unclosed\n", "not valid YAML at line 2")],
                         ids=["40 brackets", "20 000 brackets", "a key twice", "unclosed"])
def test_both_yaml_parsers_refuse_alike(tmp_path, monkeypatch, libyaml, text, needle):
    """libyaml's parser when PyYAML has it (10 times faster on a large grid), PyYAML's own otherwise:
    the same refusals."""
    from copylab import yamlsafe

    if not libyaml:
        monkeypatch.setattr(yamlsafe, "CStrictLoader", None)
    elif yamlsafe.CStrictLoader is None:
        raise AssertionError("this project's PyYAML is built with libyaml (pyproject.toml): it is missing here")
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    with pytest.raises(CopylabError, match=re.escape(needle)):
        yamlsafe.load(path)
    path.write_text("d: 2e-1\nn: 0o17\na: &x [1, 2]\nb: *x\n")
    assert yamlsafe.load(path) == {"d": 0.2, "n": 15, "a": [1, 2], "b": [1, 2]}
