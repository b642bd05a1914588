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
#include <stdlib.h>

#include "examples.h"

/* The columns, in the header (any order there) and in the account table. */
enum {
	ID,
	SELLER,
	AMOUNT,
	NCOLS
};
static const char *const columns[] = { "id", "seller_id", "amount", NULL };
static const char *const key[] = { "id", NULL };

/* The processor: where each column is in the file's header. */
typedef struct importer {
	const cb_reader *reader; /* the step's CSV reader (its parts outlive us) */
	long at[NCOLS];
} importer;

/* What the processor hands the writer: the record's fields in table order. */
typedef struct account_in {
	const cb_csv_field *f[NCOLS];
} account_in;

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
		if (f->data[i] == '.' && !dot)
			dot = 1;
		else if (isdigit((unsigned char)f->data[i]))
			*(dot ? &frac : &digits) += 1;
		else
			return 0;
	}
	return digits >= 1 && digits <= 10 && frac <= 2 && (!dot || frac >= 1);
}

/* Once per step, after the reader opened: the header is the file's. */
static int find_columns(void *state, const cb_step_context *sc, cb_error *err)
{
	importer *im = state;
	const cb_csv_header *h = cb_csv_reader_header(im->reader);

	(void)sc, (void)err; /* the reader checked that the header has them all */
	for (int c = ID; c < NCOLS; c++)
		im->at[c] = cb_csv_header_index(h, columns[c]);
	return 0;
}

static int validate(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	static const char *const expected[NCOLS] = { "an integer", "an integer",
						     "an amount like 12.34" };
	const importer *im = state;
	const cb_csv_record *rec = item;
	account_in *a = cb_chunk_alloc(chunk, sizeof(*a));

	if (!a)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	for (int c = ID; c < NCOLS; c++) {
		a->f[c] = &rec->fields[im->at[c]];
		if (!(c == AMOUNT ? is_amount(a->f[c]) : is_integer(a->f[c])))
			/* the engine adds the record's file:line */
			return cb_error_set(err, CB_EINVAL, "column %ld (%s): '%.40s' is not %s",
					    im->at[c] + 1, columns[c], a->f[c]->data, expected[c]);
	}
	*out = a;
	return 0;
}

static int bind_account(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			cb_error *err)
{
	const account_in *a = item;

	(void)ctx, (void)sc, (void)err;
	for (int c = ID; c < NCOLS; c++) /* binding keeps the first error */
		cb_values_set(out, (size_t)c, a->f[c]->data, (int)a->f[c]->len);
	return 0;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_csv_options ro = CB_CSV_OPTIONS_INIT;
	cb_pg_upsert_options wo = CB_PG_UPSERT_OPTIONS_INIT;
	importer *im;
	cb_writer w;
	int rc;

	(void)user;
	ro.path = cb_step_param(sc, "file");
	ro.header = 1;
	ro.required_columns = columns;
	ro.nrequired = NCOLS;
	if ((rc = cb_csv_reader_new(&parts->reader, &ro, err)) < 0)
		return rc;
	if (!(im = calloc(1, sizeof(*im))))
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	im->reader = &parts->reader;
	parts->processor = (cb_processor){ .version = CB_PROCESSOR_VERSION,
					   .state = im,
					   .process = validate,
					   .open = find_columns,
					   .free = free };
	wo.table = "account";
	wo.columns = columns;
	wo.key_columns = key;
	wo.bind = bind_account;
	if ((rc = cb_pg_insert_if_absent_writer_new(&w, &wo, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

int csv_import_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "import";
	step.build = build;
	step.chunk_size = 1000;
	step.skip_limit = 10;
	step.classify = cb_classify_skip_invalid;
	if ((rc = cb_registry_new_job(&job, reg, "csv_import", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_add_param(job, "file", CB_PARAM_STRING, 1, err)) < 0)
		return rc;
	return cb_job_set_description(job,
				      "import accounts from a CSV file (file=PATH) into "
				      "the ledger example's account table",
				      err);
}
