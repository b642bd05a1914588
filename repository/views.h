/*
 * Read-only views of the repository for the operator console (internal): the
 * queries behind `serve`'s JSON API that the CLI's listings do not already
 * have. Each result is a new JSON value built by the server (json_decref it);
 * every value travels as a parameter. @return 0, CB_EDB.
 */
#ifndef CB_REPOSITORY_VIEWS_H
#define CB_REPOSITORY_VIEWS_H

#include <jansson.h>
#include <libpq-fe.h>

#include "cbatch/error.h"

/* Which executions to list, newest first. NULL strings and 0 numbers are
 * "any". @p from and @p to bound create_time (inclusive) and must be
 * timestamps PostgreSQL reads; @p before pages by job_execution_id. */
typedef struct cb__exec_filter {
	const char *job_name;
	const char *status;
	const char *from;
	const char *to;
	long long before;
	int limit; /* <= 0: 20 */
} cb__exec_filter;

/* Executions as `executions --json` lists them (admin.c shares the SQL with
 * cb_repo_list_executions, which is this with only a job and a limit). */
int cb__repo_find_executions(json_t **out, PGconn *conn, const cb__exec_filter *f, cb_error *err);

/*
 * One object per job name known to the repository (instances, schedules) or
 * named in @p names_json (a JSON array of strings, e.g. the program's
 * registered jobs; may be NULL), by name: job_name, execution_count,
 * status_counts {STATUS: n}, last_execution (job_execution_id, status,
 * exit_code, start_time, end_time, duration_seconds, owner_lost; null if
 * none) and next_fire_time (the earliest of its unpaused schedules; null).
 */
int cb__repo_job_overview(json_t **out, PGconn *conn, const char *names_json, cb_error *err);

/* The lock audit, newest first: audit_id, lock_name, owner_id, outcome,
 * fencing_token, job_execution_id, detail, event_time. @p lock_name NULL:
 * every lock; @p execution > 0: only the rows of that execution's locks (its
 * own lock under its fencing token, and its partitions' locks, whose rows
 * outlive the locks); @p before > 0: only audit_id < before. */
int cb__repo_lock_audit(json_t **out, PGconn *conn, const char *lock_name, long long execution,
			int limit, long long before, cb_error *err);

/*
 * What the console shows beside `show --json` for one execution, an object:
 * partitions, keyed by step_execution_id (as text): items_per_second (read
 * over its run time, to its end or last update) and takeovers (the
 * LEASE_EXPIRED_TAKEOVER and OWNER_DEAD_TAKEOVER audit rows of its lock,
 * oldest first: outcome, reason, owner_id (who took it), fencing_token,
 * detail, event_time); lineage: the executions of its instance
 * (job_execution_id, status, exit_code, start_time, end_time, restart_of,
 * items_read, items_written, cumulative_items_read, current; the newest 100),
 * execution_count, continued_from_items (read by the earlier ones) and
 * cumulative_items_read (up to and with this one). CB_ENOTFOUND: no such
 * execution.
 */
int cb__repo_execution_extras(json_t **out, PGconn *conn, long long job_execution_id,
			      cb_error *err);

/*
 * Live progress of the running steps and partitions of one execution, an
 * object keyed by step_execution_id (as text): items (read), written,
 * last_updated, elapsed_seconds and items_per_second from the step's start
 * to its last update (a manager step: its partitions' sums and latest
 * update). Only steps that are STARTED or STOPPING appear.
 */
int cb__repo_step_progress(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err);

/* What the partition locks among @p locks (a JSON array of lock objects with
 * lock_name) run: each lock named cbatch.partition:<step execution id> gets
 * "partition": {job_name, step_name (the manager's), partition_index,
 * job_execution_id, step_execution_id, status}; other locks are left as
 * they are. One query for the whole page. */
int cb__repo_partition_locks(json_t *locks, PGconn *conn, cb_error *err);

/* The repository's schema version (@p out: -1 when there is none) and its
 * clock, batch_now(), as text (@p now, >= 40 bytes; "" when the database
 * holds no repository, or one older than batch_now()). */
int cb__repo_schema_version(int *out, char *now, size_t now_size, PGconn *conn, cb_error *err);

#endif
