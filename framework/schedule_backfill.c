/* A schedule's backfill (schedule.h: cb_schedule_backfill and its cancel):
 * the past instants of its cron in its zone within a range, found by the
 * walk the scheduler uses, each with the templates filled for it, created as
 * QUEUED firings of kind BACKFILL in one call under the schedule's row lock
 * (sql/020_backfill.sql). The scheduler nodes run them as queued firings. */
#include "engine.h"
#include "repo.h"
#include "schedule_repo.h"
#include "scheduler.h"
#include "zone.h"

#include "cbatch/cli.h"
#include "cbatch/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX  1000
#define PARALLEL_MAX 100

/* A time as the options take it: a date first ("YYYY-MM-DD"), which keeps
 * PostgreSQL's special input words out (the current instant among them): the
 * range is judged by the database's one clock, batch_now(), and no other
 * reading of it. An offset (Z, +hh,
 * -hh) after the date makes it an instant; without one it is a civil time in
 * the schedule's zone. */
static int read_time(double *out, PGconn *conn, const char *text, const char *what,
		     const char *zone, cb_error *err)
{
	int ok = text && strlen(text) >= 10 && strlen(text) <= 64;

	for (int i = 0; ok && i < 10; i++)
		ok = i == 4 || i == 7 ? text[i] == '-' : text[i] >= '0' && text[i] <= '9';
	if (!ok)
		return cb_error_set(err, CB_EINVAL,
				    "%s '%.64s' is not a time: expected 2026-11-01, "
				    "2026-11-01T06:00 (in the schedule's zone %s) or "
				    "2026-11-01T06:00:00+01:00",
				    what, text ? text : "", zone);
	return cb__repo_zone_time(out, conn, text, strpbrk(text + 10, "Zz+-") != NULL, zone, what,
				  err);
}

/* The instants in [from, to], oldest first, into @p out (a JSON array of
 * their epochs); more than @p max is refused. */
static int instants(json_t *out, const cb__backfill_target *t, cb_cron *cron, cb__pg_zone *zone,
		    long long from, long long to, long long max, const char *name,
		    const char *range, cb_error *err)
{
	long long x = from - 1, n = 0;
	int rc;

	for (;;) {
		rc = cb__cron_next_instant(&x, cron, x, cb__pg_zone_lookup, zone, err);
		if (rc == CB_ENOTFOUND) {
			cb_error_clear(err);
			break;
		}
		if (rc < 0)
			return rc;
		if (x > to)
			break;
		if (++n > max)
			return cb_error_set(err, CB_EINVAL,
					    "schedule '%s': more than %lld instants %s: backfill "
					    "a narrower range, or allow more (--max, at most %d)",
					    name, max, range, CB_SCHEDULE_BACKFILL_MAX);
		if (json_array_append_new(out, json_integer(x)) < 0)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	if (n == 0)
		return cb_error_set(err, CB_EINVAL, "schedule '%s': cron \"%s\" has no instant %s",
				    name, t->cron, range);
	return 0;
}

/* Instant @p at as the firing's row takes it: its job key and parameters. */
static json_t *instant_row(const cb__backfill_target *t, const cb_job *job, cb__pg_zone *zone,
			   const char *name, long long at, cb_error *err)
{
	cb_civil local;
	cb_params *params = NULL;
	char **words = NULL, key[CB_JOB_KEY_LEN + 1];
	json_t *row = NULL, *arr = NULL;
	int offset;

	if (cb__zone_local(&local, &offset, at, cb__pg_zone_lookup, zone, err) < 0 ||
	    cb__schedule_fill(&words, &params, t->parameters, name, at, &local, offset, err) < 0 ||
	    cb_job_key(key, job, params, err) < 0)
		goto done;
	if (!(arr = json_array())) {
		cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t w = 0; words[w]; w++)
		json_array_append_new(arr, json_string(words[w]));
	row = json_pack("{s:I,s:s,s:O}", "epoch", (json_int_t)at, "job_key", key, "parameters",
			arr);
	if (!row)
		cb_error_set(err, CB_ENOMEM, "out of memory");
done:
	json_decref(arr);
	cb__schedule_words_free(words);
	cb_params_free(params);
	return row;
}

/* The answer: the rows the repository gave, with their instants shown in
 * the schedule's zone. */
static json_t *answer(const char *name, const cb__backfill_target *t, cb__pg_zone *zone,
		      long long from, long long to, int parallel, json_t *rows)
{
	char a[64], b[64];
	long long created = 0;
	json_t *list = json_array(), *doc;

	for (size_t i = 0; list && i < json_array_size(rows); i++) {
		json_t *r = json_array_get(rows, i);
		long long at = json_integer_value(json_object_get(r, "fire_epoch"));
		int made = strcmp(json_string_value(json_object_get(r, "outcome")), "CREATED") == 0;

		created += made;
		cb__schedule_fmt(a, sizeof(a), zone, at, "{fire_time}");
		json_array_append_new(list, json_pack("{s:s,s:I,s:O,s:b,s:O,s:O}", "fire_time", a,
						      "fire_epoch", (json_int_t)at, "firing_id",
						      json_object_get(r, "firing_id"), "created",
						      made, "status", json_object_get(r, "status"),
						      "kind", json_object_get(r, "kind")));
	}
	cb__schedule_fmt(a, sizeof(a), zone, from, "{fire_time}");
	cb__schedule_fmt(b, sizeof(b), zone, to, "{fire_time}");
	doc = json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:o}", "schedule", name, "from", a, "to", b,
			"overlap_policy", t->overlap, "parallel", parallel, "created",
			(json_int_t)created, "existing",
			(json_int_t)(json_array_size(rows) - (size_t)created), "instants", list);
	return doc;
}

