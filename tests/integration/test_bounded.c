/*
 * A run has a bounded input (DESIGN.md, guarantee 9): it processes what
 * existed when it started. The keyset reader's high-water mark through the
 * ledger example as real processes (rows arriving during a throttled run, a
 * run killed with kill -9 and restarted after its lease), the key-range
 * partitioner's ranges over a small increment and its last range closed at
 * the mark, and the partitioned ledger keeping the bound on a restart.
 */
#include "cbtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[65536], errout[65536];

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "bounded", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

#define MAXARGS 24

static void examples_argv(const char **argv, const char *const *args)
{
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < MAXARGS - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
}

/* cbatch-examples --db DB ARGS..., output captured. */
static int ex(const char *const *args)
{
	const char *argv[MAXARGS];

	examples_argv(argv, args);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}
#define EX(...) ex((const char *const[]){ __VA_ARGS__, NULL })

/* The same in the background, its output to the scratch file @p name. */
static pid_t spawn(const char *name, const char *const *args)
{
	const char *argv[MAXARGS];
	char log[512];

	snprintf(log, sizeof(log), "%s/bounded-%s.log", cbt_tmpdir(), name);
	examples_argv(argv, args);
	return cbt_spawn(argv, log);
}
#define SPAWN(name, ...) spawn(name, (const char *const[]){ __VA_ARGS__, NULL })

/* A fresh repository history and @p rows unprocessed accounts (ids 1..rows). */
static void reset(const char *rows)
{
	cbt_exec(conn, "TRUNCATE batch_job_instance CASCADE; TRUNCATE batch_lock CASCADE");
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", rows, "--reset"), 0);
}

/* @p n accounts arrive, with ids after the largest (another session's commit). */
static void arrive(long long n)
{
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"WITH i AS (INSERT INTO account (seller_id, amount) "
				"SELECT 1 + g % 50, 1.00 FROM generate_series(1, $1::bigint) g "
				"RETURNING 1) SELECT count(*) FROM i",
				"lld", n),
		  n);
}

static long long ledger_rows(void)
{
	return cbt_query_ll(conn, "SELECT count(*) FROM ledger");
}

/* Every account up to @p upto is in the ledger once, and none after it. */
static void assert_posted_upto(long long upto, long long total)
{
	CBT_EQ_LL(ledger_rows(), upto);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT coalesce(max(account_id), 0) FROM ledger"), upto);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"), upto);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM account WHERE NOT processed AND id > $1",
				"lld", upto),
		  total - upto);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l "
				     "ON l.account_id = a.id AND l.amount = a.amount"),
		  upto);
}

/* The newest plain (not partition) step execution's @p column. */
static long long newest_step(const char *column)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "SELECT %s FROM batch_step_execution WHERE partition_index IS NULL "
		 "ORDER BY step_execution_id DESC LIMIT 1",
		 column);
	return cbt_query_ll(conn, sql);
}

/* The high-water mark the newest step execution committed (its reader's). */
static long long newest_hwm(void)
{
	return cbt_query_ll(conn, "SELECT (c.serialized_context->'reader'->'hwm'->>0)::bigint "
				  "FROM batch_step_execution_context c JOIN batch_step_execution s "
				  "USING (step_execution_id) WHERE s.partition_index IS NULL "
				  "ORDER BY step_execution_id DESC LIMIT 1");
}

/*
 * (1) Rows that arrive while a (throttled) run runs are not its input; the
 * next instance (--next) posts them.
 */
static void test_rows_arriving_during_a_run_are_the_next_run_s(void)
{
	pid_t pid;
	long long before;

	reset("2000");
	/* 40 chunks of 50, 30 ms each: 1.2 s at least */
	pid = SPAWN("during", "run", "ledger", "-chunk.size:long=50", "-sleepMs:long=30");
	if (!cbt_wait_until(conn, 30000, "SELECT (count(*) >= 100)::int FROM ledger"))
		CBT_FAILF("the run never posted 100 accounts");
	arrive(500); /* ids 2001..2500 */
	before = ledger_rows();
	if (before >= 2000)
		CBT_FAILF("the run had finished before the rows arrived; the test proves nothing");
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	assert_posted_upto(2000, 2500);
	CBT_EQ_LL(newest_step("read_count"), 2000);
	CBT_EQ_LL(newest_hwm(), 2000);

	/* the next run's input is what arrived */
	CBT_EQ_LL(EX("run", "ledger", "--next"), 0);
	assert_posted_upto(2500, 2500);
	CBT_EQ_LL(newest_step("read_count"), 500);
	CBT_EQ_LL(newest_hwm(), 2500);
}

/*
 * (2) A run killed mid-way (kill -9), rows arriving after, its restart after
 * the lease: the restart posts the rest up to the original bound only.
 */
