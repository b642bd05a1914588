/*
 * Duplicate-run protection (issue 4): the heartbeat. A chunk longer than the
 * lease stays alive; a cut heartbeat connection stops the job; the job's
 * backend terminated mid-run fails cleanly and a restart completes; a fenced
 * chunk whose heartbeat failed first still counts (test_lock.c for the rest).
 *
 * The ledger example (cbatch-examples) locks as "ledger" whatever its
 * parameters, so every instance below competes for that one lock. Jobs that
 * need something the CLI cannot do are defined through the C API (lock_kit.c);
 * the program re-executes itself as `--probe` to launch one of them from
 * another process.
 *
 * Nothing here sleeps for a fixed time in place of the lease logic: waits
 * poll the database (its clock is the lock's clock) with generous timeouts.
 * Where a job must still be running at some point, the test either holds it
 * there with a lock of its own, or gives it far more work than the wait
 * needs and fails loudly ("proves nothing") if it finished anyway.
 *
 * `PROGRAM WORD` runs only the tests whose name contains WORD; `--list` and
 * `--run NAME` as every test program.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cbatch.h>
#include <cbatch/sys/tx.h>

#include "cbtest.h"
#include "lock_kit.h"
#include "numbers.h"
#include "repo.h" /* cb__owner_id */

static void test_heartbeat_keeps_a_chunk_longer_than_the_lease_alive(void)
{
	PGconn *conn = cbt_connect(db);
	long_task t = { 3.0, -2, "", 0.0 };
	cb_launch_options opts = CB_LAUNCH_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;
	char owner[256];

	reset(conn);
	job = long_task_job(&t);
	CU_ASSERT_PTR_NOT_NULL_FATAL(job);
	opts.lease_seconds = 1;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, &opts, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	if (t.took < 3.0)
		CBT_FAILF("the call took %.2fs, not longer than 3 lease lengths", t.took);
	/* The other process was refused: the lock was held though the lease of 1 s
	 * had long run out, because the heartbeat extended it. */
	CBT_EQ_LL(t.probe_rc, 4);
	CBT_CONTAINS(t.probe_out, "rc=CB_ERUNNING");
	CBT_CONTAINS(t.probe_out, "is held by");
	snprintf(owner, sizeof(owner), "%s", cb__owner_id());
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				"'SKIPPED_HELD' AND owner_id <> $1 AND lock_name = $2",
				"s s", owner, r.lock_name),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit "
				     "WHERE outcome = 'LEASE_EXPIRED_TAKEOVER'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				     "'ACQUIRED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE outcome IN "
				     "('HEARTBEAT_FAILED', 'FENCED')"),
		  0);
	/* The skip came more than a lease after the lock was taken. */
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT (s.event_time - a.event_time > interval '1 s')::int "
			       "FROM batch_lock_audit s, batch_lock_audit a WHERE s.outcome = "
			       "'SKIPPED_HELD' AND a.outcome = 'ACQUIRED'"),
		  1);
	/* One call, one commit: the work was never split to fit the lease. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);

	/* The owner is per process: a child forked after a launch is someone else. */
	{
		int fds[2];
		char child[256] = "";
		pid_t pid;

		CU_ASSERT_FATAL(pipe(fds) == 0);
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			const char *id = cb__owner_id();
			ssize_t w = write(fds[1], id, strlen(id));

			_exit(w > 0 ? 0 : 1);
		}
		close(fds[1]);
		{
			ssize_t n = read(fds[0], child, sizeof(child) - 1);

			child[n > 0 ? n : 0] = '\0';
		}
		close(fds[0]);
		CBT_EQ_LL(cbt_wait(pid), 0);
		if (strcmp(child, owner) == 0)
			CBT_FAILF("a forked child has its parent's owner id %s", owner);
		{
			char pidpart[32];

			snprintf(pidpart, sizeof(pidpart), ":%ld:", (long)pid);
			CBT_CONTAINS(child, pidpart);
		}
	}
	cb_job_free(job);
	PQfinish(conn);
}

