/*
 * Status transitions under races and dead owners (issue 8, items 5-8, 13g),
 * with real processes against a real PostgreSQL:
 * - a stop that arrives while an execution is STARTING (between the launch's
 *   commit and its start) ends it STOPPED before any step, and a stop between
 *   two steps keeps the next one from starting;
 * - an ABANDONED execution anywhere in an instance forbids its restart, and
 *   only the newest execution of an instance can be abandoned;
 * - a dead owner's execution (SIGKILLed, or SIGSTOPped past its lease) can be
 *   stopped or abandoned from the CLI; a live owner's cannot be abandoned;
 * - a dead execution ends at its last sign of life, not at its burial;
 * - `--next` always makes a new instance.
 *
 * The window between launch and start is held open for real: a statement
 * trigger on batch_job_execution (in this test database only) waits for an
 * advisory lock that the test holds, so the launcher's first UPDATE of its
 * execution (the start) waits while the test requests the stop on the
 * session that holds the lock (a session never waits for its own locks).
 *
 * `integration_test_transitions WORD` runs only the tests whose name contains WORD.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cbatch.h>

#include "cbtest.h"
#include "repo.h" /* cb__repo_launch, cb__repo_job_started */

static char db[CBT_CONNINFO_MAX];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "transitions");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

/* ---- helpers --------------------------------------------------------------- */

static char out[65536], errout[65536];

#define MAXARGS 40

static void build_argv(const char **argv, const char *first, va_list ap)
{
	size_t n = 0;
	const char *a;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	for (a = first; a && n < MAXARGS - 1; a = va_arg(ap, const char *))
		argv[n++] = a;
	argv[n] = NULL;
}

/* Run cbatch-examples --db db ARGS... (NULL-terminated); output in out/errout. */
static int ex(const char *first, ...)
{
	const char *argv[MAXARGS];
	va_list ap;

	va_start(ap, first);
	build_argv(argv, first, ap);
	va_end(ap);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* As ex, in the background; stdout and stderr go to tmpdir/@p log. */
static pid_t ex_spawn(const char *log, const char *first, ...)
{
	const char *argv[MAXARGS];
	char path[1024];
	va_list ap;

	va_start(ap, first);
	build_argv(argv, first, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), log);
	return cbt_spawn(argv, path);
}

/* Fresh repository and a ledger example with @p rows accounts. */
static void reset(PGconn *conn, const char *rows)
{
	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", rows, NULL), 0);
}

static long long newest_execution(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT coalesce(max(job_execution_id), 0) FROM "
				  "batch_job_execution");
}

static int still_running(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == 0;
}

/* Every account is in the ledger exactly once, and processed. */
static void assert_exactly_once(PGconn *conn)
{
	long long accounts = cbt_query_ll(conn, "SELECT count(*) FROM account");

	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), accounts);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT account_id) FROM ledger"), accounts);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
}

/*
 * Start `run ledger PARAM` with a small chunk and lease @p lease, wait until
 * it committed some rows and return its pid; its execution id in @p exec.
 * Throttled: LEDGER_ROWS at 20 ms a chunk of 10 take 10 s at least, so the
 * job is still running whatever the test does to it after 200 rows (a
 * restart by id keeps the throttle).
 */
#define LEDGER_ROWS "5000"

static pid_t start_ledger(PGconn *conn, const char *param, const char *lease, const char *log,
			  long long *exec)
{
	pid_t pid = ex_spawn(log, "run", "ledger", param, "-chunk.size:long=10", "-sleepMs:long=20",
			     "--lease", lease, NULL);

	*exec = 0;
	if (!cbt_wait_untilp(
		    conn, 60000,
		    "SELECT (count(*) >= 200)::int FROM ledger l JOIN batch_job_execution e "
		    "USING (job_execution_id) WHERE e.owner_id LIKE '%:' || $1::text || ':%'",
		    "ld", (long)pid) ||
	    !still_running(pid)) {
		CBT_FAILF("the job never wrote 200 rows while running; the test proves nothing");
		kill(pid, SIGKILL);
		cbt_wait(pid);
		return -1;
	}
	*exec = cbt_queryp_ll(
		conn,
		"SELECT max(job_execution_id) FROM batch_job_execution WHERE owner_id LIKE "
		"'%:' || $1::text || ':%'",
		"ld", (long)pid);
	return pid;
}

