/*
 * Duplicate-run protection where the repository is deployed: a schema of
 * version 1 upgrades keeping its locks and audit; transaction pooling is
 * refused, session pooling works (pgbouncer) (test_lock.c for the rest).
 *
 * The ledger example (cbatch-examples) locks as "ledger" whatever its
 * parameters, so every instance below competes for that one lock. Jobs that
 * need something the CLI cannot do are defined through the C API (lock_kit.c);
 * the program re-executes itself as `--probe` to launch one of them from
 * another process.
 *
 * Nothing here sleeps for a fixed time in place of the lease logic: waits
 * poll the database (its clock is the lock's clock) with generous timeouts.
 * Where a job must still be running at some point, the test either holds it
 * there with a lock of its own, or gives it far more work than the wait
 * needs and fails loudly ("proves nothing") if it finished anyway.
 *
 * `PROGRAM WORD` runs only the tests whose name contains WORD; `--list` and
 * `--run NAME` as every test program.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cbatch.h>
#include <cbatch/sys/tx.h>

#include "cbtest.h"
#include "lock_kit.h"
#include "numbers.h"
#include "repo.h" /* cb__owner_id */

/* ---- 12. schema upgrade from version 1 ------------------------------------------- */

/* A repository made by a cbatch of schema version 1, with a held lock and its
 * audit, upgrades in place (twice is a no-op), and what it held still works. */
static void test_schema_upgrade_from_version_1_keeps_locks_and_audit(void)
{
	PGconn *conn = cbt_connect(db);
	char path[PATH_MAX], *sql = NULL;
	long size;
	FILE *f;

	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	snprintf(path, sizeof(path), "%s/tests/data/schema_history/001_initial.sql",
		 cbt_source_dir());
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	sql = calloc(1, (size_t)size + 1);
	CU_ASSERT_FATAL(sql && fread(sql, 1, (size_t)size, f) == (size_t)size);
	fclose(f);
	cbt_exec(conn, "BEGIN");
	cbt_exec(conn, sql);
	free(sql);
	cbt_exec(conn, "CREATE TABLE batch_schema_version (version int PRIMARY KEY, name text NOT "
		       "NULL, installed_at timestamptz NOT NULL DEFAULT clock_timestamp()); "
		       "INSERT INTO batch_schema_version (version, name) VALUES (1, "
		       "'001_initial.sql'); COMMIT");
	/* Version 1's own acquire: a lock held by someone for an hour. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT fencing_token FROM batch_lock_acquire('legacy', "
				"'otherhost:1:0123456789abcdef', 3600)",
				""),
		  1);
	CBT_EQ_LL(ex("schema", "check", NULL), 1); /* needs `schema init` */
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("schema", "check", NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT max(version) FROM batch_schema_version"),
		  cb_repo_schema_target());
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schema_version"),
		  cb_repo_schema_target());
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE lock_name = "
				     "'legacy' AND outcome = 'ACQUIRED'"),
		  1);
	/* Still held (no session on record for it), refused with the time left. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE lock_name = 'legacy' "
				     "AND owner_backend_pid IS NULL AND NOT released"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_acquire('legacy', 'me', 60) "
				     "WHERE outcome = 'SKIPPED_HELD' AND held_left_seconds > 3500"),
		  1);
	CBT_EQ_LL(ex("unlock", "legacy", "--force", "--reason", "upgrade", NULL), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE lock_name = "
				     "'legacy' AND outcome = 'FORCE_UNLOCKED' AND detail LIKE "
				     "'%(holder was otherhost:1:0123456789abcdef; no session "
				     "recorded)'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_acquire('legacy', 'me', 60) "
				     "WHERE outcome = 'ACQUIRED' AND fencing_token = 2"),
		  1);
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", "100", NULL), 0);
	CBT_EQ_LL(ex("run", "ledger", "u:long=1", NULL), 0);
	assert_exactly_once(conn);
	PQfinish(conn);
}

/* ---- connection poolers ---------------------------------------------------- */

/* The pgbouncer program, from PATH or the sbin directories; "" when absent. */
static void find_pgbouncer(char *bin, size_t size)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	bin[0] = '\0';
	snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/usr/local/sbin:/sbin", path ? path : "");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(bin, size, "%s/pgbouncer", d);
		if (access(bin, X_OK) == 0)
			return;
	}
	bin[0] = '\0';
}

/* A TCP port on 127.0.0.1 that was free a moment ago. */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/*
 * Start pgbouncer (foreground, our child) on 127.0.0.1:@p port in front of
 * the test cluster's socket, in @p mode, with trust and a user list of one,
 * its files in @p dir. @return its pid, or -1 (test failed).
 */
