/*
 * The command-line interface shared by `cbatch` and every job program:
 * global options, dispatch, help, errors and exit codes, and the helpers
 * that the commands share.
 *
 * Reading order: cb_cli_main (global options, dispatch) at the end of this
 * file, then the built-in commands by family, as libgit2's src/cli/cmd_*.c:
 * cb__cli_cmd_run.c (run, restart), cmd_control.c (stop, abandon, unlock),
 * cmd_list.c (jobs, executions, show, locks), cb__cli_cmd_schema.c, cb__cli_cmd_metrics.c.
 * Output helpers are in cli_format.c, the progress line in cli_progress.c.
 * Only the public API (and core/text.h) is used, as any job program could.
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
#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "cbatch/version.h"
#include "cli_internal.h"
#include "pgkit.h"
#include "text.h"

struct builtin {
	const char *name;
	const char *synopsis; /* arguments after the name */
	const char *summary;
	const char *help; /* further lines of `COMMAND --help`, or NULL */
	int (*fn)(struct cli *c);
};

/* ---- the table of built-in commands -------------------------------------- */

static const struct builtin builtins[] = {
	{ "schema", "init|check",
	  "create or upgrade (init) or verify (check) the repository schema",
	  "init is safe to run any number of times, also concurrently: it applies only\n"
	  "the migrations the database lacks and prints the version before and after.\n",
	  cb__cli_cmd_schema },
	{ "jobs", "", "list the jobs registered in this program",
	  "LOCK is the job's lock scope, what its lock keeps apart: instance (the job\n"
	  "and its identifying parameters, the default), job (the job alone: no two of\n"
	  "its instances ever run at once) or custom (a template over some parameters).\n"
	  "With --json: lock_scope and lock_template per job.\n",
	  cb__cli_cmd_jobs },
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
	  cb__cli_cmd_run },
	{ "restart", "EXECUTION_ID [--lease SECONDS]", "restart a failed or stopped execution",
	  "Starts a new execution of the same instance with the same parameters:\n"
	  "completed steps are skipped and the failed step resumes from its last\n"
	  "committed chunk. The job must be registered in this program. An execution\n"
	  "whose owner died (its lock lease expired) can be restarted too.\n",
	  cb__cli_cmd_restart },
	{ "stop", "EXECUTION_ID", "ask a running execution to stop after its current chunk",
	  "STARTING or STARTED becomes STOPPING; the running process ends as STOPPED\n"
	  "(restartable) after its current chunk commits, or before its first step.\n"
	  "An execution whose owner was lost (lease expired) ends STOPPED at once.\n",
	  cb__cli_cmd_stop },
	{ "abandon", "EXECUTION_ID", "mark a failed or stopped execution as never to be restarted",
	  "ABANDONED is final: the instance cannot be restarted; run it again with\n"
	  "other identifying parameters (or --next). Only the newest execution of an\n"
	  "instance can be abandoned: FAILED, STOPPED, or running with its owner lost\n"
	  "(lease expired; its running steps end FAILED). A live one is refused.\n",
	  cb__cli_cmd_abandon },
	{ "executions", "[JOB] [--limit N]", "list executions, newest first",
	  "Options:\n"
	  "  --limit N   show at most N executions (default 20)\n",
	  cb__cli_cmd_executions },
	{ "show", "EXECUTION_ID", "show an execution, its parameters and its steps",
	  "lock: the lock it ran under and its job's lock scope in this program (see\n"
	  "`jobs --help`); with --json lock_name and lock_scope (null when this\n"
	  "program lacks the job).\n",
	  cb__cli_cmd_show },
	{ "locks", "[--all] [--limit N] [--after NAME]",
	  "list execution locks with owner, fencing token and lease left",
	  "Shows the held locks and those released or taken within the last hour,\n"
	  "by name in natural order (ledger:2 before ledger:10), a page at a time.\n"
	  "Options:\n"
	  "  --all         every lock row the repository keeps (history)\n"
	  "  --limit N     at most N locks per page (default 100, at most 1000)\n"
	  "  --after NAME  the page after lock NAME (printed as 'more:' after a full page)\n",
	  cb__cli_cmd_locks },
	{ "unlock", "LOCK_NAME --force [--reason TEXT]",
	  "release a lock by hand (recorded with who and why)",
	  "The holder's database session is terminated (its open chunk rolls back;\n"
	  "this needs the same role, superuser or pg_signal_backend), and if it still\n"
	  "runs it is fenced off and fails. The release is recorded in\n"
	  "batch_lock_audit as FORCE_UNLOCKED.\n",
	  cb__cli_cmd_unlock },
	{ "metrics", "", "print repository metrics in Prometheus text format",
	  "With --json: {\"metrics\": [{\"name\", \"help\", \"type\", \"labels\", \"value\"}]},\n"
	  "one element per series.\n",
	  cb__cli_cmd_metrics },
	{ "worker", "[--job NAME]... [--threads K] [--exit-when-idle SECONDS]",
	  "run partitions of partitioned steps for running executions",
	  "Claims open partitions of running executions of this program's jobs (or\n"
	  "only of the --job ones) with FOR UPDATE SKIP LOCKED, each under a lease\n"
	  "with a heartbeat and a fencing token, runs them and repeats; sleeps on\n"
	  "LISTEN/NOTIFY when there is nothing to claim. Start as many as you like,\n"
	  "on any host that reaches the repository. SIGINT/SIGTERM: the partitions\n"
	  "being run are handed back after their current chunk (another worker\n"
	  "resumes them) and the worker exits 0. A worker that is killed or cut off\n"
	  "loses its partitions after the lease; their late chunks are refused.\n"
	  "Only partitions whose manager step this program defines as the manager's\n"
	  "program did (the step definition's fingerprint, see `show`) are claimed:\n"
	  "in a rolling upgrade the others wait for a worker of that build. Nor are\n"
	  "those of an execution whose manager is a dead process of this host. The\n"
	  "summary counts every claimed partition once: completed, failed or lost,\n"
	  "stopped, handed back.\n\n"
	  "Options:\n"
	  "  --job NAME               work only for this job (repeatable)\n"
	  "  --threads K              partitions run at once, each on its own\n"
	  "                           connection (default 1)\n"
	  "  --exit-when-idle SECONDS exit after this long without a partition\n"
	  "                           (default: run until signalled)\n"
	  "  --lease SECONDS          lease of a claimed partition (default: the\n"
	  "                           job's lease)\n"
	  "  --quiet                  no line per claimed and finished partition\n",
	  cb__cli_cmd_worker },
	{ "schedule", "add|list|show|pause|resume|remove|next|history ...",
	  "keep cron schedules of jobs in the repository",
	  "  schedule add NAME --cron EXPR [--tz ZONE] --job JOB [PARAM-TEMPLATE ...]\n"
	  "               [--misfire run-once|skip] [--misfire-grace SECONDS] [--paused]\n"
	  "               [--overlap skip|queue|allow] [--recover restart|leave]\n"
	  "               [--recover-attempts N] [--recover-delay SECONDS]\n"
	  "  schedule list | show NAME | pause NAME | resume NAME | remove NAME\n"
	  "  schedule next NAME|--cron EXPR [--tz ZONE] [--count N]\n"
	  "  schedule history NAME [--limit N]\n\n"
	  "EXPR: 5 fields (minute hour day-of-month month day-of-week) or 6 with\n"
	  "seconds first; lists, ranges, steps, names, @daily and friends, L, W, #.\n"
	  "When both day fields are restricted a day matches if either does (Vixie).\n"
	  "ZONE: a name the repository's server knows (default UTC); its rules decide\n"
	  "DST: a fixed time in a skipped hour fires at the end of the gap, a repeated\n"
	  "one once; expressions with * in the minute or hour fire in both passes.\n"
	  "Templates fill from the fire instant: {fire_date}, {fire_date-N},\n"
	  "{fire_date+N}, {fire_time}, {fire_utc}, {fire_epoch}, {schedule}; e.g.\n"
	  "targetDate:date={fire_date-1}. Misfires (instants later than the grace,\n"
	  "default 60s, because no scheduler ran): run-once runs one firing now for\n"
	  "the latest missed instant, skip only records them.\n"
	  "Overlap: an instant due while an earlier firing of the schedule still runs\n"
	  "(its execution's lease holds, on any node) is skipped (default), queued to\n"
	  "run after it (one at most) or run anyway (allow).\n"
	  "Recover: an execution its node's death or a lost process left unfinished is\n"
	  "restarted by a surviving node after the delay (default 10s) and its lease,\n"
	  "at most N times (default 3); leave: never.\n",
	  cb__cli_cmd_schedule },
	{ "scheduler", "[--lease SECONDS] [--max-running N] [--verbose|--quiet]",
	  "fire due schedules, each fire instant once across all scheduler nodes",
	  "Start one on every host you like: each fire instant is claimed by one node\n"
	  "in one transaction (unique per schedule and instant, in the database's\n"
	  "time) and run as a child process `run JOB PARAMS...`; the other nodes\n"
	  "record SKIPPED_CLAIMED (see `schedule history`). A lost repository\n"
	  "connection is retried with backoff and nothing fires meanwhile.\n"
	  "A schedule's firings do not overlap unless its --overlap says so, and a\n"
	  "run left unfinished by a dead node or process is restarted by a surviving\n"
	  "node (its --recover); see `schedule`.\n"
	  "SIGINT/SIGTERM: no new firings; running jobs are asked to stop after their\n"
	  "chunk (STOPPED, restartable) and waited for.\n\n"
	  "Options:\n"
	  "  --lease SECONDS     how long other nodes trust this one's heartbeat before\n"
	  "                      they report its open firings (default 30)\n"
	  "  --max-running N     jobs run at once by this node (default 8); beyond it\n"
	  "                      instants are left to other nodes\n"
	  "  --exit-after SECONDS  stop by itself after this long\n"
	  "  --verbose           also log instants other nodes claimed\n"
	  "  --quiet             no line per firing\n",
	  cb__cli_cmd_scheduler },
	{ "serve",
	  "[--listen ADDR:PORT] [--admin-token-file PATH] [--pool N] [--allowed-host NAME[:PORT]] "
	  "[--client-connections N]",
	  "the operator console: dashboard, JSON API, /metrics, health probes",
	  "Listens on 127.0.0.1:8080 unless --listen names an IPv4 address, an\n"
	  "[IPv6] address or localhost (port 0: any free port); prints the address.\n"
	  "GET / (the dashboard), /metrics (the `metrics` text), /healthz, /readyz,\n"
	  "/api/v1/info, /jobs, /executions[?job=&status=&from=&to=&limit=&before=],\n"
	  "/executions/ID, /executions/ID/skips, /locks, /locks/audit.\n"
	  "Answers only requests whose Host names it: the --listen address (for\n"
	  "loopback also localhost, 127.0.0.1, [::1]) with its port, or an\n"
	  "--allowed-host; others get 421. A request head must arrive within 10 s.\n"
	  "Read-only unless an admin token is given (a file of this user's that\n"
	  "only it may read or write, not a symbolic link); then\n"
	  "POST /api/v1/executions/ID/stop|abandon|restart and\n"
	  "/api/v1/locks/NAME/unlock ({\"reason\": \"...\"}) act, for a request\n"
	  "with \"Authorization: Bearer TOKEN\" from no other site's page.\n"
	  "SIGTERM/SIGINT: stops accepting, finishes the requests in flight and\n"
	  "exits 0.\n\n"
	  "Options:\n"
	  "  --listen ADDR:PORT        where to listen (default 127.0.0.1:8080)\n"
	  "  --admin-token-file PATH   enable actions for requests with this token\n"
	  "  --pool N                  repository connections shared by requests\n"
	  "                            (default 4, at most 64)\n"
	  "  --allowed-host NAME[:PORT]  also answer to this Host (a reverse proxy's\n"
	  "                            name; any port unless given); repeatable\n"
	  "  --client-connections N    connections one client address may hold\n"
	  "                            (default 64, at most 500; a proxy is one)\n",
	  cb__cli_cmd_serve },
	{ "cleanup", "--older-than DURATION [--keep-last N] [--dry-run] [--batch N]",
	  "remove old executions with their steps, contexts, parameters and audit",
	  "Removes job executions that ended more than DURATION ago (30d, 12h, 90m,\n"
	  "3600s; by the database's clock) with their step executions (partitions too),\n"
	  "contexts and parameters, their lock audit rows (and audit rows older than\n"
	  "the cutoff that belong to no execution), and instances left with none. An\n"
	  "instance whose executions all go can be run again with the same parameters.\n"
	  "Never removed: an instance that is running, or whose newest execution is\n"
	  "not COMPLETED or ABANDONED (all of it stays restartable); the newest\n"
	  "execution of an instance unless all of it goes; the first execution of each\n"
	  "job's newest instance and one of the instance with its largest run.id (what\n"
	  "--next reads). Schedule firings keep the ids of removed executions.\n"
	  "Lock rows not touched since the cutoff go too when released (and of no\n"
	  "running execution) or of an execution that is gone; a name taken again\n"
	  "later gets a greater fencing token all the same.\n"
	  "Works in short transactions (SKIP LOCKED, lock_timeout 1s), safe while jobs\n"
	  "run; prints each batch on stderr and the rows removed per table.\n\n"
	  "Options:\n"
	  "  --older-than DURATION  required: a positive integer and s, m, h or d\n"
	  "  --keep-last N          also keep the newest N executions of each job\n"
	  "  --dry-run              count what would be removed; remove nothing\n"
	  "  --batch N              executions per transaction (default 1000)\n",
	  cb__cli_cmd_cleanup },
	{ "help", "[COMMAND]", "show help for a command", NULL, cb__cli_cmd_help },
};
#define NBUILTINS (sizeof(builtins) / sizeof(builtins[0]))

