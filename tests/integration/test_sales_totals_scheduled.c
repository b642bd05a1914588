/*
 * The sales_totals example scheduled every second with the default overlap
 * policy (skip) and recovery (restart), each firing its own instance
 * (asOf={fire_utc}, so its own lock) and slower than the interval
 * (-sleepMs), with real scheduler nodes and invoices added between firings.
 * After each scenario one last run takes what is left and the totals must
 * equal one SQL statement over the invoices, every invoice processed: every
 * invoice counted exactly once (issue 18 item 6).
 *
 * - firings slower than the interval, one node: no two executions of the
 *   schedule overlap, the instants due meanwhile are SKIPPED_OVERLAP;
 * - two nodes on the same database, and an operator's manual run of another
 *   instance (`run sales_totals asOf=...`) beside the firings: the manual
 *   run does overlap them, and the strict status transition keeps it exact;
 * - kill -9 of a node while its child runs: the child stops (parent-death
 *   signal), the surviving node restarts it after the lease, the firings go
 *   on;
 * - kill -9 of the child run itself (the process of the partition workers)
 *   mid-run: its node buries it, recovery restarts it, the next firings run.
 *
 * The same scenarios with `--overlap allow` and a lenient transition count
 * invoices twice (docs/writing-jobs.md, "Running non-idempotent jobs safely").
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbtest.h"
#include "sched.h"

static cbt_sched sched;

static int init(void)
{
	return cbt_sched_init(&sched, "sales_sched");
}

static int clean(void)
{
	return cbt_sched_clean(&sched);
}

#define EX(...)         CBT_SCHED_EX(&sched, __VA_ARGS__)
#define SPAWN(log, ...) CBT_SCHED_SPAWN(&sched, (log), __VA_ARGS__)

static void log_path(char *buf, size_t size, const char *name)
{
	cbt_sched_log_path(&sched, buf, size, name);
}

/* A fresh schedule `totals` of sales_totals every second, each firing about
 * 2-3 s long for the invoices of one or two batches. */
static void fresh(long long rows, const char *recover_delay)
{
	char n[24];

	cbt_sched_clear(&sched);
	snprintf(n, sizeof(n), "%lld", rows);
	CBT_EQ_LL(EX("example-setup", "sales_totals", "--rows", n, "--reset"), 0);
	CBT_EQ_LL(EX("schedule", "add", "totals", "--cron", "* * * * * *", "--job", "sales_totals",
		     "asOf={fire_utc}", "-sleepMs:long=400", "-chunk.size:long=100",
		     "-partition.threads:long=4", "--recover-delay", recover_delay),
		  0);
}

/* @p n invoices more, as example-setup adds them (after the last id). */
static void add_invoices(long long n)
{
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "WITH base AS (SELECT coalesce(max(id), 0) AS b FROM invoice), "
			      "ins AS (INSERT INTO invoice (id, customer_id, amount, issued_at) "
			      "SELECT b + g, 1 + ((b + g) * 7919) % 500, (1 + ((b + g) * 104729) "
			      "% 99999) / 100.0, timestamptz '2026-01-01' + (b + g) * interval "
			      "'1 minute' FROM base, generate_series(1, $1::bigint) g RETURNING 1) "
			      "SELECT count(*) FROM ins",
			      "lld", n),
		n);
}

/* Add a batch every second for @p seconds, while the schedule runs. */
static void feed(int seconds, long long per_batch)
{
	for (int i = 0; i < seconds; i++) {
		add_invoices(per_batch);
		cbt_sleep_ms(1000);
	}
}

/* The executions and firings of schedule `totals` (the only one). */
static long long scheduled_overlaps(void)
{
	return cbt_sched_overlaps(&sched, "totals");
}

static long long scheduled_execs(const char *status)
{
	return cbt_sched_execs(&sched, "totals", status);
}

static long long firings(const char *status)
{
	return cbt_sched_firings(&sched, "totals", status);
}

static long long processed(void)
{
	return cbt_query_ll(sched.conn, "SELECT count(*) FROM invoice WHERE processed");
}

static long long conflicts(void)
{
	return cbt_query_ll(sched.conn, "SELECT coalesce(sum(transition_conflict_count), 0) "
					"FROM batch_step_execution");
}

