/*
 * Partitions, lineage and locks in the console (issue 21, items 3 and 4)
 * over real HTTP against the real `serve` process and real runs.
 *
 * A partitioned run whose worker is killed (SIGKILL) mid-partition and whose
 * partition another worker takes over: /api/v1/executions/{id} shows each
 * partition's worker (the one that finished it), its claims (2 for the one
 * taken over), the takeover with its reason (OWNER_DEAD_TAKEOVER, from the
 * audit rows that outlive the partition's lock row), items/s and the
 * address of the execution's lock audit. A failed run and its restart: the
 * restart's lineage lists both executions with their statuses and counts,
 * "continued from" the items the failed one read, and the cumulative items
 * are every row once. The audit filtered by execution holds exactly the
 * rows of that execution's locks (not the other run's), by lock exactly
 * that lock's, with keyset paging.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cbtest.h"
#include "serve_client.h"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[65536];
static struct server srv;
static PGconn *conn;
static long long taken_exec, failed_exec, restart_exec;

#define MAXARGS 24

static void examples_argv(const char **argv, const char *const *args)
{
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < MAXARGS - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
}

static int ex(const char *const *args)
{
	const char *argv[MAXARGS];

	examples_argv(argv, args);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}
#define EX(...) ex((const char *const[]){ __VA_ARGS__, NULL })

static pid_t spawn(const char *log, const char *const *args)
{
	const char *argv[MAXARGS];

	examples_argv(argv, args);
	return cbt_spawn(argv, log);
}
#define SPAWN(log, ...) spawn(log, (const char *const[]){ __VA_ARGS__, NULL })

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	return cbt_db_create(db, sizeof(db), "api_partitions");
}

static int clean(void)
{
	if (srv.pid > 0)
		server_stop(&srv);
	PQfinish(conn);
	cbt_db_drop(db);
	curl_global_cleanup();
	return 0;
}

/* GET @p path: 200 and its body parsed, or NULL after a failure. */
static json_t *get(const char *path)
{
	struct resp r;
	json_t *doc = NULL;

	if (http(&r, srv.port, "GET", path, NULL, 0, NULL) < 0) {
		CBT_FAILF("GET %s: no response", path);
		return NULL;
	}
	if (r.status != 200)
		CBT_FAILF("GET %s: %ld %.300s", path, r.status, r.body);
	else if (!(doc = json_loads(r.body ? r.body : "", 0, NULL)))
		CBT_FAILF("GET %s: not JSON: %.300s", path, r.body);
	resp_free(&r);
	return doc;
}

static long status_of(const char *path)
{
	struct resp r;
	long st;

	http(&r, srv.port, "GET", path, NULL, 0, NULL);
	st = r.status;
	resp_free(&r);
	return st;
}

static void log_path(char *buf, size_t size, const char *name, int i)
{
	snprintf(buf, size, "%s/api-partitions-%s-%d.log", cbt_tmpdir(), name, i);
}

static long long newest_execution(void)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

static void test_fixture(void)
{
	conn = cbt_connect(db);
	CBT_EQ_LL(EX("schema", "init"), 0);
	CBT_EQ_LL(server_start(&srv, db, (const char *const[]){ NULL }), 0);
}

#define NEED_SERVER()                                                                              \
	do {                                                                                       \
		if (srv.pid <= 0) {                                                                \
			CBT_FAILF("no server (the fixture failed)");                               \
			return;                                                                    \
		}                                                                                  \
	} while (0)

/* The partitions of the only partitioned step of execution @p e. */
static const json_t *partitions_of(const json_t *e)
{
	const json_t *steps = json_object_get(e, "steps");

	for (size_t i = 0; i < json_array_size(steps); i++) {
		const json_t *p = json_object_get(json_array_get(steps, i), "partitions");

		if (p)
			return p;
	}
	CBT_FAILF("execution %lld has no partitioned step",
		  (long long)json_integer_value(json_object_get(e, "job_execution_id")));
	return NULL;
}

