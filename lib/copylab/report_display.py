"""The analysis notebook's display helpers: the author block, the host and grid the numbers come from,
how the sweep was measured, and the program output of one real run per implementation, so the
notebook stays narrative + calls. (The report builder that executes the notebook: report.py.)"""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pandas as pd

from . import escape, registry, userfiles
from .analysis import roles
from .errors import CopylabError
from .fmt import fmt_num, fmt_size, plural, system_fields
from .runners import runner_for
from .sides import PERF_NOTICES

AUTHOR_FIELDS = ("author", "roll_no", "repo_url", "ai_declaration")
KEY_OFFLOADS = ("scatter-gather", "tcp-segmentation-offload", "generic-segmentation-offload",
                "generic-receive-offload", "tx-checksumming", "rx-checksumming")
# a run's scratch folder (<results>/.work/<point>), named three times in each wrapped command line: shown
# as $RUN (the notebook's text says so)
RUN_FOLDER = re.compile(r"/[^\s'\",:]*/\.work/[^/\s'\",]+")
WRAP = 115  # characters per line of program output; longer lines would run off the PDF page (scriptsize)


def resolve_author(meta: dict, results_dir=None, **given) -> dict:
    """Author fields as text: the ones given, else meta.json["params"], else empty. The declaration
    is text too: given (copylab report read the file the user named), else the copy the sweep
    took into results_dir. Nothing from a results folder is ever opened as a path: meta.json's
    params.ai_declaration is where the file was at sweep time, provenance only."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    out = {}
    for field in AUTHOR_FIELDS:
        value = given.get(field)
        if not value and field != "ai_declaration":
            value = params.get(field)
        if not value and field == "ai_declaration" and results_dir is not None:
            value = userfiles.folder_declaration(results_dir)
        out[field] = "" if value is None else str(value).strip()
    return out


# the author fields the hand-in needs, with the flag and the params key that set each
HAND_IN = {"author": ("--author", "author"), "roll_no": ("--roll-no", "roll_no"), "repo_url": ("--repo-url", "repo_url"),
           "ai_declaration": ("--ai-declaration FILE", "ai_declaration")}
TEMPLATE_MARK = "edit before you hand in"  # params/AI_DECLARATION.md as shipped: its text is a placeholder


def placeholders(fields: dict) -> list[str]:
    """The hand-in's fields still placeholders: empty, or (the declaration) the template's own text."""
    out = [f for f in ("author", "roll_no", "repo_url") if not fields.get(f)]
    decl = fields.get("ai_declaration") or ""
    if not decl or TEMPLATE_MARK in decl:
        out.append("ai_declaration")
    return out


def placeholder_line(missing: list[str], roll_flag: str = "--roll-no") -> str:
    """One line naming the placeholders and how to fill them ('' when there are none)."""
    if not missing:
        return ""
    words = [("the AI declaration (params/AI_DECLARATION.md's template text)" if f == "ai_declaration" else f)
             for f in missing]
    flags = [roll_flag if f == "roll_no" else HAND_IN[f][0] for f in missing]
    return (f"still placeholders: {', '.join(words)}; set {', '.join(HAND_IN[f][1] for f in missing)} in the "
            f"params YAML (or pass {', '.join(flags)}) before you hand it in")


def author_markdown(fields: dict) -> str:
    rows = [("Author", fields["author"]), ("Roll number", fields["roll_no"]),
            ("Repository", fields["repo_url"])]
    lines = [f"- **{k}:** {escape.markdown(v) if v else '_not given_'}" for k, v in rows]
    decl = fields["ai_declaration"]
    if "ai_declaration" in placeholders(fields) and decl:
        lines.append("- **Declaration:** _still the template's placeholder text: edit it before handing in_")
    missing = placeholders(fields)
    if missing:  # how to fill them, where a grader and the student read it (make report says it too)
        lines += ["", f"_{escape.markdown(placeholder_line(missing)[0].upper() + placeholder_line(missing)[1:])}._"]
    lines.append("")
    label = "AI-usage declaration"
    if decl.lower().startswith(label.lower()):
        # the text names itself (the template in params/ does): bold its own label, do not repeat it
        rest = decl[len(label):]
        gap = " " if rest[:1].isspace() else ""  # the block escape trims each line
        lines.append(f"**{escape.markdown(decl[:len(label)])}**{gap}{escape.markdown(rest, block=True)}")
    else:
        lines.append(f"**{label}.** " + (escape.markdown(decl, block=True) if decl else "_not given (pass "
                     "`--ai-declaration FILE` or set `ai_declaration` in the params YAML)_"))
    return "\n".join(lines)


NOT_RECORDED = "not recorded in meta.json (a sweep made before copylab recorded it)"


def _version(text) -> tuple[int, int] | None:
    found = re.search(r"(\d+)\.(\d+)", str(text or ""))
    return (int(found.group(1)), int(found.group(2))) if found else None


def perf_warning(meta: dict) -> str:
    """A warning when perf is older than the kernel it ran on (it may not know the kernel's newer
    events, tracepoints or symbols); '' otherwise."""
    perf, kernel = _version(meta.get("perf_version")), _version(meta.get("kernel"))
    if not perf or not kernel or perf >= kernel:
        return ""
    return (f"**perf {meta['perf_version']} is older than the kernel it ran on ({meta['kernel']})**: it may not "
            "know the kernel's newer events and tracepoints, and reads what it can; the counters and profiles here "
            "are what this perf could take.")


def _caches(meta: dict) -> str:
    caches = meta.get("cpu_caches")
    if not isinstance(caches, dict) or not caches:
        return NOT_RECORDED
    return ", ".join(f"{k} {v}" for k, v in caches.items()) + " (per core unless shared; CPU 0's view)"


def _virtualization(meta: dict) -> str:
    v = meta.get("virtualization")
    if not isinstance(v, dict):
        return NOT_RECORDED
    vm, vendor, container = v.get("vm"), v.get("hypervisor_vendor"), v.get("container")
    if vm and vm != "none":
        text = f"virtual machine ({vendor or vm}; systemd-detect-virt --vm: {vm})"
    elif vm == "none":
        text = "bare metal (systemd-detect-virt --vm: none)"
    elif v.get("hypervisor_flag"):
        text = f"virtual machine ({vendor or 'the CPU has the hypervisor flag'})"
    else:
        text = "unknown (systemd-detect-virt missing, no hypervisor flag)"
    return text + (f", inside a {container} container" if container and container != "none" else "")


def _column(df: pd.DataFrame, column: str) -> str:
    values = sorted(set(df[column].dropna().astype(str))) if column in df else []
    return ", ".join(values) or "not recorded"


def _side(meta: dict, key: str) -> str:
    client = meta.get("client_net") if isinstance(meta.get("client_net"), dict) else {}
    return f"sender {meta.get(key) or 'not recorded'}, receiver {client.get(key) or 'not recorded'}"


def _host_load(meta: dict) -> str:
    """Other programs' share of the CPUs while the sweep measured (sweep/hostload.py), per session."""
    sessions = meta.get("sessions") if isinstance(meta.get("sessions"), list) else []
    texts = []
    for session in sessions:
        load = session.get("host_load") if isinstance(session, dict) else None
        if not isinstance(load, dict) or load.get("other_cpu_share") is None:
            continue
        share, quiet = load["other_cpu_share"], load.get("quiet_below", 0.05)
        text = (f"{100 * share:.1f}% of all CPUs' time (mean over {load.get('groups')} groups of points, largest "
                f"{100 * load.get('other_cpu_share_max', share):.1f}%)")
        if share > quiet:
            text += (f": a busy host (quiet is under {100 * quiet:.0f}%), so the spread between repetitions "
                     "is wider than this host gives when nothing else runs")
        texts.append(text)
    if not texts:
        return NOT_RECORDED
    return texts[0] if len(texts) == 1 else "; ".join(f"session {k}: {t}" for k, t in enumerate(texts, 1))


