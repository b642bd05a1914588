/* The metrics: lock outcomes from the audit, step counts, chunk latency, as
 * Prometheus text (cb_metrics_text) or JSON (cb_metrics_json). */
#include "repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/metrics.h"

/* Statuses of the last-status series: each job (schedule) has one series per
 * status of the fixed set, 1 for the current one, so that none appears or
 * vanishes when the status changes. */
#define JOB_STATUSES                                                                               \
	"VALUES ('COMPLETED'), ('FAILED'), ('STOPPED'), ('ABANDONED'), ('STARTING'), "             \
	"('STARTED'), ('STOPPING'), ('UNKNOWN')"
#define FIRING_STATUSES                                                                            \
	"VALUES ('CLAIMED'), ('LAUNCHED'), ('FINISHED'), ('FAILED_TO_LAUNCH'), ('MISFIRED'), "     \
	"('ORPHANED'), ('QUEUED'), ('SKIPPED_OVERLAP')"

/*
 * What people alert on first (sql/014_operator_metrics.sql), each read from
 * a few rows per job or schedule: the jobs and their newest execution (JOBS:
 * batch_job_summary's high-water mark, sql/011_history_scale.sql),
 * the running executions (through the index of live executions), the last
 * success and failure (kept by the statements that end executions), the
 * newest firing of each schedule (through its unique (schedule, instant)
 * index), the partition counters per host (kept when partitions end), the
 * scheduler nodes per host (one row per process that ever ran: a few).
 * y holds their series, with up to three labels.
 */
#define JOBS                                                                                       \
	"jl AS (SELECT j.job_name, e.status AS last_status FROM batch_job_summary j "              \
	"  LEFT JOIN batch_job_execution e ON e.job_execution_id = j.last_execution_id), "
