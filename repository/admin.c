/* The operator's view of the repository: listings, stop and abandon. */
#include "repo.h"
#include "views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared by list and show: one execution as a JSON object, built by the server. */
#define EXECUTION_JSON                                                                             \
	"jsonb_build_object('job_execution_id', e.job_execution_id, "                              \
	"'job_instance_id', e.job_instance_id, 'job_name', i.job_name, 'job_key', i.job_key, "     \
	"'status', e.status, 'exit_code', e.exit_code, 'exit_message', e.exit_message, "           \
	"'create_time', e.create_time, 'start_time', e.start_time, 'end_time', e.end_time, "       \
	"'last_updated', e.last_updated, 'owner_id', e.owner_id, 'stop_origin', e.stop_origin, "   \
	"'restart_of', e.restart_of, 'fencing_token', e.fencing_token, 'lock_name', e.lock_name, " \
	"'owner_lost', batch_status_is_live(e.status) AND NOT EXISTS ("                            \
	" SELECT 1 FROM batch_lock l WHERE l.lock_name = e.lock_name AND "                         \
	" l.fencing_token = e.fencing_token AND "                                                  \
	" batch_lock_is_held(l.released, l.locked_until)), "                                       \
	"'duration_seconds', extract(epoch FROM coalesce(e.end_time, batch_now()) - "              \
	"e.start_time), "                                                                          \
	"'parameters', coalesce((SELECT jsonb_object_agg(p.parameter_name, jsonb_build_object("    \
	"'type', p.parameter_type, 'value', p.parameter_value, 'identifying', p.identifying)) "    \
	"FROM batch_job_execution_params p WHERE p.job_execution_id = e.job_execution_id), "       \
	"'{}'::jsonb))"

/*
 * One partition (worker step execution, alias x; its context xc) as a JSON
 * object. Its lease is only the lease of the lock it runs under while that
 * lock still carries its fencing token and is not released: a released lock
 * (it ended, or was handed back) or one taken over by the next claimant is
 * no lease of this row's owner any more. Negative: the lease ran out and
 * nobody has taken the partition over yet.
 */
#define PARTITION_JSON                                                                             \
	"jsonb_build_object('step_execution_id', x.step_execution_id, "                            \
	"'partition_index', x.partition_index, 'step_name', x.step_name, 'status', x.status, "     \
	"'read_count', x.read_count, 'write_count', x.write_count, "                               \
	"'filter_count', x.filter_count, 'commit_count', x.commit_count, "                         \
	"'rollback_count', x.rollback_count, 'read_skip_count', x.read_skip_count, "               \
	"'write_skip_count', x.write_skip_count, 'process_skip_count', x.process_skip_count, "     \
	"'duplicate_target_write_count', x.duplicate_target_write_count, "                         \
	"'transition_conflict_count', x.transition_conflict_count, "                               \
	"'owner_id', x.owner_id, 'worker', x.worker, 'claim_count', x.claim_count, "               \
	"'lock_name', x.lock_name, 'fencing_token', x.fencing_token, "                             \
	"'lease_left_seconds', (SELECT round(extract(epoch FROM l.locked_until - "                 \
	" batch_now()), 3) FROM batch_lock l WHERE l.lock_name = x.lock_name "                     \
	" AND l.fencing_token = x.fencing_token AND NOT l.released), "                             \
	"'start_time', x.start_time, 'end_time', x.end_time, "                                     \
	"'duration_seconds', extract(epoch FROM coalesce(x.end_time, batch_now()) - "              \
	"x.start_time), "                                                                          \
	"'exit_code', x.exit_code, 'exit_message', x.exit_message, "                               \
	"'partition', xc.serialized_context -> 'partition')"

/*
 * The items execution e read, over its steps that did the reading: plain
 * steps and partitions, not the managers whose partitions did it. The
 * console's per-job chart draws items/s from it.
 */
#define ITEMS_READ                                                                                 \
	"(SELECT coalesce(sum(x.read_count), 0) FROM batch_step_execution x "                      \
	" WHERE x.job_execution_id = e.job_execution_id AND NOT EXISTS (SELECT 1 "                 \
	" FROM batch_step_execution y WHERE y.manager_step_execution_id = x.step_execution_id))"

/*
 * How far the partitions of execution e are (NULL when it has none): the
 * executions listing shows "3/4 done" from it. Served by the step
 * executions' (job_execution_id, step_name) index.
 */
