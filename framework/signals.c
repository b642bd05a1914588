/* SIGINT/SIGTERM: the first asks for a graceful stop, the second is fatal. */
#include "engine.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag;
/* Written once by the handler, so that every thread asleep in poll() wakes
 * (a signal interrupts only the one thread it is delivered to). */
static int wake_pipe[2] = { -1, -1 };
static struct sigaction old_int, old_term;
static int installed;

static void on_signal(int sig)
{
	struct sigaction dfl;

	int saved = errno;

	stop_flag = 1;
	if (wake_pipe[1] >= 0 && write(wake_pipe[1], "x", 1) < 0) {
		/* full or closed: the flag alone still stops every loop */
	}
	errno = saved;
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
	if (wake_pipe[0] < 0 && pipe(wake_pipe) == 0) {
		fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK);
		fcntl(wake_pipe[1], F_SETFL, O_NONBLOCK);
		fcntl(wake_pipe[0], F_SETFD, FD_CLOEXEC);
		fcntl(wake_pipe[1], F_SETFD, FD_CLOEXEC);
	}
	if (wake_pipe[0] >= 0) {
		/* a stop of an earlier run must not wake this one */
		char buf[64];

		while (read(wake_pipe[0], buf, sizeof(buf)) > 0) {
		}
	}
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

void cb__signals_after_fork(void)
{
	cb__signals_restore();
	for (int i = 0; i < 2; i++) {
		if (wake_pipe[i] >= 0)
			close(wake_pipe[i]);
		wake_pipe[i] = -1;
	}
	stop_flag = 0;
}

int cb__signals_wake_fd(void)
{
	return installed ? wake_pipe[0] : -1;
}

int cb__stop_signalled(void)
{
	return stop_flag != 0;
}

void cb__signals_nap(double seconds)
{
	struct pollfd p = { cb__signals_wake_fd(), POLLIN, 0 };

	if (p.fd >= 0)
		cb__clock_poll(&p, 1, seconds);
	else
		cb__clock_sleep(seconds);
}

int cb__run_quitting(const cb__run *run)
{
	return stop_flag != 0 || (run->quit && atomic_load(run->quit));
}
