/* Parameter templates of schedules: a parameter word in command-line syntax
 * whose text may hold placeholders filled from the fire instant (never from
 * the wall clock, so that every node and every retry fills them alike).
 * Internal.
 *
 *     {fire_date}      the fire instant's date in the schedule's zone, YYYY-MM-DD
 *     {fire_date-N}    N days before it (and {fire_date+N} after), N 0..36600
 *     {fire_time}      the local time with its offset, 2026-12-02T02:30:00+01:00
 *     {fire_utc}       the instant in UTC, 2026-12-02T01:30:00Z
 *     {fire_epoch}     the instant in Unix seconds
 *     {schedule}       the schedule's name
 *     {{ and }}        a literal { and }
 *
 * Anything else in braces is an error naming the placeholder and its
 * character position. */
#ifndef CB_CORE_TEMPLATE_H
#define CB_CORE_TEMPLATE_H

#include "cbatch/cron.h"
#include "cbatch/error.h"

/* What a template is filled from. */
typedef struct cb__fire_vars {
	long long epoch;      /* the fire instant, Unix seconds */
	cb_civil local;       /* its civil time in the schedule's zone */
	int offset;           /* that zone's UTC offset then, seconds east */
	const char *schedule; /* the schedule's name (borrowed) */
} cb__fire_vars;

/* Longest filled word, in bytes. */
#define CB__TEMPLATE_MAX 4096

/* Fill @p tmpl into @p out (a new malloc'd string; the caller frees it).
 * @return 0, CB_EINVAL (bad placeholder; the message names it), CB_ENOMEM */
int cb__template_fill(char **out, const char *tmpl, const cb__fire_vars *v, cb_error *err);

/* 1 if @p tmpl holds a placeholder that depends on the fire instant. */
int cb__template_uses_fire(const char *tmpl);

#endif
