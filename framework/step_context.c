/* Accessors of the step context and the chunk arena. */
#include "step_context.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

#include "cbatch/job.h"
#include "cbatch/partition.h"
#include "repo.h"

const char *cb_step_context_job_name(const cb_step_context *sc)
{
	return sc->job_name;
}

const char *cb_step_context_step_name(const cb_step_context *sc)
{
	return sc->step_name;
}

long long cb_step_context_job_instance_id(const cb_step_context *sc)
{
	return sc->job_instance_id;
}

long long cb_step_context_job_execution_id(const cb_step_context *sc)
{
	return sc->job_execution_id;
}

long long cb_step_context_step_execution_id(const cb_step_context *sc)
{
	return sc->step_execution_id;
}

const cb_params *cb_step_context_params(const cb_step_context *sc)
{
	return sc->params;
}

const char *cb_step_param(const cb_step_context *sc, const char *name)
{
	return sc && name ? cb_params_get(sc->params, name) : NULL;
}

long long cb_step_param_long(const cb_step_context *sc, const char *name, long long dflt)
{
	long long v;

	if (!sc || !name || cb_params_get_long(sc->params, name, &v) < 0)
		return dflt;
	return v;
}

double cb_step_param_double(const cb_step_context *sc, const char *name, double dflt)
{
	cb_param_type type;
	const char *value;

	if (!sc || !name || cb_params_find(sc->params, name, &type, &value, NULL) < 0 ||
	    (type != CB_PARAM_DOUBLE && type != CB_PARAM_LONG))
		return dflt;
	return strtod(value, NULL); /* validated when the parameter was parsed */
}

int cb_step_context_step_summary(const cb_step_context *sc, const char *step_name,
				 cb_step_summary *out, cb_error *err)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!sc || !step_name || !out)
		return cb_error_set(err, CB_EINVAL, "cb_step_context_step_summary: %s is NULL",
				    !sc        ? "step context" :
				    !step_name ? "step name" :
						 "out");
	out->status = CB_STATUS_UNKNOWN;
	return cb__repo_step_summary(out, sc->conn, sc->job_instance_id, step_name, err);
}

size_t cb_step_context_chunk_size(const cb_step_context *sc)
{
	return sc->chunk_size;
}

PGconn *cb_step_context_conn(const cb_step_context *sc)
{
	return sc->conn;
}

int cb_step_context_checking(const cb_step_context *sc)
{
	return sc ? sc->checking : 0;
}

int cb_step_context_set_source_type(const cb_step_context *sc, const char *column, const char *type)
{
	json_t *v;

	if (!sc || !column || !type)
		return CB_EINVAL;
	if (!sc->checking || !sc->sources)
		return 0; /* only a check compares types before anything runs */
	v = json_string(type);
	if (!v || json_object_set_new(sc->sources, column, v) < 0)
		return CB_ENOMEM;
	return 0;
}

const char *cb_step_context_source_type(const cb_step_context *sc, const char *column)
{
	if (!sc || !column || !sc->checking || !sc->sources)
		return NULL;
	return json_string_value(json_object_get(sc->sources, column));
}

int cb_step_context_set_exit_status(const cb_step_context *sc, const char *exit_status)
{
	/* The one field plug-ins may change: the engine owns the object. */
	cb_step_context *m = (cb_step_context *)sc;
	size_t n = exit_status ? strlen(exit_status) : 0;

	if (n == 0 || n >= sizeof(m->exit_status))
		return CB_EINVAL;
	/* It is stored and shown: valid UTF-8 without control characters. */
	if (!cb__utf8_valid(exit_status))
		return CB_EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)exit_status[i] < 0x20 || exit_status[i] == 0x7F)
			return CB_EINVAL;
	memcpy(m->exit_status, exit_status, n + 1);
	return 0;
}

json_t *cb_step_context_job_context(const cb_step_context *sc)
{
	return sc->job_context;
}

void *cb_chunk_alloc(cb_chunk *chunk, size_t size)
{
	return cb__arena_alloc(&chunk->arena, size);
}

const cb_step_context *cb_chunk_step(const cb_chunk *chunk)
{
	return chunk->sc;
}

const json_t *cb_step_context_partition(const cb_step_context *sc)
{
	return sc ? sc->partition : NULL;
}
