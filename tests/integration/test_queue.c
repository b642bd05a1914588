/*
 * The work-queue reader (FOR UPDATE SKIP LOCKED): a job draining a queue with
 * the status writer, two workers on their own connections draining one table
 * at the same time, rolled-back claims taken again, hostile identifiers.
 */
#include "cbtest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbatch.h"
#include "cbatch/readers.h"
#include "cbatch/writers.h"
#include "step_context.h"
#include "tx.h"

#define MAXCHUNK 64
#define DESC_MAX 96

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "queue", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* A queue table `name (id bigint PK, payload text, status text)` of @p n READY rows. */
static void make_queue(PGconn *c, const char *name, int n)
{
	char sql[512];

	snprintf(sql, sizeof(sql),
		 "SET client_min_messages = warning; DROP TABLE IF EXISTS %s; "
		 "CREATE TABLE %s (id bigint PRIMARY KEY, payload text NOT NULL, "
		 "status text NOT NULL DEFAULT 'READY'); "
		 "INSERT INTO %s (id, payload) SELECT g, 'p' || g FROM generate_series(1, %d) g",
		 name, name, name, n);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(c, sql), 0);
}

static const char *const q_cols[] = { "id", "payload", NULL };
static const char *const q_keys[] = { "id", NULL };

static int queue_reader(cb_reader *r, const char *table, cb_error *err)
{
	static const char *const ready[] = { "READY", NULL };
	cb_pg_queue_options o = CB_PG_QUEUE_OPTIONS_INIT;

	o.table = table;
	o.columns = q_cols;
	o.key_columns = q_keys;
	o.where = "status = $1";
	o.query_params = ready;
	return cb_pg_queue_reader_new(r, &o, err);
}

