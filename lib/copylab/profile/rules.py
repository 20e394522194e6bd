"""Which kernel and user functions mean what: the tables the profile classifier reads.

How a sample is classified (classify.py does exactly this, and nothing else):
  1. Its frames are read from the leaf (where the CPU was) towards the root (the entry point).
     Symbols are compared without the compiler's suffixes (.isra.0, .constprop.0, .part.0, .cold).
  2. Under hrtimer sampling (cpu-clock, as in VMs without a PMU) a timer that expires while
     interrupts are off fires when they are switched back on, so the leaf of such a sample is the
     irq-enable site (SKID_LEAVES: _raw_spin_unlock_irqrestore, finish_task_switch, ...), not the
     code that spent the time. Those leaves are skipped: the caller decides. With PMU cycles (an
     NMI) the leaf is trusted as it is. The share of skid leaves is reported per side.
  3. The first frame whose symbol is in a table below decides the bucket. Only functions that
     say what is being done are in the tables; helpers (memcpy in the kernel, kfree_skb,
     spin locks) are not, so their time goes to the operation that called them. The user-copy
     routines (copy_user_enhanced_fast_string, rep_movs_alternative...; USER_COPY_HELPERS) copy
     between user and kernel memory in either direction: under the send path they are the copy
     from user memory, under the receive path the copy to it (older kernels inline copyin/copyout
     and _copy_from_iter into tcp_sendmsg, so the path is all there is to tell).
  4. Who the sample belongs to matters for three buckets: user_copy needs a measured program
     (PROGRAM_COMMS, derived from the registry, or one of io_uring's worker threads) copying in
     user space; samples of other processes are other_process unless their stack is network work
     (softirq processing done inside whatever task was running);
     samples of the idle task (pid 0) that match nothing are idle.
  5. Nothing matched: other.

Names cover Linux 5.4 to 6.18 on x86_64 (checked in the kernel sources: 5.4.214, 5.10.13,
5.15.100, 6.1.192, 6.6, 6.13.7, 6.14.0, 6.17.0, 6.18.2). Functions that are always inlined never
appear in a profile and are listed only where an older kernel had them out of line.

The second taxonomy (CAI_*) follows Cai et al., "Understanding Host Network Stack Overheads"
(SIGCOMM 2021), whose public symbol table (written for Linux 5.4 and mlx5) was the reference: the
categories are theirs, this table is ours, extended to 6.x names, veth and the zero-copy paths.
Their study attributes by leaf; here the same leaf-to-root scan as above is used, so VM skid does
not inflate "lock", and the shares are over the non-idle samples, as theirs are over busy cycles.
"""

from __future__ import annotations

import re

from .. import contract, registry

# the results contract's bucket and category names, in the order of their columns
BUCKETS = contract.PROFILE_BUCKETS
CAI_CATEGORIES = contract.CAI_CATEGORIES

BUCKET_MEANING = {
    "user_copy": "memcpy/memmove in user space by the measured program (A1's serialisation)",
    "kernel_copy_from_user": "the kernel copying the payload from user memory into socket buffers (send)",
    "zerocopy_pin": "MSG_ZEROCOPY set-up: pinning user pages (get_user_pages), building skb fragments",
    "deferred_copy": "MSG_ZEROCOPY's copy moved to delivery: skb_copy_ubufs on a local receive path",
    "kernel_copy_to_user": "the kernel copying received payload to user memory (recv)",
    "zerocopy_completion": "zero-copy completions: MSG_ZEROCOPY's notification, unpinning and error queue; "
                           "io_uring's notification (IORING_CQE_F_NOTIF) and its task work",
    "uring_submit": "io_uring submission and completion: io_uring_enter, issuing requests, task work, CQEs",
    "page_cache_ref": "sendfile/splice: referencing page-cache pages into socket buffers instead of copying",
    "receive_map": "TCP_ZEROCOPY_RECEIVE: mapping received pages into the receiver (vm_insert_pages) and "
                   "unmapping them (madvise MADV_DONTNEED)",
    "tcp_send": "TCP/IP and device transmit path (sendmsg down to veth/loopback xmit, ACK transmits)",
    "tcp_receive": "TCP/IP receive path (softirq processing, ACK processing, recvmsg bookkeeping)",
    "scheduling": "waking the other side's thread (sock_def_readable, sk_stream_write_space), and this side's own "
                  "sleeps in socket waits and context switches",
    "syscall": "system call entry/exit and argument handling (iovec import, fd lookup)",
    "other_process": "samples of processes that are not part of the measurement (perf, other programs)",
    "idle": "the idle task",
    "other": "everything else (page faults, timers, the program's own code)",
}

