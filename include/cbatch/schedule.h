/**
 * @file schedule.h
 * Schedules kept in the repository, and the scheduler that fires them once
 * per cluster.
 *
 * A schedule fires a registered job on a cron expression (cron.h) in a time
 * zone, with parameters filled from the fire instant. Every scheduler process
 * (cb_scheduler_run, the CLI's `scheduler`) reads the same schedules; a fire
 * instant becomes a run only through a claim: one row per (schedule, instant)
 * under a unique key, inserted in one transaction in the database's time.
 * The other nodes lose the claim: counted, not recorded (metric
 * cbatch_schedule_claim_lost_total). The next instant is computed from
 * the claimed one, never from a node's clock, so nodes whose clocks disagree
 * still walk the same instants.
 *
 * ## Time zones
 *
 * Zone rules come from the repository's PostgreSQL server (its tz data), so
 * that every node uses the same rules whatever its own. DST follows Vixie
 * cron: a fixed-time expression (neither the minute nor the hour field starts
 * with `*`) fires once per matching wall-clock time; one that falls in a
 * skipped hour fires at the first instant after the gap (a daily 02:30 runs
 * at 03:00 on the day clocks go forward), one in a repeated hour only at its
 * first occurrence. A wildcard expression (`*` or `* /n` in the minute or the
 * hour) fires at every instant whose wall-clock time matches: in both passes
 * of a repeated hour, and not at all in a skipped one.
 *
 * ## Parameter templates
 *
 * Parameters in command-line syntax (params.h) whose text may hold, filled
 * from the fire instant: `{fire_date}` (YYYY-MM-DD in the schedule's zone),
 * `{fire_date-N}` and `{fire_date+N}` (days), `{fire_time}` (local time with
 * its offset, 2026-12-02T02:30:00+01:00), `{fire_utc}` (2026-12-02T01:30:00Z),
 * `{fire_epoch}` (Unix seconds), `{schedule}` (its name); `{{` and `}}` are
 * literal braces. Each run also gets the non-identifying `schedule.name` and
 * `schedule.fireTime`. Identifying parameters should depend on the instant
 * (targetDate:date={fire_date-1}); otherwise every firing is one job
 * instance, which completes once.
 *
 * ## Misfires
 *
 * An instant taken more than its grace (default 60 s) late, because no
 * scheduler ran, is a misfire. RUN_ONCE (the default) records the missed
 * instants and runs one firing now for the latest of them; SKIP records them
 * and runs nothing. Either way the schedule goes on with its next instant.
 *
 * ## Overlap
 *
 * A fire instant that comes due while an earlier firing of the same schedule
 * is still live (being launched by a node whose lease holds, or running an
 * execution whose lock's lease holds, on any node; queued; or with a restart
 * due) is decided in the claim, under the schedule's row lock, by the
 * schedule's overlap policy: CB_OVERLAP_SKIP (the default) records it
 * SKIPPED_OVERLAP and runs nothing; CB_OVERLAP_QUEUE records it QUEUED (at
 * most one per schedule, more are skipped) and any node runs it, with the
 * parameters of its own instant, once the live one has ended;
 * CB_OVERLAP_ALLOW runs every instant. An execution whose lease has run out
 * is dead, not live.
 *
 * ## Recovery
 *
 * With recovery on (the default), an execution of a firing that ended
 * without finishing (its node died: the firing is ORPHANED and the execution
 * STOPPED by the parent-death signal or dead by its lease; or its process
 * died without recording its end: FAILED "owner lost"; or the node's own stop
 * stopped it) is restarted, as the CLI's `restart` does, by any node that has
 * the job, recover_delay_seconds after its end was seen and once its lease is
 * over, at most recover_attempts times (events RECOVERY_DUE, RESTARTED,
 * NOT_RECOVERED, with the attempt). A FAILED execution for any other reason
 * (a step's error, bad data) and a stop asked for by an operator are left.
 *
 * All functions take a connection to a repository at the current schema
 * version (not in a transaction); none keeps it.
 */
#ifndef CBATCH_SCHEDULE_H
#define CBATCH_SCHEDULE_H

#include <stddef.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "error.h"
#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** Version of cb_schedule_def: 2 added the overlap and recovery members, 3
 *  same_instance (a version 2 definition is allowed one instance, as before). */
#define CB_SCHEDULE_DEF_VERSION 3

/** Overlap policies (cb_schedule_def.overlap). */
enum {
	CB_OVERLAP_SKIP = 0, /**< skip an instant due while a firing is live (default) */
	CB_OVERLAP_QUEUE,    /**< run it after the live one (one waiting at most) */
	CB_OVERLAP_ALLOW     /**< run every instant, overlapping or not */
};

