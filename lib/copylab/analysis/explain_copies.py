"""Rules about the copies, chosen from the profiles (with their spread), the folded stacks and the
programs' own counters: what the one-copy path removes, what the zero-copy path pays instead, where
its deferred copy runs, and what makes one path cost more per message than another. See explain.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..contract import PROFILE_BUCKETS
from ..fmt import fmt_num, fmt_size, plural
from . import stacks
from .patterns import switches_change
from .explain import (CLEAR_GAP, NEAR_FULL, Explanation, and_list, before_correction, flag, hypothesis, mean_of, pct,
                      share_of, standing_cost_words)
from .. import cachelevels, registry
from ..errors import CopylabError
from ..profile.rules import COMM_LEN
from .findings import data_path
from .decisions import DEFAULT_MARGIN
from .profiles import (apart_from_passes, bucket_cost, cost_difference, point_cpu, point_cpu_column, point_rows,
                       profiled, share, wilson)
from .roles import BASE, ONE_COPY, ZERO_COPY, name
from .stats import throughput_rows

ABSENT = 0.005          # a copy whose mean share is at most this is gone
ENOBUFS_NOTABLE = 1e-3  # ENOBUFS per send call from which back-pressure is part of the cost
SITE_DOMINANT = 0.5     # where the lower 95% bound of one place's share of the deferred copy's samples is a majority
ZC_COSTS = {"zerocopy_pin": "pinning the user pages", "deferred_copy": "the deferred copy (skb_copy_ubufs)",
            "zerocopy_completion": "completions (error queue, unpinning)"}
BUSY_BUCKETS = tuple(b for b in PROFILE_BUCKETS if b != "idle")


def carry_over(runs: list[pd.DataFrame], margin: float, evidence: dict) -> str:
    """'A1's profiled run at 1 KiB ran at 0.617x its passes: the split between the buckets may not carry over to
    them' for the profiled runs a sentence uses whose throughput lies outside the equivalence margin of their
    passes' mean (profiles.apart_from_passes; each run once), kept in evidence too; '' where none does. The
    shares' sampling ranges do not cover that state difference (review-fresh6 M2)."""
    apart = pd.concat([apart_from_passes(r, margin) for r in runs]).drop_duplicates(["impl", "msg_size", "threads"])
    if apart.empty:
        return ""
    evidence["profiled_apart_from_passes"] = [
        {"impl": r["impl"], "msg_size": int(r["msg_size"]), "threads": int(r["threads"]), "ratio": float(r["ratio"])}
        for _, r in apart.iterrows()]
    said = [f"{name(r['impl'])}'s profiled run at {fmt_size(int(r['msg_size']))} ran at {r['ratio']:.3g}x its passes"
            for _, r in apart.iterrows()]
    return f"{and_list(said)}: the split between the buckets may not carry over to them"


def _sentence(clause: str) -> str:
    return f" {clause}." if clause else ""


def profiled_sizes(profiles: pd.DataFrame, impls) -> set[int]:
    """The sizes at which every one of impls was profiled."""
    rows = profiled(profiles)
    sizes = [set(int(s) for s in rows[rows["impl"] == i]["msg_size"]) for i in impls]
    return set.intersection(*sizes) if sizes else set()


def profiled_threads(rows: pd.DataFrame) -> list[int]:
    """The thread counts of profiled runs (an explanation's evidence: where it was measured)."""
    return sorted(int(n) for n in set(rows["threads"])) if len(rows) else []


def profiled_size(profiles: pd.DataFrame, impls, pick=max) -> int | None:
    """The largest (pick=min: smallest) size at which every one of impls was profiled."""
    common = profiled_sizes(profiles, impls)
    return int(pick(common)) if common else None


# ------------------------------------------------------------------------------------------------
# the zero-copy path: what it pays, and where


def enobufs_evidence(df: pd.DataFrame) -> dict:
    """ENOBUFS over the zero-copy path's measured throughput runs: runs, runs with any, total, per send."""
    zc = throughput_rows(df)
    zc = zc[zc["impl"] == ZERO_COPY]
    counted = pd.to_numeric(zc.get("enobufs", pd.Series(dtype=float)), errors="coerce").dropna()
    sends = pd.to_numeric(zc.get("send_calls", pd.Series(dtype=float)), errors="coerce").fillna(0).sum()
    total = float(counted.sum())
    return {"runs": int(len(counted)), "runs_with_enobufs": int((counted > 0).sum()), "enobufs": total,
            "send_calls": float(sends), "per_1000_sends": total / sends * 1000 if sends else math.nan}


def enobufs_sentence(e: dict) -> str:
    if not e["runs"]:
        return "ENOBUFS was not counted in this sweep, so back-pressure cannot be assessed."
    if e["enobufs"] == 0:
        return (f"ENOBUFS occurred in none of the {e['runs']} {name(ZERO_COPY)} throughput runs: back-pressure "
                "from the optmem or locked-page limit plays no part here.")
    text = (f"ENOBUFS occurred {e['enobufs']:.0f} times in {e['runs_with_enobufs']} of {e['runs']} runs "
            f"({fmt_num(e['per_1000_sends'])} per 1000 send calls)")
    if e["per_1000_sends"] / 1000 >= ENOBUFS_NOTABLE:
        return text + (": the sender hit its optmem or locked-page limit and had to drain completions before "
                       "sending on, so back-pressure is part of what it pays.")
    return text + ": too rare to matter for the throughput."


def zero_copy_cost(df: pd.DataFrame, profiles: pd.DataFrame, size: int | None = None) -> Explanation:
    """What the zero-copy sender pays instead of the copy: the largest of its pinning, deferred-copy
    and completion shares (only when it exceeds the next beyond both intervals), and ENOBUFS."""
    size = size or profiled_size(profiles, [ZERO_COPY])
    eno = enobufs_evidence(df)
    rows = point_rows(profiles, ZERO_COPY, size) if size else profiles.iloc[0:0]
    if rows.empty:
        return hypothesis("zero_copy_cost", "unknown", f"what {name(ZERO_COPY)}'s sender pays instead of the copy "
                          "(pinning, completions or a copy deferred to delivery) cannot be told without its profile. "
                          + enobufs_sentence(eno), f"a profiled run of {name(ZERO_COPY)} (grid key profile)",
                          {"enobufs": eno})
    shares = {bucket: share(rows, "srv", bucket) for bucket in ZC_COSTS}
    ranked = sorted(shares, key=lambda b: -shares[b].mean)
    top, second = ranked[0], ranked[1]
    listing = "; ".join(f"{ZC_COSTS[b]} {shares[b].pct()}" for b in ranked)
    evidence = {"msg_size": size, "threads": profiled_threads(rows),
                "sender_shares": {b: s.to_dict() for b, s in shares.items()}, "enobufs": eno}
    head = f"Of {name(ZERO_COPY)}'s sender samples at {fmt_size(size)} ({shares[top].over()}): {listing}."
    if not shares[top].above(shares[second]):
        return hypothesis("zero_copy_cost", top, f"{ZC_COSTS[top][0].upper() + ZC_COSTS[top][1:]} may cost the "
                          f"sender most, but its interval overlaps that of {ZC_COSTS[second]}.",
                          f"more profiled runs of {name(ZERO_COPY)} at {fmt_size(size)}", evidence,
                          facts=f"{head} {enobufs_sentence(eno)}")
    if top == "deferred_copy":
        claim = (f"{name(ZERO_COPY)} does not skip the copy, it pays it later: the deferred copy is its "
                 "sender's largest zero-copy cost." + _deferred_cost(profiles, size, evidence))
    elif top == "zerocopy_pin":
        claim = (f"Pinning the user pages, not a copy, is the largest zero-copy cost of {name(ZERO_COPY)}'s "
                 "sender: the set-up that replaces the copy costs more than the copy left over.")
    else:
        claim = (f"Handling completions (reading the error queue, unpinning) is the largest zero-copy cost of "
                 f"{name(ZERO_COPY)}'s sender.")
    return Explanation("zero_copy_cost", top, f"{head} {claim} {enobufs_sentence(eno)}", evidence)


