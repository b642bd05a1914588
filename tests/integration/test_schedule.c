/*
 * Schedules from the command line and one scheduler node: add, list, show,
 * pause, resume, remove, next (with DST in a real zone of the server), bad
 * input refused before anything is written, every second fired once with its
 * parameters filled from the fire instant, SIGTERM stopping a running job
 * (STOPPED, restartable), a template that cannot be filled recorded as
 * FAILED_TO_LAUNCH, and a node that loses the repository firing nothing
 * until it is back, then catching up without a gap. A node stalled before
 * its claim (CBATCH_TEST_SCHEDULER_PAUSE) records a late instant MISFIRED
 * under skip; one stalled between claim and launch runs nothing once its
 * firing is ORPHANED; a child killed mid-step has its execution buried.
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
	return cbt_sched_init(&sched, "schedule");
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

/* The count of @p sql with one text parameter. */
static long long count1(const char *sql, const char *v)
{
	return cbt_queryp_ll(sched.conn, sql, "s", v);
}

static void test_add_list_show_pause_resume_remove(void)
{
	json_t *doc;
	json_error_t je;
	long long want, ver;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "nightly", "--cron", "0 3 * * *", "--tz", "Europe/Berlin",
		     "--job", "tick", "at={fire_utc}"),
		  0);
	CBT_CONTAINS(sched.out, "schedule 'nightly' added: '0 3 * * *' in Europe/Berlin runs tick");
	/* December: Central European Time, +01:00. */
	CBT_CONTAINS(sched.out, "T03:00:00+01:00");
	/* The cursor is the next 03:00 in Berlin, as the server itself reckons it. */
	want = cbt_query_ll(
		sched.conn,
		"WITH l AS (SELECT clock_timestamp() AT TIME ZONE 'Europe/Berlin' AS t) "
		"SELECT extract(epoch FROM ((date_trunc('day', t) + CASE WHEN t::time < "
		"'03:00' THEN interval '0' ELSE interval '1 day' END + interval '3 hours') "
		"AT TIME ZONE 'Europe/Berlin'))::bigint FROM l");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT extract(epoch FROM next_fire_time)::bigint "
					   "FROM batch_schedule WHERE schedule_name = 'nightly'"),
		  want);
	CBT_EQ_LL(EX("schedule", "list"), 0);
	CBT_CONTAINS(sched.out, "nightly");
	CBT_CONTAINS(sched.out, "Europe/Berlin");
	CBT_CONTAINS(sched.out, "active");
	CBT_EQ_LL(EX("--json", "schedule", "list"), 0);
	doc = json_loads(sched.out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	{
		json_t *s = json_array_get(json_object_get(doc, "schedules"), 0);

		CBT_EQ_STR(json_string_value(json_object_get(s, "name")), "nightly");
		CBT_EQ_STR(json_string_value(json_object_get(s, "misfire_policy")), "RUN_ONCE");
		CBT_EQ_LL(json_integer_value(json_object_get(s, "next_fire_epoch")), want);
		CBT_EQ_STR(json_string_value(json_array_get(json_object_get(s, "parameters"), 0)),
			   "at={fire_utc}");
	}
	json_decref(doc);
	CBT_EQ_LL(EX("schedule", "show", "nightly"), 0);
	CBT_CONTAINS(sched.out, "cron        0 3 * * *");
	CBT_CONTAINS(sched.out, "at={fire_utc}");
	CBT_CONTAINS(sched.out, "RUN_ONCE, grace 60s");
	CBT_CONTAINS(sched.out, "nothing fired yet");

	ver = cbt_query_ll(sched.conn, "SELECT version FROM batch_schedule");
	CBT_EQ_LL(EX("schedule", "pause", "nightly"), 0);
	CBT_CONTAINS(sched.out, "schedule 'nightly' paused");
	CBT_EQ_LL(EX("schedule", "pause", "nightly"), 0);
	CBT_CONTAINS(sched.out, "was already paused");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT version FROM batch_schedule"), ver + 1);
	CBT_EQ_LL(EX("schedule", "list"), 0);
	CBT_CONTAINS(sched.out, "paused");
	CBT_EQ_LL(EX("schedule", "resume", "nightly"), 0);
	CBT_CONTAINS(sched.out, "resumed");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT version FROM batch_schedule"), ver + 2);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT extract(epoch FROM next_fire_time)::bigint "
					   "FROM batch_schedule"),
		  want);
	CBT_EQ_LL(EX("schedule", "remove", "nightly"), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule"), 0);
	CBT_EQ_LL(EX("schedule", "remove", "nightly"), 2);
	CBT_CONTAINS(sched.errout, "no schedule named 'nightly'");
	CBT_EQ_LL(EX("schedule", "show", "nightly"), 2);
	CBT_EQ_LL(EX("schedule", "history", "nightly"), 2);
}

