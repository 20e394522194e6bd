"""Every explanation the report states is chosen by a rule from the run's own evidence: SYNTHETIC
evidence that points one way or the other (tests/data/analysis/evidence.py) flips the sentence."""

from __future__ import annotations

import math

import pytest

from copylab.analysis import explain, explain_copies, stacks
from copylab.fmt import fmt_num
from copylab.analysis.text.answers import answers
from data.analysis import evidence as ev

DEFERRED = {"deferred_copy": 0.37, "zerocopy_pin": 0.076, "zerocopy_completion": 0.006, "tcp_send": 0.3}
PINNING = {"deferred_copy": 0.05, "zerocopy_pin": 0.30, "zerocopy_completion": 0.02, "tcp_send": 0.3}


def zc_runs(enobufs: int, runs: int = 3) -> list[dict]:
    return [ev.measured_row("a3", 65536, rep=r, enobufs=enobufs) for r in range(runs)]


@pytest.mark.parametrize("shares, enobufs, verdict, says, not_says", [
    (DEFERRED, 0, "deferred_copy", ["pays it later", "37.0%", "7.6%", "ENOBUFS occurred in none of the 3"],
     ["Pinning the user pages, not a copy", "back-pressure is part"]),
    (PINNING, 500, "zerocopy_pin", ["Pinning the user pages, not a copy", "30.0%", "back-pressure is part",
                                     "in 3 of 3 runs"], ["pays it later", "in none of"]),
])
def test_zero_copy_cost_follows_the_profile_and_enobufs(shares, enobufs, verdict, says, not_says):
    profiles = ev.frame([ev.profile_row("a3", 65536, shares, rep=r) for r in range(3)]
                        + [ev.profile_row("a1", 65536, {"kernel_copy_from_user": 0.1, "user_copy": 0.06}, rep=r)
                           for r in range(3)])
    found = explain_copies.zero_copy_cost(ev.frame(zc_runs(enobufs)), profiles)
    assert found.verdict == verdict and not found.hypothesis
    for text in says:
        assert text in found.text, text
    for text in not_says:
        assert text not in found.text, text
    assert "95% intervals over 3 profiled runs" in found.text


def test_zero_copy_cost_is_a_hypothesis_when_the_intervals_overlap():
    close = {"deferred_copy": 0.10, "zerocopy_pin": 0.09, "zerocopy_completion": 0.01}
    profiles = ev.frame([ev.profile_row("a3", 65536, close, samples=300)])  # one run: Wilson intervals of 300 samples
    found = explain_copies.zero_copy_cost(ev.frame(zc_runs(0)), profiles)
    assert found.hypothesis and "Hypothesis (this run's data do not decide it): The deferred copy" in found.text
    assert "more profiled runs of A3 at 64 KiB" in found.decide_by
    assert "from the 300 samples of one profiled run" in found.text


def test_zero_copy_cost_without_a_profile_says_what_would_decide():
    found = explain_copies.zero_copy_cost(ev.frame(zc_runs(0)), ev.frame([]))
    assert found.hypothesis and found.verdict == "unknown" and "grid key profile" in found.decide_by


@pytest.mark.parametrize("srv, cli, rps, verdict, says", [
    ({ev.SEND_STACK: 90, ev.OTHER_STACK: 50}, {ev.RECV_STACK: 5}, False, "sendmsg",
     ["inside the sender's own sendmsg call", "__sys_sendmsg → tcp_sendmsg_locked → … → do_softirq",
      "veth delivers the packet on the transmitting CPU, so, as profiled (", "runs at other thread counts can move it"]),
    ({ev.SEND_STACK: 5}, {ev.RECV_STACK: 90}, True, "recv",
     ["inside the receiver's recv call", "the receiver pays it", "rps=True"]),
    ({ev.SEND_STACK: 50}, {ev.RECV_STACK: 50}, False, "split", ["runs in several places"]),
])
def test_where_the_deferred_copy_runs_is_read_from_the_stacks(tmp_path, srv, cli, rps, verdict, says):
    row = ev.profile_row("a3", 65536, DEFERRED, rps=rps)
    ev.write_stacks(tmp_path, row["point_id"], srv, cli)
    found = explain_copies.deferred_copy_site(ev.frame([row]), tmp_path)
    assert found.verdict == verdict, found.text
    for text in says:
        assert text in found.text, text
    assert found.evidence["samples"]["srv"].get("sendmsg", 0) == srv.get(ev.SEND_STACK, 0)


