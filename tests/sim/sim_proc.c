/*
 * The simulated processes. Each is a state machine (sim.h, enum sim_state)
 * whose actions are the engine's own repository calls (repository/: the
 * lock, the launch, the step, the checkpoint's statement, stop, abandon,
 * force-unlock), run on the process's own connection by a thread of its own,
 * so that a call blocked on another process's row lock keeps only that
 * process waiting. The simulator posts an action and settles: it waits until
 * the action is done or its backend is blocked on a lock (pg_blocking_pids:
 * the lock manager's own state, not a timeout), so a step's outcome does not
 * depend on the machine's speed. Calls that resolve a block by themselves
 * (batch_lock_acquire and batch_lock_force_unlock wait 200 ms at a time and
 * end a frozen owner's session) are waited for to the end.
 *
 * The data: an accumulating job. Items (sim_item: run, amount, status) move
 * 'new' -> 'done' by a strict transition; their amounts are added into
 * sim_total(run); the chunk's transaction also checkpoints under the fence
 * and logs itself (sim_chunk: the token it wrote under, and the lock row's
 * token read FOR SHARE at its end, which no takeover can change before the
 * commit). DESIGN.md "The chunk transaction".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <cbatch.h>

#include "repo.h"
#include "schedule_repo.h"
#include "sim.h"

enum action {
	A_NOTHING,
	A_ACQUIRE,
	A_LAUNCH,
	A_HEARTBEAT,
	A_CHUNK,
	A_CHUNK_OPEN,
	A_COMMIT,
	A_STOP,
	A_ABANDON,
	A_FORCE_UNLOCK,
	A_CLAIM,
	A_POLL,
	A_FIRE,
	A_FIRE_END,
	A_FIRE_BEAT,
	A_CLEANUP,
};

static const char *const action_names[] = {
	"nothing", "acquire",  "launch",    "heartbeat",    "chunk", "chunk-open",
	"commit",  "stop",     "abandon",   "force-unlock", "claim", "poll",
	"fire",    "fire-end", "node-beat", "cleanup",
};

static void say(sim_proc *p, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(p->result);

	if (n + 2 < sizeof(p->result))
		snprintf(p->result + n, sizeof(p->result) - n, n ? "; " : "%s", "");
	n = strlen(p->result);
	snprintf(p->result + n, sizeof(p->result) - n, fmt, a ? a : "", b ? b : "");
}

/* One statement on the process's connection; NULL (and said) on error. */
static PGresult *q(sim_proc *p, const char *sql, int n, const char *const *v, char *sqlstate)
{
	PGresult *res = PQexecParams(p->conn, sql, n, NULL, v, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (sqlstate)
		sqlstate[0] = '\0';
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return res;
	if (sqlstate) {
		const char *c = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		snprintf(sqlstate, 6, "%s", c ? c : "conn");
	}
	{
		char m[200];
		const char *e = PQresultErrorMessage(res);

		snprintf(m, sizeof(m), "%.*s", (int)strcspn(e, "\n"), e);
		say(p, "error: %s%s", m, "");
	}
	PQclear(res);
	return NULL;
}

static void cmd(sim_proc *p, const char *sql)
{
	PGresult *res = q(p, sql, 0, NULL, NULL);

	PQclear(res);
}

void sim_proc_time(const sim *s, const sim_proc *p, char *out, size_t size)
{
	snprintf(out, size, "%.3f", s->vnow + (p ? p->skew : 0));
}

static void set_time(sim *s, sim_proc *p)
{
	char secs[32];
	const char *v[2] = { s->epoch, secs };

	sim_proc_time(s, p, secs, sizeof(secs));
	PQclear(q(p,
		  "SELECT set_config('cbatch.virtual_now', ($1::timestamptz + "
		  "make_interval(secs => $2::float8))::text, false)",
		  2, v, NULL));
}

static void sayerr(sim_proc *p, const char *what, const cb_error *err)
{
	say(p, "%s: %s", what, err->message);
}

static void release(sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;

	if (cb__lock_release(p->conn, p->lock, p->owner, p->ltoken, 0, p->exec_id, &err) < 0)
		sayerr(p, "release", &err);
	else
		say(p, "released %s%s", "", "");
	p->state = S_IDLE;
	p->exec_id = p->step_id = 0;
}

/* The execution ends (status), the lock is released. */
static void finish(sim_proc *p, cb_status st)
{
	cb_error err = CB_ERROR_INIT;

	if (cb__repo_step_finish(p->conn, p->step_id, st, cb_status_name(st), "", 0, &err) < 0)
		sayerr(p, "step finish", &err);
	cb_error_clear(&err);
	if (cb__repo_job_finish(p->conn, p->exec_id, st, cb_status_name(st), "sim", "SIGNAL",
				&err) < 0)
		sayerr(p, "job finish", &err);
	else
		say(p, "ended %s%s", cb_status_name(st), "");
	release(p);
}

/* A worker's partition ends (status), its lock released, only while its
 * claim's token is current. */
static void part_finish(sim_proc *p, const char *status)
{
	cb_error err = CB_ERROR_INIT;
	cb__claim c;
	int ours = 0;

	memset(&c, 0, sizeof(c));
	c.step_execution_id = p->step_id;
	c.fencing_token = p->ltoken;
	if (cb__repo_partition_finish(&ours, p->conn, &c, p->owner, status, status, "", 0, &err) <
	    0)
		sayerr(p, "partition finish", &err);
	else
		say(p, "partition %s%s", ours ? status : "no longer ours", "");
	p->state = S_IDLE;
	p->part = -1;
	p->exec_id = p->step_id = 0;
}

/* It lost its lock: the engine ends its execution FAILED (refused when
 * another process already buried it) and stops; a worker drops its partition. */
static void lost(sim_proc *p, const char *why)
{
	cb_error err = CB_ERROR_INIT;

	say(p, "lost the lock (%s)%s", why, "");
	if (p->part >= 0) {
		p->state = S_IDLE;
		p->part = -1;
		p->exec_id = p->step_id = 0;
		return;
	}
	if (p->exec_id && cb__repo_job_finish(p->conn, p->exec_id, CB_STATUS_FAILED, "FAILED", why,
					      NULL, &err) < 0)
		sayerr(p, "job finish", &err);
	p->state = S_IDLE;
	p->exec_id = p->step_id = 0;
}

static void do_acquire(sim *s, sim_proc *p)
{
	cb__lock_grant g;
	cb_error err = CB_ERROR_INIT;
	char t[24];

	(void)s;
	if (cb__lock_acquire(&g, p->conn, SIM_LOCK, p->owner, SIM_LEASE, &err) < 0) {
		sayerr(p, "acquire", &err);
		return;
	}
	if (g.outcome == CB__LOCK_HELD) {
		say(p, "held by %s%s", g.holder, "");
		return;
	}
	p->token = p->ltoken = g.fencing_token;
	snprintf(p->lock, sizeof(p->lock), "%s", SIM_LOCK);
	p->part = -1;
	p->state = S_LOCKED;
	snprintf(t, sizeof(t), "%lld", g.fencing_token);
	say(p, "%s token %s", g.outcome == CB__LOCK_ACQUIRED ? "acquired" : "took over", t);
}

static void do_launch(sim *s, sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;
	cb__launch l;
	cb_params *params = NULL;
	cb_status st;
	json_t *ctx;
	PGresult *res;
	char key[40], id[24];
	int rc;

	/* The lowest run that no execution completed or abandoned; once the
	 * faults stopped, only a run already begun (no new work: liveness). */
	res = q(p,
		s->quiet_now ?
			"SELECT min(i.run) FROM sim_item i WHERE NOT EXISTS (" SIM_RUN_ENDED
			") AND EXISTS (SELECT 1 FROM batch_job_instance ji WHERE ji.job_name = '" SIM_JOB
			"' AND ji.job_key = lpad(i.run::text, 32, '0'))" :
			"SELECT min(i.run) FROM sim_item i WHERE NOT EXISTS (" SIM_RUN_ENDED ")",
		0, NULL, NULL);
	if (!res || PQgetisnull(res, 0, 0)) {
		PQclear(res);
		say(p, "nothing to run%s%s", "", "");
		release(p);
		return;
	}
	p->run = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	snprintf(key, sizeof(key), "%032lld", p->run);
	if (cb_params_new(&params, &err) < 0) {
		sayerr(p, "params", &err);
		return;
	}
	rc = cb__repo_launch(&l, p->conn, SIM_JOB, key, params, 1, p->owner, 0, SIM_LOCK, p->token,
			     NULL, &err);
	cb_params_free(params);
	if (rc < 0) {
		sayerr(p, "launch", &err);
		release(p);
		return;
	}
	p->exec_id = l.job_execution_id;
	snprintf(id, sizeof(id), "%lld", p->exec_id);
	say(p, "launched execution %s%s", id, l.restart_of ? " (restart)" : "");
	if (cb__repo_job_started(&st, p->conn, p->exec_id, &err) < 0) {
		sayerr(p, "start", &err);
		lost(p, "not started");
		return;
	}
	if (st == CB_STATUS_STOPPING) {
		finish(p, CB_STATUS_STOPPED);
		return;
	}
	ctx = json_object();
	if (SIM_PARTITIONED(p->run)) {
		/* The manager: its partitions, one per part of the run's items,
		 * after those of an earlier execution were superseded. */
		json_t *parts = json_array();

		for (int i = 0; i < SIM_PARTS; i++)
			json_array_append_new(parts,
					      json_pack("{s:i, s:{}}", "index", i, "context"));
		rc = cb__repo_partitions_supersede(p->conn, l.job_instance_id, "m", &err);
		if (rc == 0)
			rc = cb__repo_partitions_create(&p->step_id, p->conn, p->exec_id, "m", ctx,
							parts, NULL, &err);
		json_decref(parts);
		json_decref(ctx);
		if (rc < 0) {
			sayerr(p, "partitions", &err);
			lost(p, "no partitions");
			return;
		}
		say(p, "made %s partitions%s", CB_SIM_STR(SIM_PARTS), "");
		p->state = S_MANAGING;
		return;
	}
	rc = cb__repo_step_create(&p->step_id, p->conn, p->exec_id, "s1", ctx, &err);
	json_decref(ctx);
	if (rc == 0) {
		json_t *saved = NULL;

		rc = cb__repo_step_state(&p->version, &saved, p->conn, p->step_id, &err);
		json_decref(saved);
	}
	if (rc < 0) {
		sayerr(p, "step", &err);
		lost(p, "no step");
		return;
	}
	p->state = S_RUNNING;
}

static void do_heartbeat(sim *s, sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;
	int alive = 0;

	if (cb__lock_heartbeat(&alive, p->conn, p->lock, p->owner, p->ltoken, SIM_LEASE,
			       p->part >= 0 ? 0 : p->exec_id, &err) < 0) {
		sayerr(p, "heartbeat", &err);
		return;
	}
	if (alive) {
		say(p, "heartbeat ok%s%s", "", "");
	} else if (s->bug == BUG_IGNORE_LOST) {
		say(p, "heartbeat lost, ignored (bug)%s%s", "", "");
	} else {
		lost(p, "heartbeat failed");
	}
}

static void commit(sim *s, sim_proc *p, int stopping)
{
	char code[8];
	PGresult *res = q(p, "COMMIT", 0, NULL, code);

	if (!res) {
		p->state = S_RUNNING;
		return;
	}
	PQclear(res);
	s->committed[p->run] += p->chunk_sum;
	p->version++;
	p->state = S_RUNNING;
	say(p, "committed%s%s", "", "");
	if (stopping && p->part >= 0)
		part_finish(p, "STOPPED");
	else if (stopping)
		finish(p, CB_STATUS_STOPPED);
}

static void rollback(sim_proc *p)
{
	PQclear(PQexec(p->conn, "ROLLBACK"));
	p->state = S_RUNNING;
}

/* The work-queue reader's end-of-input check (readers/pg_queue.c,
 * look_at_locked): the xmax of every row still matching, then
 * batch_queue_holders. 'd' done, 'c' claim again, 'w' wait. */
static char queue_end(sim_proc *p, const char *run)
{
	char step[24], exec[24], verdict;
	const char *v[3] = { run, exec, step };
	PGresult *res;

	snprintf(exec, sizeof(exec), "%lld", p->exec_id);
	snprintf(step, sizeof(step), "%lld", p->step_id);
	res = q(p,
		"WITH x AS (SELECT DISTINCT xmax::text AS x FROM sim_item WHERE run = $1::int "
		"AND status = 'new') SELECT verdict FROM batch_queue_holders((SELECT "
		"coalesce(array_agg(x), '{}') FROM x), $2::bigint, $3::bigint)",
		3, v, NULL);
	if (!res)
		return 'w';
	verdict = PQgetvalue(res, 0, 0)[0];
	PQclear(res);
	return verdict;
}

/* One chunk: page, strict transition, add into the target, checkpoint under
 * the fence, log; then COMMIT (or leave the transaction open: open). */
static void do_chunk(sim *s, sim_proc *p, int open)
{
	char run[24], part[8], step[24], ver[24], exec[24], tok[24], lease[24], n[8], sum[24];
	char ctxj[64];
	char pidbuf[16], code[8], ids[256] = "{";
	const char *start = NULL;
	cb_error err = CB_ERROR_INIT;
	PGresult *res;
	int spid = 0, page, stopping, queue = p->part >= 0 && SIM_QUEUE(p->run);
	long long total = 0;

	snprintf(run, sizeof(run), "%lld", p->run);
	snprintf(part, sizeof(part), "%d", p->part);
	if (cb__conn_session(&spid, &start, p->conn, &err) < 0) {
		sayerr(p, "session", &err);
		return;
	}
	cmd(p, "BEGIN");
	{
		const char *v[2] = { run, part };

		/* A queue run's workers all drain the run's items, as the work-queue
		 * reader claims them (readers/pg_queue.c: FOR UPDATE SKIP LOCKED,
		 * in the chunk transaction); the others page their own part. */
		res = q(p,
			queue ? "SELECT id, amount FROM sim_item WHERE run = $1::int AND status = "
				"'new' AND $2::int IS NOT NULL ORDER BY id LIMIT " CB_SIM_STR(
					SIM_CHUNK) " FOR UPDATE SKIP LOCKED" :
				"SELECT id, amount FROM sim_item WHERE run = $1::int AND status = "
				"'new' AND ($2::int < 0 OR part = $2::int) ORDER BY id "
				"LIMIT " CB_SIM_STR(SIM_CHUNK),
			2, v, NULL);
	}
	if (!res) {
		rollback(p);
		return;
	}
	page = PQntuples(res);
	for (int i = 0; i < page; i++) {
		size_t l = strlen(ids);

		snprintf(ids + l, sizeof(ids) - l, "%s%s", i ? "," : "", PQgetvalue(res, i, 0));
	}
	strcat(ids, "}");
	PQclear(res);
	if (queue && page == 0) {
		/* A short claim: is that the end of the queue? */
		char verdict = queue_end(p, run);

		if (verdict != 'd') {
			rollback(p);
			say(p, "queue: %s%s", verdict == 'w' ? "rows held, wait" : "claim again",
			    "");
			return;
		}
	}
	if (page == 0) {
		rollback(p);
		if (p->part >= 0) {
			part_finish(p, "COMPLETED");
			return;
		}
		say(p, "run done%s%s", "", "");
		finish(p, CB_STATUS_COMPLETED);
		return;
	}
	{
		const char *v[1] = { ids };

		res = q(p,
			"UPDATE sim_item SET status = 'done' WHERE id = ANY($1::bigint[]) "
			"AND status = 'new' RETURNING amount",
			1, v, NULL);
	}
	if (!res) {
		rollback(p);
		return;
	}
	for (int i = 0; i < PQntuples(res); i++)
		total += atoll(PQgetvalue(res, i, 0));
	if (PQntuples(res) != page) {
		/* Another run took some: the strict transition rolls the chunk back. */
		PQclear(res);
		rollback(p);
		say(p, "transition conflict, rolled back%s%s", "", "");
		return;
	}
	PQclear(res);
	snprintf(sum, sizeof(sum), "%lld", total);
	{
		const char *v[2] = { run, sum };

		res = q(p,
			"INSERT INTO sim_total (run, total) VALUES ($1::int, $2::bigint) "
			"ON CONFLICT (run) DO UPDATE SET total = sim_total.total + excluded.total",
			2, v, NULL);
	}
	if (!res) {
		rollback(p);
		return;
	}
	PQclear(res);
	snprintf(step, sizeof(step), "%lld", p->step_id);
	snprintf(ver, sizeof(ver), "%lld", p->version);
	snprintf(exec, sizeof(exec), "%lld", p->exec_id);
	snprintf(tok, sizeof(tok), "%lld", p->ltoken);
	snprintf(lease, sizeof(lease), "%.1f", SIM_LEASE);
	snprintf(n, sizeof(n), "%d", page);
	snprintf(ctxj, sizeof(ctxj), "{\"last\": %d}", page);
	snprintf(pidbuf, sizeof(pidbuf), "%d", spid);
	{
		/* The engine's checkpoint statement (repository/steps.c), with the
		 * arguments cb__repo_checkpoint_queue gives it. */
		int fence = s->bug != BUG_NOFENCE && s->bug != BUG_IGNORE_LOST;
		const char *v[19] = { step,
				      ver,
				      n,
				      n,
				      "0",
				      "1",
				      "0",
				      "0",
				      "0",
				      "0",
				      ctxj,
				      exec,
				      NULL,
				      fence ? p->lock : NULL,
				      fence ? tok : NULL,
				      fence ? lease : NULL,
				      pidbuf,
				      start,
				      "true" };

		res = q(p, cb__repo_checkpoint_sql(), 19, v, code);
	}
	if (!res) {
		rollback(p);
		if (strcmp(code, "CB002") == 0 || strcmp(code, "CB001") == 0)
			lost(p, code);
		return;
	}
	stopping = strcmp(PQgetvalue(res, 0, 0), "STOPPING") == 0;
	PQclear(res);
	{
		const char *v[5] = { exec, run, tok, sum, p->lock };

		res = q(p,
			"INSERT INTO sim_chunk (job_execution_id, run, lock_name, token, cur_token, "
			"amount) SELECT $1::bigint, $2::int, $5, $3::bigint, (SELECT fencing_token "
			"FROM batch_lock WHERE lock_name = $5 FOR SHARE), $4::bigint",
			5, v, NULL);
	}
	if (!res) {
		rollback(p);
		return;
	}
	PQclear(res);
	p->chunk_sum = total;
	p->chunk_items = page;
	say(p, "chunk of %s items, sum %s", n, sum);
	if (open) {
		p->state = stopping ? S_RUNNING : S_IN_CHUNK;
		if (!stopping)
			return;
	}
	commit(s, p, stopping);
}

/* A worker claims a partition of any execution (batch_partition_claim). */
static void do_claim(sim *s, sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;
	const char *jobs[1] = { SIM_JOB };
	cb__claim c;
	PGresult *res;
	char id[24];

	(void)s;
	if (cb__repo_partition_claim(&c, p->conn, p->owner, "sim", SIM_LEASE, jobs, 1, 0, NULL,
				     &err) < 0) {
		sayerr(p, "claim", &err);
		return;
	}
	if (!c.found) {
		say(p, "nothing to claim%s%s", "", "");
		return;
	}
	snprintf(id, sizeof(id), "%lld", c.job_instance_id);
	{
		const char *v[1] = { id };

		res = q(p,
			"SELECT ltrim(job_key, '0') FROM batch_job_instance WHERE job_instance_id = $1",
			1, v, NULL);
	}
	if (!res)
		return;
	p->run = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	p->part = c.partition_index;
	p->exec_id = c.job_execution_id;
	p->step_id = c.step_execution_id;
	p->version = c.version;
	p->ltoken = c.fencing_token;
	snprintf(p->lock, sizeof(p->lock), "%s", c.lock_name);
	p->state = S_RUNNING;
	snprintf(id, sizeof(id), "%lld", c.fencing_token);
	say(p, "claimed %s token %s", c.lock_name, id);
}

/* The manager polls its partitions; when none runs or waits, it ends. */
static void do_poll(sim *s, sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;
	cb__partition_poll pp;
	cb_status st;
	char m[64];

	(void)s;
	if (cb__repo_partitions_poll(&pp, p->conn, p->step_id, &err) < 0) {
		sayerr(p, "poll", &err);
		return;
	}
	snprintf(m, sizeof(m), "%lld/%lld complete, %lld running, %lld open", pp.completed,
		 pp.total, pp.running, pp.open);
	say(p, "poll: %s%s", m, "");
	if (pp.running + pp.open > 0)
		return;
	st = pp.failed ? CB_STATUS_FAILED : pp.stopped ? CB_STATUS_STOPPED : CB_STATUS_COMPLETED;
	if (cb__repo_partitions_end(p->conn, p->step_id, st, NULL, NULL, &err) < 0) {
		sayerr(p, "partitions end", &err);
		return;
	}
	p->step_id = 0;
	finish(p, st);
}

/* The child of a launched firing: a run of the schedule's job (no step:
 * its whole work is to be live until the node sees it end), under the job's
 * lock, as `cbatch run` would start it. A child that cannot start exits
 * (3 complete, 4 lock held, 1 otherwise) and the firing finishes. */
static void start_child(sim *s, sim_proc *p, long long firing_id, const char *key)
{
	cb_error err = CB_ERROR_INIT;
	cb__lock_grant g;
	cb__launch l;
	cb_params *params = NULL;
	cb_status st;
	long long exec_id;
	char stb[16], id[24];
	int code = 0, rc;

	(void)s;
	p->firing_id = firing_id;
	p->exec_id = p->step_id = 0;
	p->part = -1;
	if (cb__lock_acquire(&g, p->conn, SIM_FIRED_LOCK, p->owner, SIM_LEASE, &err) < 0) {
		code = 1;
	} else if (g.outcome == CB__LOCK_HELD) {
		say(p, "child: lock held by %s%s", g.holder, "");
		code = 4;
	} else {
		snprintf(p->lock, sizeof(p->lock), "%s", SIM_FIRED_LOCK);
		p->token = p->ltoken = g.fencing_token;
		rc = cb_params_new(&params, &err);
		if (rc == 0)
			rc = cb__repo_launch(&l, p->conn, SIM_FIRED_JOB, key, params, 1, p->owner,
					     0, p->lock, p->ltoken, NULL, &err);
		cb_params_free(params);
		if (rc == 0) {
			p->exec_id = l.job_execution_id;
			rc = cb__repo_job_started(&st, p->conn, p->exec_id, &err);
		}
		if (rc < 0) {
			sayerr(p, "child", &err);
			code = rc == CB_ECOMPLETE ? 3 : rc == CB_ERUNNING ? 4 : 1;
			if (p->exec_id)
				finish(p, CB_STATUS_FAILED);
			else
				release(p);
		}
	}
	if (code == 0) {
		snprintf(id, sizeof(id), "%lld", p->exec_id);
		say(p, "child runs execution %s%s", id, l.restart_of ? " (restart)" : "");
		p->state = S_FIRING;
		return;
	}
	cb_error_clear(&err);
	if (cb__repo_schedule_finished(&exec_id, stb, p->conn, firing_id, p->owner, code, "", 0,
				       &err) < 0)
		sayerr(p, "finished", &err);
	p->state = S_IDLE;
	p->firing_id = 0;
	p->exec_id = 0;
}

/* Due restarts of firings whose child ended unfinished
 * (batch_schedule_take_recovery): the first is launched, through the
 * compare-and-set, the others handed back as not launched. */
static int take_recovery(sim *s, sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;
	json_t *jobs = json_pack("[s]", SIM_FIRED_JOB), *due = NULL;
	int launched = 0, done = 0;
	char found[64];

	if (cb__repo_schedule_take(&due, p->conn, p->owner, jobs, 1, &err) < 0) {
		sayerr(p, "take recovery", &err);
		json_decref(jobs);
		return 0;
	}
	json_decref(jobs);
	for (size_t i = 0; i < json_array_size(due); i++) {
		long long fid =
			json_integer_value(json_object_get(json_array_get(due, i), "firing_id"));
		char id[24], key[40] = "";
		const char *v[1] = { id };
		PGresult *res;

		if (done) {
			cb__repo_schedule_launched(p->conn, fid, p->owner, 0,
						   "sim: one child at a time", &err);
			continue;
		}
		if (cb__repo_schedule_launch(&launched, found, sizeof(found), p->conn, fid,
					     p->owner, p->pid, "sim restart", &err) < 0 ||
		    !launched)
			continue;
		snprintf(id, sizeof(id), "%lld", fid);
		res = q(p, "SELECT job_key FROM batch_schedule_firing WHERE firing_id = $1::bigint",
			1, v, NULL);
		if (res && PQntuples(res) == 1)
			snprintf(key, sizeof(key), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		if (cb__repo_schedule_launched(p->conn, fid, p->owner, p->pid, NULL, &err) < 0)
			continue;
		say(p, "restarts firing %s%s", id, "");
		s->launched_firing = fid;
		start_child(s, p, fid, key);
		done = 1;
	}
	json_decref(due);
	return done;
}

/* A scheduler node's tick, as framework/scheduler.c's: its heartbeat, the
 * firings of gone nodes orphaned, then the next instant of the schedule
 * claimed if due (by the node's clock) and launched through the
 * compare-and-set. Once the faults stopped, no new instant (liveness). */
static void do_fire(sim *s, sim_proc *p)
{
	cb_error err = CB_ERROR_INIT;
	cb__claim_req rq;
	cb__claim_res rs;
	json_t *orphans = NULL;
	PGresult *res;
	long long sid, version, next, now;
	double db_now;
	char key[40], found[64], m[64];
	int launched = 0;

	if (cb__repo_scheduler_heartbeat(&db_now, p->conn, p->owner, "simhost", p->pid, SIM_LEASE,
					 0, &err) < 0 ||
	    cb__repo_schedule_orphans(&orphans, p->conn, p->owner, &err) < 0) {
		sayerr(p, "node", &err);
		json_decref(orphans);
		return;
	}
	if (json_array_size(orphans)) {
		snprintf(m, sizeof(m), "%zu", json_array_size(orphans));
		say(p, "orphaned %s firing(s)%s", m, "");
	}
	json_decref(orphans);
	if (take_recovery(s, p))
		return;
	if (s->quiet_now) {
		say(p, "node alive, claims nothing (quiet)%s%s", "", "");
		return;
	}
	res = q(p,
		"SELECT schedule_id, version, extract(epoch FROM next_fire_time)::bigint, "
		"extract(epoch FROM batch_now())::bigint FROM batch_schedule "
		"WHERE schedule_name = '" SIM_SCHEDULE "' AND next_fire_time IS NOT NULL",
		0, NULL, NULL);
	if (!res)
		return;
	if (PQntuples(res) == 0) {
		PQclear(res);
		say(p, "no instant%s%s", "", "");
		return;
	}
	sid = atoll(PQgetvalue(res, 0, 0));
	version = atoll(PQgetvalue(res, 0, 1));
	next = atoll(PQgetvalue(res, 0, 2));
	now = atoll(PQgetvalue(res, 0, 3));
	PQclear(res);
	if (next > now) {
		say(p, "next instant not due%s%s", "", "");
		return;
	}
	snprintf(key, sizeof(key), "f%031lld", next);
	memset(&rq, 0, sizeof(rq));
	rq.schedule_id = sid;
	rq.version = version;
	rq.fire_time = next;
	rq.kind = "SCHEDULED";
	rq.param_time = next;
	rq.next_fire = next + 10;
	rq.node = p->owner;
	rq.job_key = key;
	rq.parameters = "[]";
	if (cb__repo_schedule_claim(&rs, p->conn, &rq, &err) < 0) {
		sayerr(p, "schedule claim", &err);
		return;
	}
	snprintf(m, sizeof(m), "t+%lld", next - SIM_EPOCH_UNIX);
	if (rs.outcome != CB__CLAIM_CLAIMED) {
		say(p, "instant %s: %s", m,
		    rs.outcome == CB__CLAIM_OVERLAP ? "skipped, overlaps a live firing" :
		    rs.outcome == CB__CLAIM_SKIPPED ? "claimed by another node" :
						      "not claimed (changed, gone or queued)");
		return;
	}
	if (s->bug == BUG_NOCAS)
		launched = 1; /* the bug: launched without the compare-and-set */
	else if (cb__repo_schedule_launch(&launched, found, sizeof(found), p->conn, rs.firing_id,
					  p->owner, p->pid, "sim", &err) < 0) {
		sayerr(p, "launch", &err);
		return;
	}
	if (!launched) {
		say(p, "instant %s: not launched (%s)", m, found);
		return;
	}
	if (cb__repo_schedule_launched(p->conn, rs.firing_id, p->owner, p->pid, NULL, &err) < 0) {
		sayerr(p, "launched", &err);
		return;
	}
	s->launched_firing = rs.firing_id;
	say(p, "instant %s claimed and launched", m, "");
	start_child(s, p, rs.firing_id, key);
}

/* The child of its firing exits 0 (or the node beats while it runs). */
static void do_fire_end(sim *s, sim_proc *p, int end)
{
	cb_error err = CB_ERROR_INIT;
	double db_now;
	long long exec_id;
	char st[16];
	int alive = 1, code = 0;

	(void)s;
	if (cb__repo_scheduler_heartbeat(&db_now, p->conn, p->owner, "simhost", p->pid, SIM_LEASE,
					 0, &err) < 0) {
		sayerr(p, "node", &err);
		return;
	}
	/* The child's own heartbeat thread. */
	if (p->exec_id && cb__lock_heartbeat(&alive, p->conn, p->lock, p->owner, p->ltoken,
					     SIM_LEASE, p->exec_id, &err) < 0) {
		sayerr(p, "child heartbeat", &err);
		return;
	}
	if (!end && alive) {
		say(p, "node and child alive%s%s", "", "");
		return;
	}
	if (!alive) {
		/* The child lost its lock: it ends FAILED (refused when buried), exit 1. */
		say(p, "child lost its lock%s%s", "", "");
		if (cb__repo_job_finish(p->conn, p->exec_id, CB_STATUS_FAILED, "FAILED",
					"lock lost", NULL, &err) < 0)
			sayerr(p, "job finish", &err);
		code = 1;
	} else {
		finish(p, CB_STATUS_COMPLETED);
	}
	cb_error_clear(&err);
	if (cb__repo_schedule_finished(&exec_id, st, p->conn, p->firing_id, p->owner, code, "", 0,
				       &err) < 0) {
		sayerr(p, "finished", &err);
		return;
	}
	say(p, "firing finished%s%s", "", "");
	p->state = S_IDLE;
	p->firing_id = 0;
	p->exec_id = p->step_id = 0;
}

/* The operator: stop the newest live execution, abandon the newest ended
 * one, or force-unlock the lock, through the real admin calls. */
static void do_operator(sim *s, sim_proc *p, int what)
{
	cb_error err = CB_ERROR_INIT;
	cb_status st;
	PGresult *res;
	long long id;

	(void)s;
	if (what == A_CLEANUP) {
		/* What ended over 20 s (virtual) ago, with its audit and idle lock rows. */
		cb_cleanup_options o = CB_CLEANUP_OPTIONS_INIT;
		cb_cleanup_result r;
		char m[96];

		o.older_than_seconds = 20;
		if (cb_repo_cleanup(&r, p->conn, &o, &err) < 0) {
			sayerr(p, "cleanup", &err);
			return;
		}
		snprintf(m, sizeof(m), "%lld execution(s), %lld lock(s)", r.removed.job_executions,
			 r.removed.locks);
		say(p, "cleanup removed %s%s", m, "");
		return;
	}
	if (what == A_FORCE_UNLOCK) {
		if (cb_lock_force_unlock(p->conn, SIM_LOCK, "operator", "sim", &err) < 0)
			sayerr(p, "force-unlock", &err);
		else
			say(p, "force-unlocked%s%s", "", "");
		return;
	}
	res = q(p,
		what == A_STOP ? "SELECT max(job_execution_id) FROM batch_job_execution "
				 "WHERE batch_status_is_live(status)" :
				 "SELECT max(job_execution_id) FROM batch_job_execution "
				 "WHERE status IN ('FAILED', 'STOPPED')",
		0, NULL, NULL);
	if (!res)
		return;
	id = PQgetisnull(res, 0, 0) ? 0 : atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (!id) {
		say(p, "no execution to %s%s", what == A_STOP ? "stop" : "abandon", "");
		return;
	}
	if (what == A_STOP ? cb_repo_stop(&st, p->conn, id, &err) :
			     cb_repo_abandon(p->conn, id, &err))
		sayerr(p, what == A_STOP ? "stop" : "abandon", &err);
	else
		say(p, "%s done%s", what == A_STOP ? "stop" : "abandon", "");
}

static void run_action(sim *s, sim_proc *p, int a)
{
	set_time(s, p);
	switch (a) {
	case A_ACQUIRE:
		do_acquire(s, p);
		break;
	case A_LAUNCH:
		do_launch(s, p);
		break;
	case A_HEARTBEAT:
		do_heartbeat(s, p);
		break;
	case A_CHUNK:
	case A_CHUNK_OPEN:
		do_chunk(s, p, a == A_CHUNK_OPEN);
		break;
	case A_COMMIT:
		commit(s, p, 0);
		break;
	case A_CLAIM:
		do_claim(s, p);
		break;
	case A_POLL:
		do_poll(s, p);
		break;
	case A_FIRE:
		do_fire(s, p);
		break;
	case A_FIRE_END:
	case A_FIRE_BEAT:
		do_fire_end(s, p, a == A_FIRE_END);
		break;
	case A_STOP:
	case A_ABANDON:
	case A_FORCE_UNLOCK:
	case A_CLEANUP:
		do_operator(s, p, a);
		break;
	default:
		break;
	}
	if (PQstatus(p->conn) == CONNECTION_BAD) {
		/* Its session was ended (a takeover, a fault): reconnect next turn. */
		p->disconnected = 1;
		if (p->state == S_IN_CHUNK)
			p->state = S_RUNNING;
	}
}

struct thread_arg {
	sim *s;
	sim_proc *p;
};

static void *proc_thread(void *arg)
{
	struct thread_arg *ta = arg;
	sim *s = ta->s;
	sim_proc *p = ta->p;

	free(ta);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->action < 0 && !p->quit)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->quit)
			break;
		int a = p->action;

		pthread_mutex_unlock(&p->mu);
		run_action(s, p, a);
		pthread_mutex_lock(&p->mu);
		p->action = -1;
		p->busy = 0;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int connect_proc(sim *s, sim_proc *p)
{
	if (p->conn)
		PQfinish(p->conn);
	p->conn = PQconnectdb(s->conninfo);
	if (PQstatus(p->conn) != CONNECTION_OK) {
		fprintf(stderr, "sim: connect: %s", PQerrorMessage(p->conn));
		return -1;
	}
	p->pid = PQbackendPID(p->conn);
	p->disconnected = 0;
	return 0;
}

int sim_proc_start(sim *s, sim_proc *p)
{
	struct thread_arg *ta = malloc(sizeof(*ta));

	if (!ta)
		return -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->action = -1;
	ta->s = s;
	ta->p = p;
	if (pthread_create(&p->thread, NULL, proc_thread, ta) != 0) {
		free(ta);
		return -1;
	}
	p->has_thread = 1;
	return 0;
}

void sim_proc_stop(sim *s, sim_proc *p)
{
	(void)s;
	if (!p->has_thread)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	p->has_thread = 0;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	if (p->conn)
		PQfinish(p->conn);
	p->conn = NULL;
}

int sim_proc_can_act(const sim *s, const sim_proc *p)
{
	return !p->busy && s->step >= p->frozen_until;
}

/* The actions open to @p p in its state (the operator's are its own). */
static int actions(const sim *s, const sim_proc *p, int *out)
{
	int n = 0, faulty = !s->quiet_now;

	if (p->index == SIM_OPERATOR) {
		out[n++] = A_STOP;
		out[n++] = A_ABANDON;
		out[n++] = A_FORCE_UNLOCK;
		out[n++] = A_CLEANUP;
		out[n++] = A_NOTHING;
		out[n++] = A_NOTHING;
		return n;
	}
	switch (p->state) {
	case S_IDLE:
		out[n++] = A_ACQUIRE;
		out[n++] = A_CLAIM;
		out[n++] = A_FIRE;
		break;
	case S_FIRING:
		out[n++] = A_FIRE_END;
		out[n++] = A_FIRE_BEAT;
		break;
	case S_MANAGING:
		out[n++] = A_POLL;
		out[n++] = A_HEARTBEAT;
		break;
	case S_LOCKED:
		out[n++] = A_LAUNCH;
		break;
	case S_RUNNING:
		out[n++] = A_CHUNK;
		out[n++] = A_CHUNK;
		out[n++] = A_HEARTBEAT;
		if (faulty)
			out[n++] = A_CHUNK_OPEN; /* the fault: its transaction stays open */
		break;
	case S_IN_CHUNK:
		out[n++] = A_COMMIT;
		break;
	default:
		break;
	}
	return n;
}

static int blocked(sim *s, int pid)
{
	char b[16];
	const char *v[1] = { b };

	snprintf(b, sizeof(b), "%d", pid);
	return sim_q_ll(s, "SELECT cardinality(pg_blocking_pids($1::int))", 1, v) > 0;
}

/* Done, or blocked on a lock (not for the calls that end a block by themselves). */
static int settled(sim *s, sim_proc *p)
{
	int busy;

	pthread_mutex_lock(&p->mu);
	busy = p->busy;
	pthread_mutex_unlock(&p->mu);
	if (!busy) {
		p->waiting = 0;
		return 1;
	}
	if (p->posted != A_ACQUIRE && p->posted != A_FORCE_UNLOCK && p->posted != A_CLEANUP &&
	    blocked(s, p->pid)) {
		p->waiting = 1;
		return 1;
	}
	return 0;
}

void sim_settle(sim *s)
{
	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; i <= SIM_MAX_PROCS; i++) {
			sim_proc *p = &s->procs[i];

			if (!p->has_thread || !p->busy)
				continue;
			while (!settled(s, p))
				usleep(500);
			if (!p->busy)
				again = 1; /* its end may free others */
		}
	}
}

