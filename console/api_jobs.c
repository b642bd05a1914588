/* /api/v1/jobs: per job, its last execution, counts and next scheduled firing. */
#include "console.h"

#include <stdlib.h>
#include <string.h>

#include "views.h"

int cb__jobs_compute(char **text, size_t *len, PGconn *conn, void *ctx, cb_error *err)
{
	const cb__console *c = ctx;
	json_t *rows = NULL;
	int rc = cb__repo_job_overview(&rows, conn, c->job_names, err);

	*text = NULL;
	if (rc == 0)
		rc = cb__jobs_mark_paused(rows, conn, err);
	if (rc == 0 && !(*text = json_dumps(rows, JSON_COMPACT | JSON_REAL_PRECISION(15))))
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
	json_decref(rows);
	*len = *text ? strlen(*text) : 0;
	return rc;
}

/* The dashboard polls this page from every open tab: it is served from the
 * jobs snapshot (snapshot.c), its rows pasted as they were serialized (no
 * parsing per request), with the snapshot's age. */
void cb__api_jobs(cb__request *r)
{
	static const char head[] = "{\"jobs\":";
	cb_error err = CB_ERROR_INIT;
	cb__snapshot_view v;
	char tail[64], *doc;
	size_t hn = sizeof(head) - 1, tn;
	int rc;

	if (cb__query_only(r, NULL) < 0)
		return;
	if ((rc = cb__snapshot_get(r->console->overview, &v, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	tn = (size_t)snprintf(tail, sizeof(tail), ",\"snapshot_age_seconds\":%.3f}", v.age);
	doc = malloc(hn + v.len + tn);
	if (!doc) {
		free(v.text);
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		return;
	}
	memcpy(doc, head, hn);
	memcpy(doc + hn, v.text, v.len);
	memcpy(doc + hn + v.len, tail, tn);
	free(v.text);
	cb__reply_take(r, MHD_HTTP_OK, "application/json", doc, hn + v.len + tn);
}
