/* The operator's view of the repository: listings, stop and abandon. */
#include "repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared by list and show: one execution as a JSON object, built by the server. */
#define EXECUTION_JSON                                                                        \
	"jsonb_build_object('job_execution_id', e.job_execution_id, "                         \
	"'job_instance_id', e.job_instance_id, 'job_name', i.job_name, 'job_key', i.job_key, " \
	"'status', e.status, 'exit_code', e.exit_code, 'exit_message', e.exit_message, "     \
	"'create_time', e.create_time, 'start_time', e.start_time, 'end_time', e.end_time, "  \
	"'last_updated', e.last_updated, 'owner_id', e.owner_id, "                            \
	"'restart_of', e.restart_of, 'fencing_token', e.fencing_token, 'lock_name', e.lock_name, " \
	"'owner_lost', e.status IN ('STARTING', 'STARTED', 'STOPPING') AND NOT EXISTS ("       \
	" SELECT 1 FROM batch_lock l WHERE l.lock_name = e.lock_name AND "                     \
	" l.fencing_token = e.fencing_token AND NOT l.released AND "                           \
	" l.locked_until >= clock_timestamp()), "                                              \
	"'duration_seconds', extract(epoch FROM coalesce(e.end_time, clock_timestamp()) - "   \
	"e.start_time), "                                                                     \
	"'parameters', coalesce((SELECT jsonb_object_agg(p.parameter_name, jsonb_build_object(" \
	"'type', p.parameter_type, 'value', p.parameter_value, 'identifying', p.identifying)) " \
	"FROM batch_job_execution_params p WHERE p.job_execution_id = e.job_execution_id), "  \
	"'{}'::jsonb))"

static int load_json(json_t **out, PGresult *res, const char *what, cb_error *err)
{
	json_error_t jerr;

	*out = json_loads(PQgetvalue(res, 0, 0), 0, &jerr);
	if (!*out)
		return cb_error_set(err, CB_EDB, "%s: unreadable JSON from server: %s", what,
				    jerr.text);
	return 0;
}

int cb_repo_list_executions(json_t **out, PGconn *conn, const char *job_name, int limit,
			    cb_error *err)
{
	char lim[16];
	const char *p[2] = { job_name, lim };
	PGresult *res;
	int rc;

	*out = NULL;
	snprintf(lim, sizeof(lim), "%d", limit > 0 ? limit : 20);
	res = cb__repo_exec(conn, "list executions",
			    "SELECT coalesce(jsonb_agg(x.j ORDER BY x.id DESC), '[]') FROM ("
			    " SELECT e.job_execution_id AS id, " EXECUTION_JSON " AS j "
			    " FROM batch_job_execution e JOIN batch_job_instance i USING (job_instance_id)"
			    " WHERE $1::text IS NULL OR i.job_name = $1"
			    " ORDER BY e.job_execution_id DESC LIMIT $2::int) x",
			    2, p, err);
	if (!res)
		return CB_EDB;
	rc = load_json(out, res, "list executions", err);
	PQclear(res);
	return rc;
}

