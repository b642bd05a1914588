/*
 * cbatch-bench: the ledger job through cbatch against the best hand-written
 * libpq loop and the set-based SQL pair, on identical fresh data.
 *
 *   cbatch-bench [--rows N] [--chunk C] [--rounds R] [--db CONNINFO]
 *                [--only cbatch,libpq-seq,libpq-pipe,set-based]
 *   cbatch-bench --mode rss-scaling [--chunk C] [--db CONNINFO]
 *
 * Before every measured run the account table is rebuilt (TRUNCATE, INSERT
 * ... generate_series, VACUUM ANALYZE, CHECKPOINT) and the ledger emptied, so
 * each run starts from the same data and a clean checkpoint. Each run is
 * done in a forked child so that its peak RSS (ru_maxrss) is its own; the
 * variants run alternately, their order rotating from round to round.
 *
 * Variants (all process every row exactly once, all verified afterwards):
 *   cbatch      the ledger job of examples/ledger/ledger.c via cb_job_launch,
 *               a new instance per run (identifying bench.run), chunk.size=C;
 *               the time includes the launch, lock, heartbeat connection,
 *               step bookkeeping and the per-chunk checkpoint
 *   libpq-seq   SELECT the next C unprocessed rows by keyset; validate; then
 *               BEGIN / upsert via unnest arrays / UPDATE ... = ANY / COMMIT,
 *               one round trip each (prepared statements)
 *   libpq-pipe  the same, its write half as one pipeline (one round trip)
 *   libpq-pipe1 the same, with the next page's SELECT queued after COMMIT in the
 *               write half's pipeline: one round trip per chunk (issue 30's
 *               first idea, its best case); only with --only
 *   libpq-2conn the write half of libpq-pipe on two connections, chunks handed
 *               to them in turn, commits kept in chunk order by a checkpoint
 *               row (the ceiling of chunk.connections=2); only with --only
 *   cbatch-2c   the ledger job through cbatch with chunk.connections=2
 *   set-based   one INSERT ... SELECT ... ON CONFLICT and one UPDATE over
 *               all rows, in one transaction: the single-statement ceiling
 *   part-tK     the partitioned ledger (examples/ledger/ledger_partitioned.c)
 *               via cb_job_launch with K partitions run by K threads of the
 *               launching process (-partition.threads=K), K = 1, 2, 4;
 *               part-4on2: 4 partitions on 2 threads
 *   part-pK     the same with K partitions run by K worker processes
 *               (cb_worker_run, one thread each, forked before the launch
 *               and waiting on LISTEN); the manager runs none itself
 *               (partition.threads=0); the time is the launch's
 * The baseline is the faster of libpq-seq and libpq-pipe (by median).
 *
 * Columns: rows/s (median [min, max] over rounds); client CPU per row (this
 * process, all threads, and its worker processes); server CPU per row of the
 * run's own backend (from /proc/<pid>/stat; for part-* that is the manager's
 * session only, the partitions run on their own), and of the whole server (postmaster and all its
 * children: backends incl. cbatch's heartbeat session, WAL writer,
 * checkpointer, autovacuum); WAL bytes per row (the server's insert position
 * before and after); peak RSS of the child (max over rounds); and "other
 * load": the CPU used meanwhile by every other process on the machine, in
 * cores (from /proc/stat), so that a disturbed run is visible as such. The
 * CPU ratio line compares client + whole-server CPU per row, which varies
 * far less than wall time when the machine is shared.
 */
#include <cbatch.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "cbatch/partition.h"
#include "examples.h"

enum {
	V_CBATCH,
	V_SEQ,
	V_PIPE,
	V_CEILING,
	V_PART_T1,
	V_PART_T2,
	V_PART_T4,
	V_PART_P1,
	V_PART_P2,
	V_PART_P4,
	V_PIPE1,
	V_2CONN,
	V_CBATCH2,
	V_PART_4ON2,
	V_IDLE,
	NV
};
static const char *const vname[NV] = { "cbatch",    "libpq-seq", "libpq-pipe",  "set-based",
				       "part-t1",   "part-t2",   "part-t4",     "part-p1",
				       "part-p2",   "part-p4",   "libpq-pipe1", "libpq-2conn",
				       "cbatch-2c", "part-4on2", "idle" };

/* Workers of a partitioned variant, and whether they are processes. */
static int part_workers(int v)
{
	static const int k[] = { 1, 2, 4, 1, 2, 4 };

	if (v == V_PART_4ON2)
		return 2;
	return v >= V_PART_T1 && v <= V_PART_P4 ? k[v - V_PART_T1] : 0;
}

/* Partitions of a partitioned variant: as many as workers, but 4 on 2. */
static int part_count(int v)
{
	return v == V_PART_4ON2 ? 4 : part_workers(v);
}

static int part_procs(int v)
{
	return v >= V_PART_P1 && v <= V_PART_P4;
}

#define MAX_ROUNDS 100

struct result {
	int ok;
	double secs, client_cpu, server_cpu, server_all;
	double wal;   /* WAL bytes written during the run (whole server) */
	double other; /* CPU used meanwhile by processes that are neither this run nor the server */
	long long rows;
	char msg[800];
};

struct options {
	long long rows, chunk;
	int rounds, warmup;
	double quiet_wait;
	const char *db;
	int only[NV];
	int rss_scaling;
};

static long long g_run_seq;

/* ---------------------------------------------------------------- data */

static void prepare_data(PGconn *c, long long rows)
{
	char sql[512];

	/* the example's tables, created once; the rows rebuilt before every run */
	bench_exec(c, "TRUNCATE account, ledger RESTART IDENTITY");
	snprintf(sql, sizeof(sql),
		 "INSERT INTO account (id, seller_id, amount) "
		 "SELECT g, 1 + g %% 50, (1 + (g * 7919) %% 99999) / 100.0 "
		 "FROM generate_series(1, %lld::bigint) g",
		 rows);
	bench_exec(c, sql);
	snprintf(sql, sizeof(sql), "SELECT setval(pg_get_serial_sequence('account', 'id'), %lld)",
		 rows);
	bench_exec(c, sql);
	bench_exec(c, "VACUUM ANALYZE account");
	bench_exec(c, "VACUUM ANALYZE ledger");
	bench_exec(c, "CHECKPOINT");
}