def _placement(df: pd.DataFrame, meta: dict) -> str:
    """Where the hypervisor had the two CPUs (placement.py): the modes the rule learned from this
    host's cache-line round trips, the line between them, and the runs set aside."""
    trips = pd.to_numeric(df.get("cpu_round_trip_ns", pd.Series(dtype=float)), errors="coerce").dropna()
    if trips.empty:
        notes = sorted(set(df.get("placement_note", pd.Series(dtype=str)).dropna().astype(str)) - {""})
        return notes[0] if len(notes) == 1 else NOT_RECORDED
    learned = meta.get("placement") if isinstance(meta.get("placement"), dict) else {}
    why = learned.get("why") if isinstance(learned.get("why"), str) else None
    text = (f"round trip of a cache line between the sender's and the receiver's CPUs {trips.min():.0f} ns at the "
            f"nearest, {trips.median():.0f} ns median; " + (f"learned from the host: {why}" if why else
                                                            "what the rule learned is not recorded"))
    retries = int(pd.to_numeric(df.get("placement_retries"), errors="coerce").fillna(0).sum())
    apart = int((df.get("cpus_apart", pd.Series(dtype=str)).astype(str) == "True").sum())
    if retries:
        text += f"; {plural(retries, 'measured run')} taken while they were apart set aside and measured again"
    if apart:
        text += f"; {plural(apart, 'run')} still apart kept (flagged cpus_apart)"
    return text


