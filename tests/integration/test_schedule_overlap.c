/*
 * A schedule's overlap policy and its recovery, with real scheduler nodes and
 * the tick job fired every second but taking longer than a second:
 *
 *  - skip (the default): no two executions of the schedule ever overlap in
 *    time (start and end in batch_job_execution), the instants due meanwhile
 *    are SKIPPED_OVERLAP firings with the reason, in events and metrics;
 *    also with two nodes;
 *  - queue: one instant waits at most (more are skipped), and runs after the
 *    live one with its own instant's parameters; no overlap;
 *  - consecutive skips because of the same live firing are one row (firing
 *    and event) with a count and a range, extended as they come, in the CLI
 *    and the JSON; a pause or another live firing starts a new row; a node
 *    that offers an instant of the run lost its claim: counted, not recorded;
 *  - allow: overlaps happen (as before the policy existed);
 *  - recovery: a node killed -9 while its child runs (the child stops on the
 *    parent-death signal, STOPPED) has that execution restarted by the
 *    surviving node after its lease, to COMPLETED; a run that always dies
 *    (its process killed) is restarted at most N times, then NOT_RECOVERED;
 *    a run that FAILED of its own error is never restarted; `--recover leave`
 *    restarts nothing.
 */
#include "cbtest.h"
#include "sched.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch.h"

static cbt_sched sched;

static int init(void)
{
	return cbt_sched_init(&sched, "overlap");
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

static void fresh(void)
{
	cbt_sched_clear(&sched);
	CBT_EQ_LL(EX("example-setup", "tick", "--reset"), 0);
}

/* Pairs of executions of schedule @p name that ran at the same time. */
static long long overlaps(const char *name)
{
	return cbt_sched_overlaps(&sched, name);
}

/* Executions of schedule @p name (by their schedule.name parameter). */
static long long execs(const char *name)
{
	return cbt_sched_execs(&sched, name, NULL);
}

static long long firings(const char *name, const char *status)
{
	return cbt_sched_firings(&sched, name, status);
}

static long long events(const char *name, const char *outcome, const char *like)
{
	return cbt_queryp_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_event e JOIN batch_schedule s "
			     "USING (schedule_id) WHERE s.schedule_name = $1 AND e.outcome = $2 "
			     "AND e.message LIKE $3",
			     "s s s", name, outcome, like);
}

/* Print the firings and events of every schedule: what a case that did not
 * reach its state shows. */
static void print_firings(void)
{
	cbt_print_rows(sched.conn, "firings (id, schedule, fire time, node, status, execution)",
		       "SELECT f.firing_id, s.schedule_name, f.fire_time, f.node_id, f.status, "
		       "f.job_execution_id FROM batch_schedule_firing f JOIN batch_schedule s "
		       "USING (schedule_id) ORDER BY f.firing_id");
	cbt_print_rows(sched.conn, "events (firing, node, outcome, message)",
		       "SELECT firing_id, node_id, outcome, message FROM batch_schedule_event "
		       "ORDER BY event_id");
}

/* Wait (at most 60 s: a loaded machine, a sanitizer build) until @p until,
 * an integer query, is positive; else a failure that shows the firings. */
static void wait_for(const char *until)
{
	if (!cbt_wait_until(sched.conn, 60000, until)) {
		CBT_FAILF("not reached within 60 s: %s", until);
		print_firings();
	}
}

/* One node, lease 5 s, until @p until (an integer query) is positive (at
 * most 60 s); then stopped between runs. What the case asserts is what it
 * waits for, never a run time. */
static void run_node_until(const char *name, const char *until)
{
	char log[512];
	pid_t pid;

	log_path(log, sizeof(log), name);
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	wait_for(until);
	cbt_sched_stop_between_runs(&sched, pid);
}

