/*
 * The CSV reader (include/cbatch/readers.h): RFC 4180, streaming.
 *
 * Parsing. Bytes come from one fixed-size read buffer (file_input.h). A
 * record is parsed into a scratch buffer (unquoted bytes, a NUL after each
 * field) and a scratch field table; unquoted runs are copied with one
 * memcpy per run, found with a byte-class table. Only a complete, valid
 * record is copied into chunk storage, so the read buffer never has to keep
 * bytes and memory does not depend on the file's size.
 *
 * Errors. A malformed record records the first error (file:line:col) and
 * the parser goes on to the record's end, storing nothing more: after a
 * syntax error, to the next line break; after an over-long field, through
 * the record as the grammar sees it; after a quoted field open at end of
 * file, back to the line after its opening quote. The caller then marks the
 * position after the bad record, so the next read returns the next record.
 *
 * Chunk storage. Records live in blocks the reader owns. Blocks are not
 * released when a chunk ends but at the first read after it (update or
 * rollback marks the boundary), so a chunk's items stay valid through the
 * commit; regular blocks are then kept for the next chunk, oversized ones
 * (for a record larger than a block) freed.
 */
#include "cbatch/readers.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_input.h"

#define DEFAULT_MAX_FIELD ((size_t)16 << 20)
#define DEFAULT_BUFFER    ((size_t)64 << 10)
#define BLOCK_SIZE        ((size_t)64 << 10)
#define SCRATCH_KEEP      ((size_t)1 << 20) /* scratch kept between chunks */
#define ALIGN             ((size_t) _Alignof(max_align_t))
#define ALIGN_UP(n)       (((n) + ALIGN - 1) & ~(ALIGN - 1))

struct cb_csv_header {
	size_t n;
	char **names;
};

/* A block of chunk storage; the data follows the (aligned) header. */
struct block {
	struct block *next;
	size_t cap, used;
};
#define BLOCK_HDR ALIGN_UP(sizeof(struct block))

struct sfield {
	size_t off, len;
	int quoted;
};

struct csv {
	/* options (copies) */
	char *path;
	char delim;
	int header;
	size_t ncolumns;
	char **required;
	size_t nrequired;
	int keep_empty;
	size_t max_field, max_record, bufsize;
	unsigned char plain_stop[256];  /* bytes that end an unquoted run */
	unsigned char quoted_stop[256]; /* bytes that end a quoted run */
	/* from open */
	int opened;
	cb__fin in;
	cb_csv_header hdr;
	size_t expect; /* fields per record, 0: any */
	/* the record being parsed */
	char *rb;
	size_t rlen, rcap;
	struct sfield *sf;
	size_t nf, fcap;
	size_t rsize; /* memory the record will take */
	int bad;      /* an error is recorded */
	int discard;  /* store nothing more of this record */
	cb__fpos rec; /* where it starts */
	long long rec_col;
	long long fline, fcol;           /* where the current field starts */
	long long extra_line, extra_col; /* where field expect+1 starts */
	long long end_line, end_col;     /* just after the last field */
	/* chunk storage */
	struct block *used, *spare;
	int boundary; /* a chunk ended: recycle storage at the next read */
};

static int csv_read(void *state, cb_tx *tx, void **item, cb_error *err);

