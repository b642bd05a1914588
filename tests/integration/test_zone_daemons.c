/*
 * A node's zone is checked before it acts: a scheduler, worker or serve
 * whose CBATCH_TZ its children would refuse exits 2 naming it before it
 * claims a firing or a partition, or listens (an instant a bad node claimed
 * would be lost to the healthy ones: recorded FINISHED exit 2, no run). The
 * names of the server's tz data that are no zone of their own (localtime,
 * posixrules, Factory) are refused wherever a zone is taken, by the one rule
 * of repository/zone.c: a schedule's --tz, `schedule next --tz`, CBATCH_TZ.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[65536], errout[65536];

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "zone_daemons", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

static int ex(const char *const *args)
{
	return cbt_examples_run(NULL, db, args, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) ex((const char *const[]){ __VA_ARGS__, NULL })

/* An every-second schedule of the tick job, nothing fired yet. */
static void every_second(void)
{
	CBT_EQ_LL(EX("example-setup", "tick", "--reset"), 0);
	cbt_exec(conn, "DELETE FROM batch_schedule_firing; DELETE FROM batch_schedule");
	CBT_EQ_LL(EX("schedule", "add", "every", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}"),
		  0);
}

/* A POSIX string in CBATCH_TZ: the scheduler exits 2 naming it, and no
 * instant was claimed (without the check it fired every second, each
 * firing FINISHED with its child's exit 2 and no execution). */
static void test_scheduler_with_a_bad_zone_claims_nothing(void)
{
	int rc;

	every_second();
	setenv("CBATCH_TZ", "UTC+3", 1);
	/* --exit-after only bounds a node that wrongly started. */
	rc = EX("scheduler", "--exit-after", "4");
	unsetenv("CBATCH_TZ");
	CBT_EQ_LL(rc, 2);
	CBT_CONTAINS(errout, "CBATCH_TZ");
	CBT_CONTAINS(errout, "'UTC+3'");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
}

/* serve with a bad CBATCH_TZ exits 2 before it listens (it would answer 202
 * to launches whose child exits 2). */
static void test_serve_with_a_bad_zone_never_listens(void)
{
	char log[PATH_MAX], *text;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/zone_daemons-serve-%ld.log", cbt_tmpdir(), (long)getpid());
	setenv("CBATCH_TZ", "UTC+3", 1);
	pid = cbt_examples_spawn(NULL, db, log,
				 (const char *const[]){ "serve", "--listen", "127.0.0.1:0", NULL });
	unsetenv("CBATCH_TZ");
	CU_ASSERT_FATAL(pid > 0);
	/* A serve that started would run until killed: the timeout fails it. */
	CBT_EQ_LL(cbt_wait_timeout(pid, 20000), 2);
	text = cbt_slurp(log, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CBT_CONTAINS(text, "CBATCH_TZ");
	CBT_CONTAINS(text, "'UTC+3'");
	CU_ASSERT(strstr(text, "listening on") == NULL);
	free(text);
}

/* The worker too (it checked the zone already: kept so). */
static void test_worker_with_a_bad_zone_exits_2(void)
{
	setenv("CBATCH_TZ", "Mars/Base", 1);
	CBT_EQ_LL(EX("worker", "--exit-when-idle", "1"), 2);
	unsetenv("CBATCH_TZ");
	CBT_CONTAINS(errout, "'Mars/Base'");
}

/* localtime, posixrules and Factory: refused by schedule add, schedule next
 * and CBATCH_TZ, in any case, naming the zone; nothing written. */
static void test_names_that_are_no_zone_are_refused(void)
{
	static const char *const names[] = { "localtime", "posixrules", "Factory", "LOCALTIME" };
	char want[64];

	every_second();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(want, sizeof(want), "'%s' is not accepted", names[i]);
		CBT_EQ_LL(EX("schedule", "add", "bad", "--cron", "0 3 * * *", "--tz", names[i],
			     "--job", "tick", "at={fire_utc}"),
			  2);
		CBT_CONTAINS(errout, want);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule WHERE "
					     "schedule_name = 'bad'"),
			  0);
		CBT_EQ_LL(EX("schedule", "next", "--cron", "0 3 * * *", "--tz", names[i]), 2);
		CBT_CONTAINS(errout, want);
		setenv("CBATCH_TZ", names[i], 1);
		CBT_EQ_LL(EX("executions"), 2);
		unsetenv("CBATCH_TZ");
		CBT_CONTAINS(errout, "CBATCH_TZ");
		CBT_CONTAINS(errout, want);
	}
	/* A zone name of the same server still works. */
	CBT_EQ_LL(EX("schedule", "next", "--cron", "0 3 * * *", "--tz", "America/New_York"), 0);
}

static const CU_TestInfo tests[] = {
	{ "scheduler with a bad zone claims nothing",
	  test_scheduler_with_a_bad_zone_claims_nothing },
	{ "serve with a bad zone never listens", test_serve_with_a_bad_zone_never_listens },
	{ "worker with a bad zone exits 2", test_worker_with_a_bad_zone_exits_2 },
	{ "names that are no zone are refused", test_names_that_are_no_zone_are_refused },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("zone_daemons", init, clean, tests);
}
