/*
 * A chunk step on two connections (chunk.connections=2), end to end through
 * the cbatch-examples CLI: chunk N+1 is written on one connection while
 * chunk N commits on the other, and what is committed is always a prefix of
 * the chunks, whatever fails, is killed or stopped in between.
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
	return cbt_db_create(db, sizeof(db), "overlap");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static char out[65536], errout[65536];

/* Run cbatch-examples with --db and the arguments up to the first NULL. */
static int cli(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5)
{
	const char *argv[10] = { cbt_examples_bin(), "--db", db, a1, a2, a3, a4, a5, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/*
 * Fresh repository and ledger tables with @p rows accounts, and a statement
 * trigger that notes which server session wrote each ledger statement (and
 * its application_name), so that a test can tell that both connections wrote.
 */
static void reset(PGconn *conn, long long rows)
{
	char n[24];

	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(cli("schema", "init", NULL, NULL, NULL), 0);
	snprintf(n, sizeof(n), "%lld", rows);
	CBT_EQ_LL(cli("example-setup", "ledger", "--rows", n, NULL), 0);
	cbt_exec(conn,
		 "CREATE TABLE seen (pid int, app text);"
		 "CREATE FUNCTION note_writer() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
		 "INSERT INTO seen VALUES (pg_backend_pid(), current_setting('application_name')); "
		 "RETURN NULL; END $$;"
		 "CREATE TRIGGER note_writer AFTER INSERT ON ledger "
		 "FOR EACH STATEMENT EXECUTE FUNCTION note_writer();");
}

/*
 * Make the status update of account 1050 (chunk 11 at chunk size 100) fail:
 * the first time only once another session of the run holds a transaction
 * that wrote (the next chunk, in flight on the other connection; waited for
 * up to 20 s, and the message says whether it came), and again every later
 * time when @p every_time (else it passes from then on).
 */
static void fail_account_1050(PGconn *conn, int every_time)
{
	/* A sequence counts the calls: nextval survives the rollback that a
	 * table written in the failing transaction would not. */
	cbt_exec(conn, "CREATE SEQUENCE calls_1050");
	cbt_exec(conn, every_time ? "CREATE TABLE fail_always ()" : "SELECT 1");
	cbt_exec(conn, "CREATE FUNCTION fail_1050() RETURNS trigger LANGUAGE plpgsql AS $$ "
		       "DECLARE v_seen boolean := false; BEGIN "
		       "IF nextval('calls_1050') > 1 THEN "
		       "  IF to_regclass('fail_always') IS NULL THEN RETURN NEW; END IF; "
		       "  RAISE EXCEPTION 'account 1050 refused again'; "
		       "END IF; "
		       "FOR i IN 1..4000 LOOP "
		       "  PERFORM pg_stat_clear_snapshot(); "
		       "  SELECT EXISTS (SELECT 1 FROM pg_stat_activity a "
		       "    WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() "
		       "      AND a.application_name LIKE 'cbatch%' "
		       "      AND a.application_name <> 'cbatch-heartbeat' "
		       "      AND a.backend_xid IS NOT NULL) INTO v_seen; "
		       "  EXIT WHEN v_seen; "
		       "  PERFORM pg_sleep(0.005); "
		       "END LOOP; "
		       "RAISE EXCEPTION 'account 1050 refused (overlapped: %)', v_seen; "
		       "END $$;"
		       "CREATE TRIGGER fail_1050 BEFORE UPDATE ON account FOR EACH ROW "
		       "WHEN (OLD.id = 1050) EXECUTE FUNCTION fail_1050();");
}

/*
 * What is committed is a prefix of whole chunks of @p chunk rows, and the
 * data, the source status, the counts and the checkpoint agree. @return the
 * rows committed.
 */
static long long assert_prefix(PGconn *conn, long long chunk)
{
	long long written = cbt_query_ll(conn, "SELECT count(*) FROM ledger");

	CBT_EQ_LL(written % chunk, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT coalesce(max(account_id), 0) FROM ledger"), written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"), written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l "
				     "ON l.account_id = a.id WHERE a.processed"),
		  written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT write_count FROM batch_step_execution "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  written);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  written / chunk);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT coalesce((serialized_context->'reader'->'last_key'->>0)"
			       "::bigint, 0) FROM batch_step_execution_context "
			       "ORDER BY step_execution_id DESC LIMIT 1"),
		  written);
	return written;
}

