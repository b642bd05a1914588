/*
 * Text at the edges (issue 8, items 10-13): messages that are not valid UTF-8
 * still end the execution and are recorded; control characters in values are
 * escaped on the terminal; passwords never show in `ps` or in messages;
 * metrics and example-setup print real JSON; metrics work whatever
 * standard_conforming_strings says and escape label values; `schema init` on
 * an up-to-date schema needs no CREATE; declared parameters are listed; JSON
 * durations are printed with sensible precision.
 */
#define _GNU_SOURCE /* memmem */
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cbatch.h>

#include "cbtest.h"
#include "numbers.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static char out[65536], errout[16384];

static int init(void)
{
	if (cbt_repo_db(db, sizeof(db), "text", &conn) < 0)
		return -1;
	return cbt_exec(conn, "CREATE TABLE sink (n bigint)") == 0 ? 0 : -1;
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* Run a program with up to 8 arguments after `--db DB` (NULL-terminated). */
static int run_with(const char *bin, const char *dbinfo, const char *const *args)
{
	const char *argv[16] = { bin, "--db", dbinfo };
	int n = 3;

	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_with(cbt_examples_bin(), db, (const char *const[]){ __VA_ARGS__, NULL })

/* ---- item 10: messages that are not valid UTF-8 ----------------------------- */

typedef struct hostile {
	cbt_numbers n;
	long long fail_on; /* the item whose processing fails */
} hostile;

/* A processor quoting its input as people do: a field cut at 5 bytes (in the
 * middle of "é") and raw bytes as read from a file. */
static int hostile_process(void *state, cb_chunk *chunk, void *item, void **out_item, cb_error *err)
{
	hostile *h = state;
	long long v = *(long long *)item;

	(void)chunk;
	if (v == h->fail_on)
		return cb_error_set(err, CB_EINVAL, "item %lld: bad name '%.5s' in '%s'", v,
				    "abcd\xC3\xA9", "raw \xFF\xFE bytes");
	*out_item = item;
	return 0;
}

static int hostile_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts,
			 cb_error *err)
{
	hostile *h = user;
	int rc = cbt_numbers_build(&h->n, sc, parts, err);

	parts->processor = (cb_processor){ .version = CB_PROCESSOR_VERSION,
					   .state = h,
					   .process = hostile_process };
	return rc;
}

static cb_job *hostile_job(const char *name, hostile *h, int skip)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	CBT_PASS_FATAL(cb_job_new(&job, name, &err), &err);
	s.name = "load";
	s.build = hostile_build;
	s.user = h;
	s.chunk_size = 2;
	if (skip) {
		s.classify = cb_classify_skip_invalid;
		s.skip_limit = 5;
	}
	CBT_PASS_FATAL(cb_job_add_step(job, &s, &err), &err);
	return job;
}

#define FFFD "\xEF\xBF\xBD"

static void test_failure_with_invalid_utf8_message_ends_failed_and_is_recorded(void)
{
	cb_error err = CB_ERROR_INIT;
	hostile h;
	cb_job *job;
	cb_job_result r;
	char sql[512], got[1024];

	memset(&h, 0, sizeof(h));
	h.n.last = 6;
	h.fail_on = 3;
	job = hostile_job("utf8_fail", &h, 0);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	CBT_CONTAINS(r.exit_message, "bad name 'abcd" FFFD "' in 'raw " FFFD FFFD " bytes'");
	/* The repository has the end of both executions, and the real error. */
	snprintf(sql, sizeof(sql),
		 "SELECT s.status || ' ' || s.exit_code || ' | ' || s.exit_message FROM "
		 "batch_step_execution s WHERE s.job_execution_id = %lld",
		 r.job_execution_id);
	cbt_query_str(conn, sql, got, sizeof(got));
	CBT_CONTAINS(got, "FAILED FAILED | ");
	CBT_CONTAINS(got,
		     "item 3: bad name 'abcd\xEF\xBF\xBD' in 'raw \xEF\xBF\xBD\xEF\xBF\xBD bytes'");
	snprintf(sql, sizeof(sql),
		 "SELECT status || ' | ' || exit_message FROM batch_job_execution WHERE "
		 "job_execution_id = %lld",
		 r.job_execution_id);
	cbt_query_str(conn, sql, got, sizeof(got));
	CBT_CONTAINS(got, "FAILED | ");
	CBT_CONTAINS(got, "bad name 'abcd" FFFD "'");
	cb_job_free(job);
}

