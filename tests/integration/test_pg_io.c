/*
 * The built-in PostgreSQL reader and writers, driven directly as the chunk
 * step drives them: a real connection, a cb_tx, a hand-filled step context.
 */
#include "cbtest.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/readers.h"
#include "cbatch/writers.h"
#include "step_context.h"
#include "tx.h"

#define MAXCHUNK         64
#define MAXSEEN          512
#define DESC_MAX         96
#define JOB_EXECUTION_ID 4242

static char db[CBT_CONNINFO_MAX];

/* The repository's schema too: a strict status transition calls its
 * batch_transition_conflict (the writers run in the repository's database). */
static int init(void)
{
	PGconn *conn = NULL;
	int rc = cbt_repo_db(db, sizeof(db), "pg_io", &conn);

	if (conn)
		PQfinish(conn);
	return rc;
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

/* ---- a small chunk driver -------------------------------------------------- */

struct drv {
	PGconn *conn;
	cb_tx *tx;
	struct cb_step_context sc;
};

static void drv_init(struct drv *d, size_t chunk_size, int pipelined)
{
	cb_error err = CB_ERROR_INIT;

	memset(d, 0, sizeof(*d));
	d->conn = cbt_connect(db);
	CBT_PASS_FATAL(cb__tx_new(&d->tx, d->conn, pipelined, &err), &err);
	d->sc.job_name = "pg_io";
	d->sc.step_name = "step";
	d->sc.job_execution_id = JOB_EXECUTION_ID;
	d->sc.step_execution_id = 7;
	d->sc.params = NULL;
	d->sc.chunk_size = chunk_size;
	d->sc.conn = d->conn;
}

static void drv_done(struct drv *d)
{
	cb__tx_free(d->tx);
	PQfinish(d->conn);
}

/* The describe() text of every item read, in order. */
struct seen {
	size_t n;
	char v[MAXSEEN][DESC_MAX];
};

static struct seen seen_a, seen_b, seen_c;

/*
 * One chunk as the step engine runs it: BEGIN, read up to chunk_size items,
 * write them with each writer, let the reader update a fresh context object,
 * then COMMIT and make that object *ctx. With @p commit 0 the transaction is
 * rolled back after the update instead, and the reader told (as after a failed
 * COMMIT). Items' descriptions are appended to @p seen (may be NULL).
 * @return the number of items read (0 at the end), or -1 after a failure.
 */
static int run_chunk(struct drv *d, cb_reader *r, cb_writer *w, size_t nw, json_t **ctx, int commit,
		     struct seen *seen)
{
	cb_error err = CB_ERROR_INIT, ignored = CB_ERROR_INIT;
	void *items[MAXCHUNK];
	static char desc[MAXCHUNK][DESC_MAX];
	char again[DESC_MAX];
	size_t n = 0, i;
	json_t *o = NULL;
	int rc;

	if (d->sc.chunk_size > MAXCHUNK) {
		CBT_FAILF("chunk size %zu too large for the driver", d->sc.chunk_size);
		return -1;
	}
	rc = cb__tx_begin(d->tx, &err);
	CBT_PASS(rc, &err);
	if (rc < 0)
		goto fail;
	while (n < d->sc.chunk_size) {
		rc = r->read(r->state, d->tx, &items[n], &err);
		if (rc == CB_DONE)
			break;
		CBT_PASS(rc, &err);
		if (rc < 0)
			goto fail;
		r->describe(r->state, items[n], desc[n], DESC_MAX);
		n++;
	}
	/* every item of the chunk is still valid after the page fetches in it */
	for (i = 0; i < n; i++) {
		r->describe(r->state, items[i], again, sizeof(again));
		CBT_EQ_STR(again, desc[i]);
	}
	if (seen)
		for (i = 0; i < n && seen->n < MAXSEEN; i++)
			memcpy(seen->v[seen->n++], desc[i], DESC_MAX);
	if (n == 0) {
		cb__tx_rollback(d->tx, &ignored);
		return 0;
	}
	for (i = 0; i < nw; i++) {
		rc = w[i].write(w[i].state, d->tx, items, n, &err);
		CBT_PASS(rc, &err);
		if (rc < 0)
			goto fail;
	}
	o = json_object();
	rc = r->update(r->state, o, &err);
	CBT_PASS(rc, &err);
	if (rc < 0)
		goto fail;
	if (!commit) {
		json_decref(o);
		cb__tx_rollback(d->tx, &ignored);
		r->rollback(r->state);
		return (int)n;
	}
	rc = cb__tx_commit(d->tx, &err);
	CBT_PASS(rc, &err);
	if (rc < 0)
		goto fail;
	if (ctx) {
		json_decref(*ctx);
		*ctx = o;
	} else {
		json_decref(o);
	}
	return (int)n;
fail:
	json_decref(o);
	cb__tx_rollback(d->tx, &ignored);
	r->rollback(r->state);
	return -1;
}

/* Run chunks to the end of input. @return the items read, or -1. */
static long run_all(struct drv *d, cb_reader *r, cb_writer *w, size_t nw, json_t **ctx,
		    struct seen *seen)
{
	long total = 0;
	int n;

	while ((n = run_chunk(d, r, w, nw, ctx, 1, seen)) > 0)
		total += n;
	return n < 0 ? -1 : total;
}

static void reader_free(cb_reader *r)
{
	if (r->close)
		r->close(r->state);
	if (r->free)
		r->free(r->state);
	memset(r, 0, sizeof(*r));
}

static void writer_free(cb_writer *w)
{
	if (w->close)
		w->close(w->state);
	if (w->free)
		w->free(w->state);
	memset(w, 0, sizeof(*w));
}

/* ---- the sales table: ties in the leading sort column ------------------------ */

/* 100 rows; seller_id = (id * 7) % 10, so each seller has 10 interleaved ids. */
static void make_sales(PGconn *conn, int nrows)
{
	char sql[512];

	snprintf(sql, sizeof(sql),
		 "SET client_min_messages = warning; DROP TABLE IF EXISTS sales; "
		 "CREATE TABLE sales (id bigint PRIMARY KEY, seller_id int NOT NULL, "
		 "amount int, processed boolean NOT NULL DEFAULT false); "
		 "INSERT INTO sales SELECT g, (g * 7) %% 10, g * 100 "
		 "FROM generate_series(1, %d) g",
		 nrows);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(conn, sql), 0);
}

