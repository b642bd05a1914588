/*
 * Unit tests for cron expressions (core/cron.c): a table of expressions with
 * a start time and the expected next time, a table of bad expressions with
 * the expected message, and random expressions whose chains of next times
 * are checked against a minute-by-minute brute force over a year that uses
 * the C library's calendar (gmtime), not ours.
 */
#include "cbatch/cron.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbtest.h"

static int parse_civil(const char *s, cb_civil *t)
{
	return sscanf(s, "%d-%d-%d %d:%d:%d", &t->year, &t->month, &t->day, &t->hour, &t->minute,
		      &t->second) == 6;
}

static void format_civil(char *buf, size_t n, const cb_civil *t)
{
	snprintf(buf, n, "%04d-%02d-%02d %02d:%02d:%02d", t->year, t->month, t->day, t->hour,
		 t->minute, t->second);
}

/* ---- the table of next times ------------------------------------------ */

/* NULL as the expected time: nothing matches (CB_ENOTFOUND). */
static const struct next_case {
	const char *expr, *after, *next;
} next_cases[] = {
	/* every element, plain */
	{ "* * * * *", "2025-01-01 00:00:00", "2025-01-01 00:01:00" },
	{ "* * * * *", "2025-01-01 00:00:30", "2025-01-01 00:01:00" },
	{ "0 * * * *", "2025-01-01 00:00:00", "2025-01-01 01:00:00" },
	{ "30 2 * * *", "2025-06-15 02:30:00", "2025-06-16 02:30:00" },
	{ "30 2 * * *", "2025-06-15 02:29:59", "2025-06-15 02:30:00" },
	{ "0,15,30,45 * * * *", "2025-01-01 00:16:00", "2025-01-01 00:30:00" },
	{ "0 9-17 * * *", "2025-01-01 17:00:00", "2025-01-02 09:00:00" },
	{ "0 9-17 * * *", "2025-01-01 12:30:00", "2025-01-01 13:00:00" },
	{ "*/15 * * * *", "2025-01-01 00:44:00", "2025-01-01 00:45:00" },
	{ "*/7 * * * *", "2025-01-01 00:56:00", "2025-01-01 01:00:00" },
	{ "10-30/10 * * * *", "2025-01-01 00:21:00", "2025-01-01 00:30:00" },
	{ "10-30/10 * * * *", "2025-01-01 00:30:00", "2025-01-01 01:10:00" },
	{ "5/20 * * * *", "2025-01-01 00:45:00", "2025-01-01 01:05:00" },
	{ "0 */6 * * *", "2025-01-01 07:00:00", "2025-01-01 12:00:00" },
	{ "0 0 1 */3 *", "2025-01-01 00:00:00", "2025-04-01 00:00:00" },
	{ "0 0,12 1,15 * *", "2025-01-01 12:00:00", "2025-01-15 00:00:00" },
	{ "  0\t0  * * *  ", "2025-01-01 00:00:00", "2025-01-02 00:00:00" },
	/* names, case-insensitive */
	{ "0 0 1 JAN,jul *", "2025-02-01 00:00:00", "2025-07-01 00:00:00" },
	{ "0 0 1 mar-May *", "2025-05-01 00:00:00", "2026-03-01 00:00:00" },
	{ "0 9 * * MON-FRI", "2025-01-03 09:00:00", "2025-01-06 09:00:00" },
	{ "0 9 * * sun", "2025-01-06 00:00:00", "2025-01-12 09:00:00" },
	/* Sunday is 0 and 7 */
	{ "0 9 * * 0", "2025-01-01 00:00:00", "2025-01-05 09:00:00" },
	{ "0 9 * * 7", "2025-01-01 00:00:00", "2025-01-05 09:00:00" },
	{ "0 9 * * 5-7", "2025-01-06 00:00:00", "2025-01-10 09:00:00" },
	{ "0 9 * * 6-7", "2025-01-06 00:00:00", "2025-01-11 09:00:00" },
	{ "0 9 * * 6-7", "2025-01-11 09:00:00", "2025-01-12 09:00:00" },
	{ "0 0 * * 1/2", "2025-01-06 00:00:00", "2025-01-08 00:00:00" }, /* Mon Wed Fri Sun */
	{ "0 0 * * 1/2", "2025-01-10 00:00:00", "2025-01-12 00:00:00" },
	{ "0 0 * * 0-7", "2025-01-01 00:00:00", "2025-01-02 00:00:00" },
	/* year rollover */
	{ "0 0 * * *", "2025-12-31 23:59:59", "2026-01-01 00:00:00" },
	{ "59 23 31 12 *", "2025-12-31 23:59:00", "2026-12-31 23:59:00" },
	{ "0 0 1 1 *", "2025-01-01 00:00:00", "2026-01-01 00:00:00" },
	/* leap years: 2000 is one, 2100 is not */
	{ "0 0 29 2 *", "2025-01-01 00:00:00", "2028-02-29 00:00:00" },
	{ "0 0 29 2 *", "2024-02-29 00:00:00", "2028-02-29 00:00:00" },
	{ "0 0 29 2 *", "2000-01-01 00:00:00", "2000-02-29 00:00:00" },
	{ "0 0 29 2 *", "2096-03-01 00:00:00", "2104-02-29 00:00:00" },
	{ "0 12 * 2 *", "2025-02-28 12:00:00", "2026-02-01 12:00:00" },
	{ "0 12 * 2 *", "2024-02-28 12:00:00", "2024-02-29 12:00:00" },
	/* the 31st skips short months */
	{ "0 0 31 * *", "2025-01-31 00:00:00", "2025-03-31 00:00:00" },
	{ "0 0 31 * *", "2025-03-31 00:00:00", "2025-05-31 00:00:00" },
	{ "0 0 31 * *", "2025-07-31 00:00:00", "2025-08-31 00:00:00" },
	{ "0 0 31 * *", "2025-08-31 00:00:00", "2025-10-31 00:00:00" },
	{ "0 0 30 * *", "2025-01-30 00:00:00", "2025-03-30 00:00:00" },
	/* never */
	{ "0 0 30 2 *", "2025-01-01 00:00:00", NULL },
	{ "0 0 31 4,6,9,11 *", "2025-01-01 00:00:00", NULL },
	{ "0 0 1 1 *", "9999-06-01 00:00:00", NULL },
	/* L, L-n */
	{ "0 0 L * *", "2025-01-31 00:00:00", "2025-02-28 00:00:00" },
	{ "0 0 L * *", "2024-02-01 00:00:00", "2024-02-29 00:00:00" },
	{ "0 0 L 2 *", "2027-03-01 00:00:00", "2028-02-29 00:00:00" },
	{ "0 0 L-1 * *", "2025-02-01 00:00:00", "2025-02-27 00:00:00" },
	{ "0 0 L-2 3 *", "2025-01-01 00:00:00", "2025-03-29 00:00:00" },
	{ "0 0 L-30 * *", "2025-01-01 00:00:00", "2025-03-01 00:00:00" },
	{ "0 0 1,L * *", "2025-04-01 00:00:00", "2025-04-30 00:00:00" },
	/* LW, nW */
	{ "0 0 LW * *", "2025-05-01 00:00:00", "2025-05-30 00:00:00" },  /* 31st a Saturday */
	{ "0 0 LW * *", "2025-08-01 00:00:00", "2025-08-29 00:00:00" },  /* 31st a Sunday */
	{ "0 0 LW * *", "2025-09-01 00:00:00", "2025-09-30 00:00:00" },  /* 30th a Tuesday */
	{ "0 0 15W * *", "2025-03-01 00:00:00", "2025-03-14 00:00:00" }, /* 15th a Saturday */
	{ "0 0 15W * *", "2025-06-01 00:00:00", "2025-06-16 00:00:00" }, /* 15th a Sunday */
	{ "0 0 10W * *", "2025-09-01 00:00:00", "2025-09-10 00:00:00" }, /* a Wednesday */
	{ "0 0 1W * *", "2025-01-31 00:00:00", "2025-02-03 00:00:00" },  /* 1st a Saturday */
	{ "0 0 31W * *", "2025-08-01 00:00:00", "2025-08-29 00:00:00" }, /* 31st a Sunday */
	{ "0 0 31W * *", "2025-04-01 00:00:00", "2025-05-30 00:00:00" }, /* no 31st in April */
	/* dL, d#k */
	{ "0 0 * * 5L", "2025-01-01 00:00:00", "2025-01-31 00:00:00" },
	{ "0 0 ? * 1L", "2025-02-01 00:00:00", "2025-02-24 00:00:00" },
	{ "0 0 * * FRIL", "2025-02-01 00:00:00", "2025-02-28 00:00:00" },
	{ "0 0 * * 1#1", "2025-01-01 00:00:00", "2025-01-06 00:00:00" },
	{ "0 0 * * MON#2", "2025-01-07 00:00:00", "2025-01-13 00:00:00" },
	{ "0 0 * * 5#5", "2025-01-01 00:00:00", "2025-01-31 00:00:00" },
	{ "0 0 * * 5#5", "2025-02-01 00:00:00", "2025-05-30 00:00:00" },
	{ "0 0 * * 0#1,0#3", "2025-01-06 00:00:00", "2025-01-19 00:00:00" },
	{ "0 0 * * 7#1", "2025-01-01 00:00:00", "2025-01-05 00:00:00" },
	/* a fifth Monday in February needs a Monday the 29th: beyond 5 years */
	{ "0 0 * 2 MON#5", "2025-01-01 00:00:00", "2044-02-29 00:00:00" },
	/* ? means no restriction */
	{ "0 0 ? * MON", "2025-01-01 00:00:00", "2025-01-06 00:00:00" },
	{ "0 0 15 * ?", "2025-01-16 00:00:00", "2025-02-15 00:00:00" },
	{ "0 0 ? * ?", "2025-01-01 00:00:00", "2025-01-02 00:00:00" },
	/* both day fields restricted: either matches (Vixie) */
	{ "0 0 13 * 5", "2025-01-01 00:00:00", "2025-01-03 00:00:00" }, /* a Friday */
	{ "0 0 13 * 5", "2025-01-10 00:00:00", "2025-01-13 00:00:00" }, /* the 13th */
	{ "0 0 1-31 * 1", "2025-01-01 00:00:00", "2025-01-02 00:00:00" },
	{ "0 0 1 * MON#1", "2025-01-02 00:00:00", "2025-01-06 00:00:00" },
	{ "0 0 29 2 1", "2025-02-24 00:00:00", "2026-02-02 00:00:00" },
	{ "0 0 L * 1", "2025-01-27 00:00:00", "2025-01-31 00:00:00" },
	/* a field starting with '*' counts as unrestricted: odd days that are Mondays */
	{ "0 0 */2 * 1", "2025-01-01 00:00:00", "2025-01-13 00:00:00" },
	/* the 1st, on a Sunday, Tuesday, Thursday or Saturday */
	{ "0 0 1 * */2", "2025-01-01 00:00:00", "2025-02-01 00:00:00" },
	/* seconds */
	{ "*/10 * * * * *", "2025-01-01 00:00:05", "2025-01-01 00:00:10" },
	{ "30 0 0 * * *", "2025-01-01 00:00:30", "2025-01-02 00:00:30" },
	{ "0-5 * * * * *", "2025-01-01 00:00:05", "2025-01-01 00:01:00" },
	{ "15,45 * * * * *", "2025-01-01 23:59:45", "2025-01-02 00:00:15" },
	{ "59 59 23 31 12 *", "2025-12-31 23:59:59", "2026-12-31 23:59:59" },
	{ "0 0 0 29 2 ?", "2024-02-29 00:00:00", "2028-02-29 00:00:00" },
	{ "* * * * * *", "2025-12-31 23:59:59", "2026-01-01 00:00:00" },
	/* macros */
	{ "@yearly", "2025-06-01 00:00:00", "2026-01-01 00:00:00" },
	{ "@annually", "2025-06-01 00:00:00", "2026-01-01 00:00:00" },
	{ "@monthly", "2025-01-31 00:00:00", "2025-02-01 00:00:00" },
	{ "@weekly", "2025-01-01 00:00:00", "2025-01-05 00:00:00" },
	{ "@daily", "2025-02-28 12:00:00", "2025-03-01 00:00:00" },
	{ "@midnight", "2024-02-28 12:00:00", "2024-02-29 00:00:00" },
	{ "@hourly", "2025-01-01 10:00:00", "2025-01-01 11:00:00" },
	{ " @HOURLY ", "2025-01-01 10:59:59", "2025-01-01 11:00:00" },
};

