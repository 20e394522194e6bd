#include "timing.h"

#include <errno.h>
#include <time.h>

int64_t now_ns(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail: a valid clock id and pointer */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double ns_to_s(int64_t ns)
{
	return (double)ns / 1e9;
}

int64_t s_to_ns(double s)
{
	return (int64_t)(s * 1e9 + 0.5);
}

void sleep_ns(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
