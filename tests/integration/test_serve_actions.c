/*
 * The console's actions (issue 12, part 2): stop, abandon, restart and force
 * unlock over real HTTP against the real `serve` process and repository.
 *
 * Two servers over one database: one with an admin token, one read-only.
 * Every action is refused on GET (405), on the read-only server (403),
 * without or with a wrong token (401), and from another origin (403: by
 * Origin, by Sec-Fetch-Site, by Referer), and the repository is unchanged
 * after each refusal. With the token from our own origin: a running ledger
 * execution (held at a chunk by a row lock the test keeps) is stopped and
 * ends STOPPED; restarted through the console it completes; a failed one is
 * abandoned; a held lock is released with a FORCE_UNLOCKED audit row naming
 * the reason and the console's client as the actor.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cbtest.h"
#include "serve_client.h"

#define TOKEN     "t0ken-for-the-actions-test"
#define LOCK      "manual/nightly lock"
#define LOCK_PATH "/api/v1/locks/manual%2Fnightly%20lock/unlock"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[16384];
static char token_file[4096];
/* ---- the server process --------------------------------------------------- */

static struct server adm, ro; /* with the token; read-only */
static PGconn *gate;          /* holds the running job at a row lock */
static pid_t running_pid;
static long long done_id, failed_id, running_id;
static char origin[64], auth[128];

static int run_examples(const char *const *args)
{
	const char *argv[20];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 19)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_examples((const char *const[]){ __VA_ARGS__, NULL })

static long long newest(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	return cbt_db_create(db, sizeof(db), "serve_actions");
}

static int clean(void)
{
	if (adm.pid > 0)
		server_stop(&adm);
	if (ro.pid > 0)
		server_stop(&ro);
	if (running_pid > 0) {
		kill(running_pid, SIGKILL);
		cbt_wait(running_pid);
	}
	PQfinish(gate);
	if (token_file[0])
		unlink(token_file);
	cbt_db_drop(db);
	curl_global_cleanup();
	return 0;
}

/* The status of execution @p id, into a static buffer. */
static const char *status_of(PGconn *conn, long long id)
{
	static char s[64];
	PGresult *res;
	char idt[32];
	const char *p[1] = { idt };

	snprintf(idt, sizeof(idt), "%lld", id);
	res = PQexecParams(conn,
			   "SELECT status FROM batch_job_execution WHERE job_execution_id = $1", 1,
			   NULL, p, NULL, NULL, 0);
	snprintf(s, sizeof(s), "%s",
		 PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ?
			 PQgetvalue(res, 0, 0) :
			 "(none)");
	PQclear(res);
	return s;
}

/* POST @p path to @p port with the token and our Origin; the status. */
static long post(int port, const char *path, const char *body, json_t **doc)
{
	const char *hs[] = { auth, origin, "Content-Type: application/json", NULL };
	struct resp r;
	long st;

	http(&r, port, "POST", path, body, body ? strlen(body) : 0, hs);
	st = r.status;
	if (doc)
		*doc = json_loads(r.body, 0, NULL);
	resp_free(&r);
	return st;
}

/* A completed, a failed and a running ledger execution; a held lock; the
 * two servers. */
