/*
 * Duplicate-run protection (issue 4) with real processes against a real
 * PostgreSQL: racing launches, SIGKILL and lease takeover, a SIGSTOPped
 * zombie that wakes after a takeover, the heartbeat (a chunk longer than the
 * lease; a cut heartbeat connection), lock-at-least-for and force unlock,
 * clock skew (faketime), the job's backend terminated mid-run, and the lock
 * scope (job scope keeps every other instance out; instance scope does not).
 *
 * The ledger example (cbatch-examples) locks as "ledger" whatever its
 * parameters, so every instance below competes for that one lock. Jobs that
 * need something the CLI cannot do are defined here through the C API; this
 * program re-executes itself as `--probe` to launch one of them from another
 * process.
 *
 * Nothing here sleeps for a fixed time in place of the lease logic: waits
 * poll the database (its clock is the lock's clock) with generous timeouts.
 * Where a job must still be running at some point, the test either holds it
 * there with a lock of its own, or gives it far more work than the wait
 * needs and fails loudly ("proves nothing") if it finished anyway.
 *
 * `integration_test_lock WORD` runs only the tests whose name contains WORD.
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
#include "numbers.h"
#include "repo.h" /* cb__owner_id */

static char db[CBT_CONNINFO_MAX];
static char self_exe[PATH_MAX];

static int init(void)
{
	return cbt_db_create(db, sizeof(db), "lock");
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

/* ---- helpers --------------------------------------------------------------- */

static char out[65536], errout[65536];

#define MAXARGS 40

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
static int ex(const char *first, ...)
{
	const char *argv[MAXARGS];
	va_list ap;

	va_start(ap, first);
	build_argv(argv, NULL, db, first, ap);
	va_end(ap);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* As ex, connected with @p conninfo instead of db. */
static int ex_with(const char *conninfo, const char *first, ...)
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
static void make_role(PGconn *conn, const char *role, char *conninfo, size_t size)
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

static void drop_role(PGconn *conn, const char *role)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	cbt_exec(conn, sql);
}

/* As ex, in the background; stdout and stderr go to tmpdir/@p log. */
static pid_t ex_spawn_with(const char *const *prefix, const char *conninfo, const char *log,
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

#define ex_spawn(log, ...) ex_spawn_with(NULL, db, (log), __VA_ARGS__)

/* The contents of tmpdir/@p log (truncated to @p size). */
static void read_log(const char *log, char *buf, size_t size)
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

static double q_double(PGconn *conn, const char *sql)
{
	char buf[64];

	if (cbt_query_str(conn, sql, buf, sizeof(buf)) < 0)
		return -1;
	return atof(buf);
}

/* Fresh repository and an empty ledger example. */
static void reset(PGconn *conn)
{
	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public;");
	CBT_EQ_LL(ex("schema", "init", NULL), 0);
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", "0", NULL), 0);
}

/* Add @p rows fresh accounts; @return the id of the first one. */
static long long add_rows(PGconn *conn, long long rows)
{
	char n[24];
	long long first = cbt_queryp_ll(conn, "SELECT coalesce(max(id), 0) + 1 FROM account", "");

	snprintf(n, sizeof(n), "%lld", rows);
	CBT_EQ_LL(ex("example-setup", "ledger", "--rows", n, NULL), 0);
	return first;
}

/* Every account is in the ledger exactly once with its amount, and processed. */
static void assert_exactly_once(PGconn *conn)
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

/* The client sessions of cbatch processes (job and heartbeat) in our database. */
#define CLIENT_SESSIONS                                                                            \
	"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "                \
	"AND application_name IN ('cbatch', 'cbatch-heartbeat')"

/* After a SIGKILL: a pipeline sent before the kill may still commit
 * server-side, so look only once the dead client's sessions are gone. */
static void wait_no_client_sessions(PGconn *conn)
{
	if (!cbt_wait_until(conn, 30000, "SELECT ((" CLIENT_SESSIONS ") = 0)::int"))
		CBT_FAILF("the killed client's sessions did not end within 30 s");
}

/* Wait (database time) until nobody holds the lock @p name. */
static void wait_lock_free(PGconn *conn, const char *name, int timeout_ms)
{
	if (!cbt_wait_untilp(conn, timeout_ms,
			     "SELECT (count(*) = 0)::int FROM batch_lock WHERE lock_name = "
			     "$1 AND locked_until >= clock_timestamp()",
			     "s", name))
		CBT_FAILF("lock '%s' still held after %d ms", name, timeout_ms);
}

static long long audit_count(PGconn *conn, long long after_id, const char *outcome)
{
	return cbt_queryp_ll(conn,
			     "SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
			     "outcome = $2",
			     "lld s", after_id, outcome);
}

static long long audit_mark(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT coalesce(max(audit_id), 0) FROM batch_lock_audit");
}

/* The job execution of the process @p pid (its owner id is host:pid:random). */
static long long execution_of(PGconn *conn, pid_t pid)
{
	return cbt_queryp_ll(conn,
			     "SELECT coalesce(max(job_execution_id), 0) FROM batch_job_execution "
			     "WHERE owner_id LIKE '%:' || $1::text || ':%'",
			     "ld", (long)pid);
}

static int still_running(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == 0;
}

/* ---- 1. contention ------------------------------------------------------------ */

/*
 * @p racers processes launch one instance at once (released together through
 * a gate file). The test holds a row lock on the round's first account, so
 * the winner holds the execution lock until every loser has finished:
 * whoever reaches the lock late still finds it held, however loaded the host.
 */
static void contention_round(PGconn *conn, int round, int racers)
{
	char gate[PATH_MAX], ready[PATH_MAX + 8], param[64], script[512];
	pid_t pids[16];
	int rcs[16], done = 0, winner = -1;
	long long mark, first;
	double deadline;

	first = add_rows(conn, 2000);
	mark = audit_mark(conn);
	snprintf(gate, sizeof(gate), "%s/lock-gate-%ld-%d", cbt_tmpdir(), (long)getpid(), round);
	snprintf(ready, sizeof(ready), "%s.d", gate);
	unlink(gate);
	mkdir(ready, 0700);
	snprintf(script, sizeof(script),
		 ": > \"$0.d/$$\"; while [ ! -e \"$0\" ]; do sleep 0.005; done; exec \"$@\"");
	snprintf(param, sizeof(param), "round:long=%d", round);

	cbt_exec(conn, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 "
				"FOR UPDATE) x",
				"lld", first),
		  1);
	for (int i = 0; i < racers; i++) {
		const char *prefix[] = { "sh", "-c", script, gate, NULL };
		char log[64];

		snprintf(log, sizeof(log), "lock-race-%d-%d.log", round, i);
		pids[i] = ex_spawn_with(prefix, db, log, "run", "ledger", param,
					"-chunk.size:long=100", NULL);
		rcs[i] = -2;
	}
	/* Open the gate once every racer waits at it. */
	deadline = cbt_now() + 60;
	for (;;) {
		char path[PATH_MAX + 64];
		int n = 0;

		for (int i = 0; i < racers; i++) {
			snprintf(path, sizeof(path), "%s/%ld", ready, (long)pids[i]);
			n += access(path, F_OK) == 0;
		}
		if (n == racers || cbt_now() > deadline)
			break;
		cbt_sleep_ms(5);
	}
	{
		FILE *g = fopen(gate, "w");

		if (g)
			fclose(g);
	}
	/* Every loser ends on its own while the winner is held at our row lock. */
	deadline = cbt_now() + 120;
	while (done < racers - 1 && cbt_now() < deadline) {
		for (int i = 0; i < racers; i++) {
			int status;

			if (rcs[i] != -2 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			rcs[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			done++;
		}
		cbt_sleep_ms(5);
	}
	cbt_exec(conn, "COMMIT");
	for (int i = 0; i < racers; i++) {
		if (rcs[i] == -2) {
			rcs[i] = cbt_wait_timeout(pids[i], 120000);
			if (winner >= 0)
				CBT_FAILF("round %d: more than one racer was still running", round);
			winner = i;
		}
	}
	{
		char path[PATH_MAX + 64];

		for (int i = 0; i < racers; i++) {
			snprintf(path, sizeof(path), "%s/%ld", ready, (long)pids[i]);
			unlink(path);
		}
		rmdir(ready);
		unlink(gate);
	}
	if (winner < 0) {
		CBT_FAILF("round %d: no racer was left running at the row lock", round);
		return;
	}
	CBT_EQ_LL(rcs[winner], 0);
	for (int i = 0; i < racers; i++) {
		char log[64], text[4096];

		if (i == winner)
			continue;
		CBT_EQ_LL(rcs[i], 4);
		snprintf(log, sizeof(log), "lock-race-%d-%d.log", round, i);
		read_log(log, text, sizeof(text));
		CBT_CONTAINS(text, "is held by");
	}
	/* One taking, every other launch on record as a skip (not a failure). */
	CBT_EQ_LL(audit_count(conn, mark, "ACQUIRED"), 1);
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), racers - 1);
	CBT_EQ_LL(audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"), 0);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
				"outcome = 'SKIPPED_HELD' AND detail LIKE 'held by %'",
				"lld", mark),
		  racers - 1);
	/* One instance, one execution, completed. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution e JOIN "
				"batch_job_execution_params p USING (job_execution_id) WHERE "
				"p.parameter_name = 'round' AND p.parameter_value = $1",
				"d", round),
		  1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution e JOIN "
				"batch_job_execution_params p USING (job_execution_id) WHERE "
				"p.parameter_name = 'round' AND p.parameter_value = $1 "
				"AND e.status = 'COMPLETED'",
				"d", round),
		  1);
	assert_exactly_once(conn);
}

static void test_contention_exactly_one_runs_the_rest_skip(void)
{
	PGconn *conn = cbt_connect(db);
	int round = 0;

	reset(conn);
	for (int i = 0; i < 3; i++)
		contention_round(conn, ++round, 2);
	for (int i = 0; i < 5; i++)
		contention_round(conn, ++round, 8);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_instance"), round);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), round);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit "
				     "WHERE outcome = 'SKIPPED_HELD'"),
		  3 * 1 + 5 * 7);
	PQfinish(conn);
}

/* ---- 2. SIGKILL at random points ------------------------------------------- */

static void test_sigkill_at_random_points_then_takeover_after_the_lease(void)
{
	PGconn *conn = cbt_connect(db);

	reset(conn);
	srand(20260630);
	for (int round = 1; round <= 5; round++) {
		char param[64];
		/* The first kill lands as soon as the lock is taken (in the launch,
		 * often before its execution exists), the others at random. */
		int delay_ms = round == 1 ? 0 : rand() % 400;
		long long dead, mark, written, token;
		pid_t pid;

		add_rows(conn, 40000);
		snprintf(param, sizeof(param), "round:long=%d", round);
		pid = ex_spawn("lock-kill.log", "run", "ledger", param, "-chunk.size:long=10",
			       "--lease", "1", NULL);
		/* From the moment it holds the lock, wait a random while: the kill
		 * lands in the launch, in a chunk, between chunks, in a pipeline in
		 * flight, in a heartbeat... */
		if (!cbt_wait_untilp(conn, 60000,
				     "SELECT count(*) FROM batch_lock WHERE owner_id LIKE "
				     "'%:' || $1::text || ':%' AND NOT released",
				     "ld", (long)pid))
			CBT_FAILF("round %d: the job never took the lock", round);
		cbt_sleep_ms(delay_ms);
		if (!still_running(pid)) {
			CBT_FAILF("round %d: the job ended before the kill (after %d ms); the "
				  "round proves nothing",
				  round, delay_ms);
			break;
		}
		kill(pid, SIGKILL);
		CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
		wait_no_client_sessions(conn);
		dead = execution_of(conn, pid);
		token = cbt_queryp_ll(
			conn,
			"SELECT fencing_token FROM batch_lock_audit WHERE owner_id LIKE "
			"'%:' || $1::text || ':%' AND outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER')",
			"ld", (long)pid);
		/* Whole chunks only: the data, the source status and the checkpoint agree. */
		written = cbt_queryp_ll(conn,
					"SELECT count(*) FROM ledger WHERE job_execution_id = $1",
					"lld", dead);
		printf("\n    round %d: killed %d ms after it took the lock, %s, %lld rows "
		       "committed",
		       round, delay_ms,
		       dead ? "with its execution" :
			      "before its "
			      "execution was committed",
		       written);
		CBT_EQ_LL(written % 10, 0);
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT coalesce(sum(write_count), 0) FROM batch_step_execution "
				  "WHERE job_execution_id = $1",
				  "lld", dead),
			  written);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"),
			  cbt_query_ll(conn, "SELECT count(*) FROM ledger"));
		/* The dead owner still claims to run; its lease ends within 1 s. */
		if (dead)
			CBT_EQ_LL(cbt_queryp_ll(conn,
						"SELECT count(*) FROM batch_job_execution WHERE "
						"job_execution_id = $1 AND status IN ('STARTING', "
						"'STARTED')",
						"lld", dead),
				  1);
		CBT_EQ_LL(cbt_query_ll(conn, "SELECT (locked_until <= clock_timestamp() + "
					     "interval '1 s')::int FROM batch_lock WHERE "
					     "lock_name = 'ledger'"),
			  1);
		wait_lock_free(conn, "ledger", 10000);
		mark = audit_mark(conn);
		CBT_EQ_LL(ex("run", "ledger", param, "--lease", "1", NULL), 0);
		/* Taken over (token + 1) from the dead owner, saying whose lease ended. */
		CBT_EQ_LL(audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"), 1);
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
				  "outcome = 'LEASE_EXPIRED_TAKEOVER' AND fencing_token = $2 AND "
				  "detail LIKE 'lease of %:' || $3::text || ':% expired at %'",
				  "lld lld ld", mark, token + 1, (long)pid),
			  1);
		if (dead) {
			/* The dead execution is buried saying why, and restarted. */
			CBT_EQ_LL(
				cbt_queryp_ll(
					conn,
					"SELECT count(*) FROM batch_job_execution WHERE "
					"job_execution_id = $1 AND status = 'FAILED' AND "
					"exit_message LIKE 'owner %:' || $2::text || ':% lost: lease expired at "
					"%'",
					"lld ld", dead, (long)pid),
				1);
			CBT_EQ_LL(
				cbt_queryp_ll(
					conn,
					"SELECT count(*) FROM batch_job_execution WHERE restart_of "
					"= $1 AND status = 'COMPLETED'",
					"lld", dead),
				1);
			/* The restart read only what the dead owner had not committed. */
			CBT_EQ_LL(cbt_queryp_ll(
					  conn,
					  "SELECT s.read_count FROM batch_step_execution s JOIN "
					  "batch_job_execution e USING (job_execution_id) WHERE "
					  "e.restart_of = $1",
					  "lld", dead),
				  40000 - written);
		}
		/* One live-or-done execution per round: the completed one. */
		CBT_EQ_LL(
			cbt_queryp_ll(conn,
				      "SELECT count(*) FROM batch_job_execution e JOIN "
				      "batch_job_execution_params p USING (job_execution_id) WHERE "
				      "p.parameter_name = 'round' AND p.parameter_value = $1 AND "
				      "e.status = 'COMPLETED'",
				      "d", round),
			1);
		CBT_EQ_LL(
			cbt_queryp_ll(conn,
				      "SELECT count(*) FROM batch_job_execution e JOIN "
				      "batch_job_execution_params p USING (job_execution_id) WHERE "
				      "p.parameter_name = 'round' AND p.parameter_value = $1",
				      "d", round),
			dead ? 2 : 1);
		assert_exactly_once(conn);
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit "
				     "WHERE outcome = 'LEASE_EXPIRED_TAKEOVER'"),
		  5);
	printf("\n");
	PQfinish(conn);
}