static void test_takeover_shows_worker_claims_and_reason(void)
{
	char log[2][4096], path[64];
	const char *new_owner = NULL;
	const json_t *parts;
	json_t *e;
	pid_t mgr, w;
	int seen = 0;

	NEED_SERVER();
	for (int i = 0; i < 2; i++)
		log_path(log[i], sizeof(log[i]), "takeover", i);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "8000", "--reset"), 0);
	/* Two items a chunk: the first worker is still inside a partition when killed. */
	mgr = SPAWN(log[0], "run", "ledger_partitioned", "run.id:long=1",
		    "-partition.threads:long=0", "-partition.count:long=2", "-chunk.size:long=2");
	w = SPAWN(log[1], "worker");
	CBT_EQ_LL(cbt_wait_until(conn, 30000,
				 "SELECT count(*) FROM batch_step_execution WHERE "
				 "partition_index IS NOT NULL AND status = 'STARTED' "
				 "AND commit_count > 2"),
		  1);
	kill(w, SIGKILL);
	CBT_EQ_LL(cbt_wait_timeout(w, 10000), 128 + SIGKILL);
	/* Its process is gone on this host: taken over at once, not after the lease. */
	CBT_EQ_LL(EX("worker", "--exit-when-idle", "1"), 0);
	CBT_CONTAINS(errout, "took over ledger_partitioned");
	CBT_EQ_LL(cbt_wait_timeout(mgr, 30000), 0);
	taken_exec = newest_execution();

	snprintf(path, sizeof(path), "/api/v1/executions/%lld", taken_exec);
	if (!(e = get(path)))
		return;
	CBT_EQ_STR(json_string_value(json_object_get(e, "status")), "COMPLETED");
	parts = partitions_of(e);
	CBT_EQ_LL(json_array_size(parts), 2);
	for (size_t i = 0; i < json_array_size(parts); i++) {
		const json_t *p = json_array_get(parts, i);
		const json_t *tk = json_object_get(p, "takeovers");
		const char *worker = json_string_value(json_object_get(p, "worker"));
		long long sid = json_integer_value(json_object_get(p, "step_execution_id"));

		/* Each partition's worker is its own field, as recorded. */
		CU_ASSERT_PTR_NOT_NULL(worker);
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT count(*) FROM batch_step_execution WHERE "
					"step_execution_id = $1 AND worker = $2",
					"lld s", sid, worker ? worker : ""),
			  1);
		CU_ASSERT_TRUE(json_is_number(json_object_get(p, "items_per_second")));
		CU_ASSERT_TRUE(json_number_value(json_object_get(p, "items_per_second")) > 0);
		CU_ASSERT_TRUE(json_is_array(tk));
		if (json_array_size(tk) == 0) {
			CBT_EQ_LL(json_integer_value(json_object_get(p, "claim_count")), 1);
			continue;
		}
		seen++;
		/* Claimed by the killed worker, then by the one that took it over. */
		CBT_EQ_LL(json_integer_value(json_object_get(p, "claim_count")), 2);
		CBT_EQ_LL(json_array_size(tk), 1);
		CBT_EQ_STR(json_string_value(json_object_get(json_array_get(tk, 0), "outcome")),
			   "OWNER_DEAD_TAKEOVER");
		CBT_EQ_STR(json_string_value(json_object_get(json_array_get(tk, 0), "reason")),
			   "owner process gone");
		CBT_CONTAINS(json_string_value(json_object_get(json_array_get(tk, 0), "detail")),
			     "is gone");
		new_owner = json_string_value(json_object_get(json_array_get(tk, 0), "owner_id"));
		/* The taker is the partition's owner now; its lease is over (it ended). */
		CBT_EQ_STR(new_owner, json_string_value(json_object_get(p, "owner_id")));
		CU_ASSERT_TRUE(json_is_null(json_object_get(p, "lease_left_seconds")));
	}
	CBT_EQ_LL(seen, 1);
	/* The partitions' lock rows are gone; their audit is what tells. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock l JOIN batch_step_execution x "
				"ON l.lock_name = 'cbatch.partition:' || x.step_execution_id "
				"WHERE x.job_execution_id = $1",
				"lld", taken_exec),
		  0);
	snprintf(path, sizeof(path), "/api/v1/locks/audit?execution=%lld", taken_exec);
	CBT_EQ_STR(json_string_value(json_object_get(e, "lock_audit_url")), path);
	/* A run that never restarted: its lineage is itself. */
	CBT_EQ_LL(json_integer_value(
			  json_object_get(json_object_get(e, "lineage"), "execution_count")),
		  1);
	CBT_EQ_LL(json_integer_value(
			  json_object_get(json_object_get(e, "lineage"), "cumulative_items_read")),
		  8000);
	json_decref(e);
}

