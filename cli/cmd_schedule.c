/* `schedule add|list|show|pause|resume|remove|next|history|backfill` and `scheduler`:
 * cron schedules kept in the repository (sql/004_schedules.sql), fired by
 * scheduler nodes (framework/scheduler.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch/cli.h"
#include "cbatch/job.h"
#include "cbatch/schedule.h"
#include "cli_internal.h"
#include "text.h"

/* A sub-command's view: argv[0] is "schedule <sub>" in messages. */
static int sub_usage(struct cli *c, const char *sub, const char *usage, const char *what)
{
	return cb__cli_usage_error(c, "schedule %s: %s (usage: %s schedule %s %s)", sub, what,
				   c->prog, sub, usage);
}

/* Split the sub-command's arguments (after "schedule SUB"). */
static int split(struct cli *c, const char ***pos, size_t *npos, const char *const *flags,
		 const char **values)
{
	struct cli sub = *c;
	int rc;

	*pos = calloc((size_t)c->argc + 1, sizeof(**pos));
	if (!*pos)
		return cb__cli_out_of_memory(c);
	sub.argc = c->argc - 1;
	sub.argv = c->argv + 1;
	rc = cb__cli_split_args(&sub, *pos, npos, flags, values);
	c->err = sub.err;
	return rc;
}

/* ---- add ----------------------------------------------------------------- */

