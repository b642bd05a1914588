/*
 * The sales_totals example (issue 18): invoices added into per-customer
 * totals by an accumulating upsert and a strict status transition in the
 * same chunk transaction, partitioned by customer key ranges. Real processes
 * against a real PostgreSQL; after each scenario the totals must equal one
 * SQL statement over the invoices, and every invoice be processed: every
 * invoice counted exactly once.
 *
 * - a plain run;
 * - two instances (asOf=one, asOf=two: each its own lock) started at once
 *   on the same invoices;
 * - kill -9 of the process that runs the partition workers, mid-run, then
 *   the restart;
 * - a slow run (-sleepMs) overlapped by a fast one, with invoices added
 *   while both run.
 *
 */
#include <signal.h>
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
	return cbt_repo_db(db, sizeof(db), "sales_totals", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* cbatch-examples --db db ARGS (NULL-terminated, at most 8). */
static int ex(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
	      const char *a6)
{
	const char *argv[12] = { cbt_examples_bin(), "--db", db, a1, a2, a3, a4, a5, a6, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* `run sales_totals asOf=@p as_of --lease 2 EXTRA...` in the background. */
static pid_t spawn_run(const char *as_of, const char *extra1, const char *extra2, const char *log)
{
	char param[64], path[512];
	const char *argv[14] = { cbt_examples_bin(),
				 "--db",
				 db,
				 "run",
				 "sales_totals",
				 param,
				 "--lease",
				 "2",
				 "-partition.threads:long=4",
				 extra1,
				 extra2,
				 NULL };

	snprintf(param, sizeof(param), "asOf=%s", as_of);
	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), log);
	return cbt_spawn(argv, path);
}

static void setup(long long rows)
{
	char n[24];

	snprintf(n, sizeof(n), "%lld", rows);
	CBT_EQ_LL(ex("example-setup", "sales_totals", "--rows", n, "--reset", NULL), 0);
}

/* Customers whose total differs from one statement over all invoices. */
static long long mismatches(void)
{
	return cbt_query_ll(
		conn, "SELECT count(*) FROM (SELECT customer_id, sum(amount) s, count(*) n, "
		      " min(issued_at) f, max(issued_at) l FROM invoice GROUP BY customer_id) e "
		      "FULL JOIN customer_total t USING (customer_id) "
		      "WHERE t.total IS DISTINCT FROM e.s OR t.invoice_count IS DISTINCT FROM e.n "
		      " OR t.first_at IS DISTINCT FROM e.f OR t.last_at IS DISTINCT FROM e.l");
}

/* Every invoice counted once: all processed, and the counts add up. */
static void expect_exactly_once(void)
{
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM invoice WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT coalesce(sum(invoice_count), 0) - "
				     "(SELECT count(*) FROM invoice) FROM customer_total"),
		  0);
	CBT_EQ_LL(mismatches(), 0);
}

/* Run (or restart) instance @p as_of until it is complete: a run that met
 * too many conflicts in a row failed restartably. */
static void finish(const char *as_of)
{
	char param[64];
	int rc = -1;

	snprintf(param, sizeof(param), "asOf=%s", as_of);
	for (int i = 0; i < 10 && rc != 0 && rc != 3; i++) {
		rc = ex("run", "sales_totals", param, "--lease", "2", NULL);
		if (rc != 0 && rc != 3)
			cbt_sleep_ms(2200); /* a killed owner's lease */
	}
	if (rc != 0 && rc != 3)
		CBT_FAILF("instance %s never completed: %s", as_of, errout);
}

static long long conflicts(void)
{
	return cbt_query_ll(conn, "SELECT coalesce(sum(transition_conflict_count), 0) "
				  "FROM batch_step_execution");
}