static void test_restart_shows_lineage_with_cumulative_counts(void)
{
	char id[24], path[64];
	const json_t *lin, *list;
	long long failed_read;
	json_t *e;

	NEED_SERVER();
	CBT_EQ_LL(
		EX("example-setup", "ledger", "--rows", "8000", "--reset", "--negative-at", "7000"),
		0);
	cbt_exec(conn, "TRUNCATE ledger");
	CBT_EQ_LL(EX("run", "ledger_partitioned", "run.id:long=2", "-partition.threads:long=2",
		     "-partition.count:long=4"),
		  1);
	failed_exec = newest_execution();
	failed_read = cbt_queryp_ll(conn,
				    "SELECT sum(read_count) FROM batch_step_execution WHERE "
				    "job_execution_id = $1 AND partition_index IS NOT NULL",
				    "lld", failed_exec);
	CU_ASSERT_TRUE(failed_read > 0 && failed_read < 8000);
	cbt_exec(conn, "UPDATE account SET amount = 1 WHERE id = 7000");
	snprintf(id, sizeof(id), "%lld", failed_exec);
	CBT_EQ_LL(EX("restart", id), 0);
	restart_exec = newest_execution();
	CU_ASSERT_TRUE(restart_exec > failed_exec);

	snprintf(path, sizeof(path), "/api/v1/executions/%lld", restart_exec);
	if (!(e = get(path)))
		return;
	lin = json_object_get(e, "lineage");
	list = json_object_get(lin, "executions");
	CBT_EQ_LL(json_integer_value(json_object_get(lin, "execution_count")), 2);
	CBT_EQ_LL(json_integer_value(json_object_get(lin, "continued_from_items")), failed_read);
	/* Every account read once over the two runs. */
	CBT_EQ_LL(json_integer_value(json_object_get(lin, "cumulative_items_read")), 8000);
	CBT_EQ_LL(json_array_size(list), 2);
	if (json_array_size(list) == 2) {
		const json_t *a = json_array_get(list, 0), *b = json_array_get(list, 1);

		CBT_EQ_LL(json_integer_value(json_object_get(a, "job_execution_id")), failed_exec);
		CBT_EQ_STR(json_string_value(json_object_get(a, "status")), "FAILED");
		CBT_EQ_LL(json_integer_value(json_object_get(a, "items_read")), failed_read);
		CBT_EQ_LL(json_integer_value(json_object_get(a, "cumulative_items_read")),
			  failed_read);
		CU_ASSERT_TRUE(json_is_false(json_object_get(a, "current")));
		CBT_EQ_LL(json_integer_value(json_object_get(b, "job_execution_id")), restart_exec);
		CBT_EQ_STR(json_string_value(json_object_get(b, "status")), "COMPLETED");
		CBT_EQ_LL(json_integer_value(json_object_get(b, "items_read")), 8000 - failed_read);
		CBT_EQ_LL(json_integer_value(json_object_get(b, "cumulative_items_read")), 8000);
		CBT_EQ_LL(json_integer_value(json_object_get(b, "restart_of")), failed_exec);
		CU_ASSERT_TRUE(json_is_true(json_object_get(b, "current")));
	}
	json_decref(e);
	/* The failed one sees the restart after it, but continued from nothing. */
	snprintf(path, sizeof(path), "/api/v1/executions/%lld", failed_exec);
	if (!(e = get(path)))
		return;
	lin = json_object_get(e, "lineage");
	CBT_EQ_LL(json_integer_value(json_object_get(lin, "execution_count")), 2);
	CBT_EQ_LL(json_integer_value(json_object_get(lin, "continued_from_items")), 0);
	CBT_EQ_LL(json_integer_value(json_object_get(lin, "cumulative_items_read")), failed_read);
	json_decref(e);
}

