/*
 * The preflight (issue 28.7): a job whose reader or writers do not fit the
 * database is refused before the launch records anything — exit 2, one
 * message naming the table and column, and no instance, execution or lock
 * audit row — and `check JOB` says the same without running anything.
 *
 * Each case is one job of one step, keyset reader into a writer, whose
 * options a `struct cfg` misconfigures in one place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cbatch.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[65536], errout[16384];

static int init(void)
{
	if (cbt_repo_db(db, sizeof(db), "preflight", &conn) < 0)
		return -1;
	cbt_exec(conn,
		 "CREATE TABLE src (id bigint PRIMARY KEY, customer_id bigint NOT NULL, "
		 " amount numeric(12,2) NOT NULL, note text, at timestamptz NOT NULL, "
		 " processed boolean NOT NULL DEFAULT false); "
		 "INSERT INTO src (id, customer_id, amount, note, at) SELECT g, g % 5, g, "
		 " 'n' || g, timestamptz '2026-06-30 13:45:00+00' FROM generate_series(1, 30) g; "
		 "CREATE TABLE cust_total (customer_id bigint PRIMARY KEY, "
		 " amount numeric(14,2) NOT NULL DEFAULT 0, note text); "
		 "CREATE TABLE nokey_total (customer_id bigint, amount numeric(14,2)); "
		 "CREATE TABLE daily (id bigint PRIMARY KEY, at date, note integer)");
	return 0;
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* What one case changes: the reader's columns, the writer and its options. */
struct cfg {
	const char *const *read_columns; /* NULL-terminated */
	int status;                      /* the writer: a status writer, else an upsert */
	const char *table;               /* the writer's table */
	const char *const *columns;      /* NULL-terminated */
	const char *key;
	const char *set_column; /* status writer */
	const char *set_value;  /* status writer; NULL: "true" */
	const char *csv_path;   /* a CSV writer instead */
	const cb_upsert_mode *modes;
	const char *const *lossy; /* NULL-terminated, or NULL */
	cb_bind_fn bind;
};

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	const struct cfg *c = user;
	const char *keys[2] = { c->key, NULL };
	static const char *const src_key[] = { "id", NULL };
	cb_pg_keyset_options r = CB_PG_KEYSET_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)sc;
	r.table = "src";
	r.columns = c->read_columns;
	r.key_columns = src_key;
	r.where = "NOT processed";
	if ((rc = cb_pg_keyset_reader_new(&parts->reader, &r, err)) < 0)
		return rc;
	if (c->csv_path) {
		cb_csv_writer_options o = CB_CSV_WRITER_OPTIONS_INIT;

		o.path = c->csv_path;
		rc = cb_csv_writer_new(&w, &o, err);
	} else if (c->status) {
		cb_pg_status_options s = CB_PG_STATUS_OPTIONS_INIT;

		s.table = c->table;
		s.key_columns = src_key;
		s.set_column = c->set_column;
		s.set_value = c->set_value ? c->set_value : "true";
		rc = cb_pg_status_writer_new(&w, &s, err);
	} else {
		cb_pg_upsert_options u = CB_PG_UPSERT_OPTIONS_INIT;

		u.table = c->table;
		u.columns = c->columns;
		u.key_columns = keys;
		u.modes = c->modes;
		u.bind = c->bind;
#if CB_PG_UPSERT_OPTIONS_VERSION >= 3
		u.lossy_columns = c->lossy;
#endif
		rc = cb_pg_upsert_writer_new(&w, &u, err);
	}
	if (rc < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static cb_job *job_of(const char *name, struct cfg *c)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, name, &err), &err);
	s.name = "only";
	s.build = build;
	s.user = c;
	s.chunk_size = 10;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	return job;
}

/* Rows of the repository that a launch writes: instances, executions, audit. */
static long long written(void)
{
	return cbt_query_ll(conn, "SELECT (SELECT count(*) FROM batch_job_instance) * 1000000 + "
				  "(SELECT count(*) FROM batch_job_execution) * 1000 + "
				  "(SELECT count(*) FROM batch_lock_audit)");
}

/*
 * Launch the job of @p c: refused as invalid input (CB_EINVAL: the CLI's
 * exit 2) with a message holding @p want1 and @p want2, and nothing
 * written.
 */
static void refused(const char *name, struct cfg *c, const char *want1, const char *want2)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = job_of(name, c);
	cb_job_result r;
	long long before = written();
	int rc;

	rc = cb_job_launch(&r, conn, job, NULL, NULL, &err);
	if (rc == 0)
		fprintf(stderr, "  [%s] ran: %s (%s), %s\n", name, cb_status_name(r.status),
			r.invalid_input ? "invalid input" : "not invalid input", r.exit_message);
	else
		fprintf(stderr, "  [%s] refused (%s): %s\n", name, cb_strcode(rc), err.message);
	fprintf(stderr, "  [%s] written: %lld instance(s), %lld execution(s), %lld audit row(s)\n",
		name, (written() - before) / 1000000, (written() - before) / 1000 % 1000,
		(written() - before) % 1000);
	CBT_EQ_LL(rc, CB_EINVAL);
	CBT_CONTAINS(err.message, want1);
	CBT_CONTAINS(err.message, want2);
	CBT_EQ_LL(written(), before);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM src WHERE processed"), 0);
	cb_job_free(job);
}

