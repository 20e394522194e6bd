"""Every implementation x mode x message size x thread count completes with every byte verified,
over loopback (sanitizer build: ASan+LSan+UBSan must stay silent) and over a veth pair between two
network namespaces (regular build, the study's topology).

One server per (impl, mode, size) serves both client runs (1 and 4 threads), so its totals can be
compared with the clients': the server's bytes must equal the sum of the clients' total_bytes.
"""

from __future__ import annotations

import itertools
import math

import pytest

from copylab import registry
from copylab.contract import IMPLS, MODES
from copylab.topology import netns_pair
from native_helpers import run_client_once_more_if_empty, sanitizer_findings, start_server

SIZES = (8, 64, 4097, 65536, 1048576)
THREADS = (1, 4)
MATRIX = list(itertools.product(IMPLS, MODES, SIZES))
IDS = [f"{impl}-{mode}-{size}" for impl, mode, size in MATRIX]


@pytest.fixture(scope="module")
def veth():
    with netns_pair() as topo:
        yield topo


def check_client(run, impl: str, mode: str, size: int, threads: int) -> dict:
    assert run.returncode == 0, run.stderr
    r = run.result
    assert r is not None, f"no JSON on stdout: {run.stdout!r} {run.stderr!r}"
    assert (r["role"], r["impl"], r["mode"], r["msg_size"], r["threads"]) == ("client", impl, mode, size, threads)
    assert r["verified"] is True and r["verify"] == "full"
    assert r["connections"] == threads
    assert r["bytes"] > 0 and r["messages"] > 0
    assert r["total_bytes"] >= r["bytes"]
    assert r["duration_s"] > 0 and r["throughput_gbps"] > 0
    assert math.isclose(r["throughput_gbps"], r["bytes"] * 8 / r["duration_s"] / 1e9, rel_tol=1e-6)
    if mode == "latency":
        # every round trip is a whole message
        assert r["bytes"] == r["messages"] * size and r["total_bytes"] % size == 0
        assert r["latency_p50_us"] <= r["latency_p99_us"] <= r["latency_max_us"]
        assert r["latency_min_us"] <= r["latency_us"] <= r["latency_max_us"]
        assert r["latency_min_us"] > 0
    else:
        # the server stops between messages, so the whole stream is whole messages
        assert r["total_bytes"] % size == 0
        assert r["latency_p50_us"] is None and r["latency_p99_us"] is None
        assert math.isclose(r["latency_us"], r["duration_s"] * threads / r["messages"] * 1e6, rel_tol=1e-6)
    return r


def check_server(rc: int, s: dict | None, impl: str, mode: str, size: int, client_total: int,
                 connections: int = sum(THREADS)) -> None:
    assert rc == 0
    assert s is not None
    assert (s["role"], s["impl"], s["mode"], s["msg_size"]) == ("server", impl, mode, size)
    assert s["threads"] == connections
    assert s["errors"] == 0 and s["connections_refused"] == 0 and s["verified"] is True
    assert s["bytes"] == client_total, "server sent a different number of bytes than the clients received"
    assert s["bytes"] == s["messages"] * size
    assert s["send_calls"] >= s["messages"]
    counters = registry.get(impl).counters  # what this sender counts; the rest must stay 0
    # only the two-copy baseline copies in user space: every byte it sent, once
    assert s["user_copy_bytes"] == (s["bytes"] if registry.role(impl) == "two_copy" else 0)
    if "zc_sends" in counters:
        assert s["zc_sends"] == s["send_calls"] > 0
        assert s["zc_completions"] == s["zc_sends"]
    else:
        assert s["zc_sends"] == s["zc_completions"] == s["zc_copied"] == 0
    if "enobufs" not in counters:
        assert s["enobufs"] == 0


WINDOW_S = 0.1  # each client's window: the checks are of bytes and framing, not rates; 240 windows in all


def run_point(impl: str, mode: str, size: int, addr: str, sanitize: bool, server_prefix=(), client_prefix=()):
    server = start_server(impl, mode, size, bind=addr, sanitize=sanitize, prefix=server_prefix)
    try:
        runs = [run_client_once_more_if_empty(addr, server.port, mode, size, t, sanitize=sanitize,
                                              prefix=client_prefix, duration=WINDOW_S) for t in THREADS]
    finally:
        rc, s = server.stop()
    results = [check_client(run, impl, mode, size, t) for (run, _), t in zip(runs, THREADS)]
    check_server(rc, s, impl, mode, size, sum(r["total_bytes"] for r in results) + sum(b for _, (b, _) in runs),
                 sum(THREADS) + sum(c for _, (_, c) in runs))
    if sanitize:
        for text in [server.stderr()] + [run.stderr for run, _ in runs]:
            assert not sanitizer_findings(text), text
    return s


@pytest.mark.slow
@pytest.mark.parametrize("impl,mode,size", MATRIX, ids=IDS)
def test_loopback_sanitized(native_build, impl, mode, size):
    s = run_point(impl, mode, size, "127.0.0.1", sanitize=True)
    if "zc_copied" in registry.get(impl).counters:
        # Local delivery always takes a deferred copy (kernel Documentation/networking/msg_zerocopy.rst;
        # io_uring's SEND_ZC reports it with IORING_NOTIF_USAGE_ZC_COPIED): every completion is copied.
        assert s["zc_copied"] == s["zc_completions"]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.parametrize("impl,mode,size", MATRIX, ids=IDS)
def test_veth(native_build, veth, impl, mode, size):
    s = run_point(impl, mode, size, veth.server_addr, sanitize=False,
                  server_prefix=veth.server_prefix(), client_prefix=veth.client_prefix())
    if "zc_copied" in registry.get(impl).counters:
        # veth between two namespaces of one host is still local delivery: a deferred copy, flagged
        # SO_EE_CODE_ZEROCOPY_COPIED on every completion (kernel msg_zerocopy.rst).
        assert s["zc_copied"] == s["zc_completions"]