/* ---- 3. zombie ------------------------------------------------------------------ */

/*
 * A job is SIGSTOPped past its lease, another process takes the lock over and
 * finishes, then the zombie is woken with new work waiting. The test holds
 * the lock row (FOR UPDATE) while the zombie wakes, so that its heartbeat
 * cannot notice the loss first: the zombie reaches a chunk checkpoint, and
 * only the fence can refuse that late write.
 *
 * @p same_instance: the taker restarts the zombie's own instance (which also
 * buries the zombie's execution and bumps its step's version), or launches
 * another instance under the same lock (the zombie's execution is left as
 * it was, so the fencing token is the only thing that stops it).
 * @p new_work: fresh rows wait for the zombie, or nothing is left to write
 * (then it ends without a chunk, and must still end FAILED and be audited).
 *
 * The zombie and the taker run as two roles without privilege over each
 * other: the taker cannot end the zombie's session (a takeover normally
 * does, see the frozen-owner test), so the zombie wakes still connected and
 * only the fence stands in its way.
 */
static char zombie_db[CBT_CONNINFO_MAX], taker_db[CBT_CONNINFO_MAX];

static void zombie_round(PGconn *conn, int round, int same_instance, int new_work)
{
	char zparam[32], tparam[32], log[64], text[65536];
	long long zombie, zstep, zwrites, zcommits, zrows, zversion, taker, token, mark;
	PGconn *watch;
	pid_t pid;

	snprintf(zparam, sizeof(zparam), "z:long=%d", round);
	snprintf(tparam, sizeof(tparam), "z:long=%d", same_instance ? round : 100 + round);
	snprintf(log, sizeof(log), "lock-zombie-%d.log", round);
	add_rows(conn, 100000);
	pid = ex_spawn_with(NULL, zombie_db, log, "run", "ledger", zparam, "-chunk.size:long=10",
			    "--lease", "1", NULL);
	{
		if (!cbt_wait_untilp(
			    conn, 60000,
			    "SELECT (count(*) >= 300)::int FROM ledger l JOIN "
			    "batch_job_execution e USING (job_execution_id) WHERE e.owner_id LIKE "
			    "'%:' || $1::text || ':%'",
			    "ld", (long)pid)) {
			CBT_FAILF("the job never wrote 300 rows");
			kill(pid, SIGKILL);
			cbt_wait(pid);
			return;
		}
	}
	kill(pid, SIGSTOP);
	zombie = execution_of(conn, pid);
	token = cbt_queryp_ll(
		conn,
		"SELECT fencing_token FROM batch_job_execution WHERE job_execution_id = "
		"$1",
		"lld", zombie);
	/* Past its lease (database time), a second process takes over and finishes. */
	wait_lock_free(conn, "ledger", 10000);
	mark = audit_mark(conn);
	CBT_EQ_LL(ex_with(taker_db, "run", "ledger", tparam, "--lease", "5", NULL), 0);
	taker = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	/* It could not end the zombie's session, and says so. */
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND outcome "
			  "= 'LEASE_EXPIRED_TAKEOVER' AND fencing_token = $2 AND detail LIKE "
			  "'%could not be checked (insufficient privilege) and was left running'",
			  "lld lld", mark, token + 1),
		  1);
	if (same_instance) {
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT restart_of FROM batch_job_execution WHERE "
					"job_execution_id = $1",
					"lld", taker),
			  zombie);
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id "
				  "= $1 AND status = 'FAILED' AND exit_message LIKE 'owner % lost: "
				  "lease expired at %'",
				  "lld", zombie),
			  1);
	} else {
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id "
				  "= $1 AND status = 'STARTED'",
				  "lld", zombie),
			  1);
	}
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	if (cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1", "lld",
			  taker) == 0)
		CBT_FAILF("the zombie finished before it was stopped; the round proves nothing");

	/* What the zombie had committed when it was taken over. */
	zstep = cbt_queryp_ll(conn,
			      "SELECT step_execution_id FROM batch_step_execution WHERE "
			      "job_execution_id = $1",
			      "lld", zombie);
	zwrites = cbt_queryp_ll(
		conn,
		"SELECT write_count FROM batch_step_execution WHERE step_execution_id "
		"= $1",
		"lld", zstep);
	zcommits = cbt_queryp_ll(conn,
				 "SELECT commit_count FROM batch_step_execution WHERE "
				 "step_execution_id = $1",
				 "lld", zstep);
	zversion =
		cbt_queryp_ll(conn,
			      "SELECT version FROM batch_step_execution WHERE step_execution_id = "
			      "$1",
			      "lld", zstep);
	zrows = cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
			      "lld", zombie);
	CBT_EQ_LL(zrows, zwrites);
	/* New work, so that the zombie has something it could still write. */
	if (new_work)
		add_rows(conn, 5000);

	/* Wake it while no one may write batch_lock: its heartbeat and its next
	 * chunk checkpoint queue behind us (a row lock would not do: an UPDATE
	 * whose WHERE no longer matches does not wait for it). So the heartbeat
	 * cannot stop it first, and its chunk's writes reach the checkpoint in
	 * their transaction. Let go once they are there. */
	watch = cbt_connect(db);
	cbt_exec(conn, "BEGIN; LOCK TABLE batch_lock IN EXCLUSIVE MODE");
	kill(pid, SIGCONT);
	if (new_work) {
		if (!cbt_wait_until(watch, 30000,
				    "SELECT count(*) FROM pg_stat_activity WHERE "
				    "datname = current_database() AND application_name = 'cbatch' "
				    "AND wait_event_type = 'Lock'"))
			CBT_FAILF("the woken zombie never reached a chunk checkpoint");
	} else {
		/* Nothing to write: it ends its step and waits for its heartbeat
		 * (queued behind us) to stop; it has not learnt of the loss. Give
		 * it a second of idleness to get there (if it does not, its
		 * heartbeat tells it, which the assertions accept as well). Or it
		 * was stopped inside a chunk, whose checkpoint now waits for us. */
		if (!cbt_wait_until(
			    watch, 30000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch' AND ((state = "
			    "'idle' AND clock_timestamp() - state_change > interval '1 s') OR "
			    "wait_event_type = 'Lock')"))
			CBT_FAILF("the woken zombie neither ended its step nor reached a "
				  "checkpoint");
	}
	cbt_exec(conn, "COMMIT");
	PQfinish(watch);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 1);
	read_log(log, text, sizeof(text));
	CBT_CONTAINS(text, new_work ? "fenced off" : "ended by another process");
	/* On record as fenced, or as a failed heartbeat, or both: its heartbeat
	 * learns of the loss at the same moment. */
	{
		char outcome[64] = "";
		char sql[256];

		snprintf(
			sql, sizeof(sql),
			"SELECT coalesce(string_agg(outcome, ','), 'nothing') FROM batch_lock_audit "
			"WHERE fencing_token = %lld AND outcome NOT IN ('ACQUIRED', 'RELEASED')",
			token);
		cbt_query_str(conn, sql, outcome, sizeof(outcome));
		printf("\n    zombie round %d: audited %s\n", round, outcome);
	}
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT (count(*) BETWEEN 1 AND 2 AND count(DISTINCT outcome) = count(*))::int "
			"FROM batch_lock_audit WHERE outcome IN ('FENCED', "
			"'HEARTBEAT_FAILED') AND fencing_token = $1 AND owner_id LIKE "
			"'%:' || $2::text || ':%'",
			"lld ld", token, (long)pid),
		1);
	/* It committed nothing after the takeover. */
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT write_count FROM batch_step_execution WHERE step_execution_id "
			  "= $1",
			  "lld", zstep),
		  zwrites);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT commit_count FROM batch_step_execution WHERE "
				"step_execution_id = $1",
				"lld", zstep),
		  zcommits);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
				"lld", zombie),
		  zrows);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
				"lld", taker),
		  cbt_queryp_ll(
			  conn,
			  "SELECT write_count FROM batch_step_execution WHERE job_execution_id = "
			  "$1",
			  "lld", taker));
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"),
		  new_work ? 5000 : 0);
	if (same_instance) {
		/* Buried by the taker: the zombie's late end does not overwrite that. */
		CBT_EQ_LL(cbt_queryp_ll(conn,
					"SELECT version FROM batch_step_execution WHERE "
					"step_execution_id = $1",
					"lld", zstep),
			  zversion);
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id "
				  "= $1 AND status = 'FAILED' AND exit_message LIKE 'owner % lost: "
				  "lease expired at %'",
				  "lld", zombie),
			  1);
	} else {
		/* Its own execution: it ends it as FAILED, saying it was fenced off. */
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id "
				  "= $1 AND status = 'FAILED' AND exit_message LIKE '%fenced off%'",
				  "lld", zombie),
			  1);
	}
	/* The zombie did not release the taker's lock: the newest token is the taker's. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT fencing_token FROM batch_lock WHERE lock_name = "
				     "'ledger'"),
		  token + 1);
	snprintf(tparam, sizeof(tparam), "z:long=%d", 200 + round);
	CBT_EQ_LL(ex("run", "ledger", tparam, NULL), 0);
	assert_exactly_once(conn);
}

static void test_zombie_woken_after_takeover_is_fenced_and_commits_nothing(void)
{
	PGconn *conn = cbt_connect(db);
	char za[64], zb[64];

	reset(conn);
	snprintf(za, sizeof(za), "cbt_lock_za_%ld", (long)getpid());
	snprintf(zb, sizeof(zb), "cbt_lock_zb_%ld", (long)getpid());
	make_role(conn, za, zombie_db, sizeof(zombie_db));
	make_role(conn, zb, taker_db, sizeof(taker_db));
	zombie_round(conn, 1, 1, 1);
	zombie_round(conn, 2, 0, 1);
	zombie_round(conn, 3, 1, 0);
	drop_role(conn, za);
	drop_role(conn, zb);
	PQfinish(conn);
}

/* ---- 4. heartbeat keeps a long chunk alive ----------------------------------- */

