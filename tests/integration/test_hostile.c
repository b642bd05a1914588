/*
 * Hostile input at the edges: parameter values with quotes, semicolons and
 * SQL travel as parameters and are stored literally; names and values that
 * cannot be stored (bad UTF-8, too long, bad characters) are refused before
 * anything is written; hostile identifiers reach SQL quoted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[16384], errout[16384];

static int init(void)
{
	if (cbt_db_create(db, sizeof(db), "hostile") < 0)
		return -1;
	conn = PQconnectdb(db);
	return PQstatus(conn) == CONNECTION_OK ? 0 : -1;
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

static int cli(const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[8] = { cbt_examples_bin(), "--db", db, a1, a2, a3, a4, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

static void test_sql_in_parameter_values_is_stored_literally(void)
{
	static const char evil[] = "x'); DROP TABLE account; --";
	char arg[128];

	CBT_EQ_LL(cli("schema", "init", NULL, NULL), 0);
	CBT_EQ_LL(cli("example-setup", "ledger", "--rows", "10"), 0);
	snprintf(arg, sizeof(arg), "tag=%s", evil);
	CBT_EQ_LL(cli("run", "ledger", arg, NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account"), 10);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution_params WHERE "
				"parameter_name = 'tag' AND parameter_value = $1",
				"s", evil),
		  1);
	/* The value is part of the instance's identity: the same run is complete. */
	CBT_EQ_LL(cli("run", "ledger", arg, NULL), 3);
}

static void test_unstorable_parameters_are_refused_before_anything_is_written(void)
{
	static const char *const bad[] = {
		"tag=\xff\xfe",           /* not UTF-8 */
		"ta g=1",                 /* bad name */
		"x;y=1",                  /* bad name */
		"n:long=1; DROP TABLE x", /* not a long */
		"d:date=2026-02-30",      /* not a date */
		"t:bogus=1",              /* unknown type */
	};
	char big[3000];
	long long before;

	/* A repository of its own making: it runs alone under ctest (--run). */
	CBT_EQ_LL(cli("schema", "init", NULL, NULL), 0);
	CBT_EQ_LL(cli("example-setup", "ledger", "--rows", "10"), 0);
	before = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CBT_EQ_LL(cli("run", "ledger", bad[i], NULL), 2);
		CBT_CONTAINS(errout, "cbatch-examples: ");
	}
	memset(big, 'v', sizeof(big) - 1);
	memcpy(big, "long=", 5);
	big[sizeof(big) - 1] = '\0';
	CBT_EQ_LL(cli("run", "ledger", big, NULL), 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), before);
}

static void test_hostile_lock_and_job_names_are_refused_or_quoted(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = NULL;
	char *name = NULL;
	cb_params *p = NULL;

	CBT_FAILS_WITH(CB_EINVAL, cb_job_new(&job, "job'; DROP TABLE x; --", &err), &err);
	cb_error_clear(&err);
	CBT_PASS_FATAL(cb_job_new(&job, "quoted", &err), &err);
	CBT_PASS(cb_params_new(&p, &err), &err);
	CBT_PASS(cb_params_parse_arg(p, "who=o'neil; \"x\"", &err), &err);
	CBT_PASS(cb_job_lock_name(&name, job, p, &err), &err);
	/* The lock name carries the value as data; it reaches SQL as a parameter. */
	CBT_EQ_STR(name, "quoted:who=o'neil; \"x\"");
	free(name);
	cb_params_free(p);
	cb_job_free(job);
}

static const CU_TestInfo tests[] = {
	{ "SQL in parameter values is stored literally",
	  test_sql_in_parameter_values_is_stored_literally },
	{ "unstorable parameters are refused before anything is written",
	  test_unstorable_parameters_are_refused_before_anything_is_written },
	{ "hostile lock and job names are refused or quoted",
	  test_hostile_lock_and_job_names_are_refused_or_quoted },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("hostile", init, clean, tests);
}