static void test_fixture(void)
{
	PGconn *conn = cbt_connect(db);
	char log[4096];
	long long first;
	const char *argv[8];

	CBT_EQ_LL(EX("schema", "init"), 0);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "100"), 0);
	CBT_EQ_LL(EX("run", "ledger", "day:date=2026-07-01"), 0);
	done_id = newest(conn);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "10"), 0);
	cbt_exec(conn, "UPDATE account SET amount = -1 WHERE id = (SELECT max(id) FROM account)");
	CBT_EQ_LL(EX("run", "ledger", "day:date=2026-07-02"), 1);
	failed_id = newest(conn);
	cbt_exec(conn, "UPDATE account SET amount = 1 WHERE amount < 0");
	/* The running one: its 11th chunk waits for a row we hold. */
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "500"), 0);
	first = cbt_query_ll(conn, "SELECT min(id) FROM account WHERE NOT processed");
	gate = cbt_connect(db);
	cbt_exec(gate, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(gate,
				"SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 "
				"FOR UPDATE) x",
				"lld", first + 100),
		  1);
	snprintf(log, sizeof(log), "%s/actions-running-%d.log", cbt_tmpdir(), (int)getpid());
	argv[0] = cbt_examples_bin();
	argv[1] = "--db";
	argv[2] = db;
	argv[3] = "run";
	argv[4] = "ledger";
	argv[5] = "day:date=2026-07-03";
	argv[6] = "-chunk.size:long=10";
	argv[7] = NULL;
	running_pid = cbt_spawn(argv, log);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the running job did not reach its held chunk");
	running_id = newest(conn);
	/* A lock some other host holds for an hour (a name with a '/' and a space). */
	cbt_queryp_ll(conn,
		      "WITH i AS (INSERT INTO batch_lock (lock_name, owner_id, fencing_token, "
		      " locked_until, locked_at, updated_at) VALUES ($1, 'ops@elsewhere', 7, "
		      " now() + interval '1 hour', now(), now()) RETURNING 1) "
		      "SELECT count(*) FROM i",
		      "s", LOCK);
	snprintf(token_file, sizeof(token_file), "%s/actions-token-%d", cbt_tmpdir(),
		 (int)getpid());
	cbt_write_str(token_file, TOKEN "\n");
	chmod(token_file, 0600);
	/* A launch's answer waits for its outcome as long as a busy machine
	 * may need (the default, 8 s, is for people). */
	CBT_EQ_LL(server_start(&adm, db,
			       (const char *const[]){ "--admin-token-file", token_file,
						      "--launch-wait", "60", NULL }),
		  0);
	CBT_EQ_LL(server_start(&ro, db, NULL), 0);
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%d", adm.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", TOKEN);
	PQfinish(conn);
}

#define NEED_SERVERS()                                                                             \
	do {                                                                                       \
		if (adm.pid <= 0 || ro.pid <= 0 || !running_id) {                                  \
			CBT_FAILF("no servers (the fixture failed)");                              \
			return;                                                                    \
		}                                                                                  \
	} while (0)

/* One refused request: its status, its error message containing @p needle. */
static void refused(int port, const char *method, const char *path, const char *const *hs,
		    long want, const char *needle)
{
	struct resp r;
	json_t *v, *e;

	http(&r, port, method, path, strcmp(method, "POST") == 0 ? "{\"reason\":\"x\"}" : NULL,
	     strcmp(method, "POST") == 0 ? 14 : 0, hs);
	if (r.status != want)
		CBT_FAILF("%s %s: status %ld, expected %ld: %.300s", method, path, r.status, want,
			  r.body);
	v = json_loads(r.body, 0, NULL);
	e = json_object_get(v, "error");
	CBT_EQ_LL(json_integer_value(json_object_get(e, "status")), want);
	if (needle)
		CBT_CONTAINS(json_string_value(json_object_get(e, "message")), needle);
	if (want == 401) {
		char wa[128];

		CBT_CONTAINS(header(&r, "WWW-Authenticate", wa, sizeof(wa)), "Bearer");
	}
	if (want == 405) {
		char allow[64];

		CBT_EQ_STR(header(&r, "Allow", allow, sizeof(allow)), "POST");
	}
	json_decref(v);
	resp_free(&r);
}