#define PARTITION_SUMMARY_JSON                                                                     \
	"(SELECT CASE WHEN count(*) > 0 THEN jsonb_build_object('total', count(*), "               \
	" 'completed', count(*) FILTER (WHERE x.status = 'COMPLETED'), "                           \
	" 'running', count(*) FILTER (WHERE x.status IN ('STARTED', 'STOPPING')), "                \
	" 'waiting', count(*) FILTER (WHERE x.status = 'STARTING'), "                              \
	" 'failed', count(*) FILTER (WHERE x.status IN ('FAILED', 'ABANDONED', 'UNKNOWN')), "      \
	" 'stopped', count(*) FILTER (WHERE x.status = 'STOPPED')) END "                           \
	" FROM batch_step_execution x WHERE x.job_execution_id = e.job_execution_id "              \
	" AND x.partition_index IS NOT NULL)"

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
	cb__exec_filter f = { 0 };

	f.job_name = job_name;
	f.limit = limit;
	return cb__repo_find_executions(out, conn, &f, err);
}

int cb__repo_find_executions(json_t **out, PGconn *conn, const cb__exec_filter *f, cb_error *err)
{
	char lim[16], before[24];
	const char *p[6] = { f->job_name, lim, f->status, f->from, f->to, NULL };
	PGresult *res;
	int rc;

	*out = NULL;
	snprintf(lim, sizeof(lim), "%d", f->limit > 0 ? f->limit : 20);
	if (f->before > 0) {
		snprintf(before, sizeof(before), "%lld", f->before);
		p[5] = before;
	}
	/* Unset filters are NULL parameters; PQexecParams plans with the values
	 * known, so a NULL filter costs nothing and paging walks the primary key
	 * backwards from `before`. The ids are found first, from keys alone
	 * where they suffice (a rare job/status pair walks its status's
	 * executions with their instance in the key, and each instance's job in
	 * batch_job_instance_name_ix, without visiting the rows it passes over);
	 * only the rows shown are read whole. */
	res = cb__repo_exec(
		conn, "list executions",
		"SELECT coalesce(jsonb_agg(x.j ORDER BY x.id DESC), '[]') FROM ("
		" SELECT e.job_execution_id AS id, " EXECUTION_JSON
		" || jsonb_build_object('partitions', " PARTITION_SUMMARY_JSON
		", 'items_read', " ITEMS_READ ") AS j "
		" FROM (SELECT k.job_execution_id FROM batch_job_execution k"
		"  JOIN batch_job_instance ki ON ki.job_instance_id = k.job_instance_id"
		"  WHERE ($1::text IS NULL OR ki.job_name = $1)"
		"  AND ($3::text IS NULL OR k.status = $3)"
		"  AND ($4::timestamptz IS NULL OR k.create_time >= $4::timestamptz)"
		"  AND ($5::timestamptz IS NULL OR k.create_time <= $5::timestamptz)"
		"  AND ($6::bigint IS NULL OR k.job_execution_id < $6::bigint)"
		"  ORDER BY k.job_execution_id DESC LIMIT $2::int) w"
		" JOIN batch_job_execution e ON e.job_execution_id = w.job_execution_id"
		" JOIN batch_job_instance i ON i.job_instance_id = e.job_instance_id) x",
		6, p, err);
	if (!res)
		return CB_EDB;
	rc = load_json(out, res, "list executions", err);
	PQclear(res);
	return rc;
}

