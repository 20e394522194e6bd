#include "server_common.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "options.h"
#include "output.h"
#include "protocol.h"
#include "registry.h"
#include "sockutil.h"
#include "timing.h"

/* Throughput mode looks for the client's STOP byte after STOP_CHECK_BYTES (protocol.h), or sooner once
 * STOP_CHECK_NS have passed since its last look, so the extra recv() costs well under 1% of the
 * sending it interrupts; for messages of 256 KiB and up that means once per message, which bounds
 * what the client drains after STOP to one message. The time matters for slow senders: A3's 4096
 * zero-copy sends of 64 B took ~100 ms per connection to reach 256 KiB, and each round's end waited
 * for the slowest. The clock is read once every STOP_CLOCK_EVERY messages, not per send. */
#define STOP_CHECK_NS 1000000LL
#define STOP_CLOCK_EVERY 64
/* How long a finished connection waits for the client to close its side after our FIN. */
#define LINGER_FOR_CLIENT_MS 5000

static const struct send_strategy *strategy;
static int impl_id; /* strategy's wire id, from the registry */
static struct server_options opts;
static char prog[32];
static atomic_int stopping;

/* Live connections and the totals of finished ones, under one lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static struct conn *live;
static unsigned nlive;
static struct conn_stats totals;
static uint64_t served, refused, errors, malformed;
static int64_t first_start_ns = -1, last_end_ns = -1;
/* what the served connections ran with: congestion control (the first's; "mixed" if they differ)
 * and the fewest distinct messages any of them cycled through */
static char congestion_used[CONGESTION_NAME_MAX];
static unsigned ring_min;
static unsigned cap;      /* connections served at once (connection_cap) */
static uint64_t busy;     /* connections turned away at the cap */

void conn_fail(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	if (c->error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
}

int server_stopping(void)
{
	return atomic_load_explicit(&stopping, memory_order_relaxed);
}

/* What every connection gets before its strategy's own set-up: Nagle off in latency mode, the
 * congestion control asked for, the ring of messages. 0, or -1 after conn_fail(). */
static int conn_setup(struct conn *c)
{
	if (c->mode == MODE_LATENCY)
		set_nodelay(c->fd); /* a response's last segment must not wait for an ACK (Nagle) */
	/* the listening socket already carries it (accepted sockets inherit it); set again so that a
	 * refusal is seen here, per connection, rather than silently running the host's default */
	if (opts.congestion && set_congestion(c->fd, opts.congestion) < 0) {
		conn_fail(c, "setsockopt(TCP_CONGESTION, %s): %s", opts.congestion, strerror(errno));
		return -1;
	}
	get_congestion(c->fd, c->congestion, sizeof(c->congestion));
	if (ring_init(&c->ring, c->msg_size, opts.working_set,
		      strategy->page_aligned ? (size_t)sysconf(_SC_PAGESIZE) : 0) < 0) {
		conn_fail(c, "cannot allocate the ring of %u %zu-byte messages: %s",
			  ring_messages(c->msg_size, opts.working_set), c->msg_size, strerror(errno));
		return -1;
	}
	c->ring_messages = c->ring.n;
	c->initialised = strategy->conn_init(c) == 0;
	if (!c->initialised) {
		ring_free(&c->ring);
		return -1;
	}
	return 0;
}

/* The client's hello against our flags. The connection is set up (conn_init) before the reply,
 * so the client's clock, which starts after every handshake, never times our allocations.
 * On refusal or failure c->error / stderr say why on our side. */
static int handshake(struct conn *c)
{
	unsigned char buf[REPLY_SIZE > HELLO_SIZE ? REPLY_SIZE : HELLO_SIZE];
	struct hello h;
	struct reply r = {.magic = PROTO_MAGIC, .status = STATUS_OK, .impl = (uint16_t)impl_id,
			  .mode = (uint16_t)opts.mode, .version = PROTO_VERSION, .msg_size = opts.msg_size};
	ssize_t n = recv_all(c->fd, buf, HELLO_SIZE, now_ns() + (int64_t)(HANDSHAKE_TIMEOUT_S * 1e9));

	if (n < 0 && errno == EAGAIN) { /* a silent peer must not hold a connection slot */
		conn_fail(c, "no whole hello within %.0f s (not a copylab client?)", HANDSHAKE_TIMEOUT_S);
		return -1;
	}
	if (n < 0) {
		conn_fail(c, "handshake: recv: %s", strerror(errno));
		return -1;
	}
	if (n < HELLO_SIZE) {
		conn_fail(c, "closed before the handshake was complete (%zd of %d bytes)", n, HELLO_SIZE);
		return -1;
	}
	hello_decode(buf, &h);
	if (h.magic != PROTO_MAGIC || h.version != PROTO_VERSION)
		r.status = STATUS_BAD_HELLO;
	else if (h.mode != opts.mode)
		r.status = STATUS_MODE_MISMATCH;
	else if (h.msg_size != opts.msg_size)
		r.status = STATUS_SIZE_MISMATCH;
	if (r.status == STATUS_OK && conn_setup(c) < 0)
		r.status = STATUS_SERVER_ERROR;
	reply_encode(&r, buf);
	if (send_all(c->fd, buf, REPLY_SIZE) < 0 && r.status == STATUS_OK) {
		conn_fail(c, "handshake: send: %s", strerror(errno));
		return -1;
	}
	if (r.status == STATUS_SERVER_ERROR)
		return -1;
	if (r.status != STATUS_OK) {
		char why[160];
		describe_refusal(&h, &r, why, sizeof(why));
		fprintf(stderr, "%s: refused client %s: %s\n", prog, c->peer, why);
		c->refused = 1;
		return -1;
	}
	c->served = 1;
	return 0;
}

static void throughput_loop(struct conn *c)
{
	uint64_t check_every = (STOP_CHECK_BYTES + c->msg_size - 1) / c->msg_size;
	int64_t look_at = now_ns() + STOP_CHECK_NS;
	char buf[16];

	for (;;) {
		for (uint64_t k = 1; k <= check_every; k++) {
			if (strategy->send_message(c) < 0) {
				if (!server_stopping())
					conn_fail(c, "send: %s", strerror(errno));
				return;
			}
			c->st.messages++;
			if (k % STOP_CLOCK_EVERY == 0 && now_ns() >= look_at)
				break;
		}
		look_at = now_ns() + STOP_CHECK_NS;
		if (server_stopping())
			return;
		ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 1 && buf[0] == STOP_BYTE)
			return;
		if (r > 0) {
			c->malformed = 1;
			conn_fail(c, "protocol: expected the 1-byte STOP, got %zd bytes", r);
			return;
		}
		if (r == 0) {
			conn_fail(c, "client closed the connection without STOP");
			return;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			conn_fail(c, "recv: %s", strerror(errno));
			return;
		}
	}
}

