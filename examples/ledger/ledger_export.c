/*
 * The ledger export job: the ledger as a CSV file (parameter `file`), in
 * account order, with a header row. The keyset reader resumes after the last
 * committed account and the CSV writer truncates the file to the length its
 * last committed chunk left, so a killed export restarts into an exact file:
 * no line twice, none torn. `-atomic:long=1` writes to "<file>.tmp" and
 * publishes it as the file when the export completes. `file` is a template
 * (e.g. ledger-{job_execution}.csv); an existing file is refused unless
 * `-append:long=1`.
 */
#include "examples.h"

static const char *const cols[] = { "account_id", "seller_id", "amount" };
static const char *const key[] = { "account_id" };

static int format_row(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	const cb_row *r = item;

	(void)ctx, (void)err; /* the row keeps its first error, as cb_values does */
	for (int i = 0; i < 3; i++)
		cb_csv_row_add(row, cb_row_get(r, i), (size_t)cb_row_len(r, i));
	return 0;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_csv_writer_options wo = CB_CSV_WRITER_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user;
	ro.table = "ledger";
	ro.columns = cols;
	ro.ncolumns = CB_COUNT(cols);
	ro.key_columns = key;
	ro.nkeys = CB_COUNT(key);
	if ((rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err)) < 0)
		return rc;
	wo.path = cb_step_param(sc, "file");
	wo.header = cols;
	wo.nheader = CB_COUNT(cols);
	wo.format = format_row;
	wo.atomic = cb_step_param_long(sc, "atomic", 0) != 0;
	if (cb_step_param_long(sc, "append", 0) != 0)
		wo.if_exists = CB_FILE_APPEND;
	if ((rc = cb_csv_writer_new(&w, &wo, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

int ledger_export_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "export";
	step.build = build;
	if ((rc = cb_registry_new_job(&job, reg, "ledger_export", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_add_param(job, "file", CB_PARAM_STRING, 1, err)) < 0)
		return rc;
	return cb_job_set_description(job, "export the ledger to a CSV file (file=PATH)", err);
}
