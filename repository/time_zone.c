/*
 * The public face of repository/zone.c (cbatch/zone.h): a zone of the
 * server's tz data, to show instants in, with the segments it keeps.
 */
#include "cbatch/zone.h"

#include <stdio.h>
#include <stdlib.h>

#include "repo.h"
#include "zone.h"

struct cb_zone {
	cb__pg_zone *z;
	char name[CB__ZONE_NAME_MAX + 1];
};

int cb_zone_open(cb_zone **out, PGconn *conn, const char *name, int check, cb_error *err)
{
	cb_zone *zone;
	int rc;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_zone_open: out is NULL");
	*out = NULL;
	if (!conn)
		return cb_error_set(err, CB_EINVAL, "cb_zone_open: no connection");
	if (check && (rc = cb__pg_zone_check(conn, name, err)) < 0)
		return rc;
	if (!(zone = calloc(1, sizeof(*zone))))
		return cb_error_set(err, CB_ENOMEM, "time zone: out of memory");
	if ((rc = cb__pg_zone_new(&zone->z, name, err)) < 0) {
		free(zone);
		return rc;
	}
	snprintf(zone->name, sizeof(zone->name), "%s", name);
	cb__pg_zone_set_conn(zone->z, conn);
	*out = zone;
	return 0;
}

int cb_zone_offset(cb_zone *z, long long instant, int *offset, cb_error *err)
{
	cb__zone_segment seg;
	int rc;

	if (!z || !offset)
		return cb_error_set(err, CB_EINVAL, "cb_zone_offset: no zone or offset");
	if ((rc = cb__pg_zone_lookup(z->z, instant, &seg, err)) < 0)
		return rc;
	*offset = seg.offset;
	return 0;
}

const char *cb_zone_name(const cb_zone *z)
{
	return z ? z->name : "";
}

void cb_zone_free(cb_zone *z)
{
	if (!z)
		return;
	cb__pg_zone_free(z->z);
	free(z);
}

void cb_time_format(char *buf, size_t size, long long instant, int offset)
{
	cb_civil c;
	int a = offset < 0 ? -offset : offset, n;

	if (!buf || size == 0)
		return;
	cb__civil_from_epoch(&c, instant + offset);
	n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d", c.year, c.month, c.day, c.hour,
		     c.minute, c.second);
	if (n < 0 || (size_t)n >= size)
		return;
	/* Whole minutes are the rule; a seconds part is kept (as {fire_time}). */
	if (offset == 0)
		snprintf(buf + n, size - (size_t)n, "Z");
	else if (a % 60)
		snprintf(buf + n, size - (size_t)n, "%c%02d:%02d:%02d", offset < 0 ? '-' : '+',
			 a / 3600, a / 60 % 60, a % 60);
	else
		snprintf(buf + n, size - (size_t)n, "%c%02d:%02d", offset < 0 ? '-' : '+', a / 3600,
			 a / 60 % 60);
}
