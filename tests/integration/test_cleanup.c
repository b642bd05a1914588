/*
 * `cleanup` of old repository metadata (issue 12): over 100,000 old
 * executions written set-based beside real runs of the example jobs, while a
 * real job runs. The running job finishes COMPLETED and none of its
 * instance's rows is touched; a FAILED instance and a partitioned FAILED
 * instance keep their newest execution and contexts and `restart` completes
 * them afterwards (the partitioned one reruns only its unfinished partition);
 * --dry-run deletes nothing and counts what the real run then removes; the
 * counts reported equal the rows gone from each table; --keep-last keeps
 * exactly N per job; bad durations exit 2; an instance someone holds is
 * passed over, not waited for, and taken by the next run.
 *
 * The tests run in order on one database: the restart test uses what the
 * 100k test left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static char out[262144], errout[262144];
static PGconn *conn;

/* The real FAILED executions the restart test restarts. */
static long long failed_plain, failed_parted;

static int init(void)
{
	if (cbt_db_create(db, sizeof(db), "cleanup") < 0)
		return -1;
	conn = PQconnectdb(db);
	return PQstatus(conn) == CONNECTION_OK ? 0 : -1;
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

static int run_bin(const char *bin, const char *const *args)
{
	const char *argv[32];
	size_t n = 0;

	argv[n++] = bin;
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...)  run_bin(cbt_examples_bin(), (const char *const[]){ __VA_ARGS__, NULL })
#define CLI(...) run_bin(cbt_cli_bin(), (const char *const[]){ __VA_ARGS__, NULL })

static pid_t spawn_ex(const char *log, const char *const *args)
{
	const char *argv[32];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_spawn(argv, log);
}

#define SPAWN(log, ...) spawn_ex((log), (const char *const[]){ __VA_ARGS__, NULL })

static void fresh(void)
{
	cbt_exec(conn, "SET client_min_messages = warning; "
		       "DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
	CBT_EQ_LL(CLI("schema", "init"), 0);
}

static json_t *stdout_json(void)
{
	json_error_t jerr;
	json_t *v = json_loads(out, 0, &jerr);

	if (!v)
		CBT_FAILF("stdout is not one JSON document (%s): %.300s", jerr.text, out);
	return v;
}

static long long newest_execution(void)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

/* The repository tables cleanup removes from, as --json names them. */
static const char *const tables[] = { "batch_job_execution",
				      "batch_job_instance",
				      "batch_step_execution",
				      "batch_step_execution_context",
				      "batch_job_execution_context",
				      "batch_job_execution_params",
				      "batch_lock_audit",
				      NULL };
#define NTABLES 7

/* Rows of each table that existed when @p max (the largest ids then) was
 * taken: rows a running job adds later do not count. */
typedef struct snapshot {
	long long rows[NTABLES];
	long long max_exec, max_inst, max_step, max_audit;
} snapshot;

static void take_ids(snapshot *s)
{
	s->max_exec = cbt_query_ll(conn, "SELECT coalesce(max(job_execution_id), 0) "
					 "FROM batch_job_execution");
	s->max_inst = cbt_query_ll(conn, "SELECT coalesce(max(job_instance_id), 0) "
					 "FROM batch_job_instance");
	s->max_step = cbt_query_ll(conn, "SELECT coalesce(max(step_execution_id), 0) "
					 "FROM batch_step_execution");
	s->max_audit =
		cbt_query_ll(conn, "SELECT coalesce(max(audit_id), 0) FROM batch_lock_audit");
}

static void count_rows(snapshot *s)
{
	s->rows[0] = cbt_queryp_ll(conn,
				   "SELECT count(*) FROM batch_job_execution "
				   "WHERE job_execution_id <= $1",
				   "lld", s->max_exec);
	s->rows[1] = cbt_queryp_ll(conn,
				   "SELECT count(*) FROM batch_job_instance "
				   "WHERE job_instance_id <= $1",
				   "lld", s->max_inst);
	s->rows[2] = cbt_queryp_ll(conn,
				   "SELECT count(*) FROM batch_step_execution "
				   "WHERE step_execution_id <= $1",
				   "lld", s->max_step);
	s->rows[3] = cbt_queryp_ll(conn,
				   "SELECT count(*) FROM batch_step_execution_context "
				   "WHERE step_execution_id <= $1",
				   "lld", s->max_step);
	s->rows[4] = cbt_queryp_ll(conn,
				   "SELECT count(*) FROM batch_job_execution_context "
				   "WHERE job_execution_id <= $1",
				   "lld", s->max_exec);
	s->rows[5] = cbt_queryp_ll(conn,
				   "SELECT count(*) FROM batch_job_execution_params "
				   "WHERE job_execution_id <= $1",
				   "lld", s->max_exec);
	s->rows[6] =
		cbt_queryp_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE audit_id <= $1",
			      "lld", s->max_audit);
}

static long long removed(const json_t *doc, const char *table)
{
	json_t *v = json_object_get(json_object_get(doc, "removed"), table);

	if (!json_is_integer(v)) {
		CBT_FAILF("no count for %s in the summary", table);
		return -1;
	}
	return json_integer_value(v);
}

/* Every row of the executions of instance @p inst, in one number per kind. */
static void instance_rows(long long *v, long long inst)
{
	v[0] = cbt_queryp_ll(conn,
			     "SELECT count(*) FROM batch_job_execution WHERE job_instance_id = $1",
			     "lld", inst);
	v[1] = cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM batch_step_execution s JOIN batch_job_execution e "
		"USING (job_execution_id) WHERE e.job_instance_id = $1",
		"lld", inst);
	v[2] = cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM batch_step_execution_context c JOIN "
		"batch_step_execution s USING (step_execution_id) JOIN batch_job_execution e "
		"USING (job_execution_id) WHERE e.job_instance_id = $1",
		"lld", inst);
	v[3] = cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM batch_job_execution_context c JOIN "
		"batch_job_execution e USING (job_execution_id) WHERE e.job_instance_id = $1",
		"lld", inst);
	v[4] = cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM batch_job_execution_params p JOIN "
		"batch_job_execution e USING (job_execution_id) WHERE e.job_instance_id = $1",
		"lld", inst);
}

static long long instance_of(long long exec)
{
	return cbt_queryp_ll(
		conn, "SELECT job_instance_id FROM batch_job_execution WHERE job_execution_id = $1",
		"lld", exec);
}

/* ---- bad input ------------------------------------------------------------ */

