/*
 * Cleanup of old repository metadata: job executions that ended before a
 * cutoff, with their step executions (partitions included), contexts,
 * parameters and lock audit rows, and the instances left with no execution.
 *
 * What may go is one SQL function, batch_cleanup_removable() (with the plan
 * of batch_cleanup_plan(), both in sql/functions/, where the
 * rule is written out and can be tried in psql). In short: what stays,
 * whatever its age, is every execution of a running or restartable
 * instance, the newest of an instance unless all of it goes, with
 * keep_last the N newest of each job name, and what `--next` reads (the
 * first execution of each job's newest instance).
 *
 * Nothing reads the history as a whole, before the first batch or after the
 * last: the plan reads a few rows per job name, and the executions are
 * walked in end_time order through their index from the oldest up to the
 * cutoff. They go in batches, one short transaction each: the batch's
 * instances are locked first (SKIP LOCKED: a launch or an operator's stop or
 * abandon holding one is passed over, never waited for; a launch that comes
 * after waits at most for this transaction), then what may go of those
 * instances is judged again under those locks and deleted in one statement,
 * with the lock audit rows of those executions. The audit rows of no
 * execution (or of one gone before) follow, walked in event_time order up
 * to the cutoff, then the lock rows that nothing uses any more (LOCK_SQL):
 * released or long expired, of executions that are gone, such as the
 * one-off names of firings with a fire-time parameter. Last the schedule
 * history (batch_cleanup_schedule_events() and _firings()): events, then
 * firings, each walked in time order through its index up to the cutoff.
 */
#include "repo.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The statements that judge executions call batch_cleanup_removable()
 * (sql/functions/batch_cleanup_removable.sql), the removal rule, with the plan's
 *   $1 cutoff (timestamptz)   $2 keep-last job names (text[])
 *   $3 their first kept execution ids (bigint[])   $4 protected ids (bigint[]) */
#define REMOVABLE "batch_cleanup_removable($1::timestamptz, $2::text[], $3::bigint[], $4::bigint[])"

/* Lock audit rows that go besides those of the executions that go (alias
 * a): recorded before the cutoff ($1), and tied to no execution or to one
 * that is gone. Walked in event_time order through its index, up to the
 * cutoff only. (A scalar subquery, not NOT EXISTS: one probe of the key per
 * row, never a hash of every execution.) */
#define AUDIT_SQL(a)                                                                               \
	"(" a ".event_time < $1::timestamptz AND (SELECT ae.job_execution_id "                     \
	" FROM batch_job_execution ae WHERE ae.job_execution_id = " a                              \
	".job_execution_id) IS NULL)"

/* Lock rows that go (alias x): not touched since the cutoff ($1) nor held
 * past it, and either released (and of no live execution) or of no
 * execution that remains (@p gone: more executions counted as gone, for the
 * dry run). A lock name taken again later starts from a greater fencing
 * token all the same (batch_lock_token_seq, moved past every deleted row's
 * token by a trigger), so no fenced-off owner can ever match it. */
#define LOCK_SQL(x, gone)                                                                          \
	"(" x ".updated_at < $1::timestamptz AND " x ".locked_until < $1::timestamptz AND ("       \
	" (" x ".released AND NOT EXISTS (SELECT 1 FROM batch_job_execution le "                   \
	"   WHERE le.job_execution_id = " x                                                        \
	".job_execution_id AND batch_status_is_live(le.status))) "                                 \
	" OR " x ".job_execution_id IS NULL OR NOT EXISTS (SELECT 1 FROM batch_job_execution le "  \
	"   WHERE le.job_execution_id = " x ".job_execution_id)" gone "))"

#define LOCK_GOES LOCK_SQL("x", "")
/* In the dry run, the executions that would go (d) count as gone. */
#define LOCKS_DRY_COUNT                                                                            \
	"(SELECT count(*) FROM batch_lock x WHERE " LOCK_SQL(                                      \
		"x", " OR x.job_execution_id IN (SELECT id FROM d)") ")"

/* Schedule history that goes: batch_cleanup_schedule_events() and
 * batch_cleanup_schedule_firings() (sql/functions/), with the cutoff ($1). */
#define SCHED_EVENTS  "batch_cleanup_schedule_events($1::timestamptz)"
#define SCHED_FIRINGS "batch_cleanup_schedule_firings($1::timestamptz)"

/* What a batch removes, as one row (the same columns for the dry run). */
#define COUNTS_SELECT                                                                              \
	"SELECT (SELECT count(*) FROM je), (SELECT count(*) FROM ji), "                            \
	" (SELECT count(*) FROM st), (SELECT count(partition_index) FROM st), "                    \
	" (SELECT count(*) FROM sc), (SELECT count(*) FROM jc), (SELECT count(*) FROM pa), "       \
	" (SELECT count(*) FROM r)"