/* ---- errors and exit codes ----------------------------------------------- */

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

/* ---- arguments ----------------------------------------------------------- */

/* A positive decimal integer, as execution ids are. @return 0 or -1. */
int cb__cli_parse_positive(long long *out, const char *s)
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
int cb__cli_text_arg(struct cli *c, const char *what, const char *arg)
{
	char shown[400];

	if (!arg || cb__utf8_valid(arg))
		return 0;
	return cb__cli_usage_error(c, "%s: %s '%.100s' is not valid UTF-8", c->argv[0], what,
				   cb__cli_term(shown, sizeof(shown), arg));
}

/* Parse an execution id argument; a usage error names it. */
int cb__cli_parse_id(struct cli *c, long long *out, const char *arg)
{
	if (cb__cli_parse_positive(out, arg) == 0)
		return 0;
	return cb__cli_usage_error(
		c, "%s: invalid execution id '%.100s' (expected a positive integer)", c->argv[0],
		arg);
}

/*
 * Split the command's arguments into positionals (into @p pos, which holds
 * c->argc entries) and the options in @p flags (NULL-terminated names such as
 * "--next"; a name ending in '=' takes a value: "--limit=" accepts both
 * "--limit N" and "--limit=N"). Values go to @p values[i] (flags get "1").
 * `--` ends the options. @return 0, or the exit code of a reported usage error.
 */
