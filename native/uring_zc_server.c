/* uring_zc: io_uring zero-copy send (IORING_OP_SEND_ZC, Linux 6.0+) over registered buffers.
 *
 * Every field of every message of the connection's ring (ring.h) is registered once with the
 * io_uring as a fixed buffer (index slot * 8 + field), so the kernel pins the pages at set-up
 * instead of on every send. A message goes out as a linked chain of 8 SEND_ZC requests, one per
 * field, the first 7 with MSG_MORE (so TCP builds segments across fields as one sendmsg over the
 * iovec would) and all with MSG_WAITALL (io_uring retries a partial send of a stream socket
 * itself). Registered buffers take one request per buffer: SENDMSG_ZC over an iovec cannot use
 * them with liburing 2.3 and kernels before 6.15.
 *
 * Completions follow the kernel selftest io_uring_zerocopy_tx.c and liburing's
 * examples/send-zerocopy.c:
 *  - each request posts a result CQE; IORING_CQE_F_MORE on it says a notification will follow
 *    (check the flag, not the result);
 *  - the notification CQE (IORING_CQE_F_NOTIF, same user_data, never F_MORE) says the kernel is
 *    done with the buffer; with IORING_SEND_ZC_REPORT_USAGE its res carries
 *    IORING_NOTIF_USAGE_ZC_COPIED when the kernel copied after all (always, over veth between
 *    namespaces: local delivery copies, as for MSG_ZEROCOPY);
 *  - a message's buffers are never reused before all their notifications arrived (per slot count
 *    in ring_slot.pending), and every notification is awaited before the connection ends;
 *  - a notification nobody waits for, one with F_MORE, a CQE for a request that is not in flight,
 *    or notifications missing for URING_ZC_STALL_NS without progress end the connection with a
 *    named error: a lost notification must never look like a stall.
 * A short or failed field breaks the chain: the fields after it complete with -ECANCELED and the
 * message resumes from the first byte that was not sent. -EINTR/-EAGAIN are retried; -ENOBUFS is
 * back-pressure (counted in enobufs; notifications are awaited or, with none due, 1 ms passes).
 */
/* ldlibs: -luring */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "message.h"
#include "server_common.h"
#include "timing.h"
#include "uring_setup.h"

/* liburing 2.3 (Debian 12) predates the usage report; the values are the kernel's (6.2+) */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define ZC_ENTRIES 32                    /* SQ entries: a chain of 8 per message */
#define ZC_STALL_NS (10 * 1000000000LL)  /* no notification for this long, some due: a fault */
#define ZC_WAIT_MS 100
#define ZC_IDLE_ENOBUFS_MAX 1000
#define ZC_TAG (1ULL << 63)              /* user_data = ZC_TAG | slot << 4 | field */

struct zc_conn {
	struct io_uring ring;
	int ring_ready;
	uint64_t in_flight; /* notifications due: F_MORE results without their notification yet */
	/* per slot and field: notifications due for requests that sent nothing (a failed send still
	 * gets one); they free the slot but are not completions of a zero-copy send (zc_sends) */
	unsigned char *empty_due;
};

/* What one message's chain of requests did, field by field. */
struct chain {
	unsigned slot;
	int first;                  /* first field of this chain (a resumed message starts later) */
	int got[MESSAGE_FIELDS];    /* its result CQE arrived */
	int res[MESSAGE_FIELDS];    /* bytes sent, or -errno */
	size_t want[MESSAGE_FIELDS];
};

static uint64_t tag(unsigned slot, int field)
{
	return ZC_TAG | (uint64_t)slot << 4 | (uint64_t)field;
}