static const char *const all_src[] = { "id", "customer_id", "amount", "note", "at", NULL };

static void test_wrong_upsert_column(void)
{
	static const char *const cols[] = { "customer_id", "amout", NULL };
	struct cfg c = { .read_columns = all_src,
			 .table = "cust_total",
			 .columns = cols,
			 .key = "customer_id" };

	refused("wrong_upsert_column", &c, "cust_total", "column \"amout\" does not exist");
}

static void test_missing_table(void)
{
	static const char *const cols[] = { "customer_id", "amount", NULL };
	struct cfg c = { .read_columns = all_src,
			 .table = "cust_totals",
			 .columns = cols,
			 .key = "customer_id" };

	refused("missing_table", &c, "table \"cust_totals\" does not exist", "upsert writer");
}

static void test_wrong_reader_column(void)
{
	static const char *const rcols[] = { "id", "customer_id", "amout", NULL };
	static const char *const cols[] = { "customer_id", "amount", NULL };
	struct cfg c = {
		.read_columns = rcols, .table = "cust_total", .columns = cols, .key = "customer_id"
	};

	refused("wrong_reader_column", &c, "keyset reader on \"src\"",
		"column \"amout\" does not exist");
}

static void test_misspelt_status_column(void)
{
	struct cfg c = {
		.read_columns = all_src, .status = 1, .table = "src", .set_column = "procesed"
	};

	refused("misspelt_status_column", &c, "status writer on \"src\"",
		"status column \"procesed\" does not exist");
}

static void test_status_value_its_column_refuses(void)
{
	struct cfg c = { .read_columns = all_src,
			 .status = 1,
			 .table = "src",
			 .set_column = "processed",
			 .set_value = "DONE" };

	refused("status_value_refused", &c, "status writer on \"src\"",
		"status column \"processed\" (boolean) does not take the value \"DONE\"");
}

/* A file writer's directory is checked, and no file is created by it. */
static void test_csv_writer_into_a_missing_directory(void)
{
	char path[4200], dir[4000];
	struct cfg c = { .read_columns = all_src };
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/preflight-out", cbt_tmpdir());
	snprintf(path, sizeof(path), "%s/missing/out.csv", dir);
	c.csv_path = path;
	refused("csv_missing_directory", &c, "CSV writer", "/missing\" does not exist");
	/* A directory that exists passes the check; the launch then runs. */
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	unlink(path);
	{
		cb_error err = CB_ERROR_INIT;
		cb_job *job = job_of("csv_directory_there", &c);

		CBT_PASS(cb_job_check(conn, job, NULL, NULL, NULL, &err), &err);
		/* The check created nothing. */
		CBT_EQ_LL(stat(path, &st), -1);
		cb_job_free(job);
	}
}

static void collect(void *ctx, const char *step, int problem, const char *message)
{
	char *notes = ctx;
	size_t n = strlen(notes);

	snprintf(notes + n, 2048 - n, "%s %s %s|", problem ? "problem" : "note", step ? step : "-",
		 message);
}

static int noop_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			cb_error *err)
{
	(void)user, (void)sc, (void)tx, (void)context, (void)err;
	return CB_DONE;
}

/* What a check cannot see is said, not passed over in silence. */
static void test_check_notes_what_it_cannot_check(void)
{
	static const char *const cols[] = { "customer_id", "amount", NULL };
	struct cfg c = { .read_columns = all_src,
			 .table = "cust_total",
			 .columns = cols,
			 .key = "customer_id" };
	cb_error err = CB_ERROR_INIT;
	cb_step_def t = CB_STEP_DEF_INIT;
	cb_job *job = job_of("notes", &c);
	char notes[2048] = "";

	t.name = "report";
	t.kind = CB_STEP_TASKLET;
	t.tasklet = noop_tasklet;
	CBT_PASS(cb_job_add_step(job, &t, &err), &err);
	CBT_PASS(cb_job_check(conn, job, NULL, collect, notes, &err), &err);
	CBT_CONTAINS(notes, "note report not checked: a tasklet's work is its own code");
	cb_job_free(job);
}

static void test_conflict_key_without_unique_index(void)
{
	static const char *const cols[] = { "customer_id", "amount", NULL };
	struct cfg c = { .read_columns = all_src,
			 .table = "nokey_total",
			 .columns = cols,
			 .key = "customer_id" };

	refused("conflict_key_without_unique", &c, "nokey_total",
		"ON CONFLICT (customer_id) needs a unique index");
}

