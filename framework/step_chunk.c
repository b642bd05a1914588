/*
 * The chunk step: read a chunk, process it, write it and checkpoint, all in
 * one transaction whose write half (writers' statements, the checkpoint and
 * COMMIT) goes to the server as one pipeline.
 *
 * Faults are classified per item (read, process) or per chunk (write):
 *   SKIP   read/process: drop the item and go on, in the same chunk.
 *          write: roll back, then scan — write the chunk's items one by one
 *          under savepoints in one new transaction, skipping those that fail,
 *          and commit the survivors with the checkpoint (exactly once).
 *   RETRY  roll back and redo the chunk after a backoff; a lost connection is
 *          re-established and the step resumes from what the repository says
 *          was committed (a commit whose answer was lost may have happened).
 *   FAIL   roll back and fail the step; everything committed stays.
 * A fencing or version failure of the checkpoint is always FAIL.
 */
#include "step_chunk.h"
#include "pgkit.h"
#include "clock.h"
#include "repo.h"
#include "step_context.h"
#include "reserved.h"
#include "text.h"
#include "tx.h"
#include "cbatch/writers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void describe(chunk_step *cs, const void *item, char *buf, size_t size)
{
	buf[0] = '\0';
	if (item && cs->parts.reader.describe)
		cs->parts.reader.describe(cs->parts.reader.state, item, buf, size);
}

