/* The repository's side of schedules (schedule_repo.h, sql/004_schedules.sql). */
#include "repo.h"
#include "schedule_repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LL(buf, v) snprintf((buf), sizeof(buf), "%lld", (long long)(v))

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

int cb__repo_schedules_load(cb__schedule **out, size_t *n, PGconn *conn, cb_error *err)
{
	PGresult *res;
	cb__schedule *s = NULL;
	int rows;

	*out = NULL;
	*n = 0;
	res = cb__repo_exec(
		conn, "read schedules",
		"SELECT schedule_id, version, schedule_name, cron_expression, time_zone, "
		" job_name, parameters::text, misfire_policy = 'SKIP', "
		" misfire_grace_seconds, paused, "
		" extract(epoch FROM next_fire_time)::bigint, overlap_policy, "
		" recover_policy = 'LEAVE', recover_attempts, recover_delay_seconds "
		"FROM batch_schedule ORDER BY schedule_name",
		0, NULL, err);
	if (!res)
		return CB_EDB;
	rows = PQntuples(res);
	if (rows > 0 && !(s = calloc((size_t)rows, sizeof(*s)))) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (int r = 0; r < rows; r++) {
		cb__schedule *x = &s[r];
		json_error_t je;

		x->id = atoll(PQgetvalue(res, r, 0));
		x->version = atoll(PQgetvalue(res, r, 1));
		copy(x->name, sizeof(x->name), PQgetvalue(res, r, 2));
		copy(x->cron, sizeof(x->cron), PQgetvalue(res, r, 3));
		copy(x->zone, sizeof(x->zone), PQgetvalue(res, r, 4));
		copy(x->job, sizeof(x->job), PQgetvalue(res, r, 5));
		x->parameters = json_loads(PQgetvalue(res, r, 6), 0, &je);
		x->skip_misfires = PQgetvalue(res, r, 7)[0] == 't';
		x->grace_seconds = atoi(PQgetvalue(res, r, 8));
		x->paused = PQgetvalue(res, r, 9)[0] == 't';
		x->has_next = !PQgetisnull(res, r, 10);
		x->next_fire = x->has_next ? atoll(PQgetvalue(res, r, 10)) : 0;
		copy(x->overlap, sizeof(x->overlap), PQgetvalue(res, r, 11));
		x->recover_leave = PQgetvalue(res, r, 12)[0] == 't';
		x->recover_attempts = atoi(PQgetvalue(res, r, 13));
		x->recover_delay = atoi(PQgetvalue(res, r, 14));
		if (!json_is_array(x->parameters)) {
			cb__repo_schedules_free(s, (size_t)rows);
			PQclear(res);
			return cb_error_set(err, CB_ENOMEM, "out of memory reading schedules");
		}
	}
	PQclear(res);
	*out = s;
	*n = (size_t)rows;
	return 0;
}

void cb__repo_schedules_free(cb__schedule *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++)
		json_decref(s[i].parameters);
	free(s);
}

