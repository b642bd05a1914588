/*
 * The job author's API (issue 9): jobs owned by the registry from their
 * creation, writers added without counts, NULL-terminated lists, parameter
 * getters, plug-in versions (a version 1 writer and processor still work; a
 * version 2 processor is opened and closed once per step), the job instance
 * id and earlier steps' summaries summed over the instance's executions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"
#include "numbers.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "api", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* ---- registry, lists, parts (no database) ---------------------------------- */

static int nop_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
		       cb_error *err)
{
	(void)user, (void)sc, (void)tx, (void)context, (void)err;
	return CB_DONE;
}

static void test_registry_owns_a_job_from_its_creation(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;
	cb_step_def bad = CB_STEP_DEF_INIT;
	cb_job *job = NULL, *again = NULL;

	CBT_PASS_FATAL(cb_registry_new(&reg, &err), &err);
	CBT_PASS_FATAL(cb_registry_new_job(&job, reg, "owned", &err), &err);
	CU_ASSERT_PTR_NOT_NULL(job);
	CU_ASSERT_PTR_EQUAL(cb_registry_find(reg, "owned"), job);
	CBT_EQ_LL(cb_registry_count(reg), 1);
	/* A half set up job (its step refused) is freed with the registry: no leak. */
	bad.name = "no callback";
	CBT_FAILS_WITH(CB_EINVAL, cb_job_add_step(job, &bad, &err), &err);
	cb_error_clear(&err);

	CBT_FAILS_WITH(CB_EINVAL, cb_registry_new_job(&again, reg, "owned", &err), &err);
	CBT_CONTAINS(err.message, "'owned' is already registered");
	CU_ASSERT_PTR_NULL(again);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_new_job(&again, reg, "bad name!", &err), &err);
	CBT_CONTAINS(err.message, "bad name!");
	CU_ASSERT_PTR_NULL(again);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_registry_new_job(&again, NULL, "x", &err), &err);
	CBT_EQ_LL(cb_registry_count(reg), 1);
	cb_registry_free(reg);
}

static void test_list_count_and_count_macro(void)
{
	static const char *const three[] = { "a", "b", "c" };
	static const char *const terminated[] = { "a", "b", NULL };
	static const char *const empty[] = { NULL };

	CBT_EQ_LL(CB_COUNT(three), 3);
	CBT_EQ_LL(cb_list_count(three, CB_COUNT(three)), 3);
	CBT_EQ_LL(cb_list_count(terminated, 0), 2);
	CBT_EQ_LL(cb_list_count(terminated, 1), 1); /* a count wins */
	CBT_EQ_LL(cb_list_count(empty, 0), 0);
	CBT_EQ_LL(cb_list_count(NULL, 0), 0);
}

static int freed;

static void count_free(void *state)
{
	(void)state;
	freed++;
}

static int null_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	(void)state, (void)tx, (void)items, (void)n, (void)err;
	return 0;
}

static void never_called(void *state)
{
	(void)state;
	CBT_FAILF("a hook of a version 1 writer was called");
}

