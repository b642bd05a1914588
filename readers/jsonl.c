/*
 * The JSON lines reader (include/cbatch/readers.h).
 *
 * A line is gathered from the fixed-size read buffer into a scratch buffer
 * (memchr for the LF) and decoded with json_loadb. The values handed out in
 * a chunk are kept in a table with their line numbers; the reader holds the
 * only reference and drops them at the first read after the chunk ended
 * (update or rollback), so items stay valid through the commit.
 */
#include "cbatch/readers.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_input.h"

#define DEFAULT_MAX_LINE ((size_t)16 << 20)
#define DEFAULT_BUFFER   ((size_t)64 << 10)
#define SCRATCH_KEEP     ((size_t)1 << 20)

struct held {
	json_t *value;
	long long line;
};

struct jsonl {
	/* options (copy) */
	char *path;
	int any_value;
	size_t decode_flags;
	size_t max_line, bufsize;
	/* from open */
	int opened;
	cb__fin in;
	char *lb; /* the line being read */
	size_t llen, lcap;
	struct held *items; /* handed out in the running chunk */
	size_t nitems, capitems;
	int boundary;
};

static int jl_read(void *state, cb_tx *tx, void **item, cb_error *err);

static void drop_items(struct jsonl *j)
{
	size_t i;

	for (i = 0; i < j->nitems; i++)
		json_decref(j->items[i].value);
	j->nitems = 0;
	if (j->lcap > SCRATCH_KEEP) {
		free(j->lb);
		j->lb = NULL;
		j->lcap = 0;
	}
}

static void jl_close(void *state)
{
	struct jsonl *j = state;

	if (!j)
		return;
	drop_items(j);
	free(j->items);
	j->items = NULL;
	j->capitems = 0;
	free(j->lb);
	j->lb = NULL;
	j->lcap = j->llen = 0;
	cb__fin_close(&j->in);
	j->boundary = 0;
	j->opened = 0;
}

static void jl_free(void *state)
{
	struct jsonl *j = state;

	if (!j)
		return;
	jl_close(j);
	free(j->path);
	free(j);
}

static int jl_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct jsonl *j = state;
	int rc;

	(void)sc;
	jl_close(j);
	rc = cb__fin_open(&j->in, j->path, j->bufsize, err);
	if (rc)
		return rc;
	rc = cb__fin_skip_bom(&j->in, err);
	if (!rc) {
		j->in.start = cb__fin_here(&j->in);
		rc = cb__fin_restore(&j->in, saved, "\n", err);
	}
	if (rc) {
		jl_close(j);
		return rc;
	}
	j->opened = 1;
	return 0;
}

static int append(struct jsonl *j, const void *p, size_t n, int *too_long, cb_error *err)
{
	if (*too_long || n == 0)
		return 0;
	if (n > j->max_line - j->llen) {
		*too_long = 1;
		return 0;
	}
	if (j->llen + n + 1 > j->lcap) {
		size_t cap = j->lcap ? j->lcap : 256;
		char *b;

		while (cap < j->llen + n + 1)
			cap = cap > SIZE_MAX / 2 ? j->llen + n + 1 : cap * 2;
		b = realloc(j->lb, cap);
		if (!b)
			return cb_error_set(err, CB_ENOMEM, "%s:%lld: out of memory for a line",
					    j->path, j->in.line);
		j->lb = b;
		j->lcap = cap;
	}
	memcpy(j->lb + j->llen, p, n);
	j->llen += n;
	return 0;
}

static int blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/*
 * Read the next non-blank line into lb and decode it. @return 0 with a new
 * reference in @p out, CB_DONE, CB_EINVAL (the line is consumed), or
 * CB_ERROR / CB_ENOMEM.
 */
static int next_value(struct jsonl *j, json_t **out, long long *line, cb_error *err)
{
	cb__fin *in = &j->in;
	json_error_t jerr;
	json_t *v;
	int rc, too_long;

	*out = NULL;
	for (;;) {
		int got_lf = 0;

		j->llen = 0;
		too_long = 0;
		*line = in->line;
		for (;;) {
			const unsigned char *p, *nl;

			rc = cb__fin_fill(in);
			if (rc == CB__FIN_IOERR)
				return cb__fin_io_error(in, err);
			if (rc == 0)
				break;
			p = in->buf + in->pos;
			nl = memchr(p, '\n', in->end - in->pos);
			rc = append(j, p, nl ? (size_t)(nl - p) : in->end - in->pos, &too_long,
				    err);
			if (rc)
				return rc;
			if (nl) {
				in->pos = (size_t)(nl - in->buf) + 1;
				cb__fin_newline(in);
				got_lf = 1;
				break;
			}
			in->pos = in->end;
		}
		if (!got_lf && j->llen == 0 && !too_long)
			return CB_DONE;
		if (too_long)
			return cb_error_set(err, CB_EINVAL,
					    "%s:%lld:1: line is longer than %zu bytes", j->path,
					    *line, j->max_line);
		if (!blank(j->lb, j->llen))
			break;
		if (!got_lf)
			return CB_DONE;
	}
	v = json_loadb(j->lb, j->llen, JSON_DECODE_ANY | j->decode_flags, &jerr);
	if (!v)
		return cb_error_set(err, CB_EINVAL, "%s:%lld:%d: %s", j->path, *line,
				    jerr.column > 0 ? jerr.column : 1, jerr.text);
	if (!j->any_value && !json_is_object(v)) {
		const char *t = type_name(v);

		json_decref(v);
		return cb_error_set(err, CB_EINVAL, "%s:%lld:1: expected a JSON object, found %s",
				    j->path, *line, t);
	}
	*out = v;
	return 0;
}

