/*
 * The engine through the C API, with jobs defined here: tasklets, restart
 * of multi-step jobs, filtering, writer failures, stop requests, restartability
 * and the schema's own guarantees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"
#include "numbers.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "engine", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* ---- tasklets -------------------------------------------------------------- */

typedef struct counter {
	int calls;   /* calls in this process */
	int fail_at; /* fail when the context's count reaches this (0: never) */
	int done_at; /* say CB_DONE at this count */
} counter;

static int count_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			 cb_error *err)
{
	counter *c = user;
	long long n = json_integer_value(json_object_get(context, "count")) + 1;

	(void)sc;
	(void)tx;
	c->calls++;
	if (c->fail_at && n == c->fail_at)
		return cb_error_set(err, CB_EINVAL, "tasklet refuses count %lld", n);
	json_object_set_new(context, "count", json_integer(n));
	return n >= c->done_at ? CB_DONE : 0;
}

static cb_job *tasklet_job(const char *name, counter *a, counter *b)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, name, &err), &err);
	s.kind = CB_STEP_TASKLET;
	s.tasklet = count_tasklet;
	s.name = "first";
	s.user = a;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	if (b) {
		s.name = "second";
		s.user = b;
		CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	}
	return job;
}

static void test_tasklet_repeats_until_done_and_commits_each_call(void)
{
	cb_error err = CB_ERROR_INIT;
	counter a = { 0, 0, 5 };
	cb_job *job = tasklet_job("tasklet_done", &a, NULL);
	cb_job_result r;

	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(a.calls, 5);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) "
				     "WHERE i.job_name = 'tasklet_done'"),
		  5);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT (c.serialized_context->>'count')::int FROM "
				     "batch_step_execution_context c JOIN batch_step_execution s "
				     "USING (step_execution_id) JOIN batch_job_execution e USING "
				     "(job_execution_id) JOIN batch_job_instance i USING "
				     "(job_instance_id) WHERE i.job_name = 'tasklet_done'"),
		  5);
	cb_job_free(job);
}

static void test_restart_skips_completed_steps_and_resumes_the_failed_one(void)
{
	cb_error err = CB_ERROR_INIT;
	counter a = { 0, 0, 2 }, b = { 0, 4, 6 };
	cb_job *job = tasklet_job("two_steps", &a, &b);
	cb_job_result r;
	long long failed;

	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "step 'second'");
	CBT_CONTAINS(r.exit_message, "tasklet refuses count 4");
	CBT_EQ_LL(a.calls, 2);
	CBT_EQ_LL(b.calls, 4); /* counts 1..3 committed, the 4th failed */
	failed = r.job_execution_id;

	b.fail_at = 0;
	CBT_PASS(cb_job_restart(&r, conn, job, failed, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(r.restarted, 1);
	CBT_EQ_LL(a.calls, 2);     /* the completed step was not run again */
	CBT_EQ_LL(b.calls, 4 + 3); /* resumed at count 4 from the committed context */
	cb_job_free(job);
}

static void test_job_not_restartable_is_refused_after_failure(void)
{
	cb_error err = CB_ERROR_INIT;
	counter a = { 0, 1, 5 };
	cb_job *job = tasklet_job("no_restart", &a, NULL);
	cb_job_result r;

	cb_job_set_restartable(job, 0);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	a.fail_at = 0;
	CBT_FAILS_WITH(CB_ENORESTART, cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_CONTAINS(err.message, "not restartable");
	cb_job_free(job);
}

static void test_job_key_is_stored_for_the_instance(void)
{
	cb_error err = CB_ERROR_INIT;
	counter a = { 0, 0, 1 };
	cb_job *job = tasklet_job("keyed", &a, NULL);
	cb_params *p = NULL;
	cb_job_result r;
	char key[CB_JOB_KEY_LEN + 1], stored[64];

	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	CBT_PASS(cb_params_parse_arg(p, "targetDate:date=2026-06-30", &err), &err);
	CBT_PASS(cb_params_parse_arg(p, "-verbose:long=1", &err), &err);
	CBT_PASS(cb_params_job_key(key, p, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, p, NULL, &err), &err);
	cbt_query_str(conn, "SELECT job_key FROM batch_job_instance WHERE job_name = 'keyed'",
		      stored, sizeof(stored));
	CBT_EQ_STR(stored, key);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_job_execution_params p JOIN "
			       "batch_job_execution e USING (job_execution_id) JOIN "
			       "batch_job_instance i USING (job_instance_id) WHERE "
			       "i.job_name = 'keyed' AND ((p.parameter_name = 'targetDate' AND "
			       "p.parameter_type = 'date' AND p.identifying) OR "
			       "(p.parameter_name = 'verbose' AND NOT p.identifying))"),
		  2);
	cb_params_free(p);
	cb_job_free(job);
}

