/* Never compiled: unit.layering.clock_probe runs check_clock.cmake on this
 * folder and expects exactly the lines marked HIT (21, 22, 23, 24, 26, 27,
 * 28), not the others. Keep the line numbers when editing (tests/CMakeLists.txt).
 * Not hits: poll(), usleep(10), clock_gettime in this comment. */
#include <poll.h>
#include <time.h>
#include <unistd.h>

static int cb__repo_partitions_poll(int x)
{
	return x; /* a name that ends in one */
}

static void probe(void)
{
	struct timespec ts;
	struct pollfd p = { 0, POLLIN, 0 };
	char c = '"';
	const char *s = "usleep(1) sleep(2) time(NULL) in a string";

	clock_gettime(CLOCK_MONOTONIC, &ts);     /* HIT 21 */
	usleep(1000);                            /* HIT 22 */
	(void)time(NULL);                        /* HIT 23 */
	poll(&p, 1, 10);                         /* HIT 24 */
	strftime(s, 0, "%F", NULL);              // strftime is not time()
	nanosleep(&ts, NULL); /* sleep( */       // HIT 26
	sleep(1);                                /* HIT 27 */
	if (select(0, NULL, NULL, NULL, NULL)) { /* HIT 28 */
	}
	/* sleep(1);
	   usleep(2); */
	cb__repo_partitions_poll(c);
	// nanosleep(&ts, NULL);
}
