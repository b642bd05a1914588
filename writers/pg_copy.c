/*
 * The PostgreSQL COPY writer (include/cbatch/writers.h): the chunk's items
 * as one COPY ... FROM STDIN in the chunk's transaction, for append-only
 * targets where COPY's speed outweighs leaving the pipeline for it.
 */
#include "cbatch/writers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_values.h"

struct copyw {
	char *schema, *table;
	char **columns;
	size_t ncolumns;
	cb_bind_fn bind;
	void *bind_ctx;
	char what[200];
	const cb_step_context *sc;
	char *copy_sql;
	cb_values values;
	struct cb_values_col data; /* the chunk's COPY text, reused */
	int opened;
};

static void copy_close(void *state)
{
	struct copyw *w = state;

	cb__values_free(&w->values);
	free(w->copy_sql);
	w->copy_sql = NULL;
	w->opened = 0;
}

static void copy_free(void *state)
{
	struct copyw *w = state;

	if (!w)
		return;
	copy_close(w);
	free(w->data.buf);
	free(w->schema);
	free(w->table);
	cb__strv_free(w->columns, w->ncolumns);
	free(w);
}

static int copy_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct copyw *w = state;
	PGconn *conn = cb_step_context_conn(sc);
	char *qualified = NULL, *q = NULL;
	cb__sql s;
	int rc;

	(void)saved;
	copy_close(w);
	w->sc = sc;
	rc = cb__pg_qualified_name(&qualified, conn, w->schema, w->table, err);
	if (rc == 0)
		rc = cb__sql_open(&s, err);
	if (rc)
		goto done;
	cb__sql_add(&s, "COPY %s (", qualified);
	for (size_t i = 0; i < w->ncolumns && rc == 0; i++) {
		rc = cb_pg_quote_ident(&q, conn, w->columns[i], err);
		if (rc == 0)
			cb__sql_add(&s, "%s%s", i ? ", " : "", q);
		free(q);
		q = NULL;
	}
	cb__sql_add(&s, ") FROM STDIN");
	if (rc) {
		cb__sql_done(&s, &w->copy_sql, NULL);
		goto done;
	}
	rc = cb__sql_done(&s, &w->copy_sql, err);
	if (rc == 0)
		rc = cb__values_init(&w->values, w->ncolumns, (const char *const *)w->columns, NULL,
				     err);
	w->values.copy_mode = 1;
	w->opened = rc == 0;
done:
	free(qualified);
	if (rc)
		cb_error_prefix(err, "%s", w->what);
	return rc;
}

/*
 * The preflight (item.h `check`): the table and its columns against the
 * catalog, and, for columns bound by name, that PostgreSQL takes the
 * reader's values as the COPY will (a text into an integer column: a value
 * that is no number fails at chunk time). Nothing is copied.
 */
static int copy_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct copyw *w = state;
	PGconn *conn = cb_step_context_conn(sc);
	char why[CB_ERROR_MESSAGE_MAX / 2];
	cb__pg_rel r;
	int rc, col, ok = 1;

	if (!conn)
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", w->what);
	rc = cb__pg_rel_load(&r, conn, w->schema, w->table, w->what, err);
	for (size_t i = 0; rc == 0 && i < w->ncolumns; i++) {
		const char *src;

		if ((col = cb__pg_rel_need(&r, w->columns[i], w->what, NULL, err)) < 0) {
			rc = col;
			break;
		}
		src = w->bind ? NULL : cb_step_context_source_type(sc, w->columns[i]);
		if (!src)
			continue;
		if (cb__pg_lossy(why, sizeof(why), src, cb__pg_rel_base_type(&r, col)))
			rc = cb_error_set(err, CB_EINVAL, "%s: column \"%s\": %s", w->what,
					  w->columns[i], why);
		else if ((rc = cb__pg_assignable(&ok, conn, src, cb__pg_rel_base_type(&r, col),
						 err)) == 0 &&
			 !ok)
			rc = cb_error_set(err, CB_EINVAL,
					  "%s: column \"%s\": the reader gives %s, which "
					  "PostgreSQL does not assign to %s (a value that is not "
					  "one fails at chunk time)",
					  w->what, w->columns[i], src, cb__pg_rel_type(&r, col));
	}
	if (r.res)
		cb__pg_rel_free(&r);
	return rc;
}

static int copy_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	struct copyw *w = state;
	int rc;

	if (!w->opened)
		return cb_error_set(err, CB_EINVAL, "%s: write before open", w->what);
	cb__values_reset(&w->values);
	w->data.len = 0;
	for (size_t i = 0; i < n; i++) {
		rc = cb__values_bind(&w->values, w->bind, w->bind_ctx, w->sc, items[i], i, w->what,
				     err);
		if (rc)
			return rc;
		if (cb__values_copy_line(&w->values, &w->data) < 0)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", w->what);
	}
	rc = cb_tx_copy(tx, w->copy_sql, w->data.buf, w->data.len, err);
	if (rc)
		cb_error_prefix(err, "%s", w->what);
	return rc;
}

int cb_pg_copy_writer_new(cb_writer *out, const cb_pg_copy_options *opts, cb_error *err)
{
	struct copyw *w;
	const char *what = "pg copy writer";

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts || opts->version != CB_PG_COPY_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "%s: no options (or of unknown version)", what);
	if (!opts->table || !opts->table[0] || !opts->columns || opts->ncolumns == 0 ||
	    opts->ncolumns > 1000)
		return cb_error_set(err, CB_EINVAL, "%s: needs a table and 1..1000 columns", what);
	for (size_t i = 0; i < opts->ncolumns; i++)
		if (!opts->columns[i] || !opts->columns[i][0])
			return cb_error_set(err, CB_EINVAL, "%s on \"%s\": column %zu is empty",
					    what, opts->table, i + 1);
	w = calloc(1, sizeof(*w));
	if (!w)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	snprintf(w->what, sizeof(w->what), "%s on \"%s%s%s\"", what,
		 opts->schema ? opts->schema : "", opts->schema ? "." : "", opts->table);
	w->schema = opts->schema ? strdup(opts->schema) : NULL;
	w->table = strdup(opts->table);
	if ((opts->schema && !w->schema) || !w->table ||
	    cb__strv_dup(&w->columns, opts->columns, opts->ncolumns) < 0) {
		copy_free(w);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	}
	w->ncolumns = opts->ncolumns;
	w->bind = opts->bind;
	w->bind_ctx = opts->bind_ctx;
	out->version = CB_WRITER_VERSION;
	out->state = w;
	out->open = copy_open;
	out->write = copy_write;
	out->close = copy_close;
	out->free = copy_free;
	out->check = copy_check;
	return 0;
}
