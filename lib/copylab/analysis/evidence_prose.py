"""The words of the report's evidence sections: where the copies happen (the profiles) and the
harness (peers, the receive strategy, small messages). Like prose.py: numbers in, text out."""

from __future__ import annotations

from ..fmt import fmt_num, fmt_size, impl_name, plural

# ------------------------------------------------------------------------------------------------
# profiles: where the copies happen, measured

def _pct(share) -> str:
    return "n/a" if share is None or share != share else f"{100 * share:.1f}%"


SEEN, ABSENT = 0.01, 0.005  # a share that shows a copy is there, and one that shows it is not


def profile_sentences(p: dict) -> dict[str, str]:
    """Sentences citing the profile finding (analysis.profiles.profile_finding), keyed by what they
    support: "a1_a2" (the copy A2 removes), "a3" (the deferred copy), "receiver", "bottleneck"."""
    impls, size = p["impls"], fmt_size(p["msg_size"])
    where = f"at {size}, {plural(p['threads'], 'thread')}"
    out = {}
    a1, a2, a3 = impls.get("a1"), impls.get("a2"), impls.get("a3")
    if a1 and a2:
        u1, u2 = a1["sender"]["user_copy"], a2["sender"]["user_copy"]
        k1, k2 = a1["sender"]["kernel_copy_from_user"], a2["sender"]["kernel_copy_from_user"]
        text = (f"Profiled {where}: A1's user-space copy (memcpy in a1_server) is {_pct(u1)} of the sender's "
                f"samples and A2's {_pct(u2)}; the kernel's copy from user memory is {_pct(k1)} in A1 and "
                f"{_pct(k2)} in A2.")
        if u1 >= SEEN and u2 <= ABSENT:
            text += " The serialisation copy is gone in A2; the kernel's copy remains."
        else:
            text += " At this point the profile does not separate the two the way the design predicts."
        out["a1_a2"] = text
    if a3:
        pin, k3 = a3["sender"]["zerocopy_pin"], a3["sender"]["kernel_copy_from_user"]
        d_srv, d_cli = a3["sender"]["deferred_copy"], a3["receiver"]["deferred_copy"]
        text = (f"Profiled {where}: A3 spends {_pct(pin)} of the sender's samples pinning pages and {_pct(k3)} "
                f"copying from user memory; its deferred copy (skb_copy_ubufs) is {_pct(d_srv)} of the sender's "
                f"samples and {_pct(d_cli)} of the receiver's.")
        if max(d_srv, d_cli) >= SEEN and k3 <= ABSENT:
            landed = [who for who, d in (("sender", d_srv), ("receiver", d_cli)) if d >= SEEN]
            text += (" The send-time copy is replaced by pinning, and the copy happens at delivery to the local "
                     f"socket, in the softirq of the CPU that delivers the packet: here on the {' and the '.join(landed)}"
                     f" CPU{'s' if len(landed) > 1 else ''}.")
        out["a3"] = text
    copies = [f"{impl_name(i)} {_pct(e['receiver']['kernel_copy_to_user'])}" for i, e in sorted(impls.items())]
    out["receiver"] = (f"Every receiver copies to user memory: {', '.join(copies)} of the receiver's samples "
                       f"({where}).")
    busy = [(i, e["cpu_busy"]) for i, e in sorted(impls.items()) if "busier_side" in e]
    if busy:
        out["bottleneck"] = ("Busy share of each pinned CPU in the window (/proc/stat): " + "; ".join(
            f"{impl_name(i)} sender {_pct(b['sender'])}, receiver {_pct(b['receiver'])}" for i, b in busy)
            + ". The side near 100% bounds the throughput; the other waits for it.")
    return out


PROFILE_CAVEAT = ("Profiles sample {event} per CPU. Without a PMU the sampling timer is an hrtimer: a tick "
                  "that falls while interrupts are off fires when they come back on, so such samples land on "
                  "the instruction that re-enables them (_raw_spin_unlock_irqrestore, finish_task_switch): "
                  "{skid} of the samples here. Each sample is classified by its whole stack with that leaf "
                  "skipped, so the time is charged to the operation that disabled interrupts (a wake-up, a "
                  "transmit), not to a lock. Ticks missed while a CPU is idle are not sampled either: read idle "
                  "and busy time from the CPU busy columns, not from the idle share.")


# ------------------------------------------------------------------------------------------------
# the harness: peers, the receive strategy, small messages

def harness_text(ratios) -> str:
    """'A1/iperf3 at 64 B: 1.02, ...' per size at one thread, and the latency ratios."""
    if ratios.empty:
        return ("This sweep measured no reference program: add `iperf3` and `sockperf` to `impls` to see "
                "copylab's programs against them in the same run.")
    parts = []
    for (peer, metric), g in ratios.groupby(["peer", "metric"]):
        g = g[g["threads"] == g["threads"].min()]
        per_size = "; ".join(
            f"{fmt_size(size)}: " + ", ".join(f"{impl_name(r['impl'])}/{peer} {fmt_num(r['ratio'])}"
                                              for _, r in rows.sort_values("impl").iterrows())
            for size, rows in g.groupby("msg_size"))
        parts.append(f"{metric} at {plural(int(g['threads'].iloc[0]), 'thread')}, ratio to {peer}: {per_size}.")
    return " ".join(parts)


def receive_text(table) -> str:
    if table.empty:
        return ""
    worst = table.loc[table["bulk_over_message"].sub(1).abs().idxmax()]
    return (f"With bulk reads instead of message-sized ones, {impl_name(worst['impl'])} at "
            f"{fmt_size(worst['msg_size'])} moves {fmt_num(worst['bulk_over_message'])}× as much data "
            f"({fmt_num(worst['bulk'])} vs {fmt_num(worst['message'])} Gbit/s): the receiver's read size is part "
            "of what is measured.")


def small_message_text(table) -> str:
    if table.empty:
        return ""
    size, threads = fmt_size(table["msg_size"].iloc[0]), int(table["threads"].iloc[0])
    lines = []
    for _, r in table.sort_values("impl").iterrows():
        lines.append(f"{impl_name(r['impl'])} ({r['receive']} reads): {fmt_num(r['throughput_gbps'])} Gbit/s, "
                     f"{fmt_num(r['srv_cs_per_message'])} sender and {fmt_num(r['cli_cs_per_message'])} receiver "
                     f"context switches per message, {fmt_num(r['recv_calls_per_message'])} recv calls per message, "
                     f"CPUs busy {_pct(r['srv_cpu_busy'])} (sender) and {_pct(r['cli_cpu_busy'])} (receiver)")
    return (f"At {size} with {plural(threads, 'thread')}: " + "; ".join(lines) + ". A message this small costs a "
            "system call on each side and, whenever the receiver has drained its socket, a wake-up: the receiver "
            "sleeps, the next segment's softirq wakes it (sock_def_readable), and in a VM a cross-CPU wake-up is "
            "an inter-processor interrupt through the hypervisor. Context switches per message near or above "
            "one mean the data path runs at the pace of those wake-ups, not of the copies.")