static void strv_free(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* ---- chunk storage ------------------------------------------------------- */

static void *chunk_alloc(struct csv *c, size_t n)
{
	struct block *b = c->used;
	void *p;

	n = ALIGN_UP(n);
	if (!b || b->cap - b->used < n) {
		if (n <= BLOCK_SIZE && c->spare) {
			b = c->spare;
			c->spare = b->next;
		} else {
			size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;

			if (cap > SIZE_MAX - BLOCK_HDR)
				return NULL;
			b = malloc(BLOCK_HDR + cap);
			if (!b)
				return NULL;
			b->cap = cap;
		}
		b->used = 0;
		b->next = c->used;
		c->used = b;
	}
	p = (char *)b + BLOCK_HDR + b->used;
	b->used += n;
	return p;
}

/* The chunk ended: its records are dead. Keep regular blocks, free big ones. */
static void chunk_reset(struct csv *c)
{
	struct block *b, *next;

	for (b = c->used; b; b = next) {
		next = b->next;
		if (b->cap == BLOCK_SIZE) {
			b->next = c->spare;
			c->spare = b;
		} else {
			free(b);
		}
	}
	c->used = NULL;
	if (c->rcap > SCRATCH_KEEP) {
		free(c->rb);
		c->rb = NULL;
		c->rcap = 0;
	}
	if (c->fcap > SCRATCH_KEEP / sizeof(struct sfield)) {
		free(c->sf);
		c->sf = NULL;
		c->fcap = 0;
	}
}

static void chunk_free(struct csv *c)
{
	struct block *b, *next;

	chunk_reset(c);
	for (b = c->spare; b; b = next) {
		next = b->next;
		free(b);
	}
	c->spare = NULL;
}

/* ---- parsing ------------------------------------------------------------- */

static void set_error(struct csv *c, cb_error *err, long long line, long long col, const char *fmt,
		      ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 5, 6)))
#endif
	;
static void set_error(struct csv *c, cb_error *err, long long line, long long col, const char *fmt,
		      ...)
{
	char what[256];
	va_list ap;

	if (c->bad)
		return;
	c->bad = 1;
	c->discard = 1;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	cb_error_set(err, CB_EINVAL, "%s:%lld:%lld: %s", c->path, line, col, what);
}

static int nomem(struct csv *c, cb_error *err)
{
	return cb_error_set(err, CB_ENOMEM, "%s:%lld: out of memory for a record", c->path,
			    c->rec.line);
}

static int grow_rb(struct csv *c, size_t need, cb_error *err)
{
	size_t cap;
	char *p;

	if (need <= c->rcap)
		return 0;
	cap = c->rcap ? c->rcap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(c->rb, cap);
	if (!p)
		return nomem(c, err);
	c->rb = p;
	c->rcap = cap;
	return 0;
}

/* Append @p n bytes to the current field. */
static int store(struct csv *c, const void *p, size_t n, cb_error *err)
{
	struct sfield *f;
	int rc;

	if (c->discard || n == 0)
		return 0;
	f = &c->sf[c->nf];
	if (n > c->max_field - f->len) {
		set_error(c, err, c->fline, c->fcol, "field %zu is longer than %zu bytes",
			  c->nf + 1, c->max_field);
		return 0;
	}
	if (n > c->max_record - c->rsize) {
		set_error(c, err, c->rec.line, c->rec_col, "record is larger than %zu bytes",
			  c->max_record);
		return 0;
	}
	rc = grow_rb(c, c->rlen + n + 1, err);
	if (rc)
		return rc;
	memcpy(c->rb + c->rlen, p, n);
	c->rlen += n;
	c->rsize += n;
	f->len += n;
	return 0;
}

static int begin_field(struct csv *c, cb_error *err)
{
	cb__fin *in = &c->in;

	if (c->expect && c->nf == c->expect) {
		c->extra_line = in->line;
		c->extra_col = cb__fin_col(in);
	}
	c->fline = in->line;
	c->fcol = cb__fin_col(in);
	if (c->discard)
		return 0;
	if (sizeof(cb_csv_field) + 1 > c->max_record - c->rsize) {
		set_error(c, err, c->rec.line, c->rec_col, "record is larger than %zu bytes",
			  c->max_record);
		return 0;
	}
	if (c->nf == c->fcap) {
		size_t cap = c->fcap ? c->fcap * 2 : 16;
		struct sfield *p = realloc(c->sf, cap * sizeof(*p));

		if (!p)
			return nomem(c, err);
		c->sf = p;
		c->fcap = cap;
	}
	c->sf[c->nf].off = c->rlen;
	c->sf[c->nf].len = 0;
	c->sf[c->nf].quoted = 0;
	c->rsize += sizeof(cb_csv_field) + 1;
	return 0;
}

static int end_field(struct csv *c, cb_error *err)
{
	int rc;

	c->end_line = c->in.line;
	c->end_col = cb__fin_col(&c->in);
	if (c->discard) {
		c->nf++;
		return 0;
	}
	rc = grow_rb(c, c->rlen + 1, err);
	if (rc)
		return rc;
	c->rb[c->rlen++] = '\0';
	c->nf++;
	return 0;
}

