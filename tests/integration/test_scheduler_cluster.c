/*
 * Scheduler nodes together, as real processes on one repository:
 *
 *  - three nodes, two of them with clocks an hour off either way (faketime),
 *    on an every-second schedule for a minute: every fire instant ran exactly
 *    one execution, the two other nodes lost its claim and recorded nothing
 *    (the history holds what happened: one FIRED per instant), the lost
 *    claims are counted (cbatch_schedule_claim_lost_total equals the claims
 *    the nodes say they lost), and no instant is missing;
 *  - the node running a firing is killed with its job (a host dying): no
 *    other node fires that instant again, one of them reports the firing
 *    ORPHANED, and the execution restarts as any dead one does;
 *  - every scheduler down for five minutes (the database's clock moved five
 *    minutes on, under libfaketime, with no node running), then one starts:
 *    a run-once schedule runs one firing for the latest missed instant, a
 *    skip schedule only records what it missed, and both go on on time.
 *
 * CBATCH_SCHEDULER_SECONDS shortens or lengthens the three-node run (60).
 */
#include "cbtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[65536], errout[65536];

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "schedcluster", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

static int ex_on(const char *conninfo, const char *const *args)
{
	return cbt_examples_run(NULL, conninfo, args, out, sizeof(out), errout, sizeof(errout));
}
#define EX(...)  ex_on(db, (const char *const[]){ __VA_ARGS__, NULL })
#define spawn_on cbt_examples_spawn

static void log_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/schedcluster-%d-%s.log", cbt_tmpdir(), (int)getpid(), name);
}

/* The claims node log @p path says it lost ("skipped N (claimed elsewhere)"
 * in its last words), or -1 when it says none. */
static long long claims_lost_in_log(const char *path)
{
	char *text = cbt_slurp(path, NULL), *at;
	long long n = -1;

	at = text ? strstr(text, "stopped: fired ") : NULL;
	if (at && (at = strstr(at, ", skipped ")) != NULL)
		n = strtoll(at + strlen(", skipped "), NULL, 10);
	free(text);
	return n;
}

static void fresh(PGconn *c, const char *conninfo)
{
	cbt_exec(c, "DELETE FROM batch_schedule; DELETE FROM batch_scheduler_node");
	CBT_EQ_LL(
		ex_on(conninfo, (const char *const[]){ "example-setup", "tick", "--reset", NULL }),
		0);
}

