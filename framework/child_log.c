/* What a scheduler node's child prints (child_log.h). */
#include "child_log.h"

#include "clock.h"
#include "tail.h"

#include "cbatch/error.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct cb__child_log {
	pthread_t thread;
	pthread_mutex_t mu;
	cb__tail tail;
	int fds[2];      /* the child's stdout, stderr; -1 once at their end */
	atomic_int stop; /* cb__child_log_free asks the thread to end */
	atomic_int done; /* both fds at their end */
};

/* Pass @p n bytes on to @p fd; a closed or full destination loses them, never
 * the child's run. */
static void pass_on(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

static void *reader(void *arg)
{
	cb__child_log *l = arg;
	char buf[8192];

	while (!atomic_load(&l->stop) && (l->fds[0] >= 0 || l->fds[1] >= 0)) {
		struct pollfd p[2] = { { l->fds[0], POLLIN, 0 }, { l->fds[1], POLLIN, 0 } };

		if (cb__clock_poll(p, 2, 0.25) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			ssize_t got;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			got = read(p[i].fd, buf, sizeof(buf));
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) {
				close(l->fds[i]);
				l->fds[i] = -1;
				continue;
			}
			pass_on(i == 0 ? STDOUT_FILENO : STDERR_FILENO, buf, (size_t)got);
			pthread_mutex_lock(&l->mu);
			cb__tail_append(&l->tail, buf, (size_t)got);
			pthread_mutex_unlock(&l->mu);
		}
	}
	for (int i = 0; i < 2; i++)
		if (l->fds[i] >= 0) {
			close(l->fds[i]);
			l->fds[i] = -1;
		}
	atomic_store(&l->done, 1);
	return NULL;
}

int cb__child_log_start(cb__child_log **out, int out_fd, int err_fd, size_t cap)
{
	cb__child_log *l = calloc(1, sizeof(*l));
	sigset_t all, old;
	int e;

	*out = NULL;
	if (!l) {
		close(out_fd);
		close(err_fd);
		return CB_ENOMEM;
	}
	l->fds[0] = out_fd;
	l->fds[1] = err_fd;
	pthread_mutex_init(&l->mu, NULL);
	cb__tail_init(&l->tail, cap);
	/* The node's signals (its stop) are the main thread's, and a write to a
	 * closed stdout must fail with EPIPE here, not kill the node. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&l->thread, NULL, reader, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		close(out_fd);
		close(err_fd);
		cb__tail_free(&l->tail);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return CB_ERROR;
	}
	*out = l;
	return 0;
}

int cb__child_log_done(cb__child_log *l)
{
	return atomic_load(&l->done);
}

char *cb__child_log_take(cb__child_log *l, int always, long long *dropped, long long *total)
{
	char *text = NULL;

	pthread_mutex_lock(&l->mu);
	if (l->tail.dirty || always)
		text = cb__tail_text(&l->tail);
	*dropped = cb__tail_dropped(&l->tail);
	*total = l->tail.total;
	pthread_mutex_unlock(&l->mu);
	return text;
}

void cb__child_log_last_line(cb__child_log *l, char *out, size_t size)
{
	pthread_mutex_lock(&l->mu);
	cb__tail_last_line(out, size, &l->tail);
	pthread_mutex_unlock(&l->mu);
}

void cb__child_log_free(cb__child_log *l)
{
	if (!l)
		return;
	atomic_store(&l->stop, 1);
	pthread_join(l->thread, NULL);
	cb__tail_free(&l->tail);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
