/*
 * A scheduler node with runners (`scheduler --runners N`, issue 30.4): the
 * firings run one after another in N long-lived processes that keep their
 * repository connections, with the tick job and real nodes:
 *
 *  - every firing still is one execution with its own exit code and its own
 *    log, run by at most N processes (the executions' owners), and the
 *    session that ran the last one is a server session opened before the
 *    earlier ones (the connection was kept, not opened anew);
 *  - a warm runner's firing opens no server session (no pooler probe);
 *  - a runner killed in a run ends its firing as a killed child does (the
 *    firing says the signal, the execution is buried FAILED) and another
 *    runner runs the next firings;
 *  - a node stopped during a run stops it (STOPPED, restartable), and leaves
 *    no runner behind;
 *  - a repository function replaced while a runner keeps its connection is
 *    found before its next firing runs (the schema is checked again);
 *  - 150 runners start and end with their node;
 *  - a bad --runners is refused (exit 2).
 */
#include "cbtest.h"
#include "sched.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cbt_sched sched;

static int init(void)
{
	return cbt_sched_init(&sched, "runners");
}

static int clean(void)
{
	return cbt_sched_clean(&sched);
}

#define EX(...)         CBT_SCHED_EX(&sched, __VA_ARGS__)
#define SPAWN(log, ...) CBT_SCHED_SPAWN(&sched, (log), __VA_ARGS__)

static void fresh(void)
{
	cbt_sched_clear(&sched);
	cbt_exec(sched.conn, "DELETE FROM batch_job_instance");
	CBT_EQ_LL(EX("example-setup", "tick", "--reset"), 0);
}

static void print_firings(void)
{
	cbt_print_rows(sched.conn, "firings (id, fire time, status, exit, message, execution)",
		       "SELECT f.firing_id, f.fire_time, f.status, f.exit_code, f.message, "
		       "f.job_execution_id FROM batch_schedule_firing f ORDER BY f.firing_id");
	cbt_print_rows(sched.conn, "executions (id, status, owner, exit message)",
		       "SELECT job_execution_id, status, owner_id, exit_message FROM "
		       "batch_job_execution ORDER BY 1");
}

/* The pid of an execution's owner (owner ids begin HOST:PID:). */
#define OWNER_PID "split_part(owner_id, ':', 2)::int"

/* A fresh repository with an every-second schedule @p name of the tick job
 * (@p sleep ms each, overlap @p overlap), and a node with @p runners
 * runners. @return the node's pid. */
static pid_t start_node(const char *name, const char *sleep, const char *overlap,
			const char *runners)
{
	char log[512], arg[64];

	fresh();
	snprintf(arg, sizeof(arg), "-sleepMs:long=%s", sleep);
	CBT_EQ_LL(EX("schedule", "add", name, "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", arg, "--overlap", overlap),
		  0);
	cbt_sched_log_path(&sched, log, sizeof(log), name);
	return SPAWN(log, "scheduler", "--runners", runners, "--lease", "5");
}

static void test_firings_run_in_runners_that_keep_their_connections(void)
{
	pid_t pid = start_node("warm", "0", "allow", "2");

	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(sched.conn, 90000,
			    "SELECT (count(*) >= 8)::int FROM batch_schedule_firing WHERE status = "
			    "'FINISHED'")) {
		CBT_FAILF("8 firings did not finish within 90 s");
		print_firings();
	}
	/* While the node still runs, its runners idle on their kept sessions:
	 * the one that ran the last execution (the lock's owner session) was
	 * opened before the three executions before it started. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_lock l JOIN pg_stat_activity a ON "
			       "a.pid = l.owner_backend_pid AND a.backend_start = "
			       "l.owner_backend_start WHERE l.job_execution_id = (SELECT "
			       "max(job_execution_id) FROM batch_job_execution WHERE end_time IS "
			       "NOT NULL) AND a.backend_start < (SELECT min(start_time) FROM "
			       "(SELECT start_time FROM batch_job_execution WHERE end_time IS NOT "
			       "NULL ORDER BY job_execution_id DESC LIMIT 4) x)"),
		  1);
	/* The heartbeats' sessions are kept too: no more than one per runner. */
	CU_ASSERT(cbt_query_ll(sched.conn, "SELECT count(*) FROM pg_stat_activity WHERE "
					   "datname = current_database() AND application_name = "
					   "'cbatch-heartbeat'") <= 2);
	cbt_sched_stop_between_runs(&sched, pid);
	/* Every firing one execution, completed, exit 0, run by a runner. */
	CBT_EQ_LL(
		cbt_query_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_firing f WHERE f.status = "
			     "'FINISHED' AND (f.exit_code IS DISTINCT FROM 0 OR NOT EXISTS (SELECT "
			     "1 FROM batch_job_execution e WHERE e.job_execution_id = "
			     "f.job_execution_id AND e.status = 'COMPLETED'))"),
		0);
	CU_ASSERT(cbt_query_ll(sched.conn, "SELECT count(DISTINCT " OWNER_PID
					   ") FROM batch_job_execution") <= 2);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_job_execution e JOIN tick_log t USING "
			       "(job_execution_id) WHERE t.pid <> " OWNER_PID),
		  0);
	/* Each its own log: its own result line, and no other execution's. */
	CBT_EQ_LL(
		cbt_query_ll(sched.conn,
			     "SELECT count(*) FROM batch_job_execution e LEFT JOIN "
			     "batch_job_execution_log l USING (job_execution_id) WHERE l.log IS "
			     "NULL OR strpos(l.log, 'job tick execution ' || e.job_execution_id "
			     "|| ' ') = 0 OR (SELECT count(*) FROM regexp_matches(l.log, 'job tick "
			     "execution [0-9]+ ', 'g')) <> 1"),
		0);
	if (CU_get_number_of_failures() > 0)
		print_firings();
}

