/*
 * cbatch-clock-bench: what reading time through the engine's one clock
 * (core/include/clock.h) costs next to reading the system's clock directly.
 * Not part of the test suite; results in bench/RESULTS.md.
 *
 *   cbatch-clock-bench [CALLS] [ROUNDS]      (default 20000000 and 7)
 *
 * Each round times CALLS reads of each kind, in turn:
 *   direct   clock_gettime(CLOCK_MONOTONIC) made seconds, inlined here: what
 *            the library's sites did before the clock was one;
 *   mono     cb__clock_mono(), no source installed (a call into the library,
 *            one pointer test, then the same clock_gettime);
 *   wall     cb__clock_wall(), the same for CLOCK_REALTIME;
 *   virtual  cb__clock_mono() with a virtual source installed (for scale).
 * Prints the median ns per read of the rounds, min and max beside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

enum {
	DIRECT,
	MONO,
	WALL,
	VIRTUAL,
	KINDS
};
static const char *const names[KINDS] = { "direct clock_gettime", "cb__clock_mono",
					  "cb__clock_wall", "cb__clock_mono (virtual)" };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double v_time;
static double v_read(void *ctx)
{
	(void)ctx;
	return v_time;
}
static void v_sleep(void *ctx, double s)
{
	(void)ctx;
	v_time += s;
}

/* The reads' sum, so that no read can be left out. */
static volatile double sink;

static double run(int kind, long calls)
{
	static const struct cb__clock_source virt = { v_read, v_read, v_sleep, NULL };
	double sum = 0, t0;

	cb__clock_install(kind == VIRTUAL ? &virt : NULL);
	t0 = now();
	for (long i = 0; i < calls; i++) {
		switch (kind) {
		case DIRECT:
			sum += now();
			break;
		case WALL:
			sum += cb__clock_wall();
			break;
		default:
			sum += cb__clock_mono();
			break;
		}
	}
	t0 = now() - t0;
	cb__clock_install(NULL);
	sink = sum;
	return t0 / (double)calls * 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 20000000L;
	int rounds = argc > 2 ? atoi(argv[2]) : 7;
	double *ns[KINDS];

	if (calls <= 0 || rounds <= 0 || rounds > 1000) {
		fprintf(stderr, "usage: cbatch-clock-bench [CALLS] [ROUNDS]\n");
		return 2;
	}
	for (int k = 0; k < KINDS; k++)
		if (!(ns[k] = calloc((size_t)rounds, sizeof(double))))
			return 1;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < KINDS; k++)
			ns[k][r] = run(k, calls);
	printf("| read (%ld calls x %d rounds) | median ns | min | max | vs direct |\n", calls,
	       rounds);
	printf("|---|---:|---:|---:|---:|\n");
	for (int k = 0; k < KINDS; k++)
		qsort(ns[k], (size_t)rounds, sizeof(double), cmp);
	for (int k = 0; k < KINDS; k++) {
		printf("| %s | %.2f | %.2f | %.2f | %+.2f ns |\n", names[k], ns[k][rounds / 2],
		       ns[k][0], ns[k][rounds - 1], ns[k][rounds / 2] - ns[DIRECT][rounds / 2]);
		free(ns[k]);
	}
	return 0;
}