static void test_refusals(void)
{
	char paths[4][128], evil_origin[] = "Origin: http://evil.example";
	char ro_origin[64], wrong[] = "Authorization: Bearer t0ken-for-the-actions-tesT";
	char prefix_origin[96], evil_ref[] = "Referer: http://evil.example/x";
	char own_ref[96];
	PGconn *conn = cbt_connect(db);

	NEED_SERVERS();
	snprintf(paths[0], sizeof(paths[0]), "/api/v1/executions/%lld/stop", running_id);
	snprintf(paths[1], sizeof(paths[1]), "/api/v1/executions/%lld/abandon", failed_id);
	snprintf(paths[2], sizeof(paths[2]), "/api/v1/executions/%lld/restart", failed_id);
	snprintf(paths[3], sizeof(paths[3]), "%s", LOCK_PATH);
	snprintf(ro_origin, sizeof(ro_origin), "Origin: http://127.0.0.1:%d", ro.port);
	/* An origin that only starts like ours is another one. */
	snprintf(prefix_origin, sizeof(prefix_origin), "Origin: http://127.0.0.1:%d.evil.example",
		 adm.port);
	snprintf(own_ref, sizeof(own_ref), "Referer: http://127.0.0.1:%d/#/executions", adm.port);
	for (int i = 0; i < 4; i++) {
		const char *p = paths[i];

		/* Never on GET (nor HEAD), token or not. */
		refused(adm.port, "GET", p, (const char *const[]){ auth, origin, NULL }, 405, NULL);
		refused(ro.port, "GET", p, NULL, 405, NULL);
		/* Read-only: refused whatever is sent. */
		refused(ro.port, "POST", p, (const char *const[]){ auth, ro_origin, NULL }, 403,
			"read-only console");
		refused(ro.port, "POST", p, NULL, 403, "read-only console");
		/* No token, a wrong one, another scheme. */
		refused(adm.port, "POST", p, (const char *const[]){ origin, NULL }, 401, "token");
		refused(adm.port, "POST", p, (const char *const[]){ wrong, origin, NULL }, 401,
			"token");
		refused(adm.port, "POST", p,
			(const char *const[]){ "Authorization: Basic dDBrZW4=", NULL }, 401,
			"token");
		refused(adm.port, "POST", p,
			(const char *const[]){ "X-Cbatch-Token: " TOKEN, NULL }, 401, "token");
		/* Another origin, even with the right token. */
		refused(adm.port, "POST", p, (const char *const[]){ auth, evil_origin, NULL }, 403,
			"cross-origin");
		refused(adm.port, "POST", p, (const char *const[]){ auth, prefix_origin, NULL },
			403, "cross-origin");
		refused(adm.port, "POST", p, (const char *const[]){ auth, "Origin: null", NULL },
			403, "cross-origin");
		refused(adm.port, "POST", p,
			(const char *const[]){ auth, "Sec-Fetch-Site: cross-site", NULL }, 403,
			"cross-origin");
		refused(adm.port, "POST", p,
			(const char *const[]){ auth, "Sec-Fetch-Site: same-site", own_ref, NULL },
			403, "cross-origin");
		refused(adm.port, "POST", p, (const char *const[]){ auth, evil_ref, NULL }, 403,
			"cross-origin");
	}
	/* Nothing happened. */
	CBT_EQ_STR(status_of(conn, running_id), "STARTED");
	CBT_EQ_STR(status_of(conn, failed_id), "FAILED");
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock WHERE lock_name = $1 AND NOT "
				"released",
				"s", LOCK),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				     "'FORCE_UNLOCKED'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 3);
	PQfinish(conn);
}

static void test_bad_action_requests(void)
{
	char p[128];
	json_t *v = NULL;

	NEED_SERVERS();
	/* Unlock needs a reason. */
	CBT_EQ_LL(post(adm.port, LOCK_PATH, NULL, NULL), 400);
	CBT_EQ_LL(post(adm.port, LOCK_PATH, "{}", NULL), 400);
	CBT_EQ_LL(post(adm.port, LOCK_PATH, "{\"reason\":\"\"}", NULL), 400);
	CBT_EQ_LL(post(adm.port, LOCK_PATH, "{\"reason\":42}", NULL), 400);
	CBT_EQ_LL(post(adm.port, LOCK_PATH, "not json", NULL), 400);
	CBT_EQ_LL(post(adm.port, LOCK_PATH, "{\"reason\":\"a\\nb\"}", NULL), 400);
	CBT_EQ_LL(post(adm.port, "/api/v1/locks/no%20such%20lock/unlock", "{\"reason\":\"x\"}", &v),
		  404);
	json_decref(v);
	/* Bad and unknown ids. */
	CBT_EQ_LL(post(adm.port, "/api/v1/executions/abc/stop", NULL, NULL), 400);
	CBT_EQ_LL(post(adm.port, "/api/v1/executions/999999/stop", NULL, NULL), 404);
	CBT_EQ_LL(post(adm.port, "/api/v1/executions/999999/restart", NULL, NULL), 404);
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/stop", running_id);
	CBT_EQ_LL(post(adm.port, p, "[1]", NULL), 400);
	/* The wrong state: a conflict, with the library's reason. */
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/stop", done_id);
	CBT_EQ_LL(post(adm.port, p, NULL, &v), 409);
	CU_ASSERT(json_string_value(json_object_get(json_object_get(v, "error"), "message")) !=
		  NULL);
	json_decref(v);
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/abandon", done_id);
	CBT_EQ_LL(post(adm.port, p, NULL, NULL), 409);
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/restart", done_id);
	CBT_EQ_LL(post(adm.port, p, NULL, &v), 409);
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "COMPLETED");
	json_decref(v);
}

