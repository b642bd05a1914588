/* The numbers test job's reader, processor and writer (see numbers.h). */
#include "numbers.h"

#include "cbatch/sys/tx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int listed(const long long *set, long long v)
{
	for (int i = 0; i < CBT_NUMBERS_MAX_FAULTS; i++)
		if (set[i] == v)
			return 1;
	return 0;
}

static int n_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	cbt_numbers *n = state;

	/* Room for a chunk plus the records a skip policy may pass over. */
	n->cap = cb_step_context_chunk_size(sc) + CBT_NUMBERS_MAX_FAULTS;
	free(n->buf);
	n->buf = calloc(n->cap, sizeof(long long));
	n->committed = saved ? json_integer_value(json_object_get(saved, "next")) : 1;
	n->next = n->committed;
	n->used = 0;
	return n->buf ? 0 : cb_error_set(err, CB_ENOMEM, "out of memory");
}

static int n_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	cbt_numbers *n = state;
	long long v;

	(void)tx;
	/* A read after update() means that chunk committed (see item.h). */
	if (n->pending) {
		n->committed = n->pending;
		n->pending = 0;
	}
	if (n->empty_chunk_ends > 0 && n->used == 0) {
		n->empty_chunk_ends--;
		return CB_CHUNK_END;
	}
	if (n->end_chunk_every && n->used == n->end_chunk_every && n->next <= n->last)
		return CB_CHUNK_END;
	if (n->next > n->last)
		return CB_DONE;
	v = n->next++;
	if (listed(n->fail_read, v))
		return cb_error_set(err, CB_EINVAL, "number %lld is unreadable", v);
	if (n->used == n->cap)
		return cb_error_set(err, CB_ERROR, "numbers reader: more items than a chunk");
	n->buf[n->used] = v;
	*item = &n->buf[n->used++];
	n->reads++;
	return 0;
}

static int n_update(void *state, json_t *out, cb_error *err)
{
	cbt_numbers *n = state;

	(void)err;
	n->pending = n->next;
	n->used = 0;
	return json_object_set_new(out, "next", json_integer(n->next));
}

static void n_rollback(void *state)
{
	cbt_numbers *n = state;

	n->pending = 0;
	n->next = n->committed;
	n->used = 0;
}

static void n_describe(void *state, const void *item, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "n=%lld", *(const long long *)item);
}

static void n_close(void *state)
{
	cbt_numbers *n = state;

	free(n->buf);
	n->buf = NULL;
}

static int n_process(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	cbt_numbers *n = state;
	long long v = *(long long *)item;

	(void)chunk;
	n->processed++;
	if (listed(n->fail_process, v))
		return cb_error_set(err, CB_EINVAL, "number %lld is poison", v);
	*out = (n->drop_odd && v % 2) ? NULL : item;
	return 0;
}

static int w_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	cbt_numbers *n = state;
	int rc;

	(void)saved;
	n->job_execution_id = cb_step_context_job_execution_id(sc);
	rc = cb_pg_prepare(cb_step_context_conn(sc), n->stmt, "sink",
			   "INSERT INTO sink (n) SELECT unnest($1::bigint[])", 1, err);
	if (rc == 0 && n->extra_sql)
		rc = cb_pg_prepare(cb_step_context_conn(sc), n->extra_stmt, "extra", n->extra_sql,
				   0, err);
	return rc;
}

static int w_write(void *state, cb_tx *tx, void *const *items, size_t count, cb_error *err)
{
	cbt_numbers *n = state;
	char *arr = malloc(count * 24 + 3), *p = arr;
	const char *values[1];
	int rc;

	if (!arr)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	*p++ = '{';
	for (size_t i = 0; i < count; i++)
		p += sprintf(p, "%s%lld", i ? "," : "", *(const long long *)items[i]);
	*p++ = '}';
	*p = '\0';
	values[0] = arr;
	rc = cb_tx_send(tx, n->stmt, 1, values, NULL, NULL, NULL, NULL, err);
	free(arr);
	if (rc == 0 && n->extra_sql)
		rc = cb_tx_send(tx, n->extra_stmt, 0, NULL, NULL, NULL, NULL, NULL, err);
	n->writes += (long long)count;
	if (++n->chunks_written == n->stop_after_chunks) {
		cb_error e2 = CB_ERROR_INIT;
		PGconn *other = PQconnectdb(n->stop_conninfo);

		if (cb_repo_request_stop(other, n->job_execution_id, &e2) < 0)
			fprintf(stderr, "numbers: stop request failed: %s\n", e2.message);
		PQfinish(other);
	}
	return rc;
}

int cbt_numbers_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cbt_numbers *n = user;

	(void)sc;
	(void)err;
	parts->reader = (cb_reader){ .version = CB_READER_VERSION,
				     .state = n,
				     .open = n_open,
				     .read = n_read,
				     .update = n_update,
				     .describe = n_describe,
				     .rollback = n_rollback,
				     .close = n_close };
	parts->processor =
		(cb_processor){ .version = CB_PROCESSOR_VERSION, .state = n, .process = n_process };
	parts->writers[0] = (cb_writer){
		.version = CB_WRITER_VERSION, .state = n, .open = w_open, .write = w_write
	};
	parts->nwriters = 1;
	return 0;
}