/** A schedule to add. Strings are borrowed for the call. */
typedef struct cb_schedule_def {
	unsigned int version;          /**< CB_SCHEDULE_DEF_VERSION */
	const char *name;              /**< 1-100 of [A-Za-z0-9_.-] */
	const char *cron;              /**< the expression (cron.h) */
	const char *time_zone;         /**< a zone the server knows; NULL: UTC */
	const char *job_name;          /**< the job it launches */
	const char *const *parameters; /**< templates (see above) */
	size_t nparameters;
	int skip_misfires;         /**< misfire policy SKIP (else RUN_ONCE) */
	int misfire_grace_seconds; /**< 1..86400; 0: 60 */
	int paused;                /**< add it paused */
	/* version 2; a version 1 definition gets the defaults */
	int overlap;               /**< CB_OVERLAP_* (SKIP) */
	int recover_leave;         /**< never restart an unfinished execution */
	int recover_attempts;      /**< restarts per firing, 1..100; 0: 3 */
	int recover_delay_seconds; /**< before a restart, 1..86400; 0: 10 */
	/* version 3 */
	int same_instance; /**< allow templates that ignore the fire instant: every
			    *   firing is then one job instance, which completes once
			    *   (refused without it: CB_EINVAL naming the fix) */
} cb_schedule_def;

#define CB_SCHEDULE_DEF_INIT                                                                       \
	{                                                                                          \
		CB_SCHEDULE_DEF_VERSION, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0   \
	}

/** Result of cb_schedule_add. */
typedef struct cb_schedule_added {
	long long schedule_id;
	long long first_fire;     /**< the first fire instant, Unix seconds */
	char first_fire_text[64]; /**< the same, local time with offset */
	int same_instance;        /**< no identifying parameter uses the fire instant */
} cb_schedule_added;

/**
 * Check @p def and add it: the name, the expression, the zone (known to the
 * server), the templates (filled for the first instant, they must make
 * parameters @p job accepts, when @p job is not NULL). Nothing is written if
 * anything is wrong.
 * @return 0; CB_EINVAL (the message names the field, the character or the
 *         template; also a name already taken); CB_EDB; CB_ENOMEM
 */
int cb_schedule_add(cb_schedule_added *out, PGconn *conn, const cb_schedule_def *def,
		    const cb_job *job, cb_error *err);

/**
 * Schedules as a JSON array (all, or the one named @p name), each with
 * "schedule_id", "name", "cron", "time_zone", "job", "parameters",
 * "misfire_policy", "misfire_grace_seconds", "paused", "overlap_policy"
 * (SKIP, QUEUE, ALLOW), "recover_policy" (RESTART, LEAVE), "recover_attempts",
 * "recover_delay_seconds", "next_fire_time",
 * "next_fire_epoch", "last_fire_time", "last_firing" and "firings" (counts by
 * status). @p out receives a new reference.
 * @return 0, CB_ENOTFOUND (no schedule @p name), CB_EDB
 */
int cb_schedule_list(json_t **out, PGconn *conn, const char *name, cb_error *err);

/**
 * The newest @p limit firing events of schedule @p name, newest first: what
 * the nodes did with the instants (FIRED, MISFIRED, FAILED_TO_LAUNCH,
 * FINISHED, ORPHANED, SKIPPED_OVERLAP, QUEUED, RECOVERY_DUE, RESTARTED,
 * NOT_RECOVERED, BACKFILL, CANCELED; SKIPPED_CLAIMED only in a history older
 * than schema 21: a claim lost to another node is counted, not recorded),
 * with "fire_time", "node_id", "job_execution_id", "attempt" (restarts),
 * "kind" (of the firing, when it still has one: SCHEDULED, MISFIRE_RUN,
 * MISFIRE_SKIP, MANUAL, BACKFILL), "message", "recorded_at" (when the event
 * was last written), "instant_count" and "last_instant": consecutive
 * instants skipped because of the same live firing are one SKIPPED_OVERLAP
 * event, from "fire_time" to "last_instant" (each other event: 1, and its
 * "fire_time").
 * @return 0, CB_ENOTFOUND, CB_EDB
 */
int cb_schedule_history(json_t **out, PGconn *conn, const char *name, long long limit,
			cb_error *err);

/**
 * Pause or resume schedule @p name. Resuming starts from the next instant
 * after now: what it slept through is no misfire. @p changed (may be NULL)
 * is 0 when it already was so.
 * @return 0, CB_ENOTFOUND, CB_EDB
 */
int cb_schedule_pause(int *changed, PGconn *conn, const char *name, int pause, cb_error *err);

/** Result of cb_schedule_fire_now. */
typedef struct cb_schedule_fired {
	int queued;          /**< 1: the firing waits for a scheduler node (or behind a live one) */
	long long firing_id; /**< the firing recorded (also for a skip by overlap); 0 if none */
	long long fire_time; /**< the instant claimed: the database's clock, to the second */
	char fire_time_text[64]; /**< the same, in the schedule's zone with its offset */
	char message[512];       /**< why it was refused, or what it waits for */
} cb_schedule_fired;

