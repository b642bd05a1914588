/*
 * The partition proofs: partitioned steps run by threads and by worker
 * processes, with workers killed, frozen past their lease and thawed, and
 * after every scenario the data checked for rows lost and rows written
 * twice — both must be 0.
 *
 *   partition_torture smoke   short runs (a few seconds each): the ctest
 *                             integration test, on every run
 *   partition_torture         the full counts when CBATCH_TORTURE=full
 *                             (scripts/torture.sh), else it reports itself
 *                             skipped (exit 77)
 *
 * "Written once" is proved, not inferred: statement triggers record every
 * committed insert and update of the target tables (ledger, outbox_delivery)
 * in write_audit. An upsert that rewrote a row would leave a second audit row,
 * even though the target's primary key keeps one row per source row. Only
 * committed writes reach the audit, so a chunk that rolled back (killed,
 * fenced) leaves nothing.
 *
 * A summary table is printed at the end.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cbtest.h"

/* ctest's SKIP_RETURN_CODE for torture.partitions. */
#define EXIT_SKIPPED 77

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static int full;
static unsigned int seed = 20261201;

typedef struct tally {
	char name[64];
	int rounds, faults;
	long long rows, lost, duplicated;
	double seconds;
} tally;

static tally tallies[32];
static int ntallies;

static tally *tally_new(const char *name)
{
	tally *t = &tallies[ntallies < 31 ? ntallies++ : 31];

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	return t;
}

static long long scale(long long smoke, long long full_count)
{
	return full ? full_count : smoke;
}