static void test_bad_durations_exit_2(void)
{
	static const char *const bad[] = { "30",  "d",    "0d", "-1d", "1.5h",
					   "10w", "30dd", "",   "h12", "99999999999999999999d",
					   NULL };

	for (size_t i = 0; bad[i]; i++) {
		char want[128];

		CBT_EQ_LL(CLI("cleanup", "--older-than", bad[i]), 2);
		snprintf(want, sizeof(want), "invalid duration '%s'", bad[i]);
		CBT_CONTAINS(errout, want);
	}
	CBT_EQ_LL(CLI("cleanup"), 2);
	CBT_CONTAINS(errout, "--older-than DURATION is required");
	CBT_EQ_LL(CLI("cleanup", "--older-than", "30d", "--keep-last", "0"), 2);
	CBT_CONTAINS(errout, "--keep-last '0'");
	CBT_EQ_LL(CLI("cleanup", "--older-than", "30d", "--batch", "x"), 2);
	CBT_CONTAINS(errout, "--batch 'x'");
	CBT_EQ_LL(CLI("cleanup", "--older-than=30d", "extra"), 2);
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "3x"), 2);
	CBT_CONTAINS(out, "\"CB_EINVAL\"");
	/* The good ones are accepted (nothing to remove in an empty repository). */
	fresh();
	CBT_EQ_LL(CLI("cleanup", "--older-than", "3600s"), 0);
	CBT_EQ_LL(CLI("cleanup", "--older-than=90m", "--dry-run"), 0);
	CBT_EQ_LL(CLI("cleanup", "--older-than", "12h", "--keep-last", "2", "--batch", "10"), 0);
	CBT_CONTAINS(out, "batch_job_execution");
}

/* ---- the 100k cleanup, while a job runs ----------------------------------- */

/* Every counter series of @p before is in @p after with a value not smaller:
 * removing history never takes a counter back (issue 20). */
static void counters_never_go_back(const json_t *before, const json_t *after)
{
	const json_t *b = json_object_get(before, "metrics"),
		     *a = json_object_get(after, "metrics");
	size_t checked = 0;

	for (size_t i = 0; i < json_array_size(b); i++) {
		const json_t *s = json_array_get(b, i), *match = NULL;
		const char *name = json_string_value(json_object_get(s, "name"));
		char *labels;

		if (strcmp(json_string_value(json_object_get(s, "type")), "counter") != 0)
			continue;
		labels = json_dumps(json_object_get(s, "labels"), JSON_SORT_KEYS | JSON_ENCODE_ANY);
		for (size_t k = 0; k < json_array_size(a) && !match; k++) {
			const json_t *t = json_array_get(a, k);
			char *l2 = json_dumps(json_object_get(t, "labels"),
					      JSON_SORT_KEYS | JSON_ENCODE_ANY);

			if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0 &&
			    strcmp(labels ? labels : "", l2 ? l2 : "") == 0)
				match = t;
			free(l2);
		}
		if (!match)
			CBT_FAILF("counter %s%s is gone after the cleanup", name, labels);
		else if (json_integer_value(json_object_get(match, "value")) <
			 json_integer_value(json_object_get(s, "value")))
			CBT_FAILF("counter %s%s went back from %lld to %lld", name, labels,
				  (long long)json_integer_value(json_object_get(s, "value")),
				  (long long)json_integer_value(json_object_get(match, "value")));
		checked++;
		free(labels);
	}
	CU_ASSERT(checked > 10);
}

/*
 * Old executions, set-based, of jobs syn_0..syn_4 (ids after the real ones):
 *   60,000 instances with one COMPLETED execution      -> removed
 *   20,000 with FAILED then its COMPLETED restart       -> removed (40,000)
 *      500 with FAILED then FAILED (restartable)        -> kept (1,000)
 *      200 with one ABANDONED execution                 -> removed
 * each execution with 2 steps and their contexts, a context, 2 parameters and
 * 2 lock audit rows (ACQUIRED without an execution id, RELEASED with it).
 */
static void synthetic(void)
{
	double t0 = cbt_now();

	cbt_exec(
		conn,
		"INSERT INTO batch_job_instance (job_name, job_key, create_time) "
		"SELECT 'syn_' || (g % 5), md5('syn' || g), now() - interval '200 days' "
		"FROM generate_series(1, 80700) g;"
		"CREATE TEMP TABLE syn AS SELECT job_instance_id AS inst, "
		" row_number() OVER (ORDER BY job_instance_id) AS rn FROM batch_job_instance "
		" WHERE job_name LIKE 'syn\\_%';"
		"INSERT INTO batch_job_execution (job_instance_id, status, exit_code, create_time, "
		" start_time, end_time, last_updated) "
		"SELECT inst, st, st, t, t, t + interval '1 minute', t + interval '1 minute' FROM ("
		" SELECT inst, CASE WHEN rn <= 60000 THEN 'COMPLETED' WHEN rn <= 80500 THEN 'FAILED' "
		"  ELSE 'ABANDONED' END AS st, now() - interval '150 days' + rn * interval '1 s' AS t "
		" FROM syn ORDER BY rn) x;"
		"INSERT INTO batch_job_execution (job_instance_id, status, exit_code, create_time, "
		" start_time, end_time, last_updated, restart_of) "
		"SELECT inst, st, st, t, t, t + interval '1 minute', t + interval '1 minute', "
		" (SELECT min(job_execution_id) FROM batch_job_execution e WHERE e.job_instance_id = "
		"  x.inst) FROM ("
		" SELECT inst, CASE WHEN rn <= 80000 THEN 'COMPLETED' ELSE 'FAILED' END AS st, "
		"  now() - interval '120 days' + rn * interval '1 s' AS t "
		" FROM syn WHERE rn > 60000 AND rn <= 80500 ORDER BY rn) x;"
		"CREATE TEMP TABLE syn_exec AS SELECT e.job_execution_id AS id, e.status, e.end_time "
		" FROM batch_job_execution e JOIN syn ON e.job_instance_id = syn.inst;"
		"INSERT INTO batch_step_execution (step_name, job_execution_id, status, exit_code, "
		" start_time, end_time, read_count, write_count) "
		"SELECT 'step' || k, id, status, status, end_time, end_time, 10, 10 "
		"FROM syn_exec, generate_series(1, 2) k ORDER BY id, k;"
		"INSERT INTO batch_step_execution_context (step_execution_id, serialized_context) "
		"SELECT s.step_execution_id, '{\"last\": [42]}' FROM batch_step_execution s "
		" JOIN syn_exec x ON s.job_execution_id = x.id;"
		"INSERT INTO batch_job_execution_context (job_execution_id, serialized_context) "
		"SELECT id, '{\"n\": 1}' FROM syn_exec;"
		"INSERT INTO batch_job_execution_params (job_execution_id, parameter_name, "
		" parameter_type, parameter_value, identifying) "
		"SELECT id, n, t, v, i FROM syn_exec, (VALUES ('day', 'string', 'x', true), "
		" ('-chunk', 'long', '100', false)) AS p(n, t, v, i);"
		"INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, "
		" job_execution_id, event_time) "
		"SELECT 'syn', 'h:1:x', o, id, CASE WHEN o = 'RELEASED' THEN id END, end_time "
		"FROM syn_exec, (VALUES ('ACQUIRED'), ('RELEASED')) AS a(o) ORDER BY id, o;"
		"ANALYZE;");
	printf("\n  synthetic repository: %lld executions written in %.1fs\n",
	       cbt_query_ll(conn, "SELECT count(*) FROM syn_exec"), cbt_now() - t0);
}

