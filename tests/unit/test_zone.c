/*
 * Unit tests for time zones (core/zone.c), with no database: civil times of
 * Unix times against the C library's calendar (gmtime_r, timegm), and the
 * next fire instant in zones given as segment tables (tests/harness/
 * zone_cases.h, which the integration test holds against the server): a
 * table of cases around the daylight saving time changes of New York, Berlin
 * and Lord Howe, an every-second chain across both changes of a year, a
 * brute force that applies the Vixie rule instant by instant, and UTC, where
 * nothing may differ from the cron search on civil times.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbatch/cron.h"
#include "cbtest.h"
#include "zone.h"
#include "zone_cases.h"

/* UTC as a lookup: one long segment around any instant, no transition. */
static int utc_lookup(void *ctx, long long t, cb__zone_segment *out, cb_error *err)
{
	long long *calls = ctx;

	if (calls)
		(*calls)++;
	out->start = t - 1000000000LL;
	out->end = t + 1000000000LL;
	out->offset = out->prev_offset = out->next_offset = 0;
	return 0;
}

/* ---- civil times -------------------------------------------------------- */

static int civil_equals_tm(const cb_civil *c, const struct tm *tm)
{
	return c->year == tm->tm_year + 1900 && c->month == tm->tm_mon + 1 &&
	       c->day == tm->tm_mday && c->hour == tm->tm_hour && c->minute == tm->tm_min &&
	       c->second == tm->tm_sec;
}