static int jl_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	struct jsonl *j = state;
	json_t *v = NULL;
	long long line = 0;
	int rc;

	(void)tx;
	*item = NULL;
	if (!j->opened)
		return cb_error_set(err, CB_EINVAL, "JSON lines reader %s: read before open",
				    j->path);
	if (j->boundary) {
		drop_items(j);
		j->boundary = 0;
	}
	rc = cb__fin_begin(&j->in, err);
	if (rc)
		return rc;
	if (j->nitems == j->capitems) {
		size_t cap = j->capitems ? j->capitems * 2 : 64;
		struct held *p = realloc(j->items, cap * sizeof(*p));

		if (!p)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", j->path);
		j->items = p;
		j->capitems = cap;
	}
	rc = next_value(j, &v, &line, err);
	if (rc == 0) {
		j->items[j->nitems].value = v;
		j->items[j->nitems].line = line;
		j->nitems++;
		*item = v;
	}
	if (rc == 0 || rc == CB_EINVAL) {
		j->in.mark = cb__fin_here(&j->in);
		return rc;
	}
	if (rc != CB_DONE)
		cb__fin_retry_at_mark(&j->in);
	return rc;
}

static int jl_update(void *state, json_t *out, cb_error *err)
{
	struct jsonl *j = state;

	if (!j->opened)
		return cb_error_set(err, CB_EINVAL, "JSON lines reader %s: update before open",
				    j->path);
	if (!json_is_object(out))
		return cb_error_set(err, CB_EINVAL,
				    "JSON lines reader %s: update needs a JSON object", j->path);
	j->boundary = 1;
	return cb__fin_update(&j->in, out, err);
}

static void jl_rollback(void *state)
{
	struct jsonl *j = state;

	if (!j || !j->opened)
		return;
	cb__fin_rollback(&j->in);
	j->boundary = 1;
}

static long long line_of(const struct jsonl *j, const json_t *v)
{
	size_t i;

	for (i = j->nitems; i-- > 0;)
		if (j->items[i].value == v)
			return j->items[i].line;
	return 0;
}

static void jl_describe(void *state, const void *item, char *buf, size_t size)
{
	const struct jsonl *j = state;
	long long line;

	if (!buf || size == 0)
		return;
	buf[0] = '\0';
	if (!j || !item)
		return;
	line = line_of(j, item);
	if (line > 0)
		snprintf(buf, size, "%s:%lld", j->path, line);
}

long long cb_jsonl_reader_line(const cb_reader *reader, const json_t *value)
{
	if (!reader || reader->read != jl_read || !reader->state || !value)
		return 0;
	return line_of(reader->state, value);
}

/* The preflight: the file, if it is there already, can be read. */
static int jl_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct jsonl *j = state;

	(void)sc;
	return cb__fin_check(j->path, "JSON lines reader", err);
}

int cb_jsonl_reader_new(cb_reader *out, const cb_jsonl_options *opts, cb_error *err)
{
	struct jsonl *j;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "JSON lines reader: no options");
	if (opts->version != CB_JSONL_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL,
				    "JSON lines reader: unsupported options version %u",
				    opts->version);
	if (!opts->path || !opts->path[0])
		return cb_error_set(err, CB_EINVAL, "JSON lines reader: no path");
	j = calloc(1, sizeof(*j));
	if (!j)
		return cb_error_set(err, CB_ENOMEM, "JSON lines reader: out of memory");
	j->in.fd = -1;
	j->path = strdup(opts->path);
	if (!j->path) {
		free(j);
		return cb_error_set(err, CB_ENOMEM, "JSON lines reader: out of memory");
	}
	j->any_value = opts->any_value != 0;
	j->decode_flags = opts->decode_flags;
	j->max_line = opts->max_line ? opts->max_line : DEFAULT_MAX_LINE;
	j->bufsize = opts->buffer_size ? opts->buffer_size : DEFAULT_BUFFER;

	out->version = CB_READER_VERSION;
	out->state = j;
	out->open = jl_open;
	out->read = jl_read;
	out->update = jl_update;
	out->describe = jl_describe;
	out->rollback = jl_rollback;
	out->close = jl_close;
	out->free = jl_free;
	out->check = jl_check;
	return 0;
}