/* Real runs: a COMPLETED partitioned ledger, a FAILED ledger, a FAILED
 * partitioned ledger, two COMPLETED settlements, and an outbox run that is
 * STOPPED (restarted later as the job that runs during the cleanup). */
static long long real_runs(void)
{
	char log[4096], id[24];
	long long stopped;
	pid_t pid;

	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "4000"), 0);
	CBT_EQ_LL(EX("run", "ledger_partitioned", "tag=done", "-partition.threads:long=2"), 0);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "20000", "--negative-at", "7500"), 0);
	CBT_EQ_LL(EX("run", "ledger", "tag=failed", "-chunk.size:long=1000"), 1);
	failed_plain = newest_execution();
	CBT_EQ_LL(EX("run", "ledger_partitioned", "tag=pfailed", "-partition.threads:long=2"), 1);
	CBT_CONTAINS(errout, "account 7500: negative amount");
	failed_parted = newest_execution();
	CBT_EQ_LL(EX("example-setup", "settlement", "--rows", "2000"), 0);
	CBT_EQ_LL(EX("run", "settlement", "targetDate:date=2026-06-29"), 0);
	CBT_EQ_LL(EX("run", "settlement", "targetDate:date=2026-06-30"), 0);

	CBT_EQ_LL(EX("example-setup", "outbox", "--rows", "60000"), 0);
	snprintf(log, sizeof(log), "%s/cleanup-outbox-1.log", cbt_tmpdir());
	pid = SPAWN(log, "run", "outbox", "tag=live", "-chunk.size:long=5",
		    "-partition.threads:long=2");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_until(conn, 30000,
				       "SELECT count(*) FROM batch_step_execution s JOIN "
				       "batch_job_execution e USING (job_execution_id) JOIN "
				       "batch_job_instance i USING (job_instance_id) WHERE "
				       "i.job_name = 'outbox' AND s.partition_index IS NOT NULL "
				       "AND s.write_count > 0"));
	stopped = cbt_query_ll(conn, "SELECT e.job_execution_id FROM batch_job_execution e JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'outbox'");
	snprintf(id, sizeof(id), "%lld", stopped);
	CBT_EQ_LL(CLI("stop", id), 0);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 5);
	return stopped;
}

/* Make every real execution as old as the synthetic ones (100 days). */
static void age_real_rows(void)
{
	cbt_exec(conn,
		 "UPDATE batch_job_execution SET create_time = create_time - interval '100 days', "
		 " start_time = start_time - interval '100 days', "
		 " end_time = end_time - interval '100 days' "
		 "WHERE job_instance_id IN (SELECT job_instance_id FROM batch_job_instance "
		 " WHERE job_name NOT LIKE 'syn\\_%');"
		 "UPDATE batch_step_execution SET start_time = start_time - interval '100 days', "
		 " end_time = end_time - interval '100 days' WHERE job_execution_id IN ("
		 " SELECT e.job_execution_id FROM batch_job_execution e JOIN batch_job_instance i "
		 " USING (job_instance_id) WHERE i.job_name NOT LIKE 'syn\\_%');"
		 "UPDATE batch_lock_audit SET event_time = event_time - interval '100 days' "
		 "WHERE lock_name <> 'syn';");
}

