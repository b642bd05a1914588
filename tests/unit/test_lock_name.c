/*
 * Default lock names are unambiguous: a value cannot pass for another
 * parameter, so two instances never share a lock by accident.
 */
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

static char *name_of(const char *const *args)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = NULL;
	cb_params *p = NULL;
	char *name = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, "imp", &err), &err);
	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	for (; *args; args++)
		CBT_PASS(cb_params_parse_arg(p, *args, &err), &err);
	CBT_PASS(cb_job_lock_name(&name, job, p, &err), &err);
	cb_params_free(p);
	cb_job_free(job);
	return name;
}

static void test_separators_in_values_are_escaped(void)
{
	static const char *const one[] = { "file=/a,run.id=1", NULL };
	static const char *const two[] = { "file=/a", "run.id=1", NULL };
	static const char *const eq[] = { "a=b=c", NULL };
	static const char *const bs[] = { "a=x\\", "b=y", NULL };
	static const char *const bs2[] = { "a=x\\,b=y", NULL };
	char *n1 = name_of(one), *n2 = name_of(two), *n3 = name_of(eq), *n4 = name_of(bs),
	     *n5 = name_of(bs2);

	CBT_EQ_STR(n1, "imp:file=/a\\,run.id\\=1");
	CBT_EQ_STR(n2, "imp:file=/a,run.id=1");
	CU_ASSERT(strcmp(n1, n2) != 0);
	CBT_EQ_STR(n3, "imp:a=b\\=c");
	/* The escape character is escaped too: "x\" then b=y differs from "x\,b=y". */
	CBT_EQ_STR(n4, "imp:a=x\\\\,b=y");
	CBT_EQ_STR(n5, "imp:a=x\\\\\\,b\\=y");
	CU_ASSERT(strcmp(n4, n5) != 0);
	free(n1);
	free(n2);
	free(n3);
	free(n4);
	free(n5);
}

static void test_plain_names_are_unchanged(void)
{
	static const char *const plain[] = { "run.id:long=7", "who=o'neil; \"x\"", NULL };
	static const char *const none[] = { NULL };
	char *n1 = name_of(plain), *n2 = name_of(none);

	CBT_EQ_STR(n1, "imp:run.id=7,who=o'neil; \"x\"");
	CBT_EQ_STR(n2, "imp");
	free(n1);
	free(n2);
}

static void test_long_names_fall_back_to_a_key_no_parameter_can_forge(void)
{
	char big[600];
	const char *args[2] = { big, NULL };
	char *n;

	memset(big, 'v', sizeof(big) - 1);
	memcpy(big, "key=", 4);
	big[sizeof(big) - 1] = '\0';
	n = name_of(args);
	CBT_EQ_LL(strncmp(n, "imp:#key=", 9), 0);
	CBT_EQ_LL(strlen(n), 9 + 32);
	free(n);
}

/* The lock name of @p job for the parameters @p args. */
static char *name_for(const cb_job *job, const char *const *args)
{
	cb_error err = CB_ERROR_INIT;
	cb_params *p = NULL;
	char *name = NULL;

	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	for (; *args; args++)
		CBT_PASS(cb_params_parse_arg(p, *args, &err), &err);
	CBT_PASS(cb_job_lock_name(&name, job, p, &err), &err);
	cb_params_free(p);
	return name;
}

static void test_job_scope_is_the_job_alone(void)
{
	static const char *const one[] = { "run.id:long=1", NULL };
	static const char *const two[] = { "run.id:long=2", "at=2026-12-02T06:00:00Z", NULL };
	cb_error err = CB_ERROR_INIT;
	cb_job *job = NULL;
	char *n1, *n2;

	CBT_PASS_FATAL(cb_job_new(&job, "totals", &err), &err);
	CBT_EQ_LL(cb_job_lock_scope(job), CB_LOCK_SCOPE_INSTANCE);
	CU_ASSERT_PTR_NULL(cb_job_lock_template(job));
	CBT_PASS(cb_job_set_lock_scope(job, CB_LOCK_SCOPE_JOB, &err), &err);
	CBT_EQ_LL(cb_job_lock_scope(job), CB_LOCK_SCOPE_JOB);
	CBT_EQ_STR(cb_lock_scope_name(cb_job_lock_scope(job)), "job");
	n1 = name_for(job, one);
	n2 = name_for(job, two);
	CBT_EQ_STR(n1, "totals");
	CBT_EQ_STR(n2, "totals");
	free(n1);
	free(n2);
	/* Changing the lease keeps the scope. */
	CBT_PASS(cb_job_set_lock(job, NULL, 5, 0, &err), &err);
	CBT_EQ_LL(cb_job_lock_scope(job), CB_LOCK_SCOPE_JOB);
	n1 = name_for(job, two);
	CBT_EQ_STR(n1, "totals");
	free(n1);
	/* Back to the default. */
	CBT_PASS(cb_job_set_lock_scope(job, CB_LOCK_SCOPE_INSTANCE, &err), &err);
	CBT_EQ_STR(cb_lock_scope_name(cb_job_lock_scope(job)), "instance");
	n1 = name_for(job, one);
	CBT_EQ_STR(n1, "totals:run.id=1");
	free(n1);
	/* A custom range is a template; one that names no parameter is job scope. */
	CBT_FAILS_WITH(CB_EINVAL, cb_job_set_lock_scope(job, CB_LOCK_SCOPE_CUSTOM, &err), &err);
	CBT_CONTAINS(err.message, "cb_job_set_lock");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_job_set_lock_scope(job, (cb_lock_scope)7, &err), &err);
	cb_error_clear(&err);
	CBT_PASS(cb_job_set_lock(job, "{job}:{at}", 0, 0, &err), &err);
	CBT_EQ_LL(cb_job_lock_scope(job), CB_LOCK_SCOPE_CUSTOM);
	CBT_EQ_STR(cb_lock_scope_name(CB_LOCK_SCOPE_CUSTOM), "custom");
	CBT_EQ_STR(cb_job_lock_template(job), "{job}:{at}");
	CBT_PASS(cb_job_set_lock(job, "sales", 0, 0, &err), &err);
	CBT_EQ_LL(cb_job_lock_scope(job), CB_LOCK_SCOPE_JOB);
	cb_job_free(job);
}

static const CU_TestInfo tests[] = {
	{ "separators in values are escaped", test_separators_in_values_are_escaped },
	{ "plain names are unchanged", test_plain_names_are_unchanged },
	{ "long names fall back to a key no parameter can forge",
	  test_long_names_fall_back_to_a_key_no_parameter_can_forge },
	{ "job scope is the job alone", test_job_scope_is_the_job_alone },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("lock_name", NULL, NULL, tests);
}