static int cmd_add(struct cli *c, PGconn *conn)
{
	static const char *const flags[] = { "--cron=",
					     "--tz=",
					     "--job=",
					     "--misfire=",
					     "--misfire-grace=",
					     "--paused",
					     "--overlap=",
					     "--recover=",
					     "--recover-attempts=",
					     "--recover-delay=",
					     "--same-instance",
					     NULL };
	const char *values[12] = { 0 }, **pos = NULL;
	static const char usage[] =
		"NAME --cron EXPR [--tz ZONE] --job JOB [PARAM-TEMPLATE ...] "
		"[--misfire run-once|skip] [--misfire-grace SECONDS] [--paused] "
		"[--overlap skip|queue|allow] [--recover restart|leave] [--recover-attempts N] "
		"[--recover-delay SECONDS] [--same-instance]";
	long long attempts = 3, delay = 10;
	size_t npos = 0;
	cb_schedule_def def = CB_SCHEDULE_DEF_INIT;
	cb_schedule_added added;
	const cb_job *job;
	long long grace = 60;
	int rc;

	if ((rc = split(c, &pos, &npos, flags, values)) != 0)
		goto done;
	if (npos < 1) {
		rc = sub_usage(c, "add", usage, "missing NAME");
		goto done;
	}
	if (!values[0] || !values[2]) {
		rc = sub_usage(c, "add", usage,
			       values[0] ? "--job is required" : "--cron is required");
		goto done;
	}
	if (!(job = cb_registry_find(c->reg, values[2]))) {
		rc = cb__cli_unknown_job(c, values[2]);
		goto done;
	}
	if (values[3] && strcmp(values[3], "run-once") != 0 && strcmp(values[3], "skip") != 0) {
		rc = sub_usage(c, "add", usage, "--misfire must be run-once or skip");
		goto done;
	}
	if (values[4] && (cb__cli_parse_positive(&grace, values[4]) < 0 || grace > 86400)) {
		rc = sub_usage(c, "add", usage, "--misfire-grace must be 1 to 86400 seconds");
		goto done;
	}
	if (values[6] && strcmp(values[6], "skip") != 0 && strcmp(values[6], "queue") != 0 &&
	    strcmp(values[6], "allow") != 0) {
		rc = sub_usage(c, "add", usage, "--overlap must be skip, queue or allow");
		goto done;
	}
	if (values[7] && strcmp(values[7], "restart") != 0 && strcmp(values[7], "leave") != 0) {
		rc = sub_usage(c, "add", usage, "--recover must be restart or leave");
		goto done;
	}
	if (values[8] && (cb__cli_parse_positive(&attempts, values[8]) < 0 || attempts > 100)) {
		rc = sub_usage(c, "add", usage, "--recover-attempts must be 1 to 100");
		goto done;
	}
	if (values[9] && (cb__cli_parse_positive(&delay, values[9]) < 0 || delay > 86400)) {
		rc = sub_usage(c, "add", usage, "--recover-delay must be 1 to 86400 seconds");
		goto done;
	}
	def.overlap = !values[6] || strcmp(values[6], "skip") == 0 ? CB_OVERLAP_SKIP :
		      strcmp(values[6], "queue") == 0              ? CB_OVERLAP_QUEUE :
								     CB_OVERLAP_ALLOW;
	def.recover_leave = values[7] && strcmp(values[7], "leave") == 0;
	def.recover_attempts = (int)attempts;
	def.recover_delay_seconds = (int)delay;
	def.name = pos[0];
	def.cron = values[0];
	def.time_zone = values[1];
	def.job_name = values[2];
	def.parameters = pos + 1;
	def.nparameters = npos - 1;
	def.skip_misfires = values[3] && strcmp(values[3], "skip") == 0;
	def.misfire_grace_seconds = (int)grace;
	def.paused = values[5] != NULL;
	def.same_instance = values[10] != NULL;
	if (cb_schedule_add(&added, conn, &def, job, &c->err) < 0) {
		rc = cb__cli_fail(c, c->err.code == CB_EINVAL ? CB_EXIT_USAGE : CB_EXIT_FAILED);
		goto done;
	}
	if (c->json) {
		json_t *doc =
			json_pack("{s:I,s:s,s:s,s:I}", "schedule_id", (json_int_t)added.schedule_id,
				  "name", def.name, "next_fire_time", added.first_fire_text,
				  "next_fire_epoch", (json_int_t)added.first_fire);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else {
		printf("schedule '%s' added: '%s' in %s runs %s; next at %s%s\n", def.name,
		       def.cron, def.time_zone ? def.time_zone : "UTC", def.job_name,
		       added.first_fire_text, def.paused ? " (paused)" : "");
	}
	if (added.same_instance)
		fprintf(stderr, "schedule add: note: every firing is the same job instance "
				"(--same-instance), which runs to completion only once\n");
	rc = 0;
done:
	free(pos);
	return rc;
}

/* ---- list, show, history ------------------------------------------------- */

static const char *jtext(const json_t *o, const char *key, char *buf, size_t size)
{
	const char *t = cb__cli_json_get_text(o, key, buf, size);

	return t ? t : "-";
}

static int cmd_list(struct cli *c, PGconn *conn)
{
	static const char *const headers[] = { "NAME",  "CRON",    "ZONE", "JOB",
					       "STATE", "OVERLAP", "NEXT", "LAST FIRING" };
	json_t *arr = NULL;
	cb__cli_table *t = NULL;
	int rc;

	if (c->argc > 3 || (c->argc == 3 && strcmp(c->argv[2], "--names") != 0))
		return sub_usage(c, "list", "[--names]", "takes no arguments but --names");
	if (cb_schedule_list(&arr, conn, NULL, &c->err) < 0)
		return cb__cli_fail(c, CB_EXIT_FAILED);
	if (c->argc == 3 && !c->json) {
		/* --names: what a script or the completion reads, nothing else. */
		for (size_t i = 0; i < json_array_size(arr); i++) {
			char b[300];

			printf("%s\n", jtext(json_array_get(arr, i), "name", b, sizeof(b)));
		}
		json_decref(arr);
		return 0;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:O}", "schedules", arr);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
		json_decref(arr);
		return 0;
	}
	if ((rc = cb__cli_table_new(&t, 8, headers, "llllllll")) < 0) {
		json_decref(arr);
		return cb__cli_out_of_memory(c);
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *s = json_array_get(arr, i), *lf = json_object_get(s, "last_firing");
		char b[7][300], next[64], last[400], overlap[16];
		const char *cells[8], *zone;

		cb__cli_term(b[0], sizeof(b[0]), jtext(s, "name", b[6], sizeof(b[6])));
		cb__cli_term(b[1], sizeof(b[1]), jtext(s, "cron", b[6], sizeof(b[6])));
		cb__cli_term(b[2], sizeof(b[2]), jtext(s, "time_zone", b[6], sizeof(b[6])));
		cb__cli_term(b[3], sizeof(b[3]), jtext(s, "job", b[6], sizeof(b[6])));
		/* Fire instants in the schedule's own zone: what its cron means. */
		zone = cb__cli_json_get_text(s, "time_zone", b[5], sizeof(b[5]));

		cb__cli_fmt_zoned(next, sizeof(next), conn, zone,
				  cb__cli_json_get_text(s, "next_fire_time", b[6], sizeof(b[6])));
		if (json_is_object(lf)) {
			char ft[64], st[32], ex[32];

			/* (a run of skips: its newest instant) */
			cb__cli_fmt_zoned(
				ft, sizeof(ft), conn, zone,
				cb__cli_json_get_text(lf, "last_instant", b[6], sizeof(b[6])));
			snprintf(st, sizeof(st), "%s", jtext(lf, "status", b[6], sizeof(b[6])));
			snprintf(ex, sizeof(ex), "%s",
				 jtext(lf, "exit_status", b[6], sizeof(b[6])));
			snprintf(last, sizeof(last), "%s %s%s%s", ft, st,
				 strcmp(ex, "-") ? " " : "", strcmp(ex, "-") ? ex : "");
		} else {
			snprintf(last, sizeof(last), "-");
		}
		cells[0] = b[0];
		cells[1] = b[1];
		cells[2] = b[2];
		cells[3] = b[3];
		cells[4] = json_is_true(json_object_get(s, "paused")) ? "paused" : "active";
		snprintf(overlap, sizeof(overlap), "%s",
			 jtext(s, "overlap_policy", b[6], sizeof(b[6])));
		for (char *o = overlap; *o; o++)
			*o = (char)(*o >= 'A' && *o <= 'Z' ? *o - 'A' + 'a' : *o);
		cells[5] = overlap;
		cells[6] = next;
		cells[7] = last;
		if (cb__cli_table_add(t, cells) < 0) {
			cb__cli_table_free(t);
			json_decref(arr);
			return cb__cli_out_of_memory(c);
		}
	}
	if (json_array_size(arr) == 0)
		printf("no schedules (add one: %s schedule add NAME --cron EXPR --job JOB)\n",
		       c->prog);
	else
		cb__cli_table_print(t, stdout, "");
	cb__cli_table_free(t);
	json_decref(arr);
	return 0;
}

