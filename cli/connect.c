/*
 * Connecting: the public cb_cli_connect (the toolkit's connect, pg/connect.c,
 * kept here so that the ABI does not change) and a command's connection with
 * the schema and the display zone checked.
 */
#include "cli_internal.h"

#include "pgkit.h"

int cb_cli_connect(PGconn **out, const char *conninfo, cb_error *err)
{
	return cb__pg_connect(out, conninfo, err);
}

/* Connect, refuse a transaction pooler (every command, before it does
 * anything: exit 1 with CB003's message, as run's own refusal), and check the
 * schema and CBATCH_TZ when @p check. @return 0, or the exit code of a
 * reported error. */
int cb__cli_open_db(struct cli *c, PGconn **conn, int check)
{
	int rc = cb_cli_connect(conn, c->db, &c->err);

	if (rc < 0)
		return cb__cli_fail(c, CB_EXIT_FAILED);
	if (cb__pg_session_exclusive(*conn, &c->err) < 0) {
		PQfinish(*conn);
		*conn = NULL;
		return cb__cli_fail(c, CB_EXIT_FAILED);
	}
	if (check && cb_repo_schema_check(*conn, &c->err) < 0) {
		PQfinish(*conn);
		*conn = NULL;
		return cb__cli_fail(c, CB_EXIT_FAILED);
	}
	/* CBATCH_TZ is checked by the server whose tz data shows it: here, for
	 * every command that connects, so a bad one fails the same way for all. */
	if (check && (rc = cb__cli_zone_attach(c, *conn)) != 0) {
		PQfinish(*conn);
		*conn = NULL;
		return rc;
	}
	return 0;
}

int cb__cli_check_env(struct cli *c)
{
	PGconn *conn = NULL;
	int rc = cb__cli_open_db(c, &conn, 1);

	PQfinish(conn);
	return rc;
}
