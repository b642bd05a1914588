/* The command-line interface's internals: its state, the command table,
 * help, errors, arguments, output helpers (cli_format.c) and the progress
 * line (cli_progress.c). Not installed. */
#ifndef CB_CLI_INTERNAL_H
#define CB_CLI_INTERNAL_H

#include <stdio.h>
#include <jansson.h>

#include "cbatch/cli.h"
#include "cbatch/zone.h"
#include "commands.h"
#include "registry.h"

/* ---- the CLI's state (main.c), errors (exit.c), arguments (args.c) ------- */

#define CB__CLI_DEFAULT_LIMIT 20

/* One invocation: the program's registry, global options, the command's words. */
struct cli {
	cb_registry *reg;
	const char *prog;    /* basename of argv[0], for usage lines */
	const char *db;      /* --db (a private copy: argv's is scrubbed), or NULL */
	int json;            /* --json */
	int utc;             /* --utc */
	int argc;            /* the command's arguments, global options removed */
	char **argv;         /* argv[0] is the command name; NULL-terminated */
	double primary_wait; /* how long cb__cli_open_db waits for a primary (< 0: the default) */
	cb_error err;
};

/* ---- commands.c: the table of built-in commands -------------------------- */

/*
 * An option: "--lease", the name of its value ("SECONDS"; "a|b" for a choice
 * of words; NULL for a flag), for a command with sub-commands the ones that
 * take it ("add next"; NULL: the command itself), and its help, one sentence
 * that the help, the man page and the completion all print from here.
 */
struct cb__cli_option {
	const char *name;
	const char *arg;
	const char *sub;
	const char *help;
};

/* A built-in command; its name is core/commands.h's for its id. */
struct cb__cli_builtin {
	enum cb__builtin_id id;
	const char *synopsis; /* arguments after the name */
	const char *summary;
	const char *help; /* further lines of `COMMAND --help`, or NULL */
	int (*fn)(struct cli *c);
	const char *subs; /* its sub-commands, space-separated ("init check"), or NULL */
	const struct cb__cli_option *options; /* ended by a NULL name, or NULL */
};

/* The global options (before or after the command), ended by a NULL name. */
extern const struct cb__cli_option cb__cli_global_options[];

/* An exit code of the CLI: its number and what it means. */
struct cb__cli_exit_code {
	int code;
	const char *meaning;
};

/* Every exit code, ascending, ended by a NULL meaning (exit.c). */
extern const struct cb__cli_exit_code cb__cli_exit_codes[];

/* CB__NBUILTINS entries, in the order --help lists them. */
extern const struct cb__cli_builtin cb__cli_builtins[];

/* The built-in command @p name, or NULL. */
const struct cb__cli_builtin *cb__cli_builtin_find(const char *name);
/* The name of the built-in command @p b (an entry of cb__cli_builtins). */
const char *cb__cli_builtin_name(const struct cb__cli_builtin *b);
/* Non-zero if @p name is a built-in command (an extra command may not take it). */
int cb__cli_is_builtin(const char *name);
/* The i-th built-in command of the table --help prints (help: "" when it has
 * none), for the tests that keep docs/running-jobs.md and the help in step with it.
 * @return 0, or -1 past the last. */
int cb__cli_builtin_at(size_t i, const char **name, const char **synopsis, const char **summary,
		       const char **help);

/* ---- help.c, doc_man.c, doc_completion.c ---------------------------------- */

/* What `run --help` says of parameters ("Parameters: [-]NAME[:TYPE]=VALUE ..."). */
extern const char cb__cli_params_help[];
/* `help --format man`: the program's manual page, cbatch(1) for cbatch. */
void cb__cli_doc_man(const struct cli *c, FILE *f);
/* `help --format bash`: the bash completion script (function _cbatch). */
void cb__cli_doc_completion(const struct cli *c, FILE *f);

/* The general help: every command with its summary. */
void cb__cli_help_general(const struct cli *c, FILE *f);
/* `COMMAND --help`: @return 0, or 2 for an unknown command. */
int cb__cli_help_command(struct cli *c, const char *name);

