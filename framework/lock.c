/*
 * The execution lock, engine side: the job's lock settings, the lock name of
 * a launch, taking the lock for a run (acquire or take over: a held lock is a
 * skip), and what the steps need while they run (the heartbeat's verdict, the
 * fence every checkpoint carries). The lock's SQL and the owner identity are
 * repository/lock.c; the heartbeat thread is heartbeat.c.
 */
#include "engine.h"
#include "heartbeat.h"
#include "repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/lock.h"

#define LOCK_NAME_MAX 400

int cb_job_set_lock(cb_job *job, const char *name_template, double at_most_seconds,
		    double at_least_seconds, cb_error *err)
{
	char *t = NULL;

	if (at_most_seconds < 0 || at_least_seconds < 0 || at_most_seconds > 30 * 86400.0 ||
	    at_least_seconds > 30 * 86400.0)
		return cb_error_set(err, CB_EINVAL, "job '%s': lock times must be 0..30 days",
				    job->name);
	if (name_template) {
		const char *open = strchr(name_template, '{');

		for (; open; open = strchr(open + 1, '{'))
			if (!strchr(open, '}'))
				return cb_error_set(err, CB_EINVAL,
						    "job '%s': unclosed '{' in lock "
						    "template '%s'",
						    job->name, name_template);
		t = strdup(name_template);
		if (!t)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		free(job->lock_template);
		job->lock_template = t;
	}
	/* NULL keeps the key: changing the lease must not widen a job scope
	 * back to per instance behind its author's back. */
	if (at_most_seconds > 0)
		job->lease_seconds = at_most_seconds;
	job->lock_at_least_seconds = at_least_seconds;
	return 0;
}

int cb_job_set_lock_scope(cb_job *job, cb_lock_scope scope, cb_error *err)
{
	char *t = NULL;

	if (scope == CB_LOCK_SCOPE_CUSTOM)
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': a custom lock scope is a template: use "
				    "cb_job_set_lock(job, \"{job}:{PARAM}\", ...)",
				    job->name);
	if (scope != CB_LOCK_SCOPE_INSTANCE && scope != CB_LOCK_SCOPE_JOB)
		return cb_error_set(err, CB_EINVAL, "job '%s': unknown lock scope %d", job->name,
				    (int)scope);
	if (scope == CB_LOCK_SCOPE_JOB && !(t = strdup("{job}")))
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	free(job->lock_template);
	job->lock_template = t;
	return 0;
}

/* Does the template take anything from the parameters ({NAME} but {job})? */
static int names_a_parameter(const char *t)
{
	for (const char *open = strchr(t, '{'); open; open = strchr(open + 1, '{'))
		if (strncmp(open, "{job}", 5) != 0)
			return 1;
	return 0;
}

cb_lock_scope cb_job_lock_scope(const cb_job *job)
{
	if (!job->lock_template)
		return CB_LOCK_SCOPE_INSTANCE;
	return names_a_parameter(job->lock_template) ? CB_LOCK_SCOPE_CUSTOM : CB_LOCK_SCOPE_JOB;
}

const char *cb_job_lock_template(const cb_job *job)
{
	return job->lock_template;
}

const char *cb_lock_scope_name(cb_lock_scope scope)
{
	switch (scope) {
	case CB_LOCK_SCOPE_INSTANCE:
		return "instance";
	case CB_LOCK_SCOPE_JOB:
		return "job";
	case CB_LOCK_SCOPE_CUSTOM:
		return "custom";
	}
	return "unknown";
}

typedef struct buf {
	char *s;
	size_t len, cap;
} buf;

static int put(buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->s, cap);

		if (!p)
			return -1;
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

/* @p s with the default name's separators (',' '=') and the escape
 * character itself escaped by a backslash, so that no value can pass for
 * another parameter: "file=/a,run.id=1" as one value is "file=/a\,run.id\=1". */
