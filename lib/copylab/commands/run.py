"""`copylab run`: measure one grid point (implementation, mode, message size, thread count) as a sweep
measures each of its points, in the same topology, pinning and perf window, and print its results row:
every column of results.csv as key=value lines, or one JSON object with --json. Nothing is written
(--profile: the folded stacks, under --profile-dir)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from .. import limits, registry
from ..errors import CopylabError
from ..hosts import SshSettings
from ..fsutil import jsonable
from ..contract import (ALL_IMPLS, COLUMNS, MODES, RECEIVE_STRATEGIES,
                        check_cpus_available)
from ..paths import OUTPUT_DIR
from ..pointspec import POINT_DEFAULTS, PointSpec
from ..topology import check_congestion_usable, choose_topology, open_topology


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="measure one point (impl, mode, size, threads) and print its row")
    p.add_argument("--impl", required=True, choices=ALL_IMPLS,
                   help="an implementation of native/registry.def: a sender of copylab's, or a reference peer")
    p.add_argument("--mode", required=True, choices=MODES)
    p.add_argument("--msg-size", required=True, type=int, metavar="BYTES")
    p.add_argument("--threads", type=int, default=1, metavar="N")
    p.add_argument("--duration", type=float, default=POINT_DEFAULTS["duration_s"], metavar="S",
                   help=f"measured seconds (default {POINT_DEFAULTS['duration_s']:g})")
    p.add_argument("--warmup", type=float, default=POINT_DEFAULTS["warmup_s"], metavar="S",
                   help=f"seconds discarded first (default {POINT_DEFAULTS['warmup_s']:g})")
    p.add_argument("--steady-max", type=float, default=POINT_DEFAULTS["steady_max_s"], metavar="S",
                   help="after --warmup, wait until the rates are steady, at most S seconds more (default 0: fixed)")
    p.add_argument("--rounds", type=int, default=POINT_DEFAULTS["rounds"], metavar="K",
                   help="split the window over K fresh sets of connections, one after another (default 1)")
    p.add_argument("--congestion", default=POINT_DEFAULTS["congestion"], metavar="NAME",
                   help=f"TCP congestion control of every connection (default {POINT_DEFAULTS['congestion']}; "
                        "'host': the host's own)")
    p.add_argument("--working-set", type=int, default=POINT_DEFAULTS["working_set"], metavar="BYTES",
                   help=f"bytes of distinct messages each sender connection cycles through (default {POINT_DEFAULTS['working_set']})")
    p.add_argument("--topology", choices=("auto", "netns", "loopback", "ssh"), default="auto",
                   help="auto: netns when root, else loopback with a warning; ssh: two machines "
                        "(--server-host, --client-host, --server-addr, --client-addr)")
    p.add_argument("--server-host", metavar="DEST", help="topology ssh: where the server runs ([user@]host)")
    p.add_argument("--client-host", metavar="DEST", help="topology ssh: where the client runs")
    p.add_argument("--server-addr", metavar="IP", help="topology ssh: the server's data-path address")
    p.add_argument("--client-addr", metavar="IP", help="topology ssh: the client's data-path address")
    p.add_argument("--ssh-config", metavar="FILE", help="topology ssh: an ssh_config file (ssh -F)")
    p.add_argument("--pin-server", metavar="CPUS", help="taskset CPU list for the server (sender)")
    p.add_argument("--pin-client", metavar="CPUS", help="taskset CPU list for the client (receiver)")
    p.add_argument("--no-placement", action="store_true",
                   help="measure the run as it comes, without waiting for the two pinned CPUs to be near or "
                        "measuring again a run taken while they were apart")
    p.add_argument("--rps", action="store_true",
                   help="netns, pinned: each side's receive softirq work on its own CPUs (RPS on its veth)")
    p.add_argument("--verify", action="store_true", help="check every received byte (costs receiver CPU)")
    p.add_argument("--receive", choices=RECEIVE_STRATEGIES, default=POINT_DEFAULTS["receive"],
                   help="message: each recv asks for one message's bytes (default); bulk: large reads; "
                        "zerocopy: TCP_ZEROCOPY_RECEIVE maps whole pages; discard: MSG_TRUNC, nothing verified")
    p.add_argument("--profile", action="store_true",
                   help="also record call graphs over the window (perf record) and classify them")
    p.add_argument("--profile-dir", metavar="DIR", default=str(OUTPUT_DIR / "profiles"),
                   help="where --profile writes the folded stacks (default output/profiles)")
    p.add_argument("--allow-large", action="store_true",
                   help="run a point estimated at more memory than the host has available")
    p.add_argument("--json", action="store_true", help="print the row as one JSON object")
    p.add_argument("--show-output", action="store_true", help="also print both programs' output and perf text")
    p.set_defaults(func=run_command)


def run_command(args) -> int:
    # here, not at the top: every command's parser is built at each start, and these cost a third of
    # a second of CPU (numpy, pydantic) that `copylab sweep` or a refusal has no use for
    from ..experiment import probe_topology, show, summary_line
    from ..placement import MIN_PROBES, CpuDistance, placed, probe_cpus
    from ..point import run_point
    from ..runners import runner_for

    topology = choose_topology(args.topology)
    spec = PointSpec(impl=args.impl, mode=args.mode, msg_size=args.msg_size, threads=args.threads,
                     duration_s=args.duration, warmup_s=args.warmup, topology=topology,
                     pin_server=args.pin_server, pin_client=args.pin_client, verify=args.verify,
                     receive=args.receive, profile=args.profile, congestion=args.congestion,
                     working_set=args.working_set, steady_max_s=args.steady_max, rounds=args.rounds,
                     rps=args.rps).validate()
    if topology != "ssh":  # CPUs of this machine; on other hosts taskset says what it lacks
        usable = os.sched_getaffinity(0)  # before any namespace or program exists
        check_cpus_available("--pin-server", spec.pin_server, usable)
        check_cpus_available("--pin-client", spec.pin_client, usable)
        # open files, address space and memory for its threads and messages, before anything starts
        limits.check_point(spec.impl, spec.msg_size, spec.threads, "", args.allow_large, spec.working_set)
    check_congestion_usable([spec.congestion], topology)
    ssh = _ssh_settings(args, topology)
    if topology != "ssh":
        runner_for(spec.impl).check_installed()
    with open_topology(topology, ssh) as topo:
        for warning in topo.warnings:
            print(f"copylab run: WARNING: {warning}", file=sys.stderr)
        plan = probe_topology(topo)
        if plan.note:
            print(f"copylab run: note: {plan.note}", file=sys.stderr)
        cpus, reason = probe_cpus(spec.pin_server, spec.pin_client, topo.kind, not args.no_placement)
        with CpuDistance() as distance:
            if cpus is not None:  # the rule needs the host's round trips: a short calibration (~0.3 s)
                with contextlib.suppress(CopylabError):  # a probe that fails leaves the run unplaced, said in its row
                    distance.calibrate(cpus, probes=MIN_PROBES, spacing_s=0.01)
            attempts = placed(distance, cpus, reason, lambda: run_point(
                spec, plan, topo, profile_dir=Path(args.profile_dir) if args.profile else None))
        if distance.off:  # a probe that misbehaved (the run measured unplaced, its row's note says why): once
            print(f"copylab run: WARNING: placement: {distance.off}", file=sys.stderr)
        for (row, raw), columns in attempts[:-1]:
            print(f"copylab run: note: set aside a run taken while the CPUs were apart ({columns['cpu_round_trip_ns']:.0f} "
                  f"ns round trip): {summary_line(row)}", file=sys.stderr)
        row, raw = attempts[-1][0]
    if args.show_output:
        with contextlib.redirect_stdout(sys.stderr):  # stdout stays the row alone
            show({"row": row, "raw": raw})
    print_row(row, as_json=args.json)
    if row["status"] != "ok":
        print(f"copylab run: error: {row['error']}", file=sys.stderr)
        return 1
    return 0


def _ssh_settings(args, topology: str) -> SshSettings | None:
    """--server-host & co., checked as the grid checks its keys."""
    given = {key: getattr(args, key) for key in ("server_host", "client_host", "server_addr", "client_addr",
                                                 "ssh_config")}
    if topology != "ssh":
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise CopylabError(f"--{extra[0].replace('_', '-')} is only for --topology ssh")
        return None
    from ..params import parse_grid

    grid = parse_grid({"name": "run", "impls": [registry.baseline()], "modes": ["throughput"], "msg_sizes": [8], "threads": [1],
                       "topology": "ssh", **{k: v for k, v in given.items() if v is not None}}, source="copylab run")
    return grid.ssh


def print_row(row: dict, as_json: bool) -> None:
    """JSON, or neper-style key=value lines echoing every column (empty = not measured)."""
    values = jsonable({k: row.get(k) for k in COLUMNS})
    if as_json:
        print(json.dumps(values))
        return
    for key, value in values.items():
        print(f"{key}={'' if value is None else value}")
