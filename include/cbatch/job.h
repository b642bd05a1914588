/**
 * @file job.h
 * Defining jobs and launching them (steps: step.h).
 *
 * A cb_job is a named sequence of steps. It is a definition only: it holds no
 * connection and no run state, so one definition can be launched many times.
 *
 * Lifecycle: cb_registry_new_job (the registry owns the job from its
 * creation; cli.h) or cb_job_new, then cb_job_add_step for each step in
 * order and optional setters, then cb_job_launch / cb_job_restart any number
 * of times, then cb_registry_free or cb_job_free.
 */
#ifndef CBATCH_JOB_H
#define CBATCH_JOB_H

#include <stddef.h>
#include <libpq-fe.h>
#include "error.h"
#include "item.h"
#include "params.h"
#include "repository.h"
#include "step.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** A job definition: a named sequence of steps. Opaque; see the lifecycle above. */
typedef struct cb_job cb_job;

/**
 * Computes the parameters of the next instance for `--next`.
 * @param out   receives a new cb_params (the engine frees it)
 * @param last  the identifying+non-identifying parameters of the job's newest
 *              instance's first execution, or NULL when the job never ran;
 *              its `run.id` (identifying long) is the largest identifying
 *              long run.id over all the job's instances (added if the newest
 *              instance has none), so that one more is never a used instance
 * @param given the parameters given on this launch (borrowed)
 */
typedef int (*cb_incrementer_fn)(void *ctx, cb_params **out, const cb_params *last,
				 const cb_params *given, cb_error *err);

/**
 * Create a job definition. @p name: 1..100 characters of [A-Za-z0-9_.-].
 * @p out receives a new object. @return 0, CB_EINVAL, CB_ENOMEM.
 */
int cb_job_new(cb_job **out, const char *name, cb_error *err);

/** Free a job definition. NULL-safe. */
void cb_job_free(cb_job *job);

/** The job's name (borrowed). */
const char *cb_job_name(const cb_job *job);

/** Append a step. @return 0, CB_EINVAL (bad or duplicate name, missing callback), CB_ENOMEM. */
int cb_job_add_step(cb_job *job, const cb_step_def *def, cb_error *err);

/** Declare whether a FAILED or STOPPED instance may be restarted (default: yes). */
void cb_job_set_restartable(cb_job *job, int restartable);

/** Non-zero when a FAILED or STOPPED instance of @p job may be restarted. */
int cb_job_restartable(const cb_job *job);

/**
 * Which launches of a job keep each other out: the scope of its execution
 * lock (lock.h). The rule: the lock key is the job plus its target range,
 * the rows its reader can read and its writers can change. Two executions
 * whose ranges overlap must never hold different keys, or both read the same
 * unprocessed rows and both apply them.
 */
typedef enum cb_lock_scope {
	/**
	 * The default: the job and its identifying parameters
	 * (`job:name=value,...`). Two instances run side by side; one instance
	 * never runs twice at once. Right only when the reader reads just what
	 * the identifying parameters name (a day, a file, a seller).
	 */
	CB_LOCK_SCOPE_INSTANCE = 0,
	/**
	 * The job alone: no two of its executions ever run at once, anywhere,
	 * whatever their parameters (another `run.id`, another fire time, a
	 * restart of an old instance): the later launch is skipped (exit 4,
	 * audited SKIPPED_HELD). Required when the reader does not depend on the
	 * identifying parameters ("every unprocessed row"): then the job's
	 * target range is the whole job. Partition locks are unaffected (they
	 * are per partition of one execution).
	 */
	CB_LOCK_SCOPE_JOB = 1,
	/**
	 * A template set with cb_job_set_lock names the range from some of the
	 * parameters (`{job}:{targetDate}`). Reported by cb_job_lock_scope; a
	 * template that names no parameter (`{job}`, `ledger`) is job scope.
	 */
	CB_LOCK_SCOPE_CUSTOM = 2
} cb_lock_scope;

/**
 * Set the job's lock scope: CB_LOCK_SCOPE_INSTANCE (the default) or
 * CB_LOCK_SCOPE_JOB (the lock name is then the job's name). Replaces a
 * template set with cb_job_set_lock; the lease and lock-at-least times stay.
 * @return 0, CB_EINVAL (CB_LOCK_SCOPE_CUSTOM: use cb_job_set_lock with a
 *         template; or an unknown value), CB_ENOMEM.
 */
int cb_job_set_lock_scope(cb_job *job, cb_lock_scope scope, cb_error *err);

/** The job's lock scope, as the CLI's `jobs` and `show` report it. */
cb_lock_scope cb_job_lock_scope(const cb_job *job);