static int put_escaped(buf *b, const char *s)
{
	int rc = 0;

	for (; rc == 0 && *s; s++) {
		if (*s == ',' || *s == '=' || *s == '\\')
			rc = put(b, "\\", 1);
		if (rc == 0)
			rc = put(b, s, 1);
	}
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* job:name=value,name=value over the identifying parameters (as the job
 * declares them: the instance's), sorted; names and values escaped
 * (put_escaped). */
static int default_name(buf *b, const cb_job *job, const cb_params *params)
{
	size_t n = cb_params_count(params), k = 0;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	int rc = 0;

	if (!names)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *name;
		int ident;

		cb_params_at(params, i, &name, NULL, NULL, &ident);
		if (ident && cb_job_param_identifying(job, name))
			names[k++] = name;
	}
	qsort(names, k, sizeof(*names), by_name);
	rc = put(b, job->name, strlen(job->name));
	for (size_t i = 0; rc == 0 && i < k; i++) {
		const char *v = cb_params_get(params, names[i]);

		rc = put(b, i ? "," : ":", 1);
		if (rc == 0)
			rc = put_escaped(b, names[i]);
		if (rc == 0)
			rc = put(b, "=", 1);
		if (rc == 0)
			rc = put_escaped(b, v);
	}
	free(names);
	return rc;
}

int cb_job_lock_name(char **out, const cb_job *job, const cb_params *params, cb_error *err)
{
	buf b = { NULL, 0, 0 };
	int rc = 0;

	*out = NULL;
	if (!job->lock_template) {
		rc = default_name(&b, job, params);
	} else {
		const char *s = job->lock_template;

		while (rc == 0 && *s) {
			const char *open = strchr(s, '{'), *close;

			if (!open) {
				rc = put(&b, s, strlen(s));
				break;
			}
			rc = put(&b, s, (size_t)(open - s));
			close = strchr(open, '}');
			if (rc == 0) {
				char name[CB_PARAM_NAME_MAX + 1];
				size_t n = (size_t)(close - open - 1);
				const char *v;

				if (n > CB_PARAM_NAME_MAX)
					n = CB_PARAM_NAME_MAX;
				memcpy(name, open + 1, n);
				name[n] = '\0';
				v = strcmp(name, "job") == 0 ? job->name :
							       cb_params_get(params, name);
				if (!v) {
					free(b.s);
					return cb_error_set(err, CB_EINVAL,
							    "job '%s': lock template '%s' needs "
							    "parameter '%s'",
							    job->name, job->lock_template, name);
				}
				rc = put(&b, v, strlen(v));
			}
			s = close + 1;
		}
	}
	if (rc == 0 && b.len > LOCK_NAME_MAX) {
		char key[CB_JOB_KEY_LEN + 1];

		rc = cb_job_key(key, job, params, err);
		if (rc < 0) {
			free(b.s);
			return rc;
		}
		b.len = 0;
		rc = put(&b, job->name, strlen(job->name));
		if (rc == 0)
			rc = put(&b, ":#key=", 6); /* no parameter name starts with # */
		if (rc == 0)
			rc = put(&b, key, CB_JOB_KEY_LEN);
	}
	if (rc < 0 || !b.s) {
		free(b.s);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	*out = b.s;
	return 0;
}

/* ---- a run and its lock ---- */

int cb__run_check_lock(const cb__run *run, cb_error *err)
{
	char why[CB_ERROR_MESSAGE_MAX];

	if (!cb__heartbeat_lost(run->heartbeat, why, sizeof(why)))
		return 0;
	return cb_error_set(err, CB_EFENCED, "heartbeat failed, stopped writing: %s", why);
}

void cb__run_fence(const cb__run *run, cb__checkpoint *c)
{
	c->lock_name = run->lock_name;
	c->fencing_token = run->fencing_token;
	c->lease_seconds = run->lease_seconds;
}

/* What the lock keeps apart, for a skip's message: who else it excludes.
 * Last in the message, so that a long lock name cuts this, not the way out. */
static void scope_phrase(char *out, size_t size, const cb_job *job)
{
	switch (cb_job_lock_scope(job)) {
	case CB_LOCK_SCOPE_JOB:
		snprintf(out, size,
			 "lock scope job: one execution of job '%s' at a time, whatever its "
			 "parameters",
			 job->name);
		break;
	case CB_LOCK_SCOPE_CUSTOM:
		snprintf(out, size, "lock scope custom: one execution per name of template '%s'",
			 job->lock_template);
		break;
	default:
		snprintf(out, size,
			 "lock scope instance: one execution per job and identifying parameters");
	}
}

int cb__lock_take(cb__lock_grant *g, PGconn *conn, const cb_job *job, const char *lock_name,
		  double lease, cb_error *err)
{
	char scope[CB_ERROR_MESSAGE_MAX / 2];
	int rc = cb__lock_acquire(g, conn, lock_name, cb__owner_id(), lease, err);

	if (rc < 0)
		return rc;
	scope_phrase(scope, sizeof(scope), job);
	if (g->outcome == CB__LOCK_HELD && g->held_left_seconds <= 0 && g->note[0])
		/* Its lease is over, but a session that could not be ended keeps
		 * the lock row in an open transaction. */
		return cb_error_set(
			err, CB_ERUNNING,
			"lock '%s' of %s (lease ended %s) cannot be taken over: %s: "
			"skipped; a role allowed to end that session can run `unlock %s "
			"--force`; %s",
			lock_name, g->holder, g->held_until, g->note, lock_name, scope);
	if (g->outcome == CB__LOCK_HELD)
		return cb_error_set(
			err, CB_ERUNNING,
			"lock '%s' is held by %s until %s (%.0f s left): skipped; if its "
			"owner is gone, wait for the lease or run `unlock %s --force`; %s",
			lock_name, g->holder, g->held_until, g->held_left_seconds, lock_name,
			scope);
	return 0;
}
