/* The listings: `jobs`, `executions`, `show`, `locks` (tables, or --json). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch/cli.h"
#include "cbatch/params.h"
#include "cbatch/lock.h"
#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "cli_internal.h"
#include "text.h"

/* ---- jobs ---------------------------------------------------------------- */

/*
 * The job's lock scope in words: "instance", "job", "job (lock 'ledger')"
 * when a fixed name other than the job's is shared, "custom ({job}:{day})".
 */
static void fmt_lock_scope(char *buf, size_t size, const cb_job *job)
{
	cb_lock_scope scope = cb_job_lock_scope(job);
	cb_error ignored = CB_ERROR_INIT;
	cb_params *none = NULL;
	char *name = NULL;

	if (scope == CB_LOCK_SCOPE_CUSTOM) {
		snprintf(buf, size, "custom (%s)", cb_job_lock_template(job));
		return;
	}
	snprintf(buf, size, "%s", cb_lock_scope_name(scope));
	/* A fixed name needs no parameter: computed from none. */
	if (scope == CB_LOCK_SCOPE_JOB && cb_params_new(&none, &ignored) == 0 &&
	    cb_job_lock_name(&name, job, none, &ignored) == 0 && strcmp(name, cb_job_name(job)))
		snprintf(buf, size, "job (lock '%s')", name);
	free(name);
	cb_params_free(none);
	cb_error_clear(&ignored);
}

