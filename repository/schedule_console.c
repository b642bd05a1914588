/* The console's reads and its "fire now" on schedules (schedule_repo.h,
 * sql/012_schedule_fire_now.sql): the firing history page by page, the
 * schedule as a manual firing needs it, the manual claim. */
#include "repo.h"
#include "schedule_repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LL(buf, v) snprintf((buf), sizeof(buf), "%lld", (long long)(v))

int cb__repo_schedule_firings(json_t **out, PGconn *conn, const char *name, const char *status,
			      long long before, int limit, cb_error *err)
{
	char b[24], l[16];
	const char *p[4] = { name, b, l, status };
	PGresult *res;
	json_t *doc;

	*out = NULL;
	LL(b, before);
	LL(l, limit);
	/* Keyset on firing_id (newest first); a running firing's execution is
	 * found as the scheduler finds it (batch_schedule_firing_execution). */
	res = cb__repo_exec(
		conn, "read schedule firings",
		"SELECT s.schedule_id, coalesce(json_agg(json_build_object("
		" 'firing_id', f.firing_id, 'kind', f.kind, 'fire_time', f.fire_time, "
		" 'missed_until', f.missed_until, 'missed_count', f.missed_count, "
		" 'node_id', f.node_id, 'claimed_at', f.claimed_at, 'status', f.status, "
		" 'job_execution_id', coalesce(f.job_execution_id, x.job_execution_id), "
		" 'execution_status', e.status, 'exit_code', f.exit_code, "
		" 'exit_status', f.exit_status, 'attempt', f.attempt, "
		" 'recover_after', f.recover_after, 'message', f.message, "
		" 'finished_at', f.finished_at) ORDER BY f.firing_id DESC) "
		" FILTER (WHERE f.firing_id IS NOT NULL), '[]')::text "
		"FROM batch_schedule s "
		"LEFT JOIN LATERAL (SELECT * FROM batch_schedule_firing y "
		"  WHERE y.schedule_id = s.schedule_id AND ($2::bigint = 0 OR y.firing_id < $2) "
		"  AND ($4::varchar IS NULL OR y.status = $4) "
		"  ORDER BY y.firing_id DESC LIMIT $3::int) f ON true "
		"LEFT JOIN LATERAL batch_schedule_firing_execution(f.firing_id) x "
		"  ON f.job_execution_id IS NULL "
		"LEFT JOIN batch_job_execution e "
		"  ON e.job_execution_id = coalesce(f.job_execution_id, x.job_execution_id) "
		"WHERE s.schedule_name = $1 GROUP BY s.schedule_id",
		4, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return cb_error_set(err, CB_ENOTFOUND, "no schedule '%s'", name);
	}
	doc = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
	PQclear(res);
	if (!doc)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	*out = doc;
	return 0;
}

int cb__repo_schedule_for_fire(cb__fire_target *out, PGconn *conn, const char *name, cb_error *err)
{
	const char *p[1] = { name };
	PGresult *res;

	memset(out, 0, sizeof(*out));
	res = cb__repo_exec(conn, "read a schedule to fire",
			    "SELECT schedule_id, version, time_zone, parameters::text, paused, "
			    " extract(epoch FROM date_trunc('second', batch_now()))::bigint, "
			    " job_name "
			    "FROM batch_schedule WHERE schedule_name = $1",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return cb_error_set(err, CB_ENOTFOUND, "no schedule '%s'", name);
	}
	out->schedule_id = atoll(PQgetvalue(res, 0, 0));
	out->version = atoll(PQgetvalue(res, 0, 1));
	snprintf(out->zone, sizeof(out->zone), "%s", PQgetvalue(res, 0, 2));
	out->parameters = json_loads(PQgetvalue(res, 0, 3), 0, NULL);
	out->paused = PQgetvalue(res, 0, 4)[0] == 't';
	out->now = atoll(PQgetvalue(res, 0, 5));
	snprintf(out->job, sizeof(out->job), "%s", PQgetvalue(res, 0, 6));
	PQclear(res);
	if (!out->parameters)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

int cb__repo_schedule_fire_now(char *outcome, size_t outcome_size, long long *firing_id, char *why,
			       size_t why_size, PGconn *conn, const cb__fire_target *t,
			       const char *actor, const char *job_key, const char *parameters,
			       cb_error *err)
{
	char id[24], ver[24], at[24];
	const char *p[6] = { id, ver, at, actor, job_key, parameters };
	PGresult *res;

	LL(id, t->schedule_id);
	LL(ver, t->version);
	LL(at, t->now);
	res = cb__repo_exec(conn, "fire a schedule now",
			    "SELECT outcome, firing_id, why "
			    "FROM batch_schedule_fire_now($1, $2, $3, $4, $5, $6::jsonb)",
			    6, p, err);
	if (!res)
		return CB_EDB;
	snprintf(outcome, outcome_size, "%s", PQgetvalue(res, 0, 0));
	*firing_id = PQgetisnull(res, 0, 1) ? 0 : atoll(PQgetvalue(res, 0, 1));
	snprintf(why, why_size, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	return 0;
}

int cb__repo_instance_state(char *state, size_t size, long long *execution_id, PGconn *conn,
			    const char *job_name, const char *job_key, cb_error *err)
{
	const char *p[2] = { job_name, job_key };
	PGresult *res;

	state[0] = '\0';
	*execution_id = 0;
	/* The launcher's rule (launch.c), read without its locks: an abandoned
	 * execution anywhere, or a newest one COMPLETED or running under a lease
	 * that holds, refuses a new run. A run whose owner is dead is not
	 * running: the launcher buries it and restarts. */
	res = cb__repo_exec(
		conn, "read a job instance's state",
		"SELECT CASE WHEN EXISTS (SELECT 1 FROM batch_job_execution a "
		"   WHERE a.job_instance_id = i.job_instance_id AND a.status = 'ABANDONED') "
		"  THEN 'ABANDONED' WHEN e.status = 'COMPLETED' THEN 'COMPLETED' "
		"  WHEN batch_status_is_live(e.status) "
		"   AND batch_schedule_execution_live(e.job_execution_id) THEN 'RUNNING' "
		"  ELSE '' END, e.job_execution_id "
		"FROM batch_job_instance i "
		"JOIN LATERAL (SELECT x.job_execution_id, x.status FROM batch_job_execution x "
		"  WHERE x.job_instance_id = i.job_instance_id "
		"  ORDER BY x.job_execution_id DESC LIMIT 1) e ON true "
		"WHERE i.job_name = $1 AND i.job_key = $2",
		2, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		snprintf(state, size, "%s", PQgetvalue(res, 0, 0));
		*execution_id = atoll(PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return 0;
}
