/*
 * Executions: the filtered, paged list; one execution as `show --json` has
 * it, with live progress on its running steps; the skip messages its steps
 * recorded.
 */
#include "console.h"

#include <stdio.h>
#include <string.h>

#include "cbatch/repository.h"
#include "views.h"

/* A JSON string of @p s, or null. */
static json_t *text_or_null(const char *s)
{
	return s ? cb__json_text(s) : json_null();
}

/* ?status= is one of the statuses' names. */
int cb__check_executions(cb__request *r, const cb__qargs *a)
{
	const char *status = cb__qargs_text(a, "status");
	char names[200];

	if (!status || cb__status_known(status))
		return 0;
	cb__statuses_list(names, sizeof(names));
	cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "invalid status '%s': expected one of %s", status,
			names);
	return -1;
}

int cb__fetch_executions(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			 cb_error *err)
{
	cb__exec_filter f = { 0 };

	(void)r;
	f.job_name = cb__qargs_text(a, "job");
	f.status = cb__qargs_text(a, "status");
	f.from = cb__qargs_text(a, "from");
	f.to = cb__qargs_text(a, "to");
	f.limit = (int)cb__qargs_int(a, "limit");
	f.before = cb__qargs_int(a, "before");
	return cb__repo_find_executions(&out->rows, conn, &f, err);
}

/* The page, and the filter as understood, so that a client sees what it
 * asked for. */
json_t *cb__doc_executions(cb__request *r, const cb__qargs *a, json_t *rows, json_t *next)
{
	long long before = cb__qargs_int(a, "before");
	json_t *filter = json_pack("{s:o,s:o,s:o,s:o,s:I,s:o}", "job",
				   text_or_null(cb__qargs_text(a, "job")), "status",
				   text_or_null(cb__qargs_text(a, "status")), "from",
				   text_or_null(cb__qargs_text(a, "from")), "to",
				   text_or_null(cb__qargs_text(a, "to")), "limit",
				   (json_int_t)cb__qargs_int(a, "limit"), "before",
				   before ? json_integer(before) : json_null());

	(void)r;
	return json_pack("{s:o,s:o,s:o}", "executions", rows, "next_before", next, "filter",
			 filter);
}

/*
 * The operator's additions to one partition @p p: items/s and its takeovers
 * from @p extras (cb__repo_execution_extras), so that the worker, claims,
 * takeovers and lease left sit beside its counts.
 */
static void add_partition_extras(json_t *p, const json_t *extras)
{
	char key[32];
	const json_t *x;

	snprintf(key, sizeof(key), "%lld",
		 (long long)json_integer_value(json_object_get(p, "step_execution_id")));
	x = json_object_get(json_object_get(extras, "partitions"), key);
	json_object_set(p, "items_per_second",
			x ? json_object_get(x, "items_per_second") : json_null());
	if (x && json_object_get(x, "takeovers"))
		json_object_set(p, "takeovers", json_object_get(x, "takeovers"));
	else
		json_object_set_new(p, "takeovers", json_array());
}

/* The execution named by the path, or a reply (400, 404, 503) and NULL.
 * With @p extras: its partitions' takeovers and rates, its instance's
 * lineage and the address of its lock audit too. */
static json_t *load(cb__request *r, long long *id, int extras)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	json_t *e = NULL, *progress = NULL, *more = NULL;
	int rc;

	if (cb__query_only(r, NULL) < 0)
		return NULL;
	if (cb__parse_id(id, r->id) < 0) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid execution id '%.40s': expected a positive integer", r->id);
		return NULL;
	}
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return NULL;
	}
	rc = cb_repo_show_execution(&e, conn, *id, &err);
	if (rc == 0)
		rc = cb__repo_step_progress(&progress, conn, *id, &err);
	if (rc == 0 && extras)
		rc = cb__repo_execution_extras(&more, conn, *id, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		json_decref(e);
		json_decref(progress);
		cb__reply_repo_error(r, rc, &err);
		return NULL;
	}
	/* Each running step (and partition) gets its progress beside its counts. */
	{
		json_t *steps = json_object_get(e, "steps");
		size_t i, k;
		char key[32];

		for (i = 0; i < json_array_size(steps); i++) {
			json_t *s = json_array_get(steps, i);
			json_t *parts = json_object_get(s, "partitions");

			snprintf(key, sizeof(key), "%lld",
				 (long long)json_integer_value(
					 json_object_get(s, "step_execution_id")));
			json_object_set(s, "progress",
					json_object_get(progress, key) ?
						json_object_get(progress, key) :
						json_null());
			for (k = 0; k < json_array_size(parts); k++) {
				json_t *p = json_array_get(parts, k);

				snprintf(key, sizeof(key), "%lld",
					 (long long)json_integer_value(
						 json_object_get(p, "step_execution_id")));
				json_object_set(p, "progress",
						json_object_get(progress, key) ?
							json_object_get(progress, key) :
							json_null());
				if (extras)
					add_partition_extras(p, more);
			}
		}
	}
	json_decref(progress);
	if (extras) {
		char audit[64];

		json_object_set(e, "lineage", json_object_get(more, "lineage"));
		snprintf(audit, sizeof(audit), "/api/v1/locks/audit?execution=%lld", *id);
		json_object_set_new(e, "lock_audit_url", json_string(audit));
	}
	json_decref(more);
	return e;
}

void cb__api_execution(cb__request *r)
{
	long long id;
	json_t *e = load(r, &id, 1);

	if (e)
		cb__reply_json(r, MHD_HTTP_OK, e);
}

/* The skipped items each step recorded in its context (the newest few per
 * step, as the engine keeps them), with the step they belong to. */
void cb__api_execution_skips(cb__request *r)
{
	long long id;
	json_t *e = load(r, &id, 0), *out, *steps;
	size_t i, k;

	if (!e)
		return;
	out = json_array();
	steps = json_object_get(e, "steps");
	for (i = 0; out && i < json_array_size(steps); i++) {
		json_t *s = json_array_get(steps, i);
		json_t *list = json_object_get(json_object_get(s, "context"), "skipped");

		for (k = 0; k < json_array_size(list); k++) {
			json_t *item = json_deep_copy(json_array_get(list, k));

			if (!json_is_object(item)) {
				json_decref(item);
				continue;
			}
			json_object_set(item, "step_execution_id",
					json_object_get(s, "step_execution_id"));
			json_object_set(item, "step_name", json_object_get(s, "step_name"));
			json_array_append_new(out, item);
		}
	}
	json_decref(e);
	cb__reply_json(r, MHD_HTTP_OK,
		       json_pack("{s:I,s:o}", "job_execution_id", (json_int_t)id, "skips", out));
}

/* What the run printed, as its launcher (a scheduler node, this console)
 * kept it: cb_repo_execution_log's object, "captured": false for a run
 * started some other way. */
void cb__api_execution_log(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	json_t *doc = NULL;
	long long id;
	int rc;

	if (cb__query_only(r, NULL) < 0)
		return;
	if (cb__parse_id(&id, r->id) < 0) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid execution id '%.40s': expected a positive integer", r->id);
		return;
	}
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_repo_execution_log(&doc, conn, id, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	cb__reply_json(r, MHD_HTTP_OK, doc);
}