static void test_a_killed_run_s_restart_keeps_the_original_bound(void)
{
	long long written;
	pid_t pid;

	reset("20000");
	pid = SPAWN("killed", "run", "ledger", "-chunk.size:long=100", "-sleepMs:long=10",
		    "--lease", "2");
	if (!cbt_wait_until(conn, 30000, "SELECT (count(*) >= 1000)::int FROM ledger"))
		CBT_FAILF("the run never posted 1000 accounts");
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	cbt_wait_sessions_gone(conn);
	written = ledger_rows();
	if (written >= 20000)
		CBT_FAILF("the run finished before the kill; the test proves nothing");
	CBT_EQ_LL(newest_hwm(), 20000);
	arrive(300);        /* ids 20001..20300 */
	cbt_sleep_ms(2500); /* the dead owner's lease runs out */
	CBT_EQ_LL(EX("run", "ledger"), 0);
	CBT_CONTAINS(out, "(restart)");
	assert_posted_upto(20000, 20300);
	CBT_EQ_LL(newest_step("read_count"), 20000 - written);
	CBT_EQ_LL(newest_hwm(), 20000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 1);

	CBT_EQ_LL(EX("run", "ledger", "--next"), 0);
	assert_posted_upto(20300, 20300);
	CBT_EQ_LL(newest_step("read_count"), 300);
}

/* ---- the key-range partitioner ---- */

static const char *const inc_key[] = { "id", NULL };

/* Rows of inc that match NOT done within range @p r, the mark included. */
static long long rows_in_range(const json_t *r)
{
	const json_t *lo = json_object_get(r, "lo"), *hi = json_object_get(r, "hi");
	const json_t *hwm = json_object_get(r, "hwm");

	return cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM inc WHERE NOT done "
		"AND ($1::bigint IS NULL OR id >= $1) AND ($2::bigint IS NULL OR id < $2) "
		"AND ($3::bigint IS NULL OR id <= $3)",
		"s s s", json_string_value(json_array_get(lo, 0)),
		json_string_value(json_array_get(hi, 0)),
		json_string_value(json_array_get(hwm, 0)));
}

/* @p count ranges from cb_partition_key_ranges over inc WHERE NOT done. */
static json_t *inc_ranges(size_t count, unsigned int version, int unbounded)
{
	cb_key_range_options o = CB_KEY_RANGE_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	json_t *ranges = json_array();

	o.version = version;
	o.table = "inc";
	o.key_columns = inc_key;
	o.where = "NOT done";
	o.unbounded = unbounded; /* not read for version 1 */
	CBT_PASS(cb_partition_key_ranges(ranges, conn, &o, count, &err), &err);
	return ranges;
}

/* @p want ranges, contiguous, none empty, the last closed at @p hwm. */
static void check_closed_ranges(json_t *ranges, size_t want, long long total, long long hwm)
{
	const json_t *last;
	long long sum = 0;
	char mark[24];

	CBT_EQ_LL(json_array_size(ranges), want);
	if (json_array_size(ranges) != want)
		return;
	CU_ASSERT_TRUE(json_is_null(json_object_get(json_array_get(ranges, 0), "lo")));
	last = json_array_get(ranges, want - 1);
	CU_ASSERT_TRUE(json_is_null(json_object_get(last, "hi")));
	snprintf(mark, sizeof(mark), "%lld", hwm);
	CBT_EQ_STR(json_string_value(json_array_get(json_object_get(last, "hwm"), 0)), mark);
	for (size_t i = 0; i < want; i++) {
		const json_t *r = json_array_get(ranges, i);
		long long n = rows_in_range(r);

		if (i + 1 < want) {
			CU_ASSERT_PTR_NULL(json_object_get(r, "hwm"));
			CU_ASSERT_TRUE(
				json_equal(json_object_get(r, "hi"),
					   json_object_get(json_array_get(ranges, i + 1), "lo")));
		}
		if (n < 1)
			CBT_FAILF("range %zu of %zu is empty", i, want);
		sum += n;
	}
	CBT_EQ_LL(sum, total);
}

/*
 * (3) 10 new rows above 200,000 processed ones (a table whose statistics
 * say it is large): 4 partitions are 4 non-empty ranges, and the last one
 * ends at the high-water mark, so rows that arrive later are in none.
 */
