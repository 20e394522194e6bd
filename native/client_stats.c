/* What the client reports: counts per interval, the steady-state test, percentiles and the summary,
 * written once for both output formats (output.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "limits.h"
#include "output.h"
#include "protocol.h"
#include "registry.h"
#include "timing.h"

void run_intervals_init(struct run *run)
{
	const struct client_options *o = &run->opts;
	/* the latest the window can close: the steady-state test may open it up to steady_max late */
	double span = o->warmup_s + o->steady_max_s + run->window_s;
	double interval = o->interval_s;

	if (span / interval > INTERVALS_MAX)
		interval = span / INTERVALS_MAX; /* a long run reports coarser intervals, never more of them */
	run->interval_ns = s_to_ns(interval);
	if (run->interval_ns < 1)
		run->interval_ns = 1;
	run->nbins = (unsigned)(s_to_ns(span) / run->interval_ns) + 2;
}

int bins_alloc(struct bins *b, unsigned nbins, int latency)
{
	memset(b, 0, sizeof(*b));
	b->bytes = calloc(nbins, sizeof(*b->bytes));
	if (latency) {
		b->rtts = calloc(nbins, sizeof(*b->rtts));
		b->rtt_ns = calloc(nbins, sizeof(*b->rtt_ns));
	}
	if (!b->bytes || (latency && (!b->rtts || !b->rtt_ns))) {
		bins_free(b);
		return -1;
	}
	return 0;
}

void bins_free(struct bins *b)
{
	free(b->bytes);
	free(b->rtts);
	free(b->rtt_ns);
	memset(b, 0, sizeof(*b));
}

static long bin_of(const struct worker *w, int64_t t)
{
	int64_t k = (t - w->run->t_start) / w->run->interval_ns;
	return k >= 0 && k < (int64_t)w->run->nbins ? (long)k : -1;
}

void bins_add_bytes(struct worker *w, int64_t t, uint64_t bytes)
{
	long k = bin_of(w, t);
	if (k >= 0)
		atomic_fetch_add_explicit(&w->bins.bytes[k], bytes, memory_order_relaxed);
}

void bins_add_rtt(struct worker *w, int64_t t, uint64_t ns)
{
	long k = bin_of(w, t);
	if (k >= 0 && w->bins.rtts) {
		atomic_fetch_add_explicit(&w->bins.rtts[k], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&w->bins.rtt_ns[k], ns, memory_order_relaxed);
	}
}

/* All workers' count in interval k: bytes in throughput mode, round trips in latency mode. */
static uint64_t interval_total(struct worker *ws, unsigned n, unsigned k)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		_Atomic uint64_t *bins = ws[i].bins.rtts ? ws[i].bins.rtts : ws[i].bins.bytes;
		sum += atomic_load_explicit(&bins[k], memory_order_relaxed);
	}
	return sum;
}

int steady_before(struct worker *ws, unsigned n, unsigned k)
{
	double v[STEADY_INTERVALS], mean = 0;

	if (k < STEADY_INTERVALS)
		return 0;
	for (unsigned i = 0; i < STEADY_INTERVALS; i++) {
		v[i] = (double)interval_total(ws, n, k - STEADY_INTERVALS + i);
		mean += v[i] / STEADY_INTERVALS;
	}
	if (mean <= 0)
		return 0;
	for (unsigned i = 0; i < STEADY_INTERVALS; i++)
		if (fabs(v[i] - mean) > STEADY_TOLERANCE * mean)
			return 0;
	return 1;
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
	const char *congestion;
	uint64_t bytes, messages, total_bytes, recv_calls;
	uint64_t mapped_bytes, copied_bytes;
	unsigned rcv_mss; /* the smallest receive MSS of the connections */
	double duration_s, throughput_gbps;
	double lat_mean_us, lat_p50_us, lat_p99_us, lat_min_us, lat_max_us;
	int verified;
	unsigned connections;
};

static double span_s(int64_t start, int64_t end)
{
	return start >= 0 && end > start ? ns_to_s(end - start) : 0;
}

/* The measured time: per round (ws holds the rounds' workers in order, each pointing at its round)
 * the union of its connections' windows, summed over the rounds; and what they counted in it. */