static void test_skip_is_the_default_and_nothing_overlaps(void)
{
	json_t *doc;
	json_error_t je;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "slow", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=2500"),
		  0);
	CBT_EQ_LL(EX("schedule", "show", "slow"), 0);
	CBT_CONTAINS(sched.out, "overlap     SKIP");
	CBT_CONTAINS(sched.out, "recover     RESTART, at most 3 attempts, 10s after the end");
	CBT_EQ_LL(EX("schedule", "list"), 0);
	CBT_CONTAINS(sched.out, "OVERLAP");
	CBT_CONTAINS(sched.out, "skip");
	CBT_EQ_LL(EX("--json", "schedule", "list"), 0);
	doc = json_loads(sched.out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CBT_EQ_STR(json_string_value(json_object_get(
			   json_array_get(json_object_get(doc, "schedules"), 0), "overlap_policy")),
		   "SKIP");
	json_decref(doc);

	/* Until two runs and three skipped instants, one naming the execution
	 * that was running. */
	run_node_until("skip",
		       "SELECT ((SELECT count(*) FROM batch_job_execution_params WHERE "
		       "parameter_name = 'schedule.name' AND parameter_value = 'slow') >= 2 AND "
		       "(SELECT sum(instant_count) FROM batch_schedule_firing WHERE status = "
		       "'SKIPPED_OVERLAP') >= 3 AND (SELECT count(*) FROM batch_schedule_event "
		       "WHERE outcome = 'SKIPPED_OVERLAP' AND message LIKE '%runs execution%') "
		       ">= 1)::int");
	CU_ASSERT(execs("slow") >= 2);
	CBT_EQ_LL(overlaps("slow"), 0);
	/* The instants due meanwhile: recorded, with the live firing named. */
	CU_ASSERT(cbt_query_ll(sched.conn, "SELECT sum(instant_count) FROM batch_schedule_firing "
					   "WHERE status = 'SKIPPED_OVERLAP'") >= 3);
	CBT_EQ_LL(events("slow", "SKIPPED_OVERLAP", "skipped: firing % (overlap policy SKIP)"),
		  firings("slow", "SKIPPED_OVERLAP"));
	CU_ASSERT(events("slow", "SKIPPED_OVERLAP", "%runs execution%") >= 1);
	/* Nothing launched for them. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_firing "
			       "WHERE status = 'SKIPPED_OVERLAP' AND (job_execution_id IS NOT "
			       "NULL OR pid IS NOT NULL OR job_key IS NOT NULL)"),
		  0);
	CBT_EQ_LL(EX("schedule", "history", "slow", "--limit", "100"), 0);
	CBT_CONTAINS(sched.out, "SKIPPED_OVERLAP");
	CBT_EQ_LL(EX("metrics"), 0);
	CBT_CONTAINS(sched.out, "cbatch_schedule_skipped_overlap_total");
}

/* Claim instant base + @p sec of schedule "runs" as @p node, as a scheduler
 * node does (batch_schedule_claim): its outcome. */
static void claim_at(char *out, size_t size, const char *node, int sec)
{
	char sc[16];
	const char *p[2] = { node, sc };
	PGresult *res;

	snprintf(sc, sizeof(sc), "%d", sec);
	res = PQexecParams(
		sched.conn,
		"WITH s AS (SELECT schedule_id, version, base FROM batch_schedule, runs_base "
		" WHERE schedule_name = 'runs'), t AS (SELECT base + $2::int * interval '1 second' "
		" AS at FROM s) "
		"SELECT c.outcome FROM s, t, batch_schedule_claim(p_schedule_id => s.schedule_id, "
		" p_version => s.version, p_fire_time => t.at, p_kind => 'SCHEDULED', "
		" p_missed_until => NULL, p_missed_count => 0, p_param_time => t.at, "
		" p_next_fire_time => t.at + interval '1 second', p_node => $1, "
		" p_job_key => NULL, p_parameters => '[]') c",
		2, NULL, p, NULL, NULL, 0);
	snprintf(out, size, "%s",
		 PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ?
			 PQgetvalue(res, 0, 0) :
			 PQerrorMessage(sched.conn));
	PQclear(res);
}

#define CLAIM_IS(node, sec, want)                                                                  \
	do {                                                                                       \
		char got_[512];                                                                    \
		claim_at(got_, sizeof(got_), (node), (sec));                                       \
		CBT_EQ_STR(got_, (want));                                                          \
	} while (0)

/* A live firing of schedule "runs" at base + @p sec, launched by a node whose
 * lease holds: its id. */
static long long live_firing_at(int sec)
{
	char sc[16];

	snprintf(sc, sizeof(sc), "%d", sec);
	return cbt_queryp_ll(sched.conn,
			     "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, "
			     " node_id, status, job_name) SELECT schedule_id, base + $1::int * "
			     " interval '1 second', 'SCHEDULED', 'holder', 'CLAIMED', 'tick' FROM "
			     " batch_schedule, runs_base WHERE schedule_name = 'runs' "
			     "RETURNING firing_id",
			     "s", sc);
}

/* The runs of skips of schedule "runs", firing and event agreeing:
 * "first+count..last+count blocked_by" (seconds after base), oldest first. */
static void skip_runs(char *out, size_t size)
{
	cbt_query_str(sched.conn,
		      "SELECT coalesce(string_agg(extract(epoch FROM f.fire_time - b.base)::bigint "
		      " || '..' || extract(epoch FROM f.last_instant - b.base)::bigint || ' x' "
		      " || f.instant_count "
		      " || ' by ' || f.blocked_by || CASE WHEN e.n = 1 AND e.instant_count = "
		      " f.instant_count AND e.last_instant = f.last_instant AND e.fire_time = "
		      " f.fire_time THEN '' ELSE ' (event disagrees)' END, ', ' "
		      " ORDER BY f.fire_time), '') "
		      "FROM batch_schedule_firing f CROSS JOIN runs_base b "
		      "LEFT JOIN LATERAL (SELECT count(*) OVER () AS n, v.instant_count, "
		      " coalesce(v.last_instant, v.fire_time) AS last_instant, v.fire_time "
		      " FROM batch_schedule_event v WHERE v.firing_id = f.firing_id "
		      " AND v.outcome = 'SKIPPED_OVERLAP') e ON true "
		      "WHERE f.status = 'SKIPPED_OVERLAP'",
		      out, size);
}

/*
 * After an outage shared by every node (sql/023): node "holder" (lease 4 s)
 * has been silent for 10 s and has a firing being launched; node "back" has
 * been connected again for 1 s, node "along" was connected throughout. For
 * "back" the silence is no sign of death (the holder was cut off no longer
 * than it was): the firing is live, the instant skipped, nothing ORPHANED.
 * For "along" the holder is gone: its firing is ORPHANED and the instant
 * claimed.
 */
static void test_a_node_back_from_an_outage_counts_no_one_gone_for_it(void)
{
	long long a;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "runs", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}"),
		  0);
	cbt_exec(sched.conn, "DROP TABLE IF EXISTS runs_base; CREATE TABLE runs_base AS SELECT "
			     "date_trunc('second', batch_now()) - interval '30 seconds' AS base; "
			     "INSERT INTO batch_scheduler_node (node_id, host, pid, lease_seconds, "
			     " heartbeat_at, session_since) VALUES "
			     "('holder', 'h', 1, 4, batch_now() - interval '10 seconds', NULL), "
			     "('back', 'h', 2, 4, batch_now(), batch_now() - interval '1 second'), "
			     "('along', 'h', 3, 4, batch_now(), NULL)");
	a = live_firing_at(0);
	CLAIM_IS("back", 1, "SKIPPED_OVERLAP");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'ORPHANED'"),
		  0);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE firing_id = $1 AND "
			      "status = 'CLAIMED'",
			      "lld", a),
		1);
	CLAIM_IS("along", 2, "CLAIMED");
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_event WHERE outcome = "
				"'ORPHANED' AND firing_id = $1",
				"lld", a),
		  1);
}

