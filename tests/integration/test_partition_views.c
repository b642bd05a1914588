/*
 * Partitions as an operator sees them (issue 10, views): `show` lists the
 * partitions under their manager step (index, status, counts, worker,
 * claims, lease left, failures) and never as steps of their own, also in
 * --json; `executions` says how far the partitions are; `metrics` has
 * per-worker series with escaped labels, a gauge of the running
 * executions' partitions, counts each item once, and keeps the per-worker
 * series bounded to the newest executions and the running ones.
 *
 * The repository rows are written by SQL as the engine writes them (a job
 * execution, its manager step, partition step executions, their locks), and
 * the real `cbatch` binary reads them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[16384];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "partition_views");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static int run_cli(const char *const *args)
{
	const char *argv[16];
	size_t n = 0;

	argv[n++] = cbt_cli_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define CLI(...) run_cli((const char *const[]){ __VA_ARGS__, NULL })

/* cbatch-examples --db DB ARGS... (the job program with ledger_partitioned). */
static int run_examples(const char *const *args)
{
	const char *argv[16];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_examples((const char *const[]){ __VA_ARGS__, NULL })

/* An empty database with the repository schema. */
static PGconn *fresh(void)
{
	PGconn *conn = cbt_connect(db);

	cbt_exec(conn, "SET client_min_messages = warning; "
		       "DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
	CBT_EQ_LL(CLI("schema", "init"), 0);
	return conn;
}

static json_t *stdout_json(void)
{
	json_error_t jerr;
	json_t *v = json_loads(out, 0, &jerr);

	if (!v)
		CBT_FAILF("stdout is not one JSON document (%s at line %d): %.300s", jerr.text,
			  jerr.line, out);
	return v;
}

/* The line of stdout that starts with @p prefix, copied into @p buf; NULL
 * (and a failure) if there is none. */
static const char *line_starting(char *buf, size_t size, const char *prefix)
{
	const char *p = out;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (strncmp(p, prefix, strlen(prefix)) == 0) {
			snprintf(buf, size, "%.*s", (int)n, p);
			return buf;
		}
		p += n + (nl ? 1 : 0);
	}
	CBT_FAILF("no line starting with '%s' in:\n%s", prefix, out);
	return NULL;
}

/* Assert that stdout holds @p want as a whole line. */
static void has_line(const char *want)
{
	char line[1024];

	if (line_starting(line, sizeof(line), want))
		CBT_EQ_STR(line, want);
}

/*
 * Three executions:
 *  9  job ledger, COMPLETED, one plain step (no partitions);
 * 10  job ledger_partitioned, FAILED: manager 91 (its counts the sums, as the
 *     engine leaves them) with partition 0 COMPLETED by a worker whose name
 *     needs escaping and partition 1 FAILED;
 * 11  job ledger_partitioned, STARTED with a live lock: manager 101 with
 *     partition 0 COMPLETED (its lock released), 1 STARTED under a live
 *     lease (claimed twice), 2 STARTING (never claimed).
 */
static void fixture(PGconn *conn)
{
	cbt_exec(
		conn,
		"INSERT INTO batch_job_instance (job_instance_id, job_name, job_key) VALUES "
		" (1, 'ledger', repeat('a', 32)), (2, 'ledger_partitioned', repeat('b', 32)), "
		" (3, 'ledger_partitioned', repeat('c', 32));"
		"INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, locked_at, "
		" updated_at) VALUES ('cbatch.job:lp', 'mgr:1:x', 5, clock_timestamp() + "
		" interval '10 minutes', clock_timestamp(), clock_timestamp());"
		"INSERT INTO batch_job_execution (job_execution_id, job_instance_id, status, "
		" exit_code, start_time, end_time, owner_id, lock_name, fencing_token) VALUES "
		" (9, 1, 'COMPLETED', 'COMPLETED', now() - interval '1 hour', "
		"  now() - interval '59 minutes', 'a:1:x', NULL, NULL), "
		" (10, 2, 'FAILED', 'FAILED', now() - interval '30 minutes', "
		"  now() - interval '29 minutes', 'a:2:x', NULL, NULL), "
		" (11, 3, 'STARTED', 'UNKNOWN', now() - interval '1 minute', NULL, 'mgr:1:x', "
		"  'cbatch.job:lp', 5);"
		"INSERT INTO batch_step_execution (step_execution_id, step_name, job_execution_id, "
		" status, read_count, write_count, commit_count, start_time, end_time) VALUES "
		" (81, 'ledger', 9, 'COMPLETED', 7, 7, 1, now() - interval '1 hour', "
		"  now() - interval '59 minutes'), "
		" (91, 'ledger', 10, 'FAILED', 60, 55, 2, now() - interval '30 minutes', "
		"  now() - interval '29 minutes'), "
		" (101, 'ledger', 11, 'STARTED', 0, 0, 0, now() - interval '1 minute', NULL);"
		"INSERT INTO batch_step_execution (step_execution_id, step_name, job_execution_id, "
		" status, read_count, write_count, commit_count, start_time, end_time, "
		" manager_step_execution_id, partition_index, owner_id, worker, lock_name, "
		" fencing_token, claim_count, exit_code, exit_message) VALUES "
		" (92, 'ledger:partition0', 10, 'COMPLETED', 50, 50, 1, now(), now(), 91, 0, "
		"  'c:3:x', $w$host\"c\\d$w$ || chr(10) || '/303/0', 'cbatch.partition:92', 1, 1, "
		"  'COMPLETED', ''), "
		" (93, 'ledger:partition1', 10, 'FAILED', 10, 5, 1, now(), now(), 91, 1, "
		"  'a:101:x', 'host-a/101/0', 'cbatch.partition:93', 1, 1, 'FAILED', "
		"  'duplicate key value violates unique constraint \"ledger_pkey\"'), "
		" (102, 'ledger:partition0', 11, 'COMPLETED', 100, 98, 2, now(), now(), 101, 0, "
		"  'a:101:x', 'host-a/101/0', 'cbatch.partition:102', 1, 1, 'COMPLETED', ''), "
		" (103, 'ledger:partition1', 11, 'STARTED', 40, 40, 1, now(), NULL, 101, 1, "
		"  'b:202:x', 'host-b/202/1', 'cbatch.partition:103', 3, 2, 'EXECUTING', ''), "
		" (104, 'ledger:partition2', 11, 'STARTING', 0, 0, 0, NULL, NULL, 101, 2, "
		"  NULL, NULL, NULL, NULL, 0, 'EXECUTING', '');"
		"INSERT INTO batch_step_execution_context (step_execution_id, serialized_context) "
		" VALUES (102, '{\"partition\": {\"index\": 0, \"count\": 3, \"lo\": null, "
		"  \"hi\": [1000]}}');"
		"INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, locked_at, "
		" updated_at, released, job_execution_id) VALUES "
		" ('cbatch.partition:92', 'c:3:x', 1, now(), now(), now(), true, 10), "
		" ('cbatch.partition:93', 'a:101:x', 1, now(), now(), now(), true, 10), "
		" ('cbatch.partition:102', 'a:101:x', 1, now(), now(), now(), true, 11), "
		" ('cbatch.partition:103', 'b:202:x', 3, clock_timestamp() + interval '10 minutes', "
		"  now(), now(), false, 11);");
}

static const json_t *partition_at(const json_t *parts, size_t i)
{
	const json_t *p = json_array_get(parts, i);

	if (!p)
		CBT_FAILF("no partition %zu", i);
	return p;
}

static void test_show_lists_partitions_under_their_manager(void)
{
	PGconn *conn = fresh();
	char line[1024];
	const char *l;
	double lease;

	fixture(conn);
	CBT_EQ_LL(CLI("show", "11"), 0);
	/* The manager is the one step; its partitions are listed under it. */
	CU_ASSERT(strstr(out, "ledger:partition") == NULL);
	has_line("  step 'ledger': 3 partitions, 1 completed, 1 running, 1 not claimed");
	has_line("    PARTITION  STATUS     READ  WRITTEN  COMMITS  WORKER        CLAIMS  LEASE "
		 "LEFT");
	has_line("            0  COMPLETED   100       98        2  host-a/101/0       1           "
		 "-");
	has_line("            2  STARTING      0        0        0  -                  0           "
		 "-");
	/* The running one's lease: 10 minutes from the fixture, a little less now. */
	l = line_starting(
		line, sizeof(line),
		"            1  STARTED      40       40        1  host-b/202/1       2  ");
	if (l) {
		CBT_EQ_STR(l + strlen(l) - 1, "s");
		lease = atof(strrchr(l, ' ') + 1);
		if (!(lease > 500 && lease <= 600))
			CBT_FAILF("lease left %g, want (500, 600]: '%s'", lease, l);
	}

	/* Its lease ran out (nobody took it over yet): "expired". */
	cbt_exec(conn, "UPDATE batch_lock SET locked_until = clock_timestamp() - interval '1 s' "
		       "WHERE lock_name = 'cbatch.partition:103'");
	CBT_EQ_LL(CLI("show", "11"), 0);
	has_line("            1  STARTED      40       40        1  host-b/202/1       2     "
		 "expired");
	/* Another claimant holds the lock now (a newer token): no lease of this row's. */
	cbt_exec(conn, "UPDATE batch_lock SET fencing_token = 4, "
		       "locked_until = clock_timestamp() + interval '10 minutes' "
		       "WHERE lock_name = 'cbatch.partition:103'");
	CBT_EQ_LL(CLI("show", "11"), 0);
	has_line("            1  STARTED      40       40        1  host-b/202/1       2           "
		 "-");

	/* A failed one's exit message, after its table. */
	CBT_EQ_LL(CLI("show", "10"), 0);
	CU_ASSERT(strstr(out, "ledger:partition") == NULL);
	has_line("  step 'ledger': 2 partitions, 1 completed, 1 failed");
	has_line("            1  FAILED       10        5        1  host-a/101/0           1  "
		 "         -");
	has_line("    partition 1 FAILED: duplicate key value violates unique constraint "
		 "\"ledger_pkey\"");
	/* The worker name's newline is escaped on the terminal, not printed. */
	has_line("            0  COMPLETED    50       50        1  host\"c\\d\\n/303/0       1  "
		 "         -");

	/* A step without partitions gets no partition section. */
	CBT_EQ_LL(CLI("show", "9"), 0);
	CU_ASSERT(strstr(out, "partition") == NULL);
	PQfinish(conn);
}

static void test_show_json_has_partitions_array(void)
{
	PGconn *conn = fresh();
	const json_t *steps, *m, *parts, *p;
	json_t *v;
	double lease;

	fixture(conn);
	CBT_EQ_LL(CLI("--json", "show", "11"), 0);
	v = stdout_json();
	steps = json_object_get(v, "steps");
	CBT_EQ_LL(json_array_size(steps), 1);
	m = json_array_get(steps, 0);
	CBT_EQ_STR(json_string_value(json_object_get(m, "step_name")), "ledger");
	parts = json_object_get(m, "partitions");
	CBT_EQ_LL(json_array_size(parts), 3);

	p = partition_at(parts, 0);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "partition_index")), 0);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "step_execution_id")), 102);
	CBT_EQ_STR(json_string_value(json_object_get(p, "step_name")), "ledger:partition0");
	CBT_EQ_STR(json_string_value(json_object_get(p, "status")), "COMPLETED");
	CBT_EQ_LL(json_integer_value(json_object_get(p, "read_count")), 100);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "write_count")), 98);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "commit_count")), 2);
	CBT_EQ_STR(json_string_value(json_object_get(p, "worker")), "host-a/101/0");
	CBT_EQ_STR(json_string_value(json_object_get(p, "owner_id")), "a:101:x");
	CBT_EQ_LL(json_integer_value(json_object_get(p, "claim_count")), 1);
	CU_ASSERT(json_is_null(json_object_get(p, "lease_left_seconds")));
	/* The partitioner's object, as the worker's reader gets it. */
	CBT_EQ_LL(json_integer_value(json_array_get(
			  json_object_get(json_object_get(p, "partition"), "hi"), 0)),
		  1000);

	p = partition_at(parts, 1);
	CBT_EQ_STR(json_string_value(json_object_get(p, "status")), "STARTED");
	CBT_EQ_STR(json_string_value(json_object_get(p, "worker")), "host-b/202/1");
	CBT_EQ_LL(json_integer_value(json_object_get(p, "claim_count")), 2);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "fencing_token")), 3);
	CBT_EQ_STR(json_string_value(json_object_get(p, "lock_name")), "cbatch.partition:103");
	CU_ASSERT(json_is_number(json_object_get(p, "lease_left_seconds")));
	lease = json_number_value(json_object_get(p, "lease_left_seconds"));
	if (!(lease > 500 && lease <= 600))
		CBT_FAILF("lease_left_seconds %g, want (500, 600]", lease);

	p = partition_at(parts, 2);
	CBT_EQ_STR(json_string_value(json_object_get(p, "status")), "STARTING");
	CU_ASSERT(json_is_null(json_object_get(p, "worker")));
	CBT_EQ_LL(json_integer_value(json_object_get(p, "claim_count")), 0);
	CU_ASSERT(json_is_null(json_object_get(p, "lease_left_seconds")));
	json_decref(v);

	/* The failed partition's exit; a plain step has no "partitions". */
	CBT_EQ_LL(CLI("--json", "show", "10"), 0);
	v = stdout_json();
	p = partition_at(
		json_object_get(json_array_get(json_object_get(v, "steps"), 0), "partitions"), 1);
	CBT_EQ_STR(json_string_value(json_object_get(p, "status")), "FAILED");
	CBT_EQ_STR(json_string_value(json_object_get(p, "exit_code")), "FAILED");
	CBT_EQ_STR(json_string_value(json_object_get(p, "exit_message")),
		   "duplicate key value violates unique constraint \"ledger_pkey\"");
	json_decref(v);
	CBT_EQ_LL(CLI("--json", "show", "9"), 0);
	v = stdout_json();
	CU_ASSERT(json_object_get(json_array_get(json_object_get(v, "steps"), 0), "partitions") ==
		  NULL);
	json_decref(v);
	PQfinish(conn);
}