# Leaves that mark where interrupts were re-enabled: under hrtimer sampling the time was spent
# earlier with interrupts off, so the caller is classified instead.
SKID_LEAVES = frozenset({
    "_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq", "finish_task_switch", "handle_softirqs",
    "__do_softirq", "irqentry_exit_to_user_mode", "irqentry_exit", "__local_bh_enable_ip",
    "local_bh_enable", "_raw_spin_unlock_bh", "do_syscall_64", "exit_to_user_mode_loop",
    "syscall_exit_to_user_mode", "native_irq_enable", "arch_local_irq_enable",
})

KERNEL_RULES: dict[str, tuple[str, ...]] = {
    "kernel_copy_from_user": (
        "_copy_from_iter", "_copy_from_iter_full", "_copy_from_iter_nocache", "_copy_from_iter_full_nocache",
        "copyin", "copy_from_user_iter", "copy_from_user_iter_nocache", "csum_and_copy_from_iter",
        "csum_and_copy_from_iter_full", "__copy_user_nocache", "skb_do_copy_data_nocache",
        "skb_copy_to_page_nocache", "skb_add_data_nocache",
        "memcpy_fromiovec", "memcpy_fromiovecend", "skb_copy_to_page",  # before 3.19
    ),
    "kernel_copy_to_user": (
        "_copy_to_iter", "copyout", "copy_to_user_iter", "simple_copy_to_iter", "__skb_datagram_iter",
        "skb_copy_datagram_iter", "csum_and_copy_to_iter", "skb_copy_and_csum_datagram",
        "skb_copy_datagram_iovec", "memcpy_toiovec", "memcpy_toiovecend",  # before 3.19
    ),
    "zerocopy_pin": (
        "skb_zerocopy_iter_stream", "__zerocopy_sg_from_iter", "zerocopy_fill_skb_from_iter",
        "zerocopy_sg_from_iter", "iov_iter_get_pages", "iov_iter_get_pages2", "__iov_iter_get_pages_alloc",
        "iov_iter_get_pages_alloc2", "get_user_pages_fast", "internal_get_user_pages_fast",
        "lockless_pages_from_mm", "gup_fast_fallback", "gup_fast", "gup_pgd_range", "gup_pte_range",
        "gup_fast_pgd_range", "gup_fast_pte_range", "try_get_compound_head", "try_grab_compound_head",
        "try_grab_folio", "try_grab_folio_fast", "__gup_longterm_locked", "__gup_longterm_unlocked",
        "pin_user_pages_fast", "msg_zerocopy_realloc", "msg_zerocopy_alloc", "sock_zerocopy_realloc",
        "sock_zerocopy_alloc", "mm_account_pinned_pages",
        "io_sg_from_iter", "io_sg_from_iter_iovec",  # io_uring SEND_ZC building fragments of its buffers
    ),
    "deferred_copy": ("skb_copy_ubufs", "skb_orphan_frags_rx"),
    "zerocopy_completion": (
        "msg_zerocopy_callback", "msg_zerocopy_complete", "__msg_zerocopy_callback", "sock_zerocopy_callback",
        "mm_unaccount_pinned_pages", "skb_zerocopy_notify_extend", "msg_zerocopy_put_abort",
        "sock_zerocopy_put", "sock_zerocopy_put_abort", "inet_recv_error", "ip_recv_error", "ipv6_recv_error",
        "sock_dequeue_err_skb", "sock_def_error_report",
        # io_uring's zero-copy notifications (6.0+; io_uring_tx_zerocopy_callback before 6.10)
        "io_tx_ubuf_complete", "io_uring_tx_zerocopy_callback", "io_notif_tw_complete", "io_notif_complete_tw_ext",
        "__io_notif_complete_tw", "io_notif_flush", "io_alloc_notif", "io_link_skb", "io_send_zc_cleanup",
        "io_sendzc_cleanup",
    ),
    "uring_submit": (
        "io_uring_enter", "__do_sys_io_uring_enter", "__x64_sys_io_uring_enter", "io_submit_sqes", "io_submit_sqe",
        "io_issue_sqe", "__io_issue_sqe", "io_queue_sqe", "io_queue_sqe_fallback", "io_queue_async", "io_init_req",
        "io_req_task_submit", "io_handle_tw_list", "tctx_task_work", "tctx_task_work_run", "io_run_task_work",
        "__io_run_local_work", "io_run_local_work", "io_cqring_wait", "io_submit_flush_completions",
        "__io_submit_flush_completions", "io_req_task_work_add", "__io_req_task_work_add", "io_req_normal_work_add",
        "io_poll_task_func", "io_apoll_task_func", "io_arm_poll_handler", "__io_arm_poll_handler", "io_poll_wake",
        "io_poll_check_events", "io_sendmsg", "io_send", "io_send_zc", "io_sendmsg_zc", "io_sendmsg_prep",
        "io_send_zc_prep", "io_sendmsg_setup", "io_send_setup", "io_send_zc_import", "io_import_fixed",
        "io_import_reg_buf", "io_import_reg_vec", "io_msg_copy_hdr", "io_sendmsg_copy_hdr", "io_fill_cqe_req",
        "io_cqe_cache_refill", "__io_commit_cqring_flush", "io_req_complete_post", "io_free_batch_list",
        "io_queue_next", "io_req_find_next", "io_cq_unlock_post", "__io_cq_unlock_post", "io_wq_submit_work",
        "io_worker_handle_work", "io_wq_worker", "io_req_post_cqe", "io_post_aux_cqe", "io_sendrecv_fail",
    ),
    "page_cache_ref": (
        "do_sendfile", "__x64_sys_sendfile64", "__do_sys_sendfile64", "do_splice_direct", "do_splice_direct_actor",
        "splice_direct_to_actor", "direct_splice_actor", "splice_to_socket", "skb_splice_from_iter",
        "filemap_splice_read", "shmem_file_splice_read", "splice_folio_into_pipe", "generic_file_splice_read",
        "page_cache_pipe_buf_release", "generic_pipe_buf_get", "generic_pipe_buf_release", "splice_from_pipe_next",
        "do_tcp_sendpages", "tcp_sendpage", "tcp_sendpage_locked", "iter_file_splice_write",
    ),
    "receive_map": (
        "tcp_zerocopy_receive", "tcp_zerocopy_vm_insert_batch", "tcp_zerocopy_vm_insert_batch_error",
        "tcp_zc_handle_leftover", "tcp_zc_finalize_rx_tstamp", "tcp_zerocopy_set_hint_for_skb", "vm_insert_pages",
        "insert_pages", "insert_page_into_pte_locked", "insert_page_in_batch_locked",
    ),
    "tcp_send": (
        "tcp_sendmsg", "tcp_sendmsg_locked", "tcp_push", "__tcp_push_pending_frames", "tcp_push_one",
        "tcp_write_xmit", "tcp_transmit_skb", "__tcp_transmit_skb", "tcp_stream_alloc_skb",
        "sk_stream_alloc_skb", "tcp_skb_entail", "tcp_send_ack", "__tcp_send_ack", "tcp_send_delayed_ack",
        "tcp_event_new_data_sent", "tcp_rate_skb_sent", "tcp_tso_segs", "tcp_small_queue_check",
        "tcp_tsq_handler", "tcp_tasklet_func", "tcp_wfree", "ip_queue_xmit", "__ip_queue_xmit",
        "ip_local_out", "__ip_local_out", "ip_output", "ip_finish_output", "__ip_finish_output",
        "ip_finish_output2", "ip6_xmit", "ip6_output", "ip6_finish_output2", "__dev_queue_xmit",
        "dev_queue_xmit", "dev_hard_start_xmit", "sch_direct_xmit", "validate_xmit_skb", "veth_xmit",
        "veth_forward_skb", "__dev_forward_skb", "__dev_forward_skb2", "dev_forward_skb", "loopback_xmit",
        "netif_rx", "__netif_rx", "netif_rx_internal", "enqueue_to_backlog", "dev_queue_xmit_nit",
        "sock_sendmsg", "__sock_sendmsg", "sock_sendmsg_nosec", "inet_sendmsg", "inet6_sendmsg",
        "____sys_sendmsg", "___sys_sendmsg", "__sys_sendmsg", "__sys_sendto", "sk_stream_write_space",
        "SYSC_sendto", "sock_aio_write", "dev_queue_xmit_sk", "ip_finish_output_gso",  # 3.x/4.x
    ),
    "tcp_receive": (
        "tcp_recvmsg", "tcp_recvmsg_locked", "tcp_rcv_established", "tcp_v4_rcv", "tcp_v6_rcv",
        "tcp_v4_do_rcv", "tcp_v6_do_rcv", "tcp_data_queue", "tcp_queue_rcv", "tcp_ack", "tcp_clean_rtx_queue",
        "tcp_rcv_space_adjust", "tcp_cleanup_rbuf", "__tcp_cleanup_rbuf", "tcp_add_backlog", "tcp_filter",
        "tcp_event_data_recv", "tcp_rack_update_reo_wnd", "tcp_urg", "tcp_check_space", "tcp_data_ready",
        "ip_rcv", "ip_rcv_core", "ip_rcv_finish", "ip_rcv_finish_core", "ip_local_deliver",
        "ip_local_deliver_finish", "ip_protocol_deliver_rcu", "ip_list_rcv", "ip_sublist_rcv",
        "ip6_rcv", "ip6_input", "ip6_input_finish", "ipv6_rcv", "__netif_receive_skb", "__netif_receive_skb_core",
        "__netif_receive_skb_one_core", "__netif_receive_skb_list_core", "netif_receive_skb",
        "netif_receive_skb_list_internal", "process_backlog", "net_rx_action", "napi_poll", "__napi_poll",
        "veth_poll", "veth_xdp_rcv", "napi_gro_receive", "gro_receive_skb", "sock_recvmsg", "sock_recvmsg_nosec",
        "inet_recvmsg", "inet6_recvmsg", "__sys_recvfrom", "____sys_recvmsg", "___sys_recvmsg",
        "__sys_recvmsg", "sk_filter_trim_cap", "__release_sock", "release_sock",
        "SYSC_recvfrom", "tcp_prequeue_process", "sock_aio_read", "tcp_rcv_state_process",  # 3.x/4.x
    ),
    "scheduling": (
        "schedule", "__schedule", "schedule_timeout", "schedule_hrtimeout_range", "schedule_hrtimeout_range_clock",
        "try_to_wake_up", "wake_up_process", "__wake_up", "__wake_up_common", "__wake_up_common_lock",
        "__wake_up_sync_key", "autoremove_wake_function", "woken_wake_function", "default_wake_function",
        "sock_def_readable", "sock_def_write_space", "sk_wait_data", "sk_stream_wait_memory",
        "prepare_to_wait", "finish_wait", "wait_woken", "ttwu_do_activate", "sched_ttwu_pending",
        "enqueue_task", "enqueue_task_fair", "dequeue_task", "dequeue_task_fair", "pick_next_task",
        "pick_next_task_fair", "__pick_next_task", "update_curr", "set_next_entity", "put_prev_task_fair",
        "check_preempt_wakeup", "resched_curr", "wakeup_preempt", "select_task_rq_fair", "do_nanosleep",
        "hrtimer_nanosleep", "futex_wait", "futex_wait_queue", "futex_wake", "do_sched_yield",
        "ttwu_queue_wakelist", "__smp_call_single_queue", "send_call_function_single_ipi",
        "native_send_call_func_single_ipi", "schedule_idle",
    ),
    "syscall": (
        "entry_SYSCALL_64", "entry_SYSCALL_64_after_hwframe", "syscall_return_via_sysret",
        "entry_SYSCALL_64_fastpath", "system_call_fastpath", "system_call",  # 3.x/4.x
        "exit_to_user_mode_prepare", "__fdget", "fdget", "sockfd_lookup_light", "__sys_setsockopt",
        "import_single_range", "import_ubuf", "copy_msghdr_from_user", "__copy_msghdr", "__copy_msghdr_from_user",
        "sendmsg_copy_msghdr", "recvmsg_copy_msghdr", "iovec_from_user", "__import_iovec", "import_iovec",
        "rw_copy_check_uvector", "do_sys_poll", "__x64_sys_poll", "__x64_sys_ppoll", "do_poll",
    ),
    "idle": (
        "do_idle", "cpu_startup_entry", "cpuidle_enter", "cpuidle_enter_state", "default_idle",
        "default_idle_call", "default_enter_idle", "pv_native_safe_halt", "native_safe_halt", "acpi_idle_enter",
        "acpi_safe_halt", "poll_idle", "start_secondary", "arch_cpu_idle", "mwait_idle", "intel_idle",
        "call_cpuidle", "haltpoll_enter_idle",
    ),
}
# Unmapping what TCP_ZEROCOPY_RECEIVE mapped (the receiver's madvise(MADV_DONTNEED), as tcp_mmap.c
# does) is part of receive_map, but only in the receiver: a sender's glibc returns freed memory with
# the same madvise, which is no mapping of received data.
RECEIVER_COMMS = ("client",)
RECEIVER_UNMAP = frozenset({
    "do_madvise", "__x64_sys_madvise", "__do_sys_madvise", "madvise_do_behavior", "madvise_vma_behavior",
    "madvise_dontneed_free", "madvise_dontneed_single_vma", "zap_page_range_single", "zap_page_range_single_batched",
})
# families matched by pattern (only consulted when the exact tables have no entry)
KERNEL_PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    ("syscall", re.compile(r"^(__(x64|ia32|se)_sys_|SyS_|sys_)")),
)