static void test_consecutive_skips_are_one_row(void)
{
	char runs[1024], want[1024], line[256], first[16], last[16];
	long long a, b, lost;
	const char *at;
	json_t *doc, *ev;
	json_error_t je;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "runs", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}"),
		  0);
	/* Instants a few seconds back (well within the grace), a node whose
	 * lease holds, and its firing at base, live (being launched). */
	cbt_exec(sched.conn, "CREATE TABLE runs_base AS SELECT "
			     "date_trunc('second', batch_now()) - interval '30 seconds' AS base; "
			     "INSERT INTO batch_scheduler_node (node_id, host, pid, lease_seconds) "
			     "VALUES ('holder', 'h', 1, 3600)");
	a = live_firing_at(0);
	/* Three instants skipped in a row: one row, extended. */
	CLAIM_IS("n1", 1, "SKIPPED_OVERLAP");
	CLAIM_IS("n2", 2, "SKIPPED_OVERLAP");
	CLAIM_IS("n1", 3, "SKIPPED_OVERLAP");
	skip_runs(runs, sizeof(runs));
	snprintf(want, sizeof(want), "1..3 x3 by %lld", a);
	CBT_EQ_STR(runs, want);
	/* Another node offering an instant of the run lost its claim: counted,
	 * not history. */
	CLAIM_IS("n2", 2, "SKIPPED_CLAIMED");
	CLAIM_IS("n2", 3, "SKIPPED_CLAIMED");
	CLAIM_IS("n2", 0, "SKIPPED_CLAIMED");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'SKIPPED_CLAIMED'"),
		  0);
	lost = cbt_query_ll(sched.conn,
			    "SELECT coalesce(sum(c.value), 0) FROM "
			    "batch_metric_counter c JOIN batch_schedule s ON c.subject = "
			    "s.schedule_id::text WHERE s.schedule_name = 'runs' AND "
			    "c.metric = 'schedule_claim_lost_count'");
	CBT_EQ_LL(lost, 3);
	/* The CLI reads the run as one row: how many, from when to when, why. */
	CBT_EQ_LL(EX("schedule", "history", "runs"), 0);
	cbt_query_str(sched.conn,
		      "SELECT to_char((base + interval '1 second') AT TIME ZONE 'UTC', "
		      "'HH24:MI:SS') FROM runs_base",
		      first, sizeof(first));
	cbt_query_str(sched.conn,
		      "SELECT to_char((base + interval '3 seconds') AT TIME ZONE 'UTC', "
		      "'HH24:MI:SS') FROM runs_base",
		      last, sizeof(last));
	at = strstr(sched.out, "3 instants ");
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
	snprintf(want, sizeof(want), "3 instants %s\xe2\x80\x93%s", first, last);
	CBT_CONTAINS(line, want);
	snprintf(want, sizeof(want), " skipped: firing %lld (", a);
	CBT_CONTAINS(line, want);
	CBT_CONTAINS(line, "(overlap policy SKIP)");
	/* The live firing's instant in ISO 8601, not the server's DateStyle. */
	{
		const char *t = strstr(line, want);
		int y, mo, d, h, mi, sec;
		char z = 0, close = 0;

		if (!t ||
		    sscanf(t + strlen(want), "%4d-%2d-%2dT%2d:%2d:%2d%c%c", &y, &mo, &d, &h, &mi,
			   &sec, &z, &close) != 8 ||
		    z != 'Z' || close != ')')
			CBT_FAILF("the live firing's instant is not ISO 8601 UTC: %s", line);
	}
	/* Its JSON: the count and both ends. */
	CBT_EQ_LL(EX("--json", "schedule", "history", "runs"), 0);
	doc = json_loads(sched.out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	ev = json_array_get(json_object_get(doc, "events"), 0);
	CBT_EQ_STR(json_string_value(json_object_get(ev, "outcome")), "SKIPPED_OVERLAP");
	CBT_EQ_LL(json_integer_value(json_object_get(ev, "instant_count")), 3);
	CU_ASSERT(json_is_string(json_object_get(ev, "fire_time")));
	CU_ASSERT_FATAL(json_is_string(json_object_get(ev, "last_instant")));
	CU_ASSERT(strcmp(json_string_value(json_object_get(ev, "fire_time")),
			 json_string_value(json_object_get(ev, "last_instant"))) < 0);
	json_decref(doc);
	/* A pause between: the next skip starts a row of its own. */
	CBT_EQ_LL(EX("schedule", "pause", "runs"), 0);
	CBT_EQ_LL(EX("schedule", "resume", "runs"), 0);
	CLAIM_IS("n1", 4, "SKIPPED_OVERLAP");
	CLAIM_IS("n2", 5, "SKIPPED_OVERLAP");
	/* Another live firing: another reason, another row. */
	cbt_exec(sched.conn, "UPDATE batch_schedule_firing SET status = 'FINISHED' "
			     "WHERE node_id = 'holder'");
	b = live_firing_at(6);
	CLAIM_IS("n1", 7, "SKIPPED_OVERLAP");
	CLAIM_IS("n2", 8, "SKIPPED_OVERLAP");
	skip_runs(runs, sizeof(runs));
	snprintf(want, sizeof(want), "1..3 x3 by %lld, 4..5 x2 by %lld, 7..8 x2 by %lld", a, a, b);
	CBT_EQ_STR(runs, want);
	/* The status counts count rows: three of skips, however long. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT coalesce(sum(b.n), 0) FROM batch_status_count b JOIN "
			       "batch_schedule s ON b.subject = s.schedule_id::text WHERE b.kind = "
			       "'schedule' AND s.schedule_name = 'runs' AND b.status = "
			       "'SKIPPED_OVERLAP'"),
		  3);
	/* The counter counts instants: as many as the runs stand for. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT coalesce(sum(c.value), 0) FROM batch_metric_counter c JOIN "
			       "batch_schedule s ON c.subject = s.schedule_id::text WHERE "
			       "s.schedule_name = 'runs' AND c.metric = "
			       "'schedule_skipped_overlap_count'"),
		  7);
	cbt_exec(sched.conn, "DELETE FROM batch_scheduler_node WHERE node_id = 'holder'; "
			     "DROP TABLE runs_base");
}

/* Gaps between two consecutive fired firings (of an every-second schedule)
 * that are not one row of skips blocked by the first, from the instant after
 * it to the one before the next, counting each instant between. */
static long long unexplained_gaps(void)
{
	return cbt_query_ll(
		sched.conn,
		"WITH f AS (SELECT firing_id, fire_time, lead(fire_time) OVER (ORDER BY fire_time) "
		" AS next FROM batch_schedule_firing WHERE status IN ('LAUNCHED', 'FINISHED')) "
		"SELECT count(*) FROM f WHERE f.next IS NOT NULL AND f.next > f.fire_time + "
		" interval '1 second' AND NOT EXISTS (SELECT 1 FROM batch_schedule_firing k "
		" WHERE k.blocked_by = f.firing_id AND k.status = 'SKIPPED_OVERLAP' "
		" AND k.fire_time = f.fire_time + interval '1 second' "
		" AND coalesce(k.last_instant, k.fire_time) = f.next - interval '1 second' "
		" AND k.instant_count = extract(epoch FROM f.next - f.fire_time) - 1)");
}

/* A job slower than its every-second schedule, with a real node: the
 * instants between two fired ones are one row, standing for every one of
 * them (sum of counts == instants not fired), one row per live firing. */
static void test_a_slow_job_skips_read_as_one_row_each(void)
{
	long long fired, gaps, rows, sum;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "long", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=3500"),
		  0);
	/* Until three firings ran. */
	run_node_until("long", "SELECT (count(*) >= 3)::int FROM batch_schedule_firing WHERE "
			       "status IN ('LAUNCHED', 'FINISHED')");
	CBT_EQ_LL(overlaps("long"), 0);
	fired = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
					 "status IN ('LAUNCHED', 'FINISHED')");
	CU_ASSERT(fired >= 3);
	/* Between two consecutive fired firings: exactly one row of skips,
	 * blocked by the first, standing for every instant between them. */
	gaps = unexplained_gaps();
	CBT_EQ_LL(gaps, 0);
	rows = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
					"status = 'SKIPPED_OVERLAP'");
	CU_ASSERT(rows >= 2);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM (SELECT blocked_by FROM "
					   "batch_schedule_firing WHERE status = 'SKIPPED_OVERLAP' "
					   "GROUP BY blocked_by HAVING count(*) > 1) d"),
		  0);
	/* Every instant from the first firing to the last has its firing or
	 * lies in a run: the counts add up to the instants not fired. */
	sum = cbt_query_ll(sched.conn, "SELECT coalesce(sum(instant_count), 0) FROM "
				       "batch_schedule_firing WHERE status = 'SKIPPED_OVERLAP'");
	CBT_EQ_LL(sum + cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing "
						 "WHERE status <> 'SKIPPED_OVERLAP'"),
		  cbt_query_ll(sched.conn,
			       "SELECT extract(epoch FROM max(coalesce(last_instant, fire_time)) "
			       "- min(fire_time))::bigint + 1 FROM batch_schedule_firing"));
	/* One event per run, the same count. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT coalesce(sum(instant_count), 0) FROM "
			       "batch_schedule_event WHERE outcome = 'SKIPPED_OVERLAP'"),
		  sum);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'SKIPPED_OVERLAP'"),
		  rows);
}

static void test_allow_overlaps_as_before(void)
{
	fresh();
	CBT_EQ_LL(EX("schedule", "add", "any", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=2500", "--overlap", "allow"),
		  0);
	/* Until two pairs of runs overlapped. */
	run_node_until("allow",
		       "WITH e AS (SELECT x.job_execution_id, x.start_time, coalesce(x.end_time, "
		       "clock_timestamp()) AS end_time FROM batch_job_execution x JOIN "
		       "batch_job_execution_params p USING (job_execution_id) WHERE "
		       "p.parameter_name = 'schedule.name' AND p.parameter_value = 'any' AND "
		       "x.start_time IS NOT NULL) SELECT (count(*) >= 2)::int FROM e a JOIN e b ON "
		       "a.job_execution_id < b.job_execution_id AND a.start_time < b.end_time AND "
		       "b.start_time < a.end_time");
	CU_ASSERT(overlaps("any") >= 2);
	CBT_EQ_LL(firings("any", "SKIPPED_OVERLAP"), 0);
}

