"""The words of the report's answers, kept apart from the statistics (findings.py).

Each function takes numbers already computed and returns text. The fixed explanations (why a copy
costs what it costs) are constants at the top, so the wording can change without touching a
computation.
"""

from __future__ import annotations

import math

from ..fmt import fmt_num, fmt_pct, fmt_size, impl_name, plural

# ------------------------------------------------------------------------------------------------
# fixed explanations

WHY_A2_BEATS = ("A2 hands the kernel an iovec over the 8 fields and skips the user-space "
                "serialisation memcpy that A1 performs; that copy costs time proportional to "
                "the message size, so the saving grows with size while the per-call overhead "
                "of sendmsg (walking 8 iovec entries) stays fixed.")
WHY_A2_DOES_NOT = ("The user-space memcpy that A2 removes is small next to the kernel's own copy "
                   "into socket buffers and the receiver's copy out, and for cache-resident "
                   "messages it is cheap, while sendmsg pays for walking 8 iovec entries per call.")
WHY_A3_BEATS = ("From this size MSG_ZEROCOPY's fixed costs per call (pinning the user pages, "
                "building skb fragments that reference them, reading the completion from the "
                "error queue) are spread over enough bytes to pay off.")
WHY_A3_DOES_NOT = ("MSG_ZEROCOPY pays fixed costs per call (pinning pages, reference-counted skb "
                   "fragments, error-queue notifications) and, between two namespaces on one "
                   "host, the kernel still copies on local delivery, so the copy is moved rather "
                   "than removed (the kernel documentation puts the break-even near 10 KB writes "
                   "even where the copy does disappear).")
WHY_CROSSOVER = {"a2": (WHY_A2_BEATS, WHY_A2_DOES_NOT), "a3": (WHY_A3_BEATS, WHY_A3_DOES_NOT)}

ZERO_COPY_COSTS = ("Zero-copy replaces a memcpy with page pinning, per-page reference counting in "
                   "skb fragments, and a completion that the sender must read from the error queue "
                   "before reusing the buffer (and ENOBUFS back-pressure when optmem runs out); for "
                   "small messages these fixed costs exceed the copy, and on local delivery the "
                   "copy is only moved to the receive path.")

WHY_CACHE_LEVEL = {
    "L1": ("A1's serialisation memcpy streams every message through the sender's small L1 "
           "data cache (tens of KiB per core) and evicts the working set; removing that copy "
           "removes a full pass of loads, and L1 sees those loads first. The LLC, shared and "
           "many MiB large, holds the message either way, so its misses change less."),
    "LLC": ("the messages and socket buffers exceed what the private caches hold, so the "
            "copies A2/A3 avoid were mostly LLC-missing streams to DRAM; removing a pass over "
            "the data removes those memory accesses, while L1 misses are dominated by the "
            "kernel's own copy and protocol processing that every implementation performs."),
}
HOW_TO_COUNT_CACHES = ("Re-run the sweep on a host whose PMU perf can use (bare metal, or a "
                       "VM with a virtual PMU, e.g. KVM with `-cpu host`) to answer it.")

EXPECTATIONS_CHECKED = ("throughput should not fall as messages grow (fewer calls per byte); A2, which "
                        "copies less, should not be slower than A1; more client threads should not lower "
                        "total throughput")


def unanswerable(reason: str, advice: str = "") -> str:
    return f"Cannot be answered from this sweep: {reason}." + (f" {advice}" if advice else "")


def reps_note(reps: tuple[int, int]) -> str:
    low, high = reps
    if high <= 1:
        return (" This sweep has a single repetition per point, so there is no confidence "
                "interval: a difference of a few percent may be noise.")
    span = f"{low}" if low == high else f"{low}–{high}"
    return f" Means are over {span} repetitions per point, with 95% confidence intervals in the figures."


# ------------------------------------------------------------------------------------------------
# Q4 / Q5: crossovers