static void test_next_table(void)
{
	size_t n = sizeof(next_cases) / sizeof(next_cases[0]);

	CU_ASSERT(n >= 60);
	for (size_t i = 0; i < n; i++) {
		const struct next_case *tc = &next_cases[i];
		cb_error err = CB_ERROR_INIT;
		cb_cron *c = NULL;
		cb_civil after, got = { 0, 0, 0, 0, 0, 0 };
		char buf[80];
		int rc;

		CU_ASSERT_FATAL(parse_civil(tc->after, &after));
		rc = cb_cron_parse(&c, tc->expr, &err);
		if (rc != 0) {
			fprintf(stderr, "\n    \"%s\": %s\n", tc->expr, err.message);
			CU_FAIL("parse");
			continue;
		}
		rc = cb_cron_next(c, &after, &got, &err);
		if (tc->next == NULL) {
			if (rc != CB_ENOTFOUND)
				fprintf(stderr, "\n    \"%s\" after %s: rc %s\n", tc->expr,
					tc->after, cb_strcode(rc));
			CU_ASSERT_EQUAL(rc, CB_ENOTFOUND);
		} else {
			format_civil(buf, sizeof(buf), &got);
			if (rc != 0 || strcmp(buf, tc->next) != 0)
				fprintf(stderr,
					"\n    \"%s\" after %s: expected %s, got %s (%s %s)\n",
					tc->expr, tc->after, tc->next, rc == 0 ? buf : "-",
					cb_strcode(rc), err.message);
			CU_ASSERT_EQUAL(rc, 0);
			CU_ASSERT_STRING_EQUAL(buf, tc->next);
		}
		cb_cron_free(c);
	}
}

