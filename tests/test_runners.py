"""Runners (lib/copylab/runners): the peers (iperf3, sockperf) as implementations: their output parsed on recorded fixtures, and one
real short run each through the engine; copylab's own client takes the receive strategy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import ROOT, run_copylab
from copylab.errors import ErrorKind
from copylab.pointspec import PointSpec
from copylab.runners.iperf3 import Iperf3Runner as Iperf3, iperf3_window
from copylab.runners.native import NativeRunner as Native
from copylab.runners.sockperf import SockperfRunner as Sockperf, nearest_rank, sockperf_rtts

PEERS = ROOT / "tests" / "data" / "peers"


class RecordedSide:
    """What a program printed, as the engine's Side offers it."""

    def __init__(self, stdout: str, argv=(), stderr: str = ""):
        self._stdout, self.argv, self.stderr_lines = stdout, list(argv), stderr.splitlines(True)

    def stdout(self) -> str:
        return self._stdout

    def last_error(self, ignore=()):
        lines = [line.strip() for line in self.stderr_lines if line.strip()]
        return lines[-1] if lines else ""


def spec(**kw) -> PointSpec:
    base = dict(impl="iperf3", mode="throughput", msg_size=64, threads=1, duration_s=0.5, warmup_s=0.2)
    return PointSpec(**{**base, **kw})


def test_iperf3_window_is_cut_from_the_intervals_inside_it():
    doc = json.loads((PEERS / "iperf3_reverse_64_i0.1.json").read_text())
    nbytes, seconds = iperf3_window(doc, 0.2, 0.5)
    inside = [i["sum"] for i in doc["intervals"] if 0.2 <= (i["sum"]["start"] + i["sum"]["end"]) / 2 <= 0.7]
    assert len(inside) == 5 and nbytes == sum(i["bytes"] for i in inside)
    assert seconds == pytest.approx(sum(i["seconds"] for i in inside))
    # the runner measures from the warm-up to the end of iperf3's whole second (-t 1: 0.2 to 1.0 s)
    whole, whole_seconds = iperf3_window(doc, 0.2, 0.8)
    assert whole > nbytes
    result = Iperf3().result(spec(), None, RecordedSide(json.dumps(doc)), None)
    assert result.failure is None
    assert result.fields["bytes"] == whole
    assert result.fields["throughput_gbps"] == pytest.approx(whole * 8 / whole_seconds / 1e9)
    assert result.series.window_first == 2 and result.series.window_last == len(result.series.values) - 1
    assert result.fields["receive"] == "message" and result.fields["messages"] == whole // 64


def test_iperf3_parallel_streams_are_summed():
    doc = json.loads((PEERS / "iperf3_reverse_65536_P2_i0.1.json").read_text())
    assert doc["start"]["test_start"]["num_streams"] == 2
    result = Iperf3().result(spec(msg_size=65536, threads=2), None, RecordedSide(json.dumps(doc)), None)
    assert result.failure is None and result.fields["throughput_gbps"] > 0
    assert result.fields["server_bytes"] == doc["end"]["sum_sent"]["bytes"]


@pytest.mark.parametrize("fixture,needle", [
    ("iperf3_error.json", "unable to connect to server"),        # exit status 0, with an "error" key
    ("iperf3_server_sigterm_midtest.json", "server has terminated"),
])
def test_iperf3_failures_are_read_from_the_json_not_the_exit_status(fixture, needle):
    result = Iperf3().result(spec(), None, RecordedSide((PEERS / fixture).read_text()), None)
    assert result.failure is not None and result.failure[0] == ErrorKind.CLIENT and needle in result.failure[1]


def test_iperf3_without_json_names_its_complaint():
    side = RecordedSide("", stderr="iperf3: parameter error - block size too large (maximum = 1048576 bytes)\n")
    result = Iperf3().result(spec(), None, side, None)
    assert result.failure[0] == ErrorKind.NO_RESULT and "block size too large" in result.failure[1]


def test_iperf3_runs_whole_seconds_covering_the_window():
    assert Iperf3().run_seconds(spec(duration_s=0.5, warmup_s=0.2)) == 1
    assert Iperf3().run_seconds(spec(duration_s=1.5, warmup_s=0.5)) == 2
    argv = Iperf3().client_argv(spec(msg_size=4096, threads=3), "198.18.0.1", 5201, Path("/tmp"))
    assert argv[argv.index("-l") + 1] == "4096" and argv[argv.index("-P") + 1] == "3" and "-R" in argv


