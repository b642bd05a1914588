/*
 * Duplicate-run protection (issue 4) with real processes against a real
 * PostgreSQL, the lock and its lease: racing launches, SIGKILL and lease
 * takeover, a SIGSTOPped zombie that wakes after a takeover, lock-at-least-for
 * and force unlock, clock skew (faketime), and the lock scope (job scope keeps
 * every other instance out; instance scope does not). The heartbeat, frozen
 * and dead owners, and deployment (schema upgrade, poolers) are in
 * test_lock_heartbeat.c, test_lock_owner.c and test_lock_deploy.c.
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
#include <regex.h>
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
 * A run's input is bounded by its high-water mark (guarantee 9): rows added
 * with larger keys would not be the zombie's work. So the fresh rows are
 * 5,000 accounts held back from the zombie's input below its largest key (a
 * gap in the ids), put back after the takeover.
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
	/* 20,000 rows at 10 ms a chunk of 10: 20 s at least, far more than it
	 * needs to write 300 (the taker, without the throttle, runs fast). With
	 * new work, 5,000 of them, below the largest, wait aside until the
	 * zombie wakes. */
	add_rows(conn, new_work ? 25000 : 20000);
	if (new_work)
		cbt_exec(conn, "CREATE TABLE IF NOT EXISTS zombie_gap (LIKE account); "
			       "WITH d AS (DELETE FROM account WHERE id IN (SELECT id FROM account "
			       "ORDER BY id DESC OFFSET 1 LIMIT 5000) RETURNING *) "
			       "INSERT INTO zombie_gap SELECT * FROM d");
	pid = ex_spawn_with(NULL, zombie_db, log, "run", "ledger", zparam, "-chunk.size:long=10",
			    "-sleepMs:long=10", "--lease", "1", NULL);
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
	/* New work, so that the zombie has something it could still write:
	 * within its bound, after its position. */
	if (new_work)
		cbt_exec(conn, "INSERT INTO account SELECT * FROM zombie_gap; TRUNCATE zombie_gap");

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

		/* Throttled (20 s at least): still running when it is killed. */
		add_rows(conn, 20000);
		snprintf(param, sizeof(param), "s:long=%d", 2 + i);
		snprintf(log, sizeof(log), "lock-skew-%d.log", i);
		cbt_faketime_prefix(prefix, asan, sizeof(asan), offsets[i]);
		wrapper = ex_spawn_with(prefix, db, log, "run", "ledger", param,
					"-chunk.size:long=10", "-sleepMs:long=10", "--lease", "1",
					NULL);
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
	{
		/* the lease's end in ISO 8601 with its zone, not the server's format */
		regex_t re;

		CBT_EQ_LL(regcomp(&re,
				  " until [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z "
				  "\\([0-9]+ s left\\)",
				  REG_EXTENDED | REG_NOSUB),
			  0);
		if (regexec(&re, errout, 0, NULL, 0) != 0)
			CBT_FAILF("the lease's end is not ISO 8601 UTC: %s", errout);
		regfree(&re);
	}
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
	PGconn *conn = cbt_connect(db), *holder = cbt_connect(db);
	long long mark;
	pid_t p1, p2;

	reset(conn);
	CBT_EQ_LL(ex("example-setup", "tick", NULL), 0);
	mark = audit_mark(conn);
	/* Neither can write its row (and end) until both have started, however
	 * far apart a loaded machine starts the two processes. */
	cbt_exec(holder, "BEGIN; LOCK TABLE tick_log IN SHARE MODE");
	p1 = ex_spawn("lock-scope-t1.log", "run", "tick", "at=one", "-sleepMs:long=1500", NULL);
	p2 = ex_spawn("lock-scope-t2.log", "run", "tick", "at=two", "-sleepMs:long=1500", NULL);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) = 2)::int FROM batch_job_execution "
			    "WHERE status = 'STARTED'"))
		CBT_FAILF("the two instances did not both start (one skipped or failed?)");
	cbt_exec(holder, "COMMIT");
	PQfinish(holder);
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

/*
 * A launch or restart whose refusal needs no lock is refused without one:
 * an instance already complete, an execution that is not the newest. They
 * used to take and give back the lock, leaving ACQUIRED/RELEASED audit rows
 * of no execution and counting in cbatch_lock_acquire_success_total.
 */
static void test_refusals_that_need_no_lock_take_none(void)
{
	PGconn *conn = cbt_connect(db);
	long long mark, first, second;
	char id[24];

	reset(conn);
	CBT_EQ_LL(ex("example-setup", "tick", NULL), 0);
	CBT_EQ_LL(ex("run", "tick", "at=refusal", "-fail:long=1", NULL), 1);
	first = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	CBT_EQ_LL(ex("run", "tick", "at=refusal", NULL), 0);
	second = cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
	CU_ASSERT(second > first);
	mark = audit_mark(conn);
	/* already complete: exit 3 */
	CBT_EQ_LL(ex("run", "tick", "at=refusal", NULL), 3);
	CBT_CONTAINS(errout, "is already complete");
	/* not the newest execution of its instance: exit 2 */
	snprintf(id, sizeof(id), "%lld", first);
	CBT_EQ_LL(ex("restart", id, NULL), 2);
	CBT_CONTAINS(errout, "is not the newest execution of its instance");
	CBT_EQ_LL(cbt_queryp_ll(conn, "SELECT count(*) FROM batch_lock_audit WHERE audit_id > $1",
				"lld", mark),
		  0);
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "refusals that need no lock take none", test_refusals_that_need_no_lock_take_none },
	{ "contention: 2 then 8 launch at once, one runs, the rest skip",
	  test_contention_exactly_one_runs_the_rest_skip },
	{ "SIGKILL at random points, takeover after the lease",
	  test_sigkill_at_random_points_then_takeover_after_the_lease },
	{ "zombie woken after a takeover is fenced and commits nothing",
	  test_zombie_woken_after_takeover_is_fenced_and_commits_nothing },
	{ "lock at least for, then force unlock", test_lock_at_least_for_then_force_unlock },
	{ "clock skew neither steals nor keeps a lock",
	  test_clock_skew_neither_steals_nor_keeps_a_lock },
	{ "lock scope job: another instance and an old restart are skipped",
	  test_job_scope_keeps_every_other_instance_out },
	{ "lock scope instance: two instances run side by side",
	  test_instance_scope_lets_two_instances_run_side_by_side },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	return lock_main(argc, argv, "lock", tests, sizeof(tests) / sizeof(tests[0]));
}