/* Consume the line break (CR, LF or CRLF) at the next byte. */
static int eat_break(struct csv *c, cb_error *err)
{
	cb__fin *in = &c->in;
	int ch = in->buf[in->pos++];

	if (ch == '\r') {
		int next = cb__fin_peek(in);

		if (next == CB__FIN_IOERR)
			return cb__fin_io_error(in, err);
		if (next == '\n')
			in->pos++;
	}
	cb__fin_newline(in);
	return 0;
}

/* After a syntax error: consume through the next line break (or to EOF). */
static int skip_line(struct csv *c, cb_error *err)
{
	cb__fin *in = &c->in;

	for (;;) {
		const unsigned char *p, *e;
		int ch = cb__fin_peek(in);

		if (ch == CB__FIN_IOERR)
			return cb__fin_io_error(in, err);
		if (ch == CB__FIN_EOF)
			return CB_EINVAL;
		if (ch == '\r' || ch == '\n') {
			int rc = eat_break(c, err);

			return rc ? rc : CB_EINVAL;
		}
		p = in->buf + in->pos;
		e = in->buf + in->end;
		while (p < e && *p != '\r' && *p != '\n')
			p++;
		in->pos = (size_t)(p - in->buf);
	}
}

static const char *show_byte(int ch, char *buf, size_t size)
{
	if (ch >= 0x20 && ch < 0x7f)
		snprintf(buf, size, "'%c'", ch);
	else
		snprintf(buf, size, "byte 0x%02x", (unsigned)ch);
	return buf;
}

/*
 * Parse the next record into the scratch buffers. @return 0 (a valid
 * record), CB_DONE (end of file, nothing consumed but blank lines),
 * CB_EINVAL (a malformed record, consumed, message in @p err), or
 * CB_ERROR / CB_ENOMEM (the position is then undefined).
 */
