/**
 * @file lock.h
 * The execution lock: lease, heartbeat and fencing token.
 *
 * Every launch (run, restart, --next, scheduler) takes the job's lock before
 * it creates an execution, and there is no way to run a job without it. The
 * lock is a row of batch_lock named after the job and its target range:
 *
 *  - Acquire is one statement: insert the row, or take it over only when its
 *    lease has expired (database time, never the client's clock), bumping the
 *    fencing token. A held lock is a skip (exit 4), recorded in
 *    batch_lock_audit as SKIPPED_HELD, not a failure.
 *  - While the job runs, a heartbeat thread on its own connection extends
 *    the lease every third of its length, and every chunk commit extends it
 *    too. A heartbeat that finds the lock gone, or cannot reach the database
 *    for longer than the lease, stops the job before its next chunk.
 *  - Every chunk transaction checks, in the same transaction and under a row
 *    lock on the lock row, that the row still carries this execution's token;
 *    a late write of an owner that lost its lease rolls back (fenced off).
 *  - On completion the lock is released, but kept until at least
 *    `lock at least for` after it was taken.
 *  - A takeover (and a force unlock) first terminates the previous owner's
 *    database session, if pg_stat_activity still shows it (pid and backend
 *    start), so that a frozen owner's open transaction cannot block the new
 *    one; this needs the same role, superuser or pg_signal_backend.
 *  - A lock whose owner runs on this host and whose process is gone (pid and
 *    process start time) is taken over at once (OWNER_DEAD_TAKEOVER).
 *
 * The owner is a per-process identity
 * (host:pid:process start time:PID namespace:boot id:random).
 */
#ifndef CBATCH_LOCK_H
#define CBATCH_LOCK_H

#include <jansson.h>
#include <libpq-fe.h>
#include "error.h"
#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** Default lease (lock at most for), in seconds. */
#define CB_DEFAULT_LEASE_SECONDS 60.0

/**
 * Configure the job's lock.
 * @param name_template NULL keeps the name as it is: by default (instance
 *        scope, see cb_lock_scope in job.h) the job name followed by the
 *        identifying parameters, `job:name=value,name=value` (sorted by name;
 *        just `job` when there are none; `,`, `=` and `\` in names and values
 *        are escaped with a `\`, so that two instances never share a name).
 *        Otherwise a template in which `{job}` is the job name and `{NAME}`
 *        the value of parameter NAME, e.g. "settlement:{targetDate}" (custom
 *        scope: the target range is the day); a template naming no parameter
 *        is job scope, like cb_job_set_lock_scope(job, CB_LOCK_SCOPE_JOB). A
 *        name longer than 400 bytes is replaced by `job:#key=<job key>`. Copied.
 * @param at_most_seconds the lease (> 0; 0 keeps the default)
 * @param at_least_seconds how long after it was taken the lock stays held
 *        even if the job finished sooner (>= 0)
 * @return 0, CB_EINVAL (bad template or values), CB_ENOMEM
 */
int cb_job_set_lock(cb_job *job, const char *name_template, double at_most_seconds,
		    double at_least_seconds, cb_error *err);

/**
 * The lock name a launch of @p job with @p params would take.
 * @p out receives a new string (free()). @return 0, CB_EINVAL (a template
 * names a parameter that is absent), CB_ENOMEM.
 */
int cb_job_lock_name(char **out, const cb_job *job, const cb_params *params, cb_error *err);

/**
 * List the held and recently released locks (the first page of
 * cb_lock_list_page with default options): a new JSON array of objects with
 * lock_name, owner_id, fencing_token, locked_at, locked_until,
 * lease_left_seconds (negative when expired), released, job_execution_id.
 * @return 0 or CB_EDB.
 */
int cb_lock_list(json_t **out, PGconn *conn, cb_error *err);

/** What cb_lock_list_page lists. */
typedef struct cb_lock_list_options {
	int all;               /* every lock row, not only held and recent ones */
	int limit;             /* rows per page, 1..1000 (0: 100) */
	const char *after;     /* the page starts after this lock name (NULL: first page) */
	double recent_seconds; /* released within this long counts as recent (0: 3600) */
} cb_lock_list_options;

/**
 * One page of locks, by name in natural order ("ledger:2" before "ledger:10";
 * @p o->after in that order too): without @p o->all the held ones (not released,
 * live or expired) and those released or last taken within
 * @p o->recent_seconds, read through indexes (bounded by what is shown, not by
 * how many lock rows the history left); with it, every row. @p out receives a
 * JSON array as cb_lock_list's; @p next_after (may be NULL) a new string
 * (free()) naming the page's last lock when more may follow, else NULL.
 * @return 0, CB_EINVAL (limit out of range), CB_EDB, CB_ENOMEM.
 */
int cb_lock_list_page(json_t **out, char **next_after, PGconn *conn, const cb_lock_list_options *o,
		      cb_error *err);

/**
 * Release a lock by hand, whoever holds it, and record who (@p who, e.g.
 * "user@host") and why in batch_lock_audit as FORCE_UNLOCKED. Its holder's
 * database session is terminated first (as on a takeover), and the holder,
 * if alive, is fenced off. @return 0, CB_ENOTFOUND, CB_EDB, or CB_ERETRY when
 * the lock row stays locked by a session that could not be terminated.
 */
int cb_lock_force_unlock(PGconn *conn, const char *lock_name, const char *who, const char *reason,
			 cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
