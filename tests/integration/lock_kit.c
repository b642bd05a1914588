/*
 * What the lock tests share (test_lock*.c): the ledger example run against one
 * database, the checks that it posted every account exactly once, the lock's
 * audit, and jobs defined through the C API that the program launches from
 * another process by re-executing itself as `--probe` (lock_main).
 */
#include "lock_kit.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cbatch.h>
#include <cbatch/sys/tx.h>

#include "numbers.h"
#include "repo.h" /* cb__owner_id */

char db[CBT_CONNINFO_MAX];
char self_exe[PATH_MAX];

int init(void)
{
	return cbt_db_create(db, sizeof(db), "lock");
}

int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

/* ---- helpers --------------------------------------------------------------- */

char out[65536], errout[65536];

/* argv = prefix..., cbatch-examples --db CONNINFO, then the NULL-terminated va list. */
static void build_argv(const char **argv, const char *const *prefix, const char *conninfo,
		       const char *first, va_list ap)
{
	size_t n = 0;
	const char *a;

	for (; prefix && *prefix; prefix++)
		argv[n++] = *prefix;
	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = conninfo;
	for (a = first; a && n < MAXARGS - 1; a = va_arg(ap, const char *))
		argv[n++] = a;
	argv[n] = NULL;
}

/* Run cbatch-examples --db db ARGS... (NULL-terminated) to the end; output in out/errout. */
int ex(const char *first, ...)
{
	const char *argv[MAXARGS];
	va_list ap;

	va_start(ap, first);
	build_argv(argv, NULL, db, first, ap);
	va_end(ap);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* As ex, connected with @p conninfo instead of db. */
int ex_with(const char *conninfo, const char *first, ...)
{
	const char *argv[MAXARGS];
	va_list ap;

	va_start(ap, first);
	build_argv(argv, NULL, conninfo, first, ap);
	va_end(ap);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/*
 * A login role @p role with every right on the public schema's tables and
 * sequences, not superuser; @p conninfo receives a conninfo for it.
 */
void make_role(PGconn *conn, const char *role, char *conninfo, size_t size)
{
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT");
	char dbname[128], sql[1024];

	cbt_query_str(conn, "SELECT current_database()", dbname, sizeof(dbname));
	snprintf(conninfo, size, "host=%s port=%s user=%s dbname=%s", host ? host : "/tmp",
		 port ? port : "5432", role, dbname);
	snprintf(sql, sizeof(sql),
		 "DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN; "
		 "GRANT USAGE ON SCHEMA public TO %s; "
		 "GRANT ALL ON ALL TABLES IN SCHEMA public TO %s; "
		 "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s",
		 role, role, role, role, role);
	cbt_exec(conn, sql);
}

void drop_role(PGconn *conn, const char *role)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	cbt_exec(conn, sql);
}

/* As ex, in the background; stdout and stderr go to tmpdir/@p log. */
pid_t ex_spawn_with(const char *const *prefix, const char *conninfo, const char *log,
		    const char *first, ...)
{
	const char *argv[MAXARGS];
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, first);
	build_argv(argv, prefix, conninfo, first, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), log);
	return cbt_spawn(argv, path);
}

/* The contents of tmpdir/@p log (truncated to @p size). */
void read_log(const char *log, char *buf, size_t size)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n = 0;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), log);
	f = fopen(path, "r");
	if (!f)
		return;
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

double q_double(PGconn *conn, const char *sql)
{
	char buf[64];

	if (cbt_query_str(conn, sql, buf, sizeof(buf)) < 0)
		return -1;
	return atof(buf);
}

/* Fresh repository and an empty ledger example. */
void reset(PGconn *conn)
{
	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", "0", NULL), 0);
}

/* Add @p rows fresh accounts; @return the id of the first one. */
long long add_rows(PGconn *conn, long long rows)
{
	char n[24];
	long long first = cbt_queryp_ll(conn, "SELECT coalesce(max(id), 0) + 1 FROM account", "");

	snprintf(n, sizeof(n), "%lld", rows);
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", n, NULL), 0);
	return first;
}

