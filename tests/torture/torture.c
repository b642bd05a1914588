/*
 * The exactly-once torture suite: real processes killed, frozen and raced,
 * database sessions cut, and after every scenario the data checked for rows
 * lost and rows duplicated — both must be 0.
 *
 *   CBATCH_TORTURE=smoke (default)  a few rounds of each, for CI
 *   CBATCH_TORTURE=full             the full counts (scripts/torture.sh)
 *
 * A summary table is printed at the end.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;
static int full;
static unsigned int seed = 20261129;

typedef struct tally {
	const char *name;
	int rounds, faults;
	long long lost, duplicated;
	double seconds;
} tally;

static tally tallies[16];
static int ntallies;

static tally *tally_new(const char *name)
{
	tally *t = &tallies[ntallies++];

	memset(t, 0, sizeof(*t));
	t->name = name;
	return t;
}

static int rounds(int smoke, int full_count)
{
	return full ? full_count : smoke;
}

static int init(void)
{
	const char *mode = getenv("CBATCH_TORTURE");

	full = mode && strcmp(mode, "full") == 0;
	if (getenv("CBATCH_TORTURE_SEED"))
		seed = (unsigned int)strtoul(getenv("CBATCH_TORTURE_SEED"), NULL, 10);
	srand(seed);
	if (cbt_db_create(db, sizeof(db), "torture") < 0)
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

static int cli(const char *const *args)
{
	const char *argv[16] = { cbt_examples_bin(), "--db", db };
	int n = 3;

	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return cbt_run(argv, NULL, 0, NULL, 0);
}

static pid_t spawn(const char *const *args)
{
	const char *argv[16] = { cbt_examples_bin(), "--db", db };
	char log[512];
	int n = 3;

	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s/torture-%d.log", cbt_tmpdir(), (int)getpid());
	return cbt_spawn(argv, log);
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

/*
 * Let @p pid make some progress — @p progress_sql's count must grow by a
 * random part of what is left of @p total — then SIGKILL it. Progress is
 * watched in the data, so the kill lands mid-run however fast the machine.
 */
static void kill_midway(pid_t pid, const char *progress_sql, long long total, int kills, int sig)
{
	long long cur = cbt_query_ll(conn, progress_sql), left = total - cur, span, target;

	/* Spread the kills over the whole input: about two per share of it, but
	 * always short of the end, so that the kill lands in the middle. */
	span = left * 3 / 4;
	if (kills > 0 && span > 2 * total / kills)
		span = 2 * total / kills;
	target = cur + 1 + (span > 1 ? rand() % span : 0);
	for (int i = 0; i < 20000 && running(pid); i++) {
		if (cbt_query_ll(conn, progress_sql) >= target)
			break;
		cbt_sleep_ms(1);
	}
	kill(pid, sig);
}

static void reset_repository(void)
{
	const char *const init_args[] = { "schema", "init", NULL };

	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(cli(init_args), 0);
}

static void ledger_rows(long long n)
{
	char rows[24];
	const char *const args[] = { "example-setup", "ledger", "--rows", rows, NULL };

	snprintf(rows, sizeof(rows), "%lld", n);
	CBT_EQ_LL(cli(args), 0);
}

/* Lost and duplicated rows of the ledger against its source. */
static void check_ledger(tally *t)
{
	long long lost = cbt_query_ll(conn, "SELECT count(*) FROM account a WHERE NOT EXISTS "
					    "(SELECT 1 FROM ledger l WHERE l.account_id = a.id AND "
					    "l.amount = a.amount) OR NOT a.processed");
	/* The ledger's key forbids a second row per account: a doubled effect
	 * would show as a row without its account, or a wrong amount. */
	long long dup = cbt_query_ll(conn, "SELECT count(*) FROM ledger l WHERE NOT EXISTS "
					   "(SELECT 1 FROM account a WHERE a.id = l.account_id "
					   "AND a.amount = l.amount)");

	t->lost += lost;
	t->duplicated += dup;
	CBT_EQ_LL(lost, 0);
	CBT_EQ_LL(dup, 0);
}

/*
 * Run @p run until it completes, SIGKILLing the first @p kills attempts at
 * random progress (as @p progress_sql counts it, out of @p total). A run
 * refused because the dead owner's lease still holds (exit 4) is retried.
 */
