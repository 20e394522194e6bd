/* How far apart two CPUs are: the round trip of one cache line between a thread on each
 * (cpuprobe, for the engine's probes around a run; the client, between the rounds of a run).
 */
#ifndef COPYLAB_CPUDISTANCE_H
#define COPYLAB_CPUDISTANCE_H

#include <stddef.h>

/* The median round trip, in ns, over chunks of bounces for about ms milliseconds, the ping side on
 * ping_cpu and the pong side on pong_cpu (both threads born on their CPUs; the caller's own
 * affinity is untouched). -1 with why filled when a thread could not be started or run there.
 * One probe at a time per process. */
double cpu_round_trip_ns(int ping_cpu, int pong_cpu, double ms, char *why, size_t why_len);

#endif
