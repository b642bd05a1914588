/* The console's read-only views of the repository (views.h). */
#include "repo.h"
#include "views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first column of the only row of @p res as a new JSON value. */
static int json_result(json_t **out, PGresult *res, const char *what, cb_error *err)
{
	json_error_t jerr;

	*out = json_loads(PQgetvalue(res, 0, 0), 0, &jerr);
	PQclear(res);
	if (!*out)
		return cb_error_set(err, CB_EDB, "%s: unreadable JSON from server: %s", what,
				    jerr.text);
	return 0;
}

int cb__repo_job_overview(json_t **out, PGconn *conn, const char *names_json, cb_error *err)
{
	const char *p[1] = { names_json };
	PGresult *res;

	*out = NULL;
	res = cb__repo_exec(
		conn, "job overview",
		/* Names, the newest execution and the status counts come from the
		 * rows the repository keeps per job (sql/011_history_scale.sql): a
		 * few rows per job, however long its history. */
		"WITH names AS ("
		" SELECT job_name FROM batch_job_summary"
		" UNION SELECT job_name FROM batch_schedule"
		" UNION SELECT jsonb_array_elements_text(coalesce($1::jsonb, '[]'::jsonb)))"
		"SELECT coalesce(jsonb_agg(jsonb_build_object("
		" 'job_name', n.job_name, 'execution_count', coalesce(c.total, 0),"
		" 'status_counts', coalesce(c.by_status, '{}'::jsonb), 'last_execution', l.j,"
		" 'next_fire_time', (SELECT min(s.next_fire_time) FROM batch_schedule s"
		"  WHERE s.job_name = n.job_name AND NOT s.paused)) ORDER BY n.job_name), '[]')"
		" FROM names n"
		" LEFT JOIN LATERAL (SELECT jsonb_build_object('job_execution_id',"
		"  e.job_execution_id, 'status', e.status, 'exit_code', e.exit_code,"
		"  'start_time', e.start_time, 'end_time', e.end_time, 'duration_seconds',"
		"  extract(epoch FROM coalesce(e.end_time, batch_now()) - e.start_time),"
		"  'owner_lost', batch_status_is_live(e.status) AND " CB__OWNER_LOST_SQL(
			"e") ") AS j"
			     "  FROM batch_job_summary m JOIN batch_job_execution e"
			     "  ON e.job_execution_id = m.last_execution_id"
			     "  WHERE m.job_name = n.job_name) l ON true"
			     " LEFT JOIN LATERAL (SELECT sum(k.cnt)::bigint AS total,"
			     "  jsonb_object_agg(k.status, k.cnt) AS by_status FROM ("
			     "  SELECT b.status, sum(b.n) AS cnt FROM batch_status_count b"
			     "  WHERE b.kind = 'job' AND b.subject = n.job_name GROUP BY b.status"
			     "  HAVING sum(b.n) > 0) k) c ON true",
		1, p, err);
	if (!res)
		return CB_EDB;
	return json_result(out, res, "job overview", err);
}

int cb__repo_lock_audit(json_t **out, PGconn *conn, const char *lock_name, long long execution,
			int limit, long long before, cb_error *err)
{
	char lim[16], bef[24], exe[24];
	const char *p[4] = { lock_name, lim, NULL, NULL };
	PGresult *res;

	*out = NULL;
	snprintf(lim, sizeof(lim), "%d", limit > 0 ? limit : 50);
	if (before > 0) {
		snprintf(bef, sizeof(bef), "%lld", before);
		p[2] = bef;
	}
	if (execution > 0) {
		snprintf(exe, sizeof(exe), "%lld", execution);
		p[3] = exe;
	}
	/* An execution's rows are found by lock name (the audit's index): its
	 * partitions' names are made from their step ids, and its own lock is
	 * shared by the instance's executions, so only its token's rows. */
	res = cb__repo_exec(
		conn, "lock audit",
		"SELECT coalesce(jsonb_agg(jsonb_build_object('audit_id', a.audit_id,"
		" 'lock_name', a.lock_name, 'owner_id', a.owner_id, 'outcome', a.outcome,"
		" 'fencing_token', a.fencing_token, 'job_execution_id', a.job_execution_id,"
		" 'detail', a.detail, 'event_time', a.event_time) ORDER BY a.audit_id DESC), '[]')"
		" FROM (SELECT * FROM batch_lock_audit b"
		"  WHERE ($1::text IS NULL OR b.lock_name = $1)"
		"  AND ($3::bigint IS NULL OR b.audit_id < $3::bigint)"
		"  AND ($4::bigint IS NULL OR b.lock_name = ANY (array("
		"   SELECT 'cbatch.partition:' || x.step_execution_id FROM batch_step_execution x"
		"   WHERE x.job_execution_id = $4::bigint AND x.partition_index IS NOT NULL))"
		"   OR (b.lock_name = (SELECT e.lock_name FROM batch_job_execution e"
		"    WHERE e.job_execution_id = $4::bigint)"
		"    AND b.fencing_token = (SELECT e.fencing_token FROM batch_job_execution e"
		"    WHERE e.job_execution_id = $4::bigint)))"
		"  ORDER BY b.audit_id DESC LIMIT $2::int) a",
		4, p, err);
	if (!res)
		return CB_EDB;
	return json_result(out, res, "lock audit", err);
}

