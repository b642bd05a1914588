/* The job engine's internals: job definitions and one running execution. */
#ifndef CB_FRAMEWORK_ENGINE_H
#define CB_FRAMEWORK_ENGINE_H

#include <signal.h>
#include <stdatomic.h>
#include "cbatch/job.h"
#include "cbatch/partition.h"

/* Longest name of a partitioned step: 100 - strlen(":partition4095"). */
#define CB__PARTITIONED_NAME_MAX 86

struct cb_job {
	char *name;
	char *description;
	int restartable;
	cb_incrementer_fn incrementer;
	void *incrementer_ctx;
	cb_step_def *steps; /* names are owned copies */
	size_t nsteps;
	char *lock_template;  /* NULL: job name + identifying parameters */
	double lease_seconds; /* lock at most for */
	double lock_at_least_seconds;
	cb_listener *listeners;
	size_t nlisteners;
	struct cb__transition *transitions;
	size_t ntransitions;
	struct cb__param_spec *param_specs;
	size_t nparam_specs;
	cb_param_validator_fn validator;
	void *validator_ctx;
};

struct cb__transition {
	char *from, *pattern, *to;
};

struct cb__param_spec {
	char *name;
	cb_param_type type;
	int required;
	int identifying; /* 0: declared CB_PARAM_NON_IDENTIFYING */
};

/* Call listener member @p fn with the given arguments on each of the job's listeners. */
#define CB__NOTIFY(job, fn, ...)                                                                   \
	do {                                                                                       \
		for (size_t cb__i = 0; cb__i < (job)->nlisteners; cb__i++)                         \
			if ((job)->listeners[cb__i].fn)                                            \
				(job)->listeners[cb__i].fn((job)->listeners[cb__i].ctx,            \
							   __VA_ARGS__);                           \
	} while (0)

/*
 * The one version check of plug-in and option structs: @p version must be
 * 1..@p current (a struct written for an older version is fine; the caller
 * reads only the members its version has). CB_EINVAL naming @p what otherwise.
 */
int cb__version_check(unsigned int version, unsigned int current, const char *what, cb_error *err);

/* The bytes of a cb_writer / cb_reader / cb_processor of @p version (1..current). */
size_t cb__writer_size(unsigned int version);
size_t cb__reader_size(unsigned int version);
size_t cb__processor_size(unsigned int version);

/* The connections step @p def's chunks run on for this execution: the
 * chunk.connections parameter, else the definition's, else 1; 1 for a
 * partitioned step. @return 0, or CB_EINVAL (a bad parameter) with *out 1. */
int cb__step_connections(int *out, const cb_step_def *def, const cb_params *params, cb_error *err);

/* Can every part of @p parts run on two connections (overlap_safe)? 0, or
 * CB_EINVAL naming the first that cannot. */
int cb__parts_overlap_check(const cb_chunk_parts *parts, cb_error *err);

/* Does @p status match the transition pattern (`*`, `?`)? */
int cb__pattern_match(const char *pattern, const char *status);

struct cb__heartbeat;

/* One execution being run by this process. */
typedef struct cb__run {
	PGconn *conn;
	const cb_job *job;
	const cb_launch_options *opts;
	const cb_params *params;
	long long job_instance_id;
	long long job_execution_id;
	json_t *job_context; /* owned */
	double started;      /* monotonic seconds */
	const char *lock_name;
	long long fencing_token;
	double lease_seconds;
	struct cb__heartbeat *heartbeat;
	int fenced;          /* a step failed because this execution lost its lock */
	int invalid_input;   /* the last failed step found invalid input before any chunk */
	atomic_int *quit;    /* set (a partition's worker is leaving): stop after this chunk */
	double outage_since; /* cb__clock_mono() when the database went away and stayed away, or 0 */
	int database_lost;   /* a step failed because the database stayed away past the budget */
} cb__run;

/* Does the run have to stop after its current chunk (signal, or its worker leaves)? */
int cb__run_quitting(const cb__run *run);

/* Fail the step when the heartbeat lost the lock (CB_EFENCED), else 0. */
int cb__run_check_lock(const cb__run *run, cb_error *err);

struct cb__checkpoint;
struct cb__lock_grant;

/* Take @p lock_name for a run of @p job (framework/lock.c): acquire, or take
 * over an expired lease; a held lock is a skip (CB_ERUNNING, already audited,
 * its message naming the holder and the job's lock scope). */
int cb__lock_take(struct cb__lock_grant *g, PGconn *conn, const cb_job *job, const char *lock_name,
		  double lease, cb_error *err);

/* Set the checkpoint's fence from the run: lock name, fencing token, lease. */
void cb__run_fence(const cb__run *run, struct cb__checkpoint *c);

/* What a step ended with. */
typedef struct cb__step_outcome {
	cb_status status;    /* COMPLETED, FAILED or STOPPED */
	long long rollbacks; /* not yet recorded in the repository */
	cb_error error;      /* why, when FAILED */
	int before_chunks;   /* FAILED before its first chunk (parameters, build, open) */
} cb__step_outcome;

