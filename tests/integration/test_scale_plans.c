/*
 * Years of history cost nothing to read (issue 20): the statements that a
 * person, a dashboard or a scraper runs routinely (the lock listing, metrics,
 * the jobs overview, schedule list, `run --next`'s lookups, executions of a
 * rare job/status pair) never plan a sequential scan of a table that grows
 * with the history.
 *
 * The repository is bench/growth_gen.sql's (the growth benchmark's, 50,000
 * executions with their steps, partitions, parameters, contexts, audit, lock
 * rows, firings and events), analyzed. The statements are the code's own:
 * cb__repo_observer records each statement cb__repo_exec runs, with its
 * parameters, while the real functions run; each is then EXPLAINed with the
 * same parameters and its plan walked for a Seq Scan of the tables below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cbtest.h"
#include "cbatch/lock.h"
#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "repo.h"
#include "schedule_repo.h"
#include "views.h"

#define EXECUTIONS "50000"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

/* The tables that grow with the history. */
static const char *const history_tables[] = { "batch_job_execution",
					      "batch_step_execution",
					      "batch_job_execution_params",
					      "batch_lock_audit",
					      "batch_lock",
					      "batch_schedule_firing",
					      "batch_schedule_event",
					      "batch_job_instance",
					      "batch_step_execution_context",
					      "batch_job_execution_context",
					      NULL };

/* The statements one call ran, with their parameters. */
#define MAX_SEEN   16
#define MAX_PARAMS 8
typedef struct seen {
	char *what, *sql;
	int n;
	char *values[MAX_PARAMS];
} seen;

static seen stmts[MAX_SEEN];
static int nstmts;

static void observe(void *ctx, const char *what, const char *sql, int n, const char *const *values)
{
	seen *s;

	(void)ctx;
	if (nstmts >= MAX_SEEN || n > MAX_PARAMS)
		return;
	s = &stmts[nstmts++];
	s->what = strdup(what);
	s->sql = strdup(sql);
	s->n = n;
	for (int i = 0; i < n; i++)
		s->values[i] = values && values[i] ? strdup(values[i]) : NULL;
}

static void forget(void)
{
	for (int i = 0; i < nstmts; i++) {
		free(stmts[i].what);
		free(stmts[i].sql);
		for (int k = 0; k < stmts[i].n; k++)
			free(stmts[i].values[k]);
	}
	nstmts = 0;
}

/* Seq Scans of history tables anywhere in @p plan, named into @p found. */
static void seq_scans(const json_t *plan, char *found, size_t size)
{
	const char *type = json_string_value(json_object_get(plan, "Node Type"));
	const char *rel = json_string_value(json_object_get(plan, "Relation Name"));
	const json_t *kids = json_object_get(plan, "Plans");

	if (type && rel && strcmp(type, "Seq Scan") == 0)
		for (int i = 0; history_tables[i]; i++)
			if (strcmp(rel, history_tables[i]) == 0 &&
			    strlen(found) + strlen(rel) + 2 < size) {
				strcat(found, " ");
				strcat(found, rel);
			}
	for (size_t i = 0; i < json_array_size(kids); i++)
		seq_scans(json_array_get(kids, i), found, size);
}

/* EXPLAIN every statement @p call ran; fail naming each Seq Scan of history. */
static void check_plans(const char *call)
{
	CU_ASSERT(nstmts > 0);
	for (int i = 0; i < nstmts; i++) {
		const seen *s = &stmts[i];
		size_t len = strlen(s->sql) + 32;
		char *sql = malloc(len), found[512] = "";
		PGresult *res;
		json_t *doc;
		json_error_t jerr;

		if (!sql) {
			CBT_FAILF("out of memory");
			break;
		}
		snprintf(sql, len, "EXPLAIN (FORMAT JSON) %s", s->sql);
		res = PQexecParams(conn, sql, s->n, NULL, (const char *const *)s->values, NULL,
				   NULL, 0);
		free(sql);
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			CBT_FAILF("%s: EXPLAIN of '%s' failed: %s", call, s->what,
				  PQerrorMessage(conn));
			PQclear(res);
			continue;
		}
		doc = json_loads(PQgetvalue(res, 0, 0), 0, &jerr);
		PQclear(res);
		seq_scans(json_object_get(json_array_get(doc, 0), "Plan"), found, sizeof(found));
		if (found[0])
			CBT_FAILF("%s: statement '%s' plans a sequential scan of:%s", call, s->what,
				  found);
		json_decref(doc);
	}
	forget();
}