#define LONG_TASK_JOB "long_tasklet"

typedef struct long_task {
	double seconds; /* how long the single call takes */
	int probe_rc;   /* exit status of the probe launched mid-call */
	char probe_out[4096];
	double took;
} long_task;

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

static cb_job *long_task_job(long_task *t)
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

#define FREEZE_JOB   "freeze"
#define FREEZE_ROWS  2000
#define FREEZE_CHUNK 10

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

static cb_job *freeze_job(void)
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
static int probe_main(const char *conninfo, const char *job_name)
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

static void test_heartbeat_keeps_a_chunk_longer_than_the_lease_alive(void)
{
	PGconn *conn = cbt_connect(db);
	long_task t = { 3.0, -2, "", 0.0 };
	cb_launch_options opts = CB_LAUNCH_OPTIONS_INIT;
	cb_error err = CB_ERROR_INIT;
	cb_job *job;
	cb_job_result r;
	char owner[256];

	reset(conn);
	job = long_task_job(&t);
	CU_ASSERT_PTR_NOT_NULL_FATAL(job);
	opts.lease_seconds = 1;
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, &opts, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	if (t.took < 3.0)
		CBT_FAILF("the call took %.2fs, not longer than 3 lease lengths", t.took);
	/* The other process was refused: the lock was held though the lease of 1 s
	 * had long run out, because the heartbeat extended it. */
	CBT_EQ_LL(t.probe_rc, 4);
	CBT_CONTAINS(t.probe_out, "rc=CB_ERUNNING");
	CBT_CONTAINS(t.probe_out, "is held by");
	snprintf(owner, sizeof(owner), "%s", cb__owner_id());
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				"'SKIPPED_HELD' AND owner_id <> $1 AND lock_name = $2",
				"s s", owner, r.lock_name),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit "
				     "WHERE outcome = 'LEASE_EXPIRED_TAKEOVER'"),
		  0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				     "'ACQUIRED'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE outcome IN "
				     "('HEARTBEAT_FAILED', 'FENCED')"),
		  0);
	/* The skip came more than a lease after the lock was taken. */
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT (s.event_time - a.event_time > interval '1 s')::int "
			       "FROM batch_lock_audit s, batch_lock_audit a WHERE s.outcome = "
			       "'SKIPPED_HELD' AND a.outcome = 'ACQUIRED'"),
		  1);
	/* One call, one commit: the work was never split to fit the lease. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT commit_count FROM batch_step_execution"), 1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);

	/* The owner is per process: a child forked after a launch is someone else. */
	{
		int fds[2];
		char child[256] = "";
		pid_t pid;

		CU_ASSERT_FATAL(pipe(fds) == 0);
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			const char *id = cb__owner_id();
			ssize_t w = write(fds[1], id, strlen(id));

			_exit(w > 0 ? 0 : 1);
		}
		close(fds[1]);
		{
			ssize_t n = read(fds[0], child, sizeof(child) - 1);

			child[n > 0 ? n : 0] = '\0';
		}
		close(fds[0]);
		CBT_EQ_LL(cbt_wait(pid), 0);
		if (strcmp(child, owner) == 0)
			CBT_FAILF("a forked child has its parent's owner id %s", owner);
		{
			char pidpart[32];

			snprintf(pidpart, sizeof(pidpart), ":%ld:", (long)pid);
			CBT_CONTAINS(child, pidpart);
		}
	}
	cb_job_free(job);
	PQfinish(conn);
}