/* Every account in the ledger once with its values, all processed. */
static int verify(PGconn *c, long long rows, char *msg, size_t size)
{
	PGresult *res =
		PQexec(c, "SELECT (SELECT count(*) FROM ledger), "
			  " (SELECT count(*) FROM account WHERE NOT processed), "
			  " (SELECT count(*) FROM ledger l JOIN account a ON a.id = l.account_id "
			  "   AND a.seller_id = l.seller_id AND a.amount = l.amount)");
	long long n, unprocessed, matching;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(msg, size, "verify: %s", PQerrorMessage(c));
		PQclear(res);
		return -1;
	}
	n = atoll(PQgetvalue(res, 0, 0));
	unprocessed = atoll(PQgetvalue(res, 0, 1));
	matching = atoll(PQgetvalue(res, 0, 2));
	PQclear(res);
	if (n != rows || unprocessed != 0 || matching != rows) {
		snprintf(msg, size,
			 "verify: ledger has %lld rows (%lld matching), %lld accounts unprocessed; "
			 "expected %lld, %lld, 0",
			 n, matching, unprocessed, rows, rows);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- cbatch */

static int run_cbatch(PGconn *conn, const struct options *o, int v, long long run_id,
		      struct result *r, double *t0)
{
	int k = part_workers(v);
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;
	cb_params *params = NULL;
	cb_launch_options lo = CB_LAUNCH_OPTIONS_INIT;
	cb_job_result res;
	const cb_job *job;
	int rc;

	if (cb_registry_new(&reg, &err) < 0 || ledger_register(reg, &err) < 0 ||
	    ledger_partitioned_register(reg, &err) < 0 || cb_params_new(&params, &err) < 0 ||
	    cb_params_add_long(params, "bench.run", run_id, 1, &err) < 0 ||
	    cb_params_add_long(params, "chunk.size", o->chunk, 0, &err) < 0 ||
	    (v == V_CBATCH2 && cb_params_add_long(params, "chunk.connections", 2, 0, &err) < 0) ||
	    (k && cb_params_add_long(params, "partition.count", part_count(v), 0, &err) < 0) ||
	    (k &&
	     cb_params_add_long(params, "partition.threads", part_procs(v) ? 0 : k, 0, &err) < 0)) {
		snprintf(r->msg, sizeof(r->msg), "setup: %s", err.message);
		cb_params_free(params);
		cb_registry_free(reg);
		return -1;
	}
	job = cb_registry_find(reg, k ? "ledger_partitioned" : "ledger");
	*t0 = bench_now();
	rc = cb_job_launch(&res, conn, job, params, &lo, &err);
	if (rc < 0)
		snprintf(r->msg, sizeof(r->msg), "launch: %s", err.message);
	else if (res.status != CB_STATUS_COMPLETED)
		snprintf(r->msg, sizeof(r->msg), "execution %lld ended %s: %s",
			 res.job_execution_id, cb_status_name(res.status), res.exit_message);
	else
		r->rows = o->rows; /* verified by the parent */
	cb_params_free(params);
	cb_registry_free(reg);
	return rc < 0 || res.status != CB_STATUS_COMPLETED ? -1 : 0;
}

/*
 * A worker process of a part-pK run: its own registry and connection, one
 * thread, waiting on LISTEN until the launch creates the partitions; it
 * leaves on SIGTERM once the run is over.
 */
static pid_t start_worker(const struct options *o)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		static const char *const jobs[] = { "ledger_partitioned", NULL };
		cb_worker_options wo = CB_WORKER_OPTIONS_INIT;
		cb_worker_result res;
		cb_error err = CB_ERROR_INIT;
		cb_registry *reg = NULL;
		PGconn *c = bench_connect(o->db);
		int rc;

		wo.job_names = jobs;
		wo.threads = 1;
		wo.handle_signals = 1;
		rc = cb_registry_new(&reg, &err) < 0 || ledger_partitioned_register(reg, &err) < 0 ?
			     -1 :
			     cb_worker_run(&res, reg, c, &wo, &err);
		if (rc < 0)
			fprintf(stderr, "bench: worker: %s\n", err.message);
		cb_registry_free(reg);
		PQfinish(c);
		_exit(rc < 0 ? 1 : 0);
	}
	return pid;
}

/* Wait until @p n worker sessions listen (else the launch would race their start). */
static void wait_workers_ready(PGconn *c, int n)
{
	for (int i = 0; i < 2000; i++) {
		char v[32];

		bench_value(c,
			    "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE "
			    "'cbatch worker%' AND state = 'idle'",
			    v, sizeof(v));
		if (atoi(v) >= n)
			return;
		usleep(5000);
	}
	fprintf(stderr, "bench: the worker processes did not connect\n");
}

/* ---------------------------------------------------------------- hand-written */

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_need(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->len + more > b->cap)
		b->cap = b->cap ? b->cap * 2 : 65536;
	b->p = realloc(b->p, b->cap);
	if (!b->p) {
		fprintf(stderr, "bench: out of memory\n");
		_exit(1);
	}
}

static inline void buf_put(struct buf *b, const char *s, size_t n)
{
	buf_need(b, n + 2);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void buf_ch(struct buf *b, char ch)
{
	buf_need(b, 2);
	b->p[b->len++] = ch;
}

static int prepare(PGconn *c, const char *name, const char *sql, int n, struct result *r)
{
	PGresult *res = PQprepare(c, name, sql, n, NULL);
	int ok = PQresultStatus(res) == PGRES_COMMAND_OK;

	if (!ok)
		snprintf(r->msg, sizeof(r->msg), "prepare %s: %s", name, PQerrorMessage(c));
	PQclear(res);
	return ok ? 0 : -1;
}

static int cmd_ok(PGconn *c, PGresult *res, const char *what, struct result *r)
{
	int ok = PQresultStatus(res) == PGRES_COMMAND_OK;

	if (!ok && !r->msg[0])
		snprintf(r->msg, sizeof(r->msg), "%s: %s", what,
			 PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res) :
							PQerrorMessage(c));
	PQclear(res);
	return ok ? 0 : -1;
}