static int init(void)
{
	if (getenv("CBATCH_TORTURE_SEED"))
		seed = (unsigned int)strtoul(getenv("CBATCH_TORTURE_SEED"), NULL, 10);
	srand(seed);
	if (cbt_db_create(db, sizeof(db), "ptorture") < 0)
		return -1;
	conn = PQconnectdb(db);
	return PQstatus(conn) == CONNECTION_OK ? 0 : -1;
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* argv for cbatch-examples --db DB ARGS... (NULL-terminated @p args). */
static void examples_argv(const char **argv, size_t max, const char *const *args)
{
	size_t n = 3;

	argv[0] = cbt_examples_bin();
	argv[1] = "--db";
	argv[2] = db;
	for (; *args && n < max - 1; args++)
		argv[n++] = *args;
	argv[n] = NULL;
}

static int cli(const char *const *args)
{
	const char *argv[24];

	examples_argv(argv, 24, args);
	return cbt_run(argv, NULL, 0, NULL, 0);
}

/* Start cbatch-examples in the background, its output to @p log. */
static pid_t spawn(const char *const *args, const char *log)
{
	const char *argv[24];

	examples_argv(argv, 24, args);
	return cbt_spawn(argv, log);
}

static void log_path(char *out, size_t size, const char *what, int i)
{
	snprintf(out, size, "%s/ptorture-%d-%s-%d.log", cbt_tmpdir(), (int)getpid(), what, i);
}

/* A worker process for @p job, leaving when idle for @p idle seconds. */
static pid_t spawn_worker(const char *job, const char *lease, const char *idle, const char *log)
{
	const char *const args[] = { "worker",           "--job", job, "--lease", lease,
				     "--exit-when-idle", idle,    NULL };

	return spawn(args, log);
}

static void reset_repository(void)
{
	const char *const init_args[] = { "schema", "init", NULL };

	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(cli(init_args), 0);
	cbt_exec(conn, "CREATE TABLE write_audit (tbl text NOT NULL, id bigint NOT NULL)");
}

/*
 * Every committed insert or update of @p table's rows, by key, lands in
 * write_audit (statement triggers with transition tables: cheap per row).
 */
static void audit_writes(const char *table, const char *key)
{
	char sql[2048];

	snprintf(sql, sizeof(sql),
		 "CREATE OR REPLACE FUNCTION audit_%s() RETURNS trigger LANGUAGE plpgsql AS $$ "
		 "BEGIN INSERT INTO write_audit SELECT TG_TABLE_NAME, %s FROM n; RETURN NULL; "
		 "END $$; "
		 "CREATE TRIGGER %s_audit_ins AFTER INSERT ON %s REFERENCING NEW TABLE AS n "
		 "FOR EACH STATEMENT EXECUTE FUNCTION audit_%s(); "
		 "CREATE TRIGGER %s_audit_upd AFTER UPDATE ON %s REFERENCING NEW TABLE AS n "
		 "FOR EACH STATEMENT EXECUTE FUNCTION audit_%s();",
		 table, key, table, table, table, table, table, table);
	CU_ASSERT_EQUAL_FATAL(cbt_exec(conn, sql), 0);
}

/* @p n fresh accounts (ids 1..n, the same amounts every time), an empty ledger. */
static void ledger_input(long long n)
{
	char rows[24];
	const char *const args[] = { "example-setup", "ledger", "--rows", rows, "--reset", NULL };

	snprintf(rows, sizeof(rows), "%lld", n);
	CU_ASSERT_EQUAL_FATAL(cli(args), 0);
	cbt_exec(conn, "TRUNCATE write_audit");
	cbt_exec(conn, "VACUUM ANALYZE account");
}

static void outbox_input(long long n)
{
	char rows[24];
	const char *const args[] = { "example-setup", "outbox", "--rows", rows, "--reset", NULL };

	snprintf(rows, sizeof(rows), "%lld", n);
	CU_ASSERT_EQUAL_FATAL(cli(args), 0);
	cbt_exec(conn, "TRUNCATE write_audit");
	cbt_exec(conn, "VACUUM ANALYZE outbox");
}

static long long last_execution(void)
{
	return cbt_query_ll(conn, "SELECT coalesce(max(job_execution_id), 0) FROM "
				  "batch_job_execution");
}

/* The ledger's content (without the execution stamp), as one digest. */
static void ledger_digest(char *out, size_t size)
{
	cbt_query_str(
		conn,
		"SELECT count(*) || ' ' || coalesce(sum(amount), 0) || ' ' || "
		"coalesce(md5(string_agg(account_id || ':' || seller_id || ':' || amount, ',' "
		"ORDER BY account_id)), '-') FROM ledger",
		out, size);
}

/*
 * The ledger against its @p n accounts after execution @p exec: every account
 * processed and posted with its own values, every ledger row written once,
 * and the partitions' counts agreeing with the data.
 */
static void check_ledger(tally *t, long long exec, long long n)
{
	long long lost = cbt_query_ll(conn, "SELECT count(*) FROM account a WHERE NOT EXISTS "
					    "(SELECT 1 FROM ledger l WHERE l.account_id = a.id AND "
					    "l.amount = a.amount AND l.seller_id = a.seller_id) "
					    "OR NOT a.processed");
	long long foreign = cbt_query_ll(conn, "SELECT count(*) FROM ledger l WHERE NOT EXISTS "
					       "(SELECT 1 FROM account a WHERE a.id = l.account_id "
					       "AND a.amount = l.amount)");
	long long writes = cbt_query_ll(conn, "SELECT count(*) FROM write_audit WHERE tbl = "
					      "'ledger'");
	long long distinct = cbt_query_ll(conn, "SELECT count(DISTINCT id) FROM write_audit "
						"WHERE tbl = 'ledger'");

	t->lost += lost;
	t->duplicated += (writes - distinct) + foreign;
	CBT_EQ_LL(lost, 0);
	CBT_EQ_LL(foreign, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), n);
	CBT_EQ_LL(distinct, n);
	CBT_EQ_LL(writes, n); /* no row written twice, even to the same values */
	/* The partitions' committed counts are the rows, and none absorbed a conflict. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT coalesce(sum(write_count), 0) FROM batch_step_execution "
				"WHERE job_execution_id = $1 AND partition_index IS NOT NULL",
				"lld", exec),
		  n);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT coalesce(sum(duplicate_target_write_count), 0) FROM "
				"batch_step_execution WHERE job_execution_id = $1",
				"lld", exec),
		  writes - n);
	/* The manager sums its partitions; everything ended COMPLETED. */
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			      "$1 AND manager_step_execution_id IS NULL AND status = "
			      "'COMPLETED' AND write_count = $2",
			      "lld lld", exec, n),
		1);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			      "$1 AND partition_index IS NOT NULL AND status <> 'COMPLETED'",
			      "lld", exec),
		0);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'COMPLETED'",
				"lld", exec),
		  1);
}

