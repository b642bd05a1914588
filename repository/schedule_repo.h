/* The repository's side of schedules (sql/004_schedules.sql). Internal.
 * Instants cross this boundary as Unix seconds; the database's own clock is
 * the only one a scheduler goes by. */
#ifndef CB_REPOSITORY_SCHEDULE_REPO_H
#define CB_REPOSITORY_SCHEDULE_REPO_H

#include <jansson.h>
#include <libpq-fe.h>

#include "cbatch/cron.h"
#include "cbatch/error.h"

/* One schedule as a scheduler node reads it. */
typedef struct cb__schedule {
	long long id, version;
	char name[101];
	char cron[CB_CRON_EXPR_MAX + 1];
	char zone[101];
	char job[101];
	json_t *parameters; /* array of template strings (owned) */
	int skip_misfires;  /* misfire policy SKIP (else RUN_ONCE) */
	int grace_seconds;
	char overlap[6];      /* "SKIP", "QUEUE", "ALLOW" */
	int recover_leave;    /* recover policy LEAVE (else RESTART) */
	int recover_attempts; /* 0..100 */
	int recover_delay;    /* seconds, 0..86400 */
	int paused;
	int has_next;
	long long next_fire; /* the first unclaimed instant, when has_next */
} cb__schedule;

/* Every schedule, by name. @p out receives a new array (free with
 * cb__repo_schedules_free), NULL when there are none. */
int cb__repo_schedules_load(cb__schedule **out, size_t *n, PGconn *conn, cb_error *err);
void cb__repo_schedules_free(cb__schedule *s, size_t n);

/* Insert @p s (its id and version are ignored). @return 0, CB_EINVAL when the
 * name is taken, CB_EDB. */
int cb__repo_schedule_add(long long *id, PGconn *conn, const cb__schedule *s, cb_error *err);

/* Pause (@p paused) or resume a schedule; resuming sets the next instant to
 * @p next (computed by the caller from the database's now), or none when
 * !@p has_next. Bumps the version so that running nodes notice.
 * @return 0, CB_ENOTFOUND, CB_EDB. @p changed: 0 when it already was so. */
int cb__repo_schedule_pause(int *changed, PGconn *conn, const char *name, int paused, int has_next,
			    long long next, cb_error *err);

/* Remove a schedule with its firings and history. @return 0, CB_ENOTFOUND, CB_EDB. */
int cb__repo_schedule_remove(PGconn *conn, const char *name, cb_error *err);

/* Schedules as JSON objects (all, or the one named), with their last firing
 * and the number of firings by status. @return 0, CB_ENOTFOUND (a name that
 * does not exist), CB_EDB. */
int cb__repo_schedules_json(json_t **out, PGconn *conn, const char *name, cb_error *err);

/* The newest @p limit events of schedule @p name, newest first. */
int cb__repo_schedule_history(json_t **out, PGconn *conn, const char *name, long long limit,
			      cb_error *err);

/* The database's clock, Unix seconds with a fraction. */
int cb__repo_db_now(double *out, PGconn *conn, cb_error *err);

/* ---- a node's calls ------------------------------------------------------- */

enum {
	CB__CLAIM_CLAIMED,
	CB__CLAIM_SKIPPED,
	CB__CLAIM_CHANGED,
	CB__CLAIM_GONE,
	CB__CLAIM_OVERLAP, /* recorded SKIPPED_OVERLAP: an earlier firing is live */
	CB__CLAIM_QUEUED   /* recorded QUEUED, launched once the live one ends */
};

/* A claim of one fire instant (batch_schedule_claim). */
typedef struct cb__claim_req {
	long long schedule_id, version;
	long long fire_time;
	const char *kind;                     /* "SCHEDULED", "MISFIRE_RUN", "MISFIRE_SKIP" */
	long long missed_until, missed_count; /* misfires only */
	long long param_time;
	long long next_fire;
	const char *node;
	const char *job_key;    /* NULL for MISFIRE_SKIP */
	const char *parameters; /* JSON array text */
} cb__claim_req;