ZC_SHORT = {"zerocopy_pin": "pinning", "deferred_copy": "the deferred copy", "zerocopy_completion": "completions"}


def zero_copy_cost_words(e: Explanation) -> str:
    """zero_copy_cost's verdict in a few words that follow from its shares: 'the deferred copy, most of
    the zero-copy cost' only where it is more than the other two together, 'pinning, the largest' where
    it is only above the next beyond both intervals, 'pinning or the deferred copy, undecided' where
    the intervals overlap ('' without shares)."""
    shares = (e.evidence or {}).get("sender_shares") or {}
    if e.verdict not in shares:
        return ""
    ranked = sorted(shares, key=lambda b: -shares[b]["mean"])
    top, second = ranked[0], ranked[1]
    if e.hypothesis:
        return f"{ZC_SHORT[top]} or {ZC_SHORT[second]}, undecided"
    rest = sum(shares[b]["mean"] for b in ranked[1:])
    return f"{ZC_SHORT[top]}, " + ("most of the zero-copy cost" if shares[top]["mean"] > rest else "the largest")


def zero_copy_cost_by_size(df: pd.DataFrame, profiles: pd.DataFrame) -> dict[int, Explanation]:
    """zero_copy_cost at every size the zero-copy path was profiled at (a verdict need not hold at
    another size: pinning can outweigh the deferred copy at 64 B and not at 64 KiB)."""
    return {size: zero_copy_cost(df, profiles, size) for size in sorted(profiled_sizes(profiles, [ZERO_COPY]))}


def _deferred_cost(profiles: pd.DataFrame, size: int, evidence: dict) -> str:
    """' It costs the sender 0.28 ns per byte, against 0.12 ns/B for A1's kernel copy.' when measurable."""
    deferred = bucket_cost(point_rows(profiles, ZERO_COPY, size), "srv", "deferred_copy")
    base = bucket_cost(point_rows(profiles, BASE, size), "srv", "kernel_copy_from_user")
    evidence.update(deferred_ns_per_byte=deferred, base_kernel_copy_ns_per_byte=base)
    if deferred != deferred:
        return ""
    text = f" It costs the sender {fmt_num(deferred)} ns of CPU per byte"
    if base == base:
        text += f", against {fmt_num(base)} ns per byte for {name(BASE)}'s kernel copy from user memory"
    return text + "."


def deferred_copy_site(profiles: pd.DataFrame, results_dir, size: int | None = None) -> Explanation:
    """Where the deferred copy (skb_copy_ubufs) ran, from the folded stacks of the zero-copy path's
    profiled runs: inside the sender's sendmsg, the receiver's recv, a softirq thread or an interrupt."""
    size = size or profiled_size(profiles, [ZERO_COPY])
    rows = point_rows(profiles, ZERO_COPY, size) if size else profiles.iloc[0:0]
    rps = bool(flag(rows["rps"]).any()) if "rps" in rows and len(rows) else False
    folder = Path(results_dir) / "profiles" if results_dir else None
    found = {side: stacks.folded_counts(folder, rows["point_id"].dropna(), side) if folder and folder.is_dir()
             else {} for side in ("srv", "cli")}
    where = {side: stacks.contexts(counts) for side, counts in found.items()}
    total = sum(sum(c.values()) for c in where.values())
    threads = profiled_threads(rows)
    evidence = {"msg_size": size, "threads": threads, "rps": rps, "samples": {s: dict(c) for s, c in where.items()}}
    if rows.empty or not any(found.values()):
        return hypothesis("deferred_copy_site", "unknown", f"where {name(ZERO_COPY)}'s deferred copy runs cannot "
                          "be read from call stacks here.", "the folded stacks of its profiled runs "
                          "(profiles/ in the results folder; grid key profile)", evidence)
    if total == 0:
        return Explanation("deferred_copy_site", "none", f"No sample of {name(ZERO_COPY)}'s profiled runs at "
                           f"{fmt_size(size)} ran skb_copy_ubufs: the kernel did not copy the pages on delivery "
                           "here.", evidence)
    by_context = {ctx: sum(where[s][ctx] for s in where) for ctx in stacks.CONTEXTS}
    top = max(by_context, key=by_context.get)
    share_top = by_context[top] / total
    evidence["share"] = {ctx: n / total for ctx, n in by_context.items()}
    if wilson(share_top, total)[0] < SITE_DOMINANT:  # a majority beyond the sampling error, or several places
        parts = ", ".join(f"{_CONTEXT_WORDS[c]} {100 * n / total:.0f}%" for c, n in by_context.items() if n)
        return Explanation("deferred_copy_site", "split", f"The deferred copy runs in several places ({total} "
                           f"samples at {fmt_size(size)}, none a majority beyond the sampling error): {parts}.",
                           evidence)
    side = "srv" if where["srv"][top] >= where["cli"][top] else "cli"
    path = stacks.example_path(found[side], stacks.DEFERRED_COPY, top)
    # the rest said too: a minority in the receiver's recv is what the runs at other thread counts may grow
    rest = ", ".join(f"{100 * n / total:.0f}% {_CONTEXT_WORDS[c]}" for c, n in by_context.items() if n and c != top)
    at = f"{fmt_size(size)}, {plural(len(threads), 'thread count')}" if len(threads) > 1 else \
        f"{fmt_size(size)}, {plural(threads[0], 'thread')}"
    return Explanation("deferred_copy_site", top, _site_text(top, share_top, total, path, rps, at, rest), evidence)


_CONTEXT_WORDS = {"sendmsg": "inside the sender's own sendmsg call", "recv": "inside the receiver's recv call",
                  "softirq_thread": "in a softirq thread (ksoftirqd)", "interrupt": "in interrupt context"}


def _site_text(context: str, share_top: float, total: int, path: str, rps: bool, at: str, rest: str = "") -> str:
    text = (f"Where the deferred copy runs, from its call stacks (profiled at {at}): {100 * share_top:.0f}% of its "
            f"{total} samples ran {_CONTEXT_WORDS[context]}" + (f" ({path})" if path else "")
            + (f"; {rest}" if rest else ""))
    if context == "sendmsg":
        text += (f": veth delivers the packet on the transmitting CPU, so, as profiled ({at}), the sender pays the "
                 "copy it set out to skip; runs at other thread counts can move it (the runs' CPU per byte says "
                 "where, below)" + (", although RPS was set to move receive work to the receiver's CPU (rps=True)"
                              if rps else ""))
    elif context == "recv":
        text += ": the receiver pays it" + (" (RPS moved receive work to the receiver's CPU: rps=True)" if rps else "")
    return text + "."


# ------------------------------------------------------------------------------------------------
# the one-copy path: what it removes, and what it costs per message