def configuration_rows(meta: dict, df: pd.DataFrame) -> list[tuple[str, object]]:
    """(setting, value) rows for the configuration table, beside system_fields' kernel/CPU/cores/memory."""
    tools = meta.get("tool_versions") if isinstance(meta.get("tool_versions"), dict) else {}
    sizes = sorted(set(pd.to_numeric(df.get("working_set_bytes", pd.Series(dtype=float)), errors="coerce").dropna()))
    return [
        ("CPU caches", _caches(meta)),
        ("hypervisor", _virtualization(meta)),
        ("hostname", meta.get("hostname")),
        ("perf", meta.get("perf_version")), ("perf note", meta.get("perf_note")),
        ("compiler", meta.get("compiler")),
        *((roles.name(p), tools.get(p) or (NOT_RECORDED if not tools else "not installed")) for p in roles.peers()),
        ("congestion control asked for", _column(df, "congestion")),
        ("congestion control as run", f"sender {_column(df, 'srv_congestion')}; receiver {_column(df, 'cli_congestion')}"),
        ("host default congestion control", meta.get("tcp_congestion_control")),
        ("qdisc", _side(meta, "qdisc")),
        ("receive steering (RPS)", _column(df, "rps").replace("True", "on (each side's CPUs)").replace("False", "off")),
        ("working set per connection", ", ".join(fmt_size(int(s)) for s in sizes) or "not recorded"),
        ("net.core.optmem_max", meta.get("optmem_max")), ("tcp_wmem", meta.get("tcp_wmem")),
        ("tcp_rmem", meta.get("tcp_rmem")), ("veth MTU", meta.get("veth_mtu")),
        ("other programs' CPU use while measuring", _host_load(meta)),
        ("CPU placement", _placement(df, meta)),
        ("git revision", meta.get("git_revision")), ("started", meta.get("started_at")),
        ("ended", _ended(meta)),
    ]


def _ended(meta: dict) -> str | None:
    """When the sweep ended and, unless it finished, how: an interrupted or failed sweep records the
    time it stopped as its finished_at."""
    at, status = meta.get("finished_at"), meta.get("status")
    return at if not at or status in ("finished", None) else f"{at} (stopped: {status})"