static void test_bad_input_is_refused_and_nothing_written(void)
{
	fresh();
	CBT_EQ_LL(EX("schedule", "add", "ok", "--cron", "*/5 * * * *", "--job", "tick",
		     "at={fire_utc}"),
		  0);
	CBT_EQ_LL(EX("schedule", "add", "b1", "--cron", "0 25 * * *", "--job", "tick",
		     "at={fire_utc}"),
		  2);
	CBT_CONTAINS(sched.errout, "hour field: 25 at character 3 is out of range 0-23");
	CBT_EQ_LL(EX("schedule", "add", "b2", "--cron", "0 3 * * *", "--tz", "Mars/Base", "--job",
		     "tick", "at={fire_utc}"),
		  2);
	CBT_CONTAINS(sched.errout, "Mars/Base");
	CBT_EQ_LL(EX("schedule", "add", "b3", "--cron", "0 3 * * *", "--job", "nope"), 2);
	CBT_CONTAINS(sched.errout, "nope");
	CBT_EQ_LL(EX("schedule", "add", "b4", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_dat}"),
		  2);
	CBT_CONTAINS(sched.errout, "unknown placeholder '{fire_dat}' at character 4");
	CBT_EQ_LL(EX("schedule", "add", "b5", "--job", "tick", "at=x"), 2);
	CBT_CONTAINS(sched.errout, "--cron is required");
	CBT_EQ_LL(EX("schedule", "add", "ok", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_utc}"),
		  2);
	CBT_CONTAINS(sched.errout, "schedule 'ok' already exists");
	/* The templates, filled for the first instant, must suit the job. */
	CBT_EQ_LL(EX("schedule", "add", "b6", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_utc}", "other=1"),
		  2);
	CBT_CONTAINS(sched.errout, "other");
	CBT_EQ_LL(EX("schedule", "add", "b7", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long={fire_date}"),
		  2);
	CBT_CONTAINS(sched.errout, "sleepMs");
	CBT_EQ_LL(EX("schedule", "add", "b8", "--cron", "0 3 * * *", "--job", "tick",
		     "at={fire_utc}", "--misfire", "sometimes"),
		  2);
	CBT_CONTAINS(sched.errout, "--misfire must be run-once or skip");
	CBT_EQ_LL(EX("schedule", "add", "b9 x", "--cron", "0 3 * * *", "--job", "tick"), 2);
	CBT_EQ_LL(EX("schedule", "add", "b10", "--cron", "0 0 30 2 *", "--job", "tick",
		     "at={fire_utc}"),
		  2);
	CBT_EQ_LL(EX("schedule", "frobnicate"), 2);
	CBT_CONTAINS(sched.errout, "unknown sub-command 'frobnicate'");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule"), 1);
	/* A schedule whose identifying parameters ignore the instant is refused,
	 * saying how to write it, unless one instance is asked for: every firing
	 * would be that one instance. Nothing is written when refused. */
	CBT_EQ_LL(EX("schedule", "add", "same", "--cron", "0 3 * * *", "--job", "tick", "at=x"), 2);
	CBT_CONTAINS(sched.errout, "no identifying parameter uses the fire instant");
	CBT_CONTAINS(sched.errout, "{fire_date}");
	CBT_EQ_LL(EX("schedule", "add", "same", "--cron", "0 3 * * *", "--job", "tick", "-at=x"),
		  2);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule"), 1);
	CBT_EQ_LL(EX("schedule", "add", "same", "--cron", "0 3 * * *", "--job", "tick", "at=x",
		     "--same-instance"),
		  0);
	CBT_CONTAINS(sched.errout, "every firing is the same job instance");
}

/* The "local" member of each element of the JSON array under "next". */
static size_t next_locals(char locals[][64], size_t max)
{
	json_error_t je;
	json_t *doc = json_loads(sched.out, 0, &je), *arr = json_object_get(doc, "next");
	size_t n = 0;

	for (; n < json_array_size(arr) && n < max; n++)
		snprintf(locals[n], 64, "%s",
			 json_string_value(json_object_get(json_array_get(arr, n), "local")));
	json_decref(doc);
	return n;
}

static void test_next_lists_instants_with_dst_of_the_servers_zone(void)
{
	static char locals[1000][64];
	size_t n;
	int spring = 0, fall = 0;

	fresh();
	CBT_EQ_LL(EX("--json", "schedule", "next", "--cron", "0 0 29 2 *", "--count", "3"), 0);
	CBT_EQ_LL(next_locals(locals, 3), 3);
	CBT_EQ_STR(locals[0], "2028-02-29T00:00:00Z");
	CBT_EQ_STR(locals[1], "2032-02-29T00:00:00Z");
	CBT_EQ_STR(locals[2], "2036-02-29T00:00:00Z");

	/* 2027 in New York: 02:00 becomes 03:00 on 14 March, 02:00 goes back to
	 * 01:00 on 7 November. A fixed 02:30 fires at 03:00 on the first; a fixed
	 * 01:30 fires once on the second, at its first occurrence (EDT). */
	CBT_EQ_LL(EX("--json", "schedule", "next", "--cron", "30 2 * * *", "--tz",
		     "America/New_York", "--count", "500"),
		  0);
	n = next_locals(locals, 1000);
	CBT_EQ_LL(n, 500);
	for (size_t i = 0; i < n; i++) {
		if (strncmp(locals[i], "2027-03-14", 10) == 0) {
			spring++;
			CBT_EQ_STR(locals[i], "2027-03-14T03:00:00-04:00");
		}
		if (strncmp(locals[i], "2027-03-13", 10) == 0)
			CBT_EQ_STR(locals[i], "2027-03-13T02:30:00-05:00");
	}
	CBT_EQ_LL(spring, 1);
	CBT_EQ_LL(EX("--json", "schedule", "next", "--cron", "30 1 * * *", "--tz",
		     "America/New_York", "--count", "500"),
		  0);
	n = next_locals(locals, 1000);
	for (size_t i = 0; i < n; i++)
		if (strncmp(locals[i], "2027-11-07", 10) == 0) {
			fall++;
			CBT_EQ_STR(locals[i], "2027-11-07T01:30:00-04:00");
		}
	CBT_EQ_LL(fall, 1);
	CBT_EQ_LL(EX("schedule", "add", "tens", "--cron", "*/10 * * * * *", "--job", "tick",
		     "at={fire_utc}"),
		  0);
	CBT_EQ_LL(EX("--json", "schedule", "next", "tens", "--count", "3"), 0);
	{
		json_error_t je;
		json_t *doc = json_loads(sched.out, 0, &je), *arr = json_object_get(doc, "next");
		long long a = json_integer_value(json_object_get(json_array_get(arr, 0), "epoch"));
		long long b = json_integer_value(json_object_get(json_array_get(arr, 1), "epoch"));
		long long c = json_integer_value(json_object_get(json_array_get(arr, 2), "epoch"));

		CBT_EQ_LL(a % 10, 0);
		CBT_EQ_LL(b - a, 10);
		CBT_EQ_LL(c - b, 10);
		json_decref(doc);
	}
	CBT_EQ_LL(EX("schedule", "next", "--cron", "0 0 30 2 *"), 2);
	CBT_EQ_LL(EX("schedule", "next", "--cron", "0 3 * * *", "--tz", "Nowhere/Land"), 2);
}

static void test_one_node_fires_every_second_once_with_filled_parameters(void)
{
	char log[512];
	long long n, first, last;
	pid_t pid;

	fresh();
	/* Overlap allowed: this case is about every instant firing once with its
	 * parameters, and a run may take longer than its second on a loaded
	 * machine or in a sanitizer build. What an instant does while a run is
	 * still going (skip, the default) is test_schedule_overlap's. */
	CBT_EQ_LL(EX("schedule", "add", "every", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "--overlap", "allow"),
		  0);
	log_path(log, sizeof(log), "every");
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	/* Five instants, then the node stopped between runs. */
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT (count(*) >= 5)::int FROM batch_schedule_firing"));
	cbt_sched_stop_between_runs(&sched, pid);
	n = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing");
	CU_ASSERT(n >= 3);
	first = cbt_query_ll(sched.conn, "SELECT extract(epoch FROM min(fire_time))::bigint "
					 "FROM batch_schedule_firing");
	last = cbt_query_ll(sched.conn, "SELECT extract(epoch FROM max(fire_time))::bigint "
					"FROM batch_schedule_firing");
	/* Every second from the first to the last, none twice. */
	CBT_EQ_LL(last - first + 1, n);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_firing "
			       "WHERE status = 'FINISHED' AND exit_code = 0 "
			       "AND exit_status = 'COMPLETED' AND job_execution_id IS NOT NULL"),
		  n);
	if (CU_get_number_of_failures() > 0)
		cbt_print_rows(sched.conn,
			       "firings that did not complete (fire time, status, exit, message)",
			       "SELECT fire_time, status, exit_code, exit_status, message FROM "
			       "batch_schedule_firing WHERE status <> 'FINISHED' OR exit_status IS "
			       "DISTINCT FROM 'COMPLETED' ORDER BY fire_time");
	/* One committed run per instant, for that very instant. */
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log"), n);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_firing f JOIN tick_log t ON "
			       "t.fired_for = to_char(f.fire_time AT TIME ZONE 'UTC', "
			       "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
			       "AND t.job_execution_id = f.job_execution_id"),
		  n);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_job_execution_params "
			       "WHERE parameter_name = 'schedule.name' AND NOT identifying "
			       "AND parameter_value = 'every'"),
		  n);
	CBT_EQ_LL(count1("SELECT count(*) FROM batch_schedule_event WHERE outcome = $1", "FIRED"),
		  n);
	CBT_EQ_LL(
		count1("SELECT count(*) FROM batch_schedule_event WHERE outcome = $1", "FINISHED"),
		n);
	CBT_EQ_LL(EX("schedule", "history", "every", "--limit", "4"), 0);
	CBT_CONTAINS(sched.out, "FINISHED");
	CBT_CONTAINS(sched.out, "exit 0 (completed)");
	CBT_EQ_LL(EX("schedule", "list"), 0);
	CBT_CONTAINS(sched.out, "FINISHED COMPLETED");
	{
		char *text = cbt_slurp(log, NULL);

		CBT_CONTAINS(text, "every ");
		CBT_CONTAINS(text, ": fired (firing ");
		CBT_CONTAINS(text, "COMPLETED, exit 0 (completed)");
		free(text);
	}
}