static const char *const sales_keys[] = { "seller_id", "id" };
static const char *const sales_cols[] = { "id", "amount" }; /* seller_id is appended */

static void sales_reader(cb_reader *r, size_t page_size, const char *where)
{
	cb_pg_keyset_options o = CB_PG_KEYSET_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;

	o.table = "sales";
	o.columns = sales_cols;
	o.ncolumns = 2;
	o.key_columns = sales_keys;
	o.nkeys = 2;
	o.where = where;
	o.page_size = page_size;
	CBT_PASS_FATAL(cb_pg_keyset_reader_new(r, &o, &err), &err);
}

static void open_reader(cb_reader *r, struct drv *d, const json_t *saved)
{
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(r->open(r->state, &d->sc, saved, &err), &err);
}

static void open_writer(cb_writer *w, struct drv *d)
{
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(w->open(w->state, &d->sc, NULL, &err), &err);
}

/* "seller_id=3, id=42" */
static void parse_sale(const char *desc, long long *seller, long long *id)
{
	*seller = *id = -1;
	if (sscanf(desc, "seller_id=%lld, id=%lld", seller, id) != 2)
		CBT_FAILF("unexpected description '%s'", desc);
}

/* seen holds strictly increasing (seller_id, id) pairs; mark ids in @p hit. */
static void check_order(const struct seen *s, size_t from, unsigned char *hit, int nrows)
{
	long long ps = -1, pi = -1, sel, id;
	size_t i;

	for (i = from; i < s->n; i++) {
		parse_sale(s->v[i], &sel, &id);
		if (sel < ps || (sel == ps && id <= pi))
			CBT_FAILF("item %zu '%s' is not after (%lld, %lld)", i, s->v[i], ps, pi);
		if (id < 1 || id > nrows) {
			CBT_FAILF("id %lld out of range", id);
			continue;
		}
		if (hit[id])
			CBT_FAILF("id %lld read twice", id);
		hit[id] = 1;
		CBT_EQ_LL(sel, (id * 7) % 10);
		ps = sel;
		pi = id;
	}
}

static void check_last_key(const json_t *ctx, const char *k1, const char *k2)
{
	const json_t *lk = json_object_get(ctx, "last_key");

	CU_ASSERT_FATAL(json_is_array(lk) && json_array_size(lk) == 2);
	CBT_EQ_STR(json_string_value(json_array_get(lk, 0)), k1);
	CBT_EQ_STR(json_string_value(json_array_get(lk, 1)), k2);
}

static void test_keyset_ties(void)
{
	/* page sizes below, at, and above the chunk size; both transaction modes */
	static const struct {
		int nrows;
		size_t page, chunk;
		int pipelined;
	} runs[] = {
		{ 100, 7, 10, 1 },  /* pages straddle chunks */
		{ 100, 0, 10, 1 },  /* page = chunk, exactly full last page */
		{ 100, 3, 10, 1 },  /* several pages per chunk */
		{ 100, 25, 10, 0 }, /* a page serves several chunks; plain mode */
		{ 98, 7, 7, 1 },    /* exactly full pages of 7 */
		{ 0, 7, 10, 1 },    /* empty input */
	};
	size_t k;

	for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct drv d;
		cb_reader r;
		json_t *ctx = NULL;
		unsigned char hit[101] = { 0 };
		char last_id[16];
		long total;
		int i, expect_last = 0;

		drv_init(&d, runs[k].chunk, runs[k].pipelined);
		make_sales(d.conn, runs[k].nrows);
		sales_reader(&r, runs[k].page, NULL);
		open_reader(&r, &d, NULL);
		seen_a.n = 0;
		total = run_all(&d, &r, NULL, 0, &ctx, &seen_a);
		CBT_EQ_LL(total, runs[k].nrows);
		CBT_EQ_LL(seen_a.n, runs[k].nrows);
		check_order(&seen_a, 0, hit, runs[k].nrows);
		for (i = 1; i <= runs[k].nrows; i++)
			if (!hit[i])
				CBT_FAILF("run %zu: id %d never read", k, i);
		/* the largest (seller_id, id) is seller 9's largest id */
		for (i = 1; i <= runs[k].nrows; i++)
			if ((i * 7) % 10 == 9)
				expect_last = i;
		if (runs[k].nrows > 0) {
			snprintf(last_id, sizeof(last_id), "%d", expect_last);
			check_last_key(ctx, "9", last_id);
		}
		/* after the end, reads keep saying CB_DONE */
		CBT_EQ_LL(run_chunk(&d, &r, NULL, 0, NULL, 1, NULL), 0);
		json_decref(ctx);
		reader_free(&r);
		drv_done(&d);
	}
}