# copy routines that only say "user <-> kernel": the path around them says which way
USER_COPY_HELPERS = frozenset({
    "copy_user_enhanced_fast_string", "copy_user_generic_string", "copy_user_generic_unrolled",
    "rep_movs_alternative", "copy_user_generic", "__copy_user_nocache", "_copy_from_user", "_copy_to_user",
    "copy_from_user", "copy_to_user",
})
HELPER_DIRECTION = {"tcp_send": "kernel_copy_from_user", "tcp_receive": "kernel_copy_to_user"}

USER_COPY = re.compile(r"^(__)?(memcpy|memmove|mempcpy|__memcpy_chk|__memmove_chk)"
                       r"|^__mem(cpy|move|pcpy)_[a-z0-9_]+$")
# libc's wrappers around the socket calls: time in them (user side) is system-call overhead
USER_SYSCALL = frozenset({"__send", "__libc_send", "send", "__sendmsg", "__libc_sendmsg", "sendmsg",
                          "__recv", "__libc_recv", "recv", "__recvmsg", "__libc_recvmsg", "recvmsg",
                          "__poll", "poll", "__libc_write", "__libc_read", "write", "read", "sendto",
                          "__sendto", "recvfrom", "__recvfrom", "__libc_recvfrom", "__libc_sendto"})