static void test_sigterm_stops_the_running_job_restartable(void)
{
	char log[512], id[32];
	long long exec;
	pid_t pid;
	double t0;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "slow", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=8000"),
		  0);
	log_path(log, sizeof(log), "slow");
	pid = SPAWN(log, "scheduler", "--max-running", "1");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_job_execution "
				       "WHERE status = 'STARTED'"));
	t0 = cbt_now();
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	CU_ASSERT(cbt_now() - t0 < 10.0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing"), 1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing "
					   "WHERE status = 'FINISHED' AND exit_code = 5 "
					   "AND exit_status = 'STOPPED'"),
		  1);
	exec = cbt_query_ll(sched.conn, "SELECT job_execution_id FROM batch_schedule_firing");
	/* The node's own stop, recorded as the signal's: it stays recoverable. */
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND stop_origin = 'SIGNAL'",
				"lld", exec),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'RECOVERY_DUE' AND message LIKE "
					   "'%ended STOPPED by its node''s stop%'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_scheduler_node "
					   "WHERE stopped_at IS NOT NULL"),
		  1);
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("restart", id), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log"), 1);
	{
		char *text = cbt_slurp(log, NULL);

		CBT_CONTAINS(text, "stopping: asking 1 running jobs to stop after their chunk");
		CBT_CONTAINS(text, "STOPPED, exit 5 (stopped, restartable)");
		free(text);
	}
}