/* Still running (not exited and waiting to be reaped)? */
static int running(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z';
}

/* Rows the partitions of execution @p exec have committed so far. */
static long long committed(long long exec)
{
	return cbt_queryp_ll(conn,
			     "SELECT coalesce(sum(write_count), 0) FROM batch_step_execution "
			     "WHERE job_execution_id = $1 AND partition_index IS NOT NULL",
			     "lld", exec);
}

/*
 * Wait until execution @p exec's partitions have committed @p target rows (or
 * @p pid ended, or 30 s passed). @return 1 when the target was reached.
 */
static int wait_committed(long long exec, long long target, pid_t pid)
{
	double until = cbt_now() + 30;

	while (cbt_now() < until && (pid <= 0 || running(pid))) {
		if (committed(exec) >= target)
			return 1;
		cbt_sleep_ms(2);
	}
	return 0;
}

/* Wait for the manager to create the partitions of a new execution after @p before. */
static long long wait_partitions(long long before, pid_t manager)
{
	for (int i = 0; i < 6000 && running(manager); i++) {
		long long exec =
			cbt_queryp_ll(conn,
				      "SELECT coalesce(max(job_execution_id), 0) FROM "
				      "batch_step_execution WHERE job_execution_id > $1 AND "
				      "partition_index IS NOT NULL",
				      "lld", before);

		if (exec > 0)
			return exec;
		cbt_sleep_ms(5);
	}
	CBT_FAILF("the manager made no partitions");
	return 0;
}

static void reap_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0) {
			int rc = cbt_wait_timeout(pids[i], 120000);

			/* A worker leaves with 0 when idle, also after losing a partition. */
			if (rc != 0)
				CBT_FAILF("worker %d ended with %d", (int)pids[i], rc);
			pids[i] = 0;
		}
}

/* ---- a. the same ledger, whoever posts it ---------------------------- */

/* Run the partitioned ledger with @p k threads, or manager + @p k worker processes. */
static void ledger_once(const char *base, long long n, int k, int procs)
{
	char name[64], threads[48], lease[8] = "5", log[512];
	const char *const run[] = { "run",   "ledger_partitioned",      "--next",
				    threads, "-partition.count:long=8", NULL };
	tally *t;
	pid_t manager, workers[8] = { 0 }, ran[8] = { 0 };
	long long before, exec;
	char digest[128];
	double t0;

	snprintf(name, sizeof(name), "ledger, %d %s", k, procs ? "worker processes" : "threads");
	t = tally_new(name);
	snprintf(threads, sizeof(threads), "-partition.threads:long=%d", procs ? 0 : k);
	ledger_input(n);
	before = last_execution();
	t0 = cbt_now();
	log_path(log, sizeof(log), "manager", 0);
	manager = spawn(run, log);
	if (procs) {
		exec = wait_partitions(before, manager);
		for (int i = 0; i < k; i++) {
			log_path(log, sizeof(log), "worker", i);
			workers[i] = ran[i] = spawn_worker("ledger_partitioned", lease, "1", log);
		}
	}
	CBT_EQ_LL(cbt_wait_timeout(manager, 1200000), 0);
	t->seconds = cbt_now() - t0;
	reap_all(workers, k);
	cbt_wait_sessions_gone(conn);
	exec = last_execution();
	t->rounds = 1;
	t->rows = n;
	check_ledger(t, exec, n);
	ledger_digest(digest, sizeof(digest));
	CBT_EQ_STR(digest, base);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			      "$1 AND partition_index IS NOT NULL",
			      "lld", exec),
		8);
	if (procs) {
		/* The worker processes ran every partition, the manager none. */
		char pids[512];
		/* the pids as an int[] literal, sent as one parameter */
		int len = snprintf(pids, sizeof(pids), "{");

		for (int i = 0; i < k; i++)
			len += snprintf(pids + len, sizeof(pids) - (size_t)len, "%s%d",
					i ? "," : "", (int)ran[i]);
		snprintf(pids + len, sizeof(pids) - (size_t)len, "}");
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT count(*) FROM batch_step_execution WHERE "
					"job_execution_id = $1 AND partition_index IS NOT NULL AND "
					"split_part(worker, '/', 2)::int <> ALL ($2::int[])",
					"lld s", exec, pids),
			  0);
	}
}

