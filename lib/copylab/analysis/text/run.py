"""How this run went: the section that says what the host gave the sweep (analysis/run_facts.py
computes the numbers; the Study holds them). meta.json's words are escaped: untrusted input."""

from __future__ import annotations

from ...fmt import md_escape, plural
from ..run_facts import CV_TARGET, STEAL_FLAG, STEAL_HEAVY

def _pct(x: float) -> str:
    """12%, 4.5%, 8%: whole percents from 10%, one decimal below, no trailing .0."""
    text = f"{100 * x:.0f}" if x >= 0.1 else f"{100 * x:.1f}".removesuffix(".0")
    return f"{text}%"


def markdown(study) -> str:
    """The section's Markdown for a Study (its run facts)."""
    return how_this_run_went(study.run)


def how_this_run_went(facts: dict) -> str:
    """One bullet per aspect that facts have something to say about."""
    out = [line for line in (_time(facts), _passes(facts), _placement(facts), _steal(facts), _precision(facts),
                             _spread(facts), _profiles(facts)) if line]
    return "\n".join(f"- {line}" for line in out) if out else "Nothing was recorded about how this run went."


def _time(facts: dict) -> str:
    wall, budget = facts["wall_s"], facts["budget_min"]
    if wall is None:
        return ""
    text = f"**Time.** The sweep took {wall / 60:.1f} min of wall time over {plural(facts['sessions'], 'session')}"
    if budget is not None:
        text += f" against a budget of {budget:g} min"
        if wall > budget * 60:
            text += f" (over it by {_pct(wall / (budget * 60) - 1)})"
    if facts["pace"] is not None:
        text += (f"; its first points took {facts['pace']:.2f}x the time the estimate gave them (each run's warm-up, "
                 "window and a fixed allowance for starting and stopping it): above 1, this host is slower at that "
                 "than the estimate assumes; below 1, its warm-ups settled before their bound")
    return text + "."


def _passes(facts: dict) -> str:
    if facts["base_passes"] is None:
        return ""
    text = f"**Passes.** {facts['base_passes']:.0f} base passes"
    if facts["extra_passes"]:
        text += (f" and {plural(facts['extra_passes'], 'extra pass')} ({plural(facts['extra_points'], 'point')}) "
                 "for comparisons still too wide to decide")
    elif facts["budget_min"] is not None:
        text += "; no extra pass ran"
    if facts["budget_stopped"]:
        text += f" ({md_escape(facts['budget_stopped'])})"
    return text + "."


def _placement(facts: dict) -> str:
    calibration = facts.get("calibration_set_aside", 0)
    if not (facts["placement_why"] or facts["runs_set_aside"] or calibration or facts["kept_apart"]):
        return ""
    text = "**Where the vCPUs were.**"
    if facts["placement_why"] and facts.get("round_trips_recorded"):
        # the system configuration's placement row gave the modes in full (review-fresh4 G7): said once
        text += (" Learned from this host's cache-line round trips (the modes and the line between them: the "
                 "system configuration's CPU placement row).")
    elif facts["placement_why"]:
        text += f" Learned from this host's cache-line round trips: {md_escape(facts['placement_why'])}."
    aside, effect, wall = facts["runs_set_aside"], facts["apart_effect"], facts["wall_s"]
    if aside or calibration:
        # measured and profiled counted apart: the system configuration counts the measured ones (review-fresh4 G5)
        profiled = facts.get("profiled_set_aside", 0)
        counts = [plural(n, f"{kind} run") for n, kind in
                  ((aside - profiled, "measured"), (profiled, "profiled"), (calibration, "calibration")) if n]
        aside += calibration
        text += (f" {' and '.join(counts)} taken while the CPUs were apart {'was' if aside == 1 else 'were'} set "
                 f"aside and measured again, at a cost of {facts['placement_s']:.0f} s")
        if wall:
            text += f" ({_pct(facts['placement_s'] / wall)} of the wall time)"
        pairs = int(effect.get("pairs") or 0)
        if all(isinstance(effect.get(k), (int, float)) for k in ("ratio", "low", "high")):
            text += (f"; the runs set aside were {effect['ratio']:.2f}x as fast as the runs kept in their place "
                     f"({effect['low']:.2f}-{effect['high']:.2f}, {plural(pairs, 'pair')})")
            if effect.get("differs") is False:
                text += ": equivalent within the margin, so the sweep stopped measuring runs again"
        text += "."
    else:
        text += " No run was set aside."
    retaken = facts.get("retaken") or {}
    if retaken.get("kept_apart") and "measured_again" in retaken:
        kept, again = retaken["kept_apart"], retaken["measured_again"]
        which = f"the {plural(kept, 'run')}" if again == kept else f"{again} of the {plural(kept, 'run')}"
        text += (f" After the base passes or a later extra pass, {which} kept while the CPUs were apart (a "
                 "stretch that outlasted waiting, or the allowance spent) "
                 f"{'was' if again == 1 else 'were'} measured again, {'its' if again == 1 else 'their'} time "
                 "counted as placement's")
        text += "." if again == kept else ", as many as the budget held."
    if facts["kept_apart"]:
        text += f" {plural(facts['kept_apart'], 'run')} kept while apart (flagged `cpus_apart`)"
        if facts["kept_apart_ratio"] is not None:
            text += f", at {facts['kept_apart_ratio']:.2f}x their points' other passes (throughput)"
        text += "."
    return text