/* ---- 5. heartbeat connection cut ---------------------------------------------- */

static void test_cut_heartbeat_connection_stops_the_job(void)
{
	PGconn *conn = cbt_connect(db);
	char role[64], conninfo[CBT_CONNINFO_MAX], dbname[128], sql[1024], log[65536];
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT");
	long long exec, token, mark;
	double t_cut, last_commit;
	pid_t pid;
	int rc;

	reset(conn);
	add_rows(conn, 300000);
	snprintf(role, sizeof(role), "cbt_lock_hb_%ld", (long)getpid());
	cbt_query_str(conn, "SELECT current_database()", dbname, sizeof(dbname));
	snprintf(conninfo, sizeof(conninfo), "host=%s port=%s user=%s dbname=%s",
		 host ? host : "/tmp", port ? port : "5432", role, dbname);
	snprintf(sql, sizeof(sql),
		 "DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN; "
		 "GRANT USAGE ON SCHEMA public TO %s; "
		 "GRANT ALL ON ALL TABLES IN SCHEMA public TO %s; "
		 "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s",
		 role, role, role, role, role);
	cbt_exec(conn, sql);

	pid = ex_spawn_with(NULL, conninfo, "lock-hbcut.log", "run", "ledger", "h:long=1",
			    "-chunk.size:long=10", "--lease", "1", NULL);
	if (!cbt_wait_untilp(conn, 60000,
			     "SELECT (count(*) = 1)::int FROM pg_stat_activity WHERE "
			     "datname = current_database() AND usename = $1 AND application_name = "
			     "'cbatch-heartbeat'",
			     "s", role) ||
	    !cbt_wait_until(conn, 60000, "SELECT (count(*) >= 500)::int FROM ledger"))
		CBT_FAILF("the job did not get going");
	exec = execution_of(conn, pid);
	token = cbt_queryp_ll(
		conn,
		"SELECT fencing_token FROM batch_job_execution WHERE job_execution_id = "
		"$1",
		"lld", exec);
	/* The role may no longer log in, and its heartbeat session is cut: the
	 * heartbeat cannot reconnect, while the job's own session still works. */
	snprintf(sql, sizeof(sql), "ALTER ROLE %s NOLOGIN", role);
	cbt_exec(conn, sql);
	t_cut = q_double(conn, "SELECT extract(epoch FROM clock_timestamp())");
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
			"pg_stat_activity WHERE datname = current_database() AND usename = $1 AND "
			"application_name = 'cbatch-heartbeat') x",
			"s", role),
		1);

	rc = cbt_wait_timeout(pid, 60000);
	CBT_EQ_LL(rc, 1);
	read_log("lock-hbcut.log", log, sizeof(log));
	CBT_CONTAINS(log, "heartbeat failed");
	if (cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed") == 0)
		CBT_FAILF("the job finished all its work; it did not stop");
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
			      "$1 AND status = 'FAILED' AND exit_message LIKE '%heartbeat failed%'",
			      "lld", exec),
		1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				"'HEARTBEAT_FAILED' AND fencing_token = $1",
				"lld", token),
		  1);
	/* It stopped writing about a lease after the cut: the last chunk commit
	 * (heartbeat_time, which only chunk commits move once the heartbeat is
	 * gone) is within the lease (1 s) and the heartbeat's check interval
	 * (1/3 s) of the cut, plus slack for a loaded host. */
	snprintf(sql, sizeof(sql),
		 "SELECT extract(epoch FROM heartbeat_time) FROM "
		 "batch_job_execution WHERE job_execution_id = %lld",
		 exec);
	last_commit = q_double(conn, sql);
	printf("\n    last chunk commit %.3fs after the heartbeat was cut\n", last_commit - t_cut);
	if (last_commit - t_cut > 1.0 + 1.0 / 3 + 2.0)
		CBT_FAILF("the job kept writing %.3fs after its heartbeat was cut (lease 1 s)",
			  last_commit - t_cut);
	/* Another process takes the lock and finishes, exactly once. */
	wait_lock_free(conn, "ledger", 10000);
	mark = audit_mark(conn);
	CBT_EQ_LL(ex("run", "ledger", "h:long=1", NULL), 0);
	CBT_EQ_LL(audit_count(conn, mark, "ACQUIRED") +
			  audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"),
		  1);
	assert_exactly_once(conn);

	snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	cbt_exec(conn, sql);
	PQfinish(conn);
}

