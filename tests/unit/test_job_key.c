/*
 * A parameter the job declares non-identifying (cb_job_declare_param,
 * CB_PARAM_NON_IDENTIFYING) names no instance: cb_job_key over parameters
 * that give it, marked or not, is the key of the same parameters without it;
 * cb_job_params_resolve marks it non-identifying and leaves the rest; the
 * default lock name leaves it out. A job that did not declare it keys it as
 * the launch marked it.
 */
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

static cb_job *tuned_job(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, "tuned", &err), &err);
	CBT_PASS(cb_job_declare_param(job, "at", CB_PARAM_STRING, CB_PARAM_REQUIRED, &err), &err);
	CBT_PASS(
		cb_job_declare_param(job, "sleepMs", CB_PARAM_LONG, CB_PARAM_NON_IDENTIFYING, &err),
		&err);
	return job;
}

static cb_params *params_of(const char *const *args)
{
	cb_error err = CB_ERROR_INIT;
	cb_params *p = NULL;

	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	for (; *args; args++)
		CBT_PASS(cb_params_parse_arg(p, *args, &err), &err);
	return p;
}

/* cb_job_key of @p args for @p job (NULL: cb_params_job_key, no job). */
static void key_of(char *out, const cb_job *job, const char *const *args)
{
	cb_error err = CB_ERROR_INIT;
	cb_params *p = params_of(args);

	if (job)
		CBT_PASS(cb_job_key(out, job, p, &err), &err);
	else
		CBT_PASS(cb_params_job_key(out, p, &err), &err);
	cb_params_free(p);
}

static void test_declared_non_identifying_parameter_names_no_instance(void)
{
	static const char *const bare[] = { "at=x", NULL };
	static const char *const given[] = { "at=x", "sleepMs:long=50", NULL };
	static const char *const other[] = { "at=x", "sleepMs:long=7000", NULL };
	static const char *const marked[] = { "at=x", "-sleepMs:long=50", NULL };
	static const char *const at_y[] = { "at=y", "sleepMs:long=50", NULL };
	char want[CB_JOB_KEY_LEN + 1], k1[CB_JOB_KEY_LEN + 1], k2[CB_JOB_KEY_LEN + 1],
		k3[CB_JOB_KEY_LEN + 1], k4[CB_JOB_KEY_LEN + 1], plain[CB_JOB_KEY_LEN + 1];
	cb_job *job = tuned_job();

	key_of(want, NULL, bare);
	key_of(k1, job, given);
	key_of(k2, job, other);
	key_of(k3, job, marked);
	key_of(k4, job, at_y);
	/* Given plain (the declaration wins), with another value, or with its '-':
	 * the key of `at=x` alone. */
	CBT_EQ_STR(k1, want);
	CBT_EQ_STR(k2, want);
	CBT_EQ_STR(k3, want);
	/* An identifying parameter still names another instance. */
	CU_ASSERT(strcmp(k4, want) != 0);
	/* Without the declaration, the plain one is identifying; a job this
	 * program does not have (NULL) declares nothing. */
	key_of(plain, NULL, given);
	CU_ASSERT(strcmp(plain, want) != 0);
	{
		cb_error err = CB_ERROR_INIT;
		cb_params *p = params_of(given);
		char none[CB_JOB_KEY_LEN + 1];

		CBT_PASS(cb_job_key(none, NULL, p, &err), &err);
		CBT_EQ_STR(none, plain);
		cb_params_free(p);
	}
	cb_job_free(job);
}

static void test_resolve_marks_the_declared_one_and_keeps_the_rest(void)
{
	static const char *const given[] = { "at=x", "sleepMs:long=50", "-note=hi", NULL };
	cb_error err = CB_ERROR_INIT;
	cb_job *job = tuned_job();
	cb_params *p = params_of(given), *r = NULL;
	cb_param_type type;
	const char *value;
	int ident = -1;

	CBT_EQ_LL(cb_job_param_identifying(job, "sleepMs"), 0);
	CBT_EQ_LL(cb_job_param_identifying(job, "at"), 1);
	CBT_EQ_LL(cb_job_param_identifying(job, "undeclared"), 1);
	CBT_PASS_FATAL(cb_job_params_resolve(&r, job, p, &err), &err);
	CBT_EQ_LL(cb_params_count(r), 3);
	CBT_PASS(cb_params_find(r, "sleepMs", &type, &value, &ident), &err);
	CBT_EQ_LL(ident, 0);
	CBT_EQ_LL(type, CB_PARAM_LONG);
	CBT_EQ_STR(value, "50");
	CBT_PASS(cb_params_find(r, "at", NULL, NULL, &ident), &err);
	CBT_EQ_LL(ident, 1);
	CBT_PASS(cb_params_find(r, "note", NULL, NULL, &ident), &err);
	CBT_EQ_LL(ident, 0);
	/* The given set is a copy's source, left as it was. */
	CBT_PASS(cb_params_find(p, "sleepMs", NULL, NULL, &ident), &err);
	CBT_EQ_LL(ident, 1);
	/* Declared, not given: nothing to mark. */
	cb_params_free(r);
	r = NULL;
	CBT_PASS(cb_job_params_resolve(&r, job, NULL, &err), &err);
	CBT_EQ_LL(cb_params_count(r), 0);
	cb_params_free(r);
	cb_params_free(p);
	cb_job_free(job);
}

static void test_default_lock_name_leaves_it_out(void)
{
	static const char *const given[] = { "at=x", "sleepMs:long=50", NULL };
	cb_error err = CB_ERROR_INIT;
	cb_job *job = tuned_job();
	cb_params *p = params_of(given);
	char *name = NULL;

	CBT_PASS(cb_job_lock_name(&name, job, p, &err), &err);
	CBT_EQ_STR(name, "tuned:at=x");
	free(name);
	cb_params_free(p);
	cb_job_free(job);
}

static void test_bad_declarations_are_refused(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = tuned_job();

	CBT_FAILS_WITH(
		CB_EINVAL,
		cb_job_declare_param(job, "run.id", CB_PARAM_LONG, CB_PARAM_NON_IDENTIFYING, &err),
		&err);
	CBT_CONTAINS(err.message, "run.id");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_job_declare_param(job, "x", CB_PARAM_LONG, 0x10, &err), &err);
	CBT_CONTAINS(err.message, "flags");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL,
		       cb_job_declare_param(job, "bad name", CB_PARAM_LONG,
					    CB_PARAM_NON_IDENTIFYING, &err),
		       &err);
	cb_error_clear(&err);
	CBT_EQ_LL(cb_job_param_count(job), 2);
	cb_job_free(job);
}

static const CU_TestInfo tests[] = {
	{ "declared_non_identifying_parameter_names_no_instance",
	  test_declared_non_identifying_parameter_names_no_instance },
	{ "resolve_marks_the_declared_one_and_keeps_the_rest",
	  test_resolve_marks_the_declared_one_and_keeps_the_rest },
	{ "default_lock_name_leaves_it_out", test_default_lock_name_leaves_it_out },
	{ "bad_declarations_are_refused", test_bad_declarations_are_refused },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("job_key", NULL, NULL, tests);
}
