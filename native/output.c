#include "output.h"

#include <inttypes.h>
#include <math.h>

static void key(struct output *o, const char *k)
{
	/* keys are our own identifiers: no escaping needed */
	if (o->json)
		fprintf(o->f, "%s\"%s\":", o->n ? "," : "", k);
	else
		fprintf(o->f, "%s=", k);
	o->n++;
}

static void end_member(struct output *o)
{
	if (!o->json)
		fputc('\n', o->f);
}

void out_begin(struct output *o, FILE *f, int json)
{
	o->f = f;
	o->json = json;
	o->n = 0;
	if (json)
		fputc('{', f);
}

void out_str(struct output *o, const char *k, const char *value)
{
	key(o, k);
	if (!o->json) {
		fputs(value, o->f);
		end_member(o);
		return;
	}
	fputc('"', o->f);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(o->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(o->f, "\\u%04x", *p);
		else
			fputc(*p, o->f);
	}
	fputc('"', o->f);
}

static void u64(struct output *o, uint64_t value)
{
	fprintf(o->f, "%" PRIu64, value);
}

static void num(struct output *o, double value)
{
	if (isfinite(value))
		fprintf(o->f, "%.12g", value);
	else
		fputs(o->json ? "null" : "nan", o->f);
}

void out_u64(struct output *o, const char *k, uint64_t value)
{
	key(o, k);
	u64(o, value);
	end_member(o);
}

void out_num(struct output *o, const char *k, double value)
{
	key(o, k);
	num(o, value);
	end_member(o);
}

void out_bool(struct output *o, const char *k, int value)
{
	key(o, k);
	fputs(value ? "true" : "false", o->f);
	end_member(o);
}

void out_null(struct output *o, const char *k)
{
	key(o, k);
	fputs(o->json ? "null" : "nan", o->f);
	end_member(o);
}

void out_u64_array(struct output *o, const char *k, const uint64_t *values, size_t n)
{
	key(o, k);
	if (o->json)
		fputc('[', o->f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', o->f);
		u64(o, values[i]);
	}
	if (o->json)
		fputc(']', o->f);
	end_member(o);
}

void out_num_array(struct output *o, const char *k, const double *values, size_t n)
{
	key(o, k);
	if (o->json)
		fputc('[', o->f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', o->f);
		num(o, values[i]);
	}
	if (o->json)
		fputc(']', o->f);
	end_member(o);
}

void out_end(struct output *o)
{
	if (o->json)
		fputs("}\n", o->f);
	fflush(o->f);
}
