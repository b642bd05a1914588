/*
 * A run rides through what the database's operators do (issue 26; DESIGN.md,
 * guarantee 10): against a highly available PostgreSQL (scripts/ha-cluster.sh:
 * etcd, three Patroni members in synchronous mode, HAProxy), jobs run through a
 * planned switchover and a crash of the primary's node, and must go on as if
 * nothing happened:
 *
 *  - plain run through a switchover: `run ledger` on the multi-host conninfo
 *    (target_session_attrs=read-write), throttled so that it is mid-run, the
 *    switchover once it has committed a chunk: exit 0, one job execution,
 *    COMPLETED, every account posted exactly once (an audit trigger logs every
 *    committed write of ledger and account: one INSERT per account, no
 *    UPDATE, one processed flip per account), the lock's fencing token never
 *    decreases (a trigger logs every write of batch_lock), no step execution
 *    without an end time;
 *  - the same through a crash of the primary's node (kill-primary);
 *  - a partitioned run (ledger_partitioned, no thread of its own, two
 *    `worker` processes) through a switchover: all three exit 0, data exact;
 *  - an every-second schedule on two scheduler nodes across a switchover:
 *    every instant of the window claimed and run once, COMPLETED, no restart;
 *  - the plain run through HAProxy (the proxy's conninfo) across a switchover.
 *
 * Each case prints the outage twice: as the cluster script's probe saw it
 * (the longest gap between its commits, every 50 ms) and as the job saw it
 * (from the last commit of the job before the event to its first after).
 *
 * The cluster is the `ha` fixture's (tests/CMakeLists.txt): ha.start and
 * ha.stop around the cases, its directory in CBATCH_TEST_HA_DIR. The cases
 * share it and change its leader, so they run one at a time (RESOURCE_LOCK
 * cbatch_ha); each first heals it (every member up, streaming, a synchronous standby)
 * and makes a database of its own, with the repository schema made through
 * the multi-host conninfo (`schema init`). Every process a case starts is
 * killed by the case's teardown if it is still running.
 *
 * Without patroni, etcd or haproxy, --list exits 77 and ctest shows the
 * program as skipped.
 */
#include "cbtest.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROWS         10000
#define ROWS_TEXT    "10000"
#define JOB_WAIT_MS  60000 /* a run ends within this, or the case fails (and is killed) */
#define MAX_CHILDREN 8

static char base_ci[512];               /* multi-host, dbname=postgres */
static char proxy_ci[512];              /* HAProxy, dbname=postgres */
static char db[CBT_CONNINFO_MAX];       /* this case's database, multi-host */
static char db_proxy[CBT_CONNINFO_MAX]; /* the same through HAProxy */
static char out[65536], errout[65536];
static pid_t children[MAX_CHILDREN];
static double event_seconds; /* how long the last switchover or crash took, end to end */

/* ---- the cluster ----------------------------------------------------------- */

static const char *ha_dir(void)
{
	const char *d = getenv("CBATCH_TEST_HA_DIR");

	return d && *d ? d : NULL;
}