static void test_queue_runs_one_waiting_firing_after_the_live_one(void)
{
	fresh();
	CBT_EQ_LL(EX("schedule", "add", "q", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=2500", "--overlap", "queue"),
		  0);
	/* Until two instants were queued, two skipped behind a queued one, and a
	 * queued firing ran for its own instant. */
	run_node_until(
		"queue",
		"SELECT ((SELECT count(*) FROM batch_schedule_event WHERE outcome = 'QUEUED') "
		">= 2 AND (SELECT count(*) FROM batch_schedule_event WHERE outcome = "
		"'SKIPPED_OVERLAP' AND message LIKE '%another firing is queued already%') >= 2 "
		"AND EXISTS (SELECT 1 FROM batch_schedule_firing f JOIN tick_log t ON "
		"t.fired_for = to_char(f.fire_time AT TIME ZONE 'UTC', "
		"'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AND t.job_execution_id = f.job_execution_id "
		"WHERE f.status = 'FINISHED' AND EXISTS (SELECT 1 FROM batch_schedule_event e "
		"WHERE e.firing_id = f.firing_id AND e.outcome = 'QUEUED')))::int");
	CBT_EQ_LL(overlaps("q"), 0);
	CU_ASSERT(events("q", "QUEUED", "queued: firing % (overlap policy QUEUE)") >= 2);
	CU_ASSERT(events("q", "SKIPPED_OVERLAP", "%another firing is queued already%") >= 2);
	CU_ASSERT(firings("q", "QUEUED") <= 1);
	/* A queued firing ran, later, for its own instant. */
	CU_ASSERT(
		cbt_query_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_firing f JOIN tick_log t ON "
			     "t.fired_for = to_char(f.fire_time AT TIME ZONE 'UTC', "
			     "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AND t.job_execution_id = "
			     "f.job_execution_id WHERE f.status = 'FINISHED' AND EXISTS (SELECT 1 "
			     "FROM batch_schedule_event e WHERE e.firing_id = f.firing_id AND "
			     "e.outcome = 'QUEUED')") >= 1);
	/* Never two waiting at once: each QUEUED event's firing was taken before
	 * the next instant was queued. */
	CBT_EQ_LL(
		cbt_query_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_event a JOIN "
			     "batch_schedule_event b ON a.outcome = 'QUEUED' AND b.outcome = "
			     "'QUEUED' AND a.event_id < b.event_id JOIN batch_schedule_firing f ON "
			     "f.firing_id = a.firing_id WHERE f.claimed_at > b.recorded_at"),
		0);
}

static void test_two_nodes_with_skip_never_overlap(void)
{
	char logs[2][512];
	pid_t pid[2];

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "pair", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=1500"),
		  0);
	for (int i = 0; i < 2; i++) {
		log_path(logs[i], sizeof(logs[i]), i ? "pair-b" : "pair-a");
		pid[i] = SPAWN(logs[i], "scheduler", "--lease", "5");
		CU_ASSERT_FATAL(pid[i] > 0);
	}
	/* Until three runs and two skipped instants, whichever node took them;
	 * then both stopped between runs. */
	wait_for("SELECT ((SELECT count(*) FROM batch_job_execution_params WHERE "
		 "parameter_name = 'schedule.name' AND parameter_value = 'pair') >= 3 AND "
		 "(SELECT count(*) FROM batch_schedule_firing WHERE status = "
		 "'SKIPPED_OVERLAP') >= 2)::int");
	cbt_sched_stop_nodes_between_runs(&sched, pid, 2);
	CU_ASSERT(execs("pair") >= 3);
	CBT_EQ_LL(overlaps("pair"), 0);
	CU_ASSERT(firings("pair", "SKIPPED_OVERLAP") >= 2);
	/* Whichever node recorded each skip, the skips behind one firing are
	 * one row (extended under the schedule's row lock), and lost claims
	 * are not history. */
	CBT_EQ_LL(unexplained_gaps(), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM (SELECT blocked_by FROM "
					   "batch_schedule_firing WHERE status = 'SKIPPED_OVERLAP' "
					   "GROUP BY blocked_by HAVING count(*) > 1) d"),
		  0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'SKIPPED_CLAIMED'"),
		  0);
	if (CU_get_number_of_failures() > 0)
		print_firings();
}

