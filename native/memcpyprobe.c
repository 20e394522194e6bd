/* memcpyprobe: this host's cost of one memcpy per byte, the physical reference of the cost model.
 *
 *   memcpyprobe --msg-size BYTES --working-set BYTES [--ms N] [--cpu N] [--ring-memory BYTES]
 *
 * Does what A1's sender does in user space and nothing else: serialises message after message of its
 * ring (ring.c: the same distinct messages of 8 separately allocated fields, cycled through the same
 * working set) into one send buffer of the message's size, for N milliseconds (default 400) in 16
 * blocks, pinned to CPU N when given. Prints one JSON object: the median block's ns per byte (a block
 * the scheduler or the hypervisor interrupted is an outlier, not the cost), the blocks' range, the
 * bytes copied, and the working set as the ring holds it (a ring has a minimum and a maximum of messages;
 * --ring-memory raises the maximum as the servers' flag does, so a cache-level working set is held exactly).
 * Bad arguments: exit 2 and one line naming the flag.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "limits.h"
#include "message.h"
#include "ring.h"

#define BLOCKS 16
#define MAX_WORKING_SET (1ULL << 30)
#define MAX_MS 10000

struct options {
	size_t working_set;
	size_t msg_size;
	size_t ring_memory;
	long ms;
	int cpu;
};

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int usage(const char *flag, const char *problem)
{
	fprintf(stderr, "memcpyprobe: %s: %s\n", flag, problem);
	return 2;
}

static int parse_number(const char *text, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (text == NULL || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	*out = strtoull(text, &end, 10);
	return (errno || *end || *out < min || *out > max) ? -1 : 0;
}

static int parse(int argc, char **argv, struct options *opt)
{
	unsigned long long value;

	*opt = (struct options){ .ms = 400, .cpu = -1 };
	for (int i = 1; i < argc; i++) {
		const char *flag = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(flag, "--working-set") == 0) {
			if (parse_number(arg, 1, MAX_WORKING_SET, &value))
				return usage(flag, "must be a number of bytes from 1 to 1073741824");
			opt->working_set = (size_t)value;
		} else if (strcmp(flag, "--msg-size") == 0) {
			if (parse_number(arg, MESSAGE_FIELDS, MAX_WORKING_SET, &value))
				return usage(flag, "must be a number of bytes from 8 to 1073741824");
			opt->msg_size = (size_t)value;
		} else if (strcmp(flag, "--ms") == 0) {
			if (parse_number(arg, 1, MAX_MS, &value))
				return usage(flag, "must be a number of milliseconds from 1 to 10000");
			opt->ms = (long)value;
		} else if (strcmp(flag, "--ring-memory") == 0) {
			if (parse_number(arg, RING_MEMORY_MAX, RING_MEMORY_LIMIT, &value))
				return usage(flag, "must be a number of bytes from 8388608 to 17179869184");
			opt->ring_memory = (size_t)value;
		} else if (strcmp(flag, "--cpu") == 0) {
			if (parse_number(arg, 0, CPU_SETSIZE - 1, &value))
				return usage(flag, "must be a CPU number");
			opt->cpu = (int)value;
		} else {
			return usage(flag, "unknown flag (give --msg-size BYTES --working-set BYTES [--ms N] [--cpu N] [--ring-memory BYTES])");
		}
		i++;
	}
	if (opt->working_set == 0)
		return usage("--working-set", "missing");
	if (opt->msg_size == 0)
		return usage("--msg-size", "missing");
	return 0;
}

static int pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One block: serialises messages until its share of the time has passed; returns the bytes copied. */
static size_t copy_block(struct ring *ring, char *wire, size_t msg_size, double until)
{
	size_t copied = 0;

	do {
		for (int k = 0; k < 16; k++) {
			message_serialize(&ring_next(ring)->msg, wire);
			__asm__ volatile("" : : "r"(wire) : "memory"); /* every copy is kept: the buffer counts as read */
			copied += msg_size;
		}
	} while (now_ns() < until);
	return copied;
}

int main(int argc, char **argv)
{
	struct options opt;
	double per_byte[BLOCKS], total_ns = 0;
	size_t total = 0;
	unsigned long sink = 0;
	struct ring ring;
	char *wire;
	int rc = parse(argc, argv, &opt);

	if (rc)
		return rc;
	if (pin(opt.cpu)) {
		fprintf(stderr, "memcpyprobe: --cpu %d: %s\n", opt.cpu, strerror(errno));
		return 1;
	}
	ring_set_memory(opt.ring_memory ? opt.ring_memory : opt.working_set + opt.working_set / 2);
	wire = malloc(opt.msg_size);
	if (wire == NULL || ring_init(&ring, opt.msg_size, opt.working_set, 0) < 0) {
		fprintf(stderr, "memcpyprobe: cannot allocate a ring of %zu-byte messages over %zu bytes: %s\n",
			opt.msg_size, opt.working_set, strerror(errno));
		free(wire);
		return 1;
	}
	memset(wire, 0, opt.msg_size); /* the ring's fields were written when allocated: every page is touched */
	for (int b = 0; b < BLOCKS; b++) {
		double start = now_ns(), end;
		size_t copied = copy_block(&ring, wire, opt.msg_size, start + (double)opt.ms * 1e6 / BLOCKS);

		end = now_ns();
		per_byte[b] = (end - start) / (double)copied;
		total += copied;
		total_ns += end - start;
		sink += (unsigned char)wire[copied % opt.msg_size];
	}
	qsort(per_byte, BLOCKS, sizeof(per_byte[0]), compare_doubles);
	printf("{\"working_set_bytes\": %zu, \"msg_size\": %zu, \"messages\": %u, \"cpu\": %d, \"blocks\": %d, "
	       "\"ns_per_byte\": %.6f, \"ns_per_byte_min\": %.6f, \"ns_per_byte_max\": %.6f, "
	       "\"bytes\": %zu, \"seconds\": %.6f, \"checksum\": %lu}\n",
	       (size_t)ring.n * opt.msg_size, opt.msg_size, ring.n, opt.cpu, BLOCKS, (per_byte[BLOCKS / 2 - 1] + per_byte[BLOCKS / 2]) / 2,
	       per_byte[0], per_byte[BLOCKS - 1], total, total_ns / 1e9, sink);
	ring_free(&ring);
	free(wire);
	return ferror(stdout) ? 1 : 0;
}