/* Wait (database time) until the execution's lock lease has expired. */
static void wait_lease_expired(PGconn *conn, long long exec)
{
	if (!cbt_wait_untilp(
		    conn, 20000,
		    "SELECT (count(*) = 0)::int FROM batch_lock l JOIN batch_job_execution e "
		    "ON l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token "
		    "WHERE e.job_execution_id = $1 AND l.locked_until >= clock_timestamp()",
		    "lld", exec))
		CBT_FAILF("execution %lld: its lease did not expire within 20 s", exec);
}

/* The dead execution ended at its last sign of life, well before it was buried. */
static void assert_ended_at_last_sign(PGconn *conn, long long exec)
{
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND end_time <= heartbeat_time + interval '200 ms' "
			  "AND end_time < last_updated - interval '1 s'",
			  "lld", exec),
		  1);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_step_execution s JOIN batch_job_execution e "
			  "USING (job_execution_id) WHERE e.job_execution_id = $1 "
			  "AND s.end_time > e.heartbeat_time + interval '200 ms'",
			  "lld", exec),
		  0);
}

/* ---- item 6: a stop while STARTING ---------------------------------------- */

/* The repository transition itself: STARTING -> STARTED only from STARTING. */
static void test_started_transition_is_guarded(void)
{
	PGconn *conn = cbt_connect(db);
	cb_error err = CB_ERROR_INIT;
	char key[CB_JOB_KEY_LEN + 1];
	cb_params *params = NULL;
	cb_status st;
	cb__launch l;

	reset(conn, "0");
	CBT_PASS_FATAL(cb_params_new(&params, &err), &err);
	CBT_PASS(cb_params_add_long(params, "n", 1, 1, &err), &err);
	CBT_PASS(cb_params_job_key(key, params, &err), &err);
	CBT_PASS_FATAL(cb__repo_launch(&l, conn, "guarded", key, params, 1, "test:1:x", 0, NULL, 0,
				       NULL, &err),
		       &err);
	CBT_PASS(cb_repo_stop(&st, conn, l.job_execution_id, &err), &err);
	CBT_EQ_STR(cb_status_name(st), "STOPPING");
	/* The launcher's start now finds the stop and does not overwrite it. */
	CBT_PASS(cb__repo_job_started(&st, conn, l.job_execution_id, &err), &err);
	CBT_EQ_STR(cb_status_name(st), "STOPPING");
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STOPPING' AND start_time IS NULL",
			  "lld", l.job_execution_id),
		  1);
	CBT_PASS(cb__repo_job_finish(conn, l.job_execution_id, CB_STATUS_STOPPED, "STOPPED",
				     "stopped before it started", NULL, &err),
		 &err);
	/* An execution ended by another process does not start either. */
	CBT_PASS_FATAL(cb__repo_launch(&l, conn, "guarded", key, params, 1, "test:1:x", 0, NULL, 0,
				       NULL, &err),
		       &err);
	cbt_queryp_ll(
		conn,
		"UPDATE batch_job_execution SET status = 'FAILED' WHERE job_execution_id = $1 "
		"RETURNING 1",
		"lld", l.job_execution_id);
	CBT_FAILS_WITH(CB_EFENCED, cb__repo_job_started(&st, conn, l.job_execution_id, &err), &err);
	CBT_CONTAINS(err.message, "FAILED");
	cb_error_clear(&err);
	/* The normal path. */
	cbt_queryp_ll(
		conn,
		"UPDATE batch_job_execution SET status = 'STARTING' WHERE job_execution_id = $1 "
		"RETURNING 1",
		"lld", l.job_execution_id);
	CBT_PASS(cb__repo_job_started(&st, conn, l.job_execution_id, &err), &err);
	CBT_EQ_STR(cb_status_name(st), "STARTED");
	CBT_FAILS_WITH(CB_ENOTFOUND, cb__repo_job_started(&st, conn, 987654321, &err), &err);
	cb_params_free(params);
	PQfinish(conn);
}