int cb__repo_schedule_add(long long *id, PGconn *conn, const cb__schedule *s, cb_error *err)
{
	char grace[16], next[24], attempts[16], delay[16];
	char *params = json_dumps(s->parameters, JSON_COMPACT);
	const char *p[13] = { s->name,
			      s->cron,
			      s->zone,
			      s->job,
			      params,
			      s->skip_misfires ? "SKIP" : "RUN_ONCE",
			      grace,
			      s->has_next ? next : NULL,
			      s->paused ? "t" : "f",
			      s->overlap[0] ? s->overlap : "SKIP",
			      s->recover_leave ? "LEAVE" : "RESTART",
			      attempts,
			      delay };
	PGresult *res;

	if (!params)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	LL(grace, s->grace_seconds);
	LL(next, s->next_fire);
	LL(attempts, s->recover_attempts);
	LL(delay, s->recover_delay);
	res = cb__repo_exec(
		conn, "add schedule",
		"INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, "
		" job_name, parameters, misfire_policy, misfire_grace_seconds, "
		" next_fire_time, paused, overlap_policy, recover_policy, recover_attempts, "
		" recover_delay_seconds) "
		"VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::int, to_timestamp($8::bigint), "
		" $9::boolean, $10, $11, $12::int, $13::int) RETURNING schedule_id",
		13, p, err);
	free(params);
	if (!res) {
		if (strcmp(err->sqlstate, "23505") == 0) {
			cb_error_clear(err);
			return cb_error_set(err, CB_EINVAL,
					    "schedule '%s' already exists (remove it first, or "
					    "choose another name)",
					    s->name);
		}
		return CB_EDB;
	}
	*id = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__repo_schedule_pause(int *changed, PGconn *conn, const char *name, int paused, int has_next,
			    long long next, cb_error *err)
{
	char nx[24];
	const char *p[4] = { name, paused ? "t" : "f", has_next ? nx : NULL, NULL };
	PGresult *res;
	int rc = 0;

	LL(nx, next);
	/* Only a real change bumps the version: pausing a paused schedule must
	 * not make every node re-read it, nor move its cursor. */
	res = cb__repo_exec(
		conn, paused ? "pause schedule" : "resume schedule",
		"WITH s AS (SELECT schedule_id, paused FROM batch_schedule "
		" WHERE schedule_name = $1 FOR NO KEY UPDATE), "
		"u AS (UPDATE batch_schedule b SET paused = $2::boolean, "
		" version = b.version + 1, updated_at = batch_now(), "
		" next_fire_time = CASE WHEN $2::boolean THEN b.next_fire_time "
		"  ELSE to_timestamp($3::bigint) END "
		" FROM s WHERE b.schedule_id = s.schedule_id AND s.paused <> $2::boolean "
		" RETURNING 1) "
		"SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM u)",
		3, p, err);
	if (!res)
		return CB_EDB;
	if (atoll(PQgetvalue(res, 0, 0)) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no schedule named '%s'", name);
	else if (changed)
		*changed = atoll(PQgetvalue(res, 0, 1)) > 0;
	PQclear(res);
	return rc;
}

int cb__repo_schedule_remove(PGconn *conn, const char *name, cb_error *err)
{
	const char *p[1] = { name };
	PGresult *res =
		cb__repo_exec(conn, "remove schedule",
			      "DELETE FROM batch_schedule WHERE schedule_name = $1", 1, p, err);
	int rc = 0;

	if (!res)
		return CB_EDB;
	if (atoll(PQcmdTuples(res)) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no schedule named '%s'", name);
	PQclear(res);
	return rc;
}

/* Run @p sql (one row, one jsonb column) and parse it into @p out. */
static int json_query(json_t **out, PGconn *conn, const char *what, const char *sql, int n,
		      const char *const *p, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, what, sql, n, p, err);
	json_error_t je;

	*out = NULL;
	if (!res)
		return CB_EDB;
	*out = json_loads(PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "[]", JSON_DECODE_ANY, &je);
	PQclear(res);
	if (!*out)
		return cb_error_set(err, CB_EDB, "%s: the server's JSON did not parse: %s", what,
				    je.text);
	return 0;
}

int cb__repo_schedules_json(json_t **out, PGconn *conn, const char *name, cb_error *err)
{
	const char *p[1] = { name };
	int rc = json_query(
		out, conn, "list schedules",
		"SELECT coalesce(jsonb_agg(jsonb_build_object("
		" 'schedule_id', s.schedule_id, 'name', s.schedule_name, "
		" 'cron', s.cron_expression, 'time_zone', s.time_zone, 'job', s.job_name, "
		" 'parameters', s.parameters, 'misfire_policy', s.misfire_policy, "
		" 'misfire_grace_seconds', s.misfire_grace_seconds, 'paused', s.paused, "
		" 'overlap_policy', s.overlap_policy, 'recover_policy', s.recover_policy, "
		" 'recover_attempts', s.recover_attempts, "
		" 'recover_delay_seconds', s.recover_delay_seconds, "
		" 'next_fire_time', s.next_fire_time, "
		" 'next_fire_epoch', extract(epoch FROM s.next_fire_time)::bigint, "
		" 'last_fire_time', s.last_fire_time, 'created_at', s.created_at, "
		" 'updated_at', s.updated_at, 'version', s.version, "
		" 'last_firing', (SELECT jsonb_build_object('firing_id', f.firing_id, "
		"   'fire_time', f.fire_time, 'kind', f.kind, 'status', f.status, "
		"   'node_id', f.node_id, 'job_execution_id', f.job_execution_id, "
		"   'exit_code', f.exit_code, 'exit_status', f.exit_status, 'message', f.message, "
		"   'attempt', f.attempt, 'recover_after', f.recover_after, "
		"   'instant_count', f.instant_count, "
		"   'last_instant', coalesce(f.last_instant, f.fire_time)) "
		"   FROM batch_schedule_firing f WHERE f.schedule_id = s.schedule_id "
		"   ORDER BY f.fire_time DESC LIMIT 1), "
		/* Counts kept as firings are recorded and removed
		 * (sql/011_history_scale.sql), not counted over the history. */
		" 'firings', (SELECT coalesce(jsonb_object_agg(c.status, c.n), '{}'::jsonb) FROM "
		"   (SELECT b.status, sum(b.n) AS n FROM batch_status_count b "
		"     WHERE b.kind = 'schedule' AND b.subject = s.schedule_id::text "
		"     GROUP BY b.status HAVING sum(b.n) > 0) c)"
		") ORDER BY s.schedule_name), '[]'::jsonb) "
		"FROM batch_schedule s WHERE $1::text IS NULL OR s.schedule_name = $1",
		1, p, err);

	if (rc == 0 && name && json_array_size(*out) == 0) {
		json_decref(*out);
		*out = NULL;
		return cb_error_set(err, CB_ENOTFOUND, "no schedule named '%s'", name);
	}
	return rc;
}

int cb__repo_schedule_history(json_t **out, PGconn *conn, const char *name, long long limit,
			      cb_error *err)
{
	char lim[24];
	const char *p[2] = { name, lim };
	int rc;

	LL(lim, limit);
	/* NULL for a name that does not exist, so that a typo is an error and
	 * not an empty history; in the same statement. */
	rc = json_query(
		out, conn, "read schedule history",
		"SELECT CASE WHEN EXISTS (SELECT 1 FROM batch_schedule WHERE schedule_name = $1) "
		"THEN coalesce((SELECT jsonb_agg(x ORDER BY (x->>'event_id')::bigint DESC) "
		"FROM (SELECT jsonb_build_object('event_id', e.event_id, "
		"  'fire_time', e.fire_time, 'fire_epoch', extract(epoch FROM e.fire_time)::bigint, "
		"  'node_id', e.node_id, 'outcome', e.outcome, 'firing_id', e.firing_id, "
		"  'job_execution_id', e.job_execution_id, 'message', e.message, "
		"  'attempt', e.attempt, 'kind', f.kind, 'instant_count', e.instant_count, "
		"  'last_instant', coalesce(e.last_instant, e.fire_time), "
		"  'recorded_at', e.recorded_at) AS x "
		" FROM batch_schedule_event e JOIN batch_schedule s USING (schedule_id) "
		" LEFT JOIN batch_schedule_firing f ON f.firing_id = e.firing_id "
		" WHERE s.schedule_name = $1 ORDER BY e.event_id DESC LIMIT $2::bigint) q), "
		"'[]'::jsonb) ELSE 'null'::jsonb END",
		2, p, err);
	if (rc == 0 && json_is_null(*out)) {
		json_decref(*out);
		*out = NULL;
		return cb_error_set(err, CB_ENOTFOUND, "no schedule named '%s'", name);
	}
	return rc;
}

int cb__repo_db_now(double *out, PGconn *conn, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, "read the database's clock",
				      "SELECT extract(epoch FROM batch_now())", 0, NULL, err);

	if (!res)
		return CB_EDB;
	*out = strtod(PQgetvalue(res, 0, 0), NULL);
	PQclear(res);
	return 0;
}

int cb__repo_schedule_claim(cb__claim_res *out, PGconn *conn, const cb__claim_req *q, cb_error *err)
{
	char id[24], ver[24], fire[24], mu[24], mc[24], pt[24], nx[24];
	int misfire = strcmp(q->kind, "SCHEDULED") != 0;
	const char *p[11] = { id, ver, fire,    q->kind,    misfire ? mu : NULL, mc,
			      pt, nx,  q->node, q->job_key, q->parameters };
	PGresult *res;
	const char *o;

	memset(out, 0, sizeof(*out));
	LL(id, q->schedule_id);
	LL(ver, q->version);
	LL(fire, q->fire_time);
	LL(mu, q->missed_until);
	LL(mc, q->missed_count);
	LL(pt, q->param_time);
	LL(nx, q->next_fire);
	res = cb__repo_exec(conn, "claim a fire instant",
			    "SELECT outcome, firing_id, claimed_by, "
			    " extract(epoch FROM next_fire_time)::bigint, claimed_kind, "
			    " extract(epoch FROM db_now) "
			    "FROM batch_schedule_claim(p_schedule_id => $1, p_version => $2, "
			    " p_fire_time => to_timestamp($3::bigint), p_kind => $4, "
			    " p_missed_until => to_timestamp($5::bigint), p_missed_count => $6, "
			    " p_param_time => to_timestamp($7::bigint), "
			    " p_next_fire_time => to_timestamp($8::bigint), p_node => $9, "
			    " p_job_key => $10, p_parameters => $11::jsonb)",
			    11, p, err);
	if (!res)
		return CB_EDB;
	o = PQgetvalue(res, 0, 0);
	out->outcome = strcmp(o, "CLAIMED") == 0         ? CB__CLAIM_CLAIMED :
		       strcmp(o, "SKIPPED_CLAIMED") == 0 ? CB__CLAIM_SKIPPED :
		       strcmp(o, "SKIPPED_OVERLAP") == 0 ? CB__CLAIM_OVERLAP :
		       strcmp(o, "QUEUED") == 0          ? CB__CLAIM_QUEUED :
		       strcmp(o, "CHANGED") == 0         ? CB__CLAIM_CHANGED :
							   CB__CLAIM_GONE;
	if (!PQgetisnull(res, 0, 1))
		out->firing_id = atoll(PQgetvalue(res, 0, 1));
	copy(out->claimed_by, sizeof(out->claimed_by), PQgetvalue(res, 0, 2));
	out->has_next = !PQgetisnull(res, 0, 3);
	if (out->has_next)
		out->next_fire = atoll(PQgetvalue(res, 0, 3));
	copy(out->kind, sizeof(out->kind), PQgetvalue(res, 0, 4));
	out->db_now = PQgetisnull(res, 0, 5) ? 0 : strtod(PQgetvalue(res, 0, 5), NULL);
	PQclear(res);
	return 0;
}

int cb__repo_schedule_launch(int *launched, char *found, size_t found_size, PGconn *conn,
			     long long firing_id, const char *node, int pid, const char *message,
			     cb_error *err)
{
	char id[24], ps[16];
	const char *p[4] = { id, node, ps, message };
	PGresult *res;

	*launched = 0;
	if (found_size)
		found[0] = '\0';
	LL(id, firing_id);
	LL(ps, pid);
	res = cb__repo_exec(
		conn, "confirm a claim before its launch",
		"SELECT launched, firing_state FROM batch_schedule_launch($1, $2, $3::int, $4)", 4,
		p, err);
	if (!res)
		return CB_EDB;
	*launched = PQgetvalue(res, 0, 0)[0] == 't';
	copy(found, found_size, PQgetvalue(res, 0, 1));
	PQclear(res);
	return 0;
}

int cb__repo_schedule_bury_dead(long long *buried, PGconn *conn, long long firing_id,
				const char *node, double lease_seconds, const char *how,
				cb_error *err)
{
	char id[24], exec[24], owner[256], lock_name[401], msg[600];
	const char *p[5] = { id, node, exec, owner, msg };
	cb__lock_grant g;
	PGresult *res;
	int has_lock, rc;

	*buried = 0;
	LL(id, firing_id);
	res = cb__repo_exec(conn, "read a firing's execution",
			    "SELECT e.job_execution_id, e.owner_id, e.lock_name "
			    "FROM batch_schedule_firing_execution($1) x "
			    "JOIN batch_job_execution e USING (job_execution_id) "
			    "WHERE batch_status_is_live(e.status) "
			    "AND e.owner_id IS NOT NULL",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return 0;
	}
	LL(exec, atoll(PQgetvalue(res, 0, 0)));
	copy(owner, sizeof(owner), PQgetvalue(res, 0, 1));
	has_lock = !PQgetisnull(res, 0, 2);
	copy(lock_name, sizeof(lock_name), PQgetvalue(res, 0, 2));
	PQclear(res);
	/* Only an owner provably dead: a process of this host that is gone.
	 * One elsewhere has its lease to speak for it. */
	if (cb__owner_gone(owner) != 1)
		return 0;
	if (has_lock) {
		/* The dead-owner takeover: fences the owner off and keeps any
		 * restart out while the execution is buried. */
		if ((rc = cb__lock_acquire(&g, conn, lock_name, cb__owner_id(), lease_seconds,
					   err)) < 0)
			return rc;
		/* Held by a live process: no longer the dead owner's, so the
		 * execution is dead by its lock too; buried without touching it. */
		if (g.outcome == CB__LOCK_HELD)
			has_lock = 0;
	}
	snprintf(msg, sizeof(msg),
		 "owner lost: its process on this host %s without recording the end; buried by "
		 "scheduler node %s",
		 how, node);
	res = cb__repo_exec(conn, "bury a dead child's execution",
			    "SELECT batch_schedule_bury($1, $2, $3::bigint, $4, $5)", 5, p, err);
	rc = res ? 0 : CB_EDB;
	if (res && PQgetvalue(res, 0, 0)[0] == 't')
		*buried = atoll(exec);
	PQclear(res);
	if (has_lock) {
		cb_error ignored = CB_ERROR_INIT;

		if (cb__lock_release(conn, lock_name, cb__owner_id(), g.fencing_token, 0,
				     atoll(exec), rc == 0 ? err : &ignored) < 0)
			rc = CB_EDB;
	}
	return rc;
}

int cb__repo_schedule_launched(PGconn *conn, long long firing_id, const char *node, int pid,
			       const char *message, cb_error *err)
{
	char id[24], ps[16];
	const char *p[4] = { id, node, pid > 0 ? ps : NULL, message };

	LL(id, firing_id);
	LL(ps, pid);
	return cb__repo_command(conn, "record a launch",
				"SELECT batch_schedule_launched($1, $2, $3::int, $4)", 4, p, err);
}

int cb__repo_schedule_finished(long long *exec_id, char *status, PGconn *conn, long long firing_id,
			       const char *node, int exit_code, const char *message, int stopping,
			       cb_error *err)
{
	char id[24], ec[16];
	const char *p[5] = { id, node, ec, message, stopping ? "t" : "f" };
	PGresult *res;

	*exec_id = 0;
	status[0] = '\0';
	LL(id, firing_id);
	LL(ec, exit_code);
	res = cb__repo_exec(conn, "record a firing's end",
			    "SELECT job_execution_id, exit_status "
			    "FROM batch_schedule_finished($1, $2, $3::int, $4, $5::boolean)",
			    5, p, err);
	if (!res)
		return CB_EDB;
	if (!PQgetisnull(res, 0, 0)) {
		*exec_id = atoll(PQgetvalue(res, 0, 0));
		copy(status, 16, PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return 0;
}

int cb__repo_scheduler_heartbeat(double *db_now, PGconn *conn, const char *node, const char *host,
				 int pid, double lease_seconds, int new_session, cb_error *err)
{
	char ps[16], ls[32];
	const char *p[5] = { node, host, ps, ls, new_session ? "true" : "false" };
	PGresult *res;

	LL(ps, pid);
	snprintf(ls, sizeof(ls), "%.3f", lease_seconds);
	res = cb__repo_exec(conn, "scheduler heartbeat",
			    "SELECT extract(epoch FROM batch_scheduler_heartbeat($1, $2, $3::int, "
			    " $4::double precision, $5::boolean))",
			    5, p, err);
	if (!res)
		return CB_EDB;
	*db_now = strtod(PQgetvalue(res, 0, 0), NULL);
	PQclear(res);
	return 0;
}

int cb__repo_scheduler_stopped(PGconn *conn, const char *node, cb_error *err)
{
	const char *p[1] = { node };

	return cb__repo_command(conn, "record the scheduler's stop",
				"SELECT batch_scheduler_stopped($1)", 1, p, err);
}

int cb__repo_schedule_orphans(json_t **out, PGconn *conn, const char *node, cb_error *err)
{
	const char *p[2] = { node, NULL };
	PGresult *res;
	json_t *dead;
	char *dead_text = NULL;
	int rc;

	*out = NULL;
	/* Other nodes with open firings; those of this host whose process is
	 * gone need not wait for their lease. */
	res = cb__repo_exec(conn, "find open firings",
			    "SELECT DISTINCT node_id FROM batch_schedule_firing "
			    "WHERE status IN ('CLAIMED', 'LAUNCHED') AND node_id <> $1",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0) {
		PQclear(res);
		*out = json_array();
		return *out ? 0 : cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	dead = json_array();
	for (int r = 0; dead && r < PQntuples(res); r++)
		if (cb__owner_gone(PQgetvalue(res, r, 0)) == 1)
			json_array_append_new(dead, json_string(PQgetvalue(res, r, 0)));
	PQclear(res);
	if (!dead || !(dead_text = json_dumps(dead, JSON_COMPACT))) {
		json_decref(dead);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	json_decref(dead);
	p[1] = dead_text;
	rc = json_query(out, conn, "mark orphaned firings",
			"SELECT coalesce(jsonb_agg(jsonb_build_object('firing_id', o.firing_id, "
			" 'schedule_id', o.schedule_id, 'fire_time', o.fire_time, "
			" 'node_id', o.node_id, 'job_execution_id', o.job_execution_id, "
			" 'exit_status', o.exit_status)), '[]'::jsonb) "
			"FROM batch_schedule_orphans($1, ARRAY(SELECT jsonb_array_elements_text("
			" $2::jsonb))::varchar[]) o",
			2, p, err);
	free(dead_text);
	return rc;
}

int cb__repo_schedule_take(json_t **out, PGconn *conn, const char *node, const json_t *jobs,
			   int recovery, cb_error *err)
{
	char *names = json_dumps(jobs, JSON_COMPACT);
	const char *p[2] = { node, names };
	int rc;

	*out = NULL;
	if (!names)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	rc = json_query(out, conn, recovery ? "take due restarts" : "take queued firings",
			recovery ? "SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]'::jsonb) FROM "
				   "batch_schedule_take_recovery($1, ARRAY(SELECT "
				   "jsonb_array_elements_text($2::jsonb))::varchar[]) t" :
				   "SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]'::jsonb) FROM "
				   "batch_schedule_take_queued($1, ARRAY(SELECT "
				   "jsonb_array_elements_text($2::jsonb))::varchar[]) t",
			2, p, err);
	free(names);
	return rc;
}
