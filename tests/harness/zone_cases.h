/*
 * Time zone test data shared by tests/unit/test_zone.c (against these tables,
 * no database) and tests/integration/test_zone.c (the same cases against the
 * server's batch_tz_segment, which must also give exactly these segments).
 *
 * The segments are what batch_tz_segment returned for 2025-2029 (the IANA
 * rules, which do not change for these zones and years). Each table runs from
 * one real transition to another, back to back.
 *
 * Expected instants are written as civil time and UTC offset ("2026-03-08
 * 03:00:00 -0400") and turned into Unix time with the C library's timegm,
 * not with the code under test.
 */
#ifndef CBTEST_ZONE_CASES_H
#define CBTEST_ZONE_CASES_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cbatch/cron.h"
#include "cbatch/error.h"
#include "cbtest.h"
#include "zone.h"

/* America/New_York: EST -05:00, EDT -04:00; 2025-11-02 to 2029-03-11. */
static const cb__zone_segment zc_new_york[] = {
	{ 1762063200, 1772953200, -18000, -14400, -14400 }, /* 2025-11-02 06:00Z */
	{ 1772953200, 1793512800, -14400, -18000, -18000 }, /* 2026-03-08 07:00Z */
	{ 1793512800, 1805007600, -18000, -14400, -14400 }, /* 2026-11-01 06:00Z */
	{ 1805007600, 1825567200, -14400, -18000, -18000 }, /* 2027-03-14 07:00Z */
	{ 1825567200, 1836457200, -18000, -14400, -14400 }, /* 2027-11-07 06:00Z */
	{ 1836457200, 1857016800, -14400, -18000, -18000 }, /* 2028-03-12 07:00Z */
	{ 1857016800, 1867906800, -18000, -14400, -14400 }, /* 2028-11-05 06:00Z */
};

/* Europe/Berlin: CET +01:00, CEST +02:00; 2025-10-26 to 2027-03-28. */
static const cb__zone_segment zc_berlin[] = {
	{ 1761440400, 1774746000, 3600, 7200, 7200 }, /* 2025-10-26 01:00Z */
	{ 1774746000, 1792890000, 7200, 3600, 3600 }, /* 2026-03-29 01:00Z */
	{ 1792890000, 1806195600, 3600, 7200, 7200 }, /* 2026-10-25 01:00Z */
};

/* Australia/Lord_Howe: +10:30, and +11:00 in its summer: a 30-minute shift;
 * 2025-10-05 to 2027-04-04. */
static const cb__zone_segment zc_lord_howe[] = {
	{ 1759591800, 1775314800, 39600, 37800, 37800 }, /* 2025-10-04 15:30Z */
	{ 1775314800, 1791041400, 37800, 39600, 39600 }, /* 2026-04-04 15:00Z */
	{ 1791041400, 1806764400, 39600, 37800, 37800 }, /* 2026-10-03 15:30Z */
};

typedef struct zc_zone {
	const char *name;
	const cb__zone_segment *seg;
	size_t n;
} zc_zone;

#define ZC_ZONE(name, t)                                                                           \
	{                                                                                          \
		name, t, sizeof(t) / sizeof(t[0])                                                  \
	}
static const zc_zone zc_zones[] = {
	ZC_ZONE("America/New_York", zc_new_york),
	ZC_ZONE("Europe/Berlin", zc_berlin),
	ZC_ZONE("Australia/Lord_Howe", zc_lord_howe),
};
#define ZC_NZONES (sizeof(zc_zones) / sizeof(zc_zones[0]))

/* A cb__zone_lookup_fn over one of the tables (ctx: a const zc_zone *). */
static inline int zc_table_lookup(void *ctx, long long t, cb__zone_segment *out, cb_error *err)
{
	const zc_zone *z = ctx;

	for (size_t i = 0; i < z->n; i++)
		if (z->seg[i].start <= t && t < z->seg[i].end) {
			*out = z->seg[i];
			return 0;
		}
	return cb_error_set(err, CB_EINVAL, "test table %s: instant %lld is outside it", z->name,
			    t);
}

static inline const zc_zone *zc_zone_named(const char *name)
{
	for (size_t i = 0; i < ZC_NZONES; i++)
		if (strcmp(zc_zones[i].name, name) == 0)
			return &zc_zones[i];
	return NULL;
}

