/* What a scheduler node's child prints (child_log.h). */
#include "child_log.h"

#include "tail.h"

#include "cbatch/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

struct cb__child_log {
	cb__tail tail;
	int fds[2]; /* the child's stdout, stderr; -1 once at their end */
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

int cb__child_log_new(cb__child_log **out, int out_fd, int err_fd, size_t cap)
{
	cb__child_log *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l) {
		close(out_fd);
		close(err_fd);
		return CB_ENOMEM;
	}
	l->fds[0] = out_fd;
	l->fds[1] = err_fd;
	for (int i = 0; i < 2; i++)
		fcntl(l->fds[i], F_SETFL, fcntl(l->fds[i], F_GETFL) | O_NONBLOCK);
	cb__tail_init(&l->tail, cap);
	*out = l;
	return 0;
}

void cb__child_log_drain(cb__child_log *l)
{
	char buf[8192];

	for (int i = 0; i < 2; i++) {
		/* At most a few reads each time: one talkative child cannot hold
		 * the node's loop; what is left wakes the next wait at once. */
		for (int k = 0; k < 16 && l->fds[i] >= 0; k++) {
			ssize_t got = read(l->fds[i], buf, sizeof(buf));

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (got <= 0) {
				close(l->fds[i]);
				l->fds[i] = -1;
				break;
			}
			pass_on(i == 0 ? STDOUT_FILENO : STDERR_FILENO, buf, (size_t)got);
			cb__tail_append(&l->tail, buf, (size_t)got);
		}
	}
}

size_t cb__child_log_pollfds(const cb__child_log *l, struct pollfd *p)
{
	size_t n = 0;

	for (int i = 0; i < 2; i++)
		if (l->fds[i] >= 0) {
			p[n].fd = l->fds[i];
			p[n].events = POLLIN;
			p[n].revents = 0;
			n++;
		}
	return n;
}

int cb__child_log_done(const cb__child_log *l)
{
	return l->fds[0] < 0 && l->fds[1] < 0;
}

char *cb__child_log_take(cb__child_log *l, int always, long long *dropped, long long *total)
{
	char *text = NULL;

	if (l->tail.dirty || always)
		text = cb__tail_text(&l->tail);
	*dropped = cb__tail_dropped(&l->tail);
	*total = l->tail.total;
	return text;
}

void cb__child_log_last_line(const cb__child_log *l, char *out, size_t size)
{
	cb__tail_last_line(out, size, &l->tail);
}

void cb__child_log_free(cb__child_log *l)
{
	if (!l)
		return;
	for (int i = 0; i < 2; i++)
		if (l->fds[i] >= 0)
			close(l->fds[i]);
	cb__tail_free(&l->tail);
	free(l);
}
