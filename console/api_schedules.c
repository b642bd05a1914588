/*
 * Schedules in the console: the list, one schedule with its next firings in
 * its own zone (with the offset, and in UTC), its firing history page by
 * page; pause, resume and "fire now" (cb_schedule_fire_now_ext: a MANUAL firing
 * claimed as a scheduler node claims an instant, then left QUEUED for a
 * scheduler node to launch, so that the overlap policy and the once-per-
 * instant rule hold and the run is looked after as every firing is).
 *
 * And a job's launch: its declared parameters, and POST
 * /api/v1/jobs/NAME/executions {"params": ["name:type=value", ...]} (the
 * CLI's PARAM words), checked as `run` checks them, refused when the
 * instance is complete, abandoned or running, then started as `PROG run JOB
 * -- PARAMS` in a process of its own, as a restart is.
 */
#include "console.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/cli.h"
#include "cbatch/job.h"
#include "cbatch/params.h"
#include "cbatch/schedule.h"
#include "reserved.h"
#include "schedule_repo.h"
#include "text.h"

#define NEXT_FIRINGS      5
#define LAUNCH_PARAMS_MAX 100

/* The schedule name of the path, or 400 and -1 (names are [A-Za-z0-9_.-]). */
static int path_name(cb__request *r)
{
	size_t n = strlen(r->id);

	for (size_t i = 0; i < n; i++) {
		char ch = r->id[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			n = 0;
	}
	if (n == 0 || n > 100) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"invalid schedule name '%.100s': expected 1-100 of [A-Za-z0-9_.-]",
				r->id);
		return -1;
	}
	return 0;
}

static void reply_error(cb__request *r, int rc, const cb_error *err)
{
	if (rc == CB_ENOTFOUND)
		cb__reply_error(r, MHD_HTTP_NOT_FOUND, "%s", err->message);
	else
		cb__reply_repo_error(r, rc, err);
}

int cb__fetch_schedules(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			cb_error *err)
{
	(void)r, (void)a;
	return cb_schedule_list(&out->rows, conn, NULL, err);
}

void cb__api_schedule(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	json_t *list = NULL, *next = NULL, *s;
	int rc;

	if (cb__query_only(r, NULL) < 0 || path_name(r) < 0)
		return;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_schedule_list(&list, conn, r->id, &err);
	if (rc == 0) {
		rc = cb_schedule_next(&next, conn, r->id, NULL, NULL, NEXT_FIRINGS, &err);
		if (rc == CB_EINVAL) {
			/* An expression that never fires again: no next firings. */
			cb_error_clear(&err);
			next = json_array();
			rc = 0;
		}
	}
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		json_decref(list);
		reply_error(r, rc, &err);
		return;
	}
	s = json_incref(json_array_get(list, 0));
	json_decref(list);
	json_object_set_new(s, "next_firings", next);
	cb__reply_json(r, MHD_HTTP_OK, s);
}

int cb__check_schedule_name(cb__request *r)
{
	return path_name(r);
}

int cb__fetch_schedule_firings(cb__page *out, PGconn *conn, cb__request *r, const cb__qargs *a,
			       cb_error *err)
{
	return cb__repo_schedule_firings(&out->rows, conn, r->id, cb__qargs_text(a, "status"),
					 cb__qargs_int(a, "before"), (int)cb__qargs_int(a, "limit"),
					 err);
}

json_t *cb__doc_schedule_firings(cb__request *r, const cb__qargs *a, json_t *rows, json_t *next)
{
	long long before = cb__qargs_int(a, "before");

	const char *status = cb__qargs_text(a, "status");

	return json_pack("{s:s,s:o,s:o,s:I,s:o,s:o}", "schedule", r->id, "firings", rows,
			 "next_before", next, "limit", (json_int_t)cb__qargs_int(a, "limit"),
			 "before", before ? json_integer(before) : json_null(), "status",
			 status ? json_string(status) : json_null());
}

