/*
 * The chunk step: read a chunk, process it, write it and checkpoint, all in
 * one transaction whose write half (writers' statements, the checkpoint and
 * COMMIT) goes to the server as one pipeline.
 */
#include "engine.h"
#include "repo.h"
#include "step_context.h"
#include "tx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk_step {
	cb__run *run;
	const cb_step_def *def;
	cb_step_context sc;
	cb_chunk chunk;
	cb_chunk_parts parts;
	int reader_open;
	size_t writers_open;
	cb_tx *tx;
	void **items;
	void **outs;
	char checkpoint_stmt[64];
	long long version;
	long long read_total, write_total, filter_total, commits;
} chunk_step;

static size_t chunk_size_of(const cb__run *run, const cb_step_def *def, cb_error *err)
{
	long long n;
	int rc = cb_params_get_long(run->params, "chunk.size", &n);

	if (rc == 0) {
		if (n < 1 || n > 1000000) {
			cb_error_set(err, CB_EINVAL, "parameter chunk.size=%lld is out of range "
				     "(1..1000000)", n);
			return 0;
		}
		return (size_t)n;
	}
	if (rc == CB_EINVAL) {
		cb_error_set(err, CB_EINVAL, "parameter chunk.size must be of type long");
		return 0;
	}
	return def->chunk_size ? def->chunk_size : CB_DEFAULT_CHUNK_SIZE;
}

static void describe(chunk_step *cs, const void *item, char *buf, size_t size)
{
	buf[0] = '\0';
	if (cs->parts.reader.describe)
		cs->parts.reader.describe(cs->parts.reader.state, item, buf, size);
}

/* A callback failed: make sure the message says which one, and on what. */
static int callback_failed(chunk_step *cs, int rc, const char *what, const void *item,
			   cb_error *err)
{
	char key[160] = "";

	if (item)
		describe(cs, item, key, sizeof(key));
	if (rc >= 0)
		rc = CB_ECALLBACK;
	if (!err->code)
		cb_error_set(err, rc, "%s returned %s without a message", what, cb_strcode(rc));
	if (key[0])
		cb_error_prefix(err, "%s (item %s)", what, key);
	else
		cb_error_prefix(err, "%s", what);
	return err->code;
}

static int open_parts(chunk_step *cs, json_t *context, cb_error *err)
{
	cb_chunk_parts *p = &cs->parts;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = cs->def->build(cs->def->user, &cs->sc, p, err);
	if (rc < 0)
		return callback_failed(cs, rc, "build", NULL, err);
	if (p->reader.version != CB_READER_VERSION || !p->reader.read)
		return cb_error_set(err, CB_EINVAL, "build gave no reader (or one of unknown version)");
	if (p->nwriters < 1 || p->nwriters > CB_MAX_WRITERS)
		return cb_error_set(err, CB_EINVAL, "build gave %zu writers (1..%d allowed)",
				    p->nwriters, CB_MAX_WRITERS);
	for (size_t i = 0; i < p->nwriters; i++)
		if (p->writers[i].version != CB_WRITER_VERSION || !p->writers[i].write)
			return cb_error_set(err, CB_EINVAL, "writer %zu has no write function or "
					    "an unknown version", i);
	if (p->processor.process && p->processor.version != CB_PROCESSOR_VERSION)
		return cb_error_set(err, CB_EINVAL, "processor of unknown version");
	if (p->reader.open) {
		rc = p->reader.open(p->reader.state, &cs->sc, json_object_get(context, "reader"), err);
		if (rc < 0)
			return callback_failed(cs, rc, "reader open", NULL, err);
	}
	cs->reader_open = 1;
	for (size_t i = 0; i < p->nwriters; i++) {
		char key[32];

		snprintf(key, sizeof(key), "writer.%zu", i);
		if (p->writers[i].open) {
			rc = p->writers[i].open(p->writers[i].state, &cs->sc,
						json_object_get(context, key), err);
			if (rc < 0)
				return callback_failed(cs, rc, "writer open", NULL, err);
		}
		cs->writers_open = i + 1;
	}
	return 0;
}

