/*
 * The ledger job as a partitioned step: the unprocessed accounts are split
 * into contiguous id ranges (boundaries from a sample of the ids), and each
 * range is posted by a worker — a thread of the launching process
 * (-partition.threads:long=K) or a `worker` process on any host. Every
 * partition is the ledger step itself: the keyset reader adds its range to
 * its WHERE, the same writers commit with each chunk's checkpoint. The final
 * tables are those of `ledger`.
 */
#include "examples.h"

static const char *const account_key[] = { "id", NULL };

static int partition(void *user, const cb_step_context *sc, size_t count, json_t *out,
		     cb_error *err)
{
	cb_key_range_options o = CB_KEY_RANGE_OPTIONS_INIT;

	(void)user;
	o.table = "account";
	o.key_columns = account_key;
	o.where = "NOT processed"; /* balance what is left to do, not the whole table */
	return cb_partition_key_ranges(out, cb_step_context_conn(sc), &o, count, err);
}

int ledger_partitioned_register(cb_registry *reg, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "post-accounts";
	step.chunk_size = 1000;
	step.build = ledger_build;
	step.partition = partition;
	step.partitions = 4;
	if ((rc = cb_registry_new_job(&job, reg, "ledger_partitioned", err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0 ||
	    (rc = cb_job_set_description(job,
					 "post unprocessed accounts into the ledger, in key-range "
					 "partitions run by threads and worker processes",
					 err)) < 0)
		return rc;
	/* The same tables as `ledger`: the same lock, so that the two never overlap. */
	return cb_job_set_lock(job, "ledger", CB_DEFAULT_LEASE_SECONDS, 0, err);
}