int cb_repo_show_execution(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err)
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
		"  'transition_conflict_count', s.transition_conflict_count,"
		"  'start_time', s.start_time, 'end_time', s.end_time,"
		"  'duration_seconds', extract(epoch FROM coalesce(s.end_time, batch_now())"
		"   - s.start_time),"
		"  'exit_code', s.exit_code, 'exit_message', s.exit_message,"
		"  'context', sc.serialized_context)"
		/* A manager step carries its partitions; they are no steps of their own. */
		"  || CASE WHEN p.parts IS NULL THEN '{}'::jsonb"
		"   ELSE jsonb_build_object('partitions', p.parts) END"
		/* Why its partitions may wait: the definition they need, and the
		 * workers of the job that looked for work lately, with the
		 * definition of the step they have (null: they lack the step). */
		"  || CASE WHEN p.parts IS NULL THEN '{}'::jsonb"
		"   ELSE jsonb_build_object('step_fingerprint', s.step_fingerprint,"
		"    'workers_seen', (SELECT coalesce(jsonb_agg(jsonb_build_object("
		"     'worker', w.worker, 'last_seen', w.last_seen, 'fingerprint',"
		"     (SELECT r->>'fingerprint' FROM jsonb_array_elements(w.runs) AS r"
		"      WHERE r->>'job' = i.job_name AND r->>'step' = s.step_name LIMIT 1))"
		"     ORDER BY w.worker), '[]'::jsonb) FROM batch_partition_worker w"
		"     WHERE w.last_seen > batch_now() - interval '1 minute'"
		"     AND EXISTS (SELECT 1 FROM jsonb_array_elements(w.runs) AS r"
		"      WHERE r->>'job' = i.job_name))) END"
		"  ORDER BY s.step_execution_id)"
		"  FROM batch_step_execution s LEFT JOIN batch_step_execution_context sc"
		"  USING (step_execution_id)"
		"  LEFT JOIN LATERAL (SELECT jsonb_agg(" PARTITION_JSON
		"   ORDER BY x.partition_index) AS parts"
		"   FROM batch_step_execution x LEFT JOIN batch_step_execution_context xc"
		"   ON xc.step_execution_id = x.step_execution_id"
		"   WHERE x.manager_step_execution_id = s.step_execution_id) p ON true"
		"  WHERE s.job_execution_id = e.job_execution_id"
		"  AND s.manager_step_execution_id IS NULL),"
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

/* What stop and abandon decide on, read under the instance's row lock. */
typedef struct exec_state {
	cb_status status;
	char status_name[16];
	long long newest; /* the newest execution of its instance */
	int owner_lost;   /* claims to run, but its lock is gone: dead */
	char owner[200];
	char lease_end[64]; /* its lock's lease end, "" if it has none */
} exec_state;

static void rollback_quietly(PGconn *conn)
{
	PGresult *res = PQexec(conn, "ROLLBACK");

	PQclear(res);
}

/*
 * BEGIN, then pin the execution for an operator's change: lock its instance
 * row (launches of the instance lock it too, so none runs meanwhile), end the
 * lock of a running execution whose lease expired (so that its owner, if it
 * is only frozen, is fenced off and cannot outlive the verdict), then read
 * its state with the execution row locked. @p verb names the change in the
 * audit. On error the transaction is rolled back.
 */
static int pin_execution(exec_state *out, PGconn *conn, const char *id, const char *verb,
			 cb_error *err)
{
	const char *p[2] = { id, verb };
	PGresult *res;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = cb__repo_command(conn, "begin", "BEGIN", 0, NULL, err);
	if (rc < 0)
		return rc;
	res = cb__repo_exec(conn, "lock job instance",
			    "SELECT i.job_instance_id FROM batch_job_instance i "
			    "JOIN batch_job_execution e USING (job_instance_id) "
			    "WHERE e.job_execution_id = $1 FOR UPDATE OF i",
			    1, p, err);
	if (!res) {
		rc = CB_EDB;
		goto fail;
	}
	if (PQntuples(res) == 0) {
		PQclear(res);
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %s", id);
		goto fail;
	}
	PQclear(res);
	/* A dead owner that is only frozen may sit inside a chunk transaction
	 * holding the rows its restart will need: its session ends before the
	 * lock is released, as a takeover would end it (a released lock is
	 * taken without ending anyone). Read without locking the lock row,
	 * which that very session may hold. */
	rc = cb__repo_command(
		conn, "end the session of a dead owner",
		"SELECT s.ended FROM batch_job_execution e JOIN batch_lock l "
		" ON l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token, "
		" LATERAL batch_lock_end_session(l.owner_backend_pid, l.owner_backend_start) s "
		"WHERE e.job_execution_id = $1 AND batch_status_is_live(e.status) "
		" AND NOT l.released AND l.locked_until < batch_now()",
		1, p, err);
	if (rc < 0)
		goto fail;
	/* The release and the lease test are one UPDATE: a heartbeat that
	 * extends the lease first wins (the row no longer matches), and one that
	 * comes after finds the lock released. */
	rc = cb__repo_command(
		conn, "release the lock of a dead owner",
		"WITH u AS (UPDATE batch_lock l SET released = true, "
		" updated_at = batch_now() FROM batch_job_execution e "
		" WHERE e.job_execution_id = $1 "
		" AND batch_status_is_live(e.status) "
		" AND l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token "
		" AND NOT l.released AND l.locked_until < batch_now() "
		" RETURNING l.lock_name, l.owner_id, l.fencing_token, l.locked_until) "
		"INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, "
		" fencing_token, job_execution_id, detail) "
		"SELECT lock_name, owner_id, 'RELEASED', fencing_token, $1::bigint, "
		" format('released for the %s of execution %s: owner lost, lease "
		"  expired at %s', $2::text, $1::text, locked_until) FROM u",
		2, p, err);
	if (rc < 0)
		goto fail;
	res = cb__repo_exec(
		conn, "read job execution",
		"SELECT e.status, (SELECT max(x.job_execution_id) FROM "
		" batch_job_execution x WHERE x.job_instance_id = e.job_instance_id), "
		" batch_status_is_live(e.status) AND "
		" " CB__OWNER_LOST_SQL(
			"e") ", coalesce(e.owner_id, ''), "
			     " coalesce((SELECT l.locked_until::text FROM batch_lock l "
			     "  WHERE l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token), '') "
			     "FROM batch_job_execution e WHERE e.job_execution_id = $1 FOR UPDATE OF e",
		1, p, err);
	if (!res) {
		rc = CB_EDB;
		goto fail;
	}
	snprintf(out->status_name, sizeof(out->status_name), "%s", PQgetvalue(res, 0, 0));
	out->status = cb_status_parse(out->status_name);
	out->newest = atoll(PQgetvalue(res, 0, 1));
	out->owner_lost = PQgetvalue(res, 0, 2)[0] == 't';
	snprintf(out->owner, sizeof(out->owner), "%s", PQgetvalue(res, 0, 3));
	snprintf(out->lease_end, sizeof(out->lease_end), "%s", PQgetvalue(res, 0, 4));
	PQclear(res);
	return 0;
fail:
	rollback_quietly(conn);
	return rc;
}

