/* `run` and `restart`: launch a job and report its result as an exit code. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch/cli.h"
#include "cbatch/params.h"
#include "cbatch/lock.h"
#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "cli_internal.h"
#include "log.h"
#include "clock.h"
#include "pgkit.h"
#include "reserved.h"
#include "text.h"

/* ---- run and restart ----------------------------------------------------- */

static int result_exit(const cb_job_result *r)
{
	switch (r->status) {
	case CB_STATUS_COMPLETED:
		return CB_EXIT_COMPLETED;
	case CB_STATUS_STOPPED:
		return CB_EXIT_STOPPED;
	default:
		if (strcmp(r->exit_code, CB_EXIT_CODE_DATABASE_LOST) == 0)
			return CB_EXIT_UNREACHABLE;
		return r->invalid_input ? CB_EXIT_USAGE : CB_EXIT_FAILED;
	}
}

/* Print the outcome of an execution that ran, and return its exit code. */
static int report_result(struct cli *c, const cb_job *job, const cb_job_result *r, double seconds)
{
	const char *job_name = cb_job_name(job);
	const char *status = cb_status_name(r->status);
	char shown[CB_ERROR_MESSAGE_MAX * 4];

	if (c->json) {
		json_t *doc = json_object();

		if (!doc)
			return cb__cli_out_of_memory(c);
		json_object_set_new(doc, "job_execution_id", json_integer(r->job_execution_id));
		json_object_set_new(doc, "job_instance_id", json_integer(r->job_instance_id));
		json_object_set_new(doc, "job_name", cb__cli_json_text(job_name));
		json_object_set_new(doc, "status", cb__cli_json_text(status));
		json_object_set_new(doc, "exit_code", cb__cli_json_text(r->exit_code));
		json_object_set_new(doc, "exit_message", cb__cli_json_text(r->exit_message));
		json_object_set_new(doc, "restarted", json_boolean(r->restarted));
		json_object_set_new(doc, "dead_owner_recovered", json_boolean(r->dead_owner));
		json_object_set_new(doc, "lock_name", cb__cli_json_text(r->lock_name));
		json_object_set_new(doc, "fencing_token", json_integer(r->fencing_token));
		/* Milliseconds are what a wall clock of a run means. */
		json_object_set_new(doc, "elapsed_seconds",
				    json_real((double)(long long)(seconds * 1000 + 0.5) / 1000));
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (cb__log_get_format() == CB__LOG_JSON) {
		/* A run a daemon started prints into the daemon's log: one event. */
		cb__log_to(stdout, c->prog,
			   r->status == CB_STATUS_COMPLETED ? CB__LOG_INFO : CB__LOG_WARN,
			   CB__EV_JOB_ENDED,
			   CB__LOG_WITH(.job = job_name, .execution = r->job_execution_id,
					.exit_code = result_exit(r), .has_exit_code = 1),
			   "job %s execution %lld (instance %lld): %s in %.2fs%s%s%s", job_name,
			   r->job_execution_id, r->job_instance_id, status, seconds,
			   r->restarted ? " (restart)" : "", r->exit_message[0] ? ": " : "",
			   r->exit_message);
	} else {
		printf("job %s execution %lld (instance %lld): %s", job_name, r->job_execution_id,
		       r->job_instance_id, status);
		if (r->exit_code[0] && strcmp(r->exit_code, status) != 0)
			printf(" [%s]", r->exit_code);
		printf(" in %.2fs", seconds);
		if (r->restarted)
			printf(" (restart)");
		if (r->exit_message[0])
			printf(" \xe2\x80\x94 %s",
			       cb__cli_term(shown, sizeof(shown), r->exit_message));
		putchar('\n');
	}
	if (r->status == CB_STATUS_FAILED) {
		char hint[80] = "";

		/* What to do next: the way out, with the id to type. */
		if (cb_job_restartable(job))
			snprintf(hint, sizeof(hint),
				 " (it goes on from its last commit: `restart %lld`)",
				 r->job_execution_id);
		cb__log(c->prog, CB__LOG_ERROR, CB__EV_JOB_FAILED,
			CB__LOG_WITH(.job = job_name, .execution = r->job_execution_id,
				     .exit_code = result_exit(r), .has_exit_code = 1),
			"job %s execution %lld failed: %s%s", job_name, r->job_execution_id,
			cb__cli_term(shown, sizeof(shown), r->exit_message), hint);
	}
	return result_exit(r);
}

/* Launch or restart (@p restart_id > 0) @p job and report. */
static int execute(struct cli *c, PGconn *conn, const cb_job *job, const cb_params *params,
		   int next, long long restart_id, double lease)
{
	cb_launch_options opts = CB_LAUNCH_OPTIONS_INIT;
	cb_job_result res;
	cb__cli_progress progress;
	double t0;
	int rc;

	memset(&res, 0, sizeof(res));
	opts.next = next;
	opts.handle_signals = 1;
	opts.lease_seconds = lease;
	cb__cli_progress_init(&progress, stderr, cb_job_name(job));
	if (isatty(STDERR_FILENO)) {
		opts.progress = cb__cli_progress_update;
		opts.progress_ctx = &progress;
	}
	t0 = cb__clock_mono();
	if (restart_id > 0)
		rc = cb_job_restart(&res, conn, job, restart_id, &opts, &c->err);
	else
		rc = cb_job_launch(&res, conn, job, params, &opts, &c->err);
	cb__cli_progress_clear(&progress);
	if (rc < 0)
		return cb__cli_fail(c, cb__cli_exit_for(rc, restart_id > 0));
	return report_result(c, job, &res, cb__clock_mono() - t0);
}

/* --lease SECONDS: 0 when absent. */
static int parse_lease(struct cli *c, const char *v, double *out)
{
	char *end;

	*out = 0;
	if (!v)
		return 0;
	*out = strtod(v, &end);
	if (end == v || *end || !(*out >= 0.1 && *out <= 86400.0))
		return cb__cli_usage_error(
			c,
			"%s: --lease '%.40s' must be a number of seconds from 0.1 "
			"to 86400",
			c->argv[0], v);
	return 0;
}

/* The words JOB [PARAM ...] of `run` and `check` (@p cmd, its @p usage):
 * the job and every parameter, checked before anything connects or writes.
 * @return 0, or the exit code having said why (*params then to be freed). */
static int job_and_params(struct cli *c, const char *cmd, const char *usage, const char **pos,
			  size_t npos, const cb_job **job, cb_params **params)
{
	int rc;

	if (npos == 0)
		return cb__cli_usage_error(c, "%s: missing JOB (usage: %s %s %s)", cmd, c->prog,
					   cmd, usage);
	if (!(*job = cb_registry_find(c->reg, pos[0])))
		return cb__cli_unknown_job(c, pos[0]);
	if (cb_params_new(params, &c->err) < 0)
		return cb__cli_fail(c, CB_EXIT_FAILED);
	for (size_t i = 1; i < npos; i++)
		if ((rc = cb_params_parse_arg(*params, pos[i], &c->err)) < 0)
			return cb__cli_fail(c, rc == CB_EINVAL ? CB_EXIT_USAGE : CB_EXIT_FAILED);
	return 0;
}

int cb__cli_cmd_run(struct cli *c)
{
	static const char *const flags[] = { "--next", "--lease=", NULL };
	const char *values[2] = { NULL, NULL };
	double lease = 0;
	const char **pos;
	size_t npos;
	const cb_job *job;
	cb_params *params = NULL;
	PGconn *conn = NULL;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	if ((rc = cb__cli_split_args(c, pos, &npos, flags, values)) != 0 ||
	    (rc = parse_lease(c, values[1], &lease)) != 0)
		goto done;
	if ((rc = job_and_params(c, "run", "JOB [PARAM ...] [--next]", pos, npos, &job, &params)) !=
	    0)
		goto done;
	if (cb__reserved_check(params, &c->err) < 0) {
		rc = cb__cli_fail(c, CB_EXIT_USAGE);
		goto done;
	}
	/* Started during a switchover, it waits for a primary as long as it
	 * would ride through one later. */
	c->primary_wait = cb__outage_budget(params, lease);
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		goto done;
	rc = execute(c, conn, job, params, values[0] != NULL, 0, lease);
done:
	cb__pg_release(conn);
	cb_params_free(params);
	free(pos);
	return rc;
}

int cb__cli_cmd_restart(struct cli *c)
{
	static const char *const flags[] = { "--lease=", NULL };
	const char *values[1] = { NULL };
	char name[CB_PARAM_NAME_MAX + 28];
	const cb_job *job;
	PGconn *conn = NULL;
	long long id;
	double lease = 0;
	int rc;

	if ((rc = cb__cli_one_id_with(c, &id, flags, values)) != 0 ||
	    (rc = parse_lease(c, values[0], &lease)) != 0)
		return rc;
	/* Its parameters (outage.budget among them) are in the repository. */
	c->primary_wait = cb__outage_budget(NULL, lease);
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	if ((rc = cb_repo_execution_job_name(name, sizeof(name), conn, id, &c->err)) < 0) {
		rc = cb__cli_fail(c, cb__cli_exit_for(rc, 1));
		goto done;
	}
	job = cb_registry_find(c->reg, name);
	if (!job) {
		char known[300];

		cb__cli_job_list(known, sizeof(known), c->reg);
		rc = cb__cli_usage_error(
			c,
			"execution %lld is of job '%s', which is not registered in "
			"this program (known: %s)",
			id, name, known[0] ? known : "none");
		goto done;
	}
	rc = execute(c, conn, job, NULL, 0, id, lease);
done:
	cb__pg_release(conn);
	return rc;
}

/* ---- check --------------------------------------------------------------- */

struct findings {
	struct cli *c;
	json_t *problems, *notes; /* --json */
};

static void found(void *ctx, const char *step, int problem, const char *message)
{
	struct findings *f = ctx;
	char shown[CB_ERROR_MESSAGE_MAX * 4];

	if (f->c->json) {
		json_t *o = json_object();

		if (!o)
			return;
		json_object_set_new(o, "step", step ? cb__cli_json_text(step) : json_null());
		json_object_set_new(o, "message", cb__cli_json_text(message));
		json_array_append_new(problem ? f->problems : f->notes, o);
		return;
	}
	cb__cli_term(shown, sizeof(shown), message);
	if (problem)
		printf("problem: %s\n", shown);
	else
		printf("note: step '%s' %s\n", step ? step : "?", shown);
}

int cb__cli_cmd_check(struct cli *c)
{
	static const char *const flags[] = { NULL };
	struct findings f = { c, NULL, NULL };
	const char **pos;
	size_t npos;
	const cb_job *job;
	cb_params *params = NULL;
	PGconn *conn = NULL;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	if ((rc = cb__cli_split_args(c, pos, &npos, flags, NULL)) != 0)
		goto done;
	if ((rc = job_and_params(c, "check", "JOB [PARAM ...]", pos, npos, &job, &params)) != 0)
		goto done;
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		goto done;
	if (c->json && (!(f.problems = json_array()) || !(f.notes = json_array()))) {
		rc = cb__cli_out_of_memory(c);
		goto done;
	}
	rc = cb_job_check(conn, job, params, found, &f, &c->err);
	if (rc < 0 && rc != CB_EINVAL) {
		rc = cb__cli_fail(c, cb__cli_exit_for(rc, 0));
		goto done;
	}
	if (c->json) {
		json_t *doc = json_object();

		if (!doc) {
			rc = cb__cli_out_of_memory(c);
			goto done;
		}
		json_object_set_new(doc, "job_name", cb__cli_json_text(cb_job_name(job)));
		json_object_set_new(doc, "ok", json_boolean(rc == 0));
		json_object_set(doc, "problems", f.problems);
		json_object_set(doc, "notes", f.notes);
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (rc == 0) {
		printf("job %s: OK\n", cb_job_name(job));
	}
	if (rc < 0) {
		/* One line on stderr too, as every refusal: the first problem. */
		char shown[CB_ERROR_MESSAGE_MAX * 4];

		fprintf(stderr, "%s: check: %s\n", c->prog,
			cb__cli_term(shown, sizeof(shown), c->err.message));
		rc = CB_EXIT_USAGE;
	}
done:
	json_decref(f.problems);
	json_decref(f.notes);
	PQfinish(conn);
	cb_params_free(params);
	free(pos);
	return rc;
}