static void rollback_quietly(PGconn *conn)
{
	PGresult *res = PQexec(conn, "ROLLBACK");

	PQclear(res);
}

static void add_counts(cb_cleanup_counts *to, const cb_cleanup_counts *c)
{
	to->job_executions += c->job_executions;
	to->job_instances += c->job_instances;
	to->step_executions += c->step_executions;
	to->partitions += c->partitions;
	to->step_contexts += c->step_contexts;
	to->job_contexts += c->job_contexts;
	to->params += c->params;
	to->lock_audit += c->lock_audit;
	to->restart_links += c->restart_links;
	to->schedule_events += c->schedule_events;
	to->schedule_firings += c->schedule_firings;
	to->locks += c->locks;
}

static void read_counts(cb_cleanup_counts *c, const PGresult *res)
{
	memset(c, 0, sizeof(*c));
	c->job_executions = atoll(PQgetvalue(res, 0, 0));
	c->job_instances = atoll(PQgetvalue(res, 0, 1));
	c->step_executions = atoll(PQgetvalue(res, 0, 2));
	c->partitions = atoll(PQgetvalue(res, 0, 3));
	c->step_contexts = atoll(PQgetvalue(res, 0, 4));
	c->job_contexts = atoll(PQgetvalue(res, 0, 5));
	c->params = atoll(PQgetvalue(res, 0, 6));
	c->restart_links = atoll(PQgetvalue(res, 0, 7));
}

/* The state every batch is judged by, fixed when the cleanup starts. */
typedef struct plan {
	char cutoff[64];
	double cutoff_epoch;
	char *keep_names; /* text[] literal from the server, "{}" when none */
	char *keep_first; /* bigint[] literal */
	char *protected_ids;
} plan;

static void plan_free(plan *p)
{
	free(p->keep_names);
	free(p->keep_first);
	free(p->protected_ids);
}

static int dup_value(char **out, const PGresult *res, int col, cb_error *err)
{
	*out = strdup(PQgetvalue(res, 0, col));
	return *out ? 0 : cb_error_set(err, CB_ENOMEM, "out of memory");
}

/*
 * The cutoff in the database's clock, and what is kept by count rather than
 * by age (batch_cleanup_plan: a few rows per job name, not the history).
 * New executions made while the cleanup runs are newer than the cutoff, so
 * none of this can go stale in a way that deletes more.
 */
static int make_plan(plan *p, PGconn *conn, const cb_cleanup_options *opt, cb_error *err)
{
	char secs[64], keep[24];
	const char *pa[2] = { secs, keep };
	PGresult *res;
	int rc;

	memset(p, 0, sizeof(*p));
	snprintf(secs, sizeof(secs), "%.6f", opt->older_than_seconds);
	snprintf(keep, sizeof(keep), "%lld", opt->keep_last);
	/* Arrays travel back as the server printed them: no client-side quoting. */
	res = cb__repo_exec(conn, "plan cleanup",
			    "SELECT cutoff, keep_names, keep_first, protected_ids, "
			    " extract(epoch FROM cutoff) FROM batch_cleanup_plan("
			    "make_interval(secs => $1::double precision), $2::bigint)",
			    2, pa, err);
	if (!res)
		return CB_EDB;
	snprintf(p->cutoff, sizeof(p->cutoff), "%s", PQgetvalue(res, 0, 0));
	p->cutoff_epoch = atof(PQgetvalue(res, 0, 4));
	if ((rc = dup_value(&p->keep_names, res, 1, err)) < 0 ||
	    (rc = dup_value(&p->keep_first, res, 2, err)) < 0 ||
	    (rc = dup_value(&p->protected_ids, res, 3, err)) < 0) {
		PQclear(res);
		plan_free(p);
		return rc;
	}
	PQclear(res);
	return 0;
}

/* The dry run: what the batches would remove, counted in one read-only
 * statement over the same rules. */