/* ---- recovery ------------------------------------------------------------ */

/*
 * A scheduled run that FAILED because its database stayed away beyond its
 * outage budget (exit code DATABASE_LOST, data) is due for a restart; one
 * that FAILED of its own error is not. The rule is the SQL function's, fed
 * the two endings of one real execution.
 */
static void test_a_run_that_lost_its_database_is_recovered(void)
{
	long long exec, firing;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "lost", "--cron", "0 0 1 1 *", "--job", "tick", "at=lost",
		     "--recover-delay", "1", "--same-instance"),
		  0);
	CBT_EQ_LL(EX("run", "tick", "at=lost", "-fail:long=1"), 1);
	exec = cbt_query_ll(sched.conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	firing = cbt_queryp_ll(
		sched.conn,
		"INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, status, "
		"job_name, job_execution_id) SELECT schedule_id, clock_timestamp(), 'SCHEDULED', "
		"'test', 'FINISHED', 'tick', $1 FROM batch_schedule WHERE schedule_name = 'lost' "
		"RETURNING firing_id",
		"lld", exec);
	/* Its own error: never restarted. */
	cbt_queryp_ll(sched.conn,
		      "SELECT count(*) FROM batch_schedule_plan_recovery($1, 'test', 'finished')",
		      "lld", firing);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome IN ('RECOVERY_DUE', 'NOT_RECOVERED')"),
		  0);
	/* Its database lost: due. */
	cbt_queryp_ll(sched.conn,
		      "WITH u AS (UPDATE batch_job_execution SET exit_code = 'DATABASE_LOST' "
		      "WHERE job_execution_id = $1 RETURNING 1) SELECT count(*) FROM u",
		      "lld", exec);
	cbt_queryp_ll(sched.conn,
		      "SELECT count(*) FROM batch_schedule_plan_recovery($1, 'test', 'finished')",
		      "lld", firing);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_event WHERE outcome = "
				"'RECOVERY_DUE' AND firing_id = $1 AND message LIKE "
				"'%database lost beyond the outage budget%'",
				"lld", firing),
		  1);
}

static void test_killed_node_execution_is_restarted_by_the_survivor(void)
{
	char logs[2][512];
	pid_t a, b;
	long long exec, inst;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "rec", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=3000", "--recover-delay", "1"),
		  0);
	log_path(logs[0], sizeof(logs[0]), "rec-a");
	log_path(logs[1], sizeof(logs[1]), "rec-b");
	a = SPAWN(logs[0], "scheduler", "--lease", "2");
	CU_ASSERT_FATAL(a > 0);
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_job_execution "
				       "WHERE status = 'STARTED'"));
	exec = cbt_query_ll(sched.conn, "SELECT min(job_execution_id) FROM batch_job_execution "
					"WHERE status = 'STARTED'");
	inst = cbt_queryp_ll(sched.conn,
			     "SELECT job_instance_id FROM batch_job_execution "
			     "WHERE job_execution_id = $1",
			     "lld", exec);
	b = SPAWN(logs[1], "scheduler", "--lease", "2");
	CU_ASSERT_FATAL(b > 0);
	kill(a, SIGKILL);
	CBT_EQ_LL(cbt_wait_timeout(a, 60000), 128 + SIGKILL);
	/* The child stops on the parent-death signal... */
	CU_ASSERT(cbt_wait_untilp(sched.conn, 60000,
				  "SELECT count(*) FROM batch_job_execution WHERE "
				  "job_execution_id = $1 AND status = 'STOPPED'",
				  "lld", exec));
	/* ...and the survivor restarts it once the dead node's lease is over. */
	CU_ASSERT(cbt_wait_untilp(sched.conn, 120000,
				  "SELECT count(*) FROM batch_job_execution WHERE "
				  "job_instance_id = $1 AND job_execution_id > $2 AND "
				  "status = 'COMPLETED'",
				  "lld lld", inst, exec));
	cbt_sched_stop_between_runs(&sched, b);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_instance_id = "
				"$1",
				"lld", inst),
		  2);
	CBT_EQ_LL(events("rec", "ORPHANED", "%"), 1);
	/* Either the child ended on the parent-death signal before the survivor
	 * found its node gone, or the survivor was first (under load, a chunk
	 * can outlast the dead node's lease): both are due for a restart, each
	 * saying which it saw. */
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_event WHERE outcome = "
			       "'RECOVERY_DUE' AND attempt = 1 AND message LIKE "
			       "'%restart attempt 1 of 3%' AND (message LIKE "
			       "'%ended STOPPED by its node''s death (the parent-death "
			       "signal)%' OR message ~ 'was (STARTED|STOPPING) when its node "
			       "was found gone')"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_event WHERE outcome = "
			       "'RESTARTED' AND attempt = 1"),
		  1);
	/* One tick_log row for that instant: the restart did the work once. */
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM tick_log t JOIN batch_job_execution e USING "
				"(job_execution_id) WHERE e.job_instance_id = $1",
				"lld", inst),
		  1);
	CBT_EQ_LL(overlaps("rec"), 0);
	CBT_EQ_LL(EX("schedule", "history", "rec", "--limit", "500"), 0);
	CBT_CONTAINS(sched.out, "RESTARTED #1");
}

/* Whether signal @p sig is pending for process @p pid (stopped by SIGSTOP,
 * it is delivered only once the process goes on). */
static int signal_pending(pid_t pid, int sig)
{
	char path[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0)
			found = (strtoull(line + 7, NULL, 16) >> (sig - 1)) & 1;
	fclose(f);
	return found;
}

/* Wait (at most @p ms) until signal @p sig is pending for @p pid. */
static int wait_signal_pending(pid_t pid, int sig, int ms)
{
	for (int waited = 0; waited < ms; waited += 20) {
		if (signal_pending(pid, sig))
			return 1;
		cbt_sleep_ms(20);
	}
	return signal_pending(pid, sig);
}

