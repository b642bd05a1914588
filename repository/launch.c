/* Job instances and executions: launch, state changes, parameters, contexts. */
#include "repo.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/pg.h"

static int params_json(char **out, const cb_params *params, cb_error *err)
{
	json_t *arr = json_array();
	size_t n = cb_params_count(params);

	*out = NULL;
	if (!arr)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *name, *value;
		cb_param_type type;
		int ident;

		cb_params_at(params, i, &name, &type, &value, &ident);
		if (json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b}", "name", name,
							 "type", cb_param_type_name(type), "value",
							 value, "identifying", ident)) < 0) {
			json_decref(arr);
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		}
	}
	*out = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return *out ? 0 : cb_error_set(err, CB_ENOMEM, "out of memory");
}

static void rollback_quietly(PGconn *conn)
{
	PGresult *res = PQexec(conn, "ROLLBACK");

	PQclear(res);
}

/*
 * The newest execution claims to run. It is dead when the lock it ran under
 * (name, token) is no longer held by it: then mark it and its running steps
 * FAILED, saying why, ended at its last sign of life (not now: a killed
 * execution's duration must not run to its burial). *dead = 0 when its owner
 * still holds its lock, or when it no longer claims to run.
 */
static int bury_if_dead(int *dead, PGconn *conn, long long exec_id, const char *why, cb_error *err)
{
	char id[24];
	const char *p[2] = { id, why };
	PGresult *res;

	*dead = 0;
	snprintf(id, sizeof(id), "%lld", exec_id);
	/* First its partitions' claimants' sessions end (sql/005): a frozen one
	 * keeps its chunk's rows locked, and the burial below and the restart's
	 * partitions would wait on them for as long as it stays frozen. */
	res = cb__repo_exec(conn, "end the sessions of a dead execution's partitions",
			    "SELECT batch_execution_claimants_end(e.job_execution_id), "
			    " batch_partitions_summed(e.job_execution_id) "
			    "FROM batch_job_execution e WHERE e.job_execution_id = $1 "
			    "AND batch_status_is_live(e.status) "
			    "AND " CB__OWNER_LOST_SQL("e"),
			    1, p, err);
	if (!res)
		return CB_EDB;
	PQclear(res);
	res = cb__repo_exec(
		conn, "check owner of running execution",
		"WITH d AS (SELECT e.job_execution_id, e.owner_id, e.heartbeat_time, "
		" " CB__LAST_SIGN_SQL(
			"e") " AS last_sign "
			     " FROM batch_job_execution e WHERE e.job_execution_id = $1 "
			     " AND batch_status_is_live(e.status) "
			     " AND " CB__OWNER_LOST_SQL(
				     "e") "), "
					  "s AS (UPDATE batch_step_execution s SET status = 'FAILED', "
					  " exit_code = 'FAILED', exit_message = 'owner lost', "
					  " end_time = greatest(s.start_time, s.last_updated, d.last_sign), "
					  " last_updated = batch_now(), "
					  " version = s.version + 1 FROM d "
					  " WHERE s.job_execution_id = d.job_execution_id "
					  " AND batch_status_is_live(s.status) RETURNING 1) "
					  "UPDATE batch_job_execution e SET status = 'FAILED', exit_code = 'FAILED', "
					  " exit_message = left(coalesce($2, format('owner %s lost: lease "
					  "  expired, last heartbeat at %s', d.owner_id, d.heartbeat_time)) "
					  "  || '; it ends at its last sign of life', 2500), "
					  " end_time = d.last_sign, last_updated = batch_now(), "
					  " version = e.version + 1 FROM d "
					  "WHERE e.job_execution_id = d.job_execution_id "
					  "RETURNING (SELECT count(*) FROM s)",
		2, p, err);
	if (!res)
		return CB_EDB;
	*dead = PQntuples(res) == 1;
	PQclear(res);
	if (!*dead)
		return 0;
	return cb__repo_command(conn, "remove a dead execution's partition locks",
				"SELECT batch_execution_partition_locks_drop($1, "
				"'its execution was buried (owner lost)')",
				1, p, err);
}

/*
 * A launch, phase by phase, in one transaction: the instance (created or
 * found, and locked), its newest execution, the verdict on it (complete,
 * abandoned, running, dead, restartable), then the new execution with its
 * parameters, context and lock tag. The phases share this struct.
 */