static void test_restart_from_saved_key(void)
{
	struct drv d;
	cb_reader r;
	json_t *ctx = NULL, *saved;
	unsigned char hit[101] = { 0 };
	long long sel, id, lsel, lid;
	int i;

	drv_init(&d, 10, 1);
	make_sales(d.conn, 100);
	sales_reader(&r, 0, NULL);
	open_reader(&r, &d, NULL);
	seen_a.n = 0;
	for (i = 0; i < 3; i++)
		CBT_EQ_LL(run_chunk(&d, &r, NULL, 0, &ctx, 1, &seen_a), 10);
	reader_free(&r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);

	/* restart: through text, as the repository stores it */
	{
		char *text = json_dumps(ctx, JSON_COMPACT);
		json_error_t jerr;

		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		saved = json_loads(text, 0, &jerr);
		free(text);
		CU_ASSERT_PTR_NOT_NULL_FATAL(saved);
	}
	parse_sale(seen_a.v[29], &lsel, &lid);
	{
		char s1[24], s2[24];

		snprintf(s1, sizeof(s1), "%lld", lsel);
		snprintf(s2, sizeof(s2), "%lld", lid);
		check_last_key(saved, s1, s2);
	}
	sales_reader(&r, 7, NULL);
	open_reader(&r, &d, saved);
	seen_b.n = 0;
	CBT_EQ_LL(run_all(&d, &r, NULL, 0, &ctx, &seen_b), 70);
	/* nothing at or before the saved key; together, every row once */
	parse_sale(seen_b.v[0], &sel, &id);
	CU_ASSERT(sel > lsel || (sel == lsel && id > lid));
	check_order(&seen_a, 0, hit, 100);
	check_order(&seen_b, 0, hit, 100);
	for (i = 1; i <= 100; i++)
		if (!hit[i])
			CBT_FAILF("id %d never read", i);
	json_decref(saved);
	json_decref(ctx);
	reader_free(&r);
	drv_done(&d);
}

static void status_writer(cb_writer *w, const char *table, const char *const *keys, size_t nkeys,
			  const char *column)
{
	cb_pg_status_options o = CB_PG_STATUS_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;

	o.table = table;
	o.key_columns = keys;
	o.nkeys = nkeys;
	o.set_column = column;
	o.set_value = "true";
	CBT_PASS_FATAL(cb_pg_status_writer_new(w, &o, &err), &err);
}

static void test_status_writer_progress(void)
{
	static const char *const id_key[] = { "id" };
	struct drv d;
	cb_reader r;
	cb_writer w;
	unsigned char hit[101] = { 0 };
	int i, pass;

	/* pass 0: composite key (unnest); pass 1: single key (= ANY) */
	for (pass = 0; pass < 2; pass++) {
		cb_pg_keyset_options o = CB_PG_KEYSET_OPTIONS_INIT;
		cb_error err = CB_ERROR_INIT;

		drv_init(&d, 10, 1);
		make_sales(d.conn, 100);
		memset(hit, 0, sizeof(hit));
		o.table = "sales";
		o.key_columns = pass ? id_key : sales_keys;
		o.nkeys = pass ? 1 : 2;
		o.where = "NOT processed -- a trailing comment must not hide the key condition";
		o.page_size = 7;
		CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &o, &err), &err);
		status_writer(&w, "sales", pass ? id_key : sales_keys, pass ? 1 : 2, "processed");
		open_reader(&r, &d, NULL);
		open_writer(&w, &d);
		seen_a.n = 0;
		for (i = 0; i < 3; i++)
			CBT_EQ_LL(run_chunk(&d, &r, &w, 1, NULL, 1, &seen_a), 10);
		CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM sales WHERE processed"), 30);
		reader_free(&r);

		/* a fresh reader, no saved context: the data alone says where to go on */
		CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &o, &err), &err);
		open_reader(&r, &d, NULL);
		seen_b.n = 0;
		CBT_EQ_LL(run_all(&d, &r, &w, 1, NULL, &seen_b), 70);
		CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM sales WHERE processed"), 100);
		if (pass == 0) {
			check_order(&seen_a, 0, hit, 100);
			check_order(&seen_b, 0, hit, 100);
		} else {
			long long prev = 0, id;
			size_t j;

			for (j = 0; j < seen_a.n + seen_b.n; j++) {
				const char *s = j < seen_a.n ? seen_a.v[j] : seen_b.v[j - seen_a.n];

				CU_ASSERT_EQUAL(sscanf(s, "id=%lld", &id), 1);
				CU_ASSERT(id == prev + 1);
				prev = id;
			}
			CBT_EQ_LL(prev, 100);
		}
		reader_free(&r);
		writer_free(&w);
		drv_done(&d);
	}
}

/* ---- a run has a bounded input ------------------------------------------------ */

/* Table arrivals: ids 1..@p nrows, none processed. */
static void make_arrivals(PGconn *conn, int nrows)
{
	char sql[400];

	snprintf(sql, sizeof(sql),
		 "SET client_min_messages = warning; DROP TABLE IF EXISTS arrivals; "
		 "CREATE TABLE arrivals (id bigint PRIMARY KEY, "
		 "processed boolean NOT NULL DEFAULT false); "
		 "INSERT INTO arrivals (id) SELECT g FROM generate_series(1, %d) g",
		 nrows);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(conn, sql), 0);
}

/* Rows @p from..@p to arrive (another session's commit). */
static void arrive(int from, int to)
{
	PGconn *other = cbt_connect(db);

	CBT_EQ_LL(cbt_queryp_ll(
			  other,
			  "WITH i AS (INSERT INTO arrivals (id) SELECT generate_series($1::int, "
			  "$2::int) RETURNING 1) SELECT count(*) FROM i",
			  "d d", from, to),
		  to - from + 1);
	PQfinish(other);
}

static const char *const arrivals_key[] = { "id", NULL };

/* A keyset reader of arrivals WHERE NOT processed; @p version 1 or 2. */
static void arrivals_reader(cb_reader *r, unsigned int version, int unbounded)
{
	cb_pg_keyset_options o = CB_PG_KEYSET_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;

	o.version = version;
	o.table = "arrivals";
	o.key_columns = arrivals_key;
	o.where = "NOT processed";
	o.unbounded = unbounded; /* not read for version 1 */
	CBT_PASS_FATAL(cb_pg_keyset_reader_new(r, &o, &err), &err);
}