def test_without_stacks_where_it_runs_is_a_hypothesis(tmp_path):
    found = explain_copies.deferred_copy_site(ev.frame([ev.profile_row("a3", 65536, DEFERRED)]), tmp_path)
    assert found.hypothesis and "folded stacks" in found.decide_by


def test_stack_context_is_the_innermost_system_call():
    assert stacks.context_of(ev.SEND_STACK.split(";"), "skb_copy_ubufs") == "sendmsg"
    assert stacks.context_of(ev.RECV_STACK.split(";"), "skb_copy_ubufs") == "recv"
    assert stacks.context_of("swapper;irq_exit_[k];net_rx_action_[k];skb_copy_ubufs_[k]".split(";"),
                             "skb_copy_ubufs") == "interrupt"
    assert stacks.context_of(ev.OTHER_STACK.split(";"), "skb_copy_ubufs") is None
    assert stacks.plain("do_softirq.part.0_[k]") == "do_softirq"


@pytest.mark.parametrize("busy, verdict, says", [
    ((0.48, 1.0), "receiver", "the receiver bounds the throughput (sender CPU busy 48%, receiver CPU busy 100%"),
    ((0.99, 0.60), "sender", "the sender bounds the throughput (sender CPU busy 99%, receiver CPU busy 60%"),
    ((0.60, 0.70), "neither", "Hypothesis (this run's data do not decide it): A1: neither CPU is saturated"),
    ((0.97, 0.99), "both", "both CPUs are at or near saturation"),
    ((0.98, 0.94), "both", "both CPUs are at or near saturation"),  # the sender is near 100%, the other close
    ((math.nan, math.nan), "unknown", "cannot be told"),
])
def test_which_side_bounds_follows_the_busy_shares(busy, verdict, says):
    rows = ev.frame([ev.measured_row("a1", 64, rep=r, busy=busy) for r in range(3)])
    found = explain.bound_side(rows, "A1")
    assert found.verdict == verdict and says in found.text
    assert found.hypothesis is (verdict in ("neither", "both", "unknown"))
    # the rule "the side near 100% bounds it" is stated only where a side is near 100%
    assert ("bounds the throughput (" in found.text) is (verdict in ("sender", "receiver"))


def test_one_pass_does_not_decide_which_side_bounds():
    """Review-fresh6 M1: A3 at 64 KiB had sender passes 87, 96, 100 and 97% busy; their mean, 94.95%, fell
    under the 95% line and the report said "neither CPU is saturated (sender CPU busy 95%)". On the median
    of the passes the sender bounds it; a share within half a point of the line is printed with a decimal."""
    rows = ev.frame([ev.measured_row("a3", 65536, rep=r, busy=(b, 0.55)) for r, b in enumerate((0.867, 0.961, 1.0, 0.970))])
    found = explain.bound_side(rows, "A3")
    assert found.verdict == "sender" and "sender CPU busy 97%, receiver CPU busy 55%" in found.text
    assert "(medians of the passes)" in found.text
    near = ev.frame([ev.measured_row("a3", 65536, rep=r, busy=(b, 0.55)) for r, b in enumerate((0.94, 0.9495, 0.96))])
    assert "sender CPU busy 94.95%" in explain.bound_side(near).text  # never "95%" or "95.0%" beside the line
    assert explain.busy_pct(0.953) == "95.3%" and explain.busy_pct(0.97) == "97%"


