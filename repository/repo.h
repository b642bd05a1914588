/*
 * The engine's side of the job repository (internal). All SQL that touches
 * batch_* tables lives in repository/. Connections are borrowed, not in a
 * transaction and not in pipeline mode, unless a function says otherwise.
 */
#ifndef CB_REPOSITORY_REPO_H
#define CB_REPOSITORY_REPO_H

#include <jansson.h>
#include <libpq-fe.h>
#include "cbatch/params.h"
#include "cbatch/repository.h"
#include "cbatch/pg.h"
#include "pgkit.h"
#include "zone.h"

/* Run a parameterised statement; on failure record it in err. The result is
 * returned for the caller to PQclear (NULL on failure). */
PGresult *cb__repo_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			const char *const *values, cb_error *err);

/* When set, told of every statement cb__repo_exec runs, before it runs
 * (tests: tests/integration/test_scale_plans.c EXPLAINs the statements
 * exactly as the code runs them). Not thread-safe to change while others run. */
typedef void (*cb__repo_observer_fn)(void *ctx, const char *what, const char *sql, int nparams,
				     const char *const *values);
extern cb__repo_observer_fn cb__repo_observer;
extern void *cb__repo_observer_ctx;

/* Run a statement for its effect only. */
int cb__repo_command(PGconn *conn, const char *what, const char *sql, int nparams,
		     const char *const *values, cb_error *err);

/* What a launch decided and made. */
typedef struct cb__launch {
	long long job_instance_id;
	long long job_execution_id;
	long long restart_of; /* the previous execution restarted, 0 if none */
	int instance_created;
	int dead_owner; /* the restarted execution's owner was dead */
} cb__launch;

/*
 * Before the lock: refuse a launch whose answer needs no lock, because it
 * is final (the instance is complete or abandoned, @p expect_restart_of is
 * not its newest execution, or it already ran and is not @p restartable),
 * with cb__repo_launch's codes and messages. A plain read, no transaction;
 * cb__repo_launch decides again under the lock. @return 0 or the refusal.
 */
int cb__repo_launch_precheck(PGconn *conn, const char *job_name, const char *job_key,
			     int restartable, long long expect_restart_of, cb_error *err);

/*
 * Create (or find) the instance of job_name/job_key and a new STARTING
 * execution of it with @p params, in one transaction. A completed instance
 * gives CB_ECOMPLETE, an abandoned one (or a failed one when !restartable)
 * CB_ENORESTART, a live execution CB_ERUNNING. The new execution's context
 * is copied from the restarted execution.
 * The caller holds the lock @p lock_name with @p fencing_token: a newest
 * execution that still claims to run but whose own lock (name, token) is no
 * longer held is dead. It is marked FAILED ("owner lost") with its running
 * steps, and the launch proceeds as its restart (out->dead_owner set).
 * @p expect_restart_of: when > 0, the newest execution must be this one
 * (`restart ID`), else CB_EINVAL.
 */
int cb__repo_launch(cb__launch *out, PGconn *conn, const char *job_name, const char *job_key,
		    const cb_params *params, int restartable, const char *owner_id,
		    long long expect_restart_of, const char *lock_name, long long fencing_token,
		    const char *dead_why, cb_error *err);

/*
 * What a launch whose session was lost (@p lost_pid, its server backend)
 * before it knew the outcome had committed: the lock @p lock_name of
 * @p owner_id that session holds (*token, 0 if none), and the execution it
 * created under that lock and has not started (out->job_execution_id, 0 if
 * none; out->restart_of too). @return 0 or CB_EDB.
 */
int cb__repo_launch_left(cb__launch *out, long long *token, PGconn *conn, const char *lock_name,
			 const char *owner_id, int lost_pid, cb_error *err);