static json_t *through_text(const json_t *ctx)
{
	char *text = json_dumps(ctx, JSON_COMPACT);
	json_error_t jerr;
	json_t *back;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	back = json_loads(text, 0, &jerr);
	free(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	return back;
}

static void check_hwm(const json_t *ctx, const char *want)
{
	const json_t *h = json_object_get(ctx, "hwm");

	if (!want) {
		CU_ASSERT_TRUE(h && json_is_null(h));
		return;
	}
	CU_ASSERT_FATAL(json_is_array(h) && json_array_size(h) == 1);
	CBT_EQ_STR(json_string_value(json_array_get(h, 0)), want);
}

/*
 * A run reads what matched at its first open: rows that arrive during the
 * run (above the mark) are the next run's; a reopen from the saved context
 * (a restart) keeps the mark; options of version 1 are bounded too.
 */
static void test_bounded_run_leaves_later_rows_to_the_next(void)
{
	struct drv d;
	cb_reader r;
	cb_writer w;
	json_t *ctx = NULL, *saved;
	unsigned int version;

	for (version = 1; version <= 2; version++) {
		drv_init(&d, 10, 1);
		make_arrivals(d.conn, 30);
		arrivals_reader(&r, version, 0);
		status_writer(&w, "arrivals", arrivals_key, 1, "processed");
		open_reader(&r, &d, NULL);
		open_writer(&w, &d);
		CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 1, NULL), 10);
		check_hwm(ctx, "30");
		arrive(31, 50); /* during the run */
		CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 1, NULL), 10);
		reader_free(&r);

		/* restart from the committed context: the mark is kept */
		saved = through_text(ctx);
		arrive(51, 60);
		arrivals_reader(&r, version, 0);
		open_reader(&r, &d, saved);
		CBT_EQ_LL(run_all(&d, &r, &w, 1, &ctx, NULL), 10);
		check_hwm(ctx, "30");
		CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM arrivals WHERE processed"),
			  30);
		CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT max(id) FROM arrivals WHERE processed"), 30);
		json_decref(saved);
		reader_free(&r);

		/* the next run (no saved context) takes them */
		arrivals_reader(&r, version, 0);
		open_reader(&r, &d, NULL);
		CBT_EQ_LL(run_all(&d, &r, &w, 1, &ctx, NULL), 30);
		check_hwm(ctx, "60");
		CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM arrivals WHERE NOT processed"),
			  0);
		json_decref(ctx);
		ctx = NULL;
		reader_free(&r);
		writer_free(&w);
		drv_done(&d);
	}
}

/* No matching row at the first open: the bound is nothing, kept on restart. */
static void test_bounded_run_of_an_empty_input_stays_empty(void)
{
	struct drv d;
	cb_reader r;
	json_t *saved = json_pack("{s:n}", "hwm");

	drv_init(&d, 10, 1);
	make_arrivals(d.conn, 0);
	arrivals_reader(&r, CB_PG_KEYSET_OPTIONS_VERSION, 0);
	open_reader(&r, &d, NULL);
	arrive(1, 25);
	CBT_EQ_LL(run_all(&d, &r, NULL, 0, NULL, NULL), 0);
	reader_free(&r);
	/* a context saying "nothing" stays nothing */
	arrivals_reader(&r, CB_PG_KEYSET_OPTIONS_VERSION, 0);
	open_reader(&r, &d, saved);
	CBT_EQ_LL(run_all(&d, &r, NULL, 0, NULL, NULL), 0);
	reader_free(&r);
	/* a new run reads them */
	arrivals_reader(&r, CB_PG_KEYSET_OPTIONS_VERSION, 0);
	open_reader(&r, &d, NULL);
	CBT_EQ_LL(run_all(&d, &r, NULL, 0, NULL, NULL), 25);
	reader_free(&r);
	json_decref(saved);
	drv_done(&d);
}

/* unbounded = 1: the run drains rows that arrive while it runs. */
static void test_unbounded_reader_drains_rows_that_arrive(void)
{
	struct drv d;
	cb_reader r;
	cb_writer w;
	json_t *ctx = NULL;

	drv_init(&d, 10, 1);
	make_arrivals(d.conn, 30);
	arrivals_reader(&r, CB_PG_KEYSET_OPTIONS_VERSION, 1);
	status_writer(&w, "arrivals", arrivals_key, 1, "processed");
	open_reader(&r, &d, NULL);
	open_writer(&w, &d);
	CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 1, NULL), 10);
	CU_ASSERT_PTR_NULL(json_object_get(ctx, "hwm"));
	arrive(31, 50);
	CBT_EQ_LL(run_all(&d, &r, &w, 1, &ctx, NULL), 40);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM arrivals WHERE NOT processed"), 0);
	json_decref(ctx);
	reader_free(&r);
	writer_free(&w);
	drv_done(&d);
}

/*
 * A composite key is bounded by the largest key tuple in key order: a late
 * row above it waits for the next run, one below it (a lower leading column)
 * is read, as documented.
 */
