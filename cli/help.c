/*
 * Help: the general help (every command with its summary, wrapped at 79
 * columns), `COMMAND --help` for built-in and extra commands, and the texts
 * they share (global options, exit codes, parameters).
 */
#include "cli_internal.h"
#include "serve.h"

#include <stdio.h>
#include <string.h>

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
	"5 stopped (restartable), 6 database unreachable (no connection, or lost\n"
	"beyond the outage budget; restartable).\n";

static const char params_help[] =
	"Parameters: [-]NAME[:TYPE]=VALUE\n"
	"  TYPE   string (the default), long, double or date (YYYY-MM-DD)\n"
	"  -      a leading '-' makes the parameter non-identifying: it is stored\n"
	"         with the execution but is not part of the job instance's identity\n"
	"         (a parameter the job declares non-identifying always is)\n"
	"  NAME   1..100 characters of [A-Za-z0-9_.-], starting with a letter or '_'\n"
	"  The identifying parameters name the job instance: a completed instance\n"
	"  does not run again, a failed or stopped one is restarted.\n"
	"  Examples: targetDate:date=2026-06-30  run.id:long=7  -chunk.size:long=500\n";

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

void cb__cli_help_general(const struct cli *c, FILE *f)
{
	size_t i, n;
	char known[300];

	fprintf(f, "usage: %s [--db CONNINFO] [--json] [--utc] COMMAND [ARGS...]\n\n", c->prog);
	fputs("Run and operate cbatch jobs; the job repository lives in PostgreSQL.\n\n"
	      "Commands:\n",
	      f);
	for (i = 0; i < CB__NBUILTINS; i++) {
		size_t col;

		fprintf(f, "  %s", cb__builtin_name(cb__cli_builtins[i].id));
		col = wrap_words(f, 2 + strlen(cb__builtin_name(cb__cli_builtins[i].id)),
				 cb__cli_builtins[i].synopsis, SUMMARY_COLUMN - 1, 6);
		/* The summary in its column, or under it when the synopsis's last
		 * line reaches into it (a word longer than the column). */
		if (col + 1 > SUMMARY_COLUMN)
			fprintf(f, "\n%*s", SUMMARY_COLUMN, "");
		else
			fprintf(f, "%*s", (int)(SUMMARY_COLUMN - col), "");
		fprintf(f, "%s\n", cb__cli_builtins[i].summary);
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
		w = snprintf(buf + len, size - len, "%s%s:%s%s%s", i ? ", " : "", name,
			     cb_param_type_name(type), required ? " (required)" : "",
			     cb_job_param_identifying(job, name) ? "" : " (non-identifying)");
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
		fprintf(f, "    %-24s %-7s %s%s\n", name, cb_param_type_name(type),
			required ? "required" : "optional",
			cb_job_param_identifying(job, name) ? "" : ", non-identifying");
	}
}

static void print_builtin_help(const struct cli *c, const struct cb__cli_builtin *b, FILE *f)
{
	fprintf(f, "usage: %s %s", c->prog, cb__cli_builtin_name(b));
	wrap_words(f, strlen("usage:  ") + strlen(c->prog) + strlen(cb__cli_builtin_name(b)),
		   b->synopsis, HELP_WIDTH, strlen("usage: ") + 4);
	fprintf(f, "\n\n%s.\n", b->summary);
	if (b->help)
		fprintf(f, "\n%s", b->help);
	if (strcmp(cb__cli_builtin_name(b), "serve") == 0) {
		fprintf(f, "\nRoutes (GET and HEAD read; POST acts, with the admin token; "
			   "{id} is an\nexecution id, a job or a schedule name):\n");
		cb__serve_routes_help(f);
	}
	if (strcmp(cb__cli_builtin_name(b), "run") == 0) {
		print_job_params(c, f);
		fprintf(f, "\n%s", params_help);
	}
	fprintf(f, "\n%s\n%s", global_options_help, exit_codes_help);
}

/* `COMMAND --help`: @return 0, or 2 for an unknown command. */
int cb__cli_help_command(struct cli *c, const char *name)
{
	const struct cb__cli_builtin *b = cb__cli_builtin_find(name);
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
		return cb__cli_help_command(c, c->argv[1]);
	cb__cli_help_general(c, stdout);
	return 0;
}
