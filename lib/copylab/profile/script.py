"""`perf script` call-graph text -> samples, and samples -> folded stacks.

Input is what SCRIPT_FIELDS asks perf for (tools/perf/builtin-script.c prints it):

    comm  pid/tid [cpu] seconds: period event:      one header line per sample
    \\t<addr> <sym>+0x<off> (<dso>)                   one line per frame, leaf first
    (blank line)

perf always prints the header fields in that order, whatever order -F gives. comm may hold
spaces, ':' and '/' (kernel threads: "kworker/1:0-mm"); an exited thread reads ":-1 -1". Kernel
frames carry absolute addresses and the DSO [kernel.kallsyms]; user frames DSO-relative ones.
The folded format is Brendan Gregg's (stackcollapse-perf.pl): "comm;root;...;leaf count", which
flamegraph.pl, speedscope and other flame-graph tools open. Counts are samples (not periods: a
cpu-clock timer that fires late produces no sample for the ticks it missed, so periods would not
add up to time either).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# cpu is left out for recordings without CPU in their sample type (perf script refuses it then)
SCRIPT_FIELDS = "comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso"

HEADER_RE = re.compile(
    r"^\s*(?P<comm>\S.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+"
    r"(?:(?P<period>\d+)\s+)?"
    r"(?P<event>\S+?):\s*$")
FRAME_RE = re.compile(r"^\s+(?P<addr>[0-9a-f]+) (?P<sym>.*?)(?:\+0x[0-9a-f]+)?"
                      r" \((?P<dso>[^()]*(?: \(deleted\))?)\)$")
FRAME_FALLBACK_RE = re.compile(r"^\s+(?P<addr>[0-9a-f]+) (?P<sym>.*?)(?:\+0x[0-9a-f]+)? \((?P<dso>.*)\)$")
# bracketed DSOs that are user space, not the kernel
USER_BRACKETS = {"[unknown]", "[vdso]", "[vdso32]", "[vdsox32]", "[vsyscall]", "[heap]", "[stack]", "[anon]",
                 "[jit]", "[uprobes]"}


@dataclass(frozen=True)
class Frame:
    sym: str
    dso: str
    kernel: bool


@dataclass
class Sample:
    comm: str
    pid: int
    tid: int
    cpu: int | None
    time: float
    frames: list[Frame] = field(default_factory=list)  # leaf first


def _frame(line: str) -> Frame | None:
    match = FRAME_RE.match(line) or FRAME_FALLBACK_RE.match(line)
    if not match:
        return None
    dso = match["dso"]
    kernel = dso.startswith("[kernel.") or dso.endswith("vmlinux") or (
        dso.startswith("[") and dso not in USER_BRACKETS and int(match["addr"], 16) >= 0xFFFF800000000000)
    return Frame(match["sym"], dso, kernel)


def parse(text: str) -> list[Sample]:
    """Every sample in perf script output (samples with an empty call chain are kept, frameless)."""
    samples: list[Sample] = []
    current: Sample | None = None
    for line in text.splitlines():
        if not line.strip():
            current = None
            continue
        if line.startswith("#"):
            continue
        if line[0] in " \t" and current is not None:
            frame = _frame(line)
            if frame is not None:
                current.frames.append(frame)
            continue
        header = HEADER_RE.match(line)
        if header:
            pid = int(header["pid"])
            tid = int(header["tid"]) if header["tid"] is not None else pid
            cpu = int(header["cpu"]) if header["cpu"] is not None else None
            current = Sample(header["comm"].strip(), pid, tid, cpu, float(header["time"]))
            samples.append(current)
    return samples


def folded_line(sample: Sample) -> str:
    """One sample as a folded stack: comm;root;...;leaf (kernel frames tagged _[k], as the .pl's --kernel)."""
    names = []
    for frame in reversed(sample.frames):
        name = frame.sym if frame.sym != "[unknown]" else (
            f"[{frame.dso.rsplit('/', 1)[-1]}]" if frame.dso not in ("[unknown]", "") else "[unknown]")
        names.append(name.replace(";", ":") + ("_[k]" if frame.kernel else ""))
    return ";".join([sample.comm.replace(" ", "_").replace(";", ":")] + names)


def fold(samples: list[Sample]) -> str:
    """Folded stacks, one line per distinct stack with its sample count, sorted."""
    counts = Counter(folded_line(s) for s in samples)
    return "".join(f"{stack} {n}\n" for stack, n in sorted(counts.items()))
