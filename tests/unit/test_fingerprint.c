/*
 * The fingerprint of a partitioned step's definition (framework/worker.c),
 * which decides which workers may claim its partitions: the same for the same
 * definition in any process and build (pinned), different when what a
 * partition does changes (names, limits, classifier, revision), the same when
 * only the pace or the split of a run changes (chunk size, partition count,
 * backoff, callbacks' addresses), and version 2 definitions never read the
 * revision member they do not have.
 */
#include "cbatch.h"

#include <string.h>

#include "cbtest.h"
#include "worker.h"

static int build_a(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	(void)user, (void)sc, (void)parts, (void)err;
	return 0;
}

static int build_b(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	(void)user, (void)sc, (void)parts, (void)err;
	return 1;
}

static int split(void *user, const cb_step_context *sc, size_t count, json_t *out, cb_error *err)
{
	(void)user, (void)sc;
	return cb_partition_copies(out, count, err);
}

static cb_fault_action mine(void *user, cb_fault fault, const cb_error *err)
{
	(void)user, (void)fault, (void)err;
	return CB_FAULT_FAIL;
}

/* The fingerprint of @p def as step of a new job @p name into @p out. */
static void fp_of(char *out, size_t size, const char *name, const cb_step_def *def)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, name, &err), &err);
	CBT_PASS_FATAL(cb_job_add_step(job, def, &err), &err);
	CBT_EQ_LL(cb__step_fingerprint(out, size, job, &job->steps[0]), 0);
	cb_job_free(job);
}

static void test_fingerprint(void)
{
	cb_step_def d = CB_STEP_DEF_INIT, e;
	char base[32], fp[32];

	d.name = "post-accounts";
	d.build = build_a;
	d.partition = split;
	fp_of(base, sizeof(base), "ledger_partitioned", &d);
	CBT_EQ_LL((long long)strlen(base), 16);
	/* pinned: a change of the canonical text must be deliberate (it makes
	 * every older worker leave the new partitions alone) */
	CBT_EQ_STR(base, "45488d7befdfb7f2");

	/* what does not change what a partition does */
	e = d;
	e.chunk_size = 7;
	e.partitions = 9;
	e.retry_backoff_ms = 5;
	e.start_limit = 3;
	e.build = build_b;
	e.classify = cb_classify_default;
	fp_of(fp, sizeof(fp), "ledger_partitioned", &e);
	CBT_EQ_STR(fp, base);

	/* what does */
	{
		cb_step_def v[6];
		const char *job[6] = { "other_job",          "ledger_partitioned",
				       "ledger_partitioned", "ledger_partitioned",
				       "ledger_partitioned", "ledger_partitioned" };

		for (int i = 0; i < 6; i++)
			v[i] = d;
		v[1].name = "post";
		v[2].skip_limit = 1;
		v[3].retry_limit = 1;
		v[4].classify = mine;
		v[5].revision = "2";
		for (int i = 0; i < 6; i++) {
			fp_of(fp, sizeof(fp), job[i], &v[i]);
			if (strcmp(fp, base) == 0)
				CBT_FAILF("variant %d has the base fingerprint", i);
		}
		v[4].classify = cb_classify_skip_invalid;
		fp_of(fp, sizeof(fp), job[4], &v[4]);
		if (strcmp(fp, base) == 0)
			CBT_FAILF("the skip-invalid classifier has the base fingerprint");
	}

	/* a version 2 definition has no revision member: never read */
	e = d;
	e.version = 2;
	e.revision = "garbage beyond a version 2 struct";
	fp_of(fp, sizeof(fp), "ledger_partitioned", &e);
	CBT_EQ_STR(fp, base);
}

static const CU_TestInfo tests[] = {
	{ "step definition fingerprint", test_fingerprint },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("fingerprint", NULL, NULL, tests);
}