int cb__cli_cmd_jobs(struct cli *c)
{
	size_t i, n = cb_registry_count(c->reg);
	cb__cli_table *t = NULL;
	static const char *const headers[] = { "JOB", "LOCK", "DESCRIPTION", "PARAMETERS" };

	if (c->argc > 1 && strcmp(c->argv[1], "--names") != 0)
		return cb__cli_usage_error(c, "jobs: unexpected argument '%.100s'", c->argv[1]);
	if (c->argc > 2)
		return cb__cli_usage_error(c, "jobs: unexpected argument '%.100s'", c->argv[2]);
	if (c->argc > 1 && !c->json) {
		/* --names: what a script or the completion reads, nothing else. */
		for (i = 0; i < n; i++)
			printf("%s\n", cb_job_name(cb_registry_at(c->reg, i)));
		return 0;
	}
	if (c->json) {
		json_t *doc = json_object(), *arr = json_array();

		if (!doc || !arr || json_object_set_new(doc, "jobs", arr) < 0) {
			json_decref(arr);
			json_decref(doc);
			return cb__cli_out_of_memory(c);
		}
		for (i = 0; i < n; i++) {
			const cb_job *job = cb_registry_at(c->reg, i);
			json_t *ps = json_array();

			for (size_t k = 0; ps && k < cb_job_param_count(job); k++) {
				const char *name;
				cb_param_type type;
				int required;

				cb_job_param_at(job, k, &name, &type, &required);
				json_array_append_new(
					ps, json_pack("{s:o,s:s,s:b,s:b}", "name",
						      cb__cli_json_text(name), "type",
						      cb_param_type_name(type), "required",
						      required, "identifying",
						      cb_job_param_identifying(job, name)));
			}
			json_array_append_new(
				arr,
				json_pack("{s:o,s:o,s:o*,s:s,s:o}", "name",
					  cb__cli_json_text(cb_job_name(job)), "description",
					  cb__cli_json_text(cb_job_description(job)), "parameters",
					  ps, "lock_scope",
					  cb_lock_scope_name(cb_job_lock_scope(job)),
					  "lock_template",
					  cb_job_lock_template(job) ?
						  cb__cli_json_text(cb_job_lock_template(job)) :
						  json_null()));
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
		return 0;
	}
	if (n == 0) {
		printf("no jobs are registered in this program\n");
		return 0;
	}
	if (cb__cli_table_new(&t, 4, headers, "llll") < 0)
		return cb__cli_out_of_memory(c);
	for (i = 0; i < n; i++) {
		const cb_job *job = cb_registry_at(c->reg, i);
		char params[1024], lock[512];
		const char *row[4] = { cb_job_name(job), lock, cb_job_description(job), params };

		fmt_lock_scope(lock, sizeof(lock), job);
		cb__cli_param_list(params, sizeof(params), job);
		if (!params[0])
			row[3] = "-";

		if (cb__cli_table_add(t, row) < 0) {
			cb__cli_table_free(t);
			return cb__cli_out_of_memory(c);
		}
	}
	cb__cli_table_print(t, stdout, "");
	cb__cli_table_free(t);
	return 0;
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

/* "3/4 done", and what else than running or waiting some are in. */
static void fmt_partitions(char *buf, size_t size, const json_t *p)
{
	long long failed = cb__cli_json_get_ll(p, "failed");
	long long stopped = cb__cli_json_get_ll(p, "stopped");
	int n;

	n = snprintf(buf, size, "%lld/%lld done", cb__cli_json_get_ll(p, "completed"),
		     cb__cli_json_get_ll(p, "total"));
	if (failed && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, ", %lld failed", failed);
	if (stopped && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ", %lld stopped", stopped);
}

static int print_executions(const json_t *list)
{
	static const char *const headers[] = { "ID",    "INSTANCE", "JOB",      "STATUS",    "EXIT",
					       "START", "END",      "DURATION", "PARTITIONS" };
	cb__cli_table *t;
	size_t i, ncols = 8;

	/* The last column only when some listed execution has partitions: the
	 * others' columns stay as they were. */
	for (i = 0; i < json_array_size(list); i++)
		if (json_is_object(json_object_get(json_array_get(list, i), "partitions")))
			ncols = 9;
	if (cb__cli_table_new(&t, ncols, headers, "rrlllllll") < 0)
		return CB_ENOMEM;
	for (i = 0; i < json_array_size(list); i++) {
		const json_t *e = json_array_get(list, i);
		const json_t *parts = json_object_get(e, "partitions");
		char id[24], inst[24], job[CB_PARAM_NAME_MAX + 8], st[32], ex[64];
		char ts[64], te[64], start[64], end[64], dur[32], pt[96];
		const char *row[9];

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
		row[8] = NULL;
		if (json_is_object(parts)) {
			fmt_partitions(pt, sizeof(pt), parts);
			row[8] = pt;
		}
		if (cb__cli_table_add(t, row) < 0) {
			cb__cli_table_free(t);
			return CB_ENOMEM;
		}
	}
	cb__cli_table_print(t, stdout, "");
	cb__cli_table_free(t);
	return 0;
}

int cb__cli_cmd_executions(struct cli *c)
{
	static const char *const flags[] = { "--limit=", "--ids", NULL };
	const char *values[2] = { NULL, NULL };
	const char **pos;
	size_t npos;
	long long limit = CB__CLI_DEFAULT_LIMIT;
	json_t *list = NULL;
	PGconn *conn = NULL;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	if ((rc = cb__cli_split_args(c, pos, &npos, flags, values)) != 0)
		goto done;
	if (npos > 1) {
		rc = cb__cli_usage_error(c,
					 "executions: unexpected argument '%.100s' (usage: %s "
					 "executions [JOB] [--limit N] [--ids])",
					 pos[1], c->prog);
		goto done;
	}
	if (npos && (rc = cb__cli_text_arg(c, "job name", pos[0])) != 0)
		goto done;
	if (values[0] && (cb__cli_parse_positive(&limit, values[0]) < 0 || limit > 1000000)) {
		rc = cb__cli_usage_error(
			c, "executions: invalid --limit '%.100s' (expected 1..1000000)", values[0]);
		goto done;
	}
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		goto done;
	rc = cb_repo_list_executions(&list, conn, npos ? pos[0] : NULL, (int)limit, &c->err);
	if (rc < 0) {
		rc = cb__cli_fail(c, cb__cli_exit_for(rc, 0));
		goto done;
	}
	if (c->json) {
		json_t *doc = json_pack("{s:O}", "executions", list);

		if (!doc) {
			rc = cb__cli_out_of_memory(c);
			goto done;
		}
		cb__cli_json_print(stdout, doc);
		json_decref(doc);
	} else if (values[1]) {
		/* --ids: what a script or the completion reads, nothing else. */
		for (size_t i = 0; i < json_array_size(list); i++)
			printf("%lld\n",
			       cb__cli_json_get_ll(json_array_get(list, i), "job_execution_id"));
	} else if (json_array_size(list) == 0) {
		char shown[CB_PARAM_NAME_MAX * 4 + 8];

		if (npos)
			printf("no executions of job '%s'\n",
			       cb__cli_term(shown, sizeof(shown), pos[0]));
		else
			printf("no executions\n");
	} else if (print_executions(list) < 0) {
		rc = cb__cli_out_of_memory(c);
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

static int is_failure(const char *status)
{
	return status && (strcmp(status, "FAILED") == 0 || strcmp(status, "ABANDONED") == 0 ||
			  strcmp(status, "UNKNOWN") == 0);
}

/* Lease left of a partition: "12.3s", "expired" (nobody took it over yet), "-". */
static void fmt_lease(char *buf, size_t size, const json_t *p)
{
	const json_t *v = json_object_get(p, "lease_left_seconds");
	double secs;

	if (json_is_number(v))
		secs = json_number_value(v);
	else if (json_is_string(v))
		secs = atof(json_string_value(v));
	else {
		snprintf(buf, size, "-");
		return;
	}
	if (secs > 0)
		snprintf(buf, size, "%.1fs", secs);
	else
		snprintf(buf, size, "expired");
}

/*
 * Why @p waiting partitions of @p step (of job @p job) are not claimed: the
 * definition they need, and the workers of the job seen lately with the
 * definition each has. A worker of another build, or one without the step,
 * leaves them alone (a rolling upgrade); none at all means no worker runs.
 */
static void print_waiting(const json_t *step, const char *job, long long waiting)
{
	const char *fp = json_string_value(json_object_get(step, "step_fingerprint"));
	const json_t *seen = json_object_get(step, "workers_seen");
	char jb[CB_PARAM_NAME_MAX * 4 + 8], st[CB_PARAM_NAME_MAX * 4 + 8], wk[1024], f[80];
	const char *name =
		cb__cli_term(st, sizeof(st), json_string_value(json_object_get(step, "step_name")));

	printf("    waiting: %lld partition%s not claimed; %s for a worker that runs %s/%s",
	       waiting, waiting == 1 ? "" : "s", waiting == 1 ? "it waits" : "they wait",
	       cb__cli_term(jb, sizeof(jb), job), name);
	if (fp)
		printf(" with step definition %s", cb__cli_term(f, sizeof(f), fp));
	if (json_array_size(seen) == 0) {
		printf("; no worker of this job looked for work in the last minute\n");
		return;
	}
	printf("; workers of this job seen in the last minute:");
	for (size_t i = 0; i < json_array_size(seen); i++) {
		if (i == 8) {
			printf(" and %zu more", json_array_size(seen) - i);
			break;
		}
		const json_t *w = json_array_get(seen, i);
		const char *wfp = json_string_value(json_object_get(w, "fingerprint"));
		char *slash;

		cb__cli_term(wk, sizeof(wk), json_string_value(json_object_get(w, "worker")));
		/* host/pid/thread: the process is what matters */
		slash = strrchr(wk, '/');
		if (slash && slash != strchr(wk, '/'))
			*slash = '\0';
		printf("%s %s ", i ? "," : "", wk);
		if (!wfp)
			printf("(no partitioned step '%s')", name);
		else if (!fp || strcmp(wfp, fp) == 0)
			printf("(this definition)");
		else
			printf("(step definition %s: another build)",
			       cb__cli_term(f, sizeof(f), wfp));
	}
	putchar('\n');
}

/*
 * The partitions of one manager step: a line of how far they are, a table
 * (index, status, counts, worker, claims, lease), the exit messages of the
 * failed ones, and why the unclaimed ones wait.
 */
static int print_partitions(const json_t *step, const char *job)
{
	static const char *const headers[] = { "PARTITION", "STATUS", "READ",   "WRITTEN",
					       "COMMITS",   "WORKER", "CLAIMS", "LEASE LEFT" };
	static const char *const kinds[] = { "completed", "running", "not claimed", "failed",
					     "stopped" };
	const json_t *parts = json_object_get(step, "partitions");
	long long count[5] = { 0 };
	char name[CB_PARAM_NAME_MAX * 4 + 8], line[256];
	cb__cli_table *t;
	size_t i, k;
	int n;

	for (i = 0; i < json_array_size(parts); i++) {
		const char *st =
			json_string_value(json_object_get(json_array_get(parts, i), "status"));

		if (!st)
			continue;
		if (strcmp(st, "COMPLETED") == 0)
			count[0]++;
		else if (strcmp(st, "STARTED") == 0 || strcmp(st, "STOPPING") == 0)
			count[1]++;
		else if (strcmp(st, "STARTING") == 0)
			count[2]++;
		else if (is_failure(st))
			count[3]++;
		else if (strcmp(st, "STOPPED") == 0)
			count[4]++;
	}
	n = snprintf(line, sizeof(line), "%zu partition%s", json_array_size(parts),
		     json_array_size(parts) == 1 ? "" : "s");
	for (k = 0; k < 5; k++)
		if (count[k] && n >= 0 && (size_t)n < sizeof(line))
			n += snprintf(line + n, sizeof(line) - (size_t)n, ", %lld %s", count[k],
				      kinds[k]);
	printf("\n  step '%s': %s\n",
	       cb__cli_term(name, sizeof(name),
			    json_string_value(json_object_get(step, "step_name"))),
	       line);
	if (cb__cli_table_new(&t, 8, headers, "rlrrrlrr") < 0)
		return CB_ENOMEM;
	for (i = 0; i < json_array_size(parts); i++) {
		const json_t *p = json_array_get(parts, i);
		char idx[24], st[32], r[24], w[24], cm[24], wk[256], cl[24], lease[32];
		const char *row[8];

		row[0] = cb__cli_json_get_text(p, "partition_index", idx, sizeof(idx));
		row[1] = cb__cli_json_get_text(p, "status", st, sizeof(st));
		row[2] = cb__cli_json_get_text(p, "read_count", r, sizeof(r));
		row[3] = cb__cli_json_get_text(p, "write_count", w, sizeof(w));
		row[4] = cb__cli_json_get_text(p, "commit_count", cm, sizeof(cm));
		row[5] = cb__cli_json_get_text(p, "worker", wk, sizeof(wk));
		row[6] = cb__cli_json_get_text(p, "claim_count", cl, sizeof(cl));
		fmt_lease(lease, sizeof(lease), p);
		row[7] = lease;
		if (cb__cli_table_add(t, row) < 0) {
			cb__cli_table_free(t);
			return CB_ENOMEM;
		}
	}
	cb__cli_table_print(t, stdout, "    ");
	cb__cli_table_free(t);
	for (i = 0; i < json_array_size(parts); i++) {
		const json_t *p = json_array_get(parts, i);
		char raw[CB_ERROR_MESSAGE_MAX], msg[CB_ERROR_MESSAGE_MAX * 4], idx[24], st[32];
		const char *m = cb__cli_json_get_text(p, "exit_message", raw, sizeof(raw));

		if (!is_failure(cb__cli_json_get_text(p, "status", st, sizeof(st))) || !m || !m[0])
			continue;
		printf("    partition %s %s: %s\n",
		       cb__cli_json_get_text(p, "partition_index", idx, sizeof(idx)), st,
		       cb__cli_term(msg, sizeof(msg), m));
	}
	if (count[2] > 0 && job)
		print_waiting(step, job, count[2]);
	return 0;
}

static int print_execution(const json_t *e, const cb_job *job_def)
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
	if (cb__cli_json_get_text(e, "stop_origin", a, sizeof(a)))
		/* OPERATOR's stops are never restarted by a schedule's recovery */
		field("stopped by:", strcmp(a, "OPERATOR") == 0 ? "OPERATOR (stop)" :
				     strcmp(a, "SIGNAL") == 0 ? "SIGNAL (its own SIGTERM/SIGINT)" :
								a);
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
	{
		/* The lock it ran under, and the scope of the definition this
		 * program has (which launches that lock keeps out). */
		char name[512], scope[512], line[1100];

		if (!cb__cli_json_get_text(e, "lock_name", name, sizeof(name)))
			snprintf(name, sizeof(name), "-");
		if (job_def) {
			fmt_lock_scope(scope, sizeof(scope), job_def);
			snprintf(line, sizeof(line), "%s (scope: %s)", name, scope);
		} else {
			snprintf(line, sizeof(line),
				 "%s (scope not known: this program lacks the job)", name);
		}
		field("lock:", line);
	}
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
	for (i = 0; i < json_array_size(steps); i++) {
		const json_t *s = json_array_get(steps, i);

		if (json_is_array(json_object_get(s, "partitions")) &&
		    print_partitions(s, json_string_value(json_object_get(e, "job_name"))) < 0)
			return CB_ENOMEM;
	}
	return 0;
}

/* `show ID --log`: what the run printed, as its launcher kept it. The text
 * is printed as stored (the run's own bytes, made valid UTF-8): it is what
 * the run wrote to its terminal. */
static int show_log(struct cli *c, PGconn *conn, long long id)
{
	json_t *doc = NULL;
	long long dropped;
	int rc;

	if ((rc = cb_repo_execution_log(&doc, conn, id, &c->err)) < 0)
		return cb__cli_fail(c, cb__cli_exit_for(rc, 1));
	if (c->json) {
		cb__cli_json_print(stdout, doc);
	} else if (!json_is_true(json_object_get(doc, "captured"))) {
		printf("no log: execution %lld was not launched by a scheduler node or the "
		       "console (a run started from a shell printed there)\n",
		       id);
	} else {
		const char *text = json_string_value(json_object_get(doc, "log"));
		size_t n = text ? strlen(text) : 0;

		dropped = cb__cli_json_get_ll(doc, "bytes_dropped");
		if (dropped > 0)
			printf("[%lld earlier bytes not kept]\n", dropped);
		if (n > 0) {
			fwrite(text, 1, n, stdout);
			if (text[n - 1] != '\n')
				putchar('\n');
		} else {
			printf("(it printed nothing)\n");
		}
	}
	json_decref(doc);
	return 0;
}

int cb__cli_cmd_show(struct cli *c)
{
	static const char *const flags[] = { "--log", NULL };
	const char *values[1] = { NULL };
	const cb_job *job;
	json_t *e = NULL;
	PGconn *conn = NULL;
	long long id;
	int rc;

	if ((rc = cb__cli_one_id_with(c, &id, flags, values)) != 0)
		return rc;
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	if (values[0]) {
		rc = show_log(c, conn, id);
		PQfinish(conn);
		return rc;
	}
	if ((rc = cb_repo_show_execution(&e, conn, id, &c->err)) < 0) {
		rc = cb__cli_fail(c, cb__cli_exit_for(rc, 1));
		goto done;
	}
	job = cb_registry_find(c->reg, json_string_value(json_object_get(e, "job_name")));
	/* null when this program lacks the job: its scope is its definition's. */
	json_object_set_new(e, "lock_scope",
			    job ? json_string(cb_lock_scope_name(cb_job_lock_scope(job))) :
				  json_null());
	if (c->json)
		cb__cli_json_print(stdout, e);
	else if (print_execution(e, job) < 0) {
		rc = cb__cli_out_of_memory(c);
		goto done;
	}
	rc = 0;
done:
	json_decref(e);
	PQfinish(conn);
	return rc;
}

/* ---- locks and metrics --------------------------------------------------- */

int cb__cli_cmd_locks(struct cli *c)
{
	json_t *list = NULL;
	PGconn *conn = NULL;
	cb__cli_table *t = NULL;
	static const char *const headers[] = { "LOCK",       "OWNER", "TOKEN",
					       "LEASE LEFT", "STATE", "EXECUTION" };
	static const char *const flags[] = { "--all", "--limit=", "--after=", NULL };
	const char *values[3] = { NULL, NULL, NULL };
	const char **pos;
	size_t npos;
	long long limit = 100;
	cb_lock_list_options o = { 0, 0, NULL, 0 };
	char *next = NULL;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	rc = cb__cli_split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos > 0)
		rc = cb__cli_usage_error(
			c,
			"locks: unexpected argument '%.100s' (usage: %s locks [--all] "
			"[--limit N] [--after NAME])",
			pos[0], c->prog);
	if (rc == 0 && values[1] && (cb__cli_parse_positive(&limit, values[1]) < 0 || limit > 1000))
		rc = cb__cli_usage_error(c, "locks: invalid --limit '%.100s' (expected 1..1000)",
					 values[1]);
	free(pos);
	if (rc != 0)
		return rc;
	o.all = values[0] != NULL;
	o.limit = (int)limit;
	o.after = values[2];
	if ((rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	if ((rc = cb_lock_list_page(&list, &next, conn, &o, &c->err)) < 0) {
		rc = cb__cli_fail(c, CB_EXIT_FAILED);
		goto done;
	}
	rc = 0;
	if (c->json) {
		json_t *doc = json_pack("{s:O,s:s?}", "locks", list, "next_after", next);

		cb__cli_json_print(stdout, doc);
		json_decref(doc);
		goto done;
	}
	if (cb__cli_table_new(&t, 6, headers, "llrrlr") < 0) {
		rc = cb__cli_out_of_memory(c);
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
		cells[4] = json_is_true(json_object_get(l, "released")) ? "released" :
			   secs > 0                                     ? "held" :
									  "expired";
		cells[5] = cb__cli_json_get_text(l, "job_execution_id", exec, sizeof(exec));
		if (cb__cli_table_add(t, cells) < 0) {
			rc = cb__cli_out_of_memory(c);
			goto done;
		}
	}
	cb__cli_table_print(t, stdout, "");
	if (next)
		printf("more: %s locks%s --after '%s'\n", c->prog, o.all ? " --all" : "", next);
done:
	free(next);
	cb__cli_table_free(t);
	json_decref(list);
	PQfinish(conn);
	return rc;
}