/* A run of instants (@p first to @p last, as cb__cli_fmt_time writes them)
 * read as a range: on one day, without the date (the FIRE TIME column has
 * it), and with the zone once when both instants share it. */
static void fmt_range(char *buf, size_t size, const char *first, const char *last)
{
	size_t nf = strlen(first), nl = strlen(last);

	if (nf < 19 || nl < 19 || strncmp(first, last, 10) != 0)
		snprintf(buf, size, "%s\xe2\x80\x93%s", first, last);
	else if (strcmp(first + 19, last + 19) == 0)
		snprintf(buf, size, "%.8s\xe2\x80\x93%s", first + 11, last + 11);
	else
		snprintf(buf, size, "%s\xe2\x80\x93%s", first + 11, last + 11);
}

/* The message of event @p e into @p buf: a run of skips (sql/021) says how
 * many instants, from when to when, before the reason the node recorded. */
static void history_message(char *buf, size_t size, const json_t *e)
{
	long long n = (long long)json_integer_value(json_object_get(e, "instant_count"));
	char first[80], last[80], range[200], tmp[400], msg[400];

	cb__cli_term(msg, sizeof(msg), jtext(e, "message", tmp, sizeof(tmp)));
	if (n <= 1) {
		snprintf(buf, size, "%s", msg);
		return;
	}
	cb__cli_fmt_time(first, sizeof(first),
			 cb__cli_json_get_text(e, "fire_time", tmp, sizeof(tmp)));
	cb__cli_fmt_time(last, sizeof(last),
			 cb__cli_json_get_text(e, "last_instant", tmp, sizeof(tmp)));
	fmt_range(range, sizeof(range), first, last);
	/* (the prefix first, then as much of the message as fits) */
	if (snprintf(buf, size, "%lld instants %s ", n, range) >= 0 && strlen(buf) + 1 < size)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s", msg);
}