/* ---- chunk steps with a reader and writer of our own ------------------------ */

static cb_job *numbers_job(const char *name, cbt_numbers *n, size_t chunk)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, name, &err), &err);
	s.name = "numbers";
	s.build = cbt_numbers_build;
	s.user = n;
	s.chunk_size = chunk;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	return job;
}

static void test_chunk_counts_filtered_items_and_commits(void)
{
	cb_error err = CB_ERROR_INIT;
	cbt_numbers cs;
	cb_job *job;
	cb_job_result r;

	memset(&cs, 0, sizeof(cs));
	cs.last = 95;
	cs.drop_odd = 1;
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint PRIMARY KEY)");
	job = numbers_job("filtering", &cs, 10);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 47);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink WHERE n % 2 = 1"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count * 1000000 + write_count * 1000 + "
				     "filter_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'filtering'"),
		  95LL * 1000000 + 47 * 1000 + 48);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'filtering'"),
		  10);
	cb_job_free(job);
}

/* A reader may end a chunk early without ending its input, even before any
 * item: every item is written once, a commit per short chunk. */
static void test_a_reader_ends_chunks_early_without_ending_its_input(void)
{
	cb_error err = CB_ERROR_INIT;
	cbt_numbers cs;
	cb_job *job;
	cb_job_result r;

	memset(&cs, 0, sizeof(cs));
	cs.last = 20;
	cs.end_chunk_every = 3;
	cs.empty_chunk_ends = 2;
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint PRIMARY KEY)");
	job = numbers_job("chunk_end", &cs, 10);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) * 1000 + sum(n) FROM sink"), 20 * 1000 + 210);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count * 1000 + read_count FROM "
				     "batch_step_execution s JOIN batch_job_execution e USING "
				     "(job_execution_id) JOIN batch_job_instance i USING "
				     "(job_instance_id) WHERE i.job_name = 'chunk_end'"),
		  7 * 1000 + 20);
	cb_job_free(job);
}

static void test_writer_sql_error_rolls_back_the_chunk_and_restart_finishes(void)
{
	cb_error err = CB_ERROR_INIT;
	cbt_numbers cs;
	cb_job *job;
	cb_job_result r;

	memset(&cs, 0, sizeof(cs));
	cs.last = 100;
	cs.drop_odd = 1;
	/* 56 is already there: the chunk 51..60 fails on the primary key. */
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint PRIMARY KEY); "
		       "INSERT INTO sink VALUES (56)");
	job = numbers_job("writer_fails", &cs, 10);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "23505");
	CBT_CONTAINS(r.exit_message, "chunk 6");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 25 + 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT max(n) FROM sink WHERE n <> 56"), 50);

	cbt_exec(conn, "DELETE FROM sink WHERE n = 56");
	CBT_PASS(cb_job_restart(&r, conn, job, r.job_execution_id, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 50);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT sum(n) FROM sink"), 2550);
	cb_job_free(job);
}

static void test_stop_request_ends_after_the_current_chunk(void)
{
	cb_error err = CB_ERROR_INIT;
	cbt_numbers cs;
	cb_job *job;
	cb_job_result r;

	memset(&cs, 0, sizeof(cs));
	cs.last = 100;
	cs.drop_odd = 1;
	cs.stop_after_chunks = 3;
	cs.stop_conninfo = db;
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint PRIMARY KEY)");
	job = numbers_job("stoppable", &cs, 10);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "STOPPED");
	/* The chunk that saw the request committed; nothing after it ran. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 15);
	cs.stop_after_chunks = 0;
	CBT_PASS(cb_job_restart(&r, conn, job, r.job_execution_id, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 50);
	cb_job_free(job);
}

/* ---- the schema's own guarantees ------------------------------------------- */