static void test_has_seconds(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;

	CBT_PASS(cb_cron_parse(&c, "* * * * * *", &err), &err);
	CU_ASSERT_EQUAL(cb_cron_has_seconds(c), 1);
	cb_cron_free(c);
	CBT_PASS(cb_cron_parse(&c, "* * * * *", &err), &err);
	CU_ASSERT_EQUAL(cb_cron_has_seconds(c), 0);
	cb_cron_free(c);
	CBT_PASS(cb_cron_parse(&c, "@daily", &err), &err);
	CU_ASSERT_EQUAL(cb_cron_has_seconds(c), 0);
	cb_cron_free(c);
	cb_cron_free(NULL);
}

/* Fixed-time or wildcard (Vixie's DST rule): the text of the minute or the
 * hour field starting with '*' makes a wildcard expression; nothing else does. */
static void test_is_fixed_time(void)
{
	static const struct {
		const char *expr;
		int fixed;
	} cases[] = {
		{ "30 2 * * *", 1 },
		{ "0 0 * * *", 1 },
		{ "0,30 9-17 * * MON-FRI", 1 },
		{ "0-59 0-23 * * *", 1 },
		{ "5/15 2 * * *", 1 },
		{ "0 0 1 1 *", 1 },
		{ "* 2 * * *", 0 },
		{ "0 * * * *", 0 },
		{ "*/15 * * * *", 0 },
		{ "30 */2 * * *", 0 },
		{ "*/5 3 * * *", 0 },
		{ "* * * * *", 0 },
		/* six fields: the seconds field plays no part */
		{ "* 30 2 * * *", 1 },
		{ "*/10 0 0 * * *", 1 },
		{ "0 * 2 * * *", 0 },
		{ "0 0 * * * *", 0 },
		{ "* * * * * *", 0 },
		/* macros: @hourly is "0 * * * *" */
		{ "@hourly", 0 },
		{ "@daily", 1 },
		{ "@midnight", 1 },
		{ "@weekly", 1 },
		{ "@monthly", 1 },
		{ "@yearly", 1 },
		{ "@annually", 1 },
		/* the day fields do not count */
		{ "0 12 * * *", 1 },
		{ "0 12 */2 * ?", 1 },
	};
	cb_error err = CB_ERROR_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cb_cron *c = NULL;

		CBT_PASS_FATAL(cb_cron_parse(&c, cases[i].expr, &err), &err);
		if (cb_cron_is_fixed_time(c) != cases[i].fixed)
			CBT_FAILF("\"%s\": cb_cron_is_fixed_time %d, expected %d", cases[i].expr,
				  cb_cron_is_fixed_time(c), cases[i].fixed);
		cb_cron_free(c);
	}
	CBT_EQ_LL(cb_cron_is_fixed_time(NULL), 0);
}

