/*
 * The command-line interface as an operator meets it: help, usage errors and
 * their exit codes, parameters rejected before anything is written, schema
 * init, listings in JSON and as tables, show, stop, abandon and restart.
 * Runs the real binaries: `cbatch` (no jobs) and `cbatch-examples` (ledger).
 * Also: times shown with their zone (local, --utc, CBATCH_TZ), --help that
 * wraps synopses without cutting a word, and the command list of docs/running-jobs.md kept
 * in step with the command table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cbtest.h"
#include "cli_internal.h"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[65536];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "cli");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

/* Run @p bin with the NULL-terminated arguments (no --db added). */
static int run_bin(const char *bin, const char *const *args)
{
	const char *argv[32];
	size_t n = 0;

	argv[n++] = bin;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* cbatch-examples / cbatch with arguments, without and with --db. */
#define EX(...)      run_bin(cbt_examples_bin(), (const char *const[]){ __VA_ARGS__, NULL })
#define ADMIN(...)   run_bin(cbt_cli_bin(), (const char *const[]){ __VA_ARGS__, NULL })
#define EXDB(...)    EX("--db", db, __VA_ARGS__)
#define ADMINDB(...) ADMIN("--db", db, __VA_ARGS__)

/* An empty database with the repository schema. */
static PGconn *fresh(void)
{
	PGconn *conn = cbt_connect(db);

	cbt_exec(conn, "SET client_min_messages = warning; "
		       "DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
	CBT_EQ_LL(ADMINDB("schema", "init"), 0);
	return conn;
}

/* The ledger example's tables, from its schema file (no demo rows). */
static void ledger_tables(PGconn *conn)
{
	char path[4096], *sql;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/examples/ledger/schema.sql", cbt_source_dir());
	f = fopen(path, "rb");
	if (!f) {
		CBT_FAILF("cannot open %s", path);
		return;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	sql = calloc(1, (size_t)n + 1);
	if (sql && fread(sql, 1, (size_t)n, f) == (size_t)n)
		cbt_exec(conn, sql);
	else
		CBT_FAILF("cannot read %s", path);
	free(sql);
	fclose(f);
}

/*
 * The ledger's tables with an account whose posting fails at chunk time (a
 * check the ledger refuses): a FAILED execution. A job whose tables are
 * missing no longer makes one: the preflight refuses it, nothing written.
 */
static void ledger_failing(PGconn *conn)
{
	ledger_tables(conn);
	cbt_exec(conn, "INSERT INTO account (seller_id, amount) VALUES (1, 10); "
		       "ALTER TABLE ledger ADD CONSTRAINT cb_test_refused CHECK (amount < 0) "
		       "NOT VALID");
}

/* The posting succeeds again (ledger_failing undone). */
static void ledger_unfail(PGconn *conn)
{
	cbt_exec(conn, "ALTER TABLE ledger DROP CONSTRAINT cb_test_refused");
}

/* Parse the captured stdout as exactly one JSON document (new reference). */
static json_t *stdout_json(void)
{
	json_error_t jerr;
	json_t *v = json_loads(out, 0, &jerr);

	if (!v)
		CBT_FAILF("stdout is not one JSON document (%s at line %d): %.300s", jerr.text,
			  jerr.line, out);
	return v;
}

static long long newest_execution(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

/* ---- help and usage ------------------------------------------------------ */

static void test_help_for_every_command(void)
{
	static const char *const commands[] = { "schema",  "jobs",       "run",  "restart", "stop",
						"abandon", "executions", "show", "help",    NULL };
	size_t i;

	CBT_EQ_LL(ADMIN("--help"), 0);
	for (i = 0; commands[i]; i++)
		CBT_CONTAINS(out, commands[i]);
	CBT_EQ_LL(ADMIN("-h"), 0);
	CBT_CONTAINS(out, "usage:");

	/* The extra commands of a job program are listed, and its jobs. */
	CBT_EQ_LL(EX("--help"), 0);
	CBT_CONTAINS(out, "example-setup");
	CBT_CONTAINS(out, "ledger");

	for (i = 0; commands[i]; i++) {
		char want[64];

		snprintf(want, sizeof(want), " %s ", commands[i]);
		CBT_EQ_LL(ADMIN(commands[i], "--help"), 0);
		CBT_CONTAINS(out, "usage:");
		CBT_CONTAINS(out, want);
		/* Also with --help first, and with a database that does not exist:
		 * help never connects. */
		CBT_EQ_LL(ADMIN("--db", "host=/nonexistent", "--help", commands[i]), 0);
		CBT_CONTAINS(out, want);
	}
	CBT_EQ_LL(EX("example-setup", "--help"), 0);
	CBT_CONTAINS(out, "example-setup");
	CBT_EQ_LL(ADMIN("help", "run"), 0);

	/* run's help documents the parameter syntax. */
	CBT_EQ_LL(EX("run", "ledger", "--help"), 0);
	CBT_CONTAINS(out, "[-]NAME[:TYPE]=VALUE");
	CBT_CONTAINS(out, "string");
	CBT_CONTAINS(out, "long");
	CBT_CONTAINS(out, "double");
	CBT_CONTAINS(out, "date");
	CBT_CONTAINS(out, "non-identifying");

	CBT_EQ_LL(ADMIN("--version"), 0);
	CBT_CONTAINS(out, "cbatch");
}

static void test_usage_errors_exit_2(void)
{
	CBT_EQ_LL(ADMIN("frobnicate"), 2);
	CBT_CONTAINS(errout, "cbatch: unknown command 'frobnicate'");
	CBT_EQ_LL(ADMIN("--frobnicate", "jobs"), 2);
	CBT_CONTAINS(errout, "unknown option '--frobnicate'");
	CBT_EQ_LL(EX("run", "ledger", "--nxt"), 2);
	CBT_CONTAINS(errout, "unknown option '--nxt'");
	CBT_EQ_LL(ADMIN(""), 2);
	CBT_EQ_LL(run_bin(cbt_cli_bin(), (const char *const[]){ NULL }), 2);
	CBT_CONTAINS(errout, "usage:");
	CBT_EQ_LL(ADMIN("--db"), 2);
	CBT_CONTAINS(errout, "'--db' needs a value");
	CBT_EQ_LL(ADMIN("run"), 2);
	CBT_CONTAINS(errout, "missing JOB");
	CBT_EQ_LL(ADMIN("schema"), 2);
	CBT_EQ_LL(ADMIN("schema", "drop"), 2);
	CBT_EQ_LL(ADMIN("show"), 2);
	CBT_EQ_LL(ADMIN("show", "1", "2"), 2);
	CBT_EQ_LL(ADMIN("executions", "--limit", "0"), 2);
	CBT_CONTAINS(errout, "--limit");
	CBT_EQ_LL(ADMIN("executions", "--limit"), 2);

	/* Execution ids must be positive integers; the message names the argument. */
	CBT_EQ_LL(ADMINDB("show", "abc"), 2);
	CBT_CONTAINS(errout, "'abc'");
	CBT_EQ_LL(ADMINDB("restart", "-3"), 2);
	CBT_CONTAINS(errout, "'-3'");
	CBT_EQ_LL(ADMINDB("stop", "12x"), 2);
	CBT_CONTAINS(errout, "'12x'");
	CBT_EQ_LL(ADMINDB("abandon", "99999999999999999999999"), 2);

	/* Usage errors in --json mode still give one JSON document. */
	CBT_EQ_LL(ADMIN("--json", "frobnicate"), 2);
	{
		json_t *v = stdout_json();

		CBT_EQ_STR(json_string_value(json_object_get(json_object_get(v, "error"), "code")),
			   "CB_EINVAL");
		json_decref(v);
	}
}

static void test_unknown_job_exits_2(void)
{
	CBT_EQ_LL(EXDB("run", "nope"), 2);
	/* the message carries the program's own name, not cbatch's */
	CBT_CONTAINS(errout,
		     "cbatch-examples: unknown job 'nope' (known: ledger, settlement, csv_import, "
		     "ledger_export, ledger_partitioned, outbox, tick, sales_totals)");
	/* The admin binary registers no job. */
	CBT_EQ_LL(ADMINDB("run", "ledger"), 2);
	CBT_CONTAINS(errout, "unknown job 'ledger'");
}

static void test_jobs_lists_registered_jobs(void)
{
	json_t *v, *jobs;

	CBT_EQ_LL(EX("jobs"), 0);
	CBT_CONTAINS(out, "ledger");
	CBT_EQ_LL(EX("jobs", "--json"), 0);
	v = stdout_json();
	jobs = json_object_get(v, "jobs");
	CBT_EQ_LL(json_array_size(jobs), 8);
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(jobs, 0), "name")), "ledger");
	CBT_EQ_STR(json_string_value(json_object_get(json_array_get(jobs, 1), "name")),
		   "settlement");
	json_decref(v);
	CBT_EQ_LL(ADMIN("jobs", "--json"), 0);
	v = stdout_json();
	CBT_EQ_LL(json_array_size(json_object_get(v, "jobs")), 0);
	json_decref(v);
}

/* ---- parameters ---------------------------------------------------------- */

static void test_bad_parameter_writes_nothing(void)
{
	/* Each with a good parameter first: nothing may be written for either. */
	static const char *const bad[][2] = {
		{ "ok=1", "bad:int=3" },         { "ok=1", "noequals" },
		{ "ok=1", "1name=x" },           { "ok=1", "n:long=12abc" },
		{ "ok=1", "d:date=2026-02-30" }, { "x=1", "x=2" }, /* duplicate name */
	};
	PGconn *conn = fresh();
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = EXDB("run", "ledger", bad[i][0], bad[i][1]);

		if (rc != 2)
			CBT_FAILF("parameter '%s': exit %d, want 2 (stderr: %s)", bad[i][1], rc,
				  errout);
		CBT_CONTAINS(errout, "cbatch-examples: parameter '");
		CBT_CONTAINS(errout, bad[i][1]);
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	/* Parameters are checked before connecting: no database is needed to reject them. */
	CBT_EQ_LL(EX("--db", "host=/nonexistent", "run", "ledger", "bad:int=3"), 2);
	CBT_CONTAINS(errout, "unknown type 'int'");
	/* ... while a good command line against that database cannot connect (6). */
	CBT_EQ_LL(EX("--db", "host=/nonexistent", "run", "ledger", "n:long=3"), 6);
	CBT_CONTAINS(errout, "cannot connect");
	PQfinish(conn);
}

/* A read-only server (a standby; here a session that may not write) is
 * named as such, with what to connect to instead, and writes nothing. */
static void test_a_standby_is_named_with_what_to_do(void)
{
	char ro[CBT_CONNINFO_MAX + 80];
	PGconn *conn = cbt_connect(db);

	CBT_EQ_LL(EX("--db", db, "schema", "init"), 0);
	ledger_tables(conn); /* the preflight (read-only itself) passes */
	snprintf(ro, sizeof(ro), "%s options='-c default_transaction_read_only=on'", db);
	CBT_EQ_LL(EX("--db", ro, "run", "ledger", "n:long=4"), 1);
	CBT_CONTAINS(errout, "a standby");
	CBT_CONTAINS(errout, "target_session_attrs=read-write");
	CBT_CONTAINS(errout, "[SQLSTATE 25006]");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	PQfinish(conn);
}

/* ---- schema -------------------------------------------------------------- */

static void test_schema_init_twice(void)
{
	PGconn *conn = cbt_connect(db);
	char want[64];
	json_t *v;
	long long target;

	cbt_exec(conn, "SET client_min_messages = warning; "
		       "DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
	/* Without a schema, commands that need it say what to do. */
	CBT_EQ_LL(ADMINDB("executions"), 1);
	CBT_CONTAINS(errout, "schema init");

	CBT_EQ_LL(ADMINDB("schema", "init"), 0);
	CBT_CONTAINS(out, "(was 0)");
	CBT_EQ_LL(ADMINDB("schema", "init", "--json"), 0);
	v = stdout_json();
	target = json_integer_value(json_object_get(v, "schema_version"));
	CBT_EQ_LL(json_integer_value(json_object_get(v, "previous_version")), target);
	json_decref(v);
	CBT_EQ_LL(ADMINDB("schema", "init"), 0);
	snprintf(want, sizeof(want), "schema at version %lld (was %lld)", target, target);
	CBT_CONTAINS(out, want);
	CBT_EQ_LL(ADMINDB("schema", "check"), 0);
	/* CBATCH_DB is not set here, but --db may also come after the command. */
	CBT_EQ_LL(ADMIN("schema", "check", "--db", db), 0);
	PQfinish(conn);
}

/* ---- listings, show, stop, abandon, restart ------------------------------ */

static void test_executions_and_show(void)
{
	PGconn *conn = fresh();
	json_t *v, *list, *e;
	long long failed, done;
	char id[32];

	CBT_EQ_LL(ADMINDB("executions", "--json"), 0);
	v = stdout_json();
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 0);
	json_decref(v);
	CBT_EQ_LL(ADMINDB("executions"), 0);
	CBT_CONTAINS(out, "no executions");

	/* Without its tables the ledger job is refused by the preflight (exit
	 * 2), nothing written; a posting the ledger refuses fails it (exit 1). */
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-06-30", "-chunk.size:long=10"), 2);
	CBT_CONTAINS(errout, "table \"account\" does not exist");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	ledger_failing(conn);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-06-30", "-chunk.size:long=10"), 1);
	CBT_CONTAINS(out, "FAILED");
	failed = newest_execution(conn);
	/* With the posting accepted, a new instance completes. */
	ledger_unfail(conn);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-07-01", "--json"), 0);
	v = stdout_json();
	CBT_EQ_STR(json_string_value(json_object_get(v, "status")), "COMPLETED");
	CBT_EQ_STR(json_string_value(json_object_get(v, "job_name")), "ledger");
	CBT_PASS(json_is_integer(json_object_get(v, "job_instance_id")) ? 0 : -1, NULL);
	CBT_PASS(json_is_boolean(json_object_get(v, "restarted")) ? 0 : -1, NULL);
	done = json_integer_value(json_object_get(v, "job_execution_id"));
	CBT_EQ_LL(done, newest_execution(conn));
	json_decref(v);
	/* The completed instance does not run again (3). */
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-07-01"), 3);

	CBT_EQ_LL(ADMINDB("executions", "--json"), 0);
	v = stdout_json();
	list = json_object_get(v, "executions");
	CBT_EQ_LL(json_array_size(list), 2);
	e = json_array_get(list, 0); /* newest first */
	CBT_EQ_LL(json_integer_value(json_object_get(e, "job_execution_id")), done);
	json_decref(v);
	CBT_EQ_LL(ADMINDB("executions", "ledger", "--limit", "1", "--json"), 0);
	v = stdout_json();
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 1);
	json_decref(v);
	CBT_EQ_LL(ADMINDB("executions", "other-job", "--json"), 0);
	v = stdout_json();
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 0);
	json_decref(v);
	CBT_EQ_LL(ADMINDB("executions"), 0);
	CBT_CONTAINS(out, "STATUS");
	CBT_CONTAINS(out, "COMPLETED");
	CBT_CONTAINS(out, "FAILED");

	snprintf(id, sizeof(id), "%lld", failed);
	CBT_EQ_LL(ADMINDB("show", id), 0);
	CBT_CONTAINS(out, "FAILED");
	CBT_CONTAINS(out, "day:date=2026-06-30");
	CBT_CONTAINS(out, "-chunk.size:long=10");
	CBT_CONTAINS(out, "STEP");
	CBT_CONTAINS(out, "ROLLBACKS");
	CBT_EQ_LL(ADMINDB("show", id, "--json"), 0);
	v = stdout_json();
	CBT_EQ_LL(json_integer_value(json_object_get(v, "job_execution_id")), failed);
	CBT_PASS(json_is_array(json_object_get(v, "steps")) ? 0 : -1, NULL);
	json_decref(v);

	/* Unknown ids: exit 2, also in JSON mode with an error document. */
	CBT_EQ_LL(ADMINDB("show", "987654"), 2);
	CBT_CONTAINS(errout, "cbatch: ");
	CBT_CONTAINS(errout, "987654");
	CBT_EQ_LL(ADMINDB("--json", "show", "987654"), 2);
	v = stdout_json();
	CBT_EQ_STR(json_string_value(json_object_get(json_object_get(v, "error"), "code")),
		   "CB_ENOTFOUND");
	json_decref(v);
	PQfinish(conn);
}