static void run_killing(tally *t, const char *const *run, const char *progress_sql, long long total,
			int kills)
{
	for (;;) {
		pid_t pid = spawn(run);
		int rc;

		if (t->faults < kills)
			kill_midway(pid, progress_sql, total, kills, SIGKILL);
		rc = cbt_wait_timeout(pid, 300000);
		cbt_wait_sessions_gone(conn);
		t->rounds++;
		/* 3: the instance is complete — a kill that landed just after the
		 * last commit (the killed run had finished the work). */
		if (rc == 0 || rc == 3)
			return;
		if (rc == 4)
			cbt_sleep_ms(300); /* the dead owner's lease (1 s) still holds */
		else if (rc == 128 + SIGKILL)
			t->faults++;
		else
			CBT_FAILF("%s ended with %d", run[1], rc);
		if (t->rounds > kills * 20 + 50) {
			CBT_FAILF("%s never completed", run[1]);
			return;
		}
	}
}

/* Run the ledger job until it completes, killing it at random moments. */
static void test_kill_loop(void)
{
	tally *t = tally_new("kill loop (ledger, SIGKILL)");
	int kills = rounds(4, 200);
	const char *const run[] = { "run", "ledger", "--lease", "1", "-chunk.size:long=200", NULL };
	double t0 = cbt_now();

	long long total = full ? 200000 : 50000;

	reset_repository();
	ledger_rows(total);
	run_killing(t, run, "SELECT count(*) FROM ledger", total, kills);
	check_ledger(t);
	/* The step counts agree with the data. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT sum(write_count) FROM batch_step_execution"),
		  cbt_query_ll(conn, "SELECT count(*) FROM ledger"));
	t->seconds = cbt_now() - t0;
}

/* Freeze the owner past its lease; a second process takes over; thaw it. */
static void test_zombie_loop(void)
{
	tally *t = tally_new("zombie loop (SIGSTOP past lease)");
	int n = rounds(2, 50);
	char round[32];
	const char *const run[] = { "run", "ledger", round, "--lease", "1", "-chunk.size:long=100",
				    NULL };
	double t0 = cbt_now();

	reset_repository();
	for (int r = 0; r < n; r++) {
		pid_t zombie, other;
		long long exec_id, committed_before, stamped, base;
		int rc;
		char sql[256];

		snprintf(round, sizeof(round), "round:long=%d", r);
		ledger_rows(20000);
		base = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
		zombie = spawn(run);
		kill_midway(zombie, "SELECT count(*) FROM ledger", base + 20000, 2, SIGSTOP);
		cbt_sleep_ms(1600);
		other = spawn(run);
		rc = cbt_wait_timeout(other, 300000);
		if (rc == 3) {
			/* The stop landed after the zombie's last commit: no zombie
			 * this round. It must still end complete on its own. */
			kill(zombie, SIGCONT);
			CBT_EQ_LL(cbt_wait_timeout(zombie, 120000), 0);
			cbt_wait_sessions_gone(conn);
			t->rounds++;
			continue;
		}
		CBT_EQ_LL(rc, 0);
		t->faults++;
		exec_id =
			cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution "
					   "WHERE restart_of IS NOT NULL");
		snprintf(sql, sizeof(sql),
			 "SELECT coalesce(sum(write_count), 0) FROM "
			 "batch_step_execution WHERE job_execution_id = (SELECT restart_of FROM "
			 "batch_job_execution WHERE job_execution_id = %lld)",
			 exec_id);
		committed_before = cbt_query_ll(conn, sql);
		kill(zombie, SIGCONT);
		/* The zombie must end, fenced or stopped by its heartbeat: never complete. */
		CBT_EQ_LL(cbt_wait_timeout(zombie, 120000), 1);
		cbt_wait_sessions_gone(conn);
		snprintf(
			sql, sizeof(sql),
			"SELECT count(*) FROM ledger WHERE job_execution_id = "
			"(SELECT restart_of FROM batch_job_execution WHERE job_execution_id = %lld)",
			exec_id);
		stamped = cbt_query_ll(conn, sql);
		/* What carries the zombie's stamp is at most what it had committed. */
		if (stamped > committed_before) {
			t->duplicated += stamped - committed_before;
			CBT_FAILF("zombie committed %lld rows after losing its lease",
				  stamped - committed_before);
		}
		t->rounds++;
	}
	check_ledger(t);
	t->seconds = cbt_now() - t0;
}

