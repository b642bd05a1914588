/*
 * Time zone segments from the repository's server (repository/repo.h): the
 * lookup behind the scheduler's cb__cron_next_instant, with a few segments
 * kept so that asking every second costs a query only when the clock crosses
 * into a segment not seen yet.
 */
#include "repo.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A handful of segments: the one the clock is in, the next after a search
 * that crossed a change, and a few a misfire catch-up may walk through. */
#define KEPT 8

/* invalid_parameter_value: what AT TIME ZONE raises for a name it does not know. */
#define SQLSTATE_BAD_ZONE "22023"

struct cb__pg_zone {
	PGconn *conn; /* borrowed */
	char zone[CB__ZONE_NAME_MAX + 1];
	cb__zone_segment kept[KEPT];
	int nkept, next; /* kept[next] is replaced next (oldest first) */
	long long queries;
};

static int unknown_zone(cb_error *err, const char *zone)
{
	return cb_error_set(err, CB_EINVAL,
			    "time zone '%.*s' is not known to the repository's server",
			    CB__ZONE_NAME_MAX, zone);
}

/*
 * Names the server's tz data holds that are no zone of their own, refused
 * wherever a zone is taken (a schedule's zone, --tz, CBATCH_TZ), whatever
 * the server's pg_timezone_names lists (that depends on its tzdata):
 * "localtime" is a link to the database host's /etc/localtime (a schedule
 * would follow that host's setting, and change with it), "posixrules" the
 * rules zic applies to POSIX strings (America/New_York on most systems),
 * "Factory" a placeholder with offset 0 and the abbreviation "-00" (zone
 * not set). Matched case-insensitively, as the server matches names.
 */
static const struct {
	const char *name, *why;
} refused[] = {
	{ "localtime", "it follows the database host's /etc/localtime, not a zone of its own" },
	{ "posixrules", "it is the tz database's internal template for POSIX strings" },
	{ "Factory", "it is the tz database's placeholder for a zone not set ('-00')" },
};

static int refused_zone(cb_error *err, const char *zone)
{
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (strcasecmp(zone, refused[i].name) == 0)
			return cb_error_set(err, CB_EINVAL,
					    "time zone '%s' is not accepted: %s; give a zone "
					    "name such as Europe/Berlin or UTC",
					    zone, refused[i].why);
	return 0;
}

int cb__pg_zone_new(cb__pg_zone **out, const char *zone, cb_error *err)
{
	cb__pg_zone *z;
	int rc;

	if (!out || !zone || !*zone)
		return cb_error_set(err, CB_EINVAL, "time zone: no name");
	if (strlen(zone) > CB__ZONE_NAME_MAX)
		return cb_error_set(err, CB_EINVAL, "time zone '%.40s...' is longer than %d bytes",
				    zone, CB__ZONE_NAME_MAX);
	if ((rc = refused_zone(err, zone)) < 0)
		return rc;
	z = calloc(1, sizeof(*z));
	if (!z)
		return cb_error_set(err, CB_ENOMEM, "time zone: out of memory");
	memcpy(z->zone, zone, strlen(zone) + 1);
	*out = z;
	return 0;
}

void cb__pg_zone_set_conn(cb__pg_zone *z, PGconn *conn)
{
	if (!z || z->conn == conn)
		return;
	z->conn = conn;
	z->nkept = 0;
	z->next = 0;
}

long long cb__pg_zone_queries(const cb__pg_zone *z)
{
	return z ? z->queries : 0;
}

void cb__pg_zone_free(cb__pg_zone *z)
{
	free(z);
}

/* A bigint or int column, checked: a server that answers nonsense must not
 * send the search astray. */
static int column_ll(long long *out, const PGresult *res, int col)
{
	const char *s = PQgetvalue(res, 0, col);
	char *end;

	if (PQgetisnull(res, 0, col) || !*s)
		return -1;
	*out = strtoll(s, &end, 10);
	return *end ? -1 : 0;
}

int cb__pg_zone_lookup(void *ctx, long long instant, cb__zone_segment *out, cb_error *err)
{
	cb__pg_zone *z = ctx;
	char at[24];
	const char *p[2] = { at, NULL };
	long long v[5];
	PGresult *res = NULL;
	int rc = 0;

	if (!z || !out)
		return cb_error_set(err, CB_EINVAL, "time zone lookup: no zone or result");
	for (int i = 0; i < z->nkept; i++)
		if (z->kept[i].start <= instant && instant < z->kept[i].end) {
			*out = z->kept[i];
			return 0;
		}
	if (!z->conn)
		return cb_error_set(err, CB_EINVAL, "time zone '%s': no connection to ask",
				    z->zone);
	snprintf(at, sizeof(at), "%lld", instant);
	p[1] = z->zone;
	z->queries++;
	res = PQexecParams(z->conn,
			   "SELECT seg_start, seg_end, utc_offset, prev_offset, next_offset"
			   " FROM batch_tz_segment($1::bigint, $2::text)",
			   2, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (state && strcmp(state, SQLSTATE_BAD_ZONE) == 0)
			rc = unknown_zone(err, z->zone);
		else
			rc = cb_pg_error(err, z->conn, res, "time zone segment");
		goto done;
	}
	for (int i = 0; i < 5; i++)
		if (PQntuples(res) != 1 || column_ll(&v[i], res, i) < 0) {
			rc = cb_error_set(err, CB_EDB,
					  "time zone segment: batch_tz_segment(%lld, '%s') gave no "
					  "usable row",
					  instant, z->zone);
			goto done;
		}
	out->start = v[0];
	out->end = v[1];
	out->offset = (int)v[2];
	out->prev_offset = (int)v[3];
	out->next_offset = (int)v[4];
	z->kept[z->next] = *out;
	z->next = (z->next + 1) % KEPT;
	if (z->nkept < KEPT)
		z->nkept++;
done:
	PQclear(res);
	return rc;
}

int cb__pg_zone_check(PGconn *conn, const char *zone, cb_error *err)
{
	const char *p[1] = { zone };
	PGresult *res;
	int known;

	if (!zone || !*zone || strlen(zone) > CB__ZONE_NAME_MAX)
		return unknown_zone(err, zone ? zone : "");
	if ((known = refused_zone(err, zone)) < 0)
		return known;
	/* pg_timezone_names reads every zone file (some 50 ms): fine once per
	 * schedule, which is what this is for. */
	res = cb__repo_exec(conn, "check time zone",
			    "SELECT EXISTS (SELECT 1 FROM pg_timezone_names"
			    " WHERE lower(name) = lower($1::text))",
			    1, p, err);
	if (!res)
		return err && err->code ? err->code : CB_EDB;
	known = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return known ? 0 : unknown_zone(err, zone);
}