/* A bad civil time is refused; the result may overwrite the input. */
static void test_next_arguments(void)
{
	static const char *const bad[] = { "2025-02-29 00:00:00", "2025-13-01 00:00:00",
					   "2025-04-31 00:00:00", "2025-01-01 24:00:00",
					   "2025-01-01 00:60:00", "2025-01-01 00:00:60",
					   "0-01-01 00:00:00",    "10000-01-01 00:00:00" };
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;
	cb_civil t;

	CBT_PASS(cb_cron_parse(&c, "0 0 * * *", &err), &err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cb_error e = CB_ERROR_INIT;

		CU_ASSERT_FATAL(parse_civil(bad[i], &t));
		CU_ASSERT_EQUAL(cb_cron_next(c, &t, &t, &e), CB_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "not a valid civil time"));
	}
	CU_ASSERT_FATAL(parse_civil("2025-01-01 12:00:00", &t));
	CBT_PASS(cb_cron_next(c, &t, &t, &err), &err);
	CU_ASSERT(t.year == 2025 && t.month == 1 && t.day == 2 && t.hour == 0);
	cb_cron_free(c);
}

/* ---- the table of bad expressions ------------------------------------- */

/* The message must contain @c want. */
static const struct bad_case {
	const char *expr, *want;
} bad_cases[] = {
	{ "0 25 * * *", "cron \"0 25 * * *\": hour field: 25 at character 3 is out of range 0-23" },
	{ "", "cron \"\": 0 fields, expected 5" },
	{ "   ", "0 fields" },
	{ "* * * *", "4 fields, expected 5" },
	{ "* * * * * * *", "7 fields" },
	{ "60 * * * *", "minute field: 60 at character 1 is out of range 0-59" },
	{ "60 * * * * *", "second field: 60 at character 1 is out of range 0-59" },
	{ "0 0 32 * *", "day-of-month field: 32 at character 5 is out of range 1-31" },
	{ "0 0 0 * *", "day-of-month field: 0 at character 5 is out of range 1-31" },
	{ "0 0 * 13 *", "month field: 13 at character 7 is out of range 1-12" },
	{ "0 0 * 0 *", "month field: 0 at character 7" },
	{ "0 0 * * 8", "day-of-week field: 8 at character 9 is out of range 0-7" },
	{ "0 0 * 1-13 *", "month field: 13 at character 9 is out of range" },
	{ "99999999999 * * * *", "minute field: 99999999999 at character 1 is out of range" },
	{ "*/0 * * * *", "minute field: step 0 at character 3 is out of range 1-60" },
	{ "1/0 * * * *", "minute field: step 0 at character 3" },
	{ "0 0 1-31/0 * *", "day-of-month field: step 0 at character 10" },
	{ "*/61 * * * *", "step 61 at character 3 is out of range 1-60" },
	{ "5-1 * * * *", "minute field: range 5-1 at character 1 is reversed" },
	{ "0 0 * * FRI-MON", "day-of-week field: range FRI-MON at character 9 is reversed" },
	{ "0 0 * DEC-JAN *", "month field: range DEC-JAN at character 7 is reversed" },
	{ "0 0 * FRI *", "month field: unknown name \"FRI\" at character 7" },
	{ "0 0 * * JAN", "day-of-week field: unknown name \"JAN\" at character 9" },
	{ "0 0 * * MONDAY", "day-of-week field: MONDAY at character 9 has unexpected text" },
	{ "1,,2 * * * *", "minute field: empty list item at character 3" },
	{ "1, * * * *", "minute field: empty list item at character 3" },
	{ ",1 * * * *", "minute field: empty list item at character 1" },
	{ "x * * * *", "minute field: x at character 1 is not a value" },
	{ "- * * * *", "minute field: - at character 1 is not a value" },
	{ "5x * * * *", "minute field: 5x at character 1 has unexpected text" },
	{ "5- * * * *", "minute field: 5- at character 1 has no end of range" },
	{ "*/ * * * *", "minute field: */ at character 1 has no step after '/'" },
	{ "*x * * * *", "minute field: *x at character 1 has unexpected text" },
	{ "? * * * *", "minute field: ? at character 1 is only allowed in day-of-month" },
	{ "0 0 ?,1 * *", "day-of-month field: ? at character 5 must be the whole field" },
	{ "0 0 L-31 * *", "day-of-month field: L-31 at character 5 is out of range L-0 to L-30" },
	{ "0 0 LX * *", "day-of-month field: LX at character 5 is not L, L-n or LW" },
	{ "0 0 L- * *", "day-of-month field: L- at character 5 is not L-n" },
	{ "0 0 32W * *", "day-of-month field: 32 at character 5 is out of range 1-31" },
	{ "0 0 1-5W * *", "day-of-month field: 1-5W at character 5 has unexpected text" },
	{ "0 0 5WX * *", "day-of-month field: 5WX at character 5 is not nW" },
	{ "0 0 * * 1#6", "day-of-week field: #6 at character 10 is out of range 1-5" },
	{ "0 0 * * 1#0", "day-of-week field: #0 at character 10" },
	{ "0 0 * * 1#", "day-of-week field: 1# at character 9 is not d#k" },
	{ "0 0 * * L", "day-of-week field: L at character 9 needs a weekday" },
	{ "0 0 * * SUN,l", "day-of-week field: l at character 13 needs a weekday" },
	{ "@dai\x01ly", "unexpected byte 0x01 at character 5" },
	{ "0 0 * * 5LL", "day-of-week field: 5LL at character 9 is not dL" },
	{ "0 0 * * 1W", "day-of-week field: 1W at character 9 has unexpected text" },
	{ "0 0 * * 1-5/0", "day-of-week field: step 0 at character 13" },
	{ "@reboot", "cron \"@reboot\": unknown macro \"@reboot\" at character 1" },
	{ "@fortnightly", "unknown macro" },
	{ "@daily 5", "text after @daily at character 8" },
	{ "0 0 *\x01 * *", "unexpected byte 0x01 at character 6" },
	{ "0 0 * * \xc3\xa9", "unexpected byte 0xc3 at character 9" },
};

