/*
 * `help --format man`: the program's manual page, written from the tables
 * `--help` prints (commands.c: commands, their options and sub-commands, the
 * global options; exit.c: exit codes), so that the page cannot say other
 * than the help. The build runs `cbatch help --format man` for cbatch(1); a
 * job program's own page comes the same way and also lists its jobs and its
 * own commands.
 */
#include "cli_internal.h"
#include "serve.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cbatch/version.h"

/* @p s as roff text: backslashes and hyphens escaped, and a line never
 * starts with a control character. @p n bytes, or all of it for (size_t)-1. */
static void roff(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		if ((i == 0 || s[i - 1] == '\n') && (s[i] == '.' || s[i] == '\''))
			fputs("\\&", f);
		if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
	}
}

/* One option as a tagged paragraph: bold name, italic argument. */
static void option(FILE *f, const struct cb__cli_option *o, int show_sub)
{
	fputs(".TP\n\\fB", f);
	roff(f, o->name, (size_t)-1);
	fputs("\\fR", f);
	if (o->arg) {
		fputs(" \\fI", f);
		roff(f, o->arg, (size_t)-1);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	if (show_sub && o->sub) {
		fputs("(", f);
		roff(f, o->sub, (size_t)-1);
		fputs(") ", f);
	}
	roff(f, o->help, (size_t)-1);
	fputs(".\n", f);
}

/*
 * A help text: its lines filled into paragraphs, a blank line between
 * paragraphs, and the lines indented by two spaces (usage lines, lists) kept
 * as they are.
 */
static void text(FILE *f, const char *s)
{
	int nofill = 0;

	while (*s) {
		size_t n = strcspn(s, "\n");

		if (n == 0) {
			if (nofill)
				fputs(".fi\n", f);
			nofill = 0;
			fputs(".PP\n", f);
		} else if (strncmp(s, "  ", 2) == 0) {
			if (!nofill)
				fputs(".nf\n", f);
			nofill = 1;
			roff(f, s, n);
			fputc('\n', f);
		} else {
			if (nofill)
				fputs(".fi\n", f);
			nofill = 0;
			roff(f, s, n);
			fputc('\n', f);
		}
		s += n + (s[n] == '\n');
	}
	if (nofill)
		fputs(".fi\n", f);
}

/* @p s in upper case, as a page's title is. */
static void upper(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(toupper((unsigned char)*s), f);
}

static void commands(const struct cli *c, FILE *f)
{
	const char *name, *syn, *summary, *help;

	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; cb__cli_builtin_at(i, &name, &syn, &summary, &help) == 0; i++) {
		const struct cb__cli_builtin *b = cb__cli_builtin_find(name);

		fputs(".SS \"", f);
		roff(f, name, (size_t)-1);
		fputs("\"\n.B ", f);
		roff(f, c->prog, (size_t)-1);
		fputs("\n.B ", f);
		roff(f, name, (size_t)-1);
		fputc('\n', f);
		if (syn[0]) {
			roff(f, syn, (size_t)-1);
			fputc('\n', f);
		}
		fputs(".PP\n", f);
		/* The summary starts lower case, as in the help's column. */
		fputc(toupper((unsigned char)summary[0]), f);
		roff(f, summary + 1, (size_t)-1);
		fputs(".\n", f);
		if (help[0]) {
			fputs(".PP\n", f);
			text(f, help);
		}
		if (strcmp(name, "serve") == 0) {
			char routes[8192];
			FILE *m = fmemopen(routes, sizeof(routes), "w");

			if (m) {
				cb__serve_routes_help(m);
				fputc('\0', m);
				fclose(m);
				routes[sizeof(routes) - 1] = '\0';
				fputs(".PP\nRoutes (GET and HEAD read; POST acts, with the admin token; "
				      "{id} is an execution id, a job or a schedule name):\n",
				      f);
				text(f, routes);
			}
		}
		if (b->options && b->options[0].name) {
			fputs(".PP\nOptions:\n", f);
			for (size_t k = 0; b->options[k].name; k++)
				option(f, &b->options[k], 1);
		}
	}
}

/* A job program's own commands and jobs; cbatch has none. */
static void program(const struct cli *c, FILE *f)
{
	size_t n = cb__registry_command_count(c->reg);

	if (n > 0) {
		fputs(".SH \"COMMANDS OF THIS PROGRAM\"\n", f);
		for (size_t i = 0; i < n; i++) {
			const char *name, *summary;

			cb__registry_command_at(c->reg, i, &name, &summary, NULL, NULL);
			fputs(".TP\n.B ", f);
			roff(f, name, (size_t)-1);
			fputc('\n', f);
			roff(f, summary[0] ? summary : "(no description)", (size_t)-1);
			fputc('\n', f);
		}
	}
	if (cb_registry_count(c->reg) == 0)
		return;
	fputs(".SH JOBS\n", f);
	for (size_t i = 0; i < cb_registry_count(c->reg); i++) {
		const cb_job *job = cb_registry_at(c->reg, i);
		char params[1024];

		cb__cli_param_list(params, sizeof(params), job);
		fputs(".TP\n.B ", f);
		roff(f, cb_job_name(job), (size_t)-1);
		fputc('\n', f);
		roff(f, cb_job_description(job)[0] ? cb_job_description(job) : "(no description)",
		     (size_t)-1);
		fputs(cb_job_description(job)[0] &&
				      cb_job_description(
					      job)[strlen(cb_job_description(job)) - 1] == '.' ?
			      "\n" :
			      ".\n",
		      f);
		if (params[0]) {
			fputs("Parameters: ", f);
			roff(f, params, (size_t)-1);
			fputs(".\n", f);
		}
	}
}