static void test_stop_abandon_restart(void)
{
	PGconn *conn = fresh();
	long long failed, done, restarted;
	char fid[32], did[32], rid[32];

	ledger_failing(conn);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-06-30"), 1);
	failed = newest_execution(conn);
	ledger_unfail(conn);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-07-01"), 0);
	done = newest_execution(conn);
	snprintf(fid, sizeof(fid), "%lld", failed);
	snprintf(did, sizeof(did), "%lld", done);

	/* Only running executions can be stopped. */
	CBT_EQ_LL(ADMINDB("stop", did), 2);
	CBT_CONTAINS(errout, "cannot stop");
	CBT_CONTAINS(errout, "COMPLETED");
	CBT_EQ_LL(ADMINDB("stop", fid), 2);
	CBT_CONTAINS(errout, "FAILED");
	CBT_EQ_LL(ADMINDB("stop", "987654"), 2);
	/* Only failed or stopped executions can be abandoned. */
	CBT_EQ_LL(ADMINDB("abandon", did), 2);
	CBT_CONTAINS(errout, "cannot abandon");
	CBT_CONTAINS(errout, "COMPLETED");
	CBT_EQ_LL(ADMINDB("abandon", "987654"), 2);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution "
				     "WHERE status IN ('STOPPING', 'ABANDONED')"),
		  0);

	/* The admin binary cannot restart a job it does not register. */
	CBT_EQ_LL(ADMINDB("restart", fid), 2);
	CBT_CONTAINS(errout, "not registered");
	CBT_EQ_LL(ADMINDB("restart", "987654"), 2);
	/* The job program can: with the posting accepted now, the restart completes. */
	CBT_EQ_LL(EXDB("restart", fid), 0);
	CBT_CONTAINS(out, "COMPLETED");
	restarted = newest_execution(conn);
	CBT_PASS(restarted > done ? 0 : -1, NULL);
	snprintf(rid, sizeof(rid), "%lld", restarted);
	/* A completed instance cannot be restarted. */
	CBT_EQ_LL(EXDB("restart", rid), 3);

	/* A fresh failure, abandoned: its instance can never run again. */
	ledger_failing(conn);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-08-01"), 1);
	failed = newest_execution(conn);
	snprintf(fid, sizeof(fid), "%lld", failed);
	CBT_EQ_LL(ADMINDB("abandon", fid), 0);
	CBT_CONTAINS(out, "ABANDONED");
	CBT_EQ_LL(ADMINDB("abandon", fid), 2);
	CBT_CONTAINS(errout, "ABANDONED");
	CBT_EQ_LL(EXDB("restart", fid), 3);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-08-01"), 3);
	PQfinish(conn);
}

