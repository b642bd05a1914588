/*
 * /metrics and the jobs overview from a snapshot (issue 29, item 3): what
 * many clients poll is computed by one request at a time and reused for
 * --snapshot-interval seconds, so that a hundred scrapers cost the database
 * what one does and never take the pool from the console's other requests.
 * Each case starts its own `serve` (a real process, real HTTP) against the
 * suite's database.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cbtest.h"
#include "serve_client.h"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[16384];

static int run_examples(const char *const *args)
{
	const char *argv[20];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 19)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_examples((const char *const[]){ __VA_ARGS__, NULL })

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	if (cbt_db_create(db, sizeof(db), "serve_snapshot") < 0)
		return -1;
	return EX("schema", "init") == 0 && EX("example-setup", "ledger", "--rows", "100") == 0 ?
		       0 :
		       -1;
}

static int clean(void)
{
	cbt_db_drop(db);
	curl_global_cleanup();
	return 0;
}

/* One GET on its own thread. */
struct scrape {
	int port;
	const char *path;
	struct resp r;
	atomic_int done;
};

static void *scrape_thread(void *arg)
{
	struct scrape *s = arg;

	http(&s->r, s->port, "GET", s->path, NULL, 0, NULL);
	atomic_store(&s->done, 1);
	return NULL;
}

/* The value of the sample line "@p name VALUE" in @p text, or -1. */
static double sample(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

#define NSCRAPERS 100

/* A hundred scrapers at once on a cold server: one computation serves them
 * all (each reply says 1), and later scrapes within the interval reuse it,
 * older by the time between them. */
static void test_a_hundred_scrapes_compute_the_metrics_once(void)
{
	static struct scrape s[NSCRAPERS];
	pthread_t t[NSCRAPERS];
	struct server srv = { 0 };
	struct resp r;
	double age1, age2;

	if (server_start(&srv, db,
			 (const char *const[]){ "--snapshot-interval", "300",
						"--client-connections", "200", "--pool", "2",
						NULL }) < 0)
		return;
	for (int i = 0; i < NSCRAPERS; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].port = srv.port;
		s[i].path = "/metrics";
		pthread_create(&t[i], NULL, scrape_thread, &s[i]);
	}
	for (int i = 0; i < NSCRAPERS; i++) {
		pthread_join(t[i], NULL);
		CBT_EQ_LL(s[i].r.status, 200);
		if (s[i].r.body) {
			CBT_CONTAINS(s[i].r.body,
				     "# TYPE cbatch_lock_acquire_success_total counter\n");
			CBT_CONTAINS(s[i].r.body,
				     "\ncbatch_metrics_snapshot_computations_total 1\n");
			CU_ASSERT(sample(s[i].r.body, "cbatch_metrics_snapshot_age_seconds") >= 0);
		}
		resp_free(&s[i].r);
	}
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	age1 = sample(r.body ? r.body : "", "cbatch_metrics_snapshot_age_seconds");
	resp_free(&r);
	cbt_sleep_ms(300);
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	age2 = sample(r.body ? r.body : "", "cbatch_metrics_snapshot_age_seconds");
	CBT_CONTAINS(r.body ? r.body : "", "\ncbatch_metrics_snapshot_computations_total 1\n");
	CU_ASSERT(sample(r.body ? r.body : "", "cbatch_metrics_snapshot_duration_seconds") >= 0);
	resp_free(&r);
	if (!(age1 >= 0 && age2 >= age1 + 0.25))
		CBT_FAILF("the snapshot's age went from %.3f to %.3f over 300 ms", age1, age2);
	CBT_EQ_LL(server_stop(&srv), 0);
}

/* A computation that does not come holds no request: with it held at a
 * table lock, all 20 scrapes answer (the last snapshot, after a second's
 * wait) while the lock is still held, one session of the server waits on
 * it, and /readyz (a pooled connection) answers at once from a pool of 2.
 * Released, the next scrape has a new one. */
