/*
 * The outbox job: drain the outbox table with several workers at once.
 *
 *   partitions  K identical ones (-partition.count:long=K): each a worker
 *               draining the same queue, threads or `worker` processes
 *   reader      the work-queue reader: each chunk claims up to a chunk of
 *               READY messages FOR UPDATE SKIP LOCKED, so workers take
 *               disjoint messages and the fast ones take more
 *   writers     deliver (upsert outbox_delivery by message id), then mark
 *               the message SENT (only if still READY)
 *
 * A worker killed mid-chunk rolls back: its claimed messages are unlocked and
 * the others take them; its partition is resumed after its lease, so nothing
 * is left behind.
 */
#include "examples.h"

enum {
	COL_ID,
	COL_TOPIC,
	COL_PAYLOAD
};

static const char *const outbox_columns[] = { "id", "topic", "payload", NULL };
static const char *const outbox_key[] = { "id", NULL };
static const char *const delivery_columns[] = { "message_id", "topic", "payload", NULL };
static const char *const delivery_key[] = { "message_id", NULL };

static int bind_delivery(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			 cb_error *err)
{
	const cb_row *row = item;

	(void)ctx, (void)sc, (void)err;
	for (int c = COL_ID; c <= COL_PAYLOAD; c++)
		cb_values_set(out, (size_t)c, cb_row_get(row, c), cb_row_len(row, c));
	return 0;
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_queue_options qo = CB_PG_QUEUE_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options so = CB_PG_STATUS_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user, (void)sc;
	qo.table = "outbox";
	qo.columns = outbox_columns;
	qo.key_columns = outbox_key;
	qo.where = "status = 'READY'";
	if ((rc = cb_pg_queue_reader_new(&parts->reader, &qo, err)) < 0)
		return rc;

	uo.table = "outbox_delivery";
	uo.columns = delivery_columns;
	uo.key_columns = delivery_key;
	uo.bind = bind_delivery;
	uo.stamp_column = "job_execution_id";
	if ((rc = cb_pg_upsert_writer_new(&w, &uo, err)) < 0 ||
	    (rc = cb_chunk_parts_add_writer(parts, &w, err)) < 0)
		return rc;

	so.table = "outbox";
	so.key_columns = outbox_key;
	so.set_column = "status";
	so.set_value = "SENT";
	so.expect_column = "status";
	so.expect_value = "READY";
	if ((rc = cb_pg_status_writer_new(&w, &so, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static int partition(void *user, const cb_step_context *sc, size_t count, json_t *out,
		     cb_error *err)
{
	(void)user, (void)sc;
	return cb_partition_copies(out, count, err);
}

int outbox_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "deliver";
	step.chunk_size = 500;
	step.build = build;
	step.partition = partition;
	step.partitions = 4;
	if ((rc = cb_registry_new_job(&job, reg, "outbox", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_set_description(job,
					 "deliver the outbox's ready messages once each, with "
					 "several workers draining it at once",
					 err)) < 0)
		return rc;
	/* One drain of the outbox at a time, whatever the parameters: the
	 * reader takes every ready message, so the range is the whole job. */
	return cb_job_set_lock_scope(job, CB_LOCK_SCOPE_JOB, err);
}
