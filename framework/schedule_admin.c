/* The schedule calls of schedule.h: add (with every check), list, history,
 * pause and resume, remove, next instants. */
#include "engine.h"
#include "repo.h"
#include "schedule_repo.h"
#include "scheduler.h"
#include "template.h"
#include "zone.h"

#include "cbatch/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEXT_MAX 1000

static int valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 100)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return 0;
	}
	return 1;
}

/* A zone the server knows, with a lookup over @p conn. */
static int open_zone(cb__pg_zone **z, PGconn *conn, const char *zone, cb_error *err)
{
	int rc;

	*z = NULL;
	if ((rc = cb__pg_zone_check(conn, zone, err)) < 0 ||
	    (rc = cb__pg_zone_new(z, zone, err)) < 0)
		return rc;
	cb__pg_zone_set_conn(*z, conn);
	return 0;
}

int cb_schedule_add(cb_schedule_added *out, PGconn *conn, const cb_schedule_def *def,
		    const cb_job *job, cb_error *err)
{
	cb__schedule s;
	cb_cron *cron = NULL;
	cb__pg_zone *zone = NULL;
	char **words = NULL;
	cb_params *params = NULL;
	double now;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if ((rc = cb__version_check(def ? def->version : 0u, CB_SCHEDULE_DEF_VERSION,
				    "schedule definition", err)) < 0)
		return rc;
	if (!valid_name(def->name))
		return cb_error_set(err, CB_EINVAL,
				    "schedule name '%.120s' must be 1-100 characters of "
				    "A-Z a-z 0-9 _ . -",
				    def->name ? def->name : "");
	if (!def->cron || !def->job_name || !def->job_name[0])
		return cb_error_set(err, CB_EINVAL, "schedule '%s': %s is required", def->name,
				    def->cron ? "the job" : "the cron expression");
	if (def->misfire_grace_seconds < 0 || def->misfire_grace_seconds > 86400)
		return cb_error_set(err, CB_EINVAL,
				    "schedule '%s': the misfire grace must be 1 to 86400 seconds",
				    def->name);
	if (def->version >= 2 &&
	    (def->overlap < CB_OVERLAP_SKIP || def->overlap > CB_OVERLAP_ALLOW))
		return cb_error_set(
			err, CB_EINVAL,
			"schedule '%s': overlap policy %d is none of skip, queue, allow", def->name,
			def->overlap);
	if (def->version >= 2 && (def->recover_attempts < 0 || def->recover_attempts > 100))
		return cb_error_set(err, CB_EINVAL,
				    "schedule '%s': recover attempts must be 1 to 100, not %d",
				    def->name, def->recover_attempts);
	if (def->version >= 2 &&
	    (def->recover_delay_seconds < 0 || def->recover_delay_seconds > 86400))
		return cb_error_set(err, CB_EINVAL,
				    "schedule '%s': the recover delay must be 1 to 86400 seconds, "
				    "not %d",
				    def->name, def->recover_delay_seconds);
	if (job && strcmp(cb_job_name(job), def->job_name) != 0)
		return cb_error_set(err, CB_EINVAL, "schedule '%s': job '%s' is not job '%s'",
				    def->name, cb_job_name(job), def->job_name);
	if (strlen(def->job_name) >= sizeof(s.job))
		return cb_error_set(err, CB_EINVAL, "schedule '%s': job name too long", def->name);
	snprintf(s.name, sizeof(s.name), "%s", def->name);
	snprintf(s.cron, sizeof(s.cron), "%s", def->cron);
	snprintf(s.zone, sizeof(s.zone), "%s", def->time_zone ? def->time_zone : "UTC");
	snprintf(s.job, sizeof(s.job), "%s", def->job_name);
	s.skip_misfires = def->skip_misfires != 0;
	s.grace_seconds = def->misfire_grace_seconds ? def->misfire_grace_seconds : 60;
	s.paused = def->paused != 0;
	/* Version 1 knew no overlap: it gets the safe default too. */
	snprintf(s.overlap, sizeof(s.overlap), "%s",
		 def->version < 2 || def->overlap == CB_OVERLAP_SKIP ? "SKIP" :
		 def->overlap == CB_OVERLAP_QUEUE                    ? "QUEUE" :
								       "ALLOW");
	s.recover_leave = def->version >= 2 && def->recover_leave;
	s.recover_attempts = def->version >= 2 && def->recover_attempts ? def->recover_attempts : 3;
	s.recover_delay =
		def->version >= 2 && def->recover_delay_seconds ? def->recover_delay_seconds : 10;
	if (!(s.parameters = json_array()))
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	for (size_t i = 0; i < def->nparameters; i++) {
		const char *t = def->parameters[i];

		if (!t || strlen(t) >= CB__TEMPLATE_MAX) {
			rc = cb_error_set(err, CB_EINVAL,
					  "schedule '%s': parameter template %zu is %s", def->name,
					  i + 1, t ? "too long" : "missing");
			goto done;
		}
		if (json_array_append_new(s.parameters, json_string(t)) < 0) {
			rc = cb_error_set(err, CB_EINVAL,
					  "schedule '%s': parameter template %zu is not UTF-8",
					  def->name, i + 1);
			goto done;
		}
	}
	if ((rc = cb_cron_parse(&cron, s.cron, err)) < 0 ||
	    (rc = open_zone(&zone, conn, s.zone, err)) < 0 ||
	    (rc = cb__repo_db_now(&now, conn, err)) < 0)
		goto done;
	rc = cb__cron_next_instant(&s.next_fire, cron, (long long)now, cb__pg_zone_lookup, zone,
				   err);
	if (rc == CB_ENOTFOUND) {
		cb_error_clear(err);
		rc = cb_error_set(err, CB_EINVAL, "schedule '%s': cron \"%s\" never fires again",
				  s.name, s.cron);
	}
	if (rc < 0)
		goto done;
	/* The templates, filled for the first instant, must make parameters the
	 * job accepts: found now, not at 02:30 on some night. */
	{
		cb_civil local;
		int offset;

		if ((rc = cb__zone_local(&local, &offset, s.next_fire, cb__pg_zone_lookup, zone,
					 err)) < 0 ||
		    (rc = cb__schedule_fill(&words, &params, s.parameters, s.name, s.next_fire,
					    &local, offset, err)) < 0 ||
		    (job && (rc = cb_job_validate_params(job, params, err)) < 0))
			goto done;
	}
	out->same_instance = 1;
	for (size_t i = 0; i < def->nparameters; i++)
		if (def->parameters[i][0] != '-' && cb__template_uses_fire(def->parameters[i]))
			out->same_instance = 0;
	/* One instance for every firing: the first completes it and every later
	 * firing ends "already complete". Almost always a forgotten placeholder,
	 * so it is refused unless asked for (a version 2 caller predates that). */
	if (out->same_instance && def->version >= 3 && !def->same_instance) {
		rc = cb_error_set(err, CB_EINVAL,
				  "schedule '%s': no identifying parameter uses the fire instant, "
				  "so every firing would be the same job instance, which runs to "
				  "completion only once; add a placeholder, e.g. "
				  "'date(date)={fire_date}' or 'asOf={fire_utc}', or allow one "
				  "instance on purpose (--same-instance)",
				  s.name);
		goto done;
	}
	s.has_next = 1;
	if ((rc = cb__repo_schedule_add(&out->schedule_id, conn, &s, err)) < 0)
		goto done;
	out->first_fire = s.next_fire;
	cb__schedule_fmt(out->first_fire_text, sizeof(out->first_fire_text), zone, s.next_fire,
			 "{fire_time}");
done:
	cb__schedule_words_free(words);
	cb_params_free(params);
	cb__pg_zone_free(zone);
	cb_cron_free(cron);
	json_decref(s.parameters);
	return rc;
}