/* ---- 5. heartbeat connection cut ---------------------------------------------- */

static void test_cut_heartbeat_connection_stops_the_job(void)
{
	PGconn *conn = cbt_connect(db);
	char role[64], conninfo[CBT_CONNINFO_MAX], dbname[128], sql[1024], log[65536];
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT");
	long long exec, token, mark;
	double t_cut, last_commit;
	pid_t pid;
	int rc;

	reset(conn);
	add_rows(conn, 300000);
	snprintf(role, sizeof(role), "cbt_lock_hb_%ld", (long)getpid());
	cbt_query_str(conn, "SELECT current_database()", dbname, sizeof(dbname));
	snprintf(conninfo, sizeof(conninfo), "host=%s port=%s user=%s dbname=%s",
		 host ? host : "/tmp", port ? port : "5432", role, dbname);
	snprintf(sql, sizeof(sql),
		 "DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN; "
		 "GRANT USAGE ON SCHEMA public TO %s; "
		 "GRANT ALL ON ALL TABLES IN SCHEMA public TO %s; "
		 "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s",
		 role, role, role, role, role);
	cbt_exec(conn, sql);

	pid = ex_spawn_with(NULL, conninfo, "lock-hbcut.log", "run", "ledger", "h:long=1",
			    "-chunk.size:long=10", "--lease", "1", NULL);
	if (!cbt_wait_untilp(conn, 60000,
			     "SELECT (count(*) = 1)::int FROM pg_stat_activity WHERE "
			     "datname = current_database() AND usename = $1 AND application_name = "
			     "'cbatch-heartbeat'",
			     "s", role) ||
	    !cbt_wait_until(conn, 60000, "SELECT (count(*) >= 500)::int FROM ledger"))
		CBT_FAILF("the job did not get going");
	exec = execution_of(conn, pid);
	token = cbt_queryp_ll(
		conn,
		"SELECT fencing_token FROM batch_job_execution WHERE job_execution_id = "
		"$1",
		"lld", exec);
	/* The role may no longer log in, and its heartbeat session is cut: the
	 * heartbeat cannot reconnect, while the job's own session still works. */
	snprintf(sql, sizeof(sql), "ALTER ROLE %s NOLOGIN", role);
	cbt_exec(conn, sql);
	t_cut = q_double(conn, "SELECT extract(epoch FROM clock_timestamp())");
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
			"pg_stat_activity WHERE datname = current_database() AND usename = $1 AND "
			"application_name = 'cbatch-heartbeat') x",
			"s", role),
		1);

	rc = cbt_wait_timeout(pid, 60000);
	CBT_EQ_LL(rc, 1);
	read_log("lock-hbcut.log", log, sizeof(log));
	CBT_CONTAINS(log, "heartbeat failed");
	if (cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed") == 0)
		CBT_FAILF("the job finished all its work; it did not stop");
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
			      "$1 AND status = 'FAILED' AND exit_message LIKE '%heartbeat failed%'",
			      "lld", exec),
		1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE outcome = "
				"'HEARTBEAT_FAILED' AND fencing_token = $1",
				"lld", token),
		  1);
	/* It stopped writing about a lease after the cut: the last chunk commit
	 * (heartbeat_time, which only chunk commits move once the heartbeat is
	 * gone) is within the lease (1 s) and the heartbeat's check interval
	 * (1/3 s) of the cut, plus slack for a loaded host. */
	snprintf(sql, sizeof(sql),
		 "SELECT extract(epoch FROM heartbeat_time) FROM "
		 "batch_job_execution WHERE job_execution_id = %lld",
		 exec);
	last_commit = q_double(conn, sql);
	printf("\n    last chunk commit %.3fs after the heartbeat was cut\n", last_commit - t_cut);
	if (last_commit - t_cut > 1.0 + 1.0 / 3 + 2.0)
		CBT_FAILF("the job kept writing %.3fs after its heartbeat was cut (lease 1 s)",
			  last_commit - t_cut);
	/* Another process takes the lock and finishes, exactly once. */
	wait_lock_free(conn, "ledger", 10000);
	mark = audit_mark(conn);
	CBT_EQ_LL(ex("run", "ledger", "h:long=1", NULL), 0);
	CBT_EQ_LL(audit_count(conn, mark, "ACQUIRED") +
			  audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"),
		  1);
	assert_exactly_once(conn);

	snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	cbt_exec(conn, sql);
	PQfinish(conn);
}

/* ---- 6. lock at least for; force unlock -------------------------------------- */

static int quick_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			 cb_error *err)
{
	(void)user;
	(void)sc;
	(void)tx;
	(void)context;
	(void)err;
	return CB_DONE;
}

static void test_lock_at_least_for_then_force_unlock(void)
{
	PGconn *conn = cbt_connect(db);
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_params *p1 = NULL, *p2 = NULL;
	cb_job *job = NULL;
	cb_job_result r;
	char text[65536];
	long long mark, first_exec, first;
	char taken[64];
	PGconn *gate;
	pid_t pid;
	int rc;

	reset(conn);
	CBT_PASS_FATAL(cb_job_new(&job, "least", &err), &err);
	s.name = "quick";
	s.kind = CB_STEP_TASKLET;
	s.tasklet = quick_tasklet;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	/* Lease 5 s, held at least 3 s after it was taken; one lock for every instance. */
	CBT_PASS(cb_job_set_lock(job, "{job}", 5, 3, &err), &err);
	CBT_PASS(cb_params_new(&p1, &err), &err);
	CBT_PASS(cb_params_add_long(p1, "day", 1, 1, &err), &err);
	CBT_PASS(cb_params_new(&p2, &err), &err);
	CBT_PASS(cb_params_add_long(p2, "day", 2, 1, &err), &err);

	CBT_PASS(cb_job_launch(&r, conn, job, p1, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_STR(r.lock_name, "least");
	first_exec = r.job_execution_id;
	/* Released, but held until 3 s after it was taken. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE lock_name = 'least' "
				     "AND released AND locked_until = locked_at + interval '3 s'"),
		  1);
	/* A second trigger right after the fast job (another instance) is a skip. */
	CBT_FAILS_WITH(CB_ERUNNING, cb_job_launch(&r, conn, job, p2, NULL, &err), &err);
	CBT_CONTAINS(err.message, "is held by");
	cb_error_clear(&err);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
			       "'SKIPPED_HELD' AND lock_name = 'least' AND event_time < "
			       "(SELECT locked_until FROM batch_lock WHERE lock_name = 'least')"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 1);
	/* After the 3 s it runs, as a plain acquisition (the lock was released). */
	cbt_query_str(conn, "SELECT locked_at FROM batch_lock WHERE lock_name = 'least'", taken,
		      sizeof(taken));
	wait_lock_free(conn, "least", 10000);
	mark = audit_mark(conn);
	CBT_PASS(cb_job_launch(&r, conn, job, p2, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CU_ASSERT(r.job_execution_id != first_exec);
	CBT_EQ_LL(audit_count(conn, mark, "ACQUIRED"), 1);
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
				"outcome = 'ACQUIRED' AND event_time >= $2::timestamptz + interval "
				"'3 s'",
				"lld s", mark, taken),
		  1);
	cb_params_free(p1);
	cb_params_free(p2);
	cb_job_free(job);

	/* Force unlock of a lock whose holder is alive and writing: we hold its
	 * 51st chunk at a row lock until the lock has been released by force. */
	first = add_rows(conn, 20000);
	gate = cbt_connect(db);
	cbt_exec(gate, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(
			  gate,
			  "SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 FOR UPDATE) "
			  "x",
			  "lld", first + 500),
		  1);
	pid = ex_spawn("lock-forced.log", "run", "ledger", "f:long=1", "-chunk.size:long=10", NULL);
	if (!cbt_wait_until(conn, 60000, "SELECT (count(*) = 500)::int FROM ledger") ||
	    !cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the job did not get to its 51st chunk");
	mark = audit_mark(conn);
	CBT_EQ_LL(ex("unlock", "ledger", NULL), 2); /* not without --force */
	CBT_EQ_LL(ex("unlock", "ledger", "--force", "--reason", "test", NULL), 0);
	CBT_CONTAINS(out, "FORCE_UNLOCKED");
	CBT_EQ_LL(ex("unlock", "no-such-lock", "--force", NULL), 2);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
			      "outcome = 'FORCE_UNLOCKED' AND lock_name = 'ledger' AND detail LIKE "
			      "'forced by %@%: test (holder was %:' || $2::text || ':%)'",
			      "lld ld", mark, (long)pid),
		1);
	cbt_exec(gate, "COMMIT");
	PQfinish(gate);
	/* The holder stops at that chunk, fenced off, and writes no more. */
	rc = cbt_wait_timeout(pid, 60000);
	CBT_EQ_LL(rc, 1);
	read_log("lock-forced.log", text, sizeof(text));
	CBT_CONTAINS(text, "fenced off");
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND "
				"outcome = 'FENCED' AND owner_id LIKE '%:' || $2::text || ':%'",
				"lld ld", mark, (long)pid),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 500);
	/* A run then takes the lock at once (no lease to wait for) and finishes. */
	CBT_EQ_LL(ex("run", "ledger", "f:long=1", NULL), 0);
	CBT_EQ_LL(audit_count(conn, mark, "ACQUIRED"), 1);
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), 0);
	CBT_EQ_LL(ex("metrics", NULL), 0);
	CBT_CONTAINS(out, "\ncbatch_manual_rerun_lock_bypass_total 1\n");
	CBT_CONTAINS(out, "\ncbatch_fenced_chunk_total 1\n");
	CBT_EQ_LL(ex("locks", NULL), 0);
	CBT_CONTAINS(out, "ledger");
	assert_exactly_once(conn);
	PQfinish(conn);
}

