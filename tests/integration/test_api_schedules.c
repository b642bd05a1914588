/*
 * Schedules and launches in the console (issue 21, items 1 and 2) over real
 * HTTP against the real `serve` process, a real scheduler and repository.
 *
 * The schedule endpoints' JSON: the list, one schedule with its next
 * firings in its own zone (Europe/Berlin, a monthly instant across the
 * spring change: each local 12:00 with its offset, and the UTC time that
 * offset gives); the firing history with keyset paging. Pause, resume and
 * fire are refused without the token (401) and from another origin (403);
 * the Jobs list says a job whose schedules are all paused is paused. Fire
 * now while a firing is live under overlap SKIP: 409 naming the live firing,
 * recorded SKIPPED_OVERLAP of kind MANUAL, nothing queued or run; once it is
 * over, 202, QUEUED, and a scheduler node runs it to its end. Two fire now
 * while no node runs, under overlap allow and skip: both 202 QUEUED, and a
 * node then runs both, the older first (issue 25 item 3). A job's
 * declared parameters; a launch with a bad parameter is 400 naming it with
 * nothing written; a good one 202, and it completes; the same instance again
 * 409, and 409 for an instance while it runs. A parameter the job declares
 * non-identifying (tick's sleepMs) makes no new instance for the launch's
 * check, and fire now keys its firing without it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cbatch.h"
#include "cbtest.h"
#include "serve_client.h"

#define TOKEN "t0ken-for-the-schedules-test"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[16384];
static char token_file[4096];
static struct server adm;
static PGconn *conn;
static char origin[64], auth[128];

static int run_examples(const char *const *args)
{
	const char *argv[24];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_examples((const char *const[]){ __VA_ARGS__, NULL })

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	return cbt_db_create(db, sizeof(db), "api_schedules");
}

static int clean(void)
{
	if (adm.pid > 0)
		server_stop(&adm);
	PQfinish(conn);
	if (token_file[0])
		unlink(token_file);
	cbt_db_drop(db);
	curl_global_cleanup();
	return 0;
}

/* A request with @p hs (NULL: token and our origin for POST, none for GET);
 * the status, the body parsed into @p doc (may be NULL). */
static long req(const char *method, const char *path, const char *body, const char *const *hs,
		json_t **doc)
{
	const char *mine[] = { auth, origin, "Content-Type: application/json", NULL };
	struct resp r;
	long st;

	if (!hs && strcmp(method, "POST") == 0)
		hs = mine;
	http(&r, adm.port, method, path, body, body ? strlen(body) : 0, hs);
	st = r.status;
	if (doc)
		*doc = json_loads(r.body ? r.body : "", 0, NULL);
	if (st >= 400 && st != 401 && st != 403 && st != 404 && st != 409 && st != 400)
		CBT_FAILF("%s %s: %ld %.300s", method, path, st, r.body);
	resp_free(&r);
	return st;
}

static const char *err_message(json_t *doc)
{
	const char *m =
		json_string_value(json_object_get(json_object_get(doc, "error"), "message"));

	return m ? m : "(no message)";
}

static void test_fixture(void)
{
	conn = cbt_connect(db);
	CBT_EQ_LL(EX("schema", "init"), 0);
	CBT_EQ_LL(EX("example-setup", "tick", "--reset"), 0);
	/* Noon on the 1st of each month in Berlin: across a DST change within
	 * any five months. */
	CBT_EQ_LL(EX("schedule", "add", "monthly", "--cron", "0 12 1 * *", "--tz", "Europe/Berlin",
		     "--job", "tick", "at={fire_utc}"),
		  0);
	snprintf(token_file, sizeof(token_file), "%s/schedules-token-%d", cbt_tmpdir(),
		 (int)getpid());
	cbt_write_str(token_file, TOKEN "\n");
	chmod(token_file, 0600);
	/* A launch's answer waits for its outcome as long as a busy machine
	 * may need (the default, 8 s, is for people). */
	CBT_EQ_LL(server_start(&adm, db,
			       (const char *const[]){ "--admin-token-file", token_file,
						      "--launch-wait", "60", NULL }),
		  0);
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%d", adm.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", TOKEN);
}

#define NEED_SERVER()                                                                              \
	do {                                                                                       \
		if (adm.pid <= 0) {                                                                \
			CBT_FAILF("no server (the fixture failed)");                               \
			return;                                                                    \
		}                                                                                  \
	} while (0)

