/* uring, the control for io_uring itself: A2's message (one sendmsg over the iovec of the 8 fields
 * of the ring's next message), submitted through an io_uring as IORING_OP_SENDMSG instead of the
 * sendmsg() system call. The kernel copies the fields into socket buffers exactly as for A2; what
 * differs is the submission and completion path (io_uring_enter, task work, the CQE), so this is
 * what uring_zc is compared with to tell io_uring's cost from zero-copy's.
 *
 * One submission per message, and its completion is awaited before the next (A2 is synchronous
 * too). MSG_WAITALL makes io_uring itself retry a partial send of a stream socket; a completion
 * that is still short is resumed mid-iovec here, as A2 does. Every CQE is checked: its user_data,
 * its result (a negative errno: -EINTR/-EAGAIN are retried, -ENOBUFS is back-pressure, anything
 * else ends the connection with the error).
 */
/* ldlibs: -luring */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "message.h"
#include "server_common.h"
#include "sockutil.h"
#include "timing.h"
#include "uring_setup.h"

#define URING_ENTRIES 4
#define URING_TAG 0x75726e67 /* the user_data of our one SQE in flight */
#define URING_IDLE_ENOBUFS_MAX 1000 /* 1 ms apart: a second of ENOBUFS with nothing of ours queued */

struct uring_conn {
	struct io_uring ring;
};

static int uring_conn_init(struct conn *c)
{
	struct uring_conn *s = calloc(1, sizeof(*s));

	if (!s) {
		conn_fail(c, "out of memory");
		return -1;
	}
	if (uring_queue_init(c, &s->ring, URING_ENTRIES) < 0) {
		free(s);
		return -1;
	}
	c->impl = s;
	return 0;
}

/* Submit one SENDMSG over mh and wait for its completion: its result (>= 0), or -errno. */
static int submit_sendmsg(struct conn *c, struct uring_conn *s, struct msghdr *mh)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
	struct io_uring_cqe *cqe;
	int rc;

	if (!sqe) /* the ring holds nothing else: this cannot happen unless the ring is corrupt */
		return -EBUSY;
	io_uring_prep_sendmsg(sqe, c->fd, mh, MSG_NOSIGNAL | MSG_WAITALL);
	io_uring_sqe_set_data64(sqe, URING_TAG);
	rc = io_uring_submit(&s->ring);
	if (rc != 1)
		return rc < 0 ? rc : -EIO;
	do
		rc = io_uring_wait_cqe(&s->ring, &cqe);
	while (rc == -EINTR);
	if (rc < 0)
		return rc;
	if (io_uring_cqe_get_data64(cqe) != URING_TAG) {
		conn_fail(c, "io_uring: completion for an unknown request (user_data %llu)",
			  (unsigned long long)io_uring_cqe_get_data64(cqe));
		io_uring_cqe_seen(&s->ring, cqe);
		return -EPROTO;
	}
	rc = cqe->res;
	io_uring_cqe_seen(&s->ring, cqe);
	return rc;
}

static int uring_send_message(struct conn *c)
{
	struct uring_conn *s = c->impl;
	struct ring_slot *sl = ring_next(&c->ring);
	struct iovec rest[MESSAGE_FIELDS];
	struct msghdr mh = {.msg_iov = sl->iov, .msg_iovlen = MESSAGE_FIELDS};
	size_t left = c->msg_size;
	unsigned idle_enobufs = 0;

	while (left > 0) {
		int res = submit_sendmsg(c, s, &mh);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res == -ENOBUFS && ++idle_enobufs <= URING_IDLE_ENOBUFS_MAX) {
			c->st.enobufs++; /* socket memory is short: wait a little and send again */
			sleep_ns(1000000);
			continue;
		}
		if (res <= 0) {
			errno = res == 0 ? EPIPE : -res; /* 0 of a non-empty send: the peer is gone */
			return -1;
		}
		c->st.send_calls++;
		c->st.bytes += (uint64_t)res;
		left -= (size_t)res;
		if (left > 0)
			msghdr_resume(&mh, sl->iov, rest, (size_t)res);
	}
	return 0;
}

static int uring_conn_finish(struct conn *c)
{
	struct uring_conn *s = c->impl;

	io_uring_queue_exit(&s->ring); /* nothing is in flight: every send was awaited */
	free(s);
	c->impl = NULL;
	return 0;
}

static const struct send_strategy uring = {
	.name = "uring",
	.conn_init = uring_conn_init,
	.send_message = uring_send_message,
	.conn_finish = uring_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &uring);
}