/* An every-second schedule @p name of the tick job taking @p sleep ms, a node
 * with @p runners runners, and the first execution that runs: the node's pid,
 * the execution and its owner's (the runner's) pid. */
static pid_t start_running(const char *name, const char *sleep, const char *runners,
			   long long *exec, long long *owner)
{
	pid_t pid = start_node(name, sleep, "skip", runners);

	if (pid <= 0)
		return pid;
	if (!cbt_wait_until(sched.conn, 60000,
			    "SELECT count(*)::int FROM batch_job_execution WHERE status = "
			    "'STARTED'")) {
		CBT_FAILF("no execution started within 60 s");
		print_firings();
	}
	*exec = cbt_query_ll(sched.conn, "SELECT max(job_execution_id) FROM batch_job_execution "
					 "WHERE status = 'STARTED'");
	*owner = cbt_queryp_ll(sched.conn,
			       "SELECT " OWNER_PID " FROM batch_job_execution WHERE "
			       "job_execution_id = $1",
			       "lld", *exec);
	return pid;
}

static void test_a_killed_runner_ends_its_firing_and_another_runs_the_next(void)
{
	long long exec = 0, victim = 0;
	pid_t pid = start_running("slow", "2000", "1", &exec, &victim);

	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(victim > 0 && victim != pid);
	CBT_EQ_LL(kill((pid_t)victim, SIGKILL), 0);
	/* Its firing ends as a killed child's, its execution buried. */
	if (!cbt_wait_untilp(sched.conn, 60000,
			     "SELECT count(*)::int FROM batch_schedule_firing f JOIN "
			     "batch_job_execution e USING (job_execution_id) WHERE "
			     "f.job_execution_id = $1 AND f.status = 'FINISHED' AND f.message LIKE "
			     "'killed by signal 9%' AND e.status = 'FAILED'",
			     "lld", exec)) {
		CBT_FAILF("the killed runner's firing (execution %lld) did not end killed", exec);
		print_firings();
	}
	/* Another runner runs the next ones. */
	if (!cbt_wait_untilp(sched.conn, 60000,
			     "SELECT count(*)::int FROM batch_job_execution WHERE "
			     "job_execution_id > $1 AND status = 'COMPLETED' AND " OWNER_PID
			     " <> $2",
			     "lld lld", exec, victim)) {
		CBT_FAILF("no execution after %lld completed in a new runner", exec);
		print_firings();
	}
	cbt_sched_stop_between_runs(&sched, pid);
}

static void test_a_stopped_node_stops_the_run_and_leaves_no_runner(void)
{
	long long exec = 0, runner = 0;
	pid_t pid = start_running("long", "60000", "2", &exec, &runner);
	int rc;

	CU_ASSERT_FATAL(pid > 0);
	CBT_EQ_LL(kill(pid, SIGTERM), 0);
	rc = cbt_wait_timeout(pid, 60000);
	CBT_EQ_LL(rc, 0);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'STOPPED'",
				"lld", exec),
		  1);
	/* The runner was the node's child and is gone with it. */
	CU_ASSERT(runner > 0 && kill((pid_t)runner, 0) != 0 && errno == ESRCH);
	if (CU_get_number_of_failures() > 0)
		print_firings();
	CBT_EQ_LL(EX("schedule", "pause", "long"), 0);
}

/* A runner's kept connection checked the schema in full once; a function
 * replaced since (another build's `schema init`) is still found before the
 * next firing runs, as a new process would find it. */
