/*
 * The engine's one clock (core/include/clock.h): the only file of the library that
 * reads the system's clocks or sleeps on them (unit.layering.clock).
 */
#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

/* NULL: the system's clocks. A plain pointer, read without a lock or an
 * atomic: it is set before the library's threads start (clock.h), and a
 * test of it costs nothing next to clock_gettime (bench/RESULTS.md). */
static const struct cb__clock_source *source;

void cb__clock_install(const struct cb__clock_source *src)
{
	source = src;
}

static double seconds_of(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

static struct timespec timespec_of(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	} else if (ts.tv_nsec < 0) {
		ts.tv_nsec = 0;
	}
	return ts;
}

double cb__clock_mono(void)
{
	struct timespec ts;

	if (source)
		return source->mono(source->ctx);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return seconds_of(&ts);
}

double cb__clock_wall(void)
{
	struct timespec ts;

	if (source)
		return source->wall(source->ctx);
	clock_gettime(CLOCK_REALTIME, &ts);
	return seconds_of(&ts);
}

void cb__clock_sleep(double seconds)
{
	struct timespec ts;

	if (!(seconds > 0))
		return;
	if (source) {
		source->sleep(source->ctx, seconds);
		return;
	}
	ts = timespec_of(seconds);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

/* A poll() timeout: rounded up, so that a wait for the rest of a deadline
 * does not wake just before it and spin on a 0 ms timeout. */
static int timeout_ms(double seconds)
{
	double ms = seconds * 1000.0;
	int whole;

	if (!(ms > 0))
		return 0;
	if (ms >= (double)INT_MAX)
		return INT_MAX;
	whole = (int)ms;
	return (double)whole < ms ? whole + 1 : whole;
}

int cb__clock_poll(struct pollfd *fds, nfds_t nfds, double seconds)
{
	int rc;

	if (!source)
		return poll(fds, nfds, timeout_ms(seconds));
	rc = poll(fds, nfds, 0);
	if (rc != 0 || !(seconds > 0))
		return rc;
	source->sleep(source->ctx, seconds);
	return poll(fds, nfds, 0);
}

int cb__clock_sigwait(const sigset_t *set, double seconds)
{
	static const struct timespec zero = { 0, 0 };
	struct timespec ts;
	int sig;

	if (!source) {
		ts = timespec_of(seconds > 0 ? seconds : 0);
		return sigtimedwait(set, NULL, &ts);
	}
	sig = sigtimedwait(set, NULL, &zero);
	if (sig > 0 || !(seconds > 0))
		return sig;
	source->sleep(source->ctx, seconds);
	return sigtimedwait(set, NULL, &zero);
}

void cb__clock_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &attr);
	pthread_condattr_destroy(&attr);
}

int cb__clock_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline)
{
	struct timespec until;

	if (source) {
		double left = deadline - source->mono(source->ctx);

		if (left <= 0)
			return ETIMEDOUT;
		pthread_mutex_unlock(mu);
		source->sleep(source->ctx, left);
		pthread_mutex_lock(mu);
		return source->mono(source->ctx) >= deadline ? ETIMEDOUT : 0;
	}
	until = timespec_of(deadline);
	return pthread_cond_timedwait(cv, mu, &until);
}
