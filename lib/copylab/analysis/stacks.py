"""What the folded call stacks (profiles/<point>.<side>.folded.gz) say about where a function ran:
inside which program's system call, or in a softirq thread. The explanations read the deferred copy
of MSG_ZEROCOPY (skb_copy_ubufs) this way instead of assuming where it runs."""

from __future__ import annotations

import contextlib
import gzip
import re
from collections import Counter, defaultdict
from pathlib import Path

from .. import userfiles
from ..errors import CopylabError

DEFERRED_COPY = "skb_copy_ubufs"
# the system call a sample ran inside, from the frames between the root and the function: the
# innermost of these decides (a send path that delivers over veth runs the receive softirq inside it)
CONTEXT_FRAMES = {
    "sendmsg": ("tcp_sendmsg", "tcp_sendmsg_locked", "__sys_sendmsg", "____sys_sendmsg", "__sys_sendto",
                "io_sendmsg", "io_send", "io_send_zc", "io_sendmsg_zc"),
    "recv": ("tcp_recvmsg", "tcp_recvmsg_locked", "__sys_recvfrom", "__sys_recvmsg", "tcp_zerocopy_receive"),
    "softirq_thread": ("run_ksoftirqd", "smpboot_thread_fn"),
}
CONTEXTS = (*CONTEXT_FRAMES, "interrupt")  # interrupt: none of the above (an irq exit, the idle task)
_SUFFIX = re.compile(r"(_\[k\])$|(\.(isra|constprop|part|cold)\.?\d*)+")
_CONTEXT_OF = {frame: ctx for ctx, frames in CONTEXT_FRAMES.items() for frame in frames}


def plain(frame: str) -> str:
    """'tcp_sendmsg_locked_[k]' -> 'tcp_sendmsg_locked', 'do_softirq.part.0_[k]' -> 'do_softirq'."""
    return _SUFFIX.sub("", _SUFFIX.sub("", frame))


POINT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a point id is a plain file name
MAX_FOLDED_BYTES = 256 << 20  # decompressed, per file: a profile of one window is a few MiB
# one folded stack: perf's deepest call chain (kernel.perf_event_max_stack, 127 by default, for the
# kernel's and the user's part each) of names up to KSYM_NAME_LEN (512) with a separator; a longer
# line is not a stack perf made, and is skipped without being held
MAX_FOLDED_LINE = 2 * 127 * (512 + 1)


def folded_counts(profile_dir: Path, point_ids, side: str) -> dict[str, int]:
    """Folded stacks (root first, ';'-separated, a count last) of several points' side, summed.
    The point ids come from a results folder: only a plain file name of profiles/ is opened (never
    a link, never a path out of it), and a file is read up to MAX_FOLDED_BYTES decompressed."""
    counts: dict[str, int] = defaultdict(int)
    for point_id in point_ids:
        if not isinstance(point_id, str) or not POINT_ID.fullmatch(point_id):
            continue
        try:
            path = userfiles.inside(profile_dir, f"{point_id}.{side}.folded.gz")
        except CopylabError:
            continue
        if path is None:
            continue
        with contextlib.suppress(OSError, EOFError, gzip.BadGzipFile), gzip.open(path, "rb") as handle:
            for line in capped_lines(handle, MAX_FOLDED_LINE, MAX_FOLDED_BYTES):
                stack, _, n = line.decode("utf-8", "replace").rstrip("\n").rpartition(" ")
                if n.isdigit():
                    counts[stack] += int(n)
    return counts


def capped_lines(handle, max_line: int, max_bytes: int):
    """The lines of a binary stream, streamed: none longer than max_line is held (it is skipped, read
    a piece at a time), and reading stops after max_bytes."""
    read = 0
    while read <= max_bytes:
        line = handle.readline(max_line + 1)
        if not line:
            return
        read += len(line)
        if len(line) <= max_line:
            yield line
            continue
        while line and not line.endswith(b"\n") and read <= max_bytes:  # the rest of the long line
            line = handle.readline(max_line + 1)
            read += len(line)


def context_of(frames: list[str], target: str) -> str | None:
    """The context the first occurrence of target ran in (None when target is not in the stack)."""
    names = [plain(f) for f in frames]
    if target not in names:
        return None
    for name in reversed(names[:names.index(target)]):
        if name in _CONTEXT_OF:
            return _CONTEXT_OF[name]
    return "interrupt"


def contexts(counts: dict[str, int], target: str = DEFERRED_COPY) -> Counter:
    """Samples of target per context (CONTEXTS) over folded counts."""
    found: Counter = Counter()
    for stack, n in counts.items():
        ctx = context_of(stack.split(";"), target)
        if ctx is not None:
            found[ctx] += n
    return found


def inclusive_share(counts: dict[str, int], functions) -> float:
    """The share of the program's samples (a stack whose first frame is not the idle task's) with any of
    functions in its stack: the time spent in them and beneath them (NaN without samples)."""
    wanted = set(functions)
    total = hit = 0
    for stack, n in counts.items():
        frames = stack.split(";")
        if not frames or frames[0].startswith("swapper"):
            continue
        total += n
        if any(plain(f) in wanted for f in frames[1:]):
            hit += n
    return hit / total if total else float("nan")


# frames that show how a send path came to run receive work: the softirq, the backlog, delivery
PATH_FRAMES = ("do_softirq", "net_rx_action", "process_backlog", "ip_local_deliver_finish")