static int done_writer(cb_writer *w, const char *table, cb_error *err)
{
	cb_pg_status_options s = CB_PG_STATUS_OPTIONS_INIT;

	s.table = table;
	s.key_columns = q_keys;
	s.set_column = "status";
	s.set_value = "DONE";
	s.expect_column = "status";
	s.expect_value = "READY";
	return cb_pg_status_writer_new(w, &s, err);
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

/* ---- a worker: its own connection and transaction, no CUnit calls ------------ */

struct worker {
	const char *table;
	size_t chunk_size;
	int pause_us; /* inside each chunk transaction, after the claim */
	/* the chunk step's parts, driven by hand */
	PGconn *conn;
	cb_tx *tx;
	struct cb_step_context sc;
	cb_reader r;
	cb_writer w;
	/* what it claimed and committed */
	long long *ids;
	size_t nids, capids;
	long long chunks;
	int rc;
	cb_error err;
};

/* Connect and make the parts over @p table (NULL: no parts, the caller's). */
static int worker_open(struct worker *k, const char *table, size_t chunk_size)
{
	memset(k, 0, sizeof(*k));
	k->err = (cb_error)CB_ERROR_INIT;
	k->table = table;
	k->chunk_size = chunk_size;
	k->conn = PQconnectdb(db);
	if (PQstatus(k->conn) != CONNECTION_OK)
		return k->rc = cb_error_set(&k->err, CB_EDB, "connect: %s",
					    PQerrorMessage(k->conn));
	k->sc.job_name = "queue";
	k->sc.step_name = "drain";
	k->sc.job_execution_id = 1;
	k->sc.step_execution_id = 1;
	k->sc.chunk_size = chunk_size;
	k->sc.conn = k->conn;
	if ((k->rc = cb__tx_new(&k->tx, k->conn, 1, &k->err)) < 0 || !table ||
	    (k->rc = queue_reader(&k->r, table, &k->err)) < 0 ||
	    (k->rc = done_writer(&k->w, table, &k->err)) < 0 ||
	    (k->rc = k->r.open(k->r.state, &k->sc, NULL, &k->err)) < 0 ||
	    (k->rc = k->w.open(k->w.state, &k->sc, NULL, &k->err)) < 0)
		return k->rc;
	return 0;
}

static void worker_close(struct worker *k)
{
	reader_free(&k->r);
	writer_free(&k->w);
	cb__tx_free(k->tx);
	PQfinish(k->conn);
	free(k->ids);
	k->ids = NULL;
}

/* Item @p item's id (the reader's describe text is "id=N"). */
static long long item_id(struct worker *k, const void *item)
{
	char desc[DESC_MAX];
	long long id = -1;

	k->r.describe(k->r.state, item, desc, sizeof(desc));
	if (sscanf(desc, "id=%lld", &id) != 1)
		return -1;
	return id;
}

/*
 * Begin, claim (read up to a chunk), optionally pause, write, update, then
 * commit or (@p commit 0) roll back. Claimed ids of committed chunks are
 * appended to k->ids. @return items read (0: end of input), or < 0.
 */
static int worker_chunk(struct worker *k, int commit, long long *first_id)
{
	cb_error ignored = CB_ERROR_INIT;
	void *items[MAXCHUNK];
	size_t n = 0, i;
	json_t *o = NULL;
	int rc;

	if (first_id)
		*first_id = -1;
	if ((rc = cb__tx_begin(k->tx, &k->err)) < 0)
		return k->rc = rc;
	while (n < k->chunk_size && n < MAXCHUNK) {
		rc = k->r.read(k->r.state, k->tx, &items[n], &k->err);
		/* CB_CHUNK_END: a short claim (the other worker holds the rest)
		 * serves this chunk only, as the engine's chunk loop reads it; it
		 * is no item (a slow, sanitized build claimed short and wrote a
		 * NULL item as the 25th) */
		if (rc == CB_DONE || rc == CB_CHUNK_END)
			break;
		if (rc < 0)
			goto fail;
		n++;
	}
	if (n > 0 && first_id)
		*first_id = item_id(k, items[0]);
	if (k->pause_us > 0) {
		struct timespec ts = { 0, (long)k->pause_us * 1000L };

		nanosleep(&ts, NULL);
	}
	if (n == 0) {
		cb__tx_rollback(k->tx, &ignored);
		k->r.rollback(k->r.state);
		return 0;
	}
	if ((rc = k->w.write(k->w.state, k->tx, items, n, &k->err)) < 0)
		goto fail;
	o = json_object();
	if ((rc = k->r.update(k->r.state, o, &k->err)) < 0)
		goto fail;
	if (json_object_size(o) != 0) {
		rc = cb_error_set(&k->err, CB_ERROR, "update stored something");
		goto fail;
	}
	json_decref(o);
	o = NULL;
	if (!commit) {
		cb__tx_rollback(k->tx, &ignored);
		k->r.rollback(k->r.state);
		return (int)n;
	}
	/* the ids, before the commit: the items live until the next read */
	if (k->nids + n > k->capids) {
		size_t cap = (k->nids + n) * 2;
		long long *p = realloc(k->ids, cap * sizeof(*p));

		if (!p) {
			rc = cb_error_set(&k->err, CB_ENOMEM, "out of memory");
			goto fail;
		}
		k->ids = p;
		k->capids = cap;
	}
	for (i = 0; i < n; i++)
		k->ids[k->nids + i] = item_id(k, items[i]);
	if ((rc = cb__tx_commit(k->tx, &k->err)) < 0)
		goto fail;
	k->nids += n;
	k->chunks++;
	return (int)n;
fail:
	json_decref(o);
	cb__tx_rollback(k->tx, &ignored);
	k->r.rollback(k->r.state);
	return k->rc = rc;
}

#define CHECK_WORKER(k)                                                                            \
	do {                                                                                       \
		if ((k)->rc < 0)                                                                   \
			CBT_FAILF("worker on %s: %s (%s)", (k)->table, (k)->err.message,           \
				  cb_strcode((k)->rc));                                            \
	} while (0)

/* ---- (1) a job drains the queue --------------------------------------------- */

static int drain_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	static const char *const tcols[] = { "id", "payload", NULL };
	cb_pg_copy_options c = CB_PG_COPY_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user;
	(void)sc;
	rc = queue_reader(&parts->reader, "jobq", err);
	if (rc)
		return rc;
	c.table = "jobq_target";
	c.columns = tcols;
	c.ncolumns = 2;
	rc = cb_pg_copy_writer_new(&w, &c, err);
	if (!rc)
		rc = cb_chunk_parts_add_writer(parts, &w, err);
	if (!rc)
		rc = done_writer(&w, "jobq", err);
	if (!rc)
		rc = cb_chunk_parts_add_writer(parts, &w, err);
	return rc;
}

