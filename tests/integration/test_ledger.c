/*
 * The ledger job end to end through the cbatch-examples CLI, as real
 * processes against a real PostgreSQL: completion, exit codes, failure and
 * restart, SIGKILL in the middle, stop, and racing launches.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cbtest.h"
#include "ledger_kit.h"

static char db[CBT_CONNINFO_MAX];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "ledger");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static char out[65536], errout[65536];

/* Run cbatch-examples with --db and the arguments up to the first NULL. */
static int cli6(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
		const char *a6)
{
	const char *argv[10] = { cbt_examples_bin(), "--db", db, a1, a2, a3, a4, a5, a6, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

static int cli(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5)
{
	return cli6(a1, a2, a3, a4, a5, NULL);
}

/* Fresh repository and ledger tables with @p rows accounts. */
static void reset(PGconn *conn, long long rows, long long negative_at)
{
	char n[24], neg[24];

	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(cli("schema", "init", NULL, NULL, NULL), 0);
	snprintf(n, sizeof(n), "%lld", rows);
	snprintf(neg, sizeof(neg), "%lld", negative_at);
	CBT_EQ_LL(cli6("example-setup", "ledger", "--rows", n, negative_at ? "--negative-at" : NULL,
		       neg),
		  0);
	if (negative_at)
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE amount < 0"), 1);
}

static long long last_execution(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

static void test_run_completes_every_row_once(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, 2500, 0);
	CBT_EQ_LL(cli("run", "ledger", NULL, NULL, NULL), 0);
	ledger_assert_exactly_once(conn, 2500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution"), 2500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT write_count FROM batch_step_execution"), 2500);
	/* Chunk 1000: three chunks, no rollback. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT rollback_count FROM batch_step_execution"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution "
				     "WHERE status = 'COMPLETED' AND exit_code = 'COMPLETED'"),
		  1);
	/* Every ledger row names the execution that wrote it. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = "
				     "(SELECT job_execution_id FROM batch_job_execution)"),
		  2500);
	CBT_CONTAINS(out, "COMPLETED");
	PQfinish(conn);
}

static void test_completed_instance_is_refused_and_next_makes_new_ones(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, 300, 0);
	CBT_EQ_LL(cli("run", "ledger", "day:date=2026-06-30", NULL, NULL), 0);
	CBT_EQ_LL(cli("run", "ledger", "day:date=2026-06-30", NULL, NULL), 3);
	CBT_CONTAINS(errout, "already complete");
	/* A non-identifying parameter does not make a new instance. */
	CBT_EQ_LL(cli("run", "ledger", "day:date=2026-06-30", "-note=again", NULL), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);

	CBT_EQ_LL(cli("run", "ledger", "--next", NULL, NULL), 0);
	CBT_EQ_LL(cli("run", "ledger", "--next", NULL, NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT max(parameter_value::bigint) FROM "
				     "batch_job_execution_params WHERE parameter_name = 'run.id' "
				     "AND parameter_type = 'long' AND identifying"),
		  2);
	/* The rerun found nothing left to do, and doubled nothing. */
	ledger_assert_exactly_once(conn, 300);
	PQfinish(conn);
}

static void test_failure_names_the_account_and_restart_completes_exactly_once(void)
{
	PGconn *conn = cbt_connect(db);
	char id[24];
	long long failed;

	reset(conn, 2500, 1550);
	CBT_EQ_LL(cli("run", "ledger", "-chunk.size:long=100", NULL, NULL), 1);
	CBT_CONTAINS(errout, "account 1550");
	CBT_CONTAINS(errout, "negative amount");
	failed = last_execution(conn);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'FAILED' AND exit_message LIKE '%account 1550%'"),
		  1);
	/* Chunks 1..15 (ids 1..1500) committed whole; chunk 16 (1501..1600) rolled back. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 1500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT max(account_id) FROM ledger"), 1500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"), 1500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT rollback_count FROM batch_step_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT (serialized_context->'reader'->'last_key'->>0)::bigint "
			       "FROM batch_step_execution_context"),
		  1500);

	/* The operator fixes the bad row and restarts the failed execution. */
	cbt_exec(conn, "UPDATE account SET amount = 15.50 WHERE id = 1550");
	snprintf(id, sizeof(id), "%lld", failed);
	CBT_EQ_LL(cli("restart", id, NULL, NULL, NULL), 0);
	ledger_assert_exactly_once(conn, 2500);
	/* The restart read only what was not committed: 1000 rows, not 2500. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  1000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE "
				"restart_of = $1 AND status = 'COMPLETED'",
				"lld", failed),
		  1);
	/* Restarting it again is refused: the instance is complete now. */
	CBT_EQ_LL(cli("restart", id, NULL, NULL, NULL), 2);
	PQfinish(conn);
}

