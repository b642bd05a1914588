/*
 * Jobs started from the console (a launch, a restart), and the answer they
 * get: a run is no work for a request thread, so this very program
 * (/proc/self/exe run JOB ... or restart ID) runs as a process of its own, in
 * its own session (a ^C to serve does not reach it), stdin /dev/null, its
 * stdout and stderr read by a thread of ours that copies each line to serve's
 * log, keeps the last ones, reaps the process (no zombie) and logs how it
 * ended. The request waits, a few seconds at most, until the child has
 * recorded its execution (its owner id names this host and its pid) or has
 * exited, and answers with what happened: 201 and the execution, or the
 * child's own message with the status its exit code means (409 for a lock
 * held or an instance complete, 400 for invalid input, 503 for a database
 * out of reach). Only a child still starting when the wait ends gets 202.
 *
 * The same thread keeps the last bytes of what the child prints (core/tail.h)
 * and stores them as its execution's log (repository/run_log.c), over a
 * connection of its own (the pool's serve requests; this one may outlive
 * them): every few seconds while the child runs, if it printed anything new,
 * and once more at its end. A child that records no execution has no log:
 * its last line is the request's answer.
 */
#define _GNU_SOURCE /* POSIX_SPAWN_SETSID */
#include "console.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cbatch/cli.h"
#include "clock.h"
#include "pgkit.h"
#include "repo.h"
#include "tail.h"

#include <poll.h>

extern char **environ;

#define TAIL_MAX  2048 /* the end of the child's output kept for the answer */
#define LOG_EVERY 2.0  /* seconds between two stores of a running child's log */

struct cb__job_child {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;   /* the reaper's, and the request's until it answers */
	int exited; /* reaped: status below */
	int status; /* waitpid's */
	pid_t pid;
	int out_fd;     /* the read end of the child's stdout and stderr */
	char what[200]; /* "restart of execution 7" */
	FILE *log;
	char tail[TAIL_MAX]; /* its last complete lines */
	/* The reaper's alone: the log (see the top) and where it goes. */
	cb__tail out;
	int stored;          /* a log row was written */
	long long log_after; /* the newest execution before the spawn; -1: none stored */
	long long log_exec;  /* the child's execution, once found */
	double log_next;     /* monotonic time of the next store (or look) */
	char *conninfo;      /* a copy of serve's, NULL for libpq's defaults */
	PGconn *conn;
};

static void child_release(cb__job_child *ch)
{
	int last;

	pthread_mutex_lock(&ch->mu);
	last = --ch->refs == 0;
	pthread_mutex_unlock(&ch->mu);
	if (!last)
		return;
	pthread_mutex_destroy(&ch->mu);
	pthread_cond_destroy(&ch->cv);
	cb__tail_free(&ch->out);
	free(ch->conninfo);
	free(ch);
}

/* Store the child's log when due (see the top); @p last: its output ended.
 * The log is no part of the launch: a failure is said in serve's log and
 * the next store tries again. */
static void store_log(cb__job_child *ch, int last)
{
	cb_error err = CB_ERROR_INIT;
	double now = cb__clock_mono();
	char *text;

	if (ch->log_after < 0 || (!last && (now < ch->log_next || !ch->out.dirty)))
		return;
	ch->log_next = now + LOG_EVERY;
	if (!ch->conn && cb__pg_connect(&ch->conn, ch->conninfo, &err) < 0)
		goto fail;
	if (!ch->log_exec &&
	    cb__repo_run_log_find(&ch->log_exec, ch->conn, (int)ch->pid, ch->log_after, &err) < 0)
		goto fail;
	/* At the end, a child that printed nothing gets its empty log. */
	if (!ch->log_exec || (!ch->out.dirty && (ch->stored || !last)))
		return;
	if (!(text = cb__tail_text(&ch->out)))
		return;
	if (cb__repo_run_log_save(ch->conn, ch->log_exec, text, cb__tail_dropped(&ch->out),
				  ch->out.total, &err) < 0) {
		ch->out.dirty = 1;
		free(text);
		goto fail;
	}
	ch->stored = 1;
	free(text);
	return;
fail:
	cb__log_to(ch->log, "serve", CB__LOG_WARN, CB__EV_SERVE_NOTE, NULL,
		   "%s (pid %d): its log is not stored: %s", ch->what, (int)ch->pid, err.message);
	PQfinish(ch->conn);
	ch->conn = NULL;
}