static void test_list_and_next_firings(void)
{
	json_t *d = NULL, *s, *next;
	int plus1 = 0, plus2 = 0;

	NEED_SERVER();
	CBT_EQ_LL(req("GET", "/api/v1/schedules", NULL, NULL, &d), 200);
	s = json_array_get(json_object_get(d, "schedules"), 0);
	CBT_EQ_STR(json_string_value(json_object_get(s, "name")), "monthly");
	CBT_EQ_STR(json_string_value(json_object_get(s, "cron")), "0 12 1 * *");
	CBT_EQ_STR(json_string_value(json_object_get(s, "time_zone")), "Europe/Berlin");
	CBT_EQ_STR(json_string_value(json_object_get(s, "job")), "tick");
	CBT_EQ_STR(json_string_value(json_array_get(json_object_get(s, "parameters"), 0)),
		   "at={fire_utc}");
	CBT_EQ_STR(json_string_value(json_object_get(s, "overlap_policy")), "SKIP");
	CBT_EQ_STR(json_string_value(json_object_get(s, "misfire_policy")), "RUN_ONCE");
	CBT_EQ_STR(json_string_value(json_object_get(s, "recover_policy")), "RESTART");
	CBT_EQ_LL(json_is_false(json_object_get(s, "paused")), 1);
	json_decref(d);

	CBT_EQ_LL(req("GET", "/api/v1/schedules/monthly", NULL, NULL, &d), 200);
	next = json_object_get(d, "next_firings");
	CBT_EQ_LL(json_array_size(next), 5);
	for (size_t i = 0; i < json_array_size(next); i++) {
		const char *local =
			json_string_value(json_object_get(json_array_get(next, i), "local"));
		const char *utc =
			json_string_value(json_object_get(json_array_get(next, i), "utc"));

		if (!local || !utc || strlen(local) < 25 || strlen(utc) < 20) {
			CBT_FAILF("next firing %zu: %s / %s", i, local ? local : "-",
				  utc ? utc : "-");
			break;
		}
		/* Local noon on the 1st, with its offset; UTC is noon minus it. */
		CBT_EQ_LL(strncmp(local + 8, "01T12:00:00", 11), 0);
		if (strcmp(local + 19, "+01:00") == 0) {
			plus1++;
			CBT_EQ_LL(strncmp(utc + 8, "01T11:00:00Z", 12), 0);
		} else if (strcmp(local + 19, "+02:00") == 0) {
			plus2++;
			CBT_EQ_LL(strncmp(utc + 8, "01T10:00:00Z", 12), 0);
		} else {
			CBT_FAILF("unexpected offset in %s", local);
		}
	}
	/* Five months in a row hold both CET and CEST. */
	CBT_EQ_LL(plus1 > 0 && plus2 > 0, 1);
	json_decref(d);

	CBT_EQ_LL(req("GET", "/api/v1/schedules/nope", NULL, NULL, &d), 404);
	json_decref(d);
	CBT_EQ_LL(req("GET", "/api/v1/schedules/bad%20name", NULL, NULL, &d), 400);
	json_decref(d);
}

static void test_firings_paging(void)
{
	json_t *d = NULL, *f;
	long long first, next;
	char path[160];

	NEED_SERVER();
	/* Seven past firings of every sort, the newest a run of six instants
	 * skipped for overlap (sql/021), blocked by the one before. */
	cbt_exec(
		conn,
		"INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, missed_until, "
		" missed_count, node_id, status, job_name, message, finished_at, last_instant, "
		" instant_count) "
		"SELECT s.schedule_id, timestamptz '2026-01-01 11:00Z' + g * interval '1 day', "
		" CASE WHEN g = 2 THEN 'MISFIRE_RUN' ELSE 'SCHEDULED' END, "
		" CASE WHEN g = 2 THEN timestamptz '2026-01-05 11:00Z' END, "
		" CASE WHEN g = 2 THEN 4 ELSE 0 END, 'node-' || g, "
		" CASE g WHEN 3 THEN 'ORPHANED' WHEN 7 THEN 'SKIPPED_OVERLAP' ELSE 'FINISHED' END, "
		" 'tick', 'seeded', now(), CASE WHEN g = 7 THEN timestamptz '2026-01-01 11:00:05Z' "
		" + g * interval '1 day' END, CASE WHEN g = 7 THEN 6 ELSE 1 END "
		"FROM batch_schedule s, generate_series(1, 7) g WHERE s.schedule_name = 'monthly'");
	cbt_exec(conn, "UPDATE batch_schedule_firing SET blocked_by = firing_id - 1 WHERE "
		       "node_id = 'node-7'");
	first = cbt_query_ll(conn, "SELECT max(firing_id) FROM batch_schedule_firing");
	CBT_EQ_LL(req("GET", "/api/v1/schedules/monthly/firings?limit=3", NULL, NULL, &d), 200);
	f = json_object_get(d, "firings");
	CBT_EQ_LL(json_array_size(f), 3);
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(f, 0), "firing_id")), first);
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(f, 0), "status")),
		   "SKIPPED_OVERLAP");
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(f, 0), "node_id")), "node-7");
	/* The run: its count, both ends, and the firing it waited for; a firing
	 * of one instant ends where it starts. */
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(f, 0), "instant_count")), 6);
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(f, 0), "blocked_by")),
		  first - 1);
	{
		const char *a = json_string_value(
				   json_object_get(json_array_get(f, 0), "fire_time")),
			   *z = json_string_value(
				   json_object_get(json_array_get(f, 0), "last_instant"));

		CU_ASSERT_FATAL(a && z);
		CU_ASSERT(strcmp(a, z) < 0);
	}
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(f, 1), "instant_count")), 1);
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(f, 1), "last_instant")),
		   json_string_value(json_object_get(json_array_get(f, 1), "fire_time")));
	next = json_integer_value(json_object_get(d, "next_before"));
	CBT_EQ_LL(next, first - 2);
	json_decref(d);
	snprintf(path, sizeof(path), "/api/v1/schedules/monthly/firings?limit=3&before=%lld", next);
	CBT_EQ_LL(req("GET", path, NULL, NULL, &d), 200);
	f = json_object_get(d, "firings");
	CBT_EQ_LL(json_array_size(f), 3);
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(f, 1), "status")), "ORPHANED");
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(f, 2), "kind")), "MISFIRE_RUN");
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(f, 2), "missed_count")), 4);
	next = json_integer_value(json_object_get(d, "next_before"));
	json_decref(d);
	snprintf(path, sizeof(path), "/api/v1/schedules/monthly/firings?limit=3&before=%lld", next);
	CBT_EQ_LL(req("GET", path, NULL, NULL, &d), 200);
	CBT_EQ_LL(json_array_size(json_object_get(d, "firings")), 1);
	CBT_EQ_LL(json_is_null(json_object_get(d, "next_before")), 1);
	json_decref(d);
	CBT_EQ_LL(req("GET", "/api/v1/schedules/monthly/firings?limit=0", NULL, NULL, &d), 400);
	json_decref(d);
	/* One status only (issue 28.5): the 5 FINISHED, newest first, paged. */
	CBT_EQ_LL(req("GET", "/api/v1/schedules/monthly/firings?status=FINISHED&limit=3", NULL,
		      NULL, &d),
		  200);
	f = json_object_get(d, "firings");
	CBT_EQ_LL(json_array_size(f), 3);
	for (size_t i = 0; i < json_array_size(f); i++)
		CBT_EQ_STR(json_string_value(json_object_get(json_array_get(f, i), "status")),
			   "FINISHED");
	CBT_EQ_STR(json_string_value(json_object_get(d, "status")), "FINISHED");
	next = json_integer_value(json_object_get(d, "next_before"));
	json_decref(d);
	snprintf(path, sizeof(path),
		 "/api/v1/schedules/monthly/firings?status=FINISHED&limit=3&before=%lld", next);
	CBT_EQ_LL(req("GET", path, NULL, NULL, &d), 200);
	CBT_EQ_LL(json_array_size(json_object_get(d, "firings")), 2);
	json_decref(d);
	cbt_exec(conn, "DELETE FROM batch_schedule_firing");
}

