"""Recording call graphs over a point's measured window, and turning them into profile columns.

Two ways, chosen per point:
  per_cpu      sender and receiver pinned to different CPUs on this host: one `perf record -a -C`
               over both CPUs, so softirq work a CPU does for a socket is seen wherever it runs;
               samples are split by CPU.
  per_process  otherwise: `perf record -p` on each side's program (threads included); a program on
               another host (topology ssh) is wrapped by a `perf record` there instead, and its
               samples are read back with `perf script` run there (the symbols are there).
Sampling: cycles where a PMU exists, else cpu-clock (an hrtimer, what VMs offer), at FREQ_HZ.
Recording starts disabled (-D -1) and the point's Window enables and disables it with the
counters, so the samples cover the same window as the bytes. `--no-bpf-event` keeps perf 6.x from
spending ~1 s gathering BPF program info at start-up; `-N` keeps it from copying binaries into
~/.debug, `-B` from collecting build ids when it stops. The folded stacks of each side are kept (gzip) for any flame-graph tool.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import signal
import subprocess
import threading
from pathlib import Path

from ..perf import c_locale_env, paranoid
from ..privilege import can_admin_network
from ..hosts import LocalHost
from ..sides import PerfControl, Window, dies_with_parent
from . import classify, script

FREQ_HZ = 999
READY_TIMEOUT_S = 5.0
SCRIPT_TIMEOUT_S = 60.0
SIDES = ("srv", "cli")


class _Recording:
    """One `perf record` process, started disabled."""

    def __init__(self, argv: list[str], data: Path, control: PerfControl):
        self.data, self.control = data, control
        self.ready = threading.Event()
        self.stderr: list[str] = []
        self.proc = subprocess.Popen(dies_with_parent(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace",
                                     start_new_session=True, env=c_locale_env())
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line)
            if "Events disabled" in line:
                self.ready.set()  # perf is set up and waits for "enable"
        self.proc.stderr.close()

    def wait_ready(self) -> bool:
        return self.ready.wait(READY_TIMEOUT_S) and self.proc.poll() is None

    def stop(self) -> None:
        """End the recording (the data file is complete when perf exits)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def complaint(self) -> str:
        lines = [ln.strip() for ln in self.stderr if ln.strip() and "Events" not in ln and "[ perf record" not in ln]
        return lines[-1] if lines else f"perf record exited with status {self.proc.returncode}"


