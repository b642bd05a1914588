/*
 * A parameter the job declares non-identifying (issue 28 item 10): the tick
 * example declares `sleepMs` so (cb_job_declare_param,
 * CB_PARAM_NON_IDENTIFYING). Two runs that differ only in it, given without
 * a '-', are one instance: the second is refused as complete, or restarts the
 * failed one; the instance's job key is the key of the run without it; the
 * execution stores it with identifying false, which `show` marks; `jobs` and
 * `jobs --json` say it is non-identifying. An instance keyed with it before
 * the declaration restarts by its execution id. A schedule whose template gives it
 * a value that changes with each instant keys its firings, and so its
 * instances, by the identifying parameters alone.
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
	return cbt_sched_init(&sched, "params_declared");
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

/* The job key of `at=AT` alone, as cb_params_job_key computes it. */
static void key_of_at(char *out, const char *at)
{
	cb_error err = CB_ERROR_INIT;
	cb_params *p = NULL;

	out[0] = '\0';
	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	CBT_PASS(cb_params_add_string(p, "at", at, 1, &err), &err);
	CBT_PASS(cb_params_job_key(out, p, &err), &err);
	cb_params_free(p);
}

/* Instances of tick whose executions were given at=@p at. */
static long long instances_at(const char *at)
{
	return cbt_queryp_ll(sched.conn,
			     "SELECT count(DISTINCT e.job_instance_id) FROM batch_job_execution e "
			     "JOIN batch_job_execution_params p USING (job_execution_id) "
			     "WHERE p.parameter_name = 'at' AND p.parameter_value = $1",
			     "s", at);
}

/* The instance of tick at=@p at, keyed as @p key (1 if there is one). */
static long long instance_keyed(const char *at, const char *key)
{
	return cbt_queryp_ll(sched.conn,
			     "SELECT count(DISTINCT i.job_instance_id) FROM batch_job_instance i "
			     "JOIN batch_job_execution e USING (job_instance_id) "
			     "JOIN batch_job_execution_params p USING (job_execution_id) "
			     "WHERE i.job_name = 'tick' AND i.job_key = $2 "
			     "AND p.parameter_name = 'at' AND p.parameter_value = $1",
			     "s s", at, key);
}

static void test_runs_differing_in_it_are_one_instance(void)
{
	char key[CB_JOB_KEY_LEN + 1];

	fresh();
	CBT_EQ_LL(EX("run", "tick", "at=one", "sleepMs:long=0"), 0);
	/* Another value, given without its '-': the same instance, complete. */
	CBT_EQ_LL(EX("run", "tick", "at=one", "sleepMs:long=100"), 3);
	CBT_CONTAINS(sched.errout, "already complete");
	CBT_EQ_LL(EX("run", "tick", "at=one", "-sleepMs:long=200"), 3);
	CBT_EQ_LL(EX("run", "tick", "at=one"), 3);
	CBT_EQ_LL(instances_at("one"), 1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log"), 1);
	/* Its key is the key of the run without it. */
	key_of_at(key, "one");
	CBT_EQ_LL(instance_keyed("one", key), 1);
	/* Stored with identifying false, though given without a '-'. */
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution_params WHERE "
					   "parameter_name = 'sleepMs' AND parameter_value = '0' "
					   "AND NOT identifying"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_execution_params WHERE "
					   "parameter_name = 'at' AND identifying"),
		  1);
}

static void test_a_failed_one_is_restarted_whatever_its_value(void)
{
	long long inst;

	fresh();
	CBT_EQ_LL(EX("run", "tick", "at=two", "sleepMs:long=0", "-fail:long=1"), 1);
	inst = cbt_query_ll(sched.conn, "SELECT max(job_instance_id) FROM batch_job_instance");
	/* Another sleepMs, and no failing: a restart of the same instance. */
	CBT_EQ_LL(EX("run", "tick", "at=two", "sleepMs:long=100"), 0);
	CBT_EQ_LL(instances_at("two"), 1);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_job_execution WHERE job_instance_id = $1",
			      "lld", inst),
		2);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"SELECT count(*) FROM batch_job_execution e "
				"JOIN batch_job_execution_params p USING (job_execution_id) "
				"WHERE e.job_instance_id = $1 AND e.status = 'COMPLETED' "
				"AND p.parameter_name = 'sleepMs' AND p.parameter_value = '100' "
				"AND NOT p.identifying",
				"lld", inst),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log WHERE fired_for = 'two'"),
		  1);
}

