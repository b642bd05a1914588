/*
 * The CSV import job: accounts from a CSV file (parameter `file`) with a
 * header row `id,seller_id,amount`, into the ledger example's `account`
 * table, once each.
 *
 *   reader     CSV (RFC 4180), restartable from the committed byte offset
 *   processor  validates each field; a bad number is invalid input
 *   writer     insert-if-absent by id: an overlap after a crash or a rerun of
 *              the same file adds nothing twice (counted as duplicates)
 *
 * Malformed lines (bad numbers, wrong column count, broken quoting) are
 * skipped and reported, up to a skip limit of 10 (`-skip.limit:long=N` per
 * run); past it the step fails naming the file, line and column.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

static const char *const header[] = { "id", "seller_id", "amount" };
static const char *const columns[] = { "id", "seller_id", "amount" };
static const char *const key[] = { "id" };

/* What the processor hands the writer: views into the record's fields. */
typedef struct account_in {
	const cb_csv_field *id, *seller, *amount;
} account_in;

typedef struct cols {
	long id, seller, amount;
} cols;

static int is_integer(const cb_csv_field *f)
{
	size_t i = f->len && (f->data[0] == '-' || f->data[0] == '+');

	if (i == f->len || f->len > 18)
		return 0;
	for (; i < f->len; i++)
		if (!isdigit((unsigned char)f->data[i]))
			return 0;
	return 1;
}

/* numeric(12,2): up to 10 digits, optionally '.' and 1-2 digits. */
static int is_amount(const cb_csv_field *f)
{
	size_t i = f->len && f->data[0] == '-', digits = 0, frac = 0;
	int dot = 0;

	for (; i < f->len; i++) {
		if (f->data[i] == '.' && !dot) {
			dot = 1;
		} else if (isdigit((unsigned char)f->data[i])) {
			if (dot)
				frac++;
			else
				digits++;
		} else {
			return 0;
		}
	}
	return digits >= 1 && digits <= 10 && frac <= 2 && (!dot || frac >= 1);
}

static int bad_field(cb_error *err, const cb_csv_record *rec, const char *name, long col,
		     const cb_csv_field *f, const char *expected)
{
	(void)rec; /* the engine names the record (file:line) */
	return cb_error_set(err, CB_EINVAL, "column %ld (%s): '%.40s' is not %s", col + 1, name,
			    f->data, expected);
}

static int validate(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	cols *c = state;
	const cb_csv_record *rec = item;
	account_in *a;

	if (c->id < 0) {
		/* The header is the file's: find the columns by name, once. */
		c->id = cb_csv_header_index(rec->header, "id");
		c->seller = cb_csv_header_index(rec->header, "seller_id");
		c->amount = cb_csv_header_index(rec->header, "amount");
		if (c->id < 0 || c->seller < 0 || c->amount < 0)
			return cb_error_set(err, CB_ERROR, "the header lacks id, seller_id or "
					    "amount");
	}
	if (!is_integer(&rec->fields[c->id]))
		return bad_field(err, rec, "id", c->id, &rec->fields[c->id], "an integer");
	if (!is_integer(&rec->fields[c->seller]))
		return bad_field(err, rec, "seller_id", c->seller, &rec->fields[c->seller],
				 "an integer");
	if (!is_amount(&rec->fields[c->amount]))
		return bad_field(err, rec, "amount", c->amount, &rec->fields[c->amount],
				 "an amount like 12.34");
	a = cb_chunk_alloc(chunk, sizeof(*a));
	if (!a)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	a->id = &rec->fields[c->id];
	a->seller = &rec->fields[c->seller];
	a->amount = &rec->fields[c->amount];
	*out = a;
	return 0;
}

static int bind_account(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			cb_error *err)
{
	const account_in *a = item;
	int rc;

	(void)ctx, (void)sc, (void)err;
	rc = cb_values_set(out, 0, a->id->data, (int)a->id->len);
	if (rc == 0)
		rc = cb_values_set(out, 1, a->seller->data, (int)a->seller->len);
	if (rc == 0)
		rc = cb_values_set(out, 2, a->amount->data, (int)a->amount->len);
	return rc;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_csv_options ro = CB_CSV_OPTIONS_INIT;
	cb_pg_upsert_options wo = CB_PG_UPSERT_OPTIONS_INIT;
	cols *c;
	int rc;

	(void)user;
	ro.path = cb_params_get(cb_step_context_params(sc), "file");
	ro.header = 1;
	ro.required_columns = header;
	ro.nrequired = 3;
	rc = cb_csv_reader_new(&parts->reader, &ro, err);
	if (rc < 0)
		return rc;
	c = malloc(sizeof(*c));
	if (!c)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	c->id = c->seller = c->amount = -1;
	parts->processor = (cb_processor){ CB_PROCESSOR_VERSION, c, validate, free };
	wo.table = "account";
	wo.columns = columns;
	wo.ncolumns = 3;
	wo.key_columns = key;
	wo.nkeys = 1;
	wo.bind = bind_account;
	rc = cb_pg_insert_if_absent_writer_new(&parts->writers[0], &wo, err);
	if (rc == 0)
		parts->nwriters = 1;
	return rc;
}

int csv_import_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	rc = cb_job_new(&job, "csv_import", err);
	if (rc < 0)
		return rc;
	step.name = "import";
	step.build = build;
	step.chunk_size = 1000;
	step.skip_limit = 10;
	step.classify = cb_classify_skip_invalid;
	rc = cb_job_add_step(job, &step, err);
	if (rc == 0)
		rc = cb_job_add_param(job, "file", CB_PARAM_STRING, 1, err);
	if (rc == 0)
		rc = cb_job_set_description(job, "import accounts from a CSV file (file=PATH) into "
					    "the ledger example's account table", err);
	if (rc < 0) {
		cb_job_free(job);
		return rc;
	}
	return cb_registry_add(reg, job, err);
}