static void test_civil_known_values(void)
{
	static const struct {
		long long t;
		cb_civil c;
	} cases[] = {
		{ 0, { 1970, 1, 1, 0, 0, 0 } },
		{ -1, { 1969, 12, 31, 23, 59, 59 } },
		{ -86400, { 1969, 12, 31, 0, 0, 0 } },
		{ -86401, { 1969, 12, 30, 23, 59, 59 } },
		{ 951782400, { 2000, 2, 29, 0, 0, 0 } }, /* 2000 is a leap year */
		{ 951868800, { 2000, 3, 1, 0, 0, 0 } },
		{ -2203891200, { 1900, 3, 1, 0, 0, 0 } }, /* 1900 is not */
		{ 4107456000, { 2100, 2, 28, 0, 0, 0 } }, /* nor is 2100 */
		{ 4107542400, { 2100, 3, 1, 0, 0, 0 } },
		{ 1709208000, { 2024, 2, 29, 12, 0, 0 } },
		{ 1772953200, { 2026, 3, 8, 7, 0, 0 } },
		{ -62135596800, { 1, 1, 1, 0, 0, 0 } },
		{ 253402300799, { 9999, 12, 31, 23, 59, 59 } },
		{ -62167219200, { 0, 1, 1, 0, 0, 0 } }, /* year 0 is 1 BC, a leap year */
		{ -62162121600, { 0, 2, 29, 0, 0, 0 } },
		{ -62167305600, { -1, 12, 31, 0, 0, 0 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cb_civil c;

		cb__civil_from_epoch(&c, cases[i].t);
		if (memcmp(&c, &cases[i].c, sizeof(c)) != 0)
			CBT_FAILF("%lld: got %04d-%02d-%02d %02d:%02d:%02d", cases[i].t, c.year,
				  c.month, c.day, c.hour, c.minute, c.second);
		CBT_EQ_LL(cb__epoch_from_civil(&cases[i].c), cases[i].t);
	}
}

/* Every day from 1600 to 2400 at a few times of day, as gmtime_r has them, and back. */
static void test_civil_brute_force_days(void)
{
	long long from = -11676096000LL / 86400, to = 13569465600LL / 86400; /* 1600 .. 2400 */
	static const int secs[] = { 0, 1, 3599, 43200, 86399 };
	long long bad = 0;

	for (long long d = from; d <= to; d++)
		for (size_t k = 0; k < sizeof(secs) / sizeof(secs[0]); k++) {
			long long t = d * 86400 + secs[k];
			time_t tt = (time_t)t;
			struct tm tm;
			cb_civil c;

			gmtime_r(&tt, &tm);
			cb__civil_from_epoch(&c, t);
			if (!civil_equals_tm(&c, &tm) || cb__epoch_from_civil(&c) != t ||
			    (long long)timegm(&tm) != t) {
				if (bad++ < 5)
					CBT_FAILF("%lld: %04d-%02d-%02d %02d:%02d:%02d", t, c.year,
						  c.month, c.day, c.hour, c.minute, c.second);
			}
		}
	CBT_EQ_LL(bad, 0);
}

/* Random instants over the years 1-9999, negative ones included. */
static void test_civil_random_round_trips(void)
{
	unsigned long long x = 0x9E3779B97F4A7C15ULL;
	long long lo = -62135596800LL, span = 253402300800LL - lo, bad = 0;

	for (int i = 0; i < 200000; i++) {
		long long t;
		time_t tt;
		struct tm tm;
		cb_civil c;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		t = lo + (long long)(x % (unsigned long long)span);
		tt = (time_t)t;
		gmtime_r(&tt, &tm);
		cb__civil_from_epoch(&c, t);
		if ((!civil_equals_tm(&c, &tm) || cb__epoch_from_civil(&c) != t) && bad++ < 5)
			CBT_FAILF("%lld: %04d-%02d-%02d %02d:%02d:%02d", t, c.year, c.month, c.day,
				  c.hour, c.minute, c.second);
	}
	CBT_EQ_LL(bad, 0);
}

static void test_zone_local(void)
{
	const zc_zone *ny = zc_zone_named("America/New_York");
	cb_error err = CB_ERROR_INIT;
	cb_civil c;
	int off = 0;

	/* the last second of EST and the first of EDT */
	CBT_PASS(cb__zone_local(&c, &off, 1772953199, zc_table_lookup, (void *)ny, &err), &err);
	CU_ASSERT(c.hour == 1 && c.minute == 59 && c.second == 59 && off == -18000);
	CBT_PASS(cb__zone_local(&c, &off, 1772953200, zc_table_lookup, (void *)ny, &err), &err);
	CU_ASSERT(c.day == 8 && c.hour == 3 && c.minute == 0 && c.second == 0 && off == -14400);
	/* the repeated 01:00 */
	CBT_PASS(cb__zone_local(&c, NULL, 1793512800, zc_table_lookup, (void *)ny, &err), &err);
	CU_ASSERT(c.month == 11 && c.day == 1 && c.hour == 1 && c.minute == 0);
	CBT_PASS(cb__zone_local(&c, &off, 1793512799, zc_table_lookup, (void *)ny, &err), &err);
	CU_ASSERT(c.hour == 1 && c.minute == 59 && c.second == 59 && off == -14400);
	/* the lookup's error comes through */
	CBT_FAILS_WITH(CB_EINVAL, cb__zone_local(&c, &off, 0, zc_table_lookup, (void *)ny, &err),
		       &err);
	CBT_CONTAINS(err.message, "outside");
}

/* ---- next fire instants ------------------------------------------------- */

static void test_next_table(void)
{
	int failures = 0;

	CU_ASSERT(ZC_NCASES >= 30);
	for (size_t i = 0; i < ZC_NCASES; i++) {
		const zc_zone *z = zc_zone_named(zc_cases[i].zone);

		CU_ASSERT_PTR_NOT_NULL_FATAL(z);
		failures += zc_run_case(&zc_cases[i], zc_table_lookup, (void *)z);
	}
	CBT_EQ_LL(failures, 0);
}

/*
 * `* * * * * *` fires at every instant: across both of New York's changes in
 * 2026, no instant is skipped or fired twice, and the civil times go up one
 * second at a time, except for the hour the spring change skips and the hour
 * the autumn change repeats.
 */
static void test_every_second_across_both_changes(void)
{
	static const struct {
		long long from, to, change;
		long long
			jump; /* civil seconds from the last second before the change to the first */
	} spans[] = {
		{ 1772953200 - 7200, 1772953200 + 7200, 1772953200, 3601 },
		{ 1793512800 - 7200, 1793512800 + 7200, 1793512800, -3599 },
	};
	const zc_zone *ny = zc_zone_named("America/New_York");
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;

	CBT_PASS_FATAL(cb_cron_parse(&c, "* * * * * *", &err), &err);
	for (size_t s = 0; s < sizeof(spans) / sizeof(spans[0]); s++) {
		long long at = spans[s].from, prev_civil, odd = 0, fired = 0;
		cb_civil lc;

		CBT_PASS_FATAL(cb__zone_local(&lc, NULL, at, zc_table_lookup, (void *)ny, &err),
			       &err);
		prev_civil = cb__epoch_from_civil(&lc);
		while (at < spans[s].to) {
			long long next, civil;

			CBT_PASS_FATAL(cb__cron_next_instant(&next, c, at, zc_table_lookup,
							     (void *)ny, &err),
				       &err);
			CBT_PASS_FATAL(
				cb__zone_local(&lc, NULL, next, zc_table_lookup, (void *)ny, &err),
				&err);
			civil = cb__epoch_from_civil(&lc);
			if (next != at + 1) {
				CBT_FAILF("after %lld: next %lld", at, next);
				break;
			}
			if (civil - prev_civil != (next == spans[s].change ? spans[s].jump : 1)) {
				if (odd++ < 3)
					CBT_FAILF("at %lld civil time moved by %lld s", next,
						  civil - prev_civil);
			}
			prev_civil = civil;
			at = next;
			fired++;
		}
		CBT_EQ_LL(fired, spans[s].to - spans[s].from);
		CBT_EQ_LL(odd, 0);
	}
	cb_cron_free(c);
}

/*
 * A second implementation of the rule, instant by instant, held against the
 * search: a wildcard expression fires at every instant whose civil time
 * matches; a fixed-time one at a matching civil time the first time it
 * occurs, and at a change to a later offset if a civil time it skipped matches.
 */
static int matches(const cb_cron *c, long long civil)
{
	cb_civil from, next;
	cb_error err = CB_ERROR_INIT;

	cb__civil_from_epoch(&from, civil - 1);
	return cb_cron_next(c, &from, &next, &err) == 0 && cb__epoch_from_civil(&next) == civil;
}

static int fires_at(const cb_cron *c, const zc_zone *z, long long t)
{
	cb__zone_segment s = { 0, 0, 0, 0, 0 };
	cb_error err = CB_ERROR_INIT;
	long long civil;

	if (zc_table_lookup((void *)z, t, &s, &err) != 0)
		return -1;
	civil = t + s.offset;
	if (!cb_cron_is_fixed_time(c))
		return matches(c, civil);
	if (t == s.start && s.prev_offset < s.offset)
		for (long long g = s.start + s.prev_offset; g < s.start + s.offset; g++)
			if (matches(c, g))
				return 1;
	if (s.prev_offset > s.offset && civil < s.start + s.prev_offset)
		return 0; /* the second pass of a repeated time */
	return matches(c, civil);
}

static void test_brute_force_around_changes(void)
{
	static const char *const exprs[] = {
		"0 * * * *",    "30 2 * * *", "*/15 * * * *",    "15,45 1,2 * * *", "0 2,3 * * *",
		"*/10 2 * * *", "59 1 * * *", "0 0,1,2,3 * * *", "5 */2 * * *",     "45 1-3 * * *",
		"@hourly",      "@daily",     "0 30 2 * * *",    "*/7 * 1-3 * * *",
	};
	long long checked = 0, bad = 0;

	for (size_t zi = 0; zi < ZC_NZONES; zi++) {
		const zc_zone *z = &zc_zones[zi];

		for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
			cb_error err = CB_ERROR_INIT;
			cb_cron *c = NULL;
			int step = 60;

			CBT_PASS_FATAL(cb_cron_parse(&c, exprs[e], &err), &err);
			if (cb_cron_has_seconds(c))
				step = 1;
			/* every change inside the table, from 4 hours before to 4 after */
			for (size_t k = 1; k < z->n; k++) {
				long long from = z->seg[k].start - 4 * 3600;
				long long to = z->seg[k].start + 4 * 3600;
				long long at = from, next = 0;

				/* the search's chain against the brute force's, instant by instant */
				if (cb__cron_next_instant(&next, c, at, zc_table_lookup, (void *)z,
							  &err) != 0) {
					CBT_FAILF("%s: %s", exprs[e], err.message);
					break;
				}
				for (long long t = from + step; t <= to; t += step) {
					int want = fires_at(c, z, t);

					checked++;
					if (want != (t == next)) {
						if (bad++ < 5)
							CBT_FAILF("%s \"%s\": at %lld brute force "
								  "says %d, search's next is %lld",
								  z->name, exprs[e], t, want, next);
					}
					if (t == next &&
					    cb__cron_next_instant(&next, c, t, zc_table_lookup,
								  (void *)z, &err) != 0) {
						CBT_FAILF("%s: %s", exprs[e], err.message);
						break;
					}
				}
			}
			cb_cron_free(c);
		}
	}
	CU_ASSERT(checked > 100000);
	CBT_EQ_LL(bad, 0);
}

/* In UTC the search on instants is the search on civil times, for every expression. */
static void test_utc_is_unchanged(void)
{
	static const char *const exprs[] = {
		"* * * * *",   "0 * * * *",       "30 2 * * *",       "*/15 * * * *",
		"0 0 29 2 *",  "0 0 31 * *",      "0 9 * * MON-FRI",  "0 0 L * *",
		"0 0 * * 5#5", "*/10 * * * * *",  "59 59 23 31 12 *", "@yearly",
		"@hourly",     "0 12 1,15 * MON", "0 0 LW * *",       "0 0 15W * *",
	};
	unsigned long long x = 88172645463325252ULL;
	long long bad = 0;

	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		cb_error err = CB_ERROR_INIT;
		cb_cron *c = NULL;

		CBT_PASS_FATAL(cb_cron_parse(&c, exprs[e], &err), &err);
		for (int i = 0; i < 500; i++) {
			/* 1900 .. 2100, negative instants included */
			long long after, got, want;
			cb_civil ac, wc;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			after = -2208988800LL + (long long)(x % 6311433600ULL);
			cb__civil_from_epoch(&ac, after);
			CBT_PASS_FATAL(cb_cron_next(c, &ac, &wc, &err), &err);
			want = cb__epoch_from_civil(&wc);
			CBT_PASS_FATAL(
				cb__cron_next_instant(&got, c, after, utc_lookup, NULL, &err),
				&err);
			if (got != want && bad++ < 5)
				CBT_FAILF("\"%s\" after %lld: %lld, civil search %lld", exprs[e],
					  after, got, want);
		}
		cb_cron_free(c);
	}
	CBT_EQ_LL(bad, 0);
}