/*
 * An instance made before the job declared sleepMs non-identifying (its
 * execution stored it identifying, its key has it): `restart ID` restarts
 * that instance as stored; `run` names the instance without it.
 */
static void test_an_instance_keyed_before_the_declaration_restarts_by_its_id(void)
{
	char old[CB_JOB_KEY_LEN + 1], id[32];
	cb_error err = CB_ERROR_INIT;
	cb_params *p = NULL;
	long long inst, exec;

	fresh();
	CBT_EQ_LL(EX("run", "tick", "at=old", "sleepMs:long=0", "-fail:long=1"), 1);
	inst = cbt_query_ll(sched.conn, "SELECT max(job_instance_id) FROM batch_job_instance");
	exec = cbt_query_ll(sched.conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	/* As an older program left it: sleepMs identifying, in the key. */
	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	CBT_PASS(cb_params_add_string(p, "at", "old", 1, &err), &err);
	CBT_PASS(cb_params_add_long(p, "sleepMs", 0, 1, &err), &err);
	CBT_PASS(cb_params_job_key(old, p, &err), &err);
	cb_params_free(p);
	CBT_EQ_LL(cbt_queryp_ll(sched.conn,
				"WITH i AS (UPDATE batch_job_instance SET job_key = $1 "
				" WHERE job_instance_id = $2 RETURNING 1), "
				"u AS (UPDATE batch_job_execution_params SET identifying = true "
				" WHERE job_execution_id = $3 AND parameter_name = 'sleepMs' "
				" RETURNING 1), "
				"d AS (DELETE FROM batch_job_execution_params WHERE "
				" job_execution_id = $3 AND parameter_name = 'fail' RETURNING 1) "
				"SELECT (SELECT count(*) FROM i) + (SELECT count(*) FROM u) + "
				"(SELECT count(*) FROM d)",
				"s lld lld", old, inst, exec),
		  3);
	snprintf(id, sizeof(id), "%lld", exec);
	CBT_EQ_LL(EX("restart", id), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_job_execution WHERE job_instance_id = $1 "
			      "AND status = 'COMPLETED'",
			      "lld", inst),
		1);
	CBT_EQ_LL(instances_at("old"), 1);
	/* A launch names the instance of at=old alone: another one. */
	CBT_EQ_LL(EX("run", "tick", "at=old", "sleepMs:long=0"), 0);
	CBT_EQ_LL(instances_at("old"), 2);
}

