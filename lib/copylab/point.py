"""One grid point, measured: server and client in their namespaces, `perf stat` around each.

run_point() turns a PointSpec into one results row (the results contract in docs/contracts.md
plus per-side counters) and the raw program output that backs it. It never raises for a failed
measurement: a dead process, a vanished namespace or a timeout give a row with status "failed"
and the error, and no process is left behind. Only KeyboardInterrupt propagates (after cleanup).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import contract
from . import perf as perfmod
from .contract import COLUMNS, COUNTER_KEYS, SERVER_KEYS, SUMMED_COUNTERS
from .errors import CopylabError, ErrorKind, MeasurementError
from .paths import client_binary, server_binary
from .topology import Topology, pid_alive

WORKDIR_PREFIX = "copylab-point-"
PROCESS_GROUPS = "process-groups"  # one line per started process group, in the point's workdir
LISTEN_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PointSpec:
    """Everything that defines one measurement; point_id() encodes all of it."""

    impl: str
    mode: str
    msg_size: int
    threads: int
    rep: int = 0
    duration_s: float = 2.0
    warmup_s: float = 0.5
    topology: str = "netns"
    pin_server: str | None = None  # CPU list for taskset, e.g. "0"
    pin_client: str | None = None
    verify: bool = False  # full byte-by-byte check on the receiver (costs receiver CPU)
    sanitize: bool = False  # use the ASan/UBSan builds

    def validate(self) -> "PointSpec":
        contract.check_choice("impl", self.impl, contract.IMPLS)
        contract.check_choice("mode", self.mode, contract.MODES)
        contract.check_int("msg_size", self.msg_size, contract.MSG_SIZE_RANGE)
        contract.check_int("threads", self.threads, contract.THREADS_RANGE)
        contract.check_int("rep", self.rep, (0, contract.REPETITIONS_RANGE[1] - 1))
        contract.check_seconds("duration_s", self.duration_s, contract.DURATION_RANGE)
        contract.check_seconds("warmup_s", self.warmup_s, contract.WARMUP_RANGE)
        contract.check_choice("topology", self.topology, contract.TOPOLOGIES)
        for name in ("pin_server", "pin_client"):
            if getattr(self, name) is not None:
                contract.parse_cpu_list(name, getattr(self, name))
        return self

    def point_id(self) -> str:
        """A file-name-safe name that encodes every parameter of the point."""
        parts = [self.impl, self.mode, f"{self.msg_size}B", f"{self.threads}thr", f"rep{self.rep}",
                 f"d{self.duration_s:g}s", f"w{self.warmup_s:g}s", self.topology]
        if self.pin_server is not None or self.pin_client is not None:
            parts.append(f"pin{self.pin_server or 'any'}-{self.pin_client or 'any'}".replace(",", "."))
        if self.verify:
            parts.append("verify")
        if self.sanitize:
            parts.append("san")
        return "_".join(parts)


# stderr lines that are not errors: the server's ready line, perf's -D/--control notices
_NOT_ERRORS = ("listening on", "Events disabled", "Events enabled")


class _Side:
    """One benchmark process (maybe wrapped in perf stat), its output collected by threads."""

    def __init__(self, name: str, argv: list[str], perf_out: Path | None, registry: Path | None = None):
        self.name = name
        self.argv = argv
        self.perf_out = perf_out
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self.listening = threading.Event()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,  # own process group: one signal reaches perf and the program
            env=perfmod.c_locale_env(),  # perf's CSV must not use a decimal comma
        )
        if registry is not None:
            # the process group, so whoever owns the registry (the sweep driver) can stop it even
            # when the process that started it (a notebook kernel) died
            with open(registry, "a") as handle:
                handle.write(f"{self.proc.pid}\n")
        self._readers = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout_lines), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr_lines), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _pump(self, stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)
            if line.startswith("listening on"):
                self.listening.set()
        stream.close()

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    def finish(self, timeout: float) -> int | None:
        """Wait for exit and for the output pipes to drain; None if still running."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:
            reader.join(timeout=2.0)
        return code

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)
        self.finish(timeout=5.0)

    def json_output(self) -> dict | None:
        for line in reversed(self.stdout_lines):
            line = line.strip()
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    return json.loads(line)
        return None

    def last_error(self) -> str:
        lines = [line.strip() for line in self.stderr_lines
                 if line.strip() and not line.startswith(_NOT_ERRORS)]
        return lines[-1] if lines else ""

    def perf_text(self) -> str:
        if self.perf_out is None or not self.perf_out.exists():
            return ""
        return self.perf_out.read_text(errors="replace")

    def raw(self) -> dict:
        return {"argv": self.argv, "exit_status": self.proc.returncode, "stdout": "".join(self.stdout_lines),
                "stderr": "".join(self.stderr_lines), "perf": self.perf_text()}