/*
 * SQL fragments shared by every statement that judges or buries an execution
 * (all take the execution's table alias):
 * CB__OWNER_LOST_SQL: true when the lock the execution ran under (its name
 * and fencing token) is no longer held: taken over, released, or its lease
 * expired. An execution that claims to run and whose owner is lost is dead.
 * CB__LAST_SIGN_SQL: its last sign of life (its heartbeat, its last update or
 * any of its steps' and partitions' last checkpoint, whichever is later; never
 * in the future): the end time of a dead execution.
 */
#define CB__OWNER_LOST_SQL(e)                                                                      \
	"(" e ".lock_name IS NOT NULL AND NOT EXISTS (SELECT 1 FROM batch_lock l "                 \
	"WHERE l.lock_name = " e ".lock_name AND l.fencing_token = " e ".fencing_token "           \
	"AND batch_lock_is_held(l.released, l.locked_until)))"
#define CB__LAST_SIGN_SQL(e) "batch_execution_last_sign(" e ".job_execution_id)"

/*
 * STARTING -> STARTED, start_time = now; guarded: only a STARTING execution
 * starts. @p out receives CB_STATUS_STARTED, or CB_STATUS_STOPPING when a stop
 * was requested while it was starting (it was not started: the caller ends
 * it STOPPED without running a step). @return 0, CB_EFENCED (another process
 * ended it: the message says its status), CB_ENOTFOUND, CB_EDB.
 */
int cb__repo_job_started(cb_status *out, PGconn *conn, long long job_execution_id, cb_error *err);

/* End the job execution: status, exit code/message, end_time. Ending
 * STOPPED, @p stop_origin ("SIGNAL", "ENGINE") says whose stop it was unless
 * a stop request recorded its origin already (that one stays; sql/017); NULL
 * records none. */
int cb__repo_job_finish(PGconn *conn, long long job_execution_id, cb_status status,
			const char *exit_code, const char *exit_message, const char *stop_origin,
			cb_error *err);

/* cb_repo_stop, recording the stop as @p origin's ("OPERATOR", "SIGNAL" or
 * "ENGINE": batch_job_execution.stop_origin, sql/017). */
int cb__repo_stop_as(cb_status *out, PGconn *conn, long long job_execution_id, const char *origin,
		     cb_error *err);

/* Load the parameters of an execution. @p out receives a new cb_params. */
int cb__repo_load_params(cb_params **out, PGconn *conn, long long job_execution_id, cb_error *err);

/*
 * Parameters of the newest instance of a job (first execution), or *out =
 * NULL when the job never ran. Its identifying long run.id is replaced by the
 * largest identifying long run.id over all the job's instances (added when
 * the newest instance has none), so that one more is always a new instance.
 */
int cb__repo_last_instance_params(cb_params **out, PGconn *conn, const char *job_name,
				  cb_error *err);

/* The job execution's context (new JSON object). */
int cb__repo_job_context(json_t **out, PGconn *conn, long long job_execution_id, cb_error *err);

/* The newest execution of @p step_name within the instance, if any. */
typedef struct cb__step_history {
	int found;
	long long step_execution_id;
	cb_status status;
	json_t *context;       /* new reference, or NULL when !found */
	long long start_count; /* executions of this step in the instance */
	char exit_code[64];
} cb__step_history;

/* The committed version and context of a step execution (context: new ref). */
int cb__repo_step_state(long long *version, json_t **context, PGconn *conn,
			long long step_execution_id, cb_error *err);

/* Save the job execution's context. */
int cb__repo_save_job_context(PGconn *conn, long long job_execution_id, const json_t *context,
			      cb_error *err);

int cb__repo_step_history(cb__step_history *out, PGconn *conn, long long job_instance_id,
			  const char *step_name, cb_error *err);

/*
 * Create a STARTED step execution with @p context (borrowed), only while the
 * job execution is STARTED. @return 0, CB_ECANCELED (a stop was requested:
 * the job execution is STOPPING, no step was made), CB_EFENCED (the job
 * execution was ended by another process), CB_EDB, CB_ENOMEM.
 */
int cb__repo_step_create(long long *out_id, PGconn *conn, long long job_execution_id,
			 const char *step_name, const json_t *context, cb_error *err);
