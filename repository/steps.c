/* Step executions: history across an instance, creation, end, checkpoint. */
#include "repo.h"
#include "cbatch/step.h"
#include "text.h"
#include "cbatch/sys/tx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKPOINT_NPARAMS 19

/* Named arguments: a parameter renamed, added without a default or removed in
 * sql/functions/batch_chunk_checkpoint.sql fails loudly at prepare time instead
 * of shifting values into the wrong counters. */
static const char checkpoint_sql[] =
	"SELECT batch_chunk_checkpoint(p_step_execution_id => $1::bigint, "
	"p_version => $2::bigint, p_read => $3::bigint, p_write => $4::bigint, "
	"p_filter => $5::bigint, p_commit => $6::bigint, p_read_skip => $7::bigint, "
	"p_write_skip => $8::bigint, p_process_skip => $9::bigint, p_duplicate => $10::bigint, "
	"p_context => $11::jsonb, p_job_execution_id => $12::bigint, p_job_context => $13::jsonb, "
	"p_lock_name => $14::varchar, p_fencing_token => $15::bigint, "
	"p_lease_seconds => $16::float8, p_session_pid => $17::int, "
	"p_session_start => $18::timestamptz, p_owner => $19::boolean)";

const char *cb__repo_checkpoint_sql(void)
{
	return checkpoint_sql;
}

int cb__repo_checkpoint_prepare(PGconn *conn, char *name_out, const char *prefix, cb_error *err)
{
	const char *start;
	int pid;
	/* Learned here, outside the pipeline, so that every checkpoint can have
	 * the server check its session without a round trip of its own. */
	int rc = cb__conn_session(&pid, &start, conn, err);

	if (rc < 0)
		return rc;
	return cb_pg_prepare(conn, name_out, prefix, checkpoint_sql, CHECKPOINT_NPARAMS, err);
}

static int checkpoint_status(void *ctx, const PGresult *res, cb_error *err)
{
	cb__checkpoint *c = ctx;

	if (PQntuples(res) < 1 || PQnfields(res) < 1)
		return cb_error_set(err, CB_EDB, "checkpoint returned no row");
	if (c->status && c->status_size)
		snprintf(c->status, c->status_size, "%s", PQgetvalue(res, 0, 0));
	return 0;
}

