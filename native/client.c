/* The client: the receiving side, which drives and times a run.
 *
 * --threads connections, one thread each, all released together from a common start time
 * (the start gate). The measured window opens after --warmup seconds, or, with --steady-max, at the
 * first interval boundary after --warmup where the last STEADY_INTERVALS intervals' rates lie within
 * STEADY_TOLERANCE of their mean (at most --steady-max seconds later): a run that is still ramping
 * up is not measured. It closes --duration seconds later. The main thread decides and announces
 * both ("window open", "window closed" on stderr with --announce-window), so a harness can align its
 * counters (perf) with the bytes counted here.
 * --receive says how much each recv() asks for (registry.def). At small messages this choice moves
 * the sender's throughput a lot: a receiver that drains everything sleeps until the next segment
 * wakes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "protocol.h"
#include "registry.h"
#include "timing.h"

static struct run rounds[ROUNDS_MAX];
static struct run *this_run = &rounds[0]; /* the round under way */

/* start gate: every worker connects, then waits here until all have, then all start together */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static unsigned arrived;
static int gate_open;
static int start_failed;
/* workers that have ended, so the main thread stops waiting for a window nobody measures */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv; /* CLOCK_MONOTONIC, set up in main */
static unsigned finished_workers, started_workers;

/* Buffers of one worker; -1 after worker_fail(). */
static int worker_alloc(struct worker *w)
{
	const struct client_options *o = &this_run->opts;

	/* message: one whole message fits; bulk: the large reads */
	w->buf_len = o->receive == RECEIVE_message ? o->msg_size : RECV_BULK_BYTES;
	if (!(w->buf = malloc(w->buf_len)) || bins_alloc(&w->bins, this_run->nbins, o->mode == MODE_LATENCY) < 0) {
		worker_fail(w, "out of memory");
		return -1;
	}
	if (o->mode == MODE_LATENCY) {
		if (!(w->rtt_ns = malloc(RTT_INITIAL * sizeof(uint64_t)))) {
			worker_fail(w, "out of memory for latency samples");
			return -1;
		}
		w->cap = RTT_INITIAL;
	}
	return 0;
}

/* Wait at the gate until every worker has connected; 1 if all did. */
static int pass_gate(struct worker *w)
{
	int ok;

	pthread_mutex_lock(&gate_lock);
	arrived++;
	if (w->failed)
		start_failed = 1;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_lock);
	ok = !start_failed;
	pthread_mutex_unlock(&gate_lock);
	return ok;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->fd = -1;
	w->window_start_ns = -1;
	w->run = this_run;
	if (worker_alloc(w) == 0)
		connect_and_handshake(w);
	stream_check_init(&w->check, this_run->expected, this_run->opts.msg_size, this_run->opts.verify);
	if (pass_gate(w)) {
		if (this_run->opts.mode == MODE_THROUGHPUT)
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

/* Sleep until t, or until every worker has ended (a lost server ends the run early); 1 if t came. */
static int wait_until(int64_t t)
{
	int reached = 1;

	pthread_mutex_lock(&done_lock);
	while (finished_workers < started_workers) {
		if (now_ns() >= t)
			break;
		struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
		pthread_cond_timedwait(&done_cv, &done_lock, &ts);
	}
	if (finished_workers >= started_workers)
		reached = now_ns() >= t;
	pthread_mutex_unlock(&done_lock);
	return reached;
}

static void open_window(int64_t at, const char *why)
{
	this_run->warmup_end = why;
	atomic_store(&this_run->t_end, at + s_to_ns(this_run->window_s));
	atomic_store(&this_run->t_warm_end, at);
}

/* The steady-state test at each interval boundary from --warmup on, up to --steady-max later.
 * 1 once the window is open, 0 if the workers ended first. */
static int open_when_steady(struct worker *ws, unsigned n)
{
	int64_t earliest = this_run->t_start + s_to_ns(this_run->opts.warmup_s);
	int64_t bound = earliest + s_to_ns(this_run->opts.steady_max_s);
	unsigned k = (unsigned)((earliest - this_run->t_start + this_run->interval_ns - 1) / this_run->interval_ns);

	for (;; k++) {
		int64_t boundary = this_run->t_start + (int64_t)k * this_run->interval_ns;
		if (boundary >= bound) {
			if (!wait_until(bound))
				return 0;
			open_window(bound, "bound");
			return 1;
		}
		if (!wait_until(boundary))
			return 0;
		if (steady_before(ws, n, k)) {
			open_window(boundary, "steady");
			return 1;
		}
	}
}

/* Open the window (fixed or steady), then close it, announcing both when asked. */
static void control_window(struct worker *ws, unsigned n)
{
	if (this_run->opts.steady_max_s > 0) {
		if (!open_when_steady(ws, n))
			return;
	} else if (!wait_until(atomic_load(&this_run->t_warm_end))) {
		return;
	}
	if (this_run->opts.announce)
		fprintf(stderr, "window open\n");
	if (!wait_until(atomic_load(&this_run->t_end)))
		return;
	if (this_run->opts.announce)
		fprintf(stderr, "window closed\n");
}

/* Make round r the one under way: the first round's settings, its own clock, a closed gate. */
static void begin_round(unsigned r)
{
	if (r > 0) {
		struct run *first = &rounds[0];
		rounds[r] = (struct run){.opts = first->opts, .expected = first->expected, .window_s = first->window_s,
					 .interval_ns = first->interval_ns, .nbins = first->nbins};
	}
	atomic_store(&rounds[r].t_warm_end, INT64_MAX);
	atomic_store(&rounds[r].t_end, INT64_MAX);
	this_run = &rounds[r];
	arrived = 0, gate_open = 0, start_failed = 0;
	finished_workers = 0, started_workers = 0;
}

/* Start the workers, open the gate when all have connected, run the window; the number started. */
static unsigned start_workers(struct worker *ws, int *status)
{
	unsigned created = 0;

	for (; created < this_run->opts.threads; created++) {
		ws[created].idx = created;
		int rc = pthread_create(&ws[created].tid, NULL, worker_main, &ws[created]);
		if (rc != 0) {
			fprintf(stderr, "%s: cannot start thread %u: %s\n", PROG, created + 1, strerror(rc));
			pthread_mutex_lock(&gate_lock);
			start_failed = 1;
			pthread_mutex_unlock(&gate_lock);
			*status = 1;
			break;
		}
	}
	pthread_mutex_lock(&gate_lock);
	while (arrived < created)
		pthread_cond_wait(&gate_cv, &gate_lock);
	this_run->t_start = now_ns();
	if (this_run->opts.steady_max_s > 0) {
		atomic_store(&this_run->t_warm_end, INT64_MAX);
		atomic_store(&this_run->t_end, INT64_MAX);
	} else {
		open_window(this_run->t_start + s_to_ns(this_run->opts.warmup_s), "fixed");
	}
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_lock);
	pthread_mutex_lock(&done_lock);
	started_workers = created;
	pthread_mutex_unlock(&done_lock);
	if (!start_failed)
		control_window(ws, created);
	return created;
}

