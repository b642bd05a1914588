/*
 * Help: the general help (every command with its summary, wrapped at 79
 * columns), `COMMAND --help` for built-in and extra commands, and the texts
 * they share (global options, exit codes, parameters).
 */
#include "cli_internal.h"
#include "serve.h"

#include <stdio.h>
#include <string.h>

const char cb__cli_params_help[] =
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

/*
 * Print @p opts (for sub-command @p sub only, when not NULL) as "  --name ARG"
 * with each help wrapped in a column of its own, under @p title.
 */
static void print_options(FILE *f, const char *title, const struct cb__cli_option *opts,
			  const char *sub)
{
	size_t i, w = 0;

	if (!opts || !opts[0].name)
		return;
	for (i = 0; opts[i].name; i++) {
		size_t n = strlen(opts[i].name) + (opts[i].arg ? 1 + strlen(opts[i].arg) : 0);

		if ((!sub || !opts[i].sub || cb__cli_word_in(opts[i].sub, sub)) && n > w)
			w = n;
	}
	/* An option too long for the column has its help on the next line. */
	if (w > 24)
		w = 24;
	fprintf(f, "%s:\n", title);
	for (i = 0; opts[i].name; i++) {
		const struct cb__cli_option *o = &opts[i];
		size_t n = strlen(o->name) + (o->arg ? 1 + strlen(o->arg) : 0);

		if (sub && o->sub && !cb__cli_word_in(o->sub, sub))
			continue;
		fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		if (n > w)
			fprintf(f, "\n%*s", (int)(w + 3), "");
		else
			fprintf(f, "%*s", (int)(w - n + 1), "");
		if (o->sub && !sub) {
			fprintf(f, " (%s)", o->sub);
			wrap_words(f, w + 6 + strlen(o->sub), o->help, HELP_WIDTH, w + 4);
		} else {
			wrap_words(f, w + 3, o->help, HELP_WIDTH, w + 4);
		}
		fputc('\n', f);
	}
}

/* "Exit codes: 0 completed, 1 failed, ..." from the table, wrapped. */
static void print_exit_codes(FILE *f)
{
	size_t col = strlen("Exit codes:");

	fputs("Exit codes:", f);
	for (size_t i = 0; cb__cli_exit_codes[i].meaning; i++) {
		char item[200];

		snprintf(item, sizeof(item), "%d", cb__cli_exit_codes[i].code);
		col = wrap_words(f, col, item, HELP_WIDTH, 0);
		snprintf(item, sizeof(item), "%s%s", cb__cli_exit_codes[i].meaning,
			 cb__cli_exit_codes[i + 1].meaning ? "," : ".");
		col = wrap_words(f, col, item, HELP_WIDTH, 0);
	}
	fputc('\n', f);
}

/* The text every help ends with: global options and exit codes. */
static void print_common(FILE *f)
{
	print_options(f, "Global options (before or after the command)", cb__cli_global_options,
		      NULL);
	fputc('\n', f);
	print_exit_codes(f);
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
	fputc('\n', f);
	print_common(f);
	fprintf(f, "\nRun '%s COMMAND --help' for a command's usage.\n", c->prog);
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
	if (b->options && b->options[0].name) {
		fputc('\n', f);
		print_options(f, "Options", b->options, NULL);
	}
	if (strcmp(cb__cli_builtin_name(b), "serve") == 0) {
		fprintf(f, "\nRoutes (GET and HEAD read; POST acts, with the admin token; "
			   "{id} is an\nexecution id, a job or a schedule name):\n");
		cb__serve_routes_help(f);
	}
	if (strcmp(cb__cli_builtin_name(b), "run") == 0) {
		print_job_params(c, f);
		fprintf(f, "\n%s", cb__cli_params_help);
	}
	fputc('\n', f);
	print_common(f);
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
		       "--db, $CBATCH_DB or libpq's PG* variables, and its own arguments.\n\n",
		       c->prog, name, summary[0] ? summary : "(no description)");
		print_options(stdout, "Global options (before or after the command)",
			      cb__cli_global_options, NULL);
		return 0;
	}
	return cb__cli_usage_error(c, "unknown command '%.100s' (see '%s --help')", name, c->prog);
}

int cb__cli_cmd_help(struct cli *c)
{
	static const char *const flags[] = { "--format=", NULL };
	const char *values[1] = { NULL };
	const char *pos[3];
	size_t npos;
	int rc;

	if (c->argc > 4)
		return cb__cli_usage_error(c, "help: too many arguments");
	if ((rc = cb__cli_split_args(c, pos, &npos, flags, values)) != 0)
		return rc;
	if (npos > 1)
		return cb__cli_usage_error(c, "help: too many arguments");
	if (npos == 1 && values[0])
		return cb__cli_usage_error(c, "help: --format documents the whole program, not "
					      "one command");
	if (values[0] && strcmp(values[0], "man") == 0) {
		cb__cli_doc_man(c, stdout);
		return 0;
	}
	if (values[0] && strcmp(values[0], "bash") == 0) {
		cb__cli_doc_completion(c, stdout);
		return 0;
	}
	if (values[0])
		return cb__cli_usage_error(c, "help: --format must be man or bash, not '%.100s'",
					   values[0]);
	if (npos == 1)
		return cb__cli_help_command(c, pos[0]);
	cb__cli_help_general(c, stdout);
	return 0;
}