/* ---- times and their zones ----------------------------------------------- */

/* The database's @p col of execution @p id as ISO 8601 in @p zone, to the
 * second, with @p suffix as the offset. */
static void db_time(PGconn *conn, char buf[64], size_t size, const char *col, long long id,
		    const char *zone, const char *suffix)
{
	char sql[512], t[40];

	snprintf(sql, sizeof(sql),
		 "SELECT to_char(date_trunc('second', %s) AT TIME ZONE '%s', "
		 "'YYYY-MM-DD\"T\"HH24:MI:SS') FROM batch_job_execution WHERE job_execution_id = "
		 "%lld",
		 col, zone, id);
	cbt_query_str(conn, sql, t, sizeof(t));
	snprintf(buf, size, "%s%s", t, suffix);
}

static void test_times_carry_their_zone(void)
{
	PGconn *conn = fresh();
	char id[32], tokyo[64], utc[64], kolkata[64], json_before[65536];
	const char *old_tz = getenv("TZ");
	char saved_tz[256] = "";
	long long e;
	json_t *v;

	if (old_tz)
		snprintf(saved_tz, sizeof(saved_tz), "%s", old_tz);
	/* A posting the ledger refuses fails the job: an execution with times. */
	ledger_failing(conn);
	CBT_EQ_LL(EXDB("run", "ledger", "day:date=2026-06-30"), 1);
	e = newest_execution(conn);
	snprintf(id, sizeof(id), "%lld", e);
	/* Zones without daylight saving time: the offset does not hang on the date. */
	db_time(conn, tokyo, sizeof(tokyo), "start_time", e, "Asia/Tokyo", "+09:00");
	db_time(conn, utc, sizeof(utc), "start_time", e, "UTC", "Z");
	db_time(conn, kolkata, sizeof(kolkata), "start_time", e, "Asia/Kolkata", "+05:30");
	CBT_EQ_LL(ADMINDB("--json", "executions"), 0);
	snprintf(json_before, sizeof(json_before), "%s", out);

	/* Local time by default: the host's zone (TZ), with its offset. */
	setenv("TZ", "Asia/Tokyo", 1);
	unsetenv("CBATCH_TZ");
	CBT_EQ_LL(ADMINDB("executions"), 0);
	CBT_CONTAINS(out, tokyo);
	CBT_EQ_LL(ADMINDB("show", id), 0);
	CBT_CONTAINS(out, tokyo);
	/* --utc: UTC, written Z (as the scheduler's {fire_utc}). */
	CBT_EQ_LL(ADMINDB("--utc", "executions"), 0);
	CBT_CONTAINS(out, utc);
	CBT_EQ_LL(ADMINDB("show", id, "--utc"), 0);
	CBT_CONTAINS(out, utc);
	/* CBATCH_TZ names a zone of the server's tz data, over the local one;
	 * --utc wins over it. */
	setenv("CBATCH_TZ", "Asia/Kolkata", 1);
	CBT_EQ_LL(ADMINDB("executions"), 0);
	CBT_CONTAINS(out, kolkata);
	CBT_EQ_LL(ADMINDB("show", id), 0);
	CBT_CONTAINS(out, kolkata);
	CBT_EQ_LL(ADMINDB("--utc", "show", id), 0);
	CBT_CONTAINS(out, utc);
	/* cleanup prints its cutoff after it has closed its connection. */
	CBT_EQ_LL(ADMINDB("cleanup", "--older-than", "1d", "--dry-run"), 0);
	CBT_CONTAINS(out, "+05:30 (older than 1d)");
	CBT_EQ_LL(ADMINDB("--json", "cleanup", "--older-than", "1d", "--dry-run"), 0);
	v = stdout_json();
	{
		/* RFC 3339 as the other JSON times, not the server's "... +00". */
		const char *ct = json_string_value(json_object_get(v, "cutoff"));
		size_t n = ct ? strlen(ct) : 0;

		CBT_PASS(n > 25 && ct[10] == 'T' && ct[n - 3] == ':' ? 0 : -1, NULL);
	}
	json_decref(v);
	/* JSON is a machine format: RFC 3339 as the server writes it, whatever
	 * zone people are shown. */
	CBT_EQ_LL(ADMINDB("--json", "executions"), 0);
	CBT_EQ_STR(out, json_before);
	v = stdout_json();
	{
		const char *st = json_string_value(json_object_get(
			json_array_get(json_object_get(v, "executions"), 0), "start_time"));
		size_t n = st ? strlen(st) : 0;

		CBT_PASS(
			st && n > 20 && st[10] == 'T' &&
					(st[n - 1] == 'Z' || st[n - 6] == '+' || st[n - 6] == '-') ?
				0 :
				-1,
			NULL);
	}
	json_decref(v);

	/* A schedule's next firing is shown in its own zone, whatever is asked. */
	CBT_EQ_LL(EXDB("schedule", "add", "nightly", "--cron", "0 3 * * *", "--tz", "Asia/Kolkata",
		       "--job", "ledger", "day:date={fire_date}"),
		  0);
	CBT_EQ_LL(EXDB("schedule", "add", "tokyo", "--cron", "0 4 * * *", "--tz", "Asia/Tokyo",
		       "--job", "ledger", "day:date={fire_date}"),
		  0);
	CBT_EQ_LL(ADMINDB("--utc", "schedule", "list"), 0);
	CBT_CONTAINS(out, "T03:00:00+05:30");
	CBT_CONTAINS(out, "T04:00:00+09:00");
	CBT_EQ_LL(ADMINDB("--utc", "schedule", "show", "tokyo"), 0);
	CBT_CONTAINS(out, "T04:00:00+09:00");

	/* An unknown zone: exit 2 naming it, before anything is shown. */
	setenv("CBATCH_TZ", "Mars/Base", 1);
	CBT_EQ_LL(ADMINDB("executions"), 2);
	CBT_CONTAINS(errout, "CBATCH_TZ");
	CBT_CONTAINS(errout, "'Mars/Base'");
	CBT_EQ_LL(ADMINDB("--json", "show", id), 2);
	v = stdout_json();
	CBT_EQ_LL(json_integer_value(json_object_get(json_object_get(v, "error"), "exit_code")), 2);
	json_decref(v);
	/* A POSIX specification is no zone name (its sign means west). */
	setenv("CBATCH_TZ", "UTC+3", 1);
	CBT_EQ_LL(ADMINDB("executions"), 2);
	CBT_CONTAINS(errout, "'UTC+3'");
	/* --utc does not consult it. */
	CBT_EQ_LL(ADMINDB("--utc", "executions"), 0);
	CBT_CONTAINS(out, utc);

	unsetenv("CBATCH_TZ");
	if (old_tz)
		setenv("TZ", saved_tz, 1);
	else
		unsetenv("TZ");
	PQfinish(conn);
}

