/* `cleanup`: remove old job executions and what hangs off them
 * (repository/cleanup.c decides what may go). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/cli.h"
#include "cli_internal.h"
#include "cbatch/repository.h"

/* Longest duration accepted: 100 years (keeps the seconds exact in a double). */
#define MAX_SECONDS (100LL * 366 * 86400)

/* "30d", "12h", "90m", "3600s": a positive integer and one unit.
 * @return 0 or -1. */
static int parse_duration(double *out, const char *s)
{
	long long v = 0, unit;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > MAX_SECONDS)
			return -1;
	}
	switch (*p) {
	case 's':
		unit = 1;
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	case 'd':
		unit = 86400;
		break;
	default:
		return -1;
	}
	if (p[1] != '\0' || v <= 0 || v > MAX_SECONDS / unit)
		return -1;
	*out = (double)(v * unit);
	return 0;
}

/* ", 42% of the executions, about 1m10s left" (empty when not known; no
 * time left until the pace has settled, over the first few batches). */
static void eta_text(char *out, size_t size, const cb_cleanup_progress *p, const char *what)
{
	long long s;

	out[0] = '\0';
	if (p->fraction < 0)
		return;
	if (p->eta_seconds < 0) {
		snprintf(out, size, ", %.0f%% of the %s, estimating the time left",
			 p->fraction * 100, what);
		return;
	}
	s = (long long)(p->eta_seconds + 0.5);
	if (s >= 3600)
		snprintf(out, size, ", %.0f%% of the %s, about %lldh%02lldm left",
			 p->fraction * 100, what, s / 3600, s / 60 % 60);
	else if (s >= 60)
		snprintf(out, size, ", %.0f%% of the %s, about %lldm%02llds left",
			 p->fraction * 100, what, s / 60, s % 60);
	else
		snprintf(out, size, ", %.0f%% of the %s, about %llds left", p->fraction * 100, what,
			 s);
}

static void progress(void *ctx, const cb_cleanup_progress *p)
{
	char eta[128];

	(void)ctx;
	if (strcmp(p->phase, "executions") == 0) {
		eta_text(eta, sizeof(eta), p, "executions");
		fprintf(stderr,
			"cleanup: batch %lld: %lld executions, %lld instances, %lld steps, "
			"%lld params (%lld executions so far, %.2fs%s)\n",
			p->batch, p->counts.job_executions, p->counts.job_instances,
			p->counts.step_executions, p->counts.params, p->total.job_executions,
			p->seconds, eta);
	} else if (strcmp(p->phase, "lock audit") == 0) {
		eta_text(eta, sizeof(eta), p, "lock audit");
		fprintf(stderr,
			"cleanup: batch %lld: %lld lock audit rows (%lld so far, %.2fs%s)\n",
			p->batch, p->counts.lock_audit, p->total.lock_audit, p->seconds, eta);
	} else if (strcmp(p->phase, "locks") == 0)
		fprintf(stderr, "cleanup: batch %lld: %lld locks (%lld so far, %.2fs)\n", p->batch,
			p->counts.locks, p->total.locks, p->seconds);
	else {
		eta_text(eta, sizeof(eta), p,
			 strcmp(p->phase, "schedule firings") == 0 ? "schedule firings" :
								     "schedule events");
		fprintf(stderr,
			"cleanup: batch %lld: %lld schedule events, %lld firings (%lld and %lld so "
			"far, %.2fs%s)\n",
			p->batch, p->counts.schedule_events, p->counts.schedule_firings,
			p->total.schedule_events, p->total.schedule_firings, p->seconds, eta);
	}
}

/* The tables in the order they are reported. */
#define NROWS 10
static void rows(const cb_cleanup_counts *c, const char **names, long long *values)
{
	static const char *const n[] = { "batch_job_execution",
					 "batch_job_instance",
					 "batch_step_execution",
					 "batch_step_execution_context",
					 "batch_job_execution_context",
					 "batch_job_execution_params",
					 "batch_lock_audit",
					 "batch_lock",
					 "batch_schedule_event",
					 "batch_schedule_firing" };
	const long long v[] = { c->job_executions,  c->job_instances, c->step_executions,
				c->step_contexts,   c->job_contexts,  c->params,
				c->lock_audit,      c->locks,         c->schedule_events,
				c->schedule_firings };

	for (size_t i = 0; i < NROWS; i++) {
		names[i] = n[i];
		values[i] = v[i];
	}
}