/* Read one pipelined statement's results (up to its NULL); 0 if it succeeded. */
static int pipe_result(PGconn *c, const char *what, ExecStatusType want, PGresult **keep,
		       struct result *r)
{
	PGresult *res;
	int rc = 0, got = 0;

	while ((res = PQgetResult(c)) != NULL) {
		got = 1;
		if (PQresultStatus(res) != want) {
			if (!r->msg[0])
				snprintf(r->msg, sizeof(r->msg), "%s: %s %s", what,
					 PQresStatus(PQresultStatus(res)),
					 PQresultErrorMessage(res));
			rc = -1;
		}
		if (keep && rc == 0 && !*keep)
			*keep = res;
		else
			PQclear(res);
	}
	if (!got) {
		snprintf(r->msg, sizeof(r->msg), "%s: no result: %s", what, PQerrorMessage(c));
		return -1;
	}
	return rc;
}

static int pipe_sync(PGconn *c, struct result *r)
{
	PGresult *res = PQgetResult(c);
	int ok = res && PQresultStatus(res) == PGRES_PIPELINE_SYNC;

	if (!ok && !r->msg[0])
		snprintf(r->msg, sizeof(r->msg), "expected a pipeline sync, got %s",
			 res ? PQresStatus(PQresultStatus(res)) : "nothing");
	PQclear(res);
	return ok ? 0 : -1;
}

/* The hand-written loop's statements: page @p sel, upsert, update. */
static int prepare_loop(PGconn *c, const char *sel, struct result *r)
{
	if (prepare(c, "b_sel", sel, 1, r) ||
	    prepare(c, "b_ins",
		    "INSERT INTO ledger (account_id, seller_id, amount, job_execution_id) "
		    "SELECT a, s, m, $4 FROM unnest($1::bigint[], $2::int[], $3::numeric[]) "
		    "AS u(a, s, m) ON CONFLICT (account_id) DO UPDATE SET "
		    "seller_id = EXCLUDED.seller_id, amount = EXCLUDED.amount, "
		    "job_execution_id = EXCLUDED.job_execution_id",
		    4, r) ||
	    prepare(c, "b_upd", "UPDATE account SET processed = true WHERE id = ANY($1::bigint[])",
		    1, r))
		return -1;
	return 0;
}

/* Validate page @p res (@p n rows) and build the array parameters of its
 * upsert and update; its last key into @p last. -1 (r->msg) on a bad row. */
static int page_arrays(const PGresult *res, int n, struct buf *ids, struct buf *sellers,
		       struct buf *amounts, char *last, size_t last_size, struct result *r)
{
	ids->len = sellers->len = amounts->len = 0;
	buf_ch(ids, '{');
	buf_ch(sellers, '{');
	buf_ch(amounts, '{');
	for (int i = 0; i < n; i++) {
		const char *amount = PQgetvalue(res, i, 2);

		if (amount[0] == '-') {
			snprintf(r->msg, sizeof(r->msg),
				 "account %s: negative amount %s is invalid input",
				 PQgetvalue(res, i, 0), amount);
			return -1;
		}
		if (i) {
			buf_ch(ids, ',');
			buf_ch(sellers, ',');
			buf_ch(amounts, ',');
		}
		buf_put(ids, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0));
		buf_put(sellers, PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1));
		buf_put(amounts, amount, (size_t)PQgetlength(res, i, 2));
	}
	buf_put(ids, "}", 2);
	buf_put(sellers, "}", 2);
	buf_put(amounts, "}", 2);
	snprintf(last, last_size, "%s", PQgetvalue(res, n - 1, 0));
	return 0;
}

static int run_handwritten(PGconn *c, const struct options *o, int pipelined, long long run_id,
			   struct result *r, double *t0)
{
	char sel[512], last[32] = "0", jobid[24];
	struct buf ids = { 0 }, sellers = { 0 }, amounts = { 0 };
	PGresult *next = NULL; /* pipe1: the page after this one */
	long long total = 0;
	int rc = -1;

	snprintf(jobid, sizeof(jobid), "%lld", run_id);
	/* the chunk size is a constant here, as a hand-written loop would have it */
	snprintf(sel, sizeof(sel),
		 "SELECT id, seller_id, amount FROM account WHERE NOT processed AND id > $1 "
		 "ORDER BY id LIMIT %lld",
		 o->chunk);
	*t0 = bench_now();
	if (prepare_loop(c, sel, r) < 0)
		goto out;
	if (pipelined && !PQenterPipelineMode(c)) {
		snprintf(r->msg, sizeof(r->msg), "enter pipeline mode: %s", PQerrorMessage(c));
		goto out;
	}
	for (;;) {
		const char *sp[1] = { last };
		const char *wp[4];
		PGresult *res = NULL;
		int n;

		/* 1. the next page, by keyset (pipe1: it came with the last COMMIT) */
		if (next) {
			res = next;
			next = NULL;
		} else if (pipelined) {
			if (!PQsendQueryPrepared(c, "b_sel", 1, sp, NULL, NULL, 0) ||
			    !PQpipelineSync(c)) {
				snprintf(r->msg, sizeof(r->msg), "send: %s", PQerrorMessage(c));
				goto out;
			}
			if (pipe_result(c, "select", PGRES_TUPLES_OK, &res, r) < 0 ||
			    pipe_sync(c, r) < 0) {
				PQclear(res);
				goto out;
			}
		} else {
			res = PQexecPrepared(c, "b_sel", 1, sp, NULL, NULL, 0);
			if (PQresultStatus(res) != PGRES_TUPLES_OK) {
				snprintf(r->msg, sizeof(r->msg), "select: %s", PQerrorMessage(c));
				PQclear(res);
				goto out;
			}
		}
		n = PQntuples(res);
		if (n == 0) {
			PQclear(res);
			break;
		}
		/* 2. validate and build the array parameters */
		rc = page_arrays(res, n, &ids, &sellers, &amounts, last, sizeof(last), r);
		PQclear(res);
		if (rc < 0)
			goto out;
		rc = -1;
		wp[0] = ids.p;
		wp[1] = sellers.p;
		wp[2] = amounts.p;
		wp[3] = jobid;
		/* 3. one transaction: upsert, mark processed, commit */
		if (pipelined) {
			if (!PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) ||
			    !PQsendQueryPrepared(c, "b_ins", 4, wp, NULL, NULL, 0) ||
			    !PQsendQueryPrepared(c, "b_upd", 1, wp, NULL, NULL, 0) ||
			    !PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) ||
			    (pipelined == 2 && n == o->chunk &&
			     !PQsendQueryPrepared(c, "b_sel", 1, sp, NULL, NULL, 0)) ||
			    !PQpipelineSync(c)) {
				snprintf(r->msg, sizeof(r->msg), "send: %s", PQerrorMessage(c));
				goto out;
			}
			int bad = pipe_result(c, "begin", PGRES_COMMAND_OK, NULL, r);
			bad |= pipe_result(c, "upsert", PGRES_COMMAND_OK, NULL, r);
			bad |= pipe_result(c, "update", PGRES_COMMAND_OK, NULL, r);
			bad |= pipe_result(c, "commit", PGRES_COMMAND_OK, NULL, r);
			if (pipelined == 2 && n == o->chunk)
				bad |= pipe_result(c, "select", PGRES_TUPLES_OK, &next, r);
			bad |= pipe_sync(c, r);
			if (bad)
				goto out;
		} else {
			if (cmd_ok(c, PQexec(c, "BEGIN"), "begin", r) ||
			    cmd_ok(c, PQexecPrepared(c, "b_ins", 4, wp, NULL, NULL, 0), "upsert",
				   r) ||
			    cmd_ok(c, PQexecPrepared(c, "b_upd", 1, wp, NULL, NULL, 0), "update",
				   r) ||
			    cmd_ok(c, PQexec(c, "COMMIT"), "commit", r))
				goto out;
		}
		/* a COMMIT of a failed block answers ROLLBACK: make sure it committed */
		if (PQtransactionStatus(c) != PQTRANS_IDLE) {
			snprintf(r->msg, sizeof(r->msg), "commit did not end the transaction");
			goto out;
		}
		total += n;
		if (n < o->chunk)
			break;
	}
	r->rows = total;
	rc = 0;
