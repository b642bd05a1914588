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
 *                 and leaves both in the job's context, with the settle step's
 *                 counts (cb_step_context_step_summary: no batch_* SQL)
 *
 * The lock is per day: `settlement:<targetDate>`.
 */
#include <string.h>

#include "examples.h"

static const char *const totals_columns[] = { "seller_id", "amount", "order_count", NULL };
static const char *const totals_key[] = { "seller_id", NULL };
static const char *const daily_columns[] = { "settlement_date", "time_zone",   "seller_id",
					     "amount",          "order_count", NULL };
static const char *const daily_key[] = { "settlement_date", "time_zone", "seller_id", NULL };

/* The zone's day, whatever the session's TimeZone: local midnight as an instant. */
#define DAY_START "($1::date::timestamp AT TIME ZONE $2::text)"
#define DAY_END   "(($1::date + 1)::timestamp AT TIME ZONE $2::text)"

/* The day's orders, per seller. */
static const char totals_query[] =
	"SELECT seller_id, sum(amount) AS amount, count(*)::int AS order_count FROM orders "
	"WHERE ordered_at >= " DAY_START " AND ordered_at < " DAY_END " GROUP BY seller_id";

/* The settlement's time zone: the parameter, or the documented default. */
static const char *zone_of(const cb_params *params)
{
	const char *z = cb_params_get(params, "timeZone");

	return z ? z : "UTC";
}

/* A zone the database does not know fails the launch as bad input: the
 * rule every zone of cbatch's follows (cb_zone_open's check: a name of the
 * server's tz data, no abbreviation, POSIX string or "localtime"). */
static int validate(void *ctx, PGconn *conn, const cb_params *params, cb_error *err)
{
	cb_zone *z = NULL;
	int rc;

	(void)ctx;
	rc = cb_zone_open(&z, conn, zone_of(params), 1, err);
	cb_zone_free(z);
	if (rc < 0)
		cb_error_prefix(err, "parameter timeZone");
	return rc;
}

/* The day and zone, then the reader's row (binding keeps the first error). */
static int bind_daily(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		      cb_error *err)
{
	const cb_row *row = item;

	(void)ctx, (void)err;
	cb_values_set(out, 0, cb_step_param(sc, "targetDate"), -1);
	cb_values_set(out, 1, zone_of(cb_step_context_params(sc)), -1);
	for (int c = 0; c < 3; c++)
		cb_values_set(out, (size_t)c + 2, cb_row_get(row, c), cb_row_len(row, c));
	return 0;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	const char *day_zone[] = { cb_step_param(sc, "targetDate"),
				   zone_of(cb_step_context_params(sc)), NULL };
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user;
	ro.table = "seller_totals";
	ro.query = totals_query;
	ro.query_params = day_zone; /* copied by the reader */
	ro.columns = totals_columns;
	ro.key_columns = totals_key;
	if ((rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err)) < 0)
		return rc;
	uo.table = "settlement_daily";
	uo.columns = daily_columns;
	uo.key_columns = daily_key;
	uo.stamp_column = "job_execution_id";
	uo.bind = bind_daily;
	uo.count_duplicates = 1;
	if ((rc = cb_pg_upsert_writer_new(&w, &uo, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

/*
 * Check the settled total against the orders and keep both in the job
 * context, with what the settle step did in this instance (all its
 * executions, restarts included): sellers written and rows already there.
 */
static int report(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context, cb_error *err)
{
	const char *p[2] = { cb_step_param(sc, "targetDate"), zone_of(cb_step_context_params(sc)) };
	json_t *jc = cb_step_context_job_context(sc);
	cb_step_summary settled;
	const char *got, *want;
	PGresult *res;
	int rc;

	(void)user, (void)context;
	if ((rc = cb_step_context_step_summary(sc, "settle", &settled, err)) < 0)
		return rc;
	res = PQexecParams(
		cb_tx_conn(tx),
		"SELECT (SELECT coalesce(sum(amount), 0) FROM settlement_daily "
		"        WHERE settlement_date = $1::date AND time_zone = $2)::text, "
		"       (SELECT coalesce(sum(amount), 0) FROM orders WHERE ordered_at >= "
		"        " DAY_START " AND ordered_at < " DAY_END ")::text",
		2, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, cb_tx_conn(tx), res, "settlement report");
		PQclear(res);
		return rc;
	}
	got = PQgetvalue(res, 0, 0);
	want = PQgetvalue(res, 0, 1);
	json_object_set_new(jc, "settled_total", json_string(got));
	json_object_set_new(jc, "orders_total", json_string(want));
	json_object_set_new(jc, "sellers", json_integer(settled.write_count));
	json_object_set_new(jc, "already_settled", json_integer(settled.duplicate_count));
	rc = strcmp(got, want) == 0 ? CB_DONE :
				      cb_error_set(err, CB_ERROR,
						   "settlement %s (%s): settled %s "
						   "but the orders total %s",
						   p[0], p[1], got, want);
	PQclear(res);
	return rc;
}

int settlement_register(cb_registry *reg, cb_error *err)
{
	cb_step_def settle = CB_STEP_DEF_INIT, check = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	settle.name = "settle";
	settle.build = build;
	settle.chunk_size = 500;
	check.name = "report";
	check.kind = CB_STEP_TASKLET;
	check.tasklet = report;
	if ((rc = cb_registry_new_job(&job, reg, "settlement", err)) < 0 ||
	    (rc = cb_job_add_step(job, &settle, err)) < 0 ||
	    (rc = cb_job_add_step(job, &check, err)) < 0 ||
	    (rc = cb_job_add_param(job, "targetDate", CB_PARAM_DATE, 1, err)) < 0 ||
	    (rc = cb_job_add_param(job, "timeZone", CB_PARAM_STRING, 0, err)) < 0 ||
	    (rc = cb_job_set_lock(job, "{job}:{targetDate}", CB_DEFAULT_LEASE_SECONDS, 0, err)) < 0)
		return rc;
	cb_job_set_validator(job, validate, NULL);
	return cb_job_set_description(job,
				      "settle one day's orders per seller "
				      "(targetDate:date, timeZone:string default UTC)",
				      err);
}