static void print_history(const json_t *events)
{
	static const char *const headers[] = { "RECORDED", "FIRE TIME", "NODE",
					       "OUTCOME",  "EXECUTION", "MESSAGE" };
	cb__cli_table *t = NULL;

	if (cb__cli_table_new(&t, 6, headers, "llllll") < 0)
		return;
	for (size_t i = 0; i < json_array_size(events); i++) {
		const json_t *e = json_array_get(events, i);
		char b[8][400];
		const char *cells[6];

		cb__cli_fmt_time(b[0], sizeof(b[0]),
				 cb__cli_json_get_text(e, "recorded_at", b[7], sizeof(b[7])));
		cb__cli_fmt_time(b[1], sizeof(b[1]),
				 cb__cli_json_get_text(e, "fire_time", b[7], sizeof(b[7])));
		cb__cli_term(b[2], 60, jtext(e, "node_id", b[7], sizeof(b[7])));
		cb__cli_term(b[3], sizeof(b[3]), jtext(e, "outcome", b[7], sizeof(b[7])));
		/* A firing not of the schedule's own instants says whose it is. */
		{
			const char *kind = json_string_value(json_object_get(e, "kind"));

			if (kind && (!strcmp(kind, "BACKFILL") || !strcmp(kind, "MANUAL")) &&
			    strcmp(kind, b[3]) != 0)
				snprintf(b[3] + strlen(b[3]), sizeof(b[3]) - strlen(b[3]), " [%s]",
					 kind);
		}
		if (json_is_integer(json_object_get(e, "attempt")))
			snprintf(b[3] + strlen(b[3]), sizeof(b[3]) - strlen(b[3]), " #%lld",
				 (long long)json_integer_value(json_object_get(e, "attempt")));
		cb__cli_term(b[4], sizeof(b[4]), jtext(e, "job_execution_id", b[7], sizeof(b[7])));
		history_message(b[5], sizeof(b[5]), e);
		for (int k = 0; k < 6; k++)
			cells[k] = b[k];
		cb__cli_table_add(t, cells);
	}
	cb__cli_table_print(t, stdout, "  ");
	cb__cli_table_free(t);
}

static int cmd_show(struct cli *c, PGconn *conn)
{
	json_t *arr = NULL, *s, *hist = NULL;
	char b[8][600];

	if (c->argc != 3)
		return sub_usage(c, "show", "NAME", "expected one NAME");
	if (cb_schedule_list(&arr, conn, c->argv[2], &c->err) < 0 ||
	    cb_schedule_history(&hist, conn, c->argv[2], 10, &c->err) < 0) {
		json_decref(arr);
		return cb__cli_fail(c, cb__cli_exit_for(c->err.code, 1));
	}
	s = json_array_get(arr, 0);
	if (c->json) {
		json_object_set(s, "history", hist);
		cb__cli_json_print(stdout, s);
	} else {
		printf("schedule %s (id %s)\n",
		       cb__cli_term(b[0], sizeof(b[0]), jtext(s, "name", b[7], sizeof(b[7]))),
		       jtext(s, "schedule_id", b[1], sizeof(b[1])));
		printf("  cron        %s\n",
		       cb__cli_term(b[0], sizeof(b[0]), jtext(s, "cron", b[7], sizeof(b[7]))));
		printf("  time zone   %s\n",
		       cb__cli_term(b[0], sizeof(b[0]), jtext(s, "time_zone", b[7], sizeof(b[7]))));
		printf("  job         %s\n",
		       cb__cli_term(b[0], sizeof(b[0]), jtext(s, "job", b[7], sizeof(b[7]))));
		{
			const json_t *p = json_object_get(s, "parameters");

			printf("  parameters ");
			for (size_t i = 0; i < json_array_size(p); i++)
				printf(" %s",
				       cb__cli_term(b[0], sizeof(b[0]),
						    json_string_value(json_array_get(p, i))));
			printf("%s\n", json_array_size(p) ? "" : " (none)");
		}
		printf("  misfires    %s, grace %ss\n",
		       jtext(s, "misfire_policy", b[0], sizeof(b[0])),
		       jtext(s, "misfire_grace_seconds", b[1], sizeof(b[1])));
		printf("  overlap     %s\n", jtext(s, "overlap_policy", b[0], sizeof(b[0])));
		if (strcmp(jtext(s, "recover_policy", b[0], sizeof(b[0])), "LEAVE") == 0)
			printf("  recover     LEAVE (unfinished executions are left as they are)\n");
		else
			printf("  recover     RESTART, at most %s attempts, %ss after the end\n",
			       jtext(s, "recover_attempts", b[0], sizeof(b[0])),
			       jtext(s, "recover_delay_seconds", b[1], sizeof(b[1])));
		printf("  state       %s\n",
		       json_is_true(json_object_get(s, "paused")) ? "paused" : "active");
		cb__cli_fmt_zoned(b[0], sizeof(b[0]), conn,
				  jtext(s, "time_zone", b[6], sizeof(b[6])),
				  cb__cli_json_get_text(s, "next_fire_time", b[7], sizeof(b[7])));
		printf("  next        %s\n", b[0]);
		printf("  history (newest first; `schedule history %s` for more):\n",
		       cb__cli_term(b[1], sizeof(b[1]), jtext(s, "name", b[7], sizeof(b[7]))));
		if (json_array_size(hist) == 0)
			printf("  (nothing fired yet)\n");
		else
			print_history(hist);
	}
	json_decref(hist);
	json_decref(arr);
	return 0;
}