struct launch {
	cb__launch *out;
	PGconn *conn;
	const char *job_name;
	int restartable;
	const char *dead_why;
	cb_error *err;
	char *pjson;         /* the parameters, as batch_job_execution_params rows in JSON */
	char inst[24];       /* the instance's id */
	char prev[24];       /* the execution restarted, "" if none */
	cb_status last;      /* the newest execution's status */
	long long last_id;   /* the newest execution, 0 if none */
	long long abandoned; /* an abandoned execution of the instance, 0 if none */
	int keep_burial;     /* refused, but a dead execution was buried: commit that */
};

/* The DO UPDATE locks the instance row, so launches of one instance queue up
 * here and each sees the executions the previous one made. */
static int launch_instance(struct launch *l, const char *job_key)
{
	const char *p[2] = { l->job_name, job_key };
	PGresult *res = cb__repo_exec(l->conn, "create job instance",
				      "INSERT INTO batch_job_instance (job_name, job_key) "
				      "VALUES ($1, $2) ON CONFLICT (job_name, job_key) DO UPDATE "
				      "SET version = batch_job_instance.version + 1 "
				      "RETURNING job_instance_id, (xmax = 0)",
				      2, p, l->err);

	if (!res)
		return CB_EDB;
	l->out->job_instance_id = atoll(PQgetvalue(res, 0, 0));
	l->out->instance_created = PQgetvalue(res, 0, 1)[0] == 't';
	PQclear(res);
	snprintf(l->inst, sizeof(l->inst), "%lld", l->out->job_instance_id);
	return 0;
}

/* FOR UPDATE: the status read here is the one acted on (its owner cannot end
 * it meanwhile). An abandoned execution anywhere in the instance forbids a
 * restart, not only the newest one. */
static int launch_newest(struct launch *l)
{
	const char *p[1] = { l->inst };
	PGresult *res = cb__repo_exec(l->conn, "find last execution",
				      "SELECT e.job_execution_id, e.status, (SELECT "
				      " max(a.job_execution_id) FROM batch_job_execution a "
				      " WHERE a.job_instance_id = $1 AND a.status = 'ABANDONED') "
				      "FROM batch_job_execution e WHERE e.job_instance_id = $1 "
				      "ORDER BY e.job_execution_id DESC LIMIT 1 FOR UPDATE",
				      1, p, l->err);

	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		l->last_id = atoll(PQgetvalue(res, 0, 0));
		l->last = cb_status_parse(PQgetvalue(res, 0, 1));
		if (!PQgetisnull(res, 0, 2))
			l->abandoned = atoll(PQgetvalue(res, 0, 2));
	}
	PQclear(res);
	return 0;
}

/* The newest execution still claims to run: refused while its owner lives;
 * buried and restarted when its owner is dead. */
static int launch_over_live(struct launch *l)
{
	int dead = 0, rc = bury_if_dead(&dead, l->conn, l->last_id, l->dead_why, l->err);

	if (rc < 0)
		return rc;
	if (!dead)
		return cb_error_set(
			l->err, CB_ERUNNING,
			"job '%s' instance %lld is already running (execution %lld, %s)",
			l->job_name, l->out->job_instance_id, l->last_id, cb_status_name(l->last));
	l->out->dead_owner = 1;
	if (!l->restartable) {
		/* Keep the burial: the execution is dead either way. */
		l->keep_burial = 1;
		return cb_error_set(l->err, CB_ENORESTART,
				    "job '%s' is not restartable: execution %lld of instance %lld "
				    "lost its owner and was marked FAILED",
				    l->job_name, l->last_id, l->out->job_instance_id);
	}
	l->out->restart_of = l->last_id;
	snprintf(l->prev, sizeof(l->prev), "%lld", l->last_id);
	return 0;
}

/*
 * The refusals that are final: once true of an instance they stay true (a
 * complete or abandoned instance gets no new execution; an execution once
 * superseded stays so; a job that cannot restart cannot restart). So they
 * can be decided before the lock is taken, from a plain read, and again
 * under it. @return 0 when none applies, or the refusal.
 */
