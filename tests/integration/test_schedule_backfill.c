/*
 * A schedule's backfill (issue 28.11) with real scheduler nodes and the tick
 * job (tick_log records the instant each run was for):
 *
 *  - refusals: a future end, a reversed or empty range, more instants than
 *    --max, a time that does not parse, --parallel under SKIP, a paused
 *    schedule: exit 2 with the reason, and nothing written;
 *  - one QUEUED BACKFILL firing per past instant, in order, recorded as
 *    BACKFILL events; the same backfill again creates none;
 *  - a node runs them oldest first, one at a time (overlap SKIP and QUEUE:
 *    no two runs of the schedule at once), each its own job instance for its
 *    own instant; the history and the counter say BACKFILL;
 *  - ALLOW with --parallel 2: two at a time at most, and some overlap;
 *  - cancel: the waiting ones go (CANCELED events, the BACKFILL events
 *    stay), and a backfill of the range creates them again.
 */
#include "cbtest.h"
#include "sched.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch.h"

static cbt_sched sched;

static int init(void)
{
	return cbt_sched_init(&sched, "backfill");
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
	CBT_EQ_LL(EX("example-setup", "tick", "--reset"), 0);
}

static long long firings(const char *name, const char *kind)
{
	return cbt_queryp_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_firing f JOIN batch_schedule s "
			     "USING (schedule_id) WHERE s.schedule_name = $1 AND f.kind LIKE $2",
			     "s s", name, kind);
}

static long long events(const char *name, const char *outcome)
{
	return cbt_queryp_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_event e JOIN batch_schedule s "
			     "USING (schedule_id) WHERE s.schedule_name = $1 AND e.outcome = $2",
			     "s s", name, outcome);
}

static void print_firings(void)
{
	cbt_print_rows(sched.conn, "firings (id, fire time, kind, node, status, execution)",
		       "SELECT f.firing_id, f.fire_time, f.kind, f.node_id, f.status, "
		       "f.job_execution_id FROM batch_schedule_firing f ORDER BY f.firing_id");
}

/* A daily schedule at 06:00 in Europe/Paris (never due while a case runs
 * unless it runs at 06:00 Paris time: its own instant then only adds a
 * firing that the assertions below do not count as BACKFILL). */
static void add_daily(const char *name, const char *overlap, const char *sleep_ms)
{
	char sleep[64];

	snprintf(sleep, sizeof(sleep), "-sleepMs:long=%s", sleep_ms);
	CBT_EQ_LL(EX("schedule", "add", name, "--cron", "0 6 * * *", "--tz", "Europe/Paris",
		     "--job", "tick", "at={fire_utc}", sleep, "--overlap", overlap),
		  0);
}

static void test_refusals_write_nothing(void)
{
	fresh();
	add_daily("r", "skip", "0");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-01-01", "--to", "2999-01-01"), 2);
	CBT_CONTAINS(sched.errout, "after now");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-01-05", "--to", "2026-01-01"), 2);
	CBT_CONTAINS(sched.errout, "the range is reversed");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-01-01T07:00", "--to",
		     "2026-01-01T08:00"),
		  2);
	CBT_CONTAINS(sched.errout, "has no instant from 2026-01-01T07:00:00+01:00");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2025-01-01", "--to", "2025-12-31",
		     "--max", "100"),
		  2);
	CBT_CONTAINS(sched.errout, "more than 100 instants");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "now", "--to", "2026-01-01"), 2);
	CBT_CONTAINS(sched.errout, "from 'now' is not a time");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-02-30", "--to", "2026-03-01"), 2);
	CBT_CONTAINS(sched.errout, "is not a time");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-01-01", "--to", "2026-01-03",
		     "--parallel", "2"),
		  2);
	CBT_CONTAINS(sched.errout, "needs overlap policy ALLOW");
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-01-01"), 2);
	CBT_EQ_LL(EX("schedule", "backfill", "nope", "--from", "2026-01-01", "--to", "2026-01-02"),
		  2);
	CBT_EQ_LL(EX("schedule", "pause", "r"), 0);
	CBT_EQ_LL(EX("schedule", "backfill", "r", "--from", "2026-01-01", "--to", "2026-01-03"), 2);
	CBT_CONTAINS(sched.errout, "is paused");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing"), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event"), 0);
}

