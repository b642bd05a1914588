/* Schema creation and upgrade, and the small SQL helpers. */
#include "repo.h"
#include "schema_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/pg.h"

/* Any constant will do; it only has to be the same in every cbatch process. */
#define SCHEMA_LOCK_KEY "7253474105151942145"

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

/*
 * The functions are "repeatable migrations" (as Flyway calls them): each file
 * of sql/functions/ is applied again whenever its content changes. Its hash
 * is kept on the function itself, as its comment, rather than in a table of
 * our own: the catalog is readable by every role, so an up-to-date `schema
 * init` or `schema check` needs no privilege on anything but
 * batch_schema_version, and a function dropped by hand is noticed.
 */
#define FUNCTION_MARK "cbatch sha256 "

/* The names and hashes of every function file, as two array literals ("{a,b}"):
 * names are identifiers and hashes hex, nothing needs quoting. */
static int function_arrays(char **names, char **hashes, cb_error *err)
{
	size_t n = 2, h = 2;

	for (size_t i = 0; i < cb__schema_functions_count; i++) {
		n += strlen(cb__schema_functions[i].name) + 1;
		h += strlen(cb__schema_functions[i].hash) + 1;
	}
	*names = malloc(n + 1);
	*hashes = malloc(h + 1);
	if (!*names || !*hashes) {
		free(*names);
		free(*hashes);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	strcpy(*names, "{");
	strcpy(*hashes, "{");
	for (size_t i = 0; i < cb__schema_functions_count; i++) {
		if (i) {
			strcat(*names, ",");
			strcat(*hashes, ",");
		}
		strcat(*names, cb__schema_functions[i].name);
		strcat(*hashes, cb__schema_functions[i].hash);
	}
	strcat(*names, "}");
	strcat(*hashes, "}");
	return 0;
}

/* The function files whose function is missing or carries another hash. */
#define STALE_FUNCTIONS                                                                            \
	"SELECT w.name FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(name, hash, n) "   \
	"WHERE NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = w.name "                      \
	"AND p.pronamespace = current_schema()::regnamespace "                                     \
	"AND obj_description(p.oid, 'pg_proc') = '" FUNCTION_MARK "' || w.hash) ORDER BY w.n"

/* The schema as a connection that keeps its session for the next run can
 * tell it has not changed since its last full check (cb_repo_schema_check):
 * the version, and the repository functions' row versions (CREATE OR
 * REPLACE, a drop or a new function changes them). Cheap: one pass over
 * pg_proc, against the full check's per-function look at comments. */
#define SCHEMA_FINGERPRINT                                                                         \
	"(SELECT count(*) || ':' || coalesce(sum(p.xmin::text::bigint), 0) FROM pg_proc p "        \
	"WHERE p.pronamespace = current_schema()::regnamespace)"

/* The fingerprint now, into @p fp. @return 0 or CB_EDB. */
static int fingerprint(char *fp, size_t size, PGconn *conn, cb_error *err)
{
	PGresult *res =
		cb__repo_exec(conn, "read schema version",
			      "SELECT coalesce(max(version), 0) || ':' || " SCHEMA_FINGERPRINT
			      " FROM batch_schema_version",
			      0, NULL, err);

	if (!res)
		return CB_EDB;
	snprintf(fp, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/* @p fp (if not NULL, @p fpsize bytes): the fingerprint read in the same
 * statement as the version, so that it describes what was checked. */
static int current_version(int *out, int *stale, char *fp, size_t fpsize, PGconn *conn,
			   cb_error *err)
{
	char *names = NULL, *hashes = NULL;
	const char *params[2];
	PGresult *res;
	int rc = function_arrays(&names, &hashes, err);

	if (rc < 0)
		return rc;
	params[0] = names;
	params[1] = hashes;
	res = cb__repo_exec(
		conn, "read schema version",
		/* Only functions that are there but differ: a missing one fails where
		 * it is called, naming itself, as it did before functions had hashes. */
		"SELECT coalesce(max(version), 0), (SELECT count(*) FROM (" STALE_FUNCTIONS
		") s WHERE EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = s.name "
		"AND p.pronamespace = current_schema()::regnamespace)), "
		"coalesce(max(version), 0) || ':' || " SCHEMA_FINGERPRINT
		" FROM batch_schema_version",
		2, params, err);
	free(names);
	free(hashes);
	if (!res)
		return CB_EDB;
	*out = atoi(PQgetvalue(res, 0, 0));
	if (stale)
		*stale = atoi(PQgetvalue(res, 0, 1));
	if (fp)
		snprintf(fp, fpsize, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	return 0;
}

/* -1 when there is no repository in this database. */
static int schema_version(int *out, int *stale, char *fp, size_t fpsize, PGconn *conn,
			  cb_error *err)
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
		if (stale)
			*stale = (int)cb__schema_functions_count;
		return 0;
	}
	return current_version(out, stale, fp, fpsize, conn, err);
}

static const struct cb__schema_function *function_named(const char *name)
{
	for (size_t i = 0; i < cb__schema_functions_count; i++)
		if (strcmp(cb__schema_functions[i].name, name) == 0)
			return &cb__schema_functions[i];
	return NULL;
}

/* Runs each "DROP FUNCTION <identity>" (or other command) that sql returns. */
static int run_returned(PGconn *conn, const char *what, const char *sql, int nparams,
			const char *const *params, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, what, sql, nparams, params, err);
	int rc = 0;

	if (!res)
		return CB_EDB;
	for (int i = 0; rc == 0 && i < PQntuples(res); i++)
		rc = cb__repo_command(conn, what, PQgetvalue(res, i, 0), 0, NULL, err);
	PQclear(res);
	return rc;
}

/* The overloads of a name, each as "oid:ctid": CREATE OR REPLACE writes a new
 * version of the row it replaces, so an entry still there afterwards is an
 * overload that the file did not define. */
#define OVERLOADS                                                                                  \
	"SELECT coalesce(array_agg(p.oid::text || ':' || p.ctid::text), '{}') FROM pg_proc p "     \
	"WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace"

/*
 * Applies one function file and marks what it defined with its hash.
 *
 * The file says CREATE OR REPLACE, which keeps the function's identity (its
 * grants, and the plans that use it) when only its body changes. A new
 * signature needs more, and nothing has to be written for it by hand:
 *  - other argument types create an overload beside the old one, which then
 *    goes (an old signature left behind would make calls ambiguous);
 *  - other result or parameter names or defaults are refused by CREATE OR
 *    REPLACE (42P13): every overload of the name is dropped, and the file
 *    applied again.
 */
static int apply_function(PGconn *conn, const struct cb__schema_function *f, cb_error *err)
{
	const char *params[2] = { f->name, NULL };
	char what[160], *mark = NULL;
	PGresult *res, *before;
	int rc;

	snprintf(what, sizeof(what), "function %s", f->name);
	rc = cb__repo_command(conn, what, "SAVEPOINT cb_function", 0, NULL, err);
	if (rc < 0)
		return rc;
	before = cb__repo_exec(conn, what, OVERLOADS, 1, params, err);
	if (!before)
		return CB_EDB;
	res = PQexec(conn, f->sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (!state || strcmp(state, "42P13") != 0) {
			rc = cb_pg_error(err, conn, res, what);
		} else {
			rc = cb__repo_command(conn, what, "ROLLBACK TO SAVEPOINT cb_function", 0,
					      NULL, err);
			if (rc == 0)
				rc = run_returned(conn, what,
						  "SELECT 'DROP FUNCTION ' || p.oid::regprocedure "
						  "FROM pg_proc p WHERE p.proname = $1 AND "
						  "p.pronamespace = current_schema()::regnamespace",
						  1, params, err);
			if (rc == 0) {
				PQclear(res);
				res = PQexec(conn, f->sql);
				if (PQresultStatus(res) != PGRES_COMMAND_OK &&
				    PQresultStatus(res) != PGRES_TUPLES_OK)
					rc = cb_pg_error(err, conn, res, what);
			}
		}
	}
	PQclear(res);
	params[1] = PQgetvalue(before, 0, 0);
	if (rc == 0)
		rc = run_returned(conn, what,
				  "SELECT 'DROP FUNCTION ' || p.oid::regprocedure FROM pg_proc p "
				  "WHERE p.proname = $1 AND p.pronamespace = "
				  "current_schema()::regnamespace AND "
				  "p.oid::text || ':' || p.ctid::text = ANY ($2::text[])",
				  2, params, err);
	if (rc == 0) {
		/* COMMENT takes no parameters: the mark is a literal, quoted. */
		char text[128];

		snprintf(text, sizeof(text), FUNCTION_MARK "%s", f->hash);
		mark = PQescapeLiteral(conn, text, strlen(text));
		if (!mark)
			rc = cb_pg_error(err, conn, NULL, what);
	}
	if (rc == 0) {
		const char *p2[2] = { f->name, mark };

		rc = run_returned(
			conn, what,
			"SELECT format('COMMENT ON FUNCTION %s IS %s', p.oid::regprocedure, "
			"$2::text) FROM pg_proc p WHERE p.proname = $1 AND "
			"p.pronamespace = current_schema()::regnamespace",
			2, p2, err);
	}
	PQfreemem(mark);
	PQclear(before);
	if (rc == 0)
		rc = cb__repo_command(conn, what, "RELEASE SAVEPOINT cb_function", 0, NULL, err);
	return rc;
}

/* The stale function files, in file order; *out is NULL-terminated, borrowed names. */
static int stale_functions(const struct cb__schema_function ***out, size_t *n, PGconn *conn,
			   cb_error *err)
{
	char *names = NULL, *hashes = NULL;
	const char *params[2];
	PGresult *res;
	int rc = function_arrays(&names, &hashes, err);

	*out = NULL;
	*n = 0;
	if (rc < 0)
		return rc;
	params[0] = names;
	params[1] = hashes;
	res = cb__repo_exec(conn, "read schema functions", STALE_FUNCTIONS, 2, params, err);
	free(names);
	free(hashes);
	if (!res)
		return CB_EDB;
	*out = calloc((size_t)PQntuples(res) + 1, sizeof(**out));
	if (!*out) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (int i = 0; i < PQntuples(res); i++)
		(*out)[(*n)++] = function_named(PQgetvalue(res, i, 0));
	PQclear(res);
	return 0;
}

/* Applies stale function f if it still is (a migration may have needed it first). */
static int apply_if_stale(PGconn *conn, const struct cb__schema_function **stale, size_t n,
			  const struct cb__schema_function *f, cb_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (stale[i] == f) {
			stale[i] = NULL;
			return apply_function(conn, f, err);
		}
	return 0;
}

static int run_migration(PGconn *conn, const struct cb__migration *m, cb_error *err)
{
	char ver[16], what[128];
	const char *params[2] = { ver, m->name };
	PGresult *res = PQexec(conn, m->sql);
	int rc = 0;

	/* A migration may be all comments: what it did is in its functions' files now. */
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK &&
	    PQresultStatus(res) != PGRES_EMPTY_QUERY) {
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
	return rc;
}

/*
 * The order, in one transaction: the migrations above the current version,
 * in their order, then every function whose file changed. A migration runs
 * while the functions are still those of the version it upgrades from (or
 * none, on a new repository); one that calls a function while it runs (a
 * data move, an index on an expression) names it in a "-- needs:" line, and
 * that function is applied, as its file has it today, just before the
 * migration: such functions must therefore work on every schema version from
 * that migration on. Function bodies are checked when called, not when
 * created (as pg_dump restores them), so that the files apply in any order.
 */
static int upgrade(PGconn *conn, int v, cb_error *err)
{
	const struct cb__schema_function **stale = NULL;
	size_t n = 0;
	int rc = stale_functions(&stale, &n, conn, err);

	/* Quiet too: a trigger's file drops it IF EXISTS, which is a NOTICE on
	 * every new repository. */
	if (rc == 0 && n > 0)
		rc = cb__repo_command(conn, "schema functions",
				      "SET LOCAL check_function_bodies = off", 0, NULL, err);
	if (rc == 0 && n > 0)
		rc = cb__repo_command(conn, "schema functions",
				      "SET LOCAL client_min_messages = warning", 0, NULL, err);
	for (size_t i = 0; rc == 0 && i < cb__migrations_count; i++) {
		const struct cb__migration *m = &cb__migrations[i];

		if (m->version <= v)
			continue;
		for (const char *const *need = m->needs; rc == 0 && *need; need++)
			rc = apply_if_stale(conn, stale, n, function_named(*need), err);
		if (rc == 0)
			rc = run_migration(conn, m, err);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (stale[i])
			rc = apply_function(conn, stale[i], err);
	free(stale);
	return rc;
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
		rc = schema_version(&v, NULL, NULL, 0, conn, err);
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
	if (rc == 0)
		rc = upgrade(conn, v, err);
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
	const char *memo = cb__conn_schema_memo(conn);
	char fp[96] = "";
	int v = -1, stale = 0, rc;

	/* A kept connection (a scheduler's runner) checked it in full before:
	 * unchanged since, it still holds. */
	if (memo) {
		cb_error ignored = CB_ERROR_INIT;

		if (fingerprint(fp, sizeof(fp), conn, &ignored) == 0 && strcmp(fp, memo) == 0)
			return 0;
		cb__conn_schema_memo_set(conn, NULL);
	}
	if ((rc = schema_version(&v, &stale, fp, sizeof(fp), conn, err)) < 0)
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
	if (stale > 0)
		return cb_error_set(err, CB_EINVAL,
				    "repository schema is at version %d, but %d of its functions "
				    "are not this cbatch's: run `cbatch schema init`",
				    v, stale);
	if (cb__pg_keeping())
		cb__conn_schema_memo_set(conn, fp);
	return 0;
}