/* End to end: the real launcher, held between its launch and its start. */
static void test_stop_while_starting_ends_stopped_without_a_step(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec;
	pid_t pid;
	cb_error err = CB_ERROR_INIT;
	cb_status st;

	reset(conn, "100");
	cbt_exec(conn, "CREATE FUNCTION cbt_hold_start() RETURNS trigger LANGUAGE plpgsql AS $$ "
		       "BEGIN PERFORM pg_advisory_lock_shared(8806); "
		       "PERFORM pg_advisory_unlock_shared(8806); RETURN NULL; END $$; "
		       "CREATE TRIGGER cbt_hold_start BEFORE UPDATE ON batch_job_execution "
		       "FOR EACH STATEMENT EXECUTE FUNCTION cbt_hold_start(); "
		       "SELECT pg_advisory_lock(8806);");
	pid = ex_spawn("transitions-starting.log", "run", "ledger", "k:long=1", NULL);
	/* Its execution is committed STARTING and its start waits on our lock. */
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (SELECT count(*) FROM batch_job_execution WHERE status = "
			    "'STARTING') * (SELECT count(*) FROM pg_locks WHERE locktype = "
			    "'advisory' AND NOT granted)")) {
		CBT_FAILF("the launcher never reached its start");
		kill(pid, SIGKILL);
		cbt_wait(pid);
		PQfinish(conn);
		return;
	}
	exec = newest_execution(conn);
	CBT_PASS(cb_repo_stop(&st, conn, exec, &err), &err);
	CBT_EQ_STR(cb_status_name(st), "STOPPING");
	cbt_exec(conn, "SELECT pg_advisory_unlock(8806)");
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 5);
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			"AND status = 'STOPPED' AND exit_message LIKE 'stopped before it started%'",
			"lld", exec),
		1);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = $1",
			  "lld", exec),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 0);
	cbt_exec(conn, "DROP TRIGGER cbt_hold_start ON batch_job_execution");
	/* Restartable: the restart does the work. */
	CBT_EQ_LL(ex("run", "ledger", "k:long=1", NULL), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE restart_of = $1 AND "
			      "status = 'COMPLETED'",
			      "lld", exec),
		1);
	assert_exactly_once(conn);
	PQfinish(conn);
}

/* A stop between two steps: the second does not start. */
static PGconn *stopper;
static int second_calls;

static int first_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			 cb_error *err)
{
	(void)user;
	(void)tx;
	(void)context;
	/* The operator's stop arrives as the first step finishes. */
	if (cb_repo_request_stop(stopper, cb_step_context_job_execution_id(sc), err) < 0)
		return CB_ERROR;
	return CB_DONE;
}

static int second_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			  cb_error *err)
{
	(void)user;
	(void)sc;
	(void)tx;
	(void)context;
	(void)err;
	return ++second_calls >= 3 ? CB_DONE : 0;
}

static void test_stop_between_steps_keeps_the_next_step_from_starting(void)
{
	PGconn *conn = cbt_connect(db);
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;
	cb_job_result r;

	reset(conn, "0");
	stopper = cbt_connect(db);
	CBT_PASS_FATAL(cb_job_new(&job, "two_steps_stop", &err), &err);
	s.kind = CB_STEP_TASKLET;
	s.name = "first";
	s.tasklet = first_tasklet;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	s.name = "second";
	s.tasklet = second_tasklet;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "STOPPED");
	CBT_CONTAINS(r.exit_message, "stopped before step 'second'");
	CBT_EQ_LL(second_calls, 0);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = $1 "
			  "AND step_name = 'second'",
			  "lld", r.job_execution_id),
		  0);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STOPPED'",
			  "lld", r.job_execution_id),
		  1);
	/* The restart skips the completed first step and runs the second. */
	PQfinish(stopper);
	stopper = NULL;
	CBT_PASS(cb_job_restart(&r, conn, job, r.job_execution_id, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(second_calls, 3);
	cb_job_free(job);
	PQfinish(conn);
}

/* ---- item 5: abandon and the instance ------------------------------------- */

static void test_abandon_only_the_newest_and_any_abandoned_forbids_restart(void)
{
	PGconn *conn = cbt_connect(db);
	long long first, second;
	char a[24], b[24], named[64];

	reset(conn, "50");
	/* A posting the ledger refuses fails the runs (a missing table would be
	 * refused by the preflight, nothing written). */
	cbt_exec(conn, "ALTER TABLE ledger ADD CONSTRAINT refused CHECK (amount < 0) NOT VALID");
	CBT_EQ_LL(ex("run", "ledger", "k:long=2", NULL), 1);
	first = newest_execution(conn);
	CBT_EQ_LL(ex("run", "ledger", "k:long=2", NULL), 1);
	second = newest_execution(conn);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT restart_of FROM batch_job_execution WHERE job_execution_id = $1",
			  "lld", second),
		  first);
	snprintf(a, sizeof(a), "%lld", first);
	snprintf(b, sizeof(b), "%lld", second);
	snprintf(named, sizeof(named), "execution %lld was abandoned", first);
	/* The older one is refused, naming the newest. */
	CBT_EQ_LL(ex("abandon", a, NULL), 2);
	CBT_CONTAINS(errout, "not the newest");
	{
		char that[48];

		snprintf(that, sizeof(that), "(that is %lld)", second);
		CBT_CONTAINS(errout, that);
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'ABANDONED'"),
		  0);
	/* An older ABANDONED execution (as older versions allowed) still
	 * forbids any restart of its instance, naming it. */
	cbt_exec(conn, "ALTER TABLE ledger DROP CONSTRAINT refused");
	cbt_queryp_ll(
		conn,
		"UPDATE batch_job_execution SET status = 'ABANDONED', exit_code = 'ABANDONED' "
		"WHERE job_execution_id = $1 RETURNING 1",
		"lld", first);
	CBT_EQ_LL(ex("run", "ledger", "k:long=2", NULL), 3);
	CBT_CONTAINS(errout, named);
	CBT_EQ_LL(ex("restart", b, NULL), 3);
	CBT_CONTAINS(errout, named);
	CBT_EQ_LL(newest_execution(conn), second);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 0);
	/* The newest one can be abandoned. */
	CBT_EQ_LL(ex("abandon", b, NULL), 0);
	CBT_EQ_LL(ex("run", "ledger", "k:long=2", NULL), 3);
	PQfinish(conn);
}

