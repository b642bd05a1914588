/*
 * Time zones from the repository's server (repository/zone.c): the segment
 * tables of the unit test (tests/harness/zone_cases.h) are what
 * batch_tz_segment returns, the unit test's cases come out the same through
 * cb__pg_zone_lookup, an unknown zone is refused with a clear message, and
 * the lookup keeps its segments, so that a scheduler asking every second does
 * not query every second. The public cb_zone (cbatch/zone.h), which the CLI
 * shows CBATCH_TZ's times with, gives the same offsets and checks names as
 * `schedule add --tz` does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/zone.h"
#include "cbtest.h"
#include "repo.h"
#include "zone.h"
#include "zone_cases.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "zone", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* batch_tz_segment(@p at, @p zone), straight from the server. */
static int server_segment(cb__zone_segment *out, long long at, const char *zone)
{
	char a[24];
	const char *p[2] = { a, zone };
	PGresult *res;
	int ok;

	snprintf(a, sizeof(a), "%lld", at);
	res = PQexecParams(conn,
			   "SELECT seg_start, seg_end, utc_offset, prev_offset, next_offset"
			   " FROM batch_tz_segment($1::bigint, $2::text)",
			   2, NULL, p, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	if (ok) {
		out->start = atoll(PQgetvalue(res, 0, 0));
		out->end = atoll(PQgetvalue(res, 0, 1));
		out->offset = atoi(PQgetvalue(res, 0, 2));
		out->prev_offset = atoi(PQgetvalue(res, 0, 3));
		out->next_offset = atoi(PQgetvalue(res, 0, 4));
	} else {
		CBT_FAILF("batch_tz_segment(%lld, %s): %s", at, zone, PQerrorMessage(conn));
	}
	PQclear(res);
	return ok;
}

static int same_segment(const cb__zone_segment *a, const cb__zone_segment *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->prev_offset == b->prev_offset && a->next_offset == b->next_offset;
}

/* Each segment of each table, asked at its first second, its middle and its
 * last second: the server gives exactly that segment, directly and through
 * the lookup. */
static void test_tables_are_the_servers(void)
{
	cb_error err = CB_ERROR_INIT;
	int checked = 0;

	for (size_t zi = 0; zi < ZC_NZONES; zi++) {
		const zc_zone *z = &zc_zones[zi];

		for (size_t i = 0; i < z->n; i++) {
			const cb__zone_segment *want = &z->seg[i];
			long long at[3] = { want->start,
					    want->start + (want->end - want->start) / 2,
					    want->end - 1 };

			for (int k = 0; k < 3; k++) {
				cb__zone_segment got;
				cb__pg_zone *pz = NULL;

				if (!server_segment(&got, at[k], z->name))
					return;
				if (!same_segment(&got, want))
					CBT_FAILF("%s at %lld: server [%lld, %lld) %d/%d/%d, table "
						  "[%lld, %lld) %d/%d/%d",
						  z->name, at[k], got.start, got.end,
						  got.prev_offset, got.offset, got.next_offset,
						  want->start, want->end, want->prev_offset,
						  want->offset, want->next_offset);
				/* a new lookup each time, so that it asks the server */
				CBT_PASS_FATAL(cb__pg_zone_new(&pz, z->name, &err), &err);
				cb__pg_zone_set_conn(pz, conn);
				CBT_PASS(cb__pg_zone_lookup(pz, at[k], &got, &err), &err);
				CU_ASSERT(same_segment(&got, want));
				CBT_EQ_LL(cb__pg_zone_queries(pz), 1);
				cb__pg_zone_free(pz);
				checked++;
			}
		}
	}
	CBT_EQ_LL(checked, 3 * (7 + 3 + 3));
}

static void test_cases_through_the_server(void)
{
	cb_error err = CB_ERROR_INIT;
	int failures = 0;

	for (size_t i = 0; i < ZC_NCASES; i++) {
		cb__pg_zone *pz = NULL;

		CBT_PASS_FATAL(cb__pg_zone_new(&pz, zc_cases[i].zone, &err), &err);
		cb__pg_zone_set_conn(pz, conn);
		failures += zc_run_case(&zc_cases[i], cb__pg_zone_lookup, pz);
		cb__pg_zone_free(pz);
	}
	CBT_EQ_LL(failures, 0);
}

/* In UTC the server's segments change nothing: the civil search, as it is. */
static void test_utc_through_the_server(void)
{
	static const char *const exprs[] = { "* * * * *", "30 2 * * *", "0 0 29 2 *",
					     "*/10 * * * * *", "0 0 L * *" };
	cb_error err = CB_ERROR_INIT;
	cb__pg_zone *pz = NULL;

	CBT_PASS_FATAL(cb__pg_zone_new(&pz, "UTC", &err), &err);
	cb__pg_zone_set_conn(pz, conn);
	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		cb_cron *c = NULL;

		CBT_PASS_FATAL(cb_cron_parse(&c, exprs[e], &err), &err);
		for (long long after = -86400LL * 365 * 30; after < 86400LL * 365 * 60;
		     after += 86400LL * 365 * 3 + 12345) {
			cb_civil ac, wc;
			long long got = 0;

			cb__civil_from_epoch(&ac, after);
			CBT_PASS_FATAL(cb_cron_next(c, &ac, &wc, &err), &err);
			CBT_PASS_FATAL(
				cb__cron_next_instant(&got, c, after, cb__pg_zone_lookup, pz, &err),
				&err);
			CBT_EQ_LL(got, cb__epoch_from_civil(&wc));
		}
		cb_cron_free(c);
	}
	cb__pg_zone_free(pz);
}

