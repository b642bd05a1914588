/*
 * The console's actions: stop, abandon and restart an execution, release a
 * lock by force. The router has already refused them on a read-only server,
 * from another origin and without the admin token; what is left is what the
 * CLI's commands do, through the same library calls, recorded the same way:
 * the actor of a forced unlock is "console@ADDRESS" (the client's), where
 * the CLI names $USER@host.
 *
 * A restart runs a job, which is no work for a request thread: it starts
 * this very program (/proc/self/exe restart ID) as a process of its own, in
 * its own session (a ^C to serve does not reach it), stdin /dev/null, its
 * output on serve's stderr, and answers 202 with its pid; a thread of ours
 * waits for it, so that no zombie is left, and logs how it ended.
 */
#define _GNU_SOURCE /* POSIX_SPAWN_SETSID */
#include "console.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cbatch/lock.h"
#include "cbatch/repository.h"
#include "text.h"

#define REASON_MAX 500

extern char **environ;

/* The request's body as a JSON object into @p out (NULL when there is no
 * body and @p required is 0); else reply 400 and return -1. */
static int body_object(cb__request *r, json_t **out, int required)
{
	json_error_t jerr;

	*out = NULL;
	if (!r->body_len) {
		if (!required)
			return 0;
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"expected a JSON object as the request body");
		return -1;
	}
	*out = json_loadb(r->body, r->body_len, 0, &jerr);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"expected a JSON object as the request body (%s)",
				jerr.text[0] ? jerr.text : "not an object");
		return -1;
	}
	return 0;
}

/* The execution id of the path, or 400 and -1. */
static int path_id(cb__request *r, long long *id)
{
	if (cb__query_only(r, NULL) < 0)
		return -1;
	if (cb__parse_id(id, r->id) < 0) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid execution id '%.40s': expected a positive integer", r->id);
		return -1;
	}
	return 0;
}

/* A refused action: an execution or lock in the wrong state is a conflict
 * (409), the rest as for reads. */
static void action_error(cb__request *r, int code, const cb_error *err)
{
	if (code == CB_EINVAL)
		cb__reply_error(r, MHD_HTTP_CONFLICT, "%s", err->message);
	else
		cb__reply_repo_error(r, code, err);
}

/* "console@ADDRESS" for the audit, ADDRESS the client's IP. */
static void actor(cb__request *r, char *out, size_t size)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char addr[INET6_ADDRSTRLEN] = "unknown";

	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;

		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr,
				  sizeof(addr));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr,
				  sizeof(addr));
	}
	snprintf(out, size, "console@%s", addr);
}

static void transition(cb__request *r, int stop)
{
	cb_error err = CB_ERROR_INIT;
	cb_status now = CB_STATUS_UNKNOWN;
	long long id;
	PGconn *conn;
	json_t *body;
	char who[80];
	int rc;

	if (path_id(r, &id) < 0 || body_object(r, &body, 0) < 0)
		return;
	json_decref(body); /* nothing in it is needed */
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = stop ? cb_repo_stop(&now, conn, id, &err) : cb_repo_abandon(conn, id, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		action_error(r, rc, &err);
		return;
	}
	actor(r, who, sizeof(who));
	fprintf(r->console->log, "serve: %s: execution %lld %s\n", who, id,
		stop ? (now == CB_STATUS_STOPPED ? "STOPPED (its owner was lost)" :
						   "stop requested") :
		       "ABANDONED");
	fflush(r->console->log);
	cb__reply_json(r, MHD_HTTP_OK,
		       json_pack("{s:I,s:s}", "job_execution_id", (json_int_t)id, "status",
				 stop ? cb_status_name(now) : "ABANDONED"));
}

void cb__api_stop(cb__request *r)
{
	transition(r, 1);
}

void cb__api_abandon(cb__request *r)
{
	transition(r, 0);
}

void cb__api_unlock(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	json_t *body;
	const char *reason;
	char who[80];
	int rc;

	if (cb__query_only(r, NULL) < 0 || body_object(r, &body, 1) < 0)
		return;
	reason = json_string_value(json_object_get(body, "reason"));
	if (!reason || !*reason || strlen(reason) > REASON_MAX) {
		json_decref(body);
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"a forced unlock needs a \"reason\": 1..%d bytes of text",
				REASON_MAX);
		return;
	}
	for (const char *p = reason; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			json_decref(body);
			cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
					"the reason may not contain control characters");
			return;
		}
	if (!cb__utf8_valid(r->id)) {
		json_decref(body);
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "the lock name is not valid UTF-8");
		return;
	}
	actor(r, who, sizeof(who));
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		json_decref(body);
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_lock_force_unlock(conn, r->id, who, reason, &err);
	cb__pool_put(r->console->pool, conn);
	json_decref(body);
	if (rc < 0) {
		action_error(r, rc, &err);
		return;
	}
	{
		char shown[600];

		cb__utf8_sanitize(shown, sizeof(shown), r->id);
		fprintf(r->console->log, "serve: %s: lock '%s' released by force\n", who, shown);
		fflush(r->console->log);
	}
	cb__reply_json(r, MHD_HTTP_OK,
		       json_pack("{s:o,s:s,s:s}", "lock_name", cb__json_text(r->id), "outcome",
				 "FORCE_UNLOCKED", "by", who));
}