/* Run scripts/ha-cluster.sh CMD DIR [OPT]; its stdout in out, stderr in errout. */
static int cluster(const char *cmd, const char *opt)
{
	char script[4096];
	const char *argv[] = { "bash", script, cmd, ha_dir(), opt, NULL };

	snprintf(script, sizeof(script), "%s/scripts/ha-cluster.sh", cbt_source_dir());
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* The first line of out, without its newline. */
static void first_line(char *dst, size_t size)
{
	size_t n = strcspn(out, "\n");

	if (n >= size)
		n = size - 1;
	memcpy(dst, out, n);
	dst[n] = '\0';
}

/* The cluster script's "outage: S s" line, or "?". */
static void outage_of(char *dst, size_t size)
{
	const char *p = strstr(out, "outage: ");
	size_t n;

	if (!p) {
		snprintf(dst, size, "?");
		return;
	}
	p += strlen("outage: ");
	n = strcspn(p, " \n");
	snprintf(dst, size, "%.*s", (int)n, p);
}

/* A connection, retried for up to @p ms (the cluster may be settling). */
static PGconn *connect_retry(const char *conninfo, int ms)
{
	double deadline = cbt_now() + ms / 1000.0;

	for (;;) {
		PGconn *c = PQconnectdb(conninfo);

		if (PQstatus(c) == CONNECTION_OK)
			return c;
		PQfinish(c);
		if (cbt_now() > deadline)
			break;
		cbt_sleep_ms(200);
	}
	return cbt_connect(conninfo); /* fails loudly */
}

/* Poll @p sql (an integer query) every 100 ms until it is positive: 1, or 0
 * after @p ms. Errors are retried, not recorded (the cluster may be moving). */
static int wait_true(PGconn *conn, int ms, const char *sql)
{
	double deadline = cbt_now() + ms / 1000.0;

	do {
		PGresult *res = PQexec(conn, sql);
		int ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			 atoll(PQgetvalue(res, 0, 0)) > 0;

		PQclear(res);
		if (ok)
			return 1;
		cbt_sleep_ms(100);
	} while (cbt_now() < deadline);
	return 0;
}

/* ---- children -------------------------------------------------------------- */

static pid_t spawn(const char *conninfo, const char *log, const char *const *args)
{
	pid_t pid = cbt_examples_spawn(NULL, conninfo, log, args);

	for (int i = 0; pid > 0 && i < MAX_CHILDREN; i++) {
		if (!children[i]) {
			children[i] = pid;
			break;
		}
	}
	return pid;
}
#define SPAWN(ci, log, ...) spawn((ci), (log), (const char *const[]){ __VA_ARGS__, NULL })

/* Wait for a child as cbt_wait_timeout does (killed on timeout); forget it. */
static int wait_child(pid_t pid, int ms)
{
	int rc = cbt_wait_timeout(pid, ms);

	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == pid)
			children[i] = 0;
	return rc;
}

/* Teardown: no process of a case outlives it, whatever failed. */
static void kill_children(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
			fprintf(stderr, "    killed child %ld, left running by the case\n",
				(long)children[i]);
		}
		children[i] = 0;
	}
}

static int ex_on(const char *conninfo, const char *const *args)
{
	return cbt_examples_run(NULL, conninfo, args, out, sizeof(out), errout, sizeof(errout));
}
#define EX(ci, ...) ex_on((ci), (const char *const[]){ __VA_ARGS__, NULL })

/* A command that must succeed for the case to mean anything: fatal, with its
 * output, if it does not. */
#define EX_OK(ci, ...)                                                                             \
	do {                                                                                       \
		int ex_rc = EX((ci), __VA_ARGS__);                                                 \
		if (ex_rc != 0)                                                                    \
			CBT_FAILF("exit %d: %s%s", ex_rc, out, errout);                            \
		CU_ASSERT_FATAL(ex_rc == 0);                                                       \
	} while (0)

static void log_path(char *buf, size_t size, const char *what)
{
	snprintf(buf, size, "%s/ha-%d-%s.log", cbt_tmpdir(), (int)getpid(), what);
}

/* Print the end of a child's log (what it said when it failed). */
static void print_log(const char *title, const char *path)
{
	size_t len = 0;
	char *text = cbt_slurp(path, &len);
	const char *from = text;

	if (text && len > 3000)
		from = text + len - 3000;
	printf("\n    ---- %s (%s)%s\n%s", title, path, from != text ? ", its end" : "",
	       text ? from : "(no log)\n");
	free(text);
}

/* ---- a case's database ----------------------------------------------------- */

/*
 * Heal the cluster, make a database for @p name and its repository schema
 * through the multi-host conninfo, and put the audit triggers in place.
 * Returns the test's connection to it (fatal on failure).
 */
