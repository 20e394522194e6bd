#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limits.h"
#include "protocol.h"
#include "registry.h"

enum opt_kind { OPT_ADDR, OPT_PORT, OPT_PORT_OR_ZERO, OPT_MSG_SIZE, OPT_MODE, OPT_RECEIVE, OPT_THREADS, OPT_ROUNDS, OPT_DURATION,
		OPT_SECONDS_OR_ZERO, OPT_INTERVAL, OPT_BYTES, OPT_RING_MEMORY, OPT_CONGESTION, OPT_PATH, OPT_SWITCH };

struct opt_spec {
	const char *name;
	enum opt_kind kind;
	void *dst;
	int required;
	int seen;
};

static void fail(const char *prog, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Unsigned decimal integer, the whole text, within [lo, hi]; -1 if not. */
static int parse_uint(const char *text, unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
	char *end;

	if (text[0] < '0' || text[0] > '9') /* rejects "", "-1", "+1", " 1" that strtoull would take */
		return -1;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Decimal seconds (e.g. "0.5", "2e-1"), finite, within [min, max]. */
static int parse_seconds(const char *text, double min, double max, double *out)
{
	char *end;

	if (!((text[0] >= '0' && text[0] <= '9') || text[0] == '.'))
		return -1;
	errno = 0;
	double v = strtod(text, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int congestion_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CONGESTION_NAME_MAX)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '-'))
			return 0;
	return 1;
}

/* A congestion control the kernel would refuse is a bad flag, found before any connection: a
 * socket of our own tries it (root may select any available one; others only the allowed ones). */
static void check_congestion(const char *prog, const char *name)
{
	char available[256] = "";

	if (!name || try_congestion(name, available, sizeof(available)) == 0)
		return;
	if (available[0])
		fail(prog, "--congestion: '%s' cannot be used here: %s (available: %s)", name, strerror(errno), available);
	fail(prog, "--congestion: '%s' cannot be used here: %s", name, strerror(errno));
}

static void take_value(const char *prog, struct opt_spec *s, const char *value)
{
	unsigned long long u;
	struct endpoint ep;

	switch (s->kind) {
	case OPT_ADDR:
		if (endpoint_parse(&ep, value, 0) < 0)
			fail(prog, "%s: must be a numeric IPv4 or IPv6 address, got '%s'", s->name, value);
		*(const char **)s->dst = value;
		break;
	case OPT_PORT:
		if (parse_uint(value, 1, 65535, &u) < 0)
			fail(prog, "%s: must be an integer from 1 to 65535, got '%s'", s->name, value);
		*(unsigned *)s->dst = (unsigned)u;
		break;
	case OPT_PORT_OR_ZERO:
		if (parse_uint(value, 0, 65535, &u) < 0)
			fail(prog, "%s: must be an integer from 0 (any free port) to 65535, got '%s'", s->name, value);
		*(unsigned *)s->dst = (unsigned)u;
		break;
	case OPT_MSG_SIZE:
		if (parse_uint(value, MSG_SIZE_MIN, MSG_SIZE_MAX, &u) < 0)
			fail(prog, "%s: must be an integer from %u to %u, got '%s'", s->name, MSG_SIZE_MIN,
			     MSG_SIZE_MAX, value);
		*(size_t *)s->dst = (size_t)u;
		break;
	case OPT_MODE:
		if (strcmp(value, "throughput") == 0)
			*(int *)s->dst = MODE_THROUGHPUT;
		else if (strcmp(value, "latency") == 0)
			*(int *)s->dst = MODE_LATENCY;
		else
			fail(prog, "%s: must be 'throughput' or 'latency', got '%s'", s->name, value);
		break;
	case OPT_RECEIVE:
		if (!(*(int *)s->dst = receive_by_name(value)))
			fail(prog, "%s: must be one of %s, got '%s'", s->name, receive_names(), value);
		break;
	case OPT_THREADS:
		if (parse_uint(value, 1, THREADS_MAX, &u) < 0)
			fail(prog, "%s: must be an integer from 1 to %u, got '%s'", s->name, THREADS_MAX, value);
		*(unsigned *)s->dst = (unsigned)u;
		break;
	case OPT_ROUNDS:
		if (parse_uint(value, 1, ROUNDS_MAX, &u) < 0)
			fail(prog, "%s: must be an integer from 1 to %u, got '%s'", s->name, ROUNDS_MAX, value);
		*(unsigned *)s->dst = (unsigned)u;
		break;
	case OPT_DURATION:
		if (parse_seconds(value, DURATION_MIN_S, SECONDS_MAX, (double *)s->dst) < 0)
			fail(prog, "%s: must be a number of seconds from %g to %g, got '%s'", s->name, DURATION_MIN_S,
			     SECONDS_MAX, value);
		break;
	case OPT_SECONDS_OR_ZERO:
		if (parse_seconds(value, 0, SECONDS_MAX, (double *)s->dst) < 0)
			fail(prog, "%s: must be a number of seconds from 0 to %g, got '%s'", s->name, SECONDS_MAX, value);
		break;
	case OPT_INTERVAL:
		if (parse_seconds(value, INTERVAL_MIN_S, SECONDS_MAX, (double *)s->dst) < 0)
			fail(prog, "%s: must be a number of seconds from %g to %g, got '%s'", s->name, INTERVAL_MIN_S,
			     SECONDS_MAX, value);
		break;
	case OPT_BYTES:
		if (parse_uint(value, 1, WORKING_SET_MAX, &u) < 0)
			fail(prog, "%s: must be a number of bytes from 1 to %u, got '%s'", s->name, WORKING_SET_MAX, value);
		*(size_t *)s->dst = (size_t)u;
		break;
	case OPT_RING_MEMORY:
		if (parse_uint(value, RING_MEMORY_MAX, RING_MEMORY_LIMIT, &u) < 0)
			fail(prog, "%s: must be a number of bytes from %llu to %llu, got '%s'", s->name,
			     (unsigned long long)RING_MEMORY_MAX, (unsigned long long)RING_MEMORY_LIMIT, value);
		*(size_t *)s->dst = (size_t)u;
		break;
	case OPT_CONGESTION:
		if (!congestion_name_ok(value))
			fail(prog, "%s: must be the name of a TCP congestion control (letters, digits, '_' or '-', "
			     "at most %d), got '%s'", s->name, CONGESTION_NAME_MAX - 1, value);
		*(const char **)s->dst = value;
		break;
	case OPT_PATH:
		if (value[0] == '\0')
			fail(prog, "%s: must be a file name, got ''", s->name);
		*(const char **)s->dst = value;
		break;
	case OPT_SWITCH:
		break;
	}
}

