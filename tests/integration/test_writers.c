/*
 * Idempotent writers and the settlement example: a deliberate rerun gives
 * the same result, and what the writers absorbed is counted in the step's
 * duplicate_target_write_count, in the chunk's own transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[65536], errout[16384];

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "writers", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

static int cli(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
	       const char *a6)
{
	const char *argv[10] = { cbt_examples_bin(), "--db", db, a1, a2, a3, a4, a5, a6, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* The settlement of @p day in @p zone as SQL computes it, compared row by row
 * with the job's. */
static long long settlement_mismatches_in(const char *day, const char *zone)
{
	const char *p[2] = { zone, day };
	PGresult *res = PQexecParams(
		conn,
		"SELECT count(*) FROM (SELECT seller_id, sum(amount) AS amount, "
		" count(*) AS n FROM orders WHERE "
		" ordered_at >= $2::date::timestamp AT TIME ZONE $1 AND "
		" ordered_at < ($2::date + 1)::timestamp AT TIME ZONE $1 GROUP BY seller_id) o "
		" FULL JOIN (SELECT * FROM settlement_daily WHERE settlement_date = $2::date "
		"  AND time_zone = $1) s "
		" USING (seller_id) WHERE s.amount IS DISTINCT FROM o.amount "
		" OR s.order_count IS DISTINCT FROM o.n",
		2, NULL, p, NULL, NULL, 0);
	long long n = -1;

	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		n = atoll(PQgetvalue(res, 0, 0));
	else
		CU_FAIL(PQerrorMessage(conn));
	PQclear(res);
	return n;
}

static long long settlement_mismatches(void)
{
	return settlement_mismatches_in("2026-06-30", "UTC");
}

static void test_settlement_rerun_with_next_gives_the_same_result(void)
{
	CBT_EQ_LL(cli("example-setup", "settlement", "--rows", "20000", "--reset", NULL), 0);
	CBT_EQ_LL(cli("run", "settlement", "targetDate:date=2026-06-30", NULL, NULL, NULL), 0);
	CBT_EQ_LL(settlement_mismatches(), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM settlement_daily"), 200);
	/* The same day again is refused; a deliberate rerun doubles nothing. */
	CBT_EQ_LL(cli("run", "settlement", "targetDate:date=2026-06-30", NULL, NULL, NULL), 3);
	CBT_EQ_LL(cli("run", "settlement", "targetDate:date=2026-06-30", "--next", NULL, NULL), 0);
	CBT_EQ_LL(settlement_mismatches(), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM settlement_daily"), 200);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT duplicate_target_write_count FROM "
				     "batch_step_execution WHERE step_name = 'settle' "
				     "ORDER BY step_execution_id DESC LIMIT 1"),
		  200);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock "
				     "WHERE lock_name = 'settlement:2026-06-30'"),
		  1);
	/* The report step left both totals in the job context. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution_context "
				     "WHERE serialized_context->>'settled_total' = "
				     "serialized_context->>'orders_total' "
				     "AND (serialized_context->>'sellers')::int = 200"),
		  2);
	/* A missing parameter is refused before anything is written. */
	CBT_EQ_LL(cli("run", "settlement", NULL, NULL, NULL, NULL), 2);
	CBT_CONTAINS(errout, "requires parameter targetDate:date");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance "
				     "WHERE job_name = 'settlement'"),
		  2);
}

/* ---- insert-if-absent and conditional transitions through the C API ------- */

static const char *const ev_cols[] = { "event_id", "payload" };
static const char *const ev_key[] = { "event_id" };
static const char *const item_key[] = { "id" };

static int build_events(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options w = CB_PG_UPSERT_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.table = "inbox";
	r.columns = ev_cols;
	r.ncolumns = 2;
	r.key_columns = ev_key;
	r.nkeys = 1;
	rc = cb_pg_keyset_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	w.table = "events";
	w.columns = ev_cols;
	w.ncolumns = 2;
	w.key_columns = ev_key;
	w.nkeys = 1;
	rc = cb_pg_insert_if_absent_writer_new(&parts->writers[0], &w, err);
	parts->nwriters = rc == 0;
	return rc;
}

static int build_transitions(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			     cb_error *err)
{
	static const char *const cols[] = { "id" };
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_status_options w = CB_PG_STATUS_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.table = "work";
	r.columns = cols;
	r.ncolumns = 1;
	r.key_columns = item_key;
	r.nkeys = 1;
	rc = cb_pg_keyset_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	w.table = "work";
	w.key_columns = item_key;
	w.nkeys = 1;
	w.set_column = "status";
	w.set_value = "DONE";
	w.expect_column = "status";
	w.expect_value = "READY";
	w.count_unchanged = 1;
	/* This reader reads every row, DONE ones too: not a strict transition. */
	w.on_conflict = CB_TRANSITION_LENIENT;
	rc = cb_pg_status_writer_new(&parts->writers[0], &w, err);
	parts->nwriters = rc == 0;
	return rc;
}

static cb_job *one_step_job(const char *name, int (*build)(void *, const cb_step_context *,
							   cb_chunk_parts *, cb_error *))
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, name, &err), &err);
	s.name = "only";
	s.build = build;
	s.chunk_size = 7;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	return job;
}