static void test_one_firing_per_past_instant_never_twice(void)
{
	json_t *doc, *list;
	json_error_t je;

	fresh();
	add_daily("d", "skip", "0");
	CBT_EQ_LL(EX("--json", "schedule", "backfill", "d", "--from", "2026-10-24", "--to",
		     "2026-10-27T23:59:59"),
		  0);
	doc = json_loads(sched.out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	list = json_object_get(doc, "instants");
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "created")), 4);
	CBT_EQ_LL((long long)json_array_size(list), 4);
	/* Across the autumn change, each 06:00 in Paris with its offset. */
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(list, 0), "fire_time")),
		   "2026-10-24T06:00:00+02:00");
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(list, 3), "fire_time")),
		   "2026-10-27T06:00:00+01:00");
	json_decref(doc);
	/* In order: firing ids follow the instants. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_firing a JOIN "
			       "batch_schedule_firing b ON a.firing_id < b.firing_id AND "
			       "a.fire_time >= b.fire_time"),
		  0);
	CBT_EQ_LL(firings("d", "BACKFILL"), 4);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
					   "kind = 'BACKFILL' AND status = 'QUEUED' AND "
					   "parameters::text LIKE '%at=2026-10-2%Z%'"),
		  4);
	CBT_EQ_LL(events("d", "BACKFILL"), 4);
	/* Again: nothing new, each instant reported with the firing it has. */
	CBT_EQ_LL(EX("schedule", "backfill", "d", "--from", "2026-10-24", "--to",
		     "2026-10-27T23:59:59"),
		  0);
	CBT_CONTAINS(sched.out, "0 queued as BACKFILL firings, 4 had a firing already");
	CBT_CONTAINS(sched.out, "has firing");
	CBT_EQ_LL(firings("d", "%"), 4);
	CBT_EQ_LL(events("d", "BACKFILL"), 4);
	CBT_EQ_LL(EX("schedule", "history", "d"), 0);
	CBT_CONTAINS(sched.out, "BACKFILL");
	CBT_EQ_LL(EX("metrics"), 0);
	CBT_CONTAINS(sched.out,
		     "cbatch_schedule_backfill_total{batch_job=\"tick\",schedule=\"d\"} 4");
}

/* Backfill 4 instants of a schedule of overlap @p overlap whose runs take
 * 1.5 s, run one node until every one has run, and check the order and
 * that no two ran at once. */