static void test_key_ranges_split_a_small_increment_and_close_at_the_mark(void)
{
	json_t *ranges;

	cbt_exec(conn, "SET client_min_messages = warning; DROP TABLE IF EXISTS inc; "
		       "CREATE TABLE inc (id bigint PRIMARY KEY, done boolean NOT NULL); "
		       "INSERT INTO inc SELECT g, true FROM generate_series(1, 200000) g; "
		       "ANALYZE inc; "
		       "INSERT INTO inc SELECT g, false FROM generate_series(200001, 200010) g");
	ranges = inc_ranges(4, CB_KEY_RANGE_OPTIONS_VERSION, 0);
	check_closed_ranges(ranges, 4, 10, 200010);
	/* rows that arrive later are in no range */
	cbt_exec(conn, "INSERT INTO inc SELECT g, false FROM generate_series(200011, 200020) g");
	{
		long long sum = 0;

		for (size_t i = 0; i < json_array_size(ranges); i++)
			sum += rows_in_range(json_array_get(ranges, i));
		CBT_EQ_LL(sum, 10);
	}
	json_decref(ranges);

	/* options of version 1 are bounded too; any small count splits exactly */
	cbt_exec(conn, "INSERT INTO inc SELECT g, true FROM generate_series(200021, 200030) g");
	for (long long n = 20; n <= 27; n++) {
		char sql[160];

		snprintf(sql, sizeof(sql),
			 "UPDATE inc SET done = (id > 200000 + %lld) WHERE id > 200000", n);
		cbt_exec(conn, sql);
		ranges = inc_ranges(4, 1, 1);
		check_closed_ranges(ranges, 4, n, 200000 + n);
		json_decref(ranges);
	}
	/* fewer rows than partitions: one range each */
	cbt_exec(conn, "UPDATE inc SET done = (id > 200003) WHERE id > 200000");
	ranges = inc_ranges(4, CB_KEY_RANGE_OPTIONS_VERSION, 0);
	check_closed_ranges(ranges, 3, 3, 200003);
	json_decref(ranges);

	/* the opt-out: the last range is open-ended, as before */
	ranges = inc_ranges(2, CB_KEY_RANGE_OPTIONS_VERSION, 1);
	CBT_EQ_LL(json_array_size(ranges), 2);
	CU_ASSERT_PTR_NULL(json_object_get(json_array_get(ranges, 1), "hwm"));
	CU_ASSERT_TRUE(json_is_null(json_object_get(json_array_get(ranges, 1), "hi")));
	json_decref(ranges);

	/* nothing matches: one range of nothing */
	cbt_exec(conn, "UPDATE inc SET done = true");
	ranges = inc_ranges(4, CB_KEY_RANGE_OPTIONS_VERSION, 0);
	CBT_EQ_LL(json_array_size(ranges), 1);
	CU_ASSERT_TRUE(json_is_null(json_object_get(json_array_get(ranges, 0), "hwm")));
	CU_ASSERT_PTR_NOT_NULL(json_object_get(json_array_get(ranges, 0), "hwm"));
	json_decref(ranges);
}

/*
 * (3, end to end) The partitioned ledger: rows that arrive while its
 * partitions run, and after its manager was killed, are left to the next
 * run; the restart reruns the unfinished partitions within the bound.
 */
static void test_partitioned_run_and_its_restart_keep_the_bound(void)
{
	long long written;
	pid_t pid;

	reset("4000");
	pid = SPAWN("parted", "run", "ledger_partitioned", "-partition.count:long=4",
		    "-partition.threads:long=2", "-chunk.size:long=20", "-sleepMs:long=20",
		    "--lease", "2");
	if (!cbt_wait_until(conn, 30000, "SELECT (count(*) >= 200)::int FROM ledger"))
		CBT_FAILF("the run never posted 200 accounts");
	arrive(100); /* ids 4001..4100, during the run */
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	cbt_wait_sessions_gone(conn);
	written = ledger_rows();
	if (written >= 4000)
		CBT_FAILF("the run finished before the kill; the test proves nothing");
	arrive(200); /* ids 4101..4300, after the kill */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution_context c "
				     "JOIN batch_step_execution s USING (step_execution_id) "
				     "WHERE s.partition_index = 3 "
				     "AND c.serialized_context->'partition'->'hwm'->>0 = '4000'"),
		  1);
	cbt_sleep_ms(2500); /* the dead manager's lease runs out */
	CBT_EQ_LL(EX("run", "ledger_partitioned", "-partition.threads:long=2"), 0);
	CBT_CONTAINS(out, "(restart)");
	assert_posted_upto(4000, 4300);

	CBT_EQ_LL(EX("run", "ledger_partitioned", "--next", "-partition.threads:long=2"), 0);
	assert_posted_upto(4300, 4300);
}

static const CU_TestInfo tests[] = {
	{ "rows arriving during a run are the next run's",
	  test_rows_arriving_during_a_run_are_the_next_run_s },
	{ "a killed run's restart keeps the original bound",
	  test_a_killed_run_s_restart_keeps_the_original_bound },
	{ "key ranges split a small increment and close at the mark",
	  test_key_ranges_split_a_small_increment_and_close_at_the_mark },
	{ "partitioned run and its restart keep the bound",
	  test_partitioned_run_and_its_restart_keep_the_bound },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("bounded", init, clean, tests);
}