def windows_text(meta: dict, df) -> str:
    """Each mode's window as set and as measured (the method section's)."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    return _windows(df, params, meta.get("rounds"))


def system_markdown(meta: dict, df) -> str:
    """The host the numbers come from, as a table, plus the grid the sweep covered."""
    if not meta:
        head = "_No meta.json beside results.csv: the host is unknown._\n\n"
    else:
        head = ""
    f = system_fields(meta)
    extra = configuration_rows(meta, df)  # caches, hypervisor, tools, congestion and qdisc per side ...
    if meta.get("hosts"):  # the network settings are the hosts' own, in their table
        extra = [(k, v) for k, v in extra if k not in ("net.core.optmem_max", "tcp_wmem", "tcp_rmem", "veth MTU")]
    rows = list(f.items()) + [(k, v) for k, v in extra if v not in (None, "")]
    events = meta.get("perf_events") or {}
    if events:
        rows.append(("perf events counted", ", ".join(e for e, ok in events.items() if ok) or "none"))
        rows.append(("perf events not supported", ", ".join(e for e, ok in events.items() if not ok) or "none"))
    offloads = meta.get("offloads") or {}
    if offloads and not meta.get("hosts"):
        # the ones that change how much a send costs; the full list stays in meta.json
        key = [k for k in KEY_OFFLOADS if k in offloads]
        shown = ", ".join(f"{k}={'on' if offloads[k] in (True, 'on') else 'off'}" for k in key)
        rows.append(("veth offloads", f"{shown} (the ones that change a send's cost; all {len(offloads)} "
                                      "in meta.json)"))
    table = "| setting | value |\n|:---|:---|\n" + "\n".join(
        f"| {escape.markdown(k)} | {escape.markdown(v)} |" for k, v in rows)
    if meta.get("hosts"):
        table = (hosts_markdown(meta["hosts"]) + "\n\nThe driver (this table) ran the notebooks, the records and "
                 "the report; the programs ran on the hosts above.\n\n" + table)
    sizes = ", ".join(fmt_size(s) for s in sorted(df["msg_size"].unique()))
    threads = ", ".join(str(t) for t in sorted(df["threads"].unique()))
    reps = df.groupby(["impl", "mode", "msg_size", "threads"])["rep"].nunique()
    grid = (f"\n\n**Grid measured:** implementations {', '.join(sorted(df['impl'].unique()))}; "
            f"modes {', '.join(sorted(df['mode'].unique()))}; message sizes {sizes}; "
            f"thread counts {threads}; {_span(reps)} per point; "
            f"{len(df)} measurements used.")
    failed = df.attrs.get("rows_failed", 0)
    if failed:
        first = df.attrs["failed"][0]
        what = " ".join(str(first.get(k)) for k in ("impl", "mode", "msg_size"))
        grid += (f" **{failed} point(s) failed and are left out**, e.g. {escape.markdown(what)} B × "
                 f"{escape.markdown(first.get('threads'))} threads: "
                 f"{escape.markdown(first.get('error') or 'no error recorded')}.")
    warning = perf_warning(meta)
    return head + table + grid + (f"\n\n{warning}" if warning else "")


def hosts_markdown(hosts: dict) -> str:
    """topology ssh: the two hosts side by side, as each contributed itself to meta.json."""
    def cell(side: str, key: str) -> str:
        h = hosts.get(side) or {}
        if key == "nic":
            nic = h.get("nic") or {}
            value = ", ".join(f"{k} {v}" for k, v in nic.items() if v) if nic else None
        elif key == "offloads":
            offloads = h.get("offloads") or {}
            value = ", ".join(f"{k}={'on' if offloads[k] else 'off'}" for k in KEY_OFFLOADS if k in offloads) or None
        else:
            value = h.get(key)
        return "unknown" if value in (None, "", []) else escape.markdown(value)
    rows = [("ssh destination", "destination"), ("data-path address", "address"), ("interface", "interface"),
            ("NIC (ethtool -i)", "nic"), ("MTU", "veth_mtu"), ("offloads", "offloads"), ("hostname", "hostname"),
            ("kernel", "kernel"), ("CPU", "cpu_model"), ("cores", "cores"), ("memory (GiB)", "memory_gib"),
            ("perf", "perf_version"), ("compiler", "compiler"), ("compile command", "compile_command"),
            ("net.core.optmem_max", "optmem_max"), ("tcp_wmem", "tcp_wmem"), ("tcp_rmem", "tcp_rmem")]
    return ("| host | server (sender) | client (receiver) |\n|:---|:---|:---|\n"
            + "\n".join(f"| {label} | {cell('server', key)} | {cell('client', key)} |" for label, key in rows))


def measurement_markdown(meta: dict, df) -> str:
    """How the numbers were taken: window, repetitions and order, the receiver, pinning, peers,
    profiling, and what a VM changes. All read from the sweep's own grid and rows."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    reps = df.groupby(["impl", "mode", "msg_size", "threads"])["rep"].nunique()
    warmups = sorted(set(df["warmup_s"].dropna()))
    receive = sorted(set(df["receive"].dropna())) or ["message (not recorded)"]
    lines = [
        f"- **Window:** warm-up discarded {_warmups(df, warmups)}; then a measured window of "
        f"{_windows(df, params, meta.get('rounds'))}; perf counts both sides over the same window, which "
        "copylab's client announces as it opens and closes it.",
        f"- **Repetitions:** {int(reps.min()) if len(reps) else 0}–{int(reps.max()) if len(reps) else 0} per point"
        + (", each repetition a freshly shuffled pass over the grid in blocks (a cell's implementations back to "
           "back, so a slow drift of the host cannot line up with one implementation and cancels from their "
           "comparison)" if params.get("shuffle") else ", in grid order")
        + _extra_passes(meta, params) + ".",
        f"- **Receiver:** {escape.markdown(', '.join(map(str, receive)))} reads (`message`: each `recv` asks for the rest of one message, "
        "as an application reading whole messages does, and as the reference programs do; `bulk`: up to 256 KiB per `recv`).",
        f"- **Pinning:** sender on CPU {escape.markdown(params.get('pin_server') or 'any')}, receiver on CPU "
        f"{escape.markdown(params.get('pin_client') or 'any')}.",
    ]
    peers = [p for p in roles.peers() if p in set(df["impl"])]
    if peers:
        lines.append(f"- **Reference programs:** {escape.markdown(', '.join(peers))} measured by the same engine, "
                     "in the same namespaces and pinning under perf, each over its own window (the harness section "
                     "says how each window opened); "
                     + "; ".join(runner_for(p).method for p in peers) + ".")  # the runners own their text
    prof = df[df["profile_mode"].fillna("").astype(str) != ""]
    if len(prof):
        modes = ", ".join(sorted(set(map(str, prof["profile_mode"]))))
        lines.append(f"- **Profiles:** {len(prof)} points profiled ({escape.markdown(modes)}; "
                     f"{escape.markdown(prof['profile_event'].iloc[0])}), folded stacks in `profiles/`.")
    return "\n".join(lines)