static void test_waiting_scrapers_leave_the_server_to_others(void)
{
	static struct scrape s[20];
	pthread_t t[20];
	struct server srv = { 0 };
	struct resp r;
	PGconn *holder, *watch;
	double t0;
	int answered = 0;

	if (server_start(&srv, db,
			 (const char *const[]){ "--snapshot-interval", "0", "--pool", "2", NULL }) <
	    0)
		return;
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	CBT_CONTAINS(r.body ? r.body : "", "\ncbatch_metrics_snapshot_computations_total 1\n");
	resp_free(&r);
	holder = cbt_connect(db);
	watch = cbt_connect(db);
	cbt_exec(holder, "BEGIN; LOCK TABLE batch_job_summary IN ACCESS EXCLUSIVE MODE");
	for (int i = 0; i < 20; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].port = srv.port;
		s[i].path = "/metrics";
		pthread_create(&t[i], NULL, scrape_thread, &s[i]);
	}
	if (!cbt_wait_until(watch, 30000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch serve' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("no scrape reached the database");
	/* All answer while the lock is held (waited for, however slow the machine). */
	t0 = cbt_now();
	do {
		answered = 0;
		for (int i = 0; i < 20; i++)
			answered += atomic_load(&s[i].done);
		if (answered < 20)
			cbt_sleep_ms(20);
	} while (answered < 20 && cbt_now() - t0 < 60);
	CBT_EQ_LL(answered, 20);
	t0 = cbt_now();
	CBT_EQ_LL(http(&r, srv.port, "GET", "/readyz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	resp_free(&r);
	/* The pool's wait is 5 s: an answer within it came from a free slot. */
	CU_ASSERT(cbt_now() - t0 < 4.5);
	CBT_EQ_LL(cbt_query_ll(watch, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
				      "current_database() AND application_name = 'cbatch serve' "
				      "AND wait_event_type = 'Lock'"),
		  1);
	for (int i = 0; i < 20; i++) {
		pthread_join(t[i], NULL);
		if (s[i].r.status != 200)
			CBT_FAILF("scrape %d: status %ld, curl %d", i, s[i].r.status,
				  s[i].r.curl_rc);
		CBT_CONTAINS(s[i].r.body ? s[i].r.body : "",
			     "\ncbatch_metrics_snapshot_computations_total 1\n");
		resp_free(&s[i].r);
	}
	cbt_exec(holder, "COMMIT");
	/* The held computation ends now: a scrape soon has it (polled). */
	t0 = cbt_now();
	for (double got = 0; got < 2 && cbt_now() - t0 < 30; cbt_sleep_ms(50)) {
		CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
		CBT_EQ_LL(r.status, 200);
		got = sample(r.body ? r.body : "", "cbatch_metrics_snapshot_computations_total");
		resp_free(&r);
		if (got >= 2)
			break;
		if (cbt_now() - t0 >= 29)
			CBT_FAILF("no new snapshot after the lock was released");
	}
	PQfinish(holder);
	PQfinish(watch);
	CBT_EQ_LL(server_stop(&srv), 0);
}

/* The error of a computation is every waiter's, and is not kept: with the
 * schema gone /metrics answers 500 or 503, and once it is back, 200. */
static void test_a_failed_computation_is_not_kept(void)
{
	struct server srv = { 0 };
	struct resp r;
	PGconn *conn = cbt_connect(db);

	if (server_start(&srv, db, (const char *const[]){ "--snapshot-interval", "300", NULL }) <
	    0) {
		PQfinish(conn);
		return;
	}
	cbt_exec(conn, "BEGIN; ALTER TABLE batch_job_summary RENAME TO batch_job_summary_away");
	cbt_exec(conn, "COMMIT");
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	CU_ASSERT(r.status == 500 || r.status == 503);
	resp_free(&r);
	cbt_exec(conn, "ALTER TABLE batch_job_summary_away RENAME TO batch_job_summary");
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	CBT_CONTAINS(r.body ? r.body : "", "\ncbatch_metrics_snapshot_computations_total 1\n");
	resp_free(&r);
	PQfinish(conn);
	CBT_EQ_LL(server_stop(&srv), 0);
}

/* The ledger's newest execution as /api/v1/jobs shows it (0: none). */
static long long overview_last(int port, double *age)
{
	struct resp r;
	json_t *v, *jobs, *job;
	long long id = -1;
	size_t i;

	*age = -1;
	if (http(&r, port, "GET", "/api/v1/jobs", NULL, 0, NULL) < 0 || r.status != 200) {
		CBT_FAILF("GET /api/v1/jobs: %ld %.300s", r.status, r.body ? r.body : "");
		resp_free(&r);
		return -1;
	}
	v = json_loads(r.body, 0, NULL);
	resp_free(&r);
	*age = json_number_value(json_object_get(v, "snapshot_age_seconds"));
	jobs = json_object_get(v, "jobs");
	json_array_foreach(
		jobs, i,
		job) if (strcmp(json_string_value(json_object_get(job, "job_name")), "ledger") == 0)
	{
		json_t *last = json_object_get(job, "last_execution");

		id = json_is_object(last) ?
			     json_integer_value(json_object_get(last, "job_execution_id")) :
			     0;
	}
	json_decref(v);
	return id;
}

/* Within its interval the overview is the snapshot (a run since does not
 * show yet); with --snapshot-interval 0 each request sees the run. */
static void test_jobs_overview_is_the_snapshot(void)
{
	struct server reuse = { 0 }, fresh = { 0 };
	PGconn *conn = cbt_connect(db);
	long long before, after, newest;
	double age;

	if (server_start(&reuse, db, (const char *const[]){ "--snapshot-interval", "300", NULL }) <
		    0 ||
	    server_start(&fresh, db, (const char *const[]){ "--snapshot-interval", "0", NULL }) <
		    0) {
		PQfinish(conn);
		return;
	}
	before = overview_last(reuse.port, &age);
	CU_ASSERT(before >= 0 && age >= 0);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "10"), 0);
	CBT_EQ_LL(EX("run", "ledger", "--next"), 0);
	newest = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	after = overview_last(reuse.port, &age);
	CBT_EQ_LL(after, before);
	CU_ASSERT(age > 0);
	CBT_EQ_LL(overview_last(fresh.port, &age), newest);
	PQfinish(conn);
	CBT_EQ_LL(server_stop(&reuse), 0);
	CBT_EQ_LL(server_stop(&fresh), 0);
}

/* --snapshot-interval takes 0..300 seconds; anything else exits 2 naming it. */
static void test_bad_snapshot_interval(void)
{
	static const char *const bad[] = { "-1", "301", "abc", "1.5", "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CBT_EQ_LL(EX("serve", "--snapshot-interval", bad[i]), 2);
		CBT_CONTAINS(errout, "invalid --snapshot-interval");
		CBT_CONTAINS(errout, "0..300 seconds");
	}
}

static const CU_TestInfo tests[] = {
	{ "a hundred scrapes at once compute the metrics once",
	  test_a_hundred_scrapes_compute_the_metrics_once },
	{ "waiting scrapers leave the server to others",
	  test_waiting_scrapers_leave_the_server_to_others },
	{ "a failed computation is not kept", test_a_failed_computation_is_not_kept },
	{ "the jobs overview is the snapshot within its interval",
	  test_jobs_overview_is_the_snapshot },
	{ "a bad --snapshot-interval exits 2", test_bad_snapshot_interval },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("serve_snapshot", init, clean, tests);
}