static int parse(struct csv *c, cb_error *err)
{
	cb__fin *in = &c->in;
	const unsigned char *p, *q, *e;
	long long qline = 0, qcol = 0, cr_end = -1;
	cb__fpos brk = { 0, 0 };
	int ch, rc, have_brk = 0;
	char shown[16];

	c->nf = 0;
	c->rlen = 0;
	c->rsize = sizeof(cb_csv_record);
	c->bad = 0;
	c->discard = 0;

	/* blank lines before the record */
	for (;;) {
		ch = cb__fin_peek(in);
		if (ch == CB__FIN_IOERR)
			return cb__fin_io_error(in, err);
		if (ch == CB__FIN_EOF)
			return CB_DONE;
		if ((ch == '\r' || ch == '\n') && !c->keep_empty) {
			rc = eat_break(c, err);
			if (rc)
				return rc;
			continue;
		}
		break;
	}
	c->rec = cb__fin_here(in);
	c->rec_col = cb__fin_col(in);

next_field:
	rc = begin_field(c, err);
	if (rc)
		return rc;
	ch = cb__fin_peek(in);
	if (ch == CB__FIN_IOERR)
		return cb__fin_io_error(in, err);
	if (ch == '"') {
		qline = in->line;
		qcol = cb__fin_col(in);
		in->pos++;
		if (!c->discard)
			c->sf[c->nf].quoted = 1;
		have_brk = 0;
		cr_end = -1;
		goto quoted;
	}

	/* unquoted field */
	for (;;) {
		if (in->pos == in->end) {
			rc = cb__fin_fill(in);
			if (rc == CB__FIN_IOERR)
				return cb__fin_io_error(in, err);
			if (rc == 0) {
				rc = end_field(c, err);
				if (rc)
					return rc;
				goto done;
			}
		}
		p = q = in->buf + in->pos;
		e = in->buf + in->end;
		while (q < e && !c->plain_stop[*q])
			q++;
		rc = store(c, p, (size_t)(q - p), err);
		if (rc)
			return rc;
		in->pos = (size_t)(q - in->buf);
		if (q == e)
			continue;
		ch = *q;
		if (ch == (unsigned char)c->delim) {
			rc = end_field(c, err);
			if (rc)
				return rc;
			in->pos++;
			goto next_field;
		}
		if (ch == '"') {
			set_error(c, err, in->line, cb__fin_col(in),
				  "unexpected '\"' in unquoted field");
			return skip_line(c, err);
		}
		/* CR or LF: the record ends */
		rc = end_field(c, err);
		if (!rc)
			rc = eat_break(c, err);
		if (rc)
			return rc;
		goto done;
	}

quoted:
	for (;;) {
		if (in->pos == in->end) {
			rc = cb__fin_fill(in);
			if (rc == CB__FIN_IOERR)
				return cb__fin_io_error(in, err);
			if (rc == 0) {
				set_error(c, err, qline, qcol,
					  "quoted field is not closed before the end of the file");
				/* most likely a stray quote: resume on the next line */
				if (have_brk) {
					rc = cb__fin_seek(in, brk, err);
					if (rc)
						return rc;
				}
				return CB_EINVAL;
			}
		}
		p = q = in->buf + in->pos;
		e = in->buf + in->end;
		while (q < e && !c->quoted_stop[*q])
			q++;
		rc = store(c, p, (size_t)(q - p), err);
		if (rc)
			return rc;
		in->pos = (size_t)(q - in->buf);
		if (q == e)
			continue;
		ch = *q;
		in->pos++;
		if (ch == '"') {
			ch = cb__fin_peek(in);
			if (ch == CB__FIN_IOERR)
				return cb__fin_io_error(in, err);
			if (ch == '"') {
				/* an escaped quote */
				in->pos++;
				rc = store(c, "\"", 1, err);
				if (rc)
					return rc;
				continue;
			}
			/* the closing quote */
			if (ch == CB__FIN_EOF) {
				rc = end_field(c, err);
				if (rc)
					return rc;
				goto done;
			}
			if (ch == (unsigned char)c->delim) {
				rc = end_field(c, err);
				if (rc)
					return rc;
				in->pos++;
				goto next_field;
			}
			if (ch == '\r' || ch == '\n') {
				rc = end_field(c, err);
				if (!rc)
					rc = eat_break(c, err);
				if (rc)
					return rc;
				goto done;
			}
			set_error(c, err, in->line, cb__fin_col(in),
				  "unexpected %s after closing quote",
				  show_byte(ch, shown, sizeof(shown)));
			return skip_line(c, err);
		}
		/* a line break inside the quotes is data */
		rc = store(c, q, 1, err);
		if (rc)
			return rc;
		if (ch == '\r') {
			cb__fin_newline(in);
			cr_end = cb__fin_offset(in);
		} else if (cb__fin_offset(in) - 1 == cr_end) {
			/* the LF of a CRLF: same line break */
			in->line_start = cb__fin_offset(in);
		} else {
			cb__fin_newline(in);
		}
		if (in->line == qline + 1) {
			brk = cb__fin_here(in);
			have_brk = 1;
		}
	}

done:
	if (c->bad)
		return CB_EINVAL;
	if (c->expect && c->nf != c->expect) {
		if (c->nf > c->expect)
			set_error(c, err, c->extra_line, c->extra_col,
				  "expected %zu fields, found %zu", c->expect, c->nf);
		else
			set_error(c, err, c->end_line, c->end_col, "expected %zu fields, found %zu",
				  c->expect, c->nf);
		return CB_EINVAL;
	}
	return 0;
}

/* Copy the parsed record into chunk storage. */
static int emit(struct csv *c, void **item, cb_error *err)
{
	size_t i, need;
	cb_csv_record *r;
	cb_csv_field *f;
	char *data;

	need = sizeof(*r) + c->nf * sizeof(*f) + c->rlen;
	r = chunk_alloc(c, need);
	if (!r)
		return nomem(c, err);
	f = (cb_csv_field *)(r + 1);
	data = (char *)(f + c->nf);
	memcpy(data, c->rb, c->rlen);
	for (i = 0; i < c->nf; i++) {
		f[i].data = data + c->sf[i].off;
		f[i].len = c->sf[i].len;
		f[i].quoted = c->sf[i].quoted;
	}
	r->nfields = c->nf;
	r->fields = f;
	r->line = c->rec.line;
	r->offset = c->rec.off;
	r->file = c->path;
	r->header = c->header ? &c->hdr : NULL;
	*item = r;
	return 0;
}