/* The step execution of @p step_name that job execution @p job_execution_id
 * has STARTED and not ended (*out_id, 0 if none): what a create whose answer
 * was lost with its session had made. @return 0 or CB_EDB. */
int cb__repo_step_started_of(long long *out_id, PGconn *conn, long long job_execution_id,
			     const char *step_name, cb_error *err);

/* Why a step was not created while the job execution is @p job_status (not
 * STARTED): CB_ECANCELED for STOPPING, else CB_EFENCED; set in @p err. */
int cb__repo_step_refused(cb_error *err, const char *job_status, long long job_execution_id,
			  const char *step_name);

/* End a step execution: status, exit code/message, extra rollbacks, end_time. */
int cb__repo_step_finish(PGconn *conn, long long step_execution_id, cb_status status,
			 const char *exit_code, const char *exit_message, long long rollbacks,
			 cb_error *err);

/*
 * The chunk checkpoint (batch_chunk_checkpoint): one commit's worth of a step
 * execution's bookkeeping. The counts are this commit's increments; the row's
 * version must equal @c version (it becomes version + 1) and, when @c lock_name
 * is set, the lock row must still carry @c fencing_token (its lease is then
 * extended by @c lease_seconds), or the statement fails and the chunk with it.
 * Only repository/steps.c knows the statement's parameters.
 */
typedef struct cb__checkpoint {
	long long step_execution_id;
	long long version;
	long long read, written, filtered, commits;
	long long read_skips, write_skips, process_skips;
	long long duplicates;  /* writers add theirs server-side (sys/tx.h): usually 0 */
	const json_t *context; /* the step's execution context (borrowed) */
	long long job_execution_id;
	const json_t *job_context; /* NULL: left as it is (the engine saves it between steps) */
	const char *lock_name;     /* NULL: the run holds no lock */
	long long fencing_token;
	double lease_seconds;
	/* sent on a run's second connection (chunk.connections = 2): its session
	 * is checked, the lock's owner session stays the first connection's */
	int secondary;
	/* out: the job execution's status (e.g. "STOPPING"), written at flush time */
	char *status;
	size_t status_size;
} cb__checkpoint;

/* The checkpoint statement's text ($1..$19 in batch_chunk_checkpoint's order),
 * for the simulator (tests/sim), which sends it on its own connections. */
const char *cb__repo_checkpoint_sql(void);

/* Prepare the checkpoint statement on @p conn (not in pipeline mode) under a
 * name written to @p name_out (64 bytes). @return 0 or CB_EDB. */
int cb__repo_checkpoint_prepare(PGconn *conn, char *name_out, const char *prefix, cb_error *err);

/*
 * Queue the checkpoint @p c in @p tx with the statement @p stmt (from
 * cb__repo_checkpoint_prepare). @p c is borrowed until the transaction is
 * flushed or committed: c->status receives the answer then. One JSON
 * serialisation per call (the context), as the chunk has always cost.
 * @return 0, CB_ENOMEM, CB_EDB (plain mode: the statement failed)
 */
int cb__repo_checkpoint_queue(cb_tx *tx, const char *stmt, cb__checkpoint *c, cb_error *err);

/* ---- the server session behind a connection (repository/session.c) ---- */

/*
 * @p conn's server session (backend pid and start time, as ISO 8601 UTC
 * text that stays valid while the session does), learned with one query the
 * first time and after a reset. Fails (CB_EDB, sqlstate CB003: "transaction
 * pooling is not supported") when another live connection of this process
 * has the same server session: a pooler shares sessions between clients.
 * Not in pipeline mode.
 */
int cb__conn_session(int *pid, const char **start, PGconn *conn, cb_error *err);

/* cb__conn_known_session, cb__conn_stmt_name: pg/pgkit.h. */

/* ---- locks (repository/lock.c) ---- */