out:
	PQclear(next);
	if (pipelined && PQpipelineStatus(c) != PQ_PIPELINE_OFF)
		PQexitPipelineMode(c);
	free(ids.p);
	free(sellers.p);
	free(amounts.p);
	return rc;
}

/*
 * libpq-2conn (issue 30, a study): one process, two connections, chunks
 * handed to them in turn, so that chunk N+1's statements run while chunk N's
 * are still running or committing. The commits stay in chunk order: each
 * chunk's transaction ends by moving a checkpoint row from version k to k+1,
 * and raises (division by zero) when the row was not at k. Chunk N+1 sends
 * its checkpoint only once N's answered, so it waits for N's row lock, and
 * fails if N did not commit. The ceiling of a
 * single-stream job that keeps two backends busy.
 */
struct slot {
	PGconn *c;
	int phase; /* 0 idle, 1 data statements out, 2 checkpoint and COMMIT out */
};

/* Read the chunk's BEGIN, upsert, update and checkpoint results: once the
 * checkpoint answered, this chunk holds the checkpoint row's lock. */
static int slot_to_checkpoint(struct slot *s, struct result *r)
{
	int bad;

	if (s->phase != 2)
		return 0;
	bad = pipe_result(s->c, "begin", PGRES_COMMAND_OK, NULL, r);
	bad |= pipe_result(s->c, "upsert", PGRES_COMMAND_OK, NULL, r);
	bad |= pipe_result(s->c, "update", PGRES_COMMAND_OK, NULL, r);
	bad |= pipe_result(s->c, "checkpoint", PGRES_TUPLES_OK, NULL, r);
	s->phase = bad ? -1 : 3;
	return bad ? -1 : 0;
}

static int slot_finish(struct slot *s, struct result *r)
{
	int bad;

	if (slot_to_checkpoint(s, r) < 0)
		return -1;
	if (s->phase != 3)
		return 0;
	s->phase = 0;
	bad = pipe_result(s->c, "commit", PGRES_COMMAND_OK, NULL, r);
	bad |= pipe_sync(s->c, r);
	if (!bad && PQtransactionStatus(s->c) != PQTRANS_IDLE) {
		snprintf(r->msg, sizeof(r->msg), "commit did not end the transaction");
		bad = 1;
	}
	return bad ? -1 : 0;
}

