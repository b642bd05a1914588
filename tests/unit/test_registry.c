/*
 * Unit tests for the registry (framework/registry.c) and the CLI's output
 * helpers (cli/cli_format.c): ownership of jobs, duplicate and reserved
 * names, extra commands, timestamps, durations and parameter formatting.
 */
#include "cbatch/cli.h"

#include <stdlib.h>
#include <string.h>

#include "cbtest.h"
#include "cli_internal.h"

static cb_job *job(const char *name)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *j = NULL;

	CBT_PASS_FATAL(cb_job_new(&j, name, &err), &err);
	return j;
}

static int nop_command(void *ctx, PGconn *conn, int argc, char **argv)
{
	(void)ctx;
	(void)conn;
	(void)argc;
	(void)argv;
	return 0;
}

static void test_jobs_are_owned_and_found(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;

	CBT_PASS_FATAL(cb_registry_new(&reg, &err), &err);
	CBT_EQ_LL(cb_registry_count(reg), 0);
	CBT_PASS(cb_registry_add(reg, job("b"), &err), &err);
	CBT_PASS(cb_registry_add(reg, job("a"), &err), &err);
	CBT_EQ_LL(cb_registry_count(reg), 2);
	/* Registration order, not sorted. */
	CBT_EQ_STR(cb_job_name(cb_registry_at(reg, 0)), "b");
	CBT_EQ_STR(cb_job_name(cb_registry_at(reg, 1)), "a");
	CU_ASSERT_PTR_NULL(cb_registry_at(reg, 2));
	CBT_EQ_STR(cb_job_name(cb_registry_find(reg, "a")), "a");
	CU_ASSERT_PTR_NULL(cb_registry_find(reg, "c"));
	CU_ASSERT_PTR_NULL(cb_registry_find(reg, NULL));

	/* A duplicate is refused and still stolen (freed): no leak under ASan. */
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add(reg, job("a"), &err), &err);
	CBT_CONTAINS(err.message, "'a'");
	CBT_EQ_LL(cb_registry_count(reg), 2);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add(reg, NULL, &err), &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add(NULL, job("x"), &err), &err);

	/* Enough jobs to grow the array a few times. */
	{
		char name[32];
		int i;

		for (i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "job%d", i);
			CBT_PASS(cb_registry_add(reg, job(name), &err), &err);
		}
		CBT_EQ_LL(cb_registry_count(reg), 42);
		CBT_EQ_STR(cb_job_name(cb_registry_find(reg, "job39")), "job39");
	}
	cb_registry_free(reg);
	cb_registry_free(NULL);
}

static void test_extra_commands(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;
	const char *name, *summary;
	cb_command_fn fn;
	void *ctx;
	int marker;

	CBT_PASS_FATAL(cb_registry_new(&reg, &err), &err);
	CBT_PASS(
		cb_registry_add_command(reg, "example-setup", "set up", nop_command, &marker, &err),
		&err);
	CBT_PASS(cb_registry_add_command(reg, "other", NULL, nop_command, NULL, &err), &err);
	CBT_EQ_LL(cb__registry_command_count(reg), 2);
	CBT_EQ_LL(cb__registry_find_command(reg, "other"), 1);
	CBT_EQ_LL(cb__registry_find_command(reg, "nope"), -1);
	CBT_PASS(cb__registry_command_at(reg, 0, &name, &summary, &fn, &ctx), NULL);
	CBT_EQ_STR(name, "example-setup");
	CBT_EQ_STR(summary, "set up");
	CU_ASSERT(fn == nop_command);
	CU_ASSERT(ctx == &marker);
	CBT_PASS(cb__registry_command_at(reg, 1, NULL, &summary, NULL, NULL), NULL);
	CBT_EQ_STR(summary, "");
	CBT_EQ_LL(cb__registry_command_at(reg, 2, &name, NULL, NULL, NULL), CB_ENOTFOUND);

	/* Taken, built-in and malformed names. */
	CBT_FAILS_WITH(CB_EINVAL,
		       cb_registry_add_command(reg, "other", "", nop_command, NULL, &err), &err);
	CBT_CONTAINS(err.message, "already registered");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add_command(reg, "run", "", nop_command, NULL, &err),
		       &err);
	CBT_CONTAINS(err.message, "built-in");
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add_command(reg, "--x", "", nop_command, NULL, &err),
		       &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add_command(reg, "", "", nop_command, NULL, &err),
		       &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL,
		       cb_registry_add_command(reg, "Upper", "", nop_command, NULL, &err), &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_add_command(reg, "ok", "", NULL, NULL, &err), &err);
	CBT_EQ_LL(cb__registry_command_count(reg), 2);
	cb_registry_free(reg);
}