typedef enum cb__lock_outcome {
	CB__LOCK_ACQUIRED,
	CB__LOCK_TAKEOVER,  /* the previous owner's lease had expired */
	CB__LOCK_HELD,      /* someone else holds it: a skip */
	CB__LOCK_OWNER_DEAD /* its owner's process on this host was gone: taken over */
} cb__lock_outcome;

typedef struct cb__lock_grant {
	cb__lock_outcome outcome;
	long long fencing_token;  /* 0 when held */
	char holder[200];         /* previous or current holder */
	char held_until[64];      /* its lease end, as text */
	double held_left_seconds; /* when held: how long its lease still runs */
	int old_session_ended;    /* 0: a replaced owner's session could not be ended */
	char note[256];           /* what happened to that session, or "" */
} cb__lock_grant;

/*
 * Acquire or take over; records the outcome in batch_lock_audit. A takeover
 * (expired lease, or a holder on this host whose process is gone, see
 * cb__owner_gone) first ends the previous owner's database session, so that
 * its open transaction cannot hold up this one; out->old_session_ended says
 * whether that worked. @p conn's session is recorded as the owner's, after
 * the server checked that it is the one @p conn connected to (CB003
 * otherwise, see cb__conn_session).
 */
int cb__lock_acquire(cb__lock_grant *out, PGconn *conn, const char *lock_name, const char *owner_id,
		     double lease_seconds, cb_error *err);

/* Extend the lease. *alive = 0 when the lock is no longer ours. */
int cb__lock_heartbeat(int *alive, PGconn *conn, const char *lock_name, const char *owner_id,
		       long long token, double lease_seconds, long long job_execution_id,
		       cb_error *err);

/* Release (respecting lock-at-least-for). */
int cb__lock_release(PGconn *conn, const char *lock_name, const char *owner_id, long long token,
		     double at_least_seconds, long long job_execution_id, cb_error *err);

/* Record an outcome that happens outside the lock functions (HEARTBEAT_FAILED, FENCED, ERROR). */
int cb__lock_audit(PGconn *conn, const char *lock_name, const char *owner_id, const char *outcome,
		   long long token, long long job_execution_id, const char *detail, cb_error *err);

/* Record @p conn's session as the lock owner's again (after a reconnect). */
int cb__lock_record_session(PGconn *conn, const char *lock_name, const char *owner_id,
			    long long token, cb_error *err);

/* *held = 1 when the lock still carries our owner id and token, unreleased. */
int cb__lock_held(int *held, PGconn *conn, const char *lock_name, const char *owner_id,
		  long long token, cb_error *err);

/* Set the session's lock_timeout to @p seconds; the previous value goes to
 * @p saved for cb__lock_restore_waits. */
int cb__lock_bound_waits(char *saved, size_t size, PGconn *conn, double seconds, cb_error *err);
int cb__lock_restore_waits(PGconn *conn, const char *saved, cb_error *err);

/*
 * A per-process owner identity: host:pid:starttime:pidns:boot:random
 * (process start time in clock ticks since boot, PID namespace inode, the
 * first 8 characters of the boot id).
 */
const char *cb__owner_id(void);

/*
 * 1 only when @p owner_id (as cb__owner_id makes it) names a process of this
 * host (same host name, boot and PID namespace) that is gone: no such pid, a
 * pid with another start time (reused), or a zombie. 0 when it is alive or
 * cannot be told (another host, another format).
 */
int cb__owner_gone(const char *owner_id);

/*
 * Sum the step executions named @p step_name of job instance
 * @p job_instance_id over all its job executions into @p out (step.h's
 * cb_step_summary; executions 0 when there is none). @return 0 or CB_EDB.
 */
struct cb_step_summary;
int cb__repo_step_summary(struct cb_step_summary *out, PGconn *conn, long long job_instance_id,
			  const char *step_name, cb_error *err);

/* ---- partitioned steps (repository/partition.c) ---- */