static int count_only(cb_cleanup_counts *out, PGconn *conn, const plan *p, cb_error *err)
{
	const char *pa[4] = { p->cutoff, p->keep_names, p->keep_first, p->protected_ids };
	PGresult *res;

	res = cb__repo_exec(
		conn, "count what cleanup would remove",
		"WITH d AS (SELECT r.job_execution_id AS id, r.last_of_instance AS newest "
		"  FROM " REMOVABLE " r), "
		"je AS (SELECT 1 FROM d), ji AS (SELECT 1 FROM d WHERE newest), "
		"st AS (SELECT x.partition_index FROM batch_step_execution x JOIN d "
		"  ON x.job_execution_id = d.id), "
		"sc AS (SELECT 1 FROM batch_step_execution_context c JOIN batch_step_execution x "
		"  USING (step_execution_id) JOIN d ON x.job_execution_id = d.id), "
		"jc AS (SELECT 1 FROM batch_job_execution_context c JOIN d "
		"  ON c.job_execution_id = d.id), "
		"pa AS (SELECT 1 FROM batch_job_execution_params c JOIN d "
		"  ON c.job_execution_id = d.id), "
		"r AS (SELECT 1 FROM batch_job_execution x JOIN d ON x.restart_of = d.id "
		"  WHERE x.job_execution_id NOT IN (SELECT id FROM d)) " COUNTS_SELECT
		/* (disjoint: the executions in d are there now) */
		", (SELECT count(*) FROM batch_lock_audit a JOIN d ON a.job_execution_id = d.id) "
		" + (SELECT count(*) FROM batch_lock_audit a WHERE " AUDIT_SQL(
			"a") "), " LOCKS_DRY_COUNT,
		4, pa, err);
	if (!res)
		return CB_EDB;
	read_counts(out, res);
	out->lock_audit = atoll(PQgetvalue(res, 0, 8));
	out->locks = atoll(PQgetvalue(res, 0, 9));
	PQclear(res);
	{
		const char *pc[1] = { p->cutoff };

		/* Through the time indexes, up to the cutoff: only what goes is read. */
		res = cb__repo_exec(conn, "count old schedule history",
				    "SELECT (SELECT count(*) FROM " SCHED_EVENTS "), "
				    " (SELECT count(*) FROM " SCHED_FIRINGS ")",
				    1, pc, err);
		if (!res)
			return CB_EDB;
		out->schedule_events = atoll(PQgetvalue(res, 0, 0));
		out->schedule_firings = atoll(PQgetvalue(res, 0, 1));
		PQclear(res);
	}
	return 0;
}

static int begin_bounded(PGconn *conn, const cb_cleanup_options *opt, cb_error *err)
{
	char ms[32];
	const char *pa[1] = { ms };
	int rc;

	snprintf(ms, sizeof(ms), "%lldms",
		 (long long)(opt->lock_timeout_seconds > 0 ? opt->lock_timeout_seconds * 1000 :
							     1000));
	rc = cb__repo_command(conn, "begin cleanup batch", "BEGIN", 0, NULL, err);
	if (rc < 0)
		return rc;
	/* Never wait long for a row someone else holds: give up the batch and
	 * try again instead (set_config: a value as a parameter, not pasted).
	 * No JIT: the statements' estimates are large (every row of a big
	 * repository could be looked at) but each batch stops after a few
	 * thousand rows, and compiling them cost ten times the work. No sort
	 * where an index gives the order: each batch walks on from where the
	 * last one stopped, in index order, and stops after its few thousand
	 * rows; the estimates (the rule's many conditions make the rows that
	 * pass look few) would rather fetch every row up to the cutoff and sort
	 * them, in every batch. */
	rc = cb__repo_command(
		conn, "bound lock waits",
		"SELECT set_config('lock_timeout', $1, true), "
		"set_config('jit', 'off', true), set_config('enable_sort', 'off', true)",
		1, pa, err);
	if (rc < 0)
		rollback_quietly(conn);
	return rc;
}

/* Where a walk in time order has got: the last row's time as the server
 * printed it (exact, for the next comparison) and as epoch seconds (for the
 * progress), and its id. */
typedef struct cursor {
	char time[64];
	double epoch;
	long long id;
} cursor;

static void cursor_start(cursor *c)
{
	snprintf(c->time, sizeof(c->time), "-infinity");
	c->epoch = 0;
	c->id = 0;
}

static void cursor_take(cursor *c, const PGresult *res, int col)
{
	snprintf(c->time, sizeof(c->time), "%s", PQgetvalue(res, 0, col));
	c->epoch = atof(PQgetvalue(res, 0, col + 1));
	c->id = atoll(PQgetvalue(res, 0, col + 2));
}

/*
 * One batch of executions after @p at, in end_time order (through its index,
 * up to the cutoff only): *done = 1 when none is left. @p at moves past
 * every execution looked at; *skipped counts the instances passed over
 * because someone held them. Each instance taken loses every execution the
 * rule lets go, wherever the walk is, so that its newest can go with them.
 */
