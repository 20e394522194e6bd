#include "cpudistance.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK_ROUND_TRIPS 256
#define MAX_CHUNKS 65536
#define STOP (-1L)

struct line {
	_Alignas(64) atomic_long value; /* odd: the pong side's turn; even: the ping side's */
	char pad[64 - sizeof(atomic_long)];
};

static struct line shared;
static double chunk_ns[MAX_CHUNKS];

struct ping_job {
	double ms;
	double result; /* the median, or -1: the pong side never answered */
};

static double now_ns(void)
{
	struct timespec t;

	/* CLOCK_MONOTONIC cannot fail with a valid pointer (clock_gettime(2): EINVAL, EFAULT only) */
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *pong(void *unused)
{
	(void)unused;
	for (long expect = 1;; expect += 2) {
		long seen;

		while ((seen = atomic_load_explicit(&shared.value, memory_order_acquire)) != expect && seen != STOP)
			;
		if (seen == STOP)
			return NULL;
		atomic_store_explicit(&shared.value, expect + 1, memory_order_release);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The ping side: bounce for about ms, then stop the pong side. */
static void *ping(void *arg)
{
	struct ping_job *job = arg;
	size_t chunks = 0;
	long value = 0;
	double start = now_ns(), end = start + job->ms * 1e6;

	while (chunks < MAX_CHUNKS) {
		double t0 = now_ns(), t1;

		for (int i = 0; i < CHUNK_ROUND_TRIPS; i++) {
			atomic_store_explicit(&shared.value, value + 1, memory_order_release);
			while (atomic_load_explicit(&shared.value, memory_order_acquire) != value + 2) {
				if (chunks == 0 && now_ns() - start > job->ms * 1e6 + 1e9)
					goto stop; /* the pong side never answered (it could not run on its CPU) */
			}
			value += 2;
		}
		t1 = now_ns();
		chunk_ns[chunks++] = (t1 - t0) / CHUNK_ROUND_TRIPS;
		if (t1 >= end)
			break;
	}
stop:
	atomic_store(&shared.value, STOP);
	if (chunks == 0) {
		job->result = -1;
		return NULL;
	}
	qsort(chunk_ns, chunks, sizeof(chunk_ns[0]), cmp_double);
	job->result = chunk_ns[chunks / 2];
	return NULL;
}

/* A thread born on cpu: one that inherits another CPU and moves itself would share that CPU with
 * the spinning other side until the scheduler moved it. 0 or an errno value. */
static int start_on(int cpu, pthread_t *thread, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	err = pthread_attr_init(&attr);
	if (err != 0)
		return err;
	err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (err == 0)
		err = pthread_create(thread, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return err;
}

double cpu_round_trip_ns(int ping_cpu, int pong_cpu, double ms, char *why, size_t why_len)
{
	struct ping_job job = {.ms = ms, .result = -1};
	pthread_t pong_thread, ping_thread;
	int err;

	atomic_store(&shared.value, 0);
	err = start_on(pong_cpu, &pong_thread, pong, NULL);
	if (err != 0) {
		snprintf(why, why_len, "cannot start a thread on CPU %d: %s", pong_cpu, strerror(err));
		return -1;
	}
	err = start_on(ping_cpu, &ping_thread, ping, &job);
	if (err != 0) {
		atomic_store(&shared.value, STOP);
		pthread_join(pong_thread, NULL);
		snprintf(why, why_len, "cannot start a thread on CPU %d: %s", ping_cpu, strerror(err));
		return -1;
	}
	pthread_join(ping_thread, NULL);
	pthread_join(pong_thread, NULL);
	if (job.result < 0)
		snprintf(why, why_len, "cannot run a thread on CPU %d", pong_cpu);
	return job.result;
}