static void test_unfillable_template_is_failed_to_launch(void)
{
	char log[512];
	long long execs = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution");
	pid_t pid;

	fresh();
	/* As an older program or a hand edit might have left it. */
	cbt_exec(sched.conn,
		 "INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, "
		 "job_name, parameters, next_fire_time) VALUES ('broken', '0 0 1 1 *', 'UTC', "
		 "'tick', '[\"at={fire_nope}\"]', date_trunc('second', clock_timestamp()) + "
		 "interval '1 second')");
	log_path(log, sizeof(log), "broken");
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	/* Until its instant was taken and refused (however long the node's start
	 * takes), then stopped: nothing else is due before next New Year. */
	if (!cbt_wait_until(sched.conn, 60000,
			    "SELECT count(*) FROM batch_schedule_event WHERE "
			    "outcome = 'FAILED_TO_LAUNCH'"))
		CBT_FAILF("the broken schedule's instant was not refused within 60 s (log: %s)",
			  log);
	cbt_sched_stop_between_runs(&sched, pid);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_firing "
			       "WHERE status = 'FAILED_TO_LAUNCH' AND job_execution_id IS NULL"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_event WHERE "
			       "outcome = 'FAILED_TO_LAUNCH' AND message LIKE '%{fire_nope}%'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution"), execs);
	/* The cursor moved on: next New Year, not this second again. */
	CU_ASSERT(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule WHERE next_fire_time > "
			       "clock_timestamp() + interval '1 day'") == 1);
}

/* ALTER DATABASE <this one> ALLOW_CONNECTIONS @p allow, from another
 * database (a database cannot shut itself). */