static void pause_resume(cb__request *r, int pause)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	char who[80];
	int changed = 0, rc;

	if (cb__query_only(r, NULL) < 0 || path_name(r) < 0)
		return;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_schedule_pause(&changed, conn, r->id, pause, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		reply_error(r, rc, &err);
		return;
	}
	cb__request_actor(r, who, sizeof(who));
	cb__log_to(r->console->log, "serve", CB__LOG_INFO, CB__EV_SERVE_ACTION,
		   CB__LOG_WITH(.schedule = r->id), "%s: schedule %s %s%s", who, r->id,
		   pause ? "paused" : "resumed", changed ? "" : " (it already was)");
	cb__reply_json(
		r, MHD_HTTP_OK,
		json_pack("{s:s,s:b,s:b}", "schedule", r->id, "paused", pause, "changed", changed));
}

void cb__api_schedule_pause(cb__request *r)
{
	pause_resume(r, 1);
}

void cb__api_schedule_resume(cb__request *r)
{
	pause_resume(r, 0);
}

void cb__api_schedule_fire(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	cb_schedule_fired f;
	PGconn *conn;
	char who[80];
	int rc;

	if (cb__query_only(r, NULL) < 0 || path_name(r) < 0)
		return;
	cb__request_actor(r, who, sizeof(who));
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = cb_schedule_fire_now_ext(&f, conn, r->console->reg, r->id, who, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc == CB_ERUNNING || rc == CB_EINVAL) {
		/* Refused by the overlap policy, the instant taken, or paused:
		 * nothing runs (a skip by overlap is recorded as such). */
		cb__reply_error(r, MHD_HTTP_CONFLICT, "%s", err.message);
		return;
	}
	if (rc < 0) {
		reply_error(r, rc, &err);
		return;
	}
	cb__log_to(
		r->console->log, "serve", CB__LOG_INFO, CB__EV_SERVE_ACTION,
		CB__LOG_WITH(.schedule = r->id, .firing = f.firing_id, .instant = f.fire_time_text),
		"%s: schedule %s fired now (firing %lld, %s): %s", who, r->id, f.firing_id,
		f.fire_time_text, f.message);
	cb__reply_json(r, MHD_HTTP_ACCEPTED,
		       json_pack("{s:s,s:I,s:s,s:s,s:s,s:s}", "schedule", r->id, "firing_id",
				 (json_int_t)f.firing_id, "kind", "MANUAL", "status", "QUEUED",
				 "fire_time", f.fire_time_text, "message", f.message));
}

/* ---- jobs: declared parameters, launch ------------------------------------ */

/* The registered job of the path, or 404 and NULL. */
static const cb_job *path_job(cb__request *r)
{
	const cb_job *job = r->console->reg ? cb_registry_find(r->console->reg, r->id) : NULL;

	if (!job) {
		char shown[220];

		cb__utf8_sanitize(shown, sizeof(shown), r->id);
		cb__reply_error(r, MHD_HTTP_NOT_FOUND, "no job '%s' registered in this program",
				shown);
	}
	return job;
}

void cb__api_job(cb__request *r)
{
	const cb_job *job;
	json_t *params;
	size_t n;

	if (cb__query_only(r, NULL) < 0 || !(job = path_job(r)))
		return;
	params = json_array();
	n = cb_job_param_count(job);
	for (size_t i = 0; params && i < n; i++) {
		const char *name;
		cb_param_type type;
		int required;

		cb_job_param_at(job, i, &name, &type, &required);
		json_array_append_new(params,
				      json_pack("{s:o,s:s,s:b,s:b}", "name", cb__json_text(name),
						"type", cb_param_type_name(type), "identifying",
						cb_job_param_identifying(job, name), "required",
						required));
	}
	cb__reply_json(r, MHD_HTTP_OK,
		       json_pack("{s:o,s:o,s:o,s:b}", "job_name", cb__json_text(cb_job_name(job)),
				 "description", cb__json_text(cb_job_description(job)),
				 "parameters", params, "accepts_any", n == 0));
}