/* ---- 8a. the job's backend terminated --------------------------------------- */

/* Once the ledger run @p pid is going, terminate its own session (not its
 * heartbeat's). @return its execution. */
static long long cut_once_going(PGconn *conn, pid_t pid)
{
	long long exec;

	if (!cbt_wait_until(conn, 60000, "SELECT (count(*) >= 500)::int FROM ledger"))
		CBT_FAILF("the job did not get going");
	exec = execution_of(conn, pid);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
				     "pg_stat_activity WHERE datname = current_database() AND "
				     "application_name = 'cbatch') x"),
		  1);
	return exec;
}

/* With outage.budget 0 a lost connection is not waited out: the run fails
 * cleanly and a restart completes. */
static void test_terminated_job_backend_without_a_budget_fails_cleanly(void)
{
	PGconn *conn = cbt_connect(db);
	long long before, exec;
	pid_t pid;
	int rc;

	reset(conn);
	/* Throttled (20 s at least): still running when its backend goes. */
	add_rows(conn, 20000);
	pid = ex_spawn("lock-term.log", "run", "ledger", "t:long=1", "-chunk.size:long=10",
		       "-sleepMs:long=10", "-outage.budget:long=0", "--lease", "1", NULL);
	exec = cut_once_going(conn, pid);
	before = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
	rc = cbt_wait_timeout(pid, 60000);
	/* The database lost with no budget: exit 6, restartable. */
	CBT_EQ_LL(rc, 6);
	wait_no_client_sessions(conn);
	/* Nothing committed was lost; whole chunks, and counts that agree. */
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM ledger") >= before);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
				"lld", exec) %
			  10,
		  0);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
				"lld", exec),
		  cbt_queryp_ll(
			  conn,
			  "SELECT write_count FROM batch_step_execution WHERE job_execution_id = "
			  "$1",
			  "lld", exec));
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"),
		  cbt_query_ll(conn, "SELECT count(*) FROM ledger"));
	if (cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed") == 0)
		CBT_FAILF("the job finished before its backend was terminated");
	/* It reconnected to record the failure (or left its execution to the lease). */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status IN ('FAILED', 'STARTED')",
				"lld", exec),
		  1);
	wait_lock_free(conn, "ledger", 10000);
	CBT_EQ_LL(ex("run", "ledger", "t:long=1", NULL), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE restart_of = $1 AND "
			      "status = 'COMPLETED'",
			      "lld", exec),
		1);
	assert_exactly_once(conn);
	PQfinish(conn);
}

/* The job's own session terminated (an outage of no length): the run
 * connects again, proves its lock and goes on, exit 0, one execution. */
static void test_terminated_job_backend_is_ridden_through(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec;
	pid_t pid;

	reset(conn);
	add_rows(conn, 20000);
	pid = ex_spawn("lock-term-ride.log", "run", "ledger", "t:long=2", "-chunk.size:long=10",
		       "-sleepMs:long=10", "--lease", "2", NULL);
	exec = cut_once_going(conn, pid);
	if (cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed") == 0)
		CBT_FAILF("the job finished before its backend was terminated");
	CBT_EQ_LL(cbt_wait_timeout(pid, 120000), 0);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'COMPLETED'",
				"lld", exec),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE restart_of "
				     "IS NOT NULL"),
		  0);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT write_count FROM batch_step_execution WHERE "
				"job_execution_id = $1",
				"lld", exec),
		  cbt_query_ll(conn, "SELECT count(*) FROM ledger"));
	assert_exactly_once(conn);
	PQfinish(conn);
}