int cb_schedule_list(json_t **out, PGconn *conn, const char *name, cb_error *err)
{
	return cb__repo_schedules_json(out, conn, name, err);
}

int cb_schedule_history(json_t **out, PGconn *conn, const char *name, long long limit,
			cb_error *err)
{
	if (limit < 1)
		return cb_error_set(err, CB_EINVAL, "history limit must be positive");
	return cb__repo_schedule_history(out, conn, name, limit, err);
}

int cb_schedule_pause(int *changed, PGconn *conn, const char *name, int pause, cb_error *err)
{
	long long next = 0;
	int has_next = 1, rc;

	if (!pause) {
		json_t *arr = NULL, *s;
		double now;

		if ((rc = cb__repo_schedules_json(&arr, conn, name, err)) < 0)
			return rc;
		if ((rc = cb__repo_db_now(&now, conn, err)) < 0) {
			json_decref(arr);
			return rc;
		}
		s = json_array_get(arr, 0);
		rc = cb__schedule_next(&next, conn, json_string_value(json_object_get(s, "cron")),
				       json_string_value(json_object_get(s, "time_zone")),
				       (long long)now, err);
		json_decref(arr);
		if (rc == CB_ENOTFOUND) {
			cb_error_clear(err);
			has_next = 0;
		} else if (rc < 0) {
			return rc;
		}
	}
	return cb__repo_schedule_pause(changed, conn, name, pause, has_next, next, err);
}

