/*
 * Unit tests for the error object (core/error.c): first error wins,
 * context prefixes, one-line messages, truncation, and code names.
 */
#include "cbatch/error.h"
#include "cbtest.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

static void test_init_and_clear(void)
{
	cb_error err = CB_ERROR_INIT;

	CU_ASSERT_EQUAL(err.code, 0);
	CU_ASSERT_STRING_EQUAL(err.sqlstate, "");
	CU_ASSERT_STRING_EQUAL(err.message, "");

	CU_ASSERT_EQUAL(cb_error_set(&err, CB_EDB, "query failed"), CB_EDB);
	memcpy(err.sqlstate, "40001", 6);
	cb_error_clear(&err);
	CU_ASSERT_EQUAL(err.code, 0);
	CU_ASSERT_STRING_EQUAL(err.sqlstate, "");
	CU_ASSERT_STRING_EQUAL(err.message, "");
	cb_error_clear(NULL);
}

static void test_set(void)
{
	cb_error err = CB_ERROR_INIT;

	CU_ASSERT_EQUAL(cb_error_set(&err, CB_EINVAL, "parameter '%s': bad %d", "x", 7), CB_EINVAL);
	CU_ASSERT_EQUAL(err.code, CB_EINVAL);
	CU_ASSERT_STRING_EQUAL(err.message, "parameter 'x': bad 7");
	/* No error object: the code still comes back. */
	CU_ASSERT_EQUAL(cb_error_set(NULL, CB_ENOMEM, "out of memory"), CB_ENOMEM);
}

static void test_first_error_wins(void)
{
	cb_error err = CB_ERROR_INIT;

	cb_error_set(&err, CB_EDB, "root cause");
	/* Later errors return their own code but leave the first in place. */
	CU_ASSERT_EQUAL(cb_error_set(&err, CB_ERROR, "consequence"), CB_ERROR);
	CU_ASSERT_EQUAL(cb_error_set(&err, CB_ENOMEM, "another"), CB_ENOMEM);
	CU_ASSERT_EQUAL(err.code, CB_EDB);
	CU_ASSERT_STRING_EQUAL(err.message, "root cause");

	cb_error_clear(&err);
	cb_error_set(&err, CB_ECANCELED, "stopped");
	CU_ASSERT_EQUAL(err.code, CB_ECANCELED);
	CU_ASSERT_STRING_EQUAL(err.message, "stopped");
}

static void test_prefix(void)
{
	cb_error err = CB_ERROR_INIT;

	/* Without an error there is nothing to prefix. */
	CU_ASSERT_EQUAL(cb_error_prefix(&err, "step '%s'", "load"), 0);
	CU_ASSERT_EQUAL(err.code, 0);
	CU_ASSERT_STRING_EQUAL(err.message, "");
	CU_ASSERT_EQUAL(cb_error_prefix(NULL, "step"), 0);

	cb_error_set(&err, CB_EDB, "insert failed");
	CU_ASSERT_EQUAL(cb_error_prefix(&err, "step '%s'", "load"), CB_EDB);
	CU_ASSERT_STRING_EQUAL(err.message, "step 'load': insert failed");
	CU_ASSERT_EQUAL(cb_error_prefix(&err, "job '%s'", "ledger"), CB_EDB);
	CU_ASSERT_STRING_EQUAL(err.message, "job 'ledger': step 'load': insert failed");
	CU_ASSERT_EQUAL(err.code, CB_EDB);
}

static void test_flatten(void)
{
	cb_error err = CB_ERROR_INIT;

	/* A libpq-style message: embedded and trailing newlines. */
	cb_error_set(&err, CB_EDB, "query failed: %s", "ERROR:  boom\nDETAIL:  x\n");
	CU_ASSERT_STRING_EQUAL(err.message, "query failed: ERROR:  boom DETAIL:  x");
	CU_ASSERT_PTR_NULL(strchr(err.message, '\n'));

	cb_error_clear(&err);
	cb_error_set(&err, CB_ERROR, "a\r\nb\tc \r\n \n");
	CU_ASSERT_STRING_EQUAL(err.message, "a  b c");

	cb_error_clear(&err);
	cb_error_set(&err, CB_ERROR, "msg");
	cb_error_prefix(&err, "file '%s'", "x\ny");
	CU_ASSERT_STRING_EQUAL(err.message, "file 'x y': msg");
}

static void test_truncation(void)
{
	cb_error err = CB_ERROR_INIT;
	char big[CB_ERROR_MESSAGE_MAX * 2];

	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cb_error_set(&err, CB_EINVAL, "%s", big);
	CU_ASSERT_EQUAL(strlen(err.message), CB_ERROR_MESSAGE_MAX - 1);

	cb_error_prefix(&err, "step '%s'", "load");
	CU_ASSERT_EQUAL(strlen(err.message), CB_ERROR_MESSAGE_MAX - 1);
	CU_ASSERT_EQUAL(strncmp(err.message, "step 'load': mmm", 16), 0);
	CU_ASSERT_EQUAL(err.code, CB_EINVAL);
}

static void test_strcode(void)
{
	static const struct {
		int code;
		const char *name;
	} codes[] = {
		{ CB_OK, "CB_OK" },
		{ CB_DONE, "CB_DONE" },
		{ CB_ERROR, "CB_ERROR" },
		{ CB_ENOMEM, "CB_ENOMEM" },
		{ CB_EINVAL, "CB_EINVAL" },
		{ CB_EDB, "CB_EDB" },
		{ CB_ERETRY, "CB_ERETRY" },
		{ CB_EFENCED, "CB_EFENCED" },
		{ CB_ECANCELED, "CB_ECANCELED" },
		{ CB_ECOMPLETE, "CB_ECOMPLETE" },
		{ CB_ERUNNING, "CB_ERUNNING" },
		{ CB_ENOTFOUND, "CB_ENOTFOUND" },
		{ CB_ENORESTART, "CB_ENORESTART" },
		{ CB_ESTALE, "CB_ESTALE" },
		{ CB_ECALLBACK, "CB_ECALLBACK" },
	};
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		CU_ASSERT_STRING_EQUAL(cb_strcode(codes[i].code), codes[i].name);
		/* One sign convention: errors < 0, statuses > 0. */
		if (codes[i].code != CB_OK && codes[i].code != CB_DONE)
			CU_ASSERT(codes[i].code < 0);
	}
	CU_ASSERT(CB_DONE > 0);
	CU_ASSERT_STRING_EQUAL(cb_strcode(42), "CB_UNKNOWN");
	CU_ASSERT_STRING_EQUAL(cb_strcode(-99), "CB_UNKNOWN");
}

static const CU_TestInfo tests[] = {
	{ "init and clear", test_init_and_clear },
	{ "set", test_set },
	{ "first error wins", test_first_error_wins },
	{ "prefix", test_prefix },
	{ "one-line messages", test_flatten },
	{ "truncation", test_truncation },
	{ "code names", test_strcode },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("error", NULL, NULL, tests);
}
