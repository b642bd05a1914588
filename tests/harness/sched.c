/* What the scheduler tests share (sched.h). */
#include "sched.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int cbt_sched_init(cbt_sched *s, const char *name)
{
	s->name = name;
	return cbt_repo_db(s->db, sizeof(s->db), name, &s->conn);
}

int cbt_sched_clean(cbt_sched *s)
{
	PQfinish(s->conn);
	s->conn = NULL;
	cbt_db_drop(s->db);
	return 0;
}

int cbt_sched_ex(cbt_sched *s, const char *const *args)
{
	return cbt_examples_run(NULL, s->db, args, s->out, sizeof(s->out), s->errout,
				sizeof(s->errout));
}

pid_t cbt_sched_spawn(cbt_sched *s, const char *log, const char *const *args)
{
	return cbt_examples_spawn(NULL, s->db, log, args);
}

void cbt_sched_log_path(const cbt_sched *s, char *buf, size_t size, const char *what)
{
	snprintf(buf, size, "%s/%s-%d-%s.log", cbt_tmpdir(), s->name, (int)getpid(), what);
}

void cbt_sched_clear(cbt_sched *s)
{
	cbt_exec(s->conn, "DELETE FROM batch_schedule; DELETE FROM batch_scheduler_node");
}

void cbt_sched_stop_nodes_between_runs(cbt_sched *s, const pid_t *pids, int n)
{
	PGresult *res = PQexec(s->conn, "SELECT schedule_name FROM batch_schedule ORDER BY 1");

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		CBT_FAILF("listing the schedules: %s", PQerrorMessage(s->conn));
	for (int r = 0; PQresultStatus(res) == PGRES_TUPLES_OK && r < PQntuples(res); r++)
		CBT_EQ_LL(CBT_SCHED_EX(s, "schedule", "pause", PQgetvalue(res, r, 0)), 0);
	PQclear(res);
	if (!cbt_wait_until(s->conn, 60000,
			    "SELECT (count(*) = 0)::int FROM batch_schedule_firing "
			    "WHERE status IN ('CLAIMED', 'LAUNCHED')")) {
		CBT_FAILF("a firing is still claimed or launched 60 s after every schedule was "
			  "paused");
		cbt_print_rows(s->conn, "open firings (id, fire time, node, status, pid)",
			       "SELECT firing_id, fire_time, node_id, status, pid FROM "
			       "batch_schedule_firing WHERE status IN ('CLAIMED', 'LAUNCHED') "
			       "ORDER BY firing_id");
	}
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	for (int i = 0; i < n; i++)
		CBT_EQ_LL(cbt_wait_timeout(pids[i], 60000), 0);
}

void cbt_sched_stop_between_runs(cbt_sched *s, pid_t pid)
{
	cbt_sched_stop_nodes_between_runs(s, &pid, 1);
}

long long cbt_sched_overlaps(cbt_sched *s, const char *schedule)
{
	return cbt_queryp_ll(s->conn,
			     CBT_SCHED_EXECS
			     "SELECT count(*) FROM e a JOIN e b ON "
			     "a.job_execution_id < b.job_execution_id AND "
			     "a.start_time < b.end_time AND b.start_time < a.end_time",
			     "s", schedule);
}

long long cbt_sched_execs(cbt_sched *s, const char *schedule, const char *status)
{
	return cbt_queryp_ll(s->conn,
			     CBT_SCHED_EXECS "SELECT count(*) FROM e WHERE $2::text IS NULL OR "
					     "status LIKE $2",
			     "s s", schedule, status);
}

long long cbt_sched_firings(cbt_sched *s, const char *schedule, const char *status)
{
	return cbt_queryp_ll(s->conn,
			     "SELECT count(*) FROM batch_schedule_firing f JOIN batch_schedule s "
			     "USING (schedule_id) WHERE s.schedule_name = $1 AND f.status = $2",
			     "s s", schedule, status);
}