static pid_t start_pgbouncer_with(const char *bin, const char *dir, int port, const char *mode,
				  const char *conninfo, int pool_size, const char *extra)
{
	const char *host = getenv("CBATCH_TEST_PGHOST"), *pgport = getenv("CBATCH_TEST_PGPORT");
	const char *user = getenv("CBATCH_TEST_PGUSER");
	char ini[PATH_MAX], users[PATH_MAX], log[PATH_MAX];
	const char *argv[6];
	struct stat st;
	struct passwd *pw = NULL;
	pid_t pid;
	FILE *f;
	int n = 0;

	if (!user)
		user = "postgres";
	snprintf(ini, sizeof(ini), "%s/pgbouncer.ini", dir);
	snprintf(users, sizeof(users), "%s/users.txt", dir);
	snprintf(log, sizeof(log), "%s/pgbouncer-%s.log", dir, mode);
	f = fopen(users, "w");
	CU_ASSERT_FATAL(f != NULL);
	fprintf(f, "\"%s\" \"\"\n", user);
	fclose(f);
	f = fopen(ini, "w");
	CU_ASSERT_FATAL(f != NULL);
	fprintf(f,
		"[databases]\n* = host=%s port=%s\n[pgbouncer]\nlisten_addr = 127.0.0.1\n"
		"listen_port = %d\nunix_socket_dir =\nauth_type = trust\nauth_file = %s\n"
		"pool_mode = %s\nmax_client_conn = 100\ndefault_pool_size = %d\n"
		"ignore_startup_parameters = extra_float_digits\n%s",
		host ? host : "/tmp", pgport ? pgport : "5432", port, users, mode, pool_size,
		extra ? extra : "");
	fclose(f);
	chmod(ini, 0644);
	chmod(users, 0644);
	argv[n++] = bin;
	/* It refuses to run as root: as the cluster's owner then, who can
	 * reach its socket. */
	if (geteuid() == 0 && host && stat(host, &st) == 0)
		pw = getpwuid(st.st_uid);
	if (pw) {
		argv[n++] = "-u";
		argv[n++] = pw->pw_name;
	}
	argv[n++] = ini;
	argv[n] = NULL;
	pid = cbt_spawn(argv, log);
	CU_ASSERT_FATAL(pid > 0);
	/* Up to 60 s: a loaded machine. */
	for (double deadline = cbt_now() + 60;
	     PQping(conninfo) != PQPING_OK && cbt_now() < deadline;)
		cbt_sleep_ms(50);
	if (PQping(conninfo) != PQPING_OK) {
		char buf[2048] = "";

		f = fopen(log, "r");
		if (f) {
			buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
			fclose(f);
		}
		kill(pid, SIGTERM);
		cbt_wait(pid);
		CBT_FAILF("pgbouncer (%s) did not come up on port %d: %s", mode, port, buf);
		return -1;
	}
	return pid;
}

static pid_t start_pgbouncer(const char *bin, const char *dir, int port, const char *mode,
			     const char *conninfo)
{
	return start_pgbouncer_with(bin, dir, port, mode, conninfo, 20, NULL);
}

static void stop_pgbouncer(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	cbt_wait_timeout(pid, 60000);
}

/*
 * Behind PgBouncer in transaction mode a partitioned run stops at once with
 * "transaction pooling is not supported" (exit 1), before it writes anything
 * (no execution, no lock), ends no session (a pooled client's open
 * transaction and a direct one both live on); behind PgBouncer in session
 * mode partitioned runs complete. The server also refuses a chunk
 * checkpoint and a session record made from another session than the
 * connection's (CB003): what catches a pooler that the check up front
 * missed.
 */
