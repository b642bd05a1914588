/* A schedule's backfill (schedule_repo.h, sql/020_backfill.sql): the
 * schedule as a backfill needs it, times read in its zone, the firings
 * created and canceled. */
#include "repo.h"
#include "schedule_repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LL(buf, v) snprintf((buf), sizeof(buf), "%lld", (long long)(v))

int cb__repo_schedule_for_backfill(cb__backfill_target *out, PGconn *conn, const char *name,
				   cb_error *err)
{
	const char *p[1] = { name };
	PGresult *res;

	memset(out, 0, sizeof(*out));
	res = cb__repo_exec(conn, "read a schedule to backfill",
			    "SELECT schedule_id, version, cron_expression, time_zone, "
			    " overlap_policy, parameters::text, paused, "
			    " extract(epoch FROM batch_now()), job_name "
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
	snprintf(out->cron, sizeof(out->cron), "%s", PQgetvalue(res, 0, 2));
	snprintf(out->zone, sizeof(out->zone), "%s", PQgetvalue(res, 0, 3));
	snprintf(out->overlap, sizeof(out->overlap), "%s", PQgetvalue(res, 0, 4));
	out->parameters = json_loads(PQgetvalue(res, 0, 5), 0, NULL);
	out->paused = PQgetvalue(res, 0, 6)[0] == 't';
	out->now = strtod(PQgetvalue(res, 0, 7), NULL);
	snprintf(out->job_name, sizeof(out->job_name), "%s", PQgetvalue(res, 0, 8));
	PQclear(res);
	if (!out->parameters)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

int cb__repo_zone_time(double *out, PGconn *conn, const char *text, int has_offset,
		       const char *zone, const char *what, cb_error *err)
{
	const char *p[3] = { text, zone, has_offset ? "t" : "f" };
	PGresult *res;

	/* Text without an offset is a civil time of the zone; the server's own
	 * zone rules read it, as they read every instant of a schedule. */
	res = cb__repo_exec(conn, what,
			    "SELECT extract(epoch FROM CASE WHEN $3::boolean THEN $1::timestamptz "
			    " ELSE $1::timestamp AT TIME ZONE $2 END)",
			    3, p, err);
	if (!res) {
		if (strncmp(err->sqlstate, "22", 2) == 0) {
			char why[CB_ERROR_MESSAGE_MAX];

			snprintf(why, sizeof(why), "%s", err->message);
			cb_error_clear(err);
			return cb_error_set(err, CB_EINVAL, "%s '%.100s' is not a time: %s", what,
					    text, why);
		}
		return CB_EDB;
	}
	*out = strtod(PQgetvalue(res, 0, 0), NULL);
	PQclear(res);
	return 0;
}

int cb__repo_schedule_backfill(json_t **out, char *outcome, size_t outcome_size, PGconn *conn,
			       const cb__backfill_target *t, const char *actor, int parallel,
			       const char *instants, cb_error *err)
{
	char id[24], ver[24], par[16];
	const char *p[5] = { id, ver, actor, par, instants };
	PGresult *res;
	json_t *rows;

	*out = NULL;
	outcome[0] = '\0';
	LL(id, t->schedule_id);
	LL(ver, t->version);
	LL(par, parallel);
	res = cb__repo_exec(conn, "backfill a schedule",
			    "SELECT outcome, fire_epoch, firing_id, status, kind "
			    "FROM batch_schedule_backfill(p_schedule_id => $1, p_version => $2, "
			    " p_actor => $3, p_parallel => $4, p_instants => $5::jsonb)",
			    5, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1 && PQgetisnull(res, 0, 1)) {
		snprintf(outcome, outcome_size, "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		return 0;
	}
	if (!(rows = json_array())) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (int i = 0; i < PQntuples(res); i++) {
		json_t *r =
			json_pack("{s:s,s:I,s:I,s:s,s:s}", "outcome", PQgetvalue(res, i, 0),
				  "fire_epoch", (json_int_t)atoll(PQgetvalue(res, i, 1)),
				  "firing_id", (json_int_t)atoll(PQgetvalue(res, i, 2)), "status",
				  PQgetvalue(res, i, 3), "kind", PQgetvalue(res, i, 4));

		if (!r || json_array_append_new(rows, r) < 0) {
			PQclear(res);
			json_decref(rows);
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		}
	}
	PQclear(res);
	snprintf(outcome, outcome_size, "DONE");
	*out = rows;
	return 0;
}

int cb__repo_schedule_backfill_cancel(json_t **out, PGconn *conn, long long schedule_id,
				      const char *actor, cb_error *err)
{
	char id[24];
	const char *p[2] = { id, actor };
	PGresult *res;
	json_t *arr;

	*out = NULL;
	LL(id, schedule_id);
	res = cb__repo_exec(conn, "cancel a schedule's backfill",
			    "SELECT extract(epoch FROM fire_time)::bigint "
			    "FROM batch_schedule_backfill_cancel($1, $2)",
			    2, p, err);
	if (!res)
		return CB_EDB;
	if (!(arr = json_array())) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (int i = 0; i < PQntuples(res); i++)
		if (json_array_append_new(arr, json_integer(atoll(PQgetvalue(res, i, 0)))) < 0) {
			PQclear(res);
			json_decref(arr);
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		}
	PQclear(res);
	*out = arr;
	return 0;
}
