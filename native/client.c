/* The client: the receiving side, which drives and times a run.
 *
 * --threads connections, one thread each, all released together from a common start time.
 * Throughput mode: receive the server's stream; bytes whose recv() completed within
 * [start + warmup, start + warmup + duration) are the measured window. Then send STOP and keep
 * receiving until the server closes, so total_bytes equals what the server reports sending.
 * Latency mode: request (8-byte sequence number) / response (one whole message) round trips,
 * each timed with CLOCK_MONOTONIC; the measured window holds the round trips that started after
 * the warm-up and ended before the deadline.
 * Every received byte goes through the pattern check (all of them with --verify, a sample of each
 * message otherwise).
 * --receive says how much each recv() asks for: the rest of the current message (message, the
 * default: an application reading whole messages, as iperf3 reads one block per call) or up to
 * RECV_BULK_BYTES (bulk). At small messages this choice moves the sender's throughput a lot: a
 * receiver that drains everything sleeps until the next segment wakes it.
 * With --announce-window the main thread prints "window open" and "window closed" on stderr when
 * the measured window starts and ends, so a harness can align its counters (perf) with the bytes
 * counted here.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "message.h"
#include "options.h"
#include "protocol.h"
#include "sockutil.h"
#include "timing.h"

#define PROG "client"
#define RECV_TIMEOUT_S 30.0 /* a server silent this long is broken, not slow */
#define CONNECT_TIMEOUT_S 5.0
#define HANDSHAKE_TIMEOUT_S 5.0 /* a copylab server answers the hello at once; anything else is not one */
#define RTT_INITIAL 4096

struct worker {
	pthread_t tid;
	unsigned idx;
	int fd;
	char *buf;
	struct stream_check check;
	int impl;
	uint64_t bytes, messages;     /* measured window */
	uint64_t recv_calls;          /* recv() calls that returned data in the window */
	size_t buf_len;
	uint64_t total_bytes;         /* everything received: warm-up, window, drain */
	int64_t window_start_ns;      /* -1: nothing measured */
	int64_t window_end_ns;
	uint64_t *rtt_ns;             /* latency mode: one sample per measured round trip */
	size_t nrtt, cap;
	int failed;                   /* could not complete the run; err says why */
	char err[256];
};

static struct client_options opts;
static char *expected; /* one message of pattern */

/* start gate: every worker connects, then waits here until all have, then all start together */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static unsigned arrived;
static int gate_open;
static int start_failed;
/* workers that have ended, so the main thread stops announcing a window nobody measures */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv; /* CLOCK_MONOTONIC, set up in main */
static unsigned finished_workers, started_workers;
static int64_t t_start, t_warm_end, t_end;

static void worker_fail(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void worker_fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	if (w->failed)
		return;
	w->failed = 1;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

static void fail_io(struct worker *w, const char *what, ssize_t r)
{
	if (r == 0)
		worker_fail(w, "%s: the server closed the connection", what);
	else if (errno == EAGAIN || errno == EWOULDBLOCK)
		worker_fail(w, "%s: nothing from the server for %.0f s", what, RECV_TIMEOUT_S);
	else
		worker_fail(w, "%s: %s", what, strerror(errno));
}

static int connect_and_handshake(struct worker *w)
{
	unsigned char hbuf[HELLO_SIZE], rbuf[REPLY_SIZE];
	struct hello h = {.magic = PROTO_MAGIC, .version = PROTO_VERSION, .mode = (uint16_t)opts.mode,
			  .msg_size = opts.msg_size};
	struct reply r;
	ssize_t n;

	w->fd = connect_to(&opts.ep, CONNECT_TIMEOUT_S);
	if (w->fd < 0) {
		worker_fail(w, "connect to %s port %u: %s", opts.connect, opts.port, strerror(errno));
		return -1;
	}
	set_recv_timeout(w->fd, HANDSHAKE_TIMEOUT_S);
	if (opts.mode == MODE_LATENCY)
		set_nodelay(w->fd); /* requests go out at once, not after the previous ACK (Nagle) */
	hello_encode(&h, hbuf);
	if (send_all(w->fd, hbuf, HELLO_SIZE) < 0) {
		worker_fail(w, "handshake: send: %s", strerror(errno));
		return -1;
	}
	n = recv_all(w->fd, rbuf, REPLY_SIZE);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		worker_fail(w, "handshake: the peer at %s port %u did not answer within %.0f s (not a copylab server?)",
			    opts.connect, opts.port, HANDSHAKE_TIMEOUT_S);
		return -1;
	}
	if (n != REPLY_SIZE) {
		fail_io(w, "handshake", n < 0 ? -1 : 0);
		return -1;
	}
	reply_decode(rbuf, &r);
	if (r.magic != PROTO_MAGIC) {
		worker_fail(w, "handshake: the peer at %s port %u is not a copylab server", opts.connect, opts.port);
		return -1;
	}
	if (r.status != STATUS_OK) {
		char why[160];
		describe_refusal(&h, &r, why, sizeof(why));
		worker_fail(w, "the server refused the connection: %s", why);
		return -1;
	}
	w->impl = r.impl;
	set_recv_timeout(w->fd, RECV_TIMEOUT_S);
	return 0;
}

