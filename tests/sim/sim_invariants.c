/*
 * The invariants, checked after every step: SQL over the repository and the
 * data, read by the simulator's own session at the virtual time, and the
 * simulator's own record of what it saw commit. Each has a name (what a
 * violation prints) and says, in its message, which row broke it.
 *
 *   token-order      fencing tokens strictly increase per lock name, in the
 *                    order the audit recorded the owners (acquired or taken
 *                    over), and no lock row's token ever goes back below
 *                    one already seen for its name (never reused after
 *                    cleanup or supersede)
 *   one-holder       at most one live execution of a lock name whose lock it
 *                    still holds (name and token, lease live): one live
 *                    holder, and one live execution of the job (job scope)
 *   fenced-chunk     every committed chunk was checkpointed under the token
 *                    that was current when it committed
 *   instant-once     each fire instant of a schedule claimed at most once
 *                    (also: none inside a run of skipped instants, sql/021)
 *   skip-overlap     a firing launched (overlap SKIP) while no other firing of
 *                    its schedule lived (batch_schedule_live_firing, at once)
 *   recovery-bounded no firing restarted more often than its schedule's
 *                    recover_attempts
 *   one-live-exec    never two live executions of one instance
 *   no-double-apply  each run's target equals the sum of its items marked
 *                    done, of its committed chunks, and of what the
 *                    simulator saw commit
 *   liveness         once faults stop, every execution ends and every run
 *                    completes (or was abandoned) within the quiet steps
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo.h"
#include "sim.h"

static int fail(sim *s, const char *name, const char *msg)
{
	snprintf(s->invariant, sizeof(s->invariant), "%s", name);
	snprintf(s->violation, sizeof(s->violation), "%s", msg);
	return -1;
}

/* A query whose rows are violations: the first row's columns, joined. */
static int none(sim *s, const char *name, const char *sql)
{
	PGresult *res = sim_q(s, sql, 0, NULL);
	char msg[SIM_MSG] = "";
	int bad;

	if (!res)
		return fail(s, "query", sql);
	bad = PQntuples(res) > 0;
	if (bad)
		snprintf(msg, sizeof(msg), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return bad ? fail(s, name, msg) : 0;
}

static void set_time(sim *s)
{
	char secs[32];
	const char *v[2] = { s->epoch, secs };

	sim_proc_time(s, NULL, secs, sizeof(secs));
	PQclear(sim_q(s,
		      "SELECT set_config('cbatch.virtual_now', ($1::timestamptz + "
		      "make_interval(secs => $2::float8))::text, false)",
		      2, v));
}

int sim_check(sim *s)
{
	PGresult *res;
	long long tok;

	set_time(s);
	if (none(s, "token-order",
		 "SELECT format('lock %s: token %s (audit %s) after token %s', lock_name, "
		 "fencing_token, audit_id, prev) FROM (SELECT lock_name, audit_id, fencing_token, "
		 "lag(fencing_token) OVER (PARTITION BY lock_name ORDER BY audit_id) AS prev "
		 "FROM batch_lock_audit WHERE outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER', "
		 "'OWNER_DEAD_TAKEOVER')) a WHERE fencing_token <= prev LIMIT 1") < 0)
		return -1;
	/* Every lock name's token, never below one seen before (a row removed by
	 * cleanup or supersede and made again included). */
	if (none(s, "token-order",
		 "SELECT format('lock %s carries token %s after %s was seen', l.lock_name, "
		 "l.fencing_token, t.token) FROM batch_lock l JOIN sim_token_seen t "
		 "USING (lock_name) WHERE l.fencing_token < t.token LIMIT 1") < 0)
		return -1;
	PQclear(sim_q(s,
		      "INSERT INTO sim_token_seen (lock_name, token) SELECT lock_name, "
		      "fencing_token FROM batch_lock ON CONFLICT (lock_name) DO UPDATE "
		      "SET token = greatest(sim_token_seen.token, excluded.token)",
		      0, NULL));
	tok = sim_q_ll(s,
		       "SELECT coalesce(max(fencing_token), 0) FROM batch_lock "
		       "WHERE lock_name = '" SIM_LOCK "'",
		       0, NULL);
	if (tok > 0 && tok < s->max_token) {
		char m[128];

		snprintf(m, sizeof(m), "lock %s carries token %lld after %lld was seen", SIM_LOCK,
			 tok, s->max_token);
		return fail(s, "token-order", m);
	}
	if (tok > s->max_token)
		s->max_token = tok;
	if (none(s, "one-holder",
		 "SELECT format('lock %s: live executions %s hold it', e.lock_name, "
		 "string_agg(e.job_execution_id::text, ', ')) FROM batch_job_execution e "
		 "WHERE batch_status_is_live(e.status) AND NOT " CB__OWNER_LOST_SQL(
			 "e") " GROUP BY e.lock_name HAVING count(*) > 1") < 0)
		return -1;
	if (none(s, "fenced-chunk",
		 "SELECT format('chunk %s of execution %s committed under token %s of lock %s "
		 "while it carried %s', chunk_id, job_execution_id, token, lock_name, "
		 "coalesce(cur_token::text, 'none')) FROM sim_chunk WHERE cur_token IS DISTINCT FROM token "
		 "ORDER BY chunk_id LIMIT 1") < 0)
		return -1;
	if (none(s, "one-live-exec",
		 "SELECT format('instance %s: live executions %s', job_instance_id, "
		 "string_agg(job_execution_id::text, ', ')) FROM batch_job_execution "
		 "WHERE batch_status_is_live(status) GROUP BY job_instance_id "
		 "HAVING count(*) > 1") < 0)
		return -1;
	if (none(s, "no-double-apply",
		 "SELECT format('run %s: target %s, items done %s, chunks %s', i.run, "
		 "coalesce(t.total, 0), i.done, coalesce(c.amount, 0)) FROM (SELECT run, "
		 "coalesce(sum(amount) FILTER (WHERE status = 'done'), 0) AS done FROM sim_item "
		 "GROUP BY run) i LEFT JOIN sim_total t USING (run) LEFT JOIN (SELECT run, "
		 "sum(amount) AS amount FROM sim_chunk GROUP BY run) c USING (run) "
		 "WHERE coalesce(t.total, 0) <> i.done OR coalesce(c.amount, 0) <> i.done "
		 "ORDER BY i.run LIMIT 1") < 0)
		return -1;
	if (none(s, "instant-once",
		 "SELECT format('schedule %s: instant %s claimed %s times', schedule_id, fire_time, "
		 "count(*)) FROM batch_schedule_firing GROUP BY schedule_id, fire_time "
		 "HAVING count(*) > 1 LIMIT 1") < 0)
		return -1;
	/* A run of skipped instants (sql/021) stands for each of them: none of
	 * them has a firing of its own. */
	if (none(s, "instant-once-in-runs",
		 "SELECT format('schedule %s: instant %s claimed again inside the run of skips %s', "
		 "f.schedule_id, f.fire_time, r.firing_id) FROM batch_schedule_firing r JOIN "
		 "batch_schedule_firing f ON f.schedule_id = r.schedule_id AND f.fire_time > "
		 "r.fire_time AND f.fire_time <= r.last_instant WHERE r.last_instant IS NOT NULL "
		 "LIMIT 1") < 0)
		return -1;
	if (none(s, "recovery-bounded",
		 "SELECT format('firing %s: restart attempt %s of at most %s', f.firing_id, "
		 "f.attempt, b.recover_attempts) FROM batch_schedule_firing f JOIN batch_schedule b "
		 "USING (schedule_id) WHERE f.attempt > b.recover_attempts LIMIT 1") < 0)
		return -1;
	if (s->launched_firing) {
		/* Launched under overlap SKIP: no other firing of its schedule lived. */
		char id[24], m[SIM_MSG];
		const char *v[1] = { id };

		snprintf(id, sizeof(id), "%lld", s->launched_firing);
		res = sim_q(s,
			    "SELECT l.why FROM batch_schedule_firing f, LATERAL "
			    "batch_schedule_live_firing(f.schedule_id, f.firing_id) l "
			    "WHERE f.firing_id = $1::bigint AND l.firing_id IS NOT NULL",
			    1, v);
		if (!res)
			return fail(s, "query", "live firing");
		if (PQntuples(res) > 0) {
			snprintf(m, sizeof(m), "firing %s launched under SKIP while %.400s", id,
				 PQgetvalue(res, 0, 0));
			PQclear(res);
			return fail(s, "skip-overlap", m);
		}
		PQclear(res);
	}
	res = sim_q(s, "SELECT run, coalesce(total, 0) FROM sim_total ORDER BY run", 0, NULL);
	if (!res)
		return fail(s, "query", "sim_total");
	for (int i = 0; i < PQntuples(res); i++) {
		int run = atoi(PQgetvalue(res, i, 0));
		long long total = atoll(PQgetvalue(res, i, 1));

		if (run >= 1 && run <= SIM_RUNS && total != s->committed[run]) {
			char m[160];

			snprintf(m, sizeof(m), "run %d: target %lld, the simulator saw %lld commit",
				 run, total, s->committed[run]);
			PQclear(res);
			return fail(s, "no-double-apply", m);
		}
	}
	PQclear(res);
	return 0;
}

int sim_check_live(sim *s, int final)
{
	PGresult *res;
	int ok;
	char m[SIM_MSG];

	set_time(s);
	res = sim_q(
		s,
		"SELECT (SELECT count(*) FROM batch_job_execution "
		" WHERE batch_status_is_live(status)) + (SELECT count(*) FROM "
		" batch_schedule_firing WHERE status IN ('CLAIMED', 'LAUNCHED')), "
		"(SELECT count(DISTINCT run) FROM sim_item i WHERE NOT EXISTS (" SIM_RUN_ENDED
		") AND EXISTS (SELECT 1 FROM batch_job_instance ji WHERE ji.job_name = '" SIM_JOB
		"' AND ji.job_key = lpad(i.run::text, 32, '0')))",
		0, NULL);
	if (!res)
		return fail(s, "query", "liveness");
	ok = atoll(PQgetvalue(res, 0, 0)) == 0 && atoll(PQgetvalue(res, 0, 1)) == 0;
	snprintf(
		m, sizeof(m),
		"after the quiet steps: %s live execution(s) or firing(s), %s run(s) begun, neither complete nor "
		"abandoned",
		PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	PQclear(res);
	if (!ok && final) {
		/* Name them. */
		res = sim_q(
			s,
			"SELECT coalesce(string_agg(x, '; '), '') FROM (SELECT format("
			"'execution %s of %s %s owner %s', e.job_execution_id, i.job_name, "
			"e.status, e.owner_id) AS x FROM batch_job_execution e JOIN "
			"batch_job_instance i USING (job_instance_id) WHERE "
			"batch_status_is_live(e.status) UNION ALL SELECT format('firing %s %s node %s "
			"recover_after %s', firing_id, status, node_id, recover_after) FROM "
			"batch_schedule_firing WHERE status IN ('CLAIMED', 'LAUNCHED')) q",
			0, NULL);
		if (res) {
			size_t l = strlen(m);

			snprintf(m + l, sizeof(m) - l, ": %.300s", PQgetvalue(res, 0, 0));
			PQclear(res);
		}
		return fail(s, "liveness", m);
	}
	return ok ? 0 : -1;
}