/* ---- help and the command list ------------------------------------------- */

/* Whether @p word is one of the whitespace-separated words of @p text. */
static int has_word(const char *text, const char *word, size_t n)
{
	const char *p = text;

	while ((p = strstr(p, word)) != NULL) {
		const char *q = p + n;

		if ((p == text || p[-1] == ' ' || p[-1] == '\n') &&
		    (*q == '\0' || *q == ' ' || *q == '\n'))
			return 1;
		p++;
	}
	return 0;
}

/* Every word of every built-in command's synopsis, whole, in @p help. */
static void check_synopsis_words(const char *help, const char *only)
{
	const char *name, *syn, *summary, *more;

	for (size_t i = 0; cb__cli_builtin_at(i, &name, &syn, &summary, &more) == 0; i++) {
		const char *p = syn;

		if (only && strcmp(only, name) != 0)
			continue;
		CBT_PASS(has_word(help, name, strlen(name)) ? 0 : -1, NULL);
		while (*p) {
			char word[200];
			size_t n = strcspn(p, " ");

			if (n > 0 && n < sizeof(word)) {
				memcpy(word, p, n);
				word[n] = '\0';
				if (!has_word(help, word, n))
					CBT_FAILF("%s: synopsis word '%s' is not whole in the help",
						  name, word);
			}
			p += n;
			while (*p == ' ')
				p++;
		}
	}
}