static int cmd_history(struct cli *c, PGconn *conn)
{
	static const char *const flags[] = { "--limit=", NULL };
	const char *values[1] = { 0 }, **pos = NULL;
	size_t npos = 0;
	long long limit = 50;
	json_t *hist = NULL;
	int rc;

	if ((rc = split(c, &pos, &npos, flags, values)) != 0)
		goto done;
	if (npos != 1) {
		rc = sub_usage(c, "history", "NAME [--limit N]", "expected one NAME");
		goto done;
	}
	if (values[0] && (cb__cli_parse_positive(&limit, values[0]) < 0 || limit > 100000)) {
		rc = sub_usage(c, "history", "NAME [--limit N]", "--limit must be 1 to 100000");
		goto done;
	}
	if (cb_schedule_history(&hist, conn, pos[0], limit, &c->err) < 0) {
		rc = cb__cli_fail(c, cb__cli_exit_for(c->err.code, 1));
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:s,s:O}", "schedule", pos[0], "events", hist);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (json_array_size(hist) == 0) {
		printf("schedule %s: nothing fired yet\n", pos[0]);
	} else {
		print_history(hist);
	}
done:
	json_decref(hist);
	free(pos);
	return rc;
}

/* ---- pause, resume, remove ----------------------------------------------- */

static int cmd_pause(struct cli *c, PGconn *conn, int pause)
{
	const char *sub = pause ? "pause" : "resume";
	int changed = 0;

	if (c->argc != 3)
		return sub_usage(c, sub, "NAME", "expected one NAME");
	if (cb_schedule_pause(&changed, conn, c->argv[2], pause, &c->err) < 0)
		return cb__cli_fail(c, cb__cli_exit_for(c->err.code, 1));
	printf("schedule '%s' %s\n", c->argv[2],
	       !changed ? (pause ? "was already paused" : "was not paused") :
			  (pause ? "paused" : "resumed"));
	return 0;
}

static int cmd_remove(struct cli *c, PGconn *conn)
{
	if (c->argc != 3)
		return sub_usage(c, "remove", "NAME", "expected one NAME");
	if (cb_schedule_remove(conn, c->argv[2], &c->err) < 0)
		return cb__cli_fail(c, cb__cli_exit_for(c->err.code, 1));
	printf("schedule '%s' removed, with its firing history\n", c->argv[2]);
	return 0;
}

/* ---- next ---------------------------------------------------------------- */

