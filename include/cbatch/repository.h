/**
 * @file repository.h
 * The PostgreSQL job repository: schema, statuses, and the operator's view.
 *
 * All SQL that touches the batch_* tables lives behind this header and the
 * engine's internal calls. Functions take a borrowed PGconn that must not be
 * inside a transaction or in pipeline mode.
 */
#ifndef CBATCH_REPOSITORY_H
#define CBATCH_REPOSITORY_H

#include <jansson.h>
#include <libpq-fe.h>
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** Job and step execution statuses, as stored (by name) in the repository. */
typedef enum cb_status {
	CB_STATUS_STARTING = 0,
	CB_STATUS_STARTED,
	CB_STATUS_STOPPING,
	CB_STATUS_STOPPED,
	CB_STATUS_COMPLETED,
	CB_STATUS_FAILED,
	CB_STATUS_ABANDONED,
	CB_STATUS_UNKNOWN
} cb_status;

/** The status's name ("COMPLETED"). */
const char *cb_status_name(cb_status s);
/** Parse a status name; unknown names give CB_STATUS_UNKNOWN. */
cb_status cb_status_parse(const char *name);
/** Non-zero for STARTING, STARTED and STOPPING: an execution that is (or claims to be) live. */
int cb_status_is_running(cb_status s);

/** The schema version this library creates and expects. */
int cb_repo_schema_target(void);

/**
 * Create or upgrade the repository schema to cb_repo_schema_target().
 * Safe to run any number of times, also concurrently (an advisory lock
 * serialises it; each migration commits with its version row).
 * @p from and @p to (may be NULL) receive the versions before and after.
 * @return 0, CB_EDB, CB_EINVAL (the database has a newer schema than this library).
 */
int cb_repo_schema_init(PGconn *conn, int *from, int *to, cb_error *err);

/**
 * Check that the schema is present at this library's version.
 * @return 0, CB_EINVAL (absent or at another version: the message says to
 *         run `cbatch schema init`), CB_EDB.
 */
int cb_repo_schema_check(PGconn *conn, cb_error *err);

/**
 * List job executions, newest first. @p job_name NULL lists all jobs.
 * @p out receives a new JSON array of execution objects with the keys
 * job_execution_id, job_instance_id, job_name, job_key, status, exit_code,
 * exit_message, create_time, start_time, end_time, owner_id, stop_origin
 * (who asked it to stop: "OPERATOR", "SIGNAL", "ENGINE", or null), lock_name,
 * fencing_token, owner_lost (true for an execution that claims to run but
 * whose lock lease is gone: dead, and restartable by the next run),
 * parameters (object), and partitions: null for an execution without
 * partitioned steps, else how far its partitions are, {"total",
 * "completed", "running" (STARTED or STOPPING), "waiting" (STARTING: not
 * claimed yet), "failed" (FAILED, ABANDONED or UNKNOWN), "stopped"}; and
 * items_read, the items its steps (or their partitions) read.
 * @return 0 or CB_EDB.
 */
int cb_repo_list_executions(json_t **out, PGconn *conn, const char *job_name, int limit,
			    cb_error *err);

/**
 * One job execution with its step executions (key "steps": an array with
 * step_execution_id, step_name, status, read_count, write_count,
 * filter_count, commit_count, rollback_count, skip counts, times, exit code
 * and message, and "context"). A partitioned (manager) step has a
 * "partitions" array, by partition_index, of its worker step executions
 * with the same counts, times and exit, and step_execution_id,
 * partition_index, step_name, owner_id, worker (host/pid/thread of the
 * current or last claimant), claim_count, lock_name, fencing_token,
 * partition (the partitioner's object) and lease_left_seconds (seconds to
 * the end of the lease of the partition lock while that lock still carries
 * the partition's fencing token and is not released, negative once the
 * lease ran out; null otherwise). Partitions are not listed as steps of
 * their own. @p out receives a new JSON object.
 * @return 0, CB_ENOTFOUND, CB_EDB.
 */
int cb_repo_show_execution(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err);

/**
 * The log of a job execution: what the run printed (stdout and stderr, as
 * they came), kept by the scheduler node or the console that launched it,
 * its last bytes only. @p out receives a new JSON object: job_execution_id,
 * status, captured (false when no log was kept: the run was started some
 * other way, from a shell), log (text, null when not captured; bytes that
 * were not UTF-8 replaced by U+FFFD), bytes_dropped (bytes cut from its
 * head to keep the cap), bytes_total (bytes printed) and updated_at (when it
 * was last written; a running execution's is rewritten every few seconds).
 * @return 0, CB_ENOTFOUND (no such execution), CB_EDB.
 */
int cb_repo_execution_log(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err);

/**
 * Stop an execution. A live one (its owner holds its lock) that is STARTING
 * or STARTED becomes STOPPING: the running process ends as STOPPED at its
 * next chunk commit or step boundary, or before its first step when the stop
 * came while it was starting (a STOPPING one is left as it is). A dead one
 * (it claims to run but its owner lost its lock: lease expired, taken over
 * or released) ends STOPPED at once with its running steps ("owner lost;
 * stopped by operator"), at its last sign of life; its expired lock is
 * released (audited as RELEASED) so that its owner, if only frozen, is
 * fenced off. Either way the instance stays restartable, and the stop is
 * recorded as an operator's (batch_job_execution.stop_origin OPERATOR, unless
 * another origin was recorded first), which a schedule's recovery never
 * restarts.
 * @p out receives CB_STATUS_STOPPING or CB_STATUS_STOPPED.
 * @return 0, CB_ENOTFOUND, CB_EINVAL (not running: message says its status), CB_EDB.
 */
