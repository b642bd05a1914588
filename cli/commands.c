/*
 * The table of built-in commands: for each, its arguments, its one-line
 * summary, the further lines of `COMMAND --help` and its handler, as git's
 * git.c keeps `commands[]` apart from the commands' bodies (cmd_*.c here).
 * The names are core/commands.h's (the registry refuses them for extra
 * commands); the table names each by its id, in `--help`'s order.
 */
#include "cli_internal.h"

#include <string.h>

/* ---- the options of each command, as `COMMAND --help` lists them ---------- */

static const struct cb__cli_option jobs_options[] = {
	{ "--names", NULL, NULL, "only the job names, one a line (for scripts and completion)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option run_options[] = {
	{ "--next", NULL, NULL,
	  "apply the job's incrementer (default: the job's largest run.id + 1) to start a new "
	  "instance on purpose" },
	{ "--lease", "SECONDS", NULL,
	  "lease of the execution lock for this run (default: the job's, 60s); a heartbeat "
	  "extends it while the job runs" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option restart_options[] = {
	{ "--lease", "SECONDS", NULL,
	  "lease of the execution lock for this run (default: the job's)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option executions_options[] = {
	{ "--limit", "N", NULL, "show at most N executions (default 20)" },
	{ "--ids", NULL, NULL, "only the execution ids, one a line (for scripts and completion)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option show_options[] = {
	{ "--log", NULL, NULL,
	  "what the run printed (stdout and stderr), as the scheduler node or the console that "
	  "launched it kept it: its last 64 KiB, rewritten every few seconds while it runs (a run "
	  "started from a shell has none); as JSON: captured, log, bytes_dropped, bytes_total" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option locks_options[] = {
	{ "--all", NULL, NULL, "every lock row the repository keeps (history)" },
	{ "--limit", "N", NULL, "at most N locks per page (default 100, at most 1000)" },
	{ "--after", "NAME", NULL,
	  "the page after lock NAME (printed as 'more:' after a full page)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option unlock_options[] = {
	{ "--force", NULL, NULL, "required: say that the holder is to lose the lock" },
	{ "--reason", "TEXT", NULL, "why, recorded in the audit with who (default: none)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option worker_options[] = {
	{ "--job", "NAME", NULL, "work only for this job (repeatable)" },
	{ "--threads", "K", NULL,
	  "partitions run at once, each on its own connection (default 1)" },
	{ "--exit-when-idle", "SECONDS", NULL,
	  "exit after this long without a partition (default: run until signalled)" },
	{ "--lease", "SECONDS", NULL, "lease of a claimed partition (default: the job's lease)" },
	{ "--quiet", NULL, NULL, "no line per claimed and finished partition" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option schedule_options[] = {
	{ "--cron", "EXPR", "add next", "the cron expression (EXPR above)" },
	{ "--tz", "ZONE", "add next", "the zone the expression means (default UTC)" },
	{ "--job", "JOB", "add", "the job to run" },
	{ "--misfire", "run-once|skip", "add", "what a missed instant does (default run-once)" },
	{ "--misfire-grace", "SECONDS", "add", "how late an instant may fire (default 60)" },
	{ "--paused", NULL, "add", "add it paused (resume starts it)" },
	{ "--overlap", "skip|queue|allow", "add",
	  "an instant due while an earlier firing runs (default skip)" },
	{ "--recover", "restart|leave", "add",
	  "a run a dead node or process left unfinished (default restart)" },
	{ "--recover-attempts", "N", "add", "restarts at most (default 3)" },
	{ "--recover-delay", "SECONDS", "add", "wait before a restart (default 10)" },
	{ "--same-instance", NULL, "add", "allow templates that ignore the instant" },
	{ "--names", NULL, "list",
	  "only the schedule names, one a line (for scripts and completion)" },
	{ "--count", "N", "next", "how many instants (default 5)" },
	{ "--limit", "N", "history", "at most N firings (default 50)" },
	{ "--from", "TIME", "backfill", "the first past instant to backfill (included)" },
	{ "--to", "TIME", "backfill", "the last past instant to backfill (included)" },
	{ "--max", "N", "backfill",
	  "refuse a range of more instants than this (default 1000, at most 100000)" },
	{ "--parallel", "N", "backfill",
	  "backfill firings run at once (default 1; above 1 only with overlap allow)" },
	{ "--cancel", NULL, "backfill", "remove the backfill firings still waiting" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option scheduler_options[] = {
	{ "--lease", "SECONDS", NULL,
	  "how long other nodes trust this one's heartbeat before they report its open firings "
	  "(default 30)" },
	{ "--max-running", "N", NULL,
	  "jobs run at once by this node (default 8); beyond it instants are left to other nodes" },
	{ "--runners", "N", NULL,
	  "run firings in N long-lived processes that keep their database connections, at most "
	  "N at once (instead of --max-running); a firing then costs its statements, not a new "
	  "process and two new server backends" },
	{ "--exit-after", "SECONDS", NULL, "stop by itself after this long" },
	{ "--verbose", NULL, NULL, "also log instants other nodes claimed" },
	{ "--quiet", NULL, NULL, "no line per firing" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option serve_options[] = {
	{ "--listen", "ADDR:PORT", NULL, "where to listen (default 127.0.0.1:8080)" },
	{ "--admin-token-file", "PATH", NULL, "enable actions for requests with this token" },
	{ "--pool", "N", NULL,
	  "repository connections shared by requests (default 4, at most 64)" },
	{ "--allowed-host", "NAME[:PORT]", NULL,
	  "also answer to this Host (a reverse proxy's name; any port unless given); repeatable" },
	{ "--client-connections", "N", NULL,
	  "connections one client address may hold (default 64, at most 500; a proxy is one)" },
	{ "--launch-wait", "SECONDS", NULL,
	  "how long a launch or restart waits for its process to record its execution (201) or "
	  "to exit (its own message, 409/400/503) before answering 202 (default 8, at most 120)" },
	{ "--snapshot-interval", "SECONDS", NULL,
	  "how long /metrics and /api/v1/jobs reuse what they computed, however many clients ask "
	  "(default 5, at most 300; 0: whenever asked, one computation at a time)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option cleanup_options[] = {
	{ "--older-than", "DURATION", NULL, "required: a positive integer and s, m, h or d" },
	{ "--keep-last", "N", NULL, "also keep the newest N executions of each job" },
	{ "--dry-run", NULL, NULL, "count what would be removed; remove nothing" },
	{ "--batch", "N", NULL, "executions per transaction (default 1000)" },
	{ NULL, NULL, NULL, NULL },
};

static const struct cb__cli_option help_options[] = {
	{ "--format", "man|bash", NULL,
	  "print this program's manual page (man) or its bash completion script (bash)" },
	{ NULL, NULL, NULL, NULL },
};

const struct cb__cli_option cb__cli_global_options[] = {
	{ "--db", "CONNINFO", NULL,
	  "PostgreSQL connection string or URI; default $CBATCH_DB, else libpq's PG* variables "
	  "(PGHOST, PGDATABASE, ...)" },
	{ "--json", NULL, NULL, "print one JSON document on stdout (errors too)" },
	{ "--utc", NULL, NULL,
	  "show times in UTC (2026-12-02T05:30:00Z); default: the local zone, or the zone "
	  "$CBATCH_TZ names (Europe/Berlin: the repository server's zone rules), with the offset" },
	{ "--log-format", "text|json", NULL,
	  "how the daemons (scheduler, worker, serve) and runs log on stderr: text lines, or one "
	  "JSON object per line (default: $CBATCH_LOG_FORMAT, else text); passed on to the runs "
	  "they start" },
	{ "--help", NULL, NULL, "show help and exit (also -h)" },
	{ "--version", NULL, NULL, "show the version and exit" },
	{ NULL, NULL, NULL, NULL },
};

const struct cb__cli_builtin cb__cli_builtins[] = {
	{ CB__CMD_schema, "init|check",
	  "create or upgrade (init) or verify (check) the repository schema",
	  "init is safe to run any number of times, also concurrently: it applies only\n"
	  "the migrations the database lacks and prints the version before and after.\n",
	  cb__cli_cmd_schema, "init check", NULL },
	{ CB__CMD_jobs, "[--names]", "list the jobs registered in this program",
	  "LOCK is the job's lock scope, what its lock keeps apart: instance (the job\n"
	  "and its identifying parameters, the default), job (the job alone: no two of\n"
	  "its instances ever run at once) or custom (a template over some parameters).\n"
	  "With --json: lock_scope and lock_template per job.\n",
	  cb__cli_cmd_jobs, NULL, jobs_options },
	{ CB__CMD_run, "JOB [PARAM ...] [--next] [--lease SECONDS]",
	  "launch a job (or restart its failed instance)",
	  "Creates the job instance named by JOB and its identifying parameters (or\n"
	  "restarts it if it failed or stopped), takes its lock and runs the steps.\n"
	  "Parameters are all checked before anything is written. SIGINT/SIGTERM stop\n"
	  "the job after its current chunk commits (exit 5; restartable).\n\n"
	  "A held lock is a skip (exit 4), recorded in batch_lock_audit. An execution\n"
	  "of the instance whose owner died (lease expired) is marked FAILED and\n"
	  "restarted.\n",
	  cb__cli_cmd_run, NULL, run_options },
	{ CB__CMD_check, "JOB [PARAM ...]",
	  "check a job's configuration against the database, writing nothing",
	  "The preflight every `run` makes before it records anything: the parameters,\n"
	  "then each chunk step's reader and writers against the catalog (tables,\n"
	  "columns, types, ON CONFLICT keys, modes, lossy assignments), in a read-only\n"
	  "transaction that is rolled back. Prints OK, or each problem naming the step,\n"
	  "table and column (exit 2); notes say what was not checked (a tasklet step,\n"
	  "a build that needs what only a run has). No instance, execution or lock.\n"
	  "With --json: {\"ok\", \"problems\": [{\"step\", \"message\"}], \"notes\": [...]}.\n",
	  cb__cli_cmd_check, NULL, NULL },
	{ CB__CMD_restart, "EXECUTION_ID [--lease SECONDS]",
	  "restart a failed or stopped execution",
	  "Starts a new execution of the same instance with the same parameters:\n"
	  "completed steps are skipped and the failed step resumes from its last\n"
	  "committed chunk. The job must be registered in this program. An execution\n"
	  "whose owner died (its lock lease expired) can be restarted too.\n",
	  cb__cli_cmd_restart, NULL, restart_options },
	{ CB__CMD_stop, "EXECUTION_ID", "ask a running execution to stop after its current chunk",
	  "STARTING or STARTED becomes STOPPING; the running process ends as STOPPED\n"
	  "(restartable) after its current chunk commits, or before its first step.\n"
	  "An execution whose owner was lost (lease expired) ends STOPPED at once.\n",
	  cb__cli_cmd_stop, NULL, NULL },
	{ CB__CMD_abandon, "EXECUTION_ID",
	  "mark a failed or stopped execution as never to be restarted",
	  "ABANDONED is final: the instance cannot be restarted; run it again with\n"
	  "other identifying parameters (or --next). Only the newest execution of an\n"
	  "instance can be abandoned: FAILED, STOPPED, or running with its owner lost\n"
	  "(lease expired; its running steps end FAILED). A live one is refused.\n",
	  cb__cli_cmd_abandon, NULL, NULL },
	{ CB__CMD_executions, "[JOB] [--limit N] [--ids]", "list executions, newest first", NULL,
	  cb__cli_cmd_executions, NULL, executions_options },
	{ CB__CMD_show, "EXECUTION_ID [--log]", "show an execution, its parameters and its steps",
	  "lock: the lock it ran under and its job's lock scope in this program (see\n"
	  "`jobs --help`); with --json lock_name and lock_scope (null when this\n"
	  "program lacks the job).\n",
	  cb__cli_cmd_show, NULL, show_options },
	{ CB__CMD_locks, "[--all] [--limit N] [--after NAME]",
	  "list execution locks with owner, fencing token and lease left",
	  "Shows the held locks and those released or taken within the last hour,\n"
	  "by name in natural order (ledger:2 before ledger:10), a page at a time.\n",
	  cb__cli_cmd_locks, NULL, locks_options },
	{ CB__CMD_unlock, "LOCK_NAME --force [--reason TEXT]",
	  "release a lock by hand (recorded with who and why)",
	  "The holder's database session is terminated (its open chunk rolls back;\n"
	  "this needs the same role, superuser or pg_signal_backend), and if it still\n"
	  "runs it is fenced off and fails. The release is recorded in\n"
	  "batch_lock_audit as FORCE_UNLOCKED.\n",
	  cb__cli_cmd_unlock, NULL, unlock_options },
	{ CB__CMD_metrics, "", "print repository metrics in Prometheus text format",
	  "With --json: {\"metrics\": [{\"name\", \"help\", \"type\", \"labels\", \"value\"}]},\n"
	  "one element per series.\n",
	  cb__cli_cmd_metrics, NULL, NULL },
	{ CB__CMD_worker,
	  "[--job NAME]... [--threads K] [--exit-when-idle SECONDS] [--lease SECONDS] [--quiet]",
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
	  "stopped, handed back.\n",
	  cb__cli_cmd_worker, NULL, worker_options },
	{ CB__CMD_schedule, "add|list|show|pause|resume|remove|next|history|backfill ...",
	  "keep cron schedules of jobs in the repository",
	  "  schedule add NAME --cron EXPR [--tz ZONE] --job JOB [PARAM-TEMPLATE ...]\n"
	  "               [--misfire run-once|skip] [--misfire-grace SECONDS] [--paused]\n"
	  "               [--overlap skip|queue|allow] [--recover restart|leave]\n"
	  "               [--recover-attempts N] [--recover-delay SECONDS]\n"
	  "               [--same-instance]  (templates that ignore the instant)\n"
	  "  schedule list [--names] | show NAME | pause NAME | resume NAME | remove NAME\n"
	  "  schedule next NAME|--cron EXPR [--tz ZONE] [--count N]\n"
	  "  schedule history NAME [--limit N]\n"
	  "  schedule backfill NAME --from TIME --to TIME [--max N] [--parallel N]\n"
	  "  schedule backfill NAME --cancel\n\n"
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
	  "at most N times (default 3); leave: never.\n"
	  "Backfill: one firing (kind BACKFILL) per past instant from --from to --to\n"
	  "(both included; TIME is 2026-11-01, 2026-11-01T06:00 in the schedule's\n"
	  "zone, or with an offset), at most --max (default 1000), each with its own\n"
	  "instant's parameters; an instant that has a firing keeps it. Scheduler\n"
	  "nodes run them oldest first, one at a time (overlap skip or queue) or\n"
	  "--parallel N at once (allow). --cancel removes those still waiting.\n",
	  cb__cli_cmd_schedule, "add list show pause resume remove next history backfill",
	  schedule_options },
	{ CB__CMD_scheduler,
	  "[--lease SECONDS] [--max-running N] [--runners N] [--exit-after SECONDS] [--verbose|--quiet]",
	  "fire due schedules, each fire instant once across all scheduler nodes",
	  "Start one on every host you like: each fire instant is claimed by one node\n"
	  "in one transaction (unique per schedule and instant, in the database's\n"
	  "time) and run as a child process `run JOB PARAMS...`; the other nodes\n"
	  "lose the claim and record nothing (counted: metric\n"
	  "cbatch_schedule_claim_lost_total). A lost repository\n"
	  "connection is retried with backoff and nothing fires meanwhile.\n"
	  "A schedule's firings do not overlap unless its --overlap says so, and a\n"
	  "run left unfinished by a dead node or process is restarted by a surviving\n"
	  "node (its --recover); see `schedule`.\n"
	  "SIGINT/SIGTERM: no new firings; running jobs are asked to stop after their\n"
	  "chunk (STOPPED, restartable) and waited for.\n",
	  cb__cli_cmd_scheduler, NULL, scheduler_options },
	{ CB__CMD_serve,
	  "[--listen ADDR:PORT] [--admin-token-file PATH] [--pool N] [--allowed-host NAME[:PORT]] "
	  "[--client-connections N] [--launch-wait SECONDS] [--snapshot-interval SECONDS]",
	  "the operator console: dashboard, JSON API, /metrics, health probes",
	  "Listens on 127.0.0.1:8080 unless --listen names an IPv4 address, an\n"
	  "[IPv6] address or localhost (port 0: any free port); prints the address.\n"
	  "GET / is the dashboard, /metrics the `metrics` text; the routes are below.\n"
	  "Answers only requests whose Host names it: the --listen address (for\n"
	  "loopback also localhost, 127.0.0.1, [::1]) with its port, or an\n"
	  "--allowed-host; others get 421. A request head must arrive within 10 s.\n"
	  "Read-only unless an admin token is given (a file of this user's that\n"
	  "only it may read or write, not a symbolic link); then the POST routes\n"
	  "(stop, abandon, restart, launch, pause, resume, fire now, unlock with\n"
	  "{\"reason\": \"...\"}) act, for a request with\n"
	  "\"Authorization: Bearer TOKEN\" from no other site's page.\n"
	  "SIGTERM/SIGINT: stops accepting, finishes the requests in flight and\n"
	  "exits 0.\n",
	  cb__cli_cmd_serve, NULL, serve_options },
	{ CB__CMD_cleanup, "--older-than DURATION [--keep-last N] [--dry-run] [--batch N]",
	  "remove old executions with their steps, contexts, parameters and audit",
	  "Removes job executions that ended more than DURATION ago (30d, 12h, 90m,\n"
	  "3600s; by the database's clock) with their step executions (partitions too),\n"
	  "contexts, parameters and run logs, their lock audit rows (and audit rows older than\n"
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
	  "run; prints each batch on stderr and the rows removed per table.\n",
	  cb__cli_cmd_cleanup, NULL, cleanup_options },
	{ CB__CMD_help, "[COMMAND] [--format man|bash]", "show help for a command", NULL,
	  cb__cli_cmd_help, NULL, help_options },
};

/* One entry per name of core/commands.h. */
_Static_assert(sizeof(cb__cli_builtins) / sizeof(cb__cli_builtins[0]) == CB__NBUILTINS,
	       "the command table and core/commands.h list the same commands");

const struct cb__cli_builtin *cb__cli_builtin_find(const char *name)
{
	int id = cb__builtin_find(name);

	for (size_t i = 0; id >= 0 && i < CB__NBUILTINS; i++)
		if ((int)cb__cli_builtins[i].id == id)
			return &cb__cli_builtins[i];
	return NULL;
}

const char *cb__cli_builtin_name(const struct cb__cli_builtin *b)
{
	return cb__builtin_name(b->id);
}

int cb__cli_is_builtin(const char *name)
{
	return cb__builtin_find(name) >= 0;
}

int cb__cli_builtin_at(size_t i, const char **name, const char **synopsis, const char **summary,
		       const char **help)
{
	if (i >= CB__NBUILTINS)
		return -1;
	*name = cb__builtin_name(cb__cli_builtins[i].id);
	*synopsis = cb__cli_builtins[i].synopsis;
	*summary = cb__cli_builtins[i].summary;
	*help = cb__cli_builtins[i].help ? cb__cli_builtins[i].help : "";
	return 0;
}