static void test_durations_and_times(void)
{
	char buf[64];
	double a, b;
	int off;

	cb__cli_fmt_duration(buf, sizeof(buf), 0.004);
	CBT_EQ_STR(buf, "0.00s");
	cb__cli_fmt_duration(buf, sizeof(buf), 12.345);
	CBT_EQ_STR(buf, "12.35s");
	cb__cli_fmt_duration(buf, sizeof(buf), 185);
	CBT_EQ_STR(buf, "3m05s");
	cb__cli_fmt_duration(buf, sizeof(buf), 7380);
	CBT_EQ_STR(buf, "2h03m");
	cb__cli_fmt_duration(buf, sizeof(buf), 3 * 86400 + 4 * 3600);
	CBT_EQ_STR(buf, "3d04h");

	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "1970-01-01T00:00:00+00:00"), 0);
	CU_ASSERT_DOUBLE_EQUAL(a, 0, 1e-9);
	CBT_EQ_LL(off, 1);
	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "2026-06-30T12:00:00.250+02:00"), 0);
	CBT_EQ_LL(cb__cli_parse_time(&b, &off, "2026-06-30 10:00:01.5Z"), 0);
	CU_ASSERT_DOUBLE_EQUAL(b - a, 1.25, 1e-6);
	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "2000-03-01 00:00:00-05"), 0);
	CU_ASSERT_DOUBLE_EQUAL(a, 951886800.0, 1e-6);
	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "2026-06-30 12:00:00"), 0);
	CBT_EQ_LL(off, 0);
	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "2026-06-30"), -1);
	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "2026-13-01T00:00:00Z"), -1);
	CBT_EQ_LL(cb__cli_parse_time(&a, &off, "2026-06-30T12:00:00+02:00junk"), -1);

	cb__cli_fmt_duration_between(buf, sizeof(buf), "2026-06-30T12:00:00+00:00",
				     "2026-06-30T12:01:05+00:00");
	CBT_EQ_STR(buf, "1m05s");
	cb__cli_fmt_duration_between(buf, sizeof(buf), "2026-06-30T12:00:00+00:00", NULL);
	CBT_EQ_STR(buf, "-");
	cb__cli_fmt_time(buf, sizeof(buf), NULL);
	CBT_EQ_STR(buf, "-");
	cb__cli_fmt_time(buf, sizeof(buf), "2026-06-30T12:34:56.789");
	CBT_EQ_STR(buf, "2026-06-30 12:34:56");
	cb__cli_fmt_time(buf, sizeof(buf), "not a time");
	CBT_EQ_STR(buf, "not a time");
	/* With an offset: the instant in the shown zone, to the second. */
	cb__cli_zone_choose(1, NULL);
	cb__cli_fmt_time(buf, sizeof(buf), "2026-06-30T14:34:56.789+02:00");
	CBT_EQ_STR(buf, "2026-06-30T12:34:56Z");
	cb__cli_fmt_time(buf, sizeof(buf), "2026-06-30 07:04:56+05:30");
	CBT_EQ_STR(buf, "2026-06-30T01:34:56Z");
	cb__cli_zone_end();
	/* The server's text as RFC 3339, as --json gives times. */
	cb__cli_rfc3339(buf, sizeof(buf), "2026-06-30 12:34:56.5+00");
	CBT_EQ_STR(buf, "2026-06-30T12:34:56.5+00:00");
	cb__cli_rfc3339(buf, sizeof(buf), "2026-06-30 12:34:56-09:30");
	CBT_EQ_STR(buf, "2026-06-30T12:34:56-09:30");
}

static void test_params_and_json_text(void)
{
	json_error_t jerr;
	json_t *p, *s;
	char *out = NULL;

	p = json_loads("{\"day\": {\"type\": \"date\", \"value\": \"2026-06-30\", \"identifying\": "
		       "true}, \"chunk.size\": {\"type\": \"long\", \"value\": \"500\", "
		       "\"identifying\": false}, \"note\": {\"type\": \"string\", \"value\": "
		       "\"it's here\", \"identifying\": true}}",
		       0, &jerr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CBT_PASS(cb__cli_fmt_params(&out, p), NULL);
	CBT_EQ_STR(out, "day:date=2026-06-30 -chunk.size:long=500 'note=it'\\''s here'");
	free(out);
	json_decref(p);
	CBT_PASS(cb__cli_fmt_params(&out, NULL), NULL);
	CBT_EQ_STR(out, "");
	free(out);

	/* Invalid UTF-8 still makes a JSON string. */
	s = cb__cli_json_text("ok \xff\xfe end \xc3\xa9");
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CBT_EQ_STR(json_string_value(s), "ok ?? end \xc3\xa9");
	json_decref(s);
}

static const CU_TestInfo tests[] = {
	{ "jobs are owned and found", test_jobs_are_owned_and_found },
	{ "extra commands", test_extra_commands },
	{ "durations and times", test_durations_and_times },
	{ "parameters and JSON text", test_params_and_json_text },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("registry", NULL, NULL, tests);
}