/* Eight launchers of one instance at once: exactly one runs. */
static void test_contention(void)
{
	tally *t = tally_new("contention (8 launchers)");
	int n = rounds(5, 100);
	double t0 = cbt_now();

	reset_repository();
	for (int r = 0; r < n; r++) {
		char day[48];
		const char *const run[] = { "run", "ledger", day, "-chunk.size:long=100", NULL };
		pid_t pids[8];
		int ran = 0;

		snprintf(day, sizeof(day), "round:long=%d", r);
		ledger_rows(2000);
		for (int i = 0; i < 8; i++)
			pids[i] = spawn(run);
		for (int i = 0; i < 8; i++) {
			int rc = cbt_wait_timeout(pids[i], 120000);

			if (rc == 0)
				ran++;
			else if (rc != 4 && rc != 3)
				CBT_FAILF("launcher ended with %d", rc);
		}
		t->faults += 7;
		if (ran != 1) {
			CBT_FAILF("round %d: %d launchers ran", r, ran);
			t->duplicated += ran > 1 ? ran - 1 : 0;
		}
		t->rounds++;
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), n);
	check_ledger(t);
	t->seconds = cbt_now() - t0;
}

/* Cut the job's own database session mid-run: the run rides through (or,
 * cut again while reconnecting, fails and is restarted) until complete. */
static void test_backend_terminated(void)
{
	tally *t = tally_new("pg_terminate_backend of the job");
	int n = rounds(2, 20);
	const char *const run[] = { "run", "ledger", "--lease", "1", "-chunk.size:long=100", NULL };
	double t0 = cbt_now();
	pid_t pid;
	int rc = -1;

	reset_repository();
	ledger_rows(full ? 200000 : 60000);
	pid = spawn(run);
	/* Each time it has written again, cut its session (not the heartbeat's). */
	for (int r = 0; r < n; r++) {
		long long cur = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
		int wrote = 0;

		for (int i = 0; i < 20000 && !wrote; i++) {
			wrote = cbt_query_ll(conn, "SELECT count(*) FROM ledger") > cur;
			if (!wrote)
				cbt_sleep_ms(1);
		}
		if (!wrote || cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE "
						 "NOT batch_status_is_live(status)") > 0)
			break;
		if (cbt_query_ll(conn,
				 "SELECT count(pg_terminate_backend(pid)) FROM "
				 "pg_stat_activity WHERE datname = current_database() AND "
				 "application_name = 'cbatch' AND pid <> pg_backend_pid()") > 0)
			t->faults++;
		t->rounds++;
	}
	rc = cbt_wait_timeout(pid, 300000);
	cbt_wait_sessions_gone(conn);
	/* Ridden through: the same execution completes. A cut that lands while
	 * it reconnects may still fail it (1): then it is restarted. */
	if (rc != 0 && rc != 1)
		CBT_FAILF("a job whose session was cut ended with %d", rc);
	for (int tries = 0; rc != 0 && tries < 30; tries++) {
		rc = cli(run);
		if (rc != 0)
			cbt_sleep_ms(500);
	}
	CBT_EQ_LL(rc, 0);
	check_ledger(t);
	t->seconds = cbt_now() - t0;
}

/* Import a CSV file, killing the import at random moments. */
static void test_csv_import_killed(void)
{
	tally *t = tally_new("csv import (SIGKILL)");
	int kills = rounds(3, 50);
	long long lines = full ? 200000 : 40000;
	char path[512], file[600];
	const char *const run[] = { "run", "csv_import",           file, "--lease",
				    "1",   "-chunk.size:long=200", NULL };
	FILE *f;
	double t0 = cbt_now();

	reset_repository();
	ledger_rows(0);
	snprintf(path, sizeof(path), "%s/torture-import.csv", cbt_tmpdir());
	snprintf(file, sizeof(file), "file=%s", path);
	f = fopen(path, "w");
	if (!f) {
		CBT_FAILF("cannot write %s", path);
		return;
	}
	fprintf(f, "id,seller_id,amount\r\n");
	for (long long i = 1; i <= lines; i++)
		/* CRLF lines and quoted fields; the check recomputes every value. */
		fprintf(f, "%lld,%lld,\"%lld.%02lld\"\r\n", i, i % 77, i % 5000, i % 100);
	fclose(f);
	run_killing(t, run, "SELECT count(*) FROM account", lines, kills);
	{
		char sql[256];
		long long have = cbt_query_ll(conn, "SELECT count(*) FROM account");
		long long right;

		snprintf(
			sql, sizeof(sql),
			"SELECT count(*) FROM account WHERE seller_id = id %% 77 "
			"AND amount = (id %% 5000) + (id %% 100) / 100.0 AND id BETWEEN 1 AND %lld",
			lines);
		right = cbt_query_ll(conn, sql);
		t->lost += lines - right;
		t->duplicated += have - right;
		CBT_EQ_LL(right, lines);
		CBT_EQ_LL(have, lines);
	}
	t->seconds = cbt_now() - t0;
}

