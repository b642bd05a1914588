/*
 * The database restarts or goes away under a running job: within the outage
 * budget the run rides through by itself (one execution, exit 0, every item
 * once); past it, it ends saying what it left and a later run completes it.
 *
 * This restarts its test cluster (pg_ctl restart -m fast): a cluster of its
 * own, so that tests beside it go on, and its cases one at a time
 * (tests/CMakeLists.txt, CB_TEST_PGDIR_RESTART and cb_paced_cases).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cbtest.h"
#include "serve_client.h"

static char db[CBT_CONNINFO_MAX];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "dbrestart");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static char out[65536], errout[65536];

/* Run cbatch-examples --db db ARGS... (NULL-terminated). */
static int ex(const char *first, ...)
{
	const char *argv[24] = { cbt_examples_bin(), "--db", db };
	size_t n = 3;
	va_list ap;

	va_start(ap, first);
	for (const char *a = first; a && n < 23; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* A connection once the server accepts them again. */
static PGconn *reconnect(void)
{
	double deadline = cbt_now() + 60;

	for (;;) {
		PGconn *c = PQconnectdb(db);

		if (PQstatus(c) == CONNECTION_OK)
			return c;
		PQfinish(c);
		if (cbt_now() > deadline)
			break;
		cbt_sleep_ms(50);
	}
	return cbt_connect(db); /* fails loudly */
}

/* Where a server started by pg_ctl finds locales ("": the system's). Only
 * the server's: a LOCPATH in the commands' environment makes glibc leak (a
 * sanitizer build reports it). */
static char server_locpath[PATH_MAX];

/*
 * pg_ctl @p action on the test cluster ($CBATCH_TEST_PGHOST/data), as its
 * owner postgres when we are root (see scripts/pg-cluster.sh). The server
 * logs to the cluster's log file, never to our stdout: ctest would wait for
 * a pipe that the new postmaster held open.
 */
static int pg_ctl(const char *action)
{
	static const char script[] =
		"dir=$0; cd / || exit 1; "
		"unset PGDATA PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGOPTIONS PGSERVICE; "
		"bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1); "
		"[ -x \"$bindir/pg_ctl\" ] || bindir=$(pg_config --bindir 2>/dev/null); "
		"[ -x \"$bindir/pg_ctl\" ] || bindir=$(dirname \"$(command -v pg_ctl)\"); "
		"if [ \"$(id -u)\" -eq 0 ]; then as=\"runuser -u postgres --\"; else as=; fi; "
		"if [ -n \"$2\" ]; then LOCPATH=$2; export LOCPATH; fi; "
		"exec $as \"$bindir/pg_ctl\" -D \"$dir/data\" -l \"$dir/log\" $1";
	const char *host = getenv("CBATCH_TEST_PGHOST");
	const char *argv[] = { "sh", "-c", script, host ? host : "", action, server_locpath, NULL };
	int rc;

	if (!host || !*host) {
		CBT_FAILF("CBATCH_TEST_PGHOST is not set: run through ctest");
		return -1;
	}
	rc = cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
	if (rc != 0)
		CBT_FAILF("pg_ctl %s failed (exit %d): %s %s", action, rc, out, errout);
	return rc;
}

static int restart_cluster(void)
{
	return pg_ctl("restart -m fast -w -t 60");
}

#define DB_ROWS      20000
#define DB_ROWS_TEXT "20000"

static void test_database_restart_mid_run_is_ridden_through_exactly_once(void)
{
	PGconn *conn = cbt_connect(db);
	long long exec, before;
	char log[PATH_MAX], *text;
	pid_t pid;
	int rc;

	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	/* Throttled (DB_ROWS at 10 ms a chunk of 10: 20 s at least), so that the
	 * job still runs when the cluster restarts. No retries configured: a
	 * lost connection is not an item failure. */
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", DB_ROWS_TEXT, NULL), 0);

	snprintf(log, sizeof(log), "%s/dbrestart-job.log", cbt_tmpdir());
	{
		const char *argv[] = {
			cbt_examples_bin(), "--db",    db,   "run", "ledger", "-chunk.size:long=10",
			"-sleepMs:long=10", "--lease", "10", NULL
		};

		pid = cbt_spawn(argv, log);
	}
	if (!cbt_wait_until(conn, 60000, "SELECT (count(*) >= 500)::int FROM ledger"))
		CBT_FAILF("the job did not get going");
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	before = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
	PQfinish(conn);

	CU_ASSERT_FATAL(restart_cluster() == 0);
	rc = cbt_wait_timeout(pid, 120000);
	text = cbt_slurp(log, NULL);
	printf("\n    the job, after the restart: exit %d: %s\n", rc, text ? text : "");
	CBT_EQ_LL(rc, 0);
	CBT_CONTAINS(text, "connected again after");
	free(text);

	conn = reconnect();
	if (before >= DB_ROWS)
		CBT_FAILF("the job finished before the restart; the test proves nothing");
	/* One execution, no restart: it went on by itself. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'COMPLETED'",
				"lld", exec),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE "
				     "end_time IS NULL OR status <> 'COMPLETED'"),
		  0);
	/* Every account exactly once, counted as written. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), DB_ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT write_count FROM batch_step_execution"), DB_ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l ON "
				     "l.account_id = a.id AND l.amount = a.amount AND "
				     "l.seller_id = a.seller_id"),
		  DB_ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE NOT released"), 0);
	PQfinish(conn);
}

/* ALTER DATABASE <this one> ALLOW_CONNECTIONS @p allow, from another
 * database (a database cannot shut itself). */
static void allow_connections(PGconn *conn, int allow)
{
	char admin[CBT_CONNINFO_MAX + 32], name[128], sql[512], *q;
	PGconn *a;

	cbt_query_str(conn, "SELECT current_database()", name, sizeof(name));
	snprintf(admin, sizeof(admin), "%s dbname=postgres", db);
	a = cbt_connect(admin);
	q = PQescapeIdentifier(a, name, strlen(name));
	snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS %s", q,
		 allow ? "true" : "false");
	PQfreemem(q);
	CBT_EQ_LL(cbt_exec(a, sql), 0);
	PQfinish(a);
}

/*
 * The database refuses connections for a few seconds in the middle of a
 * step (its sessions terminated): within the outage budget (by default the
 * lease) the run waits it out, proves its lock is still its own, goes on
 * from its last commit and completes: exit 0, one execution. Only this
 * test's database goes away, not the cluster.
 */
static void test_outage_within_the_budget_is_ridden_through(void)
{
	PGconn *conn = cbt_connect(db);
	char log[PATH_MAX], lock[401] = "";
	double down, back, ended;
	long long exec;
	pid_t pid;
	int rc;

	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "tick", "--reset", NULL), 0);
	snprintf(log, sizeof(log), "%s/dbrestart-outage.log", cbt_tmpdir());
	{
		const char *argv[] = {
			cbt_examples_bin(),   "--db",    db,  "run", "tick", "at=outage",
			"-sleepMs:long=4000", "--lease", "8", NULL
		};

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(
		    conn, 20000,
		    "SELECT count(*) FROM batch_job_execution e JOIN batch_step_execution s "
		    "USING (job_execution_id) WHERE e.status = 'STARTED' AND "
		    "s.status = 'STARTED' AND s.commit_count > 0 AND e.job_execution_id = (SELECT "
		    "max(job_execution_id) FROM batch_job_execution)"))
		CBT_FAILF("the job did not get going");
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	cbt_query_str(conn,
		      "SELECT lock_name FROM batch_job_execution ORDER BY job_execution_id "
		      "DESC LIMIT 1",
		      lock, sizeof(lock));
	allow_connections(conn, 0);
	cbt_exec(conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		       "WHERE datname = current_database() AND pid <> pg_backend_pid()");
	down = cbt_now();
	cbt_sleep_ms(2500);
	allow_connections(conn, 1);
	back = cbt_now();
	rc = cbt_wait_timeout(pid, 60000);
	ended = cbt_now();
	{
		char *text = cbt_slurp(log, NULL);

		printf("\n    after %.1f s down, the run ended %.1f s after the database was "
		       "back: exit %d: %s\n",
		       back - down, ended - back, rc, text ? text : "");
		CBT_CONTAINS(text, "connected again after");
		free(text);
	}
	CBT_EQ_LL(rc, 0);
	CU_ASSERT(ended > back);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'COMPLETED' AND end_time IS NOT NULL",
				"lld", exec),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log WHERE fired_for = 'outage'"),
		  1);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_lock WHERE lock_name = $1 AND NOT released",
			  "s", lock),
		  0);
	PQfinish(conn);
}

/* Wait until the file at @p path holds @p text. @return 1, or 0 at the timeout. */
static int wait_file_contains(const char *path, const char *text, int timeout_ms)
{
	double end = cbt_now() + timeout_ms / 1000.0;

	for (;;) {
		char *t = cbt_slurp(path, NULL);
		int found = t && strstr(t, text);

		free(t);
		if (found)
			return 1;
		if (cbt_now() > end)
			return 0;
		cbt_sleep_ms(50);
	}
}