static void test_job_drains_the_queue(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;
	cb_job_result r;

	make_queue(conn, "jobq", 5000);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(conn, "CREATE TABLE jobq_target (id bigint, payload text)"),
			      0);
	CBT_PASS_FATAL(cb_job_new(&job, "queue_drain", &err), &err);
	s.name = "drain";
	s.chunk_size = 64;
	s.build = drain_build;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM jobq WHERE status = 'DONE'"), 5000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM jobq_target"), 5000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT id) FROM jobq_target"), 5000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM jobq_target t JOIN jobq q USING (id) "
				     "WHERE t.payload = q.payload"),
		  5000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT read_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) "
				     "WHERE i.job_name = 'queue_drain'"),
		  5000);
	/* 5000 = 78 x 64 + 8: the short claim ends the step */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution s JOIN "
				     "batch_job_execution e USING (job_execution_id) JOIN "
				     "batch_job_instance i USING (job_instance_id) "
				     "WHERE i.job_name = 'queue_drain'"),
		  79);
	cb_job_free(job);
}

/* ---- (2) two workers at once -------------------------------------------------- */

#define PAR_ROWS 3000

static int in_tx; /* workers inside a claim (atomic builtins) */
static int max_in_tx;

static void *worker_main(void *arg)
{
	struct worker *k = arg;
	int n;

	do {
		int now = __atomic_add_fetch(&in_tx, 1, __ATOMIC_SEQ_CST);
		int max = __atomic_load_n(&max_in_tx, __ATOMIC_SEQ_CST);

		while (now > max &&
		       !__atomic_compare_exchange_n(&max_in_tx, &max, now, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST))
			;
		n = worker_chunk(k, 1, NULL);
		__atomic_sub_fetch(&in_tx, 1, __ATOMIC_SEQ_CST);
	} while (n > 0);
	return NULL;
}

static void test_two_workers_drain_disjoint_rows(void)
{
	struct worker k[2];
	pthread_t th[2];
	unsigned char *owner;
	long long total = 0, id;
	size_t i, j;

	make_queue(conn, "parq", PAR_ROWS);
	for (i = 0; i < 2; i++) {
		worker_open(&k[i], "parq", 25);
		k[i].pause_us = 2000; /* hold the claim: the other one must skip it */
		CHECK_WORKER(&k[i]);
	}
	if (k[0].rc < 0 || k[1].rc < 0)
		goto done;
	for (i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker_main, &k[i]), 0);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_WORKER(&k[0]);
	CHECK_WORKER(&k[1]);
	/* the claims overlapped in time, and both did work */
	CBT_EQ_LL(max_in_tx, 2);
	CU_ASSERT(k[0].nids > 0 && k[1].nids > 0);
	fprintf(stderr, "  workers: %zu and %zu rows, %lld and %lld chunks\n", k[0].nids, k[1].nids,
		k[0].chunks, k[1].chunks);
	owner = calloc(PAR_ROWS + 1, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(owner);
	for (i = 0; i < 2; i++)
		for (j = 0; j < k[i].nids; j++) {
			id = k[i].ids[j];
			if (id < 1 || id > PAR_ROWS) {
				CBT_FAILF("worker %zu: id %lld out of range", i, id);
				continue;
			}
			if (owner[id])
				CBT_FAILF("id %lld claimed by worker %d and again by worker %zu",
					  id, owner[id] - 1, i);
			owner[id] = (unsigned char)(i + 1);
			total++;
		}
	CBT_EQ_LL(total, PAR_ROWS);
	for (id = 1; id <= PAR_ROWS; id++)
		if (!owner[id])
			CBT_FAILF("id %lld claimed by no worker", id);
	free(owner);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM parq WHERE status = 'DONE'"), PAR_ROWS);
done:
	worker_close(&k[0]);
	worker_close(&k[1]);
}