/**
 * The job's lock name template (borrowed): NULL for instance scope (the
 * default name), "{job}" after cb_job_set_lock_scope(CB_LOCK_SCOPE_JOB), else
 * the template given to cb_job_set_lock.
 */
const char *cb_job_lock_template(const cb_job *job);

/** "instance", "job" or "custom" (the CLI's and JSON's word), "unknown" otherwise. */
const char *cb_lock_scope_name(cb_lock_scope scope);

/**
 * Add a listener (copied; its ctx is borrowed). Listeners are called in the
 * order added. @return 0, CB_EINVAL (unknown version), CB_ENOMEM.
 */
int cb_job_add_listener(cb_job *job, const cb_listener *listener, cb_error *err);

/** Flow targets that end the job instead of naming a step. */
#define CB_FLOW_END  "@end"  /**< end the job COMPLETED */
#define CB_FLOW_FAIL "@fail" /**< end the job FAILED */
#define CB_FLOW_STOP "@stop" /**< end the job STOPPED (restartable at the next step) */

/**
 * Add a conditional transition: when step @p from ends with an exit status
 * matching @p pattern (`*` any run of characters, `?` one character), go to
 * step @p to, or end the job (CB_FLOW_END, CB_FLOW_FAIL, CB_FLOW_STOP).
 * Transitions of one step are tried most specific first (patterns without
 * wildcards, then longer patterns). A step without transitions goes to the
 * next step on COMPLETED and fails the job otherwise; a step with transitions
 * but no match fails the job. The job's status is that of the end reached:
 * a job that handled a FAILED step and ended with CB_FLOW_END is COMPLETED.
 * @return 0, CB_EINVAL (unknown step, bad pattern), CB_ENOMEM.
 */
int cb_job_add_transition(cb_job *job, const char *from, const char *pattern, const char *to,
			  cb_error *err);

/**
 * Declare a parameter the job accepts. Once any is declared, launches are
 * validated before an instance is made: every required parameter must be
 * present with its type, and an identifying parameter that was not declared
 * is refused (non-identifying ones, and run.id, are always accepted).
 * The parameter is identifying unless given with a leading '-'; it is
 * cb_job_declare_param with CB_PARAM_REQUIRED when @p required is non-zero.
 * @return 0, CB_EINVAL (bad name), CB_ENOMEM.
 */
int cb_job_add_param(cb_job *job, const char *name, cb_param_type type, int required,
		     cb_error *err);

/** Flag of cb_job_declare_param: every launch must give the parameter. */
#define CB_PARAM_REQUIRED 0x1u
/**
 * Flag of cb_job_declare_param: the parameter never names the job instance
 * (Spring Batch's `identifying=false`, as the job's own default): a tuning
 * knob such as a sleep, a page size or a log level.
 */
#define CB_PARAM_NON_IDENTIFYING 0x2u

/**
 * Declare a parameter the job accepts, with flags: cb_job_add_param, plus
 * CB_PARAM_NON_IDENTIFYING. A parameter declared non-identifying is
 * non-identifying wherever cbatch keys an instance of the job (a launch,
 * `--next`, the console's launch and its check for a complete or running
 * instance, a schedule's firings and "fire now", the default lock name),
 * whether or not it was given with a leading '-': the declaration wins.
 * So two launches that differ only in it are one instance, and each
 * execution stores it with identifying false (`show` prints it `-name=...`).
 * A restart of an execution (cb_job_restart) keeps the parameters as that
 * execution stored them: an instance made before the declaration keeps its
 * key and stays restartable by its execution id.
 * @param flags CB_PARAM_REQUIRED and CB_PARAM_NON_IDENTIFYING, or-ed; 0 for
 *        an optional identifying parameter
 * @return 0, CB_EINVAL (bad name or type, an unknown flag, or `run.id`
 *         declared non-identifying: `--next` numbers instances by it),
 *         CB_ENOMEM.
 */
int cb_job_declare_param(cb_job *job, const char *name, cb_param_type type, unsigned int flags,
			 cb_error *err);

/**
 * 0 when @p job declared parameter @p name with CB_PARAM_NON_IDENTIFYING, 1
 * otherwise (declared identifying, or not declared: then the launch's own
 * marking decides).
 */
int cb_job_param_identifying(const cb_job *job, const char *name);

/**
 * The parameters as @p job declares them: @p out receives a new copy of
 * @p given (borrowed) in which every parameter the job declared
 * non-identifying is non-identifying; the others keep their marking. The
 * launcher runs what this returns, so what it stores and what it keys agree.
 * @p job NULL (a job this program does not have) declares nothing: a copy.
 * @p given NULL is an empty set.
 * @return 0, CB_ENOMEM.
 */