/*
 * An outage longer than the run's outage budget (1 s) but shorter than its
 * lease (8 s): the step gives up with DATABASE_LOST, and once the database
 * answers the run records its end and its step's (none left running) and
 * releases its lock: exit 6, restartable, and the restart completes.
 */
static void test_outage_past_the_budget_ends_database_lost_with_its_steps(void)
{
	PGconn *conn = cbt_connect(db);
	char log[PATH_MAX], *text, id[24];
	long long exec;
	pid_t pid;
	int rc;

	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "tick", "--reset", NULL), 0);
	snprintf(log, sizeof(log), "%s/dbrestart-budget.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(),
				       "--db",
				       db,
				       "run",
				       "tick",
				       "at=budget",
				       "-sleepMs:long=8000",
				       "-outage.budget:long=1",
				       "--lease",
				       "8",
				       NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(
		    conn, 20000,
		    "SELECT count(*) FROM batch_step_execution s WHERE s.status = 'STARTED' "
		    "AND s.commit_count > 0"))
		CBT_FAILF("the job did not get going");
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	allow_connections(conn, 0);
	cbt_exec(conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		       "WHERE datname = current_database() AND pid <> pg_backend_pid()");
	/* Down until the run has given up on its budget (it then waits for the
	 * repository to record its end). */
	if (!wait_file_contains(log, "beyond the outage budget (1 s)", 30000))
		CBT_FAILF("the run did not give up on its budget");
	allow_connections(conn, 1);
	rc = cbt_wait_timeout(pid, 60000);
	text = cbt_slurp(log, NULL);
	printf("\n    exit %d: %s\n", rc, text ? text : "");
	CBT_EQ_LL(rc, 6);
	CBT_CONTAINS(text, "the database stayed unreachable for");
	snprintf(id, sizeof(id), "`restart %lld`", exec);
	CBT_CONTAINS(text, id);
	free(text);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'FAILED' AND exit_code = 'DATABASE_LOST' AND "
				"end_time IS NOT NULL",
				"lld", exec),
		  1);
	/* No step left running under the ended execution. */
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			      "$1 AND (end_time IS NULL OR status <> 'FAILED')",
			      "lld", exec),
		0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE NOT released"), 0);
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(ex("restart", id, NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log WHERE fired_for = 'budget'"),
		  1);
	PQfinish(conn);
}

/* Issue 17 item 8: an outage longer than the lease. The run gives up when
 * its lease ends and says that its execution is left STARTED, and until when;
 * after the lease a run of the instance buries it and completes. */
static void test_outage_past_the_lease_says_the_execution_is_left_started(void)
{
	PGconn *conn = cbt_connect(db);
	char log[PATH_MAX], *text;
	double down, ended;
	long long exec;
	pid_t pid;
	int rc;

	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "tick", "--reset", NULL), 0);
	snprintf(log, sizeof(log), "%s/dbrestart-long-outage.log", cbt_tmpdir());
	{
		const char *argv[] = {
			cbt_examples_bin(),    "--db",    db,  "run", "tick", "at=long-outage",
			"-sleepMs:long=30000", "--lease", "2", NULL
		};

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(
		    conn, 20000,
		    "SELECT count(*) FROM batch_job_execution e JOIN batch_step_execution s "
		    "USING (job_execution_id) WHERE e.status = 'STARTED' AND "
		    "s.status = 'STARTED'"))
		CBT_FAILF("the job did not get going");
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	allow_connections(conn, 0);
	cbt_exec(conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		       "WHERE datname = current_database() AND pid <> pg_backend_pid()");
	down = cbt_now();
	rc = cbt_wait_timeout(pid, 15000);
	ended = cbt_now();
	allow_connections(conn, 1);
	CBT_EQ_LL(rc, 1);
	/* It tried for the rest of its lease (2 s), no longer. */
	CU_ASSERT(ended - down > 0.8);
	CU_ASSERT(ended - down < 2.0 + 1.0);
	text = cbt_slurp(log, NULL);
	CBT_CONTAINS(text, "is left STARTED and is recognised as dead when its lease ends, at ");
	free(text);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'STARTED'",
				"lld", exec),
		  1);
	/* Past the lease, a run of the instance ends it and completes. */
	cbt_sleep_ms(1000);
	CBT_EQ_LL(ex("run", "tick", "at=long-outage", NULL), 0);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'FAILED'",
				"lld", exec),
		  1);
	PQfinish(conn);
}

/* default_transaction_read_only for the whole cluster (a primary turned
 * standby, as libpq's target_session_attrs sees it), from a session that
 * keeps writing. */
static void cluster_read_only(int on)
{
	char admin[CBT_CONNINFO_MAX + 80];
	PGconn *a;

	snprintf(admin, sizeof(admin), "%s options='-c default_transaction_read_only=off'", db);
	a = cbt_connect(admin);
	CBT_EQ_LL(cbt_exec(a, on ? "ALTER SYSTEM SET default_transaction_read_only = on" :
				   "ALTER SYSTEM RESET default_transaction_read_only"),
		  0);
	cbt_exec(a, "SELECT pg_reload_conf()");
	PQfinish(a);
}

/* With @p on, new sessions of this database take writes while the cluster's
 * default (cluster_read_only) keeps the sessions already open read-only: a
 * proxy that leads new sessions to the new primary while old ones are left
 * on the demoted one. Off: the database's setting reset. */
static void new_sessions_writable(int on)
{
	char opt[CBT_CONNINFO_MAX + 80];
	PGconn *a;

	snprintf(opt, sizeof(opt), "%s options='-c default_transaction_read_only=off'", db);
	a = cbt_connect(opt);
	CBT_EQ_LL(
		cbt_exec(a,
			 on ? "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET "
			      "default_transaction_read_only = off', current_database()); END $$" :
			      "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET "
			      "default_transaction_read_only', current_database()); END $$"),
		0);
	PQfinish(a);
}

/*
 * A worker on a multi-host conninfo (target_session_attrs=read-write) whose
 * every host turns read-only, as during a failover before a standby is
 * promoted: it waits with its backoff, never spinning on a refused host's
 * socket, and claims again once a primary is back.
 */
static void test_worker_waits_without_spinning_while_no_primary(void)
{
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT");
	char multi[CBT_CONNINFO_MAX + 400], log[PATH_MAX], *text, *p;
	PGconn *conn = cbt_connect(db);
	double down;
	int lines = 0;
	pid_t pid;

	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	snprintf(multi, sizeof(multi), "%s host=%s,%s port=%s,%s target_session_attrs=read-write",
		 db, host, host, port, port);
	snprintf(log, sizeof(log), "%s/dbrestart-worker-spin.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db", multi, "worker",
				       "--lease",          "2",    NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(
		    conn, 30000,
		    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
		    "current_database() AND pid <> pg_backend_pid() AND query ILIKE '%partition%'"))
		CBT_FAILF("the worker did not start listening");
	cluster_read_only(1);
	cbt_exec(conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
		       "current_database() AND pid <> pg_backend_pid()");
	down = cbt_now();
	/* The window under test: 4 s without a primary. */
	cbt_sleep_ms(4000);
	cluster_read_only(0);
	text = cbt_slurp(log, NULL);
	for (p = text; p && (p = strstr(p, "retrying in")) != NULL; p++)
		lines++;
	printf("\n    %.1f s without a primary: %d retries logged\n", cbt_now() - down, lines);
	/* Backoff 0.2 s doubling to 5 s: 5 or 6 tries in 4 s, not hundreds. */
	CU_ASSERT(lines >= 1);
	CU_ASSERT(lines <= 12);
	free(text);
	PQfinish(conn);
	conn = reconnect();
	if (!cbt_wait_until(
		    conn, 60000,
		    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
		    "current_database() AND pid <> pg_backend_pid() AND query ILIKE '%partition%'"))
		CBT_FAILF("the worker did not listen again once a primary was back");
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 30000), 0);
	PQfinish(conn);
}

/* A client session of this database, other than the test's own, waiting
 * on a lock in a statement that mentions @p what. */
static int wait_blocked_on(PGconn *conn, const char *what)
{
	return cbt_wait_untilp(
		conn, 30000,
		"SELECT count(*) FROM pg_stat_activity WHERE datname = "
		"current_database() AND pid <> pg_backend_pid() AND wait_event_type = "
		"'Lock' AND strpos(query, $1) > 0",
		"s", what);
}

/* End the sessions waiting on a lock (as a switchover ends them), and wait
 * until they are gone: a terminated session is still listed, waiting, for a
 * moment (a stressed CI saw the next wait find the one ended before, and
 * the session it meant to end not yet there). @return how many. */
static long long end_blocked(PGconn *conn)
{
	/* Materialized: the sessions chosen first, only those ended. */
	return cbt_query_ll(conn, "WITH w AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE "
				  "datname = current_database() AND wait_event_type = 'Lock' AND "
				  "pid <> pg_backend_pid()) SELECT count(*) FROM w "
				  "WHERE pg_terminate_backend(w.pid, 30000)");
}

