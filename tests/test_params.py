"""Grids: the shipped ones are valid, bad ones are refused before anything runs, with one line naming the key."""

import pytest
import yaml

from conftest import ROOT, run_copylab
from copylab import registry
from copylab.contract import RECEIVE_STRATEGIES
from copylab.errors import CopylabError
from copylab.params import load_grid, parse_grid
from copylab.sweep.estimate import estimate

GOOD = {"name": "t", "impls": ["a1", "a2"], "modes": ["throughput"], "msg_sizes": [64, 4096], "threads": [1, 2]}


def test_shipped_grids_are_valid_and_sized_as_documented():
    quick, default, full = (load_grid(ROOT / "params" / f"{n}.yaml") for n in ("quick", "default", "full"))
    assert default.impls == ("a1", "a2", "a3") and default.modes == ("throughput", "latency")
    assert len(default.msg_sizes) >= 4 and len(default.threads) >= 4  # what the study asks for
    assert default.repetitions >= 3 and default.shuffle  # confidence by default (issue 11)
    study = [p for p in default.points("netns") if p.impl in ("a1", "a2", "a3")]
    measured = [p for p in study if not p.profile]
    assert len(measured) == 3 * 2 * len(default.msg_sizes) * len(default.threads) * default.repetitions
    assert {p.impl for p in default.points("netns")} >= {"iperf3", "sockperf"}
    assert any(p.profile for p in study) and not all(p.profile for p in study)
    assert full.repetitions == 5 and full.shuffle and max(full.msg_sizes) == 1048576
    # the serious run includes every path and every receive strategy (issue 22)
    assert set(full.receive) == set(RECEIVE_STRATEGIES) and set(full.impls) == set(registry.names(kind="native"))
    assert estimate(quick).wall_s < 60  # CI's smoke grid
    assert estimate(default).wall_s < 7 * 60  # make report within 10 minutes on a fresh machine
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
    assert "a1_throughput_4096B_2thr_rmessage_rep1_d2s_w0.5s_netns_cccubic_ws4194304B" in ids


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