/* The exit status from how the workers ended; prints the result when there is one to print. */
static int finish(struct worker *ws, unsigned created)
{
	unsigned nfailed = 0;
	int first_failed = -1, verified_all = 1, verified;
	uint64_t bytes;

	for (unsigned k = 0; k < created; k++) {
		verified_all &= !ws[k].check.failed;
		if (ws[k].failed && nfailed++ == 0)
			first_failed = (int)k;
	}
	if (nfailed > 0 && verified_all) {
		/* the run did not complete: no numbers rather than wrong ones */
		if (nfailed > 1)
			fprintf(stderr, "%s: %s (connection %d; %u of %u connections failed)\n", PROG,
				ws[first_failed].err, first_failed + 1, nfailed, created);
		else
			fprintf(stderr, "%s: %s (connection %d of %u)\n", PROG, ws[first_failed].err,
				first_failed + 1, created);
		return 1;
	}
	if (report_run(ws, created, &verified, &bytes) < 0) {
		fprintf(stderr, "%s: out of memory while merging the results\n", PROG);
		return 1;
	}
	for (unsigned k = 0; k < created && !verified; k++) {
		if (ws[k].check.failed) {
			fprintf(stderr, "%s: verification failed: connection %u received bytes that differ from the "
				"pattern at stream offset %" PRIu64 " (message size %zu)\n",
				PROG, k + 1, ws[k].check.first_bad_offset, this_run->opts.msg_size);
			return 1;
		}
	}
	if (bytes == 0) {
		/* nothing to report is not a measurement of zero: say so and fail */
		fprintf(stderr, "%s: no %s completed within the %g s window; lengthen --duration\n", PROG,
			this_run->opts.mode == MODE_LATENCY ? "round trip" : "data", this_run->opts.duration_s);
		return 1;
	}
	return 0;
}

/* The rounds one after another, each on its own --threads workers (ws holds them all); a round
 * that could not start or lost a connection ends the run. The number of workers started. */
static unsigned run_rounds(struct worker *ws, int *status)
{
	unsigned per = this_run->opts.threads, created = 0;

	for (unsigned r = 0; r < this_run->opts.rounds; r++) {
		struct worker *round_ws = ws + (size_t)r * per;
		begin_round(r);
		unsigned got = start_workers(round_ws, status);
		int failed = got < per || *status != 0;
		for (unsigned k = 0; k < got; k++) {
			pthread_join(round_ws[k].tid, NULL);
			failed |= round_ws[k].failed || round_ws[k].check.failed;
		}
		created += got;
		if (failed)
			break;
	}
	return created;
}

int main(int argc, char **argv)
{
	struct worker *ws;
	int status = 0;

	parse_client_options(argc, argv, PROG, &this_run->opts);
	signal(SIGPIPE, SIG_IGN);
	resolve_client_port(PROG, &this_run->opts); /* before any clock: waiting for the server is not the run */
	pthread_condattr_t cattr;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC); /* now_ns() is CLOCK_MONOTONIC */
	pthread_cond_init(&done_cv, &cattr);
	pthread_condattr_destroy(&cattr);
	this_run->window_s = this_run->opts.duration_s / this_run->opts.rounds;
	run_intervals_init(this_run);

	this_run->expected = malloc(this_run->opts.msg_size);
	ws = calloc((size_t)this_run->opts.threads * this_run->opts.rounds, sizeof(*ws));
	if (!this_run->expected || !ws) {
		fprintf(stderr, "%s: out of memory for %zu-byte messages\n", PROG, this_run->opts.msg_size);
		return 1;
	}
	pattern_fill(this_run->expected, 0, this_run->opts.msg_size);

	unsigned created = run_rounds(ws, &status);
	if (status == 0)
		status = finish(ws, created);
	for (unsigned k = 0; k < created; k++) {
		free(ws[k].rtt_ns);
		bins_free(&ws[k].bins);
	}
	free(ws);
	free(rounds[0].expected);
	return status;
}