/* An empty repository with the tick job's table. */
static void fresh_tick(PGconn *conn)
{
	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public; DROP SCHEMA IF EXISTS testhook CASCADE;");
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "tick", "--reset", NULL), 0);
}

/*
 * A proxy on a Unix socket of its own in front of the test cluster's, so
 * that a test can lose a server's answer after the server sent it: with
 * hold set it stops reading what servers send; cut closes every connection
 * it carries, the held answers with them, and forwarding starts again for the
 * connections that come next.
 */
struct proxy {
	char dir[64];
	int listen_fd;
	atomic_int hold, cut, quit;
	atomic_int holding; /* the thread's answer: it reads from no server now */
	pthread_t thread;
};

#define PROXY_MAX 16

static void *proxy_main(void *arg)
{
	struct proxy *px = arg;
	int cl[PROXY_MAX], sv[PROXY_MAX], n = 0;
	struct sockaddr_un to = { .sun_family = AF_UNIX };
	char buf[8192];

	/* Checked to fit by proxy_start. */
	if (snprintf(to.sun_path, sizeof(to.sun_path), "%s/.s.PGSQL.5432",
		     getenv("CBATCH_TEST_PGHOST")) >= (int)sizeof(to.sun_path))
		return NULL;
	while (!atomic_load(&px->quit)) {
		struct pollfd p[1 + 2 * PROXY_MAX];
		int np = 1;

		if (atomic_exchange(&px->cut, 0)) {
			for (int i = 0; i < n; i++) {
				close(cl[i]);
				close(sv[i]);
			}
			n = 0;
			atomic_store(&px->hold, 0);
		}
		int hold = atomic_load(&px->hold);

		p[0] = (struct pollfd){ .fd = px->listen_fd, .events = POLLIN };
		for (int i = 0; i < n; i++) {
			p[np++] = (struct pollfd){ .fd = cl[i], .events = POLLIN };
			p[np++] = (struct pollfd){ .fd = hold ? -1 : sv[i], .events = POLLIN };
		}
		atomic_store(&px->holding, hold);
		if (poll(p, (nfds_t)np, 20) <= 0)
			continue;
		if ((p[0].revents & POLLIN) && n < PROXY_MAX) {
			int c = accept(px->listen_fd, NULL, NULL);
			int s = socket(AF_UNIX, SOCK_STREAM, 0);

			if (c >= 0 && s >= 0 &&
			    connect(s, (struct sockaddr *)&to, sizeof(to)) == 0) {
				cl[n] = c;
				sv[n++] = s;
			} else {
				if (c >= 0)
					close(c);
				if (s >= 0)
					close(s);
			}
			continue; /* the pairs moved: poll again */
		}
		for (int i = n - 1; i >= 0; i--) {
			int gone = 0;

			for (int d = 0; d < 2 && !gone; d++) {
				short ev = p[1 + 2 * i + d].revents;
				int from = d ? sv[i] : cl[i], into = d ? cl[i] : sv[i];
				ssize_t got;

				if (!(ev & (POLLIN | POLLHUP | POLLERR)))
					continue;
				got = read(from, buf, sizeof(buf));
				gone = got <= 0 || write(into, buf, (size_t)got) != got;
			}
			if (gone) {
				close(cl[i]);
				close(sv[i]);
				cl[i] = cl[n - 1];
				sv[i] = sv[--n];
			}
		}
	}
	for (int i = 0; i < n; i++) {
		close(cl[i]);
		close(sv[i]);
	}
	return NULL;
}

/* Start @p px; its conninfo (the test database through it) into @p conninfo.
 * @return 0 or -1 (a failure recorded). */
