/* The receive loops: the throughput stream and the latency round trips.
 *
 * Throughput: bytes whose recv() completed within [t_warm_end, t_end) are the measured window. Then
 * STOP is sent and everything up to the server's close is still received and checked, so
 * total_bytes equals what the server reports sending. Latency: a request (8-byte sequence number),
 * a response (one whole message), each round trip timed with CLOCK_MONOTONIC; the window holds the
 * round trips that started after the warm-up and ended before the deadline. Every received byte
 * the strategy sees goes through the pattern check, and every chunk is counted in its interval
 * (client_stats.c).
 *
 * The receive strategies (--receive, registry.def): message and bulk copy with recv() (one
 * message's bytes, or up to RECV_BULK_BYTES); zerocopy maps whole pages with TCP_ZEROCOPY_RECEIVE
 * (the kernel selftest tcp_mmap.c) and reads the rest with recv(), counting mapped and copied bytes
 * apart; discard drops the bytes in the kernel with MSG_TRUNC, so only the framing is followed.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "protocol.h"
#include "registry.h"
#include "sockutil.h"
#include "tcp_zerocopy.h"
#include "timing.h"

/* How many bytes the next receive asks for, given pos bytes of the current message already read:
 * the rest of the message, or a whole buffer (every other strategy). */
static size_t recv_request(const struct worker *w, size_t pos)
{
	if (w->run->opts.receive == RECEIVE_message)
		return w->run->opts.msg_size - pos;
	return w->buf_len;
}

/* What one receive step got. */
struct got {
	size_t mapped;    /* bytes mapped into w->zc_map (zerocopy) */
	size_t copied;    /* bytes the kernel copied into w->buf */
	size_t completed; /* messages completed within them */
};

/* message, bulk: recv() into the buffer, every byte checked. */
static ssize_t copy_step(struct worker *w, size_t want, struct got *g)
{
	ssize_t r = recv(w->fd, w->buf, want < w->buf_len ? want : w->buf_len, 0);

	if (r > 0) {
		g->copied += (size_t)r;
		g->completed += stream_check_feed(&w->check, w->buf, (size_t)r);
	}
	return r;
}

/* discard: recv(MSG_TRUNC) makes TCP drop the bytes without copying them (tcp_recvmsg skips the
 * copy): the framing is followed, the contents cannot be checked. */
static ssize_t discard_step(struct worker *w, size_t want, struct got *g)
{
	ssize_t r = recv(w->fd, w->buf, want < w->buf_len ? want : w->buf_len, MSG_TRUNC);

	if (r > 0)
		g->completed += stream_check_skip(&w->check, (size_t)r);
	return r;
}

/* Wait until the socket is readable (or has an error or EOF). 0, or -1 with errno (EAGAIN: the
 * server was silent for RECV_TIMEOUT_S, as a recv() with SO_RCVTIMEO would say). */
static int wait_readable(int fd)
{
	return wait_readable_until(fd, now_ns() + (int64_t)(RECV_TIMEOUT_S * 1e9));
}

/* One TCP_ZEROCOPY_RECEIVE of up to span bytes (whole pages) into the mapping; the mapped bytes
 * are checked and unmapped, then the bytes the kernel could not map before the next mappable
 * page (recv_skip_hint) are read with recv(), as tcp_mmap.c does. Bytes got, or -1 with errno. */
static ssize_t zerocopy_once(struct worker *w, size_t span, size_t want, struct got *g)
{
	struct tcp_zc_receive zc = {.address = (uint64_t)(uintptr_t)w->zc_map, .length = (uint32_t)span};
	socklen_t zl = sizeof(zc);
	size_t total = 0;

	if (getsockopt(w->fd, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, &zc, &zl) < 0) {
		/* EIO with nothing queued: the peer closed (SOCK_DONE); recv() returns the EOF */
		return errno == EIO ? copy_step(w, want, g) : -1;
	}
	if (zc.err) {
		errno = zc.err < 0 ? -zc.err : zc.err;
		return -1;
	}
	if (zc.length) {
		g->mapped += zc.length;
		g->completed += stream_check_feed(&w->check, w->zc_map, zc.length);
		if (madvise(w->zc_map, zc.length, MADV_DONTNEED) < 0)
			return -1;
		total = zc.length;
	}
	if (zc.recv_skip_hint && total < want) {
		size_t rest = want - total < zc.recv_skip_hint ? want - total : zc.recv_skip_hint;
		ssize_t r = copy_step(w, rest, g);
		if (r < 0 && total == 0)
			return -1;
		total += r > 0 ? (size_t)r : 0;
	}
	return (ssize_t)total;
}