static void sum_workers(struct worker *ws, unsigned n, struct summary *s)
{
	int64_t wstart = -1, wend = -1;
	const struct run *round = ws[0].run;
	double measured = 0;

	memset(s, 0, sizeof(*s));
	s->impl = ws[0].impl;
	s->congestion = ws[0].congestion[0] ? ws[0].congestion : "?";
	s->verified = 1;
	for (unsigned k = 0; k < n; k++) {
		struct worker *w = &ws[k];
		if (w->run != round) {
			measured += span_s(wstart, wend);
			wstart = wend = -1;
			round = w->run;
		}
		s->bytes += w->bytes;
		s->messages += w->messages;
		s->total_bytes += w->total_bytes;
		s->recv_calls += w->recv_calls;
		s->mapped_bytes += w->mapped_bytes;
		s->copied_bytes += w->copied_bytes;
		if (w->rcv_mss && (!s->rcv_mss || w->rcv_mss < s->rcv_mss))
			s->rcv_mss = w->rcv_mss;
		s->verified &= !w->check.failed;
		s->connections += w->fd >= 0; /* the worker keeps the number after closing it */
		if (strcmp(w->congestion, s->congestion) != 0 && w->congestion[0])
			s->congestion = "mixed";
		if (w->window_start_ns >= 0) {
			if (wstart < 0 || w->window_start_ns < wstart)
				wstart = w->window_start_ns;
			if (w->window_end_ns > wend)
				wend = w->window_end_ns;
		}
	}
	measured += span_s(wstart, wend);
	s->duration_s = measured > 0 ? measured : NAN;
	s->throughput_gbps = (double)s->bytes * 8 / s->duration_s / 1e9;
}