void cb__api_job_launch(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	const cb_job *job;
	cb_params *params = NULL;
	json_t *body = NULL, *list;
	json_error_t jerr;
	char key[CB_JOB_KEY_LEN + 1], state[16], what[160];
	char **argv = NULL;
	long long last = 0;
	size_t n = 0, i;
	PGconn *conn;
	cb__job_child *ch;
	int rc;

	if (cb__query_only(r, NULL) < 0 || !(job = path_job(r)))
		return;
	if (r->body_len)
		body = json_loadb(r->body, r->body_len, 0, &jerr);
	list = json_object_get(body, "params");
	if (r->body_len && (!json_is_object(body) || (list && !json_is_array(list)))) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
				"expected a JSON object {\"params\": [\"name:type=value\", ...]}");
		goto done;
	}
	n = json_array_size(list);
	if (n > LAUNCH_PARAMS_MAX) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "at most %d parameters",
				LAUNCH_PARAMS_MAX);
		goto done;
	}
	/* The CLI's checks, in its order, before anything is written. */
	if (cb_params_new(&params, &err) < 0) {
		cb__reply_repo_error(r, CB_ENOMEM, &err);
		goto done;
	}
	for (i = 0; i < n; i++) {
		const char *w = json_string_value(json_array_get(list, i));

		if (!w || !cb__utf8_valid(w)) {
			cb__reply_error(r, MHD_HTTP_BAD_REQUEST,
					"parameter %zu is not text: expected \"name:type=value\"",
					i + 1);
			goto done;
		}
		if (cb_params_parse_arg(params, w, &err) < 0) {
			cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", err.message);
			goto done;
		}
	}
	/* The key the run will make: as the job declares its parameters. */
	if (cb__reserved_check(params, &err) < 0 || cb_job_validate_params(job, params, &err) < 0 ||
	    cb_job_key(key, job, params, &err) < 0) {
		cb__reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", err.message);
		goto done;
	}
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		goto done;
	}
	rc = cb__repo_instance_state(state, sizeof(state), &last, conn, cb_job_name(job), key,
				     &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		cb__reply_repo_error(r, rc, &err);
		goto done;
	}
	if (state[0]) {
		cb__reply_error(r, MHD_HTTP_CONFLICT,
				"job '%s' instance %s is %s (execution %lld)%s", cb_job_name(job),
				key,
				strcmp(state, "RUNNING") == 0   ? "already running" :
				strcmp(state, "COMPLETED") == 0 ? "already complete" :
								  "abandoned",
				last,
				strcmp(state, "COMPLETED") == 0 ?
					": parameters that name a new instance make a new run" :
					"");
		goto done;
	}
	if (!(argv = calloc(n + 5, sizeof(*argv)))) {
		r->result = MHD_NO;
		r->replied = 1;
		goto done;
	}
	argv[0] = "cbatch";
	argv[1] = "run";
	argv[2] = (char *)cb_job_name(job);
	argv[3] = "--"; /* a non-identifying "-name=value" is a parameter, not an option */
	for (i = 0; i < n; i++)
		argv[4 + i] = (char *)json_string_value(json_array_get(list, i));
	snprintf(what, sizeof(what), "run of job %.100s (instance %s)", cb_job_name(job), key);
	if (cb__spawn_job(r, argv, what, &ch) < 0)
		goto done;
	cb__spawn_answer(r, ch, cb_job_name(job), r->console->launch_wait);
done:
	free(argv);
	cb_params_free(params);
	json_decref(body);
}

/* ---- the jobs overview ------------------------------------------------------- */

int cb__jobs_mark_paused(json_t *jobs, PGconn *conn, cb_error *err)
{
	json_t *all = NULL, *j, *s;
	size_t i, k;
	int rc;

	if ((rc = cb_schedule_list(&all, conn, NULL, err)) < 0)
		return rc;
	json_array_foreach(jobs, i, j)
	{
		const char *name = json_string_value(json_object_get(j, "job_name"));
		int any = 0, running = 0;

		json_array_foreach(all, k, s)
		{
			const char *job = json_string_value(json_object_get(s, "job"));

			if (!name || !job || strcmp(name, job) != 0)
				continue;
			any = 1;
			running |= !json_is_true(json_object_get(s, "paused"));
		}
		json_object_set_new(j, "schedules_paused", json_boolean(any && !running));
	}
	json_decref(all);
	return 0;
}