/* Register every field of every message as a fixed buffer. 0, or -1 after conn_fail(). */
static int register_ring(struct conn *c, struct zc_conn *s)
{
	unsigned nbuf = c->ring.n * MESSAGE_FIELDS;
	struct iovec *iov = calloc(nbuf, sizeof(*iov));
	int rc;

	if (!iov) {
		conn_fail(c, "out of memory");
		return -1;
	}
	for (unsigned k = 0; k < c->ring.n; k++)
		memcpy(&iov[k * MESSAGE_FIELDS], c->ring.slot[k].iov, sizeof(c->ring.slot[k].iov));
	rc = io_uring_register_buffers(&s->ring, iov, nbuf);
	free(iov);
	if (rc < 0) {
		conn_fail(c, "io_uring_register_buffers (%u buffers of %u messages): %s%s", nbuf, c->ring.n,
			  strerror(-rc), rc == -ENOMEM ? " (locked memory: RLIMIT_MEMLOCK without CAP_IPC_LOCK)" : "");
		return -1;
	}
	return 0;
}

static int zc_conn_init(struct conn *c)
{
	struct zc_conn *s = calloc(1, sizeof(*s));

	if (!s) {
		conn_fail(c, "out of memory");
		return -1;
	}
	c->impl = s;
	if (!(s->empty_due = calloc((size_t)c->ring.n * MESSAGE_FIELDS, 1))) {
		conn_fail(c, "out of memory");
		goto fail;
	}
	if (uring_queue_init(c, &s->ring, ZC_ENTRIES) < 0)
		goto fail;
	s->ring_ready = 1;
	if (uring_require_op(c, &s->ring, IORING_OP_SEND_ZC, "IORING_OP_SEND_ZC", "6.0") < 0 ||
	    register_ring(c, s) < 0)
		goto fail;
	return 0;
fail:
	if (s->ring_ready)
		io_uring_queue_exit(&s->ring);
	free(s->empty_due);
	free(s);
	c->impl = NULL;
	return -1;
}

/* A notification CQE: checked as the selftest checks it, then credited to its slot. 0, or -1
 * after conn_fail() with errno EPROTO. */
static int take_notification(struct conn *c, struct zc_conn *s, const struct io_uring_cqe *cqe)
{
	uint64_t data = io_uring_cqe_get_data64(cqe);
	unsigned slot = (unsigned)((data & ~ZC_TAG) >> 4), field = (unsigned)(data & 0xf);

	if (cqe->flags & IORING_CQE_F_MORE) {
		conn_fail(c, "io_uring zero-copy notification: invalid flags 0x%x (F_MORE on a notification)",
			  cqe->flags);
	} else if (!(data & ZC_TAG) || slot >= c->ring.n || field >= MESSAGE_FIELDS ||
		   c->ring.slot[slot].pending == 0 || s->in_flight == 0) {
		conn_fail(c, "io_uring zero-copy notification mismatch: user_data 0x%llx has no send in flight",
			  (unsigned long long)data);
	} else {
		unsigned char *empty = &s->empty_due[(size_t)slot * MESSAGE_FIELDS + field];
		c->ring.slot[slot].pending--;
		s->in_flight--;
		if (*empty > 0) { /* the notification of a send that failed: nothing was in flight */
			(*empty)--;
			return 0;
		}
		c->st.zc_completions++;
		if ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED)
			c->st.zc_copied++;
		return 0;
	}
	errno = EPROTO;
	return -1;
}

/* A result CQE of the chain in flight: recorded, and counted when it sent bytes. 0, or -1 after
 * conn_fail() with errno EPROTO when it belongs to no request of the chain. */
static int take_result(struct conn *c, struct zc_conn *s, struct chain *ch, const struct io_uring_cqe *cqe)
{
	uint64_t data = io_uring_cqe_get_data64(cqe);
	int field = (int)(data & 0xf);

	if (data != tag(ch->slot, field) || field < ch->first || field >= MESSAGE_FIELDS || ch->got[field]) {
		conn_fail(c, "io_uring: completion for a request that is not in flight (user_data 0x%llx)",
			  (unsigned long long)data);
		errno = EPROTO;
		return -1;
	}
	ch->got[field] = 1;
	ch->res[field] = cqe->res;
	if (cqe->flags & IORING_CQE_F_MORE) {
		c->ring.slot[ch->slot].pending++;
		s->in_flight++;
		if (cqe->res <= 0)
			s->empty_due[(size_t)ch->slot * MESSAGE_FIELDS + (size_t)field]++;
	}
	if (cqe->res > 0) {
		c->st.send_calls++;
		c->st.zc_sends++;
		c->st.bytes += (uint64_t)cqe->res;
	}
	return 0;
}