/* Keep @p line (without its newline) as the newest of the tail. */
static void keep_line(cb__job_child *ch, const char *line, size_t n)
{
	size_t have, drop;

	if (n >= TAIL_MAX / 2)
		n = TAIL_MAX / 2 - 1;
	pthread_mutex_lock(&ch->mu);
	have = strlen(ch->tail);
	if (have + n + 2 > TAIL_MAX) {
		/* drop the oldest lines until this one fits */
		drop = have + n + 2 - TAIL_MAX;
		while (drop < have && ch->tail[drop - 1] != '\n')
			drop++;
		memmove(ch->tail, ch->tail + drop, have - drop + 1);
		have -= drop;
	}
	memcpy(ch->tail + have, line, n);
	ch->tail[have + n] = '\n';
	ch->tail[have + n + 1] = '\0';
	pthread_mutex_unlock(&ch->mu);
}

/* Copy the child's output to serve's log, line by line, keeping the last
 * lines; then reap it and say how it ended. */
static void *reaper(void *arg)
{
	cb__job_child *ch = arg;
	char buf[4096];
	size_t used = 0;
	int status = 0;

	for (;;) {
		struct pollfd p = { ch->out_fd, POLLIN, 0 };
		ssize_t got;
		char *nl;

		/* Quiet for a while: what came before it is stored all the same. */
		if (cb__clock_poll(&p, 1, LOG_EVERY) == 0) {
			store_log(ch, 0);
			continue;
		}
		got = read(ch->out_fd, buf + used, sizeof(buf) - 1 - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		cb__tail_append(&ch->out, buf + used, (size_t)got);
		store_log(ch, 0);
		used += (size_t)got;
		buf[used] = '\0';
		while ((nl = memchr(buf, '\n', used)) != NULL || used == sizeof(buf) - 1) {
			size_t n = nl ? (size_t)(nl - buf) : used;

			cb__log_to(ch->log, "serve", CB__LOG_INFO, CB__EV_SERVE_CHILD_OUTPUT, NULL,
				   "%s (pid %d): %.*s", ch->what, (int)ch->pid, (int)n, buf);
			keep_line(ch, buf, n);
			n += nl != NULL;
			memmove(buf, buf + n, used - n);
			used -= n;
			buf[used] = '\0';
		}
	}
	if (used > 0) {
		cb__log_to(ch->log, "serve", CB__LOG_INFO, CB__EV_SERVE_CHILD_OUTPUT, NULL,
			   "%s (pid %d): %.*s", ch->what, (int)ch->pid, (int)used, buf);
		keep_line(ch, buf, used);
	}
	close(ch->out_fd);
	while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		cb__log_to(ch->log, "serve", WEXITSTATUS(status) ? CB__LOG_WARN : CB__LOG_INFO,
			   CB__EV_SERVE_CHILD_EXITED,
			   CB__LOG_WITH(.exit_code = WEXITSTATUS(status), .has_exit_code = 1),
			   "%s (pid %d) exited with %d", ch->what, (int)ch->pid,
			   WEXITSTATUS(status));
	else
		cb__log_to(ch->log, "serve", CB__LOG_WARN, CB__EV_SERVE_CHILD_EXITED, NULL,
			   "%s (pid %d) ended by signal %d", ch->what, (int)ch->pid,
			   WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	/* Its last lines, before its end is told: an answer may point at them. */
	store_log(ch, 1);
	PQfinish(ch->conn);
	ch->conn = NULL;
	pthread_mutex_lock(&ch->mu);
	ch->exited = 1;
	ch->status = status;
	pthread_cond_broadcast(&ch->cv);
	pthread_mutex_unlock(&ch->mu);
	child_release(ch);
	return NULL;
}

/* The environment for the child: ours, with CBATCH_DB set to the conninfo
 * serve was given (so that a password never appears in its command line). */
static char **child_env(const char *conninfo)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	if (!(env = calloc(n + 2, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!conninfo || strncmp(environ[i], "CBATCH_DB=", 10) != 0)
			env[k++] = environ[i];
	if (conninfo) {
		size_t len = strlen(conninfo) + 11;

		if (!(env[k] = malloc(len))) {
			free(env);
			return NULL;
		}
		snprintf(env[k++], len, "CBATCH_DB=%s", conninfo);
	}
	env[k] = NULL;
	return env;
}

/* Start `/proc/self/exe ARGV...`, its stdout and stderr into @p out_fd.
 * @return its pid, or -1 (errno). */
static pid_t spawn_self(cb__console *c, char *const argv[], int out_fd)
{
	char **env = child_env(c->conninfo);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	pid_t pid = -1;
	int e;

	if (!env) {
		errno = ENOMEM;
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
	posix_spawnattr_init(&at);
	/* Serve blocks its stop signals in every thread and ignores SIGPIPE
	 * (and may have been started with SIGINT/SIGQUIT ignored, as a shell's
	 * background job is): the job must get them as any process does. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGQUIT);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETSID);
	e = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv, env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (c->conninfo) {
		size_t k = 0;

		while (env[k])
			k++;
		free(env[k - 1]); /* the CBATCH_DB entry, ours */
	}
	free(env);
	if (e) {
		errno = e;
		return -1;
	}
	return pid;
}

int cb__spawn_job(cb__request *r, char *const argv[], const char *what, cb__job_child **out)
{
	cb__job_child *ch;
	pthread_t t;
	pthread_attr_t ta;
	char who[80];
	int fds[2], e2;

	*out = NULL;
	if (!(ch = calloc(1, sizeof(*ch)))) {
		r->result = MHD_NO;
		r->replied = 1;
		return -1;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		e2 = errno;
		free(ch);
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot start the %s: %s", what,
				strerror(e2));
		return -1;
	}
	pthread_mutex_init(&ch->mu, NULL);
	cb__clock_cond_init(&ch->cv);
	ch->refs = 2;
	ch->out_fd = fds[0];
	snprintf(ch->what, sizeof(ch->what), "%s", what);
	ch->log = r->console->log;
	cb__tail_init(&ch->out, 0);
	ch->log_after = -1;
	if (!r->console->conninfo || (ch->conninfo = strdup(r->console->conninfo)) != NULL) {
		cb_error err = CB_ERROR_INIT;
		PGconn *conn;

		/* The newest execution before the spawn: the child's comes after. */
		if (cb__pool_get(r->console->pool, &conn, &err) == 0) {
			if (cb__repo_run_log_mark(&ch->log_after, conn, &err) < 0)
				ch->log_after = -1;
			cb__pool_put(r->console->pool, conn);
		}
	}
	ch->pid = spawn_self(r->console, argv, fds[1]);
	e2 = errno;
	close(fds[1]);
	if (ch->pid < 0) {
		close(fds[0]);
		pthread_mutex_destroy(&ch->mu);
		pthread_cond_destroy(&ch->cv);
		cb__tail_free(&ch->out);
		free(ch->conninfo);
		free(ch);
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot start the %s: %s", what,
				strerror(e2));
		return -1;
	}
	cb__request_actor(r, who, sizeof(who));
	cb__log_to(r->console->log, "serve", CB__LOG_INFO, CB__EV_SERVE_ACTION, NULL,
		   "%s: %s started (pid %d)", who, what, (int)ch->pid);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &ta, reaper, ch) != 0) {
		/* Without a thread to wait: wait here, rather than leave a zombie. */
		reaper(ch);
	}
	pthread_attr_destroy(&ta);
	*out = ch;
	return 0;
}