static void test_transaction_pooling_is_refused_session_pooling_works(void)
{
	PGconn *conn = cbt_connect(db), *direct, *pooled_tx;
	char bin[PATH_MAX], dir[PATH_MAX], pooled[512], dbname[128];
	PGresult *res;
	double t0;
	pid_t pgb;
	int port;

	find_pgbouncer(bin, sizeof(bin));
	if (!bin[0]) {
		/* A required test dependency: a silent pass would hide the feature. */
		CBT_FAILF("pgbouncer is not installed (scripts/install-deps.sh installs it)");
		PQfinish(conn);
		return;
	}
	reset(conn);
	add_rows(conn, 2000);
	/* The server's check, without a pooler: another session's identity. */
	res = PQexec(conn, "SELECT batch_chunk_checkpoint(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0, "
			   "NULL, NULL, NULL, NULL, pg_backend_pid() + 1, now())");
	CBT_EQ_STR(PQresultErrorField(res, PG_DIAG_SQLSTATE), "CB003");
	CBT_CONTAINS(PQresultErrorMessage(res), "transaction pooling is not supported");
	PQclear(res);
	res = PQexec(conn, "SELECT batch_lock_record_session('x', 'y', 1, pg_backend_pid(), "
			   "'2000-01-01T00:00:00Z')");
	CBT_EQ_STR(PQresultErrorField(res, PG_DIAG_SQLSTATE), "CB003");
	PQclear(res);

	snprintf(dir, sizeof(dir), "%s/pgbouncer-%ld", cbt_tmpdir(), (long)getpid());
	mkdir(dir, 0777);
	chmod(dir, 0777); /* pgbouncer may run as the cluster's owner */
	port = free_port();
	CU_ASSERT_FATAL(port > 0);
	cbt_query_str(conn, "SELECT current_database()", dbname, sizeof(dbname));
	snprintf(pooled, sizeof(pooled), "host=127.0.0.1 port=%d user=%s dbname=%s", port,
		 getenv("CBATCH_TEST_PGUSER") ? getenv("CBATCH_TEST_PGUSER") : "postgres", dbname);

	pgb = start_pgbouncer(bin, dir, port, "transaction", pooled);
	CU_ASSERT_FATAL(pgb > 0);
	/* Bystanders: a pooled client inside a transaction, and a direct session. */
	pooled_tx = cbt_connect(pooled);
	cbt_exec(pooled_tx, "BEGIN");
	cbt_query_ll(pooled_tx, "SELECT pg_backend_pid()");
	direct = cbt_connect(db);
	t0 = cbt_now();
	CBT_EQ_LL(ex_with(pooled, "run", "ledger_partitioned", "run.id:long=1",
			  "-partition.threads:long=2", NULL),
		  1);
	CU_ASSERT(cbt_now() - t0 < 10);
	CBT_CONTAINS(errout, "transaction pooling is not supported");
	CBT_CONTAINS(errout, "pool_mode=session");
	/* Nothing ended: both bystanders go on. */
	CBT_EQ_LL(cbt_query_ll(pooled_tx, "SELECT 1"), 1);
	cbt_exec(pooled_tx, "COMMIT");
	CBT_EQ_LL(cbt_query_ll(direct, "SELECT 1"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE detail LIKE "
				     "'%terminated%'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 0);
	PQfinish(pooled_tx);
	stop_pgbouncer(pgb);

	pgb = start_pgbouncer(bin, dir, port, "session", pooled);
	CU_ASSERT_FATAL(pgb > 0);
	CBT_EQ_LL(ex_with(pooled, "run", "ledger_partitioned", "run.id:long=1",
			  "-partition.threads:long=2", NULL),
		  0);
	add_rows(conn, 1000);
	if (ex_with(pooled, "run", "ledger_partitioned", "run.id:long=2",
		    "-partition.threads:long=3", NULL) != 0) {
		char log[PATH_MAX + 32], *text;

		snprintf(log, sizeof(log), "%s/pgbouncer-session.log", dir);
		text = cbt_slurp(log, NULL);
		CBT_FAILF("the partitioned run behind session pooling failed: %s%s\npgbouncer: %s",
			  out, errout, text ? text : "(no log)");
		free(text);
		cbt_print_rows(conn, "the executions and their steps",
			       "SELECT e.job_execution_id, e.status, e.exit_message, s.step_name, "
			       "s.status, s.exit_message FROM batch_job_execution e LEFT JOIN "
			       "batch_step_execution s USING (job_execution_id) ORDER BY 1, "
			       "s.step_execution_id");
	}
	stop_pgbouncer(pgb);
	/* Every account once (a partitioned run's manager repeats its
	 * partitions' counts, so no per-execution sum here). */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 3000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT account_id) FROM ledger"), 3000);
	PQfinish(direct);
	PQfinish(conn);
}

/*
 * A pgbouncer of this test's in front of the test database: its directory,
 * a free port, and @p pooled, the conninfo through it. @return 0, or -1
 * (test failed: a required dependency is missing).
 */
static int pooler_prepare(PGconn *conn, char *bin, size_t bsize, char *dir, size_t dsize, int *port,
			  char *pooled, size_t psize)
{
	char dbname[128];

	find_pgbouncer(bin, bsize);
	if (!bin[0]) {
		CBT_FAILF("pgbouncer is not installed (scripts/install-deps.sh installs it)");
		return -1;
	}
	snprintf(dir, dsize, "%s/pgbouncer-%ld", cbt_tmpdir(), (long)getpid());
	mkdir(dir, 0777);
	chmod(dir, 0777); /* pgbouncer may run as the cluster's owner */
	*port = free_port();
	CU_ASSERT_FATAL(*port > 0);
	cbt_query_str(conn, "SELECT current_database()", dbname, sizeof(dbname));
	snprintf(pooled, psize, "host=127.0.0.1 port=%d user=%s dbname=%s", *port,
		 getenv("CBATCH_TEST_PGUSER") ? getenv("CBATCH_TEST_PGUSER") : "postgres", dbname);
	return 0;
}

/*
 * Behind PgBouncer in transaction mode every command refuses before it does
 * anything, with run's refusal (exit 1, "transaction pooling is not
 * supported ... pool_mode=session"): a worker beside a directly connected
 * manager claims none of its partitions (a direct worker then runs them and
 * the manager completes), a scheduler claims no firing, serve never
 * listens, cleanup and a listing do not run.
 */
static void test_every_command_refuses_transaction_pooling_before_it_acts(void)
{
	PGconn *conn = cbt_connect(db);
	char bin[PATH_MAX], dir[PATH_MAX], pooled[512], buf[8192];
	pid_t pgb, mgr, srv;
	int port;

	if (pooler_prepare(conn, bin, sizeof(bin), dir, sizeof(dir), &port, pooled,
			   sizeof(pooled)) < 0) {
		PQfinish(conn);
		return;
	}
	reset(conn);
	add_rows(conn, 2000);
	pgb = start_pgbouncer(bin, dir, port, "transaction", pooled);
	CU_ASSERT_FATAL(pgb > 0);

	/* A manager connected directly, waiting for workers on 2 partitions. */
	mgr = ex_spawn("pool-manager.log", "run", "ledger_partitioned", "run.id:long=1",
		       "-partition.threads:long=0", "-partition.count:long=2", NULL);
	CU_ASSERT_FATAL(mgr > 0);
	CU_ASSERT_FATAL(cbt_wait_until(conn, 30000,
				       "SELECT (count(*) = 2)::int FROM batch_step_execution "
				       "WHERE partition_index IS NOT NULL"));
	CBT_EQ_LL(ex_with(pooled, "worker", "--exit-when-idle", "2", NULL), 1);
	CBT_CONTAINS(errout, "transaction pooling is not supported");
	CBT_CONTAINS(errout, "pool_mode=session");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_step_execution WHERE "
				     "partition_index IS NOT NULL AND (worker IS NOT NULL OR "
				     "status <> 'STARTING')"),
		  0);
	CBT_EQ_LL(ex("worker", "--exit-when-idle", "1", NULL), 0);
	CBT_EQ_LL(cbt_wait_timeout(mgr, 60000), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT account_id) FROM ledger"), 2000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);

	/* The scheduler: no firing claimed. */
	CBT_EQ_LL(ex("schedule", "add", "pooled", "--cron", "* * * * * *", "--job", "ledger",
		     "u:long={fire_epoch}", NULL),
		  0);
	/* --exit-after only bounds a node that wrongly started. */
	CBT_EQ_LL(ex_with(pooled, "scheduler", "--exit-after", "4", NULL), 1);
	CBT_CONTAINS(errout, "transaction pooling is not supported");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing"), 0);
	CBT_EQ_LL(ex("schedule", "remove", "pooled", NULL), 0);

	/* serve: never listens (it would run until killed: the timeout fails it). */
	srv = ex_spawn_with(NULL, pooled, "pool-serve.log", "serve", "--listen", "127.0.0.1:0",
			    NULL);
	CU_ASSERT_FATAL(srv > 0);
	CBT_EQ_LL(cbt_wait_timeout(srv, 20000), 1);
	read_log("pool-serve.log", buf, sizeof(buf));
	CBT_CONTAINS(buf, "transaction pooling is not supported");
	CU_ASSERT(strstr(buf, "listening on") == NULL);

	/* cleanup and a listing. */
	CBT_EQ_LL(ex_with(pooled, "cleanup", "--older-than", "1s", NULL), 1);
	CBT_CONTAINS(errout, "transaction pooling is not supported");
	CU_ASSERT(strstr(errout, "removed") == NULL && strstr(out, "removed") == NULL);
	CBT_EQ_LL(ex_with(pooled, "executions", NULL), 1);
	CBT_CONTAINS(errout, "transaction pooling is not supported");
	stop_pgbouncer(pgb);
	PQfinish(conn);
}

