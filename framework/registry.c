/* The registry: the jobs a program offers (owned) and its extra commands. */
#include "cbatch/cli.h"

#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "registry.h"

#define COMMAND_NAME_MAX 64

struct command {
	char *name;
	char *summary;
	cb_command_fn fn;
	void *ctx;
};

struct cb_registry {
	cb_job **jobs;
	size_t njobs, jobcap;
	struct command *cmds;
	size_t ncmds, cmdcap;
};

int cb_registry_new(cb_registry **out, cb_error *err)
{
	cb_registry *reg;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_registry_new: out is NULL");
	*out = NULL;
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return cb_error_set(err, CB_ENOMEM, "out of memory creating the job registry");
	*out = reg;
	return 0;
}

void cb_registry_free(cb_registry *reg)
{
	size_t i;

	if (!reg)
		return;
	for (i = 0; i < reg->njobs; i++)
		cb_job_free(reg->jobs[i]);
	for (i = 0; i < reg->ncmds; i++) {
		free(reg->cmds[i].name);
		free(reg->cmds[i].summary);
	}
	free(reg->jobs);
	free(reg->cmds);
	free(reg);
}

/* Grow an array of @p elem-sized items so that one more fits. */
static int reserve(void **items, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	p = realloc(*items, ncap * elem);
	if (!p)
		return -1;
	*items = p;
	*cap = ncap;
	return 0;
}

int cb_registry_add(cb_registry *reg, cb_job *job, cb_error *err)
{
	const char *name;

	if (!reg || !job) {
		cb_job_free(job);
		return cb_error_set(err, CB_EINVAL, "cb_registry_add: %s is NULL",
				    !reg ? "registry" : "job");
	}
	name = cb_job_name(job);
	if (cb_registry_find(reg, name)) {
		cb_error_set(err, CB_EINVAL, "job '%s' is already registered", name);
		cb_job_free(job);
		return CB_EINVAL;
	}
	if (reserve((void **)&reg->jobs, &reg->jobcap, reg->njobs, sizeof(*reg->jobs)) < 0) {
		cb_error_set(err, CB_ENOMEM, "out of memory registering job '%s'", name);
		cb_job_free(job);
		return CB_ENOMEM;
	}
	reg->jobs[reg->njobs++] = job;
	return 0;
}

int cb_registry_new_job(cb_job **out, cb_registry *reg, const char *name, cb_error *err)
{
	cb_job *job;
	int rc;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_registry_new_job: out is NULL");
	*out = NULL;
	if (!reg)
		return cb_error_set(err, CB_EINVAL, "cb_registry_new_job: registry is NULL");
	rc = cb_job_new(&job, name, err);
	if (rc < 0)
		return rc;
	rc = cb_registry_add(reg, job, err);
	if (rc < 0)
		return rc;
	*out = job;
	return 0;
}

const cb_job *cb_registry_find(const cb_registry *reg, const char *name)
{
	size_t i;

	if (!reg || !name)
		return NULL;
	for (i = 0; i < reg->njobs; i++)
		if (strcmp(cb_job_name(reg->jobs[i]), name) == 0)
			return reg->jobs[i];
	return NULL;
}

size_t cb_registry_count(const cb_registry *reg)
{
	return reg ? reg->njobs : 0;
}

const cb_job *cb_registry_at(const cb_registry *reg, size_t i)
{
	return reg && i < reg->njobs ? reg->jobs[i] : NULL;
}

/* Command names: 1..64 of [a-z0-9_-], starting with a letter, so that they
 * can never be mistaken for an option or a parameter. */
static int valid_command_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > COMMAND_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

int cb_registry_add_command(cb_registry *reg, const char *name, const char *summary,
			    cb_command_fn fn, void *ctx, cb_error *err)
{
	struct command *c;

	if (!reg || !name || !fn)
		return cb_error_set(err, CB_EINVAL, "cb_registry_add_command: %s is NULL",
				    !reg  ? "registry" :
				    !name ? "name" :
					    "function");
	if (!valid_command_name(name))
		return cb_error_set(err, CB_EINVAL,
				    "command name '%.80s' is invalid (1..%d characters of "
				    "[a-z0-9_-], starting with a letter)",
				    name, COMMAND_NAME_MAX);
	if (cb__builtin_find(name) >= 0)
		return cb_error_set(err, CB_EINVAL, "command name '%s' is a built-in command",
				    name);
	if (cb__registry_find_command(reg, name) >= 0)
		return cb_error_set(err, CB_EINVAL, "command '%s' is already registered", name);
	if (reserve((void **)&reg->cmds, &reg->cmdcap, reg->ncmds, sizeof(*reg->cmds)) < 0)
		goto nomem;
	c = &reg->cmds[reg->ncmds];
	c->name = strdup(name);
	c->summary = strdup(summary ? summary : "");
	if (!c->name || !c->summary) {
		free(c->name);
		free(c->summary);
		goto nomem;
	}
	c->fn = fn;
	c->ctx = ctx;
	reg->ncmds++;
	return 0;
nomem:
	return cb_error_set(err, CB_ENOMEM, "out of memory registering command '%s'", name);
}

size_t cb__registry_command_count(const cb_registry *reg)
{
	return reg ? reg->ncmds : 0;
}

int cb__registry_command_at(const cb_registry *reg, size_t i, const char **name,
			    const char **summary, cb_command_fn *fn, void **ctx)
{
	const struct command *c;

	if (!reg || i >= reg->ncmds)
		return CB_ENOTFOUND;
	c = &reg->cmds[i];
	if (name)
		*name = c->name;
	if (summary)
		*summary = c->summary;
	if (fn)
		*fn = c->fn;
	if (ctx)
		*ctx = c->ctx;
	return 0;
}

long cb__registry_find_command(const cb_registry *reg, const char *name)
{
	size_t i;

	if (!reg || !name)
		return -1;
	for (i = 0; i < reg->ncmds; i++)
		if (strcmp(reg->cmds[i].name, name) == 0)
			return (long)i;
	return -1;
}
