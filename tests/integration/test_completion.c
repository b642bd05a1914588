/*
 * The bash completion the build writes (`cbatch help --format bash`), run in
 * bash against a real repository: the names and ids that live elsewhere come
 * from the program being completed, with the line's --db (quoted as typed)
 * or CBATCH_DB: job names from a job program's registry, schedule names and
 * execution ids from the database; without a database, nothing and no noise.
 * What the completion offers from the command table alone is unit.docs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX], quoted[CBT_CONNINFO_MAX + 2];
static char out[65536], errout[65536];

static int init(void)
{
	if (cbt_db_create(db, sizeof(db), "completion") != 0)
		return -1;
	/* As the user types it on the line: one word, quoted. */
	snprintf(quoted, sizeof(quoted), "'%s'", db);
	return 0;
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

/* Run @p bin with the NULL-terminated arguments; @return its exit code. */
static int run(const char *bin, const char *const *args)
{
	const char *argv[32];
	size_t n = 0;

	argv[n++] = bin;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define ADMINDB(...) run(cbt_cli_bin(), (const char *const[]){ "--db", db, __VA_ARGS__, NULL })
#define EXDB(...)    run(cbt_examples_bin(), (const char *const[]){ "--db", db, __VA_ARGS__, NULL })

/* The completion of the line @p words (the program first, the word being
 * completed last), sorted, one a line; stderr must stay empty. */
static const char *complete(const char *const *words)
{
	CBT_EQ_LL(cbt_bash_complete(words, out, sizeof(out), errout, sizeof(errout)), 0);
	CBT_EQ_STR(errout, "");
	return out;
}

#define ADMIN_COMPLETE(...) complete((const char *const[]){ cbt_cli_bin(), __VA_ARGS__, NULL })
#define EX_COMPLETE(...)    complete((const char *const[]){ cbt_examples_bin(), __VA_ARGS__, NULL })

/* The repository's execution ids as the completion offers them. */
static void execution_ids(PGconn *conn, char *buf, size_t size)
{
	cbt_query_str(
		conn,
		"SELECT coalesce(string_agg(job_execution_id::text || E'\\n', '' "
		"ORDER BY job_execution_id::text COLLATE \"C\"), '') FROM batch_job_execution",
		buf, size);
}

static void test_job_names_of_the_program(void)
{
	CBT_EQ_LL(ADMINDB("schema", "init"), 0);
	CBT_EQ_STR(EX_COMPLETE("--db", quoted, "run", "led"),
		   "ledger\nledger_export\nledger_partitioned\n");
	CBT_EQ_STR(EX_COMPLETE("check", "se"), "settlement\n");
	CBT_EQ_STR(EX_COMPLETE("--db", quoted, "worker", "--job", "out"), "outbox\n");
	/* A job program's own command, beside the built-in ones. */
	CBT_EQ_STR(EX_COMPLETE("exa"), "example-setup\n");
	/* cbatch registers no job: nothing to offer. */
	CBT_EQ_STR(ADMIN_COMPLETE("--db", quoted, "run", ""), "");
}

static void test_schedule_names_from_the_database(void)
{
	CBT_EQ_LL(ADMINDB("schema", "init"), 0);
	CBT_EQ_LL(EXDB("schedule", "add", "nightly-a", "--cron", "0 2 * * *", "--job", "tick",
		       "at={fire_utc}"),
		  0);
	CBT_EQ_LL(EXDB("schedule", "add", "nightly-b", "--cron", "0 3 * * *", "--job", "tick",
		       "at={fire_utc}"),
		  0);
	CBT_EQ_LL(EXDB("schedule", "add", "weekly", "--cron", "0 4 * * 0", "--job", "tick",
		       "at={fire_utc}"),
		  0);
	CBT_EQ_STR(ADMIN_COMPLETE("--db", quoted, "schedule", "pause", "nig"),
		   "nightly-a\nnightly-b\n");
	CBT_EQ_STR(ADMIN_COMPLETE("schedule", "--db", quoted, "history", ""),
		   "nightly-a\nnightly-b\nweekly\n");
	{
		char eq[CBT_CONNINFO_MAX + 8];

		snprintf(eq, sizeof(eq), "--db=%s", quoted);
		CBT_EQ_STR(EX_COMPLETE(eq, "schedule", "show", "w"), "weekly\n");
	}
	/* add names a new schedule: none of the old ones. */
	CBT_EQ_STR(ADMIN_COMPLETE("--db", quoted, "schedule", "add", ""), "");
}

static void test_execution_ids_from_the_database(void)
{
	PGconn *conn = cbt_connect(db);
	char ids[1024];

	CBT_EQ_LL(ADMINDB("schema", "init"), 0);
	CBT_EQ_LL(EXDB("example-setup", "ledger", "--rows", "20"), 0);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-06-30"), 0);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-07-01"), 0);
	execution_ids(conn, ids, sizeof(ids));
	CBT_PASS(strchr(ids, '\n') != strrchr(ids, '\n') ? 0 : -1, NULL); /* two of them */
	CBT_EQ_STR(ADMIN_COMPLETE("--db", quoted, "show", ""), ids);
	CBT_EQ_STR(EX_COMPLETE("--db", quoted, "restart", ""), ids);
	/* From CBATCH_DB when the line names no database. */
	setenv("CBATCH_DB", db, 1);
	CBT_EQ_STR(ADMIN_COMPLETE("stop", ""), ids);
	unsetenv("CBATCH_DB");
	PQfinish(conn);
}

static void test_no_database_no_noise(void)
{
	char gone[CBT_CONNINFO_MAX + 64];

	snprintf(gone, sizeof(gone), "'host=%s/nowhere port=1 connect_timeout=2'", cbt_tmpdir());
	CBT_EQ_STR(ADMIN_COMPLETE("--db", gone, "show", ""), "");
	CBT_EQ_STR(ADMIN_COMPLETE("--db", gone, "schedule", "pause", ""), "");
	/* The rest still completes. */
	CBT_EQ_STR(ADMIN_COMPLETE("--db", gone, "schedule", "pa"), "pause\n");
}

static const CU_TestInfo tests[] = {
	{ "job names of the program", test_job_names_of_the_program },
	{ "schedule names from the database", test_schedule_names_from_the_database },
	{ "execution ids from the database", test_execution_ids_from_the_database },
	{ "no database, no noise", test_no_database_no_noise },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("completion", init, clean, tests);
}
