/* A2, one copy: the iovec over the 8 fields is built once per connection (the pre-registered
 * buffer) and each message is one sendmsg(); the only copy left is the kernel's, from the fields
 * into socket buffers. A partial send resumes mid-iovec on a copy, so the registered array stays
 * intact for the next message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "message.h"
#include "protocol.h"
#include "server_common.h"
#include "sockutil.h"

struct a2_conn {
	struct message msg;
	struct iovec iov[MESSAGE_FIELDS]; /* registered once; never modified */
};

static int a2_conn_init(struct conn *c)
{
	struct a2_conn *s = calloc(1, sizeof(*s));

	if (!s || message_alloc(&s->msg, c->msg_size, 0) < 0) {
		conn_fail(c, "cannot allocate a %zu-byte message", c->msg_size);
		free(s);
		return -1;
	}
	message_iovec(&s->msg, s->iov);
	c->impl = s;
	return 0;
}

static int a2_send_message(struct conn *c)
{
	struct a2_conn *s = c->impl;
	struct iovec rest[MESSAGE_FIELDS];
	/* the kernel only reads the iovec array, so the first attempt can use the registered one */
	struct msghdr mh = {.msg_iov = s->iov, .msg_iovlen = MESSAGE_FIELDS};
	size_t left = c->msg_size;

	while (left > 0) {
		ssize_t r = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->st.send_calls++;
		c->st.bytes += (uint64_t)r;
		left -= (size_t)r;
		if (left > 0)
			msghdr_resume(&mh, s->iov, rest, (size_t)r);
	}
	return 0;
}

static int a2_conn_finish(struct conn *c)
{
	struct a2_conn *s = c->impl;

	message_free(&s->msg);
	free(s);
	c->impl = NULL;
	return 0;
}

static const struct send_strategy a2 = {
	.name = "a2",
	.impl_id = IMPL_A2,
	.conn_init = a2_conn_init,
	.send_message = a2_send_message,
	.conn_finish = a2_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &a2);
}