def _windows(df, params: dict, chosen=None) -> str:
    """Each mode's window as set and as measured (median): the modes' windows differ (latency_duration_s),
    so one median over both would describe neither. A throughput window of several rounds says so, and
    the window the sweep's rounds rule set it to (meta.json rounds) where the grid left it to the rule."""
    parts = []
    chosen = chosen if isinstance(chosen, dict) else {}
    for mode, key in (("throughput", "duration_s"), ("latency", "latency_duration_s")):
        rows = df[df["mode"] == mode]
        measured = pd.to_numeric(rows["duration_s"], errors="coerce").dropna()
        if measured.empty:
            continue
        set_to = params.get(key) or params.get("duration_s")
        if mode == "throughput" and params.get("rounds") == "auto" and isinstance(chosen.get("duration_s"), (int, float)):
            set_to = chosen["duration_s"]
        text = f"{fmt_num(set_to)} s in {mode} mode" if isinstance(set_to, (int, float)) else f"{mode} mode"
        rounds = pd.to_numeric(rows.get("rounds", pd.Series(dtype=float)), errors="coerce").dropna()
        if len(rounds) and rounds.median() > 1:
            k = int(rounds.median())
            text += (f", split over {k} rounds of {fmt_num(measured.median() / k)} s, each on fresh connections after its "
                     "own warm-up" + (" (chosen for this host: How this run went)" if params.get("rounds") == "auto" else ""))
        parts.append(f"{text} (median measured {fmt_num(measured.median())} s)")
    return "; ".join(parts) or "n/a"


