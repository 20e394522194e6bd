/* Command-line flags of the servers and the client.
 *
 * Any problem (unknown flag, missing value, not a number, out of range, bad address, missing
 * required flag) prints ONE line "PROG: --flag: what was wrong, got 'VALUE'" on stderr and exits
 * with status 2; --help prints the usage on stdout and exits 0.
 */
#ifndef COPYLAB_OPTIONS_H
#define COPYLAB_OPTIONS_H

#include <stddef.h>

#include "limits.h"
#include "sockutil.h"

#define CONGESTION_NAME_MAX 16 /* TCP_CA_NAME_MAX, with the terminating NUL */

struct server_options {
	const char *bind;
	unsigned port; /* 0: any free port (announced on stderr) */
	size_t msg_size;
	int mode;      /* enum mode */
	size_t working_set; /* bytes of distinct messages each connection cycles through */
	size_t ring_memory; /* the bound on one connection's ring; 0: RING_MEMORY_MAX (ring.h) */
	const char *congestion; /* TCP congestion control of every connection; NULL: the host's */
	unsigned max_connections; /* served at once; 0: derived (server_common.c, connection_cap) */
	int json;
	struct endpoint ep;
};

struct client_options {
	const char *connect;
	unsigned port;
	const char *port_from; /* read the port from this file (a FIFO a harness writes) instead of --port */
	size_t msg_size;
	int mode;
	unsigned threads;
	double duration_s;
	double warmup_s;   /* fixed warm-up; with steady_max_s, the least warm-up */
	double steady_max_s; /* > 0: after warmup_s, open the window once the rates are steady, at most this later */
	unsigned rounds;   /* the window split over this many fresh sets of connections, one after another */
	double interval_s; /* the rate is reported per interval of this length */
	double setup_timeout_s; /* how long the server may take to answer the hello (it builds its ring first) */
	int receive;   /* enum receive_strategy (registry.h) */
	const char *congestion; /* TCP congestion control of every connection; NULL: the host's */
	int verify;
	int announce;  /* print "window open"/"window closed" on stderr for a harness */
	int json;
	struct endpoint ep;
};

void parse_server_options(int argc, char **argv, const char *prog, struct server_options *o);
void parse_client_options(int argc, char **argv, const char *prog, struct client_options *o);
/* --port-from: wait for the port on that file (blocks until a writer opens a FIFO), then set o->ep;
 * a harness starts the client while the server starts and hands over the port once it listens.
 * Nothing to do with --port. A bad or missing number is one line on stderr and exit status 2. */
void resolve_client_port(const char *prog, struct client_options *o);

#endif
