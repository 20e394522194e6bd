"""SYNTHETIC evidence for the analysis tests: profiled runs, measured runs and folded stacks whose numbers
are chosen so that a verdict must come out one way or the other.

Nothing here is a measurement. Each builder takes the few numbers a rule looks at and fills the rest
of a results.csv row with something harmless.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pandas as pd

from copylab import contract
from copylab.analysis.load import add_derived



def profile_row(impl: str, size: int, srv: dict, cli: dict | None = None, samples: int = 2000, rep: int = 0,
                threads: int = 1, busy=(0.7, 0.95), rps: bool = False, messages: int = 100_000) -> dict:
    """One profiled run: the given bucket shares per side, the rest of each side in "other" (sum 1)."""
    row = {"impl": impl, "mode": "throughput", "msg_size": size, "threads": threads, "rep": rep, "status": "ok",
           "receive": "message", "throughput_gbps": 5.0, "bytes": messages * size, "messages": messages,
           "duration_s": 1.0, "profile_mode": "per_cpu", "profile_event": "cpu-clock @ 999 Hz",
           "srv_cpu_busy": busy[0], "cli_cpu_busy": busy[1], "rps": rps,
           "srv_task_clock_ms": 700.0, "cli_task_clock_ms": 950.0,
           "point_id": f"{impl}_throughput_{size}B_{threads}thr_rep{rep}_prof"}
    for side, shares in (("srv", srv), ("cli", cli or {"kernel_copy_to_user": 0.3, "tcp_receive": 0.3})):
        row[f"{side}_prof_samples"] = samples
        row[f"{side}_prof_skid"] = 0.3
        for bucket in contract.PROFILE_BUCKETS:
            row[f"{side}_prof_{bucket}"] = shares.get(bucket, 0.0)
        row[f"{side}_prof_other"] = max(0.0, 1 - sum(v for b, v in shares.items() if b != "other"))
    return row


def frame(rows: list[dict]) -> pd.DataFrame:
    """Rows as load_results gives them: every contract column, the derived metrics added."""
    df = pd.DataFrame(rows).reindex(columns=list(contract.COLUMNS))
    for col in contract.NUMERIC_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    for col in ("msg_size", "threads", "rep"):
        df[col] = df[col].astype(int)
    return add_derived(df.copy())


def with_passes(profile_rows: list[dict], measured: pd.DataFrame | None = None) -> pd.DataFrame:
    """Profiled runs as the Study holds them (profiles.with_points): each with its point's measured passes,
    taken from measured, else one pass per profiled run with the same CPU, bytes and messages (a profiled run
    that is its own measured point)."""
    from copylab.analysis.profiles import with_points
    profiles = frame(profile_rows)
    if measured is None:
        passes = [{k: v for k, v in row.items() if "_prof_" not in k and not k.startswith("profile_")}
                  for row in profile_rows]
        measured = frame(passes)
    return with_points(profiles, measured)


def measured_row(impl: str, size: int, threads: int = 1, rep: int = 0, gbps: float = 5.0, busy=(math.nan, math.nan),
                 steal=(0.0, 0.0), enobufs=None, mode: str = "throughput", **extra) -> dict:
    messages = max(int(gbps * 1e9 / 8 / size), 1)
    row = {"impl": impl, "mode": mode, "msg_size": size, "threads": threads, "rep": rep, "status": "ok",
           "receive": "message", "throughput_gbps": gbps, "bytes": messages * size, "messages": messages,
           "server_messages": messages, "send_calls": messages, "duration_s": 1.0, "latency_us": 20.0,
           "srv_cpu_busy": busy[0], "cli_cpu_busy": busy[1], "srv_cpu_steal": steal[0], "cli_cpu_steal": steal[1],
           "srv_task_clock_ms": 500.0, "cli_task_clock_ms": 500.0, "context_switches": 10,
           "point_id": f"{impl}_{mode}_{size}B_{threads}thr_rep{rep}"}
    if enobufs is not None:
        row.update(enobufs=enobufs, zc_sends=messages, zc_completions=messages, zc_copied=messages)
    row.update(extra)
    return row


SEND_STACK = ("a3_server;__libc_sendmsg;entry_SYSCALL_64_[k];__sys_sendmsg_[k];tcp_sendmsg_[k];"
              "tcp_sendmsg_locked_[k];tcp_write_xmit_[k];__dev_queue_xmit_[k];do_softirq.part.0_[k];"
              "net_rx_action_[k];process_backlog_[k];ip_local_deliver_finish_[k];skb_copy_ubufs_[k];__pi_memcpy_[k]")
RECV_STACK = ("client;__libc_recv;entry_SYSCALL_64_[k];__sys_recvfrom_[k];tcp_recvmsg_[k];tcp_recvmsg_locked_[k];"
              "do_softirq.part.0_[k];net_rx_action_[k];process_backlog_[k];ip_local_deliver_finish_[k];"
              "skb_copy_ubufs_[k];__pi_memcpy_[k]")
OTHER_STACK = "a3_server;__libc_sendmsg;entry_SYSCALL_64_[k];__sys_sendmsg_[k];tcp_sendmsg_[k];_copy_from_iter_[k]"


def write_stacks(folder: Path, point_id: str, srv: dict[str, int], cli: dict[str, int]) -> None:
    """profiles/<point>.<side>.folded.gz with the given stacks and counts."""
    (folder / "profiles").mkdir(parents=True, exist_ok=True)
    for side, stacks in (("srv", srv), ("cli", cli)):
        with gzip.open(folder / "profiles" / f"{point_id}.{side}.folded.gz", "wt") as fh:
            for stack, n in stacks.items():
                fh.write(f"{stack} {n}\n")


def throughput_grid(ratios: dict, passes: int = 5, spread: float = 0.03, seed: int = 5,
                    sizes=(64, 1024, 4096, 65536), threads=(1, 2, 4, 8), outliers: dict | None = None,
                    thread_gain: float = 0.1) -> pd.DataFrame:
    """Measured throughput of a1/a2/a3 over a grid: impl/a1 = ratios[impl][size] (1 when absent), each
    pass shifted as a whole, each run with a log-normal spread; outliers {(impl, size, threads, rep): factor}."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(passes):
        shift = rng.normal(0, 0.05)
        for size in sizes:
            for t in threads:
                base = 2.0 * (1 + math.log2(size)) * (1 + thread_gain * t)
                for impl in ("a1", "a2", "a3"):
                    value = base * ratios.get(impl, {}).get(size, 1.0) * math.exp(shift + rng.normal(0, spread))
                    value *= (outliers or {}).get((impl, size, t, rep), 1.0)
                    rows.append(measured_row(impl, size, t, rep, value))
    return frame(rows)