def removed_copy(profiles: pd.DataFrame, size: int | None = None) -> Explanation:
    """Whether the baseline's user-space copy is gone in the one-copy path's profile (beyond the spread)."""
    size = size or profiled_size(profiles, [BASE, ONE_COPY])
    if size is None:
        return hypothesis("removed_copy", "unknown", f"which copy {name(ONE_COPY)} removes cannot be shown from "
                          "profiles here.", f"profiled runs of {name(BASE)} and {name(ONE_COPY)} (grid key profile)", {})
    rb, rx = point_rows(profiles, BASE, size), point_rows(profiles, ONE_COPY, size)
    ub, ux = share(rb, "srv", "user_copy"), share(rx, "srv", "user_copy")
    kb, kx = share(rb, "srv", "kernel_copy_from_user"), share(rx, "srv", "kernel_copy_from_user")
    cost = bucket_cost(rb, "srv", "user_copy")
    evidence = {"msg_size": size, "threads": profiled_threads(rx), "base_user_copy": ub.to_dict(), "x_user_copy": ux.to_dict(),
                "base_kernel_copy": kb.to_dict(), "x_kernel_copy": kx.to_dict(), "base_user_copy_ns_per_byte": cost}
    head = (f"Profiled at {fmt_size(size)} ({ub.over()}): {name(BASE)}'s user-space copy (memcpy in its server) is "
            f"{ub.pct()} of the sender's samples" + (f" ({fmt_num(cost)} ns of CPU per byte)" if cost == cost else "")
            + f", {name(ONE_COPY)}'s {ux.pct()}; the kernel's copy from user memory is {kb.pct()} in {name(BASE)} "
            f"and {kx.pct()} in {name(ONE_COPY)}.")
    if ub.above(ux) and ux.mean <= ABSENT:
        return Explanation("removed_copy", "removed", f"{head} The serialisation copy is gone in {name(ONE_COPY)}; "
                           "the kernel's copy remains in both.", evidence)
    if ub.above(ux):
        return Explanation("removed_copy", "reduced", f"{head} {name(ONE_COPY)} copies less in user space, but not "
                           "nothing.", evidence)
    return hypothesis("removed_copy", "not_seen", "the profile does not separate the two copies as the design "
                      "predicts.", "more profiled runs at a larger message size, where the copy is a larger share",
                      evidence, facts=head)


def per_message_gap(profiles: pd.DataFrame, x: str, base: str, size: int, measured: pd.DataFrame | None = None,
                    margin: float = DEFAULT_MARGIN) -> Explanation:
    """Why x's sender spends more CPU per message than base's at size: the profile buckets whose cost
    per message grew, and whether the copy accounts for at least half of the gap. measured: the sweep's
    rows, whose context switches per message (at the profiled thread count) say what a scheduling
    increase is made of."""
    rx, rb = point_rows(profiles, x, size), point_rows(profiles, base, size)
    at = f"{fmt_size(size)}" + (f", {plural(int(rx['threads'].iloc[0]), 'thread')} (profiled)" if len(rx) else "")
    who = f"{name(x)} against {name(base)} at {at}"
    if rx.empty or rb.empty:
        return hypothesis("per_message_gap", "unknown", f"why {who} costs what it costs cannot be told without "
                          "profiles of both.", f"profiled runs of both at {fmt_size(size)} (grid key profile)", {})
    every = bucket_differences(rx, rb)
    delta = {b: d.delta for b, d in every.items()}
    terms = _gap_terms(every, rx, rb)
    merged = {b: d.delta for b, d in terms.items()}
    gap = bucket_cost(rx, "srv", BUSY_BUCKETS, "message") - bucket_cost(rb, "srv", BUSY_BUCKETS, "message")
    copy = merged[COPY_NET]
    kx, cb = share(rx, "srv", "kernel_copy_from_user"), share(rb, "srv", ("user_copy", "kernel_copy_from_user"))
    evidence = {"msg_size": size, "gap_us_per_message": gap, "copy_delta_us": copy, "delta_us": delta,
                "terms": {b: d.to_dict() for b, d in terms.items()},
                "x_kernel_copy": kx.to_dict(), "base_copies": cb.to_dict()}
    shares = (f"{name(x)}'s kernel copy from its iovec is {kx.pct()} of the sender's samples, {name(base)}'s two "
              f"copies (its memcpy and one kernel copy) {cb.pct()} ({kx.over()})")
    if gap != gap or gap <= 0:
        return hypothesis("per_message_gap", "not_sender_cpu", f"{who}: the sender's CPU per message is not higher "
                          f"(difference {fmt_num(gap)} µs), so the gap is not the sender's CPU time.",
                          "which side bounds the point (pinned CPUs' busy shares)", evidence)
    head = (f"At {at} {shares}: the copy accounts for {fmt_num(copy)} µs of the {fmt_num(gap)} µs more sender CPU "
            f"per message.{_sentence(carry_over([rx, rb], margin, evidence))}")
    if kx.above(cb) and copy >= gap / 2:
        return Explanation("per_message_gap", "copy", f"{head} Gathering 8 separately allocated fields of about "
                           f"{fmt_size(size // 8)} each costs more than {name(base)}'s one memcpy and one kernel copy "
                           f"of a contiguous {fmt_size(size)}.", evidence)
    facts = head + _by_bucket(terms, delta, x, base)
    decide_by = f"profiles sampled with PMU cycles (not timer ticks) and more profiled runs at {fmt_size(size)}"
    grown = _grown(terms)
    if not grown:  # the sampling rule of Q1's balance: a difference within its error places nothing
        evidence["named"] = []
        return Explanation("per_message_gap", "unplaced", f"{facts} {_unplaced(every, terms, gap)} What would "
                           f"place it: {decide_by}.", evidence, decide_by=decide_by)
    named = _named(terms, grown)
    said, verdict = _gap_said(terms, named, grown, gap)
    evidence["named"] = named
    evidence["largest_increase_share"] = sum(merged[b] for b in named) / gap
    threads = int(rx["threads"].iloc[0])
    switches = _switches_per_message(measured, (x, base), size, threads) if measured is not None else {}
    if switches:
        evidence["context_switches_per_message"] = switches
    return hypothesis("per_message_gap", verdict, f"{said}.{_mechanism(named, grown, x, base, size, switches)}",
                      decide_by, evidence, facts=facts)


def _gap_terms(every: dict, rx: pd.DataFrame, rb: pd.DataFrame) -> dict:
    """{term: CostDifference} of a per-message gap: every busy bucket but the two copies, and the copies as one
    net term (COPY_NET: the kernel copy that grew less the memcpy that went; two figures for one gap read as a
    contradiction), its range from the two copies' joint share."""
    terms = {b: d for b, d in every.items() if b not in COPIES}
    terms[COPY_NET] = cost_difference(rx, rb, "srv", COPIES, "message")
    return terms


def _grown(terms: dict) -> list[str]:
    """The terms whose cost per message rose beyond both sampling intervals (CostDifference.material, as Q1's
    balance names them), largest first: the only ones a sentence may say grow."""
    return sorted((b for b, d in terms.items() if d.material and d.delta > 0), key=lambda b: -terms[b].delta)


def _named(terms: dict, grown: list[str]) -> list[str]:
    """The largest increase and every other increase whose range reaches into its range: equal to it within
    sampling error, so none of them is 'the largest' (review-fresh5 N3)."""
    top = terms[grown[0]]
    return [b for b in grown if terms[b].high >= top.low]


def _gap_said(terms: dict, named: list[str], grown: list[str], gap: float) -> tuple[str, str]:
    """(the claim, its verdict): one term said as most of the gap (over half) or the largest increase beyond
    sampling error (the only one, where it is); two or more equal within sampling error said together, never one
    of them as the largest."""
    if len(named) == 1:
        top = named[0]
        part = share_of(terms[top].delta, gap)
        which = "the only increase" if len(grown) == 1 else "the largest increase"
        return ((f"{part} of the gap comes from {top.replace('_', ' ')} ({fmt_num(terms[top].delta)} µs per message)"
                 if part.startswith("most") else f"{which} per message beyond its sampling error is "
                 f"{top.replace('_', ' ')} ({fmt_num(terms[top].delta)} µs, {part} of the gap)"),
                "copy" if top == COPY_NET else top)
    listed = and_list([f"{b.replace('_', ' ')} ({terms[b].delta:+.3f} µs)" for b in named])
    together = sum(terms[b].delta for b in named)
    return (f"{listed} grow per message, equal within their sampling error, together {100 * together / gap:.0f}% "
            f"of the gap", "_and_".join("copy" if b == COPY_NET else b for b in named))


