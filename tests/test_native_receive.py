"""The receive strategies beyond copying (registry.def RECEIVE): zerocopy (TCP_ZEROCOPY_RECEIVE) and
discard (MSG_TRUNC). Each measures in the namespaces and says what it could not do; the pattern
check stays right for every strategy that sees the bytes, and the framing for the one that does not.

What veth maps (measured on the development VM, kernel 6.18, 64 KiB messages): a sender that copies
(A1, A2, uring) hands the kernel compound page fragments and sendfile page-cache pages, none of
which can be mapped; a zero-copy sender's deferred copy at delivery (MSG_ZEROCOPY, SEND_ZC) builds
fresh whole pages, of which about 93% map at MTU 1500 (the rest is each segment's last partial
page) and all at an MTU whose MSS is a whole page."""

from __future__ import annotations

import itertools

import pytest

from copylab import registry
from native_helpers import run_client_once_more_if_empty, run_row, sanitizer_findings, start_server

ZERO_COPY_SENDERS = [i.name for i in registry.all_impls() if i.native and "zc_completions" in i.counters]
COPYING_SENDER = registry.by_role("one_copy")


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_zerocopy_receive_maps_what_a_zero_copy_sender_delivers(native_build, mode):
    for impl in ZERO_COPY_SENDERS:
        row = run_row(impl, mode, 65536, "--receive", "zerocopy", "--verify")
        assert row["receive"] == "zerocopy" and row["verified"] is True
        assert row["mapped_bytes"] + row["recv_copied_bytes"] == row["bytes"]
        assert row["mapped_bytes"] >= 0.5 * row["bytes"], row["receive_note"]
        assert row["rcv_mss"] == 1448
        assert "mapped" in row["receive_note"]


@pytest.mark.network
@pytest.mark.root
def test_zerocopy_receive_says_why_nothing_was_mapped(native_build):
    row = run_row(COPYING_SENDER, "throughput", 65536, "--receive", "zerocopy", "--verify")
    assert row["verified"] is True and row["mapped_bytes"] == 0 and row["recv_copied_bytes"] == row["bytes"]
    assert row["receive_note"].startswith("nothing mapped") and "compound" in row["receive_note"]


@pytest.mark.network
@pytest.mark.root
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_discard_measures_without_copying_and_says_nothing_was_verified(native_build, mode):
    row = run_row(COPYING_SENDER, mode, 65536, "--receive", "discard")
    assert row["receive"] == "discard" and row["verified"] == ""
    assert row["recv_copied_bytes"] == 0 and row["mapped_bytes"] == 0 and row["bytes"] > 0
    assert row["receive_note"].startswith("not verified")
    assert row["messages"] > 0 and row["server_bytes"] == row["total_bytes"]


@pytest.mark.root
@pytest.mark.parametrize("receive,mode,size", list(itertools.product(("zerocopy", "discard"), ("throughput", "latency"),
                                                                     (8, 4097, 65536, 1048576))))
def test_every_sender_and_strategy_stays_framed_and_sanitizer_clean(native_build, receive, mode, size):
    """Over loopback with the sanitizer builds: whole messages, the server's bytes all received,
    and for zerocopy every byte checked (the pattern check reads the mapped pages)."""
    for impl in (COPYING_SENDER, *ZERO_COPY_SENDERS):
        server = start_server(impl, mode, size, sanitize=True)
        try:
            run, (taken, _) = run_client_once_more_if_empty("127.0.0.1", server.port, mode, size, 2, sanitize=True,
                                                            receive=receive)
        finally:
            rc, s = server.stop()
        assert run.returncode == 0, run.stderr
        r = run.result
        assert r["receive"] == receive and r["total_bytes"] + taken == s["bytes"] and r["total_bytes"] % size == 0
        assert r["verified"] is (None if receive == "discard" else True)
        assert r["verify"] == ("none" if receive == "discard" else "full")
        assert r["mapped_bytes"] + r["recv_copied_bytes"] == (0 if receive == "discard" else r["bytes"])
        for text in (server.stderr(), run.stderr):
            assert not sanitizer_findings(text), text
