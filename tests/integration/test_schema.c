/*
 * The schema's two halves: versioned migrations (sql/migrations/) and one file
 * per function (sql/functions/), re-applied when their hash changes.
 *
 * "As an older cbatch made it" is built from tests/data/schema_history/, the
 * files those releases shipped, each holding its functions as they were then.
 * Whatever version a repository comes from, `schema init` must bring it to
 * exactly the schema a new repository gets: the same tables and columns,
 * indexes, constraints, triggers and function definitions (compared through
 * the catalog, not by file text), and old function signatures gone.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

/* Everything the schema defines, one line each, sorted; its md5. */
#define SCHEMA_DIGEST                                                                               \
	"SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM ("                                       \
	"SELECT 'fn ' || p.oid::regprocedure || E'\\n' || pg_get_functiondef(p.oid) AS x "          \
	"FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace "                             \
	"UNION ALL SELECT 'col ' || a.attrelid::regclass || '.' || a.attname || ' ' || "            \
	"format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' || a.attnum || ' ' || " \
	"coalesce(pg_get_expr(d.adbin, d.adrelid), '') FROM pg_attribute a "                        \
	"JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid "   \
	"AND d.adnum = a.attnum WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN "    \
	"('r', 'S', 'v') AND a.attnum > 0 AND NOT a.attisdropped "                                  \
	"UNION ALL SELECT 'idx ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c " \
	"ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace "                      \
	"UNION ALL SELECT 'con ' || conrelid::regclass || ' ' || conname || ' ' || "                \
	"pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace " \
	"UNION ALL SELECT 'tg ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal) s"

static char db[CBT_CONNINFO_MAX];
static char fresh_digest[64];

