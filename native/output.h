/* A program's result, described once and written in either format: one JSON object on one line
 * (--json, what the harness reads) or key=value lines (neper's style, for people). The same calls
 * produce both, so the two formats cannot drift apart.
 * Missing or non-finite numbers are written as null in JSON and as "nan" in text. */
#ifndef COPYLAB_OUTPUT_H
#define COPYLAB_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct output {
	FILE *f;
	int json;
	int n; /* members written so far */
};

void out_begin(struct output *o, FILE *f, int json);
void out_str(struct output *o, const char *key, const char *value);
void out_u64(struct output *o, const char *key, uint64_t value);
void out_num(struct output *o, const char *key, double value);
void out_bool(struct output *o, const char *key, int value);
void out_null(struct output *o, const char *key);
void out_u64_array(struct output *o, const char *key, const uint64_t *values, size_t n);
void out_num_array(struct output *o, const char *key, const double *values, size_t n);
/* Closes the object (JSON) and flushes. */
void out_end(struct output *o);

#endif
