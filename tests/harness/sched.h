/**
 * @file sched.h
 * What the scheduler tests share (test_schedule.c, test_schedule_overlap.c,
 * test_sales_totals_scheduled.c): one repository database per program, the
 * examples run against it in the foreground or as scheduler nodes, and counts
 * of a schedule's firings and of the executions it launched.
 */
#ifndef CBTEST_SCHED_H
#define CBTEST_SCHED_H

#include <stddef.h>
#include <sys/types.h>

#include <libpq-fe.h>

#include "cbtest.h"

/** A scheduler test program's repository and the output of its last command. */
typedef struct cbt_sched {
	char db[CBT_CONNINFO_MAX]; /**< conninfo of the database */
	PGconn *conn;              /**< the test's own connection */
	char out[262144], errout[65536];
	const char *name; /**< names the database and the logs */
} cbt_sched;

/**
 * Suite init: a fresh repository database (cbt_repo_db) named after @p name.
 * @return 0, or -1 (printed; the suite fails).
 */
int cbt_sched_init(cbt_sched *s, const char *name);
/** Suite cleanup: close the connection, drop the database. */
int cbt_sched_clean(cbt_sched *s);

/** Run cbatch-examples --db on @p args (NULL-terminated); output in out/errout. */
int cbt_sched_ex(cbt_sched *s, const char *const *args);
/** The same in the background, output to @p log (cbt_spawn). */
pid_t cbt_sched_spawn(cbt_sched *s, const char *log, const char *const *args);
#define CBT_SCHED_EX(s, ...) cbt_sched_ex((s), (const char *const[]){ __VA_ARGS__, NULL })
#define CBT_SCHED_SPAWN(s, log, ...)                                                               \
	cbt_sched_spawn((s), (log), (const char *const[]){ __VA_ARGS__, NULL })

/** The path of the log @p what: tmpdir/NAME-PID-WHAT.log. */
void cbt_sched_log_path(const cbt_sched *s, char *buf, size_t size, const char *what);

/** Forget every schedule (with its firings) and every scheduler node. */
void cbt_sched_clear(cbt_sched *s);

/**
 * Executions launched for schedule @p schedule (its schedule.name parameter)
 * that started: a CTE `e` (job_execution_id, job_instance_id, status,
 * start_time, end_time: now while running), $1 the schedule's name.
 */
#define CBT_SCHED_EXECS                                                                            \
	"WITH e AS (SELECT x.job_execution_id, x.job_instance_id, x.status, x.start_time, "        \
	" coalesce(x.end_time, clock_timestamp()) AS end_time FROM batch_job_execution x "         \
	" JOIN batch_job_execution_params p USING (job_execution_id) "                             \
	" WHERE p.parameter_name = 'schedule.name' AND p.parameter_value = $1 "                    \
	" AND x.start_time IS NOT NULL) "

/**
 * Stop scheduler node @p pid between runs, not in one: pause every schedule
 * (a paused schedule is never claimed, nor its queued firings or restarts
 * taken), wait (up to 60 s) until no firing is claimed or launched, then
 * SIGTERM the node and wait for its exit 0. A stop that lands in a run ends
 * it STOPPED and makes its restart due, which a case about something else
 * must not depend on; how long a run takes (a loaded machine, a sanitizer
 * build) then no longer matters. The schedules stay paused.
 */
void cbt_sched_stop_between_runs(cbt_sched *s, pid_t pid);
/** The same for the @p n nodes @p pids at once (each SIGTERMed, each exits 0). */
void cbt_sched_stop_nodes_between_runs(cbt_sched *s, const pid_t *pids, int n);

/** Pairs of executions of @p schedule that ran at the same time. */
long long cbt_sched_overlaps(cbt_sched *s, const char *schedule);
/** Executions of @p schedule whose status is LIKE @p status (NULL: all). */
long long cbt_sched_execs(cbt_sched *s, const char *schedule, const char *status);
/** Firings of @p schedule in @p status. */
long long cbt_sched_firings(cbt_sched *s, const char *schedule, const char *status);

#endif