/* The day is the timeZone parameter's (default UTC), whatever the launching
 * session's TimeZone; an unknown zone is refused before anything is written. */
static void test_settlement_day_follows_its_time_zone_not_the_session(void)
{
	CBT_EQ_LL(cli("example-setup", "settlement", "--rows", "20000", "--date", "2026-07-15"), 0);
	/* A client in Tokyo settles the UTC day: the default is explicit. */
	setenv("PGTZ", "Asia/Tokyo", 1);
	CBT_EQ_LL(cli("run", "settlement", "targetDate:date=2026-07-15", NULL, NULL, NULL), 0);
	CBT_EQ_LL(settlement_mismatches_in("2026-07-15", "UTC"), 0);
	/* The Tokyo day, asked for by a client in UTC, is another settlement. */
	setenv("PGTZ", "UTC", 1);
	CBT_EQ_LL(cli("run", "settlement", "targetDate:date=2026-07-15", "timeZone=Asia/Tokyo",
		      NULL, NULL),
		  0);
	unsetenv("PGTZ");
	CBT_EQ_LL(settlement_mismatches_in("2026-07-15", "Asia/Tokyo"), 0);
	CBT_EQ_LL(settlement_mismatches_in("2026-07-15", "UTC"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM settlement_daily "
				     "WHERE settlement_date = '2026-07-15'"),
		  400);
	/* The two days really differ (the data spans three days). */
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM settlement_daily u JOIN "
				     "settlement_daily t USING (settlement_date, seller_id) "
				     "WHERE u.time_zone = 'UTC' AND t.time_zone = 'Asia/Tokyo' "
				     "AND u.amount <> t.amount") > 0);
	CBT_EQ_LL(cli("run", "settlement", "targetDate:date=2026-07-15", "timeZone=Mars/Olympus",
		      NULL, NULL),
		  2);
	CBT_CONTAINS(errout, "timeZone");
	CBT_CONTAINS(errout, "Mars/Olympus");
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_job_execution_params WHERE "
			       "parameter_name = 'targetDate' AND parameter_value = '2026-07-15'"),
		  2);
}

static void test_insert_if_absent_keeps_first_writes_and_counts_conflicts(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job("events", build_events);
	cb_job_result r;

	cbt_exec(conn, "CREATE TABLE inbox (event_id bigint PRIMARY KEY, payload text NOT NULL); "
		       "CREATE TABLE events (event_id bigint PRIMARY KEY, payload text NOT NULL); "
		       "INSERT INTO inbox SELECT g, 'new ' || g FROM generate_series(1, 50) g; "
		       "INSERT INTO events SELECT g, 'first ' || g FROM generate_series(10, 19) g");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM events"), 50);
	/* The ten that were there keep their first payload: nothing overwritten. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM events WHERE payload LIKE 'first %'"),
		  10);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT duplicate_target_write_count FROM "
				     "batch_step_execution s JOIN batch_job_execution e USING "
				     "(job_execution_id) JOIN batch_job_instance i USING "
				     "(job_instance_id) WHERE i.job_name = 'events'"),
		  10);
	cb_job_free(job);
}

static void test_conditional_transition_counts_rows_that_did_not_move(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job("transitions", build_transitions);
	cb_job_result r;

	cbt_exec(conn,
		 "CREATE TABLE work (id bigint PRIMARY KEY, status text NOT NULL); "
		 "INSERT INTO work SELECT g, CASE WHEN g % 4 = 0 THEN 'DONE' "
		 " WHEN g % 4 = 1 THEN 'FAILED' ELSE 'READY' END FROM generate_series(1, 40) g");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	/* READY rows moved; DONE stayed DONE; FAILED was not touched. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM work WHERE status = 'DONE'"), 30);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM work WHERE status = 'FAILED'"), 10);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT duplicate_target_write_count FROM "
				     "batch_step_execution s JOIN batch_job_execution e USING "
				     "(job_execution_id) JOIN batch_job_instance i USING "
				     "(job_instance_id) WHERE i.job_name = 'transitions'"),
		  20);
	cb_job_free(job);
}

/* ---- the status writer marks filtered items too ------------------------- */

static const char *const src_cols[] = { "id", "amount" };

/* Negative amounts are filtered out: never written to the target. */
static int drop_negative(void *state, cb_chunk *chunk, void *item, void **res, cb_error *err)
{
	const char *amount = cb_row_get(item, 1);

	(void)state, (void)chunk, (void)err;
	*res = amount && amount[0] == '-' ? NULL : item;
	return 0;
}

static int build_filtering(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			   cb_error *err)
{
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options u = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options st = CB_PG_STATUS_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.table = "src";
	r.columns = src_cols;
	r.ncolumns = 2;
	r.key_columns = item_key;
	r.nkeys = 1;
	r.where = "state = 'READY'";
	rc = cb_pg_keyset_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	parts->processor.version = CB_PROCESSOR_VERSION;
	parts->processor.process = drop_negative;
	u.table = "dst";
	u.columns = src_cols;
	u.ncolumns = 2;
	u.key_columns = item_key;
	u.nkeys = 1;
	rc = cb_pg_upsert_writer_new(&parts->writers[0], &u, err);
	if (rc < 0)
		return rc;
	parts->nwriters = 1;
	st.table = "src";
	st.key_columns = item_key;
	st.nkeys = 1;
	st.set_column = "state";
	st.set_value = "DONE";
	st.mark_filtered = 1;
	st.filtered_value = "FILTERED";
	rc = cb_pg_status_writer_new(&parts->writers[1], &st, err);
	parts->nwriters += rc == 0;
	return rc;
}

static void test_status_writer_marks_filtered_items(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job("filtering", build_filtering);
	cb_launch_options opts = CB_LAUNCH_OPTIONS_INIT;
	cb_job_result r;

	/* 50 rows, every third negative (16 filtered, in chunks of 7 that hold
	 * both kinds), then a chunk of 7 filtered rows only. */
	cbt_exec(conn,
		 "CREATE TABLE src (id bigint PRIMARY KEY, amount bigint NOT NULL, "
		 " state text NOT NULL DEFAULT 'READY'); "
		 "CREATE TABLE dst (id bigint PRIMARY KEY, amount bigint NOT NULL); "
		 "INSERT INTO src (id, amount) SELECT g, CASE WHEN g % 3 = 0 THEN -g "
		 " ELSE g END FROM generate_series(1, 50) g; "
		 /* a chunk of filtered rows only: ids 101..107 */
		 "INSERT INTO src (id, amount) SELECT g, -1 FROM generate_series(101, 107) g");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM dst"), 34);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src WHERE state = 'DONE'"), 34);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src WHERE state = 'FILTERED'"), 23);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src s JOIN dst USING (id) "
				     "WHERE s.state <> 'DONE'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT filter_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'filtering'"),
		  23);
	/* a deliberate rerun reads nothing: the filtered rows are marked too */
	opts.next = 1;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, &opts, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'filtering' ORDER BY step_execution_id DESC "
				     "LIMIT 1"),
		  0);
	cb_job_free(job);
}

