/*
 * The run parameters that cbatch itself reads (internal): one table of their
 * names, types and ranges. The launcher checks a whole set against it before
 * anything is written, and every reader takes its value through it, so a
 * reserved parameter added later is validated where it is defined.
 */
#ifndef CB_CORE_RESERVED_H
#define CB_CORE_RESERVED_H

#include "cbatch/params.h"

/* Parameter names starting with one of these are cbatch's: an unknown one
 * (a typo such as partition.cuont) is refused rather than silently ignored. */
#define CB__RESERVED_PREFIXES "chunk.", "partition.", "skip.", "outage."

typedef struct cb__reserved_param {
	const char *name;
	long long min, max; /* a long, in min..max */
} cb__reserved_param;

/* The table entry for @p name, or NULL if it is not a reserved parameter. */
const cb__reserved_param *cb__reserved_find(const char *name);

/*
 * Check every reserved parameter of @p p (NULL: none): of type long, within
 * its range, and no unknown name under a reserved prefix.
 * @return 0, or CB_EINVAL with a message naming the parameter and its range.
 */
int cb__reserved_check(const cb_params *p, cb_error *err);

/*
 * The value of the reserved parameter @p name in @p p, or @p dflt when it is
 * absent. @return 0, or CB_EINVAL (wrong type, out of range; a set stored
 * before the check existed can hold one) with the same message as the check.
 */
int cb__reserved_long(long long *out, const cb_params *p, const char *name, long long dflt,
		      cb_error *err);

/*
 * How long a run of @p p with lease @p lease_seconds (<= 0: the default)
 * waits out a lost database: outage.budget when given (0: not at all), else
 * its lease. The run's reconnects and a command started during a
 * switchover use the same figure.
 */
double cb__outage_budget(const cb_params *p, double lease_seconds);

#endif