/* Every row of @p audit is one of execution @p exec's locks'. */
static void all_of_execution(const json_t *audit, long long exec)
{
	for (size_t i = 0; i < json_array_size(audit); i++) {
		const json_t *a = json_array_get(audit, i);
		const char *name = json_string_value(json_object_get(a, "lock_name"));
		long long token = json_integer_value(json_object_get(a, "fencing_token"));

		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT count(*) FROM batch_step_execution x WHERE "
					"x.job_execution_id = $1 AND x.partition_index IS NOT NULL "
					"AND 'cbatch.partition:' || x.step_execution_id = $2",
					"lld s", exec, name ? name : "") +
				  cbt_queryp_ll(conn,
						"SELECT count(*) FROM batch_job_execution e WHERE "
						"e.job_execution_id = $1 AND e.lock_name = $2 AND "
						"e.fencing_token = $3",
						"lld s lld", exec, name ? name : "", token),
			  1);
	}
}

static void test_audit_filters_by_execution_and_lock(void)
{
	char path[160], lock[64];
	long long want, got = 0, before = 0, pages = 0;
	json_t *a;

	NEED_SERVER();
	if (!taken_exec || !restart_exec) {
		CBT_FAILF("needs the takeover and restart runs");
		return;
	}
	/* The rows of the taken over run's locks: its own lock under its token,
	 * its partitions' (their lock rows gone). */
	want = cbt_queryp_ll(conn,
			     "SELECT count(*) FROM batch_lock_audit a WHERE a.lock_name IN ("
			     "SELECT 'cbatch.partition:' || x.step_execution_id FROM "
			     "batch_step_execution x WHERE x.job_execution_id = $1 AND "
			     "x.partition_index IS NOT NULL) OR (a.lock_name, a.fencing_token) = "
			     "(SELECT lock_name, fencing_token FROM batch_job_execution WHERE "
			     "job_execution_id = $1)",
			     "lld", taken_exec);
	/* acquired, taken over, released ×2 partitions at least, and the job's own */
	CU_ASSERT_TRUE(want >= 6);
	/* Keyset pages of 2 walk them all, newest first, and no other run's. */
	do {
		const json_t *list, *next;

		if (before)
			snprintf(path, sizeof(path),
				 "/api/v1/locks/audit?execution=%lld&limit=2&before=%lld",
				 taken_exec, before);
		else
			snprintf(path, sizeof(path), "/api/v1/locks/audit?execution=%lld&limit=2",
				 taken_exec);
		if (!(a = get(path)))
			return;
		list = json_object_get(a, "audit");
		all_of_execution(list, taken_exec);
		for (size_t i = 0; i < json_array_size(list); i++) {
			long long idv = json_integer_value(
				json_object_get(json_array_get(list, i), "audit_id"));

			if (before && idv >= before)
				CBT_FAILF("audit row %lld on the page before %lld", idv, before);
			before = idv;
		}
		got += (long long)json_array_size(list);
		next = json_object_get(a, "next_before");
		before = json_is_integer(next) ? json_integer_value(next) : 0;
		json_decref(a);
	} while (before && ++pages < 100);
	CBT_EQ_LL(got, want);
	/* The takeover is among them. */
	snprintf(path, sizeof(path), "/api/v1/locks/audit?execution=%lld&limit=500", taken_exec);
	if ((a = get(path))) {
		int takeovers = 0;

		for (size_t i = 0; i < json_array_size(json_object_get(a, "audit")); i++)
			takeovers += strcmp(json_string_value(json_object_get(
						    json_array_get(json_object_get(a, "audit"), i),
						    "outcome")),
					    "OWNER_DEAD_TAKEOVER") == 0;
		CBT_EQ_LL(takeovers, 1);
		json_decref(a);
	}
	/* One partition lock: its rows only, both filters at once too. */
	cbt_query_str(
		conn,
		"SELECT lock_name FROM batch_lock_audit WHERE outcome = 'OWNER_DEAD_TAKEOVER'",
		lock, sizeof(lock));
	snprintf(path, sizeof(path), "/api/v1/locks/audit?lock=%s&limit=500", lock);
	if ((a = get(path))) {
		const json_t *list = json_object_get(a, "audit");

		CBT_EQ_LL(
			json_array_size(list),
			cbt_queryp_ll(conn,
				      "SELECT count(*) FROM batch_lock_audit WHERE lock_name = $1",
				      "s", lock));
		for (size_t i = 0; i < json_array_size(list); i++) {
			const json_t *row = json_array_get(list, i);
			const json_t *part = json_object_get(row, "partition");

			CBT_EQ_STR(json_string_value(json_object_get(row, "lock_name")), lock);
			/* A partition's lock says what it runs. */
			CBT_EQ_STR(json_string_value(json_object_get(part, "job_name")),
				   "ledger_partitioned");
			CU_ASSERT_PTR_NOT_NULL(
				json_string_value(json_object_get(part, "step_name")));
			CBT_EQ_LL(json_integer_value(json_object_get(part, "job_execution_id")),
				  taken_exec);
		}
		json_decref(a);
	}
	snprintf(path, sizeof(path), "/api/v1/locks/audit?lock=%s&execution=%lld", lock,
		 restart_exec);
	if ((a = get(path))) {
		CBT_EQ_LL(json_array_size(json_object_get(a, "audit")), 0);
		json_decref(a);
	}
	/* The restart's rows are its own. */
	snprintf(path, sizeof(path), "/api/v1/locks/audit?execution=%lld&limit=500", restart_exec);
	if ((a = get(path))) {
		CU_ASSERT_TRUE(json_array_size(json_object_get(a, "audit")) > 0);
		all_of_execution(json_object_get(a, "audit"), restart_exec);
		json_decref(a);
	}
	CBT_EQ_LL(status_of("/api/v1/locks/audit?execution=abc"), 400);
	CBT_EQ_LL(status_of("/api/v1/locks/audit?execution=0"), 400);
}