/* The exit code for a negative CB_E* code; @p by_id: the command names an id. */
int cb__cli_exit_for(int code, int by_id);
/* Print c->err as the command's one-line error and return @p exitcode. */
int cb__cli_fail(struct cli *c, int exitcode);
/* Report a usage error (exit 2). The message is one line; it ends with a hint. */
int cb__cli_usage_error(struct cli *c, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/* Report that memory ran out (exit 1). */
int cb__cli_out_of_memory(struct cli *c);
/* The registered job names, comma-separated, into @p buf. */
void cb__cli_job_list(char *buf, size_t size, const cb_registry *reg);
/* Report an unknown job name (exit 2), listing the known ones. */
int cb__cli_unknown_job(struct cli *c, const char *name);
/* The declared parameters of @p job as one line, into @p buf. */
void cb__cli_param_list(char *buf, size_t size, const cb_job *job);
int cb__cli_parse_positive(long long *out, const char *s);
int cb__cli_text_arg(struct cli *c, const char *what, const char *arg);
int cb__cli_parse_id(struct cli *c, long long *out, const char *arg);
int cb__cli_split_args(struct cli *c, const char **pos, size_t *npos, const char *const *flags,
		       const char **values);
int cb__cli_one_id_with(struct cli *c, long long *id, const char *const *flags,
			const char **values);
int cb__cli_one_id(struct cli *c, long long *id);
int cb__cli_no_args(struct cli *c);
/* Whether @p word is one of the space-separated words of @p list. */
int cb__cli_word_in(const char *list, const char *word);
int cb__cli_open_db(struct cli *c, PGconn **conn, int check);
/* A daemon's environment, checked before it claims or accepts anything: the
 * database reached (no transaction pooler), its schema, CBATCH_TZ (exit 2
 * naming it), over a connection closed again. @return 0, or the exit code
 * of a reported error. */
int cb__cli_check_env(struct cli *c);

/* ---- the built-in commands: cmd_<family>.c -------------------------------- */

/* cmd_schema.c */
int cb__cli_cmd_schema(struct cli *c);
/* cmd_list.c: listings */
int cb__cli_cmd_jobs(struct cli *c);
int cb__cli_cmd_executions(struct cli *c);
int cb__cli_cmd_show(struct cli *c);
int cb__cli_cmd_locks(struct cli *c);
/* cmd_run.c */
int cb__cli_cmd_run(struct cli *c);
int cb__cli_cmd_restart(struct cli *c);
int cb__cli_cmd_check(struct cli *c);
/* cmd_control.c */
int cb__cli_cmd_stop(struct cli *c);
int cb__cli_cmd_abandon(struct cli *c);
int cb__cli_cmd_unlock(struct cli *c);
/* cmd_metrics.c */
int cb__cli_cmd_metrics(struct cli *c);

/* cmd_schedule.c */
int cb__cli_cmd_schedule(struct cli *c);
int cb__cli_cmd_scheduler(struct cli *c);
/* cmd_worker.c */
int cb__cli_cmd_worker(struct cli *c);
/* cmd_serve.c */
int cb__cli_cmd_serve(struct cli *c);
/* cmd_cleanup.c */
int cb__cli_cmd_cleanup(struct cli *c);
/* help.c */
int cb__cli_cmd_help(struct cli *c);

/* ---- cli_format.c: tables, times, JSON ----------------------------------- */

typedef struct cb__cli_table cb__cli_table;

/* A table of @p ncols columns with the given headers (copied). @p align holds
 * one character per column: 'l' (left) or 'r' (right). */
int cb__cli_table_new(cb__cli_table **out, size_t ncols, const char *const *headers,
		      const char *align);
/* Append a row of ncols cells (copied; NULL prints as "-"). @return 0 or CB_ENOMEM. */
int cb__cli_table_add(cb__cli_table *t, const char *const *cells);
/* Print with columns padded to their widest cell, each line prefixed by @p indent. */
void cb__cli_table_print(const cb__cli_table *t, FILE *f, const char *indent);
void cb__cli_table_free(cb__cli_table *t);

/* @p s for a terminal, written into @p buf: control characters escaped
 * (\n, \x1B...), invalid UTF-8 replaced, cut to fit. @return @p buf. */
const char *cb__cli_term(char *buf, size_t size, const char *s);

/* Print @p v as one JSON document and a newline. @return 0, or -1 if it
 * could not be encoded or written. */
int cb__cli_json_print(FILE *f, const json_t *v);
/* A new JSON string of @p s, with invalid UTF-8 bytes replaced by '?'; never
 * fails except for lack of memory (NULL). */
json_t *cb__cli_json_text(const char *s);

/* Member @p key of @p obj as text: a string as is, an integer in decimal,
 * a real as %g, true/false; NULL if absent or null. Written into @p buf. */
const char *cb__cli_json_get_text(const json_t *obj, const char *key, char *buf, size_t size);
/* Member @p key as an integer (a JSON integer or a decimal string); 0 if absent. */
long long cb__cli_json_get_ll(const json_t *obj, const char *key);

/* Parse an ISO-8601 / PostgreSQL timestamp ("2026-06-30T12:34:56.789+02:00",
 * space or 'T', optional fraction and offset). @p epoch receives seconds since
 * 1970 (UTC when an offset was given); @p has_offset whether one was.
 * @return 0 or -1. */
int cb__cli_parse_time(double *epoch, int *has_offset, const char *s);
/*
 * Times for people, all in one zone per invocation: ISO 8601 with the offset
 * ("2026-12-02T06:30:00+01:00", "...Z" at offset 0), in the host's local
 * zone by default, UTC with --utc, else the zone CBATCH_TZ names (the
 * repository server's tz data, as schedules use). cb__cli_zone_choose at
 * the start of an invocation, cb__cli_zone_attach once the command has its
 * connection (it checks CBATCH_TZ: unknown, a usage error naming it, exit 2;
 * the zone's rules are then read over a connection of its own, so a command
 * may format times after finishing its own), cb__cli_zone_end at its end.
 */
void cb__cli_zone_choose(int utc, const char *name);
/* @return 0, the exit code of a reported error (a bad CBATCH_TZ), or -1
 * for a database error in c->err that the caller reports (or waits out). */
int cb__cli_zone_attach(struct cli *c, PGconn *conn);
void cb__cli_zone_end(void);
/* Unix time @p t in the shown zone. */
void cb__cli_fmt_instant(char *buf, size_t size, long long t);
/* A timestamp from the repository (cb__cli_parse_time's forms) in the shown
 * zone, to the second; "-" for NULL; the input as is if it does not parse. */
void cb__cli_fmt_time(char *buf, size_t size, const char *s);
/* A timestamp as the server writes it ("2026-12-02 06:30:00.5+00") as
 * RFC 3339 ("2026-12-02T06:30:00.5+00:00"), the form --json gives times in. */
void cb__cli_rfc3339(char *buf, size_t size, const char *s);
/* The same in zone @p zone of the server reached by @p conn (a schedule's own
 * zone); in the shown zone if that zone's rules cannot be had. Each zone is
 * opened once per command (until cb__cli_zone_end), so that its rules are
 * asked for once, however many times are shown in it. */
void cb__cli_fmt_zoned(char *buf, size_t size, PGconn *conn, const char *zone, const char *s);
/* "0.42s", "12.34s", "3m05s", "2h03m", "3d04h". */
void cb__cli_fmt_duration(char *buf, size_t size, double seconds);
/* Duration between two timestamps, or "-" if either is missing or unparsable. */
void cb__cli_fmt_duration_between(char *buf, size_t size, const char *start, const char *end);
/* The parameters object of an execution as "name:type=value" words separated
 * by spaces (non-identifying ones with a leading '-'). @p out receives a new
 * malloc'd string ("" when there are none). @return 0 or CB_ENOMEM. */
int cb__cli_fmt_params(char **out, const json_t *params);

/* ---- cli_progress.c: the live progress line ------------------------------ */

typedef struct cb__cli_progress {
	FILE *f;
	const char *job; /* borrowed */
	char step[128];  /* step of the last update */
	double last;     /* monotonic time of the last update written */
	int shown;       /* a line is on the terminal */
} cb__cli_progress;

void cb__cli_progress_init(cb__cli_progress *p, FILE *f, const char *job);
/* A cb_progress_fn: @p ctx is a cb__cli_progress. Writes at most ~4 lines/s. */
void cb__cli_progress_update(void *ctx, const char *step_name, long long read_count,
			     long long write_count, double elapsed_seconds);
/* Erase the line if one is shown. */
void cb__cli_progress_clear(cb__cli_progress *p);

#endif