static void test_bounded_composite_key_follows_key_order(void)
{
	struct drv d;
	cb_reader r;
	json_t *ctx = NULL, *mark;

	drv_init(&d, 10, 1);
	make_sales(d.conn, 100);
	sales_reader(&r, 0, "NOT processed");
	open_reader(&r, &d, NULL);
	CBT_EQ_LL(run_chunk(&d, &r, NULL, 0, &ctx, 1, NULL), 10);
	mark = json_pack("{s:O}", "last_key", json_object_get(ctx, "hwm"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(mark);
	check_last_key(mark, "9", "97");
	json_decref(mark);
	cbt_exec(d.conn, "INSERT INTO sales VALUES (101, 9, 1), (102, 9, 1), (103, 8, 1)");
	/* 90 left, plus (8, 103) below the mark; (9, 101) and (9, 102) are above */
	CBT_EQ_LL(run_all(&d, &r, NULL, 0, &ctx, NULL), 91);
	json_decref(ctx);
	reader_free(&r);
	drv_done(&d);
}

static int same_seen(const struct seen *a, size_t afrom, const struct seen *b, size_t bfrom,
		     size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (afrom + i >= a->n || bfrom + i >= b->n ||
		    strcmp(a->v[afrom + i], b->v[bfrom + i]) != 0)
			return 0;
	return 1;
}

static void test_rollback_rewinds(void)
{
	struct drv d;
	cb_reader r;
	cb_writer w;
	json_t *ctx = NULL;
	cb_error err = CB_ERROR_INIT, ignored = CB_ERROR_INIT;
	unsigned char hit[101] = { 0 };
	void *item;
	char desc[DESC_MAX];
	int i;

	drv_init(&d, 10, 1);
	make_sales(d.conn, 100);
	sales_reader(&r, 7, NULL);
	status_writer(&w, "sales", sales_keys, 2, "processed");
	open_reader(&r, &d, NULL);
	open_writer(&w, &d);
	seen_a.n = seen_b.n = seen_c.n = 0;

	/* chunk 1 commits (seen_a[0..9]) */
	CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 1, &seen_a), 10);
	/* chunk 2 rolls back after update (a failed COMMIT): seen_b */
	CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 0, &seen_b), 10);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM sales WHERE processed"), 10);
	/* the retry reads the same items */
	CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 1, &seen_a), 10);
	CU_ASSERT(same_seen(&seen_a, 10, &seen_b, 0, 10));

	/* a chunk rolled back halfway through its reads, without update */
	CBT_PASS_FATAL(cb__tx_begin(d.tx, &err), &err);
	for (i = 0; i < 5; i++) {
		CBT_PASS_FATAL(r.read(r.state, d.tx, &item, &err), &err);
		r.describe(r.state, item, desc, sizeof(desc));
		memcpy(seen_c.v[seen_c.n++], desc, DESC_MAX);
	}
	cb__tx_rollback(d.tx, &ignored);
	r.rollback(r.state);
	/* two rollbacks in a row are harmless */
	r.rollback(r.state);
	CBT_EQ_LL(run_chunk(&d, &r, &w, 1, &ctx, 1, &seen_a), 10);
	CU_ASSERT(same_seen(&seen_a, 20, &seen_c, 0, 5));

	CBT_EQ_LL(run_all(&d, &r, &w, 1, &ctx, &seen_a), 70);
	CBT_EQ_LL(seen_a.n, 100);
	check_order(&seen_a, 0, hit, 100);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM sales WHERE processed"), 100);
	json_decref(ctx);
	reader_free(&r);
	writer_free(&w);
	drv_done(&d);
}

static void test_hostile_identifiers(void)
{
	static const char *const cols[] = { "Val" };
	static const char *const key[] = { "a\"b" };
	static const char *const tcols[] = { "a\"b", "Val" };
	cb_pg_keyset_options o = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options u = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options s = CB_PG_STATUS_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	struct drv d;
	cb_reader r;
	cb_writer w[2];

	drv_init(&d, 10, 1);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(d.conn,
				       "CREATE TABLE x (i int); "
				       "CREATE SCHEMA \"s p\"\"q;\"; "
				       "CREATE TABLE \"s p\"\"q;\".\"we\"\"ird; drop table x\" ("
				       " \"a\"\"b\" int PRIMARY KEY, \"Val\" text, "
				       " \"do\"\"ne\" boolean NOT NULL DEFAULT false); "
				       "INSERT INTO \"s p\"\"q;\".\"we\"\"ird; drop table x\" "
				       " SELECT g, 'v' || g FROM generate_series(1, 25) g; "
				       "CREATE TABLE \"s p\"\"q;\".\"tgt'); drop table x; --\" ("
				       " \"a\"\"b\" int PRIMARY KEY, \"Val\" text)"),
			      0);
	o.schema = "s p\"q;";
	o.table = "we\"ird; drop table x";
	o.columns = cols;
	o.ncolumns = 1; /* the key a"b is appended, and found by its exact name */
	o.key_columns = key;
	o.nkeys = 1;
	o.where = "NOT \"do\"\"ne\"";
	CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &o, &err), &err);
	u.schema = "s p\"q;";
	u.table = "tgt'); drop table x; --";
	u.columns = tcols;
	u.ncolumns = 2;
	u.key_columns = key;
	u.nkeys = 1;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w[0], &u, &err), &err);
	s.schema = "s p\"q;";
	s.table = "we\"ird; drop table x";
	s.key_columns = key;
	s.nkeys = 1;
	s.set_column = "do\"ne";
	s.set_value = "true";
	CBT_PASS_FATAL(cb_pg_status_writer_new(&w[1], &s, &err), &err);
	open_reader(&r, &d, NULL);
	open_writer(&w[0], &d);
	open_writer(&w[1], &d);
	seen_a.n = 0;
	CBT_EQ_LL(run_all(&d, &r, w, 2, NULL, &seen_a), 25);
	CBT_EQ_STR(seen_a.v[0], "a\"b=1");
	CBT_EQ_STR(seen_a.v[24], "a\"b=25");
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM \"s p\"\"q;\".\"tgt'); drop table "
				       "x; --\" WHERE \"Val\" = 'v' || \"a\"\"b\""),
		  25);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM \"s p\"\"q;\".\"we\"\"ird; drop "
				       "table x\" WHERE \"do\"\"ne\""),
		  25);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM x"), 0);
	reader_free(&r);
	writer_free(&w[0]);
	writer_free(&w[1]);
	drv_done(&d);
}

/* ---- upserts ---------------------------------------------------------------- */

struct kv {
	int k;
	const char *v; /* NULL: SQL NULL */
	int n;
};