/* A write failure skipped item by item (a scan): filtered items are still
 * marked once, in the scan's transaction; the skipped row stays unmarked. */
static void test_status_writer_marks_filtered_items_in_a_scan(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;
	cb_job_result r;

	CBT_PASS_FATAL(cb_job_new(&job, "filtering_scan", &err), &err);
	s.name = "only";
	s.build = build_filtering;
	s.chunk_size = 7;
	s.classify = cb_classify_skip_invalid;
	s.skip_limit = 5;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	cbt_exec(conn, "DROP TABLE IF EXISTS src, dst; "
		       "CREATE TABLE src (id bigint PRIMARY KEY, amount bigint NOT NULL, "
		       " state text NOT NULL DEFAULT 'READY'); "
		       "CREATE TABLE dst (id bigint PRIMARY KEY, amount bigint NOT NULL "
		       " CHECK (amount <> 13)); "
		       "INSERT INTO src (id, amount) SELECT g, CASE WHEN g % 3 = 0 THEN -g "
		       " ELSE g END FROM generate_series(1, 50) g");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM dst"), 33);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src WHERE state = 'DONE'"), 33);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src WHERE state = 'FILTERED'"), 16);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src WHERE state = 'READY'"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT write_skip_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) WHERE "
				     "i.job_name = 'filtering_scan'"),
		  1);
	cb_job_free(job);
}

static int build_copy(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	static const char *const cols[] = { "id", "note" };
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_copy_options w = CB_PG_COPY_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.table = "notes";
	r.columns = cols;
	r.ncolumns = 2;
	r.key_columns = item_key;
	r.nkeys = 1;
	rc = cb_pg_keyset_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	w.table = "notes_log";
	w.columns = cols;
	w.ncolumns = 2;
	rc = cb_pg_copy_writer_new(&parts->writers[0], &w, err);
	parts->nwriters = rc == 0;
	return rc;
}

static void test_copy_writer_appends_values_exactly(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job("copying", build_copy);
	cb_job_result r;

	/* Tabs, newlines, backslashes, \N look-alikes, NULLs and UTF-8 must arrive as sent. */
	cbt_exec(conn, "CREATE TABLE notes (id bigint PRIMARY KEY, note text); "
		       "CREATE TABLE notes_log (id bigint, note text); "
		       "INSERT INTO notes SELECT g, CASE g % 6 WHEN 0 THEN NULL "
		       " WHEN 1 THEN E'tab\\there' WHEN 2 THEN E'line\\nbreak\\r' "
		       " WHEN 3 THEN E'back\\\\slash \\\\N' WHEN 4 THEN 'caf\u00e9 \u2603' "
		       " ELSE '' END FROM generate_series(1, 60) g");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM notes_log"), 60);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM notes n JOIN notes_log l USING (id) "
				     "WHERE n.note IS NOT DISTINCT FROM l.note"),
		  60);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM notes_log WHERE note IS NULL"), 10);
	cb_job_free(job);
}

static int poison_at = 57;

static int refuse_poison(void *state, cb_chunk *chunk, void *item, void **result, cb_error *err)
{
	const cb_row *r = item;

	(void)state, (void)chunk;
	if (atoll(cb_row_get(r, 0)) == poison_at)
		return cb_error_set(err, CB_EINVAL, "row %d refused", poison_at);
	*result = item;
	return 0;
}

