/*
 * The engine's one clock (core/include/clock.h), with no database: the
 * system's clocks behind it, and a virtual clock installed in their place
 * driving the engine's own waits. The outage loop (framework/outage.c) that
 * reconnects a lost database with backoff, and the worker's wait for work
 * (framework/worker.c), run against a connection that can never succeed:
 * under the virtual clock they take exactly their budget of virtual time,
 * every backoff step accounted, and next to no real time.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "cbtest.h"
#include "clock.h"
#include "engine.h"
#include "worker.h"

/* A conninfo that fails at once: no server socket in a missing directory. */
#define DEAD_CONNINFO "host=/nonexistent/cbatch-clock-test port=1 connect_timeout=1"

/* A virtual clock: a sleep advances both readings at once. It may stop a
 * run once its time reaches @c quit_at (a fault at a chosen instant). */
struct vclock {
	double mono, wall;
	double slept;   /* total of the sleeps */
	int sleeps;     /* their number */
	double longest; /* the longest one */
	double quit_at; /* > 0: set *quit once mono reaches it */
	atomic_int *quit;
};

static double v_mono(void *ctx)
{
	return ((struct vclock *)ctx)->mono;
}

static double v_wall(void *ctx)
{
	return ((struct vclock *)ctx)->wall;
}

static void v_sleep(void *ctx, double seconds)
{
	struct vclock *v = ctx;

	v->mono += seconds;
	v->wall += seconds;
	v->slept += seconds;
	v->sleeps++;
	if (seconds > v->longest)
		v->longest = seconds;
	if (v->quit && v->quit_at > 0 && v->mono >= v->quit_at)
		atomic_store(v->quit, 1);
}

static struct cb__clock_source source_of(struct vclock *v)
{
	struct cb__clock_source s = { v_mono, v_wall, v_sleep, v };

	return s;
}

/* The real time, read directly: what the virtual clock must not spend. */
static double real_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

#define CBT_NEAR(a, b)                                                                             \
	do {                                                                                       \
		if (!near((a), (b)))                                                               \
			CBT_FAILF("%s is %.12g, not %.12g", #a, (double)(a), (double)(b));         \
	} while (0)

/* The instants of the engine's reconnects (PQreset, wrapped at link time:
 * tests/CMakeLists.txt), on the installed virtual clock. */
#define MAX_RESETS 64
static double resets[MAX_RESETS];
static int nresets;

void __real_PQreset(PGconn *conn);
void __wrap_PQreset(PGconn *conn);

void __wrap_PQreset(PGconn *conn)
{
	if (nresets < MAX_RESETS)
		resets[nresets] = cb__clock_mono();
	nresets++;
	__real_PQreset(conn);
}

static void test_the_system_clocks_by_default(void)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	double t0, t1, wall;
	int rc;

	cb__clock_install(NULL);
	t0 = cb__clock_mono();
	wall = cb__clock_wall();
	/* the wall clock is the epoch's: after 2020, before 2100 */
	CBT_EQ_LL(wall > 1577836800.0 && wall < 4102444800.0, 1);
	cb__clock_sleep(0.02);
	t1 = cb__clock_mono();
	CBT_EQ_LL(t1 - t0 >= 0.02, 1);
	/* a poll with nothing to wait on sleeps its timeout, rounded up */
	t0 = cb__clock_mono();
	CBT_EQ_LL(cb__clock_poll(NULL, 0, 0.0105), 0);
	CBT_EQ_LL(cb__clock_mono() - t0 >= 0.0105, 1);
	/* a condition wait ends at its deadline on the monotonic clock */
	cb__clock_cond_init(&cv);
	pthread_mutex_lock(&mu);
	t0 = cb__clock_mono();
	do
		rc = cb__clock_cond_wait(&cv, &mu, t0 + 0.02);
	while (rc == 0);
	pthread_mutex_unlock(&mu);
	CBT_EQ_LL(rc, ETIMEDOUT);
	CBT_EQ_LL(cb__clock_mono() - t0 >= 0.02, 1);
	pthread_cond_destroy(&cv);
	/* nothing to sleep: no wait at all, however loaded the machine (under
	 * valgrind beside stress-ng a preemption alone took over 10 ms; a
	 * negative time taken as a long sleep still fails) */
	t0 = cb__clock_mono();
	cb__clock_sleep(0);
	cb__clock_sleep(-1);
	CBT_EQ_LL(cb__clock_mono() - t0 < 1.0, 1);
}

