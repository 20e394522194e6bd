/* A3, zero-copy: SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY) over the same kind of iovec as A2, with
 * page-aligned fields. The kernel pins the pages instead of copying them and tells us on the
 * socket's error queue when it no longer needs them; completion handling follows the kernel's
 * selftest (tools/testing/selftests/net/msg_zerocopy.c):
 *  - every successful zerocopy sendmsg gets the next 32-bit id; one notification covers the
 *    inclusive range [ee_info, ee_data] (lo = ee_info, hi = ee_data);
 *  - SO_EE_CODE_ZEROCOPY_COPIED in ee_code: the kernel copied after all (always the case for
 *    local delivery: loopback, or veth between namespaces of one host);
 *  - the queue is drained every A3_DRAIN_EVERY sends, on ENOBUFS (optmem / locked-page limit:
 *    back-pressure, drain and retry) and before a buffer is reused;
 *  - a message buffer is never reused while in flight: messages rotate through a ring of slots
 *    (each a whole 8-field message), each remembering the ids of the calls that sent it, and a
 *    slot is reused only after all of those completed. At the end every completion is awaited
 *    before the buffers are freed.
 * The ring is sized so that it, rather than the socket buffer, does not limit what is in flight
 * (else small messages would measure our ring depth, not MSG_ZEROCOPY), within a memory cap.
 *
 * Ring memory is also bounded for the whole process: without that, 256 connections at 64 KiB held
 * 1.5 GiB and 1024 would have asked for 6 GiB. All live rings share A3_RING_BUDGET, an atomic count
 * of bytes reserved; a connection reserves its ring before allocating it and returns the
 * reservation when it ends (also when setting up fails). The budget counts what the allocator
 * really keeps per field (see slot_cost), not the payload. Policy, first come first served:
 *  - a connection gets the ring it wants if that fits in what is left of the budget, else as many
 *    slots as fit;
 *  - it always gets at least A3_SLOTS_MIN slots, even when that overdraws the budget: a client that
 *    was accepted must be served (refusing it would turn load into errors), and a small ring only
 *    lowers that connection's depth in flight. Worst case memory is therefore A3_RING_BUDGET plus
 *    A3_SLOTS_MIN slots per connection beyond it (1024 x 64 KiB: about 0.6 GiB instead of 6 GiB);
 *  - a ring keeps its size for the life of the connection: growing it later would change what is
 *    measured mid-run, and shrinking it would have to wait for the slots' completions.
 * At one or a few connections nothing changes: a whole ring (at most A3_RING_MEMORY) fits. */
#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which needs struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "message.h"
#include "protocol.h"
#include "server_common.h"
#include "sockutil.h"
#include "timing.h"

#define A3_SLOTS_MIN 4
#define A3_INFLIGHT_BYTES (4u << 20)  /* Linux's default tcp_wmem maximum */
#define A3_RING_MEMORY (8u << 20)     /* per connection, counting each field's whole pages */
#define A3_RING_BUDGET ((size_t)256 << 20) /* all connections together, counted by slot_cost() */
#define A3_DRAIN_EVERY 32
/* Completions come when the peer has ACKed the data (or the connection died and the queue was
 * purged): this long without any is a fault, not back-pressure. */
#define A3_STALL_NS (10 * 1000000000LL)
#define A3_POLL_MS 100

struct a3_slot {
	struct message msg;
	struct iovec iov[MESSAGE_FIELDS];
	uint64_t first_id, end_id; /* ids [first_id, end_id) of the calls that sent its last message */
	uint64_t pending;          /* how many of those have not completed */
};

struct a3_conn {
	struct a3_slot *slot;
	unsigned nslots;
	size_t reserved; /* bytes of A3_RING_BUDGET this ring holds, returned by free_ring() */
	unsigned next_slot;
	uint64_t next_id; /* id of the next successful zerocopy send (ids are 64-bit here, 32 on the wire) */
	unsigned since_drain;
};

/* A completion for kernel ids [lo32, hi32]: count it and credit the slots whose calls it covers. */
static void account(struct conn *c, struct a3_conn *s, uint32_t lo32, uint32_t hi32, int copied)
{
	/* widen: lo is the newest 64-bit id that ends in lo32 and was already sent */
	uint64_t lo = s->next_id - (uint32_t)((uint32_t)s->next_id - lo32);
	uint64_t n = (uint64_t)(uint32_t)(hi32 - lo32) + 1;
	uint64_t hi_end = lo + n;

	c->st.zc_completions += n;
	if (copied)
		c->st.zc_copied += n;
	for (unsigned k = 0; k < s->nslots; k++) {
		struct a3_slot *sl = &s->slot[k];
		uint64_t a = sl->first_id > lo ? sl->first_id : lo;
		uint64_t b = sl->end_id < hi_end ? sl->end_id : hi_end;
		if (a < b)
			sl->pending -= (b - a) < sl->pending ? (b - a) : sl->pending;
	}
}