static int final_refusal(const char *job, long long inst, long long last, cb_status status,
			 int restartable, long long expect_restart_of, cb_error *err)
{
	if (expect_restart_of > 0 && last != expect_restart_of)
		return cb_error_set(err, CB_EINVAL,
				    "execution %lld is not the newest execution of its instance "
				    "(that is %lld): restart the newest one",
				    expect_restart_of, last);
	if (!last)
		return 0;
	switch (status) {
	case CB_STATUS_COMPLETED:
		return cb_error_set(err, CB_ECOMPLETE,
				    "job '%s' instance %lld is already complete (execution "
				    "%lld); use --next for a new instance",
				    job, inst, last);
	case CB_STATUS_ABANDONED:
		return cb_error_set(err, CB_ENORESTART,
				    "job '%s' instance %lld was abandoned (execution %lld) "
				    "and cannot be restarted",
				    job, inst, last);
	case CB_STATUS_FAILED:
	case CB_STATUS_STOPPED:
		if (!restartable)
			return cb_error_set(err, CB_ENORESTART,
					    "job '%s' is not restartable and instance %lld "
					    "already ran (execution %lld, %s)",
					    job, inst, last, cb_status_name(status));
		return 0;
	default:
		return 0;
	}
}

int cb__repo_launch_precheck(PGconn *conn, const char *job_name, const char *job_key,
			     int restartable, long long expect_restart_of, cb_error *err)
{
	const char *p[2] = { job_name, job_key };
	long long inst = 0, last = 0;
	cb_status status = CB_STATUS_UNKNOWN;
	PGresult *res;

	/* No lock, no transaction: what it refuses is final (final_refusal). */
	res = cb__repo_exec(
		conn, "check the instance before its lock",
		"SELECT i.job_instance_id, e.job_execution_id, e.status "
		"FROM batch_job_instance i LEFT JOIN LATERAL (SELECT x.job_execution_id, "
		" x.status FROM batch_job_execution x WHERE x.job_instance_id = "
		" i.job_instance_id ORDER BY x.job_execution_id DESC LIMIT 1) e ON true "
		"WHERE i.job_name = $1 AND i.job_key = $2",
		2, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		inst = atoll(PQgetvalue(res, 0, 0));
		if (!PQgetisnull(res, 0, 1)) {
			last = atoll(PQgetvalue(res, 0, 1));
			status = cb_status_parse(PQgetvalue(res, 0, 2));
		}
	}
	PQclear(res);
	/* A restart of an execution of no instance here is decided under the lock. */
	if (!inst)
		return 0;
	return final_refusal(job_name, inst, last, status, restartable, expect_restart_of, err);
}

/* The verdict on the newest execution: a new instance, a restart, or a refusal. */
static int launch_verdict(struct launch *l, long long expect_restart_of)
{
	const char *job = l->job_name;
	long long inst = l->out->job_instance_id, last = l->last_id;
	int rc;

	rc = final_refusal(job, inst, last, l->last, l->restartable, expect_restart_of, l->err);
	if (rc < 0)
		return rc;
	if (last) {
		switch (l->last) {
		case CB_STATUS_STARTING:
		case CB_STATUS_STARTED:
		case CB_STATUS_STOPPING:
			rc = launch_over_live(l);
			if (rc < 0)
				return rc;
			break;
		case CB_STATUS_FAILED:
		case CB_STATUS_STOPPED:
			l->out->restart_of = last;
			snprintf(l->prev, sizeof(l->prev), "%lld", last);
			/* Its steps end with it, if its process could not say so. */
			{
				const char *p[1] = { l->prev };

				if (cb__repo_command(
					    l->conn, "end the restarted execution's steps",
					    "SELECT batch_steps_end_with_job($1, NULL, NULL)", 1, p,
					    l->err) < 0)
					return CB_EDB;
			}
			break;
		default:
			return cb_error_set(l->err, CB_ENORESTART,
					    "job '%s' instance %lld: last execution %lld is in "
					    "status %s; abandon it first",
					    job, inst, last, cb_status_name(l->last));
		}
	}
	if (l->out->restart_of && l->abandoned) {
		/* A dead execution buried above stays buried either way. */
		l->keep_burial = l->out->dead_owner;
		if (l->keep_burial)
			l->out->restart_of = 0;
		return cb_error_set(
			l->err, CB_ENORESTART,
			"job '%s' instance %lld cannot be restarted: its execution %lld "
			"was abandoned",
			job, inst, l->abandoned);
	}
	return 0;
}