/* Run @p sql (parameters: id, then @p extra) and COMMIT; ROLLBACK on error. */
static int change_and_commit(PGconn *conn, const char *what, const char *sql, const char *id,
			     const char *extra, cb_error *err)
{
	const char *p[2] = { id, extra };
	int rc = cb__repo_command(conn, what, sql, extra ? 2 : 1, p, err);

	if (rc == 0)
		rc = cb__repo_command(conn, "commit", "COMMIT", 0, NULL, err);
	if (rc < 0)
		rollback_quietly(conn);
	return rc;
}

/*
 * End a dead execution at its last sign of life: its running steps take
 * @p step_status with message @p step_message ($2), the execution $3 with
 * message $4 (a format() of its owner and last heartbeat), and the stop's
 * @p stop_origin ($6) unless one was recorded already (NULL: none). Then
 * COMMIT.
 */
static int bury(PGconn *conn, const char *id, const char *step_status, const char *step_message,
		const char *status, const char *message_format, const char *stop_origin,
		cb_error *err)
{
	const char *p[6] = { id, step_message, status, message_format, step_status, stop_origin };
	int rc;

	/* Its partitions' claimants' sessions end first (sql/005): a frozen one
	 * would block this burial and keep rows locked from the restart. */
	rc = cb__repo_command(conn, "end the sessions of a dead execution's partitions",
			      "SELECT batch_execution_claimants_end($1)", 1, p, err);
	if (rc < 0) {
		rollback_quietly(conn);
		return rc;
	}
	rc = cb__repo_command(
		conn, "end dead job execution",
		"WITH d AS (SELECT e.job_execution_id, e.owner_id, e.heartbeat_time, "
		" " CB__LAST_SIGN_SQL(
			"e") " AS last_sign "
			     " FROM batch_job_execution e WHERE e.job_execution_id = $1 "
			     " AND batch_status_is_live(e.status)), "
			     "s AS (UPDATE batch_step_execution s SET status = $5, exit_code = $5, "
			     " exit_message = $2, "
			     " end_time = greatest(s.start_time, s.last_updated, d.last_sign), "
			     " last_updated = batch_now(), version = s.version + 1 FROM d "
			     " WHERE s.job_execution_id = d.job_execution_id "
			     " AND batch_status_is_live(s.status)) "
			     "UPDATE batch_job_execution e SET status = $3, exit_code = $3, "
			     " exit_message = left(format($4, d.owner_id, "
			     "  coalesce(d.heartbeat_time::text, 'never')), 2500), "
			     " end_time = d.last_sign, last_updated = batch_now(), "
			     " version = e.version + 1, "
			     " stop_origin = coalesce(e.stop_origin, $6::varchar) "
			     " FROM d WHERE e.job_execution_id = d.job_execution_id",
		6, p, err);
	if (rc == 0)
		rc = cb__repo_command(conn, "remove a dead execution's partition locks",
				      "SELECT batch_execution_partition_locks_drop($1, $2)", 2, p,
				      err);
	if (rc == 0)
		rc = cb__repo_command(conn, "commit", "COMMIT", 0, NULL, err);
	if (rc < 0)
		rollback_quietly(conn);
	return rc;
}

