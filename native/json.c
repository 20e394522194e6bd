#include "json.h"

#include <math.h>

static void key(struct json_out *j, const char *k)
{
	/* keys are our own identifiers: no escaping needed */
	fprintf(j->f, "%s\"%s\":", j->n++ ? "," : "", k);
}

void json_begin(struct json_out *j, FILE *f)
{
	j->f = f;
	j->n = 0;
	fputc('{', f);
}

void json_str(struct json_out *j, const char *k, const char *value)
{
	key(j, k);
	fputc('"', j->f);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

void json_u64(struct json_out *j, const char *k, uint64_t value)
{
	key(j, k);
	fprintf(j->f, "%llu", (unsigned long long)value);
}

void json_num(struct json_out *j, const char *k, double value)
{
	key(j, k);
	if (isfinite(value))
		fprintf(j->f, "%.12g", value);
	else
		fputs("null", j->f);
}

void json_bool(struct json_out *j, const char *k, int value)
{
	key(j, k);
	fputs(value ? "true" : "false", j->f);
}

void json_null(struct json_out *j, const char *k)
{
	key(j, k);
	fputs("null", j->f);
}

void json_end(struct json_out *j)
{
	fputs("}\n", j->f);
	fflush(j->f);
}
