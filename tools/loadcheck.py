#!/usr/bin/env python3
"""Load check (issue 7): many clients and big messages against one server, data verified, server memory sampled.

A benchmark, not a test: run it as root, it takes about two minutes and prints one line per run.
Each case runs one server in its own namespace (copylab.topology.netns_pair) and the client with
--verify (every received byte checked) for several rounds against the same server process, so
memory that grows from round to round (a leak per connection) shows as rising "end" figures.

    .venv/bin/python tools/loadcheck.py                  # 256 x 64 KiB and 64 x 1 MiB, 10 s, a1 a2 a3
    .venv/bin/python tools/loadcheck.py --impls a3 --duration 3 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from copylab.errors import CopylabError  # noqa: E402
from copylab.contract import IMPLS  # noqa: E402
from copylab.paths import client_binary, server_binary  # noqa: E402
from copylab.topology import netns_pair  # noqa: E402

CASES = ((65536, 256), (1 << 20, 64))  # (message bytes, client threads), as issue 7 asks
_LISTENING = re.compile(r"^listening on \S+:(\d+)$")


def rss_kib(pid: int) -> int | None:
    """VmRSS of pid in KiB, None once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class RssSampler(threading.Thread):
    """Samples one process's RSS every interval; peak over the sampling window."""

    def __init__(self, pid: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[int] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            value = rss_kib(self.pid)
            if value is not None:
                self.samples.append(value)
            time.sleep(self.interval)

    def stop(self) -> int:
        self.stop_event.set()
        self.join()
        return max(self.samples) if self.samples else 0


def start_server(topo, impl: str, msg_size: int) -> tuple[subprocess.Popen, int]:
    """The server in its namespace on a free port (`ip netns exec` execs: the pid is the server's)."""
    argv = topo.server_exec([str(server_binary(impl)), "--bind", topo.server_addr, "--port", "0",
                             "--msg-size", str(msg_size), "--mode", "throughput", "--json"])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline().strip()
    match = _LISTENING.match(line)
    if not match:
        proc.kill()
        raise CopylabError(f"{impl} server did not start: {line or proc.stderr.read().strip()}")
    return proc, int(match.group(1))


def run_case(impl: str, msg_size: int, threads: int, duration: float, warmup: float, rounds: int) -> list[dict]:
    results = []
    with netns_pair() as topo:
        server, port = start_server(topo, impl, msg_size)
        try:
            time.sleep(0.2)
            start_rss = rss_kib(server.pid)
            for round_no in range(rounds):
                sampler = RssSampler(server.pid)
                sampler.start()
                client = subprocess.run(
                    topo.client_exec([str(client_binary()), "--connect", topo.server_addr, "--port", str(port),
                                      "--msg-size", str(msg_size), "--mode", "throughput", "--threads",
                                      str(threads), "--duration", f"{duration:g}", "--warmup", f"{warmup:g}",
                                      "--verify", "--json"]),
                    capture_output=True, text=True, timeout=duration + warmup + 120)
                time.sleep(0.5)  # the server's threads see the connections close and free their buffers
                peak = sampler.stop()
                end_rss = rss_kib(server.pid)
                out = [l for l in client.stdout.splitlines() if l.startswith("{")]
                row = json.loads(out[-1]) if out else {}
                results.append({
                    "impl": impl, "msg_size": msg_size, "threads": threads, "round": round_no,
                    "client_exit": client.returncode, "verified": row.get("verified"),
                    "gbps": row.get("throughput_gbps"), "bytes": row.get("bytes"),
                    "rss_start_kib": start_rss, "rss_peak_kib": peak, "rss_end_kib": end_rss,
                    "client_error": client.stderr.strip().splitlines()[-1] if client.returncode else "",
                })
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()
        for r in results:
            r["server_exit"] = server.returncode
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impls", default=",".join(IMPLS), help="comma-separated (default a1,a2,a3)")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per round (default 10)")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2, help="client runs against the same server (default 2)")
    args = parser.parse_args()
    impls = [i for i in args.impls.split(",") if i]
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        print(f"loadcheck: error: --impls: unknown {', '.join(bad)} (known: {', '.join(IMPLS)})", file=sys.stderr)
        return 2
    print(f"{'impl':4} {'size':>8} {'thr':>4} {'rnd':>3} {'verified':>8} {'Gbit/s':>7} "
          f"{'RSS start':>10} {'peak':>10} {'end':>10}  (server RSS, MiB)")
    failed = 0
    try:
        for msg_size, threads in CASES:
            for impl in impls:
                for r in run_case(impl, msg_size, threads, args.duration, args.warmup, args.rounds):
                    ok = r["client_exit"] == 0 and r["verified"] is True and r["server_exit"] == 0
                    failed += not ok
                    mib = [f"{(r[k] or 0) / 1024:10.1f}" for k in ("rss_start_kib", "rss_peak_kib", "rss_end_kib")]
                    gbps = f"{r['gbps']:7.2f}" if r["gbps"] is not None else "      -"
                    print(f"{r['impl']:4} {r['msg_size']:>8} {r['threads']:>4} {r['round']:>3} "
                          f"{str(r['verified']):>8} {gbps} {' '.join(mib)}"
                          + ("" if ok else f"  FAILED exit {r['client_exit']}/{r['server_exit']} {r['client_error']}"),
                          flush=True)
    except CopylabError as exc:
        print(f"loadcheck: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("loadcheck: interrupted", file=sys.stderr)
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