static void test_skip_with_invalid_utf8_message_is_recorded(void)
{
	cb_error err = CB_ERROR_INIT;
	hostile h;
	cb_job *job;
	cb_job_result r;
	char sql[768], got[1024];

	memset(&h, 0, sizeof(h));
	h.n.last = 6;
	h.fail_on = 4;
	job = hostile_job("utf8_skip", &h, 1);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	snprintf(sql, sizeof(sql),
		 "SELECT s.process_skip_count || ' ' || jsonb_array_length("
		 " c.serialized_context->'skipped') || ' ' || "
		 " (c.serialized_context->'skipped'->0->>'message') FROM batch_step_execution s "
		 "JOIN batch_step_execution_context c USING (step_execution_id) "
		 "WHERE s.job_execution_id = %lld",
		 r.job_execution_id);
	cbt_query_str(conn, sql, got, sizeof(got));
	CBT_CONTAINS(got, "1 1 ");
	CBT_CONTAINS(got, "item 4: bad name 'abcd" FFFD "' in 'raw " FFFD FFFD " bytes'");
	cb_job_free(job);
}

/* Non-zero if @p s holds a byte that moves a terminal: C0 (but the line
 * ends), DEL, or a C1 control. */
static int has_raw_control(const char *s)
{
	for (; *s; s++) {
		unsigned char u = (unsigned char)*s;

		if ((u < 0x20 && u != '\n') || u == 0x7F ||
		    (u == 0xC2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] < 0xA0))
			return 1;
	}
	return 0;
}