int cb__cli_split_args(struct cli *c, const char **pos, size_t *npos, const char *const *flags,
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
					return cb__cli_usage_error(
						c, "%s: option '%s' needs a value", c->argv[0], a);
				values[f] = c->argv[++i];
				matched = 1;
			} else if (strncmp(a, fl, fn) == 0) {
				values[f] = a + fn;
				matched = 1;
			}
		}
		if (!matched)
			return cb__cli_usage_error(
				c, "%s: unknown option '%.100s' (see '%s %s --help')", c->argv[0],
				a, c->prog, c->argv[0]);
	}
	return 0;
}

/* Exactly one execution id argument, and the options in @p flags. */
int cb__cli_one_id_with(struct cli *c, long long *id, const char *const *flags, const char **values)
{
	const char **pos;
	size_t npos;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	rc = cb__cli_split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos != 1)
		rc = cb__cli_usage_error(c, "%s: %s (usage: %s %s EXECUTION_ID)", c->argv[0],
					 npos ? "expected one EXECUTION_ID" :
						"missing EXECUTION_ID",
					 c->prog, c->argv[0]);
	else if (rc == 0)
		rc = cb__cli_parse_id(c, id, pos[0]);
	free(pos);
	return rc;
}

int cb__cli_one_id(struct cli *c, long long *id)
{
	return cb__cli_one_id_with(c, id, NULL, NULL);
}