enum op_stop_then {
	NODE_SIGTERM,
	NODE_SIGTERM_CHILD_KILLED,
	NODE_KILLED,
	NODE_KILLED_CHILD_ENDS_AFTER_PLAN
};

/*
 * Issue 25 item 2: an operator's `stop` of a scheduled run is never undone
 * by the schedule's recovery, however the run then ends. The child is held
 * (SIGSTOP) so that the stop is still STOPPING when its node goes:
 *  - NODE_SIGTERM: the node is stopped (SIGTERM, passed on to the child),
 *    the child ends STOPPED while its node is stopping;
 *  - NODE_SIGTERM_CHILD_KILLED: the same, but the child is killed -9 while
 *    STOPPING: its node buries it (FAILED "owner lost"), the origin stays;
 *  - NODE_KILLED: the node is killed -9 (the child gets the parent-death
 *    signal and ends STOPPED); a second node finds the firing orphaned;
 *  - NODE_KILLED_CHILD_ENDS_AFTER_PLAN: the same, but the child goes on only
 *    once the second node has planned while it was still STOPPING, so that
 *    the decision is taken when the restart would be due, on an execution
 *    that has ended meanwhile (a stressed CI met this order by chance, and
 *    the message then said it in other words).
 * Either way the decision is NOT_RECOVERED, "an operator stopped it": no
 * restart due, none made. (Before: RECOVERY_DUE, and a restart.)
 */
static void operator_stop_case(const char *name, enum op_stop_then then)
{
	char logs[2][512], what[64];
	pid_t a, b = 0, child;
	long long exec, inst, firing;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", name, "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "-sleepMs:long=60000", "--recover-delay", "1"),
		  0);
	snprintf(what, sizeof(what), "%s-a", name);
	log_path(logs[0], sizeof(logs[0]), what);
	snprintf(what, sizeof(what), "%s-b", name);
	log_path(logs[1], sizeof(logs[1]), what);
	a = SPAWN(logs[0], "scheduler", "--lease", "2");
	CU_ASSERT_FATAL(a > 0);
	CU_ASSERT_FATAL(
		cbt_wait_until(sched.conn, 20000,
			       "SELECT count(*) FROM batch_schedule_firing f, "
			       "batch_schedule_firing_execution(f.firing_id) x WHERE f.status "
			       "= 'LAUNCHED' AND f.pid IS NOT NULL AND x.status = 'STARTED'"));
	firing = cbt_query_ll(sched.conn,
			      "SELECT min(f.firing_id) FROM batch_schedule_firing f, "
			      "batch_schedule_firing_execution(f.firing_id) x WHERE f.status = "
			      "'LAUNCHED' AND x.status = 'STARTED'");
	child = (pid_t)cbt_queryp_ll(sched.conn,
				     "SELECT pid FROM batch_schedule_firing WHERE firing_id = $1",
				     "lld", firing);
	exec = cbt_queryp_ll(sched.conn,
			     "SELECT job_execution_id FROM batch_schedule_firing_execution($1)",
			     "lld", firing);
	inst = cbt_queryp_ll(sched.conn,
			     "SELECT job_instance_id FROM batch_job_execution "
			     "WHERE job_execution_id = $1",
			     "lld", exec);
	CU_ASSERT_FATAL(child > 0 && exec > 0);
	/* Held, so that the stop below is still pending when the node goes. */
	CU_ASSERT_FATAL(kill(child, SIGSTOP) == 0);
	{
		char id[24];

		snprintf(id, sizeof(id), "%lld", exec);
		CBT_EQ_LL(EX("stop", id), 0);
	}
	if (then == NODE_KILLED || then == NODE_KILLED_CHILD_ENDS_AFTER_PLAN) {
		b = SPAWN(logs[1], "scheduler", "--lease", "2");
		CU_ASSERT_FATAL(b > 0);
		kill(a, SIGKILL);
		CBT_EQ_LL(cbt_wait_timeout(a, 10000), 128 + SIGKILL);
	} else {
		kill(a, SIGTERM);
	}
	/* The node's SIGTERM (or the parent-death signal) has reached the child. */
	CU_ASSERT_FATAL(wait_signal_pending(child, SIGTERM, 20000));
	if (then == NODE_KILLED_CHILD_ENDS_AFTER_PLAN)
		CU_ASSERT_FATAL(cbt_wait_untilp(sched.conn, 30000,
						"SELECT count(*) FROM batch_schedule_firing WHERE "
						"firing_id = $1 AND recover_after IS NOT NULL",
						"lld", firing));
	kill(child, then == NODE_SIGTERM_CHILD_KILLED ? SIGKILL : SIGCONT);
	/* The schedule's decision about that run, whichever node takes it. */
	CU_ASSERT_FATAL(cbt_wait_untilp(sched.conn, 30000,
					"SELECT count(*) FROM batch_schedule_event WHERE firing_id "
					"= $1 AND outcome IN ('NOT_RECOVERED', 'RECOVERY_DUE')",
					"lld", firing));
	if (b == 0)
		CBT_EQ_LL(cbt_wait_timeout(a, 30000), 0);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 "
				"AND outcome = 'RECOVERY_DUE'",
				"lld", firing),
		  0);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 "
				"AND outcome = 'NOT_RECOVERED' AND message LIKE "
				"'%not restarted: an operator stopped it%'",
				"lld", firing),
		  1);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_firing WHERE firing_id = $1 "
				"AND recover_after IS NOT NULL",
				"lld", firing),
		  0);
	/* It ended as the stop left it (STOPPED; FAILED, buried, when killed),
	 * recorded as the operator's stop: the burial kept the origin. */
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND stop_origin = 'OPERATOR' AND status = $2",
				"lld s", exec,
				then == NODE_SIGTERM_CHILD_KILLED ? "FAILED" : "STOPPED"),
		  1);
	{
		char id[24];

		snprintf(id, sizeof(id), "%lld", exec);
		CBT_EQ_LL(EX("show", id), 0);
		CBT_CONTAINS(sched.out, "stopped by:   OPERATOR");
	}
	if (b > 0) {
		kill(b, SIGTERM);
		CBT_EQ_LL(cbt_wait_timeout(b, 30000), 0);
	}
	/* Nothing restarted that instance. */
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_instance_id = "
				"$1",
				"lld", inst),
		  1);
}

static void test_operator_stop_survives_the_node_stop(void)
{
	operator_stop_case("opstop-term", NODE_SIGTERM);
}

