"""This host's copy limit: what one memcpy costs per byte, the cost model's physical reference.

native/memcpyprobe does A1's user-space work and nothing else (serialising the ring's messages of 8
separately allocated fields into one send buffer) on the sender's CPU, about 0.4 s per working set:
once over the study's working set and once over the smallest ring (a working set that stays in the
caches). The sweep records the answer in meta.json `memcpy`; the analysis (analysis/costmodel.py)
sets A1's extra per-byte cost and each path's ceiling against it. Its answer is validated like every
other program's: a JSON object whose numbers are finite and positive, within a time limit.

Where the grid has a cache part, the probe also runs over each of its working sets, held exactly as the
servers hold them (--ring-memory), in LEVEL_ROUNDS rounds of every level in a shuffled order
(`memcpy.levels`): Q2's step of the copy alone from one cache level to the next, paired by round,
without the per-connection spread that hides it in a whole send path (analysis/levels.py).
"""

from __future__ import annotations

import json
import math
import random
import subprocess

from .memory import exact_ring_memory
from .paths import BUILD_DIR

PROBE = BUILD_DIR / "memcpyprobe"
PROBE_MS = 400
TIMEOUT_S = 10 * PROBE_MS / 1000  # the probe's own time ten times over: a stalled probe is a failure
SMALLEST_RING = 1  # bytes asked: the ring grants its minimum of messages, a working set that stays cached
# per cache level: rounds x levels runs of LEVEL_MS (4 levels: about 4 s with the rings' allocation). A
# run's median block varies by up to ~20% from one process to the next here, and the step out of L2 is
# ~3x: five paired rounds decide it; one run per level and round keeps the host's drift shared in a round
LEVEL_MS = 100
LEVEL_ROUNDS = 5


def _run(msg_size: int, working_set: int, cpu: int | None, ms: int = PROBE_MS, ring_memory: int = 0) -> dict:
    """One probe's JSON answer, checked; raises ValueError naming what was wrong."""
    argv = [str(PROBE), "--msg-size", str(msg_size), "--working-set", str(working_set), "--ms", str(ms)]
    if cpu is not None:
        argv += ["--cpu", str(cpu)]
    if ring_memory:
        argv += ["--ring-memory", str(ring_memory)]
    # its ring is allocated and written first: 4 s per GiB of it, at least 4 s (1 GiB took 0.24 s here)
    timeout = TIMEOUT_S * max(1.0, ring_memory / (1 << 30))
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ValueError(f"no answer within {timeout:g} s") from None
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


def measure_levels(msg_size: int, working_sets: dict[str, int], cpu: int | None, rounds: int = LEVEL_ROUNDS,
                   seed: int = 0) -> dict:
    """meta.json's memcpy.levels: {msg_size, ms, cpu, working_sets: {key: bytes held}, ns_per_byte: {key:
    [one per round]}} over working sets {key: bytes asked} (a grid's cache part), or {"note": why}."""
    if not PROBE.exists():
        return {"note": f"{PROBE.name} is not built (make -C native)"}
    order, rng = list(working_sets), random.Random(seed)
    held: dict[str, int] = {}
    costs: dict[str, list[float]] = {key: [] for key in order}
    try:
        for _ in range(rounds):
            rng.shuffle(order)
            for key in order:
                answer = _run(msg_size, working_sets[key], cpu, LEVEL_MS,
                              exact_ring_memory(msg_size, working_sets[key]))
                held[key] = answer["working_set_bytes"]
                costs[key].append(answer["ns_per_byte"])
    except ValueError as exc:
        return {"note": f"{PROBE.name}: {exc}"}
    return {"msg_size": msg_size, "ms": LEVEL_MS, "cpu": cpu, "working_sets": {k: held[k] for k in working_sets},
            "ns_per_byte": {k: costs[k] for k in working_sets}}