/* Read every notification queued now (never blocks). Returns how many send calls completed, or
 * -1 with errno set. */
static int64_t drain(struct conn *c)
{
	struct a3_conn *s = c->impl;
	uint64_t before = c->st.zc_completions;

	for (;;) {
		char control[128];
		struct msghdr mh = {.msg_control = control, .msg_controllen = sizeof(control)};
		if (recvmsg(c->fd, &mh, MSG_ERRQUEUE) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			struct sock_extended_err serr;
			if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
				continue;
			memcpy(&serr, CMSG_DATA(cm), sizeof(serr));
			if (serr.ee_origin != SO_EE_ORIGIN_ZEROCOPY || serr.ee_errno != 0)
				continue;
			account(c, s, serr.ee_info, serr.ee_data, (serr.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0);
		}
	}
	return (int64_t)(c->st.zc_completions - before);
}

/* Block until slot has no call in flight (slot != NULL), or until at least min_completions
 * completions were counted in total. 0, or -1 with errno set and c->error filled. */
static int wait_completions(struct conn *c, const struct a3_slot *slot, uint64_t min_completions)
{
	int64_t last_progress = now_ns();

	for (;;) {
		int64_t got = drain(c);
		if (got < 0) {
			int saved = errno;
			conn_fail(c, "recvmsg(MSG_ERRQUEUE): %s", strerror(saved));
			errno = saved;
			return -1;
		}
		if (slot ? slot->pending == 0 : c->st.zc_completions >= min_completions)
			return 0;
		if (got > 0)
			last_progress = now_ns();
		else if (now_ns() - last_progress > A3_STALL_NS) {
			conn_fail(c, "%llu zerocopy completions still missing after %lld s without progress",
				  (unsigned long long)(c->st.zc_sends - c->st.zc_completions),
				  A3_STALL_NS / 1000000000LL);
			errno = ETIMEDOUT;
			return -1;
		}
		/* POLLERR: the error queue has something (or the socket has an error) */
		struct pollfd p = {.fd = c->fd, .events = 0};
		if (poll(&p, 1, A3_POLL_MS) > 0 && !(p.revents & POLLERR))
			sleep_ns(1000000); /* only POLLHUP: nothing to read, do not spin */
	}
}

/* Bytes of A3_RING_BUDGET reserved by live rings (may exceed it: the minimum is always granted). */
static atomic_size_t ring_budget_used;

/* Enough slots to keep A3_INFLIGHT_BYTES in flight, at least A3_SLOTS_MIN, within A3_RING_MEMORY. */
static unsigned ring_slots(size_t msg_size, size_t page)
{
	size_t per_slot = 0;

	for (int k = 0; k < MESSAGE_FIELDS; k++)
		per_slot += (message_field_len(msg_size, k) + page - 1) / page * page;
	size_t want = (A3_INFLIGHT_BYTES + msg_size - 1) / msg_size;
	size_t fit = A3_RING_MEMORY / per_slot;
	size_t n = want < fit ? want : fit;
	return n < A3_SLOTS_MIN ? A3_SLOTS_MIN : (unsigned)n;
}

/* What one slot costs in resident memory, for the process budget. posix_memalign puts the chunk
 * header (two words) just before each page-aligned field, so a field of whole pages spills into one
 * more page, and the gap left before the alignment is not reused by the next field of the same size.
 * Checked against the server's RSS: 64 KiB messages take 96 KiB per slot, 1 MiB ones 1056 KiB. */
static size_t slot_cost(size_t msg_size, size_t page)
{
	size_t cost = 0;

	for (int k = 0; k < MESSAGE_FIELDS; k++)
		cost += (message_field_len(msg_size, k) + 2 * sizeof(size_t) + page - 1) / page * page;
	return cost;
}

/* Reserve budget for a ring of up to want slots of cost bytes each: as many as fit in what is
 * left, never fewer than A3_SLOTS_MIN (see the header). Returns the number of slots; the caller
 * holds nslots * cost bytes until budget_release(). */
static unsigned budget_reserve(unsigned want, size_t cost)
{
	size_t used = atomic_load_explicit(&ring_budget_used, memory_order_relaxed);
	unsigned n;

	do {
		size_t left = used < A3_RING_BUDGET ? A3_RING_BUDGET - used : 0;
		size_t fit = left / cost;
		n = fit < want ? (unsigned)fit : want;
		if (n < A3_SLOTS_MIN)
			n = A3_SLOTS_MIN;
		/* on failure used is reloaded: another connection reserved or released meanwhile */
	} while (!atomic_compare_exchange_weak_explicit(&ring_budget_used, &used, used + (size_t)n * cost,
							memory_order_relaxed, memory_order_relaxed));
	return n;
}

static void budget_release(size_t bytes)
{
	atomic_fetch_sub_explicit(&ring_budget_used, bytes, memory_order_relaxed);
}

/* Free the slots allocated so far and give the ring's reservation back to the budget. */
static void free_ring(struct a3_conn *s)
{
	for (unsigned k = 0; k < s->nslots; k++)
		message_free(&s->slot[k].msg);
	free(s->slot);
	budget_release(s->reserved);
	free(s);
}

static int a3_conn_init(struct conn *c)
{
	int one = 1;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct a3_conn *s;

	if (setsockopt(c->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) < 0) {
		/* without it MSG_ZEROCOPY would be silently ignored: refuse to measure a fake A3 */
		conn_fail(c, "setsockopt(SO_ZEROCOPY): %s", strerror(errno));
		return -1;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		conn_fail(c, "out of memory");
		return -1;
	}
	size_t cost = slot_cost(c->msg_size, page);
	unsigned granted = budget_reserve(ring_slots(c->msg_size, page), cost);
	s->reserved = (size_t)granted * cost; /* from here on free_ring() returns it */
	if (!(s->slot = calloc(granted, sizeof(*s->slot)))) {
		conn_fail(c, "out of memory");
		free_ring(s);
		return -1;
	}
	for (; s->nslots < granted; s->nslots++) {
		struct a3_slot *sl = &s->slot[s->nslots];
		if (message_alloc(&sl->msg, c->msg_size, page) < 0) {
			conn_fail(c, "cannot allocate %u page-aligned %zu-byte messages", granted, c->msg_size);
			free_ring(s);
			return -1;
		}
		message_iovec(&sl->msg, sl->iov);
	}
	c->impl = s;
	return 0;
}

static int a3_send_message(struct conn *c)
{
	struct a3_conn *s = c->impl;
	struct a3_slot *sl = &s->slot[s->next_slot];
	struct iovec rest[MESSAGE_FIELDS];
	struct msghdr mh = {.msg_iov = sl->iov, .msg_iovlen = MESSAGE_FIELDS};
	size_t left = c->msg_size;
	unsigned idle_enobufs = 0;

	if (sl->pending > 0 && wait_completions(c, sl, 0) < 0)
		return -1;
	s->next_slot = (s->next_slot + 1) % s->nslots;
	sl->first_id = sl->end_id = s->next_id;

	while (left > 0) {
		ssize_t r = sendmsg(c->fd, &mh, MSG_ZEROCOPY | MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ENOBUFS)
				return -1;
			/* back-pressure: free notification memory, waiting for completions if some are due */
			c->st.enobufs++;
			if (c->st.zc_completions < c->st.zc_sends) {
				if (wait_completions(c, NULL, c->st.zc_completions + 1) < 0)
					return -1;
			} else if (++idle_enobufs > 1000) {
				errno = ENOBUFS; /* nothing of ours in flight: the limit is held elsewhere */
				return -1;
			} else {
				sleep_ns(1000000);
			}
			continue;
		}
		s->next_id++;
		sl->end_id = s->next_id;
		sl->pending++;
		c->st.zc_sends++;
		c->st.send_calls++;
		c->st.bytes += (uint64_t)r;
		left -= (size_t)r;
		if (++s->since_drain >= A3_DRAIN_EVERY) {
			s->since_drain = 0;
			if (drain(c) < 0)
				return -1;
		}
		if (left > 0)
			msghdr_resume(&mh, sl->iov, rest, (size_t)r);
	}
	return 0;
}

static int a3_conn_finish(struct conn *c)
{
	struct a3_conn *s = c->impl;
	int rc = 0;

	if (c->st.zc_completions < c->st.zc_sends)
		rc = wait_completions(c, NULL, c->st.zc_sends);
	/* On failure the buffers are freed anyway: the kernel holds its own page references, so this
	 * is memory-safe, and the connection is ending in error. */
	free_ring(s);
	c->impl = NULL;
	return rc;
}

static const struct send_strategy a3 = {
	.name = "a3",
	.impl_id = IMPL_A3,
	.conn_init = a3_conn_init,
	.send_message = a3_send_message,
	.conn_finish = a3_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &a3);
}
