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
 *  - a message buffer is never reused while in flight: each message of the ring remembers the
 *    ids of the calls that sent it, and is sent again only after all of those completed. At the
 *    end every completion is awaited before the buffers are freed.
 * The messages come from the connection's ring (ring.h), whose size the working set sets the same for
 * every implementation; at least RING_MESSAGES_MIN are in it, so some are always free to send.
 * A notification that is not what the kernel documents (truncated control data, another origin,
 * a non-zero ee_errno) ends the connection with a named error, as the selftest does: a lost or
 * garbled notification must not show up later as a stall. */
#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which needs struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "message.h"
#include "server_common.h"
#include "sockutil.h"
#include "timing.h"

#define A3_DRAIN_EVERY 32
/* Completions come when the peer has ACKed the data (or the connection died and the queue was
 * purged): this long without any is a fault, not back-pressure. */
#define A3_STALL_NS (10 * 1000000000LL)
#define A3_POLL_MS 100

struct a3_conn {
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
	for (unsigned k = 0; k < c->ring.n; k++) {
		struct ring_slot *sl = &c->ring.slot[k];
		uint64_t a = sl->first_id > lo ? sl->first_id : lo;
		uint64_t b = sl->end_id < hi_end ? sl->end_id : hi_end;
		if (a < b)
			sl->pending -= (b - a) < sl->pending ? (b - a) : sl->pending;
	}
}

/* One notification's control message, checked as the kernel selftest checks it. 0, or -1 with
 * errno EPROTO and c->error naming what was wrong. */
static int take_notification(struct conn *c, struct a3_conn *s, const struct msghdr *mh)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);
	struct sock_extended_err serr;

	if (mh->msg_flags & MSG_CTRUNC) {
		conn_fail(c, "zerocopy notification: control data truncated");
	} else if (!cm) {
		conn_fail(c, "zerocopy notification: no control message");
	} else if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
		     (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR))) {
		conn_fail(c, "zerocopy notification: unexpected control message %d.%d", cm->cmsg_level,
			  cm->cmsg_type);
	} else {
		memcpy(&serr, CMSG_DATA(cm), sizeof(serr));
		if (serr.ee_origin != SO_EE_ORIGIN_ZEROCOPY)
			conn_fail(c, "zerocopy notification: wrong origin %u", serr.ee_origin);
		else if (serr.ee_errno != 0)
			conn_fail(c, "zerocopy notification: error %u (%s)", serr.ee_errno, strerror((int)serr.ee_errno));
		else {
			account(c, s, serr.ee_info, serr.ee_data, (serr.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0);
			return 0;
		}
	}
	errno = EPROTO;
	return -1;
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
		if (take_notification(c, s, &mh) < 0)
			return -1;
	}
	return (int64_t)(c->st.zc_completions - before);
}

/* Block until slot has no call in flight (slot != NULL), or until at least min_completions
 * completions were counted in total. 0, or -1 with errno set and c->error filled. */
static int wait_completions(struct conn *c, const struct ring_slot *slot, uint64_t min_completions)
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

static int a3_conn_init(struct conn *c)
{
	int one = 1;
	struct a3_conn *s;

	if (setsockopt(c->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) < 0) {
		/* without it MSG_ZEROCOPY would be silently ignored: refuse to measure a fake A3 */
		conn_fail(c, "setsockopt(SO_ZEROCOPY): %s", strerror(errno));
		return -1;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		conn_fail(c, "out of memory");
		return -1;
	}
	c->impl = s;
	return 0;
}

static int a3_send_message(struct conn *c)
{
	struct a3_conn *s = c->impl;
	struct ring_slot *sl = &c->ring.slot[c->ring.next];
	struct iovec rest[MESSAGE_FIELDS];
	struct msghdr mh = {.msg_iov = sl->iov, .msg_iovlen = MESSAGE_FIELDS};
	size_t left = c->msg_size;
	unsigned idle_enobufs = 0;

	if (sl->pending > 0 && wait_completions(c, sl, 0) < 0)
		return -1;
	ring_next(&c->ring);
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
	/* On failure the ring is freed anyway (server_common): the kernel holds its own page
	 * references, so this is memory-safe, and the connection is ending in error. */
	free(s);
	c->impl = NULL;
	return rc;
}

static const struct send_strategy a3 = {
	.name = "a3",
	.page_aligned = 1,
	.conn_init = a3_conn_init,
	.send_message = a3_send_message,
	.conn_finish = a3_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &a3);
}