class _PerfControl:
    """perf stat --control fifo: lets us open the server's counting window exactly when the client's opens."""

    def __init__(self, workdir: Path):
        self.ctl = workdir / "server-perf.ctl"
        self.ack = workdir / "server-perf.ack"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)

    def args(self) -> list[str]:
        return ["--control", f"fifo:{self.ctl},{self.ack}"]

    def send(self, command: str) -> bool:
        """Write one command; False if perf is not there to read it (it died)."""
        try:
            fd = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            os.write(fd, (command + "\n").encode())
        except OSError:
            return False
        finally:
            os.close(fd)
        return True


def free_port() -> int:
    """A TCP port free on this host's loopback now (the server binds it right after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pinned(cpus: str | None) -> list[str]:
    if cpus is None:
        return []
    if shutil.which("taskset") is None:
        raise CopylabError("CPU pinning needs 'taskset' (Debian package util-linux)")
    return ["taskset", "-c", cpus]


def run_point(spec: PointSpec, plan: "perfmod.PerfPlan", topo: Topology, workdir: Path | None = None) -> tuple[dict, dict]:
    """Measure one point. Returns (row, raw) where raw holds both sides' argv, stdout, stderr and perf text."""
    spec.validate()
    for binary in (server_binary(spec.impl, spec.sanitize), client_binary(spec.sanitize)):
        if not binary.exists():
            raise CopylabError(f"{binary} is missing: build the native programs first (make -C native)")
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # the FIFOs and perf files of this point; named by our pid so `clean` can tell stale ones
    workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    server = client = None
    raw: dict = {"spec": asdict(spec), "topology": topo.kind}
    try:
        server, client, failure = _run_sides(spec, plan, topo, workdir)
        raw["server"], raw["client"] = server.raw(), client.raw() if client else None
        row = build_row(spec, plan, topo, server, client, failure)
    finally:
        for side in (client, server):
            # the whole group even when its leader has exited: a program whose perf wrapper was
            # killed keeps running, orphaned, in that group
            if side is not None:
                side.kill()
        shutil.rmtree(workdir, ignore_errors=True)  # what matters is in the record now
    row["started_at"] = started_at
    return row, raw


def _run_sides(spec: PointSpec, plan, topo: Topology, workdir: Path):
    """Start server then client; returns (server, client, (error kind, message) or None)."""
    control = _PerfControl(workdir) if plan.perf_path else None
    port = 5201 if topo.kind == "netns" else free_port()
    server_argv = [str(server_binary(spec.impl, spec.sanitize)), "--bind", topo.server_addr, "--port", str(port),
                   "--msg-size", str(spec.msg_size), "--mode", spec.mode, "--json"]
    server_perf = workdir / "server.perf"
    server_cmd = topo.server_exec(_pinned(spec.pin_server)
                                  + _perf_wrap(plan, server_perf, extra=control.args() if control else [])
                                  + server_argv)
    registry = workdir / PROCESS_GROUPS
    server = _Side("server", server_cmd, server_perf if plan.perf_path else None, registry)
    client = None
    try:
        if not _wait_listening(server, topo):
            code = server.proc.poll()
            what = f"exited with status {code}" if code is not None else f"did not listen within {LISTEN_TIMEOUT_S:g} s"
            return server, None, (ErrorKind.SERVER, f"server {what}: {server.last_error() or 'no message'}")
        client_argv = [str(client_binary(spec.sanitize)), "--connect", topo.server_addr, "--port", str(port),
                       "--msg-size", str(spec.msg_size), "--mode", spec.mode, "--threads", str(spec.threads),
                       "--duration", f"{spec.duration_s:g}", "--warmup", f"{spec.warmup_s:g}", "--json"]
        if spec.verify:
            client_argv.append("--verify")
        client_perf = workdir / "client.perf"
        # the client's own window opens after its warm-up; perf -D skips the same warm-up
        client_cmd = topo.client_exec(_pinned(spec.pin_client)
                                      + _perf_wrap(plan, client_perf, delay_ms=int(spec.warmup_s * 1000))
                                      + client_argv)
        client = _Side("client", client_cmd, client_perf if plan.perf_path else None, registry)
        return server, client, _supervise(spec, topo, server, client, control)
    except BaseException:
        for side in (client, server):
            if side is not None:
                side.kill()
        raise