/* Run one step execution. @p sc is filled by the flow (ids, params, job
 * context); the step may set sc->exit_status. @p context: the step's. */
int cb__step_chunk_run(cb__run *run, const cb_step_def *def, struct cb_step_context *sc,
		       json_t *context, cb__step_outcome *out);
int cb__step_tasklet_run(cb__run *run, const cb_step_def *def, struct cb_step_context *sc,
			 json_t *context, cb__step_outcome *out);

/*
 * The preflight (framework/preflight.c): build each chunk step's parts as
 * its run would, run their `check` hooks on @p conn in a READ ONLY
 * transaction that is rolled back, and free them unopened. Nothing is
 * written. @return 0, CB_EINVAL naming the step and the problem, or another
 * negative code (the database failed).
 */
int cb__job_preflight(PGconn *conn, const cb_job *job, const cb_params *params, cb_error *err);

/* Run the job's flow for an execution the repository has just created. */
int cb__flow_run(cb__run *run, cb_job_result *out, cb_error *err);

/* The execution this process created last (launcher.c), 0 when none since
 * the last reset (@p reset: read it and reset it): what a scheduler's runner
 * tells its node its firing ran. */
long long cb__launched_last(int reset);

/* Signals: SIGINT/SIGTERM ask for a stop after the current chunk; a second
 * SIGINT/SIGTERM gets the default action (the open chunk rolls back). */
void cb__signals_install(void);
void cb__signals_restore(void);
/* In a child forked without exec (a scheduler's runner): the parent's
 * handlers and wake pipe are forgotten, so the child's stops are its own. */
void cb__signals_after_fork(void);
int cb__stop_signalled(void);
/* A descriptor that becomes readable once a stop was signalled (never
 * drained: it stays readable), or -1 when the handlers are not installed. */
int cb__signals_wake_fd(void);

/* Sleep @p seconds on the engine's clock, cut short by a stop signal (every
 * sleeping thread wakes, not only the one the signal hit). */
void cb__signals_nap(double seconds);

/* Outages (framework/outage.c). How long a lost database is waited out:
 * the reserved parameter outage.budget (seconds), else the lease. */
double cb__run_outage_budget(const cb__run *run);
/* The end of the run's outage budget: one budget per outage, counted from
 * when the database went away (run->outage_since), else from now. */
double cb__run_outage_deadline(const cb__run *run);
/* Reconnect @p conn (PQreset) with backoff *delay (0.2 s doubling to 2 s)
 * until @p deadline (cb__clock_mono() seconds). @return 1 connected, 0 the
 * deadline passed, -1 the run is stopping (@p run may be NULL). */
int cb__outage_reach(PGconn *conn, double deadline, double *delay, const cb__run *run);
/* The session of @p conn was lost, or refuses writes (25006 on a session
 * libpq still holds open): a new session, as cb__outage_reach, the second
 * and later tries of one outage (*tries, from 0) after a backoff pause and
 * only before @p deadline, so that a server that takes connections but no
 * writes is not asked again at once. Same returns as cb__outage_reach. */
int cb__outage_again(PGconn *conn, double deadline, double *delay, int *tries, const cb__run *run);
/* After a reconnect of @p conn: the run's lock still carries its fencing
 * token (checked and extended under the row lock; else CB_EFENCED, "taken
 * over or released"), and records this session as the owner's, so that a
 * takeover ends this one and not the old. No lock: 0. */
int cb__run_prove_lock(const cb__run *run, PGconn *conn, cb_error *err);
/*
 * The database went away under @p run (err says how): reconnect @p conn
 * within the outage budget, prove the lock (cb__run_prove_lock), then call
 * @p resume (reread the committed state, prepare again); a loss during any
 * of it is tried again. @p step and @p where name the work for messages
 * ("chunk 5"; the flow prefixes errors with the step). @return 0 resumed, 1 a stop was asked meanwhile, or the error:
 * CB_EFENCED, the resume's own, or CB_EDB (08006) past the budget.
 */
int cb__run_ride_through(cb__run *run, PGconn *conn, const char *step, const char *where,
			 int (*resume)(void *ctx, cb_error *err), void *ctx, cb_error *err);
/* Sleep the next backoff step (at most until @p deadline), cut short by a stop. */
void cb__outage_pause(const cb__run *run, double deadline, double *delay);

/* A partitioned step: its definition has a partition callback. */
int cb__step_partitioned(const cb_step_def *def);

/*
 * Start partitioned step @p def: with a fresh @p context (the manager's), call
 * the partitioner; with one from an earlier execution of the instance, take
 * the partitions that did not complete. Creates the manager step execution
 * and the partitions in one transaction (*manager_id). Errors as
 * cb__repo_step_create; a partitioner's failure is its own code, with
 * *manager_id 0.
 */
int cb__partition_begin(long long *manager_id, cb__run *run, const cb_step_def *def,
			json_t *context, cb_error *err);

/* Run the manager: local worker threads, wait for every partition, progress. */
int cb__step_partitioned_run(cb__run *run, const cb_step_def *def, struct cb_step_context *sc,
			     json_t *context, cb__step_outcome *out);

#endif