static int done_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			cb_error *err)
{
	(void)user;
	(void)sc;
	(void)tx;
	(void)context;
	(void)err;
	return CB_DONE;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_control_characters_are_escaped_in_tables(void)
{
	/* A value that would forge a row of `locks` and repaint the screen. */
	static const char forged[] =
		"tag=x\nforged:lock  root@host  99  60.0s  held  1\x1b[2J\xC2\x9B";
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;
	cb_params *p = NULL;
	cb_job_result r;
	char id[32], sql[256];

	/* A job with the default lock name, which carries the value. */
	CBT_PASS_FATAL(cb_job_new(&job, "forge", &err), &err);
	s.kind = CB_STEP_TASKLET;
	s.name = "once";
	s.tasklet = done_tasklet;
	CBT_PASS_FATAL(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS_FATAL(cb_params_new(&p, &err), &err);
	CBT_PASS_FATAL(cb_params_parse_arg(p, forged, &err), &err);
	CBT_PASS_FATAL(cb_job_launch(&r, conn, job, p, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	cb_params_free(p);
	cb_job_free(job);
	snprintf(id, sizeof(id), "%lld", r.job_execution_id);
	/* The lock stays listed after release. */
	CBT_EQ_LL(EX("locks"), 0);
	CU_ASSERT(!has_raw_control(out));
	CBT_CONTAINS(out,
		     "forge:tag=x\\nforged:lock  root@host  99  60.0s  held  1\\x1B[2J\\u009B");
	snprintf(sql, sizeof(sql), "SELECT count(*) + 1 FROM batch_lock");
	CBT_EQ_LL(count_lines(out), cbt_query_ll(conn, sql));
	CBT_EQ_LL(EX("show", id), 0);
	CU_ASSERT(!has_raw_control(out));
	/* Shown as bash would take it back. */
	CBT_CONTAINS(out,
		     "$'tag=x\\nforged:lock  root@host  99  60.0s  held  1\\x1B[2J\\xC2\\x9B'");
	CBT_EQ_LL(EX("executions"), 0);
	CU_ASSERT(!has_raw_control(out));
	/* The JSON keeps the value as it is. */
	CBT_EQ_LL(EX("--json", "locks"), 0);
	CBT_CONTAINS(out, "forge:tag=x\\nforged:lock");
}

/* ---- item 11: passwords --------------------------------------------------- */

/* Read /proc/PID/cmdline into @p buf; @return its length. */
static size_t read_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, size);
	close(fd);
	return n > 0 ? (size_t)n : 0;
}

/* Start `executions` with @p dbarg and check its command line while it waits
 * on a lock that this test holds. */
static void check_scrubbed(const char *flag, const char *dbarg, const char *secret)
{
	PGconn *holder = cbt_connect(db);
	const char *argv[6] = { cbt_cli_bin(), flag, dbarg, "executions", NULL, NULL };
	char cmdline[4096];
	size_t n = 0;
	pid_t pid;
	int waiting = 0;

	if (strncmp(flag, "--db=", 5) == 0) {
		argv[1] = flag;
		argv[2] = "executions";
		argv[3] = NULL;
	}
	cbt_exec(holder, "BEGIN; LOCK TABLE batch_schema_version IN ACCESS EXCLUSIVE MODE");
	pid = cbt_spawn(argv, NULL);
	/* Until it waits (up to 60 s: a sanitizer build on a loaded machine). */
	for (double deadline = cbt_now() + 60; !waiting && cbt_now() < deadline;) {
		cbt_sleep_ms(50);
		waiting =
			cbt_query_ll(conn, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
					   "current_database() AND wait_event_type = 'Lock'") > 0;
	}
	CU_ASSERT(waiting);
	n = read_cmdline(pid, cmdline, sizeof(cmdline));
	CU_ASSERT(n > 0);
	if (memmem(cmdline, n, secret, strlen(secret)))
		CBT_FAILF("the password is visible in /proc/%d/cmdline (%s)", (int)pid, flag);
	/* What is left still names the database (only the secret is gone). */
	CU_ASSERT(memmem(cmdline, n, "executions", 10) != NULL);
	cbt_exec(holder, "COMMIT");
	CBT_EQ_LL(cbt_wait_timeout(pid, 30000), 0);
	PQfinish(holder);
}

static void test_password_is_scrubbed_from_the_command_line(void)
{
	char kv[CBT_CONNINFO_MAX + 64], uri[CBT_CONNINFO_MAX + 64];

	snprintf(kv, sizeof(kv), "%s password=hunter2kv", db);
	check_scrubbed("--db", kv, "hunter2kv");
	snprintf(uri, sizeof(uri), "--db=postgresql://%s:hunter2uri@/%s?host=%s&port=%s",
		 PQuser(conn), PQdb(conn), PQhost(conn), PQport(conn));
	check_scrubbed(uri, NULL, "hunter2uri");
}

static void test_malformed_uri_error_has_no_password(void)
{
	static const char bad[] = "postgresql://alice:hunter2bad@[::1/app";
	json_error_t jerr;
	json_t *v;

	CBT_EQ_LL(run_with(cbt_cli_bin(), bad, (const char *const[]){ "executions", NULL }), 1);
	CBT_CONTAINS(errout, "cannot connect");
	CU_ASSERT(strstr(errout, "hunter2bad") == NULL);
	CBT_EQ_LL(
		run_with(cbt_cli_bin(), bad, (const char *const[]){ "--json", "executions", NULL }),
		1);
	CU_ASSERT(strstr(errout, "hunter2bad") == NULL);
	CU_ASSERT(strstr(out, "hunter2bad") == NULL);
	v = json_loads(out, 0, &jerr);
	CU_ASSERT(v != NULL);
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "postgresql://alice:***@");
	json_decref(v);
	/* Key/value form, quoted. */
	CBT_EQ_LL(run_with(cbt_cli_bin(), "host=/nonexistent password='hunter2 kv' port=x",
			   (const char *const[]){ "executions", NULL }),
		  1);
	CU_ASSERT(strstr(errout, "hunter2") == NULL);
}

/* libpq quotes parts of a malformed connection string on their own: a bad
 * percent-encoding ("invalid percent-encoded token"), the rest of a password
 * after a raw '@' as a host name. None of it may reach stderr or --json. */
static void test_no_form_of_password_is_echoed(void)
{
	static const char *const bad[] = {
		"postgresql://alice:Zq7Secret%zz@/app",
		"postgresql://alice:Zq7Secret%2@/app",
		"postgres://alice:Zq7%40Secret%zz@/app",
		"postgresql://alice:Zq7Sec@ret9x@nohost.invalid/app",
		"postgresql://alice@/app?password=Zq7Secret%zz&host=/nonexistent",
		"postgresql://alice@/app?host=/nonexistent&password=Zq7Secret%zz",
		"host=/nonexistent password='Zq7 Sec\\'ret%zz' port=x",
		"host=/nonexistent password = Zq7Secret%zz port=99999999",
		"host=/nonexistent password='Zq7Secret",
		"postgresql://alice:Zq7Secret@[::1/app",
		"postgresql://alice:Zq7Secret%zz@[::1/app",
	};
	static const char *const parts[] = { "Zq7", "ecret", "Sec\\'", "ret9x" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int json = 0; json < 2; json++) {
			const char *const args[] = { json ? "--json" : "executions",
						     json ? "executions" : NULL, NULL };

			int rc = run_with(cbt_cli_bin(), bad[i], args);

			/* 1: refused as given; 6: a server was tried and not reached */
			if (rc != 1 && rc != 6)
				CBT_FAILF("'%s': exit %d, not 1 or 6", bad[i], rc);
			CBT_CONTAINS(errout, "cannot connect to the database");
			for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
				if (strstr(errout, parts[k]) || strstr(out, parts[k]))
					CBT_FAILF("'%s' shows '%s': %s%s", bad[i], parts[k], errout,
						  out);
		}
	/* A message that quotes no password is shown as it is. */
	CBT_EQ_LL(run_with(cbt_cli_bin(), "host=/nonexistent password=Zq7Secret port=x",
			   (const char *const[]){ "executions", NULL }),
		  1);
	CBT_CONTAINS(errout, "invalid integer value \"x\" for connection option \"port\"");
}

/* ---- item 12: metrics and example-setup as JSON, escaping, SCS=off --------- */

static void weird_job(void)
{
	cbt_exec(conn, "WITH i AS (INSERT INTO batch_job_instance (job_name, job_key) VALUES "
		       "($$we\"ird\\job\nx$$, repeat('0', 32)) RETURNING job_instance_id), "
		       "e AS (INSERT INTO batch_job_execution (job_instance_id, status) "
		       " SELECT job_instance_id, 'COMPLETED' FROM i RETURNING job_execution_id) "
		       "INSERT INTO batch_step_execution (step_name, job_execution_id, status, "
		       " read_count) SELECT 's', job_execution_id, 'COMPLETED', 7 FROM e");
}

/* Every line of the exposition matches the format (strictly). */
static void check_exposition(const char *text)
{
	static const char *const forms[] = {
		"^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* ([^\\\\]|\\\\[\\\\n])*$",
		"^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge)$",
		/* one literal in two lines (parenthesized: not two elements) */
		("^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\[\\\\\"n])*\""
		 "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\[\\\\\"n])*\")*\\})? -?[0-9]+$"),
	};
	regex_t re[3];
	char line[4096];
	const char *p = text;
	int lines = 0;

	for (int i = 0; i < 3; i++)
		CBT_EQ_LL(regcomp(&re[i], forms[i], REG_EXTENDED | REG_NOSUB), 0);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		int ok = 0;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		for (int i = 0; i < 3 && !ok; i++)
			ok = regexec(&re[i], line, 0, NULL, 0) == 0;
		if (!ok)
			CBT_FAILF("not an exposition line: '%s'", line);
		lines++;
		p += n + (nl ? 1 : 0);
	}
	CU_ASSERT(lines > 10);
	for (int i = 0; i < 3; i++)
		regfree(&re[i]);
}