/* Items read and written by execution e over its steps that did the reading
 * (plain steps and partitions, not the managers that sum them). */
#define EXEC_ITEMS(col)                                                                            \
	"(SELECT coalesce(sum(x." col "), 0) FROM batch_step_execution x "                         \
	" WHERE x.job_execution_id = e.job_execution_id AND NOT EXISTS (SELECT 1 "                 \
	" FROM batch_step_execution y WHERE y.manager_step_execution_id = x.step_execution_id))"

int cb__repo_execution_extras(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;

	*out = NULL;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	/* A partition's lock row goes when it ends; its audit rows stay, under
	 * the name its claim gives the lock. */
	res = cb__repo_exec(
		conn, "execution extras",
		"SELECT jsonb_build_object('partitions', coalesce((SELECT jsonb_object_agg("
		"  x.step_execution_id::text, jsonb_build_object('items_per_second',"
		"  CASE WHEN coalesce(x.end_time, x.last_updated) > x.start_time THEN"
		"   round((x.read_count / extract(epoch FROM coalesce(x.end_time, x.last_updated)"
		"   - x.start_time))::numeric, 3) END,"
		"  'takeovers', coalesce((SELECT jsonb_agg(jsonb_build_object("
		"   'audit_id', a.audit_id, 'outcome', a.outcome, 'reason', CASE a.outcome"
		"   WHEN 'LEASE_EXPIRED_TAKEOVER' THEN 'lease expired'"
		"   ELSE 'owner process gone' END, 'owner_id', a.owner_id,"
		"   'fencing_token', a.fencing_token, 'detail', a.detail,"
		"   'event_time', a.event_time) ORDER BY a.audit_id) FROM batch_lock_audit a"
		"   WHERE a.lock_name = 'cbatch.partition:' || x.step_execution_id"
		"   AND a.outcome IN ('LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER')),"
		"   '[]'::jsonb)))"
		"  FROM batch_step_execution x WHERE x.job_execution_id = c.job_execution_id"
		"  AND x.partition_index IS NOT NULL), '{}'::jsonb),"
		" 'lineage', (SELECT jsonb_build_object('job_instance_id', c.job_instance_id,"
		"  'execution_count', count(*),"
		"  'continued_from_items', coalesce(sum(l.items) FILTER ("
		"   WHERE l.id < c.job_execution_id), 0),"
		"  'cumulative_items_read', coalesce(sum(l.items) FILTER ("
		"   WHERE l.id <= c.job_execution_id), 0),"
		"  'executions', coalesce(jsonb_agg(jsonb_build_object('job_execution_id', l.id,"
		"   'status', l.status, 'exit_code', l.exit_code, 'start_time', l.start_time,"
		"   'end_time', l.end_time, 'restart_of', l.restart_of, 'items_read', l.items,"
		"   'items_written', l.written, 'cumulative_items_read', l.cum,"
		"   'current', l.id = c.job_execution_id) ORDER BY l.id) FILTER (WHERE l.rank <= 100),"
		"   '[]'::jsonb))"
		"  FROM (SELECT k.*, sum(k.items) OVER (ORDER BY k.id) AS cum,"
		"   row_number() OVER (ORDER BY k.id DESC) AS rank FROM (SELECT"
		"   e.job_execution_id AS id, e.status, e.exit_code, e.start_time, e.end_time,"
		"   e.restart_of, " EXEC_ITEMS(
			"read_count") " AS items,"
				      "   " EXEC_ITEMS(
					      "write_count") " AS written"
							     "   FROM batch_job_execution e WHERE e.job_instance_id = c.job_instance_id) k) l))"
							     " FROM batch_job_execution c WHERE c.job_execution_id = $1",
		1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	}
	return json_result(out, res, "execution extras", err);
}