static void test_pause_resume(void)
{
	const char *const none[] = { origin, NULL };
	const char *const evil[] = { auth, "Origin: http://evil.example", NULL };
	const char *paths[] = { "/api/v1/schedules/monthly/pause",
				"/api/v1/schedules/monthly/resume",
				"/api/v1/schedules/monthly/fire" };
	json_t *d = NULL, *jobs, *j;
	size_t i;

	NEED_SERVER();
	for (i = 0; i < 3; i++) {
		CBT_EQ_LL(req("POST", paths[i], "{}", none, &d), 401);
		json_decref(d);
		CBT_EQ_LL(req("POST", paths[i], "{}", evil, &d), 403);
		json_decref(d);
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule WHERE paused"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing"), 0);

	CBT_EQ_LL(req("POST", paths[0], "{}", NULL, &d), 200);
	CBT_EQ_LL(json_is_true(json_object_get(d, "paused")), 1);
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule WHERE paused"), 1);
	/* The Jobs list: paused, not "no schedule". */
	CBT_EQ_LL(req("GET", "/api/v1/jobs", NULL, NULL, &d), 200);
	jobs = json_object_get(d, "jobs");
	json_array_foreach(jobs, i, j)
	{
		if (strcmp(json_string_value(json_object_get(j, "job_name")), "tick") == 0)
			CBT_EQ_LL(json_is_true(json_object_get(j, "schedules_paused")), 1);
		else
			CBT_EQ_LL(json_is_false(json_object_get(j, "schedules_paused")), 1);
	}
	json_decref(d);
	/* Paused: fire now is refused. */
	CBT_EQ_LL(req("POST", paths[2], "{}", NULL, &d), 409);
	CBT_CONTAINS(err_message(d), "paused");
	json_decref(d);
	CBT_EQ_LL(req("POST", paths[1], "{}", NULL, &d), 200);
	CBT_EQ_LL(json_is_false(json_object_get(d, "paused")), 1);
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule WHERE paused"), 0);
	CBT_EQ_LL(req("POST", "/api/v1/schedules/nope/pause", "{}", NULL, &d), 404);
	json_decref(d);
}