static void test_metrics_escape_labels_and_print_json(void)
{
	json_error_t jerr;
	json_t *v, *list;
	size_t i;
	int found = 0;

	weird_job();
	CBT_EQ_LL(EX("metrics"), 0);
	check_exposition(out);
	CBT_CONTAINS(out, "cbatch_items_read_total{batch_job=\"we\\\"ird\\\\job\\nx\"} 7\n");
	CBT_CONTAINS(out, "# TYPE cbatch_lock_acquire_success_total counter\n");

	CBT_EQ_LL(EX("--json", "metrics"), 0);
	v = json_loads(out, 0, &jerr);
	if (!v)
		CBT_FAILF("metrics --json is not JSON: %s: %.200s", jerr.text, out);
	list = json_object_get(v, "metrics");
	CU_ASSERT(json_array_size(list) > 10);
	for (i = 0; i < json_array_size(list); i++) {
		json_t *s = json_array_get(list, i);
		const char *job = json_string_value(
			json_object_get(json_object_get(s, "labels"), "batch_job"));
		const char *type = json_string_value(json_object_get(s, "type"));

		CU_ASSERT(json_is_string(json_object_get(s, "name")));
		CU_ASSERT(json_is_string(json_object_get(s, "help")));
		CU_ASSERT(type && (strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0));
		CU_ASSERT(json_is_integer(json_object_get(s, "value")));
		if (job && strcmp(job, "we\"ird\\job\nx") == 0 &&
		    strcmp(json_string_value(json_object_get(s, "name")),
			   "cbatch_items_read_total") == 0) {
			CBT_EQ_LL(json_integer_value(json_object_get(s, "value")), 7);
			found = 1;
		}
	}
	CU_ASSERT(found);
	json_decref(v);
}