static int proxy_start(struct proxy *px, char *conninfo, size_t size)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(px, 0, sizeof(*px));
	snprintf(px->dir, sizeof(px->dir), "/tmp/cbproxy-XXXXXX");
	if (!mkdtemp(px->dir)) {
		CBT_FAILF("mkdtemp: %s", strerror(errno));
		return -1;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/.s.PGSQL.5432", px->dir);
	px->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (px->listen_fd < 0 || bind(px->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(px->listen_fd, 16) != 0 ||
	    pthread_create(&px->thread, NULL, proxy_main, px) != 0) {
		CBT_FAILF("proxy on %s: %s", a.sun_path, strerror(errno));
		return -1;
	}
	/* The later host wins over the one db names. */
	if (snprintf(conninfo, size, "%s host=%s", db, px->dir) >= (int)size) {
		CBT_FAILF("the proxy's conninfo is too long");
		return -1;
	}
	return 0;
}

static void proxy_stop(struct proxy *px)
{
	char path[PATH_MAX];

	atomic_store(&px->quit, 1);
	pthread_join(px->thread, NULL);
	close(px->listen_fd);
	snprintf(path, sizeof(path), "%s/.s.PGSQL.5432", px->dir);
	unlink(path);
	rmdir(px->dir);
}

/* Take advisory lock 4242 on @p holder (the deferred trigger waits on it)
 * and start @p px (its conninfo into @p via). @return 0 or -1. */
static int proxy_holding_4242(struct proxy *px, PGconn *holder, char *via, size_t size)
{
	if (cbt_exec(holder, "SELECT pg_advisory_lock(4242)") != 0) {
		CBT_FAILF("advisory lock 4242: %s", PQerrorMessage(holder));
		return -1;
	}
	return proxy_start(px, via, size);
}

/*
 * Lose the answer of @p statement, whose commit a deferred trigger holds on
 * advisory lock 4242 (held by @p holder): once it waits there, the proxy
 * holds the servers' answers, the lock is let go, and when @p committed
 * (a count) says the commit went through the proxy cuts the connection
 * with its answer.
 */
static void lose_the_answer(struct proxy *px, PGconn *conn, PGconn *holder, const char *statement,
			    const char *committed)
{
	CU_ASSERT_FATAL(wait_blocked_on(conn, statement));
	atomic_store(&px->hold, 1);
	while (!atomic_load(&px->holding))
		cbt_sleep_ms(5);
	cbt_exec(holder, "SELECT pg_advisory_unlock_all()");
	if (!cbt_wait_until(conn, 30000, committed))
		CBT_FAILF("%s did not commit within 30 s", statement);
	atomic_store(&px->cut, 1);
}

/*
 * The launch's COMMIT goes through and its answer is lost (a switchover
 * that cut the connection just then): on the session reached again, the
 * run finds the execution that session created (the lock's server process)
 * and goes on with it: one execution, COMPLETED, the tick once. A deferred
 * trigger holds the COMMIT until the proxy holds the answers; then the
 * COMMIT ends, and the proxy cuts the connection with its answer.
 */
static void test_a_launch_committed_with_its_answer_lost_is_adopted(void)
{
	PGconn *conn = cbt_connect(db), *holder = cbt_connect(db);
	char via[CBT_CONNINFO_MAX + 64], log[PATH_MAX], *text;
	struct proxy px;
	pid_t pid;
	int rc;

	fresh_tick(conn);
	CBT_EQ_LL(cbt_exec(conn, "CREATE SCHEMA testhook; CREATE FUNCTION testhook.hold() "
				 "RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM "
				 "pg_advisory_xact_lock_shared(4242); RETURN NULL; END $$; "
				 "CREATE CONSTRAINT TRIGGER testhook_hold AFTER INSERT ON "
				 "batch_job_execution DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
				 "EXECUTE FUNCTION testhook.hold()"),
		  0);
	if (proxy_holding_4242(&px, holder, via, sizeof(via)) < 0) {
		PQfinish(holder);
		PQfinish(conn);
		return;
	}
	snprintf(log, sizeof(log), "%s/dbrestart-launch-answer-lost.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db", via, "run", "tick",
				       "at=answer-lost",   NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	/* The COMMIT waits in the deferred trigger; its answer will be held. */
	lose_the_answer(&px, conn, holder, "COMMIT",
			"SELECT count(*) FROM batch_job_execution WHERE status = 'STARTING'");
	rc = cbt_wait_timeout(pid, 90000);
	proxy_stop(&px);
	PQfinish(holder);
	text = cbt_slurp(log, NULL);
	printf("\n    launch answer lost: exit %d: %s\n", rc, text ? text : "");
	CBT_EQ_LL(rc, 0);
	CBT_CONTAINS(text ? text : "", "lost while taking its lock and creating its execution");
	free(text);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE NOT released"), 0);
	PQfinish(conn);
}

/*
 * A command whose session is ended while it checks the schema (a switchover
 * shuts the primary down: 57P01), before it has recorded anything: it waits
 * for a primary as a command started during the switchover does, and runs.
 * (A stressed CI met this: a scheduled run started just before a Patroni
 * switchover exited 1, "read schema version: … ended by another process",
 * no execution, the instant lost.) Twice, the second time while the server
 * is read-only, as a demoted primary is until the new one takes over.
 */
static void test_a_session_ended_during_the_startup_checks_is_waited_out(void)
{
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT");
	PGconn *conn = cbt_connect(db), *holder = cbt_connect(db);
	char multi[CBT_CONNINFO_MAX + 400], log[PATH_MAX], *text;
	pid_t pid;
	int rc;

	fresh_tick(conn);
	/* As a cluster's clients connect: to whichever member is read-write. */
	snprintf(multi, sizeof(multi), "%s host=%s,%s port=%s,%s target_session_attrs=read-write",
		 db, host, host, port, port);
	snprintf(log, sizeof(log), "%s/dbrestart-startup.log", cbt_tmpdir());
	CBT_EQ_LL(
		cbt_exec(holder, "BEGIN; LOCK TABLE batch_schema_version IN ACCESS EXCLUSIVE MODE"),
		0);
	{
		const char *argv[] = { cbt_examples_bin(), "--db", multi, "run", "tick",
				       "at=startup",       NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	/* First: its session ended while it reads the schema version. */
	CU_ASSERT_FATAL(wait_blocked_on(conn, "batch_schema_version"));
	CBT_EQ_LL(end_blocked(conn), 1);
	/* Then the same once more, the server read-only meanwhile. */
	if (!wait_blocked_on(conn, "batch_schema_version")) {
		text = cbt_slurp(log, NULL);
		cbt_exec(holder, "ROLLBACK");
		CBT_FAILF("the command did not try again once its session was ended: %s",
			  text ? text : "");
		free(text);
		kill(pid, SIGKILL);
		cbt_wait_timeout(pid, 10000);
		PQfinish(holder);
		PQfinish(conn);
		return;
	}
	cluster_read_only(1);
	CBT_EQ_LL(end_blocked(conn), 1);
	cbt_exec(holder, "ROLLBACK");
	PQfinish(holder);
	/* It waits (read-only) until a primary is back. */
	text = NULL;
	for (int i = 0; i < 300; i++) {
		free(text);
		text = cbt_slurp(log, NULL);
		if (text && strstr(text, "waiting up to"))
			break;
		cbt_sleep_ms(100);
	}
	CBT_CONTAINS(text, "no read-write primary just now");
	free(text);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	cluster_read_only(0);
	rc = cbt_wait_timeout(pid, 90000);
	text = cbt_slurp(log, NULL);
	printf("\n    the run, its startup checks cut twice: exit %d\n", rc);
	CBT_EQ_LL(rc, 0);
	free(text);
	PQfinish(conn);
	conn = reconnect();
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	PQfinish(conn);
}

/* Transactions of this database that ended in an error, once every other
 * session has gone (a backend's counts reach the statistics as it exits). */
static long long rollbacks_when_alone(PGconn *conn)
{
	if (!cbt_wait_until(conn, 30000,
			    "SELECT (count(*) = 0)::int FROM pg_stat_activity WHERE datname = "
			    "current_database() AND pid <> pg_backend_pid() AND backend_type = "
			    "'client backend'"))
		CBT_FAILF("other sessions still open after 30 s");
	cbt_exec(conn, "SELECT pg_stat_clear_snapshot()");
	return cbt_query_ll(conn, "SELECT xact_rollback FROM pg_stat_database WHERE datname = "
				  "current_database()");
}

/*
 * The sessions a run holds are left on a server that takes no writes while
 * new sessions reach one that does (a proxy moved on to the new primary, the
 * old sessions still on the demoted one): the run and its heartbeat each
 * open a new session, the lease holds, the run completes once. Before, the
 * heartbeat asked its old session again every beat until its patience ran
 * out and the run ended fenced off.
 */
static void test_sessions_left_on_a_read_only_server_are_replaced(void)
{
	PGconn *conn = cbt_connect(db);
	char log[PATH_MAX], *text;
	pid_t pid;
	int rc;

	fresh_tick(conn);
	snprintf(log, sizeof(log), "%s/dbrestart-left-read-only.log", cbt_tmpdir());
	{
		const char *argv[] = {
			cbt_examples_bin(),   "--db",    db,  "run", "tick", "at=left-read-only",
			"-sleepMs:long=9000", "--lease", "2", NULL
		};

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(conn, 30000,
			    "SELECT count(*) FROM batch_job_execution WHERE status = 'STARTED'"))
		CBT_FAILF("the run did not start within 30 s");
	/* Every session read-only, then new sessions of this database not. */
	cluster_read_only(1);
	new_sessions_writable(1);
	rc = cbt_wait_timeout(pid, 90000);
	new_sessions_writable(0);
	cluster_read_only(0);
	text = cbt_slurp(log, NULL);
	printf("\n    sessions left read-only: exit %d: %s\n", rc, text ? text : "");
	CBT_EQ_LL(rc, 0);
	free(text);
	PQfinish(conn);
	conn = cbt_connect(db);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE NOT released"), 0);
	PQfinish(conn);
}

/*
 * New sessions refused (57P03) until accept_sessions_again: a smart
 * shutdown, held open by the session returned, stands in for a switchover.
 * The refusal's message goes into @p msg. @return the session, or NULL (a
 * failure recorded).
 */
static PGconn *refuse_new_sessions(char *msg, size_t size)
{
	PGconn *hold = reconnect(), *probe;
	int refused = 0;

	if (pg_ctl("stop -m smart -W") != 0) {
		PQfinish(hold);
		return NULL;
	}
	for (double until = cbt_now() + 30; !refused && cbt_now() < until; cbt_sleep_ms(20)) {
		probe = PQconnectdb(db);
		if ((refused = PQstatus(probe) != CONNECTION_OK))
			snprintf(msg, size, "%s", PQerrorMessage(probe));
		PQfinish(probe);
	}
	printf("\n    refused: %s", refused ? msg : "(still accepted after 30 s)");
	if (!refused)
		CBT_FAILF("new sessions were still accepted 30 s into a smart shutdown");
	return hold;
}

/* The switchover's end: the holding session gone, the server up again. */
static void accept_sessions_again(PGconn *hold)
{
	PQfinish(hold);
	restart_cluster();
}

/* lc_messages of the test cluster: German, or the default again. */
static void cluster_messages_german(int on)
{
	PGconn *a = reconnect();

	CBT_EQ_LL(cbt_exec(a, on ? "ALTER SYSTEM SET lc_messages = 'de_DE.UTF-8'" :
				   "ALTER SYSTEM RESET lc_messages"),
		  0);
	cbt_exec(a, "SELECT pg_reload_conf()");
	PQfinish(a);
}

/*
 * A command started while the server refuses sessions for a switchover, the
 * server speaking another language (lc_messages; a Korean shop's server says
 * "데이터베이스 시스템이 중지 중입니다"): it waits for the primary as it does
 * for an English-speaking one, and runs once the server is back. Before, the
 * refusal was recognised by its English words: the command exited 6 at once,
 * no execution, a scheduled instant lost. German stands in for any language:
 * its locale is made here (localedef, Debian's locales) for the server alone
 * (LOCPATH), and a smart shutdown held open by one session stands in for the
 * switchover (new sessions refused, 57P03).
 */
static void test_a_refusal_in_another_language_is_waited_out(void)
{
	const char *host = getenv("CBATCH_TEST_PGHOST");
	char locdir[PATH_MAX], locale[PATH_MAX + 32], log[PATH_MAX], *text = NULL;
	char refusal[1024];
	PGconn *conn = cbt_connect(db), *hold;
	int rc, waiting = 0;
	pid_t pid = -1;

	fresh_tick(conn);
	PQfinish(conn);
	snprintf(locdir, sizeof(locdir), "%s/locale", host ? host : ".");
	snprintf(locale, sizeof(locale), "%s/de_DE.UTF-8", locdir);
	{
		const char *argv[] = { "localedef", "-i", "de_DE", "-f", "UTF-8", locale, NULL };

		mkdir(locdir, 0755);
		if (access(locale, R_OK) != 0 &&
		    cbt_run(argv, out, sizeof(out), errout, sizeof(errout)) != 0) {
			CBT_FAILF("localedef de_DE.UTF-8 failed (Debian's locales package): %s",
				  errout);
			return;
		}
	}
	/* The server finds the locale. */
	snprintf(server_locpath, sizeof(server_locpath), "%s", locdir);
	if (restart_cluster() != 0)
		goto out;
	cluster_messages_german(1);
	if (!(hold = refuse_new_sessions(refusal, sizeof(refusal))))
		goto back;
	/* In German (else this proves nothing). */
	if (strstr(refusal, "shutting down"))
		CBT_FAILF("the server's refusal is in English: are the server's translations "
			  "(postgres-15.mo) installed?");
	snprintf(log, sizeof(log), "%s/dbrestart-localized.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db", db, "run", "tick",
				       "at=localized",     NULL };

		pid = cbt_spawn(argv, log);
	}
	/* It waits (its warning), rather than exiting. */
	for (double until = cbt_now() + 60; !waiting && cbt_now() < until; cbt_sleep_ms(50)) {
		free(text);
		text = cbt_slurp(log, NULL);
		waiting = text && strstr(text, "waiting up to");
		if (!waiting && waitpid(pid, &rc, WNOHANG) == pid) {
			pid = -1;
			break;
		}
	}
	CBT_EQ_LL(waiting, 1);
	accept_sessions_again(hold);
	if (pid > 0) {
		rc = cbt_wait_timeout(pid, 90000);
		free(text);
		text = cbt_slurp(log, NULL);
		printf("\n    localized refusal: exit %d: %s\n", rc, text ? text : "");
		CBT_EQ_LL(rc, 0);
	} else {
		printf("\n    localized refusal: it exited: %s\n", text ? text : "");
	}
back:
	cluster_messages_german(0);
out:
	free(text);
	conn = reconnect();
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  waiting ? 1 : 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), waiting ? 1 : 0);
	PQfinish(conn);
}

/*
 * A run started while no primary takes sessions waits for one as long as its
 * outage budget says (outage.budget, else its lease), the figure it would
 * ride through an outage with once started: here 2 s, so it gives up
 * (exit 6, nothing recorded) long before the default 60 s. Before, it
 * waited 60 s whatever the budget.
 */
static void test_a_run_waits_for_a_primary_as_long_as_its_outage_budget(void)
{
	char refusal[1024], log[PATH_MAX], *text;
	PGconn *conn = cbt_connect(db), *hold;
	double t0;
	int rc;

	fresh_tick(conn);
	PQfinish(conn);
	if (!(hold = refuse_new_sessions(refusal, sizeof(refusal))))
		return;
	snprintf(log, sizeof(log), "%s/dbrestart-budget-wait.log", cbt_tmpdir());
	t0 = cbt_now();
	{
		const char *argv[] = { cbt_examples_bin(),      "--db", db, "run", "tick",
				       "-outage.budget:long=2", NULL };

		rc = cbt_wait_timeout(cbt_spawn(argv, log), 120000);
	}
	t0 = cbt_now() - t0;
	accept_sessions_again(hold);
	text = cbt_slurp(log, NULL);
	printf("\n    budget 2 s: exit %d after %.1f s: %s\n", rc, t0, text ? text : "");
	CBT_EQ_LL(rc, 6);
	CBT_CONTAINS(text ? text : "", "waiting up to 2 s");
	/* 2 s of waiting, a connect attempt or two and a loaded machine. */
	CU_ASSERT(t0 < 40);
	free(text);
	conn = reconnect();
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	PQfinish(conn);
}

/*
 * A scheduler's confirmation of its claim (batch_schedule_launch) goes
 * through and its answer is lost with the node's session (a switchover):
 * asked again on a new session for the same child, the database says it is
 * already launched, and the child runs: the firing ends FINISHED with its
 * execution COMPLETED, one FIRED event and no FAILED_TO_LAUNCH. A deferred
 * trigger holds the first confirmation's commit until the proxy holds the
 * answers, as in the launch case above.
 */
static void test_a_firing_confirmed_with_its_answer_lost_is_launched_once(void)
{
	PGconn *conn = cbt_connect(db), *holder = cbt_connect(db);
	char via[CBT_CONNINFO_MAX + 64], log[PATH_MAX];
	struct proxy px;
	pid_t node;

	fresh_tick(conn);
	CBT_EQ_LL(ex("schedule", "add", "confirm", "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "--overlap", "skip", NULL),
		  0);
	CBT_EQ_LL(cbt_exec(conn,
			   "CREATE SCHEMA testhook; CREATE TABLE testhook.held (firing_id "
			   "bigint); CREATE FUNCTION testhook.hold() RETURNS trigger LANGUAGE "
			   "plpgsql AS $$ BEGIN IF NOT EXISTS (SELECT 1 FROM testhook.held) "
			   "THEN INSERT INTO testhook.held VALUES (NEW.firing_id); PERFORM "
			   "pg_advisory_xact_lock_shared(4242); END IF; RETURN NULL; END $$; "
			   "CREATE CONSTRAINT TRIGGER testhook_hold AFTER UPDATE ON "
			   "batch_schedule_firing DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
			   "WHEN (OLD.status = 'CLAIMED' AND NEW.status = 'LAUNCHED') "
			   "EXECUTE FUNCTION testhook.hold()"),
		  0);
	if (proxy_holding_4242(&px, holder, via, sizeof(via)) < 0) {
		PQfinish(holder);
		PQfinish(conn);
		return;
	}
	snprintf(log, sizeof(log), "%s/dbrestart-confirm-answer-lost.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db", via, "scheduler",
				       "--lease",          "30",   NULL };

		node = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(node > 0);
	lose_the_answer(&px, conn, holder, "batch_schedule_launch",
			"SELECT count(*) FROM testhook.held");
	PQfinish(holder);
	if (!cbt_wait_until(conn, 90000,
			    "SELECT count(*) FROM batch_schedule_firing f JOIN testhook.held h "
			    "USING (firing_id) WHERE f.status = 'FINISHED'"))
		CBT_FAILF("the confirmed firing did not finish within 90 s");
	kill(node, SIGTERM);
	cbt_wait_timeout(node, 60000);
	proxy_stop(&px);
	if (CU_get_number_of_failures() > 0) {
		char *text = cbt_slurp(log, NULL);

		printf("\n    scheduler: %s\n", text ? text : "");
		free(text);
	}
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_schedule_firing f JOIN "
			       "testhook.held h USING (firing_id) JOIN batch_job_execution e "
			       "ON e.job_execution_id = f.job_execution_id WHERE f.exit_code = 0 "
			       "AND e.status = 'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event e JOIN "
				     "testhook.held h USING (firing_id) WHERE e.outcome = 'FIRED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event e JOIN "
				     "testhook.held h USING (firing_id) WHERE e.outcome = "
				     "'FAILED_TO_LAUNCH'"),
		  0);
	PQfinish(conn);
}

