"""This host's copy limit: what one memcpy costs per byte, the cost model's physical reference.

native/memcpyprobe does A1's user-space work and nothing else (serialising the ring's messages of 8
separately allocated fields into one send buffer) on the sender's CPU, about 0.4 s per working set:
once over the study's working set and once over the smallest ring (a working set that stays in the
caches). The sweep records the answer in meta.json `memcpy`; the analysis (analysis/costmodel.py)
sets A1's extra per-byte cost and each path's ceiling against it. Its answer is validated like every
other program's: a JSON object whose numbers are finite and positive, within a time limit.
"""

from __future__ import annotations

import json
import math
import subprocess

from .paths import BUILD_DIR

PROBE = BUILD_DIR / "memcpyprobe"
PROBE_MS = 400
TIMEOUT_S = 10 * PROBE_MS / 1000  # the probe's own time ten times over: a stalled probe is a failure
SMALLEST_RING = 1  # bytes asked: the ring grants its minimum of messages, a working set that stays cached


def _run(msg_size: int, working_set: int, cpu: int | None) -> dict:
    """One probe's JSON answer, checked; raises ValueError naming what was wrong."""
    argv = [str(PROBE), "--msg-size", str(msg_size), "--working-set", str(working_set), "--ms", str(PROBE_MS)]
    if cpu is not None:
        argv += ["--cpu", str(cpu)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ValueError(f"no answer within {TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise ValueError(exc.strerror or str(exc)) from None
    if proc.returncode != 0:
        raise ValueError((proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:200])
    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        raise ValueError(f"not a JSON object: {proc.stdout.strip()[:80]!r}") from None
    cost = answer.get("ns_per_byte") if isinstance(answer, dict) else None
    if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not math.isfinite(cost) or not 0 < cost < 1e6:
        raise ValueError(f"ns_per_byte is not a positive finite number: {cost!r}")
    used = answer.get("working_set_bytes")
    return {"ns_per_byte": float(cost), "working_set_bytes": int(used) if isinstance(used, int) else working_set,
            "messages": answer.get("messages") if isinstance(answer.get("messages"), int) else None}


def measure(msg_size: int, working_set: int, cpu: int | None) -> dict:
    """meta.json's memcpy: {ns_per_byte, working_set_bytes, msg_size, cpu, cache_resident: {...}}, or
    {"note": why} when the probe cannot say (not built, failed, or an answer that is not a cost)."""
    if not PROBE.exists():
        return {"note": f"{PROBE.name} is not built (make -C native)"}
    try:
        study = _run(msg_size, working_set, cpu)
        cached = _run(msg_size, SMALLEST_RING, cpu)
    except ValueError as exc:
        return {"note": f"{PROBE.name}: {exc}"}
    cached.pop("messages", None)
    return {**study, "msg_size": msg_size, "cpu": cpu, "cache_resident": cached}
