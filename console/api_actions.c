/*
 * The console's actions: stop, abandon and restart an execution, release a
 * lock by force. The router has already refused them on a read-only server,
 * from another origin and without the admin token; what is left is what the
 * CLI's commands do, through the same library calls, recorded the same way:
 * the actor of a forced unlock is "console@ADDRESS" (the client's), where
 * the CLI names $USER@host.
 *
 * A restart runs a job, which is no work for a request thread: it starts
 * this very program (/proc/self/exe restart ID) as a process of its own and
 * answers with what became of it (spawn.c).
 */
#define _GNU_SOURCE /* POSIX_SPAWN_SETSID */
#include "console.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cbatch/lock.h"
#include "cbatch/repository.h"
#include "text.h"

#define REASON_MAX 500

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
	cb__log_to(r->console->log, "serve", CB__LOG_INFO, CB__EV_SERVE_ACTION,
		   CB__LOG_WITH(.execution = id), "%s: execution %lld %s", who, id,
		   stop ? (now == CB_STATUS_STOPPED ? "STOPPED (its owner was lost)" :
						      "stop requested") :
			  "ABANDONED");
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
		cb__log_to(r->console->log, "serve", CB__LOG_WARN, CB__EV_SERVE_ACTION, NULL,
			   "%s: lock '%s' released by force", who, shown);
	}
	cb__reply_json(r, MHD_HTTP_OK,
		       json_pack("{s:o,s:s,s:s}", "lock_name", cb__json_text(r->id), "outcome",
				 "FORCE_UNLOCKED", "by", who));
}

/* ---- restart --------------------------------------------------------------- */

/* Whether execution @p id is the newest of its instance: a restart of any
 * other would be refused, so it is refused here before a process starts.
 * @return 0, or -1 having replied (409 naming the newest, or the error). */
static int newest_of_instance(cb__request *r, long long id)
{
	cb_error err = CB_ERROR_INIT;
	char idtext[24];
	const char *p[1] = { idtext };
	long long newest = 0;
	PGconn *conn;
	PGresult *res;
	int rc;

	snprintf(idtext, sizeof(idtext), "%lld", id);
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return -1;
	}
	res = PQexecParams(conn,
			   "SELECT max(n.job_execution_id) FROM batch_job_execution e "
			   "JOIN batch_job_execution n USING (job_instance_id) "
			   "WHERE e.job_execution_id = $1",
			   1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    !PQgetisnull(res, 0, 0))
		newest = atoll(PQgetvalue(res, 0, 0));
	else
		rc = cb_error_set(&err, CB_EDB, "find the newest execution: %s",
				  PQerrorMessage(conn));
	PQclear(res);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		return -1;
	}
	if (newest != id) {
		cb__reply_error(r, MHD_HTTP_CONFLICT,
				"execution %lld is not the newest execution of its instance (that "
				"is %lld): restart the newest one",
				id, newest);
		return -1;
	}
	return 0;
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
	/* What can never restart is refused here, before anything starts; the
	 * rest (a live owner, a lock held) the restart itself decides, and the
	 * answer says what it decided. */
	status = json_string_value(json_object_get(e, "status"));
	if (status && (strcmp(status, "COMPLETED") == 0 || strcmp(status, "ABANDONED") == 0)) {
		cb__reply_error(r, MHD_HTTP_CONFLICT, "execution %lld is %s: nothing to restart",
				id, status);
		json_decref(e);
		return;
	}
	json_decref(e);
	if (newest_of_instance(r, id) < 0)
		return;
	{
		char idtext[24], what[64];
		char *argv[4] = { "cbatch", "restart", idtext, NULL };
		cb__job_child *ch;

		snprintf(idtext, sizeof(idtext), "%lld", id);
		snprintf(what, sizeof(what), "restart of execution %lld", id);
		if (cb__spawn_job(r, argv, what, &ch) < 0)
			return;
		cb__spawn_answer(r, ch, name, r->console->launch_wait);
	}
}

void cb__request_actor(cb__request *r, char *out, size_t size)
{
	actor(r, out, size);
}