/* A POST to serve (the admin token, our origin). @return the status. */
static long serve_post(const struct server *sv, const char *path, const char *token)
{
	char auth[160], origin[64];
	const char *hs[] = { auth, origin, "Content-Type: application/json", NULL };
	struct resp r;
	long st;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%d", sv->port);
	if (http(&r, sv->port, "POST", path, "{}", 2, hs) < 0)
		return -1;
	st = r.status;
	printf("\n    POST %s: %ld %.300s", path, st, r.body ? r.body : "");
	resp_free(&r);
	return st;
}

static long serve_get(const struct server *sv, const char *path)
{
	struct resp r;
	long st;

	if (http(&r, sv->port, "GET", path, NULL, 0, NULL) < 0)
		return -1;
	st = r.status;
	resp_free(&r);
	return st;
}

/*
 * serve's pooled session is left on a server that takes no writes while new
 * sessions reach one that does (the proxy moved on to the new primary): an
 * action meanwhile answers 503 (try again), not 500, and once new sessions
 * can write the next action is done. Before, the pool kept the read-only
 * session and every action failed (500) until serve was restarted.
 */
static void test_serve_keeps_no_session_that_takes_no_writes(void)
{
	static const char token[] = "t0ken-for-the-dbrestart-test";
	const char *path = "/api/v1/schedules/ro-pool/pause";
	PGconn *conn = cbt_connect(db);
	struct server sv = { .pid = -1 };
	char token_file[PATH_MAX];

	fresh_tick(conn);
	if (ex("schedule", "add", "ro-pool", "--cron", "0 12 1 1 *", "--job", "tick",
	       "at={fire_utc}", NULL) != 0)
		CBT_FAILF("schedule add: %s", errout);
	snprintf(token_file, sizeof(token_file), "%s/dbrestart-token-%d", cbt_tmpdir(),
		 (int)getpid());
	cbt_write_str(token_file, token);
	chmod(token_file, 0600);
	/* One pooled session: every request takes the same one while it is kept. */
	if (server_start(&sv, db,
			 (const char *const[]){ "--admin-token-file", token_file, "--pool", "1",
						NULL }) < 0) {
		unlink(token_file);
		PQfinish(conn);
		return;
	}
	CBT_EQ_LL(serve_post(&sv, path, token), 200);
	cluster_read_only(1);
	/* A read goes on; the session it used now says it takes no writes. */
	CBT_EQ_LL(serve_get(&sv, "/api/v1/schedules/ro-pool"), 200);
	CBT_EQ_LL(serve_post(&sv, "/api/v1/schedules/ro-pool/resume", token), 503);
	new_sessions_writable(1);
	CBT_EQ_LL(serve_post(&sv, "/api/v1/schedules/ro-pool/resume", token), 200);
	new_sessions_writable(0);
	cluster_read_only(0);
	CBT_EQ_LL(server_stop(&sv), 0);
	unlink(token_file);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule WHERE schedule_name = "
				     "'ro-pool' AND NOT paused"),
		  1);
	PQfinish(conn);
}

/*
 * A command whose first connection is had but whose pooler check cannot
 * open its second (the server going away between the two, or full): it
 * waits as for a lost session and runs once the second is had. (A stressed
 * CI lost an every-second instant to a switchover met there: exit 1, no
 * execution, nothing to restart.) A role limited to one connection stands
 * in for the server refusing the second.
 */
