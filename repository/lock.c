/* The execution lock's SQL: acquire, heartbeat, release, audit, listing, metrics. */
#include "repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/lock.h"

static void fmt_double(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%.6f", v);
}

/* The current holder of @p lock_name if its lease is live, else "". */
static int live_holder(char *out, size_t size, PGconn *conn, const char *lock_name,
		       cb_error *err)
{
	const char *p[1] = { lock_name };
	PGresult *res;

	out[0] = '\0';
	res = cb__repo_exec(conn, "read lock holder",
			    "SELECT owner_id FROM batch_lock WHERE lock_name = $1 AND NOT released "
			    "AND locked_until >= clock_timestamp()",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1)
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__lock_acquire(cb__lock_grant *out, PGconn *conn, const char *lock_name,
		     const char *owner_id, double lease_seconds, cb_error *err)
{
	char lease[32], holder[256];
	const char *p[4] = { lock_name, owner_id, lease, NULL };
	PGresult *res;
	const char *outcome;
	int rc;

	memset(out, 0, sizeof(*out));
	fmt_double(lease, sizeof(lease), lease_seconds);
	/* A holder on this host whose process is gone is taken over at once. The
	 * read takes no lock; the acquire checks again that it is still the owner. */
	rc = live_holder(holder, sizeof(holder), conn, lock_name, err);
	if (rc < 0)
		return rc;
	if (holder[0] && strcmp(holder, owner_id) != 0 && cb__owner_gone(holder))
		p[3] = holder;
	res = cb__repo_exec(conn, "acquire lock",
			    "SELECT fencing_token, outcome, holder, held_until, held_left_seconds, "
			    "coalesce(old_session_ended, true), coalesce(note, '') "
			    "FROM batch_lock_acquire($1, $2, $3::float8, $4)",
			    4, p, err);
	if (!res)
		return CB_EDB;
	outcome = PQgetvalue(res, 0, 1);
	out->outcome = strcmp(outcome, "SKIPPED_HELD") == 0		 ? CB__LOCK_HELD
		       : strcmp(outcome, "LEASE_EXPIRED_TAKEOVER") == 0 ? CB__LOCK_TAKEOVER
		       : strcmp(outcome, "OWNER_DEAD_TAKEOVER") == 0	 ? CB__LOCK_OWNER_DEAD
									 : CB__LOCK_ACQUIRED;
	out->fencing_token = PQgetisnull(res, 0, 0) ? 0 : atoll(PQgetvalue(res, 0, 0));
	snprintf(out->holder, sizeof(out->holder), "%s", PQgetvalue(res, 0, 2));
	snprintf(out->held_until, sizeof(out->held_until), "%s", PQgetvalue(res, 0, 3));
	out->held_left_seconds = PQgetisnull(res, 0, 4) ? 0 : atof(PQgetvalue(res, 0, 4));
	out->old_session_ended = PQgetvalue(res, 0, 5)[0] == 't';
	snprintf(out->note, sizeof(out->note), "%s", PQgetvalue(res, 0, 6));
	PQclear(res);
	return 0;
}

int cb__lock_record_session(PGconn *conn, const char *lock_name, const char *owner_id,
			    long long token, cb_error *err)
{
	char tok[24];
	const char *p[3] = { lock_name, owner_id, tok };

	snprintf(tok, sizeof(tok), "%lld", token);
	return cb__repo_command(conn, "record lock session",
				"SELECT batch_lock_record_session($1, $2, $3::bigint)", 3, p, err);
}

int cb__lock_held(int *held, PGconn *conn, const char *lock_name, const char *owner_id,
		  long long token, cb_error *err)
{
	char tok[24];
	const char *p[3] = { lock_name, owner_id, tok };
	PGresult *res;

	*held = 0;
	snprintf(tok, sizeof(tok), "%lld", token);
	/* FOR SHARE: a takeover in flight (it ends our session under its row
	 * lock) is waited for, so that its outcome is what we see. */
	res = cb__repo_exec(conn, "check lock",
			    "SELECT 1 FROM batch_lock WHERE lock_name = $1 AND owner_id = $2 "
			    "AND fencing_token = $3::bigint AND NOT released FOR SHARE",
			    3, p, err);
	if (!res)
		return CB_EDB;
	*held = PQntuples(res) > 0;
	PQclear(res);
	return 0;
}

int cb__lock_bound_waits(char *saved, size_t size, PGconn *conn, double seconds, cb_error *err)
{
	char ms[32];
	const char *p[1] = { ms };
	PGresult *res;

	saved[0] = '\0';
	snprintf(ms, sizeof(ms), "%lld", (long long)(seconds * 1000.0 + 0.5));
	res = cb__repo_exec(conn, "bound lock waits",
			    "SELECT current_setting('lock_timeout'), "
			    "set_config('lock_timeout', $1 || 'ms', false)",
			    1, p, err);
	if (!res)
		return CB_EDB;
	snprintf(saved, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__lock_restore_waits(PGconn *conn, const char *saved, cb_error *err)
{
	const char *p[1] = { saved };

	return cb__repo_command(conn, "restore lock_timeout",
				"SELECT set_config('lock_timeout', $1, false)", 1, p, err);
}

int cb__lock_heartbeat(int *alive, PGconn *conn, const char *lock_name, const char *owner_id,
		       long long token, double lease_seconds, long long job_execution_id,
		       cb_error *err)
{
	char tok[24], lease[32], exec[24];
	const char *p[5] = { lock_name, owner_id, tok, lease, exec };
	PGresult *res;

	*alive = 0;
	snprintf(tok, sizeof(tok), "%lld", token);
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	fmt_double(lease, sizeof(lease), lease_seconds);
	res = cb__repo_exec(conn, "heartbeat",
			    "SELECT batch_lock_heartbeat($1, $2, $3::bigint, $4::float8, $5::bigint)",
			    5, p, err);
	if (!res)
		return err->code ? err->code : CB_EDB;
	*alive = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return 0;
}

int cb__lock_release(PGconn *conn, const char *lock_name, const char *owner_id, long long token,
		     double at_least_seconds, long long job_execution_id, cb_error *err)
{
	char tok[24], least[32], exec[24];
	const char *p[5] = { lock_name, owner_id, tok, least, exec };

	snprintf(tok, sizeof(tok), "%lld", token);
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	fmt_double(least, sizeof(least), at_least_seconds);
	return cb__repo_command(conn, "release lock",
				"SELECT batch_lock_release($1, $2, $3::bigint, $4::float8, $5::bigint)",
				5, p, err);
}

int cb__lock_audit(PGconn *conn, const char *lock_name, const char *owner_id, const char *outcome,
		   long long token, long long job_execution_id, const char *detail, cb_error *err)
{
	char tok[24], exec[24];
	const char *p[6] = { lock_name, owner_id, outcome, token ? tok : NULL,
			     job_execution_id ? exec : NULL, detail ? detail : "" };

	snprintf(tok, sizeof(tok), "%lld", token);
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	return cb__repo_command(conn, "record lock outcome",
				"INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, "
				"fencing_token, job_execution_id, detail) "
				"VALUES ($1, $2, $3, $4::bigint, $5::bigint, left($6, 2000))",
				6, p, err);
}

int cb_lock_list(json_t **out, PGconn *conn, cb_error *err)
{
	json_error_t jerr;
	PGresult *res;

	*out = NULL;
	res = cb__repo_exec(conn, "list locks",
			    "SELECT coalesce(jsonb_agg(jsonb_build_object("
			    " 'lock_name', lock_name, 'owner_id', owner_id,"
			    " 'fencing_token', fencing_token, 'locked_at', locked_at,"
			    " 'locked_until', locked_until, 'released', released,"
			    " 'lease_left_seconds', round(extract(epoch FROM locked_until - "
			    "   clock_timestamp())::numeric, 3),"
			    " 'job_execution_id', job_execution_id) ORDER BY lock_name), '[]') "
			    "FROM batch_lock",
			    0, NULL, err);
	if (!res)
		return CB_EDB;
	*out = json_loads(PQgetvalue(res, 0, 0), 0, &jerr);
	PQclear(res);
	if (!*out)
		return cb_error_set(err, CB_EDB, "list locks: unreadable JSON: %s", jerr.text);
	return 0;
}

int cb_lock_force_unlock(PGconn *conn, const char *lock_name, const char *who,
			 const char *reason, cb_error *err)
{
	char detail[1024];
	const char *p[3] = { lock_name, who, detail };
	PGresult *res;
	int rc = 0;

	snprintf(detail, sizeof(detail), "forced by %s: %s", who, reason && *reason ? reason : "no reason given");
	/* The row stays so that the next owner's token is higher: the old
	 * holder's session is ended, and if it still runs it is fenced off. */
	res = cb__repo_exec(conn, "force unlock",
			    "SELECT unlocked FROM batch_lock_force_unlock($1, $2, $3)", 3, p, err);
	if (!res)
		return CB_EDB;
	if (PQgetvalue(res, 0, 0)[0] != 't')
		rc = cb_error_set(err, CB_ENOTFOUND, "no lock named '%s'", lock_name);
	PQclear(res);
	return rc;
}

/*
 * The metric series, one row each: name, help, job label (NULL for none),
 * value; ordered by name, then job. Formatting (and its escaping) is done in C,
 * so the SQL holds no backslash: it reads the same under any
 * standard_conforming_strings.
 */
static PGresult *metrics_rows(PGconn *conn, cb_error *err)
{
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
		"s AS (SELECT i.job_name, sum(s.read_count) AS r, sum(s.write_count) AS w, "
		"  sum(s.read_skip_count + s.process_skip_count + s.write_skip_count) AS k, "
		"  sum(s.filter_count) AS f, sum(s.commit_count) AS cm, "
		"  sum(s.rollback_count) AS rb, sum(s.duplicate_target_write_count) AS d "
		"  FROM batch_step_execution s JOIN batch_job_execution e USING (job_execution_id) "
		"  JOIN batch_job_instance i USING (job_instance_id) GROUP BY i.job_name), "
		"x AS (SELECT 'lock_acquire_success_count' AS m, 'Locks acquired, including lease "
		"  takeovers.' AS h, NULL::text AS job, ok AS v FROM c "
		" UNION ALL SELECT 'lock_acquire_failed_count', 'Launches skipped because the lock "
		"  was held, or lock errors.', NULL, failed FROM c "
		" UNION ALL SELECT 'lock_lease_expired_count', 'Locks taken over after the owner''s "
		"  lease expired.', NULL, expired FROM c "
		" UNION ALL SELECT 'heartbeat_failure_count', 'Heartbeats that found the lock lost "
		"  or the database unreachable past the lease.', NULL, hb FROM c "
		" UNION ALL SELECT 'fenced_chunk_count', 'Executions whose chunk was rolled "
		"  back because they had lost their lock (refused by the fence, or their "
		"  session ended by a takeover), whatever else their heartbeat saw.', NULL, "
		"  fenced FROM c "
		" UNION ALL SELECT 'manual_rerun_lock_bypass_count', 'Force-unlocks followed by a "
		"  run that took the lock.', NULL, bypass FROM c "
		" UNION ALL SELECT 'duplicate_target_write_count', 'Target writes absorbed as "
		"  duplicates by idempotent writers.', NULL, coalesce((SELECT sum(d) FROM s), 0) "
		" UNION ALL SELECT 'items_read_count', 'Items read.', job_name, r FROM s "
		" UNION ALL SELECT 'items_written_count', 'Items written.', job_name, w FROM s "
		" UNION ALL SELECT 'items_skipped_count', 'Items skipped.', job_name, k FROM s "
		" UNION ALL SELECT 'items_filtered_count', 'Items filtered by processors.', "
		"  job_name, f FROM s "
		" UNION ALL SELECT 'chunk_commit_count', 'Chunks committed.', job_name, cm FROM s "
		" UNION ALL SELECT 'chunk_rollback_count', 'Chunks rolled back.', job_name, rb "
		"  FROM s) "
		"SELECT m, h, job, coalesce(v, 0)::text FROM x ORDER BY m, job NULLS FIRST",
		0, NULL, err);
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
			mstr(&b, " counter\n");
		}
		mstr(&b, m);
		if (!PQgetisnull(res, i, 2)) {
			mstr(&b, "{job=\"");
			mescaped(&b, PQgetvalue(res, i, 2), 1);
			mstr(&b, "\"}");
		}
		mstr(&b, " ");
		mstr(&b, PQgetvalue(res, i, 3));
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
		if (labels && !PQgetisnull(res, i, 2))
			json_object_set_new(labels, "job", json_string(PQgetvalue(res, i, 2)));
		series = json_pack("{s:s, s:s, s:s, s:o*, s:I}", "name", PQgetvalue(res, i, 0),
				   "help", help, "type", "counter", "labels", labels, "value",
				   (json_int_t)strtoll(PQgetvalue(res, i, 3), NULL, 10));
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