static int execution_batch(cb_cleanup_counts *out, int *done, cursor *at, long long *skipped,
			   PGconn *conn, const plan *p, const cb_cleanup_options *opt,
			   cb_error *err)
{
	char slast[24], slimit[24], *insts = NULL, *ids = NULL;
	long long seen, instances, n_instances = 0;
	cursor next;
	PGresult *res;
	int rc;

	memset(out, 0, sizeof(*out));
	*done = 0;
	snprintf(slast, sizeof(slast), "%lld", at->id);
	snprintf(slimit, sizeof(slimit), "%lld", opt->batch);
	if ((rc = begin_bounded(conn, opt, err)) < 0)
		return rc;
	{
		const char *pa[7] = { p->cutoff, p->keep_names, p->keep_first, p->protected_ids,
				      at->time,  slast,         slimit };

		res = cb__repo_exec(
			conn, "pick executions to remove",
			"WITH c AS (SELECT r.job_execution_id, r.job_instance_id, r.end_time "
			"  FROM " REMOVABLE " r "
			"  WHERE (r.end_time, r.job_execution_id) > ($5::timestamptz, $6::bigint) "
			"  ORDER BY r.end_time, r.job_execution_id LIMIT $7::bigint), "
			"z AS (SELECT * FROM c ORDER BY end_time DESC, job_execution_id DESC LIMIT 1), "
			"l AS (SELECT i.job_instance_id FROM batch_job_instance i "
			"  WHERE i.job_instance_id = ANY (ARRAY(SELECT job_instance_id FROM c)) "
			"  FOR UPDATE SKIP LOCKED) "
			"SELECT (SELECT count(*) FROM c), "
			" (SELECT count(DISTINCT job_instance_id) FROM c), "
			" coalesce((SELECT array_agg(job_instance_id) FROM l), '{}'), "
			" (SELECT count(*) FROM l), (SELECT end_time FROM z), "
			" (SELECT extract(epoch FROM end_time) FROM z), (SELECT job_execution_id FROM z)",
			7, pa, err);
	}
	if (!res) {
		rc = CB_EDB;
		goto fail;
	}
	seen = atoll(PQgetvalue(res, 0, 0));
	instances = atoll(PQgetvalue(res, 0, 1));
	*skipped += instances - atoll(PQgetvalue(res, 0, 3));
	insts = strdup(PQgetvalue(res, 0, 2));
	if (seen > 0)
		cursor_take(&next, res, 4);
	PQclear(res);
	if (!insts) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto fail;
	}
	if (seen == 0) {
		*done = 1;
		free(insts);
		return cb__repo_command(conn, "end cleanup batch", "COMMIT", 0, NULL, err);
	}
	{
		const char *pa[5] = { p->cutoff, p->keep_names, p->keep_first, p->protected_ids,
				      insts };

		/* A new snapshot, under the instance locks: judged again, so that
		 * a launch that committed meanwhile is seen. An instance goes with
		 * its newest execution (which goes only with all the others). */
		res = cb__repo_exec(
			conn, "judge executions to remove",
			"SELECT coalesce(array_agg(r.job_execution_id), '{}'), "
			" coalesce(array_agg(r.job_instance_id) FILTER (WHERE r.last_of_instance), '{}') "
			"FROM " REMOVABLE " r WHERE r.job_instance_id = ANY ($5::bigint[])",
			5, pa, err);
	}
	free(insts);
	insts = NULL;
	if (!res) {
		rc = CB_EDB;
		goto fail;
	}
	ids = strdup(PQgetvalue(res, 0, 0));
	insts = strdup(PQgetvalue(res, 0, 1));
	PQclear(res);
	if (!ids || !insts) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto fail;
	}
	{
		const char *pa[2] = { ids, insts };

		/* Ids as arrays, not a join with a CTE: each table is reached by
		 * its index on job_execution_id (the lock audit too). Foreign keys
		 * are checked at the end of the statement, when children and
		 * parents are gone together; a surviving restart's link to a
		 * removed execution is cleared (it is history, not state). */
		res = cb__repo_exec(
			conn, "remove executions",
			"WITH r AS (UPDATE batch_job_execution x SET restart_of = NULL "
			"  WHERE x.restart_of = ANY ($1::bigint[]) "
			"  AND NOT (x.job_execution_id = ANY ($1::bigint[])) RETURNING 1), "
			"sc AS (DELETE FROM batch_step_execution_context c WHERE c.step_execution_id = "
			"  ANY (ARRAY(SELECT x.step_execution_id FROM batch_step_execution x "
			"   WHERE x.job_execution_id = ANY ($1::bigint[]))) RETURNING 1), "
			"st AS (DELETE FROM batch_step_execution x "
			"  WHERE x.job_execution_id = ANY ($1::bigint[]) RETURNING x.partition_index), "
			"jc AS (DELETE FROM batch_job_execution_context c "
			"  WHERE c.job_execution_id = ANY ($1::bigint[]) RETURNING 1), "
			"pa AS (DELETE FROM batch_job_execution_params c "
			"  WHERE c.job_execution_id = ANY ($1::bigint[]) RETURNING 1), "
			"au AS (DELETE FROM batch_lock_audit a "
			"  WHERE a.job_execution_id = ANY ($1::bigint[]) RETURNING 1), "
			"je AS (DELETE FROM batch_job_execution e "
			"  WHERE e.job_execution_id = ANY ($1::bigint[]) RETURNING 1), "
			/* The instances go in the next statement: the triggers that
			 * take removed executions out of their job's status counts
			 * read the job name from the instance when this one ends. */
			"ji AS (SELECT 1 WHERE false) " COUNTS_SELECT ", (SELECT count(*) FROM au)",
			1, pa, err);
	}
	if (res) {
		const char *pa[1] = { insts };
		PGresult *ri;

		/* (an execution left behind would fail the foreign key) */
		ri = cb__repo_exec(conn, "remove instances",
				   "WITH ji AS (DELETE FROM batch_job_instance i "
				   " WHERE i.job_instance_id = ANY ($1::bigint[]) RETURNING 1) "
				   "SELECT count(*) FROM ji",
				   1, pa, err);
		if (!ri) {
			PQclear(res);
			res = NULL;
		} else {
			n_instances = atoll(PQgetvalue(ri, 0, 0));
			PQclear(ri);
		}
	}
	free(ids);
	free(insts);
	ids = insts = NULL;
	if (!res) {
		rc = CB_EDB;
		goto fail;
	}
	read_counts(out, res);
	out->job_instances = n_instances;
	out->lock_audit = atoll(PQgetvalue(res, 0, 8));
	PQclear(res);
	rc = cb__repo_command(conn, "commit cleanup batch", "COMMIT", 0, NULL, err);
	if (rc < 0) {
		memset(out, 0, sizeof(*out));
		goto fail;
	}
	*at = next;
	return 0;
