/*
 * The tasklet step: one callback, called in its own transaction until it
 * says CB_DONE. Each call commits with the step's checkpoint, so a restart
 * resumes after the last committed call with the context it saved.
 */
#include "engine.h"
#include "pgkit.h"
#include "repo.h"
#include "step_context.h"
#include "tx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a tasklet resumes from after an outage: its last committed call. */
struct tasklet_resume {
	cb__run *run;
	cb_step_context *sc;
	json_t *context;
	char *stmt;
	long long *version;
};

static int resume_tasklet(void *ctx, cb_error *err)
{
	struct tasklet_resume *t = ctx;
	json_t *saved = NULL, *job_saved = NULL;
	int rc;

	rc = cb__repo_step_state(t->version, &saved, t->run->conn, t->sc->step_execution_id, err);
	if (rc == 0)
		rc = cb__repo_job_context(&job_saved, t->run->conn, t->run->job_execution_id, err);
	if (rc == 0)
		rc = cb__repo_checkpoint_prepare(t->run->conn, t->stmt, "tckpt", err);
	if (rc == 0) {
		json_object_clear(t->context);
		json_object_update(t->context, saved);
		json_object_clear(t->run->job_context);
		json_object_update(t->run->job_context, job_saved);
	}
	json_decref(saved);
	json_decref(job_saved);
	return rc;
}

/* Wait out a lost database and resume from the last committed call.
 * @return 0 resumed, 1 stopped meanwhile, or the error. */
static int ride(cb__run *run, cb_step_context *sc, json_t *context, char *stmt, long long *version,
		cb_error *err)
{
	struct tasklet_resume t = { run, sc, context, stmt, version };
	char where[160];

	snprintf(where, sizeof(where), "call %lld", *version + 1);
	return cb__run_ride_through(run, run->conn, sc->step_name, where, resume_tasklet, &t, err);
}

int cb__step_tasklet_run(cb__run *run, const cb_step_def *def, cb_step_context *sc, json_t *context,
			 cb__step_outcome *out)
{
	cb_error *err = &out->error;
	char stmt[64] = "";
	cb_tx *tx = NULL;
	long long version = 0;
	int rc;

	sc->chunk_size = 1;
	out->status = CB_STATUS_FAILED;

	if (cb__tx_new(&tx, run->conn, 0, err) < 0)
		goto done;
	/* Lost here, the session is waited for as a lost call is (resume
	 * prepares again on the new one). */
	if (cb__repo_checkpoint_prepare(run->conn, stmt, "tckpt", err) < 0) {
		if (!cb__pg_lost(err, run->conn))
			goto done;
		rc = ride(run, sc, context, stmt, &version, err);
		if (rc > 0)
			out->status = CB_STATUS_STOPPED;
		if (rc != 0)
			goto done;
	}
	for (;;) {
		char status[16] = "";
		cb__checkpoint k;
		int result;

		if (cb__stop_signalled()) {
			out->status = CB_STATUS_STOPPED;
			break;
		}
		if (cb__run_check_lock(run, err) < 0)
			break;
		/* A BEGIN that finds the session gone (lost since the last call
		 * committed) is a lost call like any other. */
		rc = cb__tx_begin(tx, err);
		if (rc < 0)
			goto rollback;
		CB__NOTIFY(run->job, before_chunk, sc);
		result = def->tasklet(def->user, sc, tx, context, err);
		if (result < 0) {
			if (!err->code)
				cb_error_set(err, result, "tasklet returned %s without a message",
					     cb_strcode(result));
			cb_error_prefix(err, "tasklet");
			goto rollback;
		}
		memset(&k, 0, sizeof(k));
		k.step_execution_id = sc->step_execution_id;
		k.version = version;
		k.commits = 1;
		k.context = context;
		k.job_execution_id = run->job_execution_id;
		k.job_context = run->job_context; /* a tasklet's job context commits with it */
		cb__run_fence(run, &k);
		k.status = status;
		k.status_size = sizeof(status);
		rc = cb__repo_checkpoint_queue(tx, stmt, &k, err);
		if (rc == 0)
			rc = cb__tx_commit(tx, err);
		if (rc < 0)
			goto rollback;
		version++;
		CB__NOTIFY(run->job, after_chunk, sc);
		if (result == CB_DONE) {
			out->status = CB_STATUS_COMPLETED;
			break;
		}
		if (strcmp(status, "STOPPING") == 0) {
			out->status = CB_STATUS_STOPPED;
			break;
		}
		continue;
rollback : {
	cb_error ignored = CB_ERROR_INIT;

	cb__tx_rollback(tx, &ignored);
}
		CB__NOTIFY(run->job, chunk_error, sc, err);
		out->rollbacks++;
		if (cb__pg_lost(err, run->conn)) {
			/* The database went away: not the tasklet's fault. */
			rc = ride(run, sc, context, stmt, &version, err);
			if (rc == 0)
				continue;
			if (rc > 0)
				out->status = CB_STATUS_STOPPED;
		}
		break;
	}
done:
	cb__tx_free(tx);
	if (stmt[0] && PQstatus(run->conn) == CONNECTION_OK) {
		char sql[96];
		PGresult *res;

		snprintf(sql, sizeof(sql), "DEALLOCATE %s", stmt);
		res = PQexec(run->conn, sql);
		PQclear(res);
	}
	return out->status == CB_STATUS_FAILED ? err->code : 0;
}