static int init(void)
{
	char *gen;
	char path[4096];
	double t0 = cbt_now();

	if (cbt_repo_db(db, sizeof(db), "scale_plans", &conn) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/bench/growth_gen.sql", cbt_source_dir());
	gen = cbt_slurp(path, NULL);
	if (!gen) {
		fprintf(stderr, "cannot read %s\n", path);
		return -1;
	}
	if (cbt_exec(conn, "SET cbatch_bench.executions = " EXECUTIONS) < 0 ||
	    cbt_exec(conn, gen) < 0) {
		free(gen);
		return -1;
	}
	free(gen);
	printf("\n  repository of " EXECUTIONS " executions written in %.1fs\n", cbt_now() - t0);
	cb__repo_observer = observe;
	return 0;
}

static int clean(void)
{
	cb__repo_observer = NULL;
	forget();
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

static void test_lock_listing(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_lock_list_options o = { 0, 50, NULL, 0 };
	json_t *list = NULL;
	char *next = NULL;

	/* "Recent" is the default hour, counted from when the repository was
	 * written (the newest generated execution's create_time) rather than
	 * from now: writing it takes a while, and on a slow machine the hour's
	 * oldest row (31 s inside it) would drop out before the listing ran. */
	o.recent_seconds =
		3600.0 + (double)cbt_query_ll(
				 conn,
				 "SELECT (extract(epoch FROM now() - create_time) * 1000)::bigint "
				 "FROM batch_job_execution WHERE job_execution_id = " EXECUTIONS) /
				 1000.0;
	CBT_PASS(cb_lock_list_page(&list, &next, conn, &o, &err), &err);
	/* The two running executions hold their job's lock and their
	 * partitions' (6); the jobs that ran within the hour released theirs
	 * (31, one every 2 minutes); none of the 50,000 older ones. */
	CBT_EQ_LL(json_array_size(list), 35);
	CU_ASSERT(next == NULL);
	json_decref(list);
	/* Not asking (0) is asking for the hour: the same rows, read at once. */
	{
		cb_lock_list_options dflt = { 0, 50, NULL, 0 }, hour = { 0, 50, NULL, 3600 };
		json_t *a = NULL, *b = NULL;

		CBT_PASS(cb_lock_list_page(&a, NULL, conn, &dflt, &err), &err);
		CBT_PASS(cb_lock_list_page(&b, NULL, conn, &hour, &err), &err);
		CU_ASSERT(json_array_size(a) >= 34);
		CBT_EQ_LL(json_array_size(a), json_array_size(b));
		for (size_t i = 0; i < json_array_size(a) && i < json_array_size(b); i++)
			CBT_EQ_STR(json_string_value(
					   json_object_get(json_array_get(a, i), "lock_name")),
				   json_string_value(
					   json_object_get(json_array_get(b, i), "lock_name")));
		json_decref(a);
		json_decref(b);
	}
	check_plans("locks");
	o.all = 1;
	o.recent_seconds = 0;
	o.after = "cbatch.partition:1";
	CBT_PASS(cb_lock_list_page(&list, &next, conn, &o, &err), &err);
	CBT_EQ_LL(json_array_size(list), 50);
	CU_ASSERT(next != NULL);
	json_decref(list);
	free(next);
	check_plans("locks --all --after");
}

static void test_metrics(void)
{
	cb_error err = CB_ERROR_INIT;
	char *text = NULL;

	CBT_PASS(cb_metrics_text(&text, conn, &err), &err);
	/* Counted as the rows were written: 1250 executions of adhoc_35 (one
	 * step of 500 reads each); every execution took its lock once. */
	CBT_CONTAINS(text, "cbatch_items_read_total{batch_job=\"adhoc_35\"} 625000\n");
	CBT_CONTAINS(text, "cbatch_lock_acquire_success_total " EXECUTIONS "\n");
	free(text);
	check_plans("metrics");
}

static void test_jobs_overview(void)
{
	cb_error err = CB_ERROR_INIT;
	json_t *list = NULL;

	CBT_PASS(cb__repo_job_overview(&list, conn, "[\"never_run\"]", &err), &err);
	CBT_EQ_LL(json_array_size(list), 41);
	json_decref(list);
	check_plans("jobs overview");
}

static void test_schedule_list(void)
{
	cb_error err = CB_ERROR_INIT;
	json_t *list = NULL;

	CBT_PASS(cb__repo_schedules_json(&list, conn, NULL, &err), &err);
	CBT_EQ_LL(json_array_size(list), 35);
	json_decref(list);
	check_plans("schedule list");
}

static void test_run_next_lookups(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_params *p = NULL;

	CBT_PASS(cb__repo_last_instance_params(&p, conn, "hourly_07", &err), &err);
	cb_params_free(p);
	check_plans("run --next");
}

static void test_rare_job_status_pair(void)
{
	cb_error err = CB_ERROR_INIT;
	cb__exec_filter f = { "adhoc_36", "STOPPED", NULL, NULL, 0, 20 };
	json_t *list = NULL;

	CBT_PASS(cb__repo_find_executions(&list, conn, &f, &err), &err);
	json_decref(list);
	check_plans("executions ?job=&status=");
	f.job_name = NULL;
	f.status = "FAILED";
	CBT_PASS(cb__repo_find_executions(&list, conn, &f, &err), &err);
	json_decref(list);
	check_plans("executions ?status=");
}

/* A scheduler's claim of a fire instant (batch_schedule_claim, PL/pgSQL:
 * EXPLAIN of the call shows a function scan only). Its statements' plans,
 * nested ones included, as they run: auto_explain's, sent to this client
 * as notices. */
static char *claim_plans[64];
static int nclaim_plans;

static void keep_plan(void *arg, const PGresult *res)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *plan = msg ? strchr(msg, '{') : NULL;

	(void)arg;
	if (plan && nclaim_plans < (int)(sizeof(claim_plans) / sizeof(claim_plans[0])))
		claim_plans[nclaim_plans++] = strdup(plan);
}

static void test_scheduler_claim(void)
{
	cb_error err = CB_ERROR_INIT;
	cb__claim_req q = { 0 };
	cb__claim_res r;
	PQnoticeReceiver was;
	int checked = 0;

	q.schedule_id = cbt_query_ll(conn, "SELECT schedule_id FROM batch_schedule "
					   "WHERE schedule_name = 'hourly_07_schedule'");
	q.version = cbt_query_ll(conn, "SELECT version FROM batch_schedule "
				       "WHERE schedule_name = 'hourly_07_schedule'");
	/* the next instant a day ahead: on time, a claim (not a misfire) */
	q.fire_time = cbt_query_ll(conn, "SELECT extract(epoch FROM date_trunc('hour', now()) + "
					 "interval '1 day')::bigint");
	q.kind = "SCHEDULED";
	q.param_time = q.fire_time;
	q.next_fire = q.fire_time + 3600;
	q.node = "scale-plans";
	q.job_key = "00000000000000000000000000000007";
	q.parameters = "[]";
	CU_ASSERT(cbt_exec(conn, "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; "
				 "SET auto_explain.log_nested_statements = on; "
				 "SET auto_explain.log_format = json; "
				 "SET auto_explain.log_level = notice") == 0);
	was = PQsetNoticeReceiver(conn, keep_plan, NULL);
	CBT_PASS(cb__repo_schedule_claim(&r, conn, &q, &err), &err);
	PQsetNoticeReceiver(conn, was, NULL);
	cbt_exec(conn, "SET auto_explain.log_min_duration = -1");
	CBT_EQ_LL(r.outcome, CB__CLAIM_CLAIMED);
	for (int i = 0; i < nclaim_plans; i++) {
		json_error_t jerr;
		json_t *doc = json_loads(claim_plans[i], 0, &jerr);
		char found[512] = "";

		if (doc) {
			seq_scans(json_object_get(doc, "Plan"), found, sizeof(found));
			checked++;
		}
		if (found[0])
			CBT_FAILF("claim: statement '%.200s' plans a sequential scan of:%s",
				  json_string_value(json_object_get(doc, "Query Text")), found);
		json_decref(doc);
		free(claim_plans[i]);
	}
	/* the call and the statements inside it (the schedule's row, the
	 * orphans, the live firing, the insert, the cursor) */
	CU_ASSERT(checked >= 5);
	nclaim_plans = 0;
}

/* Cleanup's statements that read executions, the audit, the lock rows or the
 * schedule history: the plan, the measures, and those of a batch (the
 * statements that open and close its transaction are not queries), and the
 * dry run's count of the schedule history. */
static const char *const cleanup_reads[] = { "plan cleanup",
					     "measure cleanup of executions",
					     "measure cleanup of the lock audit",
					     "measure cleanup of schedule events",
					     "measure cleanup of schedule firings",
					     "pick executions to remove",
					     "judge executions to remove",
					     "remove executions",
					     "remove instances",
					     "remove lock audit rows",
					     "remove unused locks",
					     "remove old schedule events",
					     "remove old schedule firings",
					     "count old schedule history",
					     NULL };

static void observe_cleanup(void *ctx, const char *what, const char *sql, int n,
			    const char *const *values)
{
	for (int i = 0; i < nstmts; i++)
		if (strcmp(stmts[i].what, what) == 0)
			return; /* the first of each is enough */
	for (int i = 0; cleanup_reads[i]; i++)
		if (strcmp(cleanup_reads[i], what) == 0) {
			observe(ctx, what, sql, n, values);
			return;
		}
}

/* (last: it removes the oldest executions) */
static void test_cleanup_of_the_oldest(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_cleanup_options o = CB_CLEANUP_OPTIONS_INIT;
	cb_cleanup_result r;

	/* the oldest 500 of the 50,000, 2 minutes apart, in batches of 100 */
	o.older_than_seconds = (50000 - 500) * 120.0;
	o.batch = 100;
	cb__repo_observer = observe_cleanup;
	o.dry_run = 1;
	CBT_PASS(cb_repo_cleanup(&r, conn, &o, &err), &err);
	CU_ASSERT(r.removed.schedule_firings > 0);
	o.dry_run = 0;
	CBT_PASS(cb_repo_cleanup(&r, conn, &o, &err), &err);
	cb__repo_observer = observe;
	CU_ASSERT(r.removed.job_executions >= 450 && r.removed.job_executions <= 500);
	CU_ASSERT(r.removed.lock_audit >= 2 * r.removed.job_executions);
	/* (a firing and two events per scheduled run, 35 of every 40 runs) */
	CU_ASSERT(r.removed.schedule_firings >= 350 && r.removed.schedule_firings <= 500);
	CBT_EQ_LL(r.removed.schedule_events, 2 * r.removed.schedule_firings);
	CU_ASSERT(r.removed.locks > 0);
	CBT_EQ_LL(nstmts, 14);
	check_plans("cleanup");
}

static const CU_TestInfo tests[] = {
	{ "lock listing", test_lock_listing },
	{ "metrics", test_metrics },
	{ "jobs overview", test_jobs_overview },
	{ "schedule list", test_schedule_list },
	{ "run --next lookups", test_run_next_lookups },
	{ "executions of a rare job/status pair", test_rare_job_status_pair },
	{ "scheduler claim", test_scheduler_claim },
	{ "cleanup of the oldest", test_cleanup_of_the_oldest },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("scale_plans", init, clean, tests);
}
