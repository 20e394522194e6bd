/* The client, split by concern as neper is: this header holds what the modules share.
 *   client.c        flags, threads, the start gate, the window (fixed or steady), the exit status
 *   client_flow.c   one connection: connect, handshake, failures
 *   client_recv.c   the receive loops (throughput stream, latency round trips)
 *   client_stats.c  per-interval counts, the steady-state test, the summary and its output
 */
#ifndef COPYLAB_CLIENT_H
#define COPYLAB_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "message.h"
#include "options.h"

#define PROG "client"
#define RECV_TIMEOUT_S 30.0 /* a server silent this long is broken, not slow */
#define CONNECT_TIMEOUT_S 5.0
#define RTT_INITIAL 4096

/* What the workers and the main thread share for one round of a run (--rounds: each round a fresh
 * set of --threads connections with its own warm-up and its share of the window). */
struct run {
	struct client_options opts;
	char *expected;             /* one message of pattern */
	int64_t t_start;            /* every worker starts here */
	/* the measured window [t_warm_end, t_end): fixed from the flags, or opened by the steady-state
	 * test; until it opens both are INT64_MAX, so everything received counts as warm-up */
	_Atomic int64_t t_warm_end;
	_Atomic int64_t t_end;
	const char *warmup_end;     /* what ended the warm-up: "fixed", "steady" or "bound" */
	double window_s;            /* this round's window: --duration split over --rounds */
	int64_t interval_ns;        /* length of one reporting interval */
	unsigned nbins;             /* intervals from t_start to the latest possible end of the window */
};

/* One connection's counts per interval since t_start (written by its worker, read by the main
 * thread while the run goes on: relaxed atomics, each on the worker's own memory). */
struct bins {
	_Atomic uint64_t *bytes;    /* payload bytes received */
	_Atomic uint64_t *rtts;     /* latency mode: round trips completed */
	_Atomic uint64_t *rtt_ns;   /* ... and their summed duration */
};

struct worker {
	pthread_t tid;
	unsigned idx;
	int fd;
	char *buf;
	size_t buf_len;
	struct stream_check check;
	struct run *run;
	struct bins bins;
	int impl;                     /* the server's registry id, from the handshake */
	char congestion[CONGESTION_NAME_MAX];
	uint64_t bytes, messages;     /* measured window */
	uint64_t recv_calls;          /* recv() calls that returned data in the window */
	uint64_t mapped_bytes;        /* zerocopy: bytes of the window mapped (TCP_ZEROCOPY_RECEIVE) */
	uint64_t copied_bytes;        /* bytes of the window the kernel copied to user memory */
	void *zc_map;                 /* zerocopy: the socket's mapping, zc_len bytes */
	size_t zc_len;
	unsigned rcv_mss;             /* the connection's receive MSS (TCP_INFO), read at the end */
	uint64_t total_bytes;         /* everything received: warm-up, window, drain */
	int64_t window_start_ns;      /* -1: nothing measured */
	int64_t window_end_ns;
	uint64_t *rtt_ns;             /* latency mode: one sample per measured round trip */
	size_t nrtt, cap;
	int failed;                   /* could not complete the run; err says why */
	char err[256];
};

/* client_flow.c */
void worker_fail(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fail_io(struct worker *w, const char *what, ssize_t r);
int connect_and_handshake(struct worker *w);

/* client_recv.c */
void throughput_run(struct worker *w);
void latency_run(struct worker *w);

/* client_stats.c */
void run_intervals_init(struct run *run);
int bins_alloc(struct bins *b, unsigned nbins, int latency);
void bins_free(struct bins *b);
/* Count into the interval holding t (nothing beyond the last). */
void bins_add_bytes(struct worker *w, int64_t t, uint64_t bytes);
void bins_add_rtt(struct worker *w, int64_t t, uint64_t ns);
/* 1 when the STEADY_INTERVALS intervals before interval k (all workers together) are steady. */
int steady_before(struct worker *ws, unsigned n, unsigned k);
/* Merge the workers' counts and print the result (--json or key=value); 0, or -1 out of memory. */
int report_run(struct worker *ws, unsigned n, int *verified, uint64_t *bytes);

#endif