/* ---- item 7 and 13g: dead and live owners --------------------------------- */

static void test_abandon_of_a_killed_owners_execution(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec, step;
	char id[24];
	pid_t pid;

	reset(conn, LEDGER_ROWS);
	pid = start_ledger(conn, "k:long=3", "1", "transitions-kill.log", &exec);
	if (pid < 0)
		goto done;
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	cbt_wait_sessions_gone(conn);
	wait_lease_expired(conn, exec);
	cbt_sleep_ms(1500); /* the burial comes well after its last sign of life */
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STARTED'",
			  "lld", exec),
		  1);
	CBT_EQ_LL(ex("abandon", id, NULL), 0);
	CBT_CONTAINS(out, "ABANDONED");
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			"AND status = 'ABANDONED' AND exit_code = 'ABANDONED' AND exit_message "
			"LIKE 'abandoned by operator after its owner %:' || $2::text || ':% was lost%'",
			"lld ld", exec, (long)pid),
		1);
	step = cbt_queryp_ll(conn,
			     "SELECT max(step_execution_id) FROM batch_step_execution WHERE "
			     "job_execution_id = $1",
			     "lld", exec);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_step_execution WHERE step_execution_id = $1 "
			  "AND status = 'FAILED' AND exit_message = 'owner lost'",
			  "lld", step),
		  1);
	assert_ended_at_last_sign(conn, exec);
	/* Its expired lock was released, and the release is audited. */
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_lock_audit WHERE job_execution_id = $1 AND "
			  "outcome = 'RELEASED' AND detail LIKE 'released for the abandon%'",
			  "lld", exec),
		  1);
	/* Final: the instance does not run again; another one does. */
	CBT_EQ_LL(ex("run", "ledger", "k:long=3", NULL), 3);
	CBT_EQ_LL(ex("run", "ledger", "k:long=4", NULL), 0);
	assert_exactly_once(conn);
done:
	PQfinish(conn);
}

static void test_stop_of_a_frozen_owners_execution_then_restart(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec, mark;
	char id[24];
	pid_t pid;

	reset(conn, LEDGER_ROWS);
	pid = start_ledger(conn, "k:long=5", "1", "transitions-frozen.log", &exec);
	if (pid < 0)
		goto done;
	kill(pid, SIGSTOP);
	wait_lease_expired(conn, exec);
	cbt_sleep_ms(1500);
	snprintf(id, sizeof(id), "%lld", exec);
	mark = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
	CBT_EQ_LL(ex("stop", id, NULL), 0);
	CBT_CONTAINS(out, "STOPPED now");
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STOPPED' AND exit_message LIKE 'owner lost; stopped by "
			  "operator%'",
			  "lld", exec),
		  1);
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_step_execution WHERE job_execution_id = $1 "
			"AND status = 'STOPPED' AND exit_message = 'owner lost; stopped by operator'",
			"lld", exec),
		1);
	assert_ended_at_last_sign(conn, exec);
	/* Woken, the frozen owner finds its lock gone: it writes nothing more
	 * and cannot overwrite the verdict. */
	kill(pid, SIGCONT);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), mark);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STOPPED'",
			  "lld", exec),
		  1);
	/* Restartable at once: the lock was released, not left to expire. */
	CBT_EQ_LL(ex("restart", id, NULL), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE restart_of = $1 AND "
			      "status = 'COMPLETED'",
			      "lld", exec),
		1);
	assert_exactly_once(conn);