def _steal(facts: dict) -> str:
    if not facts["steal_rows"]:
        return ""
    text = (f"**Steal.** The hypervisor took over {_pct(STEAL_FLAG)} of a pinned CPU's time in "
            f"{facts['steal_over_flag']} of {facts['steal_rows']} runs (over {_pct(STEAL_HEAVY)} in "
            f"{facts['steal_over_heavy']})")
    if facts["steal_ratio"] is not None and facts["steal_over_flag"]:
        text += f"; those throughput runs measured {facts['steal_ratio']:.2f}x their points' other passes"
    other = facts["other_programs"]
    if other is not None:
        text += f"; other programs in the guest used at most {_pct(other)} of the CPUs"
        if facts["quiet_below"] is not None and other <= facts["quiet_below"] and facts["steal_over_flag"]:
            text += ": the guest was quiet, the physical host was not"
    return text + "."


def _precision(facts: dict) -> str:
    if not facts["precision_points"]:
        return ""
    return (f"**Precision.** Median spread of a throughput point over its passes (CV) "
            f"{_pct(facts['precision_median_cv'])}; {facts['precision_within_target']} of "
            f"{facts['precision_points']} points within {_pct(CV_TARGET)}.")


def _spread(facts: dict) -> str:
    """Where the spread comes from, how the passes split their windows, and whether this run's own
    spread calls for the same split (run_facts.window_choice)."""
    per_connection, within, window = facts["window_per_connection_cv"], facts["window_within_cv"], facts["window_window_s"]
    if per_connection is None or within is None:
        return ""
    text = (f"**Where the spread comes from.** Between connections {_pct(per_connection)} (the level each new "
            "connection settles at" + (", the runs kept while apart included" if facts["kept_apart"] else "") +
            f"), within a {window:.2g} s window {_pct(within)} (its 50 ms intervals, taken as independent: a lower "
            "bound)")
    k = facts["window_rounds"]
    if k and k > 1:
        text += f". Each throughput pass split its window over {k} fresh sets of connections, one after another"
    elif k == 1:
        text += ". Each throughput pass measured one set of connections"
    if facts["window_rounds_why"]:
        text += f" (chosen before the first point: {md_escape(facts['window_rounds_why'])})"
    apart, runs = facts.get("window_calibration_apart", 0), facts.get("window_calibration_runs", 0)
    if apart:
        text += (f"; {apart} of the {plural(runs, 'calibration run')} it chose from {'was' if apart == 1 else 'were'} "
                 "taken while the CPUs were apart, by the line the sweep learned later: its spread between "
                 "connections is partly that state's")
    best = facts["window_best_rounds"]
    if best is not None and k is not None:
        text += (f"; this run's own spread calls for the same ({plural(best, 'round')})" if best == k else
                 f"; by the same rule, this run's own spread calls for {plural(best, 'round')} of "
                 f"{facts['window_best_duration_s'] / best:.2f} s (the host's spread at the calibration and over the "
                 "sweep differ, or the estimates' sampling error)")
    return text + "."


def _profiles(facts: dict) -> str:
    if not facts["profiled_apart"]:
        return ""
    return ("**Profiles taken apart.** The profiled runs of " + ", ".join(md_escape(p) for p in facts["profiled_apart"])
            + " were taken while the CPUs were apart (still apart after the retries the placement rule allows): "
            "their shares describe that placement.")