static long long last_execution(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

static void test_two_connections_commit_every_row_once(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, 2500);
	CBT_EQ_LL(cli("run", "ledger", "-chunk.size:long=100", "-chunk.connections:long=2", NULL),
		  0);
	ledger_assert_exactly_once(conn, 2500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution"), 2500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT write_count FROM batch_step_execution"), 2500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 25);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT rollback_count FROM batch_step_execution"), 0);
	/* One version per chunk, and one for the step's end, as on one connection. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT version FROM batch_step_execution"), 26);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution "
				     "WHERE status = 'COMPLETED' AND exit_code = 'COMPLETED'"),
		  1);
	/* Both connections wrote, the second one by name, in turn. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT pid) FROM seen"), 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM seen WHERE app = 'cbatch-chunk2'"), 12);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM seen"), 25);
	PQfinish(conn);
}

static void test_one_connection_is_unchanged(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, 500);
	CBT_EQ_LL(cli("run", "ledger", "-chunk.size:long=100", "-chunk.connections:long=1", NULL),
		  0);
	ledger_assert_exactly_once(conn, 500);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT version FROM batch_step_execution"), 6);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT pid) FROM seen"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM seen WHERE app = 'cbatch-chunk2'"), 0);
	PQfinish(conn);
}

static void test_a_chunk_failing_with_the_next_in_flight_leaves_a_prefix(void)
{
	PGconn *conn = cbt_connect(db);
	char id[24];
	long long failed;

	reset(conn, 2000);
	fail_account_1050(conn, 1);
	CBT_EQ_LL(cli("run", "ledger", "-chunk.size:long=100", "-chunk.connections:long=2", NULL),
		  1);
	/* The first failure met chunk 12 in flight on the other connection. */
	CBT_CONTAINS(errout, "account 1050 refused (overlapped: t)");
	CBT_CONTAINS(errout, "going on from the last commit");
	CBT_CONTAINS(errout, "account 1050 refused again");
	/* Chunks 1..10 committed, 11 and 12 rolled back, then 11 alone failed. */
	CBT_EQ_LL(assert_prefix(conn, 100), 1000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT rollback_count FROM batch_step_execution"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution "
				     "WHERE status = 'FAILED' AND exit_message LIKE '%1050%'"),
		  1);
	failed = last_execution(conn);
	/* The operator lets the row through and restarts: the rest, once. */
	cbt_exec(conn, "DROP TRIGGER fail_1050 ON account");
	snprintf(id, sizeof(id), "%lld", failed);
	CBT_EQ_LL(cli("restart", id, NULL, NULL, NULL), 0);
	ledger_assert_exactly_once(conn, 2000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  1000);
	PQfinish(conn);
}

static void test_a_failure_in_flight_that_passes_alone_goes_on(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, 2000);
	fail_account_1050(conn, 0);
	CBT_EQ_LL(cli("run", "ledger", "-chunk.size:long=100", "-chunk.connections:long=2", NULL),
		  0);
	CBT_CONTAINS(errout, "account 1050 refused (overlapped: t)");
	CBT_CONTAINS(errout, "the next chunk alone");
	ledger_assert_exactly_once(conn, 2000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 20);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT rollback_count FROM batch_step_execution"), 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution"), 2000);
	/* After chunk 11 committed alone, a new second connection took over. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT pid) FROM seen"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM seen"), 20);
	PQfinish(conn);
}

static void test_parts_that_cannot_are_refused_before_anything_is_recorded(void)
{
	PGconn *conn = cbt_connect(db);
	char file[512], param[600];

	reset(conn, 100);
	snprintf(file, sizeof(file), "%s/overlap-export.csv", cbt_tmpdir());
	snprintf(param, sizeof(param), "file=%s", file);
	/* The CSV file writer has output outside the transaction. */
	CBT_EQ_LL(cli("run", "ledger_export", param, "-chunk.connections:long=2", NULL), 2);
	CBT_CONTAINS(errout, "writer 0 is not overlap-safe");
	CBT_CONTAINS(errout, "ledger_export");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	CBT_EQ_LL(access(file, F_OK), -1);
	/* Out of range: refused as any reserved parameter is. */
	CBT_EQ_LL(cli("run", "ledger", "-chunk.connections:long=3", NULL, NULL), 2);
	CBT_CONTAINS(errout, "chunk.connections must be a long from 1 to 2");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	PQfinish(conn);
}