static PGconn *setup(const char *name, const char *example)
{
	char sql[256], dbname[64];
	PGconn *admin, *conn;
	int rc;

	CU_ASSERT_FATAL(ha_dir() != NULL);
	rc = cluster("heal", NULL);
	if (rc != 0)
		CBT_FAILF("the cluster did not heal (exit %d): %s", rc, errout);
	CU_ASSERT_FATAL(rc == 0);
	CU_ASSERT_FATAL(cluster("conninfo", "--multi-host") == 0);
	first_line(base_ci, sizeof(base_ci));
	CU_ASSERT_FATAL(cluster("conninfo", "--proxy") == 0);
	first_line(proxy_ci, sizeof(proxy_ci));

	snprintf(dbname, sizeof(dbname), "ha_%s_%d", name, (int)getpid());
	admin = connect_retry(base_ci, 30000);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
	cbt_exec(admin, sql);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
	CU_ASSERT_FATAL(cbt_exec(admin, sql) == 0);
	PQfinish(admin);
	/* libpq stops at the first host that refuses the connection (a replica
	 * that has not replayed the CREATE DATABASE yet): wait until they all
	 * have it. */
	rc = cluster("catch-up", NULL);
	if (rc != 0)
		CBT_FAILF("the replicas did not catch up (exit %d): %s", rc, errout);
	CU_ASSERT_FATAL(rc == 0);
	/* A later keyword wins in a conninfo. */
	snprintf(db, sizeof(db), "%s dbname=%s", base_ci, dbname);
	snprintf(db_proxy, sizeof(db_proxy), "%s dbname=%s", proxy_ci, dbname);

	EX_OK(db, "schema", "init");
	if (example)
		EX_OK(db, "example-setup", example, "--rows", ROWS_TEXT);
	conn = connect_retry(db, 30000);
	/* Every committed write of the job's tables, of the lock rows and of the
	 * step executions, with its transaction and time: what commits is
	 * logged, what rolls back is not. */
	CU_ASSERT_FATAL(
		cbt_exec(
			conn,
			"CREATE TABLE ha_write_audit (id bigserial PRIMARY KEY, tbl text NOT NULL, "
			" op text NOT NULL, row_key bigint NOT NULL, "
			" txid bigint NOT NULL DEFAULT txid_current(), "
			" at timestamptz NOT NULL DEFAULT clock_timestamp());"
			"CREATE TABLE ha_lock_audit (id bigserial PRIMARY KEY, lock_name text NOT NULL, "
			" op text NOT NULL, fencing_token bigint NOT NULL, owner_id text, "
			" at timestamptz NOT NULL DEFAULT clock_timestamp());"
			"CREATE FUNCTION ha_lock_audit_tg() RETURNS trigger LANGUAGE plpgsql AS $$ "
			"BEGIN INSERT INTO ha_lock_audit (lock_name, op, fencing_token, owner_id) "
			" VALUES (NEW.lock_name, TG_OP, NEW.fencing_token, NEW.owner_id); "
			" RETURN NULL; END $$;"
			"CREATE TRIGGER ha_lock_audit AFTER INSERT OR UPDATE ON batch_lock "
			" FOR EACH ROW EXECUTE FUNCTION ha_lock_audit_tg();"
			"CREATE TABLE ha_step_audit (id bigserial PRIMARY KEY, "
			" step_execution_id bigint NOT NULL, txid bigint NOT NULL DEFAULT txid_current(), "
			" at timestamptz NOT NULL DEFAULT clock_timestamp());"
			"CREATE FUNCTION ha_step_audit_tg() RETURNS trigger LANGUAGE plpgsql AS $$ "
			"BEGIN INSERT INTO ha_step_audit (step_execution_id) "
			" VALUES (NEW.step_execution_id); RETURN NULL; END $$;"
			"CREATE TRIGGER ha_step_audit AFTER UPDATE ON batch_step_execution "
			" FOR EACH ROW EXECUTE FUNCTION ha_step_audit_tg();") == 0);
	if (example && strcmp(example, "ledger") == 0)
		CU_ASSERT_FATAL(
			cbt_exec(
				conn,
				"CREATE FUNCTION ha_ledger_audit_tg() RETURNS trigger LANGUAGE plpgsql "
				"AS $$ BEGIN INSERT INTO ha_write_audit (tbl, op, row_key) "
				" VALUES ('ledger', TG_OP, NEW.account_id); RETURN NULL; END $$;"
				"CREATE TRIGGER ha_ledger_audit AFTER INSERT OR UPDATE ON ledger "
				" FOR EACH ROW EXECUTE FUNCTION ha_ledger_audit_tg();"
				"CREATE FUNCTION ha_account_audit_tg() RETURNS trigger LANGUAGE plpgsql "
				"AS $$ BEGIN INSERT INTO ha_write_audit (tbl, op, row_key) "
				" VALUES ('account', 'PROCESSED', NEW.id); RETURN NULL; END $$;"
				"CREATE TRIGGER ha_account_audit AFTER UPDATE OF processed ON account "
				" FOR EACH ROW WHEN (NEW.processed AND NOT OLD.processed) "
				" EXECUTE FUNCTION ha_account_audit_tg();") == 0);
	return conn;
}

