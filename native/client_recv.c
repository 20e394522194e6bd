/* The receive loops: the throughput stream and the latency round trips.
 *
 * Throughput: bytes whose recv() completed within [t_warm_end, t_end) are the measured window. Then
 * STOP is sent and everything up to the server's close is still received and checked, so
 * total_bytes equals what the server reports sending. Latency: a request (8-byte sequence number),
 * a response (one whole message), each round trip timed with CLOCK_MONOTONIC; the window holds the
 * round trips that started after the warm-up and ended before the deadline. Every received byte
 * goes through the pattern check, and every chunk is counted in its interval (client_stats.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client.h"
#include "protocol.h"
#include "registry.h"
#include "sockutil.h"
#include "timing.h"

/* How many bytes the next recv() asks for, given pos bytes of the current message already read:
 * the rest of the message, or a whole buffer (bulk). */
static size_t recv_request(const struct worker *w, size_t pos)
{
	if (w->run->opts.receive == RECEIVE_message)
		return w->run->opts.msg_size - pos;
	return w->buf_len;
}

static int64_t window_open_at(const struct run *run)
{
	return atomic_load_explicit(&run->t_warm_end, memory_order_relaxed);
}

static int64_t window_close_at(const struct run *run)
{
	return atomic_load_explicit(&run->t_end, memory_order_relaxed);
}

/* After STOP: the server finishes its message in progress and closes; count and check all of it. */
static void drain_after_stop(struct worker *w)
{
	ssize_t r;

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

void throughput_run(struct worker *w)
{
	struct run *run = w->run;
	int64_t last_before_window = run->t_start;
	char stop = STOP_BYTE;

	for (;;) {
		ssize_t r = recv(w->fd, w->buf, recv_request(w, w->check.pos), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail_io(w, "recv", r);
			return;
		}
		int64_t t = now_ns();
		size_t completed = stream_check_feed(&w->check, w->buf, (size_t)r);
		w->total_bytes += (uint64_t)r;
		bins_add_bytes(w, t, (uint64_t)r);
		if (t < window_open_at(run)) {
			last_before_window = t;
		} else if (t < window_close_at(run)) {
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
	drain_after_stop(w);
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

/* One response: msg_size bytes, in as many recv() calls as it takes. Its call count, or -1 after
 * worker_fail(). */
static int64_t receive_response(struct worker *w)
{
	size_t msg_size = w->run->opts.msg_size;
	int64_t calls = 0;

	for (size_t left = msg_size; left > 0;) {
		size_t want = recv_request(w, msg_size - left);
		ssize_t r = recv(w->fd, w->buf, want < left ? want : left, 0);
		calls++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail_io(w, "recv", r);
			return -1;
		}
		stream_check_feed(&w->check, w->buf, (size_t)r);
		left -= (size_t)r;
	}
	return calls;
}

/* After the STOP request the server must close without sending anything more. */
static void expect_close(struct worker *w)
{
	ssize_t r;

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

void latency_run(struct worker *w)
{
	struct run *run = w->run;
	unsigned char req[REQUEST_SIZE];

	for (uint64_t seq = 0;; seq++) {
		int64_t t1 = now_ns();
		if (t1 >= window_close_at(run))
			break;
		put_be64(req, seq);
		if (send_all(w->fd, req, REQUEST_SIZE) < 0) {
			worker_fail(w, "sending request %" PRIu64 ": %s", seq, strerror(errno));
			return;
		}
		int64_t calls = receive_response(w);
		if (calls < 0)
			return;
		int64_t t2 = now_ns();
		w->total_bytes += run->opts.msg_size;
		bins_add_bytes(w, t2, run->opts.msg_size);
		bins_add_rtt(w, t2, (uint64_t)(t2 - t1));
		if (t1 >= window_open_at(run) && t2 < window_close_at(run)) {
			if (record_rtt(w, (uint64_t)(t2 - t1)) < 0) {
				worker_fail(w, "out of memory for latency samples");
				return;
			}
			if (w->window_start_ns < 0)
				w->window_start_ns = t1;
			w->window_end_ns = t2;
			w->bytes += run->opts.msg_size;
			w->messages++;
			w->recv_calls += (uint64_t)calls;
		}
	}
	put_be64(req, STOP_REQUEST);
	if (send_all(w->fd, req, REQUEST_SIZE) < 0) {
		worker_fail(w, "sending STOP: %s", strerror(errno));
		return;
	}
	expect_close(w);
}