/* ---- 11. a fenced chunk whose heartbeat failed first (issue 8, item 13f) -------- */

/*
 * The lock is taken away while a chunk waits on a row lock: the heartbeat
 * notices first (HEARTBEAT_FAILED), then the chunk reaches its checkpoint and
 * is refused by the fence. Both are on record, and the chunk counts in
 * cbatch_fenced_chunk_total.
 */
static void test_fenced_chunk_counts_even_when_the_heartbeat_failed_first(void)
{
	PGconn *conn = cbt_connect(db), *gate;
	char text[65536];
	long long first, token, exec;
	pid_t pid;

	reset(conn);
	first = add_rows(conn, 20000);
	gate = cbt_connect(db);
	cbt_exec(gate, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(
			  gate,
			  "SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 FOR UPDATE) x",
			  "lld", first + 500),
		  1);
	pid = ex_spawn("lock-fenced-hb.log", "run", "ledger", "m:long=1", "-chunk.size:long=10",
		       "--lease", "1", NULL);
	if (!cbt_wait_until(conn, 60000, "SELECT (count(*) = 500)::int FROM ledger") ||
	    !cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the job did not get to its 51st chunk");
	exec = execution_of(conn, pid);
	token = cbt_queryp_ll(
		conn, "SELECT fencing_token FROM batch_lock WHERE lock_name = 'ledger'", "");
	/* Another owner now, as after a takeover that could not end the session. */
	cbt_exec(conn, "UPDATE batch_lock SET fencing_token = fencing_token + 1, owner_id = "
		       "'elsewhere:1:1:1:1:0' WHERE lock_name = 'ledger'");
	/* Its heartbeat has stopped beating (it beats every 1/3 s). */
	if (!cbt_wait_until(
		    conn, 30000,
		    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
		    "AND application_name = 'cbatch-heartbeat' AND state = 'idle' AND "
		    "clock_timestamp() - state_change > interval '1.5 s'"))
		CBT_FAILF("the heartbeat did not notice the loss");
	cbt_exec(gate, "COMMIT");
	PQfinish(gate);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 1);
	read_log("lock-fenced-hb.log", text, sizeof(text));
	CBT_CONTAINS(text, "fenced off");
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_lock_audit WHERE fencing_token = $1 AND "
			      "job_execution_id = $2 AND outcome = 'HEARTBEAT_FAILED'",
			      "lld lld", token, exec),
		1);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_lock_audit WHERE fencing_token = $1 AND "
			      "job_execution_id = $2 AND outcome = 'FENCED'",
			      "lld lld", token, exec),
		1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 500);
	CBT_EQ_LL(ex("metrics", NULL), 0);
	CBT_CONTAINS(out, "\ncbatch_fenced_chunk_total 1\n");
	CBT_CONTAINS(out, "\ncbatch_heartbeat_failure_total 1\n");
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "heartbeat keeps a chunk longer than the lease alive",
	  test_heartbeat_keeps_a_chunk_longer_than_the_lease_alive },
	{ "cut heartbeat connection stops the job", test_cut_heartbeat_connection_stops_the_job },
	{ "terminated job backend without a budget fails cleanly; restart completes",
	  test_terminated_job_backend_without_a_budget_fails_cleanly },
	{ "terminated job backend is ridden through",
	  test_terminated_job_backend_is_ridden_through },
	{ "fenced chunk counts even when the heartbeat failed first",
	  test_fenced_chunk_counts_even_when_the_heartbeat_failed_first },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	return lock_main(argc, argv, "lock_heartbeat", tests, sizeof(tests) / sizeof(tests[0]));
}