/* A callback failed: make sure the message says which one, and on what. */
static int callback_failed(chunk_step *cs, int rc, const char *what, const void *item,
			   cb_error *err)
{
	char key[160] = "";

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

/* Tell the writers with output outside the transaction what became of it. */
#define WRITERS_HOOK(cs, hook)                                                                     \
	do {                                                                                       \
		for (size_t w_ = 0; w_ < (cs)->parts.nwriters; w_++)                               \
			if ((cs)->parts.writers[w_].hook)                                          \
				(cs)->parts.writers[w_].hook((cs)->parts.writers[w_].state);       \
	} while (0)

void cb__chunk_close_parts(chunk_step *cs)
{
	cb_chunk_parts *p = &cs->parts;

	if (cs->processor_open && p->processor.close)
		p->processor.close(p->processor.state);
	for (size_t i = 0; i < cs->writers_open; i++)
		if (p->writers[i].close)
			p->writers[i].close(p->writers[i].state);
	if (cs->reader_open && p->reader.close)
		p->reader.close(p->reader.state);
	if (cs->built) {
		for (size_t i = 0; i < p->nwriters && i < CB_MAX_WRITERS; i++)
			if (p->writers[i].free)
				p->writers[i].free(p->writers[i].state);
		if (p->processor.free)
			p->processor.free(p->processor.state);
		if (p->reader.free)
			p->reader.free(p->reader.state);
	}
	memset(p, 0, sizeof(*p));
	cs->built = cs->reader_open = cs->processor_open = 0;
	cs->writers_open = 0;
}

static int open_parts(chunk_step *cs, cb_error *err)
{
	cb_chunk_parts *p = &cs->parts;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = cs->def->build(cs->def->user, &cs->sc, p, err);
	cs->built = 1;
	if (rc < 0)
		return callback_failed(cs, rc, "build", NULL, err);
	if (!p->reader.read)
		return cb_error_set(err, CB_EINVAL, "build gave no reader (no read function)");
	if (cb__version_check(p->reader.version, CB_READER_VERSION, "reader", err) < 0)
		return cb_error_prefix(err, "build");
	/* Members after the reader's version are not its own: never read them. */
	memset((char *)&p->reader + cb__reader_size(p->reader.version), 0,
	       sizeof(p->reader) - cb__reader_size(p->reader.version));
	if (p->nwriters < 1 || p->nwriters > CB_MAX_WRITERS)
		return cb_error_set(err, CB_EINVAL, "build gave %zu writers (1..%d allowed)",
				    p->nwriters, CB_MAX_WRITERS);
	for (size_t i = 0; i < p->nwriters; i++) {
		cb_writer *w = &p->writers[i];

		if (!w->write)
			return cb_error_set(err, CB_EINVAL,
					    "build: writer %zu has no write function", i);
		if (cb__version_check(w->version, CB_WRITER_VERSION, "writer", err) < 0)
			return cb_error_prefix(err, "build: writer %zu", i);
		/* Members after the writer's version are not its own: never read them. */
		memset((char *)w + cb__writer_size(w->version), 0,
		       sizeof(*w) - cb__writer_size(w->version));
	}
	if (p->processor.process) {
		if (cb__version_check(p->processor.version, CB_PROCESSOR_VERSION, "processor",
				      err) < 0)
			return cb_error_prefix(err, "build");
		memset((char *)&p->processor + cb__processor_size(p->processor.version), 0,
		       sizeof(p->processor) - cb__processor_size(p->processor.version));
	}
	if (p->reader.open) {
		rc = p->reader.open(p->reader.state, &cs->sc,
				    json_object_get(cs->context, "reader"), err);
		if (rc < 0)
			return callback_failed(cs, rc, "reader open", NULL, err);
	}
	cs->reader_open = 1;
	for (size_t i = 0; i < p->nwriters; i++) {
		char key[32];

		snprintf(key, sizeof(key), "writer.%zu", i);
		if (p->writers[i].open) {
			rc = p->writers[i].open(p->writers[i].state, &cs->sc,
						json_object_get(cs->context, key), err);
			if (rc < 0)
				return callback_failed(cs, rc, "writer open", NULL, err);
		}
		cs->writers_open = i + 1;
	}
	if (p->processor.process) {
		rc = p->processor.open ? p->processor.open(p->processor.state, &cs->sc, err) : 0;
		if (rc < 0)
			return callback_failed(cs, rc, "processor open", NULL, err);
		cs->processor_open = 1;
	}
	return 0;
}

/*
 * Ask each component for its position, into the step context. This is
 * where file writers flush their lines: not once the heartbeat knows that
 * the lock is lost (a process that no longer owns the execution writes no
 * file again).
 */
int cb__chunk_update_context(chunk_step *cs, cb_error *err)
{
	cb_chunk_parts *p = &cs->parts;
	int rc;

	if (cb__run_check_lock(cs->run, err) < 0)
		return err->code;
	if (p->reader.update) {
		json_t *o = json_object();

		if (!o)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		rc = p->reader.update(p->reader.state, o, err);
		if (rc < 0) {
			json_decref(o);
			return callback_failed(cs, rc, "reader update", NULL, err);
		}
		json_object_set_new(cs->context, "reader", o);
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
		json_object_set_new(cs->context, key, o);
	}
	return 0;
}

/* The fault's action, by the step's classifier; the checkpoint's own
 * failures (fenced, stale version) are never skippable or retryable. */
static cb_fault_action classify(chunk_step *cs, cb_fault fault, const cb_error *err)
{
	cb_classify_fn fn = cs->def->classify ? cs->def->classify : cb_classify_default;

	if (err->code == CB_EFENCED || err->code == CB_ESTALE)
		return CB_FAULT_FAIL;
	return fn(cs->def->user, fault, err);
}

/* Most skipped items whose messages the step context keeps (newest). */
#define SKIPS_KEPT 20

/*
 * Keep the skip's message in the step context, so that `show` can report
 * it: it commits with the chunk that skipped the item.
 */
static void record_skip(chunk_step *cs, cb_fault fault, const void *item, const cb_error *err)
{
	static const char *const names[] = { "read", "process", "write" };
	json_t *list = json_object_get(cs->context, "skipped");
	char msg[CB_ERROR_MESSAGE_MAX];

	/* json_pack refuses invalid UTF-8: the skip would vanish silently. */
	cb__utf8_sanitize(msg, sizeof(msg), err->message);
	if (!json_is_array(list)) {
		list = json_array();
		if (!list || json_object_set_new(cs->context, "skipped", list) < 0)
			return;
	}
	(void)item; /* the message already names it (callback_failed) */
	json_array_append_new(list, json_pack("{s:s, s:s}", "fault", names[fault], "message", msg));
	while (json_array_size(list) > SKIPS_KEPT)
		json_array_remove(list, 0);
}

/* Count a skip, tell the listeners; CB_EINVAL when over the limit. */
static int skip(chunk_step *cs, cb_fault fault, const void *item, cb_error *err)
{
	const cb_job *job = cs->run->job;

	CB__NOTIFY(job, skip, &cs->sc, fault, item, err);
	record_skip(cs, fault, item, err);
	cs->skips++;
	if ((unsigned long long)cs->skips > cs->skip_limit) {
		char what[CB_ERROR_MESSAGE_MAX];

		snprintf(what, sizeof(what), "%s", err->message);
		cb_error_clear(err);
		return cb_error_set(err, CB_EINVAL, "skip limit %llu exceeded: %s", cs->skip_limit,
				    what);
	}
	cb_error_clear(err);
	return 0;
}

/* Queue the checkpoint @p k of @p c, expecting the step at @p version; its
 * status answer lands in @p status at commit. @p k is borrowed by the
 * pipeline until the commit. */
int cb__chunk_queue_checkpoint(chunk_step *cs, cb__checkpoint *k, long long version, int secondary,
			       const counts *c, char *status, size_t size, cb_error *err)
{
	memset(k, 0, sizeof(*k));
	k->step_execution_id = cs->sc.step_execution_id;
	k->version = version;
	k->secondary = secondary;
	k->read = c->read;
	k->written = c->written;
	k->filtered = c->filtered;
	k->commits = 1;
	k->read_skips = c->read_skip;
	k->write_skips = c->write_skip;
	k->process_skips = c->process_skip;
	k->context = cs->context;
	k->job_execution_id = cs->sc.job_execution_id;
	cb__run_fence(cs->run, k);
	k->status = status;
	k->status_size = size;
	return cb__repo_checkpoint_queue(cs->tx, cs->checkpoint_stmt, k, err);
}

static int queue_checkpoint(chunk_step *cs, const counts *c, char *status, size_t size,
			    cb_error *err)
{
	return cb__chunk_queue_checkpoint(cs, &cs->checkpoint, cs->version, 0, c, status, size,
					  err);
}

static int write_items(chunk_step *cs, void *const *items, size_t n, cb_error *err)
{
	for (size_t i = 0; n > 0 && i < cs->parts.nwriters; i++) {
		int rc;

		cs->write_called[i] = 1;
		rc = cs->parts.writers[i].write(cs->parts.writers[i].state, cs->tx, items, n, err);

		if (rc < 0)
			return callback_failed(cs, rc, "write", n == 1 ? items[0] : NULL, err);
	}
	return 0;
}

/* The chunk's filtered items, to the writers that ask for them. */
static int write_filtered(chunk_step *cs, cb_error *err)
{
	for (size_t i = 0; cs->nfiltered > 0 && i < cs->parts.nwriters; i++) {
		cb_writer *w = &cs->parts.writers[i];
		int rc;

		if (!w->write_filtered)
			continue;
		cs->write_called[i] = 1;
		rc = w->write_filtered(w->state, cs->tx, cs->filtered, cs->nfiltered, err);
		if (rc < 0)
			return callback_failed(cs, rc, "write_filtered", NULL, err);
	}
	return 0;
}

/*
 * A chunk up to its writes: BEGIN, read, process, write. Read and process
 * faults classified SKIP are absorbed here; any other failure returns with
 * a->failed and a->fault set, the transaction still to be rolled back. An
 * empty chunk returns 0 with nothing written.
 */
int cb__chunk_fill(chunk_step *cs, attempt *a, cb_error *err)
{
	cb_chunk_parts *p = &cs->parts;
	const cb_job *job = cs->run->job;
	size_t limit = cs->sc.chunk_size;
	int rc;

	memset(a, 0, sizeof(*a));
	cs->nitems = cs->nouts = cs->nfiltered = 0;
	cs->read_called = 0;
	memset(cs->write_called, 0, sizeof(cs->write_called));
	/* Two connections begin the transaction themselves (step_overlap.c). */
	rc = cb__tx_active(cs->tx) ? 0 : cb__tx_begin(cs->tx, err);
	if (rc < 0) {
		a->fault = CB_FAULT_READ;
		return a->failed = rc;
	}
	while (cs->nitems < limit) {
		void *item = NULL;

		cs->read_called = 1;
		rc = p->reader.read(p->reader.state, cs->tx, &item, err);
		if (rc == CB_DONE) {
			a->done = 1;
			break;
		}
		if (rc == CB_CHUNK_END) {
			a->more = 1;
			break;
		}
		if (rc < 0) {
			callback_failed(cs, rc, "read", NULL, err);
			CB__NOTIFY(job, read_error, &cs->sc, err);
			if (classify(cs, CB_FAULT_READ, err) == CB_FAULT_SKIP) {
				a->c.read_skip++;
				if ((rc = skip(cs, CB_FAULT_READ, NULL, err)) == 0)
					continue;
			}
			a->fault = CB_FAULT_READ;
			return a->failed = err->code ? err->code : rc;
		}
		cs->items[cs->nitems++] = item;
	}
	a->c.read = (long long)cs->nitems;
	if (cs->nitems == 0 && a->c.read_skip == 0)
		return 0;
	for (size_t i = 0; i < cs->nitems; i++) {
		void *out = cs->items[i];

		if (p->processor.process) {
			out = NULL;
			rc = p->processor.process(p->processor.state, &cs->chunk, cs->items[i],
						  &out, err);
			if (rc < 0) {
				callback_failed(cs, rc, "process", cs->items[i], err);
				CB__NOTIFY(job, process_error, &cs->sc, cs->items[i], err);
				if (classify(cs, CB_FAULT_PROCESS, err) == CB_FAULT_SKIP) {
					a->c.process_skip++;
					if ((rc = skip(cs, CB_FAULT_PROCESS, cs->items[i], err)) ==
					    0)
						continue;
				}
				a->fault = CB_FAULT_PROCESS;
				return a->failed = err->code ? err->code : rc;
			}
			if (!out) {
				a->c.filtered++;
				cs->filtered[cs->nfiltered++] = cs->items[i];
				continue;
			}
		}
		cs->outs[cs->nouts++] = out;
	}
	a->c.written = (long long)cs->nouts;
	a->fault = CB_FAULT_WRITE;
	rc = write_items(cs, cs->outs, cs->nouts, err);
	if (rc == 0)
		rc = write_filtered(cs, err);
	if (rc < 0)
		return a->failed = rc;
	return 0;
}

/*
 * One attempt at a chunk, up to and including COMMIT. Failures return as
 * cb__chunk_fill's, the transaction still to be rolled back.
 */
static int attempt_chunk(chunk_step *cs, attempt *a, char *status, size_t status_size,
			 cb_error *err)
{
	const cb_job *job = cs->run->job;
	int rc = cb__chunk_fill(cs, a, err);

	if (rc < 0 && a->fault != CB_FAULT_WRITE)
		return rc;
	if (rc == 0 && cs->nitems == 0 && a->c.read_skip == 0)
		return 0;
	if (rc == 0)
		rc = cb__chunk_update_context(cs, err);
	if (rc == 0)
		rc = queue_checkpoint(cs, &a->c, status, status_size, err);
	if (rc == 0)
		rc = cb__tx_commit(cs->tx, err);
	if (rc < 0) {
		CB__NOTIFY(job, write_error, &cs->sc, cs->outs, cs->nouts, err);
		return a->failed = rc;
	}
	return 0;
}

/*
 * The chunk's write failed with a skippable error: write its items one by
 * one under savepoints in a new transaction, skip the failing ones, and
 * commit the rest with the checkpoint. The items are the ones already read
 * and processed; the reader is not rewound.
 */
static int scan_chunk(chunk_step *cs, attempt *a, char *status, size_t status_size, cb_error *err)
{
	int rc = cb__tx_begin(cs->tx, err);
	size_t kept = 0;

	if (rc == 0)
		rc = write_filtered(cs, err);

	for (size_t i = 0; rc == 0 && i < cs->nouts; i++) {
		rc = cb__tx_command(cs->tx, "SAVEPOINT cb_scan", err);
		if (rc < 0)
			break;
		WRITERS_HOOK(cs, savepoint);
		rc = write_items(cs, &cs->outs[i], 1, err);
		if (rc == 0)
			rc = cb_tx_flush(cs->tx, err);
		if (rc == 0) {
			rc = cb__tx_command(cs->tx, "RELEASE SAVEPOINT cb_scan", err);
			cs->outs[kept++] = cs->outs[i];
			continue;
		}
		CB__NOTIFY(cs->run->job, write_error, &cs->sc, &cs->outs[i], 1, err);
		if (classify(cs, CB_FAULT_WRITE, err) != CB_FAULT_SKIP)
			break;
		{
			cb_error e2 = CB_ERROR_INIT;

			rc = cb__tx_command(cs->tx, "ROLLBACK TO SAVEPOINT cb_scan", &e2);
			if (rc < 0) {
				cb_error_clear(err);
				*err = e2;
				break;
			}
			WRITERS_HOOK(cs, rollback_to_savepoint);
		}
		a->c.write_skip++;
		rc = skip(cs, CB_FAULT_WRITE, cs->outs[i], err);
	}
	cs->nouts = kept;
	a->c.written = (long long)kept;
	if (rc == 0)
		rc = cb__chunk_update_context(cs, err);
	if (rc == 0)
		rc = queue_checkpoint(cs, &a->c, status, status_size, err);
	if (rc == 0)
		rc = cb__tx_commit(cs->tx, err);
	return rc;
}

/* Resume after the database came back (cb__run_ride_through): the parts
 * are reopened from the last committed checkpoint, whose version also tells
 * whether a COMMIT whose answer was lost went through. */
int cb__chunk_resume(void *ctx, cb_error *err)
{
	chunk_step *cs = ctx;
	json_t *saved = NULL;
	int rc;

	cb__chunk_close_parts(cs);
	rc = cb__repo_step_state(&cs->version, &saved, cs->sc.conn, cs->sc.step_execution_id, err);
	if (rc < 0)
		return rc;
	/* The partition's definition lives in its context: keep it (the saved
	 * one carries the same) and point the step context at the new copy. */
	if (saved && cs->sc.partition)
		json_object_set(saved, "partition", (json_t *)cs->sc.partition);
	json_object_clear(cs->context);
	json_object_update(cs->context, saved);
	json_decref(saved);
	if (cs->sc.partition)
		cs->sc.partition = json_object_get(cs->context, "partition");
	rc = cb__repo_checkpoint_prepare(cs->sc.conn, cs->checkpoint_stmt, "ckpt", err);
	if (rc == 0)
		rc = open_parts(cs, err);
	return rc;
}

/* A stop signal cuts the backoff short: the loop then ends the step. */
static void backoff(const cb_step_def *def, unsigned int attempt_no)
{
	unsigned long ms = def->retry_backoff_ms ? def->retry_backoff_ms : 100;

	for (unsigned int i = 1; i < attempt_no && ms < 30000; i++)
		ms *= 2;
	cb__signals_nap((double)ms / 1000.0);
}

static void add_counts(counts *t, const counts *c)
{
	t->read += c->read;
	t->written += c->written;
	t->filtered += c->filtered;
	t->read_skip += c->read_skip;
	t->process_skip += c->process_skip;
	t->write_skip += c->write_skip;
}

static void report_progress(chunk_step *cs)
{
	const cb_launch_options *o = cs->run->opts;

	if (o->progress)
		o->progress(o->progress_ctx, cs->def->name, cs->total.read, cs->total.written,
			    cb__clock_mono() - cs->run->started);
}

/*
 * Roll back what is open, the writers' outside output, and (when the chunk
 * will be read again) what the reader buffered; count it. @p why is the
 * chunk's error. The writers' output is left alone when this process lost
 * its lock (fenced, or its step execution changed by another: the files may
 * be another owner's now) or its connection (the COMMIT may have happened:
 * the committed context in the repository settles it when the parts are
 * reopened, on reconnect or restart).
 */
static void roll_back(chunk_step *cs, cb__step_outcome *out, int rewind_reader, const cb_error *why)
{
	cb_error ignored = CB_ERROR_INIT;
	int keep_output = why->code == CB_EFENCED || why->code == CB_ESTALE ||
			  PQstatus(cs->sc.conn) != CONNECTION_OK;

	cb__tx_rollback(cs->tx, &ignored);
	for (size_t i = 0; i < cs->parts.nwriters && !keep_output; i++) {
		cb_writer *w = &cs->parts.writers[i];

		if (cs->write_called[i] && w->rollback)
			w->rollback(w->state);
	}
	if (rewind_reader && cs->read_called && cs->parts.reader.rollback)
		cs->parts.reader.rollback(cs->parts.reader.state);
	out->rollbacks++;
}

/* The database went away under the chunk (a failover, a switchover, a
 * restart): not the items' fault, so no retry is spent on it. @return 0 to
 * go on, 1 to stop (asked during the outage), or the error. */
static int ride_through(chunk_step *cs, cb__step_outcome *out, cb_error *err)
{
	char where[160];

	roll_back(cs, out, 1, err);
	cb__chunk_close_parts(cs);
	snprintf(where, sizeof(where), "chunk %lld", cs->commits + 1);
	return cb__run_ride_through(cs->run, cs->sc.conn, cs->sc.step_name, where, cb__chunk_resume,
				    cs, err);
}

/* The step's last chunk committed: let writers finish their output (not
 * once the heartbeat knows that the lock is lost: no publishing then). */
int cb__chunk_complete_writers(chunk_step *cs, cb_error *err)
{
	if (cb__run_check_lock(cs->run, err) < 0)
		return err->code;
	for (size_t i = 0; i < cs->parts.nwriters; i++) {
		cb_writer *w = &cs->parts.writers[i];
		int rc = w->complete ? w->complete(w->state, err) : 0;

		if (rc < 0)
			return callback_failed(cs, rc, "writer complete", NULL, err);
	}
	return 0;
}

/*
 * A strict status transition found rows another run took (writers.h): the
 * event is counted on the step execution at once, in its own transaction,
 * because the chunk that met it rolls back. Best effort: the count is a
 * statistic, the chunk's outcome does not depend on it.
 */
static void count_transition_conflict(chunk_step *cs)
{
	/* The job's counter (sql/011) in the same statement: metrics read it
	 * without summing the history. */
	static const char sql[] =
		"WITH u AS (UPDATE batch_step_execution"
		" SET transition_conflict_count = transition_conflict_count + 1"
		" WHERE step_execution_id = $1::bigint RETURNING job_execution_id) "
		"SELECT batch_metric_add('transition_conflict_count', i.job_name, 1) FROM u "
		"JOIN batch_job_execution e USING (job_execution_id) "
		"JOIN batch_job_instance i USING (job_instance_id)";
	char id[24];
	const char *params[1] = { id };
	PGresult *res;

	if (PQstatus(cs->sc.conn) != CONNECTION_OK ||
	    PQpipelineStatus(cs->sc.conn) != PQ_PIPELINE_OFF)
		return;
	snprintf(id, sizeof(id), "%lld", cs->sc.step_execution_id);
	res = PQexecParams(cs->sc.conn, sql, 1, NULL, params, NULL, NULL, 0);
	PQclear(res);
}

static int transition_conflict(const cb_error *err)
{
	return strcmp(err->sqlstate, CB_SQLSTATE_TRANSITION_REREAD) == 0 ||
	       strcmp(err->sqlstate, CB_SQLSTATE_TRANSITION_CONFLICT) == 0;
}

/* A chunk committed: count it and tell the listeners. */
void cb__chunk_committed(chunk_step *cs, const counts *c)
{
	cs->version++;
	cs->commits++;
	add_counts(&cs->total, c);
	CB__NOTIFY(cs->run->job, after_chunk, &cs->sc);
	report_progress(cs);
}

/* Run chunks until the input ends, a stop, or a failure. */
static void run_chunks(chunk_step *cs, cb__step_outcome *out)
{
	const cb_job *job = cs->run->job;
	cb_error *err = &out->error;
	unsigned int retries = 0;

	for (;;) {
		attempt a;
		char status[16] = "";
		cb_fault_action action;
		int rc;

		if (cs->connections == 2 && !cs->solo && cs->falls < CB__CHUNK_MAX_FALLS &&
		    cb__chunk_run_two(cs, out) == 0)
			return;

		if (cb__run_quitting(cs->run)) {
			out->status = CB_STATUS_STOPPED;
			return;
		}
		if (cb__run_check_lock(cs->run, err) < 0)
			return;
		cb__arena_reset(&cs->chunk.arena);
		CB__NOTIFY(job, before_chunk, &cs->sc);
		rc = attempt_chunk(cs, &a, status, sizeof(status), err);
		if (rc == 0 && a.c.read == 0 && a.c.read_skip == 0 && a.more) {
			/* The reader ended an empty chunk but not its input. */
			if (cb__tx_rollback(cs->tx, err) < 0)
				return;
			if (cs->parts.reader.rollback)
				cs->parts.reader.rollback(cs->parts.reader.state);
			continue;
		}
		if (rc == 0 && a.c.read == 0 && a.c.read_skip == 0) {
			/* Nothing left: end the (empty) transaction. */
			if (cb__tx_rollback(cs->tx, err) == 0 &&
			    cb__chunk_complete_writers(cs, err) == 0)
				out->status = CB_STATUS_COMPLETED;
			return;
		}
		if (rc < 0 && cb__pg_lost(err, cs->sc.conn)) {
			CB__NOTIFY(job, chunk_error, &cs->sc, err);
			rc = ride_through(cs, out, err);
			if (rc == 0)
				continue;
			if (rc > 0)
				out->status = CB_STATUS_STOPPED;
			return;
		}
		if (rc < 0) {
			CB__NOTIFY(job, chunk_error, &cs->sc, err);
			if (transition_conflict(err)) {
				/* Never retried or skipped as a plain error: the rows are
				 * another run's; re-read (bounded by the writer) or fail. */
				int reread =
					strcmp(err->sqlstate, CB_SQLSTATE_TRANSITION_REREAD) == 0 &&
					cs->parts.reader.rollback;

				roll_back(cs, out, 1, err);
				count_transition_conflict(cs);
				if (reread) {
					cb_error_clear(err);
					continue;
				}
				if (strcmp(err->sqlstate, CB_SQLSTATE_TRANSITION_REREAD) == 0)
					cb_error_prefix(err,
							"chunk %lld (the reader cannot re-read)",
							cs->commits + 1);
				else
					cb_error_prefix(err, "chunk %lld", cs->commits + 1);
				return;
			}
			action = classify(cs, a.fault, err);
			if (action == CB_FAULT_SKIP && a.fault == CB_FAULT_WRITE) {
				roll_back(cs, out, 0, err);
				cb_error_clear(err);
				a.c.write_skip = 0;
				rc = scan_chunk(cs, &a, status, sizeof(status), err);
				if (rc < 0) {
					roll_back(cs, out, 1, err);
					cb_error_prefix(err, "chunk %lld (item by item)",
							cs->commits + 1);
					return;
				}
			} else if (action == CB_FAULT_RETRY && retries < cs->def->retry_limit &&
				   cs->parts.reader.rollback) {
				/* A reader that cannot rewind cannot retry (a lost
				 * connection is ridden through above, not retried). */
				roll_back(cs, out, 1, err);
				retries++;
				backoff(cs->def, retries);
				cb_error_clear(err);
				continue;
			} else {
				roll_back(cs, out, 1, err);
				if (action == CB_FAULT_RETRY && cs->def->retry_limit > 0)
					cb_error_prefix(err, "chunk %lld: retry limit %u exhausted",
							cs->commits + 1, cs->def->retry_limit);
				else
					cb_error_prefix(err, "chunk %lld", cs->commits + 1);
				return;
			}
		}
		retries = 0;
		cs->solo = 0;
		cb__chunk_committed(cs, &a.c);
		if (strcmp(status, "STOPPING") == 0) {
			out->status = CB_STATUS_STOPPED;
			return;
		}
		if (a.done) {
			if (cb__chunk_complete_writers(cs, err) == 0)
				out->status = CB_STATUS_COMPLETED;
			return;
		}
	}
}

int cb__step_chunk_run(cb__run *run, const cb_step_def *def, cb_step_context *sc, json_t *context,
		       cb__step_outcome *out)
{
	chunk_step cs;
	cb_error *err = &out->error;
	long long n;

	memset(&cs, 0, sizeof(cs));
	cs.run = run;
	cs.def = def;
	cs.sc = *sc;
	cs.context = context;
	cs.version = sc->version; /* 0 for a new step; a claimed partition's moved on */
	cs.chunk.sc = &cs.sc;
	cb__arena_init(&cs.chunk.arena);
	out->status = CB_STATUS_FAILED;
	out->before_chunks = 1;

	/* Checked at launch already; a set stored before that check may still
	 * hold a bad value, and the reader's bounds are the launcher's. */
	if (cb__reserved_long(&n, run->params, "chunk.size",
			      def->chunk_size ? (long long)def->chunk_size : CB_DEFAULT_CHUNK_SIZE,
			      err) < 0 ||
	    (cs.sc.chunk_size = (size_t)n,
	     cb__reserved_long(&n, run->params, "skip.limit", def->skip_limit, err) < 0))
		goto done;
	cs.skip_limit = (unsigned long long)n;
	if (cb__step_connections(&cs.connections, def, run->params, err) < 0)
		goto done;
	cs.items = calloc(cs.sc.chunk_size, sizeof(void *));
	cs.outs = calloc(cs.sc.chunk_size, sizeof(void *));
	cs.filtered = calloc(cs.sc.chunk_size, sizeof(void *));
	if (!cs.items || !cs.outs || !cs.filtered) {
		cb_error_set(err, CB_ENOMEM, "out of memory (chunk of %zu)", cs.sc.chunk_size);
		goto done;
	}
	if (cb__tx_new(&cs.tx, run->conn, 1, err) < 0)
		goto done;
	if (cb__repo_checkpoint_prepare(run->conn, cs.checkpoint_stmt, "ckpt", err) < 0 ||
	    open_parts(&cs, err) < 0 ||
	    (cs.connections == 2 && cb__parts_overlap_check(&cs.parts, err) < 0)) {
		/* The session lost before the first chunk (a switchover as the
		 * step starts) is waited out as one lost inside a chunk. */
		int rc = cb__pg_lost(err, run->conn) ? ride_through(&cs, out, err) : -1;

		if (rc > 0)
			out->status = CB_STATUS_STOPPED;
		if (rc != 0)
			goto done;
	}
	run_chunks(&cs, out);
	out->before_chunks = 0;
done:
	if (cs.tx && cb__tx_active(cs.tx)) {
		cb_error ignored = CB_ERROR_INIT;

		cb__tx_rollback(cs.tx, &ignored);
	}
	cb__chunk_close_parts(&cs);
	cb__chunk_lane_drop(&cs);
	cb__tx_free(cs.tx);
	cb__arena_free(&cs.chunk.arena);
	free(cs.items);
	free(cs.outs);
	free(cs.filtered);
	if (cs.checkpoint_stmt[0] && PQstatus(run->conn) == CONNECTION_OK) {
		/* A long-lived program reuses the connection: leave no statement behind. */
		char sql[96];
		PGresult *res;

		snprintf(sql, sizeof(sql), "DEALLOCATE %s", cs.checkpoint_stmt);
		res = PQexec(run->conn, sql);
		PQclear(res);
	}
	/* The exit status a processor or writer set travels back to the flow. */
	memcpy(sc->exit_status, cs.sc.exit_status, sizeof(sc->exit_status));
	return out->status == CB_STATUS_FAILED ? err->code : 0;
}
