/* Job definitions and the default run.id incrementer. */
#include "engine.h"
#include "reserved.h"

#include "cbatch/lock.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 100)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return 0;
	return 1;
}

int cb_job_new(cb_job **out, const char *name, cb_error *err)
{
	cb_job *job;

	*out = NULL;
	if (!valid_name(name))
		return cb_error_set(
			err, CB_EINVAL,
			"invalid job name '%.100s' (1-100 characters of A-Z a-z 0-9 _ - .)",
			name ? name : "");
	job = calloc(1, sizeof(*job));
	if (!job || !(job->name = strdup(name))) {
		free(job);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	job->restartable = 1;
	job->incrementer = cb_incrementer_run_id;
	job->lease_seconds = CB_DEFAULT_LEASE_SECONDS;
	*out = job;
	return 0;
}

void cb_job_free(cb_job *job)
{
	if (!job)
		return;
	for (size_t i = 0; i < job->nsteps; i++) {
		free((char *)job->steps[i].name);
		free((char *)job->steps[i].revision);
	}
	free(job->steps);
	free(job->description);
	free(job->lock_template);
	for (size_t i = 0; i < job->ntransitions; i++) {
		free(job->transitions[i].from);
		free(job->transitions[i].pattern);
		free(job->transitions[i].to);
	}
	free(job->transitions);
	for (size_t i = 0; i < job->nparam_specs; i++)
		free(job->param_specs[i].name);
	free(job->param_specs);
	free(job->listeners);
	free(job->name);
	free(job);
}

int cb__version_check(unsigned int version, unsigned int current, const char *what, cb_error *err)
{
	if (version >= 1 && version <= current)
		return 0;
	return cb_error_set(err, CB_EINVAL, "%s of unknown version %u (this library knows 1..%u)",
			    what, version, current);
}

const char *cb_job_name(const cb_job *job)
{
	return job->name;
}

int cb_job_add_step(cb_job *job, const cb_step_def *def, cb_error *err)
{
	cb_step_def *steps;
	char *name;

	if (!def)
		return cb_error_set(err, CB_EINVAL, "job '%s': step definition is NULL", job->name);
	if (cb__version_check(def->version, CB_STEP_DEF_VERSION, "step definition", err) < 0)
		return cb_error_prefix(err, "job '%s'", job->name);
	if (!valid_name(def->name))
		return cb_error_set(err, CB_EINVAL, "job '%s': invalid step name '%.100s'",
				    job->name, def->name ? def->name : "");
	for (size_t i = 0; i < job->nsteps; i++)
		if (strcmp(job->steps[i].name, def->name) == 0)
			return cb_error_set(err, CB_EINVAL, "job '%s': duplicate step name '%s'",
					    job->name, def->name);
	if (def->kind == CB_STEP_CHUNK && !def->build)
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': chunk step '%s' has no build callback", job->name,
				    def->name);
	if (def->kind == CB_STEP_TASKLET && !def->tasklet)
		return cb_error_set(err, CB_EINVAL, "job '%s': tasklet step '%s' has no tasklet",
				    job->name, def->name);
	if (def->kind != CB_STEP_CHUNK && def->kind != CB_STEP_TASKLET)
		return cb_error_set(err, CB_EINVAL, "job '%s': step '%s' has an unknown kind",
				    job->name, def->name);
	if (def->version >= 2 && def->partition) {
		if (def->kind != CB_STEP_CHUNK)
			return cb_error_set(
				err, CB_EINVAL,
				"job '%s': step '%s': only chunk steps can be partitioned",
				job->name, def->name);
		/* "<step>:partition<i>" must fit the repository's step_name */
		if (strlen(def->name) > CB__PARTITIONED_NAME_MAX)
			return cb_error_set(err, CB_EINVAL,
					    "job '%s': partitioned step name '%.100s' is longer "
					    "than %d bytes",
					    job->name, def->name, CB__PARTITIONED_NAME_MAX);
		if (def->partitions > CB_MAX_PARTITIONS)
			return cb_error_set(
				err, CB_EINVAL, "job '%s': step '%s': %u partitions (at most %d)",
				job->name, def->name, def->partitions, CB_MAX_PARTITIONS);
	}
	if (def->version >= 4 && def->connections > 2)
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': step '%s': %u connections (1 or 2 allowed)",
				    job->name, def->name, def->connections);
	steps = realloc(job->steps, (job->nsteps + 1) * sizeof(*steps));
	if (!steps)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	job->steps = steps;
	name = strdup(def->name);
	if (!name)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	/* Members after the definition's version are not its own: never read them. */
	memset(&steps[job->nsteps], 0, sizeof(*steps));
	memcpy(&steps[job->nsteps], def,
	       def->version >= 4 ? sizeof(*def) :
	       def->version == 3 ? offsetof(cb_step_def, connections) :
	       def->version == 2 ? offsetof(cb_step_def, revision) :
				   offsetof(cb_step_def, partition));
	steps[job->nsteps].name = name;
	steps[job->nsteps].revision = NULL;
	if (def->version >= 3 && def->revision &&
	    !(steps[job->nsteps].revision = strdup(def->revision))) {
		free(name);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	job->nsteps++;
	return 0;
}

