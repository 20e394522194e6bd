/* Command-line flags of the servers and the client.
 *
 * Any problem (unknown flag, missing value, not a number, out of range, bad address, missing
 * required flag) prints ONE line "PROG: --flag: what was wrong, got 'VALUE'" on stderr and exits
 * with status 2; --help prints the usage on stdout and exits 0.
 */
#ifndef COPYLAB_OPTIONS_H
#define COPYLAB_OPTIONS_H

#include <stddef.h>

#include "sockutil.h"

#define THREADS_MAX 1024
#define SECONDS_MAX 3600.0

struct server_options {
	const char *bind;
	unsigned port; /* 0: any free port (announced on stderr) */
	size_t msg_size;
	int mode;      /* enum mode */
	int json;
	struct endpoint ep;
};

/* How the client asks for data: one message's (remaining) bytes per recv(), as an application that
 * reads whole messages does (and iperf3 does), or up to RECV_BULK_BYTES per recv(). */
enum receive_strategy { RECEIVE_MESSAGE = 1, RECEIVE_BULK = 2 };
#define RECV_BULK_BYTES (256 * 1024)
#define DURATION_MIN_S 0.01 /* shorter windows hold no meaningful measurement */

struct client_options {
	const char *connect;
	unsigned port;
	size_t msg_size;
	int mode;
	unsigned threads;
	double duration_s;
	double warmup_s;
	int receive;   /* enum receive_strategy */
	int verify;
	int announce;  /* print "window open"/"window closed" on stderr for a harness */
	int json;
	struct endpoint ep;
};

/* "message", "bulk" or "?" */
const char *receive_name(int receive);

void parse_server_options(int argc, char **argv, const char *prog, struct server_options *o);
void parse_client_options(int argc, char **argv, const char *prog, struct client_options *o);

#endif
