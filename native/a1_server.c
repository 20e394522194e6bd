/* A1, the two-copy baseline: every message is serialised into one contiguous buffer (copy 1,
 * in user space, counted in user_copy_bytes), then send() copies it into the kernel's socket
 * buffers (copy 2). */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "message.h"
#include "protocol.h"
#include "server_common.h"

struct a1_conn {
	struct message msg;
	char *wire; /* the serialised message, rebuilt for every send */
};

static int a1_conn_init(struct conn *c)
{
	struct a1_conn *s = calloc(1, sizeof(*s));

	if (!s || message_alloc(&s->msg, c->msg_size, 0) < 0 || !(s->wire = malloc(c->msg_size))) {
		conn_fail(c, "cannot allocate a %zu-byte message", c->msg_size);
		if (s)
			message_free(&s->msg);
		free(s);
		return -1;
	}
	c->impl = s;
	return 0;
}

static int a1_send_message(struct conn *c)
{
	struct a1_conn *s = c->impl;
	size_t off = 0;

	message_serialize(&s->msg, s->wire);
	c->st.user_copy_bytes += c->msg_size;
	while (off < c->msg_size) {
		ssize_t r = send(c->fd, s->wire + off, c->msg_size - off, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->st.send_calls++;
		c->st.bytes += (uint64_t)r;
		off += (size_t)r;
	}
	return 0;
}

static int a1_conn_finish(struct conn *c)
{
	struct a1_conn *s = c->impl;

	message_free(&s->msg);
	free(s->wire);
	free(s);
	c->impl = NULL;
	return 0;
}

static const struct send_strategy a1 = {
	.name = "a1",
	.impl_id = IMPL_A1,
	.conn_init = a1_conn_init,
	.send_message = a1_send_message,
	.conn_finish = a1_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &a1);
}