def _extra_passes(meta: dict, params: dict) -> str:
    """What the budget added after the base passes: said only when it ran any (How this run went has
    the details)."""
    budget = meta.get("budget") if isinstance(meta.get("budget"), dict) else {}
    passes = budget.get("passes") if isinstance(budget.get("passes"), list) else []
    if not params.get("budget_min"):
        return ""
    if not passes:
        return (f"; the {fmt_num(params['budget_min'])}-minute budget added no pass beyond the first "
                f"{params.get('repetitions')}")
    return (f"; {plural(len(passes), 'pass')} beyond the first {params.get('repetitions')} measured only the "
            f"comparisons still too wide to decide, within the {fmt_num(params['budget_min'])}-minute budget "
            "(\"How this run went\")")


def _warmups(df, warmups) -> str:
    """The warm-ups as used: fixed ones listed, steady-state ones (the client waited for steady
    rates, up to a bound) as their range."""
    steady = df["warmup_end"].astype(str).isin(["steady", "bound"]) if "warmup_end" in df else None
    if steady is None or not steady.any():
        return _joined(warmups, "s")
    used = df.loc[steady, "warmup_s"].dropna()
    rounds = pd.to_numeric(df.loc[steady].get("rounds", pd.Series(dtype=float)), errors="coerce").fillna(1)
    per_run = " per run, summed over its rounds" if (rounds > 1).any() else ""
    text = (f"{fmt_num(used.min())}–{fmt_num(used.max())} s{per_run} (until the rates were steady: "
            f"{int((df.loc[steady, 'warmup_end'] == 'steady').sum())} of {int(steady.sum())} runs; the rest at the bound)")
    return text + _fixed_warmups(df[~steady])