static void test_a_function_replaced_meanwhile_is_still_found(void)
{
	pid_t pid = start_node("fp", "0", "allow", "1");

	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(sched.conn, 60000,
			    "SELECT (count(*) >= 2)::int FROM batch_job_execution WHERE status = "
			    "'COMPLETED'"))
		CBT_FAILF("2 runs did not complete within 60 s");
	/* Replaced with the same body and another build's mark; its own mark
	 * is kept aside to be put back. */
	cbt_exec(sched.conn, "CREATE TABLE IF NOT EXISTS cbt_mark AS SELECT "
			     "obj_description('batch_now()'::regprocedure, 'pg_proc') AS c; "
			     "DO $$ BEGIN EXECUTE pg_get_functiondef('batch_now()'::regprocedure); "
			     "COMMENT ON FUNCTION batch_now() IS 'cbatch sha256 0000'; END $$");
	if (!cbt_wait_until(sched.conn, 60000,
			    "SELECT count(*)::int FROM batch_schedule_firing WHERE status = "
			    "'FINISHED' AND exit_code = 1 AND message LIKE '%functions are not "
			    "this cbatch''s%'"))
		CBT_FAILF("no firing refused the replaced function within 60 s");
	cbt_exec(sched.conn, "DO $$ BEGIN EXECUTE format('COMMENT ON FUNCTION batch_now() IS %L', "
			     "(SELECT c FROM cbt_mark)); END $$; DROP TABLE cbt_mark");
	cbt_sched_stop_between_runs(&sched, pid);
	if (CU_get_number_of_failures() > 0)
		print_firings();
}

/* More runners than a node has room to list at once: each is started with
 * every other one's socket closed in it, or the node's stop would wait for
 * ever on a runner whose end another runner holds open. */
static void test_many_runners_start_and_end_with_their_node(void)
{
	char log[512];
	pid_t pid;

	fresh();
	cbt_sched_log_path(&sched, log, sizeof(log), "many");
	pid = SPAWN(log, "scheduler", "--runners", "150", "--exit-after", "2");
	CU_ASSERT_FATAL(pid > 0);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
}

static void test_a_bad_runners_count_is_refused(void)
{
	CBT_EQ_LL(EX("scheduler", "--runners", "0"), 2);
	CBT_CONTAINS(sched.errout, "--runners '0' must be 1 to 1000");
	CBT_EQ_LL(EX("scheduler", "--runners", "many"), 2);
	CBT_CONTAINS(sched.errout, "--runners 'many' must be 1 to 1000");
}

/* A warm runner's firing opens no server session: its connections are kept
 * and found exclusive once (no pooler in between), after which a firing
 * reads its session again instead of opening a probe connection, a new
 * server backend per firing before. Sessions are counted by the server
 * (pg_stat_database.sessions of this test's database). */
static void test_a_warm_runner_opens_no_server_session(void)
{
	pid_t pid = start_node("nosession", "0", "skip", "1");
	const char *finished = "SELECT count(*) FROM batch_schedule_firing WHERE status = "
			       "'FINISHED' AND exit_code = 0";
	const char *sessions = "SELECT sessions FROM pg_stat_database WHERE datname = "
			       "current_database()";
	long long done, s0, s1;

	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(sched.conn, 60000,
			    "SELECT (count(*) >= 3)::int FROM batch_schedule_firing WHERE status "
			    "= 'FINISHED' AND exit_code = 0")) {
		CBT_FAILF("3 firings did not finish within 60 s");
		print_firings();
	}
	done = cbt_query_ll(sched.conn, finished);
	s0 = cbt_query_ll(sched.conn, sessions);
	if (!cbt_wait_untilp(sched.conn, 60000,
			     "SELECT (count(*) >= $1)::int FROM batch_schedule_firing WHERE "
			     "status = 'FINISHED' AND exit_code = 0",
			     "lld", done + 4)) {
		CBT_FAILF("4 more firings did not finish within 60 s");
		print_firings();
	}
	s1 = cbt_query_ll(sched.conn, sessions);
	/* At most one: a session started before s0 may be counted late. */
	if (s1 - s0 > 1)
		CBT_FAILF("%lld server sessions opened during 4 warm firings", s1 - s0);
	cbt_sched_stop_between_runs(&sched, pid);
}

static const CU_TestInfo tests[] = {
	{ "firings_run_in_runners_that_keep_their_connections",
	  test_firings_run_in_runners_that_keep_their_connections },
	{ "a_warm_runner_opens_no_server_session", test_a_warm_runner_opens_no_server_session },
	{ "a_killed_runner_ends_its_firing_and_another_runs_the_next",
	  test_a_killed_runner_ends_its_firing_and_another_runs_the_next },
	{ "a_stopped_node_stops_the_run_and_leaves_no_runner",
	  test_a_stopped_node_stops_the_run_and_leaves_no_runner },
	{ "a_function_replaced_meanwhile_is_still_found",
	  test_a_function_replaced_meanwhile_is_still_found },
	{ "many_runners_start_and_end_with_their_node",
	  test_many_runners_start_and_end_with_their_node },
	{ "a_bad_runners_count_is_refused", test_a_bad_runners_count_is_refused },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("scheduler_runners", init, clean, tests);
}