/* A job this program does not have cannot be restarted from its console. */
static void test_restart_unregistered(void)
{
	PGconn *conn = cbt_connect(db);
	long long id;
	char p[128];
	json_t *v = NULL;

	NEED_SERVERS();
	cbt_exec(conn, "INSERT INTO batch_job_instance (job_name, job_key) VALUES ('elsewhere', "
		       "'00000000000000000000000000000001');"
		       "INSERT INTO batch_job_execution (job_instance_id, status, exit_code, "
		       " start_time, end_time, create_time) SELECT job_instance_id, 'FAILED', "
		       " 'FAILED', now(), now(), now() FROM batch_job_instance WHERE job_name = "
		       " 'elsewhere'");
	id = newest(conn);
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/restart", id);
	CBT_EQ_LL(post(adm.port, p, NULL, &v), 409);
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "not registered");
	json_decref(v);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution e JOIN batch_job_instance "
			      "i USING (job_instance_id) WHERE i.job_name = $1",
			      "s", "elsewhere"),
		1);
	PQfinish(conn);
}

/* Stop the running execution: STOPPING at once, STOPPED after its chunk. */
static void test_stop(void)
{
	PGconn *conn = cbt_connect(db);
	char p[128];
	json_t *v = NULL;

	NEED_SERVERS();
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/stop", running_id);
	CBT_EQ_LL(post(adm.port, p, NULL, &v), 200);
	CBT_EQ_STR(json_string_value(json_object_get(v, "status")), "STOPPING");
	json_decref(v);
	CBT_EQ_STR(status_of(conn, running_id), "STOPPING");
	/* Let its chunk commit: it notices and ends. */
	cbt_exec(gate, "COMMIT");
	PQfinish(gate);
	gate = NULL;
	cbt_wait_timeout(running_pid, 60000);
	running_pid = 0;
	CBT_EQ_STR(status_of(conn, running_id), "STOPPED");
	PQfinish(conn);
}

/* Restart the stopped one from the console: 201 with the new
 * execution of the same instance that completes (every account the first
 * run left, the failed run's 10 and the 500, in the ledger once), the
 * process reaped. */
static void test_restart(void)
{
	PGconn *conn = cbt_connect(db);
	char p[128], procpath[64], stat[512];
	json_t *v = NULL;
	long long pid;

	NEED_SERVERS();
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/restart", running_id);
	/* 201 with the new execution the restart recorded, not 202 "restarting" */
	CBT_EQ_LL(post(adm.port, p, NULL, &v), 201);
	pid = json_integer_value(json_object_get(v, "pid"));
	CU_ASSERT(pid > 0);
	CU_ASSERT(json_integer_value(json_object_get(v, "job_execution_id")) > running_id);
	CBT_EQ_LL(
		json_integer_value(json_object_get(v, "job_execution_id")),
		cbt_queryp_ll(conn,
			      "SELECT max(job_execution_id) FROM batch_job_execution WHERE "
			      "job_instance_id = (SELECT job_instance_id FROM batch_job_execution "
			      "WHERE job_execution_id = $1)",
			      "lld", running_id));
	{
		char href[64];

		snprintf(href, sizeof(href), "/api/v1/executions/%lld",
			 (long long)json_integer_value(json_object_get(v, "job_execution_id")));
		CBT_EQ_STR(json_string_value(json_object_get(v, "href")), href);
	}
	json_decref(v);
	/* A restart of an execution that is no longer the newest: 409 at once,
	 * naming the newest, nothing started. */
	{
		long long execs = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");

		CBT_EQ_LL(post(adm.port, p, NULL, &v), 409);
		CBT_CONTAINS(
			json_string_value(json_object_get(json_object_get(v, "error"), "message")),
			"is not the newest execution of its instance");
		json_decref(v);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), execs);
	}
	if (!cbt_wait_untilp(conn, 120000,
			     "SELECT count(*) FROM batch_job_execution WHERE job_instance_id = "
			     "(SELECT job_instance_id FROM batch_job_execution WHERE "
			     "job_execution_id = $1) AND job_execution_id > $1 AND status = "
			     "'COMPLETED'",
			     "lld", running_id))
		CBT_FAILF("the restarted execution did not complete: %s",
			  status_of(conn, newest(conn)));
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM ledger l JOIN batch_job_execution e USING "
				"(job_execution_id) WHERE e.job_instance_id = (SELECT "
				"job_instance_id FROM batch_job_execution WHERE job_execution_id = "
				"$1)",
				"lld", running_id),
		  cbt_query_ll(conn, "SELECT count(*) - 100 FROM account"));
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	/* Reaped by serve: the pid goes away, never a zombie left behind. */
	snprintf(procpath, sizeof(procpath), "/proc/%lld/stat", pid);
	for (double deadline = cbt_now() + 60;;) {
		FILE *f = fopen(procpath, "r");

		if (!f)
			break;
		stat[0] = '\0';
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = '\0';
		fclose(f);
		if (cbt_now() > deadline) {
			CBT_FAILF("restart pid %lld still there after 60 s: %s", pid, stat);
			break;
		}
		cbt_sleep_ms(10);
	}
	{
		char log[8192];

		read_file(adm.log, log, sizeof(log));
		CBT_CONTAINS(log, "exited with 0");
	}
	PQfinish(conn);
}