static void test_jobs_and_show_say_it_is_non_identifying(void)
{
	json_t *doc, *jobs, *ps, *par;
	json_error_t je;
	char id[32];
	int seen = 0;

	fresh();
	CBT_EQ_LL(EX("jobs"), 0);
	CBT_CONTAINS(sched.out, "at:string (required), sleepMs:long (non-identifying)");
	CBT_EQ_LL(EX("--json", "jobs"), 0);
	doc = json_loads(sched.out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	jobs = json_object_get(doc, "jobs");
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		if (strcmp(json_string_value(json_object_get(json_array_get(jobs, i), "name")),
			   "tick") != 0)
			continue;
		ps = json_object_get(json_array_get(jobs, i), "parameters");
		for (size_t k = 0; k < json_array_size(ps); k++) {
			json_t *p = json_array_get(ps, k);
			const char *name = json_string_value(json_object_get(p, "name"));

			if (strcmp(name, "sleepMs") == 0) {
				seen++;
				CBT_EQ_LL(json_is_false(json_object_get(p, "identifying")), 1);
			} else if (strcmp(name, "at") == 0) {
				seen++;
				CBT_EQ_LL(json_is_true(json_object_get(p, "identifying")), 1);
			}
		}
	}
	CBT_EQ_LL(seen, 2);
	json_decref(doc);

	CBT_EQ_LL(EX("run", "tick", "at=three", "sleepMs:long=0"), 0);
	snprintf(id, sizeof(id), "%lld",
		 cbt_query_ll(sched.conn, "SELECT max(job_execution_id) FROM batch_job_execution"));
	CBT_EQ_LL(EX("show", id), 0);
	CBT_CONTAINS(sched.out, "-sleepMs:long=0");
	CBT_EQ_LL(EX("--json", "show", id), 0);
	doc = json_loads(sched.out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	par = json_object_get(json_object_get(doc, "parameters"), "sleepMs");
	if (!par) /* show --json may wrap the execution */
		par = json_object_get(
			json_object_get(json_object_get(doc, "execution"), "parameters"),
			"sleepMs");
	CU_ASSERT_PTR_NOT_NULL(par);
	CBT_EQ_LL(json_is_false(json_object_get(par, "identifying")), 1);
	json_decref(doc);
}

static void test_schedule_keys_its_instances_by_identifying_parameters_only(void)
{
	char log[512], key[CB_JOB_KEY_LEN + 1];
	long long n;
	pid_t pid;

	fresh();
	/* Every second, one identifying value and a sleepMs that changes with
	 * each instant (negative: no sleep), given without a '-'. */
	CBT_EQ_LL(EX("schedule", "add", "same", "--cron", "* * * * * *", "--job", "tick", "at=same",
		     "sleepMs:long=-{fire_epoch}", "--overlap", "allow"),
		  0);
	cbt_sched_log_path(&sched, log, sizeof(log), "same");
	pid = SPAWN(log, "scheduler", "--lease", "5");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT (count(*) >= 3)::int FROM batch_schedule_firing "
				 "WHERE status = 'FINISHED'"));
	cbt_sched_stop_between_runs(&sched, pid);
	n = cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing "
				     "WHERE status = 'FINISHED'");
	CU_ASSERT(n >= 3);
	/* Each firing's sleepMs differed; each keyed the one instance of at=same. */
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(DISTINCT parameters) FROM "
					   "batch_schedule_firing WHERE status = 'FINISHED'"),
		  n);
	key_of_at(key, "same");
	CBT_EQ_LL(cbt_queryp_ll(
			  sched.conn,
			  "SELECT count(*) FROM batch_schedule_firing WHERE status = 'FINISHED' "
			  "AND job_key = $1",
			  "s", key),
		  n);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_job_instance"), 1);
	CBT_EQ_LL(instance_keyed("same", key), 1);
	/* The first completed it; the others were refused as complete. */
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM tick_log"), 1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing "
					   "WHERE status = 'FINISHED' AND exit_code = 0"),
		  1);
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(*) FROM batch_schedule_firing "
					   "WHERE status = 'FINISHED' AND exit_code = 3"),
		  n - 1);
	if (CU_get_number_of_failures() > 0)
		cbt_print_rows(sched.conn, "firings (fire time, status, exit, key, parameters)",
			       "SELECT fire_time, status, exit_code, job_key, parameters FROM "
			       "batch_schedule_firing ORDER BY fire_time");
}

/* A backfill keys its firings as the scheduler does: three past instants,
 * each with another sleepMs, all keyed by at=same alone. */
static void test_backfill_keys_by_identifying_parameters_only(void)
{
	char key[CB_JOB_KEY_LEN + 1];

	fresh();
	CBT_EQ_LL(EX("schedule", "add", "bf", "--cron", "0 * * * *", "--job", "tick", "at=same",
		     "sleepMs:long=-{fire_epoch}"),
		  0);
	CBT_EQ_LL(EX("schedule", "backfill", "bf", "--from", "2026-01-01T00:00:00Z", "--to",
		     "2026-01-01T02:00:00Z"),
		  0);
	key_of_at(key, "same");
	CBT_EQ_LL(cbt_query_ll(sched.conn, "SELECT count(DISTINCT parameters) FROM "
					   "batch_schedule_firing WHERE kind = 'BACKFILL'"),
		  3);
	CBT_EQ_LL(
		cbt_queryp_ll(sched.conn,
			      "SELECT count(*) FROM batch_schedule_firing WHERE kind = 'BACKFILL' "
			      "AND job_key = $1",
			      "s", key),
		3);
	CBT_EQ_LL(EX("schedule", "remove", "bf"), 0);
}

static const CU_TestInfo tests[] = {
	{ "runs_differing_in_it_are_one_instance", test_runs_differing_in_it_are_one_instance },
	{ "a_failed_one_is_restarted_whatever_its_value",
	  test_a_failed_one_is_restarted_whatever_its_value },
	{ "an_instance_keyed_before_the_declaration_restarts_by_its_id",
	  test_an_instance_keyed_before_the_declaration_restarts_by_its_id },
	{ "jobs_and_show_say_it_is_non_identifying", test_jobs_and_show_say_it_is_non_identifying },
	{ "schedule_keys_its_instances_by_identifying_parameters_only",
	  test_schedule_keys_its_instances_by_identifying_parameters_only },
	{ "backfill_keys_by_identifying_parameters_only",
	  test_backfill_keys_by_identifying_parameters_only },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("params_declared", init, clean, tests);
}
