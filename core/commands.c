/* The built-in command names (core/commands.h). */
#include "commands.h"

#include <string.h>

#define CB__BUILTIN_NAME(name) #name,
static const char *const names[CB__NBUILTINS] = { CB__BUILTIN_COMMANDS(CB__BUILTIN_NAME) };

const char *cb__builtin_name(int id)
{
	return id >= 0 && id < CB__NBUILTINS ? names[id] : NULL;
}

int cb__builtin_find(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < CB__NBUILTINS; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}