static void test_fire_now(void)
{
	json_t *d = NULL, *f, *fs;
	long long live, fid, exec;
	char log[4096];
	pid_t pid;

	NEED_SERVER();
	/* A live firing: being launched by a node whose lease holds. */
	cbt_exec(conn, "INSERT INTO batch_scheduler_node (node_id, host, pid, lease_seconds) "
		       "VALUES ('busy-node', 'elsewhere', 1, 600)");
	cbt_exec(conn, "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		       " status, job_name) SELECT schedule_id, '2026-01-01 11:00Z', 'SCHEDULED', "
		       " 'busy-node', 'CLAIMED', 'tick' FROM batch_schedule");
	live = cbt_query_ll(conn, "SELECT max(firing_id) FROM batch_schedule_firing");
	CBT_EQ_LL(req("POST", "/api/v1/schedules/monthly/fire", "{}", NULL, &d), 409);
	CBT_CONTAINS(err_message(d), "busy-node");
	CBT_CONTAINS(err_message(d), "overlap policy SKIP");
	json_decref(d);
	/* Recorded as a skip of a manual firing; nothing queued, nothing run. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing WHERE kind = "
				     "'MANUAL' AND status = 'SKIPPED_OVERLAP'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing WHERE status = "
				     "'QUEUED'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	/* A node judged the seconds already, skipping each for overlap: the
	 * answer is that skip in the node's words, not "taken by" the node (4
	 * times of 5 on an every-2-s schedule before). The judged seconds cover
	 * the next minute of the database's clock, whenever this request lands
	 * (after the second of the manual skip above, which is its own). */
	if (!cbt_wait_until(
		    conn, 60000,
		    "SELECT (clock_timestamp() >= max(fire_time) + interval '1 second')::int "
		    "FROM batch_schedule_firing WHERE kind = 'MANUAL'"))
		CBT_FAILF("the database's clock did not pass the skipped manual instant");
	cbt_queryp_ll(conn,
		      "WITH s AS (SELECT schedule_id FROM batch_schedule WHERE schedule_name = "
		      " 'monthly'), i AS (INSERT INTO batch_schedule_firing (schedule_id, "
		      " fire_time, kind, node_id, status, job_name, message) SELECT "
		      " s.schedule_id, g, 'SCHEDULED', 'judging-node', 'SKIPPED_OVERLAP', 'tick', "
		      " 'skipped: firing ' || $1 || ' still runs (overlap policy SKIP)' FROM s, "
		      " generate_series(date_trunc('second', clock_timestamp()), "
		      " date_trunc('second', clock_timestamp()) + interval '60 s', "
		      " interval '1 s') g ON CONFLICT DO NOTHING RETURNING 1) "
		      "SELECT count(*) FROM i",
		      "lld", live);
	CBT_EQ_LL(req("POST", "/api/v1/schedules/monthly/fire", "{}", NULL, &d), 409);
	CBT_CONTAINS(err_message(d), "still runs (overlap policy SKIP)");
	if (strstr(err_message(d), "is taken by"))
		CBT_FAILF("a second skipped for overlap was answered as taken: %s", err_message(d));
	json_decref(d);
	cbt_exec(conn, "DELETE FROM batch_schedule_firing WHERE node_id = 'judging-node'");

	/* The live one is over: fired now (in a later second by the database's
	 * clock: the skip took its second's instant, once per instant), queued
	 * for a scheduler node. */
	if (!cbt_wait_until(
		    conn, 60000,
		    "SELECT (clock_timestamp() >= max(fire_time) + interval '1 second')::int "
		    "FROM batch_schedule_firing WHERE kind = 'MANUAL'"))
		CBT_FAILF("the database's clock did not pass the skipped manual instant");
	cbt_queryp_ll(
		conn,
		"WITH u AS (UPDATE batch_schedule_firing SET status = 'FINISHED', "
		" finished_at = now() WHERE firing_id = $1 RETURNING 1) SELECT count(*) FROM u",
		"lld", live);
	CBT_EQ_LL(req("POST", "/api/v1/schedules/monthly/fire", "{}", NULL, &d), 202);
	CBT_EQ_STR(json_string_value(json_object_get(d, "status")), "QUEUED");
	CBT_EQ_STR(json_string_value(json_object_get(d, "kind")), "MANUAL");
	CBT_CONTAINS(json_string_value(json_object_get(d, "fire_time")), "+0");
	fid = json_integer_value(json_object_get(d, "firing_id"));
	json_decref(d);
	/* (A second one while it is queued: test_fire_twice.) A scheduler node
	 * runs it as any firing; it stays up until it did (however long that
	 * takes here), then stops between runs. */
	snprintf(log, sizeof(log), "%s/schedules-scheduler-%d.log", cbt_tmpdir(), (int)getpid());
	{
		const char *argv[] = { cbt_examples_bin(), "--db", db,  "scheduler",
				       "--lease",          "5",    NULL };

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	if (!cbt_wait_untilp(
		    conn, 60000,
		    "SELECT count(*) FROM batch_schedule_firing f JOIN batch_job_execution x "
		    "USING (job_execution_id) WHERE f.firing_id = $1 AND "
		    "f.status = 'FINISHED' AND f.exit_code = 0 AND x.status = 'COMPLETED'",
		    "lld", fid)) {
		CBT_FAILF("the manual firing %lld did not finish with a completed execution "
			  "(node log: %s)",
			  fid, log);
		cbt_print_rows(conn, "firings",
			       "SELECT firing_id, kind, status, node_id, job_execution_id, "
			       "exit_code, message FROM batch_schedule_firing ORDER BY firing_id");
		cbt_print_rows(conn, "executions",
			       "SELECT job_execution_id, status, exit_code, exit_message "
			       "FROM batch_job_execution ORDER BY job_execution_id");
	}
	/* Nothing else is due (the schedule's instant is months away), so the
	 * node is between runs: SIGTERM ends it with 0. */
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	exec = cbt_queryp_ll(conn,
			     "SELECT job_execution_id FROM batch_schedule_firing "
			     "WHERE firing_id = $1",
			     "lld", fid);
	/* fid's run is the only run, and ran once. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log"), 1);
	/* A manual instant is never late: no misfire recorded for it. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event WHERE outcome = "
				     "'MISFIRED'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event WHERE outcome = "
				     "'FIRED'"),
		  1);
	/* The history shows fid, wherever it stands in the list. */
	CBT_EQ_LL(req("GET", "/api/v1/schedules/monthly/firings", NULL, NULL, &d), 200);
	fs = json_object_get(d, "firings");
	f = NULL;
	for (size_t i = 0; i < json_array_size(fs); i++)
		if (json_integer_value(json_object_get(json_array_get(fs, i), "firing_id")) == fid)
			f = json_array_get(fs, i);
	if (!f)
		CBT_FAILF("firing %lld is not in the history", fid);
	CBT_EQ_STR(json_string_value(json_object_get(f, "kind")), "MANUAL");
	CBT_EQ_STR(json_string_value(json_object_get(f, "execution_status")), "COMPLETED");
	CBT_EQ_LL(json_integer_value(json_object_get(f, "job_execution_id")), exec);
	json_decref(d);
}

