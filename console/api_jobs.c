/* /api/v1/jobs: per job, its last execution, counts and next scheduled firing. */
#include "console.h"

#include "views.h"

void cb__api_jobs(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	json_t *list = NULL;
	int rc;

	if (cb__query_only(r, NULL) < 0)
		return;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb__repo_job_overview(&list, conn, r->console->job_names, &err);
	if (rc == 0)
		rc = cb__jobs_mark_paused(list, conn, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0)
		cb__reply_repo_error(r, rc, &err);
	else
		cb__reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "jobs", list));
}
