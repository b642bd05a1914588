/*
 * The command line's entry point: global options (anywhere on the line),
 * then dispatch to a built-in command (the table in commands.c) or an extra
 * command of the program's registry.
 *
 * Reading order, as git's git.c and builtin/: this file; commands.c (the
 * command table: names from core/commands.h, arguments, help texts,
 * handlers); the commands by family, cmd_run.c (run, restart),
 * cmd_control.c (stop, abandon, unlock), cmd_list.c (jobs, executions,
 * show, locks), cmd_schema.c, cmd_metrics.c, cmd_schedule.c, cmd_worker.c,
 * cmd_serve.c, cmd_cleanup.c; what they share: exit.c (errors and exit
 * codes), args.c (argument helpers), connect.c (connecting), help.c,
 * doc_man.c and doc_completion.c (`help --format man|bash`),
 * cli_format.c (tables, times, JSON) and cli_progress.c (the progress line).
 * Only the public API is used (and core/text.h, the console's serve.h, the
 * registry's extra commands and the toolkit's connect), as any job program could.
 */
#include "cbatch/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/repository.h"
#include "cbatch/version.h"
#include "cli_internal.h"
#include "log.h"
#include "text.h"

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
	const char *bad = NULL, *cmd = NULL, *log_format = NULL, *bad_log_format = NULL;
	int i, help = 0, version = 0, dashdash = 0, db_missing = 0, rc;
	const struct cb__cli_builtin *b;
	long k;

	memset(&c, 0, sizeof(c));
	cb_error_clear(&c.err);
	c.primary_wait = -1;
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
		} else if (strcmp(a, "--log-format") == 0 || strncmp(a, "--log-format=", 13) == 0) {
			if (a[12] == '=')
				log_format = a + 13;
			else if (i + 1 < argc)
				log_format = argv[++i];
			else
				log_format = "";
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
	{
		/* The option wins over the environment, and is passed on through it
		 * to the processes a daemon starts. */
		const char *env = getenv("CBATCH_LOG_FORMAT");
		int f;

		if (log_format && cb__log_format_parse(&f, log_format) == 0)
			cb__log_set_format(f);
		else if (log_format)
			bad_log_format = log_format;
		else if (env && *env && cb__log_format_parse(&f, env) < 0)
			bad_log_format = env;
	}

	if (help) {
		if (!cmd) {
			cb__cli_help_general(&c, stdout);
			rc = 0;
		} else if (strcmp(cmd, "help") == 0 && c.argc > 1) {
			rc = cb__cli_help_command(&c, c.argv[1]);
		} else {
			rc = cb__cli_help_command(&c, cmd);
		}
	} else if (bad_log_format) {
		rc = cb__cli_usage_error(&c, "%s '%.40s': expected text or json",
					 log_format ? "--log-format" : "CBATCH_LOG_FORMAT",
					 bad_log_format);
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
		cb__cli_help_general(&c, stderr);
		rc = CB_EXIT_USAGE;
	} else if ((b = cb__cli_builtin_find(cmd)) != NULL) {
		rc = b->fn(&c);
	} else if ((k = cb__registry_find_command(reg, cmd)) >= 0) {
		rc = run_extra(&c, k);
	} else {
		rc = cb__cli_usage_error(&c, "unknown command '%.100s' (see '%s --help')", cmd,
					 c.prog);
	}
	/* Output that never reached its reader is a failure (a full disk, a closed pipe). */
	if (fflush(stdout) != 0 && rc == 0) {
		fprintf(stderr, "%s: cannot write the output: %s\n", c.prog, strerror(errno));
		rc = CB_EXIT_FAILED;
	}
	cb__cli_zone_end();
	free(c.argv);
	free(db_copy);
	return rc;
}
