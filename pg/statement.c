/*
 * Statements and identifiers on a connection: preparing under a name no
 * other connection uses, dropping it again, and quoting identifiers.
 */
#include "pgkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cb_pg_prepare(PGconn *conn, char *name_out, const char *prefix, const char *sql, int nparams,
		  cb_error *err)
{
	PGresult *res;
	PGconn *mirror;
	int rc = 0;

	/* Unique per connection, not per process: a process counter starts
	 * again at 1 in the next process, whose statement could then meet a
	 * name left in a server session it was handed (a pooler). */
	cb__conn_stmt_name(name_out, 64, conn, prefix);
	res = PQprepare(conn, name_out, sql, nparams, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = cb_pg_error(err, conn, res, "prepare");
	PQclear(res);
	if (rc == 0 && (mirror = cb__conn_mirror(conn)) != NULL) {
		res = PQprepare(mirror, name_out, sql, nparams, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = cb_pg_error(err, mirror, res, "prepare (second connection)");
		PQclear(res);
	}
	return rc;
}

int cb_pg_quote_ident(char **out, PGconn *conn, const char *ident, cb_error *err)
{
	char *q;
	size_t n = ident ? strlen(ident) : 0;

	*out = NULL;
	if (n == 0)
		return cb_error_set(err, CB_EINVAL, "empty SQL identifier");
	if (n > 63)
		return cb_error_set(err, CB_EINVAL,
				    "SQL identifier '%.80s' is longer than 63 bytes", ident);
	q = PQescapeIdentifier(conn, ident, n);
	if (!q)
		return cb_error_set(err, CB_EINVAL, "cannot quote identifier '%.80s': %s", ident,
				    PQerrorMessage(conn));
	*out = strdup(q);
	PQfreemem(q);
	if (!*out)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

static void deallocate(PGconn *conn, const char *name)
{
	char sql[96];
	PGresult *res;

	if (conn && name[0] && PQstatus(conn) == CONNECTION_OK &&
	    PQpipelineStatus(conn) == PQ_PIPELINE_OFF) {
		/* names come from cb_pg_prepare: cb_<letters>_<number>, no quoting needed */
		snprintf(sql, sizeof(sql), "DEALLOCATE %s", name);
		res = PQexec(conn, sql);
		PQclear(res);
	}
}

void cb__pg_deallocate(PGconn *conn, char *name)
{
	deallocate(conn, name);
	deallocate(cb__conn_mirror(conn), name);
	name[0] = '\0';
}