static void test_a_refused_pooler_probe_is_waited_out(void)
{
	PGconn *conn = cbt_connect(db);
	char limited[CBT_CONNINFO_MAX + 80], log[PATH_MAX], *text = NULL;
	pid_t pid;
	int rc;

	fresh_tick(conn);
	CBT_EQ_LL(cbt_exec(conn, "DROP ROLE IF EXISTS cbt_one; CREATE ROLE cbt_one LOGIN "
				 "CONNECTION LIMIT 1; GRANT ALL ON SCHEMA public TO cbt_one; "
				 "GRANT ALL ON ALL TABLES IN SCHEMA public TO cbt_one; "
				 "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO cbt_one"),
		  0);
	snprintf(limited, sizeof(limited), "%s user=cbt_one", db);
	snprintf(log, sizeof(log), "%s/dbrestart-probe.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db", limited, "run", "tick",
				       "at=probe",         NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	for (int i = 0; i < 300 && !(text && strstr(text, "waiting up to")); i++) {
		free(text);
		cbt_sleep_ms(100);
		text = cbt_slurp(log, NULL);
	}
	CBT_CONTAINS(text, "second connection");
	free(text);
	cbt_exec(conn, "ALTER ROLE cbt_one CONNECTION LIMIT -1");
	rc = cbt_wait_timeout(pid, 90000);
	text = cbt_slurp(log, NULL);
	printf("\n    the pooler probe refused, then allowed: exit %d: %s\n", rc, text ? text : "");
	free(text);
	CBT_EQ_LL(rc, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	cbt_exec(conn, "DROP OWNED BY cbt_one; DROP ROLE cbt_one");
	PQfinish(conn);
}

enum launch_cut {
	CUT_LOCK,
	CUT_LAUNCH,
	CUT_START,
	CUT_AFTER_START,
	CUT_HEARTBEAT,
	CUT_FINISH
};

/*
 * A run whose session is ended in the middle of its launch (taking its lock;
 * creating its execution; starting it; reading its context once started):
 * it rides through as a run does, with one execution, completed, and no
 * lock left behind. Also a database that refuses connections just after the
 * start, when the run opens its heartbeat connection. Before, it ended at once with no execution (the lock
 * or launch cut: the scheduled instant lost) or FAILED (the start cut:
 * never restarted, not being a database loss).
 */
static void launch_cut_case(enum launch_cut cut, int read_only)
{
	static const char *const names[] = { "lock",        "launch",    "start",
					     "after-start", "heartbeat", "finish" };
	PGconn *conn = cbt_connect(db), *holder = cbt_connect(db), *table = NULL;
	char log[PATH_MAX], at[48], *text;
	long long before = 0;
	pid_t pid;
	int rc;

	fresh_tick(conn);
	/* The start (the verdict) held by a trigger that waits on the test's
	 * advisory lock. */
#define HOLD_HOOK(from, to)                                                                        \
	"CREATE SCHEMA testhook; CREATE FUNCTION testhook.hold() RETURNS trigger "                 \
	"LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(4242); "                \
	"RETURN NEW; END $$; CREATE TRIGGER testhook_hold BEFORE UPDATE ON "                       \
	"batch_job_execution FOR EACH ROW WHEN (OLD.status = '" from "' AND NEW.status = '" to     \
	"') EXECUTE FUNCTION testhook.hold()"
	CBT_EQ_LL(cbt_exec(conn, cut == CUT_FINISH ? HOLD_HOOK("STARTED", "COMPLETED") :
						     HOLD_HOOK("STARTING", "STARTED")),
		  0);
#undef HOLD_HOOK
	switch (cut) {
	case CUT_LOCK:
		CBT_EQ_LL(cbt_exec(holder, "BEGIN; LOCK TABLE batch_lock IN EXCLUSIVE MODE"), 0);
		break;
	case CUT_LAUNCH:
		CBT_EQ_LL(
			cbt_exec(holder, "BEGIN; LOCK TABLE batch_job_instance IN EXCLUSIVE MODE"),
			0);
		break;
	default:
		CBT_EQ_LL(cbt_exec(holder, "SELECT pg_advisory_lock(4242)"), 0);
	}
	snprintf(log, sizeof(log), "%s/dbrestart-cut-%s.log", cbt_tmpdir(), names[cut]);
	snprintf(at, sizeof(at), "at=cut-%s%s", names[cut], read_only ? "-read-only" : "");
	{
		const char *argv[] = { cbt_examples_bin(), "--db", db, "run", "tick", at, NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(wait_blocked_on(conn, cut == CUT_LOCK   ? "batch_lock_acquire" :
					      cut == CUT_LAUNCH ? "batch_job_instance" :
					      cut == CUT_FINISH ? "batch_steps_end_with_job" :
								  "STARTED"));
	if (cut == CUT_AFTER_START) {
		/* The start goes through; the context read after it is cut. */
		table = cbt_connect(db);
		CBT_EQ_LL(cbt_exec(table, "BEGIN; LOCK TABLE batch_job_execution_context IN "
					  "ACCESS EXCLUSIVE MODE"),
			  0);
		cbt_exec(holder, "SELECT pg_advisory_unlock(4242)");
		CU_ASSERT_FATAL(wait_blocked_on(conn, "batch_job_execution_context"));
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE "
					     "status = 'STARTED'"),
			  1);
	}
	if (cut == CUT_HEARTBEAT) {
		/* Started, its heartbeat connection refused until allowed again. */
		char *log_text = NULL;

		allow_connections(conn, 0);
		cbt_exec(holder, "SELECT pg_advisory_unlock_all()");
		for (int i = 0; i < 600 && !(log_text && strstr(log_text, "heartbeat connection"));
		     i++) {
			free(log_text);
			cbt_sleep_ms(100);
			log_text = cbt_slurp(log, NULL);
		}
		CBT_CONTAINS(log_text,
			     "the database was lost while opening its heartbeat connection");
		free(log_text);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE "
					     "status = 'STARTED'"),
			  1);
		CU_ASSERT_FATAL(waitpid(pid, NULL, WNOHANG) == 0);
		allow_connections(conn, 1);
	} else if (read_only) {
		/* Cut, and the server reached again takes no writes for a while
		 * (a demoted primary behind one address): the run waits with its
		 * backoff, not asking again at once, and goes on once it does. */
		cbt_exec(conn, "SELECT pg_stat_clear_snapshot()");
		before = cbt_query_ll(conn, "SELECT xact_rollback FROM pg_stat_database WHERE "
					    "datname = current_database()");
		cluster_read_only(1);
		CBT_EQ_LL(end_blocked(conn), 1);
		cbt_exec(holder,
			 cut == CUT_LAUNCH ? "ROLLBACK" : "SELECT pg_advisory_unlock_all()");
		/* The window under test: 3 s of a server that takes no writes. */
		cbt_sleep_ms(3000);
		/* Still waiting (the server made writable again either way, so
		 * that a failure here leaves the cases after it a primary). */
		rc = waitpid(pid, NULL, WNOHANG) == 0;
		cluster_read_only(0);
		CU_ASSERT_FATAL(rc);
	} else {
		CBT_EQ_LL(end_blocked(conn), 1);
	}
	if (table) {
		cbt_exec(table, "ROLLBACK");
		PQfinish(table);
	}
	cbt_exec(holder, cut == CUT_LOCK || cut == CUT_LAUNCH ? "ROLLBACK" :
								"SELECT pg_advisory_unlock_all()");
	PQfinish(holder);
	rc = cbt_wait_timeout(pid, 90000);
	text = cbt_slurp(log, NULL);
	printf("\n    cut while %s: exit %d: %s\n", names[cut], rc, text ? text : "");
	CBT_EQ_LL(rc, 0);
	free(text);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE NOT released"), 0);
	if (read_only) {
		long long tries = rollbacks_when_alone(conn) - before;

		printf("    failed transactions meanwhile: %lld\n", tries);
		/* Backoff 0.2 s doubling to 2 s: a handful in 3 s, not hundreds. */
		CU_ASSERT(tries >= 1);
		CU_ASSERT(tries <= 60);
	}
	cbt_exec(conn, "DROP SCHEMA testhook CASCADE");
	PQfinish(conn);
}

static void test_a_session_ended_while_taking_the_lock_is_ridden_through(void)
{
	launch_cut_case(CUT_LOCK, 0);
}

static void test_a_session_ended_while_launching_is_ridden_through(void)
{
	launch_cut_case(CUT_LAUNCH, 0);
}

static void test_a_session_ended_while_starting_is_ridden_through(void)
{
	launch_cut_case(CUT_START, 0);
}

static void test_a_session_ended_just_after_the_start_is_ridden_through(void)
{
	launch_cut_case(CUT_AFTER_START, 0);
}

static void test_a_heartbeat_connection_refused_at_the_start_is_waited_out(void)
{
	launch_cut_case(CUT_HEARTBEAT, 0);
}

static void test_a_session_ended_writing_the_verdict_is_ridden_through(void)
{
	launch_cut_case(CUT_FINISH, 0);
}