static int build_cursor(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	static const char *const cols[] = { "id", "note" };
	static const char *const qp[] = { "90" };
	cb_pg_cursor_options r = CB_PG_CURSOR_OPTIONS_INIT;
	cb_pg_copy_options w = CB_PG_COPY_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.query = "SELECT id, note FROM cursor_src WHERE id <= $1::int ORDER BY id";
	r.query_params = qp;
	r.nquery_params = 1;
	r.fetch_size = 4; /* several fetches per chunk */
	rc = cb_pg_cursor_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	parts->processor =
		(cb_processor){ .version = CB_PROCESSOR_VERSION, .process = refuse_poison };
	w.table = "cursor_out";
	w.columns = cols;
	w.ncolumns = 2;
	rc = cb_pg_copy_writer_new(&parts->writers[0], &w, err);
	parts->nwriters = rc == 0;
	return rc;
}

static void test_cursor_reader_streams_once_and_restarts_after_committed_rows(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job("cursor", build_cursor);
	cb_job_result r;

	cbt_exec(conn, "CREATE TABLE cursor_out (id bigint, note text); "
		       "CREATE TABLE cursor_src AS SELECT g AS id, 'n' || g AS note "
		       "FROM generate_series(1, 100) g");
	poison_at = 57;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "row 57 refused");
	/* Chunks of 7: 1..56 committed, the chunk 57..63 rolled back. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM cursor_out"), 56);
	poison_at = -1;
	CBT_PASS(cb_job_restart(&r, conn, job, r.job_execution_id, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM cursor_out"), 90);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT id) FROM cursor_out"), 90);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT read_count FROM batch_step_execution s JOIN "
			       "batch_job_execution e USING (job_execution_id) JOIN "
			       "batch_job_instance i USING (job_instance_id) WHERE "
			       "i.job_name = 'cursor' ORDER BY step_execution_id DESC LIMIT 1"),
		  34);
	cb_job_free(job);
}

/* ---- accumulating upserts and strict transitions (issue 18) -------------- */

/*
 * Invoices added into per-customer totals: an accumulating upsert (options
 * version 2) and a strict status transition of the invoices (options
 * version 3) in the same chunk transaction. The processor plays "another
 * run": when it sees invoice 1, it marks rows of the chunk processed on a
 * connection of its own (autocommit), between this chunk's read and its write.
 */
static struct {
	PGconn *other;
	int takes;            /* times the other run still takes rows */
	const char *take_sql; /* what it runs */
	unsigned int version; /* of the status options */
	int on_conflict;
	unsigned int max_rereads;
	int two_keys; /* the transition by (customer, id) */
} acc;

static const char *const tot_cols[] = {
	"customer", "total", "seen", "first_at", "last_at", "note"
};
static const cb_upsert_mode tot_modes[] = { CB_UPSERT_REPLACE, CB_UPSERT_ADD, CB_UPSERT_COUNT,
					    CB_UPSERT_MIN,     CB_UPSERT_MAX, CB_UPSERT_REPLACE };
static const char *const tot_key[] = { "customer" };

static int bind_invoice(void *ctx, const cb_step_context *sc, const void *item, cb_values *vals,
			cb_error *err)
{
	const cb_row *r = item;

	(void)ctx, (void)sc, (void)err;
	/* row: id, customer, amount, at, note */
	cb_values_set(vals, 0, cb_row_get(r, 1), cb_row_len(r, 1));
	cb_values_set(vals, 1, cb_row_get(r, 2), cb_row_len(r, 2));
	cb_values_set(vals, 2, NULL, 0); /* COUNT: ignored */
	cb_values_set(vals, 3, cb_row_get(r, 3), cb_row_len(r, 3));
	cb_values_set(vals, 4, cb_row_get(r, 3), cb_row_len(r, 3));
	cb_values_set(vals, 5, cb_row_get(r, 4), cb_row_len(r, 4));
	return 0;
}

static int other_run_takes(void *state, cb_chunk *chunk, void *item, void **res, cb_error *err)
{
	(void)state, (void)chunk, (void)err;
	if (acc.takes > 0 && strcmp(cb_row_get(item, 0), "1") == 0) {
		acc.takes--;
		cbt_exec(acc.other, acc.take_sql);
	}
	*res = item;
	return 0;
}

static int build_accumulate(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			    cb_error *err)
{
	static const char *const cols[] = { "id", "customer", "amount", "at", "note" };
	static const char *const two_keys[] = { "customer", "id" };
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options u = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options st = CB_PG_STATUS_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.table = "inv";
	r.columns = cols;
	r.ncolumns = 5;
	r.key_columns = item_key;
	r.nkeys = 1;
	r.where = "NOT processed";
	rc = cb_pg_keyset_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	parts->processor.version = CB_PROCESSOR_VERSION;
	parts->processor.process = other_run_takes;
	u.table = "tot";
	u.columns = tot_cols;
	u.ncolumns = 6;
	u.key_columns = tot_key;
	u.nkeys = 1;
	u.modes = tot_modes;
	u.bind = bind_invoice;
	rc = cb_pg_upsert_writer_new(&parts->writers[0], &u, err);
	if (rc < 0)
		return rc;
	parts->nwriters = 1;
	st.version = acc.version ? acc.version : CB_PG_STATUS_OPTIONS_VERSION;
	st.table = "inv";
	st.key_columns = acc.two_keys ? two_keys : item_key;
	st.nkeys = acc.two_keys ? 2 : 1;
	st.set_column = "processed";
	st.set_value = "true";
	st.on_conflict = acc.on_conflict;
	st.max_rereads = acc.max_rereads;
	rc = cb_pg_status_writer_new(&parts->writers[1], &st, err);
	parts->nwriters += rc == 0;
	return rc;
}