/* Columns in the writer's order: k, v, n[, job_execution_id]. */
static int bind_kv(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		   cb_error *err)
{
	const struct kv *x = item;
	size_t i;
	int rc = 0;

	(void)ctx;
	(void)err;
	for (i = 0; i < cb_values_count(out) && rc == 0; i++) {
		const char *name = cb_values_name(out, i);

		if (strcmp(name, "k") == 0)
			rc = cb_values_set_long(out, i, x->k);
		else if (strcmp(name, "v") == 0)
			rc = cb_values_set(out, i, x->v, -1);
		else if (strcmp(name, "n") == 0)
			rc = cb_values_set_long(out, i, x->n);
		else if (strcmp(name, "job_execution_id") == 0)
			rc = cb_values_set_long(out, i, cb_step_context_job_execution_id(sc));
	}
	return rc;
}

/* Write @p n items in one transaction. @return the commit's code. */
static int write_chunk(struct drv *d, cb_writer *w, const struct kv *kv, size_t n, cb_error *err)
{
	void *items[MAXCHUNK];
	cb_error ignored = CB_ERROR_INIT;
	size_t i;
	int rc;

	for (i = 0; i < n; i++)
		items[i] = (void *)&kv[i];
	rc = cb__tx_begin(d->tx, err);
	if (rc == 0)
		rc = w->write(w->state, d->tx, items, n, err);
	if (rc == 0)
		return cb__tx_commit(d->tx, err);
	cb__tx_rollback(d->tx, &ignored);
	return rc;
}

static void expect_row(PGconn *conn, int k, const char *v, int n)
{
	char sql[128], got[64];

	snprintf(sql, sizeof(sql),
		 "SELECT format('%%s/%%s/%%s', v, n, job_execution_id) "
		 "FROM t WHERE k = %d",
		 k);
	if (cbt_query_str(conn, sql, got, sizeof(got)) == 0) {
		char want[64];

		snprintf(want, sizeof(want), "%s/%d/%d", v, n, JOB_EXECUTION_ID);
		CBT_EQ_STR(got, want);
	}
}

static void test_upsert_conflicts(void)
{
	static const char *const cols[] = { "k", "v", "n", "job_execution_id" };
	static const char *const key[] = { "k" };
	static const char *const only_n[] = { "n" };
	static const struct kv c1[] = { { 1, "a", 1 }, { 2, "b", 2 } };
	static const struct kv c2[] = { { 1, "c", 3 } };
	static const struct kv c3[] = { { 1, "z", 9 }, { 3, "d", 4 } };
	static const struct kv c4[] = { { 1, "q", 10 }, { 4, "e", 5 } };
	static const struct kv twice[] = { { 5, "x", 1 }, { 5, "y", 2 } };
	static const struct kv twice6[] = { { 6, "x", 1 }, { 6, "y", 2 } };
	cb_pg_upsert_options o = CB_PG_UPSERT_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	struct drv d;
	cb_writer w;

	drv_init(&d, 10, 1);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(d.conn, "CREATE TABLE t (k int PRIMARY KEY, v text, "
					       "n int, job_execution_id bigint NOT NULL)"),
			      0);
	o.table = "t";
	o.columns = cols;
	o.ncolumns = 4;
	o.key_columns = key;
	o.nkeys = 1;
	o.bind = bind_kv;

	/* DO UPDATE SET every non-key column */
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	CBT_PASS(write_chunk(&d, &w, c1, 2, &err), &err);
	CBT_PASS(write_chunk(&d, &w, c2, 1, &err), &err);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM t"), 2);
	expect_row(d.conn, 1, "c", 3);
	expect_row(d.conn, 2, "b", 2);
	/* one key twice in a chunk: merged, the last item wins (options version 2) */
	CBT_PASS(write_chunk(&d, &w, twice, 2, &err), &err);
	expect_row(d.conn, 5, "y", 2);
	writer_free(&w);
	/* options version 1: refused by the server, nothing written */
	o.version = 1;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	CU_ASSERT(write_chunk(&d, &w, twice6, 2, &err) < 0);
	CBT_EQ_STR(err.sqlstate, "21000");
	cb_error_clear(&err);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM t WHERE k = 6"), 0);
	writer_free(&w);
	o.version = CB_PG_UPSERT_OPTIONS_VERSION;

	/* DO NOTHING: update_columns given, none listed */
	o.update_columns = only_n;
	o.nupdate = 0;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	CBT_PASS(write_chunk(&d, &w, c3, 2, &err), &err);
	expect_row(d.conn, 1, "c", 3);
	expect_row(d.conn, 3, "d", 4);
	writer_free(&w);

	/* only the listed columns are updated */
	o.nupdate = 1;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	CBT_PASS(write_chunk(&d, &w, c4, 2, &err), &err);
	expect_row(d.conn, 1, "c", 10);
	expect_row(d.conn, 4, "e", 5);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM t"), 5);
	writer_free(&w);
	drv_done(&d);
}

/* cb_bind_row_by_name, with job_execution_id from the step context. */
static void test_upsert_bind_by_name(void)
{
	static const char *const key[] = { "id" };
	static const char *const cols[] = { "id", "amount", "job_execution_id" };
	cb_pg_upsert_options o = CB_PG_UPSERT_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	struct drv d;
	cb_reader r;
	cb_writer w;

	drv_init(&d, 10, 1);
	make_sales(d.conn, 100);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(d.conn, "CREATE TABLE totals (id bigint PRIMARY KEY, "
					       "amount int, job_execution_id bigint NOT NULL)"),
			      0);
	sales_reader(&r, 7, NULL);
	o.table = "totals";
	o.columns = cols;
	o.ncolumns = 3;
	o.key_columns = key;
	o.nkeys = 1;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_reader(&r, &d, NULL);
	open_writer(&w, &d);
	CBT_EQ_LL(run_all(&d, &r, &w, 1, NULL, NULL), 100);
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM totals t JOIN sales s USING (id) "
				       "WHERE t.amount = s.amount AND t.job_execution_id = 4242"),
		  100);
	reader_free(&r);
	writer_free(&w);
	drv_done(&d);
}