def crossover_text(finding, reps: tuple[int, int]) -> str:
    """Q4/Q5 prose from findings.Crossover."""
    name = impl_name(finding.impl)
    ans, overall = finding.public, finding.by_size
    why_beats, why_not = WHY_CROSSOVER[finding.impl]
    sizes = list(overall.index)
    largest = sizes[-1]
    ratio_top = overall.loc[largest, "x"] / overall.loc[largest, "base"]
    grid = (f"grid: {len(sizes)} sizes from {fmt_size(sizes[0])} to {fmt_size(largest)}, "
            f"thread counts {', '.join(map(str, finding.threads))}")
    if ans["crossover_bytes"] is not None:
        c = ans["crossover_bytes"]
        if c == largest:
            text = (f"Averaged over thread counts, **{name} outperforms A1 only at the largest size "
                    f"in this grid, {fmt_size(c)}** ({grid}): {fmt_num(overall.loc[c, 'x'])} Gbit/s "
                    f"against A1's {fmt_num(overall.loc[c, 'base'])}, {fmt_num(ratio_top)}× A1.")
        else:
            text = (f"Averaged over thread counts, **{name} outperforms A1 from {fmt_size(c)} "
                    f"upward** and stays ahead at every larger size ({grid}). At {fmt_size(c)} "
                    f"{name} reaches {fmt_num(overall.loc[c, 'x'])} Gbit/s against A1's "
                    f"{fmt_num(overall.loc[c, 'base'])}; at {fmt_size(largest)} it is "
                    f"{fmt_num(ratio_top)}× A1.")
        # a win below the crossover that does not last: say so, the table shows it
        early = [s for s in sizes if s < c and overall.loc[s, "x"] > overall.loc[s, "base"]]
        if early:
            text += (f" It also beats A1 at {', '.join(fmt_size(s) for s in early)}, but not at "
                     "every size above, so that is not a crossover.")
        text += f" {why_beats}"
    else:
        text = (f"Averaged over thread counts, **{name} does not outperform A1 for good at any "
                f"size in this grid** ({grid}): at the largest size, {fmt_size(largest)}, it "
                f"reaches {fmt_num(overall.loc[largest, 'x'])} Gbit/s against A1's "
                f"{fmt_num(overall.loc[largest, 'base'])} ({fmt_num(ratio_top)}× A1). {why_not}")
    per = [f"{t} thread{'s' if t != '1' else ''}: "
           + (f"from {fmt_size(v)}" if v is not None else "never")
           for t, v in sorted(ans["per_threads"].items(), key=lambda kv: int(kv[0]))]
    return text + " Per thread count: " + "; ".join(per) + "." + reps_note(reps)


def significance_text(impl: str, sig: dict, comparisons: dict) -> str:
    """The confidence statement that leads Q4/Q5: a significant crossover, or why there is none."""
    name = impl_name(impl)
    reps = sig["repetitions"]
    if reps < 2:
        return (f"**With a single repetition per point no difference between {name} and A1 can be told "
                "from noise, so there is no significant crossover** (the mean-based answer below is a single "
                "sample per point; the default grid repeats each point 3 times).")
    sizes = sorted(comparisons)
    largest = sizes[-1]
    c = sig["significant_crossover_bytes"]
    tested = f"{reps} repetitions, 95% Welch interval of the difference above zero"
    if c is not None:
        at = comparisons[c]
        text = (f"**{name} beats A1 from {fmt_size(c)}** ({_ratio(at)} at {fmt_size(c)}; {tested} at "
                f"{fmt_size(c)} and every larger size")
        if c != largest:
            text += f"; at {fmt_size(largest)}: {_ratio(comparisons[largest])}"
        return text + ")."
    wins = [s for s in sizes if comparisons[s].significant_win]
    losses = [s for s in sizes if comparisons[s].significant_loss]
    if wins:
        return (f"**{name} has no significant crossover**: it beats A1 significantly at "
                f"{', '.join(fmt_size(s) for s in wins)}, but not at every larger size ({tested}).")
    text = (f"**There is no size where {name} beats A1 by more than the noise in {reps} repetitions** "
            f"(at {fmt_size(largest)}: {_ratio(comparisons[largest])})")
    if losses:
        text += f"; A1 is significantly faster at {', '.join(fmt_size(s) for s in losses)}"
    return text + "."