static void latency_loop(struct conn *c)
{
	unsigned char req[REQUEST_SIZE];

	for (uint64_t expected = 0;; expected++) {
		ssize_t n = recv_all(c->fd, req, REQUEST_SIZE, -1);
		if (server_stopping())
			return;
		if (n < 0) {
			conn_fail(c, "recv: %s", strerror(errno));
			return;
		}
		if (n == 0) {
			conn_fail(c, "client closed the connection without STOP");
			return;
		}
		if (n < REQUEST_SIZE) {
			c->malformed = 1;
			conn_fail(c, "protocol: request cut short (%zd of %d bytes)", n, REQUEST_SIZE);
			return;
		}
		uint64_t seq = get_be64(req);
		if (seq == STOP_REQUEST)
			return;
		if (seq != expected) {
			c->malformed = 1;
			conn_fail(c, "protocol: request %" PRIu64 " out of sequence (expected %" PRIu64 ")", seq, expected);
			return;
		}
		if (strategy->send_message(c) < 0) {
			if (!server_stopping())
				conn_fail(c, "send: %s", strerror(errno));
			return;
		}
		c->st.messages++;
	}
}

/* Our FIN is out; wait (bounded) for the client's, so the close is orderly on both sides. */
static void wait_for_client_close(int fd)
{
	char buf[256];
	int64_t deadline = now_ns() + (int64_t)LINGER_FOR_CLIENT_MS * 1000000;

	for (;;) {
		int64_t left_ms = (deadline - now_ns()) / 1000000;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left_ms <= 0 || poll(&p, 1, (int)left_ms) <= 0)
			return;
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return;
	}
}

static void add_stats(struct conn_stats *to, const struct conn_stats *from)
{
	to->bytes += from->bytes;
	to->messages += from->messages;
	to->send_calls += from->send_calls;
	to->user_copy_bytes += from->user_copy_bytes;
	to->zc_sends += from->zc_sends;
	to->zc_completions += from->zc_completions;
	to->zc_copied += from->zc_copied;
	to->enobufs += from->enobufs;
}