static int cmd_next(struct cli *c, PGconn *conn)
{
	static const char *const flags[] = { "--count=", "--cron=", "--tz=", NULL };
	static const char usage[] = "NAME | --cron EXPR [--tz ZONE]  [--count N]";
	const char *values[3] = { 0 }, **pos = NULL;
	size_t npos = 0;
	long long count = 5;
	json_t *out = NULL;
	int rc;

	if ((rc = split(c, &pos, &npos, flags, values)) != 0)
		goto done;
	if ((npos == 1) == (values[1] != NULL) || npos > 1) {
		rc = sub_usage(c, "next", usage, "give a schedule NAME or --cron EXPR");
		goto done;
	}
	if (values[0] && (cb__cli_parse_positive(&count, values[0]) < 0 || count > 1000)) {
		rc = sub_usage(c, "next", usage, "--count must be 1 to 1000");
		goto done;
	}
	if (cb_schedule_next(&out, conn, npos ? pos[0] : NULL, values[1], values[2], (size_t)count,
			     &c->err) < 0) {
		rc = cb__cli_fail(c, c->err.code == CB_EINVAL    ? CB_EXIT_USAGE :
				     c->err.code == CB_ENOTFOUND ? CB_EXIT_USAGE :
								   CB_EXIT_FAILED);
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:O}", "next", out);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else {
		for (size_t i = 0; i < json_array_size(out); i++) {
			const json_t *e = json_array_get(out, i);

			printf("%s  (%s)\n", json_string_value(json_object_get(e, "local")),
			       json_string_value(json_object_get(e, "utc")));
		}
	}
	rc = 0;
done:
	json_decref(out);
	free(pos);
	return rc;
}

/* ---- backfill ------------------------------------------------------------ */

/* Who asks, as the history records it: user@host. */
static void actor(char *who, size_t size)
{
	const char *user = getenv("USER");
	char host[256] = "", raw[200];

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	/* A longer user@host is cut: the history keeps its first bytes. */
	if (snprintf(raw, sizeof(raw), "%s@%s", user && *user ? user : "unknown", host) >=
	    (int)sizeof(raw))
		raw[sizeof(raw) - 1] = '\0';
	cb__utf8_sanitize(who, size, raw);
}

/* Instants listed one per line, beyond this only counted (--json has all). */
#define BACKFILL_SHOWN 50

static int backfill_cancel(struct cli *c, PGconn *conn, const char *name, const char *who)
{
	json_t *doc = NULL;
	char b[3][200];

	if (cb_schedule_backfill_cancel(&doc, conn, name, who, &c->err) < 0)
		return cb__cli_fail(c, cb__cli_exit_for(c->err.code, 1));
	if (c->json)
		cb__cli_json_print(stdout, doc);
	else if (cb__cli_json_get_ll(doc, "canceled") == 0)
		printf("schedule '%s': no backfill firing was waiting; nothing canceled\n", name);
	else
		printf("schedule '%s': backfill canceled: %s waiting firings removed, from %s to "
		       "%s (recorded CANCELED; firings already taken run on)\n",
		       name, jtext(doc, "canceled", b[0], sizeof(b[0])),
		       jtext(doc, "first", b[1], sizeof(b[1])),
		       jtext(doc, "last", b[2], sizeof(b[2])));
	json_decref(doc);
	return 0;
}