void cb__cli_doc_man(const struct cli *c, FILE *f)
{
	static const char *const examples[] = {
		"--db 'host=/tmp/db dbname=batch' schema init",
		"executions --limit 5",
		"show 42",
		"stop 42",
		"schedule add nightly --cron '30 2 * * *' --tz Europe/Berlin --job ledger",
		"cleanup --older-than 30d --dry-run",
	};
	int admin = strcmp(c->prog, "cbatch") == 0;

	fputs(".\\\" Written by `", f);
	roff(f, c->prog, (size_t)-1);
	fputs(" help \\-\\-format man` from its command table; do not edit.\n.TH ", f);
	upper(f, c->prog);
	fprintf(f, " 1 \"\" \"cbatch %s\" \"cbatch manual\"\n", CB_VERSION_STRING);
	fputs(".SH NAME\n", f);
	roff(f, c->prog, (size_t)-1);
	fputs(" \\- run and operate cbatch jobs; the job repository lives in PostgreSQL\n", f);
	fputs(".SH SYNOPSIS\n.B ", f);
	roff(f, c->prog, (size_t)-1);
	fputs("\n[\\fB\\-\\-db\\fR \\fICONNINFO\\fR] [\\fB\\-\\-json\\fR] [\\fB\\-\\-utc\\fR]"
	      " \\fICOMMAND\\fR [\\fIARGS\\fR...]\n.br\n.B ",
	      f);
	roff(f, c->prog, (size_t)-1);
	fputs("\n\\fICOMMAND\\fR \\fB\\-\\-help\\fR\n", f);
	fputs(".SH DESCRIPTION\n", f);
	if (admin)
		fputs(".B cbatch\nis the command line of cbatch, a chunked batch-processing framework "
		      "whose job repository lives in PostgreSQL, with no jobs of its own: it creates "
		      "the repository's schema, lists, shows, stops and abandons executions of any "
		      "job, handles locks, schedules and old history, and runs the operator console. "
		      "A job is run, restarted and checked by the program that registers it, which "
		      "offers the same commands (see\n.BR cbatch\\-job (7)).\n",
		      f);
	else
		fprintf(f,
			".B %s\nis a job program built on cbatch: the commands of cbatch's command "
			"line, for the jobs this program registers (see JOBS).\n",
			c->prog);
	fputs(".PP\nGlobal options go before or after the command; every other word after the "
	      "command is the command's. Each command's usage is also printed by\n.IB "
	      "COMMAND \" \\-\\-help\".\n",
	      f);
	commands(c, f);
	program(c, f);
	fputs(".SH \"GLOBAL OPTIONS\"\n", f);
	for (size_t k = 0; cb__cli_global_options[k].name; k++)
		option(f, &cb__cli_global_options[k], 0);
	fputs(".SH PARAMETERS\n", f);
	text(f, cb__cli_params_help);
	fputs(".SH \"EXIT STATUS\"\n", f);
	for (size_t k = 0; cb__cli_exit_codes[k].meaning; k++) {
		fprintf(f, ".TP\n.B %d\n", cb__cli_exit_codes[k].code);
		roff(f, cb__cli_exit_codes[k].meaning, (size_t)-1);
		fputs(".\n", f);
	}
	fputs(".SH ENVIRONMENT\n"
	      ".TP\n.B CBATCH_DB\nThe connection string or URI when \\fB\\-\\-db\\fR is not "
	      "given.\n"
	      ".TP\n.B CBATCH_TZ\nThe zone times are shown in, a name the repository server's tz "
	      "data knows (\\fB\\-\\-utc\\fR wins over it).\n"
	      ".TP\n.BR PGHOST \", \" PGPORT \", \" PGDATABASE \", \" PGUSER \", \" PGPASSFILE "
	      "\", \" PGSERVICE \", ...\"\nlibpq's own variables, used when neither "
	      "\\fB\\-\\-db\\fR nor CBATCH_DB is set.\n"
	      ".TP\n.B PGOPTIONS\nSession settings passed to the server, as libpq does.\n"
	      ".TP\n.B TZ\nThe local zone times are shown in when neither \\fB\\-\\-utc\\fR nor "
	      "CBATCH_TZ is given.\n"
	      ".SH FILES\n"
	      ".TP\n.I ~/.pgpass\nPasswords, as libpq reads them (keep them out of "
	      "\\fB\\-\\-db\\fR).\n"
	      ".TP\n.I ~/.pg_service.conf\nConnection services (\\fB\\-\\-db service=NAME\\fR).\n"
	      ".TP\n.I /usr/share/bash\\-completion/completions/cbatch\nBash completion of "
	      "commands, options, job and schedule names and execution ids; a job program "
	      "enables it with \\fBcomplete \\-F _cbatch\\fR \\fIPROGRAM\\fR.\n"
	      ".SH EXAMPLES\n.nf\n",
	      f);
	for (size_t k = 0; k < sizeof(examples) / sizeof(examples[0]); k++) {
		roff(f, c->prog, (size_t)-1);
		fputc(' ', f);
		roff(f, examples[k], (size_t)-1);
		fputc('\n', f);
	}
	fputs(".fi\n.SH \"SEE ALSO\"\n.BR cbatch\\-job (7),\n.BR psql (1),\n.BR crontab (5)\n", f);
}