static void test_bad_table(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *tc = &bad_cases[i];
		cb_error err = CB_ERROR_INIT;
		cb_cron *c = NULL;
		int rc = cb_cron_parse(&c, tc->expr, &err);

		if (rc != CB_EINVAL || !strstr(err.message, tc->want))
			fprintf(stderr, "\n    \"%s\": rc %s, message \"%s\", wanted \"%s\"\n",
				tc->expr, cb_strcode(rc), err.message, tc->want);
		CU_ASSERT_EQUAL(rc, CB_EINVAL);
		CU_ASSERT_PTR_NULL(c);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.message, tc->want));
		cb_cron_free(c);
	}
}

/* A long expression is cut in the message, so that the field part survives. */
static void test_long_expression_message(void)
{
	char expr[400];
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;
	int n = 0;

	n += snprintf(expr + n, sizeof(expr) - (size_t)n, "0");
	for (int v = 1; v < 60; v++)
		n += snprintf(expr + n, sizeof(expr) - (size_t)n, ",%d", v);
	snprintf(expr + n, sizeof(expr) - (size_t)n, " * * * 9");
	CU_ASSERT_EQUAL(cb_cron_parse(&c, expr, &err), CB_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "...\": day-of-week field: 9 at character"));
	CU_ASSERT(strlen(err.message) < 200);
}