/* The new STARTING execution, its parameters, its context (the restarted
 * execution's) and its lock's tag. */
static int launch_execution(struct launch *l, const char *owner_id, const char *lock_name,
			    long long fencing_token)
{
	char token[24], exec[24];
	const char *prev = l->prev[0] ? l->prev : NULL;
	PGresult *res;
	int rc = 0;

	snprintf(token, sizeof(token), "%lld", fencing_token);
	{
		const char *p[5] = { l->inst, owner_id, prev, lock_name, lock_name ? token : NULL };

		res = cb__repo_exec(
			l->conn, "create job execution",
			"INSERT INTO batch_job_execution (job_instance_id, status, owner_id, "
			"restart_of, heartbeat_time, lock_name, fencing_token) "
			"VALUES ($1, 'STARTING', $2, $3, batch_now(), $4, $5::bigint) "
			"RETURNING job_execution_id",
			5, p, l->err);
	}
	if (!res) {
		/* The partial unique index is the backstop against a racing launch. */
		if (strcmp(l->err->sqlstate, "23505") == 0) {
			cb_error_clear(l->err);
			rc = cb_error_set(l->err, CB_ERUNNING,
					  "job '%s' instance %lld is already running", l->job_name,
					  l->out->job_instance_id);
		} else {
			rc = CB_EDB;
		}
		return rc;
	}
	l->out->job_execution_id = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	snprintf(exec, sizeof(exec), "%lld", l->out->job_execution_id);
	{
		const char *p[2] = { exec, l->pjson };

		rc = cb__repo_command(
			l->conn, "store job parameters",
			"INSERT INTO batch_job_execution_params (job_execution_id, "
			"parameter_name, parameter_type, parameter_value, identifying) "
			"SELECT $1, x.name, x.type, x.value, x.identifying "
			"FROM jsonb_to_recordset($2::jsonb) AS "
			"x(name text, type text, value text, identifying boolean)",
			2, p, l->err);
	}
	if (rc == 0) {
		const char *p[2] = { exec, prev };

		rc = cb__repo_command(l->conn, "create job execution context",
				      "INSERT INTO batch_job_execution_context "
				      "(job_execution_id, serialized_context) SELECT $1, coalesce(("
				      "SELECT serialized_context FROM batch_job_execution_context "
				      "WHERE job_execution_id = $2), '{}')",
				      2, p, l->err);
	}
	if (rc == 0 && lock_name) {
		const char *p[3] = { lock_name, token, exec };

		rc = cb__repo_command(l->conn, "tag lock with execution",
				      "UPDATE batch_lock SET job_execution_id = $3::bigint "
				      "WHERE lock_name = $1 AND fencing_token = $2::bigint",
				      3, p, l->err);
	}
	return rc;
}

int cb__repo_launch(cb__launch *out, PGconn *conn, const char *job_name, const char *job_key,
		    const cb_params *params, int restartable, const char *owner_id,
		    long long expect_restart_of, const char *lock_name, long long fencing_token,
		    const char *dead_why, cb_error *err)
{
	struct launch l = { .out = out,
			    .conn = conn,
			    .job_name = job_name,
			    .restartable = restartable,
			    .dead_why = dead_why,
			    .err = err,
			    .last = CB_STATUS_UNKNOWN };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = params_json(&l.pjson, params, err);
	if (rc == 0)
		rc = cb__repo_command(conn, "begin launch", "BEGIN", 0, NULL, err);
	if (rc < 0) {
		free(l.pjson);
		return rc;
	}
	rc = launch_instance(&l, job_key);
	if (rc == 0)
		rc = launch_newest(&l);
	if (rc == 0)
		rc = launch_verdict(&l, expect_restart_of);
	if (rc == 0)
		rc = launch_execution(&l, owner_id, lock_name, fencing_token);
	if (rc == 0)
		rc = cb__repo_command(conn, "commit launch", "COMMIT", 0, NULL, err);
	if (rc < 0 && l.keep_burial) {
		cb__repo_command(conn, "commit", "COMMIT", 0, NULL, NULL);
	} else if (rc < 0) {
		rollback_quietly(conn);
		out->job_execution_id = 0;
	}
	free(l.pjson);
	return rc;
}

