/* cpuprobe: how far apart two CPUs are, as the round trip of one cache line between them.
 *
 *   cpuprobe CPU_A CPU_B [--ms N]
 *
 * For every line read on stdin it bounces a cache line between a thread on CPU_A and one on CPU_B
 * for N milliseconds (default 3) and prints the median round trip of its chunks, in nanoseconds,
 * on one line; it exits at end of input. Kept running by the engine for a whole group of points,
 * so a probe costs its N ms and no process start.
 *
 * Why: on a virtual machine the hypervisor places the guest's vCPUs on physical cores, and moves
 * them. While the sender's and the receiver's vCPUs sit on cores that share a cache, the line comes
 * back in ~50-60 ns; when they are apart (another CCD or socket), in ~200-350 ns, and every wake-up
 * and every socket buffer handed from one side to the other costs as much more. A throughput run
 * taken in that state measures the placement, not the send path (docs/methodology.md, "Noise").
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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
static int pong_cpu;
static double chunk_ns[MAX_CHUNKS];

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
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

/* The pong thread is born on its CPU: a thread that inherits the ping side's CPU and moves itself
 * would share that CPU with the spinning ping side until the scheduler moved it. */
static int start_pong(pthread_t *thread)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(pong_cpu, &set);
	err = pthread_attr_init(&attr);
	if (err != 0)
		return err;
	err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (err == 0)
		err = pthread_create(thread, &attr, pong, NULL);
	pthread_attr_destroy(&attr);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One probe: the median round trip over chunks of CHUNK_ROUND_TRIPS, for about ms milliseconds.
 * Returns -1 when the pong thread could not be started or pinned. */
static double probe(double ms)
{
	pthread_t thread;
	size_t chunks = 0;
	long value = 0;
	double start, end;
	int err;

	atomic_store(&shared.value, 0);
	err = start_pong(&thread);
	if (err != 0) {
		fprintf(stderr, "cpuprobe: cannot start a thread on CPU %d: %s\n", pong_cpu, strerror(err));
		return -1;
	}
	start = now_ns();
	end = start + ms * 1e6;
	while (chunks < MAX_CHUNKS) {
		double t0 = now_ns(), t1;

		for (int i = 0; i < CHUNK_ROUND_TRIPS; i++) {
			atomic_store_explicit(&shared.value, value + 1, memory_order_release);
			while (atomic_load_explicit(&shared.value, memory_order_acquire) != value + 2) {
				if (chunks == 0 && now_ns() - start > ms * 1e6 + 1e9)
					goto stop; /* the pong thread never answered (it could not be pinned) */
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
	pthread_join(thread, NULL);
	if (chunks == 0) {
		fprintf(stderr, "cpuprobe: cannot run a thread on CPU %d\n", pong_cpu);
		return -1;
	}
	qsort(chunk_ns, chunks, sizeof(chunk_ns[0]), cmp_double);
	return chunk_ns[chunks / 2];
}

static int parse_cpu(const char *text, const char *what)
{
	char *end;
	long cpu;

	errno = 0;
	cpu = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || cpu < 0 || cpu >= CPU_SETSIZE) {
		fprintf(stderr, "cpuprobe: %s: '%s' is not a CPU number\n", what, text);
		exit(2);
	}
	return (int)cpu;
}

int main(int argc, char **argv)
{
	char request[64];
	double ms = 3.0;
	int ping_cpu, err;

	if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--ms") == 0)) {
		fprintf(stderr, "usage: cpuprobe CPU_A CPU_B [--ms N]\n");
		return 2;
	}
	ping_cpu = parse_cpu(argv[1], "CPU_A");
	pong_cpu = parse_cpu(argv[2], "CPU_B");
	if (argc == 5) {
		char *end;

		ms = strtod(argv[4], &end);
		if (end == argv[4] || *end != '\0' || !(ms >= 0.1 && ms <= 1000.0)) {
			fprintf(stderr, "cpuprobe: --ms: '%s' is not a number of milliseconds in 0.1-1000\n", argv[4]);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN); /* a reader that went away shows as a failed write below */
	err = pin_to(ping_cpu);
	if (err != 0) {
		fprintf(stderr, "cpuprobe: cannot run on CPU %d: %s\n", ping_cpu, strerror(err));
		return 1;
	}
	while (fgets(request, sizeof(request), stdin) != NULL) {
		double rt = probe(ms);

		if (rt < 0)
			return 1;
		if (printf("%.1f\n", rt) < 0 || fflush(stdout) != 0)
			return 1;
	}
	return ferror(stdin) ? 1 : 0;
}