int cb_schedule_backfill(json_t **out, PGconn *conn, const char *name,
			 const cb_schedule_backfill_options *o, cb_error *err)
{
	cb__backfill_target t;
	cb_cron *cron = NULL;
	cb__pg_zone *zone = NULL;
	json_t *at = NULL, *req = NULL, *rows = NULL;
	char *text = NULL, outcome[16], range[200], fa[64], fb[64];
	long long max, from, to;
	double f, u;
	int parallel, rc, tries = 0;

	*out = NULL;
	memset(&t, 0, sizeof(t));
	if ((rc = cb__version_check(o ? o->version : 0u, CB_SCHEDULE_BACKFILL_OPTIONS_VERSION,
				    "backfill options", err)) < 0)
		return rc;
	max = o->max_instants ? o->max_instants : DEFAULT_MAX;
	parallel = o->parallel ? o->parallel : 1;
	if (!o->from || !o->to)
		return cb_error_set(err, CB_EINVAL, "a backfill needs both ends of its range");
	if (max < 1 || max > CB_SCHEDULE_BACKFILL_MAX)
		return cb_error_set(err, CB_EINVAL,
				    "the most instants of a backfill must be 1 to %d, not %lld",
				    CB_SCHEDULE_BACKFILL_MAX, max);
	if (parallel < 1 || parallel > PARALLEL_MAX)
		return cb_error_set(err, CB_EINVAL,
				    "the backfill firings at once must be 1 to %d, not %d",
				    PARALLEL_MAX, parallel);
again:
	if ((rc = cb__repo_schedule_for_backfill(&t, conn, name, err)) < 0)
		goto done;
	if (t.paused) {
		rc = cb_error_set(err, CB_EINVAL,
				  "schedule '%s' is paused: resume it to backfill it (a paused "
				  "schedule's firings wait, backfilled ones too)",
				  name);
		goto done;
	}
	if (parallel > 1 && strcmp(t.overlap, "ALLOW") != 0) {
		rc = cb_error_set(err, CB_EINVAL,
				  "schedule '%s': its overlap policy %s runs one firing at a "
				  "time, a backfill's too; %d at once needs overlap policy ALLOW",
				  name, t.overlap, parallel);
		goto done;
	}
	if ((rc = read_time(&f, conn, o->from, "from", t.zone, err)) < 0 ||
	    (rc = read_time(&u, conn, o->to, "to", t.zone, err)) < 0 ||
	    (rc = cb_cron_parse(&cron, t.cron, err)) < 0 ||
	    (rc = cb__pg_zone_new(&zone, t.zone, err)) < 0)
		goto done;
	cb__pg_zone_set_conn(zone, conn);
	/* Instants are whole seconds: the range's inside ones. */
	from = (long long)f;
	from += (double)from < f;
	to = (long long)u;
	to -= (double)to > u;
	cb__schedule_fmt(fa, sizeof(fa), zone, from, "{fire_time}");
	cb__schedule_fmt(fb, sizeof(fb), zone, to, "{fire_time}");
	snprintf(range, sizeof(range), "from %s to %s", fa, fb);
	if (from > to) {
		rc = cb_error_set(err, CB_EINVAL, "schedule '%s': the range is reversed: %s", name,
				  range);
		goto done;
	}
	if ((double)to > t.now) {
		char now[64];

		cb__schedule_fmt(now, sizeof(now), zone, (long long)t.now, "{fire_time}");
		rc = cb_error_set(err, CB_EINVAL,
				  "schedule '%s': the range ends at %s, after now (%s by the "
				  "database's clock): a backfill runs past instants only, the "
				  "scheduler fires the others",
				  name, fb, now);
		goto done;
	}
	if (!(at = json_array()) || !(req = json_array())) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = instants(at, &t, cron, zone, from, to, max, name, range, err)) < 0)
		goto done;
	for (size_t i = 0; i < json_array_size(at); i++) {
		json_t *row =
			instant_row(&t, o->reg ? cb_registry_find(o->reg, t.job_name) : NULL, zone,
				    name, json_integer_value(json_array_get(at, i)), err);

		if (!row || json_array_append_new(req, row) < 0) {
			rc = err->code ? err->code : cb_error_set(err, CB_ENOMEM, "out of memory");
			goto done;
		}
	}
	if (!(text = json_dumps(req, JSON_COMPACT))) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = cb__repo_schedule_backfill(&rows, outcome, sizeof(outcome), conn, &t,
					     o->actor ? o->actor : "unknown", parallel, text,
					     err)) < 0)
		goto done;
	if (strcmp(outcome, "CHANGED") == 0 && ++tries < 3) {
		/* Paused or edited between the read and the call: judge it again. */
		json_decref(t.parameters);
		json_decref(at);
		json_decref(req);
		free(text);
		cb__pg_zone_free(zone);
		cb_cron_free(cron);
		at = req = NULL;
		text = NULL;
		zone = NULL;
		cron = NULL;
		goto again;
	}
	if (strcmp(outcome, "GONE") == 0)
		rc = cb_error_set(err, CB_ENOTFOUND, "no schedule '%s'", name);
	else if (!rows)
		rc = cb_error_set(err, CB_EINVAL, "schedule '%s' is paused or changing: try again",
				  name);
	else if (!(*out = answer(name, &t, zone, from, to, parallel, rows)))
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
done:
	json_decref(t.parameters);
	json_decref(at);
	json_decref(req);
	json_decref(rows);
	free(text);
	cb__pg_zone_free(zone);
	cb_cron_free(cron);
	return rc;
}

