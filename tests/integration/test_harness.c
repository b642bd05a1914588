/* The harness itself: the throwaway cluster, database helpers, child processes. */
#include "cbtest.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char db[CBT_CONNINFO_MAX];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "harness");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static void test_suite_database(void)
{
	PGconn *conn = cbt_connect(db);
	char fsync[16];

	CBT_EQ_LL(cbt_query_ll(conn, "SELECT 1"), 1);
	/* The cluster is the disposable one from scripts/pg-cluster.sh. */
	cbt_query_str(conn, "SELECT current_setting('fsync')", fsync, sizeof(fsync));
	CBT_EQ_STR(fsync, "off");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM pg_settings "
				     "WHERE name = 'listen_addresses' AND setting = ''"),
		  1);
	CU_ASSERT_EQUAL(cbt_exec(conn, "CREATE TABLE t (id bigint PRIMARY KEY); "
				       "INSERT INTO t SELECT generate_series(1, 10)"),
			0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT sum(id) FROM t"), 55);
	PQfinish(conn);
}

static void test_create_and_drop(void)
{
	char other[CBT_CONNINFO_MAX];
	PGconn *admin, *conn;
	const char *name;

	CU_ASSERT_EQUAL_FATAL(cbt_db_create(other, sizeof(other), "Harness-Other!"), 0);
	CU_ASSERT_STRING_NOT_EQUAL(other, db);
	name = strstr(other, "dbname=");
	CU_ASSERT_PTR_NOT_NULL_FATAL(name);
	name += strlen("dbname=");
	CU_ASSERT_EQUAL(strncmp(name, "harness_other__", 15), 0);

	/* A session left open (as by a killed child) must not block the drop. */
	conn = cbt_connect(other);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT 42"), 42);
	cbt_db_drop(other);
	PQfinish(conn);

	admin = cbt_connect(db);
	{
		/* The name travels as a parameter, like every value. */
		const char *p[1] = { name };
		PGresult *res = PQexecParams(admin,
					     "SELECT count(*) FROM pg_database "
					     "WHERE datname = $1",
					     1, NULL, p, NULL, NULL, 0);

		CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
			CBT_EQ_STR(PQgetvalue(res, 0, 0), "0");
		PQclear(res);
	}
	PQfinish(admin);
}

static void test_run_captures(void)
{
	const char *argv[] = { "/bin/sh", "-c", "echo hi; echo oops >&2; exit 3", NULL };
	char out[64], err[64];

	CBT_EQ_LL(cbt_run(argv, out, sizeof(out), err, sizeof(err)), 3);
	CBT_EQ_STR(out, "hi\n");
	CBT_EQ_STR(err, "oops\n");
}

static void test_run_edges(void)
{
	const char *big[] = { "/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; exit 0",
			      NULL };
	const char *sig[] = { "/bin/sh", "-c", "kill -9 $$", NULL };
	const char *none[] = { "/nonexistent/cbatch-no-such-program", NULL };
	char out[16];

	/* Output larger than the buffer is truncated, and the child never blocks. */
	CBT_EQ_LL(cbt_run(big, out, sizeof(out), NULL, 0), 0);
	CBT_EQ_STR(out, "xxxxxxxxxxxxxxx");
	CBT_EQ_LL(cbt_run(sig, NULL, 0, NULL, 0), 128 + 9);
	CBT_EQ_LL(cbt_run(none, NULL, 0, out, sizeof(out)), 127);
}

static void test_spawn_and_wait(void)
{
	char path[512], buf[64] = "";
	const char *argv[] = { "/bin/sh", "-c", "echo background; exit 4", NULL };
	const char *slow[] = { "/bin/sleep", "30", NULL };
	FILE *f;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/test_harness_%ld.out", cbt_tmpdir(), (long)getpid());
	pid = cbt_spawn(argv, path);
	CU_ASSERT_FATAL(pid > 0);
	CBT_EQ_LL(cbt_wait(pid), 4);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_PTR_NOT_NULL(fgets(buf, sizeof(buf), f));
	fclose(f);
	unlink(path);
	CBT_EQ_STR(buf, "background\n");

	pid = cbt_spawn(slow, NULL);
	CU_ASSERT_FATAL(pid > 0);
	cbt_sleep_ms(50);
	CBT_EQ_LL(kill(pid, SIGTERM), 0);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGTERM);
}

static int ok_call(cb_error *err)
{
	(void)err;
	return CB_DONE;
}

static void test_assertions(void)
{
	cb_error err = CB_ERROR_INIT;

	CBT_PASS(ok_call(&err), &err);
	CBT_FAILS_WITH(CB_EINVAL, cb_error_set(&err, CB_EINVAL, "bad %s", "input"), &err);
	CBT_EQ_STR(err.message, "bad input");
	CBT_CONTAINS(cb_strcode(CB_EINVAL), "EINVAL");
}

static const CU_TestInfo tests[] = {
	{ "suite database", test_suite_database },
	{ "create and drop", test_create_and_drop },
	{ "run captures output and status", test_run_captures },
	{ "run edge cases", test_run_edges },
	{ "spawn and wait", test_spawn_and_wait },
	{ "assertions", test_assertions },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("harness", init, clean, tests);
}