static void test_unknown_zone(void)
{
	static const char *const refused[] = {
		"Mars/Base",
		"",
		"CEST",
		"UTC+3",
		"right/America/New_York",
		"+05:00",
		"America/New_Yrok",
		"x'); DROP TABLE batch_schedule; --",
	};
	static const char *const known[] = {
		"America/New_York", "america/new_york",    "UTC",         "Etc/UTC",
		"Europe/Berlin",    "Australia/Lord_Howe", "Asia/Kolkata"
	};
	cb_error err = CB_ERROR_INIT;
	cb__pg_zone *pz = NULL;
	cb__zone_segment s;

	CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_check(conn, "Mars/Base", &err), &err);
	CBT_EQ_STR(err.message, "time zone 'Mars/Base' is not known to the repository's server");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cb_error_clear(&err);
		CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_check(conn, refused[i], &err), &err);
		CBT_CONTAINS(err.message, "is not known to the repository's server");
	}
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		cb_error_clear(&err);
		CBT_PASS(cb__pg_zone_check(conn, known[i], &err), &err);
	}
	/* the name travelled as a value: the table is still there */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM pg_tables WHERE tablename = "
				     "'batch_schedule'"),
		  1);
	/* the lookup says the same of a zone the server does not know */
	cb_error_clear(&err);
	CBT_PASS_FATAL(cb__pg_zone_new(&pz, "Mars/Base", &err), &err);
	cb__pg_zone_set_conn(pz, conn);
	CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_lookup(pz, 1772953200, &s, &err), &err);
	CBT_EQ_STR(err.message, "time zone 'Mars/Base' is not known to the repository's server");
	/* the connection is fine after it */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT 1"), 1);
	cb__pg_zone_free(pz);
	/* no name, a name too long for batch_schedule.time_zone, no connection */
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_new(&pz, "", &err), &err);
	cb_error_clear(&err);
	{
		char longname[CB__ZONE_NAME_MAX + 2];

		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_new(&pz, longname, &err), &err);
		cb_error_clear(&err);
		CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_check(conn, longname, &err), &err);
	}
	cb_error_clear(&err);
	CBT_PASS_FATAL(cb__pg_zone_new(&pz, "UTC", &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, cb__pg_zone_lookup(pz, 0, &s, &err), &err);
	CBT_CONTAINS(err.message, "no connection");
	cb__pg_zone_free(pz);
	cb__pg_zone_free(NULL);
}

/* calls of batch_tz_segment in the open transaction, as the server counts them */
static long long server_calls(void)
{
	return cbt_query_ll(conn, "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
				  " WHERE funcname = 'batch_tz_segment'");
}

/*
 * 10,000 next-instant calls of an every-second schedule, across New York's
 * spring change, the way the scheduler makes them: one lookup per call, a
 * query only per new segment. The server counts the function's calls too.
 */