/* Every account is in the ledger exactly once with its amount, and processed. */
void assert_exactly_once(PGconn *conn)
{
	long long accounts = cbt_query_ll(conn, "SELECT count(*) FROM account");

	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), accounts);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l "
				     "ON l.account_id = a.id AND l.amount = a.amount "
				     "AND l.seller_id = a.seller_id"),
		  accounts);
	/* Every ledger row names an execution whose step counted it. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT l.job_execution_id, count(*) "
				     "AS n FROM ledger l GROUP BY 1) x WHERE n <> (SELECT "
				     "sum(write_count) FROM batch_step_execution s WHERE "
				     "s.job_execution_id = x.job_execution_id)"),
		  0);
}

/* After a SIGKILL: a pipeline sent before the kill may still commit
 * server-side, so look only once the dead client's sessions are gone. */
void wait_no_client_sessions(PGconn *conn)
{
	if (!cbt_wait_until(conn, 30000, "SELECT ((" CLIENT_SESSIONS ") = 0)::int"))
		CBT_FAILF("the killed client's sessions did not end within 30 s");
}

/* Wait (database time) until nobody holds the lock @p name. */
void wait_lock_free(PGconn *conn, const char *name, int timeout_ms)
{
	if (!cbt_wait_untilp(conn, timeout_ms,
			     "SELECT (count(*) = 0)::int FROM batch_lock WHERE lock_name = "
			     "$1 AND locked_until >= clock_timestamp()",
			     "s", name))
		CBT_FAILF("lock '%s' still held after %d ms", name, timeout_ms);
}

long long audit_count(PGconn *conn, long long after_id, const char *outcome)
{
	return cbt_queryp_ll(conn,
			     "SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
			     "outcome = $2",
			     "lld s", after_id, outcome);
}

long long audit_mark(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT coalesce(max(audit_id), 0) FROM batch_lock_audit");
}

/* The job execution of the process @p pid (its owner id is host:pid:random). */
long long execution_of(PGconn *conn, pid_t pid)
{
	return cbt_queryp_ll(conn,
			     "SELECT coalesce(max(job_execution_id), 0) FROM batch_job_execution "
			     "WHERE owner_id LIKE '%:' || $1::text || ':%'",
			     "ld", (long)pid);
}

int still_running(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == 0;
}

/* ---- a job whose one call outlasts the lease (the heartbeat test) ------------ */

/*
 * One call that takes longer than the lease. Past the lease it launches the
 * same job instance from another process (this program as --probe), and
 * waits for that to finish: the launch must be refused as running.
 */
static int long_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			cb_error *err)
{
	long_task *t = user;
	double t0 = cbt_now();

	(void)sc;
	(void)tx;
	(void)context;
	(void)err;
	if (t->probe_rc == -2) {
		const char *argv[] = { self_exe, "--probe", db, LONG_TASK_JOB, NULL };

		cbt_sleep_ms(1500); /* past the 1 s lease: only the heartbeat holds the lock */
		t->probe_rc = cbt_run(argv, t->probe_out, sizeof(t->probe_out), NULL, 0);
	}
	while (cbt_now() - t0 < t->seconds)
		cbt_sleep_ms(50);
	t->took = cbt_now() - t0;
	return CB_DONE;
}

cb_job *long_task_job(long_task *t)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	if (cb_job_new(&job, LONG_TASK_JOB, &err) < 0)
		return NULL;
	s.name = "sleep";
	s.kind = CB_STEP_TASKLET;
	s.tasklet = long_tasklet;
	s.user = t;
	if (cb_job_add_step(job, &s, &err) < 0) {
		cb_job_free(job);
		return NULL;
	}
	return job;
}

/* ---- a job that freezes itself inside a chunk transaction -------------------- */

/*
 * The numbers job (1..FREEZE_ROWS into `sink (n PRIMARY KEY)`) whose writer,
 * in chunk $CBT_FREEZE_AT (1-based), sends its insert and an UPDATE of the
 * lock row (the row lock a chunk checkpoint takes), flushes them, and stops
 * its own process with SIGSTOP: a frozen owner idle in transaction, holding
 * row locks on the data and on batch_lock.
 */
typedef struct freezer {
	cbt_numbers n;
	int (*inner_write)(void *state, cb_tx *tx, void *const *items, size_t count, cb_error *err);
	int (*inner_open)(void *state, const cb_step_context *sc, const json_t *saved,
			  cb_error *err);
	int freeze_at, chunks;
	char lock_stmt[64];
} freezer;

static freezer frz;