static void usage_line(FILE *f, const char *prog, const struct opt_spec *specs, int n)
{
	fprintf(f, "usage: %s", prog);
	for (int k = 0; k < n; k++) {
		const char *meta = "";
		switch (specs[k].kind) {
		case OPT_ADDR: meta = " ADDR"; break;
		case OPT_PORT: case OPT_PORT_OR_ZERO: meta = " PORT"; break;
		case OPT_MSG_SIZE: meta = " BYTES"; break;
		case OPT_MODE: meta = " throughput|latency"; break;
		case OPT_RECEIVE: meta = receive_names(); break;
		case OPT_THREADS: case OPT_ROUNDS: meta = " N"; break;
		case OPT_DURATION: case OPT_SECONDS_OR_ZERO: case OPT_INTERVAL: meta = " SECONDS"; break;
		case OPT_BYTES: case OPT_RING_MEMORY: meta = " BYTES"; break;
		case OPT_CONGESTION: meta = " NAME"; break;
		case OPT_PATH: meta = " FILE"; break;
		case OPT_SWITCH: break;
		}
		fprintf(f, specs[k].required ? " %s%s%s" : " [%s%s%s]", specs[k].name,
			specs[k].kind == OPT_RECEIVE ? " " : "", meta);
	}
	fputc('\n', f);
}

static void parse(int argc, char **argv, const char *prog, struct opt_spec *specs, int n)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
		struct opt_spec *s = NULL;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			usage_line(stdout, prog, specs, n);
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0)
			fail(prog, "unexpected argument '%s' (flags are --name VALUE; see --help)", arg);
		for (int k = 0; k < n; k++)
			if (strlen(specs[k].name) == name_len && strncmp(specs[k].name, arg, name_len) == 0)
				s = &specs[k];
		if (!s)
			fail(prog, "unknown flag '%.*s' (see --help)", (int)name_len, arg);
		if (s->seen)
			fail(prog, "%s: given more than once", s->name);
		s->seen = 1;
		if (s->kind == OPT_SWITCH) {
			if (eq)
				fail(prog, "%s: takes no value, got '%s'", s->name, eq + 1);
			*(int *)s->dst = 1;
			continue;
		}
		if (eq) {
			take_value(prog, s, eq + 1);
		} else {
			if (i + 1 >= argc)
				fail(prog, "%s: missing value", s->name);
			take_value(prog, s, argv[++i]);
		}
	}
	for (int k = 0; k < n; k++)
		if (specs[k].required && !specs[k].seen)
			fail(prog, "%s: required (see --help)", specs[k].name);
}

