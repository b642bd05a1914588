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

json_t *cb__status_vocabulary(void)
{
	json_t *all = json_array(), *live = json_array(), *out = json_object();

	if (!all || !live || !out)
		goto fail;
	for (size_t i = 0; i < cb__statuses_count; i++) {
		const struct cb__status_word *w = &cb__statuses[i];

		if (json_array_append_new(all, json_pack("{s:s, s:b, s:b}", "name", w->name, "live",
							 w->live, "restartable", w->restartable)) <
			    0 ||
		    (w->live && json_array_append_new(live, json_string(w->name)) < 0))
			goto fail;
	}
	if (json_object_set_new(out, "statuses", all) < 0) {
		all = NULL;
		goto fail;
	}
	if (json_object_set_new(out, "live", live) < 0)
		live = NULL;
	else
		return out;
	all = NULL;
fail:
	json_decref(all);
	json_decref(live);
	json_decref(out);
	return NULL;
}