static void test_never_and_errors(void)
{
	const zc_zone *ny = zc_zone_named("America/New_York");
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;
	long long got = 0, calls = 0;

	/* February the 30th: never, after a bounded search */
	CBT_PASS_FATAL(cb_cron_parse(&c, "0 0 30 2 *", &err), &err);
	CBT_FAILS_WITH(CB_ENOTFOUND, cb__cron_next_instant(&got, c, 0, utc_lookup, &calls, &err),
		       &err);
	CU_ASSERT(calls < 10);
	cb_cron_free(c);
	/* nothing before the year 10000 */
	cb_error_clear(&err);
	CBT_PASS_FATAL(cb_cron_parse(&c, "0 0 1 1 *", &err), &err);
	CBT_FAILS_WITH(CB_ENOTFOUND,
		       cb__cron_next_instant(&got, c, 253402300000LL, utc_lookup, NULL, &err),
		       &err);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL,
		       cb__cron_next_instant(&got, c, 253402300800LL, utc_lookup, NULL, &err),
		       &err);
	/* the lookup's own error, as it gave it */
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL,
		       cb__cron_next_instant(&got, c, 0, zc_table_lookup, (void *)ny, &err), &err);
	CBT_CONTAINS(err.message, "test table America/New_York");
	/* and the search runs off the end of a table rather than on forever */
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL,
		       cb__cron_next_instant(&got, c, 1867906800 - 86400, zc_table_lookup,
					     (void *)ny, &err),
		       &err);
	cb_cron_free(c);
}