/*
 * Create the manager step execution @p manager_name (STARTED, context
 * @p manager_context) and its partitions (@p partitions: a JSON array of
 * {"index": i, "context": {...}}) in one transaction, only while the job
 * execution is STARTED; wakes the workers. @p fingerprint: of the step's
 * definition (cb__step_fingerprint), required of the claimants. Errors as
 * cb__repo_step_create.
 */
int cb__repo_partitions_create(long long *manager_id, PGconn *conn, long long job_execution_id,
			       const char *manager_name, const json_t *manager_context,
			       const json_t *partitions, const char *fingerprint, cb_error *err);

/*
 * Before the partitions of step @p manager_name are made for a new execution
 * of instance @p job_instance_id: partitions of earlier executions that ended
 * but kept their lock row are superseded, their claimants' sessions ended and
 * their lock rows removed (batch_partitions_supersede).
 */
int cb__repo_partitions_supersede(PGconn *conn, long long job_instance_id, const char *manager_name,
				  cb_error *err);

/*
 * The partitions of step @p manager_name (made @p count of them) that did
 * not complete in the instance, as the array cb__repo_partitions_create
 * takes, each with its newest committed context. CB_EINVAL when the
 * repository does not hold all @p count.
 */
int cb__repo_partitions_unfinished(json_t **out, long long *total, PGconn *conn,
				   long long job_instance_id, const char *manager_name,
				   long long count, cb_error *err);

/* A claimed partition. */
typedef struct cb__claim {
	int found;
	long long step_execution_id, job_execution_id, job_instance_id;
	char job_name[101], step_name[101], manager_name[101];
	int partition_index;
	char lock_name[64];
	long long fencing_token;
	long long version;
	int takeover; /* its previous claimant's lease had expired */
	char previous_owner[201];
} cb__claim;

/*
 * Why the partition of claim @p c is no longer this claimant's, in words for
 * its worker's log, into @p out: its execution ended (buried by a restart,
 * a stop, its scheduler: "its execution 5 ended FAILED: owner lost ..."),
 * another worker took it over ("taken over by W"), or it ended otherwise.
 * @return 0 or CB_EDB.
 */
int cb__repo_partition_fate(char *out, size_t size, PGconn *conn, const cb__claim *c,
			    cb_error *err);

/*
 * Claim one open partition (batch_partition_claim) for @p owner_id under a
 * lease; @p job_names (n) and @p job_execution_id (> 0) narrow the search,
 * @p runnable (cb__work_runnable's JSON) says which steps, as defined where,
 * the caller can run. Partitions of executions whose manager is a dead
 * process of this host are not claimed. out->found = 0: nothing to claim.
 * The claim also sets the session's idle_in_transaction_session_timeout to
 * 4 leases (batch_partition_claim): the backstop for a frozen claimant whose
 * session no path ended.
 */
int cb__repo_partition_claim(cb__claim *out, PGconn *conn, const char *owner_id, const char *worker,
			     double lease_seconds, const char *const *job_names, size_t njobs,
			     long long job_execution_id, const char *runnable, cb_error *err);

/* Worker process @p owner_id leaves: `show` no longer counts it as seen. */
int cb__repo_partition_worker_gone(PGconn *conn, const char *owner_id, cb_error *err);

/*
 * End claimed partition @p c with @p status (COMPLETED, FAILED, STOPPED, or
 * STARTING to hand it back) and release its lock, only while it still
 * carries the claim's token: *ours = 0 when another claimant has it now.
 */
int cb__repo_partition_finish(int *ours, PGconn *conn, const cb__claim *c, const char *owner_id,
			      const char *status, const char *exit_code, const char *exit_message,
			      long long rollbacks, cb_error *err);

/* What the partitions of a manager step are doing. */
typedef struct cb__partition_poll {
	cb_status job_status;
	long long total, completed, failed, stopped, running, open;
	long long read, written, filtered, commits, read_skips, write_skips, process_skips,
		rollbacks, duplicates;
	char first_failure[512];
} cb__partition_poll;

/* Poll them (and, while the job stops, stop those nobody runs). */
int cb__repo_partitions_poll(cb__partition_poll *out, PGconn *conn, long long manager_id,
			     cb_error *err);