fail:
	free(ids);
	free(insts);
	rollback_quietly(conn);
	return rc;
}

/* One batch of the other lock audit rows (AUDIT_SQL) from @p at on, in
 * event_time order (through its index), up to the cutoff. */
static int audit_batch(long long *removed, int *done, cursor *at, PGconn *conn, const plan *p,
		       const cb_cleanup_options *opt, cb_error *err)
{
	char slast[24], slimit[24];
	const char *pa[4] = { p->cutoff, at->time, slast, slimit };
	PGresult *res;
	int rc;

	*removed = 0;
	*done = 0;
	snprintf(slast, sizeof(slast), "%lld", at->id);
	/* Audit rows are small and never updated: more of them per transaction. */
	snprintf(slimit, sizeof(slimit), "%lld", opt->batch * 10);
	if ((rc = begin_bounded(conn, opt, err)) < 0)
		return rc;
	res = cb__repo_exec(
		conn, "remove lock audit rows",
		/* From the last time on, that time included: the rows passed
		 * over there stay and are passed over again, the rest went. */
		"WITH c AS (SELECT b.audit_id, b.event_time FROM batch_lock_audit b "
		"  WHERE b.event_time >= $2::timestamptz AND $3::bigint IS NOT NULL "
		"  AND " AUDIT_SQL(
			"b") " ORDER BY b.event_time LIMIT $4::bigint), "
			     "z AS (SELECT * FROM c ORDER BY event_time DESC, audit_id DESC LIMIT 1), "
			     "d AS (DELETE FROM batch_lock_audit a WHERE a.audit_id IN (SELECT audit_id FROM c) "
			     "  RETURNING 1) "
			     "SELECT (SELECT count(*) FROM d), (SELECT event_time FROM z), "
			     " (SELECT extract(epoch FROM event_time) FROM z), (SELECT audit_id FROM z)",
		4, pa, err);
	if (!res) {
		rollback_quietly(conn);
		return CB_EDB;
	}
	*removed = atoll(PQgetvalue(res, 0, 0));
	if (*removed == 0)
		*done = 1;
	else
		cursor_take(at, res, 1);
	PQclear(res);
	rc = cb__repo_command(conn, "commit cleanup batch", "COMMIT", 0, NULL, err);
	if (rc < 0) {
		*removed = 0;
		rollback_quietly(conn);
	}
	return rc;
}

static const char lock_batch_sql[] =
	"WITH c AS (SELECT x.lock_name FROM batch_lock x WHERE ($2::varchar IS NULL OR "
	"  x.lock_name > $2::varchar) AND " LOCK_GOES " ORDER BY x.lock_name "
	"  LIMIT $3::bigint FOR UPDATE SKIP LOCKED), "
	"d AS (DELETE FROM batch_lock x WHERE x.lock_name IN (SELECT lock_name FROM c) "
	"  AND " LOCK_GOES " RETURNING 1) "
	"SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM c), (SELECT max(lock_name) FROM c)";

/* One batch of unused lock rows after lock name @p last (a malloc'd copy,
 * NULL at first). Rows locked by someone (a taker right now, a frozen
 * session) are passed over, never waited for; the rule is applied again
 * to each row under its row lock. */
