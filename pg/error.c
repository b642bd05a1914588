/*
 * libpq errors into cbatch's error object, in one place: by SQLSTATE, never
 * by message text (40001/40P01/55P03 are retryable, CB00x are our own).
 */
#include "pgkit.h"

#include <stdio.h>
#include <string.h>

/* What the server says when pg_terminate_backend ended the session. */
#define TERMINATED "terminating connection due to administrator command"

size_t cb__pg_message_line(char *out, size_t size, const char *msg)
{
	size_t n;

	if (!msg || !*msg)
		msg = "unknown error";
	/* libpq's own text: "FATAL:  ...\nserver closed the connection
	 * unexpectedly\n\tThis probably means...": its first line says it. */
	if (strncmp(msg, "FATAL:  ", 8) == 0 || strncmp(msg, "ERROR:  ", 8) == 0 ||
	    strncmp(msg, "PANIC:  ", 8) == 0)
		msg += 8;
	if (strncmp(msg, TERMINATED, strlen(TERMINATED)) == 0)
		msg = "its database session was ended by another process (takeover, stop, "
		      "burial) or by the server shutting down (restart, switchover)";
	n = strcspn(msg, "\n");
	while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\t' || msg[n - 1] == '\r'))
		n--;
	return (size_t)snprintf(out, size, "%.*s", (int)n, msg);
}

int cb_pg_error(cb_error *err, PGconn *conn, const PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	char line[512];
	int code = CB_EDB;

	if (!msg || !*msg)
		msg = conn ? PQerrorMessage(conn) : "unknown error";
	if (!state && strstr(msg, TERMINATED))
		state = "57P01";
	cb__pg_message_line(line, sizeof(line), msg);
	msg = line;
	if (!state && conn && PQstatus(conn) == CONNECTION_BAD)
		state = "08006";
	/* 55P03: a lock_timeout ran out (see the launcher's bounded waits). */
	if (state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
		      strcmp(state, "55P03") == 0))
		code = CB_ERETRY;
	else if (state && strcmp(state, "CB002") == 0)
		code = CB_EFENCED;
	else if (state && strcmp(state, "CB001") == 0)
		code = CB_ESTALE;
	/* One of our statements missing (or a name taken) in the session: the
	 * session is not the one it was prepared in, which only a pooler in
	 * transaction or statement mode does. */
	/* A standby (or a primary demoted under us): say what to connect to. */
	if (state && strcmp(state, "25006") == 0)
		detail =
			"the server is read-only, a standby: connect to the primary, e.g. list "
			"every member in a multi-host conninfo with target_session_attrs=read-write";
	if (state && (strcmp(state, "26000") == 0 || strcmp(state, "42P05") == 0) &&
	    strstr(msg, "\"cb_"))
		detail = "the server session changed under this connection: transaction pooling "
			 "is not supported, use PgBouncer pool_mode=session or connect directly";
	if (err && err->code == 0) {
		if (detail && *detail)
			cb_error_set(err, code, "%s: %s (%s) [SQLSTATE %s]", what, msg, detail,
				     state ? state : "?????");
		else
			cb_error_set(err, code, "%s: %s [SQLSTATE %s]", what, msg,
				     state ? state : "?????");
		snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", state ? state : "");
	}
	return code;
}

int cb__pg_result_check(const PGresult *res, PGconn *conn, const char *label, const char *what,
			cb_error *err)
{
	if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
		return 0;
	cb_pg_error(err, conn, res, label);
	return cb_error_prefix(err, "%s", what);
}

int cb__pg_lost(const cb_error *err, PGconn *conn)
{
	const char *s = err ? err->sqlstate : "";

	if (conn && PQstatus(conn) != CONNECTION_OK)
		return 1;
	return strncmp(s, "08", 2) == 0 || strcmp(s, "57P01") == 0 || strcmp(s, "57P02") == 0 ||
	       strcmp(s, "57P03") == 0 || strcmp(s, "25006") == 0;
}