static void test_executions_show_partition_progress(void)
{
	PGconn *conn = fresh();
	char line[1024];
	const char *l;
	json_t *v;
	const json_t *list, *p;

	fixture(conn);
	CBT_EQ_LL(CLI("executions"), 0);
	l = line_starting(line, sizeof(line), "ID  ");
	if (l)
		CBT_EQ_STR(l + strlen(l) - strlen("DURATION  PARTITIONS"), "DURATION  PARTITIONS");
	l = line_starting(line, sizeof(line), "11  ");
	if (l)
		CBT_EQ_STR(l + strlen(l) - strlen("  1/3 done"), "  1/3 done");
	l = line_starting(line, sizeof(line), "10  ");
	if (l)
		CBT_EQ_STR(l + strlen(l) - strlen("  1/2 done, 1 failed"), "  1/2 done, 1 failed");
	l = line_starting(line, sizeof(line), " 9  ");
	if (l)
		CBT_EQ_STR(l + strlen(l) - 3, "  -");

	/* Without partitioned executions in the list, the columns are as before. */
	CBT_EQ_LL(CLI("executions", "ledger"), 0);
	l = line_starting(line, sizeof(line), "ID  ");
	if (l) {
		CU_ASSERT(strstr(l, "PARTITIONS") == NULL);
		CBT_EQ_STR(l + strlen(l) - strlen("DURATION"), "DURATION");
	}

	CBT_EQ_LL(CLI("--json", "executions"), 0);
	v = stdout_json();
	list = json_object_get(v, "executions");
	CBT_EQ_LL(json_array_size(list), 3);
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(list, 0), "job_execution_id")),
		  11);
	p = json_object_get(json_array_get(list, 0), "partitions");
	CBT_EQ_LL(json_integer_value(json_object_get(p, "total")), 3);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "completed")), 1);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "running")), 1);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "waiting")), 1);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "failed")), 0);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "stopped")), 0);
	p = json_object_get(json_array_get(list, 1), "partitions");
	CBT_EQ_LL(json_integer_value(json_object_get(p, "total")), 2);
	CBT_EQ_LL(json_integer_value(json_object_get(p, "failed")), 1);
	CU_ASSERT(json_is_null(json_object_get(json_array_get(list, 2), "partitions")));
	json_decref(v);
	PQfinish(conn);
}