/* Load a client-side file into @p table with COPY FROM STDIN (CSV, header). */
static void copy_file_in(const char *table, const char *path)
{
	char sql[256], buf[65536];
	FILE *f = fopen(path, "rb");
	PGresult *res;
	size_t n;

	if (!f) {
		CBT_FAILF("cannot read %s", path);
		return;
	}
	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN (FORMAT csv, HEADER true)", table);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN)
		CBT_FAILF("COPY: %s", PQerrorMessage(conn));
	PQclear(res);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		PQputCopyData(conn, buf, (int)n);
	fclose(f);
	PQputCopyEnd(conn, NULL);
	while ((res = PQgetResult(conn)) != NULL) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			CBT_FAILF("COPY of %s: %s", path, PQresultErrorMessage(res));
		PQclear(res);
	}
}

/* Export the ledger to CSV, killing the export between chunks. */
static void test_csv_export_killed(void)
{
	tally *t = tally_new("csv export (SIGKILL)");
	int kills = rounds(3, 50);
	long long rows = full ? 200000 : 40000;
	char path[512], file[600];
	const char *const post[] = { "run", "ledger", NULL };
	const char *const run[] = { "run", "ledger_export",        file, "--lease",
				    "1",   "-chunk.size:long=200", NULL };
	double t0 = cbt_now();

	reset_repository();
	ledger_rows(rows);
	CBT_EQ_LL(cli(post), 0);
	snprintf(path, sizeof(path), "%s/torture-export.csv", cbt_tmpdir());
	snprintf(file, sizeof(file), "file=%s", path);
	unlink(path);
	run_killing(t, run,
		    "SELECT coalesce(sum(write_count), 0) FROM batch_step_execution "
		    "WHERE step_name = 'export'",
		    rows, kills);
	{
		/* Load the file back and compare it with the ledger, line by line. */
		long long lines, right;

		cbt_exec(conn, "CREATE TEMP TABLE exported (account_id bigint, seller_id int, "
			       "amount numeric(12,2))");
		copy_file_in("exported", path);
		lines = cbt_query_ll(conn, "SELECT count(*) FROM exported");
		right = cbt_query_ll(conn,
				     "SELECT count(DISTINCT e.account_id) FROM exported e JOIN "
				     "ledger l USING (account_id) WHERE e.amount = l.amount AND "
				     "e.seller_id = l.seller_id");
		t->lost += rows - right;
		t->duplicated += lines - right;
		CBT_EQ_LL(right, rows);
		CBT_EQ_LL(lines, rows);
		cbt_exec(conn, "DROP TABLE exported");
	}
	t->seconds = cbt_now() - t0;
}

/*
 * Freeze the CSV export past its lease at a random moment; a successor takes
 * over and completes the file; then thaw the zombie. The file must stay the
 * successor's complete export (plain and atomic mode in turn): the zombie
 * may neither write into it, cut it, nor publish.
 */