/* Unlink a finished connection, add it to the totals, close and free it. */
static void retire(struct conn *c)
{
	pthread_mutex_lock(&lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		live = c->next;
	if (c->next)
		c->next->prev = c->prev;
	close(c->fd); /* under the lock: the stop path never shuts down a reused fd number */
	add_stats(&totals, &c->st);
	served += (uint64_t)c->served;
	if (c->served) {
		if (!congestion_used[0])
			snprintf(congestion_used, sizeof(congestion_used), "%s", c->congestion);
		else if (strcmp(congestion_used, c->congestion) != 0)
			snprintf(congestion_used, sizeof(congestion_used), "mixed");
		if (ring_min == 0 || c->ring_messages < ring_min)
			ring_min = c->ring_messages;
	}
	refused += (uint64_t)c->refused;
	malformed += (uint64_t)c->malformed;
	if (c->error[0])
		errors++;
	if (c->served) {
		if (first_start_ns < 0 || c->start_ns < first_start_ns)
			first_start_ns = c->start_ns;
		if (c->end_ns > last_end_ns)
			last_end_ns = c->end_ns;
	}
	nlive--;
	pthread_cond_broadcast(&all_done);
	pthread_mutex_unlock(&lock);

	if (c->error[0])
		fprintf(stderr, "%s: connection from %s: %s\n", prog, c->peer, c->error);
	free(c);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;

	c->start_ns = now_ns();
	if (handshake(c) == 0) {
		if (c->mode == MODE_THROUGHPUT)
			throughput_loop(c);
		else
			latency_loop(c);
	}
	if (c->initialised) {
		strategy->conn_finish(c);
		ring_free(&c->ring);
	}
	if (c->served && !c->error[0] && !server_stopping()) {
		shutdown(c->fd, SHUT_WR);
		wait_for_client_close(c->fd);
	}
	c->end_ns = now_ns();
	retire(c);
	return NULL;
}

static void start_conn(int fd, const struct sockaddr *peer)
{
	pthread_attr_t attr;
	pthread_t tid;
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		fprintf(stderr, "%s: out of memory for a new connection\n", prog);
		close(fd);
		pthread_mutex_lock(&lock);
		errors++;
		pthread_mutex_unlock(&lock);
		return;
	}
	c->fd = fd;
	c->msg_size = opts.msg_size;
	c->mode = opts.mode;
	endpoint_format(peer, c->peer, sizeof(c->peer));

	pthread_mutex_lock(&lock);
	c->next = live;
	if (live)
		live->prev = c;
	live = c;
	nlive++;
	pthread_mutex_unlock(&lock);

	/* detached: a finished connection frees itself; the stop path waits on nlive instead of joining */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&tid, &attr, conn_thread, c);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		conn_fail(c, "cannot start a thread: %s", strerror(rc));
		c->start_ns = c->end_ns = now_ns();
		retire(c);
	}
}

/* The most connections served at once (docs/reliability.md, "Connection cap"). A client opens one
 * per thread, at most THREADS_MAX, so more are not one run of ours. And every connection holds at
 * least its minimum ring (granted even past the rings' budget, ring.h) and, for A1, a serialised copy of
 * one message: no more connections than the host's memory can give that, beyond the budget.
 * --max-connections may only lower it. */
static unsigned connection_cap(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	uint64_t each = ring_min_bytes(opts.msg_size) + opts.msg_size;
	/* a budget raised by --ring-memory past half the memory is the caller's, checked against the host */
	uint64_t reserved = ring_budget() < memory / 2 ? ring_budget() : memory / 2;
	uint64_t fit = memory > reserved ? (memory - reserved) / each : 1;
	unsigned n = fit < THREADS_MAX ? (unsigned)(fit ? fit : 1) : THREADS_MAX;

	return opts.max_connections && opts.max_connections < n ? opts.max_connections : n;
}

/* Beyond the cap: a reply saying so (it fits any new socket's buffer, so this never blocks), then
 * close. The hello is not waited for: the refusal must cost nothing. */
