/*
 * The registry's extra commands (internal): the engine keeps them
 * (framework/registry.c), the CLI lists and runs them. The CLI's only view
 * of the engine's internals, as console/include/serve.h is of the console's.
 */
#ifndef CB_FRAMEWORK_REGISTRY_H
#define CB_FRAMEWORK_REGISTRY_H

#include <stddef.h>

#include "cbatch/cli.h"

/* Number of extra commands, in registration order. */
size_t cb__registry_command_count(const cb_registry *reg);
/* The i-th extra command; any out-pointer may be NULL. Strings are borrowed.
 * @return 0, or CB_ENOTFOUND for a bad index. */
int cb__registry_command_at(const cb_registry *reg, size_t i, const char **name,
			    const char **summary, cb_command_fn *fn, void **ctx);
/* Index of the extra command @p name, or -1. */
long cb__registry_find_command(const cb_registry *reg, const char *name);

#endif
