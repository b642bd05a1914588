/*
 * A job's parameters as it declares them, and the key of the instance they
 * name. A parameter the job declared non-identifying (CB_PARAM_NON_IDENTIFYING)
 * is so on every path that keys an instance, whatever the launch marked: the
 * launcher, the console's check before it spawns a run, the scheduler's
 * claim and "fire now" all key through cb_job_key, so that none of them can
 * name another instance than the one the run makes.
 */
#include "engine.h"

#include <string.h>

int cb_job_param_identifying(const cb_job *job, const char *name)
{
	for (size_t i = 0; job && name && i < job->nparam_specs; i++)
		if (!job->param_specs[i].identifying && strcmp(job->param_specs[i].name, name) == 0)
			return 0;
	return 1;
}

int cb_job_params_resolve(cb_params **out, const cb_job *job, const cb_params *given, cb_error *err)
{
	cb_params *p = NULL;
	int rc;

	*out = NULL;
	rc = given ? cb_params_dup(&p, given, err) : cb_params_new(&p, err);
	if (rc < 0)
		return rc;
	/* A declared parameter the launch did not give has nothing to mark. */
	for (size_t i = 0; job && i < job->nparam_specs; i++)
		if (!job->param_specs[i].identifying)
			(void)cb_params_set_identifying(p, job->param_specs[i].name, 0);
	*out = p;
	return 0;
}

int cb_job_key(char *out, const cb_job *job, const cb_params *params, cb_error *err)
{
	cb_params *p = NULL;
	int rc;

	rc = cb_job_params_resolve(&p, job, params, err);
	if (rc == 0)
		rc = cb_params_job_key(out, p, err);
	cb_params_free(p);
	return rc;
}
