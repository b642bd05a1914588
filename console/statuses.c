/*
 * The execution statuses as the console shows them: their names and which
 * of them are live, taken from the library's one table (cb_status_name,
 * cb_status_is_running) so that the API's check, /api/v1/info and the
 * dashboard (which reads /api/v1/info) never keep copies of their own.
 */
#include "console.h"

#include <stdio.h>
#include <string.h>

#include "cbatch/repository.h"

int cb__statuses_describe(json_t *doc)
{
	json_t *all = json_array(), *live = json_array();

	for (int s = CB_STATUS_STARTING; all && live && s <= CB_STATUS_UNKNOWN; s++) {
		if (json_array_append_new(all, json_string(cb_status_name((cb_status)s))) < 0 ||
		    (cb_status_is_running((cb_status)s) &&
		     json_array_append_new(live, json_string(cb_status_name((cb_status)s))) < 0))
			break;
	}
	if (json_object_set_new(doc, "statuses", all) < 0) {
		json_decref(live);
		return -1;
	}
	return json_object_set_new(doc, "live_statuses", live);
}

int cb__status_known(const char *name)
{
	for (int s = CB_STATUS_STARTING; s <= CB_STATUS_UNKNOWN; s++)
		if (strcmp(name, cb_status_name((cb_status)s)) == 0)
			return 1;
	return 0;
}

void cb__statuses_list(char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (int s = CB_STATUS_STARTING; s <= CB_STATUS_UNKNOWN && len < size; s++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "",
					cb_status_name((cb_status)s));
}