static void test_add_writer_steals_checks_and_copies_by_version(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_chunk_parts parts;
	cb_writer w = CB_WRITER_INIT;
	int i;

	memset(&parts, 0, sizeof(parts));
	CBT_EQ_LL(CB_WRITER_VERSION, 4);
	w.write = null_write;
	w.free = count_free;
	CBT_PASS(cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CBT_EQ_LL(parts.nwriters, 1);
	CU_ASSERT_PTR_EQUAL(parts.writers[0].write, null_write);

	/* Version 1: the hooks (since version 2) are not copied. */
	w.version = 1;
	w.rollback = never_called;
	CBT_PASS(cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CU_ASSERT_PTR_NULL(parts.writers[1].rollback);
	CU_ASSERT_PTR_EQUAL(parts.writers[1].free, count_free);

	/* Version 3: overlap_safe (since version 4) is not copied; a version 4
	 * writer's is. Both are taken back off the parts again. */
	w.version = 3;
	w.rollback = NULL;
	w.overlap_safe = 1;
	CBT_PASS(cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CBT_EQ_LL(parts.writers[2].overlap_safe, 0);
	w.version = 4;
	CBT_PASS(cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CBT_EQ_LL(parts.writers[3].overlap_safe, 1);
	parts.nwriters = 2;
	w.overlap_safe = 0;

	/* Unknown versions and a missing write are refused, and the writer is freed. */
	freed = 0;
	w.version = 5;
	CBT_FAILS_WITH(CB_EINVAL, cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CBT_CONTAINS(err.message, "writer 2: writer of unknown version 5");
	cb_error_clear(&err);
	w.version = 0;
	CBT_FAILS_WITH(CB_EINVAL, cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	cb_error_clear(&err);
	w.version = CB_WRITER_VERSION;
	w.write = NULL;
	CBT_FAILS_WITH(CB_EINVAL, cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CBT_CONTAINS(err.message, "no write function");
	cb_error_clear(&err);
	CBT_EQ_LL(freed, 3);
	CBT_EQ_LL(parts.nwriters, 2);

	w.write = null_write;
	for (i = 2; i < CB_MAX_WRITERS; i++)
		CBT_PASS(cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	freed = 0;
	CBT_FAILS_WITH(CB_EINVAL, cb_chunk_parts_add_writer(&parts, &w, &err), &err);
	CBT_CONTAINS(err.message, "more than 8 writers");
	CBT_EQ_LL(freed, 1);
	CBT_EQ_LL(parts.nwriters, CB_MAX_WRITERS);
	cb_error_clear(&err);
	CBT_FAILS_WITH(CB_EINVAL, cb_chunk_parts_add_writer(NULL, &w, &err), &err);
}

static void test_one_version_check_accepts_one_to_current(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_listener l = CB_LISTENER_INIT;
	cb_launch_options o = CB_LAUNCH_OPTIONS_INIT;
	cb_job_result r;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, "versions", &err), &err);
	s.name = "t";
	s.kind = CB_STEP_TASKLET;
	s.tasklet = nop_tasklet;
	s.version = CB_STEP_DEF_VERSION + 1;
	CBT_FAILS_WITH(CB_EINVAL, cb_job_add_step(job, &s, &err), &err);
	{
		char want[80];

		snprintf(want, sizeof(want),
			 "job 'versions': step definition of unknown version %d",
			 CB_STEP_DEF_VERSION + 1);
		CBT_CONTAINS(err.message, want);
	}
	cb_error_clear(&err);
	s.version = 0;
	CBT_FAILS_WITH(CB_EINVAL, cb_job_add_step(job, &s, &err), &err);
	cb_error_clear(&err);
	s.version = 1;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);

	l.version = 2;
	CBT_FAILS_WITH(CB_EINVAL, cb_job_add_listener(job, &l, &err), &err);
	CBT_CONTAINS(err.message, "listener of unknown version 2");
	cb_error_clear(&err);
	l.version = 1;
	CBT_PASS(cb_job_add_listener(job, &l, &err), &err);

	o.version = 7;
	CBT_FAILS_WITH(CB_EINVAL, cb_job_launch(&r, conn, job, NULL, &o, &err), &err);
	CBT_CONTAINS(err.message, "launch options of unknown version 7 (this library knows 1..1)");
	cb_error_clear(&err);
	o.version = 1;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, &o, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	cb_job_free(job);
}

/* ---- a job with a version 2 processor, a version 1 writer, a summary ------- */

typedef struct probe {
	cbt_numbers numbers;
	long long fail_on;       /* the version 1 writer fails on this number (0: never) */
	int opens, closes;       /* processor open/close calls */
	int v1_hooks;            /* hooks of the version 1 writer called (must stay 0) */
	long long v1_items;      /* items the version 1 writer saw */
	long long every;         /* from the parameter `every` */
	char label[32];          /* from the parameter `label` */
	double ratio;            /* from the parameter `ratio` */
	long long instance_seen; /* cb_step_context_job_instance_id in open */
	cb_step_summary summary; /* what the report step saw of `load` */
	long long report_instance;
} probe;

static int p_open(void *state, const cb_step_context *sc, cb_error *err)
{
	probe *p = state;
	const char *label = cb_step_param(sc, "label");

	(void)err;
	p->opens++;
	p->every = cb_step_param_long(sc, "every", 5);
	p->ratio = cb_step_param_double(sc, "ratio", -1.0);
	snprintf(p->label, sizeof(p->label), "%s", label ? label : "(none)");
	p->instance_seen = cb_step_context_job_instance_id(sc);
	return 0;
}

static void p_close(void *state)
{
	((probe *)state)->closes++;
}

static int p_process(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	probe *p = state;
	long long v = *(long long *)item;

	(void)chunk, (void)err;
	*out = v % p->every == 0 ? NULL : item; /* filter every p->every-th */
	return 0;
}

static int v1_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	probe *p = state;

	(void)tx;
	for (size_t i = 0; i < n; i++)
		if (*(const long long *)items[i] == p->fail_on)
			return cb_error_set(err, CB_EINVAL, "number %lld refused", p->fail_on);
	p->v1_items += (long long)n;
	return 0;
}

static void v1_hook(void *state)
{
	((probe *)state)->v1_hooks++;
}

static int v1_complete(void *state, cb_error *err)
{
	(void)err;
	((probe *)state)->v1_hooks++;
	return 0;
}

static int probe_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	probe *p = user;
	/* As a writer written for version 1 would look: its version says 1, and
	 * whatever sits in the later members is not its own. */
	cb_writer v1 = { .version = 1,
			 .state = p,
			 .write = v1_write,
			 .rollback = v1_hook,
			 .savepoint = v1_hook,
			 .rollback_to_savepoint = v1_hook,
			 .complete = v1_complete };
	int rc = cbt_numbers_build(&p->numbers, sc, parts, err);

	if (rc < 0)
		return rc;
	parts->processor = (cb_processor){ .version = CB_PROCESSOR_VERSION,
					   .state = p,
					   .process = p_process,
					   .open = p_open,
					   .close = p_close };
	return cb_chunk_parts_add_writer(parts, &v1, err);
}

static int report(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context, cb_error *err)
{
	probe *p = user;

	(void)tx, (void)context;
	p->report_instance = cb_step_context_job_instance_id(sc);
	return cb_step_context_step_summary(sc, "load", &p->summary, err) < 0 ? err->code : CB_DONE;
}

static void test_processor_v2_writer_v1_and_step_summary_over_executions(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def load = CB_STEP_DEF_INIT, rep = CB_STEP_DEF_INIT;
	cb_params *params = NULL;
	cb_job_result r;
	cb_job *job = NULL;
	probe p;

	memset(&p, 0, sizeof(p));
	p.numbers.last = 47;
	p.fail_on = 33;
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint PRIMARY KEY)");
	CBT_PASS_FATAL(cb_job_new(&job, "api_probe", &err), &err);
	load.name = "load";
	load.build = probe_build;
	load.user = &p;
	load.chunk_size = 10;
	rep.name = "report";
	rep.kind = CB_STEP_TASKLET;
	rep.tasklet = report;
	rep.user = &p;
	CBT_PASS(cb_job_add_step(job, &load, &err), &err);
	CBT_PASS(cb_job_add_step(job, &rep, &err), &err);
	CBT_PASS_FATAL(cb_params_new(&params, &err), &err);
	CBT_PASS(cb_params_add_string(params, "label", "north", 1, &err), &err);
	CBT_PASS(cb_params_add_long(params, "every", 7, 1, &err), &err);
	CBT_PASS(cb_params_add_double(params, "ratio", 0.25, 0, &err), &err);

	/* First execution: chunks 1-10, 11-20, 21-30 commit; 31-40 fails in the
	 * version 1 writer (its rollback hook, if it were read, would be called). */
	CBT_PASS(cb_job_launch(&r, conn, job, params, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "number 33 refused");
	CBT_EQ_LL(p.opens, 1);
	CBT_EQ_LL(p.closes, 1);
	CBT_EQ_STR(p.label, "north");
	CBT_EQ_LL(p.every, 7);
	CU_ASSERT_DOUBLE_EQUAL(p.ratio, 0.25, 1e-9);
	CBT_EQ_LL(p.every, 7);
	CBT_EQ_LL(p.instance_seen, r.job_instance_id);
	CBT_EQ_LL(p.v1_hooks, 0);

	/* The restart: same instance, 31..47 read; the report sums both executions. */
	p.fail_on = 0;
	CBT_PASS(cb_job_restart(&r, conn, job, r.job_execution_id, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(p.opens, 2);
	CBT_EQ_LL(p.closes, 2);
	CBT_EQ_LL(p.instance_seen, r.job_instance_id);
	CBT_EQ_LL(p.report_instance, r.job_instance_id);
	CBT_EQ_LL(p.v1_hooks, 0); /* a version 1 writer's later members are never read */
	CBT_EQ_LL(p.summary.executions, 2);
	CBT_EQ_STR(cb_status_name(p.summary.status), "COMPLETED");
	CBT_EQ_LL(p.summary.read_count, 47);
	CBT_EQ_LL(p.summary.filter_count, 6); /* 7, 14, ..., 42 */
	CBT_EQ_LL(p.summary.write_count, 41);
	CBT_EQ_LL(p.summary.commit_count, 5);
	CBT_EQ_LL(p.summary.rollback_count, 1);
	CBT_EQ_LL(p.summary.skip_count, 0);
	CBT_EQ_LL(p.summary.duplicate_count, 0);
	CBT_EQ_LL(p.v1_items, 41);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 41);
	cb_params_free(params);
	cb_job_free(job);
}

/* A summary of a step that never ran, and NULL arguments. */
static int report_missing(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			  cb_error *err)
{
	cb_step_summary *s = user;

	(void)tx, (void)context;
	if (cb_step_context_step_summary(sc, NULL, s, err) != CB_EINVAL)
		return cb_error_set(err, CB_ERROR, "a NULL step name was accepted");
	cb_error_clear(err);
	if (cb_step_context_step_summary(sc, "nowhere", s, err) < 0)
		return err->code;
	return CB_DONE;
}

static void test_summary_of_a_step_that_never_ran(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_step_summary sum;
	cb_job_result r;
	cb_job *job = NULL;

	memset(&sum, 0x55, sizeof(sum));
	CBT_PASS_FATAL(cb_job_new(&job, "api_missing", &err), &err);
	s.name = "only";
	s.kind = CB_STEP_TASKLET;
	s.tasklet = report_missing;
	s.user = &sum;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(sum.executions, 0);
	CBT_EQ_LL(sum.read_count, 0);
	CBT_EQ_LL(sum.write_count, 0);
	CBT_EQ_STR(cb_status_name(sum.status), "UNKNOWN");
	cb_job_free(job);
}

/* ---- NULL-terminated lists in the built-in reader and writers --------------- */

static const char *const src_cols[] = { "id", "v", NULL };
static const char *const src_key[] = { "id", NULL };
static const char *const dst_cols[] = { "id", "v", NULL };
static const char *const dst_key[] = { "id", NULL };

static int pass(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	(void)state, (void)chunk, (void)err;
	*out = item;
	return 0;
}

static int refuse_open(void *state, const cb_step_context *sc, cb_error *err)
{
	(void)state, (void)sc;
	return cb_error_set(err, CB_ERROR, "the open of a version 1 processor was called");
}

static int lists_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_pg_upsert_options uo = CB_PG_UPSERT_OPTIONS_INIT;
	cb_pg_status_options so = CB_PG_STATUS_OPTIONS_INIT;
	cb_writer w;
	int rc;

	(void)user, (void)sc;
	ro.table = "src";
	ro.columns = src_cols; /* counts left 0: the lists end with NULL */
	ro.key_columns = src_key;
	ro.where = "NOT done";
	rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err);
	if (rc < 0)
		return rc;
	/* A processor written for version 1: `open` is not its own, never called. */
	parts->processor = (cb_processor){ .version = 1, .process = pass, .open = refuse_open };
	uo.table = "dst";
	uo.columns = dst_cols;
	uo.key_columns = dst_key;
	if ((rc = cb_pg_upsert_writer_new(&w, &uo, err)) < 0 ||
	    (rc = cb_chunk_parts_add_writer(parts, &w, err)) < 0)
		return rc;
	so.table = "src";
	so.key_columns = src_key;
	so.set_column = "done";
	so.set_value = "true";
	if ((rc = cb_pg_status_writer_new(&w, &so, err)) < 0)
		return rc;
	return cb_chunk_parts_add_writer(parts, &w, err);
}

static void test_null_terminated_lists_in_reader_and_writers(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_registry *reg = NULL;
	cb_job_result r;
	cb_job *job = NULL;

	cbt_exec(conn, "DROP TABLE IF EXISTS src, dst; "
		       "CREATE TABLE src (id int PRIMARY KEY, v text, done bool NOT NULL "
		       "DEFAULT false); CREATE TABLE dst (id int PRIMARY KEY, v text); "
		       "INSERT INTO src (id, v) SELECT g, 'v' || g FROM generate_series(1, 25) g");
	CBT_PASS_FATAL(cb_registry_new(&reg, &err), &err);
	CBT_PASS_FATAL(cb_registry_new_job(&job, reg, "api_lists", &err), &err);
	s.name = "copy";
	s.build = lists_build;
	s.chunk_size = 10;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM dst d JOIN src s USING (id) "
				     "WHERE d.v = s.v AND s.done"),
		  25);
	cb_registry_free(reg);
}