static int cmd_backfill(struct cli *c, PGconn *conn)
{
	static const char *const flags[] = { "--from=",     "--to=",    "--max=",
					     "--parallel=", "--cancel", NULL };
	static const char usage[] = "NAME --from TIME --to TIME [--max N] [--parallel N] | "
				    "NAME --cancel";
	const char *values[5] = { 0 }, **pos = NULL;
	cb_schedule_backfill_options o = CB_SCHEDULE_BACKFILL_OPTIONS_INIT;
	long long max = 1000, parallel = 1;
	size_t npos = 0;
	json_t *doc = NULL, *list;
	char who[200], b[4][200];
	int rc;

	if ((rc = split(c, &pos, &npos, flags, values)) != 0)
		goto done;
	if (npos != 1) {
		rc = sub_usage(c, "backfill", usage, "expected one NAME");
		goto done;
	}
	actor(who, sizeof(who));
	if (values[4]) {
		if (values[0] || values[1] || values[2] || values[3])
			rc = sub_usage(c, "backfill", usage, "--cancel takes no other option");
		else
			rc = backfill_cancel(c, conn, pos[0], who);
		goto done;
	}
	if (!values[0] || !values[1]) {
		rc = sub_usage(c, "backfill", usage, "--from and --to are required");
		goto done;
	}
	if (values[2] &&
	    (cb__cli_parse_positive(&max, values[2]) < 0 || max > CB_SCHEDULE_BACKFILL_MAX)) {
		rc = sub_usage(c, "backfill", usage, "--max must be 1 to 100000");
		goto done;
	}
	if (values[3] && (cb__cli_parse_positive(&parallel, values[3]) < 0 || parallel > 100)) {
		rc = sub_usage(c, "backfill", usage, "--parallel must be 1 to 100");
		goto done;
	}
	o.from = values[0];
	o.to = values[1];
	o.max_instants = max;
	o.parallel = (int)parallel;
	o.actor = who;
	o.reg = c->reg;
	if (cb_schedule_backfill(&doc, conn, pos[0], &o, &c->err) < 0) {
		rc = cb__cli_fail(c, cb__cli_exit_for(c->err.code, 1));
		goto done;
	}
	rc = 0;
	if (c->json) {
		cb__cli_json_print(stdout, doc);
		goto done;
	}
	list = json_object_get(doc, "instants");
	printf("schedule '%s': backfill from %s to %s, %zu instants: %s queued as BACKFILL "
	       "firings, %s had a firing already\n",
	       pos[0], jtext(doc, "from", b[0], sizeof(b[0])), jtext(doc, "to", b[1], sizeof(b[1])),
	       json_array_size(list), jtext(doc, "created", b[2], sizeof(b[2])),
	       jtext(doc, "existing", b[3], sizeof(b[3])));
	for (size_t i = 0; i < json_array_size(list) && i < BACKFILL_SHOWN; i++) {
		const json_t *x = json_array_get(list, i);

		if (json_is_true(json_object_get(x, "created")))
			printf("  %s  queued (firing %s)\n",
			       jtext(x, "fire_time", b[0], sizeof(b[0])),
			       jtext(x, "firing_id", b[1], sizeof(b[1])));
		else
			printf("  %s  has firing %s already (%s, %s)\n",
			       jtext(x, "fire_time", b[0], sizeof(b[0])),
			       jtext(x, "firing_id", b[1], sizeof(b[1])),
			       jtext(x, "kind", b[2], sizeof(b[2])),
			       jtext(x, "status", b[3], sizeof(b[3])));
	}
	if (json_array_size(list) > BACKFILL_SHOWN)
		printf("  ... and %zu more (--json lists them all)\n",
		       json_array_size(list) - BACKFILL_SHOWN);
	if (cb__cli_json_get_ll(doc, "created") > 0) {
		if (strcmp(jtext(doc, "overlap_policy", b[0], sizeof(b[0])), "ALLOW") == 0)
			printf("scheduler nodes run them oldest first, %s at once (overlap policy "
			       "ALLOW); `schedule backfill %s --cancel` removes those still "
			       "waiting\n",
			       jtext(doc, "parallel", b[1], sizeof(b[1])), pos[0]);
		else
			printf("scheduler nodes run them oldest first, one at a time, never beside "
			       "another firing of the schedule (overlap policy %s); `schedule "
			       "backfill %s --cancel` removes those still waiting\n",
			       b[0], pos[0]);
	}
done:
	json_decref(doc);
	free(pos);
	return rc;
}

/* ---- dispatch ------------------------------------------------------------ */

int cb__cli_cmd_schedule(struct cli *c)
{
	static const char subs[] =
		"add, list, show, pause, resume, remove, next, history, backfill";
	const char *sub = c->argc > 1 ? c->argv[1] : NULL;
	PGconn *conn = NULL;
	int rc;

	if (!sub)
		return cb__cli_usage_error(c, "schedule: missing sub-command (one of %s)", subs);
	if (strcmp(sub, "add") && strcmp(sub, "list") && strcmp(sub, "show") &&
	    strcmp(sub, "pause") && strcmp(sub, "resume") && strcmp(sub, "remove") &&
	    strcmp(sub, "next") && strcmp(sub, "history") && strcmp(sub, "backfill"))
		return cb__cli_usage_error(c, "schedule: unknown sub-command '%.40s' (one of %s)",
					   sub, subs);
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	if (!strcmp(sub, "add"))
		rc = cmd_add(c, conn);
	else if (!strcmp(sub, "list"))
		rc = cmd_list(c, conn);
	else if (!strcmp(sub, "show"))
		rc = cmd_show(c, conn);
	else if (!strcmp(sub, "pause"))
		rc = cmd_pause(c, conn, 1);
	else if (!strcmp(sub, "resume"))
		rc = cmd_pause(c, conn, 0);
	else if (!strcmp(sub, "remove"))
		rc = cmd_remove(c, conn);
	else if (!strcmp(sub, "next"))
		rc = cmd_next(c, conn);
	else if (!strcmp(sub, "backfill"))
		rc = cmd_backfill(c, conn);
	else
		rc = cmd_history(c, conn);
	PQfinish(conn);
	return rc;
}