static void test_100k_cleanup_while_a_job_runs(void)
{
	char log[4096], id[24], outpath[4096], errpath[4096];
	long long stopped, live, live_inst, plain_inst, parted_inst, sent_mid;
	long long live_before[5], live_after[5], plain_before[5], plain_after[5];
	long long parted_before[5], parted_after[5], kept_failed, syn0_read;
	snapshot before, middle, after;
	json_t *dry, *real, *metrics_before;
	double t0, seconds;
	pid_t pid, cleaner;

	fresh();
	stopped = real_runs();
	age_real_rows();
	synthetic();

	/* The live job: the stopped outbox instance's restart, so that its
	 * instance also holds an old execution (STOPPED, 100 days ago). */
	snprintf(id, sizeof(id), "%lld", stopped);
	snprintf(log, sizeof(log), "%s/cleanup-outbox-2.log", cbt_tmpdir());
	pid = SPAWN(log, "restart", id);
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(cbt_wait_untilp(conn, 30000,
					"SELECT count(*) FROM batch_step_execution s JOIN "
					"batch_job_execution e USING (job_execution_id) WHERE "
					"e.restart_of = $1 AND e.status = 'STARTED' AND "
					"s.partition_index IS NOT NULL AND s.write_count > 0",
					"lld", stopped));
	live = cbt_queryp_ll(
		conn, "SELECT job_execution_id FROM batch_job_execution WHERE restart_of = $1",
		"lld", stopped);
	live_inst = instance_of(live);
	plain_inst = instance_of(failed_plain);
	parted_inst = instance_of(failed_parted);
	instance_rows(live_before, live_inst);
	instance_rows(plain_before, plain_inst);
	instance_rows(parted_before, parted_inst);
	kept_failed =
		cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution e JOIN "
				   "batch_job_instance i USING (job_instance_id) "
				   "WHERE i.job_name LIKE 'syn\\_%' AND e.status = 'FAILED' AND "
				   "NOT EXISTS (SELECT 1 FROM batch_job_execution o WHERE "
				   "o.job_instance_id = e.job_instance_id AND o.status = "
				   "'COMPLETED')");
	CBT_EQ_LL(kept_failed, 1000);

	take_ids(&before);
	count_rows(&before);
	CBT_EQ_LL(CLI("--json", "metrics"), 0);
	metrics_before = stdout_json();
	syn0_read = cbt_query_ll(conn, "SELECT sum(s.read_count) FROM batch_step_execution s "
				       "JOIN batch_job_execution e USING (job_execution_id) "
				       "JOIN batch_job_instance i USING (job_instance_id) "
				       "WHERE i.job_name = 'syn_0'");
	CU_ASSERT(syn0_read > 0);

	/* The dry run removes nothing. */
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d", "--dry-run"), 0);
	dry = stdout_json();
	middle = before;
	count_rows(&middle);
	for (int i = 0; i < NTABLES; i++)
		CBT_EQ_LL(middle.rows[i], before.rows[i]);
	CU_ASSERT(json_is_true(json_object_get(dry, "dry_run")));

	/* The real run, timed, while the outbox restart runs: started in the
	 * background, so that the job can be seen running between its batches. */
	snprintf(outpath, sizeof(outpath), "%s/cleanup-100k.out", cbt_tmpdir());
	snprintf(errpath, sizeof(errpath), "%s/cleanup-100k.err", cbt_tmpdir());
	t0 = cbt_now();
	{
		const char *argv[] = { "/bin/sh",
				       "-c",
				       "exec \"$0\" --db \"$1\" --json cleanup --older-than 30d "
				       ">\"$2\" 2>\"$3\"",
				       cbt_cli_bin(),
				       db,
				       outpath,
				       errpath,
				       NULL };

		cleaner = cbt_spawn(argv, NULL);
	}
	CU_ASSERT_FATAL(cleaner > 0);
	/* Ten batches in, the job still runs and still delivers. */
	for (int i = 0; i < 6000; i++) {
		char *e = cbt_slurp(errpath, NULL);
		int seen = e && strstr(e, "cleanup: batch 10:") != NULL;

		free(e);
		if (seen)
			break;
		cbt_sleep_ms(10);
	}
	sent_mid = cbt_query_ll(conn, "SELECT count(*) FROM outbox WHERE status = 'SENT'");
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STARTED'",
			  "lld", live),
		  1);
	CU_ASSERT(sent_mid < 60000);
	CBT_EQ_LL(cbt_wait_timeout(cleaner, 300000), 0);
	seconds = cbt_now() - t0;
	{
		char *o = cbt_slurp(outpath, NULL), *e = cbt_slurp(errpath, NULL);

		snprintf(out, sizeof(out), "%s", o ? o : "");
		snprintf(errout, sizeof(errout), "%s", e ? e : "");
		free(o);
		free(e);
	}
	real = stdout_json();
	CBT_CONTAINS(errout, "cleanup: batch 1: ");
	/* Progress says how far it got and how long it will still take. */
	CBT_CONTAINS(errout, "% of the executions, about ");
	CBT_CONTAINS(errout, "% of the lock audit");
	printf("\n  cleanup of %lld executions (%lld steps, %lld audit rows) took %.2fs "
	       "(%lld batches); the job delivered %lld messages meanwhile\n",
	       removed(real, "batch_job_execution"), removed(real, "batch_step_execution"),
	       removed(real, "batch_lock_audit"), seconds,
	       (long long)json_integer_value(json_object_get(real, "batches")),
	       cbt_query_ll(conn, "SELECT count(*) FROM outbox WHERE status = 'SENT'") - sent_mid);

	/* What it reported is what is gone, and what the dry run said. */
	after = before;
	count_rows(&after);
	for (int i = 0; i < NTABLES; i++) {
		CBT_EQ_LL(removed(real, tables[i]), before.rows[i] - after.rows[i]);
		CBT_EQ_LL(removed(real, tables[i]), removed(dry, tables[i]));
	}
	/* all but what --next reads: 5 synthetic jobs, one execution each */
	CU_ASSERT(removed(real, "batch_job_execution") >= 100195);
	CU_ASSERT(removed(real, "batch_job_instance") >= 80195);
	CU_ASSERT(removed(real, "batch_lock_audit") >= 200390);
	CU_ASSERT(json_integer_value(json_object_get(real, "partition_step_executions")) >= 4);

	/* Nothing of the live instance (its old STOPPED execution included), nor
	 * of the FAILED instances, nor of the restartable synthetic ones. */
	instance_rows(live_after, live_inst);
	instance_rows(plain_after, plain_inst);
	instance_rows(parted_after, parted_inst);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT(live_after[i] >= live_before[i]);
		CBT_EQ_LL(plain_after[i], plain_before[i]);
		CBT_EQ_LL(parted_after[i], parted_before[i]);
	}
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1",
			  "lld", stopped),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution e JOIN "
				     "batch_job_instance i USING (job_instance_id) "
				     "WHERE i.job_name LIKE 'syn\\_%' AND e.status = 'FAILED'"),
		  kept_failed);
	/* COMPLETED and ABANDONED instances are gone but for what --next reads:
	 * the first execution of each job's newest instance. */
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution e JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name LIKE 'syn\\_%' AND e.status IN ('COMPLETED', "
				     "'ABANDONED')") <= 10);
	/* No restart link points at a removed execution (the FK holds anyway). */
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_job_execution e WHERE "
			       "restart_of IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
			       "batch_job_execution r WHERE r.job_execution_id = e.restart_of)"),
		  0);

	/* The running job finishes COMPLETED, every message delivered once. */
	CBT_EQ_LL(cbt_wait_timeout(pid, 300000), 0);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'COMPLETED'",
			  "lld", live),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM outbox_delivery"), 60000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM outbox WHERE status <> 'SENT'"), 0);

	/* The counters metrics expose did not go back; the synthetic jobs'
	 * (which ran no more) kept theirs exactly. The status counts the jobs
	 * overview shows are those of the executions left. */
	CBT_EQ_LL(CLI("--json", "metrics"), 0);
	{
		json_t *metrics_after = stdout_json();

		counters_never_go_back(metrics_before, metrics_after);
		json_decref(metrics_after);
	}
	CBT_EQ_LL(CLI("metrics"), 0);
	{
		char want[128];

		snprintf(want, sizeof(want), "cbatch_items_read_total{batch_job=\"syn_0\"} %lld\n",
			 syn0_read);
		CBT_CONTAINS(out, want);
	}
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM (SELECT i.job_name, e.status, count(*) AS n "
			       " FROM batch_job_execution e JOIN batch_job_instance i "
			       " USING (job_instance_id) GROUP BY 1, 2) a FULL JOIN ("
			       " SELECT subject, status, sum(n) AS n FROM batch_status_count "
			       " WHERE kind = 'job' GROUP BY 1, 2 HAVING sum(n) <> 0) b "
			       "ON a.job_name = b.subject AND a.status = b.status "
			       "WHERE a.n IS DISTINCT FROM b.n"),
		  0);
	json_decref(metrics_before);

	/* A second run finds nothing more. */
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d"), 0);
	{
		json_t *again = stdout_json();

		CBT_EQ_LL(removed(again, "batch_job_execution"), 0);
		json_decref(again);
	}
	json_decref(dry);
	json_decref(real);
}