/* The execution the child recorded (its owner id is "HOST:PID:..."), 0 if
 * none yet: into @p id and @p status. @return 0, or <0 (database). */
static int recorded(long long *id, char *status, size_t size, cb__request *r, pid_t pid,
		    cb_error *err)
{
	char host[96] = "unknown", owner[140];
	const char *p[1] = { owner };
	PGconn *conn;
	PGresult *res;
	int rc;

	*id = 0;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	/* LIKE's own characters in a host name are matched literally. */
	{
		size_t k = 0;

		for (const char *h = host; *h && k + 4 < sizeof(owner); h++) {
			if (*h == '%' || *h == '_' || *h == '\\')
				owner[k++] = '\\';
			owner[k++] = *h;
		}
		snprintf(owner + k, sizeof(owner) - k, ":%d:%%", (int)pid);
	}
	if ((rc = cb__pool_get(r->console->pool, &conn, err)) < 0)
		return rc;
	res = PQexecParams(conn,
			   "SELECT job_execution_id, status FROM batch_job_execution "
			   "WHERE owner_id LIKE $1 ORDER BY job_execution_id DESC LIMIT 1",
			   1, NULL, p, NULL, NULL, 0);
	rc = 0;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = cb_error_set(err, CB_EDB, "read the started execution: %s",
				  PQerrorMessage(conn));
	else if (PQntuples(res) == 1) {
		*id = atoll(PQgetvalue(res, 0, 0));
		snprintf(status, size, "%s", PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	cb__pool_put(r->console->pool, conn);
	return rc;
}

/* The child's own message: its last line that says something, without the
 * program's "name: " prefix. */
static void child_message(char *out, size_t size, const cb__job_child *ch)
{
	const char *end = ch->tail + strlen(ch->tail), *line;

	while (end > ch->tail && end[-1] == '\n')
		end--;
	line = end;
	while (line > ch->tail && line[-1] != '\n')
		line--;
	if (line == end) {
		snprintf(out, size, "it printed nothing");
		return;
	}
	{
		const char *colon = memchr(line, ':', (size_t)(end - line));

		if (colon && colon - line < 64 &&
		    memchr(line, ' ', (size_t)(colon - line)) == NULL && colon[1] == ' ')
			line = colon + 2;
	}
	snprintf(out, size, "%.*s", (int)(end - line), line);
}

void cb__spawn_answer(cb__request *r, cb__job_child *ch, const char *job_name, double seconds)
{
	double deadline = cb__clock_mono() + seconds;
	cb_error err = CB_ERROR_INIT;
	char status[32] = "", message[1024];
	long long id = 0;
	int exited = 0, wstatus = 0;

	for (;;) {
		/* Exited first, then the repository: a child that recorded its
		 * execution and ended at once is answered with its execution. */
		pthread_mutex_lock(&ch->mu);
		exited = ch->exited;
		wstatus = ch->status;
		pthread_mutex_unlock(&ch->mu);
		if (recorded(&id, status, sizeof(status), r, ch->pid, &err) < 0) {
			cb__reply_repo_error(r, err.code, &err);
			goto done;
		}
		if (id || exited || cb__clock_mono() >= deadline)
			break;
		pthread_mutex_lock(&ch->mu);
		if (!ch->exited)
			cb__clock_cond_wait(&ch->cv, &ch->mu,
					    cb__clock_mono() + 0.05 < deadline ?
						    cb__clock_mono() + 0.05 :
						    deadline);
		pthread_mutex_unlock(&ch->mu);
	}
	if (id) {
		char href[64];

		snprintf(href, sizeof(href), "/api/v1/executions/%lld", id);
		cb__reply_json(r, MHD_HTTP_CREATED,
			       json_pack("{s:o,s:I,s:s,s:i,s:s}", "job_name",
					 cb__json_text(job_name), "job_execution_id",
					 (json_int_t)id, "status", status, "pid", (int)ch->pid,
					 "href", href));
		goto done;
	}
	if (!exited) {
		cb__reply_json(r, MHD_HTTP_ACCEPTED,
			       json_pack("{s:o,s:i,s:s,s:s}", "job_name", cb__json_text(job_name),
					 "pid", (int)ch->pid, "status", "STARTING", "message",
					 "started; no execution recorded yet: see the job's "
					 "executions"));
		goto done;
	}
	pthread_mutex_lock(&ch->mu);
	child_message(message, sizeof(message), ch);
	pthread_mutex_unlock(&ch->mu);
	if (!WIFEXITED(wstatus)) {
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
				"the %s ended by signal %d before recording an execution: %s",
				ch->what, WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0, message);
		goto done;
	}
	switch (WEXITSTATUS(wstatus)) {
	case CB_EXIT_RUNNING:
	case CB_EXIT_COMPLETE:
		cb__reply_error(r, MHD_HTTP_CONFLICT, "%s", message);
		break;
	case CB_EXIT_USAGE:
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", message);
		break;
	case CB_EXIT_UNREACHABLE:
		cb__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", message);
		break;
	default:
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
				"the %s exited with %d before recording an execution: %s", ch->what,
				WEXITSTATUS(wstatus), message);
	}
done:
	child_release(ch);
}
