/*
 * The ledger job: post every unprocessed account into the ledger exactly once.
 *
 *   reader     keyset pages of account WHERE NOT processed ORDER BY id
 *   processor  refuses a negative amount (the step fails naming the account)
 *   writers    upsert ledger by account_id; mark the account processed
 *
 * All of it commits in one transaction per chunk with the step's checkpoint.
 * `-sleepMs:long=N` (not identifying) makes each chunk wait N ms inside its
 * transaction, before its writes (throttle.c): a slow run for tests.
 */
#include "examples.h"

/* Columns of the reader's rows, in select order. */
enum {
	COL_ID,
	COL_SELLER,
	COL_AMOUNT
};

static const char *const account_columns[] = { "id", "seller_id", "amount", NULL };
static const char *const account_key[] = { "id", NULL };
static const char *const ledger_columns[] = { "account_id", "seller_id", "amount", NULL };
static const char *const ledger_key[] = { "account_id", NULL };

static int validate(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	const cb_row *row = item;

	(void)state, (void)chunk;
	if (cb_row_get(row, COL_AMOUNT)[0] == '-')
		return cb_error_set(err, CB_EINVAL,
				    "account %s: negative amount %s is invalid input",
				    cb_row_get(row, COL_ID), cb_row_get(row, COL_AMOUNT));
	*out = item;
	return 0;
}

/* Binding keeps the first error (writers.h): no checks between the calls. */
static int bind_ledger(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		       cb_error *err)
{
	const cb_row *row = item;

	(void)ctx, (void)sc, (void)err;
	for (int c = COL_ID; c <= COL_AMOUNT; c++)
		cb_values_set(out, (size_t)c, cb_row_get(row, c), cb_row_len(row, c));
	return 0;
}

int ledger_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options so = CB_PG_STATUS_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user;
	ro.table = "account";
	ro.columns = account_columns;
	ro.key_columns = account_key;
	ro.where = "NOT processed";
	if ((rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err)) < 0)
		return rc;
	parts->processor = (cb_processor){ .version = CB_PROCESSOR_VERSION, .process = validate };
	if ((rc = example_throttle_add(parts, sc, err)) < 0)
		return rc;

	uo.table = "ledger";
	uo.columns = ledger_columns;
	uo.key_columns = ledger_key;
	uo.bind = bind_ledger;
	uo.stamp_column = "job_execution_id"; /* one parameter per chunk */
	if ((rc = cb_pg_upsert_writer_new(&w, &uo, err)) < 0 ||
	    (rc = cb_chunk_parts_add_writer(parts, &w, err)) < 0)
		return rc;

	so.table = "account";
	so.key_columns = account_key;
	so.set_column = "processed";
	so.set_value = "true";
	if ((rc = cb_pg_status_writer_new(&w, &so, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

int ledger_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "post-accounts";
	step.chunk_size = 1000;
	step.build = ledger_build;
	if ((rc = cb_registry_new_job(&job, reg, "ledger", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_set_description(job,
					 "post unprocessed accounts into the ledger, "
					 "exactly once",
					 err)) < 0)
		return rc;
	/* The reader takes every unprocessed account, whatever the parameters:
	 * the target range is the whole job, so two instances must never
	 * overlap (a `--next` or a scheduled fire time is another instance). */
	return cb_job_set_lock_scope(job, CB_LOCK_SCOPE_JOB, err);
}
