/*
 * The sales_totals job: add every unprocessed invoice into its customer's
 * total, exactly once, even when two instances run at the same time.
 *
 *   reader     keyset pages of invoice WHERE NOT processed
 *              ORDER BY (customer_id, id), one customer key range per partition
 *   writers    an accumulating upsert of customer_total (total + amount,
 *              invoice_count + 1, least first_at, greatest last_at; the
 *              chunk's invoices of one customer merged first), and a strict
 *              transition of the invoices to processed
 *
 * Both writers commit in the chunk's transaction with its checkpoint. Each
 * instance has its own lock (the lock covers one instance's range: here the
 * whole table, whatever `asOf`), so two instances can overlap, by a schedule
 * firing while the previous one still runs or by hand: the strict transition
 * makes that harmless. An instance whose chunk meets invoices the other one
 * took between its read and its write rolls the chunk back and reads again
 * without them, so no invoice is added twice.
 *
 *   cbatch-examples example-setup sales_totals --rows 100000
 *   cbatch-examples run sales_totals asOf=2026-06-30T12:00:00Z
 *   cbatch-examples schedule add totals --cron '* * * * * *' --job sales_totals \
 *       'asOf={fire_utc}'
 *
 * Parameters: `asOf` (string, identifying, optional: a fire instant or any
 * run label; each value is an instance), `sleepMs:long=N` (declared
 * non-identifying, with or without its '-': each chunk waits N ms inside its
 * transaction, before its writes, to make a run slow in tests), and the reserved `-partition.threads:long=K` /
 * `-chunk.size:long=N`.
 */

#include "examples.h"

static const char *const invoice_columns[] = { "customer_id", "id", "amount", "issued_at", NULL };
static const char *const invoice_key[] = { "customer_id", "id", NULL };
static const char *const invoice_id[] = { "id", NULL };
static const char *const total_columns[] = { "customer_id", "total",   "invoice_count",
					     "first_at",    "last_at", NULL };
static const cb_upsert_mode total_modes[] = { CB_UPSERT_REPLACE, CB_UPSERT_ADD, CB_UPSERT_COUNT,
					      CB_UPSERT_MIN, CB_UPSERT_MAX };
static const char *const total_key[] = { "customer_id", NULL };

/* Columns of the reader's rows, in select order. */
enum {
	COL_CUSTOMER,
	COL_ID,
	COL_AMOUNT,
	COL_AT
};

/* Binding keeps the first error (writers.h): no checks between the calls. */
static int bind_total(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		      cb_error *err)
{
	const cb_row *row = item;

	(void)ctx, (void)sc, (void)err;
	cb_values_set(out, 0, cb_row_get(row, COL_CUSTOMER), cb_row_len(row, COL_CUSTOMER));
	cb_values_set(out, 1, cb_row_get(row, COL_AMOUNT), cb_row_len(row, COL_AMOUNT));
	cb_values_set(out, 2, NULL, 0); /* CB_UPSERT_COUNT: the writer counts */
	cb_values_set(out, 3, cb_row_get(row, COL_AT), cb_row_len(row, COL_AT));
	cb_values_set(out, 4, cb_row_get(row, COL_AT), cb_row_len(row, COL_AT));
	return 0;
}

static int bind_invoice_id(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			   cb_error *err)
{
	const cb_row *row = item;

	(void)ctx, (void)sc, (void)err;
	cb_values_set(out, 0, cb_row_get(row, COL_ID), cb_row_len(row, COL_ID));
	return 0;
}

static int sales_totals_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			      cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options so = CB_PG_STATUS_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user;
	ro.table = "invoice";
	ro.columns = invoice_columns;
	ro.key_columns = invoice_key;
	ro.where = "NOT processed";
	if ((rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err)) < 0)
		return rc;

	if ((rc = example_throttle_add(parts, sc, err)) < 0)
		return rc;

	uo.table = "customer_total";
	uo.columns = total_columns;
	uo.key_columns = total_key;
	uo.modes = total_modes;
	uo.bind = bind_total;
	if ((rc = cb_pg_upsert_writer_new(&w, &uo, err)) < 0 ||
	    (rc = cb_chunk_parts_add_writer(parts, &w, err)) < 0)
		return rc;

	/* Strict by default (options version 3): only invoices not processed
	 * yet move, and a chunk that finds one taken is read again. */
	so.table = "invoice";
	so.key_columns = invoice_id;
	so.set_column = "processed";
	so.set_value = "true";
	so.bind = bind_invoice_id;
	so.max_rereads = 50; /* two instances that overlap chase the same rows */
	if ((rc = cb_pg_status_writer_new(&w, &so, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static int partition(void *user, const cb_step_context *sc, size_t count, json_t *out,
		     cb_error *err)
{
	cb_key_range_options o = CB_KEY_RANGE_OPTIONS_INIT;

	(void)user;
	o.table = "invoice";
	o.key_columns = invoice_key;
	o.where = "NOT processed"; /* balance what is left to do */
	return cb_partition_key_ranges(out, cb_step_context_conn(sc), &o, count, err);
}

int sales_totals_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "add-invoices";
	step.chunk_size = 200;
	step.build = sales_totals_build;
	step.partition = partition;
	step.partitions = 4;
	if ((rc = cb_registry_new_job(&job, reg, "sales_totals", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_add_param(job, "asOf", CB_PARAM_STRING, 0, err)) < 0 ||
	    (rc = cb_job_declare_param(job, "sleepMs", CB_PARAM_LONG, CB_PARAM_NON_IDENTIFYING,
				       err)) < 0)
		return rc;
	return cb_job_set_description(job,
				      "add unprocessed invoices into per-customer totals, each "
				      "once (asOf:string, a fire instant or run label; "
				      "sleepMs:long to slow each chunk down)",
				      err);
}