typedef struct cb__claim_res {
	int outcome; /* CB__CLAIM_* */
	long long firing_id;
	char claimed_by[201]; /* for OVERLAP and QUEUED: the live firing, and why */
	int has_next;
	long long next_fire; /* the schedule's shared cursor after the call */
	char kind[16];       /* the kind recorded: a late SCHEDULED is a misfire */
	double db_now;       /* the database's clock when the claim was judged */
} cb__claim_res;

int cb__repo_schedule_claim(cb__claim_res *out, PGconn *conn, const cb__claim_req *req,
			    cb_error *err);

/* The compare-and-set before the exec of child @p pid: the firing becomes
 * LAUNCHED only if it is still @p node's and CLAIMED (*launched = 1).
 * Otherwise nothing launches; an event says why and @p found (its status, and
 * the node if another's) what the firing is now. */
int cb__repo_schedule_launch(int *launched, char *found, size_t found_size, PGconn *conn,
			     long long firing_id, const char *node, int pid, const char *message,
			     cb_error *err);

/* The child of firing @p firing_id has exited (@p how: "exited with 1",
 * "was killed by signal 9"); if the execution it ran still claims to run and
 * its owner is a process of this host that is gone, take its lock over as a
 * dead owner's, end it FAILED and release the lock. @p buried receives the
 * execution buried, or 0. @return 0, CB_EDB. */
int cb__repo_schedule_bury_dead(long long *buried, PGconn *conn, long long firing_id,
				const char *node, double lease_seconds, const char *how,
				cb_error *err);

/* The child of firing @p firing_id runs as @p pid, or (pid <= 0) could not
 * be launched, for the reason @p message. */
int cb__repo_schedule_launched(PGconn *conn, long long firing_id, const char *node, int pid,
			       const char *message, cb_error *err);

/* The child of firing @p firing_id exited with @p exit_code (@p stopping:
 * while this node was stopping, which had asked it to stop). @p exec_id and
 * @p status (16 bytes) receive the execution it ran, if it made one (0, "").
 * A restart is planned if the execution ended unfinished (sql/009). */
int cb__repo_schedule_finished(long long *exec_id, char *status, PGconn *conn, long long firing_id,
			       const char *node, int exit_code, const char *message, int stopping,
			       cb_error *err);

/* Firings of the jobs @p jobs (a JSON array of names) that this node takes
 * now: with @p recovery 0, queued firings whose schedule is idle again
 * (batch_schedule_take_queued: "firing_id", "schedule_id", "fire_time",
 * "job_name", "parameters", "kind"); with 1, due restarts of dead executions
 * (batch_schedule_take_recovery: also "job_execution_id", "attempt",
 * "attempts"). Each is CLAIMED by @p node, to be launched. @p out receives a
 * JSON array. */
int cb__repo_schedule_take(json_t **out, PGconn *conn, const char *node, const json_t *jobs,
			   int recovery, cb_error *err);

/* Register or refresh this node; @p db_now receives the database's time.
 * @p new_session: the first heartbeat on a session opened again after the
 * repository was lost (the others' silence is then counted from now,
 * sql/migrations/023_node_sessions.sql). */
int cb__repo_scheduler_heartbeat(double *db_now, PGconn *conn, const char *node, const char *host,
				 int pid, double lease_seconds, int new_session, cb_error *err);
int cb__repo_scheduler_stopped(PGconn *conn, const char *node, cb_error *err);

/* Mark the open firings of gone nodes ORPHANED (batch_schedule_orphans),
 * counting as gone also the nodes of this host whose process has died.
 * @p out receives a JSON array of what was marked (possibly empty). */
int cb__repo_schedule_orphans(json_t **out, PGconn *conn, const char *node, cb_error *err);

/* ---- the console (schedule_console.c) ------------------------------------ */