static int lock_batch(long long *removed, int *done, char **last, PGconn *conn, const plan *p,
		      const cb_cleanup_options *opt, cb_error *err)
{
	char slimit[24];
	const char *pa[3] = { p->cutoff, *last, slimit };
	PGresult *res;
	int rc;

	*removed = 0;
	*done = 0;
	snprintf(slimit, sizeof(slimit), "%lld", opt->batch * 10);
	if ((rc = begin_bounded(conn, opt, err)) < 0)
		return rc;
	res = cb__repo_exec(conn, "remove unused locks", lock_batch_sql, 3, pa, err);
	if (!res) {
		rollback_quietly(conn);
		return err->code ? err->code : CB_EDB;
	}
	*removed = atoll(PQgetvalue(res, 0, 0));
	if (atoll(PQgetvalue(res, 0, 1)) == 0) {
		*done = 1;
	} else {
		char *l = strdup(PQgetvalue(res, 0, 2));

		if (!l) {
			PQclear(res);
			rollback_quietly(conn);
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		}
		free(*last);
		*last = l;
	}
	PQclear(res);
	rc = cb__repo_command(conn, "commit cleanup batch", "COMMIT", 0, NULL, err);
	if (rc < 0) {
		*removed = 0;
		rollback_quietly(conn);
	}
	return rc;
}

/* The schedule history is walked twice, each walk in time order through its
 * index from the oldest row to the cutoff, each batch going on from where
 * the last one stopped: first the events that go, then the firings that go
 * with what is left of their events (those a firing that finished since
 * the first walk kept). A firing is deleted only if it is still finished
 * under its row lock, and its events only with it, so that none goes
 * uncounted by the cascade. */
static const char sched_event_batch_sql[] =
	"WITH c AS (SELECT s.event_id, s.recorded_at FROM " SCHED_EVENTS " s "
	"  WHERE (s.recorded_at, s.event_id) > ($2::timestamptz, $3::bigint) "
	"  ORDER BY s.recorded_at, s.event_id LIMIT $4::bigint), "
	"z AS (SELECT * FROM c ORDER BY recorded_at DESC, event_id DESC LIMIT 1), "
	"ev AS (DELETE FROM batch_schedule_event e WHERE e.event_id IN (SELECT event_id FROM c) "
	"  RETURNING 1) "
	"SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM ev), 0, (SELECT recorded_at FROM z), "
	" (SELECT extract(epoch FROM recorded_at) FROM z), (SELECT event_id FROM z)";

static const char sched_firing_batch_sql[] =
	"WITH c AS (SELECT s.firing_id, s.claimed_at FROM " SCHED_FIRINGS " s "
	"  WHERE (s.claimed_at, s.firing_id) > ($2::timestamptz, $3::bigint) "
	"  ORDER BY s.claimed_at, s.firing_id LIMIT $4::bigint), "
	"z AS (SELECT * FROM c ORDER BY claimed_at DESC, firing_id DESC LIMIT 1), "
	"fi AS (DELETE FROM batch_schedule_firing f WHERE f.firing_id IN (SELECT firing_id FROM c) "
	"  AND f.status NOT IN ('CLAIMED', 'LAUNCHED', 'QUEUED') AND f.recover_after IS NULL "
	"  RETURNING f.firing_id), "
	"ev AS (DELETE FROM batch_schedule_event e WHERE e.firing_id IN (SELECT firing_id FROM fi) "
	"  RETURNING 1) "
	"SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM ev), (SELECT count(*) FROM fi), "
	" (SELECT claimed_at FROM z), (SELECT extract(epoch FROM claimed_at) FROM z), "
	" (SELECT firing_id FROM z)";

/* One batch of old schedule events (@p firings 0) or firings (1) after
 * @p at: *done = 1 when none is left before the cutoff. */
static int schedule_batch(cb_cleanup_counts *b, int *done, cursor *at, int firings, PGconn *conn,
			  const plan *p, const cb_cleanup_options *opt, cb_error *err)
{
	char slast[24], slimit[24];
	const char *pa[4] = { p->cutoff, at->time, slast, slimit };
	cursor next = *at;
	PGresult *res;
	int rc;

	*done = 0;
	snprintf(slast, sizeof(slast), "%lld", at->id);
	snprintf(slimit, sizeof(slimit), "%lld", opt->batch * 10);
	if ((rc = begin_bounded(conn, opt, err)) < 0)
		return rc;
	res = cb__repo_exec(conn,
			    firings ? "remove old schedule firings" : "remove old schedule events",
			    firings ? sched_firing_batch_sql : sched_event_batch_sql, 4, pa, err);
	if (!res) {
		rollback_quietly(conn);
		return err->code ? err->code : CB_EDB;
	}
	if (atoll(PQgetvalue(res, 0, 0)) == 0) {
		*done = 1;
	} else {
		b->schedule_events = atoll(PQgetvalue(res, 0, 1));
		b->schedule_firings = atoll(PQgetvalue(res, 0, 2));
		cursor_take(&next, res, 3);
	}
	PQclear(res);
	rc = cb__repo_command(conn, "commit cleanup batch", "COMMIT", 0, NULL, err);
	if (rc < 0) {
		b->schedule_events = b->schedule_firings = 0;
		rollback_quietly(conn);
		return rc;
	}
	*at = next;
	return 0;
}