static void test_operator_stop_survives_the_burial(void)
{
	operator_stop_case("opstop-kill", NODE_SIGTERM_CHILD_KILLED);
}

static void test_operator_stop_survives_the_node_death(void)
{
	operator_stop_case("opstop-dead", NODE_KILLED);
}

static void test_operator_stop_survives_a_late_end(void)
{
	operator_stop_case("opstop-late", NODE_KILLED_CHILD_ENDS_AFTER_PLAN);
}

/*
 * The node's session ended while it confirms a claim before the launch (a
 * switchover at that moment): the confirmation is asked again on a new
 * session and the instant runs, in a child process and in a runner. (A
 * stressed CI's switchover met it: FAILED_TO_LAUNCH "could not confirm the
 * claim before the launch: … 57P01", the instant lost.) A trigger ends the
 * session of the first such confirmation of each schedule, once.
 */
static void test_a_session_lost_confirming_a_launch_is_asked_again(void)
{
	static const char *const names[] = { "confirm-child", "confirm-runner" };

	fresh();
	/* A sequence, not a table: the cut session's transaction rolls back. */
	CBT_EQ_LL(
		cbt_exec(sched.conn,
			 "DROP SEQUENCE IF EXISTS cbt_cut_confirm; CREATE SEQUENCE "
			 "cbt_cut_confirm; CREATE OR REPLACE FUNCTION cbt_cut_confirm() RETURNS "
			 "trigger LANGUAGE plpgsql AS $$ BEGIN IF nextval('cbt_cut_confirm') = 1 "
			 "THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; "
			 "END $$; CREATE TRIGGER cbt_cut_confirm BEFORE UPDATE ON "
			 "batch_schedule_firing FOR EACH ROW WHEN (OLD.status = 'CLAIMED' AND "
			 "NEW.status = 'LAUNCHED') EXECUTE FUNCTION cbt_cut_confirm()"),
		0);
	for (int i = 0; i < 2; i++) {
		char log[512];
		long long first;
		pid_t pid;

		CBT_EQ_LL(EX("schedule", "add", names[i], "--cron", "* * * * * *", "--job", "tick",
			     "at={schedule}@{fire_utc}"),
			  0);
		log_path(log, sizeof(log), names[i]);
		pid = i == 0 ? SPAWN(log, "scheduler", "--lease", "5") :
			       SPAWN(log, "scheduler", "--lease", "5", "--runners", "1");
		CU_ASSERT_FATAL(pid > 0);
		/* Its first confirmation cut (then asked again), three finished. */
		if (!cbt_wait_until(sched.conn, 60000,
				    "SELECT (last_value >= 2)::int FROM cbt_cut_confirm"))
			CBT_FAILF("%s: no confirmation after the cut one within 60 s", names[i]);
		first = cbt_queryp_ll(
			sched.conn,
			"SELECT min(f.firing_id) FROM batch_schedule_firing f JOIN "
			"batch_schedule s USING (schedule_id) WHERE s.schedule_name = $1",
			"s", names[i]);
		if (!cbt_wait_untilp(
			    sched.conn, 60000,
			    "SELECT (count(*) >= 3)::int FROM batch_schedule_firing f JOIN "
			    "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
			    "$1 AND f.status = 'FINISHED' AND f.exit_code = 0",
			    "s", names[i]))
			print_firings();
		cbt_sched_stop_between_runs(&sched, pid);
		/* The cut firing ran; no instant failed to launch. */
		CBT_EQ_LL(cbt_queryp_ll(
				  sched.conn,
				  "SELECT count(*) FROM batch_schedule_firing WHERE firing_id = "
				  "$1 AND status = 'FINISHED' AND exit_code = 0",
				  "lld", first),
			  1);
		CBT_EQ_LL(firings(names[i], "FAILED_TO_LAUNCH"), 0);
		CBT_EQ_LL(events(names[i], "FAILED_TO_LAUNCH", "%"), 0);
		CBT_EQ_LL(EX("schedule", "pause", names[i]), 0);
		CBT_EQ_LL(cbt_exec(sched.conn, "ALTER SEQUENCE cbt_cut_confirm RESTART"), 0);
	}
	cbt_exec(sched.conn, "DROP TRIGGER cbt_cut_confirm ON batch_schedule_firing");
}

static void test_restarts_are_bounded_and_only_for_unfinished_runs(void)
{
	long long firing;

	fresh();
	/* Its process always dies: restarted twice, then left. Each schedule
	 * its own instances (the schedule's name in the identifying parameter). */
	CBT_EQ_LL(EX("schedule", "add", "dies", "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "-crash:long=1", "--recover-attempts", "2",
		     "--recover-delay", "1"),
		  0);
	/* The same with recovery off: nothing restarted. */
	CBT_EQ_LL(EX("schedule", "add", "left", "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "-crash:long=1", "--recover", "leave"),
		  0);
	/* A run that fails of its own error: never restarted. */
	CBT_EQ_LL(EX("schedule", "add", "bad", "--cron", "* * * * * *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "-fail:long=1", "--recover-delay", "1"),
		  0);
	CBT_EQ_LL(EX("schedule", "show", "left"), 0);
	CBT_CONTAINS(sched.out, "recover     LEAVE");
	/* Until the first crashed firing of dies has used its two restarts, and
	 * left and bad have run twice each. */
	run_node_until(
		"bounded",
		"SELECT ((SELECT count(*) FROM batch_schedule_event e JOIN batch_schedule s "
		"USING (schedule_id) WHERE s.schedule_name = 'dies' AND e.outcome = "
		"'NOT_RECOVERED') >= 1 AND (SELECT count(*) FROM batch_job_execution_params "
		"WHERE parameter_name = 'schedule.name' AND parameter_value = 'left') >= 2 "
		"AND (SELECT count(*) FROM batch_job_execution_params WHERE parameter_name = "
		"'schedule.name' AND parameter_value = 'bad') >= 2)::int");
	firing = cbt_query_ll(sched.conn,
			      "SELECT min(f.firing_id) FROM batch_schedule_firing f JOIN "
			      "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
			      "'dies' AND f.job_execution_id IS NOT NULL");
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 "
				"AND outcome = 'RESTARTED'",
				"lld", firing),
		  2);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 "
			      "AND outcome = 'RECOVERY_DUE' AND message LIKE '%FAILED, its process "
			      "gone: owner lost%'",
			      "lld", firing),
		2);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 "
				"AND outcome = 'NOT_RECOVERED' AND attempt = 2 AND message LIKE "
				"'%2 of 2 restart attempts made%'",
				"lld", firing),
		  1);
	/* Three runs of that instance: the firing's and two restarts. */
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_job_execution e JOIN batch_job_instance "
			      "i USING (job_instance_id) JOIN batch_schedule_firing f ON "
			      "f.job_key = i.job_key WHERE f.firing_id = $1",
			      "lld", firing),
		3);
	CU_ASSERT(execs("left") >= 2);
	CBT_EQ_LL(events("left", "RECOVERY_DUE", "%") + events("left", "RESTARTED", "%"), 0);
	CU_ASSERT(execs("bad") >= 2);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				CBT_SCHED_EXECS "SELECT count(*) FROM e WHERE status <> 'FAILED'",
				"s", "bad"),
		  0);
	CBT_EQ_LL(events("bad", "RECOVERY_DUE", "%") + events("bad", "RESTARTED", "%"), 0);
	CBT_EQ_LL(overlaps("dies"), 0);
}