static void test_add_on_a_text_column(void)
{
	static const char *const cols[] = { "customer_id", "note", NULL };
	static const cb_upsert_mode modes[] = { CB_UPSERT_REPLACE, CB_UPSERT_ADD };
	struct cfg c = { .read_columns = all_src,
			 .table = "cust_total",
			 .columns = cols,
			 .key = "customer_id",
			 .modes = modes };

	refused("add_on_text", &c, "column \"note\" has the type text",
		"CB_UPSERT_ADD needs a number");
}

/* The reader's text column "note" by name into the integer column "note". */
static void test_text_column_into_an_integer_column(void)
{
	static const char *const cols[] = { "id", "note", NULL };
	struct cfg c = { .read_columns = all_src, .table = "daily", .columns = cols, .key = "id" };

	refused("text_into_integer", &c, "upsert writer on \"daily\"",
		"column \"note\": the reader gives text");
}

static void test_timestamptz_into_a_date_column_unless_declared(void)
{
	static const char *const cols[] = { "id", "at", NULL };
	static const char *const lossy[] = { "at", NULL };
	struct cfg c = { .read_columns = all_src, .table = "daily", .columns = cols, .key = "id" };
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;

	refused("timestamptz_into_date", &c, "upsert writer on \"daily\"",
		"column \"at\": a timestamp with time zone value loses its time of day");
	/* Declared lossy on purpose: it runs, and the day is kept. */
	c.lossy = lossy;
	job = job_of("timestamptz_into_date_declared", &c);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM daily WHERE at = '2026-06-30'"), 30);
	cb_job_free(job);
}

/* A value the check cannot see (a bind callback's text for an integer
 * column) still fails at chunk time, naming the table and the column. */
static int bad_bind(void *ctx, const cb_step_context *sc, const void *item, cb_values *v,
		    cb_error *err)
{
	(void)ctx, (void)sc, (void)item, (void)err;
	cb_values_set_long(v, 0, 7);
	cb_values_set(v, 1, "seven", -1);
	return 0;
}

static void test_unparseable_value_names_table_and_column(void)
{
	static const char *const cols[] = { "id", "note", NULL };
	struct cfg c = { .read_columns = all_src,
			 .table = "daily",
			 .columns = cols,
			 .key = "id",
			 .bind = bad_bind };
	cb_error err = CB_ERROR_INIT;
	cb_job *job = job_of("unparseable_value", &c);
	cb_job_result r;

	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	fprintf(stderr, "  [unparseable_value] %s\n", r.exit_message);
	CBT_CONTAINS(r.exit_message, "upsert writer on \"daily\"");
	CBT_CONTAINS(r.exit_message, "column \"note\"");
	cb_job_free(job);
}

/* ---- check JOB through the CLI ------------------------------------------- */

static int cli(const char *a1, const char *a2, const char *a3)
{
	const char *argv[8] = { cbt_examples_bin(), "--db", db, a1, a2, a3, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

static void test_check_command(void)
{
	long long before = written();

	/* The examples' tables are not there yet: every problem named, exit 2. */
	CBT_EQ_LL(cli("check", "sales_totals", "asOf=2026-06-30"), 2);
	CBT_CONTAINS(out, "problem: ");
	CBT_CONTAINS(out, "does not exist");
	CBT_CONTAINS(errout, "check: ");
	CBT_EQ_LL(written(), before);
	CBT_EQ_LL(cli("run", "sales_totals", "asOf=2026-06-30"), 2);
	CBT_EQ_LL(written(), before);
	CBT_EQ_LL(cli("example-setup", "sales_totals", NULL), 0);
	CBT_EQ_LL(cli("check", "sales_totals", "asOf=2026-06-30"), 0);
	CBT_CONTAINS(out, "job sales_totals: OK");
	CBT_EQ_LL(written(), before);
	CBT_EQ_LL(cli("--json", "check", "ledger"), 2);
	CBT_CONTAINS(out, "\"ok\": false");
	CBT_EQ_LL(cli("check", "nosuchjob", NULL), 2);
}

static CU_TestInfo tests[] = {
	{ "wrong upsert column", test_wrong_upsert_column },
	{ "missing table", test_missing_table },
	{ "wrong reader column", test_wrong_reader_column },
	{ "misspelt status column", test_misspelt_status_column },
	{ "conflict key without unique index", test_conflict_key_without_unique_index },
	{ "ADD on a text column", test_add_on_a_text_column },
	{ "status value its column refuses", test_status_value_its_column_refuses },
	{ "CSV writer into a missing directory", test_csv_writer_into_a_missing_directory },
	{ "check notes what it cannot check", test_check_notes_what_it_cannot_check },
	{ "text column into an integer column", test_text_column_into_an_integer_column },
	{ "timestamptz into a date column unless declared",
	  test_timestamptz_into_a_date_column_unless_declared },
	{ "unparseable value names table and column",
	  test_unparseable_value_names_table_and_column },
	{ "check command", test_check_command },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("preflight", init, clean, tests);
}