def _ratio(c) -> str:
    """'1.08×, 95% CI 1.03–1.13' (the interval only where it is defined)."""
    text = f"{fmt_num(c.ratio)}× A1"
    if c.ratio_low == c.ratio_low and c.ratio_high == c.ratio_high:  # not NaN
        text += f", 95% CI {fmt_num(c.ratio_low)}–{fmt_num(c.ratio_high)}"
    return text


def no_pair_reason(finding) -> str:
    return (f"no throughput-mode measurements of both {impl_name(finding.impl)} and A1 "
            f"(throughput rows exist for: {', '.join(finding.have_throughput) or 'none'})")


def zero_copy_evidence_text(zc) -> str:
    """What the COPIED share and per-side CPU say at the crossover size (or the largest): with
    local delivery the kernel copies anyway, so a win is not a copy avoided."""
    share = zc.copied_share_pct
    text = f"{fmt_pct(share)} of A3's completions were flagged SO_EE_CODE_ZEROCOPY_COPIED"
    if share >= 50:
        text += (", so on this path the kernel's copy is deferred to delivery rather than avoided: "
                 "A3 skips A1's user-space serialisation and the copy at send time, and the kernel "
                 "copies the pinned pages when the receiving socket takes them")
    else:
        text += (f"; the other {fmt_pct(100 - share)} left without a copy: the device read the pinned "
                 "user pages itself (DMA), the case MSG_ZEROCOPY exists for")
    at = zc.cpu_at_size
    if {"a1", "a3"} <= set(at.dropna().index):
        srv, cli = at["srv_cpu_ns_per_byte"], at["cli_cpu_ns_per_byte"]
        text += (f". At {fmt_size(zc.size)} the sender spends {fmt_num(srv['a3'])} ns of CPU per byte "
                 f"with A3 against {fmt_num(srv['a1'])} with A1, the receiver {fmt_num(cli['a3'])} "
                 f"against {fmt_num(cli['a1'])}")
    return text + "."


# ------------------------------------------------------------------------------------------------
# Q1

def zero_copy_share_sentence(share: float, path: str, saving_pct: float | None) -> str:
    """What the COPIED share means on this sweep's path: between namespaces every send is copied
    on delivery; between hosts the share not copied is what the NIC sent from user pages."""
    if path == "local" or (share >= 99.5 and path != "hosts"):
        return (f"Of A3's zero-copy completions, {fmt_pct(share)} carried SO_EE_CODE_ZEROCOPY_COPIED: the kernel "
                "copied the data after all, because delivery to a socket on the same host (veth between "
                "namespaces) must not leave the receiver holding references to the sender's pinned pages.")
    text = (f"Of A3's zero-copy completions, {fmt_pct(share)} carried SO_EE_CODE_ZEROCOPY_COPIED and "
            f"{fmt_pct(100 - share)} did not: ")
    if share >= 99.5:
        text += ("between these two hosts the kernel still copied every send, so the device cannot "
                 "send from user pages (no scatter-gather or checksum offload on the sending NIC, or "
                 "a virtual or loopback device in the path: see the hosts' offloads in the system table).")
    else:
        text += ("those sends left the sender without a copy, the NIC reading the pinned user pages "
                 "by DMA")
        text += (", and a copied completion is the kernel falling back (a device or route that "
                 "cannot take user pages, or sends the kernel chose to copy)." if share >= 0.5 else ".")
    if saving_pct is not None:
        text += (f" At the largest size the sender spends {fmt_pct(abs(saving_pct))} "
                 f"{'less' if saving_pct >= 0 else 'more'} CPU per byte with A3 than with A1.")
    return text


