/*
 * tick: the smallest scheduled job. One tasklet writes a row to tick_log
 * with the instant it was fired for (parameter `at`, filled by a schedule
 * from {fire_utc}), its execution and its process, in the step's own
 * transaction: a run that commits leaves exactly one row, so the table shows
 * how many times each fire instant really ran.
 *
 *   cbatch-examples schedule add every-second --cron '* * * * * *' --job tick \
 *       'at={fire_utc}'
 *
 * `sleepMs:long=N` makes it take that long first (in steps of 100 ms,
 * each its own transaction, so that a stop request ends it STOPPED); the job
 * declares it non-identifying, so it never makes another instance.
 * For tests of a schedule's recovery, after the sleep: `-crash:long=1` kills
 * its own process (SIGKILL: a run that dies without recording its end), and
 * `-fail:long=1` fails the step (an error of the job's own, FAILED).
 * For tests of run logs: `-print:long=N` prints N numbered lines first
 * (stdout, flushed), before the sleep.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "examples.h"

static int tick(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context, cb_error *err)
{
	char exec[24], pid[16];
	const char *p[3] = { cb_step_param(sc, "at"), exec, pid };
	long long sleep_ms = 0, slept = json_integer_value(json_object_get(context, "slept_ms"));
	long long crash = 0, fail = 0, print = 0;
	PGresult *res;
	int rc = CB_DONE;

	(void)user;
	cb_params_get_long(cb_step_context_params(sc), "print", &print);
	if (print > 0 && !json_is_true(json_object_get(context, "printed"))) {
		for (long long i = 1; i <= print; i++)
			printf("tick: line %lld of %lld\n", i, print);
		fflush(stdout);
		json_object_set_new(context, "printed", json_true());
	}
	cb_params_get_long(cb_step_context_params(sc), "sleepMs", &sleep_ms);
	if (slept < sleep_ms) {
		/* one slice per transaction: the engine checks for a stop in between */
		usleep(100 * 1000);
		json_object_set_new(context, "slept_ms", json_integer(slept + 100));
		return 0;
	}
	cb_params_get_long(cb_step_context_params(sc), "crash", &crash);
	cb_params_get_long(cb_step_context_params(sc), "fail", &fail);
	if (crash)
		raise(SIGKILL);
	if (fail)
		return cb_error_set(err, CB_EINVAL, "tick: failing as asked (-fail:long=1)");
	snprintf(exec, sizeof(exec), "%lld", cb_step_context_job_execution_id(sc));
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	res = PQexecParams(cb_tx_conn(tx),
			   "INSERT INTO tick_log (fired_for, job_execution_id, pid) "
			   "VALUES ($1, $2::bigint, $3::int)",
			   3, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = cb_pg_error(err, cb_tx_conn(tx), res, "tick");
	PQclear(res);
	return rc;
}

int tick_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "tick";
	step.kind = CB_STEP_TASKLET;
	step.tasklet = tick;
	if ((rc = cb_registry_new_job(&job, reg, "tick", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_add_param(job, "at", CB_PARAM_STRING, 1, err)) < 0 ||
	    (rc = cb_job_declare_param(job, "sleepMs", CB_PARAM_LONG, CB_PARAM_NON_IDENTIFYING,
				       err)) < 0 ||
	    (rc = cb_job_add_param(job, "crash", CB_PARAM_LONG, 0, err)) < 0 ||
	    (rc = cb_job_add_param(job, "fail", CB_PARAM_LONG, 0, err)) < 0 ||
	    (rc = cb_job_add_param(job, "print", CB_PARAM_LONG, 0, err)) < 0)
		return rc;
	return cb_job_set_description(job,
				      "log one row per run to tick_log (at:string, the fire "
				      "instant; sleepMs:long to take longer)",
				      err);
}
