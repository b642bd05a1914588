/*
 * The command-line interface shared by `cbatch` and every job program:
 * global options, the built-in commands, exit codes and errors.
 *
 * Reading order: cb_cli_main (global options, dispatch), then one cmd_* per
 * command. Output helpers are in cli_format.c, the progress line in
 * cli_progress.c. Only the public API is used, as any job program could.
 */
#include "cbatch/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch/params.h"
#include "cbatch/lock.h"
#include "cbatch/repository.h"
#include "cli_internal.h"
#include "text.h"

#ifndef CBATCH_VERSION
#define CBATCH_VERSION "0.1.0"
#endif

#define DEFAULT_LIMIT 20

struct cli {
	cb_registry *reg;
	const char *prog; /* basename of argv[0], for usage lines */
	const char *db;   /* --db (a private copy: argv's is scrubbed), or NULL */
	int json;         /* --json */
	int argc;         /* the command's arguments, global options removed */
	char **argv;      /* argv[0] is the command name; NULL-terminated */
	cb_error err;
};

struct builtin {
	const char *name;
	const char *synopsis; /* arguments after the name */
	const char *summary;
	const char *help; /* further lines of `COMMAND --help`, or NULL */
	int (*fn)(struct cli *c);
};

static int cmd_schema(struct cli *c);
static int cmd_jobs(struct cli *c);
static int cmd_run(struct cli *c);
static int cmd_restart(struct cli *c);
static int cmd_stop(struct cli *c);
static int cmd_abandon(struct cli *c);
static int cmd_executions(struct cli *c);
static int cmd_show(struct cli *c);
static int cmd_help(struct cli *c);
static int cmd_locks(struct cli *c);
static int cmd_unlock(struct cli *c);
static int cmd_metrics(struct cli *c);

/* ---- the table of built-in commands -------------------------------------- */

static const struct builtin builtins[] = {
	{ "schema", "init|check",
	  "create or upgrade (init) or verify (check) the repository schema",
	  "init is safe to run any number of times, also concurrently: it applies only\n"
	  "the migrations the database lacks and prints the version before and after.\n",
	  cmd_schema },
	{ "jobs", "", "list the jobs registered in this program", NULL, cmd_jobs },
	{ "run", "JOB [PARAM ...] [--next]", "launch a job (or restart its failed instance)",
	  "Creates the job instance named by JOB and its identifying parameters (or\n"
	  "restarts it if it failed or stopped), takes its lock and runs the steps.\n"
	  "Parameters are all checked before anything is written. SIGINT/SIGTERM stop\n"
	  "the job after its current chunk commits (exit 5; restartable).\n\n"
	  "A held lock is a skip (exit 4), recorded in batch_lock_audit. An execution\n"
	  "of the instance whose owner died (lease expired) is marked FAILED and\n"
	  "restarted.\n\n"
	  "Options:\n"
	  "  --next           apply the job's incrementer (default: the job's largest\n"
	  "                   run.id + 1) to start a new instance on purpose\n"
	  "  --lease SECONDS  lease of the execution lock for this run (default: the\n"
	  "                   job's, 60s); a heartbeat extends it while the job runs\n",
	  cmd_run },
	{ "restart", "EXECUTION_ID [--lease SECONDS]", "restart a failed or stopped execution",
	  "Starts a new execution of the same instance with the same parameters:\n"
	  "completed steps are skipped and the failed step resumes from its last\n"
	  "committed chunk. The job must be registered in this program. An execution\n"
	  "whose owner died (its lock lease expired) can be restarted too.\n",
	  cmd_restart },
	{ "stop", "EXECUTION_ID", "ask a running execution to stop after its current chunk",
	  "STARTING or STARTED becomes STOPPING; the running process ends as STOPPED\n"
	  "(restartable) after its current chunk commits, or before its first step.\n"
	  "An execution whose owner was lost (lease expired) ends STOPPED at once.\n",
	  cmd_stop },
	{ "abandon", "EXECUTION_ID", "mark a failed or stopped execution as never to be restarted",
	  "ABANDONED is final: the instance cannot be restarted; run it again with\n"
	  "other identifying parameters (or --next). Only the newest execution of an\n"
	  "instance can be abandoned: FAILED, STOPPED, or running with its owner lost\n"
	  "(lease expired; its running steps end FAILED). A live one is refused.\n",
	  cmd_abandon },
	{ "executions", "[JOB] [--limit N]", "list executions, newest first",
	  "Options:\n"
	  "  --limit N   show at most N executions (default 20)\n",
	  cmd_executions },
	{ "show", "EXECUTION_ID", "show an execution, its parameters and its steps", NULL,
	  cmd_show },
	{ "locks", "", "list execution locks with owner, fencing token and lease left", NULL,
	  cmd_locks },
	{ "unlock", "LOCK_NAME --force [--reason TEXT]",
	  "release a lock by hand (recorded with who and why)",
	  "The holder's database session is terminated (its open chunk rolls back;\n"
	  "this needs the same role, superuser or pg_signal_backend), and if it still\n"
	  "runs it is fenced off and fails. The release is recorded in\n"
	  "batch_lock_audit as FORCE_UNLOCKED.\n",
	  cmd_unlock },
	{ "metrics", "", "print repository metrics in Prometheus text format",
	  "With --json: {\"metrics\": [{\"name\", \"help\", \"type\", \"labels\", \"value\"}]},\n"
	  "one element per series.\n",
	  cmd_metrics },
	{ "help", "[COMMAND]", "show help for a command", NULL, cmd_help },
};
#define NBUILTINS (sizeof(builtins) / sizeof(builtins[0]))

/* ---- errors and exit codes ----------------------------------------------- */

/* The exit code for a negative CB_E* code. @p by_id: the command names an
 * execution id, so "not found" is the operator's input error. */
