/* The metrics: lock outcomes from the audit, step counts, chunk latency, as
 * Prometheus text (cb_metrics_text) or JSON (cb_metrics_json). */
#include "repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/metrics.h"

/* Per-worker partition series cover the partitions of this many newest job
 * executions, and of running ones: worker names carry a pid, so over the
 * whole history their number has no bound. */
#define PARTITION_EXECUTIONS "100"

/*
 * The metric series, one row each: name, help, type (counter or gauge), job
 * label (NULL for none), a second label's name and value (NULL for none),
 * value; ordered by name, then labels. Formatting (and its escaping) is done
 * in C, so the SQL holds no backslash: it reads the same under any
 * standard_conforming_strings.
 */
static PGresult *metrics_rows(PGconn *conn, cb_error *err)
{
	const char *p[1] = { PARTITION_EXECUTIONS };

	/* One query reads every counter; they come from the audit and the step
	 * executions, so every process sees the same numbers. */
	return cb__repo_exec(
		conn, "metrics",
		/* A bypass is a force-unlock after which the next taking of the same
		 * lock succeeded. Only takings and force-unlocks are ordered: the old
		 * holder's own FENCED / HEARTBEAT_FAILED (and skips) come in between. */
		"WITH a AS (SELECT lock_name, outcome, event_time, "
		"  CASE WHEN outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER', "
		"  'FORCE_UNLOCKED') THEN lead(outcome) OVER (PARTITION BY lock_name, outcome IN ("
		"   'ACQUIRED', 'LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER', 'FORCE_UNLOCKED') "
		"   ORDER BY audit_id) END "
		"  AS next_outcome "
		"  FROM batch_lock_audit), "
		"c AS (SELECT "
		"  count(*) FILTER (WHERE outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER', "
		"   'OWNER_DEAD_TAKEOVER')) AS ok, "
		"  count(*) FILTER (WHERE outcome IN ('SKIPPED_HELD', 'ERROR')) AS failed, "
		"  count(*) FILTER (WHERE outcome = 'LEASE_EXPIRED_TAKEOVER') AS expired, "
		"  count(*) FILTER (WHERE outcome = 'HEARTBEAT_FAILED') AS hb, "
		"  count(*) FILTER (WHERE outcome = 'FENCED') AS fenced, "
		"  count(*) FILTER (WHERE outcome = 'FORCE_UNLOCKED' "
		"   AND next_outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER', "
		"   'OWNER_DEAD_TAKEOVER')) AS bypass "
		"  FROM a), "
		/* A manager step's counts are the sums of its partitions' (once it
		 * ends): only the partitions count, or every item would count twice. */
		"s AS (SELECT i.job_name, sum(s.read_count) AS r, sum(s.write_count) AS w, "
		"  sum(s.read_skip_count + s.process_skip_count + s.write_skip_count) AS k, "
		"  sum(s.filter_count) AS f, sum(s.commit_count) AS cm, "
		"  sum(s.rollback_count) AS rb, sum(s.duplicate_target_write_count) AS d, "
		"  sum(s.transition_conflict_count) AS tc "
		"  FROM batch_step_execution s JOIN batch_job_execution e USING (job_execution_id) "
		"  JOIN batch_job_instance i USING (job_instance_id) "
		"  WHERE NOT EXISTS (SELECT 1 FROM batch_step_execution w "
		"   WHERE w.manager_step_execution_id = s.step_execution_id) "
		"  GROUP BY i.job_name), "
		/* The partitions of the newest executions and of running ones. */
		"p AS (SELECT i.job_name, x.worker, x.status, x.read_count, x.write_count, "
		"  e.status IN ('STARTING', 'STARTED', 'STOPPING') AS live "
		"  FROM batch_step_execution x JOIN batch_job_execution e USING (job_execution_id) "
		"  JOIN batch_job_instance i USING (job_instance_id) "
		"  WHERE x.partition_index IS NOT NULL "
		"  AND (e.status IN ('STARTING', 'STARTED', 'STOPPING') "
		"   OR e.job_execution_id IN (SELECT job_execution_id FROM batch_job_execution "
		"    ORDER BY job_execution_id DESC LIMIT $1::int))), "
		/* Schedules: what their firings came to (since the last cleanup). */
		"sf AS (SELECT b.job_name, b.schedule_name, b.paused, b.next_fire_time, "
		"  count(f.firing_id) FILTER (WHERE f.status IN ('LAUNCHED', 'FINISHED', "
		"   'ORPHANED')) AS fired, "
		"  coalesce(sum(CASE WHEN f.kind <> 'SCHEDULED' AND f.missed_count > 0 "
		"   THEN f.missed_count END), 0) AS missed, "
		"  count(f.firing_id) FILTER (WHERE f.status = 'FAILED_TO_LAUNCH') AS nolaunch, "
		"  count(f.firing_id) FILTER (WHERE f.status = 'ORPHANED') AS orphaned, "
		"  count(f.firing_id) FILTER (WHERE f.status = 'SKIPPED_OVERLAP') AS overlapped "
		"  FROM batch_schedule b LEFT JOIN batch_schedule_firing f USING (schedule_id) "
		"  GROUP BY b.schedule_id), "
		"x AS (SELECT 'lock_acquire_success_count' AS m, 'Locks acquired, including lease "
		"  takeovers.' AS h, 'counter' AS t, NULL::text AS job, NULL::text AS ln, "
		"  NULL::text AS lv, ok AS v FROM c "
		" UNION ALL SELECT 'lock_acquire_failed_count', 'Launches skipped because the lock "
		"  was held, or lock errors.', 'counter', NULL, NULL, NULL, failed FROM c "
		" UNION ALL SELECT 'lock_lease_expired_count', 'Locks taken over after the owner''s "
		"  lease expired.', 'counter', NULL, NULL, NULL, expired FROM c "
		" UNION ALL SELECT 'heartbeat_failure_count', 'Heartbeats that found the lock lost "
		"  or the database unreachable past the lease.', 'counter', NULL, NULL, NULL, hb "
		"  FROM c "
		" UNION ALL SELECT 'fenced_chunk_count', 'Executions whose chunk was rolled "
		"  back because they had lost their lock (refused by the fence, or their "
		"  session ended by a takeover), whatever else their heartbeat saw.', 'counter', "
		"  NULL, NULL, NULL, fenced FROM c "
		" UNION ALL SELECT 'manual_rerun_lock_bypass_count', 'Force-unlocks followed by a "
		"  run that took the lock.', 'counter', NULL, NULL, NULL, bypass FROM c "
		" UNION ALL SELECT 'duplicate_target_write_count', 'Target writes absorbed as "
		"  duplicates by idempotent writers.', 'counter', NULL, NULL, NULL, "
		"  coalesce((SELECT sum(d) FROM s), 0) "
		" UNION ALL SELECT 'items_read_count', 'Items read.', 'counter', job_name, NULL, "
		"  NULL, r FROM s "
		" UNION ALL SELECT 'items_written_count', 'Items written.', 'counter', job_name, "
		"  NULL, NULL, w FROM s "
		" UNION ALL SELECT 'items_skipped_count', 'Items skipped.', 'counter', job_name, "
		"  NULL, NULL, k FROM s "
		" UNION ALL SELECT 'items_filtered_count', 'Items filtered by processors.', "
		"  'counter', job_name, NULL, NULL, f FROM s "
		" UNION ALL SELECT 'chunk_commit_count', 'Chunks committed.', 'counter', job_name, "
		"  NULL, NULL, cm FROM s "
		" UNION ALL SELECT 'chunk_rollback_count', 'Chunks rolled back.', 'counter', "
		"  job_name, NULL, NULL, rb FROM s "
		" UNION ALL SELECT 'transition_conflict_count', 'Chunks rolled back because a "
		"  strict status transition found source rows another run had taken (read "
		"  again, or the step failed).', 'counter', job_name, NULL, NULL, tc FROM s "
		/* A partition taken over counts for its last claimant: the row keeps
		 * the counts of all its claims and the name of the last one. */
		" UNION ALL SELECT 'partition_worker_items_read_count', 'Items read by "
		"  partitions, by the worker (host/pid/thread) that claimed them last; "
		"  partitions of the newest " PARTITION_EXECUTIONS " executions and of running "
		"  ones.', 'counter', job_name, 'worker', worker, sum(read_count) FROM p "
		"  WHERE worker IS NOT NULL GROUP BY job_name, worker "
		" UNION ALL SELECT 'partition_worker_items_written_count', 'Items written by "
		"  partitions, by the worker (host/pid/thread) that claimed them last; "
		"  partitions of the newest " PARTITION_EXECUTIONS " executions and of running "
		"  ones.', 'counter', job_name, 'worker', worker, sum(write_count) FROM p "
		"  WHERE worker IS NOT NULL GROUP BY job_name, worker "
		" UNION ALL SELECT 'partitions', 'Partitions of running executions, by status "
		"  (STARTING: not claimed yet).', 'gauge', job_name, 'status', status, count(*) "
		"  FROM p WHERE live GROUP BY job_name, status "
		" UNION ALL SELECT 'schedule_fired_count', 'Fire instants a scheduler node "
		"  claimed and launched (once per cluster).', 'counter', job_name, 'schedule', "
		"  schedule_name, fired FROM sf "
		" UNION ALL SELECT 'schedule_missed_count', 'Fire instants missed while no "
		"  scheduler ran (misfires).', 'counter', job_name, 'schedule', schedule_name, "
		"  missed FROM sf "
		" UNION ALL SELECT 'schedule_failed_to_launch_count', 'Claimed firings that "
		"  could not be launched.', 'counter', job_name, 'schedule', schedule_name, "
		"  nolaunch FROM sf "
		" UNION ALL SELECT 'schedule_orphaned_count', 'Firings left open by a scheduler "
		"  node that died.', 'counter', job_name, 'schedule', schedule_name, orphaned "
		"  FROM sf "
		" UNION ALL SELECT 'schedule_skipped_overlap_count', 'Fire instants skipped "
		"  because an earlier firing still ran (overlap policy).', 'counter', job_name, "
		"  'schedule', schedule_name, overlapped FROM sf "
		" UNION ALL SELECT 'schedule_next_fire_timestamp_seconds', 'The next fire "
		"  instant of active schedules, Unix seconds.', 'gauge', job_name, 'schedule', "
		"  schedule_name, extract(epoch FROM next_fire_time)::bigint FROM sf "
		"  WHERE NOT paused AND next_fire_time IS NOT NULL) "
		"SELECT m, h, t, job, ln, lv, coalesce(v, 0)::text FROM x "
		"ORDER BY m, job NULLS FIRST, lv NULLS FIRST",
		1, p, err);
}