static void test_help_wraps_without_cutting(void)
{
	const char *name, *syn, *summary, *more;
	size_t i;

	CBT_EQ_LL(ADMIN("--help"), 0);
	check_synopsis_words(out, NULL);
	/* The cuts the general help used to make. */
	CBT_PASS(strstr(out, "--quie ") || strstr(out, "[--ba ") ? -1 : 0, NULL);
	for (i = 0; cb__cli_builtin_at(i, &name, &syn, &summary, &more) == 0; i++) {
		CBT_EQ_LL(ADMIN(name, "--help"), 0);
		check_synopsis_words(out, name);
		/* The usage lines fit a terminal unless one word cannot. */
		for (const char *l = out; *l;) {
			size_t n = strcspn(l, "\n");

			if (strncmp(l, "usage:", 6) == 0 && n > 79)
				CBT_FAILF("%s: usage line of %zu columns", name, n);
			l += n + (l[n] == '\n');
			if (n == 0 || l[-1] != '\n')
				break;
		}
	}
}

/* The command list: the code block under "# Running jobs" (docs/running-jobs.md). */
static char *readme_block(void)
{
	char path[4096], *text, *a, *b;

	snprintf(path, sizeof(path), "%s/docs/running-jobs.md", cbt_source_dir());
	text = cbt_slurp(path, NULL);
	if (!text) {
		CBT_FAILF("cannot read %s", path);
		return NULL;
	}
	a = strstr(text, "# Running jobs\n");
	a = a ? strstr(a, "\n```\n") : NULL;
	b = a ? strstr(a + 5, "\n```\n") : NULL;
	if (!a || !b) {
		CBT_FAILF("docs/running-jobs.md: no code block under '# Running jobs'");
		free(text);
		return NULL;
	}
	*b = '\0';
	memmove(text, a + 4, strlen(a + 4) + 1);
	return text;
}