/* ---- the README's sample, built as printed (tests/CMakeLists.txt) ---------- */

static void test_readme_sample_runs_a_keyset_reader_with_a_job_parameter(void)
{
	char bin[4096], out[4096], errout[4096];
	const char *slash = strrchr(cbt_examples_bin(), '/');

	CU_ASSERT_FATAL(slash != NULL);
	snprintf(bin, sizeof(bin), "%.*s/readme_post", (int)(slash - cbt_examples_bin()),
		 cbt_examples_bin());
	cbt_exec(conn,
		 "DROP TABLE IF EXISTS account, ledger; "
		 "CREATE TABLE account (id bigserial PRIMARY KEY, seller_id int NOT NULL, "
		 " amount numeric(12,2) NOT NULL, processed boolean NOT NULL DEFAULT false); "
		 "CREATE TABLE ledger (account_id bigint PRIMARY KEY, seller_id int NOT NULL, "
		 " amount numeric(12,2) NOT NULL, job_execution_id bigint NOT NULL); "
		 "INSERT INTO account (seller_id, amount) "
		 "SELECT g % 10, g FROM generate_series(1, 2500) g");
	{
		const char *const argv[] = {
			bin, "--db", db, "run", "post", "seller:long=7", NULL
		};

		CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 0);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger l JOIN account a ON "
					     "a.id = l.account_id WHERE a.seller_id = 7 AND "
					     "a.processed AND l.amount = a.amount"),
			  250);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 250);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"), 250);
		/* The same instance again: already complete. */
		CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)),
			  CB_EXIT_COMPLETE);
	}
	{
		/* A missing parameter: refused as usage before anything is written. */
		const char *const argv[] = { bin, "--db", db, "run", "post", NULL };

		CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), CB_EXIT_USAGE);
		CBT_CONTAINS(errout, "requires parameter seller:long");
	}
}

static const CU_TestInfo tests[] = {
	{ "registry owns a job from its creation", test_registry_owns_a_job_from_its_creation },
	{ "list count and count macro", test_list_count_and_count_macro },
	{ "add writer steals, checks and copies by version",
	  test_add_writer_steals_checks_and_copies_by_version },
	{ "one version check accepts 1..current", test_one_version_check_accepts_one_to_current },
	{ "processor v2, writer v1 and step summary over executions",
	  test_processor_v2_writer_v1_and_step_summary_over_executions },
	{ "summary of a step that never ran", test_summary_of_a_step_that_never_ran },
	{ "NULL-terminated lists in reader and writers",
	  test_null_terminated_lists_in_reader_and_writers },
	{ "README sample runs a keyset reader with a job parameter",
	  test_readme_sample_runs_a_keyset_reader_with_a_job_parameter },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("api", init, clean, tests);
}
