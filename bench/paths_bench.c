/*
 * cbatch-paths-bench: the built-in paths other than the ledger, each against
 * its own limit on the same data in the same run.
 *
 *   cbatch-paths-bench [--rows N] [--rounds R] [--chunk C] [--db CONNINFO]
 *                      [--only queue,csv-in,jsonl-in,csv-out,jsonl-out,totals]
 *
 * Paths (cbatch: a job launched with cb_job_launch, chunk C, its launch, lock,
 * heartbeat and per-chunk checkpoint included; limit: what a person would
 * write by hand, or the single statement):
 *   queue      the work-queue reader (FOR UPDATE SKIP LOCKED) and the strict
 *              status writer READY -> DONE, vs a hand-written claim loop:
 *              UPDATE ... WHERE id = ANY (ARRAY(SELECT ... FOR UPDATE SKIP
 *              LOCKED LIMIT C)) RETURNING, one transaction per claim, until
 *              none
 *   csv-in     the CSV reader into the COPY writer, vs COPY FROM STDIN
 *              (FORMAT csv, HEADER) of the same file, one transaction
 *   jsonl-in   the JSON lines reader into the COPY writer, vs the same file
 *              COPY'd into a jsonb staging table and INSERT ... SELECT into
 *              the target, one transaction (COPY reads no JSON itself)
 *   csv-out    the keyset reader into the CSV writer, vs COPY (SELECT ...
 *              ORDER BY id) TO STDOUT (FORMAT csv, HEADER) written to a file
 *   jsonl-out  the keyset reader into the JSON lines writer, vs COPY (SELECT
 *              json_build_object(...) ... ORDER BY id) TO STDOUT to a file
 *   totals     the sales_totals example (examples/sales_totals, one
 *              partition: the keyset reader, the accumulating upsert and the
 *              strict transition), vs its set-based pair in one transaction:
 *              INSERT ... SELECT ... GROUP BY ... ON CONFLICT DO UPDATE
 *              (total + sum, count + n, least, greatest), UPDATE processed
 *
 * For every path and round, the data is rebuilt (tables TRUNCATEd and
 * refilled, VACUUM ANALYZE, CHECKPOINT; output files removed) before each of
 * the two runs, which alternate: cbatch first in even rounds, the limit first
 * in odd ones. Every run is verified (counts and sums). Printed: rows/s
 * (median [min, max]) of each side, and the ratio cbatch / limit per pair
 * (median [min, max]): pairs share the moment of the machine, so their ratio
 * varies less than either rate on a shared machine.
 */
#include <cbatch.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "examples.h"

enum {
	P_QUEUE,
	P_CSV_IN,
	P_JSONL_IN,
	P_CSV_OUT,
	P_JSONL_OUT,
	P_TOTALS,
	NP
};
static const char *const pname[NP] = { "queue",   "csv-in",    "jsonl-in",
				       "csv-out", "jsonl-out", "totals" };
static const char *const plimit[NP] = {
	"hand-written SKIP LOCKED claim loop",  "COPY FROM (csv)",
	"COPY FROM into jsonb + INSERT SELECT", "COPY TO (csv)",
	"COPY TO (json_build_object)",          "INSERT SELECT GROUP BY ON CONFLICT + UPDATE",
};

#define MAX_ROUNDS 100

struct options {
	long long rows, chunk;
	int rounds;
	const char *db;
	int only[NP], any_only;
	char dir[256];
};

static struct options g;
static long long g_run_seq;

static void path_file(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", g.dir, name);
}

/* ---------------------------------------------------------------- jobs */

static const char *const queue_cols[] = { "id", "payload", NULL };
static const char *const id_key[] = { "id", NULL };
static const char *const in_cols[] = { "id", "name", "amount", NULL };

static int bind_id(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		   cb_error *err)
{
	(void)ctx, (void)sc, (void)err;
	cb_values_set(out, 0, cb_row_get(item, 0), cb_row_len(item, 0));
	return 0;
}