/**
 * Fire schedule @p name now, for @p actor ("console@ADDRESS"): a firing of
 * kind MANUAL for the database's current second, claimed as a scheduler node
 * claims an instant, so that the same rules hold: once per (schedule,
 * instant), and the overlap policy (a live firing under SKIP records it
 * SKIPPED_OVERLAP and nothing runs; under QUEUE it queues behind it). Its
 * parameters are the templates filled for that instant. A claimed manual
 * firing is QUEUED: the next scheduler node that has the job launches it as
 * any firing (nothing runs while no scheduler runs).
 * @return 0 (out->queued 1); CB_ERUNNING (refused by the overlap policy or
 *         the instant is taken: out->message says why, nothing runs);
 *         CB_EINVAL (paused, or a template that cannot be filled);
 *         CB_ENOTFOUND; CB_EDB; CB_ENOMEM
 */
int cb_schedule_fire_now(cb_schedule_fired *out, PGconn *conn, const char *name, const char *actor,
			 cb_error *err);

struct cb_registry; /* cli.h */

/**
 * cb_schedule_fire_now, with the program's jobs: the firing's job key (by
 * which it finds the execution it launched) is cb_job_key's, so that a
 * parameter the schedule's job declared non-identifying does not name its
 * instance. cb_schedule_fire_now is this with @p reg NULL, and keys the
 * parameters as the templates mark them; so is a job @p reg does not hold.
 * @param reg the program's registry (borrowed; may be NULL)
 * @return as cb_schedule_fire_now
 */
int cb_schedule_fire_now_ext(cb_schedule_fired *out, PGconn *conn, const struct cb_registry *reg,
			     const char *name, const char *actor, cb_error *err);

/** Version of cb_schedule_backfill_options. */
#define CB_SCHEDULE_BACKFILL_OPTIONS_VERSION 1
/** The most instants one backfill may create (cb_schedule_backfill_options.max_instants). */
#define CB_SCHEDULE_BACKFILL_MAX 100000

/** What to backfill. Strings are borrowed for the call. */
typedef struct cb_schedule_backfill_options {
	unsigned int version; /**< CB_SCHEDULE_BACKFILL_OPTIONS_VERSION */
	/** The range, both ends included: "2026-11-01T00:00:00+01:00" (an
	 *  offset, or Z), "2026-11-01 06:00" (no offset: the schedule's zone),
	 *  or "2026-11-01" (midnight in the schedule's zone). */
	const char *from, *to;
	long long max_instants; /**< refuse a range of more instants; 0: 1000 */
	int parallel;           /**< backfill firings at once, overlap ALLOW only; 0: 1 */
	const char *actor;      /**< who asks ("user@host", "console@ADDRESS") */
	/** The program's jobs (borrowed; may be NULL): each firing's job key is
	 *  cb_job_key's, so that a parameter the job declared non-identifying
	 *  does not name its instance (as cb_schedule_fire_now_ext). */
	const struct cb_registry *reg;
} cb_schedule_backfill_options;

#define CB_SCHEDULE_BACKFILL_OPTIONS_INIT                                                          \
	{                                                                                          \
		CB_SCHEDULE_BACKFILL_OPTIONS_VERSION, NULL, NULL, 0, 0, NULL, NULL                 \
	}

/**
 * Backfill schedule @p name: one firing of kind BACKFILL for each instant of
 * its cron, in its zone, from o->from to o->to (both included), with the
 * templates filled for that instant, so that each is its own job instance.
 * An instant that has a firing already (fired, skipped, queued, backfilled)
 * keeps it: a second backfill of the same range creates nothing. The
 * firings are QUEUED, recorded as BACKFILL events, and taken by scheduler
 * nodes as queued firings are: oldest instant first, after the schedule's
 * own queued firings, under its overlap policy (SKIP and QUEUE: one at a
 * time, never beside another firing of the schedule; ALLOW: at most
 * o->parallel at once) and its recovery policy. Nothing runs while no
 * scheduler runs, nor while the schedule is paused.
 *
 * @p out receives a new JSON object: "schedule", "from", "to" (the range in
 * the schedule's zone), "overlap_policy", "parallel", "created", "existing",
 * and "instants", oldest first, each {"fire_time" (in the schedule's zone),
 * "fire_epoch", "firing_id", "created" (false: it had a firing already),
 * "status", "kind"}. Nothing is written when anything is refused.
 * @return 0; CB_EINVAL (a time that does not parse, a reversed range, an end
 *         in the future by the database's clock, no instant in the range,
 *         more than max_instants, parallel above 1 unless the overlap policy
 *         is ALLOW, a paused schedule, bad options: the message says which);
 *         CB_ENOTFOUND; CB_EDB; CB_ENOMEM
 */