/* Retry a batch that lost a lock wait or a deadlock, a few times, backing off. */
#define MAX_ATTEMPTS 5

static int retryable(cb_error *err, int rc, int attempt)
{
	if (rc != CB_ERETRY || attempt + 1 >= MAX_ATTEMPTS)
		return 0;
	cb_error_clear(err);
	cb__clock_sleep(0.1 * (attempt + 1));
	return 1;
}

/*
 * How far a phase has got and how long it will still take. A phase walks
 * time from lo (its oldest row) to hi (the cutoff); the fraction is the
 * share of that time passed. The time left is the rest at the pace of the
 * last few batches (a moving rate: the first batches, on a cold cache or
 * on dense old history, say little about the rest), and not guessed before
 * a warm-up of a few batches and seconds.
 */
#define PACE_SAMPLES        8
#define PACE_WARMUP_BATCHES 4
#define PACE_WARMUP_SECONDS 2.0

typedef struct pace {
	double lo, hi, started;
	int n; /* samples taken; the newest PACE_SAMPLES are kept */
	double t[PACE_SAMPLES], f[PACE_SAMPLES];
} pace;

static void report(const cb_cleanup_options *opt, const char *phase, long long batch,
		   const cb_cleanup_counts *b, const cb_cleanup_counts *total, double seconds,
		   pace *pc, double at)
{
	cb_cleanup_progress pr;

	if (!opt->progress)
		return;
	pr.phase = phase;
	pr.batch = batch;
	pr.counts = *b;
	pr.total = *total;
	pr.seconds = seconds;
	pr.fraction = -1;
	pr.eta_seconds = -1;
	if (pc && pc->hi > pc->lo) {
		double f = (at - pc->lo) / (pc->hi - pc->lo), now = cb__clock_mono();
		int i = pc->n % PACE_SAMPLES, oldest;

		pr.fraction = f < 0 ? 0 : f > 1 ? 1 : f;
		pc->t[i] = now;
		pc->f[i] = pr.fraction;
		pc->n++;
		oldest = pc->n <= PACE_SAMPLES ? 0 : pc->n % PACE_SAMPLES;
		if (pc->n >= PACE_WARMUP_BATCHES && now - pc->started >= PACE_WARMUP_SECONDS &&
		    now > pc->t[oldest] && pr.fraction > pc->f[oldest]) {
			double rate = (pr.fraction - pc->f[oldest]) / (now - pc->t[oldest]);

			pr.eta_seconds = (1 - pr.fraction) / rate;
		}
	}
	opt->progress(opt->progress_ctx, &pr);
}

/* The oldest row before the cutoff of each walk (one step down an index on
 * its time). */
enum walk {
	WALK_EXECUTIONS,
	WALK_AUDIT,
	WALK_EVENTS,
	WALK_FIRINGS
};

static const char *const oldest_sql[] = {
	[WALK_EXECUTIONS] = "SELECT extract(epoch FROM min(end_time)) FROM batch_job_execution "
			    "WHERE end_time < $1::timestamptz",
	[WALK_AUDIT] = "SELECT extract(epoch FROM min(event_time)) FROM batch_lock_audit "
		       "WHERE event_time < $1::timestamptz",
	[WALK_EVENTS] = "SELECT extract(epoch FROM min(recorded_at)) FROM batch_schedule_event "
			"WHERE recorded_at < $1::timestamptz",
	[WALK_FIRINGS] = "SELECT extract(epoch FROM min(claimed_at)) FROM batch_schedule_firing "
			 "WHERE claimed_at < $1::timestamptz",
};

static const char *const measure_what[] = {
	[WALK_EXECUTIONS] = "measure cleanup of executions",
	[WALK_AUDIT] = "measure cleanup of the lock audit",
	[WALK_EVENTS] = "measure cleanup of schedule events",
	[WALK_FIRINGS] = "measure cleanup of schedule firings",
};

/* The time a phase will walk: from its oldest row before the cutoff to the
 * cutoff. */