static void runs_alone_oldest_first(const char *name, const char *overlap)
{
	char log[512];
	pid_t pid;

	fresh();
	add_daily(name, overlap, "1500");
	CBT_EQ_LL(EX("schedule", "backfill", name, "--from", "2026-11-01", "--to",
		     "2026-11-04T12:00"),
		  0);
	cbt_sched_log_path(&sched, log, sizeof(log), name);
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(sched.conn, 90000,
			    "SELECT (count(*) = 4)::int FROM batch_schedule_firing WHERE kind = "
			    "'BACKFILL' AND status = 'FINISHED'")) {
		CBT_FAILF("the 4 backfill firings did not finish within 90 s");
		print_firings();
	}
	cbt_sched_stop_between_runs(&sched, pid);
	CBT_EQ_LL(cbt_sched_overlaps(&sched, name), 0);
	CBT_EQ_LL(cbt_sched_execs(&sched, name, "COMPLETED"), 4);
	/* Oldest first: the executions started in the order of their instants. */
	CBT_EQ_LL(
		cbt_query_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_firing a JOIN "
			     "batch_job_execution ea ON ea.job_execution_id = a.job_execution_id, "
			     "batch_schedule_firing b JOIN batch_job_execution eb ON "
			     "eb.job_execution_id = b.job_execution_id WHERE a.kind = 'BACKFILL' "
			     "AND b.kind = 'BACKFILL' AND a.fire_time < b.fire_time AND "
			     "eb.start_time < ea.end_time"),
		0);
	/* Each its own instance, run for its own instant. */
	CBT_EQ_LL(
		cbt_query_ll(sched.conn,
			     "SELECT count(DISTINCT e.job_instance_id) FROM batch_schedule_firing "
			     "f JOIN batch_job_execution e USING (job_execution_id) JOIN tick_log "
			     "t ON t.job_execution_id = e.job_execution_id AND t.fired_for = "
			     "to_char(f.fire_time AT TIME ZONE 'UTC', "
			     "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') WHERE f.kind = 'BACKFILL'"),
		4);
	CBT_EQ_LL(EX("schedule", "history", name, "--limit", "100"), 0);
	CBT_CONTAINS(sched.out, "FINISHED [BACKFILL]");
	CBT_CONTAINS(sched.out, "FIRED [BACKFILL]");
}

static void test_skip_runs_them_alone_oldest_first(void)
{
	runs_alone_oldest_first("alone-skip", "skip");
}

static void test_queue_runs_them_alone_oldest_first(void)
{
	runs_alone_oldest_first("alone-queue", "queue");
}

static void test_allow_runs_parallel_at_most(void)
{
	char log[512];
	pid_t pid;

	fresh();
	add_daily("par", "allow", "2000");
	CBT_EQ_LL(EX("schedule", "backfill", "par", "--from", "2026-11-01", "--to",
		     "2026-11-06T12:00", "--parallel", "2"),
		  0);
	CBT_CONTAINS(sched.out, "2 at once (overlap policy ALLOW)");
	cbt_sched_log_path(&sched, log, sizeof(log), "par");
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_until(sched.conn, 90000,
			    "SELECT (count(*) = 6)::int FROM batch_schedule_firing WHERE kind = "
			    "'BACKFILL' AND status = 'FINISHED'")) {
		CBT_FAILF("the 6 backfill firings did not finish within 90 s");
		print_firings();
	}
	cbt_sched_stop_between_runs(&sched, pid);
	CBT_EQ_LL(cbt_sched_execs(&sched, "par", "COMPLETED"), 6);
	/* Never three at once: no execution started while two others ran. */
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				CBT_SCHED_EXECS
				"SELECT count(*) FROM e a WHERE (SELECT count(*) "
				"FROM e b WHERE b.job_execution_id <> "
				"a.job_execution_id AND b.start_time <= a.start_time "
				"AND b.end_time > a.start_time) >= 2",
				"s", "par"),
		  0);
	/* ...and two at once, as asked. */
	CU_ASSERT(cbt_sched_overlaps(&sched, "par") >= 1);
}

static void test_cancel_removes_the_waiting_ones(void)
{
	fresh();
	add_daily("c", "skip", "0");
	CBT_EQ_LL(
		EX("schedule", "backfill", "c", "--from", "2026-09-01", "--to", "2026-09-03T12:00"),
		0);
	CBT_EQ_LL(firings("c", "BACKFILL"), 3);
	CBT_EQ_LL(EX("schedule", "backfill", "c", "--cancel", "--from", "2026-09-01"), 2);
	CBT_EQ_LL(EX("schedule", "backfill", "c", "--cancel"), 0);
	CBT_CONTAINS(sched.out, "3 waiting firings removed");
	CBT_EQ_LL(firings("c", "%"), 0);
	CBT_EQ_LL(events("c", "CANCELED"), 3);
	/* What was asked for stays in the history. */
	CBT_EQ_LL(events("c", "BACKFILL"), 3);
	CBT_EQ_LL(EX("schedule", "backfill", "c", "--cancel"), 0);
	CBT_CONTAINS(sched.out, "nothing canceled");
	CBT_EQ_LL(
		EX("schedule", "backfill", "c", "--from", "2026-09-01", "--to", "2026-09-03T12:00"),
		0);
	CBT_CONTAINS(sched.out, "3 queued as BACKFILL firings");
	CBT_EQ_LL(firings("c", "BACKFILL"), 3);
}