#define JOB_SERIES_CTES                                                                                  \
	"r AS (SELECT i.job_name, count(*) AS n, "                                                       \
	"  max(extract(epoch FROM batch_now() - coalesce(e.start_time, e.create_time)))::bigint AS age " \
	"  FROM batch_job_execution e JOIN batch_job_instance i USING (job_instance_id) "                \
	"  WHERE batch_status_is_live(e.status) GROUP BY i.job_name), "                                  \
	"lf AS (SELECT b.job_name, b.schedule_name, f.fire_time, f.status, f.exit_code "                 \
	"  FROM batch_schedule b LEFT JOIN LATERAL (SELECT x.fire_time, x.status, x.exit_code "          \
	"   FROM batch_schedule_firing x WHERE x.schedule_id = b.schedule_id "                           \
	"   ORDER BY x.fire_time DESC LIMIT 1) f ON true), "                                             \
	"hc AS (SELECT job_name, host, sum(read_count) AS r, sum(write_count) AS w "                     \
	"  FROM batch_partition_host_counter GROUP BY job_name, host), "                                 \
	"sn AS (SELECT host, count(*) FILTER (WHERE stopped_at IS NULL AND heartbeat_at >= "             \
	"  batch_now() - lease_seconds * interval '1 second') AS live, "                                 \
	"  max(heartbeat_at) AS hb FROM batch_scheduler_node GROUP BY host), "                           \
	"y AS (SELECT 'cbatch_job_last_success_timestamp_seconds' AS m, 'End of the job''s "             \
	"  newest COMPLETED execution, Unix seconds (0: none).' AS h, 'gauge' AS t, "                    \
	"  jl.job_name AS job, NULL::text AS ln, NULL::text AS lv, NULL::text AS ln2, "                  \
	"  NULL::text AS lv2, extract(epoch FROM oc.last_success_time)::bigint AS v "                    \
	"  FROM jl LEFT JOIN batch_job_outcome oc USING (job_name) "                                     \
	" UNION ALL SELECT 'cbatch_job_last_failure_timestamp_seconds', 'End of the job''s "             \
	"  newest FAILED execution, Unix seconds (0: none).', 'gauge', jl.job_name, NULL, NULL, "        \
	"  NULL, NULL, extract(epoch FROM oc.last_failure_time)::bigint "                                \
	"  FROM jl LEFT JOIN batch_job_outcome oc USING (job_name) "                                     \
	" UNION ALL SELECT 'cbatch_job_last_status', 'Status of the job''s newest execution: 1 "         \
	"  for its status, 0 for the others.', 'gauge', jl.job_name, 'status', st.s, NULL, NULL, "       \
	"  (jl.last_status IS NOT DISTINCT FROM st.s)::int FROM jl CROSS JOIN (" JOB_STATUSES            \
	"  ) st(s) "                                                                                     \
	" UNION ALL SELECT 'cbatch_job_running_executions', 'Executions STARTING, STARTED or "           \
	"  STOPPING.', 'gauge', jl.job_name, NULL, NULL, NULL, NULL, r.n "                               \
	"  FROM jl LEFT JOIN r USING (job_name) "                                                        \
	" UNION ALL SELECT 'cbatch_job_running_oldest_age_seconds', 'Age of the oldest running "         \
	"  execution (0: none runs).', 'gauge', jl.job_name, NULL, NULL, NULL, NULL, r.age "             \
	"  FROM jl LEFT JOIN r USING (job_name) "                                                        \
	" UNION ALL SELECT 'cbatch_schedule_paused', '1 while the schedule is paused.', 'gauge', "       \
	"  job_name, 'schedule', schedule_name, NULL, NULL, paused::int FROM batch_schedule "            \
	" UNION ALL SELECT 'cbatch_schedule_last_firing_timestamp_seconds', 'Fire instant of the "       \
	"  schedule''s newest firing, Unix seconds (0: none).', 'gauge', job_name, 'schedule', "         \
	"  schedule_name, NULL, NULL, extract(epoch FROM fire_time)::bigint FROM lf "                    \
	" UNION ALL SELECT 'cbatch_schedule_last_firing_exit_code', 'Exit code of the process "          \
	"  the newest firing launched (-1: none, or not ended).', 'gauge', job_name, "                   \
	"  'schedule', schedule_name, NULL, NULL, coalesce(exit_code, -1) FROM lf "                      \
	" UNION ALL SELECT 'cbatch_schedule_last_firing_status', 'Status of the schedule''s "            \
	"  newest firing: 1 for its status, 0 for the others.', 'gauge', lf.job_name, "                  \
	"  'schedule', lf.schedule_name, 'status', st.s, (lf.status IS NOT DISTINCT FROM st.s)::int "    \
	"  FROM lf CROSS JOIN (" FIRING_STATUSES ") st(s) "                                              \
	" UNION ALL SELECT 'cbatch_partition_host_items_read_total', 'Items read by partitions, "        \
	"  by the host of the worker that claimed them last, counted when the partition ends.', "        \
	"  'counter', job_name, 'host', host, NULL, NULL, r FROM hc "                                    \
	" UNION ALL SELECT 'cbatch_partition_host_items_written_total', 'Items written by "              \
	"  partitions, by the host of the worker that claimed them last, counted when the "              \
	"  partition ends.', 'counter', job_name, 'host', host, NULL, NULL, w FROM hc "                  \
	" UNION ALL SELECT 'cbatch_scheduler_host_live_nodes', 'Scheduler nodes on the host "            \
	"  whose heartbeat lease holds (0: every node there stopped or died).', 'gauge', NULL, "         \
	"  'host', host, NULL, NULL, live FROM sn "                                                      \
	" UNION ALL SELECT 'cbatch_scheduler_host_last_heartbeat_timestamp_seconds', 'Newest "           \
	"  heartbeat of a scheduler node on the host, Unix seconds.', 'gauge', NULL, 'host', host, "     \
	"  NULL, NULL, extract(epoch FROM hb)::bigint FROM sn), "

/*
 * The metric series, one row each: name, help, type (counter or gauge), job
 * label (NULL for none), a second label's name and value (NULL for none),
 * value; ordered by name, then labels. Formatting (and its escaping) is done
 * in C, so the SQL holds no backslash: it reads the same under any
 * standard_conforming_strings.
 */