static int exit_for(int code, int by_id)
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
static int fail(struct cli *c, int exitcode)
{
	json_t *doc, *e;

	if (c->err.code == 0)
		c->err.code = CB_ERROR;
	if (c->err.message[0] == '\0')
		snprintf(c->err.message, sizeof(c->err.message), "failed (%s)",
			 cb_strcode(c->err.code));
	/* A message may quote a connection string (libpq does): no passwords. */
	cb__redact_secrets_inplace(c->err.message, sizeof(c->err.message));
	{
		char shown[CB_ERROR_MESSAGE_MAX * 4];

		fprintf(stderr, "cbatch: %s\n", cb__cli_term(shown, sizeof(shown), c->err.message));
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
static int usage_error(struct cli *c, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static int usage_error(struct cli *c, const char *fmt, ...)
{
	char msg[CB_ERROR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cb_error_set(&c->err, CB_EINVAL, "%s", msg);
	return fail(c, CB_EXIT_USAGE);
}

static int out_of_memory(struct cli *c)
{
	cb_error_set(&c->err, CB_ENOMEM, "out of memory");
	return fail(c, CB_EXIT_FAILED);
}

/* "a, b, c" of the registered jobs, cut with "..." to fit @p size. */
static void job_list(char *buf, size_t size, const cb_registry *reg)
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

static int unknown_job(struct cli *c, const char *name)
{
	char known[300];

	if (cb_registry_count(c->reg) == 0)
		return usage_error(c,
				   "unknown job '%.100s' (no jobs are registered in this "
				   "program; run jobs with the program that registers them)",
				   name);
	job_list(known, sizeof(known), c->reg);
	return usage_error(c, "unknown job '%.100s' (known: %s)", name, known);
}

/* ---- arguments ----------------------------------------------------------- */

/* A positive decimal integer, as execution ids are. @return 0 or -1. */
static int parse_positive(long long *out, const char *s)
{
	long long v = 0;
	const char *p = s;

	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (LLONG_MAX - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (v <= 0)
		return -1;
	*out = v;
	return 0;
}

/* An argument that reaches the repository must be valid UTF-8 (text columns
 * refuse anything else): invalid input, exit 2. @return 0 or the exit code. */
static int text_arg(struct cli *c, const char *what, const char *arg)
{
	char shown[400];

	if (!arg || cb__utf8_valid(arg))
		return 0;
	return usage_error(c, "%s: %s '%.100s' is not valid UTF-8", c->argv[0], what,
			   cb__cli_term(shown, sizeof(shown), arg));
}

/* Parse an execution id argument; a usage error names it. */
static int parse_id(struct cli *c, long long *out, const char *arg)
{
	if (parse_positive(out, arg) == 0)
		return 0;
	return usage_error(c, "%s: invalid execution id '%.100s' (expected a positive integer)",
			   c->argv[0], arg);
}

/*
 * Split the command's arguments into positionals (into @p pos, which holds
 * c->argc entries) and the options in @p flags (NULL-terminated names such as
 * "--next"; a name ending in '=' takes a value: "--limit=" accepts both
 * "--limit N" and "--limit=N"). Values go to @p values[i] (flags get "1").
 * `--` ends the options. @return 0, or the exit code of a reported usage error.
 */
static int split_args(struct cli *c, const char **pos, size_t *npos, const char *const *flags,
		      const char **values)
{
	int i, done = 0;

	*npos = 0;
	for (i = 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		size_t f;
		int matched = 0;

		if (done || strncmp(a, "--", 2) != 0) {
			/* Includes "-name=value": a non-identifying parameter. */
			pos[(*npos)++] = a;
			continue;
		}
		if (a[2] == '\0') {
			done = 1;
			continue;
		}
		for (f = 0; flags && flags[f] && !matched; f++) {
			const char *fl = flags[f];
			size_t fn = strlen(fl);

			if (fl[fn - 1] != '=') {
				if (strcmp(a, fl) == 0) {
					values[f] = "1";
					matched = 1;
				}
			} else if (strncmp(a, fl, fn - 1) == 0 && a[fn - 1] == '\0') {
				if (i + 1 >= c->argc)
					return usage_error(c, "%s: option '%s' needs a value",
							   c->argv[0], a);
				values[f] = c->argv[++i];
				matched = 1;
			} else if (strncmp(a, fl, fn) == 0) {
				values[f] = a + fn;
				matched = 1;
			}
		}
		if (!matched)
			return usage_error(c, "%s: unknown option '%.100s' (see '%s %s --help')",
					   c->argv[0], a, c->prog, c->argv[0]);
	}
	return 0;
}

/* ---- database ------------------------------------------------------------ */

/* Show server warnings (not the NOTICE chatter of IF NOT EXISTS). */
static void notice_receiver(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	if (sev && msg && strcmp(sev, "WARNING") == 0)
		fprintf(stderr, "cbatch: server warning: %s\n", msg);
}

int cb_cli_connect(PGconn **out, const char *conninfo, cb_error *err)
{
	const char *keys[] = { "dbname", "fallback_application_name", NULL };
	const char *vals[] = { NULL, "cbatch", NULL };
	PGconn *conn;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_cli_connect: out is NULL");
	*out = NULL;
	if (!conninfo)
		conninfo = getenv("CBATCH_DB");
	/* Empty values are ignored by libpq, leaving its PG* variables and defaults;
	 * expand_dbname lets conninfo be a "key=value" string, a URI or a bare name. */
	vals[0] = conninfo ? conninfo : "";
	conn = PQconnectdbParams(keys, vals, 1);
	if (!conn)
		return cb_error_set(err, CB_ENOMEM, "out of memory connecting to the database");
	if (PQstatus(conn) != CONNECTION_OK) {
		char msg[CB_ERROR_MESSAGE_MAX];

		/* libpq quotes a malformed URI whole, password included. */
		cb__redact_secrets(msg, sizeof(msg), PQerrorMessage(conn));
		cb_error_set(err, CB_EDB, "cannot connect to the database: %s", msg);
		PQfinish(conn);
		return CB_EDB;
	}
	PQsetNoticeReceiver(conn, notice_receiver, NULL);
	*out = conn;
	return 0;
}

/* Connect (and check the schema when @p check). @return 0, or the exit code
 * of a reported error. */
static int open_db(struct cli *c, PGconn **conn, int check)
{
	int rc = cb_cli_connect(conn, c->db, &c->err);

	if (rc < 0)
		return fail(c, CB_EXIT_FAILED);
	if (check && cb_repo_schema_check(*conn, &c->err) < 0) {
		PQfinish(*conn);
		*conn = NULL;
		return fail(c, CB_EXIT_FAILED);
	}
	return 0;
}

/* ---- help ---------------------------------------------------------------- */

static const char global_options_help[] =
	"Global options (before or after the command):\n"
	"  --db CONNINFO  PostgreSQL connection string or URI; default $CBATCH_DB,\n"
	"                 else libpq's PG* variables (PGHOST, PGDATABASE, ...)\n"
	"  --json         print one JSON document on stdout (errors too)\n"
	"  -h, --help     show help and exit\n"
	"  --version      show the version and exit\n";

static const char exit_codes_help[] =
	"Exit codes: 0 completed, 1 failed, 2 usage or invalid input, 3 instance\n"
	"already complete (or abandoned), 4 skipped (already running / lock held),\n"
	"5 stopped (restartable).\n";

static const char params_help[] =
	"Parameters: [-]NAME[:TYPE]=VALUE\n"
	"  TYPE   string (the default), long, double or date (YYYY-MM-DD)\n"
	"  -      a leading '-' makes the parameter non-identifying: it is stored\n"
	"         with the execution but is not part of the job instance's identity\n"
	"  NAME   1..100 characters of [A-Za-z0-9_.-], starting with a letter or '_'\n"
	"  The identifying parameters name the job instance: a completed instance\n"
	"  does not run again, a failed or stopped one is restarted.\n"
	"  Examples: targetDate:date=2026-06-30  run.id:long=7  -chunk.size:long=500\n";

static const struct builtin *find_builtin(const char *name)
{
	size_t i;

	for (i = 0; i < NBUILTINS; i++)
		if (strcmp(builtins[i].name, name) == 0)
			return &builtins[i];
	return NULL;
}

int cb__cli_is_builtin(const char *name)
{
	return name && find_builtin(name) != NULL;
}

static void print_general_help(const struct cli *c, FILE *f)
{
	size_t i, n;
	char known[300];

	fprintf(f, "usage: %s [--db CONNINFO] [--json] COMMAND [ARGS...]\n\n", c->prog);
	fputs("Run and operate cbatch jobs; the job repository lives in PostgreSQL.\n\n"
	      "Commands:\n",
	      f);
	for (i = 0; i < NBUILTINS; i++) {
		char left[64];

		snprintf(left, sizeof(left), "%s %s", builtins[i].name, builtins[i].synopsis);
		fprintf(f, "  %-30s %s\n", left, builtins[i].summary);
	}
	n = cb__registry_command_count(c->reg);
	if (n > 0) {
		fputs("\nCommands of this program:\n", f);
		for (i = 0; i < n; i++) {
			const char *name, *summary;

			cb__registry_command_at(c->reg, i, &name, &summary, NULL, NULL);
			fprintf(f, "  %-30s %s\n", name, summary);
		}
	}
	if (cb_registry_count(c->reg) > 0) {
		job_list(known, sizeof(known), c->reg);
		fprintf(f, "\nJobs: %s\n", known);
	}
	fprintf(f, "\n%s\n%s\nRun '%s COMMAND --help' for a command's usage.\n",
		global_options_help, exit_codes_help, c->prog);
}

/* "targetDate:date (required), tz:string" of the job's declared parameters. */
static void param_list(char *buf, size_t size, const cb_job *job)
{
	size_t i, n = cb_job_param_count(job), len = 0;

	buf[0] = '\0';
	for (i = 0; i < n && len + 1 < size; i++) {
		const char *name;
		cb_param_type type;
		int required, w;

		cb_job_param_at(job, i, &name, &type, &required);
		w = snprintf(buf + len, size - len, "%s%s:%s%s", i ? ", " : "", name,
			     cb_param_type_name(type), required ? " (required)" : "");
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

/* `run JOB --help`: the job's declared parameters. */
static void print_job_params(const struct cli *c, FILE *f)
{
	const cb_job *job = c->argc > 1 ? cb_registry_find(c->reg, c->argv[1]) : NULL;
	size_t i, n = job ? cb_job_param_count(job) : 0;

	if (!job)
		return;
	fprintf(f, "\nJob '%s'", cb_job_name(job));
	if (cb_job_description(job)[0])
		fprintf(f, ": %s", cb_job_description(job));
	if (n == 0) {
		fputs("\n  declares no parameters (any are accepted)\n", f);
		return;
	}
	fputs("\n  declared parameters (other identifying ones are refused):\n", f);
	for (i = 0; i < n; i++) {
		const char *name;
		cb_param_type type;
		int required;

		cb_job_param_at(job, i, &name, &type, &required);
		fprintf(f, "    %-24s %-7s %s\n", name, cb_param_type_name(type),
			required ? "required" : "optional");
	}
}

static void print_builtin_help(const struct cli *c, const struct builtin *b, FILE *f)
{
	fprintf(f, "usage: %s %s %s\n\n%s.\n", c->prog, b->name, b->synopsis, b->summary);
	if (b->help)
		fprintf(f, "\n%s", b->help);
	if (strcmp(b->name, "run") == 0) {
		print_job_params(c, f);
		fprintf(f, "\n%s", params_help);
	}
	fprintf(f, "\n%s\n%s", global_options_help, exit_codes_help);
}

/* `COMMAND --help`: @return 0, or 2 for an unknown command. */
static int command_help(struct cli *c, const char *name)
{
	const struct builtin *b = find_builtin(name);
	long k;

	if (b) {
		print_builtin_help(c, b, stdout);
		return 0;
	}
	k = cb__registry_find_command(c->reg, name);
	if (k >= 0) {
		const char *summary;

		cb__registry_command_at(c->reg, (size_t)k, NULL, &summary, NULL, NULL);
		printf("usage: %s %s [ARGS...]\n\n%s\n\n"
		       "A command of this program: it gets a database connection made from\n"
		       "--db, $CBATCH_DB or libpq's PG* variables, and its own arguments.\n\n%s",
		       c->prog, name, summary[0] ? summary : "(no description)",
		       global_options_help);
		return 0;
	}
	return usage_error(c, "unknown command '%.100s' (see '%s --help')", name, c->prog);
}

static int cmd_help(struct cli *c)
{
	if (c->argc > 2)
		return usage_error(c, "help: too many arguments");
	if (c->argc == 2)
		return command_help(c, c->argv[1]);
	print_general_help(c, stdout);
	return 0;
}

/* ---- schema -------------------------------------------------------------- */

static int cmd_schema(struct cli *c)
{
	PGconn *conn = NULL;
	int from = 0, to = 0, rc;
	const char *sub;

	if (c->argc < 2)
		return usage_error(c, "schema: missing subcommand (init or check)");
	if (c->argc > 2)
		return usage_error(c, "schema: too many arguments");
	sub = c->argv[1];
	if (strcmp(sub, "init") != 0 && strcmp(sub, "check") != 0)
		return usage_error(c, "schema: unknown subcommand '%.100s' (init or check)", sub);
	if ((rc = open_db(c, &conn, 0)) != 0)
		return rc;
	if (strcmp(sub, "init") == 0) {
		if (cb_repo_schema_init(conn, &from, &to, &c->err) < 0) {
			rc = fail(c, CB_EXIT_FAILED);
			goto done;
		}
	} else {
		if (cb_repo_schema_check(conn, &c->err) < 0) {
			rc = fail(c, CB_EXIT_FAILED);
			goto done;
		}
		from = to = cb_repo_schema_target();
	}
	if (c->json) {
		json_t *doc = json_pack("{s:i,s:i,s:i}", "schema_version", to, "previous_version",
					from, "library_version", cb_repo_schema_target());

		if (!doc) {
			rc = out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (strcmp(sub, "init") == 0) {
		printf("schema at version %d (was %d)\n", to, from);
	} else {
		printf("schema at version %d, as this program expects\n", to);
	}
done:
	PQfinish(conn);
	return rc;
}

/* ---- jobs ---------------------------------------------------------------- */

static int cmd_jobs(struct cli *c)
{
	size_t i, n = cb_registry_count(c->reg);
	cb__cli_table *t = NULL;
	static const char *const headers[] = { "JOB", "DESCRIPTION", "PARAMETERS" };

	if (c->argc > 1)
		return usage_error(c, "jobs: unexpected argument '%.100s'", c->argv[1]);
	if (c->json) {
		json_t *doc = json_object(), *arr = json_array();

		if (!doc || !arr || json_object_set_new(doc, "jobs", arr) < 0) {
			json_decref(arr);
			json_decref(doc);
			return out_of_memory(c);
		}
		for (i = 0; i < n; i++) {
			const cb_job *job = cb_registry_at(c->reg, i);
			json_t *ps = json_array();

			for (size_t k = 0; ps && k < cb_job_param_count(job); k++) {
				const char *name;
				cb_param_type type;
				int required;

				cb_job_param_at(job, k, &name, &type, &required);
				json_array_append_new(ps, json_pack("{s:o,s:s,s:b}", "name",
								    cb__cli_json_text(name), "type",
								    cb_param_type_name(type),
								    "required", required));
			}
			json_array_append_new(
				arr, json_pack("{s:o,s:o,s:o*}", "name",
					       cb__cli_json_text(cb_job_name(job)), "description",
					       cb__cli_json_text(cb_job_description(job)),
					       "parameters", ps));
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
		return 0;
	}
	if (n == 0) {
		printf("no jobs are registered in this program\n");
		return 0;
	}
	if (cb__cli_table_new(&t, 3, headers, "lll") < 0)
		return out_of_memory(c);
	for (i = 0; i < n; i++) {
		const cb_job *job = cb_registry_at(c->reg, i);
		char params[1024];
		const char *row[3] = { cb_job_name(job), cb_job_description(job), params };

		param_list(params, sizeof(params), job);
		if (!params[0])
			row[2] = "-";

		if (cb__cli_table_add(t, row) < 0) {
			cb__cli_table_free(t);
			return out_of_memory(c);
		}
	}
	cb__cli_table_print(t, stdout, "");
	cb__cli_table_free(t);
	return 0;
}

/* ---- run and restart ----------------------------------------------------- */

static int result_exit(const cb_job_result *r)
{
	switch (r->status) {
	case CB_STATUS_COMPLETED:
		return CB_EXIT_COMPLETED;
	case CB_STATUS_STOPPED:
		return CB_EXIT_STOPPED;
	default:
		return r->invalid_input ? CB_EXIT_USAGE : CB_EXIT_FAILED;
	}
}

/* Print the outcome of an execution that ran, and return its exit code. */
static int report_result(struct cli *c, const char *job_name, const cb_job_result *r,
			 double seconds)
{
	const char *status = cb_status_name(r->status);
	char shown[CB_ERROR_MESSAGE_MAX * 4];

	if (c->json) {
		json_t *doc = json_object();

		if (!doc)
			return out_of_memory(c);
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
	if (r->status == CB_STATUS_FAILED)
		fprintf(stderr, "cbatch: job %s execution %lld failed: %s\n", job_name,
			r->job_execution_id, cb__cli_term(shown, sizeof(shown), r->exit_message));
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
	t0 = cb__cli_now();
	if (restart_id > 0)
		rc = cb_job_restart(&res, conn, job, restart_id, &opts, &c->err);
	else
		rc = cb_job_launch(&res, conn, job, params, &opts, &c->err);
	cb__cli_progress_clear(&progress);
	if (rc < 0)
		return fail(c, exit_for(rc, restart_id > 0));
	return report_result(c, cb_job_name(job), &res, cb__cli_now() - t0);
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
		return usage_error(c, "%s: --lease '%.40s' must be a number of seconds from 0.1 "
				   "to 86400", c->argv[0], v);
	return 0;
}

static int cmd_run(struct cli *c)
{
	static const char *const flags[] = { "--next", "--lease=", NULL };
	const char *values[2] = { NULL, NULL };
	double lease = 0;
	const char **pos;
	size_t npos, i;
	const cb_job *job;
	cb_params *params = NULL;
	PGconn *conn = NULL;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return out_of_memory(c);
	if ((rc = split_args(c, pos, &npos, flags, values)) != 0 ||
	    (rc = parse_lease(c, values[1], &lease)) != 0)
		goto done;
	if (npos == 0) {
		rc = usage_error(c, "run: missing JOB (usage: %s run JOB [PARAM ...] [--next])",
				 c->prog);
		goto done;
	}
	job = cb_registry_find(c->reg, pos[0]);
	if (!job) {
		rc = unknown_job(c, pos[0]);
		goto done;
	}
	/* Every parameter is checked before anything connects or writes. */
	if (cb_params_new(&params, &c->err) < 0) {
		rc = fail(c, CB_EXIT_FAILED);
		goto done;
	}
	for (i = 1; i < npos; i++) {
		rc = cb_params_parse_arg(params, pos[i], &c->err);
		if (rc < 0) {
			rc = fail(c, rc == CB_EINVAL ? CB_EXIT_USAGE : CB_EXIT_FAILED);
			goto done;
		}
	}
	if ((rc = open_db(c, &conn, 1)) != 0)
		goto done;
	rc = execute(c, conn, job, params, values[0] != NULL, 0, lease);
done:
	PQfinish(conn);
	cb_params_free(params);
	free(pos);
	return rc;
}

/* Exactly one execution id argument, and the options in @p flags. */
static int one_id_with(struct cli *c, long long *id, const char *const *flags,
		       const char **values)
{
	const char **pos;
	size_t npos;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return out_of_memory(c);
	rc = split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos != 1)
		rc = usage_error(c, "%s: %s (usage: %s %s EXECUTION_ID)", c->argv[0],
				 npos ? "expected one EXECUTION_ID" : "missing EXECUTION_ID",
				 c->prog, c->argv[0]);
	else if (rc == 0)
		rc = parse_id(c, id, pos[0]);
	free(pos);
	return rc;
}

static int one_id(struct cli *c, long long *id)
{
	return one_id_with(c, id, NULL, NULL);
}

static int cmd_restart(struct cli *c)
{
	static const char *const flags[] = { "--lease=", NULL };
	const char *values[1] = { NULL };
	char name[CB_PARAM_NAME_MAX + 28];
	const cb_job *job;
	PGconn *conn = NULL;
	long long id;
	double lease = 0;
	int rc;

	if ((rc = one_id_with(c, &id, flags, values)) != 0 ||
	    (rc = parse_lease(c, values[0], &lease)) != 0)
		return rc;
	if ((rc = open_db(c, &conn, 1)) != 0)
		return rc;
	if ((rc = cb_repo_execution_job_name(name, sizeof(name), conn, id, &c->err)) < 0) {
		rc = fail(c, exit_for(rc, 1));
		goto done;
	}
	job = cb_registry_find(c->reg, name);
	if (!job) {
		char known[300];

		job_list(known, sizeof(known), c->reg);
		rc = usage_error(c,
				 "execution %lld is of job '%s', which is not registered in "
				 "this program (known: %s)",
				 id, name, known[0] ? known : "none");
		goto done;
	}
	rc = execute(c, conn, job, NULL, 0, id, lease);
done:
	PQfinish(conn);
	return rc;
}

/* ---- stop and abandon ---------------------------------------------------- */

static int transition(struct cli *c, int stop)
{
	PGconn *conn = NULL;
	cb_status now = CB_STATUS_UNKNOWN;
	long long id;
	int rc;

	if ((rc = one_id(c, &id)) != 0)
		return rc;
	if ((rc = open_db(c, &conn, 1)) != 0)
		return rc;
	rc = stop ? cb_repo_stop(&now, conn, id, &c->err) : cb_repo_abandon(conn, id, &c->err);
	if (rc < 0) {
		rc = fail(c, exit_for(rc, 1));
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:I,s:s}", "job_execution_id", (json_int_t)id, "status",
					stop ? cb_status_name(now) : "ABANDONED");

		if (!doc) {
			rc = out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (stop && now == CB_STATUS_STOPPED) {
		printf("execution %lld: its owner was lost; STOPPED now (restartable)\n", id);
	} else if (stop) {
		printf("execution %lld: stop requested; it ends as STOPPED after its current chunk "
		       "commits\n",
		       id);
	} else {
		printf("execution %lld: ABANDONED; its instance can no longer be restarted\n", id);
	}
done:
	PQfinish(conn);
	return rc;
}

static int cmd_stop(struct cli *c)
{
	return transition(c, 1);
}

static int cmd_abandon(struct cli *c)
{
	return transition(c, 0);
}

/* ---- executions and show ------------------------------------------------- */

/* An execution's or step's duration: from duration_seconds, else its times. */
static void fmt_elapsed(char *buf, size_t size, const json_t *o)
{
	const json_t *d = json_object_get(o, "duration_seconds");
	char a[64], b[64];

	if (json_is_number(d)) {
		cb__cli_fmt_duration(buf, size, json_number_value(d));
		return;
	}
	cb__cli_fmt_duration_between(buf, size,
				     cb__cli_json_get_text(o, "start_time", a, sizeof(a)),
				     cb__cli_json_get_text(o, "end_time", b, sizeof(b)));
}

static int print_executions(const json_t *list)
{
	static const char *const headers[] = { "ID",   "INSTANCE", "JOB", "STATUS",
					       "EXIT", "START",    "END", "DURATION" };
	cb__cli_table *t;
	size_t i;

	if (cb__cli_table_new(&t, 8, headers, "rrllllll") < 0)
		return CB_ENOMEM;
	for (i = 0; i < json_array_size(list); i++) {
		const json_t *e = json_array_get(list, i);
		char id[24], inst[24], job[CB_PARAM_NAME_MAX + 8], st[32], ex[64];
		char ts[64], te[64], start[64], end[64], dur[32];
		const char *row[8];

		row[0] = cb__cli_json_get_text(e, "job_execution_id", id, sizeof(id));
		row[1] = cb__cli_json_get_text(e, "job_instance_id", inst, sizeof(inst));
		row[2] = cb__cli_json_get_text(e, "job_name", job, sizeof(job));
		row[3] = cb__cli_json_get_text(e, "status", st, sizeof(st));
		if (json_is_true(json_object_get(e, "owner_lost"))) {
			/* Claims to run, but its lock lease is gone: dead, restartable. */
			snprintf(st, sizeof(st), "%s (owner lost)",
				 json_string_value(json_object_get(e, "status")));
			row[3] = st;
		}
		row[4] = cb__cli_json_get_text(e, "exit_code", ex, sizeof(ex));
		cb__cli_fmt_time(start, sizeof(start),
				 cb__cli_json_get_text(e, "start_time", ts, sizeof(ts)));
		cb__cli_fmt_time(end, sizeof(end),
				 cb__cli_json_get_text(e, "end_time", te, sizeof(te)));
		row[5] = start;
		row[6] = end;
		fmt_elapsed(dur, sizeof(dur), e);
		row[7] = cb__cli_json_get_text(e, "start_time", ts, sizeof(ts)) ? dur : "-";
		if (cb__cli_table_add(t, row) < 0) {
			cb__cli_table_free(t);
			return CB_ENOMEM;
		}
	}
	cb__cli_table_print(t, stdout, "");
	cb__cli_table_free(t);
	return 0;
}

static int cmd_executions(struct cli *c)
{
	static const char *const flags[] = { "--limit=", NULL };
	const char *values[1] = { NULL };
	const char **pos;
	size_t npos;
	long long limit = DEFAULT_LIMIT;
	json_t *list = NULL;
	PGconn *conn = NULL;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return out_of_memory(c);
	if ((rc = split_args(c, pos, &npos, flags, values)) != 0)
		goto done;
	if (npos > 1) {
		rc = usage_error(c,
				 "executions: unexpected argument '%.100s' (usage: %s "
				 "executions [JOB] [--limit N])",
				 pos[1], c->prog);
		goto done;
	}
	if (npos && (rc = text_arg(c, "job name", pos[0])) != 0)
		goto done;
	if (values[0] && (parse_positive(&limit, values[0]) < 0 || limit > 1000000)) {
		rc = usage_error(c, "executions: invalid --limit '%.100s' (expected 1..1000000)",
				 values[0]);
		goto done;
	}
	if ((rc = open_db(c, &conn, 1)) != 0)
		goto done;
	rc = cb_repo_list_executions(&list, conn, npos ? pos[0] : NULL, (int)limit, &c->err);
	if (rc < 0) {
		rc = fail(c, exit_for(rc, 0));
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:O}", "executions", list);

		if (!doc) {
			rc = out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (json_array_size(list) == 0) {
		char shown[CB_PARAM_NAME_MAX * 4 + 8];

		if (npos)
			printf("no executions of job '%s'\n",
			       cb__cli_term(shown, sizeof(shown), pos[0]));
		else
			printf("no executions\n");
	} else if (print_executions(list) < 0) {
		rc = out_of_memory(c);
		goto done;
	}
	rc = 0;
done:
	json_decref(list);
	PQfinish(conn);
	free(pos);
	return rc;
}

/* "label:  value" with the labels aligned; NULL values print as "-". */
static void field(const char *label, const char *value)
{
	char shown[CB_PARAM_VALUE_MAX * 4];

	printf("  %-13s %s\n", label,
	       value && value[0] ? cb__cli_term(shown, sizeof(shown), value) : "-");
}

static void field_time(const json_t *o, const char *label, const char *key)
{
	char raw[64], t[64];

	cb__cli_fmt_time(t, sizeof(t), cb__cli_json_get_text(o, key, raw, sizeof(raw)));
	field(label, t);
}

/* "CODE — message", or just one of them. */
static void fmt_exit(char *buf, size_t size, const json_t *o)
{
	char code[64], msg[CB_ERROR_MESSAGE_MAX];
	const char *cd = cb__cli_json_get_text(o, "exit_code", code, sizeof(code));
	const char *m = cb__cli_json_get_text(o, "exit_message", msg, sizeof(msg));

	if (m && !m[0])
		m = NULL;
	snprintf(buf, size, "%s%s%s", cd ? cd : "", cd && m ? " \xe2\x80\x94 " : "", m ? m : "");
}

static long long skips(const json_t *s)
{
	return cb__cli_json_get_ll(s, "read_skip_count") +
	       cb__cli_json_get_ll(s, "process_skip_count") +
	       cb__cli_json_get_ll(s, "write_skip_count");
}

static int print_steps(const json_t *steps)
{
	static const char *const headers[] = { "STEP",      "STATUS",  "READ",       "WRITTEN",
					       "FILTERED",  "SKIPPED", "DUPLICATES", "COMMITS",
					       "ROLLBACKS", "DURATION" };
	/* SKIPPED and DUPLICATES only when some step has any. */
	int show_skips = 0, show_dups = 0;
	cb__cli_table *t;
	size_t i, k, n;

	for (i = 0; i < json_array_size(steps); i++) {
		const json_t *s = json_array_get(steps, i);

		show_skips |= skips(s) != 0;
		show_dups |= cb__cli_json_get_ll(s, "duplicate_target_write_count") != 0;
	}
	{
		const char *h[10];
		char align[11];

		for (k = n = 0; k < 10; k++) {
			if ((k == 5 && !show_skips) || (k == 6 && !show_dups))
				continue;
			h[n] = headers[k];
			align[n++] = k >= 2 && k <= 8 ? 'r' : 'l';
		}
		align[n] = '\0';
		if (cb__cli_table_new(&t, n, h, align) < 0)
			return CB_ENOMEM;
	}
	for (i = 0; i < json_array_size(steps); i++) {
		const json_t *s = json_array_get(steps, i);
		char name[CB_PARAM_NAME_MAX + 8], st[32], r[24], w[24], f[24], sk[24], du[24];
		char cm[24], rb[24], dur[32];
		const char *row[10];

		n = 0;
		row[n++] = cb__cli_json_get_text(s, "step_name", name, sizeof(name));
		row[n++] = cb__cli_json_get_text(s, "status", st, sizeof(st));
		row[n++] = cb__cli_json_get_text(s, "read_count", r, sizeof(r));
		row[n++] = cb__cli_json_get_text(s, "write_count", w, sizeof(w));
		row[n++] = cb__cli_json_get_text(s, "filter_count", f, sizeof(f));
		if (show_skips) {
			snprintf(sk, sizeof(sk), "%lld", skips(s));
			row[n++] = sk;
		}
		if (show_dups)
			row[n++] = cb__cli_json_get_text(s, "duplicate_target_write_count", du,
							 sizeof(du));
		row[n++] = cb__cli_json_get_text(s, "commit_count", cm, sizeof(cm));
		row[n++] = cb__cli_json_get_text(s, "rollback_count", rb, sizeof(rb));
		fmt_elapsed(dur, sizeof(dur), s);
		row[n++] = dur;
		if (cb__cli_table_add(t, row) < 0) {
			cb__cli_table_free(t);
			return CB_ENOMEM;
		}
	}
	cb__cli_table_print(t, stdout, "  ");
	cb__cli_table_free(t);
	/* The newest skipped items of each step, as its context recorded them. */
	for (size_t si = 0; si < json_array_size(steps); si++) {
		const json_t *st = json_array_get(steps, si);
		const json_t *list = json_object_get(json_object_get(st, "context"), "skipped");
		char name[128];

		for (size_t li = 0; li < json_array_size(list); li++) {
			const json_t *e = json_array_get(list, li);

			char f[64], m[CB_ERROR_MESSAGE_MAX * 4];

			cb__cli_term(f, sizeof(f), json_string_value(json_object_get(e, "fault")));
			cb__cli_term(m, sizeof(m),
				     json_string_value(json_object_get(e, "message")));
			printf("  skipped in %s (%s): %s\n",
			       cb__cli_term(name, sizeof(name),
					    json_string_value(json_object_get(st, "step_name"))),
			       f, m);
		}
	}
	return 0;
}

static int print_execution(const json_t *e)
{
	char a[64], b[64], job[CB_PARAM_NAME_MAX + 8], buf[CB_ERROR_MESSAGE_MAX + 80], dur[32];
	const json_t *steps = json_object_get(e, "steps");
	char *params = NULL;
	size_t i;

	printf("execution %s of job '%s' (instance %s)\n",
	       cb__cli_json_get_text(e, "job_execution_id", a, sizeof(a)),
	       cb__cli_term(job, sizeof(job), json_string_value(json_object_get(e, "job_name"))),
	       cb__cli_json_get_text(e, "job_instance_id", b, sizeof(b)));
	field("status:", cb__cli_json_get_text(e, "status", a, sizeof(a)));
	fmt_exit(buf, sizeof(buf), e);
	field("exit:", buf);
	if (cb__cli_fmt_params(&params, json_object_get(e, "parameters")) < 0)
		return CB_ENOMEM;
	field("parameters:", params);
	free(params);
	field("job key:", cb__cli_json_get_text(e, "job_key", buf, sizeof(buf)));
	if (cb__cli_json_get_ll(e, "restart_of") > 0)
		field("restart of:", cb__cli_json_get_text(e, "restart_of", a, sizeof(a)));
	field_time(e, "created:", "create_time");
	field_time(e, "started:", "start_time");
	field_time(e, "ended:", "end_time");
	fmt_elapsed(dur, sizeof(dur), e);
	field("duration:", cb__cli_json_get_text(e, "start_time", a, sizeof(a)) ? dur : "-");
	field("owner:", cb__cli_json_get_text(e, "owner_id", buf, sizeof(buf)));
	field_time(e, "last updated:", "last_updated");
	if (json_array_size(steps) == 0) {
		printf("\n  no step executions\n");
		return 0;
	}
	putchar('\n');
	if (print_steps(steps) < 0)
		return CB_ENOMEM;
	/* Step exit messages last: they are long and would break the table. */
	for (i = 0; i < json_array_size(steps); i++) {
		const json_t *s = json_array_get(steps, i);
		char name[CB_PARAM_NAME_MAX * 4 + 8], raw[CB_ERROR_MESSAGE_MAX];
		char msg[CB_ERROR_MESSAGE_MAX * 4], prefix[CB_PARAM_NAME_MAX * 4 + 16];
		const char *m = cb__cli_json_get_text(s, "exit_message", raw, sizeof(raw));

		if (!m || !m[0])
			continue;
		m = cb__cli_term(msg, sizeof(msg), m);
		snprintf(prefix, sizeof(prefix), "step '%s'",
			 cb__cli_term(name, sizeof(name),
				      json_string_value(json_object_get(s, "step_name"))));
		/* The engine's messages usually name the step already. */
		if (strncmp(m, prefix, strlen(prefix)) == 0)
			printf("  %s\n", m);
		else
			printf("  %s: %s\n", prefix, m);
	}
	return 0;
}

static int cmd_show(struct cli *c)
{
	json_t *e = NULL;
	PGconn *conn = NULL;
	long long id;
	int rc;

	if ((rc = one_id(c, &id)) != 0)
		return rc;
	if ((rc = open_db(c, &conn, 1)) != 0)
		return rc;
	if ((rc = cb_repo_show_execution(&e, conn, id, &c->err)) < 0) {
		rc = fail(c, exit_for(rc, 1));
		goto done;
	}
	if (c->json)
		cb__cli_json_print(stdout, e);
	else if (print_execution(e) < 0) {
		rc = out_of_memory(c);
		goto done;
	}
	rc = 0;
done:
	json_decref(e);
	PQfinish(conn);
	return rc;
}

/* ---- locks and metrics --------------------------------------------------- */

static int no_args(struct cli *c)
{
	if (c->argc > 1)
		return usage_error(c, "%s: unexpected argument '%.100s'", c->argv[0], c->argv[1]);
	return 0;
}

static int cmd_locks(struct cli *c)
{
	json_t *list = NULL;
	PGconn *conn = NULL;
	cb__cli_table *t = NULL;
	static const char *const headers[] = { "LOCK", "OWNER", "TOKEN", "LEASE LEFT", "STATE",
					       "EXECUTION" };
	int rc;

	if ((rc = no_args(c)) != 0 || (rc = open_db(c, &conn, 1)) != 0)
		return rc;
	if ((rc = cb_lock_list(&list, conn, &c->err)) < 0) {
		rc = fail(c, CB_EXIT_FAILED);
		goto done;
	}
	rc = 0;
	if (c->json) {
		json_t *doc = json_pack("{s:O}", "locks", list);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
		goto done;
	}
	if (cb__cli_table_new(&t, 6, headers, "llrrlr") < 0) {
		rc = out_of_memory(c);
		goto done;
	}
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *l = json_array_get(list, i);
		char name[512], owner[256], token[32], left[64], exec[32];
		double secs = json_number_value(json_object_get(l, "lease_left_seconds"));
		const char *cells[6];

		if (json_is_string(json_object_get(l, "lease_left_seconds")))
			secs = atof(json_string_value(json_object_get(l, "lease_left_seconds")));
		snprintf(left, sizeof(left), "%.1fs", secs > 0 ? secs : 0.0);
		cells[0] = cb__cli_json_get_text(l, "lock_name", name, sizeof(name));
		cells[1] = cb__cli_json_get_text(l, "owner_id", owner, sizeof(owner));
		cells[2] = cb__cli_json_get_text(l, "fencing_token", token, sizeof(token));
		cells[3] = left;
		cells[4] = json_is_true(json_object_get(l, "released")) ? "released"
			   : secs > 0				    ? "held"
								    : "expired";
		cells[5] = cb__cli_json_get_text(l, "job_execution_id", exec, sizeof(exec));
		if (cb__cli_table_add(t, cells) < 0) {
			rc = out_of_memory(c);
			goto done;
		}
	}
	cb__cli_table_print(t, stdout, "");
done:
	cb__cli_table_free(t);
	json_decref(list);
	PQfinish(conn);
	return rc;
}

static int cmd_unlock(struct cli *c)
{
	static const char *const flags[] = { "--force", "--reason=", NULL };
	const char *values[2] = { NULL, NULL };
	const char **pos;
	char who[300], host[128] = "unknown";
	const char *user = getenv("USER");
	PGconn *conn = NULL;
	size_t npos;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return out_of_memory(c);
	rc = split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos != 1)
		rc = usage_error(c, "unlock: name one lock (usage: %s unlock LOCK_NAME --force "
				 "[--reason TEXT])", c->prog);
	if (rc == 0 && !values[0])
		rc = usage_error(c, "unlock: releasing a lock someone may hold needs --force");
	if (rc == 0)
		rc = text_arg(c, "lock name", pos[0]);
	if (rc == 0)
		rc = text_arg(c, "reason", values[1]);
	if (rc == 0)
		rc = open_db(c, &conn, 1);
	if (rc != 0)
		goto done;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(who, sizeof(who), "%s@%s", user && *user ? user : "unknown", host);
	{
		char raw[sizeof(who)];

		memcpy(raw, who, sizeof(raw));
		cb__utf8_sanitize(who, sizeof(who), raw);
	}
	if ((rc = cb_lock_force_unlock(conn, pos[0], who, values[1], &c->err)) < 0) {
		rc = fail(c, rc == CB_ENOTFOUND ? CB_EXIT_USAGE : CB_EXIT_FAILED);
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:s,s:s}", "lock_name", pos[0], "outcome",
					"FORCE_UNLOCKED");

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else {
		char shown[2048], by[1200];

		printf("lock '%s' released by force (recorded as FORCE_UNLOCKED by %s)\n",
		       cb__cli_term(shown, sizeof(shown), pos[0]),
		       cb__cli_term(by, sizeof(by), who));
	}
	rc = 0;
done:
	PQfinish(conn);
	free(pos);
	return rc;
}

static int cmd_metrics(struct cli *c)
{
	PGconn *conn = NULL;
	char *text = NULL;
	int rc;

	if ((rc = no_args(c)) != 0 || (rc = open_db(c, &conn, 1)) != 0)
		return rc;
	if (c->json) {
		json_t *doc = NULL;

		if ((rc = cb_metrics_json(&doc, conn, &c->err)) < 0)
			rc = fail(c, CB_EXIT_FAILED);
		else
			cb__cli_json_print(stdout, doc);
		json_decref(doc);
		PQfinish(conn);
		return rc < 0 ? CB_EXIT_FAILED : rc;
	}
	if ((rc = cb_metrics_text(&text, conn, &c->err)) < 0)
		rc = fail(c, CB_EXIT_FAILED);
	else
		fputs(text, stdout);
	free(text);
	PQfinish(conn);
	return rc < 0 ? CB_EXIT_FAILED : rc;
}

/* ---- extra commands ------------------------------------------------------ */

static int run_extra(struct cli *c, long k)
{
	cb_command_fn fn;
	void *ctx;
	PGconn *conn = NULL;
	int rc;

	char **argv = c->argv;
	int argc = c->argc;

	cb__registry_command_at(c->reg, (size_t)k, NULL, NULL, &fn, &ctx);
	if (c->json) {
		/* The global --json reaches the command as its argv[1]. */
		argv = calloc((size_t)argc + 2, sizeof(*argv));
		if (!argv)
			return out_of_memory(c);
		argv[0] = c->argv[0];
		argv[1] = (char *)"--json";
		memcpy(argv + 2, c->argv + 1, (size_t)argc * sizeof(*argv)); /* with the NULL */
		argc++;
	}
	if ((rc = open_db(c, &conn, 0)) != 0) {
		if (argv != c->argv)
			free(argv);
		return rc;
	}
	rc = fn(ctx, conn, argc, argv);
	PQfinish(conn);
	if (argv != c->argv)
		free(argv);
	/* A command that returned a CB_E* code by mistake still fails visibly. */
	if (rc < 0 || rc > 125)
		rc = CB_EXIT_FAILED;
	return rc;
}

/* ---- entry point --------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s;

	if (!path || !*path)
		return "cbatch";
	s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void print_version(const struct cli *c)
{
	if (strcmp(c->prog, "cbatch") == 0)
		printf("cbatch %s (repository schema %d)\n", CBATCH_VERSION,
		       cb_repo_schema_target());
	else
		printf("%s (cbatch %s, repository schema %d)\n", c->prog, CBATCH_VERSION,
		       cb_repo_schema_target());
}

/*
 * Hide the secrets of --db's value @p arg from `ps` (/proc/PID/cmdline):
 * overwrite the bytes in place with the value's redacted form (padded with
 * NULs), or with '*' where that does not fit.
 */
static void scrub_arg(char *arg)
{
	size_t n = strlen(arg);
	char *red = malloc(n + 8);

	if (red && cb__redact_secrets(red, n + 8, arg) <= n) {
		if (strcmp(red, arg) != 0) {
			memset(arg, 0, n);
			memcpy(arg, red, strlen(red));
		}
	} else {
		memset(arg, '*', n);
	}
	free(red);
}

/* Take --db's value: a private copy into @p c, the argument scrubbed. */
static int take_db(struct cli *c, char *value, char **copy)
{
	free(*copy);
	*copy = strdup(value);
	if (!*copy)
		return -1;
	c->db = *copy;
	scrub_arg(value);
	return 0;
}

int cb_cli_main(cb_registry *reg, int argc, char **argv)
{
	char *db_copy = NULL;
	struct cli c;
	const char *bad = NULL, *cmd = NULL;
	int i, help = 0, version = 0, dashdash = 0, db_missing = 0, rc;
	const struct builtin *b;
	long k;

	memset(&c, 0, sizeof(c));
	cb_error_clear(&c.err);
	c.reg = reg;
	c.prog = base_name(argc > 0 ? argv[0] : NULL);
	if (argc < 1)
		argc = 1;
	c.argv = calloc((size_t)argc + 1, sizeof(*c.argv));
	if (!c.argv) {
		fprintf(stderr, "cbatch: out of memory\n");
		return CB_EXIT_FAILED;
	}
	/* Global options anywhere; the first other word is the command, and every
	 * later word (options included) belongs to it. */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash) {
			if (!cmd)
				cmd = a;
			c.argv[c.argc++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			dashdash = 1;
			if (cmd)
				c.argv[c.argc++] = argv[i];
		} else if (strcmp(a, "--db") == 0) {
			if (i + 1 >= argc)
				db_missing = 1;
			else if (take_db(&c, argv[++i], &db_copy) < 0)
				db_missing = -1;
		} else if (strncmp(a, "--db=", 5) == 0) {
			if (take_db(&c, argv[i] + 5, &db_copy) < 0)
				db_missing = -1;
		} else if (strcmp(a, "--json") == 0) {
			c.json = 1;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			help = 1;
		} else if (strcmp(a, "--version") == 0) {
			version = 1;
		} else if (!cmd && a[0] == '-') {
			if (!bad)
				bad = a;
		} else {
			if (!cmd)
				cmd = a;
			c.argv[c.argc++] = argv[i];
		}
	}
	c.argv[c.argc] = NULL;

	if (help) {
		if (!cmd) {
			print_general_help(&c, stdout);
			rc = 0;
		} else if (strcmp(cmd, "help") == 0 && c.argc > 1) {
			rc = command_help(&c, c.argv[1]);
		} else {
			rc = command_help(&c, cmd);
		}
	} else if (db_missing < 0) {
		rc = out_of_memory(&c);
	} else if (db_missing) {
		rc = usage_error(&c, "option '--db' needs a value");
	} else if (bad) {
		rc = usage_error(&c, "unknown option '%.100s' (see '%s --help')", bad, c.prog);
	} else if (version) {
		print_version(&c);
		rc = 0;
	} else if (!cmd && c.json) {
		rc = usage_error(&c, "no command given (see '%s --help')", c.prog);
	} else if (!cmd) {
		print_general_help(&c, stderr);
		rc = CB_EXIT_USAGE;
	} else if ((b = find_builtin(cmd)) != NULL) {
		rc = b->fn(&c);
	} else if ((k = cb__registry_find_command(reg, cmd)) >= 0) {
		rc = run_extra(&c, k);
	} else {
		rc = usage_error(&c, "unknown command '%.100s' (see '%s --help')", cmd, c.prog);
	}
	/* Output that never reached its reader is a failure (a full disk, a closed pipe). */
	if (fflush(stdout) != 0 && rc == 0) {
		fprintf(stderr, "cbatch: cannot write the output: %s\n", strerror(errno));
		rc = CB_EXIT_FAILED;
	}
	free(c.argv);
	free(db_copy);
	return rc;
}