/* zerocopy: map what can be mapped, copy the rest; block (poll) when nothing is queued. */
static ssize_t zerocopy_step(struct worker *w, size_t want, struct got *g)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t span = want < w->zc_len ? want : w->zc_len;

	span -= span % page;
	if (span == 0) /* less than a page wanted: nothing could be mapped */
		return copy_step(w, want, g);
	for (int woken = 0;; woken = 1) {
		ssize_t r = zerocopy_once(w, span, want, g);
		if (r != 0)
			return r;
		/* nothing queued (TCP_ZEROCOPY_RECEIVE does not block); after a wake-up with still
		 * nothing, it is EOF or an error: recv() says which */
		if (woken)
			return copy_step(w, want, g);
		if (wait_readable(w->fd) < 0)
			return -1;
	}
}

/* One receive of the worker's strategy, asking for at most want bytes. Bytes got (> 0), 0 at EOF,
 * -1 with errno set. */
static ssize_t receive_step(struct worker *w, size_t want, struct got *g)
{
	memset(g, 0, sizeof(*g));
	switch (w->run->opts.receive) {
	case RECEIVE_discard:
		return discard_step(w, want, g);
	case RECEIVE_zerocopy:
		return zerocopy_step(w, want, g);
	default:
		return copy_step(w, want, g);
	}
}

/* What the strategy needs on the connection: zerocopy maps a window of the socket. 0, or -1
 * after worker_fail(). */