static int pace_start(pace *pc, PGconn *conn, const plan *p, enum walk w, cb_error *err)
{
	const char *pa[1] = { p->cutoff };
	PGresult *res;

	memset(pc, 0, sizeof(*pc));
	pc->started = cb__clock_mono();
	res = cb__repo_exec(conn, measure_what[w], oldest_sql[w], 1, pa, err);
	if (!res)
		return CB_EDB;
	pc->hi = p->cutoff_epoch;
	pc->lo = PQgetisnull(res, 0, 0) ? pc->hi : atof(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb_repo_cleanup(cb_cleanup_result *out, PGconn *conn, const cb_cleanup_options *opt,
		    cb_error *err)
{
	plan p;
	pace pc;
	cursor at;
	char *last_lock = NULL;
	long long batch = 0, skipped = 0;
	int rc, done = 0, passes = 0, attempt = 0;
	double t0 = cb__clock_mono();

	memset(out, 0, sizeof(*out));
	if (!opt || opt->version != CB_CLEANUP_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "cleanup options of unknown version %u",
				    opt ? opt->version : 0u);
	if (opt->older_than_seconds <= 0 || opt->batch <= 0 || opt->keep_last < 0)
		return cb_error_set(err, CB_EINVAL,
				    "cleanup: older-than must be positive, batch positive, "
				    "keep-last not negative");
	if ((rc = make_plan(&p, conn, opt, err)) < 0)
		return rc;
	snprintf(out->cutoff, sizeof(out->cutoff), "%s", p.cutoff);
	if (opt->dry_run) {
		rc = count_only(&out->removed, conn, &p, err);
		out->seconds = cb__clock_mono() - t0;
		plan_free(&p);
		return rc;
	}
	/* Executions first (with their audit rows), then the rest of the audit. */
	if ((rc = pace_start(&pc, conn, &p, WALK_EXECUTIONS, err)) < 0)
		goto out;
	cursor_start(&at);
	while (!done) {
		cb_cleanup_counts b;

		rc = execution_batch(&b, &done, &at, &skipped, conn, &p, opt, err);
		if (rc < 0) {
			if (retryable(err, rc, attempt++))
				continue;
			goto out;
		}
		attempt = 0;
		if (done) {
			/* Instances passed over because they were held: once more from
			 * the start, a few times at most (they may stay held). */
			if (skipped > 0 && ++passes < 3) {
				out->skipped_instances = skipped;
				skipped = 0;
				cursor_start(&at);
				done = 0;
			}
			continue;
		}
		add_counts(&out->removed, &b);
		out->batches = ++batch;
		report(opt, "executions", batch, &b, &out->removed, cb__clock_mono() - t0,
		       passes ? NULL : &pc, at.epoch);
	}
	out->skipped_instances = skipped;
	cursor_start(&at);
	done = 0;
	attempt = 0;
	if ((rc = pace_start(&pc, conn, &p, WALK_AUDIT, err)) < 0)
		goto out;
	while (!done) {
		cb_cleanup_counts b;

		memset(&b, 0, sizeof(b));
		rc = audit_batch(&b.lock_audit, &done, &at, conn, &p, opt, err);
		if (rc < 0) {
			if (retryable(err, rc, attempt++))
				continue;
			goto out;
		}
		attempt = 0;
		if (done)
			break;
		out->removed.lock_audit += b.lock_audit;
		out->batches = ++batch;
		report(opt, "lock audit", batch, &b, &out->removed, cb__clock_mono() - t0, &pc,
		       at.epoch);
	}
	done = 0;
	attempt = 0;
	while (!done) {
		cb_cleanup_counts b;

		memset(&b, 0, sizeof(b));
		rc = lock_batch(&b.locks, &done, &last_lock, conn, &p, opt, err);
		if (rc < 0) {
			if (retryable(err, rc, attempt++))
				continue;
			goto out;
		}
		attempt = 0;
		if (done)
			break;
		out->removed.locks += b.locks;
		out->batches = ++batch;
		report(opt, "locks", batch, &b, &out->removed, cb__clock_mono() - t0, NULL, 0);
	}
	for (int firings = 0; firings < 2; firings++) {
		const char *phase = firings ? "schedule firings" : "schedule events";

		done = 0;
		attempt = 0;
		cursor_start(&at);
		if ((rc = pace_start(&pc, conn, &p, firings ? WALK_FIRINGS : WALK_EVENTS, err)) < 0)
			goto out;
		while (!done) {
			cb_cleanup_counts b;

			memset(&b, 0, sizeof(b));
			rc = schedule_batch(&b, &done, &at, firings, conn, &p, opt, err);
			if (rc < 0) {
				if (retryable(err, rc, attempt++))
					continue;
				goto out;
			}
			attempt = 0;
			if (done)
				break;
			add_counts(&out->removed, &b);
			out->batches = ++batch;
			report(opt, phase, batch, &b, &out->removed, cb__clock_mono() - t0, &pc,
			       at.epoch);
		}
	}
	rc = 0;
out:
	out->seconds = cb__clock_mono() - t0;
	free(last_lock);
	plan_free(&p);
	return rc;
}