def _unplaced(every: dict, terms: dict, gap: float) -> str:
    """The per-message gap none of whose terms rises beyond its sampling error, said so: the two copies may
    differ apart (one grew, one went) while their net lies within its error."""
    parts = [b for b in ("kernel_copy_from_user", "user_copy") if every[b].material]
    net = terms[COPY_NET]
    if parts and not any(d.material for b, d in terms.items() if b != COPY_NET):
        apart = ", ".join(f"{COPY_WORDS[b]} {every[b].delta:+.3f}" for b in parts)
        but = "the copies" if len(parts) > 1 else f"the {COPY_WORDS[parts[0]]}"
        return (f"No bucket but {but} differs beyond its sampling error ({apart} µs; the copies' net "
                f"{net.delta:+.3f} µs lies within it): this profile does not place the {fmt_num(gap)} µs.")
    return (f"No bucket's cost per message rises beyond its sampling error: this profile does not place the "
            f"{fmt_num(gap)} µs.")


def _by_bucket(terms: dict, delta: dict, x: str, base: str) -> str:
    """' What the profile shows per message, x against base, beyond both sampling intervals: the copy ... +0.213 µs
    (+0.1 to +0.3; ...); syscall +0.114 µs (...); ...': every term whose difference is material, largest first
    (the facts a hypothesis rests on); '' where none is."""
    shown = sorted((b for b, d in terms.items() if d.material), key=lambda b: -terms[b].delta)
    if not shown:
        return ""

    def one(b: str) -> str:
        d = terms[b]
        text = f"{b.replace('_', ' ')} {d.delta:+.3f} µs ({d.low:+.3f} to {d.high:+.3f}"
        if b == COPY_NET:
            text += (f"; kernel copy from user {delta['kernel_copy_from_user']:+.3f}, user-space copy "
                     f"{delta['user_copy']:+.3f}")
        return text + ")"

    return (f" What the profile shows per message, {name(x)} against {name(base)}, beyond both sampling intervals: "
            + "; ".join(one(b) for b in shown) + "; every other bucket within its sampling error.")


COPY_NET = "the copy, net of the memcpy removed"
# the mechanisms the profile can offer for the bucket that grew most; any other is said unexplained
UNEXPLAINED = {"scheduling": "more wake-ups per message or longer ones (a timer-tick profile does not tell them "
                             "apart): both paths' context switches per message in the measured runs would tell"}


SIDES = {"srv": "sender", "cli": "receiver"}


def _switches_per_message(rows: pd.DataFrame, impls: tuple[str, str], size: int, threads: int) -> dict:
    """{side: {impl: context switches per message}}, the means of the throughput runs of each impl at size and
    threads; a side is left out where either impl lacks it (no counters)."""
    if "messages" not in rows:
        return {}
    tp = throughput_rows(rows)
    out = {}
    for side in SIDES:
        col = f"{side}_context_switches"
        if col not in tp:
            continue
        per = {}
        for impl in impls:
            at = tp[(tp["impl"] == impl) & (tp["msg_size"] == size) & (tp["threads"] == threads)]
            msgs = pd.to_numeric(at["messages"], errors="coerce")
            per[impl] = float((pd.to_numeric(at[col], errors="coerce") / msgs.where(msgs > 0)).mean())
        if all(v == v for v in per.values()):
            out[side] = per | _switches_ratio(tp, col, impls, size, threads)
    return out


def _switches_ratio(tp: pd.DataFrame, col: str, impls: tuple[str, str], size: int, threads: int) -> dict:
    """{'ratio_interval': [ratio, low, high, passes]} of patterns.switches_change; {} without one."""
    d = switches_change(tp, col, impls, size, threads)
    return {"ratio_interval": [d.ratio, d.low, d.high, d.n_x]} if d is not None else {}


def _switches_said(switches: dict, x: str, base: str) -> str:
    """' Context switches per message in the measured runs: the receiver's 0.174 (A2) against 0.119 (A1), +47%;
    the sender's ...: A2's receiver sleeps more often, and the sender's CPU pays the extra wake-ups (the
    delivery path wakes the receiver).' A side that switches CLEAR_GAP more often is named; else none does, and
    longer wake-ups, which counts do not show, remain the hypothesis."""
    listed, more, decided = [], [], set()
    for side, per in switches.items():
        a, b = per[x], per[base]
        change = f", {100 * (a / b - 1):+.0f}%" if b > 0 else ""
        ratio = per.get("ratio_interval")
        if ratio:  # paired over the passes: the means' difference said with whether the passes decide it
            r, low, high, n = ratio
            change = (f", {fmt_num(r)}× (95% interval {fmt_num(low)}–{fmt_num(high)} over {n} passes: "
                      + ("higher" if low > 1 else "lower" if high < 1 else "undecided") + ")")
            if low > 1:
                decided.add(SIDES[side])
        listed.append(f"the {SIDES[side]}'s {fmt_num(a)} ({name(x)}) against {fmt_num(b)} ({name(base)}){change}")
        if a > b * (1 + CLEAR_GAP):
            more.append(SIDES[side])
    said = " Context switches per message in the measured runs (same cell): " + "; ".join(listed)
    if "receiver" in more:
        # a difference of means the passes do not decide is said as measured, its cause only as a condition
        sleeps = (f": {name(x)}'s receiver sleeps more often, and each wake-up is paid" if "receiver" in decided else
                  f": {name(x)}'s receiver switched {fmt_num(switches['cli'][x])} times per message against "
                  f"{fmt_num(switches['cli'][base])} in these runs, a difference the passes do not decide; if it "
                  "does sleep more often, each wake-up is paid")
        return (said + sleeps + " on the sender's CPU (the delivery path wakes the receiver): more wake-ups per "
                "message, not shown to be longer ones (a timer-tick profile does not tell).")
    if more:
        if more[0] not in decided:
            return (said + f": {name(x)}'s {more[0]} switched more often in these runs, a difference the passes do "
                    "not decide; its scheduling time counts its switches.")
        return said + f": {name(x)}'s {more[0]} is switched out more often, which its scheduling time counts."
    return (said + ": neither side switches more often, so what grows is the cost of each switch or wake-up (a "
            "timer-tick profile does not tell them apart).")


def _mechanism(named: list[str], grown: list[str], x: str, base: str, size: int, switches: dict | None = None) -> str:
    """The mechanism offered for the terms named as the largest increase, only one that explains them: the
    gather's for the copy and the system call; for scheduling the measured context switches per message where
    there are some; else the term said unexplained (with what would tell), and the gather then offered for the
    copy and the system call only where both grew beyond their sampling error (review M4, review-fresh5 N3)."""
    gather = _gather_mechanism(grown, x, size)
    others = [b for b in named if b not in GATHERED]
    if not others:
        return gather
    said = ""
    for b in others:
        if b == "scheduling" and switches:
            said += _switches_said(switches, x, base)
        else:
            said += f" What makes {b.replace('_', ' ')} grow is unexplained by this profile"
            said += f": {UNEXPLAINED[b]}." if b in UNEXPLAINED else "."
    return said + (f" For the copy and the system call, which grew too: t{gather.strip()[1:]}" if gather else "")


COPY_WORDS = {"kernel_copy_from_user": "kernel copy from user", "user_copy": "user-space copy"}
GATHERED = (COPY_NET, "syscall")  # the terms the gather over the iovec explains


def _gather_mechanism(grown: list[str], x: str, size: int) -> str:
    """The OS mechanism the one-copy path's gather suggests, where the copy and the system call both grew beyond
    their sampling error (a hypothesis: a timer-tick profile does not separate the steps of one sendmsg)."""
    if x != ONE_COPY or not all(b in grown for b in GATHERED):
        return ""
    return f" T{_gather_sentence(size)}"


def _gather_sentence(size: int) -> str:
    """The gather mechanism from its second letter on ('he gather over ...'): the first is T or t by where it stands."""
    return (f"he gather over 8 iovec segments of about {fmt_size(max(size // 8, 1))} each is one copy step per "
            "segment (copy_from_iter walks the iovec), and sendmsg imports and checks that iovec on every call where "
            "send takes one buffer: both grow per message, not per byte.")


