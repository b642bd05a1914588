/*
 * The JSON lines writer (include/cbatch/writers.h): each item is encoded
 * with json_dump_callback straight into the chunk's buffer (file_sink.h);
 * update() writes the buffer to the file.
 */
#include "cbatch/writers.h"

#include <stdlib.h>
#include <string.h>

#include "file_sink.h"

struct jsonlw {
	cb__fsink sink;
	cb_jsonl_format_fn format;
	void *format_ctx;
	size_t flags;
};

/* The preflight: the file's directory, without creating the file. */
static int jw_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct jsonlw *w = state;

	return cb__fsink_check(&w->sink, sc, err);
}

static int jw_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct jsonlw *w = state;

	return cb__fsink_open(&w->sink, sc, saved, NULL, 0, err);
}

struct dump {
	cb__fsink *sink;
	int nomem;
};

static int dump_cb(const char *buf, size_t size, void *data)
{
	struct dump *d = data;

	if (cb__fsink_append(d->sink, buf, size) < 0) {
		d->nomem = 1;
		return -1;
	}
	return 0;
}

static int jw_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	struct jsonlw *w = state;
	struct dump d;
	size_t i, start, first;
	int rc = 0;

	(void)tx;
	if (w->sink.fd < 0)
		return cb_error_set(err, CB_EINVAL, "JSON lines writer %s: write before open",
				    w->sink.path);
	first = cb__fsink_begin_write(&w->sink);
	for (i = 0; i < n; i++) {
		json_t *v = items[i];

		if (w->format) {
			v = NULL;
			rc = w->format(w->format_ctx, items[i], &v, err);
			if (rc < 0) {
				json_decref(v);
				if (err && !err->code)
					cb_error_set(err, rc,
						     "format returned %s without a message",
						     cb_strcode(rc));
				break;
			}
			rc = 0;
			if (!v)
				continue;
		} else if (!v) {
			rc = cb_error_set(err, CB_EINVAL, "NULL item");
			break;
		}
		start = w->sink.len;
		d.sink = &w->sink;
		d.nomem = 0;
		if (json_dump_callback(v, dump_cb, &d, w->flags) != 0) {
			w->sink.len = start;
			rc = d.nomem ? cb_error_set(err, CB_ENOMEM, "out of memory") :
				       cb_error_set(err, CB_EINVAL,
						    "cannot encode the value (a value that is "
						    "not an object or array needs "
						    "JSON_ENCODE_ANY)");
		} else if (cb__fsink_append(&w->sink, "\n", 1) < 0) {
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		}
		if (w->format)
			json_decref(v);
		if (rc)
			break;
	}
	if (rc) {
		cb_error_prefix(err, "JSON lines writer %s: item %zu of the chunk", w->sink.path,
				i + 1);
		cb__fsink_cut(&w->sink, first);
	}
	return rc;
}

static int jw_update(void *state, json_t *out, cb_error *err)
{
	struct jsonlw *w = state;

	return cb__fsink_flush(&w->sink, out, err);
}

static void jw_close(void *state)
{
	struct jsonlw *w = state;

	if (w)
		cb__fsink_close(&w->sink);
}

static void jw_free(void *state)
{
	struct jsonlw *w = state;

	if (!w)
		return;
	cb__fsink_free(&w->sink);
	free(w);
}

/* The outcome of the database transaction, for the file's sake (file_sink.h). */
static void jw_rollback(void *state)
{
	struct jsonlw *w = state;

	cb__fsink_rollback(&w->sink);
}

static void jw_savepoint(void *state)
{
	struct jsonlw *w = state;

	cb__fsink_savepoint(&w->sink);
}

static void jw_rollback_to_savepoint(void *state)
{
	struct jsonlw *w = state;

	cb__fsink_rollback_to_savepoint(&w->sink);
}

static int jw_complete(void *state, cb_error *err)
{
	struct jsonlw *w = state;

	return cb__fsink_complete(&w->sink, err);
}

int cb_jsonl_writer_new(cb_writer *out, const cb_jsonl_writer_options *opts, cb_error *err)
{
	struct jsonlw *w;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "JSON lines writer: no options");
	if (opts->version < 1 || opts->version > CB_JSONL_WRITER_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL,
				    "JSON lines writer: unsupported options version %u",
				    opts->version);
	if (!opts->path || !opts->path[0])
		return cb_error_set(err, CB_EINVAL, "JSON lines writer: no path");
	if (opts->atomic && opts->temp_path && strcmp(opts->temp_path, opts->path) == 0)
		return cb_error_set(err, CB_EINVAL,
				    "JSON lines writer %s: the temporary path "
				    "must differ from the path",
				    opts->path);
	w = calloc(1, sizeof(*w));
	if (!w)
		return cb_error_set(err, CB_ENOMEM, "JSON lines writer: out of memory");
	/* if_exists: since version 2 */
	rc = cb__fsink_init(&w->sink, "JSON lines writer", opts->path, opts->atomic,
			    opts->temp_path, opts->fsync,
			    opts->version >= 2 ? opts->if_exists : CB_FILE_FAIL, err);
	if (rc) {
		free(w);
		return rc;
	}
	w->format = opts->format;
	w->format_ctx = opts->format_ctx;
	/* one line per value: never indent */
	w->flags = (opts->dump_flags & ~(size_t)JSON_MAX_INDENT) | JSON_COMPACT;

	out->version = CB_WRITER_VERSION;
	out->state = w;
	out->open = jw_open;
	out->write = jw_write;
	out->update = jw_update;
	out->close = jw_close;
	out->free = jw_free;
	out->check = jw_check;
	out->rollback = jw_rollback;
	out->savepoint = jw_savepoint;
	out->rollback_to_savepoint = jw_rollback_to_savepoint;
	out->complete = jw_complete;
	return 0;
}