/* Schedule @p name's firings, newest first: at most @p limit with a
 * firing_id below @p before (0: from the newest), each with its kind,
 * instant, node, status, execution (found for a running one too), exit,
 * misfire range and count, restart attempt and message; only those of
 * @p status when it is not NULL. @p out receives a JSON array.
 * @return 0, CB_ENOTFOUND, CB_EDB */
int cb__repo_schedule_firings(json_t **out, PGconn *conn, const char *name, const char *status,
			      long long before, int limit, cb_error *err);

/* What a manual firing needs of schedule @p name, and the database's
 * current second (@p now). The caller frees out->parameters. */
typedef struct cb__fire_target {
	long long schedule_id, version, now;
	char zone[101];
	char job[101];      /* its job's name */
	json_t *parameters; /* the templates */
	int paused;
} cb__fire_target;
int cb__repo_schedule_for_fire(cb__fire_target *out, PGconn *conn, const char *name, cb_error *err);

/* Claim instant t->now of the schedule as a MANUAL firing for @p actor
 * (batch_schedule_fire_now): @p outcome QUEUED, SKIPPED_OVERLAP,
 * SKIPPED_CLAIMED, CHANGED or GONE; @p why the live firing or the claimant. */
int cb__repo_schedule_fire_now(char *outcome, size_t outcome_size, long long *firing_id, char *why,
			       size_t why_size, PGconn *conn, const cb__fire_target *t,
			       const char *actor, const char *job_key, const char *parameters,
			       cb_error *err);

/* ---- backfill (schedule_backfill.c, sql/020_backfill.sql) ---------------- */

/* What a backfill needs of schedule @p name, and the database's clock
 * (@p now, Unix seconds). The caller frees out->parameters. */
typedef struct cb__backfill_target {
	long long schedule_id, version;
	double now;
	char cron[CB_CRON_EXPR_MAX + 1];
	char zone[101];
	char overlap[6];    /* "SKIP", "QUEUE", "ALLOW" */
	json_t *parameters; /* the templates */
	int paused;
	char job_name[101];
} cb__backfill_target;
int cb__repo_schedule_for_backfill(cb__backfill_target *out, PGconn *conn, const char *name,
				   cb_error *err);

/* Time @p text (ISO 8601 with an offset, or a civil time or date taken in
 * zone @p zone, as PostgreSQL reads them) in Unix seconds. @return 0,
 * CB_EINVAL (the server could not read it: @p what names it), CB_EDB. */
int cb__repo_zone_time(double *out, PGconn *conn, const char *text, int has_offset,
		       const char *zone, const char *what, cb_error *err);

/* Create the BACKFILL firings of @p instants (a JSON array text of
 * {"epoch", "job_key", "parameters"}) for schedule t (batch_schedule_backfill).
 * @p out receives a new JSON array, one object per instant ("outcome"
 * CREATED or EXISTS, "fire_epoch", "firing_id", "status", "kind"), or NULL
 * with @p outcome CHANGED or GONE (nothing written). */
int cb__repo_schedule_backfill(json_t **out, char *outcome, size_t outcome_size, PGconn *conn,
			       const cb__backfill_target *t, const char *actor, int parallel,
			       const char *instants, cb_error *err);

/* Cancel schedule @p schedule_id's queued BACKFILL firings for @p actor
 * (batch_schedule_backfill_cancel): @p out receives a new JSON array of the
 * instants canceled (Unix seconds), oldest first. */
int cb__repo_schedule_backfill_cancel(json_t **out, PGconn *conn, long long schedule_id,
				      const char *actor, cb_error *err);

/* The state of instance (@p job_name, @p job_key) as the launcher would
 * judge it, read without locks: "COMPLETED", "ABANDONED", "RUNNING" (its
 * newest execution runs under a lease that holds) or "" (a new run may
 * start); @p execution_id its newest execution (0: no instance). */
int cb__repo_instance_state(char *state, size_t size, long long *execution_id, PGconn *conn,
			    const char *job_name, const char *job_key, cb_error *err);

#endif