/* After the cleanup: the FAILED instances restart and complete. */
static void test_failed_instances_restart_after_cleanup(void)
{
	char id[24];
	long long restarted;

	CU_ASSERT_FATAL(failed_plain > 0 && failed_parted > 0);
	cbt_exec(conn, "UPDATE account SET amount = 12.34 WHERE id = 7500");
	/* The partitioned one first: only its failed partition runs again. */
	snprintf(id, sizeof(id), "%lld", failed_parted);
	CBT_EQ_LL(EX("restart", id), 0);
	restarted = newest_execution();
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_step_execution WHERE "
				"job_execution_id = $1 AND partition_index IS NOT NULL",
				"lld", restarted),
		  cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_step_execution WHERE "
				"job_execution_id = $1 AND partition_index IS NOT NULL "
				"AND status <> 'COMPLETED'",
				"lld", failed_parted));
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'COMPLETED' AND restart_of = $2",
			  "lld lld", restarted, failed_parted),
		  1);
	snprintf(id, sizeof(id), "%lld", failed_plain);
	CBT_EQ_LL(EX("restart", id), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE status = 'COMPLETED' "
			      "AND restart_of = $1",
			      "lld", failed_plain),
		1);
	/* Every account posted once. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 24000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
}

/* ---- --keep-last ---------------------------------------------------------- */

static void test_keep_last_keeps_exactly_n_per_job(void)
{
	fresh();
	/* job ka: 10 old instances, kb: 2, kc: 5, one COMPLETED execution each. */
	cbt_exec(conn,
		 "INSERT INTO batch_job_instance (job_name, job_key) "
		 "SELECT j, md5(j || g) FROM (VALUES ('ka', 10), ('kb', 2), ('kc', 5)) AS v(j, n), "
		 " generate_series(1, n) g ORDER BY j, g;"
		 "INSERT INTO batch_job_execution (job_instance_id, status, start_time, end_time) "
		 "SELECT job_instance_id, 'COMPLETED', now() - interval '40 days', "
		 " now() - interval '40 days' FROM batch_job_instance ORDER BY job_instance_id;");
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "1d", "--keep-last", "3", "--dry-run"),
		  0);
	{
		json_t *d = stdout_json();

		CBT_EQ_LL(removed(d, "batch_job_execution"), 7 + 0 + 2);
		json_decref(d);
	}
	CBT_EQ_LL(CLI("cleanup", "--older-than", "1d", "--keep-last", "3", "--batch", "2"), 0);
	CBT_CONTAINS(out, "batch_job_execution");
	CBT_EQ_LL(
		cbt_query_ll(conn,
			     "SELECT count(*) FROM batch_job_execution e JOIN "
			     "batch_job_instance i USING (job_instance_id) WHERE job_name = 'ka'"),
		3);
	CBT_EQ_LL(
		cbt_query_ll(conn,
			     "SELECT count(*) FROM batch_job_execution e JOIN "
			     "batch_job_instance i USING (job_instance_id) WHERE job_name = 'kb'"),
		2);
	CBT_EQ_LL(
		cbt_query_ll(conn,
			     "SELECT count(*) FROM batch_job_execution e JOIN "
			     "batch_job_instance i USING (job_instance_id) WHERE job_name = 'kc'"),
		3);
	/* the newest three, by id */
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_job_execution e JOIN "
			       "batch_job_instance i USING (job_instance_id) WHERE job_name = "
			       "'ka' AND e.job_execution_id >= (SELECT max(job_execution_id) - 2 "
			       "FROM batch_job_execution x JOIN batch_job_instance y "
			       "USING (job_instance_id) WHERE y.job_name = 'ka')"),
		  3);
	/* instances left with no execution went too */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 8);
}

/* ---- an instance someone holds -------------------------------------------- */

static void test_held_instance_is_passed_over_not_waited_for(void)
{
	PGconn *holder;
	double t0;
	json_t *doc;
	long long held;

	fresh();
	/* job h: 4 old instances; the newest one's execution is what --next reads */
	cbt_exec(conn,
		 "INSERT INTO batch_job_instance (job_name, job_key) "
		 "SELECT 'h', md5('h' || g) FROM generate_series(1, 4) g ORDER BY g;"
		 "INSERT INTO batch_job_execution (job_instance_id, status, start_time, end_time) "
		 "SELECT job_instance_id, 'COMPLETED', now() - interval '40 days', "
		 " now() - interval '40 days' FROM batch_job_instance ORDER BY job_instance_id;");
	held = cbt_query_ll(conn, "SELECT min(job_instance_id) FROM batch_job_instance");
	/* As a launch or an operator's stop/abandon holds it: its row lock. */
	holder = cbt_connect(db);
	cbt_exec(holder, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(holder,
				"SELECT count(*) FROM (SELECT 1 FROM batch_job_instance "
				"WHERE job_instance_id = $1 FOR UPDATE) x",
				"lld", held),
		  1);
	t0 = cbt_now();
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "1d"), 0);
	CU_ASSERT(cbt_now() - t0 < 10);
	doc = stdout_json();
	CBT_EQ_LL(removed(doc, "batch_job_execution"), 2);
	CBT_EQ_LL(json_integer_value(json_object_get(doc, "skipped_instances")), 1);
	json_decref(doc);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_instance WHERE job_instance_id = $1",
			      "lld", held),
		1);
	/* Released: the next run takes it. */
	cbt_exec(holder, "COMMIT");
	PQfinish(holder);
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "1d"), 0);
	doc = stdout_json();
	CBT_EQ_LL(removed(doc, "batch_job_execution"), 1);
	CBT_EQ_LL(removed(doc, "batch_job_instance"), 1);
	json_decref(doc);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 1);
}

/* Schedule history older than the cutoff goes: finished firings and their
 * events, and events of no firing; a schedule's newest firing and open
 * firings (a node may still finish them) stay, with their events. */