/* Every line of the exposition has the format's shape, labels escaped. */
static void check_exposition(const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *q = p;
		int ok = 1;

		if (!nl) {
			CBT_FAILF("exposition does not end with a newline: '%s'", p);
			return;
		}
		if (strncmp(p, "# HELP ", 7) == 0 || strncmp(p, "# TYPE ", 7) == 0) {
			for (q = p; q < p + n; q++)
				ok &= *q != '\\' || (q[1] == '\\' || q[1] == 'n') ? 1 : 0;
		} else {
			/* name{label="value",...} number: a quote inside a value is escaped. */
			while (q < p + n && *q != '{' && *q != ' ')
				q++;
			if (*q == '{') {
				q++;
				while (ok && q < p + n && *q != '}') {
					while (q < p + n && *q != '=')
						q++;
					ok = q[0] == '=' && q[1] == '"';
					q += 2;
					while (ok && q < p + n && *q != '"') {
						if (*q == '\\') {
							ok = q[1] == '\\' || q[1] == '"' ||
							     q[1] == 'n';
							q++;
						}
						q++;
					}
					ok = ok && *q == '"';
					q++;
					if (ok && *q == ',')
						q++;
					else
						ok = ok && *q == '}';
				}
				q++;
			}
			ok = ok && *q == ' ' &&
			     strspn(q + 1, "0123456789") == n - (size_t)(q + 1 - p);
		}
		if (!ok)
			CBT_FAILF("not an exposition line: '%.*s'", (int)n, p);
		p = nl + 1;
	}
}

