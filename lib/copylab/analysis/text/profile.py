"""The section "Where the CPU goes, measured": where the copies happen (the profiles, through the
Study's rule-chosen explanations), the sampling's caveat, and the receive strategy's effect."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_size, markdown_table, md_escape, plural
from ..profiles import POINT_HIGH, POINT_LOW, POINT_MEAN, POINT_PASSES, apart_from_passes, profile_finding
from ..explain import bound_sentences
from ..roles import BASE, ONE_COPY, ZERO_COPY, name

# ------------------------------------------------------------------------------------------------
# profiles: where the copies happen, measured

def _pct(share) -> str:
    return "n/a" if share is None or share != share else f"{100 * share:.1f}%"


def markdown(study) -> str:
    """The section's text: why there is no profile, or what it shows and the sampling's caveat."""
    p = profile_finding(study.profiles)
    apart = apart_note(study)
    states = md_escape(states_text(study))
    if "reason" in p:
        return "\n\n".join(x for x in (f"_No profile to show: {md_escape(p['reason'])}._", states, apart) if x)
    skid = ", ".join(f"{name(i)} sender {100 * e['skid']['sender']:.0f}%" for i, e in p["impls"].items())
    return "\n\n".join(x for x in (md_escape(profile_text(study)), points_text(study), states,
                                    md_escape(PROFILE_CAVEAT.format(event=p["event"], skid=skid)), apart) if x)


def states_text(study) -> str:
    """The cells whose measured runs fall into two states (the Study's splits, explain.two_states) or
    trade CPU per byte between the sides (explain.side_trade): where the profiled thread count shows one
    placement of the work, the runs at others may show another."""
    return " ".join(e.text for k, e in sorted(study.explanations.items()) if k.startswith("states_"))


def apart_note(study) -> str:
    """The profiled runs left out of the evidence because the CPUs were apart when they were taken."""
    left = study.run.get("profiled_apart") or []
    if not left:
        return ""
    return md_escape(f"Left out of this evidence: {plural(len(left), 'profiled run')} taken while the two CPUs were "
                     f"apart ({', '.join(left)}), still apart after the retries the placement rule allows: their "
                     "shares describe that placement, not the one the measured runs had.")


def profile_text(study) -> str:
    """The profile section's sentences: the Study's rule-chosen explanations (the copy the one-copy path
    removes, what the zero-copy path pays and where), what every receiver copies, and which side bounds
    each path at the profiled point (a side only where it is near 100%)."""
    p, df = profile_finding(study.profiles), study.part_e
    if "reason" in p or not p:
        return ""
    parts = [study.explanations[k].text for k in ("removed_copy", "zero_copy_cost", "deferred_copy_site")
             if k in study.explanations]
    where = f"at {fmt_size(p['msg_size'])}, {plural(p['threads'], 'thread')}"
    copies = [f"{name(i)} {_pct(e['receiver']['kernel_copy_to_user'])}" for i, e in sorted(p["impls"].items())]
    parts.append(f"Every receiver copies to user memory: {', '.join(copies)} of the receiver's samples ({where}).")
    tp = df[(df["mode"] == "throughput") & (df["msg_size"] == p["msg_size"]) & (df["threads"] == p["threads"])]
    costs = [v for k in ("removed_copy", "zero_copy_cost") if k in study.explanations
             for key, v in study.explanations[k].evidence.items() if key.endswith("ns_per_byte")]
    basis = [COST_BASIS] if any(v == v for v in costs) else []  # said when a cost per byte was
    return " ".join(parts + bound_sentences({i: tp[tp["impl"] == i] for i in sorted(p["impls"])}, where) + basis)


# one basis for every "ns of CPU per byte" and "µs per message" of a profile bucket (profiles.bucket_cost),
# stated once here, so each can be recomputed from profiles.csv and results.csv
COST_BASIS = ("Each ns of CPU per byte and µs per message of a profile bucket, here and in Q1, Q4 and Q6, is the "
              "bucket's share of the side's busy samples in the profiled run (its share of all samples over 1 − "
              "the idle share) × the measured point's CPU time per byte or per message: the mean over that point's "
              "passes in results.csv (same path, size and thread count) of the side's pinned CPU's busy share × "
              "the window (its task-clock when not pinned) ÷ the bytes or messages. The profiled run gives where "
              "the time goes, the measured passes how much there is.")


# which explanations read the profiled runs of which paths: rule prefix -> (paths, where the text says it)
USES = {"removed_copy": ((BASE, ONE_COPY), "this section"), "zero_copy_cost": ((ZERO_COPY, BASE), "this section"),
        "deferred_copy_site": ((ZERO_COPY,), "this section"), f"why_{ZERO_COPY}_": ((ZERO_COPY, BASE), "Q1"),
        f"gap_{ONE_COPY}_": ((ONE_COPY, BASE), "Q4"), "copy_by_working_set": ((BASE,), "Q2")}
# (rule prefix, path) -> the evidence key without which the rule does not read that path's runs: Q1 reads the
# baseline's only in its balance (explain_copies._balance; review-fresh6 M2)
ONLY_WITH = {(f"why_{ZERO_COPY}_", BASE): "balance_us_per_message"}


def used_in(study, impl: str, size: int) -> list[str]:
    """Where the report uses the shares of impl's profiled run at size (USES; Q6 where it explains that gap)."""
    q6 = (study.q6_explanation.evidence or {}).get("msg_size") if study.q6_explanation is not None else None
    found = []
    for key, e in sorted(study.explanations.items()):
        for prefix, (impls, where) in USES.items():
            evidence = e.evidence or {}
            sizes = {evidence.get("msg_size")} | {p["msg_size"] for p in evidence.get("points", [])}
            needs = ONLY_WITH.get((prefix, impl))
            if (key.startswith(prefix) and impl in impls and size in sizes and e.verdict != "unknown"
                    and (needs is None or needs in evidence)):
                where = "Q6" if where == "Q4" and size == q6 else where
                if where not in found:
                    found.append(where)
    return found


def points_text(study) -> str:
    """Each profiled run's throughput against its point's measured passes (profiles.with_points), as a
    table: a run off their mean by more than the equivalence margin was taken in another state
    (profiling overhead, or one the passes did not meet), flagged by the rule the sentences that use its
    shares follow (profiles.apart_from_passes), with where its shares are still used. Markdown."""
    rows = study.profiles
    if POINT_PASSES not in rows or rows.empty:
        return ""
    rows = rows.sort_values(["impl", "msg_size", "threads"])
    out = apart_from_passes(rows, study.margin)
    outside = set(out.index)
    margin = f"±{100 * study.margin:.0f}%"
    table = pd.DataFrame([{
        "path": name(r["impl"]), "size": fmt_size(int(r["msg_size"])), "threads": str(int(r["threads"])),
        "profiled run (Gbit/s)": float(r["throughput_gbps"]),
        "passes (Gbit/s)": (f"{fmt_num(r[POINT_LOW])}–{fmt_num(r[POINT_HIGH])}" if r[POINT_PASSES] == r[POINT_PASSES]
                            else "no passes"),
        "× passes' mean": float(r["throughput_gbps"]) / float(r[POINT_MEAN]) if r[POINT_PASSES] == r[POINT_PASSES]
        else float("nan"),
        "state": "another state" if i in outside else "as its passes",
        "shares used in": ", ".join(used_in(study, r["impl"], int(r["msg_size"]))) or "not cited"}
        for i, r in rows.iterrows()])
    head = (f"Each profiled run's throughput against its point's measured passes (the lowest and highest pass); "
            f"a run off their mean by more than the equivalence margin ({margin}) was in another state.")
    if out.empty:
        return md_escape(head + " Every profiled run lies within the margin.") + "\n\n" + markdown_table(table)
    slower = int((out["ratio"] < 1).sum())
    cited = sum(1 for _, r in out.iterrows() if used_in(study, r["impl"], int(r["msg_size"])))
    tail = (f"{plural(len(out), 'run')} of {len(rows)} lie beyond it ({slower} slower), so they "
            f"were profiled in another state than the measured passes (the profiler's overhead, or a state the "
            f"passes did not meet); the shares of {cited} of them are cited, as the best evidence there is, "
            "assuming they carry over to the measured state. Their costs per byte and per message are on the "
            "measured points' CPU time, never the profiled run's own.")
    return md_escape(f"{head} {tail}") + "\n\n" + markdown_table(table)


PROFILE_CAVEAT = ("Profiles sample {event} per CPU. Without a PMU the sampling timer is an hrtimer: a tick "
                  "that falls while interrupts are off fires when they come back on, so such samples land on "
                  "the instruction that re-enables them (_raw_spin_unlock_irqrestore, finish_task_switch): "
                  "{skid} of the samples here. Each sample is classified by its whole stack with that leaf "
                  "skipped, so the time is charged to the operation that disabled interrupts (a wake-up, a "
                  "transmit), not to a lock. Ticks missed while a CPU is idle are not sampled either: read idle "
                  "and busy time from the CPU busy columns, not from the idle share.")


# ------------------------------------------------------------------------------------------------
# the receive strategy (the harness section's tables and rules: harness.py)

def receive_text(table) -> str:
    if table.empty:
        return ""
    worst = table.loc[table["bulk_over_message"].sub(1).abs().idxmax()]
    return (f"With bulk reads instead of message-sized ones, {name(worst['impl'])} at "
            f"{fmt_size(worst['msg_size'])} moves {fmt_num(worst['bulk_over_message'])}× as much data "
            f"({fmt_num(worst['bulk'])} vs {fmt_num(worst['message'])} Gbit/s): the receiver's read size is part "
            "of what is measured.")