/* Help text on one line: runs of white space (from the SQL's line breaks) as one. */
static void help_text(char *out, size_t size, const char *h)
{
	size_t n = 0;
	int gap = 0;

	for (; *h && n + 1 < size; h++) {
		if (*h == ' ' || *h == '\t' || *h == '\n' || *h == '\r') {
			gap = n > 0;
			continue;
		}
		if (gap && n + 2 < size)
			out[n++] = ' ';
		gap = 0;
		out[n++] = *h;
	}
	out[n] = '\0';
}

typedef struct mbuf {
	char *s;
	size_t len, cap;
	int failed;
} mbuf;

static void madd(mbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->s, cap);

		if (!p) {
			b->failed = 1;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void mstr(mbuf *b, const char *s)
{
	madd(b, s, strlen(s));
}

/* The exposition format's escaping: \\ and \n always, \" in label values. */
static void mescaped(mbuf *b, const char *s, int label)
{
	for (; *s; s++) {
		if (*s == '\\')
			mstr(b, "\\\\");
		else if (*s == '\n')
			mstr(b, "\\n");
		else if (*s == '"' && label)
			mstr(b, "\\\"");
		else
			madd(b, s, 1);
	}
}

int cb_metrics_text(char **out, PGconn *conn, cb_error *err)
{
	mbuf b = { NULL, 0, 0, 0 };
	PGresult *res;
	int i, n;

	*out = NULL;
	res = metrics_rows(conn, err);
	if (!res)
		return CB_EDB;
	n = PQntuples(res);
	mstr(&b, "");
	for (i = 0; i < n; i++) {
		const char *m = PQgetvalue(res, i, 0);

		if (i == 0 || strcmp(m, PQgetvalue(res, i - 1, 0)) != 0) {
			char help[512];

			help_text(help, sizeof(help), PQgetvalue(res, i, 1));
			mstr(&b, "# HELP ");
			mstr(&b, m);
			mstr(&b, " ");
			mescaped(&b, help, 0);
			mstr(&b, "\n# TYPE ");
			mstr(&b, m);
			mstr(&b, " ");
			mstr(&b, PQgetvalue(res, i, 2));
			mstr(&b, "\n");
		}
		mstr(&b, m);
		if (!PQgetisnull(res, i, 3)) {
			mstr(&b, "{job=\"");
			mescaped(&b, PQgetvalue(res, i, 3), 1);
			mstr(&b, "\"");
			if (!PQgetisnull(res, i, 4)) {
				mstr(&b, ",");
				mstr(&b, PQgetvalue(res, i, 4));
				mstr(&b, "=\"");
				mescaped(&b, PQgetvalue(res, i, 5), 1);
				mstr(&b, "\"");
			}
			mstr(&b, "}");
		}
		mstr(&b, " ");
		mstr(&b, PQgetvalue(res, i, 6));
		mstr(&b, "\n");
	}
	PQclear(res);
	if (b.failed) {
		free(b.s);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	*out = b.s;
	return 0;
}

int cb_metrics_json(json_t **out, PGconn *conn, cb_error *err)
{
	json_t *doc = json_object(), *arr = json_array();
	PGresult *res;
	int i, n, rc = 0;

	*out = NULL;
	if (!doc || !arr || json_object_set_new(doc, "metrics", arr) < 0) {
		json_decref(doc);
		if (doc)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		json_decref(arr);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	res = metrics_rows(conn, err);
	if (!res) {
		json_decref(doc);
		return CB_EDB;
	}
	n = PQntuples(res);
	for (i = 0; i < n && rc == 0; i++) {
		char help[512];
		json_t *labels = json_object(), *series;

		help_text(help, sizeof(help), PQgetvalue(res, i, 1));
		if (labels && !PQgetisnull(res, i, 3))
			json_object_set_new(labels, "job", json_string(PQgetvalue(res, i, 3)));
		if (labels && !PQgetisnull(res, i, 4))
			json_object_set_new(labels, PQgetvalue(res, i, 4),
					    json_string(PQgetvalue(res, i, 5)));
		series = json_pack("{s:s, s:s, s:s, s:o*, s:I}", "name", PQgetvalue(res, i, 0),
				   "help", help, "type", PQgetvalue(res, i, 2), "labels", labels,
				   "value", (json_int_t)strtoll(PQgetvalue(res, i, 6), NULL, 10));
		if (!series || json_array_append_new(arr, series) < 0)
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	PQclear(res);
	if (rc < 0) {
		json_decref(doc);
		return rc;
	}
	*out = doc;
	return 0;
}