static void test_old_schedule_history_goes_newest_and_open_firings_stay(void)
{
	long long ev, fi;

	fresh();
	cbt_exec(conn,
		 "INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, job_name, "
		 " next_fire_time) VALUES ('old', '* * * * * *', 'UTC', 'tick', now());"
		 /* 100 old finished firings, each with FIRED and FINISHED events */
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " claimed_at, status, job_name) SELECT 1, now() - interval '40 days' + g * "
		 " interval '1 second', 'SCHEDULED', 'n1', now() - interval '40 days', 'FINISHED', "
		 " 'tick' FROM generate_series(1, 100) g;"
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " firing_id, recorded_at) SELECT 1, f.fire_time, 'n1', o, f.firing_id, "
		 " now() - interval '40 days' FROM batch_schedule_firing f, "
		 " (VALUES ('FIRED'), ('FINISHED')) AS v(o);"
		 /* 50 old SKIPPED_CLAIMED events of another node */
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " recorded_at) SELECT 1, fire_time, 'n2', 'SKIPPED_CLAIMED', now() - interval "
		 " '40 days' FROM batch_schedule_firing ORDER BY firing_id LIMIT 50;"
		 /* an old firing still open, and the newest one (recent) */
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " claimed_at, status, job_name) VALUES (1, now() - interval '39 days', "
		 " 'SCHEDULED', 'n3', now() - interval '39 days', 'LAUNCHED', 'tick'), "
		 " (1, now(), 'SCHEDULED', 'n1', now(), 'FINISHED', 'tick');"
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " firing_id, recorded_at) SELECT 1, fire_time, node_id, 'FIRED', firing_id, "
		 " claimed_at FROM batch_schedule_firing WHERE firing_id > 100;");
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d", "--dry-run"), 0);
	{
		json_t *d = stdout_json(), *r = json_object_get(d, "removed");

		CBT_EQ_LL(json_integer_value(json_object_get(r, "batch_schedule_event")), 250);
		CBT_EQ_LL(json_integer_value(json_object_get(r, "batch_schedule_firing")), 100);
		json_decref(d);
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event"), 252);
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d", "--batch", "7"), 0);
	{
		json_t *d = stdout_json(), *r = json_object_get(d, "removed");

		CBT_EQ_LL(json_integer_value(json_object_get(r, "batch_schedule_event")), 250);
		CBT_EQ_LL(json_integer_value(json_object_get(r, "batch_schedule_firing")), 100);
		json_decref(d);
	}
	ev = cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event");
	fi = cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing");
	CBT_EQ_LL(ev, 2);
	CBT_EQ_LL(fi, 2);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_schedule_firing WHERE "
			       "status = 'LAUNCHED' OR claimed_at > now() - interval '1 day'"),
		  2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule"), 1);
}

/* Claim instant @p at (SQL) of schedule 'sk' as node 'n1' at the database's
 * time @p clock (SQL, through batch_now()'s virtual clock): its outcome. */
static void claim_sk(const char *clock, const char *at, const char *want)
{
	char sql[2048], got[64];

	snprintf(sql, sizeof(sql), "SELECT set_config('cbatch.virtual_now', (%s)::text, false)",
		 clock);
	cbt_exec(conn, sql);
	snprintf(sql, sizeof(sql),
		 "SELECT c.outcome FROM batch_schedule s, batch_schedule_claim(p_schedule_id => "
		 " s.schedule_id, p_version => s.version, p_fire_time => %s, p_kind => "
		 " 'SCHEDULED', p_missed_until => NULL, p_missed_count => 0, p_param_time => %s, "
		 " p_next_fire_time => (%s) + interval '1 second', p_node => 'n1', p_job_key => "
		 " NULL, p_parameters => '[]') c WHERE s.schedule_name = 'sk'",
		 at, at, at);
	cbt_query_str(conn, sql, got, sizeof(got));
	CBT_EQ_STR(got, want);
	cbt_exec(conn, "RESET cbatch.virtual_now");
}

/* A run of skipped instants (sql/021) is one firing and one event that its
 * claims extend: cleanup takes it by its last instant, not its first. A run
 * that began 40 days ago and was extended yesterday stays whole; one wholly
 * older than the cutoff goes with its event. */
static void test_a_run_of_skips_goes_by_its_last_instant(void)
{
	fresh();
	cbt_exec(
		conn,
		"INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, job_name, "
		" next_fire_time, created_at, updated_at) VALUES ('sk', '* * * * * *', 'UTC', "
		" 'tick', now(), now() - interval '50 days', now() - interval '50 days');"
		"INSERT INTO batch_scheduler_node (node_id, host, pid, lease_seconds, heartbeat_at) "
		" VALUES ('holder', 'h', 1, 100 * 86400, now());"
		/* the live firing the first run waits for */
		"INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		" claimed_at, status, job_name) SELECT schedule_id, date_trunc('second', now()) - "
		" interval '45 days', 'SCHEDULED', 'holder', now() - interval '45 days', "
		" 'CLAIMED', 'tick' FROM batch_schedule");
	claim_sk("now() - interval '45 days' + interval '10 seconds'",
		 "date_trunc('second', now()) - interval '45 days' + interval '1 second'",
		 "SKIPPED_OVERLAP");
	claim_sk("now() - interval '45 days' + interval '10 seconds'",
		 "date_trunc('second', now()) - interval '45 days' + interval '2 seconds'",
		 "SKIPPED_OVERLAP");
	/* the next live firing, and the run that waits for it until yesterday */
	cbt_exec(conn,
		 "UPDATE batch_schedule_firing SET status = 'FINISHED' WHERE status = 'CLAIMED';"
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " claimed_at, status, job_name) SELECT schedule_id, date_trunc('second', now()) - "
		 " interval '40 days', 'SCHEDULED', 'holder', now() - interval '40 days', "
		 " 'CLAIMED', 'tick' FROM batch_schedule");
	claim_sk("now() - interval '40 days' + interval '10 seconds'",
		 "date_trunc('second', now()) - interval '40 days' + interval '1 second'",
		 "SKIPPED_OVERLAP");
	claim_sk("now() - interval '1 day'",
		 "date_trunc('second', now()) - interval '1 day' - interval '5 seconds'",
		 "SKIPPED_OVERLAP");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing WHERE status = "
				     "'SKIPPED_OVERLAP' AND instant_count = 2"),
		  2);
	if (CU_get_number_of_failures() > 0)
		cbt_print_rows(
			conn, "firings (id, instant, last, count, status, by, claimed)",
			"SELECT firing_id, fire_time, last_instant, instant_count, status, "
			"blocked_by, claimed_at FROM batch_schedule_firing ORDER BY fire_time");
	/* and a newest firing, today's */
	cbt_exec(conn,
		 "UPDATE batch_schedule_firing SET status = 'FINISHED' WHERE status = 'CLAIMED';"
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " status, job_name) SELECT schedule_id, now(), 'SCHEDULED', 'n1', 'FINISHED', "
		 " 'tick' FROM batch_schedule");
	CBT_EQ_LL(CLI("cleanup", "--older-than", "30d"), 0);
	/* Left: the run extended yesterday, whole, with its event, and the newest. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing"), 2);
	CBT_EQ_LL(cbt_query_ll(
			  conn,
			  "SELECT count(*) FROM batch_schedule_firing f JOIN "
			  "batch_schedule_event v USING (firing_id) WHERE f.status = "
			  "'SKIPPED_OVERLAP' AND f.instant_count = 2 AND v.instant_count = 2 AND "
			  "f.claimed_at < now() - interval '39 days' AND v.last_instant = "
			  "f.last_instant AND f.last_instant > now() - interval '2 days'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event"), 1);
}

/* Rows read through an index, once the counts of the sessions that used it
 * (a cleanup's, just ended) have reached the statistics. */
