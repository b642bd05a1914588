/*
 * Duplicate-run protection (issue 8, items 3 and 4): owners that stopped
 * answering. A frozen owner inside its chunk transaction is ended by the
 * takeover (or, when its session cannot be ended, bounds the launch); a dead
 * owner on this host is taken over at once (test_lock.c for the rest).
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

/* ---- 9. a frozen owner inside its chunk transaction (issue 8, item 3) ---------- */

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

static const CU_TestInfo tests[] = {
	{ "frozen owner inside a chunk is ended by the takeover",
	  test_frozen_owner_inside_a_chunk_is_ended_by_the_takeover },
	{ "frozen owner whose session cannot be ended bounds the launch",
	  test_frozen_owner_whose_session_cannot_be_ended_bounds_the_launch },
	{ "dead owner on this host is taken over at once",
	  test_dead_owner_on_this_host_is_taken_over_at_once },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	return lock_main(argc, argv, "lock_owner", tests, sizeof(tests) / sizeof(tests[0]));
}
