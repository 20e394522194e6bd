/* One JSON object on one line: the programs' machine-readable output.
 * Missing or non-finite numbers are written as null (JSON has no NaN). */
#ifndef COPYLAB_JSON_H
#define COPYLAB_JSON_H

#include <stdint.h>
#include <stdio.h>

struct json_out {
	FILE *f;
	int n; /* members written so far */
};

void json_begin(struct json_out *j, FILE *f);
void json_str(struct json_out *j, const char *key, const char *value);
void json_u64(struct json_out *j, const char *key, uint64_t value);
void json_num(struct json_out *j, const char *key, double value); /* null unless finite */
void json_bool(struct json_out *j, const char *key, int value);
void json_null(struct json_out *j, const char *key);
/* Closes the object, ends the line and flushes. */
void json_end(struct json_out *j);

#endif
