/**
 * @file cron.h
 * Cron expressions: parsing, and the next matching civil (wall-clock) time.
 *
 * A cb_cron is a parsed expression. It knows nothing of time zones: it works
 * on civil date-times (year, month, day, hour, minute, second in the
 * proleptic Gregorian calendar), and the caller maps those to instants in a
 * zone of its choosing. A cb_cron is immutable once parsed, so threads may
 * share one.
 *
 * ## Syntax
 *
 * Five fields, as Vixie cron has them, or six with seconds first, as Quartz
 * has them (Quartz's optional seventh field, the year, is not supported):
 *
 *     [second] minute hour day-of-month month day-of-week
 *
 * Fields are separated by spaces or tabs; leading and trailing blanks are
 * ignored. Ranges: second and minute 0-59, hour 0-23, day-of-month 1-31,
 * month 1-12 or JAN-DEC, day-of-week 0-7 or SUN-SAT, where 0 and 7 are both
 * Sunday (Vixie's numbering, not Quartz's 1-7: use names to be unambiguous).
 * Names are case-insensitive. A field is a comma-separated list of:
 *
 *     *          every value
 *     a          one value
 *     a-b        a range (a <= b: a reversed range is refused, not wrapped)
 *     * /n       every n-th value from the field's minimum (without the space,
 *                which only keeps this comment open)
 *     a-b/n      every n-th value of the range, from a
 *     a/n        every n-th value from a to the field's maximum
 *
 * Steps are 1 to the size of the field's range. In day-of-month and
 * day-of-week, `?` (alone) means "no restriction", as in Quartz. More in
 * day-of-month:
 *
 *     L          the last day of the month
 *     L-n        n days before the last day (L-1 is the 30th of a 31-day month)
 *     LW         the last weekday (Monday to Friday) of the month
 *     nW         the weekday nearest to day n, within the month: a Saturday
 *                moves to the Friday before, a Sunday to the Monday after,
 *                unless that leaves the month (1W on a Saturday is Monday
 *                the 3rd; 31W on a Sunday is Friday the 29th). No match in a
 *                month shorter than n days.
 *
 * and in day-of-week (d a weekday number or name):
 *
 *     dL         the last weekday d of the month (5L: the last Friday)
 *     d#k        the k-th weekday d of the month, k 1-5 (MON#1: the first Monday)
 *
 * A lone `L` in day-of-week (Quartz's Saturday, in Quartz's numbering) is
 * refused: write SAT.
 *
 * These may appear in lists with the other forms (`1,15,L`). The macros
 * stand for five-field expressions: `@yearly` and `@annually` (0 0 1 1 *),
 * `@monthly` (0 0 1 * *), `@weekly` (0 0 * * 0), `@daily` and `@midnight`
 * (0 0 * * *), `@hourly` (0 * * * *). `@reboot` is refused: it is no time.
 *
 * ## Day-of-month and day-of-week together (the Vixie rule)
 *
 * A day field is *unrestricted* when its text starts with `*` or `?`, and
 * restricted otherwise. When both day fields are restricted, a day matches if
 * EITHER matches: `0 0 1,15 * MON` fires on the 1st, the 15th and every
 * Monday. Otherwise a day must match BOTH, so a plain `*` or `?` leaves the
 * decision to the other field. As in Vixie cron, the test is on the text: a
 * stepped star such as `*` followed by `/2` (every odd day) counts as
 * unrestricted, so with it `0 0 <that> * MON` fires on odd days that are
 * Mondays, not on odd days and on Mondays.
 *
 * ## Errors
 *
 * A bad expression is CB_EINVAL with a message naming the expression, the
 * field, the 1-based character position and the offending text:
 *
 *     cron "0 25 * * *": hour field: 25 at character 3 is out of range 0-23
 */
#ifndef CBATCH_CRON_H
#define CBATCH_CRON_H

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** A parsed cron expression (opaque, immutable). */
typedef struct cb_cron cb_cron;

/**
 * A civil date-time, with no zone: month 1-12, day 1-31, hour 0-23,
 * minute 0-59, second 0-59 (no leap seconds).
 */
typedef struct cb_civil {
	int year, month, day, hour, minute, second;
} cb_civil;

/** Longest expression accepted, in bytes. */
#define CB_CRON_EXPR_MAX 1024

/**
 * Parse @p expr. @p out receives a new object (free with cb_cron_free); it is
 * untouched on failure.
 * @return 0, CB_EINVAL (syntax or range; the message names field and
 *         character), CB_ENOMEM
 */
int cb_cron_parse(cb_cron **out, const char *expr, cb_error *err);

/** Free @p c. NULL-safe. */
void cb_cron_free(cb_cron *c);

/** 1 if @p c has a seconds field (six fields), 0 if it fires on whole minutes. */
int cb_cron_has_seconds(const cb_cron *c);

/**
 * 1 if @p c is a fixed-time expression, 0 if it is a wildcard one (or @p c is
 * NULL). This is what decides how a schedule meets a daylight saving time
 * change, as in Vixie cron: an expression is a wildcard one when the text of
 * its minute field or of its hour field starts with `*` (`*`, `* /15`), and
 * fixed-time otherwise (`30 2 * * *`, `0,30 9-17 * * *`). As for the day
 * fields, the test is on the text, not on the values it stands for: `0-59`
 * is fixed-time. Of the macros, `@hourly` is a wildcard one, the others are
 * fixed-time. The seconds field plays no part.
 *
 * A fixed-time expression fires once at each matching civil time: a time that
 * a change to summer time skips fires at the first instant after the gap, and
 * a time that the change back repeats fires only the first time. A wildcard
 * expression fires at every instant whose civil time matches: twice over in a
 * repeated hour, never in a skipped one.
 */
int cb_cron_is_fixed_time(const cb_cron *c);

/**
 * The first civil time strictly after @p after that @p c matches, into
 * @p out. A five-field expression matches at second 0 only.
 *
 * Because the Gregorian calendar repeats every 400 years (a whole number of
 * weeks), an expression that ever matches does so within 400 years of any
 * date; the search goes that far and no further. @p after and @p out may be
 * the same object.
 * @return 0; CB_EINVAL if @p after is not a valid civil time or its year is
 *         outside 1-9999; CB_ENOTFOUND if nothing matches within 400 years
 *         (as `0 0 30 2 *`, February the 30th) or before the year 10000
 */
int cb_cron_next(const cb_cron *c, const cb_civil *after, cb_civil *out, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