void cb_job_set_restartable(cb_job *job, int restartable)
{
	job->restartable = restartable != 0;
}

int cb_job_restartable(const cb_job *job)
{
	return job && job->restartable;
}

void cb_job_set_validator(cb_job *job, cb_param_validator_fn fn, void *ctx)
{
	job->validator = fn;
	job->validator_ctx = fn ? ctx : NULL;
}

void cb_job_set_incrementer(cb_job *job, cb_incrementer_fn fn, void *ctx)
{
	job->incrementer = fn ? fn : cb_incrementer_run_id;
	job->incrementer_ctx = fn ? ctx : NULL;
}

int cb_job_set_description(cb_job *job, const char *text, cb_error *err)
{
	char *d = strdup(text ? text : "");

	if (!d)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	free(job->description);
	job->description = d;
	return 0;
}

const char *cb_job_description(const cb_job *job)
{
	return job->description ? job->description : "";
}

int cb_incrementer_run_id(void *ctx, cb_params **out, const cb_params *last, const cb_params *given,
			  cb_error *err)
{
	long long next = 1, prev;
	int rc;

	(void)ctx;
	*out = NULL;
	if (last && cb_params_get_long(last, "run.id", &prev) == 0)
		next = prev + 1;
	rc = cb_params_dup(out, given, err);
	if (rc < 0)
		return rc;
	cb_params_remove(*out, "run.id");
	rc = cb_params_add_long(*out, "run.id", next, 1, err);
	if (rc < 0) {
		cb_params_free(*out);
		*out = NULL;
	}
	return rc;
}

int cb_job_add_listener(cb_job *job, const cb_listener *listener, cb_error *err)
{
	cb_listener *l;

	if (!listener)
		return cb_error_set(err, CB_EINVAL, "job '%s': listener is NULL", job->name);
	if (cb__version_check(listener->version, CB_LISTENER_VERSION, "listener", err) < 0)
		return cb_error_prefix(err, "job '%s'", job->name);
	l = realloc(job->listeners, (job->nlisteners + 1) * sizeof(*l));
	if (!l)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	job->listeners = l;
	l[job->nlisteners++] = *listener;
	return 0;
}

static const cb_step_def *find_step(const cb_job *job, const char *name)
{
	for (size_t i = 0; i < job->nsteps; i++)
		if (strcmp(job->steps[i].name, name) == 0)
			return &job->steps[i];
	return NULL;
}

int cb_job_add_transition(cb_job *job, const char *from, const char *pattern, const char *to,
			  cb_error *err)
{
	struct cb__transition *t, nt;

	if (!from || !find_step(job, from))
		return cb_error_set(err, CB_EINVAL, "job '%s': transition from unknown step '%s'",
				    job->name, from ? from : "");
	if (!pattern || !*pattern || strlen(pattern) > 31)
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': transition from '%s' needs an exit "
				    "status pattern of 1..31 characters",
				    job->name, from);
	if (!to || (strcmp(to, CB_FLOW_END) != 0 && strcmp(to, CB_FLOW_FAIL) != 0 &&
		    strcmp(to, CB_FLOW_STOP) != 0 && !find_step(job, to)))
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': transition from '%s' on '%s' goes to "
				    "unknown step '%s'",
				    job->name, from, pattern, to ? to : "");
	nt.from = strdup(from);
	nt.pattern = strdup(pattern);
	nt.to = strdup(to);
	t = realloc(job->transitions, (job->ntransitions + 1) * sizeof(*t));
	if (!t || !nt.from || !nt.pattern || !nt.to) {
		if (t)
			job->transitions = t;
		free(nt.from);
		free(nt.pattern);
		free(nt.to);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	job->transitions = t;
	t[job->ntransitions++] = nt;
	return 0;
}

