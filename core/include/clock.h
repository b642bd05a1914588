/*
 * The engine's one clock (internal). Every deadline, backoff, sleep, timed
 * wait and timestamp of the library reads time through this header and
 * nowhere else (core/clock.c is the only file that calls the system's clocks;
 * unit.layering.clock fails on any other), so that a test or a simulation can
 * install a clock of its own and drive the engine's time (DESIGN.md, "One
 * clock"; the repository's half is the SQL function batch_now()).
 *
 * It lives in core/include/ because every layer, the plug-ins' included, may
 * read it; the examples may not (they use the public API).
 *
 * Two readings, both in seconds as a double:
 *   mono  a monotonic clock whose origin means nothing: deadlines and
 *         durations (a step of the system's clock changes neither);
 *   wall  since the Unix epoch: what a person is shown, with its zone.
 *
 * The system's clocks by default. cb__clock_install() replaces them with a
 * source of the caller's, e.g. a virtual clock whose sleep advances virtual
 * time at once. The source is read without a lock: install it before any
 * thread of the library starts and remove it (NULL) after the last has
 * ended. With the system's clocks the cost is one pointer test per call.
 */
#ifndef CB_CORE_CLOCK_H
#define CB_CORE_CLOCK_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>

/* A clock of the caller's. Every member is required; @c ctx is passed back. */
struct cb__clock_source {
	/* Monotonic seconds. Never decreases. */
	double (*mono)(void *ctx);
	/* Seconds since the epoch. */
	double (*wall)(void *ctx);
	/* Let @p seconds (> 0) of this clock pass before returning. A virtual
	 * clock advances its time and returns at once; with threads, what a
	 * sleep means is the source's to define. */
	void (*sleep)(void *ctx, double seconds);
	void *ctx;
};

/* Use @p src from now on (borrowed: it must outlive its installation), or
 * the system's clocks again with NULL. Not thread-safe (see the top). */
void cb__clock_install(const struct cb__clock_source *src);

/* Monotonic seconds: for deadlines (cb__clock_mono() + budget) and durations. */
double cb__clock_mono(void);

/* Seconds since the epoch, with the fraction: for what people are shown. */
double cb__clock_wall(void);

/* Sleep @p seconds (nothing when <= 0), the whole of it: a signal that
 * interrupts the sleep does not shorten it. */
void cb__clock_sleep(double seconds);

/* poll() for at most @p seconds (<= 0: look without waiting; the timeout is
 * rounded up to the millisecond, so a wait never ends before its deadline).
 * Under an installed source, the descriptors are looked at, then the source
 * sleeps @p seconds if none was ready, then they are looked at again.
 * @return as poll(). */
int cb__clock_poll(struct pollfd *fds, nfds_t nfds, double seconds);

/* sigtimedwait() for one of @p set (blocked by the caller) for at most
 * @p seconds, the same way as cb__clock_poll under an installed source.
 * @return the signal, or -1 (none came: EAGAIN; or EINTR). */
int cb__clock_sigwait(const sigset_t *set, double seconds);

/* Initialise @p cv for cb__clock_cond_wait (its timed waits measured on the
 * monotonic clock). Destroy it with pthread_cond_destroy. */
void cb__clock_cond_init(pthread_cond_t *cv);

/* pthread_cond_timedwait until @p deadline (cb__clock_mono() seconds), @p mu
 * held by the caller. Under an installed source the mutex is released while
 * the source sleeps until the deadline. As every condition wait, it may
 * return early: the caller checks its condition again.
 * @return 0 (signalled, or early), ETIMEDOUT (the deadline passed). */
int cb__clock_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline);

#endif
