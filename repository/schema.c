/* Schema creation and upgrade, statuses, and the small SQL helpers. */
#include "repo.h"
#include "schema_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/pg.h"

/* Any constant will do; it only has to be the same in every cbatch process. */
#define SCHEMA_LOCK_KEY "7253474105151942145"

static const char *const status_names[] = { "STARTING",  "STARTED", "STOPPING",  "STOPPED",
					    "COMPLETED", "FAILED",  "ABANDONED", "UNKNOWN" };

const char *cb_status_name(cb_status s)
{
	if ((int)s < 0 || s > CB_STATUS_UNKNOWN)
		return "UNKNOWN";
	return status_names[s];
}

cb_status cb_status_parse(const char *name)
{
	for (int i = 0; i <= CB_STATUS_UNKNOWN; i++)
		if (name && strcmp(name, status_names[i]) == 0)
			return (cb_status)i;
	return CB_STATUS_UNKNOWN;
}

int cb_status_is_running(cb_status s)
{
	return s == CB_STATUS_STARTING || s == CB_STATUS_STARTED || s == CB_STATUS_STOPPING;
}

cb__repo_observer_fn cb__repo_observer;
void *cb__repo_observer_ctx;

PGresult *cb__repo_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			const char *const *values, cb_error *err)
{
	PGresult *res;
	ExecStatusType st;

	if (cb__repo_observer)
		cb__repo_observer(cb__repo_observer_ctx, what, sql, nparams, values);
	res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);
	st = PQresultStatus(res);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		cb_pg_error(err, conn, res, what);
		PQclear(res);
		return NULL;
	}
	return res;
}

int cb__repo_command(PGconn *conn, const char *what, const char *sql, int nparams,
		     const char *const *values, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, what, sql, nparams, values, err);

	if (!res)
		return err && err->code ? err->code : CB_EDB;
	PQclear(res);
	return 0;
}

int cb_repo_schema_target(void)
{
	int v = 0;

	for (size_t i = 0; i < cb__migrations_count; i++)
		if (cb__migrations[i].version > v)
			v = cb__migrations[i].version;
	return v;
}

static int current_version(int *out, PGconn *conn, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, "read schema version",
				      "SELECT coalesce(max(version), 0) FROM batch_schema_version",
				      0, NULL, err);

	if (!res)
		return CB_EDB;
	*out = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/* -1 when there is no repository in this database. */
static int schema_version(int *out, PGconn *conn, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, "read schema version",
				      "SELECT to_regclass('batch_schema_version') IS NOT NULL", 0,
				      NULL, err);
	int present;

	if (!res)
		return CB_EDB;
	present = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!present) {
		*out = -1;
		return 0;
	}
	return current_version(out, conn, err);
}

int cb_repo_schema_init(PGconn *conn, int *from, int *to, cb_error *err)
{
	int v = 0, rc, target = cb_repo_schema_target();

	rc = cb__repo_command(conn, "begin", "BEGIN", 0, NULL, err);
	if (rc < 0)
		return rc;
	/* Serialises concurrent `schema init`s: the second waits, then sees the work done. */
	rc = cb__repo_command(conn, "schema lock",
			      "SELECT pg_advisory_xact_lock(" SCHEMA_LOCK_KEY ")", 0, NULL, err);
	/* Look before creating: CREATE TABLE IF NOT EXISTS checks the CREATE
	 * privilege first, and an up-to-date schema must need none. */
	if (rc == 0)
		rc = schema_version(&v, conn, err);
	if (rc == 0 && v < 0) {
		rc = cb__repo_command(
			conn, "create batch_schema_version",
			"CREATE TABLE IF NOT EXISTS batch_schema_version ("
			"version int PRIMARY KEY, name text NOT NULL, "
			"installed_at timestamptz NOT NULL DEFAULT clock_timestamp())",
			0, NULL, err);
		v = 0;
	}
	if (rc == 0 && v > target)
		rc = cb_error_set(err, CB_EINVAL,
				  "repository schema is at version %d, newer than this cbatch "
				  "(version %d): upgrade cbatch",
				  v, target);
	if (from)
		*from = v;
	for (size_t i = 0; rc == 0 && i < cb__migrations_count; i++) {
		const struct cb__migration *m = &cb__migrations[i];
		char ver[16];
		const char *params[2] = { ver, m->name };
		PGresult *res;

		if (m->version <= v)
			continue;
		res = PQexec(conn, m->sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK &&
		    PQresultStatus(res) != PGRES_TUPLES_OK) {
			char what[128];

			snprintf(what, sizeof(what), "migration %s", m->name);
			rc = cb_pg_error(err, conn, res, what);
		}
		PQclear(res);
		snprintf(ver, sizeof(ver), "%d", m->version);
		if (rc == 0)
			rc = cb__repo_command(conn, "record schema version",
					      "INSERT INTO batch_schema_version (version, name) "
					      "VALUES ($1::int, $2)",
					      2, params, err);
	}
	if (rc == 0)
		rc = cb__repo_command(conn, "commit", "COMMIT", 0, NULL, err);
	if (rc < 0) {
		PGresult *res = PQexec(conn, "ROLLBACK");

		PQclear(res);
		return rc;
	}
	if (to)
		*to = v > target ? v : target;
	return 0;
}

int cb_repo_schema_check(PGconn *conn, cb_error *err)
{
	int v = -1, rc = schema_version(&v, conn, err);

	if (rc < 0)
		return rc;
	if (v < 0)
		return cb_error_set(
			err, CB_EINVAL,
			"no cbatch repository in this database: run `cbatch schema init`");
	if (v != cb_repo_schema_target())
		return cb_error_set(err, CB_EINVAL,
				    "repository schema is at version %d, this cbatch needs %d: "
				    "run `cbatch schema init`",
				    v, cb_repo_schema_target());
	return 0;
}