static void test_job_params_and_launch(void)
{
	json_t *d = NULL, *p;
	long long inst, execs;
	int found = 0;

	NEED_SERVER();
	CBT_EQ_LL(req("GET", "/api/v1/jobs/tick", NULL, NULL, &d), 200);
	p = json_object_get(d, "parameters");
	for (size_t i = 0; i < json_array_size(p); i++) {
		json_t *x = json_array_get(p, i);

		if (strcmp(json_string_value(json_object_get(x, "name")), "at") == 0) {
			found = 1;
			CBT_EQ_STR(json_string_value(json_object_get(x, "type")), "string");
			CBT_EQ_LL(json_is_true(json_object_get(x, "required")), 1);
			CBT_EQ_LL(json_is_true(json_object_get(x, "identifying")), 1);
		}
	}
	CBT_EQ_LL(found, 1);
	json_decref(d);
	CBT_EQ_LL(req("GET", "/api/v1/jobs/nope", NULL, NULL, &d), 404);
	json_decref(d);

	inst = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance");
	execs = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");
	/* Without the token: refused, nothing started. */
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions", "{\"params\":[\"at=x\"]}",
		      (const char *const[]){ origin, NULL }, &d),
		  401);
	json_decref(d);
	/* Bad input, each named, nothing written. */
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=launch-1\",\"-sleepMs:long=abc\"]}", NULL, &d),
		  400);
	CBT_CONTAINS(err_message(d), "sleepMs");
	json_decref(d);
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions", "{\"params\":[]}", NULL, &d), 400);
	CBT_CONTAINS(err_message(d), "at");
	json_decref(d);
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions", "{\"params\":[\"at=x\",\"bogus=1\"]}",
		      NULL, &d),
		  400);
	CBT_CONTAINS(err_message(d), "bogus");
	json_decref(d);
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions", "{\"params\":\"at=x\"}", NULL, &d),
		  400);
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), inst);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), execs);

	/* A good one: 201 with the execution it recorded; it completes. */
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=launch-1\",\"-sleepMs:long=0\"]}", NULL, &d),
		  201);
	CBT_EQ_LL(json_integer_value(json_object_get(d, "pid")) > 0, 1);
	CBT_EQ_LL(json_integer_value(json_object_get(d, "job_execution_id")),
		  cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution"));
	json_decref(d);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM batch_job_execution e JOIN batch_job_instance i "
			    "USING (job_instance_id) JOIN batch_job_execution_params p "
			    "ON p.job_execution_id = e.job_execution_id "
			    "WHERE e.status = 'COMPLETED' AND p.parameter_name = 'at' "
			    "AND p.parameter_value = 'launch-1'"))
		CBT_FAILF("the launched run did not complete");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log WHERE fired_for = 'launch-1'"),
		  1);
	/* The same instance again: complete, 409, nothing started. */
	execs = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions", "{\"params\":[\"at=launch-1\"]}",
		      NULL, &d),
		  409);
	CBT_CONTAINS(err_message(d), "already complete");
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), execs);

	/* A running instance: 409 while it runs, nothing started (it runs 10 s:
	 * time for the second POST on a loaded machine). */
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=launch-2\",\"-sleepMs:long=10000\"]}", NULL, &d),
		  201);
	json_decref(d);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM batch_job_execution e "
			    "JOIN batch_job_execution_params p USING (job_execution_id) "
			    "WHERE e.status = 'STARTED' AND p.parameter_name = 'at' "
			    "AND p.parameter_value = 'launch-2'"))
		CBT_FAILF("the second launched run did not start");
	execs = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions", "{\"params\":[\"at=launch-2\"]}",
		      NULL, &d),
		  409);
	CBT_CONTAINS(err_message(d), "already running");
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), execs);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM tick_log WHERE fired_for = 'launch-2'"))
		CBT_FAILF("the second launched run did not complete");

	/* A run its lock keeps out (ledger: one run of the job at a time, and a
	 * live owner elsewhere holds it): the run's own refusal, 409, naming the
	 * holder and the scope; not "started". Nothing written. Its tables
	 * are there: the preflight would refuse it first (400). */
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "10"), 0);
	cbt_exec(conn, "INSERT INTO batch_lock (lock_name, owner_id, locked_until, fencing_token, "
		       " locked_at, updated_at) VALUES ('ledger', 'elsewhere:1:1:0:0:0', "
		       " clock_timestamp() + interval '1 hour', 1, clock_timestamp(), "
		       " clock_timestamp())");
	execs = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");
	inst = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance");
	CBT_EQ_LL(req("POST", "/api/v1/jobs/ledger/executions",
		      "{\"params\":[\"day:date=2026-09-09\"]}", NULL, &d),
		  409);
	CBT_CONTAINS(err_message(d), "lock 'ledger' is held by elsewhere:1:");
	CBT_CONTAINS(err_message(d), "lock scope job");
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), execs);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), inst);
	cbt_exec(conn, "DELETE FROM batch_lock WHERE lock_name = 'ledger'");
}

/* GET the log of execution @p id: its document (new), NULL on no 200. */
static json_t *get_log(long long id)
{
	char path[80];
	json_t *d = NULL;

	snprintf(path, sizeof(path), "/api/v1/executions/%lld/log", id);
	if (req("GET", path, NULL, NULL, &d) != 200) {
		json_decref(d);
		return NULL;
	}
	return d;
}

/*
 * Issue 29 item 2: a console launch's output is the execution's log. A run
 * that prints more than the cap and fails: the API gives its tail (the
 * first lines gone, bytes_dropped > 0, the last line and the failure there).
 * A running one's log is there before it ends. A run started from a shell
 * has none (captured false); an unknown execution is 404.
 */