static int receive_setup(struct worker *w)
{
	if (w->run->opts.receive != RECEIVE_zerocopy)
		return 0;
	w->zc_len = RECV_BULK_BYTES;
	w->zc_map = mmap(NULL, w->zc_len, PROT_READ, MAP_SHARED, w->fd, 0);
	if (w->zc_map == MAP_FAILED) {
		w->zc_map = NULL;
		worker_fail(w, "mmap of the socket for TCP_ZEROCOPY_RECEIVE: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Undo receive_setup(); note the receive MSS, which decides what can be mapped. */
static void receive_teardown(struct worker *w)
{
	struct tcp_info info;
	socklen_t len = sizeof(info);

	if (getsockopt(w->fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0)
		w->rcv_mss = info.tcpi_rcv_mss;
	if (w->zc_map)
		munmap(w->zc_map, w->zc_len);
	w->zc_map = NULL;
}

static int64_t window_open_at(const struct run *run)
{
	return atomic_load_explicit(&run->t_warm_end, memory_order_relaxed);
}

static int64_t window_close_at(const struct run *run)
{
	return atomic_load_explicit(&run->t_end, memory_order_relaxed);
}

/* The largest of /proc/sys/net/ipv4/NAME's three numbers (min, default, max), or fallback. */
static uint64_t buffer_max(const char *name, uint64_t fallback)
{
	char path[64], text[96];
	unsigned long long lo, def, max;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	if (!(f = fopen(path, "r")))
		return fallback;
	int ok = fgets(text, sizeof(text), f) && sscanf(text, "%llu %llu %llu", &lo, &def, &max) == 3;
	fclose(f);
	return ok ? max : fallback;
}

/* What a copylab server may still send after STOP: what it sends before it looks for STOP
 * (STOP_CHECK_BYTES, or a message if larger), the message in progress, and what the two sockets'
 * buffers hold at most (this host's tcp_rmem and tcp_wmem maxima, or the receive buffer the
 * socket has if larger; 64 MiB each where they cannot be read). A peer that sends more is broken. */
static uint64_t drain_bytes_max(const struct worker *w)
{
	uint64_t msg = w->run->opts.msg_size;
	uint64_t rcvbuf = buffer_max("tcp_rmem", 64u << 20), sndbuf = buffer_max("tcp_wmem", 64u << 20);
	int own = 0;
	socklen_t len = sizeof(own);

	if (getsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &own, &len) == 0 && (uint64_t)own > rcvbuf)
		rcvbuf = (uint64_t)own;
	return (msg > STOP_CHECK_BYTES ? msg : STOP_CHECK_BYTES) + msg + rcvbuf + sndbuf;
}

/* How long the drain may take: four times what those bytes take at the rate the window measured,
 * at least 1 s (a short or slow window), at most RECV_TIMEOUT_S. */
static int64_t drain_ns_max(const struct worker *w, uint64_t bytes)
{
	double window_s = w->window_end_ns > w->window_start_ns ? ns_to_s(w->window_end_ns - w->window_start_ns) : 0;
	double rate = window_s > 0 ? (double)w->bytes / window_s : 0; /* bytes per second */
	double s = rate > 0 ? 4.0 * (double)bytes / rate : RECV_TIMEOUT_S;

	s = s < 1.0 ? 1.0 : s > RECV_TIMEOUT_S ? RECV_TIMEOUT_S : s;
	return (int64_t)(s * 1e9);
}

/* After STOP: the server finishes its message in progress and closes; count and check all of it,
 * within a bound on bytes and on time (a peer that keeps sending must not keep us). */
static void drain_after_stop(struct worker *w)
{
	uint64_t bytes_max = drain_bytes_max(w), drained = 0;
	int64_t took_max = drain_ns_max(w, bytes_max), deadline = now_ns() + took_max;
	struct got g;
	ssize_t r;

	for (;;) {
		/* ACK the server's last bytes at once: A3 closes only when every zero-copy send has
		 * completed, which waits for their ACK (a delayed one held each round ~40 ms). Best effort. */
		(void)set_quickack(w->fd);
		if (wait_readable_until(w->fd, deadline) < 0) {
			if (errno == EAGAIN)
				worker_fail(w, "protocol: the server did not close within %.1f s after STOP (%" PRIu64
					    " bytes drained)", ns_to_s(took_max), drained);
			else
				worker_fail(w, "waiting after STOP: %s", strerror(errno));
			return;
		}
		r = receive_step(w, recv_request(w, w->check.pos), &g);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fail_io(w, "recv after STOP", r);
			return;
		}
		w->total_bytes += (uint64_t)r;
		drained += (uint64_t)r;
		if (drained > bytes_max) {
			worker_fail(w, "protocol: the server sent more than %" PRIu64 " bytes after STOP (what one "
				    "message, its STOP check and the socket buffers can hold)", bytes_max);
			return;
		}
	}
	if (w->check.pos != 0 && !w->check.failed) { /* a framing error: the server stops between messages */
		w->check.failed = 1;
		w->check.first_bad_offset = w->check.stream_offset;
	}
}

static void throughput_loop(struct worker *w)
{
	struct run *run = w->run;
	int64_t last_before_window = run->t_start;
	char stop = STOP_BYTE;
	struct got g;

	for (;;) {
		ssize_t r = receive_step(w, recv_request(w, w->check.pos), &g);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail_io(w, "recv", r);
			return;
		}
		int64_t t = now_ns();
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
			w->mapped_bytes += g.mapped;
			w->copied_bytes += g.copied;
			w->messages += g.completed;
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

void throughput_run(struct worker *w)
{
	if (receive_setup(w) == 0)
		throughput_loop(w);
	receive_teardown(w);
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

/* One response: msg_size bytes, in as many receive steps as it takes; what was mapped and copied
 * is added to *sum. Its call count, or -1 after worker_fail(). */
static int64_t receive_response(struct worker *w, struct got *sum)
{
	size_t msg_size = w->run->opts.msg_size;
	int64_t calls = 0;
	struct got g;

	memset(sum, 0, sizeof(*sum));
	for (size_t left = msg_size; left > 0;) {
		size_t want = recv_request(w, msg_size - left);
		ssize_t r = receive_step(w, want < left ? want : left, &g);
		calls++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail_io(w, "recv", r);
			return -1;
		}
		sum->mapped += g.mapped;
		sum->copied += g.copied;
		left -= (size_t)r;
	}
	return calls;
}

/* After the STOP request the server must close at once without sending anything more: the first
 * byte is a protocol error and ends the wait, and so does the handshake's bound on time. */
static void expect_close(struct worker *w)
{
	int64_t deadline = now_ns() + (int64_t)(HANDSHAKE_TIMEOUT_S * 1e9);
	ssize_t r;

	for (;;) {
		(void)set_quickack(w->fd); /* as in drain_after_stop: the server's close need not wait for our ACK */
		if (wait_readable_until(w->fd, deadline) < 0) {
			if (errno == EAGAIN)
				worker_fail(w, "protocol: the server did not close within %.0f s after STOP",
					    HANDSHAKE_TIMEOUT_S);
			else
				worker_fail(w, "waiting after STOP: %s", strerror(errno));
			return;
		}
		r = recv(w->fd, w->buf, w->buf_len, MSG_DONTWAIT);
		if (r == 0)
			return;
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			fail_io(w, "recv after STOP", r);
			return;
		}
		w->total_bytes += (uint64_t)r;
		worker_fail(w, "protocol: %zd unexpected bytes after STOP", r);
		return;
	}
}

static void latency_loop(struct worker *w)
{
	struct run *run = w->run;
	unsigned char req[REQUEST_SIZE];
	struct got g;

	for (uint64_t seq = 0;; seq++) {
		int64_t t1 = now_ns();
		if (t1 >= window_close_at(run))
			break;
		put_be64(req, seq);
		if (send_all(w->fd, req, REQUEST_SIZE) < 0) {
			worker_fail(w, "sending request %" PRIu64 ": %s", seq, strerror(errno));
			return;
		}
		int64_t calls = receive_response(w, &g);
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
			w->mapped_bytes += g.mapped;
			w->copied_bytes += g.copied;
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

void latency_run(struct worker *w)
{
	if (receive_setup(w) == 0)
		latency_loop(w);
	receive_teardown(w);
}