/* Wait up to ZC_WAIT_MS for the next CQE and take it (ch: the chain whose results are due, or
 * NULL). 1 if one was taken, 0 on timeout, -1 with errno set (c->error filled on a fault). */
static int take_next(struct conn *c, struct zc_conn *s, struct chain *ch)
{
	struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = ZC_WAIT_MS * 1000000LL};
	struct io_uring_cqe *cqe;
	int rc = io_uring_wait_cqe_timeout(&s->ring, &cqe, &ts);

	if (rc == -ETIME || rc == -EINTR)
		return 0;
	if (rc < 0) {
		errno = -rc;
		conn_fail(c, "io_uring_wait_cqe: %s", strerror(-rc));
		return -1;
	}
	if (cqe->flags & IORING_CQE_F_NOTIF)
		rc = take_notification(c, s, cqe);
	else if (ch)
		rc = take_result(c, s, ch, cqe);
	else {
		conn_fail(c, "io_uring: a send completed while none was in flight (user_data 0x%llx, res %d)",
			  (unsigned long long)io_uring_cqe_get_data64(cqe), cqe->res);
		errno = EPROTO;
		rc = -1;
	}
	io_uring_cqe_seen(&s->ring, cqe);
	return rc < 0 ? -1 : 1;
}

/* Block until slot has no notification due (slot != NULL), or until at most target are due in
 * all. 0, or -1 with errno set and c->error naming the fault (ETIMEDOUT: notifications lost). */
static int wait_notifications(struct conn *c, struct zc_conn *s, const struct ring_slot *slot, uint64_t target)
{
	int64_t last_progress = now_ns();

	while (slot ? slot->pending > 0 : s->in_flight > target) {
		int rc = take_next(c, s, NULL);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			last_progress = now_ns();
		} else if (now_ns() - last_progress > ZC_STALL_NS) {
			conn_fail(c, "%llu io_uring zero-copy notifications still missing after %lld s without progress",
				  (unsigned long long)s->in_flight, ZC_STALL_NS / 1000000000LL);
			errno = ETIMEDOUT;
			return -1;
		}
	}
	return 0;
}

/* Queue the chain of fields [ch->first, 8) of slot ch->slot, the first from offset off, and
 * submit it. 0, or -1 with errno set. */
static int submit_chain(struct conn *c, struct zc_conn *s, struct chain *ch, size_t off)
{
	struct ring_slot *sl = &c->ring.slot[ch->slot];
	int n = MESSAGE_FIELDS - ch->first;

	for (int f = ch->first; f < MESSAGE_FIELDS; f++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		size_t skip = f == ch->first ? off : 0;
		int more = f + 1 < MESSAGE_FIELDS ? MSG_MORE : 0;
		if (!sqe) { /* ZC_ENTRIES holds a whole chain and chains are awaited one at a time */
			errno = EBUSY;
			return -1;
		}
		ch->want[f] = sl->iov[f].iov_len - skip;
		ch->got[f] = 0;
		io_uring_prep_send_zc_fixed(sqe, c->fd, (char *)sl->iov[f].iov_base + skip, ch->want[f],
					    MSG_NOSIGNAL | MSG_WAITALL | more, IORING_SEND_ZC_REPORT_USAGE,
					    ch->slot * MESSAGE_FIELDS + (unsigned)f);
		io_uring_sqe_set_data64(sqe, tag(ch->slot, f));
		if (more)
			sqe->flags |= IOSQE_IO_LINK;
	}
	int rc = io_uring_submit(&s->ring);
	if (rc != n) {
		errno = rc < 0 ? -rc : EIO;
		return -1;
	}
	return 0;
}

