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
#include <stdio.h>

#include "examples.h"

static const char *const cols[] = { "account_id", "seller_id", "amount" };
static const char *const key[] = { "account_id" };

static int format_row(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	const cb_row *r = item;

	(void)ctx, (void)err;
	for (int i = 0; i < 3; i++)
		cb_csv_row_add(row, cb_row_get(r, i), (size_t)cb_row_len(r, i));
	return 0;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_csv_writer_options wo = CB_CSV_WRITER_OPTIONS_INIT;
	long long atomic = 0, append = 0;
	int rc;

	(void)user;
	ro.table = "ledger";
	ro.columns = cols;
	ro.ncolumns = 3;
	ro.key_columns = key;
	ro.nkeys = 1;
	rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err);
	if (rc < 0)
		return rc;
	wo.path = cb_params_get(cb_step_context_params(sc), "file");
	wo.header = cols;
	wo.nheader = 3;
	wo.format = format_row;
	if (cb_params_get_long(cb_step_context_params(sc), "atomic", &atomic) == 0)
		wo.atomic = atomic != 0;
	if (cb_params_get_long(cb_step_context_params(sc), "append", &append) == 0 && append)
		wo.if_exists = CB_FILE_APPEND;
	rc = cb_csv_writer_new(&parts->writers[0], &wo, err);
	if (rc == 0)
		parts->nwriters = 1;
	return rc;
}

int ledger_export_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	rc = cb_job_new(&job, "ledger_export", err);
	if (rc < 0)
		return rc;
	step.name = "export";
	step.build = build;
	rc = cb_job_add_step(job, &step, err);
	if (rc == 0)
		rc = cb_job_add_param(job, "file", CB_PARAM_STRING, 1, err);
	if (rc == 0)
		rc = cb_job_set_description(job, "export the ledger to a CSV file (file=PATH)", err);
	if (rc < 0) {
		cb_job_free(job);
		return rc;
	}
	return cb_registry_add(reg, job, err);
}