int cb_schedule_remove(PGconn *conn, const char *name, cb_error *err)
{
	return cb__repo_schedule_remove(conn, name, err);
}

int cb_schedule_next(json_t **out, PGconn *conn, const char *name, const char *cron_text,
		     const char *time_zone, size_t count, cb_error *err)
{
	json_t *arr = NULL, *res = NULL;
	cb_cron *cron = NULL;
	cb__pg_zone *zone = NULL;
	long long t;
	double now;
	int rc;

	*out = NULL;
	if (count < 1 || count > NEXT_MAX)
		return cb_error_set(err, CB_EINVAL, "the count of instants must be 1 to %d",
				    NEXT_MAX);
	if (name) {
		json_t *s;

		if ((rc = cb__repo_schedules_json(&arr, conn, name, err)) < 0)
			return rc;
		s = json_array_get(arr, 0);
		cron_text = json_string_value(json_object_get(s, "cron"));
		time_zone = json_string_value(json_object_get(s, "time_zone"));
	}
	if (!cron_text) {
		json_decref(arr);
		return cb_error_set(err, CB_EINVAL, "a schedule name or an expression is required");
	}
	if ((rc = cb_cron_parse(&cron, cron_text, err)) < 0 ||
	    (rc = open_zone(&zone, conn, time_zone ? time_zone : "UTC", err)) < 0 ||
	    (rc = cb__repo_db_now(&now, conn, err)) < 0)
		goto done;
	/* A schedule's own cursor first: that is what fires next. */
	t = (long long)now;
	if (arr && json_is_integer(json_object_get(json_array_get(arr, 0), "next_fire_epoch")))
		t = json_integer_value(json_object_get(json_array_get(arr, 0), "next_fire_epoch")) -
		    1;
	if (!(res = json_array())) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < count; i++) {
		char local[64], utc[64];

		rc = cb__cron_next_instant(&t, cron, t, cb__pg_zone_lookup, zone, err);
		if (rc == CB_ENOTFOUND) {
			cb_error_clear(err);
			rc = i > 0 ? 0 :
				     cb_error_set(err, CB_EINVAL, "cron \"%s\" never fires again",
						  cron_text);
			break;
		}
		if (rc < 0)
			break;
		cb__schedule_fmt(local, sizeof(local), zone, t, "{fire_time}");
		cb__schedule_fmt(utc, sizeof(utc), zone, t, "{fire_utc}");
		json_array_append_new(res, json_pack("{s:s,s:s,s:I}", "local", local, "utc", utc,
						     "epoch", (json_int_t)t));
	}
	if (rc == 0) {
		*out = res;
		res = NULL;
	}
done:
	json_decref(res);
	json_decref(arr);
	cb__pg_zone_free(zone);
	cb_cron_free(cron);
	return rc;
}