/* The database's clock, as epoch seconds (a double, in text). */
static void db_now(PGconn *conn, char *buf, size_t size)
{
	cbt_query_str(conn, "SELECT extract(epoch FROM clock_timestamp())::text", buf, size);
}

/*
 * The switchover or the crash (@p event: "switchover" or "kill-primary"),
 * once @p conn sees @p ready_sql true. Records the database's time just
 * before it in @p at; the cluster's own measure of the outage in @p outage.
 */
static void event(PGconn *conn, const char *ready_sql, const char *ev, char *at, size_t atsz,
		  char *outage, size_t outsz)
{
	double t0;
	int rc;

	if (!wait_true(conn, 60000, ready_sql)) {
		CBT_FAILF("the run did not get going within 60 s; the %s would prove nothing", ev);
		CU_FAIL_FATAL("no run to disturb");
	}
	db_now(conn, at, atsz);
	t0 = cbt_now();
	rc = cluster(ev, NULL);
	event_seconds = cbt_now() - t0;
	outage_of(outage, outsz);
	printf("\n    %s: exit %d, outage (the cluster's probe): %s s\n    %s", ev, rc, outage,
	       errout);
	CU_ASSERT_FATAL(rc == 0);
}

/*
 * The outage as the run saw it: the longest gap between its commits from its
 * last commit before the event (@p at, epoch seconds) on, and whether it
 * committed anything after the event's end. @p commits_sql lists the run's
 * commit times as a column "at" (timestamptz), one row per transaction.
 */
static void print_run_outage(PGconn *conn, const char *commits_sql, const char *at)
{
	char sql[2048], end[64];
	const char *v[2] = { at, end };
	PGresult *res;

	snprintf(end, sizeof(end), "%.6f", atof(at) + event_seconds);
	snprintf(sql, sizeof(sql),
		 "WITH c AS (%s), b AS (SELECT max(at) AS m FROM c WHERE at < "
		 "to_timestamp($1::double precision)), g AS (SELECT at - lag(at) OVER (ORDER BY "
		 "at) AS gap FROM c WHERE at >= (SELECT m FROM b)) "
		 "SELECT coalesce(to_char(extract(epoch FROM (SELECT max(gap) FROM g)), "
		 "'FM99990.00'), '-'), (SELECT count(*) FROM c WHERE at > "
		 "to_timestamp($2::double precision)), coalesce(to_char(extract(epoch FROM "
		 "to_timestamp($2::double precision) - (SELECT max(at) FROM c)), 'FM99990.00'), "
		 "'-')",
		 commits_sql);
	res = PQexecParams(conn, sql, 2, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		printf("    outage (the run's commits): unknown (%s)\n", PQerrorMessage(conn));
	else if (atoll(PQgetvalue(res, 0, 1)) == 0)
		printf("    outage (the run's commits): no commit after the event (%.1f s); its "
		       "last commit %s s before the event's end\n",
		       event_seconds, PQgetvalue(res, 0, 2));
	else
		printf("    outage (the run's commits): %s s, the longest gap between its commits "
		       "from its last before the event on; %s commits after the event\n",
		       PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	PQclear(res);
}

/* ---- checks ---------------------------------------------------------------- */

/* One job execution, COMPLETED; every step execution ended. */
static void check_one_completed_execution(PGconn *conn)
{
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE end_time IS "
				     "NULL"),
		  0);
}

/* The fencing token of each lock never decreased, write after write. */
static void check_fencing(PGconn *conn)
{
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM (SELECT fencing_token < lag(fencing_token) "
			       "OVER (PARTITION BY lock_name ORDER BY id) AS down FROM "
			       "ha_lock_audit) x WHERE down"),
		  0);
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM ha_lock_audit") > 0);
}