static void test_the_lookup_keeps_its_segments(void)
{
	cb_error err = CB_ERROR_INIT;
	cb__pg_zone *pz = NULL;
	cb_cron *c = NULL;
	long long at = 1772953200 - 5000, got = 0;
	double t0, elapsed;
	PGconn *other;

	CBT_PASS_FATAL(cb_cron_parse(&c, "* * * * * *", &err), &err);
	CBT_PASS_FATAL(cb__pg_zone_new(&pz, "America/New_York", &err), &err);
	cb__pg_zone_set_conn(pz, conn);
	CU_ASSERT_FATAL(cbt_exec(conn, "BEGIN; SET LOCAL track_functions = 'pl'") == 0);
	t0 = cbt_now();
	for (int i = 0; i < 10000; i++) {
		CBT_PASS_FATAL(cb__cron_next_instant(&got, c, at, cb__pg_zone_lookup, pz, &err),
			       &err);
		CBT_EQ_LL(got, at + 1);
		at = got;
	}
	elapsed = cbt_now() - t0;
	printf("\n    10000 next instants across a change: %lld queries (server: %lld "
	       "calls), %.1f ms\n",
	       cb__pg_zone_queries(pz), server_calls(), elapsed * 1000);
	/* the segment before the change and the one after */
	CBT_EQ_LL(cb__pg_zone_queries(pz), 2);
	CBT_EQ_LL(server_calls(), 2);
	CU_ASSERT(cbt_exec(conn, "COMMIT") == 0);
	/* another connection may reach another server: the kept segments go */
	other = cbt_connect(db);
	cb__pg_zone_set_conn(pz, other);
	CBT_PASS(cb__cron_next_instant(&got, c, at, cb__pg_zone_lookup, pz, &err), &err);
	CBT_EQ_LL(cb__pg_zone_queries(pz), 3);
	/* the same one again keeps them */
	cb__pg_zone_set_conn(pz, other);
	CBT_PASS(cb__cron_next_instant(&got, c, at, cb__pg_zone_lookup, pz, &err), &err);
	CBT_EQ_LL(cb__pg_zone_queries(pz), 3);
	PQfinish(other);
	cb__pg_zone_free(pz);
	cb_cron_free(c);
}

static void test_public_zone(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_zone *z = NULL;
	char buf[40];
	int off = 0;

	CBT_PASS(cb_zone_open(&z, conn, "asia/kolkata", 1, &err), &err);
	CBT_EQ_STR(cb_zone_name(z), "asia/kolkata");
	CBT_PASS(cb_zone_offset(z, 1796000000LL, &off, &err), &err);
	CBT_EQ_LL(off, 19800);
	cb_zone_free(z);
	/* Summer and winter in Berlin (2026-07-01 and 2026-12-01, noon UTC). */
	CBT_PASS(cb_zone_open(&z, conn, "Europe/Berlin", 1, &err), &err);
	CBT_PASS(cb_zone_offset(z, 1782907200LL, &off, &err), &err);
	CBT_EQ_LL(off, 7200);
	CBT_PASS(cb_zone_offset(z, 1796126400LL, &off, &err), &err);
	CBT_EQ_LL(off, 3600);
	cb_zone_free(z);
	/* Names a schedule could not have are refused, naming them. */
	CBT_FAILS_WITH(CB_EINVAL, cb_zone_open(&z, conn, "Mars/Base", 1, &err), &err);
	CBT_CONTAINS(err.message, "'Mars/Base'");
	CU_ASSERT(z == NULL);
	CBT_FAILS_WITH(CB_EINVAL, cb_zone_open(&z, conn, "UTC+3", 1, &err), &err);
	/* Unchecked, an unknown name fails at its first use. */
	CBT_PASS(cb_zone_open(&z, conn, "Mars/Base", 0, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, cb_zone_offset(z, 0, &off, &err), &err);
	cb_zone_free(z);

	cb_time_format(buf, sizeof(buf), 0, 0);
	CBT_EQ_STR(buf, "1970-01-01T00:00:00Z");
	cb_time_format(buf, sizeof(buf), 1796126400LL, 3600);
	CBT_EQ_STR(buf, "2026-12-01T13:00:00+01:00");
	cb_time_format(buf, sizeof(buf), 1796126400LL, -34200);
	CBT_EQ_STR(buf, "2026-12-01T02:30:00-09:30");
	/* Local mean time of old: an offset with seconds keeps them. */
	cb_time_format(buf, sizeof(buf), 0, 561);
	CBT_EQ_STR(buf, "1970-01-01T00:09:21+00:09:21");
}

static const CU_TestInfo tests[] = {
	{ "tables are the server's", test_tables_are_the_servers },
	{ "cases through the server", test_cases_through_the_server },
	{ "utc through the server", test_utc_through_the_server },
	{ "unknown zone", test_unknown_zone },
	{ "the lookup keeps its segments", test_the_lookup_keeps_its_segments },
	{ "public zone", test_public_zone },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("zone", init, clean, tests);
}