/* End the manager with its partitions' summed counts; open partitions end FAILED. */
int cb__repo_partitions_end(PGconn *conn, long long manager_id, cb_status status,
			    const char *exit_code, const char *exit_message, cb_error *err);

/* ---- run logs (repository/run_log.c) ---- */

/* The largest job execution id now (0 if none), read before a launch: the
 * launched process's execution has a larger one. @return 0 or CB_EDB. */
int cb__repo_run_log_mark(long long *out, PGconn *conn, cb_error *err);

/* The execution that process @p pid of this host recorded with an id above
 * @p after (cb__repo_run_log_mark's before its launch), 0 if none yet.
 * @return 0 or CB_EDB. */
int cb__repo_run_log_find(long long *out, PGconn *conn, int pid, long long after, cb_error *err);

/* Store @p text (valid UTF-8: the kept tail) as the log of execution
 * @p job_execution_id, replacing the one stored; @p dropped bytes were cut
 * from its head, @p total printed in all. An execution gone is no error.
 * @return 0 or CB_EDB. */
int cb__repo_run_log_save(PGconn *conn, long long job_execution_id, const char *text,
			  long long dropped, long long total, cb_error *err);

/* ---- time zones from the server's tz data (repository/zone.c) ---- */

/*
 * A cb__zone_lookup_fn (core/zone.h) for one zone, answered by the
 * repository's server (batch_tz_segment, sql/004), so that every scheduler
 * node uses the same rules whatever its host's tzdata. It keeps the last few
 * segments it was given: the scheduler asks about every second, and a segment
 * lasts months, so nearly every lookup is answered without a query.
 *
 * Lifecycle: cb__pg_zone_new, cb__pg_zone_set_conn (the connection is
 * borrowed, not in a transaction block it would abort, not in pipeline mode;
 * set it again after a reconnect), then cb__pg_zone_lookup as often as
 * needed, from one thread at a time; cb__pg_zone_free.
 */
typedef struct cb__pg_zone cb__pg_zone;

/* Longest zone name (batch_schedule.time_zone is varchar(100)). */
#define CB__ZONE_NAME_MAX 100

/* A new lookup for zone @p zone (copied; not checked here: see
 * cb__pg_zone_check). @return 0, CB_EINVAL (NULL, empty or too long),
 * CB_ENOMEM. */
int cb__pg_zone_new(cb__pg_zone **out, const char *zone, cb_error *err);

/* Borrow @p conn for the queries from now on. A different connection may
 * reach a server with other tz data: the kept segments are dropped. */
void cb__pg_zone_set_conn(cb__pg_zone *z, PGconn *conn);

/* The lookup: @p ctx is the cb__pg_zone. @return 0, CB_EINVAL (no
 * connection, or a zone the server does not know), CB_EDB / CB_ERETRY. */
int cb__pg_zone_lookup(void *ctx, long long instant, cb__zone_segment *out, cb_error *err);

/* How many queries @p z has sent (the segments it could not answer from
 * what it keeps). */
long long cb__pg_zone_queries(const cb__pg_zone *z);

/* NULL-safe. */
void cb__pg_zone_free(cb__pg_zone *z);

/*
 * Whether the server knows zone @p zone: a name of its time zone database
 * (pg_timezone_names), matched case-insensitively as PostgreSQL does. What
 * else AT TIME ZONE would take is refused on purpose: abbreviations (CEST
 * means +02:00 all year, no daylight saving time), POSIX specifications (in
 * "UTC+3" the sign means west of Greenwich, the opposite of ISO 8601) and
 * zone files the server can load but does not list, such as the leap-second
 * "right/" ones, whose offsets are some 27 seconds off.
 * @return 0, CB_EINVAL ("time zone 'Mars/Base' is not known to the
 * repository's server"), CB_EDB / CB_ERETRY.
 */
int cb__pg_zone_check(PGconn *conn, const char *zone, cb_error *err);

#endif
