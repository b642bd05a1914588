/* Status names and what they mean, from the vocabulary sql/statuses.txt. */
#include <string.h>

#include "cbatch/repository.h"
#include "statuses.h"

/* The names and what they mean come from sql/statuses.txt (statuses.c). */
const char *cb_status_name(cb_status s)
{
	if ((int)s < 0 || (size_t)s >= cb__statuses_count)
		return "UNKNOWN";
	return cb__statuses[s].name;
}

cb_status cb_status_parse(const char *name)
{
	for (size_t i = 0; i < cb__statuses_count; i++)
		if (name && strcmp(name, cb__statuses[i].name) == 0)
			return (cb_status)i;
	return CB_STATUS_UNKNOWN;
}

int cb_status_is_running(cb_status s)
{
	return (int)s >= 0 && (size_t)s < cb__statuses_count && cb__statuses[s].live;
}