static void test_a_read_only_server_after_a_cut_launch_is_waited_out(void)
{
	launch_cut_case(CUT_LAUNCH, 1);
}

static void test_a_read_only_server_after_a_cut_start_is_waited_out(void)
{
	launch_cut_case(CUT_START, 1);
}

static void test_a_read_only_server_after_a_cut_verdict_is_waited_out(void)
{
	launch_cut_case(CUT_FINISH, 1);
}

/*
 * A run's session ended as it creates its step, and the server it reaches
 * again takes no writes (a demoted primary behind one address, before the
 * proxy moves on): the run waits with its backoff, a few tries in the
 * window, and creates the step once writes are taken again. Before, the
 * retry of a step's creation ran again at once for as long as the session
 * refused writes: thousands of failed statements a second, with no budget.
 */
static void test_a_read_only_server_after_a_cut_is_waited_out_not_spun_on(void)
{
	PGconn *conn = cbt_connect(db), *holder = cbt_connect(db);
	char log[PATH_MAX], *text;
	long long before, tries;
	pid_t pid;
	int rc;

	fresh_tick(conn);
	/* The step's creation held once by a trigger on the test's advisory lock. */
	CBT_EQ_LL(
		cbt_exec(conn,
			 "CREATE SCHEMA testhook; CREATE SEQUENCE testhook.n; "
			 "CREATE FUNCTION testhook.hold() RETURNS trigger LANGUAGE plpgsql AS $$ "
			 "BEGIN IF nextval('testhook.n') = 1 THEN "
			 "PERFORM pg_advisory_xact_lock_shared(4243); END IF; RETURN NEW; END $$; "
			 "CREATE TRIGGER testhook_hold BEFORE INSERT ON batch_step_execution "
			 "FOR EACH ROW EXECUTE FUNCTION testhook.hold()"),
		0);
	CBT_EQ_LL(cbt_exec(holder, "SELECT pg_advisory_lock(4243)"), 0);
	snprintf(log, sizeof(log), "%s/dbrestart-read-only.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db",    db,   "run", "tick",
				       "at=read-only",     "--lease", "30", NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(wait_blocked_on(conn, "batch_step_execution"));
	cbt_exec(conn, "SELECT pg_stat_clear_snapshot()");
	before = cbt_query_ll(conn, "SELECT xact_rollback FROM pg_stat_database WHERE datname = "
				    "current_database()");
	cluster_read_only(1);
	CBT_EQ_LL(end_blocked(conn), 1);
	cbt_exec(holder, "SELECT pg_advisory_unlock_all()");
	PQfinish(holder);
	/* The window under test: 3 s of a server that takes no writes. */
	cbt_sleep_ms(3000);
	/* Still waiting (writable again first: the cases after this one need a
	 * primary whatever happened here). */
	rc = waitpid(pid, NULL, WNOHANG) == 0;
	cluster_read_only(0);
	CU_ASSERT_FATAL(rc);
	rc = cbt_wait_timeout(pid, 90000);
	text = cbt_slurp(log, NULL);
	printf("\n    cut, then read-only for 3 s: exit %d: %s\n", rc, text ? text : "");
	CBT_EQ_LL(rc, 0);
	free(text);
	tries = rollbacks_when_alone(conn) - before;
	printf("    failed transactions meanwhile: %lld\n", tries);
	/* Backoff 0.2 s doubling to 2 s: a handful in 3 s, for the run and its
	 * heartbeat; not hundreds. */
	CU_ASSERT(tries >= 1);
	CU_ASSERT(tries <= 60);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	cbt_exec(conn, "DROP SCHEMA testhook CASCADE");
	PQfinish(conn);
}

/*
 * A scheduler runner (`scheduler --runners 1`) whose firing rides through a
 * restart keeps the connection it reconnected (the same libpq connection, a
 * new server session): the firings after it run on it. The pooler check of a
 * kept connection compares its session with the one it found exclusive
 * before; a reconnect must start that check over, not read as a pooler
 * moving the session (CB003, every later firing exit 1).
 */
static void test_a_runner_s_next_firings_run_after_it_rode_through(void)
{
	PGconn *conn = cbt_connect(db);
	char log[PATH_MAX];
	long long exec, last;
	pid_t node;

	fresh_tick(conn);
	CBT_EQ_LL(ex("schedule", "add", "through", "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "-sleepMs:long=3000", "--overlap", "skip", NULL),
		  0);
	snprintf(log, sizeof(log), "%s/dbrestart-runner.log", cbt_tmpdir());
	{
		const char *argv[] = { cbt_examples_bin(), "--db",      db,
				       "scheduler",        "--runners", "1",
				       "--lease",          "10",        NULL };

		node = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(node > 0);
	/* A firing finished (the runner's connection passed its check), the
	 * next one running. */
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) FILTER (WHERE status = 'FINISHED' AND exit_code = 0) "
			    ">= 1 AND count(*) FILTER (WHERE status = 'LAUNCHED') = 1)::int FROM "
			    "batch_schedule_firing") ||
	    !cbt_wait_until(conn, 30000,
			    "SELECT count(*)::int FROM batch_job_execution WHERE status = "
			    "'STARTED'"))
		CBT_FAILF("no second firing running within 90 s");
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution WHERE "
				  "status = 'STARTED'");
	last = cbt_query_ll(conn, "SELECT max(firing_id) FROM batch_schedule_firing");
	PQfinish(conn);

	CU_ASSERT_FATAL(restart_cluster() == 0);
	conn = reconnect();
	/* The run rode through; then two more firings in the same runner. */
	if (!cbt_wait_untilp(conn, 90000,
			     "SELECT (count(*) >= 2)::int FROM batch_schedule_firing WHERE "
			     "firing_id > $1 AND status = 'FINISHED'",
			     "lld", last))
		CBT_FAILF("no two firings finished within 90 s of the restart");
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'COMPLETED'",
				"lld", exec),
		  1);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE firing_id > $1 AND "
			      "status = 'FINISHED' AND exit_code IS DISTINCT FROM 0",
			      "lld", last),
		0);
	if (CU_get_number_of_failures() > 0) {
		char *text = cbt_slurp(log, NULL);

		cbt_print_rows(conn, "firings (id, status, exit, message)",
			       "SELECT firing_id, status, exit_code, message FROM "
			       "batch_schedule_firing ORDER BY 1");
		printf("\n    the node's log: %s\n", text ? text : "");
		free(text);
	}
	kill(node, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(node, 60000), 0);
	PQfinish(conn);
}

/*
 * Two scheduler nodes (lease 4 s, one job at a time each) and an
 * every-second schedule whose runs take 1.5 s; the database server stops for
 * 8 s, twice the lease. Every node was cut off as long as the others:
 * the first back must not count the others gone (their firings ORPHANED, an
 * instant's run left without its end) for a silence it shared. Afterwards
 * every instant from before the outage to after it ran once, to completion,
 * and no firing was orphaned.
 */