/* 30 invoices of 3 customers (chunks of 7 hold each customer twice or
 * more); customer c1 has a total already. */
static void accumulate_setup(const char *name, cb_job **job)
{
	memset(&acc, 0, sizeof(acc));
	acc.other = cbt_connect(db);
	*job = one_step_job(name, build_accumulate);
	cbt_exec(conn,
		 "DROP TABLE IF EXISTS inv, tot; "
		 "CREATE TABLE inv (id bigint PRIMARY KEY, customer text NOT NULL, "
		 " amount numeric(12,2) NOT NULL, at timestamptz NOT NULL, note text, "
		 " processed boolean NOT NULL DEFAULT false); "
		 "CREATE TABLE tot (customer text PRIMARY KEY, total numeric(14,2) NOT NULL, "
		 " seen bigint NOT NULL, first_at timestamptz, last_at timestamptz, note text); "
		 "INSERT INTO inv (id, customer, amount, at, note) SELECT g, 'c' || (g % 3), "
		 " g * 10.25, '2026-01-01'::timestamptz + g * interval '1 minute', 'n' || g "
		 " FROM generate_series(1, 30) g; "
		 "INSERT INTO tot VALUES ('c1', 1000, 10, '2025-01-01', '2025-01-02', 'old')");
}

/* Customers whose totals differ from one SQL statement over the invoices
 * this job processed (all but @p taken, a list of ids "the other run" took). */
static long long total_mismatches(const char *taken)
{
	char sql[2048];

	snprintf(
		sql, sizeof(sql),
		"SELECT count(*) FROM (SELECT customer, sum(amount) s, count(*) n, min(at) f, "
		" max(at) l, 'n' || max(id) note FROM inv WHERE id NOT IN (%s) GROUP BY customer) e "
		"FULL JOIN tot t USING (customer) WHERE "
		" t.total IS DISTINCT FROM e.s + CASE customer WHEN 'c1' THEN 1000 ELSE 0 END "
		" OR t.seen IS DISTINCT FROM e.n + CASE customer WHEN 'c1' THEN 10 ELSE 0 END "
		" OR t.first_at IS DISTINCT FROM CASE customer WHEN 'c1' THEN "
		"  '2025-01-01'::timestamptz ELSE e.f END "
		" OR t.last_at IS DISTINCT FROM e.l OR t.note IS DISTINCT FROM e.note",
		taken);
	return cbt_query_ll(conn, sql);
}

static long long step_counter(const char *job, const char *column)
{
	char sql[512];

	snprintf(
		sql, sizeof(sql),
		"SELECT coalesce(sum(%s), -1) FROM batch_step_execution s JOIN batch_job_execution "
		"e USING (job_execution_id) JOIN batch_job_instance i USING (job_instance_id) "
		"WHERE i.job_name = '%s'",
		column, job);
	return cbt_query_ll(conn, sql);
}

/* Same-key items of a chunk are merged (summed, counted, min/max, last
 * wins), and an existing total is added to: no "cannot affect row a second
 * time". */
static void test_accumulating_upsert_merges_same_key_items(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	accumulate_setup("accumulate", &job);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(total_mismatches("0"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tot"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM inv WHERE NOT processed"), 0);
	CBT_EQ_LL(step_counter("accumulate", "transition_conflict_count"), 0);
	PQfinish(acc.other);
	cb_job_free(job);
}

/* Another run takes invoices 2 and 3 between the chunk's read and its
 * write: the chunk rolls back and is read again without them; the totals
 * count every invoice this run marked exactly once. */
static void test_strict_transition_conflict_reads_the_chunk_again(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	accumulate_setup("accumulate_reread", &job);
	acc.takes = 1;
	acc.take_sql = "UPDATE inv SET processed = true WHERE id IN (2, 3)";
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(total_mismatches("2, 3"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM inv WHERE NOT processed"), 0);
	CBT_EQ_LL(step_counter("accumulate_reread", "transition_conflict_count"), 1);
	CU_ASSERT(step_counter("accumulate_reread", "rollback_count") >= 1);
	/* ... and in the metrics, per job */
	CBT_EQ_LL(cli("metrics", NULL, NULL, NULL, NULL, NULL), 0);
	CBT_CONTAINS(out, "# TYPE cbatch_transition_conflict_total counter\n");
	CBT_CONTAINS(out, "cbatch_transition_conflict_total{batch_job=\"accumulate_reread\"} 1\n");
	PQfinish(acc.other);
	cb_job_free(job);
}

/* on_conflict = CB_TRANSITION_FAIL: the step fails naming the rows, nothing
 * of the chunk commits, and a restart goes on without them. */
static void test_strict_transition_conflict_fails_naming_the_rows(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	accumulate_setup("accumulate_fail", &job);
	acc.takes = 1;
	acc.take_sql = "UPDATE inv SET processed = true WHERE id IN (3, 2)";
	acc.on_conflict = CB_TRANSITION_FAIL;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "inv.processed");
	CBT_CONTAINS(r.exit_message, "2 of 7 source rows");
	CBT_CONTAINS(r.exit_message, "keys: 2, 3");
	/* the first chunk never committed: c1's total is the one from before */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM tot"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT seen FROM tot"), 10);
	CBT_EQ_LL(step_counter("accumulate_fail", "transition_conflict_count"), 1);
	/* restartable: the restart reads without the taken rows */
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CU_ASSERT(r.restarted);
	CBT_EQ_LL(total_mismatches("2, 3"), 0);
	PQfinish(acc.other);
	cb_job_free(job);
}