/* "YYYY-MM-DD HH:MM:SS +hhmm" to Unix time (timegm); 0 if malformed. */
static inline int zc_parse(const char *s, long long *out)
{
	struct tm tm = { 0 };
	int off, n = 0;
	char sign;

	if (sscanf(s, "%d-%d-%d %d:%d:%d %c%4d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &sign, &off, &n) != 8 ||
	    s[n] != '\0' || (sign != '+' && sign != '-'))
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	off = (off / 100 * 3600 + off % 100 * 60) * (sign == '-' ? -1 : 1);
	*out = (long long)timegm(&tm) - off;
	return 1;
}

/* The number of firings a case lists at most. */
#define ZC_MAX_FIRES 8

/*
 * From @c after, the expression fires at @c fires, in order, and at nothing
 * in between (each is the next instant after the one before).
 */
typedef struct zc_case {
	const char *zone, *expr, *after;
	const char *fires[ZC_MAX_FIRES];
} zc_case;

static const zc_case zc_cases[] = {
	/* New York, spring forward: 2026-03-08 02:00 EST becomes 03:00 EDT (07:00Z). */
	/* fixed-time, in the gap: once, at the change */
	{ "America/New_York",
	  "30 2 * * *",
	  "2026-03-07 02:30:00 -0500",
	  { "2026-03-08 03:00:00 -0400", "2026-03-09 02:30:00 -0400" } },
	{ "America/New_York",
	  "30 2 * * *",
	  "2026-03-08 01:59:59 -0500",
	  { "2026-03-08 03:00:00 -0400", "2026-03-09 02:30:00 -0400" } },
	{ "America/New_York",
	  "30 2 * * *",
	  "2026-03-08 03:00:00 -0400",
	  { "2026-03-09 02:30:00 -0400" } },
	{ "America/New_York",
	  "0 2 * * *",
	  "2026-03-07 12:00:00 -0500",
	  { "2026-03-08 03:00:00 -0400", "2026-03-09 02:00:00 -0400" } },
	/* several gap times and 03:00 itself collapse into one firing */
	{ "America/New_York",
	  "0,15,30,45 2 * * *",
	  "2026-03-07 23:00:00 -0500",
	  { "2026-03-08 03:00:00 -0400", "2026-03-09 02:00:00 -0400",
	    "2026-03-09 02:15:00 -0400" } },
	{ "America/New_York",
	  "0 2,3 * * *",
	  "2026-03-07 23:00:00 -0500",
	  { "2026-03-08 03:00:00 -0400", "2026-03-09 02:00:00 -0400",
	    "2026-03-09 03:00:00 -0400" } },
	{ "America/New_York",
	  "30 1,3 * * *",
	  "2026-03-08 00:00:00 -0500",
	  { "2026-03-08 01:30:00 -0500", "2026-03-08 03:30:00 -0400",
	    "2026-03-09 01:30:00 -0400" } },
	/* wildcard: the missing hour does not fire */
	{ "America/New_York",
	  "0 * * * *",
	  "2026-03-08 00:30:00 -0500",
	  { "2026-03-08 01:00:00 -0500", "2026-03-08 03:00:00 -0400",
	    "2026-03-08 04:00:00 -0400" } },
	{ "America/New_York",
	  "@hourly",
	  "2026-03-08 00:30:00 -0500",
	  { "2026-03-08 01:00:00 -0500", "2026-03-08 03:00:00 -0400" } },
	{ "America/New_York",
	  "*/20 2 * * *",
	  "2026-03-08 00:00:00 -0500",
	  { "2026-03-09 02:00:00 -0400", "2026-03-09 02:20:00 -0400" } },
	{ "America/New_York",
	  "@daily",
	  "2026-03-07 12:00:00 -0500",
	  { "2026-03-08 00:00:00 -0500", "2026-03-09 00:00:00 -0400" } },
	/* New York, fall back: 2026-11-01 02:00 EDT becomes 01:00 EST (06:00Z). */
	/* fixed-time, in the repeated hour: the first occurrence only */
	{ "America/New_York",
	  "30 1 * * *",
	  "2026-10-31 01:30:00 -0400",
	  { "2026-11-01 01:30:00 -0400", "2026-11-02 01:30:00 -0500" } },
	{ "America/New_York",
	  "15 1 * * *",
	  "2026-11-01 01:20:00 -0400",
	  { "2026-11-02 01:15:00 -0500" } },
	{ "America/New_York",
	  "30 1 * * *",
	  "2026-11-01 01:10:00 -0500",
	  { "2026-11-02 01:30:00 -0500" } },
	{ "America/New_York",
	  "*/20 30 1 * * *",
	  "2026-11-01 00:00:00 -0400",
	  { "2026-11-01 01:30:00 -0400", "2026-11-01 01:30:20 -0400", "2026-11-01 01:30:40 -0400",
	    "2026-11-02 01:30:00 -0500" } },
	{ "America/New_York",
	  "0 2 * * *",
	  "2026-11-01 00:00:00 -0400",
	  { "2026-11-01 02:00:00 -0500", "2026-11-02 02:00:00 -0500" } },
	/* wildcard: both passes */
	{ "America/New_York",
	  "*/30 * * * *",
	  "2026-11-01 00:45:00 -0400",
	  { "2026-11-01 01:00:00 -0400", "2026-11-01 01:30:00 -0400", "2026-11-01 01:00:00 -0500",
	    "2026-11-01 01:30:00 -0500", "2026-11-01 02:00:00 -0500" } },
	{ "America/New_York",
	  "0 * * * *",
	  "2026-11-01 00:30:00 -0400",
	  { "2026-11-01 01:00:00 -0400", "2026-11-01 01:00:00 -0500",
	    "2026-11-01 02:00:00 -0500" } },
	{ "America/New_York",
	  "15 * * * *",
	  "2026-11-01 01:20:00 -0400",
	  { "2026-11-01 01:15:00 -0500", "2026-11-01 02:15:00 -0500" } },
	{ "America/New_York",
	  "* 1 * * *",
	  "2026-11-01 01:58:00 -0400",
	  { "2026-11-01 01:59:00 -0400", "2026-11-01 01:00:00 -0500",
	    "2026-11-01 01:01:00 -0500" } },
	/* the leap day and the 31st through the zone (EST in February, EDT in summer) */
	{ "America/New_York",
	  "0 12 29 2 *",
	  "2026-03-01 00:00:00 -0500",
	  { "2028-02-29 12:00:00 -0500" } },
	{ "America/New_York",
	  "0 9 31 * *",
	  "2026-03-31 09:00:00 -0400",
	  { "2026-05-31 09:00:00 -0400", "2026-07-31 09:00:00 -0400", "2026-08-31 09:00:00 -0400",
	    "2026-10-31 09:00:00 -0400", "2026-12-31 09:00:00 -0500", "2027-01-31 09:00:00 -0500",
	    "2027-03-31 09:00:00 -0400" } },
	{ "America/New_York",
	  "0 0 L 2 *",
	  "2027-03-01 00:00:00 -0500",
	  { "2028-02-29 00:00:00 -0500" } },
	/* Berlin, spring forward: 2026-03-29 02:00 CET becomes 03:00 CEST (01:00Z). */
	{ "Europe/Berlin",
	  "30 2 * * *",
	  "2026-03-28 02:30:00 +0100",
	  { "2026-03-29 03:00:00 +0200", "2026-03-30 02:30:00 +0200" } },
	{ "Europe/Berlin",
	  "0 * * * *",
	  "2026-03-29 00:30:00 +0100",
	  { "2026-03-29 01:00:00 +0100", "2026-03-29 03:00:00 +0200" } },
	/* Berlin, fall back: 2026-10-25 03:00 CEST becomes 02:00 CET (01:00Z). */
	{ "Europe/Berlin",
	  "30 2 * * *",
	  "2026-10-24 02:30:00 +0200",
	  { "2026-10-25 02:30:00 +0200", "2026-10-26 02:30:00 +0100" } },
	{ "Europe/Berlin",
	  "*/30 * * * *",
	  "2026-10-25 01:45:00 +0200",
	  { "2026-10-25 02:00:00 +0200", "2026-10-25 02:30:00 +0200", "2026-10-25 02:00:00 +0100",
	    "2026-10-25 02:30:00 +0100", "2026-10-25 03:00:00 +0100" } },
	{ "Europe/Berlin",
	  "0 3 * * *",
	  "2026-10-24 12:00:00 +0200",
	  { "2026-10-25 03:00:00 +0100", "2026-10-26 03:00:00 +0100" } },
	/* Lord Howe, 30 minutes back: 2026-04-05 02:00 +11:00 becomes 01:30 +10:30
	 * (2026-04-04 15:00Z). */
	{ "Australia/Lord_Howe",
	  "45 1 * * *",
	  "2026-04-04 01:45:00 +1100",
	  { "2026-04-05 01:45:00 +1100", "2026-04-06 01:45:00 +1030" } },
	{ "Australia/Lord_Howe",
	  "*/15 * * * *",
	  "2026-04-05 01:20:00 +1100",
	  { "2026-04-05 01:30:00 +1100", "2026-04-05 01:45:00 +1100", "2026-04-05 01:30:00 +1030",
	    "2026-04-05 01:45:00 +1030", "2026-04-05 02:00:00 +1030" } },
	/* Lord Howe, 30 minutes forward: 2026-10-04 02:00 +10:30 becomes 02:30 +11:00
	 * (2026-10-03 15:30Z). */
	{ "Australia/Lord_Howe",
	  "15 2 * * *",
	  "2026-10-03 02:15:00 +1030",
	  { "2026-10-04 02:30:00 +1100", "2026-10-05 02:15:00 +1100" } },
	{ "Australia/Lord_Howe",
	  "30 2 * * *",
	  "2026-10-03 12:00:00 +1030",
	  { "2026-10-04 02:30:00 +1100", "2026-10-05 02:30:00 +1100" } },
	{ "Australia/Lord_Howe",
	  "*/15 * * * *",
	  "2026-10-04 01:50:00 +1030",
	  { "2026-10-04 02:30:00 +1100", "2026-10-04 02:45:00 +1100" } },
	{ "Australia/Lord_Howe",
	  "0,30 * * * *",
	  "2026-10-04 01:40:00 +1030",
	  { "2026-10-04 02:30:00 +1100", "2026-10-04 03:00:00 +1100" } },
};
#define ZC_NCASES (sizeof(zc_cases) / sizeof(zc_cases[0]))

/* @p t as "1772953200 (2026-03-08 07:00:00Z)". */
static inline void zc_format_instant(char *buf, size_t n, long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	snprintf(buf, n, "%lld (%04d-%02d-%02d %02d:%02d:%02dZ)", t, tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Run case @p tc with @p lookup: each firing is the next instant after the
 * one before. @return the number of failures (each recorded). */
static inline int zc_run_case(const zc_case *tc, cb__zone_lookup_fn lookup, void *ctx)
{
	cb_error err = CB_ERROR_INIT;
	cb_cron *c = NULL;
	long long at;
	int failures = 0;

	if (cb_cron_parse(&c, tc->expr, &err) != 0 || !zc_parse(tc->after, &at)) {
		CBT_FAILF("case \"%s\" after %s: %s", tc->expr, tc->after, err.message);
		return 1;
	}
	for (int k = 0; k < ZC_MAX_FIRES && tc->fires[k]; k++) {
		long long want, got = 0;
		char wb[64], gb[64];
		int rc;

		if (!zc_parse(tc->fires[k], &want)) {
			CBT_FAILF("case \"%s\": bad instant %s", tc->expr, tc->fires[k]);
			failures++;
			break;
		}
		cb_error_clear(&err);
		rc = cb__cron_next_instant(&got, c, at, lookup, ctx, &err);
		if (rc != 0 || got != want) {
			zc_format_instant(wb, sizeof(wb), want);
			zc_format_instant(gb, sizeof(gb), got);
			CBT_FAILF("%s \"%s\" after %s, firing %d: expected %s = %s, got %s (%s %s)",
				  tc->zone, tc->expr, tc->after, k + 1, tc->fires[k], wb,
				  rc == 0 ? gb : "-", cb_strcode(rc), rc ? err.message : "");
			failures++;
			break;
		}
		at = got;
	}
	cb_cron_free(c);
	return failures;
}

#endif