static void allow_connections(int allow)
{
	char admin[CBT_CONNINFO_MAX + 32], name[128], sql[512], *q;
	PGconn *a;

	cbt_query_str(sched.conn, "SELECT current_database()", name, sizeof(name));
	snprintf(admin, sizeof(admin), "%s dbname=postgres", sched.db);
	a = cbt_connect(admin);
	q = PQescapeIdentifier(a, name, strlen(name));
	snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS %s", q,
		 allow ? "true" : "false");
	PQfreemem(q);
	CBT_EQ_LL(cbt_exec(a, sql), 0);
	PQfinish(a);
}

static void test_lost_repository_fires_nothing_then_catches_up(void)
{
	char log[512];
	long long before, n, first, last;
	pid_t pid;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "steady", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}"),
		  0);
	log_path(log, sizeof(log), "steady");
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT (count(*) >= 2)::int FROM batch_schedule_firing "
				       "WHERE status = 'FINISHED'"));
	/* The repository goes away for the node: no new sessions, and its
	 * sessions are cut. */
	cbt_exec(sched.conn, "SELECT pg_sleep(0.3)");
	allow_connections(0);
	cbt_exec(sched.conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
			     "WHERE datname = current_database() AND pid <> pg_backend_pid()");
	before = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing");
	cbt_sleep_ms(4000);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing"), before);
	allow_connections(1);
	CU_ASSERT(cbt_wait_untilp(sched.conn, 120000,
				  "SELECT (count(*) >= $1)::int FROM batch_schedule_firing "
				  "WHERE status = 'FINISHED'",
				  "lld", before + 6));
	cbt_sched_stop_between_runs(&sched, pid);
	/* The instants of the outage were taken once it was over (within the
	 * misfire grace): none missing, none twice (a run of instants skipped
	 * while a catching-up firing still ran is one row of them all). */
	n = cbt_query_ll(sched.conn, "SELECT sum(instant_count) FROM batch_schedule_firing");
	first = cbt_query_ll(sched.conn, "SELECT extract(epoch FROM min(fire_time))::bigint "
					 "FROM batch_schedule_firing");
	last = cbt_query_ll(sched.conn, "SELECT extract(epoch FROM max(coalesce(last_instant, "
					"fire_time)))::bigint FROM batch_schedule_firing");
	CBT_EQ_LL(last - first + 1, n);
	{
		char *text = cbt_slurp(log, NULL);

		CBT_CONTAINS(text, "repository unreachable");
		CBT_CONTAINS(text, "firing nothing meanwhile");
		CBT_CONTAINS(text, "repository reachable again");
		free(text);
	}
}

/* Wait until @p pid has stopped itself (state T in /proc). */
static int wait_stopped(pid_t pid, int timeout_ms)
{
	double deadline = cbt_now() + timeout_ms / 1000.0;
	char path[64], buf[512];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	while (cbt_now() < deadline) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		char *paren;

		if (f)
			fclose(f);
		buf[n] = '\0';
		paren = strrchr(buf, ')');
		if (paren && (paren[2] == 'T' || paren[2] == 't'))
			return 1;
		cbt_sleep_ms(20);
	}
	CBT_FAILF("process %d did not stop itself within %d ms", (int)pid, timeout_ms);
	return 0;
}

/* Schedule @p name of tick, firing once (next second), then next New Year. */
static void add_once(const char *name, const char *policy, const char *grace, const char *params)
{
	const char *p[4] = { name, policy, grace, params };
	PGresult *r = PQexecParams(
		sched.conn,
		"INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, "
		"job_name, parameters, misfire_policy, misfire_grace_seconds, next_fire_time) "
		"VALUES ($1, '0 0 1 1 *', 'UTC', 'tick', $4::jsonb, $2, $3::int, "
		"date_trunc('second', clock_timestamp()) + interval '1 second')",
		4, NULL, p, NULL, NULL, 0);

	CBT_EQ_LL(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
}

#define PAUSE_AT(where) ((const char *const[]){ "env", "CBATCH_TEST_SCHEDULER_PAUSE=" where, NULL })

/* Issue 17 item 3: a node that read the database's clock on time, then
 * stalled before its claim, finds the instant late by the time it claims:
 * under SKIP it is recorded MISFIRED and nothing runs. */
static void test_stalled_claim_past_the_grace_is_misfired_under_skip(void)
{
	char log[512];
	long long execs = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution");
	pid_t pid;

	fresh();
	add_once("stalled", "SKIP", "1", "[\"at={fire_utc}\"]");
	log_path(log, sizeof(log), "stalled-claim");
	pid = cbt_examples_spawn(PAUSE_AT("claim"), sched.db, log,
				 (const char *const[]){ "scheduler", "--lease", "5", NULL });
	CU_ASSERT_FATAL(pid > 0);
	if (!wait_stopped(pid, 60000)) {
		kill(pid, SIGKILL);
		cbt_wait(pid);
		return;
	}
	/* Stopped on time, just before its claim: 3 s later is 2 s past the grace. */
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing"), 0);
	CU_ASSERT(cbt_query_ll(sched.conn, "SELECT (clock_timestamp() < next_fire_time + interval "
					   "'1 second')::int FROM batch_schedule") == 1);
	cbt_sleep_ms(3000);
	kill(pid, SIGCONT);
	CU_ASSERT(cbt_wait_until(
		sched.conn, 60000,
		"SELECT count(*) FROM batch_schedule_firing WHERE status <> 'CLAIMED'"));
	/* A moment for a wrong second attempt to show (a negative check). */
	cbt_sleep_ms(500);
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
					   "kind = 'MISFIRE_SKIP' AND status = 'MISFIRED' AND "
					   "missed_count = 1 AND missed_until = fire_time"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_event WHERE "
			       "outcome = 'MISFIRED' AND message LIKE '%past the grace of 1s%'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'FIRED'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution"), execs);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log"), 0);
	{
		char *text = cbt_slurp(log, NULL);

		CBT_CONTAINS(text, "past the grace of 1s");
		CBT_CONTAINS(text, "none run (misfire policy SKIP)");
		free(text);
	}
}

