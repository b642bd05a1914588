/* /api/v1/locks (lease left by the database's clock) and /api/v1/locks/audit
 * (?lock=NAME, ?execution=ID: the rows of that execution's own lock and of
 * its partitions' locks; keyset paged by audit_id). */
#include "console.h"

#include <limits.h>
#include <stdlib.h>

#include "cbatch/lock.h"
#include "views.h"

/* ?all=1 lists every lock row, else the held and recently released ones;
 * ?limit= (1..1000, 100) and ?after= (next_after of the page before) page
 * through them by name. */
void cb__api_locks(cb__request *r)
{
	static const char *const keys[] = { "all", "limit", "after", NULL };
	cb_error err = CB_ERROR_INIT;
	cb_lock_list_options o = { 0, 0, NULL, 0 };
	PGconn *conn;
	json_t *list = NULL;
	char *next = NULL;
	long long all, limit;
	int rc;

	if (cb__query_only(r, keys) < 0 || cb__query_int(r, "all", 0, 1, 0, &all) < 0 ||
	    cb__query_int(r, "limit", 1, 1000, 100, &limit) < 0 ||
	    cb__query_text(r, "after", 400, &o.after) < 0)
		return;
	o.all = (int)all;
	o.limit = (int)limit;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_lock_list_page(&list, &next, conn, &o, &err);
	/* A partition's lock names only its step execution: the operator
	 * wants the job, step and execution it runs. */
	if (rc == 0)
		rc = cb__repo_partition_locks(list, conn, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		json_decref(list);
		cb__reply_repo_error(r, rc, &err);
	} else {
		cb__reply_json(r, MHD_HTTP_OK,
			       json_pack("{s:o,s:s?}", "locks", list, "next_after", next));
	}
	free(next);
}

void cb__api_lock_audit(cb__request *r)
{
	static const char *const keys[] = { "lock", "execution", "limit", "before", NULL };
	cb_error err = CB_ERROR_INIT;
	const char *lock;
	long long limit, before, execution;
	PGconn *conn;
	json_t *list = NULL, *next;
	size_t n;
	int rc;

	if (cb__query_only(r, keys) < 0 || cb__query_text(r, "lock", 400, &lock) < 0 ||
	    cb__query_int(r, "execution", 1, LLONG_MAX, 0, &execution) < 0 ||
	    cb__query_int(r, "limit", 1, 500, 50, &limit) < 0 ||
	    cb__query_int(r, "before", 1, LLONG_MAX, 0, &before) < 0)
		return;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb__repo_lock_audit(&list, conn, lock, execution, (int)limit, before, &err);
	if (rc == 0)
		rc = cb__repo_partition_locks(list, conn, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		json_decref(list);
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	/* A full page may have a next one: it starts below its last row. */
	n = json_array_size(list);
	next = n == (size_t)limit ?
		       json_incref(json_object_get(json_array_get(list, n - 1), "audit_id")) :
		       json_null();
	cb__reply_json(r, MHD_HTTP_OK, json_pack("{s:o,s:o}", "audit", list, "next_before", next));
}