/* ---- 7. clock skew ------------------------------------------------------------- */

static void test_clock_skew_neither_steals_nor_keeps_a_lock(void)
{
	static const char *const offsets[] = { "+1h", "-1h" };
	PGconn *conn = cbt_connect(db);
	char asan[1024];
	const char *prefix[6];
	long long first, mark;
	pid_t holder;

	if (!cbt_have_faketime()) {
		PQfinish(conn);
		return;
	}
	reset(conn);

	/* A live lock held by a normal process (kept running by our row lock). */
	first = add_rows(conn, 2000);
	cbt_exec(conn, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 "
				"FOR UPDATE) x",
				"lld", first),
		  1);
	holder =
		ex_spawn("lock-skew-holder.log", "run", "ledger", "s:long=1", "--lease", "2", NULL);
	{
		PGconn *c2 = cbt_connect(db);

		if (!cbt_wait_untilp(
			    c2, 60000,
			    "SELECT count(*) FROM batch_job_execution WHERE "
			    "status = 'STARTED' AND owner_id LIKE '%:' || $1::text || ':%'",
			    "ld", (long)holder))
			CBT_FAILF("the holder did not start");
		mark = audit_mark(c2);
		for (int i = 0; i < 2; i++) {
			const char *argv[MAXARGS];
			size_t n = 0;

			cbt_faketime_prefix(prefix, asan, sizeof(asan), offsets[i]);
			for (; prefix[n]; n++)
				argv[n] = prefix[n];
			argv[n++] = cbt_examples_bin();
			argv[n++] = "--db";
			argv[n++] = db;
			argv[n++] = "run";
			argv[n++] = "ledger";
			argv[n++] = "s:long=1";
			argv[n++] = "--lease";
			argv[n++] = "2";
			argv[n] = NULL;
			/* Its clock says the holder's lease ran out an hour ago (or that
			 * it will not for an hour): neither matters, the database decides. */
			CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 4);
			CBT_CONTAINS(errout, "is held by");
		}
		CBT_EQ_LL(audit_count(c2, mark, "SKIPPED_HELD"), 2);
		CBT_EQ_LL(audit_count(c2, mark, "LEASE_EXPIRED_TAKEOVER"), 0);
		CBT_EQ_LL(still_running(holder), 1);
		PQfinish(c2);
	}
	cbt_exec(conn, "COMMIT");
	CBT_EQ_LL(cbt_wait_timeout(holder, 60000), 0);
	assert_exactly_once(conn);

	/* A skewed owner that dies holding the lock does not keep it past its
	 * real lease: a normal process takes over after 1 s of database time. */
	for (int i = 0; i < 2; i++) {
		char param[32], log[64];
		long long dead;
		double left;
		pid_t pid, wrapper;

		add_rows(conn, 100000);
		snprintf(param, sizeof(param), "s:long=%d", 2 + i);
		snprintf(log, sizeof(log), "lock-skew-%d.log", i);
		cbt_faketime_prefix(prefix, asan, sizeof(asan), offsets[i]);
		wrapper = ex_spawn_with(prefix, db, log, "run", "ledger", param,
					"-chunk.size:long=10", "--lease", "1", NULL);
		/* faketime runs the job as its child: find the job by its execution. */
		if (!cbt_wait_until(
			    conn, 60000,
			    "SELECT count(*) FROM ledger l JOIN "
			    "batch_job_execution e USING (job_execution_id) WHERE e.status = "
			    "'STARTED'")) {
			char text[4096];

			read_log(log, text, sizeof(text));
			CBT_FAILF("the skewed job (%s) did not write: %s", offsets[i], text);
			kill(wrapper, SIGKILL);
			cbt_wait(wrapper);
			break;
		}
		dead = cbt_query_ll(conn, "SELECT job_execution_id FROM batch_job_execution "
					  "WHERE status = 'STARTED'");
		pid = (pid_t)cbt_queryp_ll(conn,
					   "SELECT split_part(owner_id, ':', 2)::int FROM "
					   "batch_job_execution WHERE job_execution_id = $1",
					   "lld", dead);
		{
			/* It does run with the skewed clock. */
			char path[64], env[65536] = "", want[32];
			FILE *f;
			size_t n = 0;

			snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
			f = fopen(path, "r");
			if (f) {
				n = fread(env, 1, sizeof(env) - 1, f);
				fclose(f);
			}
			for (size_t k = 0; k < n; k++)
				if (env[k] == '\0')
					env[k] = '\n';
			env[n] = '\0';
			snprintf(want, sizeof(want), "FAKETIME=%s", offsets[i]);
			CBT_CONTAINS(env, want);
		}
		kill(pid, SIGKILL);
		CU_ASSERT(cbt_wait_timeout(wrapper, 30000) != 0);
		wait_no_client_sessions(conn);
		/* Its lease is at most 1 s of database time from now, not an hour. */
		left = q_double(conn, "SELECT extract(epoch FROM locked_until - clock_timestamp()) "
				      "FROM batch_lock WHERE lock_name = 'ledger'");
		if (left > 1.0)
			CBT_FAILF("the dead skewed owner (%s) holds the lock for %.1fs more",
				  offsets[i], left);
		wait_lock_free(conn, "ledger", 10000);
		mark = audit_mark(conn);
		CBT_EQ_LL(ex("run", "ledger", param, "--lease", "1", NULL), 0);
		CBT_EQ_LL(audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"), 1);
		CBT_EQ_LL(cbt_queryp_ll(
				  conn,
				  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id "
				  "= $1 AND status = 'FAILED' AND exit_message LIKE 'owner % lost: "
				  "lease expired at %'",
				  "lld", dead),
			  1);
		assert_exactly_once(conn);
	}
	PQfinish(conn);
}

/* ---- 8a. the job's backend terminated --------------------------------------- */

static void test_terminated_job_backend_fails_cleanly_and_restart_completes(void)
{
	PGconn *conn = cbt_connect(db);
	long long before, exec;
	pid_t pid;
	int rc;

	reset(conn);
	add_rows(conn, 100000);
	pid = ex_spawn("lock-term.log", "run", "ledger", "t:long=1", "-chunk.size:long=10",
		       "--lease", "1", NULL);
	if (!cbt_wait_until(conn, 60000, "SELECT (count(*) >= 500)::int FROM ledger"))
		CBT_FAILF("the job did not get going");
	exec = execution_of(conn, pid);
	/* The job's own session, not its heartbeat's. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
				     "pg_stat_activity WHERE datname = current_database() AND "
				     "application_name = 'cbatch') x"),
		  1);
	before = cbt_query_ll(conn, "SELECT count(*) FROM ledger");
	rc = cbt_wait_timeout(pid, 60000);
	CBT_EQ_LL(rc, 1);
	wait_no_client_sessions(conn);
	/* Nothing committed was lost; whole chunks, and counts that agree. */
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM ledger") >= before);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
				"lld", exec) %
			  10,
		  0);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM ledger WHERE job_execution_id = $1",
				"lld", exec),
		  cbt_queryp_ll(
			  conn,
			  "SELECT write_count FROM batch_step_execution WHERE job_execution_id = "
			  "$1",
			  "lld", exec));
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE processed"),
		  cbt_query_ll(conn, "SELECT count(*) FROM ledger"));
	if (cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed") == 0)
		CBT_FAILF("the job finished before its backend was terminated");
	/* It reconnected to record the failure (or left its execution to the lease). */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = "
				"$1 AND status IN ('FAILED', 'STARTED')",
				"lld", exec),
		  1);
	wait_lock_free(conn, "ledger", 10000);
	CBT_EQ_LL(ex("run", "ledger", "t:long=1", NULL), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE restart_of = $1 AND "
			      "status = 'COMPLETED'",
			      "lld", exec),
		1);
	assert_exactly_once(conn);
	PQfinish(conn);
}

/* ---- 9. a frozen owner inside its chunk transaction (issue 8, item 3) ---------- */

/* The state letter of process @p pid (/proc/PID/stat), or '?'. */
static char proc_state(pid_t pid)
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

