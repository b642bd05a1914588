/* /api/v1/jobs: per job, its last execution, counts and next scheduled firing. */
#include "console.h"

#include "views.h"

int cb__fetch_jobs(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a, cb_error *err)
{
	int rc = cb__repo_job_overview(&out->rows, conn, r->console->job_names, err);

	(void)a;
	return rc < 0 ? rc : cb__jobs_mark_paused(out->rows, conn, err);
}
