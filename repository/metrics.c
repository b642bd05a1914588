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

	/* One query reads every counter. They are kept by the statements that
	 * change them (sql/011_history_scale.sql), never recounted from the
	 * history, so that this reads a few rows per job and schedule however
	 * old the repository is, and so that cleanup never takes them back. */
	return cb__repo_exec(
		conn, "metrics",
		"WITH k AS (SELECT metric, subject, sum(value) AS v FROM batch_metric_counter "
		"  GROUP BY metric, subject), "
		"c AS (SELECT "
		"  coalesce(sum(v) FILTER (WHERE metric = 'lock_acquire_success_count'), 0) AS ok, "
		"  coalesce(sum(v) FILTER (WHERE metric = 'lock_acquire_failed_count'), 0) AS failed, "
		"  coalesce(sum(v) FILTER (WHERE metric = 'lock_lease_expired_count'), 0) AS expired, "
		"  coalesce(sum(v) FILTER (WHERE metric = 'heartbeat_failure_count'), 0) AS hb, "
		"  coalesce(sum(v) FILTER (WHERE metric = 'fenced_chunk_count'), 0) AS fenced, "
		"  coalesce(sum(v) FILTER (WHERE metric = 'manual_rerun_lock_bypass_count'), 0) "
		"  AS bypass FROM k WHERE subject = ''), "
		/* Steps that have not ended count from their own row (a step's counts
		 * go into the counters when it ends); a manager step's counts are the
		 * sums of its partitions', so only the partitions count. */
		"o AS (SELECT i.job_name, v.m, sum(v.n) AS n "
		"  FROM batch_step_execution s JOIN batch_job_execution e USING (job_execution_id) "
		"  JOIN batch_job_instance i USING (job_instance_id) "
		"  CROSS JOIN LATERAL (VALUES ('items_read_count', s.read_count), "
		"   ('items_written_count', s.write_count), ('items_skipped_count', "
		"   s.read_skip_count + s.process_skip_count + s.write_skip_count), "
		"   ('items_filtered_count', s.filter_count), ('chunk_commit_count', s.commit_count), "
		"   ('chunk_rollback_count', s.rollback_count), "
		"   ('duplicate_target_write_count', s.duplicate_target_write_count)) v(m, n) "
		"  WHERE s.end_time IS NULL AND NOT EXISTS (SELECT 1 FROM batch_step_execution w "
		"   WHERE w.manager_step_execution_id = s.step_execution_id) "
		"  GROUP BY i.job_name, v.m), "
		"s AS (SELECT j.job_name, n.m, coalesce((SELECT k.v FROM k WHERE k.metric = n.m "
		"   AND k.subject = j.job_name), 0) + coalesce((SELECT o.n FROM o "
		"   WHERE o.m = n.m AND o.job_name = j.job_name), 0) AS v "
		"  FROM batch_job_summary j CROSS JOIN (VALUES ('items_read_count'), "
		"   ('items_written_count'), ('items_skipped_count'), ('items_filtered_count'), "
		"   ('chunk_commit_count'), ('chunk_rollback_count'), "
		"   ('duplicate_target_write_count')) n(m)), "
		/* The partitions of the newest executions and of running ones, found
		 * through the primary key and the live-execution index. */
		"ids AS (SELECT job_execution_id FROM (SELECT job_execution_id FROM batch_job_execution "
		"   ORDER BY job_execution_id DESC LIMIT $1::int) n "
		"  UNION SELECT job_execution_id FROM batch_job_execution "
		"   WHERE status IN ('STARTING', 'STARTED', 'STOPPING')), "
		"p AS (SELECT i.job_name, x.worker, x.status, x.read_count, x.write_count, "
		"  e.status IN ('STARTING', 'STARTED', 'STOPPING') AS live "
		"  FROM ids JOIN batch_step_execution x USING (job_execution_id) "
		"  JOIN batch_job_execution e ON e.job_execution_id = ids.job_execution_id "
		"  JOIN batch_job_instance i USING (job_instance_id) "
		"  WHERE x.partition_index IS NOT NULL), "
		/* Schedules: what their firings came to (counted when recorded). */
		"sf AS (SELECT b.job_name, b.schedule_name, b.paused, b.next_fire_time, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_fired_count' "
		"   AND k.subject = b.schedule_id::text) AS fired, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_missed_count' "
		"   AND k.subject = b.schedule_id::text) AS missed, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_failed_to_launch_count' "
		"   AND k.subject = b.schedule_id::text) AS nolaunch, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_orphaned_count' "
		"   AND k.subject = b.schedule_id::text) AS orphaned, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_skipped_overlap_count' "
		"   AND k.subject = b.schedule_id::text) AS overlapped "
		"  FROM batch_schedule b), "
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
		"  coalesce((SELECT sum(v) FROM s WHERE m = 'duplicate_target_write_count'), 0) "
		" UNION ALL SELECT 'items_read_count', 'Items read.', 'counter', job_name, NULL, "
		"  NULL, v FROM s WHERE m = 'items_read_count' "
		" UNION ALL SELECT 'items_written_count', 'Items written.', 'counter', job_name, "
		"  NULL, NULL, v FROM s WHERE m = 'items_written_count' "
		" UNION ALL SELECT 'items_skipped_count', 'Items skipped.', 'counter', job_name, "
		"  NULL, NULL, v FROM s WHERE m = 'items_skipped_count' "
		" UNION ALL SELECT 'items_filtered_count', 'Items filtered by processors.', "
		"  'counter', job_name, NULL, NULL, v FROM s WHERE m = 'items_filtered_count' "
		" UNION ALL SELECT 'chunk_commit_count', 'Chunks committed.', 'counter', job_name, "
		"  NULL, NULL, v FROM s WHERE m = 'chunk_commit_count' "
		" UNION ALL SELECT 'chunk_rollback_count', 'Chunks rolled back.', 'counter', "
		"  job_name, NULL, NULL, v FROM s WHERE m = 'chunk_rollback_count' "
		/* Counted when they happen (step_chunk.c), open steps included. */
		" UNION ALL SELECT 'transition_conflict_count', 'Chunks rolled back because a "
		"  strict status transition found source rows another run had taken (read "
		"  again, or the step failed).', 'counter', j.job_name, NULL, NULL, "
		"  coalesce((SELECT k.v FROM k WHERE k.metric = 'transition_conflict_count' "
		"   AND k.subject = j.job_name), 0) FROM batch_job_summary j "
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