int cb_schedule_fire_now(cb_schedule_fired *out, PGconn *conn, const char *name, const char *actor,
			 cb_error *err)
{
	return cb_schedule_fire_now_ext(out, conn, NULL, name, actor, err);
}

int cb_schedule_fire_now_ext(cb_schedule_fired *out, PGconn *conn, const cb_registry *reg,
			     const char *name, const char *actor, cb_error *err)
{
	const cb_job *job;
	cb__fire_target t;
	cb__pg_zone *zone = NULL;
	cb_params *params = NULL;
	cb_civil local;
	char **words = NULL, *ptext = NULL, key[CB_JOB_KEY_LEN + 1] = "", outcome[32], why[256];
	json_t *arr = NULL;
	int offset, rc, tries = 0;

	memset(out, 0, sizeof(*out));
again:
	if ((rc = cb__repo_schedule_for_fire(&t, conn, name, err)) < 0)
		goto done;
	if (t.paused) {
		rc = cb_error_set(err, CB_EINVAL, "schedule '%s' is paused: resume it to fire it",
				  name);
		goto done;
	}
	out->fire_time = t.now;
	/* The parameters of the instant, as a node fills them for a claim. */
	if ((rc = open_zone(&zone, conn, t.zone, err)) < 0 ||
	    (rc = cb__zone_local(&local, &offset, t.now, cb__pg_zone_lookup, zone, err)) < 0 ||
	    (rc = cb__schedule_fill(&words, &params, t.parameters, name, t.now, &local, offset,
				    err)) < 0)
		goto done;
	/* The key of the instance the run will make, as a node keys its claims:
	 * the firing finds its execution by it. */
	job = reg ? cb_registry_find(reg, t.job) : NULL;
	if ((rc = cb_job_key(key, job, params, err)) < 0)
		goto done;
	cb__schedule_fmt(out->fire_time_text, sizeof(out->fire_time_text), zone, t.now,
			 "{fire_time}");
	if (!(arr = json_array())) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t w = 0; words[w]; w++)
		json_array_append_new(arr, json_string(words[w]));
	if (!(ptext = json_dumps(arr, JSON_COMPACT))) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = cb__repo_schedule_fire_now(outcome, sizeof(outcome), &out->firing_id, why,
					     sizeof(why), conn, &t, actor, key, ptext, err)) < 0)
		goto done;
	if (strcmp(outcome, "CHANGED") == 0 && ++tries < 3) {
		/* Paused or edited between the read and the claim: judge it again. */
		json_decref(t.parameters);
		json_decref(arr);
		free(ptext);
		cb__schedule_words_free(words);
		cb_params_free(params);
		cb__pg_zone_free(zone);
		arr = NULL;
		ptext = NULL;
		words = NULL;
		params = NULL;
		zone = NULL;
		goto again;
	}
	if (strcmp(outcome, "QUEUED") == 0) {
		out->queued = 1;
		snprintf(out->message, sizeof(out->message), "%s",
			 why[0] ? why : "waiting for a scheduler node that has the job");
		rc = 0;
	} else if (strcmp(outcome, "SKIPPED_OVERLAP") == 0) {
		snprintf(out->message, sizeof(out->message), "%s", why);
		rc = cb_error_set(err, CB_ERUNNING, "schedule '%s' not fired: %s", name, why);
	} else if (strcmp(outcome, "SKIPPED_CLAIMED") == 0) {
		snprintf(out->message, sizeof(out->message), "instant %s already claimed by %s",
			 out->fire_time_text, why);
		rc = cb_error_set(err, CB_ERUNNING,
				  "schedule '%s' not fired: instant %s is taken by %s", name,
				  out->fire_time_text, why);
	} else if (strcmp(outcome, "GONE") == 0) {
		rc = cb_error_set(err, CB_ENOTFOUND, "no schedule '%s'", name);
	} else {
		rc = cb_error_set(err, CB_EINVAL, "schedule '%s' is paused or changing: try again",
				  name);
	}
done:
	json_decref(t.parameters);
	json_decref(arr);
	free(ptext);
	cb__schedule_words_free(words);
	cb_params_free(params);
	cb__pg_zone_free(zone);
	return rc;
}