/*
 * The present before the past: under QUEUE, an instant of the schedule's own
 * that comes due while a firing is live still queues (the backfill's waiting
 * firings are not the one QUEUE keeps; before, it was SKIPPED_OVERLAP behind
 * them), and once the live one has ended a node takes it before them. The
 * SQL functions as a node calls them, with a node of the test's own.
 */
static void test_own_queued_instant_goes_before_the_backfill(void)
{
	fresh();
	add_daily("own", "queue", "0");
	CBT_EQ_LL(EX("schedule", "backfill", "own", "--from", "2026-11-01", "--to",
		     "2026-11-02T12:00"),
		  0);
	cbt_exec(sched.conn, "INSERT INTO batch_scheduler_node (node_id, host, pid, lease_seconds) "
			     "VALUES ('test-node', 'test', 1, 3600)");
	cbt_exec(sched.conn, "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, "
			     "node_id, status, job_name) SELECT schedule_id, '2026-12-01 05:00Z', "
			     "'SCHEDULED', 'test-node', 'LAUNCHED', 'tick' FROM batch_schedule "
			     "WHERE schedule_name = 'own'");
	CBT_EQ_LL(cbt_query_ll(
			  sched.conn,
			  "SELECT (c.outcome = 'QUEUED')::int FROM batch_schedule s, "
			  "batch_schedule_claim(p_schedule_id => s.schedule_id, p_version => "
			  "s.version, p_fire_time => '2026-12-02 05:00Z', p_kind => 'SCHEDULED', "
			  "p_missed_until => NULL, p_missed_count => 0, p_param_time => "
			  "'2026-12-02 05:00Z', p_next_fire_time => NULL, p_node => 'test-node', "
			  "p_job_key => 'k', p_parameters => '[]') c WHERE s.schedule_name = "
			  "'own'"),
		  1);
	/* Nothing is taken while the live one runs... */
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_take_queued("
					   "'test-node', ARRAY['tick']::varchar[])"),
		  0);
	cbt_exec(sched.conn, "UPDATE batch_schedule_firing SET status = 'FINISHED' WHERE "
			     "fire_time = '2026-12-01 05:00Z'");
	/* ...then the schedule's own instant, alone, though the backfill's are older. */
	CBT_EQ_LL(cbt_query_ll(
			  sched.conn,
			  "SELECT count(*) FILTER (WHERE t.fire_time = '2026-12-02 05:00Z') * 10 "
			  "+ count(*) FROM batch_schedule_take_queued('test-node', "
			  "ARRAY['tick']::varchar[]) t"),
		  11);
	CBT_EQ_LL(firings("own", "BACKFILL"), 2);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
					   "kind = 'BACKFILL' AND status = 'QUEUED'"),
		  2);
}

static const CU_TestInfo tests[] = {
	{ "refusals_write_nothing", test_refusals_write_nothing },
	{ "one_firing_per_past_instant_never_twice", test_one_firing_per_past_instant_never_twice },
	{ "skip_runs_them_alone_oldest_first", test_skip_runs_them_alone_oldest_first },
	{ "queue_runs_them_alone_oldest_first", test_queue_runs_them_alone_oldest_first },
	{ "allow_runs_parallel_at_most", test_allow_runs_parallel_at_most },
	{ "cancel_removes_the_waiting_ones", test_cancel_removes_the_waiting_ones },
	{ "own_queued_instant_goes_before_the_backfill",
	  test_own_queued_instant_goes_before_the_backfill },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("schedule_backfill", init, clean, tests);
}