/* What committed is exact on its own: the totals of the processed invoices. */
static void expect_processed_counted_once(void)
{
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT coalesce(sum(invoice_count), 0) - "
					   "(SELECT count(*) FROM invoice WHERE processed) "
					   "FROM customer_total"),
		  0);
}

/* One last run takes what the firings left, then every invoice is counted
 * once: all processed, and each customer's total, count, first and last
 * equal one statement over the invoices. */
static void drain_and_expect_exactly_once(void)
{
	static int drains;
	char param[32];
	int rc = -1;

	expect_processed_counted_once();
	/* An instance of its own each time: the data is new, the repository not. */
	snprintf(param, sizeof(param), "asOf=drain-%d", ++drains);
	for (int i = 0; i < 5 && rc != 0; i++)
		rc = EX("run", "sales_totals", param, "--lease", "2");
	CBT_EQ_LL(rc, 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM invoice WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT coalesce(sum(invoice_count), 0) - "
					   "(SELECT count(*) FROM invoice) FROM customer_total"),
		  0);
	CBT_EQ_LL(
		cbt_query_ll(
			sched.conn,
			"SELECT count(*) FROM (SELECT customer_id, sum(amount) s, count(*) n, "
			" min(issued_at) f, max(issued_at) l FROM invoice GROUP BY customer_id) e "
			"FULL JOIN customer_total t USING (customer_id) "
			"WHERE t.total IS DISTINCT FROM e.s OR t.invoice_count IS DISTINCT FROM e.n "
			" OR t.first_at IS DISTINCT FROM e.f OR t.last_at IS DISTINCT FROM e.l"),
		0);
}

/* A scheduler node, lease 2 s, until the case stops it (between runs). */
static pid_t node(const char *name)
{
	char log[512];
	pid_t pid;

	log_path(log, sizeof(log), name);
	pid = SPAWN(log, "scheduler", "--lease", "2");
	CU_ASSERT_FATAL(pid > 0);
	return pid;
}

static void test_slow_firings_never_overlap_and_count_once(void)
{
	pid_t a;

	fresh(3000, "10");
	a = node("slow");
	feed(7, 800);
	/* Until two firings ran and two instants were skipped meanwhile (however
	 * long a run takes on this machine), then stopped between runs. */
	CU_ASSERT(cbt_wait_untilp(sched.conn, 60000,
				  CBT_SCHED_EXECS
				  "SELECT ((SELECT count(*) FROM e WHERE status = "
				  "'COMPLETED') >= 2 AND (SELECT count(*) FROM "
				  "batch_schedule_firing WHERE status = 'SKIPPED_OVERLAP') "
				  ">= 2)::int",
				  "s", "totals"));
	cbt_sched_stop_between_runs(&sched, a);
	CU_ASSERT(scheduled_execs("%") >= 2);
	CBT_EQ_LL(scheduled_overlaps(), 0);
	CU_ASSERT(firings("SKIPPED_OVERLAP") >= 2);
	/* The firings did the work (the drain only what the last one left). */
	CU_ASSERT(processed() >= 3000);
	drain_and_expect_exactly_once();
}

/* Two nodes run the schedule, and an operator runs another instance by hand
 * while they do: the nodes never overlap each other's firings, the manual
 * run overlaps them (its own instance, its own lock) and the strict
 * transition makes its chunks and theirs take each invoice once. */
