/*
 * Time zones for schedules (core/zone.h): civil times of instants, and the
 * next fire instant of a cron expression in a zone given as segments of
 * constant UTC offset.
 *
 * The search works one segment at a time. Inside a segment an instant and its
 * civil time are one addition apart (civil = instant + offset), so the cron
 * search on civil times (cb_cron_next) answers for the whole segment at once;
 * what is left to decide is only what happens at the segment's edges, where
 * the offset changes (the Vixie rule of cb_cron_is_fixed_time).
 */
#include "zone.h"

#include "calendar.h"

#define DAY 86400LL
/* 400 Gregorian years, the calendar's period: an expression that ever fires
 * does so within this much civil time, and so within it plus a day or two of
 * offsets of instants. */
#define REACH (146097LL * DAY + 2 * DAY)
/* Real zones change offset a few times a year, and the repository's lookup
 * cuts a segment at most every 400 days when nothing changes: 400 years take
 * under 2000 segments. A lookup that gives far more is broken, not slow. */
#define MAX_SEGMENTS 40000
/* No zone is a day or more away from UTC (the widest are -12 and +14 hours). */
#define MAX_OFFSET (DAY - 1)
/* cb_cron_next takes civil times in the years 1-9999. */
#define FIRST_SECOND (-62135596800LL) /* 0001-01-01 00:00:00 */
#define END_SECOND   (253402300800LL) /* 10000-01-01 00:00:00 */

void cb__civil_from_epoch(cb_civil *out, long long t)
{
	long long days = t / DAY, secs = t % DAY, y;

	if (secs < 0) { /* floor, not truncation: -1 is 23:59:59 of the day before */
		secs += DAY;
		days--;
	}
	cb__civil_from_days(days, &y, &out->month, &out->day);
	out->year = (int)y;
	out->hour = (int)(secs / 3600);
	out->minute = (int)(secs / 60 % 60);
	out->second = (int)(secs % 60);
}

long long cb__epoch_from_civil(const cb_civil *c)
{
	return cb__days_from_civil(c->year, c->month, c->day) * DAY + c->hour * 3600LL +
	       c->minute * 60LL + c->second;
}

/* The segment containing @p t, checked: the search below relies on it. */
static int segment_at(cb__zone_segment *out, long long t, cb__zone_lookup_fn lookup, void *ctx,
		      cb_error *err)
{
	int rc;

	if (!lookup)
		return cb_error_set(err, CB_EINVAL, "zone: no lookup function");
	rc = lookup(ctx, t, out, err);
	if (rc < 0)
		return rc;
	if (out->start > t || out->end <= t)
		return cb_error_set(
			err, CB_ERROR,
			"zone: the lookup for instant %lld gave the segment [%lld, %lld), "
			"which does not contain it",
			t, out->start, out->end);
	if (out->offset < -MAX_OFFSET || out->offset > MAX_OFFSET ||
	    out->prev_offset < -MAX_OFFSET || out->prev_offset > MAX_OFFSET ||
	    out->next_offset < -MAX_OFFSET || out->next_offset > MAX_OFFSET)
		return cb_error_set(
			err, CB_ERROR,
			"zone: the lookup for instant %lld gave offsets %d/%d/%d seconds, "
			"not within a day of UTC",
			t, out->prev_offset, out->offset, out->next_offset);
	return 0;
}

int cb__zone_local(cb_civil *out, int *offset, long long instant, cb__zone_lookup_fn lookup,
		   void *ctx, cb_error *err)
{
	cb__zone_segment s;
	int rc = segment_at(&s, instant, lookup, ctx, err);

	if (rc < 0)
		return rc;
	cb__civil_from_epoch(out, instant + s.offset);
	if (offset)
		*offset = s.offset;
	return 0;
}

/*
 * The first civil time at or after @p local (a civil time written as seconds,
 * as cb__epoch_from_civil makes them) that @p c matches, as such seconds.
 * @return 0, CB_ENOTFOUND (never again, or not before the year 10000), or
 * cb_cron_next's CB_EINVAL for a time before the year 1.
 */
static int match_from(long long *out, const cb_cron *c, long long local, cb_error *err)
{
	cb_civil from, next;
	int rc;

	if (local >= END_SECOND)
		return cb_error_set(err, CB_ENOTFOUND,
				    "cron: no time matches before the year 10000");
	if (local <= FIRST_SECOND)
		return cb_error_set(err, CB_EINVAL,
				    "cron: civil times before the year 1 are out of range");
	cb__civil_from_epoch(&from, local - 1); /* cb_cron_next is strictly after */
	rc = cb_cron_next(c, &from, &next, err);
	if (rc < 0)
		return rc;
	*out = cb__epoch_from_civil(&next);
	return 0;
}

int cb__cron_next_instant(long long *out, const cb_cron *c, long long after,
			  cb__zone_lookup_fn lookup, void *ctx, cb_error *err)
{
	int fixed;
	long long t, limit;

	if (!out || !c)
		return cb_error_set(err, CB_EINVAL, "zone: no expression or result");
	if (after < FIRST_SECOND || after >= END_SECOND)
		return cb_error_set(err, CB_EINVAL,
				    "zone: instant %lld is outside the years 1-9999", after);
	fixed = cb_cron_is_fixed_time(c);
	t = after + 1;
	limit = after + REACH;
	for (int n = 0; t <= limit; n++) {
		cb__zone_segment s;
		long long end, lo, hi, m;
		int rc;

		if (n == MAX_SEGMENTS)
			return cb_error_set(err, CB_ERROR,
					    "zone: the lookup gave over %d segments in 400 years "
					    "after instant %lld",
					    MAX_SEGMENTS, after);
		rc = segment_at(&s, t, lookup, ctx, err);
		if (rc < 0)
			return rc;
		/*
		 * Entering a segment at a change to a later offset (summer time),
		 * the civil times from start + prev_offset to start + offset were
		 * skipped. A fixed-time expression due then fires as soon as the
		 * clock is past them, at the change itself: one firing for all.
		 */
		if (fixed && t == s.start && s.prev_offset < s.offset) {
			rc = match_from(&m, c, s.start + s.prev_offset, err);
			if (rc < 0)
				return rc;
			if (m < s.start + s.offset) {
				*out = s.start;
				return 0;
			}
		}
		end = s.end <= limit ? s.end : limit + 1; /* no further than the reach */
		lo = t + s.offset;
		hi = end + s.offset; /* exclusive */
		/* After a change back, the civil times below start + prev_offset
		 * come round a second time: a fixed-time expression had them. */
		if (fixed && s.prev_offset > s.offset && lo < s.start + s.prev_offset)
			lo = s.start + s.prev_offset;
		if (lo < hi) {
			rc = match_from(&m, c, lo, err);
			if (rc < 0)
				return rc;
			if (m < hi) {
				*out = m - s.offset;
				return 0;
			}
		}
		t = end;
	}
	return cb_error_set(err, CB_ENOTFOUND,
			    "cron: never fires within 400 years after instant %lld", after);
}