static void test_file_export_zombie(void)
{
	tally *t = tally_new("file export zombie (SIGSTOP)");
	int n = rounds(2, 30);
	long long rows = full ? 100000 : 20000;
	char path[512], file[600], atomic[32];
	const char *const post[] = { "run", "ledger", NULL };
	const char *const run[] = { "run", "ledger_export",        file, atomic, "--lease",
				    "1",   "-chunk.size:long=200", NULL };
	double t0 = cbt_now();

	reset_repository();
	ledger_rows(rows);
	CBT_EQ_LL(cli(post), 0);
	cbt_exec(conn, "CREATE TABLE exported (account_id bigint, seller_id int, "
		       "amount numeric(12,2))");
	for (int r = 0; r < n; r++) {
		pid_t zombie, other;
		long long lines, right, offset, size = -1;
		int rc = 4;
		struct stat st;

		snprintf(path, sizeof(path), "%s/torture-zexport-%d.csv", cbt_tmpdir(), r);
		snprintf(file, sizeof(file), "file=%s", path);
		snprintf(atomic, sizeof(atomic), "-atomic:long=%d", r % 2);
		unlink(path);
		zombie = spawn(run);
		kill_midway(zombie,
			    "SELECT coalesce(sum(write_count), 0) FROM batch_step_execution s JOIN "
			    "batch_job_execution e USING (job_execution_id) WHERE s.step_name = "
			    "'export' AND e.status IN ('STARTING', 'STARTED')",
			    rows, 2, SIGSTOP);
		cbt_sleep_ms(1600);
		for (int tries = 0; rc == 4 && tries < 40; tries++) {
			if (tries)
				cbt_sleep_ms(300); /* the frozen owner's lease still holds */
			other = spawn(run);
			rc = cbt_wait_timeout(other, 300000);
		}
		kill(zombie, SIGCONT);
		if (rc == 3) {
			/* The stop landed after the zombie completed: no zombie. */
			CBT_EQ_LL(cbt_wait_timeout(zombie, 120000), 0);
		} else {
			CBT_EQ_LL(rc, 0);
			t->faults++;
			/* Fenced, or stopped by its heartbeat: never complete. */
			CBT_EQ_LL(cbt_wait_timeout(zombie, 120000), 1);
		}
		cbt_wait_sessions_gone(conn);
		t->rounds++;
		/* The file against the ledger, line by line, and its length
		 * against what the completed export committed. */
		cbt_exec(conn, "TRUNCATE exported");
		copy_file_in("exported", path);
		lines = cbt_query_ll(conn, "SELECT count(*) FROM exported");
		right = cbt_query_ll(conn,
				     "SELECT count(DISTINCT e.account_id) FROM exported e JOIN "
				     "ledger l USING (account_id) WHERE e.amount = l.amount AND "
				     "e.seller_id = l.seller_id");
		offset = cbt_query_ll(conn,
				      "SELECT (c.serialized_context->'writer.0'->>'offset')"
				      "::bigint FROM batch_step_execution_context c JOIN "
				      "batch_step_execution s USING (step_execution_id) WHERE "
				      "s.step_name = 'export' AND s.status = 'COMPLETED' ORDER BY "
				      "s.step_execution_id DESC LIMIT 1");
		if (stat(path, &st) == 0)
			size = (long long)st.st_size;
		t->lost += rows - right;
		t->duplicated += lines - right;
		CBT_EQ_LL(right, rows);
		CBT_EQ_LL(lines, rows);
		CBT_EQ_LL(size, offset);
		unlink(path);
	}
	cbt_exec(conn, "DROP TABLE exported");
	t->seconds = cbt_now() - t0;
}

/* One attempt's exit: done (0, or 3: complete already), killed, or to retry. */
static int sales_round(tally *t, int rc, int *done, const char *which)
{
	if (rc == 0 || rc == 3) {
		*done = 1;
		return 0;
	}
	if (rc == 128 + SIGKILL) {
		t->faults++;
		return 0;
	}
	if (rc == 4) { /* the dead owner's lease (1 s) still holds */
		cbt_sleep_ms(300);
		return 0;
	}
	if (rc == 1) /* failed restartably: too many strict-transition re-reads in a row */
		return 0;
	CBT_FAILF("sales_totals %s ended with %d", which, rc);
	return -1;
}

/*
 * Two instances of sales_totals (each its own lock, 4 partition threads
 * each) run over the same invoices at the same time, one of them SIGKILLed
 * at a random moment, then both run again until they complete; each round
 * brings new invoices and two new instances (asOf=aN, asOf=bN). The
 * accumulating upsert and the strict transition share each chunk's
 * transaction: every invoice must be in its customer's total exactly once.
 */