class Profiler:
    """Profiles one point; used by point.run_point around the two sides."""

    def __init__(self, plan, spec, topo, workdir: Path, window: Window, profile_dir: Path | None,
                 dirs: dict[str, str] | None = None):
        self.plan, self.spec, self.workdir, self.window = plan, spec, workdir, window
        self.profile_dir = profile_dir
        self.local = LocalHost()  # per_cpu and -p recordings run here, in the root namespace
        self.hosts = {"srv": topo.server_host, "cli": topo.client_host}
        self.dirs = {"srv": (dirs or {}).get("server", str(workdir)), "cli": (dirs or {}).get("client", str(workdir))}
        self.recordings: dict[str, _Recording] = {}
        self.wrapped: dict[str, tuple] = {}  # side -> (host, data file) of a perf record wrapping the program
        self.note = ""
        self.event = "cycles" if plan.cycles_source == "pmu" else "cpu-clock"
        self.user_only = not can_admin_network() and (paranoid() or 2) >= 2
        if self.user_only:
            self.event += ":u"
            self.note = ("user-space samples only: kernel.perf_event_paranoid >= 2 without root hides the kernel, "
                         "so the kernel buckets cannot be observed")
        srv_cpus, cli_cpus = window.cpus.get("srv"), window.cpus.get("cli")
        self.mode = ("per_cpu" if srv_cpus and cli_cpus and not set(srv_cpus) & set(cli_cpus)
                     and topo.kind in ("netns", "loopback") and not self.user_only else "per_process")

    def _argv(self, target: list[str], data: str, control: PerfControl) -> list[str]:
        # -B: no build-id collection when it stops (~0.15 s a point; perf script reads the same
        # binaries right after, on the same host)
        return [self.plan.perf_path, "record", "-e", self.event, "-F", str(FREQ_HZ), "-g", "--no-bpf-event", "-N", "-B",
                "--sample-cpu", "-D", "-1", *control.args(), "-o", str(data), *target]

    def _start(self, key: str, target: list[str]) -> bool:
        data = self.workdir / f"profile-{key}.data"
        control = PerfControl(self.local, str(self.workdir), f"profile-{key}")
        recording = _Recording(self._argv(target, str(data), control), data, control)
        if not recording.wait_ready():
            recording.stop()
            self.note = self.note or f"perf record could not start: {recording.complaint()}"
            return False
        self.recordings[key] = recording
        self.window.add_control(control)
        return True

    def start_system(self) -> None:
        """per_cpu: before the programs start."""
        if self.mode == "per_cpu":
            cpus = sorted(set(self.window.cpus["srv"]) | set(self.window.cpus["cli"]))
            self._start("cpus", ["-a", "-C", ",".join(map(str, cpus))])

    def attach(self, side: str, pid: int | None) -> None:
        """per_process, the server: once it listens (its threads are followed as they start)."""
        if self.mode != "per_process" or self.hosts[side].remote:
            return
        if pid is None:
            self.note = self.note or f"the {side} program's pid could not be found to profile it"
            return
        self._start(side, ["-p", str(pid)])

    def wrap_prefix(self, side: str) -> list[str]:
        """per_process, the client (and a server on another host): perf record wraps it, so it is
        set up before the client's clock starts (attaching takes longer than a short warm-up); it
        ends when the program does."""
        key = "srv" if side == "server" else "cli"
        if self.mode != "per_process" or (key == "srv" and not self.hosts[key].remote):
            return []
        host, folder = self.hosts[key], self.dirs[key]
        data = f"{folder}/profile-{key}.data"
        control = PerfControl(host, folder, f"profile-{key}")
        self.wrapped[key] = (host, data)
        self.window.add_control(control)
        return self._argv(["--"], data, control)

    def stop(self) -> None:
        for recording in self.recordings.values():
            recording.stop()

    def columns(self, point_id: str) -> dict:
        """The profile columns of the row (empty with the reason when there is nothing to show)."""
        out = {"profile_mode": self.mode, "profile_event": f"{self.event} @ {FREQ_HZ} Hz", "profile_note": self.note}
        samples = {side: [] for side in SIDES}
        data_files = {key: (self.local, str(r.data)) for key, r in self.recordings.items()} | self.wrapped
        for key, (host, data) in data_files.items():
            text, complaint = _script(self.plan.perf_path, data, host)
            if text is None:
                out["profile_note"] = out["profile_note"] or f"perf script failed: {complaint}"
                continue
            parsed = recorded_samples(text)
            if key == "cpus":
                for sample in parsed:
                    for side in SIDES:
                        if sample.cpu in self.window.cpus[side]:
                            samples[side].append(sample)
            else:
                samples[key] = parsed
        skid = self.event.startswith("cpu-clock")
        for side in SIDES:
            prof = classify.summarise(samples[side], skid=skid, own=self.mode == "per_process")
            out.update(side_columns(side, prof))
            if samples[side] and self.profile_dir is not None:
                self.profile_dir.mkdir(parents=True, exist_ok=True)
                path = self.profile_dir / f"{point_id}.{side}.folded.gz"
                path.write_bytes(gzip.compress(script.fold(samples[side]).encode()))
        if not any(samples.values()) and not out["profile_note"]:
            out["profile_note"] = "perf record wrote no samples in the window"
        elif not out["profile_note"]:
            empty = [WHO[side] for side in SIDES if not samples[side]]
            if empty:  # seen with 0.2 s windows on a loaded host: perf record attached after the window began
                out["profile_note"] = f"perf record wrote no samples of the {' or '.join(empty)} in the window"
        return out


WHO = {"srv": "sender", "cli": "receiver"}


def recorded_samples(text: str) -> list:
    """The samples of one recording's `perf script` output, each thread named as its process is
    (classify.named_threads: a second round's threads show as ":<tid>" otherwise)."""
    return classify.named_threads(script.parse(text))


def side_columns(side: str, prof: "classify.SideProfile") -> dict:
    out = {f"{side}_prof_samples": prof.samples if prof.samples else math.nan, f"{side}_prof_skid": prof.skid_share}
    out.update({f"{side}_prof_{b}": v for b, v in prof.buckets.items()})
    out.update({f"{side}_cai_{c}": v for c, v in prof.cai.items()})
    return out


def empty_columns(mode: str, note: str) -> dict:
    out = {"profile_mode": mode, "profile_event": "", "profile_note": note}
    for side in SIDES:
        out.update(side_columns(side, classify.SideProfile.empty()))
    return out


def _script(perf_path: str, data: str, host) -> tuple[str | None, str]:
    """`perf script` of a data file, run on the host that recorded it."""
    # --no-demangle: half of perf script's time goes to demangling C++ symbols of other processes;
    # the rules match C names and kernel symbols
    proc = host.run([perf_path, "script", "-f", "-i", data, "-F", script.SCRIPT_FIELDS, "--no-inline", "--no-demangle"],
                    timeout=SCRIPT_TIMEOUT_S)
    if proc.returncode != 0:
        complaint = proc.stderr.decode(errors="replace").strip().splitlines()
        return None, complaint[-1] if complaint else f"exit status {proc.returncode}"
    return proc.stdout.decode(errors="replace"), ""