static void test_three_nodes_skewed_clocks_one_run_per_instant(void)
{
	const char *env = getenv("CBATCH_SCHEDULER_SECONDS");
	int seconds = env && atoi(env) >= 10 ? atoi(env) : 60;
	static const char *const offsets[3] = { NULL, "+1h", "-1h" };
	char logs[3][512], asan[3][1024], until[32];
	const char *prefix[3][6];
	pid_t pid[3];
	long long from, to, span, bad, lost, counted;

	if (!cbt_have_faketime())
		return;
	fresh(conn, db);
	/* Overlap allowed: a run may take longer than its second on a loaded
	 * machine or in a sanitizer build, and the default (skip) would then
	 * skip the next instant. This case is about claims across nodes;
	 * overlap across nodes is test_schedule_overlap's. */
	CBT_EQ_LL(EX("schedule", "add", "every-second", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "--overlap", "allow"),
		  0);
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "node%d", i);
		log_path(logs[i], sizeof(logs[i]), name);
		prefix[i][0] = NULL;
		if (offsets[i])
			cbt_faketime_prefix(prefix[i], asan[i], sizeof(asan[i]), offsets[i]);
		pid[i] = spawn_on(prefix[i], db, logs[i],
				  (const char *const[]){ "scheduler", "--lease", "10", NULL });
		CU_ASSERT_FATAL(pid[i] > 0);
	}
	/* The window: from when all three are up, for the given time. */
	CU_ASSERT_FATAL(cbt_wait_until(conn, 30000,
				       "SELECT (count(*) = 3)::int FROM batch_scheduler_node "
				       "WHERE stopped_at IS NULL"));
	from = cbt_query_ll(conn, "SELECT extract(epoch FROM clock_timestamp())::bigint + 2");
	cbt_sleep_ms(seconds * 1000);
	to = cbt_query_ll(conn, "SELECT extract(epoch FROM clock_timestamp())::bigint - 2");
	/* The nodes stop once the window's runs have ended: a stop ends a run
	 * still going as STOPPED, and how long a run takes is not this case. */
	CU_ASSERT(cbt_wait_untilp(conn, 60000,
				  "SELECT (count(*) = 0)::int FROM batch_schedule_firing WHERE "
				  "fire_time <= to_timestamp($1) AND status IN ('CLAIMED', "
				  "'LAUNCHED', 'QUEUED')",
				  "lld", to));
	for (int i = 0; i < 3; i++)
		kill(pid[i], SIGTERM);
	for (int i = 0; i < 3; i++)
		CBT_EQ_LL(cbt_wait_timeout(pid[i], 60000), 0);
	span = to - from + 1;
	snprintf(until, sizeof(until), "%lld", to);
	CU_ASSERT(span >= seconds - 6);
	/* Every instant of the window has one firing, run once, to completion. */
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE fire_time BETWEEN "
			      "to_timestamp($1) AND to_timestamp($2)",
			      "lld lld", from, to),
		span);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE fire_time BETWEEN "
			      "to_timestamp($1) AND to_timestamp($2) AND status = 'FINISHED' "
			      "AND exit_code = 0 AND exit_status = 'COMPLETED'",
			      "lld lld", from, to),
		span);
	/* tick_log: one committed run per instant, for that instant. */
	bad = cbt_queryp_ll(conn,
			    "SELECT count(*) FROM generate_series($1::bigint, $2::bigint) s "
			    "WHERE (SELECT count(*) FROM tick_log WHERE fired_for = "
			    " to_char(to_timestamp(s) AT TIME ZONE 'UTC', "
			    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) <> 1",
			    "lld lld", from, to);
	CBT_EQ_LL(bad, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT fired_for FROM tick_log "
				     "GROUP BY fired_for HAVING count(*) > 1) d"),
		  0);
	/* The history says what happened to each instant: one FIRED; the two
	 * nodes that lost its claim recorded nothing (issue 28.5). */
	bad = cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM generate_series($1::bigint, $2::bigint) s WHERE "
		"(SELECT count(*) FILTER (WHERE outcome = 'FIRED') = 1 "
		"   FROM batch_schedule_event WHERE fire_time = to_timestamp(s)) IS NOT TRUE",
		"lld lld", from, to);
	CBT_EQ_LL(bad, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event WHERE "
				     "outcome = 'SKIPPED_CLAIMED'"),
		  0);
	/* The lost claims are counted: as many as the nodes say they lost, and
	 * two for each instant of the window at least (each node offers each). */
	lost = 0;
	for (int i = 0; i < 3; i++) {
		long long n = claims_lost_in_log(logs[i]);

		if (n < 0)
			CBT_FAILF("node %d's log has no final counts: %s", i, logs[i]);
		lost += n;
	}
	counted = cbt_query_ll(conn, "SELECT coalesce(sum(value), 0) FROM batch_metric_counter "
				     "WHERE metric = 'schedule_claim_lost_count'");
	CBT_EQ_LL(counted, lost);
	CU_ASSERT(counted >= 2 * span);
	CBT_EQ_LL(EX("metrics"), 0);
	{
		char line[160];

		snprintf(line, sizeof(line),
			 "cbatch_schedule_claim_lost_total{batch_job=\"tick\","
			 "schedule=\"every-second\"} %lld\n",
			 counted);
		CBT_CONTAINS(out, line);
	}
	if (CU_get_number_of_failures() > 0) {
		/* What the failure is about: every firing that did not complete,
		 * and every event of those instants. */
		cbt_print_rows(
			conn,
			"firings that did not complete (fire time, status, exit, node, message)",
			"SELECT fire_time, status, exit_code, exit_status, right(node_id, 6), "
			"message FROM batch_schedule_firing WHERE status <> 'FINISHED' OR "
			"exit_status IS DISTINCT FROM 'COMPLETED' ORDER BY fire_time");
		cbt_print_rows(
			conn, "their events (fire time, outcome, node, message)",
			"SELECT e.fire_time, e.outcome, right(e.node_id, 6), e.message FROM "
			"batch_schedule_event e JOIN batch_schedule_firing f USING (fire_time) "
			"WHERE f.status <> 'FINISHED' OR f.exit_status IS DISTINCT FROM "
			"'COMPLETED' ORDER BY e.fire_time, e.event_id");
	}
	/* Over the whole run, not only the window: never two firings of one
	 * instant, never a gap. */
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT (extract(epoch FROM max(fire_time) - min(fire_time)) + 1 - "
			       "count(*))::bigint FROM batch_schedule_firing"),
		  0);
	printf("\n  three nodes: %lld instants in the window, %lld firings in all, fired by "
	       "node: %lld/%lld/%lld\n",
	       span, cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing"),
	       cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				  "batch_scheduler_node n USING (node_id) WHERE n.pid = (SELECT "
				  "min(pid) FROM batch_scheduler_node)"),
	       cbt_query_ll(conn,
			    "SELECT count(*) FROM batch_schedule_firing f JOIN "
			    "batch_scheduler_node n USING (node_id) WHERE n.pid NOT IN (SELECT "
			    "min(pid) FROM batch_scheduler_node UNION SELECT max(pid) FROM "
			    "batch_scheduler_node)"),
	       cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				  "batch_scheduler_node n USING (node_id) WHERE n.pid = (SELECT "
				  "max(pid) FROM batch_scheduler_node)"));
}