/* No arguments after the command name. */
int cb__cli_no_args(struct cli *c)
{
	if (c->argc > 1)
		return cb__cli_usage_error(c, "%s: unexpected argument '%.100s'", c->argv[0],
					   c->argv[1]);
	return 0;
}

/* ---- database ------------------------------------------------------------ */

int cb_cli_connect(PGconn **out, const char *conninfo, cb_error *err)
{
	return cb__pg_connect(out, conninfo, err);
}

/* Connect (and check the schema when @p check). @return 0, or the exit code
 * of a reported error. */
int cb__cli_open_db(struct cli *c, PGconn **conn, int check)
{
	int rc = cb_cli_connect(conn, c->db, &c->err);

	if (rc < 0)
		return cb__cli_fail(c, CB_EXIT_FAILED);
	if (check && cb_repo_schema_check(*conn, &c->err) < 0) {
		PQfinish(*conn);
		*conn = NULL;
		return cb__cli_fail(c, CB_EXIT_FAILED);
	}
	/* CBATCH_TZ is checked by the server whose tz data shows it: here, for
	 * every command that connects, so a bad one fails the same way for all. */
	if (check && (rc = cb__cli_zone_attach(c, *conn)) != 0) {
		PQfinish(*conn);
		*conn = NULL;
		return rc;
	}
	return 0;
}

