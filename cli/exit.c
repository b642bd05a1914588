/*
 * Errors and exit codes: the one place where a CB_E* code becomes the
 * process's exit code (DESIGN: only the CLI decides exit codes), and where a
 * failure is reported, on stderr and, with --json, as a document on stdout.
 */
#include "cli_internal.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

/* What each exit code means, as `--help` and the manual page say it. */
const struct cb__cli_exit_code cb__cli_exit_codes[] = {
	{ CB_EXIT_COMPLETED, "completed" },
	{ CB_EXIT_FAILED, "failed" },
	{ CB_EXIT_USAGE, "usage or invalid input" },
	{ CB_EXIT_COMPLETE, "instance already complete (or abandoned)" },
	{ CB_EXIT_RUNNING, "skipped (already running / lock held)" },
	{ CB_EXIT_STOPPED, "stopped (restartable)" },
	{ CB_EXIT_UNREACHABLE,
	  "database unreachable (no connection, or lost beyond the outage budget; restartable)" },
	{ 0, NULL },
};

/* The exit code for a negative CB_E* code. @p by_id: the command names an
 * execution id, so "not found" is the operator's input error. */
int cb__cli_exit_for(int code, int by_id)
{
	switch (code) {
	case 0:
		return CB_EXIT_COMPLETED;
	case CB_EINVAL:
		return CB_EXIT_USAGE;
	case CB_ECOMPLETE:
	case CB_ENORESTART:
		return CB_EXIT_COMPLETE;
	case CB_ERUNNING:
		return CB_EXIT_RUNNING;
	case CB_ECANCELED:
		return CB_EXIT_STOPPED;
	case CB_ENOTFOUND:
		return by_id ? CB_EXIT_USAGE : CB_EXIT_FAILED;
	default:
		return CB_EXIT_FAILED;
	}
}

/*
 * Report c->err and return @p exitcode: one line on stderr and, with --json,
 * an {"error": {...}} document on stdout so that a script always gets JSON.
 */
int cb__cli_fail(struct cli *c, int exitcode)
{
	json_t *doc, *e;

	if (c->err.code == 0)
		c->err.code = CB_ERROR;
	/* A failure to reach the database is not the job's: its own code. */
	if (exitcode == CB_EXIT_FAILED && strncmp(c->err.sqlstate, "08", 2) == 0)
		exitcode = CB_EXIT_UNREACHABLE;
	if (c->err.message[0] == '\0')
		snprintf(c->err.message, sizeof(c->err.message), "failed (%s)",
			 cb_strcode(c->err.code));
	/* A message may quote a connection string (libpq does): no passwords. */
	cb__redact_secrets_inplace(c->err.message, sizeof(c->err.message));
	{
		char shown[CB_ERROR_MESSAGE_MAX * 4];

		cb__log(c->prog, CB__LOG_ERROR, CB__EV_COMMAND_FAILED,
			CB__LOG_WITH(.code = cb_strcode(c->err.code), .exit_code = exitcode,
				     .has_exit_code = 1),
			"%s", cb__cli_term(shown, sizeof(shown), c->err.message));
	}
	if (!c->json)
		return exitcode;
	e = json_object();
	doc = json_object();
	if (e && doc && json_object_set_new(doc, "error", e) == 0) {
		json_object_set_new(e, "code", json_string(cb_strcode(c->err.code)));
		json_object_set_new(e, "message", cb__cli_json_text(c->err.message));
		if (c->err.sqlstate[0])
			json_object_set_new(e, "sqlstate", cb__cli_json_text(c->err.sqlstate));
		json_object_set_new(e, "exit_code", json_integer(exitcode));
		cb__cli_json_print(stdout, doc);
	} else {
		json_decref(e);
	}
	json_decref(doc);
	return exitcode;
}

/* Report a usage error (exit 2). The message is one line; it ends with a hint. */
int cb__cli_usage_error(struct cli *c, const char *fmt, ...)
{
	char msg[CB_ERROR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cb_error_set(&c->err, CB_EINVAL, "%s", msg);
	return cb__cli_fail(c, CB_EXIT_USAGE);
}

int cb__cli_out_of_memory(struct cli *c)
{
	cb_error_set(&c->err, CB_ENOMEM, "out of memory");
	return cb__cli_fail(c, CB_EXIT_FAILED);
}

/* "a, b, c" of the registered jobs, cut with "..." to fit @p size. */
void cb__cli_job_list(char *buf, size_t size, const cb_registry *reg)
{
	size_t i, n = cb_registry_count(reg), len = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *name = cb_job_name(cb_registry_at(reg, i));
		size_t need = strlen(name) + (i ? 2 : 0);

		if (len + need + 5 >= size) {
			snprintf(buf + len, size - len, "%s...", i ? ", " : "");
			return;
		}
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", name);
	}
}

int cb__cli_unknown_job(struct cli *c, const char *name)
{
	char known[300];

	if (cb_registry_count(c->reg) == 0)
		return cb__cli_usage_error(
			c,
			"unknown job '%.100s' (no jobs are registered in this "
			"program; run jobs with the program that registers them)",
			name);
	cb__cli_job_list(known, sizeof(known), c->reg);
	return cb__cli_usage_error(c, "unknown job '%.100s' (known: %s)", name, known);
}