static const json_t *series(const json_t *list, const char *name, const char *label,
			    const char *value)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *s = json_array_get(list, i);
		const char *v =
			json_string_value(json_object_get(json_object_get(s, "labels"), label));

		if (strcmp(json_string_value(json_object_get(s, "name")), name) == 0 && v &&
		    strcmp(v, value) == 0)
			return s;
	}
	CBT_FAILF("no series %s{%s=\"%s\"}", name, label, value);
	return NULL;
}

static void test_metrics_per_host_and_partition_gauge(void)
{
	PGconn *conn = fresh();
	const json_t *list, *s;
	json_t *v;

	fixture(conn);
	CBT_EQ_LL(CLI("metrics"), 0);
	check_exposition(out);
	/* By host (the worker name without /pid/thread), for ended partitions:
	 * host-a's two (10 + 100), the odd host's one; host-b's is still running. */
	CBT_CONTAINS(out, "# TYPE cbatch_partition_host_items_read_total counter\n");
	CBT_CONTAINS(out, "cbatch_partition_host_items_read_total{batch_job=\"ledger_partitioned\","
			  "host=\"host-a\"} 110\n");
	CBT_CONTAINS(out, "cbatch_partition_host_items_read_total{batch_job=\"ledger_partitioned\","
			  "host=\"host\\\"c\\\\d\\n\"} 50\n");
	CU_ASSERT(strstr(out, "host=\"host-b\"") == NULL);
	CU_ASSERT(strstr(out, "/101/") == NULL);
	CBT_CONTAINS(out, "# TYPE cbatch_partition_host_items_written_total counter\n");
	CBT_CONTAINS(out,
		     "cbatch_partition_host_items_written_total{batch_job=\"ledger_partitioned\","
		     "host=\"host-a\"} 103\n");
	CBT_CONTAINS(out,
		     "cbatch_partition_host_items_written_total{batch_job=\"ledger_partitioned\","
		     "host=\"host\\\"c\\\\d\\n\"} 50\n");
	/* The running execution's partitions by status; the failed one's are not live. */
	CBT_CONTAINS(out, "# TYPE cbatch_running_partitions gauge\n");
	CBT_CONTAINS(out, "cbatch_running_partitions{batch_job=\"ledger_partitioned\","
			  "status=\"COMPLETED\"} 1\n");
	CBT_CONTAINS(out, "cbatch_running_partitions{batch_job=\"ledger_partitioned\","
			  "status=\"STARTED\"} 1\n");
	CBT_CONTAINS(out, "cbatch_running_partitions{batch_job=\"ledger_partitioned\","
			  "status=\"STARTING\"} 1\n");
	CU_ASSERT(strstr(out, "cbatch_running_partitions{batch_job=\"ledger_partitioned\","
			      "status=\"FAILED\"}") == NULL);
	/* Each item once: the partitions' 100 + 40 + 50 + 10, not also the
	 * failed manager's sums (60). */
	CBT_CONTAINS(out, "cbatch_items_read_total{batch_job=\"ledger_partitioned\"} 200\n");
	CBT_CONTAINS(out, "cbatch_items_written_total{batch_job=\"ledger_partitioned\"} 193\n");
	CBT_CONTAINS(out, "cbatch_items_read_total{batch_job=\"ledger\"} 7\n");

	CBT_EQ_LL(CLI("--json", "metrics"), 0);
	v = stdout_json();
	list = json_object_get(v, "metrics");
	s = series(list, "cbatch_partition_host_items_read_total", "host", "host\"c\\d\n");
	if (s) {
		CBT_EQ_STR(json_string_value(json_object_get(s, "type")), "counter");
		CBT_EQ_STR(json_string_value(
				   json_object_get(json_object_get(s, "labels"), "batch_job")),
			   "ledger_partitioned");
		CBT_EQ_LL(json_integer_value(json_object_get(s, "value")), 50);
	}
	s = series(list, "cbatch_partition_host_items_written_total", "host", "host-a");
	if (s)
		CBT_EQ_LL(json_integer_value(json_object_get(s, "value")), 103);
	s = series(list, "cbatch_running_partitions", "status", "STARTING");
	if (s) {
		CBT_EQ_STR(json_string_value(json_object_get(s, "type")), "gauge");
		CBT_EQ_LL(json_integer_value(json_object_get(s, "value")), 1);
	}
	json_decref(v);
	PQfinish(conn);
}