def example_path(counts: dict[str, int], target: str, context: str) -> str:
    """The most sampled stack of target in context, shortened to its system call and the frames that
    show how it got there ('__sys_sendmsg → tcp_sendmsg_locked → … → do_softirq → process_backlog →
    ip_local_deliver_finish → skb_copy_ubufs'), for the text to cite; '' when there is none."""
    best = max(((n, s) for s, n in counts.items() if context_of(s.split(";"), target) == context),
               default=(0, ""))[1]
    if not best:
        return ""
    names = [plain(f) for f in best.split(";")]
    names = names[:names.index(target) + 1]
    own = [n for n in names if _CONTEXT_OF.get(n) == context]
    shown = list(dict.fromkeys(own[:1] + own[-1:])) + ["…"] + [n for n in PATH_FRAMES if n in names] + [target]
    return " → ".join(shown)


# where a program sleeps: the kernel function its scheduler samples ran beneath, and what it waits for
WAITS = {"sk_stream_wait_memory": "send-buffer space", "sk_wait_data": "data to receive",
         "do_sys_poll": "a descriptor in poll (a completion or socket readiness)",
         "do_epoll_wait": "a descriptor in epoll", "futex_wait": "a futex", "do_nanosleep": "a timed sleep"}
SCHEDULER_FRAMES = ("schedule", "__schedule")


def program_waits(counts: dict[str, int], comms) -> tuple[Counter, int]:
    """Of the samples of the programs comms (a stack's first frame) that ran in the scheduler, how many
    sat beneath each wait function of WAITS (the innermost one), and how many there were in all."""
    found: Counter = Counter()
    total = 0
    for stack, n in counts.items():
        frames = [plain(f) for f in stack.split(";")]
        if not frames or frames[0] not in comms or not any(f in SCHEDULER_FRAMES for f in frames):
            continue
        total += n
        wait = next((f for f in reversed(frames) if f in WAITS), None)
        if wait is not None:
            found[wait] += n
    return found, total


# what a sample the profile counts as scheduling was doing, by the frame it sat beneath: waking another
# thread (the socket's wake-up callbacks), the idle task switching in, or this thread's own sleep or switch
WAKES = {"sock_def_readable": "waking the receiving thread as data reach its socket",
         "sock_def_write_space": "waking the sending thread as send-buffer space frees",
         "sk_stream_write_space": "waking the sending thread as send-buffer space frees"}
SWITCHES = {"schedule_idle": "the idle task switching in and out",
            "schedule": "this side's own sleeps and switches", "__schedule": "this side's own sleeps and switches"}


def _sample(stack: str):
    """A folded stack as the classifier's sample (comm first, then root to leaf; '_[k]' marks the kernel's)."""
    from ..profile.script import Frame, Sample

    comm, *names = stack.split(";")
    frames = [Frame(n[:-4], "[kernel.kallsyms]", True) if n.endswith("_[k]") else Frame(n, "", False)
              for n in reversed(names)]
    return Sample(comm, 0 if comm.startswith("swapper") else 1, 1, None, 0.0, frames)


def scheduling_parts(counts: dict[str, int]) -> tuple[Counter, int]:
    """Of a side's samples its profile puts in the scheduling bucket (the classifier's own rule, on the folded
    stacks), how many sat beneath each function of WAKES, WAITS and SWITCHES (a wake-up first, then a wait,
    then a switch; the outermost of its kind: schedule_idle above __schedule), and how many there were in all."""
    from ..profile.classify import bucket_of

    found: Counter = Counter()
    total = 0
    for stack, n in counts.items():
        if bucket_of(_sample(stack)) != "scheduling":
            continue
        total += n
        frames = [plain(f) for f in stack.split(";")[1:]]
        for named in (WAKES, WAITS, SWITCHES):
            beneath = next((f for f in frames if f in named), None)
            if beneath is not None:
                found[beneath] += n
                break
    return found, total


# what the deferred copy's samples do, by the frames beneath its deepest skb_copy_ubufs
DEFERRED_PARTS = ("copying", "allocating the pages it copies into", "its own work")


def deferred_copy_parts(counts: dict[str, int]) -> Counter:
    """Of the samples beneath skb_copy_ubufs, how many copy (a memcpy beneath it), allocate the new pages
    or head it copies into (alloc_pages, pskb_expand_head, any *alloc* frame beneath it) or are its own
    (the leaf is skb_copy_ubufs itself, or anything else): DEFERRED_PARTS."""
    found: Counter = Counter()
    for stack, n in counts.items():
        names = [plain(f) for f in stack.split(";")[1:]]
        if DEFERRED_COPY not in names:
            continue
        below = names[len(names) - names[::-1].index(DEFERRED_COPY):]
        if any("alloc" in f or f == "pskb_expand_head" for f in below):
            found[DEFERRED_PARTS[1]] += n
        elif any("memcpy" in f or f.startswith("copy_") for f in below):
            found[DEFERRED_PARTS[0]] += n
        else:
            found[DEFERRED_PARTS[2]] += n
    return found


def what_beneath(function: str) -> str:
    """What a function of WAKES, WAITS or SWITCHES says a scheduling sample was doing."""
    if function in WAITS:
        return f"sleeping until {WAITS[function]}"
    return WAKES.get(function) or SWITCHES[function]