static int print_json(const struct cli *c, const cb_cleanup_result *r, const cb_cleanup_options *o,
		      const char *older)
{
	const char *names[NROWS];
	long long values[NROWS];
	json_t *doc = json_object(), *removed = json_object();
	char cutoff[80];
	int rc = -1;

	(void)c;
	if (!doc || !removed)
		goto out;
	rows(&r->removed, names, values);
	for (size_t i = 0; i < NROWS; i++)
		json_object_set_new(removed, names[i], json_integer(values[i]));
	json_object_set_new(doc, "dry_run", json_boolean(o->dry_run));
	json_object_set_new(doc, "older_than", json_string(older));
	json_object_set_new(doc, "older_than_seconds", json_real(o->older_than_seconds));
	cb__cli_rfc3339(cutoff, sizeof(cutoff), r->cutoff);
	json_object_set_new(doc, "cutoff", cb__cli_json_text(cutoff));
	json_object_set_new(doc, "keep_last", json_integer(o->keep_last));
	json_object_set_new(doc, "batch_size", json_integer(o->batch));
	json_object_set_new(doc, "batches", json_integer(r->batches));
	json_object_set_new(doc, "removed", removed);
	removed = NULL;
	json_object_set_new(doc, "partition_step_executions", json_integer(r->removed.partitions));
	json_object_set_new(doc, "restart_links_cleared", json_integer(r->removed.restart_links));
	json_object_set_new(doc, "skipped_instances", json_integer(r->skipped_instances));
	json_object_set_new(doc, "seconds", json_real(r->seconds));
	rc = cb__cli_json_print(stdout, doc);
out:
	json_decref(removed);
	json_decref(doc);
	return rc;
}

static int print_table(const cb_cleanup_result *r, const cb_cleanup_options *o, const char *older)
{
	static const char *const headers[] = { "TABLE", "ROWS" };
	const char *names[NROWS];
	long long values[NROWS];
	cb__cli_table *t = NULL;
	char dur[32], cutoff[64];

	cb__cli_fmt_duration(dur, sizeof(dur), r->seconds);
	cb__cli_fmt_time(cutoff, sizeof(cutoff), r->cutoff);
	printf("%s executions that ended before %s (older than %s)%s:\n",
	       o->dry_run ? "would remove" : "removed", cutoff, older,
	       o->keep_last > 0 ? ", keeping the newest of each job" : "");
	if (cb__cli_table_new(&t, 2, headers, "lr") < 0)
		return -1;
	rows(&r->removed, names, values);
	for (size_t i = 0; i < NROWS; i++) {
		char v[24];
		const char *cells[2] = { names[i], v };

		snprintf(v, sizeof(v), "%lld", values[i]);
		if (cb__cli_table_add(t, cells) < 0) {
			cb__cli_table_free(t);
			return -1;
		}
	}
	cb__cli_table_print(t, stdout, "  ");
	cb__cli_table_free(t);
	printf("  (%lld of the step executions were partitions; %lld restart links cleared; "
	       "%lld batches in %s",
	       r->removed.partitions, r->removed.restart_links, r->batches, dur);
	if (r->skipped_instances > 0)
		printf("; %lld instances held by others were left for the next run",
		       r->skipped_instances);
	printf(")\n");
	return 0;
}

int cb__cli_cmd_cleanup(struct cli *c)
{
	static const char *const flags[] = { "--older-than=", "--keep-last=", "--dry-run",
					     "--batch=", NULL };
	const char *values[4] = { NULL, NULL, NULL, NULL };
	const char **pos;
	size_t npos;
	cb_cleanup_options o;
	cb_cleanup_result r;
	PGconn *conn = NULL;
	int rc;

	o = (cb_cleanup_options)CB_CLEANUP_OPTIONS_INIT;
	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	rc = cb__cli_split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos > 0)
		rc = cb__cli_usage_error(c, "cleanup: unexpected argument '%.100s'", pos[0]);
	free(pos);
	if (rc != 0)
		return rc;
	if (!values[0])
		return cb__cli_usage_error(c, "cleanup: --older-than DURATION is required "
					      "(e.g. 30d, 12h, 90m, 3600s)");
	if (parse_duration(&o.older_than_seconds, values[0]) < 0)
		return cb__cli_usage_error(c,
					   "cleanup: invalid duration '%.100s' for --older-than "
					   "(expected a positive integer and a unit: 30d, 12h, "
					   "90m, 3600s)",
					   values[0]);
	if (values[1] && cb__cli_parse_positive(&o.keep_last, values[1]) < 0)
		return cb__cli_usage_error(
			c, "cleanup: invalid --keep-last '%.100s' (expected a positive integer)",
			values[1]);
	if (values[3] && (cb__cli_parse_positive(&o.batch, values[3]) < 0 || o.batch > 100000))
		return cb__cli_usage_error(
			c, "cleanup: invalid --batch '%.100s' (expected 1..100000)", values[3]);
	o.dry_run = values[2] != NULL;
	o.lock_timeout_seconds = 1;
	o.progress = progress;
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	rc = cb_repo_cleanup(&r, conn, &o, &c->err);
	PQfinish(conn);
	if (rc < 0) {
		if (r.batches > 0)
			cb_error_prefix(&c->err, "after %lld batches (%lld executions removed)",
					r.batches, r.removed.job_executions);
		return cb__cli_fail(c, cb__cli_exit_for(rc, 0));
	}
	if ((c->json ? print_json(c, &r, &o, values[0]) : print_table(&r, &o, values[0])) < 0)
		return cb__cli_out_of_memory(c);
	return CB_EXIT_COMPLETED;
}