static void test_abandon(void)
{
	PGconn *conn = cbt_connect(db);
	char p[128];
	json_t *v = NULL;

	NEED_SERVERS();
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/abandon", failed_id);
	CBT_EQ_LL(post(adm.port, p, "{}", &v), 200);
	CBT_EQ_STR(json_string_value(json_object_get(v, "status")), "ABANDONED");
	json_decref(v);
	CBT_EQ_STR(status_of(conn, failed_id), "ABANDONED");
	/* Twice is a conflict; and it can no longer restart. */
	CBT_EQ_LL(post(adm.port, p, NULL, NULL), 409);
	snprintf(p, sizeof(p), "/api/v1/executions/%lld/restart", failed_id);
	CBT_EQ_LL(post(adm.port, p, NULL, NULL), 409);
	PQfinish(conn);
}

static void test_unlock(void)
{
	PGconn *conn = cbt_connect(db);
	json_t *v = NULL;

	NEED_SERVERS();
	CBT_EQ_LL(post(adm.port, LOCK_PATH, "{\"reason\":\"host ops-3 died <b>hard</b>\"}", &v),
		  200);
	CBT_EQ_STR(json_string_value(json_object_get(v, "lock_name")), LOCK);
	CBT_EQ_STR(json_string_value(json_object_get(v, "outcome")), "FORCE_UNLOCKED");
	CBT_EQ_STR(json_string_value(json_object_get(v, "by")), "console@127.0.0.1");
	json_decref(v);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock WHERE lock_name = $1 AND released",
				"s", LOCK),
		  1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE lock_name = $1 AND "
				"outcome = 'FORCE_UNLOCKED' AND owner_id = 'console@127.0.0.1' AND "
				"detail LIKE '%' || $2 || '%'",
				"s s", LOCK, "host ops-3 died <b>hard</b>"),
		  1);
	/* The audit the console shows has it. */
	{
		struct resp r;

		http(&r, adm.port, "GET", "/api/v1/locks/audit?limit=5", NULL, 0, NULL);
		CBT_EQ_LL(r.status, 200);
		CBT_CONTAINS(r.body, "FORCE_UNLOCKED");
		CBT_CONTAINS(r.body, "host ops-3 died <b>hard</b>");
		resp_free(&r);
	}
	PQfinish(conn);
}

static void test_finish(void)
{
	NEED_SERVERS();
	CBT_EQ_LL(server_stop(&adm), 0);
	CBT_EQ_LL(server_stop(&ro), 0);
}

static const CU_TestInfo tests[] = {
	{ "fixture: completed, failed, running executions; a held lock; two servers",
	  test_fixture },
	{ "every action: 405 on GET, 403 read-only, 401 token, 403 cross-origin; no effect",
	  test_refusals },
	{ "bad bodies and ids 400, unknown 404, wrong state 409", test_bad_action_requests },
	{ "restart of a job not registered here: 409", test_restart_unregistered },
	{ "stop: STOPPING, then STOPPED after its chunk", test_stop },
	{ "restart: 201 with the new execution, the execution completes, the process reaped",
	  test_restart },
	{ "abandon: ABANDONED; again 409; restart 409", test_abandon },
	{ "force unlock: released, FORCE_UNLOCKED audit row with reason and actor", test_unlock },
	{ "servers stop with 0", test_finish },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("serve_actions", init, clean, tests);
}