/* Every account posted exactly once: the ledger and the audit of its writes. */
static void check_ledger_exact(PGconn *conn)
{
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l ON "
				     "l.account_id = a.id AND l.amount = a.amount AND "
				     "l.seller_id = a.seller_id"),
		  ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	/* Applied once: one committed INSERT per account, never an UPDATE (a
	 * chunk applied again), one processed flip per account. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ha_write_audit WHERE tbl = 'ledger' "
				     "AND op = 'INSERT'"),
		  ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT row_key) FROM ha_write_audit WHERE "
				     "tbl = 'ledger' AND op = 'INSERT'"),
		  ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ha_write_audit WHERE tbl = 'ledger' "
				     "AND op <> 'INSERT'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ha_write_audit WHERE tbl = 'account'"),
		  ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT row_key) FROM ha_write_audit WHERE "
				     "tbl = 'account'"),
		  ROWS);
}

/* What a failed case shows of the repository. */
static void print_state(PGconn *conn)
{
	cbt_print_rows(conn, "job executions (id, status, exit code, exit message)",
		       "SELECT job_execution_id, status, exit_code, left(exit_message, 300) "
		       "FROM batch_job_execution ORDER BY 1");
	cbt_print_rows(
		conn, "step executions (id, step, partition, status, commits, writes, end time)",
		"SELECT step_execution_id, step_name, partition_index, status, commit_count, "
		"write_count, end_time FROM batch_step_execution ORDER BY 1");
	cbt_print_rows(conn, "lock writes (lock, fencing token, owner, writes, first, last)",
		       "SELECT lock_name, fencing_token, owner_id, count(*), min(at), max(at) FROM "
		       "ha_lock_audit GROUP BY 1, 2, 3 ORDER BY min(id)");
	cbt_print_rows(conn, "ledger rows and audited writes (rows, INSERTs, UPDATEs, flips)",
		       "SELECT (SELECT count(*) FROM ledger), count(*) FILTER (WHERE tbl = "
		       "'ledger' AND op = 'INSERT'), count(*) FILTER (WHERE tbl = 'ledger' AND op "
		       "= 'UPDATE'), count(*) FILTER (WHERE tbl = 'account') FROM ha_write_audit");
}

/* The runs' commits: every transaction that wrote a step execution (a
 * chunk's or a tasklet transaction's checkpoint). */
#define RUN_COMMITS "SELECT max(at) AS at FROM ha_step_audit GROUP BY txid"

/* ---- cases ----------------------------------------------------------------- */

/*
 * `run ledger` (100 rows a chunk, 100 ms each: 10 s at least) through @p ev,
 * the job on the multi-host conninfo or, @p via_proxy, on HAProxy's.
 */
static void plain_run_through(const char *name, const char *ev, int via_proxy)
{
	PGconn *conn = setup(name, "ledger");
	const char *job_db = via_proxy ? db_proxy : db;
	char log[4096], at[64], outage[32];
	pid_t job;
	int rc;

	log_path(log, sizeof(log), name);
	job = SPAWN(job_db, log, "run", "ledger", "-chunk.size:long=100", "-sleepMs:long=100");
	CU_ASSERT_FATAL(job > 0);
	event(conn, "SELECT (coalesce(max(commit_count), 0) >= 1)::int FROM batch_step_execution",
	      ev, at, sizeof(at), outage, sizeof(outage));
	PQfinish(conn);

	rc = wait_child(job, JOB_WAIT_MS);
	printf("    the job: exit %d\n", rc);
	conn = connect_retry(db, 60000);
	print_run_outage(conn, RUN_COMMITS, at);
	CBT_EQ_LL(rc, 0);
	check_one_completed_execution(conn);
	check_ledger_exact(conn);
	check_fencing(conn);
	if (CU_get_number_of_failures() > 0) {
		print_log("the job's output", log);
		print_state(conn);
	}
	PQfinish(conn);
}

static void test_plain_run_through_a_switchover(void)
{
	plain_run_through("switchover", "switchover", 0);
}

static void test_plain_run_through_a_crash_of_the_primary(void)
{
	plain_run_through("crash", "kill-primary", 0);
}

static void test_plain_run_through_haproxy_across_a_switchover(void)
{
	plain_run_through("proxy", "switchover", 1);
}