static long long index_reads(const char *index)
{
	long long last = -1, now;

	/* Until two readings 250 ms apart agree (the cleanup's server process
	 * reports its reads when it ends); at most 30 s. */
	for (int i = 0; i < 120; i++) {
		cbt_exec(conn, "SELECT pg_stat_clear_snapshot()");
		now = cbt_queryp_ll(
			conn,
			"SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes "
			"WHERE indexrelname = $1",
			"s", index);
		if (now > 0 && now == last)
			return now;
		last = now;
		cbt_sleep_ms(250);
	}
	return last;
}

/* The schedule history is walked in time order, each batch going on from
 * where the last one stopped: rows that stay, at the start of the walk, are
 * read once, not once per batch. What stays whatever its age: a schedule's
 * newest firing with its events (one that stopped firing long ago too), an
 * open firing with its events, and a firing with an event since the cutoff
 * (whose older events go). */
static void test_schedule_history_walk_goes_on_and_keeps_what_is_shown(void)
{
	long long reads;
	json_t *doc;

	fresh();
	cbt_exec(conn,
		 "INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, job_name, "
		 " next_fire_time) VALUES ('quiet', '0 * * * *', 'UTC', 'tick', now()), "
		 " ('busy', '* * * * * *', 'UTC', 'tock', now());"
		 /* quiet: stopped 40 days ago after 20 firings, each with 2 events */
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " claimed_at, status, job_name) SELECT 1, now() - interval '41 days' + g * "
		 " interval '1 minute', 'SCHEDULED', 'n1', now() - interval '41 days' + g * "
		 " interval '1 minute', 'FINISHED', 'tick' FROM generate_series(1, 20) g;"
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " firing_id, recorded_at) SELECT 1, f.fire_time, 'n1', o, f.firing_id, "
		 " f.claimed_at FROM batch_schedule_firing f, (VALUES ('FIRED'), ('FINISHED')) "
		 " AS v(o);"
		 /* busy: an open firing 45 days old with 60 events (the oldest rows) */
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " claimed_at, status, job_name) VALUES (2, now() - interval '45 days', "
		 " 'SCHEDULED', 'n1', now() - interval '45 days', 'LAUNCHED', 'tock');"
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " firing_id, recorded_at) SELECT 2, now() - interval '45 days', 'n2', "
		 " 'FIRED', 21, now() - interval '45 days' FROM generate_series(1, 60);"
		 /* 200 old skips of another node */
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " recorded_at) SELECT 2, now() - interval '40 days', 'n2', 'SKIPPED_CLAIMED', "
		 " now() - interval '40 days' + g * interval '1 second' "
		 " FROM generate_series(1, 200) g;"
		 /* a firing claimed 40 days ago that ended today, and the newest */
		 "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		 " claimed_at, status, job_name) VALUES (2, now() - interval '40 days', "
		 " 'SCHEDULED', 'n1', now() - interval '40 days', 'FINISHED', 'tock'), "
		 " (2, now(), 'SCHEDULED', 'n1', now(), 'FINISHED', 'tock');"
		 "INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		 " firing_id, recorded_at) VALUES (2, now() - interval '40 days', 'n1', 'FIRED', "
		 " 22, now() - interval '40 days'), (2, now() - interval '40 days', 'n1', "
		 " 'FINISHED', 22, now()), (2, now(), 'n1', 'FIRED', 23, now());");
	/* 10 rows a batch */
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d", "--batch", "1"), 0);
	doc = stdout_json();
	/* quiet's 19 older firings and their 38 events, 200 skips, and the
	 * FIRED event of the firing that ended today */
	CBT_EQ_LL(removed(doc, "batch_schedule_firing"), 19);
	CBT_EQ_LL(removed(doc, "batch_schedule_event"), 38 + 200 + 1);
	json_decref(doc);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing "
				     "WHERE firing_id IN (20, 21, 22, 23)"),
		  4);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event "
				     "WHERE firing_id = 20"),
		  2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event "
				     "WHERE firing_id = 21"),
		  60);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event "
				     "WHERE firing_id = 22"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_event"), 64);
	/* The events' walk read the 60 kept rows once and each of the 279
	 * others once (a walk from the start in each of its 25 batches would
	 * read the 60 again every time: some 1,800 more). */
	reads = index_reads("batch_schedule_event_recorded_ix");
	if (reads <= 0 || reads > 400)
		CBT_FAILF("the events' walk read %lld rows through its index, want about 300",
			  reads);
	/* Nothing is left to go: a second run removes nothing. */
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d"), 0);
	doc = stdout_json();
	CBT_EQ_LL(removed(doc, "batch_schedule_firing"), 0);
	CBT_EQ_LL(removed(doc, "batch_schedule_event"), 0);
	json_decref(doc);
}

/* ---- lock rows ------------------------------------------------------------ */

/* Lock rows of removed executions go with them, and so do released or long
 * expired rows of no execution (a firing's one-off name); held, recent or
 * still-used rows stay. A name taken again afterwards gets a token greater
 * than its removed row had, even when takeovers had pushed that row's token
 * past every token the sequence has handed out. */