def test_steal_is_named_when_the_hypervisor_took_time():
    rows = ev.frame([ev.measured_row("a1", 64, busy=(0.5, 1.0), steal=(0.0, 0.08))])
    assert "the hypervisor took 8% of the CPUs' time (steal)" in explain.bound_side(rows).text


@pytest.mark.parametrize("cs, verdict, says", [
    (0.9, "wakeup_paced", "runs at the pace of those wake-ups"),
    (0.01, "per_call", "wake-ups are not what a message costs here"),
    (0.3, "mixed", "Hypothesis"),
])
def test_small_messages_wakeups_or_per_call_work(cs, verdict, says):
    row = {"impl": "a1", "msg_size": 64, "threads": 1, "srv_cs_per_message": 0.001, "cli_cs_per_message": cs,
           "recv_calls_per_message": 1.0}
    found = explain.wakeup_regime(row)
    assert found.verdict == verdict and says in found.text


@pytest.mark.parametrize("a2_user, verdict", [(0.0, "removed"), (0.06, "not_seen")])
def test_the_removed_copy_is_claimed_only_when_the_profile_shows_it(a2_user, verdict):
    profiles = ev.frame([ev.profile_row("a1", 65536, {"user_copy": 0.06, "kernel_copy_from_user": 0.10}, rep=r)
                         for r in range(3)]
                        + [ev.profile_row("a2", 65536, {"user_copy": a2_user, "kernel_copy_from_user": 0.15}, rep=r)
                           for r in range(3)])
    found = explain_copies.removed_copy(profiles)
    assert found.verdict == verdict
    assert ("The serialisation copy is gone in A2" in found.text) is (verdict == "removed")
    assert "6.0%" in found.text


@pytest.mark.parametrize("a2_copy, verdict", [(0.30, "copy"), (0.04, "tcp_send")])
def test_a_per_message_gap_is_put_on_the_copy_only_when_the_profile_says_so(a2_copy, verdict):
    # a1: 500 ms of sender CPU for 100k messages; a2 busier (more CPU per message)
    a1 = [ev.profile_row("a1", 64, {"user_copy": 0.01, "kernel_copy_from_user": 0.02, "tcp_send": 0.5},
                         busy=(0.5, 0.9), rep=r) for r in range(3)]
    a2 = [ev.profile_row("a2", 64, {"kernel_copy_from_user": a2_copy, "tcp_send": 0.5 if a2_copy > 0.1 else 0.7},
                         busy=(0.8, 0.9), rep=r) for r in range(3)]
    found = explain_copies.per_message_gap(ev.with_passes(a1 + a2), "a2", "a1", 64)
    assert found.verdict == verdict, found.text
    assert found.hypothesis is (verdict != "copy")
    assert found.evidence["gap_us_per_message"] > 0


def test_a_bucket_cost_is_the_share_times_the_measured_points_cpu_not_the_profiled_runs():
    """SYNTHETIC: the profiled run moved half the bytes of its point's passes on the same CPU time (profiled in
    another state), so its own CPU per byte is twice the point's. Every ns/B and µs per message of a bucket is
    its share of the busy samples times the MEASURED point's CPU per byte or per message (review H2)."""
    from copylab.analysis.profiles import apart_from_passes, bucket_cost
    run = ev.profile_row("a1", 65536, {"kernel_copy_from_user": 0.25, "idle": 0.0}, busy=(1.0, 0.9), messages=5_000)
    run["throughput_gbps"] = run["bytes"] * 8 / 1e9  # 2.6 Gbit/s in its 1 s window
    passes = ev.frame([ev.measured_row("a1", 65536, rep=r, gbps=g, busy=(1.0, 0.9)) for r, g in enumerate((8.0, 10.0))])
    profiles = ev.with_passes([run], passes)
    # the point: 1 s of sender CPU per pass over its bytes (per_cpu: the busy share × the window)
    per_byte = sum(1e9 / b for b in passes["bytes"]) / 2
    per_message = sum(1e6 / m for m in passes["messages"]) / 2
    assert bucket_cost(profiles, "srv", "kernel_copy_from_user") == pytest.approx(0.25 * per_byte)
    assert bucket_cost(profiles, "srv", "kernel_copy_from_user", "message") == pytest.approx(0.25 * per_message)
    own = 0.25 * 1e9 / run["bytes"]  # the profiled run's own basis: what the old code gave
    assert bucket_cost(profiles, "srv", "kernel_copy_from_user") < own / 2
    # the run lies far below its passes (8-10 Gbit/s): flagged with its ratio to the passes' mean
    out = apart_from_passes(profiles, 0.10)
    assert len(out) == 1 and out["ratio"].iloc[0] == pytest.approx(run["throughput_gbps"] / 9.0)
    # a run without measured passes gets no cost at all, never its own basis
    assert math.isnan(bucket_cost(ev.with_passes([run], passes.iloc[0:0]), "srv", "kernel_copy_from_user"))