/* The status code of GET @p path from the server on 127.0.0.1:@p port; -1
 * when it cannot be had. */
static int http_status(int port, const char *path)
{
	struct sockaddr_in a;
	char req[256], resp[64];
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;
	ssize_t n;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(req, sizeof(req),
		 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path, port);
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req) &&
	    (n = read(fd, resp, sizeof(resp) - 1)) > 12) {
		resp[n] = '\0';
		if (strncmp(resp, "HTTP/1.", 7) == 0)
			status = atoi(resp + 9);
	}
	close(fd);
	return status;
}

/*
 * serve sets nothing on a server session that outlives its own use of it:
 * behind a pool of one server session, another client of the pool then
 * finds the server's defaults (statement_timeout,
 * max_parallel_workers_per_gather), in session mode with no reset query
 * (serve runs and answers; its settings were asked for at connection start,
 * or not at all when the pooler refuses them) as in transaction mode (serve
 * refuses the pooler before it connects anything).
 */
static void test_serve_leaves_no_setting_on_a_pooled_server_session(void)
{
	static const char *const modes[] = { "session", "transaction" };
	PGconn *conn = cbt_connect(db), *other;
	char bin[PATH_MAX], dir[PATH_MAX], pooled[512], buf[8192], want_st[64], want_mp[64];
	char log[64], got[64];

	int port;

	if (pooler_prepare(conn, bin, sizeof(bin), dir, sizeof(dir), &port, pooled,
			   sizeof(pooled)) < 0) {
		PQfinish(conn);
		return;
	}
	reset(conn);
	cbt_query_str(conn, "SHOW statement_timeout", want_st, sizeof(want_st));
	cbt_query_str(conn, "SHOW max_parallel_workers_per_gather", want_mp, sizeof(want_mp));
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		pid_t pgb, srv;
		int status = -2, served = 0, rc = -1;
		double until;

		pgb = start_pgbouncer_with(bin, dir, port, modes[m], pooled, 1,
					   "server_reset_query =\n");
		CU_ASSERT_FATAL(pgb > 0);
		snprintf(log, sizeof(log), "pool-serve-%s.log", modes[m]);
		srv = ex_spawn_with(NULL, pooled, log, "serve", "--listen", "127.0.0.1:0", NULL);
		CU_ASSERT_FATAL(srv > 0);
		/* Until it listens (then a request that queries), or has exited. */
		for (until = cbt_now() + 30; cbt_now() < until;) {
			const char *at;

			read_log(log, buf, sizeof(buf));
			if ((at = strstr(buf, "listening on http://127.0.0.1:")) != NULL) {
				status = http_status(
					atoi(at + strlen("listening on http://127.0.0.1:")),
					"/readyz");
				served = 1;
				break;
			}
			if (waitpid(srv, &rc, WNOHANG) == srv) {
				rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
				srv = 0;
				break;
			}
			cbt_sleep_ms(50);
		}
		if (served) {
			/* Behind the session pooler it works: ready, answered. */
			CBT_EQ_LL(status, 200);
			kill(srv, SIGTERM);
			CBT_EQ_LL(cbt_wait_timeout(srv, 20000), 0);
			CU_ASSERT(strcmp(modes[m], "session") == 0);
		} else {
			CU_ASSERT_FATAL(srv == 0);
			CBT_EQ_LL(rc, 1);
			read_log(log, buf, sizeof(buf));
			CBT_CONTAINS(buf, "transaction pooling is not supported");
			CU_ASSERT(strcmp(modes[m], "transaction") == 0);
		}
		/* The pool's one server session, as the next client finds it. */
		other = cbt_connect(pooled);
		cbt_query_str(other, "SHOW statement_timeout", got, sizeof(got));
		CBT_EQ_STR(got, want_st);
		cbt_query_str(other, "SHOW max_parallel_workers_per_gather", got, sizeof(got));
		CBT_EQ_STR(got, want_mp);
		PQfinish(other);
		stop_pgbouncer(pgb);
	}
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "schema upgrade from version 1 keeps locks and audit",
	  test_schema_upgrade_from_version_1_keeps_locks_and_audit },
	{ "transaction pooling is refused, session pooling works",
	  test_transaction_pooling_is_refused_session_pooling_works },
	{ "every command refuses transaction pooling before it acts",
	  test_every_command_refuses_transaction_pooling_before_it_acts },
	{ "serve leaves no setting on a pooled server session",
	  test_serve_leaves_no_setting_on_a_pooled_server_session },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	return lock_main(argc, argv, "lock_deploy", tests, sizeof(tests) / sizeof(tests[0]));
}