/* ---- scheduler ----------------------------------------------------------- */

/* A firing in a runner: the command line it would have been exec'd with. */
static int run_firing(void *reg, int argc, char **argv)
{
	return cb_cli_main(reg, argc, argv);
}

int cb__cli_cmd_scheduler(struct cli *c)
{
	static const char *const flags[] = { "--lease=",  "--max-running=", "--exit-after=",
					     "--verbose", "--quiet",        "--runners=",
					     NULL };
	const char *values[6] = { 0 }, **pos = NULL;
	size_t npos = 0;
	cb_scheduler_options o = CB_SCHEDULER_OPTIONS_INIT;
	cb_scheduler_result res;
	char exe[PATH_MAX];
	ssize_t n;
	int rc;

	pos = calloc((size_t)c->argc + 1, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	if ((rc = cb__cli_split_args(c, pos, &npos, flags, values)) != 0)
		goto done;
	if (npos > 0) {
		rc = cb__cli_usage_error(
			c,
			"scheduler: unexpected argument '%.60s' (usage: %s "
			"scheduler [--lease SECONDS] [--max-running N] "
			"[--runners N] [--exit-after SECONDS] [--verbose|--quiet])",
			pos[0], c->prog);
		goto done;
	}
	if (values[0] &&
	    ((o.lease_seconds = strtod(values[0], NULL)) < 1 || o.lease_seconds > 3600)) {
		rc = cb__cli_usage_error(c, "scheduler: --lease '%.40s' must be 1 to 3600 seconds",
					 values[0]);
		goto done;
	}
	if (values[1]) {
		long long m;

		if (cb__cli_parse_positive(&m, values[1]) < 0 || m > 1000) {
			rc = cb__cli_usage_error(
				c, "scheduler: --max-running '%.40s' must be 1 to 1000", values[1]);
			goto done;
		}
		o.max_running = (int)m;
	}
	if (values[5]) {
		long long m;

		if (cb__cli_parse_positive(&m, values[5]) < 0 || m > 1000) {
			rc = cb__cli_usage_error(
				c, "scheduler: --runners '%.40s' must be 1 to 1000", values[5]);
			goto done;
		}
		o.runners = (int)m;
		o.run = run_firing;
		o.run_ctx = c->reg;
	}
	if (values[2] && (o.exit_after_seconds = strtod(values[2], NULL)) <= 0) {
		rc = cb__cli_usage_error(c,
					 "scheduler: --exit-after '%.40s' must be a positive "
					 "number of seconds",
					 values[2]);
		goto done;
	}
	o.verbose = values[3] ? 2 : values[4] ? 0 : 1;
	/* Before any claim: an instant claimed by a node whose children cannot
	 * run (a bad CBATCH_TZ, a transaction pooler) is lost to the others. */
	if ((rc = cb__cli_check_env(c)) != 0)
		goto done;
	/* The children are this very program, whatever its name on the PATH. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		cb_error_set(&c->err, CB_EINVAL, "scheduler: cannot find this program's path");
		rc = cb__cli_fail(c, CB_EXIT_FAILED);
		goto done;
	}
	exe[n] = '\0';
	o.exe = exe;
	o.prog = c->prog;
	o.conninfo = c->db;
	if (cb_scheduler_run(&res, c->reg, &o, &c->err) < 0) {
		rc = cb__cli_fail(c, CB_EXIT_FAILED);
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:I,s:I,s:I,s:I,s:I}", "fired", (json_int_t)res.fired,
					"skipped_claimed", (json_int_t)res.skipped_claimed,
					"misfired", (json_int_t)res.misfired, "failed_to_launch",
					(json_int_t)res.failed_to_launch, "orphans_reported",
					(json_int_t)res.orphans_reported);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	}
	rc = 0;
done:
	free(pos);
	return rc;
}