static void test_metrics_work_without_standard_conforming_strings(void)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "ALTER DATABASE %s SET standard_conforming_strings = off",
		 PQdb(conn));
	cbt_exec(conn, sql);
	CBT_EQ_LL(EX("metrics"), 0);
	check_exposition(out);
	CBT_EQ_LL(EX("--json", "metrics"), 0);
	snprintf(sql, sizeof(sql), "ALTER DATABASE %s RESET standard_conforming_strings",
		 PQdb(conn));
	cbt_exec(conn, sql);
}

static void test_example_setup_prints_json(void)
{
	json_error_t jerr;
	json_t *v;

	CBT_EQ_LL(EX("--json", "example-setup", "ledger", "--rows", "2"), 0);
	v = json_loads(out, 0, &jerr);
	if (!v)
		CBT_FAILF("example-setup --json is not JSON: %s: %.200s", jerr.text, out);
	CBT_EQ_STR(json_string_value(json_object_get(v, "example")), "ledger");
	CBT_EQ_LL(json_integer_value(json_object_get(v, "rows_added")), 2);
	json_decref(v);
	CBT_EQ_LL(EX("--json", "example-setup", "nosuch"), 2);
	v = json_loads(out, 0, &jerr);
	CU_ASSERT(v && json_is_object(json_object_get(v, "error")));
	json_decref(v);
}

/* ---- item 13 -------------------------------------------------------------- */

static void test_schema_init_up_to_date_needs_no_create(void)
{
	char role[64], sql[512], as_role[CBT_CONNINFO_MAX + 80];

	snprintf(role, sizeof(role), "cbt_nocreate_%d", (int)getpid());
	snprintf(sql, sizeof(sql),
		 "CREATE ROLE %s LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC; "
		 "GRANT SELECT ON batch_schema_version TO %s",
		 role, role);
	cbt_exec(conn, sql);
	snprintf(as_role, sizeof(as_role), "%s user=%s", db, role);
	CBT_EQ_LL(run_with(cbt_cli_bin(), as_role, (const char *const[]){ "schema", "init", NULL }),
		  0);
	CBT_CONTAINS(out, "schema at version");
	if (errout[0])
		fprintf(stderr, "%s", errout);
	snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	cbt_exec(conn, sql);
}