/* From C: version 2 carries the policies, version 1 gets the safe defaults,
 * and rows stored before the policies existed read as skip and restart. */
static void test_api_versions_and_defaults(void)
{
	const char *params[] = { "at={fire_utc}" };
	cb_schedule_def def = CB_SCHEDULE_DEF_INIT;
	cb_schedule_added added;
	cb_error err = CB_ERROR_INIT;

	fresh();
	def.name = "v2";
	def.cron = "0 3 * * *";
	def.job_name = "tick";
	def.parameters = params;
	def.nparameters = 1;
	def.overlap = CB_OVERLAP_QUEUE;
	def.recover_attempts = 5;
	def.recover_delay_seconds = 7;
	CBT_EQ_LL(cb_schedule_add(&added, sched.conn, &def, NULL, &err), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule WHERE schedule_name = "
			       "'v2' AND overlap_policy = 'QUEUE' AND recover_policy = "
			       "'RESTART' AND recover_attempts = 5 AND "
			       "recover_delay_seconds = 7"),
		  1);
	def.name = "v1";
	def.version = 1;
	def.overlap = CB_OVERLAP_ALLOW; /* not a member of version 1: ignored */
	def.recover_leave = 1;
	CBT_EQ_LL(cb_schedule_add(&added, sched.conn, &def, NULL, &err), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule WHERE schedule_name = "
			       "'v1' AND overlap_policy = 'SKIP' AND recover_policy = "
			       "'RESTART' AND recover_attempts = 3 AND "
			       "recover_delay_seconds = 10"),
		  1);
	/* Version 3: one instance for every firing only when asked for (a
	 * version 1 or 2 definition, as "v1" above, predates the refusal). */
	def.name = "same";
	def.version = CB_SCHEDULE_DEF_VERSION;
	def.parameters = (const char *[]){ "at=x" };
	CBT_EQ_LL(cb_schedule_add(&added, sched.conn, &def, NULL, &err), CB_EINVAL);
	CBT_CONTAINS(err.message,
		     "schedule 'same': no identifying parameter uses the fire instant");
	cb_error_clear(&err);
	def.same_instance = 1;
	CBT_EQ_LL(cb_schedule_add(&added, sched.conn, &def, NULL, &err), 0);
	CBT_EQ_LL(added.same_instance, 1);
	def.same_instance = 0;
	def.parameters = params;
	def.name = "bad";
	def.overlap = 7;
	CBT_EQ_LL(cb_schedule_add(&added, sched.conn, &def, NULL, &err), CB_EINVAL);
	CBT_CONTAINS(err.message, "overlap policy 7 is none of skip, queue, allow");
	cb_error_clear(&err);
	/* As an older program would insert it (the migration's defaults). */
	cbt_exec(sched.conn,
		 "INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, "
		 "job_name, parameters) VALUES ('old', '0 3 * * *', 'UTC', 'tick', "
		 "'[\"at={fire_utc}\"]')");
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule WHERE schedule_name = "
			       "'old' AND overlap_policy = 'SKIP' AND recover_policy = "
			       "'RESTART'"),
		  1);
	CBT_EQ_LL(EX("schedule", "add", "x", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_utc}", "--overlap", "sometimes"),
		  2);
	CBT_CONTAINS(sched.errout, "--overlap must be skip, queue or allow");
	CBT_EQ_LL(EX("schedule", "add", "x", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_utc}", "--recover-attempts", "0"),
		  2);
	CBT_CONTAINS(sched.errout, "--recover-attempts must be 1 to 100");
}

static const CU_TestInfo tests[] = {
	{ "api_versions_and_defaults", test_api_versions_and_defaults },
	{ "a_run_that_lost_its_database_is_recovered",
	  test_a_run_that_lost_its_database_is_recovered },
	{ "skip_is_the_default_and_nothing_overlaps",
	  test_skip_is_the_default_and_nothing_overlaps },
	{ "consecutive_skips_are_one_row", test_consecutive_skips_are_one_row },
	{ "a_node_back_from_an_outage_counts_no_one_gone_for_it",
	  test_a_node_back_from_an_outage_counts_no_one_gone_for_it },
	{ "a_slow_job_skips_read_as_one_row_each", test_a_slow_job_skips_read_as_one_row_each },
	{ "allow_overlaps_as_before", test_allow_overlaps_as_before },
	{ "queue_runs_one_waiting_firing_after_the_live_one",
	  test_queue_runs_one_waiting_firing_after_the_live_one },
	{ "two_nodes_with_skip_never_overlap", test_two_nodes_with_skip_never_overlap },
	{ "killed_node_execution_is_restarted_by_the_survivor",
	  test_killed_node_execution_is_restarted_by_the_survivor },
	{ "operator_stop_survives_the_node_stop", test_operator_stop_survives_the_node_stop },
	{ "operator_stop_survives_the_burial", test_operator_stop_survives_the_burial },
	{ "operator_stop_survives_the_node_death", test_operator_stop_survives_the_node_death },
	{ "operator_stop_survives_a_late_end", test_operator_stop_survives_a_late_end },
	{ "a_session_lost_confirming_a_launch_is_asked_again",
	  test_a_session_lost_confirming_a_launch_is_asked_again },
	{ "restarts_are_bounded_and_only_for_unfinished_runs",
	  test_restarts_are_bounded_and_only_for_unfinished_runs },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("schedule_overlap", init, clean, tests);
}
