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

static const CU_TestInfo tests[] = {
	{ "separators in values are escaped", test_separators_in_values_are_escaped },
	{ "plain names are unchanged", test_plain_names_are_unchanged },
	{ "long names fall back to a key no parameter can forge",
	  test_long_names_fall_back_to_a_key_no_parameter_can_forge },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("lock_name", NULL, NULL, tests);
}
