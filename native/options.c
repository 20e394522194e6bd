#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "protocol.h"

enum opt_kind { OPT_ADDR, OPT_PORT, OPT_PORT_OR_ZERO, OPT_MSG_SIZE, OPT_MODE, OPT_RECEIVE, OPT_THREADS, OPT_DURATION,
		OPT_SECONDS_OR_ZERO, OPT_SWITCH };

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

/* Decimal seconds (e.g. "0.5"), finite, within [min, SECONDS_MAX]. */
static int parse_seconds(const char *text, double min, double *out)
{
	char *end;

	if (!((text[0] >= '0' && text[0] <= '9') || text[0] == '.'))
		return -1;
	errno = 0;
	double v = strtod(text, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > SECONDS_MAX)
		return -1;
	*out = v;
	return 0;
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
		if (strcmp(value, "message") == 0)
			*(int *)s->dst = RECEIVE_MESSAGE;
		else if (strcmp(value, "bulk") == 0)
			*(int *)s->dst = RECEIVE_BULK;
		else
			fail(prog, "%s: must be 'message' or 'bulk', got '%s'", s->name, value);
		break;
	case OPT_THREADS:
		if (parse_uint(value, 1, THREADS_MAX, &u) < 0)
			fail(prog, "%s: must be an integer from 1 to %u, got '%s'", s->name, THREADS_MAX, value);
		*(unsigned *)s->dst = (unsigned)u;
		break;
	case OPT_DURATION:
		if (parse_seconds(value, DURATION_MIN_S, (double *)s->dst) < 0)
			fail(prog, "%s: must be a number of seconds from %g to %g, got '%s'", s->name, DURATION_MIN_S,
			     SECONDS_MAX, value);
		break;
	case OPT_SECONDS_OR_ZERO:
		if (parse_seconds(value, 0, (double *)s->dst) < 0)
			fail(prog, "%s: must be a number of seconds from 0 to %g, got '%s'", s->name, SECONDS_MAX, value);
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
		case OPT_RECEIVE: meta = " message|bulk"; break;
		case OPT_THREADS: meta = " N"; break;
		case OPT_DURATION: case OPT_SECONDS_OR_ZERO: meta = " SECONDS"; break;
		case OPT_SWITCH: break;
		}
		fprintf(f, specs[k].required ? " %s%s" : " [%s%s]", specs[k].name, meta);
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
		{"--json", OPT_SWITCH, &o->json, 0, 0},
	};
	parse(argc, argv, prog, specs, (int)(sizeof(specs) / sizeof(specs[0])));
	endpoint_parse(&o->ep, o->bind, o->port); /* validated above */
}

void parse_client_options(int argc, char **argv, const char *prog, struct client_options *o)
{
	memset(o, 0, sizeof(*o));
	o->receive = RECEIVE_MESSAGE;
	struct opt_spec specs[] = {
		{"--connect", OPT_ADDR, &o->connect, 1, 0},
		{"--port", OPT_PORT, &o->port, 1, 0},
		{"--msg-size", OPT_MSG_SIZE, &o->msg_size, 1, 0},
		{"--mode", OPT_MODE, &o->mode, 1, 0},
		{"--threads", OPT_THREADS, &o->threads, 1, 0},
		{"--duration", OPT_DURATION, &o->duration_s, 1, 0},
		{"--warmup", OPT_SECONDS_OR_ZERO, &o->warmup_s, 1, 0},
		{"--receive", OPT_RECEIVE, &o->receive, 0, 0},
		{"--verify", OPT_SWITCH, &o->verify, 0, 0},
		{"--announce-window", OPT_SWITCH, &o->announce, 0, 0},
		{"--json", OPT_SWITCH, &o->json, 0, 0},
	};
	parse(argc, argv, prog, specs, (int)(sizeof(specs) / sizeof(specs[0])));
	endpoint_parse(&o->ep, o->connect, o->port);
}

const char *receive_name(int receive)
{
	switch (receive) {
	case RECEIVE_MESSAGE: return "message";
	case RECEIVE_BULK: return "bulk";
	default: return "?";
	}
}