static void test_killed_node_firing_is_not_repeated_and_restarts(void)
{
	char logs[2][512], id[32];
	pid_t pid[2], node_pid, child_pid;
	long long firing, exec, fire;

	fresh(conn, db);
	CBT_EQ_LL(EX("schedule", "add", "slow", "--cron", "*/4 * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=8000"),
		  0);
	for (int i = 0; i < 2; i++) {
		log_path(logs[i], sizeof(logs[i]), i ? "killb" : "killa");
		pid[i] = spawn_on(NULL, db, logs[i],
				  (const char *const[]){ "scheduler", "--lease", "2", NULL });
		CU_ASSERT_FATAL(pid[i] > 0);
	}
	CU_ASSERT_FATAL(cbt_wait_until(
		conn, 60000,
		"SELECT count(*) FROM batch_schedule_firing f JOIN "
		"batch_job_execution e ON e.job_execution_id = "
		"(SELECT job_execution_id FROM batch_schedule_firing_execution("
		"f.firing_id)) WHERE f.status = 'LAUNCHED' AND e.status = 'STARTED'"));
	firing = cbt_query_ll(conn, "SELECT min(f.firing_id) FROM batch_schedule_firing f "
				    "WHERE f.status = 'LAUNCHED' AND (SELECT status FROM "
				    "batch_schedule_firing_execution(f.firing_id)) = 'STARTED'");
	node_pid = (pid_t)cbt_queryp_ll(
		conn,
		"SELECT n.pid FROM batch_schedule_firing f JOIN "
		"batch_scheduler_node n USING (node_id) WHERE f.firing_id = $1",
		"lld", firing);
	child_pid = (pid_t)cbt_queryp_ll(conn,
					 "SELECT pid FROM batch_schedule_firing "
					 "WHERE firing_id = $1",
					 "lld", firing);
	exec = cbt_queryp_ll(conn,
			     "SELECT job_execution_id FROM "
			     "batch_schedule_firing_execution($1)",
			     "lld", firing);
	fire = cbt_queryp_ll(conn,
			     "SELECT extract(epoch FROM fire_time)::bigint FROM "
			     "batch_schedule_firing WHERE firing_id = $1",
			     "lld", firing);
	CU_ASSERT_FATAL(node_pid == pid[0] || node_pid == pid[1]);
	/* The host dies: its job with it, then the node. */
	kill(child_pid, SIGKILL);
	kill(node_pid, SIGKILL);
	CBT_EQ_LL(cbt_wait_timeout(node_pid, 60000), 128 + SIGKILL);
	/* The survivor reports it (the dead node's lease is 2 s), and fires the
	 * instant no second time. */
	CU_ASSERT(cbt_wait_untilp(conn, 60000,
				  "SELECT count(*) FROM batch_schedule_firing WHERE firing_id = $1 "
				  "AND status = 'ORPHANED'",
				  "lld", firing));
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_schedule_event WHERE firing_id = $1 AND "
			  "outcome = 'ORPHANED' AND node_id <> (SELECT node_id FROM "
			  "batch_schedule_firing WHERE firing_id = $1) AND job_execution_id = $2",
			  "lld lld", firing, exec),
		  1);
	EX("schedule", "pause", "slow");
	{
		pid_t survivor = node_pid == pid[0] ? pid[1] : pid[0];

		kill(survivor, SIGTERM);
		CBT_EQ_LL(cbt_wait_timeout(survivor, 60000), 0);
	}
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_schedule_firing WHERE fire_time = "
				"to_timestamp($1)",
				"lld", fire),
		  1);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution e JOIN batch_job_instance i "
			  "USING (job_instance_id) JOIN batch_schedule_firing f ON f.job_key = "
			  "i.job_key WHERE f.firing_id = $1",
			  "lld", firing),
		  1);
	/* The execution is what a dead one always is: restartable. */
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("restart", id), 0);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM tick_log WHERE fired_for = "
				"to_char(to_timestamp($1) AT TIME ZONE 'UTC', "
				"'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
				"lld", fire),
		  1);
}