/* How many bytes the next recv() asks for, given pos bytes of the current message already read. */
static size_t recv_request(const struct worker *w, size_t pos)
{
	size_t rest = opts.msg_size - pos;
	if (opts.receive == RECEIVE_MESSAGE)
		return rest;
	return w->buf_len;
}

static void throughput_run(struct worker *w)
{
	int64_t last_before_window = t_start;
	char stop = STOP_BYTE;
	ssize_t r;

	for (;;) {
		r = recv(w->fd, w->buf, recv_request(w, w->check.pos), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail_io(w, "recv", r);
			return;
		}
		int64_t t = now_ns();
		size_t completed = stream_check_feed(&w->check, w->buf, (size_t)r);
		w->total_bytes += (uint64_t)r;
		if (t < t_warm_end) {
			last_before_window = t;
		} else if (t < t_end) {
			/* this chunk's bytes arrived after the previous recv returned */
			if (w->window_start_ns < 0)
				w->window_start_ns = last_before_window;
			w->window_end_ns = t;
			w->bytes += (uint64_t)r;
			w->messages += completed;
			w->recv_calls++;
		} else {
			break;
		}
	}
	if (send_all(w->fd, &stop, 1) < 0) {
		worker_fail(w, "sending STOP: %s", strerror(errno));
		return;
	}
	/* the server finishes its message in progress and closes: count and check all of it */
	while ((r = recv(w->fd, w->buf, recv_request(w, w->check.pos), 0)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fail_io(w, "recv after STOP", r);
			return;
		}
		stream_check_feed(&w->check, w->buf, (size_t)r);
		w->total_bytes += (uint64_t)r;
	}
	if (w->check.pos != 0 && !w->check.failed) { /* a framing error: the server stops between messages */
		w->check.failed = 1;
		w->check.first_bad_offset = w->check.stream_offset;
	}
}

static int record_rtt(struct worker *w, uint64_t ns)
{
	if (w->nrtt == w->cap) { /* outside any timed interval: the round trip is already timed */
		size_t cap = w->cap ? w->cap * 2 : RTT_INITIAL;
		uint64_t *p = realloc(w->rtt_ns, cap * sizeof(*p));
		if (!p)
			return -1;
		w->rtt_ns = p;
		w->cap = cap;
	}
	w->rtt_ns[w->nrtt++] = ns;
	return 0;
}

