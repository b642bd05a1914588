/*
 * cb_values: one PostgreSQL array literal per column for a whole chunk, and
 * what the PostgreSQL writers share (type lookup, quoting, SQL building).
 *
 * Every element is written double-quoted with '"' and '\' backslash-escaped,
 * so the element text reaches the type's input function unchanged whatever
 * it holds (commas, braces, blanks, the word NULL, non-ASCII UTF-8). SQL NULL
 * is the bare word NULL.
 */
#include "pg_values.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define COL_MIN_CAP 256

static int grow(struct cb_values_col *c, size_t need)
{
	size_t cap;
	char *p;

	if (c->cap >= need)
		return 0;
	cap = c->cap ? c->cap : COL_MIN_CAP;
	while (cap < need) {
		if (cap > ((size_t)-1) / 2)
			return CB_ENOMEM;
		cap *= 2;
	}
	p = realloc(c->buf, cap);
	if (!p)
		return CB_ENOMEM;
	c->buf = p;
	c->cap = cap;
	return 0;
}

/* Record the first failure of a cb_values_set* call; the bind reports it. */
static int fail(cb_values *v, int code, const char *fmt, const char *a)
{
	if (!v->error) {
		v->error = code;
		snprintf(v->error_msg, sizeof(v->error_msg), fmt, a);
	}
	return code;
}

int cb__values_init(cb_values *v, size_t ncols, const char *const *names, const char *delims,
		    cb_error *err)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->ncols = ncols;
	v->names = names;
	v->cols = calloc(ncols ? ncols : 1, sizeof(*v->cols));
	v->map = calloc(ncols ? ncols : 1, sizeof(*v->map));
	if (!v->cols || !v->map)
		goto nomem;
	for (i = 0; i < ncols; i++) {
		v->cols[i].delim = delims ? delims[i] : ',';
		if (grow(&v->cols[i], COL_MIN_CAP) < 0)
			goto nomem;
	}
	cb__values_reset(v);
	return 0;
nomem:
	cb__values_free(v);
	return cb_error_set(err, CB_ENOMEM, "out of memory allocating %zu value buffers", ncols);
}

void cb__values_free(cb_values *v)
{
	size_t i;

	if (!v)
		return;
	if (v->cols)
		for (i = 0; i < v->ncols; i++)
			free(v->cols[i].buf);
	free(v->cols);
	free(v->map);
	memset(v, 0, sizeof(*v));
}

void cb__values_reset(cb_values *v)
{
	size_t i;

	for (i = 0; i < v->ncols; i++) {
		v->cols[i].buf[0] = '{';
		v->cols[i].len = v->copy_mode ? 0 : 1;
		v->cols[i].set = 0;
	}
	v->nitems = 0;
	v->error = 0;
	v->error_msg[0] = '\0';
}

size_t cb_values_count(const cb_values *out)
{
	return out ? out->ncols : 0;
}

const char *cb_values_name(const cb_values *out, size_t col)
{
	if (!out || col >= out->ncols)
		return NULL;
	return out->names[col];
}

/* Claim column @p col for the current item; room for @p body more bytes. */
static int begin_elem(cb_values *v, size_t col, size_t body, struct cb_values_col **out)
{
	struct cb_values_col *c;

	if (v->error)
		return v->error;
	if (col >= v->ncols) {
		char idx[32];

		snprintf(idx, sizeof(idx), "%zu", col);
		return fail(v, CB_EINVAL, "column index %s out of range", idx);
	}
	c = &v->cols[col];
	if (c->set)
		return fail(v, CB_EINVAL, "column \"%s\" set twice", v->names[col]);
	/* delimiter + body + room for the closing "}\0" */
	if (body > ((size_t)-1) - 4 - c->len || grow(c, c->len + body + 4) < 0)
		return fail(v, CB_ENOMEM, "out of memory for column \"%s\"", v->names[col]);
	if (v->nitems > 0 && !v->copy_mode)
		c->buf[c->len++] = c->delim;
	c->set = 1;
	*out = c;
	return 0;
}

