/*
 * A program of another build of the examples, for the rolling-upgrade tests
 * (test_partition.c): `cbatch-other-worker MODE ARGS...` runs the cbatch CLI
 * with a job `ledger_partitioned` that is not the examples' one:
 *   nostep  its step `post-accounts` is a plain chunk step (a build from
 *           before the step was partitioned);
 *   other   the step is partitioned but of another revision.
 * Its build always fails: a partition that one of its workers ran would fail
 * the execution, which is what the tests must never see.
 */
#include <stdio.h>
#include <string.h>

#include "cbatch.h"

static int refuse_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	(void)user;
	(void)sc;
	(void)parts;
	return cb_error_set(err, CB_EINVAL, "cbatch-other-worker must never run a partition");
}

static int copies(void *user, const cb_step_context *sc, size_t count, json_t *out, cb_error *err)
{
	(void)user;
	(void)sc;
	return cb_partition_copies(out, count, err);
}

int main(int argc, char **argv)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_registry *reg = NULL;
	cb_job *job;
	int rc;

	if (argc < 2 || (strcmp(argv[1], "nostep") != 0 && strcmp(argv[1], "other") != 0)) {
		fprintf(stderr, "usage: %s nostep|other CBATCH-ARGS...\n", argv[0]);
		return CB_EXIT_USAGE;
	}
	step.name = "post-accounts";
	step.build = refuse_build;
	if (strcmp(argv[1], "other") == 0) {
		step.partition = copies;
		step.revision = "other-build";
	}
	if (cb_registry_new(&reg, &err) < 0 ||
	    cb_registry_new_job(&job, reg, "ledger_partitioned", &err) < 0 ||
	    cb_job_add_step(job, &step, &err) < 0) {
		fprintf(stderr, "cbatch-other-worker: %s\n", err.message);
		cb_registry_free(reg);
		return CB_EXIT_FAILED;
	}
	argv[1] = argv[0];
	rc = cb_cli_main(reg, argc - 1, argv + 1);
	cb_registry_free(reg);
	return rc;
}
