/* The job's lock settings and the lock name of a launch. */
#include "engine.h"

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
				return cb_error_set(err, CB_EINVAL, "job '%s': unclosed '{' in lock "
						    "template '%s'", job->name, name_template);
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
				v = strcmp(name, "job") == 0 ? job->name : cb_params_get(params, name);
				if (!v) {
					free(b.s);
					return cb_error_set(err, CB_EINVAL,
							    "job '%s': lock template '%s' needs "
							    "parameter '%s'", job->name,
							    job->lock_template, name);
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