/* ---- help ---------------------------------------------------------------- */

static const char global_options_help[] =
	"Global options (before or after the command):\n"
	"  --db CONNINFO  PostgreSQL connection string or URI; default $CBATCH_DB,\n"
	"                 else libpq's PG* variables (PGHOST, PGDATABASE, ...)\n"
	"  --json         print one JSON document on stdout (errors too)\n"
	"  --utc          show times in UTC (2026-12-02T05:30:00Z); default: the\n"
	"                 local zone, or the zone $CBATCH_TZ names (Europe/Berlin:\n"
	"                 the repository server's zone rules), with the offset\n"
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

/* Where the general help's summaries start, and the width help wraps at. */
#define SUMMARY_COLUMN 33
#define HELP_WIDTH     79

/*
 * Print the space-separated words of @p text (an option in brackets is one), the cursor being at column
 * @p col: each after a space, or on a new line indented @p indent columns
 * when it would pass column @p width. A word is never cut, even one longer
 * than a line. @return the column after the last word.
 */
/* The length of the unit that starts at @p p: up to a space outside
 * brackets, so that "[--lease SECONDS]" stays on one line. */
static size_t unit_length(const char *p)
{
	size_t n = 0;
	int depth = 0;

	for (; p[n] && (p[n] != ' ' || depth > 0); n++)
		depth += p[n] == '[' ? 1 : p[n] == ']' && depth > 0 ? -1 : 0;
	return n;
}

static size_t wrap_words(FILE *f, size_t col, const char *text, size_t width, size_t indent)
{
	const char *p = text;

	/* The line always holds something already (the command's name, or the
	 * previous word), so a wrap never leaves an empty line. */
	for (;;) {
		size_t n;

		while (*p == ' ')
			p++;
		if ((n = unit_length(p)) == 0)
			return col;
		if (col + 1 + n > width) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
		} else {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)n, p);
		col += n;
		p += n;
	}
}

int cb__cli_builtin_at(size_t i, const char **name, const char **synopsis, const char **summary,
		       const char **help)
{
	if (i >= NBUILTINS)
		return -1;
	*name = builtins[i].name;
	*synopsis = builtins[i].synopsis;
	*summary = builtins[i].summary;
	*help = builtins[i].help ? builtins[i].help : "";
	return 0;
}

