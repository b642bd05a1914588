/*
 * The ledger job: post every unprocessed account into the ledger exactly once.
 *
 *   reader     keyset pages of account WHERE NOT processed ORDER BY id
 *   processor  refuses a negative amount (the step fails naming the account)
 *   writers    upsert ledger by account_id; mark the account processed
 *
 * All of it commits in one transaction per chunk with the step's checkpoint.
 */
#include <stdio.h>
#include <string.h>

#include "examples.h"

/* Columns of the reader's rows, in select order. */
enum { COL_ID, COL_SELLER, COL_AMOUNT };

static const char *const account_columns[] = { "id", "seller_id", "amount" };
static const char *const account_key[] = { "id" };
static const char *const ledger_columns[] = { "account_id", "seller_id", "amount" };
static const char *const ledger_key[] = { "account_id" };

static int validate(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	const cb_row *row = item;

	(void)state;
	(void)chunk;
	if (cb_row_get(row, COL_AMOUNT)[0] == '-')
		return cb_error_set(err, CB_EINVAL, "account %s: negative amount %s is invalid input",
				    cb_row_get(row, COL_ID), cb_row_get(row, COL_AMOUNT));
	*out = item;
	return 0;
}

static int bind_ledger(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		       cb_error *err)
{
	const cb_row *row = item;
	int rc;

	(void)ctx;
	(void)sc;
	(void)err;
	rc = cb_values_set(out, 0, cb_row_get(row, COL_ID), cb_row_len(row, COL_ID));
	if (rc == 0)
		rc = cb_values_set(out, 1, cb_row_get(row, COL_SELLER), cb_row_len(row, COL_SELLER));
	if (rc == 0)
		rc = cb_values_set(out, 2, cb_row_get(row, COL_AMOUNT), cb_row_len(row, COL_AMOUNT));
	return rc;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options so = CB_PG_STATUS_OPTIONS_INIT;
	int rc;

	(void)user;
	(void)sc;
	ro.table = "account";
	ro.columns = account_columns;
	ro.ncolumns = 3;
	ro.key_columns = account_key;
	ro.nkeys = 1;
	ro.where = "NOT processed";
	rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err);
	if (rc < 0)
		return rc;

	parts->processor = (cb_processor){ CB_PROCESSOR_VERSION, NULL, validate, NULL };

	uo.table = "ledger";
	uo.columns = ledger_columns;
	uo.ncolumns = 3;
	uo.key_columns = ledger_key;
	uo.nkeys = 1;
	uo.bind = bind_ledger;
	uo.stamp_column = "job_execution_id"; /* one parameter per chunk */
	rc = cb_pg_upsert_writer_new(&parts->writers[0], &uo, err);
	if (rc < 0)
		return rc;
	parts->nwriters = 1;

	so.table = "account";
	so.key_columns = account_key;
	so.nkeys = 1;
	so.set_column = "processed";
	so.set_value = "true";
	rc = cb_pg_status_writer_new(&parts->writers[1], &so, err);
	if (rc < 0)
		return rc;
	parts->nwriters = 2;
	return 0;
}

int ledger_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	rc = cb_job_new(&job, "ledger", err);
	if (rc < 0)
		return rc;
	step.name = "post-accounts";
	step.kind = CB_STEP_CHUNK;
	step.chunk_size = 1000;
	step.build = build;
	rc = cb_job_add_step(job, &step, err);
	if (rc == 0)
		rc = cb_job_set_description(job, "post unprocessed accounts into the ledger, "
					    "exactly once", err);
	/* Every instance works on the same account table: one lock for the job,
	 * whatever its parameters, so that two instances never overlap. */
	if (rc == 0)
		rc = cb_job_set_lock(job, "{job}", CB_DEFAULT_LEASE_SECONDS, 0, err);
	if (rc < 0) {
		cb_job_free(job);
		return rc;
	}
	return cb_registry_add(reg, job, err);
}