int cb_schedule_backfill_cancel(json_t **out, PGconn *conn, const char *name, const char *actor,
				cb_error *err)
{
	cb__backfill_target t;
	cb__pg_zone *zone = NULL;
	json_t *gone = NULL;
	char a[64] = "", b[64] = "";
	size_t n;
	int rc;

	*out = NULL;
	if ((rc = cb__repo_schedule_for_backfill(&t, conn, name, err)) < 0 ||
	    (rc = cb__repo_schedule_backfill_cancel(&gone, conn, t.schedule_id,
						    actor ? actor : "unknown", err)) < 0)
		goto done;
	n = json_array_size(gone);
	if (n > 0 && cb__pg_zone_new(&zone, t.zone, err) == 0) {
		cb__pg_zone_set_conn(zone, conn);
		cb__schedule_fmt(a, sizeof(a), zone, json_integer_value(json_array_get(gone, 0)),
				 "{fire_time}");
		cb__schedule_fmt(b, sizeof(b), zone,
				 json_integer_value(json_array_get(gone, n - 1)), "{fire_time}");
	}
	cb_error_clear(err);
	if (!(*out = json_pack("{s:s,s:I,s:o,s:o}", "schedule", name, "canceled", (json_int_t)n,
			       "first", n ? json_string(a) : json_null(), "last",
			       n ? json_string(b) : json_null())))
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
done:
	json_decref(t.parameters);
	json_decref(gone);
	cb__pg_zone_free(zone);
	return rc;
}
