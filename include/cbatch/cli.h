/**
 * @file cli.h
 * The registry of jobs and the command-line entry point.
 *
 * A program that runs jobs builds a registry, adds its jobs (and optionally
 * commands of its own), and hands argc/argv to cb_cli_main:
 *
 *     int main(int argc, char **argv)
 *     {
 *             cb_registry *reg = NULL;
 *             cb_error err = CB_ERROR_INIT;
 *             int rc;
 *
 *             if (cb_registry_new(&reg, &err) < 0 || my_jobs_register(reg, &err) < 0) {
 *                     fprintf(stderr, "cbatch: %s\n", err.message);
 *                     cb_registry_free(reg);
 *                     return CB_EXIT_USAGE;
 *             }
 *             rc = cb_cli_main(reg, argc, argv);
 *             cb_registry_free(reg);
 *             return rc;
 *     }
 *
 * where my_jobs_register creates each job with cb_registry_new_job: the
 * registry owns a job from its creation, so a job half set up when a later
 * call fails is freed with the registry.
 *
 * Exit codes: CB_EXIT_* below. The library never calls exit(); cb_cli_main
 * returns the code for main to return.
 */
#ifndef CBATCH_CLI_H
#define CBATCH_CLI_H

#include <libpq-fe.h>
#include "error.h"
#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** Process exit codes of the CLI. */
enum {
	CB_EXIT_COMPLETED = 0, /**< the job completed (or an admin command succeeded) */
	CB_EXIT_FAILED = 1,    /**< the job failed, or a command failed (database error...) */
	CB_EXIT_USAGE = 2,     /**< usage error or invalid input; nothing was written */
	CB_EXIT_COMPLETE = 3,  /**< the job instance is already complete (or abandoned) */
	CB_EXIT_RUNNING = 4,   /**< skipped: the instance is already running / lock held */
	CB_EXIT_STOPPED = 5,   /**< the job stopped on request; restartable */
	/**
	 * The database could not be reached: no connection at start, or a run
	 * that lost it for longer than its outage budget (its execution FAILED
	 * with exit code DATABASE_LOST, restartable). Within the budget a run
	 * rides through an outage and exits as it ends.
	 */
	CB_EXIT_UNREACHABLE = 6
};

typedef struct cb_registry cb_registry;

/** Create an empty registry. @p out receives a new object. */
int cb_registry_new(cb_registry **out, cb_error *err);

/** Free the registry and the jobs it owns. NULL-safe. */
void cb_registry_free(cb_registry *reg);

/**
 * Create an empty job named @p name, owned by @p reg from the start: it is
 * registered at once and freed by cb_registry_free, also when setting it up
 * fails later. Add its steps and settings through @p out (borrowed).
 * @p out receives the job, or NULL on failure.
 * @return 0, CB_EINVAL (NULL argument, invalid name, a job of that name is
 *         already registered), CB_ENOMEM.
 */
int cb_registry_new_job(cb_job **out, cb_registry *reg, const char *name, cb_error *err);

/**
 * Add a job made with cb_job_new. The registry steals @p job, also when this fails.
 * @return 0, CB_EINVAL (a job of that name is already registered), CB_ENOMEM.
 */
int cb_registry_add(cb_registry *reg, cb_job *job, cb_error *err);

/** Find a job by name (borrowed), or NULL. */
const cb_job *cb_registry_find(const cb_registry *reg, const char *name);

/** Number of jobs, and the i-th (borrowed), in registration order. */
size_t cb_registry_count(const cb_registry *reg);
const cb_job *cb_registry_at(const cb_registry *reg, size_t i);

/**
 * A command of the program's own (e.g. `example-setup`). @p conn is an open
 * connection (borrowed) made from --db / CBATCH_DB / PG* variables; argv[0]
 * is the command name. With the global option --json, argv[1] is "--json":
 * the command should then print one JSON document on stdout (errors too).
 * Return a CB_EXIT_* code.
 */
typedef int (*cb_command_fn)(void *ctx, PGconn *conn, int argc, char **argv);

/**
 * Register an extra command. @p name and @p summary are copied; @p ctx is
 * borrowed. @return 0, CB_EINVAL (name taken), CB_ENOMEM.
 */
int cb_registry_add_command(cb_registry *reg, const char *name, const char *summary,
			    cb_command_fn fn, void *ctx, cb_error *err);

/**
 * Run the command line. Commands: schema init, jobs, run, restart, stop,
 * abandon, executions, show, and the registered extra commands; `--help`
 * anywhere. @return a CB_EXIT_* code. Output goes to stdout, errors (one
 * line each) to stderr.
 */
int cb_cli_main(cb_registry *reg, int argc, char **argv);

/**
 * Open a connection as the CLI does: @p conninfo if not NULL, else the
 * CBATCH_DB environment variable, else libpq's own PG* variables.
 * @p out receives a new connection (PQfinish it). @return 0 or CB_EDB.
 */
int cb_cli_connect(PGconn **out, const char *conninfo, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
