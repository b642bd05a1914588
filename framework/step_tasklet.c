/*
 * The tasklet step: one callback, called in its own transaction until it
 * says CB_DONE. Each call commits with the step's checkpoint, so a restart
 * resumes after the last committed call with the context it saved.
 */
#include "engine.h"
#include "repo.h"
#include "step_context.h"
#include "tx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cb__step_tasklet_run(cb__run *run, const cb_step_def *def, cb_step_context *sc,
			 json_t *context, cb__step_outcome *out)
{
	cb_error *err = &out->error;
	char stmt[64] = "";
	cb_tx *tx = NULL;
	long long version = 0;
	int rc;

	sc->chunk_size = 1;
	out->status = CB_STATUS_FAILED;

	if (cb_pg_prepare(run->conn, stmt, "tckpt", cb__repo_checkpoint_sql,
			  CB__CHECKPOINT_NPARAMS, err) < 0 ||
	    cb__tx_new(&tx, run->conn, 0, err) < 0)
		goto done;
	for (;;) {
		char ids[3][24], status[16] = "", *ctx_text, *job_ctx, token[24], lease[32];
		int result;

		if (cb__stop_signalled()) {
			out->status = CB_STATUS_STOPPED;
			break;
		}
		if (cb__run_check_lock(run, err) < 0)
			break;
		rc = cb__tx_begin(tx, err);
		if (rc < 0)
			break;
		CB__NOTIFY(run->job, before_chunk, sc);
		result = def->tasklet(def->user, sc, tx, context, err);
		if (result < 0) {
			if (!err->code)
				cb_error_set(err, result, "tasklet returned %s without a message",
					     cb_strcode(result));
			cb_error_prefix(err, "tasklet");
			goto rollback;
		}
		ctx_text = json_dumps(context, JSON_COMPACT);
		job_ctx = json_dumps(run->job_context, JSON_COMPACT);
		if (!ctx_text || !job_ctx) {
			free(ctx_text);
			free(job_ctx);
			cb_error_set(err, CB_ENOMEM, "out of memory");
			goto rollback;
		}
		snprintf(ids[0], 24, "%lld", sc->step_execution_id);
		snprintf(ids[1], 24, "%lld", version);
		snprintf(ids[2], 24, "%lld", run->job_execution_id);
		{
			const char *params[CB__CHECKPOINT_NPARAMS] = {
				ids[0], ids[1], "0", "0", "0", "1", "0", "0", "0", "0",
				ctx_text, ids[2], NULL, NULL, NULL, NULL
			};

			cb__run_fence_params(run, &params[12], token, lease);
			params[12] = job_ctx; /* a tasklet's job context commits with it */
			rc = cb__tx_send_text(tx, stmt, CB__CHECKPOINT_NPARAMS, params, status,
					      sizeof(status), err);
		}
		free(ctx_text);
		free(job_ctx);
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
rollback:
		{
			cb_error ignored = CB_ERROR_INIT;

			cb__tx_rollback(tx, &ignored);
		}
		CB__NOTIFY(run->job, chunk_error, sc, err);
		out->rollbacks++;
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
