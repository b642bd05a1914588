/*
 * Learning the server session behind a connection (pg/session.c keeps it
 * per connection and refuses one session shared by two connections). The
 * query runs here, through cb__repo_exec, like every other statement of the
 * repository's, so that tests and benchmarks see it among them.
 */
#include "repo.h"

#include <stdlib.h>

int cb__conn_session(int *pid, const char **start, PGconn *conn, cb_error *err)
{
	PGresult *res;
	int rc;

	if (cb__conn_known_session(pid, start, conn))
		return 0;
	res = cb__repo_exec(conn, "read the connection's server session", CB__SESSION_SQL, 0, NULL,
			    err);
	if (!res)
		return err->code ? err->code : CB_EDB;
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 1)) {
		PQclear(res);
		return cb_error_set(err, CB_EDB,
				    "cannot read this connection's server session "
				    "(pg_stat_get_activity has no row for it)");
	}
	rc = cb__conn_session_learned(pid, start, conn, atoi(PQgetvalue(res, 0, 0)),
				      PQgetvalue(res, 0, 1), err);
	PQclear(res);
	return rc;
}