/* Whether option @p opt ("--lease") appears in @p text as a whole option. */
static int has_option(const char *text, const char *opt, size_t n)
{
	for (const char *p = text; (p = strstr(p, opt)) != NULL; p++) {
		char c = p[n];

		if (!((c >= 'a' && c <= 'z') || c == '-'))
			return 1;
	}
	return 0;
}

/* Every "--option" of @p text, in @p block; a missing one is reported as
 * @p fmt says (its %s: @p cmd, then the option). */
static void check_options_as(const char *block, const char *cmd, const char *text, const char *fmt)
{
	for (const char *p = text; (p = strstr(p, "--")) != NULL;) {
		size_t n = 2;
		char opt[64];

		while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] == '-' && p[n + 1] != '-'))
			n++;
		if (n > 3 && n < sizeof(opt) && (p == text || p[-1] != '-')) {
			memcpy(opt, p, n);
			opt[n] = '\0';
			if (!has_option(block, opt, n))
				CBT_FAILF(fmt, cmd, opt);
		}
		p += n;
	}
}

static void check_options(const char *block, const char *cmd, const char *text)
{
	check_options_as(block, cmd, text,
			 "docs/running-jobs.md's command list lacks %s's option %s");
}

static void test_readme_lists_every_command(void)
{
	const char *name, *syn, *summary, *more;
	char *block = readme_block();

	if (!block)
		return;
	/* Every command of the table, with every option its help names. */
	for (size_t i = 0; cb__cli_builtin_at(i, &name, &syn, &summary, &more) == 0; i++) {
		char line[128];

		snprintf(line, sizeof(line), "\n  %s ", name);
		if (!strstr(block, line)) {
			snprintf(line, sizeof(line), "\n  %s\n", name);
			if (!strstr(block, line))
				CBT_FAILF(
					"docs/running-jobs.md's command list lacks the command '%s'",
					name);
		}
		check_options(block, name, syn);
		check_options(block, name, more);
	}
	check_options(block, "cbatch", "--db --json --utc");
	/* Every command it lists exists: a built-in, or (example-setup) one of
	 * the example program's own. */
	for (const char *l = block; (l = strstr(l, "\n  ")) != NULL;) {
		char word[64];
		size_t n;

		l += 3;
		if (*l < 'a' || *l > 'z')
			continue;
		n = strcspn(l, " \n");
		if (n >= sizeof(word))
			n = sizeof(word) - 1;
		memcpy(word, l, n);
		word[n] = '\0';
		if (cb__cli_is_builtin(word))
			continue;
		if (EX(word, "--help") != 0 || !strstr(out, "A command of this program"))
			CBT_FAILF(
				"docs/running-jobs.md's command list has '%s', which is no command",
				word);
	}
	free(block);
}

