/* Time zones for schedules: instants (Unix seconds) to civil times and the
 * next fire instant of a cron expression in a zone. Internal.
 *
 * The zone rules are not the host's: they arrive as segments, stretches of
 * time with one UTC offset, from a lookup function. The scheduler's lookup
 * asks the repository's server (batch_tz_segment, sql/004), so that every
 * node uses the same rules whatever its own tzdata. The arithmetic here is
 * pure and needs no database. */
#ifndef CB_CORE_ZONE_H
#define CB_CORE_ZONE_H

#include "cbatch/cron.h"
#include "cbatch/error.h"

/* [start, end) in Unix seconds over which the zone's offset (seconds east of
 * UTC) is @c offset; @c prev_offset holds just before start, @c next_offset
 * from end on (equal to @c offset when the boundary is no transition). */
typedef struct cb__zone_segment {
	long long start, end;
	int offset, prev_offset, next_offset;
} cb__zone_segment;

/* Fill @p out with the segment containing @p instant (start <= instant <
 * end; offsets within a day of UTC: cb__cron_next_instant checks both and
 * gives CB_ERROR otherwise). Segments may be cut anywhere the offset does not
 * change; consecutive answers need not line up. @return 0 or a CB_E* code
 * with @p err set. */
typedef int (*cb__zone_lookup_fn)(void *ctx, long long instant, cb__zone_segment *out,
				  cb_error *err);

/* Civil time of Unix time @p t at UTC offset 0, and back: the proleptic
 * Gregorian calendar (core/calendar.h), negative times and years before 1
 * included (year 0 is 1 BC); no leap seconds, as in Unix time. */
void cb__civil_from_epoch(cb_civil *out, long long t);
long long cb__epoch_from_civil(const cb_civil *c);

/* The civil time in the zone at @p instant, and its UTC offset (may be NULL). */
int cb__zone_local(cb_civil *out, int *offset, long long instant, cb__zone_lookup_fn lookup,
		   void *ctx, cb_error *err);

/* The first instant strictly after @p after at which @p c fires in the zone.
 * DST follows Vixie cron: a fixed-time expression (neither the minute nor the
 * hour field starts with '*') fires once per matching civil time: a time in a
 * skipped hour fires at the first instant after the gap, a repeated time only
 * at its first occurrence. A wildcard expression fires at every instant whose
 * civil time matches: in both passes of a repeated hour, never in a skipped one.
 * (cb_cron_is_fixed_time tells the two kinds apart.)
 *
 * The search goes one segment at a time, asking @p lookup once per segment it
 * enters, and no further than 400 years (the calendar's period) after
 * @p after, which must lie in the years 1-9999.
 * @return 0, CB_ENOTFOUND (never fires again, or not before the year 10000),
 *         CB_EINVAL (@p after out of range), CB_ERROR (a lookup that breaks its
 *         contract), or the lookup's error. */
int cb__cron_next_instant(long long *out, const cb_cron *c, long long after,
			  cb__zone_lookup_fn lookup, void *ctx, cb_error *err);

#endif