/* A lookup that breaks its contract is caught, not followed. */
static int wrong_segment(void *ctx, long long t, cb__zone_segment *out, cb_error *err)
{
	out->start = t + 10;
	out->end = t + 20;
	out->offset = out->prev_offset = out->next_offset = 0;
	return 0;
}

static int tiny_segments(void *ctx, long long t, cb__zone_segment *out, cb_error *err)
{
	long long *calls = ctx;

	(*calls)++;
	out->start = t;
	out->end = t + 60;
	out->offset = out->prev_offset = out->next_offset = 0;
	return 0;
}

static void test_broken_lookups(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;
	long long got = 0, calls = 0;

	CBT_PASS_FATAL(cb_cron_parse(&c, "0 0 1 1 *", &err), &err);
	CBT_FAILS_WITH(CB_ERROR, cb__cron_next_instant(&got, c, 0, wrong_segment, NULL, &err),
		       &err);
	CBT_CONTAINS(err.message, "does not contain it");
	/* a minute per segment: a year of them is over the bound, which ends the search */
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_ERROR, cb__cron_next_instant(&got, c, 0, tiny_segments, &calls, &err),
		       &err);
	CBT_CONTAINS(err.message, "segments in 400 years");
	CU_ASSERT(calls <= 40000);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb__cron_next_instant(&got, c, 0, NULL, NULL, &err), &err);
	cb_cron_free(c);
}

static const CU_TestInfo tests[] = {
	{ "civil_known_values", test_civil_known_values },
	{ "civil_brute_force_days", test_civil_brute_force_days },
	{ "civil_random_round_trips", test_civil_random_round_trips },
	{ "zone_local", test_zone_local },
	{ "next_table", test_next_table },
	{ "every_second_across_both_changes", test_every_second_across_both_changes },
	{ "brute_force_around_changes", test_brute_force_around_changes },
	{ "utc_is_unchanged", test_utc_is_unchanged },
	{ "never_and_errors", test_never_and_errors },
	{ "broken_lookups", test_broken_lookups },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("zone", NULL, NULL, tests);
}
