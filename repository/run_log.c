/*
 * Run logs (sql/migrations/022_run_logs.sql): the tail of what a run printed,
 * stored by the process that launched it (a scheduler node, serve), and read
 * back by `show --log` and the console.
 *
 * The launcher finds its child's execution by the child's owner id, which
 * begins "HOST:PID:" (cb__owner_id), among the executions created after the
 * launch: their ids are above the largest one at the launch (the sequence
 * hands out larger ids than any committed before), so a pid used again by an
 * older process is never taken for the child's, and the search walks the
 * primary key from that id on, not the whole table.
 */
#include "repo.h"

#include "cbatch/repository.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cb__repo_run_log_mark(long long *out, PGconn *conn, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, "read the newest execution id",
				      "SELECT coalesce(max(job_execution_id), 0) "
				      "FROM batch_job_execution",
				      0, NULL, err);

	*out = 0;
	if (!res)
		return CB_EDB;
	*out = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__repo_run_log_find(long long *out, PGconn *conn, int pid, long long after, cb_error *err)
{
	char host[96] = "unknown", prefix[140], sa[24];
	const char *p[2] = { prefix, sa };
	PGresult *res;

	*out = 0;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(prefix, sizeof(prefix), "%s:%d:", host, pid);
	snprintf(sa, sizeof(sa), "%lld", after);
	res = cb__repo_exec(conn, "find the launched execution",
			    "SELECT job_execution_id FROM batch_job_execution "
			    "WHERE job_execution_id > $2::bigint "
			    "AND left(owner_id, length($1)) = $1 "
			    "ORDER BY job_execution_id LIMIT 1",
			    2, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1)
		*out = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__repo_run_log_save(PGconn *conn, long long job_execution_id, const char *text,
			  long long dropped, long long total, cb_error *err)
{
	char id[24], sd[24], st[24];
	const char *p[4] = { id, text, sd, st };

	snprintf(id, sizeof(id), "%lld", job_execution_id);
	snprintf(sd, sizeof(sd), "%lld", dropped);
	snprintf(st, sizeof(st), "%lld", total);
	/* An execution removed meanwhile (cleanup) is no error: nothing to keep. */
	return cb__repo_command(
		conn, "save the run's log",
		"INSERT INTO batch_job_execution_log AS l "
		" (job_execution_id, log, bytes_dropped, bytes_total, updated_at) "
		"SELECT e.job_execution_id, $2, $3::bigint, $4::bigint, batch_now() "
		"  FROM batch_job_execution e WHERE e.job_execution_id = $1::bigint "
		"ON CONFLICT (job_execution_id) DO UPDATE SET log = excluded.log, "
		" bytes_dropped = excluded.bytes_dropped, bytes_total = excluded.bytes_total, "
		" updated_at = excluded.updated_at",
		4, p, err);
}

int cb_repo_execution_log(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	json_error_t jerr;
	PGresult *res;
	int rc = 0;

	*out = NULL;
	snprintf(id, sizeof(id), "%lld", job_execution_id);
	res = cb__repo_exec(
		conn, "read the run's log",
		"SELECT jsonb_build_object('job_execution_id', e.job_execution_id,"
		" 'status', e.status, 'captured', l.job_execution_id IS NOT NULL,"
		" 'log', l.log, 'bytes_dropped', coalesce(l.bytes_dropped, 0),"
		" 'bytes_total', coalesce(l.bytes_total, 0), 'updated_at', l.updated_at)"
		" FROM batch_job_execution e LEFT JOIN batch_job_execution_log l"
		" USING (job_execution_id) WHERE e.job_execution_id = $1::bigint",
		1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else if (!(*out = json_loads(PQgetvalue(res, 0, 0), 0, &jerr)))
		rc = cb_error_set(err, CB_EDB,
				  "read the run's log: unreadable JSON from server: %s", jerr.text);
	PQclear(res);
	return rc;
}