/* ---- restart --------------------------------------------------------------- */

struct child {
	pid_t pid;
	char what[200];
	FILE *log;
};

/* Reap the started job and say how it ended. */
static void *reaper(void *arg)
{
	struct child *ch = arg;
	int status = 0;

	while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		fprintf(ch->log, "serve: %s (pid %d) exited with %d\n", ch->what, (int)ch->pid,
			WEXITSTATUS(status));
	else
		fprintf(ch->log, "serve: %s (pid %d) ended by signal %d\n", ch->what, (int)ch->pid,
			WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	fflush(ch->log);
	free(ch);
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

/* Start `/proc/self/exe ARGV...`. @return its pid, or -1 (errno). */
static pid_t spawn_self(cb__console *c, char *const argv[])
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
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
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

void cb__api_restart(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	char name[200];
	long long id;
	PGconn *conn;
	json_t *body, *e = NULL;
	const char *status;
	size_t i;
	int rc;

	if (path_id(r, &id) < 0 || body_object(r, &body, 0) < 0)
		return;
	json_decref(body);
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_repo_execution_job_name(name, sizeof(name), conn, id, &err);
	if (rc == 0)
		rc = cb_repo_show_execution(&e, conn, id, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	for (i = 0; i < r->console->njobs && strcmp(r->console->jobs[i], name) != 0; i++)
		;
	if (i == r->console->njobs) {
		json_decref(e);
		cb__reply_error(r, MHD_HTTP_CONFLICT,
				"execution %lld is of job '%s', which is not registered in this "
				"program: restart it with the program that has it",
				id, name);
		return;
	}
	/* What can never restart is refused here; the rest (a live owner, not
	 * the newest execution) the restart itself says, in serve's log. */
	status = json_string_value(json_object_get(e, "status"));
	if (status && (strcmp(status, "COMPLETED") == 0 || strcmp(status, "ABANDONED") == 0)) {
		cb__reply_error(r, MHD_HTTP_CONFLICT, "execution %lld is %s: nothing to restart",
				id, status);
		json_decref(e);
		return;
	}
	json_decref(e);
	{
		char idtext[24], what[64];
		char *argv[4] = { "cbatch", "restart", idtext, NULL };
		pid_t pid;

		snprintf(idtext, sizeof(idtext), "%lld", id);
		snprintf(what, sizeof(what), "restart of execution %lld", id);
		if (cb__spawn_job(r, argv, what, &pid) < 0)
			return;
		cb__reply_json(r, MHD_HTTP_ACCEPTED,
			       json_pack("{s:I,s:i,s:s}", "job_execution_id", (json_int_t)id, "pid",
					 (int)pid, "status", "RESTARTING"));
	}
}

int cb__spawn_job(cb__request *r, char *const argv[], const char *what, pid_t *pid_out)
{
	struct child *ch;
	pthread_t t;
	pthread_attr_t ta;
	char who[80];

	if (!(ch = calloc(1, sizeof(*ch)))) {
		r->result = MHD_NO;
		r->replied = 1;
		return -1;
	}
	snprintf(ch->what, sizeof(ch->what), "%s", what);
	ch->log = r->console->log;
	if ((ch->pid = spawn_self(r->console, argv)) < 0) {
		int e2 = errno;

		free(ch);
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot start the %s: %s", what,
				strerror(e2));
		return -1;
	}
	*pid_out = ch->pid;
	actor(r, who, sizeof(who));
	fprintf(r->console->log, "serve: %s: %s started (pid %d)\n", who, what, (int)ch->pid);
	fflush(r->console->log);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &ta, reaper, ch) != 0) {
		/* Without a thread to wait: wait here, rather than leave a zombie. */
		reaper(ch);
	}
	pthread_attr_destroy(&ta);
	return 0;
}

void cb__request_actor(cb__request *r, char *out, size_t size)
{
	actor(r, out, size);
}
