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
	}
	free(job->lock_template);
	job->lock_template = t;
	if (at_most_seconds > 0)
		job->lease_seconds = at_most_seconds;
	job->lock_at_least_seconds = at_least_seconds;
	return 0;
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

/* job:name=value,name=value over the identifying parameters, sorted; names
 * and values escaped (put_escaped). */
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
		if (ident)
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

		rc = cb_params_job_key(key, params, err);
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

int cb__lock_take(cb__lock_grant *g, PGconn *conn, const char *lock_name, double lease,
		  cb_error *err)
{
	int rc = cb__lock_acquire(g, conn, lock_name, cb__owner_id(), lease, err);

	if (rc < 0)
		return rc;
	if (g->outcome == CB__LOCK_HELD && g->held_left_seconds <= 0 && g->note[0])
		/* Its lease is over, but a session that could not be ended keeps
		 * the lock row in an open transaction. */
		return cb_error_set(
			err, CB_ERUNNING,
			"lock '%s' of %s (lease ended %s) cannot be taken over: %s: "
			"skipped; a role allowed to end that session can run `unlock %s "
			"--force`",
			lock_name, g->holder, g->held_until, g->note, lock_name);
	if (g->outcome == CB__LOCK_HELD)
		return cb_error_set(
			err, CB_ERUNNING,
			"lock '%s' is held by %s until %s (%.0f s left): skipped; if its "
			"owner is gone, wait for the lease or run `unlock %s --force`",
			lock_name, g->holder, g->held_until, g->held_left_seconds, lock_name);
	return 0;
}