static void test_killed_scheduler_alone_stops_its_job_restartable(void)
{
	char log[512], id[32];
	long long exec;
	pid_t pid;

	fresh(conn, db);
	CBT_EQ_LL(EX("schedule", "add", "orphan", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=8000"),
		  0);
	log_path(log, sizeof(log), "alone");
	pid = spawn_on(NULL, db, log,
		       (const char *const[]){ "scheduler", "--max-running", "1", NULL });
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_until(conn, 60000,
				       "SELECT count(*) FROM batch_job_execution e JOIN "
				       "batch_job_instance i USING (job_instance_id) WHERE "
				       "i.job_name = 'tick' AND e.status = 'STARTED'"));
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution "
				  "WHERE status = 'STARTED'");
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 128 + SIGKILL);
	/* Its job got the parent-death signal: a stop after the current chunk. */
	CU_ASSERT(cbt_wait_untilp(conn, 60000,
				  "SELECT count(*) FROM batch_job_execution WHERE "
				  "job_execution_id = $1 AND status = 'STOPPED'",
				  "lld", exec));
	EX("schedule", "pause", "orphan");
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("restart", id), 0);
}

/* Pause both schedules of the all-down case, wait until no firing is open
 * (every run launched has ended), then stop node @p pid. */
static void settle_and_stop(PGconn *c, const char *conninfo, pid_t pid)
{
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "pause", "catch-up", NULL }),
		  0);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "pause", "skipper", NULL }),
		  0);
	CU_ASSERT(cbt_wait_until(c, 60000,
				 "SELECT (count(*) = 0)::int FROM batch_schedule_firing WHERE "
				 "status IN ('CLAIMED', 'LAUNCHED', 'QUEUED')"));
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
}

/* ---- every scheduler down for five minutes ------------------------------ */