/* COPY text format: backslash escapes for the bytes that frame a line. */
static int copy_set(cb_values *out, size_t col, const char *value, size_t n)
{
	struct cb_values_col *c;
	char *dst;
	int rc;

	if (!value) {
		rc = begin_elem(out, col, 2, &c);
		if (rc)
			return rc;
		memcpy(c->buf + c->len, "\\N", 2);
		c->len += 2;
		return 0;
	}
	if (n > (((size_t)-1) - 8) / 2)
		return fail(out, CB_ENOMEM, "value of column \"%s\" is too long",
			    col < out->ncols ? out->names[col] : "?");
	rc = begin_elem(out, col, 2 * n, &c);
	if (rc)
		return rc;
	dst = c->buf + c->len;
	for (size_t i = 0; i < n; i++) {
		char ch = value[i];

		switch (ch) {
		case '\\':
			*dst++ = '\\';
			*dst++ = '\\';
			break;
		case '\t':
			*dst++ = '\\';
			*dst++ = 't';
			break;
		case '\n':
			*dst++ = '\\';
			*dst++ = 'n';
			break;
		case '\r':
			*dst++ = '\\';
			*dst++ = 'r';
			break;
		default:
			*dst++ = ch;
		}
	}
	c->len = (size_t)(dst - c->buf);
	return 0;
}

int cb__values_copy_line(cb_values *v, struct cb_values_col *line)
{
	size_t need = line->len + v->ncols + 2;

	for (size_t i = 0; i < v->ncols; i++)
		need += v->cols[i].len;
	if (grow(line, need) < 0)
		return CB_ENOMEM;
	for (size_t i = 0; i < v->ncols; i++) {
		if (i)
			line->buf[line->len++] = '\t';
		memcpy(line->buf + line->len, v->cols[i].buf, v->cols[i].len);
		line->len += v->cols[i].len;
		v->cols[i].len = 0;
	}
	line->buf[line->len++] = '\n';
	return 0;
}

int cb_values_set(cb_values *out, size_t col, const char *value, int len)
{
	struct cb_values_col *c;
	size_t n, i, run;
	char *dst;
	int rc;

	if (!out)
		return CB_EINVAL;
	if (out->copy_mode) {
		n = value ? (len < 0 ? strlen(value) : (size_t)len) : 0;
		if (value && len >= 0 && memchr(value, '\0', n))
			return fail(out, CB_EINVAL, "value of column \"%s\" contains a NUL byte",
				    col < out->ncols ? out->names[col] : "?");
		return copy_set(out, col, value, n);
	}
	if (!value) {
		rc = begin_elem(out, col, 4, &c);
		if (rc)
			return rc;
		memcpy(c->buf + c->len, "NULL", 4);
		c->len += 4;
		return 0;
	}
	if (len < 0) {
		n = strlen(value);
	} else {
		n = (size_t)len;
		if (memchr(value, '\0', n))
			return fail(out, CB_EINVAL, "value of column \"%s\" contains a NUL byte",
				    col < out->ncols ? out->names[col] : "?");
	}
	/* worst case: every byte escaped, plus the two quotes */
	if (n > (((size_t)-1) - 8) / 2)
		return fail(out, CB_ENOMEM, "value of column \"%s\" is too long",
			    col < out->ncols ? out->names[col] : "?");
	rc = begin_elem(out, col, 2 * n + 2, &c);
	if (rc)
		return rc;
	dst = c->buf + c->len;
	*dst++ = '"';
	i = 0;
	while (i < n) {
		for (run = i; run < n && value[run] != '"' && value[run] != '\\'; run++)
			;
		memcpy(dst, value + i, run - i);
		dst += run - i;
		if (run == n)
			break;
		*dst++ = '\\';
		*dst++ = value[run];
		i = run + 1;
	}
	*dst++ = '"';
	c->len = (size_t)(dst - c->buf);
	return 0;
}