void parse_server_options(int argc, char **argv, const char *prog, struct server_options *o)
{
	memset(o, 0, sizeof(*o));
	struct opt_spec specs[] = {
		{"--bind", OPT_ADDR, &o->bind, 1, 0},
		{"--port", OPT_PORT_OR_ZERO, &o->port, 1, 0},
		{"--msg-size", OPT_MSG_SIZE, &o->msg_size, 1, 0},
		{"--mode", OPT_MODE, &o->mode, 1, 0},
		{"--working-set", OPT_BYTES, &o->working_set, 0, 0},
		{"--ring-memory", OPT_RING_MEMORY, &o->ring_memory, 0, 0},
		{"--congestion", OPT_CONGESTION, &o->congestion, 0, 0},
		{"--max-connections", OPT_THREADS, &o->max_connections, 0, 0},
		{"--json", OPT_SWITCH, &o->json, 0, 0},
	};
	o->working_set = WORKING_SET_DEFAULT;
	parse(argc, argv, prog, specs, (int)(sizeof(specs) / sizeof(specs[0])));
	endpoint_parse(&o->ep, o->bind, o->port); /* validated above */
	check_congestion(prog, o->congestion);
}

void parse_client_options(int argc, char **argv, const char *prog, struct client_options *o)
{
	memset(o, 0, sizeof(*o));
	o->receive = RECEIVE_message;
	o->interval_s = INTERVAL_DEFAULT_S;
	o->setup_timeout_s = HANDSHAKE_TIMEOUT_S;
	o->rounds = 1;
	struct opt_spec specs[] = {
		{"--connect", OPT_ADDR, &o->connect, 1, 0},
		{"--port", OPT_PORT, &o->port, 0, 0},
		{"--port-from", OPT_PATH, &o->port_from, 0, 0},
		{"--msg-size", OPT_MSG_SIZE, &o->msg_size, 1, 0},
		{"--mode", OPT_MODE, &o->mode, 1, 0},
		{"--threads", OPT_THREADS, &o->threads, 1, 0},
		{"--duration", OPT_DURATION, &o->duration_s, 1, 0},
		{"--warmup", OPT_SECONDS_OR_ZERO, &o->warmup_s, 1, 0},
		{"--steady-max", OPT_SECONDS_OR_ZERO, &o->steady_max_s, 0, 0},
		{"--rounds", OPT_ROUNDS, &o->rounds, 0, 0},
		{"--interval", OPT_INTERVAL, &o->interval_s, 0, 0},
		{"--setup-timeout", OPT_DURATION, &o->setup_timeout_s, 0, 0},
		{"--receive", OPT_RECEIVE, &o->receive, 0, 0},
		{"--congestion", OPT_CONGESTION, &o->congestion, 0, 0},
		{"--verify", OPT_SWITCH, &o->verify, 0, 0},
		{"--announce-window", OPT_SWITCH, &o->announce, 0, 0},
		{"--json", OPT_SWITCH, &o->json, 0, 0},
	};
	parse(argc, argv, prog, specs, (int)(sizeof(specs) / sizeof(specs[0])));
	if (o->port_from && o->port)
		fail(prog, "--port, --port-from: give one of them, not both");
	if (!o->port_from && !o->port)
		fail(prog, "--port: required, or --port-from (see --help)");
	if (!o->port_from)
		endpoint_parse(&o->ep, o->connect, o->port);
	if (o->duration_s / o->rounds < DURATION_MIN_S)
		fail(prog, "--rounds: %u rounds split the %g s window into %g s each, under the %g s a window needs",
		     o->rounds, o->duration_s, o->duration_s / o->rounds, DURATION_MIN_S);
	check_congestion(prog, o->congestion);
}

/* The whole content of path, up to cap - 1 bytes, NUL-terminated; -1 with errno on failure. */
static ssize_t read_small_file(const char *path, char *buf, size_t cap)
{
	int fd;
	size_t got = 0;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	while (got < cap - 1) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

void resolve_client_port(const char *prog, struct client_options *o)
{
	char text[16];
	unsigned long long port;

	if (!o->port_from)
		return;
	if (read_small_file(o->port_from, text, sizeof(text)) < 0)
		fail(prog, "--port-from: %s: %s", o->port_from, strerror(errno));
	text[strcspn(text, "\n")] = '\0'; /* one line; a writer may end it with a newline */
	if (parse_uint(text, 1, 65535, &port) < 0)
		fail(prog, "--port-from: %s: must hold a port number from 1 to 65535, got '%s'", o->port_from, text);
	o->port = (unsigned)port;
	endpoint_parse(&o->ep, o->connect, o->port);
}