def says_gather(e: Explanation) -> bool:
    """Whether a per_message_gap explanation offers the gather mechanism (with what would decide it)."""
    size = (e.evidence or {}).get("msg_size")
    return size is not None and f"{_gather_sentence(size)} What would decide it: {e.decide_by}." in e.text


def gather_referred(text: str, e: Explanation, where: str) -> str:
    """text (e's, or one that holds it) with the gather mechanism and what would decide it said by reference to
    where they were said in full ('in Q4', 'at 64 B above'; review-fresh3 F6: about 60 words said once): the size's segments kept."""
    if not says_gather(e):
        return text
    size = e.evidence["msg_size"]
    return text.replace(f"{_gather_sentence(size)} What would decide it: {e.decide_by}.",
                        f"he gather over 8 iovec segments of about {fmt_size(max(size // 8, 1))} each grows per "
                        f"message, not per byte: the same hypothesis as {where}, with what would decide it there.")


# ------------------------------------------------------------------------------------------------
# one size: why a path is slower there, from that size's own evidence

WAITING = ("idle", "scheduling")
ZC_WORK = tuple(ZC_COSTS)
COPIES = ("user_copy", "kernel_copy_from_user")


@dataclass
class Factors:
    """A loss against the baseline in one cell split in its two factors (throughput is the sender's busy
    share over its CPU per byte): the CPU per byte as the Study decides it (low/high its 95% interval,
    NaN when only means were there), and the time the sender does not run, the remainder."""

    cost: float
    low: float
    high: float
    verdict: str        # the cost's decision ("win": decided higher, ...), "" from means
    idle: float
    text: str
    base_busy: float = math.nan  # the baseline sender's busy share in the same cell (Q1's per-size table)

    def stands(self, which: str) -> bool:
        """Whether one factor stands out: above 1 and the other by CLEAR_GAP, the cost by its interval's
        near end where the Study decided it (a factor inside its interval is no larger factor). A cost
        decided higher stands out too where the remainder is no factor (within CLEAR_GAP of 1: the sender
        runs about as long as the baseline's), however small the cost: what is decided is the loss's cause."""
        if which == "cost":
            near = self.low if self.low == self.low else self.cost
            if self.verdict == "win" and near > 1 and self.idle <= 1 + CLEAR_GAP and near > self.idle:
                return True  # decided higher while the sender runs about as long as the baseline's: the one factor
            return near > 1 + CLEAR_GAP and near > self.idle * (1 + CLEAR_GAP)
        far = self.high if self.high == self.high else self.cost
        return self.idle > 1 + CLEAR_GAP and self.idle > far * (1 + CLEAR_GAP)

    def record(self, evidence: dict) -> str:
        """Into a rule's evidence (Q1's per-size table reads it); its text."""
        evidence.update(cost_vs_base=self.cost, cost_interval=[self.low, self.high], cost_decision=self.verdict,
                        busy_factor_vs_base=self.idle, base_busy=self.base_busy)
        return self.text

    def cost_text(self) -> str:
        if self.low != self.low:
            return f"{self.cost:.2f}x"
        said = {"win": "decided higher", "loss": "decided lower", "equivalent": "equivalent"}.get(self.verdict,
                                                                                               "undecided")
        return f"{self.cost:.2f}x (95% interval {fmt_num(self.low)}–{fmt_num(self.high)}: {said})"


def _against_base(tp: pd.DataFrame, at: pd.DataFrame, impl: str, size: int, threads: int, cost=None,
                  loss=None) -> Factors | None:
    """impl's loss against the baseline in one cell, in its two factors (Factors); None when either is not
    measured. cost: the Study's decision of the sender's CPU per byte in that cell, loss: of the throughput
    (both Decisions); without them, the means of the cell's runs."""
    base_at = tp[(tp["impl"] == BASE) & (tp["msg_size"] == size) & (tp["threads"] == threads)]
    srv, base_busy = mean_of(at, "srv_cpu_busy"), mean_of(base_at, "srv_cpu_busy")
    if cost is not None and cost.ratio == cost.ratio:
        ratio, low, high, verdict = cost.ratio, cost.low, cost.high, str(cost.decision)
    else:
        ratio, low, high, verdict = (mean_of(at, "srv_cpu_ns_per_byte") / mean_of(base_at, "srv_cpu_ns_per_byte"),
                                     math.nan, math.nan, "")
    # the remainder of the loss: what the CPU per byte does not account for
    idle = (1 / loss.ratio / ratio if loss is not None and loss.ratio == loss.ratio and loss.ratio > 0 else
            base_busy / srv if srv == srv and srv > 0 else math.nan)
    if impl == BASE or ratio != ratio or idle != idle:
        return None
    f = Factors(ratio, low, high, verdict, idle, "")
    runs = f"it runs {pct(srv)} of the window against {pct(base_busy)}"
    if loss is not None and loss.ratio == loss.ratio and loss.ratio > 0:
        # the remainder from the decisions is a residual (task-clock CPU per byte against the throughput), not
        # the busy shares' ratio: both are said, so each recomputes from what it cites
        busy_ratio = (f" ({100 * base_busy:.1f}% ÷ {100 * srv:.1f}% = {base_busy / srv:.2f})"
                      if srv == srv and srv > 0 and base_busy == base_busy else "")
        rest = (f"{runs}{busy_ratio}; the residual, the part of the loss its CPU per byte does not carry (1 ÷ the "
                f"throughput ratio {loss.ratio:.3g} ÷ {ratio:.2f}), is a factor of {idle:.2f}"
                + _residual_split(idle, base_busy / srv if srv == srv and srv > 0 else math.nan) + ".")
    else:
        rest = f"{runs}: the time it does not run is a factor of {idle:.2f}."
    f.text = (f" Against {name(BASE)} in the same cell (throughput is the sender's busy share over its CPU per byte): "
              f"its sender's CPU per byte is {f.cost_text()} {name(BASE)}'s, and {rest}")
    f.base_busy = base_busy
    return f


def _residual_split(residual: float, busy_ratio: float) -> str:
    """The residual mixes two bases (CPU per byte by task-clock, the throughput by the CPU's busy share):
    beyond the busy shares' ratio, the rest is the CPU time on the sender's CPU that task-clock does not
    charge to the sender's task (softirq work, wake-ups done there). '' when the two agree within 5%."""
    if not (busy_ratio == busy_ratio and busy_ratio > 0) or abs(residual / busy_ratio - 1) < 0.05:
        return ""
    return (f": the busy shares' {busy_ratio:.2f}, times {residual / busy_ratio:.2f} for the sender CPU's time that "
            "task-clock does not charge to the sender's task (softirq work and wake-ups run there)")


PER_MESSAGE = {"zerocopy_pin": "pinning", "deferred_copy": "the deferred copy", "scheduling": "scheduling"}


def _per_message(rows: pd.DataFrame, tp: pd.DataFrame, impl: str, size: int, threads: int, evidence: dict) -> str:
    """' Per message: pinning 1.95 µs, the deferred copy 0.58 µs and scheduling 2.40 µs of its sender's CPU,
    against 1.20 µs for A1's whole send.' (the zero-copy path: what a fixed cost per message weighs against
    the baseline's send; bucket_cost's basis, the measured points' CPU per message)."""
    if impl != ZERO_COPY:
        return ""
    costs = {b: bucket_cost(rows, "srv", b, "message") for b in PER_MESSAGE}
    base_at = tp[(tp["impl"] == BASE) & (tp["msg_size"] == size) & (tp["threads"] == threads)]
    whole = point_cpu(base_at, "srv", "message", rows["profile_mode"].iloc[0] if "profile_mode" in rows else None)
    if any(v != v for v in costs.values()):
        return ""
    evidence.update(us_per_message={b: v for b, v in costs.items()}, base_send_us_per_message=whole)
    said = [f"{PER_MESSAGE[b]} {fmt_num(v)} µs" for b, v in costs.items()]
    text = f" Per message: {', '.join(said[:-1])} and {said[-1]} of its sender's CPU"
    return text + (f", against {fmt_num(whole)} µs for {name(BASE)}'s whole send." if whole == whole else ".")


