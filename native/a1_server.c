/* A1, the two-copy baseline: every message is serialised into one contiguous buffer (copy 1,
 * in user space, counted in user_copy_bytes), then send() copies it into the kernel's socket
 * buffers (copy 2). The serialised buffer is one per connection, reused, as an application's
 * send buffer is; the fields come from the ring of distinct messages (ring.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "message.h"
#include "server_common.h"

struct a1_conn {
	char *wire; /* the serialised message, rebuilt for every send */
};

static int a1_conn_init(struct conn *c)
{
	struct a1_conn *s = calloc(1, sizeof(*s));

	if (!s || !(s->wire = malloc(c->msg_size))) {
		conn_fail(c, "cannot allocate a %zu-byte send buffer", c->msg_size);
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

	message_serialize(&ring_next(&c->ring)->msg, s->wire);
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

	free(s->wire);
	free(s);
	c->impl = NULL;
	return 0;
}

static const struct send_strategy a1 = {
	.name = "a1",
	.conn_init = a1_conn_init,
	.send_message = a1_send_message,
	.conn_finish = a1_conn_finish,
};

int main(int argc, char **argv)
{
	return server_main(argc, argv, &a1);
}