static int run_twoconn(PGconn *c, const struct options *o, long long run_id, struct result *r,
		       double *t0)
{
	char sel[512], last[32] = "0", jobid[24], ver[24];
	struct buf ids = { 0 }, sellers = { 0 }, amounts = { 0 };
	struct slot slots[2] = { { c, 0 }, { NULL, 0 } };
	long long total = 0, k = 0;
	int rc = -1;

	snprintf(jobid, sizeof(jobid), "%lld", run_id);
	snprintf(sel, sizeof(sel),
		 "SELECT id, seller_id, amount FROM account WHERE NOT processed AND id > $1 "
		 "ORDER BY id LIMIT %lld",
		 o->chunk);
	if (cmd_ok(c,
		   PQexec(c, "CREATE TABLE IF NOT EXISTS bench_ckpt (id int PRIMARY KEY, "
			     "last bigint, version bigint)"),
		   "ckpt table", r) ||
	    cmd_ok(c,
		   PQexec(c, "INSERT INTO bench_ckpt VALUES (1, 0, 0) ON CONFLICT (id) DO UPDATE "
			     "SET last = 0, version = 0"),
		   "ckpt row", r))
		goto out;
	slots[1].c = bench_connect(o->db);
	if (!slots[1].c) {
		snprintf(r->msg, sizeof(r->msg), "second connection failed");
		goto out;
	}
	*t0 = bench_now();
	for (int i = 0; i < 2; i++) {
		PGconn *sc = slots[i].c;

		if (prepare_loop(sc, sel, r) < 0 ||
		    prepare(sc, "b_ckpt",
			    /* by key alone, so that it waits for the row's lock; a
			     * condition on the version would skip the row unseen */
			    "WITH u AS (UPDATE bench_ckpt SET last = $1, version = version + 1 "
			    "WHERE id = 1 RETURNING version) "
			    "SELECT 1 / ((SELECT version FROM u) = $2::bigint + 1)::int",
			    2, r))
			goto out;
		if (!PQenterPipelineMode(sc)) {
			snprintf(r->msg, sizeof(r->msg), "enter pipeline mode: %s",
				 PQerrorMessage(sc));
			goto out;
		}
	}
	for (;; k++) {
		struct slot *s = &slots[k % 2];
		const char *sp[1] = { last };
		const char *wp[4], *cp[2];
		PGresult *res = NULL;
		int n;

		/* the connection's last chunk must be committed before it reads again */
		if (slot_finish(s, r) < 0)
			goto out;
		if (!PQsendQueryPrepared(s->c, "b_sel", 1, sp, NULL, NULL, 0) ||
		    !PQpipelineSync(s->c)) {
			snprintf(r->msg, sizeof(r->msg), "send: %s", PQerrorMessage(s->c));
			goto out;
		}
		if (pipe_result(s->c, "select", PGRES_TUPLES_OK, &res, r) < 0 ||
		    pipe_sync(s->c, r) < 0) {
			PQclear(res);
			goto out;
		}
		n = PQntuples(res);
		if (n == 0) {
			PQclear(res);
			break;
		}
		rc = page_arrays(res, n, &ids, &sellers, &amounts, last, sizeof(last), r);
		PQclear(res);
		if (rc < 0)
			goto out;
		rc = -1;
		snprintf(ver, sizeof(ver), "%lld", k);
		wp[0] = ids.p;
		wp[1] = sellers.p;
		wp[2] = amounts.p;
		wp[3] = jobid;
		cp[0] = last;
		cp[1] = ver;
		/* the data statements go out at once; the checkpoint only after the
		 * previous chunk's checkpoint answered (it then holds the row, and this
		 * one waits for its COMMIT), so that the commits keep chunk order */
		if (!PQsendQueryParams(s->c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) ||
		    !PQsendQueryPrepared(s->c, "b_ins", 4, wp, NULL, NULL, 0) ||
		    !PQsendQueryPrepared(s->c, "b_upd", 1, wp, NULL, NULL, 0) ||
		    PQflush(s->c) != 0) {
			snprintf(r->msg, sizeof(r->msg), "send: %s", PQerrorMessage(s->c));
			goto out;
		}
		if (slot_to_checkpoint(&slots[(k + 1) % 2], r) < 0)
			goto out;
		if (!PQsendQueryPrepared(s->c, "b_ckpt", 2, cp, NULL, NULL, 0) ||
		    !PQsendFlushRequest(s->c) ||
		    !PQsendQueryParams(s->c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) ||
		    !PQpipelineSync(s->c)) {
			snprintf(r->msg, sizeof(r->msg), "send: %s", PQerrorMessage(s->c));
			goto out;
		}
		s->phase = 2;
		if (slot_finish(&slots[(k + 1) % 2], r) < 0)
			goto out;
		total += n;
		if (n < o->chunk)
			break;
	}
	if (slot_finish(&slots[0], r) < 0 || slot_finish(&slots[1], r) < 0)
		goto out;
	r->rows = total;
	rc = 0;
out:
	for (int i = 0; i < 2; i++)
		if (slots[i].c && PQpipelineStatus(slots[i].c) != PQ_PIPELINE_OFF)
			PQexitPipelineMode(slots[i].c);
	if (slots[1].c)
		PQfinish(slots[1].c);
	free(ids.p);
	free(sellers.p);
	free(amounts.p);
	return rc;
}

/* ---------------------------------------------------------------- set-based */