/* Post action @p a to @p p's thread and settle. */
static void post(sim *s, sim_proc *p, int a)
{
	p->result[0] = '\0';
	if (a == A_HEARTBEAT || a == A_FIRE_BEAT || a == A_ACQUIRE || a == A_FIRE || a == A_CLAIM ||
	    a == A_CHUNK)
		p->last_beat = s->vnow;
	pthread_mutex_lock(&p->mu);
	p->action = a;
	p->posted = a;
	p->busy = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	sim_settle(s);
}

void sim_proc_turn(sim *s, sim_proc *p, uint32_t choice, char *out, size_t size)
{
	int acts[8], n, a;

	if (p->state == S_DEAD && p->index != SIM_OPERATOR) {
		p->gen++;
		snprintf(p->owner, sizeof(p->owner), "sim-p%d.%d", p->index, p->gen);
		if (connect_proc(s, p) < 0) {
			snprintf(out, size, "born: connect failed");
			return;
		}
		p->state = S_IDLE;
		p->exec_id = p->step_id = p->token = 0;
		p->part = -1;
		snprintf(out, size, "born as %s", p->owner);
		return;
	}
	if (p->disconnected) {
		if (connect_proc(s, p) < 0) {
			snprintf(out, size, "reconnect failed");
			return;
		}
		if (p->state == S_IN_CHUNK)
			p->state = S_RUNNING;
	}
	n = actions(s, p, acts);
	if (n == 0) {
		snprintf(out, size, "no action");
		return;
	}
	a = acts[choice % (uint32_t)n];
	post(s, p, a);
	snprintf(out, size, "%s: %s", action_names[a], p->busy ? "WAITING on a lock" : p->result);
}