done:
	PQfinish(conn);
}

static void test_live_owner_cannot_be_abandoned_and_stops_normally(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec;
	char id[24];
	pid_t pid;

	reset(conn, LEDGER_ROWS);
	pid = start_ledger(conn, "k:long=6", "30", "transitions-live.log", &exec);
	if (pid < 0)
		goto done;
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(ex("abandon", id, NULL), 2);
	CBT_CONTAINS(errout, "is STARTED and its owner");
	CBT_CONTAINS(errout, "is alive (lease until ");
	CBT_EQ_LL(ex("stop", id, NULL), 0);
	CBT_CONTAINS(out, "stop requested");
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 5);
	if (cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed") == 0)
		CBT_FAILF("the job finished before the stop; the test proves nothing");
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STOPPED'",
			  "lld", exec),
		  1);
	CBT_EQ_LL(ex("restart", id, NULL), 0);
	assert_exactly_once(conn);
done:
	PQfinish(conn);
}

/* 13g through the launcher's own burial (a restart after a SIGKILL). */
static void test_killed_execution_buried_by_restart_ends_at_its_last_heartbeat(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec;
	pid_t pid;

	reset(conn, LEDGER_ROWS);
	pid = start_ledger(conn, "k:long=7", "1", "transitions-bury.log", &exec);
	if (pid < 0)
		goto done;
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	cbt_wait_sessions_gone(conn);
	wait_lease_expired(conn, exec);
	cbt_sleep_ms(1500);
	CBT_EQ_LL(ex("run", "ledger", "k:long=7", NULL), 0);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'FAILED'",
			  "lld", exec),
		  1);
	assert_ended_at_last_sign(conn, exec);
	assert_exactly_once(conn);
done:
	PQfinish(conn);
}

/* ---- item 8: --next ------------------------------------------------------- */

static long long newest_run_id(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT parameter_value::bigint FROM batch_job_execution_params "
				  "WHERE parameter_name = 'run.id' ORDER BY job_execution_id DESC "
				  "LIMIT 1");
}

static void test_next_always_makes_a_new_instance(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, "0");
	CBT_EQ_LL(ex("run", "ledger", "run.id:long=5", NULL), 0);
	CBT_EQ_LL(ex("run", "ledger", "--next", NULL), 0);
	CBT_EQ_LL(newest_run_id(conn), 6);
	CBT_EQ_LL(ex("run", "ledger", "--next", NULL), 0);
	CBT_EQ_LL(newest_run_id(conn), 7);
	/* The newest instance has a smaller run.id than older ones, and the
	 * next one up (5) is taken: --next still goes past the largest. */
	CBT_EQ_LL(ex("run", "ledger", "run.id:long=4", NULL), 0);
	CBT_EQ_LL(ex("run", "ledger", "--next", NULL), 0);
	CBT_EQ_LL(newest_run_id(conn), 8);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 5);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status <> "
				     "'COMPLETED'"),
		  0);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "started transition is guarded", test_started_transition_is_guarded },
	{ "stop while starting ends STOPPED without a step",
	  test_stop_while_starting_ends_stopped_without_a_step },
	{ "stop between steps keeps the next step from starting",
	  test_stop_between_steps_keeps_the_next_step_from_starting },
	{ "abandon only the newest; any abandoned forbids restart",
	  test_abandon_only_the_newest_and_any_abandoned_forbids_restart },
	{ "abandon of a killed owner's execution", test_abandon_of_a_killed_owners_execution },
	{ "stop of a frozen owner's execution, then restart",
	  test_stop_of_a_frozen_owners_execution_then_restart },
	{ "live owner cannot be abandoned and stops normally",
	  test_live_owner_cannot_be_abandoned_and_stops_normally },
	{ "killed execution buried by restart ends at its last heartbeat",
	  test_killed_execution_buried_by_restart_ends_at_its_last_heartbeat },
	{ "--next always makes a new instance", test_next_always_makes_a_new_instance },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	static CU_TestInfo selected[sizeof(tests) / sizeof(tests[0])];
	size_t n = 0;

	if (argc < 2 || argv[1][0] == '-') /* --list, --run: the harness's */
		return cbt_main("transitions", init, clean, tests);
	for (size_t i = 0; tests[i].pName; i++)
		if (strstr(tests[i].pName, argv[1]))
			selected[n++] = tests[i];
	selected[n] = (CU_TestInfo)CU_TEST_INFO_NULL;
	return cbt_main("transitions", init, clean, selected);
}
