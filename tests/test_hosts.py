"""The pieces of topology ssh that need no second host: a remote side's exit notices, the perf plan
of two hosts, ssh destinations, and what the report says about a path where zero-copy is real."""

from __future__ import annotations

import signal

import pytest

from copylab.errors import CopylabError
from copylab.hosts import SshHost, is_destination
from copylab.perf import TSC_EVENT, PerfPlan, common_plan
from copylab.sides import RemoteSide


class _WrapperHost:
    """A stand-in for SshHost: the argv below prints what hosts.SshHost's wrapper prints."""

    remote = True
    name = "stand-in"


def _side(script: str) -> RemoteSide:
    return RemoteSide("server", ["sh", "-c", script], host=_WrapperHost())


def test_a_remote_side_has_exited_when_its_wrapper_says_so_though_the_channel_stays_open():
    side = _side('echo "copylab-pgid 4242" >&2; echo \'{"bytes": 1}\'; echo err >&2; '
                 'echo "copylab-exit 130"; echo "copylab-exit 130" >&2; exec cat >/dev/null')  # until EOF, as ssh
    try:
        assert side.finish(timeout=10) == -signal.SIGINT  # a shell's 128+2 is Popen's -2
        assert side.proc.poll() is None  # the "channel" is still open
        assert side.remote_pgid == 4242 and side.json_output() == {"bytes": 1}
        assert side.stderr_lines == ["err\n"] and not side.lost  # the notices are not the program's output
    finally:
        side.kill()  # closes the channel: the far side sees EOF and ends (here `cat`, status 0); one that
        # did not end within kill()'s 5 s would be SIGKILLed (-9): the status tells which, not a clock
        assert side.proc.poll() == 0, side.proc.returncode


def test_a_remote_side_whose_channel_ends_without_an_exit_status_is_lost():
    side = _side('echo "copylab-pgid 7" >&2; echo partial; exit 255')
    assert side.finish(timeout=10) == 255
    assert side.lost and side.stdout_lines == ["partial\n"]


def _plan(cycles_source, supported, note=""):
    events = tuple(e for e, ok in supported.items() if ok and e != TSC_EVENT)
    return PerfPlan("/usr/bin/perf", "6.1", supported, events + ((TSC_EVENT,) if cycles_source == "tsc" else ()),
                    cycles_source, note)


def test_two_hosts_count_what_both_can_and_a_host_without_perf_empties_the_counters():
    pmu = _plan("pmu", {"cycles": True, "instructions": True, "context-switches": True, TSC_EVENT: True})
    vm = _plan("tsc", {"cycles": False, "instructions": False, "context-switches": True, TSC_EVENT: True},
               note="No hardware performance counters here")
    both = common_plan({"server": pmu, "client": vm})
    assert both.perf_path == "perf"  # each host's own, on its PATH
    assert both.cycles_source == "tsc" and "instructions" not in both.events and TSC_EVENT in both.events
    assert both.note == "client: No hardware performance counters here"
    same = common_plan({"server": vm, "client": vm})
    assert same.note == "server and client: No hardware performance counters here"
    assert common_plan({"server": pmu, "client": pmu}).cycles_source == "pmu"
    missing = PerfPlan(None, None, {}, (), None, "perf is not installed on host h2 (...)")
    none = common_plan({"server": pmu, "client": missing})
    assert none.perf_path is None and none.events == () and "host h2" in none.note


@pytest.mark.parametrize("text, ok", [("h1", True), ("root@h1", True), ("u@10.0.0.2", True), ("[fe80::1%eth0]", True),
                                      ("-oProxyCommand=x", False), ("root@", False), ("a b", False), ("", False),
                                      ("h1;reboot", False)])
def test_ssh_destinations_that_ssh_could_read_as_options_or_commands_are_refused(text, ok):
    assert is_destination(text) is ok
    if not ok:
        with pytest.raises(CopylabError, match="not an ssh destination"):
            SshHost(text, "/tmp")


def test_the_zero_copy_answer_follows_the_measured_share_and_the_path():
    """Q1's words for where the copy went: between namespaces it is deferred; between two hosts the share not
    copied left by DMA, and a share of 100% there names the NIC, not the path."""
    from copylab.analysis.evidence import ZeroCopyCounts
    from copylab.analysis.questions import ZeroCopyVerdict
    from copylab.analysis.render import render

    def q1(share, path):
        v = ZeroCopyVerdict(lower_sizes=[64], sizes=[64, 65536], counts=ZeroCopyCounts(share, path, 0.0))
        return render("q1", v=v, b="A1", x="A2", z="A3")

    local = q1(100.0, "local")
    assert "Between two namespaces of one host" in local and "100% of completions" in local
    real = q1(12.5, "hosts")
    assert "87.5% of completions left without a copy" in real and "DMA" in real and "namespaces" not in real
    assert "still copied every send" in q1(100.0, "hosts")