/* ---- random expressions against a brute force ------------------------- */

/* A small deterministic generator (xorshift), so that failures reproduce. */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;

static int rnd(int n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (int)(rng_state % (unsigned long long)n);
}

/* What the brute force matches, built while the text is generated. */
struct model {
	unsigned char sec[64];    /* {0} for five fields */
	unsigned char set[5][64]; /* minute, hour, dom, month, dow (0-6) */
	int star_dom, star_dow;
	int dom_last;                /* L */
	unsigned char dow_last[7];   /* dL */
	unsigned char dow_nth[7][6]; /* d#k */
};

/* Append one random field (index f: 0 minute .. 4 dow) to @p out. */
static void gen_field(char *out, size_t cap, struct model *m, int f)
{
	static const int lo[5] = { 0, 0, 1, 1, 0 }, hi[5] = { 59, 23, 31, 12, 7 };
	size_t len = strlen(out);
	int items = 1 + rnd(3);

	if (rnd(3) == 0 || (f == 2 && rnd(2) == 0)) {
		/* '*' alone, or a stepped '*' (which still counts as unrestricted) */
		int step = rnd(2) ? 1 : 2 + rnd(5);

		if (step == 1)
			snprintf(out + len, cap - len, "* ");
		else
			snprintf(out + len, cap - len, "*/%d ", step);
		for (int v = lo[f]; v <= hi[f]; v += step)
			m->set[f][f == 4 ? v % 7 : v] = 1;
		if (f == 2)
			m->star_dom = 1;
		if (f == 4)
			m->star_dow = 1;
		return;
	}
	for (int i = 0; i < items; i++) {
		int kind = rnd(f >= 2 && f != 3 ? 6 : 4);
		int a = lo[f] + rnd(hi[f] - lo[f] + 1), b = a + rnd(hi[f] - a + 1);
		int step = 1 + rnd(4);

		len = strlen(out);
		if (kind == 0) {
			snprintf(out + len, cap - len, "%d", a);
			m->set[f][f == 4 ? a % 7 : a] = 1;
		} else if (kind == 1) {
			snprintf(out + len, cap - len, "%d-%d", a, b);
			for (int v = a; v <= b; v++)
				m->set[f][f == 4 ? v % 7 : v] = 1;
		} else if (kind == 2 || kind == 3) {
			snprintf(out + len, cap - len, "%d-%d/%d", a, b, step);
			for (int v = a; v <= b; v += step)
				m->set[f][f == 4 ? v % 7 : v] = 1;
		} else if (f == 2) {
			snprintf(out + len, cap - len, "L");
			m->dom_last = 1;
		} else if (kind == 4) {
			snprintf(out + len, cap - len, "%dL", a);
			m->dow_last[a % 7] = 1;
		} else {
			int k = 1 + rnd(5);

			snprintf(out + len, cap - len, "%d#%d", a, k);
			m->dow_nth[a % 7][k] = 1;
		}
		len = strlen(out);
		snprintf(out + len, cap - len, i + 1 < items ? "," : " ");
	}
}

