/* A scheduler node's runners: see runner.h. */
#include "runner.h"

#include "engine.h"
#include "pgkit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The longest command line a firing hands over (its parameters). */
#define ARGV_MAX 65536

/* A runner's answer: its firing's exit code, and the execution it created
 * (0: none), so that its node need not look for it. */
struct answer {
	int32_t code;
	int32_t pad;
	int64_t execution;
};

/* Receive one firing: its argv packed as NUL-terminated words, and two
 * descriptors. @return the byte count (>0), 0 at the node's end or a stop
 * while waiting, -1 on a malformed message (its descriptors closed). */
static ssize_t receive(int sock, char *buf, size_t size, int fds[2])
{
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { buf, size };
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t got;
	int nfds = 0;

	fds[0] = fds[1] = -1;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl.b;
	msg.msg_controllen = sizeof(ctl.b);
	do
		got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR && !cb__stop_signalled());
	if (got < 0 && errno == EINTR)
		return 0; /* stopped while idle */
	if (got <= 0)
		return got < 0 ? -1 : 0;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < n; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (nfds < 2)
					fds[nfds++] = fd;
				else
					close(fd);
			}
		}
	if (nfds != 2 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || buf[got - 1] != '\0') {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return -1;
	}
	return got;
}

/* Split the packed words into a NULL-terminated argv (pointers into @p buf). */
static char **unpack(char *buf, size_t len, int *argc)
{
	size_t n = 0;
	char **argv;

	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\0';
	if (!(argv = calloc(n + 1, sizeof(*argv))))
		return NULL;
	*argc = 0;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		argv[(*argc)++] = buf + i;
	return argv;
}

/* The runner's life: one firing after another until the node closes its end
 * or a stop is signalled. Never returns. */
static void serve(int sock, cb__runner_fn fn, void *ctx)
{
	static char buf[ARGV_MAX];
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (;;) {
		int fds[2], argc = 0, code;
		struct answer answer;
		ssize_t got = receive(sock, buf, sizeof(buf), fds);
		char **argv;

		if (got == 0)
			_exit(0); /* the node is done with it, or it was stopped idle */
		if (got < 0)
			_exit(127); /* the firing could not be read: it never ran */
		if (cb__stop_signalled() || !(argv = unpack(buf, (size_t)got, &argc))) {
			close(fds[0]);
			close(fds[1]);
			if (!cb__stop_signalled())
				_exit(127);
			/* Asked to stop before it began: it ends as an exec'd
			 * child stopped before its exec would. */
			signal(SIGTERM, SIG_DFL);
			raise(SIGTERM);
			_exit(128 + SIGTERM);
		}
		fflush(NULL);
		dup2(fds[0], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		cb__launched_last(1);
		code = fn(ctx, argc, argv);
		free(argv);
		/* Its output ends here: the node reads both pipes to their end. */
		fflush(NULL);
		if (devnull >= 0) {
			dup2(devnull, STDOUT_FILENO);
			dup2(devnull, STDERR_FILENO);
		}
		memset(&answer, 0, sizeof(answer));
		answer.code = code < 0 || code > 255 ? 1 : code;
		answer.execution = cb__launched_last(0);
		if (send(sock, &answer, sizeof(answer), MSG_NOSIGNAL) != (ssize_t)sizeof(answer))
			break;
		/* A stop asked for during the run ended it (STOPPED): no next one. */
		if (cb__stop_signalled())
			break;
	}
	_exit(0);
}

int cb__runner_start(pid_t *pid, int *sock, const char *conninfo, cb__runner_fn fn, void *ctx,
		     const int *close_fds, size_t nclose)
{
	int sv[2];
	pid_t parent = getpid(), p;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	fflush(NULL);
	p = fork();
	if (p < 0) {
		int e = errno;

		close(sv[0]);
		close(sv[1]);
		errno = e;
		return -1;
	}
	if (p == 0) {
		close(sv[0]);
		for (size_t i = 0; i < nclose; i++)
			if (close_fds[i] >= 0)
				close(close_fds[i]);
		/* If the node dies, the run in progress is asked to stop after
		 * its chunk (STOPPED, restartable), as an exec'd child is. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_IGN);
		cb__signals_after_fork();
		cb__signals_install();
		if (conninfo)
			setenv("CBATCH_DB", conninfo, 1);
		cb__pg_keep_enable();
		serve(sv[1], fn, ctx);
	}
	close(sv[1]);
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	*pid = p;
	*sock = sv[0];
	return 0;
}

int cb__runner_send(int sock, char *const *argv, int out_fd, int err_fd)
{
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	size_t len = 0;
	char *buf;
	struct iovec iov;
	struct msghdr msg;
	struct cmsghdr *c;
	int fds[2] = { out_fd, err_fd };
	ssize_t sent;

	for (size_t i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 1;
	if (len == 0 || len > ARGV_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	if (!(buf = malloc(len)))
		return -1;
	len = 0;
	for (size_t i = 0; argv[i]; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(buf + len, argv[i], n);
		len += n;
	}
	iov.iov_base = buf;
	iov.iov_len = len;
	memset(&msg, 0, sizeof(msg));
	memset(&ctl, 0, sizeof(ctl));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl.b;
	msg.msg_controllen = sizeof(ctl.b);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	do
		sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	free(buf);
	if (sent < 0)
		return -1;
	return 0;
}

int cb__runner_result(int sock, int *code, long long *execution)
{
	struct answer answer;
	ssize_t got;

	do
		got = recv(sock, &answer, sizeof(answer), MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	if (got == (ssize_t)sizeof(answer)) {
		*code = answer.code;
		*execution = answer.execution;
		return 1;
	}
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return -1;
}