int cb_schedule_backfill(json_t **out, PGconn *conn, const char *name,
			 const cb_schedule_backfill_options *o, cb_error *err);

/**
 * Cancel the backfill of schedule @p name, for @p actor: its BACKFILL
 * firings still QUEUED are removed, each instant recorded as a CANCELED
 * event (a firing already taken runs on). @p out receives a new JSON object
 * {"schedule", "canceled" (how many), "first", "last" (their instants in the
 * schedule's zone, null when none)}.
 * @return 0, CB_ENOTFOUND, CB_EDB, CB_ENOMEM
 */
int cb_schedule_backfill_cancel(json_t **out, PGconn *conn, const char *name, const char *actor,
				cb_error *err);

/** Remove schedule @p name with its firings and history. @return 0, CB_ENOTFOUND, CB_EDB */
int cb_schedule_remove(PGconn *conn, const char *name, cb_error *err);

/**
 * The next @p count fire instants (1..1000) of schedule @p name (from its
 * cursor), or, with @p name NULL, of expression @p cron in @p time_zone
 * (NULL: UTC) from now: a JSON array of {"local", "utc", "epoch"}, fewer when
 * the expression stops firing.
 * @return 0, CB_EINVAL (bad expression or zone, or one that never fires),
 *         CB_ENOTFOUND (no schedule @p name), CB_EDB
 */
int cb_schedule_next(json_t **out, PGconn *conn, const char *name, const char *cron,
		     const char *time_zone, size_t count, cb_error *err);

/* ---- the scheduler -------------------------------------------------------- */

/** Version of cb_scheduler_options. */
#define CB_SCHEDULER_OPTIONS_VERSION 2

/** How a scheduler node runs. */
typedef struct cb_scheduler_options {
	unsigned int version; /**< CB_SCHEDULER_OPTIONS_VERSION */
	const char *conninfo; /**< NULL: $CBATCH_DB, else libpq's PG* variables */
	/** The program the firings run as `PROG run JOB PARAMS...` (a program
	 * whose main is cb_cli_main with the same registry), and its argv[0]. */
	const char *exe, *prog;
	double lease_seconds;      /**< how long the other nodes trust this one (30) */
	int max_running;           /**< jobs at once; beyond, instants are left to others (8) */
	int verbose;               /**< 0 quiet, 1 a line per firing, 2 also skipped instants */
	double exit_after_seconds; /**< stop by itself after this long; 0: only at a signal */
	/* Version 2: */
	/** Run firings in this many long-lived runner processes instead of a new
	 * process each (0, the default): each runner is forked from the node
	 * without exec and runs one firing after another in-process, by calling
	 * @ref run with the firing's `PROG run JOB PARAMS...`, keeping its
	 * repository connections between them. At most this many run at once
	 * (it replaces max_running). A runner that dies ends its firing as a
	 * child's death would, and another is started. Job code that keeps
	 * global state must expect several runs in one process. */
	int runners;
	/** With runners: runs one firing's command line and returns its exit
	 * code (a program's cb_cli_main with its registry, @ref run_ctx). */
	int (*run)(void *run_ctx, int argc, char **argv);
	void *run_ctx; /**< passed to @ref run */
} cb_scheduler_options;

#define CB_SCHEDULER_OPTIONS_INIT                                                                  \
	{                                                                                          \
		CB_SCHEDULER_OPTIONS_VERSION, NULL, NULL, NULL, 30.0, 8, 1, 0.0, 0, NULL, NULL     \
	}

/** What a node did. */
typedef struct cb_scheduler_result {
	long long fired, skipped_claimed, misfired, failed_to_launch, orphans_reported;
	long long skipped_overlap, queued, restarted;
} cb_scheduler_result;

/**
 * Fire due schedules of the jobs in @p reg until SIGINT/SIGTERM (or
 * exit_after_seconds): then no new firing is taken, running jobs are asked to
 * stop after their chunk (SIGTERM: STOPPED, restartable) and are waited for.
 * Schedules of jobs not in @p reg are left to nodes that have them. A lost
 * repository connection is retried with backoff, and nothing fires without a
 * committed claim. A firing left open by a node that is gone (its lease ran
 * out, or its process on this host died) is reported ORPHANED, never fired
 * again; the execution it launched is restarted by the schedule's recovery
 * (see above) once its own lease is over.
 * @return 0, or CB_EINVAL (bad options) / CB_ENOMEM with @p err set
 */
int cb_scheduler_run(cb_scheduler_result *out, const struct cb_registry *reg,
		     const cb_scheduler_options *opts, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