static void test_abandoned_instance_cannot_run_again(void)
{
	PGconn *conn = cbt_connect(db);
	char id[24];

	reset(conn, 500, 10);
	CBT_EQ_LL(cli("run", "ledger", NULL, NULL, NULL), 1);
	snprintf(id, sizeof(id), "%lld", last_execution(conn));
	CBT_EQ_LL(cli("abandon", id, NULL, NULL, NULL), 0);
	CBT_EQ_LL(cli("run", "ledger", NULL, NULL, NULL), 3);
	CBT_CONTAINS(errout, "abandoned");
	CBT_EQ_LL(cli("restart", id, NULL, NULL, NULL), 3);
	PQfinish(conn);
}

/* Start the ledger job in the background with a small chunk, so it runs a while. */
static pid_t spawn_run(const char *chunk, const char *logname)
{
	char path[512];
	const char *argv[] = { cbt_examples_bin(), "--db", db,  "run", "ledger", chunk,
			       "--lease",          "2",    NULL };

	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), logname);
	return cbt_spawn(argv, path);
}

static void test_sigkill_mid_run_keeps_whole_chunks_only(void)
{
	PGconn *conn = cbt_connect(db);
	long long written, ctx_key;
	pid_t pid;

	reset(conn, 100000, 0);
	pid = spawn_run("-chunk.size:long=100", "sigkill.log");
	ledger_wait_for_rows(conn, 3000);
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	/* A pipeline sent whole before the kill may still commit server-side:
	 * look only once the dead client's sessions are gone. */
	cbt_wait_sessions_gone(conn);

	written = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
	if (written >= 100000)
		CBT_FAILF("the job finished before the kill; the test proves nothing");
	/* Whole chunks only, and the data, the source status and the checkpoint agree. */
	CBT_EQ_LL(written % 100, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT max(account_id) FROM ledger"), written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"), written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l "
				     "ON l.account_id = a.id WHERE a.processed"),
		  written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT write_count FROM batch_step_execution"), written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"),
		  written / 100);
	ctx_key =
		cbt_query_ll(conn, "SELECT (serialized_context->'reader'->'last_key'->>0)::bigint "
				   "FROM batch_step_execution_context");
	CBT_EQ_LL(ctx_key, written);
	/* (A launch now would take over at once: the dead owner ran on this host,
	 * see integration.lock. This one waits for the lease.) After the lease,
	 * the same launch takes over, buries the dead execution and restarts it
	 * from its last committed chunk. No SQL by hand. */
	cbt_sleep_ms(2500);
	/* Before anyone takes over, the listing already tells it is dead. */
	CBT_EQ_LL(cli("executions", "ledger", NULL, NULL, NULL), 0);
	CBT_CONTAINS(out, "STARTED (owner lost)");
	CBT_EQ_LL(cli("run", "ledger", NULL, NULL, NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_job_execution WHERE status = "
			       "'FAILED' AND exit_message LIKE 'owner % lost: lease expired at %'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE status = "
				     "'FAILED' AND exit_message = 'owner lost'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit "
				     "WHERE outcome = 'LEASE_EXPIRED_TAKEOVER'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution "
				     "WHERE restart_of IS NOT NULL AND status = 'COMPLETED'"),
		  1);
	/* The restart read only what the dead owner had not committed. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  100000 - written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT max(fencing_token) FROM batch_lock"), 2);
	ledger_assert_exactly_once(conn, 100000);
	PQfinish(conn);
}

/*
 * A stop and SIGTERM must land mid-run: THROTTLED_ROWS at 20 ms a chunk of 50
 * take 8 s at least, against about 20 chunks before the stop (a restart by id
 * keeps the throttle; a new run does not).
 */
#define THROTTLED_ROWS 20000