COMM_LEN = 15  # the kernel keeps this many characters of a command name (TASK_COMM_LEN - 1)


def _program_comms() -> frozenset[str]:
    """The measured programs' command names: every registry entry's process (servers and peers),
    the client, and their sanitizer builds (`*_san`), as the kernel truncates them."""
    programs = [impl.process for impl in registry.all_impls()] + ["client"]
    return frozenset(name[:COMM_LEN] for program in programs for name in (program, f"{program}_san"))


PROGRAM_COMMS = _program_comms()
# threads io_uring starts for a program (its async workers, its SQ poller) carry their own names
PROGRAM_COMM_PREFIXES = ("iou-wrk-", "iou-sqp-")
# buckets that are network work wherever they run (softirq inside another task, ksoftirqd)
NETWORK_BUCKETS = frozenset({"kernel_copy_from_user", "zerocopy_pin", "deferred_copy", "kernel_copy_to_user",
                             "zerocopy_completion", "tcp_send", "tcp_receive"})

SUFFIX = re.compile(r"\.(isra|constprop|part|cold|lto_priv|llvm)(\.\d+)?")

# ------------------------------------------------------------------------------------------------
# Cai et al.'s taxonomy (CAI_CATEGORIES, from the contract)

CAI_MEANING = {
    "data_copy": "payload copies in either direction, in user space or the kernel (incl. the deferred copy)",
    "tcp_ip": "TCP/IP protocol processing and the socket layer",
    "netdevice": "the device layer: queueing, veth/loopback transmit, softirq receive, NAPI",
    "skb_mgmt": "allocating, cloning and freeing socket buffers",
    "mem_alloc": "memory allocation and free, page management (incl. MSG_ZEROCOPY page pinning)",
    "lock": "locks (socket lock, spin locks)",
    "scheduling": "scheduler, context switches, wake-ups",
    "other": "everything else (system call entry, completions, timers, user code)",
}