def _perf_wrap(plan, out: Path, delay_ms: int = 0, extra: list[str] | None = None) -> list[str]:
    """perf stat prefix; with extra (the control fifo) counting starts disabled until we enable it."""
    prefix = perfmod.stat_prefix(plan, out, delay_ms=delay_ms)
    if prefix and extra:
        prefix = prefix[:-1] + ["-D", "-1", *extra, "--"]  # stat_prefix ends with "--"
    return prefix


def _wait_listening(server: _Side, topo: Topology) -> bool:
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.listening.wait(timeout=0.05):
            return True
        if server.proc.poll() is not None:
            server.finish(timeout=2.0)
            return False
    return False


def _supervise(spec: PointSpec, topo: Topology, server: _Side, client: _Side,
               control: _PerfControl | None) -> tuple[str, str] | None:
    """Wait for the client while watching the server and the namespaces; stop the server.
    Returns (error kind, message), or None when both sides ended well."""
    client_start = time.monotonic()
    window_open_at = client_start + spec.warmup_s
    window_opened = control is None
    # generous: connection set-up for many threads, the drain after STOP, a slow sanitizer build
    deadline = client_start + spec.warmup_s + spec.duration_s + 15.0 + 0.02 * spec.threads
    failure = None
    while True:
        if not window_opened and time.monotonic() >= window_open_at:
            window_opened = True
            control.send("enable")
        code = client.finish(timeout=0.05)
        if code is not None:
            if control is not None:
                control.send("disable")
            if code != 0:
                failure = (ErrorKind.CLIENT, f"client exited with status {code}: {client.last_error() or 'no message'}")
                if server.finish(timeout=0.5) is not None:  # the client failed because the server died first
                    failure = (ErrorKind.SERVER, f"server exited with status {server.proc.returncode} during "
                               f"the run: {server.last_error() or 'no message'}; {failure[1]}")
            break
        if server.proc.poll() is not None:
            failure = (ErrorKind.SERVER, f"server exited with status {server.proc.returncode} during the run: "
                       f"{server.last_error() or 'no message'}")
            client.kill()
            break
        try:
            topo.check_alive()
        except MeasurementError as exc:
            failure = (ErrorKind.NAMESPACE_LOST, str(exc))
            client.kill()
            break
        if time.monotonic() > deadline:
            failure = (ErrorKind.TIMEOUT, f"client did not finish within {deadline - client_start:.0f} s")
            client.kill()
            break
    # SIGINT to the server's group: the server prints its JSON, perf stat writes the counters
    if server.proc.poll() is None:
        server.signal_group(signal.SIGINT)
    if server.finish(timeout=STOP_TIMEOUT_S) is None:
        server.kill()
        failure = failure or (ErrorKind.SERVER, f"server did not stop within {STOP_TIMEOUT_S:g} s of SIGINT")
    elif server.proc.returncode not in (0, -signal.SIGINT) and not failure:
        # perf stat re-raises the SIGINT it got after writing its counters: -SIGINT is a normal stop
        failure = (ErrorKind.SERVER, f"server exited with status {server.proc.returncode}: "
                   f"{server.last_error() or 'no message'}")
    return failure


