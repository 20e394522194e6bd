"""`copylab doctor`: runs anywhere, tells the truth about this host, exits 0 even when things are missing."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from copylab import perf, registry
from copylab.commands import doctor as cmd_doctor
from copylab.contract import IMPLS
from copylab.paths import client_binary, server_binary
from copylab.privilege import can_admin_network, effective_capabilities

CHECK_NAMES = {"root", "namespaces", "perf", "msg_zerocopy", "native_binaries", "chromium", "xelatex",
               "pandoc", "pdftoppm", "receive:zerocopy", *(f"path:{name}" for name in registry.names())}


def run_doctor(argv: list[str], capsys) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="copylab")
    cmd_doctor.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    status = args.func(args)
    return status, capsys.readouterr().out


def namespaces() -> set[str]:
    """This process's namespaces (doctor runs in it): another xdist worker's come and go meanwhile."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith(f"copylab-{os.getpid()}-")}


@pytest.mark.root
@pytest.mark.network
def test_doctor_json_has_every_check(capsys):
    before = namespaces() if shutil.which("ip") else set()
    status, out = run_doctor(["doctor", "--json"], capsys)
    assert status == 0
    report = json.loads(out)
    assert set(report) == {"host", "checks", "lacks"}
    assert set(report["checks"]) == CHECK_NAMES
    for name, result in report["checks"].items():
        assert isinstance(result["ok"], bool) and result["detail"], name
        if result["ok"]:
            assert result["lacks"] == [], name
        else:
            assert result["lacks"] and all(isinstance(lack, str) for lack in result["lacks"]), name
    assert report["lacks"] == list(dict.fromkeys(l for r in report["checks"].values() for l in r["lacks"]))
    assert {"kernel", "cpu_model", "cores", "perf_version"} <= set(report["host"])
    # the namespace check creates a real pair and must leave nothing behind
    if shutil.which("ip"):
        assert namespaces() == before


@pytest.mark.root
@pytest.mark.network
def test_doctor_checks_agree_with_this_host(capsys):
    report = json.loads(run_doctor(["doctor", "--json"], capsys)[1])
    checks = report["checks"]
    assert checks["root"]["ok"] == can_admin_network()
    if can_admin_network() and shutil.which("ip"):
        assert checks["namespaces"]["ok"], checks["namespaces"]["detail"]
        assert checks["namespaces"]["net"]["veth_mtu"] > 0
    else:
        assert not checks["namespaces"]["ok"] and checks["namespaces"]["lacks"]
    assert checks["perf"]["plan"] == perf.probe().to_dict()
    built = all(p.is_file() for p in [server_binary(i) for i in IMPLS] + [client_binary()])
    assert checks["native_binaries"]["ok"] == built
    for tool in ("xelatex", "pandoc", "pdftoppm"):
        assert checks[tool]["ok"] == (shutil.which(tool) is not None), tool
    # SO_ZEROCOPY exists since Linux 4.14 (TCP)
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    assert checks["msg_zerocopy"]["ok"] == ((major, minor) >= (4, 14))


def test_doctor_lists_what_a_missing_perf_costs(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no perf, ip, chromium, xelatex...
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    status, out = run_doctor(["doctor", "--json"], capsys)
    assert status == 0
    report = json.loads(out)
    assert not report["checks"]["perf"]["ok"]
    assert any("perf column" in lack for lack in report["lacks"])
    assert any("PDF" in lack for lack in report["lacks"])
    assert not report["checks"]["chromium"]["ok"]
    assert not report["checks"]["namespaces"]["ok"]
    assert any("loopback" in lack for lack in report["lacks"])


@pytest.mark.root
@pytest.mark.network
def test_doctor_table_is_readable(capsys):
    status, out = run_doctor(["doctor"], capsys)
    assert status == 0
    for name in CHECK_NAMES:
        assert any(line.startswith(name) for line in out.splitlines()), name
    assert "the report will lack:" in out or "nothing missing" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_bad_flag_exits_2():
    proc = subprocess.run([sys.executable, "-m", "copylab", "doctor", "--bogus"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "--bogus" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""


def test_capabilities_are_read_from_proc_status(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n")
    assert effective_capabilities(status) == 0x1FFFFFFFFFF
    status.write_text("Name:\tx\nCapEff:\t0000000000001000\n")  # CAP_NET_ADMIN alone
    assert effective_capabilities(status) == 1 << 12
    assert effective_capabilities(tmp_path / "missing") is None


@pytest.mark.root
@pytest.mark.network
def test_doctor_says_why_io_uring_paths_are_out_when_the_sysctl_disables_io_uring(capsys, io_uring_disabled):
    """kernel.io_uring_disabled=2 (set for this test, restored after): the io_uring paths are out,
    and the reason names the sysctl; the other paths are unaffected."""
    checks = json.loads(run_doctor(["doctor", "--json"], capsys)[1])["checks"]
    uring = [i.name for i in registry.all_impls() if "io_uring" in i.needs]
    assert uring
    for name in uring:
        assert not checks[f"path:{name}"]["ok"]
        assert "kernel.io_uring_disabled=2" in checks[f"path:{name}"]["detail"]
    for name in registry.names(kind="native"):
        if name not in uring and checks["native_binaries"]["ok"]:
            assert checks[f"path:{name}"]["ok"], checks[f"path:{name}"]