int cb_values_set_long(cb_values *out, size_t col, long long value)
{
	struct cb_values_col *c;
	char num[24];
	int n, rc;

	if (!out)
		return CB_EINVAL;
	n = snprintf(num, sizeof(num), "%lld", value);
	rc = begin_elem(out, col, (size_t)n, &c);
	if (rc)
		return rc;
	memcpy(c->buf + c->len, num, (size_t)n);
	c->len += (size_t)n;
	return 0;
}

/* Map each writer column to the row column of the same (exact) name. */
static int map_row(cb_values *v, const PGresult *res, cb_error *err)
{
	int nf = PQnfields(res);
	size_t i;
	int j;

	v->map_res = NULL;
	for (i = 0; i < v->ncols; i++) {
		for (j = 0; j < nf; j++)
			if (strcmp(PQfname(res, j), v->names[i]) == 0)
				break;
		if (j < nf)
			v->map[i] = j;
		else if (strcmp(v->names[i], "job_execution_id") == 0)
			v->map[i] = -1;
		else
			return cb_error_set(err, CB_EINVAL,
					    "the row has no column \"%s\" (and no bind callback "
					    "provides it)",
					    v->names[i]);
	}
	v->map_res = res;
	v->map_nfields = nf;
	return 0;
}

int cb_bind_row_by_name(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			cb_error *err)
{
	const cb_row *r = item;
	size_t i;
	int rc;

	(void)ctx;
	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_bind_row_by_name: no values");
	if (!r || !r->res)
		return cb_error_set(err, CB_EINVAL,
				    "cb_bind_row_by_name: the item is not a cb_row");
	/* Pages of one reader share their columns; remap when the page changes. */
	if (r->res != out->map_res || PQnfields(r->res) != out->map_nfields) {
		rc = map_row(out, r->res, err);
		if (rc)
			return rc;
	}
	for (i = 0; i < out->ncols; i++) {
		int col = out->map[i];

		if (col < 0) {
			if (!sc)
				return cb_error_set(err, CB_EINVAL,
						    "cb_bind_row_by_name: no step context for "
						    "column \"job_execution_id\"");
			rc = cb_values_set_long(out, i, cb_step_context_job_execution_id(sc));
		} else if (cb_row_isnull(r, col)) {
			rc = cb_values_set(out, i, NULL, 0);
		} else {
			rc = cb_values_set(out, i, cb_row_get(r, col), cb_row_len(r, col));
		}
		if (rc)
			return rc;
	}
	return 0;
}

int cb__values_bind(cb_values *v, cb_bind_fn bind, void *ctx, const cb_step_context *sc,
		    const void *item, size_t index, const char *what, cb_error *err)
{
	size_t i;
	int rc;

	for (i = 0; i < v->ncols; i++)
		v->cols[i].set = 0;
	if (bind)
		rc = bind(ctx, sc, item, v, err);
	else
		rc = cb_bind_row_by_name(ctx, sc, item, v, err);
	if (v->error) {
		/* a cb_values_set* call failed: its message is the precise one */
		cb_error_set(err, v->error, "%s: item %zu of the chunk: %s", what, index + 1,
			     v->error_msg);
		return v->error;
	}
	if (rc < 0) {
		if (err && err->code)
			return cb_error_prefix(err, "%s: item %zu of the chunk", what, index + 1);
		return cb_error_set(err, rc,
				    "%s: bind callback failed for item %zu of the chunk "
				    "and returned %s without a message",
				    what, index + 1, cb_strcode(rc));
	}
	if (rc > 0)
		return cb_error_set(err, CB_ECALLBACK,
				    "%s: bind callback returned %d for item %zu of the chunk "
				    "(expected 0 or a negative code)",
				    what, rc, index + 1);
	for (i = 0; i < v->ncols; i++)
		if (!v->cols[i].set)
			return cb_error_set(err, CB_EINVAL,
					    "%s: bind callback did not set column \"%s\" for "
					    "item %zu of the chunk",
					    what, v->names[i], index + 1);
	v->nitems++;
	return 0;
}