static int run_ceiling(PGconn *c, long long run_id, struct result *r, double *t0)
{
	char sql[512];
	PGresult *res;

	snprintf(sql, sizeof(sql),
		 "INSERT INTO ledger (account_id, seller_id, amount, job_execution_id) "
		 "SELECT id, seller_id, amount, %lld FROM account WHERE NOT processed "
		 "ON CONFLICT (account_id) DO UPDATE SET seller_id = EXCLUDED.seller_id, "
		 "amount = EXCLUDED.amount, job_execution_id = EXCLUDED.job_execution_id",
		 run_id);
	*t0 = bench_now();
	if (cmd_ok(c, PQexec(c, "BEGIN"), "begin", r))
		return -1;
	res = PQexec(c, sql);
	if (PQresultStatus(res) == PGRES_COMMAND_OK)
		r->rows = atoll(PQcmdTuples(res));
	if (cmd_ok(c, res, "insert", r) ||
	    cmd_ok(c, PQexec(c, "UPDATE account SET processed = true WHERE NOT processed"),
		   "update", r) ||
	    cmd_ok(c, PQexec(c, "COMMIT"), "commit", r))
		return -1;
	if (PQtransactionStatus(c) != PQTRANS_IDLE) {
		snprintf(r->msg, sizeof(r->msg), "commit did not end the transaction");
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- one run */

/*
 * CB_BENCH_PERF_DIR=DIR: record each measured run with `perf record -g` on the
 * run's backend and this process, into DIR/<variant>-<pid>.data (for finding
 * where the time goes; the rates of a profiled run are not representative).
 */
static pid_t start_profiler(int v, int backend)
{
	const char *dir = getenv("CB_BENCH_PERF_DIR");
	char out[512], pids[64];
	pid_t p;

	if (!dir || !*dir)
		return 0;
	snprintf(out, sizeof(out), "%s/%s-%d.data", dir, vname[v], (int)getpid());
	snprintf(pids, sizeof(pids), "%d,%d", backend, (int)getpid());
	p = fork();
	if (p == 0) {
		execlp("perf", "perf", "record", "-q", "-g", "-F", "2000", "-p", pids, "-o", out,
		       (char *)NULL);
		_exit(127);
	}
	usleep(500000); /* let perf attach */
	return p;
}

static void stop_profiler(pid_t p)
{
	int status;

	if (p <= 0)
		return;
	kill(p, SIGINT);
	waitpid(p, &status, 0);
}

/* CPU of this process's reaped children (the worker processes of part-pK). */
static double children_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void child(int v, const struct options *o, long long run_id, int postmaster, int fd)
{
	struct result r;
	PGconn *c = bench_connect(o->db);
	int backend = PQbackendPID(c), rc = 0;
	double t0 = 0, t1, cpu0, cpu1, srv0, srv1, all0, all1, wal0, wal1, busy0, busy1;
	ssize_t w;

	pid_t prof;

	pid_t workers[4] = { 0 };
	int nworkers = part_procs(v) ? part_workers(v) : 0;

	memset(&r, 0, sizeof(r));
	for (int i = 0; i < nworkers; i++)
		workers[i] = start_worker(o);
	if (nworkers)
		wait_workers_ready(c, nworkers);
	prof = start_profiler(v, backend);
	wal0 = bench_wal_lsn(c);
	busy0 = bench_machine_busy();
	srv0 = bench_proc_cpu(backend, 0, NULL);
	all0 = bench_server_cpu(postmaster);
	cpu0 = bench_self_cpu() + children_cpu();
	switch (v) {
	case V_CBATCH:
	case V_CBATCH2:
	case V_PART_4ON2:
	case V_PART_T1:
	case V_PART_T2:
	case V_PART_T4:
	case V_PART_P1:
	case V_PART_P2:
	case V_PART_P4:
		rc = run_cbatch(c, o, v, run_id, &r, &t0);
		break;
	case V_SEQ:
		rc = run_handwritten(c, o, 0, run_id, &r, &t0);
		break;
	case V_PIPE:
		rc = run_handwritten(c, o, 1, run_id, &r, &t0);
		break;
	case V_PIPE1:
		rc = run_handwritten(c, o, 2, run_id, &r, &t0);
		break;
	case V_2CONN:
		rc = run_twoconn(c, o, run_id, &r, &t0);
		break;
	case V_CEILING:
		rc = run_ceiling(c, run_id, &r, &t0);
		break;
	default:
		t0 = bench_now();
		break;
	}
	t1 = bench_now();
	/* The workers are idle now (the launch waited for every partition). */
	for (int i = 0; i < nworkers; i++)
		kill(workers[i], SIGTERM);
	for (int i = 0; i < nworkers; i++) {
		int status;

		while (waitpid(workers[i], &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			snprintf(r.msg, sizeof(r.msg), "worker process ended with status %d",
				 status);
			rc = -1;
		}
	}
	cpu1 = bench_self_cpu() + children_cpu();
	srv1 = bench_proc_cpu(backend, 0, NULL);
	all1 = bench_server_cpu(postmaster);
	busy1 = bench_machine_busy();
	wal1 = bench_wal_lsn(c);
	stop_profiler(prof);
	r.ok = rc == 0;
	r.secs = t1 - t0;
	r.client_cpu = cpu1 - cpu0;
	r.server_cpu = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
	r.server_all = all0 >= 0 && all1 >= 0 ? all1 - all0 : -1;
	r.wal = wal0 >= 0 && wal1 >= 0 ? wal1 - wal0 : -1;
	r.other = busy1 - busy0 - r.client_cpu - r.server_all;
	if (r.other < 0)
		r.other = 0;
	PQfinish(c);
	w = write(fd, &r, sizeof(r));
	_exit(w == (ssize_t)sizeof(r) ? 0 : 1);
}

/*
 * On a shared machine, wait (at most @p max seconds) until the last second
 * was quiet: under 0.15 cores busy, whoever used them (the data preparation's
 * own writeback included). Returns the seconds waited.
 */
static double wait_for_quiet(double max)
{
	double start = bench_now();

	while (bench_now() - start < max) {
		double b0 = bench_machine_busy(), b1;

		usleep(500000);
		b1 = bench_machine_busy();
		if (b0 < 0 || b1 < 0 || (b1 - b0) / 0.5 < 0.15)
			break;
	}
	return bench_now() - start;
}

/* Run variant @p v in a child on freshly prepared data. @p rss_mb: its peak RSS. */
static int run_one(PGconn *prep, int v, const struct options *o, long long rows, struct result *r,
		   double *rss_mb)
{
	struct options oo = *o;
	int fds[2], status, postmaster = bench_postmaster_pid(prep);
	struct rusage ru;
	long long run_id;
	struct timespec ts;
	pid_t pid;
	ssize_t n;

	oo.rows = rows;
	prepare_data(prep, rows);
	if (o->quiet_wait > 0)
		wait_for_quiet(o->quiet_wait);
	clock_gettime(CLOCK_REALTIME, &ts);
	/* distinct across runs and across invocations on the same database */
	run_id = (long long)ts.tv_sec * 1000 + (++g_run_seq % 1000);
	fflush(stdout);
	fflush(stderr);
	if (pipe(fds) < 0) {
		perror("pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		close(fds[0]);
		child(v, &oo, run_id, postmaster, fds[1]);
	}
	close(fds[1]);
	memset(r, 0, sizeof(*r));
	do
		n = read(fds[0], r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	*rss_mb = (double)ru.ru_maxrss / 1024.0;
	if (n != (ssize_t)sizeof(*r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(r->msg, sizeof(r->msg), "the child died (status %d)", status);
		r->ok = 0;
	}
	if (r->ok && v != V_IDLE) {
		char msg[300];

		if (verify(prep, rows, msg, sizeof(msg)) < 0) {
			snprintf(r->msg, sizeof(r->msg), "%s", msg);
			r->ok = 0;
		}
	}
	if (!r->ok) {
		fprintf(stderr, "bench: %s failed: %s\n", vname[v], r->msg);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- modes */

static void print_run(int round, int v, long long rows, const struct result *r, double rss)
{
	printf("  round %d %-10s %9.0f rows/s  %7.2f s  client %5.2f us/row  server %5.2f "
	       "us/row (all %5.2f)  WAL %4.0f B/row  peak RSS %6.1f MB  others %4.2f cores\n",
	       round, vname[v], (double)rows / r->secs, r->secs, r->client_cpu * 1e6 / (double)rows,
	       r->server_cpu * 1e6 / (double)rows, r->server_all * 1e6 / (double)rows,
	       r->wal / (double)rows, rss, r->other / r->secs);
	fflush(stdout);
}

static int compare(PGconn *prep, const struct options *o)
{
	static double rate[NV][MAX_ROUNDS], cli[NV][MAX_ROUNDS], srv[NV][MAX_ROUNDS],
		all[NV][MAX_ROUNDS], rss[NV][MAX_ROUNDS], wal[NV][MAX_ROUNDS], oth[NV][MAX_ROUNDS];
	int order[NV], nvar = 0, base = -1;
	double med[NV] = { 0 };
	double t_start = bench_now();

	for (int v = 0; v < V_IDLE; v++)
		if (o->only[v])
			order[nvar++] = v;
	printf("\nledger: %lld rows, chunk %lld, %d rounds (after %d warm-up round%s, not "
	       "counted); variants run alternately on fresh data\n",
	       o->rows, o->chunk, o->rounds, o->warmup, o->warmup == 1 ? "" : "s");
	for (int round = 0; round < o->warmup; round++)
		for (int k = 0; k < nvar; k++) {
			struct result r;
			double mb;

			if (run_one(prep, order[k], o, o->rows, &r, &mb) < 0)
				return 1;
			printf("  warm-up %-10s %9.0f rows/s\n", vname[order[k]],
			       (double)o->rows / r.secs);
		}
	for (int round = 0; round < o->rounds; round++) {
		for (int k = 0; k < nvar; k++) {
			int v = order[(k + round) % nvar];
			struct result r;
			double mb;

			if (run_one(prep, v, o, o->rows, &r, &mb) < 0)
				return 1;
			rate[v][round] = (double)o->rows / r.secs;
			cli[v][round] = r.client_cpu * 1e6 / (double)o->rows;
			srv[v][round] = r.server_cpu * 1e6 / (double)o->rows;
			all[v][round] = r.server_all * 1e6 / (double)o->rows;
			rss[v][round] = mb;
			wal[v][round] = r.wal / (double)o->rows;
			oth[v][round] = r.other / r.secs;
			print_run(round + 1, v, o->rows, &r, mb);
		}
	}

	printf("\n| variant (chunk %lld, %lld rows) | rows/s median | min | max | client us/row | "
	       "server us/row (backend) | server us/row (all) | WAL B/row | peak RSS MB | "
	       "other load (cores) |\n",
	       o->chunk, o->rows);
	printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int k = 0; k < nvar; k++) {
		int v = order[k];
		double tmp[MAX_ROUNDS];

		memcpy(tmp, rate[v], sizeof(double) * (size_t)o->rounds);
		med[v] = bench_median(tmp, (size_t)o->rounds);
		printf("| %s | %.0f | %.0f | %.0f |", vname[v], med[v],
		       bench_min(rate[v], (size_t)o->rounds),
		       bench_max(rate[v], (size_t)o->rounds));
		memcpy(tmp, cli[v], sizeof(double) * (size_t)o->rounds);
		printf(" %.2f |", bench_median(tmp, (size_t)o->rounds));
		memcpy(tmp, srv[v], sizeof(double) * (size_t)o->rounds);
		printf(" %.2f |", bench_median(tmp, (size_t)o->rounds));
		memcpy(tmp, all[v], sizeof(double) * (size_t)o->rounds);
		printf(" %.2f |", bench_median(tmp, (size_t)o->rounds));
		memcpy(tmp, wal[v], sizeof(double) * (size_t)o->rounds);
		printf(" %.0f |", bench_median(tmp, (size_t)o->rounds));
		printf(" %.1f |", bench_max(rss[v], (size_t)o->rounds));
		memcpy(tmp, oth[v], sizeof(double) * (size_t)o->rounds);
		printf(" %.2f |\n", bench_median(tmp, (size_t)o->rounds));
	}
	if (o->only[V_SEQ] && o->only[V_PIPE])
		base = med[V_PIPE] >= med[V_SEQ] ? V_PIPE : V_SEQ;
	else if (o->only[V_SEQ])
		base = V_SEQ;
	else if (o->only[V_PIPE])
		base = V_PIPE;
	printf("\n");
	if (base >= 0)
		printf("baseline = %s (the faster hand-written loop)\n", vname[base]);
	if (o->only[V_CBATCH] && base >= 0) {
		printf("cbatch/baseline = %.3f (ratio of medians); per round:",
		       med[V_CBATCH] / med[base]);
		for (int i = 0; i < o->rounds; i++)
			printf(" %.3f", rate[V_CBATCH][i] / rate[base][i]);
		printf("\n");
	}
	if (o->only[V_CBATCH] && o->only[V_CEILING])
		printf("cbatch/ceiling  = %.3f\n", med[V_CBATCH] / med[V_CEILING]);
	for (int procs = 0; procs <= 1; procs++) {
		int v1 = procs ? V_PART_P1 : V_PART_T1;

		if (!o->only[v1] || !o->only[v1 + 1])
			continue;
		printf("partitioned, %s: 1 worker %.0f rows/s; 2 workers %.0f rows/s = %.2fx one",
		       procs ? "worker processes" : "threads", med[v1], med[v1 + 1],
		       med[v1 + 1] / med[v1]);
		if (o->only[v1 + 2])
			printf("; 4 workers %.0f rows/s = %.2fx one", med[v1 + 2],
			       med[v1 + 2] / med[v1]);
		if (o->only[V_CEILING])
			printf("; 2 workers / set-based = %.2f", med[v1 + 1] / med[V_CEILING]);
		if (o->only[V_CBATCH])
			printf("; 1 worker / cbatch = %.2f", med[v1] / med[V_CBATCH]);
		printf("\n");
	}
	if (o->only[V_CBATCH] && base >= 0) {
		/* client and server take turns (one waits for the other): the CPU a
		 * run needs predicts its rate on a quiet machine, and varies far less
		 * than wall time does on a shared one */
		double cpu[2][MAX_ROUNDS];

		for (int i = 0; i < o->rounds; i++) {
			cpu[0][i] = cli[V_CBATCH][i] + all[V_CBATCH][i];
			cpu[1][i] = cli[base][i] + all[base][i];
		}
		double c0 = bench_median(cpu[0], (size_t)o->rounds);
		double c1 = bench_median(cpu[1], (size_t)o->rounds);

		printf("CPU per row (client + whole server, medians): cbatch %.2f us, baseline %.2f "
		       "us; baseline/cbatch = %.3f\n",
		       c0, c1, c1 / c0);
	}
	printf("(wall time of this comparison, data preparation included: %.0f s)\n",
	       bench_now() - t_start);
	return 0;
}

static int rss_scaling(PGconn *prep, const struct options *o)
{
	static const long long sizes[] = { 100000, 1000000, 5000000 };
	double rss[4], lo, hi;
	struct result r;
	double t_start = bench_now();

	printf("\nrss-scaling: cbatch ledger job, chunk %lld, one run per size\n", o->chunk);
	for (int i = 0; i < o->warmup; i++)
		if (run_one(prep, V_CBATCH, o, 100000, &r, &rss[0]) < 0)
			return 1;
	if (run_one(prep, V_IDLE, o, 1000, &r, &rss[3]) < 0)
		return 1;
	printf("  floor: a child that only connects: peak RSS %.1f MB\n", rss[3]);
	for (int i = 0; i < 3; i++) {
		if (run_one(prep, V_CBATCH, o, sizes[i], &r, &rss[i]) < 0)
			return 1;
		print_run(1, V_CBATCH, sizes[i], &r, rss[i]);
	}
	printf("\n| rows | peak RSS MB (cbatch, chunk %lld) |\n|---:|---:|\n", o->chunk);
	for (int i = 0; i < 3; i++)
		printf("| %lld | %.1f |\n", sizes[i], rss[i]);
	lo = bench_min(rss, 3);
	hi = bench_max(rss, 3);
	printf("\nspread: max/min = %.3f (%s 10%%); largest %.1f MB (%s 16 MB)\n", hi / lo,
	       hi / lo <= 1.10 ? "within" : "NOT within", hi, hi < 16 ? "under" : "NOT under");
	printf("(wall time: %.0f s)\n", bench_now() - t_start);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cbatch-bench [--rows N] [--chunk C] [--rounds R] [--warmup W] [--db CONNINFO]\n"
		"                    [--only V[,V...]] [--mode compare|rss-scaling]\n"
		"  --rows N    source rows (default 500000; 500k and 5M are accepted)\n"
		"  --chunk C   chunk size / page size of every variant (default 1000)\n"
		"  --rounds R  rounds; each runs every variant once (default 3)\n"
		"  --warmup W  uncounted rounds first (default 1): a new cluster creates its WAL\n"
		"              segments and fills its caches during the first runs\n"
		"  --quiet-wait S  before each run, wait up to S seconds (default 15) for a quiet\n"
		"              machine (under 0.15 cores busy for half a second); 0: don't\n"
		"  --db        libpq conninfo (default: CBATCH_DB, then libpq's PG* variables)\n"
		"  --only      variants: cbatch, cbatch-2c, libpq-seq, libpq-pipe, set-based,\n"
		"              part-t1, part-t2, part-t4, part-4on2, part-p1, part-p2, part-p4\n"
		"              (default all), libpq-pipe1, libpq-2conn\n"
		"  --mode rss-scaling  run only cbatch at 100k, 1M and 5M rows, print peak RSS\n"
		"The database must be disposable: the tables account and ledger are rebuilt.\n");
}

int main(int argc, char **argv)
{
	struct options o = { 500000, 1000, 3, 1, 15, NULL, { 0 }, 0 };
	cb_error err = CB_ERROR_INIT;
	PGconn *prep;
	int rc;

	for (int v = 0; v < V_IDLE; v++)
		o.only[v] =
			v != V_PIPE1 && v != V_2CONN; /* studies of issue 30: asked for by name */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (!val) {
			usage(stderr);
			return 2;
		}
		i++;
		if (strcmp(a, "--rows") == 0) {
			o.rows = bench_count(a, val);
		} else if (strcmp(a, "--chunk") == 0) {
			o.chunk = bench_count(a, val);
			if (o.chunk > 1000000) {
				fprintf(stderr, "bench: --chunk at most 1000000\n");
				return 2;
			}
		} else if (strcmp(a, "--rounds") == 0) {
			o.rounds = (int)bench_count(a, val);
			if (o.rounds > MAX_ROUNDS) {
				fprintf(stderr, "bench: --rounds at most %d\n", MAX_ROUNDS);
				return 2;
			}
		} else if (strcmp(a, "--warmup") == 0) {
			o.warmup = atoi(val);
			if (o.warmup < 0 || o.warmup > 10) {
				fprintf(stderr, "bench: --warmup 0..10\n");
				return 2;
			}
		} else if (strcmp(a, "--quiet-wait") == 0) {
			o.quiet_wait = atof(val);
		} else if (strcmp(a, "--db") == 0) {
			o.db = val;
		} else if (strcmp(a, "--mode") == 0) {
			if (strcmp(val, "rss-scaling") == 0)
				o.rss_scaling = 1;
			else if (strcmp(val, "compare") != 0) {
				fprintf(stderr, "bench: unknown mode '%s'\n", val);
				return 2;
			}
		} else if (strcmp(a, "--only") == 0) {
			char *list = strdup(val), *save = NULL, *t;

			memset(o.only, 0, sizeof(o.only));
			for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				int v;

				for (v = 0; v < V_IDLE; v++)
					if (strcmp(t, vname[v]) == 0)
						break;
				if (v == V_IDLE) {
					fprintf(stderr, "bench: unknown variant '%s'\n", t);
					return 2;
				}
				o.only[v] = 1;
			}
			free(list);
		} else {
			usage(stderr);
			return 2;
		}
	}

	prep = bench_connect(o.db);
	bench_exec(prep, "SET client_min_messages = warning");
	if (cb_repo_schema_init(prep, NULL, NULL, &err) < 0) {
		fprintf(stderr, "bench: schema init: %s\n", err.message);
		return 1;
	}
	/* the example's own schema file, embedded at build time */
	bench_exec(prep, cb_example_schemas[0].sql);
	bench_print_machine(prep);
	rc = o.rss_scaling ? rss_scaling(prep, &o) : compare(prep, &o);
	PQfinish(prep);
	return rc;
}
