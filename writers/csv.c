/*
 * The CSV writer (include/cbatch/writers.h): the format callback adds an
 * item's fields to a cb_csv_row, which quotes them straight into the
 * chunk's buffer (file_sink.h); update() writes the buffer to the file.
 */
#include "cbatch/writers.h"
#include "cbatch/readers.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_sink.h"

struct cb_csv_row {
	cb__fsink *sink;
	const unsigned char *special; /* bytes that force quoting */
	char delim;
	int quote_all;
	size_t nfields;
	int error; /* first failure, 0 if none */
};

struct csvw {
	cb__fsink sink;
	char delim;
	char line_end[3];
	size_t line_end_len;
	size_t nheader;
	char *head; /* the header line, formatted */
	size_t head_len;
	cb_csv_format_fn format;
	void *format_ctx;
	int quote_all;
	unsigned char special[256];
};

size_t cb_csv_row_count(const cb_csv_row *row)
{
	return row ? row->nfields : 0;
}

static int row_fail(cb_csv_row *row, int code)
{
	if (!row->error)
		row->error = code;
	return code;
}

int cb_csv_row_add(cb_csv_row *row, const char *value, size_t len)
{
	cb__fsink *s;
	size_t i, nquotes = 0;
	int quote;
	char *dst;

	if (!row)
		return CB_EINVAL;
	if (row->error)
		return row->error;
	s = row->sink;
	if (len > SIZE_MAX / 4)
		return row_fail(row, CB_ENOMEM);
	if (row->nfields > 0 && cb__fsink_append(s, &row->delim, 1) < 0)
		return row_fail(row, CB_ENOMEM);
	row->nfields++;
	if (!value)
		return 0;
	quote = row->quote_all || len == 0;
	for (i = 0; i < len; i++)
		if (row->special[(unsigned char)value[i]]) {
			quote = 1;
			if (value[i] == '"')
				nquotes++;
		}
	if (!quote)
		return cb__fsink_append(s, value, len) < 0 ? row_fail(row, CB_ENOMEM) : 0;
	if (cb__fsink_reserve(s, len + nquotes + 2) < 0)
		return row_fail(row, CB_ENOMEM);
	dst = s->buf + s->len;
	*dst++ = '"';
	if (nquotes == 0) {
		memcpy(dst, value, len);
		dst += len;
	} else {
		for (i = 0; i < len; i++) {
			*dst++ = value[i];
			if (value[i] == '"')
				*dst++ = '"';
		}
	}
	*dst++ = '"';
	s->len = (size_t)(dst - s->buf);
	return 0;
}

int cb_csv_row_add_str(cb_csv_row *row, const char *value)
{
	return cb_csv_row_add(row, value, value ? strlen(value) : 0);
}

int cb_csv_row_add_long(cb_csv_row *row, long long value)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%lld", value);

	return cb_csv_row_add(row, num, (size_t)n);
}

int cb_csv_row_addf(cb_csv_row *row, const char *fmt, ...)
{
	char small[256], *p = small;
	va_list ap;
	int n, rc;

	if (!row)
		return CB_EINVAL;
	if (row->error)
		return row->error;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return row_fail(row, CB_EINVAL);
	if ((size_t)n >= sizeof(small)) {
		p = malloc((size_t)n + 1);
		if (!p)
			return row_fail(row, CB_ENOMEM);
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	rc = cb_csv_row_add(row, p, (size_t)n);
	if (p != small)
		free(p);
	return rc;
}

int cb_csv_format_record(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	const cb_csv_record *r = item;
	size_t i;

	(void)ctx;
	if (!r)
		return cb_error_set(err, CB_EINVAL, "no record to format");
	for (i = 0; i < r->nfields; i++) {
		const cb_csv_field *f = &r->fields[i];

		cb_csv_row_add(row, f->len == 0 && !f->quoted ? NULL : f->data, f->len);
	}
	return 0;
}

static void row_init(cb_csv_row *row, struct csvw *w)
{
	row->sink = &w->sink;
	row->special = w->special;
	row->delim = w->delim;
	row->quote_all = w->quote_all;
	row->nfields = 0;
	row->error = 0;
}

/* The preflight: the file's directory, without creating the file. */
static int cw_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct csvw *w = state;

	return cb__fsink_check(&w->sink, sc, err);
}

static int cw_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct csvw *w = state;

	return cb__fsink_open(&w->sink, sc, saved, w->head, w->head_len, err);
}

static int cw_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	struct csvw *w = state;
	cb_csv_row row;
	size_t i, start, first;
	int rc;

	(void)tx;
	if (w->sink.fd < 0)
		return cb_error_set(err, CB_EINVAL, "CSV writer %s: write before open",
				    w->sink.path);
	first = cb__fsink_begin_write(&w->sink);
	row_init(&row, w);
	for (i = 0; i < n; i++) {
		start = w->sink.len;
		row.nfields = 0;
		row.error = 0;
		rc = w->format(w->format_ctx, items[i], &row, err);
		if (rc >= 0 && row.error)
			rc = cb_error_set(err, row.error, "%s while adding field %zu",
					  row.error == CB_ENOMEM ? "out of memory" : "bad format",
					  row.nfields);
		if (rc >= 0 && w->nheader && row.nfields && row.nfields != w->nheader)
			rc = cb_error_set(err, CB_EINVAL, "%zu fields, but the header has %zu",
					  row.nfields, w->nheader);
		if (rc < 0) {
			if (err && !err->code)
				cb_error_set(err, rc, "format returned %s without a message",
					     cb_strcode(rc));
			cb_error_prefix(err, "CSV writer %s: item %zu of the chunk", w->sink.path,
					i + 1);
			cb__fsink_cut(&w->sink, first);
			return rc;
		}
		if (row.nfields == 0)
			continue;
		/* a lone NULL field would make a blank line, which readers skip */
		if (row.nfields == 1 && w->sink.len == start)
			rc = cb__fsink_append(&w->sink, "\"\"", 2);
		if (!rc)
			rc = cb__fsink_append(&w->sink, w->line_end, w->line_end_len);
		if (rc) {
			cb__fsink_cut(&w->sink, first);
			return cb_error_set(err, CB_ENOMEM, "CSV writer %s: out of memory",
					    w->sink.path);
		}
	}
	return 0;
}