static int freeze_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	int rc = frz.inner_open(state, sc, saved, err);

	if (rc == 0)
		rc = cb_pg_prepare(
			cb_step_context_conn(sc), frz.lock_stmt, "frzlock",
			"UPDATE batch_lock SET updated_at = updated_at WHERE lock_name = '" FREEZE_JOB
			"'",
			0, err);
	return rc;
}

static int freeze_write(void *state, cb_tx *tx, void *const *items, size_t count, cb_error *err)
{
	int rc = frz.inner_write(state, tx, items, count, err);

	if (rc == 0 && ++frz.chunks == frz.freeze_at) {
		rc = cb_tx_send(tx, frz.lock_stmt, 0, NULL, NULL, NULL, NULL, NULL, err);
		if (rc == 0)
			rc = cb_tx_flush(tx, err);
		if (rc == 0)
			raise(SIGSTOP);
	}
	return rc;
}

static int freeze_build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	int rc = cbt_numbers_build(user, sc, parts, err);

	frz.inner_open = parts->writers[0].open;
	frz.inner_write = parts->writers[0].write;
	parts->writers[0].open = freeze_open;
	parts->writers[0].write = freeze_write;
	return rc;
}

cb_job *freeze_job(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;
	const char *at = getenv("CBT_FREEZE_AT");

	memset(&frz, 0, sizeof(frz));
	frz.n.last = FREEZE_ROWS;
	frz.freeze_at = at ? atoi(at) : 0;
	if (cb_job_new(&job, FREEZE_JOB, &err) < 0)
		return NULL;
	s.name = "numbers";
	s.build = freeze_build;
	s.user = &frz.n;
	s.chunk_size = FREEZE_CHUNK;
	if (cb_job_add_step(job, &s, &err) < 0) {
		cb_job_free(job);
		return NULL;
	}
	return job;
}

/* `--probe CONNINFO JOB`: launch JOB from this (other) process. Exit 4 when
 * refused as running, 0 if it ran and completed, 1 otherwise. */
int probe_main(const char *conninfo, const char *job_name)
{
	long_task t = { 0.0, 0, "", 0.0 };
	cb_launch_options opts = CB_LAUNCH_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	cb_job_result r;
	PGconn *conn = PQconnectdb(conninfo);
	int freeze = strcmp(job_name, FREEZE_JOB) == 0;
	cb_job *job = freeze ? freeze_job() : long_task_job(&t);
	int rc;

	if (PQstatus(conn) != CONNECTION_OK || !job ||
	    (!freeze && strcmp(job_name, LONG_TASK_JOB) != 0)) {
		printf("probe: cannot start: %s\n", PQerrorMessage(conn));
		return 1;
	}
	opts.lease_seconds = freeze ? 2 : 1;
	rc = cb_job_launch(&r, conn, job, NULL, &opts, &err);
	printf("probe %s: rc=%s %s; %s\n", cb__owner_id(), cb_strcode(rc), err.message,
	       r.exit_message);
	cb_job_free(job);
	PQfinish(conn);
	if (rc == CB_ERUNNING)
		return 4;
	return rc == 0 && r.status == CB_STATUS_COMPLETED ? 0 : 1;
}

/* ---- probes: this program again, as --probe -------------------------------- */

/* The state letter of process @p pid (/proc/PID/stat), or '?'. */
char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

pid_t spawn_probe(const char *conninfo, const char *job, const char *log)
{
	const char *argv[] = { self_exe, "--probe", conninfo, job, NULL };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), log);
	return cbt_spawn(argv, path);
}

int lock_main(int argc, char **argv, const char *name, const CU_TestInfo *tests, size_t ntests)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);

	if (n > 0)
		self_exe[n] = '\0';
	else
		snprintf(self_exe, sizeof(self_exe), "%s", argv[0]);
	if (argc == 4 && strcmp(argv[1], "--probe") == 0)
		return probe_main(argv[2], argv[3]);
	/* `PROGRAM WORD`: only the tests whose name contains WORD (--list and
	 * --run NAME are the harness's). */
	if (argc == 2 && argv[1][0] != '-') {
		CU_TestInfo *some = calloc(ntests, sizeof(*some));
		size_t k = 0;
		int rc;

		if (!some)
			return 1;
		for (const CU_TestInfo *t = tests; t->pName; t++)
			if (strstr(t->pName, argv[1]))
				some[k++] = *t;
		rc = cbt_main(name, init, clean, some);
		free(some);
		return rc;
	}
	return cbt_main(name, init, clean, tests);
}