/* A conflict at every attempt: max_rereads re-reads, then the step fails
 * (no livelock), each conflict counted. */
static void test_strict_transition_rereads_are_bounded(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	accumulate_setup("accumulate_bounded", &job);
	acc.takes = 100;
	acc.take_sql = "UPDATE inv SET processed = true WHERE id = "
		       "(SELECT min(id) FROM inv WHERE NOT processed AND id > 1)";
	acc.max_rereads = 2;
	acc.two_keys = 1;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "too many re-reads");
	CBT_CONTAINS(r.exit_message, "1 of 7 source rows");
	CBT_CONTAINS(r.exit_message, "keys: (c1,4)"); /* the third attempt's */
	CBT_EQ_LL(step_counter("accumulate_bounded", "transition_conflict_count"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT seen FROM tot"), 10);
	PQfinish(acc.other);
	cb_job_free(job);
}

/* Status options version 2 keep their behaviour (no check): the same race
 * commits, the taken rows counted by this run as well. This is the double
 * count a strict transition prevents. */
static void test_status_options_version_2_stay_lenient(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	accumulate_setup("accumulate_v2", &job);
	acc.takes = 1;
	acc.take_sql = "UPDATE inv SET processed = true WHERE id IN (2, 3)";
	acc.version = 2;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(total_mismatches("0"), 0); /* 2 and 3 added here too */
	CBT_EQ_LL(step_counter("accumulate_v2", "transition_conflict_count"), 0);
	PQfinish(acc.other);
	cb_job_free(job);
}

/*
 * Same-key items merged by the key column's own equality (issue 25, item 6):
 * an accumulating upsert of kin (id, k, total) into ktot (k, total) keyed by
 * k, with the key types and collations each test sets up. ON CONFLICT
 * compares keys by the unique index's equality; the chunk's merge must find
 * equal the same keys, or a key reaches one row twice (21000).
 */
static int keyed_codes; /* also transition codes (code) by the items' k */
static int bind_code(void *ctx, const cb_step_context *sc, const void *item, cb_values *vals,
		     cb_error *err);

static int build_keyed(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	static const char *const cols[] = { "id", "k", "total" };
	static const char *const ucols[] = { "k", "total" };
	static const cb_upsert_mode modes[] = { CB_UPSERT_REPLACE, CB_UPSERT_ADD };
	static const char *const key[] = { "k" };
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options u = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options st = CB_PG_STATUS_OPTIONS_INIT;
	int rc;

	(void)user, (void)sc;
	r.table = "kin";
	r.columns = cols;
	r.ncolumns = 3;
	r.key_columns = item_key;
	r.nkeys = 1;
	r.where = "NOT processed";
	rc = cb_pg_keyset_reader_new(&parts->reader, &r, err);
	if (rc < 0)
		return rc;
	u.table = "ktot";
	u.columns = ucols;
	u.ncolumns = 2;
	u.key_columns = key;
	u.nkeys = 1;
	u.modes = modes;
	rc = cb_pg_upsert_writer_new(&parts->writers[0], &u, err);
	if (rc < 0)
		return rc;
	parts->nwriters = 1;
	st.table = "kin";
	st.key_columns = item_key;
	st.nkeys = 1;
	st.set_column = "processed";
	st.set_value = "true";
	rc = cb_pg_status_writer_new(&parts->writers[1], &st, err);
	parts->nwriters += rc == 0;
	if (rc == 0 && keyed_codes) {
		static const char *const code[] = { "code" };
		cb_pg_status_options c = CB_PG_STATUS_OPTIONS_INIT;

		c.table = "codes";
		c.key_columns = code;
		c.nkeys = 1;
		c.set_column = "done";
		c.set_value = "true";
		c.bind = bind_code;
		c.on_conflict = CB_TRANSITION_FAIL;
		rc = cb_pg_status_writer_new(&parts->writers[2], &c, err);
		parts->nwriters += rc == 0;
	}
	return rc;
}

/* The status writer on codes (code): the item's k. */
static int bind_code(void *ctx, const cb_step_context *sc, const void *item, cb_values *vals,
		     cb_error *err)
{
	(void)ctx, (void)sc, (void)err;
	return cb_values_set(vals, 0, cb_row_get(item, 1), cb_row_len(item, 1));
}

/* kin with key column type @p ktype, ktot with @p ttype (and its index). */
static void keyed_setup(const char *ktype, const char *ttype, const char *rows)
{
	char sql[2048];

	snprintf(sql, sizeof(sql),
		 "DROP TABLE IF EXISTS kin, ktot; "
		 "CREATE TABLE kin (id bigint PRIMARY KEY, k %s NOT NULL, total numeric NOT NULL, "
		 " processed boolean NOT NULL DEFAULT false); "
		 "CREATE TABLE ktot (k %s, total bigint NOT NULL); "
		 "INSERT INTO kin (id, k, total) VALUES %s",
		 ktype, ttype, rows);
	cbt_exec(conn, sql);
}

static int have_icu(void)
{
	return cbt_query_ll(conn, "SELECT count(*) FROM pg_collation WHERE collprovider = 'i'") > 0;
}

/* The numeric keys 1.0, 1.00 and 1 are one key: one row, their sum. */
static void keyed_numeric_case(const char *job_name)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job(job_name, build_keyed);
	cb_job_result r;
	char k[64];

	keyed_setup("numeric", "numeric PRIMARY KEY",
		    "(1, '1.0', 1), (2, '1.00', 2), (3, '1', 3), (4, '2.50', 4), (5, '2.5', 5)");
	cbt_exec(conn, "INSERT INTO ktot VALUES (2.5, 100)");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ktot"), 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT total FROM ktot WHERE k = 1"), 6);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT total FROM ktot WHERE k = 2.5"), 109);
	/* a new row keeps the chunk's last spelling of its key, as a replaced
	 * column keeps the last item's value */
	cbt_query_str(conn, "SELECT k::text FROM ktot WHERE k = 1", k, sizeof(k));
	CBT_EQ_STR(k, "1");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM kin WHERE NOT processed"), 0);
	cb_job_free(job);
}

