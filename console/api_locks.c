/* /api/v1/locks (lease left by the database's clock) and /api/v1/locks/audit
 * (?lock=NAME, ?execution=ID: the rows of that execution's own lock and of
 * its partitions' locks; keyset paged by audit_id). */
#include "console.h"

#include <stdlib.h>

#include "cbatch/lock.h"
#include "views.h"

/* ?all=1 lists every lock row, else the held and recently released ones;
 * ?limit= and ?after= (next_after of the page before) page through them by
 * name. */
int cb__fetch_locks(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a, cb_error *err)
{
	cb_lock_list_options o = { 0, 0, NULL, 0 };
	char *next = NULL;
	int rc;

	(void)r;
	o.all = (int)cb__qargs_int(a, "all");
	o.limit = (int)cb__qargs_int(a, "limit");
	o.after = cb__qargs_text(a, "after");
	rc = cb_lock_list_page(&out->rows, &next, conn, &o, err);
	/* A partition's lock names only its step execution: the operator
	 * wants the job, step and execution it runs. */
	if (rc == 0)
		rc = cb__repo_partition_locks(out->rows, conn, err);
	if (rc == 0)
		out->next = next ? json_string(next) : json_null();
	free(next);
	return rc;
}

int cb__fetch_lock_audit(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			 cb_error *err)
{
	int rc = cb__repo_lock_audit(&out->rows, conn, cb__qargs_text(a, "lock"),
				     cb__qargs_int(a, "execution"), (int)cb__qargs_int(a, "limit"),
				     cb__qargs_int(a, "before"), err);

	(void)r;
	return rc < 0 ? rc : cb__repo_partition_locks(out->rows, conn, err);
}