def q1_text(f: dict, best) -> str:
    parts = []
    not_best = f["a3_not_best_sizes"]
    if len(not_best) == len(best):
        parts.append(f"A3 is the fastest implementation at none of the {len(best)} message sizes "
                     "(averaged over thread counts).")
    elif not_best:
        parts.append(f"A3 is not the fastest implementation at {len(not_best)} of {len(best)} "
                     f"message sizes ({', '.join(fmt_size(s) for s in not_best)}; averaged over "
                     "thread counts).")
    else:
        parts.append(f"In this sweep A3 is the fastest implementation at every one of the "
                     f"{len(best)} message sizes (averaged over thread counts); the reasons below "
                     "explain why that does not hold in general.")
    if f["break_even_bytes"] is not None:
        parts.append(f"It overtakes A1 for good only from {fmt_size(f['break_even_bytes'])} "
                     "(Q5): below that, its fixed costs per send exceed the copy it saves.")
    else:
        parts.append("It never overtakes A1 for good in this grid (Q5).")
    share = f["zc_copied_share_pct"]
    if share is not None:
        parts.append(zero_copy_share_sentence(share, f.get("path", "local"),
                                              f.get("sender_cpu_saving_vs_a1_pct_at_largest_size")))
    else:
        parts.append("The zero-copy completion counters were not recorded in this sweep, so the "
                     "share the kernel copied after all cannot be stated.")
    cpu = f.get("cpu_ns_per_byte_at_largest_size")
    if cpu:
        srv, cli = cpu["sender"], cpu["receiver"]
        sender = (f"At {fmt_size(cpu['msg_size'])} the sender spends {fmt_num(srv['a3'])} ns of CPU per "
                  f"byte with A3 against {fmt_num(srv['a2'])} ns with A2, and the receiver "
                  f"{fmt_num(cli['a3'])} against {fmt_num(cli['a2'])} ns")
        if srv["a3"] < srv["a2"] and cli["a3"] >= cli["a2"]:
            sender += ": the sender saves, the receiver pays for the deferred copy."
        elif srv["a3"] >= srv["a2"]:
            sender += (": zero-copy does not even save sender CPU here — pinning, "
                       "completions and back-pressure cost more than the copy it skips.")
        else:
            sender += "."
        parts.append(sender)
    parts.append(ZERO_COPY_COSTS)
    return " ".join(parts)


# ------------------------------------------------------------------------------------------------
# Q2

def q2_text(f: dict, outcome: str) -> str:
    if outcome == "unmeasured":
        return unanswerable(f["reason"], HOW_TO_COUNT_CACHES)
    if outcome == "no_pairs":
        return unanswerable(f["reason"])
    detail = _reduction_detail(f)
    if outcome == "no_reduction":
        return (f"Neither cache level shows a reduction: A2 and A3 incur as many or more "
                f"misses per byte than A1 (reduction relative to A1, averaged over sizes "
                f"and thread counts: {detail}). Removing the user-space copy did not cut "
                "miss traffic measurably here; the kernel's copies into and out of the "
                "socket buffers dominate.")
    best = f["answer"]
    other = "LLC" if best == "L1" else "L1"
    mean_red = f["mean_reduction_pct"]
    return (f"**{best}** shows the larger reduction: relative to A1, misses per byte fall "
            f"by {fmt_pct(mean_red[best])} at {best} against {fmt_pct(mean_red[other])} at "
            f"{other} (averaged over sizes and thread counts; {detail}). This is because "
            f"{WHY_CACHE_LEVEL[best]}")


def _reduction_detail(f: dict) -> str:
    return "; ".join(f"{lvl}: " + ", ".join(f"{impl_name(i)} {fmt_pct(v)}" for i, v in d.items())
                     for lvl, d in f["reduction_pct"].items())


def q2_no_reduction_reason(f: dict) -> str:
    return f"neither level shows fewer misses per byte for A2/A3 than for A1 (mean change {_reduction_detail(f)})"


# ------------------------------------------------------------------------------------------------
# Q3