int cb_job_params_resolve(cb_params **out, const cb_job *job, const cb_params *given,
			  cb_error *err);

/**
 * The job key of the instance that a launch of @p job with @p params names:
 * cb_params_job_key over @p params as the job declares them
 * (cb_job_params_resolve), into @p out (CB_JOB_KEY_LEN + 1 bytes). Every
 * place that keys an instance of a job (the launcher, the console, the
 * scheduler, "fire now") computes it here. @p job may be NULL, as for
 * cb_job_params_resolve.
 * @return 0, CB_ENOMEM.
 */
int cb_job_key(char *out, const cb_job *job, const cb_params *params, cb_error *err);

/**
 * Check @p params against the job's declared parameters, and the parameters
 * cbatch itself reads (chunk.size 1..1000000, skip.limit 0..1000000000,
 * partition.count 1..CB_MAX_PARTITIONS, partition.threads 0..256, each a long;
 * any other name under chunk., partition. or skip. is refused as a typo).
 * The launcher calls it before anything is written.
 * @return 0 or CB_EINVAL with a message naming the parameter and its range.
 */
int cb_job_validate_params(const cb_job *job, const cb_params *params, cb_error *err);

/**
 * Checks a launch's parameter values that a type alone cannot (a time zone the
 * database knows, a file that exists, a range). Called with the launch's
 * connection (borrowed; not in a transaction) after the declared parameters
 * were checked, before the lock is taken or anything is written.
 * @return 0, or a negative code with a message in @p err naming the parameter:
 *         CB_EINVAL (the launch fails as invalid input, exit code 2), or
 *         another code (e.g. CB_EDB) that the launch reports as it is.
 */
typedef int (*cb_param_validator_fn)(void *ctx, PGconn *conn, const cb_params *params,
				     cb_error *err);

/**
 * Set the job's parameter validator (NULL: none); @p ctx is borrowed and
 * passed back to it. Replaces an earlier one.
 */
void cb_job_set_validator(cb_job *job, cb_param_validator_fn fn, void *ctx);

/**
 * Told one finding of cb_job_check: @p problem non-zero for a problem (the
 * launch would refuse), 0 for a note on what was not checked and why.
 * @p step is the step's name, or NULL for the parameters. Both strings are
 * borrowed for the call.
 */
typedef void (*cb_check_report_fn)(void *ctx, const char *step, int problem, const char *message);

/**
 * The preflight: check @p job's configuration with @p params against the
 * database on @p conn (borrowed; not in a transaction), writing nothing.
 * The parameters are validated (cb_job_validate_params and the job's
 * validator); then each chunk step's `build` is called with a check's step
 * context (cb_step_context_checking) and the `check` hooks of its reader and
 * writers (item.h) run inside a READ ONLY transaction that is rolled back:
 * for the built-in readers and writers, that the table exists, its columns
 * exist, their types suit the values and modes, that an ON CONFLICT key has
 * its unique index, that an assignment loses nothing (unless declared). The
 * parts are freed without being opened. Every launch runs the same check
 * (after the parameters, before the lock): a problem refuses it as
 * CB_EINVAL, nothing written. Not checked, and said so through @p report: a
 * tasklet step, a build that fails in a check (one that needs an earlier
 * step's job context, say; its run reports it as before), and parts
 * without a `check` hook.
 * @param report called for each problem and note (NULL: none); @p ctx is
 *        passed back to it
 * @return 0 when nothing is wrong; CB_EINVAL with the first problem in
 *         @p err (each one is reported); another negative code when the
 *         database failed (CB_EDB).
 */
int cb_job_check(PGconn *conn, const cb_job *job, const cb_params *params,
		 cb_check_report_fn report, void *ctx, cb_error *err);

/** Number of parameters declared with cb_job_add_param or cb_job_declare_param. */
size_t cb_job_param_count(const cb_job *job);

/**
 * The @p i-th declared parameter, in declaration order. Any out-pointer may be
 * NULL; @p name is borrowed from the job. @return 0, or CB_ENOTFOUND for a bad
 * index.
 */
int cb_job_param_at(const cb_job *job, size_t i, const char **name, cb_param_type *type,
		    int *required);

/** Replace the incrementer used by `--next` (default: run.id, see cb_incrementer_run_id). */
void cb_job_set_incrementer(cb_job *job, cb_incrementer_fn fn, void *ctx);