/* The day's verdict, computed once per day (three gmtime calls a minute are slow). */
struct day_cache {
	time_t day;
	int ok;
};

static int model_day(const struct model *m, time_t t)
{
	struct tm tm, next_day, next_week;
	time_t d1 = t + 86400, d7 = t + 7 * 86400;
	int dom, dow;

	gmtime_r(&t, &tm);
	gmtime_r(&d1, &next_day);
	gmtime_r(&d7, &next_week);
	if (!m->set[3][tm.tm_mon + 1])
		return 0;
	dom = m->set[2][tm.tm_mday] || (m->dom_last && next_day.tm_mday == 1);
	dow = m->set[4][tm.tm_wday] || (m->dow_last[tm.tm_wday] && next_week.tm_mon != tm.tm_mon) ||
	      m->dow_nth[tm.tm_wday][(tm.tm_mday - 1) / 7 + 1];
	/* Vixie: a '*' field's set is ANDed with the other; two restricted fields are ORed. */
	if (m->star_dom || m->star_dow)
		return dom && dow;
	return dom || dow;
}

static int model_matches(const struct model *m, time_t t, struct day_cache *cache)
{
	time_t day = t - t % 86400;
	long sod = (long)(t % 86400);

	if (cache->day != day) {
		cache->day = day;
		cache->ok = model_day(m, day);
	}
	return cache->ok && m->set[1][sod / 3600] && m->set[0][sod / 60 % 60] && m->sec[sod % 60];
}

static time_t civil_to_utc(const cb_civil *c)
{
	struct tm tm = { 0 };

	tm.tm_year = c->year - 1900;
	tm.tm_mon = c->month - 1;
	tm.tm_mday = c->day;
	tm.tm_hour = c->hour;
	tm.tm_min = c->minute;
	tm.tm_sec = c->second;
	return timegm(&tm);
}