static void test_launch_log(void)
{
	json_t *d = NULL;
	const char *text;
	long long id;
	double until;
	int seen = 0;

	NEED_SERVER();
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=log-1\",\"-print:long=4000\",\"-fail:long=1\"]}", NULL,
		      &d),
		  201);
	id = json_integer_value(json_object_get(d, "job_execution_id"));
	json_decref(d);
	CU_ASSERT_FATAL(id > 0);
	if (!cbt_wait_untilp(conn, 60000,
			     "SELECT count(*) FROM batch_job_execution_log l JOIN "
			     "batch_job_execution e USING (job_execution_id) WHERE "
			     "e.job_execution_id = $1 AND e.status = 'FAILED' "
			     "AND l.log LIKE '%failing as asked%'",
			     "lld", id))
		CBT_FAILF("the failed launch's log was not stored");
	d = get_log(id);
	CU_ASSERT_FATAL(d != NULL);
	CBT_EQ_LL(json_is_true(json_object_get(d, "captured")), 1);
	CBT_EQ_STR(json_string_value(json_object_get(d, "status")), "FAILED");
	CU_ASSERT(json_integer_value(json_object_get(d, "bytes_dropped")) > 0);
	text = json_string_value(json_object_get(d, "log"));
	CU_ASSERT_FATAL(text != NULL);
	CU_ASSERT(strlen(text) <= 65536);
	CBT_CONTAINS(text, "tick: line 4000 of 4000\n");
	CBT_CONTAINS(text, "failing as asked");
	CU_ASSERT(strstr(text, "tick: line 1 of 4000\n") == NULL);
	json_decref(d);

	/* Running: its log before its end (status and log read together). */
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=log-2\",\"-print:long=5\",\"-sleepMs:long=15000\"]}", NULL,
		      &d),
		  201);
	id = json_integer_value(json_object_get(d, "job_execution_id"));
	json_decref(d);
	CU_ASSERT_FATAL(id > 0);
	for (until = cbt_now() + 60; !seen && cbt_now() < until;) {
		d = get_log(id);
		text = json_string_value(json_object_get(d, "log"));
		if (text && strstr(text, "tick: line 5 of 5")) {
			seen = 1;
			CBT_EQ_STR(json_string_value(json_object_get(d, "status")), "STARTED");
		}
		json_decref(d);
		if (!seen)
			cbt_sleep_ms(100);
	}
	CBT_EQ_LL(seen, 1);
	if (!cbt_wait_untilp(conn, 60000,
			     "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			     "AND status = 'COMPLETED'",
			     "lld", id))
		CBT_FAILF("the running launch did not complete");

	/* From a shell: no log. */
	CBT_EQ_LL(EX("run", "tick", "at=log-3", "-print:long=2"), 0);
	id = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	d = get_log(id);
	CU_ASSERT_FATAL(d != NULL);
	CBT_EQ_LL(json_is_false(json_object_get(d, "captured")), 1);
	CBT_EQ_LL(json_is_null(json_object_get(d, "log")), 1);
	json_decref(d);
	CBT_EQ_LL(req("GET", "/api/v1/executions/999999999/log", NULL, NULL, &d), 404);
	json_decref(d);
}

/* POST fire on schedule @p name in a second of the database's clock later
 * than every firing of it so far (once per instant); 202 QUEUED expected.
 * @return the firing's id. */
static long long fire_queued(const char *name)
{
	char path[128];
	json_t *d = NULL;
	long long id;

	if (!cbt_wait_untilp(conn, 5000,
			     "SELECT (date_trunc('second', clock_timestamp()) > coalesce(max("
			     "f.fire_time), '-infinity'))::int FROM batch_schedule_firing f JOIN "
			     "batch_schedule s USING (schedule_id) WHERE s.schedule_name = $1",
			     "s", name))
		CBT_FAILF("the database's clock did not pass the last firing of %s", name);
	snprintf(path, sizeof(path), "/api/v1/schedules/%s/fire", name);
	CBT_EQ_LL(req("POST", path, "{}", NULL, &d), 202);
	CBT_EQ_STR(json_string_value(json_object_get(d, "status")), "QUEUED");
	id = json_integer_value(json_object_get(d, "firing_id"));
	json_decref(d);
	return id;
}

/*
 * Issue 25 item 3: two "fire now" of one schedule while no scheduler runs
 * are both QUEUED (a queued firing is no live run, so neither makes the
 * other wait, under overlap allow as under skip); then a node runs both,
 * the older first (claimed first), each to COMPLETED. Under skip the newer
 * waits until the older has ended: their executions never overlap.
 */
static void test_fire_twice(void)
{
	const char *names[] = { "twice-allow", "twice-skip" };
	const char *policies[] = { "allow", "skip" };
	long long ids[2][2];
	char log[4096];
	pid_t pid;

	NEED_SERVER();
	for (int p = 0; p < 2; p++) {
		/* Never due during the test: only the manual firings run. */
		CBT_EQ_LL(EX("schedule", "add", names[p], "--cron", "0 12 1 1 *", "--job", "tick",
			     "at={schedule}@{fire_utc}", "-sleepMs:long=1000", "--overlap",
			     policies[p]),
			  0);
		ids[p][0] = fire_queued(names[p]);
		ids[p][1] = fire_queued(names[p]);
		CU_ASSERT(ids[p][0] > 0 && ids[p][1] > ids[p][0]);
	}
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_schedule_firing f JOIN "
			       "batch_schedule s USING (schedule_id) WHERE s.schedule_name "
			       "LIKE 'twice-%' AND f.status = 'QUEUED' AND f.kind = 'MANUAL'"),
		  4);
	snprintf(log, sizeof(log), "%s/schedules-twice-%d.log", cbt_tmpdir(), (int)getpid());
	{
		const char *argv[] = {
			cbt_examples_bin(), "--db", db,  "scheduler", "--exit-after", "60",
			"--lease",          "5",    NULL
		};

		pid = cbt_spawn(argv, log);
	}
	CU_ASSERT_FATAL(pid > 0);
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 2; k++)
			if (!cbt_wait_untilp(
				    conn, 30000,
				    "SELECT count(*) FROM batch_schedule_firing WHERE "
				    "firing_id = $1 AND status = 'FINISHED' AND exit_code = 0",
				    "lld", ids[p][k]))
				CBT_FAILF("%s: queued firing %lld did not run to its end (see %s)",
					  names[p], ids[p][k], log);
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 30000), 0);
	for (int p = 0; p < 2; p++) {
		/* Each ran once, COMPLETED, the older claimed first. */
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT count(*) FROM batch_schedule_firing f JOIN "
					"batch_job_execution e USING (job_execution_id) WHERE "
					"f.firing_id IN ($1, $2) AND e.status = 'COMPLETED'",
					"lld lld", ids[p][0], ids[p][1]),
			  2);
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT count(*) FROM batch_schedule_firing a, "
					"batch_schedule_firing b WHERE a.firing_id = $1 AND "
					"b.firing_id = $2 AND a.claimed_at < b.claimed_at",
					"lld lld", ids[p][0], ids[p][1]),
			  1);
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT count(*) FROM batch_schedule_event WHERE firing_id "
					"IN ($1, $2) AND outcome = 'FIRED'",
					"lld lld", ids[p][0], ids[p][1]),
			  2);
	}
	/* Under skip, the newer started after the older ended. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_schedule_firing a JOIN "
				"batch_job_execution ea USING (job_execution_id), "
				"batch_schedule_firing b JOIN batch_job_execution eb USING "
				"(job_execution_id) WHERE a.firing_id = $1 AND b.firing_id = $2 "
				"AND eb.start_time >= ea.end_time",
				"lld lld", ids[1][0], ids[1][1]),
		  1);
}

/* The job key of the parameter words of firing @p id, without sleepMs. */
static void firing_keys(long long id, char *job_key, char *want)
{
	char idt[24];
	const char *pv[1] = { idt };
	cb_error err = CB_ERROR_INIT;
	cb_params *p = NULL;
	json_t *words;
	PGresult *res;

	job_key[0] = want[0] = '\0';
	snprintf(idt, sizeof(idt), "%lld", id);
	res = PQexecParams(conn,
			   "SELECT job_key, parameters::text FROM batch_schedule_firing "
			   "WHERE firing_id = $1::bigint",
			   1, NULL, pv, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQgetisnull(res, 0, 0)) {
		CBT_FAILF("firing %lld: no job key (%s)", id, PQerrorMessage(conn));
		PQclear(res);
		return;
	}
	snprintf(job_key, CB_JOB_KEY_LEN + 1, "%s", PQgetvalue(res, 0, 0));
	words = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
	PQclear(res);
	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	for (size_t i = 0; i < json_array_size(words); i++)
		CBT_PASS(cb_params_parse_arg(p, json_string_value(json_array_get(words, i)), &err),
			 &err);
	CBT_EQ_LL(cb_params_remove(p, "sleepMs"), 0);
	CBT_PASS(cb_params_job_key(want, p, &err), &err);
	cb_params_free(p);
	json_decref(words);
}