static void test_sales_totals_overlap_killed(void)
{
	tally *t = tally_new("sales_totals: 2 instances, SIGKILL");
	int kills = rounds(4, 100), attempts = 0;
	long long total = full ? 200000 : 20000, lost, dup;
	char rows[24], as_a[32], as_b[32];
	const char *const setup[] = { "example-setup", "sales_totals", "--rows", rows, NULL };
	const char *const run_a[] = { "run",
				      "sales_totals",
				      as_a,
				      "--lease",
				      "1",
				      "-partition.threads:long=4",
				      "-chunk.size:long=50",
				      NULL };
	const char *const run_b[] = { "run",
				      "sales_totals",
				      as_b,
				      "--lease",
				      "1",
				      "-partition.threads:long=4",
				      "-chunk.size:long=50",
				      NULL };
	double t0 = cbt_now();

	reset_repository();
	snprintf(rows, sizeof(rows), "%lld", total / kills);
	for (int r = 0; r < kills; r++) {
		int done_a = 0, done_b = 0, killed = 0;

		CBT_EQ_LL(cli(setup), 0);
		snprintf(as_a, sizeof(as_a), "asOf=a%d", r);
		snprintf(as_b, sizeof(as_b), "asOf=b%d", r);
		while (!(done_a && done_b)) {
			pid_t a = done_a ? -1 : spawn(run_a), b = done_b ? -1 : spawn(run_b);

			if (!killed) {
				kill_midway(a > 0 && (b <= 0 || rand() % 2) ? a : b,
					    "SELECT count(*) FROM invoice WHERE processed",
					    total / kills * (r + 1), 1, SIGKILL);
				killed = 1;
			}
			if ((a > 0 &&
			     sales_round(t, cbt_wait_timeout(a, 300000), &done_a, "a") < 0) ||
			    (b > 0 &&
			     sales_round(t, cbt_wait_timeout(b, 300000), &done_b, "b") < 0))
				return;
			cbt_wait_sessions_gone(conn);
			t->rounds++;
			if (++attempts > kills * 20 + 50) {
				CBT_FAILF("sales_totals never completed");
				return;
			}
		}
	}
	/* Against one statement over the invoices. */
	dup = cbt_query_ll(conn, "SELECT greatest(coalesce(sum(invoice_count), 0) - "
				 "(SELECT count(*) FROM invoice), 0) FROM customer_total");
	lost = cbt_query_ll(conn, "SELECT greatest((SELECT count(*) FROM invoice) - "
				  "coalesce(sum(invoice_count), 0), 0) + "
				  "(SELECT count(*) FROM invoice WHERE NOT processed) "
				  "FROM customer_total");
	t->lost += lost;
	t->duplicated += dup;
	CBT_EQ_LL(lost, 0);
	CBT_EQ_LL(dup, 0);
	CBT_EQ_LL(
		cbt_query_ll(conn,
			     "SELECT count(*) FROM (SELECT customer_id, sum(amount) s, count(*) n "
			     " FROM invoice GROUP BY customer_id) e FULL JOIN customer_total c "
			     " USING (customer_id) WHERE c.total IS DISTINCT FROM e.s "
			     " OR c.invoice_count IS DISTINCT FROM e.n"),
		0);
	t->seconds = cbt_now() - t0;
}

static const CU_TestInfo tests[] = {
	{ "kill loop", test_kill_loop },
	{ "zombie loop", test_zombie_loop },
	{ "contention", test_contention },
	{ "backend terminated", test_backend_terminated },
	{ "csv import killed", test_csv_import_killed },
	{ "csv export killed", test_csv_export_killed },
	{ "file export zombie", test_file_export_zombie },
	{ "sales_totals overlap killed", test_sales_totals_overlap_killed },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	int rc = cbt_main("torture", init, clean, tests);

	printf("\n%-36s %7s %7s %10s %11s %9s\n", "scenario", "rounds", "faults", "rows lost",
	       "rows dupl.", "seconds");
	for (int i = 0; i < ntallies; i++)
		printf("%-36s %7d %7d %10lld %11lld %9.1f\n", tallies[i].name, tallies[i].rounds,
		       tallies[i].faults, tallies[i].lost, tallies[i].duplicated,
		       tallies[i].seconds);
	printf("mode: %s, seed %u\n", full ? "full" : "smoke", seed);
	return rc;
}
