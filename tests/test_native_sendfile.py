"""sendfile (the ring of messages laid out once in a memfd, each message one sendfile(2)): verified
bytes in the namespaces in both modes with its counters; a memfd that cannot be laid out refuses
its connection and leaves the server running."""

from __future__ import annotations

import pytest

from copylab import registry
from native_helpers import check_sender_counters, run_client, start_server, run_row


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_sendfile_measures_verified_bytes_in_the_namespaces(native_build, mode):
    row = run_row("sendfile", mode, 65536)
    check_sender_counters(row, registry.get("sendfile").counters)


def test_a_memfd_past_the_file_size_limit_refuses_the_connection_not_the_server(native_build):
    # RLIMIT_FSIZE below one message: ftruncate fails with EFBIG (SIGXFSZ is ignored by the server)
    size = 1 << 20
    server = start_server("sendfile", "throughput", size, sanitize=True, prefix=["prlimit", "--fsize=65536", "--"])
    try:
        run = run_client("127.0.0.1", server.port, "throughput", size, sanitize=True)
        assert server.proc.poll() is None
        after = run_client("127.0.0.1", server.port, "throughput", size, sanitize=True)
    finally:
        rc, s = server.stop()
    assert run.returncode == 1 and "could not set the connection up" in run.stderr
    assert after.returncode == 1
    assert rc == 0 and s["errors"] == 2 and s["threads"] == 0
    assert "ftruncate(memfd" in server.stderr() and "File too large" in server.stderr()