/* ---- the reader ---------------------------------------------------------- */

static void csv_close(void *state)
{
	struct csv *c = state;

	if (!c)
		return;
	cb__fin_close(&c->in);
	strv_free(c->hdr.names, c->hdr.n);
	c->hdr.names = NULL;
	c->hdr.n = 0;
	chunk_free(c);
	free(c->rb);
	c->rb = NULL;
	c->rcap = c->rlen = 0;
	free(c->sf);
	c->sf = NULL;
	c->fcap = c->nf = 0;
	c->boundary = 0;
	c->opened = 0;
}

static void csv_free(void *state)
{
	struct csv *c = state;

	if (!c)
		return;
	csv_close(c);
	free(c->path);
	strv_free(c->required, c->nrequired);
	free(c);
}

/* Keep the parsed header row's names. */
static int take_header(struct csv *c, cb_error *err)
{
	size_t i;

	c->hdr.names = calloc(c->nf ? c->nf : 1, sizeof(char *));
	if (!c->hdr.names)
		return nomem(c, err);
	for (i = 0; i < c->nf; i++) {
		size_t len = c->sf[i].len;

		c->hdr.names[i] = malloc(len + 1);
		if (!c->hdr.names[i]) {
			c->hdr.n = i;
			return nomem(c, err);
		}
		memcpy(c->hdr.names[i], c->rb + c->sf[i].off, len + 1);
	}
	c->hdr.n = c->nf;
	for (i = 0; i < c->nrequired; i++)
		if (cb_csv_header_index(&c->hdr, c->required[i]) < 0)
			return cb_error_set(err, CB_EINVAL, "%s:%lld: header has no column \"%s\"",
					    c->path, c->rec.line, c->required[i]);
	if (c->ncolumns && c->ncolumns != CB_CSV_ANY_COLUMNS && c->hdr.n != c->ncolumns)
		return cb_error_set(err, CB_EINVAL, "%s:%lld: header has %zu columns, expected %zu",
				    c->path, c->rec.line, c->hdr.n, c->ncolumns);
	return 0;
}

static int csv_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct csv *c = state;
	int rc;

	(void)sc;
	csv_close(c);
	rc = cb__fin_open(&c->in, c->path, c->bufsize, err);
	if (rc)
		return rc;
	rc = cb__fin_skip_bom(&c->in, err);
	if (rc)
		goto fail;
	c->expect = 0;
	if (c->header) {
		rc = parse(c, err);
		if (rc == CB_DONE)
			rc = cb_error_set(err, CB_EINVAL, "%s: no header row: the file is empty",
					  c->path);
		if (!rc)
			rc = take_header(c, err);
		if (rc)
			goto fail;
	}
	if (c->ncolumns == CB_CSV_ANY_COLUMNS)
		c->expect = 0;
	else if (c->ncolumns)
		c->expect = c->ncolumns;
	else if (c->header)
		c->expect = c->hdr.n;
	c->in.start = cb__fin_here(&c->in);
	rc = cb__fin_restore(&c->in, saved, "\r\n", err);
	if (rc)
		goto fail;
	c->boundary = 0;
	c->opened = 1;
	return 0;
fail:
	csv_close(c);
	return rc;
}

static int csv_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	struct csv *c = state;
	int rc;

	(void)tx;
	*item = NULL;
	if (!c->opened)
		return cb_error_set(err, CB_EINVAL, "CSV reader %s: read before open", c->path);
	if (c->boundary) {
		chunk_reset(c);
		c->boundary = 0;
	}
	rc = cb__fin_begin(&c->in, err);
	if (rc)
		return rc;
	rc = parse(c, err);
	if (rc == 0)
		rc = emit(c, item, err);
	if (rc == 0 || rc == CB_EINVAL) {
		/* a record, good or bad, was consumed */
		c->in.mark = cb__fin_here(&c->in);
		return rc;
	}
	if (rc != CB_DONE)
		cb__fin_retry_at_mark(&c->in);
	return rc;
}