/* 'abc', 'ABC' and 'Abc' under a case-insensitive (nondeterministic) ICU
 * collation are one key: the chunk completes with one row whose total is
 * their sum (it failed with 21000 "cannot affect row a second time", at
 * every restart). Without ICU, the numeric case stands in. */
static void test_accumulating_upsert_merges_keys_by_their_collation(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;
	char k[64];

	if (!have_icu()) {
		fprintf(stderr, "no ICU collations in the test cluster: numeric keys instead\n");
		keyed_numeric_case("keyed_collation");
		return;
	}
	cbt_exec(conn, "CREATE COLLATION IF NOT EXISTS ci (provider = icu, "
		       "locale = 'und-u-ks-level2', deterministic = false)");
	job = one_step_job("keyed_collation", build_keyed);
	keyed_setup("text", "text COLLATE ci PRIMARY KEY",
		    "(1, 'abc', 1), (2, 'ABC', 2), (3, 'Abc', 3), "
		    "(4, 'xyz', 4), (5, 'XYZ', 5), (6, 'other', 6)");
	cbt_exec(conn, "INSERT INTO ktot VALUES ('xYz', 100)");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ktot"), 3);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT total FROM ktot WHERE k = 'ABC'"), 6);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT total FROM ktot WHERE k = 'xyz'"), 109);
	/* the new row is spelt as the chunk's last item; the old one is left */
	cbt_query_str(conn, "SELECT k FROM ktot WHERE k = 'abc'", k, sizeof(k));
	CBT_EQ_STR(k, "Abc");
	cbt_query_str(conn, "SELECT k FROM ktot WHERE k = 'xyz'", k, sizeof(k));
	CBT_EQ_STR(k, "xYz");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM kin WHERE NOT processed"), 0);
	cb_job_free(job);
}

/* A strict transition keyed by a case-insensitive column counts the chunk's
 * distinct keys as its UPDATE finds them: 'abc' and 'ABC' are one row moved,
 * not a conflict (one of two keys "not in the expected state"). */
static void test_strict_transition_counts_keys_by_their_collation(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	if (!have_icu()) {
		fprintf(stderr, "no ICU collations in the test cluster: skipped\n");
		return;
	}
	cbt_exec(conn, "CREATE COLLATION IF NOT EXISTS ci (provider = icu, "
		       "locale = 'und-u-ks-level2', deterministic = false)");
	job = one_step_job("keyed_codes", build_keyed);
	keyed_setup("text", "text COLLATE ci PRIMARY KEY",
		    "(1, 'abc', 1), (2, 'ABC', 2), (3, 'xyz', 3)");
	cbt_exec(conn, "DROP TABLE IF EXISTS codes; CREATE TABLE codes (code text COLLATE ci "
		       "PRIMARY KEY, done boolean NOT NULL DEFAULT false); "
		       "INSERT INTO codes (code) VALUES ('Abc'), ('XYZ'), ('other')");
	keyed_codes = 1;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	keyed_codes = 0;
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM codes WHERE done"), 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT total FROM ktot WHERE k = 'abc'"), 3);
	cb_job_free(job);
}

static void test_accumulating_upsert_merges_numeric_keys_by_value(void)
{
	keyed_numeric_case("keyed_numeric");
}

/* A unique index whose collation is not the column's is the arbiter, and
 * the merge follows it; two arbiters that compare the key differently are
 * refused when the writer opens, naming the table and column, before
 * anything is written. */