static pid_t spawn_probe(const char *conninfo, const char *job, const char *log)
{
	const char *argv[] = { self_exe, "--probe", conninfo, job, NULL };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", cbt_tmpdir(), log);
	return cbt_spawn(argv, path);
}

/*
 * The owner stops itself (SIGSTOP) inside a chunk transaction that holds row
 * locks on its data and on the lock row, with a lease of 2 s. Past the lease
 * a successor takes over: it must end the frozen owner's session (which
 * rolls its transaction back) instead of waiting on its row locks for as long
 * as it stays frozen, and finish within about a lease. Woken, the old owner
 * finds its session gone and ends fenced off (exit 1), committing nothing.
 */
static void test_frozen_owner_inside_a_chunk_is_ended_by_the_takeover(void)
{
	PGconn *conn = cbt_connect(db);
	char log[65536];
	long long zombie, token, zbackend, mark;
	double t0, took;
	pid_t zpid, spid;
	int rc;

	reset(conn);
	cbt_exec(conn, "CREATE TABLE sink (n bigint PRIMARY KEY)");
	setenv("CBT_FREEZE_AT", "5", 1);
	zpid = spawn_probe(db, FREEZE_JOB, "lock-freeze-zombie.log");
	unsetenv("CBT_FREEZE_AT");
	t0 = cbt_now();
	while (proc_state(zpid) != 'T' && cbt_now() - t0 < 60)
		cbt_sleep_ms(10);
	if (proc_state(zpid) != 'T') {
		CBT_FAILF("the job never froze itself");
		kill(zpid, SIGKILL);
		cbt_wait(zpid);
		PQfinish(conn);
		return;
	}
	zombie = execution_of(conn, zpid);
	token = cbt_queryp_ll(conn, "SELECT fencing_token FROM batch_lock WHERE lock_name = $1",
			      "s", FREEZE_JOB);
	/* Frozen idle in transaction, holding the lock row and 10 data rows. */
	zbackend = cbt_queryp_ll(
		conn,
		"SELECT count(*) FROM pg_stat_activity a JOIN batch_lock l ON l.lock_name = "
		"$1 AND a.pid = l.owner_backend_pid AND a.backend_start = "
		"l.owner_backend_start WHERE a.state = 'idle in transaction'",
		"s", FREEZE_JOB);
	CBT_EQ_LL(zbackend, 1);
	zbackend =
		cbt_queryp_ll(conn, "SELECT owner_backend_pid FROM batch_lock WHERE lock_name = $1",
			      "s", FREEZE_JOB);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 4 * FREEZE_CHUNK);
	wait_lock_free(conn, FREEZE_JOB, 10000);

	mark = audit_mark(conn);
	t0 = cbt_now();
	spid = spawn_probe(db, FREEZE_JOB, "lock-freeze-successor.log");
	rc = cbt_wait_timeout(spid, 3 * 2 * 1000 + 5000);
	took = cbt_now() - t0;
	read_log("lock-freeze-successor.log", log, sizeof(log));
	printf("\n    successor: exit %d after %.2f s: %s", rc, took, log);
	CBT_EQ_LL(rc, 0);
	/* Exact data: every number once, the zombie's rolled-back chunk redone. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), FREEZE_ROWS);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT n) FROM sink WHERE n BETWEEN 1 AND "
				     "2000"),
		  FREEZE_ROWS);
	/* A takeover that says it ended the old owner's session. */
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND outcome = "
			"'LEASE_EXPIRED_TAKEOVER' AND fencing_token = $2 AND detail LIKE "
			"'lease of %:' || $3::text || ':% expired at %; its session ' || $4::text || ' (idle in transaction) "
			"was terminated'",
			"lld lld ld lld", mark, token + 1, (long)zpid, zbackend),
		1);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", "lld",
				zbackend),
		  0);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_job_execution WHERE restart_of = $1 AND "
			      "status = 'COMPLETED'",
			      "lld", zombie),
		1);
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 AND "
			"status = 'FAILED' AND exit_message LIKE 'owner % lost: lease expired at %'",
			"lld", zombie),
		1);

	/* Woken, the old owner has no session left: it ends fenced off. */
	mark = audit_mark(conn);
	kill(zpid, SIGCONT);
	CBT_EQ_LL(cbt_wait_timeout(zpid, 60000), 1);
	read_log("lock-freeze-zombie.log", log, sizeof(log));
	CBT_CONTAINS(log, "fenced off");
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND outcome IN "
			"('FENCED', 'HEARTBEAT_FAILED') AND fencing_token = $2",
			"lld lld", mark, token),
		cbt_queryp_ll(
			conn,
			"SELECT count(DISTINCT outcome) FROM batch_lock_audit WHERE audit_id > $1 "
			"AND fencing_token = $2 AND outcome IN ('FENCED', 'HEARTBEAT_FAILED')",
			"lld lld", mark, token));
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT (count(*) >= 1)::int FROM batch_lock_audit WHERE audit_id > $1 "
			  "AND fencing_token = $2 AND outcome IN ('FENCED', 'HEARTBEAT_FAILED')",
			  "lld lld", mark, token),
		  1);
	/* It committed nothing: 4 chunks before it froze, none after. */
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT commit_count FROM batch_step_execution WHERE job_execution_id = $1",
			"lld", zombie),
		4);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), FREEZE_ROWS);
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT fencing_token FROM batch_lock WHERE lock_name = $1",
				"s", FREEZE_JOB),
		  token + 1);
	printf("\n");
	PQfinish(conn);
}

/*
 * The same frozen owner, but the successor runs as another role without the
 * privilege to end its session: the launch does not wait for as long as the
 * owner stays frozen. It gives up within seconds, saying why (exit 4), and
 * the owner, thawed, still owns its lock and finishes.
 */
static void test_frozen_owner_whose_session_cannot_be_ended_bounds_the_launch(void)
{
	PGconn *conn = cbt_connect(db);
	char log[65536], ra[64], rb[64], ca[CBT_CONNINFO_MAX], cbi[CBT_CONNINFO_MAX];
	long long mark;
	double t0, took;
	pid_t zpid, spid;
	int rc;

	reset(conn);
	cbt_exec(conn, "CREATE TABLE sink (n bigint PRIMARY KEY)");
	snprintf(ra, sizeof(ra), "cbt_lock_fa_%ld", (long)getpid());
	snprintf(rb, sizeof(rb), "cbt_lock_fb_%ld", (long)getpid());
	make_role(conn, ra, ca, sizeof(ca));
	make_role(conn, rb, cbi, sizeof(cbi));
	setenv("CBT_FREEZE_AT", "5", 1);
	zpid = spawn_probe(ca, FREEZE_JOB, "lock-freeze2-zombie.log");
	unsetenv("CBT_FREEZE_AT");
	t0 = cbt_now();
	while (proc_state(zpid) != 'T' && cbt_now() - t0 < 60)
		cbt_sleep_ms(10);
	if (proc_state(zpid) != 'T') {
		CBT_FAILF("the job never froze itself");
		kill(zpid, SIGKILL);
		cbt_wait(zpid);
		PQfinish(conn);
		return;
	}
	wait_lock_free(conn, FREEZE_JOB, 10000);
	mark = audit_mark(conn);
	t0 = cbt_now();
	spid = spawn_probe(cbi, FREEZE_JOB, "lock-freeze2-successor.log");
	rc = cbt_wait_timeout(spid, 3 * 2 * 1000 + 5000);
	took = cbt_now() - t0;
	read_log("lock-freeze2-successor.log", log, sizeof(log));
	printf("\n    successor: exit %d after %.2f s: %s", rc, took, log);
	CBT_EQ_LL(rc, 4);
	CBT_CONTAINS(log, "cannot be taken over: its row stays locked by an open transaction; "
			  "its session ");
	CBT_CONTAINS(log, "could not be checked (insufficient privilege) and was left running");
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), 1);
	CBT_EQ_LL(audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"), 0);
	/* Thawed, it still owns its lock (nobody took it) and finishes. */
	kill(zpid, SIGCONT);
	CBT_EQ_LL(cbt_wait_timeout(zpid, 60000), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), FREEZE_ROWS);
	drop_role(conn, ra);
	drop_role(conn, rb);
	printf("\n");
	PQfinish(conn);
}

/* ---- 10. a crashed owner on this host (issue 8, item 4) ----------------------- */

/*
 * A live owner with a long lease (SIGSTOPped: alive, not responding) is not
 * taken over, and the refusal says how long is left and names the way out.
 * Killed (SIGKILL), it is taken over at once, far sooner than its lease of
 * 60 s: its process on this host is gone (pid and process start time).
 */