int cb__repo_checkpoint_queue(cb_tx *tx, const char *stmt, cb__checkpoint *c, cb_error *err)
{
	enum {
		STEP,
		VERSION,
		READ,
		WRITE,
		FILTER,
		COMMIT,
		READ_SKIP,
		WRITE_SKIP,
		PROCESS_SKIP,
		DUPLICATE,
		JOB_EXECUTION,
		TOKEN,
		NUMS
	};
	char n[NUMS][24], lease[32], spid[16], *ctx_text, *job_ctx = NULL;
	const char *p[CHECKPOINT_NPARAMS], *start;
	int rc, pid, known = cb__conn_known_session(&pid, &start, cb_tx_conn(tx));

	ctx_text = json_dumps(c->context, JSON_COMPACT);
	if (c->job_context)
		job_ctx = json_dumps(c->job_context, JSON_COMPACT);
	if (!ctx_text || (c->job_context && !job_ctx)) {
		free(ctx_text);
		free(job_ctx);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	snprintf(n[STEP], 24, "%lld", c->step_execution_id);
	snprintf(n[VERSION], 24, "%lld", c->version);
	snprintf(n[READ], 24, "%lld", c->read);
	snprintf(n[WRITE], 24, "%lld", c->written);
	snprintf(n[FILTER], 24, "%lld", c->filtered);
	snprintf(n[COMMIT], 24, "%lld", c->commits);
	snprintf(n[READ_SKIP], 24, "%lld", c->read_skips);
	snprintf(n[WRITE_SKIP], 24, "%lld", c->write_skips);
	snprintf(n[PROCESS_SKIP], 24, "%lld", c->process_skips);
	snprintf(n[DUPLICATE], 24, "%lld", c->duplicates);
	snprintf(n[JOB_EXECUTION], 24, "%lld", c->job_execution_id);
	snprintf(n[TOKEN], 24, "%lld", c->fencing_token);
	snprintf(lease, sizeof(lease), "%.6f", c->lease_seconds);
	/* The statement's parameters, in batch_chunk_checkpoint's order. */
	p[0] = n[STEP];
	p[1] = n[VERSION];
	p[2] = n[READ];
	p[3] = n[WRITE];
	p[4] = n[FILTER];
	p[5] = n[COMMIT];
	p[6] = n[READ_SKIP];
	p[7] = n[WRITE_SKIP];
	p[8] = n[PROCESS_SKIP];
	p[9] = n[DUPLICATE];
	p[10] = ctx_text;
	p[11] = n[JOB_EXECUTION];
	p[12] = job_ctx;
	p[13] = c->lock_name;
	p[14] = c->lock_name ? n[TOKEN] : NULL;
	p[15] = c->lock_name ? lease : NULL;
	/* The server checks that it runs this in the session the connection
	 * learned (CB003 otherwise): the lock's owner session stays true. */
	snprintf(spid, sizeof(spid), "%d", pid);
	p[16] = known ? spid : NULL;
	p[17] = known ? start : NULL;
	p[18] = c->secondary ? "false" : "true";
	/* Errors name what was being done, never the statement's own name. */
	rc = cb__tx_send_described(tx, stmt, "the chunk's checkpoint", CHECKPOINT_NPARAMS, p,
				   checkpoint_status, NULL, c, err);
	free(ctx_text);
	free(job_ctx);
	return rc;
}

int cb__repo_step_history(cb__step_history *out, PGconn *conn, long long job_instance_id,
			  const char *step_name, cb_error *err)
{
	char inst[24];
	const char *p[2] = { inst, step_name };
	json_error_t jerr;
	PGresult *res;

	memset(out, 0, sizeof(*out));
	snprintf(inst, sizeof(inst), "%lld", job_instance_id);
	res = cb__repo_exec(conn, "find step history",
			    "SELECT s.step_execution_id, s.status, c.serialized_context, "
			    " count(*) OVER (), s.exit_code "
			    "FROM batch_step_execution s "
			    "JOIN batch_job_execution e USING (job_execution_id) "
			    "LEFT JOIN batch_step_execution_context c USING (step_execution_id) "
			    "WHERE e.job_instance_id = $1 AND s.step_name = $2 "
			    "ORDER BY s.step_execution_id DESC LIMIT 1",
			    2, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		out->found = 1;
		out->step_execution_id = atoll(PQgetvalue(res, 0, 0));
		out->status = cb_status_parse(PQgetvalue(res, 0, 1));
		out->start_count = atoll(PQgetvalue(res, 0, 3));
		snprintf(out->exit_code, sizeof(out->exit_code), "%s", PQgetvalue(res, 0, 4));
		out->context = PQgetisnull(res, 0, 2) ? json_object() :
							json_loads(PQgetvalue(res, 0, 2), 0, &jerr);
		if (!out->context) {
			PQclear(res);
			return cb_error_set(err, CB_EINVAL,
					    "step execution %lld: unreadable context: %s",
					    out->step_execution_id, jerr.text);
		}
	}
	PQclear(res);
	return 0;
}

int cb__repo_step_started_of(long long *out_id, PGconn *conn, long long job_execution_id,
			     const char *step_name, cb_error *err)
{
	char exec[24];
	const char *p[2] = { exec, step_name };
	PGresult *res;

	*out_id = 0;
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	res = cb__repo_exec(conn, "find the step execution just created",
			    "SELECT max(step_execution_id) FROM batch_step_execution "
			    "WHERE job_execution_id = $1 AND step_name = $2 AND status = 'STARTED' "
			    "AND end_time IS NULL",
			    2, p, err);
	if (!res)
		return CB_EDB;
	if (!PQgetisnull(res, 0, 0))
		*out_id = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__repo_step_create(long long *out_id, PGconn *conn, long long job_execution_id,
			 const char *step_name, const json_t *context, cb_error *err)
{
	char exec[24], *ctx = json_dumps(context, JSON_COMPACT);
	const char *p[3] = { exec, step_name, ctx };
	PGresult *res;
	int rc = 0;

	*out_id = 0;
	if (!ctx)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	/* One statement: the step row and its context appear together, and only
	 * while the job execution is STARTED: a stop requested between two steps
	 * (STOPPING) ends the job before the next one, and an execution that
	 * another process ended gets no new step. The job status comes back
	 * either way, so a refusal costs no second round trip. */
	res = cb__repo_exec(
		conn, "create step execution",
		"WITH j AS (SELECT status FROM batch_job_execution "
		" WHERE job_execution_id = $1), "
		"s AS (INSERT INTO batch_step_execution "
		" (job_execution_id, step_name, status, start_time) "
		" SELECT $1, $2, 'STARTED', batch_now() FROM j "
		" WHERE j.status = 'STARTED' RETURNING step_execution_id), "
		"c AS (INSERT INTO batch_step_execution_context "
		" (step_execution_id, serialized_context) "
		" SELECT step_execution_id, $3::jsonb FROM s RETURNING step_execution_id) "
		"SELECT j.status, (SELECT step_execution_id FROM c) FROM j",
		3, p, err);
	free(ctx);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else if (!PQgetisnull(res, 0, 1))
		*out_id = atoll(PQgetvalue(res, 0, 1));
	else
		rc = cb__repo_step_refused(err, PQgetvalue(res, 0, 0), job_execution_id, step_name);
	PQclear(res);
	return rc;
}

int cb__repo_step_refused(cb_error *err, const char *job_status, long long job_execution_id,
			  const char *step_name)
{
	if (strcmp(job_status, "STOPPING") == 0)
		return cb_error_set(err, CB_ECANCELED,
				    "job execution %lld: stop requested before step '%s'",
				    job_execution_id, step_name);
	return cb_error_set(err, CB_EFENCED,
			    "job execution %lld was ended by another process (it is %s); "
			    "step '%s' not started",
			    job_execution_id, job_status, step_name);
}

int cb__repo_step_finish(PGconn *conn, long long step_execution_id, cb_status status,
			 const char *exit_code, const char *exit_message, long long rollbacks,
			 cb_error *err)
{
	char id[24], rb[24], msg[CB_ERROR_MESSAGE_MAX], code[64];
	const char *p[5] = { id, cb_status_name(status), code, msg, rb };

	/* Text columns refuse invalid UTF-8 (22021): the end must be recorded. */
	cb__utf8_sanitize(msg, sizeof(msg), exit_message);
	cb__utf8_sanitize(code, sizeof(code), exit_code);
	snprintf(id, sizeof(id), "%lld", step_execution_id);
	snprintf(rb, sizeof(rb), "%lld", rollbacks);
	return cb__repo_command(
		conn, "finish step execution",
		"UPDATE batch_step_execution SET status = $2, exit_code = $3, "
		"exit_message = left($4, 2500), rollback_count = rollback_count + $5, "
		"end_time = batch_now(), last_updated = batch_now(), "
		"version = version + 1 WHERE step_execution_id = $1 "
		"AND batch_status_is_live(status)",
		5, p, err);
}

int cb__repo_step_state(long long *version, json_t **context, PGconn *conn,
			long long step_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	json_error_t jerr;
	PGresult *res;

	*context = NULL;
	snprintf(id, sizeof(id), "%lld", step_execution_id);
	res = cb__repo_exec(conn, "read step state",
			    "SELECT s.version, coalesce(c.serialized_context, '{}') "
			    "FROM batch_step_execution s LEFT JOIN batch_step_execution_context c "
			    "USING (step_execution_id) WHERE s.step_execution_id = $1",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return cb_error_set(err, CB_ENOTFOUND, "no step execution %lld", step_execution_id);
	}
	*version = atoll(PQgetvalue(res, 0, 0));
	*context = json_loads(PQgetvalue(res, 0, 1), 0, &jerr);
	PQclear(res);
	if (!*context)
		return cb_error_set(err, CB_EINVAL, "step execution %lld: unreadable context: %s",
				    step_execution_id, jerr.text);
	return 0;
}

int cb__repo_save_job_context(PGconn *conn, long long job_execution_id, const json_t *context,
			      cb_error *err)
{
	char id[24], *text = json_dumps(context, JSON_COMPACT);
	const char *p[2] = { id, text };
	int rc;

	if (!text)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	rc = cb__repo_command(
		conn, "save job context",
		"UPDATE batch_job_execution_context SET serialized_context = $2::jsonb "
		"WHERE job_execution_id = $1",
		2, p, err);
	free(text);
	return rc;
}

int cb__repo_step_summary(cb_step_summary *out, PGconn *conn, long long job_instance_id,
			  const char *step_name, cb_error *err)
{
	char inst[24];
	const char *p[2] = { inst, step_name };
	PGresult *res;

	memset(out, 0, sizeof(*out));
	out->status = CB_STATUS_UNKNOWN;
	snprintf(inst, sizeof(inst), "%lld", job_instance_id);
	res = cb__repo_exec(conn, "sum step executions",
			    "SELECT count(*), "
			    " (array_agg(s.status ORDER BY s.step_execution_id DESC))[1], "
			    " coalesce(sum(s.read_count), 0), coalesce(sum(s.write_count), 0), "
			    " coalesce(sum(s.filter_count), 0), "
			    " coalesce(sum(s.read_skip_count + s.process_skip_count "
			    "              + s.write_skip_count), 0), "
			    " coalesce(sum(s.duplicate_target_write_count), 0), "
			    " coalesce(sum(s.commit_count), 0), coalesce(sum(s.rollback_count), 0) "
			    "FROM batch_step_execution s "
			    "JOIN batch_job_execution e USING (job_execution_id) "
			    "WHERE e.job_instance_id = $1 AND s.step_name = $2",
			    2, p, err);
	if (!res)
		return cb_error_prefix(err, "step '%.100s'", step_name);
	out->executions = atoll(PQgetvalue(res, 0, 0));
	if (!PQgetisnull(res, 0, 1))
		out->status = cb_status_parse(PQgetvalue(res, 0, 1));
	out->read_count = atoll(PQgetvalue(res, 0, 2));
	out->write_count = atoll(PQgetvalue(res, 0, 3));
	out->filter_count = atoll(PQgetvalue(res, 0, 4));
	out->skip_count = atoll(PQgetvalue(res, 0, 5));
	out->duplicate_count = atoll(PQgetvalue(res, 0, 6));
	out->commit_count = atoll(PQgetvalue(res, 0, 7));
	out->rollback_count = atoll(PQgetvalue(res, 0, 8));
	PQclear(res);
	return 0;
}
