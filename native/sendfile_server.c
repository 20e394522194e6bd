/* sendfile: the connection's ring of messages (ring.h) is laid out once, at set-up, in a memfd
 * (a tmpfs file: its pages are page-cache pages), message k at offset k * msg_size; each message
 * is then one sendfile(2) of its msg_size bytes from that offset. sendfile splices page-cache pages
 * into the socket: the kernel takes references on them (MSG_SPLICE_PAGES) instead of copying the
 * payload from user memory, and no notification is needed because the file is never written
 * again while the connection lives. This is what iperf3 -Z measures.
 *
 * The lay-out is a kernel copy (pwritev of the 8 fields), once per connection before the client's
 * clock starts; it is not counted in user_copy_bytes (no user-space copy) and not in the window.
 * A partial sendfile resumes from the file offset it stopped at; EINTR is retried.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "message.h"
#include "server_common.h"
#include "sockutil.h"

struct sendfile_conn {
	int fd; /* the memfd holding the ring's messages back to back */
};

/* Write message sl at offset off of fd (all of it, resuming partial writes as a partial sendmsg
 * is resumed). 0, or -1 with errno. */
static int lay_out(int fd, const struct ring_slot *sl, off_t off)
{
	struct iovec rest[MESSAGE_FIELDS];
	struct msghdr mh = {.msg_iov = (struct iovec *)sl->iov, .msg_iovlen = MESSAGE_FIELDS};
	size_t left = message_total(&sl->msg);

	while (left > 0) {
		ssize_t w = pwritev(fd, mh.msg_iov, (int)mh.msg_iovlen, off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		off += w;
		left -= (size_t)w;
		if (left > 0)
			msghdr_resume(&mh, sl->iov, rest, (size_t)w);
	}
	return 0;
}

static int sendfile_conn_init(struct conn *c)
{
	struct sendfile_conn *s = calloc(1, sizeof(*s));
	off_t size = (off_t)c->ring.n * (off_t)c->msg_size;

	if (!s) {
		conn_fail(c, "out of memory");
		return -1;
	}
	s->fd = memfd_create("copylab-sendfile", MFD_CLOEXEC);
	if (s->fd < 0) {
		conn_fail(c, "memfd_create: %s", strerror(errno));
		free(s);
		return -1;
	}
	if (ftruncate(s->fd, size) < 0) {
		conn_fail(c, "ftruncate(memfd, %lld): %s", (long long)size, strerror(errno));
		goto fail;
	}
	for (unsigned k = 0; k < c->ring.n; k++) {
		if (lay_out(s->fd, &c->ring.slot[k], (off_t)k * (off_t)c->msg_size) < 0) {
			conn_fail(c, "writing message %u into the memfd: %s", k, strerror(errno));
			goto fail;
		}
	}
	c->impl = s;
	return 0;
fail:
	close(s->fd);
	free(s);
	return -1;
}

static int sendfile_send_message(struct conn *c)
{
	struct sendfile_conn *s = c->impl;
	off_t off = (off_t)c->ring.next * (off_t)c->msg_size;
	size_t left = c->msg_size;

	ring_next(&c->ring);
	while (left > 0) {
		ssize_t r = sendfile(c->fd, s->fd, &off, left);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) { /* the file ends before the message: it was truncated under us */
			conn_fail(c, "sendfile: the memfd ended at offset %lld, inside a message", (long long)off);
			errno = EIO;
			return -1;
		}
		c->st.send_calls++;
		c->st.bytes += (uint64_t)r;
		left -= (size_t)r;
	}
	return 0;
}

static int sendfile_conn_finish(struct conn *c)
{
	struct sendfile_conn *s = c->impl;

	/* the socket may still reference the file's pages: they stay valid after close (refcounted) */
	close(s->fd);
	free(s);
	c->impl = NULL;
	return 0;
}

static const struct send_strategy sendfile_strategy = {
	.name = "sendfile",
	.conn_init = sendfile_conn_init,
	.send_message = sendfile_send_message,
	.conn_finish = sendfile_conn_finish,
};

int main(int argc, char **argv)
{
	/* a memfd past RLIMIT_FSIZE must fail its connection (EFBIG), not kill the server */
	signal(SIGXFSZ, SIG_IGN);
	return server_main(argc, argv, &sendfile_strategy);
}