static void test_a_run_matches_one_sql_statement(void)
{
	setup(20000);
	CBT_EQ_LL(ex("run", "sales_totals", "asOf=plain", "-partition.threads:long=4", NULL, NULL),
		  0);
	expect_exactly_once();
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM customer_total"), 500);
	CBT_EQ_LL(conflicts(), 0);
	/* Invoices that arrive later go into the totals of a later instance. */
	CBT_EQ_LL(ex("example-setup", "sales_totals", "--rows", "777", NULL, NULL), 0);
	CBT_EQ_LL(ex("run", "sales_totals", "asOf=later", NULL, NULL, NULL), 0);
	expect_exactly_once();
}

/* Two instances (each with its own lock) started by hand at the same time
 * on the same invoices: they overlap chunk by chunk, and no invoice is added
 * twice. The slowed chunks make the overlap certain. */
static void test_two_instances_at_once_count_every_invoice_once(void)
{
	pid_t a, b;
	int ra, rb;

	setup(20000);
	a = spawn_run("one", "-sleepMs:long=40", "-chunk.size:long=100", "st_one.log");
	b = spawn_run("two", "-sleepMs:long=40", "-chunk.size:long=100", "st_two.log");
	ra = cbt_wait_timeout(a, 120000);
	rb = cbt_wait_timeout(b, 120000);
	/* Each completes, or fails restartably after too many re-reads. */
	CU_ASSERT(ra == 0 || ra == 1);
	CU_ASSERT(rb == 0 || rb == 1);
	finish("one");
	finish("two");
	expect_exactly_once();
	/* They did meet: some chunks were read again. */
	CU_ASSERT(conflicts() > 0);
}

/* kill -9 of the process that runs the partition workers, mid-run; the
 * restart (after the lease) finishes, and nothing is counted twice. */
static void test_kill_9_of_partition_workers_then_restart(void)
{
	pid_t pid;

	setup(30000);
	pid = spawn_run("killed", "-sleepMs:long=10", "-chunk.size:long=100", "st_kill.log");
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) >= 3000)::int FROM invoice WHERE processed"))
		CBT_FAILF("the run never processed 3000 invoices");
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	cbt_wait_sessions_gone(conn);
	if (cbt_query_ll(conn, "SELECT count(*) FROM invoice WHERE NOT processed") == 0)
		CBT_FAILF("the run finished before the kill; the test proves nothing");
	/* What committed is consistent on its own: totals of processed invoices. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT coalesce(sum(invoice_count), 0) - "
				     "(SELECT count(*) FROM invoice WHERE processed) "
				     "FROM customer_total"),
		  0);
	cbt_sleep_ms(2200);
	finish("killed");
	expect_exactly_once();
}

/* A slow run (as a firing slower than its interval would be) overlapped by
 * a fast one, while more invoices arrive. */
static void test_overlapping_runs_with_a_slow_throttle(void)
{
	pid_t slow, fast;
	int rs, rf;

	setup(10000);
	slow = spawn_run("slow", "-sleepMs:long=40", "-chunk.size:long=50", "st_slow.log");
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) >= 500)::int FROM invoice WHERE processed"))
		CBT_FAILF("the slow run never processed 500 invoices");
	fast = spawn_run("fast", "-chunk.size:long=50", NULL, "st_fast.log");
	CBT_EQ_LL(ex("example-setup", "sales_totals", "--rows", "3000", NULL, NULL), 0);
	rf = cbt_wait_timeout(fast, 120000);
	rs = cbt_wait_timeout(slow, 120000);
	CU_ASSERT(rf == 0 || rf == 1);
	CU_ASSERT(rs == 0 || rs == 1);
	finish("slow");
	finish("fast");
	/* Each run's input is bounded by its start: invoices that arrived after
	 * both had taken their mark are the next run's, and only its. */
	finish("next");
	expect_exactly_once();
}

static const CU_TestInfo tests[] = {
	{ "a run matches one SQL statement", test_a_run_matches_one_sql_statement },
	{ "two instances at once count every invoice once",
	  test_two_instances_at_once_count_every_invoice_once },
	{ "kill -9 of partition workers, then restart",
	  test_kill_9_of_partition_workers_then_restart },
	{ "overlapping runs with a slow throttle", test_overlapping_runs_with_a_slow_throttle },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("sales_totals", init, clean, tests);
}
