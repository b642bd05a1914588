/*
 * The daily settlement job: for one day (targetDate:date) in one time zone
 * (timeZone:string, default UTC), one row per seller with that day's order
 * total and count, written by upsert keyed by (settlement_date, time_zone,
 * seller_id), so a deliberate rerun (--next) gives the same result, not a
 * doubled one — and counts the rows it found already there as duplicate
 * target writes.
 *
 * The day is the zone's midnight to midnight, computed by the database from
 * the parameter alone: the client session's TimeZone (PGTZ, a role or database
 * setting) plays no part, so every launcher settles the same sums. A zone the
 * database does not know is refused before anything is written.
 *
 *   step settle   keyset pages over the day's per-seller totals (a query)
 *   step report   a tasklet that checks the settled total against the orders
 *                 and leaves both in the job's context
 *
 * The lock is per day: `settlement:<targetDate>`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

enum { COL_SELLER, COL_AMOUNT, COL_COUNT };

static const char *const totals_columns[] = { "seller_id", "amount", "order_count" };
static const char *const totals_key[] = { "seller_id" };
static const char *const daily_columns[] = { "settlement_date", "time_zone", "seller_id",
					     "amount", "order_count" };
static const char *const daily_key[] = { "settlement_date", "time_zone", "seller_id" };

/* The zone's day, whatever the session's TimeZone: local midnight as an instant. */
#define DAY_START "($1::date::timestamp AT TIME ZONE $2::text)"
#define DAY_END "(($1::date + 1)::timestamp AT TIME ZONE $2::text)"

/* The day's orders, per seller. */
static const char totals_query[] =
	"SELECT seller_id, sum(amount) AS amount, count(*)::int AS order_count FROM orders "
	"WHERE ordered_at >= " DAY_START " AND ordered_at < " DAY_END " GROUP BY seller_id";

#define DEFAULT_ZONE "UTC"

/* The settlement's time zone: the parameter, or the documented default. */
static const char *zone_of(const cb_params *params)
{
	const char *z = cb_params_get(params, "timeZone");

	return z ? z : DEFAULT_ZONE;
}

/* A zone the database does not know fails the launch as bad input. */
static int validate(void *ctx, PGconn *conn, const cb_params *params, cb_error *err)
{
	const char *p[1] = { zone_of(params) };
	PGresult *res;
	int rc = 0;

	(void)ctx;
	res = PQexecParams(conn, "SELECT now() AT TIME ZONE $1::text", 1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (state && strcmp(state, "22023") == 0)
			rc = cb_error_set(err, CB_EINVAL, "parameter timeZone: time zone '%s' is "
					  "not known to the database", p[0]);
		else
			rc = cb_pg_error(err, conn, res, "check parameter timeZone");
	}
	PQclear(res);
	return rc;
}

static int bind_daily(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		      cb_error *err)
{
	const cb_row *row = item;
	int rc;

	(void)ctx;
	(void)err;
	rc = cb_values_set(out, 0, cb_params_get(cb_step_context_params(sc), "targetDate"), -1);
	if (rc == 0)
		rc = cb_values_set(out, 1, zone_of(cb_step_context_params(sc)), -1);
	if (rc == 0)
		rc = cb_values_set(out, 2, cb_row_get(row, COL_SELLER), cb_row_len(row, COL_SELLER));
	if (rc == 0)
		rc = cb_values_set(out, 3, cb_row_get(row, COL_AMOUNT), cb_row_len(row, COL_AMOUNT));
	if (rc == 0)
		rc = cb_values_set(out, 4, cb_row_get(row, COL_COUNT), cb_row_len(row, COL_COUNT));
	return rc;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	const char *qparams[2];
	int rc;

	(void)user;
	qparams[0] = cb_params_get(cb_step_context_params(sc), "targetDate");
	qparams[1] = zone_of(cb_step_context_params(sc));
	ro.table = "seller_totals";
	ro.query = totals_query;
	ro.query_params = qparams;
	ro.nquery_params = 2;
	ro.columns = totals_columns;
	ro.ncolumns = 3;
	ro.key_columns = totals_key;
	ro.nkeys = 1;
	rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err);
	if (rc < 0)
		return rc;
	uo.table = "settlement_daily";
	uo.columns = daily_columns;
	uo.ncolumns = 5;
	uo.stamp_column = "job_execution_id";
	uo.key_columns = daily_key;
	uo.nkeys = 3;
	uo.bind = bind_daily;
	uo.count_duplicates = 1;
	rc = cb_pg_upsert_writer_new(&parts->writers[0], &uo, err);
	if (rc == 0)
		parts->nwriters = 1;
	return rc;
}

/* Check the settled total against the orders; keep both in the job context. */
static int report(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
		  cb_error *err)
{
	const char *day = cb_params_get(cb_step_context_params(sc), "targetDate");
	const char *p[2] = { day, zone_of(cb_step_context_params(sc)) };
	json_t *jc = cb_step_context_job_context(sc);
	PGresult *res;
	int rc = CB_DONE;

	(void)user;
	(void)context;
	res = PQexecParams(cb_tx_conn(tx),
			   "SELECT (SELECT coalesce(sum(amount), 0) FROM settlement_daily "
			   "        WHERE settlement_date = $1::date AND time_zone = $2)::text, "
			   "       (SELECT coalesce(sum(amount), 0) FROM orders WHERE ordered_at >= "
			   "        " DAY_START " AND ordered_at < " DAY_END ")::text, "
			   "       (SELECT count(*) FROM settlement_daily WHERE settlement_date = "
			   "        $1::date AND time_zone = $2)",
			   2, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, cb_tx_conn(tx), res, "settlement report");
	} else {
		json_object_set_new(jc, "settled_total", json_string(PQgetvalue(res, 0, 0)));
		json_object_set_new(jc, "orders_total", json_string(PQgetvalue(res, 0, 1)));
		json_object_set_new(jc, "sellers", json_integer(atoll(PQgetvalue(res, 0, 2))));
		if (strcmp(PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1)) != 0)
			rc = cb_error_set(err, CB_ERROR, "settlement %s (%s): settled %s but the "
					  "orders total %s", day, p[1], PQgetvalue(res, 0, 0),
					  PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return rc;
}

int settlement_register(cb_registry *reg, cb_error *err)
{
	cb_step_def settle = CB_STEP_DEF_INIT, check = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	rc = cb_job_new(&job, "settlement", err);
	if (rc < 0)
		return rc;
	settle.name = "settle";
	settle.build = build;
	settle.chunk_size = 500;
	check.name = "report";
	check.kind = CB_STEP_TASKLET;
	check.tasklet = report;
	rc = cb_job_add_step(job, &settle, err);
	if (rc == 0)
		rc = cb_job_add_step(job, &check, err);
	if (rc == 0)
		rc = cb_job_add_param(job, "targetDate", CB_PARAM_DATE, 1, err);
	if (rc == 0)
		rc = cb_job_add_param(job, "timeZone", CB_PARAM_STRING, 0, err);
	if (rc == 0)
		rc = cb_job_set_lock(job, "{job}:{targetDate}", CB_DEFAULT_LEASE_SECONDS, 0, err);
	if (rc == 0)
		rc = cb_job_set_description(job, "settle one day's orders per seller "
					    "(targetDate:date, timeZone:string default UTC)", err);
	if (rc < 0) {
		cb_job_free(job);
		return rc;
	}
	cb_job_set_validator(job, validate, NULL);
	return cb_registry_add(reg, job, err);
}