def q3_text(f: dict, cache_measured: bool) -> str:
    lo, hi = f["threads"][0], f["threads"][-1]
    sentences = []
    for impl, entry in f["per_impl"].items():
        s = (f"{impl_name(impl)} moves {fmt_num(entry['throughput_ratio_hi_lo'])}× as much data at "
             f"{hi} threads as at {lo} and peaks at {plural(entry['peak_threads'], 'thread')}")
        extra = [f"{label} ×{fmt_num(entry[f'{m}_ratio_hi_lo'])}" for m, label in (
            ("l1_misses_per_byte", "L1 misses/byte"), ("llc_misses_per_byte", "LLC misses/byte"),
            ("context_switches_per_mb", "context switches/MB"),
            ("srv_cpu_ns_per_byte", "sender CPU ns/byte")) if f"{m}_ratio_hi_lo" in entry]
        if extra:
            s += f" ({hi} vs {lo} threads: " + ", ".join(extra) + ")"
        sentences.append(s)
    cores = f["cores"]
    # every client thread has a server thread: 2 x threads runnable threads share the cores
    if not cores:
        core_txt = "The host's core count is unknown (no meta.json), so oversubscription cannot be located."
    else:
        cores = int(cores)
        over = [t for t in f["threads"] if 2 * t > cores]
        core_txt = (f"This host has {cores} cores and each connection has a sending and a "
                    "receiving thread, so "
                    + (f"from {int(over[0])} client threads on ({2 * int(over[0])} busy threads) "
                       if over else "even the largest thread count does not ")
                    + ("the threads time-share the cores: each switch brings another connection's buffers "
                       "and socket state into the same private L1/L2, evicting the previous one's, "
                       "and all of them compete for the shared LLC and memory bandwidth."
                       if over else "oversubscribe the cores; contention is then mostly for the "
                       "shared LLC and memory bandwidth."))
    cache_txt = ("" if cache_measured else
                 " Cache misses were not measured on this host (see Q2), so contention shows "
                 "here only indirectly, through context switches and CPU time per byte.")
    return (f"Averaged over message sizes, from {lo} to {hi} client threads: "
            + "; ".join(sentences) + ". " + core_txt + cache_txt +
            " Throughput that stops growing while misses or context switches per byte "
            "rise is the signature of contention: more threads add work for the same "
            "caches and cores rather than more parallelism.")


# ------------------------------------------------------------------------------------------------
# Q6

def q6_no_violation_reason(apparent: int, reps: tuple[int, int]) -> str:
    if not apparent:
        return f"no measurement contradicted the expectations checked ({EXPECTATIONS_CHECKED})"
    if reps[1] < 2:
        return (f"{apparent} apparent expectation violation(s), none of which can be told from noise with a "
                "single repetition per point")
    return (f"{apparent} apparent expectation violation(s), none significant in {reps[0]} repetitions "
            f"(95% Welch interval of the shortfall includes zero)")


def q6_no_violation_text(apparent: int, reps: tuple[int, int]) -> str:
    if not apparent:
        return f"No result in this sweep contradicts the expectations checked ({EXPECTATIONS_CHECKED})."
    return (f"No result contradicts the expectations checked ({EXPECTATIONS_CHECKED}) by more than the "
            f"noise: {q6_no_violation_reason(apparent, reps)}.")


