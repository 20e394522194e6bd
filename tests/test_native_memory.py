"""A3's message rings share one process-wide memory budget (native/a3_server.c, A3_RING_BUDGET).

Without it every A3 connection kept up to 6 MiB of 64 KiB messages for its zero-copy ring, so 64
connections took about 390 MiB and 256 took 1.5 GiB. With it, the server's peak resident memory
stays under the budget plus the minimum ring that every connection is still granted.
"""

from __future__ import annotations

import pytest

from pathlib import Path

from native_helpers import run_client, start_server

MSG_SIZE = 65536
CONNECTIONS = 64
MIB = 1 << 20
BUDGET = 256 * MIB  # A3_RING_BUDGET
# the minimum ring (A3_SLOTS_MIN = 4 messages) is granted even past the budget; one 64 KiB message
# costs 96 KiB resident (eight 8 KiB fields, each spilling into one more page for its malloc header)
MIN_RING = 4 * 96 * 1024
PROCESS = 16 * MIB  # the program itself, thread stacks, per-connection bookkeeping


def peak_rss(pid: int) -> int:
    """VmHWM (peak resident set) of pid, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


@pytest.mark.slow
def test_a3_ring_memory_stays_within_the_process_budget(native_build):
    limit = BUDGET + CONNECTIONS * MIN_RING + PROCESS  # 296 MiB; without the budget the peak is ~390 MiB
    server = start_server("a3", "throughput", MSG_SIZE)
    try:
        # two rounds: rings freed by the first must be reused by the second, not added to it
        for _ in range(2):
            run = run_client("127.0.0.1", server.port, "throughput", MSG_SIZE, threads=CONNECTIONS,
                             duration=0.5, warmup=0.1, verify=False)
            assert run.returncode == 0, run.stderr
            # rings are allocated and filled when a connection is set up, so the peak is already in
            peak = peak_rss(server.pid)
            assert peak < limit, f"A3 server peaked at {peak / MIB:.1f} MiB, over {limit / MIB:.0f} MiB"
    finally:
        rc, s = server.stop()
    assert rc == 0 and s["errors"] == 0 and s["threads"] == 2 * CONNECTIONS, server.stderr()
    # small rings still keep the invariant: every zero-copy send completed before its buffer went
    assert s["zc_completions"] == s["zc_sends"] > 0