/*
 * A role whose connection limit leaves no room for the second connection
 * (the run's own and its heartbeat's take the two): the step says why and
 * does the rest on one connection, every row once.
 */
/* Run @p fmt with its one %s the quoted name @p role (DDL takes no parameters). */
static void exec_for_role(PGconn *conn, const char *fmt, const char *role)
{
	char *q = PQescapeIdentifier(conn, role, strlen(role)), sql[600];

	if (!q)
		CBT_FAILF("cannot quote %s", role);
	snprintf(sql, sizeof(sql), fmt, q);
	PQfreemem(q);
	cbt_exec(conn, sql);
}

static void test_a_second_connection_refused_leaves_one(void)
{
	PGconn *conn = cbt_connect(db);
	char role[64], conninfo[CBT_CONNINFO_MAX + 80];
	const char *argv[] = { cbt_examples_bin(),
			       "--db",
			       conninfo,
			       "run",
			       "ledger",
			       "-chunk.size:long=100",
			       "-chunk.connections:long=2",
			       NULL };

	reset(conn, 3000);
	snprintf(role, sizeof(role), "overlap_limited_%d", (int)getpid());
	exec_for_role(conn, "CREATE ROLE %s LOGIN CONNECTION LIMIT 2", role);
	exec_for_role(conn, "GRANT ALL ON SCHEMA public TO %s", role);
	exec_for_role(conn, "GRANT ALL ON ALL TABLES IN SCHEMA public TO %s", role);
	exec_for_role(conn, "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s", role);
	exec_for_role(conn, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO %s", role);
	snprintf(conninfo, sizeof(conninfo), "%s user=%s", db, role);
	CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 0);
	CBT_CONTAINS(errout, "second connection");
	CBT_CONTAINS(errout, "too many connections");
	CBT_CONTAINS(errout, "on one connection from now on");
	/* The first connection was not taken for lost. */
	if (strstr(errout, "the database was lost"))
		CBT_FAILF("the first connection was reset for the second's refusal: %s", errout);
	ledger_assert_exactly_once(conn, 3000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 30);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT pid) FROM seen"), 1);
	exec_for_role(conn, "DROP OWNED BY %s", role);
	exec_for_role(conn, "DROP ROLE %s", role);
	PQfinish(conn);
}

/* Start the ledger job on two connections in the background. */
static pid_t spawn_run(const char *extra, const char *logname)
{
	char path[512];
	const char *argv[] = { cbt_examples_bin(),
			       "--db",
			       db,
			       "run",
			       "ledger",
			       "-chunk.size:long=100",
			       "-chunk.connections:long=2",
			       "--lease",
			       "2",
			       extra,
			       NULL };

	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), logname);
	return cbt_spawn(argv, path);
}

static void test_sigkill_with_two_chunks_in_flight_keeps_a_prefix(void)
{
	PGconn *conn = cbt_connect(db);
	long long written;
	pid_t pid;

	reset(conn, 100000);
	pid = spawn_run(NULL, "overlap-sigkill.log");
	ledger_wait_for_rows(conn, 3000);
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	/* A COMMIT sent before the kill may still land: look once the dead
	 * client's sessions are gone. */
	cbt_wait_sessions_gone(conn);
	written = assert_prefix(conn, 100);
	if (written >= 100000)
		CBT_FAILF("the job finished before the kill; the test proves nothing");
	/* After the lease, a new run takes over and does the rest, once. */
	cbt_sleep_ms(2500);
	CBT_EQ_LL(cli("run", "ledger", "-chunk.connections:long=2", NULL, NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  100000 - written);
	ledger_assert_exactly_once(conn, 100000);
	PQfinish(conn);
}

static void test_stop_with_two_connections_then_restart(void)
{
	PGconn *conn = cbt_connect(db);
	char id[24];
	pid_t pid;

	reset(conn, 20000);
	pid = spawn_run("-sleepMs:long=20", "overlap-stop.log");
	ledger_wait_for_rows(conn, 1000);
	snprintf(id, sizeof(id), "%lld", last_execution(conn));
	CBT_EQ_LL(cli("stop", id, NULL, NULL, NULL), 0);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 5);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'STOPPED'"),
		  1);
	if (assert_prefix(conn, 100) >= 20000)
		CBT_FAILF("the job finished before the stop; the test proves nothing");
	CBT_EQ_LL(cli("restart", id, NULL, NULL, NULL), 0);
	ledger_assert_exactly_once(conn, 20000);
	PQfinish(conn);
}

