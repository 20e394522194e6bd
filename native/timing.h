/* Monotonic time in nanoseconds: every interval the programs report comes from here. */
#ifndef COPYLAB_TIMING_H
#define COPYLAB_TIMING_H

#include <stdint.h>

int64_t now_ns(void);
double ns_to_s(int64_t ns);
int64_t s_to_ns(double s);
/* Sleep ns nanoseconds (resumes after signals). */
void sleep_ns(int64_t ns);

#endif