static cb_civil utc_to_civil(time_t t)
{
	struct tm tm;
	cb_civil c;

	gmtime_r(&t, &tm);
	c.year = tm.tm_year + 1900;
	c.month = tm.tm_mon + 1;
	c.day = tm.tm_mday;
	c.hour = tm.tm_hour;
	c.minute = tm.tm_min;
	c.second = tm.tm_sec;
	return c;
}

/*
 * Walk the chain of next times of @p expr from @p start_civil to @p end and
 * compare each with the brute force's next match, stepping @p step seconds.
 * Returns how many times were checked, or -1 (after printing) on a mismatch.
 */
static int check_chain(const char *expr, const struct model *m, const cb_civil *start_civil,
		       time_t end, int step)
{
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;
	cb_civil at = *start_civil;
	time_t t = civil_to_utc(start_civil);
	struct day_cache cache = { -1, 0 };
	int checked = 0;

	if (cb_cron_parse(&c, expr, &err) != 0) {
		fprintf(stderr, "\n    \"%s\": %s\n", expr, err.message);
		return -1;
	}
	for (;;) {
		cb_civil got;
		int rc = cb_cron_next(c, &at, &got, &err);
		time_t want = 0;
		char g[80] = "none", w[80] = "none";

		for (time_t u = (t / step + 1) * step; u < end; u += step)
			if (model_matches(m, u, &cache)) {
				want = u;
				break;
			}
		if (rc != 0 || civil_to_utc(&got) >= end) {
			if (want == 0)
				break; /* both agree: nothing more in the window */
		} else if (civil_to_utc(&got) == want) {
			at = got;
			t = want;
			checked++;
			continue;
		}
		if (rc == 0)
			format_civil(g, sizeof(g), &got);
		if (want != 0) {
			cb_civil wc = utc_to_civil(want);

			format_civil(w, sizeof(w), &wc);
		}
		fprintf(stderr, "\n    \"%s\": expected %s, got %s (%s)\n", expr, w, g,
			err.message);
		checked = -1;
		break;
	}
	cb_cron_free(c);
	return checked;
}

/* Five fields, minute by minute over a year that holds a leap day. */
static void test_random_against_brute_force(void)
{
	const cb_civil start = { 2027, 12, 15, 7, 31, 0 };
	int checked = 0;

	for (int e = 0; e < 60; e++) {
		char expr[256] = "";
		struct model m;
		int n;

		memset(&m, 0, sizeof(m));
		m.sec[0] = 1;
		for (int f = 0; f < 5; f++)
			gen_field(expr, sizeof(expr), &m, f);
		n = check_chain(expr, &m, &start, civil_to_utc(&start) + 366 * 86400, 60);
		CU_ASSERT(n >= 0);
		checked += n > 0 ? n : 0;
	}
	/* The generator must produce expressions that fire, or this proves little. */
	CU_ASSERT(checked > 1000);
}

/* Six fields, second by second over two days across a month's end. */
static void test_random_seconds_against_brute_force(void)
{
	const cb_civil start = { 2028, 2, 28, 23, 0, 0 };
	int checked = 0;

	for (int e = 0; e < 30; e++) {
		char expr[320] = "";
		struct model m, sec;
		int n;

		memset(&m, 0, sizeof(m));
		memset(&sec, 0, sizeof(sec));
		gen_field(expr, sizeof(expr), &sec, 0); /* seconds share the minute's range */
		memcpy(m.sec, sec.set[0], sizeof(m.sec));
		for (int f = 0; f < 5; f++)
			gen_field(expr, sizeof(expr), &m, f);
		n = check_chain(expr, &m, &start, civil_to_utc(&start) + 2 * 86400, 1);
		CU_ASSERT(n >= 0);
		checked += n > 0 ? n : 0;
	}
	CU_ASSERT(checked > 100);
}

static const CU_TestInfo tests[] = {
	{ "next_table", test_next_table },
	{ "has_seconds", test_has_seconds },
	{ "is_fixed_time", test_is_fixed_time },
	{ "next_arguments", test_next_arguments },
	{ "bad_table", test_bad_table },
	{ "long_expression_message", test_long_expression_message },
	{ "random_against_brute_force", test_random_against_brute_force },
	{ "random_seconds_against_brute_force", test_random_seconds_against_brute_force },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("cron", NULL, NULL, tests);
}