/* ledger_partitioned, two partitions, run by two worker processes only. */
static void test_partitioned_run_through_a_switchover(void)
{
	PGconn *conn = setup("partitioned", "ledger");
	char log[3][4096], at[64], outage[32];
	pid_t mgr, w1, w2;
	int rc[3];

	log_path(log[0], sizeof(log[0]), "partitioned-manager");
	log_path(log[1], sizeof(log[1]), "partitioned-worker1");
	log_path(log[2], sizeof(log[2]), "partitioned-worker2");
	/* No thread of its own: the manager only waits for the workers. Two
	 * partitions of 5,000 accounts, 100 a chunk at 200 ms: 10 s at least. */
	mgr = SPAWN(db, log[0], "run", "ledger_partitioned", "-partition.threads:long=0",
		    "-partition.count:long=2", "-chunk.size:long=100", "-sleepMs:long=200");
	w1 = SPAWN(db, log[1], "worker", "--job", "ledger_partitioned", "--exit-when-idle", "5");
	w2 = SPAWN(db, log[2], "worker", "--job", "ledger_partitioned", "--exit-when-idle", "5");
	CU_ASSERT_FATAL(mgr > 0 && w1 > 0 && w2 > 0);
	event(conn,
	      "SELECT (count(*) FILTER (WHERE commit_count >= 1) >= 1)::int FROM "
	      "batch_step_execution WHERE partition_index IS NOT NULL",
	      "switchover", at, sizeof(at), outage, sizeof(outage));
	PQfinish(conn);

	rc[0] = wait_child(mgr, JOB_WAIT_MS);
	rc[1] = wait_child(w1, 30000);
	rc[2] = wait_child(w2, 30000);
	printf("    the manager: exit %d, the workers: exit %d and %d\n", rc[0], rc[1], rc[2]);
	conn = connect_retry(db, 60000);
	print_run_outage(conn, RUN_COMMITS, at);
	CBT_EQ_LL(rc[0], 0);
	CBT_EQ_LL(rc[1], 0);
	CBT_EQ_LL(rc[2], 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE end_time IS "
				     "NULL"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE "
				     "partition_index IS NOT NULL AND status = 'COMPLETED'"),
		  2);
	check_ledger_exact(conn);
	check_fencing(conn);
	if (CU_get_number_of_failures() > 0) {
		print_log("the manager's output", log[0]);
		print_log("worker 1's output", log[1]);
		print_log("worker 2's output", log[2]);
		print_state(conn);
	}
	PQfinish(conn);
}

/*
 * An every-second schedule of tick on two scheduler nodes, from when five
 * runs have finished until 8 s after a switchover.
 */
