/*
 * A schedule's backfill from the console (cb_schedule_backfill): POST
 * /api/v1/schedules/NAME/backfill {"from", "to", "max", "parallel"} creates
 * the QUEUED BACKFILL firings of the past instants in the range, which the
 * scheduler nodes run (201 with the count created; 200 when every instant
 * had a firing already); .../backfill/cancel removes those still waiting.
 * The console runs nothing itself: as for "fire now", a firing is always
 * looked after by a node.
 */
#include "console.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#include "cbatch/schedule.h"
#include "text.h"

/* The body's member @p key as text (absent: NULL), or 400 and -1. */
static int text_member(cb__request *r, const json_t *body, const char *key, const char **out)
{
	const json_t *v = json_object_get(body, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || !cb__utf8_valid(json_string_value(v)) ||
	    strlen(json_string_value(v)) > 64) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "\"%s\" must be a time as text", key);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

/* The body's member @p key as an integer in [1, max] (absent: 0), or 400 and -1. */
static int int_member(cb__request *r, const json_t *body, const char *key, long long max,
		      long long *out)
{
	const json_t *v = json_object_get(body, key);

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "\"%s\" must be an integer 1 to %lld", key,
				max);
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

/* The schedule of the path: 404 unknown, 409 paused (a paused schedule's
 * firings wait; resume it first), else 0 with the connection's use done. */
static int schedule_ready(cb__request *r, PGconn *conn)
{
	cb_error err = CB_ERROR_INIT;
	json_t *list = NULL;
	int rc = cb_schedule_list(&list, conn, r->id, &err), paused;

	if (rc == CB_ENOTFOUND) {
		cb__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", err.message);
		return -1;
	}
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		return -1;
	}
	paused = json_is_true(json_object_get(json_array_get(list, 0), "paused"));
	json_decref(list);
	if (paused) {
		cb__reply_error(r, MHD_HTTP_CONFLICT,
				"schedule '%s' is paused: resume it to backfill it", r->id);
		return -1;
	}
	return 0;
}

void cb__api_schedule_backfill(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	cb_schedule_backfill_options o = CB_SCHEDULE_BACKFILL_OPTIONS_INIT;
	json_t *body = NULL, *doc = NULL;
	json_error_t jerr;
	long long max, parallel, created;
	PGconn *conn;
	char who[80];
	int rc;

	if (cb__query_only(r, NULL) < 0 || cb__check_schedule_name(r) < 0)
		return;
	if (r->body_len)
		body = json_loadb(r->body, r->body_len, 0, &jerr);
	if (!json_is_object(body)) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"expected a JSON object {\"from\": TIME, \"to\": TIME, \"max\": N, "
				"\"parallel\": N}");
		goto done;
	}
	if (text_member(r, body, "from", &o.from) < 0 || text_member(r, body, "to", &o.to) < 0 ||
	    int_member(r, body, "max", CB_SCHEDULE_BACKFILL_MAX, &max) < 0 ||
	    int_member(r, body, "parallel", 100, &parallel) < 0)
		goto done;
	if (!o.from || !o.to) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "a backfill needs \"from\" and \"to\"");
		goto done;
	}
	o.max_instants = max;
	o.parallel = (int)parallel;
	cb__request_actor(r, who, sizeof(who));
	o.actor = who;
	o.reg = r->console->reg;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		goto done;
	}
	rc = schedule_ready(r, conn);
	if (rc == 0)
		rc = cb_schedule_backfill(&doc, conn, r->id, &o, &err);
	cb__pool_put(r->console->pool, conn);
	if (r->replied)
		goto done;
	if (rc == CB_EINVAL) {
		/* The range: unreadable, reversed, in the future, empty, too long. */
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", err.message);
		goto done;
	}
	if (rc == CB_ENOTFOUND) {
		cb__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", err.message);
		goto done;
	}
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		goto done;
	}
	created = json_integer_value(json_object_get(doc, "created"));
	cb__log_to(r->console->log, "serve", CB__LOG_INFO, CB__EV_SERVE_ACTION,
		   CB__LOG_WITH(.schedule = r->id),
		   "%s: schedule %s backfilled from %s to %s: %lld firings queued, %lld instants "
		   "had one already",
		   who, r->id, json_string_value(json_object_get(doc, "from")),
		   json_string_value(json_object_get(doc, "to")), created,
		   (long long)json_integer_value(json_object_get(doc, "existing")));
	cb__reply_json(r, created > 0 ? MHD_HTTP_CREATED : MHD_HTTP_OK, doc);
	doc = NULL;
done:
	json_decref(doc);
	json_decref(body);
}

void cb__api_schedule_backfill_cancel(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	json_t *doc = NULL;
	PGconn *conn;
	char who[80];
	int rc;

	if (cb__query_only(r, NULL) < 0 || cb__check_schedule_name(r) < 0)
		return;
	cb__request_actor(r, who, sizeof(who));
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_schedule_backfill_cancel(&doc, conn, r->id, who, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc == CB_ENOTFOUND) {
		cb__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", err.message);
		return;
	}
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	cb__log_to(r->console->log, "serve", CB__LOG_INFO, CB__EV_SERVE_ACTION,
		   CB__LOG_WITH(.schedule = r->id),
		   "%s: schedule %s backfill canceled: %lld waiting firings removed", who, r->id,
		   (long long)json_integer_value(json_object_get(doc, "canceled")));
	cb__reply_json(r, MHD_HTTP_OK, doc);
}