/* ---- (3) a rolled-back claim is claimed again --------------------------------- */

static void test_rolled_back_claim_is_claimed_again(void)
{
	struct worker a, b;
	long long first;
	int n;

	make_queue(conn, "rbq", 45);
	worker_open(&a, "rbq", 10);
	CHECK_WORKER(&a);
	worker_open(&b, "rbq", 10);
	CHECK_WORKER(&b);
	if (a.rc < 0 || b.rc < 0)
		goto done;
	/* a chunk that wrote and updated, then rolled back (a failed COMMIT) */
	CBT_EQ_LL(worker_chunk(&a, 0, &first), 10);
	CBT_EQ_LL(first, 1);
	CBT_EQ_LL(worker_chunk(&a, 1, &first), 10);
	CBT_EQ_LL(first, 1);
	CBT_EQ_LL(a.ids[0], 1);
	CBT_EQ_LL(a.ids[9], 10);

	/* a holds ids 11..20 in an open transaction: b skips them */
	{
		cb_error err = CB_ERROR_INIT, ignored = CB_ERROR_INIT;
		void *item;
		int i;

		CBT_PASS_FATAL(cb__tx_begin(a.tx, &err), &err);
		for (i = 0; i < 5; i++) {
			CBT_PASS_FATAL(a.r.read(a.r.state, a.tx, &item, &err), &err);
			if (i == 0)
				CBT_EQ_LL(item_id(&a, item), 11);
		}
		CBT_EQ_LL(worker_chunk(&b, 1, &first), 10);
		CBT_EQ_LL(first, 21);
		/* a rolls back halfway through its chunk, without update */
		cb__tx_rollback(a.tx, &ignored);
		a.r.rollback(a.r.state);
		a.r.rollback(a.r.state); /* twice is harmless */
	}
	/* released: b takes them now, a gets what is left */
	CBT_EQ_LL(worker_chunk(&b, 1, &first), 10);
	CBT_EQ_LL(first, 11);
	CBT_EQ_LL(worker_chunk(&a, 1, &first), 10);
	CBT_EQ_LL(first, 31);
	CBT_EQ_LL(worker_chunk(&a, 1, &first), 5);
	CBT_EQ_LL(first, 41);
	n = worker_chunk(&a, 1, &first);
	CBT_EQ_LL(n, 0);
	CBT_EQ_LL(worker_chunk(&b, 1, &first), 0);
	CHECK_WORKER(&a);
	CHECK_WORKER(&b);
	CBT_EQ_LL(a.nids + b.nids, 45);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM rbq WHERE status = 'DONE'"), 45);
done:
	worker_close(&a);
	worker_close(&b);
}

/* ---- (4) hostile identifiers ---------------------------------------------------- */

