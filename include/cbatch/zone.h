/**
 * @file zone.h
 * Time zones of the repository's server, to show instants as people in a
 * zone read them.
 *
 * The rules come from the server's tz data, as the scheduler's do
 * (schedule.h), not from the host's: a time shown in a schedule's zone
 * carries the offset its firings are computed with, whatever tzdata the
 * host has, and no process-wide TZ is changed (which would change the local
 * time of a job program's own code and of the scheduler's children).
 */
#ifndef CBATCH_ZONE_H
#define CBATCH_ZONE_H

#include <stddef.h>

#include <libpq-fe.h>

#include "cbatch/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** One zone and the last few stretches of its rules (opaque). */
typedef struct cb_zone cb_zone;

/**
 * Open zone @p name over @p conn (borrowed: it must outlive the zone's use,
 * and be in no transaction block a failed query would abort). With
 * @p check, the name must be one of the server's time zone database
 * (pg_timezone_names, matched case-insensitively), as `schedule add --tz`
 * requires: abbreviations such as CEST (a fixed offset all year) and POSIX
 * specifications such as "UTC+3" (whose sign means west) are refused.
 * Without, a name the server cannot use fails at the first cb_zone_offset.
 * @return 0, CB_EINVAL ("time zone 'Mars/Base' is not known to the
 *         repository's server"), CB_ENOMEM, CB_EDB.
 */
int cb_zone_open(cb_zone **out, PGconn *conn, const char *name, int check, cb_error *err);

/**
 * The UTC offset in seconds east of Greenwich in force in @p z at Unix time
 * @p instant. A query only when the instant lies outside the stretches of
 * unchanged offset kept from earlier answers (they last months).
 * @return 0, CB_EINVAL (a zone the server does not know), CB_EDB.
 */
int cb_zone_offset(cb_zone *z, long long instant, int *offset, cb_error *err);

/** The zone's name as given to cb_zone_open. */
const char *cb_zone_name(const cb_zone *z);

/** NULL-safe. */
void cb_zone_free(cb_zone *z);

/**
 * Format Unix time @p instant at UTC offset @p offset (seconds east) as
 * ISO 8601 / RFC 3339 into @p buf: "2026-12-02T06:30:00+01:00", and
 * "2026-12-02T05:30:00Z" at offset 0 (as the scheduler's {fire_time} and
 * {fire_utc}). At least 26 bytes make room for any year 0-9999.
 */
void cb_time_format(char *buf, size_t size, long long instant, int offset);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
