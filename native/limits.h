/* Limits and defaults shared by the native programs and the Python package: the one source.
 *
 * lib/copylab/contract.py reads the "#define NAME VALUE" lines of this file (a plain number each,
 * nothing else on the line but a comment), so a limit is stated once and the C flags, `copylab run`
 * and the grid schema cannot disagree. Keep every value a literal.
 */
#ifndef COPYLAB_LIMITS_H
#define COPYLAB_LIMITS_H

#define MSG_SIZE_MIN 8                 /* bytes: one byte per field at least */
#define MSG_SIZE_MAX 67108864          /* bytes: 64 MiB */
#define THREADS_MAX 1024               /* client threads = connections */
#define ROUNDS_MAX 16                  /* client: fresh sets of connections one pass's window is split over */
#define DURATION_MIN_S 0.1             /* seconds: shorter windows hold no meaningful measurement */
#define SECONDS_MAX 3600.0             /* seconds: the longest window, warm-up or bound */
#define WARMUP_MAX_S 600.0             /* seconds: the longest warm-up a grid may ask for */
#define INTERVAL_MIN_S 0.01            /* seconds: the client's shortest reporting interval */
#define INTERVAL_DEFAULT_S 0.05        /* seconds: the client's reporting interval */
#define INTERVALS_MAX 4096             /* per run: a longer run reports coarser intervals */
#define WORKING_SET_MAX 1073741824     /* bytes of distinct messages a server cycles through: 1 GiB */
#define WORKING_SET_DEFAULT 4194304    /* bytes: 4 MiB, Linux's default tcp_wmem maximum */
#define RING_MESSAGES_MIN 4            /* distinct messages at least (A3 needs some in flight) */
#define RING_MEMORY_MAX 8388608        /* bytes per connection, counting whole pages per field */
#define RING_BUDGET 268435456          /* bytes for all connections' rings together: 256 MiB */
#define RING_MEMORY_LIMIT 17179869184  /* bytes: the most --ring-memory may raise the bound per connection to */
#define RECV_BULK_BYTES 262144         /* bytes per recv() with --receive bulk */
#define STEADY_INTERVALS 4             /* intervals the steady-state test looks at */
#define STEADY_TOLERANCE 0.10          /* their rates within this share of their mean: steady */

#endif
