/* Everything the three servers share: flags, listening, one thread per accepted client, the
 * handshake, the throughput and latency loops, stop handling and the totals they print.
 *
 * What differs between A1, A2 and A3 is only how one message goes out: each server file fills a
 * struct send_strategy and calls server_main().
 */
#ifndef COPYLAB_SERVER_COMMON_H
#define COPYLAB_SERVER_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Counters of one connection; summed over connections for the server's JSON. */
struct conn_stats {
	uint64_t bytes;            /* payload bytes the kernel accepted (sum of send return values) */
	uint64_t messages;         /* whole messages sent */
	uint64_t send_calls;       /* send/sendmsg calls that returned > 0 */
	uint64_t user_copy_bytes;  /* bytes copied in user space to build messages (A1) */
	uint64_t zc_sends;         /* A3: sendmsg(MSG_ZEROCOPY) calls that returned > 0 */
	uint64_t zc_completions;   /* A3: send calls whose completion arrived */
	uint64_t zc_copied;        /* A3: ... of which the kernel reported SO_EE_CODE_ZEROCOPY_COPIED */
	uint64_t enobufs;          /* A3: sendmsg calls refused with ENOBUFS (back-pressure) */
};

struct conn {
	int fd;
	size_t msg_size;
	int mode;
	struct conn_stats st;
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
	const char *name; /* "a1", "a2", "a3" */
	int impl_id;      /* enum impl_id */
	/* Prepare c->impl (buffers, socket options). 0, or -1 after conn_fail(). */
	int (*conn_init)(struct conn *c);
	/* Hot path: send one whole message, resuming partial sends; count bytes and calls in c->st.
	 * No allocation, no formatting. 0, or -1 with errno set. */
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