static void test_accumulating_upsert_refuses_arbiters_that_disagree(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	if (!have_icu()) {
		fprintf(stderr, "no ICU collations in the test cluster: skipped\n");
		return;
	}
	cbt_exec(conn, "CREATE COLLATION IF NOT EXISTS ci (provider = icu, "
		       "locale = 'und-u-ks-level2', deterministic = false)");
	job = one_step_job("keyed_index_collation", build_keyed);
	keyed_setup("text", "text", "(1, 'abc', 1), (2, 'ABC', 2), (3, 'Abc', 3)");
	cbt_exec(conn, "CREATE UNIQUE INDEX ktot_k_ci ON ktot (k COLLATE ci)");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ktot"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT total FROM ktot"), 6);
	cb_job_free(job);

	job = one_step_job("keyed_arbiters_disagree", build_keyed);
	keyed_setup("text", "text", "(1, 'abc', 1), (2, 'ABC', 2)");
	cbt_exec(conn, "CREATE UNIQUE INDEX ktot_k_ci ON ktot (k COLLATE ci); "
		       "CREATE UNIQUE INDEX ktot_k_c ON ktot (k COLLATE \"C\")");
	/* Refused by the preflight: invalid input, no execution written. */
	CBT_FAILS_WITH(CB_EINVAL, cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_CONTAINS(err.message, "\"ktot\"");
	CBT_CONTAINS(err.message, "key column \"k\"");
	CBT_CONTAINS(err.message, "different collations");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance "
				     "WHERE job_name = 'keyed_arbiters_disagree'"),
		  0);
	cb_error_clear(&err);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ktot"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM kin WHERE processed"), 0);
	cb_job_free(job);
}

/* A failed chunk statement names the table, the key and the column, never
 * the statement's internal (cb_...) name: an accumulated bigint that
 * overflows, and a value its column's type refuses. */
static void test_writer_errors_name_table_column_and_key(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = one_step_job("keyed_overflow", build_keyed);
	cb_job_result r;

	keyed_setup("text", "text PRIMARY KEY", "(1, 'big', 100)");
	cbt_exec(conn, "INSERT INTO ktot VALUES ('big', 9223372036854775800)");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "\"ktot\"");
	CBT_CONTAINS(r.exit_message, "key (k)");
	CBT_CONTAINS(r.exit_message, "column \"total\"");
	CBT_CONTAINS(r.exit_message, "bigint out of range");
	CBT_CONTAINS(r.exit_message, "22003");
	if (strstr(r.exit_message, "cb_"))
		CBT_FAILF("the message names an internal statement: %s", r.exit_message);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM kin WHERE processed"), 0);
	cb_job_free(job);

	job = one_step_job("keyed_out_of_range", build_keyed);
	keyed_setup("text", "text PRIMARY KEY", "(1, 'huge', 99999999999999999999)");
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "\"ktot\"");
	CBT_CONTAINS(r.exit_message, "column \"total\"");
	CBT_CONTAINS(r.exit_message, "out of range for type bigint");
	if (strstr(r.exit_message, "cb_"))
		CBT_FAILF("the message names an internal statement: %s", r.exit_message);
	cb_job_free(job);
}

static const CU_TestInfo tests[] = {
	{ "cursor reader streams once and restarts after committed rows",
	  test_cursor_reader_streams_once_and_restarts_after_committed_rows },
	{ "COPY writer appends values exactly", test_copy_writer_appends_values_exactly },
	{ "settlement rerun with --next gives the same result",
	  test_settlement_rerun_with_next_gives_the_same_result },
	{ "settlement day follows its time zone, not the session's",
	  test_settlement_day_follows_its_time_zone_not_the_session },
	{ "insert-if-absent keeps first writes and counts conflicts",
	  test_insert_if_absent_keeps_first_writes_and_counts_conflicts },
	{ "conditional transition counts rows that did not move",
	  test_conditional_transition_counts_rows_that_did_not_move },
	{ "status writer marks filtered items", test_status_writer_marks_filtered_items },
	{ "status writer marks filtered items in a scan",
	  test_status_writer_marks_filtered_items_in_a_scan },
	{ "accumulating upsert merges same-key items",
	  test_accumulating_upsert_merges_same_key_items },
	{ "strict transition conflict reads the chunk again",
	  test_strict_transition_conflict_reads_the_chunk_again },
	{ "strict transition conflict fails naming the rows",
	  test_strict_transition_conflict_fails_naming_the_rows },
	{ "strict transition re-reads are bounded", test_strict_transition_rereads_are_bounded },
	{ "status options version 2 stay lenient", test_status_options_version_2_stay_lenient },
	{ "accumulating upsert merges keys by their collation",
	  test_accumulating_upsert_merges_keys_by_their_collation },
	{ "accumulating upsert merges numeric keys by value",
	  test_accumulating_upsert_merges_numeric_keys_by_value },
	{ "accumulating upsert refuses arbiters that disagree",
	  test_accumulating_upsert_refuses_arbiters_that_disagree },
	{ "strict transition counts keys by their collation",
	  test_strict_transition_counts_keys_by_their_collation },
	{ "writer errors name table, column and key",
	  test_writer_errors_name_table_column_and_key },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("writers", init, clean, tests);
}