int cb_repo_stop(cb_status *out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	return cb__repo_stop_as(out, conn, job_execution_id, "OPERATOR", err);
}

int cb__repo_stop_as(cb_status *out, PGconn *conn, long long job_execution_id, const char *origin,
		     cb_error *err)
{
	char id[24];
	exec_state st;
	int rc;

	*out = CB_STATUS_UNKNOWN;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	rc = pin_execution(&st, conn, id, "stop", err);
	if (rc < 0)
		return rc;
	if (!cb_status_is_running(st.status)) {
		rollback_quietly(conn);
		return cb_error_set(err, CB_EINVAL,
				    "cannot stop job execution %lld: it is %s (only STARTING or "
				    "STARTED executions can be stopped)",
				    job_execution_id, st.status_name);
	}
	if (st.owner_lost) {
		/* Nobody is left to notice a STOPPING: end it now, restartable. */
		rc = bury(conn, id, "STOPPED", "owner lost; stopped by operator", "STOPPED",
			  "owner lost; stopped by operator (owner %s, last heartbeat at %s)",
			  origin, err);
		if (rc == 0)
			*out = CB_STATUS_STOPPED;
		return rc;
	}
	if (st.status == CB_STATUS_STOPPING) {
		rollback_quietly(conn);
		*out = CB_STATUS_STOPPING;
		return 0;
	}
	/* Who asked, recorded with the move to STOPPING (sql/017): a schedule's
	 * recovery never restarts an operator's stop. */
	rc = change_and_commit(conn, "stop",
			       "UPDATE batch_job_execution SET status = 'STOPPING', "
			       "stop_origin = coalesce(stop_origin, $2::varchar), "
			       "last_updated = batch_now(), version = version + 1 "
			       "WHERE job_execution_id = $1 AND status IN ('STARTING', 'STARTED')",
			       id, origin, err);
	if (rc == 0)
		*out = CB_STATUS_STOPPING;
	return rc;
}

int cb_repo_request_stop(PGconn *conn, long long job_execution_id, cb_error *err)
{
	cb_status ignored;

	return cb_repo_stop(&ignored, conn, job_execution_id, err);
}

int cb_repo_abandon(PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	exec_state st;
	int rc;

	snprintf(id, sizeof(id), "%lld", job_execution_id);
	rc = pin_execution(&st, conn, id, "abandon", err);
	if (rc < 0)
		return rc;
	if (st.status != CB_STATUS_FAILED && st.status != CB_STATUS_STOPPED &&
	    !(cb_status_is_running(st.status) && st.owner_lost)) {
		rollback_quietly(conn);
		if (cb_status_is_running(st.status))
			return cb_error_set(err, CB_EINVAL,
					    "cannot abandon job execution %lld: it is %s and its "
					    "owner %s is alive (lease until %s); stop it, or wait "
					    "for it to end",
					    job_execution_id, st.status_name,
					    st.owner[0] ? st.owner : "(unknown)",
					    st.lease_end[0] ? st.lease_end : "unknown");
		return cb_error_set(err, CB_EINVAL,
				    "cannot abandon job execution %lld: it is %s (only FAILED or "
				    "STOPPED executions, or running ones whose owner was lost, "
				    "can be abandoned)",
				    job_execution_id, st.status_name);
	}
	if (st.newest != job_execution_id) {
		rollback_quietly(conn);
		return cb_error_set(err, CB_EINVAL,
				    "cannot abandon job execution %lld: it is not the newest "
				    "execution of its instance (that is %lld); abandon that one",
				    job_execution_id, st.newest);
	}
	if (st.owner_lost)
		return bury(conn, id, "FAILED", "owner lost", "ABANDONED",
			    "abandoned by operator after its owner %s was lost (last heartbeat "
			    "at %s)",
			    NULL, err);
	return change_and_commit(conn, "abandon",
				 "UPDATE batch_job_execution SET status = 'ABANDONED', "
				 "exit_code = 'ABANDONED', last_updated = batch_now(), "
				 "end_time = coalesce(end_time, batch_now()), "
				 "version = version + 1 "
				 "WHERE job_execution_id = $1 AND status IN ('FAILED', 'STOPPED')",
				 id, NULL, err);
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
			    "WHERE e.job_execution_id = $1",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}