static int csv_update(void *state, json_t *out, cb_error *err)
{
	struct csv *c = state;

	if (!c->opened)
		return cb_error_set(err, CB_EINVAL, "CSV reader %s: update before open", c->path);
	if (!json_is_object(out))
		return cb_error_set(err, CB_EINVAL, "CSV reader %s: update needs a JSON object",
				    c->path);
	c->boundary = 1;
	return cb__fin_update(&c->in, out, err);
}

static void csv_rollback(void *state)
{
	struct csv *c = state;

	if (!c || !c->opened)
		return;
	cb__fin_rollback(&c->in);
	c->boundary = 1;
}

static void csv_describe(void *state, const void *item, char *buf, size_t size)
{
	const cb_csv_record *r = item;

	(void)state;
	if (!buf || size == 0)
		return;
	buf[0] = '\0';
	if (r && r->file)
		snprintf(buf, size, "%s:%lld", r->file, r->line);
}

/* The preflight: the file, if it is there already, can be read. */
static int csv_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct csv *c = state;

	(void)sc;
	return cb__fin_check(c->path, "CSV reader", err);
}

int cb_csv_reader_new(cb_reader *out, const cb_csv_options *opts, cb_error *err)
{
	struct csv *c;
	size_t i;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "CSV reader: no options");
	if (opts->version != CB_CSV_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "CSV reader: unsupported options version %u",
				    opts->version);
	if (!opts->path || !opts->path[0])
		return cb_error_set(err, CB_EINVAL, "CSV reader: no path");
	if (opts->delimiter == '"' || opts->delimiter == '\r' || opts->delimiter == '\n')
		return cb_error_set(err, CB_EINVAL,
				    "CSV reader %s: the delimiter cannot be a "
				    "quote or a line break",
				    opts->path);
	if (opts->nrequired && (!opts->required_columns || !opts->header))
		return cb_error_set(err, CB_EINVAL,
				    "CSV reader %s: required columns need a "
				    "header row",
				    opts->path);
	if (opts->max_record && opts->max_record < 1024)
		return cb_error_set(err, CB_EINVAL,
				    "CSV reader %s: max_record must be at least 1024 "
				    "bytes",
				    opts->path);
	for (i = 0; i < opts->nrequired; i++)
		if (!opts->required_columns[i])
			return cb_error_set(err, CB_EINVAL,
					    "CSV reader %s: required column %zu is "
					    "NULL",
					    opts->path, i + 1);

	c = calloc(1, sizeof(*c));
	if (!c)
		return cb_error_set(err, CB_ENOMEM, "CSV reader: out of memory");
	c->in.fd = -1;
	c->path = strdup(opts->path);
	if (opts->nrequired) {
		c->required = calloc(opts->nrequired, sizeof(char *));
		if (c->required)
			for (i = 0; i < opts->nrequired; i++) {
				c->required[i] = strdup(opts->required_columns[i]);
				if (!c->required[i])
					break;
				c->nrequired = i + 1;
			}
	}
	if (!c->path || c->nrequired != opts->nrequired) {
		csv_free(c);
		return cb_error_set(err, CB_ENOMEM, "CSV reader: out of memory");
	}
	c->delim = opts->delimiter ? opts->delimiter : ',';
	c->header = opts->header != 0;
	c->ncolumns = opts->ncolumns;
	c->keep_empty = opts->keep_empty_lines != 0;
	c->max_field = opts->max_field ? opts->max_field : DEFAULT_MAX_FIELD;
	if (opts->max_record)
		c->max_record = opts->max_record;
	else
		c->max_record = c->max_field > SIZE_MAX / 4 ? SIZE_MAX : c->max_field * 4;
	c->bufsize = opts->buffer_size ? opts->buffer_size : DEFAULT_BUFFER;
	c->plain_stop[(unsigned char)c->delim] = 1;
	c->plain_stop['"'] = 1;
	c->plain_stop['\r'] = 1;
	c->plain_stop['\n'] = 1;
	c->quoted_stop['"'] = 1;
	c->quoted_stop['\r'] = 1;
	c->quoted_stop['\n'] = 1;

	out->version = CB_READER_VERSION;
	out->state = c;
	out->open = csv_open;
	out->read = csv_read;
	out->update = csv_update;
	out->describe = csv_describe;
	out->rollback = csv_rollback;
	out->close = csv_close;
	out->free = csv_free;
	out->check = csv_check;
	return 0;
}