static void test_lock_rows_of_removed_executions_go_tokens_never_go_back(void)
{
	long long old_token, new_token, dry, orphans;
	json_t *doc;

	fresh();
	CBT_EQ_LL(EX("example-setup", "settlement", "--rows", "200"), 0);
	/* One lock per day: settlement:<targetDate>. */
	CBT_EQ_LL(EX("run", "settlement", "targetDate:date=2026-01-01"), 0);
	CBT_EQ_LL(EX("run", "settlement", "targetDate:date=2026-01-02"), 0);
	CBT_EQ_LL(EX("run", "settlement", "targetDate:date=2026-01-03"), 0);
	/* Ten lease takeovers of the first day's lock: its token runs ahead of
	 * the sequence (a takeover adds 1 to the row's own token). */
	for (int i = 0; i < 10; i++) {
		cbt_sleep_ms(5);
		CU_ASSERT(cbt_query_ll(conn, "SELECT fencing_token FROM batch_lock_acquire("
					     "'settlement:2026-01-01', 'someone', 0.001)") > 0);
	}
	cbt_exec(conn, "SELECT batch_lock_release('settlement:2026-01-01', 'someone', "
		       "(SELECT fencing_token FROM batch_lock WHERE lock_name = "
		       "'settlement:2026-01-01'), 0, NULL)");
	old_token = cbt_query_ll(conn, "SELECT fencing_token FROM batch_lock WHERE "
				       "lock_name = 'settlement:2026-01-01'");
	CU_ASSERT(old_token >= 11);
	CU_ASSERT(cbt_query_ll(conn, "SELECT last_value FROM batch_lock_token_seq") < old_token);
	/* The first day's execution row is the lock row's again (as its run left it). */
	cbt_exec(conn, "UPDATE batch_lock SET job_execution_id = (SELECT min(job_execution_id) "
		       "FROM batch_job_execution) WHERE lock_name = 'settlement:2026-01-01'");
	/* A firing's one-off lock (released, no execution), a lock whose owner
	 * died long ago with its execution gone, one released an hour ago, one
	 * held, and one expired long ago whose execution (the newest, kept) stays. */
	cbt_exec(conn,
		 "INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, "
		 " locked_at, updated_at, released, job_execution_id) VALUES "
		 " ('tick:fire=1', 'o', nextval('batch_lock_token_seq'), now(), now(), now(), "
		 "  true, NULL), "
		 " ('dead', 'o', nextval('batch_lock_token_seq'), now(), now(), now(), false, "
		 "  999999), "
		 " ('recent', 'o', nextval('batch_lock_token_seq'), now(), now(), now(), true, "
		 "  NULL), "
		 " ('held', 'o', nextval('batch_lock_token_seq'), now() + interval '1 hour', "
		 "  now(), now(), false, NULL), "
		 " ('kept', 'o', nextval('batch_lock_token_seq'), now(), now(), now(), false, "
		 "  (SELECT max(job_execution_id) FROM batch_job_execution))");
	/* Everything is 40 days old but 'recent' and 'held'. */
	cbt_exec(conn, "UPDATE batch_job_execution SET create_time = create_time - interval "
		       "'40 days', start_time = start_time - interval '40 days', end_time = "
		       "end_time - interval '40 days';"
		       "UPDATE batch_lock SET locked_at = locked_at - interval '40 days', "
		       "locked_until = locked_until - interval '40 days', updated_at = "
		       "updated_at - interval '40 days' WHERE lock_name NOT IN ('recent', "
		       "'held');");
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d", "--dry-run"), 0);
	doc = stdout_json();
	dry = removed(doc, "batch_lock");
	/* days 1 and 2 (their executions go), 'tick:fire=1', 'dead', and day
	 * 3: released long ago, although its execution stays (the newest
	 * instance's first execution, which --next reads) */
	CBT_EQ_LL(removed(doc, "batch_job_execution"), 2);
	CBT_EQ_LL(dry, 5);
	json_decref(doc);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock"), 8);
	CBT_EQ_LL(CLI("--json", "cleanup", "--older-than", "30d", "--batch", "1"), 0);
	doc = stdout_json();
	CBT_EQ_LL(removed(doc, "batch_lock"), dry);
	json_decref(doc);
	orphans =
		cbt_query_ll(conn, "SELECT count(*) FROM batch_lock l WHERE l.job_execution_id "
				   "IS NOT NULL AND NOT EXISTS (SELECT 1 FROM batch_job_execution "
				   "e WHERE e.job_execution_id = l.job_execution_id)");
	CBT_EQ_LL(orphans, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE lock_name IN "
				     "('recent', 'held', 'kept')"),
		  3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock"), 3);
	/* The table output names it too. */
	CBT_EQ_LL(CLI("cleanup", "--older-than", "30d", "--dry-run"), 0);
	CBT_CONTAINS(out, "batch_lock ");
	/* Taken again: a new row, with a greater token than the removed one's. */
	CBT_EQ_LL(EX("run", "settlement", "targetDate:date=2026-01-01"), 0);
	new_token = cbt_query_ll(conn, "SELECT fencing_token FROM batch_lock WHERE "
				       "lock_name = 'settlement:2026-01-01'");
	CU_ASSERT(new_token > old_token);
	if (new_token <= old_token)
		CBT_FAILF("lock settlement:2026-01-01 came back with token %lld, had %lld",
			  new_token, old_token);
}

static const CU_TestInfo tests[] = {
	{ "bad_durations_exit_2", test_bad_durations_exit_2 },
	{ "100k_cleanup_while_a_job_runs", test_100k_cleanup_while_a_job_runs },
	{ "failed_instances_restart_after_cleanup", test_failed_instances_restart_after_cleanup },
	{ "keep_last_keeps_exactly_n_per_job", test_keep_last_keeps_exactly_n_per_job },
	{ "old_schedule_history_goes_newest_and_open_firings_stay",
	  test_old_schedule_history_goes_newest_and_open_firings_stay },
	{ "a_run_of_skips_goes_by_its_last_instant", test_a_run_of_skips_goes_by_its_last_instant },
	{ "schedule_history_walk_goes_on_and_keeps_what_is_shown",
	  test_schedule_history_walk_goes_on_and_keeps_what_is_shown },
	{ "held_instance_is_passed_over_not_waited_for",
	  test_held_instance_is_passed_over_not_waited_for },
	{ "lock_rows_of_removed_executions_go_tokens_never_go_back",
	  test_lock_rows_of_removed_executions_go_tokens_never_go_back },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("cleanup", init, clean, tests);
}