/* End the server session of the run's connection named @p app. */
static void terminate(PGconn *conn, const char *app)
{
	if (!cbt_wait_untilp(conn, 30000,
			     "SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity "
			     "WHERE datname = current_database() AND application_name = $1 "
			     "AND pid <> pg_backend_pid()",
			     "s", app))
		CBT_FAILF("no session named %s to end", app);
}

/*
 * The server session of the run's connection named @p app is ended mid-run:
 * the chunks in flight roll back, the run reconnects (the first connection
 * within its outage budget; the second one anew after a chunk alone) and goes
 * on from the last commit, to exit 0 with every row once.
 */
static void lose_a_session_mid_run(const char *app, const char *log)
{
	PGconn *conn = cbt_connect(db);
	pid_t pid;

	reset(conn, 60000);
	pid = spawn_run("-sleepMs:long=5", log);
	ledger_wait_for_rows(conn, 2000);
	terminate(conn, app);
	CBT_EQ_LL(cbt_wait_timeout(pid, 120000), 0);
	ledger_assert_exactly_once(conn, 60000);
	/* Both first sessions and a new one wrote. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT (count(DISTINCT pid) >= 3)::int FROM seen"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution "
				     "WHERE status = 'COMPLETED'"),
		  1);
	PQfinish(conn);
}

static void test_a_lost_second_session_is_ridden_through(void)
{
	lose_a_session_mid_run("cbatch-chunk2", "overlap-lost2.log");
}

/* The first connection's application_name is the CLI's, "cbatch". */
static void test_a_lost_first_session_is_ridden_through(void)
{
	lose_a_session_mid_run("cbatch", "overlap-lost1.log");
}

/*
 * Every chunk also adds its rows to one counter row (a statement trigger on
 * the ledger): chunk N+1 usually waits for chunk N's COMMIT on that row;
 * when it takes the row first while N needs it, the server breaks the
 * deadlock and both roll back (never a wait the server cannot see: this
 * hung before the chunks' order moved into the server). The sum comes out
 * right and the run ends.
 */
static void test_chunks_that_write_the_same_row_come_out_right(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn, 3000);
	cbt_exec(conn, "CREATE TABLE counter (n bigint NOT NULL); INSERT INTO counter VALUES (0);"
		       "CREATE FUNCTION count_rows() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
		       "UPDATE counter SET n = n + (SELECT count(*) FROM added); "
		       "RETURN NULL; END $$;"
		       "CREATE TRIGGER count_rows AFTER INSERT ON ledger "
		       "REFERENCING NEW TABLE AS added "
		       "FOR EACH STATEMENT EXECUTE FUNCTION count_rows();");
	CBT_EQ_LL(cli("run", "ledger", "-chunk.size:long=100", "-chunk.connections:long=2", NULL),
		  0);
	ledger_assert_exactly_once(conn, 3000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT n FROM counter"), 3000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 30);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "two connections commit every row once", test_two_connections_commit_every_row_once },
	{ "one connection is unchanged", test_one_connection_is_unchanged },
	{ "a chunk failing with the next in flight leaves a prefix",
	  test_a_chunk_failing_with_the_next_in_flight_leaves_a_prefix },
	{ "a failure in flight that passes alone goes on",
	  test_a_failure_in_flight_that_passes_alone_goes_on },
	{ "parts that cannot are refused before anything is recorded",
	  test_parts_that_cannot_are_refused_before_anything_is_recorded },
	{ "SIGKILL with two chunks in flight keeps a prefix",
	  test_sigkill_with_two_chunks_in_flight_keeps_a_prefix },
	{ "stop with two connections, then restart", test_stop_with_two_connections_then_restart },
	{ "a lost second session is ridden through", test_a_lost_second_session_is_ridden_through },
	{ "a lost first session is ridden through", test_a_lost_first_session_is_ridden_through },
	{ "a second connection refused leaves one", test_a_second_connection_refused_leaves_one },
	{ "chunks that write the same row come out right",
	  test_chunks_that_write_the_same_row_come_out_right },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("overlap", init, clean, tests);
}