def _nan_if_none(value):
    return math.nan if value is None else value


def _side_counters(side: _Side | None, plan) -> tuple[dict, str]:
    """Counters of one side, and a note when they are missing."""
    empty = {key: None for key in COUNTER_KEYS}
    if plan.perf_path is None:
        return empty, plan.note or "perf is not installed"
    text = side.perf_text() if side is not None else ""
    if not text.strip():
        return empty, f"perf stat of the {side.name if side else 'client'} wrote no counters"
    return perfmod.side_counters(perfmod.parse_stat_csv(text), plan), ""


def empty_row(spec: PointSpec, topology: str) -> dict:
    """A row with the point's identity filled in and every measurement empty (NaN)."""
    row: dict = {col: math.nan for col in COLUMNS}
    row.update(impl=spec.impl, mode=spec.mode, msg_size=spec.msg_size, threads=spec.threads, rep=spec.rep,
               point_id=spec.point_id(), topology=topology, pin_server=spec.pin_server or "",
               pin_client=spec.pin_client or "", warmup_s=spec.warmup_s, verified="", cycles_source="",
               counters_note="", status="failed", error="", error_kind="")
    return row


def build_row(spec: PointSpec, plan, topo: Topology, server: _Side, client: _Side | None,
              failure: tuple[str, str] | None) -> dict:
    """One results row from both sides' JSON and perf output."""
    srv_json = server.json_output() or {}
    cli_json = (client.json_output() if client else None) or {}
    if not failure and not cli_json:
        failure = (ErrorKind.NO_RESULT, "client printed no JSON result")
    if not failure and not srv_json:
        failure = (ErrorKind.NO_RESULT, "server printed no JSON result")
    if not failure and cli_json.get("verified") is False:
        failure = (ErrorKind.NOT_VERIFIED, "client could not verify the received data")
    srv_counters, srv_note = _side_counters(server, plan)
    cli_counters, cli_note = _side_counters(client, plan)
    row = empty_row(spec, topo.kind)
    for key in ("throughput_gbps", "latency_us", "bytes", "duration_s", "messages", "total_bytes",
                "latency_p50_us", "latency_p99_us", "latency_min_us", "latency_max_us"):
        row[key] = _nan_if_none(cli_json.get(key))
    row["verified"] = cli_json.get("verified", "")
    row["server_bytes"] = _nan_if_none(srv_json.get("bytes"))
    row["server_messages"] = _nan_if_none(srv_json.get("messages"))
    for key in SERVER_KEYS:
        row[key] = _nan_if_none(srv_json.get(key))
    for key in COUNTER_KEYS:
        row[f"srv_{key}"] = _nan_if_none(srv_counters[key])
        row[f"cli_{key}"] = _nan_if_none(cli_counters[key])
    for key in SUMMED_COUNTERS:
        a, b = srv_counters[key], cli_counters[key]
        row[key] = math.nan if a is None or b is None else a + b
    row["cycles_source"] = (plan.cycles_source or "") if not math.isnan(row["cycles"]) else ""
    notes = [n for n in (srv_note, cli_note) if n]
    missing_hw = [k for k in ("l1_misses", "llc_misses") if math.isnan(row[k])]
    if missing_hw and not notes and plan.note:
        notes.append(plan.note)
    row["counters_note"] = "; ".join(dict.fromkeys(notes))
    row["status"] = "failed" if failure else "ok"
    row["error_kind"], row["error"] = failure or (ErrorKind.NONE, "")
    return row


def kill_registered(workdir: Path) -> list[int]:
    """SIGKILL every process group a point in workdir started (after its driver died); their ids."""
    killed = []
    for path in Path(workdir).rglob(PROCESS_GROUPS):
        for line in path.read_text().split():
            with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
                os.killpg(int(line), signal.SIGKILL)
                killed.append(int(line))
    return killed


def remove_stale_workdirs(tmp: Path | None = None) -> list[Path]:
    """Remove the temporary folders of `copylab run`s whose process died (killed before its clean-up)."""
    removed = []
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*"):
        owner = path.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not pid_alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
