/* One connection of the client: connect, handshake, and how a failure is recorded. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "protocol.h"
#include "sockutil.h"
#include "timing.h"

void worker_fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	if (w->failed)
		return;
	w->failed = 1;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

void fail_io(struct worker *w, const char *what, ssize_t r)
{
	if (r == 0)
		worker_fail(w, "%s: the server closed the connection", what);
	else if (errno == EAGAIN || errno == EWOULDBLOCK)
		worker_fail(w, "%s: nothing from the server for %.0f s", what, RECV_TIMEOUT_S);
	else
		worker_fail(w, "%s: %s", what, strerror(errno));
}

/* The reply to our hello: a copylab server that accepts the run. 0, or -1 after worker_fail(). */
static int check_reply(struct worker *w, const struct hello *h)
{
	const struct client_options *o = &w->run->opts;
	unsigned char rbuf[REPLY_SIZE];
	struct reply r;
	/* the server builds the connection's ring before it answers: --setup-timeout when that is large */
	ssize_t n = recv_all(w->fd, rbuf, REPLY_SIZE, now_ns() + (int64_t)(o->setup_timeout_s * 1e9));

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		worker_fail(w, "handshake: the peer at %s port %u did not answer within %.0f s (not a copylab server?)",
			    o->connect, o->port, o->setup_timeout_s);
		return -1;
	}
	if (n != REPLY_SIZE) {
		fail_io(w, "handshake", n < 0 ? -1 : 0);
		return -1;
	}
	reply_decode(rbuf, &r);
	if (r.magic != PROTO_MAGIC) {
		worker_fail(w, "handshake: the peer at %s port %u is not a copylab server", o->connect, o->port);
		return -1;
	}
	if (r.status != STATUS_OK) {
		char why[160];
		describe_refusal(h, &r, why, sizeof(why));
		worker_fail(w, "the server refused the connection: %s", why);
		return -1;
	}
	w->impl = r.impl;
	return 0;
}

int connect_and_handshake(struct worker *w)
{
	const struct client_options *o = &w->run->opts;
	unsigned char hbuf[HELLO_SIZE];
	struct hello h = {.magic = PROTO_MAGIC, .version = PROTO_VERSION, .mode = (uint16_t)o->mode,
			  .msg_size = o->msg_size};

	w->fd = connect_to(&o->ep, CONNECT_TIMEOUT_S, o->congestion);
	if (w->fd < 0) {
		worker_fail(w, "connect to %s port %u: %s", o->connect, o->port, strerror(errno));
		return -1;
	}
	get_congestion(w->fd, w->congestion, sizeof(w->congestion));
	if (o->mode == MODE_LATENCY)
		set_nodelay(w->fd); /* requests go out at once, not after the previous ACK (Nagle) */
	hello_encode(&h, hbuf);
	if (send_all(w->fd, hbuf, HELLO_SIZE) < 0) {
		worker_fail(w, "handshake: send: %s", strerror(errno));
		return -1;
	}
	if (check_reply(w, &h) < 0)
		return -1;
	set_recv_timeout(w->fd, RECV_TIMEOUT_S);
	return 0;
}