/* Mean and percentiles of every measured round trip. 0, or -1 out of memory. */
static int latency_stats(struct worker *ws, unsigned n, struct summary *s)
{
	size_t nsamples = 0, at = 0;
	double sum = 0;

	for (unsigned k = 0; k < n; k++)
		nsamples += ws[k].nrtt;
	if (nsamples == 0)
		return 0;
	uint64_t *all = malloc(nsamples * sizeof(*all));
	if (!all)
		return -1;
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

static int summarise(struct worker *ws, unsigned n, struct summary *s)
{
	const struct client_options *o = &ws[0].run->opts;

	sum_workers(ws, n, s);
	s->lat_mean_us = s->lat_p50_us = s->lat_p99_us = s->lat_min_us = s->lat_max_us = NAN;
	if (o->mode == MODE_THROUGHPUT) {
		/* not a round trip: the mean time one connection took per message (rounds run one after
		 * another, so --threads connections at a time) */
		if (s->messages > 0)
			s->lat_mean_us = s->duration_s * o->threads / (double)s->messages * 1e6;
		return 0;
	}
	return latency_stats(ws, n, s);
}

/* Intervals of one round, from its start to the end of its window. */
static unsigned round_bins(const struct run *run)
{
	int64_t end = atomic_load(&run->t_end);
	unsigned nb = end == INT64_MAX ? 0 : (unsigned)((end - run->t_start + run->interval_ns - 1) / run->interval_ns);

	return nb > run->nbins ? run->nbins : nb;
}

/* The rounds of ws (the workers of each round together, in order): how many, and each one's
 * intervals and warm-up. */
static unsigned list_rounds(struct worker *ws, unsigned n, const struct run **runs)
{
	unsigned count = 0;

	for (unsigned i = 0; i < n; i++)
		if (count == 0 || ws[i].run != runs[count - 1])
			runs[count++] = ws[i].run;
	return count;
}

/* One round's intervals (all its workers together) into bytes, rtts and rtt_mean at [at, at + nb). */
static void fill_round(struct worker *ws, unsigned n, const struct run *run, unsigned at, unsigned nb,
		       uint64_t *bytes, uint64_t *rtts, double *rtt_mean)
{
	for (unsigned k = 0; k < nb; k++) {
		uint64_t ns = 0;
		for (unsigned i = 0; i < n; i++) {
			if (ws[i].run != run)
				continue;
			bytes[at + k] += atomic_load(&ws[i].bins.bytes[k]);
			if (ws[i].bins.rtts) {
				rtts[at + k] += atomic_load(&ws[i].bins.rtts[k]);
				ns += atomic_load(&ws[i].bins.rtt_ns[k]);
			}
		}
		rtt_mean[at + k] = rtts[at + k] ? (double)ns / (double)rtts[at + k] / 1e3 : NAN;
	}
}

/* The per-interval series of each round from its start to the end of its window (all its workers
 * together), the rounds one after another; round_intervals and round_warmup_s say where each
 * round's series and window begin, round_gap_s how long from the previous round's window (null for
 * the first). 0, or -1 out of memory. */
static int out_intervals(struct output *o, struct worker *ws, unsigned n)
{
	const struct run *runs[ROUNDS_MAX];
	unsigned nr = list_rounds(ws, n, runs), total = 0;
	uint64_t counts[ROUNDS_MAX];
	double warmups[ROUNDS_MAX], gaps[ROUNDS_MAX];

	for (unsigned r = 0; r < nr; r++) {
		int64_t warm_end = atomic_load(&runs[r]->t_warm_end);
		int64_t before = r ? atomic_load(&runs[r - 1]->t_end) : INT64_MAX;
		counts[r] = round_bins(runs[r]);
		warmups[r] = warm_end == INT64_MAX ? NAN : ns_to_s(warm_end - runs[r]->t_start);
		/* what a round costs beyond its window: the previous window's end to this one's start */
		gaps[r] = warm_end == INT64_MAX || before == INT64_MAX ? NAN : ns_to_s(warm_end - before);
		total += (unsigned)counts[r];
	}
	uint64_t *bytes = calloc(total + 1, sizeof(*bytes));
	double *rtt_mean = calloc(total + 1, sizeof(*rtt_mean));
	uint64_t *rtts = calloc(total + 1, sizeof(*rtts));
	if (!bytes || !rtt_mean || !rtts) {
		free(bytes), free(rtt_mean), free(rtts);
		return -1;
	}
	for (unsigned r = 0, at = 0; r < nr; at += (unsigned)counts[r], r++)
		fill_round(ws, n, runs[r], at, (unsigned)counts[r], bytes, rtts, rtt_mean);
	out_num(o, "interval_s", ns_to_s(runs[0]->interval_ns));
	out_u64_array(o, "interval_bytes", bytes, total);
	if (runs[0]->opts.mode == MODE_LATENCY) {
		out_u64_array(o, "interval_rtts", rtts, total);
		out_num_array(o, "interval_rtt_mean_us", rtt_mean, total);
	}
	out_u64_array(o, "round_intervals", counts, nr);
	out_num_array(o, "round_warmup_s", warmups, nr);
	out_num_array(o, "round_gap_s", gaps, nr);
	free(bytes), free(rtt_mean), free(rtts);
	return 0;
}

/* The warm-ups of every round, summed (NaN if a round's window never opened), and what ended
 * them: a round bounded by --steady-max says "bound" for the run. */
static double warmup_total(struct worker *ws, unsigned n, const char **why)
{
	const struct run *runs[ROUNDS_MAX];
	unsigned nr = list_rounds(ws, n, runs);
	double sum = 0;

	*why = runs[0]->warmup_end;
	for (unsigned r = 0; r < nr; r++) {
		int64_t warm_end = atomic_load(&runs[r]->t_warm_end);
		if (warm_end == INT64_MAX)
			return NAN;
		sum += ns_to_s(warm_end - runs[r]->t_start);
		if (runs[r]->warmup_end && strcmp(runs[r]->warmup_end, "bound") == 0)
			*why = "bound";
	}
	return sum;
}

/* Every flag, then the totals, then the intervals: one description for both formats. */
static int print_summary(struct worker *ws, unsigned n, const struct summary *s)
{
	const struct client_options *o = &ws[0].run->opts;
	const char *warmup_end;
	double warmup_s = warmup_total(ws, n, &warmup_end);
	struct output out;

	out_begin(&out, stdout, o->json);
	out_str(&out, "role", "client");
	out_str(&out, "impl", impl_name(s->impl));
	out_str(&out, "mode", mode_name(o->mode));
	out_u64(&out, "msg_size", o->msg_size);
	out_u64(&out, "threads", o->threads);
	out_str(&out, "receive", receive_name(o->receive));
	out_str(&out, "congestion_asked", o->congestion ? o->congestion : "host");
	out_str(&out, "congestion", s->congestion);
	out_num(&out, "warmup_min_s", o->warmup_s);
	out_num(&out, "steady_max_s", o->steady_max_s);
	out_num(&out, "warmup_s", warmup_s);
	out_str(&out, "warmup_end", warmup_end);
	out_u64(&out, "rounds", o->rounds);
	out_num(&out, "duration_s", s->duration_s);
	out_u64(&out, "bytes", s->bytes);
	out_u64(&out, "messages", s->messages);
	out_u64(&out, "total_bytes", s->total_bytes);
	out_num(&out, "throughput_gbps", s->throughput_gbps);
	out_num(&out, "latency_us", s->lat_mean_us);
	out_num(&out, "latency_p50_us", s->lat_p50_us);
	out_num(&out, "latency_p99_us", s->lat_p99_us);
	out_num(&out, "latency_min_us", s->lat_min_us);
	out_num(&out, "latency_max_us", s->lat_max_us);
	if (o->receive == RECEIVE_discard) /* MSG_TRUNC: the bytes were never seen */
		out_null(&out, "verified");
	else
		out_bool(&out, "verified", s->verified);
	out_str(&out, "verify", o->receive == RECEIVE_discard ? "none" : o->verify ? "full" : "sampled");
	out_u64(&out, "recv_calls", s->recv_calls);
	out_u64(&out, "mapped_bytes", s->mapped_bytes);
	out_u64(&out, "recv_copied_bytes", s->copied_bytes);
	out_u64(&out, "rcv_mss", s->rcv_mss);
	out_u64(&out, "page_size", (uint64_t)sysconf(_SC_PAGESIZE));
	out_u64(&out, "connections", s->connections);
	int rc = out_intervals(&out, ws, n);
	out_end(&out);
	return rc;
}

int report_run(struct worker *ws, unsigned n, int *verified, uint64_t *bytes)
{
	struct summary s;

	if (summarise(ws, n, &s) < 0)
		return -1;
	*verified = s.verified;
	*bytes = s.bytes;
	return print_summary(ws, n, &s);
}