static void test_all_down_five_minutes_then_misfire_policies(void)
{
	char dir[256], conninfo[512], clockfile[300], log[512];
	const char *start[] = { "bash", NULL, "start", dir, "--faketime", NULL };
	const char *stop[] = { "bash", NULL, "stop", dir, NULL };
	char script[512];
	PGconn *c;
	pid_t pid;
	long long first_missed, until, count, run_exec;

	snprintf(script, sizeof(script), "%s/scripts/pg-cluster.sh", cbt_source_dir());
	start[1] = stop[1] = script;
	snprintf(dir, sizeof(dir), "/tmp/cbatch-ft-%d", (int)getpid());
	snprintf(conninfo, sizeof(conninfo), "host=%s port=5432 user=postgres dbname=postgres",
		 dir);
	snprintf(clockfile, sizeof(clockfile), "%s/faketime", dir);
	if (cbt_run(start, out, sizeof(out), errout, sizeof(errout)) != 0) {
		CBT_FAILF("could not start a cluster under libfaketime: %s", errout);
		return;
	}
	c = cbt_connect(conninfo);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schema", "init", NULL }), 0);
	fresh(c, conninfo);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "add", "catch-up", "--cron",
							 "* * * * * *", "--job", "tick",
							 "at={fire_utc}", "--misfire", "run-once",
							 "--misfire-grace", "5", NULL }),
		  0);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "add", "skipper", "--cron",
							 "*/2 * * * * *", "--job", "tick",
							 "at=skip-{fire_utc}", "--misfire", "skip",
							 "--misfire-grace", "5", NULL }),
		  0);
	/* Running normally for a while. */
	log_path(log, sizeof(log), "before");
	pid = spawn_on(NULL, conninfo, log, (const char *const[]){ "scheduler", NULL });
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT(
		cbt_wait_until(c, 30000, "SELECT (count(*) >= 3)::int FROM batch_schedule_firing"));
	/* Stopped between runs, not in one: a run the stop cuts short ends
	 * STOPPED, and its restart (recover restart, the default) would hold the
	 * schedule when the missed instants are judged, which is another case. */
	settle_and_stop(c, conninfo, pid);
	CU_ASSERT(cbt_query_ll(c, "SELECT count(*) FROM batch_schedule_firing") >= 3);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "resume", "catch-up", NULL }),
		  0);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "resume", "skipper", NULL }),
		  0);
	CBT_EQ_LL(cbt_query_ll(c, "SELECT count(*) FROM batch_schedule_firing "
				  "WHERE kind <> 'SCHEDULED'"),
		  0);
	/* Every scheduler is down; five minutes pass (for the database). */
	cbt_write_str(clockfile, "+300\n");
	CU_ASSERT(cbt_wait_until(
		c, 10000,
		"SELECT (extract(epoch FROM clock_timestamp() - max(fire_time)) >= 295)"
		"::int FROM batch_schedule_firing"));
	log_path(log, sizeof(log), "after");
	pid = spawn_on(NULL, conninfo, log, (const char *const[]){ "scheduler", NULL });
	CU_ASSERT_FATAL(pid > 0);
	/* Stopped once the missed run and two on-time runs after it have ended
	 * (however long a run takes here). */
	CU_ASSERT(cbt_wait_until(
		c, 60000,
		"SELECT (bool_or(f.kind = 'MISFIRE_RUN' AND f.status = 'FINISHED') AND "
		" count(*) FILTER (WHERE f.kind = 'SCHEDULED' AND f.status = 'FINISHED' AND "
		"  f.fire_time > (SELECT missed_until FROM batch_schedule_firing WHERE kind = "
		"  'MISFIRE_RUN')) >= 2)::int FROM batch_schedule_firing f JOIN batch_schedule s "
		"USING (schedule_id) WHERE s.schedule_name = 'catch-up'"));
	settle_and_stop(c, conninfo, pid);

	/* run-once: one firing stands for the missed run, and runs once, for
	 * its latest instant. */
	CBT_EQ_LL(cbt_query_ll(c, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				  "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				  "'catch-up' AND f.kind = 'MISFIRE_RUN'"),
		  1);
	first_missed = cbt_query_ll(c, "SELECT extract(epoch FROM fire_time)::bigint FROM "
				       "batch_schedule_firing WHERE kind = 'MISFIRE_RUN'");
	until = cbt_query_ll(c, "SELECT extract(epoch FROM missed_until)::bigint FROM "
				"batch_schedule_firing WHERE kind = 'MISFIRE_RUN'");
	count = cbt_query_ll(c, "SELECT missed_count FROM batch_schedule_firing "
				"WHERE kind = 'MISFIRE_RUN'");
	CBT_EQ_LL(count, until - first_missed + 1);
	CU_ASSERT(count >= 290 && count <= 320);
	CBT_EQ_LL(cbt_query_ll(
			  c, "SELECT count(*) FROM batch_schedule_firing WHERE kind = "
			     "'MISFIRE_RUN' AND param_time = missed_until AND status = 'FINISHED' "
			     "AND exit_code = 0 AND exit_status = 'COMPLETED'"),
		  1);
	run_exec = cbt_query_ll(c, "SELECT job_execution_id FROM batch_schedule_firing "
				   "WHERE kind = 'MISFIRE_RUN'");
	CBT_EQ_LL(cbt_queryp_ll(c,
				"SELECT count(*) FROM tick_log WHERE job_execution_id = $1 AND "
				"fired_for = to_char(to_timestamp($2) AT TIME ZONE 'UTC', "
				"'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
				"lld lld", run_exec, until),
		  1);
	/* Nothing else ran for the missed instants... */
	CBT_EQ_LL(
		cbt_queryp_ll(c,
			      "SELECT count(*) FROM batch_schedule_firing f JOIN batch_schedule s "
			      "USING (schedule_id) WHERE s.schedule_name = 'catch-up' AND "
			      "f.fire_time > to_timestamp($1) AND f.fire_time <= to_timestamp($2)",
			      "lld lld", first_missed, until),
		0);
	/* ...and it went on on time after them. */
	CU_ASSERT(cbt_query_ll(c, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				  "batch_schedule s USING (schedule_id), (SELECT missed_until FROM "
				  "batch_schedule_firing WHERE kind = 'MISFIRE_RUN') m WHERE "
				  "s.schedule_name = 'catch-up' AND f.kind = 'SCHEDULED' AND "
				  "f.fire_time > m.missed_until AND f.status = 'FINISHED'") >= 2);
	CBT_EQ_LL(cbt_query_ll(c, "SELECT count(*) FROM batch_schedule_event e JOIN "
				  "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				  "'catch-up' AND e.outcome = 'MISFIRED' AND e.message LIKE "
				  "'% firings missed from %running once now%'"),
		  1);

	/* skip: recorded, never run. */
	CBT_EQ_LL(cbt_query_ll(
			  c, "SELECT count(*) FROM batch_schedule_firing f JOIN "
			     "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
			     "'skipper' AND f.kind = 'MISFIRE_SKIP' AND f.status = 'MISFIRED' AND "
			     "f.job_execution_id IS NULL AND f.missed_count BETWEEN 145 AND 160"),
		  1);
	CBT_EQ_LL(cbt_query_ll(c, "SELECT count(*) FROM batch_schedule_event e JOIN "
				  "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				  "'skipper' AND e.outcome = 'MISFIRED' AND e.message LIKE "
				  "'%skipped (misfire policy SKIP)%'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(c, "SELECT count(*) FROM tick_log t, (SELECT fire_time, "
				  "missed_until FROM batch_schedule_firing WHERE kind = "
				  "'MISFIRE_SKIP') m WHERE t.fired_for BETWEEN 'skip-' || "
				  "to_char(m.fire_time AT TIME ZONE 'UTC', "
				  "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AND 'skip-' || "
				  "to_char(m.missed_until AT TIME ZONE 'UTC', "
				  "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"),
		  0);
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "schedule", "history", "skipper", NULL }),
		  0);
	CBT_CONTAINS(out, "MISFIRED");
	/* The same for Prometheus. */
	CBT_EQ_LL(ex_on(conninfo, (const char *const[]){ "metrics", NULL }), 0);
	{
		char want[128];

		snprintf(
			want, sizeof(want),
			"cbatch_schedule_missed_total{batch_job=\"tick\",schedule=\"catch-up\"} %lld\n",
			count);
		CBT_CONTAINS(out, want);
		snprintf(
			want, sizeof(want),
			"cbatch_schedule_fired_total{batch_job=\"tick\",schedule=\"catch-up\"} %lld\n",
			cbt_query_ll(c,
				     "SELECT count(*) FROM batch_schedule_firing f JOIN "
				     "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				     "'catch-up' AND f.status = 'FINISHED'"));
		CBT_CONTAINS(out, want);
		CBT_CONTAINS(
			out,
			"cbatch_schedule_fired_total{batch_job=\"tick\",schedule=\"skipper\"}");
	}
	PQfinish(c);
	CBT_EQ_LL(cbt_run(stop, NULL, 0, NULL, 0), 0);
}

static const CU_TestInfo tests[] = {
	{ "three_nodes_skewed_clocks_one_run_per_instant",
	  test_three_nodes_skewed_clocks_one_run_per_instant },
	{ "killed_node_firing_is_not_repeated_and_restarts",
	  test_killed_node_firing_is_not_repeated_and_restarts },
	{ "killed_scheduler_alone_stops_its_job_restartable",
	  test_killed_scheduler_alone_stops_its_job_restartable },
	{ "all_down_five_minutes_then_misfire_policies",
	  test_all_down_five_minutes_then_misfire_policies },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("scheduler_cluster", init, clean, tests);
}