/* A command's usage line names every option its help explains (the
 * scheduler's lacked --exit-after), and serve's help lists every route the
 * server answers, actions included (it named 4 of 8). */
static void test_usage_lines_name_every_option(void)
{
	const char *name, *syn, *summary, *more;
	static const char *const posts[] = { "/api/v1/executions/{id}/stop",
					     "/api/v1/executions/{id}/abandon",
					     "/api/v1/executions/{id}/restart",
					     "/api/v1/jobs/{id}/executions",
					     "/api/v1/schedules/{id}/pause",
					     "/api/v1/schedules/{id}/resume",
					     "/api/v1/schedules/{id}/fire",
					     "/api/v1/locks/{name}/unlock",
					     NULL };

	for (size_t i = 0; cb__cli_builtin_at(i, &name, &syn, &summary, &more) == 0; i++) {
		const struct cb__cli_builtin *b = cb__cli_builtin_find(name);

		/* `schedule SUB ...`: its sub-commands' usage is in its help */
		if (b->subs)
			continue;
		for (size_t k = 0; b->options && b->options[k].name; k++)
			check_options_as(syn, name, b->options[k].name,
					 "%s: its help names %s, its usage line does not");
	}
	CBT_EQ_LL(ADMIN("serve", "--help"), 0);
	for (size_t i = 0; posts[i]; i++) {
		char line[128];

		snprintf(line, sizeof(line), "POST %s\n", posts[i]);
		CBT_CONTAINS(out, line);
	}
	CBT_CONTAINS(out, "GET  /api/v1/schedules/{id}/firings");
}

/* Whether @p err is a refusal of the command's arguments. */
static int refused(const char *err)
{
	static const char *const words[] = { "unknown option",      "unknown argument",
					     "unexpected argument", "too many arguments",
					     "takes no arguments",  NULL };

	for (size_t i = 0; words[i]; i++)
		if (strstr(err, words[i]))
			return 1;
	return 0;
}

/* A value of the kind @p arg names that the option's parser takes. */
static const char *value_for(const char *arg, char *buf, size_t size)
{
	static const char *const kinds[][2] = {
		{ "DURATION", "1d" },       { "ADDR:PORT", "127.0.0.1:0" },
		{ "PATH", "/nonexistent" }, { "EXPR", "0 2 * * *" },
		{ "ZONE", "UTC" },          { "TEXT", "why" },
		{ "JOB", "ledger" },        { "NAME", "x" },
		{ "NAME[:PORT]", "x" },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(arg, kinds[i][0]) == 0)
			return kinds[i][1];
	if (strchr(arg, '|')) { /* a choice: its first word */
		snprintf(buf, size, "%.*s", (int)strcspn(arg, "|"), arg);
		return buf;
	}
	return "1";
}

/*
 * `cbatch [--db DB] CMD [SUB] [ARG] OPTION [VALUE]`: the parser of CMD (SUB)
 * takes @p opt (NULL: an option no table names, which it must refuse).
 * Without a database but for schedule, which connects before it reads its
 * sub-command's arguments; nothing is ever done (no --cron, no job, ...).
 */
static void check_accepts(const char *cmd, const char *sub, const char *syn,
			  const struct cb__cli_option *opt)
{
	const char *argv[16];
	char buf[64];
	size_t n = 0;

	argv[n++] = cbt_cli_bin();
	argv[n++] = "--db";
	argv[n++] = sub ? db : "host=/nonexistent/cbatch port=1";
	argv[n++] = cmd;
	if (sub)
		argv[n++] = sub;
	if (strcmp(cmd, "schema") == 0)
		argv[n++] = "init";
	else if (sub ? strcmp(sub, "list") != 0 : strncmp(syn, "JOB", 3) == 0)
		argv[n++] = sub ? "x" : "ledger";
	else if (strncmp(syn, "EXECUTION_ID", 12) == 0)
		argv[n++] = "1";
	else if (strncmp(syn, "LOCK_NAME", 9) == 0)
		argv[n++] = "x";
	argv[n++] = opt ? opt->name : "--no-such-option";
	if (opt && opt->arg)
		argv[n++] = value_for(opt->arg, buf, sizeof(buf));
	argv[n] = NULL;
	cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
	if (opt && refused(errout))
		CBT_FAILF("%s%s%s: the table's option %s is refused: %s", cmd, sub ? " " : "",
			  sub ? sub : "", opt->name, errout);
	if (!opt && !refused(errout))
		CBT_FAILF("%s%s%s: an option no table names is not refused: %s", cmd,
			  sub ? " " : "", sub ? sub : "", errout);
}