static void test_ledger_identical(void)
{
	long long n = scale(20000, 1000000);
	const char *const plain[] = { "run", "ledger", "--next", NULL };
	static const int ks[] = { 1, 2, 4 };
	char base[128];
	tally *t = tally_new("ledger, plain (reference)");
	double t0;

	reset_repository();
	ledger_input(0);
	audit_writes("ledger", "account_id");
	ledger_input(n);
	t0 = cbt_now();
	CBT_EQ_LL(cli(plain), 0);
	t->seconds = cbt_now() - t0;
	t->rounds = 1;
	t->rows = n;
	ledger_digest(base, sizeof(base));
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM write_audit"), n);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	for (int procs = 0; procs <= 1; procs++)
		for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
			/* The short run: one and two workers are the interesting cases. */
			if (!full && ks[i] == 4 && procs == 0)
				continue;
			ledger_once(base, n, ks[i], procs);
		}
}

/* ---- b. workers killed at random points ------------------------------ */

static void test_ledger_workers_killed(void)
{
	tally *t = tally_new("ledger, workers SIGKILLed");
	long long n = scale(30000, 1000000);
	int kills = (int)scale(3, 20);
	const char *const run[] = { "run",
				    "ledger_partitioned",
				    "--next",
				    "--lease",
				    "2",
				    "-partition.threads:long=0",
				    "-partition.count:long=8",
				    "-chunk.size:long=250",
				    NULL };
	pid_t manager, workers[2] = { 0 };
	long long before, exec;
	char log[512];
	int spawned = 0, rc;
	double t0 = cbt_now();

	reset_repository();
	ledger_input(0);
	audit_writes("ledger", "account_id");
	ledger_input(n);
	before = last_execution();
	log_path(log, sizeof(log), "manager", 0);
	manager = spawn(run, log);
	exec = wait_partitions(before, manager);
	for (int i = 0; i < 2; i++) {
		log_path(log, sizeof(log), "worker", spawned++);
		workers[i] = spawn_worker("ledger_partitioned", "1", "5", log);
	}
	for (int k = 0; k < kills && running(manager); k++) {
		int v = rand() % 2;
		long long cur = committed(exec), left = n - cur, span;

		/* Spread the kills over the input, always short of the end. */
		span = left * 3 / 4;
		if (span > 2 * n / kills)
			span = 2 * n / kills;
		if (!wait_committed(exec, cur + 1 + (span > 1 ? rand() % span : 0), manager))
			break;
		/* A random moment inside the chunk too, not only right after a commit. */
		cbt_sleep_ms(rand() % 20);
		kill(workers[v], SIGKILL);
		CBT_EQ_LL(cbt_wait_timeout(workers[v], 30000), 128 + SIGKILL);
		t->faults++;
		log_path(log, sizeof(log), "worker", spawned++);
		workers[v] = spawn_worker("ledger_partitioned", "1", "5", log);
	}
	rc = cbt_wait_timeout(manager, 1200000);
	CBT_EQ_LL(rc, 0);
	/* The survivors leave when idle: nothing is left to claim. */
	reap_all(workers, 2);
	cbt_wait_sessions_gone(conn);
	t->seconds = cbt_now() - t0;
	t->rounds = 1;
	t->rows = n;
	check_ledger(t, exec, n);
	CU_ASSERT(t->faults > 0);
	/* The kills were real takeovers: some partition was claimed again. */
	if (t->faults > 0)
		CBT_EQ_LL(
			cbt_queryp_ll(conn,
				      "SELECT (count(*) > 0)::int FROM batch_step_execution WHERE "
				      "job_execution_id = $1 AND claim_count > 1",
				      "lld", exec),
			1);
}

/* ---- c. a worker frozen past its lease, then thawed ------------------ */