static void test_dead_owner_on_this_host_is_taken_over_at_once(void)
{
	PGconn *conn = cbt_connect(db);
	long long dead, mark;
	double t0, took;
	pid_t pid;

	reset(conn);
	add_rows(conn, 100000);
	pid = ex_spawn("lock-dead.log", "run", "ledger", "d:long=1", "-chunk.size:long=10",
		       "--lease", "60", NULL);
	if (!cbt_wait_untilp(
		    conn, 60000,
		    "SELECT (count(*) >= 300)::int FROM ledger l JOIN batch_job_execution e USING "
		    "(job_execution_id) WHERE e.owner_id LIKE '%:' || $1::text || ':%'",
		    "ld", (long)pid)) {
		CBT_FAILF("the job never wrote 300 rows");
		kill(pid, SIGKILL);
		cbt_wait(pid);
		PQfinish(conn);
		return;
	}
	kill(pid, SIGSTOP);
	dead = execution_of(conn, pid);

	/* Alive: refused, with the time left and `unlock --force`. */
	mark = audit_mark(conn);
	CBT_EQ_LL(ex("run", "ledger", "d:long=2", NULL), 4);
	CBT_CONTAINS(errout, "lock 'ledger' is held by ");
	CBT_CONTAINS(errout, " s left): skipped; if its owner is gone, wait for the lease or run "
			     "`unlock ledger --force`");
	{
		char *left = strstr(errout, " s left)");
		char *open = left;

		while (open && open > errout && *open != '(')
			open--;
		if (!left || !open || atoi(open + 1) < 50 || atoi(open + 1) > 60)
			CBT_FAILF("the time left is not about 60 s: %s", errout);
	}
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), 1);
	CBT_EQ_LL(audit_count(conn, mark, "OWNER_DEAD_TAKEOVER"), 0);
	CBT_EQ_LL(cbt_queryp_ll(
			  conn,
			  "SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 "
			  "AND status = 'STARTED'",
			  "lld", dead),
		  1);

	/* Gone: taken over at once, audited, its execution buried and restarted. */
	kill(pid, SIGKILL);
	CBT_EQ_LL(cbt_wait(pid), 128 + SIGKILL);
	mark = audit_mark(conn);
	t0 = cbt_now();
	CBT_EQ_LL(ex("run", "ledger", "d:long=1", "--lease", "60", NULL), 0);
	took = cbt_now() - t0;
	if (took > 30)
		CBT_FAILF("the takeover of a dead owner took %.1f s (lease 60 s)", took);
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1 AND outcome = "
			"'OWNER_DEAD_TAKEOVER' AND detail LIKE 'owner %:' || $2::text || ':% is gone (its process "
			"on this host ended)%'",
			"lld ld", mark, (long)pid),
		1);
	CBT_EQ_LL(audit_count(conn, mark, "LEASE_EXPIRED_TAKEOVER"), 0);
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), 0);
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_job_execution WHERE job_execution_id = $1 AND "
			"status = 'FAILED' AND exit_message LIKE 'owner %:' || $2::text || ':% lost: its process on "
			"this host is gone%'",
			"lld ld", dead, (long)pid),
		1);
	CBT_EQ_LL(
		cbt_queryp_ll(
			conn,
			"SELECT count(*) FROM batch_job_execution WHERE restart_of = $1 AND status "
			"= 'COMPLETED'",
			"lld", dead),
		1);
	CBT_EQ_LL(ex("run", "ledger", "d:long=2", NULL), 0);
	assert_exactly_once(conn);
	CBT_EQ_LL(ex("metrics", NULL), 0);
	CBT_CONTAINS(out, "\ncbatch_lock_lease_expired_total 0\n");
	PQfinish(conn);
}

/* ---- 11. a fenced chunk whose heartbeat failed first (issue 8, item 13f) -------- */

/*
 * The lock is taken away while a chunk waits on a row lock: the heartbeat
 * notices first (HEARTBEAT_FAILED), then the chunk reaches its checkpoint and
 * is refused by the fence. Both are on record, and the chunk counts in
 * cbatch_fenced_chunk_total.
 */
static void test_fenced_chunk_counts_even_when_the_heartbeat_failed_first(void)
{
	PGconn *conn = cbt_connect(db), *gate;
	char text[65536];
	long long first, token, exec;
	pid_t pid;

	reset(conn);
	first = add_rows(conn, 20000);
	gate = cbt_connect(db);
	cbt_exec(gate, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(
			  gate,
			  "SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 FOR UPDATE) x",
			  "lld", first + 500),
		  1);
	pid = ex_spawn("lock-fenced-hb.log", "run", "ledger", "m:long=1", "-chunk.size:long=10",
		       "--lease", "1", NULL);
	if (!cbt_wait_until(conn, 60000, "SELECT (count(*) = 500)::int FROM ledger") ||
	    !cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the job did not get to its 51st chunk");
	exec = execution_of(conn, pid);
	token = cbt_queryp_ll(
		conn, "SELECT fencing_token FROM batch_lock WHERE lock_name = 'ledger'", "");
	/* Another owner now, as after a takeover that could not end the session. */
	cbt_exec(conn, "UPDATE batch_lock SET fencing_token = fencing_token + 1, owner_id = "
		       "'elsewhere:1:1:1:1:0' WHERE lock_name = 'ledger'");
	/* Its heartbeat has stopped beating (it beats every 1/3 s). */
	if (!cbt_wait_until(
		    conn, 30000,
		    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
		    "AND application_name = 'cbatch-heartbeat' AND state = 'idle' AND "
		    "clock_timestamp() - state_change > interval '1.5 s'"))
		CBT_FAILF("the heartbeat did not notice the loss");
	cbt_exec(gate, "COMMIT");
	PQfinish(gate);
	CBT_EQ_LL(cbt_wait_timeout(pid, 60000), 1);
	read_log("lock-fenced-hb.log", text, sizeof(text));
	CBT_CONTAINS(text, "fenced off");
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_lock_audit WHERE fencing_token = $1 AND "
			      "job_execution_id = $2 AND outcome = 'HEARTBEAT_FAILED'",
			      "lld lld", token, exec),
		1);
	CBT_EQ_LL(
		cbt_queryp_ll(conn,
			      "SELECT count(*) FROM batch_lock_audit WHERE fencing_token = $1 AND "
			      "job_execution_id = $2 AND outcome = 'FENCED'",
			      "lld lld", token, exec),
		1);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 500);
	CBT_EQ_LL(ex("metrics", NULL), 0);
	CBT_CONTAINS(out, "\ncbatch_fenced_chunk_total 1\n");
	CBT_CONTAINS(out, "\ncbatch_heartbeat_failure_total 1\n");
	PQfinish(conn);
}

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
	snprintf(path, sizeof(path), "%s/sql/001_initial.sql", cbt_source_dir());
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
static pid_t start_pgbouncer(const char *bin, const char *dir, int port, const char *mode,
			     const char *conninfo)
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
		"pool_mode = %s\nmax_client_conn = 100\ndefault_pool_size = 20\n"
		"ignore_startup_parameters = extra_float_digits\n",
		host ? host : "/tmp", pgport ? pgport : "5432", port, users, mode);
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
	for (int i = 0; i < 100 && PQping(conninfo) != PQPING_OK; i++)
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

static void stop_pgbouncer(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	cbt_wait_timeout(pid, 10000);
}

/*
 * Behind PgBouncer in transaction mode a partitioned run stops at once with
 * "transaction pooling is not supported" (exit 1: its execution FAILED,
 * restartable), ends no session (a pooled client's open transaction and a
 * direct one both live on), and leaves its lock released; behind PgBouncer
 * in session mode the restart and a new partitioned run complete. The
 * server also refuses a chunk checkpoint and a session record made from
 * another session than the connection's (CB003).
 */
static void test_transaction_pooling_is_refused_session_pooling_works(void)
{
	PGconn *conn = cbt_connect(db), *direct, *pooled_tx;
	char bin[PATH_MAX], dir[PATH_MAX], pooled[512], dbname[128], id[24];
	long long failed;
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
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_lock WHERE NOT released"), 0);
	failed = cbt_query_ll(conn, "SELECT job_execution_id FROM batch_job_execution WHERE "
				    "status = 'FAILED' AND exit_message LIKE "
				    "'%transaction pooling is not supported%'");
	CU_ASSERT(failed > 0);
	PQfinish(pooled_tx);
	stop_pgbouncer(pgb);

	pgb = start_pgbouncer(bin, dir, port, "session", pooled);
	CU_ASSERT_FATAL(pgb > 0);
	snprintf(id, sizeof(id), "%lld", failed);
	CBT_EQ_LL(ex_with(pooled, "restart", id, NULL), 0);
	add_rows(conn, 1000);
	CBT_EQ_LL(ex_with(pooled, "run", "ledger_partitioned", "run.id:long=2",
			  "-partition.threads:long=3", NULL),
		  0);
	stop_pgbouncer(pgb);
	/* Every account once (a partitioned run's manager repeats its
	 * partitions' counts, so no per-execution sum here). */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), 3000);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT account_id) FROM ledger"), 3000);
	PQfinish(direct);
	PQfinish(conn);
}

/* ---- lock scope ------------------------------------------------------------ */

/* The line of `jobs` that lists @p job (empty if none). */
static void jobs_line(const char *listing, const char *job, char *line, size_t size)
{
	size_t n = strlen(job);

	line[0] = '\0';
	for (const char *l = listing; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, job, n) == 0 && l[n] == ' ') {
			size_t len = strchr(l, '\n') ? (size_t)(strchr(l, '\n') - l) : strlen(l);

			snprintf(line, size, "%.*s", (int)(len < size ? len : size - 1), l);
			return;
		}
}

/*
 * The ledger's reader takes every unprocessed account whatever its
 * parameters, so it is declared job scope (cb_job_set_lock_scope): a second
 * instance started while one runs, and a restart of an old failed instance,
 * are skipped (exit 4, SKIPPED_HELD) with a message naming the holder and
 * the scope; `jobs` and `show` say the scope. The winner is held at a row
 * lock of ours, so it surely runs while the others try.
 */