static void latency_run(struct worker *w)
{
	unsigned char req[REQUEST_SIZE];
	ssize_t r;

	for (uint64_t seq = 0;; seq++) {
		int64_t t1 = now_ns();
		if (t1 >= t_end)
			break;
		put_be64(req, seq);
		if (send_all(w->fd, req, REQUEST_SIZE) < 0) {
			worker_fail(w, "sending request %" PRIu64 ": %s", seq, strerror(errno));
			return;
		}
		size_t calls = 0;
		for (size_t left = opts.msg_size; left > 0; left -= (size_t)r) {
			size_t want = recv_request(w, opts.msg_size - left);
			r = recv(w->fd, w->buf, want < left ? want : left, 0);
			calls++;
			if (r < 0 && errno == EINTR) {
				r = 0;
				continue;
			}
			if (r <= 0) {
				fail_io(w, "recv", r);
				return;
			}
			stream_check_feed(&w->check, w->buf, (size_t)r);
		}
		int64_t t2 = now_ns();
		w->total_bytes += opts.msg_size;
		if (t1 >= t_warm_end && t2 < t_end) {
			if (record_rtt(w, (uint64_t)(t2 - t1)) < 0) {
				worker_fail(w, "out of memory for latency samples");
				return;
			}
			if (w->window_start_ns < 0)
				w->window_start_ns = t1;
			w->window_end_ns = t2;
			w->bytes += opts.msg_size;
			w->messages++;
			w->recv_calls += calls;
		}
	}
	put_be64(req, STOP_REQUEST);
	if (send_all(w->fd, req, REQUEST_SIZE) < 0) {
		worker_fail(w, "sending STOP: %s", strerror(errno));
		return;
	}
	while ((r = recv(w->fd, w->buf, w->buf_len, 0)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fail_io(w, "recv after STOP", r);
			return;
		}
		w->total_bytes += (uint64_t)r;
		worker_fail(w, "protocol: %zd unexpected bytes after STOP", r);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ok;

	w->fd = -1;
	w->window_start_ns = -1;
	/* message: one whole message fits; bulk: the large reads */
	w->buf_len = opts.receive == RECEIVE_MESSAGE ? opts.msg_size : RECV_BULK_BYTES;
	w->buf = malloc(w->buf_len);
	if (!w->buf)
		worker_fail(w, "out of memory");
	else if (opts.mode == MODE_LATENCY && !(w->rtt_ns = malloc(RTT_INITIAL * sizeof(uint64_t))))
		worker_fail(w, "out of memory for latency samples");
	else
		w->cap = opts.mode == MODE_LATENCY ? RTT_INITIAL : 0;
	if (!w->failed)
		connect_and_handshake(w);
	stream_check_init(&w->check, expected, opts.msg_size, opts.verify);

	pthread_mutex_lock(&gate_lock);
	arrived++;
	if (w->failed)
		start_failed = 1;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_lock);
	ok = !start_failed;
	pthread_mutex_unlock(&gate_lock);

	if (ok) {
		if (opts.mode == MODE_THROUGHPUT)
			throughput_run(w);
		else
			latency_run(w);
	}
	if (w->fd >= 0)
		close(w->fd);
	free(w->buf);
	w->buf = NULL;
	pthread_mutex_lock(&done_lock);
	finished_workers++;
	pthread_cond_broadcast(&done_cv);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double percentile_us(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	return (double)sorted[rank - 1] / 1e3;
}

struct summary {
	int impl;
	uint64_t bytes, messages, total_bytes, recv_calls;
	double duration_s, throughput_gbps;
	double lat_mean_us, lat_p50_us, lat_p99_us, lat_min_us, lat_max_us;
	int verified;
	unsigned connections;
};

static int summarise(struct worker *ws, unsigned n, struct summary *s)
{
	int64_t wstart = -1, wend = -1;
	size_t nsamples = 0;

	memset(s, 0, sizeof(*s));
	s->impl = ws[0].impl;
	s->verified = 1;
	s->lat_mean_us = s->lat_p50_us = s->lat_p99_us = s->lat_min_us = s->lat_max_us = NAN;
	for (unsigned k = 0; k < n; k++) {
		struct worker *w = &ws[k];
		s->bytes += w->bytes;
		s->messages += w->messages;
		s->total_bytes += w->total_bytes;
		s->recv_calls += w->recv_calls;
		s->verified &= !w->check.failed;
		s->connections += w->fd >= 0;
		nsamples += w->nrtt;
		if (w->window_start_ns >= 0) {
			if (wstart < 0 || w->window_start_ns < wstart)
				wstart = w->window_start_ns;
			if (w->window_end_ns > wend)
				wend = w->window_end_ns;
		}
	}
	/* the union of the connections' measured windows, as the clock saw it */
	s->duration_s = wstart >= 0 && wend > wstart ? ns_to_s(wend - wstart) : NAN;
	s->throughput_gbps = (double)s->bytes * 8 / s->duration_s / 1e9;
	if (opts.mode == MODE_THROUGHPUT) {
		/* not a round trip: the mean time one connection took per message */
		if (s->messages > 0)
			s->lat_mean_us = s->duration_s * n / (double)s->messages * 1e6;
		return 0;
	}
	if (nsamples == 0)
		return 0;
	uint64_t *all = malloc(nsamples * sizeof(*all));
	if (!all)
		return -1;
	size_t at = 0;
	double sum = 0;
	for (unsigned k = 0; k < n; k++) {
		memcpy(all + at, ws[k].rtt_ns, ws[k].nrtt * sizeof(*all));
		at += ws[k].nrtt;
	}
	qsort(all, nsamples, sizeof(*all), cmp_u64);
	for (size_t k = 0; k < nsamples; k++)
		sum += (double)all[k];
	s->lat_mean_us = sum / (double)nsamples / 1e3;
	s->lat_p50_us = percentile_us(all, nsamples, 50);
	s->lat_p99_us = percentile_us(all, nsamples, 99);
	s->lat_min_us = (double)all[0] / 1e3;
	s->lat_max_us = (double)all[nsamples - 1] / 1e3;
	free(all);
	return 0;
}

static void print_summary(const struct summary *s)
{
	if (!opts.json) {
		printf("client: %s %s, %zu-byte messages, %u connections: %.3f Gbit/s over %.3f s "
		       "(%" PRIu64 " bytes, %" PRIu64 " messages measured; %" PRIu64 " bytes in all)",
		       impl_name(s->impl), mode_name(opts.mode), opts.msg_size, s->connections,
		       isfinite(s->throughput_gbps) ? s->throughput_gbps : 0.0,
		       isfinite(s->duration_s) ? s->duration_s : 0.0, s->bytes, s->messages, s->total_bytes);
		if (opts.mode == MODE_LATENCY && isfinite(s->lat_mean_us))
			printf("; round trip mean %.1f us, p50 %.1f, p99 %.1f, min %.1f, max %.1f",
			       s->lat_mean_us, s->lat_p50_us, s->lat_p99_us, s->lat_min_us, s->lat_max_us);
		printf("; %s reads, %" PRIu64 " recv calls; data %s (%s check)\n", receive_name(opts.receive),
		       s->recv_calls, s->verified ? "verified" : "CORRUPT", opts.verify ? "full" : "sampled");
		fflush(stdout);
		return;
	}
	struct json_out j;
	json_begin(&j, stdout);
	json_str(&j, "role", "client");
	json_str(&j, "impl", impl_name(s->impl));
	json_str(&j, "mode", mode_name(opts.mode));
	json_u64(&j, "msg_size", opts.msg_size);
	json_u64(&j, "threads", opts.threads);
	json_num(&j, "duration_s", s->duration_s);
	json_num(&j, "warmup_s", opts.warmup_s);
	json_u64(&j, "bytes", s->bytes);
	json_u64(&j, "messages", s->messages);
	json_u64(&j, "total_bytes", s->total_bytes);
	json_num(&j, "throughput_gbps", s->throughput_gbps);
	json_num(&j, "latency_us", s->lat_mean_us);
	json_num(&j, "latency_p50_us", s->lat_p50_us);
	json_num(&j, "latency_p99_us", s->lat_p99_us);
	json_num(&j, "latency_min_us", s->lat_min_us);
	json_num(&j, "latency_max_us", s->lat_max_us);
	json_bool(&j, "verified", s->verified);
	json_str(&j, "verify", opts.verify ? "full" : "sampled");
	json_str(&j, "receive", receive_name(opts.receive));
	json_u64(&j, "recv_calls", s->recv_calls);
	json_u64(&j, "connections", s->connections);
	json_end(&j);
}

/* Sleep until t, or until every worker has ended (a lost server ends the run early); 1 if t came. */
static int wait_until(int64_t t)
{
	int reached = 1;

	pthread_mutex_lock(&done_lock);
	while (finished_workers < started_workers) {
		int64_t now = now_ns();
		if (now >= t)
			break;
		struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
		pthread_cond_timedwait(&done_cv, &done_lock, &ts);
	}
	if (finished_workers >= started_workers)
		reached = now_ns() >= t;
	pthread_mutex_unlock(&done_lock);
	return reached;
}

/* The measured window as the workers see it, announced on stderr for a harness (perf's window). */
static void announce_window(void)
{
	if (!wait_until(t_warm_end))
		return;
	fprintf(stderr, "window open\n");
	if (!wait_until(t_end))
		return;
	fprintf(stderr, "window closed\n");
}

int main(int argc, char **argv)
{
	struct worker *ws;
	unsigned created = 0, nfailed = 0;
	int first_failed = -1, status = 0;

	parse_client_options(argc, argv, PROG, &opts);
	signal(SIGPIPE, SIG_IGN);
	pthread_condattr_t cattr;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC); /* now_ns() is CLOCK_MONOTONIC */
	pthread_cond_init(&done_cv, &cattr);
	pthread_condattr_destroy(&cattr);

	expected = malloc(opts.msg_size);
	ws = calloc(opts.threads, sizeof(*ws));
	if (!expected || !ws) {
		fprintf(stderr, "%s: out of memory for %zu-byte messages\n", PROG, opts.msg_size);
		return 1;
	}
	pattern_fill(expected, 0, opts.msg_size);

	for (; created < opts.threads; created++) {
		ws[created].idx = created;
		int rc = pthread_create(&ws[created].tid, NULL, worker_main, &ws[created]);
		if (rc != 0) {
			fprintf(stderr, "%s: cannot start thread %u: %s\n", PROG, created + 1, strerror(rc));
			pthread_mutex_lock(&gate_lock);
			start_failed = 1;
			pthread_mutex_unlock(&gate_lock);
			status = 1;
			break;
		}
	}
	pthread_mutex_lock(&gate_lock);
	while (arrived < created)
		pthread_cond_wait(&gate_cv, &gate_lock);
	t_start = now_ns();
	t_warm_end = t_start + s_to_ns(opts.warmup_s);
	t_end = t_warm_end + s_to_ns(opts.duration_s);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_lock);
	pthread_mutex_lock(&done_lock);
	started_workers = created;
	pthread_mutex_unlock(&done_lock);
	if (!start_failed && opts.announce)
		announce_window();

	for (unsigned k = 0; k < created; k++)
		pthread_join(ws[k].tid, NULL);
	if (status != 0)
		return status;

	for (unsigned k = 0; k < created; k++) {
		if (ws[k].failed) {
			nfailed++;
			if (first_failed < 0)
				first_failed = (int)k;
		}
	}
	struct summary s;
	int verified_all = 1;
	for (unsigned k = 0; k < created; k++)
		verified_all &= !ws[k].check.failed;
	if (nfailed > 0 && verified_all) {
		/* the run did not complete: no numbers rather than wrong ones */
		if (nfailed > 1)
			fprintf(stderr, "%s: %s (connection %d; %u of %u connections failed)\n", PROG,
				ws[first_failed].err, first_failed + 1, nfailed, created);
		else
			fprintf(stderr, "%s: %s (connection %d of %u)\n", PROG, ws[first_failed].err,
				first_failed + 1, created);
		status = 1;
	} else if (summarise(ws, created, &s) < 0) {
		fprintf(stderr, "%s: out of memory while merging latency samples\n", PROG);
		status = 1;
	} else {
		if (!s.verified) {
			for (unsigned k = 0; k < created; k++) {
				if (ws[k].check.failed) {
					fprintf(stderr, "%s: verification failed: connection %u received bytes that differ "
						"from the pattern at stream offset %" PRIu64 " (message size %zu)\n",
						PROG, k + 1, ws[k].check.first_bad_offset, opts.msg_size);
					break;
				}
			}
			status = 1;
		} else if (s.bytes == 0) {
			/* nothing to report is not a measurement of zero: say so and fail */
			fprintf(stderr, "%s: no %s completed within the %g s window; lengthen --duration\n", PROG,
				opts.mode == MODE_LATENCY ? "round trip" : "data", opts.duration_s);
			status = 1;
		}
		print_summary(&s);
	}
	for (unsigned k = 0; k < created; k++)
		free(ws[k].rtt_ns);
	free(ws);
	free(expected);
	return status;
}