int cb__repo_partition_locks(json_t *locks, PGconn *conn, cb_error *err)
{
	static const char prefix[] = "cbatch.partition:";
	json_t *ids = json_array(), *found = NULL;
	char *text = NULL;
	const char *p[1];
	PGresult *res;
	size_t i;
	int rc = 0;

	for (i = 0; ids && i < json_array_size(locks); i++) {
		const char *name =
			json_string_value(json_object_get(json_array_get(locks, i), "lock_name"));
		char *end;
		long long id;

		if (!name || strncmp(name, prefix, sizeof(prefix) - 1) != 0)
			continue;
		id = strtoll(name + sizeof(prefix) - 1, &end, 10);
		if (*end == '\0' && id > 0)
			json_array_append_new(ids, json_integer(id));
	}
	if (!ids || json_array_size(ids) == 0)
		goto out;
	if (!(text = json_dumps(ids, JSON_COMPACT))) {
		rc = cb_error_set(err, CB_ENOMEM, "partition locks: out of memory");
		goto out;
	}
	p[0] = text;
	res = cb__repo_exec(
		conn, "partition locks",
		"SELECT coalesce(jsonb_object_agg('cbatch.partition:' || x.step_execution_id,"
		" jsonb_build_object('step_execution_id', x.step_execution_id,"
		" 'job_execution_id', x.job_execution_id, 'job_name', i.job_name,"
		" 'step_name', m.step_name, 'partition_index', x.partition_index,"
		" 'status', x.status)), '{}'::jsonb)"
		" FROM batch_step_execution x"
		" JOIN batch_step_execution m ON m.step_execution_id = x.manager_step_execution_id"
		" JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id"
		" JOIN batch_job_instance i ON i.job_instance_id = e.job_instance_id"
		" WHERE x.step_execution_id IN (SELECT jsonb_array_elements_text($1::jsonb)::bigint)",
		1, p, err);
	if (!res) {
		rc = CB_EDB;
		goto out;
	}
	if ((rc = json_result(&found, res, "partition locks", err)) < 0)
		goto out;
	for (i = 0; i < json_array_size(locks); i++) {
		json_t *l = json_array_get(locks, i);
		json_t *x = json_object_get(
			found, json_string_value(json_object_get(l, "lock_name")) ?
				       json_string_value(json_object_get(l, "lock_name")) :
				       "");

		if (x)
			json_object_set(l, "partition", x);
	}
out:
	free(text);
	json_decref(ids);
	json_decref(found);
	return rc;
}

int cb__repo_step_progress(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;

	*out = NULL;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	/* A manager step's own counts are summed only when it ends: while it
	 * runs, its progress is its partitions'. */
	res = cb__repo_exec(
		conn, "step progress",
		"SELECT coalesce(jsonb_object_agg(q.id::text, jsonb_build_object("
		" 'items', q.items, 'written', q.written, 'last_updated', q.last,"
		" 'elapsed_seconds', round(extract(epoch FROM q.last - q.start)::numeric, 3),"
		" 'items_per_second', CASE WHEN q.last > q.start THEN"
		"  round((q.items / extract(epoch FROM q.last - q.start))::numeric, 3) END)),"
		" '{}'::jsonb)"
		" FROM (SELECT s.step_execution_id AS id, s.start_time AS start,"
		"  coalesce(p.items, s.read_count) AS items,"
		"  coalesce(p.written, s.write_count) AS written,"
		"  greatest(s.last_updated, p.last) AS last"
		"  FROM batch_step_execution s LEFT JOIN LATERAL (SELECT sum(x.read_count) AS items,"
		"   sum(x.write_count) AS written, max(x.last_updated) AS last, count(*) AS n"
		"   FROM batch_step_execution x"
		"   WHERE x.manager_step_execution_id = s.step_execution_id) p ON p.n > 0"
		"  WHERE s.job_execution_id = $1 AND s.status IN ('STARTED', 'STOPPING')"
		"  AND s.start_time IS NOT NULL) q",
		1, p, err);
	if (!res)
		return CB_EDB;
	return json_result(out, res, "step progress", err);
}

int cb__repo_schema_version(int *out, char *now, size_t now_size, PGconn *conn, cb_error *err)
{
	PGresult *res;
	int has, clock;

	*out = -1;
	now[0] = '\0';
	/* Look before reading: a database without a repository (or with one
	 * older than batch_now(), sql/functions/batch_now.sql) has neither. */
	res = cb__repo_exec(conn, "schema version",
			    "SELECT to_regclass('batch_schema_version') IS NOT NULL,"
			    " to_regprocedure('batch_now()') IS NOT NULL",
			    0, NULL, err);
	if (!res)
		return CB_EDB;
	has = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	clock = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	PQclear(res);
	if (!has)
		return 0;
	res = cb__repo_exec(
		conn, "schema version",
		clock ? "SELECT coalesce(max(version), 0),"
			" to_char(batch_now() AT TIME ZONE 'UTC',"
			" 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM batch_schema_version" :
			"SELECT coalesce(max(version), 0), '' FROM batch_schema_version",
		0, NULL, err);
	if (!res)
		return CB_EDB;
	*out = atoi(PQgetvalue(res, 0, 0));
	snprintf(now, now_size, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return 0;
}