static void close_parts(chunk_step *cs)
{
	cb_chunk_parts *p = &cs->parts;

	for (size_t i = 0; i < cs->writers_open; i++)
		if (p->writers[i].close)
			p->writers[i].close(p->writers[i].state);
	if (cs->reader_open && p->reader.close)
		p->reader.close(p->reader.state);
	for (size_t i = 0; i < p->nwriters && i < CB_MAX_WRITERS; i++)
		if (p->writers[i].free)
			p->writers[i].free(p->writers[i].state);
	if (p->processor.free)
		p->processor.free(p->processor.state);
	if (p->reader.free)
		p->reader.free(p->reader.state);
}

/* Ask each component for its position; the step context is replaced in place. */
static int update_context(chunk_step *cs, json_t *context, cb_error *err)
{
	cb_chunk_parts *p = &cs->parts;
	int rc;

	if (p->reader.update) {
		json_t *o = json_object();

		if (!o)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		rc = p->reader.update(p->reader.state, o, err);
		if (rc < 0) {
			json_decref(o);
			return callback_failed(cs, rc, "reader update", NULL, err);
		}
		json_object_set_new(context, "reader", o);
	}
	for (size_t i = 0; i < p->nwriters; i++) {
		char key[32];
		json_t *o;

		if (!p->writers[i].update)
			continue;
		o = json_object();
		if (!o)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		rc = p->writers[i].update(p->writers[i].state, o, err);
		if (rc < 0) {
			json_decref(o);
			return callback_failed(cs, rc, "writer update", NULL, err);
		}
		snprintf(key, sizeof(key), "writer.%zu", i);
		json_object_set_new(context, key, o);
	}
	return 0;
}

typedef struct chunk_counts {
	size_t read, written, filtered;
	int done;
} chunk_counts;

/*
 * One chunk inside an open transaction, up to the queued checkpoint. Returns
 * 0 with counts, or an error; the caller commits or rolls back.
 */
static int fill_chunk(chunk_step *cs, json_t *context, chunk_counts *cc, char *status,
		      size_t status_size, cb_error *err)
{
	cb_chunk_parts *p = &cs->parts;
	size_t n = 0, w = 0, limit = cs->sc.chunk_size;
	char *ctx_text = NULL;
	char ids[4][24], counts[10][24], token[24], lease[32];
	int rc;

	memset(cc, 0, sizeof(*cc));
	while (n < limit) {
		void *item = NULL;

		rc = p->reader.read(p->reader.state, cs->tx, &item, err);
		if (rc == CB_DONE) {
			cc->done = 1;
			break;
		}
		if (rc < 0)
			return callback_failed(cs, rc, "read", NULL, err);
		cs->items[n++] = item;
	}
	cc->read = n;
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		void *out = cs->items[i];

		if (p->processor.process) {
			out = NULL;
			rc = p->processor.process(p->processor.state, &cs->chunk, cs->items[i], &out,
						  err);
			if (rc < 0)
				return callback_failed(cs, rc, "process", cs->items[i], err);
		}
		if (out)
			cs->outs[w++] = out;
	}
	cc->written = w;
	cc->filtered = n - w;
	for (size_t i = 0; w > 0 && i < p->nwriters; i++) {
		rc = p->writers[i].write(p->writers[i].state, cs->tx, cs->outs, w, err);
		if (rc < 0)
			return callback_failed(cs, rc, "write", NULL, err);
	}
	rc = update_context(cs, context, err);
	if (rc < 0)
		return rc;
	ctx_text = json_dumps(context, JSON_COMPACT);
	if (!ctx_text)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	snprintf(ids[0], 24, "%lld", cs->sc.step_execution_id);
	snprintf(ids[1], 24, "%lld", cs->version);
	snprintf(ids[2], 24, "%lld", cs->sc.job_execution_id);
	snprintf(counts[0], 24, "%zu", n);
	snprintf(counts[1], 24, "%zu", w);
	snprintf(counts[2], 24, "%zu", n - w);
	{
		const char *params[CB__CHECKPOINT_NPARAMS] = {
			ids[0], ids[1], counts[0], counts[1], counts[2], "1", "0", "0", "0", "0",
			ctx_text, ids[2], NULL, NULL, NULL, NULL
		};

		cb__run_fence_params(cs->run, &params[12], token, lease);
		rc = cb__tx_send_text(cs->tx, cs->checkpoint_stmt, CB__CHECKPOINT_NPARAMS, params,
				      status, status_size, err);
	}
	free(ctx_text);
	return rc;
}

