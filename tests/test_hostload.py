"""sweep/hostload.py: other programs' share of the CPUs while a sweep measures (its own process
tree does not count, a foreign process does), and how the report states it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from copylab.report_display import NOT_RECORDED, _host_load
from copylab.sweep.hostload import (PF_KTHREAD, QUIET_SHARE, HostLoad, _processes, descendants, foreign_ticks,
                                    total_ticks)

# burns CPU until its own CPU time reaches the given seconds (not wall time: a loaded host only slows it)
BURN = "import sys, time\nwhile time.process_time() < float(sys.argv[1]):\n    pass\n"


def test_total_ticks_sums_user_to_steal_and_leaves_guest_out():
    # user nice system idle iowait irq softirq steal guest guest_nice
    text = "cpu  100 2 30 500 7 3 11 40 60 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    assert total_ticks(text) == 100 + 2 + 30 + 500 + 7 + 3 + 11 + 40  # guest is inside user already


def test_our_reaped_child_and_kernel_threads_are_not_foreign(monkeypatch):
    """A child this process ran and reaped lands in its cutime, inside our tree, and foreign_ticks
    counts everything else but kernel threads: checked on one snapshot of /proc, so that other
    programs running meanwhile (another worker, a build) cannot make it fail or pass."""
    from copylab.sweep import hostload

    own_before = _processes()[os.getpid()][2]
    subprocess.run([sys.executable, "-c", BURN, "0.3"], check=True)  # ours: reaped by this process
    snapshot = _processes()
    # the 0.3 s burnt (30 ticks at 100 Hz) is now this process's, through cutime
    assert snapshot[os.getpid()][2] - own_before >= 0.2 * os.sysconf("SC_CLK_TCK")
    ours = descendants(os.getppid(), snapshot)
    assert os.getpid() in ours
    kthreadd = snapshot.get(2)
    assert kthreadd is not None and kthreadd[1] & PF_KTHREAD, "pid 2 (kthreadd) is a kernel thread"
    monkeypatch.setattr(hostload, "_processes", lambda: snapshot)
    others = sum(ticks for pid, (_, flags, ticks) in snapshot.items() if pid not in ours and not flags & PF_KTHREAD)
    assert foreign_ticks(os.getppid()) == others
    assert foreign_ticks(1) == sum(ticks for pid, (_, flags, ticks) in snapshot.items()
                                   if pid not in descendants(1, snapshot) and not flags & PF_KTHREAD)


@pytest.mark.slow
@pytest.mark.alone
def test_a_foreign_process_counts_and_our_own_does_not(tmp_path):
    load = HostLoad()
    load.begin()
    subprocess.run([sys.executable, "-c", BURN, "0.6"], check=True)  # ours: a child of this process
    own = load.end()
    # a process that is not ours: setsid -f forks it away, so init adopts it
    done = tmp_path / "done"
    load.begin()
    subprocess.run(["setsid", "-f", sys.executable, "-c", BURN + f"open({str(done)!r}, 'w').close()\n", "0.6"],
                   check=True)
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    foreign = load.end()
    assert done.exists(), "the foreign burner did not finish"
    assert own is not None and foreign is not None
    # 0.6 s of one CPU over the wall time it took, as a share of all CPUs, minus what ticks round off
    assert foreign > own + 0.05, (own, foreign)
    summary = load.summary()
    assert summary["groups"] == 2 and summary["other_cpu_share_max"] == pytest.approx(foreign, abs=1e-4)


def test_the_warning_and_the_report_name_a_busy_host_only():
    quiet, busy = HostLoad(), HostLoad()
    quiet.groups = [(30.0, 0.01), (30.0, 0.02)]
    busy.groups = [(30.0, 0.01), (90.0, 0.20)]
    assert quiet.warning() == "" and quiet.summary()["busy_groups"] == 0
    assert busy.summary()["other_cpu_share"] == pytest.approx((30 * 0.01 + 90 * 0.20) / 120, abs=1e-4)
    assert busy.summary()["busy_groups"] == 1
    assert busy.warning().startswith("other programs used 15% of this host's CPU time while the sweep measured")
    text = _host_load({"sessions": [{"host_load": busy.summary()}]})
    assert text.startswith("15.2% of all CPUs' time (mean over 2 groups of points, largest 20.0%)")
    assert "a busy host" in text and f"under {100 * QUIET_SHARE:.0f}%" in text
    assert "*" not in text, "the configuration table escapes its values: Markdown would show as asterisks"
    assert "busy" not in _host_load({"sessions": [{"host_load": quiet.summary()}]})
    assert _host_load({"sessions": [{"started_at": "x"}]}) == NOT_RECORDED