# a wait function named as what the sender waits on only where it holds most of its scheduler samples
MOST = 0.5


def _sender_stacks(rows: pd.DataFrame, results_dir) -> dict[str, int]:
    """The profiled rows' sender folded stacks, summed ({} without a profiles folder)."""
    folder = Path(results_dir) / "profiles" if results_dir else None
    if folder is None or not folder.is_dir() or "point_id" not in rows:
        return {}
    return stacks.folded_counts(folder, rows["point_id"].dropna(), "srv")


def _dominant(counter, total: int):
    """(the entry, its count) holding more than MOST of total samples beyond the sampling error (the
    Wilson interval's low end, as for the deferred copy's site), or None: 1 sample of 1 names nothing."""
    if not counter or total <= 0:
        return None
    top, n = counter.most_common(1)[0]
    return (top, n) if wilson(n / total, total)[0] > MOST else None


def _waits(counts: dict[str, int], impl: str, evidence: dict) -> str:
    """' Of its sender program's 45 samples in the scheduler, 41 sleep beneath sk_stream_wait_memory: hypothesis:
    it waits for send-buffer space.' where one wait function holds most of them (the folded stacks' counts)."""
    try:
        comms = {registry.get(impl).process[:COMM_LEN]}
    except (KeyError, CopylabError):
        return ""
    waits, total = stacks.program_waits(counts, comms)
    found = _dominant(waits, total)
    if found is None:
        return ""
    top, n = found
    evidence.update(sender_waits=dict(waits), sender_scheduler_samples=total)
    # what the function is for is a fact of the kernel's source, not a hypothesis (review-fresh3 L2)
    return f" Of its sender program's {total} samples in the scheduler, {n} sleep beneath {top}, waiting for " \
           f"{stacks.WAITS[top]}."


def _scheduling(counts: dict[str, int], evidence: dict) -> str:
    """' Of its sender CPU's 245 samples in scheduling, 154 sit beneath sock_def_readable: waking the receiving
    thread as data reach its socket.' where one function holds most of them (the folded stacks' counts)."""
    parts, total = stacks.scheduling_parts(counts)
    found = _dominant(parts, total)
    if found is None:
        return ""
    top, n = found
    # the functions under its own key: sender_scheduling is the bucket's share (Q1's table reads it)
    evidence.update(sender_scheduling_functions=dict(parts), sender_scheduling_samples=total,
                    sender_scheduling_top=top)
    return f" Of its sender CPU's {total} samples in scheduling, {n} sit beneath {top}: {stacks.what_beneath(top)}."


# what the scheduling bucket holds (profile/rules.py's "scheduling"), said where a text names the bucket
SCHEDULING_WORDS = "waking the other side's thread, and this side's own sleeps and switches"


def _sender_profile(rows, tp, impl: str, size: int, threads: int, opening: str, results_dir, evidence: dict):
    """(the sender profile's waiting / zero-copy work / copies shares, its scheduling share, the facts said
    of it, and the waits its folded stacks show): the sender's shares, its costs per message on the measured
    basis, and what its stacks say of its scheduling samples and of where its program sleeps."""
    parts = {"waiting": share(rows, "srv", WAITING), "zero-copy work": share(rows, "srv", ZC_WORK),
             "copies": share(rows, "srv", COPIES)}
    idle, sched = share(rows, "srv", "idle"), share(rows, "srv", "scheduling")
    evidence["sender_shares"] = {k: v.to_dict() for k, v in parts.items()}
    evidence.update(sender_idle=idle.to_dict(), sender_scheduling=sched.to_dict())
    facts = (f"{opening}; its sender's profile ({parts['waiting'].over()}) is {idle.pct()} idle and "
             f"{sched.pct()} scheduling; pinning, deferred copy and completions {parts['zero-copy work'].pct()}; "
             f"copies from user memory {parts['copies'].pct()}.")
    counts = _sender_stacks(rows, results_dir)  # read once for both sentences
    waits_said = _waits(counts, impl, evidence)
    facts += _per_message(rows, tp, impl, size, threads, evidence) + _scheduling(counts, evidence) + waits_said
    return parts, sched, facts, waits_said, counts


def _balance(rows: pd.DataFrame, base_rows: pd.DataFrame, counts: dict[str, int], evidence: dict,
             margin: float = DEFAULT_MARGIN) -> tuple[str, str]:
    """(the sentence, its brief clause): per message, the baseline's two copies from user memory the
    zero-copy sender is spared, against the zero-copy work it adds (bucket_cost's measured basis); then every
    other bucket whose difference lies beyond both sampling intervals (_other_terms), largest first, and how
    much of the measured gap between the two senders' CPU per message the named terms cover, the rest said
    as the buckets within their sampling error (the brief: every one of those terms); and what the
    deferred copy's samples do (stacks.deferred_copy_parts). ('', '') without the baseline's profile at the
    size or a measured point."""
    removed = bucket_cost(base_rows, "srv", COPIES, "message")
    added = bucket_cost(rows, "srv", ZC_WORK, "message")
    column = point_cpu_column("srv", "message")
    gap = (float(pd.to_numeric(rows[column], errors="coerce").mean())
           - float(pd.to_numeric(base_rows[column], errors="coerce").mean())) if column in rows and len(base_rows) \
        else math.nan
    if any(v != v for v in (removed, added, gap)):
        return "", ""
    every = bucket_differences(rows, base_rows)
    terms = _other_terms(every)
    named = added - removed + sum(d.delta for d in terms.values())
    parts = stacks.deferred_copy_parts(counts)
    total = sum(parts.values())
    evidence["balance_us_per_message"] = {"base_copies_spared": removed, "zero_copy_work_added": added,
                                          "net": added - removed, "measured_gap": gap, "named": named,
                                          "named_terms": {b: d.delta for b, d in terms.items()},
                                          "by_bucket": {b: d.to_dict() for b, d in every.items()}}
    evidence["deferred_copy_parts"] = dict(parts)
    net = f"{added - removed:+.2f}"
    listed = ", ".join(_term(b, d, rows, evidence) for b, d in terms.items())
    text = (f" Balance per message against {name(BASE)} (the senders' CPU on the measured basis): {name(ZERO_COPY)} is "
            f"spared {name(BASE)}'s two copies from user memory, {fmt_num(removed)} µs, and adds its zero-copy work, "
            f"{fmt_num(added)} µs: {net} µs"
            + (f"; beyond both sampling intervals, largest first: {listed}" if terms else "")
            + f"; in all {named:+.2f} of the {gap:+.2f} µs measured between the two senders' CPU per message, the "
            f"other buckets, each within its sampling error, holding the remaining {gap - named:+.2f} µs.")
    apart = carry_over([rows, base_rows], margin, evidence)  # said in the sentence and in its brief (Q1 prints one)
    text += _sentence(apart)
    if total:
        said = ", ".join(f"{100 * parts[p] / total:.0f}% {p}" for p in stacks.DEFERRED_PARTS if parts[p])
        text += (f" Of the deferred copy's {total} samples: {said}. The copy it defers is made again into pages "
                 f"allocated for it, work {name(BASE)}'s copy into the socket's reused page fragments does not do.")
    # the brief: the zero-copy work's net and every material term, so its total is the named one (review-fresh5 N5:
    # two terms of four printed a coverage of 86% where the named terms cover 99%)
    return text, (f"spared {fmt_num(removed)} µs of {name(BASE)}'s copies per message, it adds {fmt_num(added)} µs of "
                  f"zero-copy work ({net} µs)" + "".join(f", {_label(b)} {d.delta:+.2f}" for b, d in terms.items())
                  + f": {named:+.2f} of {gap:+.2f} µs measured" + (f" ({apart})" if apart else ""))