def q6_text(a: dict, found: int, cores, reps: tuple[int, int]) -> str:
    pct = fmt_pct(100 * a["magnitude"])
    if a["kind"] == "throughput_falls_with_size":
        text = (f"{impl_name(a['impl'])} at {plural(a['threads'], 'thread')} is {pct} slower at "
                f"{fmt_size(a['to_size'])} ({fmt_num(a['to'])} Gbit/s) than at "
                f"{fmt_size(a['from_size'])} ({fmt_num(a['from'])} Gbit/s), although larger "
                "messages need fewer system calls per byte. A likely cause is the cache "
                "hierarchy: once the message (8 fields plus the kernel's copy in socket buffers) "
                "no longer fits the private L2, every copy streams from the shared LLC or DRAM; "
                "a send larger than the socket's send buffer (tcp_wmem) also blocks mid-message "
                "and adds wake-ups.")
        if a["impl"] == "a3":
            text += (" For A3, larger sends also pin more pages and hit the optmem limit for "
                     "outstanding notifications sooner (ENOBUFS back-pressure).")
    elif a["kind"] == "one_copy_slower":
        text = (f"A2 is {pct} slower than A1 at {fmt_size(a['size'])} with "
                f"{plural(a['threads'], 'thread')} ({fmt_num(a['a2'])} vs {fmt_num(a['a1'])} Gbit/s), although it "
                "skips a user-space copy. With an iovec the kernel copies from 8 separately "
                "allocated fields instead of one contiguous buffer: 8 shorter copies, more "
                "fragment boundaries in the socket buffers and more TLB/cache lines touched, "
                "while A1's memcpy of a small, cache-hot message costs little.")
    else:
        busy = 2 * a["max_threads"]  # a sending and a receiving thread per connection
        text = (f"{impl_name(a['impl'])} moves {pct} less data with {a['max_threads']} threads "
                f"({fmt_num(a['at_max'])} Gbit/s) than at its peak of {a['peak_threads']} "
                f"thread{'s' if a['peak_threads'] != 1 else ''} ({fmt_num(a['peak'])} Gbit/s). ")
        if cores and busy > int(cores):
            text += (f"With {busy} busy threads (a sender and a receiver per connection) on "
                     f"{cores} cores, the scheduler time-slices them: context switches, cold "
                     "caches after each switch and lock contention on shared kernel structures "
                     "cost more than the extra parallelism gains.")
        else:
            text += ("The cores are not oversubscribed at that thread count, so the loss points "
                     "at shared resources: the LLC and memory bandwidth the connections compete "
                     "for, and locks in the network stack.")
    return (text + f" It is the largest of {found} significant expectation violations (each tested with "
            f"Welch's t over {reps[0]} repetitions); the checks: {EXPECTATIONS_CHECKED}." + reps_note(reps))


def violation_row(a: dict) -> tuple[str, str, str]:
    """(where, expected, measured) of one expectation violation, for the Q6 evidence table."""
    if a["kind"] == "throughput_falls_with_size":
        return (f"{impl_name(a['impl'])}, {a['threads']} thr: {fmt_size(a['from_size'])} to {fmt_size(a['to_size'])}",
                "throughput grows with size", f"{fmt_num(a['from'])} to {fmt_num(a['to'])} Gbit/s")
    if a["kind"] == "one_copy_slower":
        return (f"{fmt_size(a['size'])}, {a['threads']} thr", "A2 >= A1",
                f"A2 {fmt_num(a['a2'])} vs A1 {fmt_num(a['a1'])} Gbit/s")
    return (f"{impl_name(a['impl'])}: {a['peak_threads']} to {a['max_threads']} thr",
            "more threads, no less throughput", f"{fmt_num(a['peak'])} to {fmt_num(a['at_max'])} Gbit/s")


# ------------------------------------------------------------------------------------------------
# the copy A2 removes

def copy_evidence_text(e: dict) -> str:
    if not e["have_a1_a2"]:
        return "_This sweep lacks throughput-mode runs of A1 or A2, so the removed copy cannot be shown._"
    parts = []
    share = e.get("user_copy_share")
    if share is not None:
        parts.append(f"Bytes copied in user space per message, as a multiple of the message size "
                     f"(mean over all sizes and thread counts): A1 {fmt_num(share['a1'])}, "
                     f"A2 {fmt_num(share['a2'])}.")
    else:
        parts.append("The servers' user-space copy counts (user_copy_bytes) are not in this "
                     "results.csv, so the removed copy is shown only through CPU cost.")
    if e.get("cost_metric"):
        at_top = e["cost_at_largest"]
        unit = "cycles" if "cycles" in e["cost_metric"] else "ns of CPU time"
        change = 100 * (1 - at_top["a2"] / at_top["a1"])
        direction = f"{fmt_pct(change)} less" if change >= 0 else f"{fmt_pct(-change)} more"
        parts.append(f"At the largest size, {fmt_size(e['largest'])}, the sender spends "
                     f"{fmt_num(at_top['a1'])} {unit} per byte in A1 and "
                     f"{fmt_num(at_top['a2'])} in A2: {direction} for A2, the user-space "
                     "memcpy and its effect on the caches.")
    else:
        parts.append("Sender-side CPU counters were not recorded, so the cost of the removed copy "
                     "cannot be stated.")
    return " ".join(parts)


def q_label(key: str) -> str:
    return key.split("_")[0].upper()


def is_nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))