CAI_RULES: dict[str, tuple[str, ...]] = {
    "data_copy": KERNEL_RULES["kernel_copy_from_user"] + KERNEL_RULES["kernel_copy_to_user"] + (
        "skb_copy_ubufs", "memcpy", "__memcpy", "memcpy_orig", "memcpy_erms", "memmove", "__memmove",
        "rep_movs_alternative", "copy_user_enhanced_fast_string", "copy_user_generic_string",
        "copy_user_generic_unrolled", "__check_object_size", "check_heap_object", "iov_iter_advance",
        "skb_copy_bits", "copy_page_to_iter", "copy_page_from_iter",
    ),
    "netdevice": (
        "__dev_queue_xmit", "dev_queue_xmit", "dev_hard_start_xmit", "sch_direct_xmit", "validate_xmit_skb",
        "veth_xmit", "veth_forward_skb", "__dev_forward_skb", "__dev_forward_skb2", "dev_forward_skb",
        "loopback_xmit", "netif_rx", "__netif_rx", "netif_rx_internal", "enqueue_to_backlog",
        "dev_queue_xmit_nit", "__netif_receive_skb", "__netif_receive_skb_core", "__netif_receive_skb_one_core",
        "__netif_receive_skb_list_core", "netif_receive_skb", "netif_receive_skb_list_internal",
        "process_backlog", "net_rx_action", "napi_poll", "__napi_poll", "veth_poll", "veth_xdp_rcv",
        "napi_gro_receive", "gro_receive_skb", "eth_type_trans", "skb_network_protocol", "netdev_core_pick_tx",
    ),
    "skb_mgmt": (
        "__alloc_skb", "alloc_skb", "alloc_skb_with_frags", "__build_skb", "build_skb", "kfree_skb",
        "kfree_skb_reason", "sk_skb_reason_drop", "__kfree_skb", "consume_skb", "skb_release_data",
        "skb_release_head_state", "skb_release_all", "skb_free_head", "skb_clone", "__skb_clone",
        "__copy_skb_header", "napi_consume_skb", "skb_attempt_defer_free", "tcp_stream_alloc_skb",
        "sk_stream_alloc_skb", "skb_zerocopy_clone", "skb_frag_unref", "__skb_frag_unref", "kfree_skbmem",
        "skb_try_coalesce", "tcp_try_coalesce", "skb_split", "tcp_fragment", "skb_splice_from_iter",
        "skb_append_pagefrags",
    ),
    "mem_alloc": KERNEL_RULES["zerocopy_pin"] + (
        "kmalloc", "__kmalloc", "__kmalloc_node", "__kmalloc_node_track_caller", "kmalloc_reserve",
        "kmem_cache_alloc", "kmem_cache_alloc_node", "kmem_cache_free", "kfree", "__slab_free", "___slab_alloc",
        "__alloc_pages", "__alloc_pages_noprof", "alloc_pages", "get_page_from_freelist", "free_unref_page",
        "free_unref_page_commit", "free_unref_folios", "__free_pages", "__folio_put", "put_page", "folio_put",
        "page_frag_alloc", "page_frag_alloc_align", "__page_frag_alloc_align", "skb_page_frag_refill",
        "sk_page_frag_refill", "mm_unaccount_pinned_pages", "__mod_memcg_state", "mem_cgroup_charge_skmem",
        "__sk_mem_schedule", "__sk_mem_raise_allocated", "__sk_mem_reduce_allocated", "sk_forced_mem_schedule",
        *KERNEL_RULES["receive_map"],
    ),
    "lock": (
        "_raw_spin_lock", "_raw_spin_lock_bh", "_raw_spin_lock_irqsave", "_raw_spin_lock_irq",
        "_raw_spin_unlock", "_raw_spin_unlock_bh", "_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq",
        "native_queued_spin_lock_slowpath", "queued_spin_lock_slowpath", "lock_sock_nested", "release_sock",
        "__release_sock", "_raw_read_lock", "_raw_write_lock", "mutex_lock", "mutex_unlock",
    ),
    "scheduling": KERNEL_RULES["scheduling"],
    "tcp_ip": tuple(s for s in KERNEL_RULES["tcp_send"] + KERNEL_RULES["tcp_receive"]
                    if s not in ("__dev_queue_xmit", "dev_queue_xmit", "dev_hard_start_xmit", "sch_direct_xmit",
                                 "validate_xmit_skb", "veth_xmit", "veth_forward_skb", "__dev_forward_skb",
                                 "__dev_forward_skb2", "dev_forward_skb", "loopback_xmit", "netif_rx",
                                 "__netif_rx", "netif_rx_internal", "enqueue_to_backlog", "dev_queue_xmit_nit",
                                 "__netif_receive_skb", "__netif_receive_skb_core", "__netif_receive_skb_one_core",
                                 "__netif_receive_skb_list_core", "netif_receive_skb",
                                 "netif_receive_skb_list_internal", "process_backlog", "net_rx_action",
                                 "napi_poll", "__napi_poll", "veth_poll", "veth_xdp_rcv", "napi_gro_receive",
                                 "gro_receive_skb", "tcp_stream_alloc_skb", "sk_stream_alloc_skb",
                                 "release_sock", "__release_sock")),
}