def bucket_differences(rx: pd.DataFrame, rb: pd.DataFrame, per: str = "message") -> dict:
    """{bucket: CostDifference} of the senders' busy buckets, rx's profiled runs against rb's."""
    return {b: cost_difference(rx, rb, "srv", b, per) for b in BUSY_BUCKETS}


def _other_terms(every: dict) -> dict:
    """The buckets besides the copies and the zero-copy work whose difference is material (beyond both
    sampling intervals: CostDifference.material), largest difference first."""
    found = {b: d for b, d in every.items() if b not in COPIES + ZC_WORK and d.material}
    return dict(sorted(found.items(), key=lambda item: -abs(item[1].delta)))


# what a bucket holds on the sender's CPU, in the balance's words (the rest by their bucket names)
SENDER_TERMS = {"tcp_send": ("TCP send", "the transmit path down to the device"),
                "tcp_receive": ("TCP receive", "receive processing run on the sender's CPU"),
                "syscall": ("system calls", "entry, exit and argument handling"),
                "other_process": ("other processes", "perf and other programs on the sender's CPU"),
                "other": ("other work", "page faults, timers, the program's own code")}


def _label(bucket: str) -> str:
    return SENDER_TERMS[bucket][0] if bucket in SENDER_TERMS else bucket.replace("_", " ")


def _term(bucket: str, d, rows: pd.DataFrame, evidence: dict) -> str:
    """'scheduling +5.74 µs (as above, mostly waking the receiving thread ...)': one named
    term of the balance with what it is on the sender's CPU."""
    what = SENDER_TERMS.get(bucket, ("", ""))[1]
    if bucket == "scheduling":
        top = evidence.get("sender_scheduling_top")
        # the function holding most of its samples was said above, with its count
        what = f"as above, mostly {stacks.what_beneath(top)}" if top else SCHEDULING_WORDS
    elif bucket == "tcp_receive" and data_path(rows) == "local":
        what = "the delivery softirq: veth delivers the data to the receiver's socket on the sender's CPU"
    return f"{_label(bucket)} {d.delta:+.2f} µs" + (f" ({what})" if what else "")


@dataclass
class Pooled:
    """A size's decisions over all thread counts against the baseline (the Study's by-size ones), with the
    families they stand or fall in: its throughput (loss, in loss_family) and its sender's CPU per byte (cost,
    in cost_family). why_at_size reads its factors from them where the profiled cell decides neither."""

    loss: object            # Decision
    cost: object            # Decision
    loss_family: object     # study.Family
    cost_family: object

    def decided(self) -> bool:
        return (self.loss is not None and self.cost is not None and str(self.loss.decision) == "loss"
                and str(self.cost.decision) != "undecided" and self.loss.ratio > 0)

    def factors(self) -> Factors:
        c = self.cost
        return Factors(c.ratio, c.low, c.high, str(c.decision), 1 / self.loss.ratio / c.ratio, "")

    def loss_words(self) -> str:
        d, fam = self.loss, self.loss_family
        return (f"{d.ratio:.3g}x {name(BASE)}'s throughput (95% interval {fmt_num(d.low)}–{fmt_num(d.high)}: decided "
                "lower" + (f" {before_correction(fam, d)}" if fam.fallen(d) else "") + ")")

    def cost_words(self) -> str:
        d = self.cost
        return (f"{d.ratio:.2f}x {name(BASE)}'s (95% interval {fmt_num(d.low)}–{fmt_num(d.high)}: "
                f"{standing_cost_words(self.cost_family, d)})")


def _busy_range(tp: pd.DataFrame, impl: str, size: int) -> str:
    """'92–99%': the range of impl's sender busy share over the thread counts at size (means of each count's runs)."""
    at = tp[(tp["impl"] == impl) & (tp["msg_size"] == size)]
    if "srv_cpu_busy" not in at or at.empty:
        return "not recorded"
    means = pd.to_numeric(at["srv_cpu_busy"], errors="coerce").groupby(at["threads"]).mean().dropna()
    if means.empty:
        return "not recorded"
    low, high = round(100 * means.min()), round(100 * means.max())
    return f"{low}%" if low == high else f"{low}–{high}%"


def _pooled_explanation(tp: pd.DataFrame, impl: str, size: int, pooled: Pooled, facts: str, evidence: dict,
                        brief) -> Explanation | None:
    """Where the profiled cell decides neither factor: the loss over all thread counts split in the same two
    factors from the size's pooled decisions, when its CPU per byte stands out there (the profile above stays
    the account of where the time goes); None otherwise."""
    if pooled is None or not pooled.decided():
        return None
    f = pooled.factors()
    if not f.stands("cost"):
        return None
    evidence["pooled"] = {"throughput": pooled.loss.to_dict(), "sender_cpu_per_byte": pooled.cost.to_dict(),
                          "rest": f.idle, "cost_stands": pooled.cost_family.stands(pooled.cost)}
    busy = f"its sender {_busy_range(tp, impl, size)} busy at every thread count ({name(BASE)}'s " \
           f"{_busy_range(tp, BASE, size)})"
    least = f", at least {f.low:.2f}x by its interval,"
    claim = (f"Over all thread counts {name(impl)} at {fmt_size(size)} is {pooled.loss_words()} and its sender's CPU "
             f"per byte {pooled.cost_words()}, {busy}: the CPU per byte carries the loss (1 ÷ {pooled.loss.ratio:.3g} "
             f"= {f.cost:.2f} × {f.idle:.2f}), the larger factor ({f.cost:.2f}x{least} against {f.idle:.2f}x for the "
             "rest), though the profiled cell alone decides neither.")
    said = brief(f"over all thread counts it is {pooled.loss_words()}, and the larger factor is its sender's CPU "
                 f"per byte, {pooled.cost_words()}, against {f.idle:.2f}x for the rest, {busy} (the profiled cell alone "
                 "decides neither)")
    if not pooled.cost_family.stands(pooled.cost):  # decided before the correction only: no fact
        return hypothesis("why_at_size", "work", claim[0].lower() + claim[1:], f"more passes of {name(impl)} and "
                          f"{name(BASE)} at {fmt_size(size)}", evidence, facts=facts)
    return Explanation("why_at_size", "work", f"{facts} {claim}", evidence, brief=said)