static void test_invalid_utf8_arguments_are_usage_errors(void)
{
	CBT_EQ_LL(EX("executions", "\xff"), 2);
	CBT_CONTAINS(errout, "not valid UTF-8");
	CBT_EQ_LL(EX("run", "\xff"), 2);
	CBT_EQ_LL(EX("unlock", "lock\xff", "--force"), 2);
	CBT_EQ_LL(EX("unlock", "lock", "--force", "--reason", "\xc3"), 2);
}

static void test_declared_parameters_are_listed(void)
{
	json_error_t jerr;
	json_t *v, *jobs;
	int found = 0;

	CBT_EQ_LL(EX("jobs"), 0);
	CBT_CONTAINS(out, "targetDate:date (required)");
	CBT_EQ_LL(EX("run", "settlement", "--help"), 0);
	CBT_CONTAINS(out, "targetDate");
	CBT_CONTAINS(out, "required");
	CBT_EQ_LL(EX("--json", "jobs"), 0);
	v = json_loads(out, 0, &jerr);
	jobs = json_object_get(v, "jobs");
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i), *p;

		if (strcmp(json_string_value(json_object_get(j, "name")), "settlement") != 0)
			continue;
		p = json_array_get(json_object_get(j, "parameters"), 0);
		CBT_EQ_STR(json_string_value(json_object_get(p, "name")), "targetDate");
		CBT_EQ_STR(json_string_value(json_object_get(p, "type")), "date");
		CU_ASSERT(json_is_true(json_object_get(p, "required")));
		found = 1;
	}
	CU_ASSERT(found);
	json_decref(v);
}

/* The digits after the decimal point of the number after "KEY": in @p json. */
static int decimals(const char *json, const char *key)
{
	char pat[64];
	const char *p, *dot;
	int n = 0;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	dot = p;
	while (*dot >= '0' && *dot <= '9')
		dot++;
	if (*dot != '.')
		return 0;
	for (p = dot + 1; *p >= '0' && *p <= '9'; p++)
		n++;
	return n;
}

static void test_json_durations_have_sensible_precision(void)
{
	char id[32];
	int d;

	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "50"), 0);
	CBT_EQ_LL(EX("--json", "run", "ledger", "tag=durations"), 0);
	d = decimals(out, "elapsed_seconds");
	if (d < 0 || d > 3)
		CBT_FAILF("elapsed_seconds with %d decimals: %s", d, out);
	cbt_query_str(conn, "SELECT max(job_execution_id) FROM batch_job_execution", id,
		      sizeof(id));
	CBT_EQ_LL(EX("--json", "show", id), 0);
	d = decimals(out, "duration_seconds");
	if (d < 0 || d > 6)
		CBT_FAILF("duration_seconds with %d decimals: %.300s", d, out);
}

static const CU_TestInfo tests[] = {
	{ "failure with an invalid UTF-8 message ends FAILED and is recorded",
	  test_failure_with_invalid_utf8_message_ends_failed_and_is_recorded },
	{ "skip with an invalid UTF-8 message is recorded",
	  test_skip_with_invalid_utf8_message_is_recorded },
	{ "control characters are escaped in tables",
	  test_control_characters_are_escaped_in_tables },
	{ "password is scrubbed from the command line",
	  test_password_is_scrubbed_from_the_command_line },
	{ "malformed URI error has no password", test_malformed_uri_error_has_no_password },
	{ "no form of a password is echoed by a connection error",
	  test_no_form_of_password_is_echoed },
	{ "metrics escape labels and print JSON", test_metrics_escape_labels_and_print_json },
	{ "metrics work without standard_conforming_strings",
	  test_metrics_work_without_standard_conforming_strings },
	{ "example-setup prints JSON", test_example_setup_prints_json },
	{ "schema init on an up-to-date schema needs no CREATE",
	  test_schema_init_up_to_date_needs_no_create },
	{ "invalid UTF-8 arguments are usage errors",
	  test_invalid_utf8_arguments_are_usage_errors },
	{ "declared parameters are listed", test_declared_parameters_are_listed },
	{ "JSON durations have sensible precision", test_json_durations_have_sensible_precision },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("text", init, clean, tests);
}