/* Take CQEs until every request of the chain has its result. 0, or -1 with errno set. */
static int collect_chain(struct conn *c, struct zc_conn *s, struct chain *ch)
{
	for (int f = ch->first; f < MESSAGE_FIELDS;) {
		if (ch->got[f]) {
			f++;
			continue;
		}
		if (take_next(c, s, ch) < 0)
			return -1;
	}
	return 0;
}

/* After a chain: the first field not sent whole, and how far it got (*sent); MESSAGE_FIELDS when
 * the message is complete. A field sent after an incomplete one would have broken the stream. */
static int first_incomplete(struct conn *c, const struct chain *ch, size_t *sent)
{
	for (int f = ch->first; f < MESSAGE_FIELDS; f++) {
		if (ch->res[f] >= 0 && (size_t)ch->res[f] == ch->want[f])
			continue;
		for (int g = f + 1; g < MESSAGE_FIELDS; g++)
			if (ch->res[g] > 0)
				conn_fail(c, "io_uring: field %d was sent after field %d had failed: stream order lost", g, f);
		*sent = ch->res[f] > 0 ? (size_t)ch->res[f] : 0;
		return f;
	}
	return MESSAGE_FIELDS;
}

/* A chain stopped at a field with result res: 0 to resend from there, or -1 with errno set. */
static int handle_stop(struct conn *c, struct zc_conn *s, int res, unsigned *idle_enobufs)
{
	if (c->error[0]) {
		errno = EPROTO;
		return -1;
	}
	if (res >= 0 || res == -EINTR || res == -EAGAIN || res == -ECANCELED)
		return 0; /* short (or cancelled behind one): send the rest */
	if (res != -ENOBUFS) {
		errno = -res;
		return -1;
	}
	c->st.enobufs++; /* back-pressure: free memory by letting notifications arrive */
	if (s->in_flight > 0)
		return wait_notifications(c, s, NULL, s->in_flight - 1);
	if (++*idle_enobufs > ZC_IDLE_ENOBUFS_MAX) {
		errno = ENOBUFS; /* nothing of ours in flight: the limit is held elsewhere */
		return -1;
	}
	sleep_ns(1000000);
	return 0;
}

static int zc_send_message(struct conn *c)
{
	struct zc_conn *s = c->impl;
	struct chain ch = {.slot = c->ring.next, .first = 0};
	size_t off = 0;
	unsigned idle_enobufs = 0;

	if (c->ring.slot[ch.slot].pending > 0 && wait_notifications(c, s, &c->ring.slot[ch.slot], 0) < 0)
		return -1;
	ring_next(&c->ring);
	for (;;) {
		size_t sent;
		if (submit_chain(c, s, &ch, off) < 0 || collect_chain(c, s, &ch) < 0)
			return -1;
		int f = first_incomplete(c, &ch, &sent);
		if (f == MESSAGE_FIELDS)
			return 0;
		if (handle_stop(c, s, ch.res[f], &idle_enobufs) < 0)
			return -1;
		if (sent > 0 || f > ch.first)
			idle_enobufs = 0; /* progress */
		off = (f == ch.first ? off : 0) + sent; /* from the first byte of field f not sent */
		ch.first = f;
	}
}

static int zc_conn_finish(struct conn *c)
{
	struct zc_conn *s = c->impl;
	int rc = 0;

	if (s->in_flight > 0)
		rc = wait_notifications(c, s, NULL, 0);
	/* on failure the ring is freed anyway (server_common): the registration pins the pages and
	 * io_uring_queue_exit() waits for the kernel to drop them, so this is memory-safe */
	io_uring_unregister_buffers(&s->ring);
	io_uring_queue_exit(&s->ring);
	free(s->empty_due);
	free(s);
	c->impl = NULL;
	return rc;
}

static const struct send_strategy uring_zc = {
	.name = "uring_zc",
	.page_aligned = 1,
	.conn_init = zc_conn_init,
	.send_message = zc_send_message,
	.conn_finish = zc_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &uring_zc);
}
