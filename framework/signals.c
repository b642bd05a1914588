/* SIGINT/SIGTERM: the first asks for a graceful stop, the second is fatal. */
#include "engine.h"

#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_flag;
static struct sigaction old_int, old_term;
static int installed;

static void on_signal(int sig)
{
	struct sigaction dfl;

	stop_flag = 1;
	/* The next one gets the default action: the process dies and the server
	 * rolls the open chunk back. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
}

void cb__signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	stop_flag = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	installed = 1;
}

void cb__signals_restore(void)
{
	if (!installed)
		return;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	installed = 0;
}

int cb__stop_signalled(void)
{
	return stop_flag != 0;
}

double cb__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int cb__run_quitting(const cb__run *run)
{
	return stop_flag != 0 || (run->quit && atomic_load(run->quit));
}