/*
 * Per-host series are bounded by the hosts, whatever the processes: two pids
 * of one host are one series. They are counters that never drop: a partition
 * counts when it ends, and removing history takes nothing back.
 */
static void test_metrics_per_host_series_are_bounded_and_stay(void)
{
	PGconn *conn = fresh();

	cbt_exec(
		conn,
		"INSERT INTO batch_job_instance (job_instance_id, job_name, job_key) VALUES "
		" (1, 'lp', repeat('a', 32)), (2, 'lp', repeat('b', 32));"
		"INSERT INTO batch_job_execution (job_execution_id, job_instance_id, status) "
		" VALUES (1, 1, 'COMPLETED'), (2, 2, 'STARTED');"
		"INSERT INTO batch_step_execution (step_execution_id, step_name, job_execution_id, "
		" status, end_time) VALUES (1, 's', 1, 'COMPLETED', now()), (3, 's', 2, 'STARTED', "
		" NULL);"
		"INSERT INTO batch_step_execution (step_execution_id, step_name, job_execution_id, "
		" status, read_count, manager_step_execution_id, partition_index, worker, end_time) "
		" VALUES (2, 's:partition0', 1, 'COMPLETED', 5, 1, 0, 'old-host/1/0', now()), "
		" (5, 's:partition1', 1, 'COMPLETED', 4, 1, 1, 'old-host/7/3', now()), "
		" (4, 's:partition0', 2, 'STARTED', 6, 3, 0, 'live-host/2/0', NULL);");
	CBT_EQ_LL(CLI("metrics"), 0);
	CBT_CONTAINS(out, "cbatch_partition_host_items_read_total{batch_job=\"lp\","
			  "host=\"old-host\"} 9\n");
	CU_ASSERT(strstr(out, "live-host") == NULL);
	CBT_CONTAINS(out, "cbatch_running_partitions{batch_job=\"lp\",status=\"STARTED\"} 1\n");
	CBT_CONTAINS(out, "cbatch_items_read_total{batch_job=\"lp\"} 15\n");
	/* The running partition ends: its host counts it. */
	cbt_exec(conn, "UPDATE batch_step_execution SET status = 'COMPLETED', end_time = now() "
		       "WHERE step_execution_id = 4");
	CBT_EQ_LL(CLI("metrics"), 0);
	CBT_CONTAINS(out, "cbatch_partition_host_items_read_total{batch_job=\"lp\","
			  "host=\"live-host\"} 6\n");
	/* The old execution's steps go: old-host keeps its count. */
	cbt_exec(conn, "DELETE FROM batch_step_execution WHERE job_execution_id = 1 "
		       "AND partition_index IS NOT NULL;"
		       "DELETE FROM batch_step_execution WHERE job_execution_id = 1");
	CBT_EQ_LL(CLI("metrics"), 0);
	CBT_CONTAINS(out, "cbatch_partition_host_items_read_total{batch_job=\"lp\","
			  "host=\"old-host\"} 9\n");
	PQfinish(conn);
}