static void test_job_scope_keeps_every_other_instance_out(void)
{
	PGconn *conn = cbt_connect(db);
	char old_exec[24], a_exec[24], owner[256], line[1024], text[8192];
	long long first, bad, mark;
	json_error_t jerr;
	json_t *v;
	pid_t a;
	int rc;

	reset(conn);
	first = add_rows(conn, 1000);
	/* An old instance that failed half-way: restartable. */
	bad = first + 450;
	CBT_EQ_LL(cbt_queryp_ll(conn, "UPDATE account SET amount = -5 WHERE id = $1 RETURNING 1",
				"lld", bad),
		  1);
	CBT_EQ_LL(ex("run", "ledger", "old:long=1", "-chunk.size:long=100", NULL), 1);
	snprintf(old_exec, sizeof(old_exec), "%lld",
		 cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution"));
	CBT_EQ_LL(cbt_queryp_ll(conn, "UPDATE account SET amount = 5 WHERE id = $1 RETURNING 1",
				"lld", bad),
		  1);
	mark = audit_mark(conn);

	cbt_exec(conn, "BEGIN");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM (SELECT 1 FROM account WHERE id = "
				     "(SELECT min(id) FROM account WHERE NOT processed) "
				     "FOR UPDATE) x"),
		  1);
	a = ex_spawn("lock-scope-a.log", "run", "ledger", "scope:long=1", "-chunk.size:long=100",
		     NULL);
	{
		PGconn *watch = cbt_connect(db);

		if (!cbt_wait_untilp(watch, 60000,
				     "SELECT count(*)::int FROM batch_job_execution WHERE status = "
				     "'STARTED' AND owner_id LIKE '%:' || $1::text || ':%'",
				     "ld", (long)a))
			CBT_FAILF("instance scope=1 did not start within 60 s");
		snprintf(a_exec, sizeof(a_exec), "%lld", execution_of(watch, a));
		cbt_query_str(watch, "SELECT owner_id FROM batch_lock WHERE lock_name = 'ledger'",
			      owner, sizeof(owner));
		PQfinish(watch);
	}
	/* Another instance: kept out, whatever its parameters. */
	CBT_EQ_LL(ex("run", "ledger", "scope:long=2", NULL), 4);
	CBT_CONTAINS(errout, "lock 'ledger' is held by ");
	CBT_CONTAINS(errout, owner);
	CBT_CONTAINS(errout, "lock scope job: one execution of job 'ledger' at a time, whatever "
			     "its parameters");
	/* The old instance's restart too. */
	CBT_EQ_LL(ex("restart", old_exec, NULL), 4);
	CBT_CONTAINS(errout, "lock scope job");
	/* `show` of the running execution names its lock and scope. */
	CBT_EQ_LL(ex("show", a_exec, NULL), 0);
	CBT_CONTAINS(out, "lock:");
	CBT_CONTAINS(out, "ledger (scope: job)");
	CBT_EQ_LL(ex("--json", "show", a_exec, NULL), 0);
	v = json_loads(out, 0, &jerr);
	CBT_EQ_STR(json_string_value(json_object_get(v, "lock_scope")), "job");
	CBT_EQ_STR(json_string_value(json_object_get(v, "lock_name")), "ledger");
	json_decref(v);
	cbt_exec(conn, "COMMIT");
	rc = cbt_wait_timeout(a, 120000);
	read_log("lock-scope-a.log", text, sizeof(text));
	if (rc != 0)
		CBT_FAILF("instance scope=1 exited %d: %s", rc, text);
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), 2);
	CBT_EQ_LL(audit_count(conn, mark, "ACQUIRED"), 1);
	/* One instance of the three ran; the old one restarts afterwards, to
	 * nothing left to do. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution"), 2);
	CBT_EQ_LL(ex("restart", old_exec, NULL), 0);
	assert_exactly_once(conn);

	/* The listing says each example's scope. */
	CBT_EQ_LL(ex("jobs", NULL), 0);
	CBT_CONTAINS(out, "LOCK");
	jobs_line(out, "ledger", line, sizeof(line));
	CBT_CONTAINS(line, " job ");
	jobs_line(out, "ledger_partitioned", line, sizeof(line));
	CBT_CONTAINS(line, "job (lock 'ledger')");
	jobs_line(out, "settlement", line, sizeof(line));
	CBT_CONTAINS(line, "custom ({job}:{targetDate})");
	jobs_line(out, "tick", line, sizeof(line));
	CBT_CONTAINS(line, " instance ");
	CBT_EQ_LL(ex("--json", "jobs", NULL), 0);
	v = json_loads(out, 0, &jerr);
	for (size_t i = 0; i < json_array_size(json_object_get(v, "jobs")); i++) {
		const json_t *j = json_array_get(json_object_get(v, "jobs"), i);
		const char *name = json_string_value(json_object_get(j, "name"));
		const char *scope = json_string_value(json_object_get(j, "lock_scope"));

		if (strcmp(name, "ledger") == 0 || strcmp(name, "outbox") == 0)
			CBT_EQ_STR(scope, "job");
		else if (strcmp(name, "tick") == 0)
			CBT_EQ_STR(scope, "instance");
		else if (strcmp(name, "settlement") == 0)
			CBT_EQ_STR(json_string_value(json_object_get(j, "lock_template")),
				   "{job}:{targetDate}");
	}
	json_decref(v);
	PQfinish(conn);
}

/*
 * The default, instance scope: two instances of tick (one per fire instant)
 * started at once both run, side by side, neither skipped.
 */
static void test_instance_scope_lets_two_instances_run_side_by_side(void)
{
	PGconn *conn = cbt_connect(db);
	long long mark;
	pid_t p1, p2;

	reset(conn);
	CBT_EQ_LL(ex("example-setup", "tick", NULL), 0);
	mark = audit_mark(conn);
	p1 = ex_spawn("lock-scope-t1.log", "run", "tick", "at=one", "-sleepMs:long=1500", NULL);
	p2 = ex_spawn("lock-scope-t2.log", "run", "tick", "at=two", "-sleepMs:long=1500", NULL);
	CBT_EQ_LL(cbt_wait_timeout(p1, 60000), 0);
	CBT_EQ_LL(cbt_wait_timeout(p2, 60000), 0);
	CBT_EQ_LL(audit_count(conn, mark, "SKIPPED_HELD"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(DISTINCT fired_for) FROM tick_log"), 2);
	/* They overlapped in time: each started before the other ended. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT (max(start_time) < min(end_time))::int FROM "
				     "batch_job_execution"),
		  1);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "contention: 2 then 8 launch at once, one runs, the rest skip",
	  test_contention_exactly_one_runs_the_rest_skip },
	{ "SIGKILL at random points, takeover after the lease",
	  test_sigkill_at_random_points_then_takeover_after_the_lease },
	{ "zombie woken after a takeover is fenced and commits nothing",
	  test_zombie_woken_after_takeover_is_fenced_and_commits_nothing },
	{ "heartbeat keeps a chunk longer than the lease alive",
	  test_heartbeat_keeps_a_chunk_longer_than_the_lease_alive },
	{ "cut heartbeat connection stops the job", test_cut_heartbeat_connection_stops_the_job },
	{ "lock at least for, then force unlock", test_lock_at_least_for_then_force_unlock },
	{ "clock skew neither steals nor keeps a lock",
	  test_clock_skew_neither_steals_nor_keeps_a_lock },
	{ "terminated job backend fails cleanly; restart completes",
	  test_terminated_job_backend_fails_cleanly_and_restart_completes },
	{ "frozen owner inside a chunk is ended by the takeover",
	  test_frozen_owner_inside_a_chunk_is_ended_by_the_takeover },
	{ "frozen owner whose session cannot be ended bounds the launch",
	  test_frozen_owner_whose_session_cannot_be_ended_bounds_the_launch },
	{ "dead owner on this host is taken over at once",
	  test_dead_owner_on_this_host_is_taken_over_at_once },
	{ "fenced chunk counts even when the heartbeat failed first",
	  test_fenced_chunk_counts_even_when_the_heartbeat_failed_first },
	{ "schema upgrade from version 1 keeps locks and audit",
	  test_schema_upgrade_from_version_1_keeps_locks_and_audit },
	{ "transaction pooling is refused, session pooling works",
	  test_transaction_pooling_is_refused_session_pooling_works },
	{ "lock scope job: another instance and an old restart are skipped",
	  test_job_scope_keeps_every_other_instance_out },
	{ "lock scope instance: two instances run side by side",
	  test_instance_scope_lets_two_instances_run_side_by_side },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);

	if (n > 0)
		self_exe[n] = '\0';
	else
		snprintf(self_exe, sizeof(self_exe), "%s", argv[0]);
	if (argc == 4 && strcmp(argv[1], "--probe") == 0)
		return probe_main(argv[2], argv[3]);
	/* `integration_test_lock WORD`: only the tests whose name contains WORD
	 * (--list and --run NAME are the harness's). */
	if (argc == 2 && argv[1][0] != '-') {
		static CU_TestInfo some[sizeof(tests) / sizeof(tests[0])];
		size_t k = 0;

		for (const CU_TestInfo *t = tests; t->pName; t++)
			if (strstr(t->pName, argv[1]))
				some[k++] = *t;
		some[k] = (CU_TestInfo)CU_TEST_INFO_NULL;
		return cbt_main("lock", init, clean, some);
	}
	return cbt_main("lock", init, clean, tests);
}