static void test_ledger_worker_frozen(void)
{
	tally *t = tally_new("ledger, worker SIGSTOPped past lease");
	long long n = scale(20000, 200000);
	int rounds = (int)scale(1, 5);
	const char *const run[] = { "run",
				    "ledger_partitioned",
				    "--next",
				    "--lease",
				    "3",
				    "-partition.threads:long=0",
				    "-partition.count:long=4",
				    "-chunk.size:long=200",
				    NULL };
	double t0 = cbt_now();

	reset_repository();
	ledger_input(0);
	audit_writes("ledger", "account_id");
	for (int r = 0; r < rounds; r++) {
		pid_t manager, zombie, other;
		long long before, exec, part, at_freeze;
		char zlog[512], olog[512], log[512], want[256], *text;

		ledger_input(n);
		before = last_execution();
		log_path(log, sizeof(log), "manager", r);
		manager = spawn(run, log);
		exec = wait_partitions(before, manager);
		log_path(zlog, sizeof(zlog), "zombie", r);
		zombie = spawn_worker("ledger_partitioned", "1", "3", zlog);
		/* Freeze it at a random point of its first partition. */
		if (!wait_committed(exec, 200 + rand() % (n / 8), zombie)) {
			CBT_FAILF("round %d: the worker made no progress", r);
			kill(zombie, SIGKILL);
			cbt_wait(zombie);
			kill(manager, SIGKILL);
			cbt_wait(manager);
			return;
		}
		cbt_sleep_ms(rand() % 10);
		kill(zombie, SIGSTOP);
		part = cbt_queryp_ll(conn,
				     "SELECT step_execution_id FROM batch_step_execution WHERE "
				     "job_execution_id = $1 AND status = 'STARTED' AND "
				     "split_part(worker, '/', 2)::int = $2",
				     "lld d", exec, (int)zombie);
		at_freeze = cbt_queryp_ll(conn,
					  "SELECT write_count FROM batch_step_execution WHERE "
					  "step_execution_id = $1",
					  "lld", part);
		/* Past its lease (1 s), a second worker takes over and finishes. */
		cbt_sleep_ms(1600);
		log_path(olog, sizeof(olog), "successor", r);
		other = spawn_worker("ledger_partitioned", "1", "2", olog);
		CBT_EQ_LL(cbt_wait_timeout(manager, 600000), 0);
		CBT_EQ_LL(cbt_wait_timeout(other, 60000), 0);
		/* The frozen partition went to the successor, its counts went on
		 * from what the zombie had committed. */
		CBT_EQ_LL(
			cbt_queryp_ll(conn,
				      "SELECT count(*) FROM batch_step_execution WHERE "
				      "step_execution_id = $1 AND claim_count = 2 AND "
				      "split_part(worker, '/', 2)::int = $2 AND write_count >= $3",
				      "lld d lld", part, (int)other, at_freeze),
			1);
		/* Thawed: its late chunk is refused and rolls back; it says so and leaves. */
		kill(zombie, SIGCONT);
		CBT_EQ_LL(cbt_wait_timeout(zombie, 60000), 0);
		cbt_wait_sessions_gone(conn);
		t->faults++;
		t->rounds++;
		text = cbt_slurp(zlog, NULL);
		snprintf(want, sizeof(want), "gave up ledger_partitioned execution %lld ", exec);
		CBT_CONTAINS(text ? text : "", want);
		/* ... and why, in cbatch's words: another worker took it over. */
		CBT_CONTAINS(text ? text : "", ": taken over by ");
		CBT_CONTAINS(text ? text : "", "completed 0, failed or lost 1");
		free(text);
		check_ledger(t, exec, n);
		t->rows += n;
		cbt_exec(conn, "TRUNCATE write_audit");
	}
	t->seconds = cbt_now() - t0;
}

/* ---- d. a work queue drained by four processes, one killed ----------- */