/*
 * Issue 28 item 10: tick declares sleepMs non-identifying. The job page's
 * API says so; a launch that differs from a complete one only in sleepMs
 * (given without a '-', as the form did) is that instance: 409 complete,
 * nothing started. Fire now keys its firing without it, though the
 * schedule's template gives it a value of its instant.
 */
static void test_declared_non_identifying(void)
{
	char got[CB_JOB_KEY_LEN + 1], want[CB_JOB_KEY_LEN + 1];
	json_t *d = NULL, *p;
	long long execs, inst, fid;
	int seen = 0;

	NEED_SERVER();
	CBT_EQ_LL(req("GET", "/api/v1/jobs/tick", NULL, NULL, &d), 200);
	p = json_object_get(d, "parameters");
	for (size_t i = 0; i < json_array_size(p); i++) {
		json_t *x = json_array_get(p, i);

		if (strcmp(json_string_value(json_object_get(x, "name")), "sleepMs") == 0) {
			seen = 1;
			CBT_EQ_LL(json_is_false(json_object_get(x, "identifying")), 1);
		}
	}
	CBT_EQ_LL(seen, 1);
	json_decref(d);

	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=nid-1\",\"sleepMs:long=0\"]}", NULL, &d),
		  201);
	json_decref(d);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM batch_job_execution e "
			    "JOIN batch_job_execution_params p USING (job_execution_id) "
			    "WHERE e.status = 'COMPLETED' AND p.parameter_name = 'at' "
			    "AND p.parameter_value = 'nid-1'"))
		CBT_FAILF("the launched run did not complete");
	execs = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");
	inst = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance");
	CBT_EQ_LL(req("POST", "/api/v1/jobs/tick/executions",
		      "{\"params\":[\"at=nid-1\",\"sleepMs:long=100\"]}", NULL, &d),
		  409);
	CBT_CONTAINS(err_message(d), "already complete");
	/* Refused by the console's own check, before any run was spawned: it
	 * names the instance by the key of at=nid-1 alone. */
	{
		cb_error err = CB_ERROR_INIT;
		cb_params *k = NULL;

		CBT_PASS_FATAL(cb_params_new(&k, &err), &err);
		CBT_PASS(cb_params_add_string(k, "at", "nid-1", 1, &err), &err);
		CBT_PASS(cb_params_job_key(want, k, &err), &err);
		cb_params_free(k);
		CBT_CONTAINS(err_message(d), want);
	}
	json_decref(d);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), execs);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), inst);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tick_log WHERE fired_for = 'nid-1'"), 1);

	/* Never due: only the manual firing. A negative sleep sleeps not. */
	CBT_EQ_LL(EX("schedule", "add", "nid", "--cron", "0 12 1 1 *", "--job", "tick",
		     "at={schedule}@{fire_utc}", "sleepMs:long=-{fire_epoch}"),
		  0);
	fid = fire_queued("nid");
	firing_keys(fid, got, want);
	CBT_EQ_STR(got, want);
	/* Nothing of it is left for the next cases' scheduler. */
	CBT_EQ_LL(EX("schedule", "remove", "nid"), 0);
}

/*
 * Backfill from the console (issue 28.11): 201 with the count created and
 * each instant, in the schedule's zone; the same range again 200 with none
 * created; a reversed range, a future end, a bad time 400 with nothing
 * written; an unknown schedule 404, a paused one 409; no token 401; the
 * cancel removes what waits.
 */
