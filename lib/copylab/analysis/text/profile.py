"""The section "Where the CPU goes, measured": where the copies happen (the profiles, through the
Study's rule-chosen explanations), the sampling's caveat, and the receive strategy's effect."""

from __future__ import annotations

from ...fmt import fmt_num, fmt_size, md_escape, plural
from ..profiles import profile_finding
from ..explain import bound_sentences
from ..roles import name

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
    return "\n\n".join(x for x in (md_escape(profile_text(study)), states,
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


# one basis for every "ns of CPU per byte" of a profile bucket (profiles.bucket_cost), so each can be
# recomputed from profiles.csv
COST_BASIS = ("Each ns of CPU per byte above is, per profiled run, the bucket's share of the side's busy samples "
              "(its share of all samples over 1 − the idle share) × the side's busy CPU time in the window (its "
              "pinned CPU's busy share × the window; its task-clock when not pinned) ÷ the bytes moved: "
              "profiles.csv's srv_prof_*, srv_prof_idle, srv_cpu_busy, duration_s and bytes for the sender.")


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