/* Issue 17 item 3: a node stalled between its claim and its launch, whose
 * firing the others reported ORPHANED meanwhile, launches nothing. */
static void test_stalled_launch_of_an_orphaned_firing_runs_nothing(void)
{
	char log[512];
	long long execs = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution");
	pid_t pid;

	fresh();
	add_once("orphan", "RUN_ONCE", "60", "[\"at={fire_utc}\"]");
	log_path(log, sizeof(log), "stalled-launch");
	pid = cbt_examples_spawn(PAUSE_AT("launch"), sched.db, log,
				 (const char *const[]){ "scheduler", "--lease", "1", NULL });
	CU_ASSERT_FATAL(pid > 0);
	if (!wait_stopped(pid, 60000)) {
		kill(pid, SIGKILL);
		cbt_wait(pid);
		return;
	}
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing "
					   "WHERE status = 'CLAIMED'"),
		  1);
	/* Its lease runs out; another node reports the firing, as the others do. */
	cbt_sleep_ms(1500);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_orphans('other-node', "
			       "'{}')"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn,
			       "SELECT count(*) FROM batch_schedule_firing WHERE "
			       "status = 'ORPHANED' AND message LIKE '%it started no execution%'"),
		  1);
	kill(pid, SIGCONT);
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT count(*) FROM batch_schedule_event WHERE "
				 "outcome = 'FAILED_TO_LAUNCH' AND message LIKE "
				 "'not launched: the firing is ORPHANED by node other-node%'"));
	/* A moment for a wrong second attempt to show (a negative check). */
	cbt_sleep_ms(500);
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
					   "status = 'ORPHANED' AND pid IS NULL"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_event WHERE "
					   "outcome = 'FIRED'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution"), execs);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log"), 0);
	{
		char *text = cbt_slurp(log, NULL);

		CBT_CONTAINS(text, "not launched: the firing is ORPHANED by node other-node");
		free(text);
	}
}

/* Issue 17 item 8: a child killed mid-step cannot record its end; the node
 * buries its execution (its process is provably gone), releases its lock and
 * records the firing's real outcome. */
