/* libnosleep.so, preloaded into sockperf's client only: sockperf 3.7 calls sleep(2) before every
 * test (after its warm-up messages, before "Starting test"), and no option turns that off. Our
 * server is already listening when the client starts, so the pause measures nothing; in a sweep of
 * many short points it is most of sockperf's cost. This returns from that one call at once and
 * leaves every other sleep alone. tools/harness.py measures sockperf with and without it. */
#include <dlfcn.h>
#include <unistd.h>

#define SOCKPERF_PAUSE_S 2u

unsigned int sleep(unsigned int seconds)
{
	static unsigned int (*real_sleep)(unsigned int);

	if (seconds == SOCKPERF_PAUSE_S)
		return 0;
	if (!real_sleep)
		real_sleep = (unsigned int (*)(unsigned int))dlsym(RTLD_NEXT, "sleep");
	return real_sleep ? real_sleep(seconds) : seconds;
}