/* The lock names of a /api/v1/locks page, in its order, that start with
 * @p prefix, joined by spaces into @p buf. */
static const json_t *names_with(char *buf, size_t size, const json_t *doc, const char *prefix)
{
	const json_t *list = json_object_get(doc, "locks");

	buf[0] = '\0';
	for (size_t i = 0; i < json_array_size(list); i++) {
		const char *n =
			json_string_value(json_object_get(json_array_get(list, i), "lock_name"));

		if (n && strncmp(n, prefix, strlen(prefix)) == 0)
			snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? " " : "",
				 n);
	}
	return list;
}

static void test_locks_natural_order_and_partition_locks(void)
{
	char got[256], path[2048], sql[512], want[1024] = "";
	const char *after = NULL;
	long long sid;
	json_t *d;
	int pages = 0;

	NEED_SERVER();
	/* Held locks whose names differ in a number, and a held partition lock
	 * (a partition of the taken over run, as a claim names its lock). */
	cbt_exec(conn,
		 "INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until,"
		 " locked_at, updated_at) SELECT n, 'ops@elsewhere', 1,"
		 " clock_timestamp() + interval '1 hour', clock_timestamp(), clock_timestamp()"
		 " FROM unnest(array['nat:10', 'nat:2', 'nat:1', 'nat:2:b', 'nat:100',"
		 " 'nat:09']) n");
	sid = cbt_queryp_ll(conn,
			    "SELECT min(step_execution_id) FROM batch_step_execution WHERE "
			    "job_execution_id = $1 AND partition_index IS NOT NULL",
			    "lld", taken_exec);
	CU_ASSERT_TRUE(sid > 0);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until,"
		 " locked_at, updated_at) VALUES ('cbatch.partition:%lld', 'w:1:x', 9,"
		 " clock_timestamp() + interval '1 hour', clock_timestamp(), clock_timestamp())",
		 sid);
	cbt_exec(conn, sql);
	if (!(d = get("/api/v1/locks")))
		return;
	names_with(got, sizeof(got), d, "nat:");
	/* Numbers by their value, not their text. */
	CBT_EQ_STR(got, "nat:1 nat:2 nat:2:b nat:09 nat:10 nat:100");
	/* The partition lock says what it runs. */
	for (size_t i = 0; i < json_array_size(json_object_get(d, "locks")); i++) {
		const json_t *l = json_array_get(json_object_get(d, "locks"), i);
		const json_t *part = json_object_get(l, "partition");

		if (strncmp(json_string_value(json_object_get(l, "lock_name")),
			    "cbatch.partition:", 17) != 0)
			continue;
		CBT_EQ_STR(json_string_value(json_object_get(part, "job_name")),
			   "ledger_partitioned");
		CBT_EQ_LL(json_integer_value(json_object_get(part, "job_execution_id")),
			  taken_exec);
		CBT_EQ_LL(json_integer_value(json_object_get(part, "step_execution_id")), sid);
		CU_ASSERT_PTR_NOT_NULL(json_string_value(json_object_get(part, "step_name")));
		want[0] = 'x';
	}
	CBT_EQ_LL(want[0], 'x');
	want[0] = '\0';
	json_decref(d);
	/* The whole history, a lock a page: the same natural order across pages. */
	do {
		char *esc = NULL;
		CURL *c = curl_easy_init();

		if (after && c)
			esc = curl_easy_escape(c, after, 0);
		snprintf(path, sizeof(path), "/api/v1/locks?all=1&limit=1%s%s",
			 esc ? "&after=" : "", esc ? esc : "");
		curl_free(esc);
		curl_easy_cleanup(c);
		free((char *)after);
		after = NULL;
		if (!(d = get(path)))
			return;
		names_with(got, sizeof(got), d, "nat:");
		if (got[0])
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
				 want[0] ? " " : "", got);
		if (json_string_value(json_object_get(d, "next_after")))
			after = strdup(json_string_value(json_object_get(d, "next_after")));
		json_decref(d);
	} while (after && ++pages < 1000);
	CBT_EQ_STR(want, "nat:1 nat:2 nat:2:b nat:09 nat:10 nat:100");
}

static void test_finish(void)
{
	NEED_SERVER();
	CBT_EQ_LL(server_stop(&srv), 0);
	srv.pid = 0;
}

static const CU_TestInfo tests[] = {
	{ "fixture: a repository and a server", test_fixture },
	{ "a killed worker's partition taken over: worker, claims, takeover with reason",
	  test_takeover_shows_worker_claims_and_reason },
	{ "a restart: lineage with cumulative counts",
	  test_restart_shows_lineage_with_cumulative_counts },
	{ "audit filtered by execution (keyset paged) and by lock",
	  test_audit_filters_by_execution_and_lock },
	{ "locks in natural order (a page and across pages); a partition lock's job, step, "
	  "execution",
	  test_locks_natural_order_and_partition_locks },
	{ "server stops with 0", test_finish },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("api_partitions", init, clean, tests);
}