static void test_dead_child_execution_is_buried_and_the_firing_says_so(void)
{
	char log[512], lock[401];
	long long exec, child;
	pid_t pid;

	fresh();
	add_once("killed", "RUN_ONCE", "60", "[\"at={fire_utc}\", \"-sleepMs:long=20000\"]");
	log_path(log, sizeof(log), "killed");
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_job_execution e JOIN "
				       "batch_step_execution s USING (job_execution_id) "
				       "WHERE e.status = 'STARTED' AND s.status = 'STARTED'"));
	exec = cbt_query_ll(sched.conn, "SELECT job_execution_id FROM batch_job_execution "
					"WHERE status = 'STARTED'");
	cbt_query_str(sched.conn,
		      "SELECT lock_name FROM batch_job_execution WHERE status = 'STARTED'", lock,
		      sizeof(lock));
	child = cbt_query_ll(sched.conn,
			     "SELECT pid FROM batch_schedule_firing WHERE status = 'LAUNCHED'");
	CU_ASSERT_FATAL(child > 1);
	CBT_EQ_LL(kill((pid_t)child, SIGKILL), 0);
	CU_ASSERT(cbt_wait_until(
		sched.conn, 60000,
		"SELECT count(*) FROM batch_schedule_firing WHERE status = 'FINISHED'"));
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE "
			      "status = 'FINISHED' AND exit_code = 137 AND exit_status = 'FAILED' "
			      "AND job_execution_id = $1",
			      "lld", exec),
		1);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'FAILED' AND end_time IS NOT NULL AND "
				"exit_message LIKE '%killed by signal 9%'",
				"lld", exec),
		  1);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			      "$1 AND status <> 'FAILED'",
			      "lld", exec),
		0);
	/* The lock is free at once, not at the end of the lease. */
	CBT_EQ_LL(count1("SELECT count(*) FROM batch_lock WHERE lock_name = $1 AND NOT released",
			 lock),
		  0);
	CBT_EQ_LL(count1("SELECT count(*) FROM batch_lock_audit WHERE lock_name = $1 AND "
			 "outcome = 'OWNER_DEAD_TAKEOVER'",
			 lock),
		  1);
	{
		char *text = cbt_slurp(log, NULL);

		CBT_CONTAINS(text, "still claimed to run after its process was killed by signal 9: "
				   "ended FAILED");
		CBT_CONTAINS(text, "FAILED, killed by signal 9");
		free(text);
	}
}

/* ---- run logs (issue 29 item 2) ------------------------------------------- */

/* A scheduled run that prints more than the cap (4000 lines, ~96 KB) and then
 * fails: its log keeps the tail (the first lines gone, bytes_dropped > 0, the
 * last line and the failure there), `show --log` prints it, and the node
 * still passes the child's output on to its own. */
static void test_run_log_keeps_the_tail_of_a_failed_scheduled_run(void)
{
	char log[512], id[32];
	long long exec;
	pid_t pid;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "chatty", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-print:long=4000", "-fail:long=1"),
		  0);
	log_path(log, sizeof(log), "chatty");
	pid = SPAWN(log, "scheduler", "--max-running", "1");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_until(sched.conn, 60000,
				       "SELECT count(*) FROM batch_schedule_firing "
				       "WHERE status = 'FINISHED' AND exit_status = 'FAILED'"));
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	exec = cbt_query_ll(sched.conn, "SELECT job_execution_id FROM batch_schedule_firing "
					"WHERE status = 'FINISHED' AND exit_status = 'FAILED' "
					"ORDER BY firing_id LIMIT 1");
	CU_ASSERT_FATAL(exec > 0);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution_log WHERE "
				"job_execution_id = $1 AND bytes_dropped > 0 AND "
				"bytes_total = bytes_dropped + octet_length(log) AND "
				"octet_length(log) <= 65536",
				"lld", exec),
		  1);
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("show", id, "--log"), 0);
	CBT_CONTAINS(sched.out, "earlier bytes not kept]");
	CBT_CONTAINS(sched.out, "tick: line 4000 of 4000\n");
	CBT_CONTAINS(sched.out, "failing as asked");
	CU_ASSERT(strstr(sched.out, "tick: line 1 of 4000\n") == NULL);
	CU_ASSERT(strstr(sched.out, "tick: line 100 of 4000\n") == NULL);
	CBT_EQ_LL(EX("--json", "show", id, "--log"), 0);
	CBT_CONTAINS(sched.out, "\"captured\": true");
	{
		char *text = cbt_slurp(log, NULL);

		/* Passed on to the node's own output, as when the child wrote there. */
		CBT_CONTAINS(text, "tick: line 1 of 4000\n");
		CBT_CONTAINS(text, "tick: line 4000 of 4000\n");
		free(text);
	}
}

/* A running execution's log is stored while it runs, not only at its end. */
static void test_run_log_of_a_running_execution_is_there_before_it_ends(void)
{
	char log[512];
	pid_t pid;

	fresh();
	add_once("patient", "RUN_ONCE", "60",
		 "[\"at={fire_utc}\", \"-print:long=5\", \"-sleepMs:long=15000\"]");
	log_path(log, sizeof(log), "patient");
	pid = SPAWN(log, "scheduler");
	CU_ASSERT_FATAL(pid > 0);
	/* One statement: the log and the status seen at the same instant. */
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT count(*) FROM batch_job_execution_log l JOIN "
				 "batch_job_execution e USING (job_execution_id) WHERE "
				 "e.status = 'STARTED' AND l.log LIKE '%tick: line 5 of 5%'"));
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
}

/* A run started from a shell has no log, and `show --log` says so; a child
 * that exits before recording an execution (an undeclared parameter) leaves
 * its last line in its firing's message. */