static void print_general_help(const struct cli *c, FILE *f)
{
	size_t i, n;
	char known[300];

	fprintf(f, "usage: %s [--db CONNINFO] [--json] [--utc] COMMAND [ARGS...]\n\n", c->prog);
	fputs("Run and operate cbatch jobs; the job repository lives in PostgreSQL.\n\n"
	      "Commands:\n",
	      f);
	for (i = 0; i < NBUILTINS; i++) {
		size_t col;

		fprintf(f, "  %s", builtins[i].name);
		col = wrap_words(f, 2 + strlen(builtins[i].name), builtins[i].synopsis,
				 SUMMARY_COLUMN - 1, 6);
		/* The summary in its column, or under it when the synopsis's last
		 * line reaches into it (a word longer than the column). */
		if (col + 1 > SUMMARY_COLUMN)
			fprintf(f, "\n%*s", SUMMARY_COLUMN, "");
		else
			fprintf(f, "%*s", (int)(SUMMARY_COLUMN - col), "");
		fprintf(f, "%s\n", builtins[i].summary);
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
		cb__cli_job_list(known, sizeof(known), c->reg);
		fprintf(f, "\nJobs: %s\n", known);
	}
	fprintf(f, "\n%s\n%s\nRun '%s COMMAND --help' for a command's usage.\n",
		global_options_help, exit_codes_help, c->prog);
}

/* "targetDate:date (required), tz:string" of the job's declared parameters. */
void cb__cli_param_list(char *buf, size_t size, const cb_job *job)
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
	fprintf(f, "usage: %s %s", c->prog, b->name);
	wrap_words(f, strlen("usage:  ") + strlen(c->prog) + strlen(b->name), b->synopsis,
		   HELP_WIDTH, strlen("usage: ") + 4);
	fprintf(f, "\n\n%s.\n", b->summary);
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
	return cb__cli_usage_error(c, "unknown command '%.100s' (see '%s --help')", name, c->prog);
}

int cb__cli_cmd_help(struct cli *c)
{
	if (c->argc > 2)
		return cb__cli_usage_error(c, "help: too many arguments");
	if (c->argc == 2)
		return command_help(c, c->argv[1]);
	print_general_help(c, stdout);
	return 0;
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
			return cb__cli_out_of_memory(c);
		argv[0] = c->argv[0];
		argv[1] = (char *)"--json";
		memcpy(argv + 2, c->argv + 1, (size_t)argc * sizeof(*argv)); /* with the NULL */
		argc++;
	}
	if ((rc = cb__cli_open_db(c, &conn, 0)) != 0) {
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
		printf("cbatch %s (repository schema %d)\n", cb_version(), cb_repo_schema_target());
	else
		printf("%s (cbatch %s, repository schema %d)\n", c->prog, cb_version(),
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
		} else if (strcmp(a, "--utc") == 0) {
			c.utc = 1;
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
	cb__cli_zone_choose(c.utc, getenv("CBATCH_TZ"));

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
		rc = cb__cli_out_of_memory(&c);
	} else if (db_missing) {
		rc = cb__cli_usage_error(&c, "option '--db' needs a value");
	} else if (bad) {
		rc = cb__cli_usage_error(&c, "unknown option '%.100s' (see '%s --help')", bad,
					 c.prog);
	} else if (version) {
		print_version(&c);
		rc = 0;
	} else if (!cmd && c.json) {
		rc = cb__cli_usage_error(&c, "no command given (see '%s --help')", c.prog);
	} else if (!cmd) {
		print_general_help(&c, stderr);
		rc = CB_EXIT_USAGE;
	} else if ((b = find_builtin(cmd)) != NULL) {
		rc = b->fn(&c);
	} else if ((k = cb__registry_find_command(reg, cmd)) >= 0) {
		rc = run_extra(&c, k);
	} else {
		rc = cb__cli_usage_error(&c, "unknown command '%.100s' (see '%s --help')", cmd,
					 c.prog);
	}
	/* Output that never reached its reader is a failure (a full disk, a closed pipe). */
	if (fflush(stdout) != 0 && rc == 0) {
		fprintf(stderr, "cbatch: cannot write the output: %s\n", strerror(errno));
		rc = CB_EXIT_FAILED;
	}
	cb__cli_zone_end();
	free(c.argv);
	free(db_copy);
	return rc;
}