static void test_a_virtual_clock_owns_every_wait(void)
{
	struct vclock v = { .mono = 1000.0, .wall = 1.7e9 };
	struct cb__clock_source src = source_of(&v);
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	sigset_t none;
	double r0 = real_now();

	cb__clock_install(&src);
	CBT_NEAR(cb__clock_mono(), 1000.0);
	CBT_NEAR(cb__clock_wall(), 1.7e9);
	cb__clock_sleep(3600);
	CBT_NEAR(cb__clock_mono(), 4600.0);
	CBT_NEAR(cb__clock_wall(), 1.7e9 + 3600);
	CBT_EQ_LL(cb__clock_poll(NULL, 0, 60), 0);
	CBT_NEAR(cb__clock_mono(), 4660.0);
	cb__clock_cond_init(&cv);
	pthread_mutex_lock(&mu);
	CBT_EQ_LL(cb__clock_cond_wait(&cv, &mu, 4700.0), ETIMEDOUT);
	CBT_NEAR(cb__clock_mono(), 4700.0);
	/* a deadline passed already: no sleep */
	CBT_EQ_LL(cb__clock_cond_wait(&cv, &mu, 4000.0), ETIMEDOUT);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&cv);
	sigemptyset(&none);
	sigaddset(&none, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &none, NULL);
	CBT_EQ_LL(cb__clock_sigwait(&none, 30), -1);
	CBT_NEAR(cb__clock_mono(), 4730.0);
	pthread_sigmask(SIG_UNBLOCK, &none, NULL);
	/* a stop-aware nap of the engine, without the signal handlers */
	cb__signals_nap(0.5);
	CBT_NEAR(cb__clock_mono(), 4730.5);
	cb__clock_install(NULL);
	CBT_EQ_LL(v.sleeps, 5);
	CBT_NEAR(v.slept, 3730.5);
	CBT_EQ_LL(real_now() - r0 < 1.0, 1);
	/* the system's clock again: the kernel's monotonic time (not a window
	 * of values, which a machine up for an hour or so falls into) */
	{
		double before = real_now(), mono = cb__clock_mono(), after = real_now();

		CBT_EQ_LL(mono >= before && mono <= after, 1);
	}
}

/*
 * A database that never comes back, for 10 virtual seconds: reconnect,
 * back off 0.2, 0.4, 0.8, 1.6, 2, 2, 2 and the last 1.0, try a last time
 * exactly at the deadline and give up. Each backoff sleeps in steps of at
 * most 0.1 s (a stop is seen within one): 10 s of virtual time, none of real.
 */
static void test_the_outage_loop_spends_its_budget_in_virtual_time(void)
{
	struct vclock v = { .mono = 50.0, .wall = 1.7e9 };
	struct cb__clock_source src = source_of(&v);
	PGconn *conn = PQconnectdb(DEAD_CONNINFO);
	static const double want[] = { 0, 0.2, 0.6, 1.4, 3.0, 5.0, 7.0, 9.0, 10.0 };
	double r0, real, delay = 0.2;
	int rc;

	CBT_EQ_LL(PQstatus(conn), CONNECTION_BAD);
	nresets = 0;
	cb__clock_install(&src);
	r0 = real_now();
	rc = cb__outage_reach(conn, cb__clock_mono() + 10.0, &delay, NULL);
	real = real_now() - r0;
	cb__clock_install(NULL);
	PQfinish(conn);
	CBT_EQ_LL(rc, 0);
	CBT_NEAR(v.mono, 60.0);
	CBT_NEAR(v.slept, 10.0);
	CBT_EQ_LL(v.longest <= 0.1 + 1e-12, 1);
	CBT_NEAR(delay, 2.0);
	CBT_EQ_LL(nresets, 9);
	for (int i = 0; i < 9 && i < nresets; i++)
		CBT_NEAR(resets[i], 50.0 + want[i]);
	/* 9 reconnects to a missing socket, no sleep: well under a second */
	if (real >= 1.0)
		CBT_FAILF("10 s of virtual outage took %.3f s of real time", real);
}

/* A run asked to stop (its worker leaving) at virtual 3.05 s: the loop ends
 * within the 0.1 s step that saw it, not at the end of its budget. */
static void test_a_stop_ends_the_outage_loop_within_a_step(void)
{
	atomic_int quit = 0;
	struct vclock v = { .mono = 0.0, .wall = 1.7e9, .quit_at = 3.05, .quit = &quit };
	struct cb__clock_source src = source_of(&v);
	PGconn *conn = PQconnectdb(DEAD_CONNINFO);
	cb__run run;
	double delay = 0.2;
	int rc;

	memset(&run, 0, sizeof(run));
	run.quit = &quit;
	cb__clock_install(&src);
	rc = cb__outage_reach(conn, 600.0, &delay, &run);
	cb__clock_install(NULL);
	PQfinish(conn);
	CBT_EQ_LL(rc, -1);
	CBT_EQ_LL(v.mono >= 3.05 && v.mono <= 3.15 + 1e-9, 1);
}

/* The worker's wait for work, on a dead connection: a sleep of the clock;
 * with the stop handlers installed, a poll of their descriptor through it. */
static void test_the_workers_wait_is_the_clocks(void)
{
	struct vclock v = { .mono = 7.0, .wall = 1.7e9 };
	struct cb__clock_source src = source_of(&v);
	PGconn *conn = PQconnectdb(DEAD_CONNINFO);
	double r0 = real_now();

	cb__clock_install(&src);
	cb__work_wait(conn, 5.0);
	CBT_NEAR(v.mono, 12.0);
	cb__signals_install();
	cb__work_wait(conn, 30.0);
	cb__signals_restore();
	CBT_NEAR(v.mono, 42.0);
	cb__work_wait(conn, 0);
	CBT_NEAR(v.mono, 42.0);
	cb__clock_install(NULL);
	PQfinish(conn);
	CBT_EQ_LL(v.sleeps, 2);
	CBT_EQ_LL(real_now() - r0 < 1.0, 1);
}

static const CU_TestInfo tests[] = {
	{ "the system clocks by default", test_the_system_clocks_by_default },
	{ "a virtual clock owns every wait", test_a_virtual_clock_owns_every_wait },
	{ "the outage loop spends its budget in virtual time",
	  test_the_outage_loop_spends_its_budget_in_virtual_time },
	{ "a stop ends the outage loop within a step",
	  test_a_stop_ends_the_outage_loop_within_a_step },
	{ "the workers wait is the clocks", test_the_workers_wait_is_the_clocks },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("clock", NULL, NULL, tests);
}
