/* Everything the servers share: flags, listening, one thread per accepted client, the handshake,
 * the congestion control and working set of each connection, the throughput and latency loops,
 * stop handling and the totals they print.
 *
 * What differs between the implementations is only how one message goes out: each server file
 * fills a struct send_strategy and calls server_main(). This file knows none of them by name.
 */
#ifndef COPYLAB_SERVER_COMMON_H
#define COPYLAB_SERVER_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "ring.h"

/* Counters of one connection; summed over connections for the server's JSON. Which of them an
 * implementation counts is in its registry entry (registry.def); the others stay 0. */
struct conn_stats {
	uint64_t bytes;            /* payload bytes the kernel accepted (sum of send return values) */
	uint64_t messages;         /* whole messages sent */
	uint64_t send_calls;       /* calls that sent data (send, sendmsg, submissions...) */
	uint64_t user_copy_bytes;  /* bytes copied in user space to build messages */
	uint64_t zc_sends;         /* zero-copy send calls that returned > 0 */
	uint64_t zc_completions;   /* zero-copy send calls whose completion arrived */
	uint64_t zc_copied;        /* ... of which the kernel reported it copied after all */
	uint64_t enobufs;          /* send calls refused for back-pressure (ENOBUFS) */
};

struct conn {
	int fd;
	size_t msg_size;
	int mode;
	struct conn_stats st;
	struct ring ring;    /* the distinct messages this connection cycles through */
	unsigned ring_messages; /* how many (kept after the ring is freed, for the totals) */
	char congestion[CONGESTION_NAME_MAX]; /* its TCP congestion control, as the kernel reports it */
	void *impl;          /* the strategy's per-connection state */
	char peer[64];       /* "ADDR:PORT" of the client */
	char error[256];     /* why the connection ended abnormally; empty if it did not */
	int served;          /* handshake accepted */
	int initialised;     /* conn_init succeeded: conn_finish is due */
	int refused;         /* handshake refused */
	int malformed;       /* the client sent something the protocol does not allow */
	int64_t start_ns, end_ns;
	struct conn *prev, *next;
};

struct send_strategy {
	const char *name;  /* its registry name (registry.def) */
	int page_aligned;  /* its messages' fields start on page boundaries */
	/* Prepare c->impl (buffers, socket options); c->ring is ready. 0, or -1 after conn_fail(). */
	int (*conn_init)(struct conn *c);
	/* Hot path: send the ring's next message whole, resuming partial sends; count bytes and calls
	 * in c->st. No allocation, no formatting. 0, or -1 with errno set. */
	int (*send_message)(struct conn *c);
	/* After the last message (also after an error): settle in-flight work and free c->impl.
	 * 0, or -1 after conn_fail(). */
	int (*conn_finish)(struct conn *c);
};

/* Record why c failed (the first reason wins). */
void conn_fail(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True once the server was told to stop (SIGINT/SIGTERM); cheap enough for loops. */
int server_stopping(void);

/* Parse flags, serve until SIGINT/SIGTERM, print totals; returns the exit status. */
int server_main(int argc, char **argv, const struct send_strategy *s);

#endif