static int init(void)
{
	PGconn *conn = NULL;

	if (cbt_repo_db(db, sizeof(db), "schema", &conn) < 0)
		return -1;
	cbt_query_str(conn, SCHEMA_DIGEST, fresh_digest, sizeof(fresh_digest));
	PQfinish(conn);
	return fresh_digest[0] ? 0 : -1;
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* A new database holding what the cbatch of schema version @p k made (none: 0). */
static PGconn *history_db(char *conninfo, size_t size, int k)
{
	char dir[4096], path[8192], sql[512];
	struct dirent **list = NULL;
	PGconn *conn;
	int n;

	if (cbt_db_create(conninfo, size, "schema_old") < 0)
		return NULL;
	conn = cbt_connect(conninfo);
	snprintf(dir, sizeof(dir), "%s/tests/data/schema_history", cbt_source_dir());
	n = scandir(dir, &list, NULL, by_name);
	CU_ASSERT_FATAL(n > 0);
	cbt_exec(conn, "BEGIN");
	cbt_exec(conn, "CREATE TABLE batch_schema_version (version int PRIMARY KEY, name text NOT "
		       "NULL, installed_at timestamptz NOT NULL DEFAULT clock_timestamp())");
	for (int i = 0; i < n; i++) {
		int v = atoi(list[i]->d_name);
		char *text;

		if (v >= 1 && v <= k && strstr(list[i]->d_name, ".sql")) {
			snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
			text = cbt_slurp(path, NULL);
			CU_ASSERT_PTR_NOT_NULL_FATAL(text);
			cbt_exec(conn, text);
			free(text);
			snprintf(
				sql, sizeof(sql),
				"INSERT INTO batch_schema_version (version, name) VALUES (%d, '%s')",
				v, list[i]->d_name);
			cbt_exec(conn, sql);
		}
		free(list[i]);
	}
	free(list);
	cbt_exec(conn, "COMMIT");
	return conn;
}

static void test_upgrade_from_every_version_gives_the_new_schema(void)
{
	int target = cb_repo_schema_target();

	/* The history ends where the migrations began to be split. */
	for (int k = 0; k <= 14 && k <= target; k++) {
		char old[CBT_CONNINFO_MAX], digest[64];
		PGconn *conn = history_db(old, sizeof(old), k);
		cb_error err = CB_ERROR_INIT;
		int from = -2, to = -2;

		CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
		if (k > 0)
			CBT_FAILS_WITH(CB_EINVAL, cb_repo_schema_check(conn, &err), &err);
		CBT_PASS(cb_repo_schema_init(conn, &from, &to, &err), &err);
		CBT_EQ_LL(from, k);
		CBT_EQ_LL(to, target);
		CBT_PASS(cb_repo_schema_check(conn, &err), &err);
		cbt_query_str(conn, SCHEMA_DIGEST, digest, sizeof(digest));
		if (strcmp(digest, fresh_digest) != 0)
			CBT_FAILF("from version %d: the schema differs from a new repository's", k);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schema_version"), target);
		PQfinish(conn);
		cbt_db_drop(old);
	}
}

static void test_a_changed_function_is_applied_again(void)
{
	PGconn *conn = cbt_connect(db);
	cb_error err = CB_ERROR_INIT;
	char digest[64];

	/* A body changed by hand (its hash no longer matches the file's). */
	cbt_exec(conn, "COMMENT ON FUNCTION batch_natural_key(text) IS 'edited'");
	CBT_FAILS_WITH(CB_EINVAL, cb_repo_schema_check(conn, &err), &err);
	CBT_CONTAINS(err.message, "1 of its functions");
	CBT_PASS(cb_repo_schema_init(conn, NULL, NULL, &err), &err);
	CBT_PASS(cb_repo_schema_check(conn, &err), &err);
	/* A function gone (not a check's failure: its callers name it), and one
	 * with another signature: back to the file's. */
	cbt_exec(conn, "DROP FUNCTION batch_lock_heartbeat(varchar, varchar, bigint, double "
		       "precision, bigint)");
	CBT_PASS(cb_repo_schema_check(conn, &err), &err);
	cbt_exec(conn, "DROP FUNCTION batch_lock_release(varchar, varchar, bigint, double "
		       "precision, bigint)");
	cbt_exec(conn, "CREATE FUNCTION batch_lock_release(p_lock_name text) RETURNS int "
		       "LANGUAGE sql AS 'SELECT 1'");
	/* Same arguments, another result: CREATE OR REPLACE refuses, so it is dropped. */
	cbt_exec(conn, "DROP FUNCTION batch_worker_host(varchar)");
	cbt_exec(conn, "CREATE FUNCTION batch_worker_host(p_worker varchar) RETURNS int "
		       "LANGUAGE sql AS 'SELECT 1'");
	CBT_FAILS_WITH(CB_EINVAL, cb_repo_schema_check(conn, &err), &err);
	CBT_PASS(cb_repo_schema_init(conn, NULL, NULL, &err), &err);
	CBT_PASS(cb_repo_schema_check(conn, &err), &err);
	cbt_query_str(conn, SCHEMA_DIGEST, digest, sizeof(digest));
	CBT_EQ_STR(digest, fresh_digest);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM pg_proc WHERE proname = "
				     "'batch_lock_release'"),
		  1);
	PQfinish(conn);
}

static void test_every_function_file_is_marked_with_its_hash(void)
{
	PGconn *conn = cbt_connect(db);

	/* One comment per function, and only cbatch's functions carry one. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = "
				     "'public'::regnamespace AND obj_description(p.oid, 'pg_proc') "
				     "LIKE 'cbatch sha256 %'"),
		  cbt_query_ll(conn, "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = "
				     "'public'::regnamespace AND p.proname LIKE 'batch\\_%'"));
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "upgrade from every version gives the new schema",
	  test_upgrade_from_every_version_gives_the_new_schema },
	{ "a changed function is applied again", test_a_changed_function_is_applied_again },
	{ "every function file is marked with its hash",
	  test_every_function_file_is_marked_with_its_hash },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("schema", init, clean, tests);
}