static void test_database_forbids_two_live_executions_of_one_instance(void)
{
	cbt_exec(conn, "INSERT INTO batch_job_instance (job_name, job_key) "
		       "VALUES ('live', repeat('a', 32))");
	cbt_exec(conn, "INSERT INTO batch_job_execution (job_instance_id, status) "
		       "SELECT job_instance_id, 'STARTED' FROM batch_job_instance "
		       "WHERE job_name = 'live'");
	{
		PGresult *res = PQexec(conn, "INSERT INTO batch_job_execution (job_instance_id, "
					     "status) SELECT job_instance_id, 'STARTING' FROM "
					     "batch_job_instance WHERE job_name = 'live'");

		CBT_EQ_STR(PQresultErrorField(res, PG_DIAG_SQLSTATE), "23505");
		PQclear(res);
	}
	/* Ended executions are not limited. */
	cbt_exec(conn, "INSERT INTO batch_job_execution (job_instance_id, status) "
		       "SELECT job_instance_id, 'FAILED' FROM batch_job_instance "
		       "WHERE job_name = 'live' UNION ALL SELECT job_instance_id, 'FAILED' "
		       "FROM batch_job_instance WHERE job_name = 'live'");
}

/* A job's summary row (its newest execution) is written at the commit of a
 * launch, not at its INSERT: a launch whose transaction is still open does
 * not hold the next launch of the same job back, and the row ends with the
 * newest committed execution. Before, the second INSERT waited for the
 * first transaction (here: ran into the statement timeout). */
static void test_launches_of_one_job_do_not_wait_for_each_other(void)
{
	PGconn *other = cbt_connect(db);
	long long first, second;
	int tries = 0;

	/* The status counts are sharded by session (batch_counter_shard): two
	 * sessions on one shard do wait for each other there, one pair in 8 (a
	 * stressed CI run met it). This case is about the summary row, so its two
	 * sessions are on different shards. */
	while (cbt_query_ll(other, "SELECT batch_counter_shard()") ==
		       cbt_query_ll(conn, "SELECT batch_counter_shard()") &&
	       ++tries < 100) {
		PQfinish(other);
		other = cbt_connect(db);
	}

	cbt_exec(conn, "INSERT INTO batch_job_instance (job_name, job_key) VALUES "
		       "('summed', repeat('b', 32)), ('summed', repeat('c', 32)), "
		       "('summed', repeat('d', 32))");
	cbt_exec(other, "BEGIN");
	first = cbt_query_ll(other, "INSERT INTO batch_job_execution (job_instance_id, status) "
				    "SELECT job_instance_id, 'STARTING' FROM batch_job_instance "
				    "WHERE job_key = repeat('b', 32) RETURNING job_execution_id");
	cbt_exec(conn, "SET statement_timeout = '3s'");
	second = cbt_query_ll(conn, "INSERT INTO batch_job_execution (job_instance_id, status) "
				    "SELECT job_instance_id, 'STARTING' FROM batch_job_instance "
				    "WHERE job_key = repeat('c', 32) RETURNING job_execution_id");
	cbt_exec(conn, "RESET statement_timeout");
	CU_ASSERT(second > first);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT last_execution_id FROM batch_job_summary "
				     "WHERE job_name = 'summed'"),
		  second);
	cbt_exec(other, "COMMIT");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT last_execution_id FROM batch_job_summary "
				     "WHERE job_name = 'summed'"),
		  second);
	/* A launch rolled back leaves the row alone. */
	cbt_exec(other, "BEGIN");
	cbt_exec(other, "INSERT INTO batch_job_execution (job_instance_id, status) SELECT "
			"job_instance_id, 'STARTING' FROM batch_job_instance WHERE job_key = "
			"repeat('d', 32)");
	cbt_exec(other, "ROLLBACK");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT last_execution_id FROM batch_job_summary "
				     "WHERE job_name = 'summed'"),
		  second);
	PQfinish(other);
}