int cb_repo_show_execution(json_t **out, PGconn *conn, long long job_execution_id,
			   cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;
	int rc;

	*out = NULL;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	res = cb__repo_exec(
		conn, "show execution",
		"SELECT " EXECUTION_JSON " || jsonb_build_object("
		" 'context', (SELECT serialized_context FROM batch_job_execution_context c"
		"  WHERE c.job_execution_id = e.job_execution_id),"
		" 'steps', coalesce((SELECT jsonb_agg(jsonb_build_object("
		"  'step_execution_id', s.step_execution_id, 'step_name', s.step_name,"
		"  'status', s.status, 'read_count', s.read_count, 'write_count', s.write_count,"
		"  'filter_count', s.filter_count, 'commit_count', s.commit_count,"
		"  'rollback_count', s.rollback_count, 'read_skip_count', s.read_skip_count,"
		"  'write_skip_count', s.write_skip_count,"
		"  'process_skip_count', s.process_skip_count,"
		"  'duplicate_target_write_count', s.duplicate_target_write_count,"
		"  'start_time', s.start_time, 'end_time', s.end_time,"
		"  'duration_seconds', extract(epoch FROM coalesce(s.end_time, clock_timestamp())"
		"   - s.start_time),"
		"  'exit_code', s.exit_code, 'exit_message', s.exit_message,"
		"  'context', sc.serialized_context) ORDER BY s.step_execution_id)"
		"  FROM batch_step_execution s LEFT JOIN batch_step_execution_context sc"
		"  USING (step_execution_id) WHERE s.job_execution_id = e.job_execution_id),"
		"  '[]'::jsonb))"
		" FROM batch_job_execution e JOIN batch_job_instance i USING (job_instance_id)"
		" WHERE e.job_execution_id = $1",
		1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else
		rc = load_json(out, res, "show execution", err);
	PQclear(res);
	return rc;
}

/*
 * Change an execution's status from one of @p from_sql's statuses; report
 * CB_ENOTFOUND or CB_EINVAL naming the current status when it does not apply.
 */
static int transition(PGconn *conn, long long job_execution_id, const char *sql,
		      const char *verb, const char *allowed, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;
	int rc = 0;

	snprintf(id, sizeof(id), "%lld", job_execution_id);
	res = cb__repo_exec(conn, verb, sql, 1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else if (PQgetvalue(res, 0, 1)[0] != 't')
		rc = cb_error_set(err, CB_EINVAL, "cannot %s job execution %lld: it is %s (only %s)",
				  verb, job_execution_id, PQgetvalue(res, 0, 0), allowed);
	PQclear(res);
	return rc;
}

int cb_repo_request_stop(PGconn *conn, long long job_execution_id, cb_error *err)
{
	/* The old status comes from the row before the update (a self-join on ctid
	 * would race); FOR UPDATE in the CTE pins it. */
	return transition(conn, job_execution_id,
			  "WITH old AS (SELECT job_execution_id, status FROM batch_job_execution "
			  " WHERE job_execution_id = $1 FOR UPDATE), "
			  "upd AS (UPDATE batch_job_execution e SET status = 'STOPPING', "
			  " last_updated = clock_timestamp(), version = e.version + 1 FROM old "
			  " WHERE e.job_execution_id = old.job_execution_id "
			  " AND old.status IN ('STARTING', 'STARTED') RETURNING 1) "
			  "SELECT old.status, EXISTS (SELECT 1 FROM upd) OR old.status = 'STOPPING' "
			  "FROM old",
			  "stop", "STARTING or STARTED executions can be stopped", err);
}

int cb_repo_abandon(PGconn *conn, long long job_execution_id, cb_error *err)
{
	return transition(conn, job_execution_id,
			  "WITH old AS (SELECT job_execution_id, status FROM batch_job_execution "
			  " WHERE job_execution_id = $1 FOR UPDATE), "
			  "upd AS (UPDATE batch_job_execution e SET status = 'ABANDONED', "
			  " exit_code = 'ABANDONED', last_updated = clock_timestamp(), "
			  " end_time = coalesce(e.end_time, clock_timestamp()), "
			  " version = e.version + 1 FROM old "
			  " WHERE e.job_execution_id = old.job_execution_id "
			  " AND old.status IN ('FAILED', 'STOPPED') RETURNING 1) "
			  "SELECT old.status, EXISTS (SELECT 1 FROM upd) FROM old",
			  "abandon", "FAILED or STOPPED executions can be abandoned", err);
}

int cb_repo_execution_job_name(char *out, size_t size, PGconn *conn, long long job_execution_id,
			       cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;
	int rc = 0;

	snprintf(id, sizeof(id), "%lld", job_execution_id);
	res = cb__repo_exec(conn, "find job name",
			    "SELECT i.job_name FROM batch_job_execution e "
			    "JOIN batch_job_instance i USING (job_instance_id) "
			    "WHERE e.job_execution_id = $1", 1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}