static void turn_away(int fd, const struct sockaddr *peer)
{
	unsigned char buf[REPLY_SIZE];
	char who[64];
	struct reply r = {.magic = PROTO_MAGIC, .status = STATUS_BUSY, .impl = (uint16_t)impl_id,
			  .mode = (uint16_t)opts.mode, .version = PROTO_VERSION, .limit = cap, .msg_size = opts.msg_size};

	reply_encode(&r, buf);
	if (send(fd, buf, REPLY_SIZE, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EPIPE && errno != ECONNRESET)
		fprintf(stderr, "%s: turning a connection away: send: %s\n", prog, strerror(errno));
	close(fd);
	endpoint_format(peer, who, sizeof(who));
	pthread_mutex_lock(&lock);
	/* once per burst is enough on stderr: the count is in the JSON */
	if (busy++ == 0)
		fprintf(stderr, "%s: refused client %s: already serving %u connections, the most it takes at once\n",
			prog, who, cap);
	pthread_mutex_unlock(&lock);
}

/* Tell every connection thread to stop (shutdown wakes any blocked send/recv) and wait for all. */
static void stop_all(void)
{
	atomic_store(&stopping, 1);
	pthread_mutex_lock(&lock);
	for (struct conn *c = live; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (nlive > 0)
		pthread_cond_wait(&all_done, &lock);
	pthread_mutex_unlock(&lock);
}

/* The totals, in one description for both formats (output.h); every flag is echoed, so the
 * output alone says how the run was made. */
static void report(int64_t wall_ns)
{
	double active_s = last_end_ns > first_start_ns ? ns_to_s(last_end_ns - first_start_ns) : NAN;
	struct output o;

	out_begin(&o, stdout, opts.json);
	out_str(&o, "role", "server");
	out_str(&o, "impl", strategy->name);
	out_str(&o, "mode", mode_name(opts.mode));
	out_u64(&o, "msg_size", opts.msg_size);
	out_u64(&o, "working_set", opts.working_set);
	out_u64(&o, "ring_memory", opts.ring_memory ? opts.ring_memory : RING_MEMORY_MAX);
	out_str(&o, "congestion_asked", opts.congestion ? opts.congestion : "host");
	out_str(&o, "congestion", congestion_used[0] ? congestion_used : "?");
	out_u64(&o, "ring_messages", ring_min);
	out_u64(&o, "threads", served);
	out_num(&o, "duration_s", ns_to_s(wall_ns));
	out_num(&o, "active_s", active_s);
	out_u64(&o, "bytes", totals.bytes);
	out_u64(&o, "messages", totals.messages);
	out_num(&o, "throughput_gbps", (double)totals.bytes * 8 / active_s / 1e9);
	out_null(&o, "latency_us"); /* only the client can time round trips */
	out_null(&o, "latency_p50_us");
	out_null(&o, "latency_p99_us");
	out_bool(&o, "verified", malformed == 0);
	out_u64(&o, "user_copy_bytes", totals.user_copy_bytes);
	out_u64(&o, "send_calls", totals.send_calls);
	out_u64(&o, "zc_sends", totals.zc_sends);
	out_u64(&o, "zc_completions", totals.zc_completions);
	out_u64(&o, "zc_copied", totals.zc_copied);
	out_u64(&o, "enobufs", totals.enobufs);
	out_u64(&o, "connections_refused", refused);
	out_u64(&o, "connection_cap", cap);
	out_u64(&o, "connections_turned_away", busy);
	out_u64(&o, "errors", errors);
	out_end(&o);
}

int server_main(int argc, char **argv, const struct send_strategy *s)
{
	char where[80];
	sigset_t stop_signals;

	strategy = s;
	snprintf(prog, sizeof(prog), "%s_server", s->name);
	impl_id = impl_by_name(s->name);
	if (impl_id == IMPL_NONE) {
		fprintf(stderr, "%s: '%s' is not in native/registry.def\n", prog, s->name);
		return 1;
	}
	parse_server_options(argc, argv, prog, &opts);
	ring_set_memory(opts.ring_memory);

	signal(SIGPIPE, SIG_IGN); /* a vanished client must end its connection, not the server */
	/* blocked before any thread exists, so SIGINT/SIGTERM only ever arrive through the signalfd */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	int sfd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		return 1;
	}

	endpoint_format((const struct sockaddr *)&opts.ep.addr, where, sizeof(where));
	int lfd = listen_on(&opts.ep, 4096);
	if (lfd >= 0 && opts.congestion && set_congestion(lfd, opts.congestion) < 0) {
		fprintf(stderr, "%s: --congestion: setsockopt(TCP_CONGESTION, %s): %s\n", prog, opts.congestion,
			strerror(errno));
		close(lfd);
		return 1;
	}
	if (lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s: %s\n", prog, where, strerror(errno));
		return 1;
	}
	if (opts.port == 0) { /* announce the port the kernel picked */
		struct endpoint bound;
		endpoint_parse(&bound, opts.bind, local_port(lfd));
		endpoint_format((const struct sockaddr *)&bound.addr, where, sizeof(where));
	}
	cap = connection_cap();
	fprintf(stderr, "listening on %s\n", where);
	fflush(stderr);
	int64_t t_start = now_ns();

	for (;;) {
		struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN) {
			struct sockaddr_storage peer;
			socklen_t plen = sizeof(peer);
			int fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
			if (fd >= 0) {
				pthread_mutex_lock(&lock);
				int full = nlive >= cap;
				pthread_mutex_unlock(&lock);
				if (full)
					turn_away(fd, (const struct sockaddr *)&peer);
				else
					start_conn(fd, (const struct sockaddr *)&peer);
			} else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				fprintf(stderr, "%s: accept: %s (waiting for connections to end)\n", prog, strerror(errno));
				sleep_ns(10 * 1000000);
			}
			/* other accept errors (ECONNABORTED, EINTR, ...) concern one would-be client only */
		}
	}
	close(lfd);
	stop_all();
	close(sfd);
	report(now_ns() - t_start);
	return 0;
}