def test_the_profile_section_sets_each_profiled_run_against_its_points_passes():
    """SYNTHETIC: two profiled runs at their passes' mean, one at half their lowest; the profile section prints
    each against its pass range and flags the one beyond the equivalence margin with where its shares are used,
    by the rule the sentences follow (profiles.apart_from_passes)."""
    from copylab.analysis.study import study as build_study
    from copylab.analysis.text import profile
    grid = ev.throughput_grid({"a2": {}, "a3": {}}, passes=3, sizes=(65536,), threads=(1,))
    a1, a3 = (grid[(grid["impl"] == i)]["throughput_gbps"] for i in ("a1", "a3"))
    rows = [ev.profile_row("a1", 65536, {"kernel_copy_from_user": 0.3, "user_copy": 0.1}),
            ev.profile_row("a2", 65536, {"kernel_copy_from_user": 0.3}),
            ev.profile_row("a3", 65536, {"deferred_copy": 0.3})]
    rows[0]["throughput_gbps"] = float(a1.mean())
    rows[1]["throughput_gbps"] = float(grid[grid["impl"] == "a2"]["throughput_gbps"].mean())
    rows[2]["throughput_gbps"] = 0.5 * float(a3.min())
    s = build_study(grid, {"cores": 2}, ev.frame(rows))
    text = profile.points_text(s).replace("\\", "")  # the table's cells are markdown-escaped
    lines = {line.split(" | ")[0].strip("| ") + " " + line.split(" | ")[1]: line for line in text.splitlines()
             if line.startswith("| A")}
    a3_line, a1_line = lines["A3 64 KiB"], lines["A1 64 KiB"]
    assert f"| {fmt_num(rows[2]['throughput_gbps'])} | {fmt_num(a3.min())}–{fmt_num(a3.max())} |" in a3_line
    assert "1 run of 3 lie beyond it" in text and "(1 slower)" in text and "margin (±10%)" in text
    assert "| another state |" in a3_line and "this section |" in a3_line and "| as its passes |" in a1_line