/*
 * The engine's heartbeat thread, which beats whatever the process's main
 * loop does: each process that holds a lock (the job's, a partition's) or
 * runs a firing, that is neither frozen, waiting, disconnected nor inside
 * its chunk transaction (whose connection its beat would join), beats once a
 * third of a lease of virtual time has passed since its last beat. In slot
 * order, after the step's action: as deterministic as the rest.
 */
void sim_background(sim *s, char *out, size_t size)
{
	out[0] = '\0';
	for (int i = 0; i < SIM_MAX_PROCS; i++) {
		sim_proc *p = &s->procs[i];
		int a;
		size_t l;

		if (!p->has_thread || p->busy || s->step < p->frozen_until || p->disconnected ||
		    s->vnow - p->last_beat < SIM_LEASE / 3)
			continue;
		if (p->state == S_LOCKED || p->state == S_RUNNING || p->state == S_MANAGING)
			a = A_HEARTBEAT;
		else if (p->state == S_FIRING)
			a = A_FIRE_BEAT;
		else
			continue;
		post(s, p, a);
		l = strlen(out);
		snprintf(out + l, size - l, " | p%d beats: %.120s", i,
			 p->busy ? "WAITING on a lock" : p->result);
	}
}

/* The result of an action that ended after its turn (it was waiting). */
const char *sim_proc_result(const sim_proc *p)
{
	return p->result;
}