/* Every option the command table names (help, manual page, completion) is
 * one its command's parser takes, and the parsers refuse others. */
static void test_every_option_of_the_table_is_taken(void)
{
	PGconn *conn = fresh();

	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		const struct cb__cli_builtin *b = &cb__cli_builtins[i];
		const char *name = cb__builtin_name(b->id);

		if (!b->subs || strcmp(name, "schema") == 0)
			check_accepts(name, NULL, b->synopsis, NULL);
		for (size_t k = 0; b->options && b->options[k].name; k++) {
			const char *p = b->options[k].sub;

			if (!p)
				check_accepts(name, NULL, b->synopsis, &b->options[k]);
			while (p && *p) {
				char sub[32];
				size_t len = strcspn(p, " ");

				snprintf(sub, sizeof(sub), "%.*s", (int)len, p);
				check_accepts(name, sub, "", &b->options[k]);
				check_accepts(name, sub, "", NULL);
				p += len + (p[len] == ' ');
			}
		}
	}
	/* Nothing was done. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule"), 0);
	PQfinish(conn);
}

/* A command started while the database has no read-write primary (a
 * switchover: every server reached is read-only for a moment) waits for one,
 * as a scheduler's firing started then must, instead of exiting 6 with its
 * instant lost; a connection string that is wrong still fails at once. */
static void test_a_run_started_without_a_primary_waits_for_one(void)
{
	PGconn *conn = fresh();
	char rw[CBT_CONNINFO_MAX + 64], log[4096], dbname[128], sql[300], *text = NULL;
	const char *argv[8];
	pid_t pid;
	double t0;

	CBT_EQ_LL(EXDB("example-setup", "tick"), 0);
	cbt_query_str(conn, "SELECT current_database()", dbname, sizeof(dbname));
	snprintf(rw, sizeof(rw), "%s target_session_attrs=read-write", db);
	snprintf(sql, sizeof(sql), "ALTER DATABASE \"%s\" SET default_transaction_read_only = on",
		 dbname);
	cbt_exec(conn, sql);
	snprintf(log, sizeof(log), "%s/cli-no-primary-%d.log", cbt_tmpdir(), (int)getpid());
	argv[0] = cbt_examples_bin();
	argv[1] = "--db";
	argv[2] = rw;
	argv[3] = "run";
	argv[4] = "tick";
	argv[5] = "at=no-primary";
	argv[6] = NULL;
	pid = cbt_spawn(argv, log);
	CU_ASSERT_FATAL(pid > 0);
	for (t0 = cbt_now(); cbt_now() - t0 < 60; cbt_sleep_ms(50)) {
		free(text);
		text = cbt_slurp(log, NULL);
		if (text && strstr(text, "no read-write primary just now"))
			break;
	}
	CBT_CONTAINS(text ? text : "", "no read-write primary just now");
	free(text);
	snprintf(sql, sizeof(sql), "ALTER DATABASE \"%s\" RESET default_transaction_read_only",
		 dbname);
	cbt_exec(conn, sql);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED'"),
		  1);
	/* A wrong port is not a switchover: exit 6 at once. */
	t0 = cbt_now();
	CBT_EQ_LL(EX("--db", "host=/nonexistent-dir port=1 dbname=x", "run", "tick", "at=x"), 6);
	CU_ASSERT(cbt_now() - t0 < 10);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "a_run_started_without_a_primary_waits_for_one",
	  test_a_run_started_without_a_primary_waits_for_one },
	{ "a standby is named with what to do", test_a_standby_is_named_with_what_to_do },
	{ "help for every command", test_help_for_every_command },
	{ "usage errors exit 2", test_usage_errors_exit_2 },
	{ "unknown job exits 2", test_unknown_job_exits_2 },
	{ "jobs lists registered jobs", test_jobs_lists_registered_jobs },
	{ "bad parameter writes nothing", test_bad_parameter_writes_nothing },
	{ "schema init twice", test_schema_init_twice },
	{ "executions and show", test_executions_and_show },
	{ "stop, abandon, restart", test_stop_abandon_restart },
	{ "times carry their zone", test_times_carry_their_zone },
	{ "help wraps without cutting", test_help_wraps_without_cutting },
	{ "README lists every command", test_readme_lists_every_command },
	{ "usage lines name every option", test_usage_lines_name_every_option },
	{ "every option of the table is taken", test_every_option_of_the_table_is_taken },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("cli", init, clean, tests);
}