@pytest.mark.parametrize("at_64k, follows", [(0.2, True), (0.1, False)])
def test_q2s_pmu_free_evidence_is_the_copy_cost_following_the_working_set(at_64k, follows):
    """SYNTHETIC (review M8): A1's copies cost 0.35/0.035/0.07/0.14 ns/B at 64 B/1/4/16 KiB (working sets 16 KiB,
    256 KiB, 1 MiB, 4 MiB) and 0.14 or 0.07 at 64 KiB (4 MiB again): from the cheapest size on, a cost rising with
    the working set and flat where it is, is said as the hypothesis with its confound; a cost that falls where
    the working set stays does not follow it."""
    shares = {64: 0.5, 1024: 0.05, 4096: 0.1, 16384: 0.2, 65536: at_64k}
    working_set = {64: 16 << 10, 1024: 256 << 10, 4096: 1 << 20, 16384: 4 << 20, 65536: 4 << 20}
    rows = []
    for size, sh in shares.items():  # each run moves 1 GB on 0.7 s of sender CPU: 0.7 ns/B, so cost = 0.7 × share
        row = ev.profile_row("a1", size, {"user_copy": sh / 2, "kernel_copy_from_user": sh / 2}, messages=10**9 // size)
        row["working_set_bytes"] = working_set[size]
        rows.append(row)
    meta = {"cpu_caches": {"L1d": "32K", "L2": "1024K", "L3": "32768K shared by CPUs 0-1"}}
    found = explain_copies.copy_by_working_set(ev.with_passes(rows), meta)
    # 256 KiB sits within half of the 1 MiB L2; 1 MiB is all of it (review N12: it read "L2" as if it fit)
    assert "1 KiB 0.0350 ns/B (working set 256 KiB, within L2" in found.text
    assert "4 KiB 0.0700 ns/B (working set 1 MiB, filling L2" in found.text
    assert found.hypothesis and found.evidence["follows"] is follows
    # either way the text cites these runs' shares: the profile section's table says "Q2" beside them
    assert found.verdict == ("follows" if follows else "does_not_follow")
    assert ("from 1 KiB on (below it the cost per byte falls with size" in found.text) is follows, found.text
    assert ("Confounds: message size and working set grow together" in found.text) is follows
    assert ("do not follow the working set" in found.text) is not follows


@pytest.mark.slow
def test_answers_change_their_sentence_with_the_evidence(tmp_path):
    """Through answers(): the same throughput with the profile pointing the other way flips Q1's why."""
    measured = ev.throughput_grid({"a2": {}, "a3": {}}, passes=3, sizes=(64, 65536), threads=(1, 2))
    texts = {}
    for label, shares, enobufs in (("deferred", DEFERRED, 0), ("pinning", PINNING, 40)):
        df = measured.copy()
        df.loc[df["impl"] == "a3", "enobufs"] = enobufs
        df.loc[df["impl"] == "a3", "send_calls"] = 1000
        profiles = ev.frame([ev.profile_row("a3", 65536, shares, rep=r) for r in range(2)])
        doc = answers(df, {"cores": 2}, profiles)
        texts[label] = doc["q1_zero_copy_not_always_best"]["text"]
        assert "(the verdicts listed in Q1)" in doc["q5_zero_copy_vs_two_copy"]["text"]
        assert doc["explanations"]["zero_copy_cost"]["verdict"] == ("deferred_copy" if label == "deferred" else "zerocopy_pin")
    # Q1 refers back to the profile section's paragraph in a line carrying the verdict (issue 33); Q5 to Q1
    # ... at the size it was found at, which need not be every size's answer
    # ... and at the thread count it was profiled at, where the decisions pool more (review item 6)
    assert ("(the deferred copy, most of the zero-copy cost, at 64 KiB, 1 thread only)" in texts["deferred"]
            and "(pinning, most of the zero-copy cost, at 64 KiB, 1 thread only)" in texts["pinning"])
    assert "pays it later" not in texts["deferred"]


def test_sides_that_bound_are_said_once_per_verdict():
    rows = {impl: ev.frame([ev.measured_row(impl, 65536, busy=(0.5, 1.0))]) for impl in ("a1", "a2")}
    rows["a3"] = ev.frame([ev.measured_row("a3", 65536, busy=(0.6, 0.7))])
    said = explain.bound_sentences(rows, "at 64 KiB, 1 thread")
    assert said[0].startswith("At 64 KiB, 1 thread, the receiver bounds the throughput of A1 (sender CPU busy 50%")
    assert "and A2 (sender CPU busy 50%" in said[0]
    assert len(said) == 2 and said[1].startswith("Hypothesis") and "A3 at 64 KiB" in said[1]
    unknown = {impl: ev.frame([ev.measured_row(impl, 64)]) for impl in ("a1", "a2")}
    assert explain.bound_sentences(unknown, "at 64 B") == [
        explain.bound_side(ev.frame([]), "For A1 and A2 at 64 B").text]