static void test_outbox_worker_killed(void)
{
	tally *t = tally_new("outbox, 4 workers, one SIGKILLed");
	long long n = scale(20000, 200000), exec, before, writes, distinct, wrong;
	const char *const run[] = { "run",
				    "outbox",
				    "--lease",
				    "2",
				    "-partition.threads:long=0",
				    "-partition.count:long=4",
				    NULL };
	pid_t manager, workers[4] = { 0 };
	char log[512];
	int victim = rand() % 4;
	double t0 = cbt_now();

	reset_repository();
	outbox_input(0);
	audit_writes("outbox_delivery", "message_id");
	outbox_input(n);
	before = last_execution();
	log_path(log, sizeof(log), "manager", 0);
	manager = spawn(run, log);
	exec = wait_partitions(before, manager);
	for (int i = 0; i < 4; i++) {
		log_path(log, sizeof(log), "worker", i);
		workers[i] = spawn_worker("outbox", "1", "3", log);
	}
	/* Mid-run: somewhere between a tenth and two thirds of the queue. */
	if (wait_committed(exec, n / 10 + rand() % (n * 2 / 3 - n / 10), manager)) {
		cbt_sleep_ms(rand() % 20);
		kill(workers[victim], SIGKILL);
		CBT_EQ_LL(cbt_wait_timeout(workers[victim], 30000), 128 + SIGKILL);
		workers[victim] = 0;
		t->faults++;
	} else {
		CBT_FAILF("the queue drained before the kill");
	}
	CBT_EQ_LL(cbt_wait_timeout(manager, 600000), 0);
	reap_all(workers, 4);
	cbt_wait_sessions_gone(conn);
	t->seconds = cbt_now() - t0;
	t->rounds = 1;
	t->rows = n;
	writes = cbt_query_ll(conn, "SELECT count(*) FROM write_audit");
	distinct = cbt_query_ll(conn, "SELECT count(DISTINCT id) FROM write_audit");
	wrong = cbt_query_ll(conn, "SELECT count(*) FROM outbox o WHERE o.status <> 'SENT' OR "
				   "NOT EXISTS (SELECT 1 FROM outbox_delivery d WHERE "
				   "d.message_id = o.id AND d.topic = o.topic AND "
				   "d.payload = o.payload)");
	t->lost += wrong;
	t->duplicated += writes - distinct;
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM outbox_delivery"), n);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM outbox WHERE status = 'READY'"), 0);
	CBT_EQ_LL(wrong, 0);
	CBT_EQ_LL(distinct, n);
	CBT_EQ_LL(writes, n);
	CBT_EQ_LL(committed(exec), n);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT coalesce(sum(duplicate_target_write_count), 0) FROM "
				"batch_step_execution WHERE job_execution_id = $1",
				"lld", exec),
		  writes - n);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status = 'COMPLETED'",
				"lld", exec),
		  1);
	/* The victim's partition was resumed by a survivor after its lease. */
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_step_execution WHERE job_execution_id = "
			      "$1 AND partition_index IS NOT NULL AND status = 'COMPLETED'",
			      "lld", exec),
		4);
}

static const CU_TestInfo tests[] = {
	{ "a. ledger identical with 1, 2, 4 threads and processes", test_ledger_identical },
	{ "b. ledger, worker processes killed at random", test_ledger_workers_killed },
	{ "c. ledger, worker frozen past its lease is fenced", test_ledger_worker_frozen },
	{ "d. outbox, 4 worker processes, one killed", test_outbox_worker_killed },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	const char *mode = getenv("CBATCH_TORTURE");
	int rc;

	if (argc > 1 && strcmp(argv[1], "smoke") == 0) {
		full = 0;
	} else if (mode && strcmp(mode, "full") == 0) {
		full = 1;
	} else {
		printf("SKIPPED: the full partition proofs run with CBATCH_TORTURE=full "
		       "(scripts/torture.sh); `partition_torture smoke` is the short run\n");
		return EXIT_SKIPPED;
	}
	rc = cbt_main("partition torture", init, clean, tests);
	printf("\n%-40s %7s %7s %9s %10s %11s %9s %9s\n", "scenario", "rounds", "faults", "rows",
	       "rows lost", "rows dupl.", "seconds", "rows/s");
	for (int i = 0; i < ntallies; i++)
		printf("%-40s %7d %7d %9lld %10lld %11lld %9.1f %9.0f\n", tallies[i].name,
		       tallies[i].rounds, tallies[i].faults, tallies[i].rows, tallies[i].lost,
		       tallies[i].duplicated, tallies[i].seconds,
		       tallies[i].seconds > 0 ? (double)tallies[i].rows / tallies[i].seconds : 0);
	printf("mode: %s, seed %u\n", full ? "full" : "smoke", seed);
	return rc;
}