static PGresult *metrics_rows(PGconn *conn, cb_error *err)
{
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
		/* The partitions of running executions (found through the index of
		 * live executions). */
		"p AS (SELECT i.job_name, x.status, true AS live "
		"  FROM batch_step_execution x JOIN batch_job_execution e USING (job_execution_id) "
		"  JOIN batch_job_instance i USING (job_instance_id) "
		"  WHERE x.partition_index IS NOT NULL "
		"  AND batch_status_is_live(e.status)), " JOBS JOB_SERIES_CTES
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
		"   AND k.subject = b.schedule_id::text) AS overlapped, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_recovery_restart_count' "
		"   AND k.subject = b.schedule_id::text) AS restarted, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_not_recovered_count' "
		"   AND k.subject = b.schedule_id::text) AS given_up, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_claim_lost_count' "
		"   AND k.subject = b.schedule_id::text) AS lost, "
		"  (SELECT k.v FROM k WHERE k.metric = 'schedule_backfill_count' "
		"   AND k.subject = b.schedule_id::text) AS backfilled "
		"  FROM batch_schedule b), "
		/* Takeovers by the lock's kind and the reason: every pair, 0 or not. */
		"z AS (SELECT 'cbatch_lock_takeover_total' AS m, 'Locks taken from their "
		"  owner, by the lock''s kind (a job''s, a partition''s) and the reason (its "
		"  lease expired, or its owner''s process was seen dead on its host).' AS h, "
		"  'counter' AS t, NULL::text AS job, 'lock' AS ln, kd.kind AS lv, "
		"  'reason' AS ln2, rs.reason AS lv2, (SELECT k.v FROM k WHERE k.metric = "
		"  'lock_takeover_count' AND k.subject = kd.kind || ':' || rs.reason) AS v "
		"  FROM (VALUES ('job'), ('partition')) kd(kind) "
		"  CROSS JOIN (VALUES ('lease_expired'), ('owner_dead')) rs(reason)), "
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
		" UNION ALL SELECT 'cbatch_schedule_recovery_restart_total', 'Executions of "
		"  the schedule''s firings restarted by recovery (events RESTARTED).', "
		"  'counter', job_name, 'schedule', schedule_name, restarted FROM sf "
		" UNION ALL SELECT 'cbatch_schedule_not_recovered_total', 'Firings whose "
		"  execution recovery gave up on (events NOT_RECOVERED).', 'counter', job_name, "
		"  'schedule', schedule_name, given_up FROM sf "
		" UNION ALL SELECT 'cbatch_schedule_claim_lost_total', 'Fire instants a node "
		"  found claimed by another node (SKIPPED_CLAIMED: the cluster fired them "
		"  once).', 'counter', job_name, 'schedule', schedule_name, lost FROM sf "
		" UNION ALL SELECT 'cbatch_schedule_backfill_total', 'Past instants a "
		"  backfill queued as firings (events BACKFILL), canceled ones included.', "
		"  'counter', job_name, 'schedule', schedule_name, backfilled FROM sf "
		" UNION ALL SELECT 'cbatch_job_fenced_chunk_total', 'Executions of the job "
		"  whose chunk was rolled back because they had lost their lock (FENCED).', "
		"  'counter', j.job_name, NULL, NULL, coalesce((SELECT k.v FROM k WHERE "
		"  k.metric = 'job_fenced_chunk_count' AND k.subject = j.job_name), 0) "
		"  FROM batch_job_summary j "
		" UNION ALL SELECT 'schedule_next_fire_timestamp_seconds', 'The next fire "
		"  instant of active schedules, Unix seconds.', 'gauge', job_name, 'schedule', "
		"  schedule_name, extract(epoch FROM next_fire_time)::bigint FROM sf "
		"  WHERE NOT paused AND next_fire_time IS NOT NULL) "
		"SELECT m, h, t, job, ln, lv, NULL::text AS ln2, NULL::text AS lv2, "
		"  coalesce(v, 0)::text AS v FROM x "
		"UNION ALL SELECT m, h, t, job, ln, lv, ln2, lv2, coalesce(v, 0)::text FROM y "
		"UNION ALL SELECT m, h, t, job, ln, lv, ln2, lv2, coalesce(v, 0)::text FROM z "
		"ORDER BY 1, 4 NULLS FIRST, 6 NULLS FIRST, 8 NULLS FIRST",
		0, NULL, err);
}

static void help_text(char *out, size_t size, const char *h);

/*
 * The names metrics are exposed under (issue 21: Prometheus's conventions):
 * the queries and the counters' rows keep the seed's names, which the
 * repository's triggers and seeds use as keys; only the exposition renames.
 * The seed's six lock and writer counters say their seed name in HELP.
 */