/* ---- array literal escaping --------------------------------------------------- */

static const char *const nasty[] = {
	"plain",
	"he said \"hi\"",
	"back\\slash",
	"\\\"",
	"a,b",
	"{braces}",
	"}",
	"NULL",
	NULL,
	"",
	"  leading and trailing  ",
	"ünïcødé 漢字 🎉",
	"line\nbreak\ttab",
	"\"",
	"\\",
	"'single'",
	"(1,2)",
};
#define NNASTY (sizeof(nasty) / sizeof(nasty[0]))

static int bind_nasty(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		      cb_error *err)
{
	size_t i = *(const size_t *)item;
	int rc;

	(void)ctx;
	(void)sc;
	(void)err;
	rc = cb_values_set_long(out, 0, (long long)i);
	if (rc == 0)
		rc = cb_values_set(out, 1, nasty[i], nasty[i] ? (int)strlen(nasty[i]) : 0);
	/* jsonb of the same text, a box (whose array delimiter is ';'), an extreme bigint */
	if (rc == 0) {
		if (nasty[i]) {
			json_t *s = json_string(nasty[i]);
			char *j = json_dumps(s, JSON_ENCODE_ANY);

			rc = j ? cb_values_set(out, 2, j, -1) : CB_ENOMEM;
			free(j);
			json_decref(s);
		} else {
			rc = cb_values_set(out, 2, NULL, 0);
		}
	}
	if (rc == 0)
		rc = cb_values_set(out, 3, i % 2 ? "(1,2),(3,4)" : "((0,0),(1,1))", -1);
	if (rc == 0)
		rc = cb_values_set_long(out, 4, i % 2 ? LLONG_MIN : LLONG_MAX);
	return rc;
}

static void test_array_escaping(void)
{
	static const char *const cols[] = { "id", "v", "j", "b", "big" };
	static const char *const key[] = { "id" };
	cb_pg_upsert_options o = CB_PG_UPSERT_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	size_t idx[NNASTY], i;
	void *items[NNASTY];
	struct drv d;
	cb_writer w;
	cb_reader r;
	PGresult *res;

	drv_init(&d, 32, 1);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(d.conn, "CREATE TABLE esc (id int PRIMARY KEY, v text, "
					       "j jsonb, b box, big bigint); "
					       "CREATE TABLE esc2 (LIKE esc INCLUDING ALL)"),
			      0);
	o.table = "esc";
	o.columns = cols;
	o.ncolumns = 5;
	o.key_columns = key;
	o.nkeys = 1;
	o.bind = bind_nasty;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	for (i = 0; i < NNASTY; i++) {
		idx[i] = i;
		items[i] = &idx[i];
	}
	CBT_PASS_FATAL(cb__tx_begin(d.tx, &err), &err);
	CBT_PASS(w.write(w.state, d.tx, items, NNASTY, &err), &err);
	CBT_PASS(cb__tx_commit(d.tx, &err), &err);
	writer_free(&w);

	res = PQexec(d.conn, "SELECT id, v, j #>> '{}', b::text, big FROM esc ORDER BY id");
	CU_ASSERT_EQUAL_FATAL(PQresultStatus(res), PGRES_TUPLES_OK);
	CBT_EQ_LL(PQntuples(res), NNASTY);
	for (i = 0; i < NNASTY && i < (size_t)PQntuples(res); i++) {
		if (!nasty[i]) {
			CU_ASSERT(PQgetisnull(res, (int)i, 1));
			CU_ASSERT(PQgetisnull(res, (int)i, 2));
			continue;
		}
		CU_ASSERT(!PQgetisnull(res, (int)i, 1));
		CBT_EQ_STR(PQgetvalue(res, (int)i, 1), nasty[i]);
		CBT_EQ_STR(PQgetvalue(res, (int)i, 2), nasty[i]);
		CBT_EQ_STR(PQgetvalue(res, (int)i, 3), i % 2 ? "(3,4),(1,2)" : "(1,1),(0,0)");
		CBT_EQ_STR(PQgetvalue(res, (int)i, 4),
			   i % 2 ? "-9223372036854775808" : "9223372036854775807");
	}
	PQclear(res);

	/* and through the reader and bind-by-name into a copy */
	{
		cb_pg_keyset_options ko = CB_PG_KEYSET_OPTIONS_INIT;

		ko.table = "esc";
		ko.key_columns = key;
		ko.nkeys = 1;
		ko.page_size = 5;
		CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &ko, &err), &err);
		o.table = "esc2";
		o.bind = NULL;
		CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
		open_reader(&r, &d, NULL);
		open_writer(&w, &d);
		CBT_EQ_LL(run_all(&d, &r, &w, 1, NULL, NULL), NNASTY);
		CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM esc e JOIN esc2 f USING (id) "
					       "WHERE e.v IS NOT DISTINCT FROM f.v "
					       "AND e.j IS NOT DISTINCT FROM f.j "
					       "AND e.b ~= f.b AND e.big = f.big"),
			  NNASTY);
		reader_free(&r);
		writer_free(&w);
	}
	drv_done(&d);
}

/* ---- errors ------------------------------------------------------------------ */

static int bind_forgets(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			cb_error *err)
{
	(void)ctx;
	(void)sc;
	(void)item;
	(void)err;
	return cb_values_set_long(out, 0, 1); /* column 1 never set */
}

static int bind_nul(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		    cb_error *err)
{
	int rc;

	(void)ctx;
	(void)sc;
	(void)item;
	(void)err;
	rc = cb_values_set_long(out, 0, 1);
	return rc ? rc : cb_values_set(out, 1, "a\0b", 3);
}