def why_at_size(df: pd.DataFrame, profiles: pd.DataFrame, impl: str, size: int, cost=None, loss=None,
                results_dir=None, pooled: Pooled | None = None, margin: float = DEFAULT_MARGIN) -> Explanation:
    """Why impl moves what it moves at size, from that size's evidence: its sender's busy share (the
    measured runs at the profiled thread count), and its sender profile's waiting (idle, scheduling),
    zero-copy work (pinning, deferred copy, completions) and copies. A sender well short of busy whose profile
    waits more than it works is paced by waiting; a saturated one whose largest busy part is the zero-copy work
    pays for it; else the size's decisions over all thread counts (pooled) may decide; else a hypothesis."""
    rows = point_rows(profiles, impl, size)
    threads = int(rows["threads"].iloc[0]) if len(rows) else 1
    tp = throughput_rows(df)
    at = tp[(tp["impl"] == impl) & (tp["msg_size"] == size) & (tp["threads"] == threads)]
    srv, cli = mean_of(at, "srv_cpu_busy"), mean_of(at, "cli_cpu_busy")
    who = f"{name(impl)} at {fmt_size(size)}, {plural(threads, 'thread')}"
    evidence = {"impl": impl, "msg_size": size, "threads": threads, "sender_busy": srv, "receiver_busy": cli}
    busy = (f"its sender's CPU was busy {pct(srv)} of the window, the receiver's {pct(cli)}"
            if srv == srv and cli == cli else "the CPUs' busy shares were not recorded")
    if rows.empty:
        return hypothesis("why_at_size", "unknown", f"{who}: {busy}; without a profile of this size what its "
                          "sender spends the time on cannot be told.", f"a profiled run of {name(impl)} at "
                          f"{fmt_size(size)} (grid key profile)", evidence)
    parts, sched, facts, waits_said, counts = _sender_profile(rows, tp, impl, size, threads, f"{who}: {busy}",
                                                              results_dir, evidence)
    work = parts["zero-copy work"] if impl == ZERO_COPY else parts["copies"]
    balance, balance_brief = (_balance(rows, point_rows(profiles, BASE, size), counts, evidence, margin)
                              if impl == ZERO_COPY else ("", ""))
    # the brief form: the numbers are in Q1's per-size table (sizes_table); the verdict and the waits stay

    def brief(verdict: str) -> str:
        return f"{who}: {verdict}.{waits_said}"

    factors = _against_base(tp, at, impl, size, threads, cost, loss)
    split = factors is not None
    if split:
        facts += factors.record(evidence)
    if srv == srv and cli == cli and cli >= NEAR_FULL and cli - srv >= CLEAR_GAP:
        return Explanation("why_at_size", "receiver", f"{facts} The receiver bounds it: its CPU is saturated and "
                           "the sender's is not.", evidence, brief=brief("the receiver bounds it"))
    what = "the zero-copy work" if impl == ZERO_COPY else "copying"
    waits = srv == srv and srv < NEAR_FULL - CLEAR_GAP and parts["waiting"].above(work)
    if waits and (not split or factors.stands("idle")):
        return Explanation("why_at_size", "waiting", f"{facts} Its CPU is far from busy, and the sender idles, sleeps or "
                           f"wakes the other side (idle and scheduling: {SCHEDULING_WORDS}) more than it pins or copies: "
                           "at this size what paces it is waiting to be woken (each send's completion and the "
                           "receiver's wake-ups), more than the work per byte.", evidence,
                           brief=brief("far from busy, it waits more than it works: waiting paces it"))
    if split and factors.stands("cost"):
        least = f", at least {factors.low:.2f}x by its interval," if factors.low == factors.low else ""
        return Explanation("why_at_size", "work", f"{facts} The larger factor is its CPU per byte ({factors.cost:.2f}x"
                           f"{least} against {factors.idle:.2f}x for the rest): it moves fewer bytes per CPU "
                           f"second, rather than mainly waiting; {what} is {work.pct()} of its sender's samples, and "
                           f"scheduling ({SCHEDULING_WORDS}, which its CPU time counts) {sched.pct()}.{balance}",
                           evidence, brief=brief(f"the larger factor is its CPU per byte ({factors.cost:.2f}x{least} "
                                                 f"against {factors.idle:.2f}x)" + _clause(balance_brief)))
    if not split and srv == srv and srv >= NEAR_FULL and work.above(parts["waiting"]):
        return Explanation("why_at_size", "work", f"{facts} The sender is saturated and {what} is the larger part "
                           f"of its samples: at this size it pays for that work.{balance}", evidence,
                           brief=brief(f"saturated, it pays for {what}" + _clause(balance_brief)))
    found = _pooled_explanation(tp, impl, size, pooled, facts + balance, evidence,
                                lambda verdict: brief(verdict + _clause(balance_brief)))
    return found if found is not None else _neither(impl, size, factors, evidence, facts + balance)


def _clause(text: str) -> str:
    return f": {text}" if text else ""


def _neither(impl: str, size: int, factors, evidence: dict, facts: str) -> Explanation:
    """why_at_size's hypothesis when no factor stands out (factors None: the loss was not split)."""
    split = factors is not None
    claim = (f"neither factor stands out: its CPU per byte is {factors.cost_text()} {name(BASE)}'s and the rest "
             f"of the loss a factor of {factors.idle:.2f}." if split else
             "neither waiting nor the copy work stands out beyond the intervals.")
    decide_by = (f"more passes of {name(impl)} and {name(BASE)} at {fmt_size(size)}" if split else
                 f"more profiled runs of {name(impl)} at {fmt_size(size)}")
    return hypothesis("why_at_size", "mixed", claim, decide_by, evidence, facts=facts)


# ------------------------------------------------------------------------------------------------
# Q2 without a PMU: the baseline's copy cost per byte against its working set

CACHE_GRID = "params/cache.yaml"  # the grid that places the working sets at this host's cache levels


def copy_by_working_set(profiles: pd.DataFrame, meta: dict, margin: float = DEFAULT_MARGIN) -> Explanation | None:
    """The baseline's two copies (its memcpy and the kernel's copy from user memory) in ns of CPU per byte
    at each profiled size (bucket_cost's basis), beside the working set each size cycles through and the
    cache level it fits in. From the size where that cost is lowest on (below it the cost falls with size, as
    a fixed cost per call spread over more bytes does), a cost that rises wherever the working set grows and
    stays within CLEAR_GAP where it does not follows the working set: a hypothesis, never a count. None
    with fewer than two profiled sizes or no working set recorded."""
    if "working_set_bytes" not in profiles:
        return None
    sizes = sorted(profiled_sizes(profiles, [BASE]))
    points, used = [], []
    for size in sizes:
        rows = point_rows(profiles, BASE, size)
        ws = pd.to_numeric(rows["working_set_bytes"], errors="coerce").dropna()
        cost = bucket_cost(rows, "srv", COPIES)
        if len(ws) and cost == cost:
            points.append((size, int(ws.iloc[0]), cost, share(rows, "srv", COPIES)))
            used.append(rows)
    if len(points) < 2:
        return None
    levels = cachelevels.cache_sizes(meta.get("cpu_caches"))
    where = {ws: cachelevels.residency_words(ws, levels) for _, ws, _, _ in points}
    listed = "; ".join(f"{fmt_size(size)} {fmt_num(cost)} ns/B (working set {fmt_size(ws)}"
                       + (f", {where[ws]}" if where[ws] else "") + f"; share {sh.pct()})"
                       for size, ws, cost, sh in points)
    low = min(range(len(points)), key=lambda i: points[i][2])
    tail = points[low:]
    steps = list(zip(tail, tail[1:]))
    follows = len(tail) >= 2 and any(b[1] > a[1] for a, b in steps) and all(
        (b[2] > a[2] * (1 + CLEAR_GAP)) if b[1] > a[1] else abs(b[2] - a[2]) <= CLEAR_GAP * a[2] for a, b in steps)
    evidence = {"points": [{"msg_size": size, "working_set_bytes": ws, "copy_ns_per_byte": cost,
                            "share": sh.to_dict()} for size, ws, cost, sh in points], "follows": follows}
    facts = (f"Without a PMU, the profile gives {name(BASE)}'s two copies (its memcpy and the kernel's copy from "
             f"user memory) in ns of its sender's CPU per byte, by message size: {listed}."
             + _sentence(carry_over(used, margin, evidence)))
    if not follows:
        return hypothesis("copy_by_working_set", "does_not_follow", "these costs do not follow the working set: no cache "
                          "level's residency shows in them.", f"`copylab sweep {CACHE_GRID} --report`", evidence,
                          facts=facts)
    first, last = tail[0], tail[-1]
    return hypothesis(
        "copy_by_working_set", "follows",
        (f"from {fmt_size(first[0])} on (below it the cost per byte falls with size, as a fixed cost per call does) "
         if low else "") + f"the copy's cost per byte follows the working set, not the message size: it "
        f"rises from {fmt_num(first[2])} to {fmt_num(last[2])} ns/B as the working set grows from {fmt_size(first[1])} "
        "to " + fmt_size(last[1]) + ", and stays flat where the working set does, though a larger copy would "
        "otherwise cost less per byte: the source's cache level, not the copy's length, sets its cost. Confounds: "
        "message size and working set grow together in this grid, so only the sizes with one working set separate "
        "them; the shares rest on timer ticks (wide at the small sizes) and on profiled runs set against their "
        "points in the profile section.",
        f"`copylab sweep {CACHE_GRID} --report` (one message size across working sets) or cache misses counted by "
        "a PMU", evidence, facts=facts)