static void test_every_second_schedule_on_two_nodes_across_a_switchover(void)
{
	PGconn *conn = setup("schedule", NULL);
	char log[2][4096], at[64], outage[32];
	long long from, to, span;
	pid_t node[2];
	int rc[2];

	EX_OK(db, "example-setup", "tick", "--reset");
	/* Overlap allowed, as in test_scheduler_cluster.c: a run that takes
	 * longer than its second on a loaded machine must not skip the next
	 * instant. This case is about the instants across a switchover. */
	/* Each run takes 1.5 s (15 transactions of 100 ms, tick's -sleepMs), so
	 * that runs are in flight when the switchover comes. */
	EX_OK(db, "schedule", "add", "every-second", "--cron", "* * * * * *", "--job", "tick",
	      "at={fire_utc}", "-sleepMs:long=1500", "--overlap", "allow");
	log_path(log[0], sizeof(log[0]), "scheduler1");
	log_path(log[1], sizeof(log[1]), "scheduler2");
	node[0] = SPAWN(db, log[0], "scheduler", "--lease", "10");
	node[1] = SPAWN(db, log[1], "scheduler", "--lease", "10");
	CU_ASSERT_FATAL(node[0] > 0 && node[1] > 0);
	CU_ASSERT_FATAL(wait_true(conn, 30000,
				  "SELECT (count(*) = 2)::int FROM batch_scheduler_node "
				  "WHERE stopped_at IS NULL"));
	from = cbt_query_ll(conn, "SELECT extract(epoch FROM clock_timestamp())::bigint + 2");
	event(conn,
	      "SELECT (count(*) >= 5)::int FROM batch_schedule_firing WHERE status = 'FINISHED'",
	      "switchover", at, sizeof(at), outage, sizeof(outage));
	PQfinish(conn);
	conn = connect_retry(db, 60000);
	/* Eight seconds after the switchover, by the database's clock. */
	cbt_sleep_ms(8000);
	to = cbt_query_ll(conn, "SELECT extract(epoch FROM clock_timestamp())::bigint - 2");
	span = to - from + 1;
	/* Stop the nodes between runs: pause, wait until nothing is claimed or
	 * launched (60 s), then SIGTERM. */
	CBT_EQ_LL(EX(db, "schedule", "pause", "every-second"), 0);
	if (!wait_true(conn, 30000,
		       "SELECT (count(*) = 0)::int FROM batch_schedule_firing "
		       "WHERE status IN ('CLAIMED', 'LAUNCHED', 'QUEUED')"))
		CBT_FAILF("firings still claimed, launched or queued 30 s after the pause");
	for (int i = 0; i < 2; i++)
		kill(node[i], SIGTERM);
	for (int i = 0; i < 2; i++)
		rc[i] = wait_child(node[i], 30000);
	printf("    the scheduler nodes: exit %d and %d; %lld instants in the window\n", rc[0],
	       rc[1], span);
	print_run_outage(conn, RUN_COMMITS, at);
	CBT_EQ_LL(rc[0], 0);
	CBT_EQ_LL(rc[1], 0);
	/* Every instant of the window: one firing, run once, to completion. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_schedule_firing WHERE fire_time "
				"BETWEEN to_timestamp($1) AND to_timestamp($2)",
				"lld lld", from, to),
		  span);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_schedule_firing WHERE fire_time "
				"BETWEEN to_timestamp($1) AND to_timestamp($2) AND status = "
				"'FINISHED' AND exit_code = 0 AND exit_status = 'COMPLETED'",
				"lld lld", from, to),
		  span);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM generate_series($1::bigint, $2::bigint) s "
				"WHERE (SELECT count(*) FROM tick_log WHERE fired_for = "
				" to_char(to_timestamp(s) AT TIME ZONE 'UTC', "
				" 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) <> 1",
				"lld lld", from, to),
		  0);
	/* Over the whole run: never an instant twice, never a run restarted or
	 * left unfinished. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT fired_for FROM tick_log "
				     "GROUP BY fired_for HAVING count(*) > 1) d"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM (SELECT fire_time FROM "
			       "batch_schedule_firing GROUP BY fire_time HAVING count(*) > 1) "
			       "d"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE restart_of "
				     "IS NOT NULL"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status <> "
				     "'COMPLETED'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE end_time IS "
				     "NULL"),
		  0);
	check_fencing(conn);
	if (CU_get_number_of_failures() > 0) {
		print_log("scheduler node 1's output", log[0]);
		print_log("scheduler node 2's output", log[1]);
		cbt_print_rows(
			conn, "firings that did not complete (fire time, status, exit, message)",
			"SELECT fire_time, status, exit_code, exit_status, left(message, 200) "
			"FROM batch_schedule_firing WHERE status <> 'FINISHED' OR exit_status "
			"IS DISTINCT FROM 'COMPLETED' ORDER BY fire_time");
		cbt_print_rows(
			conn, "executions not COMPLETED or restarted (id, status, exit, of)",
			"SELECT job_execution_id, status, left(exit_message, 200), restart_of "
			"FROM batch_job_execution WHERE status <> 'COMPLETED' OR restart_of "
			"IS NOT NULL ORDER BY 1");
	}
	PQfinish(conn);
}

static void teardown(void)
{
	kill_children();
}

static CU_TestInfo tests[] = {
	{ "plain run through a switchover", test_plain_run_through_a_switchover },
	{ "plain run through a crash of the primary",
	  test_plain_run_through_a_crash_of_the_primary },
	{ "partitioned run through a switchover", test_partitioned_run_through_a_switchover },
	{ "every second schedule on two nodes across a switchover",
	  test_every_second_schedule_on_two_nodes_across_a_switchover },
	{ "plain run through haproxy across a switchover",
	  test_plain_run_through_haproxy_across_a_switchover },
	CU_TEST_INFO_NULL,
};

/* Is @p tool a command on PATH? */
static int have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

int main(void)
{
	CU_SuiteInfo suites[] = {
		{ "ha", NULL, NULL, NULL, teardown, tests },
		CU_SUITE_INFO_NULL,
	};

	if (!have("patroni") || !have("etcd") || !have("haproxy")) {
		printf("SKIPPED: patroni, etcd and haproxy are needed (bash "
		       "scripts/install-deps.sh)\n");
		return 77;
	}
	return cbt_main_suites("ha", suites);
}