static void report_progress(chunk_step *cs)
{
	const cb_launch_options *o = cs->run->opts;

	if (o->progress)
		o->progress(o->progress_ctx, cs->def->name, cs->read_total, cs->write_total,
			    cb__now() - cs->run->started);
}

int cb__step_chunk_run(cb__run *run, const cb_step_def *def, long long step_execution_id,
		       json_t *context, cb__step_outcome *out)
{
	chunk_step cs;
	cb_error *err = &out->error;
	int rc;

	memset(&cs, 0, sizeof(cs));
	cs.run = run;
	cs.def = def;
	cs.sc.job_name = run->job->name;
	cs.sc.step_name = def->name;
	cs.sc.job_execution_id = run->job_execution_id;
	cs.sc.step_execution_id = step_execution_id;
	cs.sc.params = run->params;
	cs.sc.conn = run->conn;
	cs.chunk.sc = &cs.sc;
	cb__arena_init(&cs.chunk.arena);
	out->status = CB_STATUS_FAILED;

	cs.sc.chunk_size = chunk_size_of(run, def, err);
	if (!cs.sc.chunk_size)
		goto done;
	cs.items = calloc(cs.sc.chunk_size, sizeof(void *));
	cs.outs = calloc(cs.sc.chunk_size, sizeof(void *));
	if (!cs.items || !cs.outs) {
		cb_error_set(err, CB_ENOMEM, "out of memory (chunk of %zu)", cs.sc.chunk_size);
		goto done;
	}
	if (cb_pg_prepare(run->conn, cs.checkpoint_stmt, "ckpt", cb__repo_checkpoint_sql,
			  CB__CHECKPOINT_NPARAMS, err) < 0)
		goto done;
	if (cb__tx_new(&cs.tx, run->conn, 1, err) < 0)
		goto done;
	if (open_parts(&cs, context, err) < 0)
		goto done;

	for (;;) {
		chunk_counts cc;
		char status[16] = "";

		if (cb__stop_signalled()) {
			out->status = CB_STATUS_STOPPED;
			break;
		}
		if (cb__run_check_lock(run, err) < 0)
			break;
		cb__arena_reset(&cs.chunk.arena);
		rc = cb__tx_begin(cs.tx, err);
		if (rc == 0)
			rc = fill_chunk(&cs, context, &cc, status, sizeof(status), err);
		if (rc == 0 && cc.read == 0) {
			/* Nothing left: end the (empty) transaction. */
			rc = cb__tx_rollback(cs.tx, err);
			if (rc == 0)
				out->status = CB_STATUS_COMPLETED;
			break;
		}
		if (rc == 0)
			rc = cb__tx_commit(cs.tx, err);
		if (rc < 0) {
			cb_error ignored = CB_ERROR_INIT;

			cb__tx_rollback(cs.tx, &ignored);
			if (cs.parts.reader.rollback)
				cs.parts.reader.rollback(cs.parts.reader.state);
			out->rollbacks++;
			cb_error_prefix(err, "chunk %lld", cs.commits + 1);
			break;
		}
		cs.version++;
		cs.commits++;
		cs.read_total += (long long)cc.read;
		cs.write_total += (long long)cc.written;
		cs.filter_total += (long long)cc.filtered;
		report_progress(&cs);
		if (strcmp(status, "STOPPING") == 0) {
			out->status = CB_STATUS_STOPPED;
			break;
		}
		if (cc.done) {
			out->status = CB_STATUS_COMPLETED;
			break;
		}
	}
done:
	if (cs.tx && cb__tx_active(cs.tx)) {
		cb_error ignored = CB_ERROR_INIT;

		cb__tx_rollback(cs.tx, &ignored);
	}
	close_parts(&cs);
	cb__tx_free(cs.tx);
	cb__arena_free(&cs.chunk.arena);
	free(cs.items);
	free(cs.outs);
	if (cs.checkpoint_stmt[0] && PQstatus(run->conn) == CONNECTION_OK) {
		/* Statement names are per process; a long-lived program reuses the connection. */
		char sql[96];
		PGresult *res;

		snprintf(sql, sizeof(sql), "DEALLOCATE %s", cs.checkpoint_stmt);
		res = PQexec(run->conn, sql);
		PQclear(res);
	}
	return out->status == CB_STATUS_FAILED ? err->code : 0;
}