static int cw_update(void *state, json_t *out, cb_error *err)
{
	struct csvw *w = state;

	return cb__fsink_flush(&w->sink, out, err);
}

static void cw_close(void *state)
{
	struct csvw *w = state;

	if (w)
		cb__fsink_close(&w->sink);
}

static void cw_free(void *state)
{
	struct csvw *w = state;

	if (!w)
		return;
	cb__fsink_free(&w->sink);
	free(w->head);
	free(w);
}

/* Format the header row once, into w->head. */
static int make_header(struct csvw *w, const cb_csv_writer_options *opts, cb_error *err)
{
	cb_csv_row row;
	size_t i;

	if (!opts->header || opts->nheader == 0)
		return 0;
	row_init(&row, w);
	for (i = 0; i < opts->nheader; i++) {
		if (!opts->header[i])
			return cb_error_set(err, CB_EINVAL,
					    "CSV writer %s: header name %zu is NULL", opts->path,
					    i + 1);
		cb_csv_row_add_str(&row, opts->header[i]);
	}
	if (row.error || cb__fsink_append(&w->sink, w->line_end, w->line_end_len) < 0)
		return cb_error_set(err, CB_ENOMEM, "CSV writer %s: out of memory", opts->path);
	w->head = w->sink.buf;
	w->head_len = w->sink.len;
	w->sink.buf = NULL;
	w->sink.len = w->sink.cap = 0;
	w->nheader = opts->nheader;
	return 0;
}

/* The outcome of the database transaction, for the file's sake (file_sink.h). */
static void cw_rollback(void *state)
{
	struct csvw *w = state;

	cb__fsink_rollback(&w->sink);
}

static void cw_savepoint(void *state)
{
	struct csvw *w = state;

	cb__fsink_savepoint(&w->sink);
}

static void cw_rollback_to_savepoint(void *state)
{
	struct csvw *w = state;

	cb__fsink_rollback_to_savepoint(&w->sink);
}

static int cw_complete(void *state, cb_error *err)
{
	struct csvw *w = state;

	return cb__fsink_complete(&w->sink, err);
}

int cb_csv_writer_new(cb_writer *out, const cb_csv_writer_options *opts, cb_error *err)
{
	struct csvw *w;
	const char *le;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "CSV writer: no options");
	if (opts->version < 1 || opts->version > CB_CSV_WRITER_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "CSV writer: unsupported options version %u",
				    opts->version);
	if (!opts->path || !opts->path[0])
		return cb_error_set(err, CB_EINVAL, "CSV writer: no path");
	if (opts->delimiter == '"' || opts->delimiter == '\r' || opts->delimiter == '\n')
		return cb_error_set(err, CB_EINVAL,
				    "CSV writer %s: the delimiter cannot be a "
				    "quote or a line break",
				    opts->path);
	le = opts->line_end ? opts->line_end : "\n";
	if (strcmp(le, "\n") != 0 && strcmp(le, "\r\n") != 0)
		return cb_error_set(err, CB_EINVAL,
				    "CSV writer %s: the line end must be \"\\n\" "
				    "or \"\\r\\n\"",
				    opts->path);
	if (opts->nheader && !opts->header)
		return cb_error_set(err, CB_EINVAL, "CSV writer %s: nheader without header",
				    opts->path);
	if (opts->atomic && opts->temp_path && strcmp(opts->temp_path, opts->path) == 0)
		return cb_error_set(err, CB_EINVAL,
				    "CSV writer %s: the temporary path must "
				    "differ from the path",
				    opts->path);

	w = calloc(1, sizeof(*w));
	if (!w)
		return cb_error_set(err, CB_ENOMEM, "CSV writer: out of memory");
	/* if_exists: since version 2 */
	rc = cb__fsink_init(&w->sink, "CSV writer", opts->path, opts->atomic, opts->temp_path,
			    opts->fsync, opts->version >= 2 ? opts->if_exists : CB_FILE_FAIL, err);
	if (rc) {
		free(w);
		return rc;
	}
	w->delim = opts->delimiter ? opts->delimiter : ',';
	memcpy(w->line_end, le, strlen(le) + 1);
	w->line_end_len = strlen(le);
	w->format = opts->format ? opts->format : cb_csv_format_record;
	w->format_ctx = opts->format_ctx;
	w->quote_all = opts->quote_all != 0;
	w->special[(unsigned char)w->delim] = 1;
	w->special['"'] = 1;
	w->special['\r'] = 1;
	w->special['\n'] = 1;
	rc = make_header(w, opts, err);
	if (rc) {
		cw_free(w);
		return rc;
	}

	out->version = CB_WRITER_VERSION;
	out->state = w;
	out->open = cw_open;
	out->write = cw_write;
	out->update = cw_update;
	out->close = cw_close;
	out->free = cw_free;
	out->rollback = cw_rollback;
	out->savepoint = cw_savepoint;
	out->rollback_to_savepoint = cw_rollback_to_savepoint;
	out->complete = cw_complete;
	out->check = cw_check;
	return 0;
}
