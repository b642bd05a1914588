/*
 * Path templates of the file writers (include/cbatch/writers.h,
 * cb_file_path_expand): {job}, {step}, {job_execution}, {step_execution},
 * {job_instance} and {param:NAME}, expanded with the step context at the
 * writer's first open.
 */
#include "cbatch/writers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
	char *p;
	size_t len, cap;
} buf;

static int buf_add(buf *b, const char *s, size_t n)
{
	if (b->cap - b->len <= n) {
		size_t cap = b->cap ? b->cap : 128;
		char *p;

		while (cap - b->len <= n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return CB_ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/*
 * A value that may become part of one path component: not empty, no '/', no
 * control character, and not starting with '.' (so that no component made
 * with it can be "." or "..", and no value makes a hidden file). @return
 * NULL, or why not.
 */
static const char *unsafe(const char *v)
{
	if (!v[0])
		return "it is empty";
	if (v[0] == '.')
		return "it starts with '.'";
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '/')
			return "it contains '/'";
		if (*p < 0x20 || *p == 0x7F)
			return "it contains a control character";
	}
	return NULL;
}

/* Is the placeholder @p name (@p n bytes) @p word? */
static int is(const char *name, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(name, word, n) == 0;
}

/* The value of the placeholder @p name, as text into @p num or borrowed. */
static int value_of(const char **out, char *num, size_t numsize, const char *tmpl, const char *name,
		    size_t n, const cb_step_context *sc, cb_error *err)
{
	*out = NULL;
	if (!sc)
		return cb_error_set(err, CB_EINVAL,
				    "path template '%s': {%.*s} needs a step context (expand it "
				    "in open)",
				    tmpl, (int)n, name);
	if (is(name, n, "job")) {
		*out = cb_step_context_job_name(sc);
	} else if (is(name, n, "step")) {
		*out = cb_step_context_step_name(sc);
	} else if (is(name, n, "job_execution")) {
		snprintf(num, numsize, "%lld", cb_step_context_job_execution_id(sc));
		*out = num;
	} else if (is(name, n, "step_execution")) {
		snprintf(num, numsize, "%lld", cb_step_context_step_execution_id(sc));
		*out = num;
	} else if (is(name, n, "job_instance")) {
		snprintf(num, numsize, "%lld", cb_step_context_job_instance_id(sc));
		*out = num;
	} else if (n > 6 && memcmp(name, "param:", 6) == 0) {
		char pname[256];

		if (n - 6 >= sizeof(pname))
			return cb_error_set(err, CB_EINVAL,
					    "path template '%s': parameter name too long", tmpl);
		memcpy(pname, name + 6, n - 6);
		pname[n - 6] = '\0';
		*out = cb_step_context_params(sc) ?
			       cb_params_get(cb_step_context_params(sc), pname) :
			       NULL;
		if (!*out)
			return cb_error_set(err, CB_EINVAL,
					    "path template '%s': parameter '%s' is not set", tmpl,
					    pname);
	} else {
		return cb_error_set(err, CB_EINVAL,
				    "path template '%s': unknown placeholder {%.*s} (write {{ for "
				    "a literal brace)",
				    tmpl, (int)n, name);
	}
	if (!*out)
		*out = "";
	return 0;
}

int cb_file_path_expand(char **out, const char *tmpl, const cb_step_context *sc, cb_error *err)
{
	buf b = { NULL, 0, 0 };
	const char *p;
	int rc = 0;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "path template: out is NULL");
	*out = NULL;
	if (!tmpl || !tmpl[0])
		return cb_error_set(err, CB_EINVAL, "path template: empty");
	for (p = tmpl; *p && rc == 0;) {
		const char *name, *close, *v, *why;
		char num[24];
		size_t lit = strcspn(p, "{}");

		if (lit) {
			rc = buf_add(&b, p, lit);
			p += lit;
			continue;
		}
		if (p[0] == p[1]) { /* "{{" or "}}": a literal brace */
			rc = buf_add(&b, p, 1);
			p += 2;
			continue;
		}
		if (*p == '}') {
			rc = cb_error_set(err, CB_EINVAL,
					  "path template '%s': '}' at byte %zu closes nothing "
					  "(write }} for a literal brace)",
					  tmpl, (size_t)(p - tmpl) + 1);
			break;
		}
		name = p + 1;
		close = strchr(name, '}');
		if (!close) {
			rc = cb_error_set(err, CB_EINVAL,
					  "path template '%s': '{' at byte %zu is not closed", tmpl,
					  (size_t)(p - tmpl) + 1);
			break;
		}
		rc = value_of(&v, num, sizeof(num), tmpl, name, (size_t)(close - name), sc, err);
		if (rc == 0 && (why = unsafe(v)) != NULL)
			rc = cb_error_set(err, CB_EINVAL,
					  "path template '%s': {%.*s} is '%.200s', which cannot be "
					  "part of a file name: %s",
					  tmpl, (int)(close - name), name, v, why);
		if (rc == 0)
			rc = buf_add(&b, v, strlen(v));
		p = close + 1;
	}
	if (rc == CB_ENOMEM)
		cb_error_set(err, CB_ENOMEM, "path template '%s': out of memory", tmpl);
	if (rc < 0) {
		free(b.p);
		return rc;
	}
	*out = b.p;
	return 0;
}