int cb_repo_stop(cb_status *out, PGconn *conn, long long job_execution_id, cb_error *err);

/** As cb_repo_stop, without saying which status the execution took. */
int cb_repo_request_stop(PGconn *conn, long long job_execution_id, cb_error *err);

/**
 * Mark the newest execution of an instance ABANDONED; the instance can no
 * longer be restarted (a launch refuses an instance with any ABANDONED
 * execution). It must be FAILED or STOPPED, or dead: it claims to run but its
 * owner lost its lock; then its running steps end FAILED ("owner lost") and
 * it ends at its last sign of life, saying it was abandoned after its owner
 * was lost, and its expired lock is released as by cb_repo_stop.
 * @return 0, CB_ENOTFOUND, CB_EINVAL (wrong status; running with a live
 *         owner, the message says until when its lease runs; or not the
 *         newest execution of its instance, the message names the newest), CB_EDB.
 */
int cb_repo_abandon(PGconn *conn, long long job_execution_id, cb_error *err);

/**
 * The job name of an execution, for the CLI's restart. @p out (at least
 * 101 bytes) receives it. @return 0, CB_ENOTFOUND, CB_EDB.
 */
int cb_repo_execution_job_name(char *out, size_t size, PGconn *conn, long long job_execution_id,
			       cb_error *err);

/* ---- cleanup of old metadata ------------------------------------------- */

/* Rows removed (or, in a dry run, that would be), per table. */
typedef struct cb_cleanup_counts {
	long long job_executions, job_instances;
	long long step_executions; /* partitions included */
	long long partitions;      /* of step_executions, the partitions */
	long long step_contexts, job_contexts, params, lock_audit;
	long long restart_links; /* surviving executions whose restart_of was cleared */
	/* Schedule history older than the cutoff: events, and firings that are
	 * finished and not their schedule's newest. */
	long long schedule_events, schedule_firings;
	/* batch_lock rows not touched since the cutoff, released (or their lease
	 * long over) and of no execution that remains or runs: a name taken
	 * again later gets a greater fencing token all the same. */
	long long locks;
} cb_cleanup_counts;

/* Reported after every batch that committed. */
typedef struct cb_cleanup_progress {
	/* "executions", "lock audit", "locks", "schedule events" or "schedule
	 * firings", in that order */
	const char *phase;
	long long batch; /* 1, 2, ... over both phases */
	cb_cleanup_counts counts, total;
	double seconds; /* since the cleanup started */
	/* How far the phase has got through what it walks (0..1, the share of
	 * the time from its oldest row to the cutoff passed; -1: not known for
	 * this phase) and the seconds it will still take at its recent pace
	 * (-1: not known yet, over the first few batches, or at all). */
	double fraction;
	double eta_seconds;
} cb_cleanup_progress;

/** Version of cb_cleanup_options. */
#define CB_CLEANUP_OPTIONS_VERSION 1

typedef struct cb_cleanup_options {
	unsigned int version;      /* CB_CLEANUP_OPTIONS_VERSION */
	double older_than_seconds; /* executions that ended before now (database clock) minus this */
	long long keep_last;       /* > 0: keep the newest N executions of each job name */
	long long batch;           /* executions per transaction (10 x as many audit rows) */
	int dry_run;               /* count only, in one read-only statement */
	double lock_timeout_seconds; /* per batch; 0: 1 s */
	void (*progress)(void *ctx, const cb_cleanup_progress *p);
	void *progress_ctx;
} cb_cleanup_options;

#define CB_CLEANUP_OPTIONS_INIT                                                                    \
	{                                                                                          \
		CB_CLEANUP_OPTIONS_VERSION, 0, 0, 1000, 0, 1.0, NULL, NULL                         \
	}

typedef struct cb_cleanup_result {
	cb_cleanup_counts removed;
	char cutoff[64];             /* the cutoff, as the database printed it */
	long long batches;           /* transactions that committed */
	long long skipped_instances; /* held by others at the last pass: left for next time */
	double seconds;
} cb_cleanup_result;

/*
 * Remove job executions that ended before the cutoff, with their steps
 * (partitions too), contexts, parameters and lock audit rows, and the
 * instances left with none; audit rows tied to no execution go when older
 * than the cutoff, and so do lock rows not touched since the cutoff that are
 * released (or whose lease ended before it) and whose execution is gone or
 * was none. Never an execution of an instance that is running or
 * restartable, nor the newest of an instance unless all of it goes, nor what
 * --next reads (the first execution of each job's newest instance): the rule
 * is batch_cleanup_removable() in SQL. In short transactions of opt->batch
 * executions, safe while jobs run. Schedule firings keep their
 * job_execution_id (no foreign key: history of the schedule).
 * @return 0, CB_EINVAL (bad options), CB_EDB / CB_ERETRY (a batch failed:
 * the batches before it stay done), CB_ENOMEM.
 */
int cb_repo_cleanup(cb_cleanup_result *out, PGconn *conn, const cb_cleanup_options *opt,
		    cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