def test_sockperf_round_trips_come_from_its_full_log():
    log = (PEERS / "sockperf_fulllog_64_fullrtt.csv").read_text()
    rtts = sockperf_rtts(log)
    assert len(rtts) == 2000 and all(r > 0 for r in rtts)
    side = RecordedSide((PEERS / "sockperf_pingpong_64_fullrtt.txt").read_text(),
                        argv=["sockperf", "ping-pong", "--full-log", "/recorded/log"])
    result = Sockperf().result(spec(impl="sockperf", mode="latency"), None, side, lambda path: log)
    assert result.failure is None
    ordered = sorted(rtts)
    assert result.fields["latency_p50_us"] == nearest_rank(ordered, 50)
    assert result.fields["latency_p99_us"] == nearest_rank(ordered, 99)
    assert result.fields["latency_us"] == pytest.approx(sum(rtts) / len(rtts))
    assert result.fields["messages"] == 2000 and result.fields["duration_s"] == pytest.approx(0.55)


def test_sockperf_one_way_logs_are_refused():
    one_way = "packet, txTime(sec), rxTime(sec), latency(usec)\n0, 1.0, 1.00002, 10.0\n"
    with pytest.raises(ValueError, match="full-rtt"):
        sockperf_rtts(one_way)


@pytest.mark.parametrize("fixture,needle", [
    ("sockperf_error.txt", "Connection refused"),  # exit status 0
    ("sockperf_pingpong_65536_server_default_m.txt", "forcibly closed"),
])
def test_sockperf_failures_are_read_from_its_text(fixture, needle):
    side = RecordedSide((PEERS / fixture).read_text(), argv=["sockperf", "--full-log", "/x"])
    result = Sockperf().result(spec(impl="sockperf", mode="latency"), None, side, lambda path: "")
    assert result.failure is not None and needle in result.failure[1]


def test_sockperf_readiness_and_window_lines():
    server_line = "[ 0] IP = 198.18.0.1      PORT =  5201 # TCP\n"
    runner = Sockperf()
    assert runner.server_ready("stdout", server_line)
    opening = runner.client_event("stdout", "sockperf: Starting test...\n")
    assert (opening.action, opening.delay_s, opening.source) == ("open", 0.4, "peer")
    assert runner.client_event("stdout", "sockperf: Test end (interrupted by timer)\n").action == "close"
    assert runner.client_event("stdout", "sockperf: anything else\n") is None


def test_peers_are_refused_where_they_do_not_fit():
    for bad, needle in ((spec(impl="iperf3", mode="latency"), "throughput mode only"),
                        (spec(impl="sockperf", mode="latency", threads=2), "threads must be 1"),
                        (spec(impl="iperf3", receive="bulk"), "receive must be 'message'")):
        with pytest.raises(Exception, match=needle):
            bad.validate()


@pytest.mark.slow
@pytest.mark.parametrize("receive", ["message", "bulk"])
def test_receive_strategy_reaches_the_client(native_build, receive):
    argv = Native("a1").client_argv(spec(impl="a1", receive=receive), "127.0.0.1", 1, Path("/tmp"))
    assert argv[argv.index("--receive") + 1] == receive
    proc = run_copylab("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "1024", "--duration", "0.3",
                       "--warmup", "0.1", "--receive", receive, "--topology", "loopback", "--congestion", "host",
                       "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["receive"] == receive and row["status"] == "ok" and row["recv_calls"] > 0
    # message: one recv per message at most; bulk reads swallow many messages per call
    per_message = row["recv_calls"] / row["messages"]
    assert per_message >= 0.99 if receive == "message" else per_message < 0.9


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.parametrize("impl,mode", [("iperf3", "throughput"), ("sockperf", "latency")])
def test_one_real_run_of_each_peer(native_build, impl, mode):
    proc = run_copylab("run", "--impl", impl, "--mode", mode, "--msg-size", "1024", "--duration", "0.5",
                       "--warmup", "0.2", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["impl"] == impl and row["status"] == "ok" and row["bytes"] > 0
    assert row["window_source"] in ("timer", "peer")
    if mode == "latency":
        assert 0 < row["latency_p50_us"] <= row["latency_p99_us"]
    else:
        assert row["throughput_gbps"] > 0 and not math.isnan(row["duration_s"])