int cb__repo_launch_left(cb__launch *out, long long *token, PGconn *conn, const char *lock_name,
			 const char *owner_id, int lost_pid, cb_error *err)
{
	char pid[16];
	const char *p[3] = { lock_name, owner_id, pid };
	PGresult *res;

	memset(out, 0, sizeof(*out));
	*token = 0;
	snprintf(pid, sizeof(pid), "%d", lost_pid);
	/* The lock records the session that took it; the execution, the lock
	 * and token it was created under. A stop may have come meanwhile. */
	res = cb__repo_exec(conn, "find what a lost launch left",
			    "SELECT l.fencing_token, e.job_execution_id, e.job_instance_id, "
			    "coalesce(e.restart_of, 0) FROM batch_lock l "
			    "LEFT JOIN batch_job_execution e ON e.lock_name = l.lock_name "
			    "AND e.fencing_token = l.fencing_token AND e.owner_id = l.owner_id "
			    "AND e.status IN ('STARTING', 'STOPPING') "
			    "WHERE l.lock_name = $1 AND l.owner_id = $2 "
			    "AND l.owner_backend_pid = $3::int AND NOT l.released",
			    3, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		*token = atoll(PQgetvalue(res, 0, 0));
		if (!PQgetisnull(res, 0, 1)) {
			out->job_execution_id = atoll(PQgetvalue(res, 0, 1));
			out->job_instance_id = atoll(PQgetvalue(res, 0, 2));
			out->restart_of = atoll(PQgetvalue(res, 0, 3));
		}
	}
	PQclear(res);
	return 0;
}