static void test_backfill(void)
{
	json_t *doc = NULL;
	const char *path = "/api/v1/schedules/bf-daily/backfill";
	const char *noauth[] = { origin, "Content-Type: application/json", NULL };

	NEED_SERVER();
	CBT_EQ_LL(EX("schedule", "add", "bf-daily", "--cron", "30 6 * * *", "--tz", "Europe/Berlin",
		     "--job", "tick", "at={fire_utc}"),
		  0);
	CBT_EQ_LL(req("POST", path, "{\"from\": \"2026-03-28\", \"to\": \"2026-03-31\"}", noauth,
		      NULL),
		  401);
	CBT_EQ_LL(
		req("POST", path, "{\"from\": \"2026-03-28\", \"to\": \"2026-03-31\"}", NULL, &doc),
		201);
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "created")), 3);
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "existing")), 0);
	/* Across the spring change: each 06:30 with its own offset. */
	CBT_EQ_STR(json_string_value(json_object_get(
			   json_array_get(json_object_get(doc, "instants"), 0), "fire_time")),
		   "2026-03-28T06:30:00+01:00");
	CBT_EQ_STR(json_string_value(json_object_get(
			   json_array_get(json_object_get(doc, "instants"), 2), "fire_time")),
		   "2026-03-30T06:30:00+02:00");
	json_decref(doc);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				     "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				     "'bf-daily' AND f.kind = 'BACKFILL' AND f.status = 'QUEUED' "
				     "AND f.node_id LIKE 'console@%'"),
		  3);
	CBT_EQ_LL(
		req("POST", path, "{\"from\": \"2026-03-28\", \"to\": \"2026-03-31\"}", NULL, &doc),
		200);
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "created")), 0);
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "existing")), 3);
	json_decref(doc);
	CBT_EQ_LL(
		req("POST", path, "{\"from\": \"2026-03-31\", \"to\": \"2026-03-28\"}", NULL, &doc),
		400);
	CBT_CONTAINS(err_message(doc), "the range is reversed");
	json_decref(doc);
	CBT_EQ_LL(
		req("POST", path, "{\"from\": \"2026-04-01\", \"to\": \"2999-01-01\"}", NULL, &doc),
		400);
	CBT_CONTAINS(err_message(doc), "after now");
	json_decref(doc);
	CBT_EQ_LL(
		req("POST", path, "{\"from\": \"yesterday\", \"to\": \"2026-04-01\"}", NULL, &doc),
		400);
	CBT_CONTAINS(err_message(doc), "is not a time");
	json_decref(doc);
	CBT_EQ_LL(req("POST", path, "{\"to\": \"2026-04-01\"}", NULL, NULL), 400);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				     "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				     "'bf-daily'"),
		  3);
	CBT_EQ_LL(req("POST", "/api/v1/schedules/no-such/backfill",
		      "{\"from\": \"2026-03-28\", \"to\": \"2026-03-31\"}", NULL, NULL),
		  404);
	CBT_EQ_LL(EX("schedule", "pause", "bf-daily"), 0);
	CBT_EQ_LL(
		req("POST", path, "{\"from\": \"2026-03-20\", \"to\": \"2026-03-21\"}", NULL, &doc),
		409);
	CBT_CONTAINS(err_message(doc), "is paused");
	json_decref(doc);
	CBT_EQ_LL(EX("schedule", "resume", "bf-daily"), 0);
	CBT_EQ_LL(req("POST", "/api/v1/schedules/bf-daily/backfill/cancel", NULL, NULL, &doc), 200);
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "canceled")), 3);
	json_decref(doc);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing f JOIN "
				     "batch_schedule s USING (schedule_id) WHERE s.schedule_name = "
				     "'bf-daily'"),
		  0);
	/* The firings list of the schedule page shows the kind. */
	CBT_EQ_LL(req("POST", path, "{\"from\": \"2026-03-28\", \"to\": \"2026-03-28T23:00\"}",
		      NULL, NULL),
		  201);
	CBT_EQ_LL(req("GET", "/api/v1/schedules/bf-daily/firings", NULL, NULL, &doc), 200);
	CBT_EQ_STR(json_string_value(json_object_get(
			   json_array_get(json_object_get(doc, "firings"), 0), "kind")),
		   "BACKFILL");
	json_decref(doc);
	CBT_EQ_LL(EX("schedule", "remove", "bf-daily"), 0);
}

static void test_finish(void)
{
	NEED_SERVER();
	CBT_EQ_LL(server_stop(&adm), 0);
	adm.pid = 0;
}

static const CU_TestInfo tests[] = {
	{ "fixture: a monthly schedule in Europe/Berlin; a server with a token", test_fixture },
	{ "list and one schedule: policies, next firings with offsets across DST",
	  test_list_and_next_firings },
	{ "firing history: keyset paging, kinds, misfire counts, orphans, skips",
	  test_firings_paging },
	{ "pause/resume: 401/403 without token or from elsewhere; jobs say paused",
	  test_pause_resume },
	{ "fire now: 409 under overlap skip, nothing run; 202 queued, a node runs it",
	  test_fire_now },
	{ "launch: declared parameters; 400 naming the bad one, nothing written; 202; 409 "
	  "complete; 409 running",
	  test_job_params_and_launch },
	{ "launch log: the tail past the cap of a failed run, a running run's before its end, "
	  "none from a shell",
	  test_launch_log },
	{ "fire now twice while no node runs: both queued, run oldest first (allow, skip)",
	  test_fire_twice },
	{ "a parameter tick declares non-identifying: launch 409 complete, fire now keys "
	  "without it",
	  test_declared_non_identifying },
	{ "backfill: 201 with the count, 200 when all exist, 400 bad ranges, 404, 409 paused, "
	  "cancel",
	  test_backfill },
	{ "server stops with 0", test_finish },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("api_schedules", init, clean, tests);
}