/* ---- headers and records ------------------------------------------------- */

const cb_csv_header *cb_csv_reader_header(const cb_reader *reader)
{
	const struct csv *c;

	if (!reader || reader->read != csv_read || !reader->state)
		return NULL;
	c = reader->state;
	return c->opened && c->header ? &c->hdr : NULL;
}

size_t cb_csv_header_count(const cb_csv_header *header)
{
	return header ? header->n : 0;
}

const char *cb_csv_header_name(const cb_csv_header *header, size_t i)
{
	return header && i < header->n ? header->names[i] : NULL;
}

long cb_csv_header_index(const cb_csv_header *header, const char *name)
{
	size_t i;

	if (!header || !name)
		return -1;
	for (i = 0; i < header->n && i < (size_t)LONG_MAX; i++)
		if (strcmp(header->names[i], name) == 0)
			return (long)i;
	return -1;
}

size_t cb_csv_record_nfields(const cb_csv_record *rec)
{
	return rec ? rec->nfields : 0;
}

long long cb_csv_record_line(const cb_csv_record *rec)
{
	return rec ? rec->line : 0;
}

const char *cb_csv_record_field(const cb_csv_record *rec, size_t i, size_t *len)
{
	if (!rec || i >= rec->nfields) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = rec->fields[i].len;
	return rec->fields[i].data;
}

long cb_csv_record_index(const cb_csv_record *rec, const char *name)
{
	return rec ? cb_csv_header_index(rec->header, name) : -1;
}

const char *cb_csv_record_get(const cb_csv_record *rec, const char *name, size_t *len)
{
	long i = cb_csv_record_index(rec, name);

	if (i < 0) {
		if (len)
			*len = 0;
		return NULL;
	}
	return cb_csv_record_field(rec, (size_t)i, len);
}

static int number_error(const cb_csv_record *rec, size_t i, const char *what, cb_error *err)
{
	const char *name = rec ? cb_csv_header_name(rec->header, i) : NULL;
	char field[128];
	size_t len = 0;
	const char *s = cb_csv_record_field(rec, i, &len);

	if (name)
		snprintf(field, sizeof(field), "field %zu (\"%s\")", i + 1, name);
	else
		snprintf(field, sizeof(field), "field %zu", i + 1);
	if (!rec)
		return cb_error_set(err, CB_EINVAL, "no record");
	if (!s)
		return cb_error_set(err, CB_EINVAL, "%s:%lld: %s is missing (the record has %zu)",
				    rec->file ? rec->file : "?", rec->line, field, rec->nfields);
	return cb_error_set(err, CB_EINVAL, "%s:%lld: %s: \"%.*s%s\" is not %s",
			    rec->file ? rec->file : "?", rec->line, field, len > 60 ? 60 : (int)len,
			    s, len > 60 ? "..." : "", what);
}

/* A field that strtoll/strtod may look at: not empty, no blank in front, no NUL inside. */
static int plain_number_text(const char *s, size_t len)
{
	return len > 0 && s[0] != ' ' && s[0] != '\t' && s[0] != '\n' && s[0] != '\r' &&
	       s[0] != '\f' && s[0] != '\v' && strlen(s) == len;
}

int cb_csv_record_long(const cb_csv_record *rec, size_t i, long long *out, cb_error *err)
{
	size_t len;
	const char *s = cb_csv_record_field(rec, i, &len);
	char *end;
	long long v;

	if (!s || !plain_number_text(s, len))
		return number_error(rec, i, "an integer", err);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end != s + len)
		return number_error(rec, i, "an integer", err);
	*out = v;
	return 0;
}

int cb_csv_record_double(const cb_csv_record *rec, size_t i, double *out, cb_error *err)
{
	size_t len;
	const char *s = cb_csv_record_field(rec, i, &len);
	char *end;
	double v;

	if (!s || !plain_number_text(s, len))
		return number_error(rec, i, "a number", err);
	errno = 0;
	v = strtod(s, &end);
	if (errno || end != s + len || !isfinite(v))
		return number_error(rec, i, "a number", err);
	*out = v;
	return 0;
}