static int queue_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_queue_options qo = CB_PG_QUEUE_OPTIONS_INIT;
	cb_pg_status_options so = CB_PG_STATUS_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user, (void)sc;
	qo.table = "bench_queue";
	qo.columns = queue_cols;
	qo.key_columns = id_key;
	qo.where = "status = 'READY'";
	if ((rc = cb_pg_queue_reader_new(&parts->reader, &qo, err)) < 0)
		return rc;
	so.table = "bench_queue";
	so.key_columns = id_key;
	so.set_column = "status";
	so.set_value = "DONE";
	so.expect_column = "status";
	so.expect_value = "READY";
	so.bind = bind_id;
	if ((rc = cb_pg_status_writer_new(&w, &so, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static int bind_csv(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		    cb_error *err)
{
	const cb_csv_record *rec = item;

	(void)ctx, (void)sc, (void)err;
	for (size_t c = 0; c < 3; c++)
		cb_values_set(out, c, rec->fields[c].data, (int)rec->fields[c].len);
	return 0;
}

static int bind_json(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
		     cb_error *err)
{
	const json_t *o = item;
	char amount[32];

	(void)ctx, (void)sc, (void)err;
	snprintf(amount, sizeof(amount), "%.2f", json_real_value(json_object_get(o, "amount")));
	cb_values_set_long(out, 0, json_integer_value(json_object_get(o, "id")));
	cb_values_set(out, 1, json_string_value(json_object_get(o, "name")), -1);
	cb_values_set(out, 2, amount, -1);
	return 0;
}

static int file_in_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			 cb_error *err)
{
	cb_pg_copy_options co = CB_PG_COPY_OPTIONS_INIT;
	cb_writer w;
	int rc, jsonl = user != NULL;

	if (jsonl) {
		cb_jsonl_options ro = CB_JSONL_OPTIONS_INIT;

		ro.path = cb_step_param(sc, "file");
		rc = cb_jsonl_reader_new(&parts->reader, &ro, err);
	} else {
		cb_csv_options ro = CB_CSV_OPTIONS_INIT;

		ro.path = cb_step_param(sc, "file");
		ro.header = 1;
		rc = cb_csv_reader_new(&parts->reader, &ro, err);
	}
	if (rc < 0)
		return rc;
	co.table = "bench_in";
	co.columns = in_cols;
	co.ncolumns = 3;
	co.bind = jsonl ? bind_json : bind_csv;
	if ((rc = cb_pg_copy_writer_new(&w, &co, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static int format_csv(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	(void)ctx, (void)err;
	for (int i = 0; i < 3; i++)
		cb_csv_row_add(row, cb_row_get(item, i), (size_t)cb_row_len(item, i));
	return 0;
}

static int format_json(void *ctx, const void *item, json_t **out, cb_error *err)
{
	(void)ctx;
	*out = json_pack("{s:I,s:s,s:f}", "id", (json_int_t)atoll(cb_row_get(item, 0)), "name",
			 cb_row_get(item, 1), "amount", strtod(cb_row_get(item, 2), NULL));
	return *out ? 0 : cb_error_set(err, CB_ENOMEM, "out of memory");
}

static int file_out_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			  cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_writer w;
	int rc;

	ro.table = "bench_src";
	ro.columns = in_cols;
	ro.key_columns = id_key;
	if ((rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err)) < 0)
		return rc;
	if (user) {
		cb_jsonl_writer_options wo = CB_JSONL_WRITER_OPTIONS_INIT;

		wo.path = cb_step_param(sc, "file");
		wo.format = format_json;
		/* numeric(12,2) as a double: 15 digits print 12.34 back as 12.34
		 * (jansson's default 17 would write 12.339999999999999) */
		wo.dump_flags = JSON_REAL_PRECISION(15);
		rc = cb_jsonl_writer_new(&w, &wo, err);
	} else {
		cb_csv_writer_options wo = CB_CSV_WRITER_OPTIONS_INIT;

		wo.path = cb_step_param(sc, "file");
		wo.header = in_cols;
		wo.nheader = 3;
		wo.format = format_csv;
		rc = cb_csv_writer_new(&w, &wo, err);
	}
	if (rc < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static int add_job(cb_registry *reg, const char *name,
		   int (*build)(void *, const cb_step_context *, cb_chunk_parts *, cb_error *),
		   void *user, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job;
	int rc;

	step.name = "path";
	step.build = build;
	step.user = user;
	step.chunk_size = 1000;
	if ((rc = cb_registry_new_job(&job, reg, name, err)) < 0 ||
	    (rc = cb_job_add_step(job, &step, err)) < 0)
		return rc;
	return 0;
}

static int register_jobs(cb_registry *reg, cb_error *err)
{
	static int jsonl = 1;
	int rc;

	if ((rc = add_job(reg, "paths_queue", queue_build, NULL, err)) < 0 ||
	    (rc = add_job(reg, "paths_csv_in", file_in_build, NULL, err)) < 0 ||
	    (rc = add_job(reg, "paths_jsonl_in", file_in_build, &jsonl, err)) < 0 ||
	    (rc = add_job(reg, "paths_csv_out", file_out_build, NULL, err)) < 0 ||
	    (rc = add_job(reg, "paths_jsonl_out", file_out_build, &jsonl, err)) < 0)
		return rc;
	return sales_totals_register(reg, err);
}

/* ---------------------------------------------------------------- data */

static void write_inputs(void)
{
	char path[300];
	FILE *f;

	path_file(path, sizeof(path), "in.csv");
	if (!(f = fopen(path, "w"))) {
		perror(path);
		exit(1);
	}
	fprintf(f, "id,name,amount\n");
	for (long long i = 1; i <= g.rows; i++)
		fprintf(f, "%lld,name %lld,%lld.%02lld\n", i, i * 7919 % 100003,
			1 + i * 7919 % 99999 / 100, i % 100);
	fclose(f);
	path_file(path, sizeof(path), "in.jsonl");
	if (!(f = fopen(path, "w"))) {
		perror(path);
		exit(1);
	}
	for (long long i = 1; i <= g.rows; i++)
		fprintf(f, "{\"id\":%lld,\"name\":\"name %lld\",\"amount\":%lld.%02lld}\n", i,
			i * 7919 % 100003, 1 + i * 7919 % 99999 / 100, i % 100);
	fclose(f);
}

static void create_tables(PGconn *c)
{
	char sql[1024];

	bench_exec(c, "SET client_min_messages = warning");
	bench_exec(c, "DROP TABLE IF EXISTS bench_queue, bench_in, bench_src, bench_stage");
	bench_exec(c, "CREATE TABLE bench_queue (id bigint PRIMARY KEY, payload text NOT NULL, "
		      "status text NOT NULL DEFAULT 'READY')");
	bench_exec(c,
		   "CREATE INDEX bench_queue_ready_ix ON bench_queue (id) WHERE status = 'READY'");
	bench_exec(c, "CREATE TABLE bench_in (id bigint PRIMARY KEY, name text NOT NULL, "
		      "amount numeric(12,2) NOT NULL)");
	bench_exec(c, "CREATE TABLE bench_src (id bigint PRIMARY KEY, name text NOT NULL, "
		      "amount numeric(12,2) NOT NULL)");
	bench_exec(c, "CREATE TABLE bench_stage (doc jsonb)");
	snprintf(sql, sizeof(sql),
		 "INSERT INTO bench_src SELECT g, 'name ' || (g * 7919 %% 100003), "
		 "1 + (g * 7919 %% 99999) / 100 + (g %% 100) / 100.0 "
		 "FROM generate_series(1, %lld::bigint) g",
		 g.rows);
	bench_exec(c, sql);
	bench_exec(c, "VACUUM ANALYZE bench_src");
	/* the sales_totals example's own schema file, embedded at build time */
	bench_exec(c, cb_example_schemas[0].sql);
}

static void prepare(PGconn *c, int p)
{
	char sql[1024], path[300];

	switch (p) {
	case P_QUEUE:
		bench_exec(c, "TRUNCATE bench_queue");
		snprintf(sql, sizeof(sql),
			 "INSERT INTO bench_queue (id, payload) SELECT g, md5(g::text) "
			 "FROM generate_series(1, %lld::bigint) g",
			 g.rows);
		bench_exec(c, sql);
		bench_exec(c, "VACUUM ANALYZE bench_queue");
		break;
	case P_CSV_IN:
	case P_JSONL_IN:
		bench_exec(c, "TRUNCATE bench_in, bench_stage");
		break;
	case P_CSV_OUT:
	case P_JSONL_OUT:
		path_file(path, sizeof(path), p == P_CSV_OUT ? "out.csv" : "out.jsonl");
		if (unlink(path) < 0 && errno != ENOENT) {
			perror(path);
			exit(1);
		}
		break;
	case P_TOTALS:
		/* 1,000 customers whose totals exist already: the upsert adds */
		bench_exec(c, "TRUNCATE invoice, customer_total");
		snprintf(sql, sizeof(sql),
			 "INSERT INTO invoice (id, customer_id, amount, issued_at) "
			 "SELECT g, 1 + (g * 7919) %% 1000, (1 + (g * 7919) %% 99999) / 100.0, "
			 "timestamptz '2026-06-01' + g * interval '1 second' "
			 "FROM generate_series(1, %lld::bigint) g",
			 g.rows);
		bench_exec(c, sql);
		bench_exec(c, "INSERT INTO customer_total SELECT g, 100, 1, "
			      "timestamptz '2026-05-01', timestamptz '2026-05-01' "
			      "FROM generate_series(1, 1000) g");
		bench_exec(c, "VACUUM ANALYZE invoice");
		bench_exec(c, "VACUUM ANALYZE customer_total");
		break;
	}
	bench_exec(c, "CHECKPOINT");
}

static long long count(PGconn *c, const char *sql)
{
	char buf[64];

	bench_value(c, sql, buf, sizeof(buf));
	return atoll(buf);
}

static long long file_lines(const char *name)
{
	char path[300];
	long long n = 0;
	FILE *f;
	int ch;

	path_file(path, sizeof(path), name);
	if (!(f = fopen(path, "r")))
		return -1;
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Every row done once, the same result either way. */
static int verify(PGconn *c, int p, char *msg, size_t size)
{
	long long n = g.rows, got = -1, want = n;

	switch (p) {
	case P_QUEUE:
		got = count(
			c,
			"SELECT count(*) FILTER (WHERE status = 'DONE') "
			"- count(*) FILTER (WHERE status <> 'DONE') * 1000000000 FROM bench_queue");
		break;
	case P_CSV_IN:
	case P_JSONL_IN:
		got = count(c, "SELECT count(*) FROM bench_in i JOIN bench_src s USING (id) "
			       "WHERE i.name = s.name AND i.amount = s.amount");
		break;
	case P_CSV_OUT:
		got = file_lines("out.csv");
		want = n + 1;
		break;
	case P_JSONL_OUT:
		got = file_lines("out.jsonl");
		break;
	case P_TOTALS:
		got = count(c, "SELECT CASE WHEN (SELECT sum(total) FROM customer_total) = "
			       "100000 + (SELECT sum(amount) FROM invoice) AND "
			       "(SELECT sum(invoice_count) FROM customer_total) = 1000 + "
			       "(SELECT count(*) FROM invoice WHERE processed) "
			       "THEN (SELECT count(*) FROM invoice WHERE processed) ELSE -1 END");
		break;
	}
	if (got != want) {
		snprintf(msg, size, "verify %s: %lld, expected %lld", pname[p], got, want);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- cbatch */

static int run_cbatch(PGconn *c, int p, char *msg, size_t size)
{
	static const char *const job_of[NP] = { "paths_queue",     "paths_csv_in",
						"paths_jsonl_in",  "paths_csv_out",
						"paths_jsonl_out", "sales_totals" };
	static const char *const file_of[NP] = { NULL,      "in.csv",    "in.jsonl",
						 "out.csv", "out.jsonl", NULL };
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;
	cb_params *params = NULL;
	cb_launch_options lo = CB_LAUNCH_OPTIONS_INIT;
	cb_job_result res;
	char run[64], path[300];
	int rc = -1;

	snprintf(run, sizeof(run), "%lld-%d-%lld", (long long)time(NULL), (int)getpid(),
		 ++g_run_seq);
	if (cb_registry_new(&reg, &err) < 0 || register_jobs(reg, &err) < 0 ||
	    cb_params_new(&params, &err) < 0 ||
	    (p == P_TOTALS ? cb_params_add_string(params, "asOf", run, 1, &err) :
			     cb_params_add_string(params, "bench.run", run, 1, &err)) < 0 ||
	    cb_params_add_long(params, "chunk.size", g.chunk, 0, &err) < 0 ||
	    (p == P_TOTALS && (cb_params_add_long(params, "partition.count", 1, 0, &err) < 0 ||
			       cb_params_add_long(params, "partition.threads", 1, 0, &err) < 0))) {
		snprintf(msg, size, "setup: %s", err.message);
		goto done;
	}
	if (file_of[p]) {
		path_file(path, sizeof(path), file_of[p]);
		if (cb_params_add_string(params, "file", path, 0, &err) < 0) {
			snprintf(msg, size, "setup: %s", err.message);
			goto done;
		}
	}
	if (cb_job_launch(&res, c, cb_registry_find(reg, job_of[p]), params, &lo, &err) < 0)
		snprintf(msg, size, "launch: %s", err.message);
	else if (res.status != CB_STATUS_COMPLETED)
		snprintf(msg, size, "execution %lld ended %s: %s", res.job_execution_id,
			 cb_status_name(res.status), res.exit_message);
	else
		rc = 0;
done:
	cb_params_free(params);
	cb_registry_free(reg);
	return rc;
}

/* ---------------------------------------------------------------- limits */

static int check(PGconn *c, PGresult *res, ExecStatusType want, char *msg, size_t size)
{
	int ok = PQresultStatus(res) == want;

	if (!ok)
		snprintf(msg, size, "%s", PQerrorMessage(c));
	PQclear(res);
	return ok ? 0 : -1;
}

static int copy_in(PGconn *c, const char *sql, const char *file, char *msg, size_t size)
{
	char path[300], buf[65536];
	size_t n;
	FILE *f;
	int rc;

	path_file(path, sizeof(path), file);
	if (check(c, PQexec(c, sql), PGRES_COPY_IN, msg, size) < 0)
		return -1;
	if (!(f = fopen(path, "r"))) {
		snprintf(msg, size, "%s: %s", path, strerror(errno));
		PQputCopyEnd(c, "no file");
		PQclear(PQgetResult(c));
		return -1;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (PQputCopyData(c, buf, (int)n) != 1)
			break;
	fclose(f);
	PQputCopyEnd(c, NULL);
	rc = check(c, PQgetResult(c), PGRES_COMMAND_OK, msg, size);
	PQclear(PQgetResult(c));
	return rc;
}

static int copy_out(PGconn *c, const char *sql, const char *file, char *msg, size_t size)
{
	char path[300], *row;
	FILE *f;
	int n, rc;

	path_file(path, sizeof(path), file);
	if (!(f = fopen(path, "w"))) {
		snprintf(msg, size, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (check(c, PQexec(c, sql), PGRES_COPY_OUT, msg, size) < 0) {
		fclose(f);
		return -1;
	}
	while ((n = PQgetCopyData(c, &row, 0)) > 0) {
		fwrite(row, 1, (size_t)n, f);
		PQfreemem(row);
	}
	fclose(f);
	rc = check(c, PQgetResult(c), PGRES_COMMAND_OK, msg, size);
	PQclear(PQgetResult(c));
	return rc;
}

static int run_limit(PGconn *c, int p, char *msg, size_t size)
{
	char chunk[24];
	const char *v[1] = { chunk };
	PGresult *res;
	int rc = 0, rows;

	snprintf(chunk, sizeof(chunk), "%lld", g.chunk);
	switch (p) {
	case P_QUEUE:
		/* one claim per transaction (autocommit), the rows to the client.
		 * `id = ANY (ARRAY(subquery))`, not `id IN (subquery)`: the IN form
		 * plans a hash semi join over a sequential scan of the whole queue
		 * at every claim (quadratic in the queue's length) */
		do {
			res = PQexecParams(
				c,
				"UPDATE bench_queue SET status = 'DONE' WHERE id = ANY "
				"(ARRAY(SELECT id FROM bench_queue WHERE status = 'READY' "
				"ORDER BY id LIMIT $1::int FOR UPDATE SKIP LOCKED)) "
				"AND status = 'READY' RETURNING id, payload",
				1, NULL, v, NULL, NULL, 0);
			rows = PQresultStatus(res) == PGRES_TUPLES_OK ? PQntuples(res) : -1;
			rc = check(c, res, PGRES_TUPLES_OK, msg, size);
		} while (rc == 0 && rows > 0);
		return rc;
	case P_CSV_IN:
		return copy_in(c,
			       "COPY bench_in (id, name, amount) FROM STDIN (FORMAT csv, HEADER)",
			       "in.csv", msg, size);
	case P_JSONL_IN:
		/* CSV with quote and delimiter bytes that JSON text never holds:
		 * each line is one field, backslashes untouched */
		if (check(c, PQexec(c, "BEGIN"), PGRES_COMMAND_OK, msg, size) < 0 ||
		    copy_in(c,
			    "COPY bench_stage (doc) FROM STDIN "
			    "(FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')",
			    "in.jsonl", msg, size) < 0 ||
		    check(c,
			  PQexec(c, "INSERT INTO bench_in (id, name, amount) "
				    "SELECT (doc->>'id')::bigint, doc->>'name', "
				    "(doc->>'amount')::numeric FROM bench_stage"),
			  PGRES_COMMAND_OK, msg, size) < 0) {
			PQclear(PQexec(c, "ROLLBACK"));
			return -1;
		}
		return check(c, PQexec(c, "COMMIT"), PGRES_COMMAND_OK, msg, size);
	case P_CSV_OUT:
		return copy_out(c,
				"COPY (SELECT id, name, amount FROM bench_src ORDER BY id) "
				"TO STDOUT (FORMAT csv, HEADER)",
				"out.csv", msg, size);
	case P_JSONL_OUT:
		return copy_out(c,
				"COPY (SELECT json_build_object('id', id, 'name', name, "
				"'amount', amount) FROM bench_src ORDER BY id) TO STDOUT",
				"out.jsonl", msg, size);
	case P_TOTALS:
		return check(c,
			     PQexec(c, "BEGIN; "
				       "INSERT INTO customer_total AS t "
				       "SELECT customer_id, sum(amount), count(*), min(issued_at), "
				       "max(issued_at) FROM invoice WHERE NOT processed "
				       "GROUP BY customer_id "
				       "ON CONFLICT (customer_id) DO UPDATE SET "
				       "total = t.total + EXCLUDED.total, "
				       "invoice_count = t.invoice_count + EXCLUDED.invoice_count, "
				       "first_at = least(t.first_at, EXCLUDED.first_at), "
				       "last_at = greatest(t.last_at, EXCLUDED.last_at); "
				       "UPDATE invoice SET processed = true WHERE NOT processed; "
				       "COMMIT"),
			     PGRES_COMMAND_OK, msg, size);
	}
	return rc;
}

/* ---------------------------------------------------------------- driver */

static double run_timed(PGconn *c, int p, int limit, char *msg, size_t size)
{
	double t0;
	int rc;

	prepare(c, p);
	t0 = bench_now();
	rc = limit ? run_limit(c, p, msg, size) : run_cbatch(c, p, msg, size);
	t0 = bench_now() - t0;
	if (rc < 0 || verify(c, p, msg, size) < 0)
		return -1;
	return t0;
}

static int usage(FILE *f)
{
	fprintf(f,
		"usage: cbatch-paths-bench [--rows N] [--rounds R] [--chunk C] [--db CONNINFO]\n"
		"                          [--only queue,csv-in,jsonl-in,csv-out,jsonl-out,totals]\n"
		"  --rows N    rows per path (default 100000)\n"
		"  --rounds R  pairs per path, alternating which runs first (default 5)\n"
		"  --chunk C   chunk size of the cbatch jobs and the claim loop (default 1000)\n");
	return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	static double cb[NP][MAX_ROUNDS], lim[NP][MAX_ROUNDS], ratio[NP][MAX_ROUNDS];
	char msg[1024];
	PGconn *c;
	int failed = 0;

	g.rows = 100000;
	g.rounds = 5;
	g.chunk = 1000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0)
			return usage(stdout);
		if (!val)
			return usage(stderr);
		i++;
		if (strcmp(a, "--rows") == 0)
			g.rows = bench_count(a, val);
		else if (strcmp(a, "--rounds") == 0)
			g.rounds = (int)bench_count(a, val);
		else if (strcmp(a, "--chunk") == 0)
			g.chunk = bench_count(a, val);
		else if (strcmp(a, "--db") == 0)
			g.db = val;
		else if (strcmp(a, "--only") == 0) {
			for (int p = 0; p < NP; p++)
				if (strstr(val, pname[p]))
					g.only[p] = g.any_only = 1;
		} else
			return usage(stderr);
	}
	if (g.rounds > MAX_ROUNDS)
		g.rounds = MAX_ROUNDS;
	snprintf(g.dir, sizeof(g.dir), "/tmp/cbatch-paths-bench.%d", (int)getpid());
	if (mkdir(g.dir, 0700) < 0) {
		perror(g.dir);
		return 1;
	}
	c = bench_connect(g.db);
	bench_exec(c, "SET client_min_messages = warning");
	{
		cb_error err = CB_ERROR_INIT;

		if (cb_repo_schema_init(c, NULL, NULL, &err) < 0) {
			fprintf(stderr, "paths-bench: schema init: %s\n", err.message);
			return 1;
		}
	}
	create_tables(c);
	write_inputs();
	printf("\n## cbatch-paths-bench: %lld rows per path, chunk %lld, %d rounds (pairs, "
	       "alternating)\n\n",
	       g.rows, g.chunk, g.rounds);
	for (int p = 0; p < NP; p++) {
		if (g.any_only && !g.only[p])
			continue;
		for (int r = 0; r < g.rounds && !failed; r++) {
			for (int k = 0; k < 2 && !failed; k++) {
				int limit = (r + k) % 2; /* cbatch first in even rounds */
				double t = run_timed(c, p, limit, msg, sizeof(msg));

				if (t < 0) {
					fprintf(stderr, "paths-bench: %s, %s: %s\n", pname[p],
						limit ? "limit" : "cbatch", msg);
					failed = 1;
				}
				(limit ? lim : cb)[p][r] = (double)g.rows / t;
			}
			ratio[p][r] = cb[p][r] / lim[p][r];
		}
	}
	if (!failed) {
		printf("| path | limit | cbatch rows/s | limit rows/s | cbatch / limit (pairs: "
		       "median [min, max]) |\n|---|---|---:|---:|---|\n");
		for (int p = 0; p < NP; p++) {
			int n = g.rounds;

			if (g.any_only && !g.only[p])
				continue;
			printf("| %s | %s | %.0f [%.0f, %.0f] | %.0f [%.0f, %.0f] | **%.3f** [%.3f, "
			       "%.3f] |\n",
			       pname[p], plimit[p], bench_median(cb[p], (size_t)n),
			       bench_min(cb[p], (size_t)n), bench_max(cb[p], (size_t)n),
			       bench_median(lim[p], (size_t)n), bench_min(lim[p], (size_t)n),
			       bench_max(lim[p], (size_t)n), bench_median(ratio[p], (size_t)n),
			       bench_min(ratio[p], (size_t)n), bench_max(ratio[p], (size_t)n));
		}
	}
	PQfinish(c);
	for (size_t i = 0; i < 4; i++) {
		static const char *const files[] = { "in.csv", "in.jsonl", "out.csv", "out.jsonl" };
		char path[300];

		path_file(path, sizeof(path), files[i]);
		unlink(path);
	}
	rmdir(g.dir);
	return failed;
}
