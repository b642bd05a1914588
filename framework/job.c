/* Job definitions and the default run.id incrementer. */
#include "engine.h"

#include "cbatch/lock.h"

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
		return cb_error_set(err, CB_EINVAL,
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
	for (size_t i = 0; i < job->nsteps; i++)
		free((char *)job->steps[i].name);
	free(job->steps);
	free(job->description);
	free(job->lock_template);
	free(job->name);
	free(job);
}

const char *cb_job_name(const cb_job *job)
{
	return job->name;
}

int cb_job_add_step(cb_job *job, const cb_step_def *def, cb_error *err)
{
	cb_step_def *steps;
	char *name;

	if (!def || def->version != CB_STEP_DEF_VERSION)
		return cb_error_set(err, CB_EINVAL, "job '%s': step definition of unknown version",
				    job->name);
	if (!valid_name(def->name))
		return cb_error_set(err, CB_EINVAL, "job '%s': invalid step name '%.100s'",
				    job->name, def->name ? def->name : "");
	for (size_t i = 0; i < job->nsteps; i++)
		if (strcmp(job->steps[i].name, def->name) == 0)
			return cb_error_set(err, CB_EINVAL, "job '%s': duplicate step name '%s'",
					    job->name, def->name);
	if (def->kind == CB_STEP_CHUNK && !def->build)
		return cb_error_set(err, CB_EINVAL, "job '%s': chunk step '%s' has no build callback",
				    job->name, def->name);
	if (def->kind == CB_STEP_TASKLET && !def->tasklet)
		return cb_error_set(err, CB_EINVAL, "job '%s': tasklet step '%s' has no tasklet",
				    job->name, def->name);
	if (def->kind != CB_STEP_CHUNK && def->kind != CB_STEP_TASKLET)
		return cb_error_set(err, CB_EINVAL, "job '%s': step '%s' has an unknown kind",
				    job->name, def->name);
	steps = realloc(job->steps, (job->nsteps + 1) * sizeof(*steps));
	if (!steps)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	job->steps = steps;
	name = strdup(def->name);
	if (!name)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	steps[job->nsteps] = *def;
	steps[job->nsteps].name = name;
	job->nsteps++;
	return 0;
}

void cb_job_set_restartable(cb_job *job, int restartable)
{
	job->restartable = restartable != 0;
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

int cb_incrementer_run_id(void *ctx, cb_params **out, const cb_params *last,
			  const cb_params *given, cb_error *err)
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
