"""Classify profile samples by their whole stack (rules.py says how and why) and sum them per side."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from . import rules
from .script import Frame, Sample


@lru_cache(maxsize=65536)
def _plain(sym: str) -> str:
    """A symbol without compiler suffixes: tcp_recvmsg_locked.cold -> tcp_recvmsg_locked."""
    return rules.SUFFIX.sub("", sym)


def _invert(table: dict[str, tuple[str, ...]]) -> dict[str, str]:
    index: dict[str, str] = {}
    for bucket, symbols in table.items():
        for sym in symbols:
            index.setdefault(sym, bucket)  # the first table that names a symbol owns it
    return index


_KERNEL_INDEX = _invert(rules.KERNEL_RULES)
_CAI_INDEX = _invert(rules.CAI_RULES)


def _kernel_bucket(sym: str) -> str | None:
    bucket = _KERNEL_INDEX.get(sym)
    if bucket is None:
        for name, pattern in rules.KERNEL_PATTERNS:
            if pattern.match(sym):
                return name
    return bucket


def _frames_to_scan(frames: list[Frame], skid: bool) -> list[Frame]:
    """The frames leaf first, without a leaf that only marks where interrupts came back on."""
    if skid and frames and frames[0].kernel and _plain(frames[0].sym) in rules.SKID_LEAVES:
        return frames[1:]
    return frames


def is_skid(sample: Sample) -> bool:
    return bool(sample.frames) and sample.frames[0].kernel and _plain(sample.frames[0].sym) in rules.SKID_LEAVES


def named_threads(samples: list[Sample]) -> list[Sample]:
    """samples with each thread perf could not name given its process's name. A thread created while
    the recording was disabled (a second round's connection, started between windows) shows as
    ":<tid>", and a renamed thread under its new name: the sample's pid (its process) is exact either
    way, so every thread of a process some sample names as a measured program is that program."""
    names = {}
    for s in samples:
        if s.pid > 0 and (s.comm in rules.PROGRAM_COMMS or s.comm.startswith(rules.PROGRAM_COMM_PREFIXES)):
            names.setdefault(s.pid, s.comm)
    return [dataclasses.replace(s, comm=names[s.pid]) if s.pid in names and s.comm != names[s.pid]
            and not s.comm.startswith(rules.PROGRAM_COMM_PREFIXES) else s for s in samples]


def is_program(sample: Sample, own: bool) -> bool:
    """Whether the sample is the measured program's. own: the recording holds only the program's
    threads (perf record -p, or wrapping it), where a thread created while recording was disabled
    has no name (":<tid>"); only the perf wrapper itself is not the program there."""
    return (sample.comm in rules.PROGRAM_COMMS or sample.comm.startswith(rules.PROGRAM_COMM_PREFIXES)
            or (own and not sample.comm.startswith("perf")))


def bucket_of(sample: Sample, skid: bool = True, own: bool = False) -> str:
    """The contract bucket of one sample (rules.py, steps 1-5). skid: the event is hrtimer-based;
    own: the recording is the program's own (see is_program)."""
    program = is_program(sample, own)
    found = None
    helper = False  # a user<->kernel copy routine was seen below: the path names its direction
    for frame in _frames_to_scan(sample.frames, skid):
        sym = _plain(frame.sym)
        if frame.kernel:
            helper = helper or sym in rules.USER_COPY_HELPERS
            found = _kernel_bucket(sym)
            if found is None and sym in rules.RECEIVER_UNMAP and sample.comm.startswith(rules.RECEIVER_COMMS):
                found = "receive_map"
            if found and helper:
                found = rules.HELPER_DIRECTION.get(found, found)
        elif rules.USER_COPY.match(sym):
            found = "user_copy" if program else None
        elif sym in rules.USER_SYSCALL:
            found = "syscall"
        if found:
            break
    if sample.pid == 0:  # the idle task: softirq network work runs on its stack too
        return found if found and found != "syscall" else "idle"
    if not program:
        return found if found in rules.NETWORK_BUCKETS else "other_process"
    return found or "other"


def cai_category(sample: Sample, skid: bool = True, own: bool = False) -> str | None:
    """Cai et al.'s category of a non-idle sample; None for the idle task's own idling."""
    for frame in _frames_to_scan(sample.frames, skid):
        sym = _plain(frame.sym)
        if frame.kernel:
            category = _CAI_INDEX.get(sym)
        elif rules.USER_COPY.match(sym):
            category = "data_copy"
        else:
            category = None
        if category:
            return category
    return None if bucket_of(sample, skid, own) == "idle" else "other"


@dataclass
class SideProfile:
    """One side's samples, summarised: shares of the contract buckets (sum 1) and of Cai's
    categories (over non-idle samples, sum 1), plus how many samples had a skid leaf."""

    samples: int
    buckets: dict[str, float]
    cai: dict[str, float]
    skid_share: float

    @classmethod
    def empty(cls) -> "SideProfile":
        nan = float("nan")
        return cls(0, {b: nan for b in rules.BUCKETS}, {c: nan for c in rules.CAI_CATEGORIES}, nan)


def summarise(samples: list[Sample], skid: bool = True, own: bool = False) -> SideProfile:
    if not samples:
        return SideProfile.empty()
    buckets = Counter(bucket_of(s, skid, own) for s in samples)
    cai = Counter(c for c in (cai_category(s, skid, own) for s in samples) if c is not None)
    busy = sum(cai.values())
    return SideProfile(
        samples=len(samples),
        buckets={b: buckets.get(b, 0) / len(samples) for b in rules.BUCKETS},
        cai={c: (cai.get(c, 0) / busy if busy else float("nan")) for c in rules.CAI_CATEGORIES},
        skid_share=sum(is_skid(s) for s in samples) / len(samples))
