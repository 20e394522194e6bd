"""host_meta() and net_meta(): the meta.json fields, read from this machine."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from copylab import hostmeta
from copylab.hosts import LocalHost
from copylab.hostmeta import git_revision, host_meta, net_meta, parse_ethtool_features


def test_host_meta_keys_and_types():
    meta = host_meta()
    assert set(meta) == {"kernel", "cpu_model", "cores", "memory_gib", "hostname", "compiler",
                         "git_revision", "python", "perf_version", "cpu_caches", "virtualization", "tool_versions"}
    assert meta["kernel"] == platform.release()
    assert isinstance(meta["cores"], int) and meta["cores"] >= 1
    assert isinstance(meta["memory_gib"], float) and meta["memory_gib"] > 0
    assert isinstance(meta["cpu_model"], str) and meta["cpu_model"]
    assert meta["python"] == platform.python_version()
    if shutil.which("cc"):
        assert isinstance(meta["compiler"], str) and meta["compiler"]
    else:
        assert meta["compiler"] is None
    if shutil.which("perf"):
        assert meta["perf_version"] and meta["perf_version"][0].isdigit()
    # the report's configuration section: caches, hypervisor or bare metal, the reference programs' versions
    if Path("/sys/devices/system/cpu/cpu0/cache/index0").is_dir():
        assert meta["cpu_caches"] and all(k.startswith("L") for k in meta["cpu_caches"])
    assert set(meta["virtualization"]) == {"vm", "container", "hypervisor_vendor", "hypervisor_flag"}
    if shutil.which("systemd-detect-virt"):
        assert meta["virtualization"]["vm"]  # "none" on bare metal, the hypervisor's name in a VM
    assert set(meta["tool_versions"]) == {"iperf3", "sockperf"}
    if shutil.which("iperf3"):
        assert "3." in meta["tool_versions"]["iperf3"]


def test_git_revision_of_this_checkout_and_outside_git(tmp_path):
    rev = git_revision()
    head = subprocess.run(["git", "-C", str(hostmeta.PROJECT_ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert rev in (head, head + "-dirty")
    assert git_revision(tmp_path) is None


def test_git_revision_marks_a_modified_checkout_dirty(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f").write_text("a\n")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "one")
    clean = git_revision(tmp_path)
    assert clean and not clean.endswith("-dirty") and len(clean) == 40
    (tmp_path / "f").write_text("b\n")
    assert git_revision(tmp_path) == clean + "-dirty"


def test_net_meta_in_the_current_namespace():
    meta = net_meta()
    assert set(meta) == {"optmem_max", "tcp_wmem", "tcp_rmem", "tcp_congestion_control",
                         "tcp_allowed_congestion_control"}
    assert meta["tcp_congestion_control"] == Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert meta["optmem_max"] == int(Path("/proc/sys/net/core/optmem_max").read_text())
    assert meta["tcp_wmem"] == [int(x) for x in Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()]
    assert len(meta["tcp_rmem"]) == 3


@pytest.mark.network
@pytest.mark.root
def test_net_meta_reads_the_namespace_it_is_given():
    """Set tcp_wmem inside a namespace of our own to a value the host does not have; net_meta must see it."""
    ns = f"cltest-hostmeta-{os.getpid()}"
    in_ns = ["ip", "netns", "exec", ns]
    host_wmem = net_meta()["tcp_wmem"]
    wanted = [4096, 12345, host_wmem[2] + 4096]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(in_ns + ["sysctl", "-q", "-w", "net.ipv4.tcp_wmem=" + " ".join(map(str, wanted))],
                       check=True)
        meta = net_meta("lo", LocalHost(ns))
        assert meta["tcp_wmem"] == wanted
        assert isinstance(meta["optmem_max"], int) and meta["optmem_max"] > 0
        assert meta["veth_mtu"] == 65536  # lo's default MTU
        if shutil.which("ethtool"):
            assert isinstance(meta["offloads"]["generic-segmentation-offload"], bool)
        else:
            assert meta["offloads"] is None
        assert net_meta()["tcp_wmem"] == host_wmem  # the host's own value did not change
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True)


def test_missing_tools_and_namespaces_give_none(monkeypatch, tmp_path):
    meta = net_meta("nope0", LocalHost("cltest-no-such-namespace"))
    assert meta == {"optmem_max": None, "tcp_wmem": None, "tcp_rmem": None, "tcp_congestion_control": None,
                    "tcp_allowed_congestion_control": None, "qdisc": None, "veth_mtu": None, "offloads": None,
                    "nic": None}
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, git, perf, ip, ethtool
    meta = host_meta()
    assert meta["compiler"] is None and meta["git_revision"] is None and meta["perf_version"] is None
    assert meta["tool_versions"] == {"iperf3": None, "sockperf": None}
    assert meta["virtualization"]["vm"] is None and meta["virtualization"]["hypervisor_vendor"] is None
    assert net_meta("lo")["offloads"] is None


def test_parse_ethtool_features():
    text = ("Features for veth0:\nrx-checksumming: on\ntx-checksumming: on\n"
            "\ttx-checksum-ipv4: off [fixed]\ntcp-segmentation-offload: off [requested on]\n"
            "generic-receive-offload: on\nnot a feature line\n")
    assert parse_ethtool_features(text) == {
        "rx-checksumming": True, "tx-checksumming": True, "tx-checksum-ipv4": False,
        "tcp-segmentation-offload": False, "generic-receive-offload": True}
    assert parse_ethtool_features("") is None and parse_ethtool_features(None) is None