static void test_run_log_none_for_a_shell_run_and_the_firing_keeps_a_refusal(void)
{
	char log[512], id[32];
	long long exec;
	pid_t pid;

	fresh();
	CBT_EQ_LL(EX("run", "tick", "at=from-a-shell", "-print:long=3"), 0);
	exec = cbt_query_ll(sched.conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("show", id, "--log"), 0);
	CBT_CONTAINS(sched.out, "no log: execution");
	CBT_CONTAINS(sched.out, "was not launched by a scheduler node or the console");
	CBT_EQ_LL(EX("show", "999999999", "--log"), 2 /* no such execution */);

	add_once("refused", "RUN_ONCE", "60", "[\"at={fire_utc}\", \"bogus=1\"]");
	log_path(log, sizeof(log), "refused");
	pid = SPAWN(log, "scheduler");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT count(*) FROM batch_schedule_firing WHERE "
				 "status = 'FINISHED' AND job_execution_id IS NULL"));
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	CBT_EQ_LL(
		cbt_query_ll(sched.conn,
			     "SELECT count(*) FROM batch_schedule_firing WHERE status = 'FINISHED' "
			     "AND message LIKE 'exit 2 (usage error) after %s: %bogus%'"),
		1);
}

/* Cleanup removes an execution's log with it. */
static void test_run_log_goes_with_its_execution_in_cleanup(void)
{
	char log[512], id[32];
	long long exec;
	pid_t pid;

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "tidy", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-print:long=2"),
		  0);
	log_path(log, sizeof(log), "tidy");
	pid = SPAWN(log, "scheduler", "--max-running", "1");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(
		cbt_wait_until(sched.conn, 60000,
			       "SELECT (count(*) >= 2)::int FROM batch_schedule_firing f "
			       "JOIN batch_job_execution_log l USING (job_execution_id) "
			       "WHERE f.status = 'FINISHED' AND f.exit_status = 'COMPLETED'"));
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	exec = cbt_query_ll(sched.conn, "SELECT min(job_execution_id) FROM batch_schedule_firing "
					"WHERE status = 'FINISHED' AND exit_status = 'COMPLETED'");
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("show", id, "--log"), 0);
	CBT_CONTAINS(sched.out, "tick: line 2 of 2");
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT count(*) FROM batch_job_execution WHERE status = "
				 "'COMPLETED' AND end_time < clock_timestamp() - interval '2 s'"));
	CBT_EQ_LL(EX("cleanup", "--older-than", "1s"), 0);
	CBT_EQ_LL(cbt_queryp_ll(
			  sched.conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1",
			  "lld", exec),
		  0);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution_log WHERE "
				"job_execution_id = $1",
				"lld", exec),
		  0);
}

static const CU_TestInfo tests[] = {
	{ "add_list_show_pause_resume_remove", test_add_list_show_pause_resume_remove },
	{ "bad_input_is_refused_and_nothing_written",
	  test_bad_input_is_refused_and_nothing_written },
	{ "next_lists_instants_with_dst_of_the_servers_zone",
	  test_next_lists_instants_with_dst_of_the_servers_zone },
	{ "one_node_fires_every_second_once_with_filled_parameters",
	  test_one_node_fires_every_second_once_with_filled_parameters },
	{ "sigterm_stops_the_running_job_restartable",
	  test_sigterm_stops_the_running_job_restartable },
	{ "unfillable_template_is_failed_to_launch", test_unfillable_template_is_failed_to_launch },
	{ "lost_repository_fires_nothing_then_catches_up",
	  test_lost_repository_fires_nothing_then_catches_up },
	{ "stalled_claim_past_the_grace_is_misfired_under_skip",
	  test_stalled_claim_past_the_grace_is_misfired_under_skip },
	{ "stalled_launch_of_an_orphaned_firing_runs_nothing",
	  test_stalled_launch_of_an_orphaned_firing_runs_nothing },
	{ "dead_child_execution_is_buried_and_the_firing_says_so",
	  test_dead_child_execution_is_buried_and_the_firing_says_so },
	{ "run_log_keeps_the_tail_of_a_failed_scheduled_run",
	  test_run_log_keeps_the_tail_of_a_failed_scheduled_run },
	{ "run_log_of_a_running_execution_is_there_before_it_ends",
	  test_run_log_of_a_running_execution_is_there_before_it_ends },
	{ "run_log_none_for_a_shell_run_and_the_firing_keeps_a_refusal",
	  test_run_log_none_for_a_shell_run_and_the_firing_keeps_a_refusal },
	{ "run_log_goes_with_its_execution_in_cleanup",
	  test_run_log_goes_with_its_execution_in_cleanup },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("schedule", init, clean, tests);
}