static void test_two_nodes_and_a_manual_run_count_once(void)
{
	char log[512];
	pid_t a, b, manual, nodes[2];
	long long conflicts_before = conflicts();
	int rm;

	fresh(3000, "10");
	a = node("pair-a");
	b = node("pair-b");
	add_invoices(800);
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_job_execution "
				       "WHERE status = 'STARTED'"));
	log_path(log, sizeof(log), "manual");
	manual = SPAWN(log, "run", "sales_totals", "asOf=operator-2026-12-02", "--lease", "2",
		       "-sleepMs:long=100", "-chunk.size:long=100", "-partition.threads:long=4");
	CU_ASSERT_FATAL(manual > 0);
	feed(6, 800);
	rm = cbt_wait_timeout(manual, 120000);
	/* It completes, or fails restartably after too many re-reads in a row. */
	CU_ASSERT(rm == 0 || rm == 1);
	/* Until both nodes took part, two instants were skipped, and the manual
	 * run's chunks met the firings' (however long all that takes here);
	 * then both nodes stopped between runs. */
	if (!cbt_wait_untilp(
		    sched.conn, 60000,
		    "SELECT ((SELECT count(DISTINCT node_id) FROM batch_schedule_event) = 2 "
		    "AND (SELECT count(*) FROM batch_schedule_firing WHERE status = "
		    "'SKIPPED_OVERLAP') >= 2 AND (SELECT coalesce(sum("
		    "transition_conflict_count), 0) FROM batch_step_execution) > $1)::int",
		    "lld", conflicts_before)) {
		CBT_FAILF("the two nodes and the manual run did not meet within 60 s");
		cbt_print_rows(sched.conn, "firings (id, fire time, node, status)",
			       "SELECT firing_id, fire_time, node_id, status FROM "
			       "batch_schedule_firing ORDER BY firing_id");
	}
	nodes[0] = a;
	nodes[1] = b;
	cbt_sched_stop_nodes_between_runs(&sched, nodes, 2);
	CBT_EQ_LL(scheduled_overlaps(), 0);
	CU_ASSERT(firings("SKIPPED_OVERLAP") >= 2);
	/* Both nodes competed for the instants (which one wins each is timing:
	 * the loser records it too, as an event). */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(DISTINCT node_id) FROM batch_schedule_event"),
		  2);
	/* The manual run did run beside firings, and they met: chunks were
	 * rolled back and read again. */
	CU_ASSERT(cbt_queryp_ll(sched.conn,
				CBT_SCHED_EXECS
				", m AS (SELECT x.start_time, x.end_time FROM "
				"batch_job_execution x JOIN batch_job_execution_params p "
				"USING (job_execution_id) WHERE p.parameter_name = 'asOf' AND "
				"p.parameter_value = 'operator-2026-12-02') SELECT count(*) "
				"FROM e, m WHERE e.start_time < m.end_time AND m.start_time < "
				"e.end_time",
				"s", "totals") > 0);
	CU_ASSERT(conflicts() > conflicts_before);
	drain_and_expect_exactly_once();
}

/* kill -9 of the node whose child runs a firing: the child stops after its
 * chunk, the survivor restarts that execution once the lease is over, and
 * firings go on on the survivor. */
static void test_killed_node_firing_restarted_by_the_survivor(void)
{
	pid_t a, b;
	long long exec, inst;

	fresh(4000, "1");
	a = node("kill-a");
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_job_execution "
				       "WHERE status = 'STARTED'"));
	exec = cbt_query_ll(sched.conn, "SELECT min(job_execution_id) FROM batch_job_execution "
					"WHERE status = 'STARTED'");
	inst = cbt_queryp_ll(sched.conn,
			     "SELECT job_instance_id FROM batch_job_execution "
			     "WHERE job_execution_id = $1",
			     "lld", exec);
	b = node("kill-b");
	CU_ASSERT_FATAL(cbt_wait_until(
		sched.conn, 60000, "SELECT (count(*) >= 400)::int FROM invoice WHERE processed"));
	kill(a, SIGKILL);
	CBT_EQ_LL(cbt_wait_timeout(a, 60000), 128 + SIGKILL);
	if (cbt_query_ll(sched.conn, "SELECT count(*) FROM invoice WHERE NOT processed") == 0)
		CBT_FAILF("the firing finished before the kill; the test proves nothing");
	add_invoices(500);
	CU_ASSERT(cbt_wait_untilp(sched.conn, 60000,
				  "SELECT count(*) FROM batch_job_execution WHERE "
				  "job_execution_id = $1 AND status = 'STOPPED'",
				  "lld", exec));
	CU_ASSERT(cbt_wait_untilp(sched.conn, 120000,
				  "SELECT count(*) FROM batch_job_execution WHERE "
				  "job_instance_id = $1 AND job_execution_id > $2 AND "
				  "status = 'COMPLETED'",
				  "lld lld", inst, exec));
	/* Firings go on on the survivor, after the restart. */
	feed(2, 500);
	CU_ASSERT(cbt_wait_untilp(
		sched.conn, 120000,
		"SELECT count(*) FROM batch_job_execution x JOIN "
		"batch_job_execution_params p USING (job_execution_id) WHERE "
		"p.parameter_name = 'schedule.name' AND x.job_instance_id <> $1 AND "
		"x.job_execution_id > $2 AND x.status = 'COMPLETED'",
		"lld lld", inst, exec));
	cbt_sched_stop_between_runs(&sched, b);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_event WHERE outcome = "
			       "'RESTARTED' AND attempt = 1"),
		  1);
	CBT_EQ_LL(scheduled_overlaps(), 0);
	drain_and_expect_exactly_once();
}