static pid_t spawn_run_throttled(const char *chunk, const char *logname)
{
	char path[512];
	const char *argv[] = { cbt_examples_bin(), "--db",    db,  "run", "ledger", chunk,
			       "-sleepMs:long=20", "--lease", "2", NULL };

	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), logname);
	return cbt_spawn(argv, path);
}

static void test_stop_from_another_process_then_restart(void)
{
	PGconn *conn = cbt_connect(db);
	char id[24];
	pid_t pid;

	reset(conn, THROTTLED_ROWS, 0);
	pid = spawn_run_throttled("-chunk.size:long=50", "stop.log");
	ledger_wait_for_rows(conn, 1000);
	snprintf(id, sizeof(id), "%lld", last_execution(conn));
	CBT_EQ_LL(cli("stop", id, NULL, NULL, NULL), 0);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 5);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'STOPPED'"),
		  1);
	if (cbt_query_ll(conn, "SELECT count(*) FROM ledger") >= THROTTLED_ROWS)
		CBT_FAILF("the job finished before the stop; the test proves nothing");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger") % 50, 0);
	CBT_EQ_LL(cli("restart", id, NULL, NULL, NULL), 0);
	ledger_assert_exactly_once(conn, THROTTLED_ROWS);
	PQfinish(conn);
}

static void test_sigterm_stops_after_the_current_chunk(void)
{
	PGconn *conn = cbt_connect(db);
	pid_t pid;

	reset(conn, THROTTLED_ROWS, 0);
	pid = spawn_run_throttled("-chunk.size:long=50", "sigterm.log");
	ledger_wait_for_rows(conn, 1000);
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 5);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'STOPPED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger") % 50, 0);
	CBT_EQ_LL(cli("run", "ledger", NULL, NULL, NULL), 0);
	ledger_assert_exactly_once(conn, THROTTLED_ROWS);
	PQfinish(conn);
}

#define RACERS 6

static void test_concurrent_launches_make_one_instance_and_one_execution(void)
{
	PGconn *conn = cbt_connect(db);
	int completed = 0, skipped = 0, other = 0;

	reset(conn, 5000, 0);
	for (int round = 0; round < 3; round++) {
		char day[32];
		pid_t pids[RACERS];

		/* Fresh work for each round, so each winner runs a while. */
		CBT_EQ_LL(cli("example-setup", "ledger", "--rows", "5000", NULL), 0);

		snprintf(day, sizeof(day), "day:date=2026-07-0%d", round + 1);
		for (int i = 0; i < RACERS; i++) {
			const char *argv[] = {
				cbt_examples_bin(),     "--db", db, "run", "ledger", day,
				"-chunk.size:long=100", NULL
			};

			pids[i] = cbt_spawn(argv, NULL);
		}
		for (int i = 0; i < RACERS; i++) {
			int rc = cbt_wait_timeout(pids[i], 120000);

			if (rc == 0)
				completed++;
			else if (rc == 4 || rc == 3)
				skipped++;
			else
				other++;
		}
	}
	/* One winner per round; the others were refused (running, or already complete). */
	CBT_EQ_LL(completed, 3);
	CBT_EQ_LL(skipped, 3 * (RACERS - 1));
	CBT_EQ_LL(other, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 3);
	/* Every skip is on record as a skip, not a failure. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				     "'SKIPPED_HELD'") +
			  cbt_query_ll(conn,
				       "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				       "'ACQUIRED'"),
		  3 * RACERS);
	ledger_assert_exactly_once(conn, 20000);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "run completes every row once", test_run_completes_every_row_once },
	{ "completed instance is refused; --next makes new ones",
	  test_completed_instance_is_refused_and_next_makes_new_ones },
	{ "failure names the account; restart completes exactly once",
	  test_failure_names_the_account_and_restart_completes_exactly_once },
	{ "abandoned instance cannot run again", test_abandoned_instance_cannot_run_again },
	{ "SIGKILL mid-run keeps whole chunks only", test_sigkill_mid_run_keeps_whole_chunks_only },
	{ "stop from another process, then restart", test_stop_from_another_process_then_restart },
	{ "SIGTERM stops after the current chunk", test_sigterm_stops_after_the_current_chunk },
	{ "concurrent launches make one instance and one execution",
	  test_concurrent_launches_make_one_instance_and_one_execution },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("ledger", init, clean, tests);
}