static void test_hostile_identifiers(void)
{
	static const char *const cols[] = { "Val", NULL };
	static const char *const key[] = { "a\"b", NULL };
	static const char *const params[] = { "new", NULL };
	cb_pg_queue_options o = CB_PG_QUEUE_OPTIONS_INIT;
	cb_pg_status_options s = CB_PG_STATUS_OPTIONS_INIT;
	struct worker k;
	char desc[DESC_MAX];
	cb_error err = CB_ERROR_INIT;
	void *item;
	long long rows = 0;
	int n;

	CU_ASSERT_EQUAL_FATAL(cbt_exec(conn,
				       "CREATE TABLE x (i int); "
				       "CREATE SCHEMA \"s p\"\"q;\"; "
				       "CREATE TABLE \"s p\"\"q;\".\"we\"\"ird; drop table x\" ("
				       " \"a\"\"b\" int PRIMARY KEY, \"Val\" text, "
				       " \"st\"\"at\" text NOT NULL DEFAULT 'new'); "
				       "INSERT INTO \"s p\"\"q;\".\"we\"\"ird; drop table x\" "
				       " SELECT g, 'v' || g FROM generate_series(1, 25) g"),
			      0);
	/* worker_open's reader and writer are replaced by hostile ones */
	worker_open(&k, NULL, 10);
	k.table = "hostile";
	CHECK_WORKER(&k);
	if (k.rc < 0)
		goto done;
	o.schema = "s p\"q;";
	o.table = "we\"ird; drop table x";
	o.columns = cols; /* the key a"b is appended, and found by its exact name */
	o.key_columns = key;
	o.where = "\"st\"\"at\" = $1 -- a trailing comment is harmless";
	o.query_params = params;
	CBT_PASS_FATAL(cb_pg_queue_reader_new(&k.r, &o, &err), &err);
	s.schema = o.schema;
	s.table = o.table;
	s.key_columns = key;
	s.set_column = "st\"at";
	s.set_value = "done";
	CBT_PASS_FATAL(cb_pg_status_writer_new(&k.w, &s, &err), &err);
	CBT_PASS_FATAL(k.r.open(k.r.state, &k.sc, NULL, &err), &err);
	CBT_PASS_FATAL(k.w.open(k.w.state, &k.sc, NULL, &err), &err);

	/* the first item's description names the key */
	CBT_PASS_FATAL(cb__tx_begin(k.tx, &err), &err);
	CBT_PASS_FATAL(k.r.read(k.r.state, k.tx, &item, &err), &err);
	k.r.describe(k.r.state, item, desc, sizeof(desc));
	CBT_EQ_STR(desc, "a\"b=1");
	CBT_EQ_STR(PQgetvalue(((const cb_row *)item)->res, ((const cb_row *)item)->row, 0), "v1");
	cb__tx_rollback(k.tx, &err);
	k.r.rollback(k.r.state);

	while ((n = worker_chunk(&k, 1, NULL)) > 0)
		rows += n;
	CHECK_WORKER(&k);
	CBT_EQ_LL(rows, 25);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM \"s p\"\"q;\".\"we\"\"ird; drop "
				     "table x\" WHERE \"st\"\"at\" = 'done'"),
		  25);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM x"), 0);
done:
	worker_close(&k);
}

/* ---- options ---------------------------------------------------------------------- */

static void test_invalid_options(void)
{
	static const char *const keys[] = { "id", "id", NULL };
	static const char *const params[] = { "x", NULL };
	cb_pg_queue_options o = CB_PG_QUEUE_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	cb_reader r;

	CBT_FAILS_WITH(CB_EINVAL, cb_pg_queue_reader_new(&r, NULL, &err), &err);
	err = (cb_error)CB_ERROR_INIT;
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_queue_reader_new(&r, &o, &err), &err); /* no table */
	o.table = "t";
	err = (cb_error)CB_ERROR_INIT;
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_queue_reader_new(&r, &o, &err), &err); /* no key */
	o.key_columns = keys;
	err = (cb_error)CB_ERROR_INIT;
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_queue_reader_new(&r, &o, &err), &err);
	CBT_CONTAINS(err.message, "given twice");
	o.nkeys = 1;
	o.query_params = params;
	err = (cb_error)CB_ERROR_INIT;
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_queue_reader_new(&r, &o, &err), &err);
	CBT_CONTAINS(err.message, "without a where clause");
	o.query_params = NULL;
	o.version = 99;
	err = (cb_error)CB_ERROR_INIT;
	CBT_FAILS_WITH(CB_EINVAL, cb_pg_queue_reader_new(&r, &o, &err), &err);
	o.version = CB_PG_QUEUE_OPTIONS_VERSION;
	err = (cb_error)CB_ERROR_INIT;
	CBT_PASS(cb_pg_queue_reader_new(&r, &o, &err), &err);
	reader_free(&r);
}

static const CU_TestInfo tests[] = {
	{ "a job drains a 5,000-row queue, each row once", test_job_drains_the_queue },
	{ "two concurrent workers claim disjoint rows", test_two_workers_drain_disjoint_rows },
	{ "a rolled-back claim is claimed again", test_rolled_back_claim_is_claimed_again },
	{ "hostile identifiers are quoted", test_hostile_identifiers },
	{ "invalid options", test_invalid_options },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("queue", init, clean, tests);
}