int cb__values_bind_chunk(cb_values *v, cb_bind_fn bind, void *ctx, const cb_step_context *sc,
			  void *const *items, size_t n, const char *what, cb_error *err)
{
	cb__values_reset(v);
	for (size_t i = 0; i < n; i++) {
		int rc = cb__values_bind(v, bind, ctx, sc, items[i], i, what, err);

		if (rc)
			return rc;
	}
	return 0;
}

int cb__values_finish(cb_values *v, const char **params, cb_error *err)
{
	size_t i;

	for (i = 0; i < v->ncols; i++) {
		struct cb_values_col *c = &v->cols[i];

		if (grow(c, c->len + 2) < 0)
			return cb_error_set(err, CB_ENOMEM, "out of memory for column \"%s\"",
					    v->names[i]);
		c->buf[c->len++] = '}';
		c->buf[c->len] = '\0';
		params[i] = c->buf;
	}
	return 0;
}

int cb__sql_open(cb__sql *s, cb_error *err)
{
	s->text = NULL;
	s->len = 0;
	s->f = open_memstream(&s->text, &s->len);
	if (!s->f)
		return cb_error_set(err, CB_ENOMEM, "out of memory building SQL");
	return 0;
}

void cb__sql_add(cb__sql *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(s->f, fmt, ap); /* a failure sets the stream's error flag */
	va_end(ap);
}

int cb__sql_done(cb__sql *s, char **out, cb_error *err)
{
	int bad = ferror(s->f);

	*out = NULL;
	if (fclose(s->f) != 0)
		bad = 1;
	s->f = NULL;
	if (bad || !s->text) {
		free(s->text);
		s->text = NULL;
		return cb_error_set(err, CB_ENOMEM, "out of memory building SQL");
	}
	*out = s->text;
	s->text = NULL;
	return 0;
}

int cb__strv_dup(char ***out, const char *const *v, size_t n)
{
	char **d;
	size_t i;

	*out = NULL;
	if (n == 0)
		return 0;
	d = calloc(n, sizeof(*d));
	if (!d)
		return CB_ENOMEM;
	for (i = 0; i < n; i++) {
		d[i] = strdup(v[i]);
		if (!d[i]) {
			cb__strv_free(d, i);
			return CB_ENOMEM;
		}
	}
	*out = d;
	return 0;
}

void cb__strv_free(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int cb__error_param(const PGresult *res)
{
	const char *ctx = res ? PQresultErrorField(res, PG_DIAG_CONTEXT) : NULL;
	const char *p = ctx ? strstr(ctx, "parameter $") : NULL;
	long n;

	if (!p)
		return 0;
	n = strtol(p + strlen("parameter $"), NULL, 10);
	return n > 0 && n < 100000 ? (int)n : 0;
}

int cb__writer_error(cb_error *err, PGconn *conn, const PGresult *res, const char *what,
		     const char *keys, const char *(*param_column)(void *ctx, int n), void *ctx,
		     const char *fallback_column, const char *extra)
{
	char label[CB_ERROR_MESSAGE_MAX];
	const char *column = res ? PQresultErrorField(res, PG_DIAG_COLUMN_NAME) : NULL;
	int n;

	if ((!column || !*column) && param_column && (n = cb__error_param(res)) > 0)
		column = param_column(ctx, n);
	if (!column || !*column)
		column = fallback_column;
	snprintf(label, sizeof(label), "%s, key (%s)%s%s%s%s%s", what, keys,
		 column ? ", column \"" : "", column ? column : "", column ? "\"" : "",
		 extra ? ": " : "", extra ? extra : "");
	return cb_pg_error(err, conn, res, label);
}