int cb__repo_job_started(cb_status *out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;
	int rc = 0;

	*out = CB_STATUS_UNKNOWN;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	/* Only STARTING starts: a stop that arrived since the launch committed
	 * (STOPPING), or a burial by another process, must not be overwritten. */
	res = cb__repo_exec(conn, "mark job execution started",
			    "UPDATE batch_job_execution SET status = 'STARTED', "
			    "start_time = batch_now(), last_updated = batch_now(), "
			    "version = version + 1 WHERE job_execution_id = $1 "
			    "AND status = 'STARTING' RETURNING status",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		*out = CB_STATUS_STARTED;
		PQclear(res);
		return 0;
	}
	PQclear(res);
	/* Not started: say why. A status once left STARTING never returns to it. */
	res = cb__repo_exec(conn, "read job execution status",
			    "SELECT status FROM batch_job_execution WHERE job_execution_id = $1", 1,
			    p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0) {
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	} else {
		*out = cb_status_parse(PQgetvalue(res, 0, 0));
		if (*out != CB_STATUS_STOPPING)
			rc = cb_error_set(err, CB_EFENCED,
					  "job execution %lld was ended by another process before "
					  "it started (it is %s)",
					  job_execution_id, PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	return rc;
}

int cb__repo_job_finish(PGconn *conn, long long job_execution_id, cb_status status,
			const char *exit_code, const char *exit_message, const char *stop_origin,
			cb_error *err)
{
	char id[24], msg[CB_ERROR_MESSAGE_MAX], code[64];
	const char *p[5] = { id, cb_status_name(status), code, msg,
			     status == CB_STATUS_STOPPED ? stop_origin : NULL };

	/* Text columns refuse invalid UTF-8 (22021): the end must be recorded. */
	cb__utf8_sanitize(msg, sizeof(msg), exit_message);
	cb__utf8_sanitize(code, sizeof(code), exit_code);
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	PGresult *res;
	int rc = 0;

	/* Only an execution that is still live is ours to end: one that another
	 * process buried as dead (owner lost) keeps that verdict, even if this
	 * process wakes up later and finishes its step. */
	/* A step whose end its process could not record (the database went
	 * away past the outage budget) ends with the job, never left STARTED. */
	res = cb__repo_exec(
		conn, "finish job execution",
		"WITH j AS (UPDATE batch_job_execution SET status = $2, exit_code = $3, "
		"exit_message = left($4, 2500), end_time = batch_now(), "
		"last_updated = batch_now(), version = version + 1, "
		"stop_origin = coalesce(stop_origin, $5::varchar) "
		"WHERE job_execution_id = $1 "
		"AND batch_status_is_live(status) RETURNING job_execution_id) "
		"SELECT batch_steps_end_with_job(j.job_execution_id, $2, $4) FROM j",
		5, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_EFENCED,
				  "job execution %lld was ended by another process (owner lost); "
				  "its outcome stands",
				  job_execution_id);
	PQclear(res);
	return rc;
}

static int params_from_result(cb_params **out, const PGresult *res, cb_error *err)
{
	cb_params *p;
	int rc = cb_params_new(&p, err);

	for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
		cb_param_type type;

		rc = cb_param_type_parse(&type, PQgetvalue(res, i, 1));
		if (rc < 0) {
			rc = cb_error_set(err, CB_EINVAL,
					  "stored parameter '%s' has unknown type '%s'",
					  PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
			break;
		}
		rc = cb_params_add(p, PQgetvalue(res, i, 0), type, PQgetvalue(res, i, 2),
				   PQgetvalue(res, i, 3)[0] == 't', err);
	}
	if (rc < 0) {
		cb_params_free(p);
		*out = NULL;
		return rc;
	}
	*out = p;
	return 0;
}

int cb__repo_load_params(cb_params **out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;
	int rc;

	*out = NULL;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	res = cb__repo_exec(conn, "load job parameters",
			    "SELECT parameter_name, parameter_type, parameter_value, identifying "
			    "FROM batch_job_execution_params WHERE job_execution_id = $1 "
			    "ORDER BY parameter_name",
			    1, p, err);
	if (!res)
		return CB_EDB;
	rc = params_from_result(out, res, err);
	PQclear(res);
	return rc;
}

int cb__repo_last_instance_params(cb_params **out, PGconn *conn, const char *job_name,
				  cb_error *err)
{
	const char *p[1] = { job_name };
	PGresult *res;
	long long max_run_id = 0;
	int rc, have_max = 0;

	*out = NULL;
	res = cb__repo_exec(
		conn, "load last instance parameters",
		"SELECT parameter_name, parameter_type, parameter_value, identifying "
		"FROM batch_job_execution_params WHERE job_execution_id = ("
		" SELECT min(e.job_execution_id) FROM batch_job_execution e WHERE "
		" e.job_instance_id = (SELECT max(job_instance_id) FROM batch_job_instance"
		"  WHERE job_name = $1)) ORDER BY parameter_name",
		1, p, err);
	if (!res)
		return CB_EDB;
	rc = PQntuples(res) ? params_from_result(out, res, err) : 0;
	PQclear(res);
	if (rc < 0)
		return rc;
	/* The newest instance need not have the largest run.id (one may have
	 * been given by hand): the largest over all instances is the last one. */
	/* A high-water mark kept when run.id parameters are written
	 * (sql/011_history_scale.sql): one row, however many runs. */
	res = cb__repo_exec(conn, "find largest run.id",
			    "SELECT max_run_id FROM batch_job_summary WHERE job_name = $1", 1, p,
			    err);
	if (!res) {
		rc = CB_EDB;
		goto fail;
	}
	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)) {
		max_run_id = atoll(PQgetvalue(res, 0, 0));
		have_max = 1;
	}
	PQclear(res);
	if (!have_max)
		return 0;
	if (!*out && (rc = cb_params_new(out, err)) < 0)
		goto fail;
	cb_params_remove(*out, "run.id");
	rc = cb_params_add_long(*out, "run.id", max_run_id, 1, err);
	if (rc == 0)
		return 0;
fail:
	cb_params_free(*out);
	*out = NULL;
	return rc;
}

int cb__repo_job_context(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	json_error_t jerr;
	PGresult *res;

	*out = NULL;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	res = cb__repo_exec(conn, "load job context",
			    "SELECT serialized_context FROM batch_job_execution_context "
			    "WHERE job_execution_id = $1",
			    1, p, err);
	if (!res)
		return CB_EDB;
	*out = PQntuples(res) ? json_loads(PQgetvalue(res, 0, 0), 0, &jerr) : json_object();
	PQclear(res);
	if (!*out)
		return cb_error_set(err, CB_EINVAL, "job execution %lld: unreadable context: %s",
				    job_execution_id, jerr.text);
	return 0;
}