def _fixed_warmups(rows: pd.DataFrame) -> str:
    """The runs that did not wait for steady rates, said by who and which mode ('elsewhere 0.100 s, 0.400 s'
    left the reader to guess): ', a fixed 0.100 s in copylab's latency runs and 0.400 s in <tool>'s latency runs'."""
    rows = rows.dropna(subset=["warmup_s"])
    if rows.empty:
        return ""
    kinds = []
    for (warmup, mode), g in rows.groupby(["warmup_s", "mode"]):
        own = [i for i in sorted(set(g["impl"])) if registry.get(i).native]
        peers = [i for i in sorted(set(g["impl"])) if not registry.get(i).native]
        who = " and ".join((["copylab's"] if own else []) + [f"{p}'s" for p in peers])
        kinds.append(f"{fmt_num(warmup)} s in {who} {mode} runs")
    return ", a fixed " + (", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0])


def _span(reps) -> str:
    """Repetitions per point: one number, or the range when the budget added passes to some."""
    low, high = (int(reps.min()), int(reps.max())) if len(reps) else (0, 0)
    return plural(high, "repetition") if low == high else f"{low}–{high} repetitions"


def _joined(values, unit: str) -> str:
    return ", ".join(f"{fmt_num(v)} {unit}" for v in values) or "n/a"


def _wrap(text: str) -> str:
    lines = []
    for line in text.splitlines():
        lines.extend(textwrap.wrap(line, WRAP, subsequent_indent="    ", break_on_hyphens=False,
                                   drop_whitespace=False) or [""])
    return "\n".join(lines)


def pick_runs(results_dir, df) -> dict:
    """One real, successful run per implementation: throughput mode, the grid's middle size,
    fewest threads, first repetition (falling back to whatever record exists)."""
    runs_dir = Path(results_dir) / "runs"
    picked = {}
    if not runs_dir.is_dir():
        return picked
    sizes = sorted(df["msg_size"].unique())
    mid = sizes[len(sizes) // 2] if sizes else 0
    candidates = {}
    for path in sorted(runs_dir.glob("*.json")):
        rec = _run_record(runs_dir, path.name)
        if rec is None:
            continue
        row = rec.get("row") or {}
        if str(row.get("status", "ok")) != "ok" or row.get("impl") not in roles.STUDY:
            continue
        score = (row.get("mode") != "throughput", bool(row.get("working_set_level")),  # the study's own points
                 abs(int(row.get("msg_size") or 0) - mid),
                 int(row.get("threads") or 0), int(row.get("rep") or 0), path.name)
        if row["impl"] not in candidates or score < candidates[row["impl"]][0]:
            candidates[row["impl"]] = (score, path, rec)
    for impl, (_, path, rec) in sorted(candidates.items()):
        picked[impl] = {"path": path, **rec}
    return picked


MAX_RECORD_BYTES = 64 << 20  # a point's record with both programs' (bounded) output


def _run_record(runs_dir: Path, name: str) -> dict | None:
    """A successful record of one of the study's implementations in runs/, its row's identity checked; None for anything else
    (a link out of the folder, a half-written or foreign file, a row that is not one)."""
    try:
        data = userfiles.read_inside(runs_dir, name, MAX_RECORD_BYTES)
        rec = userfiles.loads_json(data) if data is not None else None
    except (CopylabError, ValueError):
        return None
    row = rec.get("row") if isinstance(rec, dict) else None
    if not isinstance(row, dict) or str(row.get("status", "ok")) != "ok" or row.get("impl") not in registry.study_impls():
        return None
    if row.get("mode") not in ("throughput", "latency"):
        return None
    for key in ("msg_size", "threads", "rep"):
        value = row.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        row[key] = value
    if not isinstance(rec.get("raw"), dict):
        rec["raw"] = {}
    return rec


def program_outputs_markdown(runs: dict) -> str:
    """Every picked run's program output (pick_runs()): each implementation's sender, and the receiver once,
    with the first run: it is the same client program for every path."""
    if not runs:
        return "_This results folder has no `runs/` records, so there is no program output to show._"
    return "\n\n".join(program_output_markdown(run, ("server", "client") if k == 0 else ("server",))
                       for k, run in enumerate(runs.values()))


def program_output_markdown(run: dict, sides=("server", "client")) -> str:
    """Command lines, JSON output and perf stat output of one run's sides, as the programs printed them
    (each in a code block: whatever the programs printed is shown, never rendered)."""
    row = run.get("row") or {}
    parts = [f"**{escape.markdown(str(row.get('impl', '?')).upper())}**: {escape.markdown(row.get('mode'))} mode, "
             f"{escape.markdown(fmt_size(row.get('msg_size')))} messages, "
             f"{escape.markdown(plural(row.get('threads'), 'thread'))}; "
             f"record:\n\n{escape.markdown_code_block(Path(run['path']).name)}"]
    raw = run.get("raw") or {}
    for side, who in (("server", "server (sender)"), ("client", "client (receiver)")):
        if side not in sides:
            continue
        r = raw.get(side)
        if not isinstance(r, dict) or not r:
            parts.append(f"_No {who} output recorded._")
            continue
        argv = r.get("argv") if isinstance(r.get("argv"), list) else []
        line = RUN_FOLDER.sub("$RUN", shlex.join(map(str, argv)))
        parts.append(f"**{who}** command line:\n\n{escape.markdown_code_block(_wrap(line))}")
        stdout, stderr, perf = (str(r.get(k) or "") for k in ("stdout", "stderr", "perf"))
        if stdout.strip():
            parts.append(f"{who} stdout:\n\n{escape.markdown_code_block(_wrap(stdout.strip()))}")
        # perf's own notices of its window opening and closing are perf's, not the program's
        said = [line for line in stderr.strip().splitlines() if not line.startswith(PERF_NOTICES)]
        if said:
            tail = "\n".join(said[-8:])
            parts.append(f"{who} stderr (last lines):\n\n{escape.markdown_code_block(_wrap(tail))}")
        if perf.strip():
            counts = "\n".join(line for line in perf.strip().splitlines() if line.strip())  # its blank lines left out
            parts.append(f"{who} `perf stat -x,` output:\n\n{escape.markdown_code_block(_wrap(counts))}")
    return "\n\n".join(parts)