static const struct {
	const char *seed, *name;
	int say_seed;
} renamed[] = {
	{ "chunk_commit_count", "cbatch_chunk_commit_total", 0 },
	{ "chunk_rollback_count", "cbatch_chunk_rollback_total", 0 },
	{ "duplicate_target_write_count", "cbatch_duplicate_target_write_total", 1 },
	{ "fenced_chunk_count", "cbatch_fenced_chunk_total", 0 },
	{ "heartbeat_failure_count", "cbatch_heartbeat_failure_total", 1 },
	{ "items_filtered_count", "cbatch_items_filtered_total", 0 },
	{ "items_read_count", "cbatch_items_read_total", 0 },
	{ "items_skipped_count", "cbatch_items_skipped_total", 0 },
	{ "items_written_count", "cbatch_items_written_total", 0 },
	{ "lock_acquire_failed_count", "cbatch_lock_acquire_failed_total", 1 },
	{ "lock_acquire_success_count", "cbatch_lock_acquire_success_total", 1 },
	{ "lock_lease_expired_count", "cbatch_lock_lease_expired_total", 1 },
	{ "manual_rerun_lock_bypass_count", "cbatch_manual_rerun_lock_bypass_total", 1 },
	{ "partitions", "cbatch_running_partitions", 0 },
	{ "schedule_failed_to_launch_count", "cbatch_schedule_failed_to_launch_total", 0 },
	{ "schedule_fired_count", "cbatch_schedule_fired_total", 0 },
	{ "schedule_missed_count", "cbatch_schedule_missed_total", 0 },
	{ "schedule_next_fire_timestamp_seconds", "cbatch_schedule_next_fire_timestamp_seconds",
	  0 },
	{ "schedule_orphaned_count", "cbatch_schedule_orphaned_total", 0 },
	{ "schedule_skipped_overlap_count", "cbatch_schedule_skipped_overlap_total", 0 },
	{ "transition_conflict_count", "cbatch_transition_conflict_total", 0 },
};

/* Row @p i's exposed name, and its seed name when HELP must say it (else NULL). */
static const char *exposed_name(const PGresult *res, int i, const char **seed)
{
	const char *m = PQgetvalue(res, i, 0);

	*seed = NULL;
	for (size_t k = 0; k < sizeof(renamed) / sizeof(*renamed); k++)
		if (strcmp(m, renamed[k].seed) == 0) {
			if (renamed[k].say_seed)
				*seed = renamed[k].seed;
			return renamed[k].name;
		}
	return m; /* the new series are named right in the query */
}

/* Row @p i's HELP text, on one line, with its seed name if it has one. */
static void help_of(char *out, size_t size, const PGresult *res, int i, const char *seed)
{
	help_text(out, size, PQgetvalue(res, i, 1));
	if (seed) {
		size_t n = strlen(out);

		snprintf(out + n, size - n, " (seed: %s)", seed);
	}
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

/* Row @p i's labels, k = 0..2: name and value, or NULL (none). The job's
 * label is batch_job: Prometheus owns job (a scrape renames a target's to
 * exported_job, and honor_labels would overwrite the scrape's own). */
static const char *label(const PGresult *res, int i, int k, const char **value)
{
	static const int col[3] = { 3, 4, 6 };

	*value = NULL;
	if (PQgetisnull(res, i, col[k]))
		return NULL;
	if (k == 0) {
		*value = PQgetvalue(res, i, 3);
		return "batch_job";
	}
	*value = PQgetvalue(res, i, col[k] + 1);
	return PQgetvalue(res, i, col[k]);
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
		const char *seed, *m = exposed_name(res, i, &seed);
		int labels = 0;

		if (i == 0 || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0)) != 0) {
			char help[600];

			help_of(help, sizeof(help), res, i, seed);
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
		for (int k = 0; k < 3; k++) {
			const char *v, *l = label(res, i, k, &v);

			if (!l)
				continue;
			mstr(&b, labels++ ? "," : "{");
			mstr(&b, l);
			mstr(&b, "=\"");
			mescaped(&b, v, 1);
			mstr(&b, "\"");
		}
		if (labels)
			mstr(&b, "}");
		mstr(&b, " ");
		mstr(&b, PQgetvalue(res, i, 8));
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
		char help[600];
		const char *seed, *m = exposed_name(res, i, &seed);
		json_t *labels = json_object(), *series;

		help_of(help, sizeof(help), res, i, seed);
		for (int k = 0; k < 3 && labels; k++) {
			const char *v, *l = label(res, i, k, &v);

			if (l)
				json_object_set_new(labels, l, json_string(v));
		}
		series = json_pack("{s:s, s:s, s:s, s:o*, s:I}", "name", m, "help", help, "type",
				   PQgetvalue(res, i, 2), "labels", labels, "value",
				   (json_int_t)strtoll(PQgetvalue(res, i, 8), NULL, 10));
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