/**
 * The default incrementer: copies @p given and sets the identifying long
 * parameter `run.id` to one more than @p last's run.id, which is the largest
 * run.id among all the job's instances (1 when no instance has one): `--next`
 * always makes a new instance.
 */
int cb_incrementer_run_id(void *ctx, cb_params **out, const cb_params *last, const cb_params *given,
			  cb_error *err);

/** Optional one-line description shown by `cbatch jobs`. Copied. */
int cb_job_set_description(cb_job *job, const char *text, cb_error *err);
/** The description, or "". */
const char *cb_job_description(const cb_job *job);

/** Progress callback: called after every committed chunk. */
typedef void (*cb_progress_fn)(void *ctx, const char *step_name, long long read_count,
			       long long write_count, double elapsed_seconds);

#define CB_LAUNCH_OPTIONS_VERSION 1

/** Options of one launch. Initialise with CB_LAUNCH_OPTIONS_INIT. */
typedef struct cb_launch_options {
	unsigned int version;    /**< CB_LAUNCH_OPTIONS_VERSION */
	int next;                /**< non-zero: apply the incrementer (a new instance on purpose) */
	cb_progress_fn progress; /**< may be NULL */
	void *progress_ctx;
	/** Non-zero: install SIGINT/SIGTERM handlers that stop after the current chunk. */
	int handle_signals;
	/** Lease of the execution lock for this launch, seconds; 0: the job's (see lock.h). */
	double lease_seconds;
} cb_launch_options;

/** Launch options with every member zero but the version. */
#define CB_LAUNCH_OPTIONS_INIT                                                                     \
	{                                                                                          \
		.version = CB_LAUNCH_OPTIONS_VERSION                                               \
	}

/**
 * The exit code of an execution that FAILED because its database stayed
 * unreachable beyond the run's outage budget (the reserved parameter
 * outage.budget, by default the lease); within the budget a run rides
 * through an outage by itself. A schedule's recovery policy restarts such
 * an execution, as one whose process died.
 */
#define CB_EXIT_CODE_DATABASE_LOST "DATABASE_LOST"

/** The outcome of an execution that ran. */
typedef struct cb_job_result {
	long long job_instance_id;
	long long job_execution_id;
	cb_status status;   /**< COMPLETED, FAILED or STOPPED */
	char exit_code[32]; /**< the status name, or CB_EXIT_CODE_DATABASE_LOST */
	char exit_message[CB_ERROR_MESSAGE_MAX];
	int restarted;           /**< non-zero: this execution restarted a failed/stopped one */
	int dead_owner;          /**< non-zero: the restarted execution's owner had died */
	long long fencing_token; /**< the token this execution held its lock with */
	char lock_name[401];     /**< the lock it ran under */
	/**
	 * Non-zero: FAILED because the failing step found its input invalid
	 * (CB_EINVAL) before its first chunk, e.g. a file writer's file exists
	 * or a reader's file is missing: nothing was written. The CLI exits 2.
	 */
	int invalid_input;
} cb_job_result;

/**
 * Launch @p job with @p params on @p conn (borrowed; must not be in a
 * transaction). Creates the instance if needed, refuses completed, abandoned
 * and running instances, restarts a FAILED/STOPPED one, then runs the steps.
 * The instance is the one @p params name as the job declares them
 * (cb_job_key): a parameter it declared non-identifying names none.
 *
 * The launch first takes the job's execution lock (lock.h); a lock held by
 * someone else is CB_ERUNNING (a skip, recorded in batch_lock_audit). A
 * newest execution that still claims to run but whose owner lost its lease
 * is marked FAILED ("owner lost") and restarted.
 *
 * @return 0 when an execution ran to an end state (see out->status, which may
 *         be FAILED or STOPPED), or an error that prevented the run:
 *         CB_EINVAL (bad parameters; nothing written), CB_ECOMPLETE,
 *         CB_ERUNNING (instance running or lock held), CB_ENORESTART, CB_EDB.
 */
int cb_job_launch(cb_job_result *out, PGconn *conn, const cb_job *job, const cb_params *params,
		  const cb_launch_options *opts, cb_error *err);

/**
 * Restart the FAILED or STOPPED execution @p job_execution_id of @p job (its
 * instance's newest execution): a new execution of the same instance, with
 * completed steps skipped and the failed step resumed from its last committed
 * context. It runs with the parameters that execution stored, marked as they
 * were stored. Same return codes as cb_job_launch, plus CB_ENOTFOUND.
 */
int cb_job_restart(cb_job_result *out, PGconn *conn, const cb_job *job, long long job_execution_id,
		   const cb_launch_options *opts, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
