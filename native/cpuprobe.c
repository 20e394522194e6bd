/* cpuprobe: how far apart two CPUs are, as the round trip of one cache line between them.
 *
 *   cpuprobe CPU_A CPU_B [--ms N]
 *
 * For every line read on stdin it bounces a cache line between a thread on CPU_A and one on CPU_B
 * for N milliseconds (default PROBE_MS_DEFAULT of limits.h: 2) and prints the median round trip of its chunks, in nanoseconds,
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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpudistance.h"
#include "limits.h"

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
	double ms = PROBE_MS_DEFAULT;
	int ping_cpu, pong_cpu;

	if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--ms") == 0)) {
		fprintf(stderr, "usage: cpuprobe CPU_A CPU_B [--ms N]\n");
		return 2;
	}
	ping_cpu = parse_cpu(argv[1], "CPU_A");
	pong_cpu = parse_cpu(argv[2], "CPU_B");
	if (argc == 5) {
		char *end;

		ms = strtod(argv[4], &end);
		if (end == argv[4] || *end != '\0' || !(ms >= PROBE_MS_MIN && ms <= PROBE_MS_MAX)) {
			fprintf(stderr, "cpuprobe: --ms: '%s' is not a number of milliseconds in %g-%g\n", argv[4], PROBE_MS_MIN,
				PROBE_MS_MAX);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN); /* a reader that went away shows as a failed write below */
	while (fgets(request, sizeof(request), stdin) != NULL) {
		char why[128];
		double rt = cpu_round_trip_ns(ping_cpu, pong_cpu, ms, why, sizeof(why));

		if (rt < 0) {
			fprintf(stderr, "cpuprobe: %s\n", why);
			return 1;
		}
		if (printf("%.1f\n", rt) < 0 || fflush(stdout) != 0)
			return 1;
	}
	return ferror(stdin) ? 1 : 0;
}