int cb__pattern_match(const char *p, const char *s)
{
	/* Iterative glob with backtracking to the last '*'. */
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*p == '*') {
			star = p++;
			resume = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else if (star) {
			p = star + 1;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

int cb_job_add_param(cb_job *job, const char *name, cb_param_type type, int required, cb_error *err)
{
	return cb_job_declare_param(job, name, type, required ? CB_PARAM_REQUIRED : 0, err);
}

int cb_job_declare_param(cb_job *job, const char *name, cb_param_type type, unsigned int flags,
			 cb_error *err)
{
	struct cb__param_spec *ps;
	cb_params *probe = NULL;
	char *copy;
	int rc;

	/* Reuse the parameter parser's name rules. */
	rc = cb_params_new(&probe, err);
	if (rc == 0)
		rc = cb_params_add_string(probe, name, "x", 1, err);
	cb_params_free(probe);
	if (rc < 0)
		return cb_error_prefix(err, "job '%s'", job->name);
	if (type < CB_PARAM_STRING || type > CB_PARAM_DATE)
		return cb_error_set(err, CB_EINVAL, "job '%s': parameter '%s' of unknown type",
				    job->name, name);
	if (flags & ~(CB_PARAM_REQUIRED | CB_PARAM_NON_IDENTIFYING))
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': parameter '%s' with unknown flags 0x%x", job->name,
				    name, flags);
	/* --next numbers instances by the largest identifying run.id. */
	if ((flags & CB_PARAM_NON_IDENTIFYING) && strcmp(name, "run.id") == 0)
		return cb_error_set(err, CB_EINVAL,
				    "job '%s': run.id cannot be non-identifying (--next numbers "
				    "instances by it)",
				    job->name);
	copy = strdup(name);
	ps = realloc(job->param_specs, (job->nparam_specs + 1) * sizeof(*ps));
	if (!copy || !ps) {
		if (ps)
			job->param_specs = ps;
		free(copy);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	job->param_specs = ps;
	ps[job->nparam_specs++] =
		(struct cb__param_spec){ copy, type, (flags & CB_PARAM_REQUIRED) != 0,
					 !(flags & CB_PARAM_NON_IDENTIFYING) };
	return 0;
}

size_t cb_job_param_count(const cb_job *job)
{
	return job ? job->nparam_specs : 0;
}

int cb_job_param_at(const cb_job *job, size_t i, const char **name, cb_param_type *type,
		    int *required)
{
	if (!job || i >= job->nparam_specs)
		return CB_ENOTFOUND;
	if (name)
		*name = job->param_specs[i].name;
	if (type)
		*type = job->param_specs[i].type;
	if (required)
		*required = job->param_specs[i].required;
	return 0;
}

int cb_job_validate_params(const cb_job *job, const cb_params *params, cb_error *err)
{
	size_t n = params ? cb_params_count(params) : 0;
	int rc;

	/* Before the lock, the instance and the execution: a bad chunk.size or
	 * partition.count must not be found by a step after they are written. */
	if ((rc = cb__reserved_check(params, err)) < 0)
		return rc;
	if (job->nparam_specs == 0)
		return 0;
	for (size_t i = 0; i < job->nparam_specs; i++) {
		const struct cb__param_spec *ps = &job->param_specs[i];
		cb_param_type type;

		if (!params || cb_params_find(params, ps->name, &type, NULL, NULL) < 0) {
			if (ps->required)
				return cb_error_set(err, CB_EINVAL,
						    "job '%s' requires parameter "
						    "%s:%s",
						    job->name, ps->name,
						    cb_param_type_name(ps->type));
			continue;
		}
		if (type != ps->type)
			return cb_error_set(err, CB_EINVAL,
					    "job '%s': parameter '%s' must be of type "
					    "%s, not %s",
					    job->name, ps->name, cb_param_type_name(ps->type),
					    cb_param_type_name(type));
	}
	for (size_t i = 0; i < n; i++) {
		const char *name;
		int ident, known = 0;

		cb_params_at(params, i, &name, NULL, NULL, &ident);
		for (size_t k = 0; k < job->nparam_specs && !known; k++)
			known = strcmp(job->param_specs[k].name, name) == 0;
		if (!known && ident && strcmp(name, "run.id") != 0)
			return cb_error_set(
				err, CB_EINVAL,
				"job '%s' does not accept parameter '%s' "
				"(make it non-identifying with a leading '-', or see the "
				"job's parameters)",
				job->name, name);
	}
	return 0;
}