static void test_errors(void)
{
	static const char *const cols[] = { "k", "v" };
	static const char *const missing[] = { "k", "nope" };
	static const char *const arr[] = { "k", "tags" };
	static const char *const key[] = { "k" };
	static const char *const bad_key[] = { "no_such_key" };
	cb_pg_upsert_options o = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_keyset_options ko = CB_PG_KEYSET_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	struct drv d;
	cb_writer w;
	cb_reader r;
	struct kv one = { 1, "x", 1 };
	json_t *bad;

	drv_init(&d, 10, 1);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(d.conn, "CREATE TABLE e (k int PRIMARY KEY, v text, "
					       "tags text[]); INSERT INTO e VALUES (1, 'a', '{}')"),
			      0);
	o.table = "e";
	o.columns = cols;
	o.ncolumns = 2;
	o.key_columns = key;
	o.nkeys = 1;

	/* options (a count of 0 takes the list as NULL-terminated: no list, no keys) */
	o.key_columns = NULL;
	o.nkeys = 0;
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_upsert_writer_new(&w, &o, &err), &err);
	CU_ASSERT_PTR_NULL(w.write);
	cb_error_clear(&err);
	o.key_columns = key;
	o.nkeys = 1;
	ko.table = "e";
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_keyset_reader_new(&r, &ko, &err), &err);
	cb_error_clear(&err);

	/* no such table, column, or an array column: open names them */
	o.table = "no_such_table";
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	CBT_FAILS_WITH(CB_EDB, w.open(w.state, &d.sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "no_such_table");
	cb_error_clear(&err);
	writer_free(&w);
	o.table = "e";
	o.columns = missing;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &d.sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "\"nope\"");
	cb_error_clear(&err);
	writer_free(&w);
	o.columns = arr;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	CBT_FAILS_WITH(CB_EINVAL, w.open(w.state, &d.sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "tags");
	cb_error_clear(&err);
	writer_free(&w);
	o.columns = cols;

	/* a bind that forgets a column, or passes a NUL byte */
	o.bind = bind_forgets;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	CBT_FAILS_WITH(CB_EINVAL, write_chunk(&d, &w, &one, 1, &err), &err);
	CBT_CONTAINS(err.message, "did not set column \"v\"");
	cb_error_clear(&err);
	writer_free(&w);
	o.bind = bind_nul;
	CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
	open_writer(&w, &d);
	CBT_FAILS_WITH(CB_EINVAL, write_chunk(&d, &w, &one, 1, &err), &err);
	CBT_CONTAINS(err.message, "NUL");
	cb_error_clear(&err);
	writer_free(&w);

	/* bind by name: a row without the writer's column */
	{
		static const char *const kcols[] = { "k" };
		static const char *const wcols[] = { "k", "v" };
		int n;

		ko.key_columns = key;
		ko.nkeys = 1;
		ko.columns = kcols;
		ko.ncolumns = 1;
		CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &ko, &err), &err);
		o.bind = NULL;
		o.columns = wcols;
		CBT_PASS_FATAL(cb_pg_upsert_writer_new(&w, &o, &err), &err);
		open_reader(&r, &d, NULL);
		open_writer(&w, &d);
		CU_ASSERT_EQUAL(cbt_exec(d.conn, "SELECT 1"), 0);
		{
			void *item;
			cb_error ignored = CB_ERROR_INIT;

			CBT_PASS_FATAL(cb__tx_begin(d.tx, &err), &err);
			CBT_PASS(r.read(r.state, d.tx, &item, &err), &err);
			n = w.write(w.state, d.tx, &item, 1, &err);
			CBT_EQ_LL(n, CB_EINVAL);
			CBT_CONTAINS(err.message, "\"v\"");
			cb_error_clear(&err);
			cb__tx_rollback(d.tx, &ignored);
			r.rollback(r.state);
		}
		reader_free(&r);
		writer_free(&w);
	}

	/* reader: an unknown key column, a malformed saved position */
	ko.columns = NULL;
	ko.ncolumns = 0;
	ko.key_columns = bad_key;
	CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &ko, &err), &err);
	CBT_FAILS_WITH(CB_EDB, r.open(r.state, &d.sc, NULL, &err), &err);
	CBT_CONTAINS(err.message, "no_such_key");
	cb_error_clear(&err);
	reader_free(&r);
	ko.key_columns = key;
	CBT_PASS_FATAL(cb_pg_keyset_reader_new(&r, &ko, &err), &err);
	bad = json_pack("{s:[s,s]}", "last_key", "1", "2");
	CBT_FAILS_WITH(CB_EINVAL, r.open(r.state, &d.sc, bad, &err), &err);
	CBT_CONTAINS(err.message, "last_key");
	cb_error_clear(&err);
	json_decref(bad);
	reader_free(&r);

	/* no statement is left prepared on the connection after close */
	CBT_EQ_LL(cbt_query_ll(d.conn, "SELECT count(*) FROM pg_prepared_statements"), 0);
	drv_done(&d);
}

static const CU_TestInfo tests[] = {
	{ "keyset paging over ties", test_keyset_ties },
	{ "restart from the saved last key", test_restart_from_saved_key },
	{ "status writer: processed rows are not read again", test_status_writer_progress },
	{ "rollback rewinds to the committed key", test_rollback_rewinds },
	{ "hostile identifiers are quoted", test_hostile_identifiers },
	{ "upsert inserts, updates, or does nothing", test_upsert_conflicts },
	{ "upsert with bind by name", test_upsert_bind_by_name },
	{ "array literals round-trip any text", test_array_escaping },
	{ "errors name what failed", test_errors },
	{ "bounded run leaves later rows to the next",
	  test_bounded_run_leaves_later_rows_to_the_next },
	{ "bounded run of an empty input stays empty",
	  test_bounded_run_of_an_empty_input_stays_empty },
	{ "unbounded reader drains rows that arrive",
	  test_unbounded_reader_drains_rows_that_arrive },
	{ "bounded composite key follows key order", test_bounded_composite_key_follows_key_order },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("pg_io", init, clean, tests);
}