static void test_schema_init_is_idempotent_and_safe_concurrently(void)
{
	char fresh[CBT_CONNINFO_MAX];
	pid_t pids[4];

	if (cbt_db_create(fresh, sizeof(fresh), "schema") < 0)
		return;
	for (int i = 0; i < 4; i++) {
		const char *argv[] = { cbt_cli_bin(), "--db", fresh, "schema", "init", NULL };

		pids[i] = cbt_spawn(argv, NULL);
	}
	for (int i = 0; i < 4; i++)
		CBT_EQ_LL(cbt_wait_timeout(pids[i], 60000), 0);
	{
		PGconn *c = cbt_connect(fresh);
		cb_error err = CB_ERROR_INIT;
		int from = -2, to = -2;

		CBT_PASS(cb_repo_schema_check(c, &err), &err);
		CBT_PASS(cb_repo_schema_init(c, &from, &to, &err), &err);
		CBT_EQ_LL(from, cb_repo_schema_target());
		CBT_EQ_LL(to, cb_repo_schema_target());
		CBT_EQ_LL(cbt_query_ll(c, "SELECT count(*) FROM batch_schema_version"),
			  cb_repo_schema_target());
		/* Every foreign key column leads some index (Spring Batch ships none). */
		CBT_EQ_LL(cbt_query_ll(
				  c, "SELECT count(*) FROM pg_constraint c WHERE c.contype = 'f' "
				     "AND c.conrelid::regclass::text LIKE 'batch_%' AND NOT EXISTS "
				     "(SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid "
				     "AND i.indkey[0] = c.conkey[1])"),
			  0);
		PQfinish(c);
	}
	cbt_db_drop(fresh);
}

/* A validator that ends its own database session the first time it runs:
 * what a failover does to a launch that is still checking its input. */
static int kill_once(void *ctx, PGconn *c, const cb_params *params, cb_error *err)
{
	int *calls = ctx;
	PGresult *res;

	(void)params;
	if ((*calls)++ > 0)
		return 0;
	res = PQexec(c, "SELECT pg_terminate_backend(pg_backend_pid())");
	PQclear(res);
	return cb_error_set(err, CB_EDB, "validator: %s", PQerrorMessage(c));
}

/*
 * A launch whose database goes away while it validates (nothing recorded
 * yet) waits for it within the outage budget and validates again: the run
 * completes, once. Before, it failed at once with a lost connection (the
 * CLI's exit 6), and a scheduled instant was lost with nothing to restart.
 */
static void test_validation_rides_through_a_lost_connection(void)
{
	cb_error err = CB_ERROR_INIT;
	counter a = { 0, 0, 1 };
	cb_job *job = tasklet_job("validated", &a, NULL);
	cb_job_result r;
	int calls = 0;

	cb_job_set_validator(job, kill_once, &calls);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(calls, 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution e JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'validated' AND e.status = 'COMPLETED'"),
		  1);
	cb_job_free(job);
}

static const CU_TestInfo tests[] = {
	{ "validation rides through a lost connection",
	  test_validation_rides_through_a_lost_connection },
	{ "a reader ends chunks early without ending its input",
	  test_a_reader_ends_chunks_early_without_ending_its_input },
	{ "tasklet repeats until done and commits each call",
	  test_tasklet_repeats_until_done_and_commits_each_call },
	{ "restart skips completed steps and resumes the failed one",
	  test_restart_skips_completed_steps_and_resumes_the_failed_one },
	{ "job not restartable is refused after failure",
	  test_job_not_restartable_is_refused_after_failure },
	{ "job key is stored for the instance", test_job_key_is_stored_for_the_instance },
	{ "chunk counts filtered items and commits", test_chunk_counts_filtered_items_and_commits },
	{ "writer SQL error rolls back the chunk; restart finishes",
	  test_writer_sql_error_rolls_back_the_chunk_and_restart_finishes },
	{ "stop request ends after the current chunk",
	  test_stop_request_ends_after_the_current_chunk },
	{ "database forbids two live executions of one instance",
	  test_database_forbids_two_live_executions_of_one_instance },
	{ "launches of one job do not wait for each other",
	  test_launches_of_one_job_do_not_wait_for_each_other },
	{ "schema init is idempotent and safe concurrently",
	  test_schema_init_is_idempotent_and_safe_concurrently },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("engine", init, clean, tests);
}
