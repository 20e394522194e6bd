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

struct client_options {
	const char *connect;
	unsigned port;
	size_t msg_size;
	int mode;
	unsigned threads;
	double duration_s;
	double warmup_s;
	int verify;
	int json;
	struct endpoint ep;
};

void parse_server_options(int argc, char **argv, const char *prog, struct server_options *o);
void parse_client_options(int argc, char **argv, const char *prog, struct client_options *o);

#endif