/* kill -9 of the child run itself (the process of the partition workers)
 * mid-run: its node buries the execution ("owner lost"), recovery restarts
 * it, and the next firings run after. */
static void test_killed_run_restarted_and_next_firings_count_once(void)
{
	pid_t a, child;
	long long firing, exec;

	fresh(4000, "1");
	a = node("child");
	CU_ASSERT_FATAL(cbt_wait_until(
		sched.conn, 60000, "SELECT (count(*) >= 400)::int FROM invoice WHERE processed"));
	/* The running firing, once its execution is recorded. */
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_schedule_firing f JOIN "
				       "batch_job_instance i USING (job_key) JOIN "
				       "batch_job_execution x USING (job_instance_id) WHERE "
				       "f.status = 'LAUNCHED' AND f.pid IS NOT NULL AND "
				       "x.status = 'STARTED'"));
	firing = cbt_query_ll(sched.conn,
			      "SELECT min(f.firing_id) FROM batch_schedule_firing f JOIN "
			      "batch_job_instance i USING (job_key) JOIN "
			      "batch_job_execution x USING (job_instance_id) WHERE "
			      "f.status = 'LAUNCHED' AND f.pid IS NOT NULL AND "
			      "x.status = 'STARTED'");
	CU_ASSERT_FATAL(firing > 0);
	child = (pid_t)cbt_queryp_ll(sched.conn,
				     "SELECT pid FROM batch_schedule_firing WHERE firing_id = $1",
				     "lld", firing);
	exec = cbt_queryp_ll(sched.conn,
			     "SELECT max(x.job_execution_id) FROM batch_schedule_firing f JOIN "
			     "batch_job_instance i USING (job_key) JOIN batch_job_execution x "
			     "USING (job_instance_id) WHERE f.firing_id = $1",
			     "lld", firing);
	CU_ASSERT_FATAL(child > 0);
	kill(child, SIGKILL);
	if (cbt_query_ll(sched.conn, "SELECT count(*) FROM invoice WHERE NOT processed") == 0)
		CBT_FAILF("the firing finished before the kill; the test proves nothing");
	add_invoices(500);
	CU_ASSERT(cbt_wait_untilp(sched.conn, 60000,
				  "SELECT count(*) FROM batch_job_execution WHERE "
				  "job_execution_id = $1 AND status = 'FAILED' AND exit_message "
				  "LIKE '%owner lost%'",
				  "lld", exec));
	CU_ASSERT(cbt_wait_untilp(
		sched.conn, 120000,
		"SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 AND "
		"outcome = 'RESTARTED'",
		"lld", firing));
	feed(3, 500);
	/* A later firing ran to its end after the restart. */
	CU_ASSERT(cbt_wait_untilp(sched.conn, 120000,
				  "SELECT count(*) FROM batch_schedule_firing WHERE firing_id > $1 "
				  "AND status = 'FINISHED' AND exit_code = 0",
				  "lld", firing));
	cbt_sched_stop_between_runs(&sched, a);
	CBT_EQ_LL(scheduled_overlaps(), 0);
	drain_and_expect_exactly_once();
}

static const CU_TestInfo tests[] = {
	{ "slow firings never overlap and count once",
	  test_slow_firings_never_overlap_and_count_once },
	{ "two nodes and a manual run count once", test_two_nodes_and_a_manual_run_count_once },
	{ "killed node's firing restarted by the survivor",
	  test_killed_node_firing_restarted_by_the_survivor },
	{ "killed run restarted, next firings count once",
	  test_killed_run_restarted_and_next_firings_count_once },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("sales_totals_scheduled", init, clean, tests);
}