static void test_an_outage_longer_than_the_nodes_lease_orphans_nothing(void)
{
	PGconn *conn = cbt_connect(db);
	char log[2][PATH_MAX];
	long long from, to;
	pid_t node[2];
	int rc[2];

	fresh_tick(conn);
	CBT_EQ_LL(ex("schedule", "add", "shared-outage", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=1500", "--overlap", "allow", NULL),
		  0);
	for (int i = 0; i < 2; i++) {
		const char *argv[] = { cbt_examples_bin(), "--db", db,  "scheduler", "--lease", "4",
				       "--max-running",    "1",    NULL };

		snprintf(log[i], sizeof(log[i]), "%s/dbrestart-shared-outage-%d.log", cbt_tmpdir(),
			 i + 1);
		node[i] = cbt_spawn(argv, log[i]);
		CU_ASSERT_FATAL(node[i] > 0);
	}
	/* Both nodes running a firing (one job at a time each, 1.5 s a run for
	 * an instant a second: both are kept busy). */
	if (!cbt_wait_until(
		    conn, 60000,
		    "SELECT (count(DISTINCT node_id) FILTER (WHERE status = 'LAUNCHED') = 2 "
		    "AND count(*) FILTER (WHERE status = 'FINISHED') >= 2)::int FROM "
		    "batch_schedule_firing"))
		CBT_FAILF("the two nodes did not both run a firing within 60 s");
	/* The window starts with the instants in flight when it goes. */
	from = cbt_query_ll(conn, "SELECT extract(epoch FROM min(fire_time))::bigint FROM "
				  "batch_schedule_firing WHERE status IN ('CLAIMED', 'LAUNCHED')");
	PQfinish(conn);
	/* Node 2 frozen for 1.5 s as the outage begins (a busy machine, well
	 * within its lease): it notices the loss later than node 1, so the two
	 * are not back at the same moment. */
	kill(node[1], SIGSTOP);
	CU_ASSERT_FATAL(pg_ctl("stop -m fast -w -t 60") == 0);
	cbt_sleep_ms(1500);
	kill(node[1], SIGCONT);
	cbt_sleep_ms(6500);
	CU_ASSERT_FATAL(pg_ctl("start -w -t 60") == 0);
	conn = reconnect();
	/* Both nodes back (a heartbeat on a new session each), then 3 s of
	 * instants fired after it. */
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) = 2)::int FROM batch_scheduler_node WHERE "
			    "session_since IS NOT NULL AND heartbeat_at > clock_timestamp() - "
			    "interval '2 s'"))
		CBT_FAILF("the nodes did not both come back within 60 s");
	to = cbt_query_ll(conn, "SELECT extract(epoch FROM batch_now())::bigint + 3");
	if (!cbt_wait_untilp(
		    conn, 90000,
		    "SELECT (count(*) FILTER (WHERE fire_time BETWEEN to_timestamp($1) AND "
		    "to_timestamp($2) AND status <> 'CLAIMED' AND status <> 'LAUNCHED') = "
		    "$2::bigint - $1::bigint + 1)::int FROM batch_schedule_firing",
		    "lld lld", from, to))
		CBT_FAILF("the instants of the window did not all end within 90 s");
	CBT_EQ_LL(ex("schedule", "pause", "shared-outage", NULL), 0);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) = 0)::int FROM batch_schedule_firing WHERE status IN "
			    "('CLAIMED', 'LAUNCHED', 'QUEUED')"))
		CBT_FAILF("firings still open 60 s after the pause");
	for (int i = 0; i < 2; i++)
		kill(node[i], SIGTERM);
	for (int i = 0; i < 2; i++)
		rc[i] = cbt_wait_timeout(node[i], 60000);
	CBT_EQ_LL(rc[0], 0);
	CBT_EQ_LL(rc[1], 0);
	/* Never counted gone, even for a moment (a firing's end overwrites it). */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event WHERE outcome = "
				     "'ORPHANED'"),
		  0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE fire_time BETWEEN "
			      "to_timestamp($1) AND to_timestamp($2) AND status = 'FINISHED' AND "
			      "exit_code = 0 AND exit_status = 'COMPLETED'",
			      "lld lld", from, to),
		to - from + 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT fired_for FROM tick_log GROUP "
				     "BY fired_for HAVING count(*) > 1) d"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status <> "
				     "'COMPLETED' OR restart_of IS NOT NULL"),
		  0);
	if (CU_get_number_of_failures() > 0) {
		cbt_print_rows(conn,
			       "firings not FINISHED with 0 (id, node, status, exit, message)",
			       "SELECT firing_id, node_id, status, exit_code, left(message, 160) "
			       "FROM batch_schedule_firing WHERE status <> 'FINISHED' OR exit_code "
			       "IS DISTINCT FROM 0 ORDER BY 1");
		for (int i = 0; i < 2; i++) {
			char *text = cbt_slurp(log[i], NULL);

			printf("\n    node %d's log: %s\n", i + 1, text ? text : "");
			free(text);
		}
	}
	PQfinish(conn);
}

/*
 * A run that a scheduler node launched (CBATCH_SCHEDULER_NODE in its
 * environment) meets a database that went away as it started: its node had
 * the repository a moment before, so the refusal is an outage, waited out
 * within the run's budget (one execution, COMPLETED, exit 0), where a run
 * started by hand on a server that is not there exits at once.
 */
static void test_a_run_launched_by_a_node_waits_for_the_database_it_just_had(void)
{
	PGconn *conn = cbt_connect(db);
	char log[PATH_MAX], *text = NULL;
	double t0;
	pid_t pid;
	int rc, waiting = 0;

	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "tick", "--reset", NULL), 0);
	PQfinish(conn);
	CU_ASSERT_FATAL(pg_ctl("stop -m fast -w -t 60") == 0);
	/* By hand: not waited for. */
	t0 = cbt_now();
	rc = ex("run", "tick", "at=by-hand", "-sleepMs:long=100", NULL);
	CBT_EQ_LL(rc, 6);
	CU_ASSERT(cbt_now() - t0 < 20.0); /* not the 60 s a wait would take */
	snprintf(log, sizeof(log), "%s/dbrestart-node-child.log", cbt_tmpdir());
	setenv("CBATCH_SCHEDULER_NODE", "test-node", 1);
	{
		const char *argv[] = {
			cbt_examples_bin(),  "--db",    db,   "run", "tick", "at=launched",
			"-sleepMs:long=100", "--lease", "30", NULL
		};

		pid = cbt_spawn(argv, log);
	}
	unsetenv("CBATCH_SCHEDULER_NODE");
	CU_ASSERT_FATAL(pid > 0);
	/* It says it waits (and is still there), then the server is back. */
	for (t0 = cbt_now(); !waiting && cbt_now() - t0 < 20; cbt_sleep_ms(50)) {
		free(text);
		text = cbt_slurp(log, NULL);
		waiting = text && strstr(text, "no read-write primary just now") != NULL;
	}
	free(text);
	CU_ASSERT(waiting);
	CBT_EQ_LL(waitpid(pid, NULL, WNOHANG), 0);
	CU_ASSERT_FATAL(pg_ctl("start -w -t 60") == 0);
	rc = cbt_wait_timeout(pid, 60000);
	text = cbt_slurp(log, NULL);
	if (rc != 0)
		printf("\n    the run's output: %s\n", text ? text : "");
	free(text);
	CBT_EQ_LL(rc, 0);
	conn = reconnect();
	CBT_EQ_LL(
		cbt_query_ll(
			conn,
			"SELECT count(*) FROM batch_job_execution e JOIN "
			"batch_job_execution_params p USING (job_execution_id) WHERE "
			"p.parameter_name = 'at' AND p.parameter_value = 'launched' AND e.status = "
			"'COMPLETED'"),
		1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution e JOIN "
				     "batch_job_execution_params p USING (job_execution_id) WHERE "
				     "p.parameter_name = 'at' AND p.parameter_value = 'by-hand'"),
		  0);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "a run launched by a node waits for the database it just had",
	  test_a_run_launched_by_a_node_waits_for_the_database_it_just_had },
	{ "an outage longer than the nodes' lease orphans nothing",
	  test_an_outage_longer_than_the_nodes_lease_orphans_nothing },
	{ "database restart mid-run is ridden through exactly once",
	  test_database_restart_mid_run_is_ridden_through_exactly_once },
	{ "a runner's next firings run after it rode through",
	  test_a_runner_s_next_firings_run_after_it_rode_through },
	{ "a session ended during the startup checks is waited out",
	  test_a_session_ended_during_the_startup_checks_is_waited_out },
	{ "a session ended while taking the lock is ridden through",
	  test_a_session_ended_while_taking_the_lock_is_ridden_through },
	{ "a session ended while launching is ridden through",
	  test_a_session_ended_while_launching_is_ridden_through },
	{ "a session ended while starting is ridden through",
	  test_a_session_ended_while_starting_is_ridden_through },
	{ "a session ended just after the start is ridden through",
	  test_a_session_ended_just_after_the_start_is_ridden_through },
	{ "a heartbeat connection refused at the start is waited out",
	  test_a_heartbeat_connection_refused_at_the_start_is_waited_out },
	{ "a session ended writing the verdict is ridden through",
	  test_a_session_ended_writing_the_verdict_is_ridden_through },
	{ "a read-only server after a cut launch is waited out",
	  test_a_read_only_server_after_a_cut_launch_is_waited_out },
	{ "a read-only server after a cut start is waited out",
	  test_a_read_only_server_after_a_cut_start_is_waited_out },
	{ "a read-only server after a cut verdict is waited out",
	  test_a_read_only_server_after_a_cut_verdict_is_waited_out },
	{ "outage within the budget is ridden through",
	  test_outage_within_the_budget_is_ridden_through },
	{ "a read-only server after a cut is waited out, not spun on",
	  test_a_read_only_server_after_a_cut_is_waited_out_not_spun_on },
	{ "sessions left on a read-only server are replaced",
	  test_sessions_left_on_a_read_only_server_are_replaced },
	{ "a refused pooler probe is waited out", test_a_refused_pooler_probe_is_waited_out },
	{ "a launch committed with its answer lost is adopted",
	  test_a_launch_committed_with_its_answer_lost_is_adopted },
	{ "a firing confirmed with its answer lost is launched once",
	  test_a_firing_confirmed_with_its_answer_lost_is_launched_once },
	{ "a run waits for a primary as long as its outage budget",
	  test_a_run_waits_for_a_primary_as_long_as_its_outage_budget },
	{ "a refusal in another language is waited out",
	  test_a_refusal_in_another_language_is_waited_out },
	{ "serve keeps no session that takes no writes",
	  test_serve_keeps_no_session_that_takes_no_writes },
	{ "worker waits without spinning while no primary",
	  test_worker_waits_without_spinning_while_no_primary },
	{ "outage past the budget ends DATABASE_LOST with its steps",
	  test_outage_past_the_budget_ends_database_lost_with_its_steps },
	{ "outage past the lease says the execution is left STARTED",
	  test_outage_past_the_lease_says_the_execution_is_left_started },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("dbrestart", init, clean, tests);
}