static void test_views_of_a_real_partitioned_run(void)
{
	PGconn *conn = fresh();
	char id[24], host[256], want[512], line[1024];
	const json_t *m, *parts, *list;
	json_t *v;
	long long exec, nparts, sum = 0;
	const char *l;

	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "3000", "--reset"), 0);
	CBT_EQ_LL(EX("run", "ledger_partitioned", "run.id:long=1", "-partition.threads:long=2"), 0);
	exec = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	nparts = cbt_queryp_ll(conn,
			       "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			       "$1 AND partition_index IS NOT NULL",
			       "lld", exec);
	CU_ASSERT(nparts >= 2);
	snprintf(id, sizeof(id), "%lld", exec);
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';

	CBT_EQ_LL(CLI("--json", "show", id), 0);
	v = stdout_json();
	CBT_EQ_LL(json_array_size(json_object_get(v, "steps")), 1);
	m = json_array_get(json_object_get(v, "steps"), 0);
	CBT_EQ_STR(json_string_value(json_object_get(m, "step_name")), "post-accounts");
	parts = json_object_get(m, "partitions");
	CBT_EQ_LL(json_array_size(parts), nparts);
	for (size_t i = 0; i < json_array_size(parts); i++) {
		const json_t *p = json_array_get(parts, i);
		const char *w = json_string_value(json_object_get(p, "worker"));

		CBT_EQ_LL(json_integer_value(json_object_get(p, "partition_index")), (long long)i);
		CBT_EQ_STR(json_string_value(json_object_get(p, "status")), "COMPLETED");
		CBT_EQ_LL(json_integer_value(json_object_get(p, "claim_count")), 1);
		/* Ended: its lock is released, so it has no lease. */
		CU_ASSERT(json_is_null(json_object_get(p, "lease_left_seconds")));
		snprintf(want, sizeof(want), "%s/", host);
		if (!w || strncmp(w, want, strlen(want)) != 0)
			CBT_FAILF("partition %zu: worker '%s', want '%s<pid>/<thread>'", i,
				  w ? w : "(null)", want);
		sum += json_integer_value(json_object_get(p, "read_count"));
	}
	CBT_EQ_LL(sum, 3000);
	json_decref(v);

	CBT_EQ_LL(CLI("show", id), 0);
	CU_ASSERT(strstr(out, "post-accounts:partition") == NULL);
	snprintf(want, sizeof(want), "  step 'post-accounts': %lld partitions, %lld completed",
		 nparts, nparts);
	has_line(want);

	CBT_EQ_LL(CLI("executions"), 0);
	/* The only execution: its id right-aligned under "ID". */
	snprintf(want, sizeof(want), "%*s  ", strlen(id) < 2 ? 2 : (int)strlen(id), id);
	l = line_starting(line, sizeof(line), want);
	snprintf(want, sizeof(want), "  %lld/%lld done", nparts, nparts);
	if (l)
		CBT_EQ_STR(l + strlen(l) - strlen(want), want);

	/* The workers' series add up to the rows, and each item counts once per job. */
	CBT_EQ_LL(CLI("metrics"), 0);
	check_exposition(out);
	CBT_CONTAINS(out, "cbatch_items_read_total{batch_job=\"ledger_partitioned\"} 3000\n");
	CBT_EQ_LL(CLI("--json", "metrics"), 0);
	v = stdout_json();
	list = json_object_get(v, "metrics");
	sum = 0;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *s = json_array_get(list, i);

		if (strcmp(json_string_value(json_object_get(s, "name")),
			   "cbatch_partition_host_items_written_total") == 0)
			sum += json_integer_value(json_object_get(s, "value"));
	}
	CBT_EQ_LL(sum, 3000);
	/* Nothing runs any more: no partition gauge. */
	CU_ASSERT(strstr(out, "\"cbatch_running_partitions\"") == NULL);
	json_decref(v);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "show lists partitions under their manager",
	  test_show_lists_partitions_under_their_manager },
	{ "show --json has a partitions array", test_show_json_has_partitions_array },
	{ "executions show partition progress", test_executions_show_partition_progress },
	{ "metrics: per-host series and partition gauge",
	  test_metrics_per_host_and_partition_gauge },
	{ "metrics: per-host series are bounded and stay",
	  test_metrics_per_host_series_are_bounded_and_stay },
	{ "views of a real partitioned run", test_views_of_a_real_partitioned_run },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("partition_views", init, clean, tests);
}
